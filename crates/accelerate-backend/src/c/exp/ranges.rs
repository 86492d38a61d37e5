//! What generated code knows of the ranges of its values (Note [Value
//! ranges]): the rules, on their own, and the generator's record of them.

use super::{CVal, ExpGen};
use accelerate_base::array::{ScalarTy, ScalarVal};
use accelerate_ir::PrimFun;

// Note [Value ranges]
// A histogram bins a value as `if 0 <= x && x < 1 then just (x * 256 as
// i64 `min` 255) else nothing`, and Rust's `as` saturates: the cast is
// written `acc_float_to_int64_t`, which tests for NaN and both ends of
// the type's range before converting, and the permute then checks the
// bin against the result's extent. Inside the branch neither can fail:
// `x` lies in [0, 1], so `x * 256` in [0, 256], the cast's value in
// [0, 256] and the bin in [0, 255]. So the generator keeps, for the C
// atoms of the code it writes, what it knows of their values:
//
// - a literal is its own value;
// - a comparison that holds bounds both of its operands (`x < 1` puts a
//   float `x` in [-inf, 1], not NaN); an integer comparison that fails
//   holds its opposite (a float one that fails may have a NaN operand,
//   and says nothing); `a && b` holding, and `a || b` failing, say what
//   both operands do, and `!a` says what `a` does, turned round. Inside
//   the branches of a conditional (C branches, not a fast function's
//   selection of both sides, Note [Both sides in fast functions]), what
//   its test says, holding or failing, is known of those operands, and so
//   is what the first operand of `&&` holding (of `||` failing) says
//   while the second is computed. No atom the generator has written is assigned
//   again inside a branch it writes later (a loop's state is assigned
//   after its step's code, a conditional's results after its branches),
//   so what holds where the branch starts holds throughout it;
// - arithmetic, `min`, `max`, casts and the rest (`result`) give the
//   range of their result from their operands'; a conditional's results
//   lie in the union of its branches'.
//
// Float arithmetic is evaluated on the bounds in the type's own precision:
// rounding to nearest is monotone, so the rounded results of the bounds
// bound the rounded results between them. Only operations that cannot
// make a NaN from operands that are not NaN are followed (a sum or
// product with a finite operand, `min` and `max`, which return the other
// operand for a NaN).
//
// Three things use the ranges. A float cast to an integer type whose
// range holds the float's truncation is a plain C cast (`acc_*_to_*_in`),
// 9% of the histogram's time in a C model of its kernel. A permute's
// destinations, each known to lie in [0, hi] for a literal `hi`, are
// computed without their check in a loop versioned on `hi < extent`
// (Note [Destinations by blocks]): 16% more. And in a fast function, a
// read that every element makes at an index whose components lie in [0,
// hi] (a table read at a byte, `lut[x as i64]`) is checked once before
// the loops, `hi < extent` (Note [Ranges before the loops]), and then
// reads without a condition.
//
// Under fast-math the C compiler may regroup float arithmetic (`(x + c) -
// c` becomes `x`), so what follows from float arithmetic need not hold:
// every use of a range that rests on a float is written under
// `ACC_FLOAT_RANGES`, which `prelude_common.h` defines as 0 when
// `ACC_FAST_MATH` is defined, so that fast-math code keeps its checks and
// saturating casts.

/// The most facts a boolean atom's truth is recorded to say.
const MOST_FACTS: usize = 8;

/// What is known of a value: it lies between two bounds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Range {
    /// A float that is not NaN, `lo <= x <= hi` (the bounds may be
    /// infinite; the values of an `f32` are exact in an `f64`).
    Float { lo: f64, hi: f64 },
    /// An integer, `lo <= x <= hi`.
    Int { lo: i64, hi: i64 },
}

/// A range, and whether it rests on what is known of a float (Note
/// [Value ranges]: not to be relied on under fast-math).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Known {
    pub range: Range,
    pub floats: bool,
}

impl Known {
    fn float(lo: f64, hi: f64) -> Option<Known> {
        (lo <= hi).then_some(Known { range: Range::Float { lo, hi }, floats: true })
    }

    fn int(t: ScalarTy, lo: i128, hi: i128, floats: bool) -> Option<Known> {
        let (min, max) = int_limits(t)?;
        (min <= lo && lo <= hi && hi <= max)
            .then_some(Known { range: Range::Int { lo: lo as i64, hi: hi as i64 }, floats })
    }

    /// The integer bounds, if it is an integer's.
    pub fn int_bounds(&self) -> Option<(i64, i64)> {
        match self.range {
            Range::Int { lo, hi } => Some((lo, hi)),
            Range::Float { .. } => None,
        }
    }

    fn float_bounds(&self) -> Option<(f64, f64)> {
        match self.range {
            Range::Float { lo, hi } => Some((lo, hi)),
            Range::Int { .. } => None,
        }
    }
}

/// The values of an integer type, where they fit an `i64`.
fn int_limits(t: ScalarTy) -> Option<(i128, i128)> {
    Some(match t {
        ScalarTy::I8 => (i8::MIN.into(), i8::MAX.into()),
        ScalarTy::I16 => (i16::MIN.into(), i16::MAX.into()),
        ScalarTy::I32 => (i32::MIN.into(), i32::MAX.into()),
        ScalarTy::I64 => (i64::MIN.into(), i64::MAX.into()),
        ScalarTy::U8 => (0, u8::MAX.into()),
        ScalarTy::U16 => (0, u16::MAX.into()),
        ScalarTy::U32 => (0, u32::MAX.into()),
        _ => return None,
    })
}

/// The range of a literal.
pub(crate) fn literal(c: ScalarVal) -> Option<Known> {
    let int = |t, v: i128| Known::int(t, v, v, false);
    match c {
        ScalarVal::I8(v) => int(c.ty(), v.into()),
        ScalarVal::I16(v) => int(c.ty(), v.into()),
        ScalarVal::I32(v) => int(c.ty(), v.into()),
        ScalarVal::I64(v) => int(c.ty(), v.into()),
        ScalarVal::U8(v) => int(c.ty(), v.into()),
        ScalarVal::U16(v) => int(c.ty(), v.into()),
        ScalarVal::U32(v) => int(c.ty(), v.into()),
        ScalarVal::F32(v) => Known::float(v.into(), v.into()),
        ScalarVal::F64(v) => Known::float(v, v),
        ScalarVal::Bool(_) | ScalarVal::U64(_) | ScalarVal::F16(_) => None,
    }
}

/// `x`, or the whole range of its integer type `t` when nothing is known.
fn or_whole(x: Option<Known>, t: ScalarTy) -> Option<Known> {
    x.or_else(|| {
        let (lo, hi) = int_limits(t)?;
        Known::int(t, lo, hi, false)
    })
}

/// What both ranges say; where they disagree (code that cannot run), the
/// first.
pub(crate) fn intersect(a: Known, b: Known) -> Known {
    let empty = |k: &Known| match k.range {
        Range::Float { lo, hi } => lo > hi,
        Range::Int { lo, hi } => lo > hi,
    };
    join(a, b, true).filter(|k| !empty(k)).unwrap_or(a)
}

/// A range holding both.
pub(crate) fn union(a: Known, b: Known) -> Option<Known> {
    join(a, b, false)
}

/// The tighter bounds of two ranges of one kind (`tighter`), or the looser.
fn join(a: Known, b: Known, tighter: bool) -> Option<Known> {
    let range = match (a.range, b.range) {
        (Range::Float { lo: l1, hi: h1 }, Range::Float { lo: l2, hi: h2 }) => match tighter {
            true => Range::Float { lo: l1.max(l2), hi: h1.min(h2) },
            false => Range::Float { lo: l1.min(l2), hi: h1.max(h2) },
        },
        (Range::Int { lo: l1, hi: h1 }, Range::Int { lo: l2, hi: h2 }) => match tighter {
            true => Range::Int { lo: l1.max(l2), hi: h1.min(h2) },
            false => Range::Int { lo: l1.min(l2), hi: h1.max(h2) },
        },
        _ => return None,
    };
    Some(Known { range, floats: a.floats || b.floats })
}

/// `op` of type `t` on floats, as the generated code computes it.
fn float_op(t: ScalarTy, op: PrimFun, a: f64, b: f64) -> f64 {
    if t == ScalarTy::F32 {
        let (a, b) = (a as f32, b as f32);
        f64::from(match op {
            PrimFun::Add => a + b,
            PrimFun::Sub => a - b,
            _ => a * b,
        })
    } else {
        match op {
            PrimFun::Add => a + b,
            PrimFun::Sub => a - b,
            _ => a * b,
        }
    }
}

/// The range of `x op y` over the corners of two float ranges, where no
/// NaN can arise: every bound finite, or one operand a finite point (and
/// not zero, for a product: zero times infinity is NaN).
fn float_arith(t: ScalarTy, op: PrimFun, (l1, h1): (f64, f64), (l2, h2): (f64, f64)) -> Option<Known> {
    let finite = [l1, h1, l2, h2].iter().all(|v| v.is_finite());
    let point = |l: f64, h: f64| l == h && l.is_finite() && (op != PrimFun::Mul || l != 0.0);
    if !(finite || point(l1, h1) || point(l2, h2)) {
        return None;
    }
    let corners =
        [float_op(t, op, l1, l2), float_op(t, op, l1, h2), float_op(t, op, h1, l2), float_op(t, op, h1, h2)];
    if corners.iter().any(|c| c.is_nan()) {
        return None;
    }
    let lo = corners.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = corners.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    Known::float(lo, hi)
}

/// The range of `x op y` over the corners of two integer ranges, where
/// the result cannot wrap.
fn int_arith(t: ScalarTy, op: PrimFun, a: Known, b: Known) -> Option<Known> {
    let ((l1, h1), (l2, h2)) = (a.int_bounds()?, b.int_bounds()?);
    let f = |x: i64, y: i64| {
        let (x, y) = (i128::from(x), i128::from(y));
        match op {
            PrimFun::Add => x + y,
            PrimFun::Sub => x - y,
            _ => x * y,
        }
    };
    let corners = [f(l1, l2), f(l1, h2), f(h1, l2), f(h1, h2)];
    let lo = corners.iter().copied().min()?;
    let hi = corners.iter().copied().max()?;
    Known::int(t, lo, hi, a.floats || b.floats)
}

/// The bounds of a float that a cast to the integer type `to` truncates
/// without saturating: above `lo`, below `hi` (the range of
/// `acc_*_to_*`'s plain conversion in `prelude_common.h`).
fn cast_limits(to: ScalarTy) -> Option<(f64, f64)> {
    let (min, max) = int_limits(to)?;
    // (min - 1 and max + 1 are exact in an f64 for every type but i64,
    // whose min - 1 rounds to min: a bound only the stricter)
    Some(((min - 1) as f64, (max + 1) as f64))
}

/// Whether a float in `k` casts to `to` without saturating (and so by a
/// plain C cast).
pub(crate) fn casts_within(k: Known, to: ScalarTy) -> bool {
    match (k.float_bounds(), cast_limits(to)) {
        (Some((lo, hi)), Some((min, max))) => min < lo && hi < max,
        _ => false,
    }
}

/// The range of `op`'s result on operands of type `t` and ranges `args`
/// (`None`: unknown), for result type `rt`.
pub(crate) fn result(op: PrimFun, t: ScalarTy, rt: ScalarTy, args: &[Option<Known>]) -> Option<Known> {
    use PrimFun::*;
    let a = args.first().copied().flatten();
    let b = args.get(1).copied().flatten();
    let float = t == ScalarTy::F32 || t == ScalarTy::F64;
    match op {
        Add | Sub | Mul if float => float_arith(t, op, a?.float_bounds()?, b?.float_bounds()?),
        Add | Sub | Mul => int_arith(t, op, or_whole(a, t)?, or_whole(b, t)?),
        Min | Max if float => {
            // the other operand where one is NaN: a known operand bounds
            // the result on its side whatever the other is
            let pick = |x: f64, y: f64| if op == Min { x.min(y) } else { x.max(y) };
            match (a.and_then(|k| k.float_bounds()), b.and_then(|k| k.float_bounds())) {
                (Some((l1, h1)), Some((l2, h2))) => Known::float(pick(l1, l2), pick(h1, h2)),
                (Some((_, h)), None) | (None, Some((_, h))) if op == Min => {
                    Known::float(f64::NEG_INFINITY, h)
                }
                (Some((l, _)), None) | (None, Some((l, _))) => Known::float(l, f64::INFINITY),
                (None, None) => None,
            }
        }
        Min | Max => {
            let (a, b) = (or_whole(a, t)?, or_whole(b, t)?);
            let ((l1, h1), (l2, h2)) = (a.int_bounds()?, b.int_bounds()?);
            let pick = |x: i64, y: i64| i128::from(if op == Min { x.min(y) } else { x.max(y) });
            Known::int(t, pick(l1, l2), pick(h1, h2), a.floats || b.floats)
        }
        Neg if float => {
            let (lo, hi) = a?.float_bounds()?;
            Known::float(-hi, -lo)
        }
        Neg => {
            let (lo, hi) = a?.int_bounds()?;
            Known::int(t, -i128::from(hi), -i128::from(lo), a?.floats)
        }
        Floor | Ceil | Trunc | Round if float => {
            // monotone, and each value of the type rounds to a value of it
            let (lo, hi) = a?.float_bounds()?;
            let f = |x: f64| match op {
                Floor => x.floor(),
                Ceil => x.ceil(),
                Trunc => x.trunc(),
                _ => x.round(),
            };
            Known::float(f(lo), f(hi))
        }
        // a non-negative operand bounds a conjunction of bits
        BAnd => {
            let bound = [a, b]
                .iter()
                .flatten()
                .filter_map(|k| k.int_bounds().filter(|&(lo, _)| lo >= 0))
                .map(|(_, hi)| hi)
                .min()?;
            let floats = [a, b].iter().flatten().any(|k| k.floats);
            Known::int(t, 0, bound.into(), floats)
        }
        // by a positive divisor: below it, and not negative (`mod`), or
        // not negative for a dividend that is not (`rem`)
        Mod | Rem => {
            let (l2, h2) = b?.int_bounds()?;
            if l2 <= 0 {
                return None;
            }
            let floats = b?.floats || a.is_some_and(|k| k.floats);
            match op {
                Mod => Known::int(t, 0, i128::from(h2) - 1, floats),
                _ => {
                    let (l1, h1) = a?.int_bounds()?;
                    (l1 >= 0).then(|| Known::int(t, 0, i128::from(h1.min(h2 - 1)), floats)).flatten()
                }
            }
        }
        Cast(to) => cast(or_whole(a, t)?, to),
        _ => None,
    }
    .filter(|k| match k.range {
        Range::Float { .. } => rt == ScalarTy::F32 || rt == ScalarTy::F64,
        Range::Int { .. } => int_limits(rt).is_some(),
    })
}

/// The range of a cast from `from` to `to`.
fn cast(k: Known, to: ScalarTy) -> Option<Known> {
    match k.range {
        Range::Float { lo, hi } if int_limits(to).is_some() => casts_within(k, to)
            .then(|| Known::int(to, lo.trunc() as i128, hi.trunc() as i128, true))
            .flatten(),
        Range::Float { lo, hi } => match to {
            // (rounding to the narrower type is monotone)
            ScalarTy::F32 => Known::float(f64::from(lo as f32), f64::from(hi as f32)),
            ScalarTy::F64 => Known::float(lo, hi),
            _ => None,
        },
        Range::Int { lo, hi } if int_limits(to).is_some() => Known::int(to, lo.into(), hi.into(), k.floats),
        Range::Int { lo, hi } => {
            let r = match to {
                ScalarTy::F32 => Known::float(f64::from(lo as f32), f64::from(hi as f32)),
                ScalarTy::F64 => Known::float(lo as f64, hi as f64),
                _ => None,
            };
            r.map(|r| Known { floats: k.floats, ..r })
        }
    }
}

/// What `a op b` holding says of `a` and of `b`, where `op` compares two
/// values of type `t` (a float comparison that holds has no NaN operand).
pub(crate) fn implied(op: PrimFun, t: ScalarTy, a: Option<Known>, b: Option<Known>) -> [Option<Known>; 2] {
    use PrimFun::*;
    if t == ScalarTy::F32 || t == ScalarTy::F64 {
        let whole = Known::float(f64::NEG_INFINITY, f64::INFINITY);
        let (al, ah) = a.and_then(|k| k.float_bounds()).unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
        let (bl, bh) = b.and_then(|k| k.float_bounds()).unwrap_or((f64::NEG_INFINITY, f64::INFINITY));
        let below = |h: f64| Known::float(f64::NEG_INFINITY, h);
        let above = |l: f64| Known::float(l, f64::INFINITY);
        return match op {
            Lt | Le => [below(bh), above(al)],
            Gt | Ge => [above(bl), below(ah)],
            Eq => [Known::float(bl, bh), Known::float(al, ah)],
            Ne => [None, None],
            _ => [whole, whole],
        };
    }
    let (Some(a), Some(b)) = (or_whole(a, t), or_whole(b, t)) else { return [None, None] };
    let ((al, ah), (bl, bh)) = match (a.int_bounds(), b.int_bounds()) {
        (Some(x), Some(y)) => (x, y),
        _ => return [None, None],
    };
    let (al, ah, bl, bh) = (i128::from(al), i128::from(ah), i128::from(bl), i128::from(bh));
    let (min, max) = int_limits(t).unwrap_or((0, 0));
    let int = |lo: i128, hi: i128, k: Known| Known::int(t, lo, hi, k.floats);
    match op {
        Lt => [int(min, bh - 1, b), int(al + 1, max, a)],
        Le => [int(min, bh, b), int(al, max, a)],
        Gt => [int(bl + 1, max, b), int(min, ah - 1, a)],
        Ge => [int(bl, max, b), int(min, ah, a)],
        Eq => [Some(b), Some(a)],
        _ => [None, None],
    }
}

// Note [Integer arithmetic that cannot wrap]
// The language's integer arithmetic wraps, and C's signed arithmetic may
// not overflow, so an integer sum, difference or product is written
// `acc_add_*` and the like, through the unsigned type. GCC does not see
// through those: a lane's position plus a constant, `(j0 + q) + 64`, is
// no longer an affine function of `q` to it, and a read there became a
// gather (`vgatherdps`) where a vector load would do; the audio
// program's spectra in the peers' form took 37 ms in a C model of its
// kernel against 13 with `+` (one thread). Where the operands' ranges
// (Note [Value ranges]) show that the result lies inside its type, the
// plain operator computes the same value with no overflow: it is written
// so. A range that rests on floats is not relied on (under fast-math it
// need not hold). A lane's position in a uniform loop is known to lie in
// [0, 2^57]: it indexes an array, and no buffer reaches 2^57 bytes (the
// largest x86-64 and AArch64 address spaces are 2^57 and 2^52 bytes).

/// The largest position an array's element can have (Note [Integer
/// arithmetic that cannot wrap]).
const MOST_POSITION: i64 = 1 << 57;

impl ExpGen<'_> {
    /// Whether the integer `op` (`+`, `-` or `*`) of `args` cannot wrap
    /// (Note [Integer arithmetic that cannot wrap]).
    pub(super) fn cannot_wrap(&self, op: PrimFun, t: ScalarTy, rt: ScalarTy, args: &[CVal]) -> bool {
        let ks: Vec<Option<Known>> =
            args.iter().map(|a| a.leaves.first().and_then(|l| self.known(l))).collect();
        !t.is_float()
            && ks.iter().all(|k| k.is_some_and(|k| !k.floats))
            && result(op, t, rt, &ks).is_some_and(|k| !k.floats)
    }

    /// Records that the C atom `atom` is an element's position in an
    /// array (Note [Integer arithmetic that cannot wrap]).
    pub(crate) fn known_position(&mut self, atom: &str) {
        self.set_known(atom, Known::int(ScalarTy::I64, 0, i128::from(MOST_POSITION), false));
    }

    /// What is known of the C atom `atom`'s value here.
    pub(crate) fn known(&self, atom: &str) -> Option<Known> {
        self.ranges.get(atom).copied()
    }

    /// Records what is known of `atom` everywhere it is in scope.
    pub(super) fn set_known(&mut self, atom: &str, k: Option<Known>) {
        if let Some(k) = k {
            self.ranges.insert(atom.to_string(), k);
        }
    }

    /// Records what the boolean atom `b` being `truth` says of other atoms
    /// (at most `MOST_FACTS` of it, the first, so that a chain of 10^5
    /// `&&`s does not copy its facts 10^5 times).
    pub(super) fn set_implied(&mut self, b: &str, truth: bool, mut facts: Vec<(String, Known)>) {
        facts.truncate(MOST_FACTS);
        if !facts.is_empty() {
            self.implied.insert((b.to_string(), truth), facts);
        }
    }

    /// What the boolean atom `b` being `truth` says.
    pub(super) fn implied_by(&self, b: &str, truth: bool) -> Vec<(String, Known)> {
        self.implied.get(&(b.to_string(), truth)).cloned().unwrap_or_default()
    }

    /// Assumes `facts` (inside a branch taken when they hold), returning
    /// what to restore after it (`forget`).
    pub(super) fn assume(&mut self, facts: &[(String, Known)]) -> Vec<(String, Option<Known>)> {
        let mut undo = Vec::with_capacity(facts.len());
        for (atom, k) in facts {
            let old = self.ranges.get(atom).copied();
            let new = old.map_or(*k, |o| intersect(o, *k));
            undo.push((atom.clone(), old));
            self.ranges.insert(atom.clone(), new);
        }
        undo
    }

    /// Restores what `assume` changed, latest first.
    pub(super) fn forget(&mut self, undo: Vec<(String, Option<Known>)>) {
        for (atom, old) in undo.into_iter().rev() {
            match old {
                Some(k) => self.ranges.insert(atom, k),
                None => self.ranges.remove(&atom),
            };
        }
    }

    /// Records the range of a primitive's result `r` on `args`, and, for
    /// a comparison, what its truth says of its operands.
    pub(super) fn note_prim(&mut self, op: PrimFun, t: ScalarTy, rt: ScalarTy, args: &[CVal], r: &str) {
        let ks: Vec<Option<Known>> =
            args.iter().map(|a| a.leaves.first().and_then(|l| self.known(l))).collect();
        match op {
            PrimFun::Lt | PrimFun::Le | PrimFun::Gt | PrimFun::Ge | PrimFun::Eq | PrimFun::Ne => {
                // (a float comparison that fails may have a NaN operand:
                // only an integer one says anything failing)
                let negated = if t.is_float() { None } else { negation(op) };
                for (truth, op) in [(true, Some(op)), (false, negated)] {
                    let Some(op) = op else { continue };
                    let [ka, kb] = implied(op, t, ks[0], ks[1]);
                    let facts = args
                        .iter()
                        .zip([ka, kb])
                        .filter_map(|(a, k)| Some((a.leaves[0].clone(), k?)))
                        .filter(|(atom, _)| is_variable(atom))
                        .collect();
                    self.set_implied(r, truth, facts);
                }
            }
            PrimFun::LNot => {
                let a = &args[0].leaves[0];
                for truth in [true, false] {
                    let facts = self.implied_by(a, !truth);
                    self.set_implied(r, truth, facts);
                }
            }
            _ => {
                let k = result(op, t, rt, &ks);
                self.set_known(r, k);
            }
        }
    }
}

/// The comparison that holds where `op` fails, for integers.
fn negation(op: PrimFun) -> Option<PrimFun> {
    use PrimFun::*;
    Some(match op {
        Lt => Ge,
        Le => Gt,
        Gt => Le,
        Ge => Lt,
        Ne => Eq,
        _ => return None,
    })
}

/// Whether a C atom names a variable (not a literal, whose range is its
/// value).
fn is_variable(atom: &str) -> bool {
    atom.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && atom.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;
    use PrimFun::*;
    use ScalarTy::*;

    fn f(lo: f64, hi: f64) -> Option<Known> {
        Known::float(lo, hi)
    }

    fn lit(v: f32) -> Option<Known> {
        literal(ScalarVal::F32(v))
    }

    #[test]
    fn a_histogram_bin_is_known_inside_its_test() {
        // 0 <= x && x < 1
        let [x0, _] = implied(Ge, F32, None, lit(0.0));
        let [x1, _] = implied(Lt, F32, None, lit(1.0));
        let x = intersect(x0.unwrap(), x1.unwrap());
        assert_eq!(x.range, Range::Float { lo: 0.0, hi: 1.0 });
        let scaled = result(Mul, F32, F32, &[Some(x), lit(256.0)]).unwrap();
        assert_eq!(scaled.range, Range::Float { lo: 0.0, hi: 256.0 });
        assert!(casts_within(scaled, I64) && casts_within(scaled, I32));
        let bin = result(Cast(I64), F32, I64, &[Some(scaled)]).unwrap();
        assert_eq!(bin.range, Range::Int { lo: 0, hi: 256 });
        let clamped = result(Min, I64, I64, &[Some(bin), literal(ScalarVal::I64(255))]).unwrap();
        assert_eq!(clamped, Known { range: Range::Int { lo: 0, hi: 255 }, floats: true });
    }

    #[test]
    fn float_bounds_follow_the_types_rounding() {
        // 1 + 2^-24 rounds to 1 in f32, not in f64
        let x = f(0.0, 1.0);
        let tiny = 2f64.powi(-24);
        let p = |t| result(Add, t, t, &[x, f(tiny, tiny)]).unwrap().float_bounds().unwrap();
        assert_eq!(p(F32), (tiny, 1.0));
        assert_eq!(p(F64), (tiny, 1.0 + tiny));
        // f32's largest value times 2 is infinite, still no NaN
        let big = f64::from(f32::MAX);
        assert_eq!(
            result(Mul, F32, F32, &[f(0.0, big), lit(2.0)]).unwrap().float_bounds(),
            Some((0.0, f64::INFINITY))
        );
    }

    #[test]
    fn no_range_where_a_nan_can_arise() {
        // infinity times zero, infinity minus infinity
        assert_eq!(result(Mul, F32, F32, &[f(0.0, f64::INFINITY), lit(0.0)]), None);
        assert_eq!(result(Sub, F32, F32, &[f(0.0, f64::INFINITY), f(0.0, f64::INFINITY)]), None);
        // an operand that may be NaN
        assert_eq!(result(Add, F32, F32, &[None, lit(1.0)]), None);
        // but min and max with a known operand are never NaN
        assert_eq!(
            result(Max, F32, F32, &[None, lit(0.0)]).unwrap().float_bounds(),
            Some((0.0, f64::INFINITY))
        );
        let clamp = result(Min, F32, F32, &[result(Max, F32, F32, &[None, lit(0.0)]), lit(255.0)]).unwrap();
        assert_eq!(clamp.float_bounds(), Some((0.0, 255.0)));
        assert!(casts_within(clamp, U8));
    }

    #[test]
    fn casts_stay_plain_only_inside_the_type() {
        assert!(casts_within(f(-128.9, 127.9).unwrap(), I8));
        assert!(!casts_within(f(-129.0, 0.0).unwrap(), I8));
        assert!(!casts_within(f(0.0, 128.0).unwrap(), I8));
        assert!(casts_within(f(-0.9, 255.5).unwrap(), U8));
        assert!(!casts_within(f(-1.0, 1.0).unwrap(), U8));
        // 2^63 is outside i64, the f64 below it is not
        let two63 = 2f64.powi(63);
        assert!(!casts_within(f(0.0, two63).unwrap(), I64));
        assert!(casts_within(f(-two63 + 1024.0, two63 - 1024.0).unwrap(), I64));
        assert!(!casts_within(f(-two63, 0.0).unwrap(), I64));
        // no u64 (its values do not fit the ranges' i64)
        assert!(!casts_within(f(0.0, 1.0).unwrap(), U64));
    }

    #[test]
    fn integer_ranges_never_wrap() {
        let i = |lo: i64, hi: i64| Known::int(I32, lo.into(), hi.into(), false);
        assert_eq!(result(Add, I32, I32, &[i(0, 10), i(5, 5)]).unwrap().int_bounds(), Some((5, 15)));
        assert_eq!(result(Add, I32, I32, &[i(0, i32::MAX.into()), i(1, 1)]), None);
        assert_eq!(result(Mul, I32, I32, &[i(-3, 2), i(4, 5)]).unwrap().int_bounds(), Some((-15, 10)));
        assert_eq!(result(Neg, I32, I32, &[i(i32::MIN.into(), 0)]), None);
        // unknown operands are the whole type
        assert_eq!(result(Min, I32, I32, &[None, i(7, 7)]).unwrap().int_bounds(), Some((i32::MIN.into(), 7)));
        assert_eq!(result(BAnd, I32, I32, &[None, i(255, 255)]).unwrap().int_bounds(), Some((0, 255)));
        assert_eq!(result(Mod, I32, I32, &[None, i(16, 16)]).unwrap().int_bounds(), Some((0, 15)));
        assert_eq!(result(Rem, I32, I32, &[None, i(16, 16)]), None);
        assert_eq!(result(Rem, I32, I32, &[i(0, 9), i(16, 16)]).unwrap().int_bounds(), Some((0, 9)));
        // a cast to a narrower type keeps a range only where it fits
        assert_eq!(result(Cast(U8), I32, U8, &[i(0, 300)]), None);
        assert_eq!(result(Cast(U8), I32, U8, &[i(0, 200)]).unwrap().int_bounds(), Some((0, 200)));
    }

    #[test]
    fn comparisons_bound_both_sides() {
        let i = |lo: i64, hi: i64| Known::int(I64, lo.into(), hi.into(), false);
        let [a, b] = implied(Lt, I64, None, i(10, 20));
        assert_eq!(a.unwrap().int_bounds(), Some((i64::MIN, 19)));
        assert_eq!(b.unwrap().int_bounds(), Some((i64::MIN + 1, i64::MAX)));
        let [a, _] = implied(Ge, I64, None, i(0, 0));
        assert_eq!(a.unwrap().int_bounds(), Some((0, i64::MAX)));
        // x < MIN cannot hold: no range
        let [a, _] = implied(Lt, I64, None, i(i64::MIN, i64::MIN));
        assert_eq!(a, None);
        // a float comparison that holds rules out NaN
        let [a, b] = implied(Eq, F64, None, None);
        assert_eq!(a.unwrap().float_bounds(), Some((f64::NEG_INFINITY, f64::INFINITY)));
        assert_eq!(b.unwrap().float_bounds(), Some((f64::NEG_INFINITY, f64::INFINITY)));
        assert_eq!(implied(Ne, F64, None, None), [None, None]);
    }

    #[test]
    fn disagreeing_ranges_keep_the_first() {
        let a = Known::int(I64, 0, 5, false).unwrap();
        let b = Known::int(I64, 10, 20, false).unwrap();
        assert_eq!(intersect(a, b), a);
        assert_eq!(union(a, b).unwrap().int_bounds(), Some((0, 20)));
    }
}

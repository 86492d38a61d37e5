//! Sums of a one-hot array as a permute (Note [Sums of one-hot rows]).
//!
//! Note [Sums of one-hot rows]
//! Accelerate's k-means example (`accelerate-programs/src/kmeans.rs`)
//! sums each cluster's points as the rows of a `k x n` one-hot array:
//!
//! ```text
//! fold (+) z (generate (k, n) (\(c, j) -> if key j == c then v j else 0))
//! ```
//!
//! Row `c` adds the `v j` whose key is `c`. Folded as written, every
//! element of all `k` rows is evaluated: `k` passes over the keys and the
//! values, of which all but one per column add a zero. At 2^20 points and
//! 16 clusters that fold took about 4 ms an iteration on two workers, more
//! than the rest of the iteration, where the hand-written loop adds each
//! point to its cluster's sums once. With an operator that is a sum and a
//! zero that is its identity, the fold is a histogram:
//!
//! ```text
//! permute (+) (fill k z) (\j -> if 0 <= key j < k then Just (key j) else Nothing)
//!         (generate n (\j -> if 0 <= key j < k then v j else 0))
//! ```
//!
//! which the CPU backend runs as a privatised permute, one pass. Futhark
//! writes such sums as `reduce_by_index` and JAX as `segment_sum`; this
//! rewrite finds them in the form Accelerate's users write.
//!
//! When it applies: the fold has a seed and reduces a `generate` of rank 2
//! that is not shared (its own argument, perhaps under the array lets that
//! bind what only it reads); the generate's body is a chain of lets
//! ending in `if p then v else zero` (or `if q then zero else v` with `q`
//! the negation), where `p` is `key == row` or `row == key`, `row` the
//! element's row index or its cast to an integer type, and nothing but
//! `p` reads the row index; the operator adds each leaf of its arguments
//! (scalar or flat tuple), `zero` is zero in every leaf (`+0.0` for
//! floats) and the seed is a constant with no `-0.0` leaf.
//!
//! Why the result is the same: a row's fold is `z ⊕ x0 ⊕ .. ⊕ x(n-1)` in
//! some grouping (`fold`'s operator is associative, `docs/semantics.md`);
//! integer addition of zero changes nothing, and a float sum that starts
//! from a seed other than `-0.0` and adds `+0.0` terms differs from the
//! sum without them only where it would be `-0.0`, which such a sum never
//! is (`+0.0 + -0.0` is `+0.0` in round to nearest). Addition commutes,
//! so the permute's order of updates is as good as the fold's; both are
//! any grouping of the same terms, equal to the bit where the terms are
//! integers or sums of them are exact (k-means' benchmark points are).
//!
//! Errors: the permute evaluates each key once where the fold evaluates it
//! once per row, the same errors unless there are no rows, so the keys are
//! read only when `k >= 1`; a value is read only for a key in range, as
//! the fold reads it only on its key's row. A key of `T` narrower than 64
//! bits matches row `c` when `c` cast to `T` equals it, which for `k >
//! T::MAX + 1` rows holds for several rows: the rewritten program runs
//! the permute only where `k <= T::MAX + 1` (an `acond`) and the fold as
//! written otherwise.
//!
//! The rewrite is for backends whose permute privatises its result (the
//! CPU's, Note [Privatised permutes] in `cpu/permute.rs`): the CUDA
//! backend's permute of tuples takes a lock per destination, which `k`
//! hot destinations would serialise, and the interpreter is the reference.
//! The pipeline runs it for the CPU backend only, before fusion.

use crate::avars::{parts_mut, Part};
use crate::fusion::{prim, prj};
use accelerate_base::array::{EltTy, ScalarTy, ScalarVal};
use accelerate_base::error::SrcLoc;
use accelerate_ir::*;

/// Rewrites every sum of one-hot rows of the program into a permute.
pub fn rewrite_program(mut p: Program) -> Program {
    rewrite(&mut p.body);
    p
}

fn rewrite(a: &mut OpenAcc) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        for part in parts_mut(a) {
            if let Part::Acc(x, _) = part {
                rewrite(x);
            }
        }
        if let Some(new) = histogram(a) {
            *a = new;
        }
    })
}

/// The parts of a one-hot sum (Note [Sums of one-hot rows]).
struct OneHot<'a> {
    /// The bindings of the lets the conditional is under, outermost
    /// first; the generate's index is variable 0 of the first.
    binds: Vec<&'a OpenExp>,
    /// The key, in the environment of the conditional.
    key: &'a OpenExp,
    /// The key's type (the row index's cast, or `I64`).
    key_ty: ScalarTy,
    /// The branch taken on the key's row, and the other (the zero).
    value: &'a OpenExp,
    zero: &'a OpenExp,
}

/// The permute form of `a` where `a` is a sum of one-hot rows. The
/// generate may be under array lets (the arrays its body reads, bound
/// where it is the only user): the permute is then under them too, the
/// operator and seed being closed (`sum_leaves`, a constant seed).
fn histogram(a: &OpenAcc) -> Option<OpenAcc> {
    let AccKind::Fold { f, seed: Some(seed), array } = &a.kind else { return None };
    let mut binds = Vec::new();
    let mut inner = &**array;
    while let AccKind::Let(b, body) = &inner.kind {
        binds.push(&**b);
        inner = body;
    }
    let AccKind::Generate { shape, f: g } = &inner.kind else { return None };
    let leaves = sum_leaves(f)?;
    if !constant_without_negative_zero(seed) || g.params.len() != 1 || g.params[0] != EltTy::shape(2) {
        return None;
    }
    let hot = one_hot(&g.body)?;
    if !is_zero(hot.zero, leaves) {
        return None;
    }
    let loc = a.loc;
    let rows = component(shape, 0, loc);
    let permute = OpenAcc::new(
        AccKind::Permute {
            combine: f.clone(),
            defaults: Box::new(OpenAcc::new(
                AccKind::Generate {
                    shape: OpenExp::new(ExpKind::Tuple(vec![rows.clone()]), loc),
                    f: Fun { params: vec![EltTy::shape(1)], body: seed.clone() },
                },
                loc,
            )),
            index: destination(&hot, &rows, loc),
            source: Box::new(OpenAcc::new(
                AccKind::Generate {
                    shape: OpenExp::new(ExpKind::Tuple(vec![component(shape, 1, loc)]), loc),
                    f: Fun { params: vec![EltTy::shape(1)], body: value(&hot, &rows, loc) },
                },
                loc,
            )),
        },
        loc,
    );
    let mut out = match key_max(hot.key_ty) {
        None => permute,
        Some(max) => {
            // rows whose casts to the key's type are distinct: the permute
            let fits = prim(PrimFun::Le, vec![rows, int(max + 1, loc)], loc);
            let fold =
                AccKind::Fold { f: f.clone(), seed: Some(seed.clone()), array: Box::new(inner.clone()) };
            let fold = OpenAcc::new(fold, loc);
            OpenAcc::new(AccKind::Acond { cond: fits, then_: Box::new(permute), else_: Box::new(fold) }, loc)
        }
    };
    for b in binds.into_iter().rev() {
        out = OpenAcc::new(AccKind::Let(Box::new(b.clone()), Box::new(out)), loc);
    }
    Some(out)
}

/// Component `i` of a shape: the expression itself where the shape is a
/// tuple of them (a projection the simplifier leaves where they read
/// arrays).
fn component(shape: &OpenExp, i: usize, loc: SrcLoc) -> OpenExp {
    match &shape.kind {
        ExpKind::Tuple(es) if i < es.len() => es[i].clone(),
        _ => prj(i, shape.clone(), loc),
    }
}

/// The largest value of an integer key type narrower than 64 bits (rows
/// up to it cast to distinct keys); `None` for 64-bit keys.
fn key_max(t: ScalarTy) -> Option<i64> {
    match t {
        ScalarTy::I8 => Some(i8::MAX as i64),
        ScalarTy::I16 => Some(i16::MAX as i64),
        ScalarTy::I32 => Some(i32::MAX as i64),
        ScalarTy::U8 => Some(u8::MAX as i64),
        ScalarTy::U16 => Some(u16::MAX as i64),
        ScalarTy::U32 => Some(u32::MAX as i64),
        _ => None,
    }
}

/// The leaves of the operator's result where it adds each leaf of its two
/// arguments: `a + b` (one leaf) or a flat tuple of `a.i + b.i`.
fn sum_leaves(f: &Fun) -> Option<usize> {
    if f.params.len() != 2 || f.params[0] != f.params[1] {
        return None;
    }
    let adds = |e: &OpenExp, leaf: Option<usize>| -> bool {
        let ExpKind::Prim(PrimFun::Add, args) = &e.kind else { return false };
        let of = |x: &OpenExp| match (&x.kind, leaf) {
            (ExpKind::Var(v), None) => Some(*v),
            (ExpKind::Prj(i, t), Some(l)) if *i == l => match t.kind {
                ExpKind::Var(v) => Some(v),
                _ => None,
            },
            _ => None,
        };
        args.len() == 2 && matches!((of(&args[0]), of(&args[1])), (Some(0), Some(1)) | (Some(1), Some(0)))
    };
    match (&f.body.kind, &f.params[0]) {
        (ExpKind::Tuple(es), EltTy::Tuple(ts)) if es.len() == ts.len() => {
            let flat = ts.iter().all(|t| matches!(t, EltTy::Scalar(_)));
            (flat && es.iter().enumerate().all(|(i, e)| adds(e, Some(i)))).then_some(es.len())
        }
        (_, EltTy::Scalar(_)) => adds(&f.body, None).then_some(1),
        _ => None,
    }
}

/// Whether `e` is a constant, scalar or flat tuple, with no `-0.0` leaf.
fn constant_without_negative_zero(e: &OpenExp) -> bool {
    let negative_zero = |v: ScalarVal| match v {
        ScalarVal::F16(b) => b == 0x8000,
        ScalarVal::F32(x) => x.to_bits() == (-0.0f32).to_bits(),
        ScalarVal::F64(x) => x.to_bits() == (-0.0f64).to_bits(),
        _ => false,
    };
    let leaf = |e: &OpenExp| matches!(e.kind, ExpKind::Const(v) if !negative_zero(v));
    match &e.kind {
        ExpKind::Tuple(es) => es.iter().all(leaf),
        _ => leaf(e),
    }
}

/// Whether `e` is zero in each of its `leaves` leaves (`+0.0` for floats).
fn is_zero(e: &OpenExp, leaves: usize) -> bool {
    let leaf = |e: &OpenExp| matches!(e.kind, ExpKind::Const(v) if v.ty().is_numeric() && v.same_bits(ScalarVal::zero(v.ty())));
    match &e.kind {
        ExpKind::Tuple(es) if leaves > 1 || es.len() == 1 => es.len() == leaves && es.iter().all(leaf),
        _ => leaves == 1 && leaf(e),
    }
}

/// The one-hot structure of a generate's body, if it has it.
fn one_hot(body: &OpenExp) -> Option<OneHot<'_>> {
    let mut e = body;
    let mut binds = Vec::new();
    while let ExpKind::Let(b, rest) = &e.kind {
        if reads_row(b, binds.len()) {
            return None;
        }
        binds.push(&**b);
        e = rest;
    }
    let lets = binds.len();
    let ExpKind::Cond(p, t, f) = &e.kind else { return None };
    let ExpKind::Prim(op @ (PrimFun::Eq | PrimFun::Ne), args) = &p.kind else { return None };
    if args.len() != 2 || reads_row(t, lets) || reads_row(f, lets) {
        return None;
    }
    let (key, key_ty) = match (row_cast(&args[0], lets), row_cast(&args[1], lets)) {
        (Some(t), None) => (&args[1], t),
        (None, Some(t)) => (&args[0], t),
        _ => return None,
    };
    if reads_row(key, lets) {
        return None;
    }
    let (value, zero) = if *op == PrimFun::Ne { (&**f, &**t) } else { (&**t, &**f) };
    Some(OneHot { binds, key, key_ty, value, zero })
}

/// The type the row index is cast to where `e` is the row index of the
/// index variable `ix` (`I64`) or its cast to an integer type.
fn row_cast(e: &OpenExp, ix: usize) -> Option<ScalarTy> {
    let is_row =
        |e: &OpenExp| matches!(&e.kind, ExpKind::Prj(0, t) if matches!(t.kind, ExpKind::Var(v) if v == ix));
    match &e.kind {
        ExpKind::Prim(PrimFun::Cast(t), args) if args.len() == 1 && t.is_integral() && is_row(&args[0]) => {
            Some(*t)
        }
        _ if is_row(e) => Some(ScalarTy::I64),
        _ => None,
    }
}

/// Whether `e` reads the index variable `ix` other than as its column,
/// `ix.1`.
fn reads_row(e: &OpenExp, ix: usize) -> bool {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &e.kind {
        ExpKind::Var(v) => *v == ix,
        ExpKind::Prj(1, t) if matches!(t.kind, ExpKind::Var(v) if v == ix) => false,
        ExpKind::Let(b, body) => reads_row(b, ix) || reads_row(body, ix + 1),
        ExpKind::While { cond, body, init } => {
            reads_row(init, ix) || reads_row(&cond.body, ix + 1) || reads_row(&body.body, ix + 1)
        }
        _ => {
            let mut any = false;
            visit::each_child(e, |c| any = any || reads_row(c, ix));
            any
        }
    })
}

/// `\(j) -> if rows >= 1 then (let ix = (0, j) in lets in let k = key in
/// (0 <= k && k < rows, (k,))) else (false, (0,))`: the permute's index
/// function, the key read only where there are rows.
fn destination(hot: &OneHot<'_>, rows: &OpenExp, loc: SrcLoc) -> Fun {
    // under the lets, then `k`: `rows` is closed, the key moves under `k`
    let k = OpenExp::new(ExpKind::Var(0), loc);
    let in_range = in_range(&k, rows, loc);
    let keep = OpenExp::new(ExpKind::Tuple(vec![in_range, OpenExp::new(ExpKind::Tuple(vec![k]), loc)]), loc);
    let inner = OpenExp::new(ExpKind::Let(Box::new(key_as_int(hot, loc)), Box::new(keep)), loc);
    let body = under_lets(hot, inner, loc);
    let none = OpenExp::new(
        ExpKind::Tuple(vec![
            OpenExp::new(ExpKind::Const(ScalarVal::Bool(false)), loc),
            OpenExp::new(ExpKind::Tuple(vec![int(0, loc)]), loc),
        ]),
        loc,
    );
    let any_rows = prim(PrimFun::Ge, vec![rows.clone(), int(1, loc)], loc);
    Fun { params: vec![EltTy::shape(1)], body: cond(any_rows, body, none, loc) }
}

/// `\(j) -> let ix = (0, j) in lets in if <key in range> then v else
/// zero`: the permute's source, a value read only for a key in range.
fn value(hot: &OneHot<'_>, rows: &OpenExp, loc: SrcLoc) -> OpenExp {
    let k = OpenExp::new(ExpKind::Var(0), loc);
    let test =
        OpenExp::new(ExpKind::Let(Box::new(key_as_int(hot, loc)), Box::new(in_range(&k, rows, loc))), loc);
    under_lets(hot, cond(test, hot.value.clone(), hot.zero.clone(), loc), loc)
}

/// The key as an `Int`, in the environment of the conditional.
fn key_as_int(hot: &OneHot<'_>, loc: SrcLoc) -> OpenExp {
    match hot.key_ty {
        ScalarTy::I64 => hot.key.clone(),
        _ => prim(PrimFun::Cast(ScalarTy::I64), vec![hot.key.clone()], loc),
    }
}

/// `0 <= k && k < rows` (`rows` closed).
fn in_range(k: &OpenExp, rows: &OpenExp, loc: SrcLoc) -> OpenExp {
    let lo = prim(PrimFun::Le, vec![int(0, loc), k.clone()], loc);
    let hi = prim(PrimFun::Lt, vec![k.clone(), rows.clone()], loc);
    prim(PrimFun::LAnd, vec![lo, hi], loc)
}

/// `let ix = (0, j) in <the body's lets> in inner`, in the environment of
/// a function of the column `j` (variable 0): `inner` is in the
/// environment of the conditional, which reads `ix` only as its column.
fn under_lets(hot: &OneHot<'_>, inner: OpenExp, loc: SrcLoc) -> OpenExp {
    let mut out = inner;
    for &b in hot.binds.iter().rev() {
        out = OpenExp::new(ExpKind::Let(Box::new(b.clone()), Box::new(out)), loc);
    }
    let column = prj(0, OpenExp::new(ExpKind::Var(0), loc), loc);
    let ix = OpenExp::new(ExpKind::Tuple(vec![int(0, loc), column]), loc);
    OpenExp::new(ExpKind::Let(Box::new(ix), Box::new(out)), loc)
}

fn int(x: i64, loc: SrcLoc) -> OpenExp {
    OpenExp::new(ExpKind::Const(ScalarVal::I64(x)), loc)
}

fn cond(c: OpenExp, t: OpenExp, e: OpenExp, loc: SrcLoc) -> OpenExp {
    OpenExp::new(ExpKind::Cond(Box::new(c), Box::new(t), Box::new(e)), loc)
}

//! Reads at clamped or wrapped neighbours as a stencil (Note [Clamped
//! reads as stencils]).
//!
//! Note [Clamped reads as stencils]
//! A 3x3 blur written as a NumPy or JAX user writes it without `pad`,
//! each neighbour read at its coordinates clamped to the edge:
//!
//! ```text
//! generate (shape a) (\(i, j) -> (a!(min(max(i - 1, 0), rows - 1),
//!                                    min(max(j - 1, 0), cols - 1)) + ..) / 9)
//! ```
//!
//! is Accelerate's `stencil` with the `clamp` boundary, written out. As a
//! generate, every read's column is a `min` of a `max` of the lane's own
//! column, which the C compiler cannot prove consecutive: the CPU
//! backend's vector loop gathered each of the nine reads (`vgatherqps`,
//! 8 lanes of 64-bit indices), and at 4096x4096 the blur took 64 to 74 ms
//! on two workers where a sequential Rust loop took 55 to 63 and the same
//! blur written with `stencil` 10 (the two-core EPYC guest of
//! docs/benchmarks.md). The stencil's kernel reads the interior without
//! clamping, in vector loads, and clamps only at the borders.
//!
//! When it applies: a `generate` whose shape is `shape(a)` for an array
//! variable `a` of the same rank, and whose body reads the index only in
//! reads of `a` at points `(c_0, .., c_{r-1})` where each component `c_k`
//! is `ix_k` itself or `ix_k + d` clamped to `[0, extent_k - 1]`
//! (`min(max(ix_k + d, 0), extent_k - 1)` or `max(min(..), 0)`), for a
//! literal `d` of at most `MAX_RADIUS`; or, in every component of every
//! point, wrapped around instead (`(ix_k + d) mod extent_k`, or
//! `(ix_k + d + extent_k) rem extent_k`, as a periodic grid is written).
//! The body may compute the components in lets, as sharing recovery
//! binds them, and may read other arrays and `a` elsewhere, at indices
//! that do not use the element's index. A second array `b` may be read
//! at such points too (a Poisson step's right-hand side at the element,
//! `b!ix`): the two are then `stencil2`'s arguments, behind an `acond`
//! that `b` has `a`'s shape (as must any array whose extents clamp or
//! wrap a coordinate); where it has not, the generate runs as written,
//! with its errors. (A read that is not such a point keeps the index
//! live, and so do a third array's points and a mix of clamped and
//! wrapped points of one array, which no one boundary reads: the
//! generate is left as written.)
//!
//! The rewrite: `stencil (\p.. -> body') clamp a` (`wrap a`), where the
//! pattern spans the largest offset in each dimension and `body'` is the
//! body with each such read replaced by the parameter of its point. A
//! read of `ix_k` inside the array and a clamped (wrapped) read are both
//! what the clamp (wrap) boundary reads at that offset, so each parameter
//! is the value the read gave, and the body computes the same operations
//! on the same values in the same order: the same result, to the bit.
//! (`rem` wraps `ix_k + d + extent_k` where it is not negative: for every
//! offset the pattern holds, in an array as large as the pattern.) A
//! generate that reads no neighbour, only elements at its own index, is
//! left to fusion, which may put it into its consumer. The lets that computed
//! the coordinates are dead then; the element's index is bound to zeros
//! (`let ix = (0, ..)`) for them, and the simplifier, which runs next,
//! removes them. A stencil fails for an array smaller than its pattern in
//! some dimension (`Error::StencilTooSmall`), where the generate does
//! not: such a pattern runs behind an `acond` on the array's extents,
//! with the generate as written for smaller arrays.
//!
//! Errors: the reads replaced cannot fail (a clamped or wrapped
//! coordinate lies in the array, `ix_k` lies in it because the
//! generate's shape is the array's), nor can the `mod` or `rem` by an
//! extent of a non-empty array; the stencil reads every point of its
//! pattern, also inside; everything else is evaluated as before.
//!
//! The pipeline runs it for the CPU backend, before the simplifier (the
//! interpreter, the reference, keeps the generate as written, so that
//! the tests comparing backends check the rewrite).

use crate::avars::{parts_mut, Part};
use crate::fusion::{prim, prj};
use accelerate_base::array::{ArraysTy, ScalarVal};
use accelerate_base::error::SrcLoc;
use accelerate_ir::verify::acc_ty;
use accelerate_ir::*;

/// The largest offset from the element a rewritten read may have in a
/// dimension (a pattern of at most 7 in each).
const MAX_RADIUS: i64 = 3;

/// How deep `Reads::abs` looks into an expression: `min(max(ix.k + d,
/// 0), shape(a).k - 1)` written out is five nodes deep, and a few more
/// literal offsets added one at a time are allowed for.
const ABS_DEPTH: usize = 12;

/// The most points a rewritten pattern may have (the stencil function
/// takes one parameter per point).
const MAX_POINTS: usize = 125;

/// Rewrites every generate of clamped reads of the program into a
/// stencil; the number rewritten.
pub fn rewrite_program(mut p: Program) -> (Program, usize) {
    let mut env = p.params.clone();
    let mut w = Walker { rewritten: 0 };
    w.walk(&mut p.body, &mut env);
    (p, w.rewritten)
}

struct Walker {
    rewritten: usize,
}

impl Walker {
    /// Rewrites inside `a`, whose free array variables have the types of
    /// `env` (innermost last), then `a` itself.
    fn walk(&mut self, a: &mut OpenAcc, env: &mut Vec<ArraysTy>) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            match &mut a.kind {
                AccKind::Let(b, body) => {
                    self.walk(b, env);
                    // (a term the verifier rejects is left to it)
                    let Ok(t) = acc_ty(b, env) else { return };
                    env.push(t);
                    self.walk(body, env);
                    env.pop();
                }
                AccKind::Awhile { pred, body, init } => {
                    self.walk(init, env);
                    for f in [pred, body] {
                        env.push(f.param.clone());
                        self.walk(&mut f.body, env);
                        env.pop();
                    }
                }
                AccKind::Foreign { fallback, arg, .. } => {
                    self.walk(arg, env);
                    if let Some(f) = fallback {
                        env.push(f.param.clone());
                        self.walk(&mut f.body, env);
                        env.pop();
                    }
                }
                _ => {
                    for part in parts_mut(a) {
                        if let Part::Acc(x, 0) = part {
                            self.walk(x, env);
                        }
                    }
                }
            }
            if let Some(new) = stencil_form(a, env) {
                *a = new;
                self.rewritten += 1;
            }
        })
    }
}

/// What a scalar value of a generate's body is, as far as the rewrite
/// needs to know (Note [Clamped reads as stencils]): `ix` is the
/// element's index; `s` names the array variable whose shape an extent
/// is.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Abs {
    /// `ix`
    Ix,
    /// `ix_k + d`
    Comp(usize, i64),
    /// `shape(s)`
    Shape(usize),
    /// `shape(s)_k`
    Extent(usize, usize),
    /// `shape(s)_k - 1`
    Last(usize, usize),
    /// `max(ix_k + d, 0)`
    Floor(usize, i64),
    /// `min(ix_k + d, shape(s)_k - 1)`
    Ceil(usize, usize, i64),
    /// `ix_k + d` clamped to `[0, shape(s)_k - 1]`
    Clamped(usize, usize, i64),
    /// `ix_k + d + shape(s)_k`
    Wide(usize, usize, i64),
    /// `ix_k + d` wrapped around: `(ix_k + d) mod shape(s)_k`
    Wrapped(usize, usize, i64),
    /// an `i64` literal
    Int(i64),
    Other,
}

/// The analysis of one generate's body: the rank, the arrays read at
/// points (at most two: a stencil's arguments), and every array whose
/// shape a point's coordinates are clamped or wrapped by.
struct Reads {
    rank: usize,
    arrays: Vec<Points>,
    shapes: Vec<usize>,
}

/// The points read of one array.
struct Points {
    array: usize,
    offsets: Vec<Vec<i64>>,
    /// How the points' coordinates meet the edges; `None` where some are
    /// clamped and some wrapped (no one boundary reads both).
    edge: Option<Edge>,
}

/// A point read: its offsets, how its coordinates meet the edges, and
/// the arrays whose shapes they are clamped or wrapped by.
struct Point {
    offsets: Vec<i64>,
    edge: Edge,
    shapes: Vec<usize>,
}

/// How a read's coordinates meet the array's edges.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Edge {
    /// Only offsets of 0 so far, which meet no edge.
    Any,
    Clamp,
    Wrap,
}

impl Edge {
    /// The edge of a point whose coordinates meet the edges as `self` and
    /// `other` do, where one boundary reads both.
    fn and(self, other: Edge) -> Option<Edge> {
        match (self, other) {
            (Edge::Any, e) | (e, Edge::Any) => Some(e),
            (a, b) => (a == b).then_some(a),
        }
    }
}

impl Reads {
    /// What `e` is, in an environment of scalar variables `env`
    /// (innermost last). Every form it knows is a few nodes deep, so it
    /// looks `ABS_DEPTH` nodes down at most: each call costs a constant,
    /// and the rewrite stays linear in the body's size.
    fn abs(&self, e: &OpenExp, env: &[Abs]) -> Abs {
        self.abs_within(e, env, ABS_DEPTH)
    }

    fn abs_within(&self, e: &OpenExp, env: &[Abs], depth: usize) -> Abs {
        use Abs::*;
        let Some(depth) = depth.checked_sub(1) else { return Other };
        let two = |args: &[OpenExp]| match args {
            [x, y] => Some((self.abs_within(x, env, depth), self.abs_within(y, env, depth))),
            _ => None,
        };
        let add = |d: i64, c: i64, f: &dyn Fn(i64) -> Abs| d.checked_add(c).map_or(Other, f);
        match &e.kind {
            ExpKind::Var(v) => env.len().checked_sub(v + 1).map_or(Other, |i| env[i]),
            ExpKind::Const(ScalarVal::I64(c)) => Int(*c),
            ExpKind::Shape { array } => Shape(*array),
            ExpKind::Prj(k, t) if *k < self.rank => match self.abs_within(t, env, depth) {
                Ix => Comp(*k, 0),
                Shape(s) => Extent(s, *k),
                _ => Other,
            },
            ExpKind::Prim(op, args) => match (op, two(args)) {
                (PrimFun::Add, Some((Comp(k, d), Int(c)) | (Int(c), Comp(k, d)))) => {
                    add(d, c, &|d| Comp(k, d))
                }
                (PrimFun::Sub, Some((Comp(k, d), Int(c)))) => add(d, c.wrapping_neg(), &|d| Comp(k, d)),
                (PrimFun::Sub, Some((Extent(s, k), Int(1)))) => Last(s, k),
                (PrimFun::Add, Some((Comp(k, d), Extent(s, l)) | (Extent(s, l), Comp(k, d)))) if k == l => {
                    Wide(s, k, d)
                }
                (PrimFun::Add, Some((Wide(s, k, d), Int(c)) | (Int(c), Wide(s, k, d)))) => {
                    add(d, c, &|d| Wide(s, k, d))
                }
                (PrimFun::Sub, Some((Wide(s, k, d), Int(c)))) => add(d, c.wrapping_neg(), &|d| Wide(s, k, d)),
                // `mod` wraps every offset; `rem` those it meets at or
                // above 0 (every `ix_k + d + extent` for an extent past the
                // offset, which the `acond` of `stencil_form` ensures)
                (PrimFun::Mod, Some((Comp(k, d), Extent(s, l)))) if k == l => Wrapped(s, k, d),
                (PrimFun::Mod | PrimFun::Rem, Some((Wide(t, k, d), Extent(s, l)))) if k == l && s == t => {
                    Wrapped(s, k, d)
                }
                (PrimFun::Rem, Some((Comp(k, d), Extent(s, l)))) if k == l && d >= 0 => Wrapped(s, k, d),
                (PrimFun::Max, Some((Comp(k, d), Int(0)) | (Int(0), Comp(k, d)))) => Floor(k, d),
                (PrimFun::Max, Some((Ceil(s, k, d), Int(0)) | (Int(0), Ceil(s, k, d)))) => Clamped(s, k, d),
                (PrimFun::Min, Some((Comp(k, d), Last(s, l)) | (Last(s, l), Comp(k, d)))) if k == l => {
                    Ceil(s, k, d)
                }
                (PrimFun::Min, Some((Floor(k, d), Last(s, l)) | (Last(s, l), Floor(k, d)))) if k == l => {
                    Clamped(s, k, d)
                }
                _ => Other,
            },
            _ => Other,
        }
    }

    /// The point `index` reads, where it is a point of a pattern: each
    /// component `ix_k`, or `ix_k + d` clamped or wrapped, the same way in
    /// every component (`Edge::Any` for `ix` itself).
    fn point(&self, index: &OpenExp, env: &mut Vec<Abs>) -> Option<Point> {
        if let ExpKind::Let(b, body) = &index.kind {
            // a let around the index's tuple (sharing recovery binds an
            // extent read by several components there)
            let a = self.abs(b, env);
            env.push(a);
            let p = stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.point(body, env));
            env.pop();
            return p;
        }
        if self.abs(index, env) == Abs::Ix {
            return Some(Point { offsets: vec![0; self.rank], edge: Edge::Any, shapes: Vec::new() });
        }
        let ExpKind::Tuple(cs) = &index.kind else { return None };
        if cs.len() != self.rank {
            return None;
        }
        let (mut edge, mut shapes) = (Edge::Any, Vec::new());
        let mut offset = |(k, c): (usize, &OpenExp)| {
            let (d, e, s) = match self.abs(c, env) {
                Abs::Comp(l, 0) if l == k => return Some(0),
                Abs::Clamped(s, l, d) if l == k => (d, Edge::Clamp, s),
                Abs::Wrapped(s, l, d) if l == k => (d, Edge::Wrap, s),
                _ => return None,
            };
            edge = edge.and(e)?;
            shapes.push(s);
            (d.abs() <= MAX_RADIUS).then_some(d)
        };
        let offsets: Option<Vec<i64>> = cs.iter().enumerate().map(&mut offset).collect();
        Some(Point { offsets: offsets?, edge, shapes })
    }

    /// The position in `arrays` of array `a`'s points.
    fn arg(&self, a: usize) -> Option<usize> {
        self.arrays.iter().position(|p| p.array == a)
    }

    /// Records the points `e` reads (in the environment `env`); changes
    /// nothing in `e`.
    fn collect(&mut self, e: &mut OpenExp, env: &mut Vec<Abs>) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            if let ExpKind::Index { array, index } = &e.kind {
                if let Some(p) = self.point(index, env) {
                    // (a third array's points keep the index live: a
                    // stencil has two arguments at most)
                    let at = self.arg(*array).or_else(|| {
                        (self.arrays.len() < 2).then(|| {
                            let new = Points { array: *array, offsets: Vec::new(), edge: Some(Edge::Any) };
                            self.arrays.push(new);
                            self.arrays.len() - 1
                        })
                    });
                    if let Some(at) = at {
                        let points = &mut self.arrays[at];
                        // (points of two kinds of edge keep the index
                        // live: a stencil argument has one boundary)
                        points.edge = points.edge.and_then(|edge| edge.and(p.edge));
                        if !points.offsets.contains(&p.offsets) {
                            points.offsets.push(p.offsets);
                        }
                        for s in p.shapes {
                            if !self.shapes.contains(&s) {
                                self.shapes.push(s);
                            }
                        }
                        return;
                    }
                }
            }
            self.each_scope(e, env, |s, c, env| s.collect(c, env))
        })
    }

    /// Replaces each point `e` reads by its parameter: `extents` are each
    /// argument's pattern, the parameters (every point of the first
    /// pattern, then of the second) bound outside `ix`, which is bound
    /// outside `e`'s environment `env`.
    fn replace(&mut self, e: &mut OpenExp, env: &mut Vec<Abs>, extents: &[Vec<usize>]) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            if let ExpKind::Index { array, index } = &e.kind {
                if let (Some(at), Some(p)) = (self.arg(*array), self.point(index, env)) {
                    let sizes: Vec<usize> = extents.iter().map(|e| e.iter().product()).collect();
                    let m: usize = sizes.iter().sum();
                    let param = sizes[..at].iter().sum::<usize>() + position(&p.offsets, &extents[at]);
                    // `ix` is variable `env.len() - 1`, the parameters
                    // beyond it, the last nearest
                    *e = OpenExp::new(ExpKind::Var(env.len() + m - 1 - param), e.loc);
                    return;
                }
            }
            self.each_scope(e, env, |s, c, env| s.replace(c, env, extents));
        })
    }

    /// Calls `f` on each direct subterm of `e` with its environment: the
    /// body of a `let` sees what its binding is, a loop's functions see an
    /// unknown.
    fn each_scope(
        &mut self,
        e: &mut OpenExp,
        env: &mut Vec<Abs>,
        mut f: impl FnMut(&mut Self, &mut OpenExp, &mut Vec<Abs>),
    ) {
        match &mut e.kind {
            ExpKind::Let(b, body) => {
                // what the binding is, before its reads are replaced
                let a = self.abs(b, env);
                f(self, b, env);
                env.push(a);
                f(self, body, env);
                env.pop();
            }
            ExpKind::While { cond, body, init } => {
                f(self, init, env);
                for g in [cond, body] {
                    env.push(Abs::Other);
                    f(self, &mut g.body, env);
                    env.pop();
                }
            }
            _ => crate::debruijn::for_each_child(e, |c| f(self, c, env)),
        }
    }
}

/// The row-major position of the point at offsets `p` in a pattern of
/// `extents` (the order of the stencil function's parameters).
fn position(p: &[i64], extents: &[usize]) -> usize {
    p.iter().zip(extents).fold(0, |acc, (&d, &e)| acc * e + (d + (e / 2) as i64) as usize)
}

/// The array variable `shape` is the shape of, where it is `shape(a)` or
/// the tuple of its `rank` components in order.
fn shape_array(shape: &OpenExp, rank: usize) -> Option<usize> {
    match &shape.kind {
        ExpKind::Shape { array } => Some(*array),
        ExpKind::Tuple(cs) if cs.len() == rank && rank > 0 => {
            let of = |(k, c): (usize, &OpenExp)| match &c.kind {
                ExpKind::Prj(i, t) if *i == k => match t.kind {
                    ExpKind::Shape { array } => Some(array),
                    _ => None,
                },
                _ => None,
            };
            let arrays: Option<Vec<usize>> = cs.iter().enumerate().map(of).collect();
            let arrays = arrays?;
            arrays.iter().all(|&a| a == arrays[0]).then(|| arrays[0])
        }
        _ => None,
    }
}

/// Whether variable `v` of `e`'s environment is read where it matters:
/// outside the bindings of lets whose variables nothing reads (which the
/// simplifier removes). Each term is visited once: a binding after its
/// body.
fn live(e: &OpenExp, v: usize) -> bool {
    let mut used = vec![false; v + 1];
    mark(e, &mut used);
    used[0]
}

/// Marks in `used` (the innermost variable last) the variables `e` reads
/// where it matters (`live`).
fn mark(e: &OpenExp, used: &mut Vec<bool>) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &e.kind {
        ExpKind::Var(v) => {
            if let Some(i) = used.len().checked_sub(v + 1) {
                used[i] = true;
            }
        }
        ExpKind::Let(b, body) => {
            used.push(false);
            mark(body, used);
            let read = used.pop().unwrap_or(true);
            if read {
                mark(b, used);
            }
        }
        ExpKind::While { cond, body, init } => {
            mark(init, used);
            for g in [cond, body] {
                used.push(true);
                mark(&g.body, used);
                used.pop();
            }
        }
        _ => visit::each_child(e, |c| mark(c, used)),
    })
}

/// The stencil form of `a` (Note [Clamped reads as stencils]), where `a`
/// is a generate of reads at clamped or wrapped points of one or two
/// arrays.
fn stencil_form(a: &OpenAcc, env: &[ArraysTy]) -> Option<OpenAcc> {
    let AccKind::Generate { shape, f } = &a.kind else { return None };
    let [ix_ty] = f.params.as_slice() else { return None };
    let rank = ix_ty.shape_rank().filter(|&r| r > 0)?;
    let array = shape_array(shape, rank)?;
    let ty = |v: usize| match env.get(env.len().checked_sub(v + 1)?)? {
        ArraysTy::Array(t) if t.rank == rank => Some(t.clone()),
        _ => None,
    };
    ty(array)?;
    let mut reads = Reads { rank, arrays: Vec::new(), shapes: Vec::new() };
    let mut body = f.body.clone();
    reads.collect(&mut body, &mut vec![Abs::Ix]);
    if reads.arrays.is_empty() {
        return None;
    }
    let mut args = Vec::new();
    let mut extents = Vec::new();
    let mut params = Vec::new();
    let loc = a.loc;
    for p in &reads.arrays {
        let boundary = match p.edge? {
            Edge::Wrap => Boundary::Wrap,
            Edge::Clamp | Edge::Any => Boundary::Clamp,
        };
        let e: Vec<usize> = (0..rank)
            .map(|k| 2 * p.offsets.iter().map(|o| o[k].unsigned_abs() as usize).max().unwrap_or(0) + 1)
            .collect();
        let elt = ty(p.array)?.elt;
        params.extend(std::iter::repeat_n(elt, e.iter().product()));
        let array = Box::new(OpenAcc::new(AccKind::Var(p.array), loc));
        args.push(StencilArg { extents: e.clone(), boundary, array });
        extents.push(e);
    }
    // a pattern of one point reads no neighbour: the generate gathers
    // nothing, and fusion may still put it into its consumer
    if params.len() > MAX_POINTS || extents.iter().flatten().all(|&e| e == 1) {
        return None;
    }
    reads.replace(&mut body, &mut vec![Abs::Ix], &extents);
    if live(&body, 0) {
        return None;
    }
    // every other array the points read or are bounded by has the
    // generate's shape where the stencil runs (`acond`)
    let mut others: Vec<usize> =
        reads.arrays.iter().map(|p| p.array).chain(reads.shapes.iter().copied()).collect();
    others.sort_unstable();
    others.dedup();
    others.retain(|&o| o != array);
    if others.iter().any(|&o| ty(o).is_none()) {
        return None;
    }
    // `let ix = (0, ..) in body'`: the index's lets are dead (`live`)
    let zeros = OpenExp::new(ExpKind::Tuple(vec![int(0, loc); rank]), loc);
    let body = OpenExp::new(ExpKind::Let(Box::new(zeros), Box::new(body)), loc);
    let stencil = OpenAcc::new(AccKind::Stencil { f: Fun { params, body }, args }, loc);
    let extent = |v: usize, k: usize| prj(k, OpenExp::new(ExpKind::Shape { array: v }, loc), loc);
    let mut guard: Vec<OpenExp> = Vec::new();
    for &o in &others {
        guard.extend((0..rank).map(|k| prim(PrimFun::Eq, vec![extent(o, k), extent(array, k)], loc)));
    }
    // arrays smaller than a pattern (which the stencil refuses)
    for e in &extents {
        for (k, &e) in e.iter().enumerate().filter(|&(_, &e)| e > 1) {
            guard.push(prim(PrimFun::Le, vec![int(e as i64, loc), extent(array, k)], loc));
        }
    }
    let Some(cond) = guard.into_iter().reduce(|x, y| prim(PrimFun::LAnd, vec![x, y], loc)) else {
        return Some(stencil);
    };
    let generate = OpenAcc::new(AccKind::Generate { shape: shape.clone(), f: f.clone() }, loc);
    Some(OpenAcc::new(AccKind::Acond { cond, then_: Box::new(stencil), else_: Box::new(generate) }, loc))
}

fn int(x: i64, loc: SrcLoc) -> OpenExp {
    OpenExp::new(ExpKind::Const(ScalarVal::I64(x)), loc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_are_row_major_from_the_corner() {
        assert_eq!(position(&[-1, -1], &[3, 3]), 0);
        assert_eq!(position(&[0, 0], &[3, 3]), 4);
        assert_eq!(position(&[1, -1], &[3, 3]), 6);
        assert_eq!(position(&[0, 2], &[1, 5]), 4);
        let offsets = accelerate_ir::term::pattern_offsets(&[3, 5]);
        for (i, p) in offsets.iter().enumerate() {
            assert_eq!(position(p, &[3, 5]), i);
        }
    }

    #[test]
    fn a_variable_read_only_by_dead_lets_is_not_live() {
        let loc = SrcLoc::caller();
        let var = |v| OpenExp::new(ExpKind::Var(v), loc);
        // let x = ix.0 in 5: ix (variable 0 outside) is dead
        let dead = OpenExp::new(ExpKind::Let(Box::new(prj(0, var(0), loc)), Box::new(int(5, loc))), loc);
        assert!(!live(&dead, 0));
        // let x = ix.0 in x: live
        let read = OpenExp::new(ExpKind::Let(Box::new(prj(0, var(0), loc)), Box::new(var(0))), loc);
        assert!(live(&read, 0));
        // let y = ix in let x = y.0 in 5: both dead
        let chain = OpenExp::new(
            ExpKind::Let(
                Box::new(var(0)),
                Box::new(OpenExp::new(
                    ExpKind::Let(Box::new(prj(0, var(0), loc)), Box::new(int(5, loc))),
                    loc,
                )),
            ),
            loc,
        );
        assert!(!live(&chain, 0));
    }
}

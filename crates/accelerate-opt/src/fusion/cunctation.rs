//! Delayed array representations during fusion (ICFP'13 §4.2, Accelerate's
//! `Cunctation`): a producer is `Done` (a manifest array in a variable),
//! `Yield` (a shape and a function from index to element) or `Step` (an
//! index transformation and an element function applied to a manifest
//! array, which keeps the information that `map` and `backpermute` of a
//! manifest array read it in a known pattern). Here are the producers'
//! combinators on these forms, the conversions back to manifest IR
//! (`compute`, as specific as the form allows) and to a consumer's
//! delayed argument, the substitution that inlines a producer into its
//! use, and the cost rule.
//!
//! Every term inside a cunctation names arrays in one convention, which
//! the combinators never look at: fusion's are de Bruijn *levels* (Note
//! [Array levels in fusion] in `fusion/mod.rs`), the scheduler's the IR's
//! indices. Scalar functions are closed in scalar variables (Note [Two
//! environments]), so applying one is binding its argument with a scalar
//! `let`. The combinators take their cunctations by value and move their
//! terms into the result: a chain of n producers builds its functions in
//! O(n), never copying what the chain built so far.

use crate::debruijn;
use accelerate_base::array::{ArraysTy, EltTy, ScalarTy, ScalarVal, SliceDim, SliceSpec};
use accelerate_base::error::SrcLoc;
use accelerate_ir::*;

#[derive(Clone, Debug)]
pub enum Cunctation {
    /// A manifest array: the array in variable `v`.
    Done(usize),
    /// `generate shape index`.
    /// `linear`, if known, gives the element at a row-major position
    /// more cheaply than `index` of `from_index` (a delayed `reshape`).
    Yield { shape: OpenExp, index: Fun, linear: Option<Fun> },
    /// `map f (backpermute shape ixmap var)`: `None` for an identity, and an
    /// identity `ixmap` means `shape` is the shape of `var`. `at` is the
    /// operation whose index map reads `var`, named by an out-of-bounds
    /// error.
    Step { shape: OpenExp, ixmap: Option<Fun>, f: Option<Fun>, var: usize, at: SrcLoc },
}

// ---------------------------------------------------------------------------
// Scalar term builders

fn exp(kind: ExpKind, loc: SrcLoc) -> OpenExp {
    OpenExp::new(kind, loc)
}

pub(crate) fn var(i: usize, loc: SrcLoc) -> OpenExp {
    exp(ExpKind::Var(i), loc)
}

pub(crate) fn prim(op: PrimFun, args: Vec<OpenExp>, loc: SrcLoc) -> OpenExp {
    exp(ExpKind::Prim(op, args), loc)
}

fn unit(loc: SrcLoc) -> OpenExp {
    exp(ExpKind::Tuple(vec![]), loc)
}

pub(crate) fn prj(i: usize, t: OpenExp, loc: SrcLoc) -> OpenExp {
    exp(ExpKind::Prj(i, Box::new(t)), loc)
}

/// `f arg`: the argument bound to the function's parameter.
fn apply1(f: Fun, arg: OpenExp) -> OpenExp {
    let loc = f.body.loc;
    exp(ExpKind::Let(Box::new(arg), Box::new(f.body)), loc)
}

/// `f a b` for a function of two parameters (the first bound outermost).
fn apply2(f: Fun, a: OpenExp, mut b: OpenExp) -> OpenExp {
    let loc = f.body.loc;
    debruijn::shift(&mut b, 0, 1);
    let inner = exp(ExpKind::Let(Box::new(b), Box::new(f.body)), loc);
    exp(ExpKind::Let(Box::new(a), Box::new(inner)), loc)
}

/// `f . g`: `f` applied to `g`'s body, `let x = g.body in f.body` (`f`'s
/// body mentions only its parameter, so it needs no shifting). When `g`
/// is a chain of lets, as a chain of n maps makes it, this nests it in a
/// bound term rather than walking it to its end: the simplifier floats
/// the lets back into one chain in one pass (`trafo::shrink`), where
/// walking to the end at each step costs O(n^2).
fn compose(f: Fun, g: Fun) -> Fun {
    Fun { params: g.params, body: apply1(f, g.body) }
}

/// `g` with its result checked to lie inside `shape` (a closed expression).
fn checked(shape: OpenExp, g: Fun, loc: SrcLoc) -> Fun {
    Fun { body: prim(PrimFun::BoundsCheck, vec![shape, g.body], loc), params: g.params }
}

// Note [Fused producers are arrays too]
// An array fusion never stores is still an array of the program, and its
// shape must be valid (docs/semantics.md, "Arrays"): a `generate` of
// shape [3, 2^62, 2] is `ShapeTooLarge` whether it is allocated or only
// read by a `backpermute` or a `zip_with` through its index function.
// Allocation checks a stored array's shape; a fused producer's shape is
// checked where fusion drops it from the result's shape:
//
// * `backpermute` (and `slice`, `replicate` over a backpermute) keeps the
//   producer's shape only in the `bounds_check` of its index function,
//   and `bounds_check` checks the shape it is given as well as the index.
//   Checking in the result's shape instead would copy the producer's
//   shape into it twice per level, exponential in a chain of `take`s.
// * `zip_with` intersects the two shapes: each is wrapped in
//   `shape_check` unless it is valid by construction (a manifest array's
//   shape, a checked shape, or an intersection of those), so that a chain
//   of n `zip_with`s adds at most n checks.
//
// A producer none of whose elements is read and whose shape is not
// needed (a `backpermute` to an empty shape) is not checked: no backend
// computes anything from it.

/// `shape` made valid: wrapped in `shape_check` unless it is valid by
/// construction (Note [Fused producers are arrays too]).
fn checked_shape(shape: OpenExp) -> OpenExp {
    let valid = |e: &OpenExp| {
        matches!(
            e.kind,
            ExpKind::Shape { .. } | ExpKind::Prim(PrimFun::ShapeCheck | PrimFun::ReshapeCheck, _)
        )
    };
    let ok = match &shape.kind {
        ExpKind::Prim(PrimFun::Intersect, args) => args.iter().all(valid),
        _ => valid(&shape),
    };
    if ok {
        shape
    } else {
        let loc = shape.loc;
        prim(PrimFun::ShapeCheck, vec![shape], loc)
    }
}

impl Cunctation {
    /// The shape, as a closed scalar expression.
    pub(crate) fn shape(&self, loc: SrcLoc) -> OpenExp {
        match self {
            Cunctation::Done(v) => exp(ExpKind::Shape { array: *v }, loc),
            Cunctation::Yield { shape, .. } | Cunctation::Step { shape, .. } => shape.clone(),
        }
    }

    /// The rank, given the types of the array environment by level
    /// (fusion's convention).
    pub(crate) fn rank(&self, aenv: &[ArraysTy]) -> usize {
        let of_var = |v: usize| match &aenv[v] {
            ArraysTy::Array(t) => t.rank,
            ArraysTy::Tuple(_) => 0,
        };
        match self {
            Cunctation::Done(v) | Cunctation::Step { ixmap: None, var: v, .. } => of_var(*v),
            Cunctation::Yield { index: g, .. } | Cunctation::Step { ixmap: Some(g), .. } => {
                g.params[0].shape_rank().unwrap_or(0)
            }
        }
    }

    /// The element at index `ix` (an expression of the scalar context the
    /// result is used in), not checked against this array's own shape.
    pub(crate) fn index_at(&self, ix: OpenExp, loc: SrcLoc) -> OpenExp {
        self.clone().into_index_at(ix, loc)
    }

    /// `index_at`, taking the functions out.
    pub(crate) fn into_index_at(self, ix: OpenExp, loc: SrcLoc) -> OpenExp {
        match self {
            Cunctation::Done(v) => exp(ExpKind::Index { array: v, index: Box::new(ix) }, loc),
            Cunctation::Yield { index, .. } => apply1(index, ix),
            Cunctation::Step { ixmap, f, var, at, .. } => {
                let from = match ixmap {
                    Some(p) => apply1(p, ix),
                    None => ix,
                };
                let x = exp(ExpKind::Index { array: var, index: Box::new(from) }, at);
                match f {
                    Some(f) => apply1(f, x),
                    None => x,
                }
            }
        }
    }

    /// The element at row-major position `i`, not checked.
    pub(crate) fn linear_at(&self, i: OpenExp, loc: SrcLoc) -> OpenExp {
        self.clone().into_linear_at(i, loc)
    }

    /// `linear_at`, taking the functions out.
    fn into_linear_at(self, i: OpenExp, loc: SrcLoc) -> OpenExp {
        match self {
            Cunctation::Done(v) => exp(ExpKind::LinearIndex { array: v, index: Box::new(i) }, loc),
            Cunctation::Yield { linear: Some(l), .. } => apply1(l, i),
            Cunctation::Step { ixmap: None, f, var, .. } => {
                let x = exp(ExpKind::LinearIndex { array: var, index: Box::new(i) }, loc);
                match f {
                    Some(f) => apply1(f, x),
                    None => x,
                }
            }
            other => {
                let ix = prim(PrimFun::FromIndex, vec![other.shape(loc), i], loc);
                other.into_index_at(ix, loc)
            }
        }
    }

    /// Is this a manifest array as it stands?
    pub(crate) fn is_done(&self) -> bool {
        matches!(self, Cunctation::Done(_) | Cunctation::Step { ixmap: None, f: None, .. })
    }

    // -----------------------------------------------------------------------
    // Producers (ICFP'13 §4.2: mapD, backpermuteD, zipWithD, ...)

    /// `map f` of this array.
    pub fn map(self, f: Fun) -> Cunctation {
        match self {
            Cunctation::Done(v) => {
                let loc = f.body.loc;
                Cunctation::Step {
                    shape: exp(ExpKind::Shape { array: v }, loc),
                    ixmap: None,
                    f: Some(f),
                    var: v,
                    at: loc,
                }
            }
            Cunctation::Step { shape, ixmap, f: g, var, at } => {
                let f = match g {
                    Some(g) => compose(f, g),
                    None => f,
                };
                Cunctation::Step { shape, ixmap, f: Some(f), var, at }
            }
            Cunctation::Yield { shape, index, linear } => {
                let linear = linear.map(|l| compose(f.clone(), l));
                Cunctation::Yield { shape, linear, index: compose(f, index) }
            }
        }
    }

    /// `backpermute shape p` of this array: `p` maps an index of the result
    /// to an index of this array, and is checked to stay inside it (a read
    /// of a manifest array checks itself).
    pub fn backpermute(self, shape: OpenExp, p: Fun, at: SrcLoc) -> Cunctation {
        match self {
            Cunctation::Done(var) => Cunctation::Step { shape, ixmap: Some(p), f: None, var, at },
            Cunctation::Step { ixmap: None, f, var, .. } => {
                Cunctation::Step { shape, ixmap: Some(p), f, var, at }
            }
            Cunctation::Step { shape: inner, ixmap: Some(q), f, var, at: inner_at } => Cunctation::Step {
                shape,
                ixmap: Some(compose(q, checked(inner, p, at))),
                f,
                var,
                at: inner_at,
            },
            Cunctation::Yield { shape: inner, index, .. } => {
                Cunctation::Yield { shape, index: compose(index, checked(inner, p, at)), linear: None }
            }
        }
    }

    /// `zip_with f a b` (over the intersection of the shapes). When both
    /// read one manifest array at the same index, the result is a `map` of
    /// it, so that it keeps linear indexing.
    pub fn zip_with(f: Fun, a: Cunctation, b: Cunctation, rank: usize, loc: SrcLoc) -> Cunctation {
        let elementwise = |c: &Cunctation| match c {
            Cunctation::Done(v) | Cunctation::Step { ixmap: None, var: v, .. } => Some(*v),
            _ => None,
        };
        if let (Some(u), Some(v)) = (elementwise(&a), elementwise(&b)) {
            if u == v {
                let element_fn = |c: Cunctation| match c {
                    Cunctation::Step { f, .. } => f,
                    _ => None,
                };
                let (fa, fb) = (element_fn(a), element_fn(b));
                let elt = match &fa {
                    Some(g) => g.params[0].clone(),
                    None => f.params[0].clone(),
                };
                let at = |g: Option<Fun>| match g {
                    Some(g) => apply1(g, var(0, loc)),
                    None => var(0, loc),
                };
                let body = apply2(f, at(fa), at(fb));
                return Cunctation::Step {
                    shape: exp(ExpKind::Shape { array: u }, loc),
                    ixmap: None,
                    f: Some(Fun { params: vec![elt], body }),
                    var: u,
                    at: loc,
                };
            }
        }
        let (sa, ia) = a.into_shape_and_element(var(0, loc), loc);
        let (sb, ib) = b.into_shape_and_element(var(0, loc), loc);
        let shape = prim(PrimFun::Intersect, vec![checked_shape(sa), checked_shape(sb)], loc);
        let body = apply2(f, ia, ib);
        Cunctation::Yield { shape, index: Fun { params: vec![EltTy::shape(rank)], body }, linear: None }
    }

    /// The shape and the element at `ix`, taken out.
    fn into_shape_and_element(self, ix: OpenExp, loc: SrcLoc) -> (OpenExp, OpenExp) {
        match self {
            Cunctation::Done(v) => (
                exp(ExpKind::Shape { array: v }, loc),
                exp(ExpKind::Index { array: v, index: Box::new(ix) }, loc),
            ),
            // (`into_index_at` reads no shape: an empty tuple stands in)
            Cunctation::Yield { shape, index, linear } => {
                let element = Cunctation::Yield { shape: unit(loc), index, linear };
                (shape, element.into_index_at(ix, loc))
            }
            Cunctation::Step { shape, ixmap, f, var, at } => {
                let element = Cunctation::Step { shape: unit(loc), ixmap, f, var, at };
                (shape, element.into_index_at(ix, loc))
            }
        }
    }

    /// `reshape to` of this (delayed) array, of `rank` dimensions: read
    /// in row-major order, its elements are this array's (its linear
    /// function is this one's), and the sizes must agree.
    pub(crate) fn reshape(self, to: OpenExp, rank: usize, src_rank: usize, loc: SrcLoc) -> Cunctation {
        let shape = prim(PrimFun::ReshapeCheck, vec![self.shape(loc), to.clone()], loc);
        let pos = prim(PrimFun::ToIndex, vec![to, var(0, loc)], loc);
        let index = Fun { params: vec![EltTy::shape(rank)], body: self.linear_at(pos, loc) };
        let linear = self.into_linear_fun(src_rank, loc);
        Cunctation::Yield { shape, index, linear: Some(linear) }
    }

    /// `replicate spec slix` of this array.
    pub fn replicate(self, spec: &SliceSpec, slix: &OpenExp, loc: SrcLoc) -> Cunctation {
        let src = self.shape(loc);
        let (mut full, mut keep) = (Vec::new(), Vec::new());
        let (mut s, mut fixed) = (0, 0);
        let dims = std::iter::repeat_n(&SliceDim::All, spec.any_rank).chain(&spec.dims);
        for (k, d) in dims.enumerate() {
            match d {
                SliceDim::All => {
                    full.push(prj(s, src.clone(), loc));
                    keep.push(prj(k, var(0, loc), loc));
                    s += 1;
                }
                SliceDim::Fixed => {
                    full.push(prj(fixed, slix.clone(), loc));
                    fixed += 1;
                }
            }
        }
        let p = Fun { params: vec![EltTy::shape(spec.full_rank())], body: exp(ExpKind::Tuple(keep), loc) };
        let shape = exp(ExpKind::Tuple(full), loc);
        // the kept dimensions are within the source by construction
        match self {
            Cunctation::Yield { index, .. } => {
                Cunctation::Yield { shape, index: compose(index, p), linear: None }
            }
            Cunctation::Step { ixmap: Some(q), f, var, at, .. } => {
                Cunctation::Step { shape, ixmap: Some(compose(q, p)), f, var, at }
            }
            other => other.backpermute(shape, p, loc),
        }
    }

    /// `slice spec slix` of this array.
    pub fn slice(self, spec: &SliceSpec, slix: &OpenExp, loc: SrcLoc) -> Cunctation {
        let src = self.shape(loc);
        let (mut shape, mut from) = (Vec::new(), Vec::new());
        let (mut out, mut fixed) = (0, 0);
        let dims = std::iter::repeat_n(&SliceDim::All, spec.any_rank).chain(&spec.dims);
        for (k, d) in dims.enumerate() {
            match d {
                SliceDim::All => {
                    shape.push(prj(k, src.clone(), loc));
                    from.push(prj(out, var(0, loc), loc));
                    out += 1;
                }
                SliceDim::Fixed => {
                    from.push(prj(fixed, slix.clone(), loc));
                    fixed += 1;
                }
            }
        }
        let p = Fun { params: vec![EltTy::shape(spec.slice_rank())], body: exp(ExpKind::Tuple(from), loc) };
        self.backpermute(exp(ExpKind::Tuple(shape), loc), p, loc)
    }

    // -----------------------------------------------------------------------
    // Back to the IR

    /// The most specific manifest term computing this array (Accelerate's
    /// `compute`): a variable, `map`, `backpermute` or `generate`, naming
    /// arrays in the cunctation's convention.
    pub fn compute(self, loc: SrcLoc) -> OpenAcc {
        let acc = |kind| OpenAcc::new(kind, loc);
        let avar = |v| Box::new(OpenAcc::new(AccKind::Var(v), loc));
        match self {
            Cunctation::Done(v) | Cunctation::Step { ixmap: None, f: None, var: v, .. } => {
                acc(AccKind::Var(v))
            }
            Cunctation::Step { ixmap: None, f: Some(f), var, .. } => {
                acc(AccKind::Map { f, array: avar(var) })
            }
            Cunctation::Step { shape, ixmap: Some(p), f: None, var, at } => {
                OpenAcc::new(AccKind::Backpermute { shape, f: p, array: avar(var) }, at)
            }
            Cunctation::Step { shape, ixmap: Some(p), f: Some(f), var: v, at } => {
                let params = p.params.clone();
                let element = Cunctation::Step { shape: unit(loc), ixmap: Some(p), f: Some(f), var: v, at };
                let body = element.into_index_at(var(0, loc), loc);
                acc(AccKind::Generate { shape, f: Fun { params, body } })
            }
            Cunctation::Yield { shape, index, .. } => acc(AccKind::Generate { shape, f: index }),
        }
    }

    /// The argument of a consumer: the variable of a manifest array, or a
    /// delayed array (Note [Delayed arrays]) of the given rank.
    pub fn into_arg(self, rank: usize, loc: SrcLoc) -> OpenAcc {
        if self.is_done() {
            return self.compute(loc);
        }
        OpenAcc::new(AccKind::Delayed(self.into_delayed(rank, loc)), loc)
    }

    /// The delayed array of its elements, for an array of `rank`
    /// dimensions (of a manifest array too: reads of it).
    pub(crate) fn into_delayed(self, rank: usize, loc: SrcLoc) -> DelayedArray {
        let shape = self.shape(loc);
        let index = Fun { params: vec![EltTy::shape(rank)], body: self.index_at(var(0, loc), loc) };
        let linear = self.into_linear_fun(rank, loc);
        DelayedArray { shape, index, linear }
    }

    /// The function from a row-major position to the element, for an
    /// array of `rank` dimensions.
    fn into_linear_fun(self, rank: usize, loc: SrcLoc) -> Fun {
        // of a vector, the index at position i is (i,): no from_index
        let body = match (rank, &self) {
            (1, Cunctation::Yield { linear: None, .. } | Cunctation::Step { ixmap: Some(_), .. }) => {
                self.into_index_at(exp(ExpKind::Tuple(vec![var(0, loc)]), loc), loc)
            }
            _ => self.into_linear_at(var(0, loc), loc),
        };
        Fun { params: vec![EltTy::Scalar(ScalarTy::I64)], body }
    }

    /// A manifest term as a cunctation, if it is one that `compute` makes,
    /// as fusing it again would make it (so that fusing it again reads its
    /// argument rather than the array it computes).
    pub(crate) fn of_manifest(m: OpenAcc) -> std::result::Result<Cunctation, Box<OpenAcc>> {
        let loc = m.loc;
        let on_var = |a: &OpenAcc| matches!(a.kind, AccKind::Var(_));
        match &m.kind {
            AccKind::Var(v) => return Ok(Cunctation::Done(*v)),
            AccKind::Map { array, .. } | AccKind::Backpermute { array, .. } if on_var(array) => {}
            AccKind::Generate { .. } => {}
            _ => return Err(Box::new(m)),
        }
        let var_of = |a: Box<OpenAcc>| match a.kind {
            AccKind::Var(v) => v,
            _ => unreachable!("checked above"),
        };
        Ok(match m.kind_owned() {
            AccKind::Map { f, array } => Cunctation::Done(var_of(array)).map(f),
            AccKind::Backpermute { shape, f, array } => {
                Cunctation::Done(var_of(array)).backpermute(shape, f, loc)
            }
            AccKind::Generate { shape, f } => Cunctation::Yield { shape, index: f, linear: None },
            _ => unreachable!("matched above"),
        })
    }

    // -----------------------------------------------------------------------
    // The cost rule

    /// Is recomputing an element as cheap as reading it from memory?
    /// (Note [The cost rule])
    /// Whether an element's computation is dear (Note [Replicated work]):
    /// a manifest array, or an index map over one, is not.
    pub(crate) fn is_dear(&self) -> bool {
        match self {
            Cunctation::Done(_) => false,
            Cunctation::Step { ixmap, f, .. } => {
                ixmap.as_ref().is_some_and(|p| dear(&p.body)) || f.as_ref().is_some_and(|f| dear(&f.body))
            }
            Cunctation::Yield { index, .. } => dear(&index.body),
        }
    }

    pub(crate) fn is_cheap(&self) -> bool {
        match self {
            Cunctation::Done(_) => true,
            Cunctation::Step { ixmap, f: None, .. } => ixmap.as_ref().is_none_or(|p| cheap(&p.body, 0)),
            Cunctation::Step { f: Some(_), .. } => false,
            Cunctation::Yield { index, .. } => cheap_gather(&index.body, returned(&index.body).max(1)),
        }
    }
}

/// Whether computing an element is worth far more than storing it and
/// loading it back: a loop, or a transcendental function (Note
/// [Replicated work]).
fn dear(e: &OpenExp) -> bool {
    accelerate_ir::visit::any_node(e, |x| match &x.kind {
        ExpKind::While { .. } | ExpKind::ALet(..) => true,
        ExpKind::Prim(op, _) => op.is_transcendental(),
        _ => false,
    })
}

// Note [Replicated work]
// `replicate` reads each element of its argument once for every position
// of the dimensions it adds, so a producer fused into it is computed that
// many times over: the use counts of Note [Counting uses] see one use of
// the argument, and the rule of Note [The cost rule] was not applied
// (Accelerate has the same hole, its issue #116, "Fusion causes work
// duplication"). A user's logistic regression reads `sigmoid(X w) - y`
// replicated along the 256 columns of `X` for the gradient `X^T r`:
// fused, every `exp` was computed 256 times, and the program took 1.13x
// the time of a rayon loop over the rows (docs/benchmarks.md). So a
// producer whose element is dear (`Cunctation::is_dear`: a loop or a
// transcendental function) is computed once, manifest, before it is
// replicated: an array of the argument's size, written once and read
// where the fused producer read its own inputs. A producer between cheap
// and dear (float arithmetic, a division: rowsolve's `(l + h) / 2`, whose
// replication along a row the fold's row loop reads as one value) is
// still fused, as Accelerate fuses it: recomputing it costs about what
// storing and loading it costs, and making it manifest would add a
// launch where it sits in a loop. `backpermute` is left fused whatever
// its producer: its index function may read every element once (a
// transpose, a reversal), and fusion cannot tell.

// Note [The cost rule]
// Fusion never repeats a producer's work unless recomputing an element
// costs no more than storing it and loading it back: index arithmetic
// only (ICFP'13 §4.4, "cheap" producers; Accelerate inlines any producer
// used once and these whatever their uses). A producer is cheap when it
// moves data without computing on it (`backpermute`, `replicate`, `slice`
// of a manifest array, their index maps cheap) or generates each element
// from its index with at most one array read per scalar it returns
// (reads of rank-0 arrays, one value for the whole operation, not
// counted) and at most `CHEAP_NODES` nodes a scalar of integer,
// comparison and shape arithmetic: no division, no loop, no
// floating-point function. Such a producer is inlined into every use,
// including scalar reads and `awhile` bodies, and into stencils (which
// read each element several times); any other producer is inlined only
// into a single use that runs once. A read per scalar returned admits
// the zips of arrays, and the arrays of records a text program builds
// from the arrays its entry point takes (n-body's seven): stored, each
// would be a kernel copying its arrays, where a use reads the same
// elements from the arrays themselves (one load a scalar either way).

/// How many scalars `e` returns, as far as its tuples show.
fn returned(e: &OpenExp) -> usize {
    match &e.kind {
        ExpKind::Tuple(parts) => parts.iter().map(returned).sum(),
        ExpKind::Let(_, body) => returned(body),
        _ => 1,
    }
}

/// The largest expression (in nodes) the cost rule calls cheap.
const CHEAP_NODES: usize = 24;

/// Is `e` index arithmetic with at most `reads` array reads?
pub(crate) fn cheap(e: &OpenExp, reads: usize) -> bool {
    let mut budget = CHEAP_NODES;
    let mut reads = reads;
    cheap_in(e, &mut budget, &mut reads)
}

/// Is `e`, which returns `leaves` scalars, index arithmetic with at most
/// one array read per scalar it returns, in `CHEAP_NODES` nodes a scalar?
/// (Note [The cost rule]: a zip of arrays, or the tuples of records built
/// from them.)
fn cheap_gather(e: &OpenExp, leaves: usize) -> bool {
    let mut budget = CHEAP_NODES.saturating_mul(leaves);
    let mut reads = leaves;
    cheap_in(e, &mut budget, &mut reads)
}

fn cheap_in(e: &OpenExp, budget: &mut usize, reads: &mut usize) -> bool {
    if *budget == 0 {
        return false;
    }
    *budget -= 1;
    let here = match &e.kind {
        ExpKind::Var(_) | ExpKind::Shape { .. } | ExpKind::Tuple(_) | ExpKind::Prj(..) | ExpKind::Let(..) => {
            true
        }
        ExpKind::Cond(..) => true,
        ExpKind::ALet(..) => false,
        ExpKind::Const(c) => !matches!(c, ScalarVal::F16(_) | ScalarVal::F32(_) | ScalarVal::F64(_)),
        // the element of a rank-0 array (a `Scalar`'s `the`, a chunk's
        // length) is one value for the whole operation: free
        ExpKind::Index { index, .. } if matches!(&index.kind, ExpKind::Tuple(c) if c.is_empty()) => true,
        ExpKind::Index { .. } | ExpKind::LinearIndex { .. } => {
            if *reads == 0 {
                return false;
            }
            *reads -= 1;
            true
        }
        ExpKind::Prim(op, _) => {
            use PrimFun::*;
            op.is_comparison()
                || op.is_logical()
                || matches!(
                    op,
                    Add | Sub
                        | Mul
                        | Min
                        | Max
                        | Neg
                        | ToIndex
                        | FromIndex
                        | Intersect
                        | ShapeSize
                        | BoundsCheck
                )
        }
        ExpKind::While { .. } => false,
    };
    let mut ok = here;
    if ok {
        accelerate_ir::visit::each_child(e, |c| ok = ok && cheap_in(c, budget, reads));
    }
    ok
}

//! The lifting transformation: regularity-identifying flattening of nested
//! data parallelism (sequences thesis ch.4, §5.2).
//!
//! Sharing recovery leaves an array computed inside a scalar function as an
//! `ExpKind::ALet` in the function's body (Note [Nested array terms] in
//! `ir::term`). This pass removes every one: each element-wise operation
//! whose function computes arrays (a *parallel context*: `generate`, `map`,
//! `zip_with`) becomes flat array operations over the context's shape, and
//! every array term inside it is *lifted* to one more set of outer
//! dimensions, those of the context (the thesis' `L[.]`).
//!
//! Note [Lifted forms]
//! A context is a list of *dimensions* (`Dim`): those of the outermost
//! operation's shape, then those of each nested `generate`, `map` or
//! `zip_with` inside it. Every value inside a context has one of the
//! thesis' lifted types:
//!
//! * avoided: an array that depends on no dimension (`ABind::Avoided`):
//!   kept as it is, an array of the enclosing program (the thesis'
//!   `Avoid_A`);
//! * regular: an array of one value per index of the dimensions `dims` it
//!   depends on, and, for a lifted array, the array's own dimensions after
//!   them (`ABind::Lifted`, `SBind::Read`): the thesis' `Regular`, an
//!   array of shape `sh_L ++ sh`. `dims` is the subset of the context the
//!   value depends on, not the whole context: a row of a matrix sliced at
//!   `i` inside `generate((n, m), |(i, j)| ..)` is lifted over `i` alone
//!   (n rows, not n*m copies). This is the thesis' avoidance applied per
//!   dimension.
//!
//! Scalar code is never lifted operation by operation (the thesis'
//! `zipWith (+)` of lifted operands): a scalar expression that computes no
//! array is translated whole into the function of one `generate` over the
//! dimensions it depends on, reading the lifted values it uses at the
//! generate's index (`Lifter::materialise`). Fusion then treats these
//! generates as any others, so a chain of lifted element-wise steps is one
//! loop. Where every extent inside a context is independent of the context
//! (regular nesting), no segment descriptor is ever built.
//!
//! Note [Lifted conditionals]
//! `if c then t else f` whose branches compute arrays must not compute a
//! branch's arrays for the elements that do not take it (an element that
//! takes `else` may index past the end of the array `then` reads):
//! Blelloch's flattening packs them. The condition is lifted over the
//! dimensions the conditional depends on; a scan of its flags numbers the
//! elements taking `then` (and, by difference, `else`); a permute writes
//! each element's position to its number (`sel`); each branch is lifted in
//! a context of one new dimension, of as many elements as take it, where
//! every value of the enclosing context it can see is first read at those
//! elements (`Lifter::enter_branch`: cheap gathers that fusion folds into
//! their readers); the result reads each element's value from its branch.
//! So errors are those of the branches taken, exactly.
//!
//! A nested `acond` is lifted the same way, its branches' arrays packed;
//! its result is irregular (the branches' shapes may differ), its shape
//! and elements at a context index those of the branch the index took.
//!
//! Note [Lifted loops]
//! A scalar `while` whose functions compute arrays (a per-row iterative
//! solver) runs a different number of steps for each element, and an
//! element that has stopped must not step again (its next step may read
//! past the end of an array, and is not computed by the program). It
//! becomes an `awhile` whose state is, over the dimensions the loop
//! depends on, each element's state and whether it is still running (its
//! first test computed for every element before the loop). Each step
//! packs the running elements as a conditional's branch does, steps them
//! and tests their new states, over the packed dimension only, and writes
//! the results back to their positions; the others keep theirs. The loop
//! goes on while one runs. While every element runs (most steps of most
//! loops: the elements of a solver stop near the end), a step counts them
//! and, finding all, steps every element in place, with no scan, permute
//! or gather: the step's body is lifted twice, once for each case, and an
//! `acond` on the count picks one (the per-row solver of
//! `accelerate_programs::rowsolve` ran 1.39 times as long as its flat
//! form with the packing at every step, 1.02 times without:
//! `docs/benchmarks.md`). Loops nested in
//! that body are lifted twice too, down to `MAX_TWICE` levels (below, a
//! loop packs at every step), so that the program grows by a bounded
//! factor. The loop's body is an array function: what the
//! step lets is bound inside it (`Lifter::scope`), and the dimensions made
//! there do not outlive it. A nested `awhile` is lifted the same way, its
//! state an array per element, when its body keeps the state's shape
//! (`keeps_shape`, a check on the term: a map, a zip, a generate to the
//! state's shape...), so that the states of all the elements are one
//! regular array.
//!
//! Note [Irregular arrays]
//! An array whose extent depends on the context (a window of a signal
//! whose length is the window's, a row of a sparse matrix) has a
//! different shape at each context index. It is held as its shapes (an
//! array over the dimensions its extent and elements depend on) and an
//! element function of the context index and the index inside it
//! (`ABind::Irregular`), composed into whatever reads it, so that an
//! irregular intermediate read once (a row's products, summed) is never
//! written: the thesis builds a segment descriptor and a flat array for
//! every irregular value; here they are built only where an operation
//! needs the rows in memory (`fold1` as a segmented fold,
//! `materialise_irregular`: the offsets a scan of the sizes, each element
//! finding its row by a binary search of the offsets).
//!
//! Composing repeats the element's work at every read. Sharing recovery
//! let-binds only arrays used more than once, so a let-bound irregular
//! array whose element is not index arithmetic (fusion's cost rule, Note
//! [The cost rule], with any number of reads) is materialised once, and
//! read from memory at its row's offset (`manifest_irregular`): as
//! fusion keeps a shared, costly producer manifest in a flat program. The
//! audio processor's Hann-windowed samples, read by each of 128 bins'
//! sums, are computed once per sample rather than 128 times.
//!
//! What is not lifted yet reports `Error::NestedParallelism`, naming the
//! construct: functions of folds, scans and permutations that depend on
//! the context, scans, slices and permutes of irregular arrays, irregular
//! arrays read in a conditional's branch or an `acond`'s, stencils, a
//! nested `awhile` whose body may change its state's shape or whose state
//! is a tuple, tuples of arrays computed inside the context (an array of a
//! tuple bound outside it is read as any array from outside is).
//!
//! The output program is built level by level, never by shifting a term
//! already built: the lifted arrays are let-bound one after another in
//! front of the operation they replace, and every variable is written from
//! the level it stands for at the depth where it is placed.

use crate::avars::{exp_arrays_mut, parts_mut, Part};
use accelerate_base::array::{ArraysTy, EltTy, ScalarTy, ScalarVal, SliceDim, SliceSpec};
use accelerate_base::error::{Error, Result, SrcLoc};
use accelerate_ir::verify::acc_ty;
use accelerate_ir::visit::{each_child, each_exp};
use accelerate_ir::*;
use std::cell::RefCell;
use std::collections::HashMap;

mod chunk;
pub use chunk::lift_chunk;

/// Lifts every array term nested in scalar code; a program without any is
/// returned as it is.
pub fn lift_program(mut p: Program) -> Result<Program> {
    if visit::first_nested(&p.body).is_none() {
        return Ok(p);
    }
    let mut env = p.params.clone();
    flatten(&mut p.body, &mut env)?;
    Ok(p)
}

fn has_nested(e: &OpenExp) -> bool {
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if matches!(x.kind, ExpKind::ALet(..)) {
            return true;
        }
        each_child(x, |c| stack.push(c));
    }
    false
}

fn op_has_nested(a: &OpenAcc) -> bool {
    let mut found = false;
    each_exp(a, |e| found |= has_nested(e));
    found
}

fn unsupported(loc: SrcLoc, what: impl Into<String>) -> Error {
    Error::NestedParallelism { loc, what: what.into() }
}

/// Rewrites the parallel contexts of the array term `a`, whose array
/// environment has the types `env`; returns its type, found from its
/// parts' (one traversal: `verify::acc_ty` on each operation's argument
/// would traverse a chain of contexts once per context).
fn flatten(a: &mut OpenAcc, env: &mut Vec<ArraysTy>) -> Result<ArraysTy> {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || flatten_inner(a, env))
}

fn flatten_inner(a: &mut OpenAcc, env: &mut Vec<ArraysTy>) -> Result<ArraysTy> {
    let loc = a.loc;
    match &mut a.kind {
        AccKind::Let(b, body) => {
            let t = flatten(b, env)?;
            env.push(t);
            let r = flatten(body, env);
            env.pop();
            return r;
        }
        AccKind::Awhile { pred, body, init } => {
            let t = flatten(init, env)?;
            for f in [pred, body] {
                env.push(f.param.clone());
                let r = flatten(&mut f.body, env);
                env.pop();
                r?;
            }
            return Ok(t);
        }
        AccKind::Foreign { func, fallback, arg } => {
            let t = flatten(arg, env)?;
            if let Some(fallback) = fallback {
                env.push(t);
                let r = flatten(&mut fallback.body, env);
                env.pop();
                r?;
            }
            return Ok(func.result.clone());
        }
        _ => {}
    }
    let mut args = Vec::new();
    for part in parts_mut(a) {
        if let Part::Acc(c, 0) = part {
            args.push(flatten(c, env)?);
        }
    }
    if op_has_nested(a) {
        let kind = std::mem::replace(&mut a.kind, AccKind::Var(0));
        let (lifted, t) = Lifter::new(env).context(kind, &args, loc)?;
        *a = lifted;
        return Ok(t);
    }
    shallow_ty(a, &args, env).map_err(Error::Internal)
}

/// The type of an operation whose array arguments have the types `args`
/// (in the order of `parts_mut`), without typing them again.
fn shallow_ty(a: &OpenAcc, args: &[ArraysTy], env: &[ArraysTy]) -> std::result::Result<ArraysTy, String> {
    use accelerate_base::array::ArrayTy;
    let arg = |i: usize| -> std::result::Result<ArrayTy, String> {
        args.get(i)
            .and_then(|t| t.array().cloned())
            .ok_or_else(|| format!("lifting: {} without its argument", a.op_name()))
    };
    let arr = |rank: usize, elt: EltTy| Ok(ArraysTy::Array(ArrayTy { rank, elt }));
    let fun = |f: &Fun, params: &[EltTy]| verify::fun_ty(f, params, env);
    let exp = |x: &OpenExp| verify::exp_ty(x, &mut Vec::new(), env);
    match &a.kind {
        AccKind::Var(i) => {
            env.len().checked_sub(i + 1).map(|l| env[l].clone()).ok_or_else(|| "lifting: unbound".into())
        }
        AccKind::Tuple(_) => Ok(ArraysTy::Tuple(args.to_vec())),
        AccKind::Prj(i, _) => match args.first() {
            Some(ArraysTy::Tuple(ts)) if *i < ts.len() => Ok(ts[*i].clone()),
            _ => Err("lifting: a projection of no tuple".into()),
        },
        AccKind::Unzip(_) => arg(0)?.unzipped().ok_or_else(|| "lifting: an unzip of no tuples".into()),
        AccKind::Use(d) => Ok(ArraysTy::Array(d.ty())),
        AccKind::Unit(x) => arr(0, exp(x)?),
        AccKind::Reshape { shape, .. } => arr(exp(shape)?.shape_rank().unwrap_or(0), arg(0)?.elt),
        AccKind::Generate { shape, f } => {
            let rank = exp(shape)?.shape_rank().unwrap_or(0);
            arr(rank, fun(f, &[EltTy::shape(rank)])?)
        }
        AccKind::Map { f, .. } => {
            let t = arg(0)?;
            arr(t.rank, fun(f, &[t.elt])?)
        }
        AccKind::ZipWith { f, .. } => {
            let (x, y) = (arg(0)?, arg(1)?);
            arr(x.rank, fun(f, &[x.elt, y.elt])?)
        }
        AccKind::Backpermute { f, .. } => arr(f.params[0].shape_rank().unwrap_or(0), arg(0)?.elt),
        AccKind::Replicate { spec, .. } => arr(spec.full_rank(), arg(0)?.elt),
        AccKind::Slice { spec, .. } => arr(spec.slice_rank(), arg(0)?.elt),
        AccKind::Fold { .. } => {
            let t = arg(0)?;
            arr(t.rank.saturating_sub(1), t.elt)
        }
        AccKind::FoldKeep { .. } => {
            let t = arg(0)?;
            match &t.elt {
                EltTy::Tuple(kx) if kx.len() == 2 => Ok(ArraysTy::Tuple(vec![
                    ArraysTy::Array(ArrayTy { rank: t.rank, elt: kx[0].clone() }),
                    ArraysTy::Array(ArrayTy { rank: t.rank.saturating_sub(1), elt: kx[1].clone() }),
                ])),
                _ => Err("lifting: a fold_keep of no pairs".into()),
            }
        }
        AccKind::Scan { .. } | AccKind::FoldSeg { .. } => Ok(ArraysTy::Array(arg(0)?)),
        AccKind::Permute { .. } => Ok(ArraysTy::Array(arg(0)?)),
        AccKind::Stencil { f, args: sargs } => {
            let t = arg(0)?;
            let mut params = Vec::new();
            for (k, s) in sargs.iter().enumerate() {
                let elt = arg(k)?.elt;
                params.extend(std::iter::repeat_n(elt, s.extents.iter().product()));
            }
            arr(t.rank, fun(f, &params)?)
        }
        AccKind::Acond { .. } => {
            args.first().cloned().ok_or_else(|| "lifting: acond without branches".into())
        }
        AccKind::Let(..) | AccKind::Awhile { .. } | AccKind::Foreign { .. } | AccKind::Delayed(_) => {
            acc_ty(a, &mut env.to_vec())
        }
    }
}

// ---------------------------------------------------------------------------
// Lifted values

/// A dimension of a context: its extent, an `i64` expression of the
/// output's array variables as they were at `depth`.
struct Dim {
    /// `None` for a dimension of an irregular array, whose extent differs
    /// from one context index to the next.
    extent: Option<OpenExp>,
    depth: usize,
    /// The dimensions made together from one shape, if this is one of them.
    group: Option<usize>,
}

/// Dimensions made together from one shape expression (`whole`, written
/// at `depth`): a frame of exactly these is that shape, written as it is
/// (a tuple of its extents would grow by one projection at each step of
/// a chain of contexts that each take their shape from the last).
struct Group {
    whole: OpenExp,
    depth: usize,
    members: Vec<usize>,
}

/// What a variable of the source's scalar environment stands for.
#[derive(Clone, Debug)]
enum SBind {
    /// A variable of the output function being written, by level.
    Out(usize),
    /// The index of these context dimensions (a `generate`'s parameter).
    Index(Vec<usize>),
    /// The element of output array `arr` (by level) at the index of the
    /// dimensions `at` (Note [Lifted forms]).
    Read { arr: usize, at: Vec<usize> },
    /// The element of a bound array at the index of the dimensions `at`
    /// (after the array's own outside dimensions): a `map`'s or
    /// `zip_with`'s argument over an irregular array.
    Elem { b: ABind, at: Vec<usize> },
}

/// What a variable of the source's array environment stands for.
#[derive(Clone, Debug)]
enum ABind {
    /// An array of the output of this rank, by level, used as it is.
    Avoided { arr: usize, rank: usize },
    /// Output array `arr`, of shape `dims ++ sh` for the source array's
    /// shape `sh`, of rank `inner`.
    Lifted { arr: usize, dims: Vec<usize>, inner: usize },
    /// An array whose shape depends on the context (Note [Irregular
    /// arrays]): for each index of `dims`, its shape in `shapes` (an array
    /// of shape `dims`), and its element at an index as a function of the
    /// context index and that index (`elem`), computed where it is read.
    /// `shape` computes the shape at a context index where it is needed
    /// once (a loop over a row), rather than reading `shapes`.
    Irregular {
        shapes: usize,
        shape: std::rc::Rc<Elem>,
        elem: std::rc::Rc<Elem>,
        dims: Vec<usize>,
        inner: usize,
    },
}

/// The elements of an irregular array: `f` of the index `dims ++ ix`
/// (its only free variable), written when the output had `depth` arrays.
#[derive(Debug)]
struct Elem {
    f: Fun,
    depth: usize,
}

impl ABind {
    /// The output array holding the elements (for an irregular array,
    /// its shapes: only its own operations read its elements).
    fn arr(&self) -> usize {
        match self {
            ABind::Avoided { arr, .. } | ABind::Lifted { arr, .. } => *arr,
            ABind::Irregular { shapes, .. } => *shapes,
        }
    }
    fn dims(&self) -> &[usize] {
        match self {
            ABind::Avoided { .. } => &[],
            ABind::Lifted { dims, .. } | ABind::Irregular { dims, .. } => dims,
        }
    }
    fn inner(&self) -> usize {
        match self {
            ABind::Avoided { rank, .. } => *rank,
            ABind::Lifted { inner, .. } | ABind::Irregular { inner, .. } => *inner,
        }
    }
    fn is_irregular(&self) -> bool {
        matches!(self, ABind::Irregular { .. })
    }
}

fn union(a: &[usize], b: &[usize]) -> Vec<usize> {
    let mut v: Vec<usize> = a.iter().chain(b).copied().collect();
    v.sort_unstable();
    v.dedup();
    v
}

fn e(kind: ExpKind, loc: SrcLoc) -> OpenExp {
    OpenExp::new(kind, loc)
}
fn prj(i: usize, t: OpenExp, loc: SrcLoc) -> OpenExp {
    e(ExpKind::Prj(i, Box::new(t)), loc)
}
fn tuple(es: Vec<OpenExp>, loc: SrcLoc) -> OpenExp {
    e(ExpKind::Tuple(es), loc)
}
fn prim(op: PrimFun, args: Vec<OpenExp>, loc: SrcLoc) -> OpenExp {
    e(ExpKind::Prim(op, args), loc)
}
fn acc(kind: AccKind, loc: SrcLoc) -> OpenAcc {
    OpenAcc::new(kind, loc)
}

/// The scalar variable at `level` in a function of `depth` variables.
fn var_at(level: usize, depth: usize, loc: SrcLoc) -> OpenExp {
    e(ExpKind::Var(depth - 1 - level), loc)
}

/// `generate shape f` for a shape of `rank` and `f`'s body.
fn generate(shape: OpenExp, rank: usize, body: OpenExp, loc: SrcLoc) -> OpenAcc {
    acc(AccKind::Generate { shape, f: Fun { params: vec![EltTy::shape(rank)], body } }, loc)
}

/// The translation of scalar code into the function of an output
/// `generate` over the dimensions `frame` (in order), whose parameter is
/// the output's scalar variable at level 0.
struct Fx<'f> {
    frame: &'f [usize],
    /// Output scalar variables in scope.
    depth: usize,
    /// The level of the output scalar variable holding the index of the
    /// frame (the generate's parameter, or a let for an irregular array's
    /// elements, `Lifter::irregular`).
    k: usize,
    /// Source subterms already lifted, by address, and their lifted value.
    done: &'f HashMap<*const OpenExp, SBind>,
}

impl Fx<'_> {
    /// The component of the generate's index for dimension `d`.
    fn dim(&self, d: usize, loc: SrcLoc) -> Result<OpenExp> {
        let pos = self.frame.iter().position(|&x| x == d).ok_or_else(|| {
            Error::Internal(format!("lifting: dimension {d} is not in the frame {:?}", self.frame))
        })?;
        Ok(prj(pos, e(ExpKind::Var(self.depth - 1 - self.k), loc), loc))
    }

    fn index(&self, dims: &[usize], loc: SrcLoc) -> Result<Vec<OpenExp>> {
        dims.iter().map(|&d| self.dim(d, loc)).collect()
    }
}

struct Lifter<'e> {
    /// The types of the enclosing program's arrays (the output's first
    /// levels; as source variables, avoided arrays).
    outer: &'e [ArraysTy],
    /// Output array lets, in order; level `outer.len() + i` is `lets[i]`.
    lets: Vec<OpenAcc>,
    dims: Vec<Dim>,
    sbinds: Vec<SBind>,
    /// The source's array variables bound inside the context (those of
    /// the enclosing program are `outer`'s).
    abinds: Vec<ABind>,
    /// Which source scalar terms hold an array term (`ExpKind::ALet`),
    /// by address, as found (each subterm once: Lifter::nests).
    nested: RefCell<HashMap<*const OpenExp, bool>>,
    groups: Vec<Group>,
    /// How many loop steps being lifted are lifted twice (Note [Lifted
    /// loops]); from `MAX_TWICE` on, a loop's step is lifted once.
    twice: usize,
}

/// Loops nested deeper than this many steps lifted twice are lifted once
/// (packed at every step), so that the program grows by a factor of at
/// most 2^MAX_TWICE.
const MAX_TWICE: usize = 2;

impl<'e> Lifter<'e> {
    fn new(outer: &'e [ArraysTy]) -> Lifter<'e> {
        Lifter {
            outer,
            lets: Vec::new(),
            dims: Vec::new(),
            sbinds: Vec::new(),
            abinds: Vec::new(),
            nested: RefCell::new(HashMap::new()),
            groups: Vec::new(),
            twice: 0,
        }
    }

    fn adepth(&self) -> usize {
        self.outer.len() + self.lets.len()
    }

    fn avar(&self, level: usize) -> usize {
        self.adepth() - 1 - level
    }

    /// Let-binds an output array; its level.
    fn emit(&mut self, a: OpenAcc) -> usize {
        self.lets.push(a);
        self.adepth() - 1
    }

    fn new_dim(&mut self, extent: OpenExp) -> usize {
        self.dims.push(Dim { extent: Some(extent), depth: self.adepth(), group: None });
        self.dims.len() - 1
    }

    /// The dimensions of a shape expression of `rank` components.
    fn new_dims(&mut self, whole: OpenExp, rank: usize, loc: SrcLoc) -> Vec<usize> {
        let g = self.groups.len();
        let members: Vec<usize> = (0..rank)
            .map(|c| {
                let d = self.new_dim(prj(c, whole.clone(), loc));
                self.dims[d].group = Some(g);
                d
            })
            .collect();
        self.groups.push(Group { whole, depth: self.adepth(), members: members.clone() });
        members
    }

    fn new_irregular_dim(&mut self) -> usize {
        self.dims.push(Dim { extent: None, depth: self.adepth(), group: None });
        self.dims.len() - 1
    }

    /// The extent of dimension `d`, written at the current depth.
    fn extent(&self, d: usize) -> Result<OpenExp> {
        let dim = &self.dims[d];
        let mut x = dim.extent.clone().ok_or_else(|| {
            Error::Internal(format!("lifting: the extent of dimension {d}, of an irregular array"))
        })?;
        let by = self.adepth() - dim.depth;
        exp_arrays_mut(&mut x, &mut |a| *a += by);
        Ok(x)
    }

    /// `generate` over the dimensions `frame` of an element written as a
    /// function of the frame's index.
    fn generate_frame(&self, frame: &[usize], body: OpenExp, loc: SrcLoc) -> Result<OpenAcc> {
        Ok(generate(self.shape_of(frame, loc)?, frame.len(), body, loc))
    }

    fn shape_of(&self, dims: &[usize], loc: SrcLoc) -> Result<OpenExp> {
        if let Some(g) = dims.first().and_then(|&d| self.dims[d].group) {
            let group = &self.groups[g];
            if group.members == dims {
                let mut x = group.whole.clone();
                let by = self.adepth() - group.depth;
                exp_arrays_mut(&mut x, &mut |a| *a += by);
                return Ok(x);
            }
        }
        Ok(tuple(dims.iter().map(|&d| self.extent(d)).collect::<Result<_>>()?, loc))
    }

    /// The extents of an array's own dimensions, as new dimensions.
    fn dims_of(&mut self, b: &ABind, loc: SrcLoc) -> Vec<usize> {
        let skip = b.dims().len();
        if skip == 0 {
            let shape = e(ExpKind::Shape { array: self.avar(b.arr()) }, loc);
            return self.new_dims(shape, b.inner(), loc);
        }
        (0..b.inner())
            .map(|c| {
                let shape = e(ExpKind::Shape { array: self.avar(b.arr()) }, loc);
                self.new_dim(prj(skip + c, shape, loc))
            })
            .collect()
    }

    // -----------------------------------------------------------------------
    // The outermost context

    /// The flat form of an operation of the enclosing program whose
    /// function computes arrays.
    /// Returns the flat term and its type; `args` are the types of the
    /// operation's array arguments.
    fn context(mut self, kind: AccKind, args: &[ArraysTy], loc: SrcLoc) -> Result<(OpenAcc, ArraysTy)> {
        let elt_of = |i: usize| -> Result<EltTy> {
            args.get(i)
                .and_then(|t| t.array())
                .map(|a| a.elt.clone())
                .ok_or_else(|| unsupported(loc, "a tuple of arrays in a parallel function"))
        };
        let rank_of = |i: usize| -> Result<usize> {
            args.get(i)
                .and_then(|t| t.array())
                .map(|a| a.rank)
                .ok_or_else(|| unsupported(loc, "a tuple of arrays in a parallel function"))
        };
        let elt = match &kind {
            AccKind::Generate { f, .. } => verify::fun_ty(f, &f.params, self.outer),
            AccKind::Map { f, .. } => verify::fun_ty(f, &[elt_of(0)?], self.outer),
            AccKind::ZipWith { f, .. } => verify::fun_ty(f, &[elt_of(0)?, elt_of(1)?], self.outer),
            _ => Ok(EltTy::UNIT),
        }
        .map_err(Error::Internal)?;
        let (frame, result) = match kind {
            AccKind::Generate { shape, f } => {
                let rank = f.params[0].shape_rank().unwrap_or(0);
                let frame = self.new_dims(shape, rank, loc);
                self.sbinds.push(SBind::Index(frame.clone()));
                let r = self.scalar(&f.body)?;
                (frame, r)
            }
            AccKind::Map { f, array } => {
                let a = self.emit(*array);
                let b = ABind::Avoided { arr: a, rank: rank_of(0)? };
                let frame = self.dims_of(&b, loc);
                self.sbinds.push(SBind::Read { arr: a, at: frame.clone() });
                let r = self.scalar(&f.body)?;
                (frame, r)
            }
            AccKind::ZipWith { f, a, mut b } => {
                // (`b` goes under the let of `a`)
                crate::avars::shift_acc(&mut b, 0, 1);
                let (la, lb) = (self.emit(*a), self.emit(*b));
                let sa = e(ExpKind::Shape { array: self.avar(la) }, loc);
                let sb = e(ExpKind::Shape { array: self.avar(lb) }, loc);
                let frame = self.new_dims(prim(PrimFun::Intersect, vec![sa, sb], loc), rank_of(0)?, loc);
                self.sbinds.push(SBind::Read { arr: la, at: frame.clone() });
                self.sbinds.push(SBind::Read { arr: lb, at: frame.clone() });
                let r = self.scalar(&f.body)?;
                (frame, r)
            }
            other => {
                let name = acc(other, loc).op_name();
                return Err(unsupported(
                    loc,
                    format!("an array computed inside the functions or expressions of {name}"),
                ));
            }
        };
        let arr = self.expand(result, &frame, loc)?;
        let body = acc(AccKind::Var(self.avar(arr)), loc);
        let term = self.lets.into_iter().rev().fold(body, |body, b| {
            let l = b.loc;
            acc(AccKind::Let(Box::new(b), Box::new(body)), l)
        });
        Ok((term, ArraysTy::Array(accelerate_base::array::ArrayTy { rank: frame.len(), elt })))
    }

    /// A lifted value of exactly the dimensions `frame` (in order): the
    /// value itself if it has them, else a generate that reads it (a
    /// broadcast along the dimensions it does not depend on).
    fn expand(&mut self, v: SBind, frame: &[usize], loc: SrcLoc) -> Result<usize> {
        if let SBind::Read { arr, at } = &v {
            if at == frame {
                return Ok(*arr);
            }
        }
        let done = HashMap::new();
        let fx = Fx { frame, depth: 1, k: 0, done: &done };
        let body = self.sbind_exp(&v, &fx, loc)?;
        let g = self.generate_frame(frame, body, loc)?;
        Ok(self.emit(g))
    }

    // -----------------------------------------------------------------------
    // Scalar code

    /// The dimensions a scalar term depends on (through the array terms
    /// nested in it too).
    fn deps(&self, x: &OpenExp, done: &HashMap<*const OpenExp, SBind>) -> Vec<usize> {
        let mut out = Vec::new();
        self.deps_in(x, Local::default(), done, &mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    fn deps_in(
        &self,
        x: &OpenExp,
        local: Local,
        done: &HashMap<*const OpenExp, SBind>,
        out: &mut Vec<usize>,
    ) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.deps_in_inner(x, local, done, out))
    }

    /// The source's scalar variable `k` seen under `local` binders.
    fn sbind_under(&self, k: usize, local: Local) -> Option<&SBind> {
        k.checked_sub(local.s).and_then(|k| self.sbinds.len().checked_sub(k + 1)).map(|l| &self.sbinds[l])
    }

    fn deps_in_inner(
        &self,
        x: &OpenExp,
        local: Local,
        done: &HashMap<*const OpenExp, SBind>,
        out: &mut Vec<usize>,
    ) {
        if let Some(b) = done.get(&(x as *const OpenExp)) {
            out.extend(self.sbind_dims(b));
            return;
        }
        let array = |i: usize, out: &mut Vec<usize>, shape_only: bool| {
            match i.checked_sub(local.a).and_then(|i| self.abind(i)) {
                // (the shape of a regular lifted array is the same everywhere)
                Some(b) if !shape_only || b.is_irregular() => out.extend(b.dims()),
                _ => {}
            }
        };
        match &x.kind {
            ExpKind::Var(k) => {
                if let Some(b) = self.sbind_under(*k, local) {
                    out.extend(self.sbind_dims(b));
                }
            }
            ExpKind::Prj(c, t) => match (&t.kind, var_of(t).and_then(|k| self.sbind_under(k, local))) {
                (ExpKind::Var(_), Some(SBind::Index(dims))) => out.extend(dims.get(*c).copied()),
                _ => self.deps_in(t, local, done, out),
            },
            ExpKind::Let(b, body) => {
                self.deps_in(b, local, done, out);
                self.deps_in(body, local.scalars(1), done, out);
            }
            ExpKind::While { cond, body, init } => {
                self.deps_in(init, local, done, out);
                self.deps_in(&cond.body, local.scalars(1), done, out);
                self.deps_in(&body.body, local.scalars(1), done, out);
            }
            ExpKind::Index { array: i, index } | ExpKind::LinearIndex { array: i, index } => {
                array(*i, out, false);
                self.deps_in(index, local, done, out);
            }
            ExpKind::Shape { array: i } => array(*i, out, true),
            ExpKind::ALet(a, body) => {
                self.acc_deps(a, local, done, out);
                self.deps_in(body, local.arrays(1), done, out);
            }
            ExpKind::Const(_) => {}
            _ => each_child(x, |c| self.deps_in(c, local, done, out)),
        }
    }

    /// The dimensions an array term nested in scalar code depends on: those
    /// of the scalar and array variables it reads from outside it.
    fn acc_deps(
        &self,
        a: &OpenAcc,
        local: Local,
        done: &HashMap<*const OpenExp, SBind>,
        out: &mut Vec<usize>,
    ) {
        let fun =
            |f: &Fun, out: &mut Vec<usize>| self.deps_in(&f.body, local.scalars(f.params.len()), done, out);
        let x = |y: &OpenExp, out: &mut Vec<usize>| self.deps_in(y, local, done, out);
        let sub = |b: &OpenAcc, out: &mut Vec<usize>| self.acc_deps(b, local, done, out);
        match &a.kind {
            AccKind::Var(i) => {
                if let Some(b) = i.checked_sub(local.a).and_then(|i| self.abind(i)) {
                    out.extend(b.dims());
                }
            }
            AccKind::Let(b, body) => {
                sub(b, out);
                self.acc_deps(body, local.arrays(1), done, out);
            }
            AccKind::Awhile { pred, body, init } => {
                sub(init, out);
                self.acc_deps(&pred.body, local.arrays(1), done, out);
                self.acc_deps(&body.body, local.arrays(1), done, out);
            }
            AccKind::Foreign { fallback, arg, .. } => {
                sub(arg, out);
                if let Some(fallback) = fallback {
                    self.acc_deps(&fallback.body, local.arrays(1), done, out);
                }
            }
            AccKind::Acond { cond, then_, else_ } => {
                x(cond, out);
                sub(then_, out);
                sub(else_, out);
            }
            AccKind::Use(_) | AccKind::Delayed(_) => {}
            _ => {
                // an operation: its expressions, its functions (under their
                // parameters) and its array arguments
                match &a.kind {
                    AccKind::Unit(e) => x(e, out),
                    AccKind::Reshape { shape, .. } => x(shape, out),
                    AccKind::Generate { shape, f } | AccKind::Backpermute { shape, f, .. } => {
                        x(shape, out);
                        fun(f, out);
                    }
                    AccKind::Map { f, .. } | AccKind::ZipWith { f, .. } => fun(f, out),
                    AccKind::Replicate { slix, .. } | AccKind::Slice { slix, .. } => x(slix, out),
                    AccKind::Fold { f, seed, .. }
                    | AccKind::Scan { f, seed, .. }
                    | AccKind::FoldSeg { f, seed, .. } => {
                        fun(f, out);
                        seed.iter().for_each(|z| x(z, out));
                    }
                    AccKind::Permute { combine, index, .. } => {
                        fun(combine, out);
                        fun(index, out);
                    }
                    AccKind::Stencil { f, args: sargs } => {
                        fun(f, out);
                        for s in sargs {
                            match &s.boundary {
                                Boundary::Constant(c) => x(c, out),
                                Boundary::Function(g) => fun(g, out),
                                Boundary::Clamp | Boundary::Mirror | Boundary::Wrap => {}
                            }
                        }
                    }
                    _ => {}
                }
                for b in visit::acc_children(a) {
                    sub(b, out);
                }
            }
        }
    }

    fn sbind_dims(&self, b: &SBind) -> Vec<usize> {
        match b {
            SBind::Out(_) => vec![],
            SBind::Index(dims) => dims.clone(),
            SBind::Read { at, .. } => at.clone(),
            SBind::Elem { b, at } => union(b.dims(), at),
        }
    }

    fn abind(&self, i: usize) -> Option<ABind> {
        let local = self.abinds.len();
        if i < local {
            return Some(self.abinds[local - 1 - i].clone());
        }
        let arr = self.outer.len().checked_sub(i - local + 1)?;
        Some(ABind::Avoided { arr, rank: self.outer[arr].array().map_or(0, |a| a.rank) })
    }

    /// For `prj c t` where `t` is a tuple of arrays bound outside the
    /// context, the level of that tuple and the rank of its array `c`.
    fn outer_component(&self, c: usize, t: &OpenAcc) -> Option<(usize, usize)> {
        let AccKind::Var(i) = t.kind else { return None };
        let level = self.outer.len().checked_sub(i.checked_sub(self.abinds.len())? + 1)?;
        let ArraysTy::Tuple(ts) = &self.outer[level] else { return None };
        Some((level, ts.get(c)?.array()?.rank))
    }

    /// Does the term hold an array term nested in scalar code? Memoised,
    /// so that asking at every level of a deep term stays linear.
    fn nests(&self, x: &OpenExp) -> bool {
        let key = x as *const OpenExp;
        if let Some(&b) = self.nested.borrow().get(&key) {
            return b;
        }
        let mut memo = self.nested.borrow_mut();
        let mut stack: Vec<(&OpenExp, bool)> = vec![(x, false)];
        while let Some((y, ready)) = stack.pop() {
            let k = y as *const OpenExp;
            if memo.contains_key(&k) {
                continue;
            }
            if !ready {
                stack.push((y, true));
                each_child(y, |c| stack.push((c, false)));
                continue;
            }
            let mut found = matches!(y.kind, ExpKind::ALet(..));
            each_child(y, |c| found |= memo.get(&(c as *const OpenExp)).copied().unwrap_or(false));
            memo.insert(k, found);
        }
        memo[&key]
    }

    /// The lifted value of a scalar term of the current context: a read of
    /// an output array over the dimensions it depends on.
    fn scalar(&mut self, x: &OpenExp) -> Result<SBind> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.scalar_inner(x))
    }

    fn scalar_inner(&mut self, x: &OpenExp) -> Result<SBind> {
        match &x.kind {
            ExpKind::ALet(a, body) => {
                let mut b = self.array(a)?;
                // read more than once, and costly to compute again at every
                // read (Note [Irregular arrays])
                if costly_irregular(&b) && read_repeatedly(body, 0) {
                    b = self.manifest_irregular(b, x.loc)?;
                }
                self.abinds.push(b);
                let r = self.scalar(body);
                self.abinds.pop();
                r
            }
            ExpKind::Let(b, body) if self.nests(x) => {
                let v = self.scalar(b)?;
                self.sbinds.push(v);
                let r = self.scalar(body);
                self.sbinds.pop();
                r
            }
            // `the` of a lifted array of rank 0 is a read of it
            ExpKind::Index { array, index } if is_empty_tuple(index) => match self.abind_at(*array, x.loc)? {
                ABind::Lifted { arr, dims, inner: 0 } => Ok(SBind::Read { arr, at: dims }),
                ABind::Avoided { arr, rank: 0 } => Ok(SBind::Read { arr, at: vec![] }),
                _ => self.materialise(x, &HashMap::new()),
            },
            // a variable is its own lifted value
            ExpKind::Var(k) => match self.sbinds.len().checked_sub(k + 1).map(|l| self.sbinds[l].clone()) {
                Some(b @ SBind::Read { .. }) => Ok(b),
                _ => self.materialise(x, &HashMap::new()),
            },
            _ if !self.nests(x) => self.materialise(x, &HashMap::new()),
            ExpKind::Cond(c, t, f) if self.nests(t) || self.nests(f) => self.cond(x, c, t, f),
            ExpKind::While { cond, body, init } => self.while_loop(x, cond, body, init),
            ExpKind::Prim(PrimFun::LAnd | PrimFun::LOr, args) if args[1..].iter().any(|a| self.nests(a)) => {
                Err(unsupported(x.loc, "an array computed in the second operand of a short-circuit operator"))
            }
            _ => {
                // the array terms in the operands (where they are always
                // evaluated) first, each to a lifted value, then this
                // operation over them: one generate for the whole term
                let mut done = HashMap::new();
                let mut todo = Vec::new();
                each_child(x, |c| todo.push(c));
                while let Some(c) = todo.pop() {
                    if !self.nests(c) {
                        continue;
                    }
                    match &c.kind {
                        ExpKind::ALet(..) | ExpKind::Let(..) => {
                            let v = self.scalar(c)?;
                            done.insert(c as *const OpenExp, v);
                        }
                        ExpKind::Cond(cc, t, f) if self.nests(t) || self.nests(f) => {
                            let v = self.cond(c, cc, t, f)?;
                            done.insert(c as *const OpenExp, v);
                        }
                        ExpKind::While { cond, body, init } => {
                            let v = self.while_loop(c, cond, body, init)?;
                            done.insert(c as *const OpenExp, v);
                        }
                        ExpKind::Prim(PrimFun::LAnd | PrimFun::LOr, args)
                            if args[1..].iter().any(|a| self.nests(a)) =>
                        {
                            return Err(unsupported(
                                c.loc,
                                "an array computed in the second operand of a short-circuit operator",
                            ))
                        }
                        _ => each_child(c, |g| todo.push(g)),
                    }
                }
                self.materialise(x, &done)
            }
        }
    }

    /// `if c then t else f` whose branches compute arrays (Note [Lifted
    /// conditionals]): each branch lifted over the elements that take it
    /// only, packed into a dimension of their own, so that an element
    /// computes (and fails in) only the branch it takes.
    fn cond(&mut self, x: &OpenExp, c: &OpenExp, t: &OpenExp, f: &OpenExp) -> Result<SBind> {
        let loc = x.loc;
        let dims = self.deps(x, &HashMap::new());
        let (split, values) = self.branches(&dims, c, [t, f], loc, |this, branch, q| {
            let r = this.scalar(branch)?;
            this.expand(r, &[q], loc)
        })?;
        // the result: each element's value from its branch
        let arr = self.unpack(&dims, split, values[0], Err(values[1]), 0, loc)?;
        Ok(SBind::Read { arr, at: dims })
    }

    /// Per element of `dims`, whose position among them is `i`: the value
    /// at `pos[i]` of `taken` (of the elements whose flag is set, packed)
    /// if its flag is set, else, if `other` is `Err(a)`, the value of `a`
    /// at `i - pos[i]` (of the others, packed), or if `Ok(a)`, the value of
    /// `a` (over `dims`) at the element. With `inner` more dimensions (an
    /// array per element: `other` is then `Ok`), each element's array.
    fn unpack(
        &mut self,
        dims: &[usize],
        Split { flags, pos }: Split,
        taken: usize,
        other: std::result::Result<usize, usize>,
        inner: usize,
        loc: SrcLoc,
    ) -> Result<usize> {
        let var = |level: usize, depth: usize| var_at(level, depth, loc);
        let k = dims.len();
        // the element's index among `dims`, from the generate's index
        let ctx = |depth: usize| {
            if inner == 0 {
                var(0, depth)
            } else {
                tuple((0..k).map(|c| prj(c, var(0, depth), loc)).collect(), loc)
            }
        };
        // levels: 0 the index, 1 its position, 2 pos[position]
        let i = prim(PrimFun::ToIndex, vec![self.shape_of(dims, loc)?, ctx(1)], loc);
        let p = e(ExpKind::LinearIndex { array: self.avar(pos), index: Box::new(var(1, 2)) }, loc);
        let flag = e(ExpKind::Index { array: self.avar(flags), index: Box::new(ctx(3)) }, loc);
        let from_taken = if inner == 0 {
            e(ExpKind::LinearIndex { array: self.avar(taken), index: Box::new(var(2, 3)) }, loc)
        } else {
            let mut ix = vec![var(2, 3)];
            ix.extend((0..inner).map(|c| prj(k + c, var(0, 3), loc)));
            e(ExpKind::Index { array: self.avar(taken), index: Box::new(tuple(ix, loc)) }, loc)
        };
        let from_other = match other {
            Err(a) => e(
                ExpKind::LinearIndex {
                    array: self.avar(a),
                    index: Box::new(prim(PrimFun::Sub, vec![var(1, 3), var(2, 3)], loc)),
                },
                loc,
            ),
            Ok(a) => e(ExpKind::Index { array: self.avar(a), index: Box::new(var(0, 3)) }, loc),
        };
        let pick = e(ExpKind::Cond(Box::new(flag), Box::new(from_taken), Box::new(from_other)), loc);
        let body =
            e(ExpKind::Let(Box::new(i), Box::new(e(ExpKind::Let(Box::new(p), Box::new(pick)), loc))), loc);
        let g = match other {
            Ok(a) if inner > 0 => {
                generate(e(ExpKind::Shape { array: self.avar(a) }, loc), k + inner, body, loc)
            }
            _ => self.generate_frame(dims, body, loc)?,
        };
        Ok(self.emit(g))
    }

    /// The dimensions an array term inside the context depends on, in
    /// order.
    fn acc_dims(&self, a: &OpenAcc) -> Vec<usize> {
        let mut dims = Vec::new();
        self.acc_deps(a, Local::default(), &HashMap::new(), &mut dims);
        dims.sort_unstable();
        dims.dedup();
        dims
    }

    /// The two branches of a conditional on `c` over the elements of
    /// `dims` (Note [Lifted conditionals]): each element's flag and the
    /// running counts of the set ones, and what `each` makes of each
    /// branch inside it, over the elements that take it only, packed as
    /// the dimension it is given.
    fn branches<B, T>(
        &mut self,
        dims: &[usize],
        c: &OpenExp,
        [t, f]: [B; 2],
        loc: SrcLoc,
        each: impl Fn(&mut Self, B, usize) -> Result<T>,
    ) -> Result<(Split, [T; 2])> {
        let vc = self.scalar(c)?;
        let flags = self.expand(vc, dims, loc)?;
        let split = self.flag_counts(dims, flags, loc)?;
        let (sel, q) = self.pack(dims, split, true, loc)?;
        let taken = self.in_branch(dims, sel, q, loc, |this| each(this, t, q))?;
        let (sel, q) = self.pack(dims, split, false, loc)?;
        let other = self.in_branch(dims, sel, q, loc, |this| each(this, f, q))?;
        Ok((split, [taken, other]))
    }

    /// `pos[i]`: how many elements before position `i` (in row-major order
    /// over `dims`) have their flag (in `flags`, over `dims`) set; one more
    /// element than the positions, the last the total.
    fn flag_counts(&mut self, dims: &[usize], flags: usize, loc: SrcLoc) -> Result<Split> {
        let int = |v: i64| e(ExpKind::Const(ScalarVal::I64(v)), loc);
        let flag = e(ExpKind::Index { array: self.avar(flags), index: Box::new(var_at(0, 1, loc)) }, loc);
        let one = e(ExpKind::Cond(Box::new(flag), Box::new(int(1)), Box::new(int(0))), loc);
        let pos = self.running_counts(dims, one, loc)?;
        Ok(Split { flags, pos })
    }

    /// The elements of `dims` whose flag is `taken`, packed: the vector
    /// `sel` of their positions, in order, and the new dimension `q` of
    /// as many elements as they are.
    fn pack(
        &mut self,
        dims: &[usize],
        Split { flags, pos }: Split,
        taken: bool,
        loc: SrcLoc,
    ) -> Result<(Sel, usize)> {
        let i64t = EltTy::Scalar(ScalarTy::I64);
        let int = |v: i64| e(ExpKind::Const(ScalarVal::I64(v)), loc);
        let var = |level: usize, depth: usize| var_at(level, depth, loc);
        let at = |this: &Lifter, i: OpenExp| {
            e(ExpKind::LinearIndex { array: this.avar(pos), index: Box::new(i) }, loc)
        };
        let count = |this: &Lifter| -> Result<OpenExp> {
            let n = prim(PrimFun::ShapeSize, vec![this.shape_of(dims, loc)?], loc);
            let count_taken = at(this, n.clone());
            Ok(if taken { count_taken } else { prim(PrimFun::Sub, vec![n, count_taken], loc) })
        };
        let zeros = self.emit(generate(tuple(vec![count(self)?], loc), 1, int(0), loc));
        let n = prim(PrimFun::ShapeSize, vec![self.shape_of(dims, loc)?], loc);
        // position i goes to its rank among the elements taking the branch
        let i = prj(0, var(0, 1), loc);
        let flag = e(ExpKind::LinearIndex { array: self.avar(flags), index: Box::new(i.clone()) }, loc);
        let flag = if taken { flag } else { prim(PrimFun::LNot, vec![flag], loc) };
        let rank =
            if taken { at(self, i.clone()) } else { prim(PrimFun::Sub, vec![i.clone(), at(self, i)], loc) };
        let index =
            Fun { params: vec![EltTy::shape(1)], body: tuple(vec![flag, tuple(vec![rank], loc)], loc) };
        let source = generate(tuple(vec![n], loc), 1, prj(0, var(0, 1), loc), loc);
        let first = Fun { params: vec![i64t.clone(), i64t], body: var(0, 2) };
        let sel = self.emit(acc(
            AccKind::Permute {
                combine: first,
                defaults: Box::new(self.avar_term(zeros, loc)),
                index,
                source: Box::new(source),
            },
            loc,
        ));
        // (the count again, written where the new dimension is made)
        let q = self.new_dims(tuple(vec![count(self)?], loc), 1, loc)[0];
        Ok((Sel::Packed(sel), q))
    }

    /// Runs `f` inside a branch taken by the elements at positions `sel`
    /// of `dims`, packed as dimension `q` (`enter_branch`), then restores
    /// the context's bindings.
    fn in_branch<T>(
        &mut self,
        dims: &[usize],
        sel: Sel,
        q: usize,
        loc: SrcLoc,
        f: impl FnOnce(&mut Self) -> Result<T>,
    ) -> Result<T> {
        let (saved_s, saved_a) = (self.sbinds.clone(), self.abinds.clone());
        let r = self.enter_branch(dims, sel, q, loc).and_then(|_| f(self));
        self.sbinds = saved_s;
        self.abinds = saved_a;
        r
    }

    /// A scalar `while` whose functions compute arrays (Note [Lifted
    /// loops]): an `awhile` over the states of every element of the
    /// dimensions the loop depends on and their flags, whose body steps
    /// the elements still running only, packed as in a conditional.
    fn while_loop(&mut self, x: &OpenExp, cond: &Fun, body: &Fun, init: &OpenExp) -> Result<SBind> {
        use accelerate_base::array::ArrayTy;
        let loc = x.loc;
        let dims = self.deps(x, &HashMap::new());
        // each element's initial state and first test
        let v0 = self.scalar(init)?;
        let s0 = self.expand(v0, &dims, loc)?;
        self.sbinds.push(SBind::Read { arr: s0, at: dims.clone() });
        let c0 = self.scalar(&cond.body);
        self.sbinds.pop();
        let f0 = self.expand(c0?, &dims, loc)?;
        let state = ArrayTy { rank: dims.len(), elt: cond.params[0].clone() };
        let arr = self.packed_loop(&dims, s0, f0, state, loc, |this, vals, sel, q| {
            this.sbinds.push(SBind::Read { arr: vals, at: dims.clone() });
            let r = this.in_branch(&dims, sel, q, loc, |this| {
                let v = this.scalar(&body.body)?;
                let next = this.expand(v, &[q], loc)?;
                // (the test sees the loop's environment and the new state)
                this.sbinds.pop();
                this.sbinds.push(SBind::Read { arr: next, at: vec![q] });
                let c = this.scalar(&cond.body)?;
                let test = this.expand(c, &[q], loc)?;
                Ok((next, test))
            });
            this.sbinds.pop();
            r
        })?;
        Ok(SBind::Read { arr, at: dims })
    }

    /// `awhile` inside a context (Note [Lifted loops]): as a scalar loop's,
    /// over every element's array state and running flag, the running
    /// elements packed at each step. The body must keep its state's shape
    /// (checked on the term: `keeps_shape`), so that the states of all the
    /// elements are one regular array.
    fn awhile(
        &mut self,
        a: &OpenAcc,
        pred: &AFun,
        body: &AFun,
        init: &OpenAcc,
        loc: SrcLoc,
    ) -> Result<ABind> {
        use accelerate_base::array::ArrayTy;
        let Some(ArrayTy { rank, elt }) = pred.param.array().cloned() else {
            return Err(unsupported(loc, "an awhile over a tuple of arrays inside a parallel function"));
        };
        if !keeps_shape(&body.body, &mut vec![true]) {
            return Err(unsupported(
                loc,
                "an awhile inside a parallel function whose body may change the shape of its state",
            ));
        }
        let dims = self.acc_dims(a);
        // each element's initial state and first test
        let b0 = self.array(init)?;
        regular(&b0, loc, "the initial array of an awhile")?;
        let s0 = self.expand_array(&b0, &dims, loc)?;
        let s0 = self.emit(s0);
        self.abinds.push(self.bind_result(s0, &dims, rank));
        let t0 = self.array(&pred.body);
        self.abinds.pop();
        let f0 = self.flags_of(t0?, &dims, loc)?;
        let state = ArrayTy { rank: dims.len() + rank, elt };
        let arr = self.packed_loop(&dims, s0, f0, state, loc, |this, vals, sel, q| {
            this.abinds.push(this.bind_result(vals, &dims, rank));
            let r = this.in_branch(&dims, sel, q, loc, |this| {
                let nb = this.array(&body.body)?;
                regular(&nb, loc, "the body of an awhile")?;
                let next = this.expand_array(&nb, &[q], loc)?;
                let next = this.emit(next);
                // (the test sees the loop's environment and the new state)
                this.abinds.pop();
                this.abinds.push(ABind::Lifted { arr: next, dims: vec![q], inner: rank });
                let t = this.array(&pred.body)?;
                let test = this.flags_of(t, &[q], loc)?;
                Ok((next, test))
            });
            this.abinds.pop();
            r
        })?;
        Ok(self.bind_result(arr, &dims, rank))
    }

    /// The `awhile` of Note [Lifted loops] over the elements of `dims`,
    /// from each element's state (in `s0`, of type `state`: over `dims`,
    /// then the state's own dimensions) and first test (`f0`, over
    /// `dims`). Each step packs the running elements (or takes them all,
    /// while all run) and calls `step` with the states' level and the
    /// packing (`sel`, `q`: `Lifter::pack`), which returns the running
    /// elements' next states and tests, over `q`; the others keep theirs.
    /// `step` is called twice, once for each case. Returns the level of the
    /// final states.
    fn packed_loop(
        &mut self,
        dims: &[usize],
        s0: usize,
        f0: usize,
        state: accelerate_base::array::ArrayTy,
        loc: SrcLoc,
        step: impl Fn(&mut Self, usize, Sel, usize) -> Result<(usize, usize)>,
    ) -> Result<usize> {
        use accelerate_base::array::ArrayTy;
        let init =
            self.emit(acc(AccKind::Tuple(vec![self.avar_term(f0, loc), self.avar_term(s0, loc)]), loc));
        let inner = state.rank - dims.len();
        let ty = ArraysTy::Tuple(vec![
            ArraysTy::Array(ArrayTy { rank: dims.len(), elt: EltTy::Scalar(ScalarTy::Bool) }),
            ArraysTy::Array(state),
        ]);
        // go on while an element is running
        let pred = self.scope(ty.clone(), loc, |this, param| this.any_running(param, dims, loc))?;
        let parts = |this: &mut Self, param: usize| {
            let flags = this.emit(acc(AccKind::Prj(0, Box::new(this.avar_term(param, loc))), loc));
            let vals = this.emit(acc(AccKind::Prj(1, Box::new(this.avar_term(param, loc))), loc));
            (flags, vals)
        };
        let pair = |this: &mut Self, a: usize, b: usize| {
            this.emit(acc(AccKind::Tuple(vec![this.avar_term(a, loc), this.avar_term(b, loc)]), loc))
        };
        // one step of the elements running, packed
        let packed = |this: &mut Self, param: usize| {
            let (flags, vals) = parts(this, param);
            let split = this.flag_counts(dims, flags, loc)?;
            let (sel, q) = this.pack(dims, split, true, loc)?;
            let (next, test) = step(this, vals, sel, q)?;
            let new_flags = this.unpack(dims, split, test, Ok(flags), 0, loc)?;
            let new_vals = this.unpack(dims, split, next, Ok(vals), inner, loc)?;
            Ok(pair(this, new_flags, new_vals))
        };
        let body = if self.twice >= MAX_TWICE {
            self.scope(ty, loc, packed)?
        } else {
            // or of every element while all run (no packing)
            self.twice += 1;
            let body = self.scope(ty.clone(), loc, |this, param| {
                let (flags, _) = parts(this, param);
                let running = this.count_running(dims, flags, loc)?;
                let all = this.scope(ty.clone(), loc, |this, param| {
                    let (_, vals) = parts(this, param);
                    let n = prim(PrimFun::ShapeSize, vec![this.shape_of(dims, loc)?], loc);
                    let q = this.new_dims(tuple(vec![n], loc), 1, loc)[0];
                    let (next, test) = step(this, vals, Sel::All, q)?;
                    let new_flags = this.unflatten(dims, test, 0, loc)?;
                    let new_vals = this.unflatten(dims, next, inner, loc)?;
                    Ok(pair(this, new_flags, new_vals))
                })?;
                let packed = this.scope(ty.clone(), loc, packed)?;
                let n = prim(PrimFun::ShapeSize, vec![this.shape_of(dims, loc)?], loc);
                let every =
                    e(ExpKind::Index { array: this.avar(running), index: Box::new(tuple(vec![], loc)) }, loc);
                let cond = prim(PrimFun::Eq, vec![every, n], loc);
                // (each branch its function applied to the state)
                let apply = |this: &Self, f: AFun| {
                    acc(AccKind::Let(Box::new(this.avar_term(param, loc)), f.body), loc)
                };
                let (then_, else_) = (Box::new(apply(this, all)), Box::new(apply(this, packed)));
                Ok(this.emit(acc(AccKind::Acond { cond, then_, else_ }, loc)))
            });
            self.twice -= 1;
            body?
        };
        let looped =
            self.emit(acc(AccKind::Awhile { pred, body, init: Box::new(self.avar_term(init, loc)) }, loc));
        Ok(self.emit(acc(AccKind::Prj(1, Box::new(self.avar_term(looped, loc))), loc)))
    }

    /// An `awhile` test's lifted result (a rank-0 array per element) as
    /// flags over exactly `dims`.
    fn flags_of(&mut self, b: ABind, dims: &[usize], loc: SrcLoc) -> Result<usize> {
        let v = match b {
            ABind::Lifted { arr, dims: at, inner: 0 } => SBind::Read { arr, at },
            ABind::Avoided { arr, rank: 0 } => SBind::Read { arr, at: vec![] },
            _ => return Err(Error::Internal("lifting: an awhile test that is not a scalar".into())),
        };
        self.expand(v, dims, loc)
    }

    /// A loop step's result over every element of `dims` in row-major
    /// order (over the new dimension of `Sel::All`, then `inner` more) as
    /// the loop state: over `dims`, then the same `inner`.
    fn unflatten(&mut self, dims: &[usize], flat: usize, inner: usize, loc: SrcLoc) -> Result<usize> {
        let mut ext = vec![];
        let sh = self.shape_of(dims, loc)?;
        ext.extend((0..dims.len()).map(|c| prj(c, sh.clone(), loc)));
        let shape = e(ExpKind::Shape { array: self.avar(flat) }, loc);
        ext.extend((0..inner).map(|c| prj(1 + c, shape.clone(), loc)));
        let shape = tuple(ext, loc);
        Ok(self.emit(acc(AccKind::Reshape { shape, array: Box::new(self.avar_term(flat, loc)) }, loc)))
    }

    /// How many elements of the loop flags at `flags` (over `dims`) are
    /// set: a rank-0 array.
    fn count_running(&mut self, dims: &[usize], flags: usize, loc: SrcLoc) -> Result<usize> {
        let int = |v: i64| e(ExpKind::Const(ScalarVal::I64(v)), loc);
        let i64t = EltTy::Scalar(ScalarTy::I64);
        let size = prim(PrimFun::ShapeSize, vec![self.shape_of(dims, loc)?], loc);
        let flat = self.emit(acc(
            AccKind::Reshape { shape: tuple(vec![size], loc), array: Box::new(self.avar_term(flags, loc)) },
            loc,
        ));
        let flag = e(ExpKind::Var(0), loc);
        let ones = acc(
            AccKind::Map {
                f: Fun {
                    params: vec![EltTy::Scalar(ScalarTy::Bool)],
                    body: e(ExpKind::Cond(Box::new(flag), Box::new(int(1)), Box::new(int(0))), loc),
                },
                array: Box::new(self.avar_term(flat, loc)),
            },
            loc,
        );
        let plus = Fun {
            params: vec![i64t.clone(), i64t],
            body: prim(PrimFun::Add, vec![var_at(0, 2, loc), var_at(1, 2, loc)], loc),
        };
        Ok(self.emit(acc(AccKind::Fold { f: plus, seed: Some(int(0)), array: Box::new(ones) }, loc)))
    }

    /// Whether an element of the loop state `param` (flags over `dims`,
    /// then the states) is still running: a rank-0 array.
    fn any_running(&mut self, param: usize, dims: &[usize], loc: SrcLoc) -> Result<usize> {
        let boolean = EltTy::Scalar(ScalarTy::Bool);
        let flags = self.emit(acc(AccKind::Prj(0, Box::new(self.avar_term(param, loc))), loc));
        let size = prim(PrimFun::ShapeSize, vec![self.shape_of(dims, loc)?], loc);
        let flat = self.emit(acc(
            AccKind::Reshape { shape: tuple(vec![size], loc), array: Box::new(self.avar_term(flags, loc)) },
            loc,
        ));
        let or = Fun {
            params: vec![boolean.clone(), boolean],
            body: prim(PrimFun::LOr, vec![var_at(0, 2, loc), var_at(1, 2, loc)], loc),
        };
        let any = AccKind::Fold {
            f: or,
            seed: Some(e(ExpKind::Const(ScalarVal::Bool(false)), loc)),
            array: Box::new(self.avar_term(flat, loc)),
        };
        Ok(self.emit(acc(any, loc)))
    }

    /// An array function of a parameter of type `param` whose body `f`
    /// writes (as lets of its own, given the parameter's level), returning
    /// the level of its result. Dimensions made inside do not outlive it.
    fn scope(
        &mut self,
        param: ArraysTy,
        loc: SrcLoc,
        f: impl FnOnce(&mut Self, usize) -> Result<usize>,
    ) -> Result<AFun> {
        let (start, dims, groups) = (self.lets.len(), self.dims.len(), self.groups.len());
        // (a placeholder at the parameter's level)
        self.lets.push(acc(AccKind::Var(0), loc));
        let r = f(self, self.adepth() - 1);
        let inner = self.lets.split_off(start + 1);
        let depth = self.adepth() + inner.len();
        self.lets.pop();
        self.dims.truncate(dims);
        self.groups.truncate(groups);
        let result = acc(AccKind::Var(depth - 1 - r?), loc);
        let body = inner.into_iter().rev().fold(result, |body, b| {
            let l = b.loc;
            acc(AccKind::Let(Box::new(b), Box::new(body)), l)
        });
        Ok(AFun { param, body: Box::new(body) })
    }

    /// The running totals of an `i64` count per index of `dims` (`count`, a
    /// function of the index), in row-major order from 0: a vector of one
    /// more element than the indices, the last the total.
    fn running_counts(&mut self, dims: &[usize], count: OpenExp, loc: SrcLoc) -> Result<usize> {
        let g = self.generate_frame(dims, count, loc)?;
        let counts = self.emit(g);
        let size = prim(PrimFun::ShapeSize, vec![self.shape_of(dims, loc)?], loc);
        let flat = acc(
            AccKind::Reshape { shape: tuple(vec![size], loc), array: Box::new(self.avar_term(counts, loc)) },
            loc,
        );
        let flat = self.emit(flat);
        let i64t = EltTy::Scalar(ScalarTy::I64);
        let plus = Fun {
            params: vec![i64t.clone(), i64t],
            body: prim(PrimFun::Add, vec![var_at(0, 2, loc), var_at(1, 2, loc)], loc),
        };
        Ok(self.emit(acc(
            AccKind::Scan {
                dir: Direction::Left,
                f: plus,
                seed: Some(e(ExpKind::Const(ScalarVal::I64(0)), loc)),
                array: Box::new(self.avar_term(flat, loc)),
            },
            loc,
        )))
    }

    /// Inside a branch taken by the elements at positions `sel` (of the
    /// dimensions `dims`), packed as dimension `q`: every value the branch
    /// can see over those dimensions, read at those elements only.
    fn enter_branch(&mut self, dims: &[usize], sel: Sel, q: usize, loc: SrcLoc) -> Result<()> {
        let within = |ds: &[usize]| !ds.is_empty() && ds.iter().all(|d| dims.contains(d));
        let var = |level: usize, depth: usize| var_at(level, depth, loc);
        // the index of the original element at packed position prj 0 of the
        // variable at `level`, in a function of `depth` variables
        let orig = |this: &Lifter, level: usize, depth: usize| -> Result<OpenExp> {
            let at = prj(0, var(level, depth), loc);
            let p = match sel {
                Sel::Packed(sel) => {
                    e(ExpKind::LinearIndex { array: this.avar(sel), index: Box::new(at) }, loc)
                }
                Sel::All => at,
            };
            Ok(prim(PrimFun::FromIndex, vec![this.shape_of(dims, loc)?, p], loc))
        };
        let comps = |ds: &[usize], o: OpenExp| -> Vec<OpenExp> {
            ds.iter().map(|d| prj(dims.iter().position(|x| x == d).unwrap_or(0), o.clone(), loc)).collect()
        };
        for i in 0..self.sbinds.len() {
            let replaced = match &self.sbinds[i] {
                SBind::Index(ds) if within(ds) => {
                    let o = orig(self, 0, 1)?;
                    Some((tuple(comps(ds, var(1, 2)), loc), o))
                }
                SBind::Read { arr, at } if within(at) => {
                    let o = orig(self, 0, 1)?;
                    let read = e(
                        ExpKind::Index {
                            array: self.avar(*arr),
                            index: Box::new(tuple(comps(at, var(1, 2)), loc)),
                        },
                        loc,
                    );
                    Some((read, o))
                }
                _ => None,
            };
            if let Some((body, o)) = replaced {
                let shape = self.shape_of(&[q], loc)?;
                let f = Fun {
                    params: vec![EltTy::shape(1)],
                    body: e(ExpKind::Let(Box::new(o), Box::new(body)), loc),
                };
                let arr = self.emit(acc(AccKind::Generate { shape, f }, loc));
                self.sbinds[i] = SBind::Read { arr, at: vec![q] };
            }
        }
        for i in 0..self.abinds.len() {
            let b = self.abinds[i].clone();
            match &b {
                ABind::Lifted { arr, dims: ds, inner } if within(ds) => {
                    // (q, j) reads arr at (the element's dimensions, j)
                    let o = orig(self, 0, 1)?;
                    let mut ix = comps(ds, var(1, 2));
                    ix.extend((0..*inner).map(|c| prj(1 + c, var(0, 2), loc)));
                    let read =
                        e(ExpKind::Index { array: self.avar(*arr), index: Box::new(tuple(ix, loc)) }, loc);
                    let shape_arr = e(ExpKind::Shape { array: self.avar(*arr) }, loc);
                    let mut ext = vec![self.extent(q)?];
                    ext.extend((0..*inner).map(|c| prj(ds.len() + c, shape_arr.clone(), loc)));
                    let f = Fun {
                        params: vec![EltTy::shape(1 + inner)],
                        body: e(ExpKind::Let(Box::new(o), Box::new(read)), loc),
                    };
                    let g = self.emit(acc(AccKind::Generate { shape: tuple(ext, loc), f }, loc));
                    self.abinds[i] = ABind::Lifted { arr: g, dims: vec![q], inner: *inner };
                }
                ABind::Irregular { dims: ds, .. } if ds.iter().any(|d| dims.contains(d)) => {
                    return Err(unsupported(
                        loc,
                        "an array whose extent depends on an enclosing function's argument, read in a branch of a conditional",
                    ));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A scalar term that computes no array (except through `done`) as a
    /// generate over the dimensions it depends on.
    fn materialise(&mut self, x: &OpenExp, done: &HashMap<*const OpenExp, SBind>) -> Result<SBind> {
        let frame = self.deps(x, done);
        let fx = Fx { frame: &frame, depth: 1, k: 0, done };
        let body = self.exp(x, &fx)?;
        let g = self.generate_frame(&frame, body, x.loc)?;
        let arr = self.emit(g);
        Ok(SBind::Read { arr, at: frame })
    }

    fn operand<'s>(&mut self, x: &'s OpenExp) -> Result<Operand<'s>> {
        Ok(if self.nests(x) { Operand::Lifted(self.scalar(x)?) } else { Operand::InPlace(x) })
    }

    fn operand_dims(&self, o: &Operand) -> Vec<usize> {
        match o {
            Operand::InPlace(x) => self.deps(x, &HashMap::new()),
            Operand::Lifted(b) => self.sbind_dims(b),
        }
    }

    fn operand_exp(&mut self, o: &Operand, fx: &Fx) -> Result<OpenExp> {
        match o {
            Operand::InPlace(x) => self.exp(x, fx),
            Operand::Lifted(b) => self.sbind_exp(b, fx, SrcLoc::caller()),
        }
    }

    /// A lifted scalar value as an expression in a translated function.
    fn sbind_exp(&self, b: &SBind, fx: &Fx, loc: SrcLoc) -> Result<OpenExp> {
        Ok(match b {
            SBind::Out(l) => e(ExpKind::Var(fx.depth - 1 - l), loc),
            SBind::Index(dims) => tuple(fx.index(dims, loc)?, loc),
            SBind::Read { arr, at } => e(
                ExpKind::Index { array: self.avar(*arr), index: Box::new(tuple(fx.index(at, loc)?, loc)) },
                loc,
            ),
            SBind::Elem { b, at } => return self.read(b, tuple(fx.index(at, loc)?, loc), fx, loc),
        })
    }

    /// Translates scalar code of the context into the function of an
    /// output generate (Note [Lifted forms]).
    fn exp(&mut self, x: &OpenExp, fx: &Fx) -> Result<OpenExp> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.exp_inner(x, fx))
    }

    fn exp_inner(&mut self, x: &OpenExp, fx: &Fx) -> Result<OpenExp> {
        let loc = x.loc;
        if let Some(b) = fx.done.get(&(x as *const OpenExp)) {
            return self.sbind_exp(b, fx, loc);
        }
        fn under<'f>(fx: &Fx<'f>) -> Fx<'f> {
            Fx { frame: fx.frame, depth: fx.depth + 1, k: fx.k, done: fx.done }
        }
        let kind = match &x.kind {
            ExpKind::Var(k) => {
                let b = self.sbinds.len().checked_sub(k + 1).map(|l| self.sbinds[l].clone()).ok_or_else(
                    || Error::Internal(format!("lifting: scalar variable {k} unbound at {loc}")),
                )?;
                return self.sbind_exp(&b, fx, loc);
            }
            ExpKind::Prj(c, t) => {
                if let Some(SBind::Index(dims)) =
                    var_of(t).and_then(|k| self.sbinds.len().checked_sub(k + 1)).map(|l| &self.sbinds[l])
                {
                    if let Some(&d) = dims.get(*c) {
                        return fx.dim(d, loc);
                    }
                }
                ExpKind::Prj(*c, Box::new(self.exp(t, fx)?))
            }
            ExpKind::Const(c) => ExpKind::Const(*c),
            ExpKind::Tuple(xs) => ExpKind::Tuple(xs.iter().map(|y| self.exp(y, fx)).collect::<Result<_>>()?),
            ExpKind::Prim(op, xs) => {
                ExpKind::Prim(*op, xs.iter().map(|y| self.exp(y, fx)).collect::<Result<_>>()?)
            }
            ExpKind::Cond(c, t, f) => ExpKind::Cond(
                Box::new(self.exp(c, fx)?),
                Box::new(self.exp(t, fx)?),
                Box::new(self.exp(f, fx)?),
            ),
            ExpKind::Let(b, body) => {
                let b = self.exp(b, fx)?;
                self.sbinds.push(SBind::Out(fx.depth));
                let body = self.exp(body, &under(fx));
                self.sbinds.pop();
                ExpKind::Let(Box::new(b), Box::new(body?))
            }
            ExpKind::While { cond, body, init } => {
                let init = self.exp(init, fx)?;
                let fun = |f: &Fun, this: &mut Lifter| -> Result<Box<Fun>> {
                    this.sbinds.push(SBind::Out(fx.depth));
                    let b = this.exp(&f.body, &under(fx));
                    this.sbinds.pop();
                    Ok(Box::new(Fun { params: f.params.clone(), body: b? }))
                };
                let cond = fun(cond, self)?;
                let body = fun(body, self)?;
                ExpKind::While { cond, body, init: Box::new(init) }
            }
            ExpKind::Index { array, index } => {
                let b = self.abind_at(*array, loc)?;
                let index = self.exp(index, fx)?;
                return self.read(&b, index, fx, loc);
            }
            ExpKind::LinearIndex { array, index } => {
                let b = self.abind_at(*array, loc)?;
                let index = self.exp(index, fx)?;
                return Ok(match &b {
                    ABind::Avoided { arr, .. } => {
                        e(ExpKind::LinearIndex { array: self.avar(*arr), index: Box::new(index) }, loc)
                    }
                    ABind::Lifted { .. } | ABind::Irregular { .. } => {
                        let shape = self.shape_at(&b, fx, loc)?;
                        let ix = prim(PrimFun::FromIndex, vec![shape, index], loc);
                        self.read(&b, ix, fx, loc)?
                    }
                });
            }
            ExpKind::Shape { array } => {
                let b = self.abind_at(*array, loc)?;
                return self.shape_at(&b, fx, loc);
            }
            ExpKind::ALet(..) => {
                return Err(unsupported(
                    loc,
                    "an array computed in a branch of a conditional or a loop inside a parallel function",
                ))
            }
        };
        Ok(e(kind, loc))
    }

    fn abind_at(&self, i: usize, loc: SrcLoc) -> Result<ABind> {
        self.abind(i).ok_or_else(|| Error::Internal(format!("lifting: array variable {i} unbound at {loc}")))
    }

    /// The shape of a bound array as the source sees it, at the frame's
    /// index.
    fn shape_at(&self, b: &ABind, fx: &Fx, loc: SrcLoc) -> Result<OpenExp> {
        match b {
            ABind::Irregular { shapes, dims, .. } => Ok(e(
                ExpKind::Index {
                    array: self.avar(*shapes),
                    index: Box::new(tuple(fx.index(dims, loc)?, loc)),
                },
                loc,
            )),
            _ => Ok(self.inner_shape(b, loc)),
        }
    }

    /// The shape of a regular bound array as the source sees it (the same
    /// at every index of the context).
    fn inner_shape(&self, b: &ABind, loc: SrcLoc) -> OpenExp {
        let shape = e(ExpKind::Shape { array: self.avar(b.arr()) }, loc);
        match b {
            ABind::Avoided { .. } | ABind::Irregular { .. } => shape,
            ABind::Lifted { dims, inner, .. } => {
                let n = dims.len();
                let mut comps = Vec::with_capacity(*inner);
                for c in 0..*inner {
                    comps.push(prj(n + c, shape.clone(), loc));
                }
                tuple(comps, loc)
            }
        }
    }

    /// The element of a bound array at an index (an expression of the
    /// function being written) of the source's array.
    fn read(&self, b: &ABind, index: OpenExp, fx: &Fx, loc: SrcLoc) -> Result<OpenExp> {
        match b {
            ABind::Avoided { arr, .. } => {
                Ok(e(ExpKind::Index { array: self.avar(*arr), index: Box::new(index) }, loc))
            }
            ABind::Irregular { elem, dims, .. } => {
                // let ix = bounds_check(sh, index) in elem (dims ++ ix),
                // for sh the array's shape at this context index
                let inside = Fx { frame: fx.frame, depth: fx.depth + 1, k: fx.k, done: fx.done };
                let sh = self.shape_at(b, fx, loc)?;
                let checked = prim(PrimFun::BoundsCheck, vec![sh, index], loc);
                let mut comps = inside.index(dims, loc)?;
                comps.extend((0..b.inner()).map(|c| prj(c, e(ExpKind::Var(0), loc), loc)));
                let at = self.apply_elem(elem, tuple(comps, loc), loc);
                Ok(e(ExpKind::Let(Box::new(checked), Box::new(at)), loc))
            }
            ABind::Lifted { arr, dims, inner } => {
                // let ix = index in arr ! (dims ++ ix)
                let inside = Fx { frame: fx.frame, depth: fx.depth + 1, k: fx.k, done: fx.done };
                let mut comps = inside.index(dims, loc)?;
                for c in 0..*inner {
                    comps.push(prj(c, e(ExpKind::Var(0), loc), loc));
                }
                let read =
                    e(ExpKind::Index { array: self.avar(*arr), index: Box::new(tuple(comps, loc)) }, loc);
                Ok(e(ExpKind::Let(Box::new(index), Box::new(read)), loc))
            }
        }
    }

    // -----------------------------------------------------------------------
    // Array terms inside a context

    /// The lifted form of an array term of the current context.
    fn array(&mut self, a: &OpenAcc) -> Result<ABind> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.array_inner(a))
    }

    /// Translates a scalar term that depends on no dimension to the
    /// enclosing program's scope (an extent or an operator of a lifted
    /// operation).
    fn closed(&mut self, x: &OpenExp, what: &str) -> Result<OpenExp> {
        let done = HashMap::new();
        if self.nests(x) || !self.deps(x, &done).is_empty() {
            return Err(unsupported(x.loc, what.to_string()));
        }
        let fx = Fx { frame: &[], depth: 0, k: 0, done: &done };
        self.exp(x, &fx)
    }

    fn closed_fun(&mut self, f: &Fun, what: &str) -> Result<Fun> {
        self.try_closed_fun(f)?.ok_or_else(|| unsupported(f.body.loc, what.to_string()))
    }

    /// The function translated to the enclosing program's scope, if it
    /// depends on nothing of the context but its parameters (which become
    /// the output function's).
    fn try_closed_fun(&mut self, f: &Fun) -> Result<Option<Fun>> {
        if self.nests(&f.body) {
            return Ok(None);
        }
        let base = self.sbinds.len();
        for i in 0..f.params.len() {
            self.sbinds.push(SBind::Out(i));
        }
        let r = if self.deps(&f.body, &HashMap::new()).is_empty() {
            let done = HashMap::new();
            let fx = Fx { frame: &[], depth: f.params.len(), k: 0, done: &done };
            self.exp(&f.body, &fx).map(Some)
        } else {
            Ok(None)
        };
        self.sbinds.truncate(base);
        Ok(r?.map(|body| Fun { params: f.params.clone(), body }))
    }

    fn avar_term(&self, level: usize, loc: SrcLoc) -> OpenAcc {
        acc(AccKind::Var(self.avar(level)), loc)
    }

    /// A regular bound array over the dimensions `dims` (a superset of its
    /// own, in order): replicated along those it does not depend on.
    fn expand_array(&self, b: &ABind, dims: &[usize], loc: SrcLoc) -> Result<OpenAcc> {
        if b.dims() == dims {
            return Ok(self.avar_term(b.arr(), loc));
        }
        let mut spec = Vec::with_capacity(dims.len() + b.inner());
        let mut extents = Vec::new();
        for &d in dims {
            if b.dims().contains(&d) {
                spec.push(SliceDim::All);
            } else {
                spec.push(SliceDim::Fixed);
                extents.push(self.extent(d)?);
            }
        }
        spec.extend(std::iter::repeat_n(SliceDim::All, b.inner()));
        Ok(acc(
            AccKind::Replicate {
                spec: SliceSpec { any_rank: 0, dims: spec },
                slix: tuple(extents, loc),
                array: Box::new(self.avar_term(b.arr(), loc)),
            },
            loc,
        ))
    }

    fn array_inner(&mut self, a: &OpenAcc) -> Result<ABind> {
        let loc = a.loc;
        match &a.kind {
            AccKind::Var(i) => self.abind_at(*i, loc),
            AccKind::Let(b, body) => {
                let v = self.let_bound(b)?;
                self.abinds.push(v);
                let r = self.array(body);
                self.abinds.pop();
                r
            }
            AccKind::Unit(x) => {
                let v = self.scalar(x)?;
                Ok(self.lifted_scalar(v))
            }
            // an array of the host: the same for every index of the context
            AccKind::Use(d) => {
                let arr = self.emit(acc(AccKind::Use(d.clone()), loc));
                Ok(ABind::Avoided { arr, rank: d.rank() })
            }
            AccKind::Generate { shape, f } => {
                let rank = f.params[0].shape_rank().unwrap_or(0);
                if !self.nests(shape) && !self.deps(shape, &HashMap::new()).is_empty() {
                    // an extent that depends on the context: irregular
                    return self.irregular(
                        Extent::Exp(shape),
                        rank,
                        |new| vec![SBind::Index(new.to_vec())],
                        &f.body,
                        loc,
                    );
                }
                let shape =
                    self.closed(shape, "a generate whose extent is computed by an array operation")?;
                let new = self.new_dims(shape, rank, loc);
                self.sbinds.push(SBind::Index(new.clone()));
                let r = self.scalar(&f.body);
                self.sbinds.pop();
                self.nest(r?, &new, loc)
            }
            AccKind::Map { f, array } => {
                let b = self.array(array)?;
                if b.is_irregular() {
                    let (ext, rank) = (Extent::Of(b.clone()), b.inner());
                    return self.irregular(
                        ext,
                        rank,
                        |new| vec![SBind::Elem { b, at: new.to_vec() }],
                        &f.body,
                        loc,
                    );
                }
                if let Some(f) = self.try_closed_fun(f)? {
                    // an element-wise function of the element alone: the
                    // same map over the lifted array (fused as a map)
                    let level = self
                        .emit(acc(AccKind::Map { f, array: Box::new(self.avar_term(b.arr(), loc)) }, loc));
                    return Ok(self.bind_result(level, b.dims(), b.inner()));
                }
                let new = self.dims_of(&b, loc);
                let at = union(b.dims(), &new);
                self.sbinds.push(SBind::Read { arr: b.arr(), at });
                let r = self.scalar(&f.body);
                self.sbinds.pop();
                self.nest(r?, &new, loc)
            }
            AccKind::ZipWith { f, a: x, b: y } => {
                let bx = self.array(x)?;
                let by = self.array(y)?;
                if bx.is_irregular() || by.is_irregular() {
                    let (ext, rank) = (Extent::Meet(bx.clone(), by.clone()), bx.inner());
                    let params = |new: &[usize]| {
                        vec![SBind::Elem { b: bx, at: new.to_vec() }, SBind::Elem { b: by, at: new.to_vec() }]
                    };
                    return self.irregular(ext, rank, params, &f.body, loc);
                }
                if let Some(f) = self.try_closed_fun(f)? {
                    // of the elements alone: the same zip of the lifted
                    // arrays, each replicated along the dimensions only the
                    // other depends on (fused as a zip, reading each once)
                    let dims = union(bx.dims(), by.dims());
                    let (ax, ay) = (self.expand_array(&bx, &dims, loc)?, self.expand_array(&by, &dims, loc)?);
                    let level = self.emit(acc(AccKind::ZipWith { f, a: Box::new(ax), b: Box::new(ay) }, loc));
                    return Ok(self.bind_result(level, &dims, bx.inner()));
                }
                let new: Vec<usize> = (0..bx.inner())
                    .map(|c| {
                        let (sx, sy) = (self.inner_shape(&bx, loc), self.inner_shape(&by, loc));
                        self.new_dim(prj(c, prim(PrimFun::Intersect, vec![sx, sy], loc), loc))
                    })
                    .collect();
                self.sbinds.push(SBind::Read { arr: bx.arr(), at: union(bx.dims(), &new) });
                self.sbinds.push(SBind::Read { arr: by.arr(), at: union(by.dims(), &new) });
                let r = self.scalar(&f.body);
                self.sbinds.truncate(self.sbinds.len() - 2);
                self.nest(r?, &new, loc)
            }
            AccKind::Backpermute { shape, f, array } => {
                let b = self.array(array)?;
                regular(&b, loc, "backpermute")?;
                let shape = self.closed(shape, "a backpermute whose extent depends on an enclosing function's argument (irregular nesting)")?;
                let rank = f.params[0].shape_rank().unwrap_or(0);
                let new = self.new_dims(shape, rank, loc);
                self.sbinds.push(SBind::Index(new.clone()));
                let r = self.backpermute_body(&b, &f.body, &new, loc);
                self.sbinds.pop();
                let (frame, body) = r?;
                self.generate_over(&frame, body, &new, loc)
            }
            AccKind::Slice { spec, array, slix } => {
                let b = self.array(array)?;
                regular(&b, loc, "slice")?;
                let sl = self.operand(slix)?;
                self.slice(b, sl, spec, loc)
            }
            AccKind::Replicate { spec, slix, array } => {
                let b = self.array(array)?;
                regular(&b, loc, "replicate")?;
                let slix = self.closed(slix, "a replicate whose extents depend on an enclosing function's argument (irregular nesting)")?;
                self.replicate(b, slix, spec, loc)
            }
            AccKind::Reshape { shape, array } => {
                let b = self.array(array)?;
                regular(&b, loc, "reshape")?;
                let rank =
                    match &shape.kind {
                        ExpKind::Tuple(xs) => xs.len(),
                        ExpKind::Shape { array } => self.abind_at(*array, loc)?.inner(),
                        _ => return Err(unsupported(
                            loc,
                            "a reshape inside a parallel function to a shape that is not written as a tuple",
                        )),
                    };
                let shape = self.closed(shape, "a reshape to an extent that depends on an enclosing function's argument (irregular nesting)")?;
                let dims = b.dims().to_vec();
                let mut comps: Vec<OpenExp> = dims.iter().map(|&d| self.extent(d)).collect::<Result<_>>()?;
                for c in 0..rank {
                    comps.push(prj(c, shape.clone(), loc));
                }
                let arr = self.emit(acc(
                    AccKind::Reshape {
                        shape: tuple(comps, loc),
                        array: Box::new(acc(AccKind::Var(self.avar(b.arr())), loc)),
                    },
                    loc,
                ));
                Ok(ABind::Lifted { arr, dims, inner: rank })
            }
            AccKind::Fold { f, seed, array } | AccKind::Scan { f, seed, array, .. } => {
                let name = a.op_name();
                let b = self.array(array)?;
                if let (ABind::Irregular { .. }, AccKind::Fold { .. }) = (&b, &a.kind) {
                    return self.fold_irregular(&b, f, seed.as_ref(), loc);
                }
                regular(&b, loc, name)?;
                let f = self.closed_fun(
                    f,
                    &format!("a {name} whose operator depends on an enclosing function's argument"),
                )?;
                let seed = match seed {
                    Some(z) => Some(self.closed(
                        z,
                        &format!("a {name} whose seed depends on an enclosing function's argument"),
                    )?),
                    None => None,
                };
                let arr = Box::new(acc(AccKind::Var(self.avar(b.arr())), loc));
                let (kind, inner) = match &a.kind {
                    AccKind::Fold { .. } => {
                        (AccKind::Fold { f, seed, array: arr }, b.inner().saturating_sub(1))
                    }
                    AccKind::Scan { dir, .. } => {
                        (AccKind::Scan { dir: *dir, f, seed, array: arr }, b.inner())
                    }
                    _ => unreachable!(),
                };
                let level = self.emit(acc(kind, loc));
                Ok(self.bind_result(level, b.dims(), inner))
            }
            AccKind::FoldSeg { f, seed, array, offsets } => {
                let b = self.array(array)?;
                regular(&b, loc, "a segmented fold")?;
                let o = self.array(offsets)?;
                let ABind::Avoided { arr: o, .. } = o else {
                    return Err(unsupported(
                        loc,
                        "segment offsets that depend on an enclosing function's argument",
                    ));
                };
                let f = self.closed_fun(
                    f,
                    "a segmented fold whose operator depends on an enclosing function's argument",
                )?;
                let seed = match seed {
                    Some(z) => Some(self.closed(
                        z,
                        "a segmented fold whose seed depends on an enclosing function's argument",
                    )?),
                    None => None,
                };
                let kind = AccKind::FoldSeg {
                    f,
                    seed,
                    array: Box::new(acc(AccKind::Var(self.avar(b.arr())), loc)),
                    offsets: Box::new(acc(AccKind::Var(self.avar(o)), loc)),
                };
                let level = self.emit(acc(kind, loc));
                Ok(self.bind_result(level, b.dims(), b.inner()))
            }
            AccKind::Permute { combine, defaults, index, source } => {
                self.permute(combine, defaults, index, source, loc)
            }
            AccKind::Acond { cond, then_, else_ } => self.acond(a, cond, then_, else_, loc),
            AccKind::Awhile { pred, body, init } => self.awhile(a, pred, body, init, loc),
            AccKind::Prj(c, t) => match self.outer_component(*c, t) {
                // an array of a tuple from outside the context: the same
                // for every index of the context, as a `use`
                Some((level, rank)) => {
                    let component = acc(AccKind::Prj(*c, Box::new(self.avar_term(level, loc))), loc);
                    Ok(ABind::Avoided { arr: self.emit(component), rank })
                }
                None => Err(unsupported(loc, "prj of a tuple of arrays computed inside a parallel function")),
            },
            _ => Err(unsupported(loc, format!("{} inside a parallel function", a.op_name()))),
        }
    }

    /// `acond c t e` inside a context (Note [Lifted conditionals]): each
    /// branch lifted over the elements that take it only, packed; the
    /// result an irregular array whose shape and elements at a context
    /// index are those of the branch that index took (the branches' shapes
    /// may differ).
    fn acond(&mut self, a: &OpenAcc, c: &OpenExp, t: &OpenAcc, f: &OpenAcc, loc: SrcLoc) -> Result<ABind> {
        let dims = self.acc_dims(a);
        let (split, branches) = self.branches(&dims, c, [t, f], loc, |this, branch, q| {
            let b = this.array(branch)?;
            regular(&b, loc, "an acond branch")?;
            let arr = this.expand_array(&b, &[q], loc)?;
            Ok(ABind::Lifted { arr: this.emit(arr), dims: vec![q], inner: b.inner() })
        })?;
        let flags = split.flags;
        let inner = branches[0].inner();
        let var = |level: usize, depth: usize| var_at(level, depth, loc);
        // the shape at a context index: its branch's (the same for all the
        // elements taking it)
        let flag_at = |this: &Lifter, ix: OpenExp| {
            e(ExpKind::Index { array: this.avar(flags), index: Box::new(ix) }, loc)
        };
        let pick = |flag: OpenExp, x: OpenExp, y: OpenExp| {
            e(ExpKind::Cond(Box::new(flag), Box::new(x), Box::new(y)), loc)
        };
        let sh = pick(
            flag_at(self, var(0, 1)),
            self.inner_shape(&branches[0], loc),
            self.inner_shape(&branches[1], loc),
        );
        let shape = std::rc::Rc::new(Elem {
            f: Fun { params: vec![EltTy::shape(dims.len())], body: sh.clone() },
            depth: self.adepth(),
        });
        let g = self.generate_frame(&dims, sh, loc)?;
        let shapes = self.emit(g);
        // the element at (context index, own index): levels 0 the index,
        // 1 the context index, 2 its position, 3 pos at it
        let k = dims.len();
        let ctx = tuple((0..k).map(|c| prj(c, var(0, 1), loc)).collect(), loc);
        let i = prim(PrimFun::ToIndex, vec![self.shape_of(&dims, loc)?, var(1, 2)], loc);
        let p = e(ExpKind::LinearIndex { array: self.avar(split.pos), index: Box::new(var(2, 3)) }, loc);
        let at = |this: &Lifter, b: &ABind, row: OpenExp| {
            let mut ix = vec![row];
            ix.extend((0..inner).map(|c| prj(k + c, var(0, 4), loc)));
            e(ExpKind::Index { array: this.avar(b.arr()), index: Box::new(tuple(ix, loc)) }, loc)
        };
        let body = pick(
            flag_at(self, var(1, 4)),
            at(self, &branches[0], var(3, 4)),
            at(self, &branches[1], prim(PrimFun::Sub, vec![var(2, 4), var(3, 4)], loc)),
        );
        let mut body = body;
        for b in [p, i, ctx] {
            body = e(ExpKind::Let(Box::new(b), Box::new(body)), loc);
        }
        let elem = std::rc::Rc::new(Elem {
            f: Fun { params: vec![EltTy::shape(k + inner)], body },
            depth: self.adepth(),
        });
        Ok(ABind::Irregular { shapes, shape, elem, dims, inner })
    }

    /// The frame and element of a backpermute of `b` by the index function
    /// `f` (whose parameter is bound to the new dimensions).
    fn backpermute_body(
        &mut self,
        b: &ABind,
        f: &OpenExp,
        new: &[usize],
        loc: SrcLoc,
    ) -> Result<(Vec<usize>, OpenExp)> {
        let ix = self.operand(f)?;
        let frame = union(&union(&self.operand_dims(&ix), b.dims()), new);
        let done = HashMap::new();
        let fx = Fx { frame: &frame, depth: 1, k: 0, done: &done };
        let index = self.operand_exp(&ix, &fx)?;
        let body = self.read(b, index, &fx, loc)?;
        Ok((frame, body))
    }

    /// A producer whose extent depends on the context (Note [Irregular
    /// arrays]): its shape at each context index, the offsets of its
    /// elements (a scan of the sizes), and its elements, each computed by
    /// `body` (with the parameters `params` gives for the new dimensions)
    /// in one generate over all of them.
    fn irregular(
        &mut self,
        extent: Extent,
        rank: usize,
        params: impl FnOnce(&[usize]) -> Vec<SBind>,
        body: &OpenExp,
        loc: SrcLoc,
    ) -> Result<ABind> {
        if self.nests(body) {
            return Err(unsupported(
                loc,
                "an array computed inside an array whose extent depends on an enclosing function's argument",
            ));
        }
        let no = HashMap::new();
        let shape_dims = match &extent {
            Extent::Exp(x) => self.deps(x, &no),
            Extent::Of(b) => b.dims().to_vec(),
            Extent::Meet(a, b) => union(a.dims(), b.dims()),
        };
        let new: Vec<usize> = (0..rank).map(|_| self.new_irregular_dim()).collect();
        let ps = params(&new);
        let np = ps.len();
        self.sbinds.extend(ps);
        let body_dims: Vec<usize> = self.deps(body, &no).into_iter().filter(|d| !new.contains(d)).collect();
        let ps: Vec<SBind> = self.sbinds.split_off(self.sbinds.len() - np);
        let dims = union(&shape_dims, &body_dims);
        // the shape at each context index
        let fx = Fx { frame: &dims, depth: 1, k: 0, done: &no };
        let sh = match &extent {
            Extent::Exp(x) => self.exp(x, &fx)?,
            Extent::Of(b) => self.shape_at(b, &fx, loc)?,
            Extent::Meet(a, b) => {
                prim(PrimFun::Intersect, vec![self.shape_at(a, &fx, loc)?, self.shape_at(b, &fx, loc)?], loc)
            }
        };
        // (each row's shape checked, as the operation checks its own: a
        // negative extent is the operation's error)
        let sh = prim(PrimFun::ShapeCheck, vec![sh], loc);
        let shape = std::rc::Rc::new(Elem {
            f: Fun { params: vec![EltTy::shape(dims.len())], body: sh.clone() },
            depth: self.adepth(),
        });
        let g = self.generate_frame(&dims, sh, loc)?;
        let shapes = self.emit(g);
        // the element at an index of the frame `dims ++ new`
        let frame = union(&dims, &new);
        self.sbinds.extend(ps);
        let fx = Fx { frame: &frame, depth: 1, k: 0, done: &no };
        let element = self.exp(body, &fx);
        self.sbinds.truncate(self.sbinds.len() - np);
        let f = Fun { params: vec![EltTy::shape(frame.len())], body: element? };
        let elem = std::rc::Rc::new(Elem { f, depth: self.adepth() });
        Ok(ABind::Irregular { shapes, shape, elem, dims, inner: rank })
    }

    /// An irregular array's element at `index` (the frame index, an
    /// expression of the function being written).
    fn apply_elem(&self, elem: &Elem, index: OpenExp, loc: SrcLoc) -> OpenExp {
        let mut body = elem.f.body.clone();
        let by = self.adepth() - elem.depth;
        if by > 0 {
            crate::avars::exp_arrays_shift(&mut body, by);
        }
        e(ExpKind::Let(Box::new(index), Box::new(body)), loc)
    }

    /// `fold` with a seed of an irregular vector per context index: a
    /// generate over the context whose element folds its row in a loop
    /// (Note [Irregular arrays]).
    fn fold_loop(&mut self, b: &ABind, f: Fun, seed: OpenExp, loc: SrcLoc) -> Result<ABind> {
        let ABind::Irregular { elem, dims, shape, .. } = b else {
            return Err(Error::Internal("lifting: a loop fold of a regular array".into()));
        };
        let var = |level: usize, depth: usize| var_at(level, depth, loc);
        let i64t = EltTy::Scalar(ScalarTy::I64);
        let elt = f.params[0].clone();
        let state = EltTy::Tuple(vec![i64t, elt]);
        // levels: 0 the context index, 1 the row's length, 2 the state,
        // 3 j, 4 the accumulator, 5 the element, then f's body
        let n = prj(0, self.apply_elem(shape, var(0, 1), loc), loc);
        let cond = Fun {
            params: vec![state.clone()],
            body: prim(PrimFun::Lt, vec![prj(0, var(2, 3), loc), var(1, 3)], loc),
        };
        let mut at: Vec<OpenExp> = (0..dims.len()).map(|c| prj(c, var(0, 5), loc)).collect();
        at.push(var(3, 5));
        let element = self.apply_elem(elem, tuple(at, loc), loc);
        let step_body = tuple(
            vec![prim(PrimFun::Add, vec![var(3, 6), e(ExpKind::Const(ScalarVal::I64(1)), loc)], loc), f.body],
            loc,
        );
        let step = e(
            ExpKind::Let(
                Box::new(prj(0, var(2, 3), loc)),
                Box::new(e(
                    ExpKind::Let(
                        Box::new(prj(1, var(2, 4), loc)),
                        Box::new(e(ExpKind::Let(Box::new(element), Box::new(step_body)), loc)),
                    ),
                    loc,
                )),
            ),
            loc,
        );
        let step = Fun { params: vec![state], body: step };
        let init = tuple(vec![e(ExpKind::Const(ScalarVal::I64(0)), loc), seed], loc);
        let folded = prj(
            1,
            e(ExpKind::While { cond: Box::new(cond), body: Box::new(step), init: Box::new(init) }, loc),
            loc,
        );
        let body = e(ExpKind::Let(Box::new(n), Box::new(folded)), loc);
        let g = self.generate_frame(dims, body, loc)?;
        let arr = self.emit(g);
        Ok(ABind::Lifted { arr, dims: dims.clone(), inner: 0 })
    }

    /// The elements of an irregular array, in row-major order row after
    /// row, and the offsets of the rows (a scan of their sizes), for the
    /// operations that need them in memory.
    fn materialise_irregular(&mut self, b: &ABind, loc: SrcLoc) -> Result<(usize, usize)> {
        let ABind::Irregular { shapes, elem, dims, inner: rank, .. } = b else {
            return Err(Error::Internal("lifting: materialising a regular array".into()));
        };
        let (shapes, rank) = (*shapes, *rank);
        // the offsets: a scan of the sizes in row-major order
        let size = |this: &Lifter| -> Result<OpenExp> {
            Ok(prim(PrimFun::ShapeSize, vec![this.shape_of(dims, loc)?], loc))
        };
        let read_shape =
            e(ExpKind::Index { array: self.avar(shapes), index: Box::new(e(ExpKind::Var(0), loc)) }, loc);
        let offsets = self.running_counts(dims, prim(PrimFun::ShapeSize, vec![read_shape], loc), loc)?;
        let i64t = EltTy::Scalar(ScalarTy::I64);
        // the elements: position p is in segment seg, the last whose
        // offset is at most p (a binary search: empty segments share
        // their offset with the next)
        let var = |level: usize, depth: usize| var_at(level, depth, loc);
        let off_at = |this: &Lifter, i: OpenExp| {
            e(ExpKind::LinearIndex { array: this.avar(offsets), index: Box::new(i) }, loc)
        };
        let total = off_at(self, size(self)?);
        let pair = EltTy::Tuple(vec![i64t.clone(), i64t.clone()]);
        // levels: 0 p, 1 pp; in the loop functions 2 the state, 3 mid
        let cond = Fun {
            params: vec![pair.clone()],
            body: prim(
                PrimFun::Gt,
                vec![
                    prim(PrimFun::Sub, vec![prj(1, var(2, 3), loc), prj(0, var(2, 3), loc)], loc),
                    e(ExpKind::Const(ScalarVal::I64(1)), loc),
                ],
                loc,
            ),
        };
        let mid = prim(
            PrimFun::Quot,
            vec![
                prim(PrimFun::Add, vec![prj(0, var(2, 3), loc), prj(1, var(2, 3), loc)], loc),
                e(ExpKind::Const(ScalarVal::I64(2)), loc),
            ],
            loc,
        );
        let step = e(
            ExpKind::Cond(
                Box::new(prim(PrimFun::Le, vec![off_at(self, var(3, 4)), var(1, 4)], loc)),
                Box::new(tuple(vec![var(3, 4), prj(1, var(2, 4), loc)], loc)),
                Box::new(tuple(vec![prj(0, var(2, 4), loc), var(3, 4)], loc)),
            ),
            loc,
        );
        let step = Fun { params: vec![pair], body: e(ExpKind::Let(Box::new(mid), Box::new(step)), loc) };
        let init = tuple(vec![e(ExpKind::Const(ScalarVal::I64(0)), loc), size(self)?], loc);
        let search = prj(
            0,
            e(ExpKind::While { cond: Box::new(cond), body: Box::new(step), init: Box::new(init) }, loc),
            loc,
        );
        // levels: 2 seg, 3 the context index, 4 the shape, 5 the index in
        // it, 6 the frame's index
        let ctx = prim(PrimFun::FromIndex, vec![self.shape_of(dims, loc)?, var(2, 3)], loc);
        let own_shape = e(ExpKind::LinearIndex { array: self.avar(shapes), index: Box::new(var(2, 4)) }, loc);
        let own = prim(
            PrimFun::FromIndex,
            vec![var(4, 5), prim(PrimFun::Sub, vec![var(1, 5), off_at(self, var(2, 5))], loc)],
            loc,
        );
        let mut comps: Vec<OpenExp> = (0..dims.len()).map(|c| prj(c, var(3, 6), loc)).collect();
        comps.extend((0..rank).map(|c| prj(c, var(5, 6), loc)));
        let mut element = self.apply_elem(elem, tuple(comps, loc), loc);
        for b in [own, own_shape, ctx, search, prj(0, var(0, 1), loc)].into_iter() {
            element = e(ExpKind::Let(Box::new(b), Box::new(element)), loc);
        }
        let vals = self.emit(generate(tuple(vec![total], loc), 1, element, loc));
        Ok((offsets, vals))
    }

    /// The lifted form of a let-bound array term: shared (sharing
    /// recovery binds only those), so an irregular one whose elements are
    /// costly to compute again at every read is materialised (Note
    /// [Irregular arrays]).
    fn let_bound(&mut self, b: &OpenAcc) -> Result<ABind> {
        let v = self.array(b)?;
        if costly_irregular(&v) {
            self.manifest_irregular(v, b.loc)
        } else {
            Ok(v)
        }
    }

    /// An irregular array whose elements are read from memory: its
    /// elements materialised row after row (`materialise_irregular`), and
    /// its element at the frame index `dims ++ ix` the value at its row's
    /// offset plus `ix`'s position in the row (Note [Irregular arrays]).
    fn manifest_irregular(&mut self, b: ABind, loc: SrcLoc) -> Result<ABind> {
        let (offsets, vals) = self.materialise_irregular(&b, loc)?;
        let ABind::Irregular { shapes, shape, dims, inner, .. } = b else {
            return Err(Error::Internal("lifting: materialising a regular array".into()));
        };
        let at = e(ExpKind::Var(0), loc);
        let ctx = tuple((0..dims.len()).map(|c| prj(c, at.clone(), loc)).collect(), loc);
        let own = tuple((0..inner).map(|c| prj(dims.len() + c, at.clone(), loc)).collect(), loc);
        let row = prim(PrimFun::ToIndex, vec![self.shape_of(&dims, loc)?, ctx.clone()], loc);
        let row_shape = e(ExpKind::Index { array: self.avar(shapes), index: Box::new(ctx) }, loc);
        let start = e(ExpKind::LinearIndex { array: self.avar(offsets), index: Box::new(row) }, loc);
        let pos = prim(PrimFun::Add, vec![start, prim(PrimFun::ToIndex, vec![row_shape, own], loc)], loc);
        let body = e(ExpKind::LinearIndex { array: self.avar(vals), index: Box::new(pos) }, loc);
        let f = Fun { params: vec![EltTy::shape(dims.len() + inner)], body };
        let elem = std::rc::Rc::new(Elem { f, depth: self.adepth() });
        Ok(ABind::Irregular { shapes, shape, elem, dims, inner })
    }

    /// `fold` of an irregular vector per context index: a segmented fold
    /// of its elements, one segment per context index.
    fn fold_irregular(&mut self, b: &ABind, f: &Fun, seed: Option<&OpenExp>, loc: SrcLoc) -> Result<ABind> {
        let ABind::Irregular { dims, inner: 1, .. } = b else {
            return Err(unsupported(loc, "a fold of an irregular array of more than one dimension"));
        };
        let f = self.closed_fun(f, "a fold whose operator depends on an enclosing function's argument")?;
        let seed = match seed {
            Some(z) => Some(self.closed(z, "a fold whose seed depends on an enclosing function's argument")?),
            None => None,
        };
        if let Some(z) = seed {
            return self.fold_loop(b, f, z, loc);
        }
        let (offsets, vals) = self.materialise_irregular(b, loc)?;
        let (offsets, vals, dims) = (&offsets, &vals, dims);
        let folded = self.emit(acc(
            AccKind::FoldSeg {
                f,
                seed,
                array: Box::new(acc(AccKind::Var(self.avar(*vals)), loc)),
                offsets: Box::new(acc(AccKind::Var(self.avar(*offsets)), loc)),
            },
            loc,
        ));
        let shape = self.shape_of(dims, loc)?;
        let arr = self.emit(acc(
            AccKind::Reshape { shape, array: Box::new(acc(AccKind::Var(self.avar(folded)), loc)) },
            loc,
        ));
        Ok(ABind::Lifted { arr, dims: dims.clone(), inner: 0 })
    }

    fn bind_result(&self, arr: usize, dims: &[usize], inner: usize) -> ABind {
        if dims.is_empty() {
            ABind::Avoided { arr, rank: inner }
        } else {
            ABind::Lifted { arr, dims: dims.to_vec(), inner }
        }
    }

    /// A lifted scalar as a lifted array of rank 0.
    fn lifted_scalar(&self, v: SBind) -> ABind {
        match v {
            SBind::Read { arr, at } => self.bind_result(arr, &at, 0),
            // (`scalar` always returns reads)
            _ => ABind::Avoided { arr: 0, rank: 0 },
        }
    }

    /// The array computed by a function over the new dimensions `new`,
    /// whose body's lifted value is `v`: an array of the dimensions it
    /// depends on outside and all of `new`.
    fn nest(&mut self, v: SBind, new: &[usize], loc: SrcLoc) -> Result<ABind> {
        let outside: Vec<usize> = self.sbind_dims(&v).into_iter().filter(|d| !new.contains(d)).collect();
        let frame = union(&outside, new);
        let arr = self.expand(v, &frame, loc)?;
        Ok(self.bind_result(arr, &outside, new.len()))
    }

    /// `generate` over `frame` (the dimensions outside, then `new`) of an
    /// element already written as a function of it.
    fn generate_over(&mut self, frame: &[usize], body: OpenExp, new: &[usize], loc: SrcLoc) -> Result<ABind> {
        let g = self.generate_frame(frame, body, loc)?;
        let arr = self.emit(g);
        let outside: Vec<usize> = frame.iter().copied().filter(|d| !new.contains(d)).collect();
        Ok(self.bind_result(arr, &outside, new.len()))
    }

    fn slice(&mut self, b: ABind, slix: Operand, spec: &SliceSpec, loc: SrcLoc) -> Result<ABind> {
        let src = self.inner_shape(&b, loc);
        let dims = std::iter::repeat_n(&SliceDim::All, spec.any_rank).chain(&spec.dims);
        let mut new = Vec::new();
        for (k, d) in dims.clone().enumerate() {
            if let SliceDim::All = d {
                new.push(self.new_dim(prj(k, src.clone(), loc)));
            }
        }
        let frame = union(&union(b.dims(), &self.operand_dims(&slix)), &new);
        let done = HashMap::new();
        let fx = Fx { frame: &frame, depth: 1, k: 0, done: &done };
        // let s = slix in b ! (the full index)
        let inside = Fx { frame: &frame, depth: 2, k: 0, done: &done };
        let s = self.operand_exp(&slix, &fx)?;
        let (mut comps, mut fixed, mut all) = (Vec::new(), 0, 0);
        for d in dims {
            match d {
                SliceDim::All => {
                    comps.push(inside.dim(new[all], loc)?);
                    all += 1;
                }
                SliceDim::Fixed => {
                    comps.push(prj(fixed, e(ExpKind::Var(0), loc), loc));
                    fixed += 1;
                }
            }
        }
        let read = self.read(&b, tuple(comps, loc), &inside, loc)?;
        let body = e(ExpKind::Let(Box::new(s), Box::new(read)), loc);
        self.generate_over(&frame, body, &new, loc)
    }

    fn replicate(&mut self, b: ABind, slix: OpenExp, spec: &SliceSpec, loc: SrcLoc) -> Result<ABind> {
        let src = self.inner_shape(&b, loc);
        let dims: Vec<&SliceDim> =
            std::iter::repeat_n(&SliceDim::All, spec.any_rank).chain(&spec.dims).collect();
        let (mut new, mut keep) = (Vec::new(), Vec::new());
        let (mut s, mut fixed) = (0, 0);
        for d in &dims {
            match d {
                SliceDim::All => {
                    let dim = self.new_dim(prj(s, src.clone(), loc));
                    new.push(dim);
                    keep.push(dim);
                    s += 1;
                }
                SliceDim::Fixed => {
                    new.push(self.new_dim(prj(fixed, slix.clone(), loc)));
                    fixed += 1;
                }
            }
        }
        let frame = union(b.dims(), &new);
        let done = HashMap::new();
        let fx = Fx { frame: &frame, depth: 1, k: 0, done: &done };
        let ix = tuple(fx.index(&keep, loc)?, loc);
        let body = self.read(&b, ix, &fx, loc)?;
        self.generate_over(&frame, body, &new, loc)
    }

    fn permute(
        &mut self,
        combine: &Fun,
        defaults: &OpenAcc,
        index: &Fun,
        source: &OpenAcc,
        loc: SrcLoc,
    ) -> Result<ABind> {
        let combine = self.closed_fun(
            combine,
            "a permute whose combining function depends on an enclosing function's argument",
        )?;
        let d = self.array(defaults)?;
        let s = self.array(source)?;
        regular(&d, loc, "permute")?;
        regular(&s, loc, "permute")?;
        let new = self.dims_of(&s, loc);
        self.sbinds.push(SBind::Index(new.clone()));
        let r = self.permute_with(combine, &d, &s, &index.body, &new, loc);
        self.sbinds.pop();
        r
    }

    /// `permute` of lifted arrays, the index function's parameter bound to
    /// the source's own dimensions `new`: one permute over the outside
    /// dimensions, each combining into its own part of the defaults.
    fn permute_with(
        &mut self,
        combine: Fun,
        d: &ABind,
        s: &ABind,
        index: &OpenExp,
        new: &[usize],
        loc: SrcLoc,
    ) -> Result<ABind> {
        let ix = self.operand(index)?;
        let ix_outside: Vec<usize> =
            self.operand_dims(&ix).into_iter().filter(|x| !new.contains(x)).collect();
        let outside = union(&union(d.dims(), s.dims()), &ix_outside);
        // the defaults, over the outside dimensions and their own
        let dnew = self.dims_of(d, loc);
        let dframe = union(&outside, &dnew);
        let done = HashMap::new();
        let dfx = Fx { frame: &dframe, depth: 1, k: 0, done: &done };
        let dix = tuple(dfx.index(&dnew, loc)?, loc);
        let dbody = self.read(d, dix, &dfx, loc)?;
        let g = self.generate_frame(&dframe, dbody, loc)?;
        let defaults = self.emit(g);
        // the source, over the outside dimensions and its own
        let sframe = union(&outside, new);
        let sfx = Fx { frame: &sframe, depth: 1, k: 0, done: &done };
        let six = tuple(sfx.index(new, loc)?, loc);
        let sbody = self.read(s, six, &sfx, loc)?;
        let source = self.generate_frame(&sframe, sbody, loc)?;
        // the index function: (b, t) at the source's index, and the
        // outside dimensions in front of `t`
        let r = self.operand_exp(&ix, &sfx)?;
        let inside = Fx { frame: &sframe, depth: 2, k: 0, done: &done };
        let mut target = inside.index(&outside, loc)?;
        for c in 0..d.inner() {
            target.push(prj(c, prj(1, e(ExpKind::Var(0), loc), loc), loc));
        }
        let pair = tuple(vec![prj(0, e(ExpKind::Var(0), loc), loc), tuple(target, loc)], loc);
        let index = Fun {
            params: vec![EltTy::shape(sframe.len())],
            body: e(ExpKind::Let(Box::new(r), Box::new(pair)), loc),
        };
        let arr = self.emit(acc(
            AccKind::Permute {
                combine,
                defaults: Box::new(acc(AccKind::Var(self.avar(defaults)), loc)),
                index,
                source: Box::new(source),
            },
            loc,
        ));
        Ok(self.bind_result(arr, &outside, d.inner()))
    }
}

/// The extent of an irregular producer: a shape expression of the
/// context, or that of a bound array, or the intersection of two.
enum Extent<'s> {
    Exp(&'s OpenExp),
    Of(ABind),
    Meet(ABind, ABind),
}

/// Operations not lifted for irregular arrays yet.
fn regular(b: &ABind, loc: SrcLoc, op: &str) -> Result<()> {
    if b.is_irregular() {
        return Err(unsupported(
            loc,
            format!("{op} of an array whose extent depends on an enclosing function's argument"),
        ));
    }
    Ok(())
}

fn is_empty_tuple(x: &OpenExp) -> bool {
    matches!(&x.kind, ExpKind::Tuple(xs) if xs.is_empty())
}

/// A scalar operand of a lifted operation (a slice index, an index
/// function's result): computed where it is used when it computes no
/// array, else lifted to a value of its own.
enum Operand<'s> {
    InPlace(&'s OpenExp),
    Lifted(SBind),
}

/// Which elements of some dimensions take a branch (or still run): their
/// flags, and `pos`, the running counts of the set ones
/// (`Lifter::flag_counts`).
#[derive(Clone, Copy)]
struct Split {
    flags: usize,
    pos: usize,
}

/// The elements a branch or a loop step computes, packed as a new
/// dimension: those at the positions of the vector at a level
/// (`Lifter::pack`), or all of them, in row-major order (Note [Lifted
/// loops]: a step while every element runs).
#[derive(Clone, Copy)]
enum Sel {
    Packed(usize),
    All,
}

/// How many scalar and array binders a subterm is under, inside the term
/// being looked at.
#[derive(Clone, Copy, Default)]
struct Local {
    s: usize,
    a: usize,
}

impl Local {
    fn scalars(self, n: usize) -> Local {
        Local { s: self.s + n, a: self.a }
    }
    fn arrays(self, n: usize) -> Local {
        Local { s: self.s, a: self.a + n }
    }
}

/// Whether an array term has the shape of the arrays its environment
/// marks (`same`, innermost last), whatever their elements: what an
/// `awhile`'s body must keep to be lifted (a map, a zip of two such
/// arrays, a generate or backpermute to the shape of one, a permute into
/// one, a stencil of one, either branch of an `acond`).
fn keeps_shape(a: &OpenAcc, same: &mut Vec<bool>) -> bool {
    let marked = |i: usize, same: &Vec<bool>| same.len().checked_sub(i + 1).is_some_and(|l| same[l]);
    let shape_of_marked =
        |x: &OpenExp, same: &Vec<bool>| matches!(x.kind, ExpKind::Shape { array } if marked(array, same));
    match &a.kind {
        AccKind::Var(i) => marked(*i, same),
        AccKind::Let(b, body) => {
            let kept = keeps_shape(b, same);
            same.push(kept);
            let r = keeps_shape(body, same);
            same.pop();
            r
        }
        AccKind::Map { array, .. } => keeps_shape(array, same),
        AccKind::ZipWith { a, b, .. } => keeps_shape(a, same) && keeps_shape(b, same),
        AccKind::Generate { shape, .. } | AccKind::Backpermute { shape, .. } => shape_of_marked(shape, same),
        AccKind::Permute { defaults, .. } => keeps_shape(defaults, same),
        AccKind::Stencil { args, .. } => args.first().is_some_and(|s| keeps_shape(&s.array, same)),
        AccKind::Acond { then_, else_, .. } => keeps_shape(then_, same) && keeps_shape(else_, same),
        _ => false,
    }
}

/// An irregular array whose element is not index arithmetic (fusion's
/// cost rule, with any number of reads): worth materialising where it is
/// read more than once.
fn costly_irregular(b: &ABind) -> bool {
    matches!(b, ABind::Irregular { elem, .. } if !crate::fusion::cheap(&elem.f.body, usize::MAX))
}

/// Whether the array variable `var` of scalar term `e` may be read more
/// than once: read in two places, or in one inside a scalar loop or an
/// array term nested in `e` (which runs once per element of its
/// operation). Stops at the second read found.
fn read_repeatedly(e: &OpenExp, var: usize) -> bool {
    let mut n = 0;
    exp_reads(e, var, false, &mut n);
    n >= 2
}

fn exp_reads(e: &OpenExp, var: usize, repeated: bool, n: &mut usize) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        if *n >= 2 {
            return;
        }
        match &e.kind {
            ExpKind::Index { array, .. } | ExpKind::LinearIndex { array, .. } if *array == var => {
                *n += if repeated { 2 } else { 1 };
            }
            ExpKind::While { .. } => {
                each_child(e, |c| exp_reads(c, var, true, n));
                return;
            }
            ExpKind::ALet(a, body) => {
                acc_reads(a, var, n);
                exp_reads(body, var + 1, repeated, n);
                return;
            }
            _ => {}
        }
        each_child(e, |c| exp_reads(c, var, repeated, n));
    })
}

/// `exp_reads` in an array term nested in scalar code: any use counts as
/// repeated.
fn acc_reads(a: &OpenAcc, var: usize, n: &mut usize) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        if *n >= 2 {
            return;
        }
        if let AccKind::Var(k) = a.kind {
            *n += if k == var { 2 } else { 0 };
            return;
        }
        each_exp(a, |x| exp_reads(x, var, true, n));
        match &a.kind {
            AccKind::Let(b, body) => {
                acc_reads(b, var, n);
                acc_reads(body, var + 1, n);
            }
            AccKind::Awhile { pred, body, init } => {
                acc_reads(&pred.body, var + 1, n);
                acc_reads(&body.body, var + 1, n);
                acc_reads(init, var, n);
            }
            AccKind::Foreign { fallback, arg, .. } => {
                if let Some(fallback) = fallback {
                    acc_reads(&fallback.body, var + 1, n);
                }
                acc_reads(arg, var, n);
            }
            _ => visit::acc_children(a).into_iter().for_each(|c| acc_reads(c, var, n)),
        }
    })
}

/// The scalar variable a term is, if it is one.
fn var_of(t: &OpenExp) -> Option<usize> {
    match t.kind {
        ExpKind::Var(k) => Some(k),
        _ => None,
    }
}

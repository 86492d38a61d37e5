//! The terms of the IR: array computations (`OpenAcc`) and scalar
//! expressions (`OpenExp`), first order, with typed de Bruijn variables.
//!
//! Note [Two environments]
//! There are two variable environments, as in Accelerate's `OpenAcc aenv`
//! and `OpenExp env aenv`. Array variables are bound by array `Let`, by
//! `AFun` (the parameters of a compiled program and of `awhile`'s
//! functions) and are referred to by `AccKind::Var` and by the array-reading
//! scalar terms (`Index`, `LinearIndex`, `Shape`). Scalar variables are bound
//! by scalar `Let` and by `Fun` parameters. Every scalar expression embedded
//! in an array term starts with an empty scalar environment: scalar code
//! never refers to a variable of another array operation's function.
//!
//! The one exception is nested data parallelism (Note [Nested array
//! terms]): an array term bound by `ExpKind::ALet` inside scalar code sees
//! the scalar variables in scope there.
//!
//! Index 0 is the innermost binder. A `Fun` with parameters `[a, b]` binds
//! `a` first, so in its body `b` is variable 0 and `a` variable 1.

use accelerate_base::array::{ArrayData, ArraysTy, EltTy, ScalarVal, SliceSpec};
use accelerate_base::error::SrcLoc;
pub use accelerate_base::foreign::ForeignAcc;
use std::sync::Arc;

pub use super::prim::PrimFun;

/// A scalar expression.
#[derive(Debug)]
pub struct OpenExp {
    pub kind: ExpKind,
    pub loc: SrcLoc,
}

#[derive(Clone, Debug)]
pub enum ExpKind {
    /// `let x = bound in body`; `body` sees `x` as variable 0.
    Let(Box<OpenExp>, Box<OpenExp>),
    Var(usize),
    Const(ScalarVal),
    Tuple(Vec<OpenExp>),
    /// Component `i` of a tuple.
    Prj(usize, Box<OpenExp>),
    Prim(PrimFun, Vec<OpenExp>),
    /// `if c then t else e`; only the branch taken is evaluated.
    Cond(Box<OpenExp>, Box<OpenExp>, Box<OpenExp>),
    /// Iterate `body` from `init` while `cond` holds.
    While {
        cond: Box<Fun>,
        body: Box<Fun>,
        init: Box<OpenExp>,
    },
    /// The element of array variable `array` at a multidimensional index.
    Index {
        array: usize,
        index: Box<OpenExp>,
    },
    /// The element of array variable `array` at a row-major position.
    LinearIndex {
        array: usize,
        index: Box<OpenExp>,
    },
    /// The shape of array variable `array`.
    Shape {
        array: usize,
    },
    /// `let a = array in body` for an array computed inside scalar code:
    /// nested data parallelism (Note [Nested array terms]). `body` sees the
    /// array as array variable 0; the array term sees the scalar
    /// variables in scope here. Only sharing recovery's output has these:
    /// the lifting transformation (`opt::lift`) removes every one.
    ALet(Box<OpenAcc>, Box<OpenExp>),
}

/// A scalar function: its parameters' types and its body.
#[derive(Clone, Debug)]
pub struct Fun {
    pub params: Vec<EltTy>,
    pub body: OpenExp,
}

/// An array computation.
#[derive(Debug)]
pub struct OpenAcc {
    pub kind: AccKind,
    pub loc: SrcLoc,
}

/// Direction of a scan along the innermost dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    Left,
    Right,
}

#[derive(Clone, Debug)]
pub enum AccKind {
    Let(Box<OpenAcc>, Box<OpenAcc>),
    Var(usize),
    Tuple(Vec<OpenAcc>),
    Prj(usize, Box<OpenAcc>),
    /// The arrays of the components of an array of tuples, as a tuple of
    /// arrays of its shape: struct-of-arrays storage makes it a move. The
    /// clustering phase's multi-output kernels compute a tuple per element
    /// and unzip it (Note [Multi-output kernels] in `opt/cluster`).
    Unzip(Box<OpenAcc>),
    /// An array supplied by the host.
    Use(Arc<ArrayData>),
    /// A rank-0 array of one value.
    Unit(OpenExp),
    Reshape {
        shape: OpenExp,
        array: Box<OpenAcc>,
    },
    Generate {
        shape: OpenExp,
        f: Fun,
    },
    Map {
        f: Fun,
        array: Box<OpenAcc>,
    },
    /// Over the intersection of the two shapes.
    ZipWith {
        f: Fun,
        a: Box<OpenAcc>,
        b: Box<OpenAcc>,
    },
    /// `f` maps an index of the result to an index of the source.
    Backpermute {
        shape: OpenExp,
        f: Fun,
        array: Box<OpenAcc>,
    },
    Replicate {
        spec: SliceSpec,
        slix: OpenExp,
        array: Box<OpenAcc>,
    },
    Slice {
        spec: SliceSpec,
        array: Box<OpenAcc>,
        slix: OpenExp,
    },
    /// Reduce the innermost dimension; without a seed (`fold1`) rows must
    /// not be empty.
    Fold {
        f: Fun,
        seed: Option<OpenExp>,
        array: Box<OpenAcc>,
    },
    /// A fold that also keeps what it reads: the argument's elements are
    /// pairs `(k, x)`, and the result is the pair of arrays `(map fst
    /// array, fold f seed (map snd array))`. The clustering phase's
    /// diagonal clusters (Note [Diagonal clusters] in `opt/cluster`): a
    /// producer written in the loop of a fold that consumes it.
    FoldKeep {
        f: Fun,
        seed: Option<OpenExp>,
        array: Box<OpenAcc>,
    },
    /// Reduce each segment of the innermost dimension: segment `i` of a row
    /// is its elements `offsets[i] .. offsets[i+1]`; `offsets` is a vector
    /// of `nseg + 1` non-decreasing positions from 0 to the row length.
    FoldSeg {
        f: Fun,
        seed: Option<OpenExp>,
        array: Box<OpenAcc>,
        offsets: Box<OpenAcc>,
    },
    /// Inclusive scans along the innermost dimension: with a seed the
    /// result row has one more element (`scanl`/`scanr`), without it the
    /// same length (`scanl1`/`scanr1`).
    Scan {
        dir: Direction,
        f: Fun,
        seed: Option<OpenExp>,
        array: Box<OpenAcc>,
    },
    /// Starting from `defaults`, each source element whose `index`
    /// function gives `(true, ix)` is combined into position `ix` as
    /// `combine(new, old)`.
    Permute {
        combine: Fun,
        defaults: Box<OpenAcc>,
        index: Fun,
        source: Box<OpenAcc>,
    },
    /// Each element of the result is `f` of the neighbourhood of the same
    /// index in each argument (one or two arrays, `stencil`/`stencil2`):
    /// `f` takes every point of the first pattern, then of the second, in
    /// the order of `StencilArg::offsets`. Two arguments must have one shape.
    Stencil {
        f: Fun,
        args: Vec<StencilArg>,
    },
    Acond {
        cond: OpenExp,
        then_: Box<OpenAcc>,
        else_: Box<OpenAcc>,
    },
    Awhile {
        pred: AFun,
        body: AFun,
        init: Box<OpenAcc>,
    },
    /// A call of a foreign function on the manifest arrays `arg` (a
    /// fusion barrier on both sides): a backend runs an implementation of
    /// `func` it has, and `fallback` (whose parameter is `arg`'s type and
    /// whose result is `func.result`) where it has none (sequences
    /// thesis §6.1.2, `Aforeign`). A call without a fallback is one every
    /// backend implements (`base::foreign::RuntimeImpl`: a collected
    /// sequence).
    Foreign {
        func: Arc<ForeignAcc>,
        fallback: Option<AFun>,
        arg: Box<OpenAcc>,
    },
    /// A delayed array (Note [Delayed arrays]): fusion's output, allowed
    /// only as the array argument of a consumer, which evaluates its
    /// elements where it reads them instead of reading memory.
    Delayed(DelayedArray),
}

/// A delayed array (Note [Delayed arrays]): the one representation of a
/// producer computed where it is read, shared by fusion's output
/// (`AccKind::Delayed`), the plan's kernel arguments
/// (`plan::Source::Delayed`) and every backend that reads them. Fusion's
/// working form (`trafo::fusion::Cunctation`) becomes one in
/// `Cunctation::into_arg` only.
#[derive(Clone, Debug)]
pub struct DelayedArray {
    pub shape: OpenExp,
    /// The element at a multidimensional index of `shape`.
    pub index: Fun,
    /// The element at a row-major position `0 .. size(shape)`.
    pub linear: Fun,
}

impl DelayedArray {
    /// Its rank: the rank of `index`'s parameter.
    pub fn rank(&self) -> usize {
        self.index.params.first().and_then(|p| p.shape_rank()).unwrap_or(0)
    }
}

// Note [Delayed arrays]
// Fusion (ICFP'13 §4, `trafo::fusion`) describes a producer by its shape and
// a function from an index to its element instead of an array in memory
// (Accelerate's `Delayed { extentD, indexD, linearIndexD }`). A consumer
// whose argument is `Delayed` embeds the producer in its own loop: a fold
// over a delayed `zip_with` reads both source arrays and multiplies as it
// accumulates, never writing the products. Both index functions describe
// the same elements; the linear one serves consumers that walk their
// argument in row-major order (every fold and scan), so that code
// generation need not turn a position into an index and back. The index
// functions read other arrays only through array variables, in the scope
// of the consumer; they check their reads as the operations they replace
// did (`PrimFun::BoundsCheck`). The consumers that take a delayed argument
// are `fold` (and `fold1`), `fold_seg`'s array, the scans, `permute`'s
// source and the stencils' arguments: `ir::verify` rejects one anywhere else.

/// What a stencil reads outside its array (Accelerate's `Boundary`).
#[derive(Clone, Debug)]
pub enum Boundary {
    /// The nearest element inside (coordinates clamped to the edge).
    Clamp,
    /// Reflected at the edge, the edge itself not repeated: `-1` reads `1`
    /// and `n` reads `n - 2` (NumPy's `reflect`).
    Mirror,
    /// Periodic: coordinates taken modulo the extent.
    Wrap,
    /// A constant (a closed expression).
    Constant(OpenExp),
    /// A function of the out-of-bounds index.
    Function(Fun),
}

/// One array a stencil reads: the pattern's (odd) extents per dimension,
/// outermost first, the boundary, and the array.
#[derive(Clone, Debug)]
pub struct StencilArg {
    pub extents: Vec<usize>,
    pub boundary: Boundary,
    pub array: Box<OpenAcc>,
}

impl StencilArg {
    /// The pattern's offsets from its centre, in row-major order: the order
    /// of the stencil function's parameters.
    pub fn offsets(&self) -> Vec<Vec<i64>> {
        pattern_offsets(&self.extents)
    }
}

/// The offsets from its centre of a pattern of these (odd) extents, in
/// row-major order.
pub fn pattern_offsets(extents: &[usize]) -> Vec<Vec<i64>> {
    let mut out = vec![vec![]];
    for &e in extents {
        let r = (e / 2) as i64;
        out = out
            .into_iter()
            .flat_map(|o: Vec<i64>| (-r..=r).map(move |d| [o.clone(), vec![d]].concat()))
            .collect();
    }
    out
}

/// An array function of one argument (variable 0 in its body).
#[derive(Clone, Debug)]
pub struct AFun {
    pub param: ArraysTy,
    pub body: Box<OpenAcc>,
}

/// A closed program: array parameters (the first parameter is bound
/// outermost) and a body.
#[derive(Clone, Debug)]
pub struct Program {
    pub params: Vec<ArraysTy>,
    pub body: OpenAcc,
}

impl OpenExp {
    pub fn new(kind: ExpKind, loc: SrcLoc) -> OpenExp {
        OpenExp { kind, loc }
    }
}

impl OpenAcc {
    pub fn new(kind: AccKind, loc: SrcLoc) -> OpenAcc {
        OpenAcc { kind, loc }
    }

    /// The kind, taken out (the node is left a placeholder).
    pub fn kind_owned(mut self) -> AccKind {
        std::mem::replace(&mut self.kind, AccKind::Var(0))
    }

    /// The operation's name, as written in the pretty printer.
    pub fn op_name(&self) -> &'static str {
        match &self.kind {
            AccKind::Let(..) => "let",
            AccKind::Var(_) => "var",
            AccKind::Tuple(_) => "tuple",
            AccKind::Prj(..) => "prj",
            AccKind::Unzip(_) => "unzip",
            AccKind::Use(_) => "use",
            AccKind::Unit(_) => "unit",
            AccKind::Reshape { .. } => "reshape",
            AccKind::Generate { .. } => "generate",
            AccKind::Map { .. } => "map",
            AccKind::ZipWith { .. } => "zip_with",
            AccKind::Backpermute { .. } => "backpermute",
            AccKind::Replicate { .. } => "replicate",
            AccKind::Slice { .. } => "slice",
            AccKind::Fold { seed: Some(_), .. } => "fold",
            AccKind::Fold { seed: None, .. } => "fold1",
            // named as the fold the user wrote (its errors are that fold's)
            AccKind::FoldKeep { seed: Some(_), .. } => "fold",
            AccKind::FoldKeep { seed: None, .. } => "fold1",
            AccKind::FoldSeg { seed: Some(_), .. } => "fold_seg",
            AccKind::FoldSeg { seed: None, .. } => "fold1_seg",
            AccKind::Scan { dir: Direction::Left, seed: Some(_), .. } => "scanl",
            AccKind::Scan { dir: Direction::Left, seed: None, .. } => "scanl1",
            AccKind::Scan { dir: Direction::Right, seed: Some(_), .. } => "scanr",
            AccKind::Scan { dir: Direction::Right, seed: None, .. } => "scanr1",
            AccKind::Permute { .. } => "permute",
            AccKind::Stencil { args, .. } if args.len() == 2 => "stencil2",
            AccKind::Stencil { .. } => "stencil",
            AccKind::Acond { .. } => "acond",
            AccKind::Awhile { .. } => "awhile",
            AccKind::Foreign { .. } => "foreign",
            AccKind::Delayed(_) => "delayed",
        }
    }
}

// Cloning recurses through the derived `Clone` of the kinds; these
// impls grow the stack when the term is deep (Note [Dropping deep terms]).
impl Clone for OpenExp {
    fn clone(&self) -> Self {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || OpenExp { kind: self.kind.clone(), loc: self.loc })
    }
}

impl Clone for OpenAcc {
    fn clone(&self) -> Self {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || OpenAcc { kind: self.kind.clone(), loc: self.loc })
    }
}

// Note [Nested array terms]
// A user may compute an array inside a scalar function, from the
// function's arguments (`generate(n, |i| dotp(slice(m, i), v).the())`):
// nested data parallelism (sequences thesis §2.1, ch.4). Sharing recovery
// represents it as it was written: `ExpKind::ALet(acc, body)` binds the
// array computed by `acc` as array variable 0 of `body`, at the point of
// the scalar code that reads it, and `acc`'s own scalar expressions and
// functions start from the scalar environment of that point (the
// function's parameters and lets), not from an empty one. Such a program
// is not flat: no backend runs it. The lifting transformation
// (`opt::lift`, the thesis' regularity-identifying flattening) turns each
// into flat array operations over one more dimension per enclosing
// parallel context, and the verifier rejects an `ALet` in every phase
// after it (`verify::verify_program`; `verify_nested_program` accepts
// them, for sharing recovery's output).

// Note [Dropping deep terms]
// A term can be nested as deeply as the user's program is long (a chain of
// 100 000 shared doublings is 100 000 nested lets), and the derived,
// recursive drop would overflow the stack of a small thread. These `Drop`
// implementations take the children out and drop them from an explicit
// stack instead.

fn take_exp_children(kind: &mut ExpKind, exps: &mut Vec<OpenExp>) {
    let mut fun = |f: Fun| exps.push(f.body);
    match std::mem::replace(kind, ExpKind::Var(0)) {
        ExpKind::Let(a, b) => exps.extend([*a, *b]),
        ExpKind::Var(_) | ExpKind::Const(_) | ExpKind::Shape { .. } => {}
        ExpKind::Tuple(es) | ExpKind::Prim(_, es) => exps.extend(es),
        ExpKind::Prj(_, t) => exps.push(*t),
        ExpKind::Cond(c, t, e) => exps.extend([*c, *t, *e]),
        ExpKind::While { cond, body, init } => {
            fun(*cond);
            fun(*body);
            exps.push(*init);
        }
        ExpKind::Index { index, .. } | ExpKind::LinearIndex { index, .. } => exps.push(*index),
        // (an array term is dropped by its own `Drop`, which is iterative)
        ExpKind::ALet(_, body) => exps.push(*body),
    }
}

impl Drop for OpenExp {
    fn drop(&mut self) {
        if matches!(self.kind, ExpKind::Var(_) | ExpKind::Const(_) | ExpKind::Shape { .. }) {
            return;
        }
        let mut stack = Vec::new();
        take_exp_children(&mut self.kind, &mut stack);
        while let Some(mut e) = stack.pop() {
            take_exp_children(&mut e.kind, &mut stack);
        }
    }
}

impl Drop for OpenAcc {
    fn drop(&mut self) {
        let mut stack = Vec::new();
        let take =
            |kind: &mut AccKind, accs: &mut Vec<OpenAcc>| match std::mem::replace(kind, AccKind::Var(0)) {
                AccKind::Let(a, b) => accs.extend([*a, *b]),
                AccKind::Tuple(ts) => accs.extend(ts),
                AccKind::Prj(_, t)
                | AccKind::Unzip(t)
                | AccKind::Reshape { array: t, .. }
                | AccKind::Map { array: t, .. }
                | AccKind::Backpermute { array: t, .. }
                | AccKind::Replicate { array: t, .. }
                | AccKind::Slice { array: t, .. }
                | AccKind::Fold { array: t, .. }
                | AccKind::FoldKeep { array: t, .. }
                | AccKind::Scan { array: t, .. } => accs.push(*t),
                AccKind::ZipWith { a, b, .. } => accs.extend([*a, *b]),
                AccKind::FoldSeg { array, offsets, .. } => accs.extend([*array, *offsets]),
                AccKind::Stencil { args, .. } => accs.extend(args.into_iter().map(|a| *a.array)),
                AccKind::Permute { defaults, source, .. } => accs.extend([*defaults, *source]),
                AccKind::Acond { then_, else_, .. } => accs.extend([*then_, *else_]),
                AccKind::Awhile { pred, body, init } => accs.extend([*pred.body, *body.body, *init]),
                AccKind::Foreign { fallback, arg, .. } => {
                    accs.extend(fallback.map(|f| *f.body));
                    accs.push(*arg);
                }
                _ => {}
            };
        if matches!(self.kind, AccKind::Var(_) | AccKind::Use(_)) {
            return;
        }
        take(&mut self.kind, &mut stack);
        while let Some(mut a) = stack.pop() {
            take(&mut a.kind, &mut stack);
        }
    }
}

//! The plan: what a fused program does, as a host program that launches
//! kernels (DESIGN.md §2, the "schedule" stage between fusion and code
//! generation). Every backend consumes a plan and nothing else of the
//! pipeline: the interpreter's plan runner evaluates its kernels with
//! scalar code (`backend::interp::plan`), the C-family backends write one
//! function group per kernel.
//!
//! A plan has two parts, as Futhark's `ImpCode` and Accelerate's
//! schedules do:
//!
//! - the **host program** (`Cmd`): let, variables, tuples, `use`, `unit`,
//!   `reshape`, `unzip`, `acond`, `awhile` and kernel launches, with the array
//!   variables of the IR (de Bruijn indices: Note [Two environments]);
//! - the **kernel specifications** (`Kernel`): for each launch, its
//!   skeleton (`Skeleton`: generate, fold, scan, fold_seg, permute,
//!   stencil) with its scalar functions, its arguments (`Arg`: an array
//!   variable, or a delayed array computed where it is read), the array
//!   variables it reads with their types, its result type and the user's
//!   source location, which its errors name.
//!
//! Kernels are numbered in the order the host program's text names them
//! (`k0`, `k1`, ...); each is launched from exactly one place. The
//! streaming loops, foreign calls and multi-output clusters of later
//! stages are further `Cmd`s and `Skeleton`s.
//!
//! Files: `schedule` (fused IR to plan), `rows` (the row groups: kernels
//! a backend may run row by row), `verify` (the plan verifier,
//! whose module doc lists the invariants), `pretty` (the stable text form
//! that `ACCELERATE_DUMP=plan`, `explain()` and the snapshot tests show).

pub mod in_place;
pub mod pretty;
pub mod rows;
mod schedule;
pub mod verify;

pub use schedule::schedule;

use accelerate_base::array::{ArrayData, ArrayTy, ArraysTy, EltTy};
use accelerate_base::error::SrcLoc;
use accelerate_ir::{
    self as ir, AccKind, Boundary, DelayedArray, Direction, ForeignAcc, Fun, OpenAcc, OpenExp,
};
use std::sync::Arc;

/// A scheduled program: its parameters (the first bound outermost), its
/// host program and its kernels.
#[derive(Clone, Debug)]
pub struct Program {
    pub params: Vec<ArraysTy>,
    pub body: Cmd,
    pub kernels: Vec<Kernel>,
    /// The type of the body's value.
    pub result: ArraysTy,
    /// Kernels a backend may run row by row (`rows`).
    pub row_groups: Vec<rows::RowGroup>,
}

/// A command of the host program.
#[derive(Debug)]
pub enum Cmd {
    /// `let`: the bound command's value is array variable 0 in the body;
    /// a binding whose evaluation fails fails only its uses (Note
    /// [Deferred errors]).
    Let(Box<Cmd>, Box<Cmd>),
    Var(usize),
    Tuple(Vec<Cmd>),
    Prj(usize, Box<Cmd>),
    /// The arrays of the components of an array of tuples: a
    /// multi-output kernel's results (`ir::AccKind::Unzip`).
    Unzip(Box<Cmd>),
    Use(Arc<ArrayData>),
    /// A rank-0 array of a closed expression, evaluated on the host.
    Unit(OpenExp, EltTy),
    /// The same elements under a shape of the same size.
    Reshape {
        shape: OpenExp,
        array: Box<Cmd>,
        loc: SrcLoc,
    },
    Acond {
        cond: OpenExp,
        then_: Box<Cmd>,
        else_: Box<Cmd>,
    },
    /// `pred` and `body` see the loop's value as array variable 0.
    Awhile {
        pred: Box<Cmd>,
        body: Box<Cmd>,
        init: Box<Cmd>,
    },
    /// A foreign call (`ir::AccKind::Foreign`): an implementation of
    /// `func` the backend has runs on `arg`'s arrays; where it has none,
    /// `fallback` runs, seeing them as array variable 0 (a call without
    /// one is an error on a backend that has no implementation).
    Foreign {
        func: Arc<ForeignAcc>,
        fallback: Option<Box<Cmd>>,
        arg: Box<Cmd>,
        loc: SrcLoc,
    },
    /// Launches kernel number `k` in the current environment.
    Kernel(usize),
}

impl Cmd {
    /// The array variables the command reads (those bound outside it, as
    /// seen from it under `depth` binders of its own), into `out`; a
    /// launch reads what `kernel_reads(k, out)` adds (the kernel's
    /// `Kernel::arrays_used`, in whatever form a backend keeps it).
    pub fn arrays_read(
        &self,
        depth: usize,
        kernel_reads: &dyn Fn(usize, &mut Vec<usize>),
        out: &mut Vec<usize>,
    ) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            let exp = |e: &OpenExp, depth: usize, out: &mut Vec<usize>| {
                let mut vs = Vec::new();
                ir::visit::arrays_read(e, &mut vs);
                out.extend(vs.into_iter().filter_map(|v| v.checked_sub(depth)));
            };
            let (mut c, mut depth) = (self, depth);
            // a chain of lets, without recursion
            while let Cmd::Let(b, body) = c {
                b.arrays_read(depth, kernel_reads, out);
                (c, depth) = (body, depth + 1);
            }
            match c {
                Cmd::Let(..) | Cmd::Use(_) => {}
                Cmd::Var(v) => out.extend(v.checked_sub(depth)),
                Cmd::Tuple(ts) => ts.iter().for_each(|t| t.arrays_read(depth, kernel_reads, out)),
                Cmd::Prj(_, t) | Cmd::Unzip(t) => t.arrays_read(depth, kernel_reads, out),
                Cmd::Unit(e, _) => exp(e, depth, out),
                Cmd::Reshape { shape, array, .. } => {
                    exp(shape, depth, out);
                    array.arrays_read(depth, kernel_reads, out);
                }
                Cmd::Acond { cond, then_, else_ } => {
                    exp(cond, depth, out);
                    then_.arrays_read(depth, kernel_reads, out);
                    else_.arrays_read(depth, kernel_reads, out);
                }
                Cmd::Awhile { pred, body, init } => {
                    pred.arrays_read(depth + 1, kernel_reads, out);
                    body.arrays_read(depth + 1, kernel_reads, out);
                    init.arrays_read(depth, kernel_reads, out);
                }
                Cmd::Foreign { fallback, arg, .. } => {
                    arg.arrays_read(depth, kernel_reads, out);
                    if let Some(fallback) = fallback {
                        fallback.arrays_read(depth + 1, kernel_reads, out);
                    }
                }
                Cmd::Kernel(k) => {
                    let mut vs = Vec::new();
                    kernel_reads(*k, &mut vs);
                    out.extend(vs.into_iter().filter_map(|v| v.checked_sub(depth)));
                }
            }
        })
    }
}

// A host program is as deep as the user's program is long (10^5 arrays
// `use`d and combined are 10^5 nested lets), so cloning grows the stack
// and dropping takes the commands apart with a stack of its own, as the
// IR's terms do (Note [Dropping deep terms] in `ir/term.rs`).
impl Clone for Cmd {
    fn clone(&self) -> Self {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || match self {
            Cmd::Let(b, body) => Cmd::Let(b.clone(), body.clone()),
            Cmd::Var(v) => Cmd::Var(*v),
            Cmd::Tuple(cs) => Cmd::Tuple(cs.clone()),
            Cmd::Prj(i, c) => Cmd::Prj(*i, c.clone()),
            Cmd::Unzip(c) => Cmd::Unzip(c.clone()),
            Cmd::Use(d) => Cmd::Use(d.clone()),
            Cmd::Unit(e, t) => Cmd::Unit(e.clone(), t.clone()),
            Cmd::Reshape { shape, array, loc } => {
                Cmd::Reshape { shape: shape.clone(), array: array.clone(), loc: *loc }
            }
            Cmd::Acond { cond, then_, else_ } => {
                Cmd::Acond { cond: cond.clone(), then_: then_.clone(), else_: else_.clone() }
            }
            Cmd::Awhile { pred, body, init } => {
                Cmd::Awhile { pred: pred.clone(), body: body.clone(), init: init.clone() }
            }
            Cmd::Foreign { func, fallback, arg, loc } => {
                Cmd::Foreign { func: func.clone(), fallback: fallback.clone(), arg: arg.clone(), loc: *loc }
            }
            Cmd::Kernel(k) => Cmd::Kernel(*k),
        })
    }
}

impl Drop for Cmd {
    fn drop(&mut self) {
        // each child is swapped for a leaf and dropped from the stack
        let leaf = |c: &mut Box<Cmd>| std::mem::replace(&mut **c, Cmd::Var(0));
        let take = |c: &mut Cmd, stack: &mut Vec<Cmd>| match c {
            Cmd::Let(a, b) => stack.extend([leaf(a), leaf(b)]),
            Cmd::Tuple(cs) => stack.append(cs),
            Cmd::Prj(_, c) | Cmd::Unzip(c) | Cmd::Reshape { array: c, .. } => stack.push(leaf(c)),
            Cmd::Acond { then_, else_, .. } => stack.extend([leaf(then_), leaf(else_)]),
            Cmd::Awhile { pred, body, init } => stack.extend([leaf(pred), leaf(body), leaf(init)]),
            Cmd::Foreign { fallback, arg, .. } => {
                stack.extend(fallback.as_mut().map(leaf));
                stack.push(leaf(arg));
            }
            Cmd::Var(_) | Cmd::Use(_) | Cmd::Unit(..) | Cmd::Kernel(_) => {}
        };
        let mut stack = Vec::new();
        take(self, &mut stack);
        while let Some(mut c) = stack.pop() {
            take(&mut c, &mut stack);
        }
    }
}

/// One kernel: what it computes, from what, for whom.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// `k` and its number: the name its functions start with.
    pub name: String,
    /// The user's operation it computes (`fold`, `map`, ...).
    pub op: &'static str,
    /// Where the user wrote that operation.
    pub loc: SrcLoc,
    /// Its result.
    pub out: ArrayTy,
    /// The array variables its code reads (arguments, offsets, defaults
    /// and those its scalar functions read), sorted and without repeats,
    /// with their types.
    pub inputs: Vec<(usize, ArrayTy)>,
    pub skeleton: Skeleton,
}

/// A kernel's argument: what it reads, and its type.
#[derive(Clone, Debug)]
pub struct Arg {
    pub source: Source,
    pub ty: ArrayTy,
}

/// Where a kernel's argument comes from.
#[derive(Clone, Debug)]
pub enum Source {
    /// The array in this variable.
    Manifest(usize),
    /// A producer computed where it is read (Note [Delayed arrays]).
    Delayed(Box<DelayedArray>),
}

/// A kernel's skeleton: the parallel pattern and its scalar functions.
#[derive(Clone, Debug)]
pub enum Skeleton {
    Generate(Generate),
    Fold(Fold),
    Scan(Scan),
    FoldSeg(FoldSeg),
    Permute(Permute),
    Stencil(Stencil),
}

/// Every element of the result computed from its index: the result is
/// the (delayed) argument, made manifest. Every producer (`generate`,
/// `map`, `zip_with`, `backpermute`, `replicate`, `slice`) is one.
#[derive(Clone, Debug)]
pub struct Generate {
    pub src: Arg,
}

/// Reduction of the innermost dimension; without a seed (`fold1`) a row
/// must not be empty. With `keep` (`ir::AccKind::FoldKeep`, a diagonal
/// cluster) the source's elements are pairs `(k, x)`: the `x`s are
/// reduced and the `k`s written to a second result of the source's
/// shape, as the loop reads them; the kernel's value is then the pair
/// `(kept, folded)` and `Kernel::out` the folded array.
#[derive(Clone, Debug)]
pub struct Fold {
    pub f: Fun,
    pub seed: Option<OpenExp>,
    pub src: Arg,
    pub keep: bool,
}

/// An inclusive scan along the innermost dimension (with a seed, one more
/// element per row).
#[derive(Clone, Debug)]
pub struct Scan {
    pub dir: Direction,
    pub f: Fun,
    pub seed: Option<OpenExp>,
    pub src: Arg,
}

/// Segmented reduction of the innermost dimension; `offsets` is the
/// variable of the segment offsets (a vector of `i64`).
#[derive(Clone, Debug)]
pub struct FoldSeg {
    pub f: Fun,
    pub seed: Option<OpenExp>,
    pub src: Arg,
    pub offsets: usize,
}

/// The result starts as the array in variable `defaults`; each source
/// element whose `index` gives `(true, ix)` is combined into `ix`.
#[derive(Clone, Debug)]
pub struct Permute {
    pub combine: Fun,
    pub index: Fun,
    pub defaults: usize,
    pub src: Arg,
}

/// Each element is `f` of the neighbourhoods of its index in the
/// arguments (one or two, of one shape).
#[derive(Clone, Debug)]
pub struct Stencil {
    pub f: Fun,
    pub args: Vec<StencilArg>,
}

/// One argument of a stencil: the pattern's (odd) extents, outermost
/// first, the boundary, and the array.
#[derive(Clone, Debug)]
pub struct StencilArg {
    pub extents: Vec<usize>,
    pub boundary: Boundary,
    pub src: Arg,
}

/// A function's body and a seed.
fn seeded<'a>(f: &'a Fun, z: &'a Option<OpenExp>) -> Vec<&'a OpenExp> {
    std::iter::once(&f.body).chain(z.iter()).collect()
}

impl StencilArg {
    /// The pattern's offsets from its centre, in row-major order: the
    /// order of the stencil function's parameters.
    pub fn offsets(&self) -> Vec<Vec<i64>> {
        accelerate_ir::term::pattern_offsets(&self.extents)
    }
}

impl Skeleton {
    /// The scalar code its kernel runs besides its arguments' (functions,
    /// seeds, boundaries); the shapes of delayed arguments are not here:
    /// the host evaluates them.
    pub fn scalar_code(&self) -> Vec<&OpenExp> {
        match self {
            Skeleton::Generate(_) => Vec::new(),
            Skeleton::Fold(s) => seeded(&s.f, &s.seed),
            Skeleton::Scan(s) => seeded(&s.f, &s.seed),
            Skeleton::FoldSeg(s) => seeded(&s.f, &s.seed),
            Skeleton::Permute(s) => vec![&s.combine.body, &s.index.body],
            Skeleton::Stencil(s) => std::iter::once(&s.f.body)
                .chain(s.args.iter().filter_map(|a| match &a.boundary {
                    Boundary::Constant(c) => Some(c),
                    Boundary::Function(g) => Some(&g.body),
                    _ => None,
                }))
                .collect(),
        }
    }

    /// The array variables its kernel's code reads, in no order and
    /// perhaps repeated: its arguments', a fold_seg's offsets, and those
    /// its scalar code reads. (A permute's defaults are not read: the
    /// host copies them into the result.)
    pub fn arrays_read(&self) -> Vec<usize> {
        let mut out = Vec::new();
        for a in self.args() {
            a.source.arrays(&mut out);
        }
        if let Skeleton::FoldSeg(s) = self {
            out.push(s.offsets);
        }
        for e in self.scalar_code() {
            ir::visit::arrays_read(e, &mut out);
        }
        out
    }

    /// The arguments it reads element by element.
    pub fn args(&self) -> Vec<&Arg> {
        match self {
            Skeleton::Generate(g) => vec![&g.src],
            Skeleton::Fold(f) => vec![&f.src],
            Skeleton::Scan(s) => vec![&s.src],
            Skeleton::FoldSeg(s) => vec![&s.src],
            Skeleton::Permute(p) => vec![&p.src],
            Skeleton::Stencil(s) => s.args.iter().map(|a| &a.src).collect(),
        }
    }

    /// Its name in the text form.
    pub fn name(&self) -> &'static str {
        match self {
            Skeleton::Generate(_) => "generate",
            Skeleton::Fold(f) if f.keep => "fold_keep",
            Skeleton::Fold(_) => "fold",
            Skeleton::Scan(_) => "scan",
            Skeleton::FoldSeg(_) => "fold_seg",
            Skeleton::Permute(_) => "permute",
            Skeleton::Stencil(_) => "stencil",
        }
    }
}

impl Kernel {
    /// Every array variable its launch reads, in its code or on the host:
    /// its inputs, the arrays the shapes of its delayed arguments read
    /// (the host evaluates them) and a permute's defaults (which the host
    /// copies into the result). Sorted, without repeats. What the host
    /// program must keep alive for the launch (Note [Freeing arrays after
    /// their last use] in `backend/host.rs`).
    pub fn arrays_used(&self) -> Vec<usize> {
        let mut out: Vec<usize> = self.inputs.iter().map(|(v, _)| *v).collect();
        for a in self.skeleton.args() {
            match &a.source {
                Source::Manifest(v) => out.push(*v),
                Source::Delayed(d) => ir::visit::arrays_read(&d.shape, &mut out),
            }
        }
        if let Skeleton::Permute(p) = &self.skeleton {
            out.push(p.defaults);
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// The array a fold with `keep` writes besides its result: the
    /// source's shape, the first components of its elements.
    pub fn kept(&self) -> Option<ArrayTy> {
        match &self.skeleton {
            Skeleton::Fold(f) if f.keep => match &f.src.ty.elt {
                EltTy::Tuple(kx) if kx.len() == 2 => {
                    Some(ArrayTy { rank: f.src.ty.rank, elt: kx[0].clone() })
                }
                _ => None,
            },
            _ => None,
        }
    }

    /// The type of a launch's value: `out`, or the pair `(kept, out)` of
    /// a fold with `keep`.
    pub fn result_ty(&self) -> ArraysTy {
        match self.kept() {
            Some(k) => ArraysTy::Tuple(vec![ArraysTy::Array(k), ArraysTy::Array(self.out.clone())]),
            None => ArraysTy::Array(self.out.clone()),
        }
    }

    /// The type of an input variable.
    pub fn input_ty(&self, v: usize) -> Option<&ArrayTy> {
        // scheduling sorts the inputs by variable; a plan made otherwise
        // is searched in full
        match self.inputs.binary_search_by_key(&v, |(x, _)| *x) {
            Ok(i) => Some(&self.inputs[i].1),
            Err(_) => self.inputs.iter().find(|(x, _)| *x == v).map(|(_, t)| t),
        }
    }

    /// The IR operation the kernel computes, over the variables of the
    /// environment it is launched in (a generate of a manifest argument is
    /// that variable): what the plan verifier type-checks and the
    /// interpreter's plan runner evaluates. The one conversion from a
    /// kernel back to the IR.
    pub fn to_ir(&self) -> OpenAcc {
        let loc = self.loc;
        let arg = |a: &Arg| {
            Box::new(match &a.source {
                Source::Manifest(v) => OpenAcc::new(AccKind::Var(*v), loc),
                Source::Delayed(d) => OpenAcc::new(AccKind::Delayed((**d).clone()), loc),
            })
        };
        let var = |v: usize| Box::new(OpenAcc::new(AccKind::Var(v), loc));
        let kind = match &self.skeleton {
            Skeleton::Generate(s) => match &s.src.source {
                Source::Manifest(v) => AccKind::Var(*v),
                Source::Delayed(d) => AccKind::Generate { shape: d.shape.clone(), f: d.index.clone() },
            },
            Skeleton::Fold(s) if s.keep => {
                AccKind::FoldKeep { f: s.f.clone(), seed: s.seed.clone(), array: arg(&s.src) }
            }
            Skeleton::Fold(s) => AccKind::Fold { f: s.f.clone(), seed: s.seed.clone(), array: arg(&s.src) },
            Skeleton::Scan(s) => {
                AccKind::Scan { dir: s.dir, f: s.f.clone(), seed: s.seed.clone(), array: arg(&s.src) }
            }
            Skeleton::FoldSeg(s) => AccKind::FoldSeg {
                f: s.f.clone(),
                seed: s.seed.clone(),
                array: arg(&s.src),
                offsets: var(s.offsets),
            },
            Skeleton::Permute(s) => AccKind::Permute {
                combine: s.combine.clone(),
                defaults: var(s.defaults),
                index: s.index.clone(),
                source: arg(&s.src),
            },
            Skeleton::Stencil(s) => AccKind::Stencil {
                f: s.f.clone(),
                args: s
                    .args
                    .iter()
                    .map(|a| ir::StencilArg {
                        extents: a.extents.clone(),
                        boundary: a.boundary.clone(),
                        array: arg(&a.src),
                    })
                    .collect(),
            },
        };
        OpenAcc::new(kind, loc)
    }

    /// `to_ir` over an environment of just the array variables the
    /// operation names (its arguments, offsets, defaults, and those its
    /// scalar code and its delayed arguments' shapes read): the operation,
    /// and those variables, as indices in the launch's environment,
    /// innermost first, so that variable `j` of the operation is `vars[j]`
    /// of the launch. An evaluator then builds an environment of the size
    /// of the kernel, not of the program.
    pub fn to_ir_compact(&self) -> (OpenAcc, Vec<usize>) {
        let mut node = self.to_ir();
        let mut vars = Vec::new();
        each_array_var(&mut node, &mut |v| vars.push(*v));
        vars.sort_unstable();
        vars.dedup();
        each_array_var(&mut node, &mut |v| *v = vars.binary_search(v).unwrap_or(*v));
        (node, vars)
    }
}

/// Calls `f` on every array variable a kernel's operation names: its
/// array arguments (variables, or delayed arrays, whose functions and
/// shape are scalar code) and its own scalar code. A kernel's operation
/// binds no array variables, so every one is free.
fn each_array_var(a: &mut OpenAcc, f: &mut impl FnMut(&mut usize)) {
    use accelerate_opt::avars::{exp_arrays_mut, parts_mut, Part};
    if let AccKind::Var(v) = &mut a.kind {
        f(v);
    }
    for part in parts_mut(a) {
        match part {
            Part::Exp(e) => exp_arrays_mut(e, f),
            Part::Fun(g) => exp_arrays_mut(&mut g.body, f),
            Part::Acc(x, _) => each_array_var(x, f),
        }
    }
}

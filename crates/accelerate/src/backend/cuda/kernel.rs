//! What every kernel of the CUDA backend shares: its signature and
//! prologue (the arrays it reads, by slot), the description the host
//! launches it by, and the readers of a consumer's argument.
//!
//! Every kernel is `extern "C" __global__ void name(const acc_args args)`
//! launched with `ACC_BLOCK` (256) threads a block. `args` is passed by
//! value and every pointer in it is device memory: `bufs` holds the device
//! pointers of the arrays the kernel reads (every leaf of slot 0, then of
//! slot 1, ...), then its outputs, then the skeleton's temporaries;
//! `extents` the extents of the inputs, then the skeleton's own; `params`
//! the skeleton's integers; `consts` the hoisted literals (Note [Hoisted
//! literals]); `err` the record a failing thread publishes its first
//! error to (Note [Error contexts in generated code]). The layout is the
//! CPU backend's (`cpu::kernel`), so that the host side of both reads
//! alike; what differs is that a kernel computes its whole iteration space
//! with a grid of threads instead of a range `start .. end`.
//!
//! Note [Shared lowering helpers]
//! `Source`, `ShapeOf`, the readers (`read_at`, `read_ix`, `trust`),
//! `unravel`, `commutative` and `uses_from_index` are the CPU backend's
//! (`cpu::kernel`, `cpu::fold`, `cpu::generate`), repeated here because
//! those modules are private to the CPU backend. They know nothing of
//! either target and belong in `backend::c` (with the lowering of
//! `cpu::lower`, which `cuda::lower` repeats too); moving them is a change
//! to the CPU backend's files, left for a change of its own.

use crate::array::{ArrayTy, ArraysTy, EltTy, ScalarTy};
use crate::backend::c::{c_type, ArraySlot, CVal, ExpGen, Hoisted};
use crate::exec::error::SrcLoc;
use crate::ir::{visit, AccKind, Direction, ExpKind, Fun, OpenAcc, OpenExp, PrimFun};
use std::collections::HashMap;
use std::fmt::Write;

/// A consumer's argument as its kernel reads it: a manifest array in a
/// slot, or a delayed array computed where it is read.
#[derive(Clone, Debug)]
pub(crate) enum Source {
    Manifest(usize),
    Delayed { shape: OpenExp, index: Fun, linear: Fun },
}

impl Source {
    pub fn of(a: &OpenAcc) -> Source {
        match &a.kind {
            AccKind::Var(v) => Source::Manifest(*v),
            AccKind::Delayed { shape, index, linear } => {
                Source::Delayed { shape: shape.clone(), index: index.clone(), linear: linear.clone() }
            }
            other => unreachable!("a kernel argument is a variable or delayed after lowering, not {other:?}"),
        }
    }

    /// The arrays the kernel reads for this source.
    pub fn arrays(&self, out: &mut Vec<usize>) {
        match self {
            Source::Manifest(v) => out.push(*v),
            Source::Delayed { index, linear, .. } => {
                visit::arrays_read(&index.body, out);
                visit::arrays_read(&linear.body, out);
            }
        }
    }
}

/// How the host finds the shape of a kernel's argument at run time.
#[derive(Clone, Debug)]
#[allow(dead_code)] // read by the executor, which is not written yet
pub(crate) enum ShapeOf {
    /// The shape of the array variable.
    Var(usize),
    /// A closed expression, evaluated on the host.
    Exp(OpenExp),
}

impl ShapeOf {
    pub fn of(s: &Source) -> ShapeOf {
        match s {
            Source::Manifest(v) => ShapeOf::Var(*v),
            Source::Delayed { shape, .. } => ShapeOf::Exp(shape.clone()),
        }
    }
}

/// The skeleton of a kernel and what its launch needs on the host. Each
/// skeleton's module says which functions it has and how each is
/// launched (grid, parameters, temporaries).
#[derive(Clone, Debug)]
#[allow(dead_code)] // read by the executor, which is not written yet
pub(crate) enum Skeleton {
    Generate {
        shape: ShapeOf,
    },
    Fold {
        seed: bool,
        source: ShapeOf,
        op: &'static str,
    },
    FoldSeg {
        seed: bool,
        source: ShapeOf,
        offsets: usize,
        op: &'static str,
    },
    Scan {
        seed: bool,
        dir: Direction,
        source: ShapeOf,
        op: &'static str,
    },
    /// `atomic` is false for tuple elements, which take a lock per
    /// destination (a temporary of `i32` zeros, one per element).
    Permute {
        defaults: usize,
        source: ShapeOf,
        atomic: bool,
    },
    Stencil {
        sources: Vec<ShapeOf>,
        extents: Vec<Vec<usize>>,
    },
}

/// One kernel: its name, skeleton, the arrays it reads (as de Bruijn
/// indices in the environment where it runs), its result, and the source
/// locations its errors name.
#[derive(Clone, Debug)]
#[allow(dead_code)] // read by the executor, which is not written yet
pub(crate) struct Kernel {
    pub name: String,
    pub skeleton: Skeleton,
    pub inputs: Vec<usize>,
    pub elt: EltTy,
    pub sites: Vec<SrcLoc>,
    pub loc: SrcLoc,
    /// The words of its hoisted literals (Note [Hoisted literals]).
    pub consts: Vec<i64>,
}

/// Where `open_function` leaves room for the hoisted literals, which
/// `close_function` declares once the body has named them all.
const CONSTS_MARK: &str = "    /* hoisted literals */\n";

/// The code generation state of one kernel.
pub(crate) struct KernelGen {
    pub name: String,
    pub slots: HashMap<usize, ArraySlot>,
    pub inputs: Vec<usize>,
    pub sites: Vec<SrcLoc>,
    pub hoisted: Hoisted,
    pub fresh: usize,
    n_leaves: usize,
    n_extents: usize,
    input_tys: Vec<ArrayTy>,
}

impl KernelGen {
    /// A kernel reading the given array variables of the environment
    /// `aenv` (innermost last).
    pub fn new(name: String, mut inputs: Vec<usize>, aenv: &[ArraysTy]) -> KernelGen {
        inputs.sort_unstable();
        inputs.dedup();
        let mut slots = HashMap::new();
        let mut input_tys = Vec::new();
        for (j, &v) in inputs.iter().enumerate() {
            let ty = match &aenv[aenv.len() - 1 - v] {
                ArraysTy::Array(t) => t.clone(),
                other => unreachable!("kernel input {v} is a tuple {other} (the verifier rejects it)"),
            };
            let leaves = (0..ty.elt.leaves().len()).map(|l| format!("a{j}_{l}")).collect();
            let extents = (0..ty.rank).map(|d| format!("a{j}_s{d}")).collect();
            slots.insert(v, ArraySlot { leaves, extents, elt: ty.elt.clone() });
            input_tys.push(ty);
        }
        let n_leaves = input_tys.iter().map(|t| t.elt.leaves().len()).sum();
        let n_extents = input_tys.iter().map(|t| t.rank).sum();
        KernelGen {
            name,
            slots,
            inputs,
            sites: Vec::new(),
            hoisted: Hoisted::default(),
            fresh: 0,
            n_leaves,
            n_extents,
            input_tys,
        }
    }

    /// The index in `bufs` of the first buffer after the inputs.
    pub fn first_own_buf(&self) -> usize {
        self.n_leaves
    }

    /// The index in `extents` of the first extent after the inputs'.
    pub fn first_own_extent(&self) -> usize {
        self.n_extents
    }

    /// A scalar-code generator writing at `indent`, with errors to `e0`.
    pub fn exp_gen(&mut self, indent: usize) -> ExpGen<'_> {
        ExpGen::new(&self.slots, &mut self.sites, &mut self.hoisted, "e0", indent, self.fresh)
    }

    /// Opens the kernel function `suffix`: the signature, the input arrays
    /// as restrict pointers and extents, the thread's coordinates, and the
    /// error context `e0`.
    pub fn open_function(&mut self, out: &mut String, suffix: &str, what: &str, loc: SrcLoc) {
        let f = format!("{}{suffix}", self.name);
        let _ = writeln!(out, "\n/* {} at {loc} */", crate::backend::c::comment(what));
        let _ = writeln!(
            out,
            "extern \"C\" __global__ void __launch_bounds__(ACC_BLOCK) {f}(const acc_args args) {{"
        );
        out.push_str("    const acc_args *A = &args;\n");
        out.push_str(
            "    void *const *B = A->bufs; const int64_t *X = A->extents; const int64_t *P = A->params;\n",
        );
        out.push_str("    (void)B; (void)X; (void)P;\n");
        out.push_str("    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;\n");
        out.push_str("    (void)tid; (void)lane; (void)warp;\n");
        let (mut b, mut x) = (0, 0);
        for (j, t) in self.input_tys.iter().enumerate() {
            for (l, s) in t.elt.leaves().into_iter().enumerate() {
                let ct = c_type(s);
                let _ = writeln!(out, "    const {ct} *__restrict__ a{j}_{l} = (const {ct} *)B[{b}];");
                b += 1;
            }
            for d in 0..t.rank {
                let _ = writeln!(out, "    const int64_t a{j}_s{d} = X[{x}];");
                x += 1;
            }
        }
        out.push_str(CONSTS_MARK);
        out.push_str("    acc_err e0; e0.code = ACC_ERR_NONE;\n");
    }

    /// Declares output buffers `name_l` of the element type, from
    /// `bufs[first ..]`; returns their names and the next buffer index.
    pub fn out_buffers(out: &mut String, name: &str, elt: &EltTy, first: usize) -> (Vec<String>, usize) {
        let mut names = Vec::new();
        for (l, s) in elt.leaves().into_iter().enumerate() {
            let ct = c_type(s);
            let n = format!("{name}_{l}");
            let _ = writeln!(out, "    {ct} *__restrict__ {n} = ({ct} *)B[{}];", first + l);
            names.push(n);
        }
        let next = first + names.len();
        (names, next)
    }

    /// `out_buffers` without `__restrict__`, for buffers that other blocks
    /// write while this one reads them (a scan's tile status).
    pub fn status_buffers(out: &mut String, name: &str, elt: &EltTy, first: usize) -> (Vec<String>, usize) {
        let mut names = Vec::new();
        for (l, s) in elt.leaves().into_iter().enumerate() {
            let n = format!("{name}_{l}");
            KernelGen::buffer(out, &n, c_type(s), first + l);
            names.push(n);
        }
        let next = first + names.len();
        (names, next)
    }

    /// Declares one buffer `name` of C type `ct` from `bufs[at]`.
    pub fn buffer(out: &mut String, name: &str, ct: &str, at: usize) {
        let _ = writeln!(out, "    {ct} *{name} = ({ct} *)B[{at}];");
    }

    /// Declares `count` extents `name0 ..` from `extents[first ..]`.
    pub fn extents(out: &mut String, name: &str, count: usize, first: usize) -> Vec<String> {
        (0..count)
            .map(|d| {
                let n = format!("{name}{d}");
                let _ = writeln!(out, "    const int64_t {n} = X[{}];", first + d);
                n
            })
            .collect()
    }

    /// Closes a function with its body (`ExpGen::into_parts`): the
    /// thread's error reaches the host. Every thread reaches this point
    /// (kernels never return early: Note [No early exits]).
    pub fn close_function(&mut self, out: &mut String, (code, fresh, _raised): (String, usize, bool)) {
        self.fresh = fresh;
        if let Some(at) = out.rfind(CONSTS_MARK) {
            out.replace_range(at..at + CONSTS_MARK.len(), &self.hoisted.declarations());
        }
        out.push_str(&code);
        out.push_str("    acc_publish(A->err, &e0);\n}\n");
    }
}

/// The product of extents, as a C expression.
pub(crate) fn product(extents: &[String]) -> String {
    if extents.is_empty() {
        return "1".into();
    }
    extents.join(" * ")
}

/// The loop header of a grid-stride loop of `var` over `0 .. n`.
pub(crate) fn grid_stride(var: &str, n: &str) -> String {
    format!(
        "for (int64_t {var} = (int64_t)blockIdx.x * ACC_BLOCK + tid; {var} < {n}; {var} += (int64_t)gridDim.x * ACC_BLOCK) {{"
    )
}

/// The loop header of a loop in which block `blockIdx.x` takes items
/// `var` of `0 .. n` in turn (a block per row).
pub(crate) fn block_stride(var: &str, n: &str) -> String {
    format!("for (int64_t {var} = blockIdx.x; {var} < {n}; {var} += gridDim.x) {{")
}

/// Stores a value's leaves into buffers at a position.
pub(crate) fn store(g: &mut ExpGen<'_>, bufs: &[String], pos: &str, v: &CVal) {
    for (b, x) in bufs.iter().zip(&v.leaves) {
        g.line(&format!("{b}[{pos}] = {x};"));
    }
}

/// Declares variables holding a copy of a value (an accumulator).
pub(crate) fn declare(g: &mut ExpGen<'_>, base: &str, v: &CVal) -> CVal {
    let leaves =
        v.ty.leaves()
            .into_iter()
            .zip(&v.leaves)
            .map(|(t, x)| {
                let n = g.fresh(base);
                g.line(&format!("{} {n} = {x};", c_type(t)));
                n
            })
            .collect();
    CVal { ty: v.ty.clone(), leaves }
}

/// Declares variables of a type holding zeros (a value to be assigned
/// under a condition).
pub(crate) fn declare_zero(g: &mut ExpGen<'_>, base: &str, ty: &EltTy) -> CVal {
    let zeros =
        CVal { ty: ty.clone(), leaves: ty.leaves().into_iter().map(crate::backend::c::zero).collect() };
    declare(g, base, &zeros)
}

/// Assigns a value to variables declared by `declare`.
pub(crate) fn assign(g: &mut ExpGen<'_>, to: &CVal, v: &CVal) {
    for (a, x) in to.leaves.iter().zip(&v.leaves) {
        g.line(&format!("{a} = {x};"));
    }
}

/// The element of a source at row-major position `pos` (a C atom known to
/// lie inside the source's shape).
pub(crate) fn read_at(g: &mut ExpGen<'_>, src: &Source, pos: &str, loc: SrcLoc) -> CVal {
    match src {
        Source::Manifest(v) => g.read_linear(*v, pos, loc, false),
        Source::Delayed { shape, linear, .. } => {
            trust(g, shape, pos, None);
            g.apply(linear, vec![CVal::scalar(ScalarTy::I64, pos.to_string())])
        }
    }
}

/// The element of a source at a multidimensional index inside its shape.
pub(crate) fn read_ix(g: &mut ExpGen<'_>, src: &Source, ix: &[String], loc: SrcLoc) -> CVal {
    match src {
        Source::Manifest(v) => g.read_index(*v, ix, loc, false),
        Source::Delayed { shape, index, .. } => {
            trust(g, shape, "", Some(ix));
            g.apply(index, vec![CVal::index(ix.to_vec())])
        }
    }
}

/// Records that a position (or an index) inside a delayed array's shape
/// lies inside every array whose shape bounds that shape, so reads of
/// them there need no check (`cpu::kernel::trust`).
pub(crate) fn trust(g: &mut ExpGen<'_>, shape: &OpenExp, pos: &str, ix: Option<&[String]>) {
    let mut bounding = Vec::new();
    bounded_by(shape, &mut bounding);
    let exact = match &shape.kind {
        ExpKind::Shape { array } => Some(*array),
        _ => None,
    };
    for a in bounding {
        let rank = g.arrays.get(&a).map(|s| s.extents.len());
        match ix {
            Some(ix) => {
                g.trusted_index.push((ix.to_vec(), a));
                if ix.len() == 1 {
                    g.trusted_linear.push((ix[0].clone(), a));
                }
            }
            None => {
                // a position inside an intersection is a position inside
                // each array only for vectors (or the exact shape)
                if exact == Some(a) || rank == Some(1) {
                    g.trusted_linear.push((pos.to_string(), a));
                }
                if rank == Some(1) {
                    g.trusted_index.push((vec![pos.to_string()], a));
                }
            }
        }
    }
}

/// The arrays whose shape is at least `shape` in every dimension.
fn bounded_by(shape: &OpenExp, out: &mut Vec<usize>) {
    match &shape.kind {
        ExpKind::Shape { array } => out.push(*array),
        ExpKind::Prim(PrimFun::Intersect, args) => args.iter().for_each(|a| bounded_by(a, out)),
        _ => {}
    }
}

/// The index in `outer` (extents, outermost first) of the row-major
/// position `r`, as C atoms (bound to new variables where computed).
pub(crate) fn unravel(g: &mut ExpGen<'_>, r: &str, outer: &[String]) -> Vec<String> {
    let mut rest = r.to_string();
    let mut ix = vec![String::new(); outer.len()];
    for d in (0..outer.len()).rev() {
        if d == 0 {
            ix[0] = rest.clone();
        } else {
            ix[d] = g.bind(ScalarTy::I64, &format!("{rest} % {}", outer[d]));
            rest = g.bind(ScalarTy::I64, &format!("{rest} / {}", outer[d]));
        }
    }
    ix
}

/// Does a function turn a position into an index (so that reading by
/// index, from an index computed once, is cheaper than by position)?
pub(crate) fn uses_from_index(f: &Fun) -> bool {
    fn go(e: &OpenExp, found: &mut bool) {
        if matches!(e.kind, ExpKind::Prim(PrimFun::FromIndex, _)) {
            *found = true;
        }
        if !*found {
            stacker::maybe_grow(64 * 1024, 1024 * 1024, || visit::each_child(e, |c| go(c, found)));
        }
    }
    let mut found = false;
    go(&f.body, &mut found);
    found
}

/// Is `f(a, b)` equal to `f(b, a)` by construction? Each leaf of its
/// result must be one commutative primitive applied to the same leaf of
/// both arguments (`cpu::fold::commutative`).
pub(crate) fn commutative(f: &Fun) -> bool {
    fn symmetric(e: &OpenExp) -> bool {
        use PrimFun::*;
        match &e.kind {
            ExpKind::Tuple(es) => es.iter().all(symmetric),
            ExpKind::Prim(Add | Mul | Min | Max | BAnd | BOr | BXor | LAnd | LOr, args)
                if args.len() == 2 =>
            {
                match (leaf_path(&args[0]), leaf_path(&args[1])) {
                    (Some((u, p)), Some((v, q))) => u != v && p == q,
                    _ => false,
                }
            }
            _ => false,
        }
    }
    f.params.len() == 2 && symmetric(&f.body)
}

/// The argument (0 or 1) and the projection path of a leaf access.
pub(crate) fn leaf_path(e: &OpenExp) -> Option<(usize, Vec<usize>)> {
    match &e.kind {
        ExpKind::Var(v) if *v < 2 => Some((*v, Vec::new())),
        ExpKind::Prj(i, t) => leaf_path(t).map(|(v, mut p)| {
            p.push(*i);
            (v, p)
        }),
        _ => None,
    }
}

//! What every kernel of the CUDA backend shares: its signature and
//! prologue (the arrays it reads, by slot) and its loops over a grid.
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
//! What the kernels of both backends share whatever the target (`Source`,
//! `Kernel`, `Skeleton`, the readers, the statement helpers and the
//! lowering of a program) is in `backend::c` (`c::kernel`, `c::lower`).

use crate::array::{ArrayTy, ArraysTy, EltTy};
use crate::backend::c::kernel::{declare, KernelParts};
use crate::backend::c::{c_type, ArraySlot, CVal, ExpGen, Hoisted};
use crate::exec::error::SrcLoc;
use std::collections::HashMap;
use std::fmt::Write;

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

    /// The kernel's inputs, the source locations its errors name and the
    /// words of its hoisted literals, once its functions are written.
    pub fn finish(self) -> KernelParts {
        KernelParts { inputs: self.inputs, sites: self.sites, consts: self.hoisted.words() }
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

/// Declares variables of a type holding zeros (a value to be assigned
/// under a condition).
pub(crate) fn declare_zero(g: &mut ExpGen<'_>, base: &str, ty: &EltTy) -> CVal {
    let zeros =
        CVal { ty: ty.clone(), leaves: ty.leaves().into_iter().map(crate::backend::c::zero).collect() };
    declare(g, base, &zeros)
}

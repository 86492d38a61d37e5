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

use crate::c::kernel::{declare, KernelCore, KernelParts};
use crate::c::{Body, CVal, ExpGen};
use accelerate_base::array::EltTy;
use accelerate_base::error::SrcLoc;
use accelerate_plan as plan;
use std::fmt::Write;
use std::ops::{Deref, DerefMut};

/// The code generation state of one kernel: the shared core
/// (`KernelCore`, which it dereferences to).
pub(crate) struct KernelGen {
    core: KernelCore,
}

impl Deref for KernelGen {
    type Target = KernelCore;
    fn deref(&self) -> &KernelCore {
        &self.core
    }
}

impl DerefMut for KernelGen {
    fn deref_mut(&mut self) -> &mut KernelCore {
        &mut self.core
    }
}

impl KernelGen {
    /// The code generation state of a kernel of the plan.
    pub fn new(k: &plan::Kernel) -> KernelGen {
        KernelGen { core: KernelCore::new(k) }
    }

    /// The kernel's inputs, sites and hoisted literals (`KernelCore::finish`).
    pub fn finish(self) -> KernelParts {
        self.core.finish()
    }

    /// Opens the kernel function `suffix`: the signature, the input arrays
    /// as restrict pointers and extents, the thread's coordinates, and the
    /// error context `e0`.
    pub fn open_function(&mut self, out: &mut String, suffix: &str, what: &str, loc: SrcLoc) {
        let f = format!("{}{suffix}", self.name);
        let _ = writeln!(out, "\n/* {} at {loc} */", crate::c::comment(what));
        let _ = writeln!(
            out,
            "extern \"C\" __global__ void __launch_bounds__(ACC_BLOCK) {f}(const acc_args args) {{"
        );
        out.push_str("    const acc_args *A = &args;\n");
        out.push_str("    const int tid = (int)threadIdx.x, lane = tid & 31, warp = tid >> 5;\n");
        out.push_str("    (void)tid; (void)lane; (void)warp;\n");
        self.core.open_inputs(out, "__restrict__");
        out.push_str("    acc_err e0; e0.code = ACC_ERR_NONE;\n");
    }

    /// Declares output buffers `name_l` of the element type, from
    /// `bufs[first ..]`; returns their names and the next buffer index.
    pub fn out_buffers(out: &mut String, name: &str, elt: &EltTy, first: usize) -> (Vec<String>, usize) {
        KernelCore::buffers(out, name, elt, first, "__restrict__")
    }

    /// `out_buffers` without `__restrict__`, for buffers that other blocks
    /// write while this one reads them (a scan's tile status).
    pub fn status_buffers(out: &mut String, name: &str, elt: &EltTy, first: usize) -> (Vec<String>, usize) {
        KernelCore::buffers(out, name, elt, first, "")
    }

    /// Declares one buffer `name` of C type `ct` from `bufs[at]`.
    pub fn buffer(out: &mut String, name: &str, ct: &str, at: usize) {
        let _ = writeln!(out, "    {ct} *{name} = ({ct} *)B[{at}];");
    }

    /// Closes a function with its body (`ExpGen::into_parts`): the
    /// thread's error reaches the host. Every thread reaches this point
    /// (kernels never return early: Note [No early exits]).
    pub fn close_function(&mut self, out: &mut String, body: Body) {
        // (CUDA code is not outlined: `functions` is empty)
        let start = out.len();
        self.core.close_body(out, start, &body);
        out.push_str("    acc_publish(A->err, &e0);\n}\n");
    }
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
    let zeros = CVal { ty: ty.clone(), leaves: ty.leaves().into_iter().map(crate::c::zero).collect() };
    declare(g, base, &zeros)
}

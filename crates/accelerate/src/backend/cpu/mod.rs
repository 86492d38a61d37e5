//! The multicore CPU backend: each kernel of a fused program becomes a C
//! function, all of a program's kernels one C file, compiled at run time
//! by the system C compiler into a shared object that is loaded into the
//! process (`compile`, with its kernel cache), and run in parallel chunks
//! on a work-stealing pool (`exec`).
//!
//! Files: `kernel` (this backend's kernel functions and loops), one file
//! per skeleton (`generate`, `fold`, `fold_seg`, `scan`, `permute`,
//! `stencil`), `compile`, `exec`. What the CUDA backend shares comes from
//! `backend::c`: the lowering of a program to host commands and kernels
//! (`c::lower`, given this backend's skeleton writers, `TARGET`), what
//! kernels share whatever the target (`c::kernel`) and the scalar code
//! inside them.
//!
//! Options (environment): `ACCELERATE_THREADS` (workers; default one per
//! core), `ACCELERATE_CACHE_DIR` / `ACCELERATE_CACHE=off` (the on-disk
//! kernel cache), `CC` (the compiler), `ACCELERATE_CFLAGS` (extra flags,
//! such as a sanitizer's).

mod compile;
mod exec;
mod fold;
mod fold_seg;
mod generate;
mod kernel;
mod permute;
mod scan;
mod stencil;

#[cfg(feature = "cuda")]
pub(crate) use compile::Build;
pub use compile::{compilations, vectorised_loops};

use crate::array::ArraysVal;
use crate::backend::c::kernel::{Kernel, Skeleton};
use crate::backend::c::lower::{lower_program, Cmd, Target};
use crate::exec::error::Result;
use crate::ir::Program;
use std::sync::Arc;

/// This backend's kernel code, for the shared lowering.
const TARGET: Target<kernel::KernelGen> = Target {
    kernel_gen: kernel::KernelGen::new,
    generate: generate::generate,
    fold: fold::fold,
    scan: scan::scan,
    fold_seg: fold_seg::fold_seg,
    permute: permute::permute,
    stencil: stencil::stencil,
    finish: kernel::KernelGen::finish,
};

/// A program compiled for the CPU: its host commands, its kernels and the
/// loaded object holding their code.
pub struct CpuProgram {
    body: Cmd,
    kernels: Vec<Kernel>,
    module: Arc<compile::Module>,
    source: String,
}

impl CpuProgram {
    /// Lowers a fused program and loads its kernels (from the kernel cache
    /// or compiled now).
    pub fn new(p: &Program) -> Result<CpuProgram> {
        let l = lower_program(p, &TARGET)?;
        let symbols: Vec<String> = l.kernels.iter().flat_map(symbols).collect();
        let module = compile::load(&l.source, &symbols)?;
        Ok(CpuProgram { body: l.body, kernels: l.kernels, module, source: l.source })
    }

    /// Runs the program on its arguments.
    pub fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal> {
        exec::run(&self.body, &self.kernels, &self.module, args)
    }

    /// The generated C of the program's kernels (without the prelude).
    pub fn c_source(&self) -> &str {
        &self.source
    }

    /// The number of kernels.
    pub fn kernel_count(&self) -> usize {
        self.kernels.len()
    }
}

/// The C functions of a kernel, by skeleton.
fn symbols(k: &Kernel) -> Vec<String> {
    use Skeleton::*;
    let suffixes: &[&str] = match k.skeleton {
        Generate { .. } | FoldSeg { .. } | Stencil { .. } | Permute { atomic: false, .. } => &[""],
        Permute { atomic: true, .. } => &["", "_private", "_merge"],
        Fold { .. } => &["_rows", "_part", "_combine"],
        Scan { .. } => &["_rows", "_part", "_carry", "_piece"],
    };
    suffixes.iter().map(|s| format!("{}{s}", k.name)).collect()
}

/// Why this backend cannot run on this machine, if it cannot (no C
/// compiler).
pub fn unavailable() -> Option<String> {
    compile::unavailable()
}

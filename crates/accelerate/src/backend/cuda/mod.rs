//! The CUDA backend (feature `cuda`): each kernel of a fused program
//! becomes CUDA C generated from the same scalar code generator as the
//! CPU backend's C (`backend::c`), all of a program's kernels one file,
//! compiled by NVRTC to PTX for the device's architecture. NVRTC and the
//! driver are loaded at run time (`cudarc` with dynamic loading), so the
//! crate builds, and its tests pass, where CUDA is not installed: every
//! entry point probes for the libraries first (`unavailable`) and reports
//! `Error::BackendUnavailable` instead of letting `cudarc` panic.
//!
//! Files, as in the CPU backend: `kernel` (this backend's kernel functions
//! and grid loops), `block` (cooperative warp and block reductions and
//! scans), one file per skeleton (`generate`, `fold`, `fold_seg`, `scan`,
//! `permute`, `stencil`), `compile` (NVRTC), `memory` (the device memory
//! manager, with LRU eviction to host memory). The lowering of a program
//! to host commands and kernels (`c::lower`, given this backend's
//! skeleton writers, `TARGET`) and what kernels share whatever the target
//! (`c::kernel`) are the CPU backend's, in `backend::c`.
//!
//! State: code generation, NVRTC compilation and the memory manager's
//! logic are written and tested (`tests/backend_cuda_codegen.rs` compiles
//! every skeleton at every element type for sm_80 and sm_90; `memory`'s
//! unit tests run it against a fake device). Running a program on a
//! device (loading the PTX through the driver API, launching, the host
//! commands, the kernel cache for PTX) is not written yet: selecting the
//! backend (`ACCELERATE_BACKEND=cuda`) returns `Error::BackendUnavailable`
//! saying so, or saying which of driver, device or NVRTC is missing.
//!
//! Note [The CUDA prelude]
//! `prelude.cuh` is the device twin of `backend/c/prelude.h`: the same
//! helper names with the same rules, so that `ExpGen`'s statements mean
//! the same on both targets. What is the same text on both (the error
//! record, the integer, float and binary16 helpers) is written once, in
//! `backend/c/prelude_common.h`, which each prelude pastes in
//! (`c::with_common_prelude`) after defining the declaration macro
//! `ACC_FN`, the bit casts and the bit counts. The rest cannot be the
//! same file: NVRTC has no
//! standard headers (`stdint.h`, `math.h`: the integer types and their
//! limits are defined in the prelude; CUDA's math functions are built in),
//! device functions need `__device__`, the GCC builtins the host prelude
//! uses (`__atomic_*`, `__builtin_popcountll`, ...) are CUDA intrinsics
//! here, and `acc_publish` claims the error record with `atomicCAS`. The
//! one GCC builtin that `ExpGen` itself writes, `__builtin_mul_overflow`
//! (shape sizes), is defined by the prelude as a macro for its one use.
//! `memcpy` (bit casts) is built into NVRTC.

mod block;
mod compile;
mod fold;
mod fold_seg;
mod generate;
mod kernel;
pub mod memory;
mod permute;
mod scan;
mod stencil;

pub use compile::{cached_ptx, compile_ptx, nvrtc_unavailable, ptx_compilations, ptx_on_disk};

use crate::array::Arrays;
use crate::backend::c::lower::{lower_program, Target};
use crate::exec::config::Config;
use crate::exec::error::{Result, SrcLoc};
use crate::ir::Program;
use crate::lang::acc::Acc;
use std::sync::OnceLock;

/// The CUDA prelude every generated file starts with.
fn prelude() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| crate::backend::c::with_common_prelude(include_str!("prelude.cuh")))
}

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

/// Why this backend cannot run programs here: no driver, no device, no
/// NVRTC; and, where all three are present, that running programs on the
/// device is not written yet (see the module documentation). Probed once.
pub fn unavailable() -> Option<String> {
    static WHY: OnceLock<Option<String>> = OnceLock::new();
    WHY.get_or_init(|| {
        if let Some(why) = device_unavailable() {
            return Some(why);
        }
        if let Some(why) = nvrtc_unavailable() {
            return Some(why);
        }
        Some("running programs on the device is not implemented yet (the CUDA backend generates and compiles its kernels; loading, launching and the host side come next)".into())
    })
    .clone()
}

/// Why no CUDA device can be used here, if none can.
fn device_unavailable() -> Option<String> {
    // SAFETY: the probe only tries to open the library by its names.
    if !unsafe { cudarc::driver::sys::is_culib_present() } {
        return Some("no CUDA driver (libcuda.so) was found".into());
    }
    match cudarc::driver::CudaContext::device_count() {
        Err(e) => Some(format!("the CUDA driver did not start: {e:?}")),
        Ok(n) if n <= 0 => Some("the CUDA driver found no device".into()),
        Ok(_) => None,
    }
}

/// The CUDA C of a fused program's kernels, prelude included: what NVRTC
/// compiles.
#[doc(hidden)]
pub fn program_source(p: &Program) -> Result<String> {
    let l = lower_program(p, &TARGET)?;
    Ok(format!("{}{}", prelude(), l.source))
}

/// The CUDA C of a computation's kernels, prelude included, after the
/// pipeline of the environment's configuration (`Config::from_env`).
/// Needs no GPU and no CUDA library: for tests and for reading.
#[doc(hidden)]
#[track_caller]
pub fn cuda_source<A: Arrays>(acc: &Acc<A>) -> Result<String> {
    let config = Config::from_env()?;
    let phases = crate::exec::pipeline::compile_graph(&[], acc.id, &config, SrcLoc::caller())?;
    program_source(&phases.last().expect("at least one phase").ir)
}

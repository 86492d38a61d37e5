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
//! Running a program: `device` (a GPU through the driver API, or the
//! emulator of `emulate`, which runs the same CUDA C on the host: Note
//! [The CUDA emulator]), `exec` (the host commands, shared with the CPU
//! backend through `c::host`, and each skeleton's launches).
//!
//! Options (environment): `ACCELERATE_CUDA_DEVICE=emulator` runs on the
//! emulator instead of a GPU (for tests on machines without one; slow);
//! `ACCELERATE_CUDA_MEMORY_MB` caps the device memory the manager uses
//! (arrays past it are evicted to the host, `memory`); the kernel cache's
//! variables, as for the CPU backend.
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
pub mod device;
pub mod emulate;
mod exec;
mod fold;
mod fold_seg;
mod generate;
mod kernel;
pub mod memory;
mod permute;
mod scan;
mod stencil;

pub use compile::{cached_ptx, compile_ptx, nvrtc_unavailable, ptx_compilations, ptx_on_disk};

use crate::array::{Arrays, ArraysVal};
use crate::backend::c::host::{self, HostArray, Value};
use crate::backend::c::kernel::{Kernel, Skeleton};
use crate::backend::c::lower::{lower_program, Cmd, Target};
use crate::exec::config::Config;
use crate::exec::error::{Error, Result, SrcLoc};
use crate::ir::Program;
use crate::lang::acc::Acc;
use device::{Device, Gpu};
use emulate::Emulator;
use exec::{DeviceArray, OnDevice, Resident, Shared};
use memory::MemoryManager;
use std::sync::{Arc, Mutex, OnceLock};

/// The CUDA prelude every generated file starts with.
pub(crate) fn prelude() -> &'static str {
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

/// Whether programs run on the emulator (`ACCELERATE_CUDA_DEVICE=emulator`)
/// instead of a GPU.
fn emulated() -> bool {
    std::env::var("ACCELERATE_CUDA_DEVICE").is_ok_and(|d| d == "emulator")
}

/// Why this backend cannot run programs here: no driver, no device, no
/// NVRTC (none of which the emulator needs). Probed once.
pub fn unavailable() -> Option<String> {
    if emulated() {
        None
    } else {
        gpu_unavailable()
    }
}

/// Why no GPU can run this backend's programs here (no driver, device or
/// NVRTC), whatever `ACCELERATE_CUDA_DEVICE` says. Probed once.
fn gpu_unavailable() -> Option<String> {
    static WHY: OnceLock<Option<String>> = OnceLock::new();
    WHY.get_or_init(|| device_unavailable().or_else(nvrtc_unavailable)).clone()
}

/// Whether a GPU can run this backend's programs here (driver, device
/// and NVRTC found), whatever `ACCELERATE_CUDA_DEVICE` says.
pub fn gpu_present() -> bool {
    gpu_unavailable().is_none()
}

fn unavailable_error(reason: String) -> Error {
    Error::BackendUnavailable { backend: "cuda".into(), reason }
}

/// A device and its memory manager, capped by `ACCELERATE_CUDA_MEMORY_MB`.
fn manager<D: Device>(dev: D) -> Result<Shared<D>> {
    let cap = match std::env::var("ACCELERATE_CUDA_MEMORY_MB") {
        Err(_) => None,
        Ok(s) => Some(s.trim().parse::<usize>().map_err(|_| {
            Error::Config(format!("ACCELERATE_CUDA_MEMORY_MB={s}: expected a whole number of MiB"))
        })?),
    };
    Ok(Arc::new(Mutex::new(match cap {
        Some(mb) => MemoryManager::with_cap(dev, mb << 20),
        None => MemoryManager::new(dev),
    })))
}

/// The GPU, opened once per process.
fn gpu() -> Result<Shared<Gpu>> {
    static GPU: OnceLock<std::result::Result<Shared<Gpu>, Error>> = OnceLock::new();
    GPU.get_or_init(|| match unavailable() {
        Some(why) => Err(unavailable_error(why)),
        None => manager(Gpu::open()?),
    })
    .clone()
}

/// The emulated device, made once per process.
fn emulator() -> Result<Shared<Emulator>> {
    static EMULATOR: OnceLock<std::result::Result<Shared<Emulator>, Error>> = OnceLock::new();
    EMULATOR.get_or_init(|| manager(Emulator::default())).clone()
}

/// What the memory manager of the device that programs run on
/// (`ACCELERATE_CUDA_DEVICE`) has done so far: buffers evicted to the
/// host, buffers copied to the device, and the device memory its buffers
/// take now (for tests and statistics).
#[doc(hidden)]
pub fn memory_statistics() -> Result<(usize, usize, usize)> {
    fn of<D: Device>(m: Shared<D>) -> (usize, usize, usize) {
        let m = m.lock().unwrap_or_else(|e| e.into_inner());
        (m.evictions, m.uploads, m.used())
    }
    Ok(if emulated() { of(emulator()?) } else { of(gpu()?) })
}

/// The time the device that programs run on has spent on this backend's
/// kernels and device-to-device copies so far (`Device::busy`): the
/// difference across a run is the run's device time, without its copies
/// between host and device (for benchmarks).
#[doc(hidden)]
pub fn device_busy() -> Result<std::time::Duration> {
    fn of<D: Device>(m: Shared<D>) -> std::time::Duration {
        m.lock().unwrap_or_else(|e| e.into_inner()).device().busy()
    }
    Ok(if emulated() { of(emulator()?) } else { of(gpu()?) })
}

/// A program compiled for a device: its host commands, its kernels, and
/// their module loaded on the device.
struct Loaded<D: Device> {
    body: Cmd,
    kernels: Vec<Kernel>,
    module: Arc<D::Module>,
    mem: Shared<D>,
    /// The device copies of the last run's host arrays (Note [Resident
    /// inputs] in `exec.rs`).
    resident: Mutex<Resident<D>>,
}

/// What a compiled program does, whichever device it is on.
trait Runs: Send + Sync {
    fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal>;
    fn device(&self) -> String;
}

impl<D: Device> Runs for Loaded<D>
where
    D::Module: Send + Sync,
{
    fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal> {
        let last = std::mem::take(&mut *self.resident.lock().unwrap_or_else(|e| e.into_inner()));
        let on = OnDevice { mem: &self.mem, module: &self.module, last: &last, now: Mutex::new(Vec::new()) };
        let result = (|| {
            let args = args.into_iter().map(|v| upload(&on, v)).collect::<Result<Vec<_>>>()?;
            download(host::run(&on, &self.body, &self.kernels, args)?)
        })();
        *self.resident.lock().unwrap_or_else(|e| e.into_inner()) =
            on.now.into_inner().unwrap_or_else(|e| e.into_inner());
        result
    }

    fn device(&self) -> String {
        self.mem.lock().unwrap_or_else(|e| e.into_inner()).device().describe()
    }
}

fn upload<D: Device>(on: &OnDevice<'_, D>, v: ArraysVal) -> Result<Value<DeviceArray<D>>> {
    use crate::backend::c::host::Machine;
    Ok(match v {
        ArraysVal::Array(a) => Value::Array(on.upload(a)?),
        ArraysVal::Tuple(vs) => Value::Tuple(vs.into_iter().map(|v| upload(on, v)).collect::<Result<_>>()?),
    })
}

fn download<D: Device>(v: Value<DeviceArray<D>>) -> Result<ArraysVal> {
    Ok(match v {
        Value::Array(a) => ArraysVal::Array(a.host()?.clone()),
        Value::Tuple(vs) => ArraysVal::Tuple(vs.into_iter().map(download).collect::<Result<_>>()?),
    })
}

/// A program compiled for the CUDA backend.
pub struct CudaProgram {
    loaded: Box<dyn Runs>,
    source: String,
    kernels: usize,
}

impl CudaProgram {
    /// Lowers a fused program and loads its kernels on the device (the
    /// emulator with `ACCELERATE_CUDA_DEVICE=emulator`, else the GPU).
    pub fn new(p: &Program) -> Result<CudaProgram> {
        let l = lower_program(p, &TARGET)?;
        let functions: Vec<String> = l.kernels.iter().flat_map(functions).collect();
        let kernels = l.kernels.len();
        let loaded: Box<dyn Runs> = if emulated() {
            Box::new(load(emulator()?, l.body, l.kernels, &l.source, &functions)?)
        } else {
            Box::new(load(gpu()?, l.body, l.kernels, &l.source, &functions)?)
        };
        Ok(CudaProgram { loaded, source: l.source, kernels })
    }

    /// Runs the program on its arguments.
    pub fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal> {
        self.loaded.run(args)
    }

    /// The generated CUDA C of the program's kernels (without the prelude).
    pub fn cuda_source(&self) -> &str {
        &self.source
    }

    /// The device it runs on, in words.
    pub fn device(&self) -> String {
        self.loaded.device()
    }

    /// The number of kernels.
    pub fn kernel_count(&self) -> usize {
        self.kernels
    }
}

fn load<D: Device>(
    mem: Shared<D>,
    body: Cmd,
    kernels: Vec<Kernel>,
    source: &str,
    functions: &[String],
) -> Result<Loaded<D>> {
    let module = mem.lock().unwrap_or_else(|e| e.into_inner()).device_mut().load(source, functions)?;
    Ok(Loaded { body, kernels, module, mem, resident: Mutex::new(Vec::new()) })
}

/// The kernel functions of a kernel, by skeleton (the skeleton files'
/// functions).
fn functions(k: &Kernel) -> Vec<String> {
    use Skeleton::*;
    let suffixes: &[&str] = match k.skeleton {
        Generate { .. } | Stencil { .. } | Permute { .. } => &[""],
        FoldSeg { .. } => &["_warp", "_block"],
        Fold { .. } => &["_rows", "_warps", "_part", "_combine"],
        Scan { .. } => &["_rows", "_look"],
    };
    suffixes.iter().map(|s| format!("{}{s}", k.name)).collect()
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

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
//! manager, with LRU eviction to host memory). The code generation of a
//! plan's kernels (`c::codegen`, given this backend's skeleton writers,
//! `CudaTarget`) and what kernels share whatever the target
//! (`c::kernel`) are the CPU backend's, in `backend::c`.
//!
//! Running a program: `device` (a GPU through the driver API, or the
//! emulator of `emulate`, which runs the same CUDA C on the host: Note
//! [The CUDA emulator]), `exec` (the host commands, shared with the CPU
//! backend through `c::host`, and each skeleton's launches).
//!
//! Options (`CudaOptions`, in `Config::cuda`; their defaults come from the
//! environment, `exec::config`): the device (a GPU, or the emulator, for
//! tests on machines without one; slow), a cap on the device memory the
//! manager uses (arrays past it are evicted to the host, `memory`), the
//! emulator's C++ compiler, the kernel cache's folder. Each set of options
//! has its own device handle and memory manager.
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
mod foreign;
mod generate;
mod kernel;
pub mod memory;
mod permute;
mod scan;
mod stencil;

pub use compile::{cached_ptx_in, compile_ptx, nvrtc_unavailable, ptx_compilations, ptx_on_disk_in};
pub use foreign::{CudaImpl, DeviceBuffer, DeviceCall, DeviceFn};

use crate::c::codegen::{skeleton_files_target, write_kernels};
use crate::c::kernel::{Kernel, Skeleton};
use crate::cache::CacheDir;
use crate::host::{self, HostArray, Value};
use crate::{Prepare, Prepared};
use accelerate_base::array::ArraysVal;
use accelerate_base::error::{Error, Result};
use accelerate_plan::{self as plan, Cmd};
use device::{Device, Gpu};
use emulate::Emulator;
use exec::{DeviceArray, OnDevice, Resident, Shared};
use memory::MemoryManager;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// The CUDA prelude every generated file starts with.
pub(crate) fn prelude() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| crate::c::with_common_prelude(include_str!("prelude.cuh")))
}

skeleton_files_target!(CudaTarget);

/// Which device runs this backend's programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CudaDevice {
    /// The GPU (device 0), through the driver.
    Gpu,
    /// The CUDA emulator, on the host (Note [The CUDA emulator]; slow,
    /// for testing without a GPU: `ACCELERATE_CUDA_DEVICE=emulator`).
    Emulator,
}

/// The CUDA backend's options (`Config::cuda`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CudaOptions {
    pub device: CudaDevice,
    /// A cap on the device memory the memory manager uses, in MiB
    /// (`ACCELERATE_CUDA_MEMORY_MB`): arrays past it are evicted to the
    /// host.
    pub memory_mb: Option<usize>,
    /// The C++ compiler the emulator builds kernels with (`CXX`, default
    /// `c++`).
    pub cxx: String,
    /// Where compiled kernels (PTX, the emulator's objects) are kept.
    pub cache: CacheDir,
}

/// Why this backend cannot run programs here with these options: no
/// driver, no device, no NVRTC (none of which the emulator needs). Probed
/// once.
pub fn unavailable_with(options: &CudaOptions) -> Option<String> {
    match options.device {
        CudaDevice::Emulator => None,
        CudaDevice::Gpu => gpu_unavailable(),
    }
}

/// Why no GPU can run this backend's programs here (no driver, device or
/// NVRTC), whatever the options say. Probed once.
fn gpu_unavailable() -> Option<String> {
    static WHY: OnceLock<Option<String>> = OnceLock::new();
    WHY.get_or_init(|| device_unavailable().or_else(nvrtc_unavailable)).clone()
}

/// Whether a GPU can run this backend's programs here (driver, device
/// and NVRTC found), whatever the options say.
pub fn gpu_present() -> bool {
    gpu_unavailable().is_none()
}

fn unavailable_error(reason: String) -> Error {
    Error::BackendUnavailable { backend: "cuda".into(), reason }
}

/// A device and its memory manager, capped by the options.
fn manager<D: Device>(dev: D, options: &CudaOptions) -> Shared<D> {
    Arc::new(Mutex::new(match options.memory_mb {
        Some(mb) => MemoryManager::with_cap(dev, mb << 20),
        None => MemoryManager::new(dev),
    }))
}

/// The device of `options` with its memory manager, made once per process
/// for each set of options (two programs with different options have
/// managers of their own).
fn device_of<D: Device>(
    options: &CudaOptions,
    open: impl FnOnce() -> Result<D>,
    managers: &'static OnceLock<Mutex<HashMap<CudaOptions, Shared<D>>>>,
) -> Result<Shared<D>> {
    let mut m = managers.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    if let Some(s) = m.get(options) {
        return Ok(s.clone());
    }
    let s = manager(open()?, options);
    m.insert(options.clone(), s.clone());
    Ok(s)
}

/// The GPU of these options.
fn gpu(options: &CudaOptions) -> Result<Shared<Gpu>> {
    static GPUS: OnceLock<Mutex<HashMap<CudaOptions, Shared<Gpu>>>> = OnceLock::new();
    if let Some(why) = gpu_unavailable() {
        return Err(unavailable_error(why));
    }
    device_of(options, || Gpu::open(options.cache.clone()), &GPUS)
}

/// The emulated device of these options.
fn emulator(options: &CudaOptions) -> Result<Shared<Emulator>> {
    static EMULATORS: OnceLock<Mutex<HashMap<CudaOptions, Shared<Emulator>>>> = OnceLock::new();
    device_of(options, || Ok(Emulator::new(options.cxx.clone(), options.cache.clone())), &EMULATORS)
}

/// What the memory manager of a device has done so far (for tests and
/// statistics).
#[doc(hidden)]
#[derive(Clone, Copy, Debug)]
pub struct MemoryStatistics {
    /// Buffers evicted to the host.
    pub evictions: usize,
    /// Buffers copied to the device.
    pub uploads: usize,
    /// Of those, the ones copied ahead of the run that reads them, beside
    /// other launches (`Prepared::prefetch`).
    pub uploaded_ahead: usize,
    /// The device memory its buffers take now.
    pub used: usize,
}

/// `MemoryStatistics` of the device that programs run on with these
/// options.
#[doc(hidden)]
pub fn memory_statistics_with(options: &CudaOptions) -> Result<MemoryStatistics> {
    fn of<D: Device>(m: Shared<D>) -> MemoryStatistics {
        let m = m.lock().unwrap_or_else(|e| e.into_inner());
        MemoryStatistics {
            evictions: m.evictions,
            uploads: m.uploads,
            uploaded_ahead: m.uploaded_ahead,
            used: m.used(),
        }
    }
    Ok(match options.device {
        CudaDevice::Emulator => of(emulator(options)?),
        CudaDevice::Gpu => of(gpu(options)?),
    })
}

/// The time the device that programs run on with these options has spent
/// on this backend's kernels and device-to-device copies so far
/// (`Device::busy`): the difference across a run is the run's device time,
/// without its copies between host and device (for benchmarks).
#[doc(hidden)]
pub fn device_busy_with(options: &CudaOptions) -> Result<std::time::Duration> {
    fn of<D: Device>(m: Shared<D>) -> std::time::Duration {
        m.lock().unwrap_or_else(|e| e.into_inner()).device().busy()
    }
    Ok(match options.device {
        CudaDevice::Emulator => of(emulator(options)?),
        CudaDevice::Gpu => of(gpu(options)?),
    })
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
    /// Host arrays copied to the device ahead of the next run
    /// (`Prepared::prefetch`), which takes them.
    ahead: Arc<Mutex<Resident<D>>>,
}

/// What a compiled program does, whichever device it is on.
trait Runs: Send + Sync {
    fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal>;
    fn prefetch(&self, args: &[ArraysVal]) -> Option<Box<dyn FnOnce() + Send>>;
    fn device(&self) -> String;
}

impl<D: Device> Runs for Loaded<D>
where
    D::Module: Send + Sync,
{
    fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal> {
        let mut last = std::mem::take(&mut *self.resident.lock().unwrap_or_else(|e| e.into_inner()));
        last.append(&mut self.ahead.lock().unwrap_or_else(|e| e.into_inner()));
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

    /// Gives the host arrays of `args` device memory now, and returns the
    /// job that copies them there beside the launches of other threads
    /// (`exec::reserve_ahead`, `exec::fill_ahead`), for the next run;
    /// those on the device already (the last run's) are left.
    fn prefetch(&self, args: &[ArraysVal]) -> Option<Box<dyn FnOnce() + Send>> {
        let copier = self.mem.lock().unwrap_or_else(|e| e.into_inner()).device_mut().copier()?;
        let mut arrays = Vec::new();
        leaves(args, &mut arrays);
        let mut todo = Vec::new();
        for a in arrays {
            let known = |r: &Resident<D>| r.iter().any(|(h, _)| Arc::ptr_eq(h, a));
            if known(&self.resident.lock().unwrap_or_else(|e| e.into_inner()))
                || known(&self.ahead.lock().unwrap_or_else(|e| e.into_inner()))
            {
                continue;
            }
            if let Some((d, copies)) = exec::reserve_ahead(&self.mem, a) {
                todo.push((a.clone(), d, copies));
            }
        }
        if todo.is_empty() {
            return None;
        }
        let ahead = self.ahead.clone();
        Some(Box::new(move || {
            for (a, d, copies) in todo {
                if exec::fill_ahead(&*copier, &d, &copies) {
                    ahead.lock().unwrap_or_else(|e| e.into_inner()).push((a, d));
                }
            }
        }))
    }
}

fn leaves<'a>(vs: &'a [ArraysVal], out: &mut Vec<&'a Arc<accelerate_base::array::ArrayData>>) {
    for v in vs {
        match v {
            ArraysVal::Array(a) => out.push(a),
            ArraysVal::Tuple(ts) => leaves(ts, out),
        }
    }
}

pub(super) fn upload<D: Device>(on: &OnDevice<'_, D>, v: ArraysVal) -> Result<Value<DeviceArray<D>>> {
    use crate::host::Machine;
    Ok(match v {
        ArraysVal::Array(a) => Value::Array(on.upload(a)?),
        ArraysVal::Tuple(vs) => Value::Tuple(vs.into_iter().map(|v| upload(on, v)).collect::<Result<_>>()?),
    })
}

pub(super) fn download<D: Device>(v: Value<DeviceArray<D>>) -> Result<ArraysVal> {
    Ok(match v {
        Value::Array(a) => ArraysVal::Array(a.host()?.clone()),
        Value::Tuple(vs) => ArraysVal::Tuple(vs.into_iter().map(download).collect::<Result<_>>()?),
    })
}

/// The CUDA backend.
pub struct Cuda;

impl Prepare for Cuda {
    type Options = CudaOptions;
    fn prepare(
        p: &Arc<plan::Program>,
        options: &CudaOptions,
        print_source: bool,
    ) -> Result<Box<dyn Prepared>> {
        let program = CudaProgram::new(p, options)?;
        if print_source {
            eprintln!("== cuda ({}) ==\n{}", program.device(), program.cuda_source());
        }
        Ok(Box::new(program))
    }
}

impl Prepared for CudaProgram {
    fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal> {
        CudaProgram::run(self, args)
    }
    fn prefetch(&self, args: &[ArraysVal]) -> Option<Box<dyn FnOnce() + Send>> {
        self.loaded.prefetch(args)
    }
    fn copies_ahead(&self) -> bool {
        true
    }
    fn source(&self) -> Option<&str> {
        Some(self.cuda_source())
    }
    fn kernel_count(&self) -> Option<usize> {
        Some(CudaProgram::kernel_count(self))
    }
}

/// A program compiled for the CUDA backend.
pub struct CudaProgram {
    loaded: Box<dyn Runs>,
    source: String,
    kernels: usize,
}

impl CudaProgram {
    /// Writes a plan's kernels and loads them on the options' device.
    pub fn new(p: &plan::Program, options: &CudaOptions) -> Result<CudaProgram> {
        let l = write_kernels::<CudaTarget>(p);
        let functions: Vec<String> = l.kernels.iter().flat_map(functions).collect();
        let kernels = l.kernels.len();
        let loaded: Box<dyn Runs> = match options.device {
            CudaDevice::Emulator => {
                Box::new(load(emulator(options)?, p.body.clone(), l.kernels, &l.source, &functions)?)
            }
            CudaDevice::Gpu => {
                Box::new(load(gpu(options)?, p.body.clone(), l.kernels, &l.source, &functions)?)
            }
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
    Ok(Loaded {
        body,
        kernels,
        module,
        mem,
        resident: Mutex::new(Vec::new()),
        ahead: Arc::new(Mutex::new(Vec::new())),
    })
}

/// The kernel functions of a kernel: its name and its skeleton's
/// suffixes (each skeleton's file lists them beside its code).
fn functions(k: &Kernel) -> Vec<String> {
    use Skeleton::*;
    let suffixes: &[&str] = match k.skeleton {
        Generate { .. } => generate::FUNCTIONS,
        Fold { .. } => fold::FUNCTIONS,
        Scan { .. } => scan::FUNCTIONS,
        FoldSeg { .. } => fold_seg::FUNCTIONS,
        Permute { .. } => permute::FUNCTIONS,
        Stencil { .. } => stencil::FUNCTIONS,
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
pub fn program_source(p: &plan::Program) -> Result<String> {
    let l = write_kernels::<CudaTarget>(p);
    Ok(format!("{}{}", prelude(), l.source))
}

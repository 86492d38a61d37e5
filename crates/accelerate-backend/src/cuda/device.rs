//! The devices the CUDA backend runs kernels on: a GPU through the CUDA
//! driver API (`Gpu`, with `cudarc`), or the emulator, which runs the
//! same CUDA C on the host (`emulate::Emulator`, Note [The CUDA
//! emulator]). The executor (`exec`) is written against `Device`, so that
//! everything above a kernel launch is one code path for both.

use super::compile::cached_ptx_in;
use super::memory::{AllocError, DeviceMemory};
use crate::cache::CacheDir;
use accelerate_base::error::{Error, Result};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

/// Threads per block of every kernel (`ACC_BLOCK` of the CUDA prelude).
pub const BLOCK: u32 = 256;

/// `acc_args` of the preludes as a kernel receives it, by value: the
/// device addresses of the buffer addresses, the extents, the parameters,
/// the hoisted literals and the error record (`cuda::kernel`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct KernelArgs {
    pub bufs: u64,
    pub extents: u64,
    pub params: u64,
    pub consts: u64,
    pub err: u64,
}

// SAFETY: `#[repr(C)]`, five 64-bit words, the layout of `acc_args` on the
// device (pointers are 64-bit there).
unsafe impl cudarc::driver::DeviceRepr for KernelArgs {}

/// A device that runs a program's kernels, beside its memory.
pub trait Device: DeviceMemory<Buf: Send> + Send + 'static {
    /// A program's kernels, loaded.
    type Module: Send + Sync;
    /// What the device is, in words.
    fn describe(&self) -> String;
    /// Compiles (or finds in the kernel cache) and loads a program's
    /// kernels (CUDA C without the prelude, which the device adds), whose
    /// functions are `functions`.
    fn load(&mut self, kernels: &str, functions: &[String]) -> Result<Arc<Self::Module>>;
    /// Runs `function` on `blocks` blocks of `BLOCK` threads and waits
    /// for it to finish.
    fn launch(&mut self, module: &Self::Module, function: &str, blocks: u32, args: KernelArgs) -> Result<()>;
    /// Zeroes `bytes` bytes at device address `addr`.
    fn zero(&mut self, addr: u64, bytes: usize) -> Result<()>;
    /// Copies `bytes` bytes from device address `from` to `to`.
    fn copy(&mut self, from: u64, to: u64, bytes: usize) -> Result<()>;
    /// How many blocks keep the whole device busy: the most blocks a
    /// skeleton launches (its loops take any further work in turn).
    fn blocks(&self) -> u32;
    /// The time the device has spent so far on this backend's kernels and
    /// device-to-device copies (measured by the device: CUDA events on a
    /// GPU), for benchmarks that compare kernels without the copies
    /// between host and device.
    fn busy(&self) -> Duration;
    /// What copies to the device beside the launches (`Copier`), if the
    /// device can.
    fn copier(&mut self) -> Option<Arc<dyn Copier>>;
}

/// Copies to the device that run beside the kernels another thread
/// launches (on a GPU, on a stream of their own): how a sequence's next
/// chunk is uploaded while the chunk before it computes
/// (`MemoryManager::reserve`).
pub trait Copier: Send + Sync {
    /// Copies `host` to the device at `addr`, and waits for the copy.
    ///
    /// # Safety
    ///
    /// `addr .. addr + host.len()` lies in a live device allocation that
    /// nothing else reads or writes until this returns (a buffer the
    /// memory manager holds for the caller).
    unsafe fn upload(&self, addr: u64, host: &[u8]) -> std::result::Result<(), String>;
}

fn driver(what: &str, e: impl std::fmt::Debug) -> Error {
    Error::Internal(format!("CUDA driver: {what} failed: {e:?}"))
}

/// A GPU, through the driver API: device 0's primary context and its
/// default stream. Kernels are compiled by NVRTC for the device's own
/// architecture (`sm_XY` from its compute capability).
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    /// Uploads beside the launches, made on first use.
    copier: Option<Arc<GpuCopier>>,
    arch: &'static str,
    multiprocessors: u32,
    name: String,
    busy: Duration,
    /// The kernel cache, for PTX.
    cache: CacheDir,
}

/// A program's kernels on a GPU.
pub struct GpuModule {
    _module: Arc<CudaModule>,
    functions: HashMap<String, CudaFunction>,
}

impl Gpu {
    /// Device 0 (the caller has probed that the driver and a device are
    /// present: `cuda::unavailable`), keeping PTX in the cache `cache`.
    pub fn open(cache: CacheDir) -> Result<Gpu> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        let ctx = CudaContext::new(0).map_err(|e| driver("opening device 0", e))?;
        let (major, minor) =
            ctx.compute_capability().map_err(|e| driver("reading the compute capability", e))?;
        let multiprocessors = ctx
            .attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
            .map_err(|e| driver("reading the multiprocessor count", e))?;
        let name = ctx.name().unwrap_or_else(|_| "an unnamed device".into());
        // opened once per set of options: the architecture's name is made
        // once for each
        let arch: &'static str = Box::leak(format!("sm_{major}{minor}").into_boxed_str());
        // SAFETY: the backend orders every use of device memory itself: the
        // kernels, copies and allocations of the default stream one at a
        // time, and the copier's uploads only into buffers the memory
        // manager holds for them, allocated and fenced before the copy
        // starts (`MemoryManager::reserve`). cudarc's own events would
        // only add waits (and, with a second stream, a synchronisation of
        // the whole context).
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.default_stream();
        Ok(Gpu {
            ctx,
            stream,
            copier: None,
            arch,
            multiprocessors: multiprocessors.max(1) as u32,
            name,
            busy: Duration::ZERO,
            cache,
        })
    }

    /// Runs `op` on the stream between two timing events, waits for it,
    /// and adds the time between the events to `busy`.
    fn timed(&mut self, what: &str, op: impl FnOnce(&Gpu) -> Result<()>) -> Result<()> {
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.stream.record_event(timing).map_err(|e| driver("recording an event", e))?;
        op(self)?;
        let end = self.stream.record_event(timing).map_err(|e| driver("recording an event", e))?;
        end.synchronize().map_err(|e| driver(what, e))?;
        let ms = start.elapsed_ms(&end).map_err(|e| driver("timing", e))?;
        self.busy += Duration::from_secs_f64(f64::from(ms.max(0.0)) / 1e3);
        Ok(())
    }
}

impl DeviceMemory for Gpu {
    type Buf = CudaSlice<u8>;

    fn alloc(&mut self, bytes: usize) -> std::result::Result<Self::Buf, AllocError> {
        // SAFETY: the memory is uninitialised; the manager only hands it to
        // a kernel that writes it, or uploads into it before any read.
        match unsafe { self.stream.alloc::<u8>(bytes) } {
            Ok(b) => Ok(b),
            Err(cudarc::driver::DriverError(cudarc::driver::sys::CUresult::CUDA_ERROR_OUT_OF_MEMORY)) => {
                Err(AllocError::OutOfMemory)
            }
            Err(e) => Err(AllocError::Device(format!("{e:?}"))),
        }
    }

    fn free(&mut self, buf: Self::Buf) {
        drop(buf);
    }

    fn upload(&mut self, buf: &mut Self::Buf, host: &[u8]) -> std::result::Result<(), String> {
        let mut dst = buf.slice_mut(..host.len());
        self.stream.memcpy_htod(host, &mut dst).map_err(|e| format!("{e:?}"))?;
        self.stream.synchronize().map_err(|e| format!("{e:?}"))
    }

    fn download(&mut self, buf: &Self::Buf, host: &mut [u8]) -> std::result::Result<(), String> {
        let src = buf.slice(..host.len());
        self.stream.memcpy_dtoh(&src, host).map_err(|e| format!("{e:?}"))?;
        self.stream.synchronize().map_err(|e| format!("{e:?}"))
    }

    fn address(&self, buf: &Self::Buf) -> u64 {
        use cudarc::driver::DevicePtr;
        let (p, _sync) = buf.device_ptr(&self.stream);
        p
    }

    fn fence(&mut self) -> std::result::Result<(), String> {
        // an allocation is ordered on the default stream; the copier's
        // stream does not wait for it (launches wait for their kernels,
        // so this waits for the allocation alone)
        self.stream.synchronize().map_err(|e| format!("{e:?}"))
    }
}

/// A GPU's uploads on a non-blocking stream of their own, which does not
/// wait for the default stream's kernels. A copy overlaps a kernel only
/// from page-locked host memory (the CUDA programming guide, "Overlap of
/// Data Transfer and Kernel Execution"), so the bytes go through two
/// page-locked staging buffers of `STAGE` bytes in turn: one is filled
/// on the host while the other's copy runs.
pub struct GpuCopier {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    staging: std::sync::Mutex<Vec<cudarc::driver::PinnedHostSlice<u8>>>,
}

/// The size of each staging buffer of `GpuCopier`.
const STAGE: usize = 8 << 20;

impl GpuCopier {
    fn new(ctx: Arc<CudaContext>, stream: Arc<CudaStream>) -> GpuCopier {
        GpuCopier { ctx, stream, staging: std::sync::Mutex::new(Vec::new()) }
    }
}

impl Copier for GpuCopier {
    unsafe fn upload(&self, addr: u64, host: &[u8]) -> std::result::Result<(), String> {
        let err = |e: cudarc::driver::DriverError| format!("{e:?}");
        self.ctx.bind_to_thread().map_err(err)?;
        let mut staging = self.staging.lock().unwrap_or_else(|e| e.into_inner());
        while staging.len() < 2 {
            // SAFETY: its contents are only read after this thread wrote them
            staging.push(unsafe { self.ctx.alloc_pinned::<u8>(STAGE) }.map_err(err)?);
        }
        // the copy out of each buffer last started, waited for before the
        // buffer is written again
        let mut done: [Option<cudarc::driver::CudaEvent>; 2] = [None, None];
        for (k, piece) in host.chunks(STAGE).enumerate() {
            let b = k % 2;
            if let Some(e) = done[b].take() {
                e.synchronize().map_err(err)?;
            }
            let buf = staging[b].as_mut_slice().map_err(err)?;
            buf[..piece.len()].copy_from_slice(piece);
            // SAFETY: the caller's contract: `addr .. addr + host.len()` is a
            // live allocation that nothing else touches meanwhile; the
            // staged bytes stay unwritten until this copy's event is waited
            // for, and every copy is waited for before returning
            unsafe {
                cudarc::driver::result::memcpy_htod_async(
                    addr + (k * STAGE) as u64,
                    &buf[..piece.len()],
                    self.stream.cu_stream(),
                )
            }
            .map_err(err)?;
            done[b] = Some(self.stream.record_event(None).map_err(err)?);
        }
        self.stream.synchronize().map_err(err)
    }
}

impl Device for Gpu {
    type Module = GpuModule;

    fn describe(&self) -> String {
        format!("{} ({}, {} multiprocessors)", self.name, self.arch, self.multiprocessors)
    }

    fn load(&mut self, kernels: &str, functions: &[String]) -> Result<Arc<GpuModule>> {
        let ptx = cached_ptx_in(&format!("{}{kernels}", super::prelude()), self.arch, &self.cache)?;
        let module = self
            .ctx
            .load_module(cudarc::nvrtc::Ptx::from_src(ptx.to_string()))
            .map_err(|e| driver("loading the PTX", e))?;
        let mut map = HashMap::new();
        for f in functions {
            let function = module.load_function(f).map_err(|e| driver(&format!("finding kernel {f}"), e))?;
            map.insert(f.clone(), function);
        }
        Ok(Arc::new(GpuModule { _module: module, functions: map }))
    }

    fn launch(&mut self, module: &GpuModule, function: &str, blocks: u32, args: KernelArgs) -> Result<()> {
        use cudarc::driver::PushKernelArg;
        let f = module
            .functions
            .get(function)
            .ok_or_else(|| Error::Internal(format!("kernel function {function} not loaded")))?;
        let cfg = LaunchConfig { grid_dim: (blocks, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 };
        self.timed(&format!("running {function}"), |gpu| {
            let mut launch = gpu.stream.launch_builder(f);
            launch.arg(&args);
            // SAFETY: every kernel function takes one `acc_args` by value
            // (`cuda::kernel`), and the executor built `args` from the
            // buffers the manager made resident and pinned for this launch.
            unsafe { launch.launch(cfg) }.map(|_| ()).map_err(|e| driver(&format!("launching {function}"), e))
        })
    }

    fn zero(&mut self, addr: u64, bytes: usize) -> Result<()> {
        self.timed("zeroing", |gpu| {
            gpu.ctx.bind_to_thread().map_err(|e| driver("binding the context", e))?;
            // SAFETY: `addr .. addr + bytes` lies in a live allocation of
            // the manager (the executor passes a pinned buffer's address).
            unsafe { cudarc::driver::result::memset_d8_async(addr, 0, bytes, gpu.stream.cu_stream()) }
                .map_err(|e| driver("zeroing", e))
        })
    }

    fn copy(&mut self, from: u64, to: u64, bytes: usize) -> Result<()> {
        self.timed("copying on the device", |gpu| {
            gpu.ctx.bind_to_thread().map_err(|e| driver("binding the context", e))?;
            // SAFETY: both ranges lie in live allocations of the manager,
            // and they are different buffers.
            unsafe { cudarc::driver::result::memcpy_dtod_async(to, from, bytes, gpu.stream.cu_stream()) }
                .map_err(|e| driver("copying on the device", e))
        })
    }

    fn blocks(&self) -> u32 {
        // 8 blocks of 256 threads fill a multiprocessor's 2048 threads
        8 * self.multiprocessors
    }

    fn busy(&self) -> Duration {
        self.busy
    }

    fn copier(&mut self) -> Option<Arc<dyn Copier>> {
        if self.copier.is_none() {
            let stream = self.ctx.new_stream().ok()?;
            self.copier = Some(Arc::new(GpuCopier::new(self.ctx.clone(), stream)));
        }
        self.copier.clone().map(|c| c as Arc<dyn Copier>)
    }
}

//! The CUDA emulator: a `Device` that runs the CUDA backend's generated
//! CUDA C on the host, so that the backend (its kernels, its launches, its
//! memory manager, its host commands) is tested against the interpreter
//! on machines without a GPU. Chosen by `ACCELERATE_CUDA_DEVICE=emulator`.
//!
//! Note [The CUDA emulator]
//! A program's CUDA C file, prelude included, is compiled by the host's
//! C++ compiler (`$CXX`, else `c++`) between `emulate.h`, which gives it
//! what NVRTC would (the CUDA qualifiers, the thread coordinates, the
//! intrinsics it uses: shuffles, atomics, fences, bit casts), and
//! `emulate_tail.h`, the scheduler. The shared object goes through the
//! kernel cache like the CPU backend's (Note [The kernel cache]).
//!
//! A launch runs the grid's blocks one after another, in order; a block's
//! `ACC_BLOCK` threads are fibers on the calling thread, switched at
//! barriers (`__syncthreads`, and the two warp barriers of every
//! shuffle), so that a block's threads really do run between barriers in
//! some interleaving, and a barrier that some thread of its group never
//! reaches is reported as a deadlock instead of hanging. What a device
//! does and this does not: run blocks at once (a kernel that needs a
//! later block to make progress first would hang here; none of ours
//! does), run a warp's threads in lockstep (code that relied on that
//! without `__syncwarp` would be wrong on sm_70 and later anyway),
//! reorder memory operations between threads (the emulator is
//! sequentially consistent, so it cannot find a missing fence), and
//! CUDA's own math library (the emulator calls the host's; both are
//! within the ulps `docs/semantics.md` allows transcendental functions).
//! The grid is small (`blocks`), so that every grid-stride and
//! block-stride loop runs several rounds.

use super::device::{Copier, Device, KernelArgs};
use super::memory::{AllocError, DeviceMemory};
use crate::c::build::{command_words, Build};
use crate::cache::{self, CacheDir};
use accelerate_base::error::{Error, Result};
use libloading::Library;
use std::collections::HashMap;
use std::ffi::c_void;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

/// The flags the emulated kernels are compiled with: `-ffp-contract=off`,
/// as the CPU backend's (and NVRTC's `--fmad=false`), so that `a * b + c`
/// rounds twice; not optimised, since the test suite's time goes to
/// compiling its many small programs more than to running them (the
/// segmented scans' tests took 46 s at `-O0`, 78 s at `-O1`).
const FLAGS: [&str; 6] = ["-std=gnu++17", "-O0", "-fPIC", "-shared", "-w", "-ffp-contract=off"];

/// `acc_emu_launch` of `emulate_tail.h`.
type LaunchFn = unsafe extern "C" fn(*const c_void, *const KernelArgs, u32, *mut u8, usize) -> i32;

/// Threads per block (`ACC_BLOCK`), and the stack each emulated thread
/// has: a kernel's frames are small (its largest local is the 520-byte
/// error context), and the stacks are allocated once, their pages mapped
/// by the first launches that reach them.
const THREADS: usize = 256;
const STACK_BYTES: usize = 128 * 1024;

/// The emulated device: its memory is host memory, in 8-byte words.
pub struct Emulator {
    busy: Duration,
    /// The threads' stacks, in 16-byte words (so aligned), made at the
    /// first launch.
    stacks: Vec<u128>,
    /// The C++ compiler that builds the kernels.
    cxx: String,
    /// The kernel cache.
    cache: CacheDir,
}

impl Emulator {
    /// An emulator building kernels with the C++ compiler `cxx`, keeping
    /// them in the cache `cache`.
    pub fn new(cxx: String, cache: CacheDir) -> Emulator {
        Emulator { busy: Duration::ZERO, stacks: Vec::new(), cxx, cache }
    }
}

/// A program's kernels, compiled for the emulator.
pub struct EmulatedModule {
    functions: HashMap<String, usize>,
    launch: LaunchFn,
    _lib: Library,
}

/// The emulator's header and the CUDA prelude, as a header precompiled by
/// the C++ compiler with `flags` (most of the time of compiling a
/// program's kernels goes to reading them, `<math.h>` above all): the
/// header's path, with its `.gch` beside it, in the kernel cache, made
/// once per process and kept across processes. `None` when it cannot be
/// made, or the cache keeps nothing (`CacheDir::Off`, or a folder that
/// fails the checks): files are then compiled whole.
///
/// The header and its `.gch` are a cache entry like any other (Note
/// [Trusting the kernel cache]): a folder `<key>.<d>.pch` named by the
/// checksum in `<key>.sum`, `d` the digest of the key and the `.gch`,
/// and the header's text compared with the one it must hold; checked at
/// its first use in a process, and rebuilt if it fails.
fn precompiled_prelude(command: &str, flags: &[String], cache: &CacheDir) -> Option<PathBuf> {
    type Headers = Mutex<HashMap<(String, String, CacheDir), Option<PathBuf>>>;
    static HEADERS: OnceLock<Headers> = OnceLock::new();
    let headers = HEADERS.get_or_init(Default::default);
    let mut headers = headers.lock().unwrap_or_else(|e| e.into_inner());
    headers
        .entry((command.to_string(), flags.join(" "), cache.clone()))
        .or_insert_with(|| {
            let dir = cache::kept(cache)?;
            // the header and its key, made once for each compiler, flags and cache
            let text = format!("{}\n{}", include_str!("emulate.h"), super::prelude());
            let key = cache::key(&[
                env!("CARGO_PKG_VERSION"),
                "emulator-prelude",
                command,
                &flags.join(" "),
                &text,
            ]);
            if let Some(header) = cache::lookup_folder(&dir, &key, "pch", "prelude.h.gch")
                .filter(|folder| {
                    cache::read_trusted(&folder.join("prelude.h")).is_some_and(|t| t == text.as_bytes())
                })
                .map(|folder| folder.join("prelude.h"))
            {
                return Some(header);
            }
            cache::remove_folder(&dir, &key, "pch");
            let tmp = dir.join(cache::temporary(&key));
            std::fs::create_dir(&tmp).ok()?;
            let made = std::fs::write(tmp.join("prelude.h"), &text).is_ok()
                && Command::new(command)
                    .args(flags.iter().filter(|f| *f != "-shared"))
                    .args(["-x", "c++-header", "-o"])
                    .arg(tmp.join("prelude.h.gch"))
                    .arg(tmp.join("prelude.h"))
                    .output()
                    .is_ok_and(|o| o.status.success());
            if made {
                cache::publish_folder(&dir, &key, "pch", &tmp, "prelude.h.gch");
            }
            let _ = std::fs::remove_dir_all(&tmp);
            // another process may have published its own first: either is whole
            cache::lookup_folder(&dir, &key, "pch", "prelude.h.gch").map(|folder| folder.join("prelude.h"))
        })
        .clone()
}

impl DeviceMemory for Emulator {
    type Buf = Vec<u64>;

    fn alloc(&mut self, bytes: usize) -> std::result::Result<Vec<u64>, AllocError> {
        let mut v = Vec::new();
        let words = bytes.div_ceil(8);
        v.try_reserve_exact(words).map_err(|_| AllocError::OutOfMemory)?;
        v.resize(words, 0);
        Ok(v)
    }

    fn free(&mut self, buf: Vec<u64>) {
        drop(buf);
    }

    fn upload(&mut self, buf: &mut Vec<u64>, host: &[u8]) -> std::result::Result<(), String> {
        if host.len() > buf.len() * 8 {
            return Err(format!("{} bytes uploaded into a buffer of {}", host.len(), buf.len() * 8));
        }
        // SAFETY: the buffer holds at least `host.len()` bytes (checked).
        unsafe { std::ptr::copy_nonoverlapping(host.as_ptr(), buf.as_mut_ptr().cast::<u8>(), host.len()) };
        Ok(())
    }

    fn download(&mut self, buf: &Vec<u64>, host: &mut [u8]) -> std::result::Result<(), String> {
        if host.len() > buf.len() * 8 {
            return Err(format!("{} bytes downloaded from a buffer of {}", host.len(), buf.len() * 8));
        }
        // SAFETY: as for `upload`.
        unsafe { std::ptr::copy_nonoverlapping(buf.as_ptr().cast::<u8>(), host.as_mut_ptr(), host.len()) };
        Ok(())
    }

    fn address(&self, buf: &Vec<u64>) -> u64 {
        buf.as_ptr() as u64
    }
}

impl Device for Emulator {
    type Module = EmulatedModule;

    fn describe(&self) -> String {
        "the CUDA emulator (on the host)".into()
    }

    fn load(&mut self, kernels: &str, functions: &[String]) -> Result<Arc<EmulatedModule>> {
        let Some((command, mut flags)) = command_words(&self.cxx) else {
            return Err(Error::BackendUnavailable {
                backend: "cuda".into(),
                reason: format!("the emulator's C++ compiler setting `{}` (CXX) names no program", self.cxx),
            });
        };
        flags.extend(FLAGS.iter().map(|f| f.to_string()));
        // the emulator's header and the CUDA prelude, which start every
        // file, come precompiled where they can (`precompiled_prelude`)
        let full = match precompiled_prelude(&command, &flags, &self.cache) {
            Some(header) => {
                flags.push("-include".into());
                flags.push(header.display().to_string());
                format!("{kernels}\n{}", include_str!("emulate_tail.h"))
            }
            None => format!(
                "{}\n{}{kernels}\n{}",
                include_str!("emulate.h"),
                super::prelude(),
                include_str!("emulate_tail.h")
            ),
        };
        let key = cache::key(&[env!("CARGO_PKG_VERSION"), "emulator", &command, &flags.join(" "), &full]);
        static MEMORY: OnceLock<Mutex<cache::InMemory<EmulatedModule>>> = OnceLock::new();
        let memory = MEMORY.get_or_init(Default::default);
        if let Some(m) = memory.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return Ok(m);
        }
        let build = Build { command: &command, flags: &flags, libraries: &["-lm"], ext: "cpp" };
        let lib = build.load(&key, &full, "cuda", &self.cache)?;
        let missing = |s: &str, e: libloading::Error| {
            Error::Internal(format!("{s} missing from the emulated kernels: {e}"))
        };
        // SAFETY: `emulate_tail.h` defines `acc_emu_launch` with this type.
        let launch: LaunchFn =
            unsafe { *lib.get::<LaunchFn>(b"acc_emu_launch").map_err(|e| missing("acc_emu_launch", e))? };
        let mut map = HashMap::new();
        for f in functions {
            // SAFETY: only the address is taken; `acc_emu_launch` calls it
            // as `void (*)(const acc_args)`, the type of every kernel.
            let p: *const c_void =
                unsafe { *lib.get::<*const c_void>(f.as_bytes()).map_err(|e| missing(f, e))? };
            map.insert(f.clone(), p as usize);
        }
        let m = Arc::new(EmulatedModule { functions: map, launch, _lib: lib });
        memory.lock().unwrap_or_else(|e| e.into_inner()).insert(key, m.clone());
        Ok(m)
    }

    fn launch(
        &mut self,
        module: &EmulatedModule,
        function: &str,
        blocks: u32,
        args: KernelArgs,
    ) -> Result<()> {
        let f = *module
            .functions
            .get(function)
            .ok_or_else(|| Error::Internal(format!("kernel function {function} not loaded")))?;
        if self.stacks.is_empty() {
            let words = THREADS * STACK_BYTES / 16;
            self.stacks
                .try_reserve_exact(words)
                .map_err(|_| Error::Internal("the emulator could not allocate its threads' stacks".into()))?;
            self.stacks.resize(words, 0);
        }
        let start = Instant::now();
        // SAFETY: `f` is a kernel of this module, `args` points at buffers
        // the manager made resident and pinned for this launch (host
        // memory here), the stacks are THREADS of STACK_BYTES, 16-byte
        // aligned, and launches are serialised by the manager's lock (the
        // scheduler's state is the module's, the stacks this device's).
        let stacks = self.stacks.as_mut_ptr().cast::<u8>();
        let status = unsafe { (module.launch)(f as *const c_void, &args, blocks, stacks, STACK_BYTES) };
        self.busy += start.elapsed();
        match status {
            0 => Ok(()),
            1 => Err(Error::Internal(format!(
                "emulated kernel {function} deadlocked: a barrier that some thread of its block or warp never reached"
            ))),
            _ => Err(Error::Internal(format!("the emulator could not allocate its scheduler for {function}"))),
        }
    }

    fn zero(&mut self, addr: u64, bytes: usize) -> Result<()> {
        // SAFETY: `addr .. addr + bytes` lies in a live, pinned buffer.
        unsafe { std::ptr::write_bytes(addr as *mut u8, 0, bytes) };
        Ok(())
    }

    fn copy(&mut self, from: u64, to: u64, bytes: usize) -> Result<()> {
        // SAFETY: both ranges lie in live, pinned, different buffers.
        unsafe { std::ptr::copy_nonoverlapping(from as *const u8, to as *mut u8, bytes) };
        Ok(())
    }

    fn blocks(&self) -> u32 {
        4
    }

    fn busy(&self) -> Duration {
        self.busy
    }

    fn copier(&mut self) -> Option<Arc<dyn Copier>> {
        Some(Arc::new(HostCopier))
    }
}

/// The emulator's uploads beside the launches: its device memory is host
/// memory, so a copy is a `memcpy`, made on the caller's thread while
/// another runs kernels (the GPU's protocol, without the DMA).
struct HostCopier;

impl Copier for HostCopier {
    unsafe fn upload(&self, addr: u64, host: &[u8]) -> std::result::Result<(), String> {
        // SAFETY: the caller's contract: `addr` (a `Vec<u64>`'s data, whose
        // heap block does not move while the manager holds it) starts at
        // least `host.len()` bytes that nothing else touches meanwhile.
        unsafe { std::ptr::copy_nonoverlapping(host.as_ptr(), addr as *mut u8, host.len()) };
        Ok(())
    }
}

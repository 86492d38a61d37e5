//! CUDA C to PTX with NVRTC, loaded at run time (`cudarc`'s dynamic
//! loading): where the library is missing this says so, as an
//! `Error::BackendUnavailable`, instead of letting `cudarc` panic. PTX is
//! kept in the kernel cache, in memory and on disk, with the CPU
//! backend's keys and writes (Note [The kernel cache]).

use crate::cache::{self, CacheDir};
use accelerate_base::error::{Error, Result};
use cudarc::nvrtc::{compile_ptx_with_opts, CompileError, CompileOptions};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// NVRTC's options besides the architecture: no fused multiply-add, so
/// that `a * b + c` rounds twice, as in the interpreter and the CPU
/// backend (`-ffp-contract=off`; NVRTC fuses by default); and no warnings
/// for the prelude's helpers that a kernel may not use.
const OPTIONS: [&str; 3] = ["-std=c++17", "--fmad=false", "--diag-suppress=177,186,550"];

/// Why NVRTC cannot be used here, if it cannot (probed once).
pub fn nvrtc_unavailable() -> Option<String> {
    static WHY: OnceLock<Option<String>> = OnceLock::new();
    WHY.get_or_init(|| {
        // SAFETY: the probe only tries to open the library by its names.
        let present = unsafe { cudarc::nvrtc::sys::is_culib_present() };
        (!present).then(|| {
            "NVRTC (libnvrtc.so) was not found; install the CUDA toolkit, or \
             `pip install nvidia-cuda-nvrtc-cu12` and put its nvidia/cuda_nvrtc/lib on LD_LIBRARY_PATH"
                .to_string()
        })
    })
    .clone()
}

/// Compiles a CUDA C file (prelude included) to PTX for a GPU architecture
/// such as `sm_90`. NVRTC's log is the error's message when it rejects
/// the source: generated code that does not compile is a bug in the
/// library.
pub fn compile_ptx(source: &str, arch: &'static str) -> Result<String> {
    if let Some(reason) = nvrtc_unavailable() {
        return Err(Error::BackendUnavailable { backend: "cuda".into(), reason });
    }
    let opts = CompileOptions {
        arch: Some(arch),
        options: OPTIONS.iter().map(|o| o.to_string()).collect(),
        ..Default::default()
    };
    match compile_ptx_with_opts(source, opts) {
        Ok(ptx) => Ok(ptx.to_src()),
        Err(CompileError::CompileError { log, .. }) => Err(Error::Internal(format!(
            "NVRTC rejected the generated CUDA C for {arch}:\n{}",
            log.to_string_lossy()
        ))),
        Err(other) => Err(Error::Internal(format!("NVRTC failed for {arch}: {other:?}"))),
    }
}

/// NVRTC's version, `major.minor` (part of every cache key).
fn nvrtc_version() -> String {
    static VERSION: OnceLock<String> = OnceLock::new();
    VERSION
        .get_or_init(|| {
            let (mut major, mut minor) = (0, 0);
            // SAFETY: called only once NVRTC was found (`nvrtc_unavailable`);
            // the function writes two integers.
            unsafe { cudarc::nvrtc::sys::nvrtcVersion(&mut major, &mut minor) };
            format!("{major}.{minor}")
        })
        .clone()
}

/// The cache key of a CUDA C file compiled for `arch`.
fn ptx_key(source: &str, arch: &str) -> String {
    cache::key(&[env!("CARGO_PKG_VERSION"), "nvrtc", &nvrtc_version(), arch, &OPTIONS.join(" "), source])
}

static COMPILATIONS: AtomicUsize = AtomicUsize::new(0);

/// How many times this process compiled PTX for the cache (for tests).
pub fn ptx_compilations() -> usize {
    COMPILATIONS.load(Ordering::Relaxed)
}

/// The PTX of a CUDA C file (prelude included) for `arch`: from the kernel
/// cache in memory or on disk (in the folder of `cache`, if it passes the
/// checks of Note [Trusting the kernel cache]), or compiled by NVRTC and
/// cached.
pub fn cached_ptx_in(source: &str, arch: &'static str, cache: &CacheDir) -> Result<Arc<str>> {
    if let Some(reason) = nvrtc_unavailable() {
        return Err(Error::BackendUnavailable { backend: "cuda".into(), reason });
    }
    let key = ptx_key(source, arch);
    static MEMORY: OnceLock<Mutex<cache::InMemory<str>>> = OnceLock::new();
    let memory = MEMORY.get_or_init(Default::default);
    if let Some(p) = memory.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
        return Ok(p);
    }
    let dir = cache::kept(cache);
    let from_disk = dir
        .as_deref()
        .and_then(|dir| cache::lookup(dir, &key, "ptx"))
        .and_then(|e| String::from_utf8(e.bytes).ok());
    let ptx: Arc<str> = match from_disk {
        Some(text) => text.into(),
        None => {
            let text = compile_ptx(source, arch)?;
            COMPILATIONS.fetch_add(1, Ordering::Relaxed);
            // a cache that cannot be written is no error: the PTX is used
            if let Some(dir) = dir.as_deref() {
                let tmp = dir.join(format!("{}.ptx", cache::temporary(&key)));
                if std::fs::write(&tmp, &text).is_ok() {
                    cache::publish(dir, &key, "ptx", &tmp);
                }
                let _ = std::fs::remove_file(&tmp);
            }
            text.into()
        }
    };
    memory.lock().unwrap_or_else(|e| e.into_inner()).insert(key, ptx.clone());
    Ok(ptx)
}

/// Where the disk cache of `cache` keeps the PTX of a CUDA C file for
/// `arch`, if it holds a sound entry (for tests).
pub fn ptx_on_disk_in(source: &str, arch: &str, cache: &CacheDir) -> Option<std::path::PathBuf> {
    let dir = cache::kept(cache)?;
    nvrtc_unavailable()
        .is_none()
        .then(|| cache::lookup(&dir, &ptx_key(source, arch), "ptx"))
        .flatten()
        .map(|e| e.path)
}

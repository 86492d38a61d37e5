//! How a program is compiled and run: the backend and the optimisation
//! switches, from code or from the environment.
//!
//! Environment variables (read by [`Config::from_env`], which `run` and
//! `compile` use):
//!
//! - `ACCELERATE_BACKEND=interp|cpu|cuda` chooses the backend (`cuda` only
//!   with the `cuda` feature). The default is `Backend::default_available`:
//!   the CUDA backend when the feature is on and a GPU is found, else the
//!   CPU backend when a C compiler is found, else the interpreter (with a
//!   one-time warning saying why).
//! - `ACCELERATE_FLAGS` is a comma-separated list of switches, after
//!   Accelerate's `-fno-...` flags: `no-acc-sharing` (no array sharing
//!   recovery), `no-exp-sharing` (no scalar sharing recovery),
//!   `no-simplify` (no simplifier), `no-cse` (no common-subexpression
//!   elimination in the simplifier), `no-fusion` (no array fusion: every
//!   operation writes its result to memory). For ablations only: without
//!   sharing recovery, shared work is repeated.
//! - `ACCELERATE_DUMP` is a comma-separated list of phases (`sharing`, `simplify`,
//!   `fusion`, `plan`, or `all`) whose IR (or plan) is printed to standard error; `c` prints
//!   the C source the CPU backend generates, `cuda` the CUDA backend's.
//!
//! Each backend has its own options (`CpuOptions`, `CudaOptions`), carried
//! in `Config`, so that two programs with different options run in one
//! process. Their defaults come from the environment, read here and
//! nowhere else (by `Config::default`, and so by `Config::from_env`):
//!
//! - CPU: `ACCELERATE_THREADS` (workers; default one per core), `CC` (the
//!   C compiler, default `cc`), `ACCELERATE_CFLAGS` (extra flags, such as
//!   a sanitizer's);
//! - CUDA: `ACCELERATE_CUDA_DEVICE=emulator` (the CUDA emulator instead
//!   of a GPU), `ACCELERATE_CUDA_MEMORY_MB` (a cap on the device memory
//!   it uses), `CXX` (the emulator's C++ compiler, default `c++`);
//! - both: the kernel cache's folder, `ACCELERATE_CACHE_DIR`, else
//!   `$XDG_CACHE_HOME/accelerate-rs`, else `~/.cache/accelerate-rs`;
//!   `ACCELERATE_CACHE=off` for a temporary one;
//! - `ACCELERATE_POOL_MB` (default 512): the storage of dropped arrays kept
//!   for reuse (`array::pool`, one per process: the last program run sets
//!   its bound).

use super::error::{Error, Result};
pub use crate::backend::cpu::CpuOptions;
#[cfg(feature = "cuda")]
pub use crate::backend::cuda::{CudaDevice, CudaOptions};
use crate::backend::CacheDir;
use accelerate_embed::SharingOptions;
use std::path::PathBuf;

/// Which backend runs programs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Backend {
    /// The reference interpreter.
    Interpreter,
    /// The multicore CPU backend (C compiled at run time).
    Cpu,
    /// The CUDA backend (CUDA C compiled by NVRTC at run time), on the
    /// GPU, or on the emulator with `ACCELERATE_CUDA_DEVICE=emulator`.
    /// Where it cannot run, `run` and `compile` return
    /// `Error::BackendUnavailable` saying why (`backend::cuda::unavailable`).
    #[cfg(feature = "cuda")]
    Cuda,
}

impl Backend {
    /// The CUDA backend when the `cuda` feature is on and a GPU can run
    /// it (driver, device and NVRTC found); else the CPU backend when a C
    /// compiler is found; else the interpreter (saying why, once).
    pub fn default_available() -> Backend {
        Backend::available_with(&cpu_options_from_env())
    }

    fn available_with(cpu: &CpuOptions) -> Backend {
        #[cfg(feature = "cuda")]
        if crate::backend::cuda::gpu_present() {
            return Backend::Cuda;
        }
        match crate::backend::cpu::unavailable_with(cpu) {
            None => Backend::Cpu,
            Some(reason) => {
                static WARNED: std::sync::Once = std::sync::Once::new();
                WARNED.call_once(|| {
                    eprintln!("accelerate: the CPU backend is unavailable ({reason}); using the interpreter")
                });
                Backend::Interpreter
            }
        }
    }
}

/// Compilation and execution options.
#[derive(Clone, Debug)]
pub struct Config {
    pub backend: Backend,
    pub sharing: SharingOptions,
    /// Run the simplifier (`trafo::simplify`).
    pub simplify: bool,
    /// Eliminate common subexpressions in the simplifier (`trafo::cse`).
    pub cse: bool,
    /// Run array fusion (`trafo::fusion`).
    pub fusion: bool,
    /// Phases whose IR is printed to standard error.
    pub dump: Vec<String>,
    /// The CPU backend's options.
    pub cpu: CpuOptions,
    /// The CUDA backend's options.
    #[cfg(feature = "cuda")]
    pub cuda: CudaOptions,
    /// The storage of dropped arrays kept for reuse, in MiB (`array::pool`).
    pub pool_mb: usize,
}

impl Default for Config {
    /// The default pipeline, on the best backend available, with the
    /// backends' options of the environment (module docs).
    fn default() -> Self {
        let cpu = cpu_options_from_env();
        Config {
            backend: Backend::available_with(&cpu),
            sharing: SharingOptions { arrays: true, scalars: true },
            simplify: true,
            cse: true,
            fusion: true,
            dump: Vec::new(),
            cpu,
            #[cfg(feature = "cuda")]
            cuda: cuda_options_from_env(),
            pool_mb: var("ACCELERATE_POOL_MB").and_then(|s| s.trim().parse().ok()).unwrap_or(512),
        }
    }
}

/// An environment variable's value, if set and not empty.
fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The kernel cache's folder of the environment (module docs).
fn cache_from_env() -> CacheDir {
    if let Some(d) = std::env::var_os("ACCELERATE_CACHE_DIR").filter(|d| !d.is_empty()) {
        return CacheDir::At(PathBuf::from(d));
    }
    if var("ACCELERATE_CACHE").as_deref() == Some("off") {
        return CacheDir::Off;
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    CacheDir::At(base.join("accelerate-rs"))
}

/// The CPU backend's default options, changed by the environment (module
/// docs).
pub(crate) fn cpu_options_from_env() -> CpuOptions {
    CpuOptions {
        threads: var("ACCELERATE_THREADS").and_then(|s| s.trim().parse().ok()).unwrap_or(0),
        cc: var("CC").unwrap_or_else(|| "cc".into()),
        cflags: var("ACCELERATE_CFLAGS").unwrap_or_default().split_whitespace().map(String::from).collect(),
        cache: cache_from_env(),
    }
}

/// The CUDA backend's default options, changed by the environment (module
/// docs). A memory cap that is not a whole number of MiB is kept as
/// written, for `Config::from_env` to reject.
#[cfg(feature = "cuda")]
pub(crate) fn cuda_options_from_env() -> CudaOptions {
    let emulator = var("ACCELERATE_CUDA_DEVICE").is_some_and(|d| d == "emulator");
    CudaOptions {
        device: if emulator { CudaDevice::Emulator } else { CudaDevice::Gpu },
        memory_mb: var("ACCELERATE_CUDA_MEMORY_MB").and_then(|s| s.trim().parse().ok()),
        cxx: var("CXX").unwrap_or_else(|| "c++".into()),
        cache: cache_from_env(),
    }
}

fn list(var: &str) -> Vec<String> {
    std::env::var(var)
        .unwrap_or_default()
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

impl Config {
    /// The default configuration, changed by the environment variables in
    /// the module documentation.
    pub fn from_env() -> Result<Config> {
        let mut c = Config::default();
        match std::env::var("ACCELERATE_BACKEND").as_deref() {
            Err(_) | Ok("") => {}
            Ok("interp") => c.backend = Backend::Interpreter,
            Ok("cpu") => c.backend = Backend::Cpu,
            #[cfg(feature = "cuda")]
            Ok("cuda") => c.backend = Backend::Cuda,
            Ok(other) => {
                let known = if cfg!(feature = "cuda") { "interp, cpu, cuda" } else { "interp, cpu" };
                return Err(Error::Config(format!("ACCELERATE_BACKEND={other}: the backends are: {known}")));
            }
        }
        for flag in list("ACCELERATE_FLAGS") {
            match flag.as_str() {
                "no-acc-sharing" => c.sharing.arrays = false,
                "no-exp-sharing" => c.sharing.scalars = false,
                "no-simplify" => c.simplify = false,
                "no-cse" => c.cse = false,
                "no-fusion" => c.fusion = false,
                other => {
                    return Err(Error::Config(format!(
                        "ACCELERATE_FLAGS: unknown flag {other} (known: no-acc-sharing, no-exp-sharing, no-simplify, no-cse, no-fusion)"
                    )))
                }
            }
        }
        c.dump = list("ACCELERATE_DUMP");
        #[cfg(feature = "cuda")]
        if c.backend == Backend::Cuda {
            if let Some(s) = var("ACCELERATE_CUDA_MEMORY_MB").filter(|s| s.trim().parse::<usize>().is_err()) {
                return Err(Error::Config(format!(
                    "ACCELERATE_CUDA_MEMORY_MB={s}: expected a whole number of MiB"
                )));
            }
        }
        Ok(c)
    }

    pub fn with_backend(mut self, b: Backend) -> Config {
        self.backend = b;
        self
    }

    pub fn with_simplify(mut self, on: bool) -> Config {
        self.simplify = on;
        self
    }

    pub fn with_cse(mut self, on: bool) -> Config {
        self.cse = on;
        self
    }

    pub fn with_fusion(mut self, on: bool) -> Config {
        self.fusion = on;
        self
    }

    pub fn with_cpu(mut self, cpu: CpuOptions) -> Config {
        self.cpu = cpu;
        self
    }

    #[cfg(feature = "cuda")]
    pub fn with_cuda(mut self, cuda: CudaOptions) -> Config {
        self.cuda = cuda;
        self
    }

    pub fn with_sharing(mut self, arrays: bool, scalars: bool) -> Config {
        self.sharing = SharingOptions { arrays, scalars };
        self
    }

    pub(crate) fn dumps(&self, phase: &str) -> bool {
        self.dump.iter().any(|d| d == phase || d == "all")
    }
}

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
//!   `fusion`, or `all`) whose IR is printed to standard error; `c` prints
//!   the C source the CPU backend generates, `cuda` the CUDA backend's.

use super::error::{Error, Result};
use crate::trafo::SharingOptions;

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
        #[cfg(feature = "cuda")]
        if crate::backend::cuda::gpu_present() {
            return Backend::Cuda;
        }
        match crate::backend::cpu::unavailable() {
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
}

impl Default for Config {
    fn default() -> Self {
        Config {
            backend: Backend::default_available(),
            sharing: SharingOptions { arrays: true, scalars: true },
            simplify: true,
            cse: true,
            fusion: true,
            dump: Vec::new(),
        }
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

    pub fn with_sharing(mut self, arrays: bool, scalars: bool) -> Config {
        self.sharing = SharingOptions { arrays, scalars };
        self
    }

    pub(crate) fn dumps(&self, phase: &str) -> bool {
        self.dump.iter().any(|d| d == phase || d == "all")
    }
}

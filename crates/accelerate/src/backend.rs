//! The backends (`accelerate_backend`), and the one place that chooses
//! which runs a program: `prepare`, from a `Config`. The helpers here that
//! take no options use the environment's (`Config::default`), as `run`
//! does.

pub use accelerate_backend::{interp, CacheDir, Prepare, Prepared};

use crate::array::pool;
use crate::exec::config::{Backend, Config};
use crate::exec::error::Result;
use crate::plan;
use std::sync::Arc;

/// Prepares a plan for the configuration's backend, with its options:
/// the one place that chooses a backend (the backends themselves see only
/// their options).
pub(crate) fn prepare(plan: &Arc<plan::Program>, config: &Config) -> Result<Box<dyn Prepared>> {
    pool::set_limit(config.pool_mb);
    match config.backend {
        Backend::Interpreter => interp::Interpreter::prepare(plan, &(), false),
        Backend::Cpu => cpu::Cpu::prepare(plan, &config.cpu, config.dumps("c")),
        #[cfg(feature = "cuda")]
        Backend::Cuda => cuda::Cuda::prepare(plan, &config.cuda, config.dumps("cuda")),
    }
}

/// The multicore CPU backend: kernels in C, compiled by the host's C
/// compiler at run time (`accelerate_backend::cpu`).
pub mod cpu {
    pub use accelerate_backend::cpu::*;

    use crate::exec::config::cpu_options_from_env;
    use crate::exec::error::Result;

    /// Why this backend cannot run on this machine with the environment's
    /// options, if it cannot (no C compiler).
    pub fn unavailable() -> Option<String> {
        unavailable_with(&cpu_options_from_env())
    }

    /// `vectorised_loops_with` the environment's options.
    pub fn vectorised_loops(source: &str) -> Result<Option<Vec<(String, usize)>>> {
        vectorised_loops_with(source, &cpu_options_from_env())
    }
}

/// The CUDA backend: kernels in CUDA C, compiled by NVRTC at run time
/// (`accelerate_backend::cuda`).
#[cfg(feature = "cuda")]
pub mod cuda {
    pub use accelerate_backend::cuda::*;

    use crate::array::Arrays;
    use crate::exec::config::{cuda_options_from_env, Config};
    use crate::exec::error::Result;
    use crate::lang::Acc;
    use std::sync::Arc;

    /// Why this backend cannot run programs here with the environment's
    /// options: no driver, no device, no NVRTC (none of which the emulator
    /// needs). Probed once.
    pub fn unavailable() -> Option<String> {
        unavailable_with(&cuda_options_from_env())
    }

    /// `memory_statistics_with` the environment's options.
    #[doc(hidden)]
    pub fn memory_statistics() -> Result<MemoryStatistics> {
        memory_statistics_with(&cuda_options_from_env())
    }

    /// `device_busy_with` the environment's options.
    #[doc(hidden)]
    pub fn device_busy() -> Result<std::time::Duration> {
        device_busy_with(&cuda_options_from_env())
    }

    /// `cached_ptx_in` the environment's kernel cache.
    pub fn cached_ptx(source: &str, arch: &'static str) -> Result<Arc<str>> {
        cached_ptx_in(source, arch, &cuda_options_from_env().cache)
    }

    /// `ptx_on_disk_in` the environment's kernel cache.
    pub fn ptx_on_disk(source: &str, arch: &str) -> Option<std::path::PathBuf> {
        ptx_on_disk_in(source, arch, &cuda_options_from_env().cache)
    }

    /// The CUDA C of a computation's kernels, prelude included, after the
    /// pipeline of the environment's configuration (`Config::from_env`).
    /// Needs no GPU and no CUDA library: for tests and for reading.
    #[doc(hidden)]
    #[track_caller]
    pub fn cuda_source<A: Arrays>(acc: &Acc<A>) -> Result<String> {
        let config = Config::from_env()?;
        let c = crate::exec::pipeline::compile_graph(&[], acc.id(), &config)?;
        program_source(&c.plan)
    }
}

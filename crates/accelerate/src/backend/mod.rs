//! Backends. Each consumes a plan (`crate::plan`) and nothing else of the
//! pipeline: it prepares the plan once, with its own options (`Prepare`),
//! and runs the result many times (`Prepared`). The interpreter is the
//! reference the others are tested against.
//!
//! Every backend has the same shape: `mod.rs` with its options and its
//! `Prepare`, one file per skeleton, its code generation and its runtime;
//! the host program of a plan is walked by the one walker every backend
//! shares (`host`).

pub(crate) mod c;
pub(crate) mod cache;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub(crate) mod host;
pub mod interp;

pub use cache::CacheDir;

use crate::array::ArraysVal;
use crate::exec::config::{Backend, Config};
use crate::exec::error::Result;
use crate::plan;
use std::sync::Arc;

/// A backend: how it prepares a plan, with its options (`Config` carries
/// every backend's).
pub(crate) trait Prepare {
    type Options;
    /// The plan made ready to run: kernels generated, compiled and loaded;
    /// with `print_source`, their generated source is printed to standard
    /// error (`ACCELERATE_DUMP=c` or `cuda`).
    fn prepare(
        plan: &Arc<plan::Program>,
        options: &Self::Options,
        print_source: bool,
    ) -> Result<Box<dyn Prepared>>;
}

/// A plan prepared by a backend, run as many times as asked, from any
/// thread.
pub(crate) trait Prepared: Send + Sync {
    /// Runs the program on its arguments (its parameters' values,
    /// outermost first).
    fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal>;
    /// The generated source of its kernels, if the backend generates any.
    fn source(&self) -> Option<&str> {
        None
    }
    /// The number of kernels it compiled, if it compiles any.
    fn kernel_count(&self) -> Option<usize> {
        None
    }
}

/// Prepares a plan for the configuration's backend, with its options:
/// the one place that chooses a backend (with the crate split, the
/// facade's; the backends themselves see only their options).
pub(crate) fn prepare(plan: &Arc<plan::Program>, config: &Config) -> Result<Box<dyn Prepared>> {
    crate::array::pool::set_limit(config.pool_mb);
    match config.backend {
        Backend::Interpreter => interp::Interpreter::prepare(plan, &(), false),
        Backend::Cpu => cpu::Cpu::prepare(plan, &config.cpu, config.dumps("c")),
        #[cfg(feature = "cuda")]
        Backend::Cuda => cuda::Cuda::prepare(plan, &config.cuda, config.dumps("cuda")),
    }
}

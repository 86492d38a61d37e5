//! The backends of accelerate. Each consumes a plan (`accelerate_plan`) and nothing else of the
//! pipeline: it prepares the plan once, with its own options (`Prepare`),
//! and runs the result many times (`Prepared`). The interpreter is the
//! reference the others are tested against.
//!
//! Every backend has the same shape: `mod.rs` with its options and its
//! `Prepare`, one file per skeleton, its code generation and its runtime;
//! the host program of a plan is walked by the one walker every backend
//! shares (`host`).
//!
//! A backend sees only its own options; which backend runs a program is
//! the `accelerate` facade's choice (its `Config`), and so is reading the
//! environment for the options' defaults.

pub(crate) mod c;
pub(crate) mod cache;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub(crate) mod host;
pub mod interp;

pub use cache::CacheDir;

use accelerate_base::array::ArraysVal;
use accelerate_base::error::Result;
use accelerate_plan as plan;
use std::sync::Arc;
use std::time::Duration;

/// A backend: how it prepares a plan, with its options (the facade's
/// `Config` carries every backend's).
pub trait Prepare {
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
pub trait Prepared: Send + Sync {
    /// Runs the program on its arguments (its parameters' values,
    /// outermost first).
    fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal>;
    /// Makes ready what a coming run on `args` will need: what must be
    /// done now (the CUDA backend gives them device memory), and a job to
    /// run on another thread while this thread runs this or another
    /// program (the CUDA backend's copies to the device, where its next
    /// run finds them: a sequence's next chunk, uploaded while the chunk
    /// before it computes). Only an optimisation: whatever it could not
    /// do, the run does.
    fn prefetch(&self, _args: &[ArraysVal]) -> Option<Box<dyn FnOnce() + Send>> {
        None
    }
    /// Whether `prefetch` does anything: a caller that must do work to
    /// have the arguments early does it only then.
    fn copies_ahead(&self) -> bool {
        false
    }
    /// The generated source of its kernels, if the backend generates any.
    fn source(&self) -> Option<&str> {
        None
    }
    /// The number of kernels it compiled, if it compiles any.
    fn kernel_count(&self) -> Option<usize> {
        None
    }
    /// How long each of the backend's own steps took when it prepared the
    /// plan, in order (the CPU backend's: generating C, then compiling
    /// it, or loading it from the kernel cache, and loading it).
    fn phases(&self) -> &[(&'static str, Duration)] {
        &[]
    }
    /// How many times its runs have run a row group row by row
    /// (`plan::rows`), if the backend runs row groups.
    fn rows_run(&self) -> Option<usize> {
        None
    }
    /// How many of its runs' launches have written their result over an
    /// array nothing read again (Note [Updates in place] in
    /// `plan/in_place.rs`), if the backend does that.
    fn in_place_runs(&self) -> Option<usize> {
        None
    }
}

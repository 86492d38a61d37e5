//! # accelerate-bench
//!
//! Benchmarks of accelerate-rs on its CPU backend against hand-written
//! Rust (sequential, and parallel with rayon) and hand-written C with
//! OpenMP, with the machine's memory bandwidth (a STREAM triad) as the
//! yardstick of the memory-bound programs. `docs/benchmarks.md` holds a
//! run and its reading; `src/main.rs` the command line.
//!
//! The Accelerate programs, their sequential references and their inputs
//! are the ones the library's examples run, from the `accelerate-programs`
//! corpus, so that a benchmark measures the program an example checks.
//!
//! Files: `harness` (checking, then interleaved timing and medians),
//! `programs/` (one file per benchmark: the sizes, the hand-written
//! versions, and how the corpus's program and reference are run and
//! checked), `native` (the hand-written Rust's hot loops compiled for this
//! processor's vector unit), `ffi` (the C baselines in `c/`), `check`
//! (tolerances), `report` (the Markdown tables and the JSON file),
//! `compile_time` (cold and cached compile times, each measured in a child
//! process), `gpu` (feature `cuda`: the CUDA backend against hand-written
//! CUDA C, with its own command, `src/bin/gpu.rs`), `scaling` (how
//! compile time grows with program size, phase by phase, with its own
//! command, `src/bin/scaling.rs`).
//!
//! Invariant: no variant is timed before its result has been compared
//! with the sequential reference (`harness::measure`); the tests run that
//! comparison for every variant of every benchmark at a tiny size.

pub mod check;
pub mod compile_time;
pub mod ffi;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod harness;
pub mod native;
pub mod peers;
pub mod programs;
pub mod report;
pub mod scaling;

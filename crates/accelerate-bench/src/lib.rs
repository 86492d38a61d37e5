//! # accelerate-bench
//!
//! Benchmarks of accelerate-rs on its CPU backend against hand-written
//! Rust (sequential, and parallel with rayon) and hand-written C with
//! OpenMP, with the machine's memory bandwidth (a STREAM triad) as the
//! yardstick of the memory-bound programs. `docs/benchmarks.md` holds a
//! run and its reading; `src/main.rs` the command line.
//!
//! Files: `harness` (checking, then interleaved timing and medians),
//! `programs/` (one file per benchmark: the Accelerate program, the
//! reference and the hand-written versions), `native` (the hand-written
//! Rust's hot loops compiled for this processor's vector unit), `ffi`
//! (the C baselines in `c/`), `check` (tolerances), `data` (deterministic
//! inputs), `report` (the Markdown tables and the JSON file),
//! `compile_time` (cold and cached compile times, each measured in a child
//! process), `gpu` (feature `cuda`: the CUDA backend against hand-written
//! CUDA C, with its own command, `src/bin/gpu.rs`).
//!
//! Invariant: no variant is timed before its result has been compared
//! with the sequential reference (`harness::measure`); the tests run that
//! comparison for every variant of every benchmark at a tiny size.

pub mod check;
pub mod compile_time;
pub mod data;
pub mod ffi;
#[cfg(feature = "cuda")]
pub mod gpu;
pub mod harness;
pub mod native;
pub mod programs;
pub mod report;

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
//!   operation writes its result to memory), `no-ilp` (no clustering of
//!   sibling operations into multi-output kernels, `trafo::cluster`:
//!   fusion as ICFP'13 has it), `no-rows` (no row groups,
//!   `plan::rows`: every kernel runs by itself), `no-copy-ahead` (a
//!   sequence's next chunk is not copied to the device while the current
//!   one computes, Note [Chunks copied ahead]). For ablations only: without
//!   sharing recovery, shared work is repeated. And `fast-math`
//!   (`Config::with_fast_math`): the CPU backend relaxes the float rules
//!   as docs/semantics.md says ("Fast-math mode").
//! - `ACCELERATE_DUMP` is a comma-separated list of phases (`sharing`,
//!   `text` (the text front end's lowered program), `lift`, `simplify`,
//!   `fusion`, `cluster`, `gathers` (the CPU backend's values gathered
//!   before a scatter, where a program has them), `lines` (the CPU
//!   backend's copies of lines read while written, where a program has
//!   them), `plan`, or `all`) whose IR (or plan) is printed to standard error;
//!   `ilp` prints each clustering problem's size, solve time and outcome; `schedule` each
//!   sequence chunk's size, time and the scheduler's decision; `c` prints
//!   the C source the CPU backend generates, `cuda` the CUDA backend's.
//!
//! Each backend has its own options (`CpuOptions`, `CudaOptions`), carried
//! in `Config`, so that two programs with different options run in one
//! process. Their defaults come from the environment, read here and
//! nowhere else (by `Config::default`, and so by `Config::from_env`):
//!
//! - CPU: `ACCELERATE_THREADS` (workers; default one per core), `CC` (the
//!   C compiler, default `cc`), `ACCELERATE_CFLAGS` (extra flags, such as
//!   a sanitizer's), `ACCELERATE_PARALLEL_WORK` (the work below which a
//!   launch runs on one worker, `Config::with_parallel_work`);
//! - CUDA: `ACCELERATE_CUDA_DEVICE=emulator` (the CUDA emulator instead
//!   of a GPU), `ACCELERATE_CUDA_MEMORY_MB` (a cap on the device memory
//!   it uses), `CXX` (the emulator's C++ compiler, default `c++`);
//! - both: the kernel cache's folder, `ACCELERATE_CACHE_DIR`, else
//!   `$XDG_CACHE_HOME/accelerate-rs`, else `~/.cache/accelerate-rs`;
//!   `ACCELERATE_CACHE=off` (or `on`, the default) for private temporary
//!   folders instead;
//! - `ACCELERATE_POOL_MB` (default 512): the storage of dropped arrays kept
//!   for reuse (`array::pool`, one per process: the last program run sets
//!   its bound);
//! - `ACCELERATE_SEQ_BUDGET_MB` (default 256): the memory a sequence's live
//!   arrays may take, `ACCELERATE_SEQ_CHUNK`: a fixed chunk size instead of
//!   the adaptive scheduler's (`exec::seq`); `ACCELERATE_DUMP=schedule`
//!   traces the scheduler's decisions.
//!
//! A variable that holds a number or a choice and holds something else is
//! an `Error::Config` from `Config::from_env` (and so from `run` and
//! `compile`), naming the variable, its value and what it may hold
//! (`check_env`): it is never taken silently for its default.

use super::error::{Error, Result};
pub use super::seq::SeqOptions;
pub use crate::backend::cpu::CpuOptions;
#[cfg(feature = "cuda")]
pub use crate::backend::cuda::{CudaDevice, CudaOptions};
use crate::backend::CacheDir;
use crate::trafo::cluster::ClusterOptions;
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
    /// Cluster sibling operations into multi-output kernels after fusion
    /// (`trafo::cluster`); its solver's settings.
    pub cluster: Option<ClusterOptions>,
    /// Let backends run row groups row by row (`plan::rows`).
    pub rows: bool,
    /// Phases whose IR is printed to standard error.
    pub dump: Vec<String>,
    /// The CPU backend's options.
    pub cpu: CpuOptions,
    /// The CUDA backend's options.
    #[cfg(feature = "cuda")]
    pub cuda: CudaOptions,
    /// The storage of dropped arrays kept for reuse, in MiB (`array::pool`).
    pub pool_mb: usize,
    /// How sequences run: their memory budget and chunk size
    /// (`exec::seq`).
    pub seq: SeqOptions,
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
            cluster: Some(ClusterOptions::default()),
            rows: true,
            dump: Vec::new(),
            cpu,
            #[cfg(feature = "cuda")]
            cuda: cuda_options_from_env(),
            pool_mb: whole(POOL_MB.0, POOL_MB.1).ok().flatten().unwrap_or(512),
            seq: seq_options_from_env(),
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
    if one_of(CACHE.0, CACHE.1).ok().flatten().as_deref() == Some("off") {
        return CacheDir::Off;
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))
        .unwrap_or_else(std::env::temp_dir);
    CacheDir::At(base.join("accelerate-rs"))
}

/// The whole number the variable `name` holds, if set; an error naming
/// the variable, its value and what it may hold (`what`) if it holds
/// anything else.
fn whole(name: &str, what: &str) -> Result<Option<usize>> {
    match var(name) {
        None => Ok(None),
        Some(s) => s
            .trim()
            .parse::<usize>()
            .map(Some)
            .map_err(|_| Error::Config(format!("{name}={s}: expected a whole number: {what}"))),
    }
}

/// The value of the variable `name`, if set, when it is one of `accepted`;
/// an error naming the variable, its value and the accepted values if not.
fn one_of(name: &str, accepted: &[&str]) -> Result<Option<String>> {
    match var(name) {
        None => Ok(None),
        Some(s) if accepted.contains(&s.trim()) => Ok(Some(s.trim().to_string())),
        Some(s) => Err(Error::Config(format!("{name}={s}: expected one of: {}", accepted.join(", ")))),
    }
}

const THREADS: (&str, &str) = ("ACCELERATE_THREADS", "the CPU backend's workers, 0 for one per core");
const PARALLEL_WORK: (&str, &str) = (
    "ACCELERATE_PARALLEL_WORK",
    "the work below which a CPU launch runs on one worker, 0 to split every one",
);
const POOL_MB: (&str, &str) = ("ACCELERATE_POOL_MB", "MiB of dropped arrays kept for reuse, 0 for none");
const CUDA_MEMORY_MB: (&str, &str) =
    ("ACCELERATE_CUDA_MEMORY_MB", "a cap on the CUDA device memory used, in MiB");
const SEQ_BUDGET_MB: (&str, &str) =
    ("ACCELERATE_SEQ_BUDGET_MB", "the MiB a sequence's live arrays may take (at least 1)");
const SEQ_CHUNK: (&str, &str) = ("ACCELERATE_SEQ_CHUNK", "a fixed chunk size for sequences (at least 1)");
const CUDA_DEVICE: (&str, &[&str]) = ("ACCELERATE_CUDA_DEVICE", &["gpu", "emulator"]);
const CACHE: (&str, &[&str]) = ("ACCELERATE_CACHE", &["on", "off"]);
const DUMPS: &[&str] = &[
    "sharing", "text", "lift", "simplify", "fusion", "cluster", "gathers", "lines", "ilp", "plan", "all",
    "c", "cuda", "schedule",
];

/// Checks every variable of the module docs that holds a number or a
/// choice: the one place that says what a bad value is (`Config::default`
/// reads the same variables and, unable to fail, takes a bad value for
/// unset; `Config::from_env`, which `run` and `compile` use, rejects it
/// first).
fn check_env() -> Result<()> {
    whole(THREADS.0, THREADS.1)?;
    whole(PARALLEL_WORK.0, PARALLEL_WORK.1)?;
    whole(POOL_MB.0, POOL_MB.1)?;
    whole(CUDA_MEMORY_MB.0, CUDA_MEMORY_MB.1)?;
    for (name, what) in [SEQ_BUDGET_MB, SEQ_CHUNK] {
        if whole(name, what)? == Some(0) {
            return Err(Error::Config(format!("{name}=0: expected {what}")));
        }
    }
    one_of(CUDA_DEVICE.0, CUDA_DEVICE.1)?;
    one_of(CACHE.0, CACHE.1)?;
    for d in list("ACCELERATE_DUMP") {
        if !DUMPS.contains(&d.as_str()) {
            return Err(Error::Config(format!(
                "ACCELERATE_DUMP: unknown phase {d} (known: {})",
                DUMPS.join(", ")
            )));
        }
    }
    Ok(())
}

/// The sequences' default options, changed by the environment (module
/// docs).
fn seq_options_from_env() -> SeqOptions {
    let mut o = SeqOptions::default();
    if let Some(mb) = whole(SEQ_BUDGET_MB.0, SEQ_BUDGET_MB.1).ok().flatten().filter(|&m| m > 0) {
        o.budget_bytes = mb.saturating_mul(1 << 20);
    }
    o.chunk = whole(SEQ_CHUNK.0, SEQ_CHUNK.1).ok().flatten().filter(|&k| k > 0);
    o
}

/// The CPU backend's default options, changed by the environment (module
/// docs).
pub(crate) fn cpu_options_from_env() -> CpuOptions {
    CpuOptions {
        threads: whole(THREADS.0, THREADS.1).ok().flatten().unwrap_or(0),
        cc: var("CC").unwrap_or_else(|| "cc".into()),
        cflags: var("ACCELERATE_CFLAGS").unwrap_or_default().split_whitespace().map(String::from).collect(),
        fast_math: false,
        cache: cache_from_env(),
        parallel_work: whole(PARALLEL_WORK.0, PARALLEL_WORK.1)
            .ok()
            .flatten()
            .unwrap_or(accelerate_backend::cpu::PARALLEL_WORK),
    }
}

/// The CUDA backend's default options, changed by the environment (module
/// docs).
#[cfg(feature = "cuda")]
pub(crate) fn cuda_options_from_env() -> CudaOptions {
    let emulator = one_of(CUDA_DEVICE.0, CUDA_DEVICE.1).ok().flatten().is_some_and(|d| d == "emulator");
    CudaOptions {
        device: if emulator { CudaDevice::Emulator } else { CudaDevice::Gpu },
        memory_mb: whole(CUDA_MEMORY_MB.0, CUDA_MEMORY_MB.1).ok().flatten(),
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
        check_env()?;
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
                "no-ilp" => c.cluster = None,
                "no-rows" => c.rows = false,
                "no-copy-ahead" => c.seq.copy_ahead = false,
                "fast-math" => c = c.with_fast_math(true),
                other => {
                    return Err(Error::Config(format!(
                        "ACCELERATE_FLAGS: unknown flag {other} (known: no-acc-sharing, no-exp-sharing, no-simplify, no-cse, no-fusion, no-ilp, no-rows, no-copy-ahead, fast-math)"
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

    /// Clustering into multi-output kernels on (with the default solver
    /// settings) or off (`no-ilp`).
    pub fn with_clusters(mut self, on: bool) -> Config {
        self.cluster = on.then(ClusterOptions::default);
        self
    }

    /// Row groups (`plan::rows`) on, or off (`no-rows`: the plan has none,
    /// and every kernel runs by itself).
    pub fn with_row_groups(mut self, on: bool) -> Config {
        self.rows = on;
        self
    }

    /// Fast-math mode: the CPU backend may reassociate float arithmetic,
    /// use approximate reciprocals and square roots, contract into fused
    /// multiply-adds, ignore the sign of zero and assume no NaN or
    /// infinity (docs/semantics.md, "Fast-math mode"; Numba's
    /// `fastmath=True`). Off by default. The interpreter and the CUDA
    /// backend keep the strict rules.
    pub fn with_fast_math(mut self, on: bool) -> Config {
        self.cpu.fast_math = on;
        self
    }

    /// The estimated work below which the CPU backend runs a launch on
    /// one worker, in the units of its cost estimate (Note [Sequential
    /// below a cost] in the backend's `c/cost.rs`; default
    /// `ACCELERATE_PARALLEL_WORK`, else 3 Mi, about 80 µs of a saxpy on a
    /// current core): the grain size of OpenMP's `if` clause or TBB's
    /// `grainsize`. 0 splits every launch that has elements enough.
    pub fn with_parallel_work(mut self, units: usize) -> Config {
        self.cpu.parallel_work = units;
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

    /// Sequences' memory budget, fixed chunk size and progress callback.
    pub fn with_seq(mut self, seq: SeqOptions) -> Config {
        self.seq = seq;
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

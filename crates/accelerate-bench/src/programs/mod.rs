//! The benchmarks, one file each: the Accelerate program and its plain
//! sequential Rust reference (both from `accelerate_programs`, the
//! library's examples' own), the hand-written parallel versions, and how
//! results are checked.
//!
//! Every benchmark but the triad (which has only the hand-written ones) has
//! the variants
//!
//! - `accelerate`: ours on the CPU backend, compiled once with
//!   `compile_with`; only `Program::run` is timed;
//! - `accelerate-no-fusion`, `accelerate-no-sharing`: the same with array
//!   fusion off, and with array and scalar sharing recovery off
//!   (ablations);
//! - `rust-seq`: the plain sequential Rust loop, which is also the
//!   reference every variant is checked against;
//! - `rust-rayon`: hand-written parallel Rust, tuned (chunked, vectorised
//!   with independent accumulators where a reduction allows it, compiled
//!   for this processor's vector unit: `native`);
//! - `c-openmp` (dotp, saxpy, Black-Scholes, triad): hand-written C with
//!   OpenMP, `-O3 -march=native` (`build.rs`), the machine's practical
//!   limit.
//!
//! The configurations are built from `Config::default()`, not from the
//! environment, so `ACCELERATE_FLAGS` does not change what is measured
//! (only `ACCELERATE_BACKEND`, where it is set, changes the backend;
//! `ACCELERATE_DUMP` prints what it names, `ilp` the clustering's solve
//! times, as for any program).

pub mod audio;
pub mod blackscholes;
pub mod distances;
pub mod dotp;
pub mod filter;
pub mod floyd;
pub mod histogram;
pub mod kmeans;
pub mod mandelbrot;
pub mod matmul;
pub mod matvec;
pub mod md5;
pub mod moments;
pub mod nbody;
pub mod pagerank;
mod panels;
pub mod radixsort;
pub mod rowsolve;
pub mod saxpy;
pub mod scan;
pub mod segsum;
pub mod smvm;
pub mod softmax;
pub mod stencil;
pub mod stream;
pub mod triad;

use crate::harness::{fresh, Bench, Size};
use accelerate::exec::ProgramArgs;
use accelerate::prelude::Arrays;
use accelerate::{Backend, Config, Program};
use std::time::Instant;

/// A benchmark the command line can name.
pub struct Benchmark {
    pub name: &'static str,
    /// Builds the inputs, the reference and every variant.
    pub bench: fn(Size) -> Result<Bench, String>,
    /// Compiles the Accelerate program alone (for the compile-time probe);
    /// `None` for the triad, which has no Accelerate version.
    pub compile: Option<fn(Size) -> Result<CompileProbe, String>>,
}

/// Every benchmark, in the order they run: the triad first, since the
/// others' bandwidth is reported as a fraction of its.
pub const ALL: &[Benchmark] = &[
    Benchmark { name: "triad", bench: triad::bench, compile: None },
    Benchmark { name: "dotp", bench: dotp::bench, compile: Some(dotp::compile_probe) },
    Benchmark { name: "moments", bench: moments::bench, compile: Some(moments::compile_probe) },
    Benchmark { name: "saxpy", bench: saxpy::bench, compile: Some(saxpy::compile_probe) },
    Benchmark {
        name: "blackscholes",
        bench: blackscholes::bench,
        compile: Some(blackscholes::compile_probe),
    },
    Benchmark { name: "mandelbrot", bench: mandelbrot::bench, compile: Some(mandelbrot::compile_probe) },
    Benchmark { name: "nbody", bench: nbody::bench, compile: Some(nbody::compile_probe) },
    Benchmark { name: "smvm", bench: smvm::bench, compile: Some(smvm::compile_probe) },
    Benchmark { name: "audio", bench: audio::bench, compile: Some(audio::compile_probe) },
    Benchmark { name: "pagerank", bench: pagerank::bench, compile: Some(pagerank::compile_probe) },
    Benchmark { name: "matvec", bench: matvec::bench, compile: Some(matvec::compile_probe) },
    Benchmark { name: "rowsolve", bench: rowsolve::bench, compile: Some(rowsolve::compile_probe) },
    Benchmark { name: "kmeans", bench: kmeans::bench, compile: Some(kmeans::compile_probe) },
    Benchmark { name: "softmax", bench: softmax::bench, compile: Some(softmax::compile_probe) },
    Benchmark { name: "matmul", bench: matmul::bench, compile: Some(matmul::compile_probe) },
    Benchmark { name: "distances", bench: distances::bench, compile: Some(distances::compile_probe) },
    Benchmark { name: "histogram", bench: histogram::bench, compile: Some(histogram::compile_probe) },
    Benchmark { name: "filter", bench: filter::bench, compile: Some(filter::compile_probe) },
    Benchmark { name: "scan", bench: scan::bench, compile: Some(scan::compile_probe) },
    Benchmark { name: "radixsort", bench: radixsort::bench, compile: Some(radixsort::compile_probe) },
    Benchmark { name: "segsum", bench: segsum::bench, compile: Some(segsum::compile_probe) },
    Benchmark { name: "stencil", bench: stencil::bench, compile: Some(stencil::compile_probe) },
    Benchmark { name: "floyd", bench: floyd::bench, compile: Some(floyd::compile_probe) },
    Benchmark { name: "md5", bench: md5::bench, compile: Some(md5::compile_probe) },
    Benchmark { name: "stream", bench: stream::bench, compile: Some(stream::compile_probe) },
];

pub fn find(name: &str) -> Option<&'static Benchmark> {
    ALL.iter().find(|b| b.name == name)
}

/// The variant names of ours and the configurations they compile with:
/// the CPU backend, unless `ACCELERATE_BACKEND` names another (CI's
/// passes on the interpreter run the tests' check of every program
/// there). The compile-time probe compiles for the CPU backend always.
pub fn accelerate_configs() -> [(&'static str, Config); 4] {
    let named = std::env::var("ACCELERATE_BACKEND").is_ok_and(|b| !b.is_empty());
    let backend = if named { Config::from_env().map_or(Backend::Cpu, |c| c.backend) } else { Backend::Cpu };
    let mut config = Config::default().with_backend(backend);
    config.dump = Config::from_env().map(|c| c.dump).unwrap_or_default();
    [
        ("accelerate", config.clone()),
        ("accelerate-no-fusion", config.clone().with_fusion(false)),
        ("accelerate-no-ilp", config.clone().with_clusters(false)),
        ("accelerate-no-sharing", config.with_sharing(false, false)),
    ]
}

/// Adds `accelerate-text` to `bench`: the program written in the text
/// language (`accelerate_programs::text`, entry point `main`), compiled
/// with ours' configuration, run on `args` (shared with the other
/// variants, not copied) and checked by `check`; notes the front end's
/// time, parse to IR, the median of 21 runs.
pub fn add_text_variant(
    bench: &mut Bench,
    file: &str,
    source: &str,
    args: Vec<accelerate::text::Value>,
    check: impl Fn(&[accelerate::text::Value]) -> Result<(), String> + 'static,
) -> Result<(), String> {
    use accelerate::text::{compile_text, front_end, SourceFile};
    let config = accelerate_configs()[0].1.clone();
    let prog =
        compile_text(file, source, "main", &config).map_err(|e| format!("{}, text: {e}", bench.name))?;
    let sf = SourceFile::new(file, source);
    let mut times: Vec<f64> = (0..21)
        .map(|_| front_end(&sf, "main").map(|f| f.time.as_secs_f64() * 1e3).unwrap_or(f64::NAN))
        .collect();
    times.sort_by(f64::total_cmp);
    bench.notes.push(format!(
        "text front end (parse, check, monomorphise, defunctionalise, lower) {:.3} ms; {} kernels",
        times[times.len() / 2],
        accelerate::ir::visit::count_kernels(&prog.program().ir().body)
    ));
    bench.variant("accelerate-text", move |slot| fresh(slot, || prog.run(&args)), move |r: &Vec<_>| check(r));
    Ok(())
}

/// An array as a value of the text front end, sharing its data.
pub fn text_value<Sh: accelerate::prelude::Shape, E: accelerate::prelude::Elt>(
    a: &accelerate::prelude::Array<Sh, E>,
) -> accelerate::text::Value {
    accelerate::text::Value::shared(a.data().clone()).expect("an array of a primitive type")
}

/// The elements of a text result of type `f32`.
pub fn text_f32s(v: &accelerate::text::Value) -> Result<Vec<f32>, String> {
    match v.array().buffers() {
        [accelerate::array::Buffer::F32(xs)] => Ok(xs.to_vec()),
        _ => Err(format!("a result of type {}, not f32", v.type_name())),
    }
}

/// Adds `accelerate-nested` to `bench`: the program written nested,
/// compiled with ours' configuration, run and checked as the others.
pub fn add_nested_variant<A: ProgramArgs + 'static, R: Arrays>(
    bench: &mut Bench,
    compile: impl FnOnce(Config) -> accelerate::Result<Program<A, R>>,
    run: impl Fn(&Program<A, R>) -> accelerate::Result<R> + 'static,
    check: impl Fn(&R) -> Result<(), String> + 'static,
) -> Result<(), String> {
    add_named_variant(bench, "accelerate-nested", compile, run, check)
}

/// Adds variant `name`, another formulation of ours, compiled with our
/// main configuration.
pub fn add_named_variant<A: ProgramArgs + 'static, R: Arrays>(
    bench: &mut Bench,
    name: &'static str,
    compile: impl FnOnce(Config) -> accelerate::Result<Program<A, R>>,
    run: impl Fn(&Program<A, R>) -> accelerate::Result<R> + 'static,
    check: impl Fn(&R) -> Result<(), String> + 'static,
) -> Result<(), String> {
    let config = accelerate_configs()[0].1.clone();
    let prog = compile(config).map_err(|e| format!("{}, {name}: {e}", bench.name))?;
    bench.variant(name, move |slot| fresh(slot, || run(&prog)), check);
    Ok(())
}

/// Adds ours and its three ablations to `bench`: `compile` converts the
/// program for a configuration, `run` runs it on the benchmark's inputs,
/// `check` compares its result with the reference.
pub fn add_accelerate_variants<A: ProgramArgs + 'static, R: Arrays>(
    bench: &mut Bench,
    compile: impl Fn(Config) -> accelerate::Result<Program<A, R>>,
    run: impl Fn(&Program<A, R>) -> accelerate::Result<R> + Clone + 'static,
    check: impl Fn(&R) -> Result<(), String> + Clone + 'static,
) -> Result<(), String> {
    for (name, config) in accelerate_configs() {
        let prog = compile(config).map_err(|e| format!("{}, {name}: compiling: {e}", bench.name))?;
        let run = run.clone();
        bench.variant(name, move |slot| fresh(slot, || run(&prog)), check.clone());
    }
    Ok(())
}

/// What compiling one program cost, measured in a process of its own
/// (`compile_time`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CompileProbe {
    /// `compile_with` from the Rust function to the loaded kernels: the
    /// front end (sharing recovery, simplification, fusion), generating C,
    /// and compiling it or loading it from the kernel cache.
    pub seconds: f64,
    /// The kernels of the compiled program (`Program::kernel_count`).
    pub kernels: usize,
    /// How many times the C compiler ran (0 when the cache held the object).
    pub cc_runs: usize,
    /// The pipeline's part of `seconds`: every phase up to the plan
    /// (`Program::pipeline_time`).
    pub front_end: f64,
}

/// Compiles a program for the CPU backend with the default switches and
/// says what it cost.
pub fn probe_compile<A: ProgramArgs, R: Arrays>(
    compile: impl FnOnce(Config) -> accelerate::Result<Program<A, R>>,
) -> Result<CompileProbe, String> {
    let config = Config::default().with_backend(Backend::Cpu);
    let before = accelerate::backend::cpu::compilations();
    let t = Instant::now();
    let prog = compile(config).map_err(|e| e.to_string())?;
    let seconds = t.elapsed().as_secs_f64();
    let cc_runs = accelerate::backend::cpu::compilations() - before;
    let kernels = prog.kernel_count().ok_or("the program was not compiled for the CPU backend")?;
    let front_end = prog.pipeline_time().as_secs_f64();
    Ok(CompileProbe { seconds, kernels, cc_runs, front_end })
}

/// `n` as a power of two when it is one ("2^24"), else in digits.
pub fn count(n: usize) -> String {
    if n.is_power_of_two() && n >= 1024 {
        format!("2^{}", n.trailing_zeros())
    } else {
        n.to_string()
    }
}

/// The chunk of a streaming loop that one rayon task takes: 64 Ki
/// elements (256 KiB of f32 per array) amortise a task's cost many times
/// over and leave enough tasks (256 at 2^24) for work stealing to balance.
pub const STREAM_CHUNK: usize = 1 << 16;

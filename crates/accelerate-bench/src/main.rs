//! The benchmark runner.
//!
//! ```sh
//! cargo run --release -p accelerate-bench -- [NAMES] [--size small|large] [--json FILE]
//! ```
//!
//! NAMES (default: all) are among `triad dotp saxpy blackscholes
//! mandelbrot nbody smvm`; the triad always runs first, since the
//! memory-bound programs are compared with its bandwidth. Prints the
//! Markdown table of medians, then the compile-time tables (cold and
//! cached, each measured in a child process: `compile_time`).
//! `--no-compile-times` skips those; `--compile-probe NAME` is the child's
//! side. `--variants A,B,...` times only the variants named (the triad
//! keeps all of its own): an ablation whose intermediates take hundreds of
//! megabytes slows whatever runs after it on this machine (Note
//! [Interleaved rounds]), so a comparison of two variants can leave it
//! out. Progress goes to standard error, tables to standard output.

use accelerate_bench::compile_time::{self, PROBE_FLAG};
use accelerate_bench::harness::{measure, Size};
use accelerate_bench::programs::{self, Benchmark};
use accelerate_bench::report;
use std::process::exit;
use std::time::Instant;

struct Args {
    names: Vec<String>,
    size: Size,
    json: Option<String>,
    compile_times: bool,
    probe: Option<String>,
    variants: Option<Vec<String>>,
}

fn usage() -> ! {
    let names: Vec<&str> = programs::ALL.iter().map(|b| b.name).collect();
    eprintln!(
        "usage: accelerate-bench [NAMES] [--size tiny|small|large] [--json FILE] [--no-compile-times] [--variants A,B,...]\n\
         \x20      accelerate-bench {PROBE_FLAG} NAME [--size SIZE]\n\
         NAMES: {}",
        names.join(" ")
    );
    exit(2)
}

fn parse_args() -> Args {
    let mut args = Args {
        names: Vec::new(),
        size: Size::Small,
        json: None,
        compile_times: true,
        probe: None,
        variants: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--size" => args.size = it.next().and_then(|s| Size::parse(&s)).unwrap_or_else(|| usage()),
            "--json" => args.json = Some(it.next().unwrap_or_else(|| usage())),
            "--no-compile-times" => args.compile_times = false,
            "--variants" => {
                let list = it.next().unwrap_or_else(|| usage());
                args.variants = Some(list.split(',').map(str::to_string).collect());
            }
            PROBE_FLAG => args.probe = Some(it.next().unwrap_or_else(|| usage())),
            "--help" | "-h" => usage(),
            name if programs::find(name).is_some() => args.names.push(a),
            _ => {
                eprintln!("accelerate-bench: unknown argument {a:?}");
                usage()
            }
        }
    }
    args
}

fn main() {
    let args = parse_args();
    if let Some(name) = &args.probe {
        if let Err(e) = compile_time::run_probe(name, args.size) {
            eprintln!("accelerate-bench: {e}");
            exit(1);
        }
        return;
    }
    if let Err(e) = run(&args) {
        eprintln!("accelerate-bench: {e}");
        exit(1);
    }
}

fn run(args: &Args) -> Result<(), String> {
    if let Some(only) = &args.variants {
        let _ = accelerate_bench::peers::ONLY.set(only.clone());
    }
    let selected: Vec<&'static Benchmark> = programs::ALL
        .iter()
        .filter(|b| b.name == "triad" || args.names.is_empty() || args.names.iter().any(|n| n == b.name))
        .collect();
    let plan = args.size.plan();
    eprintln!(
        "accelerate-bench: size {}, {} rayon threads, {} to {} rounds per benchmark",
        args.size.name(),
        rayon::current_num_threads(),
        plan.min_rounds,
        plan.max_rounds
    );

    let mut rows = Vec::new();
    let mut notes = Vec::new();
    for b in &selected {
        let t = Instant::now();
        let mut bench = (b.bench)(args.size)?;
        if let (Some(only), false) = (&args.variants, b.name == "triad") {
            bench.variants.retain(|v| only.iter().any(|o| o == v.name));
            if bench.variants.is_empty() {
                return Err(format!("{}: no variant among {}", b.name, only.join(", ")));
            }
        }
        eprintln!(
            "{}: {} (inputs, reference and programs in {:.1} s)",
            b.name,
            bench.problem,
            t.elapsed().as_secs_f64()
        );
        let t = Instant::now();
        let measured = measure(&mut bench, &plan)?;
        eprintln!(
            "{}: all {} variants match the reference; {} rounds in {:.1} s",
            b.name,
            measured.len(),
            measured.first().map_or(0, |m| m.samples.len()),
            t.elapsed().as_secs_f64()
        );
        rows.extend(report::rows(&bench, &measured));
        notes.extend(bench.notes.iter().map(|n| format!("- {}: {n}", b.name)));
    }
    println!("{}", report::markdown(&rows));
    println!("Our main variant's median against the others' (larger is slower than theirs):\n");
    println!("{}", report::targets(&rows));
    if !notes.is_empty() {
        println!("{}\n", notes.join("\n"));
    }
    if let Some(bw) = report::triad_bandwidth(&rows) {
        println!(
            "Triad bandwidth (fastest sample of the fastest variant, as STREAM reports it): {:.1} GB/s\n",
            bw / 1e9
        );
    }

    let mut compile = Vec::new();
    if args.compile_times {
        let exe = std::env::current_exe().map_err(|e| format!("finding the bench binary: {e}"))?;
        let programs: Vec<_> = selected.iter().filter(|b| b.compile.is_some()).collect();
        if let Some(first) = programs.first() {
            // discarded: the first C compiler run of all also reads the
            // compiler's own files from disk, a cost of no program
            compile_time::measure(&exe, first.name, args.size)?;
        }
        for b in programs {
            eprintln!("{}: compile times", b.name);
            compile.push(compile_time::measure(&exe, b.name, args.size)?);
        }
        println!("Cold compile (fresh kernel cache, in a child process):\n");
        println!("{}", report::cold_compile_table(&compile));
        println!("Cached load (the same cache again, in a second child process):\n");
        println!("{}", report::cached_compile_table(&compile));
    }

    if let Some(path) = &args.json {
        std::fs::write(path, report::json(&rows, &compile, args.size))
            .map_err(|e| format!("writing {path}: {e}"))?;
        eprintln!("wrote {path}");
    }
    Ok(())
}

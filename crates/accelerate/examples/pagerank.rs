//! PageRank (the sequences thesis, §7.4), flat and streamed: the program,
//! its graph and its reference are `accelerate_programs::pagerank` (whose
//! module doc describes an iteration and both forms).
//!
//! ```sh
//! cargo run --release --example pagerank -- --check                          # both forms against plain Rust
//! cargo run --release --example pagerank -- --vertices 10000 --edges 100000 --iters 30
//! cargo run --release --example pagerank -- --check --stream-budget-mb 32    # links larger than the budget
//! ```
//!
//! The flat form holds the links in memory as one array and runs every
//! iteration inside one program (`awhile`). The streamed form holds only
//! the ranks: each iteration is a sequence over the links in blocks of
//! `--block` links, made by the graph's generator as they are pulled (as a
//! file read in blocks would be), folded into the incoming sums.
//!
//! With `--stream-budget-mb M` only the streamed form runs, under a memory
//! budget of `M` MiB (`SeqOptions::budget_bytes`), over a list of links
//! larger than the budget (by default twice it: `--edges` is raised to
//! that unless given); the peak resident memory (`VmHWM`) is reported,
//! and with `--check` it must stay under the memory before the run plus
//! the budget plus the vertices' arrays plus `SLACK_MB` (the compiled
//! kernels, the threads' stacks, the allocator's free lists), as in
//! `seq_stream`.
//!
//! `--check` compares each form's ranks with the plain-Rust reference,
//! within a bound on what reordering the sums can change (Note [Bounding a
//! reordered PageRank] in `accelerate_programs::pagerank`): the CPU
//! backend's `permute (+)` adds a vertex's incoming contributions in
//! whatever order its threads reach it, and its `fold` reassociates.

use accelerate::prelude::*;
use accelerate::{Config, SeqOptions};
use accelerate_programs::pagerank::{
    blocks, pagerank, pagerank_ref, random_links, StreamedPagerank, DAMPING,
};
use accelerate_programs::rng::SEED_A;
use std::process::exit;
use std::time::{Duration, Instant};

#[path = "common/memory.rs"]
mod memory;
use memory::status_kib;

/// What the process may hold beyond the budget and the vertices' arrays.
const SLACK_MB: usize = 64;
/// The vertices' arrays of the streamed form, in bytes per vertex: the
/// degrees (`i64`), the ranks and shares of two iterations, the incoming
/// sums and the fold's state (`f32`), and as much again for copies.
const VERTEX_BYTES: usize = 2 * (8 + 4 * 4 + 2 * 4);

struct Args {
    vertices: usize,
    edges: Option<usize>,
    iters: usize,
    block: usize,
    budget_mb: Option<usize>,
    check: bool,
}

fn usage() -> ! {
    eprintln!(
        "usage: pagerank [--check] [--vertices N] [--edges M] [--iters K] [--block B] [--stream-budget-mb MB]"
    );
    exit(2)
}

fn parse_args() -> Args {
    let mut args =
        Args { vertices: 5_000, edges: None, iters: 20, block: 4096, budget_mb: None, check: false };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut number = || it.next().and_then(|s| s.parse::<usize>().ok()).unwrap_or_else(|| usage());
        match a.as_str() {
            "--check" => args.check = true,
            "--vertices" | "--size" | "-n" => args.vertices = number(),
            "--edges" | "-m" => args.edges = Some(number()),
            "--iters" => args.iters = number(),
            "--block" => args.block = number().max(1),
            "--stream-budget-mb" => args.budget_mb = Some(number()),
            "--help" | "-h" => usage(),
            _ => {
                eprintln!("pagerank: unknown argument {a:?}");
                usage()
            }
        }
    }
    if args.vertices < 2 {
        eprintln!("pagerank: the graph needs at least two vertices");
        usage()
    }
    if i32::try_from(args.iters).is_err() {
        usage()
    }
    args
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn per_link(d: Duration, m: usize, iters: usize) -> f64 {
    d.as_secs_f64() * 1e6 / (m.max(1) as f64 * iters.max(1) as f64)
}

fn summary(ranks: &[f32]) -> String {
    let mut top: Vec<(usize, f32)> = ranks.iter().copied().enumerate().collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1));
    let shown: Vec<String> = top.iter().take(5).map(|(v, r)| format!("{v}: {r:.5}")).collect();
    format!("total rank {:.6}; highest: {}", ranks.iter().map(|&r| r as f64).sum::<f64>(), shown.join(", "))
}

/// Compares `ranks` with the reference within its bound; false (after
/// saying where) when they differ by more.
fn check(form: &str, ranks: &[f32], want: &[f32], bound: &[f64]) -> bool {
    let mut bad = ranks.len().abs_diff(want.len());
    let (mut exact, mut worst) = (0, 0.0f64);
    for (v, ((&g, &w), &b)) in ranks.iter().zip(want).zip(bound).enumerate() {
        let diff = (g as f64 - w as f64).abs();
        if g.to_bits() == w.to_bits() {
            exact += 1;
        } else if diff <= b {
            worst = worst.max(diff / b);
        } else {
            if bad < 10 {
                eprintln!(
                    "check: {form}: MISMATCH at vertex {v}: got {g}, plain Rust gives {w}; |difference| {diff:e} > bound {b:e}"
                );
            }
            bad += 1;
        }
    }
    if bad > 0 {
        eprintln!(
            "check: {form}: {bad} of {} ranks differ from the plain-Rust reference by more than reordering can",
            want.len()
        );
        return false;
    }
    println!(
        "check: {form}: all {} ranks match the plain-Rust reference; {exact} bit-identical; \
         largest difference {worst:.3} of its bound",
        want.len()
    );
    true
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { vertices: n, edges, iters, block, budget_mb, check: checking } = parse_args();
    let m = match (edges, budget_mb) {
        (Some(m), _) => m,
        (None, None) => 40_000,
        // twice the budget, in links of 16 bytes
        (None, Some(mb)) => (2 * (mb << 20)).div_ceil(16),
    };
    let links_bytes = m * 16;
    if let Some(mb) = budget_mb {
        if links_bytes <= mb << 20 {
            eprintln!(
                "pagerank: {m} links ({} MiB) fit the {mb} MiB budget; ask for more",
                links_bytes >> 20
            );
            usage()
        }
    }
    let pass = move || blocks(random_links(n, m, SEED_A), block);
    let dangling = {
        let mut has_out = vec![false; n];
        random_links(n, m, SEED_A).for_each(|(f, _)| has_out[f as usize] = true);
        has_out.iter().filter(|&&h| !h).count()
    };
    println!(
        "pagerank: {n} vertices ({dangling} dangling), {m} links ({:.1} MiB), {iters} iterations, damping {DAMPING}",
        links_bytes as f64 / (1u64 << 20) as f64
    );
    let config = Config::from_env()?;
    let mut results: Vec<(&str, Vec<f32>)> = Vec::new();

    if budget_mb.is_none() {
        // the flat form: the links in memory
        let links = Vector::from_elems(random_links(n, m, SEED_A).collect());
        let t = Instant::now();
        let prog = accelerate::compile_with(pagerank, config.clone())?;
        let t_compile = t.elapsed();
        let t = Instant::now();
        let ranks = prog.run((&links, &Scalar::scalar(n as i64), &Scalar::scalar(iters as i32)))?.to_vec();
        let t_run = t.elapsed();
        println!("  flat:     accelerate::compile {:>9.2} ms", ms(t_compile));
        println!(
            "  flat:     Program::run        {:>9.2} ms  ({:.3} µs per link per iteration)",
            ms(t_run),
            per_link(t_run, m, iters)
        );
        println!("  flat:     {}", summary(&ranks));
        results.push(("flat", ranks));
    }

    // the streamed form: the links made block by block, once per pass
    let config = match budget_mb {
        Some(mb) => {
            let seq = SeqOptions { budget_bytes: mb << 20, ..config.seq.clone() };
            config.with_seq(seq)
        }
        None => config,
    };
    let t = Instant::now();
    let streamed = StreamedPagerank::new(config)?;
    let t_compile = t.elapsed();
    let before = status_kib("VmRSS:").unwrap_or(0);
    let t = Instant::now();
    let ranks = streamed.run(n, iters, pass)?.to_vec();
    let t_run = t.elapsed();
    let peak = status_kib("VmHWM:").unwrap_or(0);
    println!("  streamed: compile (per vertex) {:>9.2} ms", ms(t_compile));
    println!(
        "  streamed: {} passes            {:>9.2} ms  ({:.3} µs per link per pass; blocks of {block} links, \
         each pass's sequence compiled as it starts)",
        iters + 1,
        ms(t_run),
        per_link(t_run, m, iters + 1)
    );
    println!("  streamed: {}", summary(&ranks));
    results.push(("streamed", ranks));
    let mut ok = true;
    if let Some(mb) = budget_mb {
        println!(
            "  streamed: {:.1} MiB of links under a {mb} MiB budget; resident memory {} MiB before, peak {} MiB \
             (growth {} MiB)",
            links_bytes as f64 / (1u64 << 20) as f64,
            before / 1024,
            peak / 1024,
            peak.saturating_sub(before) / 1024
        );
        let bound = before / 1024 + mb + (n * VERTEX_BYTES).div_ceil(1 << 20) + SLACK_MB;
        if checking {
            if peak / 1024 > bound {
                eprintln!("check: peak resident memory {} MiB over {bound} MiB", peak / 1024);
                ok = false;
            } else {
                println!(
                    "check: the peak is within {bound} MiB (before + budget + vertices' arrays + {SLACK_MB})"
                );
            }
        }
    }

    if checking {
        let t = Instant::now();
        let (want, bound) = pagerank_ref(n, iters, || random_links(n, m, SEED_A));
        println!("  plain Rust reference (with its bounds) {:>9.2} ms", ms(t.elapsed()));
        for (form, ranks) in &results {
            ok &= check(form, ranks, &want, &bound);
        }
    }
    if !ok {
        exit(1);
    }
    Ok(())
}

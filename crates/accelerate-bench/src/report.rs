//! What a run prints: a Markdown table per program (each variant's median
//! and fastest sample, its time relative to the hand-written rayon
//! version's and to sequential Rust's, and for memory-bound programs the
//! bandwidth as a fraction of the triad's), the targets at a glance (our
//! main variant against rayon, sequential Rust and each Python peer), the
//! compile-time tables, and the JSON file of `--json`.

use crate::compile_time::CompileTimes;
use crate::harness::{Bench, Measurement, Size};
use std::fmt::Write as _;

/// One variant's result.
#[derive(Clone, Debug)]
pub struct Row {
    pub benchmark: &'static str,
    pub problem: String,
    pub variant: &'static str,
    pub median_s: f64,
    /// The fastest sample.
    pub best_s: f64,
    pub samples: usize,
    pub bytes: Option<f64>,
    pub flops: Option<f64>,
    pub memory_bound: bool,
}

pub fn rows(bench: &Bench, measurements: &[Measurement]) -> Vec<Row> {
    measurements
        .iter()
        .map(|m| Row {
            benchmark: bench.name,
            problem: bench.problem.clone(),
            variant: m.variant,
            median_s: m.median().as_secs_f64(),
            best_s: m.samples.iter().min().copied().unwrap_or_default().as_secs_f64(),
            samples: m.samples.len(),
            bytes: bench.bytes,
            flops: bench.flops,
            memory_bound: bench.memory_bound,
        })
        .collect()
}

/// The variant the others are compared with.
pub const BASELINE: &str = "rust-rayon";

/// The machine's memory bandwidth in bytes per second, as STREAM reports
/// it: from the fastest sample of the fastest triad variant (normally a
/// parallel one; on a busy machine a single thread may do better, and the
/// best achieved is still what the memory gave). A practical limit, so
/// the best sample and not the median: other processes only ever slow a
/// sample down.
pub fn triad_bandwidth(rows: &[Row]) -> Option<f64> {
    rows.iter()
        .filter(|r| r.benchmark == "triad")
        .filter_map(|r| Some(r.bytes? / r.best_s))
        .max_by(f64::total_cmp)
}

/// The sequential reference every program has.
pub const SEQUENTIAL: &str = "rust-seq";

/// Each program's name and problem, in the order of the rows.
fn programs(rows: &[Row]) -> Vec<(&'static str, &str)> {
    let mut seen: Vec<(&'static str, &str)> = Vec::new();
    for r in rows {
        if !seen.iter().any(|(b, _)| *b == r.benchmark) {
            seen.push((r.benchmark, &r.problem));
        }
    }
    seen
}

/// One table per program: each variant's median and fastest sample, its
/// median relative to the rayon version's and to sequential Rust's, and,
/// where the program counts them, its bandwidth (at the median, and its
/// fastest sample's as a fraction of the triad's fastest, as STREAM
/// compares best with best) and its GFLOP/s at the median.
pub fn markdown(rows: &[Row]) -> String {
    let triad = triad_bandwidth(rows);
    let mut s = String::new();
    for (name, problem) in programs(rows) {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.benchmark == name).collect();
        let median_of = |v: &str| mine.iter().find(|r| r.variant == v).map(|r| r.median_s);
        let (rayon, seq) = (median_of(BASELINE), median_of(SEQUENTIAL));
        let bytes = mine.iter().any(|r| r.bytes.is_some() && r.memory_bound);
        let flops = mine.iter().any(|r| r.flops.is_some());
        let _ = writeln!(s, "**{name}** ({problem})\n");
        s.push_str("| Variant | Median (ms) | Best (ms) | Time / rayon | Time / rust-seq |");
        let mut rule = String::from("|---|---:|---:|---:|---:|");
        if bytes {
            s.push_str(" GB/s | Of triad |");
            rule.push_str("---:|---:|");
        }
        if flops {
            s.push_str(" GFLOP/s |");
            rule.push_str("---:|");
        }
        let _ = writeln!(s, "\n{rule}");
        let ratio = |m: f64, of: Option<f64>| of.map(|b| format!("{:.2}×", m / b)).unwrap_or_default();
        for r in mine {
            let (median, best) = (r.median_s, r.best_s);
            let _ = write!(
                s,
                "| {} | {:.3} | {:.3} | {} | {} |",
                r.variant,
                median * 1e3,
                best * 1e3,
                ratio(median, rayon),
                ratio(median, seq)
            );
            if bytes {
                let gbs = r.bytes.map(|b| format!("{:.1}", b / median / 1e9)).unwrap_or_default();
                let of_triad = r
                    .bytes
                    .zip(triad)
                    .map(|(b, t)| format!("{:.0}%", 100.0 * b / best / t))
                    .unwrap_or_default();
                let _ = write!(s, " {gbs} | {of_triad} |");
            }
            if flops {
                let gflops = r.flops.map(|f| format!("{:.2}", f / median / 1e9)).unwrap_or_default();
                let _ = write!(s, " {gflops} |");
            }
            s.push('\n');
        }
        s.push('\n');
    }
    s
}

/// The Python peers of the targets table: each tool's name and its
/// variant's (Numba's `fastmath=True` variant is compared apart, with our
/// fast-math mode).
const PEERS: [(&str, &str); 4] = [("NumPy", "numpy"), ("SciPy", "scipy"), ("JAX", "jax"), ("Numba", "numba")];

/// Programs whose main variant of ours is not `accelerate`: the form that
/// computes what the rayon version computes. PageRank's rayon version
/// (and Numba's and SciPy's) pulls each vertex's rank from its in-links,
/// on the graph grouped by target; `accelerate` is the push form of
/// Accelerate's example (every link's share scattered into its target),
/// which `rust-seq`, NumPy and JAX compute, and stays in the program's own
/// table beside `accelerate-pull`.
const MAIN: &[(&str, &str)] = &[("pagerank", "accelerate-pull")];

/// One line per program: our main variant's median (`MAIN`'s, else
/// `accelerate`, else the first variant of ours the program has) relative
/// to rayon's, sequential Rust's and each peer's median, so that the
/// targets read at a glance (above 1, ours is the slower).
pub fn targets(rows: &[Row]) -> String {
    let mut s = String::from("| Program | Ours | Ours / rayon | Ours / rust-seq |");
    PEERS.iter().for_each(|(tool, _)| {
        let _ = write!(s, " Ours / {tool} |");
    });
    let _ = writeln!(s, "\n|---|---|---:|---:|{}", "---:|".repeat(PEERS.len()));
    for (name, _) in programs(rows).into_iter().filter(|(b, _)| *b != "triad") {
        let mine: Vec<&Row> = rows.iter().filter(|r| r.benchmark == name).collect();
        let named = MAIN.iter().find(|(b, _)| *b == name).map_or("accelerate", |(_, v)| *v);
        let main = mine
            .iter()
            .find(|r| r.variant == named)
            .or_else(|| mine.iter().find(|r| r.variant == "accelerate"));
        let Some(ours) = main.or_else(|| mine.iter().find(|r| r.variant.starts_with("accelerate"))) else {
            continue;
        };
        let against = |variant: &str| {
            mine.iter()
                .find(|r| r.variant == variant)
                .map_or_else(|| "n/a".to_string(), |r| format!("{:.2}", ours.median_s / r.median_s))
        };
        let _ = write!(s, "| {name} | {} | {} | {} |", ours.variant, against(BASELINE), against(SEQUENTIAL));
        for (_, variant) in PEERS {
            let _ = write!(s, " {} |", against(variant));
        }
        s.push('\n');
    }
    s
}

/// The cold-compile table: a fresh kernel cache, so the C compiler runs.
pub fn cold_compile_table(times: &[CompileTimes]) -> String {
    let mut s = String::new();
    s.push_str("| Program | Kernels | C compiler runs | Cold compile (ms) | Per kernel (ms) |\n");
    s.push_str("|---|---:|---:|---:|---:|\n");
    for t in times {
        let c = &t.cold;
        let per_kernel = c.seconds * 1e3 / c.kernels.max(1) as f64;
        let _ = writeln!(
            s,
            "| {} | {} | {} | {:.1} | {per_kernel:.1} |",
            t.name,
            c.kernels,
            c.cc_runs,
            c.seconds * 1e3
        );
    }
    s
}

/// The cached-load table: the same cache again, now filled.
pub fn cached_compile_table(times: &[CompileTimes]) -> String {
    let mut s = String::new();
    s.push_str(
        "| Program | C compiler runs | Cached load (ms) | Of which the pipeline, up to the plan (ms) |\n",
    );
    s.push_str("|---|---:|---:|---:|\n");
    for t in times {
        let c = &t.cached;
        let _ =
            writeln!(s, "| {} | {} | {:.2} | {:.3} |", t.name, c.cc_runs, c.seconds * 1e3, c.front_end * 1e3);
    }
    s
}

/// `[{"benchmark", "variant", "size", "median_s", "bytes", "flops", ...}]`:
/// a record per timed variant, and one per compile probe (variants
/// `compile-cold` and `compile-cached`, with their kernel counts).
pub fn json(rows: &[Row], compile: &[CompileTimes], size: Size) -> String {
    let num = |x: Option<f64>| x.map(|v| format!("{v}")).unwrap_or_else(|| "null".into());
    let mut items = Vec::new();
    for r in rows {
        items.push(format!(
            "{{\"benchmark\": {}, \"variant\": {}, \"size\": {}, \"problem\": {}, \"median_s\": {}, \"best_s\": {}, \"samples\": {}, \"bytes\": {}, \"flops\": {}}}",
            string(r.benchmark),
            string(r.variant),
            string(size.name()),
            string(&r.problem),
            r.median_s,
            r.best_s,
            r.samples,
            num(r.bytes),
            num(r.flops)
        ));
    }
    for t in compile {
        for (variant, p) in [("compile-cold", &t.cold), ("compile-cached", &t.cached)] {
            items.push(format!(
                "{{\"benchmark\": {}, \"variant\": {}, \"size\": {}, \"median_s\": {}, \"samples\": 1, \"bytes\": null, \"flops\": null, \"kernels\": {}, \"cc_runs\": {}}}",
                string(t.name),
                string(variant),
                string(size.name()),
                p.seconds,
                p.kernels,
                p.cc_runs
            ));
        }
    }
    format!("[\n  {}\n]\n", items.join(",\n  "))
}

/// A JSON string literal.
fn string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(benchmark: &'static str, variant: &'static str, median_s: f64) -> Row {
        Row {
            benchmark,
            problem: "n".into(),
            variant,
            median_s,
            best_s: median_s,
            samples: 3,
            bytes: Some(1e9),
            flops: None,
            memory_bound: true,
        }
    }

    #[test]
    fn triad_bandwidth_is_the_best_variant() {
        let rows =
            [row("triad", "rust-seq", 0.5), row("triad", "rust-rayon", 0.4), row("triad", "c-openmp", 0.25)];
        assert_eq!(triad_bandwidth(&rows), Some(4e9));
    }

    #[test]
    fn table_shows_time_relative_to_rayon_and_fraction_of_triad() {
        let rows =
            [row("triad", "rust-rayon", 0.5), row("dotp", "rust-rayon", 1.0), row("dotp", "accelerate", 2.0)];
        let t = markdown(&rows);
        assert!(t.contains("**dotp** (n)"), "{t}");
        assert!(t.contains("| accelerate | 2000.000 | 2000.000 | 2.00× |  | 0.5 | 25% |"), "{t}");
    }

    #[test]
    fn targets_compare_our_main_variant_with_each_peer() {
        let rows = [
            row("dotp", "rust-rayon", 1.0),
            row("dotp", "rust-seq", 4.0),
            row("dotp", "accelerate-no-fusion", 8.0),
            row("dotp", "accelerate", 2.0),
            row("dotp", "numpy", 0.5),
            row("audio", "accelerate-seq", 3.0),
            row("audio", "rust-rayon", 2.0),
            row("pagerank", "accelerate", 6.0),
            row("pagerank", "accelerate-pull", 3.0),
            row("pagerank", "rust-rayon", 2.0),
        ];
        let t = targets(&rows);
        assert!(t.contains("| dotp | accelerate | 2.00 | 0.50 | 4.00 | n/a | n/a | n/a |"), "{t}");
        assert!(t.contains("| audio | accelerate-seq | 1.50 | n/a | n/a | n/a | n/a | n/a |"), "{t}");
        assert!(t.contains("| pagerank | accelerate-pull | 1.50 | n/a | n/a | n/a | n/a | n/a |"), "{t}");
    }

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(string("a\"b\\c\n"), "\"a\\\"b\\\\c\\u000a\"");
    }
}

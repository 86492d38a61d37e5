//! The GPU benchmark runner (feature `cuda`; `scripts/gpu-bench.sh` runs it
//! on a device):
//!
//! ```sh
//! cargo run --release -p accelerate-bench --features cuda --bin gpu -- [NAMES] [--size small|large]
//! ```
//!
//! NAMES (default: all) are among `copy dotp saxpy scan blackscholes
//! nbody`; the copy always runs first, since the memory-bound programs are
//! compared with its bandwidth. Prints the device and a Markdown table of
//! medians (device time, `accelerate_bench::gpu`), each variant's time as
//! a multiple of the hand-written CUDA's, and the bandwidth as a fraction
//! of the copy's.

use accelerate_bench::gpu::{Gpu, ALL};
use accelerate_bench::harness::{measure, Size};
use accelerate_bench::report::{self, Row};
use std::process::exit;

fn main() {
    let mut size = Size::Small;
    let mut names: Vec<String> = Vec::new();
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--size" => match it.next().and_then(|s| Size::parse(&s)) {
                Some(s) => size = s,
                None => usage(),
            },
            name if ALL.iter().any(|(n, _)| *n == name) => names.push(a),
            _ => usage(),
        }
    }
    if let Err(e) = run(size, &names) {
        eprintln!("gpu: {e}");
        exit(1);
    }
}

fn usage() -> ! {
    let names: Vec<&str> = ALL.iter().map(|(n, _)| *n).collect();
    eprintln!("usage: gpu [NAMES] [--size tiny|small|large]\nNAMES: {}", names.join(" "));
    exit(2)
}

fn run(size: Size, names: &[String]) -> Result<(), String> {
    let gpu = Gpu::open()?;
    println!("Device: {}\n", gpu.about);
    let plan = size.plan();
    let mut rows: Vec<Row> = Vec::new();
    for (name, bench) in
        ALL.iter().filter(|(n, _)| *n == "copy" || names.is_empty() || names.iter().any(|m| m == n))
    {
        let mut b = bench(&gpu, size)?;
        eprintln!("{name}: {}", b.problem);
        let measured = measure(&mut b, &plan)?;
        let these = report::rows(&b, &measured);
        // each benchmark's rows as soon as it is measured (a run cut
        // short by a time limit still reports those done)
        eprintln!("{}", markdown(&these));
        rows.extend(these);
    }
    println!("{}", markdown(&rows));
    Ok(())
}

/// The table: median device time, time over the hand-written CUDA's,
/// bandwidth and its fraction of the device-to-device copy's.
fn markdown(rows: &[Row]) -> String {
    let copy = rows.iter().find(|r| r.benchmark == "copy").and_then(|r| r.bytes.map(|b| b / r.median_s));
    let mut s =
        String::from("| Benchmark | Input | Variant | Median (ms) | Time / cuda-hand | GB/s | Of copy |\n");
    s.push_str("|---|---|---|---:|---:|---:|---:|\n");
    for r in rows {
        let hand = rows.iter().find(|h| h.benchmark == r.benchmark && h.variant == "cuda-hand");
        let ratio = hand.map(|h| format!("{:.2}×", r.median_s / h.median_s)).unwrap_or_default();
        let bw = r.bytes.filter(|_| r.memory_bound).map(|b| b / r.median_s);
        let gbs = bw.map(|b| format!("{:.0}", b / 1e9)).unwrap_or_default();
        let of = bw.zip(copy).map(|(b, c)| format!("{:.0}%", 100.0 * b / c)).unwrap_or_default();
        s.push_str(&format!(
            "| {} | {} | {} | {:.3} | {ratio} | {gbs} | {of} |\n",
            r.benchmark,
            r.problem,
            r.variant,
            r.median_s * 1e3
        ));
    }
    s
}

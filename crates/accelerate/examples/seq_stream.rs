//! Streaming more data than memory: a sequence read from a Rust iterator
//! (`stream_in`) under a memory budget, its peak resident memory measured
//! from the process (the sequences thesis §3.1.2: arrays must fit in
//! memory, sequences need not).
//!
//! ```sh
//! cargo run --release --example seq_stream -- --check                     # 2 GiB under a 128 MiB budget
//! cargo run --release --example seq_stream -- --gib 8 --budget-mb 64      # more, under less
//! ```
//!
//! The stream is `--gib` GiB of vectors of 64 Ki `i32`s (256 KiB each),
//! made by a generator as they are pulled, as a file read in blocks would
//! be. Each element's sum of squares (in `i64`) is folded into a total
//! (`map_seq`, then `fold_seq`): the chunk program computes a whole chunk
//! of elements at once, and the stream is read ahead on a thread of its
//! own while a chunk computes. With `--check`, the total is compared with
//! plain Rust's over the same generator, and the peak resident memory
//! (`VmHWM`) must stay under the memory before the run plus the budget
//! plus `SLACK_MB` (the compiled kernels, the threads' stacks, and the
//! allocator's own free lists), "before" read once the backend's runtime
//! has started (a run of a two-element sequence).

use accelerate::prelude::*;
use accelerate::{run_seq_with, Config, ProgressFn, SeqOptions};
use std::process::exit;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

#[path = "common/memory.rs"]
mod memory;
use memory::status_kib;

const ELEM: usize = 1 << 16;
const SLACK_MB: usize = 64;

/// Element `i` of the stream: a xorshift sequence seeded by `i`.
fn element(i: usize) -> Vec<i32> {
    let mut x = (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..ELEM)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 40) as i32 - (1 << 23)
        })
        .collect()
}

fn main() {
    let mut gib = 2.0f64;
    let mut budget_mb = 128usize;
    let mut check = false;
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => check = true,
            "--gib" => gib = it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()),
            "--budget-mb" => budget_mb = it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()),
            _ => usage(),
        }
    }
    let n = ((gib * (1u64 << 30) as f64) / (ELEM * 4) as f64) as usize;
    let chunks = Arc::new(AtomicUsize::new(0));
    let last = Arc::new(AtomicUsize::new(0));
    let (c2, l2) = (chunks.clone(), last.clone());
    let opts = SeqOptions {
        budget_bytes: budget_mb << 20,
        progress: Some(ProgressFn(Arc::new(move |p| {
            c2.store(p.chunks, Ordering::Relaxed);
            l2.store(p.chunk_size, Ordering::Relaxed);
        }))),
        ..SeqOptions::default()
    };
    let config = Config::from_env().unwrap_or_else(|e| fail(&e.to_string())).with_seq(opts);
    // the backend's runtime started first (the CPU backend's worker pool;
    // on the CUDA backend the driver's context, which maps some hundred
    // MiB of host memory of its own): what the budget bounds is the
    // sequence's arrays, not the runtime's fixed cost
    let warm = stream_in((0..2i32).map(|i| Vector::from_elems(vec![i; 4])))
        .map_seq(|x| x.map(|v| v.cast::<i64>()).fold(0, |a, b| a + b))
        .fold_seq(0i64, |a, b| a + b);
    run_seq_with(&warm, &config).unwrap_or_else(|e| fail(&e.to_string()));
    // the peak counted from here (Linux: 5 resets VmHWM to VmRSS)
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let before = status_kib("VmRSS:").unwrap_or(0);
    let items = (0..n).map(|i| Vector::from_elems(element(i)));
    let sums =
        stream_in(items).map_seq(|x| x.map(|v| v.cast::<i64>() * v.cast::<i64>()).fold(0, |a, b| a + b));
    let t = Instant::now();
    let total =
        run_seq_with(&sums.fold_seq(0i64, |a, b| a + b), &config).unwrap_or_else(|e| fail(&e.to_string()));
    let secs = t.elapsed().as_secs_f64();
    let peak = status_kib("VmHWM:").unwrap_or(0);
    let bytes = (n * ELEM * 4) as f64;
    println!(
        "streamed {:.2} GiB ({n} vectors of {ELEM} i32) in {secs:.2} s ({:.2} GB/s) under a {budget_mb} MiB budget: \
         {} chunks, the last of {} elements",
        bytes / (1u64 << 30) as f64,
        bytes / secs / 1e9,
        chunks.load(Ordering::Relaxed),
        last.load(Ordering::Relaxed)
    );
    println!(
        "resident memory: {} MiB before, peak {} MiB (growth {} MiB)",
        before / 1024,
        peak / 1024,
        peak.saturating_sub(before) / 1024
    );
    if check {
        let want = (0..n).fold(0i64, |acc, i| {
            element(i).iter().fold(acc, |a, &v| a.wrapping_add((v as i64).wrapping_mul(v as i64)))
        });
        if total.value() != want {
            fail(&format!("total {} but plain Rust gives {want}", total.value()));
        }
        let bound = before / 1024 + budget_mb + SLACK_MB;
        if peak / 1024 > bound {
            fail(&format!("peak resident memory {} MiB over {bound} MiB", peak / 1024));
        }
        println!("check: the total agrees with plain Rust; the peak is within {bound} MiB (before + budget + {SLACK_MB})");
    }
}

fn usage() -> ! {
    eprintln!("usage: seq_stream [--check] [--gib G] [--budget-mb M]");
    exit(2)
}

fn fail(msg: &str) -> ! {
    eprintln!("seq_stream: {msg}");
    exit(1)
}

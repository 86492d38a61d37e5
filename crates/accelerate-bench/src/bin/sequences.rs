//! The sequence runtime's measurements that the benchmark harness's
//! tables do not fit: the adaptive chunk scheduler against a sweep of
//! fixed chunk sizes (the sequences thesis §5.4; `exec/seq/schedule.rs`,
//! Note [Choosing chunk sizes]), the overlap of `stream_in`'s producer,
//! the computation and `stream_out`'s consumer (§3.2.2), and on a
//! backend that copies to a device, the overlap of a chunk's copy with
//! the chunk before it (Note [Chunks copied ahead]).
//!
//! ```sh
//! cargo run --release -p accelerate-bench --bin sequences -- [--elements N] [--runs R] [--max-chunk K] \
//!     [--copy-mib M] [--copy-steps S,S,..] [scheduler] [pipeline] [copy]
//! ```
//!
//! The named measurements run (all three when none is named).
//!
//! **The scheduler.** Two streams of `i32` vectors, each element's sum of a hash of its
//! values in `i64` (`map_seq`, then `elements`): a *regular* one (every
//! vector of `LEN` elements) and an *irregular* one (lengths drawn
//! uniformly from `0 ..= 2 LEN`, the same mean). Each is run with every
//! fixed chunk size `1, 2, 4, .., K` and with the adaptive scheduler, `R`
//! times each, in interleaved rounds; the table gives each one's median
//! time, and for the adaptive runs the size they settled on: the chunk
//! size that computed the most elements in the second half of the run
//! (from the progress callback). The issue's targets: the settled size
//! within 2x of the best fixed size, and the adaptive time within 10% of
//! the best fixed time. Every run's result is checked against plain Rust
//! (integer sums: exact).
//!
//! **The pipeline.** A stream of `OVERLAP_N` vectors whose producer
//! sleeps `SLEEP` before each, mapped by a computation that takes about
//! as long per element, read by a consumer that sleeps `SLEEP` after
//! each: run one stage at a time the three take their sum; overlapped,
//! about the longest of them. The computation's own time is measured
//! first with no sleeps.
//!
//! **Chunks copied ahead.** `M` MiB of `f32` vectors of `2^20` elements,
//! in memory, streamed in chunks of 8 vectors, each element iterated
//! `s` times (for each `s` of `--copy-steps`, default 0, 16, 64, 256: a
//! GPU needs thousands for the computation to take as long as a chunk's
//! copy), summed per vector; each run
//! with the next chunk copied to the device while the current computes
//! and without (`SeqOptions::copy_ahead`), `R` times each, medians. The
//! two must agree bit for bit (the same kernels on the same chunks). On
//! a backend that copies nothing (the CPU backend), the two are the
//! same run.

use accelerate::prelude::*;
use accelerate::{run_seq_with, stream_out_with, Config, ProgressFn, SeqOptions};
use accelerate_bench::harness::median;
use accelerate_programs::rng::{Rng, SEED_A};
use std::collections::BTreeMap;
use std::process::exit;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The mean length of an element.
const LEN: usize = 1024;

fn usage() -> ! {
    eprintln!(
        "usage: sequences [--elements N] [--runs R] [--max-chunk K] [--copy-mib M] [--copy-steps S,S,..] \
         [scheduler] [pipeline] [copy]"
    );
    exit(2)
}

fn hash(v: &Exp<i32>) -> Exp<i64> {
    let y = v * 31i32 + 7i32;
    (&y ^ (&y >> 3i32)).cast::<i64>()
}

fn hash_ref(v: i32) -> i64 {
    let y = v.wrapping_mul(31).wrapping_add(7);
    (y ^ (y >> 3)) as i64
}

/// The sizes of the chunks computed, by how many elements each computed,
/// recorded by the progress callback.
#[derive(Default)]
struct Trace {
    last_elements: u64,
    steps: Vec<(usize, u64)>,
}

impl Trace {
    /// The size that computed the most elements in the second half.
    fn settled(&self) -> usize {
        let total = self.last_elements;
        let mut by_size: BTreeMap<usize, u64> = BTreeMap::new();
        let mut done = 0;
        for &(k, n) in &self.steps {
            if done >= total / 2 {
                *by_size.entry(k).or_default() += n;
            }
            done += n;
        }
        by_size.into_iter().max_by_key(|&(_, n)| n).map_or(0, |(k, _)| k)
    }
}

struct Stream {
    name: &'static str,
    items: Arc<Vec<Vector<i32>>>,
    want: Vec<i64>,
}

impl Stream {
    fn new(name: &'static str, lens: Vec<usize>, rng: &mut Rng) -> Stream {
        let items: Vec<Vector<i32>> = lens
            .iter()
            .map(|&n| Vector::from_elems((0..n).map(|_| rng.next_u64() as i32).collect()))
            .collect();
        let want = items.iter().map(|x| x.as_slice().iter().map(|&v| hash_ref(v)).sum()).collect();
        Stream { name, items: Arc::new(items), want }
    }

    fn bytes(&self) -> usize {
        self.items.iter().map(|x| x.as_slice().len() * 4).sum()
    }

    /// One run with the chunk size `chunk` (`None`: adaptive); its time
    /// and the size it settled on.
    fn run(&self, chunk: Option<usize>) -> Result<(Duration, usize), String> {
        let trace = Arc::new(Mutex::new(Trace::default()));
        let t2 = trace.clone();
        let progress = ProgressFn(Arc::new(move |p| {
            let mut t = t2.lock().unwrap();
            let n = p.elements - t.last_elements;
            t.last_elements = p.elements;
            t.steps.push((p.chunk_size, n));
        }));
        let config = Config::default().with_seq(SeqOptions {
            chunk,
            progress: Some(progress),
            ..SeqOptions::default()
        });
        let items = self.items.clone();
        let n = items.len();
        let sums = stream_in((0..n).map(move |i| items[i].clone())).map_seq(|x| x.map(hash).sum()).elements();
        let t = Instant::now();
        let got = run_seq_with(&sums, &config).map_err(|e| e.to_string())?;
        let time = t.elapsed();
        if got.as_slice() != self.want.as_slice() {
            return Err(format!("{}: chunk {chunk:?}: the sums differ from plain Rust's", self.name));
        }
        let settled = trace.lock().unwrap().settled();
        Ok((time, settled))
    }
}

fn main() {
    let (mut n, mut runs, mut max_chunk, mut copy_mib) = (1usize << 16, 5usize, 8192usize, 1024usize);
    let mut only: Vec<String> = Vec::new();
    let mut copy_steps: Vec<i64> = vec![0, 16, 64, 256];
    let mut it = std::env::args().skip(1);
    let number = |it: &mut std::iter::Skip<std::env::Args>| -> usize {
        it.next().and_then(|s| s.parse().ok()).filter(|&v| v > 0).unwrap_or_else(|| usage())
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--elements" => n = number(&mut it),
            "--runs" => runs = number(&mut it),
            "--max-chunk" => max_chunk = number(&mut it),
            "--copy-mib" => copy_mib = number(&mut it),
            "--copy-steps" => {
                let list = it.next().unwrap_or_else(|| usage());
                copy_steps = list.split(',').map(|s| s.parse().unwrap_or_else(|_| usage())).collect();
            }
            "scheduler" | "pipeline" | "copy" => only.push(a),
            _ => usage(),
        }
    }
    let wanted = |m: &str| only.is_empty() || only.iter().any(|o| o == m);
    let scheduler = || -> Result<(), String> {
        let mut rng = Rng::new(SEED_A);
        let regular = Stream::new("regular", vec![LEN; n], &mut rng);
        let lens = (0..n).map(|_| rng.below(2 * LEN + 1)).collect();
        let irregular = Stream::new("irregular", lens, &mut rng);
        let mut sizes = Vec::new();
        let mut k = 1;
        while k <= max_chunk {
            sizes.push(Some(k));
            k *= 2;
        }
        sizes.push(None);
        [&regular, &irregular].iter().try_for_each(|s| report(s, &sizes, runs))
    };
    let mut done = Ok(());
    if wanted("scheduler") {
        done = done.and_then(|()| scheduler());
    }
    if wanted("pipeline") {
        done = done.and_then(|()| overlap());
    }
    if wanted("copy") {
        done = done.and_then(|()| copy_ahead(copy_mib, &copy_steps, runs));
    }
    if let Err(e) = done {
        eprintln!("sequences: {e}");
        exit(1);
    }
}

/// The elements of a vector in the copy-ahead measurement.
const COPY_LEN: usize = 1 << 20;

fn copy_ahead(mib: usize, steps_list: &[i64], runs: usize) -> Result<(), String> {
    let count = (mib << 20) / (4 * COPY_LEN);
    let items: Vec<Vector<f32>> = (0..count)
        .map(|i| Vector::from_elems((0..COPY_LEN).map(|j| ((i * 7 + j) % 1000) as f32 / 1000.0).collect()))
        .collect();
    let base = Config::default();
    println!(
        "\n### Chunks copied ahead: {count} vectors of 2^20 f32 ({mib} MiB) in chunks of 8, backend {:?}, {runs} runs each (medians)\n",
        base.backend
    );
    println!("| steps an element | not copied ahead (ms) | copied ahead (ms) | ahead / not |\n|---:|---:|---:|---:|");
    for &steps in steps_list {
        let run = |ahead: bool| -> Result<(Duration, Vec<u32>), String> {
            let config = base.clone().with_seq(SeqOptions {
                chunk: Some(8),
                copy_ahead: ahead,
                ..SeqOptions::default()
            });
            let items = items.clone();
            let s = stream_in(items).map_seq(move |x| {
                x.map(move |v| iterate(steps, |y| y * 0.999f32 + 0.001f32, v.clone())).sum()
            });
            let t = Instant::now();
            let sums: Vector<f32> = run_seq_with(&s.elements(), &config).map_err(|e| e.to_string())?;
            Ok((t.elapsed(), sums.to_vec().iter().map(|v| v.to_bits()).collect()))
        };
        // a first run of each not timed: the kernels compiled into the cache
        let (_, want) = run(false)?;
        run(true)?;
        let (mut off, mut on) = (Vec::new(), Vec::new());
        for _ in 0..runs {
            let (t, r) = run(false)?;
            off.push(t);
            let (u, q) = run(true)?;
            on.push(u);
            if r != want || q != want {
                return Err(format!("copy-ahead, {steps} steps: the sums differ between runs"));
            }
        }
        let (off, on) = (median(&off), median(&on));
        println!(
            "| {steps} | {:.2} | {:.2} | {:.3} |",
            off.as_secs_f64() * 1e3,
            on.as_secs_f64() * 1e3,
            on.as_secs_f64() / off.as_secs_f64()
        );
    }
    Ok(())
}

const OVERLAP_N: usize = 200;
const SLEEP: Duration = Duration::from_millis(2);

/// Per element: a vector of `2^14` values, each iterated `steps` times.
fn overlap_seq(items: Vec<Vector<f32>>, steps: i64, delay: Duration) -> Seq<Scalar<f32>> {
    let slow = items.into_iter().inspect(move |_| std::thread::sleep(delay));
    stream_in(slow).map_seq(move |x| {
        x.map(move |v| iterate(steps, |y| (y * y + 0.25f32).sqrt() * 0.5f32, v.clone())).sum()
    })
}

fn overlap() -> Result<(), String> {
    let items =
        || (0..OVERLAP_N).map(|i| Vector::from_elems(vec![i as f32 / 7.0; 1 << 14])).collect::<Vec<_>>();
    // chunks of one element, so that the consumer receives each element
    // as it is computed and every stage works a step at a time
    let config = Config::default().with_seq(SeqOptions { chunk: Some(1), ..SeqOptions::default() });
    let consume = |delay: Duration, s: Seq<Scalar<f32>>| -> Result<(Duration, usize), String> {
        let t = Instant::now();
        let mut n = 0;
        for x in stream_out_with(&s, &config).map_err(|e| e.to_string())? {
            x.map_err(|e| e.to_string())?;
            std::thread::sleep(delay);
            n += 1;
        }
        Ok((t.elapsed(), n))
    };
    // the number of steps that makes an element's computation about SLEEP
    let mut steps = 4;
    let compute = loop {
        consume(Duration::ZERO, overlap_seq(items(), steps, Duration::ZERO))?;
        let (t, _) = consume(Duration::ZERO, overlap_seq(items(), steps, Duration::ZERO))?;
        if t >= SLEEP * OVERLAP_N as u32 || steps >= 1 << 12 {
            break t;
        }
        steps *= 2;
    };
    let (total, n) = consume(SLEEP, overlap_seq(items(), steps, SLEEP))?;
    if n != OVERLAP_N {
        return Err(format!("the overlapped run gave {n} elements of {OVERLAP_N}"));
    }
    let sleeps = SLEEP * OVERLAP_N as u32;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let (longest, sum) = (compute.max(sleeps), compute + 2 * sleeps);
    println!(
        "\n### Pipeline: {OVERLAP_N} elements, producer and consumer sleeping {} ms each per element\n",
        ms(SLEEP)
    );
    println!("| stage | ms |\n|---|---:|");
    println!(
        "| producer (sleeps) | {:.1} |\n| computation ({steps} steps an element, alone) | {:.1} |",
        ms(sleeps),
        ms(compute)
    );
    println!(
        "| consumer (sleeps) | {:.1} |\n| **all three, overlapped** | **{:.1}** |",
        ms(sleeps),
        ms(total)
    );
    println!(
        "\noverlapped: {:.2}x the longest stage, {:.2}x the sum of the stages ({:.1} ms)",
        total.as_secs_f64() / longest.as_secs_f64(),
        total.as_secs_f64() / sum.as_secs_f64(),
        ms(sum)
    );
    Ok(())
}

fn report(s: &Stream, sizes: &[Option<usize>], runs: usize) -> Result<(), String> {
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); sizes.len()];
    let mut settled = Vec::new();
    // a first round not timed: the kernels compiled into the cache
    for &k in sizes {
        s.run(k)?;
    }
    for _ in 0..runs {
        for (i, &k) in sizes.iter().enumerate() {
            let (t, settle) = s.run(k)?;
            times[i].push(t);
            if k.is_none() {
                settled.push(settle);
            }
        }
    }
    let medians: Vec<Duration> = times.iter().map(|t| median(t)).collect();
    let n = s.items.len();
    println!(
        "\n### {} stream: {n} vectors of i32, {:.1} MiB, {runs} runs each (medians)\n",
        s.name,
        s.bytes() as f64 / (1 << 20) as f64
    );
    println!("| chunk | ms | Melements/s |\n|---:|---:|---:|");
    let (mut best, mut best_t) = (0, Duration::MAX);
    for (k, t) in sizes.iter().zip(&medians) {
        let name = k.map_or("adaptive".to_string(), |k| k.to_string());
        println!("| {name} | {:.2} | {:.2} |", t.as_secs_f64() * 1e3, n as f64 / t.as_secs_f64() / 1e6);
        if let Some(k) = k {
            if *t < best_t {
                (best, best_t) = (*k, *t);
            }
        }
    }
    let adaptive = *medians.last().unwrap();
    settled.sort();
    let settle = settled[settled.len() / 2];
    println!(
        "\nbest fixed chunk {best} ({:.2} ms); adaptive settled on {settle} (runs: {settled:?}), {:.2}x the best size; \
         its time {:.3}x the best fixed time",
        best_t.as_secs_f64() * 1e3,
        settle as f64 / best as f64,
        adaptive.as_secs_f64() / best_t.as_secs_f64()
    );
    Ok(())
}

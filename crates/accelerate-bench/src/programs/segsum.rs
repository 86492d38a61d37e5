//! Segmented sums (`accelerate_programs::segsum`): 2^24 f64 values cut
//! into segments given by their lengths, most of 1 to 16 elements (with
//! an empty one now and then) and eight of 10^5 to 10^6, about 1.5
//! million segments, and the sum of each. Ours is `fold_seg` (the
//! lengths scanned into offsets, then one reduction per segment, the
//! work cut between workers by elements). The hand-written version cuts
//! the segments into tasks of `SEGMENTS_PER_TASK`: each task's element
//! count summed in parallel, a sequential scan of those gives each task
//! its first element, and each task sums its segments (long ones in
//! eight lanes). Memory-bound at the large size: 128 MiB of values and
//! 12 MiB of lengths read, 12 MiB of sums written.
//!
//! Bytes are that compulsory traffic; flops one add per value. The
//! values are multiples of 2^-20 whose sums are exact in any order
//! (`accelerate_programs::segsum`), so every variant is compared with
//! the reference to the bit.

use super::{add_accelerate_variants, count, probe_compile, CompileProbe};
use crate::check::elementwise;
use crate::harness::{in_place, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::rng::{SEED_A, SEED_B};
use accelerate_programs::segsum::{exact_f64s, segment_lengths, segment_sums, segment_sums_ref, Segments};
use rayon::prelude::*;
use std::sync::Arc;

/// The total length and the long segments, by size.
pub fn segments(size: Size) -> Segments {
    size.pick(
        Segments { total: 1037, long: 2, long_lo: 100, long_hi: 200 },
        Segments { total: 1 << 20, long: 4, long_lo: 10_000, long_hi: 50_000 },
        Segments { total: 1 << 24, long: 8, long_lo: 100_000, long_hi: 1_000_000 },
    )
}

/// The Accelerate program as a function of its arrays.
pub fn program(xs: Acc<Vector<f64>>, lengths: Acc<Vector<i64>>) -> Acc<Vector<f64>> {
    segment_sums(&xs, &lengths)
}

/// Segments per rayon task: about 35 000 elements of short segments, tens
/// of microseconds of work, and a few hundred tasks at the large size for
/// work stealing to balance the few that hold a long segment.
const SEGMENTS_PER_TASK: usize = 4096;

native_fn! {
    /// The sums of consecutive segments of `xs` (which starts at the
    /// first), into `out`: short segments by a plain loop (independent
    /// segments overlap in the processor), long ones in eight lanes, so
    /// that the loop vectorises and the adds' latency is hidden.
    fn sum_segments(xs: &[f64], lengths: &[i64], out: &mut [f64]) {
        const LANES: usize = 8;
        let mut start = 0;
        for (o, &len) in out.iter_mut().zip(lengths) {
            let seg = &xs[start..start + len as usize];
            start += len as usize;
            // sums from +0.0, as the reference (Rust's `sum` of floats
            // starts from -0.0, which an empty segment would keep)
            *o = if seg.len() < 8 * LANES {
                seg.iter().fold(0.0, |a, &x| a + x)
            } else {
                let (body, tail) = seg.as_chunks::<LANES>();
                let mut acc = [0.0f64; LANES];
                for c in body {
                    for k in 0..LANES {
                        acc[k] += c[k];
                    }
                }
                acc.iter().fold(0.0, |a, &x| a + x) + tail.iter().fold(0.0, |a, &x| a + x)
            };
        }
    }
}

native_fn! {
    /// The elements of a run of segments.
    fn total_length(lengths: &[i64]) -> i64 {
        lengths.iter().sum()
    }
}

/// Parallel: each task of `SEGMENTS_PER_TASK` segments finds its first
/// element from the element counts of the tasks before it, then sums its
/// segments.
pub fn segsum_rayon(xs: &[f64], lengths: &[i64], out: &mut [f64]) {
    let totals: Vec<i64> = lengths.par_chunks(SEGMENTS_PER_TASK).map(total_length).collect();
    let starts: Vec<usize> = totals
        .iter()
        .scan(0usize, |s, &t| {
            let here = *s;
            *s += t as usize;
            Some(here)
        })
        .collect();
    out.par_chunks_mut(SEGMENTS_PER_TASK)
        .zip(lengths.par_chunks(SEGMENTS_PER_TASK))
        .zip(starts)
        .for_each(|((o, l), start)| sum_segments(&xs[start..], l, o));
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let s = segments(size);
    let xs = Arc::new(exact_f64s(s.total, SEED_A));
    let lengths = Arc::new(segment_lengths(s, SEED_B));
    let nseg = lengths.len();
    let mut want = vec![0.0f64; nseg];
    segment_sums_ref(&xs, &lengths, &mut want);
    let want = Arc::new(want);
    // exact sums (the module doc): equal to the reference to the bit
    let check = move |got: &[f64]| elementwise(got, &want, |_, g, w| g.to_bits() == w.to_bits());

    let problem =
        format!("n = {} f64, {nseg} segments ({} of {}..{})", count(s.total), s.long, s.long_lo, s.long_hi);
    let mut b = Bench::new("segsum", problem);
    b.bytes = Some((8 * s.total + 8 * nseg + 8 * nseg) as f64);
    b.flops = Some(s.total as f64);
    b.memory_bound = size == Size::Large;

    let args = (Vector::from_elems(xs.to_vec()), Vector::from_elems(lengths.to_vec()));
    let c = check.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
        move |p| p.run((&args.0, &args.1)),
        move |r: &Vector<f64>| c(&r.to_vec()),
    )?;
    type Kernel = fn(&[f64], &[i64], &mut [f64]);
    let kernels: [(&str, Kernel); 2] = [("rust-seq", segment_sums_ref), ("rust-rayon", segsum_rayon)];
    for (name, kernel) in kernels {
        let (x, l, c) = (xs.clone(), lengths.clone(), check.clone());
        b.variant(
            name,
            move |s| Ok(in_place(s, || vec![0.0f64; nseg], |o| kernel(&x, &l, o))),
            move |o| c(o),
        );
    }
    peers::add(
        &mut b,
        &["numpy", "numba", "jax", "scipy"],
        &[("xs.bin", peers::bytes(&xs)), ("lengths.bin", peers::bytes(&lengths))],
        &[s.total.to_string(), nseg.to_string()],
        peers::all::<f64>,
        move |r: &Vec<f64>| check(r),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

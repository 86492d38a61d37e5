//! A histogram with per-bin extremes (`accelerate_programs::histogram`):
//! 2^24 f32 values (about 1 in 16 outside [0, 1), dropped) counted into
//! 256 bins, with each bin's smallest and largest value. Ours is two
//! forward permutations, an `i64` one combining ones with `+` and one of
//! `(f32, f32)` pairs combining with `min`/`max`, each reading the
//! values; the hand-written version makes one pass, each rayon task into
//! private bins merged at the end, the bins of a block of values computed
//! (vectorised) before the block's updates (`add_chunk`). Compute-bound:
//! the values (64 MiB) are read in a few milliseconds, while every one
//! costs a float-to-integer conversion and three dependent
//! read-modify-writes of its bin.
//!
//! Bytes are the compulsory traffic (the values read once, the bins
//! written once); no flops are counted. Every result (counts, minima,
//! maxima) is exact in any order of combination, so every variant is
//! compared with the reference to the bit.

use super::{add_accelerate_variants, count, probe_compile, CompileProbe, STREAM_CHUNK};
use crate::check::elementwise;
use crate::harness::{value, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::histogram::{
    histogram, histogram_ref, histogram_values, HistogramArrays, EMPTY_RANGE,
};
use accelerate_programs::rng::SEED_A;
use rayon::prelude::*;
use std::sync::Arc;

pub fn elements(size: Size) -> usize {
    size.pick(1037, 1 << 18, 1 << 24)
}

/// The number of bins, at every size (at the tiny size most bins get a
/// few values and some none, which keeps the empty range).
pub const BINS: i64 = 256;

/// The result of every variant: the counts, and each bin's (min, max).
type Histogram = (Vec<i64>, Vec<(f32, f32)>);

/// The Accelerate program as a function of its array.
pub fn program(xs: Acc<Vector<f32>>) -> Acc<HistogramArrays> {
    histogram(&xs, BINS)
}

/// One task's private bins, and one more (`BINS`) that the values out
/// of range go to, so that the loop that updates the bins has no branch.
struct Bins {
    counts: Vec<i64>,
    lo: Vec<f32>,
    hi: Vec<f32>,
}

impl Bins {
    fn new() -> Bins {
        let b = BINS as usize + 1;
        Bins { counts: vec![0; b], lo: vec![EMPTY_RANGE.0; b], hi: vec![EMPTY_RANGE.1; b] }
    }

    fn merge(mut self, other: Bins) -> Bins {
        for b in 0..self.counts.len() {
            self.counts[b] += other.counts[b];
            self.lo[b] = other.lo[b].min(self.lo[b]);
            self.hi[b] = other.hi[b].max(self.hi[b]);
        }
        self
    }
}

/// The values whose bins are computed at once: a block's bins (1 KiB)
/// stay in the first-level cache for the updates that follow.
const BLOCK: usize = 512;

native_fn! {
    /// One chunk into a task's bins, block by block in two steps: the
    /// bins of a block's values (a loop without stores to the bins, which
    /// vectorises: the same f32 multiply and clamp as `bin_ref`, out of
    /// range sent to the extra bin), then the three updates of each
    /// value's bin (one array per statistic; no branch, since every value
    /// has a bin). On one core (a rough measurement under load) the two
    /// steps took 53 to 56 ms at 2^24 against 74 to 100 ms for the
    /// reference's one loop, whose conversion and range branch sit
    /// between the dependent updates; that was before the conversion
    /// was vectorised, which took the parallel version from about 31 to
    /// about 24 ms.
    fn add_chunk(xs: &[f32], counts: &mut [i64], lo: &mut [f32], hi: &mut [f32]) {
        let nb = BINS as usize + 1;
        let (counts, lo, hi) = (&mut counts[..nb], &mut lo[..nb], &mut hi[..nb]);
        let mut bins = [0u16; BLOCK];
        for block in xs.chunks(BLOCK) {
            for (b, &x) in bins.iter_mut().zip(block) {
                // the reference's bin, `min((x * bins) as i64, bins - 1)`,
                // clamped in f32 first so that the conversion needs no
                // saturation (AVX2 then converts eight at a time); a
                // value out of range (NaN included) goes to bin `BINS`
                let y = if (0.0..1.0).contains(&x) {
                    (x * BINS as f32).min((BINS - 1) as f32)
                } else {
                    BINS as f32
                };
                // SAFETY: `y` is in [0, BINS] and not NaN, so its
                // truncation fits an i32.
                *b = unsafe { y.to_int_unchecked::<i32>() } as u16;
            }
            for (&b, &x) in bins.iter().zip(block) {
                let b = b as usize;
                counts[b] += 1;
                lo[b] = x.min(lo[b]);
                hi[b] = x.max(hi[b]);
            }
        }
    }
}

/// Parallel: chunks of `STREAM_CHUNK` values on rayon's pool, each task
/// (rayon's `fold`) into its own bins, merged pairwise at the end.
pub fn histogram_rayon(xs: &[f32]) -> Histogram {
    let bins = xs
        .par_chunks(STREAM_CHUNK)
        .fold(Bins::new, |mut h, c| {
            add_chunk(c, &mut h.counts, &mut h.lo, &mut h.hi);
            h
        })
        .reduce(Bins::new, Bins::merge);
    let b = BINS as usize;
    let ranges = bins.lo[..b].iter().zip(&bins.hi[..b]).map(|(&l, &h)| (l, h)).collect();
    (bins.counts[..b].to_vec(), ranges)
}

/// The counts and the ranges equal to the reference's, to the bit (an
/// empty bin's range is (+inf, -inf) in every variant).
fn check(got: &Histogram, want: &Histogram) -> Result<(), String> {
    elementwise(&got.0, &want.0, |_, g, w| g == w).map_err(|e| format!("counts: {e}"))?;
    let bits = |(l, h): (f32, f32)| (l.to_bits(), h.to_bits());
    elementwise(&got.1, &want.1, |_, g, w| bits(g) == bits(w)).map_err(|e| format!("ranges: {e}"))
}

/// A peer's result: the counts (`i64`), then the minima and the maxima
/// (`f32`), `BINS` each.
fn decode(raw: Vec<u8>) -> Histogram {
    let b = Some(BINS as usize);
    let (counts, rest) = peers::take::<i64>(&raw, b);
    let (lo, rest) = peers::take::<f32>(rest, b);
    let (hi, _) = peers::take::<f32>(rest, b);
    (counts, lo.into_iter().zip(hi).collect())
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let n = elements(size);
    let xs = Arc::new(histogram_values(n, SEED_A));
    let want = Arc::new(histogram_ref(&xs, BINS));

    let mut b = Bench::new("histogram", format!("n = {} f32 into {BINS} bins, count and range", count(n)));
    b.bytes = Some(4.0 * n as f64 + (8.0 + 4.0 + 4.0) * BINS as f64);

    let xa = Vector::from_elems(xs.to_vec());
    let w = want.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
        move |p| p.run(&xa),
        move |r: &HistogramArrays| check(&(r.0.to_vec(), r.1.to_vec()), &w),
    )?;
    let (x, w) = (xs.clone(), want.clone());
    b.variant("rust-seq", move |s| Ok(value(s, || histogram_ref(&x, BINS))), move |r| check(r, &w));
    let (x, w) = (xs.clone(), want.clone());
    b.variant("rust-rayon", move |s| Ok(value(s, || histogram_rayon(&x))), move |r| check(r, &w));
    peers::add(
        &mut b,
        // (SciPy's labelled statistics, `ndimage.minimum`/`maximum`, took
        // 4.5 to 7 s a run at 2^24: a minute of the suite, left out)
        &["numpy", "numba", "jax"],
        &[("xs.bin", peers::bytes(&xs))],
        &[n.to_string(), BINS.to_string()],
        decode,
        move |r: &Histogram| check(r, &want),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

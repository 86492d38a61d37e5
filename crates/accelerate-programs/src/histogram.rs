//! A histogram with per-bin extremes: values in [0, 1) counted into `bins`
//! equal bins, and the smallest and largest value that fell into each,
//! the two `permute`s of Accelerate's histogram idiom (a forward
//! permutation combining with `+`, and one combining pairs with
//! `min`/`max`). Values outside [0, 1) are dropped (`nothing()`), as
//! `numpy.histogram` with `range=(0, 1)` drops them.
//!
//! Who computes this: binning measurements for a histogram plot or an
//! equal-width quantisation, and the per-bin range a summary table shows
//! beside each count (SciPy's `binned_statistic` with `count`, `min`,
//! `max`).
//!
//! The bin of `x` is `(x * bins) as i64` in f32, clamped to `bins - 1`
//! (for `bins` not a power of two, `x * bins` can round up to `bins` for
//! `x` just below 1). Every variant does the same f32 multiply, so the
//! bins agree exactly, and counts, minima and maxima are exact in any
//! order of combination: results compare to the bit.
//!
//! Used by the `histogram` benchmarks (`accelerate-bench`).

use crate::rng::Rng;
use accelerate::prelude::*;

/// The bin of `x`, or none for `x` outside [0, 1).
fn bin_of(x: &Exp<f32>, bins: i64) -> Exp<Option<DIM1>> {
    let b = (x * bins as f32).cast::<i64>().min(bins - 1);
    cond(x.ge(0.0f32).and(x.lt(1.0f32)), just(index1(b)), nothing())
}

/// What [`histogram`] computes: the counts, and each bin's (min, max).
pub type HistogramArrays = (Vector<i64>, Vector<(f32, f32)>);

/// The counts of each of `bins` equal bins of [0, 1) (an `i64` permute
/// with `+` of ones), and each bin's (smallest, largest) value (a permute
/// of pairs, starting from (+inf, -inf), which an empty bin keeps).
pub fn histogram(xs: &Acc<Vector<f32>>, bins: i64) -> Acc<HistogramArrays> {
    let counts = xs.map(|_| constant(1i64)).permute(
        |new, old| new + old,
        fill(index1(bins), 0i64),
        |ix| bin_of(&xs.index(ix), bins),
    );
    let ranges = xs.map(|x| lift((x, x))).permute(
        |new, old| lift((new.fst().min(old.fst()), new.snd().max(old.snd()))),
        fill(index1(bins), lift((constant(f32::INFINITY), constant(f32::NEG_INFINITY)))),
        |ix| bin_of(&xs.index(ix), bins),
    );
    lift_acc((counts, ranges))
}

/// The bin of `x` in plain Rust: the same f32 arithmetic as the program.
#[inline(always)]
pub fn bin_ref(x: f32, bins: i64) -> Option<usize> {
    (0.0..1.0).contains(&x).then(|| ((x * bins as f32) as i64).min(bins - 1) as usize)
}

/// The empty range a bin starts from.
pub const EMPTY_RANGE: (f32, f32) = (f32::INFINITY, f32::NEG_INFINITY);

/// [`histogram`] in plain Rust: one pass, in order, combining as the
/// program's operators do (`combine(new, old)`).
pub fn histogram_ref(xs: &[f32], bins: i64) -> (Vec<i64>, Vec<(f32, f32)>) {
    let mut counts = vec![0i64; bins as usize];
    let mut ranges = vec![EMPTY_RANGE; bins as usize];
    for &x in xs {
        if let Some(b) = bin_ref(x, bins) {
            counts[b] += 1;
            let (lo, hi) = ranges[b];
            ranges[b] = (x.min(lo), x.max(hi));
        }
    }
    (counts, ranges)
}

/// `n` values, about 15 in 16 in [0, 1) (24 random bits each, `unit_f32`)
/// and the others outside it, below 0 or at 2 and above, for the program
/// to drop; none is exactly 1, the edge where binning conventions differ.
pub fn histogram_values(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| {
            let u = rng.unit_f32();
            match rng.below(32) {
                0 => -1.0 - u,
                1 => 2.0 + u,
                _ => u,
            }
        })
        .collect()
}

//! Segmented sums: a vector cut into consecutive segments, given by their
//! lengths, and the sum of each, with Accelerate's `fold_seg` (which
//! scans the lengths into offsets and reduces every segment).
//!
//! Who computes this: a group-by sum over sorted keys, the row sums of a
//! ragged array or a CSR matrix, the per-document totals of a flattened
//! corpus. The segments of real data are irregular: most short, a few
//! very long (the heavy rows of a power-law graph), which is what the
//! generator here makes ([`segment_lengths`]) and what a parallel
//! schedule has to balance.
//!
//! The values are f64 multiples of 2^-20 in [-1, 1) ([`exact_f64s`]):
//! every partial sum of up to 2^32 of them is a multiple of 2^-20 below
//! 2^32 in magnitude, which has at most 52 significant bits and so is
//! exact in f64. The sums are therefore the same in every order of
//! addition and every variant compares to the bit.
//!
//! Used by the `segsum` benchmarks (`accelerate-bench`).

use crate::rng::Rng;
use accelerate::prelude::*;

/// The sum of each segment of `xs`, the segments given by their
/// `lengths` (which sum to the length of `xs`); an empty segment sums
/// to 0.
pub fn segment_sums(xs: &Acc<Vector<f64>>, lengths: &Acc<Vector<i64>>) -> Acc<Vector<f64>> {
    xs.fold_seg(0.0, |a, b| a + b, lengths)
}

/// [`segment_sums`] in plain Rust, into `out` (one element a segment):
/// each segment summed left to right from 0.
pub fn segment_sums_ref(xs: &[f64], lengths: &[i64], out: &mut [f64]) {
    let mut start = 0usize;
    for (o, &len) in out.iter_mut().zip(lengths) {
        let end = start + len as usize;
        *o = xs[start..end].iter().fold(0.0, |a, &x| a + x);
        start = end;
    }
}

/// `n` values `k * 2^-20` with `k` uniform in [-2^20, 2^20): sums of
/// them are exact in f64 in any order (the module doc).
pub fn exact_f64s(n: usize, seed: u64) -> Vec<f64> {
    let mut rng = Rng::new(seed);
    let scale = (1u64 << 20) as f64;
    (0..n).map(|_| (rng.below(1 << 21) as i64 - (1 << 20)) as f64 / scale).collect()
}

/// What [`segment_lengths`] makes.
#[derive(Clone, Copy, Debug)]
pub struct Segments {
    /// The total length.
    pub total: usize,
    /// How many long segments, and their lengths' range (`lo..=hi`).
    pub long: usize,
    pub long_lo: usize,
    pub long_hi: usize,
}

/// Segment lengths summing to `s.total`: `s.long` long segments of
/// `s.long_lo ..= s.long_hi` elements at random places among short ones
/// of 1 to 16 elements, with an empty one now and then (1 in 64). The
/// last short segment is cut to make the total.
pub fn segment_lengths(s: Segments, seed: u64) -> Vec<i64> {
    let mut rng = Rng::new(seed);
    let long: Vec<usize> = (0..s.long).map(|_| s.long_lo + rng.below(s.long_hi - s.long_lo + 1)).collect();
    let short_total = s.total.saturating_sub(long.iter().sum());
    let mut lengths = Vec::new();
    let mut left = short_total;
    while left > 0 {
        let len = if rng.below(64) == 0 { 0 } else { (1 + rng.below(16)).min(left) };
        lengths.push(len as i64);
        left -= len;
    }
    for len in long {
        let at = rng.below(lengths.len() + 1);
        lengths.insert(at, len as i64);
    }
    lengths
}

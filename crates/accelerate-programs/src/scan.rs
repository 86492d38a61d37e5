//! Prefix sums: the running totals of a vector of counts, with
//! Accelerate's `scanl` from 0 (an exclusive scan with the grand total
//! appended: `n + 1` results).
//!
//! Who computes this: the offsets of variable-sized pieces from their
//! sizes (where each row of a CSR matrix starts, where each thread writes
//! its part of a compacted array, the buckets of a radix sort), the
//! scan at the heart of most data-parallel algorithms. The counts are
//! `i32`, as offsets into arrays of fewer than 2^31 elements are, and
//! small (below 16), so the totals never overflow and every variant's
//! result compares exactly.
//!
//! Used by the `scan` benchmarks (`accelerate-bench`).

use crate::rng::Rng;
use accelerate::prelude::*;

/// `[0, c0, c0 + c1, .., c0 + .. + c(n-1)]`: where each of `counts`'
/// pieces starts, and the total.
pub fn offsets(counts: &Acc<Vector<i32>>) -> Acc<Vector<i32>> {
    counts.scanl(0i32, |a, b| a + b)
}

/// [`offsets`] in plain Rust, into `out` (one longer than `counts`):
/// left to right, wrapping as the language's `+` does.
pub fn offsets_ref(counts: &[i32], out: &mut [i32]) {
    let mut acc = 0i32;
    out[0] = acc;
    for (o, &c) in out[1..].iter_mut().zip(counts) {
        acc = acc.wrapping_add(c);
        *o = acc;
    }
}

/// `n` counts in `0..16`.
pub fn small_counts(n: usize, seed: u64) -> Vec<i32> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.below(16) as i32).collect()
}

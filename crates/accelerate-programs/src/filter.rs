//! Stream compaction: the elements of a vector that satisfy a predicate,
//! in order, with Accelerate's `filter` (a scan of the 0/1 flags for each
//! kept element's position, then a `permute` of the kept elements to
//! them: `lang/library/gather_scatter.rs`).
//!
//! Who computes this: every selection step of a data-parallel program
//! (the particles still alive, the rows a query keeps, the active set of
//! an iterative solver), and NumPy's `xs[xs > t]`.
//!
//! The elements are moved, not computed, so every variant's result
//! compares to the bit.
//!
//! Used by the `filter` benchmarks (`accelerate-bench`).

use crate::rng::Rng;
use accelerate::prelude::*;

/// The elements of `xs` greater than `threshold`, in order, and how many
/// there are.
pub fn filter_above(xs: &Acc<Vector<f32>>, threshold: f32) -> Acc<(Vector<f32>, Scalar<i64>)> {
    xs.filter(|x| x.gt(threshold))
}

/// [`filter_above`] in plain Rust, into `out` (at least as long as `xs`):
/// the kept elements at its front, in order; returns how many.
pub fn filter_above_into(xs: &[f32], threshold: f32, out: &mut [f32]) -> usize {
    let mut kept = 0;
    for &x in xs {
        if x > threshold {
            out[kept] = x;
            kept += 1;
        }
    }
    kept
}

/// [`filter_above`] in plain Rust, as a new vector.
pub fn filter_above_ref(xs: &[f32], threshold: f32) -> Vec<f32> {
    xs.iter().copied().filter(|&x| x > threshold).collect()
}

/// `n` values in [0, 1) (24 random bits each): a threshold `t` keeps
/// about `1 - t` of them, at random positions.
pub fn uniform_values(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.unit_f32()).collect()
}

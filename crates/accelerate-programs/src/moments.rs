//! The mean and variance of a vector, as a user writes them: its sum and
//! the sum of its squares (two folds of one vector, which clustering,
//! `trafo::cluster`, computes in one loop that reads the vector once),
//! then `mean = s / n` and `variance = s2 / n - mean^2`.
//!
//! Used by the clustering tests and the `moments` benchmarks.

use accelerate::prelude::*;

/// `(mean, variance)` of `xs` (the population variance; NaN for an empty
/// vector, as `0 / 0`).
pub fn moments(xs: &Acc<Vector<f32>>) -> Acc<Scalar<(f32, f32)>> {
    let n = xs.size().cast::<f32>();
    let s = xs.sum();
    let s2 = xs.map(|x| x * x).sum();
    s.zip_with(s2, move |s, s2| {
        let mean = s / n.clone();
        lift((mean.clone(), s2 / n.clone() - mean.clone() * mean))
    })
}

/// The same in plain Rust, in f64: the sums of f32 values, rounded once.
pub fn moments_ref(xs: &[f32]) -> (f64, f64) {
    let n = xs.len() as f64;
    let s: f64 = xs.iter().map(|&x| x as f64).sum();
    let s2: f64 = xs.iter().map(|&x| x as f64 * x as f64).sum();
    let mean = s / n;
    (mean, s2 / n - mean * mean)
}

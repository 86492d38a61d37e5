//! Dot product: the smallest interesting Accelerate program, a `zip_with`
//! feeding a `fold` (ICFP'13 §5, "Dot Product"), which fusion makes one
//! reduction that reads both vectors once.
//!
//! Used by `examples/dotp.rs`, the fusion and CPU backend tests and the
//! `dotp` benchmarks.

use accelerate::prelude::*;

/// `sum (zipWith (*) xs ys)`: a plain Rust function that builds the
/// program (Rust is the meta-language).
pub fn dotp(xs: &Acc<Vector<f32>>, ys: &Acc<Vector<f32>>) -> Acc<Scalar<f32>> {
    xs.zip_with(ys, |x, y| x * y).fold(0.0, |a, b| a + b)
}

/// The same sum in plain Rust: sequential, left to right, in f32, the
/// order in which the reference interpreter folds (a parallel backend may
/// reassociate, `docs/semantics.md`).
pub fn dotp_ref(xs: &[f32], ys: &[f32]) -> f32 {
    xs.iter().zip(ys).fold(0.0f32, |a, (&x, &y)| a + x * y)
}

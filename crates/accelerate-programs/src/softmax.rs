//! Row-wise softmax of a matrix, f32: each row `x` becomes
//! `exp(x - max x) / sum exp(x - max x)`, the stable form every framework
//! computes (the maximum subtracted so that no `exp` overflows), as the
//! last layer of a classifier turns each row of logits into
//! probabilities.
//!
//! Written as a user of Accelerate writes it: the row maxima by
//! `maximum` (a `fold1` of `max`), `replicate`d back along the rows for a
//! `zip_with` that takes the exponentials, their row sums by `sum`, and a
//! last `zip_with` dividing each exponential by its row's sum. The
//! exponentials feed both the sums and the division, so they are one
//! shared array.
//!
//! Used by the `softmax` benchmark.

use accelerate::prelude::*;

/// The softmax of every row of `m`.
pub fn softmax(m: &Acc<Matrix<f32>>) -> Acc<Matrix<f32>> {
    let (_, cols) = unindex2(m.shape());
    let along_rows = any_dims::<Z>().all().fixed(&cols);
    let maxima = m.maximum();
    let exps = m.zip_with(maxima.replicate(along_rows.clone()), |x, top| (x - top).exp());
    let sums = exps.sum();
    exps.zip_with(sums.replicate(along_rows), |e, s| e / s)
}

/// One row's softmax in plain Rust, into `out`: the same f32 operations
/// as [`softmax`] (`f32::exp`, the C library's `expf` as the generated C
/// calls), the maximum and the sum taken left to right, as the
/// interpreter folds.
pub fn softmax_row_ref(row: &[f32], out: &mut [f32]) {
    let top = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let mut sum = 0.0f32;
    for (o, &x) in out.iter_mut().zip(row) {
        *o = (x - top).exp();
        sum += *o;
    }
    for o in out.iter_mut() {
        *o /= sum;
    }
}

/// [`softmax`] in plain Rust: the matrix `m` of rows of `cols` elements,
/// row by row, into `out`.
pub fn softmax_ref(m: &[f32], cols: usize, out: &mut [f32]) {
    for (row, o) in m.chunks(cols.max(1)).zip(out.chunks_mut(cols.max(1))) {
        softmax_row_ref(row, o);
    }
}

/// `rows x cols` logits, uniform in `[-8, 8)`: the largest exponential
/// of a row is up to e^16 (some nine million) times its smallest.
pub fn logits(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    crate::rng::signed_f32s(rows * cols, seed).into_iter().map(|x| 8.0 * x).collect()
}

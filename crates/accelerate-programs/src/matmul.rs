//! Dense matrix product, f32, as Accelerate's examples write it with the
//! operations of a flat array language: the `m x k` matrix `A` is
//! `replicate`d along a new middle dimension of the `n` columns of `B`,
//! the transpose of `B` (`n x k`) along a new outer dimension of the `m`
//! rows of `A`, the two `m x n x k` arrays multiplied by `zip_with` and
//! their innermost dimension summed by `fold`: element `(i, j)` is the
//! dot product of row `i` of `A` and column `j` of `B`. Fusion consumes
//! the replicated arrays as the fold reads them; neither is built.
//!
//! Used by the `matmul` benchmark.

use accelerate::prelude::*;

/// `A B` for an `m x k` matrix `A` and a `k x n` matrix `B` (the inner
/// extents are taken to agree; a `zip_with` over arrays of different
/// extents keeps their intersection).
pub fn matmul(a: &Acc<Matrix<f32>>, b: &Acc<Matrix<f32>>) -> Acc<Matrix<f32>> {
    let (rows, _) = unindex2(a.shape());
    let (_, cols) = unindex2(b.shape());
    // a_rows[i][j][l] = a[i][l]
    let a_rows = a.replicate(index0().all().fixed(cols).all());
    // b_cols[i][j][l] = b[l][j]
    let b_cols = b.transpose().replicate(index0().fixed(rows).all().all());
    a_rows.zip_with(&b_cols, |x, y| x * y).fold(0.0, |s, t| s + t)
}

/// [`matmul`] in plain Rust, into `out` (`m x n`), with the matrices row
/// by row: each element's products summed in the order of `l`, from 0,
/// as the interpreter folds, the loops ordered `i, l, j` so that the
/// innermost one runs along rows of `B` and of the result (the order of
/// each element's sum is unchanged).
pub fn matmul_ref(a: &[f32], b: &[f32], (m, k, n): (usize, usize, usize), out: &mut [f32]) {
    for i in 0..m {
        let c = &mut out[i * n..(i + 1) * n];
        c.fill(0.0);
        for l in 0..k {
            let x = a[i * k + l];
            for (c, &y) in c.iter_mut().zip(&b[l * n..(l + 1) * n]) {
                *c += x * y;
            }
        }
    }
}

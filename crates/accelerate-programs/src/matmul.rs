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

/// The same product through a foreign function (sequences thesis §6.1):
/// on the host (the interpreter and the CPU backend) matrixmultiply's
/// `sgemm`, a blocked, vectorised and threaded GEMM; on every other
/// backend [`matmul`] as the fallback. Both keep `matmul`'s meaning for
/// inner extents that disagree: the product over the first `min(k_a,
/// k_b)` of them (the `zip_with`'s intersection). The sums are in
/// another order (and may use fused multiply-adds), so the two agree to
/// within the rounding of a reassociated sum of `k` products, not bit
/// for bit.
pub fn matmul_foreign(a: &Acc<Matrix<f32>>, b: &Acc<Matrix<f32>>) -> Acc<Matrix<f32>> {
    gemm().call(
        |ab| {
            let (a, b) = ab.unlift();
            matmul(&a, &b)
        },
        lift_acc((a.clone(), b.clone())),
    )
}

/// The foreign function of [`matmul_foreign`].
pub fn gemm() -> Foreign<(Matrix<f32>, Matrix<f32>), Matrix<f32>> {
    Foreign::new("sgemm").host(|(a, b): (Matrix<f32>, Matrix<f32>)| {
        let Snoc(Snoc(Z, m), ka) = a.shape();
        let Snoc(Snoc(Z, kb), n) = b.shape();
        let (m, ka, kb, n) = (m as usize, ka as usize, kb as usize, n as usize);
        let k = ka.min(kb);
        let (av, bv) = (a.as_slice(), b.as_slice());
        let mut c = vec![0.0f32; m * n];
        if m > 0 && n > 0 && k > 0 {
            // SAFETY: `a` is `m x ka` and `b` is `kb x n`, row-major; the
            // product reads rows `0..m` and columns `0..k` of `a` (row
            // stride `ka`), rows `0..k` and columns `0..n` of `b` (row
            // stride `n`), all inside their slices since `k <= ka, kb`,
            // and writes the `m x n` elements of `c`, which nothing else
            // borrows.
            unsafe {
                matrixmultiply::sgemm(
                    m,
                    k,
                    n,
                    1.0,
                    av.as_ptr(),
                    ka as isize,
                    1,
                    bv.as_ptr(),
                    n as isize,
                    1,
                    0.0,
                    c.as_mut_ptr(),
                    n as isize,
                    1,
                );
            }
        }
        Array::from_vec(dim2(m, n), c).map_err(|e| e.to_string())
    })
}

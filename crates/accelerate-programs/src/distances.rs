//! Pairwise squared Euclidean distances between the rows of two f32
//! matrices, written with the operations of a flat array language as
//! `matmul` is: the `m x d` matrix `X` is `replicate`d along a new middle
//! dimension of the `n` rows of `Y`, `Y` (`n x d`) along a new outer
//! dimension of the `m` rows of `X`, the squares of the two `m x n x d`
//! arrays' differences taken by `zip_with` and their innermost dimension
//! summed by `fold`: element `(i, j)` is the squared distance between
//! row `i` of `X` and row `j` of `Y`. It is a product of the shape
//! `X Y^T` (a k-nearest-neighbours search's or a kernel matrix's building
//! block), with `(x - y)^2` for the product. Fusion consumes the
//! replicated arrays as the fold reads them; neither is built.
//!
//! Used by the `distances` benchmark.

use accelerate::prelude::*;

/// The `m x n` squared distances between the rows of the `m x d` matrix
/// `x` and of the `n x d` matrix `y` (the row lengths are taken to agree;
/// a `zip_with` over arrays of different extents keeps their
/// intersection, so the distances are then over the first `min(d_x,
/// d_y)` columns).
pub fn distances(x: &Acc<Matrix<f32>>, y: &Acc<Matrix<f32>>) -> Acc<Matrix<f32>> {
    let (m, _) = unindex2(x.shape());
    let (n, _) = unindex2(y.shape());
    // xs[i][j][k] = x[i][k]
    let xs = x.replicate(index0().all().fixed(n).all());
    // ys[i][j][k] = y[j][k]
    let ys = y.replicate(index0().fixed(m).all().all());
    xs.zip_with(&ys, |a, b| {
        let t = a - b;
        &t * &t
    })
    .fold(0.0f32, |s, t| s + t)
}

/// [`distances`] in plain Rust, into `out` (`m x n`), with the matrices
/// row by row: each element's squared differences, each difference and
/// each square rounded to f32 as the program's are, summed in the order
/// of `k`, from 0, as the interpreter folds.
pub fn distances_ref(x: &[f32], y: &[f32], (m, d, n): (usize, usize, usize), out: &mut [f32]) {
    for i in 0..m {
        let a = &x[i * d..(i + 1) * d];
        for (j, c) in out[i * n..(i + 1) * n].iter_mut().enumerate() {
            let mut s = 0.0f32;
            for (&p, &q) in a.iter().zip(&y[j * d..(j + 1) * d]) {
                let t = p - q;
                s += t * t;
            }
            *c = s;
        }
    }
}

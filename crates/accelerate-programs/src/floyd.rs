//! Floyd-Warshall all-pairs shortest paths on a dense n x n matrix of
//! `i32` distances, as Accelerate's `accelerate-examples` write it: the n
//! relaxation steps in an `awhile` over the matrix and the step `k`, each
//! step a `generate` of `d[i][j] min (d[i][k] + d[k][j])` that reads the
//! previous matrix by indexing. After step `k` every entry is the length
//! of the shortest path whose intermediate vertices are among `0..=k`.
//!
//! Missing edges weigh [`INF`], half of `i32::MAX`, so that `INF + INF`
//! does not overflow and a path through a missing edge is never shorter
//! than one without. Integer `min` and `+` are exact, so every variant
//! must give the reference's matrix exactly.
//!
//! Used by the `floyd` benchmark (`accelerate-bench`).

use crate::rng::Rng;
use accelerate::prelude::*;

/// The weight of a missing edge.
pub const INF: i32 = i32::MAX / 2;

/// The shortest distances between every pair of vertices of the graph
/// whose edge weights are `d` (`d[i][j]` from `i` to `j`).
pub fn floyd_warshall(d: &Acc<Matrix<i32>>) -> Acc<Matrix<i32>> {
    let result = awhile(
        |s: Acc<(Matrix<i32>, Scalar<i64>)>| {
            let (d, k) = s.unlift();
            let (n, _) = unindex2(d.shape());
            unit(the(k).lt(n))
        },
        |s| {
            let (d, k) = s.unlift();
            let k = the(k);
            let next = generate(d.shape(), |ix| {
                let (i, j) = unindex2(ix);
                d.index(ix).min(d.index(index2(i, &k)) + d.index(index2(&k, j)))
            });
            lift_acc((next, unit(k + 1)))
        },
        lift_acc((d.clone(), unit(0i64))),
    );
    result.unlift().0
}

/// One step of the reference on one row: `row` is `d[i]`, `dik` is
/// `d[i][k]` and `row_k` is `d[k]`.
#[inline(always)]
pub fn relax_row(row: &mut [i32], dik: i32, row_k: &[i32]) {
    for (dij, &dkj) in row.iter_mut().zip(row_k) {
        *dij = (*dij).min(dik + dkj);
    }
}

/// The same steps in plain Rust, in place on the `n` x `n` row-major
/// matrix `d` (in place is the same as from a copy: step `k` leaves row
/// and column `k` unchanged, since `d[k][k] = 0`). Row `k` is copied out
/// at each step, so that it can be read while the rows are written.
pub fn floyd_ref(d: &mut [i32], n: usize) {
    let mut row_k = vec![0i32; n];
    for k in 0..n {
        row_k.copy_from_slice(&d[k * n..(k + 1) * n]);
        for row in d.chunks_exact_mut(n) {
            let dik = row[k];
            relax_row(row, dik, &row_k);
        }
    }
}

/// A random directed graph on `n` vertices as its distance matrix: 0 on
/// the diagonal, each other edge present with probability 1/4 with a
/// weight in 1..=100, else [`INF`].
pub fn graph(n: usize, seed: u64) -> Vec<i32> {
    let mut rng = Rng::new(seed);
    let mut d = vec![INF; n * n];
    for i in 0..n {
        for j in 0..n {
            let r = rng.next_u64();
            d[i * n + j] = if i == j {
                0
            } else if r % 4 == 0 {
                1 + ((r >> 8) % 100) as i32
            } else {
                INF
            };
        }
    }
    d
}

//! Sparse-matrix vector multiplication (ICFP'13 §5.9): a matrix in
//! compressed sparse row (CSR) format times a dense vector.
//!
//! A CSR matrix is three vectors: the non-zero values row after row, the
//! column of each, and the row pointer (`nrows + 1` offsets: row `r` is
//! `row_ptr[r] .. row_ptr[r + 1]`). The program reads the vector at the
//! column of every non-zero (a gather, `backpermute` through the column
//! indices), multiplies with `zip_with`, and sums each row with a
//! segmented reduction: `fold_seg_offsets` takes the row pointer itself
//! ([`smvm`]), `fold_seg` the row lengths ([`smvm_lengths`]). With fusion
//! (as in the paper) the whole program is one segmented reduction; the
//! interpreter makes the intermediate arrays.
//!
//! Used by `examples/smvm.rs` and the `smvm` benchmarks.

use crate::rng::Rng;
use accelerate::prelude::*;

/// The products of the non-zeros with the vector entries of their columns.
pub fn products(
    col_idx: &Acc<Vector<i64>>,
    vals: &Acc<Vector<f32>>,
    x: &Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    // gather: xs[k] = x[col_idx[k]] (what the library's `gather(col_idx, x)` does)
    let xs = x.backpermute(col_idx.shape(), |ix| index1(col_idx.index(ix)));
    vals.zip_with(xs, |a, b| a * b)
}

/// `y = A x` with `A` given by its CSR row pointer.
pub fn smvm(
    row_ptr: &Acc<Vector<i64>>,
    col_idx: &Acc<Vector<i64>>,
    vals: &Acc<Vector<f32>>,
    x: &Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    products(col_idx, vals, x).fold_seg_offsets(0.0, |a, b| a + b, row_ptr)
}

/// `y = A x` over a sequence of the matrix's rows (the sequences thesis
/// §3.2.1 and §7.1): each row's columns and values are a segment
/// (`from_segs` of the row lengths), each row's product with `x` an
/// element, computed a chunk of rows at a time by the element function
/// lifted over the chunk (a loop per row, as in `smvm_nested`).
pub fn smvm_seq(
    row_len: &Acc<Vector<i64>>,
    col_idx: &Acc<Vector<i64>>,
    vals: &Acc<Vector<f32>>,
    x: &Acc<Vector<f32>>,
) -> Consumed<Vector<f32>> {
    let cols = from_segs(row_len, col_idx);
    let row_vals = from_segs(row_len, vals);
    let x = x.clone();
    cols.zip_with_seq(&row_vals, move |c, v| {
        let products = generate(c.shape(), move |ix| v.index(ix.clone()) * x.index(index1(c.index(ix))));
        products.fold(0.0, |a, b| a + b)
    })
    .elements()
}

/// `y = A x` written per row, as nested data parallelism: each element
/// of the result is the sum of the products of its row, an inner array
/// whose length depends on the row (irregular nesting, flattened by the
/// lifting transformation).
pub fn smvm_nested(
    row_ptr: &Acc<Vector<i64>>,
    col_idx: &Acc<Vector<i64>>,
    vals: &Acc<Vector<f32>>,
    x: &Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    let rows = row_ptr.size() - 1;
    generate(index1(rows), |r| {
        let r = unindex1(r);
        let start = row_ptr.index(index1(&r));
        let end = row_ptr.index(index1(&r + 1));
        let products = generate(index1(&end - &start), |j| {
            let k = &start + unindex1(j);
            vals.index(index1(&k)) * x.index(index1(col_idx.index(index1(&k))))
        });
        products.fold(0.0, |a, b| a + b).the()
    })
}

/// `y = A x` with the rows of `A` given by their lengths.
pub fn smvm_lengths(
    row_len: &Acc<Vector<i64>>,
    col_idx: &Acc<Vector<i64>>,
    vals: &Acc<Vector<f32>>,
    x: &Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    products(col_idx, vals, x).fold_seg(0.0, |a, b| a + b, row_len)
}

/// A CSR matrix on the host.
#[derive(Clone, Debug, PartialEq)]
pub struct Csr {
    pub ncols: usize,
    pub row_ptr: Vec<i64>,
    pub col_idx: Vec<i64>,
    pub vals: Vec<f32>,
}

impl Csr {
    pub fn nrows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    /// The number of non-zeros of each row (what `fold_seg` takes).
    pub fn row_lengths(&self) -> Vec<i64> {
        self.row_ptr.windows(2).map(|w| w[1] - w[0]).collect()
    }

    /// Row `r` of `A x` in plain Rust: summed left to right in f32 from 0,
    /// the order in which the interpreter folds a segment.
    #[inline]
    pub fn row_ref(&self, r: usize, x: &[f32]) -> f32 {
        let (lo, hi) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
        self.vals[lo..hi]
            .iter()
            .zip(&self.col_idx[lo..hi])
            .fold(0.0f32, |acc, (&v, &c)| acc + v * x[c as usize])
    }

    /// [`smvm`] in plain Rust, into `y` (one element a row).
    pub fn mul_ref(&self, x: &[f32], y: &mut [f32]) {
        for (r, y) in y.iter_mut().enumerate() {
            *y = self.row_ref(r, x);
        }
    }
}

/// A random `nrows x ncols` matrix: about one row in eight is empty (so
/// that the segmented reductions meet empty segments), the others have
/// between 1 and `2 * per_row - 1` non-zeros (at most `ncols`) in
/// distinct, ascending columns.
pub fn random_csr(nrows: usize, ncols: usize, per_row: usize, seed: u64) -> Csr {
    let mut rng = Rng::new(seed);
    let mut csr = Csr { ncols, row_ptr: vec![0], col_idx: Vec::new(), vals: Vec::new() };
    let mut cols = Vec::new();
    for _ in 0..nrows {
        let len = if rng.below(8) == 0 { 0 } else { (1 + rng.below(2 * per_row.max(1) - 1)).min(ncols) };
        cols.clear();
        while cols.len() < len {
            let c = rng.below(ncols) as i64;
            if !cols.contains(&c) {
                cols.push(c);
            }
        }
        cols.sort_unstable();
        for &c in &cols {
            csr.col_idx.push(c);
            csr.vals.push(rng.uniform_f32(-1.0, 1.0));
        }
        csr.row_ptr.push(csr.col_idx.len() as i64);
    }
    csr
}

//! Sparse-matrix vector multiplication (ICFP'13 §5.9), as in
//! `examples/smvm.rs`: a CSR matrix (row pointer, column indices, values)
//! times a dense vector, a gather (`backpermute`) and a `zip_with` feeding
//! a segmented `fold_seg_offsets`, which fusion makes one segmented
//! reduction. Memory-bound: it streams 12 bytes per non-zero (an f32 value,
//! an i64 column) and gathers from the vector, which at the large size
//! (4 MiB) stays in the last-level cache.
//!
//! Bytes are the compulsory traffic: the values, columns and row pointer
//! read once, the vector read once, the result written once. Flops: a
//! multiply and an add per non-zero.

use super::{add_accelerate_variants, count, probe_compile, CompileProbe};
use crate::check::{elementwise, reassociated_sum_tolerance};
use crate::data::{Rng, SEED_A, SEED_B};
use crate::harness::{in_place, Bench, Size};
use accelerate::prelude::*;
use rayon::prelude::*;
use std::sync::Arc;

/// Rows (and columns: the matrix is square) and the mean non-zeros of a
/// non-empty row.
pub fn shape(size: Size) -> (usize, usize) {
    size.pick((200, 5), (20_000, 10), (1 << 20, 10))
}

/// The Accelerate program.
pub fn smvm(
    row_ptr: Acc<Vector<i64>>,
    col_idx: Acc<Vector<i64>>,
    vals: Acc<Vector<f32>>,
    x: Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    let xs = x.backpermute(col_idx.shape(), move |ix| index1(col_idx.index(ix)));
    vals.zip_with(xs, |a, b| a * b).fold_seg_offsets(0.0, |a, b| a + b, row_ptr)
}

/// A CSR matrix.
pub struct Csr {
    pub row_ptr: Vec<i64>,
    pub col_idx: Vec<i64>,
    pub vals: Vec<f32>,
}

impl Csr {
    pub fn nrows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    fn row_sum(&self, r: usize, x: &[f32]) -> f32 {
        let (lo, hi) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
        self.vals[lo..hi]
            .iter()
            .zip(&self.col_idx[lo..hi])
            .fold(0.0f32, |acc, (&v, &c)| acc + v * x[c as usize])
    }
}

/// The reference: each row summed left to right in f32 from 0.
pub fn smvm_seq(a: &Csr, x: &[f32], y: &mut [f32]) {
    for (r, y) in y.iter_mut().enumerate() {
        *y = a.row_sum(r, x);
    }
}

/// Rows per rayon task: rows are short (10 non-zeros on average), so a
/// task takes a few thousand of them, about 100 microseconds of work.
const ROWS_PER_TASK: usize = 4096;

/// Parallel: blocks of rows on rayon's pool. A row's sum stays
/// sequential (rows are too short for lanes to pay, and each product needs
/// a gather), which also keeps it bit-identical to the reference.
pub fn smvm_rayon(a: &Csr, x: &[f32], y: &mut [f32]) {
    y.par_chunks_mut(ROWS_PER_TASK).enumerate().for_each(|(t, ys)| {
        for (k, y) in ys.iter_mut().enumerate() {
            *y = a.row_sum(t * ROWS_PER_TASK + k, x);
        }
    });
}

/// A random square matrix (the example's generator): about one row in
/// eight is empty, the others have 1 to `2 * per_row - 1` non-zeros in
/// distinct ascending columns.
pub fn random_csr(n: usize, per_row: usize) -> Csr {
    let mut rng = Rng::new(SEED_A);
    let mut csr = Csr { row_ptr: vec![0], col_idx: Vec::new(), vals: Vec::new() };
    let mut cols = Vec::new();
    for _ in 0..n {
        let len = if rng.below(8) == 0 { 0 } else { (1 + rng.below(2 * per_row - 1)).min(n) };
        cols.clear();
        while cols.len() < len {
            let c = rng.below(n) as i64;
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

pub fn bench(size: Size) -> Result<Bench, String> {
    let (n, per_row) = shape(size);
    let a = Arc::new(random_csr(n, per_row));
    let mut rng = Rng::new(SEED_B);
    let x: Arc<Vec<f32>> = Arc::new((0..n).map(|_| rng.uniform_f32(-1.0, 1.0)).collect());
    let mut want = vec![0.0f32; n];
    smvm_seq(&a, &x, &mut want);
    // A row's sum may be reassociated (a parallel segmented fold): each
    // row gets the tolerance of its own length and terms.
    let tol: Vec<f64> = (0..n)
        .map(|r| {
            let (lo, hi) = (a.row_ptr[r] as usize, a.row_ptr[r + 1] as usize);
            let abs_sum = (lo..hi).map(|k| (a.vals[k] as f64 * x[a.col_idx[k] as usize] as f64).abs()).sum();
            reassociated_sum_tolerance(hi - lo, abs_sum, f32::EPSILON as f64)
        })
        .collect();
    let (want, tol) = (Arc::new(want), Arc::new(tol));
    let check =
        move |got: &[f32]| elementwise(got, &want, |i, g, w| g == w || ((g - w).abs() as f64) <= tol[i]);

    let nnz = a.vals.len();
    let mut b = Bench::new("smvm", format!("{} x {} CSR, {nnz} non-zeros", count(n), count(n)));
    b.bytes = Some((nnz * (4 + 8) + (n + 1) * 8 + n * 4 + n * 4) as f64);
    b.flops = Some(2.0 * nnz as f64);
    b.memory_bound = size == Size::Large;

    let args = (
        Vector::from_elems(a.row_ptr.clone()),
        Vector::from_elems(a.col_idx.clone()),
        Vector::from_elems(a.vals.clone()),
        Vector::from_elems(x.to_vec()),
    );
    let c = check.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(smvm, config),
        move |p| p.run((&args.0, &args.1, &args.2, &args.3)),
        move |r: &Vector<f32>| c(&r.to_vec()),
    )?;
    type Kernel = fn(&Csr, &[f32], &mut [f32]);
    let kernels: [(&str, Kernel); 2] = [("rust-seq", smvm_seq), ("rust-rayon", smvm_rayon)];
    for (name, kernel) in kernels {
        let (a, x, c) = (a.clone(), x.clone(), check.clone());
        b.variant(name, move |s| Ok(in_place(s, || vec![0.0f32; n], |y| kernel(&a, &x, y))), move |y| c(y));
    }
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(smvm, config))
}

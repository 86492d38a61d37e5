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
//!
//! The program, its reference and the matrix are
//! `accelerate_programs::smvm`.
//!
//! The Python peers (`peers/bench_smvm.py`) take the same CSR arrays:
//! NumPy's gather and `add.reduceat`, a Numba `prange` over the rows,
//! SciPy's `csr_array @ x` and JAX's `segment_sum` over each non-zero's
//! row (SciPy's matrix object and JAX's rows made once, untimed).

use super::{add_accelerate_variants, count, probe_compile, CompileProbe};
use crate::check::{elementwise, reassociated_sum_tolerance};
use crate::harness::{fresh, in_place, Bench, Size};
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::rng::{Rng, SEED_A, SEED_B};
use accelerate_programs::smvm::{random_csr, smvm, smvm_nested, smvm_seq, Csr};
use rayon::prelude::*;
use std::sync::Arc;

/// Rows (and columns: the matrix is square) and the mean non-zeros of a
/// non-empty row.
pub fn shape(size: Size) -> (usize, usize) {
    size.pick((200, 5), (20_000, 10), (1 << 20, 10))
}

/// The Accelerate program as a function of its arrays.
pub fn program(
    row_ptr: Acc<Vector<i64>>,
    col_idx: Acc<Vector<i64>>,
    vals: Acc<Vector<f32>>,
    x: Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    smvm(&row_ptr, &col_idx, &vals, &x)
}

/// The same written per row (nested data parallelism, irregular).
pub fn nested(
    row_ptr: Acc<Vector<i64>>,
    col_idx: Acc<Vector<i64>>,
    vals: Acc<Vector<f32>>,
    x: Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    smvm_nested(&row_ptr, &col_idx, &vals, &x)
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
            *y = a.row_ref(t * ROWS_PER_TASK + k, x);
        }
    });
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let (n, per_row) = shape(size);
    let a = Arc::new(random_csr(n, n, per_row, SEED_A));
    let mut rng = Rng::new(SEED_B);
    let x: Arc<Vec<f32>> = Arc::new((0..n).map(|_| rng.uniform_f32(-1.0, 1.0)).collect());
    let mut want = vec![0.0f32; n];
    // the reference: each row summed left to right in f32 from 0
    a.mul_ref(&x, &mut want);
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
    let nested_args = args.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
        move |p| p.run((&args.0, &args.1, &args.2, &args.3)),
        move |r: &Vector<f32>| c(&r.to_vec()),
    )?;
    let c = check.clone();
    let a4 = nested_args;
    super::add_nested_variant(
        &mut b,
        |config| accelerate::compile_with(nested, config),
        move |p| p.run((&a4.0, &a4.1, &a4.2, &a4.3)),
        move |r: &Vector<f32>| c(&r.to_vec()),
    )?;
    // the sequence of rows (`from_segs` of the row lengths), compiled on
    // each run as a user's `run_seq` is
    let config = super::accelerate_configs()[0].1.clone();
    let seq_args = (
        Vector::from_elems(a.row_lengths()),
        Vector::from_elems(a.col_idx.clone()),
        Vector::from_elems(a.vals.clone()),
        Vector::from_elems(x.to_vec()),
    );
    let c = check.clone();
    b.variant(
        "accelerate-seq",
        move |s| {
            let (l, ci, v, xv) = &seq_args;
            let seq = smvm_seq(
                &use_array(l.clone()),
                &use_array(ci.clone()),
                &use_array(v.clone()),
                &use_array(xv.clone()),
            );
            fresh(s, || accelerate::run_seq_with(&seq, &config))
        },
        move |r: &Vector<f32>| c(&r.to_vec()),
    );
    type Kernel = fn(&Csr, &[f32], &mut [f32]);
    let kernels: [(&str, Kernel); 2] = [("rust-seq", Csr::mul_ref), ("rust-rayon", smvm_rayon)];
    for (name, kernel) in kernels {
        let (a, x, c) = (a.clone(), x.clone(), check.clone());
        b.variant(name, move |s| Ok(in_place(s, || vec![0.0f32; n], |y| kernel(&a, &x, y))), move |y| c(y));
    }
    peers::add(
        &mut b,
        &["numpy", "numba", "jax", "scipy"],
        &[
            ("row_ptr.bin", peers::bytes(&a.row_ptr)),
            ("col_idx.bin", peers::bytes(&a.col_idx)),
            ("vals.bin", peers::bytes(&a.vals)),
            ("x.bin", peers::bytes(&x)),
        ],
        &[n.to_string(), nnz.to_string()],
        peers::all::<f32>,
        move |r: &Vec<f32>| check(r),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

//! Pairwise squared Euclidean distances between the rows of two f32
//! matrices, written as a user of a flat array language writes them
//! (`accelerate_programs::distances`: `replicate` both, `zip_with` the
//! squared difference, `fold (+)` along the rows): a product of the
//! shape `X Y^T`, the building block of a k-nearest-neighbours search or
//! a kernel matrix. Compute-bound: 3 m n d flops; the large size is 2048
//! rows of 256 against 2048 (3 * 2^30 flops), the small 256 rows of 64
//! against 256.
//!
//! The hand-written parallel version is matmul's blocked product as one
//! writes it without BLAS, with `(x - y)^2` for the product: `Y`
//! transposed into panels of 16 of its rows, and each 4 x 16 tile of the
//! result kept in vector registers while blocks of 256 squared
//! differences are added into it (`panels`), a lane per element, so its
//! sums are the reference's to the bit. (Vectorising along a row instead,
//! 16 lanes of partial sums per pair of rows and a horizontal sum at the
//! end, needs that sum for every element, and in this crate LLVM
//! vectorised the 4 x 16 accumulators across the tile's rows, 4 lanes
//! wide: a quarter of this speed at the small size, less at the large.)
//! NumPy broadcasts a block of rows of `X` against all of `Y`, Numba
//! loops, JAX lets XLA fuse the broadcast, SciPy's `cdist` computes in
//! f64.
//!
//! The no-fusion ablation builds the two replicated `m x n x d` operands
//! and their squared differences: 48 MiB at the small size, 12 GiB at
//! the large, where it is left out (`panels::add_ours`).

use super::panels::{self, Term};
use super::{probe_compile, CompileProbe};
use crate::check::{elementwise, reassociated_sum_tolerance};
use crate::harness::{Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::distances::{distances, distances_ref};
use accelerate_programs::rng::{signed_f32s, SEED_A, SEED_B};
use rayon::prelude::*;
use std::sync::Arc;

/// `(m, d, n)`: `X` is `m x d`, `Y` is `n x d`.
pub fn dims(size: Size) -> (usize, usize, usize) {
    size.pick((23, 37, 19), (256, 64, 256), (2048, 256, 2048))
}

/// The Accelerate program as a function of its two arrays.
pub fn program(x: Acc<Matrix<f32>>, y: Acc<Matrix<f32>>) -> Acc<Matrix<f32>> {
    distances(&x, &y)
}

/// A squared difference, the distances' term.
struct Squared;

impl Term for Squared {
    #[inline(always)]
    fn term(a: f32, b: f32) -> f32 {
        let t = a - b;
        t * t
    }
}

native_fn! {
    /// `panels::row_block` of the squared differences, compiled for the
    /// processor.
    fn row_block(x: &[f32], packed: &[f32], d: usize, n: usize, c: &mut [f32]) {
        panels::row_block::<Squared>(x, packed, d, n, c)
    }
}

/// Parallel: `Y` transposed into panels of its rows (`panel[l][q] = y[j0
/// + q][l]`, in parallel, timed), then blocks of rows of the result on
/// rayon's pool (`panels::product`).
pub fn distances_rayon(x: &[f32], y: &[f32], (m, d, n): (usize, usize, usize), out: &mut [f32]) {
    let packed = || {
        panels::pack(d, n, |l, j0, row| {
            for (q, e) in row.iter_mut().enumerate() {
                *e = y[(j0 + q) * d + l];
            }
        })
    };
    panels::product(x, packed, (m, d, n), out, row_block);
}

/// How far each element may be from the reference's: every variant sums
/// element `(i, j)`'s `d` squared differences in its own order, and one
/// computing in f32 rounds each difference and each square as well, so
/// it is within gamma_{d+2} s of the exact distance `s` (Higham §3.1: the
/// `d - 1` additions, the difference's rounding counted twice by the
/// square, the square's own; every term is nonnegative, so `s` is also
/// the sum of the terms' magnitudes). Two such variants are within about
/// `(d + 2) eps s` of each other, and one that computes in f64 and
/// rounds once (SciPy's `cdist`) within `(d + 3) eps s / 2` of an f32 one:
/// `reassociated_sum_tolerance(d + 3, s, eps)`, `(d + 4) eps s`, allows
/// both. The distances `s` are computed in f64, in parallel.
fn tolerances(x: &[f32], y: &[f32], (m, d, n): (usize, usize, usize)) -> Vec<f64> {
    let mut exact = vec![0.0f64; m * n];
    exact.par_chunks_mut(n.max(1)).enumerate().for_each(|(i, c)| {
        let a = &x[i * d..(i + 1) * d];
        for (j, c) in c.iter_mut().enumerate() {
            *c = a.iter().zip(&y[j * d..(j + 1) * d]).map(|(&p, &q)| (p as f64 - q as f64).powi(2)).sum();
        }
    });
    exact.into_iter().map(|s| reassociated_sum_tolerance(d + 3, s, f32::EPSILON as f64)).collect()
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let (m, d, n) = dims(size);
    let xs = Arc::new(signed_f32s(m * d, SEED_A));
    let ys = Arc::new(signed_f32s(n * d, SEED_B));
    let mut want = vec![0.0f32; m * n];
    distances_ref(&xs, &ys, (m, d, n), &mut want);
    let tols = Arc::new(tolerances(&xs, &ys, (m, d, n)));
    let want = Arc::new(want);
    let check = {
        let (want, tols) = (want.clone(), tols.clone());
        move |got: &[f32]| elementwise(got, &want, |i, g, w| ((g - w) as f64).abs() <= tols[i])
    };

    let mut b = Bench::new("distances", format!("{m} x {d} against {n} x {d} f32"));
    b.flops = Some(3.0 * (m * n * d) as f64);
    let xa = Array::from_vec(Snoc(Snoc(Z, m as i64), d as i64), xs.to_vec()).map_err(|e| e.to_string())?;
    let ya = Array::from_vec(Snoc(Snoc(Z, n as i64), d as i64), ys.to_vec()).map_err(|e| e.to_string())?;
    // ours, its ablations and fast math, which lets the compiler
    // reassociate the sums and fuse each square into its addition
    // (`tolerances` allow it)
    panels::add_ours(
        &mut b,
        "distances",
        "squared differences",
        program,
        (&xa, &ya),
        (m, d, n),
        check.clone(),
    )?;
    let plain: [(&'static str, panels::Plain); 2] =
        [("rust-seq", distances_ref), ("rust-rayon", distances_rayon)];
    panels::add_plain(&mut b, (&xs, &ys), (m, d, n), plain, check.clone());
    // the Python peers (`crate::peers`): both matrices row by row, the
    // result likewise
    peers::add(
        &mut b,
        &["numpy", "numba", "jax", "scipy"],
        &[("x.bin", peers::bytes(&xs)), ("y.bin", peers::bytes(&ys))],
        &[m.to_string(), d.to_string(), n.to_string()],
        peers::all::<f32>,
        move |out: &Vec<f32>| check(out),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

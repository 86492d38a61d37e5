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
//! differences are added into it (`tile`), a lane per element, so its
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
//! the large, where it is left out (`UNFUSED_LIMIT`).

use super::{accelerate_configs, probe_compile, CompileProbe};
use crate::check::{elementwise, reassociated_sum_tolerance};
use crate::harness::{fresh, in_place, Bench, Size};
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

/// Rows of a tile of the result kept in registers, and its columns (the
/// rows of `Y` in a panel): 4 x 16 f32 are 8 AVX2 registers (4 AVX-512
/// ones), with room left for a row of the panel, a broadcast and the
/// differences.
const MR: usize = 4;
const NR: usize = 16;
/// Squared differences added into a tile between its loads and stores: a
/// panel's 256 x 16 block is 16 KiB, in L1 for the tiles of a row block.
const KC: usize = 256;
/// Rows of the result per rayon task: 64 tasks at the large size.
const MC: usize = 32;

/// The most memory the no-fusion ablation may take: it builds both
/// replicated operands and their squared differences, three `m x n x d`
/// arrays, 12 GiB at the large size (where it is left out), 48 MiB at
/// the small.
const UNFUSED_LIMIT: usize = 2 << 30;

/// `Y` (`n x d`) transposed into panels of `NR` of its rows, each `d`
/// rows of `NR` consecutive elements (`panel[l][q] = y[j0 + q][l]`, the
/// last panel padded with zeros), so that a tile reads the `l`-th
/// elements of its rows of `Y` from consecutive addresses.
fn pack_y(y: &[f32], d: usize, n: usize) -> Vec<f32> {
    let mut packed = vec![0.0f32; n.div_ceil(NR) * d * NR];
    packed.par_chunks_mut((d * NR).max(1)).enumerate().for_each(|(p, panel)| {
        let (j0, cols) = (p * NR, NR.min(n - p * NR));
        for (l, row) in panel.chunks_exact_mut(NR).enumerate() {
            for (q, e) in row[..cols].iter_mut().enumerate() {
                *e = y[(j0 + q) * d + l];
            }
        }
    });
    packed
}

/// One `R x NR` tile of the result: `c[r][q] += sum over l of (x[r][l] -
/// panel[l][q])^2` for the `kc` rows of the panel block `yp`, or `=` when
/// `first` (the tile's first block, so that the sum starts from 0 as the
/// reference's does). Each lane is one element's sum, in the order of
/// `l`, so the result is the reference's to the bit. `x` holds the
/// tile's rows `ldx` apart, `c` its rows `ldc` apart, of which `cols`
/// columns are written.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tile<const R: usize>(
    x: &[f32],
    ldx: usize,
    yp: &[f32],
    c: &mut [f32],
    ldc: usize,
    cols: usize,
    first: bool,
) {
    let (panel, _) = yp.as_chunks::<NR>();
    let kc = panel.len();
    let rows: [&[f32]; R] = std::array::from_fn(|r| &x[r * ldx..r * ldx + kc]);
    let mut acc = [[0.0f32; NR]; R];
    if !first {
        for r in 0..R {
            acc[r][..cols].copy_from_slice(&c[r * ldc..r * ldc + cols]);
        }
    }
    for (l, y) in panel.iter().enumerate() {
        for r in 0..R {
            let a = rows[r][l];
            for q in 0..NR {
                let t = a - y[q];
                acc[r][q] += t * t;
            }
        }
    }
    for r in 0..R {
        c[r * ldc..r * ldc + cols].copy_from_slice(&acc[r][..cols]);
    }
}

native_fn! {
    /// The rows of the result in `c` (`rows x n`) from the same rows of
    /// `X` in `x` (`rows x d`) and the packed `Y`: for each block of `KC`
    /// columns, each panel, each tile of `MR` rows (`tile`; single rows
    /// at the end), so that a panel's block is read from L1 by all the
    /// tiles of the rows.
    fn row_block(x: &[f32], packed: &[f32], d: usize, n: usize, c: &mut [f32]) {
        let rows = c.len() / n;
        for l0 in (0..d).step_by(KC) {
            let kc = KC.min(d - l0);
            for p in 0..n.div_ceil(NR) {
                let yp = &packed[(p * d + l0) * NR..(p * d + l0 + kc) * NR];
                let (j0, cols) = (p * NR, NR.min(n - p * NR));
                let mut i = 0;
                while i + MR <= rows {
                    tile::<MR>(&x[i * d + l0..], d, yp, &mut c[i * n + j0..], n, cols, l0 == 0);
                    i += MR;
                }
                while i < rows {
                    tile::<1>(&x[i * d + l0..], d, yp, &mut c[i * n + j0..], n, cols, l0 == 0);
                    i += 1;
                }
            }
        }
    }
}

/// Parallel: `Y` packed (in parallel, timed), then blocks of `MC` rows of
/// the result on rayon's pool, each by `row_block`.
pub fn distances_rayon(x: &[f32], y: &[f32], (m, d, n): (usize, usize, usize), out: &mut [f32]) {
    if d == 0 || n == 0 {
        out[..m * n].fill(0.0);
        return;
    }
    let packed = pack_y(y, d, n);
    out[..m * n]
        .par_chunks_mut(MC * n)
        .zip(x.par_chunks(MC * d))
        .for_each(|(c, x)| row_block(x, &packed, d, n, c));
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
    // ours and its ablations (`add_accelerate_variants`), but for the
    // no-fusion one where its intermediate arrays would not fit in memory
    let unfused = 3 * m * n * d * std::mem::size_of::<f32>();
    for (name, config) in accelerate_configs() {
        if name == "accelerate-no-fusion" && unfused > UNFUSED_LIMIT {
            eprintln!(
                "distances: {name} skipped: its two replicated operands and their squared differences, \
                 m x n x d f32 each, take {} MiB",
                unfused >> 20
            );
            continue;
        }
        let prog = accelerate::compile_with(program, config)
            .map_err(|e| format!("distances, {name}: compiling: {e}"))?;
        let (x, y, c) = (xa.clone(), ya.clone(), check.clone());
        b.variant(
            name,
            move |slot| fresh(slot, || prog.run((&x, &y))),
            move |r: &Matrix<f32>| c(&r.to_vec()),
        );
    }
    // fast-math mode (docs/semantics.md), which lets the compiler
    // reassociate the sums and fuse each square into its addition: within
    // the same bounds, which allow any order (`tolerances`)
    let fast = accelerate_configs()[0].1.clone().with_fast_math(true);
    let prog = accelerate::compile_with(program, fast)
        .map_err(|e| format!("distances, fast-math: compiling: {e}"))?;
    let (x, y, c) = (xa.clone(), ya.clone(), check.clone());
    b.variant(
        "accelerate-fast-math",
        move |slot| fresh(slot, || prog.run((&x, &y))),
        move |r: &Matrix<f32>| c(&r.to_vec()),
    );
    let (x, y, c) = (xs.clone(), ys.clone(), check.clone());
    b.variant(
        "rust-seq",
        move |s| Ok(in_place(s, || vec![0.0f32; m * n], |out| distances_ref(&x, &y, (m, d, n), out))),
        move |out: &Vec<f32>| c(out),
    );
    let (x, y, c) = (xs.clone(), ys.clone(), check.clone());
    b.variant(
        "rust-rayon",
        move |s| Ok(in_place(s, || vec![0.0f32; m * n], |out| distances_rayon(&x, &y, (m, d, n), out))),
        move |out: &Vec<f32>| c(out),
    );
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

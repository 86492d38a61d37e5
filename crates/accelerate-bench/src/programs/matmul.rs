//! Dense matrix product of two f32 matrices, written as Accelerate's
//! examples write it (`accelerate_programs::matmul`: `replicate` both,
//! `zip_with (*)`, `fold (+)` along the shared dimension, `B` read through
//! `transpose`). Compute-bound: 2 m k n flops; the large size is
//! 1024 x 1024 times 1024 x 1024 (2^31 flops), the small 256 x 256.
//!
//! The hand-written parallel version is a blocked product as one writes
//! it without BLAS: `B` packed into panels of 16 columns, and each 4 x 16
//! tile of the result kept in vector registers while blocks of 256
//! products are added into it (`tile`). NumPy's `@` and SciPy's `sgemm`
//! call BLAS (OpenBLAS), the practical limit.
//!
//! `accelerate-ffi-sgemm` is the same program with the product as a
//! foreign function (`accelerate_programs::matmul::matmul_foreign`):
//! matrixmultiply's threaded `sgemm` where the backend runs host
//! implementations (the CPU backend, the interpreter), the program above
//! as its fallback elsewhere.
//!
//! The no-fusion ablation builds the two replicated `m x n x k` operands
//! and their products: 192 MiB at the small size, 12 GiB at the large,
//! where it is left out (`UNFUSED_LIMIT`).

use super::{accelerate_configs, probe_compile, CompileProbe};
use crate::check::{elementwise, reassociated_sum_tolerance};
use crate::harness::{fresh, in_place, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::matmul::{matmul, matmul_foreign, matmul_ref};
use accelerate_programs::rng::{signed_f32s, SEED_A, SEED_B};
use rayon::prelude::*;
use std::sync::Arc;

/// `(m, k, n)`: `A` is `m x k`, `B` is `k x n`.
pub fn dims(size: Size) -> (usize, usize, usize) {
    size.pick((23, 37, 19), (256, 256, 256), (1024, 1024, 1024))
}

/// The Accelerate program as a function of its two arrays.
pub fn program(a: Acc<Matrix<f32>>, b: Acc<Matrix<f32>>) -> Acc<Matrix<f32>> {
    matmul(&a, &b)
}

/// Rows of a tile of the result kept in registers, and its columns (the
/// width of a panel of `B`): 4 x 16 f32 are 8 AVX2 registers (4 AVX-512
/// ones), with room left for a row of the panel and a broadcast.
const MR: usize = 4;
const NR: usize = 16;
/// Products added into a tile between its loads and stores: a panel's
/// 256 x 16 block is 16 KiB, in L1 for the tiles of a row block.
const KC: usize = 256;
/// Rows of the result per rayon task: 32 tasks at the large size.
const MC: usize = 32;

/// The most memory the no-fusion ablation may take: it builds both
/// replicated operands and their products, three `m x n x k` arrays, 12
/// GiB at the large size (where it is left out), 192 MiB at the small.
const UNFUSED_LIMIT: usize = 2 << 30;

/// `B` (`k x n`) as panels of `NR` columns, each `k` rows of `NR`
/// consecutive elements (the last panel padded with zeros), so that a
/// tile reads its panel from consecutive addresses.
fn pack_b(b: &[f32], k: usize, n: usize) -> Vec<f32> {
    let mut packed = vec![0.0f32; n.div_ceil(NR) * k * NR];
    packed.par_chunks_mut((k * NR).max(1)).enumerate().for_each(|(p, panel)| {
        let (j0, cols) = (p * NR, NR.min(n - p * NR));
        for (l, row) in panel.chunks_exact_mut(NR).enumerate() {
            row[..cols].copy_from_slice(&b[l * n + j0..l * n + j0 + cols]);
        }
    });
    packed
}

/// One `R x NR` tile of the result: `c[r][q] += sum over l of a[r][l] *
/// panel[l][q]` for the `kc` rows of the panel block `bp`, or `=` when
/// `first` (the tile's first block, so that the sum starts from 0 as the
/// reference's does). `a` holds the tile's rows `lda` apart, `c` its rows
/// `ldc` apart, of which `cols` columns are written.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tile<const R: usize>(
    a: &[f32],
    lda: usize,
    bp: &[f32],
    c: &mut [f32],
    ldc: usize,
    cols: usize,
    first: bool,
) {
    let (panel, _) = bp.as_chunks::<NR>();
    let kc = panel.len();
    let rows: [&[f32]; R] = std::array::from_fn(|r| &a[r * lda..r * lda + kc]);
    let mut acc = [[0.0f32; NR]; R];
    if !first {
        for r in 0..R {
            acc[r][..cols].copy_from_slice(&c[r * ldc..r * ldc + cols]);
        }
    }
    for (l, b) in panel.iter().enumerate() {
        for r in 0..R {
            let x = rows[r][l];
            for q in 0..NR {
                acc[r][q] += x * b[q];
            }
        }
    }
    for r in 0..R {
        c[r * ldc..r * ldc + cols].copy_from_slice(&acc[r][..cols]);
    }
}

native_fn! {
    /// The rows of the result in `c` (`rows x n`) from the same rows of
    /// `A` in `a` (`rows x k`) and the packed `B`: for each block of
    /// `KC` of the shared dimension, each panel, each tile of `MR` rows
    /// (`tile`; single rows at the end), so that a panel's block is read
    /// from L1 by all the tiles of the rows.
    fn row_block(a: &[f32], packed: &[f32], k: usize, n: usize, c: &mut [f32]) {
        let rows = c.len() / n;
        for l0 in (0..k).step_by(KC) {
            let kc = KC.min(k - l0);
            for p in 0..n.div_ceil(NR) {
                let bp = &packed[(p * k + l0) * NR..(p * k + l0 + kc) * NR];
                let (j0, cols) = (p * NR, NR.min(n - p * NR));
                let mut i = 0;
                while i + MR <= rows {
                    tile::<MR>(&a[i * k + l0..], k, bp, &mut c[i * n + j0..], n, cols, l0 == 0);
                    i += MR;
                }
                while i < rows {
                    tile::<1>(&a[i * k + l0..], k, bp, &mut c[i * n + j0..], n, cols, l0 == 0);
                    i += 1;
                }
            }
        }
    }
}

/// Parallel: `B` packed (in parallel, timed), then blocks of `MC` rows of
/// the result on rayon's pool, each by `row_block`.
pub fn matmul_rayon(a: &[f32], b: &[f32], (m, k, n): (usize, usize, usize), out: &mut [f32]) {
    if k == 0 || n == 0 {
        out[..m * n].fill(0.0);
        return;
    }
    let packed = pack_b(b, k, n);
    out[..m * n]
        .par_chunks_mut(MC * n)
        .zip(a.par_chunks(MC * k))
        .for_each(|(c, a)| row_block(a, &packed, k, n, c));
}

/// How far each element may be from the reference's: every variant sums
/// element `(i, j)`'s `k` products in its own order (and BLAS fuses each
/// multiply-add), so each is within gamma_k sum_l |a_il b_lj| of the exact
/// dot product (Higham §3.1, products' roundings included), and two of
/// them within `reassociated_sum_tolerance(k, sum_l |a_il b_lj|, eps)`.
/// The sums of magnitudes are computed in f64, in parallel.
fn tolerances(a: &[f32], b: &[f32], (m, k, n): (usize, usize, usize)) -> Vec<f64> {
    let mut abs = vec![0.0f64; m * n];
    abs.par_chunks_mut(n.max(1)).enumerate().for_each(|(i, c)| {
        for l in 0..k {
            let x = (a[i * k + l] as f64).abs();
            for (c, &y) in c.iter_mut().zip(&b[l * n..(l + 1) * n]) {
                *c += x * (y as f64).abs();
            }
        }
    });
    abs.into_iter().map(|s| reassociated_sum_tolerance(k, s, f32::EPSILON as f64)).collect()
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let (m, k, n) = dims(size);
    let lhs = Arc::new(signed_f32s(m * k, SEED_A));
    let rhs = Arc::new(signed_f32s(k * n, SEED_B));
    let mut want = vec![0.0f32; m * n];
    matmul_ref(&lhs, &rhs, (m, k, n), &mut want);
    let tols = Arc::new(tolerances(&lhs, &rhs, (m, k, n)));
    let want = Arc::new(want);
    let check = {
        let (want, tols) = (want.clone(), tols.clone());
        move |got: &[f32]| elementwise(got, &want, |i, g, w| ((g - w) as f64).abs() <= tols[i])
    };

    let mut b = Bench::new("matmul", format!("{m} x {k} times {k} x {n} f32"));
    b.flops = Some(2.0 * (m * k * n) as f64);
    let aa = Array::from_vec(Snoc(Snoc(Z, m as i64), k as i64), lhs.to_vec()).map_err(|e| e.to_string())?;
    let ba = Array::from_vec(Snoc(Snoc(Z, k as i64), n as i64), rhs.to_vec()).map_err(|e| e.to_string())?;
    // ours and its ablations (`add_accelerate_variants`), but for the
    // no-fusion one where its intermediate arrays would not fit in memory
    let unfused = 3 * m * n * k * std::mem::size_of::<f32>();
    for (name, config) in accelerate_configs() {
        if name == "accelerate-no-fusion" && unfused > UNFUSED_LIMIT {
            eprintln!(
                "matmul: {name} skipped: its two replicated operands and their products, \
                 m x n x k f32 each, take {} MiB",
                unfused >> 20
            );
            continue;
        }
        let prog = accelerate::compile_with(program, config)
            .map_err(|e| format!("matmul, {name}: compiling: {e}"))?;
        let (x, y, c) = (aa.clone(), ba.clone(), check.clone());
        b.variant(
            name,
            move |slot| fresh(slot, || prog.run((&x, &y))),
            move |r: &Matrix<f32>| c(&r.to_vec()),
        );
    }
    // fast-math mode (docs/semantics.md), which lets the compiler fuse
    // each multiply-add as JAX's and BLAS's products do: within the same
    // bounds, which allow any order and fused products (`tolerances`)
    let fast = accelerate_configs()[0].1.clone().with_fast_math(true);
    let prog =
        accelerate::compile_with(program, fast).map_err(|e| format!("matmul, fast-math: compiling: {e}"))?;
    let (x, y, c) = (aa.clone(), ba.clone(), check.clone());
    b.variant(
        "accelerate-fast-math",
        move |slot| fresh(slot, || prog.run((&x, &y))),
        move |r: &Matrix<f32>| c(&r.to_vec()),
    );
    // the same program with the product as a foreign function
    // (`matmul_foreign`: matrixmultiply's threaded sgemm on the host, this
    // program as its fallback elsewhere): what the FFI buys
    let prog = accelerate::compile(|a: Acc<Matrix<f32>>, b: Acc<Matrix<f32>>| matmul_foreign(&a, &b))
        .map_err(|e| format!("matmul, accelerate-ffi-sgemm: compiling: {e}"))?;
    let (x, y, c) = (aa.clone(), ba.clone(), check.clone());
    b.variant(
        "accelerate-ffi-sgemm",
        move |slot| fresh(slot, || prog.run((&x, &y))),
        move |r: &Matrix<f32>| c(&r.to_vec()),
    );
    let (x, y, c) = (lhs.clone(), rhs.clone(), check.clone());
    b.variant(
        "rust-seq",
        move |s| Ok(in_place(s, || vec![0.0f32; m * n], |out| matmul_ref(&x, &y, (m, k, n), out))),
        move |out: &Vec<f32>| c(out),
    );
    let (x, y, c) = (lhs.clone(), rhs.clone(), check.clone());
    b.variant(
        "rust-rayon",
        move |s| Ok(in_place(s, || vec![0.0f32; m * n], |out| matmul_rayon(&x, &y, (m, k, n), out))),
        move |out: &Vec<f32>| c(out),
    );
    // the Python peers (`crate::peers`): both matrices row by row, the
    // result likewise
    peers::add(
        &mut b,
        &["numpy", "numba", "jax", "scipy"],
        &[("a.bin", peers::bytes(&lhs)), ("b.bin", peers::bytes(&rhs))],
        &[m.to_string(), k.to_string(), n.to_string()],
        peers::all::<f32>,
        move |out: &Vec<f32>| check(out),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

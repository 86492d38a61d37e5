//! Dense matrix product of two f32 matrices, written as Accelerate's
//! examples write it (`accelerate_programs::matmul`: `replicate` both,
//! `zip_with (*)`, `fold (+)` along the shared dimension, `B` read through
//! `transpose`). Compute-bound: 2 m k n flops; the large size is
//! 1024 x 1024 times 1024 x 1024 (2^31 flops), the small 256 x 256.
//!
//! The hand-written parallel version is a blocked product as one writes
//! it without BLAS: `B` packed into panels of 16 columns, and each 4 x 16
//! tile of the result kept in vector registers while blocks of 256
//! products are added into it (`panels`). NumPy's `@` and SciPy's `sgemm`
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
//! where it is left out (`panels::add_ours`).

use super::panels::{self, Term};
use super::{probe_compile, CompileProbe};
use crate::check::{elementwise, reassociated_sum_tolerance};
use crate::harness::{fresh, Bench, Size};
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

/// A product's term.
struct Product;

impl Term for Product {
    #[inline(always)]
    fn term(a: f32, b: f32) -> f32 {
        a * b
    }
}

native_fn! {
    /// `panels::row_block` of the product, compiled for the processor.
    fn row_block(a: &[f32], packed: &[f32], k: usize, n: usize, c: &mut [f32]) {
        panels::row_block::<Product>(a, packed, k, n, c)
    }
}

/// Parallel: `B` packed into panels (in parallel, timed), then blocks of
/// rows of the result on rayon's pool (`panels::product`).
pub fn matmul_rayon(a: &[f32], b: &[f32], (m, k, n): (usize, usize, usize), out: &mut [f32]) {
    let packed = || panels::pack(k, n, |l, j0, row| row.copy_from_slice(&b[l * n + j0..][..row.len()]));
    panels::product(a, packed, (m, k, n), out, row_block);
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
    // ours, its ablations and fast math, which lets the compiler fuse
    // each multiply-add as JAX's and BLAS's products do (`tolerances`
    // allow it)
    panels::add_ours(&mut b, "matmul", "products", program, (&aa, &ba), (m, k, n), check.clone())?;
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
    let plain: [(&'static str, panels::Plain); 2] = [("rust-seq", matmul_ref), ("rust-rayon", matmul_rayon)];
    panels::add_plain(&mut b, (&lhs, &rhs), (m, k, n), plain, check.clone());
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

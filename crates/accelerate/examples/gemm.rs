//! Matrix multiplication through a foreign function (sequences thesis
//! §6.1): `accelerate_programs::matmul::matmul_foreign` calls
//! matrixmultiply's `sgemm` on the host (the interpreter and the CPU
//! backend) and runs the flat-language product (`replicate`, `zip_with`,
//! `fold`) as its fallback on every other backend. The same product is
//! also run without the foreign function, and both are checked against
//! plain Rust.
//!
//! ```sh
//! cargo run --release --example gemm -- --check             # 256 x 256
//! cargo run --release --example gemm -- --size 1024 --check
//! ```

use accelerate::prelude::*;
use accelerate_programs::matmul::{matmul, matmul_foreign, matmul_ref};
use accelerate_programs::rng::{signed_f32s, SEED_A, SEED_B};
use std::process::exit;
use std::time::Instant;

fn usage() -> ! {
    eprintln!("usage: gemm [--check] [--size N] (N x N times N x N)");
    exit(2)
}

/// Whether `got` is within the rounding of a reassociated sum of each
/// element's `n` products of the reference: two orders of summation (and
/// BLAS-style fused multiply-adds) differ by at most about `n * eps *
/// sum_l |a_il b_lj|` (Higham §3.1; `n + 1` for slack), relative to the
/// sum of magnitudes because cancellation can make an element tiny.
fn check(what: &str, got: &[f32], want: &[f32], a: &[f32], b: &[f32], n: usize) -> bool {
    let mut worst = 0.0f64;
    for i in 0..n {
        for j in 0..n {
            let mag: f64 = (0..n).map(|l| (a[i * n + l] as f64 * b[l * n + j] as f64).abs()).sum();
            let tol = (n as f64 + 1.0) * f32::EPSILON as f64 * mag;
            let diff = (got[i * n + j] as f64 - want[i * n + j] as f64).abs();
            if diff > tol {
                eprintln!(
                    "check {what}: MISMATCH at ({i}, {j}): got {}, want {}",
                    got[i * n + j],
                    want[i * n + j]
                );
                return false;
            }
            worst = worst.max(if mag > 0.0 { diff / mag } else { 0.0 });
        }
    }
    println!("check {what}: within tolerance (worst error {worst:.2e} of the sum of magnitudes)");
    true
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (mut n, mut do_check) = (256usize, false);
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => do_check = true,
            "--size" | "-n" => n = it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()),
            _ => usage(),
        }
    }
    let (ah, bh) = (signed_f32s(n * n, SEED_A), signed_f32s(n * n, SEED_B));
    let a = Array::from_vec(dim2(n, n), ah.clone())?;
    let b = Array::from_vec(dim2(n, n), bh.clone())?;
    let foreign = accelerate::compile(|a: Acc<Matrix<f32>>, b: Acc<Matrix<f32>>| matmul_foreign(&a, &b))?;
    let flat = accelerate::compile(|a: Acc<Matrix<f32>>, b: Acc<Matrix<f32>>| matmul(&a, &b))?;
    println!("{n} x {n} times {n} x {n}, f32");
    let mut results = Vec::new();
    for (what, prog) in [("foreign sgemm", &foreign), ("replicate/zip_with/fold", &flat)] {
        prog.run((&a, &b))?; // once to warm up
        let t = Instant::now();
        let c = prog.run((&a, &b))?;
        println!("  {what:<26} {:>9.2} ms", t.elapsed().as_secs_f64() * 1e3);
        results.push((what, c.to_vec()));
    }
    if do_check {
        let mut want = vec![0.0f32; n * n];
        let t = Instant::now();
        matmul_ref(&ah, &bh, (n, n, n), &mut want);
        println!("  {:<26} {:>9.2} ms", "plain Rust", t.elapsed().as_secs_f64() * 1e3);
        let mut ok = true;
        for (what, got) in &results {
            ok &= check(what, got, &want, &ah, &bh, n);
        }
        if !ok {
            exit(1);
        }
    }
    Ok(())
}

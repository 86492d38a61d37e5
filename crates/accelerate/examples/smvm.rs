//! Sparse-matrix vector multiplication (ICFP'13 §5.9): a matrix in
//! compressed sparse row (CSR) format times a dense vector.
//!
//! ```sh
//! cargo run --release --example smvm -- --check                     # compare with plain Rust
//! cargo run --release --example smvm -- --size 100000 --nnz-per-row 30
//! ```
//!
//! The programs are `accelerate_programs::smvm` (the rows by the CSR row
//! pointer, `fold_seg_offsets`) and `smvm_lengths` (by their lengths,
//! `fold_seg`): a gather of the vector at the column of every non-zero, a
//! `zip_with` and a segmented sum, which fusion (as in the paper) makes one
//! segmented reduction. Each is converted once and run on two vectors.
//!
//! The random matrix has empty rows (their result is the seed, 0), so the
//! segmented reductions meet empty segments.

use accelerate::prelude::*;
use accelerate::Backend;
use accelerate_programs::rng::{Rng, SEED_A, SEED_B};
use accelerate_programs::rounding::gamma;
use accelerate_programs::smvm::{random_csr, smvm, smvm_lengths, smvm_seq};
use std::process::exit;
use std::time::Instant;

struct Args {
    rows: usize,
    cols: Option<usize>,
    per_row: usize,
    check: bool,
}

fn usage() -> ! {
    eprintln!("usage: smvm [--check] [--size ROWS] [--cols COLS] [--nnz-per-row K]");
    exit(2)
}

fn parse_args() -> Args {
    let mut args = Args { rows: 50_000, cols: None, per_row: 10, check: false };
    let mut it = std::env::args().skip(1);
    let number = |it: &mut std::iter::Skip<std::env::Args>| -> usize {
        it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage())
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => args.check = true,
            "--size" | "-n" | "--rows" => args.rows = number(&mut it),
            "--cols" => args.cols = Some(number(&mut it)),
            "--nnz-per-row" => args.per_row = number(&mut it),
            "--help" | "-h" => usage(),
            _ => {
                eprintln!("smvm: unknown argument {a:?}");
                usage()
            }
        }
    }
    if args.cols == Some(0) || args.per_row == 0 {
        eprintln!("smvm: the matrix needs at least one column and one non-zero per row on average");
        usage()
    }
    args
}

/// The rows that differ from the reference by more than `tol` allows,
/// with the first few printed.
fn compare(what: &str, got: &[f32], want: &[f32], tol: &[f64]) -> usize {
    let mut bad = got.len().abs_diff(want.len());
    if bad > 0 {
        eprintln!("check {what}: MISMATCH: {} rows, the plain-Rust reference has {}", got.len(), want.len());
    }
    for (r, (g, w)) in got.iter().zip(want).enumerate() {
        if g.to_bits() != w.to_bits() && (*g as f64 - *w as f64).abs() > tol[r] {
            if bad < 10 {
                eprintln!("check {what}: MISMATCH at row {r}: got {g}, plain Rust gives {w}");
            }
            bad += 1;
        }
    }
    bad
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { rows, cols, per_row, check } = parse_args();
    let csr = random_csr(rows, cols.unwrap_or(rows.max(1)), per_row, SEED_A);
    let nnz = csr.vals.len();
    let empty = csr.row_ptr.windows(2).filter(|w| w[0] == w[1]).count();
    let mut rng = Rng::new(SEED_B);
    let xs_host: Vec<Vec<f32>> =
        (0..2).map(|_| (0..csr.ncols).map(|_| rng.uniform_f32(-1.0, 1.0)).collect()).collect();

    let row_ptr = Vector::from_elems(csr.row_ptr.clone());
    let row_len = Vector::from_elems(csr.row_lengths());
    let col_idx = Vector::from_elems(csr.col_idx.clone());
    let vals = Vector::from_elems(csr.vals.clone());

    println!("smvm: {rows} x {} matrix, {nnz} non-zeros, {empty} empty rows", csr.ncols);

    // Each program is converted once and run on two vectors.
    let t = Instant::now();
    let by_offsets = accelerate::compile(
        |row_ptr: Acc<Vector<i64>>,
         col_idx: Acc<Vector<i64>>,
         vals: Acc<Vector<f32>>,
         x: Acc<Vector<f32>>| { smvm(&row_ptr, &col_idx, &vals, &x) },
    )?;
    let by_lengths = accelerate::compile(
        |row_len: Acc<Vector<i64>>,
         col_idx: Acc<Vector<i64>>,
         vals: Acc<Vector<f32>>,
         x: Acc<Vector<f32>>| { smvm_lengths(&row_len, &col_idx, &vals, &x) },
    )?;
    let t_compile = t.elapsed();
    println!("  accelerate::compile (both)   {:>9.2} ms", ms(t_compile));

    let mut results = Vec::new();
    for (k, x_host) in xs_host.iter().enumerate() {
        let x = Vector::from_elems(x_host.clone());
        let t = Instant::now();
        let y1 = by_offsets.run((&row_ptr, &col_idx, &vals, &x))?;
        let t1 = t.elapsed();
        let t = Instant::now();
        let y2 = by_lengths.run((&row_len, &col_idx, &vals, &x))?;
        let t2 = t.elapsed();
        // the sequence of rows (compiled on each run: a sequence is run,
        // not compiled once)
        let seq = smvm_seq(
            &use_array(row_len.clone()),
            &use_array(col_idx.clone()),
            &use_array(vals.clone()),
            &use_array(x.clone()),
        );
        let t = Instant::now();
        let y3 = accelerate::run_seq(&seq)?;
        let t3 = t.elapsed();
        println!(
            "  vector {k}: fold_seg_offsets {:>9.2} ms ({:.3} µs per non-zero), fold_seg {:>9.2} ms, sequence of rows {:>9.2} ms",
            ms(t1),
            t1.as_secs_f64() * 1e6 / nnz.max(1) as f64,
            ms(t2),
            ms(t3)
        );
        results.push((y1.to_vec(), y2.to_vec(), y3.to_vec()));
    }

    if check {
        let reassociates =
            !matches!(accelerate::Config::from_env()?.backend, Backend::Cpu | Backend::Interpreter);
        let mut bad = 0;
        for (k, (x_host, (y1, y2, y3))) in xs_host.iter().zip(&results).enumerate() {
            let t = Instant::now();
            let mut want = vec![0.0; csr.nrows()];
            csr.mul_ref(x_host, &mut want);
            let t_ref = t.elapsed();
            // The CPU backend and the interpreter sum each row left to
            // right, as the reference does: bit-identical. The CUDA
            // backend sums a row across the lanes of a warp (a fold's
            // operator is taken to be associative: docs/semantics.md), so
            // there each row is within the bound of a reassociated sum of
            // its n rounded products, gamma_n * sum |a_ij x_j|
            // (`rounding::gamma`; a bound for n terms, one more than the
            // n - 1 additions need).
            let tol: Vec<f64> = (0..csr.nrows())
                .map(|r| {
                    if !reassociates {
                        return 0.0;
                    }
                    let (lo, hi) = (csr.row_ptr[r] as usize, csr.row_ptr[r + 1] as usize);
                    let abs: f64 =
                        (lo..hi).map(|j| (csr.vals[j] * x_host[csr.col_idx[j] as usize]).abs() as f64).sum();
                    gamma(hi - lo) * abs
                })
                .collect();
            bad += compare(&format!("vector {k}, fold_seg_offsets"), y1, &want, &tol);
            bad += compare(&format!("vector {k}, fold_seg"), y2, &want, &tol);
            bad += compare(&format!("vector {k}, sequence of rows"), y3, &want, &tol);
            let exact = [y1, y2, y3]
                .iter()
                .map(|y| y.iter().zip(&want).filter(|(g, w)| g.to_bits() == w.to_bits()).count())
                .min()
                .unwrap_or(0);
            if bad == 0 && !reassociates {
                println!(
                    "check: vector {k}: the three results are bit-identical to the plain-Rust CSR loop ({:.2} ms)",
                    ms(t_ref)
                );
            } else if bad == 0 {
                println!(
                    "check: vector {k}: the three results are within a reassociated sum's bound of the plain-Rust CSR loop, at least {exact} of {} rows bit-identical ({:.2} ms)",
                    want.len(),
                    ms(t_ref)
                );
            }
        }
        if bad > 0 {
            eprintln!("check: {bad} rows differ from the plain-Rust reference");
            exit(1);
        }
    }
    Ok(())
}

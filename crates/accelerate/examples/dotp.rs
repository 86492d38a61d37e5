//! Dot product: the smallest interesting Accelerate program, a `zip_with`
//! feeding a `fold` (ICFP'13 §5, "Dot Product").
//!
//! ```sh
//! cargo run --release --example dotp -- --check            # compare with plain Rust
//! cargo run --release --example dotp -- --size 1000000     # a bigger input
//! ```
//!
//! The program is built twice: once as a closed computation over two
//! embedded arrays and run with `accelerate::run`, and once as a function
//! of two arrays converted with `accelerate::compile` and run with
//! `Program::run` (Accelerate's `runN`: convert once, run on many inputs).
//!
//! The program, a plain Rust function that builds it (Rust is the
//! meta-language), is `accelerate_programs::dotp`.

use accelerate::prelude::*;
use accelerate_programs::dotp::{dotp, dotp_ref};
use accelerate_programs::rng::{signed_f32s, SEED_A, SEED_B};
use std::process::exit;
use std::time::Instant;

struct Args {
    size: usize,
    check: bool,
}

fn usage() -> ! {
    eprintln!("usage: dotp [--check] [--size N]");
    exit(2)
}

fn parse_args() -> Args {
    let mut args = Args { size: 1 << 16, check: false };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => args.check = true,
            "--size" | "-n" => {
                args.size = it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage());
            }
            "--help" | "-h" => usage(),
            _ => {
                eprintln!("dotp: unknown argument {a:?}");
                usage()
            }
        }
    }
    args
}

/// Compares one result with the reference and says how it differs.
///
/// The reference is the sequential left-to-right f32 sum, the order in which
/// the reference interpreter folds, so today the two agree to the bit. A
/// parallel backend may reassociate the sum (`fold`'s operator is taken to be
/// associative, `docs/semantics.md`), which changes the rounding. Computed in
/// any order, a dot product of length n is within gamma_n * sum |x_i * y_i|
/// of the exact result, where gamma_n = n*u / (1 - n*u) and u = eps/2 is the
/// unit roundoff (Higham, "Accuracy and Stability of Numerical Algorithms",
/// §3.1). Two orders therefore differ by at most about 2 * n * u * sum
/// |x_i * y_i| = n * eps * sum |x_i * y_i|, the tolerance used here (with
/// n + 1 for a little slack). It is relative to sum |x_i * y_i| rather than
/// to the result, because cancellation can make the result itself tiny.
fn check(what: &str, got: f32, want: f32, xs: &[f32], ys: &[f32]) -> bool {
    let n = xs.len() as f64;
    let abs_sum: f64 = xs.iter().zip(ys).map(|(&x, &y)| (x as f64 * y as f64).abs()).sum();
    let tol = (n + 1.0) * f32::EPSILON as f64 * abs_sum;
    let diff = (got as f64 - want as f64).abs();
    let ok = got == want || diff <= tol;
    if ok {
        let exact = if got == want { " (bit-identical)" } else { "" };
        println!("check {what}: {got} matches the Rust reference {want}{exact}");
    } else {
        eprintln!(
            "check {what}: MISMATCH: got {got}, the Rust reference gives {want}; |difference| {diff:e} > tolerance {tol:e}"
        );
    }
    ok
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args();
    let n = args.size;
    let xs_host = signed_f32s(n, SEED_A);
    let ys_host = signed_f32s(n, SEED_B);
    let xs = Vector::from_elems(xs_host.clone());
    let ys = Vector::from_elems(ys_host.clone());

    // 1. A closed computation over two embedded arrays, run once.
    let t = Instant::now();
    let r1 = accelerate::run(&dotp(&use_array(xs.clone()), &use_array(ys.clone())))?.value();
    let t_run = t.elapsed();

    // 2. A function of two arrays, converted once and run on the arrays.
    let t = Instant::now();
    let prog = accelerate::compile(|xs: Acc<Vector<f32>>, ys: Acc<Vector<f32>>| dotp(&xs, &ys))?;
    let t_compile = t.elapsed();
    let t = Instant::now();
    let r2 = prog.run((&xs, &ys))?.value();
    let t_prog = t.elapsed();

    println!("dotp of {n} f32 elements");
    println!("  accelerate::run            {r1:>14}  {:>9.2} ms", t_run.as_secs_f64() * 1e3);
    println!("  accelerate::compile        {:>14}  {:>9.2} ms", "", t_compile.as_secs_f64() * 1e3);
    println!("  Program::run               {r2:>14}  {:>9.2} ms", t_prog.as_secs_f64() * 1e3);

    if args.check {
        // The same sum in plain Rust: sequential, left to right, in f32.
        let t = Instant::now();
        let want = dotp_ref(&xs_host, &ys_host);
        println!("  plain Rust                 {want:>14}  {:>9.2} ms", t.elapsed().as_secs_f64() * 1e3);
        let ok1 = check("accelerate::run", r1, want, &xs_host, &ys_host);
        let ok2 = check("Program::run", r2, want, &xs_host, &ys_host);
        if !(ok1 && ok2) {
            exit(1);
        }
    }
    Ok(())
}

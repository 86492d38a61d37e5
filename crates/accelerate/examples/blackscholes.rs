//! Black-Scholes option pricing: Figure 1 of "Optimising Purely Functional
//! GPU Programs" (ICFP'13), transcribed line by line.
//!
//! ```sh
//! cargo run --release --example blackscholes -- --check          # compare with plain Rust
//! cargo run --release --example blackscholes -- --explain        # show the IR and its sharing
//! cargo run --release --example blackscholes -- --size 200000
//! ```
//!
//! The program is `accelerate_programs::black_scholes`, whose module says
//! why sharing is the paper's point: `cnd'` is an ordinary Rust function,
//! inlined wherever it is called, and `d1`, `d2`, `v_sqrtT`, `x_expRT`,
//! `cndD1`, `cndD2` are Rust `let` bindings of `Exp<f32>` values, each
//! used several times; sharing recovery turns each into a single IR `let`
//! (`--explain` shows them), so nothing is computed twice. `--check`
//! compares with the same formula in plain Rust (`callput_ref`).

use accelerate::prelude::*;
use accelerate_programs::blackscholes::{black_scholes, callput_ref, close, random_options};
use std::process::exit;
use std::time::Instant;

struct Args {
    size: usize,
    check: bool,
    explain: bool,
}

fn usage() -> ! {
    eprintln!("usage: blackscholes [--check] [--explain] [--size N]");
    exit(2)
}

fn parse_args() -> Args {
    let mut args = Args { size: 20_000, check: false, explain: false };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => args.check = true,
            "--explain" => args.explain = true,
            "--size" | "-n" => {
                args.size = it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage());
            }
            "--help" | "-h" => usage(),
            _ => {
                eprintln!("blackscholes: unknown argument {a:?}");
                usage()
            }
        }
    }
    args
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args();
    let options = random_options(args.size);
    let input = Vector::from_elems(options.clone());

    let program = black_scholes(&use_array(input));
    if args.explain {
        println!("{}", accelerate::explain(&program)?);
    }

    let t = Instant::now();
    let result = accelerate::run(&program)?;
    let elapsed = t.elapsed();
    let prices = result.to_vec();

    let (calls, puts) =
        prices.iter().fold((0.0f64, 0.0f64), |(c, p), &(call, put)| (c + call as f64, p + put as f64));
    println!(
        "blackscholes: {} options in {:.2} ms; mean call {:.4}, mean put {:.4}",
        prices.len(),
        elapsed.as_secs_f64() * 1e3,
        calls / prices.len().max(1) as f64,
        puts / prices.len().max(1) as f64,
    );

    if args.check {
        let t = Instant::now();
        let want: Vec<(f32, f32)> = options.iter().map(|&(p, s, y)| callput_ref(p, s, y)).collect();
        let t_ref = t.elapsed();
        if prices.len() != want.len() {
            eprintln!("check: MISMATCH: {} results, expected {}", prices.len(), want.len());
            exit(1);
        }
        let mut bad = 0usize;
        let mut exact = 0usize;
        for (i, ((&(call, put), &(wc, wp)), &(price, strike, years))) in
            prices.iter().zip(&want).zip(&options).enumerate()
        {
            exact += usize::from(call == wc && put == wp);
            if !(close(call, wc, price, strike) && close(put, wp, price, strike)) {
                if bad < 10 {
                    eprintln!(
                        "check: MISMATCH at {i}: option (price {price}, strike {strike}, years {years}): \
                         got (call {call}, put {put}), plain Rust gives (call {wc}, put {wp})"
                    );
                }
                bad += 1;
            }
        }
        if bad > 0 {
            eprintln!("check: {bad} of {} options differ from the plain-Rust reference", want.len());
            exit(1);
        }
        println!(
            "check: all {} options match the plain-Rust reference ({:.2} ms); {exact} bit-identical",
            want.len(),
            t_ref.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

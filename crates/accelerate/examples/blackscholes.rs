//! Black-Scholes option pricing: Figure 1 of "Optimising Purely Functional
//! GPU Programs" (ICFP'13), transcribed line by line.
//!
//! ```sh
//! cargo run --release --example blackscholes -- --check          # compare with plain Rust
//! cargo run --release --example blackscholes -- --explain        # show the IR and its sharing
//! cargo run --release --example blackscholes -- --size 200000
//! ```
//!
//! The paper's point is sharing: `cnd'` is an ordinary host-language
//! function, inlined wherever it is called, and `d1`, `d2`, `v_sqrtT`,
//! `x_expRT`, `cndD1`, `cndD2` are ordinary `let` bindings of expression
//! values, each used several times. Here too: they are Rust `let` bindings
//! of `Exp<f32>` values (cheap `Copy` handles to graph nodes), and sharing
//! recovery turns each into a single IR `let` (`--explain` shows them), so
//! nothing is computed twice. Without it the expression tree would blow up
//! (the paper's Table 2 measures the no-sharing version 17x slower).

use accelerate::prelude::*;
use std::process::exit;
use std::time::Instant;

const RISKFREE: f32 = 0.02;
const VOLATILITY: f32 = 0.30;

/// The coefficients of the polynomial approximation of the cumulative
/// normal distribution (Abramowitz and Stegun 26.2.17), written as in the
/// paper; they round to the nearest f32.
#[allow(clippy::excessive_precision)]
const COEFF: [f32; 5] = [0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429];
#[allow(clippy::excessive_precision)]
const RSQRT2PI: f32 = 0.39894228040143267793994605993438;

// ---------------------------------------------------------------------------
// The program: plain Rust functions over `Exp<f32>`

/// `horner coeff x = x * foldr1 madd coeff where madd a b = a + x*b`:
/// `x * (c0 + x * (c1 + x * (c2 + x * (c3 + x * c4))))`.
fn horner(coeff: &[f32], x: Exp<f32>) -> Exp<f32> {
    let (&last, init) = coeff.split_last().expect("at least one coefficient");
    let madd = |a: f32, b: Exp<f32>| a + x * b;
    x * init.iter().rfold(constant(last), |b, &a| madd(a, b))
}

/// `cnd'`: the standard normal density at `d` times the polynomial.
fn cnd_prime(d: Exp<f32>) -> Exp<f32> {
    let poly = |k| horner(&COEFF, k);
    let k = 1.0 / (1.0 + 0.2316419 * d.abs());
    RSQRT2PI * (-0.5 * d * d).exp() * poly(k)
}

/// The cumulative normal distribution: `let c = cnd' d in d >* 0 ? (1.0 - c, c)`.
fn cnd(d: Exp<f32>) -> Exp<f32> {
    let c = cnd_prime(d);
    d.gt(0.0).select(1.0 - c, c)
}

/// The price of a call and of a put option.
#[allow(non_snake_case)]
fn callput(x: Exp<(f32, f32, f32)>) -> Exp<(f32, f32)> {
    let (price, strike, years) = x.unlift();

    let r = constant(RISKFREE);
    let v = constant(VOLATILITY);
    let v_sqrtT = v * years.sqrt();
    let d1 = ((price / strike).ln() + (r + 0.5 * v * v) * years) / v_sqrtT;
    let d2 = d1 - v_sqrtT;
    let cndD1 = cnd(d1);
    let cndD2 = cnd(d2);
    let x_expRT = strike * (-r * years).exp();

    lift((price * cndD1 - x_expRT * cndD2, x_expRT * (1.0 - cndD2) - price * (1.0 - cndD1)))
}

/// `blackscholes = map callput . use`
fn blackscholes(options: Vector<(f32, f32, f32)>) -> Acc<Vector<(f32, f32)>> {
    use_array(options).map(callput)
}

// ---------------------------------------------------------------------------
// The same formula in plain Rust, operation for operation in the same order

fn horner_ref(coeff: &[f32], x: f32) -> f32 {
    let (&last, init) = coeff.split_last().expect("at least one coefficient");
    x * init.iter().rfold(last, |b, &a| a + x * b)
}

fn cnd_prime_ref(d: f32) -> f32 {
    let k = 1.0 / (1.0 + 0.2316419 * d.abs());
    RSQRT2PI * (-0.5 * d * d).exp() * horner_ref(&COEFF, k)
}

fn cnd_ref(d: f32) -> f32 {
    let c = cnd_prime_ref(d);
    if d > 0.0 {
        1.0 - c
    } else {
        c
    }
}

#[allow(non_snake_case)]
fn callput_ref((price, strike, years): (f32, f32, f32)) -> (f32, f32) {
    let (r, v) = (RISKFREE, VOLATILITY);
    let v_sqrtT = v * years.sqrt();
    let d1 = ((price / strike).ln() + (r + 0.5 * v * v) * years) / v_sqrtT;
    let d2 = d1 - v_sqrtT;
    let cndD1 = cnd_ref(d1);
    let cndD2 = cnd_ref(d2);
    let x_expRT = strike * (-r * years).exp();
    (price * cndD1 - x_expRT * cndD2, x_expRT * (1.0 - cndD2) - price * (1.0 - cndD1))
}

// ---------------------------------------------------------------------------

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

/// Deterministic options, as in the CUDA SDK's benchmark: price in [5, 30),
/// strike in [1, 100), years in [0.25, 10). A tiny LCG (Knuth's MMIX
/// constants) instead of a `rand` dependency.
fn random_options(n: usize) -> Vec<(f32, f32, f32)> {
    let mut s: u64 = 0x853c_49e6_748f_ea9b;
    let mut uniform = |lo: f32, hi: f32| {
        s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let u = (s >> 40) as f32 / (1u32 << 24) as f32;
        lo + (hi - lo) * u
    };
    (0..n).map(|_| (uniform(5.0, 30.0), uniform(1.0, 100.0), uniform(0.25, 10.0))).collect()
}

/// Whether `got` is close enough to `want` for an option of this price and
/// strike.
///
/// The interpreter performs the same f32 operations in the same order as
/// `callput_ref`, with the same Rust `ln`, `exp` and `sqrt`, so today the
/// results are bit-identical. A compiled backend may use another libm
/// (`expf`, `logf` within an ulp or two) or contract `a + x*b` into a fused
/// multiply-add, so the check allows a few rounding errors per operation.
/// Both prices are a difference of two terms bounded by `price` and
/// `strike` (the cumulative normal lies in [0, 1] and `exp(-r*t) <= 1`), so
/// an error of a few ulps in any of the ~40 operations moves the result by
/// a small multiple of eps * (price + strike) — relative to the terms, not
/// to the result, which cancellation can make arbitrarily small (a deep
/// out-of-the-money call is worth almost nothing). Errors in d1 and d2 are
/// damped, not amplified: d/dd cnd(d) is at most 1/sqrt(2*pi) < 0.4.
/// 64 * eps * (price + strike) is a generous bound on all of this, and
/// still about 1e-5 of the option's scale.
fn close(got: f32, want: f32, price: f32, strike: f32) -> bool {
    got == want || (got - want).abs() <= 64.0 * f32::EPSILON * (price + strike)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args = parse_args();
    let options = random_options(args.size);
    let input = Vector::from_elems(options.clone());

    let program = blackscholes(input);
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
        let want: Vec<(f32, f32)> = options.iter().map(|&o| callput_ref(o)).collect();
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

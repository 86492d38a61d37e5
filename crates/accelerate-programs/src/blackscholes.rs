//! Black-Scholes option pricing: Figure 1 of "Optimising Purely Functional
//! GPU Programs" (ICFP'13), transcribed line by line, one `map` over the
//! options.
//!
//! The paper's point is sharing: `cnd'` is an ordinary host-language
//! function, inlined wherever it is called, and `d1`, `d2`, `v_sqrtT`,
//! `x_expRT`, `cndD1`, `cndD2` are ordinary `let` bindings of expression
//! values, each used several times. Here too: they are Rust `let` bindings
//! of `Exp<f32>` values (cheap `Copy` handles to graph nodes), and sharing
//! recovery turns each into a single IR `let`, so nothing is computed
//! twice. Without it the expression tree would blow up (the paper's
//! Table 2 measures the no-sharing version 17x slower).
//!
//! Used by `examples/blackscholes.rs` and the `blackscholes` benchmarks.
//! The library's tests write the formula with its operands in another
//! order (`tests/common`), which their IR snapshots record.

use accelerate::prelude::*;

pub const RISKFREE: f32 = 0.02;
pub const VOLATILITY: f32 = 0.30;

/// The coefficients of the polynomial approximation of the cumulative
/// normal distribution (Abramowitz and Stegun 26.2.17), written as in the
/// paper; they round to the nearest f32.
#[allow(clippy::excessive_precision)]
pub const COEFF: [f32; 5] = [0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429];
#[allow(clippy::excessive_precision)]
pub const RSQRT2PI: f32 = 0.39894228040143267793994605993438;

// ---------------------------------------------------------------------------
// The program: plain Rust functions over `Exp<f32>`

/// `horner coeff x = x * foldr1 madd coeff where madd a b = a + x*b`:
/// `x * (c0 + x * (c1 + x * (c2 + x * (c3 + x * c4))))`.
fn horner(coeff: &[f32], x: &Exp<f32>) -> Exp<f32> {
    let (&last, init) = coeff.split_last().expect("at least one coefficient");
    let madd = |a: f32, b: Exp<f32>| a + x * b;
    x * init.iter().rfold(constant(last), |b, &a| madd(a, b))
}

/// `cnd'`: the standard normal density at `d` times the polynomial.
fn cnd_prime(d: &Exp<f32>) -> Exp<f32> {
    let poly = |k| horner(&COEFF, &k);
    let k = 1.0 / (1.0 + 0.2316419 * d.abs());
    RSQRT2PI * (-0.5 * d * d).exp() * poly(k)
}

/// The cumulative normal distribution: `let c = cnd' d in d >* 0 ? (1.0 - c, c)`.
fn cnd(d: &Exp<f32>) -> Exp<f32> {
    let c = cnd_prime(d);
    d.gt(0.0).select(1.0 - &c, c)
}

/// The price of a call and of a put option `(price, strike, years)`.
#[allow(non_snake_case)]
pub fn callput(x: &Exp<(f32, f32, f32)>) -> Exp<(f32, f32)> {
    let (price, strike, years) = x.unlift();

    let r = constant(RISKFREE);
    let v = constant(VOLATILITY);
    let v_sqrtT = &v * years.sqrt();
    let d1 = ((&price / &strike).ln() + (&r + 0.5 * &v * &v) * &years) / &v_sqrtT;
    let d2 = &d1 - v_sqrtT;
    let cndD1 = cnd(&d1);
    let cndD2 = cnd(&d2);
    let x_expRT = strike * (-r * years).exp();

    lift((&price * &cndD1 - &x_expRT * &cndD2, x_expRT * (1.0 - cndD2) - price * (1.0 - cndD1)))
}

/// `blackscholes = map callput`: the (call, put) prices of every option
/// (price, strike, years).
pub fn black_scholes(options: &Acc<Vector<(f32, f32, f32)>>) -> Acc<Vector<(f32, f32)>> {
    options.map(callput)
}

// ---------------------------------------------------------------------------
// The same formula in plain Rust, operation for operation in the same
// order (`#[inline]`, so that the benchmarks' loops, compiled for this
// machine's vector unit, inline them as they did their own copy)

#[inline]
fn horner_ref(coeff: &[f32], x: f32) -> f32 {
    let (&last, init) = coeff.split_last().expect("at least one coefficient");
    x * init.iter().rfold(last, |b, &a| a + x * b)
}

#[inline]
fn cnd_prime_ref(d: f32) -> f32 {
    let k = 1.0 / (1.0 + 0.2316419 * d.abs());
    RSQRT2PI * (-0.5 * d * d).exp() * horner_ref(&COEFF, k)
}

#[inline]
fn cnd_ref(d: f32) -> f32 {
    let c = cnd_prime_ref(d);
    if d > 0.0 {
        1.0 - c
    } else {
        c
    }
}

/// [`callput`] in plain Rust: the price of a call and of a put.
#[allow(non_snake_case)]
#[inline(always)]
pub fn callput_ref(price: f32, strike: f32, years: f32) -> (f32, f32) {
    let (r, v) = (RISKFREE, VOLATILITY);
    let v_sqrtT = v * years.sqrt();
    let d1 = ((price / strike).ln() + (r + 0.5 * v * v) * years) / v_sqrtT;
    let d2 = d1 - v_sqrtT;
    let cndD1 = cnd_ref(d1);
    let cndD2 = cnd_ref(d2);
    let x_expRT = strike * (-r * years).exp();
    (price * cndD1 - x_expRT * cndD2, x_expRT * (1.0 - cndD2) - price * (1.0 - cndD1))
}

/// Whether `got` is close enough to the reference's `want` for an option
/// of this price and strike.
///
/// The interpreter performs the same f32 operations in the same order as
/// `callput_ref`, with the same Rust `ln`, `exp` and `sqrt`, so its
/// results are bit-identical. A compiled backend or a hand-written version
/// may use another libm (`expf`, `logf` within an ulp or two; libmvec's
/// vector ones within a few ulps, CUDA's within 2), contract `a + x*b`
/// into a fused multiply-add, or reassociate (`-ffast-math`), so the check
/// allows a few rounding errors per operation. Both prices are a
/// difference of two terms bounded by `price` and `strike` (the cumulative
/// normal lies in [0, 1] and `exp(-r*t) <= 1`), so an error of a few ulps
/// in any of the ~40 operations moves the result by a small multiple of
/// eps * (price + strike) — relative to the terms, not to the result,
/// which cancellation can make arbitrarily small (a deep out-of-the-money
/// call is worth almost nothing). Errors in d1 and d2 are damped, not
/// amplified: d/dd cnd(d) is at most 1/sqrt(2*pi) < 0.4. 64 * eps *
/// (price + strike) is a generous bound on all of this, and still about
/// 1e-5 of the option's scale.
pub fn close(got: f32, want: f32, price: f32, strike: f32) -> bool {
    got == want || (got - want).abs() <= 64.0 * f32::EPSILON * (price + strike)
}

// ---------------------------------------------------------------------------
// Inputs

/// `n` options as in the CUDA SDK's benchmark, price in [5, 30), strike in
/// [1, 100), years in [0.25, 10), each drawn by `uniform(lo, hi)` in that
/// order.
pub fn options_with(n: usize, mut uniform: impl FnMut(f32, f32) -> f32) -> Vec<(f32, f32, f32)> {
    (0..n).map(|_| (uniform(5.0, 30.0), uniform(1.0, 100.0), uniform(0.25, 10.0))).collect()
}

/// `n` deterministic options ([`options_with`]) from a tiny LCG (Knuth's
/// MMIX constants), the example's.
pub fn random_options(n: usize) -> Vec<(f32, f32, f32)> {
    let mut s: u64 = 0x853c_49e6_748f_ea9b;
    options_with(n, |lo, hi| {
        s = s.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        let u = (s >> 40) as f32 / (1u32 << 24) as f32;
        lo + (hi - lo) * u
    })
}

//! Black-Scholes option pricing: Figure 1 of ICFP'13, one `map` over the
//! options. Each option costs a `sqrt`, a `ln`, three `exp`s and a few
//! dozen arithmetic operations, 20 bytes of memory traffic (three f32 in,
//! two out): compute-bound on this machine unless `exp` and `ln` are
//! vectorised. The hand-written versions take the options as three arrays
//! (structure of arrays), the layout the Accelerate array of tuples has.

use super::{add_accelerate_variants, count, probe_compile, CompileProbe, STREAM_CHUNK};
use crate::check::elementwise;
use crate::data::Rng;
use crate::ffi;
use crate::harness::{in_place, Bench, Size};
use crate::native::native_fn;
use accelerate::prelude::*;
use rayon::prelude::*;
use std::sync::Arc;

pub const RISKFREE: f32 = 0.02;
pub const VOLATILITY: f32 = 0.30;
#[allow(clippy::excessive_precision)]
const COEFF: [f32; 5] = [0.31938153, -0.356563782, 1.781477937, -1.821255978, 1.330274429];
#[allow(clippy::excessive_precision)]
const RSQRT2PI: f32 = 0.39894228040143267793994605993438;

pub fn options(size: Size) -> usize {
    size.pick(1000, 1 << 18, 1 << 24)
}

// ---------------------------------------------------------------------------
// The Accelerate program, as in `examples/blackscholes.rs`

fn horner(coeff: &[f32], x: Exp<f32>) -> Exp<f32> {
    let (&last, init) = coeff.split_last().expect("at least one coefficient");
    x * init.iter().rfold(constant(last), |b, &a| a + x * b)
}

fn cnd(d: Exp<f32>) -> Exp<f32> {
    let k = 1.0 / (1.0 + 0.2316419 * d.abs());
    let c = RSQRT2PI * (-0.5 * d * d).exp() * horner(&COEFF, k);
    d.gt(0.0).select(1.0 - c, c)
}

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

pub fn blackscholes(options: Acc<Vector<(f32, f32, f32)>>) -> Acc<Vector<(f32, f32)>> {
    options.map(callput)
}

// ---------------------------------------------------------------------------
// Plain Rust: the same operations in the same order

fn cnd_ref(d: f32) -> f32 {
    let k = 1.0 / (1.0 + 0.2316419 * d.abs());
    let (&last, init) = COEFF.split_last().expect("at least one coefficient");
    let poly = k * init.iter().rfold(last, |b, &a| a + k * b);
    let c = RSQRT2PI * (-0.5 * d * d).exp() * poly;
    if d > 0.0 {
        1.0 - c
    } else {
        c
    }
}

/// The price of a call and of a put.
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

/// The options as three arrays.
pub struct Options {
    pub price: Vec<f32>,
    pub strike: Vec<f32>,
    pub years: Vec<f32>,
}

/// The prices as two arrays.
#[derive(Clone, Debug)]
pub struct Prices {
    pub call: Vec<f32>,
    pub put: Vec<f32>,
}

impl Prices {
    fn zeros(n: usize) -> Prices {
        Prices { call: vec![0.0; n], put: vec![0.0; n] }
    }
}

pub fn blackscholes_seq(o: &Options, out: &mut Prices) {
    blackscholes_chunk(&o.price, &o.strike, &o.years, &mut out.call, &mut out.put)
}

/// Parallel: chunks of `STREAM_CHUNK` options on rayon's pool. Rust has no
/// vectorised `exp`/`ln`: each calls the C library's scalar `expf`/`logf`.
pub fn blackscholes_rayon(o: &Options, out: &mut Prices) {
    let c = STREAM_CHUNK;
    (
        out.call.par_chunks_mut(c),
        out.put.par_chunks_mut(c),
        o.price.par_chunks(c),
        o.strike.par_chunks(c),
        o.years.par_chunks(c),
    )
        .into_par_iter()
        .for_each(|(call, put, price, strike, years)| blackscholes_chunk(price, strike, years, call, put));
}

native_fn! {
    fn blackscholes_chunk(price: &[f32], strike: &[f32], years: &[f32], call: &mut [f32], put: &mut [f32]) {
        for i in 0..call.len() {
            (call[i], put[i]) = callput_ref(price[i], strike[i], years[i]);
        }
    }
}

/// Deterministic options as in the CUDA SDK's benchmark (and the
/// example): price in [5, 30), strike in [1, 100), years in [0.25, 10).
pub fn random_options(n: usize) -> Options {
    let mut rng = Rng::new(0x853c_49e6_748f_ea9b);
    let mut o =
        Options { price: Vec::with_capacity(n), strike: Vec::with_capacity(n), years: Vec::with_capacity(n) };
    for _ in 0..n {
        o.price.push(rng.uniform_f32(5.0, 30.0));
        o.strike.push(rng.uniform_f32(1.0, 100.0));
        o.years.push(rng.uniform_f32(0.25, 10.0));
    }
    o
}

/// Whether every price is close enough to the reference, for an option of
/// its price and strike: the example's bound (`examples/blackscholes.rs`,
/// `close`). Another `expf`/`logf` (libmvec's vector ones are within a few
/// ulps, CUDA's within 2), fused multiply-adds or reassociation (the C baseline is compiled
/// with `-ffast-math`) change each of the ~40 operations by a few ulps;
/// both prices are differences of terms bounded by `price` and `strike`,
/// and errors in d1, d2 are damped (cnd' < 0.4), so 64 * eps * (price +
/// strike) bounds the difference, about 1e-5 of the option's scale.
pub fn check(got: &Prices, want: &Prices, o: &Options) -> Result<(), String> {
    let close = |i: usize, g: f32, w: f32| {
        g == w || (g - w).abs() <= 64.0 * f32::EPSILON * (o.price[i] + o.strike[i])
    };
    elementwise(&got.call, &want.call, close).map_err(|e| format!("calls: {e}"))?;
    elementwise(&got.put, &want.put, close).map_err(|e| format!("puts: {e}"))
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let n = options(size);
    let o = Arc::new(random_options(n));
    let mut want = Prices::zeros(n);
    blackscholes_seq(&o, &mut want);
    let want = Arc::new(want);
    let checker = {
        let (o, w) = (o.clone(), want.clone());
        move |got: &Prices| check(got, &w, &o)
    };

    let mut b = Bench::new("blackscholes", format!("n = {} options (f32)", count(n)));
    b.bytes = Some(5.0 * 4.0 * n as f64);
    let input: Vector<(f32, f32, f32)> = (0..n).map(|i| (o.price[i], o.strike[i], o.years[i])).collect();
    let c = checker.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(blackscholes, config),
        move |p| p.run(&input),
        move |r: &Vector<(f32, f32)>| {
            let (call, put) = r.to_vec().into_iter().unzip();
            c(&Prices { call, put })
        },
    )?;
    type Kernel = fn(&Options, &mut Prices);
    let kernels: [(&str, Kernel); 3] = [
        ("rust-seq", blackscholes_seq),
        ("rust-rayon", blackscholes_rayon),
        ("c-openmp", |o, p| ffi::blackscholes(&o.price, &o.strike, &o.years, &mut p.call, &mut p.put)),
    ];
    for (name, kernel) in kernels {
        let o = o.clone();
        let c = checker.clone();
        b.variant(name, move |s| Ok(in_place(s, || Prices::zeros(n), |out| kernel(&o, out))), move |p| c(p));
    }
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(blackscholes, config))
}

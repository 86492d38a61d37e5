//! Black-Scholes option pricing: Figure 1 of ICFP'13, one `map` over the
//! options. Each option costs a `sqrt`, a `ln`, three `exp`s and a few
//! dozen arithmetic operations, 20 bytes of memory traffic (three f32 in,
//! two out): compute-bound on this machine unless `exp` and `ln` are
//! vectorised. The hand-written versions take the options as three arrays
//! (structure of arrays), the layout the Accelerate array of tuples has.
//! The program, its plain-Rust formula (`callput_ref`, which the
//! hand-written Rust loops call) and its tolerance are
//! `accelerate_programs::blackscholes`. The Python peers (`crate::peers`,
//! `peers/bench_blackscholes.py`) compute that formula in f32, operation
//! for operation: `numpy` (whole-array operations), `numba` (one option
//! per `prange` iteration) and `jax` (`jax.jit` of the array program).

use super::{
    add_accelerate_variants, add_text_variant, count, probe_compile, text_f32s, text_value, CompileProbe,
    STREAM_CHUNK,
};
use crate::check::elementwise;
use crate::ffi;
use crate::harness::{in_place, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::blackscholes::{
    black_scholes, callput_ref, close, options_with, RISKFREE, VOLATILITY,
};
use accelerate_programs::rng::Rng;
use rayon::prelude::*;
use std::sync::Arc;

pub fn options(size: Size) -> usize {
    size.pick(1000, 1 << 18, 1 << 24)
}

/// The Accelerate program as a function of its array.
pub fn program(options: Acc<Vector<(f32, f32, f32)>>) -> Acc<Vector<(f32, f32)>> {
    black_scholes(&options)
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

/// Deterministic options in the ranges of the CUDA SDK's benchmark (and
/// the example's, `options_with`), drawn from xorshift64*.
pub fn random_options(n: usize) -> Options {
    let mut rng = Rng::new(0x853c_49e6_748f_ea9b);
    let aos = options_with(n, |lo, hi| rng.uniform_f32(lo, hi));
    Options {
        price: aos.iter().map(|o| o.0).collect(),
        strike: aos.iter().map(|o| o.1).collect(),
        years: aos.iter().map(|o| o.2).collect(),
    }
}

/// Whether every price is close enough to the reference, for an option of
/// its price and strike: the example's bound (`close`, which says why it
/// also holds for the C baseline, compiled with `-ffast-math`, and for
/// CUDA's `expf`/`logf`).
pub fn check(got: &Prices, want: &Prices, o: &Options) -> Result<(), String> {
    let close = |i: usize, g: f32, w: f32| close(g, w, o.price[i], o.strike[i]);
    elementwise(&got.call, &want.call, close).map_err(|e| format!("calls: {e}"))?;
    elementwise(&got.put, &want.put, close).map_err(|e| format!("puts: {e}"))
}

/// A peer's result: the calls, then the puts, as many of each (an odd
/// count leaves the calls one longer, which the check rejects).
fn decode(raw: Vec<u8>) -> Prices {
    let mut call = peers::all::<f32>(raw);
    let put = call.split_off(call.len().div_ceil(2));
    Prices { call, put }
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
    let text_args =
        [&o.price, &o.strike, &o.years].map(|v| text_value(&Vector::from_elems(v.to_vec()))).to_vec();
    let c = checker.clone();
    add_text_variant(
        &mut b,
        "blackscholes.fut",
        accelerate_programs::text::BLACKSCHOLES,
        text_args,
        move |r| c(&Prices { call: text_f32s(&r[0])?, put: text_f32s(&r[1])? }),
    )?;
    let c = checker.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
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
    // The Python peers (`crate::peers`): other `exp` and `log` than Rust's
    // (NumPy's and XLA's vectorised ones) and, in JAX, multiply-adds fused
    // by XLA, which `close` allows for as it does for the C baseline.
    peers::add(
        &mut b,
        &["numpy", "numba", "jax"],
        &[
            ("price.bin", peers::bytes(&o.price)),
            ("strike.bin", peers::bytes(&o.strike)),
            ("years.bin", peers::bytes(&o.years)),
        ],
        &[n.to_string(), RISKFREE.to_string(), VOLATILITY.to_string()],
        decode,
        checker,
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

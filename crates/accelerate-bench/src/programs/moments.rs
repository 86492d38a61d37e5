//! The mean and variance of an f32 vector from its sum and the sum of its
//! squares (`accelerate_programs::moments`): two folds of one vector,
//! which clustering computes in one loop (issue 18), so that the vector
//! is read once, as the hand-written versions read it. Memory-bound at
//! the large size (2^25 elements, 128 MiB read); `accelerate-no-ilp`
//! reads it twice. The Python peers (`crate::peers`,
//! `peers/bench_moments.py`): `numpy` (`xs.sum()` and `np.dot(xs, xs)`),
//! `numba` (two `prange` reductions in one loop) and `jax` (`jax.jit` of
//! the two `jnp.sum`s), each in f32.

use super::{add_accelerate_variants, count, probe_compile, CompileProbe, STREAM_CHUNK};
use crate::check::{reassociated_sum_tolerance, within};
use crate::harness::{value, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::moments::{moments, moments_ref};
use accelerate_programs::rng::{signed_f32s, SEED_A};
use rayon::prelude::*;
use std::sync::Arc;

pub fn elements(size: Size) -> usize {
    size.pick(1037, 1 << 18, 1 << 25)
}

/// The Accelerate program as a function of its array.
pub fn program(xs: Acc<Vector<f32>>) -> Acc<Scalar<(f32, f32)>> {
    moments(&xs)
}

native_fn! {
    /// One chunk's sum and sum of squares with 64 independent running
    /// sums each (as `dotp`'s), so that the loop vectorises and the adds'
    /// latency is hidden.
    fn sums_lanes(xs: &[f32]) -> (f32, f32) {
        const LANES: usize = 64;
        let (xb, xt) = xs.as_chunks::<LANES>();
        let (mut s, mut q) = ([0.0f32; LANES], [0.0f32; LANES]);
        for x in xb {
            for k in 0..LANES {
                s[k] += x[k];
                q[k] += x[k] * x[k];
            }
        }
        let (ts, tq) = xt.iter().fold((0.0f32, 0.0f32), |(a, b), &x| (a + x, b + x * x));
        (s.iter().sum::<f32>() + ts, q.iter().sum::<f32>() + tq)
    }
}

/// Mean and variance from the two sums.
fn finish(s: f32, s2: f32, n: usize) -> (f32, f32) {
    let n = n as f32;
    let mean = s / n;
    (mean, s2 / n - mean * mean)
}

/// Parallel: chunks of `STREAM_CHUNK` on rayon's pool, each by
/// `sums_lanes`, one pass over the vector.
pub fn moments_rayon(xs: &[f32]) -> (f32, f32) {
    let (s, s2) =
        xs.par_chunks(STREAM_CHUNK).map(sums_lanes).reduce(|| (0.0, 0.0), |a, b| (a.0 + b.0, a.1 + b.1));
    finish(s, s2, xs.len())
}

/// Sequential: one loop, two running sums.
pub fn moments_seq(xs: &[f32]) -> (f32, f32) {
    let (s, s2) = xs.iter().fold((0.0f32, 0.0f32), |(a, b), &x| (a + x, b + x * x));
    finish(s, s2, xs.len())
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let n = elements(size);
    let xs = Arc::new(signed_f32s(n, SEED_A));
    let (mean, var) = moments_ref(&xs);
    // Each sum is within gamma_n * sum |term| of the exact one in any
    // order (`reassociated_sum_tolerance`); the mean is that over n, plus
    // its division's rounding; the variance adds the mean's error through
    // mean^2 and the roundings of its three operations.
    let eps = f32::EPSILON as f64;
    let abs_s: f64 = xs.iter().map(|&x| (x as f64).abs()).sum();
    let abs_s2: f64 = xs.iter().map(|&x| x as f64 * x as f64).sum();
    let nf = n as f64;
    let tm = reassociated_sum_tolerance(n, abs_s, eps) / nf + eps * mean.abs();
    let tv = reassociated_sum_tolerance(n, abs_s2, eps) / nf
        + 2.0 * mean.abs() * tm
        + tm * tm
        + 4.0 * eps * (abs_s2 / nf + mean * mean);
    let check = move |(m, v): (f32, f32)| {
        within(m as f64, mean, tm)?;
        within(v as f64, var, tv)
    };

    let mut b = Bench::new("moments", format!("n = {} f32", count(n)));
    b.bytes = Some(4.0 * n as f64);
    b.flops = Some(3.0 * n as f64);
    b.memory_bound = size == Size::Large;

    let xa = Vector::from_elems(xs.to_vec());
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
        move |p| p.run(&xa),
        move |r: &Scalar<(f32, f32)>| check(r.value()),
    )?;
    let x = xs.clone();
    b.variant("rust-seq", move |s| Ok(value(s, || moments_seq(&x))), move |&r| check(r));
    let x = xs.clone();
    b.variant("rust-rayon", move |s| Ok(value(s, || moments_rayon(&x))), move |&r| check(r));
    // the Python peers (`crate::peers`): the result is the mean and the
    // variance, two `f32`s (NaN where one is missing, which `check` rejects)
    let pair = |raw: Vec<u8>| {
        let r = peers::all::<f32>(raw);
        (r.first().copied().unwrap_or(f32::NAN), r.get(1).copied().unwrap_or(f32::NAN))
    };
    peers::add(
        &mut b,
        &["numpy", "numba", "jax"],
        &[("xs.bin", peers::bytes(&xs))],
        &[n.to_string()],
        pair,
        move |&r: &(f32, f32)| check(r),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

//! Dot product of two f32 vectors (ICFP'13 §5): a `zip_with` feeding a
//! `fold`, which fusion makes one reduction that reads both vectors once.
//! Memory-bound at the large size (2^24 elements, 128 MiB read). The
//! program and its sequential reference are `accelerate_programs::dotp`.

use super::{
    add_accelerate_variants, add_text_variant, count, probe_compile, text_f32s, text_value, CompileProbe,
    STREAM_CHUNK,
};
use crate::check::{reassociated_sum_tolerance, within};
use crate::ffi;
use crate::harness::{value, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::dotp::{dotp, dotp_ref};
use accelerate_programs::rng::{signed_f32s, SEED_A, SEED_B};
use rayon::prelude::*;
use std::sync::Arc;

pub fn elements(size: Size) -> usize {
    size.pick(1037, 1 << 18, 1 << 24)
}

/// The Accelerate program as a function of its two arrays.
pub fn program(xs: Acc<Vector<f32>>, ys: Acc<Vector<f32>>) -> Acc<Scalar<f32>> {
    dotp(&xs, &ys)
}

/// Parallel: chunks of `STREAM_CHUNK` summed on rayon's pool, each with
/// `dot_lanes`' independent accumulators.
pub fn dotp_rayon(xs: &[f32], ys: &[f32]) -> f32 {
    xs.par_chunks(STREAM_CHUNK).zip(ys.par_chunks(STREAM_CHUNK)).map(|(x, y)| dot_lanes(x, y)).sum()
}

native_fn! {
    /// One chunk's dot product with 64 independent running sums (four
    /// AVX-512 registers, eight AVX2 ones), so that the loop vectorises
    /// and the adds' latency is hidden: a single running sum is a chain
    /// of dependent adds.
    fn dot_lanes(xs: &[f32], ys: &[f32]) -> f32 {
        const LANES: usize = 64;
        let n = xs.len().min(ys.len());
        let (xb, xt) = xs[..n].as_chunks::<LANES>();
        let (yb, yt) = ys[..n].as_chunks::<LANES>();
        let mut acc = [0.0f32; LANES];
        for (x, y) in xb.iter().zip(yb) {
            for k in 0..LANES {
                acc[k] += x[k] * y[k];
            }
        }
        let tail: f32 = xt.iter().zip(yt).map(|(&x, &y)| x * y).sum();
        acc.iter().sum::<f32>() + tail
    }
}

/// The result within the reassociation tolerance of `check`.
fn check(got: f32, want: f32, tol: f64) -> Result<(), String> {
    within(got as f64, want as f64, tol)
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let n = elements(size);
    let xs = Arc::new(signed_f32s(n, SEED_A));
    let ys = Arc::new(signed_f32s(n, SEED_B));
    let want = dotp_ref(&xs, &ys);
    // Every variant but the sequential one reassociates the sum (the C
    // one may also fuse each multiply-add); each order's result is within
    // gamma_n * sum |x_i y_i| of the exact one (`check`).
    let abs_sum: f64 = xs.iter().zip(ys.iter()).map(|(&x, &y)| (x as f64 * y as f64).abs()).sum();
    let tol = reassociated_sum_tolerance(n, abs_sum, f32::EPSILON as f64);

    let mut b = Bench::new("dotp", format!("n = {} f32", count(n)));
    b.bytes = Some(2.0 * 4.0 * n as f64);
    b.flops = Some(2.0 * n as f64);
    b.memory_bound = size == Size::Large;

    let (xa, ya) = (Vector::from_elems(xs.to_vec()), Vector::from_elems(ys.to_vec()));
    let text_args = vec![text_value(&xa), text_value(&ya)];
    add_text_variant(&mut b, "dotp.fut", accelerate_programs::text::DOTP, text_args, move |r| {
        check(text_f32s(&r[0])?[0], want, tol)
    })?;
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
        move |p| p.run((&xa, &ya)),
        move |r: &Scalar<f32>| check(r.value(), want, tol),
    )?;
    let (x, y) = (xs.clone(), ys.clone());
    b.variant("rust-seq", move |s| Ok(value(s, || dotp_ref(&x, &y))), move |&r| check(r, want, tol));
    let (x, y) = (xs.clone(), ys.clone());
    b.variant("rust-rayon", move |s| Ok(value(s, || dotp_rayon(&x, &y))), move |&r| check(r, want, tol));
    let (x, y) = (xs.clone(), ys.clone());
    b.variant("c-openmp", move |s| Ok(value(s, || ffi::dotp(&x, &y))), move |&r| check(r, want, tol));
    // the Python peers (`crate::peers`): the result is one `f32`
    let one = |raw: Vec<u8>| peers::all::<f32>(raw).first().copied().unwrap_or(f32::NAN);
    peers::add(
        &mut b,
        &["numpy", "numba", "jax"],
        &[("xs.bin", peers::bytes(&xs)), ("ys.bin", peers::bytes(&ys))],
        &[n.to_string()],
        one,
        move |&r: &f32| check(r, want, tol),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

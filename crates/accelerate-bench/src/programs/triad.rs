//! The STREAM triad, `a[i] = b[i] + s * c[i]` over f64 arrays far larger
//! than the last-level cache (32 MiB here): the machine's memory bandwidth,
//! which the memory-bound benchmarks are compared with. Counted as STREAM
//! counts it, 24 bytes per element (no write-allocate traffic). The best
//! of the C (OpenMP) and Rust (rayon) versions is the machine's figure.

use super::{count, STREAM_CHUNK};
use crate::check::elementwise;
use crate::ffi;
use crate::harness::{in_place, Bench, Size};
use crate::native::native_fn;
use accelerate_programs::rng::Rng;
use rayon::prelude::*;
use std::sync::Arc;

pub const S: f64 = 3.0;

pub fn elements(size: Size) -> usize {
    // small: 64 MiB per array, twice the L3; large: 256 MiB per array
    size.pick(1037, 1 << 23, 1 << 25)
}

pub fn triad_seq(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    for ((a, &b), &c) in a.iter_mut().zip(b).zip(c) {
        *a = b + s * c;
    }
}

pub fn triad_rayon(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    a.par_chunks_mut(STREAM_CHUNK)
        .zip(b.par_chunks(STREAM_CHUNK))
        .zip(c.par_chunks(STREAM_CHUNK))
        .for_each(|((a, b), c)| triad_chunk(a, b, c, s));
}

native_fn! {
    fn triad_chunk(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
        triad_seq(a, b, c, s)
    }
}

/// As for saxpy: C may fuse `b + s * c` into one rounding (saxpy.rs).
fn check(got: &[f64], want: &[f64], b: &[f64], c: &[f64]) -> Result<(), String> {
    elementwise(got, want, |i, g, w| {
        g == w || (g - w).abs() <= 2.0 * f64::EPSILON * (b[i].abs() + (S * c[i]).abs())
    })
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let n = elements(size);
    let mut rng = Rng::new(0x5eed);
    let bs: Arc<Vec<f64>> = Arc::new((0..n).map(|_| rng.unit_f32() as f64).collect());
    let cs: Arc<Vec<f64>> = Arc::new((0..n).map(|_| rng.unit_f32() as f64).collect());
    let mut want = vec![0.0; n];
    triad_seq(&mut want, &bs, &cs, S);
    let want = Arc::new(want);

    let mut b = Bench::new("triad", format!("n = {} f64", count(n)));
    b.bytes = Some(3.0 * 8.0 * n as f64);
    b.flops = Some(2.0 * n as f64);
    b.memory_bound = true;
    type Kernel = fn(&mut [f64], &[f64], &[f64], f64);
    let kernels: [(&str, Kernel); 3] = [
        ("rust-seq", triad_seq),
        ("rust-rayon", triad_rayon),
        ("c-openmp", |a, b, c, s| ffi::triad(a, b, c, s)),
    ];
    for (name, kernel) in kernels {
        let (x, y, w) = (bs.clone(), cs.clone(), want.clone());
        let (x2, y2) = (bs.clone(), cs.clone());
        b.variant(
            name,
            move |s| Ok(in_place(s, || vec![0.0f64; n], |out| kernel(out, &x, &y, S))),
            move |out: &Vec<f64>| check(out, &w, &x2, &y2),
        );
    }
    Ok(b)
}

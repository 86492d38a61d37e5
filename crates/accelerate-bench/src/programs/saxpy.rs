//! saxpy, `a * x + y` over f32 vectors, as one `zip_with`: a pure
//! streaming map (two vectors read, one written). Memory-bound at the
//! large size (2^24 elements, 192 MiB moved).
//!
//! The Accelerate program returns a new array (its inputs are immutable),
//! so the hand-written versions write a separate output too, made once and
//! reused from run to run; BLAS's in-place update would move a third less
//! and change its input on every run. `rust-rayon-fresh-output` allocates
//! its output on every run instead, as `Program::run` does. The Python
//! peers (`crate::peers`, `peers/bench_saxpy.py`): `numpy` (`np.multiply`
//! and `np.add` into an output made once), `numba` (a `prange` loop),
//! `jax` (`jax.jit` of `a * x + y`) and `scipy` (BLAS's `saxpy` updating a
//! copy of `y`). The program is `accelerate_programs::saxpy`.

use super::{add_accelerate_variants, count, probe_compile, CompileProbe, STREAM_CHUNK};
use crate::check::elementwise;
use crate::ffi;
use crate::harness::{fresh, in_place, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::rng::{signed_f32s, SEED_A, SEED_B};
use accelerate_programs::saxpy;
use rayon::prelude::*;
use std::sync::Arc;

/// The scalar `a`, a constant of the program.
pub const A: f32 = 2.5;

pub fn elements(size: Size) -> usize {
    size.pick(1037, 1 << 18, 1 << 24)
}

/// The Accelerate program as a function of its two arrays.
pub fn program(xs: Acc<Vector<f32>>, ys: Acc<Vector<f32>>) -> Acc<Vector<f32>> {
    saxpy(A, &xs, &ys)
}

/// The reference.
pub fn saxpy_seq(a: f32, xs: &[f32], ys: &[f32], out: &mut [f32]) {
    for ((o, &x), &y) in out.iter_mut().zip(xs).zip(ys) {
        *o = a * x + y;
    }
}

/// Parallel: chunks of `STREAM_CHUNK` on rayon's pool.
pub fn saxpy_rayon(a: f32, xs: &[f32], ys: &[f32], out: &mut [f32]) {
    out.par_chunks_mut(STREAM_CHUNK)
        .zip(xs.par_chunks(STREAM_CHUNK))
        .zip(ys.par_chunks(STREAM_CHUNK))
        .for_each(|((o, x), y)| saxpy_chunk(a, x, y, o));
}

native_fn! {
    fn saxpy_chunk(a: f32, xs: &[f32], ys: &[f32], out: &mut [f32]) {
        saxpy_seq(a, xs, ys, out)
    }
}

/// Rust and the Accelerate backend round `a * x` and then the sum, as the
/// reference does, so they agree to the bit; C may fuse the two into one
/// rounding (GCC's default `-ffp-contract=fast`), which moves the result
/// by at most one rounding of the product and one of the sum:
/// 2 * eps * (|a x| + |y|) covers both.
fn check(got: &[f32], want: &[f32], xs: &[f32], ys: &[f32]) -> Result<(), String> {
    elementwise(got, want, |i, g, w| {
        g == w || (g - w).abs() <= 2.0 * f32::EPSILON * ((A * xs[i]).abs() + ys[i].abs())
    })
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let n = elements(size);
    let xs = Arc::new(signed_f32s(n, SEED_A));
    let ys = Arc::new(signed_f32s(n, SEED_B));
    let mut want = vec![0.0; n];
    saxpy_seq(A, &xs, &ys, &mut want);
    let want = Arc::new(want);
    let checker = {
        let (x, y, w) = (xs.clone(), ys.clone(), want.clone());
        move |got: &[f32]| check(got, &w, &x, &y)
    };

    let mut b = Bench::new("saxpy", format!("n = {} f32", count(n)));
    b.bytes = Some(3.0 * 4.0 * n as f64);
    b.flops = Some(2.0 * n as f64);
    b.memory_bound = size == Size::Large;

    let (xa, ya) = (Vector::from_elems(xs.to_vec()), Vector::from_elems(ys.to_vec()));
    let c = checker.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
        move |p| p.run((&xa, &ya)),
        move |r: &Vector<f32>| c(&r.to_vec()),
    )?;
    type Kernel = fn(f32, &[f32], &[f32], &mut [f32]);
    let kernels: [(&str, Kernel); 3] = [
        ("rust-seq", saxpy_seq),
        ("rust-rayon", saxpy_rayon),
        ("c-openmp", |a, x, y, o| ffi::saxpy(a, x, y, o)),
    ];
    for (name, kernel) in kernels {
        let (x, y) = (xs.clone(), ys.clone());
        let c = checker.clone();
        b.variant(
            name,
            move |s| Ok(in_place(s, || vec![0.0f32; n], |out| kernel(A, &x, &y, out))),
            move |out: &Vec<f32>| c(out),
        );
    }
    // The rayon version again, but allocating its output on every run as
    // a `Program::run` must: the cost of a fresh result (the kernel maps
    // and zeroes new pages as they are first written) apart from the
    // loop's.
    let (x, y, c) = (xs.clone(), ys.clone(), checker.clone());
    b.variant(
        "rust-rayon-fresh-output",
        move |s| {
            fresh(s, || {
                let mut out = vec![0.0f32; n];
                saxpy_rayon(A, &x, &y, &mut out);
                Ok::<_, String>(out)
            })
        },
        move |out: &Vec<f32>| c(out),
    );
    // the Python peers (`crate::peers`): BLAS's saxpy (`scipy`) and XLA
    // (`jax`) fuse the multiply and the add, which `check`'s bound covers
    // as it does C's
    peers::add(
        &mut b,
        &["numpy", "numba", "jax", "scipy"],
        &[("xs.bin", peers::bytes(&xs)), ("ys.bin", peers::bytes(&ys))],
        &[n.to_string(), A.to_string()],
        peers::all::<f32>,
        move |out: &Vec<f32>| checker(out),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

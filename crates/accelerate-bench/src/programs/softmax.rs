//! Row-wise softmax of an f32 matrix: each row's maximum, the
//! exponentials of the row less it, their sum, and each exponential
//! divided by the sum. The program, its reference and the logits are
//! `accelerate_programs::softmax` (`maximum`, `replicate`, `zip_with`,
//! `sum`, `zip_with`).
//!
//! Bound by the exponentials more than by memory: the large matrix,
//! 4096 x 1000 (16 MB), is read and written once by the hand-written
//! versions. The small one is the 1000 x 257.
//!
//! Ours calls glibc's vector `expf` (libmvec, eight lanes a call), so the
//! hand-written parallel version takes its exponentials eight or sixteen
//! lanes at a time as well, with a polynomial (`exp_nonpositive`, Rust
//! having no vector `exp`); `rust-rayon-scalar-exp` is the same with
//! `f32::exp`, one call of the C library's scalar `expf` an element.

use super::{add_accelerate_variants, probe_compile, CompileProbe};
use crate::check::{elementwise, reassociated_sum_tolerance};
use crate::harness::{in_place, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::rng::SEED_A;
use accelerate_programs::softmax::{logits, softmax, softmax_ref};
use rayon::prelude::*;
use std::sync::Arc;

/// Rows and columns.
pub fn shape(size: Size) -> (usize, usize) {
    size.pick((37, 29), (1000, 257), (4096, 1000))
}

/// The Accelerate program as a function of its array.
pub fn program(m: Acc<Matrix<f32>>) -> Acc<Matrix<f32>> {
    softmax(&m)
}

/// Rows per rayon task: 16 rows of 1000 are 16 000 exponentials, tens of
/// microseconds, and 256 tasks at the large size to balance.
const ROWS_PER_TASK: usize = 16;

/// Parallel: blocks of rows on rayon's pool, each row by `row` (one of
/// `softmax_row`, `softmax_row_scalar_exp`).
pub fn softmax_rayon(m: &[f32], cols: usize, out: &mut [f32], row: fn(&[f32], &mut [f32])) {
    let c = cols.max(1);
    out.par_chunks_mut(ROWS_PER_TASK * c).zip(m.par_chunks(ROWS_PER_TASK * c)).for_each(|(o, m)| {
        for (r, o) in m.chunks(c).zip(o.chunks_mut(c)) {
            row(r, o);
        }
    });
}

/// `e^x` for `x <= 0` without a call, so that a loop of them vectorises
/// (Rust has no vector `exp`): `x = n ln 2 + r` with `|r| <= ln 2 / 2`
/// (`ln 2` in two parts, Cody and Waite, so that `r` keeps its low bits),
/// Cephes' `expf` polynomial for `e^r`, and `2^n` made from its exponent
/// bits. Within 1 ulp of `e^x` over [-87, 0] (0.99 measured at 2 10^7
/// evenly spaced arguments, products and sums rounded separately as
/// everywhere in Rust); 0 below -87 (`e^-87` is 1.6e-38, near the
/// smallest normal f32).
#[inline(always)]
fn exp_nonpositive(x: f32) -> f32 {
    const LN2_HI: f32 = 0.693_359_4;
    const LN2_LO: f32 = -2.121_944_4e-4;
    let clamped = x.max(-87.0);
    let n = (clamped * std::f32::consts::LOG2_E).round_ties_even();
    let r = clamped - n * LN2_HI - n * LN2_LO;
    let p = ((((1.987_569_1e-4 * r + 1.398_199_9e-3) * r + 8.333_452e-3) * r + 4.166_579_6e-2) * r
        + 1.666_666_5e-1)
        * r
        + 0.5;
    let e = (p * r * r + r + 1.0) * f32::from_bits(((n as i32 + 127) as u32) << 23);
    if x < -87.0 {
        0.0
    } else {
        e
    }
}

/// One row, in cache from the first pass to the last: the maximum in 16
/// lanes, the exponentials by `exp` written out and summed in 16 lanes,
/// and the division, which vectorises.
#[inline(always)]
fn row_with(row: &[f32], out: &mut [f32], exp: impl Fn(f32) -> f32) {
    const LANES: usize = 16;
    let n = row.len().min(out.len());
    let (row, out) = (&row[..n], &mut out[..n]);
    let (rb, rt) = row.as_chunks::<LANES>();
    let mut top = [f32::NEG_INFINITY; LANES];
    for x in rb {
        for k in 0..LANES {
            top[k] = top[k].max(x[k]);
        }
    }
    let top = rt.iter().copied().fold(top.iter().copied().fold(f32::NEG_INFINITY, f32::max), f32::max);
    let (ob, ot) = out.as_chunks_mut::<LANES>();
    let mut sum = [0.0f32; LANES];
    for (o, x) in ob.iter_mut().zip(rb) {
        for k in 0..LANES {
            o[k] = exp(x[k] - top);
            sum[k] += o[k];
        }
    }
    let mut s: f32 = sum.iter().sum();
    for (o, &x) in ot.iter_mut().zip(rt) {
        *o = exp(x - top);
        s += *o;
    }
    for o in out.iter_mut() {
        *o /= s;
    }
}

native_fn! {
    /// One row with `exp_nonpositive`: every pass vectorises.
    pub fn softmax_row(row: &[f32], out: &mut [f32]) {
        row_with(row, out, exp_nonpositive)
    }
}

native_fn! {
    /// One row with `f32::exp` (the C library's scalar `expf`, one call
    /// an element).
    pub fn softmax_row_scalar_exp(row: &[f32], out: &mut [f32]) {
        row_with(row, out, f32::exp)
    }
}

/// How far a variant's element may be from the reference's, relative to
/// it: every variant subtracts the same maximum (exact whatever the
/// order), so `x - max` agrees to the bit; then
///
/// - each exponential is within `E eps` of the exact one, relative (an
///   ulp is at most eps relative), E = 4: ours calls glibc's vector
///   `expf` (libmvec, `docs/semantics.md` allows it for transcendental
///   functions), documented within 4 ulps (2.6 measured over
///   [-16.5, 0]); `rust-seq`, `rust-rayon-scalar-exp` and Numba call
///   the scalar `expf`, within 1 ulp, `rust-rayon` its own polynomial
///   (`exp_nonpositive`), within 1 ulp; NumPy's own vectorised `expf`
///   measured 2.43 ulps there, XLA's 1.01;
/// - the row's sum of `n` positive terms, in any order, is within
///   (n - 1) u of their exact sum (u = eps / 2, Higham §3.1), and so
///   within E eps + (n - 1) u of the exact sum of the exact exponentials;
/// - the division rounds once more (u).
///
/// So each variant is within (2 E + n / 2) eps of the exact softmax,
/// relative, and two variants within (4 E + n) eps of each other:
/// `reassociated_sum_tolerance(n + 4 E, y, eps)`, which adds one more eps
/// for the terms of second order.
const EXP_ERROR: usize = 4;

fn tolerance(cols: usize, want: f32) -> f64 {
    reassociated_sum_tolerance(cols + 4 * EXP_ERROR, want as f64, f32::EPSILON as f64)
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let (rows, cols) = shape(size);
    let m = Arc::new(logits(rows, cols, SEED_A));
    let mut want = vec![0.0f32; rows * cols];
    softmax_ref(&m, cols, &mut want);
    let want = Arc::new(want);
    let check = {
        let want = want.clone();
        move |got: &[f32]| elementwise(got, &want, |_, g, w| ((g - w) as f64).abs() <= tolerance(cols, w))
    };

    let mut b = Bench::new("softmax", format!("{rows} x {cols} f32"));
    b.bytes = Some(2.0 * 4.0 * (rows * cols) as f64);
    let ma =
        Array::from_vec(Snoc(Snoc(Z, rows as i64), cols as i64), m.to_vec()).map_err(|e| e.to_string())?;
    let c = check.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
        move |p| p.run(&ma),
        move |r: &Matrix<f32>| c(&r.to_vec()),
    )?;
    let (mm, c) = (m.clone(), check.clone());
    b.variant(
        "rust-seq",
        move |s| Ok(in_place(s, || vec![0.0f32; rows * cols], |out| softmax_ref(&mm, cols, out))),
        move |out: &Vec<f32>| c(out),
    );
    let (mm, c) = (m.clone(), check.clone());
    b.variant(
        "rust-rayon",
        move |s| {
            Ok(in_place(s, || vec![0.0f32; rows * cols], |out| softmax_rayon(&mm, cols, out, softmax_row)))
        },
        move |out: &Vec<f32>| c(out),
    );
    let (mm, c) = (m.clone(), check.clone());
    b.variant(
        "rust-rayon-scalar-exp",
        move |s| {
            let row = softmax_row_scalar_exp;
            Ok(in_place(s, || vec![0.0f32; rows * cols], |out| softmax_rayon(&mm, cols, out, row)))
        },
        move |out: &Vec<f32>| c(out),
    );
    // the Python peers (`crate::peers`): the matrix row by row, the
    // result likewise
    peers::add(
        &mut b,
        &["numpy", "numba", "jax", "scipy"],
        &[("m.bin", peers::bytes(&m))],
        &[rows.to_string(), cols.to_string()],
        peers::all::<f32>,
        move |out: &Vec<f32>| check(out),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

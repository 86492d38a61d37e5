//! The Mandelbrot set (ICFP'13 §5.5): a `generate` whose every pixel runs
//! a scalar `while_loop`, z <- z² + c from z = 0 until |z| > 2 or the
//! iteration limit. Compute-bound, and unbalanced: pixels inside the set
//! run to the limit, most others escape within a few iterations.
//!
//! Flops are counted as 8 per iteration (|z|² takes two multiplies and an
//! add, shared with z²'s; z² + c then a subtract, two adds and two
//! multiplies), over the iterations the reference actually runs.
//!
//! The program and its reference are `accelerate_programs::mandelbrot`.
//! The Python peers (`crate::peers`, `peers/bench_mandelbrot.py`) perform
//! the reference's f32 operations in its order: `numpy` (whole-array
//! steps over the pixels not yet escaped, packed as they escape), `numba`
//! (one row per `prange` iteration, each pixel the reference's loop) and
//! `jax` (`jax.jit` of a `lax.while_loop` stepping the whole image, its
//! products carried from step to step, as XLA would otherwise fuse them
//! into multiply-adds and change counts).

use super::{add_accelerate_variants, add_text_variant, probe_compile, CompileProbe};
use crate::check::elementwise;
use crate::harness::{in_place, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::mandelbrot::{escape_time, mandelbrot, mandelbrot_ref, View};
use rayon::prelude::*;
use std::sync::Arc;

/// The image and the iteration limit at a size.
#[derive(Clone, Copy, Debug)]
pub struct Frame {
    pub width: usize,
    pub height: usize,
    pub limit: i32,
    pub view: View,
}

pub fn frame(size: Size) -> Frame {
    let (width, height, limit) = size.pick((37, 23, 50), (320, 240, 255), (1920, 1080, 255));
    // the whole set, centred, as in the example
    Frame { width, height, limit, view: View::whole_set(width, height) }
}

/// The Accelerate program of a frame, with the iteration limit an
/// argument (one compiled program serves every limit) and the image's
/// size and view constants.
pub fn program(f: Frame, limit: Acc<Scalar<i32>>) -> Acc<Matrix<i32>> {
    mandelbrot(f.width, f.height, limit.the(), f.view)
}

/// The reference: one pixel after another.
pub fn mandelbrot_seq(f: &Frame, out: &mut [i32]) {
    mandelbrot_ref(f.width, f.limit, f.view, out)
}

/// Parallel: rows on rayon's pool (work stealing balances the expensive
/// rows inside the set), each row computed 16 pixels at a time by `row`.
pub fn mandelbrot_rayon(f: &Frame, out: &mut [i32]) {
    let f = *f;
    out.par_chunks_mut(f.width).enumerate().for_each(|(r, line)| row(f.view, f.limit, r, line));
}

native_fn! {
    /// One row, in blocks of 16 neighbouring pixels iterated together as
    /// vector lanes: a lane that has escaped (or reached the limit) keeps
    /// its state, and the block stops when no lane is active. Each lane
    /// performs exactly the reference's operations, so the counts are the
    /// same; neighbours escape at similar counts, so few lanes idle.
    fn row(view: View, limit: i32, r: usize, line: &mut [i32]) {
        const LANES: usize = 16;
        let ci = view.y0 + r as f32 * view.step;
        let (blocks, tail) = line.as_chunks_mut::<LANES>();
        for (b, block) in blocks.iter_mut().enumerate() {
            let mut cr = [0.0f32; LANES];
            for (k, c) in cr.iter_mut().enumerate() {
                *c = view.x0 + (b * LANES + k) as f32 * view.step;
            }
            let (mut zr, mut zi, mut it) = ([0.0f32; LANES], [0.0f32; LANES], [0i32; LANES]);
            loop {
                let mut active = [false; LANES];
                for k in 0..LANES {
                    active[k] = zr[k] * zr[k] + zi[k] * zi[k] <= 4.0 && it[k] < limit;
                    let nr = zr[k] * zr[k] - zi[k] * zi[k] + cr[k];
                    let ni = 2.0 * zr[k] * zi[k] + ci;
                    zr[k] = if active[k] { nr } else { zr[k] };
                    zi[k] = if active[k] { ni } else { zi[k] };
                    it[k] += active[k] as i32;
                }
                if !active.iter().any(|&a| a) {
                    break;
                }
            }
            *block = it;
        }
        let start = blocks.len() * LANES;
        for (k, px) in tail.iter_mut().enumerate() {
            *px = escape_time(view.x0 + (start + k) as f32 * view.step, ci, limit);
        }
    }
}

/// Exact equality. Every variant performs the same IEEE f32 operations in
/// the same order on every pixel: Rust never fuses a multiply-add, the
/// Accelerate backend compiles with `-ffp-contract=off`, and the pixel
/// coordinates are the same conversions and products. The iteration is
/// chaotic near the set's boundary, where one rounding difference can
/// change a count arbitrarily, so no tolerance short of "any count" would
/// be justified; a difference here is a bug, not rounding.
fn check(got: &[i32], want: &[i32]) -> Result<(), String> {
    elementwise(got, want, |_, g, w| g == w)
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let f = frame(size);
    let pixels = f.width * f.height;
    let mut want = vec![0i32; pixels];
    mandelbrot_seq(&f, &mut want);
    let iterations: f64 = want.iter().map(|&i| i as f64).sum();
    let want = Arc::new(want);

    let mut b = Bench::new("mandelbrot", format!("{}x{}, limit {}", f.width, f.height, f.limit));
    b.flops = Some(8.0 * iterations);
    let w = want.clone();
    {
        use accelerate::array::ScalarVal;
        use accelerate::text::Value;
        let args = vec![
            Value::scalar(ScalarVal::I64(f.width as i64)),
            Value::scalar(ScalarVal::I64(f.height as i64)),
            Value::scalar(ScalarVal::I32(f.limit)),
            Value::scalar(ScalarVal::F32(f.view.x0)),
            Value::scalar(ScalarVal::F32(f.view.y0)),
            Value::scalar(ScalarVal::F32(f.view.step)),
        ];
        let w = want.clone();
        add_text_variant(&mut b, "mandelbrot.fut", accelerate_programs::text::MANDELBROT, args, move |r| {
            match r[0].array().buffers() {
                [accelerate::array::Buffer::I32(got)] => check(got, &w),
                _ => Err(format!("a result of type {}", r[0].type_name())),
            }
        })?;
    }
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(move |limit| program(f, limit), config),
        move |p| p.run(&Scalar::scalar(f.limit)),
        move |r: &Matrix<i32>| check(&r.to_vec(), &w),
    )?;
    type Kernel = fn(&Frame, &mut [i32]);
    let kernels: [(&str, Kernel); 2] = [("rust-seq", mandelbrot_seq), ("rust-rayon", mandelbrot_rayon)];
    for (name, kernel) in kernels {
        let w = want.clone();
        b.variant(
            name,
            move |s| Ok(in_place(s, || vec![0i32; pixels], |out| kernel(&f, out))),
            move |out| check(out, &w),
        );
    }
    // The Python peers (`crate::peers`): no inputs but the frame, the
    // view's f32s written as the shortest decimals that read back as them
    let v = f.view;
    peers::add(
        &mut b,
        &["numpy", "numba", "jax"],
        &[],
        &[
            f.width.to_string(),
            f.height.to_string(),
            f.limit.to_string(),
            v.x0.to_string(),
            v.y0.to_string(),
            v.step.to_string(),
        ],
        peers::all::<i32>,
        move |out: &Vec<i32>| check(out, &want),
    )?;
    Ok(b)
}

pub fn compile_probe(size: Size) -> Result<CompileProbe, String> {
    let f = frame(size);
    probe_compile(|config| accelerate::compile_with(move |limit| program(f, limit), config))
}

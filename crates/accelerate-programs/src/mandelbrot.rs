//! The Mandelbrot set (ICFP'13 §5.5): for each pixel, a point c of the
//! complex plane, iterate z <- z² + c from z = 0 until |z| > 2 or the
//! iteration limit is reached; the number of iterations colours the pixel.
//!
//! The paper's version unrolls the iteration a fixed number of times as
//! collective operations, because Accelerate then had no loops (the
//! fusion tests keep that form); here each pixel runs a scalar
//! `while_loop` on the tuple state (zr, zi, i), built with `lift` and
//! taken apart with `unlift`, so a pixel stops as soon as it escapes.
//!
//! Used by `examples/mandelbrot.rs` (the limit a constant of the program)
//! and the `mandelbrot` benchmarks (the limit an argument, so that one
//! compiled program serves every limit).

use accelerate::prelude::*;

/// The region of the complex plane to draw: the lower left corner and the
/// size of one pixel.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct View {
    pub x0: f32,
    pub y0: f32,
    pub step: f32,
}

impl View {
    /// The whole set, centred in an image of `width` x `height` pixels.
    pub fn whole_set(width: usize, height: usize) -> View {
        let (cx, cy, extent) = (-0.5f32, 0.0f32, 3.0f32);
        let step = extent / width.min(height).max(1) as f32;
        View { x0: cx - step * width as f32 / 2.0, y0: cy - step * height as f32 / 2.0, step }
    }
}

/// The iteration counts of every pixel of a `width` x `height` image of
/// `view`: `limit` for a point that never escaped (taken to be in the
/// set). `limit` is an `i32` (a constant of the program) or an `Exp<i32>`
/// (say, an argument's element).
pub fn mandelbrot(width: usize, height: usize, limit: impl IntoExp<i32>, view: View) -> Acc<Matrix<i32>> {
    let limit = limit.into_exp();
    generate(dim2(height, width), |ix| {
        let (row, col) = unindex2(ix);
        let cr = view.x0 + col.cast::<f32>() * view.step;
        let ci = view.y0 + row.cast::<f32>() * view.step;
        let end = while_loop(
            (0.0f32, 0.0f32, 0i32),
            |s| {
                let (zr, zi, i) = s.unlift();
                (&zr * &zr + &zi * &zi).le(4.0) & i.lt(&limit)
            },
            |s| {
                let (zr, zi, i) = s.unlift();
                let zr2 = &zr * &zr - &zi * &zi + &cr;
                let zi2 = 2.0 * zr * zi + &ci;
                lift((zr2, zi2, i + 1))
            },
        );
        let (_, _, i) = end.unlift();
        i
    })
}

/// The iterations of the point (cr, ci) in plain Rust: the same f32
/// operations in the same order as [`mandelbrot`], so the counts must
/// agree exactly.
#[inline]
pub fn escape_time(cr: f32, ci: f32, limit: i32) -> i32 {
    let (mut zr, mut zi, mut i) = (0.0f32, 0.0f32, 0i32);
    while zr * zr + zi * zi <= 4.0 && i < limit {
        (zr, zi, i) = (zr * zr - zi * zi + cr, 2.0 * zr * zi + ci, i + 1);
    }
    i
}

/// [`mandelbrot`] in plain Rust, one pixel after another, into `out`
/// (`width` pixels a row, as many rows as it holds).
pub fn mandelbrot_ref(width: usize, limit: i32, view: View, out: &mut [i32]) {
    for (row, line) in out.chunks_mut(width).enumerate() {
        let ci = view.y0 + row as f32 * view.step;
        for (col, px) in line.iter_mut().enumerate() {
            let cr = view.x0 + col as f32 * view.step;
            *px = escape_time(cr, ci, limit);
        }
    }
}

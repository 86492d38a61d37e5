//! saxpy, `a * x + y` over f32 vectors, as one `zip_with`: a pure
//! streaming map (two vectors read, one written).
//!
//! Used by the vectorisation test of the CPU backend and the `saxpy`
//! benchmarks.

use accelerate::prelude::*;

/// `zipWith (\x y -> a * x + y) xs ys`, with `a` a constant of the
/// program.
pub fn saxpy(a: f32, xs: &Acc<Vector<f32>>, ys: &Acc<Vector<f32>>) -> Acc<Vector<f32>> {
    xs.zip_with(ys, move |x, y| a * x + y)
}

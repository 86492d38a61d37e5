//! Jacobi relaxation of an image: each step replaces every pixel by the
//! mean of itself and its four neighbours (the 5-point stencil of the
//! discrete Laplacian's Jacobi iteration, the smoothing step of image
//! diffusion and of multigrid), the edge pixels reading their nearest
//! neighbour inside the image (clamp). The steps run inside the program,
//! in an `awhile` over the image and a step counter, so that one compiled
//! program serves any number of steps (as `examples/pagerank.rs` runs its
//! iterations); each step is one `stencil` with a 3x3 pattern whose
//! corners are unused.
//!
//! Each pixel's mean is `((((north + west) + centre) + east) + south) *
//! 0.2` in f32: the sum left to right in the pattern's row-major order,
//! then one multiplication. [`jacobi_ref`] does the same operations in the
//! same order, and no multiplication feeds an addition within a step, so
//! a backend that does not reassociate (the CPU backend's strict mode)
//! gives the same bits.
//!
//! Used by the `stencil` benchmark (`accelerate-bench`).

use crate::rng::Rng;
use accelerate::prelude::*;

/// The weight of each of the five points.
pub const WEIGHT: f32 = 0.2;

/// One step: the 5-point mean of every pixel, clamped at the edges.
pub fn jacobi_step(img: &Acc<Matrix<f32>>) -> Acc<Matrix<f32>> {
    img.stencil(
        |p: [[Exp<f32>; 3]; 3]| (&p[0][1] + &p[1][0] + &p[1][1] + &p[1][2] + &p[2][1]) * WEIGHT,
        Boundary::clamp(),
    )
}

/// [`jacobi_step`] as a NumPy or JAX user writes it without padding:
/// a `generate` over the image whose every neighbour is read at its
/// coordinates clamped to the edge (the CPU backend runs it as the
/// stencil, Note [Clamped reads as stencils] in `accelerate-opt`).
pub fn jacobi_step_clamped(img: &Acc<Matrix<f32>>) -> Acc<Matrix<f32>> {
    let im = img.clone();
    generate(img.shape(), move |ix| {
        let (i, j) = unindex2(ix);
        let (rows, cols) = unindex2(im.shape());
        let clamp = |x: Exp<i64>, n: &Exp<i64>| x.max(constant(0i64)).min(n - 1);
        let at = |di: i64, dj: i64| im.index(index2(clamp(&i + di, &rows), clamp(&j + dj, &cols)));
        (at(-1, 0) + at(0, -1) + at(0, 0) + at(0, 1) + at(1, 0)) * WEIGHT
    })
}

/// `steps` steps of [`jacobi_step`] from `img`, in an `awhile` loop.
pub fn jacobi(img: &Acc<Matrix<f32>>, steps: &Acc<Scalar<i32>>) -> Acc<Matrix<f32>> {
    jacobi_with(img, steps, jacobi_step)
}

/// `steps` steps of [`jacobi_step_clamped`] from `img`.
pub fn jacobi_clamped(img: &Acc<Matrix<f32>>, steps: &Acc<Scalar<i32>>) -> Acc<Matrix<f32>> {
    jacobi_with(img, steps, jacobi_step_clamped)
}

/// `steps` steps of `step` from `img`, in an `awhile` loop.
fn jacobi_with(
    img: &Acc<Matrix<f32>>,
    steps: &Acc<Scalar<i32>>,
    step: fn(&Acc<Matrix<f32>>) -> Acc<Matrix<f32>>,
) -> Acc<Matrix<f32>> {
    let steps = steps.clone();
    let result = awhile(
        move |s: Acc<(Matrix<f32>, Scalar<i32>)>| {
            let (_, i) = s.unlift();
            unit(the(i).lt(the(&steps)))
        },
        |s| {
            let (img, i) = s.unlift();
            lift_acc((step(&img), unit(the(i) + 1)))
        },
        lift_acc((img.clone(), unit(0i32))),
    );
    result.unlift().0
}

/// One step of the reference on one row: `up`, `mid` and `down` are the
/// rows above, at and below it (clamped: at the first row `up` is `mid`),
/// `out` the row of the result. The first and last columns read
/// themselves for their missing neighbour.
#[inline(always)]
pub fn jacobi_row(up: &[f32], mid: &[f32], down: &[f32], out: &mut [f32]) {
    let cols = mid.len();
    let mean = |n: f32, w: f32, c: f32, e: f32, s: f32| (n + w + c + e + s) * WEIGHT;
    if cols == 1 {
        out[0] = mean(up[0], mid[0], mid[0], mid[0], down[0]);
        return;
    }
    out[0] = mean(up[0], mid[0], mid[0], mid[1], down[0]);
    let last = cols - 1;
    out[last] = mean(up[last], mid[last - 1], mid[last], mid[last], down[last]);
    let inner = &mut out[1..last];
    let (up, down) = (&up[1..last], &down[1..last]);
    let (west, centre, east) = (&mid[..last - 1], &mid[1..last], &mid[2..]);
    for j in 0..inner.len() {
        inner[j] = mean(up[j], west[j], centre[j], east[j], down[j]);
    }
}

/// The rows above and below row `i` of `rows`, clamped at the edges.
pub fn neighbour_rows(i: usize, rows: usize) -> (usize, usize) {
    (i.saturating_sub(1), (i + 1).min(rows - 1))
}

/// `steps` steps in plain Rust on a `rows` x `cols` row-major image, row
/// by row, with the operations of [`jacobi_step`] in its order.
pub fn jacobi_ref(img: &[f32], rows: usize, cols: usize, steps: usize) -> Vec<f32> {
    let mut a = img.to_vec();
    let mut b = vec![0.0f32; a.len()];
    if rows == 0 || cols == 0 {
        return a;
    }
    for _ in 0..steps {
        for (i, out) in b.chunks_exact_mut(cols).enumerate() {
            let (u, d) = neighbour_rows(i, rows);
            let row = |r: usize| &a[r * cols..(r + 1) * cols];
            jacobi_row(row(u), row(i), row(d), out);
        }
        std::mem::swap(&mut a, &mut b);
    }
    a
}

/// A `rows` x `cols` image of brightnesses in [0, 1).
pub fn image(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..rows * cols).map(|_| rng.unit_f32()).collect()
}

//! Jacobi relaxation of a 4096 x 4096 f32 image, 10 steps of the 5-point
//! mean with clamped edges (`accelerate_programs::stencil`): ours is one
//! `stencil` per step inside an `awhile` over the image and a counter
//! (`accelerate-clamped`: the same step written as a `generate` of reads
//! at clamped coordinates, as NumPy's and JAX's users write it); the
//! hand-written versions ping-pong between two images, the parallel one
//! in blocks of rows on rayon's pool, each row's interior a vectorised
//! loop without edge tests. Memory-bound at the large size: each step
//! reads a 64 MiB image and writes another (5 flops per pixel).

use super::{add_accelerate_variants, add_named_variant, probe_compile, CompileProbe};
use crate::check::elementwise;
use crate::harness::{in_place, value, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::rng::SEED_A;
use accelerate_programs::stencil::{
    image, jacobi, jacobi_clamped, jacobi_ref, jacobi_row, neighbour_rows, WEIGHT,
};
use rayon::prelude::*;
use std::sync::Arc;

/// The image's rows and columns.
pub fn shape(size: Size) -> (usize, usize) {
    size.pick((19, 23), (1024, 1024), (4096, 4096))
}

/// The steps at every size.
pub const STEPS: usize = 10;

/// The Accelerate program as a function of its arrays.
pub fn program(img: Acc<Matrix<f32>>, steps: Acc<Scalar<i32>>) -> Acc<Matrix<f32>> {
    jacobi(&img, &steps)
}

/// Rows per rayon task: 8 rows of 4096 pixels are 128 KiB read and
/// written, and 512 tasks a step at the large size to balance.
const ROWS_PER_TASK: usize = 8;

native_fn! {
    /// One step's row: the reference's loop, compiled for this CPU's
    /// vector unit (no multiply-add is fused: the bits are the same).
    fn jacobi_row_native(up: &[f32], mid: &[f32], down: &[f32], out: &mut [f32]) {
        jacobi_row(up, mid, down, out)
    }
}

/// One step from `src` into `dst`, blocks of rows in parallel.
fn step_rayon(src: &[f32], dst: &mut [f32], rows: usize, cols: usize) {
    dst.par_chunks_mut(cols * ROWS_PER_TASK).enumerate().for_each(|(t, block)| {
        for (k, out) in block.chunks_exact_mut(cols).enumerate() {
            let i = t * ROWS_PER_TASK + k;
            let (u, d) = neighbour_rows(i, rows);
            let row = |r: usize| &src[r * cols..(r + 1) * cols];
            jacobi_row_native(row(u), row(i), row(d), out);
        }
    });
}

/// Parallel: `steps` steps from `img`, ping-ponging between `out` and
/// `tmp` so that the last lands in `out`.
pub fn jacobi_rayon(img: &[f32], rows: usize, cols: usize, steps: usize, out: &mut [f32], tmp: &mut [f32]) {
    if steps == 0 || cols == 0 {
        out.copy_from_slice(img);
        return;
    }
    for s in 0..steps {
        let into_out = (steps - 1 - s).is_multiple_of(2);
        let (dst, prev) = if into_out { (&mut *out, &*tmp) } else { (&mut *tmp, &*out) };
        let src = if s == 0 { img } else { prev };
        step_rayon(src, dst, rows, cols);
    }
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let (rows, cols) = shape(size);
    let img = Arc::new(image(rows, cols, SEED_A));
    let want = Arc::new(jacobi_ref(&img, rows, cols, STEPS));
    // Exact: every variant computes each pixel as the same five f32
    // additions in the same order and one multiplication by the same
    // constant (the CPU backend's strict mode compiles without
    // contraction, Rust never contracts, and no multiplication feeds an
    // addition within a step to contract with anyway), so the bits agree.
    let check = {
        let want = want.clone();
        move |got: &[f32]| elementwise(got, &want, |_, g, w| g.to_bits() == w.to_bits())
    };

    let mut b = Bench::new("stencil", format!("{rows} x {cols} f32, {STEPS} steps of a 5-point mean"));
    let pixels = (rows * cols) as f64;
    b.bytes = Some(STEPS as f64 * 2.0 * 4.0 * pixels);
    b.flops = Some(STEPS as f64 * 5.0 * pixels);
    b.memory_bound = size == Size::Large;

    let ia =
        Array::from_vec(Snoc(Snoc(Z, rows as i64), cols as i64), img.to_vec()).map_err(|e| e.to_string())?;
    let steps = Scalar::scalar(STEPS as i32);
    let c = check.clone();
    let (ia2, steps2) = (ia.clone(), steps.clone());
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
        move |p| p.run((&ia, &steps)),
        move |r: &Matrix<f32>| c(&r.to_vec()),
    )?;
    let c = check.clone();
    add_named_variant(
        &mut b,
        "accelerate-clamped",
        |config| {
            accelerate::compile_with(
                |i: Acc<Matrix<f32>>, s: Acc<Scalar<i32>>| jacobi_clamped(&i, &s),
                config,
            )
        },
        move |p| p.run((&ia2, &steps2)),
        move |r: &Matrix<f32>| c(&r.to_vec()),
    )?;
    let (im, c) = (img.clone(), check.clone());
    b.variant(
        "rust-seq",
        move |s| Ok(value(s, || jacobi_ref(&im, rows, cols, STEPS))),
        move |r: &Vec<f32>| c(r),
    );
    let (im, c) = (img.clone(), check.clone());
    b.variant(
        "rust-rayon",
        move |s| {
            Ok(in_place(
                s,
                || (vec![0.0f32; rows * cols], vec![0.0f32; rows * cols]),
                |(out, tmp)| jacobi_rayon(&im, rows, cols, STEPS, out, tmp),
            ))
        },
        move |(out, _): &(Vec<f32>, Vec<f32>)| c(out),
    );
    peers::add(
        &mut b,
        &["numpy", "numba", "jax"],
        &[("image.bin", peers::bytes(&img))],
        &[rows.to_string(), cols.to_string(), STEPS.to_string(), WEIGHT.to_string()],
        peers::all::<f32>,
        move |r: &Vec<f32>| check(r),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

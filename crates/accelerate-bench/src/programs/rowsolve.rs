//! A per-row iterative solver, f64 (`accelerate_programs::rowsolve`):
//! each row's threshold for its projection onto the simplex, by
//! bisection, nested (`accelerate-nested`: a scalar loop per row whose
//! step folds the row, the rows that have stopped packed out at each step)
//! and flat (`accelerate`: one `awhile` over every row's bounds, every
//! row's excess computed at each step until the last stops).
//!
//! Nobody tuned the lifting for this program: it was written after it.
//!
//! The Python peers (`peers/bench_rowsolve.py`): NumPy and JAX (a
//! `while_loop`) bisect every row at once as the flat form does, Numba
//! each row in a `prange` as the reference does, and SciPy solves every
//! row's equation with its vectorised root finder
//! (`optimize.elementwise.find_root`, Chandrupatla's method) to half the
//! width, its result then within the check's bound (its docstring says
//! why).

use super::{add_accelerate_variants, add_nested_variant};
use crate::check::within;
use crate::harness::{value, Bench, Size};
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::rng::{signed_f32s, SEED_A};
use accelerate_programs::rowsolve::{threshold_ref, thresholds_flat, thresholds_nested, WIDTH};
use rayon::prelude::*;
use std::sync::Arc;

pub fn shape(size: Size) -> (usize, usize) {
    size.pick((37, 9), (1024, 64), (16384, 256))
}

fn nested(m: Acc<Matrix<f64>>) -> Acc<Vector<f64>> {
    thresholds_nested(&m)
}

fn flat(m: Acc<Matrix<f64>>) -> Acc<Vector<f64>> {
    thresholds_flat(&m)
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let (rows, cols) = shape(size);
    let m: Arc<Vec<f64>> = Arc::new(signed_f32s(rows * cols, SEED_A).into_iter().map(f64::from).collect());
    let want: Vec<f64> = m.chunks(cols).map(threshold_ref).collect();
    // A row's sum may be reassociated, which can flip a step's decision
    // only where the excess is within rounding (about 1e-14 here) of 1,
    // that is where the midpoint is that close to the root: both searches
    // then still bracket the root, and end within WIDTH of it.
    let check = {
        let want = want.clone();
        move |got: &[f64]| -> Result<(), String> {
            if got.len() != want.len() {
                return Err(format!("{} rows, expected {}", got.len(), want.len()));
            }
            got.iter().zip(&want).try_for_each(|(&g, &w)| within(g, w, 2.0 * WIDTH))
        }
    };
    let mut b = Bench::new("rowsolve", format!("{rows} x {cols} f64, bisection to 2^-20"));
    let ma =
        Array::from_vec(Snoc(Snoc(Z, rows as i64), cols as i64), m.to_vec()).map_err(|e| e.to_string())?;
    let mi = ma.clone();
    let c = check.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(flat, config),
        move |p| p.run(&mi),
        move |r: &Vector<f64>| c(&r.to_vec()),
    )?;
    let c = check.clone();
    add_nested_variant(
        &mut b,
        |config| accelerate::compile_with(nested, config),
        move |p| p.run(&ma),
        move |r: &Vector<f64>| c(&r.to_vec()),
    )?;
    let mm = m.clone();
    let c = check.clone();
    b.variant(
        "rust-seq",
        move |s| Ok(value(s, || mm.chunks(cols).map(threshold_ref).collect::<Vec<f64>>())),
        move |r: &Vec<f64>| c(r),
    );
    let mm = m.clone();
    let c = check.clone();
    b.variant(
        "rust-rayon",
        move |s| Ok(value(s, || mm.par_chunks(cols).map(threshold_ref).collect::<Vec<f64>>())),
        move |r: &Vec<f64>| c(r),
    );
    peers::add(
        &mut b,
        &["numpy", "numba", "jax", "scipy"],
        &[("m.bin", peers::bytes(&m))],
        &[rows.to_string(), cols.to_string(), WIDTH.to_string()],
        peers::all::<f64>,
        move |r: &Vec<f64>| check(r),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<super::CompileProbe, String> {
    super::probe_compile(|config| accelerate::compile_with(nested, config))
}

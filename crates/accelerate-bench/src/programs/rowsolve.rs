//! A per-row iterative solver, f64, written the way a user would first
//! write it and the way a flat array language makes one write it: for each
//! row of a matrix, the threshold `t` of its projection onto the simplex
//! (`sum_j max(a_j - t, 0) = 1`), found by bisection from `[min - 1,
//! max]` until the interval is narrower than `WIDTH`.
//!
//! - nested: a `generate` over the rows whose element runs a scalar loop
//!   whose step folds the row (an array computation inside a loop inside a
//!   parallel function: Note [Lifted loops] in `opt/lift.rs`, one step of
//!   every running row per iteration, the rows that have stopped packed
//!   out);
//! - flat: one `awhile` over the bounds of every row, a row's bounds kept
//!   once it has converged (every row's excess computed at each step until
//!   the last stops).
//!
//! Nobody tuned the lifting for this program: it was written after it.

use super::add_accelerate_variants;
use crate::check::within;
use crate::harness::{fresh, value, Bench, Size};
use accelerate::prelude::*;
use accelerate_programs::rng::{signed_f32s, SEED_A};
use rayon::prelude::*;
use std::sync::Arc;

/// The bisection stops below this width.
const WIDTH: f64 = 1.0 / (1u64 << 20) as f64;

pub fn shape(size: Size) -> (usize, usize) {
    size.pick((37, 9), (1024, 64), (16384, 256))
}

fn row_of(m: &Acc<Matrix<f64>>, i: Exp<i64>) -> Acc<Vector<f64>> {
    m.slice(any_dims::<Z>().fixed(i).all())
}

/// The nested form: a loop per row.
pub fn nested(m: Acc<Matrix<f64>>) -> Acc<Vector<f64>> {
    let (rows, _) = unindex2(m.shape());
    generate(index1(rows), |i| {
        let line = row_of(&m, unindex1(i));
        let lo = line.fold(f64::INFINITY, |a, b| a.min(b)).the() - 1.0;
        let hi = line.fold(f64::NEG_INFINITY, |a, b| a.max(b)).the();
        let (_, hi) = while_loop(
            lift((lo, hi)),
            |s| {
                let (lo, hi) = s.unlift();
                (hi - lo).gt(WIDTH)
            },
            |s| {
                let (lo, hi) = s.unlift();
                let mid = (lo.clone() + hi.clone()) / 2.0;
                let excess = line.map(|a| (a - mid.clone()).max(0.0)).fold(0.0, |a, b| a + b).the();
                cond(excess.gt(1.0), lift((mid.clone(), hi)), lift((lo, mid)))
            },
        )
        .unlift();
        hi
    })
}

/// The flat form: one loop over all the rows.
pub fn flat(m: Acc<Matrix<f64>>) -> Acc<Vector<f64>> {
    let (_, cols) = unindex2(m.shape());
    let lo = m.fold(f64::INFINITY, |a, b| a.min(b)).map(|x| x - 1.0);
    let hi = m.fold(f64::NEG_INFINITY, |a, b| a.max(b));
    let r = awhile(
        |s: Acc<(Vector<f64>, Vector<f64>)>| {
            let (lo, hi) = s.unlift();
            lo.zip_with(&hi, |l, h| (h - l).gt(WIDTH)).fold(false, |a, b| a.or(b))
        },
        |s| {
            let (lo, hi) = s.unlift();
            let mid = lo.zip_with(&hi, |l, h| (l + h) / 2.0);
            let mids = mid.replicate(any_dims::<Z>().all().fixed(&cols));
            let excess = m.zip_with(&mids, |a, t| (a - t).max(0.0)).fold(0.0, |a, b| a + b);
            let bounds = lo.zip_with(&hi, |l, h| lift((l, h)));
            let step = bounds.zip_with(&excess, |b, x| {
                let (l, h) = b.unlift();
                let mid = (l.clone() + h.clone()) / 2.0;
                let running = (h.clone() - l.clone()).gt(WIDTH);
                cond(
                    running,
                    cond(x.gt(1.0), lift((mid.clone(), h.clone())), lift((l.clone(), mid))),
                    lift((l, h)),
                )
            });
            lift_acc((step.map(|b| b.fst()), step.map(|b| b.snd())))
        },
        lift_acc((lo, hi)),
    );
    r.unlift().1
}

fn threshold(line: &[f64]) -> f64 {
    let mut lo = line.iter().copied().fold(f64::INFINITY, f64::min) - 1.0;
    let mut hi = line.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    while hi - lo > WIDTH {
        let mid = (lo + hi) / 2.0;
        let excess: f64 = line.iter().map(|a| (a - mid).max(0.0)).sum();
        if excess > 1.0 {
            lo = mid
        } else {
            hi = mid
        }
    }
    hi
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let (rows, cols) = shape(size);
    let m: Arc<Vec<f64>> = Arc::new(signed_f32s(rows * cols, SEED_A).into_iter().map(f64::from).collect());
    let want: Vec<f64> = m.chunks(cols).map(threshold).collect();
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
    let config = super::accelerate_configs()[0].1.clone();
    let prog = accelerate::compile_with(nested, config).map_err(|e| format!("rowsolve, nested: {e}"))?;
    let c = check.clone();
    b.variant(
        "accelerate-nested",
        move |slot| fresh(slot, || prog.run(&ma)),
        move |r: &Vector<f64>| c(&r.to_vec()),
    );
    let mm = m.clone();
    let c = check.clone();
    b.variant(
        "rust-seq",
        move |s| Ok(value(s, || mm.chunks(cols).map(threshold).collect::<Vec<f64>>())),
        move |r: &Vec<f64>| c(r),
    );
    let mm = m.clone();
    b.variant(
        "rust-rayon",
        move |s| Ok(value(s, || mm.par_chunks(cols).map(threshold).collect::<Vec<f64>>())),
        move |r: &Vec<f64>| check(r),
    );
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<super::CompileProbe, String> {
    super::probe_compile(|config| accelerate::compile_with(nested, config))
}

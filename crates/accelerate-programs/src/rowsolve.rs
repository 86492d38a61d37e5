//! A per-row iterative solver: for each row of a matrix, the threshold `t`
//! of its projection onto the simplex (`sum_j max(a_j - t, 0) = 1`), found
//! by bisection from `[min - 1, max]` until the interval is narrower than
//! [`WIDTH`]. Each row stops after its own number of steps.
//!
//! Written nested, as a user writes it first ([`thresholds_nested`]: a
//! scalar loop per row whose step folds the row, Note [Lifted loops] of
//! the lifting), and flat, as a flat array language makes one write it
//! ([`thresholds_flat`]: one `awhile` over every row's bounds, a row's
//! bounds kept once it has converged).
//!
//! Used by `tests/nested.rs` and the `rowsolve` benchmark.

use accelerate::prelude::*;

/// The bisection stops below this width (a power of two: every midpoint
/// has few fractional bits, so that each sum over a row of small integers
/// is exact in f64).
pub const WIDTH: f64 = 1.0 / (1u64 << 20) as f64;

/// One row's threshold, in plain Rust (the same operations in the same
/// order as the programs, but for the order of each row's sum).
pub fn threshold_ref(line: &[f64]) -> f64 {
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

/// The thresholds, nested: a `generate` over the rows whose element runs
/// a scalar loop whose step folds the row.
pub fn thresholds_nested(m: &Acc<Matrix<f64>>) -> Acc<Vector<f64>> {
    let (rows, _) = unindex2(m.shape());
    generate(index1(rows), |i| {
        let line = m.slice(any_dims::<Z>().fixed(unindex1(i)).all());
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

/// The thresholds, flat: one loop over all the rows.
pub fn thresholds_flat(m: &Acc<Matrix<f64>>) -> Acc<Vector<f64>> {
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
                let bisected = cond(x.gt(1.0), lift((mid.clone(), h.clone())), lift((l.clone(), mid)));
                cond(running, bisected, lift((l, h)))
            });
            lift_acc((step.map(|b| b.fst()), step.map(|b| b.snd())))
        },
        lift_acc((lo, hi)),
    );
    r.unlift().1
}

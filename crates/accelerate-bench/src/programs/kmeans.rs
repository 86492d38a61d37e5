//! k-means clustering (Lloyd's algorithm) of points in the plane, run to
//! convergence: every iteration finds each point's nearest of `k`
//! centroids and moves every centroid to the mean of its points, until no
//! point changes cluster. The program, its reference and the points are
//! `accelerate_programs::kmeans` (Accelerate's `accelerate-examples`
//! formulation: an `sfoldl` argmin per point, the sums a `fold` of a
//! `k x n` one-hot array, an `awhile`).
//!
//! Compute-bound: an iteration is `n k` distances (5 flops each, counted
//! with the comparison as 6) and `n` additions into `k` sums; the large
//! size is 2^20 points and 16 clusters, 26 iterations. The result is the
//! final centroids, the assignment and the number of iterations.

use super::{add_accelerate_variants, count, probe_compile, CompileProbe};
use crate::check::elementwise;
use crate::harness::{in_place, value, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::kmeans::{
    clustered_points, initial_centroids, kmeans, kmeans_ref, kmeans_ref_with, mean_ref, nearest_ref,
    Clustering, Point, MAX_ITERATIONS,
};
use accelerate_programs::rng::SEED_A;
use rayon::prelude::*;
use std::sync::Arc;

/// Points, clusters, and the blobs the points are drawn about.
pub fn shape(size: Size) -> (usize, usize, usize) {
    size.pick((389, 5, 7), (1 << 16, 16, 24), (1 << 20, 16, 24))
}

/// The Accelerate program as a function of its two arrays.
pub fn program(points: Acc<Vector<Point>>, initial: Acc<Vector<Point>>) -> Acc<Clustering> {
    kmeans(&points, &initial)
}

/// What every variant returns: centroids, assignment, iterations.
type Solution = (Vec<Point>, Vec<i32>, i32);

/// The points as one array per coordinate, the layout the hand-written
/// parallel version streams through (and the one the Accelerate array
/// has).
#[derive(Clone, Debug)]
pub struct PointsSoa {
    pub xs: Vec<f32>,
    pub ys: Vec<f32>,
}

/// Points per rayon task: 2^14 points are `2^14 k` distances, tens of
/// microseconds at k = 16, and 64 tasks at 2^20 points to balance.
const POINTS_PER_TASK: usize = 1 << 14;

/// Points compared at once by `assign_task`: their best distances and
/// indices stay in vector registers (two of AVX2 each) while the
/// centroids are tried one after the other.
const LANES: usize = 16;

native_fn! {
    /// The nearest centroid of each point of a task, written into
    /// `assignment`; whether any changed. Groups of `LANES` points are
    /// compared with each centroid in turn, so that the loop over a
    /// group's points vectorises (a select per lane); the same distances,
    /// the same order of centroids and the same strict comparison as the
    /// reference, so the same choice.
    fn assign_task(xs: &[f32], ys: &[f32], cx: &[f32], cy: &[f32], assignment: &mut [i32]) -> bool {
        let n = xs.len().min(ys.len()).min(assignment.len());
        let (xb, xt) = xs[..n].as_chunks::<LANES>();
        let (yb, yt) = ys[..n].as_chunks::<LANES>();
        let (ab, at) = assignment[..n].as_chunks_mut::<LANES>();
        let mut changed = false;
        for ((x, y), a) in xb.iter().zip(yb).zip(ab) {
            let mut best_d = [f32::INFINITY; LANES];
            let mut best = [-1i32; LANES];
            for (j, (&cxj, &cyj)) in cx.iter().zip(cy).enumerate() {
                let j = j as i32;
                for q in 0..LANES {
                    let dx = x[q] - cxj;
                    let dy = y[q] - cyj;
                    let d = dx * dx + dy * dy;
                    let nearer = d < best_d[q];
                    best_d[q] = if nearer { d } else { best_d[q] };
                    best[q] = if nearer { j } else { best[q] };
                }
            }
            for q in 0..LANES {
                changed |= a[q] != best[q];
            }
            *a = best;
        }
        let centroids: Vec<Point> = cx.iter().copied().zip(cy.iter().copied()).collect();
        for ((&x, &y), a) in xt.iter().zip(yt).zip(at) {
            let b = nearest_ref((x, y), &centroids);
            changed |= *a != b;
            *a = b;
        }
        changed
    }
}

/// One task's sums per cluster, its points in order.
fn task_sums(xs: &[f32], ys: &[f32], assignment: &[i32], k: usize) -> Vec<(f32, f32, i32)> {
    let mut sums = vec![(0.0f32, 0.0f32, 0i32); k];
    for ((&x, &y), &a) in xs.iter().zip(ys).zip(assignment) {
        let s = &mut sums[a as usize];
        *s = (s.0 + x, s.1 + y, s.2 + 1);
    }
    sums
}

/// Parallel: each iteration one pass over the points on rayon's pool,
/// each task assigning its points (`assign_task`) and summing them per
/// cluster; the tasks' sums are then added, and the centroids moved.
pub fn kmeans_rayon(points: &PointsSoa, initial: &[Point], out: &mut Solution) {
    let k = initial.len();
    let (mut cx, mut cy): (Vec<f32>, Vec<f32>) = initial.iter().copied().unzip();
    let assignment = &mut out.1;
    assignment.clear();
    assignment.resize(points.xs.len(), -1);
    let (mut changed, mut iterations) = (true, 0i32);
    while changed && iterations < MAX_ITERATIONS {
        let zero = || (false, vec![(0.0f32, 0.0f32, 0i32); k]);
        let (c, sums) = assignment
            .par_chunks_mut(POINTS_PER_TASK)
            .zip(points.xs.par_chunks(POINTS_PER_TASK))
            .zip(points.ys.par_chunks(POINTS_PER_TASK))
            .map(|((a, x), y)| {
                let c = assign_task(x, y, &cx, &cy, a);
                (c, task_sums(x, y, a, k))
            })
            .reduce(zero, |(c1, s1), (c2, s2)| {
                let s = s1.iter().zip(&s2).map(|(a, b)| (a.0 + b.0, a.1 + b.1, a.2 + b.2)).collect();
                (c1 | c2, s)
            });
        for (j, s) in sums.into_iter().enumerate() {
            (cx[j], cy[j]) = mean_ref((cx[j], cy[j]), s);
        }
        changed = c;
        iterations += 1;
    }
    out.0 = cx.into_iter().zip(cy).collect();
    out.2 = iterations;
}

/// The sums of a cluster are exact in any order, so that every variant
/// must compute the reference's centroids to the bit (and so the same
/// assignments and the same number of iterations), when every coordinate
/// is an integer and, at every iteration, the absolute values of each
/// cluster's coordinates add up to less than 2^24: every partial sum,
/// however grouped, is then an integer of at most that size, which f32
/// holds exactly. The division by the count is correctly rounded
/// everywhere (no fast-math, no reciprocal). Returns why not, if not.
fn sums_are_exact(points: &[Point], initial: &[Point]) -> Result<(), String> {
    if let Some(p) = points.iter().find(|p| p.0.fract() != 0.0 || p.1.fract() != 0.0) {
        return Err(format!("kmeans: a point off the integer grid: {p:?}"));
    }
    let limit = (1u64 << 24) as f64;
    let mut worst = 0.0f64;
    kmeans_ref_with(points, initial, |assignment| {
        let mut abs = vec![(0.0f64, 0.0f64); initial.len()];
        for (p, &a) in points.iter().zip(assignment) {
            let s = &mut abs[a as usize];
            *s = (s.0 + (p.0 as f64).abs(), s.1 + (p.1 as f64).abs());
        }
        worst = abs.iter().fold(worst, |w, s| w.max(s.0).max(s.1));
    });
    if worst < limit {
        Ok(())
    } else {
        Err(format!("kmeans: a cluster's sum of |coordinates| reaches {worst}, past 2^24: not exact"))
    }
}

/// The check: by `sums_are_exact`, every variant's result is the
/// reference's exactly (no tolerance is needed).
fn check(got: &Solution, want: &Solution) -> Result<(), String> {
    if got.2 != want.2 {
        return Err(format!("{} iterations, the reference takes {}", got.2, want.2));
    }
    elementwise(&got.1, &want.1, |_, g, w| g == w).map_err(|e| format!("assignment: {e}"))?;
    elementwise(&got.0, &want.0, |_, g, w| g == w).map_err(|e| format!("centroids: {e}"))
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let (n, k, blobs) = shape(size);
    let points = Arc::new(clustered_points(n, blobs, SEED_A));
    let initial = Arc::new(initial_centroids(&points, k));
    sums_are_exact(&points, &initial)?;
    let want = Arc::new(kmeans_ref(&points, &initial));
    let iterations = want.2;

    let mut b = Bench::new("kmeans", format!("{} points, k = {k}, {iterations} iterations", count(n)));
    b.flops = Some(6.0 * (n * k) as f64 * iterations as f64);
    let c = want.clone();
    let checker = move |r: &Solution| check(r, &c);

    let pa = Vector::from_elems(points.to_vec());
    let ia = Vector::from_elems(initial.to_vec());
    let ch = checker.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
        move |p| p.run((&pa, &ia)),
        move |r: &Clustering| ch(&(r.0.to_vec(), r.1.to_vec(), r.2.value())),
    )?;
    let (ps, is) = (points.clone(), initial.clone());
    b.variant("rust-seq", move |s| Ok(value(s, || kmeans_ref(&ps, &is))), checker.clone());
    let soa =
        PointsSoa { xs: points.iter().map(|p| p.0).collect(), ys: points.iter().map(|p| p.1).collect() };
    let is = initial.clone();
    b.variant(
        "rust-rayon",
        move |s| Ok(in_place(s, || (Vec::new(), Vec::new(), 0), |out| kmeans_rayon(&soa, &is, out))),
        checker.clone(),
    );
    // the Python peers (`crate::peers`): the points and the initial
    // centroids as rows of two f32s, and `decode`'s result
    let flat_points: Vec<f32> = points.iter().flat_map(|p| [p.0, p.1]).collect();
    let flat_initial: Vec<f32> = initial.iter().flat_map(|p| [p.0, p.1]).collect();
    peers::add(
        &mut b,
        &["numpy", "numba", "jax", "scipy"],
        &[("points.bin", peers::bytes(&flat_points)), ("initial.bin", peers::bytes(&flat_initial))],
        &[n.to_string(), k.to_string(), MAX_ITERATIONS.to_string(), iterations.to_string()],
        decode,
        checker,
    )?;
    Ok(b)
}

/// A peer's result: the number of iterations and `k` (two i32s), the
/// centroids (`k` rows of two f32s), then the assignment (i32s).
fn decode(raw: Vec<u8>) -> Solution {
    let (head, rest) = peers::take::<i32>(&raw, Some(2));
    let (iterations, k) = match head[..] {
        [i, k] => (i, k.max(0) as usize),
        _ => (-1, 0),
    };
    let (flat, rest) = peers::take::<f32>(rest, Some(2 * k));
    let centroids = flat.chunks_exact(2).map(|c| (c[0], c[1])).collect();
    (centroids, peers::take::<i32>(rest, None).0, iterations)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

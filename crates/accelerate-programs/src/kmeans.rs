//! k-means clustering of points in the plane by Lloyd's algorithm, as
//! Accelerate's `accelerate-examples` writes it (`Kmeans.hs`): from
//! initial centroids, assign every point to its nearest centroid, move
//! every centroid to the mean of its points, and repeat, here until no
//! assignment changes (or [`MAX_ITERATIONS`]).
//!
//! The formulation is the example's: the nearest centroid of a point is
//! a `map` over the points whose function folds the short vector of
//! centroids with `sfoldl` (an argmin over (index, distance), the first
//! of equal distances kept); the new centroids are a `fold` of a `k x n`
//! one-hot array built by `generate` (row `c` holds `(x, y, 1)` for the
//! points of cluster `c` and zeros elsewhere), which fusion consumes as it
//! is made; the iterations are an `awhile` over the centroids, the
//! assignment and a counter. (The example's other form of the sums, a
//! `permute` with `+` into `k` bins, is left commented out there as the
//! slower one: every point contends for one of `k` positions.)
//!
//! Used by the `kmeans` benchmark.

use crate::rng::Rng;
use accelerate::prelude::*;

/// A point, or a centroid: its two coordinates.
pub type Point = (f32, f32);

/// The iterations stop here even if assignments still change.
pub const MAX_ITERATIONS: i32 = 100;

/// What the program computes: the final centroids, every point's cluster
/// and the number of iterations (each an assignment and an update).
pub type Clustering = (Vector<Point>, Vector<i32>, Scalar<i32>);

/// The state of the iterations: the centroids, the assignment, and
/// (whether the last iteration changed it, iterations so far).
type State = (Vector<Point>, Vector<i32>, Scalar<(bool, i32)>);

// ---------------------------------------------------------------------------
// The Accelerate program

/// The squared distance between a point and a centroid.
fn distance(p: &Exp<Point>, c: &Exp<Point>) -> Exp<f32> {
    let (px, py) = p.unlift();
    let (cx, cy) = c.unlift();
    let dx = px - cx;
    let dy = py - cy;
    &dx * &dx + &dy * &dy
}

/// The index of the nearest centroid of every point: the centroids folded
/// in order, a later one taken only when strictly nearer (so the first of
/// equally near centroids wins).
pub fn nearest(points: &Acc<Vector<Point>>, centroids: &Acc<Vector<Point>>) -> Acc<Vector<i32>> {
    points.map(|p| {
        // (index of the next centroid, best index so far, its distance)
        let start = constant((0i32, -1i32, f32::INFINITY));
        let folded = sfoldl(
            |s: &Exp<(i32, i32, f32)>, c: &Exp<Point>| {
                let (j, best, d) = s.unlift();
                let dj = distance(p, c);
                let next = &j + 1i32;
                cond(dj.lt(&d), lift((&next, &j, &dj)), lift((&next, &best, &d)))
            },
            start,
            index0(),
            centroids,
        );
        let (_, best, _) = folded.unlift();
        best
    })
}

/// The new centroids: each the mean of the points assigned to it, or the
/// old centroid where no point is. The per-cluster sums are the rows of
/// a `k x n` one-hot array of `(x, y, 1)`, folded.
pub fn update(
    points: &Acc<Vector<Point>>,
    assignment: &Acc<Vector<i32>>,
    old: &Acc<Vector<Point>>,
) -> Acc<Vector<Point>> {
    let k = old.length();
    let n = points.length();
    let one_hot = generate(index2(k, n), |ix| {
        let (c, j) = unindex2(ix);
        let (x, y) = points.index(index1(&j)).unlift();
        let mine = assignment.index(index1(&j)).eq(c.cast::<i32>());
        cond(mine, lift((x, y, constant(1i32))), constant((0.0f32, 0.0f32, 0i32)))
    });
    let sums = one_hot.fold((0.0f32, 0.0f32, 0i32), |a, b| {
        let (ax, ay, an) = a.unlift();
        let (bx, by, bn) = b.unlift();
        lift((ax + bx, ay + by, an + bn))
    });
    old.zip_with(&sums, |c, s| {
        let (sx, sy, m) = s.unlift();
        let count = m.cast::<f32>();
        cond(m.eq(0i32), c.clone(), lift((sx / &count, sy / &count)))
    })
}

/// Lloyd's iterations from `initial` until no point changes cluster, or
/// [`MAX_ITERATIONS`]: the final centroids, the assignment and the
/// number of iterations. The assignment starts all -1, so that the first
/// iteration always changes it.
pub fn kmeans(points: &Acc<Vector<Point>>, initial: &Acc<Vector<Point>>) -> Acc<Clustering> {
    let unassigned = fill(index1(points.length()), -1i32);
    let start = lift_acc((initial.clone(), unassigned, unit((true, 0i32))));
    let state = awhile(
        |s: Acc<State>| {
            let (_, _, st) = s.unlift();
            st.map(|t| {
                let (changed, iterations) = t.unlift();
                changed.and(iterations.lt(MAX_ITERATIONS))
            })
        },
        |s| {
            let (centroids, old, st) = s.unlift();
            let assignment = nearest(points, &centroids);
            let changed = old.zip_with(&assignment, |a, b| a.ne(b)).or();
            let moved = update(points, &assignment, &centroids);
            let st = st.zip_with(&changed, |t, c| lift((c, t.snd() + 1i32)));
            lift_acc((moved, assignment, st))
        },
        start,
    );
    let (centroids, assignment, st) = state.unlift();
    lift_acc((centroids, assignment, st.map(|t| t.snd())))
}

// ---------------------------------------------------------------------------
// The plain-Rust reference: the same f32 operations in the same order

/// [`distance`] in plain Rust.
#[inline(always)]
pub fn distance_ref(p: Point, c: Point) -> f32 {
    let dx = p.0 - c.0;
    let dy = p.1 - c.1;
    dx * dx + dy * dy
}

/// [`nearest`] for one point.
#[inline(always)]
pub fn nearest_ref(p: Point, centroids: &[Point]) -> i32 {
    let (mut best, mut d) = (-1i32, f32::INFINITY);
    for (j, &c) in centroids.iter().enumerate() {
        let dj = distance_ref(p, c);
        if dj < d {
            (best, d) = (j as i32, dj);
        }
    }
    best
}

/// The sums per cluster of the points' coordinates and their counts, the
/// points taken in order.
pub fn cluster_sums_ref(points: &[Point], assignment: &[i32], k: usize) -> Vec<(f32, f32, i32)> {
    let mut sums = vec![(0.0f32, 0.0f32, 0i32); k];
    for (&(x, y), &a) in points.iter().zip(assignment) {
        let s = &mut sums[a as usize];
        *s = (s.0 + x, s.1 + y, s.2 + 1);
    }
    sums
}

/// A centroid from its cluster's sums ([`update`]'s last step).
#[inline(always)]
pub fn mean_ref(old: Point, (sx, sy, m): (f32, f32, i32)) -> Point {
    if m == 0 {
        old
    } else {
        (sx / m as f32, sy / m as f32)
    }
}

/// [`kmeans`] in plain Rust: the final centroids, the assignment and the
/// number of iterations. `inspect` sees each iteration's assignment (a
/// check of the data can follow the iterations with it).
pub fn kmeans_ref_with(
    points: &[Point],
    initial: &[Point],
    mut inspect: impl FnMut(&[i32]),
) -> (Vec<Point>, Vec<i32>, i32) {
    let mut centroids = initial.to_vec();
    let mut assignment = vec![-1i32; points.len()];
    let (mut changed, mut iterations) = (true, 0i32);
    while changed && iterations < MAX_ITERATIONS {
        changed = false;
        for (a, &p) in assignment.iter_mut().zip(points) {
            let b = nearest_ref(p, &centroids);
            changed |= *a != b;
            *a = b;
        }
        inspect(&assignment);
        let sums = cluster_sums_ref(points, &assignment, centroids.len());
        for (c, s) in centroids.iter_mut().zip(sums) {
            *c = mean_ref(*c, s);
        }
        iterations += 1;
    }
    (centroids, assignment, iterations)
}

/// [`kmeans`] in plain Rust.
pub fn kmeans_ref(points: &[Point], initial: &[Point]) -> (Vec<Point>, Vec<i32>, i32) {
    kmeans_ref_with(points, initial, |_| ())
}

// ---------------------------------------------------------------------------
// Inputs

/// The coordinates of [`clustered_points`] lie in `-LIMIT..LIMIT`.
pub const LIMIT: i32 = 64;

/// `n` points around `blobs` centres in the square `[-LIMIT, LIMIT)²`,
/// with integer coordinates (positions on a 128 x 128 grid, as pixels
/// are): each point picks a blob at random and lies about it with a
/// bell-shaped spread (a sum of four uniforms) of its blob's width.
///
/// Integer coordinates make a cluster's sums exact in any order while
/// they stay below 2^24 (the benchmark checks that they do), so that
/// every variant, however it reassociates, computes the same centroids.
pub fn clustered_points(n: usize, blobs: usize, seed: u64) -> Vec<Point> {
    let mut rng = Rng::new(seed);
    let reach = LIMIT as usize * 3 / 4;
    let centres: Vec<(f32, f32, f32)> = (0..blobs)
        .map(|_| {
            let x = rng.below(2 * reach + 1) as f32 - reach as f32;
            let y = rng.below(2 * reach + 1) as f32 - reach as f32;
            let width = 3.0 + 6.0 * rng.unit_f32();
            (x, y, width)
        })
        .collect();
    let hi = (LIMIT - 1) as f32;
    let bell = |rng: &mut Rng| (0..4).map(|_| rng.unit_f32()).sum::<f32>() - 2.0;
    (0..n)
        .map(|_| {
            let (cx, cy, w) = centres[rng.below(blobs)];
            let x = (cx + w * bell(&mut rng)).round().clamp(-LIMIT as f32, hi);
            let y = (cy + w * bell(&mut rng)).round().clamp(-LIMIT as f32, hi);
            (x, y)
        })
        .collect()
}

/// The initial centroids: the first `k` points (Forgy's choice; the
/// points come in random order).
pub fn initial_centroids(points: &[Point], k: usize) -> Vec<Point> {
    points[..k].to_vec()
}

//! The fusion network of Figure 3 of the ICFP'13 paper (McDonell et al.,
//! "Optimising Purely Functional GPU Programs", §4): seven producers and
//! two consumers, with `p1` read by both `c1` and `p2`, so that fusion
//! must keep `p1` manifest and fuse the rest into the two consumers. The
//! fusion tests and the plan's snapshots use it.

use accelerate::prelude::*;

/// The network over an `n x n` matrix: `(c1, c2)`, where `c1` sums the
/// rows of `p1 = sqrt xs`, and `c2` is the row maxima of the reversed,
/// transposed `|2 p1 - c1|`.
pub fn figure_3(xs: &Acc<Matrix<f32>>, n: i64) -> Acc<(Vector<f32>, Vector<f32>)> {
    let p1 = xs.map(|x| x.sqrt());
    let c1 = p1.fold(0.0, |a, b| a + b);
    let p2 = p1.map(|x| x * 2.0);
    let p3 = p2.transpose();
    let p4 = c1.replicate(index0().all().fixed(n));
    let p5 = p3.zip_with(p4, |a, b| a - b);
    let p6 = p5.map(|x| x.abs());
    let p7 = p6.reverse();
    let c2 = p7.fold(0.0, |a, b| a.max(b));
    lift_acc((c1, c2))
}

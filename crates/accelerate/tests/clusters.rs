//! Clustering into multi-output kernels (`trafo::cluster`, the optimal
//! fusion thesis): sibling operations over one loop share a kernel, the
//! clustering chosen by an ILP. Each program is checked with clustering
//! and without (`no-ilp`, ICFP'13 fusion alone) against plain Rust, with
//! the kernels and intermediate bytes `stats` counts; the plans are
//! snapshots.
//!
//! The whole property suite also runs with clustering on (the default)
//! and, in `.ci/run`, with `ACCELERATE_FLAGS=no-ilp`.

use accelerate::prelude::*;
use accelerate::{compile_with, explain_with, run_with, stats_with, Config, Stats};

/// The environment's backend, with fusion and clustering on whatever
/// `ACCELERATE_FLAGS` says (CI runs this file with `no-fusion` and with
/// `no-ilp` too).
fn ilp() -> Config {
    Config::from_env().unwrap().with_fusion(true).with_clusters(true)
}

fn no_ilp() -> Config {
    Config::from_env().unwrap().with_fusion(true).with_clusters(false)
}

fn vector(n: usize, f: impl Fn(usize) -> f32) -> Vector<f32> {
    Vector::from_elems((0..n).map(f).collect())
}

/// The plan's text.
fn plan<A: Arrays>(acc: &Acc<A>) -> String {
    let all = explain_with(acc, &ilp()).unwrap();
    all.split("== plan ==").nth(1).expect("a plan").to_string()
}

fn sum_and_squares(xs: &Acc<Vector<f32>>) -> Acc<(Scalar<f32>, Scalar<f32>)> {
    let s = xs.sum();
    let s2 = xs.map(|x| x * x).sum();
    lift_acc((s, s2))
}

#[test]
fn mean_and_variance_read_the_vector_once() {
    // small integers: every partial sum is exact in f32, whatever the order
    let xs = vector(100_000, |i| (i % 9) as f32);
    let acc = sum_and_squares(&use_array(xs.clone()));
    let on = stats_with(&acc, &ilp()).unwrap();
    let off = stats_with(&acc, &no_ilp()).unwrap();
    assert_eq!(on, Stats { kernels: 1, launches: 1, intermediate_arrays: 0, intermediate_bytes: 0 });
    assert_eq!(off, Stats { kernels: 2, launches: 2, intermediate_arrays: 0, intermediate_bytes: 0 });
    insta::assert_snapshot!(plan(&acc));
    let want: (f32, f32) = (xs.to_vec().iter().sum(), xs.to_vec().iter().map(|x| x * x).sum());
    for config in [ilp(), no_ilp()] {
        let p = compile_with(|xs: Acc<Vector<f32>>| sum_and_squares(&xs), config).unwrap();
        let (s, s2) = p.run(&xs).unwrap();
        assert_eq!((s.value(), s2.value()), want);
        // and on every size, empty included
        for n in [0, 1, 17, 1000] {
            let ys = vector(n, |i| (i % 5) as f32);
            let (s, s2) = p.run(&ys).unwrap();
            let v = ys.to_vec();
            assert_eq!((s.value(), s2.value()), (v.iter().sum(), v.iter().map(|x| x * x).sum()), "n = {n}");
        }
    }
}

#[test]
fn two_maps_of_one_array_are_one_loop() {
    let xs = vector(1000, |i| i as f32);
    let f = |xs: Acc<Vector<f32>>| lift_acc((xs.map(|x| x * 2.0), xs.map(|x| x + 1.0)));
    let acc = f(use_array(xs.clone()));
    let on = stats_with(&acc, &ilp()).unwrap();
    let off = stats_with(&acc, &no_ilp()).unwrap();
    assert_eq!((on.kernels, off.kernels), (1, 2));
    for config in [ilp(), no_ilp()] {
        let p = compile_with(f, config).unwrap();
        let (a, b) = p.run(&xs).unwrap();
        let v = xs.to_vec();
        assert_eq!(a.to_vec(), v.iter().map(|x| x * 2.0).collect::<Vec<_>>());
        assert_eq!(b.to_vec(), v.iter().map(|x| x + 1.0).collect::<Vec<_>>());
    }
}

#[test]
fn a_fold_that_needs_its_sibling_is_not_in_its_loop() {
    // both fold xs, but the second reads the first's result
    let f = |xs: Acc<Vector<f32>>| {
        let s = xs.sum();
        let total = s.clone();
        let t = xs.map(move |x| x / total.the()).sum();
        lift_acc((s, t))
    };
    let xs = vector(64, |i| (i % 4) as f32);
    let acc = f(use_array(xs.clone()));
    assert_eq!(stats_with(&acc, &ilp()).unwrap().kernels, 2);
    let p = compile_with(f, ilp()).unwrap();
    let (s, t) = p.run(&xs).unwrap();
    let total: f32 = xs.to_vec().iter().sum();
    assert_eq!(s.value(), total);
    assert_eq!(t.value(), xs.to_vec().iter().map(|x| x / total).sum::<f32>());
}

/// The thesis' `normalise2` (§4, Figure 4): its optimal clustering puts
/// `ys1` and `ys2` in one loop; the scan, a consumer, stays a kernel.
fn normalise2(xs: &Acc<Vector<f32>>) -> Acc<(Vector<f32>, Vector<f32>)> {
    let sum1 = xs.sum();
    let scn = xs.scanl(0.0, |a, b| a + b);
    let sum2 = scn.sum();
    let ys1 = xs.map(move |x| x / sum1.the());
    let ys2 = xs.map(move |x| x / sum2.the());
    lift_acc((ys1, ys2))
}

#[test]
fn normalise2_maps_share_a_loop() {
    // small integers: the sums and prefix sums are exact in f32
    let xs = vector(100, |i| ((i * 7) % 10) as f32);
    let acc = normalise2(&use_array(xs.clone()));
    let on = stats_with(&acc, &ilp()).unwrap();
    let off = stats_with(&acc, &no_ilp()).unwrap();
    assert_eq!((on.kernels, off.kernels), (4, 5), "{on:?} {off:?}");
    assert!(on.intermediate_bytes <= off.intermediate_bytes);
    let v = xs.to_vec();
    let sum1: f32 = v.iter().sum();
    let mut run = 0.0;
    let scn: Vec<f32> = std::iter::once(0.0)
        .chain(v.iter().map(|x| {
            run += x;
            run
        }))
        .collect();
    let sum2: f32 = scn.iter().sum();
    for config in [ilp(), no_ilp()] {
        let p = compile_with(|xs: Acc<Vector<f32>>| normalise2(&xs), config).unwrap();
        let (a, b) = p.run(&xs).unwrap();
        assert_eq!(a.to_vec(), v.iter().map(|x| x / sum1).collect::<Vec<_>>());
        assert_eq!(b.to_vec(), v.iter().map(|x| x / sum2).collect::<Vec<_>>());
    }
}

/// `steps` rounds of a sum and a sum of squares of a vector, then the
/// vector scaled by both: 3 operations a round, a sibling pair in each.
fn rounds(xs: &Acc<Vector<f32>>, steps: usize) -> Acc<Vector<f32>> {
    let mut x = xs.clone();
    for _ in 0..steps {
        let s = x.sum();
        let q = x.map(|v| v * v).sum();
        x = x.map(move |v| v * 0.5 + s.the() * 0.25 - q.the() * 0.125);
    }
    x
}

/// The clustering phase run on the fused IR of a program (compiled with
/// `no-ilp`), with its report.
fn cluster_report(
    f: impl Fn(Acc<Vector<f32>>) -> Acc<Vector<f32>>,
    opts: &accelerate::trafo::cluster::ClusterOptions,
) -> accelerate::trafo::cluster::Report {
    let p = compile_with(f, no_ilp().with_backend(accelerate::Backend::Interpreter)).unwrap();
    let fused = p.phases().last().unwrap().ir.clone();
    let (clustered, report) = accelerate::trafo::cluster::cluster_program(fused, opts).unwrap();
    accelerate::ir::verify::verify_program(&clustered, "cluster").unwrap();
    report
}

#[test]
fn solve_times_of_synthetic_programs_and_the_greedy_fallback() {
    use accelerate::trafo::cluster::ClusterOptions;
    let opts = ClusterOptions::default();
    // 80 rounds, 240 candidates: the ILP
    let r = cluster_report(|xs| rounds(&xs, 80), &opts);
    println!("80 rounds:\n{r}");
    assert_eq!(r.clusters, 80, "{r}");
    assert!(r.blocks.iter().all(|b| b.candidates <= opts.max_ilp && b.variables > 0), "{r}");
    // 170 rounds, 510 operations: over the ILP's size, greedily
    let r = cluster_report(|xs| rounds(&xs, 170), &opts);
    println!("170 rounds:\n{r}");
    assert_eq!(r.clusters, 170, "{r}");
    assert!(r.blocks.iter().all(|b| b.outcome.starts_with("greedy")), "{r}");
    // the same 510 operations with the ILP's size raised: solved, and
    // clustered alike
    let large = ClusterOptions { max_ilp: 1024, ..ClusterOptions::default() };
    let r = cluster_report(|xs| rounds(&xs, 170), &large);
    println!("170 rounds, ILP:\n{r}");
    assert_eq!(r.clusters, 170, "{r}");
    assert!(r.blocks.iter().all(|b| b.variables > 0), "{r}");
    // no time for the solver: the greedy clustering, and the same clusters
    let none = ClusterOptions { time_limit: std::time::Duration::ZERO, ..ClusterOptions::default() };
    let r = cluster_report(|xs| rounds(&xs, 20), &none);
    assert_eq!(r.clusters, 20, "{r}");
    assert!(r.blocks.iter().all(|b| b.outcome.starts_with("greedy")), "{r}");
    // and the program runs the same either way
    let xs = vector(300, |i| (i % 3) as f32);
    let want = compile_with(|xs: Acc<Vector<f32>>| rounds(&xs, 6), no_ilp()).unwrap().run(&xs).unwrap();
    let got = compile_with(|xs: Acc<Vector<f32>>| rounds(&xs, 6), ilp()).unwrap().run(&xs).unwrap();
    assert_eq!(got.to_vec(), want.to_vec());
}

/// Kernels and intermediate bytes of a program with clustering and
/// without.
fn both<A: Arrays>(acc: &Acc<A>) -> (Stats, Stats) {
    (stats_with(acc, &ilp()).unwrap(), stats_with(acc, &no_ilp()).unwrap())
}

#[test]
fn no_corpus_program_has_more_kernels_or_intermediate_bytes_with_clusters() {
    use accelerate_programs as progs;
    let v = |n: usize| use_array(vector(n, |i| (i % 17) as f32 - 8.0));
    let m = |r: usize, c: usize| {
        let elems = (0..r * c).map(|i| (i % 13) as f32).collect();
        use_array(Matrix::from_vec(Snoc(Snoc(Z, r as i64), c as i64), elems).unwrap())
    };
    let points = use_array(Vector::from_elems(progs::kmeans::clustered_points(500, 4, 1)));
    let init = use_array(Vector::from_elems(progs::kmeans::initial_centroids(
        &progs::kmeans::clustered_points(500, 4, 1),
        4,
    )));
    let bodies = use_array(Vector::from_elems(progs::nbody::initial_bodies(64, 2)));
    let options = use_array(Vector::from_elems(progs::blackscholes::random_options(100)));
    let mut seen = Vec::new();
    let mut check = |name: &str, (on, off): (Stats, Stats)| {
        assert!(
            on.kernels <= off.kernels && on.intermediate_bytes <= off.intermediate_bytes,
            "{name}: {on:?} against {off:?}"
        );
        seen.push(format!("{name}: {} -> {} kernels", off.kernels, on.kernels));
    };
    check("dotp", both(&progs::dotp::dotp(&v(100), &v(100))));
    check("saxpy", both(&progs::saxpy::saxpy(2.0, &v(100), &v(100))));
    check("black_scholes", both(&progs::blackscholes::black_scholes(&options)));
    check("nbody", both(&progs::nbody::step(&bodies, progs::nbody::PARAMS)));
    check("figure_3", both(&progs::figure3::figure_3(&m(8, 8), 8)));
    check("softmax", both(&progs::softmax::softmax(&m(6, 9))));
    check("matmul", both(&progs::matmul::matmul(&m(5, 7), &m(7, 3))));
    check("kmeans", both(&progs::kmeans::kmeans(&points, &init)));
    check("histogram", both(&progs::histogram::histogram(&v(300), 16)));
    check("filter", both(&progs::filter::filter_above(&v(300), 0.5)));
    check("jacobi", both(&progs::stencil::jacobi_step(&m(9, 9))));
    println!("{}", seen.join("\n"));
}

#[test]
fn a_histograms_counts_and_ranges_are_one_pass() {
    use accelerate_programs::histogram::{histogram, histogram_ref, histogram_values};
    let xs = Vector::from_elems(histogram_values(5000, 7));
    let acc = histogram(&use_array(xs.clone()), 16);
    let (on, off) = both(&acc);
    // one permute (and the tuples of its defaults) against two of each
    assert_eq!((on.kernels, off.kernels), (2, 4), "{on:?} {off:?}");
    let (counts, ranges) = histogram_ref(&xs.to_vec(), 16);
    for config in [ilp(), no_ilp()] {
        let p = compile_with(|xs: Acc<Vector<f32>>| histogram(&xs, 16), config).unwrap();
        let (c, r) = p.run(&xs).unwrap();
        assert_eq!(c.to_vec(), counts);
        assert_eq!(r.to_vec(), ranges);
    }
}

/// The paper's Figure 3 (ICFP'13): `p1` is needed by a fold (`c1`) and
/// by `p2`, so fusion keeps it manifest; clustered, `p1` is computed and
/// written in the loop of the fold that consumes it (a diagonal cluster).
#[test]
fn figure_3s_p1_is_written_in_the_loop_that_folds_it() {
    use accelerate_programs::figure3::figure_3;
    for n in [1usize, 4, 33, 300] {
        let elems = (0..n * n).map(|i| ((i * 7) % 23) as f32).collect();
        let xs = Matrix::from_vec(dim2(n, n), elems).unwrap();
        let acc = figure_3(&use_array(xs.clone()), n as i64);
        let (on, off) = both(&acc);
        // p1 is still written (p2 reads it), but read once, not twice
        assert_eq!((on.kernels, off.kernels), (2, 3), "{on:?} {off:?}");
        assert_eq!(on.intermediate_bytes, off.intermediate_bytes);
        if n == 4 {
            insta::assert_snapshot!(plan(&acc));
        }
        let run = |config: Config| {
            let p = compile_with(move |xs: Acc<Matrix<f32>>| figure_3(&xs, n as i64), config).unwrap();
            let (c1, c2) = p.run(&xs).unwrap();
            (c1.to_vec(), c2.to_vec())
        };
        assert_eq!(run(ilp()), run(no_ilp()), "n = {n}");
    }
}

/// A map that is a result and is summed, with its squares, along rows:
/// one loop writes the map and both sums.
fn kept_and_summed(xs: &Acc<Matrix<f32>>) -> Acc<(Matrix<f32>, Vector<f32>, Vector<f32>)> {
    let ys = xs.map(|x| x + 1.0);
    lift_acc((ys.clone(), ys.sum(), ys.map(|y| y * y).sum()))
}

#[test]
fn a_map_kept_and_summed_is_one_loop_on_every_kind_of_row() {
    // no rows, empty rows, short rows, many rows, few long rows (cut into
    // pieces), one long row; small integers: every sum is exact in f32
    for (r, c) in [(0, 5), (3, 0), (1, 1), (7, 33), (1000, 7), (3, 200_000), (1, 1 << 20)] {
        let xs = Matrix::from_vec(dim2(r, c), (0..r * c).map(|i| (i % 5) as f32).collect()).unwrap();
        let (on, off) = both(&kept_and_summed(&use_array(xs.clone())));
        assert_eq!((on.kernels, off.kernels), (1, 3), "{r} x {c}: {on:?} {off:?}");
        let v = xs.to_vec();
        let ys: Vec<f32> = v.iter().map(|x| x + 1.0).collect();
        let rows = |f: fn(f32) -> f32| -> Vec<f32> {
            (0..r).map(|i| ys[i * c..(i + 1) * c].iter().map(|&y| f(y)).sum()).collect()
        };
        let want = (ys.clone(), rows(|y| y), rows(|y| y * y));
        for config in [ilp(), no_ilp()] {
            let p = compile_with(|xs: Acc<Matrix<f32>>| kept_and_summed(&xs), config).unwrap();
            let (a, b, q) = p.run(&xs).unwrap();
            assert_eq!((a.to_vec(), b.to_vec(), q.to_vec()), want, "{r} x {c}");
            assert_eq!(a.dims(), &[r, c]);
        }
    }
}

#[test]
fn a_transposed_map_kept_and_summed_reads_down_columns() {
    // the loop reads `xs` down its columns: the CPU backend's column blocks
    let f = |xs: Acc<Matrix<f32>>| {
        let t = xs.transpose().map(|x| x * 2.0);
        lift_acc((t.clone(), t.sum()))
    };
    let (r, c) = (300, 257);
    let xs = Matrix::from_vec(dim2(r, c), (0..r * c).map(|i| (i % 11) as f32).collect()).unwrap();
    let (on, off) = both(&f(use_array(xs.clone())));
    assert_eq!((on.kernels, off.kernels), (1, 2), "{on:?} {off:?}");
    let v = xs.to_vec();
    let t: Vec<f32> = (0..c * r).map(|k| 2.0 * v[(k % r) * c + k / r]).collect();
    let sums: Vec<f32> = (0..c).map(|j| t[j * r..(j + 1) * r].iter().sum()).collect();
    for config in [ilp(), no_ilp()] {
        let (a, b) = compile_with(f, config).unwrap().run(&xs).unwrap();
        assert_eq!((a.to_vec(), b.to_vec()), (t.clone(), sums.clone()));
    }
}

/// A `fold1` fails on empty rows; a producer in its loop would fail with
/// it, where alone it succeeds (Note [Clusters and errors]): producers
/// share loops with folds that have a seed only.
#[test]
fn a_map_and_its_fold1_are_not_one_loop() {
    let f = |xs: Acc<Matrix<f32>>| {
        let ys = xs.map(|x| x * 3.0);
        lift_acc((ys.clone(), ys.maximum()))
    };
    let line = line!() - 2;
    let (on, off) = both(&f(use_array(Matrix::from_vec(dim2(2, 3), vec![0.0; 6]).unwrap())));
    assert_eq!((on.kernels, off.kernels), (2, 2));
    let empty = Matrix::from_vec(dim2(4, 0), Vec::new()).unwrap();
    for config in [ilp(), no_ilp()] {
        let err = compile_with(f, config).unwrap().run(&empty).unwrap_err().to_string();
        assert!(err.contains(&format!("clusters.rs:{line}:")) && err.contains("fold1"), "{err}");
    }
    let xs = Matrix::from_vec(dim2(2, 3), vec![1.0, -4.0, 2.0, 0.5, 0.25, -1.0]).unwrap();
    let (ys, m) = compile_with(f, ilp()).unwrap().run(&xs).unwrap();
    assert_eq!(ys.to_vec(), vec![3.0, -12.0, 6.0, 1.5, 0.75, -3.0]);
    assert_eq!(m.to_vec(), vec![6.0, 1.5]);
}

/// Producers whose elements may fail (integer divisions by data) share a
/// loop only where everything that reads one reads the other on every
/// path (Note [Clusters and errors]): summed, they fail together
/// anyway, and are one kernel; read under a conditional, each fails
/// only where it is read, and they stay apart.
#[test]
fn producers_that_may_fail_share_a_loop_only_where_read_together() {
    let program = |d1: &[i64], d2: &[i64], summed: bool| {
        let (d1, d2) =
            (use_array(Vector::from_elems(d1.to_vec())), use_array(Vector::from_elems(d2.to_vec())));
        let n = d1.length();
        let (x1, x2) = (d1.clone(), d2.clone());
        let a = generate(index1(&n), move |i| 1000i64 / x1.index(i.clone()) + x2.index(i));
        let (x1, x2) = (d1.clone(), d2.clone());
        let b = generate(index1(&n), move |i| 1000i64 / x2.index(i.clone()) + x1.index(i));
        // read back to front: not at their own index, so not fused
        generate(index1(&n), move |i| {
            let back = index1(&n - 1i64 - unindex1(i.clone()));
            let (x, y) = (a.index(&back), b.index(&back));
            if summed {
                x + y
            } else {
                cond(d1.index(i).gt(0i64), x, y)
            }
        })
    };
    let d1: Vec<i64> = (1..=40).collect();
    let mut d2: Vec<i64> = (0..40).map(|k| 40 - k).collect();
    let at = |d1: &[i64], d2: &[i64], k: usize| (1000 / d1[k] + d2[k], 1000 / d2[k] + d1[k]);
    let want: Vec<i64> = (0..40).rev().map(|k| at(&d1, &d2, k).0 + at(&d1, &d2, k).1).collect();
    let kernels = |p: &Acc<Vector<i64>>, config: &Config| stats_with(p, config).unwrap().kernels;
    let (summed, guarded) = (program(&d1, &d2, true), program(&d1, &d2, false));
    assert_eq!((kernels(&summed, &ilp()), kernels(&summed, &no_ilp())), (2, 3));
    assert_eq!((kernels(&guarded, &ilp()), kernels(&guarded, &no_ilp())), (3, 3));
    for config in [ilp(), no_ilp()] {
        assert_eq!(run_with(&summed, &config).unwrap().to_vec(), want);
    }
    // a zero in d2: b fails, and so does their sum; the guarded program
    // reads only a, and succeeds on the interpreter, which defers a
    // failed binding's error to the scalar reads of it (the compiled
    // backends fail a launch that names a failed array, read or not)
    d2[7] = 0;
    let want: Vec<i64> = (0..40).rev().map(|k| 1000 / d1[k] + d2[k]).collect();
    for config in [ilp(), no_ilp()] {
        let err = run_with(&program(&d1, &d2, true), &config).unwrap_err();
        assert!(matches!(err, accelerate::Error::DivisionByZero { .. }), "{err}");
        let interp = config.with_backend(accelerate::Backend::Interpreter);
        assert_eq!(run_with(&program(&d1, &d2, false), &interp).unwrap().to_vec(), want);
    }
}

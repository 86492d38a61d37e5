//! Array fusion (ICFP'13 §4): snapshots of the fused IR of the paper's
//! examples, with the kernels and intermediate arrays `stats()` counts,
//! and fused results checked against unfused ones and plain Rust.
//!
//! The whole property-test suite also runs with fusion off
//! (`ACCELERATE_FLAGS=no-fusion`, a step of `.ci/run`), so every
//! operation is checked both ways against its plain-Rust reference.

mod common;

use accelerate::prelude::*;
use accelerate::{compile_with, explain_with, run_with, stats_with, Config, Stats};
use accelerate_programs::dotp;
use common::callput;

/// Fusion alone: clustering siblings into multi-output kernels, the
/// phase after it, has its own tests (`tests/clusters.rs`).
fn fused() -> Config {
    Config::default().with_clusters(false)
}

fn unfused() -> Config {
    Config::default().with_fusion(false)
}

/// The IR after fusion.
fn fused_ir<A: Arrays>(acc: &Acc<A>) -> String {
    let all = explain_with(acc, &fused()).unwrap();
    ir_phases(all.split("== fusion ==\n").nth(1).expect("a fusion phase"))
}

/// The IR phases of `explain`'s text, without the plan that follows them.
fn ir_phases(explained: &str) -> String {
    explained.split("== plan ==").next().unwrap_or_default().to_string()
}

fn count(s: &str, pat: &str) -> usize {
    s.matches(pat).count()
}

fn vector(n: usize, f: impl Fn(usize) -> f32) -> Vector<f32> {
    Vector::from_elems((0..n).map(f).collect())
}

#[test]
fn dot_product_is_one_fold_with_the_zip_with_embedded() {
    let xs = use_array(vector(1000, |i| i as f32 * 0.5));
    let ys = use_array(vector(1000, |i| 1.0 - i as f32));
    let d = dotp(&xs, &ys);
    let ir = fused_ir(&d);
    insta::assert_snapshot!(ir);
    assert_eq!(count(&ir, "zip_with"), 0, "{ir}");
    let s = stats_with(&d, &fused()).unwrap();
    assert_eq!(s, Stats { kernels: 1, launches: 1, intermediate_arrays: 0, intermediate_bytes: 0 });
    // without fusion the products are an array of 1000 floats
    let s = stats_with(&d, &unfused()).unwrap();
    assert_eq!(s, Stats { kernels: 2, launches: 2, intermediate_arrays: 1, intermediate_bytes: 4000 });
    assert_eq!(
        run_with(&d, &fused()).unwrap().value().to_bits(),
        run_with(&d, &unfused()).unwrap().value().to_bits()
    );
}

#[test]
fn a_compiled_dot_product_has_no_intermediate_array_at_any_size() {
    let p = compile_with(|xs: Acc<Vector<f32>>, ys: Acc<Vector<f32>>| dotp(&xs, &ys), fused()).unwrap();
    for n in [0, 1, 100, 10_000] {
        // small integers: every partial sum is exact in f32, so the sum
        // does not depend on the order a backend adds in
        let (xs, ys) = (vector(n, |i| (i % 13) as f32), vector(n, |i| (i % 7) as f32));
        let s = p.stats((&xs, &ys)).unwrap();
        assert_eq!((s.kernels, s.intermediate_arrays), (1, 0), "n = {n}");
        let want: f32 = (0..n).map(|i| (i % 13) as f32 * (i % 7) as f32).sum();
        assert_eq!(p.run((&xs, &ys)).unwrap().value(), want, "n = {n}");
    }
}

#[test]
fn reverse_of_a_map_is_one_producer() {
    // the paper's reverseMap: map then an index permutation, one generate
    let xs = use_array(vector(10, |i| i as f32));
    let r = xs.map(|x| x * 3.0).reverse();
    let ir = fused_ir(&r);
    insta::assert_snapshot!(ir);
    let s = stats_with(&r, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays), (1, 0));
    let want: Vec<f32> = (0..10).rev().map(|i| i as f32 * 3.0).collect();
    assert_eq!(run_with(&r, &fused()).unwrap().to_vec(), want);
}

#[test]
fn a_let_bound_use_floats_out_so_the_producers_fuse() {
    // map g (let xs = use .. in zip_with f xs xs)
    let data = vector(6, |i| i as f32 - 2.0);
    let r = {
        let inner = {
            let xs = use_array(data.clone());
            xs.zip_with(&xs, |a, b| a * b + 1.0)
        };
        let r = inner.map(|x| x.sqrt());
        (fused_ir(&r), stats_with(&r, &fused()).unwrap(), run_with(&r, &fused()).unwrap())
    };
    let (ir, s, out) = r;
    insta::assert_snapshot!(ir);
    assert_eq!((s.kernels, s.intermediate_arrays), (1, 0));
    assert!(ir.contains("map"), "one map of the used array: {ir}");
    let want: Vec<f32> = data.to_vec().iter().map(|x| (x * x + 1.0).sqrt()).collect();
    assert_eq!(out.to_vec(), want);
}

#[test]
fn figure_3_keeps_p1_manifest_and_fuses_the_rest_into_two_consumers() {
    let n = 5usize;
    let m = Matrix::from_vec(dim2(n, n), (0..n * n).map(|i| i as f32).collect()).unwrap();
    let xs = use_array(m);
    let net = accelerate_programs::figure_3(&xs, n as i64);
    let ir = fused_ir(&net);
    insta::assert_snapshot!(ir);
    // kernels: p1 (a map), c1 and c2 (folds); p1's n*n floats the only
    // intermediate array
    let s = stats_with(&net, &fused()).unwrap();
    assert_eq!(s, Stats { kernels: 3, launches: 3, intermediate_arrays: 1, intermediate_bytes: n * n * 4 });
    assert_eq!(count(&ir, "fold"), 2, "{ir}");
    assert_eq!(count(&ir, "delayed"), 1, "{ir}");
    let u = stats_with(&net, &unfused()).unwrap();
    assert_eq!(u.kernels, 9);
    let (a, b) = run_with(&net, &fused()).unwrap();
    let (c, d) = run_with(&net, &unfused()).unwrap();
    assert_eq!((a.to_vec(), b.to_vec()), (c.to_vec(), d.to_vec()));
}

#[test]
fn blackscholes_is_one_kernel() {
    let opts: Vec<(f32, f32, f32)> =
        (0..64).map(|i| (5.0 + i as f32, 1.0 + (i % 30) as f32, 0.25 + (i % 10) as f32 * 0.1)).collect();
    let bs = use_array(Vector::from_elems(opts)).map(callput);
    let ir = fused_ir(&bs);
    insta::assert_snapshot!(ir);
    let s = stats_with(&bs, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays), (1, 0));
    assert_eq!(run_with(&bs, &fused()).unwrap().to_vec(), run_with(&bs, &unfused()).unwrap().to_vec());
}

/// n-body accelerations, all pairs (as `examples/nbody.rs`): each body
/// replicated along one dimension of an n x n matrix, the interactions
/// computed by `zip_with` and summed along the rows by `fold`.
fn accelerations(bodies: &Acc<Vector<(f32, f32, f32)>>) -> Acc<Vector<(f32, f32)>> {
    let n = bodies.size();
    let rows = bodies.replicate(index0().all().fixed(&n));
    let cols = bodies.replicate(index0().fixed(n).all());
    rows.zip_with(cols, |bi, bj| {
        let (xi, yi, _) = bi.unlift();
        let (xj, yj, mj) = bj.unlift();
        let (dx, dy) = (xj - xi, yj - yi);
        let r2 = &dx * &dx + &dy * &dy + 0.01;
        let s = mj / (&r2 * r2.sqrt());
        lift((dx * &s, dy * s))
    })
    .fold((0.0f32, 0.0f32), |a, b| {
        let (ax, ay) = a.unlift();
        let (bx, by) = b.unlift();
        lift((ax + bx, ay + by))
    })
}

#[test]
fn nbody_forces_are_consumed_by_the_fold_with_no_quadratic_intermediate() {
    // the number of bodies is read from the argument's shape
    let p = compile_with(|b: Acc<Vector<(f32, f32, f32)>>| accelerations(&b), fused()).unwrap();
    insta::assert_snapshot!(ir_phases(p.explain().split("== fusion ==\n").nth(1).unwrap()));
    let unfused_p = compile_with(|b: Acc<Vector<(f32, f32, f32)>>| accelerations(&b), unfused()).unwrap();
    let mut last = None;
    for n in [16usize, 32, 64] {
        let bodies = Vector::from_elems(
            (0..n).map(|i| (i as f32, (i * i % 17) as f32, 1.0 + (i % 3) as f32)).collect(),
        );
        let s = p.stats(&bodies).unwrap();
        // the intermediate bytes stay O(n): nothing of n*n elements
        assert!(s.intermediate_bytes <= 16 * n, "n = {n}: {s:?}");
        assert_eq!(s.kernels, 1, "{s:?}");
        let u = unfused_p.stats(&bodies).unwrap();
        assert!(u.intermediate_bytes >= 8 * n * n, "unfused n = {n}: {u:?}");
        assert_eq!(p.run(&bodies).unwrap().to_vec(), unfused_p.run(&bodies).unwrap().to_vec());
        last = Some(s);
    }
    assert!(last.is_some());
}

/// Mandelbrot as the paper writes it: the iteration unrolled at the array
/// level, each step a `zip_with` of the points and the previous state.
fn mandelbrot_unrolled(cs: &Acc<Vector<(f32, f32)>>, steps: usize) -> Acc<Vector<(f32, f32, i32)>> {
    let mut zs = cs.map(|_| lift((constant(0.0f32), constant(0.0f32), constant(0i32))));
    for _ in 0..steps {
        zs = cs.zip_with(zs, |c, z| {
            let (cr, ci) = c.unlift();
            let (zr, zi, i): (Exp<f32>, Exp<f32>, Exp<i32>) = z.unlift();
            let escaped = (&zr * &zr + &zi * &zi).gt(4.0f32);
            let zr2 = &zr * &zr - &zi * &zi + cr;
            let zi2 = 2.0f32 * &zr * &zi + ci;
            lift((escaped.select(zr, zr2), escaped.select(zi, zi2), escaped.select(&i, &i + 1)))
        });
    }
    zs
}

#[test]
fn mandelbrots_unrolled_steps_are_one_kernel() {
    let points: Vec<(f32, f32)> = (0..40).map(|i| (-2.0 + i as f32 * 0.07, 0.5 - i as f32 * 0.03)).collect();
    let cs = use_array(Vector::from_elems(points));
    let m = mandelbrot_unrolled(&cs, 12);
    let s = stats_with(&m, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays), (1, 0), "{}", fused_ir(&m));
    let u = stats_with(&m, &unfused()).unwrap();
    assert_eq!((u.kernels, u.intermediate_arrays), (13, 12));
    assert_eq!(run_with(&m, &fused()).unwrap().to_vec(), run_with(&m, &unfused()).unwrap().to_vec());
}

#[test]
fn a_producer_used_twice_stays_manifest_unless_it_is_only_index_arithmetic() {
    let xs = use_array(vector(8, |i| i as f32));
    // an expensive producer read by two consumers is computed once
    let p = xs.map(|x| x.sin().exp());
    let both = lift_acc((p.fold(0.0, |a, b| a + b), p.fold(0.0, |a, b| a.max(b))));
    let s = stats_with(&both, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays, s.intermediate_bytes), (3, 1, 32), "{}", fused_ir(&both));
    // a reversal moves data without computing: recomputing it in both
    // consumers is cheaper than writing it out (the cost rule)
    let r = xs.reverse();
    let both = lift_acc((r.fold(0.0, |a, b| a + b), r.scanl1(|a, b| a - b)));
    let ir = fused_ir(&both);
    let s = stats_with(&both, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays), (2, 0), "{ir}");
    assert_eq!(count(&ir, "delayed"), 2, "{ir}");
    let (a, b) = run_with(&both, &fused()).unwrap();
    let (c, d) = run_with(&both, &unfused()).unwrap();
    assert_eq!((a.to_vec(), b.to_vec()), (c.to_vec(), d.to_vec()));
}

#[test]
fn a_zip_read_by_two_consumers_is_read_from_its_arrays_by_both() {
    // Note [The cost rule]: a gather reading one element per scalar it
    // returns costs each use what reading it back would; the records a
    // text program builds from its entry point's arrays are such zips
    let xs = use_array(vector(8, |i| i as f32));
    let ys = use_array(vector(8, |i| (i * 3 % 5) as f32));
    let z = xs.zip(&ys);
    let both = lift_acc((z.map(|p| p.fst() * p.snd()).fold(0.0, |a, b| a + b), z.map(|p| p.fst() - p.snd())));
    let ir = fused_ir(&both);
    let s = stats_with(&both, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays), (2, 0), "{ir}");
    let (a, b) = run_with(&both, &fused()).unwrap();
    let (c, d) = run_with(&both, &unfused()).unwrap();
    assert_eq!((a.to_vec(), b.to_vec()), (c.to_vec(), d.to_vec()));
    // a zip whose elements compute stays manifest
    let w = xs.zip_with(&ys, |x, y| lift((x.sin(), y)));
    let both = lift_acc((w.map(|p| p.fst() * p.snd()).fold(0.0, |a, b| a + b), w.map(|p| p.fst() - p.snd())));
    let s = stats_with(&both, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays), (3, 1), "{}", fused_ir(&both));
}

#[test]
fn uses_that_read_only_the_shape_do_not_block_fusion() {
    let xs = use_array(vector(9, |i| i as f32));
    let ys = xs.map(|x| x * x + 1.0);
    // ys is used by the fold and, for its size only, by the map
    let total = ys.fold(0.0, |a, b| a + b);
    let mean = total.map(move |t| t / ys.size().cast::<f32>());
    let ir = fused_ir(&mean);
    let s = stats_with(&mean, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays), (2, 1), "{ir}");
    // the one intermediate is the fold's scalar, not ys
    assert_eq!(s.intermediate_bytes, 4, "{ir}");
    assert_eq!(run_with(&mean, &fused()).unwrap().to_vec(), run_with(&mean, &unfused()).unwrap().to_vec());
}

#[test]
fn producers_fuse_through_tuples_of_arrays() {
    let xs = use_array(vector(7, |i| i as f32));
    let pair = lift_acc((xs.map(|x| x + 1.0), xs.map(|x| x * 2.0)));
    let (a, b) = pair.unlift();
    let r = a.zip_with(b, |p, q| p - q).fold(0.0, |s, x| s + x);
    let ir = fused_ir(&r);
    insta::assert_snapshot!(ir);
    let s = stats_with(&r, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays), (1, 0), "{ir}");
    assert_eq!(run_with(&r, &fused()).unwrap().value(), run_with(&r, &unfused()).unwrap().value());
}

#[test]
fn acond_branches_and_awhile_bodies_are_fused_inside() {
    let xs = use_array(vector(5, |i| i as f32));
    let c = acond(xs.size().gt(3), xs.map(|x| x + 1.0).reverse(), xs.map(|x| x - 1.0));
    let ir = fused_ir(&c);
    let s = stats_with(&c, &fused()).unwrap();
    // one kernel per branch; only the taken one runs
    assert_eq!((s.kernels, s.launches, s.intermediate_arrays), (2, 1, 0), "{ir}");
    let w = awhile(
        |v: Acc<Vector<f32>>| v.fold(0.0, |a, b| a + b).map(|t| t.lt(1000.0f32)),
        |v| v.map(|x| x * 2.0 + 1.0).reverse(),
        xs,
    );
    let ir = fused_ir(&w);
    insta::assert_snapshot!(ir);
    let s = stats_with(&w, &fused()).unwrap();
    // each iteration: the predicate's fold and the body's one generate
    assert_eq!(s.kernels, 3, "{ir}");
    assert_eq!(run_with(&w, &fused()).unwrap().to_vec(), run_with(&w, &unfused()).unwrap().to_vec());
}

#[test]
fn stencils_embed_only_producers_cheap_to_recompute() {
    let xs = use_array(vector(12, |i| (i * i % 5) as f32));
    let blur =
        |a: &Acc<Vector<f32>>| a.stencil(|[l, c, r]: [Exp<f32>; 3]| (l + c * 2.0) + r, Boundary::clamp());
    // a reversal is index arithmetic: embedded
    let cheap = blur(&xs.reverse());
    let s = stats_with(&cheap, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays), (1, 0), "{}", fused_ir(&cheap));
    // a map with a transcendental function would be recomputed three
    // times per element: it stays manifest
    let costly = blur(&xs.map(|x| x.exp()));
    let s = stats_with(&costly, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays), (2, 1), "{}", fused_ir(&costly));
    for r in [cheap, costly] {
        assert_eq!(run_with(&r, &fused()).unwrap().to_vec(), run_with(&r, &unfused()).unwrap().to_vec());
    }
}

#[test]
fn a_replicated_producer_is_computed_once_when_its_elements_are_dear() {
    // (Note [Replicated work]) a gradient's `X^T r`: `r` read once for
    // every column of `x`
    let x =
        use_array(Matrix::from_vec(dim2(9, 4), (0..36).map(|i| (i % 7) as f32 * 0.25).collect()).unwrap());
    let z = use_array(vector(9, |i| i as f32 * 0.5 - 2.0));
    let weighted = |r: &Acc<Vector<f32>>| {
        let (_, d) = unindex2(x.shape());
        x.transpose().zip_with(r.replicate(index0().fixed(d).all()), |a, b| a * b).fold(0.0f32, |a, b| a + b)
    };
    // a sigmoid, with its `exp`: computed once per element of `r`, an
    // array of 9, not once per element of the 4 x 9 product
    let dear = weighted(&z.map(|v| 1.0f32 / (1.0f32 + (-v).exp())));
    let ir = fused_ir(&dear);
    let s = stats_with(&dear, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays, s.intermediate_bytes), (2, 1, 36), "{ir}");
    assert_eq!(count(&ir, "exp("), 1, "{ir}");
    // an affine map costs about what a load costs: still fused
    let cheap = weighted(&z.map(|v| v * 0.5 + 1.0));
    let s = stats_with(&cheap, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays), (1, 0), "{}", fused_ir(&cheap));
    // so is a manifest argument, and a replicate that adds no dimension
    let plain = weighted(&z);
    assert_eq!(stats_with(&plain, &fused()).unwrap().kernels, 1);
    let same = z.map(|v| v.exp()).replicate(index0().all()).fold(0.0f32, |a, b| a + b);
    let s = stats_with(&same, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays), (1, 0), "{}", fused_ir(&same));
    for r in [dear, cheap, plain] {
        let (a, b) = (run_with(&r, &fused()).unwrap().to_vec(), run_with(&r, &unfused()).unwrap().to_vec());
        assert_eq!(
            a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }
}

#[test]
fn an_element_read_through_a_fused_backpermute_is_checked_at_the_users_line() {
    let xs = use_array(vector(4, |i| i as f32));
    let line = line!() + 1;
    let bad = xs.map(|x| x + 1.0).backpermute(dim1(3), |ix| index1(unindex1(ix) * 2));
    let err = run_with(&bad.fold(0.0, |a, b| a + b), &fused()).unwrap_err();
    assert!(matches!(err, accelerate::Error::IndexOutOfBounds { .. }), "{err}");
    assert!(err.to_string().contains(&format!("fusion.rs:{line}:")), "{err}");
    let err = run_with(&bad.fold(0.0, |a, b| a + b), &unfused()).unwrap_err();
    assert!(matches!(err, accelerate::Error::IndexOutOfBounds { .. }), "{err}");
}

#[test]
fn fused_programs_pass_the_verifier_and_keep_delayed_arrays_in_consumers() {
    // the verifier runs after every phase; a delayed array anywhere but a
    // consumer's argument would be rejected there
    let xs = use_array(vector(6, |i| i as f32));
    let progs: Vec<Acc<Vector<f32>>> = vec![
        xs.map(|x| x + 1.0).scanl(0.0, |a, b| a + b),
        xs.reverse().scanr1(|a, b| a * b),
        xs.map(|x| x * 2.0).permute(|a, b| a + b, fill(dim1(3), 0.0f32), |ix| just(index1(unindex1(ix) % 3))),
    ];
    for p in progs {
        let ir = fused_ir(&p);
        assert_eq!(count(&ir, "delayed"), 1, "{ir}");
        assert_eq!(run_with(&p, &fused()).unwrap().to_vec(), run_with(&p, &unfused()).unwrap().to_vec());
    }
}

#[test]
fn a_reshaped_producer_is_delayed_and_keeps_reshapes_size_check() {
    // fold_all flattens with a reshape: the zip_with still fuses into it
    let m = Matrix::from_vec(dim2(3, 4), (0..12).map(|i| i as f32).collect()).unwrap();
    let (xs, ys) = (use_array(m.clone()), use_array(m));
    let total = xs.zip_with(ys, |a, b| a * b).fold_all(0.0, |a, b| a + b);
    let s = stats_with(&total, &fused()).unwrap();
    assert_eq!((s.kernels, s.intermediate_arrays), (1, 0), "{}", fused_ir(&total));
    let want: f32 = (0..12).map(|i| (i * i) as f32).sum();
    assert_eq!(run_with(&total, &fused()).unwrap().value(), want);
    // a reshape to another size is an error whether or not it is fused
    let line = line!() + 1;
    let bad = xs.map(|x| x + 1.0).reshape(dim1(5)).fold(0.0, |a, b| a + b);
    for config in [fused(), unfused()] {
        let err = run_with(&bad, &config).unwrap_err();
        assert!(matches!(err, accelerate::Error::ReshapeSize { .. }), "{err}");
        assert!(err.to_string().contains(&format!("fusion.rs:{line}:")), "{err}");
    }
}

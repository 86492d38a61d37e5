//! The simplifier: constant folding with the run-time rules (wrapping,
//! rounding, NaN), identities that hold for every value, let-floating and
//! shrinking. Snapshots show the IR after the `simplify` phase.

use accelerate::prelude::*;
use accelerate::{explain_with, run_with, Config};

mod common;
use common::callput;

/// The text of the last phase (simplify) of `explain`.
fn simplified<A: Arrays>(acc: &Acc<A>) -> String {
    let all = explain_with(acc, &Config::default().with_fusion(false)).unwrap();
    let at = all.find("== simplify ==").expect("a simplify phase");
    // without the plan that follows the IR phases
    all[at..].split("== plan ==").next().unwrap_or_default().to_string()
}

fn both_ways<A: Arrays>(acc: &Acc<A>) -> (A, A) {
    let on = run_with(acc, &Config::default()).unwrap();
    let off = run_with(acc, &Config::default().with_simplify(false)).unwrap();
    (on, off)
}

#[test]
fn figure_2_folds_to_a_constant() {
    let e = generate(index0(), |_| {
        let inc = |x: &Exp<i64>| x + 1;
        let nine = {
            let three = inc(&constant(2));
            &three * &three
        };
        inc(&nine) - nine
    });
    let ir = simplified(&e);
    insta::assert_snapshot!(ir);
    assert!(ir.contains("(\\x0 -> 1)"), "{ir}");
}

#[test]
fn folding_wraps_integers_and_rounds_floats_as_run_time_does() {
    let e = generate(index0(), |_| {
        let big = constant(i32::MAX) + 1i32; // wraps to MIN
        let f = constant(0.1f32) + 0.2f32; // rounded in f32, not f64
        let nan = constant(f32::NAN) * 0.0f32;
        let z = constant(-0.0f32) + 0.0f32; // +0.0 by IEEE
        lift((big, f, nan, z))
    });
    let ir = simplified(&e);
    assert!(ir.contains(&format!("{}:i32", i32::MIN)), "{ir}");
    assert!(ir.contains(&format!("{:?}:f32", 0.1f32 + 0.2f32)), "{ir}");
    let (on, off) = both_ways(&e);
    let (a, b) = (on.value(), off.value());
    assert_eq!(a.0, i32::MIN);
    assert_eq!(a.1.to_bits(), b.1.to_bits());
    assert!(a.2.is_nan() && b.2.is_nan());
    assert_eq!(a.3.to_bits(), 0.0f32.to_bits());
    assert_eq!(a.3.to_bits(), b.3.to_bits());
}

#[test]
fn float_identities_keep_signed_zero_and_nan() {
    let xs = use_array(Vector::from_elems(vec![-0.0f32, f32::NAN, 1.5]));
    let ys = xs.map(|x| lift((x + 0.0f32, x - 0.0f32, x + -0.0f32, x * 1.0f32)));
    let ir = simplified(&ys);
    // x + 0.0 is not x (for x = -0.0) and x * 1.0 may change a NaN: kept;
    // x - 0.0 and x + (-0.0) are x for every x: simplified
    assert!(ir.contains("x0 + 0.0:f32") && ir.contains("x0 * 1.0:f32"), "{ir}");
    assert!(!ir.contains("- 0.0") && !ir.contains("-0.0"), "{ir}");
    let (on, off) = both_ways(&ys);
    let bits = |v: Vec<(f32, f32, f32, f32)>| {
        v.iter()
            .map(|t| [t.0, t.1, t.2, t.3].map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }))
            .collect::<Vec<_>>()
    };
    assert_eq!(bits(on.to_vec()), bits(off.to_vec()));
}

#[test]
#[allow(clippy::erasing_op, clippy::identity_op)] // the identities are the point
fn integer_identities_disappear() {
    let xs = use_array(Vector::from_elems(vec![3i64, -7]));
    let ys = xs.map(|x| (x + 0i64) * 1i64 - 0i64 + (0i64 + x * 0i64));
    let ir = simplified(&ys);
    insta::assert_snapshot!(ir);
    assert_eq!(both_ways(&ys).0.to_vec(), vec![3, -7]);
}

#[test]
fn a_constant_division_by_zero_is_left_for_run_time_to_report() {
    let e = generate(index0(), |_| constant(7i32) / 0i32);
    let ir = simplified(&e);
    assert!(ir.contains("7:i32 / 0:i32"), "{ir}");
    let err = run_with(&e, &Config::default()).unwrap_err();
    assert!(matches!(err, Error::DivisionByZero { .. }), "{err}");
    assert!(err.to_string().contains("tests/simplify.rs"), "{err}");
}

#[test]
fn nested_lets_float_into_a_chain_and_single_uses_are_inlined() {
    let acc = generate(index1(1i64), |ix| {
        let mut x = unindex1(ix) + 1;
        for _ in 0..6 {
            x = &x + &x;
        }
        let once = &x * 3i64; // used once: inlined
        let _unused = &x - 1i64; // never used: no let at all
        once + 1i64
    });
    let ir = simplified(&acc);
    insta::assert_snapshot!(ir);
    assert!(!ir.contains("= let"), "lets in bound positions remain: {ir}");
    let (on, off) = both_ways(&acc);
    assert_eq!(on.to_vec(), off.to_vec());
}

#[test]
fn blackscholes_after_simplification() {
    let opts = Vector::from_elems(vec![(30.0f32, 25.0f32, 1.5f32), (10.0, 12.0, 0.5)]);
    let acc = use_array(opts).map(callput);
    let ir = simplified(&acc);
    insta::assert_snapshot!(ir);
    // (r + v * v * 0.5) is folded to one constant, computed in f32
    let folded = 0.02f32 + 0.3f32 * 0.3f32 * 0.5f32;
    assert!(ir.contains(&format!("{folded:?}:f32")), "{ir}");
    let (on, off) = both_ways(&acc);
    let bits = |v: Vec<(f32, f32)>| v.iter().map(|(a, b)| (a.to_bits(), b.to_bits())).collect::<Vec<_>>();
    assert_eq!(bits(on.to_vec()), bits(off.to_vec()));
}

#[test]
fn a_projection_does_not_drop_a_component_that_can_fail() {
    let xs = use_array(Vector::from_elems(vec![1i32, 0]));
    // (x, 10 / x).0 must still report the division by zero for x = 0? No:
    // the interpreter evaluates the whole tuple, so the simplifier keeps it.
    let ys = xs.map(|x| lift((x, constant(10i32) / x)).fst());
    let ir = simplified(&ys);
    assert!(ir.contains("10:i32 / x0"), "{ir}");
    assert!(matches!(run_with(&ys, &Config::default()), Err(Error::DivisionByZero { .. })));
    // a component that cannot fail is dropped
    let zs = xs.map(|x| lift((x * 2i32, x + 1i32)).fst());
    assert!(!simplified(&zs).contains("x0 + 1"), "{}", simplified(&zs));
}

#[test]
#[allow(clippy::erasing_op)] // x * 0 is what the simplifier must not drop here
fn simplification_keeps_a_deferred_error_that_a_dropped_variable_carries() {
    // d fails for x = 0; the tuple reads d, so the program fails, with or
    // without the simplifier, though the projection does not need d
    let xs = use_array(Vector::from_elems(vec![0i32, 1]));
    let ys = xs.map(|x| {
        let d = constant(10i32) / x;
        let e = lift((x, &d)).fst();
        e * 0i32 + d * 0i32
    });
    let on = run_with(&ys, &Config::default());
    let off = run_with(&ys, &Config::default().with_simplify(false));
    assert!(matches!(off, Err(Error::DivisionByZero { .. })), "{off:?}");
    assert!(matches!(on, Err(Error::DivisionByZero { .. })), "{on:?}");
}

/// The IR after fusion (and the simplifier that follows it).
fn fused<A: Arrays>(acc: &Acc<A>) -> String {
    let all = explain_with(acc, &Config::default()).unwrap();
    let at = all.find("== fusion ==").expect("a fusion phase");
    all[at..].split("== plan ==").next().unwrap_or_default().to_string()
}

#[test]
fn a_read_at_its_own_index_of_an_array_of_the_same_shape_is_not_checked() {
    // Note [Own-index checks]: fusion reads `g` inside the second generate
    // behind `bounds_check(shape(g), i)`; the shapes are the same term, so
    // the check cannot fail and goes
    let xs = use_array(Vector::from_elems(vec![1.0f64, 2.0, 3.0]));
    let g = generate(xs.shape(), |i| xs.index(i) * 2.0);
    let h = generate(g.shape(), |i| g.index(i) + 1.0);
    let ir = fused(&h);
    assert!(!ir.contains("bounds_check"), "{ir}");
    assert_eq!(run_with(&h, &Config::default()).unwrap().to_vec(), vec![3.0, 5.0, 7.0]);
}

#[test]
fn reads_at_the_components_of_its_own_index_are_not_checked() {
    // Note [Own-index checks]: the lifted n-body's fold reads body `j` and
    // body `i` at index `(i, j)` of an `n`x`n` domain made of the bodies'
    // extent; the zip of the bodies' arrays is fused into it behind checks
    // against its shape, an extent of the domain in each case
    let xs = use_array(Vector::from_elems(vec![1.0f64, 2.0, 3.0]));
    let ys = use_array(Vector::from_elems(vec![10.0f64, 20.0, 30.0]));
    let z = xs.zip(&ys);
    let n = z.length();
    let h = generate(index2(n.clone(), n), |ix| {
        let (i, j) = unindex2(ix);
        z.index(index1(j)).fst() - z.index(index1(i)).snd()
    });
    let ir = fused(&h);
    assert!(!ir.contains("bounds_check"), "{ir}");
    let want: Vec<f64> = (0..9).map(|k| [1.0, 2.0, 3.0][k % 3] - [10.0, 20.0, 30.0][k / 3]).collect();
    assert_eq!(run_with(&h, &Config::default()).unwrap().to_vec(), want);
    // a column one past the bodies' extent is checked, and out of bounds
    let n = z.length();
    let h = generate(index2(n.clone(), n + 1), |ix| {
        let (i, j) = unindex2(ix);
        z.index(index1(j)).fst() - z.index(index1(i)).snd()
    });
    assert!(fused(&h).contains("bounds_check"));
    let err = run_with(&h, &Config::default()).unwrap_err();
    assert!(matches!(&err, Error::IndexOutOfBounds { .. }), "{err:?}");
}

#[test]
fn a_read_at_its_own_index_of_an_array_of_another_shape_stays_checked() {
    let xs = use_array(Vector::from_elems(vec![1.0f64, 2.0, 3.0]));
    let g = generate(xs.shape(), |i| xs.index(i) * 2.0);
    let line = line!() + 1;
    let h = generate(index1(5), |i| g.index(i) + 1.0);
    let ir = fused(&h);
    assert!(ir.contains("bounds_check"), "{ir}");
    let err = run_with(&h, &Config::default()).unwrap_err();
    assert!(matches!(&err, Error::IndexOutOfBounds { shape, .. } if shape == &[3]), "{err:?}");
    assert!(err.to_string().contains(&format!("simplify.rs:{line}:")), "{err}");
}

/// A let bound to a loop floats out of a primitive's operand (Note [Loops
/// floated out of operands] in `opt/simplify.rs`), the other operands
/// weakened past it, so that the loop is bound at the top of the element;
/// not out of the second operand of `&&`, which may not run.
#[test]
fn a_loop_floats_out_of_a_primitives_operand() {
    let xs = use_array(Vector::from_elems(vec![3i64, 0, 5]));
    let sums = |x: &Exp<i64>| {
        let (_, a, b) = while_loop(
            lift((constant(0i64), constant(0i64), constant(1i64))),
            {
                let x = x.clone();
                move |s: &Exp<(i64, i64, i64)>| s.unlift().0.lt(&x)
            },
            |s: &Exp<(i64, i64, i64)>| {
                let (i, a, b) = s.unlift();
                lift((&i + 1i64, &a + &i, &b * 2i64))
            },
        )
        .unlift();
        (a, b)
    };
    // the loop's two results meet inside `max`, under a division by `x + 1`
    let ys = xs.map(move |x| {
        let (a, b) = sums(x);
        (&a * &a).max(&b + &a) / (x + 1i64)
    });
    let ir = simplified(&ys);
    let at = |s: &str| ir.find(s).unwrap_or_else(|| panic!("no {s} in {ir}"));
    assert!(at("= while") < at("max("), "the loop is not bound above the primitive: {ir}");
    let (on, off) = both_ways(&ys);
    assert_eq!(on.to_vec(), off.to_vec());
    let want = |x: i64| {
        let (a, b) = ((0..x).sum::<i64>(), 1i64 << x);
        (a * a).max(b + a) / (x + 1)
    };
    assert_eq!(on.to_vec(), [3, 0, 5].map(want).to_vec());
    // in `&&`'s second operand the loop stays where it is
    let zs = xs.map(move |x| {
        let (a, b) = sums(x);
        x.gt(1i64).and((&a * &a).lt(&b + &a))
    });
    let ir = simplified(&zs);
    let at = |s: &str| ir.find(s).unwrap_or_else(|| panic!("no {s} in {ir}"));
    assert!(at("= while") > at("&&"), "floated out of &&: {ir}");
    let (on, off) = both_ways(&zs);
    assert_eq!(on.to_vec(), off.to_vec());
}

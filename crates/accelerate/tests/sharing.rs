//! Sharing recovery (ICFP'13 §3): the lets recovered from the user's
//! program, shown by snapshots of the IR after the sharing phase.

use accelerate::prelude::*;
use accelerate::{explain_with, run_with, Config};

mod common;
use common::callput;
use std::cell::Cell;

/// The IR after sharing recovery (the simplifier, which runs next, has
/// its own tests in `simplify.rs`).
fn sharing_ir<A: Arrays>(acc: &Acc<A>) -> String {
    explained_ir(acc, &Config::default().with_simplify(false).with_fusion(false))
}

fn unshared_ir<A: Arrays>(acc: &Acc<A>) -> String {
    // array and scalar sharing recovery both off
    explained_ir(acc, &Config::default().with_sharing(false, false).with_simplify(false).with_fusion(false))
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// The paper's Figure 2 term, `inc` being a Rust closure (a meta-level
/// function, inlined at each call, as in the paper's Haskell):
/// let inc = (+) 1 in let nine = let three = inc 2 in (*) three three
/// in (-) (inc nine) nine
#[test]
fn figure_2_recovers_nine_and_three_and_no_other_lets() {
    let e = generate(index0(), |_| {
        let inc = |x: &Exp<i64>| x + 1;
        let nine = {
            let three = inc(&constant(2));
            &three * &three
        };
        inc(&nine) - nine
    });
    let ir = sharing_ir(&e);
    insta::assert_snapshot!(ir);
    assert_eq!(count(&ir, "let "), 2, "{ir}");
    assert_eq!(run_with(&e, &Config::default()).unwrap().value(), 1);
}

fn blackscholes() -> Acc<Vector<(f32, f32)>> {
    let opts = Vector::from_elems(vec![(30.0f32, 25.0f32, 1.5f32), (10.0, 12.0, 0.5)]);
    use_array(opts).map(callput)
}

#[test]
fn blackscholes_computes_each_shared_term_once() {
    let ir = sharing_ir(&blackscholes());
    insta::assert_snapshot!(ir);
    // v_sqrtT: the only sqrt; d1: the only ln; x_expRT and cnd' of d1 and
    // of d2: the three exps; cnd d1 and cnd d2 each select once.
    assert_eq!(count(&ir, "sqrt("), 1, "{ir}");
    assert_eq!(count(&ir, "log("), 1, "{ir}");
    assert_eq!(count(&ir, "exp("), 3, "{ir}");
    assert_eq!(count(&ir, "if "), 2, "{ir}");
    // without sharing recovery the same program repeats them
    let unshared = unshared_ir(&blackscholes());
    assert!(count(&unshared, "exp(") > 3 && count(&unshared, "sqrt(") > 1, "{unshared}");
}

#[test]
fn blackscholes_with_and_without_sharing_agree() {
    let a = run_with(&blackscholes(), &Config::default()).unwrap();
    let b = run_with(&blackscholes(), &Config::default().with_sharing(false, false)).unwrap();
    let bits = |v: Vec<(f32, f32)>| v.iter().map(|(c, p)| (c.to_bits(), p.to_bits())).collect::<Vec<_>>();
    assert_eq!(bits(a.to_vec()), bits(b.to_vec()));
}

/// Without sharing recovery a foreign call's fallback reads the arrays of
/// its tuple argument inside parallel functions as `prj` terms, which the
/// lifter takes as arrays from outside the context: `compact_in_language`
/// is the fallback of `compact`, and a `Foreign` without implementations
/// runs it on every backend.
#[test]
fn a_fallback_reading_its_tuple_argument_inside_functions_runs_without_sharing() {
    type In = (Vector<bool>, Vector<i32>);
    let f: Foreign<In, (Vector<i32>, Scalar<i64>)> = Foreign::new("compact_without_implementations");
    let xs: Vec<i32> = (0..40).map(|i| i * 7 - 100).collect();
    let program = || {
        let (mask, values) = (
            use_array(Vector::from_elems(xs.iter().map(|x| x % 3 == 0).collect())),
            use_array(Vector::from_elems(xs.clone())),
        );
        f.call(
            |args| {
                let (mask, values) = args.unlift();
                compact_in_language(mask, values)
            },
            lift_acc((mask, values)),
        )
    };
    let want: Vec<i32> = xs.iter().copied().filter(|x| x % 3 == 0).collect();
    for sharing in [true, false] {
        let (kept, count) = run_with(&program(), &Config::default().with_sharing(sharing, sharing)).unwrap();
        assert_eq!((kept.to_vec(), count.value()), (want.clone(), want.len() as i64), "sharing {sharing}");
    }
}

/// x1 = x0 + x0, x2 = x1 + x1, ..., xn: each of x0 .. x(n-1) is shared.
fn doubling_chain(n: usize) -> Acc<Vector<i64>> {
    generate(index1(1i64), move |ix| {
        let mut x = unindex1(ix) + 1;
        for _ in 0..n {
            x = &x + &x;
        }
        x
    })
}

#[test]
fn chain_of_64_doublings_becomes_64_lets_not_2_to_the_64_nodes() {
    let acc = doubling_chain(64);
    let ir = sharing_ir(&acc);
    assert_eq!(count(&ir, "let "), 64, "{ir}");
    assert_eq!(count(&ir, " + "), 65, "{ir}");
    // 1 * 2^64 wraps to 0 (integer arithmetic wraps)
    assert_eq!(run_with(&acc, &Config::default()).unwrap().to_vec(), vec![0]);
}

#[test]
fn without_scalar_sharing_a_doubling_chain_unfolds_exponentially() {
    let ir = unshared_ir(&doubling_chain(10));
    assert_eq!(count(&ir, " + "), (1 << 11) - 1);
    assert_eq!(count(&ir, "let "), 0);
}

#[test]
fn an_array_used_twice_is_let_bound_once() {
    let xs = use_array(Vector::from_elems(vec![1i32, 2, 3]));
    let ys = xs.map(|x| x * 10);
    let zs = ys.zip_with(&ys, |a, b| a + b);
    let ir = sharing_ir(&zs);
    insta::assert_snapshot!(ir);
    assert_eq!(count(&ir, "let a"), 1, "{ir}");
    assert_eq!(count(&ir, "map "), 1, "{ir}");
    assert_eq!(run_with(&zs, &Config::default()).unwrap().to_vec(), vec![20, 40, 60]);
    // without array sharing the map is duplicated
    assert_eq!(count(&unshared_ir(&zs), "map "), 2);
}

#[test]
fn a_term_using_a_lambda_variable_stays_inside_that_lambda() {
    let xs = use_array(Vector::from_elems(vec![1i64, 5, 9]));
    let k = constant(3i64) * constant(7i64); // shared, closed: may float out
    let ys = xs.map(move |x| {
        let y = x * &k; // uses x: bound inside the function
        let w = while_loop(
            &y,
            |v| v.lt(&y + &y + &k), // y is used by both loop functions
            |v| {
                let z = v + 1; // uses the loop variable: bound inside the body
                &z * &z - &z * &z + v + y.min(1)
            },
        );
        w + &y
    });
    let ir = sharing_ir(&ys);
    insta::assert_snapshot!(ir);
    let r = run_with(&ys, &Config::default()).unwrap().to_vec();
    let reference: Vec<i64> = [1i64, 5, 9]
        .iter()
        .map(|&x| {
            let y = x * 21;
            let mut v = y;
            while v < y + y + 21 {
                v += y.min(1);
            }
            v + y
        })
        .collect();
    assert_eq!(r, reference);
}

/// Note [Floating shared terms]: `t` is used inside the shared term `s` and
/// also beside `s`'s first occurrence; `t` must be bound above `s`.
#[test]
fn a_shared_term_used_inside_another_shared_term_is_bound_outside_it() {
    let e = generate(index0(), |_| {
        let t = constant(5i64) * constant(4i64);
        let s = -&t;
        let a = &s * t;
        let b = s - 1;
        a + b
    });
    let ir = sharing_ir(&e);
    insta::assert_snapshot!(ir);
    assert_eq!(run_with(&e, &Config::default()).unwrap().value(), -400 - 21);
}

#[test]
fn arrays_read_by_scalar_code_are_let_bound_at_the_array_level() {
    let xs = use_array(Vector::from_elems(vec![1.0f32, 2.0, 4.0]));
    let total = xs.fold(0.0f32, |a, b| a + b);
    let normalised = xs.map(move |x| x / total.the());
    let ir = sharing_ir(&normalised);
    insta::assert_snapshot!(ir);
    assert_eq!(
        run_with(&normalised, &Config::default()).unwrap().to_vec(),
        vec![1.0 / 7.0, 2.0 / 7.0, 4.0 / 7.0]
    );
}

#[test]
fn a_compiled_program_refers_to_its_arguments_by_variables() {
    let f = accelerate::compile_with(
        |xs: Acc<Vector<i32>>, ys: Acc<Vector<i32>>| {
            let s = xs.zip_with(ys, |a, b| a * b);
            s.zip_with(&s, |a, b| a - b).fold(0, |a, b| a + b)
        },
        Config::default().with_simplify(false).with_fusion(false),
    )
    .unwrap();
    insta::assert_snapshot!(ir_phases(f.explain()));
    let xs = Vector::from_elems(vec![1, 2, 3]);
    let ys = Vector::from_elems(vec![4, 5, 6]);
    assert_eq!(f.run((&xs, &ys)).unwrap().value(), 0);
}

#[test]
fn awhile_loop_bodies_keep_their_sharing_inside() {
    let xs = use_array(Vector::from_elems(vec![1i32, 2, 3]));
    let r = awhile(
        |a| unit(a.fold(0, |x, y| x + y).the().lt(100)),
        |a| {
            let d = a.map(|x| x * 2);
            d.zip_with(&d, |p, q| p + q - q)
        },
        xs,
    );
    let ir = sharing_ir(&r);
    insta::assert_snapshot!(ir);
    assert_eq!(run_with(&r, &Config::default()).unwrap().to_vec(), vec![32, 64, 96]);
}

#[test]
fn an_expression_smuggled_out_of_its_closure_is_an_error_not_a_panic() {
    let leaked: Cell<Option<Exp<i32>>> = Cell::new(None);
    let xs = use_array(Vector::from_elems(vec![1i32, 2]));
    let _ = xs.map(|x| {
        leaked.set(Some(x * 2));
        x.clone()
    });
    let escaped = leaked.take().unwrap();
    let bad = generate(index1(2i64), move |_| escaped);
    let err = run_with(&bad, &Config::default()).unwrap_err();
    assert!(matches!(err, Error::EscapedVariable { .. }), "escaped, not nested parallelism: {err}");
    assert!(err.to_string().contains("tests/sharing.rs"), "{err}");
}

#[test]
fn a_program_and_its_arrays_are_freed_when_its_last_handle_is_dropped() {
    // (Note [Reference-counted handles]: no `scope` needed)
    let xs = Vector::from_elems(vec![1i32, 2, 3]);
    let users = || std::sync::Arc::strong_count(xs.data());
    let before = users();
    let outside = use_array(xs.clone());
    let ys = outside.map(|x| x + 1);
    drop(outside);
    // the map keeps the array it reads alive, through the node of `use_array`
    assert_eq!(users(), before + 1);
    assert_eq!(run_with(&ys, &Config::default()).unwrap().to_vec(), vec![2, 3, 4]);
    let zs = ys.map(|x| x * 100);
    drop(ys);
    assert_eq!(run_with(&zs, &Config::default()).unwrap().to_vec(), vec![200, 300, 400]);
    assert_eq!(users(), before + 1);
    // the last handle gone, the graph and the array it held are freed
    drop(zs);
    assert_eq!(users(), before);
}

#[test]
fn a_chain_of_20_000_doublings_converts_and_runs_on_a_small_stack() {
    // every recursive pass (sharing, conversion, verifier, interpreter,
    // printer, drop) must survive nesting as deep as the program is long
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(|| {
            let acc = doubling_chain(20_000);
            let ir = sharing_ir(&acc);
            assert_eq!(count(&ir, "let "), 20_000);
            run_with(&acc, &Config::default()).unwrap().to_vec()
        })
        .unwrap();
    assert_eq!(handle.join().unwrap(), vec![0]);
}

#[test]
fn an_array_smuggled_out_of_a_compiled_function_is_an_escaped_variable() {
    let leaked: Cell<Option<Acc<Vector<i32>>>> = Cell::new(None);
    let f = accelerate::compile(|xs: Acc<Vector<i32>>| {
        let ys = xs.map(|x| x + 1);
        leaked.set(Some(ys.clone()));
        ys
    })
    .unwrap();
    let xs = Vector::from_elems(vec![1, 2]);
    assert_eq!(f.run(&xs).unwrap().to_vec(), vec![2, 3]);
    let err = run_with(&leaked.take().unwrap(), &Config::default()).unwrap_err();
    assert!(matches!(err, Error::EscapedVariable { .. }), "{err}");
}

#[test]
fn the_dot_drawing_shows_a_shared_array_once_with_two_readers() {
    let xs = use_array(Vector::from_elems(vec![1i32, 2, 3]));
    let ys = xs.map(|x| x * 10);
    let zs = ys.zip_with(&ys, |a, b| a + b).fold(0, |a, b| a + b);
    let dot = accelerate::explain_dot_with(&zs, &Config::default().with_fusion(false)).unwrap();
    insta::assert_snapshot!(dot);
    assert_eq!(dot.matches("label=\"map").count(), 1, "{dot}");
    // the map's node feeds the zip_with twice
    let map_node =
        dot.lines().find(|l| l.contains("label=\"map")).unwrap().split_whitespace().next().unwrap();
    assert_eq!(dot.matches(&format!("{map_node} -> ")).count(), 2, "{dot}");
}

/// The IR phases of `explain`'s text, without the plan that follows them.
fn ir_phases(explained: String) -> String {
    explained.split("== plan ==").next().unwrap_or_default().to_string()
}

fn explained_ir<A: Arrays>(acc: &Acc<A>, c: &Config) -> String {
    ir_phases(explain_with(acc, c).expect("converts"))
}

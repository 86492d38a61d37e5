//! Common-subexpression elimination (`trafo::cse`, a step of the
//! simplifier): repeated terms are computed once, never at the cost of work
//! on a path that did not do it, and never merging two operations that
//! would report an error at different lines. Snapshots show the IR after
//! the `simplify` phase (fusion off); the property tests compare programs
//! run with CSE on and off, errors included.

use accelerate::prelude::*;
use accelerate::{explain_with, run_with, Config};
use proptest::prelude::*;

mod common;
use common::{config, pairs, values};

/// The text of the simplify phase of `explain`, with CSE on or off.
fn simplified<A: Arrays>(acc: &Acc<A>, cse: bool) -> String {
    let all = explain_with(acc, &Config::default().with_fusion(false).with_cse(cse)).unwrap();
    let at = all.find("== simplify ==").expect("a simplify phase");
    // without the plan that follows the IR phases
    all[at..].split("== plan ==").next().unwrap_or_default().to_string()
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// Runs with CSE on and off; the two results, errors as their messages.
fn both_ways<A: Arrays>(acc: &Acc<A>) -> (Result<A, String>, Result<A, String>) {
    let run = |cse| run_with(acc, &Config::default().with_cse(cse)).map_err(|e| e.to_string());
    (run(true), run(false))
}

fn vector<T: Elt>(xs: Vec<T>) -> Acc<Vector<T>> {
    use_array(Vector::from_elems(xs))
}

#[test]
fn a_term_equal_to_a_let_bound_one_becomes_its_variable() {
    let xs = vector(vec![1.5f32, -3.0, 0.25]);
    let ys = vector(vec![2.0f32, 0.5, -8.0]);
    let zs = xs.zip_with(ys, |x, y| {
        let a = x * y; // used twice: let-bound by sharing recovery
        &a * &a + x * y // a second, unshared product
    });
    let ir = simplified(&zs, true);
    insta::assert_snapshot!(ir);
    assert_eq!(count(&ir, "x0 * x1"), 1, "{ir}");
    assert_eq!(count(&simplified(&zs, false), "x0 * x1"), 2);
    let (on, off) = both_ways(&zs);
    assert_eq!(on.unwrap().to_vec(), off.unwrap().to_vec());
}

/// A Rust helper is inlined at each call: two calls are two copies of its
/// term, which sharing recovery cannot see as one.
fn hypot1(x: &Exp<f32>) -> Exp<f32> {
    (x * x + 1.0f32).sqrt()
}

#[test]
fn a_helper_called_twice_computes_its_term_once() {
    let xs = vector(vec![0.0f32, -0.0, 3.0, f32::NAN]);
    let ys = xs.map(|x| hypot1(x) * 2.0f32 - hypot1(x));
    let ir = simplified(&ys, true);
    insta::assert_snapshot!(ir);
    assert_eq!(count(&ir, "sqrt("), 1, "{ir}");
    assert_eq!(count(&simplified(&ys, false), "sqrt("), 2);
    let (on, off) = both_ways(&ys);
    let bits = |v: Vec<f32>| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(on.unwrap().to_vec()), bits(off.unwrap().to_vec()));
}

/// `x * x + y` with a shared square inside: a term with a let of its own.
fn with_own_let(x: &Exp<i64>, y: Exp<i64>) -> Exp<i64> {
    let sq = x * x;
    &sq * &sq + y
}

#[test]
fn a_repeated_term_with_a_let_inside_is_computed_once() {
    let xs = vector(vec![3i64, -7, i64::MAX]);
    let ys = xs.map(|x| with_own_let(x, constant(5i64)) - with_own_let(x, constant(5i64)) * 3i64);
    let ir = simplified(&ys, true);
    insta::assert_snapshot!(ir);
    assert_eq!(count(&ir, "x0 * x0"), 1, "{ir}");
    let (on, off) = both_ways(&ys);
    assert_eq!(on.unwrap().to_vec(), off.unwrap().to_vec());
}

fn quotient(x: &Exp<i32>, y: &Exp<i32>) -> Exp<i32> {
    x / y
}

#[test]
fn a_term_only_under_branches_is_not_hoisted_out_of_them() {
    let xs = vector(vec![7i32, -7, 0, 12]);
    let ys = vector(vec![2i32, 0, 0, -5]);
    // each division is guarded: hoisting it would compute it (and, being a
    // let, defer its error) on paths that never asked for it
    let zs = xs.zip_with(ys, |x, y| {
        cond(y.ne(0i32), quotient(x, y), 0i32) + cond(x.gt(y).and(y.ne(0i32)), quotient(x, y), 1i32)
    });
    let ir = simplified(&zs, true);
    insta::assert_snapshot!(ir);
    // `y != 0` is computed unconditionally (a condition): bound and reused
    // under the `&&`; the divisions stay in their branches
    assert_eq!(count(&ir, "x0 / x1"), 2, "{ir}");
    assert!(!ir.contains("= x0 / x1"), "{ir}");
    let (on, off) = both_ways(&zs);
    assert_eq!(on.unwrap().to_vec(), off.unwrap().to_vec());
}

#[test]
fn a_term_computed_unconditionally_is_reused_under_a_branch() {
    let xs = vector(vec![7i32, -7, 12]);
    let ys = vector(vec![2i32, 3, -5]);
    let zs = xs.zip_with(ys, |x, y| quotient(x, y) + cond(x.gt(y), quotient(x, y), 1i32));
    let ir = simplified(&zs, true);
    insta::assert_snapshot!(ir);
    assert_eq!(count(&ir, "x0 / x1"), 1, "{ir}");
    let (on, off) = both_ways(&zs);
    assert_eq!(on.unwrap().to_vec(), off.unwrap().to_vec());
}

#[test]
fn a_term_in_a_loop_body_and_before_the_loop_is_computed_once() {
    let xs = vector(vec![1i64, 5, -3]);
    let ys = xs.map(|x| {
        let start = x * x + 1i64;
        while_loop(start, |v| v.lt(100i64), move |v| v + (x * x + 1i64).abs() + 1i64)
    });
    let ir = simplified(&ys, true);
    insta::assert_snapshot!(ir);
    assert_eq!(count(&ir, "x0 * x0"), 1, "{ir}");
    let (on, off) = both_ways(&ys);
    assert_eq!(on.unwrap().to_vec(), off.unwrap().to_vec());
}

#[test]
fn a_division_written_on_two_lines_stays_two_terms_and_each_error_names_its_line() {
    let line_a = line!() + 4;
    let line_b = line!() + 4;
    let program = |xs: Vec<i32>, ys: Vec<i32>| {
        vector(xs).zip_with(vector(ys), |x, y| {
            let a = x / y;
            let b = x / y;
            cond(x.gt(0i32), a, 0i32) + b
        })
    };
    let ir = simplified(&program(vec![1], vec![1]), true);
    assert_eq!(count(&ir, "x0 / x1"), 2, "{ir}");
    // x > 0: a is computed first; otherwise only b is
    for (x, line) in [(5, line_a), (-5, line_b)] {
        let (on, off) = both_ways(&program(vec![x], vec![0]));
        let (on, off) = (on.unwrap_err(), off.unwrap_err());
        assert!(on.contains(&format!("tests/cse.rs:{line}:")), "expected line {line}: {on}");
        assert_eq!(on, off);
    }
}

#[test]
fn float_constants_are_equal_only_by_their_bits() {
    let xs = vector(vec![-0.0f32, 0.0, 1.0]);
    // x + 0.0 and x + (-0.0) differ at x = -0.0: never merged; the two
    // NaN constants are one
    let ys = xs.map(|x| {
        let nan = || constant(f32::NAN);
        lift((x + 0.0f32, (x + -0.0f32) * 2.0f32, x * nan(), x * nan()))
    });
    let ir = simplified(&ys, true);
    assert_eq!(count(&ir, "NaN:f32"), 1, "{ir}");
    assert!(ir.contains("x0 + 0.0:f32"), "{ir}");
    let (on, off) = both_ways(&ys);
    let bits = |v: Vec<(f32, f32, f32, f32)>| {
        v.iter().map(|t| [t.0, t.1, t.2, t.3].map(f32::to_bits)).collect::<Vec<_>>()
    };
    assert_eq!(bits(on.unwrap().to_vec()), bits(off.unwrap().to_vec()));
}

#[test]
fn cse_runs_after_fusion_on_the_composed_shapes() {
    // fusion writes the intersection of the shapes once per index function
    // read: CSE binds it once per function
    let xs = use_array(Array::from_vec(dim2(3, 4), (0..12).map(|i| i as f32).collect()).unwrap());
    let ys =
        xs.map(|x| x * 2.0f32).transpose().zip_with(xs.map(|x| x + 1.0f32), |a, b| a - b).reverse().sum();
    let on = explain_with(&ys, &Config::default()).unwrap();
    let off = explain_with(&ys, &Config::default().with_cse(false)).unwrap();
    let fused =
        |s: &str| s[s.find("== fusion ==").unwrap()..].split("== plan ==").next().unwrap().to_string();
    assert!(count(&fused(&on), "intersect(") < count(&fused(&off), "intersect("), "{on}\n{off}");
    assert_eq!(
        run_with(&ys, &Config::default()).unwrap().to_vec(),
        run_with(&ys, &Config::default().with_cse(false)).unwrap().to_vec()
    );
}

#[test]
fn a_chain_of_10_000_lets_with_a_repeat_in_each_is_simplified() {
    // each step repeats a product of the previous one: 10 000 places to
    // bind, each at a different depth of the chain
    let xs = vector(vec![1i64, 2, 3]);
    let ys = xs.map(|x| {
        let mut v = x.clone();
        for i in 0..10_000i64 {
            let w = &v * 3i64 + (&v * 3i64 + i);
            v = &w - &w / 7i64;
        }
        v
    });
    // on the interpreter: this tests the simplifier, and one kernel of
    // 10 000 dependent statements would mostly test the C compiler's time
    let interp = Config::default().with_backend(accelerate::Backend::Interpreter);
    let run = |cse| run_with(&ys, &interp.clone().with_cse(cse)).map(|a| a.to_vec());
    assert_eq!(run(true).unwrap(), run(false).unwrap());
}

// ---------------------------------------------------------------------------
// Properties: the same results, and the same errors, with CSE on and off

/// A random scalar program over `x` and `y`. Subtrees repeat (`Twice`)
/// without Rust-level sharing, so CSE has something to find; `Shared` uses
/// a Rust value twice, so sharing recovery binds it; divisions come from
/// two lines so that errors can tell them apart.
#[derive(Clone, Debug)]
enum Term {
    X,
    Y,
    Const(i32),
    Add(Box<Term>, Box<Term>),
    Mul(Box<Term>, Box<Term>),
    DivHere(Box<Term>, Box<Term>),
    DivThere(Box<Term>, Box<Term>),
    /// `if a > 0 { b } else { c }`
    If(Box<Term>, Box<Term>, Box<Term>),
    /// `if a > 0 && b > 0 { c } else { 0 }`, `&&` short-circuiting
    IfBoth(Box<Term>, Box<Term>, Box<Term>),
    /// the term built twice, as two copies: `t + t * 3`
    Twice(Box<Term>),
    /// one copy used three times: `t * t + t`
    Shared(Box<Term>),
    /// a loop counting from `t & 15` up past 40 in steps of 7
    Loop(Box<Term>),
}

fn term() -> impl Strategy<Value = Term> {
    let leaf = prop_oneof![
        Just(Term::X),
        Just(Term::Y),
        prop_oneof![Just(0), Just(1), Just(-1), Just(i32::MIN), -5i32..5].prop_map(Term::Const),
    ];
    leaf.prop_recursive(5, 48, 3, |t| {
        let b = move || t.clone().prop_map(Box::new);
        prop_oneof![
            1 => (b(), b()).prop_map(|(a, c)| Term::Add(a, c)),
            1 => (b(), b()).prop_map(|(a, c)| Term::Mul(a, c)),
            1 => (b(), b()).prop_map(|(a, c)| Term::DivHere(a, c)),
            1 => (b(), b()).prop_map(|(a, c)| Term::DivThere(a, c)),
            1 => (b(), b(), b()).prop_map(|(a, c, d)| Term::If(a, c, d)),
            1 => (b(), b(), b()).prop_map(|(a, c, d)| Term::IfBoth(a, c, d)),
            2 => b().prop_map(Term::Twice),
            1 => b().prop_map(Term::Shared),
            1 => b().prop_map(Term::Loop),
        ]
    })
}

fn build(t: &Term, x: &Exp<i32>, y: &Exp<i32>) -> Exp<i32> {
    let go = |t: &Term| build(t, x, y);
    match t {
        Term::X => x.clone(),
        Term::Y => y.clone(),
        Term::Const(c) => constant(*c),
        Term::Add(a, b) => go(a) + go(b),
        Term::Mul(a, b) => go(a) * go(b),
        Term::DivHere(a, b) => go(a) / go(b),
        Term::DivThere(a, b) => go(a) / go(b),
        Term::If(a, b, c) => cond(go(a).gt(0i32), go(b), go(c)),
        Term::IfBoth(a, b, c) => cond(go(a).gt(0i32).and(go(b).gt(0i32)), go(c), 0i32),
        Term::Twice(a) => go(a) + go(a) * 3i32,
        Term::Shared(a) => {
            let v = go(a);
            &v * &v + &v
        }
        Term::Loop(a) => while_loop(go(a) & 15i32, |v| v.lt(40i32), move |v| v + 7i32 + (x & 1i32)),
    }
}

proptest! {
    #![proptest_config(config(96))]

    #[test]
    fn programs_give_the_same_results_and_errors_with_and_without_cse(
        t in term(),
        xys in pairs::<i32>(),
    ) {
        let (on, off) = {
            let xs = vector(xys.iter().map(|p| p.0).collect());
            let ys = vector(xys.iter().map(|p| p.1).collect());
            let zs = xs.zip_with(ys, |x, y| build(&t, x, y));
            let (on, off) = both_ways(&zs);
            (on.map(|a| a.to_vec()), off.map(|a| a.to_vec()))
        };
        prop_assert_eq!(on, off);
    }

    #[test]
    fn float_programs_give_bit_identical_results_with_and_without_cse(
        xs in values::<f32>(24),
        seed in 0usize..4,
    ) {
        let (on, off) = {
            let consts = [0.0f32, -0.0, f32::NAN, 1.5];
            let c = move |k: usize| constant(consts[(seed + k) % 4]);
            let h = move |x: &Exp<f32>| (x * c(0) + c(1)).sqrt() + x * c(2);
            let ys = vector(xs.clone()).map(|x| {
                lift((h(x) - h(x), cond(x.gt(c(3)), h(x), x + c(1)), x + c(0), x + c(1)))
            });
            let (on, off) = both_ways(&ys);
            // NaN payloads aside (docs/semantics.md): a C compiler may swap
            // the operands of a commutative `*`, and x86 keeps the payload
            // of the first NaN operand
            let canonical = |x: f32| if x.is_nan() { f32::NAN.to_bits() } else { x.to_bits() };
            let bits = |v: Vec<(f32, f32, f32, f32)>| {
                v.iter().map(|t| [t.0, t.1, t.2, t.3].map(canonical)).collect::<Vec<_>>()
            };
            (on.map(|a| bits(a.to_vec())), off.map(|a| bits(a.to_vec())))
        };
        prop_assert_eq!(on, off);
    }
}

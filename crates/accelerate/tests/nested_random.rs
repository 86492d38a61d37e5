//! Random nested programs over random shapes: a per-element scalar
//! computation drawn from a small AST, in which inner vectors are
//! computed, folded, measured, branched over and looped over, is built as
//! the function of an outer `generate`, `map` or `zip_with` (flattened by
//! the lifting pass, `trafo::lift`) and must agree exactly with a
//! plain-Rust evaluation of the same AST.
//!
//! The generator stays inside what the lifting supports today, so every
//! error, `Error::NestedParallelism` included, fails the test: the
//! constructs `lift.rs` documents as not lifted yet are avoided by
//! construction (see `Scalar` and `Inner`), never accepted at run time.
//! Like `nested.rs`, this runs on the backend `ACCELERATE_BACKEND` names,
//! with the pipeline's switches from `ACCELERATE_FLAGS`.

mod common;

use accelerate::prelude::*;
use accelerate::{run_with, Config};
use proptest::collection::vec;
use proptest::prelude::*;

/// The seed of the `Max` fold: the maximum of an empty vector (below the
/// values of most vectors, so that the maximum is usually an element's).
const MAX_SEED: i64 = -100;

/// The largest extent of an `Iota` inner vector.
const IOTA_MAX: i64 = 5;

/// The largest number of steps of a `Loop`.
const LOOP_MAX: i64 = 2;

/// A scalar computed per element of the outer vector, where `x` is the
/// element and `i` its index. Integer arithmetic wraps, as the language's
/// does (docs/semantics.md), though the generator keeps values far from
/// overflow.
#[derive(Clone, Debug)]
enum Scalar {
    X,
    I,
    Const(i64),
    Add(Box<Scalar>, Box<Scalar>),
    Mul(Box<Scalar>, Box<Scalar>),
    /// `fold (+) 0` of an inner vector.
    Sum(Box<Inner>),
    /// `fold max MAX_SEED` of an inner vector.
    Max(Box<Inner>),
    /// The size of an inner vector.
    Len(Box<Inner>),
    /// `sum(v) * size(v)` of one inner vector `v`, built once and read
    /// twice: a nested array shared by two readers.
    SumTimesLen(Box<Inner>),
    /// The element of an inner vector at `max(at, 0)`, or -1 past its
    /// end: a conditional on the vector's size whose `then` branch reads
    /// the vector (built again there) and would be out of bounds for the
    /// elements that take `else`, so that computing a branch for an
    /// element that does not take it is an error.
    Elem {
        vector: Box<Inner>,
        at: Box<Scalar>,
    },
    /// `if c > 0 { t } else { e }`, only the branch taken evaluated.
    If(Box<Scalar>, Box<Scalar>, Box<Scalar>),
    /// A scalar `while` over the state `(k, s)` from `(0, 0)`: while
    /// `k < clamp(times, 0, LOOP_MAX)`, `s += sum(v.map(|y| y + s))`,
    /// where the inner vector `v` is computed in the loop's body and the
    /// map reads the state. Its value is the final `s`.
    Loop {
        times: Box<Scalar>,
        body: Box<Inner>,
    },
}

/// An inner vector of `i64`, computed per element of the outer vector.
///
/// What is not generated, and why (the lifting's documented limits,
/// `Error::NestedParallelism`): an extent that is computed by an array
/// operation (so an `Iota`'s extent is drawn from array-free scalars); an
/// array computed inside an array whose extent depends on the element
/// (so a `Gen`'s extent, whose function computes arrays, is a constant);
/// slices, scans and permutations of irregular arrays (so the only slice
/// is `Row`, of the matrix, an array of the enclosing program); an array
/// bound outside a conditional and read in its branches when its extent
/// depends on the element (so every subterm is built afresh where it is
/// used, and no array is shared across a branch or a loop's body); a
/// fold whose operator or seed depends on the element (so folds are of
/// `+` and `max` from constant seeds); an array computed in the second
/// operand of `&&` or `||` (so there are no `&&` and `||`).
#[derive(Clone, Debug)]
enum Inner {
    /// Row `i mod rows` of the matrix: a slice, regular.
    Row,
    /// The vector `ys` of the enclosing program, as it is.
    Ys,
    /// `j + x` for `j < clamp(extent, 0, IOTA_MAX)`: irregular when the
    /// extent depends on `x` or `i`.
    Iota(Box<Scalar>),
    /// `y * c + x` for each element `y`.
    Map(Box<Inner>, i64),
    /// The element-wise sum of two vectors, as long as the shorter.
    Zip(Box<Inner>, Box<Inner>),
    /// The scalar computed with `x + j` for `x`, for each `j < n`: a
    /// second level of nesting, whose function may compute arrays.
    Gen(i64, Box<Scalar>),
}

// ---------------------------------------------------------------------------
// Generators

fn leaf() -> BoxedStrategy<Scalar> {
    prop_oneof![2 => Just(Scalar::X), 1 => Just(Scalar::I), 1 => (-3i64..=3).prop_map(Scalar::Const)].boxed()
}

/// Scalars that compute no array: the extents of `Iota`.
fn array_free() -> BoxedStrategy<Scalar> {
    leaf()
        .prop_recursive(2, 6, 3, |s| {
            prop_oneof![
                (s.clone(), s.clone()).prop_map(|(a, b)| Scalar::Add(a.into(), b.into())),
                (s.clone(), s.clone()).prop_map(|(a, b)| Scalar::Mul(a.into(), b.into())),
                (s.clone(), s.clone(), s).prop_map(|(c, t, e)| Scalar::If(c.into(), t.into(), e.into())),
            ]
        })
        .boxed()
}

/// Inner vectors whose nested scalars are drawn from `scalar`.
fn inner(scalar: BoxedStrategy<Scalar>) -> BoxedStrategy<Inner> {
    let base = prop_oneof![
        2 => Just(Inner::Row),
        1 => Just(Inner::Ys),
        3 => array_free().prop_map(|e| Inner::Iota(e.into())),
        2 => (0i64..=3, scalar).prop_map(|(n, s)| Inner::Gen(n, s.into())),
    ];
    base.prop_recursive(2, 6, 2, |a| {
        prop_oneof![
            (a.clone(), -2i64..=2).prop_map(|(v, c)| Inner::Map(v.into(), c)),
            (a.clone(), a).prop_map(|(u, v)| Inner::Zip(u.into(), v.into())),
        ]
    })
    .boxed()
}

fn scalar() -> BoxedStrategy<Scalar> {
    leaf()
        .prop_recursive(4, 48, 3, |s| {
            let a = inner(s.clone());
            prop_oneof![
                2 => (s.clone(), s.clone()).prop_map(|(u, v)| Scalar::Add(u.into(), v.into())),
                1 => (s.clone(), s.clone()).prop_map(|(u, v)| Scalar::Mul(u.into(), v.into())),
                3 => a.clone().prop_map(|v| Scalar::Sum(v.into())),
                2 => a.clone().prop_map(|v| Scalar::Max(v.into())),
                1 => a.clone().prop_map(|v| Scalar::Len(v.into())),
                1 => a.clone().prop_map(|v| Scalar::SumTimesLen(v.into())),
                2 => (a.clone(), s.clone())
                    .prop_map(|(v, k)| Scalar::Elem { vector: v.into(), at: k.into() }),
                2 => (s.clone(), s.clone(), s.clone())
                    .prop_map(|(c, t, e)| Scalar::If(c.into(), t.into(), e.into())),
                2 => (s, a).prop_map(|(t, v)| Scalar::Loop { times: t.into(), body: v.into() }),
            ]
        })
        .boxed()
}

/// The data a program reads: the outer vector, the matrix whose rows
/// `Row` reads (at least one row, so that `i mod rows` is defined) and the
/// vector `Ys`.
#[derive(Clone, Debug)]
struct Data {
    xs: Vec<i64>,
    rows: usize,
    cols: usize,
    m: Vec<i64>,
    ys: Vec<i64>,
}

fn data() -> BoxedStrategy<Data> {
    (1usize..4, 0usize..5)
        .prop_flat_map(|(rows, cols)| {
            (vec(-5i64..5, 0..6), vec(-5i64..5, rows * cols), vec(-5i64..5, 0..5))
                .prop_map(move |(xs, m, ys)| Data { xs, rows, cols, m, ys })
        })
        .boxed()
}

/// How the outer parallel operation reaches its element and index.
#[derive(Clone, Copy, Debug)]
enum Outer {
    /// `generate` over the indices, reading `xs` at each.
    Generate,
    /// `map` over a vector of `(x, i)` pairs.
    Map,
    /// `zip_with` of `xs` and a longer vector of indices.
    ZipWith,
}

fn outer() -> BoxedStrategy<Outer> {
    prop_oneof![Just(Outer::Generate), Just(Outer::Map), Just(Outer::ZipWith)].boxed()
}

// ---------------------------------------------------------------------------
// The reference

fn sum(v: &[i64]) -> i64 {
    v.iter().fold(0, |a, &b| a.wrapping_add(b))
}

fn eval_scalar(s: &Scalar, x: i64, i: i64, d: &Data) -> i64 {
    match s {
        Scalar::X => x,
        Scalar::I => i,
        Scalar::Const(c) => *c,
        Scalar::Add(a, b) => eval_scalar(a, x, i, d).wrapping_add(eval_scalar(b, x, i, d)),
        Scalar::Mul(a, b) => eval_scalar(a, x, i, d).wrapping_mul(eval_scalar(b, x, i, d)),
        Scalar::Sum(v) => sum(&eval_inner(v, x, i, d)),
        Scalar::Max(v) => eval_inner(v, x, i, d).into_iter().fold(MAX_SEED, i64::max),
        Scalar::Len(v) => eval_inner(v, x, i, d).len() as i64,
        Scalar::SumTimesLen(v) => {
            let v = eval_inner(v, x, i, d);
            sum(&v).wrapping_mul(v.len() as i64)
        }
        Scalar::Elem { vector, at } => {
            let k = eval_scalar(at, x, i, d).max(0);
            eval_inner(vector, x, i, d).get(k as usize).copied().unwrap_or(-1)
        }
        Scalar::If(c, t, e) => {
            if eval_scalar(c, x, i, d) > 0 {
                eval_scalar(t, x, i, d)
            } else {
                eval_scalar(e, x, i, d)
            }
        }
        Scalar::Loop { times, body } => {
            let mut state = 0i64;
            for _ in 0..eval_scalar(times, x, i, d).clamp(0, LOOP_MAX) {
                let shifted: Vec<i64> =
                    eval_inner(body, x, i, d).iter().map(|y| y.wrapping_add(state)).collect();
                state = state.wrapping_add(sum(&shifted));
            }
            state
        }
    }
}

fn eval_inner(a: &Inner, x: i64, i: i64, d: &Data) -> Vec<i64> {
    match a {
        Inner::Row => {
            let r = i.rem_euclid(d.rows as i64) as usize;
            d.m[r * d.cols..(r + 1) * d.cols].to_vec()
        }
        Inner::Ys => d.ys.clone(),
        Inner::Iota(extent) => {
            (0..eval_scalar(extent, x, i, d).clamp(0, IOTA_MAX)).map(|j| j.wrapping_add(x)).collect()
        }
        Inner::Map(v, c) => {
            eval_inner(v, x, i, d).into_iter().map(|y| y.wrapping_mul(*c).wrapping_add(x)).collect()
        }
        Inner::Zip(u, v) => {
            let (u, v) = (eval_inner(u, x, i, d), eval_inner(v, x, i, d));
            u.iter().zip(&v).map(|(a, b)| a.wrapping_add(*b)).collect()
        }
        Inner::Gen(n, s) => (0..*n).map(|j| eval_scalar(s, x.wrapping_add(j), i, d)).collect(),
    }
}

fn reference(s: &Scalar, d: &Data) -> Vec<i64> {
    d.xs.iter().enumerate().map(|(i, &x)| eval_scalar(s, x, i as i64, d)).collect()
}

// ---------------------------------------------------------------------------
// The Accelerate program

/// The arrays of the enclosing program that the nested code reads.
struct Enclosing {
    m: Acc<Matrix<i64>>,
    ys: Acc<Vector<i64>>,
}

/// Builds the scalar; every call makes new nodes, so that no array is
/// shared between subterms but where the AST says so (`SumTimesLen`; an
/// `Elem`'s vector is built twice, once for its test and once for its
/// branch).
fn build_scalar(s: &Scalar, x: &Exp<i64>, i: &Exp<i64>, enclosing: &Enclosing) -> Exp<i64> {
    let scalar = |t: &Scalar| build_scalar(t, x, i, enclosing);
    let vector = |v: &Inner| build_inner(v, x, i, enclosing);
    match s {
        Scalar::X => x.clone(),
        Scalar::I => i.clone(),
        Scalar::Const(c) => constant(*c),
        Scalar::Add(a, b) => scalar(a) + scalar(b),
        Scalar::Mul(a, b) => scalar(a) * scalar(b),
        Scalar::Sum(v) => vector(v).fold(0i64, |a, b| a + b).the(),
        Scalar::Max(v) => vector(v).fold(MAX_SEED, |a, b| a.max(b)).the(),
        Scalar::Len(v) => vector(v).size(),
        Scalar::SumTimesLen(v) => {
            let v = vector(v);
            v.fold(0i64, |a, b| a + b).the() * v.size()
        }
        Scalar::Elem { vector: v, at } => {
            let k = scalar(at).max(0i64);
            cond(vector(v).size().gt(&k), vector(v).index(index1(k)), constant(-1i64))
        }
        Scalar::If(c, t, e) => cond(scalar(c).gt(0i64), scalar(t), scalar(e)),
        Scalar::Loop { times, body } => while_loop(
            lift((constant(0i64), constant(0i64))),
            |state| state.fst().lt(scalar(times).max(0i64).min(LOOP_MAX)),
            |state| {
                let (k, s) = state.unlift();
                let step = vector(body).map(|y| y + &s).fold(0i64, |a, b| a + b).the();
                lift((k + 1i64, s + step))
            },
        )
        .snd(),
    }
}

fn build_inner(a: &Inner, x: &Exp<i64>, i: &Exp<i64>, enclosing: &Enclosing) -> Acc<Vector<i64>> {
    match a {
        Inner::Row => {
            let (rows, _) = unindex2(enclosing.m.shape());
            enclosing.m.slice(any_dims::<Z>().fixed(i % rows).all())
        }
        Inner::Ys => enclosing.ys.clone(),
        Inner::Iota(extent) => {
            let n = build_scalar(extent, x, i, enclosing).max(0i64).min(IOTA_MAX);
            generate(index1(n), |j| unindex1(j) + x)
        }
        Inner::Map(v, c) => build_inner(v, x, i, enclosing).map(|y| y * *c + x),
        Inner::Zip(u, v) => {
            build_inner(u, x, i, enclosing).zip_with(build_inner(v, x, i, enclosing), |a, b| a + b)
        }
        Inner::Gen(n, s) => generate(index1(*n), |j| build_scalar(s, &(x + unindex1(j)), i, enclosing)),
    }
}

fn build(s: &Scalar, d: &Data, form: Outer) -> Acc<Vector<i64>> {
    let enclosing = Enclosing {
        m: use_array(Array::from_vec(Snoc(Snoc(Z, d.rows as i64), d.cols as i64), d.m.clone()).unwrap()),
        ys: use_array(Vector::from_elems(d.ys.clone())),
    };
    let xs = use_array(Vector::from_elems(d.xs.clone()));
    let n = d.xs.len() as i64;
    match form {
        Outer::Generate => {
            generate(index1(n), |ix| build_scalar(s, &xs.index(ix), &unindex1(ix), &enclosing))
        }
        Outer::Map => {
            let pairs = d.xs.iter().enumerate().map(|(i, &x)| (x, i as i64)).collect();
            use_array(Vector::from_elems(pairs)).map(|p| {
                let (x, i) = p.unlift();
                build_scalar(s, &x, &i, &enclosing)
            })
        }
        Outer::ZipWith => {
            // more indices than elements: the outer context is the
            // intersection of the two shapes
            let indices = use_array(Vector::from_elems((0..n + 2).collect()));
            xs.zip_with(&indices, |x, i| build_scalar(s, x, i, &enclosing))
        }
    }
}

proptest! {
    #![proptest_config(common::config(48))]

    #[test]
    fn random_nested_programs_agree_with_plain_rust(s in scalar(), d in data(), form in outer()) {
        let acc = build(&s, &d, form);
        let config = Config::from_env().expect("configuration from the environment");
        let got = run_with(&acc, &config)
            .map_err(|e| TestCaseError::fail(format!("run failed: {e}\n{e:?}")))?;
        prop_assert_eq!(got.to_vec(), reference(&s, &d));
    }
}

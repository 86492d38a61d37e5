//! The reductions and scans of `lang/library/reductions.rs` (built from
//! primitives) against plain-Rust sequential references: `fold_all`,
//! `fold1_all`, `sum`, `product`, `maximum`, `minimum`, `and`, `or`,
//! `all`, `any`, `prescanl`, `postscanl`, `prescanr`, `postscanr`,
//! `scanl_` and `scanr_`.
//!
//! Shapes are random at ranks 0 to 3 (every extent may be 0 or 1); data
//! includes NaN, ±infinity, -0.0 and extreme integers. The interpreter
//! reduces each row sequentially (left to right, right to left for the
//! right scans), so its results are exactly those of the sequential
//! references: floats are compared bit for bit, NaN payloads aside
//! (`check_same`).
//!
//! A parallel backend may regroup a fold or a scan (its operator is taken
//! to be associative, `docs/semantics.md`), as the CPU backend does on
//! rows of 32 elements or more and the CUDA backend always does. So the
//! operators are associative (non-commutative ones, the composition of
//! affine maps and the projections `first` and `last`, pin the order of
//! the arguments and of the elements) and float data sums or multiplies
//! exactly in any order, so that every backend must still match the
//! sequential reference to the bit.

mod common;

use accelerate::prelude::*;
use common::*;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

const THIS_FILE: &str = "tests/ops_library_reduce.rs";

// ---------------------------------------------------------------------------
// Plain-Rust references over (extents, row-major elements)

fn array<Sh: Shape, T: Elt>(dims: &[usize], data: Vec<T>) -> Array<Sh, T> {
    let d: Vec<i64> = dims.iter().map(|&x| x as i64).collect();
    Array::from_vec(Sh::from_slice(&d), data).expect("data matches the shape")
}

/// The rows of the innermost dimension of `a` and the outer extents.
fn rows<Sh: Shape, T: Elt>(a: &Array<Snoc<Sh>, T>) -> (Vec<usize>, Vec<Vec<T>>) {
    let (&n, outer) = a.dims().split_last().expect("rank >= 1");
    let data = a.to_vec();
    let count: usize = outer.iter().product();
    (outer.to_vec(), (0..count).map(|r| data[r * n..(r + 1) * n].to_vec()).collect())
}

/// Each row reduced to one value: an array of the outer shape.
fn per_row<Sh: Shape, T: Elt, R: Elt>(a: &Array<Snoc<Sh>, T>, f: impl Fn(&[T]) -> R) -> Array<Sh, R> {
    let (outer, rows) = rows(a);
    array(&outer, rows.iter().map(|r| f(r)).collect())
}

/// Each row mapped to a row of the same length: an array of `a`'s shape.
fn row_wise<Sh: Shape, T: Elt>(a: &Array<Snoc<Sh>, T>, f: impl Fn(&[T]) -> Vec<T>) -> Array<Snoc<Sh>, T> {
    let (_, rows) = rows(a);
    array(a.dims(), rows.iter().flat_map(|r| f(r)).collect())
}

/// Haskell's `scanl`: `[z, f(z, x0), ..]`, one longer than `xs`.
fn scanl_ref<T: Copy>(z: T, xs: &[T], f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut out = vec![z];
    for &x in xs {
        out.push(f(*out.last().unwrap(), x));
    }
    out
}

/// Haskell's `scanr`: `[.., f(x(n-1), z), z]`, one longer than `xs`.
fn scanr_ref<T: Copy>(z: T, xs: &[T], f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut out = vec![z];
    for &x in xs.iter().rev() {
        out.push(f(x, *out.last().unwrap()));
    }
    out.reverse();
    out
}

// ---------------------------------------------------------------------------
// Whole-array folds

/// `acc * 31 + x` as an associative, non-commutative operator on affine
/// maps: element x stands for the map `acc -> acc * 31 + x`, written
/// `(31, x)`, and `(m1, c1)` then `(m2, c2)` is `(m1 * m2, c1 * m2 + c2)`.
/// Wrapping integers form a ring, so this composition is exactly
/// associative: a backend may regroup it (`docs/semantics.md`), yet the
/// second component of the fold is the sequential `acc * 31 + x` fold,
/// which pins the row-major order of the elements and the seed's place.
fn affine(p: &Exp<(i32, i32)>, q: &Exp<(i32, i32)>) -> Exp<(i32, i32)> {
    lift((p.fst() * q.fst(), p.snd() * q.fst() + q.snd()))
}

fn check_fold_all<Sh: Shape>(a: &Array<Sh, i32>, b: &Array<Sh, f64>, z: i32) -> Result<(), TestCaseError> {
    let expected = a.to_vec().iter().fold(z, |acc, &x| acc.wrapping_mul(31).wrapping_add(x));
    let got = run_ok(|| {
        use_array(a.clone())
            .map(|x| lift((constant(31i32), x)))
            .fold_all(lift((constant(1i32), constant(z))), affine)
    })?;
    check_same(&got.value().1, &expected, "fold_all i32")?;

    // `b` holds values whose sums are exact in any order (`exact_float`)
    let expected = b.to_vec().iter().fold(-0.0f64, |acc, &x| acc + x);
    let got = run_ok(|| use_array(b.clone()).fold_all(-0.0f64, |acc, x| acc + x))?;
    check_same(&got.value(), &expected, "fold_all f64")?;

    let got = try_run(|| use_array(a.clone()).map(|x| lift((constant(31i32), x))).fold1_all(affine));
    match a.to_vec().split_first() {
        Some((&x0, rest)) => {
            let expected = rest.iter().fold(x0, |acc, &x| acc.wrapping_mul(31).wrapping_add(x));
            let got = got.map_err(|e| TestCaseError::fail(e.to_string()))?;
            check_same(&got.value().1, &expected, "fold1_all")
        }
        None => check_error(
            got,
            |e| matches!(e, Error::EmptyReduction { shape, .. } if shape == &[0]),
            "fold1_all",
        ),
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn fold_all_and_fold1_all_reduce_every_element_in_row_major_order(
        s in (array_of(dim0_shape(), elem::<i32>()), array_of(dim0_shape(), exact_float::<f64>())),
        v in (array_of(dim1_shape(9), elem::<i32>()), array_of(dim1_shape(9), exact_float::<f64>())),
        m in (array_of(dim2_shape(5), elem::<i32>()), array_of(dim2_shape(5), exact_float::<f64>())),
        c in (array_of(dim3_shape(4), elem::<i32>()), array_of(dim3_shape(4), exact_float::<f64>())),
        z in elem::<i32>(),
    ) {
        check_fold_all(&s.0, &s.1, z)?;
        check_fold_all(&v.0, &v.1, z)?;
        check_fold_all(&m.0, &m.1, z)?;
        check_fold_all(&c.0, &c.1, z)?;
    }
}

// ---------------------------------------------------------------------------
// Named reductions along the innermost dimension

fn check_sum_product_int<Sh: Shape>(
    a: &Array<Snoc<Sh>, i64>,
    b: &Array<Snoc<Sh>, u8>,
) -> Result<(), TestCaseError> {
    let sum = per_row(a, |r| r.iter().fold(0i64, |x, &y| x.wrapping_add(y)));
    check_same(&run_ok(|| use_array(a.clone()).sum())?, &sum, "sum i64")?;
    let product = per_row(a, |r| r.iter().fold(1i64, |x, &y| x.wrapping_mul(y)));
    check_same(&run_ok(|| use_array(a.clone()).product())?, &product, "product i64")?;
    let sum = per_row(b, |r| r.iter().fold(0u8, |x, &y| x.wrapping_add(y)));
    check_same(&run_ok(|| use_array(b.clone()).sum())?, &sum, "sum u8")?;
    let product = per_row(b, |r| r.iter().fold(1u8, |x, &y| x.wrapping_mul(y)));
    check_same(&run_ok(|| use_array(b.clone()).product())?, &product, "product u8")
}

/// `a`'s sums and `b`'s products are exact in any order (`exact_float`,
/// `exact_factor`).
fn check_sum_product_float<Sh: Shape>(
    a: &Array<Snoc<Sh>, f32>,
    b: &Array<Snoc<Sh>, f32>,
) -> Result<(), TestCaseError> {
    // the seed is +0.0: a row of -0.0 sums to +0.0, as in Accelerate
    let sum = per_row(a, |r| r.iter().fold(0.0f32, |x, &y| x + y));
    check_same(&run_ok(|| use_array(a.clone()).sum())?, &sum, "sum f32")?;
    let product = per_row(b, |r| r.iter().fold(1.0f32, |x, &y| x * y));
    check_same(&run_ok(|| use_array(b.clone()).product())?, &product, "product f32")
}

/// Float factors whose products are exact in any order: NaN, ±infinity,
/// ±0.0 and ±2^k for |k| <= 14, so that a product of up to 9 of them
/// neither overflows nor underflows, whatever the grouping.
fn exact_factor() -> BoxedStrategy<f32> {
    let specials = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0];
    prop_oneof![
        1 => proptest::sample::select(specials),
        4 => (-14i32..=14, any::<bool>()).prop_map(|(k, neg)| if neg { -(2.0f32).powi(k) } else { (2.0f32).powi(k) }),
    ]
    .boxed()
}

/// `maximum`/`minimum` are `fold1` of the language's `max`/`min` (Rust's
/// `f32::max`: NaN ignored unless every element is NaN).
fn check_max_min<Sh: Shape, T: Gen + Same + NumElt>(
    a: &Array<Snoc<Sh>, T>,
    max: fn(T, T) -> T,
    min: fn(T, T) -> T,
) -> Result<(), TestCaseError> {
    let (outer, rows) = rows(a);
    let got_max = try_run(|| use_array(a.clone()).maximum());
    let got_min = try_run(|| use_array(a.clone()).minimum());
    if rows.iter().any(|r| r.is_empty()) {
        let is_empty = |e: &Error| matches!(e, Error::EmptyReduction { shape, .. } if shape == a.dims());
        check_error(got_max, is_empty, "maximum of an empty row")?;
        return check_error(got_min, is_empty, "minimum of an empty row");
    }
    let fold1 = |f: fn(T, T) -> T| -> Array<Sh, T> {
        array(&outer, rows.iter().map(|r| r[1..].iter().fold(r[0], |x, &y| f(x, y))).collect())
    };
    let lift = |r: Result<Array<Sh, T>, Error>| r.map_err(|e| TestCaseError::fail(e.to_string()));
    check_same(&lift(got_max)?, &fold1(max), "maximum")?;
    check_same(&lift(got_min)?, &fold1(min), "minimum")
}

fn check_bool_reductions<Sh: Shape>(
    a: &Array<Snoc<Sh>, bool>,
    b: &Array<Snoc<Sh>, i32>,
) -> Result<(), TestCaseError> {
    check_same(&run_ok(|| use_array(a.clone()).and())?, &per_row(a, |r| r.iter().all(|&x| x)), "and")?;
    check_same(&run_ok(|| use_array(a.clone()).or())?, &per_row(a, |r| r.iter().any(|&x| x)), "or")?;
    let all = per_row(b, |r| r.iter().all(|&x| x > -3));
    check_same(&run_ok(|| use_array(b.clone()).all(|x| x.gt(-3)))?, &all, "all")?;
    let any = per_row(b, |r| r.iter().any(|&x| x % 3 == 0));
    check_same(&run_ok(|| use_array(b.clone()).any(|x| (x % 3).eq(0)))?, &any, "any")
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn sum_and_product_wrap_for_integers_along_the_innermost_dimension(
        v in (array_of(dim1_shape(9), elem::<i64>()), array_of(dim1_shape(9), elem::<u8>())),
        m in (array_of(dim2_shape(5), elem::<i64>()), array_of(dim2_shape(5), elem::<u8>())),
        c in (array_of(dim3_shape(4), elem::<i64>()), array_of(dim3_shape(4), elem::<u8>())),
    ) {
        check_sum_product_int(&v.0, &v.1)?;
        check_sum_product_int(&m.0, &m.1)?;
        check_sum_product_int(&c.0, &c.1)?;
    }

    #[test]
    fn sum_and_product_of_floats_follow_ieee_in_row_order(
        v in (array_of(dim1_shape(9), exact_float::<f32>()), array_of(dim1_shape(9), exact_factor())),
        m in (array_of(dim2_shape(5), exact_float::<f32>()), array_of(dim2_shape(5), exact_factor())),
        c in (array_of(dim3_shape(4), exact_float::<f32>()), array_of(dim3_shape(4), exact_factor())),
    ) {
        check_sum_product_float(&v.0, &v.1)?;
        check_sum_product_float(&m.0, &m.1)?;
        check_sum_product_float(&c.0, &c.1)?;
    }

    #[test]
    fn maximum_and_minimum_fold1_max_and_min_and_fail_on_empty_rows(
        v in array_of(dim1_shape(9), elem::<f32>()),
        m in array_of(dim2_shape(5), elem::<i16>()),
        c in array_of(dim3_shape(4), elem::<f64>()),
    ) {
        check_max_min(&v, f32::max, f32::min)?;
        check_max_min(&m, |a: i16, b| a.max(b), |a: i16, b| a.min(b))?;
        check_max_min(&c, f64::max, f64::min)?;
    }

    #[test]
    fn and_or_all_any_reduce_every_row(
        v in (array_of(dim1_shape(9), elem::<bool>()), array_of(dim1_shape(9), elem::<i32>())),
        m in (array_of(dim2_shape(5), elem::<bool>()), array_of(dim2_shape(5), elem::<i32>())),
        c in (array_of(dim3_shape(4), elem::<bool>()), array_of(dim3_shape(4), elem::<i32>())),
    ) {
        check_bool_reductions(&v.0, &v.1)?;
        check_bool_reductions(&m.0, &m.1)?;
        check_bool_reductions(&c.0, &c.1)?;
    }
}

// ---------------------------------------------------------------------------
// Scans with a seed and rows of the input's length

/// `affine` on the host.
fn affine_ref(p: (i32, i32), q: (i32, i32)) -> (i32, i32) {
    (p.0.wrapping_mul(q.0), p.1.wrapping_mul(q.0).wrapping_add(q.1))
}

/// The scans with a seed, on the elements as affine maps `(31, x)` and the
/// seed as `(1, z)` (see `affine`).
fn check_scans_int<Sh: Shape>(a: &Array<Snoc<Sh>, i32>, z: i32) -> Result<(), TestCaseError> {
    let z = (1, z);
    let a = &array::<Snoc<Sh>, (i32, i32)>(a.dims(), a.to_vec().into_iter().map(|x| (31, x)).collect());
    let f = affine;
    let pre_l = row_wise(a, |r| {
        let s = scanl_ref(z, r, affine_ref);
        s[..r.len()].to_vec()
    });
    let post_l = row_wise(a, |r| scanl_ref(z, r, affine_ref)[1..].to_vec());
    let pre_r = row_wise(a, |r| scanr_ref(z, r, affine_ref)[1..].to_vec());
    let post_r = row_wise(a, |r| {
        let s = scanr_ref(z, r, affine_ref);
        s[..r.len()].to_vec()
    });
    let total_l = per_row(a, |r| *scanl_ref(z, r, affine_ref).last().unwrap());
    let total_r = per_row(a, |r| scanr_ref(z, r, affine_ref)[0]);

    check_same(&run_ok(|| use_array(a.clone()).prescanl(z, f))?, &pre_l, "prescanl")?;
    check_same(&run_ok(|| use_array(a.clone()).postscanl(z, f))?, &post_l, "postscanl")?;
    check_same(&run_ok(|| use_array(a.clone()).prescanr(z, f))?, &pre_r, "prescanr")?;
    check_same(&run_ok(|| use_array(a.clone()).postscanr(z, f))?, &post_r, "postscanr")?;
    let (scan, totals) = run_ok(|| use_array(a.clone()).scanl_(z, f))?;
    check_same(&scan, &pre_l, "scanl_ scan")?;
    check_same(&totals, &total_l, "scanl_ totals")?;
    let (scan, totals) = run_ok(|| use_array(a.clone()).scanr_(z, f))?;
    check_same(&scan, &pre_r, "scanr_ scan")?;
    check_same(&totals, &total_r, "scanr_ totals")?;
    // the totals are the fold of each row, from the left and the right
    let fold_l = run_ok(|| use_array(a.clone()).fold(z, f))?;
    check_same(&fold_l, &total_l, "scanl_ totals are the fold")
}

fn check_scans_float<Sh: Shape>(a: &Array<Snoc<Sh>, f64>, z: f64) -> Result<(), TestCaseError> {
    // the projections are associative and not commutative: they pin where
    // the seed goes and which argument is which, on any value
    type F = fn(&Exp<f64>, &Exp<f64>) -> Exp<f64>;
    type R = fn(f64, f64) -> f64;
    let ops: [(F, R, &str); 2] =
        [(|x, _| x.clone(), |x, _| x, "first"), (|_, y| y.clone(), |_, y| y, "last")];
    for (f, r, name) in ops {
        let post_l = row_wise(a, |row| scanl_ref(z, row, r)[1..].to_vec());
        let pre_r = row_wise(a, |row| scanr_ref(z, row, r)[1..].to_vec());
        check_same(
            &run_ok(|| use_array(a.clone()).postscanl(z, f))?,
            &post_l,
            &format!("postscanl f64 {name}"),
        )?;
        check_same(
            &run_ok(|| use_array(a.clone()).prescanr(z, f))?,
            &pre_r,
            &format!("prescanr f64 {name}"),
        )?;
        let (scan, totals) = run_ok(|| use_array(a.clone()).scanr_(z, f))?;
        check_same(&scan, &pre_r, &format!("scanr_ scan f64 {name}"))?;
        check_same(
            &totals,
            &per_row(a, |row| scanr_ref(z, row, r)[0]),
            &format!("scanr_ totals f64 {name}"),
        )?;
    }
    Ok(())
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn pre_and_post_scans_are_the_scans_without_their_first_or_last_element(
        v in array_of(dim1_shape(9), elem::<i32>()),
        m in array_of(dim2_shape(5), elem::<i32>()),
        c in array_of(dim3_shape(4), elem::<i32>()),
        z in elem::<i32>(),
    ) {
        check_scans_int(&v, z)?;
        check_scans_int(&m, z)?;
        check_scans_int(&c, z)?;
    }

    #[test]
    fn float_scans_combine_the_seed_first_in_sequential_order(
        v in array_of(dim1_shape(9), elem::<f64>()),
        m in array_of(dim2_shape(5), elem::<f64>()),
        c in array_of(dim3_shape(4), elem::<f64>()),
        z in elem::<f64>(),
    ) {
        check_scans_float(&v, z)?;
        check_scans_float(&m, z)?;
        check_scans_float(&c, z)?;
    }
}

// ---------------------------------------------------------------------------
// Edges and errors

#[test]
fn empty_rows_give_the_seeds_and_minus_zeros_sum_to_plus_zero() {
    {
        let xs = use_array(Array::from_vec(dim2(2, 2), vec![-0.0f32, -0.0, 0.0, 0.0]).unwrap());
        let empty = use_array(Array::from_vec(dim2(2, 0), Vec::<f32>::new()).unwrap());
        let (a, b) = accelerate::run(&lift_acc((xs.sum(), empty.sum()))).unwrap();
        for x in a.to_vec().into_iter().chain(b.to_vec()) {
            assert_eq!(x.to_bits(), 0.0f32.to_bits());
        }
        assert_eq!(accelerate::run(&empty.product()).unwrap().to_vec(), vec![1.0, 1.0]);
        let no_bools = use_array(Array::from_vec(dim2(2, 0), Vec::<bool>::new()).unwrap());
        let (all, any) = accelerate::run(&lift_acc((no_bools.and(), no_bools.or()))).unwrap();
        assert_eq!((all.to_vec(), any.to_vec()), (vec![true, true], vec![false, false]));
    };
}

#[test]
fn maximum_of_an_empty_row_is_an_empty_reduction_naming_the_callers_line() {
    {
        let empty = use_array(Array::from_vec(dim2(3, 0), Vec::<i32>::new()).unwrap());
        let line = line!() + 1;
        let err = accelerate::run(&empty.maximum()).unwrap_err();
        match &err {
            Error::EmptyReduction { shape, .. } => assert_eq!(shape, &[3, 0]),
            other => panic!("expected EmptyReduction, got {other:?}"),
        }
        assert!(err.to_string().contains(&format!("{THIS_FILE}:{line}:")), "{err}");
        // with no rows at all there is nothing to reduce and no error
        let none = use_array(Array::from_vec(dim2(0, 0), Vec::<i32>::new()).unwrap());
        assert_eq!(accelerate::run(&none.minimum()).unwrap().len(), 0);
    };
}

#[test]
fn fold1_all_of_an_empty_array_is_an_empty_reduction_naming_the_callers_line() {
    {
        let empty = use_array(Array::from_vec(dim3(2, 0, 4), Vec::<f64>::new()).unwrap());
        let line = line!() + 1;
        let err = accelerate::run(&empty.fold1_all(|a, b| a + b)).unwrap_err();
        assert!(matches!(&err, Error::EmptyReduction { shape, .. } if shape == &[0]), "{err:?}");
        assert!(err.to_string().contains(&format!("{THIS_FILE}:{line}:")), "{err}");
        assert_eq!(accelerate::run(&empty.fold_all(2.5, |a, b| a + b)).unwrap().value(), 2.5);
    };
}

#[test]
fn the_reductions_compose_on_a_worked_example() {
    {
        let xs = use_array(Array::from_vec(dim2(2, 3), vec![1i32, 2, 3, 4, 5, 6]).unwrap());
        assert_eq!(accelerate::run(&xs.sum()).unwrap().to_vec(), vec![6, 15]);
        assert_eq!(accelerate::run(&xs.product()).unwrap().to_vec(), vec![6, 120]);
        assert_eq!(accelerate::run(&xs.maximum()).unwrap().to_vec(), vec![3, 6]);
        assert_eq!(accelerate::run(&xs.minimum()).unwrap().to_vec(), vec![1, 4]);
        assert_eq!(accelerate::run(&xs.fold_all(0, |a, b| a + b)).unwrap().value(), 21);
        assert_eq!(accelerate::run(&xs.prescanl(0, |a, b| a + b)).unwrap().to_vec(), vec![0, 1, 3, 0, 4, 9]);
        assert_eq!(
            accelerate::run(&xs.postscanl(0, |a, b| a + b)).unwrap().to_vec(),
            vec![1, 3, 6, 4, 9, 15]
        );
        assert_eq!(accelerate::run(&xs.prescanr(0, |a, b| a + b)).unwrap().to_vec(), vec![5, 3, 0, 11, 6, 0]);
        assert_eq!(
            accelerate::run(&xs.postscanr(0, |a, b| a + b)).unwrap().to_vec(),
            vec![6, 5, 3, 15, 11, 6]
        );
        let (s, t) = accelerate::run(&xs.scanl_(0, |a, b| a + b)).unwrap();
        assert_eq!((s.to_vec(), t.to_vec()), (vec![0, 1, 3, 0, 4, 9], vec![6, 15]));
        let (s, t) = accelerate::run(&xs.scanr_(0, |a, b| a + b)).unwrap();
        assert_eq!((s.to_vec(), t.to_vec()), (vec![5, 3, 0, 11, 6, 0], vec![6, 15]));
        let evens = xs.map(|x| (x % 2).eq(0));
        assert_eq!(accelerate::run(&evens.or()).unwrap().to_vec(), vec![true, true]);
        assert_eq!(accelerate::run(&xs.all(|x| x.gt(3))).unwrap().to_vec(), vec![false, true]);
        assert_eq!(accelerate::run(&xs.any(|x| x.eq(2))).unwrap().to_vec(), vec![true, false]);
    };
}

/// The reductions work on the arguments of a compiled program, whose
/// shapes are known only when it runs.
#[test]
fn a_compiled_program_of_reductions_runs_on_many_shapes() {
    let f = accelerate::compile(|xs: Acc<Matrix<i64>>| {
        let (pre, totals) = xs.scanl_(0, |a, b| a + b).unlift();
        lift_acc((pre, totals, xs.maximum(), xs.fold_all(1, |a, b| a * b)))
    })
    .unwrap();
    let (pre, totals, max, prod) = f.run(&Array::from_vec(dim2(2, 2), vec![1i64, 2, 3, 4]).unwrap()).unwrap();
    assert_eq!((pre.to_vec(), totals.to_vec()), (vec![0, 1, 0, 3], vec![3, 7]));
    assert_eq!((max.to_vec(), prod.value()), (vec![2, 4], 24));
    let empty_rows = Array::from_vec(dim2(3, 0), Vec::<i64>::new()).unwrap();
    assert!(matches!(f.run(&empty_rows), Err(Error::EmptyReduction { .. })));
    let (pre, totals, max, prod) = f.run(&Array::from_vec(dim2(0, 5), Vec::<i64>::new()).unwrap()).unwrap();
    assert_eq!((pre.dims(), totals.len(), max.len(), prod.value()), (&[0, 5][..], 0, 0, 1));
}

#[test]
fn maximum_and_minimum_of_zeros_and_nans_agree_with_rust() {
    // Rust's f64::max/min ignore a NaN and keep the first of -0.0 and +0.0
    // (which its docs leave unspecified). A row of two is folded in order:
    // every backend keeps the same zero, bit for bit. A row of 40 is
    // folded in lanes (reassociated), where a NaN can make a lane start
    // at another zero: there only "a zero" is checked.
    let z = [0.0f64, -0.0];
    let mut short: Vec<Vec<f64>> = Vec::new();
    for a in [0.0, -0.0, f64::NAN, 1.0] {
        for b in [0.0, -0.0, f64::NAN, -1.0] {
            short.push(vec![a, b]);
        }
    }
    let long: Vec<Vec<f64>> = (0..4)
        .map(|s| (0..40).map(|k| if (k * 7 + s) % 5 == 0 { f64::NAN } else { z[(k + s) % 2] }).collect())
        .collect();
    for (rows, exact) in [(short, true), (long, false)] {
        let n = rows[0].len();
        let a = Array::from_vec(dim2(rows.len(), n), rows.concat()).unwrap();
        let (mx, mn) =
            accelerate::run(&lift_acc((use_array(a.clone()).maximum(), use_array(a).minimum()))).unwrap();
        let key = |x: f64| if x == 0.0 && !exact { 0 } else { x.to_bits() };
        let fold1 = |f: fn(f64, f64) -> f64| -> Vec<u64> {
            rows.iter().map(|r| key(r[1..].iter().fold(r[0], |x, &y| f(x, y)))).collect()
        };
        let keys = |v: Vec<f64>| -> Vec<u64> { v.into_iter().map(key).collect() };
        assert_eq!(keys(mx.to_vec()), fold1(f64::max), "maximum of {rows:?}");
        assert_eq!(keys(mn.to_vec()), fold1(f64::min), "minimum of {rows:?}");
    }
}

// ---------------------------------------------------------------------------
// `any` and `all` of long rows, decided anywhere or nowhere

/// `any(x < 0)` and `all(x >= 0)` of each row of `xs` (`rows` rows), and
/// `or` and `and` of the rows' comparisons, against plain Rust: each a
/// program of its own (in one, clustering would make them one fold of a
/// tuple, which does not stop early).
fn check_decided(rows: usize, xs: Vec<i32>, what: &str) {
    let cols = xs.len() / rows;
    let want_any: Vec<bool> = xs.chunks(cols).map(|r| r.iter().any(|&x| x < 0)).collect();
    let want_all: Vec<bool> = want_any.iter().map(|a| !a).collect();
    let a = Array::from_vec(dim2(rows, cols), xs).unwrap();
    type Reduction = fn(Acc<Matrix<i32>>) -> Acc<Vector<bool>>;
    let cases: [(&str, Reduction, &Vec<bool>); 4] = [
        ("any", |m| m.any(|x| x.lt(0)), &want_any),
        ("or", |m| m.map(|x| x.lt(0)).or(), &want_any),
        ("all", |m| m.all(|x| x.ge(0)), &want_all),
        ("and", |m| m.map(|x| x.ge(0)).and(), &want_all),
    ];
    for (name, reduce, want) in cases {
        let got = try_run(|| reduce(use_array(a.clone()))).unwrap_or_else(|e| panic!("{what}: {name}: {e}"));
        assert_eq!(&got.to_vec(), want, "{what}: {name}");
    }
}

/// The CPU backend stops an `or` at the first block of elements after
/// which it holds `true`, an `and` after `false` (Note [Absorbed
/// reductions stop] in its `fold.rs`): the results are the same wherever
/// the decisive element is, before, at and after a block's edge (4096),
/// in one long row (cut into pieces among the workers) or in several, and
/// where there is none.
#[test]
fn any_and_all_of_long_rows_match_the_references_wherever_they_are_decided() {
    let n = (1 << 20) + 3;
    let plain = |i: usize| (i % 1000) as i32;
    for at in [None, Some(0), Some(1), Some(4095), Some(4096), Some(4097), Some(n / 2), Some(n - 1)] {
        let xs = (0..n).map(|i| if Some(i) == at { -1 } else { plain(i) }).collect();
        check_decided(1, xs, &format!("one row of {n}, negative at {at:?}"));
    }
    // five rows of 70001: decided at the start, in the middle, at the
    // end, twice, and not at all
    let (rows, cols) = (5, 70001);
    let decisive = [vec![0], vec![35000], vec![cols - 1], vec![3, 60000], vec![]];
    let xs = (0..rows * cols)
        .map(|i| if decisive[i / cols].contains(&(i % cols)) { -1 } else { plain(i) })
        .collect();
    check_decided(rows, xs, "five rows of 70001");
}

/// An element that fails is reported even after the row's result is
/// decided: a reduction whose elements can fail never stops early (Note
/// [Absorbed reductions stop]).
#[test]
fn any_whose_later_element_reads_out_of_bounds_fails_though_decided() {
    let n = (1 << 20) + 3;
    let table = Vector::from_elems(vec![-1i32, 2, 3]);
    // index 0 everywhere (a negative entry: every piece of the row, on
    // every worker, is decided at its first element), but 7 at the end
    let ix: Vec<i64> = (0..n).map(|i| if i == n - 1 { 7 } else { 0 }).collect();
    let ix = Vector::from_elems(ix);
    let err = try_run(|| {
        let t = use_array(table);
        use_array(ix).any(move |i| t.index(index1(i)).lt(0))
    })
    .expect_err("the read at 7 of an array of 3 must fail");
    match &err {
        Error::IndexOutOfBounds { index, shape, .. } => {
            assert_eq!(index.as_slice(), &[7]);
            assert_eq!(shape.as_slice(), &[3]);
        }
        other => panic!("expected IndexOutOfBounds, got {other:?}"),
    }
    assert!(err.to_string().contains(THIS_FILE), "the error names the source line: {err}");
}

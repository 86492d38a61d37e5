//! `fold`, `fold1`, `scanl`, `scanl1`, `scanr` and `scanr1` along the
//! innermost dimension, against plain-Rust sequential references, at ranks
//! 1, 2 and 3, on wrapping integers (extreme values included) and on floats
//! (NaN, infinities and -0.0 included).
//!
//! The reference interpreter folds each row sequentially from left to
//! right (right to left for `scanr`), so its results are exactly those of
//! the sequential reference: floats are compared bit for bit (NaN payloads
//! aside, see `FloatKey`). The operators are associative, as
//! `docs/semantics.md` requires, since a parallel backend may group them
//! as it likes: non-commutative ones pin the order of the elements and of
//! the arguments (composition of affine maps on integer pairs, which folds
//! `(31, x)`s into `acc * 31 + x`; the projections `first` and `last` on
//! floats). Float `+`, which a backend may regroup, runs on data whose
//! sums are exact in any order.

use accelerate::prelude::*;
use accelerate::run_with;
use proptest::prelude::*;
use std::fmt::Debug;

// ---------------------------------------------------------------------------
// Helpers

/// A fold or scan and its seed, where it has one.
#[derive(Clone, Copy, Debug)]
enum Op<T> {
    Fold(T),
    Fold1,
    Scanl(T),
    Scanl1,
    Scanr(T),
    Scanr1,
}

fn array<Sh: Shape, T: Elt>(dims: &[usize], data: Vec<T>) -> Array<Sh, T> {
    let d: Vec<i64> = dims.iter().map(|&x| x as i64).collect();
    Array::from_vec(Sh::from_slice(&d), data).expect("data matches the shape")
}

fn dims_and_data<Sh: Shape, T: Elt>(a: &Array<Sh, T>) -> (Vec<usize>, Vec<T>) {
    (a.dims().to_vec(), a.to_vec())
}

/// Runs `op` with operator `f` on an array of rank `Snoc<Sh>` through the
/// interpreter; returns the result's extents and elements.
fn run_op_at<Sh: Shape, T: Elt + Copy>(
    op: Op<T>,
    f: fn(&Exp<T>, &Exp<T>) -> Exp<T>,
    dims: &[usize],
    data: Vec<T>,
) -> Result<(Vec<usize>, Vec<T>), Error> {
    {
        let a = use_array(array::<Snoc<Sh>, T>(dims, data));
        let cfg = Config::from_env().unwrap();
        Ok(match op {
            Op::Fold(z) => dims_and_data(&run_with(&a.fold(z, f), &cfg)?),
            Op::Fold1 => dims_and_data(&run_with(&a.fold1(f), &cfg)?),
            Op::Scanl(z) => dims_and_data(&run_with(&a.scanl(z, f), &cfg)?),
            Op::Scanl1 => dims_and_data(&run_with(&a.scanl1(f), &cfg)?),
            Op::Scanr(z) => dims_and_data(&run_with(&a.scanr(z, f), &cfg)?),
            Op::Scanr1 => dims_and_data(&run_with(&a.scanr1(f), &cfg)?),
        })
    }
}

/// `run_op_at` at the rank of `dims` (1, 2 or 3).
fn run_op<T: Elt + Copy>(
    op: Op<T>,
    f: fn(&Exp<T>, &Exp<T>) -> Exp<T>,
    dims: &[usize],
    data: Vec<T>,
) -> Result<(Vec<usize>, Vec<T>), Error> {
    match dims.len() {
        1 => run_op_at::<DIM0, T>(op, f, dims, data),
        2 => run_op_at::<DIM1, T>(op, f, dims, data),
        3 => run_op_at::<DIM2, T>(op, f, dims, data),
        r => panic!("rank {r} is not generated"),
    }
}

/// The plain-Rust definition: each row of the innermost dimension folded
/// or scanned sequentially.
fn reference<T: Copy>(op: Op<T>, f: impl Fn(T, T) -> T, dims: &[usize], data: &[T]) -> (Vec<usize>, Vec<T>) {
    let (&n, outer) = dims.split_last().expect("rank >= 1");
    let rows: usize = outer.iter().product();
    let mut out = Vec::new();
    for r in 0..rows {
        let row = &data[r * n..(r + 1) * n];
        match op {
            Op::Fold(z) => out.push(row.iter().fold(z, |a, &x| f(a, x))),
            Op::Fold1 => out.push(row[1..].iter().fold(row[0], |a, &x| f(a, x))),
            Op::Scanl(z) => {
                let mut acc = z;
                out.push(acc);
                for &x in row {
                    acc = f(acc, x);
                    out.push(acc);
                }
            }
            Op::Scanl1 => {
                let mut acc = row[0];
                out.push(acc);
                for &x in &row[1..] {
                    acc = f(acc, x);
                    out.push(acc);
                }
            }
            Op::Scanr(z) => {
                // out[n] = z, out[i] = f(x_i, out[i + 1])
                let mut line = vec![z; n + 1];
                for i in (0..n).rev() {
                    line[i] = f(row[i], line[i + 1]);
                }
                out.extend(line);
            }
            Op::Scanr1 => {
                let mut line = row.to_vec();
                for i in (0..n - 1).rev() {
                    line[i] = f(row[i], line[i + 1]);
                }
                out.extend(line);
            }
        }
    }
    let mut rdims = outer.to_vec();
    match op {
        Op::Fold(_) | Op::Fold1 => {}
        Op::Scanl(_) | Op::Scanr(_) => rdims.push(n + 1),
        Op::Scanl1 | Op::Scanr1 => rdims.push(n),
    }
    (rdims, out)
}

/// Float comparison by bit pattern, so that -0.0 differs from 0.0 and
/// infinities are exact. NaNs compare equal to each other whatever their
/// payload and sign: IEEE-754 does not specify which NaN an operation
/// returns, and the compiler may commute the operands of `+` and `*`, so a
/// payload difference is not a semantic difference.
trait FloatKey: Copy {
    fn key(self) -> Option<u64>;
}
impl FloatKey for f32 {
    fn key(self) -> Option<u64> {
        (!self.is_nan()).then_some(self.to_bits() as u64)
    }
}
impl FloatKey for f64 {
    fn key(self) -> Option<u64> {
        (!self.is_nan()).then(|| self.to_bits())
    }
}

fn assert_same_floats<T: FloatKey + Debug>(got: &(Vec<usize>, Vec<T>), want: &(Vec<usize>, Vec<T>)) {
    assert_eq!(got.0, want.0, "extents");
    let g: Vec<_> = got.1.iter().map(|x| x.key()).collect();
    let w: Vec<_> = want.1.iter().map(|x| x.key()).collect();
    assert_eq!(g, w, "got {:?}, want {:?}", got.1, want.1);
}

/// An extent in `lo..=hi`, with `lo` and 1 (empty and one-element rows)
/// generated often.
fn extent(lo: usize, hi: usize) -> impl Strategy<Value = usize> + Clone {
    prop_oneof![1 => Just(lo), 1 => Just(1.max(lo)), 4 => lo..=hi]
}

/// Extents of rank 1, 2 or 3 (at most 48 elements); the innermost extent
/// is at least `inner_lo`.
fn dims(inner_lo: usize) -> impl Strategy<Value = Vec<usize>> {
    prop_oneof![
        extent(inner_lo, 48).prop_map(|n| vec![n]),
        (extent(0, 6), extent(inner_lo, 8)).prop_map(|(a, b)| vec![a, b]),
        (extent(0, 3), extent(0, 4), extent(inner_lo, 4)).prop_map(|(a, b, c)| vec![a, b, c]),
    ]
}

fn shaped<T: Debug + Clone>(
    inner_lo: usize,
    elem: impl Strategy<Value = T> + Clone,
) -> impl Strategy<Value = (Vec<usize>, Vec<T>)> {
    dims(inner_lo).prop_flat_map(move |d| {
        let n: usize = d.iter().product();
        (Just(d), proptest::collection::vec(elem.clone(), n))
    })
}

macro_rules! int_elems {
    ($t:ty) => {
        prop_oneof![
            1 => Just(<$t>::MIN),
            1 => Just(<$t>::MAX),
            1 => Just(0 as $t),
            1 => Just(1 as $t),
            1 => Just((0 as $t).wrapping_sub(1)),
            5 => any::<$t>(),
        ]
    };
}

macro_rules! float_elems {
    ($t:ty) => {
        prop_oneof![
            1 => Just(<$t>::NAN),
            1 => Just(<$t>::INFINITY),
            1 => Just(<$t>::NEG_INFINITY),
            2 => Just(-0.0 as $t),
            2 => Just(0.0 as $t),
            1 => Just(<$t>::MAX),
            1 => Just(<$t>::MIN_POSITIVE),
            10 => any::<$t>(),
            60 => -1000.0 as $t..1000.0 as $t,
        ]
    };
}

// ---------------------------------------------------------------------------
// Properties on integers (wrapping) and floats (exact, sequential)

macro_rules! int_props {
    ($m:ident, $t:ty) => {
        mod $m {
            use super::*;

            fn add(a: &Exp<$t>, b: &Exp<$t>) -> Exp<$t> {
                a + b
            }
            fn add_ref(a: $t, b: $t) -> $t {
                a.wrapping_add(b)
            }
            /// Composition of affine maps `(m, c)`, first `p` then `q`:
            /// associative, not commutative; pins the order.
            fn affine(p: &Exp<($t, $t)>, q: &Exp<($t, $t)>) -> Exp<($t, $t)> {
                lift((p.fst() * q.fst(), p.snd() * q.fst() + q.snd()))
            }
            fn affine_ref(p: ($t, $t), q: ($t, $t)) -> ($t, $t) {
                (p.0.wrapping_mul(q.0), p.1.wrapping_mul(q.0).wrapping_add(q.1))
            }

            fn check(op: Op<$t>, d: &[usize], xs: &[$t]) {
                let got = run_op(op, add, d, xs.to_vec()).expect("runs");
                assert_eq!(got, reference(op, add_ref, d, xs), "{op:?} with + on {d:?}");
                // the elements as the maps x -> 31 * x + e, the seed as
                // x -> x + z: the second components are `acc * 31 + x`
                let maps: Vec<($t, $t)> = xs.iter().map(|&x| (31 as $t, x)).collect();
                let op = match op {
                    Op::Fold(z) => Op::Fold((1 as $t, z)),
                    Op::Fold1 => Op::Fold1,
                    Op::Scanl(z) => Op::Scanl((1 as $t, z)),
                    Op::Scanl1 => Op::Scanl1,
                    Op::Scanr(z) => Op::Scanr((1 as $t, z)),
                    Op::Scanr1 => Op::Scanr1,
                };
                let got = run_op(op, affine, d, maps.clone()).expect("runs");
                assert_eq!(got, reference(op, affine_ref, d, &maps), "{op:?} with affine maps on {d:?}");
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(64))]

                #[test]
                fn fold_with_seed_is_the_sequential_left_fold_of_each_row(
                    (d, xs) in shaped(0, int_elems!($t)), z in int_elems!($t)
                ) {
                    check(Op::Fold(z), &d, &xs);
                }

                #[test]
                fn fold1_is_the_left_fold_of_each_row_from_its_first_element(
                    (d, xs) in shaped(1, int_elems!($t))
                ) {
                    check(Op::Fold1, &d, &xs);
                }

                #[test]
                fn scanl_puts_the_seed_first_and_grows_each_row_by_one(
                    (d, xs) in shaped(0, int_elems!($t)), z in int_elems!($t)
                ) {
                    check(Op::Scanl(z), &d, &xs);
                }

                #[test]
                fn scanl1_is_the_inclusive_left_scan_of_each_row((d, xs) in shaped(1, int_elems!($t))) {
                    check(Op::Scanl1, &d, &xs);
                }

                #[test]
                fn scanr_puts_the_seed_last_and_applies_f_of_x_and_acc(
                    (d, xs) in shaped(0, int_elems!($t)), z in int_elems!($t)
                ) {
                    check(Op::Scanr(z), &d, &xs);
                }

                #[test]
                fn scanr1_is_the_inclusive_right_scan_of_each_row((d, xs) in shaped(1, int_elems!($t))) {
                    check(Op::Scanr1, &d, &xs);
                }
            }
        }
    };
}

int_props!(i8_props, i8);
int_props!(i32_props, i32);
int_props!(i64_props, i64);
int_props!(u8_props, u8);
int_props!(u64_props, u64);

macro_rules! float_props {
    ($m:ident, $t:ident) => {
        mod $m {
            use super::*;

            fn add(a: &Exp<$t>, b: &Exp<$t>) -> Exp<$t> {
                a + b
            }
            /// Associative, not commutative: pin which argument is the
            /// accumulator, and keep every special value exactly.
            fn first(a: &Exp<$t>, _b: &Exp<$t>) -> Exp<$t> {
                a.clone()
            }
            fn last(_a: &Exp<$t>, b: &Exp<$t>) -> Exp<$t> {
                b.clone()
            }

            /// `x` made a half-integer below 2^10 in magnitude (specials
            /// kept), so that sums of fewer than 2^13 of them are exact in
            /// any order: `+` commutes, and a backend may regroup it
            /// (`docs/semantics.md`; the CPU backend sums rows of 32 or more
            /// with interleaved accumulators). `-` pins the order instead.
            fn exact(x: $t) -> $t {
                if x.is_finite() {
                    (x.clamp(-1023.5, 1023.5) * 2.0).round() / 2.0
                } else {
                    x
                }
            }

            fn check(op: Op<$t>, d: &[usize], xs: &[$t]) {
                let sums: Vec<$t> = xs.iter().map(|&x| exact(x)).collect();
                let op_exact: Op<$t> = match op {
                    Op::Fold(z) => Op::Fold(exact(z)),
                    Op::Scanl(z) => Op::Scanl(exact(z)),
                    Op::Scanr(z) => Op::Scanr(exact(z)),
                    other => other,
                };
                let got = run_op(op_exact, add, d, sums.clone()).expect("runs");
                assert_same_floats(&got, &reference(op_exact, |a, b| a + b, d, &sums));
                let got = run_op(op, first, d, xs.to_vec()).expect("runs");
                assert_same_floats(&got, &reference(op, |a, _| a, d, xs));
                let got = run_op(op, last, d, xs.to_vec()).expect("runs");
                assert_same_floats(&got, &reference(op, |_, b| b, d, xs));
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(64))]

                #[test]
                fn fold_with_seed_is_the_sequential_left_fold_of_each_row(
                    (d, xs) in shaped(0, float_elems!($t)), z in float_elems!($t)
                ) {
                    check(Op::Fold(z), &d, &xs);
                }

                #[test]
                fn fold1_is_the_left_fold_of_each_row_from_its_first_element(
                    (d, xs) in shaped(1, float_elems!($t))
                ) {
                    check(Op::Fold1, &d, &xs);
                }

                #[test]
                fn scanl_puts_the_seed_first_and_grows_each_row_by_one(
                    (d, xs) in shaped(0, float_elems!($t)), z in float_elems!($t)
                ) {
                    check(Op::Scanl(z), &d, &xs);
                }

                #[test]
                fn scanl1_is_the_inclusive_left_scan_of_each_row((d, xs) in shaped(1, float_elems!($t))) {
                    check(Op::Scanl1, &d, &xs);
                }

                #[test]
                fn scanr_puts_the_seed_last_and_applies_f_of_x_and_acc(
                    (d, xs) in shaped(0, float_elems!($t)), z in float_elems!($t)
                ) {
                    check(Op::Scanr(z), &d, &xs);
                }

                #[test]
                fn scanr1_is_the_inclusive_right_scan_of_each_row((d, xs) in shaped(1, float_elems!($t))) {
                    check(Op::Scanr1, &d, &xs);
                }
            }
        }
    };
}

float_props!(f32_props, f32);
float_props!(f64_props, f64);

// ---------------------------------------------------------------------------
// Integer scans by `+`, `min`, `max` and the bit operators, which the CPU
// backend scans a vector at a time (Note [Vector scans]): rows of up to
// 200 elements (so every lane count, 8 to 64, and what is left after the
// last whole vector), sources fused (the even operators) or not (the odd
// ones), and a row long enough to be cut into pieces on the workers. One
// program per operator, seed or none: its seed is a parameter of its
// kernel, so the cases after the first come from the kernel cache.

macro_rules! vector_scan_props {
    ($m:ident, $t:ty) => {
        mod $m {
            use super::*;

            type Op2 = fn(&Exp<$t>, &Exp<$t>) -> Exp<$t>;
            type Ref2 = fn($t, $t) -> $t;

            /// The operators, in the language and in plain Rust.
            fn operators() -> [(&'static str, Op2, Ref2); 6] {
                [
                    ("+", |a, b| a + b, |a, b| a.wrapping_add(b)),
                    ("min", |a, b| a.min(b), |a, b| a.min(b)),
                    ("max", |a, b| a.max(b), |a, b| a.max(b)),
                    ("&", |a, b| a & b, |a, b| a & b),
                    ("|", |a, b| a | b, |a, b| a | b),
                    ("^", |a, b| a ^ b, |a, b| a ^ b),
                ]
            }

            /// `scanl z` (or `scanl1`) with operator `which` of the rows
            /// of the matrix `xs` (extents `d`), of `x * 3 + 1` for an
            /// even `which`, against the sequential reference.
            fn check(which: usize, seed: Option<$t>, d: &[usize], xs: &[$t], cfg: &Config) {
                let (name, f, f_ref) = operators()[which];
                let fused = which % 2 == 0;
                let elems: Vec<$t> = if fused {
                    xs.iter().map(|&x| x.wrapping_mul(3).wrapping_add(1)).collect()
                } else {
                    xs.to_vec()
                };
                let op = match seed {
                    Some(z) => Op::Scanl(z),
                    None => Op::Scanl1,
                };
                let a = use_array(array::<DIM2, $t>(d, xs.to_vec()));
                let a = if fused { a.map(|x| x * (3 as $t) + (1 as $t)) } else { a };
                let got = match seed {
                    Some(z) => run_with(&a.scanl(z, f), cfg),
                    None => run_with(&a.scanl1(f), cfg),
                };
                let got = dims_and_data(&got.expect("runs"));
                assert_eq!(
                    got,
                    reference(op, f_ref, d, &elems),
                    "{op:?} with {name} on {d:?}, fused {fused}"
                );
            }

            proptest! {
                #![proptest_config(ProptestConfig::with_cases(48))]

                #[test]
                fn integer_scans_by_vectors_are_the_sequential_scans(
                    which in 0..6usize,
                    seed in proptest::option::of(int_elems!($t)),
                    (d, xs) in (extent(0, 3), extent(1, 200)).prop_flat_map(|(a, b)| {
                        (Just(vec![a, b]), proptest::collection::vec(int_elems!($t), a * b))
                    }),
                ) {
                    check(which, seed, &d, &xs, &cfg());
                }
            }

            /// A row long enough to be cut into pieces when every launch
            /// is split (`with_parallel_work(0)`), by each operator.
            #[test]
            fn long_integer_scans_by_vectors_are_the_sequential_scans() {
                let n = 70_001;
                let xs: Vec<$t> =
                    (0..n as u64).map(|i| (i.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40) as $t).collect();
                let cfg = cfg().with_parallel_work(0);
                for which in 0..6 {
                    check(which, Some(5 as $t), &[1, n], &xs, &cfg);
                    check(which, None, &[1, n], &xs, &cfg);
                }
            }
        }
    };
}

vector_scan_props!(i8_vector_scans, i8);
vector_scan_props!(u16_vector_scans, u16);
vector_scan_props!(i32_vector_scans, i32);
vector_scan_props!(u32_vector_scans, u32);
vector_scan_props!(i64_vector_scans, i64);
vector_scan_props!(u64_vector_scans, u64);

/// A fused source whose last element reads past its array: the scan a
/// vector at a time reports the read, as the scan an element at a time
/// does, in a row short enough for one worker and in one cut into pieces.
#[test]
fn a_vector_scan_of_a_source_that_reads_past_its_array_fails() {
    for n in [100i64, 70_000] {
        for cfg in [cfg(), cfg().with_parallel_work(0)] {
            let xs = use_array(Vector::from_elems((0..n as i32).collect::<Vec<_>>()));
            let shifted = generate(index1(n), move |ix| xs.index(index1(unindex1(ix) + 1i64)));
            let err = run_with(&shifted.scanl(0i32, |a, b| a + b), &cfg).unwrap_err();
            assert!(matches!(err, Error::IndexOutOfBounds { .. }), "{n}: {err}");
        }
    }
}

// ---------------------------------------------------------------------------
// Edge cases, spelled out

fn cfg() -> Config {
    Config::from_env().expect("a valid ACCELERATE_* environment")
}

#[test]
fn fold_of_empty_rows_returns_seed() {
    let a = use_array(Array::from_vec(dim2(3, 0), Vec::<i32>::new()).unwrap());
    let r = run_with(&a.fold(7, |x, y| x + y), &cfg()).unwrap();
    assert_eq!(r.dims(), &[3]);
    assert_eq!(r.to_vec(), vec![7, 7, 7]);
}

#[test]
fn fold_of_an_empty_vector_is_a_scalar_holding_the_seed() {
    let a = use_array(Vector::<f64>::from_elems(vec![]));
    let r = run_with(&a.fold(-0.0, |x, y| x + y), &cfg()).unwrap();
    assert_eq!(r.dims(), &[] as &[usize]);
    assert_eq!(r.value().to_bits(), (-0.0f64).to_bits());
}

#[test]
fn fold_with_zero_outer_extent_gives_an_empty_result_of_the_outer_shape() {
    let a = use_array(Array::from_vec(dim2(0, 5), Vec::<i64>::new()).unwrap());
    let r = run_with(&a.fold(1, |x, y| x * y), &cfg()).unwrap();
    assert_eq!(r.dims(), &[0]);
    assert!(r.to_vec().is_empty());

    let b = use_array(Array::from_vec(dim3(2, 0, 3), Vec::<i64>::new()).unwrap());
    let r = run_with(&b.fold(1, |x, y| x * y), &cfg()).unwrap();
    assert_eq!(r.dims(), &[2, 0]);
    assert!(r.is_empty());
}

#[test]
fn fold1_with_zero_rows_of_zero_length_gives_an_empty_result() {
    let a = use_array(Array::from_vec(dim2(0, 0), Vec::<i64>::new()).unwrap());
    let r = run_with(&a.fold1(|x, y| x + y), &cfg()).unwrap();
    assert_eq!(r.dims(), &[0]);
}

#[test]
fn fold_with_a_non_commutative_operator_folds_left_to_right() {
    // the maps x -> 31 * x + e composed in order (associative): the
    // second component is ((7 * 31 + 1) * 31 + 2) * 31 + 3
    let affine =
        |p: &Exp<(i32, i32)>, q: &Exp<(i32, i32)>| lift((p.fst() * q.fst(), p.snd() * q.fst() + q.snd()));
    let a = use_array(Vector::from_elems(vec![(31i32, 1i32), (31, 2), (31, 3)]));
    let r = run_with(&a.fold((1, 7), affine), &cfg()).unwrap();
    assert_eq!(r.value(), (31 * 31 * 31, ((7 * 31 + 1) * 31 + 2) * 31 + 3));
    let r = run_with(&a.fold1(affine), &cfg()).unwrap();
    assert_eq!(r.value(), (31 * 31 * 31, (31 + 2) * 31 + 3));
}

#[test]
fn integer_fold_wraps_on_overflow() {
    let a = use_array(Vector::from_elems(vec![i32::MAX, 1, i32::MAX]));
    let r = run_with(&a.fold(0, |x, y| x + y), &cfg()).unwrap();
    assert_eq!(r.value(), i32::MAX.wrapping_add(1).wrapping_add(i32::MAX));
    let b = use_array(Vector::from_elems(vec![u8::MAX, 2]));
    let r = run_with(&b.fold1(|x, y| x * y), &cfg()).unwrap();
    assert_eq!(r.value(), 254);
}

#[test]
fn scans_with_projections_pin_the_argument_order() {
    // `first` and `last` are associative, not commutative
    let a = use_array(Vector::from_elems(vec![1i32, 2, 3]));
    let l = run_with(&a.scanl(10, |acc, _x| acc.clone()), &cfg()).unwrap();
    assert_eq!(l.to_vec(), vec![10, 10, 10, 10]);
    let l = run_with(&a.scanl(10, |_acc, x| x.clone()), &cfg()).unwrap();
    assert_eq!(l.to_vec(), vec![10, 1, 2, 3]);
    let l1 = run_with(&a.scanl1(|acc, _x| acc.clone()), &cfg()).unwrap();
    assert_eq!(l1.to_vec(), vec![1, 1, 1]);
    // scanr: out[3] = 10, out[i] = f(x_i, out[i + 1])
    let r = run_with(&a.scanr(10, |x, _acc| x.clone()), &cfg()).unwrap();
    assert_eq!(r.to_vec(), vec![1, 2, 3, 10]);
    let r = run_with(&a.scanr(10, |_x, acc| acc.clone()), &cfg()).unwrap();
    assert_eq!(r.to_vec(), vec![10, 10, 10, 10]);
    let r1 = run_with(&a.scanr1(|_x, acc| acc.clone()), &cfg()).unwrap();
    assert_eq!(r1.to_vec(), vec![3, 3, 3]);
}

#[test]
fn scans_with_a_seed_of_empty_rows_hold_only_the_seed() {
    let a = use_array(Array::from_vec(dim2(2, 0), Vec::<u16>::new()).unwrap());
    let l = run_with(&a.scanl(5, |x, y| x + y), &cfg()).unwrap();
    assert_eq!(l.dims(), &[2, 1]);
    assert_eq!(l.to_vec(), vec![5, 5]);
    let r = run_with(&a.scanr(6, |x, y| x + y), &cfg()).unwrap();
    assert_eq!(r.dims(), &[2, 1]);
    assert_eq!(r.to_vec(), vec![6, 6]);
}

#[test]
fn seedless_scans_with_zero_rows_give_empty_results_of_the_same_shape() {
    let a = use_array(Array::from_vec(dim2(0, 4), Vec::<i32>::new()).unwrap());
    let l = run_with(&a.scanl1(|x, y| x + y), &cfg()).unwrap();
    assert_eq!(l.dims(), &[0, 4]);
    let r = run_with(&a.scanr1(|x, y| x + y), &cfg()).unwrap();
    assert_eq!(r.dims(), &[0, 4]);
    let s = run_with(&a.scanl(0, |x, y| x + y), &cfg()).unwrap();
    assert_eq!(s.dims(), &[0, 5]);
}

#[test]
fn fold_of_pairs_reduces_each_component() {
    let xs = vec![(3i32, 1.5f32), (-4, 2.5), (10, -8.0)];
    let a = use_array(Vector::from_elems(xs));
    let r = run_with(
        &a.fold(lift((constant(0i32), constant(f32::NEG_INFINITY))), |p, q| {
            let (a0, a1) = p.unlift();
            let (b0, b1) = q.unlift();
            lift((a0 + b0, a1.max(b1)))
        }),
        &cfg(),
    )
    .unwrap();
    assert_eq!(r.value(), (9, 2.5));
}

#[test]
fn folding_twice_reduces_a_matrix_to_its_total() {
    let m = Array::from_fn(dim2(4, 5), |Snoc(Snoc(Z, i), j)| i * 10 + j).unwrap();
    let a = use_array(m);
    let r = run_with(&a.fold(0, |x, y| x + y).fold(0, |x, y| x + y), &cfg()).unwrap();
    let want: i64 = (0..4).flat_map(|i| (0..5).map(move |j| i * 10 + j)).sum();
    assert_eq!(r.value(), want);
}

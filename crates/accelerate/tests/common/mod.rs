//! Helpers shared by the property tests: proptest strategies for element
//! values (always mixed with the special values: NaN, ±infinity, -0.0,
//! subnormals, integer extremes), for shapes (always including empty and
//! one-element shapes) and for arrays; running a program inside
//! `accelerate::scope`; comparisons that treat NaN as equal to NaN; and
//! tests of hostile input run in a child process (`in_child`, `hostile!`).
//!
//! Each test binary uses a different subset of these helpers.
#![allow(dead_code)]

use accelerate::prelude::*;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;
use std::fmt::Debug;

// ---------------------------------------------------------------------------
// Element values

/// Element types with a strategy that mixes arbitrary values with the
/// special values of the type.
pub trait Gen: Elt + Copy + Debug {
    /// The values most likely to expose a wrong rule: extremes, zeros,
    /// NaNs, infinities, subnormals, values at the edges of cast ranges.
    fn specials() -> Vec<Self>;
    /// Arbitrary values of the whole range, the specials, and small values.
    fn strategy() -> BoxedStrategy<Self>;
}

/// The element strategy of `T` (see [`Gen`]).
pub fn elem<T: Gen>() -> BoxedStrategy<T> {
    T::strategy()
}

impl Gen for bool {
    fn specials() -> Vec<bool> {
        vec![false, true]
    }
    fn strategy() -> BoxedStrategy<bool> {
        any::<bool>().boxed()
    }
}

macro_rules! int_gen {
    ($($t:ty),*) => {$(
        impl Gen for $t {
            fn specials() -> Vec<$t> {
                let zero: $t = 0;
                vec![
                    <$t>::MIN,
                    <$t>::MAX,
                    zero,
                    1,
                    zero.wrapping_sub(1),
                    2,
                    zero.wrapping_sub(2),
                    <$t>::MIN.wrapping_add(1),
                    <$t>::MAX - 1,
                    (<$t>::BITS - 1) as $t,
                    <$t>::BITS as $t,
                    (<$t>::BITS + 1) as $t,
                ]
            }
            fn strategy() -> BoxedStrategy<$t> {
                prop_oneof![
                    3 => any::<$t>(),
                    2 => select(Self::specials()),
                    2 => (-40i64..40).prop_map(|x| x as $t),
                ]
                .boxed()
            }
        }
    )*};
}

int_gen!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_gen {
    ($t:ident, $quiet_payload:expr) => {
        impl Gen for $t {
            fn specials() -> Vec<$t> {
                vec![
                    $t::NAN,
                    -$t::NAN,
                    $t::from_bits($quiet_payload),
                    $t::INFINITY,
                    $t::NEG_INFINITY,
                    0.0,
                    -0.0,
                    1.0,
                    -1.0,
                    0.5,
                    -0.5,
                    1.5,
                    2.5,
                    -2.5,
                    $t::MIN,
                    $t::MAX,
                    $t::MIN_POSITIVE,
                    $t::from_bits(1),
                    -$t::from_bits(1),
                    $t::EPSILON,
                    std::$t::consts::PI,
                    127.5,
                    128.0,
                    -128.5,
                    -129.0,
                    255.5,
                    256.0,
                    65535.9,
                    65536.0,
                    -32768.9,
                    2147483520.0,
                    2147483648.0,
                    -2147483904.0,
                    4294967296.0,
                    9.2233715e18,
                    9.223372e18,
                    -9.223373e18,
                    1.8446744e19,
                    1.9e19,
                ]
            }
            fn strategy() -> BoxedStrategy<$t> {
                prop_oneof![
                    3 => proptest::num::$t::ANY,
                    2 => select(Self::specials()),
                    1 => -1000.0 as $t..1000.0 as $t,
                    1 => -2.0 as $t..2.0 as $t,
                ]
                .boxed()
            }
        }
    };
}

float_gen!(f32, 0x7fc0_0001);
float_gen!(f64, 0x7ff8_0000_0000_0001);

/// Float values whose sums are exact in any order: NaN, ±infinity, ±0.0
/// and multiples of 1/2 below 2^10 in magnitude (12 significant bits, so
/// that sums of up to 2^12 of them are exact even in f32). For operators
/// that a parallel backend may regroup (`fold` and the scans are taken to
/// be associative, `docs/semantics.md`), so that its result must still
/// equal the sequential reference bit for bit: the specials give the same
/// result in any order (NaN if NaN or both infinities occur, else the
/// infinity, and -0.0 only when every term is -0.0).
pub fn exact_float<T: Gen + From<f32>>() -> BoxedStrategy<T> {
    let specials = vec![f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 0.0, -0.0];
    prop_oneof![
        1 => select(specials).prop_map(T::from),
        4 => (-2047i32..2048).prop_map(|k| T::from(k as f32 / 2.0)),
    ]
    .boxed()
}

/// Pairs of elements: arbitrary pairs, equal pairs (so that `==` and `min`
/// of equal values are exercised), or every pair of specials.
pub fn pairs<T: Gen>() -> BoxedStrategy<Vec<(T, T)>> {
    prop_oneof![
        3 => vec((elem::<T>(), elem::<T>()), 0..48),
        1 => vec(elem::<T>().prop_map(|x| (x, x)), 0..16),
        1 => Just(special_pairs::<T>()),
    ]
    .boxed()
}

/// Every pair of special values of `T`.
pub fn special_pairs<T: Gen>() -> Vec<(T, T)> {
    let s = T::specials();
    s.iter().flat_map(|&x| s.iter().map(move |&y| (x, y))).collect()
}

/// Element vectors of length 0 to `max_len`, or the list of specials.
pub fn values<T: Gen>(max_len: usize) -> BoxedStrategy<Vec<T>> {
    prop_oneof![3 => vec(elem::<T>(), 0..=max_len), 1 => Just(T::specials())].boxed()
}

// ---------------------------------------------------------------------------
// Shapes and arrays

/// An extent from 0 to `max`, 0 and 1 being frequent.
pub fn extent(max: i64) -> BoxedStrategy<i64> {
    prop_oneof![1 => Just(0i64), 1 => Just(1i64), 4 => 0..=max].boxed()
}

/// An extent from 1 to `max`, 1 being frequent.
pub fn positive_extent(max: i64) -> BoxedStrategy<i64> {
    prop_oneof![1 => Just(1i64), 3 => 1..=max].boxed()
}

pub fn dim0_shape() -> BoxedStrategy<DIM0> {
    Just(Z).boxed()
}

pub fn dim1_shape(max: i64) -> BoxedStrategy<DIM1> {
    extent(max).prop_map(|n| Snoc(Z, n)).boxed()
}

pub fn dim2_shape(max: i64) -> BoxedStrategy<DIM2> {
    (extent(max), extent(max)).prop_map(|(a, b)| Snoc(Snoc(Z, a), b)).boxed()
}

pub fn dim3_shape(max: i64) -> BoxedStrategy<DIM3> {
    (extent(max), extent(max), extent(max)).prop_map(|(a, b, c)| Snoc(Snoc(Snoc(Z, a), b), c)).boxed()
}

/// Arrays of a shape drawn from `shape`, with elements drawn from `elem`.
pub fn array_of<Sh: Shape, E: Elt>(
    shape: BoxedStrategy<Sh>,
    elem: BoxedStrategy<E>,
) -> BoxedStrategy<Array<Sh, E>> {
    shape
        .prop_flat_map(move |sh| {
            vec(elem.clone(), sh.size()).prop_map(move |v| Array::from_vec(sh, v).expect("size matches"))
        })
        .boxed()
}

/// Vectors of length 0 to `max` of `T`'s values.
pub fn vector<T: Gen>(max: i64) -> BoxedStrategy<Vector<T>> {
    array_of(dim1_shape(max), elem::<T>())
}

/// Matrices of at most `max` by `max` of `T`'s values.
pub fn matrix<T: Gen>(max: i64) -> BoxedStrategy<Matrix<T>> {
    array_of(dim2_shape(max), elem::<T>())
}

/// Rank-3 arrays of at most `max` in every extent.
pub fn cube<T: Gen>(max: i64) -> BoxedStrategy<Array<DIM3, T>> {
    array_of(dim3_shape(max), elem::<T>())
}

// ---------------------------------------------------------------------------
// Running programs

/// A proptest configuration of `cases` cases that writes no regression
/// files into the source tree (a failure prints its minimal input).
pub fn config(cases: u32) -> ProptestConfig {
    ProptestConfig { cases, failure_persistence: None, ..ProptestConfig::default() }
}

/// Builds a program and runs it (its nodes are freed when it is dropped).
pub fn try_run<A: Arrays>(build: impl FnOnce() -> Acc<A>) -> Result<A, Error> {
    accelerate::run(&build())
}

/// `try_run`, failing the test case if `run` returns an error.
pub fn run_ok<A: Arrays>(build: impl FnOnce() -> Acc<A>) -> Result<A, TestCaseError> {
    try_run(build).map_err(|e| TestCaseError::fail(format!("run failed: {e}")))
}

/// Applies a scalar function to each value through `map`.
pub fn map_vec<A: Elt, B: Elt>(xs: &[A], f: impl FnOnce(&Exp<A>) -> Exp<B>) -> Result<Vec<B>, TestCaseError> {
    let input = Vector::from_elems(xs.to_vec());
    Ok(run_ok(|| use_array(input).map(f))?.to_vec())
}

/// Applies a scalar function of two arguments to each pair through
/// `zip_with`.
pub fn zip_vec<A: Elt, B: Elt, C: Elt>(
    xys: &[(A, B)],
    f: impl FnOnce(&Exp<A>, &Exp<B>) -> Exp<C>,
) -> Result<Vec<C>, TestCaseError> {
    let xs = Vector::from_elems(xys.iter().map(|p| p.0.clone()).collect());
    let ys = Vector::from_elems(xys.iter().map(|p| p.1.clone()).collect());
    Ok(run_ok(|| use_array(xs).zip_with(use_array(ys), f))?.to_vec())
}

// ---------------------------------------------------------------------------
// Comparing results

/// Equality for results: integers and booleans by value, floats by bits
/// (so -0.0 differs from 0.0) except that every NaN equals every NaN.
/// NaN payloads and signs produced by arithmetic are not specified by
/// IEEE-754 or by Rust (RFC 3514), so `same` does not look at them;
/// `exact` does, for data that is only moved, never computed.
pub trait Same: Debug {
    fn same(&self, other: &Self) -> bool;
    fn exact(&self, other: &Self) -> bool;
}

macro_rules! same_by_eq {
    ($($t:ty),*) => {$(
        impl Same for $t {
            fn same(&self, other: &Self) -> bool {
                self == other
            }
            fn exact(&self, other: &Self) -> bool {
                self == other
            }
        }
    )*};
}

same_by_eq!(bool, i8, i16, i32, i64, u8, u16, u32, u64, (), Z);

impl<Sh: Same> Same for Snoc<Sh> {
    fn same(&self, other: &Self) -> bool {
        self.0.same(&other.0) && self.1 == other.1
    }
    fn exact(&self, other: &Self) -> bool {
        self.same(other)
    }
}

macro_rules! same_float {
    ($($t:ty),*) => {$(
        impl Same for $t {
            fn same(&self, other: &Self) -> bool {
                (self.is_nan() && other.is_nan()) || self.to_bits() == other.to_bits()
            }
            fn exact(&self, other: &Self) -> bool {
                self.to_bits() == other.to_bits()
            }
        }
    )*};
}

same_float!(f32, f64);

macro_rules! same_tuple {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: Same),+> Same for ($($name,)+) {
            fn same(&self, other: &Self) -> bool {
                $(self.$idx.same(&other.$idx))&&+
            }
            fn exact(&self, other: &Self) -> bool {
                $(self.$idx.exact(&other.$idx))&&+
            }
        }
    };
}

same_tuple!(A 0);
same_tuple!(A 0, B 1);
same_tuple!(A 0, B 1, C 2);
same_tuple!(A 0, B 1, C 2, D 3);
same_tuple!(A 0, B 1, C 2, D 3, E 4);
same_tuple!(A 0, B 1, C 2, D 3, E 4, F 5);
same_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
same_tuple!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

impl<T: Same> Same for Option<T> {
    fn same(&self, other: &Self) -> bool {
        match (self, other) {
            (Some(a), Some(b)) => a.same(b),
            (None, None) => true,
            _ => false,
        }
    }
    fn exact(&self, other: &Self) -> bool {
        match (self, other) {
            (Some(a), Some(b)) => a.exact(b),
            (None, None) => true,
            _ => false,
        }
    }
}

impl<T: Same> Same for Vec<T> {
    fn same(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a.same(b))
    }
    fn exact(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other).all(|(a, b)| a.exact(b))
    }
}

impl<Sh: Shape, E: Elt + Same> Same for Array<Sh, E> {
    fn same(&self, other: &Self) -> bool {
        self.dims() == other.dims() && self.to_vec().same(&other.to_vec())
    }
    fn exact(&self, other: &Self) -> bool {
        self.dims() == other.dims() && self.to_vec().exact(&other.to_vec())
    }
}

/// Shows the first differing position of two vectors, to keep failure
/// messages short.
fn first_difference<T: Same>(actual: &[T], expected: &[T], exact: bool) -> String {
    if actual.len() != expected.len() {
        return format!("lengths differ: {} vs {}", actual.len(), expected.len());
    }
    match actual.iter().zip(expected).position(|(a, b)| if exact { !a.exact(b) } else { !a.same(b) }) {
        Some(i) => format!("first difference at {i}: actual {:?}, expected {:?}", actual[i], expected[i]),
        None => String::new(),
    }
}

/// Fails the test case unless `actual` is the same as `expected` (NaN
/// equal to NaN, floats otherwise bit-for-bit).
pub fn check_same<T: Same>(actual: &T, expected: &T, what: &str) -> Result<(), TestCaseError> {
    if actual.same(expected) {
        Ok(())
    } else {
        Err(TestCaseError::fail(format!("{what}:\n  actual:   {actual:?}\n  expected: {expected:?}")))
    }
}

/// `check_same` for vectors, naming the first position that differs.
pub fn check_same_vec<T: Same>(actual: &[T], expected: &[T], what: &str) -> Result<(), TestCaseError> {
    if actual.len() == expected.len() && actual.iter().zip(expected).all(|(a, b)| a.same(b)) {
        Ok(())
    } else {
        Err(TestCaseError::fail(format!("{what}: {}", first_difference(actual, expected, false))))
    }
}

/// Fails the test case unless `actual` is bit-for-bit `expected`,
/// including NaN payloads (for data that is moved, not computed).
pub fn check_exact<T: Same>(actual: &T, expected: &T, what: &str) -> Result<(), TestCaseError> {
    if actual.exact(expected) {
        Ok(())
    } else {
        Err(TestCaseError::fail(format!("{what}:\n  actual:   {actual:?}\n  expected: {expected:?}")))
    }
}

/// How many ulps the backend under test may differ from Rust's std in a
/// transcendental function (`exp`, `ln`, the trigonometric and hyperbolic
/// functions, `atan2`, `powf`): none on the interpreter, which calls std;
/// on the CPU backend, whose vectorised loops call glibc's vector math
/// (libmvec, Note [Vector math] in `backend/cpu/compile.rs`), 4 ulp from
/// the exact result by glibc's documented bound, plus 1 for the scalar
/// function std calls (within one ulp of the exact result). The largest
/// difference measured on this machine over 2^24 arguments was 4 (`logf`).
pub fn transcendental_ulps() -> u64 {
    match Config::from_env().map(|c| c.backend) {
        Ok(accelerate::Backend::Interpreter) => 0,
        _ => 5,
    }
}

/// Floats and their distance in ulps: the number of representable values
/// between two values of one sign (a zero of either sign counts as one
/// value, so +0.0 and -0.0 are 0 apart); NaN is 0 from NaN and infinitely
/// far from anything else.
pub trait Ulps: Copy + Debug {
    fn ulps_from(self, other: Self) -> u64;
}

macro_rules! ulps_impl {
    ($t:ty, $i:ty) => {
        impl Ulps for $t {
            fn ulps_from(self, other: $t) -> u64 {
                if self.is_nan() || other.is_nan() {
                    return if self.is_nan() && other.is_nan() { 0 } else { u64::MAX };
                }
                // bits as a line of integers in the order of the values
                let line = |x: $t| {
                    let b = x.to_bits() as $i;
                    if b < 0 {
                        (<$i>::MIN as i128) - (b as i128)
                    } else {
                        b as i128
                    }
                };
                (line(self) - line(other)).unsigned_abs() as u64
            }
        }
    };
}

ulps_impl!(f32, i32);
ulps_impl!(f64, i64);

/// Fails the test case unless each value is within `ulps` of the expected
/// one (exact when `ulps` is 0), naming the first that is not.
pub fn check_ulps_vec<T: Ulps>(
    actual: &[T],
    expected: &[T],
    ulps: u64,
    what: &str,
) -> Result<(), TestCaseError> {
    if actual.len() != expected.len() {
        return Err(TestCaseError::fail(format!(
            "{what}: {} values, expected {}",
            actual.len(),
            expected.len()
        )));
    }
    match actual.iter().zip(expected).position(|(a, b)| a.ulps_from(*b) > ulps) {
        None => Ok(()),
        Some(i) => Err(TestCaseError::fail(format!(
            "{what}: at {i}: {:?}, expected {:?}, more than {ulps} ulps apart",
            actual[i], expected[i]
        ))),
    }
}

/// Fails the test case unless `r` is an error that `is_expected` accepts.
pub fn check_error<A: Debug>(
    r: Result<A, Error>,
    is_expected: impl FnOnce(&Error) -> bool,
    what: &str,
) -> Result<(), TestCaseError> {
    match r {
        Err(e) if is_expected(&e) => Ok(()),
        Err(e) => Err(TestCaseError::fail(format!("{what}: wrong error: {e}"))),
        Ok(v) => Err(TestCaseError::fail(format!("{what}: expected an error, got {v:?}"))),
    }
}

// ---------------------------------------------------------------------------
// Black-Scholes (ICFP'13 Figure 1), shared by the sharing, simplifier,
// fusion and CPU backend tests.
//
// Not `accelerate_programs::blackscholes::callput` (the examples' and the
// benchmarks' transcription): the same formula with its operands in
// another order (`d.abs() * 0.2316419 + 1.0`, `v * v * 0.5`, the
// polynomial as a left fold), a different graph that the IR snapshots of
// `sharing.rs`, `simplify.rs` and `fusion.rs` record, and whose constant
// `r + v * v * 0.5` the simplifier test looks for.

#[allow(clippy::excessive_precision)] // the coefficients as the paper gives them
fn cnd_prime(d: &Exp<f32>) -> Exp<f32> {
    let coeff = [0.31938153f32, -0.356563782, 1.781477937, -1.821255978, 1.330274429];
    let rsqrt2pi = 0.398_942_3_f32;
    let k = 1.0f32 / (d.abs() * 0.2316419f32 + 1.0f32);
    let poly = &k * coeff.iter().rev().skip(1).fold(constant(coeff[4]), |acc, &c| acc * &k + c);
    (d * d * -0.5f32).exp() * rsqrt2pi * poly
}

/// The paper's Figure 1 Black-Scholes formula for one option (price,
/// strike, years) -> (call, put), with its sharing written as Rust lets.
pub fn callput(x: &Exp<(f32, f32, f32)>) -> Exp<(f32, f32)> {
    let (price, strike, years) = x.unlift();
    let r = constant(0.02f32);
    let v = constant(0.30f32);
    let v_sqrt_t = &v * years.sqrt();
    let d1 = ((&price / &strike).ln() + (&r + &v * &v * 0.5f32) * &years) / &v_sqrt_t;
    let d2 = &d1 - v_sqrt_t;
    let cnd = |d: &Exp<f32>| {
        let c = cnd_prime(d);
        d.gt(0.0f32).select(1.0f32 - &c, c)
    };
    let cnd_d1 = cnd(&d1);
    let cnd_d2 = cnd(&d2);
    let x_exp_rt = strike * (-r * years).exp();
    lift((&price * &cnd_d1 - &x_exp_rt * &cnd_d2, x_exp_rt * (1.0f32 - cnd_d2) - price * (1.0f32 - cnd_d1)))
}

// ---------------------------------------------------------------------------
// Child processes

/// Runs a child process to its end and returns its output, or fails the
/// test, saying what hung, if it has not ended after `limit`. The child
/// is put in a process group of its own, and the whole group is killed at
/// the limit, so that a C compiler it waits for does not outlive it.
pub fn run_with_limit(
    cmd: &mut std::process::Command,
    what: &str,
    limit: std::time::Duration,
) -> std::process::Output {
    use std::io::Read;
    use std::os::unix::process::CommandExt;
    use std::process::Stdio;
    let mut child = cmd
        .process_group(0)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawning the child ({what}): {e}"));
    // the pipes are read as the child writes, so that a child writing much
    // cannot block on a full pipe while this waits for it
    let drain = |p: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut p) = p {
                let _ = p.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = drain(child.stdout.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let stderr = drain(child.stderr.take().map(|p| Box::new(p) as Box<dyn Read + Send>));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if start.elapsed() > limit {
            let group = format!("-{}", child.id());
            let _ = std::process::Command::new("kill").args(["-KILL", "--", &group]).status();
            let _ = child.kill();
            let _ = child.wait();
            let err = stderr.join().unwrap_or_default();
            panic!("the child ({what}) hung: killed after {limit:?}\n{}", String::from_utf8_lossy(&err));
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let (stdout, stderr) = (stdout.join().unwrap_or_default(), stderr.join().unwrap_or_default());
    std::process::Output { status, stdout, stderr }
}

/// The compilation count a child process reported on a line
/// `compilations=N` of its standard output.
pub fn compilations(out: &std::process::Output) -> usize {
    let text = String::from_utf8_lossy(&out.stdout);
    text.lines()
        .find_map(|l| l.trim().strip_prefix("compilations="))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in the child's output:\n{text}"))
}

// ---------------------------------------------------------------------------
// Hostile input, in a child process

/// Runs the test `name` of this test binary again, alone, in a child
/// process with `role` set in its environment; it must finish within two
/// minutes and succeed, so that a crash or a hang fails the test instead
/// of killing the run.
pub fn in_child(role: &str, name: &str) {
    use std::process::{Command, Stdio};
    use std::time::{Duration, Instant};
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", name, "--nocapture", "--test-threads", "1"])
        .env(role, "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let t = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let out = child.wait_with_output().unwrap();
            assert!(
                status.success(),
                "{name} failed in its child ({status}):\n{}\n{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
            return;
        }
        if t.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("{name} hung in its child");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A test whose body runs in a child process (`in_child`, with the
/// environment variable named by the `ROLE` constant in scope).
#[allow(unused_macros)]
macro_rules! hostile {
    ($name:ident, $body:block) => {
        #[test]
        fn $name() {
            if std::env::var_os(ROLE).is_none() {
                return common::in_child(ROLE, stringify!($name));
            }
            $body
        }
    };
}

/// For each row `(offset, length, k)`, the sum of `xs[offset ..][..length]`
/// each times `ws[k]`: a fold nested in a `generate`, which the lifting
/// writes as a scalar loop per row whose reads of `ws` and of the row are
/// the same in every step.
pub fn weighted_row_sums(
    xs: Acc<Vector<f32>>,
    ws: Acc<Vector<f32>>,
    rows: Acc<Vector<(i64, i64, i64)>>,
) -> Acc<Vector<f32>> {
    generate(index1(rows.length()), move |i| {
        let (off, len, k) = rows.index(i).unlift();
        let (xs, ws) = (xs.clone(), ws.clone());
        generate(index1(len), move |t| xs.index(index1(&off + unindex1(t))) * ws.index(index1(&k)))
            .fold(0.0f32, |a, b| a + b)
            .the()
    })
}

//! Property tests of scalar semantics (docs/semantics.md, "Scalar
//! operations"), run through `map`, `zip_with` and `generate` and compared
//! with plain Rust: wrapping integer arithmetic, truncating division,
//! shifts, bit operations, comparisons (NaN included), min/max, abs/signum,
//! casts (Rust's `as`), float math (bit-for-bit against Rust's std),
//! lazy `cond`/`and`/`or`, `while_loop`, tuples, options and the
//! shape/index helpers.

mod common;

use accelerate::prelude::*;
use common::*;
use proptest::collection::vec;
use proptest::prelude::*;

fn ix1(i: i64) -> DIM1 {
    Snoc(Z, i)
}

fn ix2(i: i64, j: i64) -> DIM2 {
    Snoc(Snoc(Z, i), j)
}

fn ix3(i: i64, j: i64, k: i64) -> DIM3 {
    Snoc(Snoc(Snoc(Z, i), j), k)
}

/// Integer `abs` and `signum` written from their definitions (not with
/// `wrapping_abs`/`signum`), as references.
trait IntRef: Copy {
    fn abs_ref(self) -> Self;
    fn signum_ref(self) -> Self;
}

macro_rules! int_ref_signed {
    ($($t:ty),*) => {$(
        impl IntRef for $t {
            fn abs_ref(self) -> Self {
                // two's complement: the negation of MIN wraps to MIN
                if self < 0 { (!self).wrapping_add(1) } else { self }
            }
            fn signum_ref(self) -> Self {
                if self > 0 { 1 } else if self < 0 { -1 } else { 0 }
            }
        }
    )*};
}

macro_rules! int_ref_unsigned {
    ($($t:ty),*) => {$(
        impl IntRef for $t {
            fn abs_ref(self) -> Self {
                self
            }
            fn signum_ref(self) -> Self {
                if self > 0 { 1 } else { 0 }
            }
        }
    )*};
}

int_ref_signed!(i8, i16, i32, i64);
int_ref_unsigned!(u8, u16, u32, u64);

// ---------------------------------------------------------------------------
// Integer arithmetic, division, shifts, bit operations, comparisons

macro_rules! integer_ops {
    ($($m:ident: $t:ty),* $(,)?) => {$(
        mod $m {
            use super::*;

            proptest! {
                #![proptest_config(config(64))]

                #[test]
                fn add_sub_mul_and_neg_wrap(xys in pairs::<$t>()) {
                    let got = zip_vec(&xys, |x, y| lift((x + y, x - y, x * y, -x)))?;
                    let want: Vec<($t, $t, $t, $t)> = xys
                        .iter()
                        .map(|&(x, y)| (x.wrapping_add(y), x.wrapping_sub(y), x.wrapping_mul(y), x.wrapping_neg()))
                        .collect();
                    check_same_vec(&got, &want, "+ - * neg")?;
                }

                #[test]
                fn div_and_rem_truncate_toward_zero(xys in pairs::<$t>()) {
                    // zero divisors are another test's concern
                    let xys: Vec<($t, $t)> = xys.into_iter().map(|(x, y)| (x, if y == 0 { 1 } else { y })).collect();
                    let got = zip_vec(&xys, |x, y| lift((x / y, x % y, x.quot(y))))?;
                    let want: Vec<($t, $t, $t)> = xys
                        .iter()
                        .map(|&(x, y)| (x.wrapping_div(y), x.wrapping_rem(y), x.wrapping_div(y)))
                        .collect();
                    check_same_vec(&got, &want, "/ % quot")?;
                    // and the defining identity x == (x / y) * y + x % y
                    for (&(x, y), &(q, r, _)) in xys.iter().zip(&got) {
                        prop_assert_eq!(q.wrapping_mul(y).wrapping_add(r), x);
                    }
                }

                #[test]
                fn shifts_take_the_amount_modulo_the_bit_width(xys in pairs::<$t>()) {
                    let got = zip_vec(&xys, |x, y| lift((x << y, x >> y)))?;
                    let want: Vec<($t, $t)> = xys
                        .iter()
                        .map(|&(x, y)| {
                            let s = (y as u32) % <$t>::BITS;
                            (x << s, x >> s)
                        })
                        .collect();
                    check_same_vec(&got, &want, "<< >>")?;
                }

                #[test]
                fn bit_operations_match_rust(xys in pairs::<$t>()) {
                    let got = zip_vec(&xys, |x, y| lift((x & y, x | y, x ^ y, !x)))?;
                    let want: Vec<($t, $t, $t, $t)> =
                        xys.iter().map(|&(x, y)| (x & y, x | y, x ^ y, !x)).collect();
                    check_same_vec(&got, &want, "& | ^ !")?;
                }

                #[test]
                fn comparisons_match_rust(xys in pairs::<$t>()) {
                    let got = zip_vec(&xys, |x, y| lift((x.lt(y), x.le(y), x.gt(y), x.ge(y), x.eq(y), x.ne(y))))?;
                    let want: Vec<_> =
                        xys.iter().map(|&(x, y)| (x < y, x <= y, x > y, x >= y, x == y, x != y)).collect();
                    check_same_vec(&got, &want, "< <= > >= == !=")?;
                }

                #[test]
                fn min_max_abs_and_signum_match_rust(xys in pairs::<$t>()) {
                    let got = zip_vec(&xys, |x, y| lift((x.min(y), x.max(y), x.abs(), x.signum())))?;
                    let want: Vec<($t, $t, $t, $t)> = xys
                        .iter()
                        .map(|&(x, y)| (std::cmp::min(x, y), std::cmp::max(x, y), x.abs_ref(), x.signum_ref()))
                        .collect();
                    check_same_vec(&got, &want, "min max abs signum")?;
                }

                #[test]
                fn literals_may_stand_on_either_side(l in elem::<$t>(), xys in pairs::<$t>()) {
                    let xys: Vec<($t, $t)> = xys.into_iter().map(|(x, y)| (x, if y == 0 { 1 } else { y })).collect();
                    let got = zip_vec(&xys, move |x, y| {
                        lift((l - x, l * x + l, l / y, l % y, l << x, l >> x, l ^ x, (l & x) | l))
                    })?;
                    let want: Vec<_> = xys
                        .iter()
                        .map(|&(x, y)| {
                            (
                                l.wrapping_sub(x),
                                l.wrapping_mul(x).wrapping_add(l),
                                l.wrapping_div(y),
                                l.wrapping_rem(y),
                                l.wrapping_shl(x as u32),
                                l.wrapping_shr(x as u32),
                                l ^ x,
                                (l & x) | l,
                            )
                        })
                        .collect();
                    check_same_vec(&got, &want, "literal on the left")?;
                }
            }
        }
    )*};
}

integer_ops! {
    integer_ops_of_i8: i8,
    integer_ops_of_i16: i16,
    integer_ops_of_i32: i32,
    integer_ops_of_i64: i64,
    integer_ops_of_u8: u8,
    integer_ops_of_u16: u16,
    integer_ops_of_u32: u32,
    integer_ops_of_u64: u64,
}

#[test]
fn min_divided_by_minus_one_wraps_to_min_and_leaves_remainder_zero() {
    macro_rules! check {
        ($($t:ty),*) => {$(
            let got = map_vec(&[<$t>::MIN], |x| {
                lift((x / (-1 as $t), x % (-1 as $t), x.quot(-1 as $t), x.abs(), -x))
            })
            .unwrap();
            assert_eq!(got, vec![(<$t>::MIN, 0, <$t>::MIN, <$t>::MIN, <$t>::MIN)], "{}", stringify!($t));
        )*};
    }
    check!(i8, i16, i32, i64);
}

#[test]
fn shifts_follow_the_documented_examples() {
    let got = map_vec(&[-8i32], |x| lift((x >> 1i32, x << 33i32, x >> -1i32, x >> 35i32))).unwrap();
    assert_eq!(got, vec![(-4, -16, -1, -1)], "arithmetic >> on i32, amounts taken modulo 32");
    let got = map_vec(&[0x80u8], |x| lift((x >> 7u8, x >> 9u8, x << 8u8, x << 255u8))).unwrap();
    assert_eq!(got, vec![(1, 0x40, 0x80, 0)], "logical >> on u8, amounts taken modulo 8");
    let got = map_vec(&[1i64], |x| lift((x << -1i64, x << 64i64, x << 127i64))).unwrap();
    assert_eq!(got, vec![(i64::MIN, 1, i64::MIN)], "i64 amounts taken modulo 64");
    let got = map_vec(&[-1i8], |x| lift((x >> 9i8, x << 9i8, (x << 7i8) >> 7i8))).unwrap();
    assert_eq!(got, vec![(-1, -2, -1)], "i8 amounts taken modulo 8");
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn boolean_operators_match_rust(xys in pairs::<bool>()) {
        let got = zip_vec(&xys, |x, y| lift((x.and(y), x.or(y), x & y, x | y, !x, x.eq(y), x.ne(y), x.lt(y))))?;
        let want: Vec<_> =
            xys.iter().map(|&(x, y)| (x && y, x || y, x & y, x | y, !x, x == y, x != y, !x & y)).collect();
        check_same_vec(&got, &want, "boolean operators")?;
    }
}

// ---------------------------------------------------------------------------
// Floating point

/// Runs each named unary method of a float type through `map` and compares
/// with the method of the same name in Rust's std.
macro_rules! unary_checks {
    ($t:ty, $xs:expr, $($op:ident),*) => {$(
        let got = map_vec($xs, |x| x.$op())?;
        let want: Vec<$t> = $xs.iter().map(|x| x.$op()).collect();
        check_same_vec(&got, &want, stringify!($op))?;
    )*};
}

/// `unary_checks` for the transcendental functions, within the backend's
/// `transcendental_ulps`.
macro_rules! transcendental_checks {
    ($t:ty, $xs:expr, $($op:ident),*) => {$(
        let got = map_vec($xs, |x| x.$op())?;
        let want: Vec<$t> = $xs.iter().map(|x| x.$op()).collect();
        check_ulps_vec(&got, &want, transcendental_ulps(), stringify!($op))?;
    )*};
}

macro_rules! float_ops {
    ($($m:ident: $t:ident),* $(,)?) => {$(
        mod $m {
            use super::*;

            /// Rust leaves `f32::min`/`max` of +0.0 and -0.0 unspecified ("may
            /// return either", Rust's docs): for two zero arguments only "a
            /// zero" is checked, by mapping a zero result to +0.0.
            fn zero_sign_either(x: $t, y: $t, r: $t) -> $t {
                if x == 0.0 && y == 0.0 && r == 0.0 { 0.0 } else { r }
            }

            proptest! {
                #![proptest_config(config(64))]

                #[test]
                fn math_functions_match_rust_std(xs in values::<$t>(48)) {
                    // correctly rounded in IEEE and in every backend: exact
                    unary_checks!($t, &xs, sqrt, floor, ceil, round, trunc, signum);
                    transcendental_checks!($t, &xs, exp, ln, sin, cos, tan, asin, acos, atan, sinh, cosh, tanh);
                }

                #[test]
                fn neg_and_abs_only_change_the_sign_bit(xs in values::<$t>(48)) {
                    let got = map_vec(&xs, |x| lift((-x, x.abs())))?;
                    let want: Vec<($t, $t)> = xs.iter().map(|&x| (-x, x.abs())).collect();
                    check_exact(&got, &want, "neg abs")?;
                }

                #[test]
                fn classification_matches_rust(xs in values::<$t>(48)) {
                    let got = map_vec(&xs, |x| lift((x.is_nan(), x.is_infinite())))?;
                    let want: Vec<_> = xs.iter().map(|x| (x.is_nan(), x.is_infinite())).collect();
                    check_same_vec(&got, &want, "is_nan is_infinite")?;
                }

                #[test]
                fn arithmetic_is_ieee_and_matches_rust(xys in pairs::<$t>()) {
                    let got = zip_vec(&xys, |x, y| lift((x + y, x - y, x * y, x / y)))?;
                    let want: Vec<_> = xys.iter().map(|&(x, y)| (x + y, x - y, x * y, x / y)).collect();
                    check_same_vec(&got, &want, "+ - * /")?;
                }

                #[test]
                fn binary_math_functions_match_rust_std(xys in pairs::<$t>()) {
                    let got = zip_vec(&xys, |x, y| lift((x.atan2(y), x.powf(y), x.log_base(y))))?;
                    let want: Vec<_> = xys.iter().map(|&(x, y)| (x.atan2(y), x.powf(y), x.log(y))).collect();
                    let u = transcendental_ulps();
                    let leaf = |v: &[($t, $t, $t)], k: usize| -> Vec<$t> {
                        v.iter().map(|t| [t.0, t.1, t.2][k]).collect()
                    };
                    check_ulps_vec(&leaf(&got, 0), &leaf(&want, 0), u, "atan2")?;
                    check_ulps_vec(&leaf(&got, 1), &leaf(&want, 1), u, "powf")?;
                    // log(x) / log(y): two results within u ulps each, and
                    // the division's rounding
                    check_ulps_vec(&leaf(&got, 2), &leaf(&want, 2), 2 * u + 1, "log_base")?;
                }

                #[test]
                fn min_and_max_ignore_a_single_nan_like_rust(xys in pairs::<$t>()) {
                    let got = zip_vec(&xys, |x, y| lift((x.min(y), x.max(y))))?;
                    let got: Vec<($t, $t)> = xys
                        .iter()
                        .zip(got)
                        .map(|(&(x, y), (a, b))| (zero_sign_either(x, y, a), zero_sign_either(x, y, b)))
                        .collect();
                    let want: Vec<($t, $t)> = xys
                        .iter()
                        .map(|&(x, y)| (zero_sign_either(x, y, x.min(y)), zero_sign_either(x, y, x.max(y))))
                        .collect();
                    check_same_vec(&got, &want, "min max")?;
                    // the rule itself: a single NaN argument is ignored
                    for (&(x, y), &(a, b)) in xys.iter().zip(&got) {
                        if x.is_nan() != y.is_nan() {
                            let other = if x.is_nan() { y } else { x };
                            prop_assert!(
                                a.exact(&other) && b.exact(&other),
                                "min/max({x}, {y}) should be {other}, got ({a}, {b})"
                            );
                        }
                    }
                }

                #[test]
                fn powi_matches_rust_std(xns in vec((elem::<$t>(), elem::<i32>()), 0..48)) {
                    let got = zip_vec(&xns, |x, n| x.powi(n))?;
                    let want: Vec<$t> = xns.iter().map(|&(x, n)| x.powi(n)).collect();
                    check_same_vec(&got, &want, "powi")?;
                }

                #[test]
                fn comparisons_are_ieee(xys in pairs::<$t>()) {
                    let got = zip_vec(&xys, |x, y| lift((x.lt(y), x.le(y), x.gt(y), x.ge(y), x.eq(y), x.ne(y))))?;
                    let want: Vec<_> =
                        xys.iter().map(|&(x, y)| (x < y, x <= y, x > y, x >= y, x == y, x != y)).collect();
                    check_same_vec(&got, &want, "< <= > >= == !=")?;
                }

                #[test]
                fn literals_may_stand_on_either_side(l in elem::<$t>(), xs in values::<$t>(32)) {
                    let got = map_vec(&xs, move |x| lift((l - x, l * x, l / x, l + x, x / l, x.powf(l), x.max(l))))?;
                    let want: Vec<_> =
                        xs.iter().map(|&x| (l - x, l * x, l / x, l + x, x / l, x.powf(l), x.max(l))).collect();
                    // x.max(l) of two zeros may return either (Rust's docs)
                    let norm = |v: Vec<($t, $t, $t, $t, $t, $t, $t)>| -> Vec<_> {
                        v.into_iter()
                            .zip(&xs)
                            .map(|(mut t, &x)| {
                                t.6 = zero_sign_either(x, l, t.6);
                                t
                            })
                            .collect()
                    };
                    // powf within the backend's ulps (checked apart), the rest exact
                    let powf = |v: &[($t, $t, $t, $t, $t, $t, $t)]| -> Vec<$t> { v.iter().map(|t| t.5).collect() };
                    check_ulps_vec(&powf(&got), &powf(&want), transcendental_ulps(), "powf")?;
                    let without_powf = |v: Vec<($t, $t, $t, $t, $t, $t, $t)>| -> Vec<_> {
                        norm(v).into_iter().map(|mut t| {
                            t.5 = 0.0;
                            t
                        }).collect::<Vec<_>>()
                    };
                    check_same_vec(&without_powf(got), &without_powf(want), "literal on the left")?;
                }
            }

            #[test]
            fn nan_compares_false_except_ne() {
                let others = <$t as Gen>::specials();
                for nan in [$t::NAN, -$t::NAN] {
                    let xys: Vec<($t, $t)> = others.iter().map(|&y| (nan, y)).collect();
                    let got = zip_vec(&xys, |x, y| lift((x.lt(y), x.le(y), x.gt(y), x.ge(y), x.eq(y), x.ne(y))))
                        .unwrap();
                    assert!(got.iter().all(|r| *r == (false, false, false, false, false, true)), "{got:?}");
                    let got = zip_vec(&xys, |x, y| lift((y.lt(x), y.le(x), y.gt(x), y.ge(x), y.eq(x), y.ne(x))))
                        .unwrap();
                    assert!(got.iter().all(|r| *r == (false, false, false, false, false, true)), "{got:?}");
                }
            }

            #[test]
            fn signed_zeros_are_equal_but_keep_their_sign() {
                let got = map_vec(&[-0.0 as $t], |x| {
                    lift((x.eq(0.0 as $t), x.lt(0.0 as $t), x.signum(), x * 1.0 as $t, (1.0 as $t) / x))
                })
                .unwrap();
                assert_eq!(got.len(), 1);
                let (eq, lt, sg, m, inv) = got[0];
                assert!(eq && !lt);
                assert_eq!(sg.to_bits(), (-1.0 as $t).to_bits());
                assert_eq!(m.to_bits(), (-0.0 as $t).to_bits());
                assert_eq!(inv, $t::NEG_INFINITY);
            }

            #[test]
            fn round_goes_half_away_from_zero() {
                let xs: Vec<$t> = vec![0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999997];
                let got = map_vec(&xs, |x| x.round()).unwrap();
                let want: Vec<$t> = vec![1.0, 2.0, 3.0, -1.0, -2.0, -3.0, 0.0];
                check_exact(&got, &want, "round").unwrap();
            }
        }
    )*};
}

float_ops! {
    float_ops_of_f32: f32,
    float_ops_of_f64: f64,
}

// ---------------------------------------------------------------------------
// Casts

macro_rules! casts_from {
    ($($name:ident: $t:ty),* $(,)?) => {$(
        proptest! {
            #![proptest_config(config(64))]

            #[test]
            #[allow(clippy::unnecessary_cast)]
            fn $name(xs in values::<$t>(64)) {
                let got = map_vec(&xs, |x| {
                    lift((
                        lift((x.cast::<i8>(), x.cast::<i16>(), x.cast::<i32>(), x.cast::<i64>(), x.cast::<u8>())),
                        lift((x.cast::<u16>(), x.cast::<u32>(), x.cast::<u64>(), x.cast::<f32>(), x.cast::<f64>())),
                    ))
                })?;
                let want: Vec<_> = xs
                    .iter()
                    .map(|&x| {
                        (
                            (x as i8, x as i16, x as i32, x as i64, x as u8),
                            (x as u16, x as u32, x as u64, x as f32, x as f64),
                        )
                    })
                    .collect();
                check_same_vec(&got, &want, "casts")?;
            }
        }
    )*};
}

casts_from! {
    casts_from_i8_match_rust_as: i8,
    casts_from_i16_match_rust_as: i16,
    casts_from_i32_match_rust_as: i32,
    casts_from_i64_match_rust_as: i64,
    casts_from_u8_match_rust_as: u8,
    casts_from_u16_match_rust_as: u16,
    casts_from_u32_match_rust_as: u32,
    casts_from_u64_match_rust_as: u64,
    casts_from_f32_match_rust_as: f32,
    casts_from_f64_match_rust_as: f64,
}

#[test]
fn casts_from_bool_give_zero_or_one() {
    let got = map_vec(&[false, true], |x| {
        lift((
            lift((x.cast::<i8>(), x.cast::<i16>(), x.cast::<i32>(), x.cast::<i64>(), x.cast::<u8>())),
            lift((x.cast::<u16>(), x.cast::<u32>(), x.cast::<u64>(), x.cast::<f32>(), x.cast::<f64>())),
        ))
    })
    .unwrap();
    assert_eq!(got, vec![((0, 0, 0, 0, 0), (0, 0, 0, 0.0, 0.0)), ((1, 1, 1, 1, 1), (1, 1, 1, 1.0, 1.0))]);
}

#[test]
fn float_to_integer_casts_truncate_and_saturate_with_nan_giving_zero() {
    let xs = [f64::NAN, -f64::NAN, 1e10, -1e10, f64::INFINITY, f64::NEG_INFINITY, -2.7, 2.7, 300.7, -0.0];
    let got =
        map_vec(&xs, |x| lift((x.cast::<i32>(), x.cast::<u8>(), x.cast::<i8>(), x.cast::<u64>()))).unwrap();
    let want = vec![
        (0, 0, 0, 0),
        (0, 0, 0, 0),
        (i32::MAX, u8::MAX, i8::MAX, 10_000_000_000),
        (i32::MIN, 0, i8::MIN, 0),
        (i32::MAX, u8::MAX, i8::MAX, u64::MAX),
        (i32::MIN, 0, i8::MIN, 0),
        (-2, 0, -2, 0),
        (2, 2, 2, 2),
        (300, 255, 127, 300),
        (0, 0, 0, 0),
    ];
    assert_eq!(got, want);
    let got = map_vec(&[f32::NAN, 3.0e9, -3.0e9, 1.5], |x| lift((x.cast::<i64>(), x.cast::<u32>()))).unwrap();
    assert_eq!(got, vec![(0, 0), (3_000_000_000, 3_000_000_000), (-3_000_000_000, 0), (1, 1)]);
}

#[test]
fn integer_casts_truncate_or_extend_and_round_to_nearest_float() {
    let got = map_vec(&[-1i32, 300, i32::MIN], |x| {
        lift((x.cast::<u32>(), x.cast::<u8>(), x.cast::<i8>(), x.cast::<i64>(), x.cast::<u64>()))
    })
    .unwrap();
    assert_eq!(
        got,
        vec![
            (u32::MAX, 255, -1, -1, u64::MAX),
            (300, 44, 44, 300, 300),
            (0x8000_0000, 0, 0, i32::MIN as i64, 0xFFFF_FFFF_8000_0000)
        ]
    );
    let got = map_vec(&[u64::MAX, (1 << 24) + 1], |x| lift((x.cast::<f32>(), x.cast::<f64>()))).unwrap();
    assert_eq!(got, vec![(18446744073709551616.0, 18446744073709551616.0), (16777216.0, 16777217.0)]);
}

// ---------------------------------------------------------------------------
// Lazy evaluation: cond/select, and/or

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn select_evaluates_only_the_branch_taken(a in vector::<i32>(20), n in extent(40)) {
        let len = a.len() as i64;
        let (sel, cnd) = run_ok(|| {
            let v = use_array(a.clone());
            let sel = generate(index1(n), |ix| {
                let i = unindex1(ix);
                i.lt(v.size()).select(v.index(index1(i)), -1i32)
            });
            let cnd = generate(index1(n), move |ix| cond(unindex1(ix).ge(v.size()), constant(-1i32), v.index(ix)));
            lift_acc((sel, cnd))
        })?;
        let want: Vec<i32> = (0..n).map(|i| if i < len { a.to_vec()[i as usize] } else { -1 }).collect();
        prop_assert_eq!(sel.to_vec(), want.clone());
        prop_assert_eq!(cnd.to_vec(), want);
    }

    #[test]
    fn select_guards_a_division_by_zero(xys in pairs::<i32>()) {
        let got = zip_vec(&xys, |x, y| y.ne(0i32).select(x / y, x))?;
        let want: Vec<i32> = xys.iter().map(|&(x, y)| if y != 0 { x.wrapping_div(y) } else { x }).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn an_unguarded_read_past_the_end_is_an_error(a in vector::<i32>(20), past in 0i64..3) {
        let r = try_run(|| {
            let v = use_array(a.clone());
            generate(index1(v.size() + 1i64 + past), move |ix| v.index(ix))
        });
        check_error(r, |e| matches!(e, Error::IndexOutOfBounds { .. }), "read past the end")?;
    }

    #[test]
    fn a_shared_expression_used_only_under_guards_is_not_evaluated(a in vector::<i64>(20), n in extent(40)) {
        // `r` and `p` are Rust variables naming one term each, used twice,
        // but every use is guarded: per the semantics of `select`, `and`
        // and `or`, no read past the end happens.
        let len = a.len() as i64;
        let r = run_ok(|| {
            let v = use_array(a.clone());
            generate(index1(n), move |ix| {
                let i = unindex1(ix);
                let inside = i.lt(v.size());
                let r = v.index(index1(i));
                let p = r.gt(0i64);
                lift((inside.select(&r, -1i64), inside.select(&r + 1i64, -2i64), inside.and(&p), (!inside).or(p)))
            })
        })?;
        let xs = a.to_vec();
        let want: Vec<_> = (0..n)
            .map(|i| {
                if i < len {
                    let x = xs[i as usize];
                    (x, x.wrapping_add(1), x > 0, x > 0)
                } else {
                    (-1, -2, false, true)
                }
            })
            .collect();
        prop_assert_eq!(r.to_vec(), want);
    }

    #[test]
    fn a_shared_division_used_only_under_guards_is_not_evaluated(xys in pairs::<i32>()) {
        let got = zip_vec(&xys, |x, y| {
            let d = x / y;
            lift((y.ne(0i32).select(&d, 0i32), y.ne(0i32).select(d ^ 1i32, 1i32)))
        })?;
        let want: Vec<(i32, i32)> = xys
            .iter()
            .map(|&(x, y)| if y != 0 { (x.wrapping_div(y), x.wrapping_div(y) ^ 1) } else { (0, 1) })
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn cond_selects_between_tuples(xs in vec((any::<bool>(), elem::<u8>(), elem::<f32>()), 0..40)) {
        let got = map_vec(&xs, |t| {
            let (c, a, b) = t.unlift();
            cond(c, lift((&a, &b)), lift((a ^ 0xffu8, -b)))
        })?;
        let want: Vec<(u8, f32)> = xs.iter().map(|&(c, a, b)| if c { (a, b) } else { (a ^ 0xff, -b) }).collect();
        check_exact(&got, &want, "cond on pairs")?;
    }

    #[test]
    fn and_and_or_evaluate_their_second_argument_only_when_needed(
        a in vector::<i32>(20), n in extent(40)
    ) {
        let len = a.len() as i64;
        let r = run_ok(|| {
            let v = use_array(a.clone());
            generate(index1(n), move |ix| {
                let i = unindex1(ix);
                let inside = i.lt(v.size());
                let positive = || v.index(index1(&i)).gt(0i32);
                lift((inside.and(positive()), (!&inside).or(positive()), &inside & positive(), (!inside) | positive()))
            })
        })?;
        let xs = a.to_vec();
        let want: Vec<_> = (0..n)
            .map(|i| {
                let p = |i: i64| xs[i as usize] > 0;
                let and = i < len && p(i);
                let or = i >= len || p(i);
                (and, or, and, or)
            })
            .collect();
        prop_assert_eq!(r.to_vec(), want);
    }
}

// ---------------------------------------------------------------------------
// while_loop

/// Two loops over `j < n` per element `n`: the sum of `t[j % len] *
/// (j + 1)` and the sum of `100 / t[j % len]` (which divides by zero
/// where the table has a zero), combined by `form`: 0 as arguments of
/// `+`, 1 let-bound and read on every path, 2 under a conditional.
fn sibling_sums(ns: &[i64], table: &[i64], form: usize) -> Acc<Vector<i64>> {
    let len = table.len() as i64;
    let t = use_array(Vector::from_elems(table.to_vec()));
    let sum = |n: &Exp<i64>, divide: bool| {
        let (t, n) = (t.clone(), n.clone());
        while_loop(
            lift((constant(0i64), constant(0i64))),
            move |s| s.fst().lt(&n),
            move |s| {
                let (j, a) = s.unlift();
                let x = t.index(index1(&j % len));
                let term = if divide { 100i64 / x } else { x * (&j + 1i64) };
                lift((j + 1i64, a + term))
            },
        )
        .snd()
    };
    use_array(Vector::from_elems(ns.to_vec())).map(|n| {
        let (a, b) = (sum(n, false), sum(n, true));
        match form {
            0 => a * 7i64 + b,
            1 => &a * &a + &b * &a + &b,
            _ => cond(n.lt(4i64), a, b),
        }
    })
}

/// Loops over one count in one element are merged into one loop where
/// every evaluation of the element evaluates both (Note [Sibling loops]
/// in `opt/sibling_loops.rs`), and kept apart under a conditional, where
/// the loop not taken may divide by zero without failing the program.
#[test]
fn sibling_while_loops_are_one_loop_where_both_are_evaluated() {
    for (form, loops) in [(0, 1), (1, 1), (2, 2)] {
        let p = sibling_sums(&[1, 5], &[1, 2, 3], form);
        let text = accelerate::explain(&p).unwrap();
        let plan = text.split("== plan ==").nth(1).unwrap();
        // each loop once in each of the kernel's two functions (by index
        // and by position)
        assert_eq!(plan.matches("while").count(), 2 * loops, "form {form}: {plan}");
    }
    // the loop not taken divides by zero
    let got = try_run(|| sibling_sums(&[1, 2, 3], &[5, 0], 2)).unwrap().to_vec();
    assert_eq!(got, vec![5, 5, 20]);
}

fn collatz_steps(mut n: u64) -> u32 {
    let mut k = 0;
    while n != 1 {
        n = if n % 2 == 0 { n / 2 } else { 3 * n + 1 };
        k += 1;
    }
    k
}

proptest! {
    #![proptest_config(config(48))]

    #[test]
    fn while_loop_counts_collatz_steps(mut xs in vec(1u64..100_000, 0..16)) {
        xs.extend([1, 27, 97]);
        let got = map_vec(&xs, |n| {
            while_loop(
                lift((n, constant(0u32))),
                |s| s.fst().ne(1u64),
                |s| {
                    let (n, k) = s.unlift();
                    lift(((&n % 2u64).eq(0u64).select(&n / 2u64, n * 3u64 + 1u64), k + 1u32))
                },
            )
            .snd()
        })?;
        prop_assert_eq!(got, xs.iter().map(|&n| collatz_steps(n)).collect::<Vec<_>>());
    }

    /// Loops over one count in one element (`sibling_sums`) agree with
    /// plain Rust, merged or not.
    #[test]
    fn sibling_while_loops_agree_with_plain_rust(
        ns in vec(0i64..12, 0..10),
        table in vec(-4i64..5, 1..16),
        form in 0usize..3,
    ) {
        let len = table.len() as i64;
        let got = try_run(|| sibling_sums(&ns, &table, form));
        let sum_ref = |n: i64, divide: bool| -> Option<i64> {
            (0..n).try_fold(0i64, |a, j| {
                let x = table[(j % len) as usize];
                let term = if divide { 100i64.checked_div(x)? } else { x * (j + 1) };
                Some(a.wrapping_add(term))
            })
        };
        let want: Option<Vec<i64>> = ns
            .iter()
            .map(|&n| match form {
                0 => Some(sum_ref(n, false)? * 7 + sum_ref(n, true)?),
                1 => {
                    let (a, b) = (sum_ref(n, false)?, sum_ref(n, true)?);
                    Some(a * a + b * a + b)
                }
                _ if n < 4 => sum_ref(n, false),
                _ => sum_ref(n, true),
            })
            .collect();
        match (got, want) {
            (Ok(got), Some(want)) => prop_assert_eq!(got.to_vec(), want),
            (Err(Error::DivisionByZero { .. }), None) => {}
            (got, want) => prop_assert!(false, "got {:?}, want {:?}", got, want),
        }
    }

    #[test]
    fn while_loop_computes_gcd_by_euclid(xys in pairs::<i64>()) {
        let got = zip_vec(&xys, |a, b| {
            while_loop(
                lift((a, b)),
                |s| s.snd().ne(0i64),
                |s| {
                    let (a, b) = s.unlift();
                    lift((&b, a % &b))
                },
            )
            .fst()
        })?;
        let want: Vec<i64> = xys
            .iter()
            .map(|&(mut a, mut b)| {
                while b != 0 {
                    (a, b) = (b, a.wrapping_rem(b));
                }
                a
            })
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn while_loop_halves_a_float_until_below_one(xs in values::<f64>(32)) {
        // an infinite start would loop for ever, as the program says
        let xs: Vec<f64> = xs.into_iter().map(|x| if x.is_infinite() { 3.0 } else { x }).collect();
        let got = map_vec(&xs, |x| while_loop(x, |y| y.ge(1.0f64), |y| y * 0.5f64))?;
        let want: Vec<f64> = xs
            .iter()
            .map(|&x| {
                let mut y = x;
                while y >= 1.0 {
                    y *= 0.5;
                }
                y
            })
            .collect();
        check_same_vec(&got, &want, "halving")?;
    }

    #[test]
    fn while_loop_whose_condition_is_false_returns_its_initial_value(xs in values::<i16>(32)) {
        let got = map_vec(&xs, |x| while_loop(x, |y| y.ne(y), |y| y + 1i16))?;
        prop_assert_eq!(got, xs);
    }

    #[test]
    fn while_loop_condition_and_body_may_ignore_their_argument(xs in values::<i16>(32)) {
        let got = map_vec(&xs, |x| {
            let never = while_loop(x, |_| constant(false), |y| y + 1i16);
            let once = while_loop(x, |y| y.ne(7i16), |_| constant(7i16));
            lift((never, once))
        })?;
        prop_assert_eq!(got, xs.iter().map(|&x| (x, 7)).collect::<Vec<_>>());
    }

    #[test]
    fn while_loops_may_use_variables_of_enclosing_functions(xs in vec(0i64..20, 0..16)) {
        // the inner loop counts to the outer loop's counter, the outer one
        // to the mapped element: sum of 0..x
        let got = map_vec(&xs, |x| {
            while_loop(
                lift((constant(0i64), constant(0i64))),
                move |s| s.fst().lt(x),
                |s| {
                    let (i, acc) = s.unlift();
                    let inner = while_loop(0i64, |j| j.lt(&i), |j| j + 1i64);
                    lift((i + 1i64, acc + inner))
                },
            )
            .snd()
        })?;
        prop_assert_eq!(got, xs.iter().map(|&x| (0..x).sum::<i64>()).collect::<Vec<_>>());
    }
}

// ---------------------------------------------------------------------------
// Tuples and options

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn tuples_lift_unlift_fst_and_snd(xs in vec((elem::<i32>(), elem::<f64>(), any::<bool>()), 0..32)) {
        let got = map_vec(&xs, |t| {
            let (a, b, c) = t.unlift();
            let p = lift((a, b));
            let nested = lift((&c, &p));
            lift((p.snd(), p.fst(), nested.snd().fst(), nested.fst(), !c, nested))
        })?;
        let want: Vec<_> = xs.iter().map(|&(a, b, c)| (b, a, a, c, !c, (c, (a, b)))).collect();
        check_exact(&got, &want, "tuple projections")?;
    }

    #[test]
    fn eight_tuples_unlift_and_lift(
        xs in vec(
            (elem::<i8>(), elem::<i16>(), elem::<i32>(), elem::<i64>(),
             elem::<u8>(), elem::<u16>(), elem::<u32>(), elem::<u64>()),
            0..24,
        )
    ) {
        let got = map_vec(&xs, |t| {
            let (a, b, c, d, e, f, g, h) = t.unlift();
            lift((a + 1i8, b, c ^ 7i32, d, e, f - 1u16, g, h * 3u64))
        })?;
        let want: Vec<_> = xs
            .iter()
            .map(|&(a, b, c, d, e, f, g, h)| {
                (a.wrapping_add(1), b, c ^ 7, d, e, f.wrapping_sub(1), g, h.wrapping_mul(3))
            })
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn just_and_nothing_build_options(xs in values::<i32>(40)) {
        let got = map_vec(&xs, |x| {
            let o = x.gt(0i32).select(just(x), nothing());
            lift((&o, o.is_just(), o.from_just()))
        })?;
        let want: Vec<(Option<i32>, bool, i32)> =
            xs.iter().map(|&x| ((x > 0).then_some(x), x > 0, if x > 0 { x } else { 0 })).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn from_just_of_nothing_is_zero(xs in values::<f32>(8)) {
        let got = map_vec(&xs, |x| {
            let n = nothing::<(f32, u8)>();
            let j = just(lift((x, constant(5u8))));
            lift((n.is_just(), n.from_just(), j.is_just(), j.from_just()))
        })?;
        let want: Vec<_> = xs.iter().map(|&x| (false, (0.0f32, 0u8), true, (x, 5u8))).collect();
        check_exact(&got, &want, "options")?;
    }
}

// ---------------------------------------------------------------------------
// Shape and index helpers

/// A shape of rank 3 with every extent at least one.
fn positive_dim3(max: i64) -> BoxedStrategy<DIM3> {
    (positive_extent(max), positive_extent(max), positive_extent(max))
        .prop_map(|(a, b, c)| ix3(a, b, c))
        .boxed()
}

/// A rank-3 shape or index of arbitrary (also negative or extreme) values.
fn any_dim3() -> BoxedStrategy<DIM3> {
    (elem::<i64>(), elem::<i64>(), elem::<i64>()).prop_map(|(a, b, c)| ix3(a, b, c)).boxed()
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn index_builders_and_unindex_take_indices_apart(sh in dim3_shape(6)) {
        let r = run_ok(|| {
            generate(sh, |ix| {
                let (i, j, k) = unindex3(ix);
                let (tail, head) = ix.split();
                lift((index3(&k, &j, &i), index2(i, k), index1(j), ix.head(), &tail, head, unindex2(&tail).1))
            })
        })?;
        let Snoc(Snoc(Snoc(Z, a), b), c) = sh;
        let mut want = Vec::new();
        for i in 0..a {
            for j in 0..b {
                for k in 0..c {
                    want.push((ix3(k, j, i), ix2(i, k), ix1(j), k, ix2(i, j), k, j));
                }
            }
        }
        prop_assert_eq!(r.dims(), &[a as usize, b as usize, c as usize][..]);
        prop_assert_eq!(r.to_vec(), want);
    }

    #[test]
    fn snoc_adds_an_innermost_component(sh in any_dim3(), x in elem::<i64>()) {
        let r = run_ok(|| {
            let s = constant(sh);
            let (tail, head) = s.split();
            unit(lift((tail.snoc(&head), s.snoc(x), index0().snoc(x), index1(x).snoc(head), unindex1(index0().snoc(x)))))
        })?;
        let Snoc(_, c) = sh;
        prop_assert_eq!(r.value(), (sh, Snoc(sh, x), ix1(x), ix2(x, c), x));
    }

    #[test]
    fn to_index_is_the_row_major_position(sh in dim3_shape(6)) {
        let r = run_ok(|| generate(sh, move |ix| to_index(sh, ix)))?;
        prop_assert_eq!(r.to_vec(), (0..r.len() as i64).collect::<Vec<_>>());
    }

    #[test]
    fn from_index_inverts_to_index(sh in positive_dim3(6)) {
        let r = run_ok(|| {
            generate(index1(shape_size(sh)), move |ix| {
                let i = unindex1(ix);
                let back = from_index(sh, &i);
                lift((&back, to_index(sh, &back).eq(i)))
            })
        })?;
        let Snoc(Snoc(Snoc(Z, a), b), c) = sh;
        let mut want = Vec::new();
        for i in 0..a {
            for j in 0..b {
                for k in 0..c {
                    want.push((ix3(i, j, k), true));
                }
            }
        }
        prop_assert_eq!(r.to_vec(), want);
    }

    #[test]
    fn to_index_and_from_index_wrap_and_do_not_check_bounds(
        sh in any_dim3(), ix in any_dim3(), i in elem::<i64>(), inner in positive_dim3(1000)
    ) {
        let (to, from) = run_ok(|| lift_acc((unit(to_index(sh, ix)), unit(from_index(inner, i)))))?;
        let (Snoc(Snoc(Snoc(Z, _), n1), n2), Snoc(Snoc(Snoc(Z, i0), i1), i2)) = (sh, ix);
        let want = i0.wrapping_mul(n1).wrapping_add(i1).wrapping_mul(n2).wrapping_add(i2);
        prop_assert_eq!(to.value(), want);
        let Snoc(Snoc(Snoc(Z, _), m1), m2) = inner;
        let k2 = i.wrapping_rem(m2);
        let rest = i.wrapping_div(m2);
        prop_assert_eq!(from.value(), ix3(rest.wrapping_div(m1), rest.wrapping_rem(m1), k2));
    }

    #[test]
    fn intersect_is_the_component_wise_minimum(a in any_dim3(), b in any_dim3()) {
        let r = run_ok(|| unit(intersect(a, b)))?;
        let (av, bv) = (a.to_vec(), b.to_vec());
        prop_assert_eq!(r.value(), ix3(av[0].min(bv[0]), av[1].min(bv[1]), av[2].min(bv[2])));
    }

    #[test]
    fn shape_size_is_the_wrapping_product_of_the_extents(sh in any_dim3(), small in dim3_shape(50)) {
        let r = run_ok(|| unit(lift((shape_size(sh), shape_size(small), shape_size(index0())))))?;
        let product = |s: DIM3| s.to_vec().iter().fold(1i64, |p, &d| p.wrapping_mul(d));
        prop_assert_eq!(r.value(), (product(sh), small.size() as i64, 1));
    }
}

/// For each row `(off, lo, len, step, shift)`, the sum over `t` from `lo`
/// below `len` of `xs[off + t] * table[(step * t + shift) % 8] + (step * t
/// + shift) / 8`: a loop over a counter whose reads and divisions its
/// range may prove safe (Note [Versioned counted loops] in the CPU
/// backend's `c/exp/counted.rs`). `nested`: a fold of a `generate` from
/// 0 (`lo` unused, a negative `len` taken as 0); otherwise a
/// `while_loop` from `lo`. `modulo` uses
/// `mod` and `div` (rounding down) where the other uses `%` and `/`.
fn strided_sums(
    rows: &[(i64, i64, i64, i64, i64)],
    xs: &[i64],
    table: &[i64],
    nested: bool,
    modulo: bool,
) -> Acc<Vector<i64>> {
    let (xs, table) =
        (use_array(Vector::from_elems(xs.to_vec())), use_array(Vector::from_elems(table.to_vec())));
    let term = move |off: &Exp<i64>, step: &Exp<i64>, shift: &Exp<i64>, t: &Exp<i64>| {
        let m = step * t + shift;
        let (j, q) = if modulo { (m.mod_floor(8i64), m.div_floor(8i64)) } else { (&m % 8i64, &m / 8i64) };
        xs.index(index1(off + t)) * table.index(index1(j)) + q
    };
    use_array(Vector::from_elems(rows.to_vec())).map(move |row| {
        let (off, lo, len, step, shift) = row.unlift();
        if nested {
            // (a negative length would be an error of the extent)
            let len = cond(len.lt(0i64), constant(0i64), len);
            let term = term.clone();
            generate(index1(&len), move |t| term(&off, &step, &shift, &unindex1(t)))
                .fold(0i64, |a, b| a + b)
                .the()
        } else {
            let term = term.clone();
            while_loop(
                lift((lo, constant(0i64))),
                move |s| s.fst().lt(&len),
                move |s| {
                    let (t, a) = s.unlift();
                    let x = term(&off, &step, &shift, &t);
                    lift((t + 1i64, a + x))
                },
            )
            .snd()
        }
    })
}

proptest! {
    /// Loops over a counter agree with plain Rust whether or not their
    /// counter's range proves their reads inside and their dividends not
    /// negative: offsets and counters that start below zero, rows that
    /// leave `xs`, steps whose products wrap, empty and negative lengths.
    #[test]
    fn counted_loops_agree_with_plain_rust(
        rows in vec(
            (
                -3i64..20,
                -3i64..5,
                -2i64..14,
                prop_oneof![-3i64..5, Just(i64::MAX / 3), Just(i64::MIN / 2), Just(1i64 << 61)],
                prop_oneof![-12i64..12, Just(i64::MAX - 40)],
            ),
            0..8,
        ),
        xs in vec(-50i64..50, 1..24),
        table in vec(-9i64..9, 1..12),
        nested: bool,
        modulo: bool,
    ) {
        let got = try_run(|| strided_sums(&rows, &xs, &table, nested, modulo));
        let sum_ref = |&(off, lo, len, step, shift): &(i64, i64, i64, i64, i64)| -> Option<i64> {
            let from = if nested { 0 } else { lo };
            (from..len).try_fold(0i64, |a, t| {
                let m = step.wrapping_mul(t).wrapping_add(shift);
                let (j, q) = if modulo { (m.rem_euclid(8), m.div_euclid(8)) } else { (m % 8, m / 8) };
                let x = *xs.get(usize::try_from(off.wrapping_add(t)).ok()?)?;
                let y = *table.get(usize::try_from(j).ok()?)?;
                Some(a.wrapping_add(x.wrapping_mul(y)).wrapping_add(q))
            })
        };
        let want: Option<Vec<i64>> = rows.iter().map(sum_ref).collect();
        match (got, want) {
            (Ok(got), Some(want)) => prop_assert_eq!(got.to_vec(), want),
            (Err(Error::IndexOutOfBounds { .. }), None) => {}
            (got, want) => prop_assert!(false, "got {:?}, want {:?}", got, want),
        }
    }
}

/// Each element of a `rows x cols` matrix sums `len` products of a row's
/// samples and a table read at a position that depends on the column,
/// `(2c + 1) t + shift` modulo the table's length (the audio program's
/// bins): every element of a row counts to the same length, and the
/// elements of a row read different table entries, so the CPU backend
/// jams neighbouring elements' loops (Note [Jammed loops] in
/// `cpu/generate.rs`). `rows` gives each row's offset in `xs` and its
/// length; `modulo` uses `mod_floor` (never negative) where the other
/// uses `%` (negative for a negative `shift`, an error of the read).
fn jammed_sums(
    rows: &[(i64, i64)],
    cols: i64,
    shift: i64,
    xs: &[f32],
    table: &[f32],
    modulo: bool,
) -> Acc<Matrix<f32>> {
    let (xs, table) =
        (use_array(Vector::from_elems(xs.to_vec())), use_array(Vector::from_elems(table.to_vec())));
    let rows = use_array(Vector::from_elems(rows.to_vec()));
    let period = table.length();
    generate(index2(rows.length(), constant(cols)), move |ix| {
        let (r, c) = unindex2(ix);
        let (off, len) = rows.index(index1(r)).unlift();
        let len = cond(len.lt(0i64), constant(0i64), len);
        let step = 2i64 * c + 1i64;
        let (xs, table, period) = (xs.clone(), table.clone(), period.clone());
        generate(index1(&len), move |t| {
            let t = unindex1(t);
            let m = &step * &t + shift;
            let j = if modulo { m.mod_floor(&period) } else { &m % &period };
            xs.index(index1(&off + &t)) * table.index(index1(j))
        })
        .fold(0.0f32, |a, b| a + b)
        .the()
    })
}

proptest! {
    /// Jammed loops (Note [Jammed loops]) give each element the sum it
    /// has alone, to the bit: rows shorter than the lanes jammed and
    /// rows that are not a multiple of them, empty and negative lengths,
    /// rows that leave `xs` and table positions below zero (errors).
    #[test]
    fn jammed_loops_agree_with_plain_rust(
        rows in vec((-3i64..40, -2i64..30), 0..6),
        cols in 0i64..11,
        shift in -5i64..40,
        xs in vec(-1.0f32..1.0, 1..64),
        table in vec(-1.0f32..1.0, 1..20),
        modulo: bool,
    ) {
        let got = try_run(|| jammed_sums(&rows, cols, shift, &xs, &table, modulo));
        let p = table.len() as i64;
        let elem = |(off, len): (i64, i64), c: i64| -> Option<f32> {
            (0..len.max(0)).try_fold(0.0f32, |a, t| {
                let m = (2 * c + 1) * t + shift;
                let j = if modulo { m.rem_euclid(p) } else { m % p };
                let x = *xs.get(usize::try_from(off + t).ok()?)?;
                let y = *table.get(usize::try_from(j).ok()?)?;
                Some(a + x * y)
            })
        };
        let want: Option<Vec<f32>> =
            rows.iter().flat_map(|&row| (0..cols).map(move |c| elem(row, c))).collect();
        match (got, want) {
            (Ok(got), Some(want)) => {
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                prop_assert_eq!(bits(&got.to_vec()), bits(&want));
            }
            (Err(Error::IndexOutOfBounds { .. }), None) => {}
            (got, want) => prop_assert!(false, "got {:?}, want {:?}", got, want),
        }
    }
}

/// 64-bit operands near the bound below which a quotient or remainder is
/// computed in 32 bits (Note [Narrow division] in the C backends'
/// `prelude_common.h`): 2^31 and 2^32, give or take a little, either
/// sign, and small values.
fn near_31_bits() -> BoxedStrategy<i64> {
    prop_oneof![
        (-3i64..3).prop_map(|d| (1i64 << 31) + d),
        (-3i64..3).prop_map(|d| (1i64 << 32) + d),
        (-3i64..3).prop_map(|d| -(1i64 << 31) + d),
        0i64..1000,
        -1000i64..0,
    ]
    .boxed()
}

proptest! {
    /// Division and remainder of `i64` and `u64` operands on either side
    /// of the 31-bit bound agree with Rust's (Note [Narrow division]).
    #[test]
    fn division_near_the_31_bit_bound_is_exact(xys in vec((near_31_bits(), near_31_bits()), 1..40)) {
        let xys: Vec<(i64, i64)> = xys.into_iter().map(|(x, y)| (x, if y == 0 { 1 } else { y })).collect();
        let got = zip_vec(&xys, |x, y| lift((x / y, x % y, x.div_floor(y), x.mod_floor(y))))?;
        let want: Vec<(i64, i64, i64, i64)> = xys
            .iter()
            .map(|&(x, y)| {
                // rounding down: one less than truncation where the
                // remainder's sign is not the divisor's
                let (q, r) = (x / y, x % y);
                let down = r != 0 && (r < 0) != (y < 0);
                (q, r, if down { q - 1 } else { q }, if down { r + y } else { r })
            })
            .collect();
        check_same_vec(&got, &want, "/ % div mod")?;
        let uxys: Vec<(u64, u64)> = xys.iter().map(|&(x, y)| (x as u64, y as u64)).collect();
        let got = zip_vec(&uxys, |x, y| lift((x / y, x % y)))?;
        let want: Vec<(u64, u64)> = uxys.iter().map(|&(x, y)| (x / y, x % y)).collect();
        check_same_vec(&got, &want, "u64 / %")?;
    }
}

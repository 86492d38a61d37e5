//! Scalar operations of `lang::scalar_ops`: floor division, bit counting,
//! bit casts, gcd/lcm, iterate, sfoldl, and matching on options and sums,
//! against plain-Rust references.

use accelerate::prelude::*;
use accelerate::{run_with, Config};
use proptest::prelude::*;

fn map_vec<A: Elt, B: Elt>(xs: &[A], f: impl FnOnce(&Exp<A>) -> Exp<B>) -> Result<Vec<B>, Error> {
    let acc = use_array(Vector::from_elems(xs.to_vec())).map(f);
    run_with(&acc, &Config::from_env().unwrap()).map(|a| a.to_vec())
}

fn zip_vec<A: Elt, B: Elt, C: Elt>(
    xs: &[(A, B)],
    f: impl FnOnce(&Exp<A>, &Exp<B>) -> Exp<C>,
) -> Result<Vec<C>, Error> {
    map_vec(xs, move |p| {
        let (a, b) = p.unlift();
        f(&a, &b)
    })
}

/// Floor division in i128, by way of `div_euclid` with a positive divisor
/// (which rounds toward negative infinity): an independent formulation.
fn floor_div(a: i128, b: i128) -> i128 {
    if b > 0 {
        a.div_euclid(b)
    } else {
        (-a).div_euclid(-b)
    }
}

fn edge_i32() -> impl Strategy<Value = i32> {
    prop_oneof![Just(i32::MIN), Just(i32::MAX), Just(0), Just(-1), Just(1), any::<i32>(), -20i32..20]
}

fn edge_u16() -> impl Strategy<Value = u16> {
    prop_oneof![Just(u16::MAX), Just(0), Just(1), any::<u16>()]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn div_floor_and_mod_floor_round_toward_negative_infinity(
        xys in proptest::collection::vec((edge_i32(), edge_i32().prop_filter("nonzero", |y| *y != 0)), 0..40)
    ) {
        let got = zip_vec(&xys, |x, y| lift((x.div_floor(y), x.mod_floor(y)))).unwrap();
        let want: Vec<(i32, i32)> = xys
            .iter()
            .map(|&(x, y)| {
                let q = floor_div(x as i128, y as i128);
                ((q as i32), (x as i128 - q * y as i128) as i32)
            })
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn div_floor_on_unsigned_is_plain_division(
        xys in proptest::collection::vec((edge_u16(), edge_u16().prop_filter("nonzero", |y| *y != 0)), 0..40)
    ) {
        let got = zip_vec(&xys, |x, y| lift((x.div_floor(y), x.mod_floor(y)))).unwrap();
        let want: Vec<(u16, u16)> = xys.iter().map(|&(x, y)| (x / y, x % y)).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn bit_counts_match_rust(xs in proptest::collection::vec(edge_i32(), 0..40)) {
        let got = map_vec(&xs, |x| lift((x.count_ones(), x.leading_zeros(), x.trailing_zeros()))).unwrap();
        let want: Vec<(u32, u32, u32)> =
            xs.iter().map(|x| (x.count_ones(), x.leading_zeros(), x.trailing_zeros())).collect();
        prop_assert_eq!(got, want);
    }

    // (a bitcast between types of different sizes does not compile:
    // `BitCastTo` is implemented for same-size pairs only)
    #[test]
    fn bitcast_reinterprets_bits(xs in proptest::collection::vec(any::<u32>(), 0..40)) {
        let got = map_vec(&xs, |x| {
            let f = x.bitcast::<f32>();
            lift((f.bitcast::<u32>(), x.bitcast::<i32>()))
        })
        .unwrap();
        let want: Vec<(u32, i32)> = xs.iter().map(|&x| (f32::from_bits(x).to_bits(), x as i32)).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn gcd_and_lcm_match_euclid(xys in proptest::collection::vec((-1000i64..1000, -1000i64..1000), 0..40)) {
        fn gcd(a: i64, b: i64) -> i64 {
            let (mut a, mut b) = (a.abs(), b.abs());
            while b != 0 {
                (a, b) = (b, a % b);
            }
            a
        }
        let got = zip_vec(&xys, |x, y| lift((x.gcd(y), x.lcm(y)))).unwrap();
        let want: Vec<(i64, i64)> = xys
            .iter()
            .map(|&(x, y)| {
                let g = gcd(x, y);
                (g, if g == 0 { 0 } else { (x.abs() / g * y.abs()).abs() })
            })
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn iterate_applies_a_function_n_times(xs in proptest::collection::vec((-3i64..12, any::<i32>()), 0..30)) {
        let got = zip_vec(&xs, |n, x| iterate(n, |v: &Exp<i32>| v * 3i32 + 1i32, x)).unwrap();
        let want: Vec<i32> = xs
            .iter()
            .map(|&(n, x)| (0..n.max(0)).fold(x, |v, _| v.wrapping_mul(3).wrapping_add(1)))
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn sfoldl_folds_a_row_sequentially(rows in 0usize..5, cols in 0usize..7, seed in any::<u64>()) {
        let data: Vec<i32> = (0..rows * cols).map(|i| (seed.wrapping_mul(i as u64 + 7) >> 40) as i32).collect();
        let m = Array::from_vec(dim2(rows, cols), data.clone()).unwrap();
        let got = {
            let a = use_array(m);
            let acc = generate(index1(rows as i64), move |ix| {
                sfoldl(|acc: &Exp<i32>, x: &Exp<i32>| acc * 31i32 + x, 7i32, ix, a)
            });
            run_with(&acc, &Config::from_env().unwrap()).map(|r| r.to_vec())
        }
        .unwrap();
        let want: Vec<i32> = (0..rows)
            .map(|r| data[r * cols..(r + 1) * cols].iter().fold(7i32, |a, &x| a.wrapping_mul(31).wrapping_add(x)))
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn match_option_takes_the_arm_of_the_value(xs in proptest::collection::vec(proptest::option::of(any::<i16>()), 0..40)) {
        let got = map_vec(&xs, |o| o.match_option(|x| x.cast::<i32>() * 2i32, constant(-1i32))).unwrap();
        let want: Vec<i32> = xs.iter().map(|o| o.map_or(-1, |x| x as i32 * 2)).collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn either_round_trips_and_matches(xs in proptest::collection::vec(any::<(bool, i8, f32)>(), 0..40)) {
        let data: Vec<Either<i8, f32>> =
            xs.iter().map(|&(r, l, f)| if r { Either::Right(f) } else { Either::Left(l) }).collect();
        let got = map_vec(&data, |e| e.match_either(|l| l.cast::<f64>(), |r| r.cast::<f64>() * 2.0f64)).unwrap();
        let want: Vec<f64> = data
            .iter()
            .map(|e| match e {
                Either::Left(l) => *l as f64,
                Either::Right(r) => *r as f64 * 2.0,
            })
            .collect();
        prop_assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
        let back = map_vec(&data, |e| e.match_either(|l| left::<i8, f32>(l + 1i8), |r| right::<i8, f32>(r))).unwrap();
        let want_back: Vec<Either<i8, f32>> = data
            .iter()
            .map(|e| match *e {
                Either::Left(l) => Either::Left(l.wrapping_add(1)),
                Either::Right(r) => Either::Right(r),
            })
            .collect();
        prop_assert_eq!(format!("{back:?}"), format!("{want_back:?}"));
    }
}

#[test]
fn div_floor_by_zero_is_an_error() {
    let err = map_vec(&[1i32, 2], |x| x.div_floor(0i32)).unwrap_err();
    assert!(matches!(err, Error::DivisionByZero { .. }), "{err}");
    let err = map_vec(&[1u8], |x| x.mod_floor(0u8)).unwrap_err();
    assert!(matches!(err, Error::DivisionByZero { .. }), "{err}");
}

#[test]
fn div_floor_of_min_by_minus_one_wraps() {
    assert_eq!(
        map_vec(&[i64::MIN], |x| lift((x.div_floor(-1i64), x.mod_floor(-1i64)))).unwrap(),
        vec![(i64::MIN, 0)]
    );
}

#[test]
fn slice_specifiers_built_from_run_time_values() {
    let (rows, cols, col1) = {
        let xs = use_array(Vector::from_elems(vec![1i32, 2, 3]));
        let n = xs.size();
        // a new innermost dimension of extent n, and a new outermost one
        let rows = xs.replicate(index0().all().fixed(&n));
        let cols = xs.replicate(any_dims::<Z>().fixed(&n - 1i64).all());
        // column 1 of `rows`, chosen at run time
        let col1 = rows.slice(index0().all().fixed(n - 2i64));
        let cfg = Config::from_env().unwrap();
        (run_with(&rows, &cfg).unwrap(), run_with(&cols, &cfg).unwrap(), run_with(&col1, &cfg).unwrap())
    };
    assert_eq!(rows.dims(), &[3, 3]);
    assert_eq!(rows.to_vec(), vec![1, 1, 1, 2, 2, 2, 3, 3, 3]);
    assert_eq!(cols.dims(), &[2, 3]);
    assert_eq!(cols.to_vec(), vec![1, 2, 3, 1, 2, 3]);
    assert_eq!(col1.to_vec(), vec![1, 2, 3]);
}

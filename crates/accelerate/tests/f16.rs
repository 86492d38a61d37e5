//! IEEE binary16 elements (feature `f16`): stored as bits, computed in f32
//! and rounded once (Note [binary16 arithmetic]).
#![cfg(feature = "f16")]

use accelerate::f16;
use accelerate::prelude::*;
use accelerate::{run_with, Config};
use proptest::prelude::*;

fn halves() -> impl Strategy<Value = f16> {
    prop_oneof![
        Just(f16::NAN),
        Just(f16::INFINITY),
        Just(f16::NEG_INFINITY),
        Just(f16::MAX),
        Just(f16::MIN_POSITIVE_SUBNORMAL),
        Just(f16::from_f32(-0.0)),
        any::<u16>().prop_map(f16::from_bits),
        (-100.0f32..100.0).prop_map(f16::from_f32),
    ]
}

fn map_vec<A: Elt, B: Elt>(xs: &[A], f: impl FnOnce(&Exp<A>) -> Exp<B>) -> Vec<B> {
    let acc = use_array(Vector::from_elems(xs.to_vec())).map(f);
    run_with(&acc, &Config::from_env().unwrap()).unwrap().to_vec()
}

/// NaN payloads are not specified: compare NaN as NaN.
fn same(a: f16, b: f16) -> bool {
    (a.is_nan() && b.is_nan()) || a.to_bits() == b.to_bits()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn f16_arrays_round_trip_bit_for_bit(xs in proptest::collection::vec(halves(), 0..40)) {
        let got = map_vec(&xs, |x| x.clone());
        prop_assert_eq!(got.iter().map(|x| x.to_bits()).collect::<Vec<_>>(), xs.iter().map(|x| x.to_bits()).collect::<Vec<_>>());
    }

    #[test]
    fn arithmetic_is_f32_arithmetic_rounded_once(xys in proptest::collection::vec((halves(), halves()), 0..40)) {
        let got = map_vec(&xys, |p| {
            let (x, y) = p.unlift();
            lift((&x + &y, &x * &y, &x / &y, (x - y).sqrt()))
        });
        for (&(x, y), &(s, m, d, r)) in xys.iter().zip(&got) {
            let (a, b) = (x.to_f32(), y.to_f32());
            prop_assert!(same(s, f16::from_f32(a + b)));
            prop_assert!(same(m, f16::from_f32(a * b)));
            prop_assert!(same(d, f16::from_f32(a / b)));
            // x - y is rounded to f16 before the square root
            prop_assert!(same(r, f16::from_f32(f16::from_f32(a - b).to_f32().sqrt())));
        }
    }

    #[test]
    fn casts_round_once_to_f16_and_saturate_from_it(xs in proptest::collection::vec((any::<i32>(), any::<f64>(), halves()), 0..40)) {
        let got = map_vec(&xs, |p| {
            let (i, d, h) = p.unlift();
            lift((i.cast::<f16>(), d.cast::<f16>(), h.cast::<i16>(), h.cast::<f64>()))
        });
        for (&(i, d, h), &(hi, hd, ih, dh)) in xs.iter().zip(&got) {
            prop_assert!(same(hi, f16::from_f64(i as f64)));
            prop_assert!(same(hd, f16::from_f64(d)));
            prop_assert_eq!(ih, h.to_f32() as i16);
            prop_assert_eq!(dh.to_bits(), h.to_f64().to_bits());
        }
    }

    #[test]
    fn comparisons_follow_ieee(xys in proptest::collection::vec((halves(), halves()), 0..40)) {
        let got = map_vec(&xys, |p| {
            let (x, y) = p.unlift();
            lift((x.lt(&y), x.eq(y), x.is_nan()))
        });
        for (&(x, y), &(lt, eq, nan)) in xys.iter().zip(&got) {
            prop_assert_eq!(lt, x.to_f32() < y.to_f32());
            prop_assert_eq!(eq, x.to_f32() == y.to_f32());
            prop_assert_eq!(nan, x.is_nan());
        }
    }
}

#[test]
fn f16_bitcasts_to_and_from_u16() {
    let got = map_vec(&[0x3c00u16, 0xc000], |b| b.bitcast::<f16>());
    assert_eq!(got, vec![f16::from_f32(1.0), f16::from_f32(-2.0)]);
    let back = map_vec(&[f16::from_f32(1.0)], |h| lift((h.bitcast::<u16>(), h.bitcast::<i16>())));
    assert_eq!(back, vec![(0x3c00, 0x3c00)]);
}

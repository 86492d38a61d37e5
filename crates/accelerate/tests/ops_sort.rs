//! Radix sort against Rust's stable sort: equal keys keep their order,
//! floats sort in IEEE total order (`total_cmp`: -NaN first, then -inf ..
//! -0.0 < +0.0 .. +inf, then +NaN).

use accelerate::prelude::*;
use accelerate::{run_with, Config};
use proptest::prelude::*;

fn cfg() -> ProptestConfig {
    ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() }
}

fn sort_vec<K: SortKey>(xs: &[K]) -> Vec<K> {
    {
        let r = use_array(Vector::from_elems(xs.to_vec())).sort();
        run_with(&r, &Config::from_env().unwrap()).unwrap().to_vec()
    }
}

fn floats() -> impl Strategy<Value = f32> {
    prop_oneof![
        Just(f32::NAN),
        Just(-f32::NAN),
        Just(f32::INFINITY),
        Just(f32::NEG_INFINITY),
        Just(0.0f32),
        Just(-0.0f32),
        Just(f32::MIN_POSITIVE),
        -3.0f32..3.0,
        any::<f32>(),
    ]
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn sort_of_i32_agrees_with_rust(xs in proptest::collection::vec(prop_oneof![-3i32..3, any::<i32>(), Just(i32::MIN), Just(i32::MAX)], 0..60)) {
        let mut want = xs.clone();
        want.sort();
        prop_assert_eq!(sort_vec(&xs), want);
    }

    #[test]
    fn sort_of_u8_and_i64_agree_with_rust(
        a in proptest::collection::vec(any::<u8>(), 0..50),
        b in proptest::collection::vec(prop_oneof![any::<i64>(), Just(i64::MIN), Just(-1i64), Just(0i64)], 0..50),
    ) {
        let (mut wa, mut wb) = (a.clone(), b.clone());
        wa.sort();
        wb.sort();
        prop_assert_eq!(sort_vec(&a), wa);
        prop_assert_eq!(sort_vec(&b), wb);
    }

    #[test]
    fn sort_of_floats_is_the_total_order_with_nan_and_negative_zero(xs in proptest::collection::vec(floats(), 0..60)) {
        let mut want = xs.clone();
        want.sort_by(|a, b| a.total_cmp(b));
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&sort_vec(&xs)), bits(&want));
    }

    #[test]
    fn sort_of_f64_is_the_total_order(xs in proptest::collection::vec(prop_oneof![Just(f64::NAN), Just(-0.0f64), any::<f64>()], 0..40)) {
        let mut want = xs.clone();
        want.sort_by(|a, b| a.total_cmp(b));
        let bits = |v: &[f64]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(bits(&sort_vec(&xs)), bits(&want));
    }

    #[test]
    fn sort_with_indices_is_stable(xs in proptest::collection::vec(-4i16..4, 0..60)) {
        let got = {
            let r = use_array(Vector::from_elems(xs.clone())).sort_with_indices();
            run_with(&r, &Config::from_env().unwrap()).unwrap().to_vec()
        };
        let mut want: Vec<(i16, i64)> = xs.iter().enumerate().map(|(i, &k)| (k, i as i64)).collect();
        want.sort_by_key(|p| p.0); // stable: equal keys keep their positions' order
        prop_assert_eq!(got, want);
    }

    #[test]
    fn sort_by_key_moves_values_with_their_keys(kv in proptest::collection::vec((floats(), any::<u32>()), 0..50)) {
        let keys: Vec<f32> = kv.iter().map(|p| p.0).collect();
        let values: Vec<u32> = kv.iter().map(|p| p.1).collect();
        let got = {
            let r = sort_by_key(use_array(Vector::from_elems(keys.clone())), use_array(Vector::from_elems(values.clone())));
            run_with(&r, &Config::from_env().unwrap()).unwrap().to_vec()
        };
        let mut want = kv.clone();
        want.sort_by(|a, b| a.0.total_cmp(&b.0));
        prop_assert_eq!(got, want.iter().map(|p| p.1).collect::<Vec<_>>());
    }
}

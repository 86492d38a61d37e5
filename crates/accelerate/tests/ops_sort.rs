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

proptest! {
    #![proptest_config(cfg())]

    /// The sort written in the language, which backends without the
    /// native sort run (Note [A native sort]), gives the same arrays.
    #[test]
    fn the_sort_written_in_the_language_agrees_with_rust(
        a in proptest::collection::vec(prop_oneof![any::<i32>(), Just(i32::MIN), Just(0i32), Just(-1i32)], 0..50),
        b in proptest::collection::vec(floats(), 0..50),
        c in proptest::collection::vec(-3i64..3, 0..50),
    ) {
        let config = Config::from_env().unwrap();
        let got_a = run_with(&use_array(Vector::from_elems(a.clone())).sort_in_language(), &config).unwrap().to_vec();
        let got_b = run_with(&use_array(Vector::from_elems(b.clone())).sort_in_language(), &config).unwrap().to_vec();
        let got_c = run_with(&use_array(Vector::from_elems(c.clone())).sort_with_indices_in_language(), &config)
            .unwrap()
            .to_vec();
        let (mut wa, mut wb) = (a.clone(), b.clone());
        wa.sort();
        wb.sort_by(|x, y| x.total_cmp(y));
        let mut wc: Vec<(i64, i64)> = c.iter().enumerate().map(|(i, &k)| (k, i as i64)).collect();
        wc.sort_by_key(|p| p.0);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        prop_assert_eq!(got_a, wa);
        prop_assert_eq!(bits(&got_b), bits(&wb));
        prop_assert_eq!(got_c, wc);
    }
}

/// Keys enough for the native sort to cut into chunks on every worker
/// (Note [A native sort]): every pass stable across chunks, the extremes
/// and signed zeros and NaNs in place, and many equal keys keeping their
/// positions' order.
#[test]
fn sorts_of_many_keys_agree_with_rust() {
    let n = 300_003usize;
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let ints: Vec<i32> = (0..n)
        .map(|i| match i % 97 {
            0 => i32::MIN,
            1 => i32::MAX,
            2 => -1,
            _ => (next() >> 32) as u32 as i32,
        })
        .collect();
    let floats: Vec<f32> = (0..n)
        .map(|i| match i % 89 {
            0 => f32::NAN,
            1 => -f32::NAN,
            2 => -0.0,
            3 => 0.0,
            4 => f32::NEG_INFINITY,
            _ => f32::from_bits((next() >> 32) as u32),
        })
        .collect();
    let few: Vec<i16> = (0..n).map(|_| (next() % 5) as i16 - 2).collect();
    let config = Config::from_env().unwrap();
    let got = run_with(&use_array(Vector::from_elems(ints.clone())).sort(), &config).unwrap().to_vec();
    let mut want = ints;
    want.sort();
    assert!(got == want, "i32 keys out of order");
    let got = run_with(&use_array(Vector::from_elems(floats.clone())).sort(), &config).unwrap().to_vec();
    let mut want = floats;
    want.sort_by(|a, b| a.total_cmp(b));
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert!(bits(&got) == bits(&want), "f32 keys out of total order");
    let got =
        run_with(&use_array(Vector::from_elems(few.clone())).sort_with_indices(), &config).unwrap().to_vec();
    let mut want: Vec<(i16, i64)> = few.iter().enumerate().map(|(i, &k)| (k, i as i64)).collect();
    want.sort_by_key(|p| p.0);
    assert!(got == want, "equal keys lost their order");
}

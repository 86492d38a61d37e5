//! Segmented folds (`fold_seg`, `fold1_seg` and their offset forms) against
//! plain-Rust references, with empty segments and bad descriptors.

use accelerate::prelude::*;
use accelerate::{run_with, Config};
use proptest::prelude::*;

fn cfg() -> ProptestConfig {
    ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() }
}

/// Segment lengths (some empty) and the row length they sum to.
fn segments() -> impl Strategy<Value = Vec<i64>> {
    proptest::collection::vec(prop_oneof![Just(0i64), 1i64..5], 0..8)
}

fn offsets(lengths: &[i64]) -> Vec<i64> {
    std::iter::once(0)
        .chain(lengths.iter().scan(0, |s, &l| {
            *s += l;
            Some(*s)
        }))
        .collect()
}

/// The reference: each row's segments folded left to right.
fn reference<T: Copy>(
    rows: usize,
    data: &[T],
    lengths: &[i64],
    seed: Option<T>,
    f: impl Fn(T, T) -> T,
) -> Vec<T> {
    let n: i64 = lengths.iter().sum();
    let offs = offsets(lengths);
    let mut out = Vec::new();
    for r in 0..rows {
        let row = &data[r * n as usize..(r + 1) * n as usize];
        for w in offs.windows(2) {
            let seg = &row[w[0] as usize..w[1] as usize];
            out.push(match seed {
                Some(z) => seg.iter().fold(z, |a, &x| f(a, x)),
                None => seg[1..].iter().fold(seg[0], |a, &x| f(a, x)),
            });
        }
    }
    out
}

fn data_for(rows: usize, n: i64, salt: u64) -> Vec<i32> {
    (0..rows as u64 * n as u64).map(|i| ((i + 1).wrapping_mul(salt | 1) >> 7) as i32).collect()
}

/// Composition of affine maps `x -> m * x + c` as pairs `(m, c)`, first
/// `p` then `q`: associative (in wrapping arithmetic too) but not
/// commutative, so it pins the order of the elements and of the
/// arguments, while a parallel backend may group them as it likes
/// (`docs/semantics.md`). Folding `(31, x)`s from `(1, z)` gives the
/// sequential `acc * 31 + x` from `z` as the second component.
fn affine(p: &Exp<(i32, i32)>, q: &Exp<(i32, i32)>) -> Exp<(i32, i32)> {
    lift((p.fst() * q.fst(), p.snd() * q.fst() + q.snd()))
}

fn affine_ref(p: (i32, i32), q: (i32, i32)) -> (i32, i32) {
    (p.0.wrapping_mul(q.0), p.1.wrapping_mul(q.0).wrapping_add(q.1))
}

/// The elements as the affine maps `x -> 31 * x + e`.
fn maps(data: &[i32]) -> Vec<(i32, i32)> {
    data.iter().map(|&x| (31, x)).collect()
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn fold_seg_reduces_each_segment_of_each_row(lengths in segments(), rows in 0usize..4, salt in any::<u64>()) {
        let n: i64 = lengths.iter().sum();
        let data = data_for(rows, n, salt);
        let m = Array::from_vec(dim2(rows, n as usize), maps(&data)).unwrap();
        let (a, b) = {
            let xs = use_array(m);
            let lens = use_array(Vector::from_elems(lengths.clone()));
            let offs = use_array(Vector::from_elems(offsets(&lengths)));
            // a non-commutative operator pins the order within a segment
            let by_len = xs.fold_seg((1i32, 5i32), affine, lens);
            let by_off = xs.fold_seg_offsets((1i32, 5i32), affine, offs);
            (run_with(&by_len, &Config::from_env().unwrap()).unwrap(), run_with(&by_off, &Config::from_env().unwrap()).unwrap())
        };
        let want = reference(rows, &maps(&data), &lengths, Some((1, 5)), affine_ref);
        prop_assert_eq!(a.dims(), &[rows, lengths.len()]);
        prop_assert_eq!(a.to_vec(), want.clone());
        prop_assert_eq!(b.to_vec(), want);
    }

    #[test]
    fn fold1_seg_reduces_nonempty_segments(lengths in proptest::collection::vec(1i64..5, 0..8), salt in any::<u64>()) {
        let n: i64 = lengths.iter().sum();
        let data = data_for(1, n, salt);
        let got = {
            let xs = use_array(Vector::from_elems(maps(&data)));
            let r = xs.fold1_seg(affine, use_array(Vector::from_elems(lengths.clone())));
            run_with(&r, &Config::from_env().unwrap()).unwrap().to_vec()
        };
        prop_assert_eq!(got, reference(1, &maps(&data), &lengths, None, affine_ref));
    }

    #[test]
    fn fold_seg_of_floats_keeps_the_special_values_bit_for_bit(
        lengths in segments(),
        salt in any::<u64>(),
    ) {
        // quarter-integers below 2^10 and the special values: segments of
        // at most 4 such elements sum exactly in any grouping, which a
        // parallel backend may choose (docs/semantics.md)
        let n: i64 = lengths.iter().sum();
        let specials = [f32::NAN, f32::INFINITY, f32::NEG_INFINITY, -0.0, 0.0, -1023.75];
        let data: Vec<f32> = (0..n as u64)
            .map(|i| { let k = (i.wrapping_mul(salt | 1) >> 13) as usize; if k % 5 == 0 { specials[k % 6] } else { (k % 4096) as f32 * 0.25 } })
            .collect();
        let got = {
            let xs = use_array(Vector::from_elems(data.clone()));
            let r = xs.fold_seg(-0.0f32, |a, b| a + b, use_array(Vector::from_elems(lengths.clone())));
            run_with(&r, &Config::from_env().unwrap()).unwrap().to_vec()
        };
        let offs = offsets(&lengths);
        let want: Vec<f32> = offs.windows(2).map(|w| data[w[0] as usize..w[1] as usize].iter().fold(-0.0f32, |a, &x| a + x)).collect();
        // exact sums: bit-identical, NaN payloads aside
        let bits = |v: &[f32]| v.iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect::<Vec<_>>();
        prop_assert_eq!(bits(&got), bits(&want));
    }
}

fn seg_err(lengths: Vec<i64>, n: usize) -> Error {
    {
        let xs = use_array(Vector::from_elems(vec![1i32; n]));
        let r = xs.fold_seg(0i32, |a, b| a + b, use_array(Vector::from_elems(lengths)));
        run_with(&r, &Config::from_env().unwrap()).unwrap_err()
    }
}

#[test]
fn segment_lengths_that_do_not_sum_to_the_row_length_are_an_error() {
    let err = seg_err(vec![2, 2], 5);
    assert!(matches!(err, Error::BadSegments { .. }), "{err}");
    assert!(err.to_string().contains("cover 4 elements but the rows have 5"), "{err}");
    assert!(err.to_string().contains("tests/ops_fold_seg.rs"), "{err}");
    assert!(matches!(seg_err(vec![3, 3], 5), Error::BadSegments { .. }));
}

#[test]
fn a_negative_segment_length_is_an_error() {
    let err = seg_err(vec![4, -1, 2], 5);
    assert!(matches!(err, Error::BadSegments { .. }), "{err}");
    assert!(err.to_string().contains("negative length -1"), "{err}");
}

#[test]
fn segment_lengths_whose_sum_wraps_around_to_the_row_length_are_an_error() {
    // MAX + MAX + 4 wraps around to 2, the row length: the offsets are
    // 0, MAX, -2, 2 (a panic computing the message, once)
    let err = seg_err(vec![i64::MAX, i64::MAX, 4], 2);
    assert!(matches!(err, Error::BadSegments { .. }), "{err}");
    let msg = err.to_string();
    assert!(msg.contains("sum past 9223372036854775807 at segment 1"), "{msg}");
    assert!(msg.contains("length 9223372036854775807"), "{msg}");
}

#[test]
fn offsets_not_starting_at_zero_are_an_error() {
    let err = {
        let xs = use_array(Vector::from_elems(vec![1i32; 4]));
        let r = xs.fold_seg_offsets(0i32, |a, b| a + b, use_array(Vector::from_elems(vec![1i64, 4])));
        run_with(&r, &Config::from_env().unwrap()).unwrap_err()
    };
    assert!(err.to_string().contains("must start at 0"), "{err}");
}

#[test]
fn fold1_seg_of_an_empty_segment_is_an_error() {
    let err = {
        let xs = use_array(Vector::from_elems(vec![1i32; 3]));
        let r = xs.fold1_seg(|a, b| a + b, use_array(Vector::from_elems(vec![3i64, 0])));
        run_with(&r, &Config::from_env().unwrap()).unwrap_err()
    };
    assert!(matches!(err, Error::EmptyReduction { op: "fold1_seg", .. }), "{err}");
}

#[test]
fn no_segments_give_an_empty_result() {
    let r = {
        let xs = use_array(Vector::from_elems(Vec::<i32>::new()));
        let r = xs.fold_seg(0i32, |a, b| a + b, use_array(Vector::from_elems(Vec::<i64>::new())));
        run_with(&r, &Config::from_env().unwrap()).unwrap()
    };
    assert_eq!(r.dims(), &[0]);
}

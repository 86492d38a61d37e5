//! Host arrays: construction, element access, shapes, formatting, arrays of
//! tuples (stored as tuples of arrays), equality, and (feature `ndarray`)
//! conversion to and from `ndarray`.

use accelerate::prelude::*;
use proptest::prelude::*;

// ---------------------------------------------------------------------------
// Construction and access

#[test]
fn from_vec_keeps_row_major_order_shape_and_length() {
    let a = Array::from_vec(dim2(2, 3), vec![1i32, 2, 3, 4, 5, 6]).unwrap();
    assert_eq!(a.shape(), dim2(2, 3));
    assert_eq!(a.dims(), &[2, 3]);
    assert_eq!(a.len(), 6);
    assert!(!a.is_empty());
    assert_eq!(a.to_vec(), vec![1, 2, 3, 4, 5, 6]);
    assert_eq!(a.get(dim2(1, 0)), Some(4));
    assert_eq!(a.get(dim2(0, 2)), Some(3));
    assert_eq!(a.get_linear(4), Some(5));
}

#[test]
fn from_elems_and_collect_build_vectors() {
    let v = Vector::from_elems(vec![3u8, 1, 4]);
    assert_eq!(v.dims(), &[3]);
    assert_eq!(v.to_vec(), vec![3, 1, 4]);
    let w: Vector<u8> = [3u8, 1, 4].into_iter().collect();
    assert_eq!(v, w);
    let e = Vector::<f32>::from_elems(vec![]);
    assert_eq!(e.dims(), &[0]);
    assert!(e.is_empty());
    assert_eq!(e.len(), 0);
}

#[test]
fn from_fn_calls_f_with_each_index_in_row_major_order() {
    let mut seen = Vec::new();
    let a = Array::from_fn(dim3(2, 2, 3), |ix| {
        seen.push(ix);
        let Snoc(Snoc(Snoc(Z, i), j), k) = ix;
        i * 100 + j * 10 + k
    })
    .unwrap();
    let want: Vec<i64> =
        (0..2).flat_map(|i| (0..2).flat_map(move |j| (0..3).map(move |k| i * 100 + j * 10 + k))).collect();
    assert_eq!(a.to_vec(), want);
    assert_eq!(seen.len(), 12);
    assert_eq!(seen[0], dim3(0, 0, 0));
    assert_eq!(seen[1], dim3(0, 0, 1));
    assert_eq!(seen[3], dim3(0, 1, 0));
    assert_eq!(seen[11], dim3(1, 1, 2));
    assert_eq!(a.get(dim3(1, 0, 2)), Some(102));
}

#[test]
fn from_fn_of_an_empty_shape_never_calls_f() {
    let a = Array::from_fn(dim2(3, 0), |_| -> u32 { panic!("called on an empty shape") }).unwrap();
    assert_eq!(a.dims(), &[3, 0]);
    assert!(a.is_empty());
}

#[test]
fn from_iter_shaped_and_filled_build_arrays_of_the_shape() {
    let a = Array::from_iter_shaped(dim2(2, 2), (0..4).map(|x| x as f64 * 0.5)).unwrap();
    assert_eq!(a.to_vec(), vec![0.0, 0.5, 1.0, 1.5]);
    let f = Array::filled(dim3(2, 1, 3), true).unwrap();
    assert_eq!(f.dims(), &[2, 1, 3]);
    assert_eq!(f.to_vec(), vec![true; 6]);
    let z = Array::filled(dim2(0, 4), 1i8).unwrap();
    assert_eq!(z.len(), 0);
}

#[test]
fn scalar_arrays_hold_one_value_and_have_no_extents() {
    let s = Scalar::scalar(-7i16);
    assert_eq!(s.value(), -7);
    assert_eq!(s.dims(), &[] as &[usize]);
    assert_eq!(s.len(), 1);
    assert_eq!(s.shape(), Z);
    assert_eq!(s.get(Z), Some(-7));
    assert_eq!(s.get_linear(1), None);
    let t = Array::from_vec(Z, vec![2.5f64]).unwrap();
    assert_eq!(t.value(), 2.5);
}

#[test]
fn get_and_get_linear_are_none_out_of_bounds() {
    let a = Array::from_vec(dim2(2, 3), (0..6).collect::<Vec<u64>>()).unwrap();
    assert_eq!(a.get(dim2(2, 0)), None);
    assert_eq!(a.get(dim2(0, 3)), None);
    assert_eq!(a.get(Snoc(Snoc(Z, -1), 0)), None);
    assert_eq!(a.get(Snoc(Snoc(Z, 0), -1)), None);
    assert_eq!(a.get(Snoc(Snoc(Z, i64::MAX), i64::MIN)), None);
    assert_eq!(a.get_linear(5), Some(5));
    assert_eq!(a.get_linear(6), None);
    assert_eq!(a.get_linear(usize::MAX), None);
    let e = Vector::<i32>::from_elems(vec![]);
    assert_eq!(e.get(dim1(0)), None);
    assert_eq!(e.get_linear(0), None);
}

#[test]
fn arrays_are_equal_when_extents_and_elements_are() {
    let a = Array::from_vec(dim2(2, 3), vec![1, 2, 3, 4, 5, 6]).unwrap();
    let b = Array::from_vec(dim2(2, 3), vec![1, 2, 3, 4, 5, 6]).unwrap();
    let transposed_shape = Array::from_vec(dim2(3, 2), vec![1, 2, 3, 4, 5, 6]).unwrap();
    let other = Array::from_vec(dim2(2, 3), vec![1, 2, 3, 4, 5, 7]).unwrap();
    assert_eq!(a, b);
    assert_eq!(a, a.clone());
    assert_ne!(a, transposed_shape);
    assert_ne!(a, other);
    let e1 = Array::<DIM2, i32>::from_vec(dim2(0, 3), vec![]).unwrap();
    let e2 = Array::<DIM2, i32>::from_vec(dim2(3, 0), vec![]).unwrap();
    assert_ne!(e1, e2);
}

// ---------------------------------------------------------------------------
// Formatting

#[test]
fn display_shows_the_extents_and_all_of_a_short_array() {
    let a = Array::from_vec(dim2(2, 3), vec![1i32, 2, 3, 4, 5, 6]).unwrap();
    assert_eq!(a.to_string(), "Array [2, 3] [1, 2, 3, 4, 5, 6]");
    let f = Vector::from_elems(vec![1.0f32, -0.0, f32::NAN]);
    assert_eq!(f.to_string(), "Array [3] [1.0, -0.0, NaN]");
    let e = Vector::<u8>::from_elems(vec![]);
    assert_eq!(e.to_string(), "Array [0] []");
    assert_eq!(Scalar::scalar(true).to_string(), "Array [] [true]");
}

#[test]
fn display_shows_at_most_the_first_eight_elements() {
    let eight = Vector::from_elems((0..8).collect::<Vec<i64>>());
    assert_eq!(eight.to_string(), "Array [8] [0, 1, 2, 3, 4, 5, 6, 7]");
    let many = Array::from_vec(dim2(10, 10), (0..100).collect::<Vec<i64>>()).unwrap();
    assert_eq!(many.to_string(), "Array [10, 10] [0, 1, 2, 3, 4, 5, 6, 7, .. (92 more)]");
}

#[test]
fn debug_is_the_same_as_display() {
    let a = Vector::from_elems((0..12).map(|x| x as u16).collect());
    assert_eq!(format!("{a:?}"), a.to_string());
    assert_eq!(format!("{a:?}"), "Array [12] [0, 1, 2, 3, 4, 5, 6, 7, .. (4 more)]");
}

#[test]
fn display_of_tuples_shows_each_element_as_a_tuple() {
    let a = Vector::from_elems(vec![(1i32, 2.5f64), (-3, 0.0)]);
    assert_eq!(a.to_string(), "Array [2] [(1, 2.5), (-3, 0.0)]");
}

// ---------------------------------------------------------------------------
// Arrays of tuples

#[test]
fn arrays_of_tuples_round_trip_through_struct_of_arrays_storage() {
    let xs = vec![(1i8, (true, 2.5f32), u64::MAX), (-128, (false, -0.0), 0), (127, (true, f32::INFINITY), 7)];
    let a = Vector::from_elems(xs.clone());
    assert_eq!(a.to_vec(), xs);
    assert_eq!(a.get(dim1(1)), Some(xs[1]));
    assert_eq!(a.get_linear(2), Some(xs[2]));
    let m = Array::from_fn(dim2(2, 2), |Snoc(Snoc(Z, i), j)| (i as i32, j as f64, (i + j) % 2 == 0)).unwrap();
    assert_eq!(m.to_vec(), vec![(0, 0.0, true), (0, 1.0, false), (1, 0.0, false), (1, 1.0, true)]);
}

#[test]
fn arrays_of_options_round_trip() {
    let xs = vec![Some(3i32), None, Some(-1), None];
    let a = Vector::from_elems(xs.clone());
    assert_eq!(a.to_vec(), xs);
    assert_eq!(a.get(dim1(1)), Some(None));
}

#[test]
fn arrays_of_tuples_round_trip_through_a_program() {
    let xs = vec![(1i32, 10i64), (2, 20), (3, 30)];
    let a = use_array(Vector::from_elems(xs.clone()));
    let r = accelerate::run_with(&a.map(|p| p.clone()), &Config::from_env().unwrap()).unwrap();
    assert_eq!(r.to_vec(), xs);
    let swapped =
        accelerate::run_with(&a.map(|p| lift((p.snd(), p.fst()))), &Config::from_env().unwrap()).unwrap();
    assert_eq!(swapped.to_vec(), vec![(10i64, 1i32), (20, 2), (30, 3)]);
}

// ---------------------------------------------------------------------------
// Properties

fn dims() -> impl Strategy<Value = Vec<usize>> {
    let ext = || prop_oneof![1 => Just(0usize), 1 => Just(1usize), 4 => 0usize..=7];
    proptest::collection::vec(ext(), 1..=3)
}

fn elems() -> impl Strategy<Value = (i32, f64)> {
    let f =
        prop_oneof![Just(f64::NAN), Just(f64::INFINITY), Just(f64::NEG_INFINITY), Just(-0.0), any::<f64>(),];
    let i = prop_oneof![Just(i32::MIN), Just(i32::MAX), any::<i32>()];
    (i, f)
}

fn shaped() -> impl Strategy<Value = (Vec<usize>, Vec<(i32, f64)>)> {
    dims().prop_flat_map(|d| {
        let n: usize = d.iter().product();
        (Just(d), proptest::collection::vec(elems(), n))
    })
}

/// Bit patterns, so that NaN compares equal to itself and -0.0 differs
/// from 0.0: storage must give back exactly what it was given.
fn bits(v: &[(i32, f64)]) -> Vec<(i32, u64)> {
    v.iter().map(|&(i, f)| (i, f.to_bits())).collect()
}

fn check_at<Sh: Shape>(d: &[usize], xs: &[(i32, f64)]) -> Result<(), TestCaseError> {
    let ext: Vec<i64> = d.iter().map(|&x| x as i64).collect();
    let a = Array::<Sh, (i32, f64)>::from_vec(Sh::from_slice(&ext), xs.to_vec()).unwrap();
    prop_assert_eq!(a.dims(), d);
    prop_assert_eq!(a.len(), xs.len());
    prop_assert_eq!(bits(&a.to_vec()), bits(xs));
    // get agrees with the row-major position of every index
    let mut k = 0;
    let mut ix = vec![0i64; d.len()];
    if !xs.is_empty() {
        loop {
            let got = a.get(Sh::from_slice(&ix)).expect("in bounds");
            prop_assert_eq!(bits(&[got]), bits(&xs[k..=k]));
            prop_assert_eq!(bits(&[a.get_linear(k).expect("in bounds")]), bits(&xs[k..=k]));
            k += 1;
            let mut r = d.len();
            while r > 0 {
                r -= 1;
                ix[r] += 1;
                if (ix[r] as usize) < d[r] {
                    break;
                }
                ix[r] = 0;
            }
            if k == xs.len() {
                break;
            }
        }
    }
    prop_assert!(a.get_linear(xs.len()).is_none());
    // one past the end of each dimension is out of bounds
    for r in 0..d.len() {
        let mut past = vec![0i64; d.len()];
        past[r] = d[r] as i64;
        prop_assert!(a.get(Sh::from_slice(&past)).is_none());
    }
    // from_iter_shaped and from_fn agree with from_vec
    let b = Array::<Sh, (i32, f64)>::from_iter_shaped(Sh::from_slice(&ext), xs.iter().copied()).unwrap();
    prop_assert_eq!(bits(&b.to_vec()), bits(xs));
    let mut it = xs.iter().copied();
    let c = Array::<Sh, (i32, f64)>::from_fn(Sh::from_slice(&ext), |_| it.next().unwrap()).unwrap();
    prop_assert_eq!(bits(&c.to_vec()), bits(xs));
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn from_vec_then_to_vec_get_and_get_linear_give_back_the_elements((d, xs) in shaped()) {
        match d.len() {
            1 => check_at::<DIM1>(&d, &xs)?,
            2 => check_at::<DIM2>(&d, &xs)?,
            3 => check_at::<DIM3>(&d, &xs)?,
            r => panic!("rank {r} is not generated"),
        }
    }

    #[test]
    fn from_vec_of_the_wrong_length_is_an_error_not_a_panic(
        (d, xs) in shaped(), extra in 1usize..3, shorter in any::<bool>()
    ) {
        let mut ys = xs.clone();
        if shorter && !ys.is_empty() {
            ys.pop();
        } else {
            ys.extend(std::iter::repeat_n((0, 0.0), extra));
        }
        let r = match d.len() {
            1 => wrong_length_at::<DIM1>(&d, ys.clone()),
            2 => wrong_length_at::<DIM2>(&d, ys.clone()),
            3 => wrong_length_at::<DIM3>(&d, ys.clone()),
            r => panic!("rank {r} is not generated"),
        };
        match r {
            Some(Error::DataLength { shape, expected, found, .. }) => {
                prop_assert_eq!(shape, d);
                prop_assert_eq!(expected, xs.len());
                prop_assert_eq!(found, ys.len());
            }
            other => prop_assert!(false, "expected DataLength, got {:?}", other),
        }
    }
}

fn wrong_length_at<Sh: Shape>(d: &[usize], ys: Vec<(i32, f64)>) -> Option<Error> {
    let ext: Vec<i64> = d.iter().map(|&x| x as i64).collect();
    Array::<Sh, (i32, f64)>::from_vec(Sh::from_slice(&ext), ys).err()
}

// ---------------------------------------------------------------------------
// ndarray

#[cfg(feature = "ndarray")]
mod ndarray_conversion {
    use super::*;
    use ndarray::{arr2, Array1, ArrayD, IxDyn};

    #[test]
    fn to_ndarray_has_the_same_extents_and_row_major_elements() {
        let a = Array::from_vec(dim2(2, 3), vec![1i32, 2, 3, 4, 5, 6]).unwrap();
        let n = a.to_ndarray();
        assert_eq!(n.shape(), &[2, 3]);
        assert_eq!(n[IxDyn(&[1, 0])], 4);
        assert_eq!(n[IxDyn(&[0, 2])], 3);
        assert_eq!(n.iter().copied().collect::<Vec<_>>(), a.to_vec());
        let s = Scalar::scalar(9u8).to_ndarray();
        assert_eq!(s.ndim(), 0);
        assert_eq!(s[IxDyn(&[])], 9);
    }

    #[test]
    fn from_ndarray_round_trips_through_to_ndarray() {
        let a = Array::from_fn(dim3(2, 0, 3), |_| 1.0f64).unwrap();
        assert_eq!(Array::<DIM3, f64>::from_ndarray(&a.to_ndarray()).unwrap(), a);
        let b = Array::from_fn(dim3(2, 3, 4), |Snoc(Snoc(Snoc(Z, i), j), k)| (i * 12 + j * 4 + k) as u32)
            .unwrap();
        assert_eq!(Array::<DIM3, u32>::from_ndarray(&b.to_ndarray()).unwrap(), b);
    }

    #[test]
    fn from_ndarray_reads_a_transposed_view_in_logical_order() {
        let n = arr2(&[[1i64, 2, 3], [4, 5, 6]]);
        let t = n.t();
        assert!(!t.is_standard_layout());
        let a = Matrix::<i64>::from_ndarray(&t).unwrap();
        assert_eq!(a.dims(), &[3, 2]);
        assert_eq!(a.to_vec(), vec![1, 4, 2, 5, 3, 6]);
        assert_eq!(a.get(dim2(2, 1)), Some(6));
        // a strided (every other column) view
        let wide = arr2(&[[0.5f32, 1.5, 2.5, 3.5], [4.5, 5.5, 6.5, 7.5]]);
        let strided = wide.slice(ndarray::s![.., ..;2]);
        let b = Matrix::<f32>::from_ndarray(&strided).unwrap();
        assert_eq!(b.dims(), &[2, 2]);
        assert_eq!(b.to_vec(), vec![0.5, 2.5, 4.5, 6.5]);
    }

    #[test]
    fn from_ndarray_of_another_rank_is_a_rank_mismatch_error() {
        let v = Array1::from(vec![1i32, 2, 3]);
        let line = line!() + 1;
        let err = Matrix::<i32>::from_ndarray(&v).unwrap_err();
        match &err {
            Error::RankMismatch { expected, found, .. } => assert_eq!((*expected, *found), (2, 1)),
            other => panic!("expected RankMismatch, got {other:?}"),
        }
        assert!(err.to_string().contains(&format!("tests/arrays.rs:{line}:")), "{err}");
        let d = ArrayD::<i32>::zeros(IxDyn(&[2, 2, 2]));
        let err = Vector::<i32>::from_ndarray(&d).unwrap_err();
        assert!(matches!(err, Error::RankMismatch { expected: 1, found: 3, .. }), "{err:?}");
    }
}

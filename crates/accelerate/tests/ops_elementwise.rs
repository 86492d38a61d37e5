//! Property tests of the element-wise array operations (use, unit,
//! generate, fill, map, zip_with, zip, backpermute, reshape, replicate,
//! slice), of reading arrays in scalar code, of acond/awhile, of compiled
//! programs and of arrays of tuples, each against a plain-Rust reference
//! (docs/semantics.md, "Array operations").

mod common;

use accelerate::prelude::*;
use common::*;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn ix1(i: i64) -> DIM1 {
    Snoc(Z, i)
}

fn ix2(i: i64, j: i64) -> DIM2 {
    Snoc(Snoc(Z, i), j)
}

fn ix3(i: i64, j: i64, k: i64) -> DIM3 {
    Snoc(Snoc(Snoc(Z, i), j), k)
}

fn extents<Sh: Shape>(a: &Array<Sh, impl Elt>) -> Vec<i64> {
    a.shape().to_vec()
}

/// The element of a host array at an index known to be in bounds.
fn at<Sh: Shape, E: Elt>(a: &Array<Sh, E>, ix: Sh) -> E {
    a.get(ix).expect("reference index in bounds")
}

/// The reference array of the given shape, built by explicit row-major
/// loops (independent of `Array::from_fn`).
fn rank2<E: Elt>(rows: i64, cols: i64, mut f: impl FnMut(i64, i64) -> E) -> Matrix<E> {
    let mut v = Vec::new();
    for i in 0..rows {
        for j in 0..cols {
            v.push(f(i, j));
        }
    }
    Array::from_vec(ix2(rows, cols), v).expect("reference size")
}

fn rank3<E: Elt>(a: i64, b: i64, c: i64, mut f: impl FnMut(i64, i64, i64) -> E) -> Array<DIM3, E> {
    let mut v = Vec::new();
    for i in 0..a {
        for j in 0..b {
            for k in 0..c {
                v.push(f(i, j, k));
            }
        }
    }
    Array::from_vec(ix3(a, b, c), v).expect("reference size")
}

fn compile_err(e: Error) -> TestCaseError {
    TestCaseError::fail(format!("compile failed: {e}"))
}

// ---------------------------------------------------------------------------
// use_array and map identity, for every element type and ranks 0 to 3

fn round_trip<Sh: Shape, E: Elt + Same>(a: &Array<Sh, E>) -> Result<(), TestCaseError> {
    let rank = Sh::RANK;
    check_exact(&run_ok(|| use_array(a.clone()))?, a, &format!("use_array, rank {rank}"))?;
    check_exact(
        &run_ok(|| use_array(a.clone()).map(|x| x.clone()))?,
        a,
        &format!("map identity, rank {rank}"),
    )
}

macro_rules! round_trips {
    ($($name:ident: $t:ty = $strategy:expr;)*) => {$(
        proptest! {
            #![proptest_config(config(24))]
            #[test]
            fn $name(
                a0 in array_of(dim0_shape(), $strategy),
                a1 in array_of(dim1_shape(40), $strategy),
                a2 in array_of(dim2_shape(9), $strategy),
                a3 in array_of(dim3_shape(5), $strategy),
            ) {
                let (a0, a1, a2, a3): (Array<DIM0, $t>, Array<DIM1, $t>, Array<DIM2, $t>, Array<DIM3, $t>) =
                    (a0, a1, a2, a3);
                round_trip(&a0)?;
                round_trip(&a1)?;
                round_trip(&a2)?;
                round_trip(&a3)?;
            }
        }
    )*};
}

round_trips! {
    bool_arrays_round_trip_through_use_and_map: bool = elem::<bool>();
    i8_arrays_round_trip_through_use_and_map: i8 = elem::<i8>();
    i16_arrays_round_trip_through_use_and_map: i16 = elem::<i16>();
    i32_arrays_round_trip_through_use_and_map: i32 = elem::<i32>();
    i64_arrays_round_trip_through_use_and_map: i64 = elem::<i64>();
    u8_arrays_round_trip_through_use_and_map: u8 = elem::<u8>();
    u16_arrays_round_trip_through_use_and_map: u16 = elem::<u16>();
    u32_arrays_round_trip_through_use_and_map: u32 = elem::<u32>();
    u64_arrays_round_trip_through_use_and_map: u64 = elem::<u64>();
    f32_arrays_round_trip_bit_for_bit_through_use_and_map: f32 = elem::<f32>();
    f64_arrays_round_trip_bit_for_bit_through_use_and_map: f64 = elem::<f64>();
    pair_arrays_round_trip_through_use_and_map: (f32, i32) = (elem::<f32>(), elem::<i32>()).boxed();
    triple_arrays_round_trip_through_use_and_map: (bool, u8, f64) =
        (elem::<bool>(), elem::<u8>(), elem::<f64>()).boxed();
    nested_tuple_arrays_round_trip_through_use_and_map: ((i8, f32), (bool, (u64, i16))) =
        ((elem::<i8>(), elem::<f32>()), (elem::<bool>(), (elem::<u64>(), elem::<i16>()))).boxed();
    option_arrays_round_trip_through_use_and_map: Option<i16> =
        proptest::option::of(elem::<i16>()).boxed();
    shape_arrays_round_trip_through_use_and_map: DIM2 =
        (elem::<i64>(), elem::<i64>()).prop_map(|(a, b)| ix2(a, b)).boxed();
}

// ---------------------------------------------------------------------------
// unit, generate, fill

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn unit_is_a_rank_0_array_of_its_value(x in elem::<f64>(), y in elem::<i8>(), b in any::<bool>()) {
        let r = run_ok(|| unit(x))?;
        prop_assert_eq!(r.dims(), &[] as &[usize]);
        prop_assert_eq!(r.len(), 1);
        check_exact(&r.value(), &x, "unit of a constant")?;

        let r = run_ok(|| unit(lift((constant(y), constant(b)))))?;
        check_exact(&r.value(), &(y, b), "unit of a pair")?;

        let r = run_ok(|| unit(constant(y).cast::<i64>() * 3i64))?;
        prop_assert_eq!(r.value(), y as i64 * 3);
    }

    #[test]
    fn generate_of_rank_0_has_exactly_one_element(x in elem::<i32>()) {
        let r = run_ok(|| generate(Z, move |_| constant(x) ^ 5i32))?;
        prop_assert_eq!(r.dims(), &[] as &[usize]);
        prop_assert_eq!(r.to_vec(), vec![x ^ 5]);
        let r = run_ok(|| generate(index0(), move |ix| shape_size(ix).cast::<i32>() + x))?;
        prop_assert_eq!(r.to_vec(), vec![x.wrapping_add(1)]);
    }

    #[test]
    fn generate_of_rank_1_applies_f_to_every_index(n in extent(300)) {
        let r = run_ok(|| generate(ix1(n), |ix| unindex1(ix) * 3i64 - 7i64))?;
        prop_assert_eq!(extents(&r), vec![n]);
        prop_assert_eq!(r.to_vec(), (0..n).map(|i| i * 3 - 7).collect::<Vec<_>>());
    }

    #[test]
    fn generate_of_rank_2_lays_out_rows_one_after_another(sh in dim2_shape(17)) {
        let r = run_ok(|| {
            generate(sh, |ix| {
                let (i, j) = unindex2(ix);
                lift((i, j.cast::<f32>() * 0.5f32))
            })
        })?;
        let Snoc(Snoc(Z, rows), cols) = sh;
        check_exact(&r, &rank2(rows, cols, |i, j| (i, j as f32 * 0.5)), "generate rank 2")?;
    }

    #[test]
    fn generate_of_rank_3_varies_the_innermost_index_fastest(sh in dim3_shape(7)) {
        let r = run_ok(|| {
            generate(sh, |ix| {
                let (i, j, k) = unindex3(ix);
                (i * 10_000i64 + j * 100i64 + k).cast::<i32>()
            })
        })?;
        let Snoc(Snoc(Snoc(Z, a), b), c) = sh;
        check_exact(&r, &rank3(a, b, c, |i, j, k| (i * 10_000 + j * 100 + k) as i32), "generate rank 3")?;
    }

    #[test]
    fn generate_over_the_shape_of_another_array_copies_it(a in matrix::<u8>(11)) {
        let r = run_ok(|| {
            let m = use_array(a.clone());
            generate(m.shape(), |ix| m.index(ix))
        })?;
        check_exact(&r, &a, "generate over a's shape reading a")?;
    }

    #[test]
    fn fill_sets_every_element_to_the_value(sh2 in dim2_shape(12), sh3 in dim3_shape(6), x in elem::<f32>()) {
        let r = run_ok(|| fill(sh2, x))?;
        let Snoc(Snoc(Z, rows), cols) = sh2;
        check_exact(&r, &rank2(rows, cols, |_, _| x), "fill rank 2")?;
        let r = run_ok(|| fill(sh3, constant(x).is_nan()))?;
        let Snoc(Snoc(Snoc(Z, a), b), c) = sh3;
        check_exact(&r, &rank3(a, b, c, |_, _, _| x.is_nan()), "fill rank 3")?;
    }
}

// ---------------------------------------------------------------------------
// map, zip_with, zip

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn map_applies_f_to_every_element_and_keeps_the_shape(a in cube::<f32>(6)) {
        let r = run_ok(|| use_array(a.clone()).map(|x| x * 2.0f32 + 1.0f32))?;
        let want = Array::from_vec(a.shape(), a.to_vec().iter().map(|x| x * 2.0 + 1.0).collect()).unwrap();
        check_same(&r, &want, "map (x * 2 + 1)")?;
    }

    #[test]
    fn map_can_change_the_element_type(a in matrix::<i32>(10)) {
        let r = run_ok(|| use_array(a.clone()).map(|x| lift((x.gt(0i32), x.cast::<f64>()))))?;
        let want = Array::from_vec(a.shape(), a.to_vec().iter().map(|&x| (x > 0, x as f64)).collect()).unwrap();
        check_exact(&r, &want, "map to (bool, f64)")?;
    }

    #[test]
    fn zip_with_takes_the_intersection_of_shapes(a in matrix::<i32>(9), b in matrix::<i32>(9)) {
        let r = run_ok(|| use_array(a.clone()).zip_with(use_array(b.clone()), |x, y| x - y))?;
        let (ea, eb) = (extents(&a), extents(&b));
        let want = rank2(ea[0].min(eb[0]), ea[1].min(eb[1]), |i, j| {
            at(&a, ix2(i, j)).wrapping_sub(at(&b, ix2(i, j)))
        });
        check_exact(&r, &want, "zip_with (-) of matrices")?;
    }

    #[test]
    fn zip_with_of_vectors_is_as_long_as_the_shorter(a in vector::<f64>(40), b in vector::<f64>(40)) {
        let r = run_ok(|| use_array(a.clone()).zip_with(use_array(b.clone()), |x, y| x.atan2(y)))?;
        let want: Vec<f64> = a.to_vec().iter().zip(b.to_vec()).map(|(x, y)| x.atan2(y)).collect();
        prop_assert_eq!(extents(&r), vec![want.len() as i64]);
        check_ulps_vec(&r.to_vec(), &want, transcendental_ulps(), "zip_with atan2 of vectors")?;
    }

    #[test]
    fn zip_with_of_rank_3_arrays_takes_the_intersection(a in cube::<u16>(5), b in cube::<i8>(5)) {
        let r = run_ok(|| use_array(a.clone()).zip_with(use_array(b.clone()), |x, y| lift((y, x))))?;
        let (ea, eb) = (extents(&a), extents(&b));
        let want = rank3(ea[0].min(eb[0]), ea[1].min(eb[1]), ea[2].min(eb[2]), |i, j, k| {
            (at(&b, ix3(i, j, k)), at(&a, ix3(i, j, k)))
        });
        check_exact(&r, &want, "zip_with to pairs of rank 3")?;
    }

    #[test]
    fn zip_pairs_elements_and_fst_snd_unlift_take_them_apart(a in vector::<f32>(40), b in vector::<i32>(40)) {
        let (pairs, firsts, seconds, swapped) = run_ok(|| {
            let z = use_array(a.clone()).zip(use_array(b.clone()));
            let swapped = z.map(|p| {
                let (x, y) = p.unlift();
                lift((y, x))
            });
            lift_acc((z.clone(), z.map(|p| p.fst()), z.map(|p| p.snd()), swapped))
        })?;
        let want: Vec<(f32, i32)> = a.to_vec().into_iter().zip(b.to_vec()).collect();
        check_exact(&pairs.to_vec(), &want, "zip")?;
        check_exact(&firsts.to_vec(), &want.iter().map(|p| p.0).collect(), "map fst")?;
        check_exact(&seconds.to_vec(), &want.iter().map(|p| p.1).collect(), "map snd")?;
        check_exact(&swapped.to_vec(), &want.iter().map(|&(x, y)| (y, x)).collect(), "map swap")?;
    }

    #[test]
    fn arrays_of_pairs_are_mapped_component_wise(
        a in array_of(dim2_shape(8), (elem::<f32>(), elem::<i32>()).boxed())
    ) {
        let r = run_ok(|| {
            use_array(a.clone()).map(|p| {
                let (x, n) = p.unlift();
                lift((&x * n.cast::<f32>(), n.abs(), x.lt(0.0f32)))
            })
        })?;
        let want: Vec<(f32, i32, bool)> =
            a.to_vec().iter().map(|&(x, n)| (x * n as f32, n.wrapping_abs(), x < 0.0)).collect();
        prop_assert_eq!(r.dims(), a.dims());
        check_same_vec(&r.to_vec(), &want, "map over (f32, i32)")?;
    }
}

// ---------------------------------------------------------------------------
// backpermute and reshape

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn backpermute_can_reverse_a_vector(a in vector::<f64>(60)) {
        let r = run_ok(|| {
            let v = use_array(a.clone());
            v.backpermute(v.shape(), |ix| index1(v.size() - 1i64 - unindex1(ix)))
        })?;
        let mut want = a.to_vec();
        want.reverse();
        check_exact(&r.to_vec(), &want, "reverse")?;
    }

    #[test]
    fn backpermute_can_transpose_a_matrix(a in matrix::<i16>(11)) {
        let r = run_ok(|| {
            let m = use_array(a.clone());
            let (rows, cols) = unindex2(m.shape());
            m.backpermute(index2(cols, rows), |ix| {
                let (i, j) = unindex2(ix);
                index2(j, i)
            })
        })?;
        let e = extents(&a);
        check_exact(&r, &rank2(e[1], e[0], |i, j| at(&a, ix2(j, i))), "transpose")?;
    }

    #[test]
    fn backpermute_can_change_the_rank(a in matrix::<u32>(11)) {
        let r = run_ok(|| {
            let m = use_array(a.clone());
            let (rows, cols) = unindex2(m.shape());
            m.backpermute(index1(rows.min(cols)), |ix| {
                let i = unindex1(ix);
                index2(&i, &i)
            })
        })?;
        let e = extents(&a);
        let want: Vec<u32> = (0..e[0].min(e[1])).map(|i| at(&a, ix2(i, i))).collect();
        prop_assert_eq!(r.to_vec(), want);
    }

    #[test]
    fn backpermute_outside_the_source_is_an_index_error(a in vector::<i32>(20)) {
        let r = try_run(|| {
            let v = use_array(a.clone());
            v.backpermute(index1(1i64), |_| index1(v.size()))
        });
        check_error(r, |e| matches!(e, Error::IndexOutOfBounds { .. }), "backpermute past the end")?;
    }

    #[test]
    fn reshape_keeps_the_elements_in_row_major_order(a in cube::<f32>(5)) {
        let e = extents(&a);
        let (v, m, back) = run_ok(|| {
            let t = use_array(a.clone());
            let v = t.reshape(index1(t.size()));
            let m = t.reshape(index2(e[0] * e[1], e[2]));
            let back = m.reshape(constant(a.shape()));
            lift_acc((v, m, back))
        })?;
        prop_assert_eq!(extents(&v), vec![a.len() as i64]);
        check_exact(&v.to_vec(), &a.to_vec(), "reshape to a vector")?;
        prop_assert_eq!(extents(&m), vec![e[0] * e[1], e[2]]);
        check_exact(&m.to_vec(), &a.to_vec(), "reshape to a matrix")?;
        check_exact(&back, &a, "reshape back")?;
    }

    #[test]
    fn reshape_of_a_one_element_vector_to_rank_0(x in elem::<f64>()) {
        let r = run_ok(|| use_array(Vector::from_elems(vec![x])).reshape(Z))?;
        check_exact(&r.value(), &x, "reshape [1] to []")?;
    }

    #[test]
    fn reshape_to_another_size_is_an_error(a in vector::<u8>(20), extra in 1i64..4) {
        let r = try_run(|| {
            let v = use_array(a.clone());
            v.reshape(index2(1i64, v.size() + extra))
        });
        check_error(r, |e| matches!(e, Error::ReshapeSize { .. }), "reshape to a larger size")?;
    }
}

// ---------------------------------------------------------------------------
// replicate and slice

/// A matrix with at least one row and one column and an index of a row and
/// of a column in it.
fn matrix_and_position<T: Gen>(max: i64) -> BoxedStrategy<(Matrix<T>, i64, i64)> {
    let shape = (positive_extent(max), positive_extent(max)).prop_map(|(r, c)| ix2(r, c)).boxed();
    (array_of(shape, elem::<T>()), 0..1000i64, 0..1000i64)
        .prop_map(|(m, i, j)| {
            let e = m.shape().to_vec();
            let (i, j) = (i % e[0], j % e[1]);
            (m, i, j)
        })
        .boxed()
}

/// A rank-3 array with every extent at least one, and an index in it.
fn cube_and_position<T: Gen>(max: i64) -> BoxedStrategy<(Array<DIM3, T>, DIM3)> {
    let shape = (positive_extent(max), positive_extent(max), positive_extent(max))
        .prop_map(|(a, b, c)| ix3(a, b, c))
        .boxed();
    (array_of(shape, elem::<T>()), 0..1000i64, 0..1000i64, 0..1000i64)
        .prop_map(|(t, i, j, k)| {
            let e = t.shape().to_vec();
            let ix = ix3(i % e[0], j % e[1], k % e[2]);
            (t, ix)
        })
        .boxed()
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn replicate_with_a_fixed_outer_dimension_makes_every_row_the_vector(
        a in vector::<i64>(30), n in extent(8)
    ) {
        let r = run_ok(|| use_array(a.clone()).replicate(constant(SnocAll(Snoc(Z, n), All))))?;
        check_exact(&r, &rank2(n, a.len() as i64, |_, j| at(&a, ix1(j))), "replicate into rows")?;
    }

    #[test]
    fn replicate_with_a_fixed_inner_dimension_makes_every_column_the_vector(
        a in vector::<f32>(30), n in extent(8)
    ) {
        let r = run_ok(|| use_array(a.clone()).replicate(constant(Snoc(SnocAll(Z, All), n))))?;
        check_exact(&r, &rank2(a.len() as i64, n, |i, _| at(&a, ix1(i))), "replicate into columns")?;
        // `Any` of rank 1 keeps the vector's dimension the same way
        let r = run_ok(|| use_array(a.clone()).replicate(constant(Snoc(Any::<DIM1>::default(), n))))?;
        check_exact(&r, &rank2(a.len() as i64, n, |i, _| at(&a, ix1(i))), "replicate with Any")?;
    }

    #[test]
    fn replicate_with_any_adds_an_innermost_dimension_at_every_rank(a in matrix::<u8>(8), n in extent(5)) {
        let r = run_ok(|| use_array(a.clone()).replicate(constant(Snoc(Any::<DIM2>::default(), n))))?;
        let e = extents(&a);
        check_exact(&r, &rank3(e[0], e[1], n, |i, j, _| at(&a, ix2(i, j))), "replicate Any<DIM2> then n")?;
    }

    #[test]
    fn replicate_can_insert_a_middle_dimension(a in matrix::<i16>(7), n in extent(5)) {
        let spec = SnocAll(Snoc(SnocAll(Z, All), n), All);
        let r = run_ok(|| use_array(a.clone()).replicate(constant(spec)))?;
        let e = extents(&a);
        check_exact(&r, &rank3(e[0], n, e[1], |i, _, j| at(&a, ix2(i, j))), "replicate [All, n, All]")?;
    }

    #[test]
    fn replicate_of_a_scalar_fills_an_array(x in elem::<f64>(), n in extent(9), m in extent(9)) {
        let s = Scalar::scalar(x);
        let r = run_ok(|| use_array(s.clone()).replicate(constant(ix2(n, m))))?;
        check_exact(&r, &rank2(n, m, |_, _| x), "replicate [n, m] of a scalar")?;
        // the slice index may be computed: `index0().snoc(..)`
        let r = run_ok(|| {
            let len = use_array(s.clone()).map(|_| constant(n)).the();
            use_array(s.clone()).replicate(index0().snoc(len))
        })?;
        check_exact(&r.to_vec(), &vec![x; n as usize], "replicate [computed n] of a scalar")?;
    }

    #[test]
    fn slice_with_a_fixed_outer_index_takes_a_row((a, i, _j) in matrix_and_position::<i32>(9)) {
        let r = run_ok(|| use_array(a.clone()).slice(constant(SnocAll(Snoc(Z, i), All))))?;
        let cols = extents(&a)[1];
        prop_assert_eq!(r.to_vec(), (0..cols).map(|j| at(&a, ix2(i, j))).collect::<Vec<_>>());
    }

    #[test]
    fn slice_with_a_fixed_inner_index_takes_a_column((a, _i, j) in matrix_and_position::<f32>(9)) {
        let r = run_ok(|| use_array(a.clone()).slice(constant(Snoc(SnocAll(Z, All), j))))?;
        let rows = extents(&a)[0];
        let want: Vec<f32> = (0..rows).map(|i| at(&a, ix2(i, j))).collect();
        check_exact(&r.to_vec(), &want, "column slice")?;
        let r = run_ok(|| use_array(a.clone()).slice(constant(Snoc(Any::<DIM1>::default(), j))))?;
        check_exact(&r.to_vec(), &want, "column slice with Any")?;
    }

    #[test]
    fn slice_of_an_empty_row_is_an_empty_vector(rows in positive_extent(5), i in 0..1000i64) {
        let a: Matrix<u64> = Array::from_vec(ix2(rows, 0), vec![]).unwrap();
        let r = run_ok(|| use_array(a.clone()).slice(constant(SnocAll(Snoc(Z, i % rows), All))))?;
        prop_assert_eq!(extents(&r), vec![0]);
    }

    #[test]
    fn slice_with_any_fixes_the_innermost_index((t, ix) in cube_and_position::<u16>(5)) {
        let Snoc(Snoc(Snoc(Z, _), j), k) = ix;
        let e = extents(&t);
        let r = run_ok(|| use_array(t.clone()).slice(constant(Snoc(Any::<DIM2>::default(), k))))?;
        check_exact(&r, &rank2(e[0], e[1], |a, b| at(&t, ix3(a, b, k))), "slice Any<DIM2> then k")?;
        let spec = SnocAll(Snoc(Any::<DIM1>::default(), j), All);
        let r = run_ok(|| use_array(t.clone()).slice(constant(spec)))?;
        check_exact(&r, &rank2(e[0], e[2], |a, c| at(&t, ix3(a, j, c))), "slice [Any, j, All]")?;
    }

    #[test]
    fn slice_fixing_every_index_reads_one_element((t, ix) in cube_and_position::<i8>(5)) {
        let r = run_ok(|| use_array(t.clone()).slice(constant(ix)))?;
        prop_assert_eq!(r.value(), at(&t, ix));
        // the slice index may be computed by scalar code
        let Snoc(Snoc(Snoc(Z, i), j), k) = ix;
        let r = run_ok(|| {
            let ks = use_array(Vector::from_elems(vec![k]));
            use_array(t.clone()).slice(index3(i, j, ks.index(index1(0i64))))
        })?;
        prop_assert_eq!(r.value(), at(&t, ix));
    }

    #[test]
    fn slice_and_replicate_without_fixed_dimensions_are_the_identity(s in elem::<f32>(), a in matrix::<i8>(8)) {
        let sc = Scalar::scalar(s);
        let (s1, s2) = run_ok(|| {
            let x = use_array(sc.clone());
            lift_acc((x.slice(constant(Z)), x.replicate(index0())))
        })?;
        let (m1, m2, m3) = run_ok(|| {
            let m = use_array(a.clone());
            lift_acc((
                m.slice(constant(Any::<DIM2>::default())),
                m.replicate(constant(Any::<DIM2>::default())),
                m.slice(constant(SnocAll(SnocAll(Z, All), All))),
            ))
        })?;
        check_exact(&s1, &sc, "slice Z")?;
        check_exact(&s2, &sc, "replicate Z")?;
        check_exact(&m1, &a, "slice Any<DIM2>")?;
        check_exact(&m2, &a, "replicate Any<DIM2>")?;
        check_exact(&m3, &a, "slice [All, All]")?;
    }

    #[test]
    fn slice_undoes_replicate(a in matrix::<i64>(7), n in positive_extent(4), k in 0..1000i64) {
        let k = k % n;
        let r = run_ok(|| {
            use_array(a.clone())
                .replicate(constant(SnocAll(Snoc(SnocAll(Z, All), n), All)))
                .slice(constant(SnocAll(Snoc(SnocAll(Z, All), k), All)))
        })?;
        check_exact(&r, &a, "slice of replicate")?;
    }

    #[test]
    fn slice_outside_the_array_is_an_index_error(a in matrix::<i32>(6), past in 0i64..3) {
        // an error when an element is read through the bad index; a slice
        // of no elements reads none (docs/semantics.md, as when fused)
        let (rows, cols) = (extents(&a)[0], extents(&a)[1]);
        for (row, what) in [(rows + past, "row past the end"), (-1 - past, "negative row")] {
            let r = try_run(|| use_array(a.clone()).slice(constant(SnocAll(Snoc(Z, row), All))));
            if cols > 0 {
                check_error(r, |e| matches!(e, Error::IndexOutOfBounds { .. }), what)?;
            } else {
                prop_assert_eq!(r.map(|v| v.to_vec()).ok(), Some(vec![]), "{}: an empty slice", what);
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Reading arrays in scalar code: index, linear_index, shape, size, the

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn index_reads_another_array_inside_a_scalar_function(a in matrix::<f32>(9)) {
        let r = run_ok(|| {
            let m = use_array(a.clone());
            let (rows, cols) = unindex2(m.shape());
            generate(index2(cols, rows), move |ix| {
                let (i, j) = unindex2(ix);
                m.index(index2(j, i)) * 2.0f32
            })
        })?;
        let e = extents(&a);
        check_same(&r, &rank2(e[1], e[0], |i, j| at(&a, ix2(j, i)) * 2.0), "generate reading a transposed")?;
    }

    #[test]
    fn index_reads_arrays_of_tuples(a in array_of(dim2_shape(8), (elem::<u16>(), elem::<f64>()).boxed())) {
        let r = run_ok(|| {
            let m = use_array(a.clone());
            generate(m.shape(), move |ix| {
                let (x, y) = m.index(ix).unlift();
                let (_, c) = m.linear_index(to_index(m.shape(), ix)).unlift();
                lift((y, x, c))
            })
        })?;
        let want: Vec<(f64, u16, f64)> = a.to_vec().iter().map(|&(x, y)| (y, x, y)).collect();
        prop_assert_eq!(r.dims(), a.dims());
        check_exact(&r.to_vec(), &want, "reading pairs")?;
    }

    #[test]
    fn linear_index_reads_in_row_major_order(a in cube::<i64>(5)) {
        let r = run_ok(|| {
            let t = use_array(a.clone());
            generate(index1(t.size()), move |ix| t.linear_index(unindex1(ix)))
        })?;
        prop_assert_eq!(r.to_vec(), a.to_vec());
    }

    #[test]
    fn shape_and_size_are_readable_in_scalar_code(a in cube::<u8>(7)) {
        let (sh, n, rank0) = run_ok(|| {
            let t = use_array(a.clone());
            let s = use_array(Scalar::scalar(1u8));
            lift_acc((unit(t.shape()), unit(t.size()), unit(lift((s.shape(), s.size())))))
        })?;
        prop_assert_eq!(sh.value(), a.shape());
        prop_assert_eq!(n.value(), a.len() as i64);
        prop_assert_eq!(rank0.value(), (Z, 1i64));
    }

    #[test]
    fn the_reads_the_element_of_a_rank_0_array(s in elem::<f64>(), a in vector::<f64>(30)) {
        let r = run_ok(|| {
            let sc = use_array(Scalar::scalar(s));
            use_array(a.clone()).map(move |x| x * the(&sc) + sc.the())
        })?;
        let want: Vec<f64> = a.to_vec().iter().map(|&x| x * s + s).collect();
        check_same_vec(&r.to_vec(), &want, "map x * s + s")?;
    }

    #[test]
    fn index_outside_the_array_is_an_index_error(a in vector::<u32>(20), past in 0i64..3) {
        let r = try_run(|| {
            let v = use_array(a.clone());
            generate(index1(1i64), move |_| v.index(index1(v.size() + past)))
        });
        check_error(r, |e| matches!(e, Error::IndexOutOfBounds { .. }), "index past the end")?;
        let r = try_run(|| {
            let v = use_array(a.clone());
            generate(index1(1i64), move |_| v.index(index1(-1i64 - past)))
        });
        check_error(r, |e| matches!(e, Error::IndexOutOfBounds { .. }), "negative index")?;
    }
}

// ---------------------------------------------------------------------------
// acond and awhile

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn acond_computes_the_branch_its_condition_selects(flag in any::<bool>(), a in vector::<i32>(30)) {
        let r = run_ok(|| {
            let v = use_array(a.clone());
            let c = use_array(Scalar::scalar(flag)).the();
            acond(c, v.map(|x| x + 1i32), v.map(|x| x * 2i32))
        })?;
        let want: Vec<i32> =
            a.to_vec().iter().map(|&x| if flag { x.wrapping_add(1) } else { x.wrapping_mul(2) }).collect();
        prop_assert_eq!(r.to_vec(), want);
    }

    #[test]
    fn acond_selects_between_tuples_of_arrays(flag in any::<bool>(), a in vector::<u8>(20), b in matrix::<i64>(5)) {
        let (v, m) = run_ok(|| {
            let (x, y) = (use_array(a.clone()), use_array(b.clone()));
            acond(flag, lift_acc((x.clone(), y.clone())), lift_acc((x.map(|e| !e), y.map(|e| -e))))
        })?;
        let (wv, wm): (Vec<u8>, Vec<i64>) = if flag {
            (a.to_vec(), b.to_vec())
        } else {
            (a.to_vec().iter().map(|e| !e).collect(), b.to_vec().iter().map(|e| e.wrapping_neg()).collect())
        };
        prop_assert_eq!(v.to_vec(), wv);
        prop_assert_eq!(m.dims(), b.dims());
        prop_assert_eq!(m.to_vec(), wm);
    }

    #[test]
    fn acond_computes_only_the_branch_taken(flag in any::<bool>(), a in vector::<i32>(30)) {
        // the `bad` branch reads past the end of `v`: an error only if run
        let r = try_run(|| {
            let v = use_array(a.clone());
            let bad = v.backpermute(v.shape(), |ix| index1(unindex1(ix) + v.size()));
            let good = v.map(|x| x ^ 1i32);
            acond(constant(flag), good, bad)
        });
        if flag {
            let want: Vec<i32> = a.to_vec().iter().map(|x| x ^ 1).collect();
            prop_assert_eq!(r.map_err(|e| TestCaseError::fail(e.to_string()))?.to_vec(), want);
        } else if !a.is_empty() {
            check_error(r, |e| matches!(e, Error::IndexOutOfBounds { .. }), "the bad branch taken")?;
        }
    }

    #[test]
    fn awhile_doubles_until_the_bound_is_passed(start in 1i64..100, bound in 0i64..1_000_000) {
        let r = run_ok(|| {
            awhile(|s| unit(s.the().le(bound)), |s| unit(s.the() * 2i64), unit(start))
        })?;
        let mut want = start;
        while want <= bound {
            want *= 2;
        }
        prop_assert_eq!(r.value(), want);
    }

    #[test]
    fn awhile_over_a_tuple_of_arrays_counts_its_iterations(a in vector::<f32>(20), n in 0i64..6) {
        let (count, v) = run_ok(|| {
            let init = lift_acc((unit(0i64), use_array(a.clone())));
            awhile(
                |st| {
                    let (k, _) = st.unlift();
                    unit(k.the().lt(n))
                },
                |st| {
                    let (k, v) = st.unlift();
                    lift_acc((unit(k.the() + 1i64), v.map(|x| x * 0.5f32 + 1.0f32)))
                },
                init,
            )
        })?;
        prop_assert_eq!(count.value(), n);
        let want: Vec<f32> = a
            .to_vec()
            .iter()
            .map(|&x| (0..n).fold(x, |y, _| y * 0.5 + 1.0))
            .collect();
        check_same_vec(&v.to_vec(), &want, "n iterations of x * 0.5 + 1")?;
    }

    #[test]
    fn awhile_whose_predicate_is_false_returns_the_initial_array(a in matrix::<u8>(6)) {
        // the predicate ignores its argument (a constant `false`)
        let r = run_ok(|| awhile(|_| unit(false), |m| m.map(|x| x + 1u8), use_array(a.clone())))?;
        check_exact(&r, &a, "awhile with a false predicate")?;
    }

    #[test]
    fn awhile_body_may_ignore_its_argument(start in 0i64..3, next in 3i64..100) {
        let r = run_ok(|| awhile(|s| unit(s.the().lt(3i64)), move |_| unit(next), unit(start)))?;
        prop_assert_eq!(r.value(), next);
    }

    #[test]
    fn awhile_can_change_the_shape_of_its_array(a in vector::<i16>(6), limit in 0i64..40) {
        let r = run_ok(|| {
            awhile(
                move |v| unit(v.size().lt(limit).and(v.size().gt(0i64))),
                |v| v.replicate(constant(SnocAll(Snoc(Z, 2i64), All))).reshape(index1(v.size() * 2i64)),
                use_array(a.clone()),
            )
        })?;
        let mut want = a.to_vec();
        while (want.len() as i64) < limit && !want.is_empty() {
            want = want.iter().chain(want.iter()).copied().collect();
        }
        prop_assert_eq!(r.to_vec(), want);
    }
}

// ---------------------------------------------------------------------------
// compile: convert once, run many times

proptest! {
    #![proptest_config(config(32))]

    #[test]
    fn a_compiled_program_of_one_argument_runs_on_many_inputs(inputs in vec(vector::<i32>(30), 1..6)) {
        let f = {
            accelerate::compile(|v: Acc<Vector<i32>>| v.map(|x| x * 3i32 + 1i32))
        }
        .map_err(compile_err)?;
        for v in &inputs {
            let r = f.run(v).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let want: Vec<i32> = v.to_vec().iter().map(|x| x.wrapping_mul(3).wrapping_add(1)).collect();
            prop_assert_eq!(r.to_vec(), want);
        }
    }

    #[test]
    fn a_compiled_program_of_two_arguments_runs_on_many_inputs(
        inputs in vec((matrix::<f64>(6), matrix::<f64>(6)), 1..6)
    ) {
        let f = {
            accelerate::compile(|a: Acc<Matrix<f64>>, b: Acc<Matrix<f64>>| {
                a.zip_with(b, |x, y| x * y + 1.0f64)
            })
        }
        .map_err(compile_err)?;
        for (a, b) in &inputs {
            let r = f.run((a, b)).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let (ea, eb) = (extents(a), extents(b));
            let want = rank2(ea[0].min(eb[0]), ea[1].min(eb[1]), |i, j| {
                at(a, ix2(i, j)) * at(b, ix2(i, j)) + 1.0
            });
            check_same(&r, &want, "compiled zip_with")?;
        }
    }

    #[test]
    fn a_compiled_program_using_its_argument_twice_runs_on_many_inputs(
        inputs in vec(vector::<i64>(30), 1..6)
    ) {
        let f = {
            accelerate::compile(|v: Acc<Vector<i64>>| {
                let rev = v.backpermute(v.shape(), |ix| index1(v.size() - 1i64 - unindex1(ix)));
                lift_acc((v.zip_with(rev, |x, y| x - y), v.map(|x| x.abs())))
            })
        }
        .map_err(compile_err)?;
        for v in &inputs {
            let (d, a) = f.run(v).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let xs = v.to_vec();
            let want: Vec<i64> = xs.iter().zip(xs.iter().rev()).map(|(x, y)| x.wrapping_sub(*y)).collect();
            prop_assert_eq!(d.to_vec(), want);
            prop_assert_eq!(a.to_vec(), xs.iter().map(|x| x.wrapping_abs()).collect::<Vec<_>>());
        }
    }
}

proptest! {
    #![proptest_config(config(32))]

    #[test]
    fn a_compiled_program_of_a_tuple_of_arrays_runs_on_many_inputs(
        inputs in vec((vector::<i64>(20), vector::<i64>(20)), 1..6)
    ) {
        let f = {
            accelerate::compile(|t: Acc<(Vector<i64>, Vector<i64>)>| {
                let (a, b) = t.unlift();
                a.zip_with(b, |x, y| x * y)
            })
        }
        .map_err(compile_err)?;
        for (a, b) in &inputs {
            let r = f.run(&(a.clone(), b.clone())).map_err(|e| TestCaseError::fail(e.to_string()))?;
            let want: Vec<i64> = a.to_vec().iter().zip(b.to_vec()).map(|(x, y)| x.wrapping_mul(y)).collect();
            prop_assert_eq!(r.to_vec(), want);
        }
    }

    #[test]
    fn a_compiled_program_may_ignore_an_argument(inputs in vec((vector::<u8>(20), vector::<u8>(20)), 1..4)) {
        let f = {
            accelerate::compile(|a: Acc<Vector<u8>>, _b: Acc<Vector<u8>>| a.map(|x| x ^ 0x55u8))
        }
        .map_err(compile_err)?;
        for (a, b) in &inputs {
            let r = f.run((a, b)).map_err(|e| TestCaseError::fail(e.to_string()))?;
            prop_assert_eq!(r.to_vec(), a.to_vec().iter().map(|x| x ^ 0x55).collect::<Vec<_>>());
        }
    }
}

// ---------------------------------------------------------------------------
// Tuples of arrays

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn tuples_of_arrays_lift_and_unlift(a in vector::<f32>(30), b in matrix::<i32>(6)) {
        let (m, v) = run_ok(|| {
            let t = lift_acc((use_array(a.clone()), use_array(b.clone())));
            let (p, q) = t.unlift();
            lift_acc((q.map(|x| x + 1i32), p.map(|x| -x)))
        })?;
        prop_assert_eq!(m.dims(), b.dims());
        prop_assert_eq!(m.to_vec(), b.to_vec().iter().map(|x| x.wrapping_add(1)).collect::<Vec<_>>());
        check_exact(&v.to_vec(), &a.to_vec().iter().map(|x| -x).collect(), "negated vector")?;
    }
}

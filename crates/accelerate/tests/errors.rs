//! Bad input is reported as the documented `Error` variant, with the
//! user's source location (captured by `#[track_caller]`) and the shapes
//! or indices at fault, and never panics.
//!
//! Every program here runs with `run_with(.., &Config::default())`, never
//! with `run`, which reads the environment: environment variables are
//! process-global and tests run in parallel threads. The one test of the
//! environment path (`an_unknown_backend_in_the_environment_is_a_config_error`)
//! is therefore the only code in this test binary that reads or writes
//! `ACCELERATE_*` variables, and it restores them before asserting.

use accelerate::prelude::*;
use accelerate::run_with;
use std::panic::{catch_unwind, AssertUnwindSafe};

const THIS_FILE: &str = "tests/errors.rs";

fn cfg() -> Config {
    Config::default()
}

fn run_err<A: Arrays>(acc: &Acc<A>) -> Error {
    match run_with(acc, &cfg()) {
        Ok(_) => panic!("expected an error"),
        Err(e) => e,
    }
}

/// The error's message names this file at `line`.
#[track_caller]
fn assert_names_line(err: &Error, line: u32) {
    let msg = err.to_string();
    assert!(msg.contains(&format!("{THIS_FILE}:{line}:")), "expected {THIS_FILE}:{line} in: {msg}");
}

// ---------------------------------------------------------------------------
// Host arrays

#[test]
fn from_vec_with_the_wrong_length_is_a_data_length_error() {
    let line = line!() + 1;
    let err = Array::from_vec(dim2(2, 3), vec![1i32, 2, 3, 4, 5]).unwrap_err();
    match &err {
        Error::DataLength { shape, expected, found, .. } => {
            assert_eq!(shape, &[2, 3]);
            assert_eq!((*expected, *found), (6, 5));
        }
        other => panic!("expected DataLength, got {other:?}"),
    }
    assert_names_line(&err, line);
    let err = Array::from_iter_shaped(dim1(2), [1u8, 2, 3]).unwrap_err();
    assert!(matches!(err, Error::DataLength { expected: 2, found: 3, .. }), "{err:?}");
}

#[test]
fn host_arrays_with_a_negative_extent_are_negative_extent_errors() {
    let neg = Snoc(Snoc(Z, 2), -3);
    let e1 = Array::from_vec(neg, Vec::<i32>::new()).unwrap_err();
    let e2 = Array::filled(neg, 0i32).unwrap_err();
    let e3 = Array::from_fn(neg, |_| 0i32).unwrap_err();
    for e in [e1, e2, e3] {
        match &e {
            Error::NegativeExtent { shape, .. } => assert_eq!(shape, &[2, -3]),
            other => panic!("expected NegativeExtent, got {other:?}"),
        }
        assert!(e.to_string().contains(THIS_FILE), "{e}");
    }
}

#[test]
fn host_arrays_whose_size_overflows_are_shape_too_large_errors() {
    let huge = Snoc(Snoc(Z, 1i64 << 40), 1i64 << 40);
    let e = Array::from_vec(huge, Vec::<u8>::new()).unwrap_err();
    assert!(matches!(e, Error::ShapeTooLarge { .. }), "{e:?}");
    let e = Array::filled(huge, 0u8).unwrap_err();
    assert!(matches!(e, Error::ShapeTooLarge { .. }), "{e:?}");
}

/// 2^61 elements of 8 bytes do not fit in memory addresses: the documented
/// answer is `ShapeTooLarge`, not a "capacity overflow" panic.
#[test]
fn filled_host_array_too_large_for_memory_is_an_error_not_a_panic() {
    let r = catch_unwind(|| Array::filled(Snoc(Z, 1i64 << 61), 0i64).map(|a| a.len()));
    match r {
        Ok(Err(Error::ShapeTooLarge { .. })) => {}
        Ok(other) => panic!("expected ShapeTooLarge, got {other:?}"),
        Err(_) => panic!("Array::filled panicked on a shape too large for memory"),
    }
}

// ---------------------------------------------------------------------------
// Shapes of array computations

/// The interpreter, and the CPU backend where it can run.
fn backends() -> Vec<Config> {
    let mut v = vec![Config::default().with_backend(accelerate::Backend::Interpreter)];
    if accelerate::backend::cpu::unavailable().is_none() {
        v.push(Config::default().with_backend(accelerate::Backend::Cpu));
    }
    v
}

/// A fused producer is never stored, but its size is checked all the same:
/// a reshape of one whose size overflows (3 * 6148914691236517206 * 2 wraps
/// around to 4) is `ShapeTooLarge`, not four elements of it.
#[test]
fn a_reshape_of_a_producer_whose_size_overflows_is_shape_too_large() {
    for config in backends() {
        let g = generate(index3(3i64, 6148914691236517206i64, 2i64), |ix| {
            let (a, _, c) = unindex3(ix);
            a * 10i64 + c
        });
        let line = line!() + 1;
        let r = run_with(&g.reshape(index1(4i64)), &config);
        match r {
            Err(Error::ShapeTooLarge { loc, shape }) => {
                assert_eq!(
                    (loc.line(), shape),
                    (line, vec![3, 6148914691236517206, 2]),
                    "{:?}",
                    config.backend
                )
            }
            other => panic!("{:?}: expected ShapeTooLarge, got {other:?}", config.backend),
        }
    }
}

/// The same for a backpermute, which reads a few elements of the producer
/// at indices inside its extents: the producer's size overflows, so the
/// program is `ShapeTooLarge` whichever of its elements are read, on every
/// backend, whether the producer is a `generate` or a `replicate`.
#[test]
fn a_backpermute_of_a_producer_whose_size_overflows_is_shape_too_large() {
    let huge = 6148914691236517206i64;
    for config in backends() {
        let b = config.backend;
        let g = generate(index3(3i64, huge, 2i64), |ix| {
            let (a, _, c) = unindex3(ix);
            a * 10i64 + c
        });
        let picked = g.backpermute(index1(4i64), |i| index3(0i64, unindex1(i), 1i64));
        let r = run_with(&picked, &config);
        assert!(
            matches!(&r, Err(Error::ShapeTooLarge { shape, .. }) if shape == &vec![3, huge, 2]),
            "{b:?}: {r:?}"
        );
        let v = use_array(Vector::from_elems(vec![1i64, 2]));
        let wide = v.replicate(index0().fixed(huge).all().fixed(3i64));
        let picked = wide.backpermute(index1(2i64), |i| index3(0i64, unindex1(i), 2i64));
        let r = run_with(&picked, &config);
        assert!(
            matches!(&r, Err(Error::ShapeTooLarge { shape, .. }) if shape == &vec![huge, 2, 3]),
            "{b:?}: {r:?}"
        );
        // zip_with reads only the intersection, yet the producer is an array
        let small = use_array(Array::from_vec(dim3(1, 2, 2), vec![1i64, 2, 3, 4]).unwrap());
        let r = run_with(&g.zip_with(small, |a, b| a + b), &config);
        assert!(
            matches!(&r, Err(Error::ShapeTooLarge { shape, .. }) if shape == &vec![3, huge, 2]),
            "{b:?}: {r:?}"
        );
    }
}

/// An empty array takes no memory: one huge extent beside a zero one is
/// fine; two whose product overflows are not, in any order
/// (docs/semantics.md, "Arrays").
#[test]
fn empty_arrays_bound_their_other_extents_whatever_their_order() {
    let big = 1i64 << 62;
    for config in backends() {
        let b = config.backend;
        let empty = generate(index2(big, 0i64), |ix| unindex2(ix).0);
        let r = run_with(&empty.map(|x| x + 1i64), &config).unwrap_or_else(|e| panic!("{b:?}: {e}"));
        assert_eq!((r.dims(), r.len()), (&[big as usize, 0][..], 0), "{b:?}");
        for shape in [index3(big, big, 0i64), index3(0i64, big, big)] {
            let e = run_with(&generate(shape, |ix| unindex3(ix).0), &config);
            assert!(matches!(e, Err(Error::ShapeTooLarge { .. })), "{b:?}: {e:?}");
        }
        // a fold of the empty rows has 2^62 results, which memory cannot hold
        let e = run_with(&empty.fold(0i64, |a, x| a + x), &config);
        assert!(matches!(e, Err(Error::ShapeTooLarge { .. })), "{b:?}: {e:?}");
    }
}

#[test]
fn generate_with_a_negative_extent_is_a_negative_extent_error() {
    let line = line!() + 1;
    let a = generate(index2(2i64, constant(-1i64)), |ix| unindex2(ix).0);
    let err = run_err(&a);
    match &err {
        Error::NegativeExtent { shape, .. } => assert_eq!(shape, &[2, -1]),
        other => panic!("expected NegativeExtent, got {other:?}"),
    }
    assert_names_line(&err, line);
    let err = run_err(&fill(Snoc(Z, -5), 1.0f32));
    assert!(matches!(&err, Error::NegativeExtent { shape, .. } if shape == &[-5]), "{err:?}");
}

#[test]
fn generate_whose_size_overflows_is_a_shape_too_large_error() {
    let a = generate(index2(1i64 << 40, 1i64 << 40), |_| constant(0u8));
    assert!(matches!(run_err(&a), Error::ShapeTooLarge { .. }));
}

/// 2^61 elements of 8 bytes do not fit in memory addresses: the documented
/// answer is `ShapeTooLarge`, not a "capacity overflow" panic.
#[test]
fn generate_too_large_for_memory_is_an_error_not_a_panic() {
    let r = catch_unwind(AssertUnwindSafe(|| {
        let a = generate(index1(1i64 << 61), |_| constant(0i64));
        run_with(&a, &cfg()).map(|a| a.len())
    }));
    match r {
        Ok(Err(Error::ShapeTooLarge { .. })) => {}
        Ok(other) => panic!("expected ShapeTooLarge, got {other:?}"),
        Err(_) => panic!("running generate panicked on a shape too large for memory"),
    }
}

#[test]
fn reshape_to_a_different_size_is_a_reshape_size_error_naming_both_shapes() {
    let xs = use_array(Vector::from_elems((0..6).collect::<Vec<i32>>()));
    let line = line!() + 1;
    let r = xs.reshape(dim2(4, 2));
    let err = run_err(&r);
    match &err {
        Error::ReshapeSize { from, from_size, to, to_size, .. } => {
            assert_eq!((from.as_slice(), *from_size), (&[6usize][..], 6));
            assert_eq!((to.as_slice(), *to_size), (&[4i64, 2][..], 8));
        }
        other => panic!("expected ReshapeSize, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains("[6]") && msg.contains("[4, 2]"), "{msg}");
    assert_names_line(&err, line);
}

#[test]
fn reshape_to_a_negative_extent_is_a_negative_extent_error() {
    let xs = use_array(Vector::from_elems(vec![1i32, 2, 3, 4]));
    // (-2) * (-2) has the right size but is not a shape
    let err = run_err(&xs.reshape(Snoc(Snoc(Z, -2), -2)));
    assert!(matches!(err, Error::NegativeExtent { .. }), "{err:?}");
}

// ---------------------------------------------------------------------------
// Reductions without a seed

fn empty_rows() -> Acc<Matrix<i32>> {
    use_array(Array::from_vec(dim2(3, 0), vec![]).unwrap())
}

#[test]
fn fold1_of_an_empty_row_is_an_empty_reduction_error() {
    let line = line!() + 1;
    let err = run_err(&empty_rows().fold1(|a, b| a + b));
    match &err {
        Error::EmptyReduction { op, shape, .. } => {
            assert_eq!(*op, "fold1");
            assert_eq!(shape, &[3, 0]);
        }
        other => panic!("expected EmptyReduction, got {other:?}"),
    }
    assert!(err.to_string().contains("[3, 0]"), "{err}");
    assert_names_line(&err, line);

    let empty = use_array(Vector::<f64>::from_elems(vec![]));
    let err = run_err(&empty.fold1(|a, b| a + b));
    assert!(matches!(&err, Error::EmptyReduction { shape, .. } if shape == &[0]), "{err:?}");
}

#[test]
fn scanl1_and_scanr1_of_an_empty_row_are_empty_reduction_errors() {
    let err = run_err(&empty_rows().scanl1(|a, b| a + b));
    assert!(matches!(&err, Error::EmptyReduction { op: "scanl1", shape, .. } if shape == &[3, 0]), "{err:?}");
    let err = run_err(&empty_rows().scanr1(|a, b| a + b));
    assert!(matches!(&err, Error::EmptyReduction { op: "scanr1", shape, .. } if shape == &[3, 0]), "{err:?}");
    let empty = use_array(Vector::<u8>::from_elems(vec![]));
    assert!(matches!(run_err(&empty.scanl1(|a, b| a + b)), Error::EmptyReduction { .. }));
    assert!(matches!(run_err(&empty.scanr1(|a, b| a + b)), Error::EmptyReduction { .. }));
}

/// With no rows at all there is no empty row to reduce: the interpreter
/// checks `n == 0 && rows > 0`, so these succeed with empty results.
#[test]
fn seedless_reductions_of_zero_rows_are_not_errors() {
    let none = use_array(Array::from_vec(dim2(0, 0), Vec::<i32>::new()).unwrap());
    let r = run_with(&none.fold1(|a, b| a + b), &cfg()).unwrap();
    assert_eq!(r.dims(), &[0]);
    let r = run_with(&none.scanl1(|a, b| a + b), &cfg()).unwrap();
    assert_eq!(r.dims(), &[0, 0]);
    let r = run_with(&none.scanr1(|a, b| a + b), &cfg()).unwrap();
    assert_eq!(r.dims(), &[0, 0]);
    let cube = use_array(Array::from_vec(dim3(2, 0, 0), Vec::<i32>::new()).unwrap());
    let r = run_with(&cube.fold1(|a, b| a + b), &cfg()).unwrap();
    assert_eq!(r.dims(), &[2, 0]);
}

// ---------------------------------------------------------------------------
// Indexing out of bounds

fn matrix() -> Acc<Matrix<i32>> {
    use_array(Array::from_vec(dim2(2, 3), vec![1, 2, 3, 4, 5, 6]).unwrap())
}

#[track_caller]
fn assert_out_of_bounds(err: &Error, want_index: &[i64], want_shape: &[usize]) {
    match err {
        Error::IndexOutOfBounds { index, shape, .. } => {
            assert_eq!(index.as_slice(), want_index);
            assert_eq!(shape.as_slice(), want_shape);
        }
        other => panic!("expected IndexOutOfBounds, got {other:?}"),
    }
}

#[test]
fn index_out_of_bounds_is_an_error_with_the_index_and_shape() {
    let m = matrix();
    let line = line!() + 1;
    let e = unit(m.index(index2(1i64, 3i64)));
    let err = run_err(&e);
    assert_out_of_bounds(&err, &[1, 3], &[2, 3]);
    assert_names_line(&err, line);
    let msg = err.to_string();
    assert!(msg.contains("[1, 3]") && msg.contains("[2, 3]"), "{msg}");

    let err = run_err(&unit(m.index(index2(-1i64, 0i64))));
    assert_out_of_bounds(&err, &[-1, 0], &[2, 3]);
}

#[test]
fn index_out_of_bounds_inside_a_map_is_an_error() {
    let xs = use_array(Vector::from_elems(vec![0i64, 1, 2, 3]));
    let ys = use_array(Vector::from_elems(vec![10i32, 20, 30]));
    // the last element reads ys[3]
    let line = line!() + 1;
    let r = xs.map(|i| ys.index(index1(i)));
    let err = run_err(&r);
    assert_out_of_bounds(&err, &[3], &[3]);
    assert_names_line(&err, line);
}

#[test]
fn linear_index_out_of_bounds_is_an_error() {
    let xs = use_array(Vector::from_elems(vec![1u16, 2, 3]));
    let line = line!() + 1;
    let e = unit(xs.linear_index(3i64));
    let err = run_err(&e);
    assert!(
        matches!(&err, Error::LinearIndexOutOfBounds { index: 3, size: 3, shape, .. } if shape == &[3]),
        "{err:?}"
    );
    assert_names_line(&err, line);
    let err = run_err(&unit(xs.linear_index(-1i64)));
    assert!(matches!(&err, Error::LinearIndexOutOfBounds { index: -1, .. }), "{err:?}");
    // a matrix of 6 elements: position 6 is one past the end; the error
    // shows the matrix's own shape
    let err = run_err(&unit(matrix().linear_index(6i64)));
    assert!(
        matches!(&err, Error::LinearIndexOutOfBounds { index: 6, size: 6, shape, .. } if shape == &[2, 3]),
        "{err:?}"
    );
}

#[test]
fn backpermute_from_outside_the_source_is_an_error() {
    let xs = use_array(Vector::from_elems(vec![1.0f64, 2.0, 3.0, 4.0]));
    let line = line!() + 1;
    let r = xs.backpermute(dim1(4), |ix| index1(unindex1(ix) + 1));
    let err = run_err(&r);
    assert_out_of_bounds(&err, &[4], &[4]);
    assert_names_line(&err, line);
}

#[test]
fn slice_at_an_index_outside_the_array_is_an_error() {
    // row 5 of a 2x3 matrix
    let line = line!() + 1;
    let r = matrix().slice(SnocAll(Snoc(Z, 5i64), All));
    let err = run_err(&r);
    match &err {
        Error::IndexOutOfBounds { index, shape, .. } => {
            assert_eq!(shape, &[2, 3]);
            assert!(index.contains(&5), "{err}");
        }
        other => panic!("expected IndexOutOfBounds, got {other:?}"),
    }
    assert_names_line(&err, line);
    // column -1 and column 3
    for c in [-1i64, 3] {
        let err = run_err(&matrix().slice(Snoc(SnocAll(Z, All), c)));
        match &err {
            Error::IndexOutOfBounds { index, shape, .. } => {
                assert_eq!(shape, &[2, 3]);
                assert_eq!(index.last(), Some(&c), "{err}");
            }
            other => panic!("expected IndexOutOfBounds, got {other:?}"),
        }
    }
}

#[test]
fn permute_to_a_target_outside_the_defaults_is_an_error() {
    let xs = use_array(Vector::from_elems(vec![1i32, 2, 3]));
    let def = use_array(Vector::from_elems(vec![0i32; 3]));
    let line = line!() + 1;
    let r = xs.permute(|a, b| a + b, def, |ix| just(index1(unindex1(ix) * 5)));
    let err = run_err(&r);
    assert_out_of_bounds(&err, &[5], &[3]);
    assert_names_line(&err, line);
}

// ---------------------------------------------------------------------------
// Integer division by zero

/// `/`, `%` and `quot` by a zero that comes from data and by a literal
/// zero: `DivisionByZero` at the line of the operator.
fn division_by_zero_is_an_error<T: IntElt>(x: T, zero: T) {
    let xs = use_array(Vector::from_elems(vec![x, x]));
    let zs = use_array(Vector::from_elems(vec![x, zero]));

    let line = line!() + 1;
    let q = xs.zip_with(&zs, |a, b| a / b);
    let err = run_err(&q);
    assert!(matches!(err, Error::DivisionByZero { .. }), "{err:?}");
    assert_names_line(&err, line);

    let line = line!() + 1;
    let r = xs.zip_with(&zs, |a, b| a % b);
    let err = run_err(&r);
    assert!(matches!(err, Error::DivisionByZero { .. }), "{err:?}");
    assert_names_line(&err, line);

    let line = line!() + 1;
    let r = xs.zip_with(zs, |a, b| a.quot(b));
    let err = run_err(&r);
    assert!(matches!(err, Error::DivisionByZero { .. }), "{err:?}");
    assert_names_line(&err, line);

    let err = run_err(&xs.map(move |a| a / zero));
    assert!(matches!(err, Error::DivisionByZero { .. }), "{err:?}");
    let err = run_err(&xs.map(move |a| a % zero));
    assert!(matches!(err, Error::DivisionByZero { .. }), "{err:?}");
}

#[test]
fn i8_division_and_remainder_by_zero_are_errors() {
    division_by_zero_is_an_error(7i8, 0);
}
#[test]
fn i16_division_and_remainder_by_zero_are_errors() {
    division_by_zero_is_an_error(7i16, 0);
}
#[test]
fn i32_division_and_remainder_by_zero_are_errors() {
    division_by_zero_is_an_error(7i32, 0);
}
#[test]
fn i64_division_and_remainder_by_zero_are_errors() {
    division_by_zero_is_an_error(7i64, 0);
}
#[test]
fn u8_division_and_remainder_by_zero_are_errors() {
    division_by_zero_is_an_error(7u8, 0);
}
#[test]
fn u16_division_and_remainder_by_zero_are_errors() {
    division_by_zero_is_an_error(7u16, 0);
}
#[test]
fn u32_division_and_remainder_by_zero_are_errors() {
    division_by_zero_is_an_error(7u32, 0);
}
#[test]
fn u64_division_and_remainder_by_zero_are_errors() {
    division_by_zero_is_an_error(7u64, 0);
}

#[test]
fn signed_minimum_divided_by_minus_one_wraps_instead_of_failing() {
    let xs = use_array(Vector::from_elems(vec![i32::MIN, i32::MIN]));
    let ys = use_array(Vector::from_elems(vec![-1i32, -1]));
    let q = run_with(&xs.zip_with(&ys, |a, b| a / b), &cfg()).unwrap();
    assert_eq!(q.to_vec(), vec![i32::MIN; 2]);
    let r = run_with(&xs.zip_with(ys, |a, b| a % b), &cfg()).unwrap();
    assert_eq!(r.to_vec(), vec![0; 2]);
    let xs = use_array(Vector::from_elems(vec![i8::MIN]));
    let q = run_with(&xs.map(|a| a / -1i8), &cfg()).unwrap();
    assert_eq!(q.to_vec(), vec![i8::MIN]);
}

#[test]
fn float_division_by_zero_is_not_an_error() {
    let xs = use_array(Vector::from_elems(vec![1.0f32, -1.0, 0.0]));
    let r = run_with(&xs.map(|x| x / 0.0f32), &cfg()).unwrap().to_vec();
    assert_eq!(r[0], f32::INFINITY);
    assert_eq!(r[1], f32::NEG_INFINITY);
    assert!(r[2].is_nan());
}

#[test]
fn an_error_in_a_branch_not_taken_is_not_raised() {
    let xs = use_array(Vector::from_elems(vec![0i32, 2, 0, 4]));
    let r = xs.map(|x| x.eq(0).select(constant(-1i32), 100 / x));
    assert_eq!(run_with(&r, &cfg()).unwrap().to_vec(), vec![-1, 50, -1, 25]);
}

// ---------------------------------------------------------------------------
// Nested data parallelism

#[test]
fn a_construct_not_flattened_yet_is_nested_parallelism_naming_it() {
    // (a scan of an inner array whose extent depends on the element:
    // irregular nesting, whose scans the lifting transformation does not
    // flatten yet)
    let xs = use_array(Vector::from_elems(vec![1i32, 2, 3]));
    let mut inner_line = 0;
    let r = xs.map(|x| {
        let inner = fill(index1(x.cast::<i64>()), 1.0f32);
        inner_line = line!() + 1;
        inner.scanl1(|a, b| a + b).fold(0.0, |a, b| a + b).the()
    });
    let err = run_err(&r);
    match &err {
        Error::NestedParallelism { loc, what } => {
            assert!(loc.file().ends_with(THIS_FILE), "{loc}");
            assert_eq!(loc.line(), inner_line);
            assert!(what.contains("scanl1") && what.contains("extent depends"), "{what}");
        }
        other => panic!("expected NestedParallelism, got {other:?}"),
    }
    assert_names_line(&err, inner_line);
}

#[test]
fn an_array_function_closing_over_a_scalar_functions_argument_runs() {
    // nested data parallelism, flattened by the lifting transformation
    let xs = use_array(Vector::from_elems(vec![1.0f64, 2.0]));
    let ys = use_array(Vector::from_elems(vec![10.0f64, 20.0, 30.0]));
    let r = xs.map(|x| {
        let shifted = ys.map(|y| y + x);
        shifted.fold(0.0, |a, b| a + b).the()
    });
    assert_eq!(run_with(&r, &cfg()).unwrap().to_vec(), vec![63.0, 66.0]);
}

#[test]
fn an_array_operation_inside_a_scalar_function_not_using_its_argument_runs() {
    let xs = use_array(Vector::from_elems(vec![1.0f32, 2.0, -0.5]));
    let ys = use_array(Vector::from_elems(vec![10.0f32, 20.0, 30.0]));
    let r = xs.map(|x| x + ys.fold(0.0, |a, b| a + b).the());
    assert_eq!(run_with(&r, &cfg()).unwrap().to_vec(), vec![61.0, 62.0, 59.5]);
}

// ---------------------------------------------------------------------------
// Configuration from the environment

/// The only test in this binary that touches `ACCELERATE_*` variables (see
/// the module documentation); it restores them before asserting, so that a
/// failure leaves the process environment as it found it.
#[test]
fn an_unknown_backend_in_the_environment_is_a_config_error() {
    const BACKEND: &str = "ACCELERATE_BACKEND";
    const FLAGS: &str = "ACCELERATE_FLAGS";
    let (old_backend, old_flags) = (std::env::var_os(BACKEND), std::env::var_os(FLAGS));
    std::env::remove_var(FLAGS);

    std::env::set_var(BACKEND, "no-such-backend");
    let from_env = Config::from_env();
    let via_run = accelerate::run(&unit(1i32));
    std::env::set_var(BACKEND, "interp");
    std::env::set_var(FLAGS, "no-such-flag");
    let bad_flag = Config::from_env();
    std::env::remove_var(FLAGS);
    let good = Config::from_env();

    match old_backend {
        Some(v) => std::env::set_var(BACKEND, v),
        None => std::env::remove_var(BACKEND),
    }
    if let Some(v) = old_flags {
        std::env::set_var(FLAGS, v);
    }

    match from_env {
        Err(Error::Config(msg)) => assert!(msg.contains("no-such-backend"), "{msg}"),
        other => panic!("expected Error::Config, got {other:?}"),
    }
    assert!(matches!(via_run, Err(Error::Config(_))), "{via_run:?}");
    match bad_flag {
        Err(Error::Config(msg)) => assert!(msg.contains("no-such-flag"), "{msg}"),
        other => panic!("expected Error::Config, got {other:?}"),
    }
    assert!(good.is_ok(), "{good:?}");
}

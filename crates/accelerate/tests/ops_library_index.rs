//! The index-space operations of `lang/library/index_space.rs` (built from
//! primitives) against plain-Rust references: `transform`, `reverse`,
//! `transpose`, `flatten`, the windows `take`/`drop`/`slit`/`init`/`tail`,
//! `append` and `concat_on`, `enum_from_n`/`enum_from_step_n`, `indexed`,
//! `imap`, `izip_with`, the zips and unzips, `null` and `length`.
//!
//! Shapes are random at ranks 0 to 3 (every extent may be 0 or 1); data
//! includes NaN (with payloads), ±infinity, -0.0 and extreme integers.
//! Operations that only move data are compared bit for bit, NaN payloads
//! included (`check_exact`). Windows that do not fit a row are errors, not
//! clamped (Note [Checked windows] in `index_space.rs`): the property tests
//! draw such counts too and check the error; the unit tests at the end
//! check that the error names the caller's line.

mod common;

use accelerate::prelude::*;
use common::*;
use proptest::prelude::*;
use proptest::sample::select;
use proptest::test_runner::TestCaseError;

const THIS_FILE: &str = "tests/ops_library_index.rs";

// ---------------------------------------------------------------------------
// Plain-Rust references over (extents, row-major elements)

fn array<Sh: Shape, T: Elt>(dims: &[usize], data: Vec<T>) -> Array<Sh, T> {
    let d: Vec<i64> = dims.iter().map(|&x| x as i64).collect();
    Array::from_vec(Sh::from_slice(&d), data).expect("data matches the shape")
}

/// The row-major position of `ix` in `dims`.
fn linear(dims: &[usize], ix: &[usize]) -> usize {
    dims.iter().zip(ix).fold(0, |acc, (&d, &i)| acc * d + i)
}

/// Every index of `dims` in row-major order.
fn indices(dims: &[usize]) -> Vec<Vec<usize>> {
    let mut out = Vec::new();
    if dims.contains(&0) {
        return out;
    }
    let mut ix = vec![0usize; dims.len()];
    loop {
        out.push(ix.clone());
        let mut d = dims.len();
        loop {
            if d == 0 {
                return out;
            }
            d -= 1;
            ix[d] += 1;
            if ix[d] < dims[d] {
                break;
            }
            ix[d] = 0;
        }
    }
}

/// Applies `f` to every row of the innermost dimension; each result row
/// must have length `new_len`.
fn map_rows<T: Clone>(
    dims: &[usize],
    data: &[T],
    new_len: usize,
    f: impl Fn(&[T]) -> Vec<T>,
) -> (Vec<usize>, Vec<T>) {
    let (&n, outer) = dims.split_last().expect("rank >= 1");
    let rows: usize = outer.iter().product();
    let mut out = Vec::new();
    for r in 0..rows {
        let row = f(&data[r * n..(r + 1) * n]);
        assert_eq!(row.len(), new_len);
        out.extend(row);
    }
    let mut d = outer.to_vec();
    d.push(new_len);
    (d, out)
}

// ---------------------------------------------------------------------------
// Strategies

/// An array and a count that is mostly within `0 ..= len` (`len` the
/// innermost extent), sometimes just outside it or extreme.
fn with_count<Sh: Shape, T: Elt>(
    a: BoxedStrategy<Array<Snoc<Sh>, T>>,
) -> BoxedStrategy<(Array<Snoc<Sh>, T>, i64)> {
    a.prop_flat_map(|a| {
        let len = *a.dims().last().expect("rank >= 1") as i64;
        let count = prop_oneof![
            5 => 0..=len,
            2 => -3..=len + 3,
            1 => select(vec![i64::MIN, i64::MAX, -1, len + 1]),
        ];
        (Just(a), count)
    })
    .boxed()
}

/// An array and a start and count, mostly a window that fits.
fn with_window<Sh: Shape, T: Elt>(
    a: BoxedStrategy<Array<Snoc<Sh>, T>>,
) -> BoxedStrategy<(Array<Snoc<Sh>, T>, i64, i64)> {
    a.prop_flat_map(|a| {
        let len = *a.dims().last().expect("rank >= 1") as i64;
        let fitting = (0..=len).prop_flat_map(move |i| (Just(i), 0..=len - i));
        let any = (
            prop_oneof![4 => -3..=len + 3, 1 => select(vec![i64::MIN, i64::MAX])],
            prop_oneof![4 => -3..=len + 3, 1 => select(vec![i64::MIN, i64::MAX])],
        );
        (Just(a), prop_oneof![3 => fitting, 2 => any]).prop_map(|(a, (i, n))| (a, i, n))
    })
    .boxed()
}

fn floats<Sh: Shape>(shape: BoxedStrategy<Sh>) -> BoxedStrategy<Array<Sh, f32>> {
    array_of(shape, elem::<f32>())
}

// ---------------------------------------------------------------------------
// Windows: take, drop, slit, init, tail

/// The error expected of a window that does not fit: `InvalidArgument`
/// naming innermost position `bad` and the row length.
fn check_window_error<A: std::fmt::Debug>(
    r: Result<A, Error>,
    dims: &[usize],
    bad: i64,
    what: &str,
) -> Result<(), TestCaseError> {
    check_error(
        r,
        |e| match e {
            Error::InvalidArgument { message, .. } => {
                let len = dims.last().copied().unwrap_or(0);
                *message
                    == if bad < 0 {
                        format!("the argument {bad} is negative (rows of {len} elements)")
                    } else {
                        format!("the window needs position {bad}, past the end of rows of {len} elements")
                    }
            }
            _ => false,
        },
        what,
    )
}

/// `take`, `drop` and (as `slit(0, n)` and `slit(n, len - n)`) `slit` with
/// one count, against the reference or the documented error.
fn check_take_drop<Sh: Shape, T: Elt + Same>(a: &Array<Snoc<Sh>, T>, n: i64) -> Result<(), TestCaseError> {
    let (dims, data) = (a.dims().to_vec(), a.to_vec());
    let len = *dims.last().expect("rank >= 1") as i64;
    let take = try_run(|| use_array(a.clone()).take(n));
    let drop = try_run(|| use_array(a.clone()).drop(n));
    if (0..=len).contains(&n) {
        let k = n as usize;
        let (d, v) = map_rows(&dims, &data, k, |row| row[..k].to_vec());
        check_exact(&take?, &array(&d, v), "take")?;
        let (d, v) = map_rows(&dims, &data, len as usize - k, |row| row[k..].to_vec());
        check_exact(&drop?, &array(&d, v), "drop")?;
    } else {
        let bad = if n < 0 { n } else { n - 1 };
        check_window_error(take, &dims, bad, "take")?;
        check_window_error(drop, &dims, bad, "drop")?;
    }
    Ok(())
}

fn check_slit<Sh: Shape, T: Elt + Same>(a: &Array<Snoc<Sh>, T>, i: i64, n: i64) -> Result<(), TestCaseError> {
    let (dims, data) = (a.dims().to_vec(), a.to_vec());
    let len = *dims.last().expect("rank >= 1") as i64;
    let r = try_run(|| use_array(a.clone()).slit(i, n));
    if i >= 0 && n >= 0 && i <= len && n <= len - i {
        let (i, n) = (i as usize, n as usize);
        let (d, v) = map_rows(&dims, &data, n, |row| row[i..i + n].to_vec());
        check_exact(&r?, &array(&d, v), "slit")
    } else {
        let bad = if i < 0 {
            i
        } else if n < 0 {
            n
        } else {
            // the first position read past the end
            i.max(len)
        };
        check_window_error(r, &dims, bad, "slit")
    }
}

fn check_init_tail<Sh: Shape, T: Elt + Same>(a: &Array<Snoc<Sh>, T>) -> Result<(), TestCaseError> {
    let (dims, data) = (a.dims().to_vec(), a.to_vec());
    let len = *dims.last().expect("rank >= 1");
    let init = try_run(|| use_array(a.clone()).init());
    let tail = try_run(|| use_array(a.clone()).tail());
    if len >= 1 {
        let (d, v) = map_rows(&dims, &data, len - 1, |row| row[..len - 1].to_vec());
        check_exact(&init?, &array(&d, v), "init")?;
        let (d, v) = map_rows(&dims, &data, len - 1, |row| row[1..].to_vec());
        check_exact(&tail?, &array(&d, v), "tail")
    } else {
        check_window_error(init, &dims, 0, "init")?;
        check_window_error(tail, &dims, 0, "tail")
    }
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn take_and_drop_keep_a_prefix_and_a_suffix_of_every_row_or_fail(
        (v, n1) in with_count(floats(dim1_shape(9))),
        (m, n2) in with_count(array_of(dim2_shape(5), elem::<i64>())),
        (c, n3) in with_count(array_of(dim3_shape(4), elem::<bool>())),
    ) {
        check_take_drop(&v, n1)?;
        check_take_drop(&m, n2)?;
        check_take_drop(&c, n3)?;
    }

    #[test]
    fn slit_keeps_a_window_of_every_row_or_fails(
        (v, i1, n1) in with_window(floats(dim1_shape(9))),
        (m, i2, n2) in with_window(array_of(dim2_shape(5), elem::<u8>())),
        (c, i3, n3) in with_window(floats(dim3_shape(4))),
    ) {
        check_slit(&v, i1, n1)?;
        check_slit(&m, i2, n2)?;
        check_slit(&c, i3, n3)?;
    }

    #[test]
    fn init_and_tail_drop_the_last_and_the_first_of_every_row_or_fail_on_empty_rows(
        v in floats(dim1_shape(6)),
        m in array_of(dim2_shape(4), elem::<i32>()),
        c in floats(dim3_shape(3)),
    ) {
        check_init_tail(&v)?;
        check_init_tail(&m)?;
        check_init_tail(&c)?;
    }
}

// ---------------------------------------------------------------------------
// Moving elements: reverse, transpose, flatten, transform

fn check_reverse<Sh: Shape, T: Elt + Same>(a: &Array<Snoc<Sh>, T>) -> Result<(), TestCaseError> {
    let (dims, data) = (a.dims().to_vec(), a.to_vec());
    let n = *dims.last().expect("rank >= 1");
    let (d, v) = map_rows(&dims, &data, n, |row| row.iter().rev().cloned().collect());
    check_exact(&run_ok(|| use_array(a.clone()).reverse())?, &array(&d, v), "reverse")?;
    // reversing twice is the identity
    check_exact(&run_ok(|| use_array(a.clone()).reverse().reverse())?, a, "reverse . reverse")
}

fn check_transpose<Sh: Shape, T: Elt + Same>(a: &Array<Snoc<Snoc<Sh>>, T>) -> Result<(), TestCaseError> {
    let (dims, data) = (a.dims().to_vec(), a.to_vec());
    let k = dims.len();
    let mut tdims = dims.clone();
    tdims.swap(k - 2, k - 1);
    let expected: Vec<T> = indices(&tdims)
        .into_iter()
        .map(|mut ix| {
            ix.swap(k - 2, k - 1);
            data[linear(&dims, &ix)].clone()
        })
        .collect();
    check_exact(&run_ok(|| use_array(a.clone()).transpose())?, &array(&tdims, expected), "transpose")
}

fn check_flatten<Sh: Shape, T: Elt + Same>(a: &Array<Sh, T>) -> Result<(), TestCaseError> {
    let expected = Vector::from_elems(a.to_vec());
    check_exact(&run_ok(|| use_array(a.clone()).flatten())?, &expected, "flatten")
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn reverse_reverses_every_row_of_the_innermost_dimension(
        v in floats(dim1_shape(9)),
        m in array_of(dim2_shape(5), elem::<i8>()),
        c in floats(dim3_shape(4)),
    ) {
        check_reverse(&v)?;
        check_reverse(&m)?;
        check_reverse(&c)?;
    }

    #[test]
    fn transpose_swaps_the_two_innermost_dimensions(
        m in floats(dim2_shape(6)),
        c in array_of(dim3_shape(4), elem::<u64>()),
    ) {
        check_transpose(&m)?;
        check_transpose(&c)?;
        // transposing twice is the identity
        check_exact(&run_ok(|| use_array(m.clone()).transpose().transpose())?, &m, "transpose twice")?;
    }

    #[test]
    fn flatten_gives_the_elements_in_row_major_order(
        s in floats(dim0_shape()),
        v in floats(dim1_shape(9)),
        m in array_of(dim2_shape(5), elem::<bool>()),
        c in floats(dim3_shape(4)),
    ) {
        check_flatten(&s)?;
        check_flatten(&v)?;
        check_flatten(&m)?;
        check_flatten(&c)?;
    }

    /// `transform` is a backpermute and a map in one: here the transpose of
    /// a matrix, each element mapped by a non-trivial function.
    #[test]
    fn transform_reads_through_the_index_function_and_maps(m in array_of(dim2_shape(6), elem::<i32>())) {
        let dims = m.dims().to_vec();
        let data = m.to_vec();
        let (r, c) = (dims[0] as i64, dims[1] as i64);
        let got = run_ok(|| {
            use_array(m.clone()).transform(
                index2(c, r),
                |ix| {
                    let (j, i) = unindex2(ix);
                    index2(i, j)
                },
                |x| x * 3 + 1,
            )
        })?;
        let expected: Vec<i32> = indices(&[dims[1], dims[0]])
            .into_iter()
            .map(|ix| data[linear(&dims, &[ix[1], ix[0]])].wrapping_mul(3).wrapping_add(1))
            .collect();
        check_same(&got, &array(&[dims[1], dims[0]], expected), "transform")?;
    }
}

// ---------------------------------------------------------------------------
// Joining: append and concat_on

/// Concatenation along `axis` of `a` and `b`, the other extents
/// intersected.
fn concat_ref<T: Clone>(a: (&[usize], &[T]), b: (&[usize], &[T]), axis: usize) -> (Vec<usize>, Vec<T>) {
    let (da, xa) = a;
    let (db, xb) = b;
    let mut dims: Vec<usize> = da.iter().zip(db).map(|(&p, &q)| p.min(q)).collect();
    dims[axis] = da[axis] + db[axis];
    let data = indices(&dims)
        .into_iter()
        .map(|mut ix| {
            if ix[axis] < da[axis] {
                xa[linear(da, &ix)].clone()
            } else {
                ix[axis] -= da[axis];
                xb[linear(db, &ix)].clone()
            }
        })
        .collect();
    (dims, data)
}

fn check_append<Sh: Shape, T: Elt + Same>(
    a: &Array<Snoc<Sh>, T>,
    b: &Array<Snoc<Sh>, T>,
) -> Result<(), TestCaseError> {
    let (da, xa, db, xb) = (a.dims().to_vec(), a.to_vec(), b.dims().to_vec(), b.to_vec());
    let (d, v) = concat_ref((&da, &xa), (&db, &xb), da.len() - 1);
    let got = run_ok(|| use_array(a.clone()).append(use_array(b.clone())))?;
    check_exact(&got, &array(&d, v), "append")
}

fn check_concat<Sh: Shape, T: Elt + Same, const AXIS: usize>(
    a: &Array<Sh, T>,
    b: &Array<Sh, T>,
) -> Result<(), TestCaseError> {
    let (da, xa, db, xb) = (a.dims().to_vec(), a.to_vec(), b.dims().to_vec(), b.to_vec());
    let (d, v) = concat_ref((&da, &xa), (&db, &xb), AXIS);
    let got = run_ok(|| use_array(a.clone()).concat_on::<AXIS>(use_array(b.clone())))?;
    check_exact(&got, &array(&d, v), &format!("concat_on::<{AXIS}>"))
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn append_joins_rows_and_intersects_the_outer_dimensions(
        v1 in floats(dim1_shape(7)), v2 in floats(dim1_shape(7)),
        m1 in array_of(dim2_shape(4), elem::<i16>()), m2 in array_of(dim2_shape(4), elem::<i16>()),
        c1 in floats(dim3_shape(3)), c2 in floats(dim3_shape(3)),
    ) {
        check_append(&v1, &v2)?;
        check_append(&m1, &m2)?;
        check_append(&c1, &c2)?;
    }

    #[test]
    fn concat_on_joins_along_the_given_axis_and_intersects_the_others(
        v1 in floats(dim1_shape(7)), v2 in floats(dim1_shape(7)),
        m1 in floats(dim2_shape(4)), m2 in floats(dim2_shape(4)),
        c1 in array_of(dim3_shape(3), elem::<u32>()), c2 in array_of(dim3_shape(3), elem::<u32>()),
    ) {
        check_concat::<_, _, 0>(&v1, &v2)?;
        check_concat::<_, _, 0>(&m1, &m2)?;
        check_concat::<_, _, 1>(&m1, &m2)?;
        check_concat::<_, _, 0>(&c1, &c2)?;
        check_concat::<_, _, 1>(&c1, &c2)?;
        check_concat::<_, _, 2>(&c1, &c2)?;
    }
}

// ---------------------------------------------------------------------------
// Numbering: enum_from_n, enum_from_step_n, indexed, imap, izip_with

fn dims_of<Sh: Shape>(sh: Sh) -> Vec<usize> {
    sh.to_vec().into_iter().map(|d| d as usize).collect()
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn enum_from_n_counts_up_from_x_in_row_major_order(
        sh in dim2_shape(6),
        x in elem::<i32>(),
        xf in elem::<f64>(),
        xb in elem::<u8>(),
    ) {
        let d = dims_of(sh);
        let n = sh.size();
        let expected: Vec<i32> = (0..n).map(|i| x.wrapping_add(i as i32)).collect();
        check_same(&run_ok(|| enum_from_n(sh, x))?, &array(&d, expected), "enum_from_n i32")?;
        let expected: Vec<f64> = (0..n).map(|i| xf + i as f64).collect();
        check_same(&run_ok(|| enum_from_n(sh, xf))?, &array(&d, expected), "enum_from_n f64")?;
        // the vector form, an argument computed at run time, wrapping u8
        let len = Snoc(Z, (n as i64) * 7);
        let expected: Vec<u8> = (0..n * 7).map(|i| xb.wrapping_add(i as u8)).collect();
        let got = run_ok(|| enum_from_n(len, the(unit(xb))))?;
        check_same(&got, &array(&dims_of(len), expected), "enum_from_n u8")?;
        // rank 0
        check_same(&run_ok(|| enum_from_n(Z, x))?, &Scalar::scalar(x), "enum_from_n rank 0")?;
    }

    #[test]
    fn enum_from_step_n_steps_from_x_in_row_major_order(
        sh in dim3_shape(4),
        (x, step) in (elem::<i64>(), elem::<i64>()),
        (xf, stepf) in (elem::<f32>(), elem::<f32>()),
    ) {
        let d = dims_of(sh);
        let n = sh.size();
        let expected: Vec<i64> = (0..n).map(|i| x.wrapping_add((i as i64).wrapping_mul(step))).collect();
        check_same(&run_ok(|| enum_from_step_n(sh, x, step))?, &array(&d, expected), "enum_from_step_n i64")?;
        let expected: Vec<f32> = (0..n).map(|i| xf + (i as f32) * stepf).collect();
        check_same(&run_ok(|| enum_from_step_n(sh, xf, stepf))?, &array(&d, expected), "enum_from_step_n f32")?;
    }

    #[test]
    fn indexed_and_imap_see_each_elements_index(
        v in floats(dim1_shape(9)),
        m in array_of(dim2_shape(5), elem::<i32>()),
        s in floats(dim0_shape()),
    ) {
        let expected: Vec<(DIM1, f32)> =
            v.to_vec().into_iter().enumerate().map(|(i, x)| (Snoc(Z, i as i64), x)).collect();
        check_exact(&run_ok(|| use_array(v.clone()).indexed())?.to_vec(), &expected, "indexed vector")?;
        let expected = vec![(Z, s.value())];
        check_exact(&run_ok(|| use_array(s.clone()).indexed())?.to_vec(), &expected, "indexed scalar")?;

        let d = m.dims().to_vec();
        let expected: Vec<i32> = indices(&d)
            .into_iter()
            .map(|ix| {
                let x = m.to_vec()[linear(&d, &ix)];
                x.wrapping_mul(ix[0] as i32 + 1).wrapping_sub(ix[1] as i32)
            })
            .collect();
        let got = run_ok(|| {
            use_array(m.clone()).imap(|ix, x| {
                let (i, j) = unindex2(ix);
                x * ((i + 1).cast::<i32>()) - j.cast::<i32>()
            })
        })?;
        check_same(&got, &array(&d, expected), "imap")?;
    }

    #[test]
    fn izip_with_sees_the_index_over_the_intersection(
        a in array_of(dim2_shape(5), elem::<i64>()),
        b in floats(dim2_shape(5)),
    ) {
        let (da, db) = (a.dims().to_vec(), b.dims().to_vec());
        let d: Vec<usize> = da.iter().zip(&db).map(|(&p, &q)| p.min(q)).collect();
        let expected: Vec<(i64, i64, f32)> = indices(&d)
            .into_iter()
            .map(|ix| {
                let flat = (ix[0] * d[1] + ix[1]) as i64;
                (flat, a.to_vec()[linear(&da, &ix)], b.to_vec()[linear(&db, &ix)])
            })
            .collect();
        let got = run_ok(|| {
            let a = use_array(a.clone());
            let b = use_array(b.clone());
            let sh = intersect(a.shape(), b.shape());
            a.izip_with(b, |ix, x, y| lift((to_index(sh, ix), x, y)))
        })?;
        check_exact(&got, &array(&d, expected), "izip_with")?;
    }
}

// ---------------------------------------------------------------------------
// Zips and unzips, null and length

/// The intersection of several shapes, and the positions of each array's
/// elements in it.
fn intersection(shapes: &[&[usize]]) -> Vec<usize> {
    let mut d = shapes[0].to_vec();
    for s in &shapes[1..] {
        d.iter_mut().zip(s.iter()).for_each(|(a, &b)| *a = (*a).min(b));
    }
    d
}

fn at<T: Clone>(a: &[T], dims: &[usize], ix: &[usize]) -> T {
    a[linear(dims, ix)].clone()
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn zip3_and_zip4_pair_elements_over_the_intersection_and_unzip_recovers_them(
        a in floats(dim2_shape(4)),
        b in array_of(dim2_shape(4), elem::<i8>()),
        c in array_of(dim2_shape(4), elem::<bool>()),
        e in array_of(dim2_shape(4), elem::<f64>()),
    ) {
        let (da, db, dc, de) = (a.dims().to_vec(), b.dims().to_vec(), c.dims().to_vec(), e.dims().to_vec());
        let (xa, xb, xc, xe) = (a.to_vec(), b.to_vec(), c.to_vec(), e.to_vec());
        let d3 = intersection(&[&da, &db, &dc]);
        let expected3: Vec<(f32, i8, bool)> = indices(&d3)
            .into_iter()
            .map(|ix| (at(&xa, &da, &ix), at(&xb, &db, &ix), at(&xc, &dc, &ix)))
            .collect();
        let got3 = run_ok(|| zip3(use_array(a.clone()), use_array(b.clone()), use_array(c.clone())))?;
        check_exact(&got3, &array(&d3, expected3.clone()), "zip3")?;

        let d4 = intersection(&[&da, &db, &dc, &de]);
        let expected4: Vec<(f32, i8, bool, f64)> = indices(&d4)
            .into_iter()
            .map(|ix| (at(&xa, &da, &ix), at(&xb, &db, &ix), at(&xc, &dc, &ix), at(&xe, &de, &ix)))
            .collect();
        let got4 = run_ok(|| {
            zip4(use_array(a.clone()), use_array(b.clone()), use_array(c.clone()), use_array(e.clone()))
        })?;
        check_exact(&got4, &array(&d4, expected4.clone()), "zip4")?;

        // unzip3 and unzip4 give back the components
        let t3 = array::<DIM2, (f32, i8, bool)>(&d3, expected3.clone());
        let (p, q, r) = run_ok(|| {
            let (p, q, r) = use_array(t3.clone()).unzip3();
            lift_acc((p, q, r))
        })?;
        check_exact(&p.to_vec(), &expected3.iter().map(|t| t.0).collect(), "unzip3 .0")?;
        check_exact(&q.to_vec(), &expected3.iter().map(|t| t.1).collect(), "unzip3 .1")?;
        check_exact(&r.to_vec(), &expected3.iter().map(|t| t.2).collect(), "unzip3 .2")?;
        prop_assert_eq!(p.dims(), &d3[..]);

        let t4 = array::<DIM2, (f32, i8, bool, f64)>(&d4, expected4.clone());
        let (p, q, r, s) = run_ok(|| {
            let (p, q, r, s) = use_array(t4.clone()).unzip4();
            lift_acc((p, q, r, s))
        })?;
        check_exact(&p.to_vec(), &expected4.iter().map(|t| t.0).collect(), "unzip4 .0")?;
        check_exact(&q.to_vec(), &expected4.iter().map(|t| t.1).collect(), "unzip4 .1")?;
        check_exact(&r.to_vec(), &expected4.iter().map(|t| t.2).collect(), "unzip4 .2")?;
        check_exact(&s.to_vec(), &expected4.iter().map(|t| t.3).collect(), "unzip4 .3")?;
        prop_assert_eq!(s.dims(), &d4[..]);
    }

    #[test]
    fn zip_with3_and_zip_with4_combine_over_the_intersection(
        a in array_of(dim1_shape(8), elem::<i32>()),
        b in array_of(dim1_shape(8), elem::<i32>()),
        c in array_of(dim1_shape(8), elem::<i32>()),
        e in array_of(dim1_shape(8), elem::<i32>()),
    ) {
        let (xa, xb, xc, xe) = (a.to_vec(), b.to_vec(), c.to_vec(), e.to_vec());
        let n3 = xa.len().min(xb.len()).min(xc.len());
        // a non-symmetric function pins the argument order
        let expected: Vec<i32> =
            (0..n3).map(|i| xa[i].wrapping_mul(31).wrapping_add(xb[i]).wrapping_mul(7).wrapping_sub(xc[i])).collect();
        let got = run_ok(|| {
            zip_with3(use_array(a.clone()), use_array(b.clone()), use_array(c.clone()), |x, y, z| (x * 31 + y) * 7 - z)
        })?;
        check_same(&got.to_vec(), &expected, "zip_with3")?;
        let n4 = n3.min(xe.len());
        let expected: Vec<i32> = (0..n4)
            .map(|i| xa[i].wrapping_mul(31).wrapping_add(xb[i]).wrapping_mul(7).wrapping_sub(xc[i]) ^ xe[i])
            .collect();
        let got = run_ok(|| {
            zip_with4(
                use_array(a.clone()),
                use_array(b.clone()),
                use_array(c.clone()),
                use_array(e.clone()),
                |x, y, z, w| ((x * 31 + y) * 7 - z) ^ w,
            )
        })?;
        check_same(&got.to_vec(), &expected, "zip_with4")?;
    }

    #[test]
    fn unzip_splits_pairs(a in floats(dim3_shape(4)), b in array_of(dim3_shape(4), elem::<u16>())) {
        let (ra, rb) = run_ok(|| {
            let (p, q) = use_array(a.clone()).zip(use_array(b.clone())).unzip();
            lift_acc((p, q))
        })?;
        let d = intersection(&[a.dims(), b.dims()]);
        let ea: Vec<f32> = indices(&d).iter().map(|ix| at(&a.to_vec(), a.dims(), ix)).collect();
        let eb: Vec<u16> = indices(&d).iter().map(|ix| at(&b.to_vec(), b.dims(), ix)).collect();
        check_exact(&ra, &array(&d, ea), "unzip .0")?;
        check_exact(&rb, &array(&d, eb), "unzip .1")?;
    }

    #[test]
    fn null_and_length_read_the_shape(
        v in floats(dim1_shape(5)),
        c in array_of(dim3_shape(3), elem::<u8>()),
        s in floats(dim0_shape()),
    ) {
        let (nv, lv) = run_ok(|| {
            let v = use_array(v.clone());
            lift_acc((unit(v.null()), unit(v.length())))
        })?;
        prop_assert_eq!(nv.value(), v.is_empty());
        prop_assert_eq!(lv.value(), v.len() as i64);
        let (nc, lc) = run_ok(|| {
            let c = use_array(c.clone());
            lift_acc((unit(c.null()), unit(c.length())))
        })?;
        prop_assert_eq!(nc.value(), c.is_empty());
        prop_assert_eq!(lc.value(), c.dims()[2] as i64);
        prop_assert!(!run_ok(|| unit(use_array(s.clone()).null()))?.value());
    }
}

// ---------------------------------------------------------------------------
// Errors name the caller's line

fn run_err<A: Arrays + std::fmt::Debug>(acc: &Acc<A>) -> Error {
    match accelerate::run_with(acc, &Config::from_env().unwrap()) {
        Ok(v) => panic!("expected an error, got {v:?}"),
        Err(e) => e,
    }
}

/// The error is `IndexOutOfBounds` at `index` in an array of shape `shape`
/// and names this file at `line`.
#[track_caller]
fn assert_out_of_bounds(err: &Error, index: &[i64], shape: &[usize], line: u32) {
    match err {
        Error::IndexOutOfBounds { index: i, shape: s, loc } => {
            assert_eq!((&i[..], &s[..]), (index, shape), "{err}");
            assert!(loc.file().ends_with(THIS_FILE) && loc.line() == line, "expected line {line}: {err}");
        }
        other => panic!("expected IndexOutOfBounds, got {other:?}"),
    }
    let msg = err.to_string();
    assert!(msg.contains(&format!("{THIS_FILE}:{line}:")), "expected {THIS_FILE}:{line} in: {msg}");
}

/// The error is the `InvalidArgument` of window operation `op` whose row
/// length is `len` and whose first bad position is `bad`, and names this
/// file at `line`.
#[track_caller]
fn assert_window_error(err: &Error, op: &str, bad: i64, len: usize, line: u32) {
    let message = if bad < 0 {
        format!("the argument {bad} is negative (rows of {len} elements)")
    } else {
        format!("the window needs position {bad}, past the end of rows of {len} elements")
    };
    match err {
        Error::InvalidArgument { loc, op: o, message: m } => {
            assert_eq!((*o, m), (op, &message), "{err}");
            assert!(loc.file().ends_with(THIS_FILE) && loc.line() == line, "expected line {line}: {err}");
        }
        other => panic!("expected InvalidArgument, got {other:?}"),
    }
}

fn matrix_2x3() -> Acc<Matrix<i32>> {
    use_array(Array::from_vec(dim2(2, 3), vec![1, 2, 3, 4, 5, 6]).unwrap())
}

#[test]
fn take_past_the_end_is_an_error_naming_the_callers_line() {
    {
        let xs = matrix_2x3();
        let line = line!() + 1;
        let err = run_err(&xs.take(5));
        assert_window_error(&err, "take", 4, 3, line);
        // a count computed at run time fails the same way
        let line = line!() + 1;
        let err = run_err(&xs.take(the(unit(constant(2i64))) * 2));
        assert_window_error(&err, "take", 3, 3, line);
    };
}

#[test]
fn negative_counts_are_errors_naming_the_callers_line() {
    {
        let xs = matrix_2x3();
        let line = line!() + 1;
        let err = run_err(&xs.take(-1));
        assert_window_error(&err, "take", -1, 3, line);
        let line = line!() + 1;
        let err = run_err(&xs.drop(-2));
        assert_window_error(&err, "drop", -2, 3, line);
        let line = line!() + 1;
        let err = run_err(&xs.slit(1, -1));
        assert_window_error(&err, "slit", -1, 3, line);
        let line = line!() + 1;
        let err = run_err(&xs.slit(-1, 2));
        assert_window_error(&err, "slit", -1, 3, line);
    };
}

#[test]
fn drop_and_slit_past_the_end_are_errors_naming_the_callers_line() {
    {
        let xs = matrix_2x3();
        let line = line!() + 1;
        let err = run_err(&xs.drop(4));
        assert_window_error(&err, "drop", 3, 3, line);
        let line = line!() + 1;
        let err = run_err(&xs.slit(2, 2));
        assert_window_error(&err, "slit", 3, 3, line);
        let line = line!() + 1;
        let err = run_err(&xs.slit(5, 0));
        assert_window_error(&err, "slit", 5, 3, line);
        // a start past the end is reported as written, never as a sum
        // that overflowed
        let line = line!() + 1;
        let err = run_err(&xs.slit(i64::MAX, 2));
        assert_window_error(&err, "slit", i64::MAX, 3, line);
        let line = line!() + 1;
        let err = run_err(&xs.slit(2, i64::MAX));
        assert_window_error(&err, "slit", 3, 3, line);
        // windows that just fit are fine
        let ok = accelerate::run(&lift_acc((xs.drop(3), xs.slit(3, 0), xs.take(3)))).unwrap();
        assert_eq!((ok.0.dims(), ok.1.dims(), ok.2.dims()), (&[2, 0][..], &[2, 0][..], &[2, 3][..]));
    };
}

/// The check depends on the innermost extent only: an array with no rows
/// has nothing to read, yet a window that does not fit is still an error.
#[test]
fn windows_that_do_not_fit_fail_even_when_there_are_no_rows() {
    {
        let empty = use_array(Array::from_vec(dim3(2, 0, 3), Vec::<f32>::new()).unwrap());
        let line = line!() + 1;
        let err = run_err(&empty.take(5));
        assert_window_error(&err, "take", 4, 3, line);
        let line = line!() + 1;
        let err = run_err(&empty.slit(1, 3));
        assert_window_error(&err, "slit", 3, 3, line);
        let ok = accelerate::run(&empty.take(2)).unwrap();
        assert_eq!(ok.dims(), &[2, 0, 2]);
    };
}

#[test]
fn init_and_tail_of_empty_rows_are_errors_naming_the_callers_line() {
    {
        let empty = use_array(Vector::<i64>::from_elems(vec![]));
        let line = line!() + 1;
        let err = run_err(&empty.init());
        assert_window_error(&err, "init", 0, 0, line);
        let line = line!() + 1;
        let err = run_err(&empty.tail());
        assert_window_error(&err, "tail", 0, 0, line);
        let one = use_array(Vector::from_elems(vec![7i64]));
        let ok = accelerate::run(&lift_acc((one.init(), one.tail()))).unwrap();
        assert_eq!((ok.0.len(), ok.1.len()), (0, 0));
    };
}

#[test]
fn transform_reading_outside_the_source_is_an_index_error_naming_the_callers_line() {
    {
        let xs = matrix_2x3();
        let line = line!() + 1;
        let t = xs.transform(index1(3i64), |ix| index2(unindex1(ix), 0i64), |x| x + 1);
        assert_out_of_bounds(&run_err(&t), &[2, 0], &[2, 3], line);
    };
}

#[test]
fn the_operations_compose_on_a_worked_example() {
    {
        let xs = matrix_2x3();
        // xs = [[1, 2, 3], [4, 5, 6]]
        let r = accelerate::run(&xs.reverse().drop(1)).unwrap();
        assert_eq!(r.to_vec(), vec![2, 1, 5, 4]);
        let r = accelerate::run(&xs.transpose()).unwrap();
        assert_eq!((r.dims(), r.to_vec()), (&[3, 2][..], vec![1, 4, 2, 5, 3, 6]));
        let r = accelerate::run(&xs.append(xs.take(1))).unwrap();
        assert_eq!((r.dims(), r.to_vec()), (&[2, 4][..], vec![1, 2, 3, 1, 4, 5, 6, 4]));
        let r = accelerate::run(&xs.concat_on::<0>(xs.slit(1, 2))).unwrap();
        assert_eq!((r.dims(), r.to_vec()), (&[4, 2][..], vec![1, 2, 4, 5, 2, 3, 5, 6]));
        let r = accelerate::run(&enum_from_step_n(index2(2i64, 2i64), 10i32, -3)).unwrap();
        assert_eq!(r.to_vec(), vec![10, 7, 4, 1]);
    };
}

/// The operations work on the arguments of a compiled program, whose
/// shapes are known only when it runs: one program, many shapes, and the
/// window check made afresh for each.
#[test]
fn a_compiled_program_checks_its_windows_for_each_input() {
    let line = line!() + 2;
    let f = accelerate::compile(|xs: Acc<Matrix<i32>>, ys: Acc<Matrix<i32>>| {
        xs.reverse().take(2).append(ys.transpose())
    })
    .unwrap();
    let m = |r, c, v: Vec<i32>| Array::from_vec(dim2(r, c), v).unwrap();
    let r = f.run((&m(2, 3, vec![1, 2, 3, 4, 5, 6]), &m(1, 2, vec![7, 8]))).unwrap();
    assert_eq!((r.dims(), r.to_vec()), (&[2, 3][..], vec![3, 2, 7, 6, 5, 8]));
    let r = f.run((&m(1, 2, vec![1, 2]), &m(0, 3, vec![]))).unwrap();
    assert_eq!((r.dims(), r.to_vec()), (&[1, 2][..], vec![2, 1]));
    let err = f.run((&m(2, 1, vec![1, 2]), &m(1, 1, vec![3]))).unwrap_err();
    assert_window_error(&err, "take", 1, 1, line);
}

//! `gather`, `gather_if`, `scatter`, `scatter_if`, `filter`, `compact` and
//! `expand` (`lang/library/gather_scatter.rs`) against plain-Rust
//! references: data with NaN, infinities, -0.0 and integer extremes, empty
//! arrays, duplicate scatter targets (the largest source index wins), rows
//! of rank 2 and 3 for `filter`/`compact`, and the errors: indices and
//! targets out of range, negative `expand` counts.
//!
//! These operations move data without computing on it, so values are
//! compared bit for bit, NaN payloads included (`check_exact`).

mod common;

use accelerate::prelude::*;
use common::*;
use proptest::collection::vec;
use proptest::prelude::*;

/// A source vector of floats (specials included), and indices into it.
fn source_and_indices(max_len: usize, count: usize) -> BoxedStrategy<(Vec<f64>, Vec<i64>)> {
    vec(elem::<f64>(), 1..=max_len)
        .prop_flat_map(move |src| {
            let n = src.len() as i64;
            (Just(src), vec(0..n, 0..=count))
        })
        .boxed()
}

/// The error is `IndexOutOfBounds` at one of `bad` in an array of shape
/// `[len]`, named at a line of this file.
fn is_oob_at(e: &Error, bad: &[i64], len: usize) -> bool {
    matches!(e, Error::IndexOutOfBounds { loc, index, shape }
        if index.len() == 1 && bad.contains(&index[0]) && shape == &vec![len]
            && loc.file().ends_with("ops_library_gather.rs"))
}

fn sequential_scatter<T: Copy>(
    to: &[i64],
    keep: impl Fn(usize) -> bool,
    defaults: &[T],
    src: &[T],
) -> Vec<T> {
    let mut out = defaults.to_vec();
    for i in 0..to.len().min(src.len()) {
        if keep(i) {
            out[to[i] as usize] = src[i];
        }
    }
    out
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn gather_reads_source_at_each_index((src, idx) in source_and_indices(20, 30)) {
        let got = run_ok(|| gather(use_array(Vector::from_elems(idx.clone())), use_array(Vector::from_elems(src.clone()))))?;
        let want: Vec<f64> = idx.iter().map(|&i| src[i as usize]).collect();
        check_exact(&got.to_vec(), &want, "gather")?;
    }

    #[test]
    fn gather_with_matrix_of_indices_keeps_its_shape(
        (src, idx) in source_and_indices(10, 0), rows in 0usize..4, cols in 0usize..5, seed in any::<u64>()
    ) {
        let n = src.len() as u64;
        let idx: Vec<i64> = (0..rows * cols).map(|k| ((seed ^ (k as u64 * 7919)) % n) as i64).chain(idx).collect();
        let ix = Matrix::from_vec(dim2(rows, cols), idx.clone()).unwrap();
        let got = run_ok(|| gather(use_array(ix), use_array(Vector::from_elems(src.clone()))))?;
        prop_assert_eq!(got.dims(), &[rows, cols]);
        let want: Vec<f64> = idx.iter().map(|&i| src[i as usize]).collect();
        check_exact(&got.to_vec(), &want, "gather")?;
    }

    #[test]
    fn gather_outside_source_is_index_error(
        (src, mut idx) in source_and_indices(10, 10), bad in prop_oneof![Just(-1i64), Just(i64::MIN), 0i64..3], at in any::<prop::sample::Index>()
    ) {
        let bad = if bad >= 0 { src.len() as i64 + bad } else { bad };
        idx.insert(at.index(idx.len() + 1), bad);
        let r = try_run(|| gather(use_array(Vector::from_elems(idx.clone())), use_array(Vector::from_elems(src.clone()))));
        check_error(r, |e| is_oob_at(e, &[bad], src.len()), "gather")?;
    }

    /// Masked-off positions may hold any index; the result has the length of
    /// the shortest of indices, mask and defaults.
    #[test]
    fn gather_if_reads_source_only_where_predicate_holds(
        (src, idx) in source_and_indices(12, 20),
        mask in vec(elem::<i32>(), 0..24),
        defaults in vec(elem::<f64>(), 0..24),
        junk in vec(any::<i64>(), 20),
    ) {
        let pred = |m: i32| m > 4;
        // Indices out of range wherever the mask is off.
        let idx: Vec<i64> = idx.iter().enumerate()
            .map(|(i, &x)| if mask.get(i).is_some_and(|&m| pred(m)) { x } else { junk[i] })
            .collect();
        let got = run_ok(|| gather_if(
            use_array(Vector::from_elems(idx.clone())),
            use_array(Vector::from_elems(mask.clone())),
            |m| m.gt(4),
            use_array(Vector::from_elems(defaults.clone())),
            use_array(Vector::from_elems(src.clone())),
        ))?;
        let len = idx.len().min(mask.len()).min(defaults.len());
        let want: Vec<f64> = (0..len).map(|i| if pred(mask[i]) { src[idx[i] as usize] } else { defaults[i] }).collect();
        check_exact(&got.to_vec(), &want, "gather_if")?;
    }

    #[test]
    fn gather_if_outside_source_where_predicate_holds_is_index_error(len in 1usize..8, bad in 0i64..3) {
        let src: Vec<f64> = (0..len).map(|i| i as f64).collect();
        let bad = len as i64 + bad;
        let r = try_run(|| gather_if(
            use_array(Vector::from_elems(vec![0, bad])),
            use_array(Vector::from_elems(vec![true, true])),
            |m| m.clone(),
            use_array(Vector::from_elems(vec![0.0, 0.0])),
            use_array(Vector::from_elems(src.clone())),
        ));
        check_error(r, |e| is_oob_at(e, &[bad], len), "gather_if")?;
    }

    /// Duplicate targets are frequent; the element with the largest source
    /// index wins, as in a sequential loop.
    #[test]
    fn scatter_matches_sequential_loop(
        (defaults, to) in vec(elem::<f64>(), 1..12).prop_flat_map(|d| {
            let m = d.len() as i64;
            (Just(d), vec(0..m, 0..30))
        }),
        src in vec(elem::<f64>(), 0..30),
    ) {
        let got = run_ok(|| scatter(
            use_array(Vector::from_elems(to.clone())),
            use_array(Vector::from_elems(defaults.clone())),
            use_array(Vector::from_elems(src.clone())),
        ))?;
        check_exact(&got.to_vec(), &sequential_scatter(&to, |_| true, &defaults, &src), "scatter")?;
    }

    #[test]
    fn scatter_if_matches_sequential_loop_and_ignores_masked_off_targets(
        (defaults, to) in vec(elem::<i64>(), 1..12).prop_flat_map(|d| {
            let m = d.len() as i64;
            (Just(d), vec(0..m, 0..30))
        }),
        mask in vec(any::<bool>(), 0..30),
        src in vec(elem::<i64>(), 0..30),
    ) {
        // Masked-off targets out of range are never checked.
        let to: Vec<i64> = to.iter().enumerate()
            .map(|(i, &t)| if mask.get(i) == Some(&true) { t } else { -1 - t })
            .collect();
        let got = run_ok(|| scatter_if(
            use_array(Vector::from_elems(to.clone())),
            use_array(Vector::from_elems(mask.clone())),
            |m| m.clone(),
            use_array(Vector::from_elems(defaults.clone())),
            use_array(Vector::from_elems(src.clone())),
        ))?;
        let n = mask.len();
        let want = sequential_scatter(&to[..to.len().min(n)], |i| mask[i], &defaults, &src);
        check_exact(&got.to_vec(), &want, "scatter_if")?;
    }

    #[test]
    fn scatter_outside_defaults_is_index_error(m in 0usize..6, bad in prop_oneof![Just(-1i64), 0i64..3]) {
        let bad = if bad >= 0 { m as i64 + bad } else { bad };
        let r = try_run(|| scatter(
            use_array(Vector::from_elems(vec![bad])),
            use_array(Vector::from_elems(vec![0u8; m])),
            use_array(Vector::from_elems(vec![1u8])),
        ));
        check_error(r, |e| is_oob_at(e, &[bad], m), "scatter")?;
    }

    #[test]
    fn filter_of_vector_keeps_matching_elements_in_order(xs in values::<f64>(40)) {
        let (kept, count) = run_ok(|| use_array(Vector::from_elems(xs.clone())).filter(|x| x.lt(1.0) | x.is_nan()))?;
        let want: Vec<f64> = xs.iter().copied().filter(|x| *x < 1.0 || x.is_nan()).collect();
        check_exact(&kept.to_vec(), &want, "filter")?;
        prop_assert_eq!(count.value(), want.len() as i64);
    }

    #[test]
    fn filter_of_matrix_concatenates_rows_and_counts_each(xs in matrix::<i32>(6)) {
        let (kept, counts) = run_ok(|| use_array(xs.clone()).filter(|x| (x % 3i32).eq(0i32)))?;
        let (rows, cols) = (xs.dims()[0], xs.dims()[1]);
        let data = xs.to_vec();
        let mut want = Vec::new();
        let mut want_counts = Vec::new();
        for r in 0..rows {
            let row: Vec<i32> = data[r * cols..(r + 1) * cols].iter().copied().filter(|x| x % 3 == 0).collect();
            want_counts.push(row.len() as i64);
            want.extend(row);
        }
        prop_assert_eq!(kept.to_vec(), want);
        prop_assert_eq!(counts.dims(), &[rows]);
        prop_assert_eq!(counts.to_vec(), want_counts);
    }

    /// `compact` of rank 3 with a mask of another shape: both are taken over
    /// the intersection of the shapes.
    #[test]
    fn compact_of_cube_uses_intersection_of_mask_and_data(xs in cube::<f64>(4), mask in array_of(dim3_shape(4), any::<bool>().boxed())) {
        let (kept, counts) = run_ok(|| compact(use_array(mask.clone()), use_array(xs.clone())))?;
        // the fallback of the native compaction, which only the backends
        // without it run otherwise
        let (kept_l, counts_l) = run_ok(|| compact_in_language(use_array(mask.clone()), use_array(xs.clone())))?;
        check_exact(&kept_l.to_vec(), &kept.to_vec(), "compact_in_language")?;
        prop_assert_eq!(counts_l, counts.clone());
        let (xd, md) = (xs.dims(), mask.dims());
        let d: Vec<usize> = (0..3).map(|k| xd[k].min(md[k])).collect();
        let mut want = Vec::new();
        let mut want_counts = Vec::new();
        for a in 0..d[0] {
            for b in 0..d[1] {
                let mut c_kept = 0;
                for c in 0..d[2] {
                    let ix = Snoc(Snoc(Snoc(Z, a as i64), b as i64), c as i64);
                    if mask.get(ix).unwrap() {
                        want.push(xs.get(ix).unwrap());
                        c_kept += 1;
                    }
                }
                want_counts.push(c_kept);
            }
        }
        check_exact(&kept.to_vec(), &want, "compact")?;
        prop_assert_eq!(counts.dims(), &[d[0], d[1]]);
        prop_assert_eq!(counts.to_vec(), want_counts);
    }

    #[test]
    fn expand_concatenates_generated_runs(xs in values::<i64>(30)) {
        let got = run_ok(|| expand(|x: &Exp<i64>| x & 3i64, |x, j| lift((x, j)), use_array(Vector::from_elems(xs.clone()))))?;
        let want: Vec<(i64, i64)> = xs.iter().flat_map(|&x| (0..(x & 3)).map(move |j| (x, j))).collect();
        prop_assert_eq!(got.to_vec(), want);
    }

    #[test]
    fn expand_of_floats_with_counts_from_casts(xs in values::<f64>(20)) {
        let got = run_ok(|| expand(
            |x: &Exp<f64>| x.abs().min(4.0).cast::<i64>(),
            |x, j| x * j.cast::<f64>(),
            use_array(Vector::from_elems(xs.clone())),
        ))?;
        let want: Vec<f64> = xs.iter().flat_map(|&x| (0..x.abs().min(4.0) as i64).map(move |j| x * j as f64)).collect();
        check_same_vec(&got.to_vec(), &want, "expand")?;
    }

    #[test]
    fn expand_with_negative_count_is_an_error_naming_the_count(xs in vec(-3i64..6, 0..20)) {
        let r = try_run(|| expand(|x: &Exp<i64>| x.clone(), |x, j| x + j, use_array(Vector::from_elems(xs.clone()))));
        let negatives: Vec<i64> = xs.iter().copied().filter(|&x| x < 0).collect();
        if negatives.is_empty() {
            let want: Vec<i64> = xs.iter().flat_map(|&x| (0..x).map(move |j| x + j)).collect();
            prop_assert_eq!(r.map_err(|e| TestCaseError::fail(e.to_string()))?.to_vec(), want);
        } else {
            let named = |e: &Error| {
                negatives.iter().any(|c| {
                    matches!(e, Error::InvalidArgument { loc, op: "expand", message }
                        if message == &format!("count {c} is negative (counts of an array of shape [{}])", xs.len())
                            && loc.file().ends_with("ops_library_gather.rs"))
                })
            };
            check_error(r, named, "expand")?;
        }
    }
}

#[test]
fn operations_on_empty_arrays_give_empty_results() {
    let empty_f = || use_array(Vector::<f64>::from_elems(vec![]));
    let empty_i = || use_array(Vector::<i64>::from_elems(vec![]));
    assert!(try_run(|| gather(empty_i(), empty_f())).unwrap().is_empty());
    assert!(try_run(|| gather_if(empty_i(), empty_i(), |m| m.gt(0i64), empty_f(), empty_f()))
        .unwrap()
        .is_empty());
    let r =
        try_run(|| scatter(empty_i(), use_array(Vector::from_elems(vec![1.5, -0.0])), empty_f())).unwrap();
    assert_eq!(r.to_vec(), vec![1.5, -0.0]);
    assert!(try_run(|| scatter_if(empty_i(), empty_i(), |m| m.gt(0i64), empty_f(), empty_f()))
        .unwrap()
        .is_empty());
    let (kept, count) = try_run(|| empty_f().filter(|x| x.gt(0.0))).unwrap();
    assert!(kept.is_empty());
    assert_eq!(count.value(), 0);
    assert!(try_run(|| expand(|_: &Exp<f64>| constant(3i64), |x, _| x.clone(), empty_f()))
        .unwrap()
        .is_empty());
    let no_rows = Matrix::<i32>::from_vec(dim2(0, 5), vec![]).unwrap();
    let (kept, counts) = try_run(|| use_array(no_rows).filter(|x| x.gt(0i32))).unwrap();
    assert!(kept.is_empty() && counts.dims() == [0]);
}

#[test]
fn accelerate_documentation_examples() {
    let v = |xs: Vec<i64>| use_array(Vector::from_elems(xs));
    let input = vec![1, 9, 6, 4, 4, 2, 0, 1, 2];
    let r = try_run(|| gather(v(vec![1, 3, 7, 2, 5, 3]), v(input.clone()))).unwrap();
    assert_eq!(r.to_vec(), vec![9, 4, 1, 6, 2, 4]);
    let r = try_run(|| {
        gather_if(
            v(vec![1, 3, 7, 2, 5, 3]),
            v(vec![3, 4, 9, 2, 7, 5]),
            |m| m.gt(4i64),
            v(vec![6; 6]),
            v(input),
        )
    })
    .unwrap();
    assert_eq!(r.to_vec(), vec![6, 6, 1, 6, 2, 4]);
    let to = vec![1, 3, 7, 2, 5, 8];
    let src = vec![1, 9, 6, 4, 4, 2, 5];
    let r = try_run(|| scatter(v(to.clone()), v(vec![0; 10]), v(src.clone()))).unwrap();
    assert_eq!(r.to_vec(), vec![0, 1, 4, 9, 0, 4, 0, 6, 2, 0]);
    let r = try_run(|| scatter_if(v(to), v(vec![3, 4, 9, 2, 7, 5]), |m| m.gt(4i64), v(vec![0; 10]), v(src)))
        .unwrap();
    assert_eq!(r.to_vec(), vec![0, 0, 0, 0, 0, 4, 0, 6, 2, 0]);
    let mat: Vec<i64> = vec![
        1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 1,
        3, 5, 7, 9, 11, 13, 15, 17, 19,
    ];
    let (kept, counts) =
        try_run(|| use_array(Matrix::from_vec(dim2(4, 10), mat).unwrap()).filter(|x| (x % 2i64).eq(1i64)))
            .unwrap();
    assert_eq!(kept.to_vec(), vec![1, 3, 5, 7, 9, 1, 1, 1, 1, 1, 1, 3, 5, 7, 9, 11, 13, 15, 17, 19]);
    assert_eq!(counts.to_vec(), vec![5, 5, 0, 10]);
    let r = try_run(|| expand(|x: &Exp<i64>| x.clone(), |x, j| x * 10i64 + j, v(vec![2, 0, 3]))).unwrap();
    assert_eq!(r.to_vec(), vec![20, 21, 30, 31, 32]);
}

/// A compaction of pairs over many chunks of the native form (Note [A
/// native compaction]): rows longer than a chunk and rows shorter, a mask
/// of another shape, about a third kept at pseudo-random positions, both
/// the native and the in-language form against a sequential reference.
#[test]
fn compaction_of_pairs_across_chunks_and_rows_matches_a_sequential_one() {
    let hash = |i: usize| (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 33;
    for (rows, cols) in [(1usize, 300_001usize), (3, 70_001), (20_000, 7)] {
        let (mrows, mcols) = (rows + 1, cols - 1);
        let xs: Vec<(i64, f32)> = (0..rows * cols).map(|i| (i as i64 - 5, hash(i) as f32 * -0.5)).collect();
        let flags: Vec<bool> = (0..mrows * mcols).map(|i| hash(i + 17) % 3 == 0).collect();
        let (mut want, mut want_counts) = (Vec::new(), Vec::new());
        for r in 0..rows {
            let row: Vec<(i64, f32)> =
                (0..mcols).filter(|&c| flags[r * mcols + c]).map(|c| xs[r * cols + c]).collect();
            want_counts.push(row.len() as i64);
            want.extend(row);
        }
        let x = Matrix::from_vec(dim2(rows, cols), xs).unwrap();
        let m = Matrix::from_vec(dim2(mrows, mcols), flags).unwrap();
        let native = try_run(|| compact(use_array(m.clone()), use_array(x.clone()))).unwrap();
        let language = try_run(|| compact_in_language(use_array(m.clone()), use_array(x.clone()))).unwrap();
        for (form, (kept, counts)) in [("native", native), ("in the language", language)] {
            let bits = |v: Vec<(i64, f32)>| v.into_iter().map(|(i, f)| (i, f.to_bits())).collect::<Vec<_>>();
            assert!(
                bits(kept.to_vec()) == bits(want.clone()),
                "{form}, {rows} x {cols}: the kept elements differ"
            );
            assert_eq!(counts.to_vec(), want_counts, "{form}, {rows} x {cols}: the counts");
        }
    }
}

#[test]
fn scatter_keeps_the_largest_source_index_on_collisions() {
    let r = try_run(|| {
        scatter(
            use_array(Vector::from_elems(vec![0i64, 1, 0, 1, 0])),
            use_array(Vector::from_elems(vec![-1i32, -1, -1])),
            use_array(Vector::from_elems(vec![10i32, 11, 12, 13, 14])),
        )
    })
    .unwrap();
    assert_eq!(r.to_vec(), vec![14, 13, -1]);
}

#[test]
fn expand_counts_summing_past_i64_max_are_an_error_not_a_wrapped_length() {
    // i64::MAX + i64::MAX + 2 wraps to 0: without saturation the result
    // would silently be empty.
    let r = try_run(|| {
        expand(
            |x: &Exp<i64>| x.clone(),
            |x, _| x.clone(),
            use_array(Vector::from_elems(vec![i64::MAX, i64::MAX, 2])),
        )
    });
    assert!(matches!(r, Err(Error::ShapeTooLarge { .. })), "{r:?}");
}

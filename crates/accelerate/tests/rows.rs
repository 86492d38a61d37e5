//! Row groups (`plan::rows`): kernels over the rows of one shape that the
//! CPU backend runs row by row, each row of every member after the other.
//! Every test compares with plain Rust and with the members run one by
//! one (`no-ilp` groups differently, the interpreter not at all).

use accelerate::prelude::*;
use accelerate::{compile_with, Backend, Config};

/// Where this file's line containing `text` is, as errors name it.
fn line_of(text: &str) -> String {
    let n = include_str!("rows.rs").lines().position(|l| l.contains(text)).expect("the line");
    format!("rows.rs:{}:", n + 1)
}

fn config() -> Config {
    Config::from_env().unwrap()
}

/// Each row `x` becomes `(x - max x) * sum (x - max x) + 1`, in integers:
/// the maxima; the differences kept and summed (one `fold_keep`); then
/// the result, which reads both. Three kernels of one group.
fn centred(m: &Acc<Matrix<i64>>) -> Acc<Matrix<i64>> {
    let (_, cols) = unindex2(m.shape());
    let along = any_dims::<Z>().all().fixed(&cols);
    let top = m.maximum();
    let d = m.zip_with(top.replicate(along.clone()), |x, t| x - t);
    let s = d.sum();
    d.zip_with(s.replicate(along), |x, s| x * s + 1)
}

fn centred_ref(v: &[i64], r: usize, c: usize) -> Vec<i64> {
    let mut out = Vec::with_capacity(r * c);
    for row in v.chunks(c.max(1)).take(r) {
        let top = *row.iter().max().unwrap();
        let s: i64 = row.iter().map(|x| x - top).sum();
        out.extend(row.iter().map(|x| (x - top) * s + 1));
    }
    out
}

fn matrix(r: usize, c: usize) -> Matrix<i64> {
    Matrix::from_vec(dim2(r, c), (0..r * c).map(|i| ((i * 7919) % 1001) as i64 - 500).collect()).unwrap()
}

#[test]
fn the_plan_names_the_group() {
    // (groups are of fused kernels: CI also runs this file with `no-fusion`)
    let p = compile_with(|m: Acc<Matrix<i64>>| centred(&m), config().with_fusion(true)).unwrap();
    let text = accelerate::plan::pretty::program_without_locations(p.plan());
    assert!(text.contains("rows k0 k1 k2"), "{text}");
}

#[test]
fn a_group_runs_row_by_row_on_every_shape_and_agrees() {
    let f = |m: Acc<Matrix<i64>>| centred(&m);
    let row_by_row = compile_with(f, config()).unwrap();
    let one_by_one = compile_with(f, config().with_backend(Backend::Interpreter)).unwrap();
    // many rows (row by row on the CPU), few rows (one by one), one long
    // row, short rows (one by one: Note [Short rows one by one]), no rows
    for (r, c) in [(256, 1000), (1000, 3), (64, 37), (3, 7), (1, 100_000), (2, 1), (0, 5)] {
        let m = matrix(r, c);
        let want = centred_ref(&m.to_vec(), r, c);
        assert_eq!(row_by_row.run(&m).unwrap().to_vec(), want, "{r} x {c}");
        assert_eq!(one_by_one.run(&m).unwrap().to_vec(), want, "{r} x {c}");
    }
    if let Some(n) = row_by_row.rows_run() {
        // the CPU backend ran the group for the shapes with rows enough
        assert!(n > 0);
    }
    // and with row groups off, the plan has none and none runs
    let off = compile_with(f, config().with_row_groups(false)).unwrap();
    let text = accelerate::plan::pretty::program_without_locations(off.plan());
    assert!(!text.contains("rows "), "{text}");
    let m = matrix(256, 1000);
    assert_eq!(off.run(&m).unwrap().to_vec(), centred_ref(&m.to_vec(), 256, 1000));
    assert!(matches!(off.rows_run(), None | Some(0)));
}

/// Rows shorter than a vector's lanes run one by one, where each member
/// is vectorised across rows (Note [Short rows one by one] in the CPU
/// backend's `rows.rs`); rows of 16 run as a group.
#[test]
fn short_rows_run_one_by_one() {
    let p = compile_with(|m: Acc<Matrix<i64>>| centred(&m), config()).unwrap();
    for (c, grouped) in [(8, false), (15, false), (16, true)] {
        let before = p.rows_run();
        let m = matrix(1000, c);
        assert_eq!(p.run(&m).unwrap().to_vec(), centred_ref(&m.to_vec(), 1000, c), "1000 x {c}");
        if let (Some(before), Some(after)) = (before, p.rows_run()) {
            assert_eq!(after > before, grouped, "1000 x {c}: groups run {before} then {after}");
        }
    }
}

#[test]
fn empty_rows_give_the_members_error_at_its_line() {
    // `maximum` is a fold1: empty rows are an error, which the members run
    // one by one raise, as without the group
    let f = |m: Acc<Matrix<i64>>| centred(&m);
    let p = compile_with(f, config()).unwrap();
    let err = p.run(&matrix(300, 0)).unwrap_err().to_string();
    assert!(err.contains("fold1") && err.contains(&line_of("let top = m.maximum()")), "{err}");
}

#[test]
fn members_of_different_shapes_run_one_by_one() {
    // the sums of `a`'s rows scale `b`'s rows: the loops have one rank, but
    // `b`'s rows are longer, so the group does not run row by row
    let f = |a: Acc<Matrix<i64>>, b: Acc<Matrix<i64>>| {
        let (_, cols) = unindex2(b.shape());
        let s = a.sum();
        b.zip_with(s.replicate(any_dims::<Z>().all().fixed(&cols)), |x, s| x * s)
    };
    let p = compile_with(f, config()).unwrap();
    let (a, b) = (matrix(300, 10), matrix(300, 20));
    let (av, bv) = (a.to_vec(), b.to_vec());
    let want: Vec<i64> =
        (0..300 * 20).map(|k| bv[k] * av[(k / 20) * 10..(k / 20 + 1) * 10].iter().sum::<i64>()).collect();
    assert_eq!(p.run((&a, &b)).unwrap().to_vec(), want);
    assert!(matches!(p.rows_run(), None | Some(0)));
}

/// Each row divided by its sum, in integers.
fn over_sums(m: &Acc<Matrix<i64>>) -> Acc<Matrix<i64>> {
    let (_, cols) = unindex2(m.shape());
    let s = m.sum();
    m.zip_with(s.replicate(any_dims::<Z>().all().fixed(&cols)), |x, s| x / s)
}

#[test]
fn a_check_that_fails_in_a_group_raises_the_members_error() {
    // a row that sums to zero: the division's check fails in the group's
    // loop, and the members run one by one raise the error at its line
    let p = compile_with(|m: Acc<Matrix<i64>>| over_sums(&m), config()).unwrap();
    let (r, c) = (300, 16);
    let mut v: Vec<i64> = (0..r * c).map(|i| (i % 13) as i64 + 1).collect();
    let good = Matrix::from_vec(dim2(r, c), v.clone()).unwrap();
    let want: Vec<i64> =
        (0..r * c).map(|k| v[k] / v[(k / c) * c..(k / c + 1) * c].iter().sum::<i64>()).collect();
    assert_eq!(p.run(&good).unwrap().to_vec(), want);
    let ran = p.rows_run();
    v[200 * c..201 * c].iter_mut().for_each(|x| *x = 0);
    let bad = Matrix::from_vec(dim2(r, c), v).unwrap();
    let err = p.run(&bad).unwrap_err().to_string();
    let at = line_of("|x, s| x / s)");
    assert!(err.contains(&at) && err.to_lowercase().contains("division by zero"), "{err}");
    assert_eq!(p.rows_run(), ran, "a group whose check failed is not counted");
}

#[test]
fn a_member_reading_another_row_is_not_in_a_group() {
    // each row scaled by the sum of the row mirrored from it: a read of the
    // sums at another row's index
    let f = |m: Acc<Matrix<i64>>| {
        let s = m.sum();
        let sh = m.shape();
        let m2 = m.clone();
        generate(sh, move |ix| {
            let (i, j) = unindex2(ix);
            let (rows, _) = unindex2(m2.shape());
            m2.index(index2(i.clone(), j)) * s.index(index1(rows - 1i64 - i))
        })
    };
    let p = compile_with(f, config()).unwrap();
    let text = accelerate::plan::pretty::program_without_locations(p.plan());
    assert!(!text.contains("rows "), "{text}");
    let m = matrix(100, 30);
    let v = m.to_vec();
    let sums: Vec<i64> = v.chunks(30).map(|r| r.iter().sum()).collect();
    let want: Vec<i64> = (0..3000).map(|k| v[k] * sums[99 - k / 30]).collect();
    assert_eq!(p.run(&m).unwrap().to_vec(), want);
}

//! Nested data parallelism: programs written with arrays computed inside
//! scalar functions, flattened by the lifting transformation
//! (`trafo::lift`, the sequences thesis ch.4). Each is checked against a
//! plain-Rust reference and, where it has one, against its hand-flattened
//! Accelerate form: same result, and for regular programs the same kernels
//! and intermediate arrays (`stats`). These run on the backend
//! `ACCELERATE_BACKEND` names and with the pipeline's switches from the
//! environment, so CI runs them on every backend, with fusion on and off.

mod common;

use accelerate::prelude::*;
use accelerate::{run_with, stats_with, Config, Error};
use accelerate_programs::rowsolve::{threshold_ref, thresholds_flat, thresholds_nested};
use accelerate_programs::smvm::{self, Csr};
use proptest::prelude::*;

fn env() -> Config {
    Config::from_env().expect("configuration from the environment")
}

fn run_env<A: Arrays>(acc: &Acc<A>) -> Result<A, Error> {
    run_with(acc, &env())
}

fn values(n: usize, seed: usize) -> Vec<f64> {
    // small integers: every sum below is exact in f64, in any order
    (0..n).map(|k| (((k + seed) * 7919) % 23) as f64 - 11.0).collect()
}

fn matrix(rows: usize, cols: usize, seed: usize) -> Matrix<f64> {
    Array::from_vec(Snoc(Snoc(Z, rows as i64), cols as i64), values(rows * cols, seed)).unwrap()
}

fn dotp(a: &Acc<Vector<f64>>, b: &Acc<Vector<f64>>) -> Acc<Scalar<f64>> {
    a.zip_with(b, |x, y| x * y).fold(0.0, |s, t| s + t)
}

/// Row `i` of a matrix.
fn row(m: &Acc<Matrix<f64>>, i: &Exp<i64>) -> Acc<Vector<f64>> {
    m.slice(any_dims::<Z>().fixed(i).all())
}

/// Column `j` of a matrix.
fn column(m: &Acc<Matrix<f64>>, j: &Exp<i64>) -> Acc<Vector<f64>> {
    m.slice(any_dims::<Z>().all().fixed(j))
}

fn matvec_nested(m: &Acc<Matrix<f64>>, v: &Acc<Vector<f64>>) -> Acc<Vector<f64>> {
    let (n, _) = unindex2(m.shape());
    generate(index1(n), |ix| dotp(&row(m, &unindex1(ix)), v).the())
}

fn matvec_flat(m: &Acc<Matrix<f64>>, v: &Acc<Vector<f64>>) -> Acc<Vector<f64>> {
    let (n, _) = unindex2(m.shape());
    let vs = v.replicate(any_dims::<Z>().fixed(n).all());
    m.zip_with(&vs, |x, y| x * y).fold(0.0, |s, t| s + t)
}

fn matvec_ref(m: &[f64], v: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    (0..rows).map(|i| (0..cols).map(|j| m[i * cols + j] * v[j]).sum()).collect()
}

#[test]
fn matrix_vector_product_as_a_generate_of_dotp_of_rows() {
    for (rows, cols) in [(5, 7), (1, 1), (0, 3), (3, 0), (64, 33)] {
        let mv = matrix(rows, cols, 1);
        let vv = Vector::from_elems(values(cols, 2));
        let m = use_array(mv.clone());
        let v = use_array(vv.clone());
        let nested = run_env(&matvec_nested(&m, &v)).unwrap().to_vec();
        let flat = run_env(&matvec_flat(&m, &v)).unwrap().to_vec();
        let want = matvec_ref(&mv.to_vec(), &vv.to_vec(), rows, cols);
        assert_eq!(nested, want, "{rows}x{cols}");
        assert_eq!(flat, want, "{rows}x{cols}");
    }
}

#[test]
fn regular_nesting_compiles_to_what_the_hand_flattened_form_does() {
    let m = use_array(matrix(6, 5, 3));
    let v = use_array(Vector::from_elems(values(5, 4)));
    let nested = stats_with(&matvec_nested(&m, &v), &Config::default()).unwrap();
    let flat = stats_with(&matvec_flat(&m, &v), &Config::default()).unwrap();
    assert_eq!(nested, flat);
    assert_eq!(nested.kernels, 1, "{nested:?}");

    let a = use_array(matrix(4, 6, 5));
    let b = use_array(matrix(6, 3, 6));
    let nested = stats_with(&matmul_nested(&a, &b), &Config::default()).unwrap();
    let flat = stats_with(&matmul_flat(&a, &b), &Config::default()).unwrap();
    assert_eq!(nested.kernels, flat.kernels, "{nested:?} {flat:?}");
    assert_eq!(nested.intermediate_bytes, flat.intermediate_bytes, "{nested:?} {flat:?}");
}

#[test]
fn the_lifted_program_has_no_segment_descriptor_and_explain_shows_it() {
    let m = use_array(matrix(3, 4, 1));
    let v = use_array(Vector::from_elems(values(4, 2)));
    let text = accelerate::explain_with(&matvec_nested(&m, &v), &Config::default()).unwrap();
    let lift = text.split("== lift ==").nth(1).expect("a lift phase").split("== ").next().unwrap();
    assert!(!lift.contains("fold_seg") && !lift.contains("scanl"), "{lift}");
    assert!(lift.contains("fold"), "{lift}");
    // the plan: one fold kernel, the rows and the products fused into it
    let plan = text.split("== plan ==").nth(1).unwrap();
    assert_eq!(plan.matches("launch").count(), 1, "{plan}");
}

fn matmul_nested(a: &Acc<Matrix<f64>>, b: &Acc<Matrix<f64>>) -> Acc<Matrix<f64>> {
    let (n, _) = unindex2(a.shape());
    let (_, m) = unindex2(b.shape());
    generate(index2(n, m), |ix| {
        let (i, j) = unindex2(ix);
        dotp(&row(a, &i), &column(b, &j)).the()
    })
}

fn matmul_flat(a: &Acc<Matrix<f64>>, b: &Acc<Matrix<f64>>) -> Acc<Matrix<f64>> {
    let (n, _) = unindex2(a.shape());
    let (k, m) = unindex2(b.shape());
    let bt = b.backpermute(index2(&m, k), |ix| {
        let (j, p) = unindex2(ix);
        index2(p, j)
    });
    let ar = a.replicate(any_dims::<Z>().all().fixed(&m).all());
    let br = bt.replicate(any_dims::<Z>().fixed(n).all().all());
    ar.zip_with(&br, |x, y| x * y).fold(0.0, |s, t| s + t)
}

fn matmul_ref(a: &[f64], b: &[f64], n: usize, k: usize, m: usize) -> Vec<f64> {
    let mut c = vec![0.0; n * m];
    for i in 0..n {
        for j in 0..m {
            c[i * m + j] = (0..k).map(|p| a[i * k + p] * b[p * m + j]).sum();
        }
    }
    c
}

#[test]
fn matrix_product_as_a_generate_of_dotp_of_a_row_and_a_column() {
    for (n, k, m) in [(4, 6, 3), (1, 1, 1), (0, 2, 3), (2, 0, 2), (9, 17, 5)] {
        let (av, bv) = (matrix(n, k, 7), matrix(k, m, 8));
        let (a, b) = (use_array(av.clone()), use_array(bv.clone()));
        let want = matmul_ref(&av.to_vec(), &bv.to_vec(), n, k, m);
        assert_eq!(run_env(&matmul_nested(&a, &b)).unwrap().to_vec(), want, "{n}x{k}x{m}");
        assert_eq!(run_env(&matmul_flat(&a, &b)).unwrap().to_vec(), want, "{n}x{k}x{m}");
    }
}

#[test]
fn a_batch_of_small_matrix_products() {
    // c[p] = a[p] x b[p] for a batch of p matrices, written per element
    let (batch, n, k, m) = (3usize, 2usize, 4usize, 3usize);
    let av = values(batch * n * k, 9);
    let bv = values(batch * k * m, 10);
    let a = use_array(
        Array::from_vec(Snoc(Snoc(Snoc(Z, batch as i64), n as i64), k as i64), av.clone()).unwrap(),
    );
    let b = use_array(
        Array::from_vec(Snoc(Snoc(Snoc(Z, batch as i64), k as i64), m as i64), bv.clone()).unwrap(),
    );
    let r = generate(index3(batch as i64, n as i64, m as i64), |ix| {
        let (p, i, j) = unindex3(ix);
        let arow = a.slice(any_dims::<Z>().fixed(&p).fixed(&i).all());
        let bcol = b.slice(any_dims::<Z>().fixed(&p).all().fixed(&j));
        dotp(&arow, &bcol).the()
    });
    let mut want = Vec::new();
    for p in 0..batch {
        want.extend(matmul_ref(&av[p * n * k..(p + 1) * n * k], &bv[p * k * m..(p + 1) * k * m], n, k, m));
    }
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
}

#[test]
fn per_row_histograms() {
    // h[r][b] = how many elements of row r fall in bin b
    let (rows, cols, bins) = (4usize, 9usize, 5i64);
    let data: Vec<i64> = (0..rows * cols).map(|k| ((k * 37) % 11) as i64 % bins).collect();
    let d = use_array(Array::from_vec(Snoc(Snoc(Z, rows as i64), cols as i64), data.clone()).unwrap());
    let r = generate(index2(rows as i64, bins), |ix| {
        let (r, b) = unindex2(ix);
        let line = d.slice(any_dims::<Z>().fixed(&r).all());
        let ones = fill(index1(cols as i64), 1i32);
        let hist =
            ones.permute(|new, old| new + old, fill(index1(bins), 0i32), |j| just(index1(line.index(j))));
        hist.index(index1(b))
    });
    let mut want = vec![0i32; rows * bins as usize];
    for r in 0..rows {
        for c in 0..cols {
            want[r * bins as usize + data[r * cols + c] as usize] += 1;
        }
    }
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
}

#[test]
fn two_levels_of_nesting() {
    // for each i, the largest over j of the dot product of a[i][j] with v
    let (n, m, k) = (3usize, 4usize, 5usize);
    let av = values(n * m * k, 11);
    let vv = values(k, 12);
    let a =
        use_array(Array::from_vec(Snoc(Snoc(Snoc(Z, n as i64), m as i64), k as i64), av.clone()).unwrap());
    let v = use_array(Vector::from_elems(vv.clone()));
    let r = generate(index1(n as i64), |i| {
        let i = unindex1(i);
        let inner = generate(index1(m as i64), |j| {
            let line = a.slice(any_dims::<Z>().fixed(&i).fixed(unindex1(j)).all());
            dotp(&line, &v).the()
        });
        inner.fold(f64::NEG_INFINITY, |x, y| x.max(y)).the()
    });
    let want: Vec<f64> = (0..n)
        .map(|i| {
            (0..m)
                .map(|j| (0..k).map(|p| av[(i * m + j) * k + p] * vv[p]).sum::<f64>())
                .fold(f64::NEG_INFINITY, f64::max)
        })
        .collect();
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
}

#[test]
fn a_per_row_iterative_solver_is_a_loop_over_the_rows_still_running() {
    let (rows, cols) = (7usize, 5usize);
    let mv = matrix(rows, cols, 4);
    let m = use_array(mv.clone());
    let want: Vec<f64> = mv.to_vec().chunks(cols).map(threshold_ref).collect();
    // (the rows take different numbers of steps)
    let widths: std::collections::HashSet<u64> = mv
        .to_vec()
        .chunks(cols)
        .map(|l| {
            let (lo, hi) =
                l.iter().fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), &x| (a.min(x), b.max(x)));
            (hi - lo + 1.0) as u64
        })
        .collect();
    assert!(widths.len() > 1, "{widths:?}");
    assert_eq!(run_env(&thresholds_nested(&m)).unwrap().to_vec(), want);
    assert_eq!(run_env(&thresholds_flat(&m)).unwrap().to_vec(), want);
}

#[test]
fn a_loop_steps_only_the_elements_whose_test_holds() {
    // s = sum over k < n of (k + 1) * ys[k] (a nested fold of k + 1 ones):
    // an element that has stopped must not step again, where ys[n] is
    // out of bounds
    let ns = vec![0i64, 3, 1, 4, 2, 4];
    let yv = vec![5i64, -2, 7, 3];
    let (xs, ys) = (use_array(Vector::from_elems(ns.clone())), use_array(Vector::from_elems(yv.clone())));
    let r = xs.map(|n| {
        let n = n.clone();
        let (_, s) = while_loop(
            lift((constant(0i64), constant(0i64))),
            move |st| st.fst().lt(n),
            |st| {
                let (k, s) = st.unlift();
                let w = fill(index1(k.clone() + 1i64), 1i64).fold(0, |a, b| a + b).the();
                lift((k.clone() + 1i64, s + w * ys.index(index1(k))))
            },
        )
        .unlift();
        s
    });
    let want: Vec<i64> = ns.iter().map(|&n| (0..n).map(|k| (k + 1) * yv[k as usize]).sum()).collect();
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
}

#[test]
fn a_loop_whose_test_computes_an_array() {
    // halve x until the sum of xs * x is below a bound; the test folds
    let xs = use_array(Vector::from_elems(vec![8.0f64, 1.0, 64.0, 0.25]));
    let ys = use_array(Vector::from_elems(vec![1.0f64, 2.0, 3.0]));
    let r = xs.map(|x| {
        while_loop(
            x.clone(),
            |v| ys.map(|y| y * v.clone()).fold(0.0, |a, b| a + b).the().gt(1.0),
            |v| v.clone() / 2.0,
        )
    });
    let want: Vec<f64> = [8.0f64, 1.0, 64.0, 0.25]
        .iter()
        .map(|&x| {
            let mut v = x;
            while 6.0 * v > 1.0 {
                v /= 2.0
            }
            v
        })
        .collect();
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
}

#[test]
fn a_nested_acond_computes_each_branch_for_the_elements_that_take_it() {
    // per element, an array of a shape that depends on the branch taken;
    // the `then` branch reads ys[x], past the end for the elements that
    // take `else`
    let xv = vec![2i64, -1, 0, 3, -4, 1];
    let yv = vec![10i64, 20, 30, 40];
    let (xs, ys) = (use_array(Vector::from_elems(xv.clone())), use_array(Vector::from_elems(yv.clone())));
    let r = xs.map(|x| {
        let x = x.clone();
        let arr = acond(
            x.gt(0i64),
            generate(index1(3), |j| unindex1(j) * ys.index(index1(x.clone()))),
            fill(index1(2), x.clone() * 100),
        );
        arr.fold(0, |a, b| a + b).the() + arr.size()
    });
    let want: Vec<i64> =
        xv.iter().map(|&x| if x > 0 { 3 * yv[x as usize] + 3 } else { 2 * x * 100 + 2 }).collect();
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
}

#[test]
fn a_nested_awhile_steps_only_the_elements_whose_test_holds() {
    // per element x: double [x, x, x] while its sum is below 100; and a
    // counter [k] stepped while k < n, whose step reads ys[k]: an element
    // that has stopped must not step again (ys[n] is out of bounds)
    let xv = vec![1i64, 7, 40, 3, 100];
    let xs = use_array(Vector::from_elems(xv.clone()));
    let r = xs.map(|x| {
        awhile(
            |v: Acc<Vector<i64>>| v.fold(0, |a, b| a + b).map(|s| s.lt(100i64)),
            |v| v.map(|y| y * 2),
            fill(index1(3), x.clone()),
        )
        .fold(0, |a, b| a + b)
        .the()
    });
    let want: Vec<i64> = xv
        .iter()
        .map(|&x| {
            let mut v = x;
            while 3 * v < 100 {
                v *= 2
            }
            3 * v
        })
        .collect();
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
    let nv = vec![0i64, 3, 1, 4, 2];
    let yv = vec![5i64, -2, 7, 3];
    let (ns, ys) = (use_array(Vector::from_elems(nv.clone())), use_array(Vector::from_elems(yv.clone())));
    let r = ns.map(|n| {
        let n = n.clone();
        let ys = ys.clone();
        let counted = awhile(
            move |v: Acc<Vector<i64>>| v.map(move |k| k.lt(n.clone())).reshape(Z),
            // (ys[k] is read and adds nothing: every y is below 100)
            move |v| v.map(move |k| k + 1 + ys.index(index1(k)).max(100i64) - 100),
            fill(index1(1), 0i64),
        );
        counted.index(index1(0))
    });
    assert_eq!(run_env(&r).unwrap().to_vec(), nv);
}

#[test]
fn a_nested_array_inside_scalar_arithmetic() {
    // x + sum(ys * x): the array is read inside an operator's operand
    let xs = use_array(Vector::from_elems(vec![1.0f64, -2.0, 0.5]));
    let ys = use_array(Vector::from_elems(vec![3.0f64, 4.0]));
    let r = xs.map(|x| x + ys.map(|y| y * x).fold(0.0, |a, b| a + b).the() * 2.0);
    let want: Vec<f64> = [1.0f64, -2.0, 0.5].iter().map(|x| x + (3.0 * x + 4.0 * x) * 2.0).collect();
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
}

#[test]
fn a_nested_array_read_twice_is_computed_once() {
    let m = use_array(matrix(3, 4, 2));
    let r = generate(index1(3), |i| {
        let line = row(&m, &unindex1(i));
        let s = line.fold(0.0, |a, b| a + b);
        s.the() * s.the() + line.size().cast::<f64>()
    });
    let mv = matrix(3, 4, 2).to_vec();
    let want: Vec<f64> = (0..3)
        .map(|i| {
            let s: f64 = mv[i * 4..i * 4 + 4].iter().sum();
            s * s + 4.0
        })
        .collect();
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
    let text = accelerate::explain_with(&r, &Config::default()).unwrap();
    let sharing = text.split("== sharing ==").nth(1).unwrap().split("== ").next().unwrap();
    assert_eq!(sharing.matches("fold").count(), 1, "{sharing}");
}

#[test]
fn an_error_inside_a_nested_array_names_the_users_line_and_the_outer_index() {
    let m = use_array(matrix(3, 4, 2));
    let mut line = 0;
    let r = generate(index1(3), |i| {
        let i = unindex1(i);
        let rw = row(&m, &i);
        line = line!() + 1;
        rw.index(index1(&i + 2)) // past the end of the row for i = 2
    });
    let err = run_env(&r).unwrap_err();
    assert!(err.to_string().contains(&format!("nested.rs:{line}:")), "{err}");
    match err {
        Error::IndexOutOfBounds { index, .. } => assert_eq!(index.last(), Some(&4), "{index:?}"),
        other => panic!("expected an index out of bounds, got {other:?}"),
    }
}

#[test]
fn constructs_not_flattened_yet_say_which() {
    let xs = use_array(Vector::from_elems(vec![1i64, 2, 3]));
    // an array loop inside a parallel function whose body changes its
    // state's shape (doubling it)
    let r = xs.map(|x| {
        let x = x.clone();
        awhile(
            |v: Acc<Vector<i64>>| v.fold(0, |a, b| a + b).map(move |s| s.lt(x.clone())),
            |v| {
                let n = v.size();
                generate(index1(n * 2), move |j| v.index(index1(unindex1(j) % v.size())))
            },
            fill(index1(2), 1i64),
        )
        .fold(0, |a, b| a + b)
        .the()
    });
    match run_env(&r).unwrap_err() {
        Error::NestedParallelism { what, .. } => {
            assert!(what.contains("awhile") && what.contains("shape"), "{what}")
        }
        other => panic!("{other:?}"),
    }
    // a fold whose operator depends on the element
    let r = xs.map(|x| fill(index1(4), 1i64).fold(0, |a, b| a + b * x).the());
    match run_env(&r).unwrap_err() {
        Error::NestedParallelism { what, .. } => assert!(what.contains("operator"), "{what}"),
        other => panic!("{other:?}"),
    }
}

proptest! {
    #![proptest_config(common::config(48))]

    #[test]
    fn nested_products_agree_with_plain_rust(n in 0usize..6, k in 0usize..7, m in 0usize..5, seed in 0usize..100) {
        let (av, bv) = (matrix(n, k, seed), matrix(k, m, seed + 1));
        let (a, b) = (use_array(av.clone()), use_array(bv.clone()));
        let want = matmul_ref(&av.to_vec(), &bv.to_vec(), n, k, m);
        prop_assert_eq!(run_env(&matmul_nested(&a, &b)).unwrap().to_vec(), want);
        let vv = Vector::from_elems(values(k, seed + 2));
        let v = use_array(vv.clone());
        let want = matvec_ref(&av.to_vec(), &vv.to_vec(), n, k);
        prop_assert_eq!(run_env(&matvec_nested(&a, &v)).unwrap().to_vec(), want);
    }
}

// ---------------------------------------------------------------------------
// Irregular nesting: inner arrays whose extents depend on the element

/// A CSR matrix of small values (every product and row sum exact in
/// f32) with rows of the given lengths.
fn csr(row_lengths: &[usize], ncols: usize, seed: usize) -> Csr {
    let mut m = Csr { ncols, row_ptr: vec![0i64], col_idx: Vec::new(), vals: Vec::new() };
    for (r, &len) in row_lengths.iter().enumerate() {
        for k in 0..len {
            m.col_idx.push(((r * 5 + k * 3 + seed) % ncols.max(1)) as i64);
            m.vals.push((((r + k + seed) * 13) % 9) as f32 - 4.0);
        }
        m.row_ptr.push(m.col_idx.len() as i64);
    }
    m
}

/// `smvm_nested` of the matrix and vector (the program the benchmark runs).
fn smvm_nested(m: &Csr, x: &[f32]) -> Acc<Vector<f32>> {
    let row_ptr = use_array(Vector::from_elems(m.row_ptr.clone()));
    let col_idx = use_array(Vector::from_elems(m.col_idx.clone()));
    let vals = use_array(Vector::from_elems(m.vals.clone()));
    let x = use_array(Vector::from_elems(x.to_vec()));
    smvm::smvm_nested(&row_ptr, &col_idx, &vals, &x)
}

fn smvm_ref(m: &Csr, x: &[f32]) -> Vec<f32> {
    let mut y = vec![0.0; m.row_ptr.len() - 1];
    m.mul_ref(x, &mut y);
    y
}

#[test]
fn sparse_matrix_times_vector_per_row_is_irregular_nesting() {
    for lengths in [vec![3, 0, 5, 1, 0, 2], vec![0, 0], vec![4], vec![], vec![0]] {
        let m = csr(&lengths, 6, 1);
        let x: Vec<f32> = (0..m.ncols).map(|k| k as f32 - 2.5).collect();
        assert_eq!(run_env(&smvm_nested(&m, &x)).unwrap().to_vec(), smvm_ref(&m, &x), "{lengths:?}");
    }
}

#[test]
fn an_irregular_fold_is_a_loop_per_row_and_fold1_a_segmented_fold() {
    let m = csr(&[2, 0, 3], 4, 2);
    let x = vec![1.0; 4];
    let text = accelerate::explain_with(&smvm_nested(&m, &x), &Config::default()).unwrap();
    let lift = text.split("== lift ==").nth(1).unwrap().split("== ").next().unwrap();
    assert!(lift.contains("while") && !lift.contains("fold_seg"), "{lift}");
    // fold1 needs its rows in memory (an empty row is an error): a
    // segmented fold over them
    let lengths = vec![3i64, 1, 2];
    let v = use_array(Vector::from_elems(lengths.clone()));
    let r = v.map(|n| generate(index1(n), |j| unindex1(j) * 10).fold1(|a, b| a.max(b)).the());
    let text = accelerate::explain_with(&r, &Config::default()).unwrap();
    let lift = text.split("== lift ==").nth(1).unwrap().split("== ").next().unwrap();
    assert!(lift.contains("fold1_seg"), "{lift}");
    assert_eq!(run_env(&r).unwrap().to_vec(), vec![20, 0, 10]);
    let v = use_array(Vector::from_elems(vec![2i64, 0, 1]));
    let r = v.map(|n| generate(index1(n), |j| unindex1(j)).fold1(|a, b| a + b).the());
    assert!(matches!(run_env(&r), Err(Error::EmptyReduction { .. })), "{:?}", run_env(&r));
}

#[test]
fn maps_and_zips_of_irregular_arrays() {
    // for each x: sum over j < x of (2j) * (j + 1), and the inner arrays'
    // sizes read back
    let xs = vec![0i64, 3, 1, 5, 0, 2];
    let v = use_array(Vector::from_elems(xs.clone()));
    let r = v.map(|x| {
        let js = generate(index1(x), |j| unindex1(j));
        let doubled = js.map(|j| j * 2);
        let next = js.map(|j| j + 1);
        doubled.zip_with(&next, |a, b| a * b).fold(0, |a, b| a + b).the() * 100 + doubled.size()
    });
    let want: Vec<i64> = xs.iter().map(|&x| (0..x).map(|j| 2 * j * (j + 1)).sum::<i64>() * 100 + x).collect();
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
}

#[test]
fn a_costly_irregular_array_read_twice_is_computed_once() {
    // per row: w_j = (7919 j + 3 i) % 13 (a remainder: not index
    // arithmetic), then its sum and its sum of squares; the array is read
    // in two places, so the lifter writes it once (Note [Irregular arrays])
    // rather than computing each element in both sums
    let lens = vec![3i64, 0, 5, 1, 17, 2];
    let l = use_array(Vector::from_elems(lens.clone()));
    let r = generate(index1(lens.len() as i64), |i| {
        let i = unindex1(i);
        let n = l.index(index1(&i));
        let i2 = i.clone();
        let w = generate(index1(n), move |j| (unindex1(j) * 7919i64 + &i2 * 3i64) % 13i64);
        let sum = w.fold(0i64, |a, b| a + b).the();
        let squares = w.map(|x| x * x).fold(0i64, |a, b| a + b).the();
        sum * 1000 + squares
    });
    let want: Vec<i64> = lens
        .iter()
        .enumerate()
        .map(|(i, &n)| {
            let w: Vec<i64> = (0..n).map(|j| (j * 7919 + i as i64 * 3) % 13).collect();
            w.iter().sum::<i64>() * 1000 + w.iter().map(|x| x * x).sum::<i64>()
        })
        .collect();
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
    let text = accelerate::explain_with(&r, &Config::default()).unwrap();
    let lift = text.split("== lift ==").nth(1).unwrap().split("== ").next().unwrap();
    assert_eq!(lift.matches("% 13").count(), 1, "{lift}");
}

#[test]
fn an_out_of_bounds_read_of_an_irregular_array_is_an_error() {
    let v = use_array(Vector::from_elems(vec![2i64, 3]));
    let r = v.map(|x| {
        let js = generate(index1(x), |j| unindex1(j));
        js.index(index1(2)) // past the end for x = 2
    });
    assert!(matches!(run_env(&r), Err(Error::IndexOutOfBounds { .. })), "{:?}", run_env(&r));
}

proptest! {
    #![proptest_config(common::config(48))]

    #[test]
    fn nested_sparse_products_agree_with_plain_rust(
        lengths in proptest::collection::vec(0usize..6, 0..9),
        ncols in 1usize..7,
        seed in 0usize..50,
    ) {
        let m = csr(&lengths, ncols, seed);
        let x: Vec<f32> = (0..ncols).map(|k| (k as f32) * 0.5 - 1.0).collect();
        prop_assert_eq!(run_env(&smvm_nested(&m, &x)).unwrap().to_vec(), smvm_ref(&m, &x));
    }
}

// ---------------------------------------------------------------------------
// Conditionals whose branches compute arrays

#[test]
fn a_branch_computes_its_arrays_only_for_the_elements_that_take_it() {
    // the `then` branch reads row i + 1, past the end for the last row:
    // only elements that take it may read it (the last takes `else`)
    let (rows, cols) = (4usize, 5usize);
    let mv = matrix(rows, cols, 3);
    let m = use_array(mv.clone());
    let r = generate(index1(rows as i64), |i| {
        let i = unindex1(i);
        cond(
            i.lt(rows as i64 - 1),
            row(&m, &(&i + 1)).fold(0.0, |a, b| a + b).the(),
            row(&m, &i).map(|x| x * 2.0).fold(0.0, |a, b| a + b).the() + 1000.0,
        )
    });
    let d = mv.to_vec();
    let sum = |r: usize| d[r * cols..(r + 1) * cols].iter().sum::<f64>();
    let want: Vec<f64> =
        (0..rows).map(|i| if i + 1 < rows { sum(i + 1) } else { 2.0 * sum(i) + 1000.0 }).collect();
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
    // (the same read for every element fails: the test can fail)
    let all = generate(index1(rows as i64), |i| row(&m, &(unindex1(i) + 1)).fold(0.0, |a, b| a + b).the());
    assert!(matches!(run_env(&all), Err(Error::IndexOutOfBounds { .. })), "{:?}", run_env(&all));
    // a condition that depends on no index, with branches that do
    let flag = m.size().gt(3);
    let r = generate(index1(rows as i64), |i| {
        let i = unindex1(i);
        cond(flag.clone(), row(&m, &i).fold(0.0, |a, b| a + b).the(), -1.0)
    });
    let want: Vec<f64> = (0..rows).map(sum).collect();
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
}

#[test]
fn conditionals_with_arrays_agree_with_plain_rust_on_every_split() {
    // every pattern of branches over 6 elements, both branches nested,
    // a branch reading values of the enclosing element
    for mask in 0u32..64 {
        let flags: Vec<bool> = (0..6).map(|k| mask & (1 << k) != 0).collect();
        let f = use_array(Vector::from_elems(flags.clone()));
        let ys = use_array(Vector::from_elems(vec![1i64, 2, 3]));
        let r = generate(index1(6), |i| {
            let i = unindex1(i);
            let k = &i * 10;
            cond(
                f.index(index1(&i)),
                ys.map(|y| y * &k).fold(0, |a, b| a + b).the(),
                ys.map(|y| y - &i).fold(0, |a, b| a.max(b)).the() - 100,
            )
        });
        let want: Vec<i64> =
            (0..6i64).map(|i| if flags[i as usize] { 6 * i * 10 } else { (3 - i).max(0) - 100 }).collect();
        assert_eq!(run_env(&r).unwrap().to_vec(), want, "{flags:?}");
    }
}

#[test]
fn a_negative_extent_of_an_inner_array_is_an_error() {
    // irregular: the extent depends on the element, negative for 3
    let xs = use_array(Vector::from_elems(vec![5i64, 3, 7]));
    let r = xs.map(|x| generate(index1(x - 4), |j| unindex1(j)).fold(0, |a, b| a + b).the());
    assert!(matches!(run_env(&r), Err(Error::NegativeExtent { .. })), "{:?}", run_env(&r));
    // regular: the same extent for every element, negative
    let r = xs.map(|x| generate(index1(-2), |j| unindex1(j) + x).fold(0, |a, b| a + b).the());
    assert!(matches!(run_env(&r), Err(Error::NegativeExtent { .. })), "{:?}", run_env(&r));
}

/// `f_d(l)`, as a nest of `d` loops whose steps compute arrays:
/// `f_0(l) = l`, `f_d(l) = sum over c < l of (f_(d-1)(c) + f_(d-1)(c + 1))`.
fn loops(l: Exp<i64>, d: usize) -> Exp<i64> {
    if d == 0 {
        return l;
    }
    let (_, s) = while_loop(
        lift((constant(0i64), constant(0i64))),
        move |st| st.fst().lt(l.clone()),
        move |st| {
            let (c, s) = st.unlift();
            let c2 = c.clone();
            let inner =
                generate(index1(2), move |j| loops(c2.clone() + unindex1(j), d - 1)).fold(0, |a, b| a + b);
            lift((c + 1i64, s + inner.the()))
        },
    )
    .unlift();
    s
}

fn loops_ref(l: i64, d: usize) -> i64 {
    if d == 0 {
        return l;
    }
    (0..l.max(0)).map(|c| loops_ref(c, d - 1) + loops_ref(c + 1, d - 1)).sum()
}

#[test]
fn loops_nested_three_deep_step_only_their_running_elements() {
    // the outer two loops are lifted twice (every element stepped while all
    // run, else the running ones packed), the third packs at every step
    // (Note [Lifted loops]); the elements stop after different numbers of
    // steps at every level
    let lv = vec![0i64, 3, 1, 4, 2];
    let r = use_array(Vector::from_elems(lv.clone())).map(|l| loops(l.clone(), 3));
    let want: Vec<i64> = lv.iter().map(|&l| loops_ref(l, 3)).collect();
    assert_eq!(run_env(&r).unwrap().to_vec(), want);
}

/// Per row `i` of a ragged signal (the `lens[i]` samples from
/// `starts[i]`) and per bin `k`: the squared sums of the samples times a
/// table's entries at two phases, as the audio program's real and
/// imaginary parts (`accelerate_programs::audio`).
fn two_sums(signal: &[f32], starts: &[i64], lens: &[i64], table: &[f32], bins: i64) -> Acc<Matrix<f32>> {
    let (signal, table) =
        (use_array(Vector::from_elems(signal.to_vec())), use_array(Vector::from_elems(table.to_vec())));
    let (starts, lens) =
        (use_array(Vector::from_elems(starts.to_vec())), use_array(Vector::from_elems(lens.to_vec())));
    let period = table.length();
    generate(index2(lens.length(), bins), move |ix| {
        let (i, k) = unindex2(ix);
        let (start, len) = (starts.index(index1(&i)), lens.index(index1(&i)));
        let sum = |shift: i64| {
            let (signal, table, start, k, period) =
                (signal.clone(), table.clone(), start.clone(), k.clone(), period.clone());
            generate(index1(&len), move |j| {
                let j = unindex1(j);
                let phase = ((&k * 2i64 + 1i64) * &j + shift) % period;
                signal.index(index1(&start + &j)) * table.index(index1(phase))
            })
            .fold(0.0f32, |a, b| a + b)
            .the()
        };
        let (re, im) = (sum(0), sum(2));
        &re * &re + &im * &im
    })
}

fn two_sums_ref(signal: &[f32], starts: &[i64], lens: &[i64], table: &[f32], bins: i64) -> Vec<f32> {
    let mut out = Vec::new();
    for (&s, &n) in starts.iter().zip(lens) {
        for k in 0..bins {
            let sum = |shift: i64| -> f32 {
                (0..n)
                    .map(|j| signal[(s + j) as usize] * table[(((2 * k + 1) * j + shift) % 8) as usize])
                    .sum()
            };
            let (re, im) = (sum(0), sum(2));
            out.push(re * re + im * im);
        }
    }
    out
}

/// Two folds over one range in each element become one loop that
/// carries both sums (Note [Sibling loops] in `opt/sibling_loops.rs`):
/// the lifter makes a loop of each, clustering puts them in one kernel
/// (they may fail, but the one reader reads both: Note [Clusters and
/// errors]), and the simplifier merges the loops. Small integers: every
/// sum is exact in f32, in any order.
#[test]
fn two_folds_over_one_range_are_one_loop() {
    let signal: Vec<f32> = (0..40).map(|k| (k % 7) as f32 - 3.0).collect();
    let table: Vec<f32> = (0..8).map(|k| (k % 5) as f32 - 2.0).collect();
    let (starts, lens) = (vec![0i64, 3, 10, 20, 39], vec![5i64, 0, 7, 20, 1]);
    let r = two_sums(&signal, &starts, &lens, &table, 3);
    assert_eq!(run_env(&r).unwrap().to_vec(), two_sums_ref(&signal, &starts, &lens, &table, 3));
    let text = accelerate::explain_with(&r, &Config::default()).unwrap();
    let plan = text.split("== plan ==").nth(1).unwrap();
    // one kernel: one loop in each of its two functions (by index and by
    // position), where the two loops were two kernels
    assert_eq!(plan.matches("while").count(), 2, "{plan}");
    let merged = accelerate::stats_with(&r, &Config::default()).unwrap();
    let apart = accelerate::stats_with(&r, &Config::default().with_clusters(false)).unwrap();
    assert_eq!(merged.kernels + 1, apart.kernels);
    // a row past the signal's end: the read's error, fused or not
    let r = two_sums(&signal, &[0, 36], &[5, 5], &table, 2);
    assert!(matches!(run_env(&r), Err(Error::IndexOutOfBounds { .. })), "{:?}", run_env(&r));
}

//! Irregular array sequences (`lang::seq`, `exec::seq`): every operation
//! against a plain-Rust reference, on the backend of the environment (CI
//! runs this file on the CPU backend, the interpreter and the CUDA
//! emulator), with chunk sizes fixed at random and chosen by the adaptive
//! scheduler: empty sequences, one element, irregular extents, sequences
//! of tuples.

mod common;

use accelerate::prelude::*;
use accelerate::{run_seq_with, stream_out_with, Config, SeqOptions};
use proptest::prelude::*;

fn env() -> Config {
    Config::from_env().unwrap()
}

/// The environment's configuration with chunks of `k` elements, or the
/// scheduler's for `None`.
fn chunked(k: Option<usize>) -> Config {
    env().with_seq(SeqOptions { chunk: k, ..SeqOptions::default() })
}

fn chunk_sizes() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![Just(None), (1usize..6).prop_map(Some)]
}

/// Element `i` of the irregular test sequence: `[i * 100 + j * 7 | j <- 0 .. lens[i]]`.
fn irregular_ref(lens: &[i64]) -> Vec<Vec<i64>> {
    lens.iter().enumerate().map(|(i, &n)| (0..n).map(|j| i as i64 * 100 + j * 7).collect()).collect()
}

fn irregular_seq(lens: &[i64]) -> Seq<Vector<i64>> {
    let l = use_array(Vector::from_elems(lens.to_vec()));
    produce(lens.len() as i64, move |i| {
        let i = i.clone();
        generate(index1(l.index(index1(i.clone()))), move |j| i.clone() * 100 + unindex1(j) * 7)
    })
}

fn collect_out<A: Arrays>(s: &Seq<A>, k: Option<usize>) -> Vec<A> {
    stream_out_with(s, &chunked(k)).unwrap().collect::<Result<Vec<_>, _>>().unwrap()
}

proptest! {
    #![proptest_config(common::config(12))]

    #[test]
    fn produce_map_seq_and_the_consumers_agree_with_plain_rust(
        lens in prop::collection::vec(0i64..5, 0..9),
        k in chunk_sizes(),
    ) {
        let want = irregular_ref(&lens);
        let s = irregular_seq(&lens).map_seq(|x| x.map(|v| v * 2 + 1));
        let want_mapped: Vec<Vec<i64>> = want.iter().map(|r| r.iter().map(|v| v * 2 + 1).collect()).collect();
        // elements
        let e: Vector<i64> = run_seq_with(&s.elements(), &chunked(k)).unwrap();
        prop_assert_eq!(e.to_vec(), want_mapped.concat());
        // stream_out, element by element
        let out: Vec<Vec<i64>> = collect_out(&s, k).iter().map(|a| a.to_vec()).collect();
        prop_assert_eq!(&out, &want_mapped);
        // tabulate: cut to the intersection of the extents
        let t: Matrix<i64> = run_seq_with(&s.tabulate(), &chunked(k)).unwrap();
        let w = want_mapped.iter().map(|r| r.len()).min().unwrap_or(0);
        prop_assert_eq!(t.dims(), &[want_mapped.len(), w][..]);
        let cut: Vec<i64> = want_mapped.iter().flat_map(|r| r[..w].to_vec()).collect();
        prop_assert_eq!(t.to_vec(), cut);
        // fold_seq of each element's sum
        let sums = s.map_seq(|x| x.fold(0, |a, b| a + b));
        let f: Scalar<i64> = run_seq_with(&sums.fold_seq(5i64, |a, b| a + b), &chunked(k)).unwrap();
        prop_assert_eq!(f.value(), 5 + want_mapped.iter().flatten().sum::<i64>());
        // scan_seq of the sums
        let sc: Vector<i64> = run_seq_with(&sums.scan_seq(0i64, |a, b| a + b).elements(), &chunked(k)).unwrap();
        let mut acc = 0;
        let want_scan: Vec<i64> = want_mapped.iter().map(|r| { acc += r.iter().sum::<i64>(); acc }).collect();
        prop_assert_eq!(sc.to_vec(), want_scan);
    }

    #[test]
    fn rows_of_a_matrix_zipped_with_a_stream_are_as_long_as_the_shorter(
        rows in 0usize..7, cols in 0usize..5,
        lens in prop::collection::vec(0usize..6, 0..8),
        k in chunk_sizes(),
    ) {
        let m: Vec<f64> = (0..rows * cols).map(|x| x as f64 * 0.5).collect();
        let mat = Matrix::from_vec(Snoc(Snoc(Z, rows as i64), cols as i64), m.clone()).unwrap();
        let items: Vec<Vector<f64>> =
            lens.iter().enumerate().map(|(i, &n)| Vector::from_elems((0..n).map(|j| (i + j) as f64).collect())).collect();
        let s = to_seq(use_array(mat)).zip_with_seq(&stream_in(items.clone()), |r, x| {
            r.zip_with(&x, |a, b| a * b).fold(0.0, |a, b| a + b)
        });
        let got: Vector<f64> = run_seq_with(&s.elements(), &chunked(k)).unwrap();
        let want: Vec<f64> = (0..rows.min(items.len()))
            .map(|i| {
                let x = items[i].to_vec();
                (0..cols.min(x.len())).map(|j| m[i * cols + j] * x[j]).sum()
            })
            .collect();
        prop_assert_eq!(got.to_vec(), want);
    }

    #[test]
    fn segments_of_a_vector_and_sequences_of_tuples(
        lens in prop::collection::vec(0i64..6, 0..8),
        k in chunk_sizes(),
    ) {
        let total: i64 = lens.iter().sum();
        let vals: Vec<i32> = (0..total as i32).map(|x| x * 3 - 7).collect();
        let s = from_segs(use_array(Vector::from_elems(lens.clone())), use_array(Vector::from_elems(vals.clone())));
        let pairs = s.map_seq(|x| lift_acc((x.fold(i32::MIN, |a, b| a.max(b)), x.map(|v| v.cast::<i64>() * 2))));
        let out = collect_out(&pairs, k);
        let mut at = 0usize;
        prop_assert_eq!(out.len(), lens.len());
        for ((mx, dbl), &n) in out.iter().zip(&lens) {
            let seg = &vals[at..at + n as usize];
            at += n as usize;
            prop_assert_eq!(mx.value(), seg.iter().copied().max().unwrap_or(i32::MIN));
            prop_assert_eq!(dbl.to_vec(), seg.iter().map(|&v| v as i64 * 2).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_stream_of_irregular_matrices_keeps_each_shape(
        shapes in prop::collection::vec((0usize..4, 0usize..4), 0..7),
        k in chunk_sizes(),
    ) {
        let items: Vec<Matrix<u8>> = shapes
            .iter()
            .enumerate()
            .map(|(i, &(r, c))| {
                Matrix::from_vec(Snoc(Snoc(Z, r as i64), c as i64), (0..r * c).map(|x| (x + i) as u8).collect()).unwrap()
            })
            .collect();
        let s = stream_in(items.clone()).map_seq(|m| m.map(|v| v.cast::<u32>() + 1));
        let out = collect_out(&s, k);
        prop_assert_eq!(out.len(), items.len());
        for (o, i) in out.iter().zip(&items) {
            prop_assert_eq!(o.dims(), i.dims());
            prop_assert_eq!(o.to_vec(), i.to_vec().iter().map(|&v| v as u32 + 1).collect::<Vec<_>>());
        }
    }
}

#[test]
fn an_empty_sequence_gives_empty_results_and_the_initial_state() {
    let s = irregular_seq(&[]);
    let e: Vector<i64> = run_seq_with(&s.elements(), &env()).unwrap();
    assert!(e.to_vec().is_empty());
    let t: Matrix<i64> = run_seq_with(&s.tabulate(), &env()).unwrap();
    assert_eq!(t.dims(), &[0, 0]);
    let f: Scalar<i64> =
        run_seq_with(&s.map_seq(|x| x.fold(0, |a, b| a + b)).fold_seq(42i64, |a, b| a + b), &env()).unwrap();
    assert_eq!(f.value(), 42);
    assert!(collect_out(&s, None).is_empty());
    let none: Vec<Vector<f32>> = Vec::new();
    assert!(collect_out(&stream_in(none), None).is_empty());
}

#[test]
fn fold_batch_sees_each_chunk_in_the_segmented_form() {
    // the state counts elements and values: the extents have a row per
    // element, the values every element's values
    let lens = [3i64, 0, 2, 5, 1];
    let s = irregular_seq(&lens);
    let init = use_array(Vector::from_elems(vec![0i64, 0]));
    let f = s.fold_batch(init, |st, ext, vals| {
        let n = ext.shape().clone();
        let (rows, total) = (unindex2(n).0, vals.size());
        generate(index1(2), move |i| {
            cond(unindex1(i).eq(0), st.index(index1(0)) + rows, st.index(index1(1)) + total)
        })
    });
    for k in [Some(1), Some(2), None] {
        let r: Vector<i64> = run_seq_with(&f, &chunked(k)).unwrap();
        assert_eq!(r.to_vec(), vec![5, 11]);
    }
}

#[test]
fn produce_of_scalars_the_index_alone() {
    let s = produce(6i64, |i| unit(i.clone() * i.clone()));
    let r: Vector<i64> = run_seq_with(&s.elements(), &chunked(Some(4))).unwrap();
    assert_eq!(r.to_vec(), vec![0, 1, 4, 9, 16, 25]);
}

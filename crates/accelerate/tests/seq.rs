//! Irregular array sequences (`lang::seq`, `exec::seq`): every operation
//! against a plain-Rust reference, on the backend of the environment.

use accelerate::prelude::*;
use accelerate::{run_seq_with, stream_out_with, Config, SeqOptions};

fn env() -> Config {
    Config::from_env().unwrap()
}

fn fixed(k: usize) -> Config {
    env().with_seq(SeqOptions { chunk: Some(k), ..SeqOptions::default() })
}

#[test]
fn produce_map_elements() {
    let s = produce(10i64, |i| generate(index1(i.clone() % 3 + 1), move |j| unindex1(j) * 10 + i.clone()));
    let r: Vector<i64> = run_seq_with(&s.map_seq(|x| x.map(|v| v + 1)).elements(), &fixed(4)).unwrap();
    let mut want = Vec::new();
    for i in 0..10i64 {
        for j in 0..(i % 3 + 1) {
            want.push(j * 10 + i + 1);
        }
    }
    assert_eq!(r.to_vec(), want);
}

#[test]
fn rows_dotp() {
    let m = Matrix::from_vec(Snoc(Snoc(Z, 5), 3), (0..15).map(|x| x as f64).collect()).unwrap();
    let v = Vector::from_elems(vec![1.0f64, 2.0, 3.0]);
    let vv = use_array(v);
    let s = to_seq(use_array(m)).map_seq(move |row| row.zip_with(&vv, |a, b| a * b).fold(0.0, |a, b| a + b));
    let r: Vector<f64> = run_seq_with(&s.elements(), &fixed(2)).unwrap();
    let want: Vec<f64> = (0..5).map(|i| (0..3).map(|j| (i * 3 + j) as f64 * (j + 1) as f64).sum()).collect();
    assert_eq!(r.to_vec(), want);
    let t: Scalar<f64> = run_seq_with(&s.fold_seq(0.0, |a, b| a + b), &env()).unwrap();
    assert_eq!(t.value(), want.iter().sum::<f64>());
}

#[test]
fn segments_and_stream() {
    let lens = Vector::from_elems(vec![2i64, 0, 3, 1]);
    let vals = Vector::from_elems(vec![1i32, 2, 3, 4, 5, 6]);
    let s = from_segs(use_array(lens), use_array(vals)).map_seq(|x| x.fold(0, |a, b| a + b));
    let r: Vector<i32> = run_seq_with(&s.elements(), &env()).unwrap();
    assert_eq!(r.to_vec(), vec![3, 0, 12, 6]);
    let items: Vec<Vector<f32>> =
        (0..7).map(|n| Vector::from_elems((0..n).map(|x| x as f32).collect())).collect();
    let s = stream_in(items.clone()).map_seq(|x| x.map(|v| v * 2.0));
    let out: Vec<Vector<f32>> = stream_out_with(&s, &fixed(3)).unwrap().collect::<Result<_, _>>().unwrap();
    assert_eq!(out.len(), 7);
    for (o, i) in out.iter().zip(&items) {
        assert_eq!(o.to_vec(), i.to_vec().iter().map(|v| v * 2.0).collect::<Vec<_>>());
    }
}

#[test]
fn scan_and_tabulate() {
    let s = produce(9i64, |i| unit(i.clone() + 1)).scan_seq(0i64, |a, b| a + b);
    let r: Vector<i64> = run_seq_with(&s.elements(), &fixed(4)).unwrap();
    assert_eq!(r.to_vec(), vec![1, 3, 6, 10, 15, 21, 28, 36, 45]);
    let s = produce(4i64, |i| generate(index1(i.clone() + 2), |j| unindex1(j)));
    let t: Matrix<i64> = run_seq_with(&s.tabulate(), &env()).unwrap();
    assert_eq!(t.dims(), &[4, 2]);
    assert_eq!(t.to_vec(), vec![0, 1, 0, 1, 0, 1, 0, 1]);
}

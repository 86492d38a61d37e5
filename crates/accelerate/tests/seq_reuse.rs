//! Chunk programs kept across runs (Note [Chunk programs across runs] in
//! `exec/seq/reuse.rs`): a sequence built again over other arrays of the
//! same types runs the chunk program compiled for the first, on its own
//! arrays. One test in its own binary, since the count of compiled
//! programs is the process's.

use accelerate::prelude::*;
use accelerate::{chunk_programs_compiled, stream_out_with, Config};

/// For each window `w` (its start and length in `xs`), the sum over the
/// window of `xs[start + t] * table[(w + t) % len(table)]`: a sequence
/// whose element function `use`s three arrays.
fn windowed(xs: &[f32], windows: &[(i64, i64)], table: &[f32]) -> Seq<Scalar<f32>> {
    let xs = use_array(Vector::from_elems(xs.to_vec()));
    let table = use_array(Vector::from_elems(table.to_vec()));
    let windows = use_array(Vector::from_elems(windows.to_vec()));
    let n = windows.length();
    produce(n, |w| unit(w)).map_seq(move |w| {
        let w = w.the();
        let (start, len) = windows.index(index1(&w)).unlift();
        let (xs, table) = (xs.clone(), table.clone());
        generate(index1(len), move |t| {
            let t = unindex1(t);
            xs.index(index1(&start + &t)) * table.index(index1((&w + &t) % table.length()))
        })
        .fold(0.0f32, |a, b| a + b)
    })
}

fn windowed_ref(xs: &[f32], windows: &[(i64, i64)], table: &[f32]) -> Vec<f32> {
    windows
        .iter()
        .enumerate()
        .map(|(w, &(start, len))| {
            (0..len).fold(0.0f32, |a, t| {
                a + xs[(start + t) as usize] * table[((w as i64 + t) % table.len() as i64) as usize]
            })
        })
        .collect()
}

fn run(s: &Seq<Scalar<f32>>, config: &Config) -> Result<Vec<f32>, accelerate::Error> {
    stream_out_with(s, config)?.map(|e| e.map(|x| x.value())).collect()
}

#[test]
fn a_sequence_built_again_over_other_arrays_reuses_its_chunk_program() {
    let mut config = Config::from_env().unwrap();
    config.seq.chunk = Some(4);
    let xs: Vec<f32> = (0..100).map(|k| (k as f32 * 0.3).sin()).collect();
    let table: Vec<f32> = (0..16).map(|k| k as f32 * 0.125 - 1.0).collect();
    let windows = vec![(0i64, 10i64), (3, 0), (20, 33), (90, 10)];
    let first = run(&windowed(&xs, &windows, &table), &config).unwrap();
    assert_eq!(first, windowed_ref(&xs, &windows, &table));
    let compiled = chunk_programs_compiled();

    // other arrays of the same types, of other lengths: the same chunk
    // program, its results of the new arrays
    let xs2: Vec<f32> = (0..300).map(|k| (k as f32 * 0.7).cos() * 2.0).collect();
    let table2: Vec<f32> = (0..5).map(|k| 3.0 - k as f32).collect();
    let windows2 = vec![(250i64, 50i64), (1, 7), (0, 1), (100, 100), (7, 3), (42, 0)];
    let second = run(&windowed(&xs2, &windows2, &table2), &config).unwrap();
    assert_eq!(second, windowed_ref(&xs2, &windows2, &table2));
    assert_eq!(chunk_programs_compiled(), compiled, "the chunk program was compiled again");

    // and the errors are of the new arrays: a window past the end of xs2
    let bad = vec![(0i64, 4i64), (290, 20)];
    let err = run(&windowed(&xs2, &bad, &table2), &config).unwrap_err();
    assert!(
        matches!(&err, accelerate::Error::SeqElement { index: 1, error, .. }
            if matches!(**error, accelerate::Error::IndexOutOfBounds { .. })),
        "{err}"
    );

    // another configuration compiles its own
    let mut other = config.clone();
    other.fusion = !other.fusion;
    let third = run(&windowed(&xs, &windows, &table), &other).unwrap();
    assert_eq!(third, windowed_ref(&xs, &windows, &table));
    assert!(chunk_programs_compiled() > compiled);
}

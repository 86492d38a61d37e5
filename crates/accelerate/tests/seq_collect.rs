//! Sequences collected into larger programs (`Consumed::collect`): each
//! consumer's result used by the enclosing program, whose arrays the
//! sequence's sources read, against plain-Rust references, on the
//! backend of the environment (CI runs this file on the CPU backend, the
//! interpreter and the CUDA emulator), with chunk sizes fixed at random
//! and chosen by the adaptive scheduler. Also: a collected sequence run
//! again by an `awhile` loop and by a compiled program called twice, a
//! stream in a program run twice, a collect inside a parallel function,
//! and an element that fails. The hostile cases run in a child process.

#[macro_use]
mod common;

use accelerate::prelude::*;
use accelerate::{compile_with, explain_with, run_with, Config, SeqOptions};
use proptest::prelude::*;

fn chunked(k: Option<usize>) -> Config {
    Config::from_env().unwrap().with_seq(SeqOptions { chunk: k, ..SeqOptions::default() })
}

fn chunk_sizes() -> impl Strategy<Value = Option<usize>> {
    prop_oneof![Just(None), (1usize..6).prop_map(Some)]
}

proptest! {
    #![proptest_config(common::config(12))]

    /// Rows of a matrix the program computes, each row's running values
    /// as elements, tabulated and folded; the program goes on with each
    /// result.
    #[test]
    fn every_consumer_collected_into_a_larger_program(
        rows in 0usize..7, cols in 0usize..5,
        k in chunk_sizes(),
    ) {
        let m: Vec<i64> = (0..rows * cols).map(|x| x as i64 * 3 - 5).collect();
        let mat = Matrix::from_vec(Snoc(Snoc(Z, rows as i64), cols as i64), m.clone()).unwrap();
        // the source's array is computed by the enclosing program
        let doubled = use_array(mat).map(|v| v * 2);
        let s = to_seq(doubled.clone()).map_seq(|r| r.map(|v| v + 1));
        let elements = s.elements().collect();
        let tab = s.tabulate().collect();
        let sums = s.map_seq(|r| r.fold(0, |a, b| a + b)).fold_seq(7i64, |a, b| a + b).collect();
        // the program goes on with the results
        let e2 = elements.map(|v| v * 10);
        let t2 = tab.zip_with(&doubled, |a, b| a - b);
        let total = unit(sums.the() + e2.fold_all(0, |a, b| a + b).the());
        let (e2, t2, total): (Vector<i64>, Matrix<i64>, Scalar<i64>) =
            run_with(&lift_acc((e2, t2, total)), &chunked(k)).unwrap();
        let want_rows: Vec<i64> = m.iter().map(|v| v * 2 + 1).collect();
        prop_assert_eq!(e2.to_vec(), want_rows.iter().map(|v| v * 10).collect::<Vec<_>>());
        // (an empty sequence tabulates to inner extents 0)
        let width = if rows == 0 { 0 } else { cols };
        prop_assert_eq!(t2.dims(), &[rows, width][..]);
        prop_assert_eq!(t2.to_vec(), vec![1i64; rows * width]);
        let s0: i64 = want_rows.iter().sum();
        prop_assert_eq!(total.value(), 7 + s0 + 10 * s0);
    }

    /// `produce` of a length the program computes, segments of vectors it
    /// computes, and a running scan over them, in a compiled program of
    /// two arguments.
    #[test]
    fn produce_segments_and_scan_read_the_programs_arrays(
        lens in prop::collection::vec(0i64..6, 0..8),
        k in chunk_sizes(),
    ) {
        let total: usize = lens.iter().sum::<i64>() as usize;
        let vals: Vec<i32> = (0..total as i32).map(|x| x * 3 - 7).collect();
        let prog = compile_with(
            |l: Acc<Vector<i64>>, v: Acc<Vector<i32>>| {
                let segs = from_segs(l.clone(), v.map(|x| x + 1));
                let maxima = segs.map_seq(|x| x.fold(-1000, |a, b| a.max(b))).elements().collect();
                let n = l.size();
                let squares = produce(n, |i| unit(i.clone() * i.clone())).elements().collect();
                let running = segs
                    .map_seq(|x| unit(x.fold(0, |a, b| a + b).the().cast::<i64>()))
                    .scan_seq(100i64, |a, b| a + b)
                    .elements()
                    .collect();
                lift_acc((maxima, squares, running))
            },
            chunked(k),
        )
        .unwrap();
        for _ in 0..2 {
            let (mx, sq, run) =
                prog.run((&Vector::from_elems(lens.clone()), &Vector::from_elems(vals.clone()))).unwrap();
            let mut at = 0usize;
            let mut want_mx = Vec::new();
            let mut want_run = Vec::new();
            let mut acc = 100i64;
            for &n in &lens {
                let seg: Vec<i32> = vals[at..at + n as usize].iter().map(|x| x + 1).collect();
                at += n as usize;
                want_mx.push(seg.iter().copied().fold(-1000, i32::max));
                acc += seg.iter().map(|&x| x as i64).sum::<i64>();
                want_run.push(acc);
            }
            prop_assert_eq!(mx.to_vec(), want_mx);
            prop_assert_eq!(sq.to_vec(), (0..lens.len() as i64).map(|i| i * i).collect::<Vec<_>>());
            prop_assert_eq!(run.to_vec(), want_run);
        }
    }
}

#[test]
fn a_collected_sequence_runs_once_per_iteration_of_a_loop() {
    // each iteration adds each row's sum to every element of the row,
    // through a sequence over the loop's array
    let start = Matrix::from_vec(Snoc(Snoc(Z, 3), 2), vec![1i64, 2, 3, 4, 5, 6]).unwrap();
    let r = awhile(
        |m: Acc<Matrix<i64>>| unit(m.fold_all(0, |a, b| a + b).the().lt(10_000)),
        |m: Acc<Matrix<i64>>| {
            let s = to_seq(m.clone()).map_seq(|row| {
                let total = row.fold(0, |a, b| a + b);
                row.map(move |v| v + total.the())
            });
            s.elements().collect().reshape(m.shape())
        },
        use_array(start.clone()),
    );
    for k in [Some(1), Some(2), None] {
        let got: Matrix<i64> = run_with(&r, &chunked(k)).unwrap();
        let mut want = start.to_vec();
        while want.iter().sum::<i64>() < 10_000 {
            for row in want.chunks_mut(2) {
                let t: i64 = row.iter().sum();
                row.iter_mut().for_each(|v| *v += t);
            }
        }
        assert_eq!(got.to_vec(), want);
    }
}

#[test]
fn the_plan_shows_a_collected_sequence_as_a_call_with_no_fallback() {
    let xs = use_array(Vector::from_elems(vec![1.0f32, 2.0, 3.0]));
    let s = to_seq(xs.map(|x| x * 2.0)).map_seq(|x| x.map(|v| v + 1.0)).elements().collect();
    let text = explain_with(&s.map(|x| x * 3.0), &chunked(None)).unwrap();
    assert!(text.contains("foreign collect ("), "{text}");
    assert!(!text.contains("fallback"), "{text}");
}

// ---------------------------------------------------------------------------
// Hostile cases, each in a child process

const ROLE: &str = "ACCELERATE_SEQ_COLLECT_CHILD";

hostile!(a_stream_in_a_program_run_twice_is_an_error_naming_its_line, {
    let items: Vec<Vector<i32>> = (0..5).map(|i| Vector::from_elems(vec![i, i + 1])).collect();
    let line = line!() + 1;
    let s = stream_in(items).map_seq(|x| x.map(|v| v * 2));
    let prog = s.elements().collect().map(|v| v + 1);
    let got: Vector<i32> = run_with(&prog, &chunked(Some(2))).unwrap();
    assert_eq!(got.to_vec(), (0..5).flat_map(|i| [2 * i + 1, 2 * i + 3]).collect::<Vec<_>>());
    let e = run_with(&prog, &chunked(Some(2))).unwrap_err();
    let Error::Sequence { loc, message } = &e else { panic!("{e}") };
    assert_eq!(loc.line(), line, "{e}");
    assert!(message.contains("consumed by an earlier run"), "{e}");
});

hostile!(a_failing_element_of_a_collected_sequence_is_named, {
    let xs = use_array(Vector::from_elems((0..10i64).collect()));
    let line = line!() + 1;
    let s = to_seq(xs).map_seq(|x| unit(60 / (x.the() - 6)));
    let prog = s.elements().collect().map(|v| v + 1);
    for k in [1, 4] {
        let e = run_with(&prog, &chunked(Some(k))).unwrap_err();
        let Error::SeqElement { index, error, .. } = &e else { panic!("{e}") };
        assert_eq!(*index, 6, "{e}");
        let Error::DivisionByZero { loc } = &**error else { panic!("{e}") };
        assert_eq!(loc.line(), line, "{e}");
    }
});

hostile!(a_collect_inside_a_parallel_function_is_nested_parallelism, {
    let prog = generate(index1(4), |i| {
        let n = unindex1(i);
        produce(n, |j| unit(j.clone())).fold_seq(0i64, |a, b| a + b).collect().the()
    });
    let e = run_with(&prog, &chunked(None)).unwrap_err();
    assert!(matches!(e, Error::NestedParallelism { .. }), "{e}");
});

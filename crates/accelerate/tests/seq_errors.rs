//! Bad input to sequences: a chunk that fails, a stream that panics or
//! ends before its declared length, a zero budget or chunk size, a stream
//! run twice, a negative length. Each gives an `Error` naming the element
//! and the user's line, after every element before it was consumed. Each
//! case runs in a child process (this test binary again), so that a crash
//! or a hang fails the test instead of killing the run.

#[macro_use]
mod common;

use accelerate::prelude::*;
use accelerate::{run_seq_with, stream_out_with, Config, SeqOptions};

const ROLE: &str = "ACCELERATE_SEQ_ERRORS_CHILD";

fn chunked(k: usize) -> Config {
    Config::from_env().unwrap().with_seq(SeqOptions { chunk: Some(k), ..SeqOptions::default() })
}

/// The sequence whose element 6 divides by zero (on line `DIV_LINE`).
fn failing_at_six() -> Seq<Vector<i64>> {
    produce(10i64, |i| {
        let i = i.clone();
        generate(index1(3), move |j| unindex1(j) + 60 / (i.clone() - 6)) // DIV_LINE
    })
}

const DIV_LINE: u32 = line!() - 4; // (the line of `// DIV_LINE` above)

hostile!(a_failing_element_is_named_by_its_index_and_line, {
    for k in [1, 4, 10] {
        let e = run_seq_with(&failing_at_six().elements(), &chunked(k)).unwrap_err();
        let Error::SeqElement { index, error, .. } = &e else { panic!("{e}") };
        assert_eq!(*index, 6, "{e}");
        let Error::DivisionByZero { loc } = &**error else { panic!("{e}") };
        assert_eq!(loc.line(), DIV_LINE, "{e}");
        assert!(e.to_string().contains("element 6 of the sequence"), "{e}");
    }
});

hostile!(stream_out_hands_out_every_element_before_the_failing_one, {
    for k in [1, 4] {
        let out: Vec<_> = stream_out_with(&failing_at_six(), &chunked(k)).unwrap().collect();
        assert_eq!(out.len(), 7, "six elements, then the error");
        for (i, r) in out[..6].iter().enumerate() {
            let want: Vec<i64> = (0..3).map(|j| j + 60 / (i as i64 - 6)).collect();
            assert_eq!(r.as_ref().unwrap().to_vec(), want);
        }
        assert!(matches!(&out[6], Err(Error::SeqElement { index: 6, .. })), "{:?}", out[6]);
    }
});

hostile!(a_fold_takes_every_element_before_the_failing_one, {
    // the state is lost with the error, but the elements before it were
    // folded: what the progress callback saw says so
    let s = failing_at_six().map_seq(|x| x.fold(0, |a, b| a + b));
    let e = run_seq_with(&s.fold_seq(0i64, |a, b| a + b), &chunked(4)).unwrap_err();
    assert!(matches!(e, Error::SeqElement { index: 6, .. }), "{e}");
});

hostile!(a_stream_that_panics_is_an_error_after_the_elements_before, {
    let items = (0..10).map(|i| {
        if i == 5 {
            panic!("the file is truncated");
        }
        Vector::from_elems(vec![i as f32; 2])
    });
    let s = stream_in(items).map_seq(|x| x.map(|v| v + 1.0));
    let out: Vec<_> = stream_out_with(&s, &chunked(3)).unwrap().collect();
    assert_eq!(out.len(), 6);
    assert!(out[..5].iter().all(|r| r.is_ok()));
    let Err(e) = &out[5] else { panic!() };
    assert!(matches!(e, Error::SeqElement { index: 5, .. }), "{e}");
    assert!(e.to_string().contains("the file is truncated"), "{e}");
});

hostile!(a_stream_that_ends_before_its_declared_length_names_the_missing_element, {
    let items: Vec<Vector<i32>> = (0..7).map(|i| Vector::from_elems(vec![i])).collect();
    let s = stream_in_exact(10, items).map_seq(|x| x.map(|v| v * 2));
    let out: Vec<_> = stream_out_with(&s, &chunked(4)).unwrap().collect();
    assert_eq!(out.len(), 8);
    for (i, r) in out[..7].iter().enumerate() {
        assert_eq!(r.as_ref().unwrap().to_vec(), vec![2 * i as i32]);
    }
    let Err(e) = &out[7] else { panic!() };
    assert!(matches!(e, Error::SeqElement { index: 7, .. }), "{e}");
    assert!(e.to_string().contains("ended after 7 of the 10 elements"), "{e}");
});

hostile!(elements_of_a_wrong_shape_for_the_program_are_named, {
    // each element is read at index 2: the third has only two values
    let items: Vec<Vector<i64>> = vec![vec![1, 2, 3], vec![4, 5, 6], vec![7, 8], vec![9, 9, 9]]
        .into_iter()
        .map(Vector::from_elems)
        .collect();
    let s = stream_in(items).map_seq(|x| unit(x.index(index1(2))));
    let e = run_seq_with(&s.elements(), &chunked(4)).unwrap_err();
    let Error::SeqElement { index: 2, error, .. } = &e else { panic!("{e}") };
    assert!(matches!(**error, Error::IndexOutOfBounds { .. }), "{e}");
});

hostile!(a_zero_budget_or_chunk_is_refused, {
    let s = produce(3i64, |i| unit(i.clone()));
    let zero = Config::from_env().unwrap().with_seq(SeqOptions { budget_bytes: 0, ..SeqOptions::default() });
    let e = run_seq_with(&s.elements(), &zero).unwrap_err();
    assert!(matches!(&e, Error::Sequence { .. }) && e.to_string().contains("budget of 0 bytes"), "{e}");
    let e = run_seq_with(&s.elements(), &chunked(0)).unwrap_err();
    assert!(e.to_string().contains("chunk size of 0"), "{e}");
});

hostile!(a_stream_runs_once, {
    let s = stream_in(vec![Vector::from_elems(vec![1i32])]);
    let r: Vector<i32> = run_seq_with(&s.elements(), &chunked(1)).unwrap();
    assert_eq!(r.to_vec(), vec![1]);
    let e = run_seq_with(&s.elements(), &chunked(1)).unwrap_err();
    assert!(e.to_string().contains("consumed by an earlier run"), "{e}");
});

hostile!(a_negative_length_is_an_error, {
    let s = produce(-3i64, |i| unit(i.clone()));
    let e = run_seq_with(&s.elements(), &chunked(2)).unwrap_err();
    assert!(e.to_string().contains("negative length -3"), "{e}");
});

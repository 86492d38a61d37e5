//! Pipeline parallelism of sequences (the sequences thesis §3.2.2):
//! `stream_in` is read ahead while chunks compute and `stream_out`'s
//! reader holds its elements, and the queues between them are bounded, so
//! that a slow reader cannot make memory grow. These are checked by
//! counting what the stream's iterator has given, never by timing.

use accelerate::prelude::*;
use accelerate::{stream_out_with, Config, SeqOptions};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A stream of `n` vectors of `len` `f32`s that counts what it gave.
fn counted(n: usize, len: usize, pulled: Arc<AtomicUsize>) -> impl Iterator<Item = Vector<f32>> + Send {
    (0..n).map(move |i| {
        pulled.fetch_add(1, Ordering::SeqCst);
        Vector::from_elems(vec![i as f32; len])
    })
}

/// Waits (a minute at most) until `cond` holds.
fn eventually(mut cond: impl FnMut() -> bool) -> bool {
    let t = Instant::now();
    while t.elapsed() < Duration::from_secs(60) {
        if cond() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

#[test]
fn the_stream_is_read_and_computed_while_the_reader_holds_an_element() {
    let pulled = Arc::new(AtomicUsize::new(0));
    let s = stream_in(counted(1000, 16, pulled.clone())).map_seq(|x| x.map(|v| v + 1.0));
    let config = Config::from_env().unwrap().with_seq(SeqOptions { chunk: Some(2), ..SeqOptions::default() });
    let mut out = stream_out_with(&s, &config).unwrap();
    let first = out.next().unwrap().unwrap();
    assert_eq!(first.to_vec(), vec![1.0; 16]);
    // the reader holds the first element and reads no more: the stream is
    // still read, and chunks computed, behind its back
    assert!(eventually(|| pulled.load(Ordering::SeqCst) >= 20), "pulled {}", pulled.load(Ordering::SeqCst));
    let rest: Vec<_> = out.collect::<Result<_, _>>().unwrap();
    assert_eq!(rest.len(), 999);
    assert_eq!(rest[998].to_vec(), vec![1000.0; 16]);
}

#[test]
fn a_slow_reader_bounds_what_is_read_ahead() {
    // elements of 64 KiB under a 1 MiB budget: each queue holds a third of
    // it (5 elements), a chunk at most a third too
    let pulled = Arc::new(AtomicUsize::new(0));
    let s = stream_in(counted(10_000, 1 << 14, pulled.clone())).map_seq(|x| x.map(|v| v * 2.0));
    let config =
        Config::from_env().unwrap().with_seq(SeqOptions { budget_bytes: 1 << 20, ..SeqOptions::default() });
    let mut out = stream_out_with(&s, &config).unwrap();
    out.next().unwrap().unwrap();
    // once the pipeline is full, nothing more is read until the reader
    // reads: the count stops growing, well short of the stream's 10000
    let mut last = usize::MAX;
    assert!(eventually(|| {
        std::thread::sleep(Duration::from_millis(50));
        let now = pulled.load(Ordering::SeqCst);
        let still = now == last;
        last = now;
        still
    }));
    let held = pulled.load(Ordering::SeqCst);
    eprintln!("read ahead of the reader: {held} elements");
    assert!(held <= 40, "{held} elements read ahead of a reader that read one");
    drop(out);
}

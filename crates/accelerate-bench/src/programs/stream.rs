//! Streaming against an in-memory array (the sequences thesis §3.1.2 and
//! ch.7): the sum of the squares (in `i64`) of every element of `n`
//! vectors of `i32`, computed by the same element function over
//!
//! - `accelerate` (and its ablations): the vectors as the rows of one
//!   matrix in memory (a `map` and a `fold_all`, one fused reduction);
//! - `accelerate-seq`: the vectors as a `stream_in` sequence, pulled from
//!   a Rust iterator a chunk at a time on a thread of its own, under a
//!   memory budget of a small fraction of the data (`budget`), each
//!   vector's sum computed by the lifted element function and folded
//!   (`map_seq`, `fold_seq`); the sequence is compiled on each run (its
//!   kernels from the cache), as a user's `run_seq` is;
//! - `rust-seq`, `rust-rayon`: plain loops over the vectors;
//! - `numpy`, `numba`, `jax`: the Python peers (`peers/bench_stream.py`),
//!   given the vectors as the rows of one matrix, the in-memory form:
//!   NumPy's `einsum` with an `i64` result, a Numba `prange` over the
//!   vectors, JAX's `lax.map` of each vector's sum over the matrix.
//!
//! The question it answers is the issue's "at least 80% of the throughput
//! of the same computation on an in-memory array": what streaming costs
//! (the scheduler's warm-up, a copy of each chunk into one array, the
//! queue between the reader and the computation, one launch per chunk).
//! The iterator hands out vectors already in memory (an `Arc` clone), so
//! that what is measured is the sequence machinery, not a generator.
//! Integer sums are exact, so every variant must equal the reference.

use super::{add_accelerate_variants, count, probe_compile, CompileProbe};
use crate::harness::{fresh, value, Bench, Size};
use crate::peers;
use accelerate::prelude::*;
use accelerate::{run_seq_with, SeqOptions};
use accelerate_programs::rng::{Rng, SEED_A};
use rayon::prelude::*;
use std::sync::Arc;

/// The vectors, their length, and the sequence's memory budget.
pub fn shape(size: Size) -> (usize, usize, usize) {
    // large: 2048 vectors of 64 Ki i32 (512 MiB) under a 64 MiB budget
    size.pick((16, 4096, 1 << 20), (256, 1 << 16, 16 << 20), (2048, 1 << 16, 64 << 20))
}

fn square(v: &Exp<i32>) -> Exp<i64> {
    v.cast::<i64>() * v.cast::<i64>()
}

/// The in-memory program: every element of the matrix squared and summed.
pub fn in_memory(m: Acc<Array<DIM2, i32>>) -> Acc<Scalar<i64>> {
    m.map(square).fold_all(0i64, |a, b| a + b)
}

/// The streamed program: each vector's sum of squares, folded.
pub fn streamed(items: impl Iterator<Item = Vector<i32>> + Send + 'static) -> Consumed<Scalar<i64>> {
    stream_in(items).map_seq(|x| x.map(square).sum()).fold_seq(0i64, |a, b| a + b)
}

fn sum_squares(xs: &[i32]) -> i64 {
    xs.iter().map(|&v| v as i64 * v as i64).sum()
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let (n, len, budget) = shape(size);
    let mut rng = Rng::new(SEED_A);
    let rows: Vec<Vector<i32>> = (0..n)
        .map(|_| Vector::from_elems((0..len).map(|_| rng.below(1 << 24) as i32 - (1 << 23)).collect()))
        .collect();
    let rows = Arc::new(rows);
    let want: i64 = rows.iter().map(|r| sum_squares(r.as_slice())).sum();
    let check = move |&got: &i64| {
        if got == want {
            Ok(())
        } else {
            Err(format!("sum {got}, the reference gives {want}"))
        }
    };

    let mut b = Bench::new(
        "stream",
        format!(
            "{n} vectors of {} i32 ({} MiB), budget {} MiB",
            count(len),
            (n * len * 4) >> 20,
            budget >> 20
        ),
    );
    b.bytes = Some((n * len * 4) as f64);
    b.memory_bound = size == Size::Large;

    let backend = super::accelerate_configs()[0].1.clone();
    let matrix = {
        let flat: Vec<i32> = rows.iter().flat_map(|r| r.as_slice().iter().copied()).collect();
        Array::from_vec(Snoc(Snoc(Z, n as i64), len as i64), flat).map_err(|e| e.to_string())?
    };
    let c = check;
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(in_memory, config),
        move |p| p.run(&matrix),
        move |r: &Scalar<i64>| c(&r.value()),
    )?;

    let config = backend.with_seq(SeqOptions { budget_bytes: budget, ..SeqOptions::default() });
    let (r, c) = (rows.clone(), check);
    b.variant(
        "accelerate-seq",
        move |s| {
            let r = r.clone();
            let consumed = streamed((0..n).map(move |i| r[i].clone()));
            fresh(s, || run_seq_with(&consumed, &config))
        },
        move |r: &Scalar<i64>| c(&r.value()),
    );
    let (r, c) = (rows.clone(), check);
    b.variant("rust-seq", move |s| Ok(value(s, || r.iter().map(|v| sum_squares(v.as_slice())).sum())), c);
    let r = rows.clone();
    b.variant(
        "rust-rayon",
        move |s| Ok(value(s, || r.par_iter().map(|v| sum_squares(v.as_slice())).sum())),
        check,
    );
    // the Python peers (`crate::peers`): the vectors as the rows of one
    // matrix (the in-memory form), and the sum as one `i64`
    let matrix_bytes: Vec<u8> = rows.iter().flat_map(|r| peers::bytes(r.as_slice())).collect();
    peers::add(
        &mut b,
        &["numpy", "numba", "jax"],
        &[("matrix.bin", matrix_bytes)],
        &[n.to_string(), len.to_string()],
        peers::all::<i64>,
        move |r: &Vec<i64>| check(&peers::single(r)?),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(in_memory, config))
}

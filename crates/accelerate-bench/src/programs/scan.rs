//! Prefix sums (`accelerate_programs::scan`): the offsets of 2^26 `i32`
//! counts (each below 16), `scanl (+) 0`, an exclusive scan with the total
//! appended. `i32` because that is what a scan of counts into offsets
//! holds (sizes of pieces of an array of fewer than 2^31 elements, the
//! positions of a compaction or a radix sort's buckets), and integers
//! compare exactly. Ours is the library's `scanl`; the hand-written
//! version is the classic reduce-then-scan on rayon's pool: every chunk's
//! total in parallel, a sequential scan of the totals into each chunk's
//! carry, and every chunk scanned from its carry in parallel, through the
//! array in blocks of half the last-level cache (`BLOCK`), so that the
//! second pass over a block can find it there instead of in memory.
//! Memory-bound: 256 MiB read, 256 MiB written; one core comes close to
//! the machine's bandwidth, so the parallel versions, which read the
//! counts twice, gain little over the sequential loop.
//!
//! Bytes are that compulsory traffic (the counts read once, the offsets
//! written once); no flops are counted (integer adds).

use super::{add_accelerate_variants, count, probe_compile, CompileProbe};
use crate::check::elementwise;
use crate::harness::{in_place, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::rng::SEED_A;
use accelerate_programs::scan::{offsets, offsets_ref, small_counts};
use rayon::prelude::*;
use std::sync::Arc;

pub fn elements(size: Size) -> usize {
    size.pick(1037, 1 << 20, 1 << 26)
}

/// The Accelerate program as a function of its array.
pub fn program(counts: Acc<Vector<i32>>) -> Acc<Vector<i32>> {
    offsets(&counts)
}

/// The chunk one rayon task scans: 64 Ki counts, 256 KiB.
const CHUNK: usize = 1 << 16;

/// The counts scanned in one round of both passes: 16 MiB of them, half
/// the last-level cache of the machine of docs/benchmarks.md (32 MiB),
/// so that the second pass finds them there.
const BLOCK: usize = 64 * CHUNK;

native_fn! {
    /// A chunk's total (wrapping, as the scan adds).
    fn chunk_total(xs: &[i32]) -> i32 {
        xs.iter().fold(0i32, |a, &x| a.wrapping_add(x))
    }
}

native_fn! {
    /// A chunk's inclusive scan from `carry`, into `out`.
    fn scan_chunk(xs: &[i32], carry: i32, out: &mut [i32]) {
        let mut acc = carry;
        for (o, &x) in out.iter_mut().zip(xs) {
            acc = acc.wrapping_add(x);
            *o = acc;
        }
    }
}

/// Parallel reduce-then-scan, block by block; `out` is one longer than
/// `counts`.
pub fn offsets_rayon(counts: &[i32], out: &mut [i32]) {
    out[0] = 0;
    let mut carry = 0i32;
    for (xs, os) in counts.chunks(BLOCK).zip(out[1..].chunks_mut(BLOCK)) {
        let totals: Vec<i32> = xs.par_chunks(CHUNK).map(chunk_total).collect();
        let carries: Vec<i32> = totals
            .iter()
            .map(|&t| {
                let c = carry;
                carry = carry.wrapping_add(t);
                c
            })
            .collect();
        os.par_chunks_mut(CHUNK).zip(xs.par_chunks(CHUNK)).zip(carries).for_each(|((o, x), c)| {
            scan_chunk(x, c, o);
        });
    }
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let n = elements(size);
    let counts = Arc::new(small_counts(n, SEED_A));
    let mut want = vec![0i32; n + 1];
    offsets_ref(&counts, &mut want);
    let want = Arc::new(want);
    let check = move |got: &[i32]| elementwise(got, &want, |_, g, w| g == w);

    let mut b = Bench::new("scan", format!("n = {} i32, scanl (+) 0", count(n)));
    b.bytes = Some(4.0 * (n + n + 1) as f64);
    b.memory_bound = size == Size::Large;

    let xa = Vector::from_elems(counts.to_vec());
    let c = check.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
        move |p| p.run(&xa),
        move |r: &Vector<i32>| c(&r.to_vec()),
    )?;
    type Kernel = fn(&[i32], &mut [i32]);
    let kernels: [(&str, Kernel); 2] = [("rust-seq", offsets_ref), ("rust-rayon", offsets_rayon)];
    for (name, kernel) in kernels {
        let (x, c) = (counts.clone(), check.clone());
        b.variant(name, move |s| Ok(in_place(s, || vec![0i32; n + 1], |o| kernel(&x, o))), move |o| c(o));
    }
    peers::add(
        &mut b,
        &["numpy", "numba", "jax"],
        &[("counts.bin", peers::bytes(&counts))],
        &[n.to_string()],
        peers::all::<i32>,
        move |r: &Vec<i32>| check(r),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

//! Sorting 2^24 `i32` keys drawn from the whole range
//! (`accelerate_programs::radixsort`): ours is the library's `sort`, on the
//! CPU backend a native stable radix sort of four 8-bit passes (Note [A
//! native sort] in `accelerate-embed`; before it, the sort written in the
//! language, one bit per pass, took 2.3 s here). The sequential reference
//! is the standard library's `sort_unstable` (for plain integers the
//! fastest of Rust's sorts, stability being invisible); the parallel one
//! (`rust-rayon`) a hand-written least-significant-digit radix sort of
//! four 8-bit passes on rayon's pool, since rayon's `par_sort_unstable`,
//! what an engineer reaches for first (`rust-par-sort-unstable`, also
//! measured), is slower than the sequential sort on a small machine.
//! Each variant returns a new sorted array, and making it is timed with
//! the sort. Ours and the radix sorts stream the keys through memory at
//! every pass; the comparison sorts are compute- and branch-bound.

use super::{add_accelerate_variants, count, probe_compile, CompileProbe};
use crate::check::elementwise;
use crate::harness::{value, Bench, Size};
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::radixsort::{keys, radixsort, radixsort_ref};
use accelerate_programs::rng::SEED_A;
use rayon::prelude::*;
use std::sync::Arc;

pub fn elements(size: Size) -> usize {
    size.pick(331, 1 << 18, 1 << 24)
}

/// The Accelerate program as a function of its array.
pub fn program(keys: Acc<Vector<i32>>) -> Acc<Vector<i32>> {
    radixsort(&keys)
}

/// Parallel, what an engineer reaches for first: rayon's parallel
/// pattern-defeating quicksort on a copy (the variant
/// `rust-par-sort-unstable`). On two cores it is slower than the standard
/// library's sequential `sort_unstable` (a newer, faster sort than the
/// one rayon parallelises), hence [`sort_rayon`].
pub fn sort_par_unstable(keys: &[i32]) -> Vec<i32> {
    let mut out = keys.to_vec();
    out.par_sort_unstable();
    out
}

/// Bits of the key sorted per pass of [`sort_rayon`]: 256 buckets, whose
/// counters and write positions stay in the L1 cache.
const DIGIT_BITS: u32 = 8;
const BUCKETS: usize = 1 << DIGIT_BITS;
const PASSES: u32 = i32::BITS / DIGIT_BITS;
const _: () =
    assert!(PASSES.is_multiple_of(2), "the passes alternate between two buffers and end in the second");

/// Digit `pass` of `k` (least significant first) in key order: the top
/// digit has its sign bit flipped, so that negative keys come first.
#[inline(always)]
fn digit(k: i32, pass: u32) -> usize {
    let d = ((k as u32) >> (DIGIT_BITS * pass)) as usize & (BUCKETS - 1);
    if pass == PASSES - 1 {
        d ^ (BUCKETS >> 1)
    } else {
        d
    }
}

/// The output buffer of a scatter, shared by the tasks that write its
/// disjoint parts.
#[derive(Clone, Copy)]
struct Out(*mut i32);

// SAFETY: the tasks of one scatter write disjoint positions (`sort_rayon`).
unsafe impl Send for Out {}
unsafe impl Sync for Out {}

impl Out {
    /// Writes `k` at `i`.
    ///
    /// # Safety
    /// `i` is in bounds, and no other task writes or reads it during the
    /// scatter.
    #[inline(always)]
    unsafe fn write(self, i: usize, k: i32) {
        unsafe { *self.0.add(i) = k }
    }
}

/// Parallel: a least-significant-digit radix sort of 8-bit digits, 4
/// passes, as a performance engineer writes one for 32-bit keys. Each pass
/// cuts the keys into chunks (a few per thread); each chunk counts its
/// digits in parallel, an exclusive scan over (digit, chunk) gives every
/// chunk its write position for every digit, and each chunk scatters its
/// keys there in parallel, in order, so the pass is stable.
pub fn sort_rayon(keys: &[i32]) -> Vec<i32> {
    let n = keys.len();
    let chunk = n.div_ceil(4 * rayon::current_num_threads()).max(1 << 14);
    let mut a = vec![0i32; n];
    let mut b = vec![0i32; n];
    for pass in 0..PASSES {
        // the first pass reads the keys, the others the previous pass's output
        let (src, dst): (&[i32], &mut [i32]) = match pass {
            0 => (keys, &mut a),
            p if p % 2 == 1 => (&a, &mut b),
            _ => (&b, &mut a),
        };
        let counts: Vec<[usize; BUCKETS]> = src
            .par_chunks(chunk)
            .map(|c| {
                let mut h = [0usize; BUCKETS];
                c.iter().for_each(|&k| h[digit(k, pass)] += 1);
                h
            })
            .collect();
        let mut starts = vec![[0usize; BUCKETS]; counts.len()];
        let mut total = 0;
        for d in 0..BUCKETS {
            for (s, h) in starts.iter_mut().zip(&counts) {
                s[d] = total;
                total += h[d];
            }
        }
        let out = Out(dst.as_mut_ptr());
        src.par_chunks(chunk).zip(starts).for_each(|(c, mut at)| {
            for &k in c {
                let d = digit(k, pass);
                // SAFETY: the scan gives each (digit, chunk) the positions
                // `starts[chunk][d] ..` up to its count, disjoint from every
                // other pair's and within `0 .. n`.
                unsafe { out.write(at[d], k) };
                at[d] += 1;
            }
        });
    }
    // an even number of passes: the last wrote `b`
    b
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let n = elements(size);
    let keys = Arc::new(keys(n, SEED_A));
    let want = Arc::new(radixsort_ref(&keys));
    // integers: every variant must give the reference's order exactly
    let check = {
        let want = want.clone();
        move |got: &[i32]| elementwise(got, &want, |_, g, w| g == w)
    };

    let mut b = Bench::new("radixsort", format!("n = {} i32", count(n)));
    // read once, written once: what any sort moves at least
    b.bytes = Some(2.0 * 4.0 * n as f64);

    let input = Vector::from_elems(keys.to_vec());
    let c = check.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
        move |p| p.run(&input),
        move |r: &Vector<i32>| c(&r.to_vec()),
    )?;
    let (k, c) = (keys.clone(), check.clone());
    b.variant("rust-seq", move |s| Ok(value(s, || radixsort_ref(&k))), move |r: &Vec<i32>| c(r));
    let (k, c) = (keys.clone(), check.clone());
    b.variant("rust-rayon", move |s| Ok(value(s, || sort_rayon(&k))), move |r: &Vec<i32>| c(r));
    let (k, c) = (keys.clone(), check.clone());
    b.variant(
        "rust-par-sort-unstable",
        move |s| Ok(value(s, || sort_par_unstable(&k))),
        move |r: &Vec<i32>| c(r),
    );
    peers::add(
        &mut b,
        &["numpy", "numba", "jax"],
        &[("keys.bin", peers::bytes(&keys))],
        &[n.to_string()],
        peers::all::<i32>,
        move |r: &Vec<i32>| check(r),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Many chunks (the benchmark's tiny size makes one), with keys at
    /// both ends of the range and the middle.
    #[test]
    fn parallel_radix_sort_orders_many_chunks() {
        let keys = keys(100_003, SEED_A);
        assert_eq!(sort_rayon(&keys), radixsort_ref(&keys));
    }
}

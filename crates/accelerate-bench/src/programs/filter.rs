//! Stream compaction (`accelerate_programs::filter`): the elements of
//! 2^24 f32 values in [0, 1) greater than 0.5, about half of them, in
//! order. Ours is the library's `filter`: a scan of the 0/1 flags gives
//! each kept element its position, a `permute` moves it there. The
//! hand-written version is the classic two passes: each rayon task counts
//! its chunk's kept elements, a sequential scan of the counts gives every
//! chunk its place, and each task copies its kept elements there,
//! branch-free (a store per element, the position advanced by the
//! predicate), since half the elements kept at random would mispredict
//! every other branch. Not memory-bound: the traffic (64 MiB read, about
//! 32 MiB written) takes about 4 ms at the triad's bandwidth, while the
//! compaction loop's store per element costs about 0.8 ns on one core
//! and the counting pass 0.4 ns (13 and 6 ms at 2^24).
//!
//! The tiny size (the tests) keeps about 1 in 10 (threshold 0.9), so that
//! a selective predicate is checked too. Bytes are the compulsory
//! traffic: the values read once, the kept ones written once. The
//! elements are moved, not computed: every variant must equal the
//! reference to the bit.

use super::{add_accelerate_variants, count, probe_compile, CompileProbe, STREAM_CHUNK};
use crate::check::elementwise;
use crate::harness::{in_place, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::filter::{filter_above, filter_above_into, filter_above_ref, uniform_values};
use accelerate_programs::rng::SEED_A;
use rayon::prelude::*;
use std::sync::Arc;

pub fn elements(size: Size) -> usize {
    size.pick(1037, 1 << 18, 1 << 24)
}

/// The predicate's threshold: elements above it are kept.
pub fn threshold(size: Size) -> f32 {
    size.pick(0.9, 0.5, 0.5)
}

native_fn! {
    /// How many elements of a chunk are kept (a vectorised count).
    fn count_above(xs: &[f32], t: f32) -> usize {
        xs.iter().map(|&x| usize::from(x > t)).sum()
    }
}

native_fn! {
    /// A chunk's kept elements into `out` (exactly their number long):
    /// every element is stored at the next free place, which advances
    /// only when the element is kept, so no branch depends on the data.
    /// The loop stops when `out` is full: the elements left are all
    /// dropped.
    fn compact_above(xs: &[f32], t: f32, out: &mut [f32]) {
        let mut k = 0;
        for &x in xs {
            let Some(slot) = out.get_mut(k) else { break };
            *slot = x;
            k += usize::from(x > t);
        }
    }
}

/// Parallel, in two passes over chunks of `STREAM_CHUNK`: the kept
/// elements counted per chunk, each chunk's place in `out` from the
/// counts before it, and each chunk compacted into its place. Returns how
/// many were kept (at the front of `out`, as long as `xs`).
pub fn filter_rayon(xs: &[f32], t: f32, out: &mut [f32]) -> usize {
    let counts: Vec<usize> = xs.par_chunks(STREAM_CHUNK).map(|c| count_above(c, t)).collect();
    let total: usize = counts.iter().sum();
    let mut places = Vec::with_capacity(counts.len());
    let mut rest = &mut out[..total];
    for &c in &counts {
        let (here, after) = rest.split_at_mut(c);
        places.push(here);
        rest = after;
    }
    xs.par_chunks(STREAM_CHUNK).zip(places).for_each(|(c, o)| compact_above(c, t, o));
    total
}

/// The kept elements (`got`, `kept` of them) equal to the reference's.
fn check(got: &[f32], kept: usize, want: &[f32]) -> Result<(), String> {
    if kept != want.len() {
        return Err(format!("{kept} elements kept, the reference keeps {}", want.len()));
    }
    elementwise(&got[..kept.min(got.len())], want, |_, g, w| g.to_bits() == w.to_bits())
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let (n, t) = (elements(size), threshold(size));
    let xs = Arc::new(uniform_values(n, SEED_A));
    let want = Arc::new(filter_above_ref(&xs, t));

    let mut b = Bench::new("filter", format!("n = {} f32, x > {t} ({} kept)", count(n), want.len()));
    b.bytes = Some(4.0 * (n + want.len()) as f64);

    let xa = Vector::from_elems(xs.to_vec());
    let w = want.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(move |xs| filter_above(&xs, t), config),
        move |p| p.run(&xa),
        move |r: &(Vector<f32>, Scalar<i64>)| check(&r.0.to_vec(), r.1.value() as usize, &w),
    )?;
    // The hand-written versions write into an output made once, as long
    // as the input, and return how many they kept.
    type Kernel = fn(&[f32], f32, &mut [f32]) -> usize;
    let kernels: [(&str, Kernel); 2] = [("rust-seq", filter_above_into), ("rust-rayon", filter_rayon)];
    for (name, kernel) in kernels {
        let (x, w) = (xs.clone(), want.clone());
        b.variant(
            name,
            move |s| Ok(in_place(s, || (vec![0.0f32; n], 0), |(out, kept)| *kept = kernel(&x, t, out))),
            move |(out, kept)| check(out, *kept, &w),
        );
    }
    let w = want.clone();
    peers::add(
        &mut b,
        &["numpy", "numba", "jax"],
        &[("xs.bin", peers::bytes(&xs))],
        &[n.to_string(), t.to_string()],
        peers::all::<f32>,
        move |r: &Vec<f32>| check(r, r.len(), &w),
    )?;
    Ok(b)
}

pub fn compile_probe(size: Size) -> Result<CompileProbe, String> {
    let t = threshold(size);
    probe_compile(|config| accelerate::compile_with(move |xs| filter_above(&xs, t), config))
}

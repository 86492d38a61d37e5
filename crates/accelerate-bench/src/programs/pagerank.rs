//! PageRank (the sequences thesis §7.4), as in `examples/pagerank.rs`:
//! `ITERS` iterations over a random graph given as a list of `(from, to)`
//! links (`i64` pairs, as in the thesis), every tenth vertex dangling,
//! in-degrees falling off as a power of the vertex number.
//!
//! Variants besides ours and its ablations (the flat program, the links
//! one array and the iterations an `awhile`):
//!
//! - `accelerate-seq`: the streamed form (`StreamedPagerank`): one pass
//!   for the out-degrees and one per iteration, each a sequence of blocks
//!   of `BLOCK` links consumed by `fold_batch`, the ranks in memory. The
//!   links come from the in-memory list (kept as two columns), copied
//!   block by block into the stream's arrays by its iterator, so that what is measured is the
//!   streaming machinery (the reader thread, the queue, the chunk
//!   programs, and compiling each pass's sequence as it starts, its
//!   kernels from the cache), not a generator. The per-vertex programs
//!   are compiled once, untimed.
//! - `accelerate-pull`: the pull form (`pagerank_pull`), on the graph
//!   grouped by target as `rust-rayon` has it (built outside the timing
//!   for both): every in-link's share gathered, and each target's summed
//!   by `fold_seg_offsets`. The targets table compares this form, which
//!   computes what `rust-rayon`, Numba and SciPy compute, with them
//!   (`report::MAIN`); the push form's own times stay in this program's
//!   table.
//! - `rust-seq`: the plain loop (push: every link adds its source's
//!   share into its target), the out-degrees counted in the timed run as
//!   ours are; bit-identical to the reference.
//! - `rust-rayon`: the pull formulation: the links grouped by target
//!   (compressed sparse rows by destination, each target's sources in link
//!   order) and the out-degrees, both built once outside the timing, as a
//!   pull PageRank stores its graph; each iteration computes the shares in
//!   parallel, the dangling sum as a parallel reduction, and each target's
//!   sum over its sources sequentially (no atomics, no write conflicts),
//!   blocks of targets in parallel.
//! - the Python peers (`peers/bench_pagerank.py`), from the links' two
//!   columns: NumPy (push: `bincount` of the shares gathered per link)
//!   and JAX (push: `segment_sum`), the out-degrees counted in the timed
//!   run as `rust-seq` does; Numba (pull: a `prange` over the targets)
//!   and SciPy (pull: the graph by target as a sparse matrix times the
//!   shares), the graph grouped by target outside the timing as
//!   `rust-rayon` has it.
//!
//! Checked against the plain-Rust reference with its per-vertex bound
//! (Note [Bounding a reordered PageRank] in `accelerate_programs::pagerank`):
//! a running error analysis over the iterations, the
//! `reassociated_sum_tolerance` of each vertex's incoming sum and of the
//! dangling sum, carried through the damping and into the next iteration.
//! The CPU backend's `permute (+)` adds a target's contributions in the
//! order its threads reach it and rayon's reduction reassociates the
//! dangling sum; every other operation is the same f32 operation. Two
//! peers differ otherwise, within the bound (their docstrings derive
//! why): NumPy's `bincount` adds in f64 and rounds each sum once, never
//! further from the exact sum than an f32 sum in some order may be; and
//! XLA fuses JAX's `base + d * t` into one multiply-add, which leaves out
//! a rounding the bound counts.
//!
//! Bytes: per iteration the links (16 bytes each), each vertex's rank and
//! out-degree read and its new rank written; once, the links for the
//! degrees. The gathers and scatters are random, so the bandwidth is not
//! compared with the triad's. Flops: a division and an addition a link
//! per iteration.

use super::{add_accelerate_variants, count, probe_compile, CompileProbe};
use crate::check::elementwise;
use crate::harness::{fresh, in_place, Bench, Size};
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::pagerank::{
    link_block, pagerank, pagerank_pull, pagerank_ref, random_links, StreamedPagerank, DAMPING,
};
use accelerate_programs::rng::SEED_A;
use rayon::prelude::*;
use std::sync::Arc;

/// Iterations of every variant.
pub const ITERS: usize = 10;

/// Links a block of the streamed form: 64 KiB of links, the scheduler
/// then taking as many blocks a chunk as pays.
pub const BLOCK: usize = 4096;

/// Vertices and links.
pub fn shape(size: Size) -> (usize, usize) {
    size.pick((300, 3000), (20_000, 200_000), (1 << 20, 1 << 24))
}

/// The plain loop, into `ranks`: the reference's operations in the same
/// order, without its bounds.
pub fn pagerank_seq(n: usize, links: &[(i64, i64)], ranks: &mut Vec<f32>) {
    let mut degrees = vec![0i64; n];
    for &(from, _) in links {
        degrees[from as usize] += 1;
    }
    let nf = n as i64 as f32;
    ranks.clear();
    ranks.resize(n, 1.0 / nf);
    let mut incoming = vec![0.0f32; n];
    for _ in 0..ITERS {
        incoming.fill(0.0);
        for &(from, to) in links {
            incoming[to as usize] += ranks[from as usize] / degrees[from as usize] as f32;
        }
        let dangling =
            ranks.iter().zip(&degrees).fold(0.0f32, |a, (&r, &d)| a + if d == 0 { r } else { 0.0 });
        let spread = dangling / nf;
        let base = (1.0f32 - DAMPING) / nf;
        for (r, &inc) in ranks.iter_mut().zip(&incoming) {
            *r = base + DAMPING * (inc + spread);
        }
    }
}

/// The graph grouped by target: `sources[offsets[v] .. offsets[v + 1]]`
/// are the sources of `v`'s in-links, in link order; and the out-degrees.
pub struct ByTarget {
    offsets: Vec<usize>,
    sources: Vec<u32>,
    degrees: Vec<u32>,
}

impl ByTarget {
    /// A stable counting sort of the links by target.
    pub fn new(n: usize, links: &[(i64, i64)]) -> ByTarget {
        let mut offsets = vec![0usize; n + 1];
        let mut degrees = vec![0u32; n];
        for &(from, to) in links {
            offsets[to as usize + 1] += 1;
            degrees[from as usize] += 1;
        }
        for v in 0..n {
            offsets[v + 1] += offsets[v];
        }
        let mut next = offsets.clone();
        let mut sources = vec![0u32; links.len()];
        for &(from, to) in links {
            sources[next[to as usize]] = from as u32;
            next[to as usize] += 1;
        }
        ByTarget { offsets, sources, degrees }
    }

    /// The graph as `pagerank_pull` takes it: the offsets, the sources
    /// and the out-degrees (vertex numbers as `i32`: fewer than 2^31).
    pub fn arrays(&self) -> (Vector<i64>, Vector<i32>, Vector<i32>) {
        (
            Vector::from_elems(self.offsets.iter().map(|&o| o as i64).collect()),
            Vector::from_elems(self.sources.iter().map(|&u| u as i32).collect()),
            Vector::from_elems(self.degrees.iter().map(|&d| d as i32).collect()),
        )
    }
}

/// Targets per rayon task: a few thousand in-links' worth of work.
const TARGETS_PER_TASK: usize = 1024;

/// Parallel, pull: see the module doc. `shares` is scratch of `n`.
pub fn pagerank_rayon(g: &ByTarget, ranks: &mut Vec<f32>, shares: &mut Vec<f32>) {
    let n = g.degrees.len();
    let nf = n as i64 as f32;
    ranks.clear();
    ranks.resize(n, 1.0 / nf);
    shares.resize(n, 0.0);
    for _ in 0..ITERS {
        shares.par_chunks_mut(TARGETS_PER_TASK).zip(ranks.par_chunks(TARGETS_PER_TASK)).enumerate().for_each(
            |(t, (s, r))| {
                let d = &g.degrees[t * TARGETS_PER_TASK..];
                for ((s, &r), &d) in s.iter_mut().zip(r).zip(d) {
                    *s = if d == 0 { 0.0 } else { r / d as f32 };
                }
            },
        );
        let dangling: f32 = ranks
            .par_chunks(TARGETS_PER_TASK)
            .zip(g.degrees.par_chunks(TARGETS_PER_TASK))
            .map(|(r, d)| r.iter().zip(d).fold(0.0f32, |a, (&r, &d)| a + if d == 0 { r } else { 0.0 }))
            .sum();
        let spread = dangling / nf;
        let base = (1.0f32 - DAMPING) / nf;
        let shares = &*shares;
        ranks.par_chunks_mut(TARGETS_PER_TASK).enumerate().for_each(|(t, rs)| {
            for (k, r) in rs.iter_mut().enumerate() {
                let v = t * TARGETS_PER_TASK + k;
                let srcs = &g.sources[g.offsets[v]..g.offsets[v + 1]];
                let inc = srcs.iter().fold(0.0f32, |a, &u| a + shares[u as usize]);
                *r = base + DAMPING * (inc + spread);
            }
        });
    }
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let (n, m) = shape(size);
    let links: Arc<Vec<(i64, i64)>> = Arc::new(random_links(n, m, SEED_A).collect());
    let (want, bound) = pagerank_ref(n, ITERS, || links.iter().copied());
    let (want, bound) = (Arc::new(want), Arc::new(bound));
    let check = move |got: &[f32]| {
        elementwise(got, &want, |v, g, w| g == w || ((g as f64 - w as f64).abs()) <= bound[v])
    };

    let mut b = Bench::new(
        "pagerank",
        format!("{} vertices, {} links (i64 pairs), {ITERS} iterations", count(n), count(m)),
    );
    b.bytes = Some((ITERS * (16 * m + (4 + 8 + 4) * n) + 16 * m) as f64);
    b.flops = Some((2 * m * ITERS) as f64);

    let args = (Vector::from_elems(links.to_vec()), Scalar::scalar(n as i64), Scalar::scalar(ITERS as i32));
    let c = check.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(pagerank, config),
        move |p| p.run((&args.0, &args.1, &args.2)),
        move |r: &Vector<f32>| c(&r.to_vec()),
    )?;

    let config = super::accelerate_configs()[0].1.clone();
    let streamed = StreamedPagerank::new(config).map_err(|e| format!("pagerank, accelerate-seq: {e}"))?;
    // the links as two columns, each block a copy of a slice of each
    let from: Arc<Vec<i64>> = Arc::new(links.iter().map(|l| l.0).collect());
    let to: Arc<Vec<i64>> = Arc::new(links.iter().map(|l| l.1).collect());
    // (the same columns are the peers' inputs)
    let columns = (from.clone(), to.clone());
    let c = check.clone();
    let pass = move || {
        let (from, to) = (from.clone(), to.clone());
        (0..m).step_by(BLOCK).map(move |lo| {
            let hi = (lo + BLOCK).min(m);
            link_block(from[lo..hi].to_vec(), to[lo..hi].to_vec())
        })
    };
    b.variant("accelerate-seq", move |s| fresh(s, || streamed.run(n, ITERS, &pass)), move |r| c(&r.to_vec()));

    let (l, c) = (links.clone(), check.clone());
    b.variant("rust-seq", move |s| Ok(in_place(s, Vec::new, |r| pagerank_seq(n, &l, r))), move |r| c(r));
    let g = ByTarget::new(n, &links);
    // ours in the pull form, on the graph grouped by target as rayon's
    // version has it (built outside the timing for both)
    let prog = accelerate::compile_with(pagerank_pull, super::accelerate_configs()[0].1.clone())
        .map_err(|e| format!("pagerank, accelerate-pull: compiling: {e}"))?;
    let (by_target, iters, c) = (g.arrays(), Scalar::scalar(ITERS as i32), check.clone());
    b.variant(
        "accelerate-pull",
        move |s| fresh(s, || prog.run((&by_target.0, &by_target.1, &by_target.2, &iters))),
        move |r: &Vector<f32>| c(&r.to_vec()),
    );
    let c = check.clone();
    b.variant(
        "rust-rayon",
        move |s| Ok(in_place(s, || (Vec::new(), Vec::new()), |(r, sh)| pagerank_rayon(&g, r, sh))),
        move |(r, _)| c(r),
    );
    peers::add(
        &mut b,
        &["numpy", "numba", "jax", "scipy"],
        &[("from.bin", peers::bytes(&columns.0)), ("to.bin", peers::bytes(&columns.1))],
        &[n.to_string(), m.to_string(), ITERS.to_string(), DAMPING.to_string()],
        peers::all::<f32>,
        move |r: &Vec<f32>| check(r),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(pagerank, config))
}

//! PageRank (the sequences thesis, §7.4): the importance of each vertex of
//! a directed graph, as the stationary distribution of a random surfer who
//! follows a random out-link with probability `d` (the damping factor) and
//! jumps to a random vertex otherwise.
//!
//! As in the thesis the graph is a list of links, pairs `(from, to)` of
//! vertex numbers. One iteration:
//!
//! 1. every link carries `rank[from] / out_degree[from]` (a `map` that
//!    reads the ranks and degrees);
//! 2. those contributions are added into their target vertices with
//!    `permute (+)`;
//! 3. the rank of the dangling vertices (no out-links) is spread evenly
//!    (a `fold` over the vertices), and the damping term is added:
//!    `new[v] = (1 - d) / n + d * (incoming[v] + dangling / n)`.
//!
//! The out-degrees are themselves a `permute (+)` of ones into the source
//! vertices.
//!
//! Two forms of the same computation:
//!
//! - **flat** ([`pagerank`]): the links are one array in memory; the
//!   iterations run inside the program, in an `awhile` loop over the pair
//!   (ranks, iteration count), so the whole computation is one `Program`.
//! - **streamed** ([`StreamedPagerank`], the thesis' reason for the
//!   program): the ranks (`n` vertices) stay in memory, the links do not.
//!   Every pass over the links is a sequence (`stream_in`) of blocks of
//!   links pulled from a Rust iterator that makes or reads them, consumed
//!   by `fold_batch` into a vector of `n` sums: a chunk's step is the
//!   `permute (+)` of its links' contributions into the sums so far
//!   ([`incoming_seq`]; the out-degrees likewise, [`out_degrees_seq`]).
//!   Steps 1 and 3 are per vertex and in memory: each vertex's share
//!   `rank / out_degree` is computed once per iteration ([`shares`]), so a
//!   link's contribution is a gather of its source's share (the same f32
//!   division as step 1's, so the same value). The iterations are a Rust
//!   loop around the sequence: one sequence run per iteration, with the
//!   shares of the previous iteration as an array of the fold's step
//!   (a `use_array`, which costs the chunk program nothing).
//!
//! Both add the same f32 values; only the order in which `permute`
//! combines them into a target may differ between backends (and, for the
//! streamed form, how the links are cut into chunks does not change it:
//! the sums carry from chunk to chunk). [`pagerank_ref`] is the plain-Rust
//! reference in the interpreter's order, with a bound on how far any other
//! order can move each rank (Note [Bounding a reordered PageRank]).
//!
//! Used by `examples/pagerank.rs` and the `pagerank` benchmarks.

use crate::rng::Rng;
use crate::rounding::{gamma, U};
use accelerate::array::{ArrayData, ArraysVal, Buffer};
use accelerate::prelude::*;
use accelerate::{run_seq_with, Config, Program};
use std::sync::Arc;

/// The damping factor.
pub const DAMPING: f32 = 0.85;

/// Each vertex's number of out-links: a histogram by `permute (+)`.
pub fn out_degrees(links: &Acc<Vector<(i64, i64)>>, vertices: &Exp<DIM1>) -> Acc<Vector<i64>> {
    let ones = links.map(|_| constant(1i64));
    ones.permute(|a, b| a + b, fill(vertices, 0i64), |ix| just(index1(links.index(ix).fst())))
}

/// Step 3 of an iteration: the new ranks from the incoming sums, the
/// dangling vertices' rank spread over every vertex, and the damping term.
pub fn finish(
    incoming: Acc<Vector<f32>>,
    degrees: &Acc<Vector<i64>>,
    ranks: &Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    let n = ranks.size().cast::<f32>();
    let dangling = ranks.zip_with(degrees, |r, d| d.eq(0i64).select(r, 0.0f32)).fold(0.0f32, |a, b| a + b);
    let spread = the(dangling) / &n;
    let base = (1.0f32 - DAMPING) / n;
    incoming.map(|inc| base + DAMPING * (inc + spread))
}

/// One PageRank iteration over the links in memory.
pub fn step(
    links: Acc<Vector<(i64, i64)>>,
    degrees: Acc<Vector<i64>>,
    ranks: Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    // 1. what every link carries to its target
    let contributions = links.map(|l| {
        let from = index1(l.fst());
        ranks.index(&from) / degrees.index(&from).cast::<f32>()
    });
    // 2. summed into the target vertices
    let incoming = contributions.permute(
        |new, old| new + old,
        fill(ranks.shape(), 0.0f32),
        |ix| just(index1(links.index(ix).snd())),
    );
    finish(incoming, &degrees, &ranks)
}

/// `iters` iterations from the uniform distribution, in an `awhile` loop:
/// the flat form.
pub fn pagerank(
    links: Acc<Vector<(i64, i64)>>,
    vertices: Acc<Scalar<i64>>,
    iters: Acc<Scalar<i32>>,
) -> Acc<Vector<f32>> {
    let shape = index1(the(&vertices));
    let degrees = out_degrees(&links, &shape);
    let n = the(vertices).cast::<f32>();
    iterate(fill(shape, 1.0f32 / n), iters, move |ranks| step(links, degrees, ranks))
}

/// `iters` applications of `step` to `ranks`, in an `awhile` loop.
fn iterate(
    ranks: Acc<Vector<f32>>,
    iters: Acc<Scalar<i32>>,
    step: impl FnOnce(Acc<Vector<f32>>) -> Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    let result = awhile(
        move |s: Acc<(Vector<f32>, Scalar<i32>)>| {
            let (_, i) = s.unlift();
            unit(the(i).lt(the(iters)))
        },
        move |s| {
            let (ranks, i) = s.unlift();
            lift_acc((step(ranks), unit(the(i) + 1)))
        },
        lift_acc((ranks, unit(0i32))),
    );
    result.unlift().0
}

// ---------------------------------------------------------------------------
// The pull form

/// `iters` iterations over the graph grouped by target, as a pull
/// PageRank stores it: the in-links of vertex `v` come from
/// `sources[offsets[v] .. offsets[v + 1]]` (a CSR row pointer of `n + 1`
/// offsets), and `degrees` holds every vertex's out-degree. Each
/// iteration gathers every in-link's share and sums each target's with a
/// segmented fold (the gather fused into it): no two links write one
/// place, where the flat form's `permute (+)` sends every link to its
/// target.
pub fn pagerank_pull(
    offsets: Acc<Vector<i64>>,
    sources: Acc<Vector<i32>>,
    degrees: Acc<Vector<i32>>,
    iters: Acc<Scalar<i32>>,
) -> Acc<Vector<f32>> {
    let degrees = degrees.map(|d| d.cast::<i64>());
    let n = degrees.size().cast::<f32>();
    iterate(fill(degrees.shape(), 1.0f32 / n), iters, move |ranks| {
        let given = shares(&ranks, &degrees);
        // (read by index, not `gather`: a backpermute would fuse the
        // shares into every link's read, a division a link instead of a
        // vertex, which took 240 ms where this takes 110 to 130)
        let incoming = generate(sources.shape(), |ix| given.index(index1(sources.index(ix).cast::<i64>())))
            .fold_seg_offsets(0.0f32, |a, b| a + b, &offsets);
        finish(incoming, &degrees, &ranks)
    })
}

// ---------------------------------------------------------------------------
// The streamed form

/// A pass over the links: a sequence of blocks of links.
pub type LinkBlocks = Seq<Vector<(i64, i64)>>;

/// What each vertex gives each of its out-links: `rank / out_degree`
/// (step 1's division, per vertex instead of per link; 0 for a dangling
/// vertex, which no link reads).
pub fn shares(ranks: &Acc<Vector<f32>>, degrees: &Acc<Vector<i64>>) -> Acc<Vector<f32>> {
    ranks.zip_with(degrees, |r, d| d.eq(0i64).select(0.0f32, r / d.cast::<f32>()))
}

/// The out-degrees of `vertices` vertices from one pass over the links:
/// each chunk's ones added into the counts so far with `permute (+)`.
pub fn out_degrees_seq(links: &LinkBlocks, vertices: i64) -> Consumed<Vector<i64>> {
    links.fold_batch(fill(index1(vertices), 0i64), |degrees, _extents, block| {
        let ones = block.map(|_| constant(1i64));
        ones.permute(|a, b| a + b, degrees, |ix| just(index1(block.index(ix).fst())))
    })
}

/// Step 2 from one pass over the links: each chunk's contributions (the
/// share of each link's source) added into the incoming sums so far with
/// `permute (+)`, from zeros.
pub fn incoming_seq(links: &LinkBlocks, shares: Acc<Vector<f32>>) -> Consumed<Vector<f32>> {
    let zeros = fill(shares.shape(), 0.0f32);
    links.fold_batch(zeros, move |incoming, _extents, block| {
        let contributions = block.map(|l| shares.index(index1(l.fst())));
        contributions.permute(|new, old| new + old, incoming, |ix| just(index1(block.index(ix).snd())))
    })
}

/// The uniform start and its shares.
pub fn initial(degrees: Acc<Vector<i64>>) -> Acc<(Vector<f32>, Vector<f32>)> {
    let n = degrees.size().cast::<f32>();
    let ranks = fill(degrees.shape(), 1.0f32 / n);
    let s = shares(&ranks, &degrees);
    lift_acc((ranks, s))
}

/// Step 3 and the next iteration's shares.
pub fn update(
    incoming: Acc<Vector<f32>>,
    degrees: Acc<Vector<i64>>,
    ranks: Acc<Vector<f32>>,
) -> Acc<(Vector<f32>, Vector<f32>)> {
    let next = finish(incoming, &degrees, &ranks);
    let s = shares(&next, &degrees);
    lift_acc((next, s))
}

/// The ranks and their shares.
type Ranked = (Vector<f32>, Vector<f32>);
/// `update`'s arguments: the incoming sums, the degrees, the ranks.
type UpdateArgs = (Vector<f32>, Vector<i64>, Vector<f32>);

/// The streamed form: the per-vertex programs compiled once, the passes
/// over the links run as sequences (compiled at each run; their kernels
/// come from the kernel cache after the first).
pub struct StreamedPagerank {
    config: Config,
    initial: Program<(Vector<i64>,), Ranked>,
    update: Program<UpdateArgs, Ranked>,
}

impl StreamedPagerank {
    pub fn new(config: Config) -> accelerate::Result<StreamedPagerank> {
        let initial = accelerate::compile_with(initial, config.clone())?;
        let update = accelerate::compile_with(update, config.clone())?;
        Ok(StreamedPagerank { config, initial, update })
    }

    /// `iters` iterations over a graph of `vertices` vertices whose links
    /// `pass()` streams, once for the out-degrees and once per iteration.
    pub fn run<I>(
        &self,
        vertices: usize,
        iters: usize,
        mut pass: impl FnMut() -> I,
    ) -> accelerate::Result<Vector<f32>>
    where
        I: Iterator<Item = Vector<(i64, i64)>> + Send + 'static,
    {
        let degrees = run_seq_with(&out_degrees_seq(&stream_in(pass()), vertices as i64), &self.config)?;
        let (mut ranks, mut s) = self.initial.run(&degrees)?;
        for _ in 0..iters {
            let incoming = run_seq_with(&incoming_seq(&stream_in(pass()), use_array(s)), &self.config)?;
            (ranks, s) = self.update.run((&incoming, &degrees, &ranks))?;
        }
        Ok(ranks)
    }
}

/// The links in blocks of `block` (the last may be shorter): the elements
/// of a streamed pass.
pub fn blocks(
    links: impl Iterator<Item = (i64, i64)>,
    block: usize,
) -> impl Iterator<Item = Vector<(i64, i64)>> {
    let block = block.max(1);
    let mut links = links.peekable();
    std::iter::from_fn(move || {
        links.peek()?;
        let (from, to) = links.by_ref().take(block).unzip();
        Some(link_block(from, to))
    })
}

/// A block of links from its two columns, moved in as the array's buffers
/// (a vector of pairs is stored as a pair of vectors). `Vector::from_elems`
/// of pairs converts each pair to a boxed value first (`Elt::into_buffers`
/// for tuples), several times the cost of the chunk's computation here.
pub fn link_block(from: Vec<i64>, to: Vec<i64>) -> Vector<(i64, i64)> {
    assert_eq!(from.len(), to.len(), "a link's two ends");
    let shape = vec![from.len()];
    let data = ArrayData::from_buffers(
        shape,
        <(i64, i64)>::elt_ty(),
        vec![Buffer::I64(from.into()), Buffer::I64(to.into())],
    )
    .expect("two i64 buffers of one length are a vector of pairs");
    Vector::from_arrays_val(ArraysVal::Array(Arc::new(data))).expect("an array of its own type")
}

// ---------------------------------------------------------------------------
// The graph

/// A random graph's links, made one at a time (so that a pass over a graph
/// larger than memory needs none of it stored): `m` links among `n`
/// vertices. Every tenth vertex has no out-links (it is dangling); the
/// sources are uniform over the others; the target is `floor(a^2 / n)`
/// for `a` uniform in `0 .. n`, so vertex `t` is a target with probability
/// about `1 / (2 sqrt(t n))`: in-degrees fall off as a power of the vertex
/// number, a few vertices much more popular than the rest (vertex 0 takes
/// about `m / sqrt(n)` links).
#[derive(Clone, Debug)]
pub struct RandomLinks {
    rng: Rng,
    n: usize,
    left: usize,
}

/// The `m` links of the random graph on `n` vertices drawn from `seed`
/// (none for fewer than two vertices: the one vertex is dangling).
pub fn random_links(n: usize, m: usize, seed: u64) -> RandomLinks {
    RandomLinks { rng: Rng::new(seed), n, left: if n < 2 { 0 } else { m } }
}

impl Iterator for RandomLinks {
    type Item = (i64, i64);

    fn next(&mut self) -> Option<(i64, i64)> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        let from = loop {
            let v = self.rng.below(self.n);
            if v % 10 != 0 {
                break v;
            }
        };
        let a = self.rng.below(self.n) as u64;
        let to = a * a / self.n as u64;
        Some((from as i64, to as i64))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left))
    }
}

// ---------------------------------------------------------------------------
// The reference

/// A bound on `|fl(a) - fl(b)|`, one rounding of two values with
/// `|a - b| <= diff`, where `b` is `exact`: rounding to nearest is
/// monotone and moves each by at most `u` of itself, so the difference
/// grows by at most `u * (|a| + |b|) <= u * (2 * |exact| + diff)`, and not
/// at all when the two are equal.
fn rounded(diff: f64, exact: f64) -> f64 {
    if diff == 0.0 {
        0.0
    } else {
        diff + U * (2.0 * exact.abs() + diff)
    }
}

/// PageRank in plain Rust, in the interpreter's order, with for every
/// vertex a bound on how far ranks computed with the sums in another order
/// can be from these. `pass()` gives the links, once for the degrees and
/// once per iteration (a slice's `iter().copied()`, or [`random_links`]
/// again, so that the reference of a graph larger than memory needs only
/// `O(n)`). See Note [Bounding a reordered PageRank].
pub fn pagerank_ref<I: Iterator<Item = (i64, i64)>>(
    n: usize,
    iters: usize,
    mut pass: impl FnMut() -> I,
) -> (Vec<f32>, Vec<f64>) {
    let mut degrees = vec![0i64; n];
    let mut in_degrees = vec![0usize; n];
    for (from, to) in pass() {
        degrees[from as usize] += 1;
        in_degrees[to as usize] += 1;
    }
    let dangling_vertices = degrees.iter().filter(|&&d| d == 0).count();
    let nf = n as i64 as f32;
    let damping = DAMPING as f64;
    let mut ranks = vec![1.0f32 / nf; n];
    let mut bound = vec![0.0f64; n];
    let mut incoming = vec![0.0f32; n];
    // per target: the sum of |contribution| and of the contributions' bounds
    let mut incoming_abs = vec![0.0f64; n];
    let mut incoming_diff = vec![0.0f64; n];
    for _ in 0..iters {
        incoming.fill(0.0);
        incoming_abs.fill(0.0);
        incoming_diff.fill(0.0);
        for (from, to) in pass() {
            let (from, to) = (from as usize, to as usize);
            let degree = degrees[from] as f32;
            let c = ranks[from] / degree;
            incoming[to] += c;
            incoming_abs[to] += (c as f64).abs();
            incoming_diff[to] += rounded(bound[from] / degree as f64, ranks[from] as f64 / degree as f64);
        }
        let dangling =
            ranks.iter().zip(&degrees).fold(0.0f32, |a, (&r, &d)| a + if d == 0 { r } else { 0.0 });
        let (dangling_abs, dangling_diff) = ranks
            .iter()
            .zip(&bound)
            .zip(&degrees)
            .filter(|&(_, &d)| d == 0)
            .fold((0.0f64, 0.0f64), |(a, e), ((&r, &b), _)| (a + (r as f64).abs(), e + b));
        let dangling_diff =
            dangling_diff + gamma(dangling_vertices.saturating_sub(1)) * (2.0 * dangling_abs + dangling_diff);
        let spread = dangling / nf;
        let spread_diff = rounded(dangling_diff / nf as f64, dangling as f64 / nf as f64);
        let base = (1.0f32 - DAMPING) / nf;
        for v in 0..n {
            let (inc, abs, diff) = (incoming[v], incoming_abs[v], incoming_diff[v]);
            let inc_diff = diff + gamma(in_degrees[v].saturating_sub(1)) * (2.0 * abs + diff);
            let t = inc + spread;
            let t_diff = rounded(inc_diff + spread_diff, inc as f64 + spread as f64);
            let w_diff = rounded(damping * t_diff, damping * t as f64);
            let w = DAMPING * t;
            bound[v] = rounded(w_diff, base as f64 + w as f64);
            ranks[v] = base + w;
        }
    }
    (ranks, bound)
}

// Note [Bounding a reordered PageRank]
// The reference adds the contributions into their targets in link order,
// as the interpreter's `permute` applies them (in row-major order of the
// source, each as `new + old`; f32 addition is commutative, so `old +
// new` is the same; the streamed form's chunks continue from the sums so
// far, so they keep that order), and sums the dangling rank left to right
// over the vertices, as `fold` does: with the interpreter the ranks are
// bit-identical. `permute`'s combiner is taken to be associative and
// commutative and `fold`'s associative (`docs/semantics.md`), so another
// backend may add in another order (the CPU backend adds with atomics in
// whatever order its threads reach a target, and folds with interleaved
// accumulators); every other operation is the same f32 operation as here.
//
// The bound is a running error analysis (Higham §3.3) of the difference
// between the two, carried alongside the reference: `bound[v]` is at
// least `|other[v] - ranks[v]|` after each iteration, starting from 0
// (both start from the same `1/n`). Through one iteration:
//
// - a contribution `c = rank[from] / degree[from]` differs by the
//   difference of the ranks over the degree, plus one rounding
//   (`rounded`), none when the ranks were equal;
// - an incoming sum of `m` contributions (`m` the in-degree; the first
//   addition to the 0 it starts from is exact) is, in any order, within
//   `gamma_{m-1} * sum |c|` of the exact sum of its own contributions, so
//   two sums differ by at most the sum of the contributions' differences
//   plus `gamma_{m-1}` times the sum of both sides' `|c|` (the other
//   side's bounded by this side's plus the difference). This is the
//   benchmarks' `reassociated_sum_tolerance` (about `m * eps * sum |c|`),
//   applied to each sum of each iteration instead of once to the result;
// - the dangling sum is the same over the ranks of the `k` dangling
//   vertices (the other vertices add an exact 0, so no term meets more
//   than `k - 1` inexact additions): `gamma_{k-1}`;
// - `/ n`, `inc + spread`, `* d` and `base +` each add one rounding to
//   the difference of their operands, scaled by `d` for the product.
//
// A difference made in one iteration flows along the links in the next
// ones, as rank does, damped by `d`: summed over the vertices, the bound
// after any number of iterations is about `1 / (1 - d)` (6.7) times what
// one iteration adds. The bound itself is computed in f64, whose rounding
// is a relative 1e-16 of it.
//
// A real error stands out: a link dropped, or counted twice, in the last
// iteration moves its target by `d * c`, while reordering moves a sum of
// `m` contributions by at most about `m * eps * m * c` for contributions
// of similar size: the link is visible while `m` is below about
// `1 / sqrt(eps)`, some 2900 in-links (the default graphs' most popular
// vertex has a few hundred), and an error in an earlier iteration spreads
// from there; a wrong damping or dangling term moves every rank by far
// more. Only with in-degrees in the thousands can one link hide, because
// reordering a sum that long may in the worst case move it by as much.

#[cfg(test)]
mod tests {
    use super::*;

    fn interpreter() -> Config {
        Config::default().with_backend(accelerate::Backend::Interpreter)
    }

    fn flat(n: usize, links: &[(i64, i64)], iters: i32, config: Config) -> Vec<f32> {
        let prog = accelerate::compile_with(pagerank, config).unwrap();
        let links = Vector::from_elems(links.to_vec());
        prog.run((&links, &Scalar::scalar(n as i64), &Scalar::scalar(iters))).unwrap().to_vec()
    }

    fn streamed(n: usize, links: &[(i64, i64)], iters: usize, block: usize, config: Config) -> Vec<f32> {
        let p = StreamedPagerank::new(config).unwrap();
        let links = links.to_vec();
        p.run(n, iters, || blocks(links.clone().into_iter(), block)).unwrap().to_vec()
    }

    fn within_bound(got: &[f32], want: &[f32], bound: &[f64]) -> bool {
        got.len() == want.len()
            && got
                .iter()
                .zip(want)
                .zip(bound)
                .all(|((&g, &w), &b)| g == w || (g as f64 - w as f64).abs() <= b)
    }

    #[test]
    fn both_forms_on_the_interpreter_are_bit_identical_to_the_reference() {
        let (n, iters) = (60, 6);
        let links: Vec<_> = random_links(n, 400, 7).collect();
        let (want, _) = pagerank_ref(n, iters, || links.iter().copied());
        assert_eq!(flat(n, &links, iters as i32, interpreter()), want);
        for block in [1, 7, 64, 1000] {
            assert_eq!(streamed(n, &links, iters, block, interpreter()), want, "blocks of {block}");
        }
    }

    #[test]
    fn both_forms_on_the_default_backend_are_within_the_bound() {
        let (n, iters) = (500, 8);
        let links: Vec<_> = random_links(n, 5000, 11).collect();
        let (want, bound) = pagerank_ref(n, iters, || links.iter().copied());
        let config = Config::from_env().unwrap();
        assert!(within_bound(&flat(n, &links, iters as i32, config.clone()), &want, &bound));
        assert!(within_bound(&streamed(n, &links, iters, 300, config), &want, &bound));
    }

    #[test]
    fn the_bound_rejects_a_dropped_link() {
        let (n, iters) = (500, 8);
        let links: Vec<_> = random_links(n, 5000, 11).collect();
        let (want, bound) = pagerank_ref(n, iters, || links.iter().copied());
        // the same graph without its last link: the two results differ
        // by more than reordering can explain
        let (fewer, _) = pagerank_ref(n, iters, || links[..links.len() - 1].iter().copied());
        assert!(!within_bound(&fewer, &want, &bound));
    }

    #[test]
    fn the_generator_makes_dangling_vertices_and_a_popular_one() {
        let n = 1000;
        let links: Vec<_> = random_links(n, 20_000, 3).collect();
        assert_eq!(links.len(), 20_000);
        assert!(links
            .iter()
            .all(|&(f, t)| f % 10 != 0 && (0..n as i64).contains(&f) && (0..n as i64).contains(&t)));
        let zeros = links.iter().filter(|&&(_, t)| t == 0).count();
        // vertex 0 is the target with probability about 1 / sqrt(n)
        assert!((400..900).contains(&zeros), "{zeros} links into vertex 0");
        assert_eq!(random_links(1, 10, 3).count(), 0);
    }

    #[test]
    fn blocks_cut_the_links_in_order() {
        let links: Vec<(i64, i64)> = (0..10).map(|i| (i, i + 1)).collect();
        let cut: Vec<Vec<(i64, i64)>> = blocks(links.iter().copied(), 4).map(|b| b.to_vec()).collect();
        assert_eq!(cut.iter().map(Vec::len).collect::<Vec<_>>(), vec![4, 4, 2]);
        assert_eq!(cut.concat(), links);
        assert_eq!(blocks(std::iter::empty(), 4).count(), 0);
        let first = blocks(links.iter().copied(), 4).next().unwrap();
        assert_eq!(first, Vector::from_elems(links[..4].to_vec()));
    }
}

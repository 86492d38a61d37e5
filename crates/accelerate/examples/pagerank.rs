//! PageRank (the sequences thesis, §7.4): the importance of each vertex of
//! a directed graph, as the stationary distribution of a random surfer who
//! follows a random out-link with probability `d` (the damping factor) and
//! jumps to a random vertex otherwise.
//!
//! ```sh
//! cargo run --release --example pagerank -- --check                          # compare with plain Rust
//! cargo run --release --example pagerank -- --vertices 10000 --edges 100000 --iters 30
//! ```
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
//! vertices. The iterations run inside the program, in an `awhile` loop
//! over the pair (ranks, iteration count); the whole computation is
//! converted once with `accelerate::compile`.

use accelerate::prelude::*;
use accelerate_programs::rng::{Rng, SEED_A};
use std::process::exit;
use std::time::Instant;

/// The damping factor.
const DAMPING: f32 = 0.85;

/// Each vertex's number of out-links: a histogram by `permute (+)`.
fn out_degrees(links: &Acc<Vector<(i64, i64)>>, vertices: &Exp<DIM1>) -> Acc<Vector<i64>> {
    let ones = links.map(|_| constant(1i64));
    ones.permute(|a, b| a + b, fill(vertices, 0i64), |ix| just(index1(links.index(ix).fst())))
}

/// One PageRank iteration.
fn step(
    links: Acc<Vector<(i64, i64)>>,
    degrees: Acc<Vector<i64>>,
    ranks: Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    let n = ranks.size().cast::<f32>();
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
    // 3. the dangling vertices' rank, spread over every vertex
    let dangling = ranks.zip_with(degrees, |r, d| d.eq(0i64).select(r, 0.0f32)).fold(0.0f32, |a, b| a + b);
    let spread = the(dangling) / &n;
    let base = (1.0f32 - DAMPING) / n;
    incoming.map(|inc| base + DAMPING * (inc + spread))
}

/// `iters` iterations from the uniform distribution, in an `awhile` loop.
fn pagerank(
    links: Acc<Vector<(i64, i64)>>,
    vertices: Acc<Scalar<i64>>,
    iters: Acc<Scalar<i32>>,
) -> Acc<Vector<f32>> {
    let shape = index1(the(&vertices));
    let degrees = out_degrees(&links, &shape);
    let n = the(vertices).cast::<f32>();
    let init = lift_acc((fill(shape, 1.0f32 / n), unit(0i32)));
    let result = awhile(
        move |s: Acc<(Vector<f32>, Scalar<i32>)>| {
            let (_, i) = s.unlift();
            unit(the(i).lt(the(iters)))
        },
        move |s| {
            let (ranks, i) = s.unlift();
            lift_acc((step(links, degrees, ranks), unit(the(i) + 1)))
        },
        init,
    );
    result.unlift().0
}

/// The unit roundoff of f32, and Higham's `gamma_k = k*u / (1 - k*u)`: a
/// sum of `k + 1` terms computed in any order is within
/// `gamma_k * sum |terms|` of the exact sum ("Accuracy and Stability of
/// Numerical Algorithms", §3.1, (3.5)).
const U: f64 = f32::EPSILON as f64 / 2.0;

fn gamma(k: usize) -> f64 {
    k as f64 * U / (1.0 - k as f64 * U)
}

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

/// The same iterations in plain Rust, in the same order, with for every
/// vertex a bound on how far ranks computed with the sums in another order
/// can be from these.
///
/// The contributions are added into their targets in link order, as the
/// interpreter's `permute` applies them (in row-major order of the
/// source, each as `new + old`; f32 addition is commutative, so
/// `old + new` is the same), and the dangling rank is summed left to
/// right over the vertices, as `fold` does: with the interpreter the
/// ranks are bit-identical. `permute`'s combiner is taken to be
/// associative and commutative and `fold`'s associative
/// (`docs/semantics.md`), so another backend may add in another order (the
/// CPU backend adds with atomics in whatever order its threads reach a
/// target, and folds with interleaved accumulators); every other operation
/// is the same f32 operation as here.
///
/// The bound is a running error analysis (Higham §3.3) of the difference
/// between the two, carried alongside the reference: `bound[v]` is at
/// least `|other[v] - ranks[v]|` after each iteration, starting from 0
/// (both start from the same `1/n`). Through one iteration:
///
/// - a contribution `c = rank[from] / degree[from]` differs by the
///   difference of the ranks over the degree, plus one rounding
///   (`rounded`), none when the ranks were equal;
/// - an incoming sum of `m` contributions (`m` the in-degree; the first
///   addition to the 0 it starts from is exact) is, in any order, within
///   `gamma_{m-1} * sum |c|` of the exact sum of its own contributions, so
///   two sums differ by at most the sum of the contributions' differences
///   plus `gamma_{m-1}` times the sum of both sides' `|c|` (the other
///   side's bounded by this side's plus the difference). Relative to the
///   sum of the sizes of the terms, as for `dotp`, not to the result;
/// - the dangling sum is the same over the ranks of the `k` dangling
///   vertices (the other vertices add an exact 0, so no term meets more
///   than `k - 1` inexact additions): `gamma_{k-1}`;
/// - `/ n`, `inc + spread`, `* d` and `base +` each add one rounding to
///   the difference of their operands, scaled by `d` for the product.
///
/// A difference made in one iteration flows along the links in the next
/// ones, as rank does, damped by `d`: summed over the vertices, the bound
/// after any number of iterations is about `1 / (1 - d)` (6.7) times what
/// one iteration adds (on the default graph 6.8e-6 after one iteration,
/// 4.5e-5 after 20). The bound itself is computed in f64, whose rounding
/// is a relative 1e-16 of it.
///
/// A real error stands out: a link dropped or added with the wrong sign in
/// the last iteration moves its target by `d * c`, which on the default
/// graph (at most 67 in-links to a vertex) is at least 30 times the
/// target's bound, and an error in an earlier iteration spreads from
/// there; a wrong damping or dangling term moves every rank by far more.
/// Only with in-degrees in the thousands can one link hide, because
/// reordering a sum that long may in the worst case move it by as much.
fn pagerank_ref(n: usize, links: &[(i64, i64)], iters: i32) -> (Vec<f32>, Vec<f64>) {
    let mut degrees = vec![0i64; n];
    let mut in_degrees = vec![0usize; n];
    for &(from, to) in links {
        degrees[from as usize] += 1;
        in_degrees[to as usize] += 1;
    }
    let dangling_vertices = degrees.iter().filter(|&&d| d == 0).count();
    let nf = n as i64 as f32;
    let damping = DAMPING as f64;
    let mut ranks = vec![1.0f32 / nf; n];
    let mut bound = vec![0.0f64; n];
    for _ in 0..iters {
        let mut incoming = vec![0.0f32; n];
        // per target: the sum of |contribution| and of the contributions' bounds
        let mut incoming_abs = vec![0.0f64; n];
        let mut incoming_diff = vec![0.0f64; n];
        for &(from, to) in links {
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

/// A random graph: every tenth vertex has no out-links (it is dangling);
/// the targets favour low vertex numbers (the target is drawn below a
/// random bound), so that some vertices are much more popular than others.
fn random_links(n: usize, m: usize, seed: u64) -> Vec<(i64, i64)> {
    let mut rng = Rng::new(seed);
    let mut links = Vec::with_capacity(m);
    if n < 2 {
        return links;
    }
    while links.len() < m {
        let from = rng.below(n);
        if from % 10 == 0 {
            continue;
        }
        let bound = 1 + rng.below(n);
        let to = rng.below(bound);
        links.push((from as i64, to as i64));
    }
    links
}

struct Args {
    vertices: usize,
    edges: usize,
    iters: i32,
    check: bool,
}

fn usage() -> ! {
    eprintln!("usage: pagerank [--check] [--vertices N] [--edges M] [--iters K]");
    exit(2)
}

fn parse_args() -> Args {
    let mut args = Args { vertices: 5_000, edges: 40_000, iters: 20, check: false };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        let mut number = || it.next().and_then(|s| s.parse::<usize>().ok()).unwrap_or_else(|| usage());
        match a.as_str() {
            "--check" => args.check = true,
            "--vertices" | "--size" | "-n" => args.vertices = number(),
            "--edges" | "-m" => args.edges = number(),
            "--iters" => args.iters = i32::try_from(number()).unwrap_or_else(|_| usage()),
            "--help" | "-h" => usage(),
            _ => {
                eprintln!("pagerank: unknown argument {a:?}");
                usage()
            }
        }
    }
    if args.vertices < 2 {
        eprintln!("pagerank: the graph needs at least two vertices");
        usage()
    }
    args
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { vertices: n, edges: m, iters, check } = parse_args();
    let links_host = random_links(n, m, SEED_A);
    let links = Vector::from_elems(links_host.clone());

    let t = Instant::now();
    let prog = accelerate::compile(pagerank)?;
    let t_compile = t.elapsed();
    let t = Instant::now();
    let ranks = prog.run((&links, &Scalar::scalar(n as i64), &Scalar::scalar(iters)))?.to_vec();
    let t_run = t.elapsed();

    let dangling = {
        let mut has_out = vec![false; n];
        links_host.iter().for_each(|&(f, _)| has_out[f as usize] = true);
        has_out.iter().filter(|&&h| !h).count()
    };
    println!(
        "pagerank: {n} vertices ({dangling} dangling), {m} links, {iters} iterations, damping {DAMPING}"
    );
    println!("  accelerate::compile  {:>9.2} ms", t_compile.as_secs_f64() * 1e3);
    println!(
        "  Program::run         {:>9.2} ms  ({:.3} µs per link per iteration)",
        t_run.as_secs_f64() * 1e3,
        t_run.as_secs_f64() * 1e6 / (m.max(1) as f64 * iters.max(1) as f64)
    );
    let mut top: Vec<(usize, f32)> = ranks.iter().copied().enumerate().collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1));
    let shown: Vec<String> = top.iter().take(5).map(|(v, r)| format!("{v}: {r:.5}")).collect();
    println!(
        "  total rank {:.6}; highest: {}",
        ranks.iter().map(|&r| r as f64).sum::<f64>(),
        shown.join(", ")
    );

    if check {
        let t = Instant::now();
        let (want, bound) = pagerank_ref(n, &links_host, iters);
        let t_ref = t.elapsed();
        let mut bad = ranks.len().abs_diff(want.len());
        let (mut exact, mut worst) = (0, 0.0f64);
        for (v, ((&g, &w), &b)) in ranks.iter().zip(&want).zip(&bound).enumerate() {
            let diff = (g as f64 - w as f64).abs();
            if g.to_bits() == w.to_bits() {
                exact += 1;
            } else if diff <= b {
                worst = worst.max(diff / b);
            } else {
                if bad < 10 {
                    eprintln!(
                        "check: MISMATCH at vertex {v}: got {g}, plain Rust gives {w}; |difference| {diff:e} > bound {b:e}"
                    );
                }
                bad += 1;
            }
        }
        if bad > 0 {
            eprintln!("check: {bad} of {n} ranks differ from the plain-Rust reference by more than reassociation can");
            exit(1);
        }
        println!(
            "check: all {n} ranks match the plain-Rust reference ({:.2} ms); {exact} bit-identical; \
             largest difference {worst:.3} of its bound",
            t_ref.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

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
use std::process::exit;
use std::time::Instant;

/// The damping factor.
const DAMPING: f32 = 0.85;

/// Each vertex's number of out-links: a histogram by `permute (+)`.
fn out_degrees(links: Acc<Vector<(i64, i64)>>, vertices: Exp<DIM1>) -> Acc<Vector<i64>> {
    let ones = links.map(|_| constant(1i64));
    ones.permute(|a, b| a + b, fill(vertices, 0i64), move |ix| just(index1(links.index(ix).fst())))
}

/// One PageRank iteration.
fn step(
    links: Acc<Vector<(i64, i64)>>,
    degrees: Acc<Vector<i64>>,
    ranks: Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    let n = ranks.size().cast::<f32>();
    // 1. what every link carries to its target
    let contributions = links.map(move |l| {
        let from = index1(l.fst());
        ranks.index(from) / degrees.index(from).cast::<f32>()
    });
    // 2. summed into the target vertices
    let incoming = contributions.permute(
        |new, old| new + old,
        fill(ranks.shape(), 0.0f32),
        move |ix| just(index1(links.index(ix).snd())),
    );
    // 3. the dangling vertices' rank, spread over every vertex
    let dangling = ranks.zip_with(degrees, |r, d| d.eq(0i64).select(r, 0.0f32)).fold(0.0f32, |a, b| a + b);
    let spread = the(dangling) / n;
    let base = (1.0f32 - DAMPING) / n;
    incoming.map(move |inc| base + DAMPING * (inc + spread))
}

/// `iters` iterations from the uniform distribution, in an `awhile` loop.
fn pagerank(
    links: Acc<Vector<(i64, i64)>>,
    vertices: Acc<Scalar<i64>>,
    iters: Acc<Scalar<i32>>,
) -> Acc<Vector<f32>> {
    let shape = index1(the(vertices));
    let degrees = out_degrees(links, shape);
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

/// The same iterations in plain Rust, in the same order: the contributions
/// are added into their targets in link order, as the interpreter's
/// `permute` applies them (in row-major order of the source, each as
/// `new + old`; f32 addition is commutative, so `old + new` is the same),
/// and the dangling rank is summed left to right over the vertices, as
/// `fold` does. The results are therefore bit-identical. (`permute`'s
/// combiner is taken to be associative and commutative, so a parallel
/// backend may add in another order: an incoming sum of k terms may then
/// differ by about k * eps * (sum of the terms), Higham §3.1.)
fn pagerank_ref(n: usize, links: &[(i64, i64)], iters: i32) -> Vec<f32> {
    let mut degrees = vec![0i64; n];
    for &(from, _) in links {
        degrees[from as usize] += 1;
    }
    let nf = n as i64 as f32;
    let mut ranks = vec![1.0f32 / nf; n];
    for _ in 0..iters {
        let mut incoming = vec![0.0f32; n];
        for &(from, to) in links {
            let c = ranks[from as usize] / degrees[from as usize] as f32;
            incoming[to as usize] += c;
        }
        let dangling =
            ranks.iter().zip(&degrees).fold(0.0f32, |a, (&r, &d)| a + if d == 0 { r } else { 0.0 });
        let spread = dangling / nf;
        let base = (1.0f32 - DAMPING) / nf;
        ranks = incoming.iter().map(|&inc| base + DAMPING * (inc + spread)).collect();
    }
    ranks
}

/// Deterministic pseudo-random numbers (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// In [0, n).
    fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() >> 11) % n as u64) as usize
    }
}

/// A random graph: every tenth vertex has no out-links (it is dangling);
/// the targets favour low vertex numbers (the target is drawn below a
/// random bound), so that some vertices are much more popular than others.
fn random_links(n: usize, m: usize, seed: u64) -> Vec<(i64, i64)> {
    let mut rng = Rng(seed | 1);
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
    let links_host = random_links(n, m, 0x9e37_79b9_7f4a_7c15);
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
        let want = pagerank_ref(n, &links_host, iters);
        let t_ref = t.elapsed();
        let mut bad = ranks.len().abs_diff(want.len());
        for (v, (g, w)) in ranks.iter().zip(&want).enumerate() {
            if g.to_bits() != w.to_bits() {
                if bad < 10 {
                    eprintln!("check: MISMATCH at vertex {v}: got {g}, plain Rust gives {w}");
                }
                bad += 1;
            }
        }
        if bad > 0 {
            eprintln!("check: {bad} of {n} ranks differ from the plain-Rust reference");
            exit(1);
        }
        println!(
            "check: all {n} ranks are bit-identical to the plain-Rust reference ({:.2} ms)",
            t_ref.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

//! Clustering: operations that read the same arrays over the same loop
//! share one multi-output kernel, the clustering chosen by an integer
//! linear program (the optimal fusion thesis, van Balen 2020: §3
//! horizontal and diagonal fusion, §4.3 the ILP). It runs after fusion
//! (ICFP'13 §4), which has already fused every producer into its
//! consumers where that repeats no work, so what is left to share is the
//! loop of *siblings* (two folds of one array: a sum and a sum of
//! squares; two maps of one array; a map and a fold of one array; two
//! permutes of one array to the same places: a histogram's counts and
//! ranges) and of a producer that several consumers read and a fold of
//! it (*diagonal*: Note [Diagonal clusters]).
//!
//! Steps, for each block (a chain of lets: the program's body, an
//! `acond` branch, an `awhile` function):
//!
//! 1. The candidates: each let-bound fold and permute, and each producer
//!    left manifest (`map`, `backpermute`, `generate`), with the loop it
//!    runs (`combine::loop_of`: a fold's or permute's source, a
//!    producer's own shape) and the arrays it reads. Two candidates
//!    whose loops have the same shape (the same expression of the same
//!    arrays, a producer's shape read as the producer's own; for
//!    permutes also the same index function and shape of defaults) are a
//!    *pair* when they read an array in common (fusing them reads it
//!    once) and are of one kind, or a producer and a fold with a seed;
//!    or when the second is a fold with a seed that reads the first, a
//!    producer, at its own index only (diagonal).
//! 2. The problem (`ilp::Problem`): the pairs, the diagonal ones, and
//!    which candidates reach which through the block's dependences;
//!    solved by the ILP of Note [The clustering ILP] (`ilp::solve`,
//!    microlp behind `solver::Solver`) from the greedy clustering, or
//!    greedily when the block is large.
//! 3. The rewrite: the block's lets in a topological order of the
//!    clusters, each cluster's members let-bound together as one
//!    operation over tuples (`combine`; `fold_keep` for producers with
//!    folds) and `unzip`ped or projected into their arrays (Note
//!    [Multi-output kernels]).
//!
//! Keeps: the meaning (Note [Clusters and errors]); the verifier's
//! invariants. Near-linear: a block with no pair is not rebuilt; the ILP
//! has variables for pairs and candidates only, at most `max_ilp`
//! candidates, and a time limit for the whole program.
//!
//! Note [Multi-output kernels]
//! Arrays are stored as structs of arrays (one buffer per leaf of the
//! element type), so an operation whose elements are the tuples of
//! several members' elements computes every member's result in one loop,
//! and `unzip` hands each member its buffers without copying them. A fold
//! of tuples keeps one accumulator per member (its combining function is
//! the members' functions side by side, commutative when each is, so the
//! CPU backend's lanes still apply); a generate of tuples computes each
//! member's element at each index; a permute of tuples sends each source
//! element's tuple where the members' common index function says, into
//! the tuples of their defaults. Every backend runs these as it runs
//! any fold or generate: the only new command is `unzip`.
//!
//! Note [Diagonal clusters]
//! Fusion keeps a producer manifest when several consumers read it (the
//! paper's Figure 3's `p1`, softmax's exponentials): it is written, then
//! each fold of it reads it back. A fold with a seed that reads it only
//! at the fold's own index (the element its loop is at) and through no
//! other binding can compute it instead: one pass that computes the
//! producer's element, writes it, and folds it. The cluster's operation
//! is `fold_keep` (`AccKind::FoldKeep`), a fold whose source's elements
//! are pairs, the first kept (written to a second result of the source's
//! shape where the loop reads it), the second folded: its source is
//! `\ix -> let p0 = P0 ix; .. in ((kept ps), (each fold's element, its
//! reads of a producer replaced by that producer's p))`, so each
//! producer's element is computed once. A producer that only its cluster
//! reads is not kept (written) at all. In the ILP a diagonal pair's edge
//! orders its two only when they are not fused (`pi_v - pi_u >= 1 - y`),
//! and a clustering runs when each dependence inside a cluster is a
//! diagonal pair's (`ilp::runnable`). The rewrite names the cluster's
//! producers in its folds by `combine::PRODUCER + i`, which
//! `combine_diagonal` replaces.
//!
//! Note [Clusters and errors]
//! A cluster is one launch: if it fails, every member's binding fails,
//! and a failed binding fails its uses (Note [Deferred errors]). So that
//! a member never fails for a sibling's error, only operations whose
//! elements raise no error of their own are candidates (no division of
//! integers, no checked read or index conversion: `simplify::raises`);
//! a `fold1` of empty rows fails, but its siblings are `fold1`s of the
//! same shape, which fail with it (a producer, which would not, pairs
//! only with folds that have a seed). Producers whose elements may fail
//! are candidates too, but pair only with producers, and only where
//! every binding that reads one of the two (and the block's body) reads
//! both, in scalar code, in every function or expression that reads
//! either, on every path (`read_together`, Note [Strict reads]): then a
//! failure of one is seen exactly where the other is read, and the
//! readers fail in the same cases clustered or not (the lifted real and
//! imaginary parts of the audio program's bins, which the magnitude
//! reads together). What remains is an input whose own
//! binding failed: the cluster reads it for one member and fails for all
//! (`docs/semantics.md`, "Clusters and errors").
//!
//! Note [The clustering ILP]
//! Variables (§4.3, kept small as the thesis asks): a binary `y` per
//! pair (1: fused), weighted by the arrays it saves reading (a diagonal
//! pair also saves reading its producer back); an integer
//! `pi` per candidate in `0 ..= n-1`, the order of its cluster. The
//! objective maximises the arrays saved. Constraints:
//!   - a candidate `u` that reaches candidate `v` (through any operations
//!     of the block) runs first: `pi_v - pi_u >= 1`, only for the `u`
//!     that reach `v` through no other candidate (the rest follow); for
//!     a diagonal pair `pi_v - pi_u >= 1 - y` (the thesis' fusible edge);
//!   - a fused pair shares its order: `pi_a - pi_b + M y <= M` and
//!     `pi_b - pi_a + M y <= M`, with `M = n - 1`, the largest difference.
//!
//! Clusters are the candidates joined by fused pairs. Since every member
//! of a cluster has one order and each dependence but a fused diagonal
//! pair's increases it, no member reaches another but along such a pair
//! and no two clusters reach each other: the clusters can be ordered, as
//! in Megiddo and Sarkar's formulation. The
//! shape and direction variables of the thesis are decided before: a
//! pair exists only for candidates whose loops are provably the same.
//! The solver starts from the greedy clustering (sibling pairs by weight,
//! each fused unless its clusters reach each other; then diagonal pairs,
//! each fused if the clustering still runs) and stops at the time
//! limit with the best it has; an answer that is infeasible, cannot run
//! (`ilp::runnable`) or saves less is replaced by the greedy clustering.

mod combine;
pub mod ilp;
pub mod solver;

use crate::avars::{exp_arrays_mut, parts_mut, shift_acc, Part};
use accelerate_base::array::ArraysTy;
use accelerate_base::error::{Error, SrcLoc};
use accelerate_ir::verify::acc_ty;
use accelerate_ir::{AccKind, DelayedArray, ExpKind, OpenAcc, OpenExp, Program};
use combine::Kind;
use ilp::{Bits, Problem, Solve};
use solver::{MicroLp, Solver};
use std::collections::{BTreeMap, BinaryHeap, HashMap};
use std::time::{Duration, Instant};

/// The clustering phase's settings.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// The solver's time for the whole program; once spent, blocks are
    /// clustered greedily.
    pub time_limit: Duration,
    /// Blocks with more candidates than this are clustered greedily.
    pub max_ilp: usize,
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions { time_limit: Duration::from_millis(500), max_ilp: 256 }
    }
}

/// What the phase did: each block it solved, and the clusters it made.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub blocks: Vec<Solve>,
    /// Clusters of two or more operations, and the operations in them.
    pub clusters: usize,
    pub members: usize,
    /// How long the whole phase took (finding the pairs, solving,
    /// rewriting).
    pub time: Duration,
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "{} clusters of {} operations, {:.3} ms",
            self.clusters,
            self.members,
            self.time.as_secs_f64() * 1e3
        )?;
        for (i, b) in self.blocks.iter().enumerate() {
            writeln!(
                f,
                "block {i}: {} candidates, {} pairs, ILP {} variables {} constraints, {:.3} ms, {}; saves {} (greedy {})",
                b.candidates,
                b.pairs,
                b.variables,
                b.constraints,
                b.time.as_secs_f64() * 1e3,
                b.outcome,
                b.saved,
                b.greedy_saved
            )?;
        }
        Ok(())
    }
}

/// Clusters a fused program (the module doc).
pub fn cluster_program(p: Program, opts: &ClusterOptions) -> Result<(Program, Report), Error> {
    cluster_with(p, opts, &MicroLp)
}

/// `cluster_program` with another solver.
pub fn cluster_with(
    mut p: Program,
    opts: &ClusterOptions,
    solver: &dyn Solver,
) -> Result<(Program, Report), Error> {
    let start = Instant::now();
    let mut cx = Cx { opts, solver, deadline: start + opts.time_limit, report: Report::default() };
    let mut env = p.params.clone();
    cx.acc(&mut p.body, &mut env).map_err(|m| Error::Internal(format!("clustering: {m}")))?;
    cx.report.time = start.elapsed();
    Ok((p, cx.report))
}

/// Candidates considered in one block, and members of one group whose
/// pairs are formed: bounds that keep a block's problem small.
const MAX_CANDIDATES: usize = 1024;
const MAX_GROUP: usize = 64;

struct Cx<'a> {
    opts: &'a ClusterOptions,
    solver: &'a dyn Solver,
    deadline: Instant,
    report: Report,
}

/// Positions in a block: a cluster's members, or what a binding reads.
type Group = Vec<usize>;

/// A candidate of a block.
struct Candidate {
    pos: usize,
    kind: Kind,
    /// Its loop's shape (and what else must be the same: `Loop::same`),
    /// its array variables as levels (the same text for the same terms
    /// anywhere in the block).
    key: String,
    /// The array levels it reads, sorted.
    reads: Vec<usize>,
    /// A fold's or permute's source.
    src: Option<DelayedArray>,
    /// Whether its elements may raise an error of their own (a producer's
    /// only: Note [Clusters and errors]).
    raises: bool,
}

impl Cx<'_> {
    fn acc(&mut self, a: &mut OpenAcc, env: &mut Vec<ArraysTy>) -> Result<(), String> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &mut a.kind {
            AccKind::Let(..) => self.block(a, env),
            AccKind::Tuple(ts) if ts.iter().filter(|t| !matches!(t.kind, AccKind::Var(_))).count() > 1 => {
                self.block(a, env)
            }
            AccKind::Awhile { pred, body, init } => {
                self.acc(init, env)?;
                for f in [pred, body] {
                    env.push(f.param.clone());
                    let r = self.acc(&mut f.body, env);
                    env.pop();
                    r?;
                }
                Ok(())
            }
            AccKind::Foreign { fallback, arg, .. } => {
                self.acc(arg, env)?;
                let Some(fallback) = fallback else { return Ok(()) };
                env.push(fallback.param.clone());
                let r = self.acc(&mut fallback.body, env);
                env.pop();
                r
            }
            _ => {
                for part in parts_mut(a) {
                    if let Part::Acc(x, 0) = part {
                        self.acc(x, env)?;
                    }
                }
                Ok(())
            }
        })
    }

    /// A chain of lets: its bindings and body clustered first, then the
    /// chain itself.
    fn block(&mut self, a: &mut OpenAcc, env: &mut Vec<ArraysTy>) -> Result<(), String> {
        let base = env.len();
        let mut cur = std::mem::replace(a, OpenAcc::new(AccKind::Var(0), a.loc));
        let (mut binds, mut locs) = (Vec::new(), Vec::new());
        while matches!(cur.kind, AccKind::Let(..)) {
            locs.push(cur.loc);
            let AccKind::Let(b, body) = cur.kind_owned() else { unreachable!("a let") };
            binds.push(*b);
            cur = *body;
        }
        // the operations of a tuple of results are siblings too: bound
        // here, each under the ones before it
        let ops =
            |ts: &[OpenAcc]| (0..ts.len()).filter(|&i| !matches!(ts[i].kind, AccKind::Var(_))).collect();
        let ops: Vec<usize> = match &cur.kind {
            AccKind::Tuple(ts) => ops(ts),
            _ => Vec::new(),
        };
        match &mut cur.kind {
            AccKind::Tuple(ts) if ops.len() > 1 => {
                let m = ops.len();
                for (k, &i) in ops.iter().enumerate() {
                    let loc = ts[i].loc;
                    let mut t = std::mem::replace(&mut ts[i], OpenAcc::new(AccKind::Var(m - 1 - k), loc));
                    shift_acc(&mut t, 0, k as isize);
                    binds.push(t);
                    locs.push(loc);
                }
                // the variables the tuple already had are under the new lets
                for (i, t) in ts.iter_mut().enumerate() {
                    if !ops.contains(&i) {
                        shift_acc(t, 0, m as isize);
                    }
                }
            }
            _ => {}
        }
        let mut body = cur;
        let r = (|| {
            for b in binds.iter_mut() {
                self.acc(b, env)?;
                let t = acc_ty(b, env)?;
                env.push(t);
            }
            self.acc(&mut body, env)
        })();
        let tys = env.split_off(base);
        r?;
        let entries = match self.clusters(&binds, &tys, base, &body) {
            Some((groups, deps)) => rewrite(binds, locs, &mut body, &tys, base, groups, &deps),
            None => binds.into_iter().zip(locs).collect(),
        };
        *a = entries
            .into_iter()
            .rev()
            .fold(body, |acc, (b, l)| OpenAcc::new(AccKind::Let(Box::new(b), Box::new(acc)), l));
        Ok(())
    }

    /// The clusters of a block's bindings, as groups of positions in the
    /// block (clusters of two or more), with the positions each binding
    /// reads (`deps`); `None` when there are no clusters.
    fn clusters(
        &mut self,
        binds: &[OpenAcc],
        tys: &[ArraysTy],
        base: usize,
        body: &OpenAcc,
    ) -> Option<(Vec<Group>, Vec<Group>)> {
        let mut cands: Vec<Candidate> = Vec::new();
        // each producer candidate's shape, canonical: the shape of a fold
        // of it is its shape (so that a producer and its fold pair)
        let mut shapes: HashMap<usize, OpenExp> = HashMap::new();
        for (pos, (b, t)) in binds.iter().zip(tys).enumerate() {
            let found = t.array().and_then(|t| combine::loop_of(b, t.rank));
            if let Some(lp) = found.filter(|_| cands.len() < MAX_CANDIDATES) {
                let size = base + pos;
                let shape = canonical_shape(&lp.src.shape, size, &shapes);
                let mut key = format!("{:?}", shape.kind);
                if lp.kind == Kind::Generate {
                    shapes.insert(size, shape);
                }
                for e in &lp.same {
                    key.push('|');
                    key.push_str(&format!("{:?}", canonical_shape(e, size, &shapes).kind));
                }
                let raises = lp.raises;
                let src = (lp.kind != Kind::Generate).then_some(lp.src);
                cands.push(Candidate { pos, kind: lp.kind, key, reads: levels_read(b, size), src, raises });
            }
        }
        // what each binding reads (a candidate's reads known already), and
        // which candidates reach it
        let n = cands.len();
        let mut cand_at = vec![usize::MAX; binds.len()];
        cands.iter().enumerate().for_each(|(i, c)| cand_at[c.pos] = i);
        let in_block = |levels: &[usize]| levels.iter().filter_map(|l| l.checked_sub(base)).collect();
        let deps: Vec<Vec<usize>> = (0..binds.len())
            .map(|pos| match cand_at[pos] {
                usize::MAX => in_block(&levels_read(&binds[pos], base + pos)),
                c => in_block(&cands[c].reads),
            })
            .collect();
        let mut anc_all: Vec<Bits> = Vec::with_capacity(binds.len());
        for ds in &deps {
            let mut s = Bits::new(n);
            for &d in ds {
                let a = anc_all[d].clone();
                s.union_with(&a);
                if cand_at[d] != usize::MAX {
                    s.insert(cand_at[d]);
                }
            }
            anc_all.push(s);
        }
        // pairs: one loop shape, an array read in common (siblings), or a
        // producer read by a fold at its own index and through nothing
        // else (diagonal)
        // (candidates of one loop shape that read an array: at most
        // MAX_GROUP of them pair through it, so that a block of many
        // operations over one shape makes few pairs)
        let mut loops: HashMap<(bool, &str), usize> = HashMap::new();
        let loop_id: Vec<usize> = cands
            .iter()
            .map(|c| {
                let next = loops.len();
                *loops.entry((c.kind == Kind::Permute, c.key.as_str())).or_insert(next)
            })
            .collect();
        let mut readers: HashMap<(usize, usize), Vec<usize>> = HashMap::new();
        let mut shared: BTreeMap<(usize, usize), usize> = BTreeMap::new();
        for (b, c) in cands.iter().enumerate() {
            for &l in &c.reads {
                let list = readers.entry((loop_id[b], l)).or_default();
                for &a in list.iter() {
                    *shared.entry((a, b)).or_default() += 1;
                }
                if list.len() < MAX_GROUP {
                    list.push(b);
                }
                // a fold of a producer of its loop shape
                let producer = l.checked_sub(base).map(|p| cand_at[p]).filter(|&a| a != usize::MAX);
                if let Some(a) = producer.filter(|&a| loop_id[a] == loop_id[b]) {
                    shared.entry((a, b)).or_default();
                }
            }
        }
        let (mut pairs, mut along) = (Vec::new(), Vec::new());
        let mut body_reads = None;
        for (&(a, b), &common) in &shared {
            let (ca, cb) = (&cands[a], &cands[b]);
            if ca.raises || cb.raises {
                // producers that fail only where the same readers fail
                let body_reads = body_reads.get_or_insert_with(|| levels_read(body, base + binds.len()));
                let siblings = ca.kind == Kind::Generate && cb.kind == Kind::Generate && common > 0;
                if siblings && read_together(binds, (body, body_reads), &deps, base, ca.pos, cb.pos) {
                    pairs.push((a, b, common as f64));
                }
                continue;
            }
            let diagonal = match (ca.kind, cb.kind) {
                (Kind::Generate, Kind::Fold { seeded: true }) => {
                    diagonal(ca, cb, &binds[cb.pos], base, &deps[cb.pos], &anc_all, a)
                }
                (x, y) if x == y => Some(false),
                // a fold and a producer after it: siblings unless the
                // producer reads the fold
                (Kind::Fold { seeded: true }, Kind::Generate) if !cb.reads.contains(&(base + ca.pos)) => {
                    Some(false)
                }
                _ => None,
            };
            match diagonal {
                Some(true) => {
                    pairs.push((a, b, 1.0 + common as f64));
                    along.push((a, b));
                }
                Some(false) if common > 0 => pairs.push((a, b, common as f64)),
                _ => {}
            }
        }
        if pairs.is_empty() {
            return None;
        }
        along.sort_unstable();
        let anc = cands.iter().map(|c| anc_all[c.pos].clone()).collect();
        let problem = Problem { n, pairs, anc, along };
        let limit = self.deadline.saturating_duration_since(Instant::now());
        let (cluster, solve) = ilp::solve(&problem, self.solver, limit, self.opts.max_ilp);
        self.report.blocks.push(solve);
        let mut by_root: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (i, &r) in cluster.iter().enumerate() {
            by_root.entry(r).or_default().push(cands[i].pos);
        }
        let groups: Vec<Vec<usize>> = by_root.into_values().filter(|g| g.len() > 1).collect();
        self.report.clusters += groups.len();
        self.report.members += groups.iter().map(Vec::len).sum::<usize>();
        (!groups.is_empty()).then_some((groups, deps))
    }
}

/// Whether producer `p` (candidate number `pc`) and fold `f` (bound to
/// `fold`) are a diagonal pair (Note [Diagonal clusters]): `Some(true)`
/// if the fold reads the producer only at its own index in its source,
/// and through no other binding; `Some(false)` if it does not read it
/// (so that they may be siblings); `None` if it reads it otherwise.
fn diagonal(
    p: &Candidate,
    f: &Candidate,
    fold: &OpenAcc,
    base: usize,
    f_deps: &[usize],
    anc_all: &[Bits],
    pc: usize,
) -> Option<bool> {
    if !f.reads.contains(&(base + p.pos)) {
        return Some(false);
    }
    let through = f_deps.iter().any(|&d| d != p.pos && anc_all[d].contains(pc));
    let (src, AccKind::Fold { f: op, seed, .. }) = (f.src.as_ref()?, &fold.kind) else { return None };
    // p's variable in the fold's scalar code
    let var = f.pos - 1 - p.pos;
    let mut in_op = Vec::new();
    std::iter::once(&op.body).chain(seed).for_each(|e| accelerate_ir::visit::arrays_read(e, &mut in_op));
    (!through && !in_op.contains(&var) && combine::reads_at_own_index(src, var)).then_some(true)
}

/// Whether the bindings at positions `a` and `b` of a block, producers
/// that may raise errors of their own, fail only together if clustered
/// (Note [Clusters and errors]): each binding that reads one, and the
/// block's body (with the levels it reads), reads both, in scalar code,
/// strictly in every function that reads either (Note [Strict reads]).
fn read_together(
    binds: &[OpenAcc],
    (body, body_reads): (&OpenAcc, &[usize]),
    deps: &[Vec<usize>],
    base: usize,
    a: usize,
    b: usize,
) -> bool {
    let (la, lb) = (base + a, base + b);
    let together = |t: &OpenAcc, size: usize, ra: bool, rb: bool| match (ra, rb) {
        (false, false) => true,
        (true, true) => reads_strictly(&mut t.clone(), size, &[la, lb]),
        _ => false,
    };
    let n = binds.len();
    together(body, base + n, body_reads.contains(&la), body_reads.contains(&lb))
        && deps
            .iter()
            .enumerate()
            .all(|(r, ds)| together(&binds[r], base + r, ds.contains(&a), ds.contains(&b)))
}

/// Whether term `t` (at environment size `size`) reads the array levels
/// `levels` only in scalar code, each function or expression that reads
/// one of them reading all of them on every path.
fn reads_strictly(t: &mut OpenAcc, size: usize, levels: &[usize]) -> bool {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        let var = |l: usize| size - 1 - l;
        if matches!(t.kind, AccKind::Var(k) if levels.iter().any(|&l| var(l) == k)) {
            return false;
        }
        let exp_ok = |e: &OpenExp| {
            let vars: Vec<usize> = levels.iter().map(|&l| var(l)).collect();
            let mut read = Vec::new();
            accelerate_ir::visit::arrays_read(e, &mut read);
            !read.iter().any(|r| vars.contains(r))
                || crate::strict::strict(e).is_some_and(|s| vars.iter().all(|v| s.arrays.contains(v)))
        };
        parts_mut(t).into_iter().all(|p| match p {
            Part::Exp(e) => exp_ok(e),
            Part::Fun(f) => exp_ok(&f.body),
            Part::Acc(x, binders) => reads_strictly(x, size + binders, levels),
        })
    })
}

/// Calls `f` on every free array variable of `a` (as an index at its
/// top), under `depth` binders.
fn each_free(a: &mut OpenAcc, depth: usize, f: &mut dyn FnMut(&mut usize)) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        if let AccKind::Var(k) = &mut a.kind {
            if *k >= depth {
                let mut v = *k - depth;
                f(&mut v);
                *k = v + depth;
            }
        }
        for p in parts_mut(a) {
            let mut on_exp = |e: &mut OpenExp, d: usize| {
                exp_arrays_mut(e, &mut |k| {
                    if *k >= d {
                        let mut v = *k - d;
                        f(&mut v);
                        *k = v + d;
                    }
                })
            };
            match p {
                Part::Exp(e) => on_exp(e, depth),
                Part::Fun(g) => on_exp(&mut g.body, depth),
                Part::Acc(x, b) => each_free(x, depth + b, f),
            }
        }
    })
}

/// The array levels a term at environment size `size` reads, sorted.
fn levels_read(a: &OpenAcc, size: usize) -> Vec<usize> {
    let mut out = Vec::new();
    each_free(&mut a.clone(), 0, &mut |v| out.push(size - 1 - *v));
    out.sort_unstable();
    out.dedup();
    out
}

/// A shape expression at environment size `size`, canonical: its array
/// variables as levels, without source locations, and the shape of each
/// producer candidate in `shapes` (by level) replaced by that producer's
/// own canonical shape. The same text (`Debug`) for the same shape of the
/// same arrays anywhere in a block.
fn canonical_shape(e: &OpenExp, size: usize, shapes: &HashMap<usize, OpenExp>) -> OpenExp {
    fn canon(e: &mut OpenExp, size: usize, at: SrcLoc, shapes: &HashMap<usize, OpenExp>) {
        e.loc = at;
        if let ExpKind::Shape { array } = &e.kind {
            if let Some(s) = shapes.get(&(size - 1 - *array)) {
                *e = s.clone();
                return;
            }
        }
        if let ExpKind::Index { array, .. } | ExpKind::LinearIndex { array, .. } | ExpKind::Shape { array } =
            &mut e.kind
        {
            *array = size - 1 - *array;
        }
        crate::debruijn::for_each_child(e, |c| canon(c, size, at, shapes));
    }
    let mut e = e.clone();
    canon(&mut e, size, one_loc(), shapes);
    e
}

/// One source location for every canonical shape.
fn one_loc() -> SrcLoc {
    static AT: std::sync::OnceLock<SrcLoc> = std::sync::OnceLock::new();
    *AT.get_or_init(SrcLoc::caller)
}

/// The block's bindings in a topological order of its clusters, each
/// cluster bound as one operation and then each member as its part; the
/// body's variables renumbered. `deps[j]`: the positions binding `j` reads.
#[allow(clippy::too_many_arguments)]
fn rewrite(
    binds: Vec<OpenAcc>,
    locs: Vec<SrcLoc>,
    body: &mut OpenAcc,
    tys: &[ArraysTy],
    base: usize,
    groups: Vec<Vec<usize>>,
    deps: &[Vec<usize>],
) -> Vec<(OpenAcc, SrcLoc)> {
    let n = binds.len();
    // each cluster member's kind of loop
    let mut kinds = vec![Kind::Generate; n];
    for &j in groups.iter().flatten() {
        let rank = tys[j].array().map_or(0, |t| t.rank);
        kinds[j] = combine::loop_of(&binds[j], rank).expect("a candidate").kind;
    }
    // every binding's group: a cluster, or itself
    let mut group_of: Vec<usize> = (0..n).collect();
    let mut members: Vec<Vec<usize>> = (0..n).map(|j| vec![j]).collect();
    for g in &groups {
        for &j in g {
            group_of[j] = g[0];
        }
        members[g[0]] = g.clone();
    }
    // the groups' dependences, and an order that keeps the block's where
    // it can (the group whose first member comes first goes first)
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut indeg = vec![0usize; n];
    for (j, ds) in deps.iter().enumerate() {
        for &d in ds {
            let (gd, gj) = (group_of[d], group_of[j]);
            if gd != gj {
                succ[gd].push(gj);
                indeg[gj] += 1;
            }
        }
    }
    let mut ready: BinaryHeap<std::cmp::Reverse<usize>> =
        (0..n).filter(|&g| group_of[g] == g && indeg[g] == 0).map(std::cmp::Reverse).collect();
    let mut order = Vec::new();
    while let Some(std::cmp::Reverse(g)) = ready.pop() {
        order.push(g);
        for &s in &succ[g] {
            indeg[s] -= 1;
            if indeg[s] == 0 {
                ready.push(std::cmp::Reverse(s));
            }
        }
    }
    // who reads each binding: a producer that only its cluster reads is
    // computed in the cluster's loop and not kept (Note [Diagonal clusters])
    let mut read_outside = vec![false; n];
    for (j, ds) in deps.iter().enumerate() {
        for &d in ds {
            if group_of[d] != group_of[j] {
                read_outside[d] = true;
            }
        }
    }
    for l in levels_read(body, base + n) {
        if let Some(d) = l.checked_sub(base) {
            read_outside[d] = true;
        }
    }
    let mut layouts: Vec<Option<combine::Layout>> = (0..n).map(|_| None).collect();
    for &g in &order {
        if members[g].len() > 1 {
            let kinds: Vec<Kind> = members[g].iter().map(|&j| kinds[j]).collect();
            let kept: Vec<bool> = members[g].iter().map(|&j| read_outside[j]).collect();
            layouts[g] = Some(combine::layout(&kinds, &kept));
        }
    }
    // new positions: a cluster's headers, then its members
    let mut new_pos = vec![usize::MAX; n];
    let mut at = 0;
    for &g in &order {
        match &layouts[g] {
            None => {
                new_pos[g] = at;
                at += 1;
            }
            Some(l) => {
                at += l.headers;
                for (&j, r) in members[g].iter().zip(&l.members) {
                    if r.is_some() {
                        new_pos[j] = at;
                        at += 1;
                    }
                }
            }
        }
    }
    let total = at;
    let level = |l: usize| if l < base { l } else { base + new_pos[l - base] };
    let renumber = |a: &mut OpenAcc, old: usize, new: usize, producers: &[usize]| {
        each_free(a, 0, &mut |v| {
            let l = old - 1 - *v;
            *v = match producers.iter().position(|&p| base + p == l) {
                Some(i) => combine::PRODUCER + i,
                None => new - 1 - level(l),
            }
        });
    };
    let mut slots: Vec<Option<OpenAcc>> = binds.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(total);
    for &g in &order {
        let ms = &members[g];
        let Some(layout) = &layouts[g] else {
            let j = ms[0];
            let mut b = slots[j].take().expect("each binding once");
            renumber(&mut b, base + j, base + new_pos[j], &[]);
            out.push((b, locs[j]));
            continue;
        };
        // the cluster's headers, at the positions before its members
        let here = base + out.len();
        let producers: Vec<usize> = ms.iter().copied().filter(|&j| kinds[j] == Kind::Generate).collect();
        let diagonal = producers.len() < ms.len() && !producers.is_empty();
        let mut parts = Vec::new();
        for &j in ms {
            let mut b = slots[j].take().expect("each binding once");
            renumber(&mut b, base + j, here, if diagonal { &producers } else { &[] });
            let rank = tys[j].array().map_or(0, |t| t.rank);
            let lp = combine::loop_of(&b, rank).expect("a candidate");
            parts.push((b, lp));
        }
        let headers = if diagonal {
            let kept: Vec<bool> = ms.iter().map(|&j| read_outside[j]).collect();
            combine::combine_diagonal(parts, &kept)
        } else {
            let kind = parts[0].1.kind;
            vec![combine::combine(kind, parts)]
        };
        debug_assert_eq!(headers.len(), layout.headers);
        // a fold's errors name it: a diagonal cluster is at its first fold
        let first = ms.iter().find(|&&j| !diagonal || kinds[j] != Kind::Generate);
        let loc = locs[*first.expect("a member")];
        out.extend(headers.into_iter().map(|h| (h, loc)));
        for (&j, r) in ms.iter().zip(&layout.members) {
            let Some((h, prj)) = *r else { continue };
            let loc = locs[j];
            let var = OpenAcc::new(AccKind::Var(base + out.len() - 1 - (here + h)), loc);
            let term = match prj {
                Some(i) => OpenAcc::new(AccKind::Prj(i, Box::new(var)), loc),
                None => var,
            };
            out.push((term, loc));
        }
    }
    renumber(body, base + n, base + total, &[]);
    out
}

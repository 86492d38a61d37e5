//! Clustering: operations that read the same arrays over the same loop
//! share one multi-output kernel, the clustering chosen by an integer
//! linear program (the optimal fusion thesis, van Balen 2020: §4.1
//! horizontal fusion, §4.3 the ILP). It runs after fusion (ICFP'13 §4),
//! which has already fused every producer into its consumers where that
//! repeats no work, so what is left to share is the loop of *siblings*:
//! two folds of one array (a sum and a sum of squares), two maps of one
//! array, two permutes of one array to the same places (a histogram's
//! counts and ranges).
//!
//! Steps, for each block (a chain of lets: the program's body, an
//! `acond` branch, an `awhile` function):
//!
//! 1. The candidates: each let-bound fold and permute, and each producer
//!    left manifest (`map`, `backpermute`, `generate`), with the loop it
//!    runs (`combine::loop_of`: a fold's or permute's source, a
//!    producer's own shape) and the arrays it reads. Two candidates of one
//!    kind whose loops have the same shape (the same expression of the
//!    same arrays; for permutes also the same index function and shape of
//!    defaults) and that read an array in common are a *pair*: fusing them
//!    reads that array once.
//! 2. The problem (`ilp::Problem`): the pairs, and which candidates reach
//!    which through the block's dependences; solved by the ILP of Note
//!    [The clustering ILP] (`ilp::solve`, microlp behind `solver::Solver`)
//!    from the greedy clustering, or greedily when the block is large.
//! 3. The rewrite: the block's lets in a topological order of the
//!    clusters, each cluster's members let-bound together as one
//!    operation over tuples (`combine`) and `unzip`ped into their arrays
//!    (Note [Multi-output kernels]).
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
//! Note [Clusters and errors]
//! A cluster is one launch: if it fails, every member's binding fails,
//! and a failed binding fails its uses (Note [Deferred errors]). So that
//! a member never fails for a sibling's error, only operations whose
//! elements raise no error of their own are candidates (no division of
//! integers, no checked read or index conversion: `simplify::raises`);
//! a `fold1` of empty rows fails, but its siblings are `fold1`s of the
//! same shape, which fail with it. What remains is an input whose own
//! binding failed: the cluster reads it for one member and fails for all
//! (`docs/semantics.md`, "Clusters and errors").
//!
//! Note [The clustering ILP]
//! Variables (§4.3, kept small as the thesis asks): a binary `y` per
//! pair (1: fused), weighted by the arrays it saves reading; an integer
//! `pi` per candidate in `0 ..= n-1`, the order of its cluster. The
//! objective maximises the arrays saved. Constraints:
//!   - a candidate `u` that reaches candidate `v` (through any operations
//!     of the block) runs first: `pi_v - pi_u >= 1`, only for the `u`
//!     that reach `v` through no other candidate (the rest follow);
//!   - a fused pair shares its order: `pi_a - pi_b + M y <= M` and
//!     `pi_b - pi_a + M y <= M`, with `M = n - 1`, the largest difference.
//!
//! Clusters are the candidates joined by fused pairs. Since every member
//! of a cluster has one order and each dependence increases it, no
//! member reaches another and no two clusters reach each other: the
//! clusters can be ordered, as in Megiddo and Sarkar's formulation. The
//! shape and direction variables of the thesis are decided before: a
//! pair exists only for candidates whose loops are provably the same.
//! The solver starts from the greedy clustering (pairs by weight, each
//! fused unless its clusters reach each other) and stops at the time
//! limit with the best it has; an answer that is infeasible, cannot run
//! (`ilp::runnable`) or saves less is replaced by the greedy clustering.

mod combine;
pub mod ilp;
pub mod solver;

use crate::avars::{exp_arrays_mut, parts_mut, shift_acc, Part};
use accelerate_base::array::ArraysTy;
use accelerate_base::error::{Error, SrcLoc};
use accelerate_ir::verify::acc_ty;
use accelerate_ir::{AccKind, ExpKind, OpenAcc, OpenExp, Program};
use combine::Kind;
use ilp::{Bits, Problem, Solve};
use solver::{MicroLp, Solver};
use std::collections::{BTreeMap, BinaryHeap};
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
}

impl std::fmt::Display for Report {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "{} clusters of {} operations", self.clusters, self.members)?;
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
    let mut cx = Cx { opts, solver, deadline: Instant::now() + opts.time_limit, report: Report::default() };
    let mut env = p.params.clone();
    cx.acc(&mut p.body, &mut env).map_err(|m| Error::Internal(format!("clustering: {m}")))?;
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
        let entries = match self.clusters(&binds, &tys, base) {
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
    ) -> Option<(Vec<Group>, Vec<Group>)> {
        let mut cands: Vec<Candidate> = Vec::new();
        for (pos, (b, t)) in binds.iter().zip(tys).enumerate() {
            let found = t.array().and_then(|t| combine::loop_of(b, t.rank));
            if let Some(lp) = found.filter(|_| cands.len() < MAX_CANDIDATES) {
                let size = base + pos;
                let mut key = shape_key(&lp.src.shape, size);
                for e in &lp.same {
                    key.push('|');
                    key.push_str(&shape_key(e, size));
                }
                cands.push(Candidate { pos, kind: lp.kind, key, reads: levels_read(b, size) });
            }
        }
        // pairs: one kind, one loop shape, an array read in common
        let mut groups: BTreeMap<(Kind, String), Vec<usize>> = BTreeMap::new();
        for (i, c) in cands.iter().enumerate() {
            let g = groups.entry((c.kind, c.key.clone())).or_default();
            if g.len() < MAX_GROUP {
                g.push(i);
            }
        }
        let mut pairs = Vec::new();
        for g in groups.values() {
            for (x, &a) in g.iter().enumerate() {
                for &b in &g[x + 1..] {
                    let shared = common(&cands[a].reads, &cands[b].reads);
                    if shared > 0 {
                        pairs.push((a, b, shared as f64));
                    }
                }
            }
        }
        if pairs.is_empty() {
            return None;
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
        let problem = Problem { n, pairs, anc: cands.iter().map(|c| anc_all[c.pos].clone()).collect() };
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

/// The number of elements two sorted lists share.
fn common(a: &[usize], b: &[usize]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cmp(&b[j]) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
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

/// A shape expression at environment size `size` as text, its array
/// variables as levels and without source locations: equal for the same
/// shape of the same arrays anywhere in a block.
fn shape_key(e: &OpenExp, size: usize) -> String {
    fn canon(e: &mut OpenExp, size: usize, at: SrcLoc) {
        e.loc = at;
        if let ExpKind::Index { array, .. } | ExpKind::LinearIndex { array, .. } | ExpKind::Shape { array } =
            &mut e.kind
        {
            *array = size - 1 - *array;
        }
        crate::debruijn::for_each_child(e, |c| canon(c, size, at));
    }
    let mut e = e.clone();
    canon(&mut e, size, one_loc());
    format!("{:?}", e.kind)
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
    // new positions: a cluster's operation, then its members
    let mut new_pos = vec![0usize; n];
    let mut at = 0;
    for &g in &order {
        if members[g].len() > 1 {
            at += 1;
        }
        for &j in &members[g] {
            new_pos[j] = at;
            at += 1;
        }
    }
    let total = at;
    let level = |l: usize| if l < base { l } else { base + new_pos[l - base] };
    let renumber = |a: &mut OpenAcc, old: usize, new: usize| {
        each_free(a, 0, &mut |v| *v = new - 1 - level(old - 1 - *v));
    };
    let mut slots: Vec<Option<OpenAcc>> = binds.into_iter().map(Some).collect();
    let mut out = Vec::with_capacity(total);
    for &g in &order {
        let ms = &members[g];
        if ms.len() == 1 {
            let j = ms[0];
            let mut b = slots[j].take().expect("each binding once");
            renumber(&mut b, base + j, base + new_pos[j]);
            out.push((b, locs[j]));
            continue;
        }
        // the cluster's operation, at the position before its members
        let here = base + new_pos[ms[0]] - 1;
        let mut parts = Vec::new();
        for &j in ms {
            let mut b = slots[j].take().expect("each binding once");
            renumber(&mut b, base + j, here);
            let rank = tys[j].array().map_or(0, |t| t.rank);
            let lp = combine::loop_of(&b, rank).expect("a candidate");
            parts.push((b, lp));
        }
        let kind = parts[0].1.kind;
        out.push((combine::combine(kind, parts), locs[ms[0]]));
        for (i, &j) in ms.iter().enumerate() {
            let loc = locs[j];
            let cluster = OpenAcc::new(AccKind::Var(i), loc);
            out.push((OpenAcc::new(AccKind::Prj(i, Box::new(cluster)), loc), loc));
        }
    }
    renumber(body, base + n, base + total);
    out
}

//! The clustering problem of one block and its integer linear program
//! (optimal fusion thesis §4.3; Note [The clustering ILP] in `cluster`),
//! the greedy clustering that starts the solver and replaces it where the
//! problem is too large or the solver finds nothing, and the check that a
//! clustering can run (no cycle between clusters).

use super::solver::{Cmp, Domain, Ilp, Outcome, Solver};
use std::time::{Duration, Instant};

/// A set of candidates, as bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Bits(Vec<u64>);

impl Bits {
    pub fn new(n: usize) -> Bits {
        Bits(vec![0; n.div_ceil(64)])
    }

    pub fn insert(&mut self, i: usize) {
        self.0[i / 64] |= 1 << (i % 64);
    }

    pub fn contains(&self, i: usize) -> bool {
        self.0[i / 64] >> (i % 64) & 1 == 1
    }

    pub fn union_with(&mut self, o: &Bits) {
        self.0.iter_mut().zip(&o.0).for_each(|(a, b)| *a |= b);
    }

    pub fn meets(&self, o: &Bits) -> bool {
        self.0.iter().zip(&o.0).any(|(a, b)| a & b != 0)
    }

    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        self.0
            .iter()
            .enumerate()
            .flat_map(|(w, &bits)| (0..64).filter(move |b| bits >> b & 1 == 1).map(move |b| w * 64 + b))
    }
}

/// The clustering problem of a block: `n` candidates (operations that
/// may share a loop), the pairs that may (each with what fusing it saves),
/// and which candidates reach which through the block's dependences.
#[derive(Clone, Debug, Default)]
pub(crate) struct Problem {
    pub n: usize,
    /// `(a, b, saved)`, `a < b`: fusing them saves `saved` (arrays read).
    pub pairs: Vec<(usize, usize, f64)>,
    /// `anc[v]`: the candidates with a path of dependences to `v`.
    pub anc: Vec<Bits>,
    /// The diagonal pairs, as `(producer, consumer)`, sorted: the consumer
    /// reads the producer directly and through nothing else, so the two
    /// may share a loop although one depends on the other (Note
    /// [Diagonal clusters] in `cluster`).
    pub along: Vec<(usize, usize)>,
}

/// How a block's clustering was found.
#[derive(Clone, Debug)]
pub struct Solve {
    /// Candidates, pairs, and the ILP's variables and constraints (0 when
    /// no ILP was built).
    pub candidates: usize,
    pub pairs: usize,
    pub variables: usize,
    pub constraints: usize,
    pub time: Duration,
    /// `optimal`, `time limit`, or why the greedy clustering was kept.
    pub outcome: String,
    /// What the clustering saves (arrays read), and the greedy one.
    pub saved: f64,
    pub greedy_saved: f64,
}

/// The cluster of each candidate (cluster ids are candidate numbers):
/// by the ILP when the problem has at most `max_ilp` candidates, else (or
/// when the solver finds nothing better) greedily.
pub(crate) fn solve(
    p: &Problem,
    solver: &dyn Solver,
    limit: Duration,
    max_ilp: usize,
) -> (Vec<usize>, Solve) {
    let start = Instant::now();
    let greedy = greedy(p);
    let greedy_saved = saved(p, &greedy);
    let mut report = Solve {
        candidates: p.n,
        pairs: p.pairs.len(),
        variables: 0,
        constraints: 0,
        time: Duration::ZERO,
        outcome: String::new(),
        saved: greedy_saved,
        greedy_saved,
    };
    if p.n > max_ilp {
        report.outcome = format!("greedy: {} candidates, over the ILP's {max_ilp}", p.n);
        report.time = start.elapsed();
        return (greedy, report);
    }
    let (ilp, ys) = formulate(p);
    report.variables = ilp.domains.len();
    report.constraints = ilp.rows.len();
    let incumbent = assignment(p, &greedy, &ys, ilp.domains.len());
    let left = limit.saturating_sub(start.elapsed());
    let (x, how) = match solver.solve(&ilp, left, &incumbent) {
        Outcome::Optimal(x) => (Some(x), "optimal".to_string()),
        Outcome::Feasible(x) => (Some(x), "time limit, best found".to_string()),
        Outcome::Nothing(why) => (None, format!("greedy: {why}")),
    };
    report.time = start.elapsed();
    let chosen = x.filter(|x| ilp.feasible(x)).map(|x| clusters_of(p, &ys, &x)).filter(|c| runnable(p, c));
    match chosen {
        Some(c) if saved(p, &c) >= greedy_saved => {
            report.saved = saved(p, &c);
            report.outcome = how;
            (c, report)
        }
        Some(_) => {
            report.outcome = "greedy: the solver's answer saves less".into();
            (greedy, report)
        }
        None => {
            report.outcome =
                if how.starts_with("greedy") { how } else { "greedy: the solver's answer cannot run".into() };
            (greedy, report)
        }
    }
}

/// The ILP of Note [The clustering ILP]: its variables are the pairs'
/// fusion variables (`ys`, in the order of `p.pairs`) and then one
/// cluster order `pi` per candidate.
fn formulate(p: &Problem) -> (Ilp, Vec<usize>) {
    let mut ilp = Ilp::default();
    let ys: Vec<usize> = p.pairs.iter().map(|&(_, _, w)| ilp.var(Domain::Binary, w)).collect();
    // pi differs by at most n - 1 between candidates: the big M
    let m = p.n.saturating_sub(1) as f64;
    let hi = p.n.saturating_sub(1) as i32;
    let pi: Vec<usize> = (0..p.n).map(|_| ilp.var(Domain::Integer { lo: 0, hi }, 0.0)).collect();
    let y_at: std::collections::HashMap<(usize, usize), usize> =
        p.pairs.iter().zip(&ys).map(|(&(a, b, _), &y)| ((a, b), y)).collect();
    let y_of = |a: usize, b: usize| y_at.get(&(a.min(b), a.max(b))).copied();
    for (v, preds) in immediate_predecessors(p).into_iter().enumerate() {
        for u in preds {
            // a diagonal pair fused runs in one loop: pi_v - pi_u >= 1 - y
            match y_of(u, v).filter(|_| p.along.binary_search(&(u, v)).is_ok()) {
                Some(y) => ilp.row(vec![(pi[v], 1.0), (pi[u], -1.0), (y, 1.0)], Cmp::Ge, 1.0),
                None => ilp.row(vec![(pi[v], 1.0), (pi[u], -1.0)], Cmp::Ge, 1.0),
            }
        }
    }
    for (&(a, b, _), &y) in p.pairs.iter().zip(&ys) {
        ilp.row(vec![(pi[a], 1.0), (pi[b], -1.0), (y, m)], Cmp::Le, m);
        ilp.row(vec![(pi[b], 1.0), (pi[a], -1.0), (y, m)], Cmp::Le, m);
    }
    (ilp, ys)
}

/// For each candidate, the candidates that reach it through no other
/// candidate: the order constraints needed (the others follow).
fn immediate_predecessors(p: &Problem) -> Vec<Vec<usize>> {
    (0..p.n)
        .map(|v| {
            let mut through = Bits::new(p.n);
            for w in p.anc[v].iter() {
                through.union_with(&p.anc[w]);
            }
            p.anc[v].iter().filter(|&u| !through.contains(u)).collect()
        })
        .collect()
}

/// The ILP's assignment of a clustering: a pair's variable is 1 when both
/// are in one cluster, and each cluster's order is its depth among the
/// clusters (which `runnable` clusterings have).
fn assignment(p: &Problem, cluster: &[usize], ys: &[usize], vars: usize) -> Vec<f64> {
    let mut x = vec![0.0; vars];
    for (&(a, b, _), &y) in p.pairs.iter().zip(ys) {
        if cluster[a] == cluster[b] {
            x[y] = 1.0;
        }
    }
    // candidates in the order of the block are in a topological order of
    // the dependences; a cluster's depth is one more than its deepest
    // predecessor's (iterated to a fixed point, since members interleave)
    let mut depth = vec![0usize; p.n];
    loop {
        let mut changed = false;
        for v in 0..p.n {
            let d =
                p.anc[v].iter().filter(|&u| cluster[u] != cluster[v]).map(|u| depth[cluster[u]] + 1).max();
            if let Some(d) = d.filter(|&d| d > depth[cluster[v]]) {
                depth[cluster[v]] = d;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    for v in 0..p.n {
        x[ys.len() + v] = depth[cluster[v]] as f64;
    }
    x
}

/// The clusters of an ILP solution: candidates joined by the pairs fused.
fn clusters_of(p: &Problem, ys: &[usize], x: &[f64]) -> Vec<usize> {
    let mut uf: Vec<usize> = (0..p.n).collect();
    for (&(a, b, _), &y) in p.pairs.iter().zip(ys) {
        if x[y] > 0.5 {
            let (ra, rb) = (find(&mut uf, a), find(&mut uf, b));
            uf[ra.max(rb)] = ra.min(rb);
        }
    }
    (0..p.n).map(|v| find(&mut uf, v)).collect()
}

fn find(uf: &mut [usize], mut v: usize) -> usize {
    while uf[v] != v {
        uf[v] = uf[uf[v]];
        v = uf[v];
    }
    v
}

/// What a clustering saves: the weights of its pairs inside a cluster.
fn saved(p: &Problem, cluster: &[usize]) -> f64 {
    p.pairs.iter().filter(|&&(a, b, _)| cluster[a] == cluster[b]).map(|&(_, _, w)| w).sum()
}

/// Whether a clustering can run: no member reaches another of its
/// cluster but along a diagonal pair, and
/// the clusters' dependences have no cycle. Checked on the immediate
/// dependences (which a path through a cluster outside would show as a
/// cycle).
pub(crate) fn runnable(p: &Problem, cluster: &[usize]) -> bool {
    runnable_on(p, &immediate_predecessors(p), cluster)
}

fn runnable_on(p: &Problem, preds: &[Vec<usize>], cluster: &[usize]) -> bool {
    let mut succ: Vec<Vec<usize>> = vec![Vec::new(); p.n];
    for (v, us) in preds.iter().enumerate() {
        for &u in us {
            if cluster[u] == cluster[v] {
                if p.along.binary_search(&(u, v)).is_err() {
                    return false;
                }
            } else {
                succ[cluster[u]].push(cluster[v]);
            }
        }
    }
    let roots: Vec<usize> = (0..p.n).filter(|&v| cluster[v] == v).collect();
    let mut indeg = vec![0usize; p.n];
    for s in &mut succ {
        s.sort_unstable();
        s.dedup();
        s.iter().for_each(|&t| indeg[t] += 1);
    }
    let mut ready: Vec<usize> = roots.iter().copied().filter(|&r| indeg[r] == 0).collect();
    let mut seen = 0;
    while let Some(c) = ready.pop() {
        seen += 1;
        for &t in &succ[c] {
            indeg[t] -= 1;
            if indeg[t] == 0 {
                ready.push(t);
            }
        }
    }
    seen == roots.len()
}

/// Today's clustering, and the solver's first incumbent: pairs taken in
/// order of what they save (then in block order), each fused when its
/// two clusters do not reach each other; then
/// the diagonal pairs, each fused when the clustering can still run.
pub(crate) fn greedy(p: &Problem) -> Vec<usize> {
    let mut cluster = siblings(p);
    let mut diagonal: Vec<usize> =
        (0..p.pairs.len()).filter(|&i| p.along.binary_search(&edge(p, i)).is_ok()).collect();
    if diagonal.is_empty() {
        return cluster;
    }
    diagonal.sort_by(|&i, &j| p.pairs[j].2.total_cmp(&p.pairs[i].2).then(i.cmp(&j)));
    let preds = immediate_predecessors(p);
    for i in diagonal {
        let (a, b, _) = p.pairs[i];
        let (ca, cb) = (cluster[a], cluster[b]);
        if ca == cb {
            continue;
        }
        let (keep, gone) = (ca.min(cb), ca.max(cb));
        let merged: Vec<usize> = cluster.iter().map(|&c| if c == gone { keep } else { c }).collect();
        if runnable_on(p, &preds, &merged) {
            cluster = merged;
        }
    }
    cluster
}

/// A pair as the edge it would be: (producer, consumer) if diagonal.
fn edge(p: &Problem, i: usize) -> (usize, usize) {
    let (a, b, _) = p.pairs[i];
    if p.along.binary_search(&(b, a)).is_ok() {
        (b, a)
    } else {
        (a, b)
    }
}

/// The greedy clustering of the pairs that are not diagonal.
fn siblings(p: &Problem) -> Vec<usize> {
    let mut uf: Vec<usize> = (0..p.n).collect();
    let mut members: Vec<Bits> = (0..p.n)
        .map(|v| {
            let mut b = Bits::new(p.n);
            b.insert(v);
            b
        })
        .collect();
    // desc[c]: the candidates a cluster reaches
    let mut desc: Vec<Bits> = vec![Bits::new(p.n); p.n];
    for v in 0..p.n {
        for u in p.anc[v].iter() {
            desc[u].insert(v);
        }
    }
    let mut order: Vec<usize> =
        (0..p.pairs.len()).filter(|&i| p.along.binary_search(&edge(p, i)).is_err()).collect();
    order.sort_by(|&i, &j| p.pairs[j].2.total_cmp(&p.pairs[i].2).then(i.cmp(&j)));
    for i in order {
        let (a, b, _) = p.pairs[i];
        let (ca, cb) = (find(&mut uf, a), find(&mut uf, b));
        if ca == cb || desc[ca].meets(&members[cb]) || desc[cb].meets(&members[ca]) {
            continue;
        }
        let (keep, gone) = (ca.min(cb), ca.max(cb));
        uf[gone] = keep;
        let m = members[gone].clone();
        members[keep].union_with(&m);
        let d = desc[gone].clone();
        desc[keep].union_with(&d);
        // whatever reached either now reaches what the merged one reaches
        let (mk, dk) = (members[keep].clone(), desc[keep].clone());
        for x in 0..p.n {
            if x != keep && uf[x] == x && desc[x].meets(&mk) {
                desc[x].union_with(&dk);
                desc[x].union_with(&mk);
            }
        }
    }
    (0..p.n).map(|v| find(&mut uf, v)).collect()
}

#[cfg(test)]
mod tests {
    use super::super::solver::MicroLp;
    use super::*;

    fn problem(n: usize, pairs: &[(usize, usize, f64)], edges: &[(usize, usize)]) -> Problem {
        // transitive ancestors from direct edges u -> v (u < v)
        let mut anc = vec![Bits::new(n); n];
        for v in 0..n {
            for &(u, w) in edges {
                if w == v {
                    anc[v].insert(u);
                    let a = anc[u].clone();
                    anc[v].union_with(&a);
                }
            }
        }
        Problem { n, pairs: pairs.to_vec(), anc, along: Vec::new() }
    }

    #[test]
    fn fuses_independent_siblings() {
        let p = problem(3, &[(0, 1, 1.0), (0, 2, 1.0), (1, 2, 1.0)], &[]);
        let (c, r) = solve(&p, &MicroLp, Duration::from_secs(5), 64);
        assert_eq!(c, vec![0, 0, 0], "{r:?}");
        assert_eq!(r.outcome, "optimal");
    }

    #[test]
    fn never_fuses_along_a_path() {
        // 0 -> 1 -> 2: 0 and 2 are siblings of an input but 2 needs 0
        let p = problem(3, &[(0, 2, 1.0)], &[(0, 1), (1, 2)]);
        let (c, _) = solve(&p, &MicroLp, Duration::from_secs(5), 64);
        assert_ne!(c[0], c[2]);
    }

    #[test]
    fn avoids_cycles_between_clusters() {
        // 0 -> 3 and 2 -> 1: fusing {0,1} and {2,3} both makes a cycle;
        // the best runnable clustering fuses one pair, the heavier
        let p = problem(4, &[(0, 1, 1.0), (2, 3, 2.0)], &[(0, 3), (2, 1)]);
        let (c, r) = solve(&p, &MicroLp, Duration::from_secs(5), 64);
        assert!(runnable(&p, &c));
        assert_eq!((c[0] == c[1], c[2] == c[3]), (false, true), "{r:?}");
        assert!(!runnable(&p, &[0, 0, 2, 2]));
    }

    #[test]
    fn the_ilp_beats_greedy_where_greedy_is_short_sighted() {
        // greedy takes the heaviest pair {1,2} first, which rules out
        // {0,1} and {2,3} (0 -> 2, 1 -> 3); the optimum takes those two
        let p = problem(4, &[(1, 2, 3.0), (0, 1, 2.0), (2, 3, 2.0)], &[(0, 2), (1, 3)]);
        let g = greedy(&p);
        assert_eq!(saved(&p, &g), 3.0);
        let (c, r) = solve(&p, &MicroLp, Duration::from_secs(5), 64);
        assert!(runnable(&p, &c));
        assert_eq!(r.saved, 4.0, "{r:?}");
    }

    #[test]
    fn too_large_or_out_of_time_keeps_greedy() {
        let p = problem(3, &[(0, 1, 1.0), (1, 2, 1.0)], &[]);
        let (c, r) = solve(&p, &MicroLp, Duration::from_secs(5), 2);
        assert_eq!(c, greedy(&p));
        assert!(r.outcome.starts_with("greedy"), "{r:?}");
        struct Nothing;
        impl Solver for Nothing {
            fn solve(&self, _: &Ilp, _: Duration, _: &[f64]) -> Outcome {
                Outcome::Nothing("no time".into())
            }
            fn name(&self) -> &'static str {
                "nothing"
            }
        }
        let (c, r) = solve(&p, &Nothing, Duration::ZERO, 64);
        assert_eq!(c, greedy(&p));
        assert_eq!(r.outcome, "greedy: no time");
    }

    #[test]
    fn a_diagonal_pair_shares_a_loop_unless_a_path_leaves_it() {
        // 0 -> 1 diagonal (a fold of producer 0), 2 a sibling fold of 1
        let mut p = problem(3, &[(0, 1, 1.0), (1, 2, 1.0), (0, 2, 1.0)], &[(0, 1), (0, 2)]);
        p.along = vec![(0, 1), (0, 2)];
        assert_eq!(greedy(&p), vec![0, 0, 0]);
        let (c, r) = solve(&p, &MicroLp, Duration::from_secs(5), 64);
        assert_eq!((c, r.saved), (vec![0, 0, 0], 3.0), "{r:?}");
        // the same edge, but 1 also reads 2, which reads 0: fusing 0 and
        // 1 would put 2 both after and before their loop
        let mut p = problem(3, &[(0, 1, 1.0)], &[(0, 2), (2, 1), (0, 1)]);
        p.along = vec![(0, 1)];
        assert!(!runnable(&p, &[0, 0, 2]));
        let (c, _) = solve(&p, &MicroLp, Duration::from_secs(5), 64);
        assert_ne!(c[0], c[1]);
        assert_ne!(greedy(&p)[0], greedy(&p)[1]);
        // without the diagonal mark a dependence keeps them apart
        let p = problem(2, &[(0, 1, 1.0)], &[(0, 1)]);
        assert_eq!(greedy(&p), vec![0, 1]);
    }
}

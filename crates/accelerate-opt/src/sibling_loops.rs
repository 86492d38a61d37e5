//! Sibling loops of one scalar term merged into one loop (Note [Sibling
//! loops]).
//!
//! Note [Sibling loops]
//! A fold nested in a parallel context becomes a scalar `while` loop per
//! element (the lifter's counted loop: a counter from a start, a
//! condition on the counter alone, a step that adds to it). Two folds
//! over the same range in one element (the real and imaginary parts of
//! a spectrum's bin, a sum and a sum of squares of a row) become two
//! such loops, one after the other: each a chain of dependent additions,
//! which the C compiler neither interleaves nor merges. Merged, one loop
//! carries both states: the two chains overlap, and the counter, the
//! condition and whatever the steps read in common (CSE) are computed
//! once a step.
//!
//! Two loops are *siblings* when their counters are the same:
//!   - each state is a tuple whose component 0 is the counter;
//!   - the condition reads the state only as its component 0, the step's
//!     new component 0 is computed from component 0 alone, and the start's
//!     component 0, the condition and that update are the same terms
//!     (compared as text with the step's lets expanded, in one scope).
//!
//! Then both conditions hold at the same steps. The merged state is
//! the counter and every loop's other components, in order; each step
//! runs each loop's step on its part (its reads of its state's component
//! `i` read the merged state's component where that one is), and the
//! condition is the first loop's.
//!
//! Where: the loops on a term's *spine*, the subterms every evaluation
//! of it evaluates (Note [Strict reads]: the arguments of a primitive,
//! the components of a tuple, a let's body, and its bound term where the
//! body reads its variable on every path), that read none of the spine's
//! lets below their meeting point: a cluster's generate of tuples (Note
//! [Multi-output kernels]), `re * re + im * im` once single uses are
//! inlined, a sum and a sum of squares bound by lets. The merged loop is
//! bound at the meeting point (the spine's deepest point above them
//! all), and each loop becomes its part of the merged state. Each
//! term that is not on the spine above it (a branch, a loop's functions,
//! a let's bound term) is a term of its own for this.
//!
//! Errors: a merged loop fails if either loop fails, where before a
//! loop's failure failed only the uses of its variable (Note [Deferred
//! errors]). Loops on a spine are evaluated whenever the term is, so the
//! term fails with or without merging, and only which error is reported
//! when both fail may differ, as `docs/semantics.md` allows. Both loops
//! run the same number of steps, so neither terminates where the other
//! does not. A loop moves above the lets of the spine between it and the
//! meeting point, which it does not read: evaluated earlier, and still
//! once.

use crate::debruijn::shift;
use crate::strict::Levels;
use accelerate_base::array::EltTy;
use accelerate_base::error::SrcLoc;
use accelerate_ir::{ExpKind, Fun, OpenExp, PrimFun};
use std::collections::HashMap;

/// Nodes one term's walk visits at most (its spine; the terms off it
/// have budgets of their own).
const BUDGET: usize = 1 << 16;

/// Merges sibling loops in `e` and in every term below it; whether it
/// merged any.
pub(crate) fn merge_loops(e: &mut OpenExp) -> bool {
    // most terms have no two loops to merge: a walk without the spine's
    // sets says so first (the walk below builds a set at each node, and
    // ran in every round of the simplifier)
    if !two_loops(e) {
        return false;
    }
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        let mut w =
            Walk { path: Vec::new(), lets: Vec::new(), sites: Vec::new(), changed: false, budget: BUDGET };
        let whole = w.go(e, 0).is_some();
        let sites = std::mem::take(&mut w.sites);
        w.changed | (whole && merge_at(e, sites))
    })
}

/// Whether `e` has at least two `while` loops, found without recursion.
fn two_loops(e: &OpenExp) -> bool {
    let (mut stack, mut loops) = (vec![e], 0);
    while let Some(x) = stack.pop() {
        if matches!(x.kind, ExpKind::While { .. }) {
            loops += 1;
            if loops == 2 {
                return true;
            }
        }
        accelerate_ir::visit::each_child(x, |c| stack.push(c));
    }
    false
}

/// A walk of a term's spine (Note [Strict reads]: the subterms every
/// evaluation of it evaluates, as far as a branch-free reading tells:
/// a condition's test, a loop's start, `&&`'s first argument, a let's
/// body, and its bound term where the body reads its variable), which
/// lists the loops on it and merges the sibling loops of each term off
/// it (a branch, a loop's functions, a let's bound term the body may not
/// read) as a term of its own. Each node is visited once.
struct Walk {
    path: Vec<usize>,
    /// The positions in `path` that entered a let's body.
    lets: Vec<usize>,
    /// The loops on the spine.
    sites: Vec<Site>,
    changed: bool,
    budget: usize,
}

impl Walk {
    /// The levels `e` reads on every path (at `depth` lets below the
    /// term), as `strict::strict` finds them but without looking into
    /// branches; `None` past the budget.
    fn go(&mut self, e: &mut OpenExp, depth: i64) -> Option<Levels> {
        self.budget = self.budget.checked_sub(1)?;
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            let mut s = Levels::default();
            match &mut e.kind {
                ExpKind::Var(k) => {
                    s.vars.insert(depth - 1 - *k as i64);
                }
                ExpKind::Const(_) | ExpKind::Shape { .. } => {}
                ExpKind::Index { index, .. } | ExpKind::LinearIndex { index, .. } => {
                    s = self.child(index, depth, 0)?
                }
                ExpKind::Let(b, body) => {
                    self.lets.push(self.path.len());
                    let inner = self.child(body, depth + 1, 1);
                    self.lets.pop();
                    s = inner?;
                    if s.vars.remove(&depth) {
                        s.union(self.child(b, depth, 0)?);
                    } else {
                        self.changed |= merge_loops(b);
                    }
                }
                ExpKind::Cond(c, t, x) => {
                    s = self.child(c, depth, 0)?;
                    self.changed |= merge_loops(t) | merge_loops(x);
                }
                ExpKind::While { cond, body, init } => {
                    if self.sites.len() < MAX_SITES {
                        self.sites.push(Site { path: self.path.clone(), lets: self.lets.clone() });
                    }
                    self.changed |=
                        merge_loops(init) | merge_loops(&mut cond.body) | merge_loops(&mut body.body);
                }
                ExpKind::Prim(PrimFun::LAnd | PrimFun::LOr, args) => {
                    for (k, a) in args.iter_mut().enumerate() {
                        if k == 0 {
                            s = self.child(a, depth, 0)?;
                        } else {
                            self.changed |= merge_loops(a);
                        }
                    }
                }
                ExpKind::Tuple(cs) | ExpKind::Prim(_, cs) => {
                    for (k, c) in cs.iter_mut().enumerate() {
                        let x = self.child(c, depth, k)?;
                        s.union(x);
                    }
                }
                ExpKind::Prj(_, t) => s = self.child(t, depth, 0)?,
                ExpKind::ALet(..) => return None,
            }
            Some(s)
        })
    }

    fn child(&mut self, c: &mut OpenExp, depth: i64, k: usize) -> Option<Levels> {
        self.path.push(k);
        let r = self.go(c, depth);
        self.path.pop();
        r
    }
}

/// Child `k` of a node on a spine, as `Walk` numbers them: a tuple's
/// components and a primitive's arguments in order, child 0 of the rest
/// (a projection's tuple, an array read's index, a condition's test, a
/// let's bound term), 1 a let's body.
fn spine_child(e: &mut OpenExp, k: usize) -> &mut OpenExp {
    match &mut e.kind {
        ExpKind::Tuple(cs) | ExpKind::Prim(_, cs) => &mut cs[k],
        ExpKind::Let(b, body) => {
            if k == 0 {
                b
            } else {
                body
            }
        }
        ExpKind::Prj(_, x) | ExpKind::Cond(x, ..) => x,
        ExpKind::Index { index, .. } | ExpKind::LinearIndex { index, .. } => index,
        _ => unreachable!("a node with children on a spine"),
    }
}

/// A counted loop (Note [Sibling loops]): its text key, its state's
/// components' types.
struct Counted {
    key: String,
    parts: Vec<EltTy>,
}

/// `e`'s loop as a counted loop, if it is one.
fn counted(e: &OpenExp) -> Option<Counted> {
    let ExpKind::While { cond, body, init } = &e.kind else { return None };
    let EltTy::Tuple(parts) = cond.params.first()? else { return None };
    if parts.is_empty() {
        return None;
    }
    let (chain, result) = lets(&body.body);
    let ExpKind::Tuple(rs) = &result.kind else { return None };
    if rs.len() != parts.len() {
        return None;
    }
    let (cchain, cresult) = lets(&cond.body);
    let mut left = MAX_RENDER;
    let budget = &mut left;
    let start = match &init.kind {
        ExpKind::Tuple(is) => render(&is[0], &[], false, budget)?,
        _ => format!("{}.0", render(init, &[], false, budget)?),
    };
    let test = render(cresult, &cchain, true, budget)?;
    let key = format!("{start}|{test}|{}", render(&rs[0], &chain, true, budget)?);
    Some(Counted { key, parts: parts.clone() })
}

/// A chain of lets: the bound terms, outermost first, and the body.
fn lets(e: &OpenExp) -> (Vec<&OpenExp>, &OpenExp) {
    let (mut chain, mut x) = (Vec::new(), e);
    while let ExpKind::Let(b, body) = &x.kind {
        chain.push(&**b);
        x = body;
    }
    (chain, x)
}

/// Nodes rendered at most for one control term (a let read twice is
/// rendered twice): control terms are small.
const MAX_RENDER: usize = 512;

/// `e`, under the lets `chain` (outermost first) of a loop function
/// (`state`: the function's parameter is the variable after the chain)
/// or in the loop's own scope, as text: the chain's variables expanded,
/// the state only as its counter `c`, other variables by index in the
/// loop's scope. `None` for anything else (reads, loops, branches, the
/// whole state), or past `budget` nodes.
fn render(e: &OpenExp, chain: &[&OpenExp], state: bool, budget: &mut usize) -> Option<String> {
    *budget = budget.checked_sub(1)?;
    let mut go = |x: &OpenExp, chain: &[&OpenExp]| render(x, chain, state, budget);
    Some(match &e.kind {
        ExpKind::Var(k) if *k < chain.len() => {
            let p = chain.len() - 1 - k;
            format!("({})", go(chain[p], &chain[..p])?)
        }
        ExpKind::Var(k) => match (k - chain.len(), state) {
            (0, true) => return None,
            (j, true) => format!("v{}", j - 1),
            (j, false) => format!("v{j}"),
        },
        ExpKind::Prj(0, t) if state && matches!(t.kind, ExpKind::Var(k) if k == chain.len()) => "c".into(),
        ExpKind::Prj(i, t) => format!("{}.{i}", go(t, chain)?),
        ExpKind::Const(v) => format!("{v:?}"),
        ExpKind::Prim(op, args) => {
            let args: Option<Vec<String>> = args.iter().map(|a| go(a, chain)).collect();
            format!("{op:?}({})", args?.join(","))
        }
        ExpKind::Tuple(es) => {
            let es: Option<Vec<String>> = es.iter().map(|a| go(a, chain)).collect();
            format!("({})", es?.join(","))
        }
        _ => return None,
    })
}

/// Loops on one spine listed and compared at most, so that a term with
/// many is not quadratic.
const MAX_SITES: usize = 64;

/// The sibling loops on `e`'s spine (Note [Strict reads]) merged, bound
/// at the spine's deepest point above them all, provided none reads a
/// let of the spine below that point; whether there were any (one group
/// of siblings a call).
fn merge_at(e: &mut OpenExp, sites: Vec<Site>) -> bool {
    let loops: Vec<(OpenExp, usize)> = sites
        .iter()
        .map(|s| {
            let w = at(e, &s.path).clone();
            let low = lowest_read(&w, 0);
            (w, low)
        })
        .collect();
    // each site's key with the `below` lets above it left out (None: it
    // reads one of them, or is not a counted loop), made once
    let mut keys: HashMap<(usize, usize), Option<String>> = HashMap::new();
    let mut key = |i: usize, below: usize| -> Option<String> {
        keys.entry((i, below))
            .or_insert_with(|| {
                let (w, low) = &loops[i];
                (below <= *low).then_some(())?;
                let mut w = w.clone();
                shift(&mut w, 0, -(below as isize));
                counted(&w).map(|c| c.key)
            })
            .clone()
    };
    for a in 0..sites.len() {
        for b in a + 1..sites.len() {
            let top = sites[a].path.iter().zip(&sites[b].path).take_while(|(x, y)| x == y).count();
            let Some(k) = key(a, sites[a].below(top)) else { continue };
            if key(b, sites[b].below(top)).as_ref() != Some(&k) {
                continue;
            }
            // the group: every site below the meeting point with this key
            let group: Vec<usize> = (0..sites.len())
                .filter(|&i| {
                    sites[i].path.starts_with(&sites[a].path[..top])
                        && key(i, sites[i].below(top)).as_ref() == Some(&k)
                })
                .collect();
            merge_group(e, &sites, top, &group, &loops);
            return true;
        }
    }
    false
}

/// A loop on a spine.
struct Site {
    /// Where it is (`spine_child`'s numbers).
    path: Vec<usize>,
    /// The positions in `path` that enter a let's body.
    lets: Vec<usize>,
}

impl Site {
    /// The number of lets between the point at `top` steps of its path
    /// and the loop.
    fn below(&self, top: usize) -> usize {
        self.lets.len() - self.lets.partition_point(|&p| p < top)
    }
}

/// The loops at the sites `group` merged, bound at the point `top` steps
/// down their (common) paths, each site its part of the merged state.
fn merge_group(e: &mut OpenExp, sites: &[Site], top: usize, group: &[usize], loops: &[(OpenExp, usize)]) {
    let loc = e.loc;
    let mut members = Vec::new();
    for &i in group {
        *at(e, &sites[i].path) = OpenExp::new(ExpKind::Tuple(Vec::new()), loc);
        let mut w = loops[i].0.clone();
        shift(&mut w, 0, -(sites[i].below(top) as isize));
        let Some(lp) = counted(&w) else { unreachable!("a counted loop") };
        members.push((w, lp.parts));
    }
    let (merged, offsets) = merge(members, loc);
    // the point under the merged loop's let: at a site under `d` more
    // lets, the merged state is variable `d`
    let point = at(e, &sites[group[0]].path[..top]);
    shift(point, 0, 1);
    for (j, &i) in group.iter().enumerate() {
        *at(point, &sites[i].path[top..]) = offsets.part(j, sites[i].below(top), loc);
    }
    let inner = std::mem::replace(point, OpenExp::new(ExpKind::Tuple(Vec::new()), loc));
    *point = OpenExp::new(ExpKind::Let(Box::new(merged), Box::new(inner)), loc);
}

/// The subterm at `path` on `e`'s spine.
fn at<'a>(e: &'a mut OpenExp, path: &[usize]) -> &'a mut OpenExp {
    path.iter().fold(e, |x, &k| spine_child(x, k))
}

/// The lowest variable of its scope `e` reads (`inner` binders up), or
/// `usize::MAX`.
fn lowest_read(e: &OpenExp, inner: usize) -> usize {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &e.kind {
        ExpKind::Var(k) => k.checked_sub(inner).unwrap_or(usize::MAX),
        ExpKind::Let(b, body) => lowest_read(b, inner).min(lowest_read(body, inner + 1)),
        ExpKind::While { cond, body, init } => lowest_read(init, inner)
            .min(lowest_read(&cond.body, inner + 1))
            .min(lowest_read(&body.body, inner + 1)),
        _ => {
            let mut low = usize::MAX;
            accelerate_ir::visit::each_child(e, |c| low = low.min(lowest_read(c, inner)));
            low
        }
    })
}

/// A term's kind, taken out.
fn kind(mut e: OpenExp) -> ExpKind {
    std::mem::replace(&mut e.kind, ExpKind::Tuple(Vec::new()))
}

/// Where each loop's part of the merged state is: the counter at 0, loop
/// `j`'s other components from `starts[j]`.
struct Offsets {
    starts: Vec<usize>,
    arity: Vec<usize>,
}

impl Offsets {
    /// Loop `j`'s state, from the merged state in variable `var`.
    fn part(&self, j: usize, var: usize, loc: SrcLoc) -> OpenExp {
        let v = || Box::new(OpenExp::new(ExpKind::Var(var), loc));
        let mut cs = vec![OpenExp::new(ExpKind::Prj(0, v()), loc)];
        cs.extend((1..self.arity[j]).map(|t| OpenExp::new(ExpKind::Prj(self.starts[j] + t - 1, v()), loc)));
        OpenExp::new(ExpKind::Tuple(cs), loc)
    }

    /// A function of loop `j`'s state (variable `depth` here) made a
    /// function of the merged state: each component read from its place
    /// in it.
    fn read_part(&self, e: &mut OpenExp, j: usize, depth: usize) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &mut e.kind {
            ExpKind::Prj(t, x) if matches!(x.kind, ExpKind::Var(k) if k == depth) => {
                *t = if *t == 0 { 0 } else { self.starts[j] + *t - 1 };
            }
            ExpKind::Var(k) if *k == depth => *e = self.part(j, depth, e.loc),
            ExpKind::Let(b, body) => {
                self.read_part(b, j, depth);
                self.read_part(body, j, depth + 1);
            }
            ExpKind::While { cond, body, init } => {
                self.read_part(init, j, depth);
                self.read_part(&mut cond.body, j, depth + 1);
                self.read_part(&mut body.body, j, depth + 1);
            }
            _ => crate::debruijn::for_each_child(e, |c| self.read_part(c, j, depth)),
        })
    }

    /// The merged state from the loops' states, bound by the innermost
    /// `n` lets (loop `j` in variable `n - 1 - j`).
    fn whole(&self, loc: SrcLoc) -> OpenExp {
        let n = self.starts.len();
        let v = |j: usize| Box::new(OpenExp::new(ExpKind::Var(n - 1 - j), loc));
        let mut cs = vec![OpenExp::new(ExpKind::Prj(0, v(0)), loc)];
        for j in 0..n {
            cs.extend((1..self.arity[j]).map(|t| OpenExp::new(ExpKind::Prj(t, v(j)), loc)));
        }
        OpenExp::new(ExpKind::Tuple(cs), loc)
    }
}

/// Counted loops of one key, in one scope, as one loop (Note [Sibling
/// loops]), and where each one's state is in it.
fn merge(loops: Vec<(OpenExp, Vec<EltTy>)>, loc: SrcLoc) -> (OpenExp, Offsets) {
    let mut offsets = Offsets { starts: Vec::new(), arity: Vec::new() };
    let mut tys = vec![loops[0].1[0].clone()];
    for (_, parts) in &loops {
        offsets.starts.push(tys.len());
        offsets.arity.push(parts.len());
        tys.extend(parts[1..].iter().cloned());
    }
    let ty = EltTy::Tuple(tys);
    let n = loops.len();
    let (mut conds, mut steps, mut inits) = (Vec::new(), Vec::new(), Vec::new());
    for (w, _) in loops {
        let ExpKind::While { cond, body, init } = kind(w) else { unreachable!("a counted loop") };
        conds.push(cond.body);
        steps.push(body.body);
        inits.push(*init);
    }
    // the condition: the first loop's, on its part of the state
    let mut cond = conds.swap_remove(0);
    offsets.read_part(&mut cond, 0, 0);
    // the step: `let r_j = step_j` (on its part of the state) each, then
    // the merged state of the results
    let mut step = offsets.whole(loc);
    let mut init = offsets.whole(loc);
    for (j, (mut s, mut i)) in steps.into_iter().zip(inits).enumerate().rev() {
        offsets.read_part(&mut s, j, 0);
        shift(&mut s, 0, j as isize);
        step = OpenExp::new(ExpKind::Let(Box::new(s), Box::new(step)), loc);
        shift(&mut i, 0, j as isize);
        init = OpenExp::new(ExpKind::Let(Box::new(i), Box::new(init)), loc);
    }
    debug_assert!(n > 1);
    let fun = |body| Box::new(Fun { params: vec![ty.clone()], body });
    let merged = ExpKind::While { cond: fun(cond), body: fun(step), init: Box::new(init) };
    (OpenExp::new(merged, loc), offsets)
}

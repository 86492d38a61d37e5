//! Loop-invariant arrays hoisted out of `awhile` bodies (Note [Hoisting
//! invariant arrays]).
//!
//! Note [Hoisting invariant arrays]
//! Sharing recovery binds a shared array where all its uses meet (ICFP'13
//! §3): for an array computed before a loop but used only inside its
//! body, that is inside the body, so every iteration computes it again.
//! PageRank's out-degrees, a `permute` over every link read by each
//! iteration's shares, were counted ten times in ten iterations: at 2^24
//! links that was about 0.5 s of the program's 0.7 s, where the
//! hand-written loops count them once. So a binding on the let chain at
//! the top of an `awhile` body that reads neither the loop's state nor a
//! binding that stays in the loop is bound before the `awhile` instead,
//! as a compiler hoists loop-invariant code.
//!
//! The hoisted binding is computed even when the loop runs no iteration:
//! at most one iteration's worth of its work, done once. An error it
//! raises fails only its uses (Note [Deferred errors]), so a loop that
//! never runs still does not fail on its account (on the CUDA backend,
//! which does not defer errors yet, it does; docs/semantics.md).
//!
//! One pass, linear in the program: each binding of a chain is read once
//! to find the chain's variables it uses, and every term is renumbered
//! once, by a map from the old environment to the new.

use crate::avars::{exp_arrays_mut, parts_mut, Part};
use accelerate_base::error::SrcLoc;
use accelerate_ir::*;

/// Hoists the invariant bindings of every `awhile` body of the program.
pub fn hoist_program(mut p: Program) -> Program {
    hoist(&mut p.body);
    p
}

fn hoist(a: &mut OpenAcc) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        // inner loops first: what leaves them may then leave this one
        for part in parts_mut(a) {
            if let Part::Acc(x, _) = part {
                hoist(x);
            }
        }
        if matches!(a.kind, AccKind::Awhile { .. }) {
            hoist_loop(a);
        }
    })
}

/// Hoists the invariant bindings of the body of the `awhile` `a`, and the
/// invariant operations inside the rest of it.
fn hoist_loop(a: &mut OpenAcc) {
    let loc = a.loc;
    let AccKind::Awhile { pred, body, init } = &mut a.kind else { return };
    // the chain: bindings 0 .. m, then the rest; in the environment of
    // binding p, variable j < p is binding p - 1 - j, p the state, and
    // p + 1 + i outer i
    let mut rest = std::mem::replace(&mut *body.body, OpenAcc::new(AccKind::Var(0), loc));
    float_tuple_lets(&mut rest);
    let mut chain = Vec::new();
    split_chain(&mut rest, &mut chain);
    let mut hoisted = vec![false; chain.len()];
    for p in 0..chain.len() {
        // hoisted if, of variables 0 ..= p, it reads only hoisted bindings
        let inner = free_below(&mut chain[p].0, p + 1);
        hoisted[p] = inner.iter().all(|&j| j < p && hoisted[p - 1 - j]);
    }
    let mut layout = Layout::new(hoisted);
    // the invariant operations inside what stays, taken out (each leaves a
    // placeholder that the renumbering resolves)
    let mut taken = Vec::new();
    let m = chain.len();
    for (p, (b, _)) in chain.iter_mut().enumerate() {
        if !layout.hoisted[p] {
            take_invariant(b, p, &layout, &mut taken);
        }
    }
    take_invariant(&mut rest, m, &layout, &mut taken);
    layout.taken = taken.len();
    let leaving = layout.count + layout.taken;
    if leaving == 0 {
        *body.body = rebuild(chain, rest);
        return;
    }
    let (mut outside, mut inside) = (Vec::new(), Vec::new());
    for (p, (mut b, bloc)) in chain.into_iter().enumerate() {
        if layout.hoisted[p] {
            remap(&mut b, 0, &|j| layout.hoisted_index(j, p));
            outside.push((b, bloc));
        } else {
            remap(&mut b, 0, &|j| layout.kept_index(j, p));
            inside.push((b, bloc));
        }
    }
    for (e, t) in taken.into_iter().enumerate() {
        let (mut b, p, depth) = (t.term, t.p, t.depth);
        remap(&mut b, 0, &|v| layout.taken_index(v - depth, p, e));
        outside.push((b, t.loc));
    }
    remap(&mut rest, 0, &|j| layout.kept_index(j, m));
    *body.body = rebuild(inside, rest);
    // the predicate and the initial state see what left too
    remap(&mut pred.body, 1, &|j| j + leaving);
    remap(init, 0, &|j| j + leaving);
    let looped = std::mem::replace(a, OpenAcc::new(AccKind::Var(0), loc));
    *a = rebuild(outside, looped);
}

/// Where a placeholder for the `e`-th operation taken out of the loop
/// stands: `PLACEHOLDER + e`, above every real variable.
const PLACEHOLDER: usize = usize::MAX / 2;

/// An operation taken out of binding `p` (or the rest, `p` = the chain's
/// length) of a loop's body, from under `depth` binders inside it.
struct Taken {
    term: OpenAcc,
    loc: SrcLoc,
    p: usize,
    depth: usize,
}

/// Which bindings of a loop body's chain leave it, and how every
/// environment is renumbered. Outside the loop come the hoisted bindings
/// in order (`count`), then the operations taken out (`taken`); inside,
/// a kept binding sees the kept ones before it, the state, all of those,
/// then the outer variables.
struct Layout {
    hoisted: Vec<bool>,
    /// How many hoisted (kept) bindings come before each position.
    before_h: Vec<usize>,
    before_k: Vec<usize>,
    count: usize,
    taken: usize,
}

impl Layout {
    fn new(hoisted: Vec<bool>) -> Layout {
        let (mut before_h, mut before_k) = (Vec::with_capacity(hoisted.len() + 1), Vec::new());
        let (mut h, mut k) = (0, 0);
        for &is in &hoisted {
            before_h.push(h);
            before_k.push(k);
            if is {
                h += 1;
            } else {
                k += 1;
            }
        }
        before_h.push(h);
        before_k.push(k);
        Layout { hoisted, before_h, before_k, count: h, taken: 0 }
    }

    /// Whether variable `j` of position `p`'s environment is a hoisted
    /// binding or an outer variable.
    fn invariant(&self, j: usize, p: usize) -> bool {
        if j < p {
            self.hoisted[p - 1 - j]
        } else {
            j > p
        }
    }

    /// The index, outside the loop, of variable `j` of hoisted binding
    /// `p`: the hoisted bindings before it, then the outer variables.
    fn hoisted_index(&self, j: usize, p: usize) -> usize {
        if j < p {
            self.before_h[p] - 1 - self.before_h[p - 1 - j]
        } else {
            self.before_h[p] + (j - p - 1)
        }
    }

    /// The index, outside the loop, of variable `j` of position `p`'s
    /// environment read by the `e`-th operation taken out: the operations
    /// taken before it, the hoisted bindings, then the outer variables.
    fn taken_index(&self, j: usize, p: usize, e: usize) -> usize {
        if j < p {
            e + (self.count - 1 - self.before_h[p - 1 - j])
        } else {
            e + self.count + (j - p - 1)
        }
    }

    /// The new index of variable `j` of a kept binding (or the rest) at
    /// position `p`, or of the placeholder `j`.
    fn kept_index(&self, j: usize, p: usize) -> usize {
        let outside = self.before_k[p] + 1;
        if j >= PLACEHOLDER {
            outside + (self.taken - 1 - (j - PLACEHOLDER))
        } else if j < p {
            let q = p - 1 - j;
            if self.hoisted[q] {
                outside + self.taken + (self.count - 1 - self.before_h[q])
            } else {
                self.before_k[p] - 1 - self.before_k[q]
            }
        } else if j == p {
            self.before_k[p]
        } else {
            outside + self.taken + self.count + (j - p - 1)
        }
    }
}

/// Whether an operation always makes its array in memory, so that
/// computing it once outside a loop saves its whole work: a reduction,
/// a scan, a permutation, a stencil, a foreign call or a loop. (A `map`,
/// a `generate` and the like are fused into their consumers instead.)
fn manifest(a: &OpenAcc) -> bool {
    matches!(
        a.kind,
        AccKind::Fold { .. }
            | AccKind::FoldKeep { .. }
            | AccKind::FoldSeg { .. }
            | AccKind::Scan { .. }
            | AccKind::Permute { .. }
            | AccKind::Stencil { .. }
            | AccKind::Foreign { .. }
            | AccKind::Awhile { .. }
    )
}

/// Takes the largest invariant operations that make their arrays in
/// memory out of `a`, at position `p` of a loop body's chain, into
/// `taken`, each replaced by its placeholder.
fn take_invariant(a: &mut OpenAcc, p: usize, layout: &Layout, taken: &mut Vec<Taken>) {
    if invariant_parts(a, 0, p, layout, taken) {
        take_all(a, 0, p, taken);
    }
}

/// Whether `a` (under `depth` binders) reads only invariant variables;
/// where it does not, the invariant parts of it that make arrays in
/// memory are taken out. Each node is visited at most twice.
fn invariant_parts(a: &mut OpenAcc, depth: usize, p: usize, layout: &Layout, taken: &mut Vec<Taken>) -> bool {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        let ok = |k: usize| k >= depth && layout.invariant(k - depth, p);
        if let AccKind::Var(k) = a.kind {
            return ok(k);
        }
        let mut inv = true;
        let mut children = Vec::new();
        // (nothing is taken out of a foreign call's fallback, which the
        // backends with an implementation do not run)
        let foreign = matches!(a.kind, AccKind::Foreign { .. });
        for part in parts_mut(a) {
            match part {
                Part::Exp(e) => exp_arrays_mut(e, &mut |k| inv &= ok(*k)),
                Part::Fun(f) => exp_arrays_mut(&mut f.body, &mut |k| inv &= ok(*k)),
                Part::Acc(x, binders) if foreign && binders > 0 => {
                    // (the fallback's own parameter is no loop variable)
                    visit_free(x, 0, &mut |k| {
                        if k >= binders {
                            inv &= ok(k - binders)
                        }
                    });
                }
                Part::Acc(x, binders) => {
                    let i = invariant_parts(x, depth + binders, p, layout, taken);
                    inv &= i;
                    children.push((x, binders, i));
                }
            }
        }
        if !inv {
            for (x, binders, i) in children {
                if i {
                    take_all(x, depth + binders, p, taken);
                }
            }
        }
        inv
    })
}

/// Takes out the largest operations of the invariant `a` (under `depth`
/// binders) that make their arrays in memory.
fn take_all(a: &mut OpenAcc, depth: usize, p: usize, taken: &mut Vec<Taken>) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        if manifest(a) {
            let loc = a.loc;
            let holder = OpenAcc::new(AccKind::Var(depth + PLACEHOLDER + taken.len()), loc);
            taken.push(Taken { term: std::mem::replace(a, holder), loc, p, depth });
            return;
        }
        for part in parts_mut(a) {
            if let Part::Acc(x, binders) = part {
                take_all(x, depth + binders, p, taken);
            }
        }
    })
}

/// Takes the let chain at the top of `a` into `chain` (binding, where),
/// leaving `a` its body.
fn split_chain(a: &mut OpenAcc, chain: &mut Vec<(OpenAcc, SrcLoc)>) {
    let loc = a.loc;
    while matches!(a.kind, AccKind::Let(..)) {
        let AccKind::Let(mut b, mut next) = std::mem::replace(&mut a.kind, AccKind::Var(0)) else { break };
        chain.push((std::mem::replace(&mut *b, OpenAcc::new(AccKind::Var(0), loc)), a.loc));
        *a = std::mem::replace(&mut *next, OpenAcc::new(AccKind::Var(0), loc));
    }
}

/// A tuple of terms with let chains at their tops, as a loop's body
/// returning its state's components is, rewritten as one chain (the
/// components' chains in order) over the tuple of their bodies, so that
/// the bindings of every component are on the chain `hoist_loop` reads.
/// Each term is renumbered once.
fn float_tuple_lets(a: &mut OpenAcc) {
    let AccKind::Tuple(ts) = &mut a.kind else { return };
    let mut chains: Vec<Vec<(OpenAcc, SrcLoc)>> = Vec::with_capacity(ts.len());
    for t in ts.iter_mut() {
        let mut chain = Vec::new();
        split_chain(t, &mut chain);
        chains.push(chain);
    }
    let total: usize = chains.iter().map(Vec::len).sum();
    if total == 0 {
        return;
    }
    // component i's chain follows the chains of the components before it
    // (`before` bindings): its own bindings keep their indices, its outer
    // variables move past them
    let mut before = 0;
    let mut lets = Vec::with_capacity(total);
    for (i, chain) in chains.into_iter().enumerate() {
        let own = chain.len();
        for (p, (mut b, bloc)) in chain.into_iter().enumerate() {
            remap(&mut b, 0, &|j| if j < p { j } else { j + before });
            lets.push((b, bloc));
        }
        // its body sees the chains after it too: `after` more bindings
        // nearer than its own
        let after = total - before - own;
        remap(&mut ts[i], 0, &|j| if j < own { j + after } else { j + total - own });
        before += own;
    }
    let tuple = std::mem::replace(a, OpenAcc::new(AccKind::Var(0), a.loc));
    *a = rebuild(lets, tuple);
}

/// `let b_1 in .. let b_n in body`.
fn rebuild(chain: Vec<(OpenAcc, SrcLoc)>, body: OpenAcc) -> OpenAcc {
    chain
        .into_iter()
        .rev()
        .fold(body, |body, (b, loc)| OpenAcc::new(AccKind::Let(Box::new(b), Box::new(body)), loc))
}

/// The free array variables of `a` below `limit`, each once.
fn free_below(a: &mut OpenAcc, limit: usize) -> Vec<usize> {
    let mut seen = vec![false; limit];
    visit_free(a, 0, &mut |j| {
        if j < limit {
            seen[j] = true;
        }
    });
    seen.iter().enumerate().filter(|(_, &s)| s).map(|(j, _)| j).collect()
}

/// Calls `f` on every free array variable of `a`, under `depth` binders
/// of the term being visited (as an index of its environment).
fn visit_free(a: &mut OpenAcc, depth: usize, f: &mut impl FnMut(usize)) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        if let AccKind::Var(k) = a.kind {
            if k >= depth {
                f(k - depth);
            }
            return;
        }
        for part in parts_mut(a) {
            match part {
                Part::Exp(e) => exp_arrays_mut(e, &mut |k| {
                    if *k >= depth {
                        f(*k - depth)
                    }
                }),
                Part::Fun(g) => exp_arrays_mut(&mut g.body, &mut |k| {
                    if *k >= depth {
                        f(*k - depth)
                    }
                }),
                Part::Acc(x, binders) => visit_free(x, depth + binders, f),
            }
        }
    })
}

/// Renumbers every free array variable `j` of `a` (under `depth` binders)
/// as `new(j)`.
fn remap(a: &mut OpenAcc, depth: usize, new: &impl Fn(usize) -> usize) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        if let AccKind::Var(k) = &mut a.kind {
            if *k >= depth {
                *k = depth + new(*k - depth);
            }
            return;
        }
        for part in parts_mut(a) {
            match part {
                Part::Exp(e) => remap_exp(e, depth, new),
                Part::Fun(g) => remap_exp(&mut g.body, depth, new),
                Part::Acc(x, binders) => remap(x, depth + binders, new),
            }
        }
    })
}

fn remap_exp(e: &mut OpenExp, depth: usize, new: &impl Fn(usize) -> usize) {
    exp_arrays_mut(e, &mut |k| {
        if *k >= depth {
            *k = depth + new(*k - depth);
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use accelerate_base::array::{ArrayTy, ArraysTy, EltTy, ScalarTy};

    fn var(k: usize) -> OpenAcc {
        OpenAcc::new(AccKind::Var(k), SrcLoc::caller())
    }

    fn let_(b: OpenAcc, body: OpenAcc) -> OpenAcc {
        OpenAcc::new(AccKind::Let(Box::new(b), Box::new(body)), SrcLoc::caller())
    }

    fn tuple(ts: Vec<OpenAcc>) -> OpenAcc {
        OpenAcc::new(AccKind::Tuple(ts), SrcLoc::caller())
    }

    fn vector() -> ArraysTy {
        ArraysTy::Array(ArrayTy { rank: 1, elt: EltTy::Scalar(ScalarTy::F32) })
    }

    fn awhile(pred: OpenAcc, body: OpenAcc, init: OpenAcc) -> OpenAcc {
        OpenAcc::new(
            AccKind::Awhile {
                pred: AFun { param: vector(), body: Box::new(pred) },
                body: AFun { param: vector(), body: Box::new(body) },
                init: Box::new(init),
            },
            SrcLoc::caller(),
        )
    }

    /// Outer arrays o0 (Var 0 outside), o1; in the body, the state s.
    /// `let a = o1 (invariant) in let b = (s, a) (kept) in let c = (a, o0)
    /// (invariant: reads a, hoisted) in (b, c, s)` becomes `let a = o1 in
    /// let c = (a, o0) in awhile .. (let b = (s, a) in (b, c, s))`.
    #[test]
    fn invariant_bindings_leave_the_body_and_the_rest_is_renumbered() {
        // body env at the top: s = 0, o0 = 1, o1 = 2
        let body = let_(
            var(2),
            let_(
                tuple(vec![var(1), var(0)]),
                let_(tuple(vec![var(1), var(3)]), tuple(vec![var(1), var(0), var(3)])),
            ),
        );
        // pred reads the state and o0; init is o1
        let mut a = awhile(tuple(vec![var(0), var(1)]), body, var(1));
        hoist(&mut a);
        // outside: let a = o1 (Var 1) in let c = (a, o0) = (Var 0, Var 1) in awhile
        let AccKind::Let(a_b, rest) = &a.kind else { panic!("{a:?}") };
        assert!(matches!(a_b.kind, AccKind::Var(1)), "{a_b:?}");
        let AccKind::Let(c_b, looped) = &rest.kind else { panic!("{rest:?}") };
        assert_eq!(format!("{:?}", c_b.kind), format!("{:?}", tuple(vec![var(0), var(1)]).kind));
        let AccKind::Awhile { pred, body, init } = &looped.kind else { panic!("{looped:?}") };
        // init: o1 under two more lets
        assert!(matches!(init.kind, AccKind::Var(3)), "{init:?}");
        // pred env: s, c, a, o0, o1
        assert_eq!(format!("{:?}", pred.body.kind), format!("{:?}", tuple(vec![var(0), var(3)]).kind));
        // body: let b = (s, a) = (Var 0, Var 2) in (b, c, s) = (Var 0, Var 2, Var 1)
        let AccKind::Let(b_b, rest) = &body.body.kind else { panic!("{body:?}") };
        assert_eq!(format!("{:?}", b_b.kind), format!("{:?}", tuple(vec![var(0), var(2)]).kind));
        assert_eq!(format!("{:?}", rest.kind), format!("{:?}", tuple(vec![var(0), var(2), var(1)]).kind));
    }
}

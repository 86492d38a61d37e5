//! Shrinking the lets of a scalar term, in two linear passes (the
//! simplifier's let rewrites, `trafo::simplify`):
//!
//! - a let whose variable is unused is dropped (its failure, if any, was
//!   deferred to uses that do not exist);
//! - a let bound to a variable or a constant, or whose variable is used
//!   once and not inside a loop function, is inlined at its uses;
//! - a let bound to a let is floated: `let x = (let y = a in b) in c` is
//!   `let y = a in let x = b in c`, so that nested lets read as a chain.
//!
//! One pass counts the uses of every let's variable; the other rebuilds the
//! term top-down, deciding each let from its count, and never shifts or
//! substitutes into a term that is already built (Note [Shrinking without
//! substitution]). The cost is linear in the term, however long its chains
//! of lets: a chain of 10^5 maps fused into one function is 10^5 lets,
//! which substituting one let at a time (each a traversal of the rest)
//! took minutes to inline.
//!
//! Keeps: the meaning, deferred errors included (a term used once is
//! evaluated where its one use is, which is where its error was raised;
//! one used inside a loop function is not moved there, where it would run
//! once per iteration), and the verifier's invariants.

use accelerate_base::error::SrcLoc;
use accelerate_ir::{ExpKind, OpenExp};
use std::collections::HashMap;

// Note [Shrinking without substitution]
// Inlining `let x = v in body` by substituting `v` for `x` costs a
// traversal of `body` (and of `v` for each use, to shift it under the
// binders between), so a chain of n lets each used once, as fusion
// composes n maps, costs O(n^2). Here the term is rebuilt once, top-down:
//
// - The environment maps each variable of the *input* to what it became:
//   `Kept(level)`, bound in the output at that depth (the number of output
//   binders around it), so that a use at output depth d is the variable
//   d - 1 - level, whatever was dropped, inlined or floated in between;
//   `Const`, copied to its uses; `Once`, the bound term itself, not yet
//   rebuilt, which is rebuilt where its one use is, and so at the output
//   depth of that use (its binders get their levels there, and its
//   variables their indices from there): no term is ever shifted.
// - A `Once` term is rebuilt in the environment of its let, not of its
//   use: a *frame* per rebuilt `Once` term holds the variables it binds
//   and points at the frame and length of the environment its let was in.
//   A variable's entry is found by walking up as many frames as `Once`
//   terms are nested lexically around it, which is a few.
// - Counts (up to 2, and whether a use is inside a loop function the let
//   is outside of) come from one pass before, keyed by the address of the
//   let's bound term, which the rebuilding pass finds in the same box
//   before it moves the term (a `Once` term is rebuilt after lets that
//   come after it in the term, so an order of visits cannot key them).
//
// A let bound to a let is kept, its inner lets floated, and inlined by the
// next round if its variable is used once: the inner lets must stay bound
// where its bound term can see them and its body cannot, which a frame
// could express but a let in the output is simpler.

/// How a let's variable is used, counted up to 2.
#[derive(Clone, Copy, Debug)]
struct Count {
    uses: u8,
    /// Whether a use is inside a loop function that the let is outside.
    in_loop: bool,
}

/// Counts the uses of every let's variable in `e`, a body under `params`
/// parameters.
struct Counter {
    counts: HashMap<*const OpenExp, Count>,
    /// For each variable in scope (innermost last): its let's key and the
    /// number of loop functions around that let, or `None` for a parameter.
    scope: Vec<Option<(*const OpenExp, usize)>>,
    loops: usize,
}

impl Counter {
    fn count(&mut self, e: &OpenExp) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            // a chain of lets is walked in a loop, not by recursion
            let mut e = e;
            let mut pushed = 0;
            while let ExpKind::Let(b, body) = &e.kind {
                self.count(b);
                let key: *const OpenExp = &**b;
                self.counts.insert(key, Count { uses: 0, in_loop: false });
                self.scope.push(Some((key, self.loops)));
                pushed += 1;
                e = body;
            }
            match &e.kind {
                ExpKind::Var(k) => {
                    if let Some(Some((key, loops))) =
                        self.scope.len().checked_sub(k + 1).map(|i| self.scope[i])
                    {
                        let in_loop = self.loops > loops;
                        if let Some(c) = self.counts.get_mut(&key) {
                            c.uses = (c.uses + 1).min(2);
                            c.in_loop |= in_loop;
                        }
                    }
                }
                ExpKind::While { cond, body, init } => {
                    self.count(init);
                    self.loops += 1;
                    for f in [cond, body] {
                        self.scope.push(None);
                        self.count(&f.body);
                        self.scope.pop();
                    }
                    self.loops -= 1;
                }
                _ => accelerate_ir::visit::each_child(e, |c| self.count(c)),
            }
            self.scope.truncate(self.scope.len() - pushed);
        })
    }
}

/// What an input variable became (Note [Shrinking without substitution]).
enum Entry {
    /// Bound in the output at this depth.
    Kept(usize),
    /// A constant, copied to each use.
    Const(OpenExp),
    /// Used once: the bound term, rebuilt at its use, in the environment
    /// of its let (a frame and the length of its entries).
    Once(Option<OpenExp>, (usize, usize)),
    /// Unused: the let is dropped.
    Dropped,
}

/// The variables bound by one term being rebuilt, and the environment of
/// the let that term was bound by (`None` for the whole body).
struct Frame {
    entries: Vec<Entry>,
    parent: Option<(usize, usize)>,
}

struct Shrinker {
    counts: HashMap<*const OpenExp, Count>,
    /// The frames of the `Once` terms being rebuilt, outermost first.
    frames: Vec<Frame>,
    /// Output binders around the current output position.
    depth: usize,
    changed: bool,
}

/// Shrinks the lets of `e`, a body under `params` parameters; whether
/// anything changed.
pub(crate) fn shrink_body(e: &mut OpenExp, params: usize) -> bool {
    let mut counter = Counter { counts: HashMap::new(), scope: vec![None; params], loops: 0 };
    counter.count(e);
    if counter.counts.is_empty() {
        return false;
    }
    let mut s = Shrinker {
        counts: counter.counts,
        frames: vec![Frame { entries: (0..params).map(Entry::Kept).collect(), parent: None }],
        depth: params,
        changed: false,
    };
    let loc = e.loc;
    let input = std::mem::replace(e, OpenExp::new(ExpKind::Var(0), loc));
    *e = s.rebuild(input);
    s.changed
}

impl Shrinker {
    /// The entry of variable `k` of the current environment.
    fn entry(&mut self, k: usize) -> &mut Entry {
        let mut f = self.frames.len() - 1;
        let mut len = self.frames[f].entries.len();
        let mut k = k;
        while k >= len {
            k -= len;
            (f, len) = self.frames[f].parent.expect("the verifier checked every variable is bound");
        }
        &mut self.frames[f].entries[len - 1 - k]
    }

    fn push(&mut self, e: Entry) {
        self.frames.last_mut().expect("a frame").entries.push(e)
    }

    fn pop(&mut self, n: usize) {
        let entries = &mut self.frames.last_mut().expect("a frame").entries;
        entries.truncate(entries.len() - n);
    }

    /// Where a `Once` entry bound now finds its environment.
    fn here(&self) -> (usize, usize) {
        let f = self.frames.len() - 1;
        (f, self.frames[f].entries.len())
    }

    fn rebuild(&mut self, e: OpenExp) -> OpenExp {
        let mut binders = Vec::new();
        let r = self.rebuild_spine(e, &mut binders);
        self.depth -= binders.len();
        binders
            .into_iter()
            .rev()
            .fold(r, |body, (b, loc)| OpenExp::new(ExpKind::Let(Box::new(b), Box::new(body)), loc))
    }

    /// Rebuilds `e`'s chain of lets into `binders` (the output lets of a
    /// chain, outermost first, the output depth counting them) and returns
    /// the rest, rebuilt: a kept let bound to a let adds the inner lets to
    /// the same chain (floating them), however deeply they nest.
    fn rebuild_spine(&mut self, mut e: OpenExp, binders: &mut Vec<(OpenExp, SrcLoc)>) -> OpenExp {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            let mut pushed = 0;
            while matches!(e.kind, ExpKind::Let(..)) {
                let loc = e.loc;
                let ExpKind::Let(b, body) = std::mem::replace(&mut e.kind, ExpKind::Var(0)) else {
                    unreachable!("matched a let")
                };
                let key: *const OpenExp = &*b;
                let count = self.counts.get(&key).copied().unwrap_or(Count { uses: 2, in_loop: true });
                let entry = self.decide(*b, count, loc, binders);
                self.push(entry);
                pushed += 1;
                e = *body;
            }
            let r = self.rebuild_node(e);
            self.pop(pushed);
            r
        })
    }

    /// What the variable of `let _ = b` becomes; a kept `b` is rebuilt and
    /// bound in `binders`, after the lets floated out of it.
    fn decide(
        &mut self,
        b: OpenExp,
        count: Count,
        loc: SrcLoc,
        binders: &mut Vec<(OpenExp, SrcLoc)>,
    ) -> Entry {
        let once = count.uses == 1 && !count.in_loop;
        if count.uses == 0 {
            self.changed = true;
            return Entry::Dropped;
        }
        // a constant, or a variable that is kept or a constant, is copied
        // to every use; a variable used once here is inlined where this
        // one is if that is once too (below), else bound here
        let copied = match &b.kind {
            ExpKind::Const(_) => Some(Entry::Const(b.clone())),
            ExpKind::Var(y) => match self.entry(*y) {
                Entry::Kept(level) => Some(Entry::Kept(*level)),
                Entry::Const(c) => Some(Entry::Const(c.clone())),
                Entry::Once(..) | Entry::Dropped => None,
            },
            _ => None,
        };
        if let Some(entry) = copied {
            self.changed = true;
            return entry;
        }
        if once && !matches!(b.kind, ExpKind::Let(..)) {
            self.changed = true;
            return Entry::Once(Some(b), self.here());
        }
        let before = binders.len();
        let b = self.rebuild_spine(b, binders);
        // its lets were floated
        self.changed |= binders.len() > before;
        binders.push((b, loc));
        self.depth += 1;
        Entry::Kept(self.depth - 1)
    }

    /// Rebuilds a term that is not a let.
    fn rebuild_node(&mut self, mut e: OpenExp) -> OpenExp {
        match &mut e.kind {
            ExpKind::Var(k) => {
                let depth = self.depth;
                let once = match self.entry(*k) {
                    Entry::Kept(level) => {
                        *k = depth - 1 - *level;
                        return e;
                    }
                    Entry::Const(c) => return c.clone(),
                    Entry::Once(t, parent) => (t.take(), *parent),
                    Entry::Dropped => (None, (0, 0)),
                };
                let (Some(t), parent) = once else {
                    unreachable!("a let counted as used once is used once, one counted unused never")
                };
                self.frames.push(Frame { entries: Vec::new(), parent: Some(parent) });
                let r = self.rebuild(t);
                self.frames.pop();
                return r;
            }
            ExpKind::While { cond, body, init } => {
                **init = self.rebuild(take(init));
                for f in [cond, body] {
                    self.push(Entry::Kept(self.depth));
                    self.depth += 1;
                    f.body = self.rebuild(take(&mut f.body));
                    self.depth -= 1;
                    self.pop(1);
                }
            }
            _ => crate::debruijn::for_each_child(&mut e, |c| *c = self.rebuild(take(c))),
        }
        e
    }
}

fn take(e: &mut OpenExp) -> OpenExp {
    let loc = e.loc;
    std::mem::replace(e, OpenExp::new(ExpKind::Var(0), loc))
}

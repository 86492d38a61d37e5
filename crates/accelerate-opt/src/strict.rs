//! What a scalar term evaluates on every path (Note [Strict reads]): the
//! variables and the arrays it reads whatever its branches and loops do.
//!
//! Note [Strict reads]
//! A let-bound term that fails fails only its uses (Note [Deferred
//! errors]), so two computations may share a loop, and fail together,
//! only where everything that reads one reads the other too. A term
//! reads a variable *strictly* when every evaluation of it evaluates
//! that variable:
//!   - a variable reads itself;
//!   - a primitive, a tuple, a projection and an array read read their
//!     arguments (`&&` and `||` their first only);
//!   - `if c then t else e` reads what `c` reads, and what both `t` and
//!     `e` read;
//!   - `let x = b in body` reads what `body` reads but `x`, and what `b`
//!     reads if `body` reads `x`;
//!   - a `while` reads what its start reads and what its condition reads
//!     (it is evaluated at least once); its step may run no time.
//!
//! The same for array variables: an array read (or shape) reads its
//! array. The analysis is one bottom-up pass with sets at each node
//! (variables as the levels of their binders, so that no set is
//! renumbered, each union adding the smaller set to the larger), with a
//! budget of nodes; past it the answer is `None` (nothing is known to
//! be read). `sibling_loops` walks a term's *spine*, what every
//! evaluation of it evaluates, by the same rules.

use accelerate_ir::visit::each_child;
use accelerate_ir::{ExpKind, OpenExp, PrimFun};
use std::collections::BTreeSet;

/// The variables (by de Bruijn index in the term's scope) and array
/// variables a term reads on every path.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Strict {
    pub vars: BTreeSet<usize>,
    pub arrays: BTreeSet<usize>,
}

/// Nodes the analysis visits at most for one term.
const BUDGET: usize = 1 << 16;

/// What `e` reads on every path, or `None` for a term past the budget.
pub(crate) fn strict(e: &OpenExp) -> Option<Strict> {
    let mut budget = BUDGET;
    let s = go(e, 0, &mut budget)?;
    // levels below 0 are the term's free variables: level -1 - k is k
    let vars = s.vars.into_iter().filter(|&l| l < 0).map(|l| (-1 - l) as usize).collect();
    Some(Strict { vars, arrays: s.arrays })
}

/// Variables as levels (depth of their binder, the term's free variables
/// below 0), so that no set is renumbered under a binder.
#[derive(Default)]
pub(crate) struct Levels {
    pub vars: BTreeSet<i64>,
    pub arrays: BTreeSet<usize>,
}

impl Levels {
    /// Adds `other`, each element of the smaller set into the larger (so
    /// that a chain of unions stays near-linear).
    pub fn union(&mut self, mut other: Levels) {
        fn into<T: Ord>(a: &mut BTreeSet<T>, mut b: BTreeSet<T>) {
            if b.len() > a.len() {
                std::mem::swap(a, &mut b);
            }
            a.extend(b);
        }
        into(&mut self.vars, std::mem::take(&mut other.vars));
        into(&mut self.arrays, std::mem::take(&mut other.arrays));
    }
}

/// The levels `e` (at `depth` binders below the term's root) reads on
/// every path.
fn go(e: &OpenExp, depth: i64, budget: &mut usize) -> Option<Levels> {
    *budget = budget.checked_sub(1)?;
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        let mut s = Levels::default();
        let mut child = |c: &OpenExp, d: i64| go(c, d, budget);
        match &e.kind {
            ExpKind::Var(k) => {
                s.vars.insert(depth - 1 - *k as i64);
            }
            ExpKind::Const(_) => {}
            ExpKind::Shape { array } => {
                s.arrays.insert(*array);
            }
            ExpKind::Index { array, index } | ExpKind::LinearIndex { array, index } => {
                s = child(index, depth)?;
                s.arrays.insert(*array);
            }
            ExpKind::Prim(PrimFun::LAnd | PrimFun::LOr, args) => {
                if let Some(first) = args.first() {
                    s = child(first, depth)?;
                }
            }
            ExpKind::Let(b, body) => {
                s = child(body, depth + 1)?;
                if s.vars.remove(&depth) {
                    s.union(child(b, depth)?);
                }
            }
            ExpKind::Cond(c, t, x) => {
                s = child(c, depth)?;
                let (t, x) = (child(t, depth)?, child(x, depth)?);
                s.union(Levels {
                    vars: t.vars.intersection(&x.vars).copied().collect(),
                    arrays: t.arrays.intersection(&x.arrays).copied().collect(),
                });
            }
            ExpKind::While { cond, init, .. } => {
                // the condition binds the state (one variable, as `shift`
                // counts it)
                s = child(init, depth)?;
                let mut c = child(&cond.body, depth + 1)?;
                c.vars.remove(&depth);
                s.union(c);
            }
            ExpKind::ALet(..) => return None,
            ExpKind::Tuple(_) | ExpKind::Prj(..) | ExpKind::Prim(..) => {
                let mut kids = Vec::new();
                each_child(e, |c| kids.push(c));
                for c in kids {
                    s.union(child(c, depth)?);
                }
            }
        }
        Some(s)
    })
}

//! De Bruijn index manipulation on scalar terms: shifting (weakening and
//! strengthening), as passes that move terms under or out of binders
//! need. (The simplifier inlines lets without substituting:
//! Note [Shrinking without substitution] in `trafo::shrink`.)
//!
//! Binders in scalar terms: `Let` binds one variable in its body; each
//! function of a `While` binds one in its body.

use accelerate_ir::{ExpKind, OpenExp};

/// Adds `by` to every variable of `e` with index `>= cutoff` (variables
/// bound outside the part of the environment being moved). `by` may be
/// negative when a binder is removed; the caller guarantees no variable it
/// removes is used.
pub(crate) fn shift(e: &mut OpenExp, cutoff: usize, by: isize) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &mut e.kind {
        ExpKind::Var(k) => {
            if *k >= cutoff {
                *k = (*k as isize + by) as usize;
            }
        }
        ExpKind::Let(b, body) => {
            shift(b, cutoff, by);
            shift(body, cutoff + 1, by);
        }
        ExpKind::ALet(..) => unreachable!("array terms nested in scalar code are lifted before this pass"),
        ExpKind::While { cond, body, init } => {
            shift(init, cutoff, by);
            shift(&mut cond.body, cutoff + 1, by);
            shift(&mut body.body, cutoff + 1, by);
        }
        _ => for_each_child(e, |c| shift(c, cutoff, by)),
    })
}

/// Calls `f` on every direct subterm that is in the same scope as `e`
/// (not `Let` bodies or loop functions, which the callers handle).
pub(crate) fn for_each_child(e: &mut OpenExp, mut f: impl FnMut(&mut OpenExp)) {
    match &mut e.kind {
        ExpKind::Var(_) | ExpKind::Const(_) | ExpKind::Shape { .. } => {}
        ExpKind::Tuple(es) | ExpKind::Prim(_, es) => es.iter_mut().for_each(f),
        ExpKind::Prj(_, t) => f(t),
        ExpKind::Cond(c, t, x) => {
            f(c);
            f(t);
            f(x);
        }
        ExpKind::Index { index, .. } | ExpKind::LinearIndex { index, .. } => f(index),
        ExpKind::Let(b, body) => {
            f(b);
            f(body);
        }
        ExpKind::ALet(..) => unreachable!("array terms nested in scalar code are lifted before this pass"),
        ExpKind::While { cond, body, init } => {
            f(init);
            f(&mut cond.body);
            f(&mut body.body);
        }
    }
}

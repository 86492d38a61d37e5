//! De Bruijn index manipulation on scalar terms: shifting (weakening and
//! strengthening) and substitution for the innermost variable, as every
//! pass that moves terms under or out of binders needs.
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
        ExpKind::While { cond, body, init } => {
            f(init);
            f(&mut cond.body);
            f(&mut body.body);
        }
    }
}

/// The uses of variable `var` in `e`, counted up to 2 (the simplifier only
/// asks "none, one, or more"; stopping there keeps it linear on long let
/// chains): how many, and whether one is inside a loop function (where it
/// would be evaluated once per iteration).
pub(crate) fn uses(e: &OpenExp, var: usize) -> (usize, bool) {
    fn go(e: &OpenExp, var: usize, in_loop: bool, acc: &mut (usize, bool)) {
        if acc.0 >= 2 {
            return;
        }
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &e.kind {
            ExpKind::Var(k) => {
                if *k == var {
                    acc.0 += 1;
                    acc.1 |= in_loop;
                }
            }
            ExpKind::Let(b, body) => {
                go(b, var, in_loop, acc);
                go(body, var + 1, in_loop, acc);
            }
            ExpKind::While { cond, body, init } => {
                go(init, var, in_loop, acc);
                go(&cond.body, var + 1, true, acc);
                go(&body.body, var + 1, true, acc);
            }
            ExpKind::Const(_) | ExpKind::Shape { .. } => {}
            ExpKind::Tuple(es) | ExpKind::Prim(_, es) => es.iter().for_each(|x| go(x, var, in_loop, acc)),
            ExpKind::Prj(_, t) => go(t, var, in_loop, acc),
            ExpKind::Cond(c, t, x) => {
                go(c, var, in_loop, acc);
                go(t, var, in_loop, acc);
                go(x, var, in_loop, acc);
            }
            ExpKind::Index { index, .. } | ExpKind::LinearIndex { index, .. } => go(index, var, in_loop, acc),
        })
    }
    let mut acc = (0, false);
    go(e, var, false, &mut acc);
    acc
}

/// `body` with its variable 0 replaced by `value` (a term of the
/// environment outside that binder) and the binder removed.
pub(crate) fn subst_top(body: &mut OpenExp, value: &OpenExp) {
    fn go(e: &mut OpenExp, depth: usize, value: &OpenExp) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &mut e.kind {
            ExpKind::Var(k) => {
                if *k == depth {
                    let mut v = value.clone();
                    shift(&mut v, 0, depth as isize);
                    *e = v;
                } else if *k > depth {
                    *k -= 1;
                }
            }
            ExpKind::Let(b, body) => {
                go(b, depth, value);
                go(body, depth + 1, value);
            }
            ExpKind::While { cond, body, init } => {
                go(init, depth, value);
                go(&mut cond.body, depth + 1, value);
                go(&mut body.body, depth + 1, value);
            }
            _ => for_each_child(e, |c| go(c, depth, value)),
        })
    }
    go(body, 0, value)
}

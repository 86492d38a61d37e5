//! Bounds checks of a function's own index (a step of the simplifier,
//! `trafo::simplify`).
//!
//! Note [Own-index checks]
//! Fusion reads a producer inside its reader through the producer's index
//! function, behind `bounds_check(producer's shape, index)`. When the
//! reader is a `generate` (or a delayed array) over the same shape and
//! reads at its own index, the check cannot fail: the reader's shape was
//! computed and found valid (negative extents and sizes past `i64::MAX`
//! are errors) before any of its elements is, and the index lies inside
//! it. The lifting makes many such reads: an array computed per element of
//! a context and read element-wise by the next operation of that context
//! (a row's map, then its fold). Left in, the check costs each element
//! the test of a shape that does not change (a size computed with
//! overflow checks) and keeps the C compiler from vectorising the loop:
//! the per-row solver of `accelerate_programs::rowsolve` ran 4.5 times as
//! long with them.
//!
//! `bounds_check(sh, ix)` in the function of `generate shape f` or of
//! `delayed shape f _` becomes `ix` when `ix` is the function's parameter
//! (or the tuple of all its components) and `sh` is `shape`, or when each
//! component `m` of `ix` is a component `k` of the parameter and extent
//! `m` of `sh` is extent `k` of `shape` (a read of a row or a column at
//! the function's own position, as lifted nested maps make), both compared
//! after resolving the lets they read, projections of tuples reduced
//! (`ShapeNorm`). `shape` is closed, so `sh` must not read a variable that
//! depends on the parameter; the comparison gives up on terms larger than
//! `MAX_NODES`, so the pass stays linear.

use accelerate_ir::*;
use std::rc::Rc;

/// The largest normal form compared (shapes are small terms), and the
/// most dropped components one keeps.
const MAX_NODES: usize = 64;
const MAX_DROPPED: usize = 16;

/// A term with its lets resolved and its projections of tuples reduced,
/// compared structurally (constants by their bits, as `cse` compares
/// them).
#[derive(Debug, PartialEq)]
enum ShapeNorm {
    /// The function's parameter.
    Param,
    Const(u8, u64),
    Tuple(Vec<Rc<ShapeNorm>>),
    Prj(usize, Rc<ShapeNorm>),
    Prim(PrimFun, Vec<Rc<ShapeNorm>>),
    Index(usize, Rc<ShapeNorm>),
    LinearIndex(usize, Rc<ShapeNorm>),
    Shape(usize),
}

impl ShapeNorm {
    fn children(&self) -> &[Rc<ShapeNorm>] {
        match self {
            ShapeNorm::Param | ShapeNorm::Const(..) | ShapeNorm::Shape(_) => &[],
            ShapeNorm::Tuple(xs) | ShapeNorm::Prim(_, xs) => xs,
            ShapeNorm::Prj(_, x) | ShapeNorm::Index(_, x) | ShapeNorm::LinearIndex(_, x) => {
                std::slice::from_ref(x)
            }
        }
    }

    fn size(&self) -> usize {
        1 + self.children().iter().map(|c| c.size()).sum::<usize>()
    }

    /// Whether evaluating it cannot fail: no read of an array (whose
    /// binding may have failed) and no primitive that raises.
    fn safe(&self) -> bool {
        let here = match self {
            ShapeNorm::Index(..) | ShapeNorm::LinearIndex(..) | ShapeNorm::Shape(_) => false,
            ShapeNorm::Prim(op, _) => !crate::simplify::raises(*op),
            _ => true,
        };
        here && self.children().iter().all(|c| c.safe())
    }

    /// Whether `x` is this term or one of its subterms.
    fn contains(&self, x: &ShapeNorm) -> bool {
        self == x || self.children().iter().any(|c| c.contains(x))
    }
}

/// A term's normal form, and the components that can fail which the
/// reduction of its projections dropped: evaluating the term evaluates
/// them (a tuple fails if a component does, Note [Deferred errors]).
#[derive(Clone, Debug)]
struct Norm {
    term: Rc<ShapeNorm>,
    dropped: Vec<Rc<ShapeNorm>>,
}

/// The variables in scope: a let's normal form, or `None` where it has
/// none (a loop's state, a term too large or not shape-like).
type Env = Vec<Option<Norm>>;

/// How many nodes one normal form may visit (the lets it walks through
/// included), so that a deep term costs a bounded time and stack.
const FUEL: usize = 128;

fn norm(e: &OpenExp, env: &mut Env) -> Option<Norm> {
    let mut fuel = FUEL;
    norm_with(e, env, &mut fuel)
}

fn norm_with(e: &OpenExp, env: &mut Env, fuel: &mut usize) -> Option<Norm> {
    *fuel = fuel.checked_sub(1)?;
    stacker::maybe_grow(32 * 1024, 256 * 1024, || norm_node(e, env, fuel))
}

fn norm_node(e: &OpenExp, env: &mut Env, fuel: &mut usize) -> Option<Norm> {
    let mut dropped = Vec::new();
    let mut parts = |es: &[OpenExp], env: &mut Env, fuel: &mut usize| -> Option<Vec<Rc<ShapeNorm>>> {
        es.iter()
            .map(|x| {
                let n = norm_with(x, env, fuel)?;
                dropped.extend(n.dropped);
                Some(n.term)
            })
            .collect()
    };
    let term = match &e.kind {
        ExpKind::Var(i) => return env.len().checked_sub(i + 1).and_then(|k| env[k].clone()),
        ExpKind::Let(b, body) => {
            let v = norm_with(b, env, fuel);
            env.push(v);
            let r = norm_with(body, env, fuel);
            env.pop();
            return r;
        }
        ExpKind::Const(c) => {
            let (tag, bits) = crate::cse::const_bits(*c);
            ShapeNorm::Const(tag, bits)
        }
        ExpKind::Tuple(es) => ShapeNorm::Tuple(parts(es, env, fuel)?),
        ExpKind::Prj(i, t) => {
            let t = norm_with(t, env, fuel)?;
            dropped = t.dropped;
            match &*t.term {
                ShapeNorm::Tuple(cs) => {
                    let kept = cs.get(*i)?.clone();
                    let others = cs.iter().enumerate().filter(|&(j, c)| j != *i && !c.safe());
                    dropped.extend(others.map(|(_, c)| c.clone()));
                    return (dropped.len() <= MAX_DROPPED).then_some(Norm { term: kept, dropped });
                }
                _ => ShapeNorm::Prj(*i, t.term),
            }
        }
        ExpKind::Prim(op, args) => ShapeNorm::Prim(*op, parts(args, env, fuel)?),
        ExpKind::Index { array, index } => {
            ShapeNorm::Index(*array, parts(std::slice::from_ref(index), env, fuel)?.pop()?)
        }
        ExpKind::LinearIndex { array, index } => {
            ShapeNorm::LinearIndex(*array, parts(std::slice::from_ref(index), env, fuel)?.pop()?)
        }
        ExpKind::Shape { array } => ShapeNorm::Shape(*array),
        ExpKind::Cond(..) | ExpKind::While { .. } | ExpKind::ALet(..) => return None,
    };
    (term.size() <= MAX_NODES && dropped.len() <= MAX_DROPPED).then(|| Norm { term: Rc::new(term), dropped })
}

/// Whether `n` is the parameter of a function over indices of `rank`
/// dimensions: the parameter, or the tuple of its components in order.
fn is_param(n: &ShapeNorm, rank: usize) -> bool {
    match n {
        ShapeNorm::Param => true,
        ShapeNorm::Tuple(cs) => {
            cs.len() == rank
                && cs
                    .iter()
                    .enumerate()
                    .all(|(i, c)| matches!(&**c, ShapeNorm::Prj(j, p) if *j == i && **p == ShapeNorm::Param))
        }
        _ => false,
    }
}

/// Whether a check's shape `sh` is the function's `domain`, and removing
/// it removes no failure that evaluating the domain (which succeeded
/// before the function ran) did not rule out: every component `sh`'s
/// projections dropped is a subterm of what the domain evaluated.
fn same_shape(sh: &Norm, domain: &Norm) -> bool {
    sh.term == domain.term && evaluated_with(sh, domain)
}

/// Whether every component `sh`'s projections dropped is a subterm of
/// what the domain evaluated.
fn evaluated_with(sh: &Norm, domain: &Norm) -> bool {
    sh.dropped.iter().all(|d| domain.term.contains(d) || domain.dropped.iter().any(|x| x.contains(d)))
}

/// Extent `m` of a shape's normal form.
fn extent(sh: &Rc<ShapeNorm>, m: usize) -> Option<Rc<ShapeNorm>> {
    match &**sh {
        ShapeNorm::Tuple(cs) => cs.get(m).cloned(),
        _ => Some(Rc::new(ShapeNorm::Prj(m, sh.clone()))),
    }
}

/// Whether each component `m` of the index `ix` is a component `k` of
/// the function's parameter, and extent `m` of the check's shape `sh` is
/// extent `k` of the domain: a read of a row or a column at the
/// function's own position (the lifted n-body reads body `j` and body `i`
/// of the vector of bodies at index `(i, j)` of an `n`x`n` domain). As in
/// `same_shape`, what `sh`'s projections dropped was evaluated with the
/// domain, and each extent of `sh` is one of the domain's, so removing the
/// check removes no failure.
fn in_domain(ix: &ShapeNorm, sh: &Norm, domain: &Norm, rank: usize) -> bool {
    let ShapeNorm::Tuple(cs) = ix else { return false };
    !cs.is_empty()
        && evaluated_with(sh, domain)
        && cs.iter().enumerate().all(|(m, c)| match &**c {
            ShapeNorm::Prj(k, p) if **p == ShapeNorm::Param && *k < rank => {
                extent(&sh.term, m).zip(extent(&domain.term, *k)).is_some_and(|(a, b)| a == b)
            }
            _ => false,
        })
}

/// Drops the checks of Note [Own-index checks] from `f`, the function of
/// an array of shape `shape` (closed) over indices of `rank` dimensions;
/// whether it dropped any.
pub(crate) fn drop_own_index_checks(shape: &OpenExp, f: &mut Fun, rank: usize) -> bool {
    if f.params.len() != 1 || !has_bounds_check(&f.body) {
        return false;
    }
    let Some(domain) = norm(shape, &mut Vec::new()) else { return false };
    let mut env: Env = vec![Some(Norm { term: Rc::new(ShapeNorm::Param), dropped: Vec::new() })];
    let mut dropped = false;
    walk(&mut f.body, &mut env, &domain, rank, &mut dropped);
    dropped
}

fn has_bounds_check(e: &OpenExp) -> bool {
    let mut todo = vec![e];
    while let Some(x) = todo.pop() {
        if matches!(x.kind, ExpKind::Prim(PrimFun::BoundsCheck, _)) {
            return true;
        }
        visit::each_child(x, |c| todo.push(c));
    }
    false
}

fn walk(e: &mut OpenExp, env: &mut Env, domain: &Norm, rank: usize, dropped: &mut bool) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        match &mut e.kind {
            ExpKind::Let(b, body) => {
                walk(b, env, domain, rank, dropped);
                let v = norm(b, env);
                env.push(v);
                walk(body, env, domain, rank, dropped);
                env.pop();
            }
            ExpKind::While { cond, body, init } => {
                walk(init, env, domain, rank, dropped);
                for f in [cond, body] {
                    env.extend(f.params.iter().map(|_| None));
                    walk(&mut f.body, env, domain, rank, dropped);
                    env.truncate(env.len() - f.params.len());
                }
            }
            ExpKind::Var(_) | ExpKind::Const(_) | ExpKind::Shape { .. } | ExpKind::ALet(..) => {}
            ExpKind::Tuple(es) | ExpKind::Prim(_, es) => {
                es.iter_mut().for_each(|x| walk(x, env, domain, rank, dropped))
            }
            ExpKind::Prj(_, t) => walk(t, env, domain, rank, dropped),
            ExpKind::Cond(c, t, x) => {
                walk(c, env, domain, rank, dropped);
                walk(t, env, domain, rank, dropped);
                walk(x, env, domain, rank, dropped);
            }
            ExpKind::Index { index, .. } | ExpKind::LinearIndex { index, .. } => {
                walk(index, env, domain, rank, dropped)
            }
        }
        if let ExpKind::Prim(PrimFun::BoundsCheck, args) = &mut e.kind {
            let own = norm(&args[1], env).zip(norm(&args[0], env)).is_some_and(|(ix, sh)| {
                (is_param(&ix.term, rank) && same_shape(&sh, domain))
                    || in_domain(&ix.term, &sh, domain, rank)
            });
            if own {
                let ix = args.pop().expect("bounds_check has two arguments");
                *e = ix;
                *dropped = true;
            }
        }
    })
}

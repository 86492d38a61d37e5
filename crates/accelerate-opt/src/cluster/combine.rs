//! A cluster's members as one operation over tuples of their elements
//! (Note [Multi-output kernels]): folds of one shape as one fold of
//! tuples, producers of one shape as one generate of tuples.

use crate::debruijn::for_each_child;
use crate::fusion::Cunctation;
use crate::simplify::raises;
use accelerate_base::array::EltTy;
use accelerate_base::error::SrcLoc;
use accelerate_ir::{AccKind, DelayedArray, ExpKind, Fun, OpenAcc, OpenExp};

/// The loops a candidate may share.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) enum Kind {
    /// A fold (with a seed or not) over its source's shape.
    Fold { seeded: bool },
    /// A producer computed over its own shape.
    Generate,
}

/// The loop a candidate runs, as a delayed array over the shape it
/// iterates: a fold's source, a producer's own elements. `rank` is the
/// rank of the candidate's result. Only operations whose elements raise
/// no error of their own are candidates (Note [Clusters and errors]).
pub(crate) fn loop_of(a: &OpenAcc, rank: usize) -> Option<(Kind, DelayedArray)> {
    let (kind, lp) = loop_any(a, rank)?;
    let mut code = vec![&lp.index.body];
    if let AccKind::Fold { f, seed, .. } = &a.kind {
        code.push(&f.body);
        code.extend(seed);
    }
    (!code.into_iter().any(raises_in)).then_some((kind, lp))
}

/// Whether a scalar term has an operation that can raise an error.
fn raises_in(e: &OpenExp) -> bool {
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if matches!(x.kind, ExpKind::Prim(op, _) if raises(op)) {
            return true;
        }
        accelerate_ir::visit::each_child(x, |c| stack.push(c));
    }
    false
}

fn loop_any(a: &OpenAcc, rank: usize) -> Option<(Kind, DelayedArray)> {
    match &a.kind {
        AccKind::Fold { seed, array, .. } => {
            let src = match &array.kind {
                AccKind::Delayed(d) => d.clone(),
                AccKind::Var(v) => Cunctation::Done(*v).into_delayed(rank + 1, array.loc),
                _ => return None,
            };
            Some((Kind::Fold { seeded: seed.is_some() }, src))
        }
        AccKind::Generate { .. } | AccKind::Map { .. } | AccKind::Backpermute { .. } => {
            match Cunctation::of_manifest(a.clone()) {
                Ok(c) if !c.is_done() => Some((Kind::Generate, c.into_delayed(rank, a.loc))),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Members of one kind over one shape (`loop_of` of each, in order) as
/// one operation whose elements are the tuples of theirs.
pub(crate) fn combine(kind: Kind, members: Vec<(OpenAcc, DelayedArray)>) -> OpenAcc {
    let loc = members[0].0.loc;
    let (terms, loops): (Vec<OpenAcc>, Vec<DelayedArray>) = members.into_iter().unzip();
    let joined = zip(loops, loc);
    let kind = match kind {
        Kind::Generate => AccKind::Generate { shape: joined.shape, f: joined.index },
        Kind::Fold { .. } => {
            let (mut fs, mut seeds) = (Vec::new(), Vec::new());
            for t in terms {
                if let AccKind::Fold { f, seed, .. } = t.kind_owned() {
                    fs.push(f);
                    seeds.extend(seed);
                }
            }
            let seed = (!seeds.is_empty()).then(|| OpenExp::new(ExpKind::Tuple(seeds), loc));
            let array = Box::new(OpenAcc::new(AccKind::Delayed(joined), loc));
            AccKind::Fold { f: tuple_fun(fs, loc), seed, array }
        }
    };
    OpenAcc::new(AccKind::Unzip(Box::new(OpenAcc::new(kind, loc))), loc)
}

/// Delayed arrays of one shape as the delayed array of the tuples of
/// their elements.
fn zip(ds: Vec<DelayedArray>, loc: SrcLoc) -> DelayedArray {
    let shape = ds[0].shape.clone();
    let (ip, lp) = (ds[0].index.params.clone(), ds[0].linear.params.clone());
    let (mut index, mut linear) = (Vec::new(), Vec::new());
    for d in ds {
        index.push(d.index.body);
        linear.push(d.linear.body);
    }
    DelayedArray {
        shape,
        index: Fun { params: ip, body: OpenExp::new(ExpKind::Tuple(index), loc) },
        linear: Fun { params: lp, body: OpenExp::new(ExpKind::Tuple(linear), loc) },
    }
}

/// Functions of the same number of parameters as one function of tuples:
/// parameter `p` is the tuple of their parameters `p`, and function `i`
/// reads component `i` of each.
fn tuple_fun(fs: Vec<Fun>, loc: SrcLoc) -> Fun {
    let n = fs[0].params.len();
    let params = (0..n).map(|p| EltTy::Tuple(fs.iter().map(|f| f.params[p].clone()).collect())).collect();
    let bodies = fs
        .into_iter()
        .enumerate()
        .map(|(i, f)| {
            let mut b = f.body;
            project_params(&mut b, 0, n, i);
            b
        })
        .collect();
    Fun { params, body: OpenExp::new(ExpKind::Tuple(bodies), loc) }
}

/// Replaces each of the `n` parameters (variables `depth .. depth + n`
/// here) by its component `i`.
fn project_params(e: &mut OpenExp, depth: usize, n: usize, i: usize) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &mut e.kind {
        ExpKind::Var(k) if *k >= depth && *k < depth + n => {
            let v = OpenExp::new(ExpKind::Var(*k), e.loc);
            e.kind = ExpKind::Prj(i, Box::new(v));
        }
        ExpKind::Let(b, body) => {
            project_params(b, depth, n, i);
            project_params(body, depth + 1, n, i);
        }
        ExpKind::While { cond, body, init } => {
            project_params(init, depth, n, i);
            project_params(&mut cond.body, depth + 1, n, i);
            project_params(&mut body.body, depth + 1, n, i);
        }
        _ => for_each_child(e, |c| project_params(c, depth, n, i)),
    })
}

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
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) enum Kind {
    /// A fold (with a seed or not) over its source's shape.
    Fold { seeded: bool },
    /// A producer computed over its own shape.
    Generate,
    /// A permute over its source's shape, into defaults of one shape by
    /// one index function (so that its members send each element to the
    /// same place, and fail together).
    Permute,
}

/// The loop a candidate runs.
pub(crate) struct Loop {
    pub kind: Kind,
    /// What it iterates, as a delayed array: a fold's or a permute's
    /// source, a producer's own elements.
    pub src: DelayedArray,
    /// Scalar terms that must be the same for members of one cluster,
    /// besides the loop's shape: a permute's index function and the shape
    /// of its defaults.
    pub same: Vec<OpenExp>,
    /// A permute's defaults, as a delayed array.
    pub defaults: Option<DelayedArray>,
}

/// The loop of a candidate whose result has rank `rank`. Only operations
/// whose elements raise no error of their own are candidates (Note
/// [Clusters and errors]); a permute's index function may, since its
/// siblings have the same one.
pub(crate) fn loop_of(a: &OpenAcc, rank: usize) -> Option<Loop> {
    let lp = loop_any(a, rank)?;
    let mut code = vec![&lp.src.index.body];
    code.extend(lp.defaults.iter().map(|d| &d.index.body));
    match &a.kind {
        AccKind::Fold { f, seed, .. } => {
            code.push(&f.body);
            code.extend(seed);
        }
        AccKind::Permute { combine, .. } => code.push(&combine.body),
        _ => {}
    }
    (!code.into_iter().any(raises_in)).then_some(lp)
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

/// A manifest producer, or an array variable, as a delayed array.
fn delayed(a: &OpenAcc, rank: usize) -> Option<DelayedArray> {
    match &a.kind {
        AccKind::Delayed(d) => Some(d.clone()),
        _ => Cunctation::of_manifest(a.clone()).ok().map(|c| c.into_delayed(rank, a.loc)),
    }
}

fn loop_any(a: &OpenAcc, rank: usize) -> Option<Loop> {
    let plain = |kind, src| Some(Loop { kind, src, same: Vec::new(), defaults: None });
    match &a.kind {
        AccKind::Fold { seed, array, .. } => {
            plain(Kind::Fold { seeded: seed.is_some() }, delayed(array, rank + 1)?)
        }
        AccKind::Generate { .. } | AccKind::Map { .. } | AccKind::Backpermute { .. } => {
            match Cunctation::of_manifest(a.clone()) {
                Ok(c) if !c.is_done() => plain(Kind::Generate, c.into_delayed(rank, a.loc)),
                _ => None,
            }
        }
        AccKind::Permute { defaults, index, source, .. } => {
            // a source in a variable has a rank this does not know
            let AccKind::Delayed(src) = &source.kind else { return None };
            let defaults = delayed(defaults, rank)?;
            let same = vec![index.body.clone(), defaults.shape.clone()];
            Some(Loop { kind: Kind::Permute, src: src.clone(), same, defaults: Some(defaults) })
        }
        _ => None,
    }
}

/// Members of one kind over one shape (each with its `loop_of`, in
/// order) as one operation whose elements are the tuples of theirs.
pub(crate) fn combine(kind: Kind, members: Vec<(OpenAcc, Loop)>) -> OpenAcc {
    let loc = members[0].0.loc;
    let (terms, loops): (Vec<OpenAcc>, Vec<Loop>) = members.into_iter().unzip();
    let mut defaults = Vec::new();
    let mut srcs = Vec::new();
    for lp in loops {
        srcs.push(lp.src);
        defaults.extend(lp.defaults);
    }
    let joined = zip(srcs, loc);
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
        Kind::Permute => {
            let (mut cs, mut index) = (Vec::new(), None);
            for t in terms {
                if let AccKind::Permute { combine, index: i, .. } = t.kind_owned() {
                    cs.push(combine);
                    index.get_or_insert(i);
                }
            }
            let d = zip(defaults, loc);
            let defaults = Box::new(OpenAcc::new(AccKind::Generate { shape: d.shape, f: d.index }, loc));
            AccKind::Permute {
                combine: tuple_fun(cs, loc),
                defaults,
                index: index.expect("a member"),
                source: Box::new(OpenAcc::new(AccKind::Delayed(joined), loc)),
            }
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

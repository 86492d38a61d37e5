//! A cluster's members as one operation over tuples of their elements
//! (Note [Multi-output kernels]): folds of one shape as one fold of
//! tuples, producers of one shape as one generate of tuples, permutes
//! as one permute of tuples, and producers with folds of their shape as
//! one `fold_keep` (Note [Diagonal clusters]).

use crate::debruijn::{for_each_child, shift};
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
    /// Whether its elements may raise an error of their own (Note
    /// [Clusters and errors]): a permute's index function does not count,
    /// since its siblings have the same one.
    pub raises: bool,
}

/// The loop of a candidate whose result has rank `rank`. Only producers
/// may raise errors of their own (Note [Clusters and errors]).
pub(crate) fn loop_of(a: &OpenAcc, rank: usize) -> Option<Loop> {
    let mut lp = loop_any(a, rank)?;
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
    lp.raises = code.into_iter().any(raises_in);
    (!lp.raises || lp.kind == Kind::Generate).then_some(lp)
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
    let plain = |kind, src| Some(Loop { kind, src, same: Vec::new(), defaults: None, raises: false });
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
            Some(Loop {
                kind: Kind::Permute,
                src: src.clone(),
                same,
                defaults: Some(defaults),
                raises: false,
            })
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

/// Calls `at(e, depth)` on every read of an array (`Index`,
/// `LinearIndex`, `Shape`) in `e`, `depth` the scalar binders above it.
fn each_array_read(e: &mut OpenExp, depth: usize, at: &mut dyn FnMut(&mut OpenExp, usize)) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        if matches!(e.kind, ExpKind::Index { .. } | ExpKind::LinearIndex { .. } | ExpKind::Shape { .. }) {
            at(e, depth);
        }
        match &mut e.kind {
            ExpKind::Let(b, body) => {
                each_array_read(b, depth, at);
                each_array_read(body, depth + 1, at);
            }
            ExpKind::While { cond, body, init } => {
                each_array_read(init, depth, at);
                each_array_read(&mut cond.body, depth + 1, at);
                each_array_read(&mut body.body, depth + 1, at);
            }
            _ => for_each_child(e, |c| each_array_read(c, depth, at)),
        }
    })
}

/// Whether a read is of an element at the reading function's own index
/// (its parameter, variable `depth` under `depth` binders).
fn at_own_index(e: &OpenExp, depth: usize) -> bool {
    match &e.kind {
        ExpKind::Index { index, .. } | ExpKind::LinearIndex { index, .. } => {
            matches!(index.kind, ExpKind::Var(v) if v == depth)
        }
        _ => false,
    }
}

/// Whether a delayed array's index and linear functions read array
/// variable `v` only at their own index (and not its shape).
pub(crate) fn reads_at_own_index(d: &DelayedArray, v: usize) -> bool {
    let mut ok = true;
    for f in [&d.index, &d.linear] {
        let mut body = f.body.clone();
        each_array_read(&mut body, 0, &mut |e, depth| {
            let read = match &e.kind {
                ExpKind::Index { array, .. }
                | ExpKind::LinearIndex { array, .. }
                | ExpKind::Shape { array } => *array,
                _ => return,
            };
            if read == v && !at_own_index(e, depth) {
                ok = false;
            }
        });
    }
    ok
}

/// The array variables of the producers of a diagonal cluster, in the
/// members' terms: a fold reads the cluster's producer `i` as variable
/// `PRODUCER + i` (the rewrite numbers them so), which the combined loop
/// replaces by the producer's element.
pub(crate) const PRODUCER: usize = usize::MAX / 2;

/// How each member of a cluster is bound after the cluster's headers
/// (`Combined::headers`): a projection of one of the headers, or nothing
/// (a producer no one outside the cluster reads, computed inside it only).
pub(crate) type MemberRef = Option<(usize, Option<usize>)>;

/// The bindings a cluster becomes: its headers, each under the ones
/// before, then one binding per member (`MemberRef`).
pub(crate) struct Layout {
    pub headers: usize,
    pub members: Vec<MemberRef>,
}

/// The layout of a cluster whose members are of these kinds (in order),
/// `kept[i]` saying whether member `i` is read outside the cluster.
pub(crate) fn layout(kinds: &[Kind], kept: &[bool]) -> Layout {
    let diagonal = kinds.contains(&Kind::Generate) && kinds.iter().any(|k| matches!(k, Kind::Fold { .. }));
    if !diagonal {
        return Layout { headers: 1, members: (0..kinds.len()).map(|i| Some((0, Some(i)))).collect() };
    }
    let is_gen = |i: usize| kinds[i] == Kind::Generate;
    let m = (0..kinds.len()).filter(|&i| is_gen(i) && kept[i]).count();
    let n = (0..kinds.len()).filter(|&i| !is_gen(i)).count();
    let (mut g, mut f) = (0, 0);
    let mut members = Vec::new();
    if m == 0 {
        // a fold of the folds' tuples (unzipped when there are several)
        for i in 0..kinds.len() {
            members.push(match is_gen(i) {
                true => None,
                false if n == 1 => Some((0, None)),
                false => {
                    f += 1;
                    Some((0, Some(f - 1)))
                }
            });
        }
        return Layout { headers: 1, members };
    }
    // fold_keep, then the unzips of its kept and folded arrays if tuples
    let (hk, hx) = (1, 1 + usize::from(m > 1));
    for (i, &keep) in kept.iter().enumerate() {
        members.push(match (is_gen(i), keep) {
            (true, false) => None,
            (true, true) if m == 1 => Some((0, Some(0))),
            (true, true) => {
                g += 1;
                Some((hk, Some(g - 1)))
            }
            (false, _) if n == 1 => Some((0, Some(1))),
            (false, _) => {
                f += 1;
                Some((hx, Some(f - 1)))
            }
        });
    }
    Layout { headers: 1 + usize::from(m > 1) + usize::from(n > 1), members }
}

/// A diagonal cluster (producers and folds of their shape, each with its
/// `loop_of`, in order; the folds reading producer `i` as `PRODUCER + i`)
/// as its headers (`layout`): one loop over the shape that computes each
/// producer's element once, keeps those `kept`, and folds.
pub(crate) fn combine_diagonal(members: Vec<(OpenAcc, Loop)>, kept: &[bool]) -> Vec<OpenAcc> {
    // a fold's errors name it: the loop is at the first fold
    let at_fold = members.iter().find(|(_, lp)| lp.kind != Kind::Generate);
    let loc = at_fold.map_or(members[0].0.loc, |(t, _)| t.loc);
    let (mut gens, mut folds) = (Vec::new(), Vec::new());
    for (i, (t, lp)) in members.into_iter().enumerate() {
        match lp.kind {
            Kind::Generate => gens.push((lp.src, kept[i])),
            _ => folds.push((t, lp.src)),
        }
    }
    let m = gens.len();
    let shape = gens[0].0.shape.clone();
    // `\ix -> let g0 = G0 ix; ..; let g{m-1} = .. in ((kept gs), (folds' elements))`
    let body = |pick: fn(&DelayedArray) -> &Fun| {
        let lets: Vec<OpenExp> = gens
            .iter()
            .enumerate()
            .map(|(i, (g, _))| {
                let mut b = pick(g).body.clone();
                shift(&mut b, 0, i as isize);
                b
            })
            .collect();
        let kept_vars: Vec<OpenExp> = gens
            .iter()
            .enumerate()
            .filter(|(_, (_, k))| *k)
            .map(|(i, _)| OpenExp::new(ExpKind::Var(m - 1 - i), loc))
            .collect();
        let xs: Vec<OpenExp> = folds
            .iter()
            .map(|(_, src)| {
                let mut b = pick(src).body.clone();
                shift(&mut b, 0, m as isize);
                each_array_read(&mut b, 0, &mut |e, depth| {
                    let read = match &e.kind {
                        ExpKind::Index { array, .. } | ExpKind::LinearIndex { array, .. } => *array,
                        _ => return,
                    };
                    if let Some(i) = read.checked_sub(PRODUCER).filter(|&i| i < m) {
                        // the own index is the parameter, now under m lets
                        debug_assert!(at_own_index(e, depth + m));
                        *e = OpenExp::new(ExpKind::Var(depth + m - 1 - i), e.loc);
                    }
                });
                b
            })
            .collect();
        let tuple = |mut es: Vec<OpenExp>| match es.len() {
            1 => es.pop().expect("one"),
            _ => OpenExp::new(ExpKind::Tuple(es), loc),
        };
        let xs = tuple(xs);
        let result = if kept_vars.is_empty() {
            xs
        } else {
            OpenExp::new(ExpKind::Tuple(vec![tuple(kept_vars), xs]), loc)
        };
        lets.into_iter()
            .rev()
            .fold(result, |acc, b| OpenExp::new(ExpKind::Let(Box::new(b), Box::new(acc)), loc))
    };
    let src = DelayedArray {
        shape,
        index: Fun { params: gens[0].0.index.params.clone(), body: body(|d| &d.index) },
        linear: Fun { params: gens[0].0.linear.params.clone(), body: body(|d| &d.linear) },
    };
    let (mut fs, mut seeds) = (Vec::new(), Vec::new());
    for (t, _) in &folds {
        if let AccKind::Fold { f, seed, .. } = &t.kind {
            fs.push(f.clone());
            seeds.extend(seed.clone());
        }
    }
    let n = fs.len();
    let (f, seed) = if n == 1 {
        (fs.pop().expect("one fold"), seeds.pop())
    } else {
        (tuple_fun(fs, loc), (!seeds.is_empty()).then(|| OpenExp::new(ExpKind::Tuple(seeds), loc)))
    };
    let array = Box::new(OpenAcc::new(AccKind::Delayed(src), loc));
    let var = |i: usize| Box::new(OpenAcc::new(AccKind::Var(i), loc));
    let unzip = |i: usize, v: usize| {
        OpenAcc::new(AccKind::Unzip(Box::new(OpenAcc::new(AccKind::Prj(i, var(v)), loc))), loc)
    };
    let kept_any = gens.iter().any(|(_, k)| *k);
    if !kept_any {
        let fold = OpenAcc::new(AccKind::Fold { f, seed, array }, loc);
        return vec![if n == 1 { fold } else { OpenAcc::new(AccKind::Unzip(Box::new(fold)), loc) }];
    }
    let mut headers = vec![OpenAcc::new(AccKind::FoldKeep { f, seed, array }, loc)];
    if gens.iter().filter(|(_, k)| *k).count() > 1 {
        headers.push(unzip(0, 0));
    }
    if n > 1 {
        let at = headers.len();
        headers.push(unzip(1, at - 1));
    }
    headers
}

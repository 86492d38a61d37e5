//! Generic traversals of scalar terms that several passes share.

use super::term::*;
use accelerate_base::error::SrcLoc;

/// Calls `f` on every direct subterm of a scalar term.
pub fn each_child<'a>(e: &'a OpenExp, mut f: impl FnMut(&'a OpenExp)) {
    match &e.kind {
        ExpKind::Var(_) | ExpKind::Const(_) | ExpKind::Shape { .. } => {}
        ExpKind::Tuple(es) | ExpKind::Prim(_, es) => es.iter().for_each(f),
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
            f(&cond.body);
            f(&body.body);
        }
        // (the array term is not a scalar subterm; only sharing
        // recovery's output has these, Note [Nested array terms])
        ExpKind::ALet(_, body) => f(body),
    }
}

/// `e` as projections of a `while` loop: the projections, innermost
/// first, and the loop.
pub fn projects_loop(mut e: &OpenExp) -> Option<(Vec<usize>, &OpenExp)> {
    let mut path = Vec::new();
    loop {
        match &e.kind {
            ExpKind::Prj(i, t) => {
                path.push(*i);
                e = t;
            }
            ExpKind::While { .. } => {
                path.reverse();
                return Some((path, e));
            }
            _ => return None,
        }
    }
}

/// Whether some subterm of `e`, `e` itself included, satisfies `p`,
/// found without recursion.
pub fn any_node<'a>(e: &'a OpenExp, mut p: impl FnMut(&'a OpenExp) -> bool) -> bool {
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if p(x) {
            return true;
        }
        each_child(x, |c| stack.push(c));
    }
    false
}

/// Whether `e` reads elements of array variable `array` (its shape
/// aside), found without recursion.
pub fn reads_elements(e: &OpenExp, array: usize) -> bool {
    any_node(
        e,
        |x| matches!(x.kind, ExpKind::Index { array: a, .. } | ExpKind::LinearIndex { array: a, .. } if a == array),
    )
}

/// Whether `e` reads scalar variable `var` (counted from the innermost
/// binder in scope at `e`), found without recursion. A nested array term
/// (`ExpKind::ALet`) is taken to read it.
pub fn reads_var(e: &OpenExp, var: usize) -> bool {
    let mut stack = vec![(e, var)];
    while let Some((x, v)) = stack.pop() {
        match &x.kind {
            ExpKind::Var(k) if *k == v => return true,
            ExpKind::ALet(..) => return true,
            ExpKind::Let(b, body) => {
                stack.push((b, v));
                stack.push((body, v + 1));
            }
            ExpKind::While { cond, body, init } => {
                stack.push((init, v));
                stack.push((&cond.body, v + 1));
                stack.push((&body.body, v + 1));
            }
            _ => each_child(x, |c| stack.push((c, v))),
        }
    }
    false
}

/// The location of an array term nested in scalar code (`ExpKind::ALet`,
/// Note [Nested array terms]) in this term, if there is one.
pub fn first_nested(a: &OpenAcc) -> Option<SrcLoc> {
    let mut accs = vec![a];
    while let Some(x) = accs.pop() {
        let mut found = None;
        each_exp(x, |e| {
            let mut stack = vec![e];
            while let Some(y) = stack.pop() {
                if found.is_none() && matches!(y.kind, ExpKind::ALet(..)) {
                    found = Some(y.loc);
                }
                each_child(y, |c| stack.push(c));
            }
        });
        if found.is_some() {
            return found;
        }
        accs.extend(acc_children(x));
    }
    None
}

/// The depth of a scalar term (a leaf is 1), found without recursion, so
/// that a pass can tell before it recurses how much stack it needs.
pub fn depth(e: &OpenExp) -> usize {
    let mut deepest = 0;
    let mut stack = vec![(e, 1)];
    while let Some((x, d)) = stack.pop() {
        deepest = deepest.max(d);
        each_child(x, |c| stack.push((c, d + 1)));
    }
    deepest
}

/// Calls `f` on every scalar term of an array operation itself (its
/// expressions and its functions' bodies, those of a delayed argument
/// included), not on those of its other array subterms.
pub fn each_exp(a: &OpenAcc, mut f: impl FnMut(&OpenExp)) {
    let fun = |g: &Fun, f: &mut dyn FnMut(&OpenExp)| f(&g.body);
    let delayed = |a: &OpenAcc, f: &mut dyn FnMut(&OpenExp)| {
        if let AccKind::Delayed(DelayedArray { shape, index, linear }) = &a.kind {
            f(shape);
            f(&index.body);
            f(&linear.body);
        }
    };
    match &a.kind {
        AccKind::Let(..)
        | AccKind::Var(_)
        | AccKind::Tuple(_)
        | AccKind::Prj(..)
        | AccKind::Unzip(_)
        | AccKind::Use(_)
        | AccKind::Awhile { .. }
        | AccKind::Foreign { .. } => {}
        AccKind::Unit(e) => f(e),
        AccKind::Reshape { shape, .. } => f(shape),
        AccKind::Generate { shape, f: g } | AccKind::Backpermute { shape, f: g, .. } => {
            f(shape);
            fun(g, &mut f);
        }
        AccKind::Map { f: g, .. } | AccKind::ZipWith { f: g, .. } => fun(g, &mut f),
        AccKind::Replicate { slix, .. } | AccKind::Slice { slix, .. } => f(slix),
        AccKind::Fold { f: g, seed, array }
        | AccKind::FoldKeep { f: g, seed, array }
        | AccKind::Scan { f: g, seed, array, .. }
        | AccKind::FoldSeg { f: g, seed, array, .. } => {
            fun(g, &mut f);
            seed.iter().for_each(&mut f);
            delayed(array, &mut f);
        }
        AccKind::Permute { combine, index, source, .. } => {
            fun(combine, &mut f);
            fun(index, &mut f);
            delayed(source, &mut f);
        }
        AccKind::Stencil { f: g, args } => {
            fun(g, &mut f);
            for s in args {
                match &s.boundary {
                    Boundary::Constant(c) => f(c),
                    Boundary::Function(b) => fun(b, &mut f),
                    Boundary::Clamp | Boundary::Mirror | Boundary::Wrap => {}
                }
                delayed(&s.array, &mut f);
            }
        }
        AccKind::Acond { cond, .. } => f(cond),
        AccKind::Delayed(_) => delayed(a, &mut f),
    }
}

/// The array variables a scalar term reads (its elements or its shape),
/// each once, in the order first read, after those already in `out`.
pub fn arrays_read(e: &OpenExp, out: &mut Vec<usize>) {
    // (a set of those seen: a zip_with of 10^5 inputs reads 10^5 arrays)
    let mut seen: std::collections::HashSet<usize> = out.iter().copied().collect();
    let mut stack = vec![e];
    while let Some(x) = stack.pop() {
        if let ExpKind::Index { array, .. } | ExpKind::LinearIndex { array, .. } | ExpKind::Shape { array } =
            x.kind
        {
            if seen.insert(array) {
                out.push(array);
            }
        }
        // children pushed last first, so that they are visited in order
        let at = stack.len();
        each_child(x, |c| stack.push(c));
        stack[at..].reverse();
    }
}

/// The direct array subterms of an array term (under binders or not).
pub fn acc_children(a: &OpenAcc) -> Vec<&OpenAcc> {
    match &a.kind {
        AccKind::Let(b, body) => vec![b, body],
        AccKind::Var(_) | AccKind::Use(_) | AccKind::Unit(_) | AccKind::Generate { .. } => vec![],
        AccKind::Delayed(_) => vec![],
        AccKind::Tuple(ts) => ts.iter().collect(),
        AccKind::Prj(_, t)
        | AccKind::Unzip(t)
        | AccKind::Reshape { array: t, .. }
        | AccKind::Map { array: t, .. }
        | AccKind::Backpermute { array: t, .. }
        | AccKind::Replicate { array: t, .. }
        | AccKind::Slice { array: t, .. }
        | AccKind::Fold { array: t, .. }
        | AccKind::FoldKeep { array: t, .. }
        | AccKind::Scan { array: t, .. } => vec![t],
        AccKind::ZipWith { a, b, .. } => vec![a, b],
        AccKind::FoldSeg { array, offsets, .. } => vec![array, offsets],
        AccKind::Stencil { args, .. } => args.iter().map(|s| &*s.array).collect(),
        AccKind::Permute { defaults, source, .. } => vec![defaults, source],
        AccKind::Acond { then_, else_, .. } => vec![then_, else_],
        AccKind::Awhile { pred, body, init } => vec![&pred.body, &body.body, init],
        AccKind::Foreign { fallback, arg, .. } => fallback.iter().map(|f| &*f.body).chain([&**arg]).collect(),
    }
}

/// Does this operation run a parallel loop over its result (a kernel, in
/// a compiled backend), rather than a host command (`let`, `use`,
/// `reshape`, `unit`, `acond`, `awhile`, tuples)? A delayed array is part
/// of its consumer's kernel.
pub fn is_kernel(a: &OpenAcc) -> bool {
    matches!(
        a.kind,
        AccKind::Generate { .. }
            | AccKind::Map { .. }
            | AccKind::ZipWith { .. }
            | AccKind::Backpermute { .. }
            | AccKind::Replicate { .. }
            | AccKind::Slice { .. }
            | AccKind::Fold { .. }
            | AccKind::FoldKeep { .. }
            | AccKind::FoldSeg { .. }
            | AccKind::Scan { .. }
            | AccKind::Permute { .. }
            | AccKind::Stencil { .. }
    )
}

/// The number of kernels in a term.
pub fn count_kernels(a: &OpenAcc) -> usize {
    let mut n = 0;
    let mut stack = vec![a];
    while let Some(x) = stack.pop() {
        n += usize::from(is_kernel(x));
        stack.extend(acc_children(x));
    }
    n
}

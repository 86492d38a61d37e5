//! De Bruijn levels to indices (Note [Levels while lowering]).
//!
//! Note [Levels while lowering]
//! The lowering names each variable by its *level*: the number of binders
//! of its kind (array or scalar) enclosing its binder. A level stays valid
//! however many bindings are added after it, so the lowering can bind an
//! intermediate array at any moment (each array operation gets a `let` of
//! its own, in the order it is met) and keep using the values it made
//! before. This pass then turns every level into the IR's de Bruijn index,
//! `depth - 1 - level`, where `depth` counts the binders of that kind in
//! scope at the use. Array binders: program parameters, `Let`, `AFun`
//! parameters; scalar binders: `Let`, `Fun` parameters (a function
//! embedded in an array operation starts from an empty scalar scope;
//! `While`'s functions see the scalar scope around them).

use accelerate_ir::term::*;

/// Converts a program body whose variables are levels; `params` is the
/// number of program parameters (levels `0 .. params`).
pub fn acc_to_indices(a: &mut OpenAcc, params: usize) {
    acc(a, params, 0);
}

/// `sb`: the scalar binders in scope, which the term's functions and
/// expressions see (0 but for an array term nested in scalar code).
fn acc(a: &mut OpenAcc, d: usize, sb: usize) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || acc_inner(a, d, sb))
}

fn index(level: &mut usize, depth: usize) {
    debug_assert!(*level < depth, "level {level} used at depth {depth}");
    *level = depth - 1 - *level;
}

fn afun(f: &mut AFun, d: usize, sb: usize) {
    acc(&mut f.body, d + 1, sb);
}

fn fun(f: &mut Fun, ad: usize, sd: usize) {
    exp(&mut f.body, ad, sd + f.params.len());
}

fn acc_inner(a: &mut OpenAcc, d: usize, sb: usize) {
    match &mut a.kind {
        AccKind::Let(b, body) => {
            acc(b, d, sb);
            acc(body, d + 1, sb);
        }
        AccKind::Var(v) => index(v, d),
        AccKind::Tuple(ts) => ts.iter_mut().for_each(|t| acc(t, d, sb)),
        AccKind::Prj(_, t) | AccKind::Unzip(t) => acc(t, d, sb),
        AccKind::Use(_) => {}
        AccKind::Unit(e) => exp(e, d, sb),
        AccKind::Reshape { shape, array } => {
            exp(shape, d, sb);
            acc(array, d, sb);
        }
        AccKind::Generate { shape, f } => {
            exp(shape, d, sb);
            fun(f, d, sb);
        }
        AccKind::Map { f, array } => {
            fun(f, d, sb);
            acc(array, d, sb);
        }
        AccKind::ZipWith { f, a: x, b } => {
            fun(f, d, sb);
            acc(x, d, sb);
            acc(b, d, sb);
        }
        AccKind::Backpermute { shape, f, array } => {
            exp(shape, d, sb);
            fun(f, d, sb);
            acc(array, d, sb);
        }
        AccKind::Replicate { slix, array, .. } | AccKind::Slice { slix, array, .. } => {
            exp(slix, d, sb);
            acc(array, d, sb);
        }
        AccKind::Fold { f, seed, array }
        | AccKind::FoldKeep { f, seed, array }
        | AccKind::Scan { f, seed, array, .. } => {
            fun(f, d, sb);
            if let Some(s) = seed {
                exp(s, d, sb);
            }
            acc(array, d, sb);
        }
        AccKind::FoldSeg { f, seed, array, offsets } => {
            fun(f, d, sb);
            if let Some(s) = seed {
                exp(s, d, sb);
            }
            acc(array, d, sb);
            acc(offsets, d, sb);
        }
        AccKind::Permute { combine, defaults, index: ix, source } => {
            fun(combine, d, sb);
            acc(defaults, d, sb);
            fun(ix, d, sb);
            acc(source, d, sb);
        }
        AccKind::Stencil { f, args } => {
            fun(f, d, sb);
            for s in args {
                match &mut s.boundary {
                    Boundary::Constant(e) => exp(e, d, sb),
                    Boundary::Function(g) => fun(g, d, sb),
                    Boundary::Clamp | Boundary::Mirror | Boundary::Wrap => {}
                }
                acc(&mut s.array, d, sb);
            }
        }
        AccKind::Acond { cond, then_, else_ } => {
            exp(cond, d, sb);
            acc(then_, d, sb);
            acc(else_, d, sb);
        }
        AccKind::Awhile { pred, body, init } => {
            afun(pred, d, sb);
            afun(body, d, sb);
            acc(init, d, sb);
        }
        AccKind::Foreign { fallback, arg, .. } => {
            if let Some(f) = fallback {
                afun(f, d, sb);
            }
            acc(arg, d, sb);
        }
        AccKind::Delayed(da) => {
            exp(&mut da.shape, d, sb);
            fun(&mut da.index, d, sb);
            fun(&mut da.linear, d, sb);
        }
    }
}

fn exp(e: &mut OpenExp, ad: usize, sd: usize) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || exp_inner(e, ad, sd))
}

fn exp_inner(e: &mut OpenExp, ad: usize, sd: usize) {
    match &mut e.kind {
        ExpKind::Let(b, body) => {
            exp(b, ad, sd);
            exp(body, ad, sd + 1);
        }
        ExpKind::Var(v) => index(v, sd),
        ExpKind::Const(_) => {}
        ExpKind::Tuple(es) | ExpKind::Prim(_, es) => es.iter_mut().for_each(|x| exp(x, ad, sd)),
        ExpKind::Prj(_, t) => exp(t, ad, sd),
        ExpKind::Cond(c, t, f) => {
            exp(c, ad, sd);
            exp(t, ad, sd);
            exp(f, ad, sd);
        }
        ExpKind::While { cond, body, init } => {
            fun(cond, ad, sd);
            fun(body, ad, sd);
            exp(init, ad, sd);
        }
        ExpKind::Index { array, index: ix } | ExpKind::LinearIndex { array, index: ix } => {
            index(array, ad);
            exp(ix, ad, sd);
        }
        ExpKind::Shape { array } => index(array, ad),
        ExpKind::ALet(b, body) => {
            // the nested array term sees the scalar scope here (Note
            // [Nested array terms])
            acc(b, ad, sd);
            exp(body, ad + 1, sd);
        }
    }
}

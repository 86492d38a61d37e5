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
    acc(a, params);
}

fn acc(a: &mut OpenAcc, d: usize) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || acc_inner(a, d))
}

fn index(level: &mut usize, depth: usize) {
    debug_assert!(*level < depth, "level {level} used at depth {depth}");
    *level = depth - 1 - *level;
}

fn afun(f: &mut AFun, d: usize) {
    acc(&mut f.body, d + 1);
}

fn fun(f: &mut Fun, ad: usize, sd: usize) {
    exp(&mut f.body, ad, sd + f.params.len());
}

fn acc_inner(a: &mut OpenAcc, d: usize) {
    match &mut a.kind {
        AccKind::Let(b, body) => {
            acc(b, d);
            acc(body, d + 1);
        }
        AccKind::Var(v) => index(v, d),
        AccKind::Tuple(ts) => ts.iter_mut().for_each(|t| acc(t, d)),
        AccKind::Prj(_, t) | AccKind::Unzip(t) => acc(t, d),
        AccKind::Use(_) => {}
        AccKind::Unit(e) => exp(e, d, 0),
        AccKind::Reshape { shape, array } => {
            exp(shape, d, 0);
            acc(array, d);
        }
        AccKind::Generate { shape, f } => {
            exp(shape, d, 0);
            fun(f, d, 0);
        }
        AccKind::Map { f, array } => {
            fun(f, d, 0);
            acc(array, d);
        }
        AccKind::ZipWith { f, a: x, b } => {
            fun(f, d, 0);
            acc(x, d);
            acc(b, d);
        }
        AccKind::Backpermute { shape, f, array } => {
            exp(shape, d, 0);
            fun(f, d, 0);
            acc(array, d);
        }
        AccKind::Replicate { slix, array, .. } | AccKind::Slice { slix, array, .. } => {
            exp(slix, d, 0);
            acc(array, d);
        }
        AccKind::Fold { f, seed, array }
        | AccKind::FoldKeep { f, seed, array }
        | AccKind::Scan { f, seed, array, .. } => {
            fun(f, d, 0);
            if let Some(s) = seed {
                exp(s, d, 0);
            }
            acc(array, d);
        }
        AccKind::FoldSeg { f, seed, array, offsets } => {
            fun(f, d, 0);
            if let Some(s) = seed {
                exp(s, d, 0);
            }
            acc(array, d);
            acc(offsets, d);
        }
        AccKind::Permute { combine, defaults, index: ix, source } => {
            fun(combine, d, 0);
            acc(defaults, d);
            fun(ix, d, 0);
            acc(source, d);
        }
        AccKind::Stencil { f, args } => {
            fun(f, d, 0);
            for s in args {
                match &mut s.boundary {
                    Boundary::Constant(e) => exp(e, d, 0),
                    Boundary::Function(g) => fun(g, d, 0),
                    Boundary::Clamp | Boundary::Mirror | Boundary::Wrap => {}
                }
                acc(&mut s.array, d);
            }
        }
        AccKind::Acond { cond, then_, else_ } => {
            exp(cond, d, 0);
            acc(then_, d);
            acc(else_, d);
        }
        AccKind::Awhile { pred, body, init } => {
            afun(pred, d);
            afun(body, d);
            acc(init, d);
        }
        AccKind::Foreign { fallback, arg, .. } => {
            if let Some(f) = fallback {
                afun(f, d);
            }
            acc(arg, d);
        }
        AccKind::Delayed(da) => {
            exp(&mut da.shape, d, 0);
            fun(&mut da.index, d, 0);
            fun(&mut da.linear, d, 0);
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
            // the lowering makes no nested array term (it reports nested
            // parallelism instead), so none reaches here; were one to, its
            // functions would see the scalar scope `sd` (Note [Nested
            // array terms]), which `acc` does not model
            acc(b, ad);
            exp(body, ad + 1, sd);
        }
    }
}

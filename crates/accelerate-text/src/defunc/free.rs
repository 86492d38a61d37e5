//! Free variables of an expression: what a closure captures.

use crate::ast::*;
use crate::mono::stacker_grow;
use std::collections::BTreeSet;

/// The free variables of an expression (names bound outside it).
pub(super) fn free_vars(e: &Expr, out: &mut BTreeSet<String>) {
    let mut bound = Vec::new();
    fv(e, &mut bound, out);
}

fn fv(e: &Expr, bound: &mut Vec<String>, out: &mut BTreeSet<String>) {
    stacker_grow(|| fv_inner(e, bound, out))
}

fn fv_pats<'a>(ps: impl IntoIterator<Item = &'a Pat>, bound: &mut Vec<String>) {
    for p in ps {
        bound.extend(p.binders().into_iter().map(|i| i.name.clone()));
    }
}

fn fv_inner(e: &Expr, bound: &mut Vec<String>, out: &mut BTreeSet<String>) {
    let n = bound.len();
    match &e.kind {
        ExprKind::Var { name, qual: None, .. } => {
            if !bound.contains(&name.name) {
                out.insert(name.name.clone());
            }
        }
        ExprKind::Var { .. } | ExprKind::Lit(_) | ExprKind::OpSection(_) | ExprKind::ProjSection(_) => {}
        ExprKind::Tuple(es) | ExprKind::ArrayLit(es) => es.iter().for_each(|x| fv(x, bound, out)),
        ExprKind::Record(fs) => fs.iter().for_each(|(_, x)| fv(x, bound, out)),
        ExprKind::Project(x, _)
        | ExprKind::Neg(x)
        | ExprKind::Not(x)
        | ExprKind::LeftSection(_, x)
        | ExprKind::RightSection(_, x)
        | ExprKind::Ascribe(x, _) => fv(x, bound, out),
        ExprKind::Index(x, ix) => {
            fv(x, bound, out);
            fv_dims(ix, bound, out);
        }
        ExprKind::Apply(f, x) | ExprKind::BinOp(_, f, x) => {
            fv(f, bound, out);
            fv(x, bound, out);
        }
        ExprKind::Lambda(ps, _, body) => {
            fv_pats(ps, bound);
            fv(body, bound, out);
        }
        ExprKind::Let(p, x, body) => {
            fv(x, bound, out);
            fv_pats([p], bound);
            fv(body, bound, out);
        }
        ExprKind::LetFun { name, params, def, body, .. } => {
            fv_pats(params, bound);
            fv(def, bound, out);
            bound.truncate(n);
            bound.push(name.name.clone());
            fv(body, bound, out);
        }
        ExprKind::Update(a, ix, v) => {
            fv(a, bound, out);
            fv_dims(ix, bound, out);
            fv(v, bound, out);
        }
        ExprKind::RecordUpdate(a, _, v) => {
            fv(a, bound, out);
            fv(v, bound, out);
        }
        ExprKind::If(c, t, f) => {
            fv(c, bound, out);
            fv(t, bound, out);
            fv(f, bound, out);
        }
        ExprKind::Loop { pat, init, form, body } => {
            match init {
                Some(i) => fv(i, bound, out),
                None => fv_pat_as_uses(pat, bound, out),
            }
            match form {
                LoopForm::For(i, m) => {
                    fv(m, bound, out);
                    bound.push(i.name.clone());
                }
                LoopForm::ForIn(p, xs) => {
                    fv(xs, bound, out);
                    fv_pats([p], bound);
                }
                LoopForm::While(_) => {}
            }
            fv_pats([pat], bound);
            if let LoopForm::While(c) = form {
                fv(c, bound, out);
            }
            fv(body, bound, out);
        }
        ExprKind::Match(x, cases) => {
            fv(x, bound, out);
            for (p, body) in cases {
                let m = bound.len();
                fv_pats([p], bound);
                fv(body, bound, out);
                bound.truncate(m);
            }
        }
    }
    bound.truncate(n);
}

/// `loop p for ...` without an initial value reads the variables of `p`.
fn fv_pat_as_uses(p: &Pat, bound: &[String], out: &mut BTreeSet<String>) {
    for i in p.binders() {
        if !bound.contains(&i.name) {
            out.insert(i.name.clone());
        }
    }
}

fn fv_dims(ix: &[DimIndex], bound: &mut Vec<String>, out: &mut BTreeSet<String>) {
    for d in ix {
        match d {
            DimIndex::Fix(x) => fv(x, bound, out),
            DimIndex::Slice { start, end, stride } => {
                for x in [start, end, stride].into_iter().flatten() {
                    fv(x, bound, out);
                }
            }
        }
    }
}

//! The check of defunctionalisation's guarantee (`first_order`), run by
//! the tests on every program of the corpus.

use crate::ast::*;

/// Whether a defunctionalised program is first order (the guarantee in
/// the module doc): used by tests after every defunctionalisation.
pub fn first_order(prog: &Program) -> Result<(), String> {
    for d in &prog.decls {
        let Decl::Value(v) = d else { continue };
        for p in &v.params {
            if p.ty.contains_arrow() {
                return Err(format!("{}: a parameter of function type", v.name.name));
            }
        }
        check_first_order(&v.body, false).map_err(|m| format!("{}: {m}", v.name.name))?;
    }
    Ok(())
}

fn check_first_order(e: &Expr, as_soac_arg: bool) -> Result<(), String> {
    let arrow_ok = matches!(e.kind, ExprKind::Lambda(..)) && as_soac_arg
        || matches!(&e.kind, ExprKind::Var { .. })
        || matches!(&e.kind, ExprKind::Apply(..));
    if e.ty.contains_arrow() && !arrow_ok {
        return Err(format!("an expression of function type {}", crate::mono::show_type(&e.ty)));
    }
    let mut err = Ok(());
    let mut visit = |x: &Expr, soac: bool| {
        if err.is_ok() {
            err = check_first_order(x, soac);
        }
    };
    match &e.kind {
        ExprKind::Apply(f, x) => {
            visit(f, false);
            // an intrinsic's function argument may be a lambda
            visit(x, true);
        }
        ExprKind::Lambda(ps, _, body) => {
            if !as_soac_arg {
                return Err("a lambda outside an array combinator's argument".into());
            }
            if ps.iter().any(|p| p.ty.contains_arrow()) {
                return Err("a lambda with a parameter of function type".into());
            }
            visit(body, false);
        }
        ExprKind::OpSection(_)
        | ExprKind::LeftSection(..)
        | ExprKind::RightSection(..)
        | ExprKind::ProjSection(_) => return Err("an operator section".into()),
        ExprKind::LetFun { .. } => return Err("a local function".into()),
        ExprKind::Tuple(es) | ExprKind::ArrayLit(es) => es.iter().for_each(|x| visit(x, false)),
        ExprKind::Record(fs) => fs.iter().for_each(|(_, x)| visit(x, false)),
        ExprKind::Project(x, _) | ExprKind::Neg(x) | ExprKind::Not(x) | ExprKind::Ascribe(x, _) => {
            visit(x, false)
        }
        ExprKind::BinOp(_, a, b) => {
            visit(a, false);
            visit(b, false);
        }
        ExprKind::Index(x, _) | ExprKind::Update(x, _, _) => visit(x, false),
        ExprKind::RecordUpdate(x, _, v) => {
            visit(x, false);
            visit(v, false);
        }
        ExprKind::Let(p, x, body) => {
            if p.ty.contains_arrow() {
                return Err("a let binding a function".into());
            }
            visit(x, false);
            visit(body, false);
        }
        ExprKind::If(c, t, f) => {
            visit(c, false);
            visit(t, false);
            visit(f, false);
        }
        ExprKind::Loop { init, body, .. } => {
            if let Some(i) = init {
                visit(i, false);
            }
            visit(body, false);
        }
        ExprKind::Match(x, cases) => {
            visit(x, false);
            cases.iter().for_each(|(_, b)| visit(b, false));
        }
        ExprKind::Lit(_) | ExprKind::Var { .. } => {}
    }
    err
}

//! The end of a definition: literals' types defaulted, the definition
//! generalised (Note [Generalisation]), every type in its tree resolved
//! and written back with only the sizes in scope kept (Note [Sizes]), and
//! the TFP'18 restrictions checked on the resolved types (Note [The
//! restrictions]).

use super::print::show;
use super::types::rebuild;
use super::{restriction, type_error, Checker};
use crate::ast::{
    DimIndex, Expr, ExprKind, Ident, Literal, LoopForm, Pat, PatKind, PrimType, Size, Span, Type, TypeParam,
    ValueDecl,
};
use crate::diag::Diagnostic;

/// The names a size may refer to where a type appears.
type Scope = Vec<String>;

impl Checker {
    pub(super) fn finish_def(&mut self, d: &mut ValueDecl, ty: Type, start: usize) -> Result<(), Diagnostic> {
        for v in start..self.inf.var_count() {
            let v = v as u32;
            if !self.inf.is_free(v) {
                continue;
            }
            let cons = self.inf.constraint(v);
            if let Some((field, _, span)) = cons.fields.first() {
                return Err(type_error(
                    *span,
                    format!(
                        "the type of the value whose field `{field}` is taken is not known here; \
                         add a type annotation"
                    ),
                ));
            }
            if let Some(ps) = cons.prims {
                let p = ps.default_type();
                self.inf.set(v, Type::Prim(p));
            }
        }
        if !d.entry {
            self.generalise(d, &ty);
        }

        let mut scope: Scope = self.defs.keys().cloned().collect();
        scope.extend(d.type_params.iter().filter_map(|p| match p {
            TypeParam::Size(n) => Some(n.name.clone()),
            TypeParam::Type { .. } => None,
        }));
        for p in &mut d.params {
            scope.extend(p.binders().into_iter().map(|b| b.name.clone()));
            self.finish_pat(p, &scope)?;
        }
        let ty_span = d.ret.as_ref().map_or(d.name.span, |r| r.span());
        d.ty = self.finish_ty(&ty, ty_span, &scope)?;
        self.finish_expr(&mut d.body, &mut scope)?;

        for site in std::mem::take(&mut self.insts) {
            for (param, lifted, t) in &site.params {
                let t = self.inf.zonk(t);
                if !lifted && self.may_hold_function(&t) {
                    return Err(restriction(
                        site.span,
                        format!(
                            "the type parameter `{param}` of `{}` is not lifted, so it may not be instantiated \
                             with `{}`, which may be a function (a lifted parameter is written `'^{param}`)",
                            site.callee,
                            show(&t)
                        ),
                    ));
                }
            }
        }

        if d.entry {
            let mut res = d.ty.clone();
            for p in &d.params {
                let Type::Arrow(t, rest) = res else { break };
                res = *rest;
                if t.contains_arrow() {
                    return Err(restriction(
                        p.span,
                        format!(
                            "an entry point may not take a function, but this parameter has type `{}`",
                            show(&t)
                        ),
                    ));
                }
            }
            if res.contains_arrow() {
                return Err(restriction(
                    ty_span,
                    format!(
                        "an entry point may not return a function, but `{}` returns `{}`",
                        d.name.name,
                        show(&res)
                    ),
                ));
            }
        }

        // the inferred parameters' liftedness is final now
        for p in &mut d.type_params {
            if let TypeParam::Type { name, lifted } = p {
                if self.inferred.contains(&name.name) {
                    *lifted = self.tparams.get(&name.name).copied().unwrap_or(false);
                }
            }
        }
        Ok(())
    }

    /// Binds the variables left in the definition's type to new type
    /// parameters `t0`, `t1`, ..., lifted unless they must support `==`.
    fn generalise(&mut self, d: &mut ValueDecl, ty: &Type) {
        let mut next = 0;
        for v in self.inf.free_vars(ty) {
            let name = loop {
                let n = format!("t{next}");
                next += 1;
                if !self.tparams.contains_key(&n) {
                    break n;
                }
            };
            let lifted = !self.inf.constraint(v).equality;
            self.inf.set(v, Type::Param(name.clone()));
            self.tparams.insert(name.clone(), lifted);
            self.inferred.insert(name.clone());
            d.type_params.push(TypeParam::Type { name: Ident { name, span: d.name.span }, lifted });
        }
    }

    /// Whether values of the type may be functions (its order is not
    /// zero): an arrow, or a lifted type parameter, anywhere in it. An
    /// inferred parameter met here is demoted to not lifted instead (Note
    /// [Generalisation]).
    fn may_hold_function(&mut self, t: &Type) -> bool {
        match t {
            Type::Arrow(..) => true,
            Type::Param(p) => match self.tparams.get(p).copied() {
                Some(true) if self.inferred.contains(p) => {
                    self.tparams.insert(p.clone(), false);
                    false
                }
                Some(lifted) => lifted,
                None => false,
            },
            Type::Array { elem, .. } => self.may_hold_function(elem),
            Type::Tuple(ts) => ts.iter().any(|t| self.may_hold_function(t)),
            Type::Record(fs) => fs.iter().any(|(_, t)| self.may_hold_function(t)),
            Type::Unknown | Type::Prim(_) | Type::Infer(_) => false,
        }
    }

    /// The element type of an array of functions in the type, outside
    /// its arrows.
    fn array_of_functions(&mut self, t: &Type) -> Option<Type> {
        match t {
            Type::Array { elem, .. } => self.may_hold_function(elem).then(|| (**elem).clone()),
            Type::Tuple(ts) => ts.iter().find_map(|t| self.array_of_functions(t)),
            Type::Record(fs) => fs.iter().find_map(|(_, t)| self.array_of_functions(t)),
            // a function whose parameter or result is an array of
            // functions is reported where such an array is made or passed
            // (or by rule 4), not at the function
            Type::Arrow(..) | Type::Unknown | Type::Prim(_) | Type::Param(_) | Type::Infer(_) => None,
        }
    }

    /// The resolved type, with the sizes that name nothing in scope
    /// forgotten; an error if something in it was never learnt.
    fn finish_ty(&self, t: &Type, span: Span, scope: &Scope) -> Result<Type, Diagnostic> {
        let z = self.inf.zonk(t);
        if !self.inf.free_vars(&z).is_empty() {
            return Err(type_error(
                span,
                format!("the type `{}` is ambiguous here; add a type annotation", show(&z)),
            ));
        }
        Ok(rebuild(&z, &mut |_| None, &mut |s| match s {
            Size::Var(n) if !scope.contains(n) => Size::Any,
            s => s.clone(),
        }))
    }

    /// Rule 3 on a type written back at `span`.
    fn no_array_of_functions(&mut self, t: &Type, span: Span) -> Result<(), Diagnostic> {
        match self.array_of_functions(t) {
            Some(elem) => Err(restriction(
                span,
                format!(
                    "arrays may not contain functions, but this has type `{}`, an array of `{}`",
                    show(t),
                    show(&elem)
                ),
            )),
            None => Ok(()),
        }
    }

    fn finish_pat(&mut self, p: &mut Pat, scope: &Scope) -> Result<(), Diagnostic> {
        p.ty = self.finish_ty(&p.ty, p.span, scope)?;
        let ty = p.ty.clone();
        self.no_array_of_functions(&ty, p.span)?;
        match &mut p.kind {
            PatKind::Tuple(ps) => ps.iter_mut().try_for_each(|q| self.finish_pat(q, scope)),
            PatKind::Record(fs) => fs.iter_mut().try_for_each(|(_, q)| self.finish_pat(q, scope)),
            PatKind::Ascribe(q, _) => self.finish_pat(q, scope),
            PatKind::Lit(l) => check_literal_range(l, &ty, p.span),
            PatKind::Id(_) | PatKind::Wildcard => Ok(()),
        }
    }

    /// Binds a pattern's variables in `scope` and writes its types back.
    fn finish_binding(&mut self, p: &mut Pat, scope: &mut Scope) -> Result<(), Diagnostic> {
        scope.extend(p.binders().into_iter().map(|b| b.name.clone()));
        self.finish_pat(p, scope)
    }

    fn finish_expr(&mut self, e: &mut Expr, scope: &mut Scope) -> Result<(), Diagnostic> {
        e.ty = self.finish_ty(&e.ty, e.span, scope)?;
        let ty = e.ty.clone();
        self.no_array_of_functions(&ty, e.span)?;
        let save = scope.len();
        let r = crate::mono::stacker_grow(|| self.finish_kind(e.span, &ty, &mut e.kind, scope));
        scope.truncate(save);
        r
    }

    fn finish_kind(
        &mut self,
        span: Span,
        ty: &Type,
        kind: &mut ExprKind,
        scope: &mut Scope,
    ) -> Result<(), Diagnostic> {
        match kind {
            ExprKind::Lit(l) => check_literal_range(l, ty, span),
            ExprKind::Var { inst, .. } => {
                for t in inst.iter_mut() {
                    *t = self.finish_ty(t, span, scope)?;
                }
                Ok(())
            }
            ExprKind::OpSection(_) | ExprKind::ProjSection(_) => Ok(()),
            ExprKind::Tuple(es) | ExprKind::ArrayLit(es) => {
                es.iter_mut().try_for_each(|e| self.finish_expr(e, scope))
            }
            ExprKind::Record(fs) => fs.iter_mut().try_for_each(|(_, e)| self.finish_expr(e, scope)),
            ExprKind::Project(x, _)
            | ExprKind::Neg(x)
            | ExprKind::Not(x)
            | ExprKind::LeftSection(_, x)
            | ExprKind::RightSection(_, x)
            | ExprKind::Ascribe(x, _) => self.finish_expr(x, scope),
            ExprKind::Index(a, idx) => {
                self.finish_expr(a, scope)?;
                self.finish_indices(idx, scope)
            }
            ExprKind::Update(a, idx, v) => {
                self.finish_expr(a, scope)?;
                self.finish_indices(idx, scope)?;
                self.finish_expr(v, scope)
            }
            ExprKind::RecordUpdate(a, _, v) => {
                self.finish_expr(a, scope)?;
                self.finish_expr(v, scope)
            }
            ExprKind::Apply(f, x) => {
                self.finish_expr(f, scope)?;
                self.finish_expr(x, scope)
            }
            ExprKind::BinOp(_, l, r) => {
                self.finish_expr(l, scope)?;
                self.finish_expr(r, scope)
            }
            ExprKind::Lambda(params, _, body) => {
                for p in params.iter_mut() {
                    self.finish_binding(p, scope)?;
                }
                self.finish_expr(body, scope)
            }
            ExprKind::Let(p, rhs, body) => {
                self.finish_expr(rhs, scope)?;
                self.finish_binding(p, scope)?;
                self.finish_expr(body, scope)
            }
            ExprKind::LetFun { name, type_params, params, def, body, .. } => {
                let save = scope.len();
                scope.extend(type_params.iter().filter_map(|p| match p {
                    TypeParam::Size(n) => Some(n.name.clone()),
                    TypeParam::Type { .. } => None,
                }));
                for p in params.iter_mut() {
                    self.finish_binding(p, scope)?;
                }
                self.finish_expr(def, scope)?;
                scope.truncate(save);
                scope.push(name.name.clone());
                self.finish_expr(body, scope)
            }
            ExprKind::If(c, t, f) => {
                if self.may_hold_function(ty) {
                    return Err(restriction(
                        span,
                        format!(
                            "the branches of `if` may not return a function, but they have type `{}`",
                            show(ty)
                        ),
                    ));
                }
                self.finish_expr(c, scope)?;
                self.finish_expr(t, scope)?;
                self.finish_expr(f, scope)
            }
            ExprKind::Match(scrut, cases) => {
                if self.may_hold_function(ty) {
                    return Err(restriction(
                        span,
                        format!(
                            "the cases of `match` may not return a function, but they have type `{}`",
                            show(ty)
                        ),
                    ));
                }
                self.finish_expr(scrut, scope)?;
                for (p, body) in cases.iter_mut() {
                    let save = scope.len();
                    self.finish_binding(p, scope)?;
                    self.finish_expr(body, scope)?;
                    scope.truncate(save);
                }
                Ok(())
            }
            ExprKind::Loop { pat, init, form, body } => {
                if let Some(init) = init {
                    self.finish_expr(init, scope)?;
                }
                match form {
                    LoopForm::For(_, n) => self.finish_expr(n, scope)?,
                    LoopForm::ForIn(_, xs) => self.finish_expr(xs, scope)?,
                    LoopForm::While(_) => {}
                }
                self.finish_binding(pat, scope)?;
                if self.may_hold_function(&pat.ty) {
                    return Err(restriction(
                        span,
                        format!(
                            "a loop's parameters may not contain a function, but they have type `{}`",
                            show(&pat.ty)
                        ),
                    )
                    .with_label(pat.span, "the loop parameters"));
                }
                match form {
                    LoopForm::For(i, _) => scope.push(i.name.clone()),
                    LoopForm::ForIn(p, _) => self.finish_binding(p, scope)?,
                    LoopForm::While(c) => self.finish_expr(c, scope)?,
                }
                self.finish_expr(body, scope)
            }
        }
    }

    fn finish_indices(&mut self, idx: &mut [DimIndex], scope: &mut Scope) -> Result<(), Diagnostic> {
        for d in idx {
            match d {
                DimIndex::Fix(e) => self.finish_expr(e, scope)?,
                DimIndex::Slice { start, end, stride } => {
                    for e in [start, end, stride].into_iter().flatten() {
                        self.finish_expr(e, scope)?;
                    }
                }
            }
        }
        Ok(())
    }
}

/// An integer literal must fit the integer type it ended up with.
fn check_literal_range(l: &Literal, ty: &Type, span: Span) -> Result<(), Diagnostic> {
    let (Literal::Int(v, _), Type::Prim(p)) = (l, ty) else { return Ok(()) };
    let (lo, hi): (i128, i128) = match p {
        PrimType::I8 => (i8::MIN.into(), i8::MAX.into()),
        PrimType::I16 => (i16::MIN.into(), i16::MAX.into()),
        PrimType::I32 => (i32::MIN.into(), i32::MAX.into()),
        PrimType::I64 => (i64::MIN.into(), i64::MAX.into()),
        PrimType::U8 => (0, u8::MAX.into()),
        PrimType::U16 => (0, u16::MAX.into()),
        PrimType::U32 => (0, u32::MAX.into()),
        PrimType::U64 => (0, u64::MAX.into()),
        _ => return Ok(()),
    };
    if *v < lo || *v > hi {
        return Err(type_error(span, format!("the literal {v} does not fit in `{p}`")));
    }
    Ok(())
}

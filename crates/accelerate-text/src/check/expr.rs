//! The typing rules of expressions and patterns: each infers a type,
//! possibly with unification variables in it, and records it in the tree
//! (`finish` resolves them afterwards).

use super::infer::{mk_array, Constraint, PrimSet};
use super::intrinsics;
use super::{arrows, type_error, Checker, InstSite, Local};
use crate::ast::{
    BinOp, DimIndex, Expr, ExprKind, Ident, Literal, LoopForm, Pat, PatKind, PrimType, Size, Span, Type,
    TypeExp, TypeParam,
};
use crate::diag::{DiagKind, Diagnostic};

const BOOL: Type = Type::Prim(PrimType::Bool);
const I64: Type = Type::Prim(PrimType::I64);

/// The variables a pattern binds, with their types.
type Binds = Vec<(Ident, Type)>;

impl Checker {
    pub(super) fn expr(&mut self, e: &mut Expr) -> Result<Type, Diagnostic> {
        // as deep as the program's longest chain of lets (Note [Deep trees]
        // in `ast`)
        let t = crate::mono::stacker_grow(|| self.expr_kind(e));
        let t = t?;
        e.ty = t.clone();
        Ok(t)
    }

    fn expr_kind(&mut self, e: &mut Expr) -> Result<Type, Diagnostic> {
        let span = e.span;
        match &mut e.kind {
            ExprKind::Lit(l) => self.literal(l, span),
            ExprKind::Var { name, qual, inst } => self.var(name, qual.as_ref(), inst, span),
            ExprKind::Tuple(es) => {
                let mut ts = Vec::new();
                for e in es.iter_mut() {
                    ts.push(self.expr(e)?);
                }
                Ok(if ts.len() == 1 { ts.remove(0) } else { Type::Tuple(ts) })
            }
            ExprKind::Record(fs) => {
                let mut out: Vec<(String, Type)> = Vec::new();
                for (name, e) in fs.iter_mut() {
                    if out.iter().any(|(n, _)| *n == name.name) {
                        return Err(type_error(
                            name.span,
                            format!("the field `{}` is given twice", name.name),
                        ));
                    }
                    out.push((name.name.clone(), self.expr(e)?));
                }
                out.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(Type::Record(out))
            }
            ExprKind::ArrayLit(es) => {
                let elem = self.inf.fresh();
                for e in es.iter_mut() {
                    let t = self.expr(e)?;
                    self.unify_at(&elem, &t, e.span)?;
                }
                Ok(mk_array(elem, vec![Size::Const(es.len() as i64)]))
            }
            ExprKind::Project(x, field) => {
                let t = self.expr(x)?;
                self.project(&t, field)
            }
            ExprKind::Index(a, idx) => {
                let t = self.expr(a)?;
                self.index(&t, idx, a.span)
            }
            ExprKind::Apply(f, x) => {
                let tf = self.expr(f)?;
                let (param, res) = self.as_function(&tf, f.span)?;
                let tx = self.expr(x)?;
                self.unify_at(&param, &tx, x.span)?;
                Ok(res)
            }
            ExprKind::BinOp(op, l, r) => {
                let (lt, rt, res) = self.binop_sig(*op);
                let tl = self.expr(l)?;
                self.unify_at(&lt, &tl, l.span)?;
                let tr = self.expr(r)?;
                self.unify_at(&rt, &tr, r.span)?;
                Ok(res)
            }
            ExprKind::Neg(x) => {
                let t = self.inf.fresh_prims(PrimSet::NUMERIC);
                let tx = self.expr(x)?;
                self.unify_at(&t, &tx, x.span)?;
                Ok(t)
            }
            ExprKind::Not(x) => {
                let t = self.inf.fresh_prims(PrimSet::BOOL_OR_INTEGRAL);
                let tx = self.expr(x)?;
                self.unify_at(&t, &tx, x.span)?;
                Ok(t)
            }
            ExprKind::OpSection(op) => {
                let (lt, rt, res) = self.binop_sig(*op);
                Ok(arrows(vec![lt, rt], res))
            }
            ExprKind::LeftSection(op, x) => {
                let (lt, rt, res) = self.binop_sig(*op);
                let tx = self.expr(x)?;
                self.unify_at(&lt, &tx, x.span)?;
                Ok(arrows(vec![rt], res))
            }
            ExprKind::RightSection(op, y) => {
                let (lt, rt, res) = self.binop_sig(*op);
                let ty = self.expr(y)?;
                self.unify_at(&rt, &ty, y.span)?;
                Ok(arrows(vec![lt], res))
            }
            ExprKind::ProjSection(fields) => {
                let r = self.inf.fresh();
                let mut t = r.clone();
                for f in fields.iter() {
                    t = self.project(&t, f)?;
                }
                Ok(arrows(vec![r], t))
            }
            ExprKind::Lambda(params, ret, body) => {
                let save = self.locals.len();
                let r = self.function(params, ret.as_ref(), body);
                self.locals.truncate(save);
                r
            }
            ExprKind::Let(pat, rhs, body) => {
                let t = self.expr(rhs)?;
                let save = self.locals.len();
                let mut binds = Binds::new();
                let tp = self.pat(pat, &mut binds)?;
                self.unify_at(&tp, &t, rhs.span)?;
                self.bind_all(binds);
                let r = self.expr(body);
                self.locals.truncate(save);
                r
            }
            ExprKind::LetFun { name, type_params, params, ret, def, body } => {
                let save = self.locals.len();
                let mut sizes = Vec::new();
                for p in type_params.iter() {
                    match p {
                        TypeParam::Type { name: tp, .. } => {
                            return Err(Diagnostic::new(
                                DiagKind::Unsupported,
                                tp.span,
                                format!(
                                    "local functions are not polymorphic: `{}` may not have the type parameter `{}`",
                                    name.name, tp.name
                                ),
                            ))
                        }
                        TypeParam::Size(n) => {
                            sizes.push(n.name.clone());
                            self.locals.push((n.name.clone(), Local::Value(I64)));
                        }
                    }
                }
                let ty = self.function(params, ret.as_ref(), def);
                self.locals.truncate(save);
                let ty = ty?;
                self.locals.push((name.name.clone(), Local::Fun { ty, sizes }));
                let r = self.expr(body);
                self.locals.truncate(save);
                r
            }
            ExprKind::Update(a, idx, v) => {
                let ta = self.expr(a)?;
                let part = self.index(&ta, idx, a.span)?;
                let tv = self.expr(v)?;
                self.unify_at(&part, &tv, v.span)?;
                Ok(ta)
            }
            ExprKind::RecordUpdate(r, path, v) => {
                let tr = self.expr(r)?;
                let mut part = tr.clone();
                for f in path.iter() {
                    part = self.project(&part, f)?;
                }
                let tv = self.expr(v)?;
                self.unify_at(&part, &tv, v.span)?;
                Ok(tr)
            }
            ExprKind::If(c, t, f) => {
                let tc = self.expr(c)?;
                self.unify_at(&BOOL, &tc, c.span)?;
                let tt = self.expr(t)?;
                let tf = self.expr(f)?;
                self.unify_at(&tt, &tf, f.span)?;
                Ok(self.inf.join(&tt, &tf))
            }
            ExprKind::Loop { pat, init, form, body } => self.loop_expr(pat, init.as_deref_mut(), form, body),
            ExprKind::Match(scrut, cases) => {
                let ts = self.expr(scrut)?;
                let res = self.inf.fresh();
                let mut joined: Option<Type> = None;
                for (pat, body) in cases.iter_mut() {
                    let save = self.locals.len();
                    let mut binds = Binds::new();
                    let tp = self.pat(pat, &mut binds)?;
                    self.unify_at(&ts, &tp, pat.span)?;
                    self.bind_all(binds);
                    let tb = self.expr(body);
                    self.locals.truncate(save);
                    let tb = tb?;
                    self.unify_at(&res, &tb, body.span)?;
                    joined = Some(match joined {
                        None => tb,
                        Some(j) => self.inf.join(&j, &tb),
                    });
                }
                Ok(joined.unwrap_or(res))
            }
            ExprKind::Ascribe(x, te) => {
                let t = self.conv_type(te)?;
                let tx = self.expr(x)?;
                self.unify_at(&t, &tx, x.span)?;
                Ok(t)
            }
        }
    }

    /// A lambda's or local function's type; its parameters stay bound in
    /// `locals` (the caller restores them).
    fn function(
        &mut self,
        params: &mut [Pat],
        ret: Option<&TypeExp>,
        body: &mut Expr,
    ) -> Result<Type, Diagnostic> {
        let mut tys = Vec::new();
        for p in params.iter_mut() {
            tys.push(self.param(p)?);
        }
        let ret = ret.map(|t| self.conv_type(t)).transpose()?;
        let tb = self.expr(body)?;
        let res = match ret {
            Some(r) => {
                self.unify_at(&r, &tb, body.span)?;
                r
            }
            None => tb,
        };
        Ok(arrows(tys, res))
    }

    /// A parameter's type, its variables bound for the parameters after it
    /// and the body.
    pub(super) fn param(&mut self, p: &mut Pat) -> Result<Type, Diagnostic> {
        let mut binds = Binds::new();
        let t = self.pat(p, &mut binds)?;
        self.bind_all(binds);
        Ok(t)
    }

    fn bind_all(&mut self, binds: Binds) {
        self.locals.extend(binds.into_iter().map(|(id, t)| (id.name, Local::Value(t))));
    }

    /// A pattern's type; the variables it binds are added to `binds`.
    pub(super) fn pat(&mut self, p: &mut Pat, binds: &mut Binds) -> Result<Type, Diagnostic> {
        let t = match &mut p.kind {
            PatKind::Id(x) => {
                if binds.iter().any(|(y, _)| y.name == x.name) {
                    return Err(type_error(
                        x.span,
                        format!("the variable `{}` is bound twice in one pattern", x.name),
                    ));
                }
                let t = self.inf.fresh();
                binds.push((x.clone(), t.clone()));
                t
            }
            PatKind::Wildcard => self.inf.fresh(),
            PatKind::Tuple(ps) => {
                let mut ts = Vec::new();
                for p in ps.iter_mut() {
                    ts.push(self.pat(p, binds)?);
                }
                if ts.len() == 1 {
                    ts.remove(0)
                } else {
                    Type::Tuple(ts)
                }
            }
            PatKind::Record(fs) => {
                let mut out: Vec<(String, Type)> = Vec::new();
                for (name, p) in fs.iter_mut() {
                    if out.iter().any(|(n, _)| *n == name.name) {
                        return Err(type_error(
                            name.span,
                            format!("the field `{}` is matched twice", name.name),
                        ));
                    }
                    out.push((name.name.clone(), self.pat(p, binds)?));
                }
                out.sort_by(|a, b| a.0.cmp(&b.0));
                Type::Record(out)
            }
            PatKind::Ascribe(q, te) => {
                let t = self.conv_type(te)?;
                let tq = self.pat(q, binds)?;
                self.unify_at(&t, &tq, q.span)?;
                t
            }
            PatKind::Lit(l) => self.literal(l, p.span)?,
        };
        p.ty = t.clone();
        Ok(t)
    }

    fn literal(&mut self, l: &Literal, span: Span) -> Result<Type, Diagnostic> {
        match l {
            Literal::Bool(_) => Ok(BOOL),
            Literal::Int(_, None) => Ok(self.inf.fresh_prims(PrimSet::NUMERIC)),
            Literal::Float(_, None) => Ok(self.inf.fresh_prims(PrimSet::FLOAT)),
            Literal::Int(_, Some(t)) if *t != PrimType::Bool => Ok(Type::Prim(*t)),
            Literal::Float(_, Some(t)) if t.is_float() => Ok(Type::Prim(*t)),
            Literal::Int(_, Some(t)) | Literal::Float(_, Some(t)) => {
                Err(type_error(span, format!("a number literal cannot have the type `{t}`")))
            }
        }
    }

    fn var(
        &mut self,
        name: &Ident,
        qual: Option<&Ident>,
        inst: &mut Vec<Type>,
        span: Span,
    ) -> Result<Type, Diagnostic> {
        if let Some(q) = qual {
            return intrinsics::namespace(&q.name, &name.name)
                .ok_or_else(|| type_error(span, format!("unknown variable `{}.{}`", q.name, name.name)));
        }
        let n = name.name.as_str();
        match self.locals.iter().rev().find(|(m, _)| m == n).map(|(_, l)| l.clone()) {
            Some(Local::Value(t)) => return Ok(t),
            Some(Local::Fun { ty, sizes }) => return Ok(self.instantiate_sizes(&ty, &sizes)),
            None => {}
        }
        if let Some(def) = self.defs.get(n).cloned() {
            let (t, vars) = self.instantiate(&def.ty, &def.type_params);
            self.record_instantiation(span, n, &def.type_params, &vars);
            *inst = vars;
            return Ok(t);
        }
        if self.current.as_deref() == Some(n) {
            return Err(type_error(
                span,
                format!("`{n}` refers to itself, but definitions may not be recursive (use a `loop`)"),
            ));
        }
        if let Some(sig) = intrinsics::prelude(n) {
            let (t, vars) = self.instantiate(&sig.ty, &sig.type_params);
            self.record_instantiation(span, n, &sig.type_params, &vars);
            return Ok(t);
        }
        Err(type_error(span, format!("unknown variable `{n}`")))
    }

    fn record_instantiation(&mut self, span: Span, callee: &str, params: &[(String, bool)], vars: &[Type]) {
        if params.is_empty() {
            return;
        }
        let params = params.iter().zip(vars).map(|((p, l), v)| (p.clone(), *l, v.clone())).collect();
        self.insts.push(InstSite { span, callee: callee.to_string(), params });
    }

    /// The parameter and result type of what is applied at `span`.
    fn as_function(&mut self, tf: &Type, span: Span) -> Result<(Type, Type), Diagnostic> {
        match self.inf.head(tf) {
            Type::Arrow(a, b) => Ok((*a, *b)),
            Type::Infer(_) => {
                let (a, b) = (self.inf.fresh(), self.inf.fresh());
                let arrow = arrows(vec![a.clone()], b.clone());
                self.unify_at(&arrow, tf, span)?;
                Ok((a, b))
            }
            t => Err(type_error(
                span,
                format!(
                    "this has type `{}`, which is not a function, but it is applied to an argument",
                    self.inf.show(&t)
                ),
            )),
        }
    }

    /// The operand and result types of a binary operator, fresh.
    fn binop_sig(&mut self, op: BinOp) -> (Type, Type, Type) {
        use BinOp::*;
        let same = |t: Type, res: Option<Type>| (t.clone(), t.clone(), res.unwrap_or(t));
        match op {
            Add | Sub | Mul | Div | Mod | Quot | Rem | Pow => {
                same(self.inf.fresh_prims(PrimSet::NUMERIC), None)
            }
            BAnd | BOr | BXor | Shl | Shr => same(self.inf.fresh_prims(PrimSet::INTEGRAL), None),
            Eq | Neq => {
                same(self.inf.fresh_with(Constraint { equality: true, ..Constraint::default() }), Some(BOOL))
            }
            Lt | Le | Gt | Ge => same(self.inf.fresh_prims(PrimSet::PRIMITIVE), Some(BOOL)),
            And | Or => same(BOOL, None),
        }
    }

    /// The type of field `field` of a value of type `t`; `e.0`, `e.1` for
    /// tuples.
    fn project(&mut self, t: &Type, field: &Ident) -> Result<Type, Diagnostic> {
        match self.inf.project_free(t, &field.name, field.span) {
            Ok(Some(ty)) => Ok(ty),
            Ok(None) => {
                let h = self.inf.head(t);
                self.inf.field_of(&h, &field.name).ok_or_else(|| {
                    type_error(
                        field.span,
                        format!("unknown field `{}` in `{}`", field.name, self.inf.show(&h)),
                    )
                })
            }
            Err(clash) => Err(self.clash_error(clash, t, t, field.span)),
        }
    }

    /// The type of `a[idx]` with `a: t` (the indexed part, for `Update`
    /// too): each fixed index removes a dimension, each slice keeps it with
    /// a size not known statically.
    fn index(&mut self, t: &Type, idx: &mut [DimIndex], span: Span) -> Result<Type, Diagnostic> {
        let mut kept = Vec::new();
        for d in idx.iter_mut() {
            match d {
                DimIndex::Fix(e) => self.index_operand(e)?,
                DimIndex::Slice { start, end, stride } => {
                    for e in [start, end, stride].into_iter().flatten() {
                        self.index_operand(e)?;
                    }
                    kept.push(Size::Any);
                }
            }
        }
        if idx.is_empty() {
            return Ok(t.clone());
        }
        let elem = self.inf.fresh();
        let shape = idx.iter().map(|_| self.inf.fresh_size()).collect();
        let want = mk_array(elem.clone(), shape);
        if self.inf.unify_or_undo(&want, t).is_err() {
            return Err(type_error(
                span,
                format!(
                    "expected an array of rank at least {}, found `{}`, which cannot be indexed {} time(s)",
                    idx.len(),
                    self.inf.show(t),
                    idx.len()
                ),
            ));
        }
        Ok(mk_array(elem, kept))
    }

    fn index_operand(&mut self, e: &mut Expr) -> Result<(), Diagnostic> {
        let t = self.expr(e)?;
        let int = self.inf.fresh_prims(PrimSet::INTEGRAL);
        self.unify_at(&int, &t, e.span)
    }

    fn loop_expr(
        &mut self,
        pat: &mut Pat,
        init: Option<&mut Expr>,
        form: &mut LoopForm,
        body: &mut Expr,
    ) -> Result<Type, Diagnostic> {
        let (t_init, init_span) = match init {
            Some(e) => (self.expr(e)?, e.span),
            None => (self.init_from_pat(pat)?, pat.span),
        };
        let save = self.locals.len();
        let r = self.loop_body(pat, t_init, init_span, form, body);
        self.locals.truncate(save);
        r
    }

    fn loop_body(
        &mut self,
        pat: &mut Pat,
        t_init: Type,
        init_span: Span,
        form: &mut LoopForm,
        body: &mut Expr,
    ) -> Result<Type, Diagnostic> {
        // the bound of `for` and the array of `for in` are outside the
        // loop parameters' scope
        let mut form_binds = Binds::new();
        match form {
            LoopForm::For(i, n) => {
                let tn = self.expr(n)?;
                let int = self.inf.fresh_prims(PrimSet::INTEGRAL);
                self.unify_at(&int, &tn, n.span)?;
                form_binds.push((i.clone(), tn));
            }
            LoopForm::ForIn(p, xs) => {
                let txs = self.expr(xs)?;
                let elem = self.inf.fresh();
                let want = mk_array(elem.clone(), vec![Size::Any]);
                if self.inf.unify_or_undo(&want, &txs).is_err() {
                    return Err(type_error(
                        xs.span,
                        format!("`for ... in` needs an array, found `{}`", self.inf.show(&txs)),
                    ));
                }
                let tp = self.pat(p, &mut form_binds)?;
                self.unify_at(&tp, &elem, p.span)?;
            }
            LoopForm::While(_) => {}
        }
        let mut binds = Binds::new();
        let tp = self.pat(pat, &mut binds)?;
        // Note [Sizes]: the parameters may change size from one iteration
        // to the next
        let init = self.inf.without_sizes(&t_init);
        self.unify_at(&tp, &init, init_span)?;
        self.bind_all(binds);
        if let LoopForm::While(c) = form {
            let tc = self.expr(c)?;
            self.unify_at(&BOOL, &tc, c.span)?;
        }
        self.bind_all(form_binds);
        let tb = self.expr(body)?;
        self.unify_at(&tp, &tb, body.span)?;
        Ok(tp)
    }

    /// The initial value of `loop p for ...` without `= init`: the
    /// variables the pattern names, as they are in scope.
    fn init_from_pat(&mut self, p: &Pat) -> Result<Type, Diagnostic> {
        match &p.kind {
            PatKind::Id(x) => match self.locals.iter().rev().find(|(n, _)| *n == x.name) {
                Some((_, Local::Value(t))) => Ok(t.clone()),
                _ => Err(type_error(x.span, format!("unknown variable `{}`", x.name))),
            },
            PatKind::Tuple(ps) => {
                let ts = ps.iter().map(|p| self.init_from_pat(p)).collect::<Result<Vec<_>, _>>()?;
                Ok(if ts.len() == 1 { ts.into_iter().next().unwrap_or(Type::Tuple(vec![])) } else { Type::Tuple(ts) })
            }
            PatKind::Record(fs) => {
                let mut out = fs
                    .iter()
                    .map(|(n, p)| Ok((n.name.clone(), self.init_from_pat(p)?)))
                    .collect::<Result<Vec<_>, Diagnostic>>()?;
                out.sort_by(|a, b| a.0.cmp(&b.0));
                Ok(Type::Record(out))
            }
            PatKind::Ascribe(q, _) => self.init_from_pat(q),
            PatKind::Wildcard | PatKind::Lit(_) => Err(type_error(
                p.span,
                "a `loop` without an initial value takes it from the variables of its pattern, but this names none",
            )),
        }
    }
}

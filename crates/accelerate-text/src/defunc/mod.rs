//! Defunctionalisation by static values (Hovgaard, Henriksen and Elsman,
//! TFP'18): every function value is replaced by the record of the values
//! it captured, and every application of a function by a call of a
//! first-order function specialised to the function applied, which is
//! known at compile time (Note [Static values]).
//!
//! Keeps: the meaning of the program; its entry points, by name and type.
//! Relies on: a checked, monomorphic program (`check`, then `mono`) that
//! keeps the TFP'18 restrictions: no function returned by `if`, `loop` or
//! `match`, no array of functions. Guarantees (`first_order`): no
//! expression and no pattern has a function type, except the function
//! arguments of the prelude's array combinators (`map`, `reduce`, ...),
//! which are lambdas written in place whose bodies are first order; every
//! other application is of a definition by name, with all its arguments.
//! Operator sections are gone (lambdas, then calls).

use crate::ast::*;
use crate::diag::{DiagKind, Diagnostic};
use crate::mono::stacker_grow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::rc::Rc;

mod apply;
mod first_order;
mod free;
pub use first_order::first_order;
use free::free_vars;

// Note [Static values]
// The translation of an expression gives its first-order form and its
// static value (the slides' `sv ::= Dyn τ | Lam x e E | Rcd {...}`): what
// is known at compile time of the value it computes.
//
// - `Dyn(t)`: an ordinary first-order value of type `t`.
// - `Lam`: a closure: the parameters it still takes, its body, and the
//   static values of the variables it captured. At run time it is the
//   record of the captured variables' values (its environment).
// - `Tuple`/`Rcd`: a tuple or record some of whose parts are functions.
// - `Partial`: a prelude function (`map`), an operator or a first-order
//   definition applied to fewer arguments than it takes; at run time the
//   tuple of the arguments it was given.
//
// Applying a `Lam` to its last parameter makes a new first-order
// definition (a lifted function) whose parameters are the environment
// record and the argument, and whose body is the closure's body
// translated with the captured variables' static values; the application
// becomes a call of it. Applying it to an earlier parameter only extends
// the environment. Because `if`, `loop` and `match` never return
// functions and arrays never hold them, every applied function's static
// value is a `Lam` or a `Partial` known here: no run-time dispatch is
// needed (TFP'18, "Type-based restrictions on functions").

#[derive(Clone, Debug)]
enum Sv {
    Dyn(Type),
    Lam(Rc<Closure>),
    Tuple(Vec<Sv>),
    Rcd(Vec<(String, Sv)>),
    Partial { head: Head, args: Vec<Sv> },
}

#[derive(Debug)]
struct Closure {
    /// Which closure this is: one number per lambda (or definition) made
    /// into a closure, shared by its partial applications; with the
    /// static values it holds, the key of the functions lifted from it.
    id: usize,
    params: Vec<Pat>,
    body: Rc<Expr>,
    /// The captured variables, sorted by name.
    env: Vec<(String, Sv)>,
    /// The size parameters of the definition the closure came from.
    sizes: Vec<Ident>,
    /// A name for the lifted functions made from it.
    hint: String,
}

#[derive(Clone, Debug)]
enum Head {
    /// A prelude function or a qualified name (`f32.sqrt`), with its type
    /// at this use.
    Intrinsic { name: Ident, qual: Option<Ident>, ty: Type, arity: usize },
    /// A binary operator, with its operands' and its result's types.
    Op { op: BinOp, ty: Type },
    /// A first-order definition of the program.
    Def { name: String, ty: Type, arity: usize },
}

impl Head {
    fn arity(&self) -> usize {
        match self {
            Head::Intrinsic { arity, .. } | Head::Def { arity, .. } => *arity,
            Head::Op { .. } => 2,
        }
    }
}

impl Sv {
    /// The type of the value at run time.
    fn runtime_ty(&self) -> Type {
        match self {
            Sv::Dyn(t) => t.clone(),
            Sv::Lam(c) => Type::Record(c.env.iter().map(|(n, s)| (n.clone(), s.runtime_ty())).collect()),
            Sv::Tuple(ss) => Type::Tuple(ss.iter().map(Sv::runtime_ty).collect()),
            Sv::Rcd(fs) => Type::Record(fs.iter().map(|(n, s)| (n.clone(), s.runtime_ty())).collect()),
            Sv::Partial { args, .. } => Type::Tuple(args.iter().map(Sv::runtime_ty).collect()),
        }
    }

    /// The static value of a first-order value of type `t`: `Dyn`, or for
    /// a tuple or record type, the same per part (so that a function put
    /// into a tuple is known when taken out).
    fn of_type(t: &Type) -> Sv {
        Sv::Dyn(t.clone())
    }
}

/// The static values of the variables in scope: a persistent map, so that
/// each scope extends its enclosing one in O(log n) without copying it (a
/// chain of n lets is translated in O(n log n)).
type Env = rpds::HashTrieMap<String, Sv>;

/// The globals a translation sees: definitions kept first order, and
/// higher-order ones as closures.
enum Global {
    FirstOrder {
        ty: Type,
        arity: usize,
    },
    HigherOrder(Rc<Closure>),
    /// A definition without parameters whose value holds a function:
    /// translated again at each use (it is pure, so only work is
    /// repeated, and only the work of building closures).
    Inline(Rc<Expr>),
}

/// Defunctionalises a monomorphic program.
pub fn defunctionalise(prog: Program) -> Result<Program, Diagnostic> {
    let mut d = Defunc { globals: HashMap::new(), out: Vec::new(), fresh: 0, lifted: HashMap::new() };
    for decl in prog.decls {
        let Decl::Value(v) = decl else { continue };
        if v.params.is_empty() && !v.entry && v.ty.contains_arrow() {
            d.globals.insert(v.name.name.clone(), Global::Inline(Rc::new(v.body)));
        } else if v.entry || is_first_order(&v) {
            let sizes: Vec<Ident> = size_params(&v);
            let mut env = Env::new();
            for s in &sizes {
                env.insert_mut(s.name.clone(), Sv::Dyn(Type::Prim(PrimType::I64)));
            }
            for p in &v.params {
                bind_dyn(p, &mut env);
            }
            let (body, _) = d.expr(&v.body, &env)?;
            let params = v.params.iter().map(strip_pat).collect();
            let arity = v.params.len();
            d.globals.insert(v.name.name.clone(), Global::FirstOrder { ty: v.ty.clone(), arity });
            d.out.push(Decl::Value(ValueDecl { params, body, ..v }));
        } else {
            let sizes = size_params(&v);
            d.fresh += 1;
            let closure = Closure {
                id: d.fresh,
                params: v.params.clone(),
                body: Rc::new(v.body.clone()),
                env: Vec::new(),
                sizes,
                hint: v.name.name.clone(),
            };
            d.globals.insert(v.name.name.clone(), Global::HigherOrder(Rc::new(closure)));
        }
    }
    Ok(Program { decls: d.out })
}

/// A definition whose parameters and result hold no function: kept as a
/// definition, called by name.
fn is_first_order(v: &ValueDecl) -> bool {
    let mut t = &v.ty;
    for _ in &v.params {
        match t {
            Type::Arrow(a, r) if !a.contains_arrow() => t = r,
            _ => return false,
        }
    }
    !t.contains_arrow()
}

fn size_params(v: &ValueDecl) -> Vec<Ident> {
    v.type_params
        .iter()
        .filter_map(|p| match p {
            TypeParam::Size(n) => Some(n.clone()),
            TypeParam::Type { .. } => None,
        })
        .collect()
}

struct Defunc {
    globals: HashMap<String, Global>,
    /// The output: definitions in an order where each comes after what it
    /// calls.
    out: Vec<Decl>,
    fresh: usize,
    /// The lifted functions made, by closure and static values: the
    /// function's name and type, its result's type and static value.
    lifted: HashMap<String, (String, Type, Type, Sv)>,
}

// Note [Record updates]
// `r with x.y = v` is a record literal before defunctionalisation: `r`
// bound once, each field not on the path read from it, the field on the
// path the update of its own record by the rest of the path, `v` at its
// end. The literal is then translated as any other, so a field holding a
// function keeps its static value and an update of one replaces it.

/// The record `whole` (a variable) with the field at `path` replaced by
/// `v`, fields in the order of its type; `None` where `whole` is not a
/// record of a field on the path.
fn record_with(whole: &Expr, path: &[Ident], v: &Expr, span: Span) -> Option<Expr> {
    let Some((first, rest)) = path.split_first() else { return Some(v.clone()) };
    let Type::Record(fields) = &whole.ty else { return None };
    fields.iter().find(|(name, _)| *name == first.name)?;
    let parts = fields
        .iter()
        .map(|(name, t)| {
            let field = Ident { name: name.clone(), span };
            let read = expr(ExprKind::Project(Box::new(whole.clone()), field.clone()), t.clone(), span);
            let x = if *name == first.name { record_with(&read, rest, v, span)? } else { read };
            Some((field, x))
        })
        .collect::<Option<_>>()?;
    Some(expr(ExprKind::Record(parts), whole.ty.clone(), span))
}

fn expr(kind: ExprKind, ty: Type, span: Span) -> Expr {
    Expr { kind, span, ty }
}

fn var(name: &str, ty: Type, span: Span) -> Expr {
    expr(ExprKind::Var { name: Ident { name: name.into(), span }, qual: None, inst: vec![] }, ty, span)
}

fn id_pat(name: &str, ty: Type, span: Span) -> Pat {
    Pat { kind: PatKind::Id(Ident { name: name.into(), span }), span, ty }
}

/// Binds every variable of a pattern of a first-order value.
fn bind_dyn(p: &Pat, env: &mut Env) {
    match &p.kind {
        PatKind::Id(i) => {
            env.insert_mut(i.name.clone(), Sv::of_type(&p.ty));
        }
        PatKind::Wildcard | PatKind::Lit(_) => {}
        PatKind::Tuple(ps) => ps.iter().for_each(|q| bind_dyn(q, env)),
        PatKind::Record(fs) => fs.iter().for_each(|(_, q)| bind_dyn(q, env)),
        PatKind::Ascribe(q, _) => bind_dyn(q, env),
    }
}

/// A pattern without ascriptions (its types are known), its types those of
/// first-order values.
fn strip_pat(p: &Pat) -> Pat {
    match &p.kind {
        PatKind::Ascribe(q, _) => strip_pat(q),
        PatKind::Tuple(ps) => Pat { kind: PatKind::Tuple(ps.iter().map(strip_pat).collect()), ..p.clone() },
        PatKind::Record(fs) => Pat {
            kind: PatKind::Record(fs.iter().map(|(n, q)| (n.clone(), strip_pat(q))).collect()),
            ..p.clone()
        },
        _ => p.clone(),
    }
}

/// Binds the variables of a pattern to the parts of a static value, and
/// gives the pattern with the run-time types of what it binds.
fn bind_sv(p: &Pat, sv: &Sv, env: &mut Env) -> Pat {
    match (&p.kind, sv) {
        (PatKind::Ascribe(q, _), _) => bind_sv(q, sv, env),
        (PatKind::Id(i), _) => {
            env.insert_mut(i.name.clone(), sv.clone());
            Pat { kind: p.kind.clone(), span: p.span, ty: sv.runtime_ty() }
        }
        (PatKind::Wildcard, _) => Pat { kind: PatKind::Wildcard, span: p.span, ty: sv.runtime_ty() },
        (PatKind::Tuple(ps), Sv::Tuple(ss)) if ps.len() == ss.len() => {
            let qs: Vec<Pat> = ps.iter().zip(ss).map(|(q, s)| bind_sv(q, s, env)).collect();
            let ty = Type::Tuple(qs.iter().map(|q| q.ty.clone()).collect());
            Pat { kind: PatKind::Tuple(qs), span: p.span, ty }
        }
        (PatKind::Record(fs), Sv::Rcd(ss)) => {
            let qs: Vec<(Ident, Pat)> = fs
                .iter()
                .map(|(n, q)| {
                    let s = ss.iter().find(|(m, _)| *m == n.name).map(|(_, s)| s.clone());
                    let s = s.unwrap_or_else(|| Sv::Dyn(q.ty.clone()));
                    (n.clone(), bind_sv(q, &s, env))
                })
                .collect();
            let ty = sv.runtime_ty();
            Pat { kind: PatKind::Record(qs), span: p.span, ty }
        }
        _ => {
            let q = strip_pat(p);
            bind_dyn(&q, env);
            q
        }
    }
}

impl Defunc {
    fn fresh(&mut self, base: &str) -> String {
        self.fresh += 1;
        // `%` cannot occur in a user's identifier
        format!("{base}%{}", self.fresh)
    }

    fn expr(&mut self, e: &Expr, env: &Env) -> Result<(Expr, Sv), Diagnostic> {
        stacker_grow(|| self.expr_inner(e, env))
    }

    fn dyn_expr(&mut self, e: &Expr, env: &Env) -> Result<Expr, Diagnostic> {
        Ok(self.expr(e, env)?.0)
    }

    fn expr_inner(&mut self, e: &Expr, env: &Env) -> Result<(Expr, Sv), Diagnostic> {
        let span = e.span;
        let dynamic = |kind: ExprKind| Ok((expr(kind, e.ty.clone(), span), Sv::Dyn(e.ty.clone())));
        match &e.kind {
            ExprKind::Lit(l) => dynamic(ExprKind::Lit(l.clone())),
            ExprKind::Var { name, qual, .. } => self.variable(e, name, qual.as_ref(), env),
            ExprKind::Tuple(es) => {
                let (es, ss): (Vec<Expr>, Vec<Sv>) =
                    es.iter().map(|x| self.expr(x, env)).collect::<Result<Vec<_>, _>>()?.into_iter().unzip();
                let sv = if ss.iter().all(|s| matches!(s, Sv::Dyn(_))) {
                    Sv::Dyn(e.ty.clone())
                } else {
                    Sv::Tuple(ss)
                };
                let ty = sv.runtime_ty();
                Ok((expr(ExprKind::Tuple(es), ty, span), sv))
            }
            ExprKind::Record(fs) => {
                let mut parts = Vec::new();
                for (n, x) in fs {
                    let (x, s) = self.expr(x, env)?;
                    parts.push((n.clone(), x, s));
                }
                parts.sort_by(|a, b| a.0.name.cmp(&b.0.name));
                let sv = if parts.iter().all(|(_, _, s)| matches!(s, Sv::Dyn(_))) {
                    Sv::Dyn(e.ty.clone())
                } else {
                    Sv::Rcd(parts.iter().map(|(n, _, s)| (n.name.clone(), s.clone())).collect())
                };
                let ty = sv.runtime_ty();
                let fields = parts.into_iter().map(|(n, x, _)| (n, x)).collect();
                Ok((expr(ExprKind::Record(fields), ty, span), sv))
            }
            ExprKind::ArrayLit(es) => {
                let es = es.iter().map(|x| self.dyn_expr(x, env)).collect::<Result<_, _>>()?;
                dynamic(ExprKind::ArrayLit(es))
            }
            ExprKind::Project(x, field) => {
                let (x, s) = self.expr(x, env)?;
                let part = match &s {
                    Sv::Tuple(ss) => field.name.parse::<usize>().ok().and_then(|i| ss.get(i).cloned()),
                    Sv::Rcd(fs) => fs.iter().find(|(n, _)| *n == field.name).map(|(_, s)| s.clone()),
                    _ => None,
                };
                let sv = part.unwrap_or_else(|| Sv::Dyn(e.ty.clone()));
                let ty = sv.runtime_ty();
                Ok((expr(ExprKind::Project(Box::new(x), field.clone()), ty, span), sv))
            }
            ExprKind::Index(x, ix) => {
                let x = self.dyn_expr(x, env)?;
                let ix = self.dims(ix, env)?;
                dynamic(ExprKind::Index(Box::new(x), ix))
            }
            ExprKind::Update(a, ix, v) => {
                let a = self.dyn_expr(a, env)?;
                let ix = self.dims(ix, env)?;
                let v = self.dyn_expr(v, env)?;
                dynamic(ExprKind::Update(Box::new(a), ix, Box::new(v)))
            }
            ExprKind::RecordUpdate(r, path, v) => {
                // `let r' = r in {..., x = v, ...}`, the other fields read
                // from `r'` (Note [Record updates])
                let name = self.fresh("record");
                let whole = var(&name, r.ty.clone(), r.span);
                let updated = record_with(&whole, path, v, span).ok_or_else(|| {
                    let msg = format!(
                        "`with` updates a field of a record, and this is a {}",
                        crate::mono::show_type(&r.ty)
                    );
                    Diagnostic::new(DiagKind::Type, r.span, msg)
                })?;
                let desugared = expr(
                    ExprKind::Let(id_pat(&name, r.ty.clone(), r.span), r.clone(), Box::new(updated)),
                    e.ty.clone(),
                    span,
                );
                self.expr(&desugared, env)
            }
            ExprKind::Apply(..) | ExprKind::BinOp(..) => self.application(e, env),
            ExprKind::Neg(x) => {
                let x = self.dyn_expr(x, env)?;
                dynamic(ExprKind::Neg(Box::new(x)))
            }
            ExprKind::Not(x) => {
                let x = self.dyn_expr(x, env)?;
                dynamic(ExprKind::Not(Box::new(x)))
            }
            ExprKind::Ascribe(x, _) => self.expr(x, env),
            ExprKind::OpSection(op) => {
                let sv = Sv::Partial { head: Head::Op { op: *op, ty: e.ty.clone() }, args: Vec::new() };
                Ok((expr(ExprKind::Tuple(vec![]), sv.runtime_ty(), span), sv))
            }
            ExprKind::LeftSection(op, x) => {
                let (x, s) = self.expr(x, env)?;
                let (params, r) = e.ty.uncurry();
                let full = Type::Arrow(
                    Box::new(x.ty.clone()),
                    Box::new(Type::Arrow(Box::new(params[0].clone()), Box::new(r.clone()))),
                );
                let sv = Sv::Partial { head: Head::Op { op: *op, ty: full }, args: vec![s] };
                Ok((expr(ExprKind::Tuple(vec![x]), sv.runtime_ty(), span), sv))
            }
            ExprKind::RightSection(op, y) => {
                // `(+ y)` is `\x -> x + y`, with `y` computed once, outside
                let (params, r) = e.ty.uncurry();
                let (a, r) = (params[0].clone(), r.clone());
                let yname = self.fresh("section");
                let xname = self.fresh("x");
                let body = expr(
                    ExprKind::BinOp(
                        *op,
                        Box::new(var(&xname, a.clone(), span)),
                        Box::new(var(&yname, y.ty.clone(), span)),
                    ),
                    r,
                    span,
                );
                let lam = expr(
                    ExprKind::Lambda(vec![id_pat(&xname, a, span)], None, Box::new(body)),
                    e.ty.clone(),
                    span,
                );
                let whole = expr(
                    ExprKind::Let(id_pat(&yname, y.ty.clone(), span), y.clone(), Box::new(lam)),
                    e.ty.clone(),
                    span,
                );
                self.expr(&whole, env)
            }
            ExprKind::ProjSection(fields) => {
                let (params, _) = e.ty.uncurry();
                let a = params[0].clone();
                let xname = self.fresh("x");
                let mut body = var(&xname, a.clone(), span);
                for f in fields {
                    let t = field_type(&body.ty, &f.name).unwrap_or(Type::Unknown);
                    body = expr(ExprKind::Project(Box::new(body), f.clone()), t, span);
                }
                let lam = expr(
                    ExprKind::Lambda(vec![id_pat(&xname, a, span)], None, Box::new(body)),
                    e.ty.clone(),
                    span,
                );
                self.expr(&lam, env)
            }
            ExprKind::Lambda(ps, _, body) => {
                let c = self.closure(ps.clone(), body, env, &[], "lambda", e)?;
                Ok(c)
            }
            ExprKind::Let(p, x, body) => {
                let (x, s) = self.expr(x, env)?;
                let mut inner = env.clone();
                let p = bind_sv(p, &s, &mut inner);
                let (body, sv) = self.expr(body, &inner)?;
                let ty = body.ty.clone();
                Ok((expr(ExprKind::Let(p, Box::new(x), Box::new(body)), ty, span), sv))
            }
            ExprKind::LetFun { name, params, def, body, .. } => {
                let (c, s) = self.closure(params.clone(), def, env, &[], &name.name, e)?;
                let mut inner = env.clone();
                let p = bind_sv(&id_pat(&name.name, c.ty.clone(), name.span), &s, &mut inner);
                let (body, sv) = self.expr(body, &inner)?;
                let ty = body.ty.clone();
                Ok((expr(ExprKind::Let(p, Box::new(c), Box::new(body)), ty, span), sv))
            }
            ExprKind::If(c, t, f) => {
                let c = self.dyn_expr(c, env)?;
                let t = self.dyn_expr(t, env)?;
                let f = self.dyn_expr(f, env)?;
                dynamic(ExprKind::If(Box::new(c), Box::new(t), Box::new(f)))
            }
            ExprKind::Loop { pat, init, form, body } => {
                let init = match init {
                    Some(i) => Some(Box::new(self.dyn_expr(i, env)?)),
                    None => None,
                };
                let mut inner = env.clone();
                let form = match form {
                    LoopForm::For(i, n) => {
                        let n = self.dyn_expr(n, env)?;
                        inner.insert_mut(i.name.clone(), Sv::Dyn(n.ty.clone()));
                        LoopForm::For(i.clone(), Box::new(n))
                    }
                    LoopForm::ForIn(p, xs) => {
                        let xs = self.dyn_expr(xs, env)?;
                        bind_dyn(p, &mut inner);
                        LoopForm::ForIn(strip_pat(p), Box::new(xs))
                    }
                    LoopForm::While(c) => LoopForm::While(c.clone()),
                };
                bind_dyn(pat, &mut inner);
                let form = match form {
                    LoopForm::While(c) => LoopForm::While(Box::new(self.dyn_expr(&c, &inner)?)),
                    f => f,
                };
                let body = self.dyn_expr(body, &inner)?;
                dynamic(ExprKind::Loop { pat: strip_pat(pat), init, form, body: Box::new(body) })
            }
            ExprKind::Match(x, cases) => {
                let x = self.dyn_expr(x, env)?;
                let mut out = Vec::new();
                for (p, body) in cases {
                    let mut inner = env.clone();
                    bind_dyn(p, &mut inner);
                    out.push((strip_pat(p), self.dyn_expr(body, &inner)?));
                }
                dynamic(ExprKind::Match(Box::new(x), out))
            }
        }
    }

    fn dims(&mut self, ix: &[DimIndex], env: &Env) -> Result<Vec<DimIndex>, Diagnostic> {
        ix.iter()
            .map(|d| {
                Ok(match d {
                    DimIndex::Fix(x) => DimIndex::Fix(self.dyn_expr(x, env)?),
                    DimIndex::Slice { start, end, stride } => {
                        let mut one =
                            |x: &Option<Expr>| x.as_ref().map(|x| self.dyn_expr(x, env)).transpose();
                        DimIndex::Slice { start: one(start)?, end: one(end)?, stride: one(stride)? }
                    }
                })
            })
            .collect()
    }

    /// A variable: a local's static value, a global definition, or a
    /// prelude function.
    fn variable(
        &mut self,
        e: &Expr,
        name: &Ident,
        qual: Option<&Ident>,
        env: &Env,
    ) -> Result<(Expr, Sv), Diagnostic> {
        let span = e.span;
        if qual.is_none() {
            if let Some(sv) = env.get(&name.name) {
                return Ok((var(&name.name, sv.runtime_ty(), span), sv.clone()));
            }
            match self.globals.get(&name.name) {
                Some(Global::FirstOrder { ty, arity: 0 }) => {
                    return Ok((var(&name.name, ty.clone(), span), Sv::Dyn(ty.clone())));
                }
                Some(Global::Inline(body)) => {
                    let body = body.clone();
                    return self.expr(&body, &Env::new());
                }
                Some(Global::FirstOrder { ty, arity }) => {
                    let sv = Sv::Partial {
                        head: Head::Def { name: name.name.clone(), ty: ty.clone(), arity: *arity },
                        args: vec![],
                    };
                    return Ok((expr(ExprKind::Tuple(vec![]), sv.runtime_ty(), span), sv));
                }
                Some(Global::HigherOrder(c)) => {
                    let sv = Sv::Lam(c.clone());
                    return Ok((expr(ExprKind::Record(vec![]), sv.runtime_ty(), span), sv));
                }
                None => {}
            }
        }
        let arity = e.ty.uncurry().0.len();
        if arity == 0 {
            // a constant of the prelude (`f32.pi`)
            return Ok((e.clone(), Sv::Dyn(e.ty.clone())));
        }
        let head = Head::Intrinsic { name: name.clone(), qual: qual.cloned(), ty: e.ty.clone(), arity };
        let sv = Sv::Partial { head, args: vec![] };
        Ok((expr(ExprKind::Tuple(vec![]), sv.runtime_ty(), span), sv))
    }

    /// A closure of `params -> body` capturing the locals it uses.
    fn closure(
        &mut self,
        params: Vec<Pat>,
        body: &Expr,
        env: &Env,
        sizes: &[Ident],
        hint: &str,
        whole: &Expr,
    ) -> Result<(Expr, Sv), Diagnostic> {
        let mut free = BTreeSet::new();
        let lam = expr(
            ExprKind::Lambda(params.clone(), None, Box::new(body.clone())),
            whole.ty.clone(),
            whole.span,
        );
        free_vars(&lam, &mut free);
        let captured: Vec<(String, Sv)> =
            free.into_iter().filter_map(|n| env.get(&n).map(|s| (n.clone(), s.clone()))).collect();
        let fields = captured
            .iter()
            .map(|(n, s)| (Ident { name: n.clone(), span: whole.span }, var(n, s.runtime_ty(), whole.span)))
            .collect();
        self.fresh += 1;
        let c = Closure {
            id: self.fresh,
            params,
            body: Rc::new(body.clone()),
            env: captured,
            sizes: sizes.to_vec(),
            hint: hint.into(),
        };
        let sv = Sv::Lam(Rc::new(c));
        Ok((expr(ExprKind::Record(fields), sv.runtime_ty(), whole.span), sv))
    }
}

fn wrap_let(bind: Option<(Pat, Expr)>, (body, sv): (Expr, Sv)) -> (Expr, Sv) {
    match bind {
        None => (body, sv),
        Some((p, x)) => {
            let ty = body.ty.clone();
            let span = body.span;
            (expr(ExprKind::Let(p, Box::new(x), Box::new(body)), ty, span), sv)
        }
    }
}

fn field_type(t: &Type, field: &str) -> Option<Type> {
    match t {
        Type::Record(fs) => fs.iter().find(|(n, _)| n == field).map(|(_, t)| t.clone()),
        Type::Tuple(ts) => field.parse::<usize>().ok().and_then(|i| ts.get(i).cloned()),
        _ => None,
    }
}

fn show_sv(s: &Sv) -> String {
    match s {
        Sv::Dyn(t) => format!("a value of type {}", crate::mono::show_type(t)),
        Sv::Lam(_) => "a function".into(),
        Sv::Tuple(_) => "a tuple".into(),
        Sv::Rcd(_) => "a record".into(),
        Sv::Partial { .. } => "a partial application".into(),
    }
}

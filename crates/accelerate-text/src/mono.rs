//! Monomorphisation: every polymorphic definition is copied at each list
//! of types its type parameters are used at, so that no `Type::Param`
//! remains (TFP'18, "Implementation": monomorphisation runs before
//! defunctionalisation, which needs every type known).
//!
//! Keeps: the program's meaning and the order of its definitions (each
//! copy takes the place of its definition, so a copy still comes after
//! everything it uses); monomorphic definitions are left as they are.
//! Guarantees: no `TypeParam::Type`, no `Type::Param`, and every `Var`'s
//! `inst` empty. Copies are named `name<t1, t2>`, which no user name can
//! be. A polymorphic definition that nothing uses is dropped.
//!
//! Linear in the size of the output: each (definition, types) pair is
//! copied once, found through a map.

use crate::ast::*;
use std::collections::HashMap;

/// Monomorphises a checked program.
pub fn monomorphise(prog: Program) -> Program {
    let mut decls: Vec<Option<ValueDecl>> = Vec::new();
    let mut poly: HashMap<String, usize> = HashMap::new();
    let mut order = Vec::new();
    for d in prog.decls {
        match d {
            Decl::Value(v) if is_polymorphic(&v) => {
                poly.insert(v.name.name.clone(), decls.len());
                order.push(Slot::Poly(decls.len()));
                decls.push(Some(v));
            }
            Decl::Value(v) => order.push(Slot::Mono(Box::new(v))),
            // abbreviations are expanded by the checker
            Decl::Type(_) => {}
        }
    }
    let mut m = Mono {
        poly: &poly,
        templates: &decls,
        instances: HashMap::new(),
        work: Vec::new(),
        made: Vec::new(),
    };
    let mut out_mono = Vec::new();
    for slot in order {
        match slot {
            Slot::Mono(mut v) => {
                m.rename_uses(&mut v.body);
                out_mono.push(Slot::Mono(v));
            }
            Slot::Poly(i) => out_mono.push(Slot::Poly(i)),
        }
    }
    // instantiate until no new instance is asked for
    while let Some((template, types, name)) = m.work.pop() {
        let mut v = m.templates[template].clone().expect("templates stay in place");
        let params: Vec<String> = v
            .type_params
            .iter()
            .filter_map(|p| match p {
                TypeParam::Type { name, .. } => Some(name.name.clone()),
                TypeParam::Size(_) => None,
            })
            .collect();
        let subst: HashMap<String, Type> = params.into_iter().zip(types).collect();
        v.type_params.retain(|p| matches!(p, TypeParam::Size(_)));
        v.name.name = name;
        v.ty = substitute(&v.ty, &subst);
        v.params.iter_mut().for_each(|p| subst_pat(p, &subst));
        subst_expr(&mut v.body, &subst);
        m.rename_uses(&mut v.body);
        m.made.push((template, v));
    }
    let mut by_template: HashMap<usize, Vec<ValueDecl>> = HashMap::new();
    for (t, v) in std::mem::take(&mut m.made) {
        by_template.entry(t).or_default().push(v);
    }
    let mut out = Vec::new();
    for slot in out_mono {
        match slot {
            Slot::Mono(v) => out.push(Decl::Value(*v)),
            Slot::Poly(i) => {
                // an instance may use another instance of the same
                // definition only through earlier definitions, never
                // itself (no recursion), so their order among themselves
                // is free; creation order is reversed by the work stack
                let mut vs = by_template.remove(&i).unwrap_or_default();
                vs.sort_by(|a, b| a.name.name.cmp(&b.name.name));
                out.extend(vs.into_iter().map(Decl::Value));
            }
        }
    }
    Program { decls: out }
}

enum Slot {
    Mono(Box<ValueDecl>),
    Poly(usize),
}

fn is_polymorphic(v: &ValueDecl) -> bool {
    v.type_params.iter().any(|p| matches!(p, TypeParam::Type { .. }))
}

struct Mono<'a> {
    poly: &'a HashMap<String, usize>,
    templates: &'a [Option<ValueDecl>],
    /// (definition, types) -> the copy's name
    instances: HashMap<(usize, Vec<Type>), String>,
    work: Vec<(usize, Vec<Type>, String)>,
    made: Vec<(usize, ValueDecl)>,
}

impl Mono<'_> {
    /// Renames every use of a polymorphic definition to its instance at
    /// the use's types, asking for the instance when it is new. A local
    /// binding of the same name shadows the definition.
    fn rename_uses(&mut self, e: &mut Expr) {
        let mut bound: Vec<String> = Vec::new();
        self.rename_in(e, &mut bound);
    }

    fn rename_in(&mut self, e: &mut Expr, bound: &mut Vec<String>) {
        stacker_grow(|| self.rename_inner(e, bound))
    }

    fn rename_inner(&mut self, e: &mut Expr, bound: &mut Vec<String>) {
        match &mut e.kind {
            ExprKind::Var { name, qual: None, inst } => {
                if let Some(&t) = self.poly.get(&name.name) {
                    if !bound.contains(&name.name) {
                        let types = std::mem::take(inst);
                        let key = (t, types.clone());
                        let new = match self.instances.get(&key) {
                            Some(n) => n.clone(),
                            None => {
                                let shown: Vec<String> = types.iter().map(crate::mono::show_type).collect();
                                let n = format!("{}<{}>", name.name, shown.join(", "));
                                self.instances.insert(key, n.clone());
                                self.work.push((t, types, n.clone()));
                                n
                            }
                        };
                        name.name = new;
                    }
                }
            }
            ExprKind::Var { .. } | ExprKind::Lit(_) | ExprKind::OpSection(_) | ExprKind::ProjSection(_) => {}
            ExprKind::Tuple(es) | ExprKind::ArrayLit(es) => {
                es.iter_mut().for_each(|x| self.rename_in(x, bound))
            }
            ExprKind::Record(fs) => fs.iter_mut().for_each(|(_, x)| self.rename_in(x, bound)),
            ExprKind::Project(x, _)
            | ExprKind::Neg(x)
            | ExprKind::Not(x)
            | ExprKind::LeftSection(_, x)
            | ExprKind::RightSection(_, x)
            | ExprKind::Ascribe(x, _) => self.rename_in(x, bound),
            ExprKind::Index(x, ix) => {
                self.rename_in(x, bound);
                self.rename_dims(ix, bound);
            }
            ExprKind::Apply(f, x) | ExprKind::BinOp(_, f, x) => {
                self.rename_in(f, bound);
                self.rename_in(x, bound);
            }
            ExprKind::Lambda(ps, _, body) => {
                let n = bound.len();
                bound.extend(ps.iter().flat_map(|p| p.binders()).map(|i| i.name.clone()));
                self.rename_in(body, bound);
                bound.truncate(n);
            }
            ExprKind::Let(p, x, body) => {
                self.rename_in(x, bound);
                let n = bound.len();
                bound.extend(p.binders().into_iter().map(|i| i.name.clone()));
                self.rename_in(body, bound);
                bound.truncate(n);
            }
            ExprKind::LetFun { name, params, def, body, .. } => {
                let n = bound.len();
                bound.extend(params.iter().flat_map(|p| p.binders()).map(|i| i.name.clone()));
                self.rename_in(def, bound);
                bound.truncate(n);
                bound.push(name.name.clone());
                self.rename_in(body, bound);
                bound.truncate(n);
            }
            ExprKind::Update(a, ix, v) => {
                self.rename_in(a, bound);
                self.rename_dims(ix, bound);
                self.rename_in(v, bound);
            }
            ExprKind::RecordUpdate(a, _, v) => {
                self.rename_in(a, bound);
                self.rename_in(v, bound);
            }
            ExprKind::If(c, t, f) => {
                self.rename_in(c, bound);
                self.rename_in(t, bound);
                self.rename_in(f, bound);
            }
            ExprKind::Loop { pat, init, form, body } => {
                if let Some(i) = init {
                    self.rename_in(i, bound);
                }
                let n = bound.len();
                match form {
                    LoopForm::For(i, bound_e) => {
                        self.rename_in(bound_e, bound);
                        bound.push(i.name.clone());
                    }
                    LoopForm::ForIn(p, xs) => {
                        self.rename_in(xs, bound);
                        bound.extend(p.binders().into_iter().map(|i| i.name.clone()));
                    }
                    LoopForm::While(_) => {}
                }
                bound.extend(pat.binders().into_iter().map(|i| i.name.clone()));
                if let LoopForm::While(c) = form {
                    self.rename_in(c, bound);
                }
                self.rename_in(body, bound);
                bound.truncate(n);
            }
            ExprKind::Match(x, cases) => {
                self.rename_in(x, bound);
                for (p, body) in cases {
                    let n = bound.len();
                    bound.extend(p.binders().into_iter().map(|i| i.name.clone()));
                    self.rename_in(body, bound);
                    bound.truncate(n);
                }
            }
        }
    }

    fn rename_dims(&mut self, ix: &mut [DimIndex], bound: &mut Vec<String>) {
        for d in ix {
            match d {
                DimIndex::Fix(x) => self.rename_in(x, bound),
                DimIndex::Slice { start, end, stride } => {
                    for x in [start, end, stride].into_iter().flatten() {
                        self.rename_in(x, bound);
                    }
                }
            }
        }
    }
}

/// Runs `f` with enough stack for a deep tree (a long chain of lets).
pub(crate) fn stacker_grow<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, f)
}

/// A type as the instance names show it.
pub(crate) fn show_type(t: &Type) -> String {
    match t {
        Type::Unknown => "?".into(),
        Type::Prim(p) => p.name().into(),
        Type::Array { elem, shape } => {
            let dims: String = shape
                .iter()
                .map(|s| match s {
                    Size::Any => "[]".to_string(),
                    Size::Const(n) => format!("[{n}]"),
                    Size::Var(v) => format!("[{v}]"),
                })
                .collect();
            format!("{dims}{}", show_type(elem))
        }
        Type::Tuple(ts) => format!("({})", ts.iter().map(show_type).collect::<Vec<_>>().join(", ")),
        Type::Record(fs) => {
            format!(
                "{{{}}}",
                fs.iter().map(|(n, t)| format!("{n}: {}", show_type(t))).collect::<Vec<_>>().join(", ")
            )
        }
        Type::Arrow(a, b) => format!("({} -> {})", show_type(a), show_type(b)),
        Type::Param(p) => p.clone(),
        Type::Infer(k) => format!("?{k}"),
    }
}

/// `t` with type parameters replaced, arrays of arrays flattened into
/// arrays of higher rank.
pub fn substitute(t: &Type, s: &HashMap<String, Type>) -> Type {
    match t {
        Type::Param(p) => s.get(p).cloned().unwrap_or_else(|| t.clone()),
        Type::Array { elem, shape } => match substitute(elem, s) {
            Type::Array { elem: inner, shape: more } => {
                Type::Array { elem: inner, shape: shape.iter().cloned().chain(more).collect() }
            }
            e => Type::Array { elem: Box::new(e), shape: shape.clone() },
        },
        Type::Tuple(ts) => Type::Tuple(ts.iter().map(|t| substitute(t, s)).collect()),
        Type::Record(fs) => Type::Record(fs.iter().map(|(n, t)| (n.clone(), substitute(t, s))).collect()),
        Type::Arrow(a, b) => Type::Arrow(Box::new(substitute(a, s)), Box::new(substitute(b, s))),
        Type::Unknown | Type::Prim(_) | Type::Infer(_) => t.clone(),
    }
}

fn subst_pat(p: &mut Pat, s: &HashMap<String, Type>) {
    p.ty = substitute(&p.ty, s);
    match &mut p.kind {
        PatKind::Tuple(ps) => ps.iter_mut().for_each(|q| subst_pat(q, s)),
        PatKind::Record(fs) => fs.iter_mut().for_each(|(_, q)| subst_pat(q, s)),
        PatKind::Ascribe(q, _) => subst_pat(q, s),
        PatKind::Id(_) | PatKind::Wildcard | PatKind::Lit(_) => {}
    }
}

/// Substitutes in every type of the expression: its nodes', its
/// patterns' and its uses' instantiations.
pub fn subst_expr(e: &mut Expr, s: &HashMap<String, Type>) {
    stacker_grow(|| subst_inner(e, s))
}

fn subst_inner(e: &mut Expr, s: &HashMap<String, Type>) {
    e.ty = substitute(&e.ty, s);
    match &mut e.kind {
        ExprKind::Var { inst, .. } => inst.iter_mut().for_each(|t| *t = substitute(t, s)),
        ExprKind::Lit(_) | ExprKind::OpSection(_) | ExprKind::ProjSection(_) => {}
        ExprKind::Tuple(es) | ExprKind::ArrayLit(es) => es.iter_mut().for_each(|x| subst_expr(x, s)),
        ExprKind::Record(fs) => fs.iter_mut().for_each(|(_, x)| subst_expr(x, s)),
        ExprKind::Project(x, _)
        | ExprKind::Neg(x)
        | ExprKind::Not(x)
        | ExprKind::LeftSection(_, x)
        | ExprKind::RightSection(_, x)
        | ExprKind::Ascribe(x, _) => subst_expr(x, s),
        ExprKind::Index(x, ix) => {
            subst_expr(x, s);
            subst_dims(ix, s);
        }
        ExprKind::Apply(f, x) | ExprKind::BinOp(_, f, x) => {
            subst_expr(f, s);
            subst_expr(x, s);
        }
        ExprKind::Lambda(ps, _, body) => {
            ps.iter_mut().for_each(|p| subst_pat(p, s));
            subst_expr(body, s);
        }
        ExprKind::Let(p, x, body) => {
            subst_pat(p, s);
            subst_expr(x, s);
            subst_expr(body, s);
        }
        ExprKind::LetFun { params, def, body, .. } => {
            params.iter_mut().for_each(|p| subst_pat(p, s));
            subst_expr(def, s);
            subst_expr(body, s);
        }
        ExprKind::Update(a, ix, v) => {
            subst_expr(a, s);
            subst_dims(ix, s);
            subst_expr(v, s);
        }
        ExprKind::RecordUpdate(a, _, v) => {
            subst_expr(a, s);
            subst_expr(v, s);
        }
        ExprKind::If(c, t, f) => {
            subst_expr(c, s);
            subst_expr(t, s);
            subst_expr(f, s);
        }
        ExprKind::Loop { pat, init, form, body } => {
            subst_pat(pat, s);
            if let Some(i) = init {
                subst_expr(i, s);
            }
            match form {
                LoopForm::For(_, n) => subst_expr(n, s),
                LoopForm::ForIn(p, xs) => {
                    subst_pat(p, s);
                    subst_expr(xs, s);
                }
                LoopForm::While(c) => subst_expr(c, s),
            }
            subst_expr(body, s);
        }
        ExprKind::Match(x, cases) => {
            subst_expr(x, s);
            for (p, body) in cases {
                subst_pat(p, s);
                subst_expr(body, s);
            }
        }
    }
}

fn subst_dims(ix: &mut [DimIndex], s: &HashMap<String, Type>) {
    for d in ix {
        match d {
            DimIndex::Fix(x) => subst_expr(x, s),
            DimIndex::Slice { start, end, stride } => {
                for x in [start, end, stride].into_iter().flatten() {
                    subst_expr(x, s);
                }
            }
        }
    }
}

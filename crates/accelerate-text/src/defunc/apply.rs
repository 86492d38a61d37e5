//! Applications (Note [Static values]): of closures (a lifted function
//! made for the closure's last parameter), of partially applied prelude
//! functions, operators and definitions (saturated into calls, function
//! arguments turned into lambdas written in place), and of the prelude's
//! plumbing (`flip`, `curry`, ...), applied at compile time.

use super::*;

impl Defunc {
    /// An application spine `f a b ...` (or a binary operator).
    pub(super) fn application(&mut self, e: &Expr, env: &Env) -> Result<(Expr, Sv), Diagnostic> {
        if let ExprKind::BinOp(op, a, b) = &e.kind {
            let a = self.dyn_expr(a, env)?;
            let b = self.dyn_expr(b, env)?;
            return Ok((
                expr(ExprKind::BinOp(*op, Box::new(a), Box::new(b)), e.ty.clone(), e.span),
                Sv::Dyn(e.ty.clone()),
            ));
        }
        let (head, args) = spine(e);
        let (f, fsv) = self.expr(head, env)?;
        let mut done = Vec::new();
        for a in args {
            done.push(self.expr(a, env)?);
        }
        self.apply(f, fsv, done, e.span)
    }

    /// Applies a function value (its run-time form and static value) to
    /// arguments.
    fn apply(
        &mut self,
        f: Expr,
        fsv: Sv,
        args: Vec<(Expr, Sv)>,
        span: Span,
    ) -> Result<(Expr, Sv), Diagnostic> {
        let mut f = (f, fsv);
        let mut args = args.into_iter().peekable();
        while args.peek().is_some() {
            f = match f.1 {
                Sv::Lam(c) => {
                    let a = args.next().expect("peeked");
                    self.apply_closure(f.0, &c, a, span)?
                }
                Sv::Partial { head, args: held } => {
                    // the arguments it holds, out of its run-time tuple
                    let (bind, held_exprs) = self.take_parts(f.0, &held, span);
                    let mut all: Vec<(Expr, Sv)> = held_exprs.into_iter().zip(held).collect();
                    while all.len() < head.arity() {
                        match args.next() {
                            Some(a) => all.push(a),
                            None => break,
                        }
                    }
                    let r = if all.len() == head.arity() {
                        self.saturate(&head, all, span)?
                    } else {
                        let sv = Sv::Partial { head, args: all.iter().map(|(_, s)| s.clone()).collect() };
                        let ty = sv.runtime_ty();
                        (expr(ExprKind::Tuple(all.into_iter().map(|(x, _)| x).collect()), ty, span), sv)
                    };
                    wrap_let(bind, r)
                }
                other => {
                    return Err(Diagnostic::new(
                        DiagKind::Unsupported,
                        span,
                        format!("application of a value that is not a known function ({})", show_sv(&other)),
                    ))
                }
            };
        }
        Ok(f)
    }

    /// The parts of a held-arguments tuple, as variables bound to them.
    fn take_parts(&mut self, tuple: Expr, held: &[Sv], span: Span) -> (Option<(Pat, Expr)>, Vec<Expr>) {
        if held.is_empty() {
            return (None, vec![]);
        }
        let names: Vec<String> = held.iter().map(|_| self.fresh("arg")).collect();
        let pat = Pat {
            kind: PatKind::Tuple(
                names.iter().zip(held).map(|(n, s)| id_pat(n, s.runtime_ty(), span)).collect(),
            ),
            span,
            ty: tuple.ty.clone(),
        };
        let exprs = names.iter().zip(held).map(|(n, s)| var(n, s.runtime_ty(), span)).collect();
        (Some((pat, tuple)), exprs)
    }

    /// Applies a closure to one argument: extends its environment, or, at
    /// its last parameter, calls a lifted function made for it.
    fn apply_closure(
        &mut self,
        f: Expr,
        c: &Closure,
        arg: (Expr, Sv),
        span: Span,
    ) -> Result<(Expr, Sv), Diagnostic> {
        let (param, rest) = c.params.split_first().expect("a closure takes a parameter");
        // the environment, as variables of the lifted function
        let mut inner = Env::new();
        for s in &c.sizes {
            inner.insert_mut(s.name.clone(), Sv::Dyn(Type::Prim(PrimType::I64)));
        }
        let env_fields: Vec<(Ident, Pat)> = c
            .env
            .iter()
            .map(|(n, s)| {
                let id = Ident { name: n.clone(), span };
                (id, bind_sv(&id_pat(n, s.runtime_ty(), span), s, &mut inner))
            })
            .collect();
        let env_ty = Type::Record(c.env.iter().map(|(n, s)| (n.clone(), s.runtime_ty())).collect());
        if !rest.is_empty() {
            // not yet the last parameter: a closure with one more captured
            let mut env2 = Env::new();
            let p = bind_sv(param, &arg.1, &mut env2);
            let mut fields: BTreeMap<String, Sv> = c.env.iter().cloned().collect();
            fields.extend(env2.iter().map(|(k, v)| (k.clone(), v.clone())));
            let new = Closure {
                id: c.id,
                params: rest.to_vec(),
                body: c.body.clone(),
                env: fields.into_iter().collect(),
                sizes: c.sizes.clone(),
                hint: c.hint.clone(),
            };
            // let a% = arg in let f% = f in let {env} = f% in let p = a% in
            // {env..., p's variables}: the fresh names keep `arg` from
            // seeing the environment's variables
            let record = expr(
                ExprKind::Record(
                    new.env
                        .iter()
                        .map(|(n, s)| (Ident { name: n.clone(), span }, var(n, s.runtime_ty(), span)))
                        .collect(),
                ),
                Type::Record(new.env.iter().map(|(n, s)| (n.clone(), s.runtime_ty())).collect()),
                span,
            );
            let ty = record.ty.clone();
            let (aname, fname) = (self.fresh("arg"), self.fresh("closure"));
            let (aty, fty) = (arg.0.ty.clone(), f.ty.clone());
            let inner_let = expr(
                ExprKind::Let(p, Box::new(var(&aname, aty.clone(), span)), Box::new(record)),
                ty.clone(),
                span,
            );
            let env_pat = Pat { kind: PatKind::Record(env_fields), span, ty: env_ty };
            let opened = expr(
                ExprKind::Let(env_pat, Box::new(var(&fname, fty.clone(), span)), Box::new(inner_let)),
                ty.clone(),
                span,
            );
            let with_f = expr(
                ExprKind::Let(id_pat(&fname, fty, span), Box::new(f), Box::new(opened)),
                ty.clone(),
                span,
            );
            let outer =
                expr(ExprKind::Let(id_pat(&aname, aty, span), Box::new(arg.0), Box::new(with_f)), ty, span);
            return Ok((outer, Sv::Lam(Rc::new(new))));
        }
        // the last parameter: a lifted function `f' env p = body`, made
        // once for each closure and static values of its environment and
        // argument (the slides' `g'`, applied twice, is one function)
        let key = format!(
            "{}|{}|{}|{}",
            c.id,
            c.params.len(),
            c.env.iter().map(|(n, s)| format!("{n}={}", signature(s))).collect::<Vec<_>>().join(","),
            signature(&arg.1)
        );
        if let Some((name, ty, result_ty, sv)) = self.lifted.get(&key).cloned() {
            let arg_ty = arg.0.ty.clone();
            let call1 = expr(
                ExprKind::Apply(Box::new(var(&name, ty, span)), Box::new(f)),
                Type::Arrow(Box::new(arg_ty), Box::new(result_ty.clone())),
                span,
            );
            let call = expr(ExprKind::Apply(Box::new(call1), Box::new(arg.0)), result_ty, span);
            return Ok((call, sv));
        }
        let p = bind_sv(param, &arg.1, &mut inner);
        let (body, sv) = self.expr(&c.body, &inner)?;
        let name = self.fresh(&format!("lifted_{}", c.hint));
        let env_pat = Pat { kind: PatKind::Record(env_fields), span, ty: env_ty.clone() };
        let ty = Type::Arrow(
            Box::new(env_ty.clone()),
            Box::new(Type::Arrow(Box::new(p.ty.clone()), Box::new(body.ty.clone()))),
        );
        let type_params = c.sizes.iter().cloned().map(TypeParam::Size).collect();
        let result_ty = body.ty.clone();
        let arg_ty = p.ty.clone();
        self.lifted.insert(key, (name.clone(), ty.clone(), result_ty.clone(), sv.clone()));
        self.out.push(Decl::Value(ValueDecl {
            name: Ident { name: name.clone(), span },
            entry: false,
            type_params,
            params: vec![env_pat, p],
            ret: None,
            body,
            span,
            ty: ty.clone(),
        }));
        let call1 = expr(
            ExprKind::Apply(Box::new(var(&name, ty, span)), Box::new(f)),
            Type::Arrow(Box::new(arg_ty), Box::new(result_ty.clone())),
            span,
        );
        let call = expr(ExprKind::Apply(Box::new(call1), Box::new(arg.0)), result_ty, span);
        Ok((call, sv))
    }

    /// A prelude function, operator or definition with all its arguments.
    fn saturate(&mut self, head: &Head, args: Vec<(Expr, Sv)>, span: Span) -> Result<(Expr, Sv), Diagnostic> {
        match head {
            Head::Op { op, ty } => {
                let (_, r) = ty.uncurry();
                let r = r.clone();
                let mut it = args.into_iter().map(|(x, _)| Box::new(x));
                let (a, b) = (it.next().expect("two"), it.next().expect("two"));
                Ok((expr(ExprKind::BinOp(*op, a, b), r.clone(), span), Sv::Dyn(r)))
            }
            Head::Def { name, ty, .. } => {
                let mut f = var(name, ty.clone(), span);
                for (x, _) in args {
                    let t = match &f.ty {
                        Type::Arrow(_, r) => (**r).clone(),
                        t => t.clone(),
                    };
                    f = expr(ExprKind::Apply(Box::new(f), Box::new(x)), t, span);
                }
                let t = f.ty.clone();
                Ok((f, Sv::Dyn(t)))
            }
            Head::Intrinsic { name, qual, ty, .. } => {
                if qual.is_none() {
                    if let Some(r) = self.structural(&name.name, &args, span)? {
                        return Ok(r);
                    }
                }
                // function arguments become lambdas written in place,
                // their closures bound outside
                let (param_tys, _) = ty.uncurry();
                let param_tys: Vec<Type> = param_tys.into_iter().cloned().collect();
                let mut lets = Vec::new();
                let mut out_args = Vec::new();
                for ((x, s), pty) in args.into_iter().zip(&param_tys) {
                    if pty.is_arrow() {
                        let fname = self.fresh("fun");
                        let fvar = var(&fname, x.ty.clone(), span);
                        lets.push((id_pat(&fname, x.ty.clone(), span), x));
                        out_args.push(self.eta_lambda(fvar, s, pty, span)?);
                    } else {
                        out_args.push(x);
                    }
                }
                let mut f = expr(
                    ExprKind::Var { name: name.clone(), qual: qual.clone(), inst: vec![] },
                    ty.clone(),
                    span,
                );
                for x in out_args {
                    let t = match &f.ty {
                        Type::Arrow(_, r) => (**r).clone(),
                        t => t.clone(),
                    };
                    f = expr(ExprKind::Apply(Box::new(f), Box::new(x)), t, span);
                }
                let t = f.ty.clone();
                let mut r = f;
                for (p, x) in lets.into_iter().rev() {
                    let ty = r.ty.clone();
                    r = expr(ExprKind::Let(p, Box::new(x), Box::new(r)), ty, span);
                }
                Ok((r, Sv::Dyn(t)))
            }
        }
    }

    /// `\x1 ... xn -> f x1 ... xn` for a function value `f` of type `ty`
    /// taking `n` arguments: a first-order lambda, its body the
    /// application translated.
    fn eta_lambda(&mut self, f: Expr, fsv: Sv, ty: &Type, span: Span) -> Result<Expr, Diagnostic> {
        let (params, _) = ty.uncurry();
        let names: Vec<(String, Type)> = params.iter().map(|t| (self.fresh("p"), (*t).clone())).collect();
        let args = names.iter().map(|(n, t)| (var(n, t.clone(), span), Sv::of_type(t))).collect();
        let (body, _) = self.apply(f, fsv, args, span)?;
        let pats = names.iter().map(|(n, t)| id_pat(n, t.clone(), span)).collect();
        Ok(expr(ExprKind::Lambda(pats, None, Box::new(body)), ty.clone(), span))
    }

    /// The prelude's functions that only move values around (`id`,
    /// `const`, `flip`, `curry`, `uncurry`, `fst`, `snd`), applied at
    /// compile time, so that functions pass through them.
    fn structural(
        &mut self,
        name: &str,
        args: &[(Expr, Sv)],
        span: Span,
    ) -> Result<Option<(Expr, Sv)>, Diagnostic> {
        let a = |i: usize| args[i].clone();
        Ok(Some(match (name, args.len()) {
            ("id", 1) => a(0),
            ("const", 2) => a(0),
            ("fst", 1) | ("snd", 1) => {
                let i = usize::from(name == "snd");
                let (x, s) = a(0);
                let part = match &s {
                    Sv::Tuple(ss) => ss[i].clone(),
                    _ => Sv::Dyn(match &x.ty {
                        Type::Tuple(ts) => ts[i].clone(),
                        t => t.clone(),
                    }),
                };
                let field = Ident { name: i.to_string(), span };
                (expr(ExprKind::Project(Box::new(x), field), part.runtime_ty(), span), part)
            }
            ("flip", 3) => {
                let (f, s) = a(0);
                self.apply(f, s, vec![a(2), a(1)], span)?
            }
            ("curry", 3) => {
                let (f, s) = a(0);
                let (x, xs) = a(1);
                let (y, ys) = a(2);
                let sv = Sv::Tuple(vec![xs, ys]);
                let pair = expr(ExprKind::Tuple(vec![x, y]), sv.runtime_ty(), span);
                self.apply(f, s, vec![(pair, sv)], span)?
            }
            ("uncurry", 2) => {
                let (f, s) = a(0);
                let (p, ps) = a(1);
                let parts: Vec<Sv> = match &ps {
                    Sv::Tuple(ss) => ss.clone(),
                    _ => match &p.ty {
                        Type::Tuple(ts) => ts.iter().map(Sv::of_type).collect(),
                        _ => return Ok(None),
                    },
                };
                let pname = self.fresh("pair");
                let pv = var(&pname, p.ty.clone(), span);
                let xs: Vec<(Expr, Sv)> = parts
                    .iter()
                    .enumerate()
                    .map(|(i, s)| {
                        let field = Ident { name: i.to_string(), span };
                        (
                            expr(ExprKind::Project(Box::new(pv.clone()), field), s.runtime_ty(), span),
                            s.clone(),
                        )
                    })
                    .collect();
                let r = self.apply(f, s, xs, span)?;
                wrap_let(Some((id_pat(&pname, p.ty.clone(), span), p)), r)
            }
            _ => return Ok(None),
        }))
    }
}

/// A static value's shape as text, for the key of a lifted function:
/// equal signatures translate a closure's body the same way.
fn signature(s: &Sv) -> String {
    match s {
        Sv::Dyn(t) => crate::mono::show_type(t),
        Sv::Lam(c) => format!(
            "L{}/{}[{}]",
            c.id,
            c.params.len(),
            c.env.iter().map(|(n, s)| format!("{n}={}", signature(s))).collect::<Vec<_>>().join(",")
        ),
        Sv::Tuple(ss) => format!("({})", ss.iter().map(signature).collect::<Vec<_>>().join(",")),
        Sv::Rcd(fs) => format!(
            "{{{}}}",
            fs.iter().map(|(n, s)| format!("{n}={}", signature(s))).collect::<Vec<_>>().join(",")
        ),
        Sv::Partial { head, args } => {
            let h = match head {
                Head::Intrinsic { name, qual, ty, .. } => {
                    format!(
                        "I{}.{}:{}",
                        qual.as_ref().map_or("", |q| q.name.as_str()),
                        name.name,
                        crate::mono::show_type(ty)
                    )
                }
                Head::Op { op, ty } => format!("O{}:{}", op.symbol(), crate::mono::show_type(ty)),
                Head::Def { name, .. } => format!("D{name}"),
            };
            format!("{h}({})", args.iter().map(signature).collect::<Vec<_>>().join(","))
        }
    }
}

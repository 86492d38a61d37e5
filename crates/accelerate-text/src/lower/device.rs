//! Scalar code (Note [Host and device]): the bodies of the functions
//! passed to combinators, and the host's scalar computations, each
//! lowered into one scalar expression.

use super::*;
use accelerate_ir::term::{Fun, PrimFun};

impl<'a> Lower<'a> {
    /// Lowers scalar code; a scalar binding it makes goes into the
    /// innermost open scalar block.
    pub(super) fn device(&mut self, e: &'a Expr) -> Res<LVal> {
        mono_grow(|| self.device_inner(e, true))
    }

    /// `nest`: whether an array computation at `e` itself is an array term
    /// nested here (not at the root of a host scalar computation whose
    /// arrays the host computed first, `host_via_device`).
    pub(super) fn device_inner(&mut self, e: &'a Expr, nest: bool) -> Res<LVal> {
        if let Some(v) = self.overrides.get(&(e as *const Expr)) {
            return Ok(v.clone());
        }
        if nest && self.needs_host(e) {
            return self.nested_host(e);
        }
        if let Some(r) = self.structural(e, false) {
            return r;
        }
        let loc = self.loc(e.span);
        let elt = || elt_of(&e.ty).ok_or_else(|| nested(e));
        match &e.kind {
            ExprKind::Lit(l) => Ok(LVal::Exp {
                e: OpenExp::new(ExpKind::Const(literal(l, &e.ty, e.span)?), loc),
                elt: elt()?,
            }),
            ExprKind::Var { qual: Some(q), name, .. } => self.prim_constant(&q.name, &name.name, e),
            ExprKind::Var { qual: None, .. }
            | ExprKind::Tuple(_)
            | ExprKind::Record(_)
            | ExprKind::Project(..)
            | ExprKind::Ascribe(..) => unreachable!("lowered by `structural`"),
            ExprKind::Index(..) => {
                let (base, ix) = index_chain(e);
                let arr = self.device(base)?;
                let LVal::Array { level, rank, elt } = arr else {
                    return Err(unsupported(e.span, "indexing a value that is not an array"));
                };
                let mut idx = Vec::new();
                for i in ix {
                    let DimIndex::Fix(i) = i else { return Err(nested(e)) };
                    let v = self.device(i)?;
                    idx.push(to_i64(self.exp_of(&v, loc)?, &i.ty, loc));
                }
                if idx.len() != rank {
                    return Err(nested(e));
                }
                let index = OpenExp::new(ExpKind::Tuple(idx), loc);
                Ok(LVal::Exp {
                    e: OpenExp::new(ExpKind::Index { array: level, index: Box::new(index) }, loc),
                    elt,
                })
            }
            ExprKind::Apply(..) => {
                let (head, args) = spine(e);
                match &head.kind {
                    ExprKind::Var { name, qual: None, .. } if self.decls.contains_key(name.name.as_str()) => {
                        let d = self.decls[name.name.as_str()];
                        let mut vals = Vec::new();
                        for a in args {
                            let v = self.device(a)?;
                            vals.push(self.share(v));
                        }
                        self.inline(d, vals, false)
                    }
                    ExprKind::Var { name, qual, .. } => {
                        let qual = qual.as_ref().map(|q| q.name.as_str());
                        self.prim_call(qual, &name.name, &args, e)
                    }
                    _ => Err(unsupported(e.span, "a call of a value that is not a function name")),
                }
            }
            ExprKind::BinOp(op, a, b) => self.binop(*op, a, b, e),
            ExprKind::Neg(x) => {
                let v = self.device(x)?;
                let x = self.exp_of(&v, loc)?;
                Ok(LVal::Exp { e: prim(PrimFun::Neg, vec![x], loc), elt: elt()? })
            }
            ExprKind::Not(x) => {
                let v = self.device(x)?;
                let xe = self.exp_of(&v, loc)?;
                let op =
                    if matches!(x.ty, Type::Prim(PrimType::Bool)) { PrimFun::LNot } else { PrimFun::BNot };
                Ok(LVal::Exp { e: prim(op, vec![xe], loc), elt: elt()? })
            }
            ExprKind::Let(p, x, body) => {
                let v = self.device(x)?;
                let v = self.share(v);
                let n = self.env.len();
                self.bind_pat(p, v);
                let r = self.device(body);
                self.env.truncate(n);
                r
            }
            ExprKind::If(c, t, f) => {
                let cv = self.device(c)?;
                let c = self.exp_of(&cv, loc)?;
                let t = self.device_block(t)?;
                let f = self.device_block(f)?;
                Ok(LVal::Exp {
                    e: OpenExp::new(ExpKind::Cond(Box::new(c), Box::new(t), Box::new(f)), loc),
                    elt: elt()?,
                })
            }
            ExprKind::Loop { pat, init, form, body } => self.device_loop(e, pat, init.as_deref(), form, body),
            ExprKind::Match(x, cases) => self.device_match(e, x, cases),
            ExprKind::ArrayLit(_) | ExprKind::Update(..) => Err(nested(e)),
            ExprKind::Lambda(..)
            | ExprKind::LetFun { .. }
            | ExprKind::OpSection(_)
            | ExprKind::LeftSection(..)
            | ExprKind::RightSection(..)
            | ExprKind::ProjSection(_) => Err(unsupported(e.span, "a function value in scalar code")),
            // Note [Record updates]: gone with defunctionalisation
            ExprKind::RecordUpdate(..) => Err(unsupported(e.span, "a record update not defunctionalised")),
        }
    }

    /// An array computation inside scalar code (nested data parallelism):
    /// lowered as the host's would be, each array bound by an `ALet` at
    /// this point of the scalar code, its functions seeing the scalar
    /// variables in scope here (Note [Nested array terms]); the lifting
    /// transformation flattens it. Its result must be a scalar.
    fn nested_host(&mut self, e: &'a Expr) -> Res<LVal> {
        let loc = self.loc(e.span);
        let elt = elt_of(&e.ty).ok_or_else(|| nested(e))?;
        let x = self.nested_scope(self.sdepth, loc, |l| l.host(e).and_then(|v| l.exp_of(&v, loc)))?;
        Ok(LVal::Exp { e: x, elt })
    }

    /// Scalar code in a block of its own (a branch), as one expression.
    pub(super) fn device_block(&mut self, e: &'a Expr) -> Res<OpenExp> {
        self.device_block_at(e, true)
    }

    /// `device_block`, `nest` as for `device_inner` at `e`.
    pub(super) fn device_block_at(&mut self, e: &'a Expr, nest: bool) -> Res<OpenExp> {
        let loc = self.loc(e.span);
        self.open_sblock();
        let n = self.env.len();
        let r = mono_grow(|| self.device_inner(e, nest)).and_then(|v| self.exp_of(&v, loc));
        self.env.truncate(n);
        match r {
            Ok(x) => Ok(self.close_sblock(x)),
            Err(err) => {
                let dummy = c_i64(0, loc);
                self.close_sblock(dummy);
                Err(err)
            }
        }
    }

    /// A value bound once: a computed scalar becomes a variable.
    pub(super) fn share(&mut self, v: LVal) -> LVal {
        match v {
            LVal::Exp { e, elt } if !trivial(&e) => {
                let loc = e.loc;
                let level = self.sbind(e);
                LVal::Exp { e: OpenExp::new(ExpKind::Var(level), loc), elt }
            }
            LVal::Tuple(vs) => LVal::Tuple(vs.into_iter().map(|v| self.share(v)).collect()),
            v => v,
        }
    }

    /// A function of `n` parameters for an array operation: a lambda, its
    /// body lowered in a fresh scalar scope (an operation's functions see
    /// no scalar variable of another, Note [Two environments]).
    pub(super) fn lambda(&mut self, lam: &'a Expr, params: &[EltTy]) -> Res<Fun> {
        let loc = self.loc(lam.span);
        let args = params
            .iter()
            .enumerate()
            .map(|(i, elt)| LVal::Exp {
                e: OpenExp::new(ExpKind::Var(self.sbase + i), loc),
                elt: elt.clone(),
            })
            .collect();
        self.lambda_with(lam, params.to_vec(), args)
    }

    /// A function of parameters `fun_params` (scalar variables `0 ..` of
    /// its body) for an array operation, whose body is a lambda's with its
    /// parameters bound to `args` (values made from those variables).
    pub(super) fn lambda_with(&mut self, lam: &'a Expr, fun_params: Vec<EltTy>, args: Vec<LVal>) -> Res<Fun> {
        let (ps, body) = lambda_parts(lam)?;
        let saved_depth = std::mem::replace(&mut self.sdepth, self.sbase);
        let saved_blocks = std::mem::take(&mut self.sblocks);
        let n = self.env.len();
        for (p, v) in ps.iter().zip(args) {
            self.bind_pat(p, v);
        }
        self.sdepth = self.sbase + fun_params.len();
        let params = fun_params;
        let r = self.device_block(body);
        self.env.truncate(n);
        self.sdepth = saved_depth;
        self.sblocks = saved_blocks;
        Ok(Fun { params, body: r? })
    }

    fn binop(&mut self, op: BinOp, a: &'a Expr, b: &'a Expr, e: &'a Expr) -> Res<LVal> {
        let loc = self.loc(e.span);
        let av = self.device(a)?;
        let ae = self.exp_of(&av, loc)?;
        if matches!(op, BinOp::And | BinOp::Or) {
            // the second operand runs only when needed: its bindings stay
            // in its own block
            let be = self.device_block(b)?;
            let f = if op == BinOp::And { PrimFun::LAnd } else { PrimFun::LOr };
            return Ok(LVal::Exp { e: prim(f, vec![ae, be], loc), elt: EltTy::Scalar(ScalarTy::Bool) });
        }
        let bv = self.device(b)?;
        let be = self.exp_of(&bv, loc)?;
        let result = elt_of(&e.ty).ok_or_else(|| nested(e))?;
        if matches!(op, BinOp::Eq | BinOp::Neq) {
            let t = elt_of(&a.ty).ok_or_else(|| nested(e))?;
            let eq = structural_eq(ae, be, &t, loc);
            let e = if op == BinOp::Eq { eq } else { prim(PrimFun::LNot, vec![eq], loc) };
            return Ok(LVal::Exp { e, elt: result });
        }
        let Type::Prim(t) = &a.ty else {
            return Err(unsupported(
                e.span,
                format!("`{}` on values of type {}", op.symbol(), crate::mono::show_type(&a.ty)),
            ));
        };
        let f = match (op, t.is_float()) {
            (BinOp::Add, _) => PrimFun::Add,
            (BinOp::Sub, _) => PrimFun::Sub,
            (BinOp::Mul, _) => PrimFun::Mul,
            (BinOp::Div, true) => PrimFun::FDiv,
            (BinOp::Div, false) => PrimFun::IDiv,
            (BinOp::Mod, false) => PrimFun::Mod,
            (BinOp::Quot, false) => PrimFun::Quot,
            (BinOp::Rem, false) => PrimFun::Rem,
            (BinOp::Pow, true) => PrimFun::Powf,
            (BinOp::Pow, false) => return self.int_pow(ae, be, *t, loc),
            (BinOp::BAnd, _) => PrimFun::BAnd,
            (BinOp::BOr, _) => PrimFun::BOr,
            (BinOp::BXor, _) => PrimFun::BXor,
            (BinOp::Shl, _) => PrimFun::Shl,
            (BinOp::Shr, _) => PrimFun::Shr,
            (BinOp::Lt, _) => PrimFun::Lt,
            (BinOp::Le, _) => PrimFun::Le,
            (BinOp::Gt, _) => PrimFun::Gt,
            (BinOp::Ge, _) => PrimFun::Ge,
            (BinOp::Mod | BinOp::Quot | BinOp::Rem, true) => {
                return Err(unsupported(e.span, format!("`{}` on floating-point numbers", op.symbol())))
            }
            (BinOp::Eq | BinOp::Neq | BinOp::And | BinOp::Or, _) => unreachable!("handled above"),
        };
        Ok(LVal::Exp { e: prim(f, vec![ae, be], loc), elt: result })
    }

    /// `x ** n` of integers, by repeated squaring in a scalar loop; a
    /// negative exponent gives 0 (1 for `x` = 1), as Futhark's.
    fn int_pow(&mut self, x: OpenExp, n: OpenExp, t: PrimType, loc: SrcLoc) -> Res<LVal> {
        let s = EltTy::Scalar(prim_scalar(t));
        let c = |v: i64| OpenExp::new(ExpKind::Const(int_const(v, t)), loc);
        // state (result, base, exponent); loop while exponent > 0
        let state = EltTy::Tuple(vec![s.clone(), s.clone(), s.clone()]);
        let v = |l: usize| OpenExp::new(ExpKind::Var(l), loc);
        let l = self.sdepth;
        let cond =
            Fun { params: vec![state.clone()], body: prim(PrimFun::Gt, vec![prj(2, v(l), loc), c(0)], loc) };
        let odd = prim(PrimFun::Eq, vec![prim(PrimFun::BAnd, vec![prj(2, v(l), loc), c(1)], loc), c(1)], loc);
        let times = prim(PrimFun::Mul, vec![prj(0, v(l), loc), prj(1, v(l), loc)], loc);
        let r = OpenExp::new(ExpKind::Cond(Box::new(odd), Box::new(times), Box::new(prj(0, v(l), loc))), loc);
        let sq = prim(PrimFun::Mul, vec![prj(1, v(l), loc), prj(1, v(l), loc)], loc);
        let half = prim(PrimFun::Shr, vec![prj(2, v(l), loc), c(1)], loc);
        let body = Fun { params: vec![state], body: OpenExp::new(ExpKind::Tuple(vec![r, sq, half]), loc) };
        let init = OpenExp::new(ExpKind::Tuple(vec![c(1), x, n]), loc);
        let w = OpenExp::new(
            ExpKind::While { cond: Box::new(cond), body: Box::new(body), init: Box::new(init) },
            loc,
        );
        Ok(LVal::Exp { e: prj(0, w, loc), elt: s })
    }

    /// `loop` in scalar code: a scalar `while` over the loop's state (and
    /// its counter).
    fn device_loop(
        &mut self,
        e: &'a Expr,
        pat: &'a Pat,
        init: Option<&'a Expr>,
        form: &'a LoopForm,
        body: &'a Expr,
    ) -> Res<LVal> {
        let loc = self.loc(e.span);
        let elt = elt_of(&pat.ty).ok_or_else(|| nested(e))?;
        let init_e = match init {
            Some(i) => {
                let v = self.device(i)?;
                self.exp_of(&v, loc)?
            }
            None => self.pattern_value(pat, loc)?,
        };
        let v = |l: usize| OpenExp::new(ExpKind::Var(l), loc);
        match form {
            LoopForm::While(c) => {
                let l = self.sdepth;
                let cond = self.loop_fun(pat, LVal::Exp { e: v(l), elt: elt.clone() }, c)?;
                let step = self.loop_fun(pat, LVal::Exp { e: v(l), elt: elt.clone() }, body)?;
                let w = ExpKind::While { cond: Box::new(cond), body: Box::new(step), init: Box::new(init_e) };
                Ok(LVal::Exp { e: OpenExp::new(w, loc), elt })
            }
            LoopForm::For(i, n) => {
                let nv = self.device(n)?;
                let nv = self.share(nv);
                let ne = self.exp_of(&nv, loc)?;
                let Type::Prim(it) = &n.ty else { return Err(nested(e)) };
                let ielt = EltTy::Scalar(prim_scalar(*it));
                self.counted_loop(
                    pat,
                    elt,
                    init_e,
                    ielt,
                    *it,
                    ne,
                    |_, ix| Ok(vec![(i.name.clone(), ix)]),
                    body,
                    loc,
                )
            }
            LoopForm::ForIn(p, xs) => {
                let arr = self.device(xs)?;
                let LVal::Array { level, elt: xelt, .. } = arr else { return Err(nested(e)) };
                let len = prj(0, OpenExp::new(ExpKind::Shape { array: level }, loc), loc);
                let ielt = EltTy::Scalar(ScalarTy::I64);
                let p = p.clone();
                self.counted_loop(
                    pat,
                    elt,
                    init_e,
                    ielt,
                    PrimType::I64,
                    len,
                    move |l: &mut Self, ix| {
                        let LVal::Exp { e: ie, .. } = ix else { unreachable!("the counter is a scalar") };
                        let index = OpenExp::new(ExpKind::Tuple(vec![ie]), loc);
                        let x = LVal::Exp {
                            e: OpenExp::new(ExpKind::Index { array: level, index: Box::new(index) }, loc),
                            elt: xelt.clone(),
                        };
                        let n = l.env.len();
                        l.bind_pat(&p, x);
                        Ok(l.env.drain(n..).collect())
                    },
                    body,
                    loc,
                )
            }
        }
    }

    /// A `for` loop: state `(counter, value)`, the counter from 0 below
    /// `n`; `bind` names what each iteration sees of the counter.
    #[allow(clippy::too_many_arguments)]
    fn counted_loop(
        &mut self,
        pat: &'a Pat,
        elt: EltTy,
        init: OpenExp,
        ielt: EltTy,
        it: PrimType,
        n: OpenExp,
        bind: impl FnOnce(&mut Self, LVal) -> Res<Vec<(String, LVal)>>,
        body: &'a Expr,
        loc: SrcLoc,
    ) -> Res<LVal> {
        let state = EltTy::Tuple(vec![ielt.clone(), elt.clone()]);
        let v = |l: usize| OpenExp::new(ExpKind::Var(l), loc);
        let l = self.sdepth;
        let cond =
            Fun { params: vec![state.clone()], body: prim(PrimFun::Lt, vec![prj(0, v(l), loc), n], loc) };
        // the body: the counter and the pattern bound, the next state
        self.sdepth += 1;
        let saved = std::mem::take(&mut self.sblocks);
        let envn = self.env.len();
        let r = (|| {
            let counter = LVal::Exp { e: prj(0, v(l), loc), elt: ielt.clone() };
            let names = bind(self, counter)?;
            self.env.extend(names);
            self.bind_pat(pat, LVal::Exp { e: prj(1, v(l), loc), elt: elt.clone() });
            self.device_block(body)
        })();
        self.env.truncate(envn);
        self.sblocks = saved;
        self.sdepth -= 1;
        let next = r?;
        let one = OpenExp::new(ExpKind::Const(int_const(1, it)), loc);
        let step = OpenExp::new(
            ExpKind::Tuple(vec![prim(PrimFun::Add, vec![prj(0, v(l), loc), one], loc), next]),
            loc,
        );
        let zero = OpenExp::new(ExpKind::Const(int_const(0, it)), loc);
        let init = OpenExp::new(ExpKind::Tuple(vec![zero, init]), loc);
        let w = ExpKind::While {
            cond: Box::new(cond),
            body: Box::new(Fun { params: vec![state], body: step }),
            init: Box::new(init),
        };
        Ok(LVal::Exp { e: prj(1, OpenExp::new(w, loc), loc), elt })
    }

    /// A function of the loop state for `while`'s condition or body.
    fn loop_fun(&mut self, pat: &'a Pat, state: LVal, body: &'a Expr) -> Res<Fun> {
        let elt = match &state {
            LVal::Exp { elt, .. } => elt.clone(),
            _ => EltTy::UNIT,
        };
        self.sdepth += 1;
        let saved = std::mem::take(&mut self.sblocks);
        let n = self.env.len();
        self.bind_pat(pat, state);
        let r = self.device_block(body);
        self.env.truncate(n);
        self.sblocks = saved;
        self.sdepth -= 1;
        Ok(Fun { params: vec![elt], body: r? })
    }

    /// The value of a pattern's variables as they are in scope (a `loop`
    /// without `= init`).
    fn pattern_value(&self, p: &Pat, loc: SrcLoc) -> Res<OpenExp> {
        match &p.kind {
            PatKind::Id(i) => {
                let v = self
                    .lookup(&i.name)
                    .ok_or_else(|| unsupported(i.span, format!("`{}` is not in scope", i.name)))?;
                self.exp_of(v, loc)
            }
            PatKind::Ascribe(q, _) => self.pattern_value(q, loc),
            PatKind::Tuple(ps) => Ok(OpenExp::new(
                ExpKind::Tuple(ps.iter().map(|q| self.pattern_value(q, loc)).collect::<Res<_>>()?),
                loc,
            )),
            _ => Err(unsupported(p.span, "a loop without an initial value needs a pattern of variables")),
        }
    }

    fn device_match(&mut self, e: &'a Expr, x: &'a Expr, cases: &'a [(Pat, Expr)]) -> Res<LVal> {
        let loc = self.loc(e.span);
        let elt = elt_of(&e.ty).ok_or_else(|| nested(e))?;
        let v = self.device(x)?;
        let v = self.share(v);
        let mut arms = Vec::new();
        for (p, body) in cases {
            let test = self.pattern_test(p, &v, loc)?;
            let n = self.env.len();
            self.bind_pat(p, v.clone());
            let r = self.device_block(body);
            self.env.truncate(n);
            arms.push((test, r?));
        }
        let mut result: Option<OpenExp> = None;
        for (test, body) in arms.into_iter().rev() {
            result = Some(match (test, result) {
                (Some(t), Some(rest)) => {
                    OpenExp::new(ExpKind::Cond(Box::new(t), Box::new(body), Box::new(rest)), loc)
                }
                (_, _) => body,
            });
        }
        let e = result.ok_or_else(|| unsupported(e.span, "a match without cases"))?;
        Ok(LVal::Exp { e, elt })
    }

    /// The condition under which a value matches a pattern (`None`:
    /// always).
    fn pattern_test(&self, p: &Pat, v: &LVal, loc: SrcLoc) -> Res<Option<OpenExp>> {
        Ok(match &p.kind {
            PatKind::Id(_) | PatKind::Wildcard => None,
            PatKind::Ascribe(q, _) => self.pattern_test(q, v, loc)?,
            PatKind::Lit(l) => {
                let c = OpenExp::new(ExpKind::Const(literal(l, &p.ty, p.span)?), loc);
                Some(prim(PrimFun::Eq, vec![self.exp_of(v, loc)?, c], loc))
            }
            PatKind::Tuple(ps) => {
                let mut all: Option<OpenExp> = None;
                for (i, q) in ps.iter().enumerate() {
                    if let Some(t) = self.pattern_test(q, &part(v, i, loc), loc)? {
                        all = Some(match all {
                            None => t,
                            Some(a) => prim(PrimFun::LAnd, vec![a, t], loc),
                        });
                    }
                }
                all
            }
            PatKind::Record(fs) => {
                let mut all: Option<OpenExp> = None;
                for (name, q) in fs {
                    let i = field_index(&p.ty, &name.name).unwrap_or(0);
                    if let Some(t) = self.pattern_test(q, &part(v, i, loc), loc)? {
                        all = Some(match all {
                            None => t,
                            Some(a) => prim(PrimFun::LAnd, vec![a, t], loc),
                        });
                    }
                }
                all
            }
        })
    }
}

/// Cheaper to repeat than to bind: a variable, a constant, a read of a
/// host scalar, or tuples and parts of those (the empty tuple: a closure
/// that captured nothing).
fn trivial(e: &OpenExp) -> bool {
    match &e.kind {
        ExpKind::Var(_) | ExpKind::Const(_) => true,
        ExpKind::Tuple(es) => es.iter().all(trivial),
        ExpKind::Prj(_, x) => trivial(x),
        // a host scalar: a read of its rank-0 array
        ExpKind::Index { index, .. } => matches!(&index.kind, ExpKind::Tuple(es) if es.is_empty()),
        _ => false,
    }
}

/// `a[i][j]` as `a` and `[i, j]`.
pub(super) fn index_chain(e: &Expr) -> (&Expr, Vec<&DimIndex>) {
    let mut dims = Vec::new();
    let mut base = e;
    while let ExprKind::Index(x, ix) = &base.kind {
        if !ix.iter().all(|d| matches!(d, DimIndex::Fix(_))) && !dims.is_empty() {
            break;
        }
        dims.splice(0..0, ix.iter());
        base = x;
        if !ix.iter().all(|d| matches!(d, DimIndex::Fix(_))) {
            break;
        }
    }
    (base, dims)
}

pub(super) fn nested(e: &Expr) -> Diagnostic {
    unsupported(
        e.span,
        "an array computed here, inside scalar code, is nested data parallelism of a form the text front \
         end does not lower yet (a function returning arrays inside the function of a `map` that returns \
         arrays, or an array returned from scalar code)",
    )
}

/// An index of any integer type, as `i64`.
pub(super) fn to_i64(e: OpenExp, t: &Type, loc: SrcLoc) -> OpenExp {
    match t {
        Type::Prim(PrimType::I64) => e,
        _ => prim(PrimFun::Cast(ScalarTy::I64), vec![e], loc),
    }
}

/// A floating-point constant of type `t` (`f16`, `f32` or `f64`), rounded
/// to nearest; `None` for another type.
pub(super) fn float_const(v: f64, t: PrimType) -> Option<ScalarVal> {
    match t {
        PrimType::F16 => Some(ScalarVal::F16(half::f16::from_f64(v).to_bits())),
        PrimType::F32 => Some(ScalarVal::F32(v as f32)),
        PrimType::F64 => Some(ScalarVal::F64(v)),
        _ => None,
    }
}

pub(super) fn int_const(v: i64, t: PrimType) -> ScalarVal {
    match t {
        PrimType::I8 => ScalarVal::I8(v as i8),
        PrimType::I16 => ScalarVal::I16(v as i16),
        PrimType::I32 => ScalarVal::I32(v as i32),
        PrimType::U8 => ScalarVal::U8(v as u8),
        PrimType::U16 => ScalarVal::U16(v as u16),
        PrimType::U32 => ScalarVal::U32(v as u32),
        PrimType::U64 => ScalarVal::U64(v as u64),
        PrimType::F16 => ScalarVal::F16(half::f16::from_f64(v as f64).to_bits()),
        PrimType::F32 => ScalarVal::F32(v as f32),
        PrimType::F64 => ScalarVal::F64(v as f64),
        PrimType::Bool => ScalarVal::Bool(v != 0),
        PrimType::I64 => ScalarVal::I64(v),
    }
}

/// A literal at the type the checker gave it.
pub(super) fn literal(l: &Literal, t: &Type, span: Span) -> Res<ScalarVal> {
    let Type::Prim(p) = t else { return Err(unsupported(span, "a literal of a non-primitive type")) };
    let out_of_range = || Diagnostic::new(DiagKind::Type, span, format!("the literal does not fit in {p}"));
    Ok(match (l, p) {
        (Literal::Bool(b), _) => ScalarVal::Bool(*b),
        (Literal::Int(v, _), p) if p.is_float() => float_const(*v as f64, *p).ok_or_else(out_of_range)?,
        (Literal::Float(v, _), p) if p.is_float() => float_const(*v, *p).ok_or_else(out_of_range)?,
        (Literal::Int(v, _), p) => {
            let v = *v;
            let fits = |lo: i128, hi: i128| (lo..=hi).contains(&v);
            match p {
                PrimType::I8 if fits(i8::MIN.into(), i8::MAX.into()) => ScalarVal::I8(v as i8),
                PrimType::I16 if fits(i16::MIN.into(), i16::MAX.into()) => ScalarVal::I16(v as i16),
                PrimType::I32 if fits(i32::MIN.into(), i32::MAX.into()) => ScalarVal::I32(v as i32),
                PrimType::I64 if fits(i64::MIN.into(), i64::MAX.into()) => ScalarVal::I64(v as i64),
                PrimType::U8 if fits(0, u8::MAX.into()) => ScalarVal::U8(v as u8),
                PrimType::U16 if fits(0, u16::MAX.into()) => ScalarVal::U16(v as u16),
                PrimType::U32 if fits(0, u32::MAX.into()) => ScalarVal::U32(v as u32),
                PrimType::U64 if fits(0, u64::MAX.into()) => ScalarVal::U64(v as u64),
                _ => return Err(out_of_range()),
            }
        }
        (Literal::Float(_, _), _) => return Err(out_of_range()),
    })
}

/// `a == b` of values of one element type, part by part.
fn structural_eq(a: OpenExp, b: OpenExp, t: &EltTy, loc: SrcLoc) -> OpenExp {
    match t {
        EltTy::Scalar(_) => prim(PrimFun::Eq, vec![a, b], loc),
        EltTy::Tuple(ts) => {
            let mut all = OpenExp::new(ExpKind::Const(ScalarVal::Bool(true)), loc);
            for (i, t) in ts.iter().enumerate().rev() {
                let eq = structural_eq(prj(i, a.clone(), loc), prj(i, b.clone(), loc), t, loc);
                all = if i + 1 == ts.len() { eq } else { prim(PrimFun::LAnd, vec![eq, all], loc) };
            }
            all
        }
    }
}

/// The parameters and body of a combinator's function argument, which
/// defunctionalisation leaves a lambda written in place.
pub(super) fn lambda_parts(lam: &Expr) -> Res<(&[Pat], &Expr)> {
    match &lam.kind {
        ExprKind::Lambda(ps, _, body) => Ok((ps, body)),
        _ => Err(unsupported(lam.span, "internal: a combinator's argument is not a lambda")),
    }
}

//! The host's part (Note [Host and device]): array operations, let-bound
//! in order, `if` and `loop` over arrays as `acond` and `awhile`,
//! indexing, slicing and array literals.

use super::device::{index_chain, literal, to_i64};
use super::*;
use accelerate_base::array::{ArrayData, Val};
use accelerate_ir::term::{AFun, Fun, PrimFun};
use std::sync::Arc;

impl<'a> Lower<'a> {
    /// Lowers an expression on the host.
    pub(super) fn host(&mut self, e: &'a Expr) -> Res<LVal> {
        mono_grow(|| self.host_inner(e))
    }

    fn host_inner(&mut self, e: &'a Expr) -> Res<LVal> {
        if let Some(v) = self.overrides.get(&(e as *const Expr)) {
            return Ok(v.clone());
        }
        if !self.needs_host(e) && elt_of(&e.ty).is_some() {
            return self.host_scalar(e);
        }
        if let Some(r) = self.structural(e, true) {
            return r;
        }
        match &e.kind {
            ExprKind::Let(p, x, body) => {
                let v = self.host(x)?;
                let n = self.env.len();
                self.bind_pat(p, v);
                let r = self.host(body);
                self.env.truncate(n);
                r
            }
            ExprKind::If(c, t, f) => self.host_if(e, c, t, f),
            ExprKind::Loop { pat, init, form, body } => self.host_loop(e, pat, init.as_deref(), form, body),
            ExprKind::Apply(..) => {
                let (head, args) = spine(e);
                match &head.kind {
                    ExprKind::Var { name, qual: None, .. } if self.decls.contains_key(name.name.as_str()) => {
                        let d = self.decls[name.name.as_str()];
                        let vals = args.iter().map(|a| self.host(a)).collect::<Res<Vec<_>>>()?;
                        self.inline(d, vals, true)
                    }
                    ExprKind::Var { name, qual, .. } => {
                        let qual = qual.as_ref().map(|q| q.name.as_str());
                        if qual.map_or(soac::is_host(&name.name), |_| soac::is_host_qualified(&name.name)) {
                            self.soac(qual, &name.name, &args, e)
                        } else {
                            self.host_via_device(e, &args)
                        }
                    }
                    _ => Err(unsupported(e.span, "a call of a value that is not a function name")),
                }
            }
            ExprKind::Index(..) => self.host_index(e),
            ExprKind::ArrayLit(es) => self.array_literal(e, es),
            ExprKind::Update(a, ix, v) => self.host_update(e, a, ix, v),
            ExprKind::BinOp(_, a, b) => self.host_via_device(e, &[a, b]),
            ExprKind::Neg(x) | ExprKind::Not(x) => self.host_via_device(e, &[x]),
            ExprKind::Match(..) => {
                Err(unsupported(e.span, "a `match` over arrays or holding array operations"))
            }
            ExprKind::Lit(_) | ExprKind::Var { .. } => self.host_scalar(e),
            ExprKind::Tuple(_) | ExprKind::Record(_) | ExprKind::Project(..) | ExprKind::Ascribe(..) => {
                unreachable!("lowered by `structural`")
            }
            ExprKind::Lambda(..)
            | ExprKind::LetFun { .. }
            | ExprKind::OpSection(_)
            | ExprKind::LeftSection(..)
            | ExprKind::RightSection(..)
            | ExprKind::ProjSection(_) => {
                Err(unsupported(e.span, "a function value where a value is needed"))
            }
            // Note [Record updates]: gone with defunctionalisation
            ExprKind::RecordUpdate(..) => Err(unsupported(e.span, "a record update not defunctionalised")),
        }
    }

    /// A scalar computation of the host, lowered whole as scalar code,
    /// held in a rank-0 array unless it is a constant or a read.
    pub(super) fn host_scalar(&mut self, e: &'a Expr) -> Res<LVal> {
        let loc = self.loc(e.span);
        let elt = elt_of(&e.ty).ok_or_else(|| super::device::nested(e))?;
        let saved_depth = std::mem::replace(&mut self.sdepth, self.sbase);
        let saved_blocks = std::mem::take(&mut self.sblocks);
        // the root is scalar code whatever its operands: those the host
        // computes are found in `overrides`
        let r = self.device_block_at(e, false);
        self.sdepth = saved_depth;
        self.sblocks = saved_blocks;
        let x = r?;
        if is_cheap(&x) || elt == EltTy::UNIT {
            return Ok(LVal::Exp { e: x, elt });
        }
        let level = self.bind(OpenAcc::new(AccKind::Unit(x), loc));
        Ok(self.read_unit(level, elt, loc))
    }

    /// A scalar operation some of whose operands the host computes: those
    /// are lowered first, then the operation as scalar code reading them.
    fn host_via_device(&mut self, e: &'a Expr, children: &[&'a Expr]) -> Res<LVal> {
        let mut keys = Vec::new();
        for c in children {
            if self.needs_host(c) {
                let v = self.host(c)?;
                keys.push(*c as *const Expr);
                self.overrides.insert(*c as *const Expr, v);
            }
        }
        let r = self.host_scalar(e);
        for k in keys {
            self.overrides.remove(&k);
        }
        r
    }

    fn host_if(&mut self, e: &'a Expr, c: &'a Expr, t: &'a Expr, f: &'a Expr) -> Res<LVal> {
        let loc = self.loc(e.span);
        if elt_of(&e.ty).is_some() && !self.needs_host(t) && !self.needs_host(f) {
            return self.host_via_device(e, &[c]);
        }
        let cv = self.host(c)?;
        let cond = self.exp_of(&cv, loc)?;
        let then_ = self.host_branch(t, &e.ty)?;
        let else_ = self.host_branch(f, &e.ty)?;
        let term = OpenAcc::new(AccKind::Acond { cond, then_: Box::new(then_), else_: Box::new(else_) }, loc);
        Ok(self.bind_typed(term, &e.ty))
    }

    /// A branch as an array term of its own block.
    fn host_branch(&mut self, e: &'a Expr, t: &Type) -> Res<OpenAcc> {
        let loc = self.loc(e.span);
        self.open_block();
        let n = self.env.len();
        let r = self.host(e).and_then(|v| self.arrays_of(&v, t, loc));
        self.env.truncate(n);
        let term = match r {
            Ok(term) => term,
            Err(err) => {
                self.close_block(OpenAcc::new(AccKind::Tuple(vec![]), loc));
                return Err(err);
            }
        };
        Ok(self.close_block(term))
    }

    /// `loop` whose state holds arrays or whose body runs array
    /// operations: an `awhile` over the state (and the counter of a `for`).
    fn host_loop(
        &mut self,
        e: &'a Expr,
        pat: &'a Pat,
        init: Option<&'a Expr>,
        form: &'a LoopForm,
        body: &'a Expr,
    ) -> Res<LVal> {
        let loc = self.loc(e.span);
        // a loop over scalars whose body runs no array operation is a
        // scalar loop, its initial value and bound computed first
        if elt_of(&e.ty).is_some() && !self.needs_host(body) {
            let mut kids: Vec<&'a Expr> = init.into_iter().collect();
            let scalar_loop = match form {
                LoopForm::For(_, n) => {
                    kids.push(n);
                    true
                }
                LoopForm::ForIn(_, xs) => {
                    kids.push(xs);
                    true
                }
                LoopForm::While(c) => !self.needs_host(c),
            };
            if scalar_loop {
                return self.host_via_device(e, &kids);
            }
        }
        self.host_awhile(e, pat, init, form, body, loc)
    }

    fn host_awhile(
        &mut self,
        e: &'a Expr,
        pat: &'a Pat,
        init: Option<&'a Expr>,
        form: &'a LoopForm,
        body: &'a Expr,
        loc: SrcLoc,
    ) -> Res<LVal> {
        let init_v = match init {
            Some(i) => self.host(i)?,
            None => {
                let vals: Vec<LVal> = pat
                    .binders()
                    .iter()
                    .map(|i| self.lookup(&i.name).cloned().unwrap_or(LVal::Tuple(vec![])))
                    .collect();
                if vals.len() == 1 && matches!(pat.kind, PatKind::Id(_)) {
                    vals.into_iter().next().expect("one")
                } else {
                    LVal::Tuple(vals)
                }
            }
        };
        // the counter of a `for`, its bound, and the array of a `for in`
        type Counted<'p> = (Option<(Type, PrimType)>, Option<LVal>, Option<(&'p Pat, LVal)>);
        let (counter, bound, over): Counted<'a> = match form {
            LoopForm::For(_, n) => {
                let Type::Prim(it) = n.ty else {
                    return Err(unsupported(n.span, "a loop bound that is not an integer"));
                };
                let nv = self.host(n)?;
                (Some((Type::Prim(it), it)), Some(nv), None)
            }
            LoopForm::ForIn(p, xs) => {
                let xv = self.host(xs)?;
                let LVal::Array { level, .. } = &xv else { return Err(unsupported(xs.span, "not an array")) };
                let shape = OpenExp::new(ExpKind::Shape { array: *level }, loc);
                let n = LVal::Exp { e: prj(0, shape, loc), elt: EltTy::Scalar(ScalarTy::I64) };
                (Some((Type::Prim(PrimType::I64), PrimType::I64)), Some(n), Some((p, xv)))
            }
            LoopForm::While(_) => (None, None, None),
        };
        let state_ty = match &counter {
            Some((ct, _)) => Type::Tuple(vec![ct.clone(), pat.ty.clone()]),
            None => pat.ty.clone(),
        };
        let state_arrays = arrays_ty(&state_ty)
            .ok_or_else(|| unsupported(e.span, "a loop whose state cannot be held in arrays"))?;
        let init_state = match &counter {
            Some((_, it)) => {
                let zero = OpenExp::new(ExpKind::Const(super::device::int_const(0, *it)), loc);
                LVal::Tuple(vec![LVal::Exp { e: zero, elt: EltTy::Scalar(prim_scalar(*it)) }, init_v])
            }
            None => init_v,
        };
        let init_term = self.arrays_of(&init_state, &state_ty, loc)?;
        // the predicate and the body, each a function of the state
        let pred = self.loop_afun(&state_ty, &state_arrays, loc, |l, state| {
            let cond = match (form, &counter) {
                (LoopForm::While(c), _) => {
                    l.bind_pat(pat, state);
                    let v = l.host(c)?;
                    l.exp_of(&v, loc)?
                }
                (_, _) => {
                    let i = l.exp_of(&part(&state, 0, loc), loc)?;
                    let n = l.exp_of(bound.as_ref().expect("a for loop has a bound"), loc)?;
                    prim(PrimFun::Lt, vec![i, n], loc)
                }
            };
            Ok(OpenAcc::new(AccKind::Unit(cond), loc))
        })?;
        let step = self.loop_afun(&state_ty, &state_arrays, loc, |l, state| {
            let next = match (&counter, form) {
                (Some((_, it)), _) => {
                    let i = part(&state, 0, loc);
                    let ie = l.exp_of(&i, loc)?;
                    if let LoopForm::For(iname, _) = form {
                        l.env.push((iname.name.clone(), i.clone()));
                    }
                    if let Some((p, LVal::Array { level, elt, .. })) = &over {
                        let index = OpenExp::new(ExpKind::Tuple(vec![ie.clone()]), loc);
                        let x = LVal::Exp {
                            e: OpenExp::new(ExpKind::Index { array: *level, index: Box::new(index) }, loc),
                            elt: elt.clone(),
                        };
                        l.bind_pat(p, x);
                    }
                    l.bind_pat(pat, part(&state, 1, loc));
                    let v = l.host(body)?;
                    let one = OpenExp::new(ExpKind::Const(super::device::int_const(1, *it)), loc);
                    let ni = LVal::Exp {
                        e: prim(PrimFun::Add, vec![ie, one], loc),
                        elt: EltTy::Scalar(prim_scalar(*it)),
                    };
                    LVal::Tuple(vec![ni, v])
                }
                (None, _) => {
                    l.bind_pat(pat, state);
                    l.host(body)?
                }
            };
            l.arrays_of(&next, &state_ty, loc)
        })?;
        let term = OpenAcc::new(AccKind::Awhile { pred, body: step, init: Box::new(init_term) }, loc);
        let v = self.bind_typed(term, &state_ty);
        Ok(if counter.is_some() { part(&v, 1, loc) } else { v })
    }

    /// An array function of the loop state: the state bound as its
    /// parameter, unpacked in its own block.
    fn loop_afun(
        &mut self,
        state_ty: &Type,
        state_arrays: &ArraysTy,
        loc: SrcLoc,
        f: impl FnOnce(&mut Self, LVal) -> Res<OpenAcc>,
    ) -> Res<AFun> {
        let param = self.adepth;
        self.adepth += 1;
        self.open_block();
        let n = self.env.len();
        let state = self.unpack(param, state_ty, loc);
        let r = f(self, state);
        self.env.truncate(n);
        let body = match r {
            Ok(t) => self.close_block(t),
            Err(err) => {
                self.close_block(OpenAcc::new(AccKind::Tuple(vec![]), loc));
                self.adepth -= 1;
                return Err(err);
            }
        };
        self.adepth -= 1;
        Ok(AFun { param: state_arrays.clone(), body: Box::new(body) })
    }

    /// Indexing and slicing on the host: an element read, or a
    /// `backpermute` for slices and rows.
    fn host_index(&mut self, e: &'a Expr) -> Res<LVal> {
        let loc = self.loc(e.span);
        let (base, dims) = index_chain(e);
        let bv = self.host(base)?;
        let LVal::Array { level, rank, elt } = bv else {
            return Err(unsupported(e.span, "indexing a value that is not an array"));
        };
        if dims.len() > rank {
            return Err(Diagnostic::new(
                DiagKind::Type,
                e.span,
                format!("{} indices into an array of rank {rank}", dims.len()),
            ));
        }
        let extent = |d: usize| prj(d, OpenExp::new(ExpKind::Shape { array: level }, loc), loc);
        // per source dimension: a fixed index, or a slice (start, stride)
        // with its length
        enum Dim {
            Fix(OpenExp),
            Slice { start: OpenExp, stride: OpenExp, len: OpenExp },
        }
        let mut ds = Vec::new();
        for (d, ix) in dims.iter().enumerate() {
            match ix {
                DimIndex::Fix(i) => {
                    let v = self.host(i)?;
                    let x = to_i64(self.exp_of(&v, loc)?, &i.ty, loc);
                    ds.push(Dim::Fix(x));
                }
                DimIndex::Slice { start, end, stride } => {
                    let get = |l: &mut Self, x: &'a Option<Expr>| -> Res<Option<OpenExp>> {
                        match x {
                            None => Ok(None),
                            Some(x) => {
                                let v = l.host(x)?;
                                Ok(Some(to_i64(l.exp_of(&v, loc)?, &x.ty, loc)))
                            }
                        }
                    };
                    let (b, en, s) = (get(self, start)?, get(self, end)?, get(self, stride)?);
                    let n = extent(d);
                    let slice = slice_bounds(b, en, s, n, loc);
                    // the three are host scalars: bound once
                    let bindv = |l: &mut Self, x: OpenExp| {
                        if is_cheap(&x) {
                            x
                        } else {
                            let lv = l.bind(OpenAcc::new(AccKind::Unit(x), loc));
                            match l.read_unit(lv, EltTy::Scalar(ScalarTy::I64), loc) {
                                LVal::Exp { e, .. } => e,
                                _ => unreachable!("a read is an expression"),
                            }
                        }
                    };
                    let start = bindv(self, slice.0);
                    let stride = bindv(self, slice.1);
                    let len = bindv(self, slice.2);
                    ds.push(Dim::Slice { start, stride, len });
                }
            }
        }
        if ds.len() == rank && ds.iter().all(|d| matches!(d, Dim::Fix(_))) {
            let idx: Vec<OpenExp> = ds
                .into_iter()
                .map(|d| match d {
                    Dim::Fix(x) => x,
                    Dim::Slice { .. } => unreachable!("all fixed"),
                })
                .collect();
            let index = OpenExp::new(ExpKind::Tuple(idx), loc);
            return Ok(LVal::Exp {
                e: OpenExp::new(ExpKind::Index { array: level, index: Box::new(index) }, loc),
                elt,
            });
        }
        // the result's extents: each slice's length, then the dimensions
        // not indexed
        let mut shape = Vec::new();
        for d in &ds {
            if let Dim::Slice { len, .. } = d {
                shape.push(len.clone());
            }
        }
        for d in ds.len()..rank {
            shape.push(extent(d));
        }
        let out_rank = shape.len();
        let b = self.sbase;
        let ix = |k: usize| prj(k, OpenExp::new(ExpKind::Var(b), loc), loc);
        let mut src = Vec::new();
        let mut k = 0;
        for d in ds {
            match d {
                Dim::Fix(x) => src.push(x),
                Dim::Slice { start, stride, .. } => {
                    src.push(prim(
                        PrimFun::Add,
                        vec![start, prim(PrimFun::Mul, vec![ix(k), stride], loc)],
                        loc,
                    ));
                    k += 1;
                }
            }
        }
        while k < out_rank {
            src.push(ix(k));
            k += 1;
        }
        let f = Fun { params: vec![EltTy::shape(out_rank)], body: OpenExp::new(ExpKind::Tuple(src), loc) };
        let shape = OpenExp::new(ExpKind::Tuple(shape), loc);
        let array = Box::new(OpenAcc::new(AccKind::Var(level), loc));
        Ok(self.bind_typed(OpenAcc::new(AccKind::Backpermute { shape, f, array }, loc), &e.ty))
    }

    /// `[a, b, c]`: a constant array as data, any other as a `generate`
    /// choosing among its elements.
    fn array_literal(&mut self, e: &'a Expr, es: &'a [Expr]) -> Res<LVal> {
        let loc = self.loc(e.span);
        let Type::Array { elem, shape } = &e.ty else {
            return Err(unsupported(e.span, "an array literal of no array type"));
        };
        let elt =
            elt_of(elem).ok_or_else(|| unsupported(e.span, "an array of values that are not primitive"))?;
        // a literal of literals (at any depth) is data
        let mut leaves = Vec::new();
        let mut extents = Vec::new();
        if constant_leaves(e, &mut leaves, &mut extents, 0) {
            if let Some(data) = constant_array(&leaves, &elt, &extents) {
                return Ok(self.bind_typed(OpenAcc::new(AccKind::Use(Arc::new(data)), loc), &e.ty));
            }
        }
        let vals = es.iter().map(|x| self.host(x)).collect::<Res<Vec<_>>>()?;
        let rank = shape.len();
        let n = es.len() as i64;
        let b = self.sbase;
        let i = prj(0, OpenExp::new(ExpKind::Var(b), loc), loc);
        let inner: Vec<OpenExp> =
            (1..rank).map(|k| prj(k, OpenExp::new(ExpKind::Var(b), loc), loc)).collect();
        let pick = |v: &LVal| -> Res<OpenExp> {
            match v {
                LVal::Array { level, .. } => {
                    let index = OpenExp::new(ExpKind::Tuple(inner.clone()), loc);
                    Ok(OpenExp::new(ExpKind::Index { array: *level, index: Box::new(index) }, loc))
                }
                v => self.exp_of(v, loc),
            }
        };
        let mut body: Option<OpenExp> = None;
        for (k, v) in vals.iter().enumerate().rev() {
            let x = pick(v)?;
            body = Some(match body {
                None => x,
                Some(rest) => {
                    let test = prim(PrimFun::Eq, vec![i.clone(), c_i64(k as i64, loc)], loc);
                    OpenExp::new(ExpKind::Cond(Box::new(test), Box::new(x), Box::new(rest)), loc)
                }
            });
        }
        let mut dims = vec![c_i64(n, loc)];
        match vals.first() {
            Some(LVal::Array { level, rank: r, .. }) => {
                for d in 0..*r {
                    dims.push(prj(d, OpenExp::new(ExpKind::Shape { array: *level }, loc), loc));
                }
            }
            _ => dims.extend((1..rank).map(|_| c_i64(0, loc))),
        }
        let body = match body {
            Some(b) => b,
            // `[]`: no element is ever asked for
            None => zero_exp(&elt, loc),
        };
        let f = Fun { params: vec![EltTy::shape(rank)], body };
        let shape = OpenExp::new(ExpKind::Tuple(dims), loc);
        Ok(self.bind_typed(OpenAcc::new(AccKind::Generate { shape, f }, loc), &e.ty))
    }

    /// `a with [i, j] = v`: a copy of `a` with one element replaced; the
    /// index is checked once, on the host.
    fn host_update(&mut self, e: &'a Expr, a: &'a Expr, ix: &'a [DimIndex], v: &'a Expr) -> Res<LVal> {
        let loc = self.loc(e.span);
        let av = self.host(a)?;
        let LVal::Array { level, rank, .. } = av else {
            return Err(unsupported(a.span, "an update of a non-array"));
        };
        if ix.len() != rank || !ix.iter().all(|d| matches!(d, DimIndex::Fix(_))) {
            return Err(unsupported(
                e.span,
                "an update of a slice or a row: only single elements are supported yet",
            ));
        }
        let mut idx = Vec::new();
        for d in ix {
            let DimIndex::Fix(i) = d else { unreachable!("checked above") };
            let iv = self.host(i)?;
            idx.push(to_i64(self.exp_of(&iv, loc)?, &i.ty, loc));
        }
        let shape = OpenExp::new(ExpKind::Shape { array: level }, loc);
        let checked =
            prim(PrimFun::BoundsCheck, vec![shape.clone(), OpenExp::new(ExpKind::Tuple(idx), loc)], loc);
        let il = self.bind(OpenAcc::new(AccKind::Unit(checked), loc));
        let target = match self.read_unit(il, EltTy::shape(rank), loc) {
            LVal::Exp { e, .. } => e,
            _ => unreachable!("a read"),
        };
        let vv = self.host(v)?;
        let value = self.exp_of(&vv, loc)?;
        let here = OpenExp::new(ExpKind::Var(self.sbase), loc);
        let same = (0..rank).fold(None, |acc: Option<OpenExp>, k| {
            let eq = prim(PrimFun::Eq, vec![prj(k, here.clone(), loc), prj(k, target.clone(), loc)], loc);
            Some(match acc {
                None => eq,
                Some(a) => prim(PrimFun::LAnd, vec![a, eq], loc),
            })
        });
        let old = OpenExp::new(ExpKind::Index { array: level, index: Box::new(here.clone()) }, loc);
        let body = match same {
            Some(s) => OpenExp::new(ExpKind::Cond(Box::new(s), Box::new(value), Box::new(old)), loc),
            None => value,
        };
        let f = Fun { params: vec![EltTy::shape(rank)], body };
        Ok(self.bind_typed(OpenAcc::new(AccKind::Generate { shape, f }, loc), &e.ty))
    }
}

/// A constant, a variable, a read of a rank-0 array, or a tuple of those:
/// as cheap to repeat as to read from a variable.
pub(super) fn is_cheap(e: &OpenExp) -> bool {
    match &e.kind {
        ExpKind::Const(_) | ExpKind::Var(_) => true,
        // a closure's environment: the values it captured
        ExpKind::Tuple(es) => es.iter().all(is_cheap),
        ExpKind::Index { index, .. } => matches!(&index.kind, ExpKind::Tuple(es) if es.is_empty()),
        ExpKind::Prj(_, x) => is_cheap(x),
        _ => false,
    }
}

/// A slice's start, stride and length from what was written (Futhark's
/// rules: a positive stride runs from 0 to the extent by default, a
/// negative one from the last element down past the first).
fn slice_bounds(
    start: Option<OpenExp>,
    end: Option<OpenExp>,
    stride: Option<OpenExp>,
    n: OpenExp,
    loc: SrcLoc,
) -> (OpenExp, OpenExp, OpenExp) {
    let c = |v: i64| c_i64(v, loc);
    let p = |f: PrimFun, a: OpenExp, b: OpenExp| prim(f, vec![a, b], loc);
    let cond = |t: OpenExp, a: OpenExp, b: OpenExp| {
        OpenExp::new(ExpKind::Cond(Box::new(t), Box::new(a), Box::new(b)), loc)
    };
    match stride {
        None => {
            let b = start.unwrap_or_else(|| c(0));
            let e = end.unwrap_or(n);
            let len = p(PrimFun::Max, c(0), p(PrimFun::Sub, e, b.clone()));
            (b, c(1), len)
        }
        Some(s) => {
            let pos = p(PrimFun::Gt, s.clone(), c(0));
            let b = start.unwrap_or_else(|| cond(pos.clone(), c(0), p(PrimFun::Sub, n.clone(), c(1))));
            let e = end.unwrap_or_else(|| cond(pos.clone(), n.clone(), c(-1)));
            // ceil((e - b) / s) for either sign, at least 0; a zero stride
            // is a division by zero, reported as such
            let up = p(
                PrimFun::Quot,
                p(PrimFun::Add, p(PrimFun::Sub, e.clone(), b.clone()), p(PrimFun::Sub, s.clone(), c(1))),
                s.clone(),
            );
            let down = p(
                PrimFun::Quot,
                p(PrimFun::Add, p(PrimFun::Sub, e, b.clone()), p(PrimFun::Add, s.clone(), c(1))),
                s.clone(),
            );
            let len = p(PrimFun::Max, c(0), cond(pos, up, down));
            (b, s, len)
        }
    }
}

fn constant_leaves(
    e: &Expr,
    leaves: &mut Vec<(Literal, Type, Span)>,
    extents: &mut Vec<usize>,
    depth: usize,
) -> bool {
    match &e.kind {
        ExprKind::ArrayLit(es) => {
            if extents.len() == depth {
                extents.push(es.len());
            } else if extents.get(depth) != Some(&es.len()) {
                return false;
            }
            es.iter().all(|x| constant_leaves(x, leaves, extents, depth + 1))
        }
        ExprKind::Lit(l) => {
            leaves.push((l.clone(), e.ty.clone(), e.span));
            true
        }
        ExprKind::Neg(x) => match &x.kind {
            ExprKind::Lit(Literal::Int(v, s)) => {
                leaves.push((Literal::Int(-v, *s), e.ty.clone(), e.span));
                true
            }
            ExprKind::Lit(Literal::Float(v, s)) => {
                leaves.push((Literal::Float(-v, *s), e.ty.clone(), e.span));
                true
            }
            _ => false,
        },
        _ => false,
    }
}

fn constant_array(leaves: &[(Literal, Type, Span)], elt: &EltTy, extents: &[usize]) -> Option<ArrayData> {
    let mut b = ArrayData::builder(elt, leaves.len())?;
    for (l, t, span) in leaves {
        b.push(&Val::Scalar(literal(l, t, *span).ok()?));
    }
    b.finish(extents.to_vec())
}

/// The zero of an element type (`false` for `bool`).
pub(super) fn zero_exp(elt: &EltTy, loc: SrcLoc) -> OpenExp {
    match elt {
        EltTy::Scalar(s) => OpenExp::new(ExpKind::Const(ScalarVal::zero(*s)), loc),
        EltTy::Tuple(ts) => OpenExp::new(ExpKind::Tuple(ts.iter().map(|t| zero_exp(t, loc)).collect()), loc),
    }
}

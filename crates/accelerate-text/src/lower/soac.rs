//! The prelude's array functions on the host: each becomes the IR's array
//! operations, as Accelerate's library builds them from its primitives
//! (`filter` from a scan and a permute, `scatter` and `hist` as permutes,
//! the index-space functions as backpermutes).

use super::device::{int_const, nested, to_i64};
use super::host::zero_exp;
use super::*;
use accelerate_ir::term::{Direction, Fun, PrimFun};

/// Prelude functions that build or consume arrays: they run on the host.
pub(super) fn is_host(name: &str) -> bool {
    matches!(
        name,
        "map"
            | "map1"
            | "map2"
            | "map3"
            | "map4"
            | "map5"
            | "reduce"
            | "reduce_comm"
            | "scan"
            | "filter"
            | "partition"
            | "scatter"
            | "hist"
            | "reduce_by_index"
            | "iota"
            | "replicate"
            | "zip"
            | "zip2"
            | "zip3"
            | "zip4"
            | "zip5"
            | "unzip"
            | "unzip2"
            | "unzip3"
            | "unzip4"
            | "unzip5"
            | "reverse"
            | "rotate"
            | "transpose"
            | "flatten"
            | "unflatten"
            | "concat"
            | "take"
            | "drop"
            | "split"
            | "tail"
            | "init"
            | "and"
            | "or"
            | "all"
            | "any"
            | "foldl"
            | "foldr"
            | "tabulate"
            | "tabulate_2d"
            | "tabulate_3d"
    )
}

/// Numeric-namespace functions over arrays (`f32.sum`).
pub(super) fn is_host_qualified(name: &str) -> bool {
    matches!(name, "sum" | "product" | "maximum" | "minimum")
}

impl<'a> Lower<'a> {
    /// An array (or reduction) function of the prelude, on the host.
    pub(super) fn soac(
        &mut self,
        qual: Option<&str>,
        name: &str,
        args: &[&'a Expr],
        e: &'a Expr,
    ) -> Res<LVal> {
        let b = self.sbase;
        let loc = self.loc(e.span);
        if let Some(ns) = qual {
            return self.namespace_reduction(ns, name, args, e);
        }
        let bad = || unsupported(e.span, format!("`{name}` with {} arguments", args.len()));
        match (name, args) {
            ("map" | "map1" | "map2" | "map3" | "map4" | "map5", [f, xss @ ..]) if !xss.is_empty() => {
                self.map(name, f, xss, e)
            }
            ("reduce" | "reduce_comm", [f, ne, xs]) => {
                let (level, elt) = self.vector(xs)?;
                let f = self.lambda(f, &[elt.clone(), elt])?;
                let nev = self.host(ne)?;
                let seed = self.exp_of(&nev, loc)?;
                let term = AccKind::Fold { f, seed: Some(seed), array: Box::new(var(level, loc)) };
                Ok(self.bind_typed(OpenAcc::new(term, loc), &e.ty))
            }
            ("scan", [f, ne, xs]) => {
                // Futhark's scan is inclusive, and of an empty array empty:
                // `scanl1` where there is an element
                let (level, elt) = self.vector(xs)?;
                let f = self.lambda(f, &[elt.clone(), elt.clone()])?;
                let nev = self.host(ne)?;
                let ne = self.exp_of(&nev, loc)?;
                let n = len(level, loc);
                let empty = generate1(c_i64(0, loc), ne, loc);
                let scan = OpenAcc::new(
                    AccKind::Scan { dir: Direction::Left, f, seed: None, array: Box::new(var(level, loc)) },
                    loc,
                );
                let cond = prim(PrimFun::Eq, vec![n, c_i64(0, loc)], loc);
                let term = AccKind::Acond { cond, then_: Box::new(empty), else_: Box::new(scan) };
                Ok(self.bind_typed(OpenAcc::new(term, loc), &e.ty))
            }
            ("filter", [p, xs]) => self.filter(p, xs, false, &e.ty, loc),
            ("partition", [p, xs]) => {
                let Type::Tuple(ts) = &e.ty else { return Err(bad()) };
                let yes = self.filter(p, xs, false, &ts[0], loc)?;
                let no = self.filter(p, xs, true, &ts[1], loc)?;
                Ok(LVal::Tuple(vec![yes, no]))
            }
            ("scatter", [dest, is, vs]) => {
                let (dl, _) = self.vector(dest)?;
                let elt = self.vector(vs)?.1;
                let keep_new = Fun { params: vec![elt.clone(), elt], body: svar(b, loc) };
                self.permute("scatter", dl, keep_new, is, vs, &e.ty, loc)
            }
            ("reduce_by_index", [dest, f, _ne, is, vs]) => {
                let (dl, elt) = self.vector(dest)?;
                let f = self.lambda(f, &[elt.clone(), elt])?;
                self.permute("reduce_by_index", dl, f, is, vs, &e.ty, loc)
            }
            ("hist", [f, ne, k, is, vs]) => {
                let elt = self.vector(vs)?.1;
                let f = self.lambda(f, &[elt.clone(), elt.clone()])?;
                let nev = self.host(ne)?;
                let ne = self.exp_of(&nev, loc)?;
                let kv = self.host(k)?;
                let k = to_i64(self.exp_of(&kv, loc)?, &k.ty, loc);
                let defaults = generate1(k, ne, loc);
                let dl = self.bind(defaults);
                self.permute("hist", dl, f, is, vs, &e.ty, loc)
            }
            ("iota", [n]) => {
                let nv = self.host(n)?;
                let n = to_i64(self.exp_of(&nv, loc)?, &n.ty, loc);
                let f = Fun { params: vec![EltTy::shape(1)], body: prj(0, svar(b, loc), loc) };
                let term = AccKind::Generate { shape: tuple(vec![n], loc), f };
                Ok(self.bind_typed(OpenAcc::new(term, loc), &e.ty))
            }
            ("replicate", [n, x]) => {
                let nv = self.host(n)?;
                let n = to_i64(self.exp_of(&nv, loc)?, &n.ty, loc);
                let xv = self.host(x)?;
                let (shape, body, rank) = match &xv {
                    LVal::Array { level, rank, .. } => {
                        let mut dims = vec![n];
                        dims.extend((0..*rank).map(|d| extent(*level, d, loc)));
                        let inner = (1..=*rank).map(|k| prj(k, svar(b, loc), loc)).collect();
                        (dims, read(*level, inner, loc), rank + 1)
                    }
                    v => (vec![n], self.exp_of(v, loc)?, 1),
                };
                let f = Fun { params: vec![EltTy::shape(rank)], body };
                let term = AccKind::Generate { shape: tuple(shape, loc), f };
                Ok(self.bind_typed(OpenAcc::new(term, loc), &e.ty))
            }
            ("zip" | "zip2" | "zip3" | "zip4" | "zip5", xss) if xss.len() >= 2 => {
                let mut arrays = Vec::new();
                for xs in xss {
                    arrays.push(self.vector(xs)?);
                }
                let arrays = self.same_size(op_name(name), arrays, loc);
                let zipped = self.zip_all(&arrays, loc);
                Ok(self.bind_typed(zipped, &e.ty))
            }
            ("unzip" | "unzip2" | "unzip3" | "unzip4" | "unzip5", [xs]) => {
                // moves of struct-of-arrays storage (Note [Unzipped once])
                let (level, _) = self.vector(xs)?;
                let Type::Tuple(tys) = &e.ty else { return Err(nested(e)) };
                let parts = self.components(level, tys.len(), loc);
                Ok(LVal::Tuple(parts.into_iter().zip(tys).map(|(l, t)| self.unpack(l, t, loc)).collect()))
            }
            ("reverse", [xs]) => self.backpermute(xs, e, |l, b, n| {
                let mut src = vec![prim(
                    PrimFun::Sub,
                    vec![prim(PrimFun::Sub, vec![n[0].clone(), c_i64(1, l)], l), ix(b, 0, l)],
                    l,
                )];
                src.extend((1..n.len()).map(|k| ix(b, k, l)));
                (n.to_vec(), src)
            }),
            ("rotate", [r, xs]) => {
                let rv = self.host(r)?;
                let r = to_i64(self.exp_of(&rv, loc)?, &r.ty, loc);
                self.backpermute(xs, e, move |l, b, n| {
                    // (i + r) mod n, with n = 0 never divided by
                    let guarded = prim(PrimFun::Max, vec![n[0].clone(), c_i64(1, l)], l);
                    let i = prim(PrimFun::Mod, vec![prim(PrimFun::Add, vec![ix(b, 0, l), r], l), guarded], l);
                    let mut src = vec![i];
                    src.extend((1..n.len()).map(|k| ix(b, k, l)));
                    (n.to_vec(), src)
                })
            }
            ("transpose", [xs]) if xs.ty.rank() >= 2 => self.backpermute(xs, e, |l, b, n| {
                let mut shape = vec![n[1].clone(), n[0].clone()];
                shape.extend(n[2..].iter().cloned());
                let mut src = vec![ix(b, 1, l), ix(b, 0, l)];
                src.extend((2..n.len()).map(|k| ix(b, k, l)));
                (shape, src)
            }),
            ("take" | "drop" | "tail" | "init", _) => {
                let (count, xs) = match args {
                    [i, xs] => {
                        let iv = self.host(i)?;
                        (Some(to_i64(self.exp_of(&iv, loc)?, &i.ty, loc)), *xs)
                    }
                    [xs] => (None, *xs),
                    _ => return Err(bad()),
                };
                self.take_drop(name, count, xs, e)
            }
            ("split", [i, xs]) => {
                let Type::Tuple(ts) = &e.ty else { return Err(bad()) };
                let iv = self.host(i)?;
                let i = to_i64(self.exp_of(&iv, loc)?, &i.ty, loc);
                let a = self.take_drop_typed("take", Some(i.clone()), xs, &ts[0], loc)?;
                let b = self.take_drop_typed("drop", Some(i), xs, &ts[1], loc)?;
                Ok(LVal::Tuple(vec![a, b]))
            }
            ("flatten", [xs]) => {
                let (level, rank, _) = self.array(xs)?;
                let mut dims =
                    vec![prim(PrimFun::Mul, vec![extent(level, 0, loc), extent(level, 1, loc)], loc)];
                dims.extend((2..rank).map(|d| extent(level, d, loc)));
                let term = AccKind::Reshape { shape: tuple(dims, loc), array: Box::new(var(level, loc)) };
                Ok(self.bind_typed(OpenAcc::new(term, loc), &e.ty))
            }
            ("unflatten", [n, m, xs]) => {
                let nv = self.host(n)?;
                let n = to_i64(self.exp_of(&nv, loc)?, &n.ty, loc);
                let mv = self.host(m)?;
                let m = to_i64(self.exp_of(&mv, loc)?, &m.ty, loc);
                let (level, rank, _) = self.array(xs)?;
                let mut dims = vec![n, m];
                dims.extend((1..rank).map(|d| extent(level, d, loc)));
                let term = AccKind::Reshape { shape: tuple(dims, loc), array: Box::new(var(level, loc)) };
                Ok(self.bind_typed(OpenAcc::new(term, loc), &e.ty))
            }
            ("concat", [xs, ys]) => {
                let (a, rank, _) = self.array(xs)?;
                let (c, _, _) = self.array(ys)?;
                let n = extent(a, 0, loc);
                let mut dims = vec![prim(PrimFun::Add, vec![n.clone(), extent(c, 0, loc)], loc)];
                dims.extend((1..rank).map(|d| extent(a, d, loc)));
                let rest: Vec<OpenExp> = (1..rank).map(|k| ix(b, k, loc)).collect();
                let from_a = read(a, [vec![ix(b, 0, loc)], rest.clone()].concat(), loc);
                let from_b = read(
                    c,
                    [vec![prim(PrimFun::Sub, vec![ix(b, 0, loc), n.clone()], loc)], rest].concat(),
                    loc,
                );
                let test = prim(PrimFun::Lt, vec![ix(b, 0, loc), n], loc);
                let body =
                    OpenExp::new(ExpKind::Cond(Box::new(test), Box::new(from_a), Box::new(from_b)), loc);
                let f = Fun { params: vec![EltTy::shape(rank)], body };
                let term = AccKind::Generate { shape: tuple(dims, loc), f };
                Ok(self.bind_typed(OpenAcc::new(term, loc), &e.ty))
            }
            ("and" | "or", [xs]) => {
                let (level, elt) = self.vector(xs)?;
                let (op, seed) = if name == "and" { (PrimFun::LAnd, true) } else { (PrimFun::LOr, false) };
                self.fold_with(op, ScalarVal::Bool(seed), var(level, loc), elt, &e.ty, loc)
            }
            ("all" | "any", [p, xs]) => {
                let (level, elt) = self.vector(xs)?;
                let p = self.lambda(p, &[elt])?;
                let mapped = OpenAcc::new(AccKind::Map { f: p, array: Box::new(var(level, loc)) }, loc);
                let (op, seed) = if name == "all" { (PrimFun::LAnd, true) } else { (PrimFun::LOr, false) };
                self.fold_with(op, ScalarVal::Bool(seed), mapped, EltTy::Scalar(ScalarTy::Bool), &e.ty, loc)
            }
            ("foldl" | "foldr", [f, acc, xs]) => self.sequential_fold(name == "foldr", f, acc, xs, e),
            ("tabulate" | "tabulate_2d" | "tabulate_3d", [dims @ .., f]) if !dims.is_empty() => {
                // a `generate` whose function takes the index's components
                let mut extents = Vec::new();
                for d in dims {
                    let v = self.host(d)?;
                    extents.push(to_i64(self.exp_of(&v, loc)?, &d.ty, loc));
                }
                let rank = extents.len();
                let args = (0..rank)
                    .map(|k| LVal::Exp { e: ix(b, k, loc), elt: EltTy::Scalar(ScalarTy::I64) })
                    .collect();
                let f = self.lambda_with(f, vec![EltTy::shape(rank)], args)?;
                let term = AccKind::Generate { shape: tuple(extents, loc), f };
                Ok(self.bind_typed(OpenAcc::new(term, loc), &e.ty))
            }
            _ => Err(bad()),
        }
    }

    /// `filter p xs` (`negate`: the elements `p` rejects): positions by an
    /// exclusive scan of the kept flags, the kept elements permuted there.
    fn filter(&mut self, p: &'a Expr, xs: &'a Expr, negate: bool, ty: &Type, loc: SrcLoc) -> Res<LVal> {
        let b = self.sbase;
        let (level, elt) = self.vector(xs)?;
        let mut test = self.lambda(p, std::slice::from_ref(&elt))?;
        if negate {
            test.body = prim(PrimFun::LNot, vec![test.body], loc);
        }
        let i64c = |v: i64| c_i64(v, loc);
        let flag =
            OpenExp::new(ExpKind::Cond(Box::new(test.body), Box::new(i64c(1)), Box::new(i64c(0))), loc);
        let flags = OpenAcc::new(
            AccKind::Map { f: Fun { params: test.params, body: flag }, array: Box::new(var(level, loc)) },
            loc,
        );
        let flags = self.bind(flags);
        let i64t = EltTy::Scalar(ScalarTy::I64);
        let add = Fun {
            params: vec![i64t.clone(), i64t.clone()],
            body: prim(PrimFun::Add, vec![svar(b, loc), svar(b + 1, loc)], loc),
        };
        let offsets = OpenAcc::new(
            AccKind::Scan {
                dir: Direction::Left,
                f: add,
                seed: Some(i64c(0)),
                array: Box::new(var(flags, loc)),
            },
            loc,
        );
        let offsets = self.bind(offsets);
        let count = read(offsets, vec![len(level, loc)], loc);
        let dest = generate1(count, zero_exp(&elt, loc), loc);
        let i = prj(0, svar(b, loc), loc);
        let kept = prim(PrimFun::Eq, vec![read(flags, vec![i.clone()], loc), i64c(1)], loc);
        let target = tuple(vec![kept, tuple(vec![read(offsets, vec![i], loc)], loc)], loc);
        let index = Fun { params: vec![EltTy::shape(1)], body: target };
        let keep_new = Fun { params: vec![elt.clone(), elt], body: svar(b, loc) };
        let term = AccKind::Permute {
            combine: keep_new,
            defaults: Box::new(dest),
            index,
            source: Box::new(var(level, loc)),
        };
        Ok(self.bind_typed(OpenAcc::new(term, loc), ty))
    }

    /// `vs` combined into a copy of the vector at `dest` at the positions
    /// `is` gives; positions outside it are ignored (Futhark's `scatter`
    /// and `hist`).
    #[allow(clippy::too_many_arguments)]
    fn permute(
        &mut self,
        op: &'static str,
        dest: usize,
        combine: Fun,
        is: &'a Expr,
        vs: &'a Expr,
        ty: &Type,
        loc: SrcLoc,
    ) -> Res<LVal> {
        let b = self.sbase;
        let (il, it) = self.vector(is)?;
        let Type::Array { elem: ie, .. } = &is.ty else {
            return Err(unsupported(is.span, "indices that are not an array"));
        };
        let (vl, vt) = self.vector(vs)?;
        // the values, of the indices' size
        let vl = self.same_size(op, vec![(il, it), (vl, vt)], loc)[1].0;
        let i = prj(0, svar(b, loc), loc);
        let j = to_i64(read(il, vec![i], loc), ie, loc);
        // the index is read once: a scalar let in the index function
        let jv = svar(b + 1, loc);
        let inside = prim(
            PrimFun::LAnd,
            vec![
                prim(PrimFun::Ge, vec![jv.clone(), c_i64(0, loc)], loc),
                prim(PrimFun::Lt, vec![jv.clone(), len(dest, loc)], loc),
            ],
            loc,
        );
        let body = OpenExp::new(
            ExpKind::Let(Box::new(j), Box::new(tuple(vec![inside, tuple(vec![jv], loc)], loc))),
            loc,
        );
        let index = Fun { params: vec![EltTy::shape(1)], body };
        let term = AccKind::Permute {
            combine,
            defaults: Box::new(var(dest, loc)),
            index,
            source: Box::new(var(vl, loc)),
        };
        Ok(self.bind_typed(OpenAcc::new(term, loc), ty))
    }

    /// `take`, `drop`, `tail` and `init` of the outer dimension.
    fn take_drop(&mut self, name: &str, count: Option<OpenExp>, xs: &'a Expr, e: &'a Expr) -> Res<LVal> {
        let loc = self.loc(e.span);
        self.take_drop_typed(name, count, xs, &e.ty, loc)
    }

    fn take_drop_typed(
        &mut self,
        name: &str,
        count: Option<OpenExp>,
        xs: &'a Expr,
        ty: &Type,
        loc: SrcLoc,
    ) -> Res<LVal> {
        let b = self.sbase;
        let (level, rank, _) = self.array(xs)?;
        let n = extent(level, 0, loc);
        let one = c_i64(1, loc);
        let (len, offset) = match (name, count) {
            ("take", Some(i)) => (i, c_i64(0, loc)),
            ("drop", Some(i)) => (prim(PrimFun::Sub, vec![n, i.clone()], loc), i),
            ("tail", None) => (prim(PrimFun::Sub, vec![n, one.clone()], loc), one),
            ("init", None) => (prim(PrimFun::Sub, vec![n, one], loc), c_i64(0, loc)),
            _ => return Err(unsupported(Span::default(), format!("`{name}` with the wrong arguments"))),
        };
        let mut dims = vec![len];
        dims.extend((1..rank).map(|d| extent(level, d, loc)));
        let mut src = vec![prim(PrimFun::Add, vec![ix(b, 0, loc), offset], loc)];
        src.extend((1..rank).map(|k| ix(b, k, loc)));
        let f = Fun { params: vec![EltTy::shape(rank)], body: tuple(src, loc) };
        let term = AccKind::Backpermute { shape: tuple(dims, loc), f, array: Box::new(var(level, loc)) };
        Ok(self.bind_typed(OpenAcc::new(term, loc), ty))
    }

    /// A `backpermute` of `xs`: `shape_and_source` gives the result's
    /// extents from the argument's, and the source index of result index
    /// `ix(k)`.
    fn backpermute(
        &mut self,
        xs: &'a Expr,
        e: &'a Expr,
        shape_and_source: impl FnOnce(SrcLoc, usize, &[OpenExp]) -> (Vec<OpenExp>, Vec<OpenExp>),
    ) -> Res<LVal> {
        let loc = self.loc(e.span);
        let (level, rank, _) = self.array(xs)?;
        let extents: Vec<OpenExp> = (0..rank).map(|d| extent(level, d, loc)).collect();
        let (shape, src) = shape_and_source(loc, self.sbase, &extents);
        let f = Fun { params: vec![EltTy::shape(shape.len())], body: tuple(src, loc) };
        let term = AccKind::Backpermute { shape: tuple(shape, loc), f, array: Box::new(var(level, loc)) };
        Ok(self.bind_typed(OpenAcc::new(term, loc), &e.ty))
    }

    fn fold_with(
        &mut self,
        op: PrimFun,
        seed: ScalarVal,
        array: OpenAcc,
        elt: EltTy,
        ty: &Type,
        loc: SrcLoc,
    ) -> Res<LVal> {
        let b = self.sbase;
        let f =
            Fun { params: vec![elt.clone(), elt], body: prim(op, vec![svar(b, loc), svar(b + 1, loc)], loc) };
        let seed = OpenExp::new(ExpKind::Const(seed), loc);
        let term = AccKind::Fold { f, seed: Some(seed), array: Box::new(array) };
        Ok(self.bind_typed(OpenAcc::new(term, loc), ty))
    }

    /// `f32.sum xs` and the like: folds with the operator's identity.
    fn namespace_reduction(&mut self, ns: &str, name: &str, args: &[&'a Expr], e: &'a Expr) -> Res<LVal> {
        let loc = self.loc(e.span);
        let [xs] = args else {
            return Err(unsupported(e.span, format!("`{ns}.{name}` with {} arguments", args.len())));
        };
        let p = PrimType::from_name(ns)
            .ok_or_else(|| unsupported(e.span, format!("unknown namespace `{ns}`")))?;
        let (level, elt) = self.vector(xs)?;
        let float = |v: f64| super::device::float_const(v, p).unwrap_or(ScalarVal::F64(v));
        let limit = |high: bool| -> ScalarVal {
            if p.is_float() {
                float(if high { f64::INFINITY } else { f64::NEG_INFINITY })
            } else {
                super::prims::int_limit(p, high)
            }
        };
        let (op, seed) = match name {
            "sum" => (PrimFun::Add, int_const(0, p)),
            "product" => (PrimFun::Mul, int_const(1, p)),
            "maximum" => (PrimFun::Max, limit(false)),
            _ => (PrimFun::Min, limit(true)),
        };
        self.fold_with(op, seed, var(level, loc), elt, &e.ty, loc)
    }

    /// `foldl f acc xs` (and `foldr`): a sequential loop, on the host's
    /// scalar code.
    fn sequential_fold(
        &mut self,
        right: bool,
        f: &'a Expr,
        acc: &'a Expr,
        xs: &'a Expr,
        e: &'a Expr,
    ) -> Res<LVal> {
        let b = self.sbase;
        let loc = self.loc(e.span);
        let (level, elt) = self.vector(xs)?;
        let aelt = elt_of(&acc.ty).ok_or_else(|| nested(e))?;
        let accv = self.host(acc)?;
        let init = self.exp_of(&accv, loc)?;
        // state (i, acc); the function's body with its parameters bound to
        // the accumulator and the element
        let state = EltTy::Tuple(vec![EltTy::Scalar(ScalarTy::I64), aelt.clone()]);
        let n = len(level, loc);
        let s = svar(b, loc);
        let i = prj(0, s.clone(), loc);
        let pos = if right {
            prim(PrimFun::Sub, vec![prim(PrimFun::Sub, vec![n.clone(), c_i64(1, loc)], loc), i.clone()], loc)
        } else {
            i.clone()
        };
        let x = LVal::Exp { e: read(level, vec![pos], loc), elt: elt.clone() };
        let a = LVal::Exp { e: prj(1, s.clone(), loc), elt: aelt.clone() };
        let args = if right { vec![x, a] } else { vec![a, x] };
        let step = self.lambda_with(f, vec![state.clone()], args)?;
        let next = tuple(vec![prim(PrimFun::Add, vec![i.clone(), c_i64(1, loc)], loc), step.body], loc);
        let cond = Fun { params: vec![state.clone()], body: prim(PrimFun::Lt, vec![i, n], loc) };
        let body = Fun { params: vec![state], body: next };
        let w = ExpKind::While {
            cond: Box::new(cond),
            body: Box::new(body),
            init: Box::new(tuple(vec![c_i64(0, loc), init], loc)),
        };
        let result = prj(1, OpenExp::new(w, loc), loc);
        let lv = self.bind(OpenAcc::new(AccKind::Unit(result), loc));
        Ok(self.read_unit(lv, aelt, loc))
    }

    /// A vector argument: its level and element type (rank 1 only: an
    /// array of rows is nested parallelism).
    pub(super) fn vector(&mut self, xs: &'a Expr) -> Res<(usize, EltTy)> {
        let (level, rank, elt) = self.array(xs)?;
        if rank != 1 {
            return Err(nested(xs));
        }
        Ok((level, elt))
    }

    pub(super) fn array(&mut self, xs: &'a Expr) -> Res<(usize, usize, EltTy)> {
        match self.host(xs)? {
            LVal::Array { level, rank, elt } => Ok((level, rank, elt)),
            _ => Err(unsupported(xs.span, "not an array")),
        }
    }
}

/// The components a function body picks out of its parameter (scalar
/// level `b`), outermost first, if it is only that: `x.1.0` is `[1, 0]`.
pub(super) fn projection_path(body: &OpenExp, b: usize) -> Option<Vec<usize>> {
    let mut path = Vec::new();
    let mut e = body;
    loop {
        match &e.kind {
            ExpKind::Prj(i, x) => {
                path.push(*i);
                e = x;
            }
            ExpKind::Var(v) if *v == b && !path.is_empty() => {
                path.reverse();
                return Some(path);
            }
            _ => return None,
        }
    }
}

/// The prelude's name of an operation, for its errors.
pub(super) fn op_name(name: &str) -> &'static str {
    const NAMES: [&str; 14] = [
        "map",
        "map1",
        "map2",
        "map3",
        "map4",
        "map5",
        "zip",
        "zip2",
        "zip3",
        "zip4",
        "zip5",
        "scatter",
        "hist",
        "reduce_by_index",
    ];
    NAMES.iter().find(|n| **n == name).copied().unwrap_or("map")
}

pub(super) fn var(level: usize, loc: SrcLoc) -> OpenAcc {
    OpenAcc::new(AccKind::Var(level), loc)
}

pub(super) fn svar(level: usize, loc: SrcLoc) -> OpenExp {
    OpenExp::new(ExpKind::Var(level), loc)
}

/// Component `k` of the index parameter (scalar level `b`) of a
/// one-parameter function.
pub(super) fn ix(b: usize, k: usize, loc: SrcLoc) -> OpenExp {
    prj(k, svar(b, loc), loc)
}

pub(super) fn tuple(es: Vec<OpenExp>, loc: SrcLoc) -> OpenExp {
    OpenExp::new(ExpKind::Tuple(es), loc)
}

pub(super) fn read(level: usize, index: Vec<OpenExp>, loc: SrcLoc) -> OpenExp {
    OpenExp::new(ExpKind::Index { array: level, index: Box::new(tuple(index, loc)) }, loc)
}

pub(super) fn extent(level: usize, d: usize, loc: SrcLoc) -> OpenExp {
    prj(d, OpenExp::new(ExpKind::Shape { array: level }, loc), loc)
}

fn len(level: usize, loc: SrcLoc) -> OpenExp {
    extent(level, 0, loc)
}

/// A vector of `n` copies of a closed scalar.
fn generate1(n: OpenExp, x: OpenExp, loc: SrcLoc) -> OpenAcc {
    let f = Fun { params: vec![EltTy::shape(1)], body: x };
    OpenAcc::new(AccKind::Generate { shape: tuple(vec![n], loc), f }, loc)
}

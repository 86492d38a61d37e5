//! `map` and `zip` of any arity on the host: a `map`, a `zip_with`, or
//! `zip_with`s of the arrays zipped first; over the rows of arrays
//! (nested, Note [Nested array terms]); and of functions returning arrays.
//! Their arrays' sizes are checked (Note [Size checks]).

use super::device::{lambda_parts, nested};
use super::size_agrees;
use super::soac::{extent, op_name, projection_path, read, svar, tuple, var};
use super::*;
use accelerate_base::array::{SliceDim, SliceSpec};
use accelerate_ir::term::{Fun, PrimFun};

impl<'a> Lower<'a> {
    /// `map f xs ys ...`: a `map`, a `zip_with`, or a `generate` reading
    /// every array at its index.
    pub(super) fn map(&mut self, name: &str, f: &'a Expr, xss: &[&'a Expr], e: &'a Expr) -> Res<LVal> {
        let b = self.sbase;
        let loc = self.loc(e.span);
        let mut all = Vec::new();
        for xs in xss {
            all.push(self.array(xs)?);
        }
        if let ExprKind::Lambda(_, _, body) = &f.kind {
            if body.ty.rank() > 0 {
                return self.map_to_arrays(f, &all, e);
            }
        }
        if elt_of(match &e.ty {
            Type::Array { elem, .. } => elem,
            t => t,
        })
        .is_none()
        {
            return Err(nested(e));
        }
        if all.iter().any(|(_, rank, _)| *rank > 1) {
            return self.map_rows(f, &all, e);
        }
        let arrays: Vec<(usize, EltTy)> = all.into_iter().map(|(l, _, elt)| (l, elt)).collect();
        let arrays = self.same_size(op_name(name), arrays, loc);
        let term = match arrays.as_slice() {
            [(a, elt)] => {
                let f = self.lambda(f, std::slice::from_ref(elt))?;
                if let Some(path) = projection_path(&f.body, b) {
                    // `map (.x.y) xs`: parts of an array of tuples, which
                    // struct-of-arrays storage holds apart: moves, not a
                    // kernel (Note [Unzipped once])
                    let (mut level, mut elt) = (*a, elt.clone());
                    for i in path {
                        let EltTy::Tuple(parts) = elt else { return Err(nested(e)) };
                        let (Some(&l), Some(t)) =
                            (self.components(level, parts.len(), loc).get(i), parts.get(i))
                        else {
                            return Err(nested(e));
                        };
                        (level, elt) = (l, t.clone());
                    }
                    return Ok(self.unpack(level, &e.ty, loc));
                }
                AccKind::Map { f, array: Box::new(var(*a, loc)) }
            }
            [(a1, e1), (a2, e2)] => {
                let f = self.lambda(f, &[e1.clone(), e2.clone()])?;
                AccKind::ZipWith { f, a: Box::new(var(*a1, loc)), b: Box::new(var(*a2, loc)) }
            }
            [init @ .., (last, el)] => {
                // the first arrays zipped into tuples, then a `zip_with` of
                // those and the last: fusion makes it one loop, each array
                // read in order
                let zipped = self.zip_all(init, loc);
                let zl = self.bind(zipped);
                let tys: Vec<EltTy> = init.iter().map(|(_, t)| t.clone()).collect();
                let mut args: Vec<LVal> = tys
                    .iter()
                    .enumerate()
                    .map(|(k, t)| LVal::Exp { e: prj(k, svar(b, loc), loc), elt: t.clone() })
                    .collect();
                args.push(LVal::Exp { e: svar(b + 1, loc), elt: el.clone() });
                let f = self.lambda_with(f, vec![EltTy::Tuple(tys), el.clone()], args)?;
                AccKind::ZipWith { f, a: Box::new(var(zl, loc)), b: Box::new(var(*last, loc)) }
            }
            [] => return Err(nested(e)),
        };
        Ok(self.bind_typed(OpenAcc::new(term, loc), &e.ty))
    }

    /// The vectors (level, element type) zipped into one vector of tuples
    /// by `zip_with`s (two or more).
    pub(super) fn zip_all(&mut self, arrays: &[(usize, EltTy)], loc: SrcLoc) -> OpenAcc {
        let b = self.sbase;
        let (l0, e0) = &arrays[0];
        let mut acc = var(*l0, loc);
        let mut tys = vec![e0.clone()];
        for (l, t) in &arrays[1..] {
            let prev = if tys.len() == 1 { tys[0].clone() } else { EltTy::Tuple(tys.clone()) };
            let mut parts: Vec<OpenExp> = if tys.len() == 1 {
                vec![svar(b, loc)]
            } else {
                (0..tys.len()).map(|k| prj(k, svar(b, loc), loc)).collect()
            };
            parts.push(svar(b + 1, loc));
            let f = Fun { params: vec![prev, t.clone()], body: tuple(parts, loc) };
            acc = OpenAcc::new(AccKind::ZipWith { f, a: Box::new(acc), b: Box::new(var(*l, loc)) }, loc);
            tys.push(t.clone());
            if tys.len() < arrays.len() {
                let l2 = self.bind(acc);
                acc = var(l2, loc);
            }
        }
        acc
    }

    /// The vectors, each after the first checked to have the first's outer
    /// extent (Note [Size checks]): `op` needs arrays of one size.
    pub(super) fn same_size(
        &mut self,
        op: &'static str,
        arrays: Vec<(usize, EltTy)>,
        loc: SrcLoc,
    ) -> Vec<(usize, EltTy)> {
        let Some(&(first, _)) = arrays.first() else { return arrays };
        let a = extent(first, 0, loc);
        let mut out = vec![arrays[0].clone()];
        for (l, t) in arrays.into_iter().skip(1) {
            if l == first {
                out.push((l, t));
                continue;
            }
            let cond = size_agrees(op, a.clone(), extent(l, 0, loc), loc);
            self.require(cond);
            out.push((l, t));
        }
        out
    }

    /// `map` over the rows of arrays of rank 2 or more: a `generate` over
    /// the outer extent whose function binds each row (a `slice`) as an
    /// array nested in its scalar code (Note [Nested array terms]), for
    /// the lifting transformation to flatten.
    pub(super) fn map_rows(
        &mut self,
        f: &'a Expr,
        arrays: &[(usize, usize, EltTy)],
        e: &'a Expr,
    ) -> Res<LVal> {
        let loc = self.loc(e.span);
        // (`map` checked that the result's elements hold no array)
        let (ps, body) = lambda_parts(f)?;
        // the function's index parameter, then the rows, bound in scalar
        // code whose arrays' functions see it
        let b = self.sbase;
        let x = self.nested_scope(b + 1, loc, |l| {
            l.bind_elements(ps, arrays, prj(0, svar(b, loc), loc), loc);
            l.device_block(body)
        })?;
        let f = Fun { params: vec![EltTy::shape(1)], body: x };
        let shape = tuple(vec![extent(arrays[0].0, 0, loc)], loc);
        Ok(self.bind_typed(OpenAcc::new(AccKind::Generate { shape, f }, loc), &e.ty))
    }

    /// The lambda's parameters bound to the elements (or rows) of the
    /// arrays at index `i`: a row is a `slice`, bound in the current block.
    pub(super) fn bind_elements(
        &mut self,
        ps: &'a [Pat],
        arrays: &[(usize, usize, EltTy)],
        i: OpenExp,
        loc: SrcLoc,
    ) {
        for (p, (level, rank, elt)) in ps.iter().zip(arrays) {
            let v = if *rank == 1 {
                LVal::Exp { e: read(*level, vec![i.clone()], loc), elt: elt.clone() }
            } else {
                let mut dims = vec![SliceDim::Fixed];
                dims.extend(std::iter::repeat_n(SliceDim::All, rank - 1));
                let spec = SliceSpec { any_rank: 0, dims };
                let slice = AccKind::Slice {
                    spec,
                    array: Box::new(var(*level, loc)),
                    slix: tuple(vec![i.clone()], loc),
                };
                let row = self.bind(OpenAcc::new(slice, loc));
                LVal::Array { level: row, rank: rank - 1, elt: elt.clone() }
            };
            self.bind_pat(p, v);
        }
    }

    /// `map` whose function returns arrays (`map (\row -> map f row) m`):
    /// a `generate` over the outer extent and the extents of the function's
    /// result, whose element at `(i, j..)` is element `j..` of the
    /// function's array for element `i`, that array computed in scalar
    /// code (nested, Note [Nested array terms]); the lifting transformation
    /// computes it once per `i`, not once per element. The result's
    /// extents are the function's for element 0, computed first on the
    /// host (usually from shapes alone, which fusion reads without
    /// computing the array); every other element's must be the same
    /// (Futhark's regularity), or the run is a size error.
    pub(super) fn map_to_arrays(
        &mut self,
        f: &'a Expr,
        arrays: &[(usize, usize, EltTy)],
        e: &'a Expr,
    ) -> Res<LVal> {
        let loc = self.loc(e.span);
        let (ps, body) = lambda_parts(f)?;
        if self.sbase != 0 {
            return Err(nested(e));
        }
        let inner = body.ty.rank();
        let n = extent(arrays[0].0, 0, loc);
        for (l, _, _) in &arrays[1..] {
            let cond = size_agrees("map", n.clone(), extent(*l, 0, loc), loc);
            self.require(cond);
        }
        // the extents of the function's result for element 0 (zeros when
        // there is no element)
        let zeros = OpenAcc::new(AccKind::Unit(tuple((0..inner).map(|_| c_i64(0, loc)).collect(), loc)), loc);
        let envn = self.env.len();
        self.open_block();
        self.bind_elements(ps, arrays, c_i64(0, loc), loc);
        let first = self.host(body);
        self.env.truncate(envn);
        let first = match first {
            Ok(LVal::Array { level, .. }) => {
                OpenAcc::new(AccKind::Unit(OpenExp::new(ExpKind::Shape { array: level }, loc)), loc)
            }
            Ok(_) => OpenAcc::new(AccKind::Tuple(vec![]), loc),
            Err(err) => {
                self.pop_block();
                return Err(err);
            }
        };
        let first = self.close_block(first);
        let empty = prim(PrimFun::Eq, vec![n.clone(), c_i64(0, loc)], loc);
        let extents = self.bind(OpenAcc::new(
            AccKind::Acond { cond: empty, then_: Box::new(zeros), else_: Box::new(first) },
            loc,
        ));
        let k = |d: usize| prj(d, read(extents, vec![], loc), loc);
        // the elements: the index parameter, the rows at its first
        // component, the function's array, read at the rest
        let b = self.sbase;
        let ix = |d: usize| prj(d, svar(b, loc), loc);
        let x = self.nested_scope(b + 1, loc, |l| {
            l.bind_elements(ps, arrays, ix(0), loc);
            match l.host(body)? {
                LVal::Array { level, elt, .. } => {
                    // the first extent checked against element 0's (the
                    // rest are read in bounds or not at all); the read is
                    // at the index as it is, so that fusion sees a read at
                    // its own index once the array is lifted (the `else`
                    // is never taken: the check fails instead)
                    let s0 = prj(0, OpenExp::new(ExpKind::Shape { array: level }, loc), loc);
                    let agree = size_agrees("map", k(0), s0, loc);
                    let value = read(level, (1..=inner).map(ix).collect(), loc);
                    let never = super::host::zero_exp(&elt, loc);
                    Ok(OpenExp::new(ExpKind::Cond(Box::new(agree), Box::new(value), Box::new(never)), loc))
                }
                _ => Err(nested(e)),
            }
        })?;
        let f = Fun { params: vec![EltTy::shape(1 + inner)], body: x };
        let mut dims = vec![n];
        dims.extend((0..inner).map(k));
        let shape = tuple(dims, loc);
        Ok(self.bind_typed(OpenAcc::new(AccKind::Generate { shape, f }, loc), &e.ty))
    }
}

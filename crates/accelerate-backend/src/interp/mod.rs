//! The reference interpreter: runs every IR construct directly. It is the
//! executable specification of `docs/semantics.md`; every other backend is
//! tested against it. Clarity over speed: each operation is the plain
//! sequential loop over row-major indices.

mod plan;
pub(crate) mod scalar;

pub use accelerate_ir::eval::apply as apply_prim;
pub use accelerate_ir::eval::cast;
pub use plan::run_plan;
pub use plan::Interpreter;

use accelerate_base::array::typed::{for_each_index, linear_index};
use accelerate_base::array::value::ArrayBuilder;
use accelerate_base::array::{ArrayData, ArraysTy, ArraysVal, EltTy, ScalarVal, SliceDim, Val};
use accelerate_base::error::{Error, Result, SrcLoc};
use accelerate_base::foreign::{call_host, no_implementation};
use accelerate_ir::verify::{acc_ty, fun_ty};
use accelerate_ir::*;
use scalar::{checked_dims, ASlot, ScalarEval, Slot};
use std::sync::Arc;

/// Runs a program on its arguments.
pub fn run_program(p: &Program, args: Vec<ArraysVal>) -> Result<ArraysVal> {
    run_counted(p, args, false).map(|(v, _)| v)
}

/// What a run wrote to memory: each kernel's result (in the order
/// computed), when counting was asked for.
#[derive(Default)]
pub struct Written {
    pub launches: usize,
    pub arrays: Vec<Arc<ArrayData>>,
}

/// Runs a program, recording the arrays its kernels write if `count`.
pub fn run_counted(p: &Program, args: Vec<ArraysVal>, count: bool) -> Result<(ArraysVal, Written)> {
    if args.len() != p.params.len() {
        return Err(Error::Internal(format!("program of {} arguments given {}", p.params.len(), args.len())));
    }
    let aenv = args.into_iter().map(|v| ASlot { ty: v.ty(), val: Ok(v) }).collect();
    let mut it = Interp { aenv, count, written: Written::default() };
    let v = it.acc(&p.body)?;
    Ok((v, it.written))
}

struct Interp {
    aenv: Vec<ASlot>,
    count: bool,
    written: Written,
}

fn array(v: ArraysVal) -> Result<Arc<ArrayData>> {
    match v {
        ArraysVal::Array(a) => Ok(a),
        ArraysVal::Tuple(_) => Err(Error::Internal("expected an array, found a tuple".into())),
    }
}

/// A consumer's argument: an array in memory, or a delayed array whose
/// elements are computed where they are read (Note [Delayed arrays]).
enum Source<'a> {
    Manifest(Arc<ArrayData>),
    Delayed { dims: Vec<usize>, elt: EltTy, index: &'a Fun, linear: &'a Fun },
}

impl Source<'_> {
    fn shape(&self) -> &[usize] {
        match self {
            Source::Manifest(a) => a.shape(),
            Source::Delayed { dims, .. } => dims,
        }
    }

    fn elt_ty(&self) -> &EltTy {
        match self {
            Source::Manifest(a) => a.elt_ty(),
            Source::Delayed { elt, .. } => elt,
        }
    }

    /// The element at row-major position `i`.
    fn get(&self, s: &ScalarEval<'_>, i: usize, env: &mut Vec<Slot>) -> Result<Val> {
        match self {
            Source::Manifest(a) => Ok(a.get(i)),
            Source::Delayed { linear, .. } => s.apply(linear, &[Val::Scalar(ScalarVal::I64(i as i64))], env),
        }
    }

    /// The element at index `ix`, which is at row-major position `i`.
    fn get_ix(&self, s: &ScalarEval<'_>, ix: &[i64], i: usize, env: &mut Vec<Slot>) -> Result<Val> {
        match self {
            Source::Manifest(a) => Ok(a.get(i)),
            Source::Delayed { index, .. } => s.apply(index, &[Val::from_index(ix)], env),
        }
    }
}

fn to_i64(dims: &[usize]) -> Vec<i64> {
    dims.iter().map(|&d| d as i64).collect()
}

fn ix_val(ix: &[usize]) -> Val {
    Val::from_index(&to_i64(ix))
}

// Note [Stack for deep scalar code]
// The scalar evaluator recurses on the term, growing its stack (stacker)
// when it runs low. A term as deep as a long program (10^5 maps fused into
// one function) then needs many megabytes of stack, and evaluating each
// element would map fresh stack segments, fault their pages in and unmap
// them again: most of the run's time. So each operation measures how deep
// its scalar code is (one pass, without recursion) and runs on a stack
// that holds that many levels of evaluation, mapped once for all its
// elements; the evaluator's own checks then find room enough.

/// Bytes of stack the scalar evaluator uses per level of a term, with a
/// margin (measured: about 1 400 in an optimised build, from the stack
/// segments a deep term mapped per element with less).
const STACK_PER_LEVEL: usize = 2048;

impl Interp {
    fn scalars(&self) -> ScalarEval<'_> {
        ScalarEval { aenv: &self.aenv }
    }

    fn aenv_tys(&self) -> Vec<ArraysTy> {
        self.aenv.iter().map(|s| s.ty.clone()).collect()
    }

    /// The element type a function returns, needed to build empty arrays.
    fn result_elt(&self, f: &Fun, args: &[EltTy]) -> Result<EltTy> {
        fun_ty(f, args, &self.aenv_tys()).map_err(Error::Internal)
    }

    fn sub(&mut self, a: &OpenAcc) -> Result<Arc<ArrayData>> {
        array(self.acc(a)?)
    }

    /// A consumer's argument, delayed or not.
    fn source<'a>(&mut self, a: &'a OpenAcc) -> Result<Source<'a>> {
        match &a.kind {
            AccKind::Delayed(DelayedArray { shape, index, linear }) => {
                let dims = self.scalars().shape(shape)?;
                let elt = self.result_elt(index, &[EltTy::shape(dims.len())])?;
                Ok(Source::Delayed { dims, elt, index, linear })
            }
            _ => Ok(Source::Manifest(self.sub(a)?)),
        }
    }

    fn acc(&mut self, a: &OpenAcc) -> Result<ArraysVal> {
        // Note [Stack for deep scalar code]
        let mut depth = 0;
        accelerate_ir::visit::each_exp(a, |e| depth = depth.max(accelerate_ir::visit::depth(e)));
        let need = depth * STACK_PER_LEVEL;
        let v = stacker::maybe_grow(64 * 1024 + need, 1024 * 1024 + need, || self.acc_inner(a))?;
        if self.count && accelerate_ir::visit::is_kernel(a) {
            self.written.launches += 1;
            // a fold_keep writes both of its arrays
            let parts = match &v {
                ArraysVal::Tuple(vs) => vs.iter().collect(),
                one => vec![one],
            };
            for p in parts {
                if let ArraysVal::Array(d) = p {
                    self.written.arrays.push(d.clone());
                }
            }
        }
        Ok(v)
    }

    fn acc_inner(&mut self, acc: &OpenAcc) -> Result<ArraysVal> {
        let loc = acc.loc;
        let out = |d: Option<ArrayData>| -> Result<ArraysVal> {
            d.map(|d| ArraysVal::Array(Arc::new(d)))
                .ok_or_else(|| Error::Internal("array built with the wrong number of elements".into()))
        };
        match &acc.kind {
            AccKind::Let(b, body) => {
                // Note [Deferred errors]: a failed binding fails only its uses
                let val = self.acc(b);
                let ty = match &val {
                    Ok(v) => v.ty(),
                    Err(_) => acc_ty(b, &mut self.aenv_tys()).map_err(Error::Internal)?,
                };
                self.aenv.push(ASlot { ty, val });
                let r = self.acc(body);
                self.aenv.pop();
                r
            }
            AccKind::Var(i) => match self.aenv.len().checked_sub(i + 1) {
                Some(k) => self.aenv[k].val.clone(),
                None => Err(Error::Internal(format!("array variable {i} unbound"))),
            },
            AccKind::Tuple(ts) => {
                Ok(ArraysVal::Tuple(ts.iter().map(|t| self.acc(t)).collect::<Result<_>>()?))
            }
            AccKind::Prj(i, t) => match self.acc(t)? {
                ArraysVal::Tuple(mut vs) if *i < vs.len() => Ok(vs.swap_remove(*i)),
                _ => Err(Error::Internal(format!("array projection {i} of a non-tuple"))),
            },
            AccKind::Unzip(t) => match self.acc(t)? {
                ArraysVal::Array(a) => {
                    // a kernel's tuples were written as its components
                    let counted = self.written.arrays.iter().rposition(|w| Arc::ptr_eq(w, &a));
                    counted.map(|i| self.written.arrays.remove(i));
                    let parts = crate::host::unzip_host(a)?;
                    if counted.is_some() {
                        self.written.arrays.extend(parts.iter().cloned());
                    }
                    Ok(ArraysVal::Tuple(parts.into_iter().map(ArraysVal::Array).collect()))
                }
                ArraysVal::Tuple(_) => Err(Error::Internal("unzip of a tuple of arrays".into())),
            },
            AccKind::Use(d) => Ok(ArraysVal::Array(d.clone())),
            AccKind::Unit(e) => {
                let v = self.scalars().eval(e, &mut Vec::new())?;
                let ty = accelerate_ir::verify::exp_ty(e, &mut Vec::new(), &self.aenv_tys())
                    .map_err(Error::Internal)?;
                let mut b = reserve(&ty, &[], loc)?;
                b.push(&v);
                out(b.finish(vec![]))
            }
            AccKind::Reshape { shape, array: a } => {
                let dims = self.scalars().shape(shape)?;
                let src = self.sub(a)?;
                let size: usize = dims.iter().product();
                if size != src.len() {
                    return Err(Error::ReshapeSize {
                        loc,
                        from: src.shape().to_vec(),
                        from_size: src.len(),
                        to: to_i64(&dims),
                        to_size: size,
                    });
                }
                Ok(ArraysVal::Array(Arc::new(src.reshaped(dims))))
            }
            AccKind::Generate { shape, f } => {
                let dims = self.scalars().shape(shape)?;
                let elt = self.result_elt(f, &[EltTy::shape(dims.len())])?;
                self.build(&elt, &dims, loc, |s, ix, env| s.apply(f, &[ix_val(ix)], env))
            }
            AccKind::Map { f, array: a } => {
                let src = self.sub(a)?;
                let elt = self.result_elt(f, &[src.elt_ty().clone()])?;
                let dims = src.shape().to_vec();
                let mut i = 0;
                self.build(&elt, &dims, loc, |s, _, env| {
                    let r = s.apply(f, &[src.get(i)], env);
                    i += 1;
                    r
                })
            }
            AccKind::ZipWith { f, a, b } => {
                let x = self.sub(a)?;
                let y = self.sub(b)?;
                let elt = self.result_elt(f, &[x.elt_ty().clone(), y.elt_ty().clone()])?;
                let dims: Vec<usize> = x.shape().iter().zip(y.shape()).map(|(&p, &q)| p.min(q)).collect();
                self.build(&elt, &dims, loc, |s, ix, env| {
                    let ix = to_i64(ix);
                    let xi = linear_index(x.shape(), &ix).expect("within the intersection");
                    let yi = linear_index(y.shape(), &ix).expect("within the intersection");
                    s.apply(f, &[x.get(xi), y.get(yi)], env)
                })
            }
            AccKind::Backpermute { shape, f, array: a } => {
                let dims = self.scalars().shape(shape)?;
                let src = self.sub(a)?;
                let elt = src.elt_ty().clone();
                self.build(&elt, &dims, loc, |s, ix, env| {
                    let from = s.apply(f, &[ix_val(ix)], env)?.to_index().expect("an index");
                    let i = linear_index(src.shape(), &from)
                        .ok_or_else(|| Error::index_out_of_bounds(loc, from.clone(), src.shape().to_vec()))?;
                    Ok(src.get(i))
                })
            }
            AccKind::Replicate { spec, slix, array: a } => {
                let fixed = self.scalars().index(slix)?;
                let src = self.sub(a)?;
                // the full shape: Any dims, then All dims from the source and
                // Fixed dims from the slice index
                let (mut full, mut keep) = (Vec::new(), Vec::new());
                let (mut s, mut f) = (0, 0);
                for _ in 0..spec.any_rank {
                    full.push(src.shape()[s] as i64);
                    keep.push(true);
                    s += 1;
                }
                for d in &spec.dims {
                    match d {
                        SliceDim::All => {
                            full.push(src.shape()[s] as i64);
                            s += 1;
                            keep.push(true);
                        }
                        SliceDim::Fixed => {
                            full.push(fixed[f]);
                            f += 1;
                            keep.push(false);
                        }
                    }
                }
                let dims = checked_dims(&full, slix.loc)?;
                let elt = src.elt_ty().clone();
                self.build(&elt, &dims, loc, |_, ix, _| {
                    let from: Vec<i64> =
                        ix.iter().zip(&keep).filter(|(_, &k)| k).map(|(&x, _)| x as i64).collect();
                    Ok(src.get(linear_index(src.shape(), &from).expect("within the source")))
                })
            }
            AccKind::Slice { spec, array: a, slix } => {
                let fixed = self.scalars().index(slix)?;
                let src = self.sub(a)?;
                let mut dims = Vec::new();
                let mut template: Vec<Option<i64>> = Vec::new();
                let mut f = 0;
                // an index out of bounds is an error when the slice reads
                // an element through it (so not for an empty slice), as
                // when the slice is fused into its consumer
                let mut bad = None;
                for (k, d) in std::iter::repeat_n(&SliceDim::All, spec.any_rank).chain(&spec.dims).enumerate()
                {
                    match d {
                        SliceDim::All => {
                            dims.push(src.shape()[k]);
                            template.push(None);
                        }
                        SliceDim::Fixed => {
                            let x = fixed[f];
                            f += 1;
                            if (x < 0 || x as usize >= src.shape()[k]) && bad.is_none() {
                                bad = Some(template.len());
                            }
                            template.push(Some(x));
                        }
                    }
                }
                if let Some(k) = bad.filter(|_| !dims.contains(&0)) {
                    let index: Vec<i64> = template[..=k].iter().map(|t| t.unwrap_or(0)).collect();
                    return Err(Error::index_out_of_bounds(loc, index, src.shape().to_vec()));
                }
                let elt = src.elt_ty().clone();
                self.build(&elt, &dims, loc, |_, ix, _| {
                    let mut it = ix.iter();
                    let from: Vec<i64> = template
                        .iter()
                        .map(|t| t.unwrap_or_else(|| *it.next().expect("slice rank") as i64))
                        .collect();
                    Ok(src.get(linear_index(src.shape(), &from).expect("within the source")))
                })
            }
            AccKind::Fold { f, seed, array: a } => self.fold(f, seed.as_ref(), a, loc, false),
            // fold's loop, each element's first component kept
            AccKind::FoldKeep { f, seed, array: a } => self.fold(f, seed.as_ref(), a, loc, true),
            AccKind::Scan { dir, f, seed, array: a } => {
                let seed = seed.as_ref().map(|z| self.scalars().eval(z, &mut Vec::new())).transpose()?;
                let src = self.source(a)?;
                let (outer, n) = split_inner(src.shape());
                let rows: usize = outer.iter().product();
                if seed.is_none() && n == 0 && rows > 0 {
                    let op = if *dir == Direction::Left { "scanl1" } else { "scanr1" };
                    return Err(Error::EmptyReduction { loc, op, shape: src.shape().to_vec() });
                }
                let m = if seed.is_some() { n + 1 } else { n };
                let elt = src.elt_ty().clone();
                let s = self.scalars();
                let mut env = Vec::new();
                let mut b = reserve(&elt, &outer.iter().copied().chain([m]).collect::<Vec<_>>(), loc)?;
                let mut line: Vec<Val> = Vec::with_capacity(m);
                for r in 0..rows {
                    let base = r * n;
                    line.clear();
                    match dir {
                        Direction::Left => {
                            let mut acc = match &seed {
                                Some(z) => z.clone(),
                                None => src.get(&s, base, &mut env)?,
                            };
                            line.push(acc.clone());
                            let start = if seed.is_some() { 0 } else { 1 };
                            for k in start..n {
                                let x = src.get(&s, base + k, &mut env)?;
                                acc = s.apply(f, &[acc, x], &mut env)?;
                                line.push(acc.clone());
                            }
                        }
                        Direction::Right => {
                            let mut acc = match &seed {
                                Some(z) => z.clone(),
                                None => src.get(&s, base + n - 1, &mut env)?,
                            };
                            line.push(acc.clone());
                            let end = if seed.is_some() { n } else { n - 1 };
                            for k in (0..end).rev() {
                                let x = src.get(&s, base + k, &mut env)?;
                                acc = s.apply(f, &[x, acc], &mut env)?;
                                line.push(acc.clone());
                            }
                            line.reverse();
                        }
                    }
                    line.iter().for_each(|v| b.push(v));
                }
                let mut dims = outer;
                dims.push(m);
                out(b.finish(dims))
            }
            AccKind::FoldSeg { f, seed, array: a, offsets } => {
                let seed = seed.as_ref().map(|z| self.scalars().eval(z, &mut Vec::new())).transpose()?;
                let src = self.source(a)?;
                let offs = self.sub(offsets)?;
                let (outer, n) = split_inner(src.shape());
                let offs: Vec<i64> = (0..offs.len())
                    .map(|i| offs.get(i).scalar().and_then(|s| s.as_i64()))
                    .collect::<Option<_>>()
                    .ok_or_else(|| Error::Internal("segment offsets are not i64".into()))?;
                check_offsets(&offs, n, loc)?;
                let nseg = offs.len() - 1;
                let rows: usize = outer.iter().product();
                if seed.is_none() && rows > 0 && offs.windows(2).any(|w| w[0] == w[1]) {
                    return Err(Error::EmptyReduction { loc, op: "fold1_seg", shape: src.shape().to_vec() });
                }
                let elt = src.elt_ty().clone();
                let mut dims = outer.clone();
                dims.push(nseg);
                self.build(&elt, &dims, loc, |s, ix, env| {
                    let (row, seg) = (
                        ix[..ix.len() - 1].iter().zip(&outer).fold(0, |r, (&i, &d)| r * d + i),
                        ix[ix.len() - 1],
                    );
                    let base = row * n;
                    let (lo, hi) = (offs[seg] as usize, offs[seg + 1] as usize);
                    let (mut acc, start) = match &seed {
                        Some(z) => (z.clone(), lo),
                        None => (src.get(s, base + lo, env)?, lo + 1),
                    };
                    for k in start..hi {
                        let x = src.get(s, base + k, env)?;
                        acc = s.apply(f, &[acc, x], env)?;
                    }
                    Ok(acc)
                })
            }
            AccKind::Stencil { f, args } => {
                let arrays = args.iter().map(|a| self.source(&a.array)).collect::<Result<Vec<_>>>()?;
                let dims = arrays[0].shape().to_vec();
                if let Some(b) = arrays.get(1).filter(|b| b.shape() != dims.as_slice()) {
                    return Err(Error::ShapeMismatch {
                        loc,
                        op: "stencil2",
                        first: dims,
                        second: b.shape().to_vec(),
                    });
                }
                if !dims.contains(&0) {
                    if let Some(a) = args.iter().find(|a| a.extents.iter().zip(&dims).any(|(e, d)| e > d)) {
                        return Err(Error::StencilTooSmall { loc, pattern: a.extents.clone(), shape: dims });
                    }
                }
                let offsets: Vec<Vec<Vec<i64>>> = args.iter().map(|a| a.offsets()).collect();
                let constants = args
                    .iter()
                    .map(|a| match &a.boundary {
                        Boundary::Constant(c) => self.scalars().eval(c, &mut Vec::new()).map(Some),
                        _ => Ok(None),
                    })
                    .collect::<Result<Vec<_>>>()?;
                let params: Vec<EltTy> = args
                    .iter()
                    .zip(&arrays)
                    .flat_map(|(a, x)| std::iter::repeat_n(x.elt_ty().clone(), a.extents.iter().product()))
                    .collect();
                let elt = self.result_elt(f, &params)?;
                let mut vals = Vec::with_capacity(params.len());
                let mut nb = Vec::with_capacity(dims.len());
                self.build(&elt, &dims, loc, |s, ix, env| {
                    vals.clear();
                    for (k, arg) in args.iter().enumerate() {
                        for off in &offsets[k] {
                            nb.clear();
                            nb.extend(ix.iter().zip(off).map(|(&i, &d)| i as i64 + d));
                            let v = match linear_index(&dims, &nb) {
                                Some(i) => arrays[k].get_ix(s, &nb, i, env)?,
                                None => match (&arg.boundary, &constants[k]) {
                                    (_, Some(c)) => c.clone(),
                                    (Boundary::Function(g), _) => s.apply(g, &[Val::from_index(&nb)], env)?,
                                    (b, _) => {
                                        let inside: Vec<i64> = nb
                                            .iter()
                                            .zip(&dims)
                                            .map(|(&x, &n)| bound(b, x, n as i64))
                                            .collect();
                                        let i = linear_index(&dims, &inside).expect("the pattern fits");
                                        arrays[k].get_ix(s, &inside, i, env)?
                                    }
                                },
                            };
                            vals.push(v);
                        }
                    }
                    s.apply(f, &vals, env)
                })
            }
            AccKind::Permute { combine, defaults, index, source } => {
                let def = self.sub(defaults)?;
                let src = self.source(source)?;
                let mut res: Vec<Val> = (0..def.len()).map(|i| def.get(i)).collect();
                let s = self.scalars();
                let mut env = Vec::new();
                let mut err = None;
                for_each_index(src.shape(), |ix| {
                    if err.is_some() {
                        return;
                    }
                    let mut step = || -> Result<()> {
                        let r = s.apply(index, &[ix_val(ix)], &mut env)?;
                        let parts = r
                            .tuple()
                            .ok_or_else(|| Error::Internal("permute index is not an option".into()))?;
                        if parts[0].scalar().and_then(|b| b.as_bool()) != Some(true) {
                            return Ok(());
                        }
                        let to =
                            parts[1].to_index().ok_or_else(|| Error::Internal("bad permute index".into()))?;
                        let j = linear_index(def.shape(), &to).ok_or_else(|| {
                            Error::index_out_of_bounds(loc, to.clone(), def.shape().to_vec())
                        })?;
                        let ix = to_i64(ix);
                        let i = linear_index(src.shape(), &ix).expect("a source index");
                        let new = src.get_ix(&s, &ix, i, &mut env)?;
                        res[j] = s.apply(combine, &[new, res[j].clone()], &mut env)?;
                        Ok(())
                    };
                    if let Err(e) = step() {
                        err = Some(e);
                    }
                });
                if let Some(e) = err {
                    return Err(e);
                }
                let mut b = reserve(def.elt_ty(), def.shape(), loc)?;
                res.iter().for_each(|v| b.push(v));
                out(b.finish(def.shape().to_vec()))
            }
            AccKind::Acond { cond, then_, else_ } => {
                let c = self.scalars().eval(cond, &mut Vec::new())?;
                if c.scalar()
                    .and_then(|b| b.as_bool())
                    .ok_or_else(|| Error::Internal("acond on a non-bool".into()))?
                {
                    self.acc(then_)
                } else {
                    self.acc(else_)
                }
            }
            AccKind::Awhile { pred, body, init } => {
                let mut x = self.acc(init)?;
                loop {
                    let p = self.apply_afun(pred, x.clone())?;
                    let go = array(p)?.get(0).scalar().and_then(|b| b.as_bool());
                    if !go.ok_or_else(|| Error::Internal("awhile predicate is not a bool".into()))? {
                        return Ok(x);
                    }
                    x = self.apply_afun(body, x)?;
                }
            }
            AccKind::Foreign { func, fallback, arg } => {
                let x = self.acc(arg)?;
                match (call_host(func, loc, x.clone()), fallback) {
                    (Some(r), _) => r,
                    (None, Some(fallback)) => self.apply_afun(fallback, x),
                    (None, None) => Err(no_implementation(func, loc)),
                }
            }
            // only a consumer's argument (`source`), but meaningful anywhere
            AccKind::Delayed(DelayedArray { shape, index, .. }) => {
                let dims = self.scalars().shape(shape)?;
                let elt = self.result_elt(index, &[EltTy::shape(dims.len())])?;
                self.build(&elt, &dims, loc, |s, ix, env| s.apply(index, &[ix_val(ix)], env))
            }
        }
    }

    fn apply_afun(&mut self, f: &AFun, x: ArraysVal) -> Result<ArraysVal> {
        self.aenv.push(ASlot { ty: x.ty(), val: Ok(x) });
        let r = self.acc(&f.body);
        self.aenv.pop();
        r
    }

    /// `fold` of `a`'s rows, or with `keep` `fold_keep`: the elements are
    /// pairs, the first kept in an array of `a`'s shape, the second folded.
    fn fold(
        &mut self,
        f: &Fun,
        seed: Option<&OpenExp>,
        a: &OpenAcc,
        loc: SrcLoc,
        keep: bool,
    ) -> Result<ArraysVal> {
        let seed = seed.map(|z| self.scalars().eval(z, &mut Vec::new())).transpose()?;
        let src = self.source(a)?;
        let (outer, n) = split_inner(src.shape());
        let rows: usize = outer.iter().product();
        if seed.is_none() && n == 0 && rows > 0 {
            return Err(Error::EmptyReduction { loc, op: "fold1", shape: src.shape().to_vec() });
        }
        let (k_elt, x_elt) = match (keep, src.elt_ty()) {
            (false, x) => (EltTy::Tuple(Vec::new()), x.clone()),
            (true, EltTy::Tuple(kx)) if kx.len() == 2 => (kx[0].clone(), kx[1].clone()),
            (true, other) => {
                return Err(Error::Internal(format!("fold_keep of elements {other}, not pairs")))
            }
        };
        let s = self.scalars();
        let mut env = Vec::new();
        let mut kept = reserve(&k_elt, if keep { src.shape() } else { &[0] }, loc)?;
        let mut folded = reserve(&x_elt, &outer, loc)?;
        let mut read = |at: usize, env: &mut Vec<Slot>| -> Result<Val> {
            match src.get(&s, at, env)? {
                Val::Tuple(mut kx) if keep && kx.len() == 2 => {
                    let x = kx.pop().expect("a pair");
                    kept.push(&kx[0]);
                    Ok(x)
                }
                _ if keep => Err(Error::Internal("fold_keep of an element that is not a pair".into())),
                x => Ok(x),
            }
        };
        for r in 0..rows {
            let base = r * n;
            let mut acc = match &seed {
                Some(z) => z.clone(),
                None => read(base, &mut env)?,
            };
            let start = if seed.is_some() { 0 } else { 1 };
            for k in start..n {
                let x = read(base + k, &mut env)?;
                acc = s.apply(f, &[acc, x], &mut env)?;
            }
            folded.push(&acc);
        }
        let done = |b: ArrayBuilder, dims: Vec<usize>| {
            b.finish(dims)
                .map(|d| ArraysVal::Array(Arc::new(d)))
                .ok_or_else(|| Error::Internal("array built with the wrong number of elements".into()))
        };
        let folded = done(folded, outer)?;
        match keep {
            true => Ok(ArraysVal::Tuple(vec![done(kept, src.shape().to_vec())?, folded])),
            false => Ok(folded),
        }
    }

    /// Builds an array of shape `dims` whose element at each index (in
    /// row-major order) is `elem(eval, index, scratch env)`.
    fn build(
        &self,
        elt: &EltTy,
        dims: &[usize],
        loc: SrcLoc,
        mut elem: impl FnMut(&ScalarEval<'_>, &[usize], &mut Vec<Slot>) -> Result<Val>,
    ) -> Result<ArraysVal> {
        let s = self.scalars();
        let mut b = reserve(elt, dims, loc)?;
        let mut env = Vec::new();
        let mut err = None;
        for_each_index(dims, |ix| {
            if err.is_none() {
                match elem(&s, ix, &mut env) {
                    Ok(v) => b.push(&v),
                    Err(e) => err = Some(e),
                }
            }
        });
        if let Some(e) = err {
            return Err(e);
        }
        b.finish(dims.to_vec())
            .map(|d| ArraysVal::Array(Arc::new(d)))
            .ok_or_else(|| Error::Internal("array built with the wrong number of elements".into()))
    }
}

/// Room for an array of the given shape: `Error::ShapeTooLarge` if its
/// bytes could not be addressed, `Error::OutOfMemory` if they cannot be had.
fn reserve(elt: &EltTy, dims: &[usize], loc: SrcLoc) -> Result<ArrayBuilder> {
    accelerate_base::array::shape::checked_extents(&to_i64(dims), elt.size_bytes(), loc)?;
    ArrayData::builder(elt, dims.iter().product())
        .ok_or_else(|| Error::OutOfMemory { loc, shape: dims.to_vec() })
}

/// A coordinate `x` outside `0..n` brought inside by a boundary that reads
/// the array (`n` is at least the pattern's extent, so one reflection
/// suffices for `Mirror`).
fn bound(b: &Boundary, x: i64, n: i64) -> i64 {
    match b {
        Boundary::Clamp => x.clamp(0, n - 1),
        Boundary::Mirror if x < 0 => -x,
        Boundary::Mirror if x >= n => 2 * (n - 1) - x,
        Boundary::Wrap => x.rem_euclid(n),
        _ => x,
    }
}

/// Segment offsets must run from 0 to the row length `n` without
/// decreasing (so the segments tile each row exactly).
pub(crate) fn check_offsets(offs: &[i64], n: usize, loc: SrcLoc) -> Result<()> {
    let bad = |message: String| Err(Error::BadSegments { loc, message });
    match (offs.first(), offs.last()) {
        (None, _) | (_, None) => bad("segment offsets must have at least one element (0)".into()),
        (Some(&first), _) if first != 0 => bad(format!("segment offsets must start at 0, not {first}")),
        (_, Some(&last)) if last != n as i64 => bad(format!(
            "the segments cover {last} elements but the rows have {n} (segment lengths must sum to the row length)"
        )),
        _ if !decreases(offs) => Ok(()),
        _ => match offs.windows(2).position(|w| w[1] < w[0]) {
            // the offsets are the lengths' running sum, in wrapping
            // arithmetic: a decrease is a negative length, or a sum past
            // i64::MAX (the length itself is the wrapping difference)
            Some(i) => match offs[i + 1].wrapping_sub(offs[i]) {
                len if len < 0 => bad(format!(
                    "segment {i} has negative length {len} (offsets {} then {})",
                    offs[i],
                    offs[i + 1]
                )),
                len => bad(format!(
                    "the segment lengths sum past {} at segment {i} (length {len} after {} elements)",
                    i64::MAX,
                    offs[i]
                )),
            },
            None => Ok(()),
        },
    }
}

/// Whether some offset is less than the one before it: without a branch
/// per offset, so that the loop vectorises (`windows(2).position(..)`
/// stopped to test each pair: 11 µs of a sparse product's 230 at 20 000
/// rows, and as much per 20 000 segments of a segmented sum). The
/// baseline x86-64 target that the library is compiled for has SSE2,
/// which has no 64-bit comparison: there `b < a` is the sign of `b - a`
/// computed exactly (`decreases_sse2`), 5 µs for 20 001 offsets on the
/// EPYC guest of docs/benchmarks.md. Where the CPU has AVX2 the plain
/// comparison vectorises, 1.8 µs.
fn decreases(offs: &[i64]) -> bool {
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2, tested just above
        return unsafe { decreases_avx2(offs) };
    }
    decreases_sse2(offs)
}

/// [`decreases`] compiled for AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn decreases_avx2(offs: &[i64]) -> bool {
    let next = offs.get(1..).unwrap_or_default();
    offs.iter().zip(next).fold(false, |any, (&a, &b)| any | (b < a))
}

/// [`decreases`] for any target: the wrapping difference's sign, flipped
/// where the subtraction overflowed (`a` and `b` of different signs, and
/// the difference's sign not `b`'s).
fn decreases_sse2(offs: &[i64]) -> bool {
    let next = offs.get(1..).unwrap_or_default();
    let signs = offs.iter().zip(next).fold(0i64, |signs, (&a, &b)| {
        let d = b.wrapping_sub(a);
        signs | (d ^ ((b ^ a) & (d ^ b)))
    });
    signs < 0
}

/// The outer extents and the innermost extent of a shape of rank >= 1.
pub(crate) fn split_inner(shape: &[usize]) -> (Vec<usize>, usize) {
    let (n, outer) = shape.split_last().expect("rank >= 1 checked by the verifier");
    (outer.to_vec(), *n)
}

#[cfg(test)]
mod tests {
    use super::{decreases, decreases_sse2};

    /// `decreases` (on this CPU's path) and the form for any target
    /// against the pairwise comparison.
    #[test]
    fn decreases_is_the_pairwise_comparison() {
        decreases_agrees(decreases);
        decreases_agrees(decreases_sse2);
    }

    /// `decreases` against the comparison it replaces: every pair of
    /// values at the edges of `i64` (where the difference overflows),
    /// pseudo-random pairs, and long runs that never decrease but for one
    /// pair, placed anywhere.
    fn decreases_agrees(decreases: fn(&[i64]) -> bool) {
        let edges = [i64::MIN, i64::MIN + 1, -(1 << 62), -2, -1, 0, 1, 2, 1 << 62, i64::MAX - 1, i64::MAX];
        for &a in &edges {
            for &b in &edges {
                assert_eq!(decreases(&[a, b]), b < a, "{a} then {b}");
            }
        }
        // splitmix64
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            z ^ (z >> 31)
        };
        for _ in 0..100_000 {
            let (a, b) = (next() as i64, next() as i64);
            assert_eq!(decreases(&[a, b]), b < a, "{a} then {b}");
        }
        for len in [0usize, 1, 2, 3, 17, 1000] {
            let mut offs: Vec<i64> = (0..len as i64).map(|i| i * 3).collect();
            assert!(!decreases(&offs), "{len} increasing offsets");
            if len >= 2 {
                let at = (next() % (len as u64 - 1)) as usize + 1;
                offs[at] = offs[at - 1] - 1;
                assert!(decreases(&offs), "{len} offsets, a decrease at {at}");
            }
        }
    }
}

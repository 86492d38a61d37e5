//! From a fused program to a plan (`schedule`): target-independent, the
//! last phase of the pipeline (`exec::pipeline`).
//!
//! 1. Every array argument of a kernel becomes a variable: a kernel whose
//!    argument is another computation (as in programs compiled without
//!    fusion) gets that computation let-bound before it, so that kernels
//!    only ever read arrays of the environment (Accelerate's schedules do
//!    the same). Delayed arguments stay: they are part of their consumer.
//! 2. Every producer (`generate`, `map`, `zip_with`, `backpermute`,
//!    `replicate`, `slice`, a manifest `delayed`) is put in delayed form by
//!    fusion's own combinators (`trafo::fusion::cunctation`), so that one
//!    generate skeleton computes them all, with the same checks; a
//!    producer that is its argument unchanged is no kernel at all.
//! 3. What is left of the program (let, variables, tuples, use, unit,
//!    reshape, acond, awhile) is the host program, launching kernels where
//!    the tree says, numbered in the order the tree is read.
//!
//! Keeps: the meaning, every check, and the order in which kernels are
//! numbered (their names, and so the generated code, depend on it).
//! Linear in the program's size: each node is visited once, and the
//! types a kernel needs are those of its own node's arguments.

use super::{Arg, Cmd, Fold, FoldSeg, Generate, Kernel, Permute, Program, Scan, Skeleton, Source, Stencil};
use accelerate_base::array::{ArrayTy, ArraysTy, EltTy};
use accelerate_base::error::{Error, Result};
use accelerate_ir::verify::{acc_ty, exp_ty};
use accelerate_ir::*;
use accelerate_opt::avars::shift_acc;
use accelerate_opt::fusion::Cunctation;

/// Schedules a (fused, verified) program.
pub fn schedule(p: &accelerate_ir::Program) -> Result<Program> {
    let mut s = Scheduler { aenv: p.params.clone(), kernels: Vec::new() };
    let (body, result) = s.acc(&p.body)?;
    let row_groups = super::rows::row_groups(&body, &s.kernels);
    Ok(Program { params: p.params.clone(), body, kernels: s.kernels, result, row_groups })
}

struct Scheduler {
    aenv: Vec<ArraysTy>,
    kernels: Vec<Kernel>,
}

fn internal(m: String) -> Error {
    Error::Internal(m)
}

impl Scheduler {
    fn acc(&mut self, a: &OpenAcc) -> Result<(Cmd, ArraysTy)> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.acc_inner(a))
    }

    fn acc_inner(&mut self, a: &OpenAcc) -> Result<(Cmd, ArraysTy)> {
        Ok(match &a.kind {
            AccKind::Let(b, body) => {
                let (cb, tb) = self.acc(b)?;
                self.aenv.push(tb);
                let r = self.acc(body);
                self.aenv.pop();
                let (cbody, tbody) = r?;
                (Cmd::Let(Box::new(cb), Box::new(cbody)), tbody)
            }
            AccKind::Var(i) => {
                let t = self.aenv.get(self.aenv.len().wrapping_sub(i + 1)).cloned();
                (Cmd::Var(*i), t.ok_or_else(|| internal(format!("array variable {i} unbound")))?)
            }
            AccKind::Tuple(ts) => {
                let (cs, tys): (Vec<_>, Vec<_>) =
                    ts.iter().map(|t| self.acc(t)).collect::<Result<Vec<_>>>()?.into_iter().unzip();
                (Cmd::Tuple(cs), ArraysTy::Tuple(tys))
            }
            AccKind::Prj(i, t) => {
                let (c, ty) = self.acc(t)?;
                let ty = match ty {
                    ArraysTy::Tuple(mut ts) if *i < ts.len() => ts.swap_remove(*i),
                    other => return Err(internal(format!("projection {i} of {other}"))),
                };
                (Cmd::Prj(*i, Box::new(c)), ty)
            }
            AccKind::Unzip(t) => {
                let (c, ty) = self.acc(t)?;
                let ty = match ty.array().and_then(ArrayTy::unzipped) {
                    Some(t) => t,
                    None => return Err(internal(format!("unzip of {ty}"))),
                };
                (Cmd::Unzip(Box::new(c)), ty)
            }
            AccKind::Use(d) => (Cmd::Use(d.clone()), ArraysTy::Array(d.ty())),
            AccKind::Unit(e) => {
                let elt = exp_ty(e, &mut Vec::new(), &self.aenv).map_err(internal)?;
                (Cmd::Unit(e.clone(), elt.clone()), ArraysTy::Array(ArrayTy { rank: 0, elt }))
            }
            AccKind::Reshape { shape, array } => {
                let (c, ty) = self.acc(array)?;
                let rank = exp_ty(shape, &mut Vec::new(), &self.aenv)
                    .map_err(internal)?
                    .shape_rank()
                    .ok_or_else(|| internal("reshape to a non-shape".into()))?;
                let elt = ty.array().ok_or_else(|| internal("reshape of a tuple".into()))?.elt.clone();
                let cmd = Cmd::Reshape { shape: shape.clone(), array: Box::new(c), loc: a.loc };
                (cmd, ArraysTy::Array(ArrayTy { rank, elt }))
            }
            AccKind::Acond { cond, then_, else_ } => {
                let (ct, ty) = self.acc(then_)?;
                let (ce, _) = self.acc(else_)?;
                (Cmd::Acond { cond: cond.clone(), then_: Box::new(ct), else_: Box::new(ce) }, ty)
            }
            AccKind::Awhile { pred, body, init } => {
                let (ci, ty) = self.acc(init)?;
                self.aenv.push(pred.param.clone());
                let p = self.acc(&pred.body);
                let b = self.acc(&body.body);
                self.aenv.pop();
                let cmd = Cmd::Awhile { pred: Box::new(p?.0), body: Box::new(b?.0), init: Box::new(ci) };
                (cmd, ty)
            }
            AccKind::Foreign { func, fallback, arg } => {
                let (ca, _) = self.acc(arg)?;
                let fallback = match fallback {
                    Some(fallback) => {
                        self.aenv.push(fallback.param.clone());
                        let f = self.acc(&fallback.body);
                        self.aenv.pop();
                        Some(Box::new(f?.0))
                    }
                    None => None,
                };
                let cmd = Cmd::Foreign { func: func.clone(), fallback, arg: Box::new(ca), loc: a.loc };
                (cmd, func.result.clone())
            }
            _ => match bind_arguments(a) {
                Some(bound) => self.acc(&bound)?,
                None => self.kernel(a)?,
            },
        })
    }

    /// The type of an array variable in scope.
    fn var_ty(&self, v: usize) -> Result<ArrayTy> {
        match self.aenv.len().checked_sub(v + 1).map(|k| &self.aenv[k]) {
            Some(ArraysTy::Array(t)) => Ok(t.clone()),
            Some(other) => Err(internal(format!("kernel input {v} is a tuple {other}"))),
            None => Err(internal(format!("array variable {v} unbound"))),
        }
    }

    /// A kernel's argument: a variable or a delayed array.
    fn arg(&self, x: &OpenAcc) -> Result<Arg> {
        match &x.kind {
            AccKind::Var(v) => Ok(Arg { source: Source::Manifest(*v), ty: self.var_ty(*v)? }),
            AccKind::Delayed(d) => {
                let rank = d.rank();
                let elt = verify::fun_ty(&d.index, &[EltTy::shape(rank)], &self.aenv).map_err(internal)?;
                Ok(Arg { source: Source::Delayed(Box::new(d.clone())), ty: ArrayTy { rank, elt } })
            }
            other => Err(internal(format!("a kernel argument is a variable or delayed, not {other:?}"))),
        }
    }

    /// A kernel whose array arguments are variables or delayed arrays.
    fn kernel(&mut self, a: &OpenAcc) -> Result<(Cmd, ArraysTy)> {
        let ty = acc_ty(a, &mut self.aenv).map_err(internal)?;
        let out = match (&ty, &a.kind) {
            (ArraysTy::Array(out), _) => out.clone(),
            // a fold that keeps its source: the kernel's result is the fold's
            (ArraysTy::Tuple(ts), AccKind::FoldKeep { .. }) if ts.len() == 2 => match &ts[1] {
                ArraysTy::Array(out) => out.clone(),
                other => return Err(internal(format!("fold_keep of {other}"))),
            },
            _ => return Err(internal("a kernel of tuple type".into())),
        };
        let loc = a.loc;
        let op = a.op_name();
        let var = |x: &OpenAcc| match x.kind {
            AccKind::Var(v) => Ok(v),
            _ => Err(internal(format!("{op}: an argument is not a variable after scheduling"))),
        };
        let skeleton = match &a.kind {
            AccKind::Generate { .. }
            | AccKind::Map { .. }
            | AccKind::ZipWith { .. }
            | AccKind::Backpermute { .. }
            | AccKind::Replicate { .. }
            | AccKind::Slice { .. }
            | AccKind::Delayed(_) => {
                let c = match &a.kind {
                    AccKind::Generate { shape, f } => {
                        Cunctation::Yield { shape: shape.clone(), index: f.clone(), linear: None }
                    }
                    AccKind::Delayed(d) => Cunctation::Yield {
                        shape: d.shape.clone(),
                        index: d.index.clone(),
                        linear: Some(d.linear.clone()),
                    },
                    AccKind::Map { f, array } => Cunctation::Done(var(array)?).map(f.clone()),
                    AccKind::ZipWith { f, a: x, b: y } => Cunctation::zip_with(
                        f.clone(),
                        Cunctation::Done(var(x)?),
                        Cunctation::Done(var(y)?),
                        out.rank,
                        loc,
                    ),
                    AccKind::Backpermute { shape, f, array } => {
                        Cunctation::Done(var(array)?).backpermute(shape.clone(), f.clone(), loc)
                    }
                    AccKind::Replicate { spec, slix, array } => {
                        Cunctation::Done(var(array)?).replicate(spec, slix, loc)
                    }
                    AccKind::Slice { spec, slix, array } => {
                        Cunctation::Done(var(array)?).slice(spec, slix, loc)
                    }
                    _ => unreachable!("a producer"),
                };
                let arg = c.into_arg(out.rank, loc);
                let source = match &arg.kind {
                    // the producer is its argument, unchanged
                    AccKind::Var(v) => return Ok((Cmd::Var(*v), ty)),
                    AccKind::Delayed(d) => Source::Delayed(Box::new(d.clone())),
                    other => return Err(internal(format!("a producer in delayed form is {other:?}"))),
                };
                let src = Arg { source, ty: out.clone() };
                Skeleton::Generate(Generate { src })
            }
            AccKind::Fold { f, seed, array } => {
                let src = self.arg(array)?;
                Skeleton::Fold(Fold { f: f.clone(), seed: seed.clone(), src, keep: false })
            }
            AccKind::FoldKeep { f, seed, array } => {
                let src = self.arg(array)?;
                Skeleton::Fold(Fold { f: f.clone(), seed: seed.clone(), src, keep: true })
            }
            AccKind::Scan { dir, f, seed, array } => {
                let src = self.arg(array)?;
                Skeleton::Scan(Scan { dir: *dir, f: f.clone(), seed: seed.clone(), src })
            }
            AccKind::FoldSeg { f, seed, array, offsets } => {
                let src = self.arg(array)?;
                let offsets = var(offsets)?;
                Skeleton::FoldSeg(FoldSeg { f: f.clone(), seed: seed.clone(), src, offsets })
            }
            AccKind::Permute { combine, defaults, index, source } => {
                let src = self.arg(source)?;
                let defaults = var(defaults)?;
                Skeleton::Permute(Permute { combine: combine.clone(), index: index.clone(), defaults, src })
            }
            AccKind::Stencil { f, args } => {
                let mut sargs = Vec::new();
                for s in args {
                    let src = self.arg(&s.array)?;
                    sargs.push(super::StencilArg {
                        extents: s.extents.clone(),
                        boundary: s.boundary.clone(),
                        src,
                    });
                }
                Skeleton::Stencil(Stencil { f: f.clone(), args: sargs })
            }
            other => return Err(internal(format!("not a kernel: {other:?}"))),
        };
        let mut reads = skeleton.arrays_read();
        reads.sort_unstable();
        reads.dedup();
        let inputs = reads.into_iter().map(|v| Ok((v, self.var_ty(v)?))).collect::<Result<Vec<_>>>()?;
        let name = format!("k{}", self.kernels.len());
        self.kernels.push(Kernel { name, op, loc, out, inputs, skeleton });
        Ok((Cmd::Kernel(self.kernels.len() - 1), ty))
    }
}

impl Source {
    /// The array variables reading this source reads.
    pub fn arrays(&self, out: &mut Vec<usize>) {
        match self {
            Source::Manifest(v) => out.push(*v),
            Source::Delayed(d) => {
                visit::arrays_read(&d.index.body, out);
                visit::arrays_read(&d.linear.body, out);
            }
        }
    }
}

/// The array arguments of a kernel that must be variables (not those a
/// consumer may take delayed).
fn manifest_args(a: &mut OpenAcc) -> Vec<&mut OpenAcc> {
    let delayed = |x: &OpenAcc| matches!(x.kind, AccKind::Delayed(_));
    match &mut a.kind {
        AccKind::Map { array, .. }
        | AccKind::Backpermute { array, .. }
        | AccKind::Replicate { array, .. }
        | AccKind::Slice { array, .. } => vec![&mut **array],
        AccKind::ZipWith { a, b, .. } => vec![&mut **a, &mut **b],
        AccKind::Fold { array, .. } | AccKind::FoldKeep { array, .. } | AccKind::Scan { array, .. } => {
            if delayed(array) {
                vec![]
            } else {
                vec![&mut **array]
            }
        }
        AccKind::FoldSeg { array, offsets, .. } => {
            let mut v = vec![&mut **offsets];
            if !delayed(array) {
                v.push(&mut **array);
            }
            v
        }
        AccKind::Permute { defaults, source, .. } => {
            let mut v = vec![&mut **defaults];
            if !delayed(source) {
                v.push(&mut **source);
            }
            v
        }
        AccKind::Stencil { args, .. } => {
            args.iter_mut().filter(|s| !delayed(&s.array)).map(|s| &mut *s.array).collect()
        }
        _ => vec![],
    }
}

/// `op(.., e1, .., en, ..)` with arguments that are not variables becomes
/// `let x1 = e1 in .. let xn = en in op(.., x1, .., xn, ..)`; `None` when
/// every argument already is a variable.
fn bind_arguments(a: &OpenAcc) -> Option<OpenAcc> {
    let mut node = a.clone();
    let n = manifest_args(&mut node).iter().filter(|x| !matches!(x.kind, AccKind::Var(_))).count();
    if n == 0 {
        return None;
    }
    let loc = a.loc;
    let mut bound = Vec::new();
    let mut which = Vec::new();
    for (k, x) in manifest_args(&mut node).into_iter().enumerate() {
        if !matches!(x.kind, AccKind::Var(_)) {
            bound.push(std::mem::replace(x, OpenAcc::new(AccKind::Var(0), loc)));
            which.push(k);
        }
    }
    // the node moves under n binders; the placeholders are set afterwards
    shift_acc(&mut node, 0, n as isize);
    let mut next = 0;
    for (k, x) in manifest_args(&mut node).into_iter().enumerate() {
        if which.contains(&k) {
            x.kind = AccKind::Var(n - 1 - next);
            next += 1;
        }
    }
    let mut out = node;
    for (j, mut b) in bound.into_iter().enumerate().rev() {
        shift_acc(&mut b, 0, j as isize);
        out = OpenAcc::new(AccKind::Let(Box::new(b), Box::new(out)), loc);
    }
    Some(out)
}

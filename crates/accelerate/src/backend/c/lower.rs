//! From a fused program to host commands and kernels (DESIGN.md's
//! "schedule" stage), for both C-family backends: the steps below know
//! nothing of the target; each kernel's code is written by the backend's
//! own skeleton writers, which it hands over as a `Target`.
//!
//! 1. Every array argument of a kernel becomes a variable: a kernel whose
//!    argument is another computation (as in programs compiled without
//!    fusion) gets that computation let-bound before it, so that kernels
//!    only ever read arrays of the environment (Accelerate's schedules do
//!    the same). Delayed arguments stay: they are part of their consumer.
//! 2. Every producer (`generate`, `map`, `zip_with`, `backpermute`,
//!    `replicate`, `slice`, a manifest `delayed`) is put in delayed form by
//!    fusion's own combinators (`trafo::fusion::cunctation`), so that one
//!    generate skeleton computes them all, with the same checks.
//! 3. What is left of the program (let, variables, tuples, use, unit,
//!    reshape, acond, awhile) is a tree of host commands (`Cmd`) that the
//!    executor walks, launching kernels where the tree says.

use super::kernel::{atomic, Kernel, KernelParts, ShapeOf, Skeleton, Source};
use crate::array::{ArrayData, ArrayTy, ArraysTy, EltTy};
use crate::exec::error::{Error, Result, SrcLoc};
use crate::ir::verify::{acc_ty, exp_ty};
use crate::ir::*;
use crate::trafo::avars::shift_acc;
use crate::trafo::fusion::Cunctation;
use std::sync::Arc;

/// A host command.
#[derive(Debug)]
pub(crate) enum Cmd {
    /// `let`: a binding whose evaluation fails fails only its uses (Note
    /// [Deferred errors]).
    Let(Box<Cmd>, Box<Cmd>),
    Var(usize),
    Tuple(Vec<Cmd>),
    Prj(usize, Box<Cmd>),
    Use(Arc<ArrayData>),
    /// A rank-0 array of a closed expression, evaluated on the host.
    Unit(OpenExp, EltTy),
    Reshape {
        shape: OpenExp,
        array: Box<Cmd>,
        loc: SrcLoc,
    },
    Acond {
        cond: OpenExp,
        then_: Box<Cmd>,
        else_: Box<Cmd>,
    },
    Awhile {
        pred: Box<Cmd>,
        body: Box<Cmd>,
        init: Box<Cmd>,
    },
    /// Kernel number `k` of the program.
    Kernel(usize),
}

/// A lowered program: its commands, its kernels and their source (C or
/// CUDA C, without the prelude).
pub(crate) struct Lowered {
    pub body: Cmd,
    pub kernels: Vec<Kernel>,
    pub source: String,
}

/// A backend's code generation for one kernel, as the lowering calls it:
/// its kernel generator `G` (made by `kernel_gen` from the kernel's name,
/// the array variables it reads and the environment), one writer per
/// skeleton (each backend's `generate::generate`, `fold::fold`, ...), and
/// `finish`, which hands back what code generation found out about the
/// kernel.
pub(crate) struct Target<G> {
    pub kernel_gen: fn(String, Vec<usize>, &[ArraysTy]) -> G,
    pub generate: GenerateWriter<G>,
    pub fold: FoldWriter<G>,
    pub scan: ScanWriter<G>,
    pub fold_seg: FoldSegWriter<G>,
    pub permute: PermuteWriter<G>,
    pub stencil: StencilWriter<G>,
    pub finish: fn(G) -> KernelParts,
}

/// `generate(k, out, src, rank, elt, what, loc)`.
pub(crate) type GenerateWriter<G> = fn(&mut G, &mut String, &Source, usize, &EltTy, &str, SrcLoc);
/// `fold(k, out, f, seed, src, rank, elt, what, loc)`, `rank` the source's.
pub(crate) type FoldWriter<G> =
    fn(&mut G, &mut String, &Fun, Option<&OpenExp>, &Source, usize, &EltTy, &str, SrcLoc);
/// `scan(k, out, f, seed, dir, src, rank, elt, what, loc)`.
pub(crate) type ScanWriter<G> =
    fn(&mut G, &mut String, &Fun, Option<&OpenExp>, Direction, &Source, usize, &EltTy, &str, SrcLoc);
/// `fold_seg(k, out, f, seed, src, offsets, rank, elt, what, loc)`.
pub(crate) type FoldSegWriter<G> =
    fn(&mut G, &mut String, &Fun, Option<&OpenExp>, &Source, usize, usize, &EltTy, &str, SrcLoc);
/// `permute(k, out, combine, index, src, src_rank, res_rank, elt, what, loc)`.
pub(crate) type PermuteWriter<G> =
    fn(&mut G, &mut String, &Fun, &Fun, &Source, usize, usize, &EltTy, &str, SrcLoc);
/// `stencil(k, out, f, args, sources, arg_elts, rank, elt, what, loc)`.
pub(crate) type StencilWriter<G> =
    fn(&mut G, &mut String, &Fun, &[StencilArg], &[Source], &[EltTy], usize, &EltTy, &str, SrcLoc);

/// Lowers a (fused, verified) program, writing its kernels for `target`.
pub(crate) fn lower_program<G>(p: &Program, target: &Target<G>) -> Result<Lowered> {
    let mut l = Lowering { target, aenv: p.params.clone(), kernels: Vec::new(), source: String::new() };
    let (body, _) = l.acc(&p.body)?;
    Ok(Lowered { body, kernels: l.kernels, source: l.source })
}

struct Lowering<'t, G> {
    target: &'t Target<G>,
    aenv: Vec<ArraysTy>,
    kernels: Vec<Kernel>,
    source: String,
}

fn internal(m: String) -> Error {
    Error::Internal(m)
}

impl<G> Lowering<'_, G> {
    fn acc(&mut self, a: &OpenAcc) -> Result<(Cmd, ArraysTy)> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.acc_inner(a))
    }

    fn acc_inner(&mut self, a: &OpenAcc) -> Result<(Cmd, ArraysTy)> {
        Ok(match &a.kind {
            AccKind::Let(b, body) => {
                let (cb, tb) = self.acc(b)?;
                self.aenv.push(tb.clone());
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
            _ => match bind_arguments(a) {
                Some(bound) => self.acc(&bound)?,
                None => self.kernel(a)?,
            },
        })
    }

    /// A kernel whose array arguments are variables or delayed arrays.
    fn kernel(&mut self, a: &OpenAcc) -> Result<(Cmd, ArraysTy)> {
        let ty = acc_ty(a, &mut self.aenv).map_err(internal)?;
        let ArraysTy::Array(res) = ty.clone() else { return Err(internal("a kernel of tuple type".into())) };
        let loc = a.loc;
        let what = a.op_name();
        let name = format!("k{}", self.kernels.len());
        let var = |x: &OpenAcc| match x.kind {
            AccKind::Var(v) => Ok(v),
            _ => Err(internal(format!("{what}: an argument is not a variable after lowering"))),
        };
        let mut code = String::new();
        let (skeleton, kg) = match &a.kind {
            AccKind::Generate { .. }
            | AccKind::Map { .. }
            | AccKind::ZipWith { .. }
            | AccKind::Backpermute { .. }
            | AccKind::Replicate { .. }
            | AccKind::Slice { .. }
            | AccKind::Delayed { .. } => {
                let c = match &a.kind {
                    AccKind::Generate { shape, f } => {
                        Cunctation::Yield { shape: shape.clone(), index: f.clone(), linear: None }
                    }
                    AccKind::Delayed { shape, index, linear } => Cunctation::Yield {
                        shape: shape.clone(),
                        index: index.clone(),
                        linear: Some(linear.clone()),
                    },
                    AccKind::Map { f, array } => Cunctation::Done(var(array)?).map(f.clone()),
                    AccKind::ZipWith { f, a: x, b: y } => Cunctation::zip_with(
                        f.clone(),
                        Cunctation::Done(var(x)?),
                        Cunctation::Done(var(y)?),
                        res.rank,
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
                let arg = c.into_arg(res.rank, loc);
                if let AccKind::Var(v) = arg.kind {
                    // the producer is its argument, unchanged
                    return Ok((Cmd::Var(v), ty));
                }
                let src = Source::of(&arg);
                let mut inputs = Vec::new();
                src.arrays(&mut inputs);
                let mut kg = (self.target.kernel_gen)(name.clone(), inputs, &self.aenv);
                (self.target.generate)(&mut kg, &mut code, &src, res.rank, &res.elt, what, loc);
                (Skeleton::Generate { shape: ShapeOf::of(&src) }, kg)
            }
            AccKind::Fold { f, seed, array } | AccKind::Scan { f, seed, array, .. } => {
                let src = Source::of(array);
                let mut inputs = Vec::new();
                src.arrays(&mut inputs);
                visit::arrays_read(&f.body, &mut inputs);
                seed.iter().for_each(|z| visit::arrays_read(z, &mut inputs));
                let mut kg = (self.target.kernel_gen)(name.clone(), inputs, &self.aenv);
                let rank = res.rank + 1;
                let sk = match &a.kind {
                    AccKind::Fold { .. } => {
                        (self.target.fold)(
                            &mut kg,
                            &mut code,
                            f,
                            seed.as_ref(),
                            &src,
                            rank,
                            &res.elt,
                            what,
                            loc,
                        );
                        Skeleton::Fold { seed: seed.is_some(), source: ShapeOf::of(&src), op: what }
                    }
                    AccKind::Scan { dir, .. } => {
                        let rank = res.rank;
                        (self.target.scan)(
                            &mut kg,
                            &mut code,
                            f,
                            seed.as_ref(),
                            *dir,
                            &src,
                            rank,
                            &res.elt,
                            what,
                            loc,
                        );
                        Skeleton::Scan {
                            seed: seed.is_some(),
                            dir: *dir,
                            source: ShapeOf::of(&src),
                            op: what,
                        }
                    }
                    _ => unreachable!("fold or scan"),
                };
                (sk, kg)
            }
            AccKind::FoldSeg { f, seed, array, offsets } => {
                let src = Source::of(array);
                let offs = var(offsets)?;
                let mut inputs = vec![offs];
                src.arrays(&mut inputs);
                visit::arrays_read(&f.body, &mut inputs);
                seed.iter().for_each(|z| visit::arrays_read(z, &mut inputs));
                let mut kg = (self.target.kernel_gen)(name.clone(), inputs, &self.aenv);
                (self.target.fold_seg)(
                    &mut kg,
                    &mut code,
                    f,
                    seed.as_ref(),
                    &src,
                    offs,
                    res.rank,
                    &res.elt,
                    what,
                    loc,
                );
                let sk = Skeleton::FoldSeg {
                    seed: seed.is_some(),
                    source: ShapeOf::of(&src),
                    offsets: offs,
                    op: what,
                };
                (sk, kg)
            }
            AccKind::Permute { combine, defaults, index, source } => {
                let src = Source::of(source);
                let defaults = var(defaults)?;
                let mut inputs = Vec::new();
                src.arrays(&mut inputs);
                visit::arrays_read(&combine.body, &mut inputs);
                visit::arrays_read(&index.body, &mut inputs);
                let src_rank = index.params[0].shape_rank().unwrap_or(0);
                let mut kg = (self.target.kernel_gen)(name.clone(), inputs, &self.aenv);
                (self.target.permute)(
                    &mut kg, &mut code, combine, index, &src, src_rank, res.rank, &res.elt, what, loc,
                );
                let atomic = atomic(&res.elt);
                (Skeleton::Permute { defaults, source: ShapeOf::of(&src), atomic }, kg)
            }
            AccKind::Stencil { f, args } => {
                let sources: Vec<Source> = args.iter().map(|s| Source::of(&s.array)).collect();
                let mut inputs = Vec::new();
                sources.iter().for_each(|s| s.arrays(&mut inputs));
                visit::arrays_read(&f.body, &mut inputs);
                for s in args {
                    match &s.boundary {
                        Boundary::Constant(c) => visit::arrays_read(c, &mut inputs),
                        Boundary::Function(g) => visit::arrays_read(&g.body, &mut inputs),
                        _ => {}
                    }
                }
                let mut elts = Vec::new();
                for s in args {
                    let t = match &s.array.kind {
                        AccKind::Delayed { shape, index, linear } => {
                            let _ = (shape, linear);
                            let rank = index.params[0].shape_rank().unwrap_or(0);
                            verify::fun_ty(index, &[EltTy::shape(rank)], &self.aenv).map_err(internal)?
                        }
                        _ => match acc_ty(&s.array, &mut self.aenv).map_err(internal)? {
                            ArraysTy::Array(t) => t.elt,
                            other => return Err(internal(format!("stencil of {other}"))),
                        },
                    };
                    elts.push(t);
                }
                let mut kg = (self.target.kernel_gen)(name.clone(), inputs, &self.aenv);
                (self.target.stencil)(
                    &mut kg, &mut code, f, args, &sources, &elts, res.rank, &res.elt, what, loc,
                );
                let sk = Skeleton::Stencil {
                    sources: sources.iter().map(ShapeOf::of).collect(),
                    extents: args.iter().map(|s| s.extents.clone()).collect(),
                };
                (sk, kg)
            }
            other => return Err(internal(format!("not a kernel: {other:?}"))),
        };
        self.source.push_str(&code);
        let KernelParts { inputs, sites, consts } = (self.target.finish)(kg);
        self.kernels.push(Kernel { name, skeleton, inputs, elt: res.elt.clone(), sites, loc, consts });
        Ok((Cmd::Kernel(self.kernels.len() - 1), ty))
    }
}

/// The array arguments of a kernel that must be variables (not those a
/// consumer may take delayed).
fn manifest_args(a: &mut OpenAcc) -> Vec<&mut OpenAcc> {
    let delayed = |x: &OpenAcc| matches!(x.kind, AccKind::Delayed { .. });
    match &mut a.kind {
        AccKind::Map { array, .. }
        | AccKind::Backpermute { array, .. }
        | AccKind::Replicate { array, .. }
        | AccKind::Slice { array, .. } => vec![&mut **array],
        AccKind::ZipWith { a, b, .. } => vec![&mut **a, &mut **b],
        AccKind::Fold { array, .. } | AccKind::Scan { array, .. } => {
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

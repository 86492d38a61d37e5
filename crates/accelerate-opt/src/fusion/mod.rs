//! Array fusion (ICFP'13 §4): producers collapse into delayed arrays, and
//! consumers embed them, so that a chain of collective operations runs as
//! one loop that writes only its result.
//!
//! The pass is one bottom-up traversal, `Fuser::embed` (the paper's
//! `embedAcc`), that turns each array term into an [`Embed`]: the manifest
//! terms it needs, let-bound and floated out of the producer chain (§4.4),
//! and a [`Cunctation`] describing the array itself (`Done`, `Yield` or
//! `Step`, §4.2). Then:
//!
//! - *Producer/producer fusion* (§4.2): `map`, `zip_with` (of any two
//!   forms), `backpermute`, `generate`, `replicate` and `slice` combine
//!   their argument's cunctation into a new one; nothing is computed.
//! - *Consumer/producer fusion* (§4.3): `fold`, `fold1`, `fold_seg`'s
//!   array, every scan, `permute`'s source and the stencils' arguments take
//!   a delayed argument (`AccKind::Delayed`, Note [Delayed arrays]) with a
//!   multidimensional and a linear index function; a stencil reads each
//!   element several times, so only a cheap producer (Note [The cost
//!   rule]) is embedded into it. Every other argument (`permute`'s
//!   defaults, `fold_seg`'s offsets, `reshape`, `awhile`'s initial value,
//!   tuple components, ...) is computed manifest.
//! - *Let-bound producers* (§4.4, Accelerate's `aletD`): a producer bound
//!   by a let is inlined into its body when that repeats no work (Note
//!   [Counting uses]: uses that read only its shape do not count, a cheap
//!   producer may be inlined anywhere); otherwise it is computed and stays
//!   manifest, like p1 of the paper's Figure 3. Its floated bindings stay
//!   bound above it either way, so `map g (let xs = use .. in zip_with f
//!   xs xs)` fuses into one `map` of the `use`.
//! - *Tuples* (`002_...` §5.3): `prj i (a, b)` is its component, and a let
//!   bound to a tuple whose variable is only projected is split into one
//!   let per component, so that each component fuses on its own.
//! - The branches of `acond` and the functions of `awhile` are fused as
//!   programs of their own: nothing floats out of them, since it would run
//!   whether or not the branch is taken or the loop iterates.
//!
//! Invariants guaranteed: the output type-checks (`ir::verify`), every
//! `Delayed` is a consumer's argument, and the program computes what its
//! input did, except that an element no result depends on is no longer
//! computed, so its error (a division by zero in a `map` whose result is
//! only partly read) is not raised (`docs/semantics.md`, "Fusion").

mod cunctation;

use crate::avars::{self, parts_mut, Part};
use accelerate_base::array::ArraysTy;
use accelerate_base::error::{Error, Result};
use accelerate_ir::verify::{acc_ty, exp_ty};
use accelerate_ir::*;
pub use cunctation::Cunctation;

/// An array term during fusion: manifest terms let-bound outside it (each
/// in the scope of those before it) and the array itself, in the scope of
/// all of them.
struct Embed {
    binds: Vec<OpenAcc>,
    cc: Cunctation,
}

struct Fuser {
    /// The types of the array variables in scope, innermost last: the
    /// enclosing binders, then the bindings floated so far.
    aenv: Vec<ArraysTy>,
}

/// Fuses a program.
pub fn fuse_program(p: Program) -> Result<Program> {
    let Program { params, body } = p;
    let mut f = Fuser { aenv: params.clone() };
    let body = f.fuse(body)?;
    Ok(Program { params, body })
}

fn internal(e: String) -> Error {
    Error::Internal(format!("fusion produced an ill-typed term: {e}"))
}

/// Which arguments of a manifest operation may be delayed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ArgKind {
    Manifest,
    Delayed,
    /// Delayed only if cheap to recompute (a stencil's argument).
    DelayedIfCheap,
}

fn arg_kinds(a: &OpenAcc) -> Vec<ArgKind> {
    use ArgKind::*;
    match &a.kind {
        AccKind::Fold { .. } | AccKind::Scan { .. } => vec![Delayed],
        AccKind::FoldSeg { .. } => vec![Delayed, Manifest],
        AccKind::Permute { .. } => vec![Manifest, Delayed],
        AccKind::Stencil { args, .. } => vec![DelayedIfCheap; args.len()],
        _ => vec![],
    }
}

impl Fuser {
    /// The fused manifest term of `a`, with its floated bindings let-bound
    /// around it.
    fn fuse(&mut self, a: OpenAcc) -> Result<OpenAcc> {
        let loc = a.loc;
        let e = self.embed(a)?;
        Ok(self.wrap(e.binds, e.cc.compute(loc)))
    }

    /// `let binds in body`, dropping the bindings' types from the
    /// environment; `let x = m in x` is `m`.
    fn wrap(&mut self, mut binds: Vec<OpenAcc>, mut body: OpenAcc) -> OpenAcc {
        self.aenv.truncate(self.aenv.len() - binds.len());
        if matches!(body.kind, AccKind::Var(0)) {
            if let Some(last) = binds.pop() {
                body = last;
            }
        }
        while let Some(b) = binds.pop() {
            let loc = b.loc;
            body = OpenAcc::new(AccKind::Let(Box::new(b), Box::new(body)), loc);
        }
        body
    }

    /// Binds a manifest term (pushing its type).
    fn bind(&mut self, binds: &mut Vec<OpenAcc>, m: OpenAcc) -> Result<()> {
        let t = acc_ty(&m, &mut self.aenv).map_err(internal)?;
        self.aenv.push(t);
        binds.push(m);
        Ok(())
    }

    /// A manifest term as an embedding: bound, and `Done`.
    fn done(&mut self, mut binds: Vec<OpenAcc>, m: OpenAcc) -> Result<Embed> {
        if let AccKind::Var(v) = m.kind {
            return Ok(Embed { binds, cc: Cunctation::Done(v) });
        }
        self.bind(&mut binds, m)?;
        Ok(Embed { binds, cc: Cunctation::Done(0) })
    }

    fn embed(&mut self, a: OpenAcc) -> Result<Embed> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.embed_inner(a))
    }

    fn embed_inner(&mut self, mut a: OpenAcc) -> Result<Embed> {
        let loc = a.loc;
        let placeholder = || OpenAcc::new(AccKind::Var(0), loc);
        let take = |x: &mut Box<OpenAcc>| std::mem::replace(&mut **x, placeholder());
        match &mut a.kind {
            AccKind::Var(v) => Ok(Embed { binds: vec![], cc: Cunctation::Done(*v) }),
            AccKind::Let(..) => self.embed_let(a),
            AccKind::Generate { shape, f } => {
                let (shape, index) = (take_exp(shape), take_fun(f));
                Ok(Embed { binds: vec![], cc: Cunctation::Yield { shape, index, linear: None } })
            }
            AccKind::Map { f, array } => {
                let (mut f, array) = (take_fun(f), take(array));
                self.producer(array, |cc, n| {
                    avars::shift_exp(&mut f.body, 0, n);
                    cc.map(f)
                })
            }
            AccKind::Backpermute { shape, f, array } => {
                let (mut shape, mut p, array) = (take_exp(shape), take_fun(f), take(array));
                self.producer(array, |cc, n| {
                    avars::shift_exp(&mut shape, 0, n);
                    avars::shift_exp(&mut p.body, 0, n);
                    cc.backpermute(shape, p, loc)
                })
            }
            AccKind::Replicate { spec, slix, array } => {
                let (spec, mut slix, array) = (spec.clone(), take_exp(slix), take(array));
                self.producer(array, |cc, n| {
                    avars::shift_exp(&mut slix, 0, n);
                    cc.replicate(&spec, &slix, loc)
                })
            }
            AccKind::Slice { spec, array, slix } => {
                let (spec, mut slix, array) = (spec.clone(), take_exp(slix), take(array));
                self.producer(array, |cc, n| {
                    avars::shift_exp(&mut slix, 0, n);
                    cc.slice(&spec, &slix, loc)
                })
            }
            AccKind::Reshape { shape, array } => {
                let (mut shape, array) = (take_exp(shape), take(array));
                let e = self.embed(array)?;
                avars::shift_exp(&mut shape, 0, e.binds.len() as isize);
                if e.cc.is_done() {
                    // a manifest array is reshaped where it lies
                    let m = OpenAcc::new(AccKind::Reshape { shape, array: Box::new(e.cc.compute(loc)) }, loc);
                    return self.done(e.binds, m);
                }
                let t = exp_ty(&shape, &mut Vec::new(), &self.aenv).map_err(internal)?;
                let rank = t.shape_rank().ok_or_else(|| internal(format!("reshape to a {t}")))?;
                let src_rank = e.cc.rank(&self.aenv);
                Ok(Embed { cc: e.cc.reshape(shape, rank, src_rank, loc), binds: e.binds })
            }
            AccKind::ZipWith { f, a: x, b: y } => {
                let (f, x, mut y) = (take_fun(f), take(x), take(y));
                let ex = self.embed(x)?;
                let n1 = ex.binds.len() as isize;
                avars::shift_acc(&mut y, 0, n1);
                let ey = self.embed(y)?;
                let n2 = ey.binds.len() as isize;
                let mut f = f;
                avars::shift_exp(&mut f.body, 0, n1 + n2);
                let mut cx = ex.cc;
                cx.shift(0, n2);
                let rank = cx.rank(&self.aenv);
                let cc = Cunctation::zip_with(f, cx, ey.cc, rank, loc);
                Ok(Embed { binds: ex.binds.into_iter().chain(ey.binds).collect(), cc })
            }
            AccKind::Prj(i, t) if matches!(t.kind, AccKind::Tuple(_)) => {
                let AccKind::Tuple(mut ts) = take(t).kind_owned() else { unreachable!("matched a tuple") };
                let i = *i;
                if i >= ts.len() {
                    return Err(Error::Internal(format!("projection {i} of a tuple of {}", ts.len())));
                }
                self.embed(ts.swap_remove(i))
            }
            AccKind::Acond { cond, then_, else_ } => {
                let (t, e) = (take(then_), take(else_));
                let (t, e) = (self.fuse(t)?, self.fuse(e)?);
                let cond = take_exp(cond);
                let m = OpenAcc::new(AccKind::Acond { cond, then_: Box::new(t), else_: Box::new(e) }, loc);
                self.done(vec![], m)
            }
            AccKind::Awhile { .. } => self.embed_awhile(a),
            AccKind::Delayed(_) => Err(Error::Internal("fusion met a delayed array in its input".into())),
            _ => self.embed_manifest(a),
        }
    }

    /// A producer of one argument: the argument's embedding, transformed
    /// by `step`, which is given the number of bindings floated out of the
    /// argument (the producer's own scalar terms were written outside them
    /// and must be shifted past them).
    fn producer(
        &mut self,
        array: OpenAcc,
        step: impl FnOnce(Cunctation, isize) -> Cunctation,
    ) -> Result<Embed> {
        let e = self.embed(array)?;
        let n = e.binds.len() as isize;
        Ok(Embed { cc: step(e.cc, n), binds: e.binds })
    }

    /// A manifest operation: each array argument embedded in turn (its
    /// bindings floated), then given as a delayed array where the operation
    /// is a consumer of it, or computed otherwise.
    fn embed_manifest(&mut self, mut a: OpenAcc) -> Result<Embed> {
        let loc = a.loc;
        let kinds = arg_kinds(&a);
        let mut binds = Vec::new();
        // each argument's cunctation, valid under the first `k` bindings
        let mut embedded = Vec::new();
        for p in parts_mut(&mut a) {
            if let Part::Acc(x, 0) = p {
                let mut arg = std::mem::replace(x, OpenAcc::new(AccKind::Var(0), loc));
                avars::shift_acc(&mut arg, 0, binds.len() as isize);
                let e = self.embed(arg)?;
                binds.extend(e.binds);
                embedded.push((e.cc, binds.len()));
            }
        }
        let mut args = Vec::new();
        for (k, (mut cc, valid)) in embedded.into_iter().enumerate() {
            cc.shift(0, (binds.len() - valid) as isize);
            let kind = kinds.get(k).copied().unwrap_or(ArgKind::Manifest);
            let delayed = match kind {
                ArgKind::Delayed => true,
                ArgKind::DelayedIfCheap => cc.is_cheap(),
                ArgKind::Manifest => false,
            };
            if delayed || cc.is_done() {
                let rank = cc.rank(&self.aenv);
                args.push((cc.into_arg(rank, loc), binds.len()));
            } else if kind == ArgKind::Manifest {
                args.push((cc.compute(loc), binds.len()));
            } else {
                // a consumer reads a variable or a delayed array
                let m = cc.compute(loc);
                self.bind(&mut binds, m)?;
                args.push((OpenAcc::new(AccKind::Var(0), loc), binds.len()));
            }
        }
        let total = binds.len();
        let mut args = args.into_iter();
        for p in parts_mut(&mut a) {
            match p {
                Part::Exp(e) => avars::shift_exp(e, 0, total as isize),
                Part::Fun(f) => avars::shift_exp(&mut f.body, 0, total as isize),
                Part::Acc(x, 0) => {
                    let (mut arg, valid) = args.next().expect("one argument per array part");
                    avars::shift_acc(&mut arg, 0, (total - valid) as isize);
                    *x = arg;
                }
                Part::Acc(..) => {}
            }
        }
        self.done(binds, a)
    }

    fn embed_awhile(&mut self, a: OpenAcc) -> Result<Embed> {
        let loc = a.loc;
        let AccKind::Awhile { mut pred, mut body, init } = a.kind_owned() else { unreachable!("an awhile") };
        let e = self.embed(*init)?;
        let n = e.binds.len() as isize;
        let init = e.cc.compute(loc);
        for f in [&mut pred, &mut body] {
            avars::shift_acc(&mut f.body, 1, n);
            let b = std::mem::replace(&mut *f.body, OpenAcc::new(AccKind::Var(0), loc));
            self.aenv.push(f.param.clone());
            let fused = self.fuse(b);
            self.aenv.pop();
            *f.body = fused?;
        }
        let m = OpenAcc::new(AccKind::Awhile { pred, body, init: Box::new(init) }, loc);
        self.done(e.binds, m)
    }

    /// `let x = bound in body` (ICFP'13 §4.4, Accelerate's `aletD`).
    fn embed_let(&mut self, a: OpenAcc) -> Result<Embed> {
        let loc = a.loc;
        let AccKind::Let(bound, body) = a.kind_owned() else { unreachable!("a let") };
        let (bound, mut body) = (*bound, *body);
        let mut e1 = self.embed(bound)?;
        let is_tuple = |b: Option<&OpenAcc>| matches!(b.map(|b| &b.kind), Some(AccKind::Tuple(_)));
        if matches!(e1.cc, Cunctation::Done(0)) && is_tuple(e1.binds.last()) && only_projected(&mut body, 0) {
            // a tuple whose components are used apart: one let each
            let tuple = e1.binds.pop().expect("a tuple binding");
            self.aenv.pop();
            avars::shift_acc(&mut body, 1, e1.binds.len() as isize);
            let eb = self.embed(split_tuple_let(tuple, body))?;
            return Ok(Embed { binds: e1.binds.into_iter().chain(eb.binds).collect(), cc: eb.cc });
        }
        let n1 = e1.binds.len();
        avars::shift_acc(&mut body, 1, n1 as isize);
        let mut binds = e1.binds;
        let u = avars::uses(&mut body, 0);
        let repeats = u.in_loop || u.reads > 0 || u.arrays > 1;
        let eb = if e1.cc.is_done() || e1.cc.is_cheap() || !repeats {
            cunctation::inline(&mut body, &e1.cc);
            self.embed(body)?
        } else {
            let m = e1.cc.compute(loc);
            self.bind(&mut binds, m)?;
            self.embed(body)?
        };
        binds.extend(eb.binds);
        Ok(Embed { binds, cc: eb.cc })
    }
}

fn take_exp(e: &mut OpenExp) -> OpenExp {
    let loc = e.loc;
    std::mem::replace(e, OpenExp::new(ExpKind::Var(0), loc))
}

fn take_fun(f: &mut Fun) -> Fun {
    Fun { params: std::mem::take(&mut f.params), body: take_exp(&mut f.body) }
}

/// Is every use of array variable `var` in `a` a projection `prj i var`?
fn only_projected(a: &mut OpenAcc, var: usize) -> bool {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        match &a.kind {
            AccKind::Var(k) => return *k != var,
            AccKind::Prj(_, t) if matches!(t.kind, AccKind::Var(k) if k == var) => return true,
            _ => {}
        }
        parts_mut(a).into_iter().all(|p| match p {
            // scalar code cannot read a tuple of arrays (verifier invariant 3)
            Part::Exp(_) | Part::Fun(_) => true,
            Part::Acc(x, binders) => only_projected(x, var + binders),
        })
    })
}

/// `let t = (c0, .., cn-1) in body`, with `t` only projected, as
/// `let c0 = c0 in .. let cn-1 = cn-1 in body` (`prj i t` the variable of
/// component `i`).
fn split_tuple_let(bound: OpenAcc, mut body: OpenAcc) -> OpenAcc {
    let AccKind::Tuple(comps) = bound.kind_owned() else { unreachable!("a tuple") };
    let n = comps.len();
    // body: variable 0 is the tuple; it becomes n variables
    fn go(a: &mut OpenAcc, depth: usize, n: usize) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            if let AccKind::Prj(i, t) = &a.kind {
                if matches!(t.kind, AccKind::Var(k) if k == depth) {
                    a.kind = AccKind::Var(depth + n - 1 - i);
                    return;
                }
            }
            if let AccKind::Var(k) = &mut a.kind {
                if *k > depth {
                    *k += n - 1;
                }
                return;
            }
            for p in parts_mut(a) {
                match p {
                    Part::Exp(e) => avars::exp_arrays_mut(e, &mut |k| {
                        if *k > depth {
                            *k += n - 1
                        }
                    }),
                    Part::Fun(f) => avars::exp_arrays_mut(&mut f.body, &mut |k| {
                        if *k > depth {
                            *k += n - 1
                        }
                    }),
                    Part::Acc(x, binders) => go(x, depth + binders, n),
                }
            }
        })
    }
    if n == 0 {
        // nothing is bound: drop the binder
        avars::shift_acc(&mut body, 1, -1);
        return body;
    }
    go(&mut body, 0, n);
    let mut out = body;
    for (i, mut c) in comps.into_iter().enumerate().rev() {
        avars::shift_acc(&mut c, 0, i as isize);
        let loc = c.loc;
        out = OpenAcc::new(AccKind::Let(Box::new(c), Box::new(out)), loc);
    }
    out
}

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
//!   their argument's cunctation into a new one; nothing is computed,
//!   except that a `replicate` that adds dimensions has a dear argument
//!   (a loop, a transcendental function) computed first, once (Note
//!   [Replicated work]).
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
//! The pass never shifts or substitutes into a term it has already built
//! (Note [Array levels in fusion]), so its cost is linear in the program,
//! however long its chains of producers and lets.
//!
//! Invariants guaranteed: the output type-checks (`ir::verify`), every
//! `Delayed` is a consumer's argument, and the program computes what its
//! input did, except that an element no result depends on is no longer
//! computed, so its error (a division by zero in a `map` whose result is
//! only partly read) is not raised (`docs/semantics.md`, "Fusion").

mod cunctation;
pub(crate) use cunctation::{cheap, prim, prj};

use crate::avars::{self, parts_mut, Part, Uses};
use accelerate_base::array::{ArraysTy, SliceDim};
use accelerate_base::error::{Error, Result, SrcLoc};
use accelerate_ir::verify::{acc_ty, exp_ty};
use accelerate_ir::*;
pub use cunctation::Cunctation;
use std::collections::HashMap;

// Note [Array levels in fusion]
// Fusion floats bindings out of producer chains, so the array environment
// of its output (`Fuser::aenv`: the enclosing binders and the bindings
// floated so far) is not that of its input. Writing both with de Bruijn
// indices meant shifting: every term built so far when a binding floated
// out below it (in `zip_with` of a chain and a `use`, the whole chain's
// index function, once per input), and every let's body when its bound
// term was inlined into it (a traversal of the rest of the program, once
// per let). For 10^4 chained operations that was minutes. Instead:
//
// - Terms inside cunctations name arrays by *level*, their position in
//   `aenv` counted from the outermost: a level stays right however many
//   bindings float out after it, so no cunctation is ever shifted.
// - The input's variables are resolved through `Fuser::scope`, one entry
//   per input binder in scope: the level it was bound at, or the
//   cunctation of a producer inlined there (`Entry::Inline`), which a use
//   as an array takes (or copies, when there are several uses) and a read
//   by scalar code turns into its element or shape (`resolve_exp`). So an
//   inlined let costs nothing for the body it is inlined into.
// - Output terms are written in the IR's indices when they are placed at
//   a known depth of `aenv` (`to_indices`): once per term.
// - The uses of every array let's variable are counted in one pass before
//   (`avars::count_lets`), keyed by the address of its bound term.

/// An array term during fusion: manifest terms let-bound outside it (each
/// in the scope of those before it, in the IR's indices) and the array
/// itself, naming arrays by level.
struct Embed {
    binds: Vec<OpenAcc>,
    cc: Cunctation,
}

/// What an input array variable became (Note [Array levels in fusion]).
enum Entry {
    /// Bound in the output at this level.
    Level(usize),
    /// A producer inlined at its uses.
    Inline(Box<Inlined>),
    /// A variable nothing reads (a component of an empty tuple).
    Unused,
}

/// A producer inlined at its uses. Taken (`None`) by its one use as an
/// array when `take` (a single use, at the nesting of its let), after
/// which its shape is what scalar code reads.
struct Inlined {
    cc: Option<Cunctation>,
    shape: Option<OpenExp>,
    take: bool,
    /// Taken by its one use, a read at the reader's own index (Note
    /// [Counting uses]): moved into the reader, not copied, so that a chain
    /// of such producers inlines in linear time.
    take_read: bool,
    nest: usize,
}

struct Fuser {
    /// The types of the array variables of the output, by level: the
    /// enclosing binders, then the bindings floated so far.
    aenv: Vec<ArraysTy>,
    /// What each input variable in scope became, innermost last.
    scope: Vec<Entry>,
    /// The uses of each input let's variable (Note [Counting uses]).
    uses: HashMap<*const OpenAcc, Uses>,
    /// How many `acond` branches and `awhile` functions enclose the term
    /// being fused.
    nest: usize,
}

/// Fuses a program.
pub fn fuse_program(p: Program) -> Result<Program> {
    let Program { params, mut body } = p;
    let uses = avars::count_lets(&mut body, params.len());
    let scope = (0..params.len()).map(Entry::Level).collect();
    let mut f = Fuser { aenv: params.clone(), scope, uses, nest: 0 };
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

/// Turns every array level of a scalar term into the IR's index at output
/// depth `depth`, or back: the map is its own inverse.
fn flip_exp(e: &mut OpenExp, depth: usize) {
    avars::exp_arrays_mut(e, &mut |k| *k = depth - 1 - *k)
}

/// `flip_exp` for an array term placed at output depth `depth` (its own
/// binders counted below it).
fn flip_acc(a: &mut OpenAcc, depth: usize) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        if let AccKind::Var(k) = &mut a.kind {
            *k = depth - 1 - *k;
        }
        for p in parts_mut(a) {
            match p {
                Part::Exp(e) => flip_exp(e, depth),
                Part::Fun(f) => flip_exp(&mut f.body, depth),
                Part::Acc(x, binders) => flip_acc(x, depth + binders),
            }
        }
    })
}

impl Fuser {
    /// The output depth: the number of array variables in scope there.
    fn depth(&self) -> usize {
        self.aenv.len()
    }

    /// A term naming arrays by level, in the IR's indices at the current
    /// output depth.
    fn to_indices(&self, mut a: OpenAcc) -> OpenAcc {
        flip_acc(&mut a, self.depth());
        a
    }

    fn entry(&mut self, k: usize) -> Result<&mut Entry> {
        let n = self.scope.len();
        match n.checked_sub(k + 1) {
            Some(i) => Ok(&mut self.scope[i]),
            None => Err(Error::Internal(format!("fusion: array variable {k} unbound"))),
        }
    }

    /// The fused manifest term of `a` (an input term), with its floated
    /// bindings let-bound around it, in the IR's indices at the current
    /// output depth.
    fn fuse(&mut self, a: OpenAcc) -> Result<OpenAcc> {
        let loc = a.loc;
        let e = self.embed(a)?;
        let body = self.to_indices(e.cc.compute(loc));
        Ok(self.wrap(e.binds, body))
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

    /// Binds a manifest term, in the IR's indices at the current output
    /// depth (pushing its type); its level.
    fn bind(&mut self, binds: &mut Vec<OpenAcc>, m: OpenAcc) -> Result<usize> {
        let t = acc_ty(&m, &mut self.aenv).map_err(internal)?;
        self.aenv.push(t);
        binds.push(m);
        Ok(self.aenv.len() - 1)
    }

    /// A manifest term (naming arrays by level) as an embedding: bound,
    /// and `Done`.
    fn done(&mut self, mut binds: Vec<OpenAcc>, m: OpenAcc) -> Result<Embed> {
        if let AccKind::Var(v) = m.kind {
            return Ok(Embed { binds, cc: Cunctation::Done(v) });
        }
        let m = self.to_indices(m);
        let level = self.bind(&mut binds, m)?;
        Ok(Embed { binds, cc: Cunctation::Done(level) })
    }

    /// An input scalar term naming arrays by level: each variable resolved
    /// through the scope, the reads of an inlined producer replaced by its
    /// element (checked against its shape, as the read was) or its shape.
    fn resolve_exp(&mut self, e: &mut OpenExp) -> Result<()> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            let mut r = Ok(());
            crate::debruijn::for_each_child(e, |c| {
                if r.is_ok() {
                    r = self.resolve_exp(c);
                }
            });
            r?;
            let loc = e.loc;
            let take = |x: &mut Box<OpenExp>| std::mem::replace(&mut **x, cunctation::var(0, loc));
            let array = match &e.kind {
                ExpKind::Index { array, .. }
                | ExpKind::LinearIndex { array, .. }
                | ExpKind::Shape { array } => *array,
                _ => return Ok(()),
            };
            let nest = self.nest;
            let replaced = match self.entry(array)? {
                Entry::Level(l) => {
                    let l = *l;
                    if let ExpKind::Index { array, .. }
                    | ExpKind::LinearIndex { array, .. }
                    | ExpKind::Shape { array } = &mut e.kind
                    {
                        *array = l;
                    }
                    return Ok(());
                }
                Entry::Unused => return Err(Error::Internal("fusion: a read of an unused variable".into())),
                Entry::Inline(inlined)
                    if inlined.take_read
                        && inlined.nest == nest
                        && matches!(e.kind, ExpKind::Index { .. }) =>
                {
                    let (Some(c), ExpKind::Index { index, .. }) = (inlined.cc.take(), &mut e.kind) else {
                        return Err(Error::Internal("fusion: a producer read twice".into()));
                    };
                    inlined.shape = Some(c.shape(loc));
                    let ix = if c.is_done() {
                        take(index)
                    } else {
                        cunctation::prim(PrimFun::BoundsCheck, vec![c.shape(loc), take(index)], loc)
                    };
                    c.into_index_at(ix, loc)
                }
                Entry::Inline(inlined) => match (&inlined.cc, &inlined.shape, &mut e.kind) {
                    (None, Some(shape), ExpKind::Shape { .. }) => shape.clone(),
                    (None, ..) => {
                        return Err(Error::Internal(
                            "fusion: an element read of a producer already inlined".into(),
                        ))
                    }
                    (Some(c), _, kind) => match kind {
                        ExpKind::Shape { .. } => c.shape(loc),
                        ExpKind::Index { index, .. } => {
                            let ix = if c.is_done() {
                                take(index)
                            } else {
                                cunctation::prim(PrimFun::BoundsCheck, vec![c.shape(loc), take(index)], loc)
                            };
                            c.index_at(ix, loc)
                        }
                        ExpKind::LinearIndex { index, .. } => {
                            if c.is_done() {
                                c.linear_at(take(index), loc)
                            } else {
                                // checked as a rank-1 index into the array's size
                                let size = cunctation::prim(PrimFun::ShapeSize, vec![c.shape(loc)], loc);
                                let tuple1 = |x| OpenExp::new(ExpKind::Tuple(vec![x]), loc);
                                let i = cunctation::prim(
                                    PrimFun::BoundsCheck,
                                    vec![tuple1(size), tuple1(take(index))],
                                    loc,
                                );
                                c.linear_at(OpenExp::new(ExpKind::Prj(0, Box::new(i)), loc), loc)
                            }
                        }
                        _ => unreachable!("a read of an array"),
                    },
                },
            };
            *e = replaced;
            Ok(())
        })
    }

    fn resolve_fun(&mut self, f: &mut Fun) -> Result<()> {
        self.resolve_exp(&mut f.body)
    }

    /// The array of input variable `k` used as an array.
    fn use_var(&mut self, k: usize, loc: SrcLoc) -> Result<Cunctation> {
        let nest = self.nest;
        match self.entry(k)? {
            Entry::Level(l) => Ok(Cunctation::Done(*l)),
            Entry::Inline(inlined) => {
                let Inlined { cc, shape, take, nest: at, .. } = &mut **inlined;
                if *take && *at == nest {
                    let c =
                        cc.take().ok_or_else(|| Error::Internal("fusion: a producer used twice".into()))?;
                    *shape = Some(c.shape(loc));
                    Ok(c)
                } else {
                    cc.clone().ok_or_else(|| Error::Internal("fusion: a producer used twice".into()))
                }
            }
            Entry::Unused => Err(Error::Internal("fusion: a use of an unused variable".into())),
        }
    }

    fn embed(&mut self, a: OpenAcc) -> Result<Embed> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.embed_inner(a))
    }

    fn embed_inner(&mut self, mut a: OpenAcc) -> Result<Embed> {
        let loc = a.loc;
        let placeholder = || OpenAcc::new(AccKind::Var(0), loc);
        let take = |x: &mut Box<OpenAcc>| std::mem::replace(&mut **x, placeholder());
        match &mut a.kind {
            AccKind::Var(v) => Ok(Embed { binds: vec![], cc: self.use_var(*v, loc)? }),
            AccKind::Let(..) => self.embed_let(a),
            AccKind::Generate { shape, f } => {
                let (mut shape, mut index) = (take_exp(shape), take_fun(f));
                self.resolve_exp(&mut shape)?;
                self.resolve_fun(&mut index)?;
                Ok(Embed { binds: vec![], cc: Cunctation::Yield { shape, index, linear: None } })
            }
            AccKind::Map { f, array } => {
                let (mut f, array) = (take_fun(f), take(array));
                self.resolve_fun(&mut f)?;
                let e = self.embed(array)?;
                Ok(Embed { cc: e.cc.map(f), binds: e.binds })
            }
            AccKind::Backpermute { shape, f, array } => {
                let (mut shape, mut p, array) = (take_exp(shape), take_fun(f), take(array));
                self.resolve_exp(&mut shape)?;
                self.resolve_fun(&mut p)?;
                let e = self.embed(array)?;
                Ok(Embed { cc: e.cc.backpermute(shape, p, loc), binds: e.binds })
            }
            AccKind::Replicate { spec, slix, array } => {
                let (spec, mut slix, array) = (spec.clone(), take_exp(slix), take(array));
                self.resolve_exp(&mut slix)?;
                let mut e = self.embed(array)?;
                if spec.dims.contains(&SliceDim::Fixed) && e.cc.is_dear() {
                    // each element is read once per position of the new
                    // dimensions (Note [Replicated work])
                    e = self.done(e.binds, e.cc.compute(loc))?;
                }
                Ok(Embed { cc: e.cc.replicate(&spec, &slix, loc), binds: e.binds })
            }
            AccKind::Slice { spec, array, slix } => {
                let (spec, mut slix, array) = (spec.clone(), take_exp(slix), take(array));
                self.resolve_exp(&mut slix)?;
                let e = self.embed(array)?;
                Ok(Embed { cc: e.cc.slice(&spec, &slix, loc), binds: e.binds })
            }
            AccKind::Reshape { shape, array } => {
                let (mut shape, array) = (take_exp(shape), take(array));
                self.resolve_exp(&mut shape)?;
                let e = self.embed(array)?;
                if e.cc.is_done() {
                    // a manifest array is reshaped where it lies
                    let m = OpenAcc::new(AccKind::Reshape { shape, array: Box::new(e.cc.compute(loc)) }, loc);
                    return self.done(e.binds, m);
                }
                // typed in the IR's indices
                let depth = self.depth();
                flip_exp(&mut shape, depth);
                let t = exp_ty(&shape, &mut Vec::new(), &self.aenv).map_err(internal);
                flip_exp(&mut shape, depth);
                let t = t?;
                let rank = t.shape_rank().ok_or_else(|| internal(format!("reshape to a {t}")))?;
                let src_rank = e.cc.rank(&self.aenv);
                Ok(Embed { cc: e.cc.reshape(shape, rank, src_rank, loc), binds: e.binds })
            }
            AccKind::ZipWith { f, a: x, b: y } => {
                let (mut f, x, y) = (take_fun(f), take(x), take(y));
                self.resolve_fun(&mut f)?;
                let ex = self.embed(x)?;
                let ey = self.embed(y)?;
                let rank = ex.cc.rank(&self.aenv);
                let cc = Cunctation::zip_with(f, ex.cc, ey.cc, rank, loc);
                let mut binds = ex.binds;
                binds.extend(ey.binds);
                Ok(Embed { binds, cc })
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
                let (mut cond, t, e) = (take_exp(cond), take(then_), take(else_));
                self.resolve_exp(&mut cond)?;
                self.nest += 1;
                let branches = self.fuse(t).and_then(|t| Ok((t, self.fuse(e)?)));
                self.nest -= 1;
                let (t, e) = branches?;
                // the branches are in the IR's indices already
                flip_exp(&mut cond, self.depth());
                let m = OpenAcc::new(AccKind::Acond { cond, then_: Box::new(t), else_: Box::new(e) }, loc);
                let mut binds = Vec::new();
                let level = self.bind(&mut binds, m)?;
                Ok(Embed { binds, cc: Cunctation::Done(level) })
            }
            AccKind::Awhile { .. } => self.embed_awhile(a),
            AccKind::Foreign { .. } => self.embed_foreign(a),
            AccKind::Delayed(_) => Err(Error::Internal("fusion met a delayed array in its input".into())),
            _ => self.embed_manifest(a),
        }
    }

    /// A manifest operation: its own scalar terms resolved, each array
    /// argument embedded in turn (its bindings floated), then given as a
    /// delayed array where the operation is a consumer of it, or computed
    /// otherwise.
    fn embed_manifest(&mut self, mut a: OpenAcc) -> Result<Embed> {
        let loc = a.loc;
        let kinds = arg_kinds(&a);
        // (before the arguments, so that a read of a producer inlined into
        // an argument sees it before the argument takes it)
        for p in parts_mut(&mut a) {
            match p {
                Part::Exp(e) => self.resolve_exp(e)?,
                Part::Fun(f) => self.resolve_fun(f)?,
                Part::Acc(..) => {}
            }
        }
        let mut binds = Vec::new();
        let mut embedded = Vec::new();
        for p in parts_mut(&mut a) {
            if let Part::Acc(x, 0) = p {
                let arg = std::mem::replace(x, OpenAcc::new(AccKind::Var(0), loc));
                let e = self.embed(arg)?;
                binds.extend(e.binds);
                embedded.push(e.cc);
            }
        }
        let mut args = Vec::new();
        for (k, cc) in embedded.into_iter().enumerate() {
            let kind = kinds.get(k).copied().unwrap_or(ArgKind::Manifest);
            let delayed = match kind {
                ArgKind::Delayed => true,
                ArgKind::DelayedIfCheap => cc.is_cheap(),
                ArgKind::Manifest => false,
            };
            if delayed || cc.is_done() {
                let rank = cc.rank(&self.aenv);
                args.push(cc.into_arg(rank, loc));
            } else if kind == ArgKind::Manifest {
                args.push(cc.compute(loc));
            } else {
                // a consumer reads a variable or a delayed array
                let m = self.to_indices(cc.compute(loc));
                let level = self.bind(&mut binds, m)?;
                args.push(OpenAcc::new(AccKind::Var(level), loc));
            }
        }
        let mut args = args.into_iter();
        for p in parts_mut(&mut a) {
            if let Part::Acc(x, 0) = p {
                *x = args.next().ok_or_else(|| Error::Internal("fusion: an argument lost".into()))?;
            }
        }
        self.done(binds, a)
    }

    fn embed_awhile(&mut self, a: OpenAcc) -> Result<Embed> {
        let loc = a.loc;
        let AccKind::Awhile { mut pred, mut body, init } = a.kind_owned() else { unreachable!("an awhile") };
        let e = self.embed(*init)?;
        let init = self.to_indices(e.cc.compute(loc));
        self.fuse_afuns([&mut pred, &mut body], loc)?;
        let m = OpenAcc::new(AccKind::Awhile { pred, body, init: Box::new(init) }, loc);
        let mut binds = e.binds;
        let level = self.bind(&mut binds, m)?;
        Ok(Embed { binds, cc: Cunctation::Done(level) })
    }

    /// A foreign call: a barrier on both sides, its argument computed to
    /// manifest arrays and its result manifest; its fallback fused as a
    /// program of its own.
    fn embed_foreign(&mut self, a: OpenAcc) -> Result<Embed> {
        let loc = a.loc;
        let AccKind::Foreign { func, mut fallback, arg } = a.kind_owned() else {
            unreachable!("a foreign call")
        };
        let e = self.embed(*arg)?;
        let arg = self.to_indices(e.cc.compute(loc));
        if let Some(fallback) = &mut fallback {
            self.fuse_afuns([fallback], loc)?;
        }
        let m = OpenAcc::new(AccKind::Foreign { func, fallback, arg: Box::new(arg) }, loc);
        let mut binds = e.binds;
        let level = self.bind(&mut binds, m)?;
        Ok(Embed { binds, cc: Cunctation::Done(level) })
    }

    /// Fuses the bodies of array functions bound at the current point
    /// (`awhile`'s, a foreign call's fallback): each sees the output's
    /// variables and its parameter.
    fn fuse_afuns<const N: usize>(&mut self, fs: [&mut AFun; N], loc: SrcLoc) -> Result<()> {
        let depth = self.depth();
        self.nest += 1;
        let mut fused = Ok(());
        for f in fs {
            let b = std::mem::replace(&mut *f.body, OpenAcc::new(AccKind::Var(0), loc));
            self.aenv.push(f.param.clone());
            self.scope.push(Entry::Level(depth));
            let r = self.fuse(b);
            self.scope.pop();
            self.aenv.pop();
            match r {
                Ok(b) => *f.body = b,
                Err(err) => fused = Err(err),
            }
        }
        self.nest -= 1;
        fused
    }

    /// `let x = bound in body` (ICFP'13 §4.4, Accelerate's `aletD`).
    fn embed_let(&mut self, a: OpenAcc) -> Result<Embed> {
        let loc = a.loc;
        let AccKind::Let(bound, body) = a.kind_owned() else { unreachable!("a let") };
        let key: *const OpenAcc = &*bound;
        let counted = self.uses.get(&key).copied();
        let (bound, mut body) = (*bound, *body);
        let e1 = self.embed(bound)?;
        let is_tuple = |b: Option<&OpenAcc>| matches!(b.map(|b| &b.kind), Some(AccKind::Tuple(_)));
        if let Cunctation::Done(l) = e1.cc {
            if l + 1 == self.depth() && is_tuple(e1.binds.last()) && only_projected(&mut body, 0) {
                return self.embed_tuple_let(e1.binds, body);
            }
        }
        let u = match counted {
            Some(u) => u,
            None => avars::uses(&mut body, 0),
        };
        let mut binds = e1.binds;
        let entry = self.bind_or_inline(e1.cc, u, loc, &mut binds)?;
        self.scope.push(entry);
        let eb = self.embed(body);
        self.scope.pop();
        let eb = eb?;
        binds.extend(eb.binds);
        Ok(Embed { binds, cc: eb.cc })
    }

    /// What a let-bound producer becomes, given the uses of its variable:
    /// inlined where that repeats no work (Note [Counting uses]) or it is
    /// cheap (Note [The cost rule]), else computed and bound.
    fn bind_or_inline(
        &mut self,
        cc: Cunctation,
        u: Uses,
        loc: SrcLoc,
        binds: &mut Vec<OpenAcc>,
    ) -> Result<Entry> {
        if let Cunctation::Done(l) = cc {
            return Ok(Entry::Level(l));
        }
        let repeats = u.in_loop || u.reads > u.own_reads || u.arrays + u.own_reads > 1;
        if cc.is_cheap() || !repeats {
            let take = u.arrays <= 1 && u.reads == 0 && !u.in_loop;
            let take_read = u.arrays == 0 && u.reads == 1 && u.own_reads == 1 && !u.in_loop;
            let nest = self.nest;
            return Ok(Entry::Inline(Box::new(Inlined { cc: Some(cc), shape: None, take, take_read, nest })));
        }
        let m = self.to_indices(cc.compute(loc));
        Ok(Entry::Level(self.bind(binds, m)?))
    }

    /// `let t = (c0, .., cn-1) in body` (the tuple the last of `binds`),
    /// with `t` only projected: each component bound or inlined on its own,
    /// as `let c0 = c0 in .. let cn-1 = cn-1 in body` would be, so that each
    /// fuses with its uses.
    fn embed_tuple_let(&mut self, mut binds: Vec<OpenAcc>, mut body: OpenAcc) -> Result<Embed> {
        let tuple = binds.pop().ok_or_else(|| Error::Internal("fusion: a tuple binding lost".into()))?;
        self.aenv.pop();
        let AccKind::Tuple(comps) = tuple.kind_owned() else { unreachable!("a tuple") };
        let n = comps.len();
        if n == 0 {
            self.scope.push(Entry::Unused);
            let eb = self.embed(body);
            self.scope.pop();
            let eb = eb?;
            binds.extend(eb.binds);
            return Ok(Embed { binds, cc: eb.cc });
        }
        // body: variable 0 is the tuple; component i becomes variable n-1-i
        project_components(&mut body, n);
        // the components were written at this depth, in the IR's indices
        let depth = self.depth();
        for (i, mut c) in comps.into_iter().enumerate() {
            let loc = c.loc;
            flip_acc(&mut c, depth);
            let cc = match Cunctation::of_manifest(c) {
                Ok(cc) => cc,
                Err(m) => {
                    let m = self.to_indices(*m);
                    Cunctation::Done(self.bind(&mut binds, m)?)
                }
            };
            let u = avars::uses(&mut body, n - 1 - i);
            let entry = self.bind_or_inline(cc, u, loc, &mut binds)?;
            self.scope.push(entry);
        }
        let eb = self.embed(body);
        self.scope.truncate(self.scope.len() - n);
        let eb = eb?;
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

/// `body` with its variable 0, a tuple of `n` arrays only projected,
/// split into `n` variables: `prj i t` becomes variable `n - 1 - i`.
fn project_components(body: &mut OpenAcc, n: usize) {
    fn go(a: &mut OpenAcc, depth: usize, n: usize) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            if let AccKind::Prj(i, t) = &a.kind {
                if matches!(t.kind, AccKind::Var(k) if k == depth) {
                    a.kind = AccKind::Var(depth + n - 1 - i);
                    return;
                }
            }
            let outer = |k: &mut usize| {
                if *k > depth {
                    *k += n - 1
                }
            };
            if let AccKind::Var(k) = &mut a.kind {
                outer(k);
                return;
            }
            for p in parts_mut(a) {
                match p {
                    Part::Exp(e) => avars::exp_arrays_mut(e, &mut |k| outer(k)),
                    Part::Fun(f) => avars::exp_arrays_mut(&mut f.body, &mut |k| outer(k)),
                    Part::Acc(x, binders) => go(x, depth + binders, n),
                }
            }
        })
    }
    go(body, 0, n)
}

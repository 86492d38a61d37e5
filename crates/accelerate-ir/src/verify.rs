//! The IR verifier: a type checker run on the output of every pass (in
//! every test and in debug builds), as Cranelift's verifier is.
//!
//! Invariants checked, for a [`Program`]:
//!
//! 1. Every array variable index is bound: by a `Let`, an `AFun` or a
//!    program parameter. Every scalar variable index is bound by a scalar
//!    `Let` or a `Fun` parameter of the same expression.
//! 2. Scalar expressions embedded in an array term are closed in scalar
//!    variables (Note [Two environments]).
//! 3. `Index`, `LinearIndex` and `Shape` refer to array variables whose
//!    type is one array (not a tuple); the index has the array's rank
//!    (`Index`) or is `i64` (`LinearIndex`).
//! 4. Every primitive is applied to arguments of the types its typing rule
//!    (`PrimFun::result_ty`) accepts.
//! 5. `Cond` has a `bool` condition and branches of one type; `While` has a
//!    condition function to `bool` and a body function from and to the type
//!    of its initial value; `Prj` indexes within its tuple; `Unzip`
//!    takes one array whose elements are tuples.
//! 6. Every array operation's functions have the number and types of
//!    parameters the operation passes them and return what it needs:
//!    `map`/`zip_with` functions take the elements of their arrays;
//!    `generate` and `backpermute` functions take an index of the result
//!    rank, and `backpermute`'s returns an index of the source rank; `fold`
//!    and scan operators are `(e, e) -> e` with a seed of type `e`
//!    (`fold_keep`'s argument has elements `(k, e)`);
//!    `permute`'s combiner is `(e, e) -> e`, its index function takes a
//!    source index and returns `(bool, index of the defaults' rank)`.
//! 7. Shapes given to `generate`, `reshape` and `backpermute` are shapes
//!    (flat tuples of `i64`); `fold` and scans take arrays of rank >= 1;
//!    `fold_seg` takes a vector of `i64` segment offsets; a stencil has one
//!    odd pattern extent per dimension of each argument, arguments of one
//!    rank, a function of every pattern point's element, and boundaries of
//!    the arguments' element types;
//!    `replicate` and `slice` agree with their slice specifier in rank and
//!    their slice index has one `i64` per fixed dimension.
//! 8. `Acond` has a `bool` condition and branches of one type; `Awhile`'s
//!    predicate maps the loop type to a `bool` scalar array and its body
//!    maps it to itself; `Let` binds and `Tuple`/`Prj` are well formed;
//!    a `Foreign` call's fallback maps its argument's type to the type the
//!    foreign function declares.
//! 9. `Use` holds data whose buffers match its element type and shape.
//! 10. A `Delayed` array (Note [Delayed arrays]) appears only as the array
//!     argument of a consumer (`fold`, `fold_keep`, `fold_seg`'s array, a scan,
//!     `permute`'s source, a stencil's argument); its shape is a shape, its
//!     index function maps an index of that rank, and its linear function
//!     an `i64` position, to one element type.
//!
//! 11. No array term is nested in scalar code (`ExpKind::ALet`, Note
//!     [Nested array terms]), except in sharing recovery's output
//!     (`verify_nested_program`), where such a term sees the scalar
//!     variables in scope at its binding.
//!
//! The check is a single traversal: linear in the size of the term.

use super::term::*;
use accelerate_base::array::{ArrayTy, ArraysTy, EltTy, ScalarTy, SliceDim};
use accelerate_base::error::Error;

/// Checks a whole program; returns its result type. The program must be
/// flat: an array term nested in scalar code (Note [Nested array terms])
/// is an error.
pub fn verify_program(p: &Program, phase: &str) -> Result<ArraysTy, Error> {
    check_program(p, phase, false)
}

/// Checks a whole program that may still hold array terms nested in
/// scalar code (sharing recovery's output, before lifting).
pub fn verify_nested_program(p: &Program, phase: &str) -> Result<ArraysTy, Error> {
    check_program(p, phase, true)
}

fn check_program(p: &Program, phase: &str, nested: bool) -> Result<ArraysTy, Error> {
    let mut aenv = AEnv { base: &p.params, extra: Vec::new(), nested };
    acc_ty_in(&p.body, &[], &mut aenv)
        .map_err(|message| Error::Verifier { phase: phase.to_string(), message })
}

fn at(acc: &OpenAcc, msg: impl std::fmt::Display) -> String {
    format!("in {} at {}: {msg}", acc.op_name(), acc.loc)
}

fn lookup<T: Clone>(env: &[T], i: usize) -> Option<T> {
    env.len().checked_sub(i + 1).map(|k| env[k].clone())
}

fn one_array(t: ArraysTy, what: &str) -> Result<ArrayTy, String> {
    match t {
        ArraysTy::Array(a) => Ok(a),
        other => Err(format!("{what} must be one array, found {other}")),
    }
}

fn expect_shape(t: &EltTy, rank: Option<usize>, what: &str) -> Result<usize, String> {
    match t.shape_rank() {
        Some(r) if rank.is_none_or(|want| want == r) => Ok(r),
        _ => Err(match rank {
            Some(r) => format!("{what} must be a shape of rank {r}, found {t}"),
            None => format!("{what} must be a shape, found {t}"),
        }),
    }
}

/// The type of an array term in an environment of array variable types.
pub fn acc_ty(acc: &OpenAcc, aenv: &mut Vec<ArraysTy>) -> Result<ArraysTy, String> {
    let mut a = AEnv { base: &[], extra: std::mem::take(aenv), nested: true };
    let r = acc_ty_in(acc, &[], &mut a);
    *aenv = a.extra;
    r
}

/// The array environment of a check: the slice a caller gave, and the
/// variables bound since (a term nested in scalar code binds arrays inside
/// a check that was given a slice: pushing onto a copy of the slice at
/// each such binding was quadratic in the number of bindings).
struct AEnv<'a> {
    base: &'a [ArraysTy],
    extra: Vec<ArraysTy>,
    /// May scalar code hold array terms (invariant 11)?
    nested: bool,
}

impl AEnv<'_> {
    fn lookup(&self, i: usize) -> Option<ArraysTy> {
        let n = self.extra.len();
        if i < n {
            return Some(self.extra[n - 1 - i].clone());
        }
        lookup(self.base, i - n)
    }
    fn len(&self) -> usize {
        self.base.len() + self.extra.len()
    }
    fn push(&mut self, t: ArraysTy) {
        self.extra.push(t);
    }
    fn pop(&mut self) {
        self.extra.pop();
    }
}

/// The type of an array term whose scalar code sees the scalar variables
/// `senv` (empty but for an array term nested in scalar code, Note
/// [Nested array terms]).
fn acc_ty_in(acc: &OpenAcc, senv: &[EltTy], aenv: &mut AEnv<'_>) -> Result<ArraysTy, String> {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || acc_ty_inner(acc, senv, aenv))
}

fn acc_ty_inner(acc: &OpenAcc, senv: &[EltTy], aenv: &mut AEnv<'_>) -> Result<ArraysTy, String> {
    let acc_ty = |a: &OpenAcc, aenv: &mut AEnv<'_>| acc_ty_in(a, senv, aenv);
    let fun_ty = |f: &Fun, args: &[EltTy], aenv: &mut AEnv<'_>| fun_ty_in_scope(f, args, senv, aenv);
    let check_operator = |f: &Fun, seed: Option<&OpenExp>, elt: &EltTy, aenv: &mut AEnv<'_>| {
        check_operator(f, seed, elt, senv, aenv)
    };
    let arr = |t: ArrayTy| Ok(ArraysTy::Array(t));
    let sub = |a: &OpenAcc, aenv: &mut AEnv<'_>, what: &str| -> Result<ArrayTy, String> {
        one_array(acc_ty(a, aenv)?, what).map_err(|m| at(acc, m))
    };
    // the argument of a consumer, which may be delayed (invariant 10)
    let arg = |a: &OpenAcc, aenv: &mut AEnv<'_>, what: &str| -> Result<ArrayTy, String> {
        match &a.kind {
            AccKind::Delayed(DelayedArray { shape, index, linear }) => {
                delayed_ty(shape, index, linear, senv, aenv)
                    .map_err(|m| at(a, format!("{what} of {} at {}: {m}", acc.op_name(), acc.loc)))
            }
            _ => sub(a, aenv, what),
        }
    };
    match &acc.kind {
        AccKind::Let(bound, body) => {
            let t = acc_ty(bound, aenv)?;
            aenv.push(t);
            let r = acc_ty(body, aenv);
            aenv.pop();
            r
        }
        AccKind::Var(i) => aenv
            .lookup(*i)
            .ok_or_else(|| at(acc, format!("array variable {i} is unbound (environment of {})", aenv.len()))),
        AccKind::Tuple(ts) => {
            Ok(ArraysTy::Tuple(ts.iter().map(|t| acc_ty(t, aenv)).collect::<Result<_, _>>()?))
        }
        AccKind::Prj(i, t) => match acc_ty(t, aenv)? {
            ArraysTy::Tuple(ts) if *i < ts.len() => Ok(ts[*i].clone()),
            other => Err(at(acc, format!("projection {i} out of {other}"))),
        },
        AccKind::Unzip(t) => match acc_ty(t, aenv)? {
            ArraysTy::Array(a) if a.unzipped().is_some() => Ok(a.unzipped().expect("tuples")),
            other => Err(at(acc, format!("unzip of {other}, not an array of tuples"))),
        },
        AccKind::Use(data) => {
            let expect: usize = data.shape().iter().product();
            if data.buffers().len() != data.elt_ty().leaves().len()
                || data.buffers().iter().any(|b| b.len() != expect)
            {
                return Err(at(acc, "array data does not match its shape and element type"));
            }
            arr(data.ty())
        }
        AccKind::Unit(e) => {
            let elt = exp_ty_in(e, &mut senv.to_vec(), aenv).map_err(|m| at(acc, m))?;
            arr(ArrayTy { rank: 0, elt })
        }
        AccKind::Reshape { shape, array } => {
            let st = exp_ty_in(shape, &mut senv.to_vec(), aenv).map_err(|m| at(acc, m))?;
            let rank = expect_shape(&st, None, "the new shape").map_err(|m| at(acc, m))?;
            let a = sub(array, aenv, "the argument")?;
            arr(ArrayTy { rank, elt: a.elt })
        }
        AccKind::Generate { shape, f } => {
            let st = exp_ty_in(shape, &mut senv.to_vec(), aenv).map_err(|m| at(acc, m))?;
            let rank = expect_shape(&st, None, "the shape").map_err(|m| at(acc, m))?;
            let elt = fun_ty(f, &[EltTy::shape(rank)], aenv).map_err(|m| at(acc, m))?;
            arr(ArrayTy { rank, elt })
        }
        AccKind::Map { f, array } => {
            let a = sub(array, aenv, "the argument")?;
            let elt = fun_ty(f, &[a.elt], aenv).map_err(|m| at(acc, m))?;
            arr(ArrayTy { rank: a.rank, elt })
        }
        AccKind::ZipWith { f, a, b } => {
            let ta = sub(a, aenv, "the first argument")?;
            let tb = sub(b, aenv, "the second argument")?;
            if ta.rank != tb.rank {
                return Err(at(acc, format!("arguments of ranks {} and {}", ta.rank, tb.rank)));
            }
            let elt = fun_ty(f, &[ta.elt, tb.elt], aenv).map_err(|m| at(acc, m))?;
            arr(ArrayTy { rank: ta.rank, elt })
        }
        AccKind::Backpermute { shape, f, array } => {
            let st = exp_ty_in(shape, &mut senv.to_vec(), aenv).map_err(|m| at(acc, m))?;
            let rank = expect_shape(&st, None, "the result shape").map_err(|m| at(acc, m))?;
            let a = sub(array, aenv, "the source")?;
            let r = fun_ty(f, &[EltTy::shape(rank)], aenv).map_err(|m| at(acc, m))?;
            expect_shape(&r, Some(a.rank), "the index function's result").map_err(|m| at(acc, m))?;
            arr(ArrayTy { rank, elt: a.elt })
        }
        AccKind::Replicate { spec, slix, array } => {
            let st = exp_ty_in(slix, &mut senv.to_vec(), aenv).map_err(|m| at(acc, m))?;
            expect_shape(&st, Some(spec.fixed_count()), "the slice index").map_err(|m| at(acc, m))?;
            let a = sub(array, aenv, "the argument")?;
            if a.rank != spec.slice_rank() {
                return Err(at(
                    acc,
                    format!(
                        "the specifier replicates an array of rank {}, given rank {}",
                        spec.slice_rank(),
                        a.rank
                    ),
                ));
            }
            arr(ArrayTy { rank: spec.full_rank(), elt: a.elt })
        }
        AccKind::Slice { spec, array, slix } => {
            let st = exp_ty_in(slix, &mut senv.to_vec(), aenv).map_err(|m| at(acc, m))?;
            expect_shape(&st, Some(spec.fixed_count()), "the slice index").map_err(|m| at(acc, m))?;
            let a = sub(array, aenv, "the argument")?;
            if a.rank != spec.full_rank() {
                return Err(at(
                    acc,
                    format!(
                        "the specifier slices an array of rank {}, given rank {}",
                        spec.full_rank(),
                        a.rank
                    ),
                ));
            }
            let _ = SliceDim::All;
            arr(ArrayTy { rank: spec.slice_rank(), elt: a.elt })
        }
        AccKind::Fold { f, seed, array } | AccKind::Scan { f, seed, array, .. } => {
            let a = arg(array, aenv, "the argument")?;
            if a.rank == 0 {
                return Err(at(acc, "the argument must have rank at least 1"));
            }
            check_operator(f, seed.as_ref(), &a.elt, aenv).map_err(|m| at(acc, m))?;
            let rank = if matches!(acc.kind, AccKind::Fold { .. }) { a.rank - 1 } else { a.rank };
            arr(ArrayTy { rank, elt: a.elt })
        }
        AccKind::FoldKeep { f, seed, array } => {
            let a = arg(array, aenv, "the argument")?;
            if a.rank == 0 {
                return Err(at(acc, "the argument must have rank at least 1"));
            }
            let (k, x) = match &a.elt {
                EltTy::Tuple(kx) if kx.len() == 2 => (&kx[0], &kx[1]),
                other => {
                    return Err(at(acc, format!("the argument's elements must be pairs, found {other}")))
                }
            };
            check_operator(f, seed.as_ref(), x, aenv).map_err(|m| at(acc, m))?;
            Ok(ArraysTy::Tuple(vec![
                ArraysTy::Array(ArrayTy { rank: a.rank, elt: k.clone() }),
                ArraysTy::Array(ArrayTy { rank: a.rank - 1, elt: x.clone() }),
            ]))
        }
        AccKind::FoldSeg { f, seed, array, offsets } => {
            let a = arg(array, aenv, "the argument")?;
            if a.rank == 0 {
                return Err(at(acc, "the argument must have rank at least 1"));
            }
            check_operator(f, seed.as_ref(), &a.elt, aenv).map_err(|m| at(acc, m))?;
            let o = sub(offsets, aenv, "the segment offsets")?;
            if o != (ArrayTy { rank: 1, elt: EltTy::Scalar(ScalarTy::I64) }) {
                return Err(at(acc, format!("segment offsets must be a vector of i64, found {o}")));
            }
            arr(a)
        }
        AccKind::Stencil { f, args } => {
            let mut params = Vec::new();
            let mut rank = None;
            for (k, s) in args.iter().enumerate() {
                let a = arg(&s.array, aenv, "a stencil argument")?;
                if rank.is_some_and(|r| r != a.rank) {
                    return Err(at(acc, "the stencil arguments have different ranks"));
                }
                rank = Some(a.rank);
                if s.extents.len() != a.rank || s.extents.iter().any(|e| e % 2 == 0) {
                    return Err(at(acc, format!("pattern {k} of extents {:?} for an array of rank {}: one odd extent per dimension", s.extents, a.rank)));
                }
                match &s.boundary {
                    Boundary::Constant(c) => {
                        let t = exp_ty_in(c, &mut senv.to_vec(), aenv).map_err(|m| at(acc, m))?;
                        if t != a.elt {
                            return Err(at(
                                acc,
                                format!("the boundary constant is {t}, the array holds {}", a.elt),
                            ));
                        }
                    }
                    Boundary::Function(g) => {
                        let t = fun_ty(g, &[EltTy::shape(a.rank)], aenv).map_err(|m| at(acc, m))?;
                        if t != a.elt {
                            return Err(at(
                                acc,
                                format!("the boundary function returns {t}, the array holds {}", a.elt),
                            ));
                        }
                    }
                    Boundary::Clamp | Boundary::Mirror | Boundary::Wrap => {}
                }
                let points: usize = s.extents.iter().product();
                params.extend(std::iter::repeat_n(a.elt.clone(), points));
            }
            let rank = rank.ok_or_else(|| at(acc, "a stencil of no arrays"))?;
            let elt = fun_ty(f, &params, aenv).map_err(|m| at(acc, m))?;
            arr(ArrayTy { rank, elt })
        }
        AccKind::Permute { combine, defaults, index, source } => {
            let d = sub(defaults, aenv, "the defaults")?;
            let s = arg(source, aenv, "the source")?;
            if d.elt != s.elt {
                return Err(at(acc, format!("defaults hold {} but the source holds {}", d.elt, s.elt)));
            }
            check_operator(combine, None, &d.elt, aenv).map_err(|m| at(acc, m))?;
            let r = fun_ty(index, &[EltTy::shape(s.rank)], aenv).map_err(|m| at(acc, m))?;
            let want = EltTy::Tuple(vec![EltTy::Scalar(ScalarTy::Bool), EltTy::shape(d.rank)]);
            if r != want {
                return Err(at(acc, format!("the index function must return {want}, found {r}")));
            }
            arr(d)
        }
        AccKind::Acond { cond, then_, else_ } => {
            let c = exp_ty_in(cond, &mut senv.to_vec(), aenv).map_err(|m| at(acc, m))?;
            if c != EltTy::Scalar(ScalarTy::Bool) {
                return Err(at(acc, format!("the condition must be bool, found {c}")));
            }
            let t = acc_ty(then_, aenv)?;
            let e = acc_ty(else_, aenv)?;
            if t != e {
                return Err(at(acc, format!("branches of types {t} and {e}")));
            }
            Ok(t)
        }
        AccKind::Awhile { pred, body, init } => {
            let t = acc_ty(init, aenv)?;
            let p = afun_ty(pred, &t, senv, aenv)?;
            let want = ArraysTy::Array(ArrayTy { rank: 0, elt: EltTy::Scalar(ScalarTy::Bool) });
            if p != want {
                return Err(at(acc, format!("the predicate must return {want}, found {p}")));
            }
            let b = afun_ty(body, &t, senv, aenv)?;
            if b != t {
                return Err(at(acc, format!("the body maps {t} to {b}")));
            }
            Ok(t)
        }
        AccKind::Foreign { func, fallback, arg } => {
            let t = acc_ty(arg, aenv)?;
            let Some(fallback) = fallback else { return Ok(func.result.clone()) };
            let r = afun_ty(fallback, &t, senv, aenv)?;
            if r != func.result {
                return Err(at(
                    acc,
                    format!("the fallback returns {r}, but {} returns {}", func.name, func.result),
                ));
            }
            Ok(r)
        }
        AccKind::Delayed(_) => Err(at(acc, "a delayed array outside the argument of a consumer")),
    }
}

/// The type of a delayed array (invariant 10).
fn delayed_ty(
    shape: &OpenExp,
    index: &Fun,
    linear: &Fun,
    senv: &[EltTy],
    aenv: &mut AEnv<'_>,
) -> Result<ArrayTy, String> {
    let st = exp_ty_in(shape, &mut senv.to_vec(), aenv)?;
    let rank = expect_shape(&st, None, "the shape")?;
    let elt = fun_ty_in_scope(index, &[EltTy::shape(rank)], senv, aenv)
        .map_err(|m| format!("the index function: {m}"))?;
    let lin = fun_ty_in_scope(linear, &[EltTy::Scalar(ScalarTy::I64)], senv, aenv)
        .map_err(|m| format!("the linear index function: {m}"))?;
    if lin != elt {
        return Err(format!("the index function gives {elt} but the linear index function {lin}"));
    }
    Ok(ArrayTy { rank, elt })
}

fn afun_ty(f: &AFun, arg: &ArraysTy, senv: &[EltTy], aenv: &mut AEnv<'_>) -> Result<ArraysTy, String> {
    if &f.param != arg {
        return Err(format!("array function takes {} but is given {arg}", f.param));
    }
    aenv.push(f.param.clone());
    let r = acc_ty_in(&f.body, senv, aenv);
    aenv.pop();
    r
}

fn check_operator(
    f: &Fun,
    seed: Option<&OpenExp>,
    elt: &EltTy,
    senv: &[EltTy],
    aenv: &mut AEnv<'_>,
) -> Result<(), String> {
    let r = fun_ty_in_scope(f, &[elt.clone(), elt.clone()], senv, aenv)?;
    if &r != elt {
        return Err(format!("the operator must return {elt}, found {r}"));
    }
    if let Some(z) = seed {
        let zt = exp_ty_in(z, &mut senv.to_vec(), aenv)?;
        if &zt != elt {
            return Err(format!("the seed must be {elt}, found {zt}"));
        }
    }
    Ok(())
}

/// The result type of a scalar function applied to arguments of the given
/// types.
pub fn fun_ty(f: &Fun, args: &[EltTy], aenv: &[ArraysTy]) -> Result<EltTy, String> {
    fun_ty_in_scope(f, args, &[], &mut AEnv { base: aenv, extra: Vec::new(), nested: true })
}

/// `fun_ty` for a function whose body also sees the scalar variables
/// `senv` (a function of an array term nested in scalar code).
fn fun_ty_in_scope(f: &Fun, args: &[EltTy], senv: &[EltTy], aenv: &mut AEnv<'_>) -> Result<EltTy, String> {
    if f.params.as_slice() != args {
        let show = |ts: &[EltTy]| ts.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(", ");
        return Err(format!("function of ({}) applied to ({})", show(&f.params), show(args)));
    }
    let mut env = senv.to_vec();
    env.extend(f.params.iter().cloned());
    exp_ty_in(&f.body, &mut env, aenv)
}

/// The type of a scalar expression.
pub fn exp_ty(e: &OpenExp, env: &mut Vec<EltTy>, aenv: &[ArraysTy]) -> Result<EltTy, String> {
    exp_ty_in(e, env, &mut AEnv { base: aenv, extra: Vec::new(), nested: true })
}

fn exp_ty_in(e: &OpenExp, env: &mut Vec<EltTy>, aenv: &mut AEnv<'_>) -> Result<EltTy, String> {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || exp_ty_inner(e, env, aenv))
}

fn exp_ty_inner(e: &OpenExp, env: &mut Vec<EltTy>, aenv: &mut AEnv<'_>) -> Result<EltTy, String> {
    let here = |m: String| format!("{m} (scalar expression at {})", e.loc);
    let array = |i: usize| -> Result<ArrayTy, String> {
        let t = aenv.lookup(i).ok_or_else(|| here(format!("array variable {i} is unbound")))?;
        one_array(t, "an indexed array").map_err(here)
    };
    match &e.kind {
        ExpKind::Let(b, body) => {
            let t = exp_ty_in(b, env, aenv)?;
            env.push(t);
            let r = exp_ty_in(body, env, aenv);
            env.pop();
            r
        }
        ExpKind::Var(i) => lookup(env, *i)
            .ok_or_else(|| here(format!("scalar variable {i} is unbound (environment of {})", env.len()))),
        ExpKind::Const(c) => Ok(EltTy::Scalar(c.ty())),
        ExpKind::Tuple(es) => {
            Ok(EltTy::Tuple(es.iter().map(|x| exp_ty_in(x, env, aenv)).collect::<Result<_, _>>()?))
        }
        ExpKind::Prj(i, t) => match exp_ty_in(t, env, aenv)? {
            EltTy::Tuple(ts) if *i < ts.len() => Ok(ts[*i].clone()),
            other => Err(here(format!("projection {i} out of {other}"))),
        },
        ExpKind::Prim(op, args) => {
            let ts = args.iter().map(|a| exp_ty_in(a, env, aenv)).collect::<Result<Vec<_>, _>>()?;
            op.result_ty(&ts).map_err(here)
        }
        ExpKind::Cond(c, t, f) => {
            let ct = exp_ty_in(c, env, aenv)?;
            if ct != EltTy::Scalar(ScalarTy::Bool) {
                return Err(here(format!("condition of type {ct}")));
            }
            let tt = exp_ty_in(t, env, aenv)?;
            let ft = exp_ty_in(f, env, aenv)?;
            if tt != ft {
                return Err(here(format!("branches of types {tt} and {ft}")));
            }
            Ok(tt)
        }
        ExpKind::While { cond, body, init } => {
            let t = exp_ty_in(init, env, aenv)?;
            let c = fun_ty_in(cond, &t, env, aenv)?;
            if c != EltTy::Scalar(ScalarTy::Bool) {
                return Err(here(format!("loop condition returns {c}")));
            }
            let b = fun_ty_in(body, &t, env, aenv)?;
            if b != t {
                return Err(here(format!("loop body maps {t} to {b}")));
            }
            Ok(t)
        }
        ExpKind::Index { array: a, index } => {
            let at = array(*a)?;
            let it = exp_ty_in(index, env, aenv)?;
            expect_shape(&it, Some(at.rank), "the index").map_err(here)?;
            Ok(at.elt)
        }
        ExpKind::LinearIndex { array: a, index } => {
            let at = array(*a)?;
            let it = exp_ty_in(index, env, aenv)?;
            if it != EltTy::Scalar(ScalarTy::I64) {
                return Err(here(format!("linear index of type {it}")));
            }
            Ok(at.elt)
        }
        ExpKind::Shape { array: a } => Ok(EltTy::shape(array(*a)?.rank)),
        ExpKind::ALet(bound, body) => {
            if !aenv.nested {
                return Err(here(
                    "an array term nested in scalar code (only sharing recovery's output has these)".into(),
                ));
            }
            let t = acc_ty_in(bound, env, aenv)?;
            aenv.push(t);
            let r = exp_ty_in(body, env, aenv);
            aenv.pop();
            r
        }
    }
}

/// A function nested in a scalar expression (a loop's condition or body)
/// sees the enclosing scalar environment.
fn fun_ty_in(f: &Fun, arg: &EltTy, env: &mut Vec<EltTy>, aenv: &mut AEnv<'_>) -> Result<EltTy, String> {
    if f.params.len() != 1 || &f.params[0] != arg {
        return Err(format!("loop function takes {:?} but is given {arg}", f.params));
    }
    env.push(arg.clone());
    let r = exp_ty_in(&f.body, env, aenv);
    env.pop();
    r
}

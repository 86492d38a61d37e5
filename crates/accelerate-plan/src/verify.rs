//! The plan verifier, run on every plan the pipeline makes (as the IR
//! verifier runs after every phase). It walks the host program once with
//! the types of the array variables in scope, and checks:
//!
//! 1. Every array variable a command names is bound (by a `Let`, an
//!    `Awhile` function or a parameter); `Prj` indexes within its tuple.
//! 2. `Unit`'s element type is its expression's; `Reshape`'s shape is a
//!    shape (flat `i64`s) of the array's; `Acond` has a `bool` condition
//!    and branches of one type; `Awhile`'s predicate gives a `bool` scalar
//!    array and its body the loop's type; `Use` holds data that matches its
//!    shape and element type.
//! 3. Kernels are launched in order: the `n`-th `Kernel` command of the
//!    host program's text launches kernel `n`, named `kn`, and every
//!    kernel is launched exactly once.
//! 4. A kernel's `inputs` are sorted, without repeats, and are exactly the
//!    array variables its code reads (its arguments, a fold_seg's offsets,
//!    what its scalar functions read), each bound at the launch site to
//!    one array of the recorded type.
//! 5. A kernel's operation (`Kernel::to_ir`) passes the IR verifier in
//!    the environment of its launch (invariants 1-7 and 10 of
//!    `ir::verify`: functions of the right types, delayed arguments only
//!    where a consumer reads them, closed scalar code), with the recorded
//!    result type, and each argument has its recorded type.
//!
//! Errors name the command or kernel and, for a kernel, the user's source
//! location. Linear in the size of the plan.

use super::{Cmd, Kernel, Program, Source};
use accelerate_base::array::{ArrayTy, ArraysTy, EltTy, ScalarTy};
use accelerate_base::error::Error;
use accelerate_ir::verify::{acc_ty, exp_ty};

/// Checks a plan; returns its result type.
pub fn verify_program(p: &Program) -> Result<ArraysTy, Error> {
    let mut v = Verifier { p, aenv: p.params.clone(), launched: 0 };
    let err = |message: String| Error::Verifier { phase: "plan".into(), message };
    let t = v.cmd(&p.body).map_err(err)?;
    if v.launched != p.kernels.len() {
        return Err(err(format!("{} kernels, of which {} are launched", p.kernels.len(), v.launched)));
    }
    if t != p.result {
        return Err(err(format!("the host program computes {t}, the plan says {}", p.result)));
    }
    Ok(t)
}

struct Verifier<'p> {
    p: &'p Program,
    aenv: Vec<ArraysTy>,
    launched: usize,
}

impl Verifier<'_> {
    fn cmd(&mut self, c: &Cmd) -> Result<ArraysTy, String> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.cmd_inner(c))
    }

    fn cmd_inner(&mut self, c: &Cmd) -> Result<ArraysTy, String> {
        match c {
            Cmd::Let(b, body) => {
                let t = self.cmd(b)?;
                self.aenv.push(t);
                let r = self.cmd(body);
                self.aenv.pop();
                r
            }
            Cmd::Var(i) => self.var(*i).cloned().ok_or_else(|| format!("array variable {i} is unbound")),
            Cmd::Tuple(cs) => Ok(ArraysTy::Tuple(cs.iter().map(|c| self.cmd(c)).collect::<Result<_, _>>()?)),
            Cmd::Prj(i, c) => match self.cmd(c)? {
                ArraysTy::Tuple(ts) if *i < ts.len() => Ok(ts[*i].clone()),
                other => Err(format!("projection {i} out of {other}")),
            },
            Cmd::Unzip(c) => match self.cmd(c)? {
                ArraysTy::Array(a) if a.unzipped().is_some() => Ok(a.unzipped().expect("tuples")),
                other => Err(format!("unzip of {other}, not an array of tuples")),
            },
            Cmd::Use(d) => {
                let n: usize = d.shape().iter().product();
                if d.buffers().len() != d.elt_ty().leaves().len() || d.buffers().iter().any(|b| b.len() != n)
                {
                    return Err("use: array data does not match its shape and element type".into());
                }
                Ok(ArraysTy::Array(d.ty()))
            }
            Cmd::Unit(e, elt) => {
                let t =
                    exp_ty(e, &mut Vec::new(), &self.aenv).map_err(|m| format!("unit at {}: {m}", e.loc))?;
                if t != *elt {
                    return Err(format!("unit at {}: an expression of {t} recorded as {elt}", e.loc));
                }
                Ok(ArraysTy::Array(ArrayTy { rank: 0, elt: t }))
            }
            Cmd::Reshape { shape, array, loc } => {
                let t = exp_ty(shape, &mut Vec::new(), &self.aenv)
                    .map_err(|m| format!("reshape at {loc}: {m}"))?;
                let rank = t.shape_rank().ok_or_else(|| format!("reshape at {loc}: to {t}, not a shape"))?;
                match self.cmd(array)? {
                    ArraysTy::Array(a) => Ok(ArraysTy::Array(ArrayTy { rank, elt: a.elt })),
                    other => Err(format!("reshape at {loc} of {other}")),
                }
            }
            Cmd::Acond { cond, then_, else_ } => {
                let t = exp_ty(cond, &mut Vec::new(), &self.aenv)
                    .map_err(|m| format!("acond at {}: {m}", cond.loc))?;
                if t != EltTy::Scalar(ScalarTy::Bool) {
                    return Err(format!("acond at {}: a condition of {t}", cond.loc));
                }
                let a = self.cmd(then_)?;
                let b = self.cmd(else_)?;
                if a != b {
                    return Err(format!("acond at {}: branches of {a} and {b}", cond.loc));
                }
                Ok(a)
            }
            Cmd::Awhile { pred, body, init } => {
                let t = self.cmd(init)?;
                self.aenv.push(t.clone());
                let p = self.cmd(pred);
                let b = self.cmd(body);
                self.aenv.pop();
                let want = ArraysTy::Array(ArrayTy { rank: 0, elt: EltTy::Scalar(ScalarTy::Bool) });
                if p? != want {
                    return Err("awhile: the predicate does not give a bool scalar".into());
                }
                let b = b?;
                if b != t {
                    return Err(format!("awhile: a body from {t} to {b}"));
                }
                Ok(t)
            }
            Cmd::Foreign { func, fallback, arg, loc } => {
                let t = self.cmd(arg)?;
                let Some(fallback) = fallback else { return Ok(func.result.clone()) };
                self.aenv.push(t);
                let f = self.cmd(fallback);
                self.aenv.pop();
                let f = f?;
                if f != func.result {
                    return Err(format!(
                        "foreign {} at {loc}: a fallback giving {f} for {}",
                        func.name, func.result
                    ));
                }
                Ok(f)
            }
            Cmd::Kernel(k) => {
                if *k != self.launched {
                    return Err(format!("kernel {k} is launched where kernel {} should be", self.launched));
                }
                self.launched += 1;
                let kernel = self
                    .p
                    .kernels
                    .get(*k)
                    .ok_or_else(|| format!("kernel {k} of {}", self.p.kernels.len()))?;
                self.kernel(*k, kernel).map_err(|m| {
                    format!("in kernel {} ({} at {}): {m}", kernel.name, kernel.op, kernel.loc)
                })?;
                Ok(kernel.result_ty())
            }
        }
    }

    fn var(&self, i: usize) -> Option<&ArraysTy> {
        self.aenv.len().checked_sub(i + 1).map(|k| &self.aenv[k])
    }

    fn kernel(&mut self, n: usize, k: &Kernel) -> Result<(), String> {
        if k.name != format!("k{n}") {
            return Err(format!("kernel {n} is named {}", k.name));
        }
        // invariant 4
        if k.inputs.windows(2).any(|w| w[0].0 >= w[1].0) {
            return Err("its inputs are not sorted without repeats".into());
        }
        for (v, t) in &k.inputs {
            match self.var(*v) {
                Some(ArraysTy::Array(a)) if a == t => {}
                Some(other) => return Err(format!("input {v} is recorded as {t} but is {other}")),
                None => return Err(format!("input {v} is unbound")),
            }
        }
        let mut reads = k.skeleton.arrays_read();
        reads.sort_unstable();
        reads.dedup();
        let recorded: Vec<usize> = k.inputs.iter().map(|(v, _)| *v).collect();
        if reads != recorded {
            return Err(format!("its code reads array variables {reads:?}, its inputs are {recorded:?}"));
        }
        // invariant 5
        for a in k.skeleton.args() {
            let t = match &a.source {
                Source::Manifest(v) => match self.var(*v) {
                    Some(ArraysTy::Array(t)) => t.clone(),
                    _ => return Err(format!("argument {v} is not an array in scope")),
                },
                Source::Delayed(d) => {
                    let elt = accelerate_ir::verify::fun_ty(&d.index, &[EltTy::shape(d.rank())], &self.aenv)?;
                    ArrayTy { rank: d.rank(), elt }
                }
            };
            if t != a.ty {
                return Err(format!("an argument of {t} recorded as {}", a.ty));
            }
        }
        if matches!(&k.skeleton, crate::Skeleton::Fold(f) if f.keep) && k.kept().is_none() {
            return Err(format!("a fold that keeps its source's elements reads {}, not pairs", k.out));
        }
        let t = acc_ty(&k.to_ir(), &mut self.aenv)?;
        if t != k.result_ty() {
            return Err(format!("it computes {t}, recorded as {}", k.result_ty()));
        }
        Ok(())
    }
}

//! The host side every backend shares: walking a plan's host program
//! (`plan::Cmd`) and evaluating the little scalar code that runs on the
//! host (shapes, `unit`, `acond` and `awhile` conditions, with the
//! interpreter's evaluator).
//!
//! What differs between the backends is what an array is (a host array
//! for the CPU backend and the interpreter; a handle on device memory for
//! the CUDA backend, whose elements reach the host only when host code
//! reads them) and how a kernel runs: a backend is a `Machine` over its
//! `HostArray`s, launching its own form of the plan's kernels.

use crate::interp::scalar::{lookup, ArrayEnv, ScalarEval};
use accelerate_base::array::{ArrayData, ArraysVal};
use accelerate_base::error::{Error, Result, SrcLoc};
use accelerate_base::foreign::{call_host, no_implementation, ForeignAcc};
use accelerate_plan::Cmd;
use std::collections::HashMap;
use std::sync::Arc;

/// An array as a backend holds it.
pub(crate) trait HostArray: Clone {
    fn shape(&self) -> &[usize];
    /// Its elements on the host (brought there on first use).
    fn host(&self) -> Result<&Arc<ArrayData>>;
    /// Runs the implementation of the foreign function `f` that arrays
    /// of this kind take, if `f` has one (`Machine::foreign`'s default).
    fn foreign(_f: &ForeignAcc, _loc: SrcLoc, _arg: &Value<Self>) -> Option<Result<Value<Self>>> {
        None
    }
}

impl HostArray for Arc<ArrayData> {
    fn shape(&self) -> &[usize] {
        ArrayData::shape(self)
    }

    fn host(&self) -> Result<&Arc<ArrayData>> {
        Ok(self)
    }

    /// Host arrays run a host implementation (`base::foreign::HostImpl`).
    fn foreign(f: &ForeignAcc, loc: SrcLoc, arg: &Value<Self>) -> Option<Result<Value<Self>>> {
        let r = call_host(f, loc, arg.clone().into_host())?;
        Some(r.map(Value::from_host))
    }
}

/// A value of an array program: an array or a tuple of values.
#[derive(Clone, Debug)]
pub(crate) enum Value<A> {
    Array(A),
    Tuple(Vec<Value<A>>),
}

impl Value<Arc<ArrayData>> {
    pub fn from_host(v: ArraysVal) -> Self {
        match v {
            ArraysVal::Array(a) => Value::Array(a),
            ArraysVal::Tuple(vs) => Value::Tuple(vs.into_iter().map(Value::from_host).collect()),
        }
    }

    pub fn into_host(self) -> ArraysVal {
        match self {
            Value::Array(a) => ArraysVal::Array(a),
            Value::Tuple(vs) => ArraysVal::Tuple(vs.into_iter().map(Value::into_host).collect()),
        }
    }
}

impl<A> Value<A> {
    pub fn into_array(self) -> Result<A> {
        match self {
            Value::Array(a) => Ok(a),
            Value::Tuple(_) => Err(Error::Internal("expected an array, found a tuple".into())),
        }
    }
}

/// The array variables in scope (innermost last): each one's value, or
/// the error its evaluation raised (Note [Deferred errors]).
pub(crate) struct Env<A> {
    slots: Vec<Result<Value<A>>>,
}

impl<A: HostArray> Env<A> {
    /// Array variable `v`.
    pub fn array(&self, v: usize) -> Result<&A> {
        match lookup(&self.slots, v) {
            Some(Ok(Value::Array(a))) => Ok(a),
            Some(Err(e)) => Err(e.clone()),
            _ => Err(Error::Internal(format!("array variable {v} is not an array in scope"))),
        }
    }

    pub fn scalars(&self) -> ScalarEval<'_> {
        ScalarEval { aenv: self }
    }

    /// Array variable `v`'s value, or the error its evaluation raised.
    pub fn slot(&self, v: usize) -> Option<&Result<Value<A>>> {
        lookup(&self.slots, v)
    }

    fn push(&mut self, val: Result<Value<A>>) {
        self.slots.push(val);
    }

    fn pop(&mut self) {
        self.slots.pop();
    }
}

impl<A: HostArray> ArrayEnv for Env<A> {
    fn shape(&self, i: usize) -> Result<&[usize]> {
        self.array(i).map(|a| a.shape())
    }

    fn array(&self, i: usize) -> Result<&Arc<ArrayData>> {
        Env::array(self, i)?.host()
    }
}

/// The members' values of a row group that ran (by kernel), or `None`
/// where its members must run one by one (`Machine::rows`).
pub(crate) type RowsRun<A> = Option<Vec<(usize, Value<A>)>>;

/// What a backend does with the commands of a plan.
pub(crate) trait Machine {
    type Array: HostArray;
    /// A kernel as this backend launches it.
    type Kernel;
    /// An array of the host as this backend holds it.
    fn upload(&self, a: Arc<ArrayData>) -> Result<Self::Array>;
    /// The same elements under another shape of the same size.
    fn reshaped(&self, a: &Self::Array, dims: Vec<usize>) -> Self::Array;
    /// The arrays of the components of an array of tuples (`Cmd::Unzip`):
    /// its buffers, moved when nothing else holds them (a kernel's fresh
    /// result), else copied.
    fn unzip(&self, a: Self::Array) -> Result<Vec<Self::Array>>;
    /// Runs kernel `k` in the environment `env`: its result (an array,
    /// or the pair of arrays of a fold that keeps its source's elements:
    /// `plan::Kernel::result_ty`).
    fn kernel(&self, k: &Self::Kernel, env: &Env<Self::Array>) -> Result<Value<Self::Array>>;
    /// The array variables a launch of `k` reads
    /// (`plan::Kernel::arrays_used`).
    fn uses<'k>(&self, k: &'k Self::Kernel) -> &'k [usize];
    /// The row group (`plan::rows`) whose first member is kernel `k`, if
    /// this backend runs it row by row.
    fn row_group(&self, _k: usize) -> Option<usize> {
        None
    }
    /// Runs row group `g` row by row: `items` are the commands of its
    /// chain of lets from its first member's launch on (the chain's body
    /// last), `env` the environment of that launch. Each member's value
    /// (by kernel), or `None` where the members must run one by one (the
    /// shapes do not allow it, or it would not pay, or a check failed:
    /// the launches one by one then raise the errors as they would).
    fn rows(
        &self,
        _g: usize,
        _items: &[&Cmd],
        _kernels: &[Self::Kernel],
        _env: &Env<Self::Array>,
    ) -> Result<RowsRun<Self::Array>> {
        Ok(None)
    }
    /// Runs an implementation of the foreign function `f` this backend
    /// has, on `arg`, for a call at `loc`; `None` where it has none (the
    /// walker then runs the fallback). By default, the implementation
    /// its kind of array takes (`HostArray::foreign`).
    fn foreign(
        &self,
        f: &ForeignAcc,
        loc: SrcLoc,
        arg: &Value<Self::Array>,
    ) -> Option<Result<Value<Self::Array>>> {
        Self::Array::foreign(f, loc, arg)
    }
}

/// `Machine::unzip` of an array on the host.
pub(crate) fn unzip_host(a: Arc<ArrayData>) -> Result<Vec<Arc<ArrayData>>> {
    let parts = a.unzip().ok_or_else(|| Error::Internal("unzip of an array of no tuples".into()))?;
    Ok(parts.into_iter().map(Arc::new).collect())
}

/// Runs a plan's host program on its arguments (its parameters' values,
/// outermost first), launching `kernels` (the plan's, in this backend's
/// form).
pub(crate) fn run<M: Machine>(
    m: &M,
    body: &Cmd,
    kernels: &[M::Kernel],
    args: Vec<Value<M::Array>>,
) -> Result<Value<M::Array>> {
    let env = Env { slots: args.into_iter().map(Ok).collect() };
    Walker { m, kernels, env, ran: HashMap::new() }.cmd(body)
}

struct Walker<'m, M: Machine> {
    m: &'m M,
    kernels: &'m [M::Kernel],
    env: Env<M::Array>,
    /// The values of kernels a row group has computed, until their
    /// launches are reached.
    ran: HashMap<usize, Value<M::Array>>,
}

impl<M: Machine> Walker<'_, M> {
    fn cmd(&mut self, c: &Cmd) -> Result<Value<M::Array>> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.cmd_inner(c))
    }

    fn cmd_inner(&mut self, c: &Cmd) -> Result<Value<M::Array>> {
        match c {
            Cmd::Let(..) => self.lets(c),
            Cmd::Var(i) => match lookup(&self.env.slots, *i) {
                Some(v) => v.clone(),
                None => Err(Error::Internal(format!("array variable {i} unbound"))),
            },
            Cmd::Tuple(ts) => Ok(Value::Tuple(ts.iter().map(|t| self.cmd(t)).collect::<Result<_>>()?)),
            Cmd::Prj(i, t) => match self.cmd(t)? {
                Value::Tuple(mut vs) if *i < vs.len() => Ok(vs.swap_remove(*i)),
                _ => Err(Error::Internal(format!("array projection {i} of a non-tuple"))),
            },
            Cmd::Unzip(t) => match self.cmd(t)? {
                Value::Array(a) => Ok(Value::Tuple(self.m.unzip(a)?.into_iter().map(Value::Array).collect())),
                Value::Tuple(_) => Err(Error::Internal("unzip of a tuple of arrays".into())),
            },
            Cmd::Use(d) => Ok(Value::Array(self.m.upload(d.clone())?)),
            Cmd::Unit(e, elt) => {
                let v = self.env.scalars().eval(e, &mut Vec::new())?;
                let mut b = ArrayData::builder(elt, 1)
                    .ok_or_else(|| Error::OutOfMemory { loc: e.loc, shape: vec![] })?;
                b.push(&v);
                let d = b.finish(vec![]).ok_or_else(|| Error::Internal("unit of the wrong type".into()))?;
                Ok(Value::Array(self.m.upload(Arc::new(d))?))
            }
            Cmd::Reshape { shape, array, loc } => {
                let dims = self.env.scalars().shape(shape)?;
                let src = self.cmd(array)?.into_array()?;
                let size: usize = dims.iter().product();
                let from_size: usize = src.shape().iter().product();
                if size != from_size {
                    return Err(Error::ReshapeSize {
                        loc: *loc,
                        from: src.shape().to_vec(),
                        from_size,
                        to: dims.iter().map(|&d| d as i64).collect(),
                        to_size: size,
                    });
                }
                Ok(Value::Array(self.m.reshaped(&src, dims)))
            }
            Cmd::Acond { cond, then_, else_ } => {
                let c = self.env.scalars().eval(cond, &mut Vec::new())?;
                match c.scalar().and_then(|b| b.as_bool()) {
                    Some(true) => self.cmd(then_),
                    Some(false) => self.cmd(else_),
                    None => Err(Error::Internal("acond on a non-bool".into())),
                }
            }
            Cmd::Awhile { pred, body, init } => {
                let mut x = self.cmd(init)?;
                loop {
                    self.env.push(Ok(x.clone()));
                    let p = self.cmd(pred);
                    self.env.pop();
                    let p = p?.into_array()?;
                    let go = p.host()?.get(0).scalar().and_then(|b| b.as_bool());
                    if !go.ok_or_else(|| Error::Internal("awhile predicate is not a bool".into()))? {
                        return Ok(x);
                    }
                    self.env.push(Ok(x));
                    let next = self.cmd(body);
                    self.env.pop();
                    x = next?;
                }
            }
            Cmd::Foreign { func, fallback, arg, loc } => {
                let x = self.cmd(arg)?;
                if let Some(r) = self.m.foreign(func, *loc, &x) {
                    return r;
                }
                let Some(fallback) = fallback else { return Err(no_implementation(func, *loc)) };
                self.env.push(Ok(x));
                let r = self.cmd(fallback);
                self.env.pop();
                r
            }
            Cmd::Kernel(k) => match self.ran.remove(k) {
                Some(v) => Ok(v),
                None => self.m.kernel(&self.kernels[*k], &self.env),
            },
        }
    }

    /// Runs the row group that starts at `items[0]` if the machine has
    /// one there and runs it row by row: its members' values wait in
    /// `ran` for their launches.
    fn row_group(&mut self, items: &[&Cmd]) -> Result<()> {
        let Some(Cmd::Kernel(k)) = items.first() else { return Ok(()) };
        if let Some(g) = self.m.row_group(*k) {
            if let Some(vals) = self.m.rows(g, items, self.kernels, &self.env)? {
                self.ran.extend(vals);
            }
        }
        Ok(())
    }

    /// A chain of lets and its body, each binding's array freed after its
    /// last use (Note [Freeing arrays after their last use]).
    fn lets(&mut self, c: &Cmd) -> Result<Value<M::Array>> {
        let mut binds = Vec::new();
        let mut body = c;
        while let Cmd::Let(b, rest) = body {
            binds.push(&**b);
            body = rest;
        }
        let (base, n) = (self.env.slots.len(), binds.len());
        // the last command of the chain that reads each binding (n: the
        // body, which keeps it to the end)
        let mut last: Vec<Option<usize>> = vec![None; n];
        let mut reads = Vec::new();
        for (j, b) in binds.iter().chain(std::iter::once(&body)).enumerate() {
            reads.clear();
            self.arrays_used(b, 0, &mut reads);
            for &v in &reads {
                // variable v, read under the chain's first j bindings
                if let Some(i) = j.checked_sub(1 + v) {
                    last[i] = Some(j);
                }
            }
        }
        let mut free_after: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, l) in last.iter().enumerate() {
            match l {
                Some(j) if *j < n => free_after[*j].push(i),
                Some(_) => {}
                None => free_after[i].push(i),
            }
        }
        let items: Vec<&Cmd> = binds.iter().copied().chain(std::iter::once(body)).collect();
        for (j, b) in binds.iter().enumerate() {
            self.row_group(&items[j..])?;
            // Note [Deferred errors]: a failed binding fails only its uses
            let val = match self.unzip_at_last_use(b, base, &free_after[j]) {
                Some(val) => val,
                None => self.cmd(b),
            };
            self.env.push(val);
            for &i in &free_after[j] {
                self.env.slots[base + i] =
                    Err(Error::Internal(format!("array variable freed at {j} of {n}")));
            }
        }
        let r = self.cmd(body);
        self.env.slots.truncate(base);
        self.ran.clear();
        r
    }

    /// `unzip v` where `v` is a binding of the chain at `base` that this
    /// command reads last (`freed`, by index in the chain): its array is
    /// moved out of the slot, not shared, so that an array nothing else
    /// holds gives up its buffers instead of having them copied. A text
    /// program returning the fields of an array of records unzips it this
    /// way, once per level of records (`accelerate-text`'s `lower`).
    fn unzip_at_last_use(
        &mut self,
        c: &Cmd,
        base: usize,
        freed: &[usize],
    ) -> Option<Result<Value<M::Array>>> {
        let Cmd::Unzip(t) = c else { return None };
        let Cmd::Var(v) = **t else { return None };
        let k = self.env.slots.len().checked_sub(v + 1)?;
        if !freed.contains(&k.checked_sub(base)?) {
            return None;
        }
        let moved = Err(Error::Internal(format!("array variable {v} moved at its last use")));
        Some(match std::mem::replace(&mut self.env.slots[k], moved) {
            Ok(Value::Array(a)) => {
                self.m.unzip(a).map(|parts| Value::Tuple(parts.into_iter().map(Value::Array).collect()))
            }
            Ok(Value::Tuple(_)) => Err(Error::Internal("unzip of a tuple of arrays".into())),
            Err(e) => Err(e),
        })
    }

    /// The array variables `c` reads (those bound outside it, as seen
    /// from it, under `depth` binders of its own), into `out`.
    fn arrays_used(&self, c: &Cmd, depth: usize, out: &mut Vec<usize>) {
        c.arrays_read(depth, &|k, out| out.extend_from_slice(self.m.uses(&self.kernels[k])), out);
    }
}

// Note [Freeing arrays after their last use]
// Fusion leaves a program as one flat chain of lets, a kernel each
// (`let a1 = k0 in let a2 = k1 in ...`), and an environment that kept
// every binding until the chain's end kept every intermediate array of
// the program alive at once: the library's radix sort of 2^22 keys (32
// passes, 130 kernels) peaked at 4.95 GB against 0.63 GB unfused, and
// at 2^24 was killed for want of memory. So a chain is run as a loop
// that knows, for each binding, the last command of the chain that reads
// it (a kernel reads what `plan::Kernel::arrays_used` names, on the host
// or in its code), and releases the binding's slot right after that
// command: its array is freed unless a result still holds it (values are
// shared, so a tuple returned by the body keeps its arrays). A binding no
// command reads is released as soon as it is bound. A released slot
// holds an internal error, so that a read the analysis missed fails
// loudly instead of reading freed memory. Finding the last uses costs
// one walk of the chain's commands each time the chain runs, small
// beside its kernels.

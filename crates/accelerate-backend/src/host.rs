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
use std::rc::Rc;
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

    /// Array variable `v`'s array, taken out of its slot (which then holds
    /// an error): a kernel writing over it (Note [Donated arrays]).
    /// `None`, the slot untouched, when it holds no array.
    pub fn take_array(&mut self, v: usize) -> Option<A> {
        let k = self.slots.len().checked_sub(1 + v)?;
        if !matches!(self.slots[k], Ok(Value::Array(_))) {
            return None;
        }
        let given = Err(Error::Internal(format!("array variable {v} given to a kernel to write over")));
        match std::mem::replace(&mut self.slots[k], given) {
            Ok(Value::Array(a)) => Some(a),
            _ => None,
        }
    }

    /// Puts back an array `take_array` took.
    pub fn put_array(&mut self, v: usize, a: A) {
        if let Some(k) = self.slots.len().checked_sub(1 + v) {
            self.slots[k] = Ok(Value::Array(a));
        }
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
    /// The input variable kernel `k` may write its result over, if this
    /// backend does that (Note [Updates in place] in `plan/in_place.rs`).
    fn in_place(&self, _k: &Self::Kernel) -> Option<usize> {
        None
    }
    /// Runs kernel `k`, whose input variable `v` nothing reads after this
    /// launch (Note [Donated arrays]): the backend may take its array out
    /// of `env` and write the result over it. By default, `kernel`.
    fn kernel_donated(
        &self,
        k: &Self::Kernel,
        env: &mut Env<Self::Array>,
        _v: usize,
    ) -> Result<Value<Self::Array>> {
        self.kernel(k, env)
    }
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
    let (owned_param, donated, chains) = (false, Vec::new(), HashMap::new());
    Walker { m, kernels, env, ran: HashMap::new(), owned_param, donated, chains }.cmd(body)
}

struct Walker<'m, M: Machine> {
    m: &'m M,
    kernels: &'m [M::Kernel],
    env: Env<M::Array>,
    /// The values of kernels a row group has computed, until their
    /// launches are reached.
    ran: HashMap<usize, Value<M::Array>>,
    /// The chain about to run is an `awhile` body, whose parameter (the
    /// slot below it) only it holds (Note [Donated arrays]).
    owned_param: bool,
    /// The slots (by position) of arrays dead after the launch of a kernel
    /// (by number) that reads them last (Note [Donated arrays]).
    donated: Vec<(usize, usize)>,
    /// What each chain of lets that has run knows of itself, by its
    /// first command and whether it owns an `awhile` state.
    chains: HashMap<(usize, bool), Rc<Chain>>,
}

/// What a chain of lets needs to know of itself each time it runs
/// (`Walker::chain`).
struct Chain {
    /// The bindings (by index in the chain) each command but the body
    /// frees after it.
    free_after: Vec<Vec<usize>>,
    /// Whether the `awhile` state the chain owns is freed: before its
    /// first command (`Some(None)`: none reads it) or after command `j`
    /// (`Some(Some(j))`); `None` where the chain owns none or its body
    /// reads it.
    state_freed: Option<Option<usize>>,
    /// For each command, the body last: the slots (by offset from the
    /// chain's first; the state is -1) a launch in it may write over, with
    /// the kernel of that launch.
    donations: Vec<Vec<(isize, usize)>>,
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
                    // the body, as a chain, may free the state (Note
                    // [Donated arrays])
                    self.owned_param = true;
                    let next = self.lets(body);
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
                None => {
                    let kernel = &self.kernels[*k];
                    if let Some(v) = self.m.in_place(kernel) {
                        let slot = self.env.slots.len().checked_sub(1 + v);
                        if let Some(at) = self.donated.iter().position(|&d| Some(d.0) == slot && d.1 == *k) {
                            self.donated.swap_remove(at);
                            return self.m.kernel_donated(kernel, &mut self.env, v);
                        }
                    }
                    self.m.kernel(kernel, &self.env)
                }
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
        let param = std::mem::take(&mut self.owned_param);
        let mut binds = Vec::new();
        let mut body = c;
        while let Cmd::Let(b, rest) = body {
            binds.push(&**b);
            body = rest;
        }
        let (base, n) = (self.env.slots.len(), binds.len());
        let key = (c as *const Cmd as usize, param);
        let chain = match self.chains.get(&key) {
            Some(chain) => chain.clone(),
            None => {
                let chain = Rc::new(self.chain(&binds, body, param));
                self.chains.insert(key, chain.clone());
                chain
            }
        };
        if chain.state_freed == Some(None) {
            self.env.slots[base - 1] = Err(Error::Internal("awhile state freed".into()));
        }
        let items: Vec<&Cmd> = binds.iter().copied().chain(std::iter::once(body)).collect();
        let mark = self.donated.len();
        let slot = |off: isize| base.checked_add_signed(off).expect("a slot of the chain or its state");
        for (j, b) in binds.iter().enumerate() {
            self.row_group(&items[j..])?;
            self.donated.extend(chain.donations[j].iter().map(|&(off, k)| (slot(off), k)));
            // Note [Deferred errors]: a failed binding fails only its uses
            let val = match self.unzip_at_last_use(b, base, &chain.free_after[j]) {
                Some(val) => val,
                None => self.cmd(b),
            };
            self.donated.truncate(mark);
            self.env.push(val);
            for &i in &chain.free_after[j] {
                self.env.slots[base + i] =
                    Err(Error::Internal(format!("array variable freed at {j} of {n}")));
            }
            if chain.state_freed == Some(Some(j)) {
                self.env.slots[base - 1] = Err(Error::Internal("awhile state freed".into()));
            }
        }
        self.donated.extend(chain.donations[n].iter().map(|&(off, k)| (slot(off), k)));
        let r = self.cmd(body);
        self.donated.truncate(mark);
        self.env.slots.truncate(base);
        self.ran.clear();
        r
    }

    /// What a chain of lets (`binds`, then `body`) needs to know of itself
    /// each time it runs, found the first time it runs: the bindings each
    /// command frees after it (Note [Freeing arrays after their last
    /// use]), when the `awhile` state it owns (`param`) is freed, and the
    /// launches that may write over a slot dead after them (Note [Donated
    /// arrays]).
    fn chain(&self, binds: &[&Cmd], body: &Cmd, param: bool) -> Chain {
        let n = binds.len();
        // the last command of the chain that reads each binding (n: the
        // body, which keeps it to the end)
        let mut last: Vec<Option<usize>> = vec![None; n];
        // (and of the awhile's state the chain owns, variable j at j)
        let mut last_param = None;
        let mut reads = Vec::new();
        for (j, b) in binds.iter().copied().chain(std::iter::once(body)).enumerate() {
            reads.clear();
            self.arrays_used(b, 0, &mut reads);
            for &v in &reads {
                // variable v, read under the chain's first j bindings
                if let Some(i) = j.checked_sub(1 + v) {
                    last[i] = Some(j);
                } else if param && v == j {
                    last_param = Some(j);
                }
            }
        }
        let mut free_after: Vec<Vec<usize>> = vec![Vec::new(); n];
        // each command's dying slots: (offset from the chain's first slot,
        // variable as the command sees it)
        let mut dying: Vec<Vec<(isize, usize)>> = vec![Vec::new(); n + 1];
        for (i, l) in last.iter().enumerate() {
            match *l {
                Some(j) => {
                    dying[j].push((i as isize, j - 1 - i));
                    if j < n {
                        free_after[j].push(i);
                    }
                }
                None => free_after[i].push(i),
            }
        }
        if let (true, Some(j)) = (param, last_param) {
            dying[j].push((-1, j));
        }
        let state_freed = match (param, last_param) {
            (false, _) => None,
            (true, None) => Some(None),
            (true, Some(j)) => (j < n).then_some(Some(j)),
        };
        let donations = binds
            .iter()
            .copied()
            .chain(std::iter::once(body))
            .zip(&dying)
            .map(|(c, dying)| self.donations(c, dying))
            .collect();
        Chain { free_after, state_freed, donations }
    }

    /// For each slot of `dying` (nothing reads it after command `c`: its
    /// offset and its variable as `c` sees it), the launch in `c` that
    /// reads it last, if that is a launch that runs once (Note [Donated
    /// arrays]).
    fn donations(&self, c: &Cmd, dying: &[(isize, usize)]) -> Vec<(isize, usize)> {
        if dying.is_empty() {
            return Vec::new();
        }
        let mut sites = Vec::new();
        self.read_sites(c, 0, true, &mut sites);
        dying
            .iter()
            .filter_map(|&(off, v)| match sites.iter().rev().find(|s| s.0 == v) {
                Some(&(_, Some(k))) => Some((off, k)),
                _ => None,
            })
            .collect()
    }

    /// The reads of the array variables bound outside `c` (as seen from
    /// it, under `depth` binders of its own), in the order `c` makes them:
    /// each with the kernel that reads it, where that launch runs once
    /// (`once`: not in a loop or a branch), or `None`.
    fn read_sites(&self, c: &Cmd, depth: usize, once: bool, out: &mut Vec<(usize, Option<usize>)>) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            let (mut c, mut depth) = (c, depth);
            while let Cmd::Let(b, body) = c {
                self.read_sites(b, depth, once, out);
                (c, depth) = (body, depth + 1);
            }
            let mut reads = Vec::new();
            match c {
                Cmd::Let(..) | Cmd::Use(_) => {}
                Cmd::Tuple(ts) => ts.iter().for_each(|t| self.read_sites(t, depth, once, out)),
                Cmd::Prj(_, t) | Cmd::Unzip(t) => self.read_sites(t, depth, once, out),
                Cmd::Kernel(k) => {
                    let k = *k;
                    let vs = self.m.uses(&self.kernels[k]).iter().filter_map(|v| v.checked_sub(depth));
                    out.extend(vs.map(|v| (v, once.then_some(k))));
                }
                Cmd::Reshape { array, .. } => {
                    self.arrays_used(c, depth, &mut reads);
                    out.extend(reads.iter().map(|&v| (v, None)));
                    self.read_sites(array, depth, once, out);
                }
                Cmd::Awhile { init, .. } => {
                    self.read_sites(init, depth, once, out);
                    self.arrays_used(c, depth, &mut reads);
                    out.extend(reads.iter().map(|&v| (v, None)));
                }
                Cmd::Foreign { arg, .. } => {
                    self.read_sites(arg, depth, once, out);
                    self.arrays_used(c, depth, &mut reads);
                    out.extend(reads.iter().map(|&v| (v, None)));
                }
                Cmd::Var(_) | Cmd::Unit(..) | Cmd::Acond { .. } => {
                    self.arrays_used(c, depth, &mut reads);
                    out.extend(reads.iter().map(|&v| (v, None)));
                }
            }
        })
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

// Note [Donated arrays]
// A kernel may write its result over an input (Note [Updates in place]
// in `plan/in_place.rs`) only if nothing reads that input again. The
// walker knows which arrays those are: a binding of a chain of lets that
// no later command reads (the analysis of Note [Freeing arrays after
// their last use], the body included), and the state of an `awhile`,
// whose body's chain owns it (the loop moves the state into the body's
// environment and keeps no other copy) and frees it after the last
// command that reads it, usually the projections that bind its
// components. For each such slot, the chain finds the launch that reads
// it last within the command that reads it last, in the order the
// command runs its parts, if that launch runs once (not in a loop, a
// branch or a foreign call's fallback); when that launch is reached, the
// walker hands the slot to the backend (`Machine::kernel_donated`), which
// takes the array out of the environment only when its buffers are held
// by nothing else (an `Arc` with one owner: a user's array, a `use`d
// constant or an array also returned by the loop has more) and have the
// result's shape, and otherwise runs the kernel as always. So the first
// step of Floyd-Warshall's loop reads the user's matrix and writes a new
// one, and every later step writes over the matrix the step before made.
// The chain's analysis is made once a run, the first time the chain runs
// (`Walker::chain`), not each time: made each time, it was half of the
// host's time in a step of Floyd-Warshall at n = 64 (10 µs a step against
// 5 on the AMD EPYC guest).

//! The host side both C-family backends share: walking a lowered
//! program's commands (`lower::Cmd`), evaluating the little scalar code
//! that runs on the host (shapes, `unit`, `acond` and `awhile`
//! conditions, with the interpreter's evaluator), and the checks the host
//! makes before a kernel runs, which raise the interpreter's errors.
//!
//! What differs between the backends is what an array is (a host array
//! for the CPU backend; a handle on device memory for the CUDA backend,
//! whose elements reach the host only when host code reads them) and how
//! a kernel runs: a backend is a `Machine` over its `HostArray`s.

use super::kernel::{Kernel, ShapeOf};
use super::lower::Cmd;
use crate::array::{ArrayData, ArraysVal, Buffer};
use crate::backend::interp::scalar::{lookup, ArrayEnv, ScalarEval};
use crate::backend::interp::{check_offsets, split_inner};
use crate::exec::error::{Error, Result, SrcLoc};
use std::sync::Arc;

/// An array as a backend holds it.
pub(crate) trait HostArray: Clone {
    fn shape(&self) -> &[usize];
    /// Its elements on the host (brought there on first use).
    fn host(&self) -> Result<&Arc<ArrayData>>;
}

impl HostArray for Arc<ArrayData> {
    fn shape(&self) -> &[usize] {
        ArrayData::shape(self)
    }

    fn host(&self) -> Result<&Arc<ArrayData>> {
        Ok(self)
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

    /// The shape of a kernel's argument.
    pub fn shape_of(&self, s: &ShapeOf) -> Result<Vec<usize>> {
        match s {
            ShapeOf::Var(v) => Ok(self.array(*v)?.shape().to_vec()),
            ShapeOf::Exp(e) => self.scalars().shape(e),
        }
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

/// What a backend does with the commands of a lowered program.
pub(crate) trait Machine {
    type Array: HostArray;
    /// An array of the host as this backend holds it.
    fn upload(&self, a: Arc<ArrayData>) -> Result<Self::Array>;
    /// The same elements under another shape of the same size.
    fn reshaped(&self, a: &Self::Array, dims: Vec<usize>) -> Self::Array;
    /// Runs kernel `k` in the environment `env`: its result.
    fn kernel(&self, k: &Kernel, env: &Env<Self::Array>) -> Result<Self::Array>;
}

/// Runs a lowered program's commands on its arguments (its parameters'
/// values, outermost first).
pub(crate) fn run<M: Machine>(
    m: &M,
    body: &Cmd,
    kernels: &[Kernel],
    args: Vec<Value<M::Array>>,
) -> Result<Value<M::Array>> {
    let env = Env { slots: args.into_iter().map(Ok).collect() };
    Walker { m, kernels, env }.cmd(body)
}

struct Walker<'m, M: Machine> {
    m: &'m M,
    kernels: &'m [Kernel],
    env: Env<M::Array>,
}

impl<M: Machine> Walker<'_, M> {
    fn cmd(&mut self, c: &Cmd) -> Result<Value<M::Array>> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.cmd_inner(c))
    }

    fn cmd_inner(&mut self, c: &Cmd) -> Result<Value<M::Array>> {
        match c {
            Cmd::Let(b, body) => {
                // Note [Deferred errors]: a failed binding fails only its uses
                let val = self.cmd(b);
                self.env.push(val);
                let r = self.cmd(body);
                self.env.pop();
                r
            }
            Cmd::Var(i) => match lookup(&self.env.slots, *i) {
                Some(v) => v.clone(),
                None => Err(Error::Internal(format!("array variable {i} unbound"))),
            },
            Cmd::Tuple(ts) => Ok(Value::Tuple(ts.iter().map(|t| self.cmd(t)).collect::<Result<_>>()?)),
            Cmd::Prj(i, t) => match self.cmd(t)? {
                Value::Tuple(mut vs) if *i < vs.len() => Ok(vs.swap_remove(*i)),
                _ => Err(Error::Internal(format!("array projection {i} of a non-tuple"))),
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
            Cmd::Kernel(k) => Ok(Value::Array(self.m.kernel(&self.kernels[*k], &self.env)?)),
        }
    }
}

/// A reduction's or scan's source as rows: the outer extents, the row
/// length and the number of rows. `fold1` or `scan1` of an empty row is
/// an error, raised before any kernel runs.
pub(crate) fn rows_of(
    k: &Kernel,
    shape: &[usize],
    seed: bool,
    op: &'static str,
) -> Result<(Vec<usize>, usize, usize)> {
    let (outer, n) = split_inner(shape);
    let rows: usize = outer.iter().product();
    if !seed && n == 0 && rows > 0 {
        return Err(Error::EmptyReduction { loc: k.loc, op, shape: shape.to_vec() });
    }
    Ok((outer, n, rows))
}

/// The offsets of a segmented reduction over rows of `n` elements,
/// checked as the interpreter checks them; `fold1_seg` with an empty
/// segment is an error.
pub(crate) fn segments<A: HostArray>(
    env: &Env<A>,
    k: &Kernel,
    offsets: usize,
    shape: &[usize],
    seed: bool,
    op: &'static str,
) -> Result<Vec<i64>> {
    let offs: Vec<i64> = match env.array(offsets)?.host()?.buffers().first() {
        Some(Buffer::I64(v)) => v.clone(),
        _ => return Err(Error::Internal("segment offsets are not i64".into())),
    };
    let (outer, n) = split_inner(shape);
    check_offsets(&offs, n, k.loc)?;
    let rows: usize = outer.iter().product();
    if !seed && rows > 0 && offs.windows(2).any(|w| w[0] == w[1]) {
        return Err(Error::EmptyReduction { loc: k.loc, op, shape: shape.to_vec() });
    }
    Ok(offs)
}

/// The shape of a stencil's result: its sources' shape, which must agree,
/// and which every pattern must fit in (unless it is empty).
pub(crate) fn stencil_shape<A: HostArray>(
    env: &Env<A>,
    k: &Kernel,
    sources: &[ShapeOf],
    patterns: &[Vec<usize>],
) -> Result<Vec<usize>> {
    let shapes = sources.iter().map(|s| env.shape_of(s)).collect::<Result<Vec<_>>>()?;
    let dims = shapes[0].clone();
    if let Some(b) = shapes.get(1).filter(|b| **b != dims) {
        return Err(Error::ShapeMismatch { loc: k.loc, op: "stencil2", first: dims, second: b.clone() });
    }
    if !dims.contains(&0) {
        if let Some(p) = patterns.iter().find(|p| p.iter().zip(&dims).any(|(e, d)| e > d)) {
            return Err(Error::StencilTooSmall { loc: k.loc, pattern: p.clone(), shape: dims });
        }
    }
    Ok(dims)
}

/// `acc_err` of the preludes (`prelude_common.h`): the first error a
/// kernel raised.
#[repr(C)]
#[derive(Clone, Copy)]
pub(crate) struct AccErr {
    pub code: i32,
    pub site: i32,
    pub vals: [i64; 64],
}

impl AccErr {
    pub const NONE: AccErr = AccErr { code: 0, site: 0, vals: [0; 64] };

    /// The error a kernel raised, naming the user's line.
    pub fn error(&self, k: &Kernel) -> Error {
        let loc: SrcLoc = match k.sites.get(self.site as usize) {
            Some(l) => *l,
            None => {
                return Error::Internal(format!(
                    "kernel {} raised error {} at unknown site {}",
                    k.name, self.code, self.site
                ))
            }
        };
        let v = &self.vals;
        let usizes = |s: &[i64]| s.iter().map(|&d| d.max(0) as usize).collect::<Vec<_>>();
        match self.code {
            1 => Error::DivisionByZero { loc },
            2 => {
                let r = (v[0].max(0) as usize).min(31);
                Error::IndexOutOfBounds {
                    loc,
                    index: v[1..1 + r].to_vec(),
                    shape: usizes(&v[1 + r..1 + 2 * r]),
                }
            }
            3 => {
                let r = (v[2].max(0) as usize).min(60);
                Error::LinearIndexOutOfBounds {
                    loc,
                    index: v[0],
                    size: v[1].max(0) as usize,
                    shape: usizes(&v[3..3 + r]),
                }
            }
            4 => {
                let a = (v[0].max(0) as usize).min(30);
                let from = &v[1..1 + a];
                let b = (v[1 + a].max(0) as usize).min(30);
                let to = v[2 + a..2 + a + b].to_vec();
                let size = |s: &[i64]| s.iter().fold(1usize, |acc, &d| acc.saturating_mul(d.max(0) as usize));
                Error::ReshapeSize { loc, from: usizes(from), from_size: size(from), to_size: size(&to), to }
            }
            other => Error::Internal(format!("kernel {} raised unknown error code {other}", k.name)),
        }
    }
}

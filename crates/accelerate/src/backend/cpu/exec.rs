//! The executor: walks a lowered program's host commands, evaluates the
//! little scalar code that runs on the host (shapes, `unit`, `acond`
//! conditions, with the interpreter's evaluator), and launches kernels on
//! the worker pool.
//!
//! Note [Chunks]
//! A kernel's iteration space `0 .. n` is cut into chunks of at least a
//! skeleton's grain (enough work to amortise a task: about 16 Ki elements)
//! and at most `4 * workers` chunks, which rayon's work stealing balances.
//! A space smaller than one grain runs on the calling thread.

use super::compile::{KernelFn, Module};
use crate::array::{ArrayData, ArraysVal, Buffer, EltTy};
use crate::backend::c::kernel::{Kernel, ShapeOf, Skeleton};
use crate::backend::c::lower::Cmd;
use crate::backend::interp::scalar::{ASlot, ScalarEval};
use crate::backend::interp::{check_offsets, split_inner};
use crate::exec::error::{Error, Result, SrcLoc};
use rayon::prelude::*;
use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

/// What a kernel reads in place of an empty input buffer: one element of
/// any type, zero (kernels only read their inputs).
static EMPTY_INPUT: [u64; 2] = [0; 2];

/// `acc_err` of the C prelude.
#[repr(C)]
pub(crate) struct AccErr {
    code: i32,
    site: i32,
    vals: [i64; 64],
}

/// `acc_args` of the C prelude.
#[repr(C)]
pub(crate) struct AccArgs {
    bufs: *const *mut c_void,
    extents: *const i64,
    params: *const i64,
    consts: *const i64,
    err: *mut AccErr,
}

/// Elements per chunk below which splitting does not pay.
const GRAIN: usize = 16 * 1024;

/// The worker pool: `ACCELERATE_THREADS` workers, else one per core.
pub(crate) fn pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        let n = std::env::var("ACCELERATE_THREADS").ok().and_then(|s| s.parse::<usize>().ok()).unwrap_or(0);
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .thread_name(|i| format!("accelerate-cpu-{i}"))
            .build()
            .or_else(|_| rayon::ThreadPoolBuilder::new().num_threads(1).build())
            .expect("a thread pool of one worker can always be built")
    })
}

fn workers() -> usize {
    pool().current_num_threads()
}

/// Runs a lowered program.
pub(crate) fn run(
    body: &Cmd,
    kernels: &[Kernel],
    module: &Module,
    args: Vec<ArraysVal>,
) -> Result<ArraysVal> {
    let aenv = args.into_iter().map(|v| ASlot { ty: v.ty(), val: Ok(v) }).collect();
    let mut ex = Executor { aenv, kernels, module };
    ex.cmd(body)
}

struct Executor<'a> {
    aenv: Vec<ASlot>,
    kernels: &'a [Kernel],
    module: &'a Module,
}

fn array(v: ArraysVal) -> Result<Arc<ArrayData>> {
    match v {
        ArraysVal::Array(a) => Ok(a),
        ArraysVal::Tuple(_) => Err(Error::Internal("expected an array, found a tuple".into())),
    }
}

/// One kernel call, shared by the workers: the arguments point at buffers
/// that outlive the call; each chunk writes its own part of the outputs.
struct Call {
    f: KernelFn,
    args: AccArgs,
}

// SAFETY: the buffers behind the pointers are kept alive by the launching
// frame for the whole (blocking) launch; inputs are only read, and every
// chunk writes disjoint output positions (permute writes shared positions
// only with atomic compare-and-swap, or runs as one chunk).
unsafe impl Sync for Call {}
unsafe impl Send for Call {}

impl Call {
    fn chunk(&self, start: usize, end: usize) {
        // SAFETY: the kernel was generated for exactly these arguments
        // (lower.rs and this file agree on the layout) and reads and
        // writes only inside the buffers' extents for `start .. end`.
        unsafe { (self.f)(&self.args, start as i64, end as i64) }
    }
}

impl Executor<'_> {
    fn scalars(&self) -> ScalarEval<'_> {
        ScalarEval { aenv: &self.aenv }
    }

    fn cmd(&mut self, c: &Cmd) -> Result<ArraysVal> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.cmd_inner(c))
    }

    fn cmd_inner(&mut self, c: &Cmd) -> Result<ArraysVal> {
        match c {
            Cmd::Let(ty, b, body) => {
                // Note [Deferred errors]: a failed binding fails only its uses
                let val = self.cmd(b);
                self.aenv.push(ASlot { ty: ty.clone(), val });
                let r = self.cmd(body);
                self.aenv.pop();
                r
            }
            Cmd::Var(i) => match self.aenv.len().checked_sub(i + 1) {
                Some(k) => self.aenv[k].val.clone(),
                None => Err(Error::Internal(format!("array variable {i} unbound"))),
            },
            Cmd::Tuple(ts) => Ok(ArraysVal::Tuple(ts.iter().map(|t| self.cmd(t)).collect::<Result<_>>()?)),
            Cmd::Prj(i, t) => match self.cmd(t)? {
                ArraysVal::Tuple(mut vs) if *i < vs.len() => Ok(vs.swap_remove(*i)),
                _ => Err(Error::Internal(format!("array projection {i} of a non-tuple"))),
            },
            Cmd::Use(d) => Ok(ArraysVal::Array(d.clone())),
            Cmd::Unit(e, elt) => {
                let v = self.scalars().eval(e, &mut Vec::new())?;
                let mut b = ArrayData::builder(elt, 1)
                    .ok_or_else(|| Error::OutOfMemory { loc: e.loc, shape: vec![] })?;
                b.push(&v);
                let d = b.finish(vec![]).ok_or_else(|| Error::Internal("unit of the wrong type".into()))?;
                Ok(ArraysVal::Array(Arc::new(d)))
            }
            Cmd::Reshape { shape, array: a, loc } => {
                let dims = self.scalars().shape(shape)?;
                let src = array(self.cmd(a)?)?;
                let size: usize = dims.iter().product();
                if size != src.len() {
                    return Err(Error::ReshapeSize {
                        loc: *loc,
                        from: src.shape().to_vec(),
                        from_size: src.len(),
                        to: dims.iter().map(|&d| d as i64).collect(),
                        to_size: size,
                    });
                }
                Ok(ArraysVal::Array(Arc::new(src.reshaped(dims))))
            }
            Cmd::Acond { cond, then_, else_ } => {
                let c = self.scalars().eval(cond, &mut Vec::new())?;
                match c.scalar().and_then(|b| b.as_bool()) {
                    Some(true) => self.cmd(then_),
                    Some(false) => self.cmd(else_),
                    None => Err(Error::Internal("acond on a non-bool".into())),
                }
            }
            Cmd::Awhile { param, pred, body, init } => {
                let mut x = self.cmd(init)?;
                loop {
                    self.aenv.push(ASlot { ty: param.clone(), val: Ok(x.clone()) });
                    let p = self.cmd(pred);
                    self.aenv.pop();
                    let go = array(p?)?.get(0).scalar().and_then(|b| b.as_bool());
                    if !go.ok_or_else(|| Error::Internal("awhile predicate is not a bool".into()))? {
                        return Ok(x);
                    }
                    self.aenv.push(ASlot { ty: param.clone(), val: Ok(x) });
                    let next = self.cmd(body);
                    self.aenv.pop();
                    x = next?;
                }
            }
            Cmd::Kernel(k) => self.kernel(&self.kernels[*k]).map(|d| ArraysVal::Array(Arc::new(d))),
        }
    }

    fn var_array(&self, v: usize) -> Result<Arc<ArrayData>> {
        match self.aenv.len().checked_sub(v + 1).map(|k| &self.aenv[k].val) {
            Some(Ok(ArraysVal::Array(a))) => Ok(a.clone()),
            Some(Err(e)) => Err(e.clone()),
            _ => Err(Error::Internal(format!("array variable {v} is not an array in scope"))),
        }
    }

    fn shape_of(&self, s: &ShapeOf) -> Result<Vec<usize>> {
        match s {
            ShapeOf::Var(v) => Ok(self.var_array(*v)?.shape().to_vec()),
            ShapeOf::Exp(e) => self.scalars().shape(e),
        }
    }

    fn kernel(&self, k: &Kernel) -> Result<ArrayData> {
        let inputs = k.inputs.iter().map(|&v| self.var_array(v)).collect::<Result<Vec<_>>>()?;
        let mut bufs: Vec<*mut c_void> = Vec::new();
        let mut extents: Vec<i64> = Vec::new();
        for a in &inputs {
            // an empty array's buffers may dangle: a kernel gets a block of
            // zeros instead, so that every input has an element at position
            // 0 (Note [Optimistic checks])
            let empty = a.is_empty();
            bufs.extend(a.buffers().iter().map(|b| {
                if empty {
                    EMPTY_INPUT.as_ptr() as *mut c_void
                } else {
                    b.as_ptr() as *mut c_void
                }
            }));
            extents.extend(a.shape().iter().map(|&d| d as i64));
        }
        let launch = Launch { k, module: self.module, bufs, extents };
        match &k.skeleton {
            Skeleton::Generate { shape } => {
                let dims = self.shape_of(shape)?;
                let size: usize = dims.iter().product();
                let mut out = alloc(&k.elt, &dims, k.loc)?;
                launch.run("", &mut out, &mut [], &dims_i64(&dims), &[], &uniform(size, GRAIN))?;
                finish(out, &k.elt, dims, size)
            }
            Skeleton::Fold { seed, source, op } => {
                let shape = self.shape_of(source)?;
                let (outer, n) = split_inner(&shape);
                let rows: usize = outer.iter().product();
                if !seed && n == 0 && rows > 0 {
                    return Err(Error::EmptyReduction { loc: k.loc, op, shape });
                }
                let mut out = alloc(&k.elt, &outer, k.loc)?;
                let ext = dims_i64(&shape);
                if rows * n.max(1) < 2 * GRAIN || rows >= 2 * workers() || n < 2 * GRAIN {
                    let grain = (GRAIN / n.max(1)).max(1);
                    launch.run("_rows", &mut out, &mut [], &ext, &[], &uniform(rows, grain))?;
                } else {
                    let piece = n.div_ceil(4 * workers()).max(GRAIN);
                    let m = n.div_ceil(piece);
                    let mut tmp = alloc(&k.elt, &[rows * m], k.loc)?;
                    launch.run(
                        "_part",
                        &mut out,
                        &mut tmp,
                        &ext,
                        &[m as i64, piece as i64],
                        &uniform(rows * m, 1),
                    )?;
                    launch.run("_combine", &mut out, &mut tmp, &ext, &[m as i64], &[0, rows])?;
                }
                finish(out, &k.elt, outer, rows)
            }
            Skeleton::Scan { seed, dir, source, op } => {
                let shape = self.shape_of(source)?;
                let (outer, n) = split_inner(&shape);
                let rows: usize = outer.iter().product();
                if !seed && n == 0 && rows > 0 {
                    return Err(Error::EmptyReduction { loc: k.loc, op, shape });
                }
                let m_out = n + usize::from(*seed);
                let mut dims = outer.clone();
                dims.push(m_out);
                let mut out = alloc(&k.elt, &dims, k.loc)?;
                let ext = dims_i64(&shape);
                let _ = dir;
                if rows >= 2 * workers() || n < 4 * GRAIN {
                    let grain = (GRAIN / n.max(1)).max(1);
                    launch.run("_rows", &mut out, &mut [], &ext, &[], &uniform(rows, grain))?;
                } else {
                    let piece = n.div_ceil(4 * workers()).max(GRAIN);
                    let m = n.div_ceil(piece);
                    let mut tmp = alloc(&k.elt, &[rows * m], k.loc)?;
                    let params = [m as i64, piece as i64];
                    launch.run("_part", &mut out, &mut tmp, &ext, &params, &uniform(rows * m, 1))?;
                    launch.run("_carry", &mut out, &mut tmp, &ext, &params, &[0, rows])?;
                    launch.run("_piece", &mut out, &mut tmp, &ext, &params, &uniform(rows * m, 1))?;
                }
                finish(out, &k.elt, dims, rows * m_out)
            }
            Skeleton::FoldSeg { seed, source, offsets, op } => {
                let shape = self.shape_of(source)?;
                let offs_arr = self.var_array(*offsets)?;
                let offs: Vec<i64> = match offs_arr.buffers().first() {
                    Some(Buffer::I64(v)) => v.clone(),
                    _ => return Err(Error::Internal("segment offsets are not i64".into())),
                };
                let (outer, n) = split_inner(&shape);
                check_offsets(&offs, n, k.loc)?;
                let nseg = offs.len() - 1;
                let rows: usize = outer.iter().product();
                if !seed && rows > 0 && offs.windows(2).any(|w| w[0] == w[1]) {
                    return Err(Error::EmptyReduction { loc: k.loc, op, shape });
                }
                let mut dims = outer.clone();
                dims.push(nseg);
                let mut out = alloc(&k.elt, &dims, k.loc)?;
                let bounds = if rows == 1 { balanced(&offs, 4 * workers()) } else { uniform(rows * nseg, 1) };
                launch.run("", &mut out, &mut [], &dims_i64(&shape), &[], &bounds)?;
                finish(out, &k.elt, dims, rows * nseg)
            }
            Skeleton::Permute { defaults, source, atomic } => {
                let def = self.var_array(*defaults)?;
                let shape = self.shape_of(source)?;
                let size: usize = shape.iter().product();
                let mut out: Vec<Buffer> = def.buffers().to_vec();
                let mut ext = dims_i64(&shape);
                ext.extend(def.shape().iter().map(|&d| d as i64));
                let results: usize = def.shape().iter().product();
                // Note [Privatised permutes]
                let workers = workers();
                if *atomic && workers > 1 && size > 0 && (workers - 1).saturating_mul(results) <= size {
                    let piece = size.div_ceil(workers);
                    let copies = workers * results;
                    // the private copies (read only where touched) and their marks
                    let mut tmp = alloc(&k.elt, &[copies], k.loc)?;
                    tmp.push(Buffer::U8(vec![0u8; copies]));
                    let params = [workers as i64, piece as i64, results as i64];
                    launch.run("_private", &mut out, &mut tmp, &ext, &params, &uniform(workers, 1))?;
                    launch.run("_merge", &mut out, &mut tmp, &ext, &params, &uniform(results, GRAIN))?;
                } else {
                    let bounds = if *atomic { uniform(size, GRAIN) } else { vec![0, size] };
                    launch.run("", &mut out, &mut [], &ext, &[], &bounds)?;
                }
                ArrayData::from_buffers(def.shape().to_vec(), k.elt.clone(), out)
                    .ok_or_else(|| Error::Internal("permute result of the wrong size".into()))
            }
            Skeleton::Stencil { sources, extents: patterns } => {
                let shapes = sources.iter().map(|s| self.shape_of(s)).collect::<Result<Vec<_>>>()?;
                let dims = shapes[0].clone();
                if let Some(b) = shapes.get(1).filter(|b| **b != dims) {
                    return Err(Error::ShapeMismatch {
                        loc: k.loc,
                        op: "stencil2",
                        first: dims,
                        second: b.clone(),
                    });
                }
                if !dims.contains(&0) {
                    if let Some(p) = patterns.iter().find(|p| p.iter().zip(&dims).any(|(e, d)| e > d)) {
                        return Err(Error::StencilTooSmall { loc: k.loc, pattern: p.clone(), shape: dims });
                    }
                }
                let size: usize = dims.iter().product();
                let mut out = alloc(&k.elt, &dims, k.loc)?;
                launch.run("", &mut out, &mut [], &dims_i64(&dims), &[], &uniform(size, GRAIN))?;
                finish(out, &k.elt, dims, size)
            }
        }
    }
}

/// What every launch of one kernel shares: its input buffers and extents.
struct Launch<'a> {
    k: &'a Kernel,
    module: &'a Module,
    bufs: Vec<*mut c_void>,
    extents: Vec<i64>,
}

impl Launch<'_> {
    /// Runs function `suffix` over the chunks between consecutive
    /// `bounds`, with the outputs, temporaries, the kernel's own extents
    /// and parameters; a raised error becomes `Error`.
    fn run(
        &self,
        suffix: &str,
        out: &mut [Buffer],
        tmp: &mut [Buffer],
        own_extents: &[i64],
        params: &[i64],
        bounds: &[usize],
    ) -> Result<()> {
        if bounds.len() < 2 || bounds[0] == *bounds.last().expect("non-empty") {
            return Ok(());
        }
        let f = self.module.get(&format!("{}{suffix}", self.k.name))?;
        let mut bufs = self.bufs.clone();
        bufs.extend(out.iter_mut().map(|b| b.as_mut_ptr() as *mut c_void));
        bufs.extend(tmp.iter_mut().map(|b| b.as_mut_ptr() as *mut c_void));
        let mut extents = self.extents.clone();
        extents.extend_from_slice(own_extents);
        let params = params.to_vec();
        let mut err = AccErr { code: 0, site: 0, vals: [0; 64] };
        let call = Call {
            f,
            args: AccArgs {
                bufs: bufs.as_ptr(),
                extents: extents.as_ptr(),
                params: params.as_ptr(),
                consts: self.k.consts.as_ptr(),
                err: &mut err,
            },
        };
        if bounds.len() == 2 {
            call.chunk(bounds[0], bounds[1]);
        } else {
            pool().install(|| bounds.par_windows(2).for_each(|w| call.chunk(w[0], w[1])));
        }
        if err.code != 0 {
            return Err(to_error(&err, self.k));
        }
        Ok(())
    }
}

/// Chunk boundaries for `0 .. n` (Note [Chunks]).
fn uniform(n: usize, grain: usize) -> Vec<usize> {
    if n == 0 {
        return vec![0, 0];
    }
    let chunks = (n / grain.max(1)).clamp(1, 4 * workers());
    (0..=chunks).map(|c| c * n / chunks).collect()
}

/// Segment boundaries for one row, cut where the offsets cross multiples
/// of `elements / chunks`, so that every chunk has about as many elements.
fn balanced(offs: &[i64], chunks: usize) -> Vec<usize> {
    let nseg = offs.len() - 1;
    let total = *offs.last().expect("checked offsets") as usize;
    let mut b: Vec<usize> = (0..=chunks)
        .map(|c| {
            let target = (c * total / chunks) as i64;
            offs[..nseg].partition_point(|&o| o < target)
        })
        .collect();
    b[0] = 0;
    *b.last_mut().expect("non-empty") = nseg;
    b.dedup();
    if b.len() == 1 {
        b.push(nseg);
    }
    b
}

fn dims_i64(d: &[usize]) -> Vec<i64> {
    d.iter().map(|&x| x as i64).collect()
}

/// Buffers for an array of this type and shape, to be written by a
/// kernel: `ShapeTooLarge` if it cannot be addressed, `OutOfMemory` if
/// the memory cannot be had.
fn alloc(elt: &EltTy, dims: &[usize], loc: SrcLoc) -> Result<Vec<Buffer>> {
    crate::array::shape::checked_extents(&dims_i64(dims), elt.size_bytes(), loc)?;
    let n: usize = dims.iter().product();
    elt.leaves()
        .into_iter()
        .map(|t| Buffer::uninit(t, n).ok_or_else(|| Error::OutOfMemory { loc, shape: dims.to_vec() }))
        .collect()
}

/// The array a kernel has filled.
fn finish(mut out: Vec<Buffer>, elt: &EltTy, dims: Vec<usize>, n: usize) -> Result<ArrayData> {
    for b in &mut out {
        // SAFETY: the launch succeeded, and every skeleton writes every
        // position of its output (generated code stores each element's
        // value, booleans as 0 or 1).
        unsafe { b.set_len(n) };
    }
    ArrayData::from_buffers(dims, elt.clone(), out)
        .ok_or_else(|| Error::Internal("kernel output of the wrong size".into()))
}

/// The error a kernel raised, naming the user's line.
fn to_error(e: &AccErr, k: &Kernel) -> Error {
    let loc = match k.sites.get(e.site as usize) {
        Some(l) => *l,
        None => {
            return Error::Internal(format!(
                "kernel {} raised error {} at unknown site {}",
                k.name, e.code, e.site
            ))
        }
    };
    let v = &e.vals;
    let usizes = |s: &[i64]| s.iter().map(|&d| d.max(0) as usize).collect::<Vec<_>>();
    match e.code {
        1 => Error::DivisionByZero { loc },
        2 => {
            let r = (v[0].max(0) as usize).min(31);
            Error::IndexOutOfBounds { loc, index: v[1..1 + r].to_vec(), shape: usizes(&v[1 + r..1 + 2 * r]) }
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

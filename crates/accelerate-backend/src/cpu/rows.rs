//! Row groups (`plan::rows`) on the CPU: one C function that runs every
//! member of a group for one row after the other, rows in parallel.
//!
//! Each member is written as a block of the group's function, in the
//! fast form of its `_rows` loop (Note [Optimistic checks]): the block
//! declares the member's own arguments (`A`, the member's `acc_args`:
//! its inputs, then its outputs, then its loop's extents), reads the
//! arrays the group's earlier members wrote through its inputs, and
//! writes its row. Pointers are `restrict` within a block only: a block
//! reads what an earlier block wrote, never what it writes itself.
//!
//! A launch (`launch`) first finds every member's loop shape and the
//! shapes of the values between them without running anything (a
//! member's shape may read its group's shapes, never their elements:
//! Note [Row-local reads]), then allocates every member's outputs, points
//! the members' inputs at them, and runs the rows in chunks. It runs the
//! group only when every member loops over one shape of rows of at least
//! `LANES` elements (Note [Short rows one by one]) and there are rows
//! enough for every worker (else the members run one
//! by one, each with its own parallel paths); a failed check anywhere
//! gives the group up, and the launches one by one raise the errors,
//! each for its own binding (Note [Deferred errors]).

use super::compile::Module;
use super::exec::{alloc, finish, input_buffers, uniform, AccArgs, Call, GRAIN, KERNEL_STACK};
use super::fold::{kept_buffers, reduce_row, LANES};
use super::kernel::{KernelGen, Row};
use crate::c::host::AccErr;
use crate::c::kernel::{store, Kernel, KernelCore, ShapeOf, Skeleton};
use crate::c::Body;
use crate::host::{Env, RowsRun, Value};
use crate::interp::scalar::{ArrayEnv, ScalarEval};
use accelerate_base::array::{ArrayData, Buffer, EltTy};
use accelerate_base::error::{Error, Result};
use accelerate_plan::rows::{Over, RowGroup};
use accelerate_plan::{self as plan, Cmd};
use std::ffi::c_void;
use std::fmt::Write;
use std::ops::Range;
use std::sync::Arc;

/// A row group's C function and what its launch needs.
#[derive(Clone, Debug)]
pub(crate) struct GroupFn {
    pub name: String,
    /// Its members, in launch order.
    pub kernels: Vec<usize>,
    /// Each member's hoisted literals, as its block reads them.
    pub consts: Vec<Vec<i64>>,
    /// The member that writes over an earlier member's array (Note
    /// [Writing over a dead row] in `plan/rows.rs`).
    pub over: Option<Over>,
}

/// The error code a group's function reports when a check of its fast
/// form failed (no error of the user's: the members then run one by one).
const GIVE_UP: i32 = -2;

/// Writes the function of row group number `index` of a plan, if every
/// member can be written as a block (a member whose scalar code is so
/// large that it would be outlined is not).
pub(crate) fn write_group(
    p: &plan::Program,
    g: &RowGroup,
    index: usize,
    out: &mut String,
) -> Option<GroupFn> {
    let name = format!("g{index}_rows");
    let members: Vec<String> = g.kernels.iter().map(|k| format!("k{k}")).collect();
    let mut text = format!("\n/* row group of {} */\n", members.join(", "));
    let _ = writeln!(text, "void {name}(const acc_args *G, int64_t start, int64_t end) {{");
    text.push_str("  for (int64_t r = start; r < end; r++) {\n");
    let mut consts = Vec::new();
    for (t, &k) in g.kernels.iter().enumerate() {
        let spec = &p.kernels[k];
        let mut kg = KernelGen::group_member(spec, format!("{name}_{t}"));
        let mut block = format!("  {{\n    const acc_args *const A = G + {t};\n");
        // a member that writes over what it reads has no restrict pointers
        let over = g.over.is_some_and(|o| o.member == t);
        kg.open_inputs(&mut block, if over { "" } else { "restrict" });
        block.push_str("    int acc_bad = 0;\n");
        let mut body = match &spec.skeleton {
            plan::Skeleton::Fold(s) => fold_row(&mut kg, &mut block, spec, s),
            plan::Skeleton::Generate(s) => generate_row(&mut kg, &mut block, spec, s, over),
            _ => return None,
        };
        if !body.functions.is_empty() {
            return None;
        }
        body.declare_lane_flags();
        kg.close_body(&mut block, 0, &body);
        block.push_str(&body.fold_lane_flags());
        let _ = writeln!(
            block,
            "    if (acc_bad) {{ __atomic_store_n(&G->err->code, {GIVE_UP}, __ATOMIC_RELAXED); return; }}\n  }}"
        );
        text.push_str(&block);
        consts.push(kg.finish().consts);
    }
    text.push_str("  }\n}\n");
    out.push_str(&text);
    Some(GroupFn { name, kernels: g.kernels.clone(), consts, over: g.over })
}

/// A fold's row `r`: its outputs `o` (and kept `w`), its source's extents
/// `sh`, as its `_rows` function has them.
fn fold_row(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::Fold) -> Body {
    let (f, src, rank, elt, loc) = (&s.f, &s.src.source, s.src.ty.rank, &spec.out.elt, spec.loc);
    let kept_elt = spec.kept().map(|t| t.elt);
    let (obufs, next) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let keep = kept_buffers(out, kept_elt.as_ref(), elt, next);
    let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
    let n = sh[rank - 1].clone();
    let mut g = k.exp_gen(1);
    let z = s.seed.as_ref().map(|e| g.exp(e, &mut Vec::new()));
    g.line(&format!("const int64_t base = r * {n};"));
    let row = Row::new(&mut g, src, &sh, "r", "base").keeping(keep.as_ref());
    let v = reduce_row(&mut g, f, z.as_ref(), src, &row, "0", &n, loc);
    store(&mut g, &obufs, "r", &v);
    g.into_parts()
}

/// A producer's row `r`: its output `o` (not `restrict` when it is
/// written `over` what it reads), its extents `sh`.
fn generate_row(
    k: &mut KernelGen,
    out: &mut String,
    spec: &plan::Kernel,
    s: &plan::Generate,
    over: bool,
) -> Body {
    let (src, rank, elt, loc) = (&s.src.source, spec.out.rank, &spec.out.elt, spec.loc);
    let (obufs, _) =
        KernelCore::buffers(out, "o", elt, k.first_own_buf(), if over { "" } else { "restrict" });
    let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
    let n = sh[rank - 1].clone();
    let mut g = k.exp_gen(1);
    g.line(&format!("const int64_t base = r * {n};"));
    let row = Row::new(&mut g, src, &sh, "r", "base");
    g.independent_iterations();
    g.open(&format!("for (int64_t j = 0; j < {n}; j++) {{"));
    let v = row.read(&mut g, src, "j", loc);
    store(&mut g, &obufs, "base + j", &v);
    g.close("}");
    g.into_parts()
}

/// What a command of a group's chain is before the group runs: an
/// array a member will write (its buffers `leaves` of the member's
/// output, or of its kept array), or a tuple of them.
#[derive(Clone, Debug)]
enum Pending {
    Array { member: usize, kept: bool, leaves: Range<usize>, elt: EltTy, shape: Vec<usize> },
    Tuple(Vec<Pending>),
}

impl Pending {
    /// The value of a projection, unzip or variable of the group's values
    /// (`inner`, innermost last).
    fn of(c: &Cmd, inner: &[Pending]) -> Option<Pending> {
        match c {
            Cmd::Var(v) => inner.get(inner.len().checked_sub(v + 1)?).cloned(),
            Cmd::Prj(i, c) => match Pending::of(c, inner)? {
                Pending::Tuple(mut ps) if *i < ps.len() => Some(ps.swap_remove(*i)),
                _ => None,
            },
            Cmd::Unzip(c) => match Pending::of(c, inner)? {
                Pending::Array { member, kept, leaves, elt: EltTy::Tuple(ts), shape } => {
                    let mut at = leaves.start;
                    let parts = ts.into_iter().map(|t| {
                        let n = t.leaves().len();
                        at += n;
                        Pending::Array { member, kept, leaves: at - n..at, elt: t, shape: shape.clone() }
                    });
                    Some(Pending::Tuple(parts.collect()))
                }
                _ => None,
            },
            _ => None,
        }
    }
}

/// The shapes of an environment with the group's pending values above it.
struct Layered<'a> {
    outer: &'a Env<Arc<ArrayData>>,
    inner: &'a [Pending],
}

impl ArrayEnv for Layered<'_> {
    fn shape(&self, i: usize) -> Result<&[usize]> {
        match self.inner.len().checked_sub(i + 1) {
            Some(l) => match &self.inner[l] {
                Pending::Array { shape, .. } => Ok(shape),
                Pending::Tuple(_) => Err(Error::Internal("the shape of a tuple".into())),
            },
            None => ArrayEnv::shape(self.outer, i - self.inner.len()),
        }
    }

    fn array(&self, i: usize) -> Result<&Arc<ArrayData>> {
        match i.checked_sub(self.inner.len()) {
            Some(v) => ArrayEnv::array(self.outer, v),
            None => Err(Error::Internal("a row group's array read before it runs".into())),
        }
    }
}

/// An input of a member: an array of the environment, or a group's.
enum Input {
    Outer(Arc<ArrayData>),
    Member(Pending),
}

/// A member, before it runs.
struct Member {
    k: usize,
    shape: Vec<usize>,
    inputs: Vec<Input>,
    out: Vec<Buffer>,
    kept: Option<(EltTy, Vec<Buffer>)>,
    /// Whether its result (its kept array) went to a member that wrote
    /// over it (`Over`).
    moved: (bool, bool),
}

/// The members' shapes and inputs, or `None` where the group must not run
/// row by row (Note [Row-local reads] holds by construction; this checks
/// what only the run knows).
fn members(
    gf: &GroupFn,
    items: &[&Cmd],
    kernels: &[Kernel],
    env: &Env<Arc<ArrayData>>,
) -> Option<Vec<Member>> {
    let mut inner: Vec<Pending> = Vec::new();
    let mut members: Vec<Member> = Vec::new();
    for item in items {
        let t = members.len();
        if t == gf.kernels.len() {
            break;
        }
        let value = match item {
            Cmd::Kernel(k) if *k == gf.kernels[t] => {
                let kk = &kernels[*k];
                let layered = Layered { outer: env, inner: &inner };
                let (src, keep) = match &kk.skeleton {
                    Skeleton::Generate { shape } => (shape, None),
                    Skeleton::Fold { source, keep, .. } => (source, keep.clone()),
                    _ => return None,
                };
                let shape = match src {
                    ShapeOf::Var(v) => layered.shape(*v).ok()?.to_vec(),
                    ShapeOf::Exp(e) => ScalarEval { aenv: &layered }.shape(e).ok()?,
                };
                let mut inputs = Vec::new();
                for &v in &kk.inputs {
                    inputs.push(match inner.len().checked_sub(v + 1) {
                        Some(l) => Input::Member(inner[l].clone()),
                        None => Input::Outer(env.array(v - inner.len()).ok()?.clone()),
                    });
                }
                let outer_shape = shape[..shape.len().checked_sub(1)?].to_vec();
                let array = |kept: bool, elt: &EltTy, shape: &[usize]| Pending::Array {
                    member: t,
                    kept,
                    leaves: 0..elt.leaves().len(),
                    elt: elt.clone(),
                    shape: shape.to_vec(),
                };
                let value = match (&kk.skeleton, &keep) {
                    (Skeleton::Generate { .. }, _) => array(false, &kk.elt, &shape),
                    (_, None) => array(false, &kk.elt, &outer_shape),
                    (_, Some(kt)) => {
                        Pending::Tuple(vec![array(true, kt, &shape), array(false, &kk.elt, &outer_shape)])
                    }
                };
                // (outputs are allocated once the group is known to run)
                let kept = keep.map(|kt| (kt, Vec::new()));
                members.push(Member { k: *k, shape, inputs, out: Vec::new(), kept, moved: (false, false) });
                value
            }
            c => Pending::of(c, &inner)?,
        };
        inner.push(value);
    }
    (members.len() == gf.kernels.len()).then_some(members)
}

/// The most bytes a row of a group's arrays may take for the group to
/// run row by row: a third of a 48 KiB first-level cache, so that what
/// the first member reads of a row is still there for the last. Measured
/// on a 2-core Xeon (docs/benchmarks.md, "Row groups"): softmax's rows of
/// 1000 `f32` (12 KB with the kept exponentials and the result) run 16%
/// faster row by row; normalising rows of 4096 `f32` (32 KB: the row and
/// its quotients) ran 5 to 8% slower row by row than kernel by kernel,
/// rows of 16384 15%.
const ROW_BYTES: usize = 16 * 1024;

/// The bytes per position of a row that a group reads and writes: the
/// arrays of the loop's rank it reads from outside (each once) and those
/// its members write (but the one written over).
fn row_bytes(members: &[Member], kernels: &[Kernel], rank: usize, over: Option<Over>) -> usize {
    let mut seen: Vec<*const ArrayData> = Vec::new();
    let mut bytes = 0;
    for (t, m) in members.iter().enumerate() {
        for input in &m.inputs {
            if let Input::Outer(a) = input {
                if a.shape().len() == rank && !seen.contains(&Arc::as_ptr(a)) {
                    seen.push(Arc::as_ptr(a));
                    bytes += a.elt_ty().size_bytes();
                }
            }
        }
        let kk = &kernels[m.k];
        if matches!(kk.skeleton, Skeleton::Generate { .. }) && over.is_none_or(|o| o.member != t) {
            bytes += kk.elt.size_bytes();
        }
        if let Some((kt, _)) = &m.kept {
            bytes += kt.size_bytes();
        }
    }
    bytes
}

// Note [Short rows one by one]
// A group's block for a member reduces or writes one row at a time, and
// a row shorter than a vector's lanes gets no vector: its fold runs in
// order (Note [Short ranges in order] in `fold.rs`) and its generate one
// element at a time. Run one by one, the same members are vectorised
// across rows: the fold with a row per lane (Note [Short rows] in
// `fold.rs`), the generate in blocks (Note [Short rows in fast
// functions] in `generate.rs`). Scaling every row of an `f32` matrix
// to unit length (a `fold` of squares, then a `zip_with` with the
// replicated norms; 2^24 elements, two workers, medians of 21) took
// 15.0 ms as a group and 6.2 ms one by one with rows of 4, 15.2 and 3.6
// ms with rows of 8; with rows of 16 the group was the faster, 3.3 ms
// against 3.9, and with rows of 32, 1.7 against 5.1. So a group runs
// only rows of at least `LANES` elements.

/// Runs a group row by row (the module doc): each member's value, or
/// `None` where the members must run one by one.
pub(super) fn launch(
    module: &Module,
    pool: &rayon::ThreadPool,
    gf: &GroupFn,
    items: &[&Cmd],
    kernels: &[Kernel],
    env: &Env<Arc<ArrayData>>,
) -> Result<RowsRun<Arc<ArrayData>>> {
    let Some(mut members) = members(gf, items, kernels, env) else { return Ok(None) };
    let shape = members[0].shape.clone();
    let (n, rows) = (shape[shape.len() - 1], shape[..shape.len() - 1].iter().product::<usize>());
    let workers = pool.current_num_threads();
    if members.iter().any(|m| m.shape != shape) || n < LANES || rows < 2 * workers {
        // (Note [Short rows one by one])
        return Ok(None);
    }
    if n.saturating_mul(row_bytes(&members, kernels, shape.len(), gf.over)) > ROW_BYTES {
        return Ok(None);
    }
    // the outputs (a member writing over another's array allocates none;
    // memory that cannot be had leaves the members to run, and fail, one
    // by one)
    let outer_shape = &shape[..shape.len() - 1];
    for (t, m) in members.iter_mut().enumerate() {
        let kk = &kernels[m.k];
        let generate = matches!(kk.skeleton, Skeleton::Generate { .. });
        if gf.over.is_none_or(|o| o.member != t) {
            let Ok(out) = alloc(&kk.elt, if generate { &shape } else { outer_shape }, kk.loc) else {
                return Ok(None);
            };
            m.out = out;
        }
        if let Some((kt, b)) = &mut m.kept {
            let Ok(kept) = alloc(kt, &shape, kk.loc) else { return Ok(None) };
            *b = kept;
        }
    }
    // every member's buffers: its inputs', then its outputs (and kept)
    let mut outputs: Vec<Vec<*mut c_void>> = members
        .iter_mut()
        .map(|m| {
            let kept = m.kept.iter_mut().flat_map(|(_, b)| b.iter_mut());
            m.out.iter_mut().chain(kept).map(|b| b.as_mut_ptr() as *mut c_void).collect()
        })
        .collect();
    if let Some(o) = gf.over {
        let (from, first) = (&members[o.from], if o.kept { members[o.from].out.len() } else { 0 });
        let count = if o.kept { from.kept.as_ref().map_or(0, |(_, b)| b.len()) } else { from.out.len() };
        outputs[o.member] = outputs[o.from][first..first + count].to_vec();
    }
    let mut err = AccErr::NONE;
    let err_ptr: *mut AccErr = &mut err;
    let (mut bufs, mut extents) = (Vec::new(), Vec::new());
    for (t, m) in members.iter().enumerate() {
        let (mut b, mut x) = (Vec::new(), Vec::new());
        for input in &m.inputs {
            match input {
                Input::Outer(a) => {
                    b.extend(input_buffers(a));
                    x.extend(a.shape().iter().map(|&d| d as i64));
                }
                Input::Member(Pending::Array { member, kept, leaves, shape, .. }) => {
                    let from = &outputs[*member];
                    let first = if *kept { members[*member].out.len() } else { 0 };
                    b.extend(leaves.clone().map(|l| from[first + l]));
                    x.extend(shape.iter().map(|&d| d as i64));
                }
                Input::Member(Pending::Tuple(_)) => return Ok(None),
            }
        }
        b.extend(outputs[t].iter().copied());
        x.extend(shape.iter().map(|&d| d as i64));
        bufs.push(b);
        extents.push(x);
    }
    let f = module.get(&gf.name)?;
    let args: Vec<AccArgs> = (0..members.len())
        .map(|t| AccArgs::new(&bufs[t], &extents[t], &[], &gf.consts[t], err_ptr))
        .collect();
    let call = Call { f, args: &args, stack: KERNEL_STACK };
    let bounds = uniform(rows, (GRAIN / n).max(1), workers);
    call.run(pool, &bounds);
    if err.code != 0 {
        return Ok(None);
    }
    if let Some(o) = gf.over {
        let from = &mut members[o.from];
        let bufs = match &mut from.kept {
            Some((_, b)) if o.kept => b,
            _ => &mut from.out,
        };
        let moved = std::mem::take(bufs);
        from.moved = (!o.kept, o.kept);
        members[o.member].out = moved;
    }
    // an array written over names no data: nothing reads it after
    let nothing = |elt: &EltTy, rank: usize, loc| -> Result<Value<Arc<ArrayData>>> {
        let dims = vec![0; rank];
        Ok(Value::Array(Arc::new(finish(alloc(elt, &dims, loc)?, elt, dims, 0)?)))
    };
    let mut values = Vec::new();
    for m in members {
        let kk = &kernels[m.k];
        let generate = matches!(kk.skeleton, Skeleton::Generate { .. });
        let dims = if generate { shape.clone() } else { shape[..shape.len() - 1].to_vec() };
        let out = match m.moved.0 {
            true => nothing(&kk.elt, dims.len(), kk.loc)?,
            false => {
                let count = dims.iter().product();
                Value::Array(Arc::new(finish(m.out, &kk.elt, dims, count)?))
            }
        };
        values.push((
            m.k,
            match m.kept {
                Some((kt, b)) => {
                    let kept = match m.moved.1 {
                        true => nothing(&kt, shape.len(), kk.loc)?,
                        false => Value::Array(Arc::new(finish(b, &kt, shape.clone(), rows * n)?)),
                    };
                    Value::Tuple(vec![kept, out])
                }
                None => out,
            },
        ));
    }
    Ok(Some(values))
}

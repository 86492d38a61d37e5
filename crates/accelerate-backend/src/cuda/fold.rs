//! The fold skeleton on the GPU: reduction of the innermost dimension
//! (`fold`, `fold1`, and so every whole-array reduction, which reshapes to
//! a vector first).
//!
//! A row of `n` elements reduces to `f(seed, x0 ⊕ .. ⊕ x_{n-1})` (the
//! operator is associative, `docs/semantics.md`), so the seed is applied
//! once, whatever the split. Within a block, `block::range_reduce` reduces
//! a range with warp shuffles and shared memory, in order.
//!
//! 1. Many rows (`_rows`): a block per row. Launch: `min(rows, G)` blocks
//!    (`G` a few blocks per multiprocessor; blocks take rows in turn), no
//!    parameters. Thread 0 applies the seed and writes the row's result.
//!    Short rows (`_warps`): a warp per row, the same with the warp's
//!    reduction, so that a block's threads are not left idle; launched with
//!    `min(ceil(rows / 8), G)` blocks.
//! 2. Few long rows, two passes, as CUB's `DeviceReduce`: each row is cut
//!    into `m` pieces of `L` elements (`m = ceil(n / L)`, pieces not
//!    empty); `_part` reduces every piece with a block into the temporary
//!    `t` (`rows * m` elements, after the output buffers), launched with
//!    `min(rows * m, G)` blocks and `P = [m, L]`; `_combine` reduces each
//!    row's `m` partials with a block and applies the seed, launched with
//!    `min(rows, G)` blocks and `P = [m]`.
//!
//! ```text
//! for each row r (a block):             for each piece c (a block):
//!     out[r] = seed ⊕ reduce(x[r, ..])      t[c] = reduce(x[row(c), piece(c)])
//!                                       for each row r (a block):
//!                                           out[r] = seed ⊕ reduce(t[r, ..])
//! ```
//!
//! A row with no elements gives the seed; `fold1` of an empty row is an
//! error the host raises before launching (as the CPU backend does).

use super::block::{range_reduce, Group, Op};
use super::device::{Device, BLOCK};
use super::exec::{DeviceArray, Launch};
use super::fold_seg::loop_over;
use super::kernel::{block_stride, KernelGen};
use crate::c::host::{rows_of, shape_of};
use crate::c::kernel::KernelCore;
use crate::c::kernel::ShapeOf;
use crate::c::kernel::{assign, commutative, declare, read_at, store, Kept};
use crate::c::product;
use crate::c::{CVal, ExpGen};
use crate::host::Env;
use accelerate_base::array::{EltTy, ScalarTy};
use accelerate_base::error::Result;
use accelerate_plan as plan;

/// Rows of at most this many elements are folded by a warp each (four
/// elements a lane), longer ones by a block.
const SHORT_ROW: usize = 128;

/// The kernel functions of a fold kernel (its name and these suffixes).
pub(crate) const FUNCTIONS: &[&str] = &["_rows", "_warps", "_part", "_combine"];

/// Launch: `_warps` (a warp per short row), `_rows` (a block per row), or,
/// when the rows are too few to fill the device and long enough to cut,
/// `_part` over `rows * m` pieces of `piece` elements (`P[0] = m`,
/// `P[1] = piece`) into a temporary, then `_combine` (`P[0] = m`).
pub(super) fn launch<D: Device>(
    launch: &Launch<'_, '_, D>,
    env: &Env<DeviceArray<D>>,
    seed: bool,
    source: &ShapeOf,
    op: &'static str,
    keep: Option<&EltTy>,
) -> Result<(DeviceArray<D>, Option<DeviceArray<D>>)> {
    let (k, seed) = (launch.k, &seed);
    let shape = shape_of(env, source)?;
    let (outer, n, rows) = rows_of(k, &shape, *seed, op)?;
    let out = launch.on.alloc(&k.elt, &outer, k.loc)?;
    // a fold that keeps its source's first components writes them to `w`,
    // after the output and the partials (plan::Fold::keep)
    let kept = keep.map(|t| launch.on.alloc(t, &shape, k.loc)).transpose()?;
    let w: Vec<&DeviceArray<D>> = kept.iter().collect();
    if rows == 0 {
        return Ok((out, kept));
    }
    // a block per row, unless the rows are too few to fill the
    // device and long enough to cut (fold.rs)
    let piece = (8 * BLOCK as usize).max(n.div_ceil(launch.grid.div_ceil(rows)));
    if n <= SHORT_ROW {
        launch.run("_warps", launch.blocks(32 * rows), &out, &w, &shape, &[])?;
    } else if rows >= launch.grid || n <= piece {
        launch.run("_rows", rows.min(launch.grid) as u32, &out, &w, &shape, &[])?;
    } else {
        let m = n.div_ceil(piece);
        let t = launch.on.alloc(&k.elt, &[rows * m], k.loc)?;
        let p = [m as i64, piece as i64];
        let tw: Vec<&DeviceArray<D>> = std::iter::once(&t).chain(kept.iter()).collect();
        launch.run("_part", (rows * m).min(launch.grid) as u32, &out, &tw, &shape, &p)?;
        launch.run("_combine", rows.min(launch.grid) as u32, &out, &[&t], &shape, &p[..1])?;
    }
    Ok((out, kept))
}

/// The kernel functions `_rows`, `_warps`, `_part` and `_combine` of a
/// fold kernel.
pub(crate) fn fold(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::Fold) {
    let (f, seed, src) = (&s.f, s.seed.as_ref(), &s.src.source);
    let (rank, elt, what, loc) = (s.src.ty.rank, &spec.out.elt, spec.op, spec.loc);
    let op = |g: &mut ExpGen<'_>, a: &CVal, b: CVal| g.apply(f, vec![a.clone(), b]);
    let comm = commutative(f);
    let kept = spec.kept().map(|t| t.elt);
    // the element at position `base + k`; with a kept result, the second
    // component of the pair there, the first written to `w`
    let reader = |keep: Option<Kept>| {
        move |g: &mut ExpGen<'_>, k: &str| {
            let p = g.bind(ScalarTy::I64, &format!("base + {k}"));
            let v = read_at(g, src, &p, loc);
            match &keep {
                Some(keep) => keep.split(g, &p, v),
                None => v,
            }
        }
    };
    let kept_bufs = |out: &mut String, next: usize| {
        kept.as_ref().map(|t| Kept { bufs: KernelGen::out_buffers(out, "w", t, next).0, x: elt.clone() })
    };

    // _rows: a block per row; _warps: a warp per row (short rows)
    for (suffix, group) in [("_rows", Group::Block), ("_warps", Group::Warp)] {
        k.open_function(out, suffix, what, loc);
        let (obufs, next) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
        let read = reader(kept_bufs(out, next));
        let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
        let n = sh[rank - 1].clone();
        let mut g = k.exp_gen(1);
        let z = seed.map(|s| g.exp(s, &mut Vec::new()));
        let rows = g.bind(ScalarTy::I64, &outer_size(&sh));
        g.open(&loop_over("r", &rows, group));
        g.line(&format!("const int64_t base = r * {n};"));
        let (v, has) = range_reduce(&mut g, &op, &read, elt, ("0", &n), comm, group);
        finish(&mut g, &op, z.as_ref(), &v, &has, &obufs, "r", group);
        g.close("}");
        let parts = g.into_parts();
        k.close_function(out, parts);
    }

    // _part: a block per piece
    k.open_function(out, "_part", what, loc);
    let (_, next) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let (tbufs, next) = KernelGen::out_buffers(out, "t", elt, next);
    let read = reader(kept_bufs(out, next));
    let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
    let n = sh[rank - 1].clone();
    let mut g = k.exp_gen(1);
    let pieces = g.bind(ScalarTy::I64, &format!("({}) * P[0]", outer_size(&sh)));
    g.open(&block_stride("c", &pieces));
    g.line(&format!("const int64_t base = (c / P[0]) * {n};"));
    g.line("const int64_t lo = (c % P[0]) * P[1];");
    g.line(&format!("const int64_t hi = lo + P[1] < {n} ? lo + P[1] : {n};"));
    let (v, _) = range_reduce(&mut g, &op, &read, elt, ("lo", "hi"), comm, Group::Block);
    g.open("if (tid == 0) {");
    store(&mut g, &tbufs, "c", &v);
    g.close("}");
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);

    // _combine: a block per row, over its partials
    k.open_function(out, "_combine", what, loc);
    let (obufs, next) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let (tbufs, _) = KernelGen::out_buffers(out, "t", elt, next);
    let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
    let mut g = k.exp_gen(1);
    let z = seed.map(|s| g.exp(s, &mut Vec::new()));
    let rows = g.bind(ScalarTy::I64, &outer_size(&sh));
    g.open(&block_stride("r", &rows));
    let read_partial = |g: &mut ExpGen<'_>, j: &str| {
        let x =
            CVal { ty: elt.clone(), leaves: tbufs.iter().map(|t| format!("{t}[r * P[0] + {j}]")).collect() };
        declare(g, "x", &x)
    };
    let (v, has) = range_reduce(&mut g, &op, &read_partial, elt, ("0", "P[0]"), comm, Group::Block);
    finish(&mut g, &op, z.as_ref(), &v, &has, &obufs, "r", Group::Block);
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);
}

/// The number of rows of a shape (the product of its outer extents), as
/// a C expression.
pub(crate) fn outer_size(sh: &[String]) -> String {
    product(&sh[..sh.len() - 1])
}

/// In the group's leader: the result of a reduction `(v, has)` with the
/// seed (the seed alone for an empty range), stored at `pos`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn finish(
    g: &mut ExpGen<'_>,
    op: &Op<'_>,
    seed: Option<&CVal>,
    v: &CVal,
    has: &str,
    obufs: &[String],
    pos: &str,
    group: Group,
) {
    g.open(&format!("if ({}) {{", group.leader()));
    match seed {
        Some(z) => {
            let r = declare(g, "r", z);
            g.open(&format!("if ({has}) {{"));
            let x = op(g, z, v.clone());
            assign(g, &r, &x);
            g.close("}");
            store(g, obufs, pos, &r);
        }
        None => store(g, obufs, pos, v),
    }
    g.close("}");
}

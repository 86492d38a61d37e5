//! The segmented fold skeleton on the GPU (`fold_seg`, `fold1_seg`):
//! every row of the source is cut into segments by one vector of offsets
//! (segment `s` is `offsets[s] .. offsets[s+1]`), and each segment reduces
//! to one element.
//!
//! Algorithm: a warp per segment (`_warp`, Bell and Garland's "vector"
//! kernel for sparse matrices): the (row, segment) pairs, `rows * nseg` of
//! them in row-major order, are taken by the grid's warps in turn; a warp
//! reduces its segment with `block::range_reduce` (lanes read consecutive
//! elements; shuffles combine them in order), and lane 0 applies the seed
//! and writes. When the segments are long (the host chooses by their mean
//! length), a block per segment instead (`_block`, the same with the
//! block's reduction). Launch: any number of blocks (`min(ceil(rows *
//! nseg / 8), G)` keeps every warp busy; `min(rows * nseg, G)` for
//! `_block`), no parameters; the host has checked the offsets
//! (`check_offsets`) and, for `fold1_seg`, that no segment is empty.
//! Segments far longer than the rest leave one group working while the
//! others idle; balancing them with a work queue (DESIGN.md §7) is not
//! done yet.
//!
//! ```text
//! for each (r, s) (a warp):
//!     out[r, s] = seed ⊕ x[r*n + offsets[s]] ⊕ .. ⊕ x[r*n + offsets[s+1] - 1]
//! ```

use super::block::{range_reduce, Group};
use super::device::Device;
use super::exec::{DeviceArray, Launch};
use super::fold::{finish, outer_size};
use super::kernel::{block_stride, KernelGen};
use crate::c::host::{segments, shape_of};
use crate::c::kernel::KernelCore;
use crate::c::kernel::ShapeOf;
use crate::c::kernel::{commutative, read_at};
use crate::c::{CVal, ExpGen};
use crate::host::Env;
use crate::interp::split_inner;
use accelerate_base::array::ScalarTy;
use accelerate_base::error::Result;
use accelerate_plan as plan;

/// Segments of at least this many elements on average are folded by a
/// block each, shorter ones by a warp.
const LONG_SEGMENT: usize = 1024;

/// The kernel functions of a fold_seg kernel (its name and these suffixes).
pub(crate) const FUNCTIONS: &[&str] = &["_warp", "_block"];

/// Launch: `_warp` (a warp per segment), or `_block` (a block per segment)
/// when segments are long on average.
pub(super) fn launch<D: Device>(
    launch: &Launch<'_, '_, D>,
    env: &Env<DeviceArray<D>>,
    seed: bool,
    source: &ShapeOf,
    offsets: usize,
    op: &'static str,
) -> Result<DeviceArray<D>> {
    let (k, seed, offsets) = (launch.k, &seed, &offsets);
    let shape = shape_of(env, source)?;
    let offs = segments(env, k, *offsets, &shape, *seed, op)?;
    let (mut dims, _) = split_inner(&shape);
    let rows: usize = dims.iter().product();
    let nseg = offs.len() - 1;
    dims.push(nseg);
    let out = launch.on.alloc(&k.elt, &dims, k.loc)?;
    let pairs = rows * nseg;
    if pairs > 0 {
        // a warp per segment, or a block per long one
        let total = *offs.last().expect("checked offsets") as usize;
        if total / nseg >= LONG_SEGMENT {
            launch.run("_block", pairs.min(launch.grid) as u32, &out, &[], &shape, &[])?;
        } else {
            launch.run("_warp", launch.blocks(32 * pairs), &out, &[], &shape, &[])?;
        }
    }
    Ok(out)
}

/// The kernel function of a segmented fold; `offsets` is the array
/// variable of the offsets (an `i64` vector).
pub(crate) fn fold_seg(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::FoldSeg) {
    let (f, seed, src, offsets) = (&s.f, s.seed.as_ref(), &s.src.source, s.offsets);
    let (rank, elt, what, loc) = (spec.out.rank, &spec.out.elt, spec.op, spec.loc);
    let op = |g: &mut ExpGen<'_>, a: &CVal, b: CVal| g.apply(f, vec![a.clone(), b]);
    for group in [Group::Warp, Group::Block] {
        let suffix = if group == Group::Warp { "_warp" } else { "_block" };
        k.open_function(out, suffix, what, loc);
        let (obufs, _) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
        let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
        let n = sh[rank - 1].clone();
        let offs = k.slots[&offsets].clone();
        let (off, nseg1) = (offs.leaves[0].clone(), offs.extents[0].clone());
        let mut g = k.exp_gen(1);
        let z = seed.map(|s| g.exp(s, &mut Vec::new()));
        g.line(&format!("const int64_t nseg = {nseg1} - 1;"));
        let total = g.bind(ScalarTy::I64, &format!("({}) * nseg", outer_size(&sh)));
        g.open(&loop_over("q", &total, group));
        g.line(&format!("const int64_t base = (q / nseg) * {n}, s = q % nseg;"));
        g.line(&format!("const int64_t lo = {off}[s], hi = {off}[s + 1];"));
        let read = |g: &mut ExpGen<'_>, k: &str| {
            let p = g.bind(ScalarTy::I64, &format!("base + {k}"));
            read_at(g, src, &p, loc)
        };
        let (v, has) = range_reduce(&mut g, &op, &read, elt, ("lo", "hi"), commutative(f), group);
        finish(&mut g, &op, z.as_ref(), &v, &has, &obufs, "q", group);
        g.close("}");
        let parts = g.into_parts();
        k.close_function(out, parts);
    }
}

/// The header of a loop in which each warp (or each block) of the grid
/// takes items `var` of `0 .. n` in turn: the same items in every thread
/// of the group, so that the group's shuffles and barriers are reached by
/// all its threads (Note [No early exits]).
pub(crate) fn loop_over(var: &str, n: &str, group: Group) -> String {
    match group {
        Group::Warp => format!(
            "for (int64_t {var} = ((int64_t)blockIdx.x * ACC_BLOCK + tid) >> 5; {var} < {n}; \
             {var} += ((int64_t)gridDim.x * ACC_BLOCK) >> 5) {{"
        ),
        Group::Block => block_stride(var, n),
    }
}

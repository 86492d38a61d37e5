//! The segmented fold skeleton (`fold_seg`, `fold1_seg`): every row of the
//! source is cut into segments by one vector of offsets (segment `s` is
//! `offsets[s] .. offsets[s+1]`), and each segment reduces to one element.
//!
//! Algorithm: the iteration space is the (row, segment) pairs, `rows *
//! nseg` of them in row-major order; each is one reduction (the fold
//! skeleton's `reduce_row`, with its multi-accumulator loop for long
//! segments). The executor balances the work by elements, not by segment
//! count: for one row it cuts the pairs where the offsets cross multiples
//! of `elements / chunks` (a binary search in the offsets), so that one
//! long segment and many short ones cost each worker alike.
//!
//! ```text
//! (r, s) = (start / nseg, start % nseg)
//! for q in start..end:
//!     out[q] = seed ⊕ x[r*n + offsets[s]] ⊕ .. ⊕ x[r*n + offsets[s+1] - 1]
//!     (r, s) = the next pair
//! ```

use super::exec::{alloc, balanced, dims_i64, finish, Launch};
use super::fold::reduce_row;
use super::kernel::{KernelGen, Row};
use crate::c::host::{segments, shape_of};
use crate::c::kernel::store;
use crate::c::kernel::KernelCore;
use crate::c::kernel::ShapeOf;
use crate::host::Env;
use crate::interp::split_inner;
use accelerate_base::array::ArrayData;
use accelerate_base::error::Result;
use accelerate_plan as plan;
use std::sync::Arc;

/// The C functions of a fold_seg kernel (its name and these suffixes).
pub(crate) const FUNCTIONS: &[&str] = &[""];

/// Launch: over `(row, segment)` pairs; a single row is cut where the
/// offsets balance the elements between chunks (`balanced`).
pub(super) fn launch(
    launch: &Launch<'_>,
    env: &Env<Arc<ArrayData>>,
    seed: bool,
    source: &ShapeOf,
    offsets: usize,
    op: &'static str,
) -> Result<ArrayData> {
    let (k, seed, offsets) = (launch.k, &seed, &offsets);
    let shape = shape_of(env, source)?;
    let offs = segments(env, k, *offsets, &shape, *seed, op)?;
    let (outer, _) = split_inner(&shape);
    let nseg = offs.len() - 1;
    let rows: usize = outer.iter().product();
    let mut dims = outer.clone();
    dims.push(nseg);
    let mut out = alloc(&k.elt, &dims, k.loc)?;
    let elements: usize = shape.iter().product();
    let bounds = if elements < 2 * launch.grain() {
        // too little work to split (Note [Sequential below a cost])
        vec![0, rows * nseg]
    } else if rows == 1 {
        balanced(offs, 4 * launch.workers)
    } else {
        launch.uniform(rows * nseg, 1)
    };
    launch.run("", &mut out, &mut [], &dims_i64(&shape), &[], &bounds)?;
    finish(out, &k.elt, dims, rows * nseg)
}

/// The C function of a segmented fold; `offsets` is the array variable of
/// the offsets (an `i64` vector).
pub(crate) fn fold_seg(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::FoldSeg) {
    let (f, seed, src, offsets) = (&s.f, s.seed.as_ref(), &s.src.source, s.offsets);
    let (rank, elt, what, loc) = (spec.out.rank, &spec.out.elt, spec.op, spec.loc);
    k.with_fast_path(out, |k, out| {
        k.open_function(out, "", what, loc);
        let (obufs, _) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
        let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
        let n = sh[rank - 1].clone();
        let offs = k.slots[&offsets].clone();
        let (off, nseg1) = (offs.leaves[0].clone(), offs.extents[0].clone());
        let mut g = k.exp_gen(1);
        let z = seed.map(|s| g.exp(s, &mut Vec::new()));
        // the base of `q`'s row and its segment: for one row, `q` itself
        // (the row and segment counters of several rows cost a sparse
        // product of 20 000 short rows 3% of its time)
        let (base, seg) = if rank == 1 {
            g.open("for (int64_t q = start; q < end; q++) {");
            ("0", "q")
        } else {
            g.line(&format!("const int64_t nseg = {nseg1} - 1;"));
            // the (row, segment) of `q`, divided out once and then counted
            // (a division per segment cost SMVM's million short rows time)
            g.line("int64_t row = start < end ? start / nseg : 0, s = start < end ? start % nseg : 0;");
            g.open("for (int64_t q = start; q < end; q++) {");
            g.line(&format!("const int64_t base = row * {n};"));
            ("base", "s")
        };
        g.line(&format!("const int64_t lo = {off}[{seg}], hi = {off}[{seg} + 1];"));
        let r = reduce_row(&mut g, f, z.as_ref(), src, &Row::at(base), "lo", "hi", loc);
        store(&mut g, &obufs, "q", &r);
        if rank > 1 {
            g.line("if (++s == nseg) { s = 0; row++; }");
        }
        g.close("}");
        let parts = g.into_parts();
        k.close_function(out, parts);
    });
}

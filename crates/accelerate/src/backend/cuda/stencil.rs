//! The stencil skeleton on the GPU (`stencil`, `stencil2`): each element
//! of the result is the stencil function of the neighbourhood of the same
//! index in each argument.
//!
//! Algorithm: a grid-stride loop over the result's positions, as the
//! generate skeleton's; each position becomes an index, and for every
//! point of a pattern the neighbour's index is the element's plus the
//! point's offset, brought inside the array by the boundary or replaced by
//! the boundary's value (`c::stencil::neighbourhood`, as in the CPU
//! backend).
//!
//! ```text
//! for i in 0..size (grid-stride): ix = from_index(shape, i)
//!     for each pattern point o: v_o = a[bound(ix + o)]   (or the boundary value)
//!     out[i] = f(v_0, .., v_{p-1})
//! ```
//!
//! This is the plain bounds-checked form: every element pays for the
//! boundary arithmetic and neighbours are read from global memory
//! (through the cache). The tiled form of DESIGN.md §7 (a block's tile
//! and its halo staged in shared memory, the interior without boundary
//! code) is not written yet. Launch: any number of blocks; the kernel's
//! own extents are the result's shape.

use super::kernel::{grid_stride, KernelGen};
use crate::array::{EltTy, ScalarTy};
use crate::backend::c::kernel::KernelCore;
use crate::backend::c::kernel::{store, unravel, Source};
use crate::backend::c::product;
use crate::backend::c::stencil::neighbourhood;
use crate::exec::error::SrcLoc;
use crate::ir::{Fun, StencilArg};

/// The kernel function of a stencil kernel over arguments of rank `rank`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn stencil(
    k: &mut KernelGen,
    out: &mut String,
    f: &Fun,
    args: &[StencilArg],
    sources: &[Source],
    arg_elts: &[EltTy],
    rank: usize,
    elt: &EltTy,
    what: &str,
    loc: SrcLoc,
) {
    k.open_function(out, "", what, loc);
    let (obufs, _) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
    let mut g = k.exp_gen(1);
    let size = g.bind(ScalarTy::I64, &product(&sh));
    g.open(&grid_stride("i", &size));
    let ix = unravel(&mut g, "i", &sh);
    let vals = neighbourhood(&mut g, args, sources, arg_elts, &ix, &sh, false, loc);
    let v = g.apply(f, vals);
    store(&mut g, &obufs, "i", &v);
    if g.raised {
        g.line("if (e0.code) break;");
    }
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);
}

//! The stencil skeleton (`stencil`, `stencil2`): each element of the
//! result is the stencil function of the neighbourhood of the same index
//! in each argument.
//!
//! Algorithm: a loop over rows as in the generate skeleton (an index per
//! row, the innermost coordinate counted in the inner loop). For every
//! point of a pattern the neighbour's index is the element's plus the
//! point's offset, brought inside the array by the boundary or replaced by
//! the boundary's value (`c::stencil::neighbourhood`, which the CUDA
//! backend shares).
//!
//! ```text
//! for each index ix of the result:
//!     for each pattern point o: v_o = a[bound(ix + o)]   (or the boundary value)
//!     out[ix] = f(v_0, .., v_{p-1})
//! ```
//!
//! Elements far from the border never leave the array; splitting the
//! iteration into an interior without the boundary arithmetic and a
//! border with it (the paper's §5.7 future work) is not done yet.

use super::kernel::KernelGen;
use crate::array::EltTy;
use crate::backend::c::kernel::{store, Source};
use crate::backend::c::stencil::neighbourhood;
use crate::exec::error::SrcLoc;
use crate::ir::{Fun, StencilArg};

/// The C function of a stencil kernel over arguments of rank `rank`.
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
    k.with_fast_path(out, |k, out| {
        k.open_function(out, "", what, loc);
        let (obufs, _) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
        let sh = KernelGen::extents(out, "sh", rank, k.first_own_extent());
        let mut g = k.exp_gen(1);
        let ix = super::kernel::open_row_loops(&mut g, &sh);
        let vals = neighbourhood(&mut g, args, sources, arg_elts, &ix, &sh, loc);
        let v = g.apply(f, vals);
        store(&mut g, &obufs, "base + j", &v);
        if g.raised {
            g.line("if (e0.code) break;");
        }
        g.close("}");
        if g.raised {
            g.line("if (e0.code) break;");
        }
        g.close("}");
        let parts = g.into_parts();
        k.close_function(out, parts);
    });
}

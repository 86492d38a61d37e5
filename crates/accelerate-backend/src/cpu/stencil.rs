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
//! The interior and the border are computed apart (the paper's §5.7
//! future work): each row's part of the range is cut where the patterns'
//! margins (`c::stencil::margins`) begin and end, and the elements
//! between, in a row that is itself inside the margins of the outer
//! dimensions, read their neighbours with no boundary arithmetic, in a
//! loop of their own that the C compiler vectorises; the other elements
//! run the loop above.
//!
//! ```text
//! for each row r (outer index o):
//!     [ilo, ihi) = the row's interior if o is inside the outer margins, else empty
//!     border elements (lo .. ilo and ihi .. hi), then interior ones (ilo .. ihi)
//! ```

use super::exec::{alloc, dims_i64, finish, Launch};
use super::kernel::KernelGen;
use crate::c::host::stencil_shape;
use crate::c::kernel::store;
use crate::c::kernel::KernelCore;
use crate::c::kernel::ShapeOf;
use crate::c::stencil::{margins, neighbourhood};
use crate::host::Env;
use accelerate_base::array::ArrayData;
use accelerate_base::error::Result;
use accelerate_plan as plan;
use std::sync::Arc;

/// The C functions of a stencil kernel (its name and these suffixes).
pub(crate) const FUNCTIONS: &[&str] = &[""];

/// Launch: the result's positions in chunks of at least `GRAIN`, once the
/// host has checked the arguments' shapes and that the patterns fit.
pub(super) fn launch(
    launch: &Launch<'_>,
    env: &Env<Arc<ArrayData>>,
    sources: &[ShapeOf],
    patterns: &[Vec<usize>],
) -> Result<ArrayData> {
    let k = launch.k;
    let dims = stencil_shape(env, k, sources, patterns)?;
    let size: usize = dims.iter().product();
    let mut out = alloc(&k.elt, &dims, k.loc)?;
    launch.run("", &mut out, &mut [], &dims_i64(&dims), &[], &launch.uniform(size, launch.grain()))?;
    finish(out, &k.elt, dims, size)
}

/// The C function of a stencil kernel over arguments of rank `rank`.
pub(crate) fn stencil(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::Stencil) {
    let (f, args) = (&s.f, &s.args[..]);
    let (rank, elt, what, loc) = (spec.out.rank, &spec.out.elt, spec.op, spec.loc);
    k.with_fast_path(out, |k, out| {
        k.open_function(out, "", what, loc);
        let (obufs, _) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
        let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
        let mut g = k.exp_gen(1);
        let mut ix = super::kernel::open_rows(&mut g, &sh);
        let m = margins(args);
        let n = &sh[rank - 1];
        let inside: Vec<String> = ix
            .iter()
            .zip(&sh)
            .zip(&m)
            .map(|((x, d), m)| format!("({x} >= {m}) & ({x} < {d} - {m})"))
            .collect();
        let inside = if inside.is_empty() { "1".to_string() } else { inside.join(" & ") };
        let last = m[rank - 1];
        // the row's interior ilo .. ihi, clamped to its part lo .. hi
        g.line(&format!("const int64_t ilo = ({inside}) ? ({last} < lo ? lo : {last} < hi ? {last} : hi) : hi;"));
        g.line(&format!("const int64_t ihi = ({inside}) ? ({n} - {last} < ilo ? ilo : {n} - {last} < hi ? {n} - {last} : hi) : hi;"));
        ix.push("j".into());
        for interior in [false, true] {
            if interior {
                g.independent_iterations();
                g.open("for (int64_t j = ilo; j < ihi; j++) {");
            } else {
                g.open("for (int64_t j = lo; j < hi; j++) {");
                g.line("if (j == ilo) { j = ihi; if (j >= hi) break; }");
            }
            let vals = neighbourhood(&mut g, args, &ix, &sh, interior, loc);
            let v = g.apply(f, vals);
            store(&mut g, &obufs, "base + j", &v);
            if g.raised {
                g.break_on_error();
            }
            g.close("}");
        }
        if g.raised {
            g.break_on_error();
        }
        g.close("}");
        let parts = g.into_parts();
        k.close_function(out, parts);
    });
}

//! The generate skeleton on the GPU: every producer (`generate`, `map`,
//! `zip_with`, `backpermute`, `replicate`, `slice`, and a delayed array
//! that must be made manifest) computes each element of its result
//! independently.
//!
//! Algorithm: a grid-stride loop over the row-major positions `0 ..
//! size` (a thread per element, the grid as large as the device keeps
//! busy, each thread taking every `gridDim.x * ACC_BLOCK`-th position, so
//! that neighbouring threads touch neighbouring elements and reads and
//! writes coalesce):
//!
//! ```text
//! for i in 0..size (grid-stride): out[i] = linear(i)
//! ```
//!
//! When the producer's element is a function of its index that the
//! linear form would reach by turning the position into an index anyway
//! (a multidimensional `generate` or `backpermute`), the index is computed
//! here (`unravel`) and the producer read by index. Launch: any number of
//! blocks; the kernel's own extents are the result's shape.

use super::device::Device;
use super::exec::{DeviceArray, Launch};
use super::kernel::{grid_stride, KernelGen};
use crate::c::host::shape_of;
use crate::c::kernel::KernelCore;
use crate::c::kernel::ShapeOf;
use crate::c::kernel::{read_at, read_ix, store, unravel, uses_from_index, Source};
use crate::c::product;
use crate::host::Env;
use accelerate_base::array::ScalarTy;
use accelerate_base::error::Result;
use accelerate_plan as plan;

/// The kernel functions of a generate kernel (its name and these suffixes).
pub(crate) const FUNCTIONS: &[&str] = &[""];

/// Launch: a thread per element, in grid-stride loops.
pub(super) fn launch<D: Device>(
    launch: &Launch<'_, '_, D>,
    env: &Env<DeviceArray<D>>,
    shape: &ShapeOf,
) -> Result<DeviceArray<D>> {
    let k = launch.k;
    let dims = shape_of(env, shape)?;
    let size: usize = dims.iter().product();
    let out = launch.on.alloc(&k.elt, &dims, k.loc)?;
    if size > 0 {
        launch.run("", launch.blocks(size), &out, &[], &dims, &[])?;
    }
    Ok(out)
}

/// The kernel function of a generate kernel whose elements are those of
/// the delayed array `src` (of rank `rank`).
pub(crate) fn generate(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::Generate) {
    let (src, rank, elt, what, loc) = (&s.src.source, spec.out.rank, &spec.out.elt, spec.op, spec.loc);
    k.open_function(out, "", what, loc);
    let (obufs, _) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
    let by_index = rank >= 2 && matches!(src, Source::Delayed(d) if uses_from_index(&d.linear));
    let mut g = k.exp_gen(1);
    let size = g.bind(ScalarTy::I64, &product(&sh));
    g.open(&grid_stride("i", &size));
    let v = if by_index {
        let ix = unravel(&mut g, "i", &sh);
        read_ix(&mut g, src, &ix, loc)
    } else {
        read_at(&mut g, src, "i", loc)
    };
    store(&mut g, &obufs, "i", &v);
    if g.raised {
        g.break_on_error();
    }
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);
}

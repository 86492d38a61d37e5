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
//! That is the plain form, for ranks other than 2 and for patterns whose
//! tiles would not fit in shared memory. Matrices are tiled (DESIGN.md §7,
//! the paper's §5.7 future work): the result is cut into tiles of
//! `TY x TX` (8 x 32: a warp per tile row, so that loads coalesce) that
//! the blocks take in turn. For each tile, each argument's values over
//! the tile's rows and columns of results widened by its pattern's reach
//! (the halo) are staged in shared memory, each loaded once, by the whole
//! block: a delayed argument (a fused producer) is computed once per
//! element instead of once per pattern point. A tile whose halo lies
//! inside the array (the interior, almost every tile) loads with no
//! boundary code; one on the border resolves each position by the
//! boundary. Then each thread computes its result from the tile.
//!
//! ```text
//! for each tile (y0, x0) (a block):
//!     for each argument a, each (y, x) in [y0 - ry, y1 + ry) x [x0 - rx, x1 + rx):
//!         tile_a[y - y0 + ry][x - x0 + rx] = a[y, x]   (or the boundary's value: border tiles only)
//!     __syncthreads()
//!     thread (ly, lx): out[y0 + ly, x0 + lx] = f(tile_a[ly + ry + dy][lx + rx + dx] for each point)
//!     __syncthreads()
//! ```
//!
//! `y1`, `x1` end the tile's results (the array's end for the last
//! tiles), so exactly the elements that the results' neighbourhoods
//! contain are read, as in the plain form. Launch: any number of blocks;
//! the kernel's own extents are the result's shape.

use super::device::Device;
use super::exec::{DeviceArray, Launch};
use super::kernel::{block_stride, grid_stride, KernelGen};
use crate::c::host::stencil_shape;
use crate::c::kernel::KernelCore;
use crate::c::kernel::ShapeOf;
use crate::c::kernel::{read_ix, store, unravel};
use crate::c::product;
use crate::c::stencil::{neighbourhood, value_at};
use crate::c::{c_type, CVal};
use crate::host::Env;
use accelerate_base::array::{EltTy, ScalarTy};
use accelerate_base::error::Result;
use accelerate_base::error::SrcLoc;
use accelerate_ir::Fun;
use accelerate_plan as plan;
use accelerate_plan::StencilArg;

/// The kernel functions of a stencil kernel (its name and these suffixes).
pub(crate) const FUNCTIONS: &[&str] = &[""];

/// Launch: a thread per element (or a block per tile), once the host has
/// checked the arguments' shapes and that the patterns fit.
pub(super) fn launch<D: Device>(
    launch: &Launch<'_, '_, D>,
    env: &Env<DeviceArray<D>>,
    sources: &[ShapeOf],
    patterns: &[Vec<usize>],
) -> Result<DeviceArray<D>> {
    let k = launch.k;
    let dims = stencil_shape(env, k, sources, patterns)?;
    let size: usize = dims.iter().product();
    let out = launch.on.alloc(&k.elt, &dims, k.loc)?;
    if size > 0 {
        launch.run("", launch.blocks(size), &out, &[], &dims, &[])?;
    }
    Ok(out)
}

/// The kernel function of a stencil kernel over arguments of rank `rank`.
pub(crate) fn stencil(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::Stencil) {
    let (f, args) = (&s.f, &s.args[..]);
    let (rank, elt, what, loc) = (spec.out.rank, &spec.out.elt, spec.op, spec.loc);
    if rank == 2 && tile_bytes(args) <= TILE_BYTES {
        return tiled(k, out, f, args, elt, what, loc);
    }
    k.open_function(out, "", what, loc);
    let (obufs, _) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
    let mut g = k.exp_gen(1);
    let size = g.bind(ScalarTy::I64, &product(&sh));
    g.open(&grid_stride("i", &size));
    let ix = unravel(&mut g, "i", &sh);
    let vals = neighbourhood(&mut g, args, &ix, &sh, false, loc);
    let v = g.apply(f, vals);
    store(&mut g, &obufs, "i", &v);
    if g.raised {
        g.break_on_error();
    }
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);
}

/// The rows and columns of a tile's results (`ACC_BLOCK` of them).
const TY: usize = 8;
const TX: usize = 32;

/// The most shared memory the tiles of one kernel take (bytes): a
/// quarter of the 48 KiB a block may have without opting in, so that
/// several blocks fit on a multiprocessor.
const TILE_BYTES: usize = 12 * 1024;

/// The shared memory of the tiles of every argument (a tile with its halo
/// per leaf).
fn tile_bytes(args: &[StencilArg]) -> usize {
    args.iter()
        .map(|a| (TY + 2 * (a.extents[0] / 2)) * (TX + 2 * (a.extents[1] / 2)) * a.src.ty.elt.size_bytes())
        .sum()
}

/// The tiled kernel function of a stencil over matrices (module docs).
#[allow(clippy::too_many_arguments)]
fn tiled(
    k: &mut KernelGen,
    out: &mut String,
    f: &Fun,
    args: &[StencilArg],
    elt: &EltTy,
    what: &str,
    loc: SrcLoc,
) {
    k.open_function(out, "", what, loc);
    let (obufs, _) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let sh = KernelCore::extents(out, "sh", 2, k.first_own_extent());
    let (h, w) = (sh[0].clone(), sh[1].clone());
    let mut g = k.exp_gen(1);
    g.line(&format!("const int64_t tiles_x = ({w} + {TX} - 1) / {TX};"));
    let tiles = g.bind(ScalarTy::I64, &format!("(({h} + {TY} - 1) / {TY}) * tiles_x"));
    // each argument's tile: its reach, its row stride, a shared array per leaf
    struct Tile {
        ry: usize,
        rx: usize,
        stride: usize,
        leaves: Vec<String>,
    }
    let mut tile_of = Vec::new();
    for a in args {
        let e = &a.src.ty.elt;
        let (ry, rx) = (a.extents[0] / 2, a.extents[1] / 2);
        let stride = TX + 2 * rx;
        let leaves = e
            .leaves()
            .into_iter()
            .map(|t| {
                let n = g.fresh("tile");
                g.line(&format!("__shared__ {} {n}[{}];", c_type(t), (TY + 2 * ry) * stride));
                n
            })
            .collect();
        tile_of.push(Tile { ry, rx, stride, leaves });
    }
    g.open(&block_stride("t", &tiles));
    g.line(&format!("const int64_t y0 = (t / tiles_x) * {TY}, x0 = (t % tiles_x) * {TX};"));
    g.line(&format!("const int64_t y1 = y0 + {TY} < {h} ? y0 + {TY} : {h};"));
    g.line(&format!("const int64_t x1 = x0 + {TX} < {w} ? x0 + {TX} : {w};"));
    for (a, tile) in args.iter().zip(&tile_of) {
        let (ry, rx) = (tile.ry, tile.rx);
        // the halo's rows and columns, and whether it lies inside
        let rows = g.bind(ScalarTy::I64, &format!("y1 - y0 + {}", 2 * ry));
        let cols = g.bind(ScalarTy::I64, &format!("x1 - x0 + {}", 2 * rx));
        let inside = g.bind(
            ScalarTy::Bool,
            &format!("(acc_bool)(y0 >= {ry} && y1 + {ry} <= {h} && x0 >= {rx} && x1 + {rx} <= {w})"),
        );
        let kk = g.fresh("k");
        g.open(&format!("for (int64_t {kk} = tid; {kk} < {rows} * {cols}; {kk} += ACC_BLOCK) {{"));
        let ly = g.bind(ScalarTy::I64, &format!("{kk} / {cols}"));
        let lx = g.bind(ScalarTy::I64, &format!("{kk} % {cols}"));
        let pos = vec![
            g.bind(ScalarTy::I64, &format!("y0 - {ry} + {ly}")),
            g.bind(ScalarTy::I64, &format!("x0 - {rx} + {lx}")),
        ];
        let slot = format!("{ly} * {} + {lx}", tile.stride);
        g.open(&format!("if ({inside}) {{"));
        let v = read_ix(&mut g, &a.src.source, &pos, loc);
        for (t, x) in tile.leaves.iter().zip(&v.leaves) {
            g.line(&format!("{t}[{slot}] = {x};"));
        }
        g.close("} else {");
        g.indent_in();
        let v = value_at(&mut g, a, &pos, &sh, loc);
        for (t, x) in tile.leaves.iter().zip(&v.leaves) {
            g.line(&format!("{t}[{slot}] = {x};"));
        }
        g.close("}");
        g.close("}");
    }
    g.line("__syncthreads();");
    g.line(&format!("const int64_t y = y0 + tid / {TX}, x = x0 + tid % {TX};"));
    g.open("if (y < y1 && x < x1) {");
    let mut vals = Vec::new();
    for (a, tile) in args.iter().zip(&tile_of) {
        for off in a.offsets() {
            let at = format!(
                "(tid / {TX} + {}) * {} + (tid % {TX} + {})",
                tile.ry as i64 + off[0],
                tile.stride,
                tile.rx as i64 + off[1]
            );
            vals.push(CVal {
                ty: a.src.ty.elt.clone(),
                leaves: tile.leaves.iter().map(|t| format!("{t}[{at}]")).collect(),
            });
        }
    }
    let v = g.apply(f, vals);
    store(&mut g, &obufs, &format!("y * ({w}) + x"), &v);
    g.close("}");
    g.line("__syncthreads();");
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);
}

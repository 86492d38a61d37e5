//! The stencil skeleton on the GPU (`stencil`, `stencil2`): each element
//! of the result is the stencil function of the neighbourhood of the same
//! index in each argument.
//!
//! Algorithm: a grid-stride loop over the result's positions, as the
//! generate skeleton's; each position becomes an index, and for every
//! point of a pattern the neighbour's index is the element's plus the
//! point's offset. With a boundary that reads the array (clamp, mirror,
//! wrap) the neighbour's coordinates are brought inside without a branch
//! (one reflection or wrap suffices: the host has checked that the
//! pattern fits in the array) and the read needs no check; with a
//! constant or a function boundary, a neighbour outside takes that value
//! instead of a read.
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

use super::kernel::{product, read_ix, store, unravel, KernelGen, Source};
use crate::array::{EltTy, ScalarTy};
use crate::backend::c::{c_type, CVal, ExpGen};
use crate::exec::error::SrcLoc;
use crate::ir::{Boundary, Fun, StencilArg};

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
    let sh = KernelGen::extents(out, "sh", rank, k.first_own_extent());
    let mut g = k.exp_gen(1);
    let size = g.bind(ScalarTy::I64, &product(&sh));
    g.open(&super::kernel::grid_stride("i", &size));
    let ix = unravel(&mut g, "i", &sh);
    let mut vals = Vec::new();
    for ((arg, src), aelt) in args.iter().zip(sources).zip(arg_elts) {
        for off in arg.offsets() {
            let nb: Vec<String> = ix
                .iter()
                .zip(&off)
                .map(
                    |(x, &o)| if o == 0 { x.clone() } else { g.bind(ScalarTy::I64, &format!("{x} + ({o})")) },
                )
                .collect();
            vals.push(point(&mut g, arg, src, aelt, &nb, &sh, &off, loc));
        }
    }
    let v = g.apply(f, vals);
    store(&mut g, &obufs, "i", &v);
    if g.raised {
        g.line("if (e0.code) break;");
    }
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);
}

/// The value of one pattern point at neighbour index `nb`
/// (`cpu::stencil::point`).
#[allow(clippy::too_many_arguments)]
fn point(
    g: &mut ExpGen<'_>,
    arg: &StencilArg,
    src: &Source,
    elt: &EltTy,
    nb: &[String],
    sh: &[String],
    off: &[i64],
    loc: SrcLoc,
) -> CVal {
    let bring_inside = |g: &mut ExpGen<'_>, how: &Boundary| -> Vec<String> {
        nb.iter()
            .zip(sh)
            .zip(off)
            .map(|((x, n), &o)| {
                if o == 0 {
                    return x.clone();
                }
                let e = match how {
                    Boundary::Clamp => format!("{x} < 0 ? 0 : ({x} >= {n} ? {n} - 1 : {x})"),
                    Boundary::Mirror => format!("{x} < 0 ? -{x} : ({x} >= {n} ? 2 * ({n} - 1) - {x} : {x})"),
                    _ => format!("{x} < 0 ? {x} + {n} : ({x} >= {n} ? {x} - {n} : {x})"),
                };
                g.bind(ScalarTy::I64, &e)
            })
            .collect()
    };
    match &arg.boundary {
        b @ (Boundary::Clamp | Boundary::Mirror | Boundary::Wrap) => {
            let inside = bring_inside(g, b);
            read_ix(g, src, &inside, loc)
        }
        Boundary::Constant(_) | Boundary::Function(_) => {
            let conds: Vec<String> = nb
                .iter()
                .zip(sh)
                .zip(off)
                .filter(|(_, &o)| o != 0)
                .map(|((x, n), _)| format!("({x} >= 0 && {x} < {n})"))
                .collect();
            if conds.is_empty() {
                return read_ix(g, src, nb, loc);
            }
            let res: Vec<String> = elt.leaves().iter().map(|_| g.fresh("p")).collect();
            for (r, t) in res.iter().zip(elt.leaves()) {
                g.line(&format!("{} {r};", c_type(t)));
            }
            g.open(&format!("if ({}) {{", conds.join(" && ")));
            let v = read_ix(g, src, nb, loc);
            for (r, x) in res.iter().zip(&v.leaves) {
                g.line(&format!("{r} = {x};"));
            }
            g.close("} else {");
            g.indent_in();
            let v = match &arg.boundary {
                Boundary::Constant(c) => g.exp(c, &mut Vec::new()),
                Boundary::Function(h) => g.apply(h, vec![CVal::index(nb.to_vec())]),
                _ => unreachable!("a constant or function boundary"),
            };
            for (r, x) in res.iter().zip(&v.leaves) {
                g.line(&format!("{r} = {x};"));
            }
            g.close("}");
            CVal { ty: elt.clone(), leaves: res }
        }
    }
}

//! The part of the stencil skeleton that both backends share: the values
//! of every pattern point around an element, with the arguments'
//! boundaries.
//!
//! For every point of a pattern the neighbour's index is the element's
//! plus the point's offset. With a boundary that reads the array (clamp,
//! mirror, wrap) the neighbour's coordinates are brought inside without a
//! branch (one reflection or wrap suffices: the host has checked that the
//! pattern fits in the array), and the read needs no check; with a
//! constant or a function boundary, a neighbour outside takes that value
//! instead of a read.

use super::kernel::read_ix;
use super::{c_type, within_extent, CVal, ExpGen};
use accelerate_base::array::ScalarTy;
use accelerate_base::error::SrcLoc;
use accelerate_ir::Boundary;
use accelerate_plan::StencilArg;

/// How far the patterns reach in each dimension: an element at least
/// this far from the result's border in every dimension has every
/// neighbour inside (the interior).
pub(crate) fn margins(args: &[StencilArg]) -> Vec<i64> {
    let rank = args.first().map_or(0, |a| a.extents.len());
    (0..rank).map(|d| args.iter().map(|a| (a.extents[d] / 2) as i64).max().unwrap_or(0)).collect()
}

/// The values of the pattern points of every argument (in order: the
/// stencil function's arguments) around the element at index `ix` of a
/// result of extents `sh`; an `interior` element's neighbours are read
/// with no boundary arithmetic (`margins`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn neighbourhood(
    g: &mut ExpGen<'_>,
    args: &[StencilArg],
    ix: &[String],
    sh: &[String],
    interior: bool,
    loc: SrcLoc,
) -> Vec<CVal> {
    let mut vals = Vec::new();
    for arg in args {
        for off in arg.offsets() {
            let nb: Vec<String> = ix
                .iter()
                .zip(&off)
                .map(
                    |(x, &o)| if o == 0 { x.clone() } else { g.bind(ScalarTy::I64, &format!("{x} + ({o})")) },
                )
                .collect();
            vals.push(if interior {
                read_ix(g, &arg.src.source, &nb, loc)
            } else {
                point(g, arg, &nb, sh, &off, loc)
            });
        }
    }
    vals
}

/// The value of argument `arg` at index `pos`, which may lie outside the
/// array by at most its pattern's reach in each dimension: the element,
/// or the boundary's value there (for a tile of neighbours, `cuda::stencil`).
#[cfg(feature = "cuda")]
#[allow(clippy::too_many_arguments)]
pub(crate) fn value_at(
    g: &mut ExpGen<'_>,
    arg: &StencilArg,
    pos: &[String],
    sh: &[String],
    loc: SrcLoc,
) -> CVal {
    // every coordinate may be outside: an offset other than 0 says so
    let anywhere = vec![1; pos.len()];
    point(g, arg, pos, sh, &anywhere, loc)
}

/// The value of one pattern point at neighbour index `nb`.
#[allow(clippy::too_many_arguments)]
fn point(
    g: &mut ExpGen<'_>,
    arg: &StencilArg,
    nb: &[String],
    sh: &[String],
    off: &[i64],
    loc: SrcLoc,
) -> CVal {
    let (src, elt) = (&arg.src.source, &arg.src.ty.elt);
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
                .map(|((x, n), _)| within_extent(x, n))
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

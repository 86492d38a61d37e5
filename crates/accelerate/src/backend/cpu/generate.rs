//! The generate skeleton: every producer (`generate`, `map`, `zip_with`,
//! `backpermute`, `replicate`, `slice`, and a delayed array that must be
//! made manifest) computes each element of its result independently.
//!
//! Algorithm: the executor splits the row-major positions `0 .. size`
//! into chunks (Note [Chunks]); a chunk `start .. end` is one loop.
//! When the producer's element at a position is a cheap function of the
//! position (a `map` reads its argument at the same position; a vector's
//! position is its index) the loop runs over positions:
//!
//! ```text
//! for i in start..end: out[i] = linear(i)
//! ```
//!
//! which the C compiler vectorises when `linear` has no checks left (reads
//! of an array inside the bounds of the loop are not checked: see
//! `kernel::trust`). Otherwise (a multidimensional `generate` or
//! `backpermute`) it runs over rows, turning the first position of each
//! row into an index once, so that the inner loop walks the innermost
//! dimension with no division:
//!
//! ```text
//! for each row r touching start..end:
//!     (i0, .., i_{n-2}) = from_index(outer shape, r)
//!     for j in the row's part of start..end: out[r*n + j] = index(i0, .., j)
//! ```

use super::kernel::{read_at, read_ix, store, KernelGen, Source};
use crate::array::EltTy;
use crate::exec::error::SrcLoc;
use crate::ir::{visit, ExpKind, Fun, PrimFun};

/// Writes the C function of a generate kernel whose elements are those of
/// the delayed array `src` (of rank `rank`).
pub(crate) fn generate(
    k: &mut KernelGen,
    out: &mut String,
    src: &Source,
    rank: usize,
    elt: &EltTy,
    what: &str,
    loc: SrcLoc,
) {
    k.with_fast_path(out, |k, out| {
        k.open_function(out, "", what, loc);
        let (obufs, _) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
        let sh = KernelGen::extents(out, "sh", rank, k.first_own_extent());
        let by_rows = rank >= 2 && matches!(src, Source::Delayed { linear, .. } if uses_from_index(linear));
        let mut g = k.exp_gen(1);
        if by_rows {
            let ix = super::kernel::open_row_loops(&mut g, &sh);
            let v = read_ix(&mut g, src, &ix, loc);
            store(&mut g, &obufs, "base + j", &v);
            if g.raised {
                g.line("if (e0.code) break;");
            }
            g.close("}");
            if g.raised {
                g.line("if (e0.code) break;");
            }
            g.close("}");
        } else {
            g.independent_iterations();
            g.open("for (int64_t i = start; i < end; i++) {");
            let v = read_at(&mut g, src, "i", loc);
            store(&mut g, &obufs, "i", &v);
            if g.raised {
                g.line("if (e0.code) break;");
            }
            g.close("}");
        }
        let parts = g.into_parts();
        k.close_function(out, parts);
    });
}

/// Does a function turn a position into an index (so that a loop over
/// rows is cheaper than one over positions)?
pub(crate) fn uses_from_index(f: &Fun) -> bool {
    fn go(e: &crate::ir::OpenExp, found: &mut bool) {
        if matches!(e.kind, ExpKind::Prim(PrimFun::FromIndex, _)) {
            *found = true;
        }
        if !*found {
            stacker::maybe_grow(64 * 1024, 1024 * 1024, || visit::each_child(e, |c| go(c, found)));
        }
    }
    let mut found = false;
    go(&f.body, &mut found);
    found
}

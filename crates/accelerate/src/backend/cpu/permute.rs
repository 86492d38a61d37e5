//! The permute skeleton (forward permutation): starting from a copy of the
//! default array, every source element whose index function gives
//! `(true, ix)` is combined into position `ix` as `combine(new, old)`.
//!
//! Algorithm. The executor copies the defaults into the result, then the
//! kernel runs over source positions:
//!
//! ```text
//! for i in start..end: ix = from_index(source shape, i)
//!     (keep, to) = index(ix); if keep: res[to] = combine(x[i], res[to])
//! ```
//!
//! Several sources may land on one position at once. When the element is
//! one primitive value (1, 2, 4 or 8 bytes) the update is a
//! compare-and-swap loop (`__atomic_compare_exchange`, by bits, so NaNs
//! compare equal to themselves): read the old value, combine, and retry
//! if another worker changed it in between; every operator and type is
//! served, and the combiner's associativity and commutativity
//! (`docs/semantics.md`) make the order irrelevant. A tuple element has no
//! single atomic word: that kernel runs on one worker (the executor gives
//! it the whole range). Privatised copies merged at the end would scale
//! for small results; they are not built yet.

use super::kernel::KernelGen;
use crate::array::EltTy;
use crate::backend::c::kernel::{atomic, declare, open_destination, unravel, Source};
use crate::backend::c::{c_type, CVal};
use crate::exec::error::SrcLoc;
use crate::ir::Fun;

/// The C function of a permute kernel over a source of rank `rank` into
/// defaults variable `defaults` (whose copy is the output buffer).
#[allow(clippy::too_many_arguments)]
pub(crate) fn permute(
    k: &mut KernelGen,
    out: &mut String,
    combine: &Fun,
    index: &Fun,
    src: &Source,
    rank: usize,
    res_rank: usize,
    elt: &EltTy,
    what: &str,
    loc: SrcLoc,
) {
    k.open_function(out, "", what, loc);
    let (obufs, _) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let sh = KernelGen::extents(out, "sh", rank, k.first_own_extent());
    let rsh = KernelGen::extents(out, "rs", res_rank, k.first_own_extent() + rank);
    let atomic = atomic(elt);
    let mut g = k.exp_gen(1);
    g.open("for (int64_t i = start; i < end; i++) {");
    let ix = unravel(&mut g, "i", &sh);
    let (j, new) = open_destination(&mut g, index, src, &ix, &rsh, loc);
    if atomic {
        let t = elt.leaves()[0];
        let ct = c_type(t);
        let o = &obufs[0];
        let old = g.fresh("old");
        g.line(&format!("{ct} {old}; __atomic_load(&{o}[{j}], &{old}, __ATOMIC_RELAXED);"));
        g.open("for (;;) {");
        let v = g.apply(combine, vec![new, CVal::scalar(t, old.clone())]);
        let nv = g.bind(t, &v.leaves[0]);
        g.line(&format!(
            "if (__atomic_compare_exchange(&{o}[{j}], &{old}, &{nv}, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) break;"
        ));
        g.close("}");
    } else {
        let old = CVal { ty: elt.clone(), leaves: obufs.iter().map(|o| format!("{o}[{j}]")).collect() };
        let old = declare(&mut g, "old", &old);
        let v = g.apply(combine, vec![new, old]);
        for (o, x) in obufs.iter().zip(&v.leaves) {
            g.line(&format!("{o}[{j}] = {x};"));
        }
    }
    g.close("}");
    g.close("}");
    g.line("if (e0.code) break;");
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);
}

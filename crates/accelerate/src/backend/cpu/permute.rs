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

use super::kernel::{read_ix, KernelGen, Source};
use crate::array::{EltTy, ScalarTy};
use crate::backend::c::{c_type, CVal};
use crate::exec::error::SrcLoc;
use crate::ir::Fun;

/// Can a permute of this element type combine atomically?
pub(crate) fn atomic(elt: &EltTy) -> bool {
    elt.leaves().len() == 1
}

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
    // the source index of position i
    let mut rest = "i".to_string();
    let mut ix = vec![String::new(); rank];
    for d in (0..rank).rev() {
        if d == 0 {
            ix[0] = rest.clone();
        } else {
            ix[d] = g.bind(ScalarTy::I64, &format!("{rest} % {}", sh[d]));
            rest = g.bind(ScalarTy::I64, &format!("{rest} / {}", sh[d]));
        }
    }
    let r = g.apply(index, vec![CVal::index(ix.clone())]);
    let keep = r.leaves[0].clone();
    let to: Vec<String> = r.leaves[1..].to_vec();
    g.open(&format!("if ({keep}) {{"));
    let inside: Vec<String> = to.iter().zip(&rsh).map(|(x, d)| format!("({x} >= 0 && {x} < {d})")).collect();
    let inside = if inside.is_empty() { "1".to_string() } else { inside.join(" && ") };
    g.open(&format!("if (!({inside})) {{"));
    let mut vals = vec![to.len().to_string()];
    vals.extend(to.iter().cloned());
    vals.extend(rsh.iter().cloned());
    g.raise_at("ACC_ERR_INDEX_OUT_OF_BOUNDS", loc, &vals);
    g.close("} else {");
    g.indent_in();
    let j = g.bind(ScalarTy::I64, &crate::backend::c::linear_of(&to, &rsh));
    let new = read_ix(&mut g, src, &ix, loc);
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
        let old = super::kernel::declare(&mut g, "old", &old);
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

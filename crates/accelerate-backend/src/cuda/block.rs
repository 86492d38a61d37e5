//! Cooperative reductions and scans of a warp and of a block, generated
//! inline around the user's operator (which may be any associative scalar
//! function of any element type, tuples included, so no library routine
//! such as CUB's can be called).
//!
//! Every primitive keeps the order of the elements: the operator is taken
//! to be associative, not commutative (`docs/semantics.md`).
//!
//! - Warp reduction: a tree over lanes with offsets 1, 2, 4, 8, 16 by
//!   `__shfl_down_sync`: at offset `d` a lane whose number is a multiple
//!   of `2d` combines its partial (the lanes `l .. l+d`) with the next
//!   lane's (`l+d .. l+2d`), so lane 0 ends with `x0 ⊕ x1 ⊕ .. ⊕ x31` in
//!   order. (The usual offsets 16, 8, .. pair lane `l` with `l + 16` and
//!   need a commutative operator.) Each lane carries a flag saying whether
//!   it holds a value at all, so that partial warps and empty ranges need
//!   no identity element, which a user's operator does not have.
//! - Block reduction: each warp reduces; lane 0 of each writes its partial
//!   to shared memory; warp 0 reduces the partials. Thread 0 holds the
//!   result.
//! - Block scan (Hillis-Steele within a warp by `__shfl_up_sync`, then the
//!   warps' totals scanned by warp 0 in shared memory, then each warp's
//!   values combined with the total of the warps before it): an inclusive
//!   scan of the block's values in thread order. The values present are a
//!   prefix of the block (threads `0 .. cnt`), and the operator is only
//!   ever applied to values present.
//!
//! Note [No early exits]
//! These primitives synchronise the block (`__syncthreads`) or the warp
//! (the shuffles name all 32 lanes), so every thread of the block must
//! reach each of them: a kernel that uses them never returns or breaks out
//! of its loops early, not even after an error (the error is kept in the
//! thread's context and the thread computes on, with harmless values, to
//! the end, where it publishes the error). Loops around them run the same
//! number of times in every thread of a block.

use super::kernel::declare_zero;
use crate::c::kernel::assign;
use crate::c::{c_type, CVal, ExpGen};
use accelerate_base::array::{EltTy, ScalarTy};

/// `op(earlier, later)`: the operator, with its arguments in the order of
/// the elements (a right scan's operator is the user's, flipped).
pub(crate) type Op<'o> = dyn Fn(&mut ExpGen<'_>, &CVal, CVal) -> CVal + 'o;

/// Which threads cooperate.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Group {
    Warp,
    Block,
}

impl Group {
    /// The number of threads, the thread's number in the group, and the
    /// condition that holds in the thread that ends with a reduction.
    fn names(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Group::Warp => ("32", "lane", "lane == 0"),
            Group::Block => ("ACC_BLOCK", "tid", "tid == 0"),
        }
    }

    /// The condition that holds in the one thread that ends with a
    /// reduction's result.
    pub fn leader(self) -> &'static str {
        self.names().2
    }
}

/// `v = op(v, x)`, or `v = x` where the flag `has` says that `v` holds
/// nothing yet; sets the flag.
fn combine_into(g: &mut ExpGen<'_>, op: &Op<'_>, v: &CVal, has: &str, x: CVal) {
    g.open(&format!("if ({has}) {{"));
    let r = op(g, v, x.clone());
    assign(g, v, &r);
    g.close("} else {");
    g.indent_in();
    assign(g, v, &x);
    g.close("}");
    g.line(&format!("{has} = 1;"));
}

/// The warp's values `v` (where the int flag `has` is set), reduced in
/// lane order into lane 0 (which may then hold nothing, if no lane did).
pub(crate) fn warp_reduce(g: &mut ExpGen<'_>, op: &Op<'_>, v: &CVal, has: &str) {
    g.open("for (int off = 1; off < 32; off <<= 1) {");
    let o = shuffled(g, v, "acc_shfl_down");
    g.line(&format!("const int oh = __shfl_down_sync(ACC_FULL_MASK, {has}, off);"));
    g.open("if ((lane & (2 * off - 1)) == 0 && oh) {");
    combine_into(g, op, v, has, o);
    g.close("}");
    g.close("}");
}

/// Every leaf of `v` shuffled by `off` with `shfl` (inside the loop of
/// offsets).
fn shuffled(g: &mut ExpGen<'_>, v: &CVal, shfl: &str) -> CVal {
    let leaves =
        v.ty.leaves()
            .into_iter()
            .zip(&v.leaves)
            .map(|(t, x)| g.bind(t, &format!("{shfl}({x}, off)")))
            .collect();
    CVal { ty: v.ty.clone(), leaves }
}

/// Shared arrays of `count` elements, one per leaf of `ty`.
fn shared(g: &mut ExpGen<'_>, base: &str, ty: &EltTy, count: &str) -> Vec<String> {
    ty.leaves()
        .into_iter()
        .map(|t| {
            let n = g.fresh(base);
            g.line(&format!("__shared__ {} {n}[{count}];", c_type(t)));
            n
        })
        .collect()
}

fn at(arrays: &[String], ty: &EltTy, i: &str) -> CVal {
    CVal { ty: ty.clone(), leaves: arrays.iter().map(|a| format!("{a}[{i}]")).collect() }
}

/// The block's values reduced in thread order into thread 0 (Note [No
/// early exits]: every thread of the block calls it).
pub(crate) fn block_reduce(g: &mut ExpGen<'_>, op: &Op<'_>, v: &CVal, has: &str) {
    warp_reduce(g, op, v, has);
    let sv = shared(g, "sv", &v.ty, "ACC_WARPS");
    let sh = g.fresh("sh");
    g.line(&format!("__shared__ int {sh}[ACC_WARPS];"));
    g.open("if (lane == 0) {");
    assign(g, &at(&sv, &v.ty, "warp"), v);
    g.line(&format!("{sh}[warp] = {has};"));
    g.close("}");
    g.line("__syncthreads();");
    g.open("if (warp == 0) {");
    g.line(&format!("{has} = lane < ACC_WARPS ? {sh}[lane] : 0;"));
    g.open(&format!("if ({has}) {{"));
    assign(g, v, &at(&sv, &v.ty, "lane"));
    g.close("}");
    warp_reduce(g, op, v, has);
    g.close("}");
    g.line("__syncthreads();");
}

/// The reduction of the elements `lo .. hi` (C atoms) that `read` gives
/// by position, by a warp or a block: into lane 0 or thread 0, which holds
/// the value and a flag (set unless the range is empty). With a
/// `commutative` operator each thread first reduces the elements
/// `me, me + size, ..` of the range (reads coalesce, one cooperative
/// reduction at the end); otherwise the range is taken a tile of `size`
/// elements at a time, each tile reduced cooperatively in order and
/// added to the leader's running total.
pub(crate) fn range_reduce(
    g: &mut ExpGen<'_>,
    op: &Op<'_>,
    read: &dyn Fn(&mut ExpGen<'_>, &str) -> CVal,
    ty: &EltTy,
    (lo, hi): (&str, &str),
    commutative: bool,
    group: Group,
) -> (CVal, String) {
    let (size, me, leader) = group.names();
    let cooperate = |g: &mut ExpGen<'_>, v: &CVal, has: &str| match group {
        Group::Warp => warp_reduce(g, op, v, has),
        Group::Block => block_reduce(g, op, v, has),
    };
    let has = g.fresh("has");
    g.line(&format!("int {has} = 0;"));
    let acc = declare_zero(g, "acc", ty);
    let k = g.fresh("k");
    if commutative {
        g.open(&format!("for (int64_t {k} = {lo} + {me}; {k} < {hi}; {k} += {size}) {{"));
        let x = read(g, &k);
        combine_into(g, op, &acc, &has, x);
        g.close("}");
        cooperate(g, &acc, &has);
    } else {
        g.open(&format!("for (int64_t {k} = {lo}; {k} < {hi}; {k} += {size}) {{"));
        let h = g.fresh("h");
        g.line(&format!("int {h} = 0;"));
        let v = declare_zero(g, "v", ty);
        g.open(&format!("if ({k} + {me} < {hi}) {{"));
        let p = g.bind(ScalarTy::I64, &format!("{k} + {me}"));
        let x = read(g, &p);
        assign(g, &v, &x);
        g.line(&format!("{h} = 1;"));
        g.close("}");
        cooperate(g, &v, &h);
        g.open(&format!("if (({leader}) && {h}) {{"));
        combine_into(g, op, &acc, &has, v);
        g.close("}");
        g.close("}");
    }
    (acc, has)
}

/// The inclusive scan, in thread order, of the block's values `v`, present
/// in threads `0 .. cnt` (`h` is `tid < cnt`); afterwards `v` holds each
/// present thread's prefix. Returns the shared arrays of the warps'
/// inclusive prefixes: the block's total is at `(cnt - 1) >> 5`, valid
/// until the caller's next `__syncthreads()` (which must come before the
/// next call).
pub(crate) fn block_scan(g: &mut ExpGen<'_>, op: &Op<'_>, v: &CVal, h: &str, cnt: &str) -> Vec<String> {
    g.open("for (int off = 1; off < 32; off <<= 1) {");
    let o = shuffled(g, v, "acc_shfl_up");
    g.open(&format!("if (lane >= off && {h}) {{"));
    let r = op(g, &o, v.clone());
    assign(g, v, &r);
    g.close("}");
    g.close("}");
    let sv = shared(g, "sv", &v.ty, "ACC_WARPS");
    g.open(&format!("if ({h} && (lane == 31 || tid + 1 == {cnt})) {{"));
    assign(g, &at(&sv, &v.ty, "warp"), v);
    g.close("}");
    g.line("__syncthreads();");
    g.open("if (warp == 0) {");
    let hw = g.fresh("hw");
    g.line(&format!("const int {hw} = lane < ACC_WARPS && (int64_t)lane * 32 < {cnt};"));
    let w = declare_zero(g, "w", &v.ty);
    g.open(&format!("if ({hw}) {{"));
    assign(g, &w, &at(&sv, &v.ty, "lane"));
    g.close("}");
    g.open("for (int off = 1; off < 32; off <<= 1) {");
    let ow = shuffled(g, &w, "acc_shfl_up");
    g.open(&format!("if (lane >= off && {hw}) {{"));
    let r = op(g, &ow, w.clone());
    assign(g, &w, &r);
    g.close("}");
    g.close("}");
    g.open(&format!("if ({hw}) {{"));
    assign(g, &at(&sv, &v.ty, "lane"), &w);
    g.close("}");
    g.close("}");
    g.line("__syncthreads();");
    g.open(&format!("if (warp > 0 && {h}) {{"));
    let before = at(&sv, &v.ty, "warp - 1");
    let r = op(g, &before, v.clone());
    assign(g, v, &r);
    g.close("}");
    sv
}

/// The block's total after `block_scan`.
pub(crate) fn scan_total(sv: &[String], ty: &EltTy, cnt: &str) -> CVal {
    at(sv, ty, &format!("({cnt} - 1) >> 5"))
}

//! The permute skeleton on the GPU (forward permutation): starting from a
//! copy of the default array, every source element whose index function
//! gives `(true, ix)` is combined into position `ix` as `combine(new, old)`.
//!
//! Algorithm: the host copies the defaults into the result (a device to
//! device copy), then a grid-stride loop runs over source positions:
//!
//! ```text
//! for i in 0..size (grid-stride): ix = from_index(source shape, i)
//!     (keep, to) = index(ix); if keep: res[to] = combine(x[i], res[to])
//! ```
//!
//! Many threads may land on one position at once; the combiner is
//! associative and commutative (`docs/semantics.md`), so any order will
//! do, and each update is made atomic:
//!
//! - Native atomics where type and operator allow (Note [Native atomics
//!   for permute]): `+` on 32- and 64-bit integers and on `f64`
//!   (`atomicAdd`), `min`/`max` on 32- and 64-bit integers
//!   (`atomicMin`/`atomicMax`).
//! - Any other primitive element: a compare-and-swap loop on its bits
//!   (`atomicCAS`; a NaN equals itself): read the old value, combine,
//!   swap if unchanged, else retry with the value seen. 1- and 2-byte
//!   elements (`i8`, `u8`, `bool`, `i16`, `u16`, `f16`) are swapped within
//!   the aligned 32-bit word that holds them (device buffers are aligned
//!   and their sizes rounded up to a multiple of 4 bytes by the memory
//!   manager, so that word lies inside the buffer).
//! - A tuple element has no single word: each destination has a lock (a
//!   temporary of `i32` zeros after the output buffers, one per element of
//!   the result), taken with `atomicCAS` and released with `atomicExch`;
//!   the old value is read and the new one written through volatile
//!   pointers, with fences, inside the lock. The loop is written as
//!   "try; if taken { work; release; done }", which makes progress under
//!   the independent thread scheduling of sm_70 and later (threads of one
//!   warp contending for one lock).
//!
//! Launch: any number of blocks, no parameters; the kernel's own extents
//! are the source's shape, then the result's.
//!
//! Note [Native atomics for permute]
//! `atomicAdd` on integers wraps, as the combiner `a + b` does, and
//! `atomicMin`/`atomicMax` compute the combiner's `min`/`max` exactly, so
//! they give what a compare-and-swap loop gives, in one instruction. `f32`
//! addition is not among them: the PTX ISA's `atom.add.f32` flushes
//! subnormal inputs and results to zero, which `docs/semantics.md` (IEEE
//! arithmetic) does not allow; it takes the compare-and-swap loop. Float
//! `min`/`max` take it too (NaN rules).

use super::device::Device;
use super::exec::{DeviceArray, Launch};
use super::kernel::{grid_stride, KernelGen};
use crate::c::host::shape_of;
use crate::c::kernel::KernelCore;
use crate::c::kernel::ShapeOf;
use crate::c::kernel::{atomic, declare, leaf_path, open_destination, unravel};
use crate::c::product;
use crate::c::{c_type, helper_suffix, CVal, ExpGen};
use crate::host::{Env, HostArray};
use accelerate_base::array::{EltTy, ScalarTy};
use accelerate_base::error::Result;
use accelerate_ir::{ExpKind, Fun, PrimFun};
use accelerate_plan as plan;

/// The native atomic function for `combine` on elements of type `t`, and
/// the C type its pointer is cast to (Note [Native atomics for permute]).
fn native(combine: &Fun, t: ScalarTy) -> Option<(&'static str, &'static str)> {
    let ExpKind::Prim(op, args) = &combine.body.kind else { return None };
    if args.len() != 2 {
        return None;
    }
    match (leaf_path(&args[0]), leaf_path(&args[1])) {
        (Some((u, p)), Some((v, q))) if u != v && p.is_empty() && q.is_empty() => {}
        _ => return None,
    }
    use ScalarTy::*;
    let word = match t {
        I32 | U32 => "unsigned int",
        I64 | U64 => "unsigned long long",
        F64 => "double",
        _ => return None,
    };
    match (op, t) {
        (PrimFun::Add, _) => Some(("atomicAdd", word)),
        (PrimFun::Min | PrimFun::Max, F64) => None,
        (PrimFun::Min | PrimFun::Max, _) => {
            let signed_word = match t {
                I32 => "int",
                I64 => "long long",
                _ => word,
            };
            Some((if *op == PrimFun::Min { "atomicMin" } else { "atomicMax" }, signed_word))
        }
        _ => None,
    }
}

/// The kernel functions of a permute kernel (its name and these suffixes).
pub(crate) const FUNCTIONS: &[&str] = &[""];

/// Launch: the result starts as a device copy of the defaults; a thread
/// per source element, combining with one atomic operation, or (not
/// `atomic`) under a lock per destination (a temporary of `i32` zeros).
pub(super) fn launch<D: Device>(
    launch: &Launch<'_, '_, D>,
    env: &Env<DeviceArray<D>>,
    defaults: usize,
    source: &ShapeOf,
    atomic: bool,
) -> Result<DeviceArray<D>> {
    let (k, defaults, atomic) = (launch.k, &defaults, &atomic);
    let def = env.array(*defaults)?.clone();
    let shape = shape_of(env, source)?;
    let size: usize = shape.iter().product();
    let out = launch.on.alloc(&k.elt, def.shape(), k.loc)?;
    launch.on.copy(&def, &out, k.loc)?;
    let mut ext = shape.clone();
    ext.extend_from_slice(def.shape());
    if size > 0 {
        if *atomic {
            launch.run("", launch.blocks(size), &out, &[], &ext, &[])?;
        } else {
            let results: usize = def.shape().iter().product();
            let locks = launch.on.zeroed(&EltTy::Scalar(ScalarTy::I32), &[results], k.loc)?;
            launch.run("", launch.blocks(size), &out, &[&locks], &ext, &[])?;
        }
    }
    Ok(out)
}

/// The kernel function of a permute over a source of rank `rank` into a
/// result of rank `res_rank` (the output buffers hold the defaults).
pub(crate) fn permute(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::Permute) {
    let (combine, index, src) = (&s.combine, &s.index, &s.src.source);
    let (rank, res_rank, elt, what, loc) = (s.src.ty.rank, spec.out.rank, &spec.out.elt, spec.op, spec.loc);
    k.open_function(out, "", what, loc);
    let (obufs, next) = KernelGen::status_buffers(out, "o", elt, k.first_own_buf());
    if !atomic(elt) {
        KernelGen::buffer(out, "locks", "int32_t", next);
    }
    let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
    let rsh = KernelCore::extents(out, "rs", res_rank, k.first_own_extent() + rank);
    let mut g = k.exp_gen(1);
    let size = g.bind(ScalarTy::I64, &product(&sh));
    g.open(&grid_stride("i", &size));
    let ix = unravel(&mut g, "i", &sh);
    let (j, new) = open_destination(&mut g, index, src, &ix, &rsh, loc);
    if atomic(elt) {
        let t = elt.leaves()[0];
        let o = &obufs[0];
        match native(combine, t) {
            Some((f, word)) => g.line(&format!("{f}(({word} *)&{o}[{j}], ({word}){});", new.leaves[0])),
            None => cas_loop(&mut g, combine, new, t, o, &j),
        }
    } else {
        locked(&mut g, combine, new, elt, &obufs, &j);
    }
    g.close("}");
    g.close("}");
    g.break_on_error();
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);
}

/// `o[j] = combine(new, o[j])` by compare-and-swap on the element's bits,
/// or on the 32-bit word holding a narrow element.
fn cas_loop(g: &mut ExpGen<'_>, combine: &Fun, new: CVal, t: ScalarTy, o: &str, j: &str) {
    let sfx = helper_suffix(t);
    let size = t.size_bytes();
    let new = declare(g, "new", &new);
    if size >= 4 {
        let w = if size == 4 { "uint32_t" } else { "uint64_t" };
        let cas = if size == 4 { "unsigned int" } else { "unsigned long long" };
        let p = g.fresh("p");
        g.line(&format!("{w} *{p} = ({w} *)&{o}[{j}];"));
        let seen = g.fresh("seen");
        g.line(&format!("{w} {seen} = *(volatile {w} *){p};"));
        g.open("for (;;) {");
        let old = g.bind(t, &format!("acc_from_bits_{sfx}({seen})"));
        let v = g.apply(combine, vec![new, CVal::scalar(t, old)]);
        let nw = g.fresh("nw");
        g.line(&format!("const {w} {nw} = acc_bits_{sfx}({});", v.leaves[0]));
        let got = g.fresh("got");
        g.line(&format!("const {w} {got} = ({w})atomicCAS(({cas} *){p}, ({cas}){seen}, ({cas}){nw});"));
        g.line(&format!("if ({got} == {seen}) break;"));
        g.line(&format!("{seen} = {got};"));
        g.close("}");
    } else {
        let (w, mask) = if size == 1 { ("uint8_t", "0xffu") } else { ("uint16_t", "0xffffu") };
        let (p, sh) = (g.fresh("p"), g.fresh("sh"));
        g.line(&format!("uint32_t *{p} = (uint32_t *)((acc_uptr)&{o}[{j}] & ~(acc_uptr)3);"));
        g.line(&format!("const unsigned {sh} = (unsigned)((acc_uptr)&{o}[{j}] & 3) * 8;"));
        let seen = g.fresh("seen");
        g.line(&format!("uint32_t {seen} = *(volatile uint32_t *){p};"));
        g.open("for (;;) {");
        let old = g.bind(t, &format!("acc_from_bits_{sfx}(({w})({seen} >> {sh}))"));
        let v = g.apply(combine, vec![new, CVal::scalar(t, old)]);
        let nw = g.fresh("nw");
        g.line(&format!(
            "const uint32_t {nw} = ({seen} & ~({mask} << {sh})) | ((uint32_t)acc_bits_{sfx}({}) << {sh});",
            v.leaves[0]
        ));
        let got = g.fresh("got");
        g.line(&format!("const uint32_t {got} = atomicCAS({p}, {seen}, {nw});"));
        g.line(&format!("if ({got} == {seen}) break;"));
        g.line(&format!("{seen} = {got};"));
        g.close("}");
    }
}

/// `o[j] = combine(new, o[j])` for a tuple element, under the lock of
/// position `j`.
fn locked(g: &mut ExpGen<'_>, combine: &Fun, new: CVal, elt: &EltTy, obufs: &[String], j: &str) {
    let new = declare(g, "new", &new);
    let done = g.fresh("done");
    g.line(&format!("int {done} = 0;"));
    g.open(&format!("while (!{done}) {{"));
    g.open(&format!("if (atomicCAS(&locks[{j}], 0, 1) == 0) {{"));
    g.line("__threadfence();");
    let old = CVal {
        ty: elt.clone(),
        leaves: elt
            .leaves()
            .into_iter()
            .zip(obufs)
            .map(|(t, o)| format!("*(volatile {} *)&{o}[{j}]", c_type(t)))
            .collect(),
    };
    let old = declare(g, "old", &old);
    let v = g.apply(combine, vec![new, old]);
    for ((o, x), t) in obufs.iter().zip(&v.leaves).zip(elt.leaves()) {
        g.line(&format!("*(volatile {} *)&{o}[{j}] = {x};", c_type(t)));
    }
    g.line("__threadfence();");
    g.line(&format!("atomicExch(&locks[{j}], 0);"));
    g.line(&format!("{done} = 1;"));
    g.close("}");
    g.close("}");
}

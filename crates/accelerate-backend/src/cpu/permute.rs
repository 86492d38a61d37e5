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
//! Several sources may land on one position at once. Three strategies,
//! chosen by the executor (Note [Privatised permutes]):
//!
//! - Privatised (`_private`, `_merge`), for any element: the sources are
//!   cut into one piece per worker; each piece combines its elements into
//!   a private copy of the result; then every position of the result
//!   combines the defaults with the private values, piece by piece. No
//!   atomic operation. A private copy starts, leaf by leaf, from the
//!   combining function's identity or from the defaults where the
//!   operator is idempotent (`c::kernel::private_start`); where neither
//!   exists, the piece marks the positions it touched (the first element
//!   it sends to a position is stored, later ones combined with it), and
//!   the merge reads only those.
//! - Atomic (`_atomic`, in parallel), when the element is one primitive
//!   value (1, 2, 4 or 8 bytes): a compare-and-swap loop
//!   (`__atomic_compare_exchange`, by bits, so NaNs compare equal to
//!   themselves): read the old value, combine, retry if another worker
//!   changed it in between.
//! - Sequential (the plain function, on one worker, no atomics) for one
//!   worker, for sources too few to split, and for a tuple element (no
//!   single atomic word) when privatising does not pay.
//!
//! The combiner's associativity and commutativity (`docs/semantics.md`)
//! make the order of the combinations irrelevant in all three.
//!
//! Note [Privatised permutes]
//! An atomic update costs a locked instruction per element. On the
//! two-core EPYC of docs/benchmarks.md, a histogram of 2^24 `i64`s (a
//! permute with `+`) into 1024 bins took 120 ms by compare-and-swap on two
//! workers (81 ms on one) against 6.9 ms privatised on two and 6.5 ms for
//! a sequential Rust loop; into 2^20 bins, 245 ms, 79 ms and 23 ms (the
//! merge and the private copies' marks cost more there). So elements are
//! privatised when there are several workers and the merge reads no more
//! positions than there are sources, `(workers - 1) × result ≤ sources`;
//! otherwise one-leaf elements are updated atomically in parallel (a few
//! sources scattered into a large result) and tuples on one worker. An
//! earlier measurement (the same histogram of `(i64, f64)` pairs, 8.8 ms
//! on one worker against 15.8 ms privatised on two) had kept tuples on
//! one worker; measured again with the source's own CPU time apart from
//! the pool's (2^24 `f64`s into 1024 bins of `(count, sum)`, this
//! session's scratch program), the privatised pairs took 25 ms on two
//! workers against 33 ms on one, as the one-leaf case does, so tuples are
//! privatised too. On one worker nothing is atomic: the compare-and-swap
//! loop alone made the one-worker `i64` histogram 53 ms of CPU against
//! 28 ms plain.
//!
//! The marks cost a second random access per source, and a branch on it
//! that a scattered permute cannot predict: PageRank's `permute (+)` of
//! 2^24 links into 2^20 vertices (`accelerate-bench pagerank --size
//! large`, ten iterations) took 1141 ms with them, more than the
//! sequential loop's 603 ms, and 599 ms with copies that start from the
//! identity, `-0.0` (2026-11-28, docs/benchmarks.md).

// Note [Overwriting permutes]
// A combining function that ignores the old value (`|new, _| new`:
// `compact` and `filter` send each kept element to a target of its own)
// makes every update a store. Such a permute runs over chunks on every
// worker with no private copy and no compare-and-swap: privatising it
// would copy the whole result once per worker, and a filter keeps about
// as many elements as it reads. Each leaf is written with a relaxed
// atomic store (a plain store on x86-64 and AArch64), so that two
// sources sent to one target are no data race in C; which of them is
// kept is then unspecified, leaf by leaf, as the semantics allow for a
// combining function that is not commutative (`docs/semantics.md`).

use super::exec::{alloc, dims_i64, Launch};
use super::kernel::KernelGen;
use crate::c::cost::computes;
use crate::c::host::shape_of;
use crate::c::kernel::KernelCore;
use crate::c::kernel::ShapeOf;
use crate::c::kernel::{
    assign, atomic, declare, destination, open_destination, overwrites, private_start, read_ix, store,
    unravel,
};
use crate::c::kernel::{Source, Start};
use crate::c::{c_type, linear_of, literal, product, Bound, CVal, ExpGen};
use crate::host::Env;
use accelerate_base::array::{ArrayData, Buffer};
use accelerate_base::array::{EltTy, ScalarTy, ScalarVal};
use accelerate_base::error::SrcLoc;
use accelerate_base::error::{Error, Result};
use accelerate_ir::{visit, ExpKind, Fun};
use accelerate_plan as plan;
use std::sync::Arc;

/// The C functions of a permute kernel (its name and these suffixes):
/// the plain one (one worker), the privatised pair (Note [Privatised
/// permutes]), and the one that combines with atomics when `atomic`; an
/// overwriting permute has the plain one only (Note [Overwriting
/// permutes]).
pub(crate) fn functions(atomic: bool, overwrite: bool) -> &'static [&'static str] {
    if overwrite {
        &[""]
    } else if atomic {
        &["", "_private", "_merge", "_atomic"]
    } else {
        &["", "_private", "_merge"]
    }
}

/// Launch: the result starts as a copy of the defaults; privatised
/// (`_private` over one piece of `P[1]` sources per worker, `P[0]` workers,
/// copies `P[2]` apart of the `P[3]` results, blocks of `P[4]` sources,
/// then `_merge` over the results) when that reads no more
/// positions than there are sources; else `_atomic` over chunks for a
/// one-leaf element on several workers, or the plain function on one.
/// Elements at least between two private copies of a permute's result,
/// one cache line for elements of a byte and more for wider ones.
const COPY_GAP: usize = 64;

/// An overwriting permute runs its plain function over chunks.
pub(super) fn launch(
    launch: &Launch<'_>,
    env: &Env<Arc<ArrayData>>,
    defaults: usize,
    source: &ShapeOf,
    (atomic, overwrite, unmarked): (bool, bool, bool),
) -> Result<ArrayData> {
    let (k, defaults, atomic) = (launch.k, &defaults, &atomic);
    let def = env.array(*defaults)?;
    let shape = shape_of(env, source)?;
    let size: usize = shape.iter().product();
    // the defaults' copy, in recycled storage where there is some (Note
    // [Recycled buffers]): a new buffer's first write to each page faults
    let mut out = alloc(&k.elt, def.shape(), k.loc)?;
    for (o, d) in out.iter_mut().zip(def.buffers()) {
        o.extend_range(d, 0..d.len())
            .ok_or_else(|| Error::Internal("permute defaults of the wrong type".into()))?;
    }
    let mut ext = dims_i64(&shape);
    ext.extend(def.shape().iter().map(|&d| d as i64));
    let results: usize = def.shape().iter().product();
    // Note [Privatised permutes]
    let grain = launch.grain();
    let split = size >= 2 * grain && launch.workers > 1;
    if overwrite {
        launch.run("", &mut out, &mut [], &ext, &[], &launch.uniform(size, grain))?;
    } else if split && (launch.workers - 1).saturating_mul(results) <= size {
        let piece = size.div_ceil(launch.workers);
        // the private copies, which `_private` fills where the combining
        // function allows (`private_start`), each with a spare place at
        // its end (Note [Destinations by blocks]); else they are read
        // only where touched, and marks say where
        // (apart by at least `COPY_GAP` elements, so that no two workers'
        // copies share a cache line: k-means' 16 sums, copies 17
        // elements apart, took 2 workers 1.5x one worker's time)
        let used = if unmarked { results + 1 } else { results };
        let stride = (used + COPY_GAP).next_multiple_of(COPY_GAP);
        let copies = launch.workers * stride;
        let mut tmp = alloc(&k.elt, &[copies], k.loc)?;
        if !unmarked {
            tmp.push(Buffer::U8(std::iter::repeat_n(0u8, copies).collect()));
        }
        let params =
            [launch.workers as i64, piece as i64, stride as i64, results as i64, BLOCK.len(results) as i64];
        launch.run("_private", &mut out, &mut tmp, &ext, &params, &launch.uniform(launch.workers, 1))?;
        launch.run("_merge", &mut out, &mut tmp, &ext, &params, &launch.uniform(results, grain))?;
    } else if split && *atomic {
        launch.run("_atomic", &mut out, &mut [], &ext, &[], &launch.uniform(size, grain))?;
    } else {
        launch.run("", &mut out, &mut [], &ext, &[], &[0, size])?;
    }
    ArrayData::from_buffers(def.shape().to_vec(), k.elt.clone(), out)
        .ok_or_else(|| Error::Internal("permute result of the wrong size".into()))
}

/// The C functions of a permute kernel over a source of rank `rank` into
/// defaults variable `defaults` (whose copy is the output buffer): the
/// plain one, the privatised pair, and `_atomic` for a one-leaf element.
pub(crate) fn permute(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::Permute) {
    plain(k, out, spec, s, false);
    if overwrites(s) {
        return;
    }
    let (rank, res_rank, elt, what, loc) = (s.src.ty.rank, spec.out.rank, &spec.out.elt, spec.op, spec.loc);
    let start = private_start(&s.combine, elt);
    private(
        k,
        out,
        (&s.combine, start.as_deref()),
        &s.index,
        &s.src.source,
        (rank, res_rank),
        elt,
        what,
        loc,
    );
    if atomic(elt) {
        plain(k, out, spec, s, true);
    }
}

/// The function that combines each source into the result in place:
/// `_atomic` with a compare-and-swap loop, else the plain one, which for
/// an overwriting permute stores each leaf with a relaxed atomic store
/// (Note [Overwriting permutes]), and otherwise goes by blocks (Note
/// [Destinations by blocks]).
fn plain(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::Permute, atomic: bool) {
    let (combine, index, src) = (&s.combine, &s.index, &s.src.source);
    let (rank, res_rank, elt, what, loc) = (s.src.ty.rank, spec.out.rank, &spec.out.elt, spec.op, spec.loc);
    k.open_function(out, if atomic { "_atomic" } else { "" }, what, loc);
    let (obufs, _) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
    let rsh = KernelCore::extents(out, "rs", res_rank, k.first_own_extent() + rank);
    let mut g = k.exp_gen(1);
    if !atomic && !overwrites(s) {
        let u = Updates {
            combine,
            index,
            src,
            tbufs: &obufs,
            sh: &sh,
            rsh: &rsh,
            first: "start",
            last: "end",
            into: Into::Result,
            loc,
        };
        blocked_updates(&mut g, &u);
        let parts = g.into_parts();
        k.close_function(out, parts);
        return;
    }
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
        // overwriting (a combining one went by blocks above): the old
        // value is not read, the function ignores it
        let v = g.apply(combine, vec![new.clone(), new]);
        for ((o, x), t) in obufs.iter().zip(&v.leaves).zip(elt.leaves()) {
            let x = g.bind(t, x);
            g.line(&format!("__atomic_store(&{o}[{j}], &{x}, __ATOMIC_RELAXED);"));
        }
    }
    g.close("}");
    g.close("}");
    g.break_on_error();
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);
}

/// Sources a block of a privatised permute, whose destinations are
/// computed before their updates (Note [Destinations by blocks]): `small`
/// into a result of at most `small_result` positions, else `large`.
const BLOCK: Blocks = Blocks { small: 256, small_result: 4096, large: 2048 };

struct Blocks {
    small: usize,
    small_result: usize,
    large: usize,
}

impl Blocks {
    /// The sources a block into a result of `results` positions.
    fn len(&self, results: usize) -> usize {
        if results <= self.small_result {
            self.small
        } else {
            self.large
        }
    }
}

// Note [Destinations by blocks]
// A histogram's index function (a value's bin, or nothing for a value out
// of range) and its update (a read, a combination and a write at that
// bin) make one loop that does not vectorise: the updates may meet at a
// bin. So each private piece runs over blocks of `BLOCK` sources in two
// loops: the first computes every source's destination into a small
// array (a loop of arithmetic, which vectorises), the second updates the
// copy at them. A dropped source goes to the copy's spare place, past
// the result's positions, where nothing reads it, so that no branch
// depends on the data: unless the update can raise an error (a checked
// read of the source, say), for a dropped source's update must not be
// evaluated (docs/semantics.md, "Fusion and errors"); then the second
// loop skips it. An index outside the result is marked and raised by
// the second loop, in order. (Where what the generator knows of the
// destinations' values puts each in `[0, hi]` for a literal `hi`, the
// first loop is written twice, and the copy without the check runs when
// every `hi` is below its extent, Note [Value ranges].) On the two-core
// EPYC of docs/benchmarks.md, a scratch C program of the histogram
// benchmark's kernel (2^24 values into 256 bins of a count, a minimum
// and a maximum, one value in 16 dropped, one thread) took 40 ms as one
// loop, 29 ms by blocks with the branch, and 22 ms by blocks into the
// spare place. A block is
// longer into a larger result: there the updates miss the cache, and
// short blocks cost overlap between them; the same scratch program's
// count of 2^24 random links into 2^20 bins took 14 ms as one loop, 27 ms
// by blocks of 256, 21 ms by 1024 and 16 ms by 2048 (into 256 bins,
// blocks of 2048 took 21.5 ms against 20.8 by 256). And an index function
// that computes nothing, only reading its destination and perhaps
// comparing it with the result's bounds (`c::cost::computes`), gains
// nothing from a first loop that copies it: it runs as one loop, where
// the C compiler also shares the index function's reads with the
// source's. PageRank's links, that count, took PageRank at `--size small`
// on one worker from 2.25 ms to 2.06 and 2.09 as one loop (sequential
// Rust: 2.02 and 1.98). k-means' sums by cluster (a key read, compared
// with the number of clusters; the source `if the key is in range then
// the point else zeros`, which the second loop evaluated again) took
// 5.1 ns a point by blocks and 1.7 to 2.4 as one loop, in a C model of
// the generated `_private` (2^20 points into 16 bins, one thread, Intel
// Xeon of docs/benchmarks.md); the benchmark, 118 to 127 ms against 126
// to 148 (the eleventh session on issue 21). (Until then the test was a
// cost below 4 units, which k-means' 8 passed, and a histogram's 9 too.)

// Note [Small results by comparison]
// k-means' sums by cluster (a permute with `+` of `(x, y, 1)` into 16
// bins, from the one-hot fold, `opt::one_hot`) combined one source at a
// time into a private copy: a read, a combination and a write at a bin
// a source's key picks, some 30 instructions a point with the checks,
// which no vector loop can do. Into a result of a few positions the
// updates can be turned around: each lane of a vector holds its own
// accumulator of every position, and a source is added to all of them,
// masked by whether its destination is that position. For a combining
// function with an identity on every leaf (`private_start`: `+`, `*`,
// integer `min`/`max`, the bit operators), `combine(m ? x : e, acc)` is
// `acc` where the mask is false, exactly, so that each source is still
// combined once, into its own destination. That is `k` operations a
// source instead of one, but vector ones with no memory dependence: the
// accumulators of `COMPARE_REGISTERS / leaves` positions stay in the
// vector registers for a pass over a block of sources, whose
// destinations and values a first loop over the block computes (a
// vector loop too). The lanes are combined into the private copy after
// the piece; the order of the combinations changes, as the combining
// function allows (`docs/semantics.md`). A fast form only (Note
// [Optimistic checks]): a destination outside the result, or any failed
// check, fails it, and the checked form, which combines one source at a
// time, raises the error in order. A result of more than two passes'
// positions (`Compared::limit`), where the comparisons would cost more
// than they save, goes to the checked form at once. (A permute whose
// checked form raises nothing has no fast form, and so no comparisons:
// left for when a program needs it.) Sized for AVX-512's 32 registers
// (`wide_vector_registers`); other hosts keep the updates one at a time.
// A C model of k-means' sums (2^20 points into 16 bins, one thread, the
// 2-core EPYC guest of docs/benchmarks.md, best of 50): the checked
// `_private`, one source at a time, 0.96 to 1.01 ns a point; a plain C
// loop of the updates without checks 0.70 to 0.76; this fast form 0.66
// to 0.70 (a hand-written loop that compares keys read straight from
// the arrays, with no checks and no block of destinations, 0.42 to
// 0.49). Three things GCC needs: keys compared in 32 bits (with the
// destinations' 64-bit ones it compared twice as many vectors and spilled:
// 6.2 ns a point); each value read before the choice `m ? x : e` (else
// it masks the loads and keeps the accumulators in memory: 2.5 ns); and
// the copies of the accumulators between passes not turned into `memcpy`
// calls (`COMPARE_ATTRIBUTES`; with the calls, the accumulators stay in
// memory: 1.4 ns). Keeping every position's accumulators in registers
// for a whole piece instead, and computing the destinations again in
// each pass, spilled as well (1.3 to 1.5 ns). The benchmark (`kmeans
// --size large`, 26 iterations) went from 25.5 ms to 20.5 to 20.7,
// against rayon's 19.1 to 19.5.

/// Lanes of a vector of accumulators (Note [Small results by
/// comparison]): 16 of 32-bit elements fill an AVX-512 register.
const COMPARE_LANES: usize = 16;
/// The vector registers the accumulators of one pass may fill.
const COMPARE_REGISTERS: usize = 24;
/// Sources a block of the comparisons.
const COMPARE_BLOCK: usize = 256;
/// The fast form's GCC attributes: its copies of the accumulators
/// between passes are loops GCC would otherwise turn into `memcpy` calls,
/// after which no accumulator stays in a register.
const COMPARE_ATTRIBUTES: &str = "__attribute__((optimize(\"no-tree-loop-distribute-patterns\"))) ";

/// How a privatised permute combines into a small result by comparison
/// (Note [Small results by comparison]).
struct Compared {
    /// The positions a pass holds in registers.
    group: usize,
    /// Each leaf's identity.
    identity: Vec<ScalarVal>,
}

impl Compared {
    /// The most positions of a result taken by comparison: two passes'.
    fn limit(&self) -> usize {
        2 * self.group
    }
}

/// The comparisons for a permute whose private copies start from `start`
/// into elements of `elt`, where the host's registers and every leaf's
/// type and identity allow them.
fn compared(start: Option<&[Start]>, elt: &EltTy) -> Option<Compared> {
    use ScalarTy::*;
    if !super::wide_vector_registers() {
        return None;
    }
    let mut identity = Vec::new();
    let mut registers = 0;
    for (s, t) in start?.iter().zip(elt.leaves()) {
        let Start::Identity(v) = s else { return None };
        if !matches!(t, F32 | F64 | I32 | I64 | U32 | U64) {
            return None;
        }
        registers += (COMPARE_LANES * t.size_bytes()).div_ceil(64);
        identity.push(*v);
    }
    let group = (COMPARE_REGISTERS / registers.max(1)).clamp(1, 8);
    Some(Compared { group, identity })
}

/// The updates of a privatised permute's sources `first .. last` by
/// comparison (Note [Small results by comparison]), in a fast form: the
/// lanes' accumulators of every position, a block of destinations and
/// values at a time, then combined into the private copy.
fn compared_updates(g: &mut ExpGen<'_>, u: &Updates<'_>, cmp: &Compared, elt: &EltTy) {
    let Updates { combine, src, tbufs, sh, rsh, first, last, loc, .. } = *u;
    let (lanes, block, group) = (COMPARE_LANES, COMPARE_BLOCK, cmp.group);
    let leaves = elt.leaves();
    let ids: Vec<String> = cmp.identity.iter().map(|v| literal(*v)).collect();
    let keys = cmp.limit() * lanes;
    let fresh =
        |g: &mut ExpGen<'_>, base: &str| -> Vec<String> { leaves.iter().map(|_| g.fresh(base)).collect() };
    // every position's lanes, from the identity
    let acc = fresh(g, "lacc");
    for ((a, t), id) in acc.iter().zip(&leaves).zip(&ids) {
        g.line(&format!("{} {a}[{keys}];", c_type(*t)));
        g.line(&format!("for (int q = 0; q < {keys}; q++) {a}[q] = {id};"));
    }
    g.line("const int64_t copy = c * P[2];");
    let guarded = open_guard(g, u.index, sh.len());
    let index = guarded.as_ref().unwrap_or(u.index);
    g.open(&format!("for (int64_t b = {first}; b < {last}; b += {block}) {{"));
    g.line(&format!(
        "const int64_t w = b + {block} < {last} ? {block} : {last} - b, wl = (w + {}) / {lanes} * {lanes};",
        lanes - 1
    ));
    // the block's destinations (-1 for a dropped source, -2 outside the
    // result: the fast form fails) and values
    g.line(&format!("int32_t cdst[{block}];"));
    let vals = fresh(g, "cval");
    for (v, t) in vals.iter().zip(&leaves) {
        g.line(&format!("{} {v}[{block}];", c_type(*t)));
    }
    let saved = g.open_lane_loop("w", block);
    let i = g.bind(ScalarTy::I64, "b + q");
    let ix = unravel(g, &i, sh);
    let (keep, to) = destination(g, index, src, &ix);
    let inside = g.in_bounds(&to, rsh);
    let d =
        g.bind(ScalarTy::I32, &format!("{keep} ? ({inside} ? (int32_t)({}) : -2) : -1", linear_of(&to, rsh)));
    let failed = g.failed();
    g.line(&format!("{failed} |= {d} == -2;"));
    g.line(&format!("cdst[q] = {d};"));
    let v = read_ix(g, src, &ix, loc);
    for (c, x) in vals.iter().zip(&v.leaves) {
        g.line(&format!("{c}[q] = {x};"));
    }
    g.close_lane_loop(saved);
    // the block's last vector, past its sources: no destination
    g.open("for (int64_t q = w; q < wl; q++) {");
    g.line("cdst[q] = -1;");
    for (c, id) in vals.iter().zip(&ids) {
        g.line(&format!("{c}[q] = {id};"));
    }
    g.close("}");
    // passes of `group` positions, their lanes in registers
    g.open(&format!("for (int64_t d0 = 0; d0 < P[3]; d0 += {group}) {{"));
    let regs = fresh(g, "kacc");
    for ((r, a), t) in regs.iter().zip(&acc).zip(&leaves) {
        g.line(&format!("{} {r}[{}];", c_type(*t), group * lanes));
        g.line(&format!("for (int q = 0; q < {}; q++) {r}[q] = {a}[d0 * {lanes} + q];", group * lanes));
    }
    g.open(&format!("for (int64_t i0 = 0; i0 < wl; i0 += {lanes}) {{"));
    g.open(&format!("for (int p = 0; p < {group}; p++) {{"));
    let saved = g.open_lane_loop(&lanes.to_string(), lanes);
    g.line("const acc_bool m = cdst[i0 + q] == (int32_t)(d0 + p);");
    // (each value read before the choice: `m ? cval[i] : e` made GCC mask
    // the loads, and keep the accumulators in memory)
    let read: Vec<String> =
        vals.iter().zip(&leaves).map(|(c, t)| g.bind(*t, &format!("{c}[i0 + q]"))).collect();
    let new = CVal {
        ty: elt.clone(),
        leaves: read.iter().zip(&ids).map(|(x, id)| format!("(m ? {x} : {id})")).collect(),
    };
    let slot = format!("p * {lanes} + q");
    let old = CVal { ty: elt.clone(), leaves: regs.iter().map(|r| format!("{r}[{slot}]")).collect() };
    let v = g.apply(combine, vec![new, old]);
    store(g, &regs, &slot, &v);
    g.close_lane_loop(saved);
    g.close("}");
    g.close("}");
    for (r, a) in regs.iter().zip(&acc) {
        g.line(&format!("for (int q = 0; q < {}; q++) {a}[d0 * {lanes} + q] = {r}[q];", group * lanes));
    }
    g.close("}");
    g.close("}");
    if guarded.is_some() {
        g.close("}");
    }
    // the lanes into the copy
    g.open("for (int64_t d = 0; d < P[3]; d++) {");
    let mine = CVal { ty: elt.clone(), leaves: tbufs.iter().map(|t| format!("{t}[copy + d]")).collect() };
    let sum = declare(g, "sum", &mine);
    g.open(&format!("for (int q = 0; q < {lanes}; q++) {{"));
    let lane =
        CVal { ty: elt.clone(), leaves: acc.iter().map(|a| format!("{a}[d * {lanes} + q]")).collect() };
    let v = g.apply(combine, vec![lane, sum.clone()]);
    assign(g, &sum, &v);
    g.close("}");
    store(g, tbufs, "copy + d", &sum);
    g.close("}");
}

/// Where a loop by blocks (`blocked_updates`) combines its sources.
enum Into {
    /// A private copy at `c * P[2]`, with a spare place at `P[3]`, by
    /// blocks of `P[4]`.
    Copy,
    /// The result itself (the function that runs on one worker), which
    /// has no spare place.
    Result,
}

/// The updates of a permute's sources `first .. last` (C names), of
/// extents `sh`, into `tbufs` (of extents `rsh`) as `into` says.
struct Updates<'a> {
    combine: &'a Fun,
    index: &'a Fun,
    src: &'a Source,
    tbufs: &'a [String],
    sh: &'a [String],
    rsh: &'a [String],
    first: &'a str,
    last: &'a str,
    into: Into,
    loc: SrcLoc,
}

/// The loop over the sources by blocks (Note [Destinations by blocks]),
/// or one at a time for an index function that only reads.
fn blocked_updates(g: &mut ExpGen<'_>, u: &Updates<'_>) {
    if !computes(u.index) {
        one_loop(g, u);
        return;
    }
    let Updates { combine, src, tbufs, sh, rsh, first, last, loc, .. } = *u;
    let into = &u.into;
    // (read before the loops: a read of `P` inside kept GCC from
    // vectorising the first)
    match into {
        Into::Copy => g.line("const int64_t copy = c * P[2], spare = P[3], block = P[4];"),
        Into::Result => g.line(&format!(
            "const int64_t copy = 0, block = {} <= {} ? {} : {};",
            product(rsh),
            BLOCK.small_result,
            BLOCK.small,
            BLOCK.large
        )),
    }
    let guarded = open_guard(g, u.index, sh.len());
    let index = guarded.as_ref().unwrap_or(u.index);
    g.open(&format!("for (int64_t b = {first}; b < {last}; b += block) {{"));
    g.line(&format!("const int64_t e = b + block < {last} ? b + block : {last};"));
    g.line(&format!("int64_t dst[{}];", BLOCK.large.max(BLOCK.small)));
    // destinations: the position, -2 outside the result, or the spare
    // place (-1 when the update is skipped) for a dropped source (`@`
    // until the updates say which); versioned where their ranges allow
    // (Note [Value ranges])
    let hole = g.hole();
    let (checked, proven) = g.aside(|g| destinations(g, index, u, true));
    let first = match proven {
        Some(test) => {
            let open = g.indented(&format!("if ({test}) {{"));
            g.indent_in();
            let (unchecked, _) = g.aside(|g| destinations(g, index, u, false));
            g.indent_out();
            let checked: String = checked.lines().map(|l| format!("    {l}\n")).collect();
            format!("{open}{unchecked}{}{checked}{}", g.indented("} else {"), g.indented("}"))
        }
        None => checked,
    };
    g.break_on_error();
    // updates, in order
    g.open("for (int64_t i = b; i < e; i++) {");
    g.line("const int64_t j = dst[i - b];");
    g.open("if (j < 0) {");
    g.open("if (j == -2) {");
    let ix = unravel(g, "i", sh);
    let (_, to) = destination(g, index, src, &ix);
    let mut vals = vec![to.len().to_string()];
    vals.extend(to.iter().cloned());
    vals.extend(rsh.iter().cloned());
    g.raise_at("ACC_ERR_INDEX_OUT_OF_BOUNDS", loc, &vals);
    g.line("break;");
    g.close("}");
    g.line("continue;");
    g.close("}");
    let ix = unravel(g, "i", sh);
    let update = |g: &mut ExpGen<'_>| {
        let new = read_ix(g, src, &ix, loc);
        let at = g.bind(ScalarTy::I64, "copy + j");
        let mine = CVal { ty: new.ty.clone(), leaves: tbufs.iter().map(|t| format!("{t}[{at}]")).collect() };
        let old = declare(g, "old", &mine);
        let v = g.apply(combine, vec![new, old]);
        store(g, tbufs, &at, &v);
    };
    let to_spare = match into {
        Into::Copy => g.without_errors(update).is_some(),
        Into::Result => false,
    };
    if !to_spare {
        update(g);
    }
    g.close("}");
    g.break_on_error();
    g.close("}");
    if guarded.is_some() {
        g.close("}");
    }
    g.fill(hole, first.replace('@', if to_spare { "spare" } else { "-1" }));
}

/// The loop that computes a block's destinations into `dst`, where a
/// dropped source's is `@`: each checked against the result's extents,
/// or not (`checked`, for the version of the loop where their ranges
/// prove them inside); and that test, where the destinations have
/// ranges that can prove them inside (Note [Value ranges]).
fn destinations(g: &mut ExpGen<'_>, index: &Fun, u: &Updates<'_>, checked: bool) -> Option<String> {
    g.open("for (int64_t i = b; i < e; i++) {");
    let ix = unravel(g, "i", u.sh);
    let (keep, to) = destination(g, index, u.src, &ix);
    let inside = if checked { g.in_bounds(&to, u.rsh) } else { "1".to_string() };
    g.line(&format!("dst[i - b] = {keep} ? ({inside} ? {} : -2) : @;", linear_of(&to, u.rsh)));
    g.close("}");
    // each destination in [0, hi], for a literal hi below the extent
    let mut floats = false;
    let mut tests = Vec::new();
    for (x, d) in to.iter().zip(u.rsh) {
        let k = g.known(x)?;
        let (_, hi) = k.int_bounds().filter(|&(lo, _)| lo >= 0)?;
        floats |= k.floats;
        tests.push(format!("{hi}LL < {d}"));
    }
    if floats {
        tests.insert(0, "ACC_FLOAT_RANGES".to_string());
    }
    (!tests.is_empty()).then(|| tests.join(" && "))
}

/// The sources `first .. last` combined one at a time into `tbufs` (at
/// `c * P[2]` for a private copy): for an index function that only reads
/// its destination (Note [Destinations by blocks]).
fn one_loop(g: &mut ExpGen<'_>, u: &Updates<'_>) {
    let Updates { combine, src, tbufs, sh, rsh, first, last, loc, .. } = *u;
    g.line(match u.into {
        Into::Copy => "const int64_t copy = c * P[2];",
        Into::Result => "const int64_t copy = 0;",
    });
    let guarded = open_guard(g, u.index, sh.len());
    let index = guarded.as_ref().unwrap_or(u.index);
    g.open(&format!("for (int64_t i = {first}; i < {last}; i++) {{"));
    let ix = unravel(g, "i", sh);
    let (j, new) = open_destination(g, index, src, &ix, rsh, loc);
    let at = g.bind(ScalarTy::I64, &format!("copy + {j}"));
    let mine = CVal { ty: new.ty.clone(), leaves: tbufs.iter().map(|t| format!("{t}[{at}]")).collect() };
    let old = declare(g, "old", &mine);
    let v = g.apply(combine, vec![new, old]);
    store(g, tbufs, &at, &v);
    g.close("}");
    g.close("}");
    g.break_on_error();
    g.close("}");
    if guarded.is_some() {
        g.close("}");
    }
}

// Note [Invariant guards]
// An index function of the form `\x -> if c then f else nothing`, whose
// condition does not read the source index and cannot raise an error
// (shapes, constants, rank-0 arrays: one-hot folds turned into permutes
// (`opt::one_hot`) are guarded by `shape(centroids) >= 1`, say), tests
// the same value at every source. The loop over the sources then runs
// under one test of it, with `f` as the index function: when it fails,
// every source is dropped, no source is read, and the result keeps its
// defaults, as with the test at each source. (A test that can raise an
// error stays inside: the loop's range may be empty.)
//
// GCC unswitches such a loop itself only when the loop is small
// (`max-unswitch-insns`, 50), and inside the test's branch it did not
// share the index function's reads and checks with the source
// function's. On the two-core EPYC of docs/benchmarks.md, a C model of
// k-means' private sums (2^19 points, one thread; the kernel declared
// `noipa`, so that GCC cannot specialise it on the driver's constants,
// which had made a first model twice as fast as the library) took 2.05
// ns a point with the test inside the loop and 1.46 with it outside;
// the benchmark's best run, 58 ms against 49 (docs/benchmarks.md).

/// The guard of `index` (Note [Invariant guards]), if it has one: its
/// test, evaluated here and opened as `if (test) {` for the caller to
/// close after its loop, and the index function under it.
fn open_guard(g: &mut ExpGen<'_>, index: &Fun, rank: usize) -> Option<Fun> {
    let ExpKind::Cond(test, then, otherwise) = &index.body.kind else {
        return None;
    };
    let nothing = matches!(&otherwise.kind, ExpKind::Tuple(xs)
        if matches!(xs.first().map(|x| &x.kind), Some(ExpKind::Const(ScalarVal::Bool(false)))));
    // the source index is not read: any atoms stand for it
    let x = CVal::index(vec!["0".to_string(); rank]);
    // (a test that may raise, by a read or a division, stays inside:
    // there are no sources to raise it for in an empty range)
    let raises = || g.may_raise(test, &[Bound { val: x.clone(), deferred: None }]);
    if index.params.len() != 1 || !nothing || visit::reads_var(test, 0) || raises() {
        return None;
    }
    let test = Fun { params: index.params.clone(), body: (**test).clone() };
    let t = g.apply(&test, vec![x]);
    g.open(&format!("if ({}) {{", t.leaves[0]));
    Some(Fun { params: index.params.clone(), body: (**then).clone() })
}

/// The buffer `u` of a privatised permute's marks, declared from buffer
/// `next`, where its copies have no start (`private_start`).
fn marks_buffer(out: &mut String, start: Option<&[Start]>, next: usize) -> Option<String> {
    start.is_none().then(|| KernelGen::out_buffers(out, "u", &EltTy::Scalar(ScalarTy::U8), next).0.remove(0))
}

/// The functions `_private` and `_merge` of a privatised permute (Note
/// [Privatised permutes]); `combine`'s identity, where it has one, is
/// what each private copy starts from, and no position is marked.
#[allow(clippy::too_many_arguments)]
fn private(
    k: &mut KernelGen,
    out: &mut String,
    (combine, start): (&Fun, Option<&[Start]>),
    index: &Fun,
    src: &Source,
    (rank, res_rank): (usize, usize),
    elt: &EltTy,
    what: &str,
    loc: SrcLoc,
) {
    // _private: pieces start..end of P[1] sources each, piece c combining
    // into its private copy t at c * P[2] (of the P[3] results and, where
    // the copies start filled, a spare place), or marking u; in a fast
    // form, by comparison (Note [Small results by comparison])
    let compare = compared(start, elt);
    let write = |k: &mut KernelGen, out: &mut String| {
        let fast = k.fast();
        k.open_function(out, "_private", what, loc);
        let (obufs, next) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
        let (tbufs, next) = KernelGen::out_buffers(out, "t", elt, next);
        let marks = marks_buffer(out, start, next);
        let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
        let rsh = KernelCore::extents(out, "rs", res_rank, k.first_own_extent() + rank);
        let mut g = k.exp_gen(1);
        let compare = compare.as_ref().filter(|_| fast);
        if let Some(cmp) = compare {
            // (the checked form combines into larger results)
            g.line(&format!("if (P[3] > {}) return 1;", cmp.limit()));
        }
        g.line(&format!("const int64_t size = {};", product(&sh)));
        g.open("for (int64_t c = start; c < end; c++) {");
        if let Some(start) = start {
            g.open("for (int64_t j = c * P[2]; j < c * P[2] + P[3]; j++) {");
            for ((t, o), v) in tbufs.iter().zip(&obufs).zip(start) {
                match v {
                    Start::Identity(v) => g.line(&format!("{t}[j] = {};", literal(*v))),
                    Start::Default => g.line(&format!("{t}[j] = {o}[j - c * P[2]];")),
                }
            }
            g.close("}");
            // the copy's spare place, where dropped sources may go
            for t in &tbufs {
                g.line(&format!("{t}[c * P[2] + P[3]] = 0;"));
            }
        }
        g.line("const int64_t first = c * P[1], last = first + P[1] < size ? first + P[1] : size;");
        match &marks {
            None => {
                let u = Updates {
                    combine,
                    index,
                    src,
                    tbufs: &tbufs,
                    sh: &sh,
                    rsh: &rsh,
                    first: "first",
                    last: "last",
                    into: Into::Copy,
                    loc,
                };
                match compare {
                    Some(cmp) => compared_updates(&mut g, &u, cmp, elt),
                    None => blocked_updates(&mut g, &u),
                }
            }
            Some(u) => {
                g.open("for (int64_t i = first; i < last; i++) {");
                let ix = unravel(&mut g, "i", &sh);
                let (j, new) = open_destination(&mut g, index, src, &ix, &rsh, loc);
                let at = g.bind(ScalarTy::I64, &format!("c * P[2] + {j}"));
                let mine =
                    CVal { ty: elt.clone(), leaves: tbufs.iter().map(|t| format!("{t}[{at}]")).collect() };
                g.open(&format!("if ({u}[{at}]) {{"));
                let old = declare(&mut g, "old", &mine);
                let v = g.apply(combine, vec![new.clone(), old]);
                store(&mut g, &tbufs, &at, &v);
                g.close("} else {");
                g.indent_in();
                store(&mut g, &tbufs, &at, &new);
                g.line(&format!("{u}[{at}] = 1;"));
                g.close("}");
                g.close("}");
                g.close("}");
                g.break_on_error();
                g.close("}");
            }
        }
        if compare.is_none() {
            g.break_on_error();
        }
        g.close("}");
        let parts = g.into_parts();
        k.close_function(out, parts);
    };
    if compare.is_some() {
        k.fast_attributes = COMPARE_ATTRIBUTES;
        k.with_fast_path(out, write);
        k.fast_attributes = "";
    } else {
        write(k, out);
    }

    // _merge: result positions start..end from the defaults' copy in o and
    // the P[0] private copies
    k.open_function(out, "_merge", what, loc);
    let (obufs, next) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let (tbufs, next) = KernelGen::out_buffers(out, "t", elt, next);
    let marks = marks_buffer(out, start, next);
    let mut g = k.exp_gen(1);
    g.open("for (int64_t j = start; j < end; j++) {");
    let acc = CVal { ty: elt.clone(), leaves: obufs.iter().map(|o| format!("{o}[j]")).collect() };
    let acc = declare(&mut g, "acc", &acc);
    g.open("for (int64_t c = 0; c < P[0]; c++) {");
    if let Some(u) = &marks {
        g.open(&format!("if ({u}[c * P[2] + j]) {{"));
    }
    let theirs =
        CVal { ty: elt.clone(), leaves: tbufs.iter().map(|t| format!("{t}[c * P[2] + j]")).collect() };
    let theirs = declare(&mut g, "p", &theirs);
    let v = g.apply(combine, vec![theirs, acc.clone()]);
    assign(&mut g, &acc, &v);
    if marks.is_some() {
        g.close("}");
    }
    g.close("}");
    store(&mut g, &obufs, "j", &acc);
    g.break_on_error();
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);
}

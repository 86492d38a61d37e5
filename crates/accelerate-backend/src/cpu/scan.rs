//! The scan skeleton: inclusive scans along the innermost dimension, from
//! the left or the right, with a seed (`scanl`, `scanr`: one more element
//! per row) or without (`scanl1`, `scanr1`).
//!
//! Algorithm, for a row of `n` elements and result rows of `m`:
//!
//! 1. Many rows (`_rows`): each worker scans whole rows sequentially.
//! 2. Few long rows, three phases (as Accelerate's native backend and the
//!    classic multicore scan): the row is cut into `P[0]` pieces of `P[1]`
//!    elements; `_part` reduces every piece into a temporary array
//!    (in parallel); `_carry` scans each row's piece totals sequentially
//!    into the value each piece starts from (the seed, then the totals of
//!    the pieces before it, in scan order); `_piece` scans every piece from
//!    its carry (in parallel), writing the result.
//!
//! A left scan of an integer row by `+`, `min`, `max` or a bit operator
//! scans a vector of elements at a time in both `_rows` and `_piece`
//! (Note [Vector scans]).
//!
//! For a left scan with seed `z`, result `k` is `z ⊕ x0 ⊕ .. ⊕ x_{k-1}`
//! (result 0 is `z`); a right scan mirrors it (result `m-1` is `z`). Each
//! piece's carry includes the seed exactly once.

use super::exec::{alloc, dims_i64, finish, Launch};
use super::fold::{piece_totals, reduce1};
use super::kernel::{KernelGen, Row};
use crate::c::host::{rows_of, shape_of};
use crate::c::kernel::KernelCore;
use crate::c::kernel::ShapeOf;
use crate::c::kernel::{assign, commutative, declare, in_scan_order, read_at, store, Source};
use crate::c::{c_type, CVal, ExpGen};
use crate::host::Env;
use accelerate_base::array::ScalarTy;
use accelerate_base::array::{ArrayData, Buffer, Column, EltTy};
use accelerate_base::error::Result;
use accelerate_base::error::SrcLoc;
use accelerate_ir::{Direction, ExpKind, Fun, PrimFun};
use accelerate_plan as plan;
use std::fmt::Write;
use std::sync::Arc;

/// The C functions of a scan kernel (its name and these suffixes).
pub(crate) const FUNCTIONS: &[&str] = &["_rows", "_part", "_carry", "_piece", "_chained"];

/// Launch: `_rows` over whole rows when there are many; else three phases
/// over `rows * m` pieces of `piece` elements (`P[0] = m`, `P[1] =
/// piece`): `_part` (each piece's total into a temporary), `_carry` (each
/// row's carries), `_piece` (each piece scanned from its carry).
pub(super) fn launch(
    launch: &Launch<'_>,
    env: &Env<Arc<ArrayData>>,
    seed: bool,
    source: &ShapeOf,
    op: &'static str,
) -> Result<ArrayData> {
    let (k, seed) = (launch.k, &seed);
    let shape = shape_of(env, source)?;
    let (outer, n, rows) = rows_of(k, &shape, *seed, op)?;
    let m_out = n + usize::from(*seed);
    let mut dims = outer.clone();
    dims.push(m_out);
    let mut out = alloc(&k.elt, &dims, k.loc)?;
    let ext = dims_i64(&shape);
    let grain = launch.grain();
    // three phases from two pieces of a grain: a row of 2^20 `i32`s (two
    // grains of a scan by `+`) took 0.30 ms on two workers against 0.37
    // on one (docs/benchmarks.md, the ninth session on issue 21)
    if rows >= 2 * launch.workers || n < 2 * grain {
        let grain = (grain / n.max(1)).max(1);
        launch.run("_rows", &mut out, &mut [], &ext, &[], &launch.uniform(rows, grain))?;
    } else if n.saturating_mul(k.elt.size_bytes().max(1)) >= CHAINED_ROW_BYTES {
        // Note [Chained scans]
        let piece = (CHAINED_PIECE_BYTES / k.elt.size_bytes().max(1)).max(MIN_CHAINED_PIECE);
        let m = n.div_ceil(piece);
        let pieces = rows * m;
        let mut tmp = alloc(&k.elt, &[pieces], k.loc)?;
        tmp.push(Buffer::I32(Column::from(vec![0i32; pieces])));
        tmp.push(Buffer::I64(Column::from(vec![0i64; 1])));
        let params = [m as i64, piece as i64, pieces as i64];
        launch.run("_chained", &mut out, &mut tmp, &ext, &params, &launch.uniform(launch.workers, 1))?;
    } else {
        let piece = n.div_ceil(4 * launch.workers).max(grain);
        let m = n.div_ceil(piece);
        let mut tmp = alloc(&k.elt, &[rows * m], k.loc)?;
        let params = [m as i64, piece as i64];
        launch.run("_part", &mut out, &mut tmp, &ext, &params, &launch.uniform(rows * m, 1))?;
        launch.run("_carry", &mut out, &mut tmp, &ext, &params, &[0, rows])?;
        launch.run("_piece", &mut out, &mut tmp, &ext, &params, &launch.uniform(rows * m, 1))?;
    }
    finish(out, &k.elt, dims, rows * m_out)
}

// Note [Chained scans]
// The three phases read a long row twice from memory (its pieces'
// totals, then the scan) and write it once. Where the row is larger than
// the caches, that is half as much traffic again as one pass, and a scan
// by `+` of 2^26 `i32`s on the two-core EPYC of docs/benchmarks.md took
// 23 to 24 ms on two workers against sequential Rust's 21 (one core
// streams at three quarters of both cores' bandwidth). So a row of at
// least `CHAINED_ROW_BYTES` is scanned in one pass, as CUB's
// single-pass scan does on a GPU: the pieces, of `CHAINED_PIECE_BYTES`
// each, small enough to stay in the second-level cache, are taken in scan
// order from a shared ticket by every worker; a worker reduces its piece,
// waits for the piece before it to publish its prefix (the combination of
// everything before it in scan order, seed included), publishes its own
// (that prefix combined with its total), and scans its piece from the
// prefix before it, reading it again from the cache. The wait is short:
// the piece before was taken first, and published as soon as its own
// total and its predecessor's prefix were known. Nothing waits on a piece
// that no worker holds, and a piece that raises an error still publishes
// (a prefix of no meaning, the launch fails), so no worker waits forever.
// A row that the last-level cache holds gains nothing from it: at 2^20
// `i32`s (4 MiB) the chained scan took 0.365 to 0.407 ms against the three
// phases' 0.331 to 0.349 (`accelerate-bench scan --size small`, the two
// forms' binaries alternating), so it starts at half of this machine's
// 32 MiB L3.

/// The bytes of a row's elements from which it is scanned in one pass
/// (Note [Chained scans]).
const CHAINED_ROW_BYTES: usize = 16 << 20;

/// Bytes of elements of a piece of a chained scan, and its fewest
/// elements.
const CHAINED_PIECE_BYTES: usize = 128 * 1024;
const MIN_CHAINED_PIECE: usize = 1024;

/// The C functions of a scan kernel.
pub(crate) fn scan(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::Scan) {
    let (f, seed, dir, src) = (&s.f, s.seed.as_ref(), s.dir, &s.src.source);
    let (rank, elt, what, loc) = (spec.out.rank, &spec.out.elt, spec.op, spec.loc);
    let left = dir == Direction::Left;
    let extra = usize::from(seed.is_some());
    // `op(acc, x)` in scan order: a right scan combines `f(x, acc)`
    let op = |g: &mut ExpGen<'_>, acc: &CVal, x: CVal| in_scan_order(g, f, dir, acc, x);
    let vector = if left { VectorScan::of(f, elt, &k.name) } else { None };
    if let Some(v) = &vector {
        out.push_str(&v.helper());
    }
    let vector = vector.as_ref();

    // _rows: whole rows start..end
    k.with_fast_path(out, |k, out| {
        k.open_function(out, "_rows", what, loc);
        let (obufs, _) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
        let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
        let n = sh[rank - 1].clone();
        let mut g = k.exp_gen(1);
        let z = seed.map(|s| g.exp(s, &mut Vec::new()));
        g.open("for (int64_t r = start; r < end; r++) {");
        g.line(&format!("const int64_t base = r * {n}, obase = r * ({n} + {extra});"));
        let row = ("base", "obase");
        scan_range(&mut g, &op, vector, z.as_ref(), src, &obufs, row, ("0", &n), left, loc);
        g.close("}");
        let parts = g.into_parts();
        k.close_function(out, parts);
    });

    // _part: piece totals
    piece_totals(k, out, f, src, rank, elt, None, None, what, loc);

    // _carry: rows start..end; the totals become carries in place (a piece
    // without a carry, the first in scan order of a scan without a seed,
    // keeps a value it does not read)
    k.open_function(out, "_carry", what, loc);
    let (_, next) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let (tbufs, _) = KernelGen::out_buffers(out, "t", elt, next);
    let mut g = k.exp_gen(1);
    let z = seed.map(|s| g.exp(s, &mut Vec::new()));
    g.open("for (int64_t r = start; r < end; r++) {");
    let at = |j: &str| CVal {
        ty: elt.clone(),
        leaves: tbufs.iter().map(|t| format!("{t}[r * P[0] + ({j})]")).collect(),
    };
    let first = if left { "0" } else { "P[0] - 1" };
    let acc = match &z {
        Some(z) => declare(&mut g, "acc", z),
        None => declare(&mut g, "acc", &at(first)),
    };
    let (init, cond, inc) = match (left, z.is_some()) {
        (true, true) => ("0", "j < P[0]", "j++"),
        (true, false) => ("1", "j < P[0]", "j++"),
        (false, true) => ("P[0] - 1", "j >= 0", "j--"),
        (false, false) => ("P[0] - 2", "j >= 0", "j--"),
    };
    g.open(&format!("for (int64_t j = {init}; {cond}; {inc}) {{"));
    let total = declare(&mut g, "tot", &at("j"));
    for (t, a) in tbufs.iter().zip(&acc.leaves) {
        g.line(&format!("{t}[r * P[0] + j] = {a};"));
    }
    let v = op(&mut g, &acc, total);
    assign(&mut g, &acc, &v);
    g.close("}");
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);

    // _piece: pieces start..end scanned from their carries
    k.with_fast_path(out, |k, out| {
        k.open_function(out, "_piece", what, loc);
        let (obufs, next) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
        let (tbufs, _) = KernelGen::out_buffers(out, "t", elt, next);
        let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
        let n = sh[rank - 1].clone();
        let mut g = k.exp_gen(1);
        let z = seed.map(|s| g.exp(s, &mut Vec::new()));
        g.open("for (int64_t c = start; c < end; c++) {");
        g.line("const int64_t r = c / P[0], j = c % P[0];");
        g.line(&format!("const int64_t base = r * {n}, obase = r * ({n} + {extra});"));
        g.line("const int64_t lo = j * P[1];");
        g.line(&format!("const int64_t hi = lo + P[1] < {n} ? lo + P[1] : {n};"));
        let carry = CVal { ty: elt.clone(), leaves: tbufs.iter().map(|t| format!("{t}[c]")).collect() };
        // the piece that starts the scan has no carry unless there is a seed
        let starts = if left { "j == 0" } else { "j == P[0] - 1" };
        g.open(&format!("if ({starts}) {{"));
        let (row, range) = (("base", "obase"), ("lo", "hi"));
        scan_range(&mut g, &op, vector, z.as_ref(), src, &obufs, row, range, left, loc);
        g.close("} else {");
        g.indent_in();
        piece_from(&mut g, &op, vector, &carry, src, &obufs, row, range, left, extra, loc);
        g.close("}");
        g.close("}");
        let parts = g.into_parts();
        k.close_function(out, parts);
    });

    // _chained: pieces taken in scan order by ticket, each from the
    // prefix the piece before it published (Note [Chained scans])
    k.open_function(out, "_chained", what, loc);
    let (obufs, next) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let (tbufs, next) = KernelGen::out_buffers(out, "t", elt, next);
    let (flags, next) = KernelGen::out_buffers(out, "f", &EltTy::Scalar(ScalarTy::I32), next);
    let (ticket, _) = KernelGen::out_buffers(out, "q", &EltTy::Scalar(ScalarTy::I64), next);
    let (flag, ticket) = (&flags[0], &ticket[0]);
    let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
    let n = sh[rank - 1].clone();
    let mut g = k.exp_gen(1);
    let z = seed.map(|s| g.exp(s, &mut Vec::new()));
    g.open("for (;;) {");
    g.line(&format!("const int64_t c = __atomic_fetch_add(&{ticket}[0], 1, __ATOMIC_RELAXED);"));
    g.line("if (c >= P[2]) break;");
    // s: the piece's place in its row's scan order, j: in the row
    g.line("const int64_t r = c / P[0], s = c % P[0];");
    g.line(&format!("const int64_t j = {};", if left { "s" } else { "P[0] - 1 - s" }));
    g.line(&format!("const int64_t base = r * {n}, obase = r * ({n} + {extra});"));
    g.line("const int64_t lo = j * P[1];");
    g.line(&format!("const int64_t hi = lo + P[1] < {n} ? lo + P[1] : {n};"));
    let row = Row::new(&mut g, src, &sh, "r", "base");
    let (rows_at, range) = (("base", "obase"), ("lo", "hi"));
    let publish = |g: &mut ExpGen<'_>, v: &CVal| {
        store(g, &tbufs, "c", v);
        g.line(&format!("__atomic_store_n(&{flag}[c], 1, __ATOMIC_RELEASE);"));
    };
    g.open("if (s == 0) {");
    // the first piece: its prefix, unless it is the row's only piece,
    // then its scan from the seed
    g.open("if (P[0] > 1) {");
    let total = reduce1(&mut g, f, src, &row, "lo", "hi", loc);
    let prefix = match &z {
        Some(z) => op(&mut g, z, total),
        None => total,
    };
    publish(&mut g, &prefix);
    g.close("}");
    scan_range(&mut g, &op, vector, z.as_ref(), src, &obufs, rows_at, range, left, loc);
    g.close("} else {");
    g.indent_in();
    let total = reduce1(&mut g, f, src, &row, "lo", "hi", loc);
    g.line(&format!("acc_wait_flag(&{flag}[c - 1]);"));
    let before = CVal { ty: elt.clone(), leaves: tbufs.iter().map(|t| format!("{t}[c - 1]")).collect() };
    let carry = declare(&mut g, "carry", &before);
    let prefix = op(&mut g, &carry, total);
    publish(&mut g, &prefix);
    piece_from(&mut g, &op, vector, &carry, src, &obufs, rows_at, range, left, extra, loc);
    g.close("}");
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);
}

/// `op(acc, x)` in scan order.
type Op<'o> = dyn Fn(&mut ExpGen<'_>, &CVal, CVal) -> CVal + 'o;

/// Scans source positions `lo .. hi` of a row (the part of the row that
/// begins the scan: from the left, `lo` is 0; from the right, `hi` is
/// `n`), writing results at output row offset `obase`. With a seed the
/// scan starts from it and writes it too (at position `lo`, or `hi` from
/// the right, where the output row is one longer).
#[allow(clippy::too_many_arguments)]
fn scan_range(
    g: &mut ExpGen<'_>,
    op: &Op<'_>,
    vector: Option<&VectorScan>,
    seed: Option<&CVal>,
    src: &Source,
    obufs: &[String],
    (base, obase): (&str, &str),
    (lo, hi): (&str, &str),
    left: bool,
    loc: SrcLoc,
) {
    match seed {
        Some(z) => {
            let acc = declare(g, "acc", z);
            store(g, obufs, &format!("{obase} + {}", if left { lo } else { hi }), &acc);
            let from = if left { lo.to_string() } else { format!("{hi} - 1") };
            let at = if left { format!("{obase} + k + 1") } else { format!("{obase} + k") };
            scan_loop(g, op, vector, src, (base, &acc), (obufs, &at), &from, (lo, hi), left, loc);
        }
        None => {
            g.open(&format!("if ({hi} > {lo}) {{"));
            let first = if left { lo.to_string() } else { format!("{hi} - 1") };
            let p = g.bind(ScalarTy::I64, &format!("{base} + {first}"));
            let x = read_at(g, src, &p, loc);
            let acc = declare(g, "acc", &x);
            store(g, obufs, &format!("{obase} + {first}"), &acc);
            let from = if left { format!("{lo} + 1") } else { format!("{hi} - 2") };
            let at = format!("{obase} + k");
            scan_loop(g, op, vector, src, (base, &acc), (obufs, &at), &from, (lo, hi), left, loc);
            g.close("}");
        }
    }
}

/// Scans a piece `lo .. hi` that does not begin the scan, from its carry
/// (the combination of everything before it in scan order, seed
/// included). With a seed, a left scan's result `k + 1` is the value after
/// element `k`; without one, result `k`.
#[allow(clippy::too_many_arguments)]
fn piece_from(
    g: &mut ExpGen<'_>,
    op: &Op<'_>,
    vector: Option<&VectorScan>,
    carry: &CVal,
    src: &Source,
    obufs: &[String],
    (base, obase): (&str, &str),
    (lo, hi): (&str, &str),
    left: bool,
    extra: usize,
    loc: SrcLoc,
) {
    let acc = declare(g, "acc", carry);
    let from = if left { lo.to_string() } else { format!("{hi} - 1") };
    let at = if left { format!("{obase} + k + {extra}") } else { format!("{obase} + k") };
    scan_loop(g, op, vector, src, (base, &acc), (obufs, &at), &from, (lo, hi), left, loc);
}

/// The loop over `k` from `from` in scan order, within `lo .. hi`, each
/// step combining element `base + k` into `acc` and storing it at `at`
/// (an expression of `k`): with a `vector` helper (left scans only), whole
/// vectors of elements first (Note [Vector scans]), then one at a time.
#[allow(clippy::too_many_arguments)]
fn scan_loop(
    g: &mut ExpGen<'_>,
    op: &Op<'_>,
    vector: Option<&VectorScan>,
    src: &Source,
    (base, acc): (&str, &CVal),
    (obufs, at): (&[String], &str),
    from: &str,
    (lo, hi): (&str, &str),
    left: bool,
    loc: SrcLoc,
) {
    let Some(v) = vector else {
        open_scan_loop(g, from, (lo, hi), left);
        scan_step(g, op, src, base, acc, obufs, at, loc);
        g.close("}");
        return;
    };
    let (name, t) = (&v.name, c_type(v.ty));
    let lanes = format!("{name}_L");
    let (a, o) = (&acc.leaves[0], &obufs[0]);
    g.open("{");
    g.line(&format!("int64_t k = {from};"));
    g.line(&format!("{name}_v cv = ({name}_v){{0}} + ({})({a});", v.lane_type()));
    g.open(&format!("for (; k <= {hi} - {lanes}; k += {lanes}) {{"));
    g.line(&format!("{t} xs[{lanes}];"));
    g.open(&format!("for (int64_t kv = 0; kv < {lanes}; kv++) {{"));
    let p = g.bind(ScalarTy::I64, &format!("{base} + k + kv"));
    let x = read_at(g, src, &p, loc);
    g.line(&format!("xs[kv] = {};", x.leaves[0]));
    g.close("}");
    g.line(&format!("cv = {name}(cv, xs, &{o}[{at}]);"));
    g.close("}");
    g.line(&format!("{a} = ({t})cv[0];"));
    g.open(&format!("for (; k < {hi}; k++) {{"));
    scan_step(g, op, src, base, acc, obufs, at, loc);
    g.close("}");
    g.close("}");
}

/// Opens the loop over `k` from `from` in scan order, within `lo .. hi`.
fn open_scan_loop(g: &mut ExpGen<'_>, from: &str, (lo, hi): (&str, &str), left: bool) {
    if left {
        g.open(&format!("for (int64_t k = {from}; k < {hi}; k++) {{"));
    } else {
        g.open(&format!("for (int64_t k = {from}; k >= {lo}; k--) {{"));
    }
}

/// One step of a scan loop: `acc = op(acc, x[base + k])`, stored at `at`.
#[allow(clippy::too_many_arguments)]
fn scan_step(
    g: &mut ExpGen<'_>,
    op: &Op<'_>,
    src: &Source,
    base: &str,
    acc: &CVal,
    obufs: &[String],
    at: &str,
    loc: SrcLoc,
) {
    let p = g.bind(ScalarTy::I64, &format!("{base} + k"));
    let x = read_at(g, src, &p, loc);
    let v = op(g, acc, x);
    assign(g, acc, &v);
    store(g, obufs, at, acc);
}

// Note [Vector scans]
// ~~~~~~~~~~~~~~~~~~~
// A scan's loop carries its accumulator from each element to the next:
// one add a step, about a cycle per element, where reading and writing
// a row that stays in the cache takes a fraction of that. GCC does not
// vectorise such a loop. But an integer `+`, `min`, `max`, `.&.`, `.|.`
// or `xor` is associative exactly (wrapping, for `+`), so a vector of
// `L` elements (as wide as the target's vectors: 64 bytes, 16 `i32`s,
// with AVX-512) can be scanned in log2 L steps, each
// combining every lane with the lane `s` places before it (`s` = 1, 2, 4,
// ..; the lanes before the first `s` take the operator's identity), and
// the carry, in every lane, then combined into all of them: the
// in-register scan of CUB's `WarpScan` and of Intel's prefix-sum
// examples, here in GNU C's vector extensions, which GCC and Clang turn
// into the target's shuffles. Each vector's last lane is the next carry.
// The elements of a vector are read into a small array first (`xs`, a
// loop the C compiler vectorises when the source allows), so a fused
// source's code is the same as in the element-at-a-time loop, in the
// same order: its checks behave as they did there. What is left of the
// range goes one element at a time.
//
// Only left scans (a right scan would need its vectors reversed) of an
// integer element by one of these operators on its two arguments. For
// floats, regrouping `+` changes the rounding, and a sequential scan's
// result would change from one run to another with the number of
// workers; `min`/`max` of floats keep their in-order form as well.
//
// A C model (2^16 `i32`s in the cache, one core of the Xeon of
// docs/benchmarks.md): 37.2 us in order, 13.4 us by vectors of 16.
//
// The vector is the target's own width (`SCAN_WIDTHS`, chosen by the C
// preprocessor from what `-march=native` enables): 64 bytes with
// AVX-512, 32 with AVX2, else 16. A 64-byte vector on an AVX2 processor
// is two halves that GCC 12 shuffles through the stack, one lane at a
// time: the scan of 2^26 `i32`s (`accelerate-bench scan --size large`,
// AVX2 Zen 3) took 53 to 55 ms, slower than sequential Rust's 36 to
// 44; with 32 bytes, 25 to 29 (2026-12-01).

/// A left scan of an integer element by an associative, commutative
/// operator on its two arguments, a vector of `lanes` elements at a time
/// by the helper `name` (Note [Vector scans]).
struct VectorScan {
    name: String,
    ty: ScalarTy,
    prim: PrimFun,
}

/// The widths in bytes of a vector scan's vector, widest first, and the
/// C condition under which each is the target's (the last one always):
/// AVX-512's 64, AVX2's 32, else 16 (SSE2, NEON). Note [Vector scans].
const SCAN_WIDTHS: &[(usize, &str)] = &[(64, "defined(__AVX512F__)"), (32, "defined(__AVX2__)"), (16, "1")];

impl VectorScan {
    /// The vector scan of a kernel `kernel` scanning `elt` with `f`, if
    /// `f` is one of the operators Note [Vector scans] names.
    fn of(f: &Fun, elt: &EltTy, kernel: &str) -> Option<VectorScan> {
        use PrimFun::*;
        let EltTy::Scalar(ty) = elt else { return None };
        // one primitive of both arguments (`commutative`), on an integer
        if !ty.is_integral() || !commutative(f) {
            return None;
        }
        let ExpKind::Prim(prim @ (Add | Min | Max | BAnd | BOr | BXor), _) = &f.body.kind else {
            return None;
        };
        Some(VectorScan { name: format!("{kernel}_vscan"), ty: *ty, prim: *prim })
    }

    /// The type of a vector's lanes: unsigned for `+` (which wraps) and
    /// the bit operators, the element's own for `min` and `max`.
    fn lane_type(&self) -> String {
        match self.prim {
            PrimFun::Min | PrimFun::Max => c_type(self.ty).to_string(),
            _ => format!("uint{}_t", 8 * self.ty.size_bytes()),
        }
    }

    /// The helper's C, for each target's vector width (`SCAN_WIDTHS`):
    /// the number of lanes `{name}_L`, the vector type `{name}_v` and
    /// `{name}(carry, xs, out)`, which scans the `{name}_L` elements at
    /// `xs` from `carry` (in every lane), writes them at `out`, and
    /// returns the last in every lane.
    fn helper(&self) -> String {
        let mut c = String::new();
        let _ = writeln!(c, "\n/* the vector scan (Note [Vector scans] in backend/cpu/scan.rs) */");
        for (i, (bytes, cond)) in SCAN_WIDTHS.iter().enumerate() {
            let _ = writeln!(c, "#{} {cond}", if i == 0 { "if" } else { "elif" });
            c.push_str(&self.helper_of(*bytes));
        }
        c.push_str("#endif\n");
        c
    }

    /// The helper for vectors of `bytes` bytes.
    fn helper_of(&self, bytes: usize) -> String {
        let (name, t, e) = (&self.name, c_type(self.ty), self.lane_type());
        let lanes = bytes / self.ty.size_bytes();
        let v = format!("{name}_v");
        let bits = 8 * self.ty.size_bytes();
        let signed = self.ty.is_signed_int();
        let identity = match self.prim {
            PrimFun::BAnd => format!("~({e})0"),
            PrimFun::Max if signed => format!("INT{bits}_MIN"),
            PrimFun::Min if signed => format!("INT{bits}_MAX"),
            PrimFun::Min => format!("UINT{bits}_MAX"),
            _ => "0".to_string(),
        };
        let combine = |a: &str, b: &str| match self.prim {
            PrimFun::Add => format!("{a} + {b}"),
            PrimFun::BAnd => format!("{a} & {b}"),
            PrimFun::BOr => format!("{a} | {b}"),
            PrimFun::BXor => format!("{a} ^ {b}"),
            // a lane of the mask is all ones where `a` is the one kept
            PrimFun::Max => format!("({a} & ({v})({a} > {b})) | ({b} & ~({v})({a} > {b}))"),
            _ => format!("({a} & ({v})({a} < {b})) | ({b} & ~({v})({a} < {b}))"),
        };
        let mut c = String::new();
        let _ = writeln!(c, "#define {name}_L {lanes}");
        let _ = writeln!(c, "typedef {e} {v} __attribute__((vector_size({bytes})));");
        let _ = writeln!(c, "static inline {v} {name}(const {v} carry, const {t} *xs, {t} *out) {{");
        let _ = writeln!(c, "    const {v} id = ({v}){{0}} + ({e})({identity});");
        let _ = writeln!(c, "    {v} x, s;");
        let _ = writeln!(c, "    memcpy(&x, xs, sizeof x);");
        let mut shift = 1;
        while shift < lanes {
            // lane i of `s` is lane i - shift of `x`, the identity before it
            let idx: Vec<String> = (0..lanes).map(|i| (lanes - shift + i).to_string()).collect();
            let _ = writeln!(c, "    s = ACC_SHUFFLE2({v}, id, x, {});", idx.join(", "));
            let _ = writeln!(c, "    x = {};", combine("x", "s"));
            shift *= 2;
        }
        let _ = writeln!(c, "    x = {};", combine("x", "carry"));
        let _ = writeln!(c, "    memcpy(out, &x, sizeof x);");
        let last = vec![(lanes - 1).to_string(); lanes].join(", ");
        let _ = writeln!(c, "    return ACC_SHUFFLE2({v}, x, x, {last});");
        c.push_str("}\n");
        c
    }
}

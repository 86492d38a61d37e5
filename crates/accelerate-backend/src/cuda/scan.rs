//! The scan skeleton on the GPU: inclusive scans along the innermost
//! dimension, from the left or the right, with a seed (`scanl`, `scanr`:
//! one more element per row) or without (`scanl1`, `scanr1`).
//!
//! A right scan is a left scan of the reversed row with the operator
//! flipped (`op(acc, x) = f(x, acc)`, associative when `f` is), so both
//! directions share the code below, which works in *scan order*: element
//! `s` of the scan is source position `s` from the left, `n - 1 - s` from
//! the right. For a left scan with seed `z`, result `k + 1` is
//! `z ⊕ x0 ⊕ .. ⊕ xk` and result 0 is `z`; a right scan mirrors it
//! (result `n` is `z`).
//!
//! 1. Many rows (`_rows`): a block per row. The block walks its row a
//!    tile of `ACC_BLOCK` elements at a time: each thread reads one
//!    element, `block::block_scan` scans the tile in order, each value is
//!    combined with the carry (the seed and every tile before), written,
//!    and the carry becomes `carry ⊕ tile total`. Launch: `min(rows, G)`
//!    blocks, no parameters.
//! 2. Few long rows (`_look`): a single-pass scan with decoupled
//!    look-back (Merrill and Garland, "Single-pass Parallel Prefix Scan
//!    with Decoupled Look-back", 2016; CUB's `DeviceScan`). Every row is
//!    cut into `T = ceil(n / ACC_BLOCK)` tiles; a block takes the next
//!    tile from a global counter (so that every tile before it has been
//!    taken by a block that is running, which makes the waiting below
//!    free of deadlock), scans it as in 1, and then:
//!    - the first tile of a row publishes its inclusive prefix at once
//!      (with the seed) and flags it `P` (2);
//!    - any other tile publishes its aggregate and flags it `A` (1), then
//!      thread 0 looks back over the tiles before it: it waits for each
//!      to have a flag, takes its inclusive prefix and stops if the flag
//!      is `P`, else takes its aggregate and goes on; the combination of
//!      what it took is the tile's exclusive prefix. It publishes its
//!      inclusive prefix (`P`), and the block combines its values with the
//!      exclusive prefix and writes them.
//!
//!    Aggregates and inclusive prefixes are kept in separate arrays, so a
//!    reader that saw `A` can never read a prefix written after it; a
//!    writer stores the value, then `__threadfence()`, then the flag
//!    (volatile), and a reader loads the flag, fences, then the value.
//!    Every tile publishes, whatever errors its elements raised (Note [No
//!    early exits]), so that no tile waits forever.
//!
//!    Only for rows longer than a tile (`T >= 2`): a row of no elements
//!    has no tile to write its seed, and a row of one tile gains nothing.
//!    Launch: `min(rows * T, G)` blocks (any number works), `P = [T]`;
//!    temporaries after the outputs: the aggregates `t` and the inclusive
//!    prefixes `u` (`rows * T` elements each, one buffer per leaf), then
//!    the flags (`rows * T` `i32`) and the tile counter (one `i32`), both
//!    zeroed by the host before the launch.
//!
//! Each tile has one element per thread; several per thread (CUB's
//! blocked arrangement) is a tuning step not taken yet.

use super::block::{block_scan, scan_total, Op};
use super::device::{Device, BLOCK};
use super::exec::{DeviceArray, Launch};
use super::fold::outer_size;
use super::kernel::{block_stride, declare_zero, KernelGen};
use crate::c::host::{rows_of, shape_of};
use crate::c::kernel::KernelCore;
use crate::c::kernel::ShapeOf;
use crate::c::kernel::{assign, declare, in_scan_order, read_at, store, Source};
use crate::c::{c_type, CVal, ExpGen};
use crate::host::Env;
use accelerate_base::array::{EltTy, ScalarTy};
use accelerate_base::error::Result;
use accelerate_base::error::SrcLoc;
use accelerate_ir::Direction;
use accelerate_plan as plan;

/// The kernel functions of a scan kernel (its name and these suffixes).
pub(crate) const FUNCTIONS: &[&str] = &["_rows", "_look"];

/// Launch: `_rows` (a block per row) when the rows fill the device or are
/// one tile long; else `_look`, the single-pass decoupled look-back over
/// `rows * tiles` tiles (`P[0] = tiles`), with temporaries for the tiles'
/// aggregates, inclusive prefixes, flags (zeroed) and the tile counter
/// (zeroed).
pub(super) fn launch<D: Device>(
    launch: &Launch<'_, '_, D>,
    env: &Env<DeviceArray<D>>,
    seed: bool,
    source: &ShapeOf,
    op: &'static str,
) -> Result<DeviceArray<D>> {
    let (k, seed) = (launch.k, &seed);
    let shape = shape_of(env, source)?;
    let (outer, n, rows) = rows_of(k, &shape, *seed, op)?;
    let mut dims = outer;
    dims.push(n + usize::from(*seed));
    let out = launch.on.alloc(&k.elt, &dims, k.loc)?;
    if rows == 0 {
        return Ok(out);
    }
    let tiles = n.div_ceil(BLOCK as usize);
    if rows >= launch.grid || tiles < 2 {
        launch.run("_rows", rows.min(launch.grid) as u32, &out, &[], &shape, &[])?;
    } else {
        // decoupled look-back (scan.rs): aggregates, inclusive
        // prefixes, flags and the tile counter, the last two zeroed
        let status = rows * tiles;
        let aggs = launch.on.alloc(&k.elt, &[status], k.loc)?;
        let incs = launch.on.alloc(&k.elt, &[status], k.loc)?;
        let flags = launch.on.zeroed(&EltTy::Scalar(ScalarTy::I32), &[status], k.loc)?;
        let counter = launch.on.zeroed(&EltTy::Scalar(ScalarTy::I32), &[1], k.loc)?;
        let p = [tiles as i64];
        launch.run(
            "_look",
            status.min(launch.grid) as u32,
            &out,
            &[&aggs, &incs, &flags, &counter],
            &shape,
            &p,
        )?;
    }
    Ok(out)
}

/// The kernel functions of a scan kernel.
pub(crate) fn scan(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::Scan) {
    let (f, seed, dir, src) = (&s.f, s.seed.as_ref(), s.dir, &s.src.source);
    let (rank, elt, what, loc) = (spec.out.rank, &spec.out.elt, spec.op, spec.loc);
    let left = dir == Direction::Left;
    let extra = usize::from(seed.is_some());
    // `op(earlier, later)` in scan order: a right scan combines `f(x, acc)`
    let op = |g: &mut ExpGen<'_>, a: &CVal, b: CVal| in_scan_order(g, f, dir, a, b);
    let tile = Tile { src, elt, left, extra, loc };

    // _rows: a block per row, tile by tile
    k.open_function(out, "_rows", what, loc);
    let (obufs, _) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
    let n = sh[rank - 1].clone();
    let mut g = k.exp_gen(1);
    let z = seed.map(|s| g.exp(s, &mut Vec::new()));
    let rows = g.bind(ScalarTy::I64, &outer_size(&sh));
    g.open(&block_stride("r", &rows));
    g.line(&format!("const int64_t base = r * {n}, obase = r * ({n} + {extra});"));
    let hc = g.fresh("hc");
    let carry = match &z {
        Some(z) => {
            g.line(&format!("int {hc} = 1;"));
            write_seed(&mut g, z, &obufs, &n, left);
            declare(&mut g, "carry", z)
        }
        None => {
            g.line(&format!("int {hc} = 0;"));
            declare_zero(&mut g, "carry", elt)
        }
    };
    g.open(&format!("for (int64_t t0 = 0; t0 < {n}; t0 += ACC_BLOCK) {{"));
    g.line(&format!("const int64_t cnt = {n} - t0 < ACC_BLOCK ? {n} - t0 : ACC_BLOCK;"));
    let (v, sv) = tile.scan(&mut g, &op, &n, "t0");
    g.open(&format!("if ({hc} && tid < cnt) {{"));
    let r = op(&mut g, &carry, v.clone());
    assign(&mut g, &v, &r);
    g.close("}");
    tile.write(&mut g, &obufs, &v, &n, "t0");
    // the carry past this tile (every thread keeps it)
    let total = scan_total(&sv, elt, "cnt");
    g.open(&format!("if ({hc}) {{"));
    let r = op(&mut g, &carry, total.clone());
    assign(&mut g, &carry, &r);
    g.close("} else {");
    g.indent_in();
    assign(&mut g, &carry, &total);
    g.close("}");
    g.line(&format!("{hc} = 1;"));
    g.line("__syncthreads();");
    g.close("}");
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);

    // _look: single pass with decoupled look-back
    k.open_function(out, "_look", what, loc);
    let (obufs, next) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let (aggs, next) = KernelGen::status_buffers(out, "t", elt, next);
    let (incs, next) = KernelGen::status_buffers(out, "u", elt, next);
    KernelGen::buffer(out, "flags", "int32_t", next);
    KernelGen::buffer(out, "counter", "int32_t", next + 1);
    let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
    let n = sh[rank - 1].clone();
    let mut g = k.exp_gen(1);
    let z = seed.map(|s| g.exp(s, &mut Vec::new()));
    let tiles = g.bind(ScalarTy::I64, &format!("({}) * P[0]", outer_size(&sh)));
    g.line("__shared__ int64_t s_tile;");
    let sx: Vec<String> = elt
        .leaves()
        .into_iter()
        .map(|t| {
            let n = g.fresh("sx");
            g.line(&format!("__shared__ {} {n};", c_type(t)));
            n
        })
        .collect();
    let sx = CVal { ty: elt.clone(), leaves: sx };
    g.line("__shared__ int s_has_x;");
    g.open("for (;;) {");
    g.line("if (tid == 0) s_tile = (int64_t)atomicAdd(counter, 1);");
    g.line("__syncthreads();");
    g.line("const int64_t d = s_tile;");
    g.line(&format!("if (d >= {tiles}) break; /* the same in every thread */"));
    g.line("const int64_t r = d / P[0], j = d % P[0], t0 = j * ACC_BLOCK;");
    g.line(&format!("const int64_t base = r * {n}, obase = r * ({n} + {extra});"));
    g.line(&format!("const int64_t cnt = {n} - t0 < ACC_BLOCK ? {n} - t0 : ACC_BLOCK;"));
    let (v, sv) = tile.scan(&mut g, &op, &n, "t0");
    let total = scan_total(&sv, elt, "cnt");
    g.open("if (tid == 0) {");
    let total = declare(&mut g, "total", &total);
    let hx = g.fresh("hx");
    g.line(&format!("int {hx} = 0;"));
    let x = declare_zero(&mut g, "x", elt);
    g.open("if (j == 0) {");
    match &z {
        Some(z) => {
            assign(&mut g, &x, z);
            g.line(&format!("{hx} = 1;"));
            let r = op(&mut g, z, total.clone());
            publish(&mut g, &incs, &r, "2");
        }
        None => publish(&mut g, &incs, &total, "2"),
    }
    g.close("} else {");
    g.indent_in();
    publish(&mut g, &aggs, &total, "1");
    g.open("for (int64_t p = d - 1;; p--) {");
    g.line("int fl;");
    g.line("do { fl = *(volatile int32_t *)&flags[p]; } while (fl == 0);");
    g.line("__threadfence();");
    let y = CVal {
        ty: elt.clone(),
        leaves: elt
            .leaves()
            .into_iter()
            .zip(aggs.iter().zip(&incs))
            .map(|(t, (a, u))| {
                let ct = c_type(t);
                format!("(fl == 2 ? *(volatile {ct} *)&{u}[p] : *(volatile {ct} *)&{a}[p])")
            })
            .collect(),
    };
    let y = declare(&mut g, "y", &y);
    g.open(&format!("if ({hx}) {{"));
    let r = op(&mut g, &y, x.clone());
    assign(&mut g, &x, &r);
    g.close("} else {");
    g.indent_in();
    assign(&mut g, &x, &y);
    g.close("}");
    g.line(&format!("{hx} = 1;"));
    g.line("if (fl == 2) break;");
    g.close("}");
    let r = op(&mut g, &x, total.clone());
    publish(&mut g, &incs, &r, "2");
    g.close("}");
    assign(&mut g, &sx, &x);
    g.line(&format!("s_has_x = {hx};"));
    g.close("}");
    g.line("__syncthreads();");
    g.open("if (s_has_x && tid < cnt) {");
    let r = op(&mut g, &sx, v.clone());
    assign(&mut g, &v, &r);
    g.close("}");
    tile.write(&mut g, &obufs, &v, &n, "t0");
    if let Some(z) = &z {
        g.open("if (j == 0 && tid == 0) {");
        write_seed(&mut g, z, &obufs, &n, left);
        g.close("}");
    }
    g.line("__syncthreads();");
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);
}

/// What scanning one tile of a row needs.
struct Tile<'s> {
    src: &'s Source,
    elt: &'s EltTy,
    left: bool,
    extra: usize,
    loc: SrcLoc,
}

impl Tile<'_> {
    /// The source position of scan element `t0 + tid` of a row of `n`.
    fn position(&self, g: &mut ExpGen<'_>, n: &str, t0: &str) -> String {
        let e = if self.left { format!("{t0} + tid") } else { format!("{n} - 1 - ({t0} + tid)") };
        g.bind(ScalarTy::I64, &e)
    }

    /// Reads the tile starting at scan element `t0` (threads `0 .. cnt`
    /// each read one element) and scans it in order; returns each
    /// thread's inclusive prefix within the tile and the warps' shared
    /// prefixes (`block_scan`).
    fn scan(&self, g: &mut ExpGen<'_>, op: &Op<'_>, n: &str, t0: &str) -> (CVal, Vec<String>) {
        let v = declare_zero(g, "v", self.elt);
        g.open("if (tid < cnt) {");
        let k = self.position(g, n, t0);
        let p = g.bind(ScalarTy::I64, &format!("base + {k}"));
        let x = read_at(g, self.src, &p, self.loc);
        assign(g, &v, &x);
        g.close("}");
        g.line("const int h = tid < cnt;");
        let sv = block_scan(g, op, &v, "h", "cnt");
        (v, sv)
    }

    /// Writes each present thread's result: from the left, result `k +
    /// extra` is the prefix through element `k`; from the right, result
    /// `k`.
    fn write(&self, g: &mut ExpGen<'_>, obufs: &[String], v: &CVal, n: &str, t0: &str) {
        g.open("if (tid < cnt) {");
        let k = self.position(g, n, t0);
        let at = if self.left { format!("obase + {k} + {}", self.extra) } else { format!("obase + {k}") };
        store(g, obufs, &at, v);
        g.close("}");
    }
}

/// The seed's own result: first from the left, last from the right (in
/// thread 0).
fn write_seed(g: &mut ExpGen<'_>, z: &CVal, obufs: &[String], n: &str, left: bool) {
    g.open("if (tid == 0) {");
    let at = if left { "obase".to_string() } else { format!("obase + {n}") };
    store(g, obufs, &at, z);
    g.close("}");
}

/// Publishes a tile's value in `bufs` and then its flag (Merrill and
/// Garland's status word, kept apart from the value).
fn publish(g: &mut ExpGen<'_>, bufs: &[String], v: &CVal, flag: &str) {
    for (b, x) in bufs.iter().zip(&v.leaves) {
        g.line(&format!("{b}[d] = {x};"));
    }
    g.line("__threadfence();");
    g.line(&format!("*(volatile int32_t *)&flags[d] = {flag};"));
}

//! The fold skeleton: reduction of the innermost dimension (`fold`,
//! `fold1`, and so every whole-array reduction, which reshapes to a
//! vector first).
//!
//! Algorithm. A row of `n` elements reduces to `f(seed, x0 ⊕ .. ⊕ x_{n-1})`
//! (the operator is associative, `docs/semantics.md`), so the seed is
//! applied once, whatever the split:
//!
//! 1. Many rows (`_rows`): the executor gives each worker whole rows.
//! 2. Few long rows: each row is cut into `m` pieces of `L` elements;
//!    `_part` reduces pieces in parallel into a temporary array of
//!    `rows * m` partial results, and `_combine` folds each row's
//!    partials with the seed.
//!
//! Within a piece the reduction keeps `K` independent accumulators
//! (Note [Multi-accumulator reductions]), so that the loop has no chain of
//! dependent additions and the C compiler can vectorise it:
//!
//! ```text
//! acc[q] = x[lo + q]                       for q < K
//! for k in lo+K, lo+2K .. while k+K <= hi: acc[q] = f(acc[q], x[k + q])
//! r = acc[0] ⊕ acc[1] ⊕ .. ⊕ acc[K-1];  then the remaining elements
//! ```
//!
//! Note [Multi-accumulator reductions]
//! C compilers do not reassociate floating-point operations without
//! `-ffast-math`, which would also give up NaN and infinity rules
//! (`docs/semantics.md`); `fold` declares its operator associative, so
//! the generated code reassociates explicitly instead, as CUB and every
//! hand-written vector reduction do, and nothing else changes.
//! Interleaved lanes (lane `q` takes elements `q, q + K, ..`) also reorder
//! the elements, which needs a commutative operator as well: they are
//! used only when the operator is commutative by construction
//! (`c::kernel::commutative`: `a + b`, `max(a, b)`, a tuple of such), as for sums,
//! products, extrema and dot products. Any other operator (an affine
//! composition, a matrix product) reduces each piece in order, from its
//! first element; only the grouping of the pieces then differs from the
//! interpreter's. Lanes are written only for elements with a float leaf
//! (and other leaves of floats or wide integers): integer arithmetic
//! wraps, so the C compiler reassociates an in-order integer reduction
//! itself and vectorises it without help. (GCC 12.2 also
//! miscompiles the lane loop for 8-bit integers at `-O3`: a sum of 48
//! `int8_t` through 16 lanes came out wrong, found by the property tests.)
//!
//! Note [Masked loads in lane loops]
//! GCC 12.2 at `-O3` also miscompiles a lane loop whose element reads an
//! array on one side of a branch only, as fusion makes of PageRank's
//! dangling rank (`ranks.zip_with(degrees, |r, d| d.eq(0).select(r, 0.0))`
//! summed): `if (d[k + q] == 0) v = r[k + q]; else v = 0;`, valid C.
//! It unrolls the 16-iteration loop over `q` completely, then vectorises
//! the loop over `k` with the 16 statements as one SLP group, the
//! conditional read becoming one masked load (`vmaskmovps`) per vector of
//! lanes; but every one of those loads takes the first vector's mask (and
//! is then ANDed with its own), so with AVX or AVX2 (two vectors of f32
//! lanes, four of f64) a lane beyond the first vector keeps its element
//! only where the lane at the same place in the first vector keeps its
//! own. In a fast function the lane loops carry
//! `#pragma omp simd` (Note [Optimistic checks]), which keeps GCC from
//! unrolling them before the vectoriser; elsewhere they carry
//! `ACC_LANE_LOOP` (`prelude.h`: `#pragma GCC unroll 1` under GCC), which
//! does the same without claiming independent iterations (a checked
//! function's lanes may raise errors in order). Kept a loop, the loop over
//! `q` is vectorised by itself, each masked load with its own mask; a dot
//! product and the dangling sum run as fast as before (within the noise,
//! 10^3 to 10^6 elements).

use super::exec::{alloc, dims_i64, finish, Launch};
use super::kernel::{KernelGen, Row};
use super::packed::{packed, Packed, PACKED_BYTES};
use crate::c::access::{column_blocks_pay, tiles_pay_packed};
use crate::c::host::{rows_of, shape_of};
use crate::c::kernel::unravel;
use crate::c::kernel::KernelCore;
use crate::c::kernel::ShapeOf;
use crate::c::kernel::{absorbed, apply_at, assign, commutative, declare, read_ix, store, Kept, Source};
use crate::c::{c_type, CVal, ExpGen};
use crate::host::Env;
use accelerate_base::array::ArrayData;
use accelerate_base::array::{EltTy, ScalarTy};
use accelerate_base::error::Result;
use accelerate_base::error::SrcLoc;
use accelerate_ir::{DelayedArray, ExpKind, Fun, OpenExp};
use accelerate_plan as plan;
use std::sync::Arc;

/// Independent accumulators of a reduction loop: 16 lanes cover two AVX2
/// vectors of f32, enough to hide the latency of a vector addition.
pub(crate) const LANES: usize = 16;

/// The C functions of a fold kernel (its name and these suffixes).
pub(crate) const FUNCTIONS: &[&str] = &["_rows", "_part", "_combine"];

/// Launch: `_rows` over whole rows when there are many rows (or little
/// work); else `_part` over `rows * m` pieces of `piece` elements
/// (`P[0] = m`, `P[1] = piece`) into a temporary of partial results, then
/// `_combine` over the rows (`P[0] = m`). With `keep` (the type of the
/// source's first components, `plan::Fold::keep`) also the kept array,
/// of the source's shape, which `_rows` and `_part` write as they read.
pub(super) fn launch(
    launch: &Launch<'_>,
    env: &Env<Arc<ArrayData>>,
    seed: bool,
    source: &ShapeOf,
    op: &'static str,
    keep: Option<&EltTy>,
) -> Result<(ArrayData, Option<ArrayData>)> {
    let (k, seed) = (launch.k, &seed);
    let shape = shape_of(env, source)?;
    let (outer, n, rows) = rows_of(k, &shape, *seed, op)?;
    let mut out = alloc(&k.elt, &outer, k.loc)?;
    let mut kept = match keep {
        Some(t) => alloc(t, &shape, k.loc)?,
        None => Vec::new(),
    };
    let ext = dims_i64(&shape);
    let grain = launch.grain();
    // (a kernel whose `_part` takes blocks of neighbouring rows cuts
    // them into pieces where the blocks are too few for the workers:
    // Note [Column blocks in pieces])
    let block = k.column_part;
    let blocks = if block > 0 { rows.div_ceil(block) } else { rows };
    let few_blocks = block > 0 && blocks < 2 * launch.workers;
    if rows * n.max(1) < 2 * grain || (rows >= 2 * launch.workers && !few_blocks) || n < 2 * grain {
        // (a chunk holds whole blocks where the workers each get one:
        // Note [Wide column blocks])
        let grain = (grain / n.max(1)).max(1).max(k.rows_grain.min(rows / launch.workers.max(1)));
        let mut bounds = launch.uniform(rows, grain);
        if let (true, [.., _, nj]) = (k.tile_runs > 0, &outer[..]) {
            bounds = whole_tiles(bounds, k.tile_runs * nj);
        }
        launch.run("_rows", &mut out, &mut kept, &ext, &[], &bounds)?;
    } else {
        // pieces of single rows, or of blocks of `block` rows
        let piece = if block > 0 {
            n.div_ceil((4 * launch.workers).div_ceil(blocks)).max(grain.div_ceil(block.min(rows)))
        } else {
            n.div_ceil(4 * launch.workers).max(grain)
        };
        let m = n.div_ceil(piece);
        // the partials, then the kept buffers (`_part`'s `t` and `w`)
        let mut tmp = alloc(&k.elt, &[rows * m], k.loc)?;
        let ntmp = tmp.len();
        tmp.append(&mut kept);
        launch.run(
            "_part",
            &mut out,
            &mut tmp,
            &ext,
            &[m as i64, piece as i64, block as i64, rows as i64],
            &launch.uniform(blocks * m, 1),
        )?;
        kept = tmp.split_off(ntmp);
        launch.run("_combine", &mut out, &mut tmp, &ext, &[m as i64], &[0, rows])?;
    }
    let kept = match keep {
        Some(t) => Some(finish(kept, t, shape.clone(), rows * n)?),
        None => None,
    };
    Ok((finish(out, &k.elt, outer, rows)?, kept))
}

/// The C functions `_rows`, `_part` and `_combine` of a fold kernel.
pub(crate) fn fold(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::Fold) {
    let (f, seed, src) = (&s.f, s.seed.as_ref(), &s.src.source);
    let (rank, elt, what, loc) = (s.src.ty.rank, &spec.out.elt, spec.op, spec.loc);
    let kept_elt = spec.kept().map(|t| t.elt);
    let (columns, tiles) = match src {
        Source::Delayed(d) => column_blocks_pay(d),
        Source::Manifest(_) => (false, false),
    };
    // the reads of tiles to pack (Note [Packed operands]; made here, so
    // that the functions it holds outlive every generator that reads
    // them), which may make tiles pay where the reads alone did not
    let pack = match src {
        Source::Delayed(d) => {
            let elt_of = |a: usize| spec.inputs.iter().find(|(v, _)| *v == a).map(|(_, t)| t.elt.clone());
            packed(d, elt_of, PACKED_BYTES / (shared_block(elt) * run_lanes(elt)))
                .filter(|p| tiles || tiles_pay_packed(&p.element, p.tys.len(), rank))
        }
        Source::Manifest(_) => None,
    };
    let tiles = tiles || pack.is_some();
    // blocks of rows in `_rows` (Note [Column blocks]); pieces of rows
    // (`column_part`) keep to where the reads alone pay
    let row_blocks = columns || tiles;
    // (Note [Column blocks in pieces])
    let column_part = columns.then(|| block_lanes(elt));
    k.column_part = column_part.unwrap_or(0);
    // _rows: whole rows start..end
    k.with_fast_path(out, |k, out| {
        k.open_function(out, "_rows", what, loc);
        let (obufs, next) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
        let keep = kept_buffers(out, kept_elt.as_ref(), elt, next);
        let keep = keep.as_ref();
        let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
        let n = sh[rank - 1].clone();
        let any_order = k.any_order();
        // blocks outside tiles are wide, but those that take a tiled
        // range's partial runs (Note [Wide column blocks])
        let wide = if tiles { run_lanes(elt) } else { block_lanes(elt) };
        if row_blocks && !tiles {
            k.rows_grain = wide;
        }
        if any_order && tiles {
            k.tile_runs = tile_runs(elt);
        }
        // (Note [Absorbed reductions stop])
        let stop_absorbed = any_order && !k.fast() && keep.is_none();
        let mut g = k.exp_gen(1);
        g.stop_absorbed = stop_absorbed;
        let z = seed.map(|s| g.exp(s, &mut Vec::new()));
        let first = if any_order && row_blocks {
            let block = Block {
                f,
                seed: z.as_ref(),
                src,
                sh: &sh,
                lanes: &[],
                wide,
                obufs: &obufs,
                elt,
                keep,
                loc,
                pack: None,
            };
            column_blocks(&mut g, block, tiles, pack.as_ref(), !columns);
            "r0"
        } else if any_order {
            short_rows(&mut g, f, z.as_ref(), src, &sh, &obufs, elt, keep, loc);
            "r0"
        } else {
            "start"
        };
        g.open(&format!("for (int64_t r = {first}; r < end; r++) {{"));
        g.line(&format!("const int64_t base = r * {n};"));
        let row = Row::new(&mut g, src, &sh, "r", "base").keeping(keep);
        let r = reduce_row(&mut g, f, z.as_ref(), src, &row, "0", &n, loc);
        store(&mut g, &obufs, "r", &r);
        g.close("}");
        let parts = g.into_parts();
        k.close_function(out, parts);
    });

    piece_totals(k, out, f, src, rank, elt, kept_elt.as_ref(), column_part, what, loc);

    // _combine: rows start..end from their P[0] partials each
    k.open_function(out, "_combine", what, loc);
    let (obufs, next) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
    let (tbufs, _) = KernelGen::out_buffers(out, "t", elt, next);
    let mut g = k.exp_gen(1);
    let z = seed.map(|s| g.exp(s, &mut Vec::new()));
    g.open("for (int64_t r = start; r < end; r++) {");
    let first = CVal { ty: elt.clone(), leaves: tbufs.iter().map(|t| format!("{t}[r * P[0]]")).collect() };
    let acc = match &z {
        Some(z) => {
            let v = g.apply(f, vec![z.clone(), first]);
            declare(&mut g, "acc", &v)
        }
        None => declare(&mut g, "acc", &first),
    };
    g.open("for (int64_t j = 1; j < P[0]; j++) {");
    let x = CVal { ty: elt.clone(), leaves: tbufs.iter().map(|t| format!("{t}[r * P[0] + j]")).collect() };
    let v = g.apply(f, vec![acc.clone(), x]);
    assign(&mut g, &acc, &v);
    g.close("}");
    store(&mut g, &obufs, "r", &acc);
    g.close("}");
    let parts = g.into_parts();
    k.close_function(out, parts);
}

/// The buffers `w` of a fold's kept result (of type `kept`, from buffer
/// `first`), whose reduced elements are of type `x`.
pub(super) fn kept_buffers(out: &mut String, kept: Option<&EltTy>, x: &EltTy, first: usize) -> Option<Kept> {
    kept.map(|t| Kept { bufs: KernelGen::out_buffers(out, "w", t, first).0, x: x.clone() })
}

/// Rows at most this long are reduced `ROW_LANES` rows at a time, a row
/// per lane (Note [Short rows]).
const SHORT_ROW: usize = 2 * LANES;
const ROW_LANES: usize = LANES;

// Note [Short rows]
// A row shorter than `2 * LANES` elements is too short for lanes within
// it (Note [Multi-accumulator reductions]), and reduced alone it is a
// short chain of dependent steps: k-means' nearest centroid, a fold of
// `(distance, index)` pairs over rows of 8 with a compare and two selects
// per step, ran as a scalar loop whose every step waited on the last (and
// on a branch the data made unpredictable). In a function that raises
// no error, or the fast form of one that does (Note [Optimistic checks]),
// such rows are reduced `ROW_LANES` at a time
// instead: lane `q` holds row `r0 + q`'s accumulator, and each step
// combines element `k` of every row of the block, a loop over the lanes
// that the C compiler vectorises (an argmin's selects become blends).
// Each row is still reduced in order from its seed or first element,
// exactly as the interpreter reduces it, so the operator needs no
// property at all. The rows left over, and longer rows, take the loop
// that follows; in a fast function a failed check anywhere sends the
// whole chunk to the checked function, which raises the errors in order.

// Note [Long rows in lanes]
// An operator that is not commutative by construction (`commutative`)
// gets no lanes within a row (Note [Multi-accumulator reductions]), so a
// long row was reduced alone, one step after another: an argmax of
// `(value, index)` pairs over 4096 rows of 1000 `f32`, with the tie rule
// that makes it commutative (a compare, a test of ties, two selects a
// step; GCC made it a loop of 13 instructions a step with branches), took
// 2.4 to 2.6 ms on two workers, where sequential Rust's loop (`if row[j]
// > row[b]`) took 1.8 to 2.0 ms on one. Such rows of any length are
// reduced as short rows are, `ROW_LANES` at a time, a row per lane, each
// still in order: 0.90 and 1.01 ms. The lanes' reads are `ROW_LANES`
// rows apart, so a source that gathers keeps its rows alone (Note
// [Gathers in order]), and an operator with lanes within a row keeps
// those (a contiguous read per step).

/// The blocks of `ROW_LANES` short rows of `_rows` (Note [Short rows]),
/// or of rows of any length (Note [Long rows in lanes]), from `start`;
/// leaves `r0` at the first row it did not reduce.
#[allow(clippy::too_many_arguments)]
fn short_rows(
    g: &mut ExpGen<'_>,
    f: &Fun,
    seed: Option<&CVal>,
    src: &Source,
    sh: &[String],
    obufs: &[String],
    elt: &EltTy,
    keep: Option<&Kept>,
    loc: SrcLoc,
) {
    let n = &sh[sh.len() - 1];
    g.line("int64_t r0 = start;");
    // rows of any length where a row alone would be one chain (Note
    // [Long rows in lanes])
    let any_length = !commutative(f) && !gathers(g, src);
    let short = if any_length { "1".to_string() } else { format!("{n} <= {SHORT_ROW}") };
    g.open(&format!("if ({short}) {{"));
    g.open(&format!("for (; r0 + {ROW_LANES} <= end; r0 += {ROW_LANES}) {{"));
    let lanes: Vec<String> = elt.leaves().iter().map(|_| g.fresh("lane")).collect();
    for (l, t) in lanes.iter().zip(elt.leaves()) {
        g.line(&format!("{} {l}[{ROW_LANES}];", c_type(t)));
    }
    let lane =
        |q: &str| CVal { ty: elt.clone(), leaves: lanes.iter().map(|l| format!("{l}[{q}]")).collect() };
    // row r0 + q of the block, in lane q: its start, and its element at k
    let element = |g: &mut ExpGen<'_>, k: &str| {
        g.line(&format!("const int64_t r = r0 + q, base = r * {n};"));
        let row = Row::new(g, src, sh, "r", "base").keeping(keep);
        row.read(g, src, k, loc)
    };
    let from = match seed {
        Some(z) => {
            let saved = g.open_lane_loop(&ROW_LANES.to_string(), ROW_LANES);
            store(g, &lanes, "q", z);
            g.close_lane_loop(saved);
            "0"
        }
        None => {
            let saved = g.open_lane_loop(&ROW_LANES.to_string(), ROW_LANES);
            let x = element(g, "0");
            store(g, &lanes, "q", &x);
            g.close_lane_loop(saved);
            "1"
        }
    };
    let k = g.fresh("k");
    g.open(&format!("for (int64_t {k} = {from}; {k} < {n}; {k}++) {{"));
    let saved = g.open_lane_loop(&ROW_LANES.to_string(), ROW_LANES);
    let x = element(g, &k);
    let v = g.apply(f, vec![lane("q"), x]);
    store(g, &lanes, "q", &v);
    g.close_lane_loop(saved);
    g.close("}");
    let saved = g.open_lane_loop(&ROW_LANES.to_string(), ROW_LANES);
    store(g, obufs, "r0 + q", &lane("q"));
    g.close_lane_loop(saved);
    g.close("}");
    g.close("}");
}

// Note [Column blocks]
// A matrix product written with `replicate`, `zip_with` and `fold`
// (Accelerate's examples, `accelerate-programs/src/matmul.rs`) folds rows
// whose elements read the second matrix down a column: element `k` of
// row `(i, j)` reads `b[k][j]`, a row of `b` away from element `k - 1`.
// Reduced a row at a time, with lanes along the row or not, every read
// touched a new cache line and, for rows of 4 KiB or more, a new page:
// 1024^3 took 9 s on two workers. But neighbouring rows read neighbouring
// elements: `b[k][j + q]` for row `(i, j + q)`. Where the access analysis
// (`c/access.rs`) finds that every read of the source is contiguous or
// invariant across rows, and some read is far along a row, `_rows`
// reduces blocks of neighbouring rows (Note [Wide column blocks]; within one
// run of the last outer dimension, so that lane `q`'s row is
// `(.., j0 + q)`) as short rows are reduced (Note [Short rows]): lane `q`
// holds its row's accumulator, each step combines element `k` of every
// row of the block, and the loop over the lanes reads `b[k][j0 .. j0 +
// 64]`, four cache lines of one page. Where such a read is also the same
// for every run (`b[k][j]` does not depend on `i`), the block is a tile
// of `tile_runs` runs, lane `(p, q)` holding row `(i0 + p, j0 + q)`, so
// that each line of `b` read serves four rows of `a`; a tile needs whole
// runs, so a chunk's partial runs at either end take the blocks.
// Each row is still reduced in order from its seed or first element,
// exactly as the interpreter reduces it. Blocks and tiles of full width
// are written with a constant width, the rest with the width left.
//
// The lanes of a block stay in memory (GCC does not keep an array of
// variable width in registers across the loop over `k`; a tile of full
// width it does, Note [Tiles in registers]), so a block of 16, as short rows take, spent
// its time on the round trip and on a page per step: 1024^3 on one
// worker (a C model of the loops) took 510 ms with blocks of 16, 150 ms
// with 64, 72 ms with tiles of 4 x 64 (8 runs: 78 ms; 4 x 32: 71 ms).
// A hand-blocked product with its panel of `b` packed and the tile in
// registers (the benchmark's rayon version) is faster still.

/// Rows in a tile's run, and runs of rows in a tile (Note [Column
/// blocks]); a block outside tiles is wider (Note [Wide column blocks]).
const COLUMN_LANES: usize = 64;

// Note [Tiles in registers]
// A tile's accumulators live in vector registers across the loop over
// `k` (GCC keeps a tile of full width there; Note [Column blocks] was
// written when it did not), so a tile should fill the register file
// without spilling it: each step loads a line of `b` once per run and
// broadcasts one element of `a` per run, and the more runs, the more
// multiplies each load of `b` serves. With AVX-512's 32 registers of 64
// bytes a tile takes 24 of them (`TILE_REGISTER_BYTES`): 6 runs of 64
// `f32`, 3 of `f64`. A C model of the loops (1024^3 `f32`, one thread,
// best of 20, 2-core EPYC guest with AVX-512, 2026-12-01): 12.5 ms with
// 4 runs and blocks of 128 steps (the tiles before), 9.2 ms with 6 runs,
// 8.8 ms with 6 runs and blocks of 256 steps (Note [Blocks of the shared
// dimension]); 8 runs of 32 lanes 12.4, 12 of 32 10.7. Without AVX-512
// (16 registers of 32 bytes) a run of four registers is 32 `f32`, and
// even a tile of 4 such runs spills (a C model compiled for Haswell:
// 6 runs were slower, 34.6 ms against 29.1). So there a run is two
// registers (16 `f32`) and a tile 6 runs, 12 registers, as BLIS's AVX2
// kernel (6 x 16): each step loads two vectors of `b` and broadcasts 6
// elements of `a`, and GCC keeps all of it in the 16 registers. The
// benchmark's 1024^3 product (`accelerate-bench matmul --size large`,
// AVX2 Zen 3, 2026-12-01) took 21.9 to 22.8 ms at best with 4 runs of
// 64, 20.8 to 20.9 with 6 of 16, three alternated runs each.
//
// A run is as many registers wide whatever the element (`run_lanes`,
// at least 16 elements): with AVX-512 64 `f32` or 32 `f64`, so that a
// tile of `f64` also has 6 runs rather than 3 runs of 64. A product of a 1000 x 700 by a 700 x 1300 `f64` matrix
// (written as the benchmark's, a scratch program, two workers, median of
// 15) took 15.0 ms with 3 runs of 64 and 8.9 ms with 6 of 32.
//
// The rows a chunk holds that fill no tile take blocks of one run, about
// three times slower a row. The executor's eight chunks of 128 rows of
// the 1024^3 product left 2 such rows each, so a tiled kernel's chunks
// end at whole tiles (`Kernel::tile_runs`, `whole_tiles`): the product
// on two workers from 4.80 ms to 4.60 to 4.65 (medians, three runs).

/// The host's vector registers (Note [Tiles in registers]): how many,
/// their bytes, and how many a tile's run takes: AVX-512's 32 of 64
/// bytes, 4 a run; else AVX2's 16 of 32 bytes, 2 a run.
fn vector_registers() -> (usize, usize, usize) {
    if super::wide_vector_registers() {
        (32, 64, 4)
    } else {
        (16, 32, 2)
    }
}

/// Rows in a run of a tile (Note [Tiles in registers]): the power of two
/// of elements of `elt` that fills at most a run's vector registers, from
/// 16 to `COLUMN_LANES`.
fn run_lanes(elt: &EltTy) -> usize {
    let (_, bytes, run) = vector_registers();
    let fit = (run * bytes / elt.size_bytes().max(1)).max(1);
    (1usize << fit.ilog2()).clamp(16, COLUMN_LANES)
}

/// Runs of rows in a tile (Note [Tiles in registers]): as many as fill
/// three quarters of the vector registers with runs of `run_lanes`
/// elements of `elt`, from 1 to 6.
fn tile_runs(elt: &EltTy) -> usize {
    let (registers, bytes, _) = vector_registers();
    (registers * 3 / 4 * bytes / (run_lanes(elt) * elt.size_bytes().max(1))).clamp(1, 6)
}

// Note [Wide column blocks]
// A reduction down the columns of a matrix (`transpose` then `fold`: a
// column sum, NumPy's `sum(axis=0)`) takes column blocks without tiles:
// each step of a block reads one stretch of a row of the matrix, then
// jumps a row ahead. With 64 lanes the stretch was 256 bytes of `f32`,
// and each step a new page that the prefetchers do not follow: column
// sums of a 4096 x 4096 `f32` matrix took 7.8 to 10 ms on one worker.
// So a block outside tiles holds as many rows as 4 KiB of accumulators
// do (`block_lanes`: 1024 `f32`, 512 `f64`, 256 of a 12-byte tuple),
// whose stretches are a page or so; on one worker 4.9 to 6.5 ms, a
// third less. On two workers the chunks of rows were still 512 rows
// each (eight chunks), so each block was half as wide, and the same
// sums took 3.9 to 4.9 ms as before; with chunks of whole blocks
// (`Kernel::rows_grain`, where the workers each still get one) 2.7 to
// 3.1 ms, against 2.4 ms for a rayon loop that adds each band of rows
// into its own sums (best of 21, 2-core EPYC guest, 2026-11-30). The
// lanes still live in memory, 4 KiB of them in the first-level cache
// with the stretch they add. A tile keeps its 64 lanes a run (Note
// [Column blocks]), as do the blocks that take a tiled range's partial
// runs. Each lane's flag (Note [Lane flags]) is declared with the
// function's widest lane loop, so that only a function with wide blocks
// clears and folds 1024 of them.

// Note [Blocks of the shared dimension]
// A tile's reads of `b` walk down `COLUMN_LANES` columns, a row of `b`
// per step: for 1024 x 1024 f32 matrices a column block of `b` is 256
// KiB, a page per step, and every tile read all of it again, from L2 at
// best. The whole tiles of a chunk are therefore computed together, a
// column block at a time, and the shared dimension in blocks of
// `shared_block` steps: a block of `b`'s columns (32 KiB) is read from
// L1 by every tile of the chunk before the next. Between blocks a lane's
// accumulator waits in the output, where the next block loads it again:
// each row is still reduced in order, from its seed or first element, so
// the result is the same to the bit. Only functions free to reorder
// their elements (a fast function, or one that raises nothing) have
// tiles, and a fast function that fails is run again by the checked one,
// which writes every output. A C model of the loops (1024^3, half the
// rows on one worker) took 36 ms with the tiles one after another, 34 ms
// with the column blocks outermost, and 17 ms with blocks of 128 steps
// (20 ms with 64, 24 ms with 256). With tiles of 6 runs in registers
// (Note [Tiles in registers]) larger blocks pay: the benchmark's 1024^3
// product on two workers took 5.05 to 5.34 ms (median) with 32 KiB, 4.87
// to 4.95 with 64 KiB, 4.88 to 4.91 with 128 KiB. That was without
// packing: a block of `b`'s runs 4 KiB apart sits in a few sets of L1
// however small the block. With the runs packed (Note [Packed operands])
// 32 KiB is best again; on the Intel guest (two workers, medians of two
// runs each) the product took 13.3 and 13.4 ms with 64 KiB, 12.8 and
// 13.2 with 32 KiB, and in fast math 9.9 and 9.9 against 8.8 and 8.9.
// So every host takes 32 KiB.

/// Steps of the shared dimension in a block (Note [Blocks of the shared
/// dimension]): a block of `run_lanes` columns of elements of `elt`'s
/// size in 32 KiB, at least 16.
fn shared_block(elt: &EltTy) -> usize {
    let bytes = elt.size_bytes().max(1);
    (32 * 1024 / (run_lanes(elt) * bytes)).max(16)
}

/// Rows in a block of neighbouring rows outside tiles (Note [Wide column
/// blocks]): the power of two of them whose accumulators fill 4 KiB, from
/// `COLUMN_LANES` to 1024.
fn block_lanes(elt: &EltTy) -> usize {
    let fit = (4096 / elt.size_bytes().max(1)).max(1);
    (1usize << fit.ilog2()).clamp(COLUMN_LANES, 1024)
}

/// The blocks of neighbouring rows of `_rows` (Note [Column blocks]), from
/// `start` to `end`, in tiles of `tile_runs` runs where `tiles` and the
/// range allow; leaves `r0` at `end`, or, if `rows_left`, where no tile
/// fits, for the caller's loop to reduce the rest one by one (where
/// blocks pay only as packed tiles, `tiles_pay_packed`, a block outside
/// tiles would read its rows' unpacked operand far apart at every step:
/// the distances from 1 row to 200 000 took 8.8 to 9.5 ms so, 3.9 one
/// by one).
fn column_blocks(g: &mut ExpGen<'_>, block: Block<'_>, tiles: bool, pack: Option<&Packed>, rows_left: bool) {
    let (sh, elt) = (block.sh, block.elt);
    let rank = sh.len();
    let nj = &sh[rank - 2];
    g.line("int64_t r0 = start;");
    g.open("while (r0 < end) {");
    let outer = unravel(g, "r0", &sh[..rank - 1]);
    let j0 = outer[rank - 2].clone();
    g.loop_invariant.push("r0".into());
    g.loop_invariant.extend(outer.iter().cloned());
    let (tile_runs, run) = (tile_runs(elt), run_lanes(elt));
    let runs = if tiles { tile_runs } else { 1 };
    let wide = block.wide;
    let lanes: Vec<String> = elt.leaves().iter().map(|_| g.fresh("lane")).collect();
    for (l, t) in lanes.iter().zip(elt.leaves()) {
        g.line(&format!("{} {l}[{}];", c_type(t), (runs * run).max(wide)));
    }
    let block = Block { lanes: &lanes, ..block };
    if tiles {
        // the whole tiles of `tile_runs` runs from r0, each column block of
        // them in blocks of the shared dimension (Note [Blocks of the
        // shared dimension])
        let (ni, i0, n) = (&sh[rank - 3], &outer[rank - 3], &sh[rank - 1]);
        g.line(&format!(
            "const int64_t tiles = {j0} == 0 && {nj} > 0 ? acc_min_int64_t((end - r0) / ({tile_runs} * {nj}), ({ni} - {i0}) / {tile_runs}) : 0;"
        ));
        g.open("if (tiles > 0) {");
        let depth = shared_block(elt);
        // (Note [Packed operands])
        let names: Vec<String> = pack
            .map(|p| {
                p.tys
                    .iter()
                    .map(|&t| {
                        // (read through a pointer: with the array itself,
                        // GCC kept the tile's accumulators in memory, at
                        // 1.7 times the time)
                        let (name, ty) = (g.fresh("pack"), c_type(t));
                        g.line(&format!("{ty} {name}_s[{}] __attribute__((aligned(64)));", depth * run));
                        g.line(&format!("{ty} *restrict {name} = {name}_s;"));
                        name
                    })
                    .collect()
            })
            .unwrap_or_default();
        g.open(&format!("for (int64_t jb = 0; jb < {nj}; jb += {run}) {{"));
        g.loop_invariant.extend(["jb", "tg", "kb", "ke"].map(String::from));
        // the tile tg of the range: its first row, and its runs' index
        let tile = |g: &mut ExpGen<'_>| {
            let mut at = outer.clone();
            at[rank - 3] = g.bind(ScalarTy::I64, &format!("{i0} + tg * {tile_runs}"));
            g.loop_invariant.push(at[rank - 3].clone());
            at[rank - 2] = "jb".into();
            (at, format!("r0 + tg * {tile_runs} * {nj} + jb"))
        };
        // a block of the shared dimension at a time, of `width` columns
        let packed_block = Block { pack: pack.map(|p| (p, names.as_slice())), ..block };
        let blocked = |g: &mut ExpGen<'_>, width: &str| {
            g.open(&format!("for (int64_t kb = 0; kb == 0 || kb < {n}; kb += {depth}) {{"));
            g.line(&format!("const int64_t ke = kb + {depth} < {n} ? kb + {depth} : {n};"));
            if let (Some(p), Source::Delayed(d)) = (pack, block.src) {
                pack_block(g, d, &outer, p, &names, run, width);
            }
            g.open("for (int64_t tg = 0; tg < tiles; tg++) {");
            let (at, first) = tile(g);
            packed_block.write(g, &at, &first, width, tile_runs, Span::Blocked);
            g.close("}");
            g.close("}");
        };
        g.open(&format!("if ({nj} - jb >= {run}) {{"));
        blocked(g, &run.to_string());
        g.close("} else {");
        g.indent_in();
        g.line(&format!("const int64_t width = {nj} - jb;"));
        if pack.is_some() {
            // the last columns take their packed reads too: without,
            // each step would read a run of rows far apart
            blocked(g, "width");
        } else {
            g.open("for (int64_t tg = 0; tg < tiles; tg++) {");
            let (at, first) = tile(g);
            block.write(g, &at, &first, "width", tile_runs, Span::Whole);
            g.close("}");
        }
        g.close("}");
        g.close("}");
        g.line(&format!("r0 += tiles * {tile_runs} * {nj};"));
        g.line("continue;");
        g.close("}");
    }
    if rows_left {
        // (the caller's loop reduces them one by one)
        g.line("break;");
        g.close("}");
        return;
    }
    g.line(&format!("const int64_t left = {nj} - {j0} < end - r0 ? {nj} - {j0} : end - r0;"));
    g.open(&format!("if (left >= {wide}) {{"));
    block.write(g, &outer, "r0", &wide.to_string(), 1, Span::Whole);
    g.line(&format!("r0 += {wide};"));
    g.close("} else {");
    g.indent_in();
    block.write(g, &outer, "r0", "left", 1, Span::Whole);
    g.line("r0 += left;");
    g.close("}");
    g.close("}");
}

/// The loop that copies a block of the shared dimension's packed reads,
/// `kb .. ke` at the run's `width` columns from `jb`, into their buffers
/// `names`, `run` apart
/// (Note [Packed operands]); `outer` is the index of the range's first
/// row, whose row the reads do not depend on.
fn pack_block(
    g: &mut ExpGen<'_>,
    d: &DelayedArray,
    outer: &[String],
    p: &Packed,
    names: &[String],
    run: usize,
    width: &str,
) {
    let rank = outer.len() + 1;
    let k = g.fresh("k");
    g.open(&format!("for (int64_t {k} = kb; {k} < ke; {k}++) {{"));
    let saved = g.open_lane_loop(width, run);
    let mut ix = outer.to_vec();
    ix[rank - 2] = g.bind(ScalarTy::I64, "jb + q");
    ix.push(k.clone());
    let v = apply_at(g, d, &p.reads, Vec::new(), &ix);
    for (leaf, name) in v.leaves.iter().zip(names) {
        g.line(&format!("{name}[({k} - kb) * {run} + q] = {leaf};"));
    }
    g.close_lane_loop(saved);
    g.close("}");
}

/// What every block of `column_blocks` shares.
struct Block<'a> {
    f: &'a Fun,
    seed: Option<&'a CVal>,
    src: &'a Source,
    sh: &'a [String],
    lanes: &'a [String],
    /// The rows of a block outside tiles (`run_lanes` where the
    /// range is tiled, Note [Wide column blocks]).
    wide: usize,
    obufs: &'a [String],
    elt: &'a EltTy,
    keep: Option<&'a Kept>,
    loc: SrcLoc,
    /// The packed reads of a tiled block of the shared dimension, and
    /// their buffers (Note [Packed operands]).
    pack: Option<(&'a Packed, &'a [String])>,
}

/// The elements of its rows a block reduces.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Span {
    /// All, from the seed or the first, into the output.
    Whole,
    /// Elements `kb .. ke`, after the block of the shared dimension
    /// before, whose accumulators it left in the output (Note [Blocks of
    /// the shared dimension]).
    Blocked,
    /// Elements `lo .. hi` (not empty), into each row's partial `row *
    /// P[0] + c % P[0]` (Note [Column blocks in pieces]).
    Piece,
}

impl Block<'_> {
    /// The block of `runs` runs of `width` rows whose first row is `first`
    /// at index `outer`: lane `(p, q)` reduces `span` of row `(.., i + p,
    /// j + q)`.
    fn write(&self, g: &mut ExpGen<'_>, outer: &[String], first: &str, width: &str, runs: usize, span: Span) {
        let (rank, n) = (self.sh.len(), &self.sh[self.sh.len() - 1]);
        let nj = &self.sh[rank - 2];
        let run = run_lanes(self.elt);
        let slot = if runs > 1 { format!("p * {run} + q") } else { "q".to_string() };
        let lane = CVal {
            ty: self.elt.clone(),
            leaves: self.lanes.iter().map(|l| format!("{l}[{slot}]")).collect(),
        };
        // the loops over the lanes, a statement per lane
        let over_lanes = |g: &mut ExpGen<'_>, body: &mut dyn FnMut(&mut ExpGen<'_>)| {
            if runs > 1 {
                g.open(&format!("for (int p = 0; p < {runs}; p++) {{"));
            }
            let saved = g.open_lane_loop(width, run.max(self.wide));
            body(g);
            g.close_lane_loop(saved);
            if runs > 1 {
                g.close("}");
            }
        };
        let at = if runs > 1 { format!("{first} + p * {nj} + q") } else { format!("{first} + q") };
        // element k of lane (p, q)'s row
        let element = |g: &mut ExpGen<'_>, k: &str| {
            let mut ix = outer.to_vec();
            if runs > 1 {
                ix[rank - 3] = g.bind(ScalarTy::I64, &format!("{} + p", outer[rank - 3]));
            }
            ix[rank - 2] = g.bind(ScalarTy::I64, &format!("{} + q", outer[rank - 2]));
            ix.push(k.to_string());
            let v = match (self.pack, self.src) {
                (Some((p, names)), Source::Delayed(d)) if span == Span::Blocked => {
                    // the packed reads from their buffers (Note [Packed operands])
                    let args = (p.tys.iter().zip(names))
                        .map(|(&t, name)| CVal {
                            ty: EltTy::Scalar(t),
                            leaves: vec![format!("{name}[({k} - kb) * {run} + q]")],
                        })
                        .collect();
                    apply_at(g, d, &p.element, args, &ix)
                }
                _ => read_ix(g, self.src, &ix, self.loc),
            };
            match self.keep {
                Some(keep) => keep.split(g, &format!("({at}) * {n} + {k}"), v),
                None => v,
            }
        };
        let from = if self.seed.is_some() { "0" } else { "1" };
        if span == Span::Blocked {
            g.open("if (kb == 0) {");
        }
        over_lanes(g, &mut |g| {
            let x = match (self.seed, span) {
                (_, Span::Piece) => element(g, "lo"),
                (Some(z), _) => z.clone(),
                (None, _) => element(g, "0"),
            };
            store(g, self.lanes, &slot, &x);
        });
        if span == Span::Blocked {
            g.close("} else {");
            g.indent_in();
            over_lanes(g, &mut |g| {
                let partial = CVal {
                    ty: self.elt.clone(),
                    leaves: self.obufs.iter().map(|o| format!("{o}[{at}]")).collect(),
                };
                store(g, self.lanes, &slot, &partial);
            });
            g.close("}");
        }
        let (from, to) = match span {
            Span::Whole => (from.to_string(), n.as_str()),
            Span::Blocked => (format!("kb == 0 ? {from} : kb"), "ke"),
            Span::Piece => ("lo + 1".to_string(), "hi"),
        };
        let k = g.fresh("k");
        g.open(&format!("for (int64_t {k} = {from}; {k} < {to}; {k}++) {{"));
        over_lanes(g, &mut |g| {
            let x = element(g, &k);
            let v = g.apply(self.f, vec![lane.clone(), x]);
            store(g, self.lanes, &slot, &v);
        });
        g.close("}");
        let to = if span == Span::Piece { format!("({at}) * P[0] + c % P[0]") } else { at.clone() };
        over_lanes(g, &mut |g| store(g, self.obufs, &to, &lane));
    }
}

/// Whether a reduction with `f` over elements of type `elt` keeps
/// interleaved lanes (Note [Multi-accumulator reductions]): elements with
/// a float leaf, whose other leaves are floats or integers of 32 or 64
/// bits (a count beside sums: k-means' `(x, y, n)`, whose in-order float
/// sums kept the whole tuple's loop scalar).
fn lanes(f: &Fun, elt: &EltTy) -> bool {
    let leaves = elt.leaves();
    let float = |t: &ScalarTy| matches!(t, ScalarTy::F32 | ScalarTy::F64);
    let wide = |t: &ScalarTy| matches!(t, ScalarTy::I32 | ScalarTy::I64 | ScalarTy::U32 | ScalarTy::U64);
    leaves.iter().any(float) && leaves.iter().all(|t| float(t) || wide(t)) && commutative(f)
}

// Note [Gathers in order]
// A source that reads an array at a position read from another (a
// gather: SMVM's `x[col[k]]`, PageRank's pull form `shares[source[k]]`)
// reduces in order, one element after another, not in lanes: GCC turns
// the lanes' reads into vector gathers, which were slower than the
// scalar loop on both machines of docs/benchmarks.md, though the loop
// waits on its adds. On the Intel Xeon, PageRank's pull form
// (`accelerate-bench pagerank --size large`, ten iterations, the lanes
// and the in-order program timed in one process, four runs) took 429 to
// 485 ms in lanes and 312 to 371 in order (rayon's loop, which adds in
// order too, 320 to 395); in a scratch program, a sum by segments of
// 2^24 reads of a table through an index (64 segments, medians of 15
// runs) took 12.6 to 14 ms in lanes and 9.3 to 11.8 in order for tables
// of 256 and 16384 floats, and alike (52 to 60 ms) for 2^22 floats,
// whose reads miss the cache. (Lanes kept scalar with `ACC_SCALAR_FLOAT`, so that GCC made no
// gathers, were no faster than the vector lanes.) On the EPYC, short
// rows had shown the same (Note [Short ranges in order]). Only a read
// whose position changes along the row because of another read is a
// gather: a segment's or a row's offset read by its row (the lifted
// folds of nested programs, `data[offset[row] + k]`) is the same along
// the row, and its reads are in order; so is a rank-0 array's value, one
// for the whole kernel (Note [Rank-0 reads]). The analysis (`along`)
// follows the index function, whose last component is the position
// along the row, and takes a loop's state as changing.

/// Whether a long range of `src`'s elements of type `elt` reduces with
/// `f` in interleaved lanes (Note [Multi-accumulator reductions]), not in
/// order: `f` and `elt` allow lanes and `src` does not gather (Note
/// [Gathers in order]).
fn in_lanes(g: &ExpGen<'_>, f: &Fun, elt: &EltTy, src: &Source) -> bool {
    lanes(f, elt) && !gathers(g, src)
}

/// Whether `src` gathers (Note [Gathers in order]): read through its
/// index function, whose last component is the position along the row.
fn gathers(g: &ExpGen<'_>, src: &Source) -> bool {
    let Source::Delayed(d) = src else { return false };
    let rank0 = |a: usize| g.is_rank0(a);
    let f = &d.index;
    let mut found = false;
    let mut env: Vec<Along> = f.params.iter().map(|_| Along::Index(d.rank())).collect();
    along(&f.body, &mut env, &rank0, &mut found);
    found
}

/// How a value changes along a row (Note [Gathers in order]).
#[derive(Clone, Copy)]
enum Along {
    /// The element's index, of this rank: its last component is the
    /// position along the row.
    Index(usize),
    /// A value that changes along the row (`varies`), and does so
    /// because it was read at a position that does (`read`).
    Val { varies: bool, read: bool },
}

impl Along {
    fn val(self) -> (bool, bool) {
        match self {
            Along::Index(_) => (true, false),
            Along::Val { varies, read } => (varies, read),
        }
    }

    fn join(self, other: Along) -> Along {
        let ((v1, r1), (v2, r2)) = (self.val(), other.val());
        Along::Val { varies: v1 || v2, read: r1 || r2 }
    }
}

/// How `e` changes along the row, where `env` says so of its variables;
/// sets `found` at a read whose position changes because of a read.
fn along(e: &OpenExp, env: &mut Vec<Along>, rank0: &dyn Fn(usize) -> bool, found: &mut bool) -> Along {
    const SAME: Along = Along::Val { varies: false, read: false };
    const ANY: Along = Along::Val { varies: true, read: true };
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &e.kind {
        ExpKind::Var(i) => env.len().checked_sub(i + 1).map_or(ANY, |p| env[p]),
        ExpKind::Prj(j, t) => match along(t, env, rank0, found) {
            Along::Index(rank) => Along::Val { varies: j + 1 == rank, read: false },
            other => other,
        },
        ExpKind::Let(b, body) => {
            let v = along(b, env, rank0, found);
            env.push(v);
            let r = along(body, env, rank0, found);
            env.pop();
            r
        }
        ExpKind::Index { array, index } | ExpKind::LinearIndex { array, index } => {
            let (varies, read) = along(index, env, rank0, found).val();
            *found |= read;
            // a read at a position that changes along the row changes
            // with it, as data; one at a position that does not (a
            // segment's offset, by its row) is the same along the row
            let varies = varies && !rank0(*array);
            Along::Val { varies, read: varies }
        }
        ExpKind::While { cond, body, init } => {
            along(init, env, rank0, found);
            // the state, conservatively, as read at changing positions
            for f in [cond, body] {
                let depth = env.len();
                env.extend(f.params.iter().map(|_| ANY));
                along(&f.body, env, rank0, found);
                env.truncate(depth);
            }
            ANY
        }
        ExpKind::ALet(..) => {
            *found = true;
            ANY
        }
        ExpKind::Const(_) | ExpKind::Shape { .. } => SAME,
        _ => {
            let mut v = SAME;
            accelerate_ir::visit::each_child(e, |c| v = v.join(along(c, env, rank0, found)));
            v
        }
    })
}

/// The C function `_part` of a kernel that cuts long rows into pieces (a
/// fold's, and a scan's first phase): pieces `start .. end`, `P[0]` pieces
/// per row of `P[1]` elements each, each reduced without the seed into the
/// temporary array `t` at its own position; with `column_part`, each
/// piece for a block of rows (Note [Column blocks in pieces]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn piece_totals(
    k: &mut KernelGen,
    out: &mut String,
    f: &Fun,
    src: &Source,
    rank: usize,
    elt: &EltTy,
    kept: Option<&EltTy>,
    column_part: Option<usize>,
    what: &str,
    loc: SrcLoc,
) {
    k.with_fast_path(out, |k, out| {
        k.open_function(out, "_part", what, loc);
        let (_, next) = KernelGen::out_buffers(out, "o", elt, k.first_own_buf());
        let (tbufs, next) = KernelGen::out_buffers(out, "t", elt, next);
        let keep = kept_buffers(out, kept, elt, next);
        let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
        let n = sh[rank - 1].clone();
        let any_order = k.any_order();
        // (Note [Absorbed reductions stop])
        let stop_absorbed = any_order && !k.fast() && keep.is_none();
        let mut g = k.exp_gen(1);
        g.stop_absorbed = stop_absorbed;
        g.open("for (int64_t c = start; c < end; c++) {");
        if column_part.is_none() {
            g.line(&format!("const int64_t row = c / P[0], base = row * {n};"));
        }
        g.line("const int64_t lo = (c % P[0]) * P[1];");
        g.line(&format!("const int64_t hi = lo + P[1] < {n} ? lo + P[1] : {n};"));
        if column_part.is_some() {
            // the block of rows `r0 .. rend`
            g.line("int64_t r0 = (c / P[0]) * P[2];");
            g.line("const int64_t rend = r0 + P[2] < P[3] ? r0 + P[2] : P[3];");
        }
        match column_part {
            Some(wide) if any_order => {
                let block = Block {
                    f,
                    seed: None,
                    src,
                    sh: &sh,
                    lanes: &[],
                    wide,
                    obufs: &tbufs,
                    elt,
                    keep: keep.as_ref(),
                    loc,
                    pack: None,
                };
                column_pieces(&mut g, block);
            }
            Some(_) => {
                // the same pieces, each row of the block in turn
                g.open("for (int64_t row = r0; row < rend; row++) {");
                g.line(&format!("const int64_t base = row * {n};"));
                let row = Row::new(&mut g, src, &sh, "row", "base").keeping(keep.as_ref());
                let r = reduce1(&mut g, f, src, &row, "lo", "hi", loc);
                store(&mut g, &tbufs, "row * P[0] + c % P[0]", &r);
                g.close("}");
            }
            None => {
                let row = Row::new(&mut g, src, &sh, "row", "base").keeping(keep.as_ref());
                let r = reduce1(&mut g, f, src, &row, "lo", "hi", loc);
                store(&mut g, &tbufs, "c", &r);
            }
        }
        g.close("}");
        let parts = g.into_parts();
        // Note [Latency-bound lanes]
        k.latency_bound = column_part.is_none() && elt.leaves().iter().any(|t| t.is_float());
        k.close_function(out, parts);
    });
}

// Note [Column blocks in pieces]
// A reduction down the columns of a tall, narrow matrix (`transpose`
// then `sum` of an `n x d` matrix with `d` in the tens: the gradient of
// a linear model, `X^T r`) has few rows, each very long. Reduced by
// whole rows in blocks (Note [Wide column blocks]) it had one block, or
// a block of half the columns per worker, each worker then reading every
// line of the matrix for half of each row's elements; reduced in pieces
// of single rows (`_part`), each step of a piece read a new line. So
// where the source pays for column blocks, `_part`'s chunk is a piece of
// `P[1]` steps of the shared dimension for a block of `P[2]` neighbouring
// rows (of `P[3]`): lane `q` reduces the piece of row `r0 + q` in order,
// and a step reads one stretch of a line of the matrix, as a block of
// `_rows` does; each row's partials land where `_combine` folds them, as
// for the pieces of single rows. The executor takes these pieces where
// the blocks are fewer than twice the workers. A function that must keep
// its order of evaluation (a checked function, Note [Optimistic
// checks]) reduces the same pieces a row at a time.

/// The pieces of `_part`'s chunk `c` over its block of neighbouring rows
/// `r0 .. rend` (Note [Column blocks in pieces]): each row's elements `lo
/// .. hi`, in order, into its partial `row * P[0] + c % P[0]` of
/// `block.obufs`; leaves `r0` at `rend`.
fn column_pieces(g: &mut ExpGen<'_>, block: Block<'_>) {
    let (sh, elt) = (block.sh, block.elt);
    let rank = sh.len();
    let nj = &sh[rank - 2];
    let lanes: Vec<String> = elt.leaves().iter().map(|_| g.fresh("lane")).collect();
    for (l, t) in lanes.iter().zip(elt.leaves()) {
        g.line(&format!("{} {l}[{}];", c_type(t), block.wide));
    }
    let block = Block { lanes: &lanes, ..block };
    g.open("while (r0 < rend) {");
    let outer = unravel(g, "r0", &sh[..rank - 1]);
    let j0 = outer[rank - 2].clone();
    g.loop_invariant.push("r0".into());
    g.loop_invariant.extend(outer.iter().cloned());
    g.line(&format!("const int64_t left = {nj} - {j0} < rend - r0 ? {nj} - {j0} : rend - r0;"));
    block.write(g, &outer, "r0", "left", 1, Span::Piece);
    g.line("r0 += left;");
    g.close("}");
}

/// The reduction of positions `base + lo .. base + hi` of a row, with the
/// seed if any (an empty range gives the seed; without a seed the range
/// is not empty).
#[allow(clippy::too_many_arguments)]
pub(crate) fn reduce_row(
    g: &mut ExpGen<'_>,
    f: &Fun,
    seed: Option<&CVal>,
    src: &Source,
    row: &Row,
    lo: &str,
    hi: &str,
    loc: SrcLoc,
) -> CVal {
    match seed {
        None => reduce1(g, f, src, row, lo, hi, loc),
        Some(z) if !in_lanes(g, f, &z.ty, src) => {
            // in order from the seed: the interpreter's order exactly
            let acc = declare(g, "acc", z);
            fold_in_order(g, f, src, row, lo, hi, &acc, loc);
            acc
        }
        Some(z) => {
            // a short range folds from the seed in order (the interpreter's
            // order exactly); a long one reduces with lanes, then the seed
            let acc = declare(g, "acc", z);
            g.open(&format!("if ({hi} - {lo} >= {}) {{", 2 * LANES));
            let r = reduce1(g, f, src, row, lo, hi, loc);
            let v = g.apply(f, vec![z.clone(), r]);
            assign(g, &acc, &v);
            g.close("} else {");
            g.indent_in();
            fold_in_order(g, f, src, row, lo, hi, &acc, loc);
            g.close("}");
            acc
        }
    }
}

// Note [Short ranges in order]
// A range folded in order (a short segment or row from the seed, or any
// range of a function without lanes) is a chain of dependent steps,
// which no vector unit shortens. GCC 12 still vectorises it when the
// accumulator is a float: the adds stay in order, as a chain of shuffles
// and scalar adds, and the reads become vector loads, or gathers where
// the source reads through an index (a sparse product's `x[col[k]]`).
// Gathers are slow on AMD's cores: SMVM at `--size small` (rows of 5 to
// 12 non-zeros) took 0.25 ms of one core so, against 0.19 ms scalar and
// 0.15 ms for Rust's loop. So each float leaf of the accumulator passes
// through `ACC_SCALAR_FLOAT`, an empty `asm` that the vectoriser cannot
// see through, once a step.

// Note [Absorbed reductions stop]
// Once the accumulator of an `or` holds `true` (of an `and`, `false`),
// nothing left in the range can change it: Rust's `Iterator::any` and
// `all` stop there. k-means' `changed` (`zip_with (/=)` then `or` over
// 2^20 assignments) took 7% of the program's samples reading both
// assignments to the end on every iteration but the last, where the
// first change had decided it. So a reduction by `||`, `|`, `&&` or `&`
// of booleans that folds in order checks its accumulator every
// `ABSORB_BLOCK` elements and stops at the first block after which it
// holds the absorbing value. Only a function that raises nothing (the
// form `with_fast_path` writes when no check can fail, `any_order`
// outside a fast function) stops, since a skipped element could have
// failed and the error must be reported; and only one that keeps nothing
// (a `fold_keep` writes every element it reads). A skipped element that
// would have run a long loop is simply not computed: the result is the
// same, as the interpreter's, which folds every element.

/// Elements an absorbed reduction folds between checks of its accumulator
/// (Note [Absorbed reductions stop]): 16 KiB of `i32` reads.
const ABSORB_BLOCK: usize = 4096;

/// `acc = f(acc, x)` for the positions `base + lo .. base + hi` in order
/// (Note [Short ranges in order]), stopping early where the generator
/// allows it and `f` has absorbed `acc` (Note [Absorbed reductions stop]).
#[allow(clippy::too_many_arguments)]
fn fold_in_order(
    g: &mut ExpGen<'_>,
    f: &Fun,
    src: &Source,
    row: &Row,
    lo: &str,
    hi: &str,
    acc: &CVal,
    loc: SrcLoc,
) {
    // Note [Absorbed reductions stop]
    if let (true, Some(held)) = (g.stop_absorbed, absorbed(f, acc)) {
        let (kb, ke) = (g.fresh("kb"), g.fresh("ke"));
        g.open(&format!("for (int64_t {kb} = {lo}; {kb} < {hi} && !({held}); {kb} += {ABSORB_BLOCK}) {{"));
        g.line(&format!("const int64_t {ke} = {hi} - {kb} > {ABSORB_BLOCK} ? {kb} + {ABSORB_BLOCK} : {hi};"));
        g.stop_absorbed = false;
        fold_in_order(g, f, src, row, &kb, &ke, acc, loc);
        g.stop_absorbed = true;
        g.close("}");
        return;
    }
    let k = g.fresh("k");
    // (binary16 is stored as a 16-bit integer)
    let float = |t: &ScalarTy| matches!(t, ScalarTy::F32 | ScalarTy::F64);
    let header = format!("for (int64_t {k} = {lo}; {k} < {hi}; {k}++) {{");
    // a loop kept scalar leaves it on a failed check in a fast function
    // (Note [Optimistic checks in loops]); one the vectoriser may take
    // keeps its checks branch-free
    let scalar = acc.ty.leaves().iter().any(float);
    if scalar {
        g.open_scalar_loop(&header);
    } else {
        g.open(&header);
    }
    let x = row.read(g, src, &k, loc);
    let v = g.apply(f, vec![acc.clone(), x]);
    assign(g, acc, &v);
    for (leaf, t) in acc.leaves.iter().zip(acc.ty.leaves()) {
        if float(&t) {
            g.line(&format!("ACC_SCALAR_FLOAT({leaf});"));
        }
    }
    if scalar {
        g.close_scalar_loop();
    } else {
        g.close("}");
    }
}

/// The reduction of the non-empty range `base + lo .. base + hi`, with
/// `LANES` accumulators when it is long enough and `lanes` allows them.
pub(crate) fn reduce1(
    g: &mut ExpGen<'_>,
    f: &Fun,
    src: &Source,
    row: &Row,
    lo: &str,
    hi: &str,
    loc: SrcLoc,
) -> CVal {
    let x0 = row.read(g, src, lo, loc);
    let acc = declare(g, "acc", &x0);
    if !in_lanes(g, f, &acc.ty, src) {
        fold_in_order(g, f, src, row, &format!("{lo} + 1"), hi, &acc, loc);
        return acc;
    }
    let k = g.fresh("k");
    g.line(&format!("int64_t {k} = {lo} + 1;"));
    // K accumulators
    g.open(&format!("if ({hi} - {lo} >= {}) {{", 2 * LANES));
    let lanes: Vec<String> = acc.ty.leaves().iter().map(|_| g.fresh("lane")).collect();
    for (l, t) in lanes.iter().zip(acc.ty.leaves()) {
        g.line(&format!("{} {l}[{LANES}];", c_type(t)));
    }
    let lane_val =
        |q: &str| CVal { ty: acc.ty.clone(), leaves: lanes.iter().map(|l| format!("{l}[{q}]")).collect() };
    let saved = g.open_lane_loop(&LANES.to_string(), LANES);
    let q = g.bind(ScalarTy::I64, &format!("{lo} + q"));
    let x = row.read(g, src, &q, loc);
    for (l, v) in lanes.iter().zip(&x.leaves) {
        g.line(&format!("{l}[q] = {v};"));
    }
    g.close_lane_loop(saved);
    g.line(&format!("{k} = {lo} + {LANES};"));
    g.open(&format!("for (; {k} + {LANES} <= {hi}; {k} += {LANES}) {{"));
    let saved = g.open_lane_loop(&LANES.to_string(), LANES);
    let kq = g.bind(ScalarTy::I64, &format!("{k} + q"));
    let x = row.read(g, src, &kq, loc);
    let v = g.apply(f, vec![lane_val("q"), x]);
    for (l, v) in lanes.iter().zip(&v.leaves) {
        g.line(&format!("{l}[q] = {v};"));
    }
    g.close_lane_loop(saved);
    g.close("}");
    // the lanes, combined in order
    assign(g, &acc, &lane_val("0"));
    g.open(&format!("for (int q = 1; q < {LANES}; q++) {{"));
    let v = g.apply(f, vec![acc.clone(), lane_val("q")]);
    assign(g, &acc, &v);
    g.close("}");
    g.close("}");
    // the rest, one at a time
    g.open(&format!("for (; {k} < {hi}; {k}++) {{"));
    let x = row.read(g, src, &k, loc);
    let v = g.apply(f, vec![acc.clone(), x]);
    assign(g, &acc, &v);
    g.close("}");
    acc
}

/// Chunk boundaries `bounds` of a reduction's rows moved down to a
/// multiple of `unit` rows, a tile's (Note [Tiles in registers]), so
/// that only the last chunk has rows outside tiles; chunks that become
/// empty are dropped.
fn whole_tiles(mut bounds: Vec<usize>, unit: usize) -> Vec<usize> {
    let last = bounds.len() - 1;
    if unit > 0 {
        for b in &mut bounds[1..last] {
            *b -= *b % unit;
        }
    }
    bounds.dedup();
    bounds
}

#[cfg(test)]
mod tests {
    use super::whole_tiles;

    #[test]
    fn chunks_end_at_whole_tiles() {
        // 1024 x 1024 rows in 8 chunks, tiles of 6 runs of 1024 rows
        let bounds: Vec<usize> = (0..=8).map(|c| c * 1024 * 1024 / 8).collect();
        let unit = 6 * 1024;
        let got = whole_tiles(bounds, unit);
        assert_eq!(got[0], 0);
        assert_eq!(*got.last().unwrap(), 1024 * 1024);
        assert!(got.windows(2).all(|w| w[0] < w[1]), "{got:?}");
        assert!(got[1..got.len() - 1].iter().all(|b| b % unit == 0), "{got:?}");
        assert_eq!(got.len(), 9);
        // chunks smaller than a tile merge; the range's ends stay
        assert_eq!(whole_tiles(vec![0, 3, 7, 10], 8), vec![0, 10]);
        assert_eq!(whole_tiles(vec![0, 5], 8), vec![0, 5]);
    }
}

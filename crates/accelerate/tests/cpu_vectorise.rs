//! The loops that carry the work of the benchmark programs vectorise:
//! GCC's own report (`-fopt-info-vec-optimized`) on the generated C of a
//! dot product (Note [Multi-accumulator reductions]), saxpy, an n-body
//! step's interactions read by checked index (Note [Optimistic checks])
//! a Mandelbrot escape loop (Note [Loops in lockstep]), a stencil's
//! interior (`cpu/stencil.rs`), an argmin over short rows (Note [Short
//! rows]), a matrix product's column blocks (Note [Column blocks]) and
//! k-means' uniform loop over the centroids (Note [Uniform loops]); and
//! the audio program's bins, whose loops are jammed (Note [Jammed loops]).
//!
//! Skipped, saying so, without a C compiler or with one that is not GCC.

mod common;

use accelerate::prelude::*;
use accelerate::{compile_with, Backend, Config, CpuOptions, Program};
use accelerate_programs::{dotp, saxpy};

/// The loops GCC vectorised in each function of a program's C, or `None`
/// (after saying why) where this cannot be checked.
fn report<A: accelerate::exec::ProgramArgs, R: Arrays>(p: &Program<A, R>) -> Option<Vec<(String, usize)>> {
    let source = p.c_source().expect("compiled for the CPU");
    match accelerate::backend::cpu::vectorised_loops(source).unwrap() {
        Some(r) => Some(r),
        None => {
            eprintln!("skipped: the C compiler is not GCC");
            None
        }
    }
}

fn cpu() -> Option<Config> {
    match accelerate::backend::cpu::unavailable() {
        None => Some(Config::default().with_backend(Backend::Cpu)),
        Some(why) => {
            eprintln!("skipped: the CPU backend is unavailable here: {why}");
            None
        }
    }
}

/// The generated C of `f` compiled with `cpu`.
fn c_of<Args: accelerate::exec::ProgramArgs, F: accelerate::exec::AccFn<Args>>(f: F, cpu: &Config) -> String {
    compile_with(f, cpu.clone()).unwrap().c_source().expect("compiled for the CPU").to_string()
}

/// The C function of `c` whose text starts at the first `start` (`what`
/// it is, for the failure), to its closing brace.
fn function_at<'c>(c: &'c str, start: &str, what: &str) -> &'c str {
    let f = &c[c.find(start).unwrap_or_else(|| panic!("no {what}:\n{c}"))..];
    &f[..f.find("\n}\n").unwrap()]
}

/// Asserts that `function` of `program` has a vectorised loop.
fn vectorised(program: &str, report: &[(String, usize)], function: &str) {
    let n = report.iter().find(|(f, _)| f == function).map(|(_, n)| *n);
    assert!(n.is_some_and(|n| n > 0), "{program}: no vectorised loop in {function}: {report:?}");
}

/// The steps of `z <- z * z + c` (a real Mandelbrot) before `z * z`
/// exceeds 4, at most 255: a scalar loop per element.
fn escape_count(c: Exp<f32>) -> Exp<i32> {
    let end = while_loop(
        lift((constant(0.0f32), constant(0i32))),
        |s: &Exp<(f32, i32)>| {
            let (z, i) = s.unlift();
            (&z * &z).le(4.0f32) & i.lt(255i32)
        },
        move |s: &Exp<(f32, i32)>| {
            let (z, i) = s.unlift();
            lift((&z * &z + &c, i + 1i32))
        },
    );
    let (_, i) = end.unlift();
    i
}

#[test]
fn the_hot_loops_of_the_benchmark_programs_vectorise() {
    let Some(cpu) = cpu() else { return };

    let dotp = |xs: Acc<Vector<f32>>, ys: Acc<Vector<f32>>| dotp(&xs, &ys);
    let Some(r) = report(&compile_with(dotp, cpu.clone()).unwrap()) else { return };
    vectorised("dotp", &r, "k0_part");

    let saxpy = |xs: Acc<Vector<f32>>, ys: Acc<Vector<f32>>| saxpy(2.5, &xs, &ys);
    let r = report(&compile_with(saxpy, cpu.clone()).unwrap()).unwrap();
    vectorised("saxpy", &r, "k0");

    // every interaction reads both bodies by index, with bounds checks
    let nbody = |xs: Acc<Vector<f32>>| {
        let n = xs.size();
        let rows = xs.replicate(index0().all().fixed(&n));
        let cols = xs.replicate(index0().fixed(n).all());
        rows.zip_with(cols, |a, b| {
            let d = b - a;
            &d / (&d * &d + 0.01f32).sqrt()
        })
        .fold(0.0, |a, b| a + b)
    };
    let r = report(&compile_with(nbody, cpu.clone()).unwrap()).unwrap();
    vectorised("nbody", &r, "k0_rows_fast");
    vectorised("nbody", &r, "k0_part_fast");

    let mandelbrot = |cs: Acc<Vector<f32>>| cs.map(|c| escape_count(c.clone()));
    let r = report(&compile_with(mandelbrot, cpu.clone()).unwrap()).unwrap();
    vectorised("mandelbrot", &r, "k0");
    // the count used twice after the loop: the loop bound by a `let`, its
    // body the loop's tail (Note [A loop's tail in lockstep])
    let shaded = |cs: Acc<Vector<f32>>| {
        cs.map(|c| {
            let i = escape_count(c.clone());
            (&i * &i).cast::<f32>().sqrt() + i.cast::<f32>()
        })
    };
    let r = report(&compile_with(shaded, cpu.clone()).unwrap()).unwrap();
    vectorised("mandelbrot with a tail", &r, "k0");
    // the benchmark's: the limit a scalar argument, read in the loop's
    // condition; a read of a rank-0 array is one value for the kernel and
    // keeps the lockstep
    let view = accelerate_programs::mandelbrot::View::whole_set(64, 48);
    let bench =
        move |limit: Acc<Scalar<i32>>| accelerate_programs::mandelbrot::mandelbrot(64, 48, limit.the(), view);
    let r = report(&compile_with(bench, cpu.clone()).unwrap()).unwrap();
    vectorised("mandelbrot with its limit an argument", &r, "k0");

    // the interior of a stencil reads its neighbours with no boundary
    // arithmetic, in a loop of its own
    let blur = |m: Acc<Matrix<f32>>| {
        m.stencil(
            |p: [[Exp<f32>; 3]; 3]| {
                p.into_iter().flatten().fold(constant(0.0f32), |s, x| s + x) * (1.0f32 / 9.0)
            },
            Boundary::clamp(),
        )
    };
    let r = report(&compile_with(blur, cpu.clone()).unwrap()).unwrap();
    vectorised("blur", &r, "k0");

    // a float max is a select, not a call to libm's fmax
    let maxima = |m: Acc<Matrix<f64>>| m.fold(f64::NEG_INFINITY, |a, b| a.max(b));
    let r = report(&compile_with(maxima, cpu.clone()).unwrap()).unwrap();
    vectorised("maxima", &r, "k0_rows");

    // the per-row solver, nested: its fold reads each running row through
    // the packing's gather, the column by the fold's own index (Note
    // [Own-index checks], Note [Components in range]); every loop of its
    // fast form vectorises, the loop over the lanes included
    let rowsolve = |m: Acc<Matrix<f64>>| accelerate_programs::rowsolve::thresholds_nested(&m);
    // (GCC 12 vectorises 4 loops of its rows function; with the column's
    // checks left in, 2, and the main loop over the lanes stayed scalar)
    let r = report(&compile_with(rowsolve, cpu.clone()).unwrap()).unwrap();
    let fold = r.iter().filter(|(f, _)| f.ends_with("_rows_fast")).map(|(_, n)| *n).max();
    assert!(fold.is_some_and(|n| n >= 4), "rowsolve: the fold's lanes do not vectorise: {r:?}");

    // k-means' nearest centroid: an argmin over (distance, index) pairs in
    // rows of a few elements, a row per lane (Note [Short rows]); its
    // three loops over the lanes (first elements, steps, stores)
    // vectorise, where reducing a row at a time vectorised none
    let nearest = |p: Acc<Vector<(f32, f32)>>, c: Acc<Vector<(f32, f32)>>| {
        generate(index2(p.length(), c.length()), |ix| {
            let (i, j) = unindex2(ix);
            let (px, py) = p.index(index1(i)).unlift();
            let (cx, cy) = c.index(index1(j.clone())).unlift();
            let (dx, dy) = (px - cx, py - cy);
            lift((dx.clone() * dx + dy.clone() * dy, j))
        })
        .fold1(|a, b| cond(b.fst().lt(a.fst()), b.clone(), a.clone()))
        .map(|p| p.snd())
    };
    let r = report(&compile_with(nearest, cpu.clone()).unwrap()).unwrap();
    let fold = r.iter().find(|(f, _)| f == "k0_rows_fast").map(|(_, n)| *n);
    assert!(fold.is_some_and(|n| n >= 3), "nearest centroid: the short rows do not vectorise: {r:?}");

    // a matrix product written with `replicate` reads `b` down its
    // columns; blocks of neighbouring rows read along `b`'s rows (Note
    // [Column blocks]): the loops over the lanes of tiles and blocks
    // vectorise (GCC 12.2: 20 loops in its rows function, 17 without
    // the blocks, with the lanes' checks in a simd reduction; 15 since
    // Note [Lane flags]: every loop over a tile's or block's lanes but
    // those storing the lanes to the output is reported vectorised, and
    // the per-row path's loops over 16 lanes are reported neither way,
    // unrolled whole; the product runs in 0.7x the time it did; 9 since
    // Note [Floats in the source]: the six loops that start the lanes at
    // the seed 0.0, now a constant in the source, are no longer reported
    // (the same source with that zero read from `A->consts` again: 15),
    // and the product's time did not change)
    let matmul = |a: Acc<Matrix<f32>>, b: Acc<Matrix<f32>>| accelerate_programs::matmul::matmul(&a, &b);
    let r = report(&compile_with(matmul, cpu.clone()).unwrap()).unwrap();
    let fold = r.iter().find(|(f, _)| f == "k0_rows_fast").map(|(_, n)| *n);
    assert!(fold.is_some_and(|n| n >= 9), "matmul: the column blocks do not vectorise: {r:?}");

    // k-means' assignment: every point folds the same centroids, an
    // `sfoldl` whose counter is the same in every lane (Note [Uniform
    // loops]): its loops over the lanes vectorise (GCC 12.2: 6 loops,
    // 1 with the loop run one point at a time)
    let assign =
        |p: Acc<Vector<(f32, f32)>>, c: Acc<Vector<(f32, f32)>>| accelerate_programs::kmeans::nearest(&p, &c);
    let r = report(&compile_with(assign, cpu.clone()).unwrap()).unwrap();
    let lanes = r.iter().find(|(f, _)| f == "k0_fast").map(|(_, n)| *n);
    assert!(
        lanes.is_some_and(|n| n >= 3),
        "k-means' assignment: the lockstep loop does not vectorise: {r:?}"
    );

    // MD5's search reads each row's 16 words at fixed columns, checked
    // once before the loops (Note [Checks before the loops]), and
    // compares the digest with the target's words by `&&`, both sides
    // computed (Note [Both sides in fast functions]): the loop over the
    // words hashes several at once (GCC 12.2: not vectorised before)
    let md5 = |d: Acc<Matrix<u32>>, t: Acc<Vector<u32>>| accelerate_programs::md5::md5_search(&d, &t);
    let p = compile_with(md5, cpu).unwrap();
    let c = p.c_source().expect("compiled for the CPU");
    assert!(c.contains("if (acc_bad) return acc_bad;"), "md5: no checks before the loops");
    let r = report(&p).unwrap();
    vectorised("md5", &r, "k0_part_fast");
}

/// `fold_all` of a matrix reads it through a reshape to a vector, at the
/// positions of the reshaped shape, whose size the host checked equal to
/// the matrix's: those reads need no check (`c::kernel::trust`), and the
/// pieces' loop is a plain vectorised sum (the stream benchmark's
/// in-memory sum of squares took 43.6 ms with the checks, 11.9 without).
#[test]
fn a_fold_of_a_reshaped_matrix_reads_it_unchecked() {
    let Some(cpu) = cpu() else { return };
    let sum = |m: Acc<Matrix<i32>>| m.map(|x| x.cast::<i64>() * x.cast::<i64>()).fold_all(0i64, |a, b| a + b);
    let p = compile_with(sum, cpu).unwrap();
    let c = p.c_source().expect("compiled for the CPU");
    let part = &c[c.find("k0_part(").expect("a fold of long rows")..];
    let part = &part[..part.find("\n}\n").unwrap()];
    assert!(!part.contains("LINEAR_INDEX_OUT_OF_BOUNDS"), "the reads are checked:\n{part}");
    let Some(r) = report(&p) else { return };
    vectorised("a reshaped matrix's sum", &r, "k0_part");
}

/// A privatised permute's private copies start from the combining
/// function's identity, or from the defaults where it is idempotent, and
/// mark no position (Note [Privatised permutes]); a combining function
/// with neither still marks them (`u_0`, the marks' buffer, in its
/// `_private` function). `tests/backend_cpu.rs` checks the results.
#[test]
fn private_copies_mark_positions_only_without_an_identity() {
    let Some(cpu) = cpu() else { return };
    type Combine = fn(&Exp<f32>, &Exp<f32>) -> Exp<f32>;
    let cases: [(&str, Combine, bool); 4] = [
        ("+", |n, o| n + o, false),
        ("min", |n, o| n.min(o), false),
        ("max", |n, o| n.max(o), false),
        ("n * 0.5 + o", |n, o| n * 0.5f32 + o, true),
    ];
    for (name, combine, marked) in cases {
        let program = move |xs: Acc<Vector<f32>>, defaults: Acc<Vector<f32>>| {
            xs.permute(combine, defaults, |ix| just(index1(unindex1(ix) % 250i64)))
        };
        let p = compile_with(program, cpu.clone()).unwrap();
        let c = p.c_source().expect("compiled for the CPU");
        let private = function_at(c, "_private(", &format!("{name}: privatised permute"));
        assert_eq!(private.contains("u_0"), marked, "{name}: {private}");
    }
}

/// A privatised permute sends a dropped source to its copy's spare place
/// when the update cannot fail (a histogram of the source's own values),
/// and skips it when the update reads an array that it may read outside
/// (Note [Destinations by blocks]); `tests/backend_cpu.rs` checks the
/// results.
#[test]
fn dropped_sources_go_to_the_spare_place_only_when_their_update_cannot_fail() {
    let Some(cpu) = cpu() else { return };
    let to = |ix: &Exp<DIM1>| {
        let i = unindex1(ix);
        cond((&i % 7i64).eq(0i64), nothing(), just(index1(&i % 100i64)))
    };
    let own = move |xs: Acc<Vector<i64>>| xs.permute(|a, b| a + b, fill(index1(100i64), 0i64), to);
    let other = move |xs: Acc<Vector<i64>>, ys: Acc<Vector<i64>>| {
        generate(xs.shape(), move |ix| ys.index(ix)).permute(|a, b| a + b, fill(index1(100i64), 0i64), to)
    };
    let c_own = c_of(own, &cpu);
    let c_other = c_of(other, &cpu);
    for (name, c, dropped) in [("own", c_own, ": spare;"), ("other", c_other, ": -1;")] {
        let private = function_at(&c, "_private(", &format!("{name}: privatised permute"));
        let line = private
            .lines()
            .find(|l| l.contains("dst[i - b] ="))
            .unwrap_or_else(|| panic!("{name}: {private}"));
        assert!(line.trim_end().ends_with(dropped), "{name}: {line}");
    }
}

/// A privatised permute whose destinations are only read and range
/// checked (k-means' sums by cluster: a key read, compared with the
/// number of bins) updates each source as it reaches it; one whose
/// destinations are computed (a remainder) computes them a block at a
/// time first (Note [Destinations by blocks]). `tests/backend_cpu.rs`
/// checks both kinds' results against the interpreter.
#[test]
fn destinations_only_read_are_not_computed_by_blocks() {
    let Some(cpu) = cpu() else { return };
    let by_key = |keys: Acc<Vector<i32>>, xs: Acc<Vector<f32>>| {
        let ks = keys.clone();
        xs.permute(
            |a, b| a + b,
            fill(index1(16i64), 0.0f32),
            move |ix| {
                let k = ks.index(ix).cast::<i64>();
                cond(k.ge(0i64).and(k.lt(16i64)), just(index1(k)), nothing())
            },
        )
    };
    let by_remainder = |xs: Acc<Vector<f32>>| {
        xs.permute(|a, b| a + b, fill(index1(16i64), 0.0f32), |ix| just(index1(unindex1(ix) % 16i64)))
    };
    let c_key = c_of(by_key, &cpu);
    let c_rem = c_of(by_remainder, &cpu);
    for (name, c, blocks) in [("by key", c_key, false), ("by remainder", c_rem, true)] {
        let private = function_at(&c, "_private(", &format!("{name}: privatised permute"));
        assert_eq!(private.contains("dst[i - b] ="), blocks, "{name}: {private}");
    }
}

/// A sparse matrix (rows by their offsets) times `x`: a segmented fold
/// of a gather.
fn sparse_products(
    vals: Acc<Vector<f32>>,
    cols: Acc<Vector<i64>>,
    x: Acc<Vector<f32>>,
    offs: Acc<Vector<i64>>,
) -> Acc<Vector<f32>> {
    generate(vals.shape(), move |ix| vals.index(ix) * x.index(index1(cols.index(ix)))).fold_seg_offsets(
        0.0f32,
        |a, b| a + b,
        offs,
    )
}

/// A float reduction whose source gathers (reads at a position read from
/// another array, changing along the row) runs in order, without lanes;
/// one whose reads are in order, from an offset read by its row, or at a
/// position computed from a rank-0 array's value (the same for every
/// element), keeps its lanes (Note [Gathers in order]).
/// `tests/backend_cpu.rs` and `tests/ops_fold_seg.rs` check reductions'
/// results in both forms against the interpreter.
#[test]
fn reductions_of_gathers_run_in_order() {
    let Some(cpu) = cpu() else { return };
    let gather = |t: Acc<Vector<f32>>, ix: Acc<Vector<i64>>| {
        generate(ix.shape(), move |i| t.index(index1(ix.index(i)))).sum()
    };
    let shifted = |t: Acc<Vector<f32>>, by: Acc<Scalar<i64>>| {
        let n = t.length();
        let t2 = t.clone();
        generate(t.shape(), move |i| t2.index(index1((unindex1(i) + by.the()) % &n))).sum()
    };
    let squares = |t: Acc<Vector<f32>>| t.map(|x| x * x).sum();
    // rows of 64 read from an offset by row, as a lifted fold reads
    // its segments: in order along each row
    let by_rows = |data: Acc<Vector<f32>>, offs: Acc<Vector<i64>>| {
        let o = offs.clone();
        generate(index2(offs.length(), 64i64), move |ix| {
            let (r, k) = unindex2(ix);
            data.index(index1(o.index(index1(r)) + k))
        })
        .sum()
    };
    // (the loop of a long row's lanes, not the short rows' of a fold
    // whose rows may be short: `for (; r0 + 16 <= end; ...)`)
    let in_lanes =
        |c: &str| c.lines().any(|l| l.trim_start().starts_with("for (; k") && l.contains(" + 16 <= "));
    let c = c_of(gather, &cpu);
    assert!(!in_lanes(&c), "a gather in lanes:\n{c}");
    let c = c_of(shifted, &cpu);
    assert!(in_lanes(&c), "a read at a rank-0 array's offset without lanes:\n{c}");
    let c = c_of(squares, &cpu);
    assert!(in_lanes(&c), "squares without lanes:\n{c}");
    let c = c_of(by_rows, &cpu);
    assert!(in_lanes(&c), "rows read from their offsets without lanes:\n{c}");
    let c = c_of(sparse_products, &cpu);
    assert!(!in_lanes(&c), "a sparse product's rows in lanes:\n{c}");
}

/// A short segment folded in order keeps a float accumulator scalar
/// (Note [Short ranges in order]): GCC would vectorise the chain with
/// gathers for a sparse product's reads. An integer accumulator, whose
/// adds reassociate, is left to the vectoriser.
#[test]
fn short_float_segments_fold_in_scalar_code_and_integer_ones_may_vectorise() {
    let Some(cpu) = cpu() else { return };
    let ints = |xs: Acc<Vector<i64>>, offs: Acc<Vector<i64>>| xs.fold_seg_offsets(0i64, |a, b| a + b, offs);
    let c = c_of(sparse_products, &cpu);
    assert!(c.contains("ACC_SCALAR_FLOAT("), "{c}");
    let c = c_of(ints, &cpu);
    assert!(!c.contains("ACC_SCALAR_FLOAT("), "{c}");
}

/// A float row folded in order is a scalar loop, which a failed check
/// leaves in a fast function (Note [Optimistic checks in loops]) instead
/// of setting the flag in every step: SMVM's gather `x[col[k]]`. The
/// checked function reports the read (`tests/backend_cpu.rs`,
/// `sparse_products_with_a_column_out_of_bounds_agree`).
#[test]
fn checks_of_float_rows_in_order_leave_the_loop() {
    let Some(cpu) = cpu() else { return };
    let c = c_of(sparse_products, &cpu);
    let fast = function_at(&c, "_fast(", "a fast function");
    let scalar = fast.find("ACC_SCALAR_FLOAT(").expect("a row in order");
    let row = &fast[fast[..scalar].rfind("for (").unwrap()..scalar];
    assert!(row.contains("acc_bad = 1; break; }") && !row.contains("acc_bad |="), "{row}");
}

/// A fast function computes both sides of small branches, the checks of
/// a side masked by the condition under which the program takes it
/// (`acc_bad |= g & !ok`), so that the loop has no branch (Note [Both
/// sides in fast functions]); `tests/backend_cpu.rs` checks the results.
/// (This loop is not vectorised by GCC 12.2 all the same: its masks mix
/// 64-bit index comparisons with 32-bit element ones in one select.)
#[test]
fn fast_functions_compute_both_sides_of_small_branches() {
    let Some(cpu) = cpu() else { return };
    let program = |xs: Acc<Vector<i32>>, ds: Acc<Vector<i32>>| {
        let n = xs.size();
        generate(index1(n.clone()), move |ix| {
            let i = unindex1(ix);
            let d = ds.index(index1(&i));
            let back = cond(i.ge(1), xs.index(index1(&i - 1)), xs.index(index1(&i)));
            let scaled = cond(d.ne(0), xs.index(index1(&i)) * &d, constant(-1));
            let within = i.lt(&n - 1).and(xs.index(index1(&i + 1)).gt(3));
            back + scaled + within.select(1000, 0)
        })
        .fold(0i32, |a, b| a + b)
    };
    let p = compile_with(program, cpu).unwrap();
    let c = p.c_source().expect("compiled for the CPU");
    let fast = function_at(c, "k0_part_fast(", "a fast function of long rows");
    let masked = fast.lines().filter(|l| l.contains("acc_bad |= v") && l.contains(" & !")).count();
    assert!(masked >= 4, "no checks masked by their branch's condition:\n{fast}");
    let branches = fast.lines().filter(|l| l.trim_start().starts_with("if (")).count();
    assert_eq!(branches, 0, "a branch in the fast function:\n{fast}");
}

/// A fold nested in a `generate` runs as a scalar loop per element, whose
/// reads at the element's `k` and at its row's segment, and their
/// checks, are the same in every step: in the fast function they come
/// before the loop (Note [Invariant code out of scalar loops]), and only
/// the read of the row's element stays, with its check.
#[test]
fn reads_the_same_in_every_step_leave_scalar_loops() {
    let Some(cpu) = cpu() else { return };
    let p = compile_with(common::weighted_row_sums, cpu).unwrap();
    let c = p.c_source().expect("compiled for the CPU");
    let fast = function_at(c, "_fast(", "a fast function");
    let body = &fast[fast.find("for (;;) {").expect("a scalar loop")..];
    let checks = body.lines().filter(|l| l.contains("= 1; break; }")).count();
    assert_eq!(checks, 1, "checks left in the loop:\n{fast}");
}

/// The sum over `t < len` of `xs[off + t] * tw[(step * t) % 64]`: one
/// bin of a window (the audio program's, `examples/audio.rs`).
fn window_sum(
    xs: &Acc<Vector<f32>>,
    tw: &Acc<Vector<f32>>,
    off: Exp<i64>,
    len: Exp<i64>,
    step: Exp<i64>,
) -> Exp<f32> {
    let (xs, tw) = (xs.clone(), tw.clone());
    generate(index1(len), move |t| {
        let t = unindex1(t);
        xs.index(index1(&off + &t)) * tw.index(index1((&step * &t) % 64i64))
    })
    .fold(0.0f32, |a, b| a + b)
    .the()
}

/// The audio program's inner loop in small: for each row `(off, len)`,
/// the sum over `t` below `len` of `xs[off + t] * tw[(step * t) % 64]`,
/// `step` odd and growing with the row.
fn twiddled_sums(
    xs: Acc<Vector<f32>>,
    tw: Acc<Vector<f32>>,
    rows: Acc<Vector<(i64, i64)>>,
) -> Acc<Vector<f32>> {
    generate(index1(rows.length()), move |i| {
        let (off, len) = rows.index(i.clone()).unlift();
        window_sum(&xs, &tw, off, len, unindex1(i) * 2i64 + 1i64)
    })
}

/// A scalar loop over a counter is written twice in the fast function
/// (Note [Versioned counted loops]): without its checks and with
/// unsigned remainders, taken when the counter's range proves them, and
/// as it was otherwise.
#[test]
fn counted_loops_are_versioned_on_their_counters_range() {
    let Some(cpu) = cpu() else { return };
    let p = compile_with(twiddled_sums, cpu).unwrap();
    let c = p.c_source().expect("compiled for the CPU");
    let fast = function_at(c, "_fast(", "a fast function");
    let loops: Vec<&str> = fast.split("for (;;) {").skip(1).collect();
    assert_eq!(loops.len(), 2, "one loop, twice:\n{fast}");
    let (proven, general) = (loops[0], loops[1]);
    assert!(proven.contains("} else {"), "the proven loop first:\n{fast}");
    let checks = |code: &str| code.lines().filter(|l| l.contains("= 1; break; }")).count();
    assert_eq!(checks(proven), 0, "checks left in the proven loop:\n{fast}");
    assert!(!proven.contains("acc_rem_int64_t") && proven.contains("% (uint64_t)64"), "{fast}");
    assert_eq!(checks(general), 2, "the general loop checks both reads:\n{fast}");
    assert!(general.contains("acc_rem_int64_t"), "{fast}");

    // and both agree with plain Rust, where the range proves the checks
    // and where a row leaves `xs` (an error)
    let xs: Vec<f32> = (0..40).map(|k| k as f32 * 0.25 - 3.0).collect();
    let tw: Vec<f32> = (0..64).map(|k| (k as f32 * 0.1).cos()).collect();
    let rows = vec![(0i64, 10i64), (5, 0), (7, 33), (39, 1)];
    let want: Vec<f32> = rows
        .iter()
        .enumerate()
        .map(|(i, &(off, len))| {
            let step = 2 * i as i64 + 1;
            (0..len).fold(0.0f32, |a, t| a + xs[(off + t) as usize] * tw[((step * t) % 64) as usize])
        })
        .collect();
    let (xv, tv) = (Vector::from_elems(xs), Vector::from_elems(tw));
    let got = p.run((&xv, &tv, &Vector::from_elems(rows))).unwrap();
    assert_eq!(got.to_vec(), want);
    let err = p.run((&xv, &tv, &Vector::from_elems(vec![(35i64, 6i64)]))).unwrap_err();
    assert!(matches!(err, accelerate::Error::IndexOutOfBounds { .. }), "{err}");
}

/// The audio program's bins: for each window (a row: its offset in `xs`
/// and its length) and each of `bins` columns, the sum over the window
/// of its samples and the twiddle factors at `(2c + 1) t % 64`. Every
/// column of a row counts to the row's length; each reads its own
/// twiddles.
fn binned_sums(
    xs: Acc<Vector<f32>>,
    tw: Acc<Vector<f32>>,
    rows: Acc<Vector<(i64, i64)>>,
    bins: Acc<Scalar<i64>>,
) -> Acc<Matrix<f32>> {
    generate(index2(rows.length(), bins.the()), move |ix| {
        let (r, c) = unindex2(ix);
        let (off, len) = rows.index(index1(r)).unlift();
        window_sum(&xs, &tw, off, len, c * 2i64 + 1i64)
    })
}

/// Neighbouring elements whose loops count alike but read apart run
/// jammed, four in one loop (Note [Jammed loops]), which is still
/// versioned on its counter's range (Note [Versioned counted loops]);
/// the results are each element's sum alone, to the bit, and a window
/// that leaves `xs` is an error. Where the count differs between
/// neighbours (`twiddled_sums`: one window an element) nothing is jammed.
#[test]
fn loops_that_count_alike_are_jammed() {
    let Some(cpu) = cpu() else { return };
    let p = compile_with(binned_sums, cpu.clone()).unwrap();
    let c = p.c_source().expect("compiled for the CPU");
    let fast = function_at(c, "_fast(", "a fast function");
    let jammed = &fast[fast.find("4 elements' loops jammed").expect("a jammed block")..];
    let proven = jammed.split("for (;;) {").nth(1).expect("the jammed loop");
    let proven = &proven[..proven.find("} else {").expect("versioned")];
    assert!(!proven.contains("= 1; break; }") && !proven.contains("acc_rem_int64_t"), "{fast}");
    assert_eq!(proven.matches("% (uint64_t)64").count(), 4, "one twiddle a lane:\n{fast}");
    // both forms of the jammed loop stay scalar (Note [Jammed float chains
    // stay scalar]), and only they
    let scalar = "__asm__ volatile(\"\");";
    for form in jammed.split("for (;;) {").skip(1).take(2) {
        assert!(form.trim_start().starts_with(scalar), "{fast}");
    }
    assert_eq!(
        c.matches(scalar).count(),
        2,
        "the fast function's two forms, not the checked function's loop:\n{c}"
    );
    let other = compile_with(twiddled_sums, cpu).unwrap();
    let other = other.c_source().unwrap();
    assert!(!other.contains("loops jammed") && !other.contains(scalar), "{other}");

    let xs: Vec<f32> = (0..90).map(|k| (k as f32 * 0.37).sin()).collect();
    let tw: Vec<f32> = (0..64).map(|k| (k as f32 * 0.1).cos()).collect();
    let rows = vec![(0i64, 10i64), (5, 0), (7, 83), (89, 1), (30, 44)];
    for bins in [1i64, 3, 4, 7, 64] {
        let want: Vec<u32> = rows
            .iter()
            .flat_map(|&(off, len)| {
                let (xs, tw) = (&xs, &tw);
                (0..bins).map(move |c| {
                    let step = 2 * c + 1;
                    (0..len).fold(0.0f32, |a, t| a + xs[(off + t) as usize] * tw[((step * t) % 64) as usize])
                })
            })
            .map(f32::to_bits)
            .collect();
        let (xv, tv, rv) = (
            Vector::from_elems(xs.clone()),
            Vector::from_elems(tw.clone()),
            Vector::from_elems(rows.clone()),
        );
        let got = p.run((&xv, &tv, &rv, &Scalar::scalar(bins))).unwrap();
        assert_eq!(got.to_vec().into_iter().map(f32::to_bits).collect::<Vec<_>>(), want, "{bins} bins");
    }
    let (xv, tv) = (Vector::from_elems(xs), Vector::from_elems(tw));
    let err =
        p.run((&xv, &tv, &Vector::from_elems(vec![(80i64, 11i64)]), &Scalar::scalar(8i64))).unwrap_err();
    assert!(matches!(err, accelerate::Error::IndexOutOfBounds { .. }), "{err}");
}

/// Left scans of integers by `+`, `min` and the bit operators scan a
/// vector at a time (Note [Vector scans]), in the function over whole
/// rows and in the two over pieces (three phases, and chained); a float scan, a right scan and a
/// scan by another operator go an element at a time. Their results are
/// tested on every backend in `tests/ops_fold_scan.rs`.
#[test]
fn integer_left_scans_scan_a_vector_at_a_time() {
    let Some(cpu) = cpu() else { return };
    fn vectors<A: accelerate::exec::ProgramArgs, R: Arrays>(p: &Program<A, R>) -> usize {
        let c = p.c_source().expect("compiled for the CPU");
        let calls = c.matches("_vscan(cv, xs, ").count();
        // one call in `_rows`, two in `_piece` and two in `_chained` (the
        // piece that starts the row, and the others from their carries);
        // the helper in each target's width
        for width in [64, 32, 16] {
            assert!(calls == 0 || c.contains(&format!("__attribute__((vector_size({width})))")), "{c}");
        }
        calls
    }
    let sums = compile_with(|xs: Acc<Vector<i32>>| xs.scanl(0i32, |a, b| a + b), cpu.clone()).unwrap();
    assert_eq!(vectors(&sums), 5);
    let minima =
        compile_with(|xs: Acc<Matrix<i64>>| xs.map(|x| x * 3i64).scanl1(|a, b| a.min(b)), cpu.clone());
    assert_eq!(vectors(&minima.unwrap()), 5);
    let bits = compile_with(|xs: Acc<Vector<u8>>| xs.scanl(0u8, |a, b| a ^ b), cpu.clone()).unwrap();
    assert_eq!(vectors(&bits), 5);
    let floats = compile_with(|xs: Acc<Vector<f32>>| xs.scanl(0.0f32, |a, b| a + b), cpu.clone()).unwrap();
    assert_eq!(vectors(&floats), 0);
    let right = compile_with(|xs: Acc<Vector<i32>>| xs.scanr(0i32, |a, b| a + b), cpu.clone()).unwrap();
    assert_eq!(vectors(&right), 0);
    let products = compile_with(|xs: Acc<Vector<i32>>| xs.scanl(1i32, |a, b| a * b), cpu).unwrap();
    assert_eq!(vectors(&products), 0);

    let xs: Vec<i32> = (0..1000).map(|i| (i * 7919) % 23 - 11).collect();
    let got = sums.run(&Vector::from_elems(xs.clone())).unwrap().to_vec();
    let want: Vec<i32> = std::iter::once(0)
        .chain(xs.iter().scan(0i32, |a, &x| {
            *a += x;
            Some(*a)
        }))
        .collect();
    assert_eq!(got, want);
}

/// A vector scan is as wide as the target's vectors (Note [Vector
/// scans]): the same scans compiled for AVX2 without AVX-512 (32 bytes)
/// and for SSE2 only (16 bytes), besides this processor's own, give the
/// sequential results, at lengths around every lane count and through
/// the three phases and the chained pieces.
#[test]
#[cfg(target_arch = "x86_64")]
fn vector_scans_of_every_target_width_are_the_sequential_scans() {
    let Some(cpu) = cpu() else { return };
    for flags in [&[][..], &["-mno-avx512f"], &["-mno-avx2", "-mno-avx512f"]] {
        let cflags = cpu.cpu.cflags.iter().cloned().chain(flags.iter().map(|f| f.to_string())).collect();
        let cfg = cpu.clone().with_cpu(CpuOptions { cflags, ..cpu.cpu.clone() }).with_parallel_work(1);
        let sums = compile_with(|xs: Acc<Vector<i32>>| xs.scanl(5i32, |a, b| a + b), cfg.clone()).unwrap();
        let maxima = compile_with(|xs: Acc<Vector<i64>>| xs.scanl1(|a, b| a.max(b)), cfg.clone()).unwrap();
        let bits = compile_with(|xs: Acc<Vector<u8>>| xs.scanl(0u8, |a, b| a ^ b), cfg).unwrap();
        for n in [1usize, 2, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100_003, 5_000_011] {
            let xs: Vec<i32> = (0..n).map(|i| (i as i32).wrapping_mul(7919) % 23 - 11).collect();
            let mut want = vec![5i32];
            want.extend(xs.iter().scan(5i32, |a, &x| {
                *a = a.wrapping_add(x);
                Some(*a)
            }));
            assert_eq!(
                sums.run(&Vector::from_elems(xs.clone())).unwrap().to_vec(),
                want,
                "{flags:?}, n = {n}"
            );
            let ys: Vec<i64> = xs.iter().map(|&x| x as i64 * (n as i64 - 3)).collect();
            let want: Vec<i64> = ys
                .iter()
                .scan(i64::MIN, |a, &y| {
                    *a = (*a).max(y);
                    Some(*a)
                })
                .collect();
            assert_eq!(maxima.run(&Vector::from_elems(ys)).unwrap().to_vec(), want, "{flags:?}, n = {n}");
            let bs: Vec<u8> = xs.iter().map(|&x| x as u8).collect();
            let mut want = vec![0u8];
            want.extend(bs.iter().scan(0u8, |a, &b| {
                *a ^= b;
                Some(*a)
            }));
            assert_eq!(bits.run(&Vector::from_elems(bs)).unwrap().to_vec(), want, "{flags:?}, n = {n}");
        }
    }
}

/// The functions whose lanes wait on the latency of their operations are
/// marked for the narrower vectors (Note [Latency-bound lanes] in the CPU
/// backend's `kernel.rs`): a float reduction's pieces and a uniform loop;
/// an integer reduction's pieces, a map without a loop and a float
/// reduction along rows are not.
#[test]
fn latency_bound_lanes_are_marked_and_nothing_else() {
    let Some(cpu) = cpu() else { return };
    let marked = |c: &str, function: &str| c.contains(&format!("ACC_LATENCY_BOUND void {function}("));
    let c = c_of(|xs: Acc<Vector<f32>>, ys: Acc<Vector<f32>>| dotp(&xs, &ys), &cpu);
    assert!(marked(&c, "k0_part"), "dotp's pieces are not marked:\n{c}");
    let c = c_of(|xs: Acc<Vector<f64>>| xs.fold_all(0.0, |a, b| a + b), &cpu);
    assert!(marked(&c, "k0_part"), "an f64 sum's pieces are not marked:\n{c}");
    let c = c_of(|xs: Acc<Vector<i32>>| xs.fold_all(0, |a, b| a + b), &cpu);
    assert!(c.contains("void k0_part(") && !c.contains("ACC_LATENCY_BOUND"), "an i32 sum is marked:\n{c}");
    let c = c_of(|m: Acc<Matrix<f32>>| m.fold(0.0, |a, b| a + b), &cpu);
    assert!(c.contains("void k0_rows(") && !marked(&c, "k0_rows"), "a sum along rows is marked:\n{c}");
    let c = c_of(|cs: Acc<Vector<f32>>| cs.map(|c| escape_count(c.clone())), &cpu);
    assert!(marked(&c, "k0"), "the uniform loop is not marked:\n{c}");
    let c = c_of(|xs: Acc<Vector<f32>>, ys: Acc<Vector<f32>>| saxpy(2.5, &xs, &ys), &cpu);
    assert!(!c.contains("ACC_LATENCY_BOUND"), "saxpy is marked:\n{c}");
}

/// A product's tiles read `b`'s runs from a packed copy of each block
/// (Note [Packed operands] in `cpu/packed.rs`), and `a`'s elements where
/// they are; a read of `b` that a condition guards is not packed, since
/// the tiles might not make it. `tests/backend_cpu.rs`
/// (`products_in_blocks_of_the_shared_dimension_agree_to_the_bit`)
/// checks the products' bits.
#[test]
fn the_operand_that_every_row_of_a_tile_reads_is_packed() {
    let Some(cpu) = cpu() else { return };
    let product = |x: Acc<Matrix<f32>>, y: Acc<Matrix<f32>>| {
        let (rows, _) = unindex2(x.shape());
        let (_, cols) = unindex2(y.shape());
        let xs = x.replicate(index0().all().fixed(cols).all());
        let ys = y.transpose().replicate(index0().fixed(rows).all().all());
        xs.zip_with(&ys, |p, q| p * q).fold(0.0f32, |s, t| s + t)
    };
    let c = c_of(product, &cpu);
    let rows = function_at(&c, "k0_rows_fast(", "a tiled product");
    let packs = rows.matches("*restrict pack").count();
    assert_eq!(packs, 1, "one operand packed:\n{rows}");
    // the tiles' products read the packed copy
    assert!(rows.contains("* pack"), "the tiles do not read the packed copy:\n{rows}");
    // the same product with `b`'s element read only where `a`'s is positive
    let guarded = |x: Acc<Matrix<f32>>, y: Acc<Matrix<f32>>| {
        let (rows, _) = unindex2(x.shape());
        let (_, cols) = unindex2(y.shape());
        let xs = x.replicate(index0().all().fixed(cols).all());
        let ys = y.transpose().replicate(index0().fixed(rows).all().all());
        xs.zip_with(&ys, |p, q| cond(p.gt(0.0f32), p * q, constant(0.0f32))).fold(0.0f32, |s, t| s + t)
    };
    let c = c_of(guarded, &cpu);
    let rows = function_at(&c, "k0_rows_fast(", "a tiled product");
    assert!(rows.contains("tiles > 0"), "no tiles:\n{rows}");
    assert!(!rows.contains("*restrict pack"), "a guarded read is packed:\n{rows}");
}

/// A fold whose operator is not commutative by construction (an argmax
/// of `(value, index)` pairs with its tie rule) reduces rows of any length
/// a block of rows at a time, a row per lane (Note [Long rows in lanes]
/// in `cpu/fold.rs`); a sum keeps that for short rows and takes lanes
/// within a long row. `tests/backend_cpu.rs` (`folds_over_short_rows_agree`)
/// checks the results.
#[test]
fn long_rows_of_an_argmax_are_reduced_a_row_per_lane() {
    let Some(cpu) = cpu() else { return };
    let argmax = |m: Acc<Matrix<f32>>| {
        let m2 = m.clone();
        let pairs = generate(m.shape(), move |ix| {
            let (_, j) = unindex2(ix.clone());
            lift((m2.index(ix), j.cast::<i32>()))
        });
        pairs.fold1(|a, b| {
            let (av, ai) = a.unlift();
            let (bv, bi) = b.unlift();
            cond(bv.gt(&av).or(bv.eq(&av).and(bi.lt(&ai))), lift((bv, bi)), lift((av, ai)))
        })
    };
    let c = c_of(argmax, &cpu);
    let rows = function_at(&c, "void k0_rows(", "an argmax's rows");
    assert!(rows.contains("if (1) {"), "rows of any length are not taken in lanes:\n{rows}");
    let sum = |m: Acc<Matrix<f32>>| m.fold(0.0f32, |a, b| a + b);
    let c = c_of(sum, &cpu);
    let rows = function_at(&c, "void k0_rows(", "a sum's rows");
    assert!(rows.contains("<= 32) {"), "a sum's long rows are taken in lanes:\n{rows}");
}

//! A compiled backend against the reference interpreter: the multicore
//! CPU backend, or the CUDA backend when `ACCELERATE_BACKEND=cuda` (on the
//! GPU, or on the emulator with `ACCELERATE_CUDA_DEVICE=emulator`). Each
//! program runs on both and the results must be identical to the bit
//! (the data are chosen so that every reduction is exact in any order,
//! since `fold` and `scan` may reassociate, `docs/semantics.md`), errors
//! included. Skeletons are exercised on both sides of their strategy
//! switches: many short rows and few long ones (the split fold and the
//! three-phase scan start at 32 Ki and 64 Ki elements a row).
//!
//! Skipped, saying so, when the backend under test cannot run here (no C
//! compiler; for CUDA, no driver, device or NVRTC).

mod common;

use accelerate::prelude::*;
use accelerate::{compile_with, run_with, Backend, Config, CpuOptions};
use accelerate_programs::dotp;
use common::callput;

/// The compiled backend under test (see the module documentation), or
/// `None`, saying why, when it cannot run here.
fn cpu() -> Option<Config> {
    let (backend, why) = match Config::from_env().map(|c| c.backend) {
        #[cfg(feature = "cuda")]
        Ok(Backend::Cuda) => (Backend::Cuda, accelerate::backend::cuda::unavailable()),
        _ => (Backend::Cpu, accelerate::backend::cpu::unavailable()),
    };
    match why {
        // every launch with elements enough split among the workers, as
        // these tests' sizes mean to (Note [Sequential below a cost])
        None => Some(Config::default().with_backend(backend).with_parallel_work(0)),
        Some(why) => {
            eprintln!("skipped: the {backend:?} backend is unavailable here: {why}");
            None
        }
    }
}

fn interp() -> Config {
    Config::default().with_backend(Backend::Interpreter)
}

/// Runs `build` on the interpreter and on the CPU backend, with fusion on
/// and off, and checks that all agree (values or errors).
fn agree<A: Arrays + std::fmt::Debug>(build: impl Fn() -> Acc<A>, same: impl Fn(&A, &A) -> bool) {
    agree_with(build, same, |e| e.to_string())
}

/// `agree`, for programs in which several elements may read outside an
/// array: which of them is reported may differ between backends
/// (docs/semantics.md, "Errors and evaluation order"), so errors are
/// compared without the index they name.
fn agree_up_to_the_index<A: Arrays + std::fmt::Debug>(
    build: impl Fn() -> Acc<A>,
    same: impl Fn(&A, &A) -> bool,
) {
    agree_with(build, same, |e| without_the_index(&e.to_string()))
}

/// An error's message without the index it names: "..: index [r, j] is
/// out of bounds for an array of shape [..]".
fn without_the_index(m: &str) -> String {
    match (m.find("index ["), m.find("] is out of bounds")) {
        (Some(a), Some(b)) if a < b => format!("{}index [..{}", &m[..a], &m[b..]),
        _ => m.to_string(),
    }
}

/// `agree`, errors compared as `error` writes them.
fn agree_with<A: Arrays + std::fmt::Debug>(
    build: impl Fn() -> Acc<A>,
    same: impl Fn(&A, &A) -> bool,
    error: impl Fn(&accelerate::Error) -> String,
) {
    let Some(cpu) = cpu() else { return };
    for fusion in [true, false] {
        let (want, got) = {
            let p = build();
            (run_with(&p, &interp().with_fusion(fusion)), run_with(&p, &cpu.clone().with_fusion(fusion)))
        };
        match (&want, &got) {
            (Ok(w), Ok(g)) => assert!(same(w, g), "fusion {fusion}: interpreter {w:?}, cpu {g:?}"),
            (Err(w), Err(g)) => assert_eq!(error(w), error(g), "fusion {fusion}"),
            _ => panic!("fusion {fusion}: interpreter {want:?}, cpu {got:?}"),
        }
    }
}

fn eq<T: PartialEq>(a: &T, b: &T) -> bool {
    a == b
}

/// The same floats to the bit, but any NaN for any NaN: the sign and
/// payload of a NaN that arithmetic makes are not specified
/// (`docs/semantics.md`; x86 keeps an operand's, an NVIDIA GPU gives its
/// canonical NaN: `private_copies_start_from_identities_and_from_defaults`
/// on an H200, 2026-11-30).
fn bits_f32<Sh: Shape>(a: &Array<Sh, f32>, b: &Array<Sh, f32>) -> bool {
    let bits = |v: &Array<Sh, f32>| -> Vec<u64> { v.to_vec().iter().map(|x| x.to_bits() as u64).collect() };
    a.dims() == b.dims() && same_or_both_nan(&bits(a), &bits(b), |x| f32::from_bits(x as u32).is_nan())
}

fn small_ints(n: usize, m: usize) -> Vector<f32> {
    Vector::from_elems((0..n).map(|i| (i % m) as f32).collect())
}

#[test]
fn dot_products_agree_at_every_size() {
    for n in [0, 1, 31, 32, 100, 70_000, 300_000] {
        agree(
            || {
                let xs = use_array(small_ints(n, 13));
                let ys = use_array(small_ints(n, 7));
                dotp(&xs, &ys)
            },
            bits_f32,
        );
    }
}

#[test]
fn blackscholes_agrees_within_the_error_of_vector_math() {
    // The CPU backend's loops call glibc's vector expf/logf (Note [Vector
    // math]), within 5 ulps of the interpreter's scalar ones (CUDA's
    // expf and logf are within 2 and 1 ulp of the exact result, by its
    // programming guide; the emulator calls glibc's scalar functions). An error of
    // 5 ulps in `ln(S/X)` (|ln| < 5 here) moves d1 and d2 by at most
    // 25 eps / (v sqrt T) < 170 eps (v sqrt T >= 0.15), which moves cnd by
    // at most 0.4 times that (its slope) < 70 eps; an error of 5 ulps in
    // `exp` moves cnd and exp(-rT) by at most 5 eps relative. Each price is
    // a difference of two terms of magnitude at most S and X, so it moves
    // by at most about (70 + 10) eps (S + X), plus the roundings of the
    // ~20 operations after (a few eps times S + X): 128 eps (S + X) bounds
    // the difference. Elsewhere the two backends compute the same IEEE
    // operations in the same order.
    let n = 5000;
    let opts: Vec<(f32, f32, f32)> = (0..n)
        .map(|i| (5.0 + (i % 25) as f32, 1.0 + (i % 100) as f32, 0.25 + (i % 10) as f32 * 0.1))
        .collect();
    let within = |a: &Vector<(f32, f32)>, b: &Vector<(f32, f32)>| {
        a.to_vec().iter().zip(b.to_vec()).zip(&opts).all(|((x, y), &(s, k, _))| {
            let tol = 128.0 * f32::EPSILON * (s + k);
            (x.0 - y.0).abs() <= tol && (x.1 - y.1).abs() <= tol
        })
    };
    agree(|| use_array(Vector::from_elems(opts.clone())).map(callput), within);
}

#[test]
fn integer_arithmetic_wraps_and_casts_saturate_alike() {
    let xs: Vec<i32> = vec![i32::MIN, -7, -1, 0, 1, 7, i32::MAX, 12345, -98765];
    let fs: Vec<f32> = vec![f32::NAN, f32::INFINITY, -1e30, -1.5, -0.0, 0.5, 2.5e9, 1e30, f32::NEG_INFINITY];
    agree(
        || {
            let a = use_array(Vector::from_elems(xs.clone()));
            let f = use_array(Vector::from_elems(fs.clone()));
            a.zip_with(f, |x, y| {
                let w = x * 65599i32 + (x << 7i32) - (x >> 3i32);
                let q = x.div_floor(7i32) + x.mod_floor(-5i32) + x.abs() + x.signum();
                let c = y.cast::<i32>() ^ y.cast::<u8>().cast::<i32>() ^ y.cast::<i64>().cast::<i32>();
                w + q + c
            })
        },
        eq,
    );
}

/// The same bits, or both NaN (a NaN's sign and payload are not
/// specified, `docs/semantics.md`).
fn same_or_both_nan(a: &[u64], b: &[u64], nan: impl Fn(u64) -> bool) -> bool {
    a.len() == b.len() && a.iter().zip(b).all(|(&x, &y)| x == y || (nan(x) && nan(y)))
}

macro_rules! float_constants_agree {
    ($name:ident, $t:ty) => {
        /// Each of `+ - * /` (both ways round), `min` and `max` of every
        /// hostile value with constant `c`, as bits.
        fn $name(c: $t) {
            let xs: Vec<$t> = vec![
                <$t>::NAN,
                -<$t>::NAN,
                <$t>::INFINITY,
                <$t>::NEG_INFINITY,
                0.0,
                -0.0,
                <$t>::MIN_POSITIVE / 8.0,
                -<$t>::MIN_POSITIVE,
                1.0,
                -1.0,
                3.5,
                -7.25,
                <$t>::MAX,
                <$t>::MIN,
                0.1,
            ];
            type Row = ($t, $t, $t, $t, $t, $t, $t, $t);
            let bits = |v: &Vector<Row>| -> Vec<u64> {
                v.to_vec()
                    .iter()
                    .flat_map(|r| [r.0, r.1, r.2, r.3, r.4, r.5, r.6, r.7])
                    .map(|x| x.to_bits() as u64)
                    .collect()
            };
            let nan = |b: u64| <$t>::from_bits(b as _).is_nan();
            agree(
                || {
                    use_array(Vector::from_elems(xs.clone()))
                        .map(move |x| lift((x + c, x - c, c - x, x * c, x / c, c / x, x.min(c), x.max(c))))
                },
                |a, b| same_or_both_nan(&bits(a), &bits(b), nan),
            );
        }
    };
}
float_constants_agree!(f32_constant_agrees, f32);
float_constants_agree!(f64_constant_agrees, f64);

/// Zeros, ones and powers of two are written into the C source (Note
/// [Floats in the source]), where the C compiler may rewrite `x * 1.0`,
/// `x - 0.0` or `x / 2.0`; the results must stay the strict IEEE ones of
/// the interpreter, signed zeros, infinities and NaNs included. 3.0 and
/// 0.1 are hoisted, as before.
#[test]
fn arithmetic_with_floats_in_the_source_keeps_the_strict_results() {
    let powers = [1.0, 2.0, 0.5, 256.0, 1.0 / 256.0, 4.0];
    for c in [0.0, -0.0, 3.0, 0.1].into_iter().chain(powers).chain(powers.map(|p: f64| -p)) {
        f32_constant_agrees(c as f32);
        f64_constant_agrees(c);
    }
}

#[test]
fn division_by_zero_is_the_same_error_naming_the_line() {
    agree(
        || {
            let a = use_array(Vector::from_elems(vec![1i32, 2, 3, 4]));
            let b = use_array(Vector::from_elems(vec![1i32, 1, 0, 1]));
            a.zip_with(b, |x, y| x / y)
        },
        eq,
    );
}

#[test]
fn reads_outside_an_array_are_the_same_error() {
    agree(
        || {
            let a = use_array(Vector::from_elems((0..10).collect::<Vec<i64>>()));
            generate(index1(12i64), move |ix| a.index(index1(unindex1(ix) * 2i64)))
        },
        eq,
    );
}

#[test]
fn folds_of_many_short_rows_and_of_few_long_rows_agree() {
    for (rows, n) in [(1000, 3), (3, 100_000), (1, 0), (0, 5), (2, 40_000)] {
        let data: Vec<i64> = (0..rows * n).map(|i| (i as i64 * 7919) % 1000 - 500).collect();
        agree(
            || {
                let a = use_array(Array::from_vec(dim2(rows, n), data.clone()).unwrap());
                lift_acc((a.fold(3i64, |x, y| x + y), a.map(|x| x * 2i64).fold(0i64, |x, y| x.max(y))))
            },
            eq,
        );
    }
}

#[test]
fn scans_of_short_and_long_rows_agree_in_both_directions() {
    for (rows, n) in [(50, 7), (1, 200_000), (2, 70_000), (3, 0)] {
        let data: Vec<i64> = (0..rows * n).map(|i| (i as i64 * 31) % 17 - 8).collect();
        let arr = Array::from_vec(dim2(rows, n), data).unwrap();
        agree(
            || {
                let a = use_array(arr.clone());
                lift_acc((
                    a.scanl(5i64, |x, y| x + y),
                    a.scanr(-2i64, |x, y| x + y),
                    a.map(|x| x * 3i64).scanl1(|x, y| x + y),
                    a.scanr1(|x, y| x + y),
                ))
            },
            eq,
        );
    }
}

/// Whether the backend under test is the CPU backend (the tests of its
/// chained scans are too large for the CUDA emulator's fibers).
fn on_the_cpu() -> bool {
    cpu().is_some_and(|c| c.backend == Backend::Cpu)
}

/// Inclusive scans of `xs` by `f` from the left, with a seed first (as
/// `scanl`) or without (as `scanl1`).
fn scan_left<T: Copy>(xs: &[T], seed: Option<T>, f: impl Fn(T, T) -> T) -> Vec<T> {
    let mut out: Vec<T> = seed.into_iter().collect();
    let mut acc = seed;
    for &x in xs {
        let v = acc.map_or(x, |a| f(a, x));
        out.push(v);
        acc = Some(v);
    }
    out
}

/// The same from the right (as `scanr` and `scanr1`: `f(x, acc)`).
fn scan_right<T: Copy>(xs: &[T], seed: Option<T>, f: impl Fn(T, T) -> T) -> Vec<T> {
    let rev: Vec<T> = xs.iter().rev().copied().collect();
    let mut out = scan_left(&rev, seed, |a, x| f(x, a));
    out.reverse();
    out
}

/// Rows long enough to be scanned in one pass on the CPU backend (Note
/// [Chained scans] in `backend/cpu/scan.rs`: from 16 MiB a row), fused
/// and not, against plain Rust (the interpreter takes most of a minute
/// over rows this long): a row of 2^21 `i64`s in both directions, with
/// a seed and without, and two rows of 1.4 million pairs, a prefix of two
/// leaves passed between the pieces.
#[test]
fn chained_scans_of_long_rows_match_plain_rust() {
    let Some(cpu) = cpu().filter(|_| on_the_cpu()) else { return };
    let n = (1 << 21) + 12_345;
    let xs: Vec<i64> = (0..n).map(|i| (i as i64 * 31) % 17 - 8).collect();
    let add = |a: i64, b: i64| a + b;
    let want = (
        scan_left(&xs, Some(5), add),
        scan_right(&xs, Some(-2), add),
        scan_left(&xs.iter().map(|x| x * 3).collect::<Vec<_>>(), None, add),
        scan_right(&xs, None, add),
    );
    // 1.4 million pairs of 12 bytes a row: just over 16 MiB
    let (rows, m) = (2, 1_400_007);
    let ys: Vec<i64> = (0..rows * m).map(|i| (i as i64 * 13) % 23 - 11).collect();
    let combine = |(a, b): (i64, i32), (c, d): (i64, i32)| (a + c, b.max(d));
    let (mut left, mut right) = (Vec::new(), Vec::new());
    for row in ys.chunks(m) {
        let pairs: Vec<(i64, i32)> = row.iter().map(|&y| (y, y as i32)).collect();
        left.extend(scan_left(&pairs, Some((0, -100)), combine));
        right.extend(scan_right(&pairs, None, combine));
    }
    for fusion in [true, false] {
        let config = cpu.clone().with_fusion(fusion);
        let a = use_array(Vector::from_elems(xs.clone()));
        let got = run_with(
            &lift_acc((
                a.scanl(5i64, |x, y| x + y),
                a.scanr(-2i64, |x, y| x + y),
                a.map(|x| x * 3i64).scanl1(|x, y| x + y),
                a.scanr1(|x, y| x + y),
            )),
            &config,
        )
        .unwrap();
        assert!(got.0.to_vec() == want.0, "fusion {fusion}: scanl");
        assert!(got.1.to_vec() == want.1, "fusion {fusion}: scanr");
        assert!(got.2.to_vec() == want.2, "fusion {fusion}: scanl1");
        assert!(got.3.to_vec() == want.3, "fusion {fusion}: scanr1");
        let pairs = use_array(Array::from_vec(dim2(rows, m), ys.clone()).unwrap())
            .map(|y| lift((y.clone(), y.cast::<i32>())));
        let f = |p: &Exp<(i64, i32)>, q: &Exp<(i64, i32)>| {
            let ((a, b), (c, d)) = (p.unlift(), q.unlift());
            lift((a + c, b.max(d)))
        };
        let got = run_with(&lift_acc((pairs.scanl((0i64, -100i32), f), pairs.scanr1(f))), &config).unwrap();
        assert!(got.0.to_vec() == left, "fusion {fusion}: scanl of pairs");
        assert!(got.1.to_vec() == right, "fusion {fusion}: scanr1 of pairs");
    }
}

/// The variable that makes a test the child of itself (`common::in_child`).
const CHILD: &str = "ACCELERATE_TEST_CHILD";

/// A piece of a chained scan whose elements read outside an array still
/// publishes its prefix, so that the pieces after it finish and the run
/// fails with the error at the read's line (in a child process: a worker
/// that waited forever would hang it, and the test fails instead).
#[test]
fn an_error_in_a_piece_of_a_chained_scan_fails_the_run() {
    if std::env::var_os(CHILD).is_none() {
        common::in_child(CHILD, "an_error_in_a_piece_of_a_chained_scan_fails_the_run");
        return;
    }
    let Some(cpu) = cpu().filter(|_| on_the_cpu()) else { return };
    // 16 MiB of `i32`s and more: a chained scan
    let n = (1i64 << 22) + 3;
    let xs: Vec<i32> = (0..n).map(|i| (i % 7) as i32).collect();
    let line =
        include_str!("backend_cpu.rs").lines().position(|l| l.ends_with("// the doubled read")).unwrap();
    for (left, fusion) in [(true, true), (false, true), (true, false), (false, false)] {
        let xs = use_array(Vector::from_elems(xs.clone()));
        // positions from n/2 on read past the end: an error in the pieces
        // of the second half of the row
        let doubled = generate(index1(n), |ix| xs.index(index1(unindex1(ix) * 2i64))); // the doubled read
        let scanned = if left { doubled.scanl(0i32, |a, b| a + b) } else { doubled.scanr1(|a, b| a + b) };
        let e = run_with(&scanned, &cpu.clone().with_fusion(fusion)).unwrap_err().to_string();
        assert!(e.starts_with(&format!("crates/accelerate/tests/backend_cpu.rs:{}:", line + 1)), "{e}");
        assert!(e.contains("is out of bounds for an array of shape [4194307]"), "{e}");
    }
}

#[test]
fn segmented_folds_agree() {
    let lens: Vec<i64> = vec![0, 1, 5, 0, 100_000, 3, 2];
    let n: i64 = lens.iter().sum();
    let xs: Vec<i32> = (0..n).map(|i| (i % 11) as i32 - 5).collect();
    agree(
        || {
            let a = use_array(Vector::from_elems(xs.clone()));
            a.fold_seg(1i32, |x, y| x + y, use_array(Vector::from_elems(lens.clone())))
        },
        eq,
    );
}

/// Histograms into results small and large against their sources, so
/// that the executor privatises some, updates others atomically and runs
/// the small ones on one worker (Note [Privatised permutes]; with one
/// worker, all on one), of integers, of floats (small integers: exact
/// sums in any order) and of pairs (privatised or on one worker), with
/// defaults that are not zero, and a destination outside the result,
/// which is the same error whichever way it runs.
#[test]
fn permute_histograms_agree() {
    for (n, bins) in [(50_000i64, 16i64), (50_000, 60_000), (1000, 999), (1000, 5000), (3, 1)] {
        let vals: Vec<i64> = (0..n).map(|i| (i * 7919) % (bins + 7) - 3).collect();
        agree(
            || {
                let xs = use_array(Vector::from_elems(vals.clone()));
                let base = generate(index1(bins), |ix| unindex1(ix) * 3i64);
                xs.map(|_| constant(1i64)).permute(
                    |new, old| new + old,
                    base,
                    move |ix| {
                        let v = xs.index(ix);
                        cond(v.ge(0i64).and(v.lt(bins)), just(index1(v)), nothing())
                    },
                )
            },
            eq,
        );
        agree(
            || {
                let xs = use_array(Vector::from_elems(vals.clone()));
                let base = fill(index1(bins), 0.5f32);
                xs.map(|x| x.cast::<f32>()).permute(
                    |new, old| new + old,
                    base,
                    move |ix| {
                        let v = xs.index(ix);
                        cond(v.ge(0i64), just(index1(v % bins)), nothing())
                    },
                )
            },
            bits_f32,
        );
        agree(
            || {
                let xs = use_array(Vector::from_elems(vals.clone()));
                let base = generate(index1(bins), |ix| lift((unindex1(ix), constant(0.25f64))));
                xs.map(|x| lift((constant(1i64), x.cast::<f64>()))).permute(
                    |new, old| {
                        let ((c, s), (d, t)) = (new.unlift(), old.unlift());
                        lift((c + d, s + t))
                    },
                    base,
                    move |ix| {
                        let v = xs.index(ix);
                        cond(v.ge(0i64), just(index1(v % bins)), nothing())
                    },
                )
            },
            eq,
        );
    }
    // a destination past the end, with sources enough to be split
    agree(
        || {
            let xs = use_array(Vector::from_elems((0..100_000i64).collect()));
            xs.permute(
                |new, old| new.max(old),
                fill(index1(1000i64), 0i64),
                // every destination past the end is 1000: the same error
                // whichever failing element a parallel backend reports
                move |ix| just(index1((unindex1(ix) / 99i64).min(1000i64))),
            )
        },
        eq,
    );
}

/// Integer quotients and remainders by literal divisors, which stay in
/// the C source so that the compiler divides by multiplying (Note
/// [Hoisted literals] in `c/exp.rs`): `quot`, `%`, `div_floor` and
/// `mod_floor` of `i64` and `i32` values from the extremes through zero,
/// by divisors of either sign, small and large, -1 and the type's
/// minimum, agree with the interpreter; a literal zero divisor is its
/// error; and the divisor is in the generated C.
#[test]
fn integer_division_by_literals_agrees() {
    let xs: Vec<i64> = vec![
        i64::MIN,
        i64::MIN + 1,
        -86_401,
        -86_400,
        -7,
        -6,
        -1,
        0,
        1,
        6,
        7,
        86_399,
        86_400,
        1 << 40,
        i64::MAX,
    ];
    for d in [7i64, -7, 86_400, -86_400, 3, 1_000_000_007, -1, i64::MIN] {
        agree(
            || {
                use_array(Vector::from_elems(xs.clone()))
                    .map(move |x| lift((x.quot(d), x % d, x.div_floor(d), x.mod_floor(d))))
            },
            eq,
        );
    }
    let ys: Vec<i32> = xs.iter().map(|&x| x as i32).chain([i32::MIN, i32::MAX, -13, 13]).collect();
    for d in [7i32, -7, 86_400, 3, -1, i32::MIN] {
        agree(
            || {
                use_array(Vector::from_elems(ys.clone()))
                    .map(move |x| lift((x.quot(d), x % d, x.div_floor(d), x.mod_floor(d))))
            },
            eq,
        );
    }
    agree(|| use_array(Vector::from_elems(xs.clone())).map(|x| x.quot(0i64)), eq);
    agree(|| use_array(Vector::from_elems(ys.clone())).map(|x| x.mod_floor(0i32)), eq);
    if let Some(cpu) = cpu().filter(|c| c.backend == Backend::Cpu) {
        let days = |t: Acc<Vector<i64>>| t.map(|x| x.quot(86_400i64).mod_floor(7i64));
        let c = compile_with(days, cpu).unwrap().c_source().unwrap().to_string();
        assert!(c.contains("86400") && c.contains("7LL"), "the divisors are not in the C:\n{c}");
    }
}

/// Permutes into a result of a few positions (Note [Small results by
/// comparison] in `cpu/permute.rs`): privatised on the workers, whose
/// fast form adds each source to the lanes of every position, masked by
/// whether it is its destination. k-means' sums of `(x, y, 1)` by key
/// into 16 positions (the comparisons' limit for that element on an
/// AVX-512 host) and 17 (past it: one source at a time), `i64` counts
/// and `f64` sums, defaults that are not zero, keys out of range dropped,
/// a length not a multiple of the blocks: the interpreter's results
/// exactly (sums of small integers, exact in any order). A destination
/// outside the result, and a failed read of a kept source's value, are
/// the interpreter's errors; a failed read of a dropped source's value
/// is no error. On an AVX-512 host the generated C has the fast form.
#[test]
fn permutes_into_few_positions_by_comparison_agree() {
    let n = 100_003usize;
    let keys: Vec<i32> = (0..n as i32).map(|i| (i.wrapping_mul(7919)) % 23 - 3).collect();
    let xs: Vec<f32> = (0..n as i32).map(|i| (i % 1000) as f32 - 500.0).collect();
    let sums = |bins: i64, keys: Vec<i32>, xs: Vec<f32>| {
        let (k, x) = (use_array(Vector::from_elems(keys)), use_array(Vector::from_elems(xs)));
        let base = generate(index1(bins), |ix| {
            let c = unindex1(ix);
            lift((c.cast::<f32>() * 0.5f32, constant(-1.0f32), c.cast::<i32>()))
        });
        x.map(|v| lift((v.clone(), v * 2.0f32, constant(1i32)))).permute(
            |a, b| {
                let ((ax, ay, an), (bx, by, bn)) = (a.unlift(), b.unlift());
                lift((ax + bx, ay + by, an + bn))
            },
            base,
            move |ix| {
                let key = k.index(ix).cast::<i64>();
                cond(key.ge(0i64).and(key.lt(bins)), just(index1(key)), nothing())
            },
        )
    };
    for bins in [16i64, 17, 5] {
        agree(|| sums(bins, keys.clone(), xs.clone()), eq);
    }
    // one-leaf elements: i64 counts, f64 sums
    agree(
        || {
            let k = use_array(Vector::from_elems(keys.clone()));
            let base = generate(index1(16i64), |ix| unindex1(ix) * 3i64);
            k.map(|_| constant(1i64)).permute(
                |a, b| a + b,
                base,
                move |ix| {
                    let key = k.index(ix).cast::<i64>();
                    cond(key.ge(0i64).and(key.lt(16i64)), just(index1(key)), nothing())
                },
            )
        },
        eq,
    );
    agree(
        || {
            let (k, x) =
                (use_array(Vector::from_elems(keys.clone())), use_array(Vector::from_elems(xs.clone())));
            x.map(|v| v.cast::<f64>() * 0.25f64).permute(
                |a, b| a + b,
                fill(index1(12i64), 0.125f64),
                move |ix| {
                    let key = k.index(ix).cast::<i64>();
                    cond(key.ge(0i64), just(index1(key % 12i64)), nothing())
                },
            )
        },
        eq,
    );
    // a destination outside the result: every key past it sent to 19,
    // the same error whichever failing source a worker reports first
    agree(
        || {
            let k = use_array(Vector::from_elems(keys.clone()));
            k.map(|_| constant(1i32)).permute(
                |a, b| a + b,
                fill(index1(16i64), 0i32),
                move |ix| {
                    let key = k.index(ix).cast::<i64>();
                    let to = cond(key.ge(16i64), constant(19i64), key.clone());
                    cond(key.ge(0i64), just(index1(to)), nothing())
                },
            )
        },
        eq,
    );
    // the last source's value read past the end of a shorter array: an
    // error where its key is kept, none where it is dropped
    for last_key in [2i32, -1] {
        let mut keys = keys.clone();
        keys[n - 1] = last_key;
        let short: Vec<f32> = xs[..n - 1].to_vec();
        agree(
            || {
                let k = use_array(Vector::from_elems(keys.clone()));
                let s = use_array(Vector::from_elems(short.clone()));
                k.imap(move |ix, _| s.index(ix)).permute(
                    |a, b| a + b,
                    fill(index1(16i64), 0.0f32),
                    move |ix| {
                        let key = k.index(ix).cast::<i64>();
                        cond(key.ge(0i64).and(key.lt(16i64)), just(index1(key)), nothing())
                    },
                )
            },
            bits_f32,
        );
    }
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx512f") {
        let Some(cpu) = cpu().filter(|c| c.backend == Backend::Cpu) else { return };
        let program = move |k: Acc<Vector<i32>>, x: Acc<Vector<f32>>| {
            let k2 = k.clone();
            x.map(|v| lift((v.clone(), v * 2.0f32, constant(1i32)))).permute(
                |a, b| {
                    let ((ax, ay, an), (bx, by, bn)) = (a.unlift(), b.unlift());
                    lift((ax + bx, ay + by, an + bn))
                },
                fill(index1(16i64), (0.0f32, 0.0f32, 0i32)),
                move |ix| {
                    let key = k2.index(ix).cast::<i64>();
                    cond(key.ge(0i64).and(key.lt(16i64)), just(index1(key)), nothing())
                },
            )
        };
        let c = compile_with(program, cpu).unwrap().c_source().unwrap().to_string();
        assert!(c.contains("_private_fast(") && c.contains("cdst["), "no comparisons:\n{c}");
    }
}

/// Privatised permutes whose private copies start from the combining
/// function's identity (`-0.0` for a float sum, integer `min`, bit
/// operators) or from the defaults (float `min`/`max`, idempotent), so
/// that no position is marked (Note [Privatised permutes]): the same bits
/// as the interpreter's, with NaNs, signed zeros and infinities among the
/// sources and the defaults, and positions that nothing reaches keeping
/// a NaN or `-0.0` default (`tests/cpu_vectorise.rs` checks that the
/// generated C marks no position). Every sum is exact in any order
/// (halves and small integers), and the `min`/`max` sources hold one zero
/// (`-0.0`), whose ties would otherwise depend on the order.
/// A privatised permute computes its destinations a block at a time
/// (Note [Destinations by blocks]): a histogram that drops one value in
/// seven (sent to the copies' spare place) agrees with the interpreter; a
/// destination outside the result is the interpreter's error, naming it;
/// and a dropped source whose element would fail is not computed (its
/// update is skipped rather than sent to the spare place).
#[test]
fn privatised_permutes_by_blocks_drop_skip_and_raise_as_the_interpreter_does() {
    let Some(cpu) = cpu() else { return };
    let n = 100_003usize;
    let xs: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 1009).collect();
    // into few bins (short blocks) and into many (long ones)
    let histogram = |bins: i64, bad: Option<i64>| {
        let x = use_array(Vector::from_elems(xs.clone()));
        let y = x.clone();
        x.map(|v| v * 2i64 + 1i64).permute(
            |a, b| a + b,
            fill(index1(bins), 0i64),
            move |ix| {
                let v = y.index(ix);
                // the one value `bad` (where it is one) goes past the bins
                let bin = match bad {
                    Some(b) => cond(v.eq(b), constant(bins), (&v * 31i64) % bins),
                    None => (&v * 31i64) % bins,
                };
                cond((&v % 7i64).eq(0i64), nothing(), just(index1(bin)))
            },
        )
    };
    for bins in [100, 5000] {
        agree(|| histogram(bins, None), eq);
        agree(|| histogram(bins, Some(xs[77_777])), eq);
    }
    // the first half of the sources read `half`, the others (dropped)
    // would read past its end
    let half = n / 2;
    let p = {
        let short = use_array(Vector::from_elems(xs[..half].to_vec()));
        generate(index1(n as i64), move |ix| short.index(ix)).permute(
            |a, b| a + b,
            fill(index1(100i64), 0i64),
            move |ix| {
                let i = unindex1(ix);
                cond(i.lt(half as i64), just(index1(&i % 100i64)), nothing())
            },
        )
    };
    let mut want = vec![0i64; 100];
    for (i, x) in xs[..half].iter().enumerate() {
        want[i % 100] += x;
    }
    assert_eq!(run_with(&p, &cpu).unwrap().to_vec(), want);
}

/// A permute whose index function is `if c then just .. else nothing`
/// with a test `c` of shapes alone runs its loop under one test of `c`
/// (Note [Invariant guards] in `backend/src/cpu/permute.rs`): with `c`
/// true, the sums, dropped sources, and a destination past the result
/// (the interpreter's error) agree with the interpreter, by blocks (an
/// index function that computes) and one at a time (one that only reads),
/// privatised and on one worker; with `c` false, nothing is combined and
/// no source is read, though every one would read past an array's end.
#[test]
fn permutes_under_a_test_of_shapes_agree_with_the_interpreter() {
    let Some(cpu) = cpu() else { return };
    let n = 60_001usize;
    let xs: Vec<i64> = (0..n as i64).map(|i| (i * 7919) % 1009).collect();
    // `width` bins; every source reads `src[i + shift]`; the test holds
    // where `src` is longer than `need`
    let program = |bins: i64, need: i64, shift: i64, computes: bool, past: bool| {
        let (x, y) = (use_array(Vector::from_elems(xs.clone())), use_array(Vector::from_elems(xs.clone())));
        generate(index1(n as i64), move |ix| x.index(index1(unindex1(ix) + shift))).permute(
            |a, b| a + b,
            fill(index1(bins), 0i64),
            move |ix| {
                let i = unindex1(ix);
                let bin = if computes { (y.index(ix) * 31i64) % bins } else { y.index(ix) % 1000i64 };
                // one source (where `past`) goes past the bins
                let bin = if past { cond(i.eq(777i64), constant(bins), bin) } else { bin };
                let kept = cond((&i % 7i64).eq(0i64), nothing(), just(index1(bin)));
                cond(y.length().gt(need), kept, nothing())
            },
        )
    };
    for computes in [true, false] {
        for past in [false, true] {
            for bins in [1000i64, 5000] {
                agree(|| program(bins, 10, 0, computes, past), eq);
            }
        }
        // the test fails: the defaults, though every read is past the end
        for config in [cpu.clone(), cpu.clone().with_parallel_work(usize::MAX)] {
            let p = program(1000, n as i64, n as i64, computes, true);
            assert_eq!(run_with(&p, &config).unwrap().to_vec(), vec![0i64; 1000], "computes {computes}");
        }
    }
}

/// A push-style scatter of values gathered at positions read from another
/// array (PageRank's `step`): on the CPU its values are computed before
/// the scatter where the arrays gathered from hold more than
/// `gathers::LARGE` bytes, and fused into it otherwise (Note [Gathers
/// before scatters] in `opt/src/gathers.rs`). Both forms agree with the
/// interpreter, with fusion on and off; so does a link whose source is
/// past the vertices (the interpreter's error); a scatter that may drop
/// elements, or that reads at its own index only, is left as fusion made
/// it.
#[test]
fn scatters_of_values_gathered_from_large_arrays_agree_with_the_interpreter() {
    // the ranks and degrees of `large` vertices: 12 bytes each, 8 MiB
    let large = accelerate::trafo::gathers::LARGE as usize / 6;
    let links = 200_003usize;
    for vertices in [1000usize, large] {
        let from: Vec<i64> = (0..links as i64).map(|i| (i * 7919 + 13) % vertices as i64).collect();
        let to: Vec<i64> = (0..links as i64).map(|i| (i * 104_729 + 7) % vertices as i64).collect();
        // small integers: every sum exact, in any order
        let rank: Vec<f32> = (0..vertices).map(|v| (v % 17) as f32).collect();
        let degree: Vec<i64> = (0..vertices as i64).map(|v| v % 5 + 1).collect();
        let push = |from: Vec<i64>| {
            let (from, to) = (use_array(Vector::from_elems(from)), use_array(Vector::from_elems(to.clone())));
            let (rank, degree) =
                (use_array(Vector::from_elems(rank.clone())), use_array(Vector::from_elems(degree.clone())));
            let zeros = fill(index1(vertices as i64), 0.0f32);
            from.map(move |f| {
                let at = index1(f);
                rank.index(&at) * 2.0f32 + degree.index(&at).cast::<f32>()
            })
            .permute(|a, b| a + b, zeros, move |ix| just(index1(to.index(ix))))
        };
        agree(|| push(from.clone()), bits_f32);
        let mut past = from.clone();
        past[links / 3] = vertices as i64;
        agree_up_to_the_index(|| push(past.clone()), bits_f32);
        let Some(cpu) = cpu() else { return };
        if config_is_cpu(&cpu) {
            let phases = accelerate::explain_with(&push(from.clone()), &cpu).unwrap();
            assert!(phases.contains("== gathers"), "split by the gathered arrays' sizes:\n{phases}");
        }
    }
    let Some(cpu) = cpu() else { return };
    if config_is_cpu(&cpu) {
        // read at the element's own index, or sent only where a test holds
        let n = large as i64;
        let xs = use_array(Vector::from_elems((0..n).map(|i| i % 1000).collect::<Vec<i64>>()));
        let ys = xs.clone();
        let own = xs.map(|x| x * 2i64).permute(
            |a, b| a + b,
            fill(index1(1000i64), 0i64),
            move |ix| just(index1(ys.index(ix))),
        );
        let (table, keys) = (xs.clone(), xs.clone());
        let dropping = keys.map(move |k| table.index(index1(k))).permute(
            |a, b| a + b,
            fill(index1(1000i64), 0i64),
            move |ix| cond(unindex1(ix).lt(10i64), just(index1(unindex1(ix))), nothing()),
        );
        for p in [own, dropping] {
            let phases = accelerate::explain_with(&p, &cpu).unwrap();
            assert!(!phases.contains("== gathers"), "left fused:\n{phases}");
        }
    }
}

/// Values at and around the edges of float arithmetic: NaNs, infinities,
/// signed zeros, subnormals, the extremes, and the floats next to 0, 1
/// and the integer types' ends; the others from a ramp over [-0.25, 1.25).
fn hostile_f32(n: usize) -> Vec<f32> {
    let edges = [
        f32::NAN,
        -f32::NAN,
        f32::INFINITY,
        f32::NEG_INFINITY,
        0.0,
        -0.0,
        1.0,
        f32::from_bits(1.0f32.to_bits() - 1),
        f32::from_bits(1.0f32.to_bits() + 1),
        f32::MIN_POSITIVE,
        f32::from_bits(1),
        -f32::from_bits(1),
        f32::MAX,
        f32::MIN,
        255.0,
        255.5,
        256.0,
        -128.0,
        -129.0,
        2_147_483_648.0,
        -2_147_483_904.0,
        9.223_372e18,
        -9.223_372e18,
    ];
    (0..n)
        .map(|i| match i % 7 {
            0 => edges[(i / 7) % edges.len()],
            _ => -0.25 + 1.5 * ((i * 7919) % 10007) as f32 / 10007.0,
        })
        .collect()
}

/// A histogram's bins computed inside a test of the value's range (Note
/// [Value ranges] in `backend/c/exp/ranges.rs`): the cast in the test's
/// branch is a plain conversion and, where the bins' range lies inside
/// the result, the loop of destinations has no check. On hostile values,
/// privatised and on one worker, the counts agree with the interpreter;
/// and into fewer bins than the clamp allows (the range not inside the
/// result, so the checked loop runs) so does the error.
#[test]
fn bins_inside_a_tested_range_agree_with_the_interpreter() {
    let Some(cpu) = cpu() else { return };
    let histogram = |xs: Acc<Vector<f32>>, bins: i64, clamp: i64| {
        let ys = xs.clone();
        counts(&xs, bins, move |ix| {
            let x = ys.index(ix);
            let b = (&x * 256.0f32).cast::<i64>().min(clamp);
            cond(x.ge(0.0f32).and(x.lt(1.0f32)), just(index1(b)), nothing())
        })
    };
    for n in [1000usize, 100_003] {
        let xs = Vector::from_elems(hostile_f32(n));
        for (bins, clamp) in [(256i64, 255i64), (300, 255), (200, 255)] {
            let f = move |xs: Acc<Vector<f32>>| histogram(xs, bins, clamp);
            let run = |config| {
                let p = compile_with(f, config).unwrap();
                (p.run(&xs).map(|r| r.to_vec()), p.c_source().unwrap_or_default().to_string())
            };
            let source = ["acc_float_to_int64_t_in32(", "ACC_FLOAT_RANGES && 255LL < rs0"];
            counts_agree(&cpu, &format!("n {n}, {bins} bins"), &source, run);
        }
    }
}

/// How many elements of `xs` go to each of `bins` bins, each to the bin
/// `to` gives its index, or none (a permute of ones).
fn counts<T: Elt>(
    xs: &Acc<Vector<T>>,
    bins: i64,
    to: impl FnOnce(&Exp<DIM1>) -> Exp<Option<DIM1>>,
) -> Acc<Vector<i64>> {
    xs.map(|_| constant(1i64)).permute(|a, b| a + b, fill(index1(bins), 0i64), to)
}

/// Counts that `run` computes under a configuration, and the C it
/// generates: on the CPU backend, privatised and on one worker, the
/// counts agree with the interpreter's, errors compared without the
/// index they name (which of the sources past the result a parallel
/// backend reports may differ, docs/semantics.md), and the C has each of
/// `source`.
fn counts_agree(
    cpu: &Config,
    what: &str,
    source: &[&str],
    run: impl Fn(Config) -> (Result<Vec<i64>, accelerate::Error>, String),
) {
    let error = |e: accelerate::Error| without_the_index(&e.to_string());
    let want = run(interp()).0.map_err(error);
    for config in [cpu.clone(), cpu.clone().with_parallel_work(usize::MAX)] {
        let (got, c) = run(config);
        for s in source.iter().filter(|_| config_is_cpu(cpu)) {
            assert!(c.contains(s), "{what}: no {s}:\n{c}");
        }
        assert_eq!(got.map_err(error), want, "{what}");
    }
}

/// Integer keys kept where a test's failing branch bounds them (Note
/// [Value ranges]: an integer comparison that fails says the opposite,
/// `a || b` failing says both fail): dropped below 0 and clamped to 255
/// (whose destinations' check is left out where 255 is inside the
/// result, with no float in the proof), or dropped outside [0, 255]; into
/// fewer bins the error is the interpreter's.
#[test]
fn keys_bounded_by_failing_tests_agree_with_the_interpreter() {
    let Some(cpu) = cpu() else { return };
    let edges = [i64::MIN, i64::MIN + 1, -256, -1, 0, 1, 199, 200, 254, 255, 256, 1 << 40, i64::MAX];
    let keys: Vec<i64> = (0..50_001usize)
        .map(|i| if i % 5 == 0 { edges[(i / 5) % edges.len()] } else { ((i * 7919) % 300) as i64 - 20 })
        .collect();
    let keys = Vector::from_elems(keys);
    for clamped in [true, false] {
        for bins in [256i64, 200] {
            let f = move |ks: Acc<Vector<i64>>| {
                let ks2 = ks.clone();
                counts(&ks, bins, move |ix| {
                    let k = ks2.index(ix);
                    match clamped {
                        true => cond(k.lt(0i64), nothing(), just(index1(k.min(255i64)))),
                        false => cond(k.lt(0i64).or(k.gt(255i64)), nothing(), just(index1(k))),
                    }
                })
            };
            let run = |config| {
                let p = compile_with(f, config).unwrap();
                (p.run(&keys).map(|r| r.to_vec()), p.c_source().unwrap_or_default().to_string())
            };
            // (the keys only compared, not computed, go one at a
            // time, Note [Destinations by blocks])
            let source: &[&str] = if clamped { &["if (255LL < rs0) {"] } else { &[] };
            counts_agree(&cpu, &format!("clamped {clamped}, {bins} bins"), source, run);
        }
    }
}

/// Whether a configuration runs the CPU backend (whose C these tests read).
fn config_is_cpu(c: &Config) -> bool {
    c.backend == Backend::Cpu
}

/// A table read at a byte (`lut[x as i64]`, a gamma curve's), whose index
/// lies in [0, 255] by its type (Note [Value ranges]): the fast function
/// tests `255 < extent` once, before its loops, and reads without a
/// condition; a shorter table fails that test, and the checked function
/// raises the interpreter's error.
#[test]
fn table_reads_at_bytes_agree_with_the_interpreter() {
    let bytes: Vec<u8> = (0..100_003u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    for len in [256usize, 300, 200, 0] {
        let lut: Vec<f32> = (0..len).map(|i| (i as f32 / 255.0).powf(2.2)).collect();
        agree_up_to_the_index(
            || {
                let t = use_array(Vector::from_elems(lut.clone()));
                use_array(Vector::from_elems(bytes.clone())).map(move |x| t.index(index1(x.cast::<i64>())))
            },
            bits_f32,
        );
    }
    let Some(cpu) = cpu() else { return };
    if config_is_cpu(&cpu) {
        let f = |t: Acc<Vector<f32>>, xs: Acc<Vector<u8>>| xs.map(move |x| t.index(index1(x.cast::<i64>())));
        let source = compile_with(f, cpu).unwrap().c_source().unwrap().to_string();
        assert!(source.contains("acc_bad |= !((255LL < a"), "tested before the loops:\n{source}");
    }
}

/// Float casts to each integer type of values whose range is known, by a
/// clamp or by a test (Note [Value ranges]), are plain conversions; they
/// give what Rust's `as` gives (the interpreter's results), for hostile
/// values too.
#[test]
fn casts_of_values_in_known_ranges_agree_with_the_interpreter() {
    let xs = Vector::from_elems(hostile_f32(5000));
    let scaled = |xs: &Acc<Vector<f32>>, k: f32| xs.map(move |x| x * k);
    agree(|| scaled(&use_array(xs.clone()), 255.0).map(|x| x.max(0.0f32).min(255.0f32).cast::<u8>()), eq);
    agree(|| use_array(xs.clone()).map(|x| x.max(-128.9f32).min(127.9f32).cast::<i8>()), eq);
    agree(|| scaled(&use_array(xs.clone()), 1e5).map(|x| x.max(0.0f32).min(65535.5f32).cast::<u16>()), eq);
    agree(
        || {
            scaled(&use_array(xs.clone()), 3e9)
                .map(|x| cond(x.gt(-2.1e9f32).and(x.lt(2.1e9f32)), x.cast::<i32>(), constant(-1i32)))
        },
        eq,
    );
    agree(
        || {
            scaled(&use_array(xs.clone()), 1e19).map(|x| {
                let y = x.cast::<f64>() * 0.5f64;
                cond(y.ge(-4e18f64).and(y.le(4e18f64)), (y + 1.5f64).cast::<i64>(), constant(7i64))
            })
        },
        eq,
    );
    // inside `i32`'s range, to wider types: through `int32_t` (Note
    // [Narrow conversions]), to the largest `f32` below 2^31 and the
    // smallest above -2^31 - 1
    let edge = 2147483520.0f32;
    agree(|| scaled(&use_array(xs.clone()), 3e9).map(move |x| x.max(-edge).min(edge).cast::<i64>()), eq);
    agree(|| scaled(&use_array(xs.clone()), 3e9).map(move |x| x.max(0.0f32).min(edge).cast::<u64>()), eq);
    agree(|| scaled(&use_array(xs.clone()), 3e9).map(move |x| x.max(0.0f32).min(edge).cast::<u32>()), eq);
    // 2^31 itself is outside `i32`, not `i64`: a plain conversion to `i64`
    agree(|| scaled(&use_array(xs.clone()), 3e9).map(|x| x.max(-2.5e9f32).min(2.5e9f32).cast::<i64>()), eq);
    // outside the type: saturating, as before
    agree(|| use_array(xs.clone()).map(|x| x.max(0.0f32).min(300.0f32).cast::<u8>()), eq);
    let Some(cpu) = cpu() else { return };
    if config_is_cpu(&cpu) {
        let f = |xs: Acc<Vector<f32>>| xs.map(|x| x.max(0.0f32).min(255.0f32).cast::<u8>());
        let source = compile_with(f, cpu.clone()).unwrap().c_source().unwrap().to_string();
        assert!(source.contains("acc_float_to_uint8_t_in("), "{source}");
        let f = |xs: Acc<Vector<f32>>| xs.map(|x| x.max(0.0f32).min(300.0f32).cast::<u8>());
        let source = compile_with(f, cpu.clone()).unwrap().c_source().unwrap().to_string();
        assert!(!source.contains("_in("), "{source}");
        let f = move |xs: Acc<Vector<f32>>| xs.map(move |x| x.max(-edge).min(edge).cast::<i64>());
        let source = compile_with(f, cpu.clone()).unwrap().c_source().unwrap().to_string();
        assert!(source.contains("acc_float_to_int64_t_in32("), "{source}");
        let f = |xs: Acc<Vector<f32>>| xs.map(|x| x.max(-2.5e9f32).min(2.5e9f32).cast::<i64>());
        let source = compile_with(f, cpu).unwrap().c_source().unwrap().to_string();
        assert!(source.contains("acc_float_to_int64_t_in(") && !source.contains("_in32("), "{source}");
    }
}

#[test]
fn private_copies_start_from_identities_and_from_defaults() {
    let n = 100_000i64;
    let bins = 300i64;
    let special = [f32::NAN, -0.0, f32::INFINITY, f32::NEG_INFINITY];
    let vals: Vec<f32> =
        (0..n)
            .map(|i| {
                if i % 101 == 0 {
                    special[(i / 101) as usize % 4]
                } else {
                    ((i * 37) % 61 - 30) as f32 * 0.5
                }
            })
            .collect();
    // bins 250.. receive nothing; among them NaN, -0.0, +inf and 2.5
    let defaults: Vec<f32> = (0..bins)
        .map(|b| if b >= 250 { [f32::NAN, -0.0, f32::INFINITY, 2.5][b as usize % 4] } else { (b % 5) as f32 })
        .collect();
    let program = |which: u8| {
        let xs = use_array(Vector::from_elems(vals.clone()));
        let def = use_array(Vector::from_elems(defaults.clone()));
        let to = move |ix: &Exp<DIM1>| just(index1(unindex1(ix) % 250i64));
        match which {
            0 => xs.permute(|new, old| new + old, def, to),
            1 => xs.permute(|new, old| new.min(old), def, to),
            2 => xs.permute(|new, old| new.max(old), def, to),
            _ => xs.permute(|new, old| new * 0.5f32 + old, def, to),
        }
    };
    for which in 0..4 {
        agree(|| program(which), bits_f32);
    }
    agree(
        || {
            let xs = use_array(Vector::from_elems(vals.clone()));
            let def = use_array(Vector::from_elems(defaults.clone()));
            let base = def.map(|d| lift((constant(0i64), d.clone(), d.clone(), constant(-1i32))));
            xs.map(|x| lift((constant(1i64), x.clone(), x.clone(), x.cast::<i32>()))).permute(
                |new, old| {
                    let ((c, lo, hi, b), (d, l, h, a)) = (new.unlift(), old.unlift());
                    lift((c + d, lo.min(l), hi.max(h), b & a))
                },
                base,
                move |ix| just(index1(unindex1(ix) % 250i64)),
            )
        },
        |a, b| format!("{:?}", a.to_vec()) == format!("{:?}", b.to_vec()),
    );
}

/// Permutes whose combining function ignores the old value (Note
/// [Overwriting permutes]), with sources enough to be split among the
/// workers: `filter` of numbers and of pairs, a reversal, and a scatter
/// of many sources onto few targets, where each target must hold one of
/// the values sent to it.
#[test]
fn overwriting_permutes_agree() {
    let n = 100_003i64;
    let vals: Vec<i64> = (0..n).map(|i| (i * 7919) % 1009 - 500).collect();
    agree(
        || {
            let xs = use_array(Vector::from_elems(vals.clone()));
            xs.filter(|x| x.gt(0i64))
        },
        eq,
    );
    agree(
        || {
            let xs = use_array(Vector::from_elems(vals.clone()));
            xs.map(|x| lift((x.clone(), x.cast::<f64>() * 0.5))).filter(|p| p.fst().lt(100i64))
        },
        eq,
    );
    agree(
        || {
            let xs = use_array(Vector::from_elems(vals.clone()));
            xs.permute(
                |new, _| new.clone(),
                fill(index1(n), 0i64),
                move |ix| just(index1(n - 1i64 - unindex1(ix))),
            )
        },
        eq,
    );
    let Some(cpu) = cpu() else { return };
    let p = {
        let xs = use_array(Vector::from_elems(vals.clone()));
        xs.permute(|new, _| new.clone(), fill(index1(7i64), -1000i64), |ix| just(index1(unindex1(ix) % 7i64)))
    };
    let got = run_with(&p, &cpu).unwrap().to_vec();
    for (t, g) in got.iter().enumerate() {
        assert!(vals.iter().skip(t).step_by(7).any(|v| v == g), "target {t} holds {g}, sent to it by none");
    }
}

/// Folds over short rows, a block of rows per lane (Note [Short rows] in
/// `cpu/fold.rs`), on row counts around the block size and lengths up to
/// and past the limit: float sums bit for bit where rows are short (on
/// the CPU backend each is still reduced in order), an argmin over pairs
/// with ties, which rows of any length take in lanes (Note [Long rows in
/// lanes]: rows of 700 too), and an element whose read fails in one row,
/// the interpreter's error.
#[test]
fn folds_over_short_rows_agree() {
    for (rows, cols) in
        [(37usize, 1usize), (16, 8), (33, 7), (100, 31), (100, 32), (40, 33), (17, 0), (35, 700)]
    {
        // quarters of small integers: every sum is exact in any order, so
        // the CUDA backend's tree reductions agree to the bit too
        let xs: Vec<f32> = (0..rows * cols).map(|i| ((i * 7919) % 101) as f32 * 0.25).collect();
        let m = Array::from_vec(dim2(rows, cols), xs).unwrap();
        // (rows of 32 or more are summed with lanes within the row, Note
        // [Multi-accumulator reductions]: not in the interpreter's order)
        if cols < 32 {
            let m2 = m.clone();
            agree(|| use_array(m2.clone()).fold(0.5f32, |a, b| a + b), bits_f32);
        }
        if cols == 0 {
            continue;
        }
        let m2 = m.clone();
        agree(
            || {
                let a = use_array(m2.clone());
                generate(a.shape(), |ix| {
                    let (_, j) = unindex2(ix.clone());
                    lift((a.index(ix).cast::<i32>(), j))
                })
                .fold1(|p, q| cond(q.fst().lt(p.fst()), q.clone(), p.clone()))
            },
            eq,
        );
        let m2 = m.clone();
        agree(
            || {
                let a = use_array(m2.clone());
                let v = use_array(Vector::from_elems((0..rows as i64).collect::<Vec<i64>>()));
                // row 20 (where there is one) reads past the end of `v`
                a.imap(|ix, x| {
                    let (i, _) = unindex2(ix);
                    x.clone() + v.index(index1(cond(i.eq(20i64), i.clone() + 1000i64, i))).cast::<f32>()
                })
                .fold1(|p, q| p.clone() + q.clone())
            },
            bits_f32,
        );
    }
}

/// Quarters of small integers, `n` of them: products and sums of a few
/// hundred are exact in any order, so the CUDA backend's tree
/// reductions agree to the bit too.
fn quarters(n: usize, salt: usize) -> Vec<f32> {
    (0..n).map(|i| ((i * 7919 + salt * 104_729) % 23) as f32 * 0.25 - 2.0).collect()
}

/// Folds whose rows read down columns (Note [Column blocks] in
/// `cpu/fold.rs`): matrix products written with `replicate` (whole tiles
/// of 4 or 6 runs, partial blocks, runs split by the executor's chunks: 13 x
/// 200 rows; several blocks of the shared dimension: 300 and 257 steps),
/// a batch of products (a rank-4 source), argmaxes down the columns of a
/// transpose (a tuple, ties, no seed), and a read past the end in one
/// row, whose error must be the interpreter's.
#[test]
fn folds_down_columns_agree() {
    for (m, k, n) in [
        (5usize, 70usize, 67usize),
        (9, 3, 130),
        (1, 1, 1),
        (13, 40, 200),
        (4, 0, 5),
        (8, 65, 64),
        (13, 300, 130),
        (8, 257, 64),
    ] {
        let a = Array::from_vec(dim2(m, k), quarters(m * k, 1)).unwrap();
        let b = Array::from_vec(dim2(k, n), quarters(k * n, 2)).unwrap();
        let (a2, b2) = (a.clone(), b.clone());
        agree(
            || accelerate_programs::matmul::matmul(&use_array(a2.clone()), &use_array(b2.clone())),
            bits_f32,
        );
        // a batch of 3 products with one `b`: a rank-4 source
        let batch = Array::from_vec(dim3(3, m, k), quarters(3 * m * k, 3)).unwrap();
        let b2 = b.clone();
        agree(
            || {
                let (x, y) = (use_array(batch.clone()), use_array(b2.clone()));
                let (_, rows, _) = unindex3(x.shape());
                let (_, cols) = unindex2(y.shape());
                let xs = x.replicate(index0().all().all().fixed(cols).all());
                let ys = y.transpose().replicate(index0().fixed(3i64).fixed(rows).all().all());
                xs.zip_with(&ys, |p, q| p * q).fold(0.0f32, |s, t| s + t)
            },
            bits_f32,
        );
        if k == 0 {
            continue;
        }
        // the column argmax of `b`: rows of the transpose, no seed
        let b2 = b.clone();
        agree(
            || {
                let t = use_array(b2.clone()).transpose();
                t.imap(|ix, x| {
                    let (_, l) = unindex2(ix);
                    lift((x.clone(), l))
                })
                .fold1(|p, q| cond(q.fst().gt(p.fst()), q.clone(), p.clone()))
            },
            eq,
        );
        // column 5 (where there is one) reads past the end of `a`
        let (a2, b2) = (a.clone(), b.clone());
        agree(
            || {
                let (x, y) = (use_array(a2.clone()), use_array(b2.clone()));
                let (rows, _) = unindex2(x.shape());
                let (_, cols) = unindex2(y.shape());
                generate(index3(rows, cols, unindex2(y.shape()).0), |ix| {
                    let (i, j, l) = unindex3(ix);
                    // the same index in every failing element (a
                    // parallel backend reports any one of them)
                    let past = j.eq(5i64);
                    let at = index2(
                        cond(past.clone(), constant(1000i64), i),
                        cond(past, constant(1000i64), l.clone()),
                    );
                    x.index(at) * y.index(index2(l, j))
                })
                .fold1(|s, t| s + t)
            },
            bits_f32,
        );
    }
}

/// Products whose tiles take the shared dimension in blocks (Note [Blocks
/// of the shared dimension] in `cpu/fold.rs`), on values whose sums round
/// (sevenths), so that a change in the order of the additions shows in
/// the bits: with a seed (f32, and f64, whose blocks are shorter) and
/// without (`fold1`, whose first block starts from the first product),
/// over shared dimensions of one or more blocks and a part,
/// with and without a partial column block, on rows enough for whole
/// tiles in every chunk. With fusion every row is in a
/// tile or a column block, which reduce each row in order, so the CPU
/// backend must give the interpreter's sums to the bit (without fusion
/// the fold reads a manifest array with lanes, which may reassociate:
/// docs/semantics.md, `fold`).
#[test]
fn products_in_blocks_of_the_shared_dimension_agree_to_the_bit() {
    // the tiles are the CPU backend's (the CUDA emulator's pass runs the
    // other tests of this file)
    let Some(cpu) = cpu().filter(|c| c.backend == Backend::Cpu) else { return };
    // one worker: the executor cuts the rows into 4 chunks, each of them
    // with whole tiles at these sizes (Note [Chunks])
    let cpu = cpu.with_cpu(CpuOptions { threads: 1, ..Config::default().cpu });
    fn same_bits<Sh: Shape, E: Elt + Copy + std::fmt::Debug>(
        p: &Acc<Array<Sh, E>>,
        cpu: &Config,
        bits: impl Fn(E) -> u64,
    ) {
        let want = run_with(p, &interp()).unwrap();
        let got = run_with(p, cpu).unwrap();
        assert_eq!(want.dims(), got.dims());
        for (i, (w, g)) in want.to_vec().into_iter().zip(got.to_vec()).enumerate() {
            assert_eq!(bits(w), bits(g), "element {i}: interpreter {w:?}, cpu {g:?}");
        }
    }
    fn product<E: NumElt + Copy>(x: Acc<Matrix<E>>, y: Acc<Matrix<E>>, seed: Option<E>) -> Acc<Matrix<E>> {
        let (rows, _) = unindex2(x.shape());
        let (_, cols) = unindex2(y.shape());
        let xs = x.replicate(index0().all().fixed(cols).all());
        let ys = y.transpose().replicate(index0().fixed(rows).all().all());
        let products = xs.zip_with(&ys, |p, q| p * q);
        match seed {
            Some(z) => products.fold(z, |s, t| s + t),
            None => products.fold1(|s, t| s + t),
        }
    }
    let sevenths = |n: usize, salt: usize| -> Vec<f32> {
        (0..n).map(|i| ((i * 2_654_435_761 + salt * 97) % 1000) as f32 / 7.0 - 70.0).collect()
    };
    // (where tiles fill AVX-512's registers, a tile's runs are 64 f32 or
    // 32 f64 rows and blocks 128 steps of either, else runs of 16 rows
    // and blocks of 512 f32 or 256 f64 steps: every shared dimension here
    // is one or more blocks and a part on either kind of host, each
    // block's reads of `b` packed (Note [Packed operands]), and the rows
    // of every size end in a partial run and some in rows outside tiles,
    // Note [Tiles in registers])
    for (m, k, n) in [(48usize, 257usize, 65usize), (49, 600, 64), (50, 300, 97)] {
        let (a, b) = (sevenths(m * k, 1), sevenths(k * n, 2));
        let f32s = |v: &[f32], r, c| Array::from_vec(dim2(r, c), v.to_vec()).unwrap();
        let (a32, b32) = (use_array(f32s(&a, m, k)), use_array(f32s(&b, k, n)));
        let bits32 = |x: f32| u64::from(x.to_bits());
        same_bits(&product(a32.clone(), b32.clone(), Some(0.0f32)), &cpu, bits32);
        if k > 500 {
            same_bits(&product(a32, b32, None), &cpu, bits32);
            continue;
        }
        let f64s = |v: &[f32], r, c| {
            Array::from_vec(dim2(r, c), v.iter().map(|&x| f64::from(x) / 3.0).collect()).unwrap()
        };
        let (a64, b64) = (use_array(f64s(&a, m, k)), use_array(f64s(&b, k, n)));
        same_bits(&product(a64, b64, Some(0.0f64)), &cpu, f64::to_bits);
    }
}

/// Squared distances between the rows of two matrices (`sum_k (x[i][k] -
/// y[j][k])^2`, a product with the second operand transposed, `a b^T`):
/// `y`'s rows are far apart across the rows of the result, and its reads
/// are packed a block at a time, which is what makes the reduction take
/// tiles (Note [Packed operands] in `cpu/packed.rs`). On values whose
/// sums round, with result widths of a whole run and a part (97), a
/// whole run (64) and less than one (37), rows in whole tiles, with some
/// left over, and too few for a tile, shared dimensions of one block
/// or several and a part, with a seed and without (`fold1`): a tile
/// still reduces each row in order, so the CPU backend's sums in tiles
/// are the interpreter's to the bit.
#[test]
fn distances_between_rows_in_packed_tiles_agree_to_the_bit() {
    let Some(cpu) = cpu().filter(|c| c.backend == Backend::Cpu) else { return };
    // one worker: whole tiles in every chunk (Note [Chunks])
    let cpu = cpu.with_cpu(CpuOptions { threads: 1, ..Config::default().cpu });
    fn distances<E: NumElt + Copy>(x: Acc<Matrix<E>>, y: Acc<Matrix<E>>, seed: Option<E>) -> Acc<Matrix<E>> {
        let (m, _) = unindex2(x.shape());
        let (n, _) = unindex2(y.shape());
        let xs = x.replicate(index0().all().fixed(n).all());
        let ys = y.replicate(index0().fixed(m).all().all());
        let squares = xs.zip_with(&ys, |p, q| {
            let d = p - q;
            &d * &d
        });
        match seed {
            Some(z) => squares.fold(z, |s, t| s + t),
            None => squares.fold1(|s, t| s + t),
        }
    }
    let sevenths = |n: usize, salt: usize| -> Vec<f32> {
        (0..n).map(|i| ((i * 2_654_435_761 + salt * 97) % 1000) as f32 / 7.0 - 70.0).collect()
    };
    // (48 rows are whole tiles, 49 and 50 leave a row or two, and 3 fill
    // no tile: rows outside tiles are reduced one by one, in lanes that
    // may reassociate, docs/semantics.md, `fold`, so those agree within
    // the rounding of a reassociated sum of `k` nonnegative terms; every
    // host's tiles have 6 runs, or 3 of `f64` without AVX-512, so the
    // rows before the last `m % 6` are in tiles)
    fn agree((m, k, n): (usize, usize, usize), i: usize, (w, g): (f64, f64), same_bits: bool, eps: f64) {
        let tiled = i / n < m - m % 6;
        let close = if tiled { same_bits } else { (w - g).abs() <= (k + 1) as f64 * eps * w.abs() };
        assert!(close, "{m} x {k} by {n}, element {i} (tiled: {tiled}): interpreter {w}, cpu {g}");
    }
    for (m, k, n) in [(48usize, 300usize, 97usize), (49, 700, 64), (50, 130, 37), (3, 200, 70)] {
        let (x, y) = (sevenths(m * k, 3), sevenths(n * k, 4));
        let f32s = |v: &[f32], r, c| use_array(Array::from_vec(dim2(r, c), v.to_vec()).unwrap());
        let (x32, y32) = (f32s(&x, m, k), f32s(&y, n, k));
        let p = distances(x32.clone(), y32.clone(), Some(0.0f32));
        let f = |x: Acc<Matrix<f32>>, y: Acc<Matrix<f32>>| distances(x, y, Some(0.0f32));
        let c = compile_with(f, cpu.clone()).unwrap().c_source().unwrap().to_string();
        assert!(c.contains("*restrict pack"), "the rows of y are not packed:\n{c}");
        for p in [p, distances(x32, y32, None)] {
            let want = run_with(&p, &interp()).unwrap();
            let got = run_with(&p, &cpu).unwrap();
            assert_eq!(want.dims(), got.dims());
            for (i, (w, g)) in want.to_vec().into_iter().zip(got.to_vec()).enumerate() {
                let eps = f64::from(f32::EPSILON);
                agree((m, k, n), i, (f64::from(w), f64::from(g)), w.to_bits() == g.to_bits(), eps);
            }
        }
        let f64s = |v: &[f32], r, c| {
            use_array(Array::from_vec(dim2(r, c), v.iter().map(|&t| f64::from(t) / 3.0).collect()).unwrap())
        };
        let p = distances(f64s(&x, m, k), f64s(&y, n, k), Some(0.0f64));
        let (want, got) = (run_with(&p, &interp()).unwrap(), run_with(&p, &cpu).unwrap());
        for (i, (w, g)) in want.to_vec().into_iter().zip(got.to_vec()).enumerate() {
            agree((m, k, n), i, (w, g), w.to_bits() == g.to_bits(), f64::EPSILON);
        }
    }
}

/// Loops that read arrays at indices every element shares run in
/// lockstep with their counters as scalars (Note [Uniform loops] in
/// `cpu/generate.rs`): k-means' nearest centroid (an `sfoldl` over the
/// centroids) for every point, with no centroid, one, and 17 (ties
/// included: the first of equally near centroids wins), blocks of 32
/// points and the rest; a loop whose state mixes a counter with a running
/// value and reads past the end of its vector at a step every element
/// takes, whose error must be the interpreter's; and a loop whose reads
/// follow the element (not uniform: one element at a time).
/// Sparse products whose rows fold in order (a few non-zeros each) with
/// one column past `x` in one row: the fast function leaves the row's
/// loop (Note [Optimistic checks in loops]), the checked one reports the
/// read as the interpreter does.
#[test]
fn sparse_products_with_a_column_out_of_bounds_agree() {
    for bad in [None, Some(0usize), Some(7), Some(35)] {
        let lens: Vec<i64> = (0..12).map(|r| (r * 5 % 7) as i64).collect();
        let nnz = lens.iter().sum::<i64>() as usize;
        let mut offs = vec![0i64];
        for l in &lens {
            offs.push(offs.last().unwrap() + l);
        }
        let mut cols: Vec<i64> = (0..nnz).map(|k| (k * 3 % 10) as i64).collect();
        if let Some(b) = bad.filter(|&b| b < nnz) {
            cols[b] = 10;
        }
        let vals: Vec<f32> = (0..nnz).map(|k| (k % 5) as f32 - 2.0).collect();
        let x: Vec<f32> = (0..10).map(|k| k as f32 * 0.5).collect();
        agree(
            || {
                let (vals, cols) = (
                    use_array(Vector::from_elems(vals.clone())),
                    use_array(Vector::from_elems(cols.clone())),
                );
                let x = use_array(Vector::from_elems(x.clone()));
                generate(vals.shape(), move |ix| vals.index(ix.clone()) * x.index(index1(cols.index(ix))))
                    .fold_seg_offsets(0.0f32, |a, b| a + b, use_array(Vector::from_elems(offs.clone())))
            },
            bits_f32,
        );
    }
}

/// A matrix of `rows x cols` distinct integers (as f32, exact).
fn distinct(rows: usize, cols: usize) -> Matrix<f32> {
    Array::from_vec(Snoc(Snoc(Z, rows as i64), cols as i64), (0..rows * cols).map(|i| i as f32).collect())
        .unwrap()
}

/// Producers that read an array transposed are written a tile at a time
/// (Note [Tiled rows]): shapes smaller than a tile, crossing tiles'
/// edges, and large enough that the workers' chunks begin and end inside
/// rows; a rank-3 array; a transposed read beside a plain one; and a read
/// out of bounds, whose error the row-major form reports.
#[test]
fn transposed_reads_written_in_tiles_agree() {
    for (rows, cols) in [(1, 1), (3, 5), (17, 33), (64, 16), (300, 257), (129, 1000)] {
        agree(|| use_array(distinct(rows, cols)).transpose(), eq);
        agree(
            || {
                let a = use_array(distinct(rows, cols));
                let t = a.transpose();
                a.transpose().zip_with(t.map(|x| x * 2.0f32), |x, y| x + y)
            },
            eq,
        );
    }
    let n = 200;
    agree(
        || {
            let a = use_array(distinct(n, n));
            let t = a.transpose();
            a.zip_with(&t, |x, y| x - y)
        },
        eq,
    );
    let cube = Array::from_vec(Snoc(Snoc(Snoc(Z, 3), 70), 90), (0..3 * 70 * 90).collect()).unwrap();
    agree(
        || {
            let a = use_array(cube.clone());
            a.backpermute(index3(3i64, 90i64, 70i64), |ix| {
                let (b, i, j) = unindex3(ix);
                index3(b, j, i)
            })
        },
        eq,
    );
    // one column past the end: the reads of the last output row fail
    agree_up_to_the_index(
        || {
            let a = use_array(distinct(150, 120));
            a.backpermute(index2(121i64, 150i64), |ix| {
                let (i, j) = unindex2(ix);
                index2(j, i)
            })
        },
        eq,
    );
}

/// Rows of every length from 1 to 45 of a generated matrix whose fast
/// form runs a row in blocks of 16, then of 8 and of 4, then one element
/// at a time (Note [Short rows in fast functions] in `cpu/generate.rs`):
/// each element of a matrix divided by the square root of its column's
/// weight, read by index (so that the function has a fast form), bit for
/// bit; a weight vector one short, whose read past its end in the last
/// column must be the interpreter's error.
#[test]
fn short_rows_of_generated_elements_agree() {
    for cols in 1..=45usize {
        let rows = 7;
        let m = Array::from_vec(dim2(rows, cols), quarters(rows * cols, cols)).unwrap();
        for short in [0, 1] {
            let w = Vector::from_elems((0..cols - short).map(|j| 1.0 + j as f32 * 0.37).collect());
            let m = m.clone();
            agree(
                move || {
                    let (m, w) = (use_array(m.clone()), use_array(w.clone()));
                    generate(m.shape(), move |ix| {
                        let (_, j) = unindex2(ix.clone());
                        m.index(ix) / w.index(index1(j)).sqrt()
                    })
                },
                bits_f32,
            );
        }
    }
}

/// Reductions down the columns of tall, narrow matrices cut the columns
/// length into pieces, each for a block of neighbouring columns (Note
/// [Column blocks in pieces] in `cpu/fold.rs`): 5 columns, 70, and 300
/// of `f64` (a block of 512 and a part of another: blocks of 1024 `f32`
/// would need a matrix too large for the interpreter); a sum with a seed,
/// a `fold1` of a maximum with the column's position, and one column read
/// past the end of the matrix, whose error the checked form, a row at a
/// time over the same pieces, must report. Each element is a loop (whose
/// estimated work makes the executor's chunks short enough for pieces at
/// these sizes) over small integers, so that every sum is exact in any
/// order.
#[test]
fn reductions_down_few_long_columns_agree() {
    let Some(cpu) = cpu() else { return };
    let options = CpuOptions { threads: 2, ..cpu.cpu.clone() };
    let cpu = cpu.with_cpu(options);
    fn poly(x: &Exp<f64>) -> Exp<f64> {
        let y = x.clone() * x.clone() - x.clone() * 3.0 + 2.0;
        iterate(3i64, |z| (z.clone() * 3.0 - z.abs() * 2.0 + 1.0).min(5000.0), y)
    }
    for (rows, cols) in [(6000usize, 5usize), (5001, 70), (1500, 600)] {
        let m: Vec<f64> = (0..rows * cols).map(|i| ((i * 7919) % 61) as f64 - 30.0).collect();
        let m = Array::from_vec(dim2(rows, cols), m).unwrap();
        let run = |build: &dyn Fn() -> Acc<Vector<f64>>| {
            let want = run_with(&build(), &interp());
            let got = run_with(&build(), &cpu);
            match (want, got) {
                (Ok(w), Ok(g)) => assert_eq!(w.to_vec(), g.to_vec(), "{rows} x {cols}"),
                (Err(w), Err(g)) => {
                    assert_eq!(without_the_index(&w.to_string()), without_the_index(&g.to_string()))
                }
                (w, g) => panic!("{rows} x {cols}: interpreter {w:?}, cpu {g:?}"),
            }
        };
        run(&|| use_array(m.clone()).map(poly).transpose().fold(1.0f64, |x, y| x + y));
        // the column 3 reads one row past the end of the matrix
        run(&|| {
            let a = use_array(m.clone());
            generate(index2(cols as i64, rows as i64), |ix| {
                let (j, i) = unindex2(ix);
                let past = j.eq(3i64).and(i.eq(rows as i64 - 1));
                poly(&a.index(index2(cond(past, constant(rows as i64), i), j)))
            })
            .fold(0.0f64, |x, y| x + y)
        });
        let t = use_array(m.clone());
        let want = run_with(
            &t.clone()
                .map(poly)
                .transpose()
                .imap(|ix, x| lift((x.clone(), unindex2(ix).1)))
                .fold1(|p, q| cond(q.fst().gt(p.fst()), q.clone(), p.clone())),
            &interp(),
        )
        .unwrap();
        let got = run_with(
            &t.map(poly)
                .transpose()
                .imap(|ix, x| lift((x.clone(), unindex2(ix).1)))
                .fold1(|p, q| cond(q.fst().gt(p.fst()), q.clone(), p.clone())),
            &cpu,
        )
        .unwrap();
        assert_eq!(want.to_vec(), got.to_vec(), "{rows} x {cols}: the maxima");
    }
}

/// Column reductions (`transpose` then `fold`) go by blocks as wide as
/// 4 KiB of accumulators allow (Note [Wide column blocks]): 1024 `f32`
/// columns, 512 `f64` ones, 256 of a tuple of 12 bytes; matrices narrower
/// than a block, a block and a part, and a column past the end read in
/// the fast form, which the checked form reports.
#[test]
fn wide_column_blocks_agree() {
    for (rows, cols) in [(37, 2500), (3, 1024), (130, 700), (1, 4099)] {
        let m = distinct(rows, cols).to_vec().iter().map(|x| x % 97.0).collect::<Vec<f32>>();
        let m = Array::from_vec(Snoc(Snoc(Z, rows as i64), cols as i64), m).unwrap();
        agree(|| use_array(m.clone()).transpose().fold(0.0f32, |x, y| x + y), eq);
        agree(|| use_array(m.clone()).map(|x| x.cast::<f64>()).transpose().fold(1.0f64, |x, y| x + y), eq);
        agree(
            || {
                let t = use_array(m.clone()).transpose();
                t.imap(|ix, x| lift((x.clone(), x * 2.0f32, unindex2(ix).1.cast::<i32>())))
                    .fold1(|p, q| cond(q.unlift().0.gt(p.unlift().0), q.clone(), p.clone()))
            },
            eq,
        );
        agree_up_to_the_index(
            || {
                let a = use_array(m.clone());
                generate(index2(cols as i64 + 1, rows as i64), |ix| {
                    let (j, i) = unindex2(ix);
                    a.index(index2(i, j))
                })
                .fold(0.0f32, |x, y| x + y)
            },
            eq,
        );
    }
}

/// Uniform loops whose lanes read neighbouring elements (Note [Reads
/// along the lanes] in `cpu/generate.rs`): each row's lanes sum a column
/// of a table over the same steps, the reads checked at the first and the
/// last lane (Note [Reads checked at the ends of the lanes]). Rows of 64,
/// 96 (blocks of 64 and of 32) and 100 lanes (and one at a time after
/// them); a column one past the table in the last lanes only, which the
/// ends' check must catch as the interpreter does; and the same read in a
/// conditional's branch, which the lanes check themselves.
#[test]
fn uniform_loops_reading_along_the_lanes_agree() {
    for (cols, shift) in [(64i64, 0i64), (96, 0), (100, 0), (64, 1), (100, 1)] {
        let steps = 5i64;
        let t: Vec<f32> = (0..steps * cols).map(|i| ((i * 7) % 13) as f32 - 6.0).collect();
        let table = Array::from_vec(Snoc(Snoc(Z, steps), cols), t).unwrap();
        for branch in [false, false, true] {
            let table = table.clone();
            agree_up_to_the_index(
                move || {
                    let tab = use_array(table.clone());
                    generate(index2(3i64, cols), move |ix| {
                        let (r, k) = unindex2(ix);
                        let tab = tab.clone();
                        let (_, sum) = while_loop(
                            lift((constant(0i64), constant(0.0f32))),
                            |s: &Exp<(i64, f32)>| s.unlift().0.lt(steps),
                            move |s: &Exp<(i64, f32)>| {
                                let (i, a) = s.unlift();
                                let read = tab.index(index2(&i, &k + shift));
                                let term = if branch { k.lt(&r + 60i64).select(read, 1.0f32) } else { read };
                                lift((&i + 1i64, a + term))
                            },
                        )
                        .unlift();
                        sum
                    })
                },
                bits_f32,
            );
        }
    }
}

/// A uniform loop under a `let` that gathers (`g = vals[idx[k]]`, used by
/// the initial state and by every step): the lanes evaluate the `let` in
/// each step without checks, after every lane evaluated it with them for
/// its initial state (Note [Reads checked at the ends of the lanes]); one
/// index past `vals` in a middle lane, the first or the last.
#[test]
fn uniform_loops_under_a_gathering_let_agree() {
    for bad in [None, Some(10usize), Some(0), Some(63)] {
        let idx: Vec<i64> = (0..64).map(|k| if Some(k) == bad { 999 } else { (k as i64 * 7) % 64 }).collect();
        let vals: Vec<f32> = (0..64).map(|v| v as f32 * 0.5 - 3.0).collect();
        let (idx, vals) = (Vector::from_elems(idx), Vector::from_elems(vals));
        agree_up_to_the_index(
            move || {
                let (idx, vals) = (use_array(idx.clone()), use_array(vals.clone()));
                let tab = generate(index2(4i64, 64i64), |ix| {
                    let (i, k) = unindex2(ix);
                    (i * 64i64 + k).cast::<f32>()
                });
                generate(index2(2i64, 64i64), move |ix| {
                    let (_, k) = unindex2(ix);
                    let g = vals.index(index1(idx.index(index1(&k))));
                    let tab = tab.clone();
                    let (_, sum) = while_loop(
                        lift((constant(0i64), &g - 1.0f32)),
                        |s: &Exp<(i64, f32)>| s.unlift().0.lt(4i64),
                        move |s: &Exp<(i64, f32)>| {
                            let (i, a) = s.unlift();
                            lift((&i + 1i64, a + tab.index(index2(&i, &k)) * &g))
                        },
                    )
                    .unlift();
                    sum
                })
            },
            bits_f32,
        );
    }
}

#[test]
fn uniform_loops_agree() {
    for (n, k) in [(37usize, 0usize), (1000, 1), (1000, 17), (5, 3)] {
        let pts: Vec<(f32, f32)> = (0..n).map(|i| (((i * 37) % 11) as f32, ((i * 13) % 7) as f32)).collect();
        let cs: Vec<(f32, f32)> = (0..k).map(|j| (((j * 5) % 11) as f32, ((j * 3) % 7) as f32)).collect();
        let (p, c) = (Vector::from_elems(pts), Vector::from_elems(cs));
        let (p2, c2) = (p.clone(), c.clone());
        agree(|| accelerate_programs::kmeans::nearest(&use_array(p2.clone()), &use_array(c2.clone())), eq);
        // the step past the end of the centroids' x: the same index in
        // every element
        let (p2, c2) = (p.clone(), c.clone());
        agree(
            || {
                let (ps, cs) = (use_array(p2.clone()), use_array(c2.clone()));
                let xs = cs.map(|c| c.fst());
                ps.map(move |q| {
                    let start = lift((constant(0i64), q.fst()));
                    let (_, acc) = while_loop(
                        start,
                        |s: &Exp<(i64, f32)>| s.fst().le(xs.length()),
                        |s: &Exp<(i64, f32)>| {
                            let (i, a) = s.unlift();
                            lift((i.clone() + 1i64, a.max(xs.index(index1(i)))))
                        },
                    )
                    .unlift();
                    acc
                })
            },
            bits_f32,
        );
        // reads at an index that follows the element
        let (p2, c2) = (p.clone(), c.clone());
        agree(
            || {
                let (ps, cs) = (use_array(p2.clone()), use_array(c2.clone()));
                let xs = cs.map(|c| c.fst());
                ps.map(move |q| {
                    let first = q.snd().cast::<i64>();
                    let (_, acc) = while_loop(
                        lift((first, constant(0.0f32))),
                        |s: &Exp<(i64, f32)>| s.fst().lt(xs.length()),
                        |s: &Exp<(i64, f32)>| {
                            let (i, a) = s.unlift();
                            lift((i.clone() + 1i64, a + xs.index(index1(i))))
                        },
                    )
                    .unlift();
                    acc
                })
            },
            bits_f32,
        );
    }
}

/// Every boundary, on matrices whose rows the executor's chunks split
/// (300 x 301), and on ones with little or no interior (Note: the
/// interior and the border are computed apart, `cpu/stencil.rs`).
#[test]
fn stencils_agree_on_every_boundary() {
    for (rows, cols) in [(7usize, 9usize), (300, 301), (3, 3), (2, 5)] {
        let m = Array::from_vec(
            dim2(rows, cols),
            (0..rows * cols).map(|i| (i * 3 % 11) as i32).collect::<Vec<_>>(),
        )
        .unwrap();
        stencils_of(m);
    }
}

fn stencils_of(m: Matrix<i32>) {
    for b in 0..4 {
        agree(
            || {
                let a = use_array(m.clone());
                let boundary = match b {
                    0 => Boundary::clamp(),
                    1 => Boundary::mirror(),
                    2 => Boundary::wrap(),
                    _ => Boundary::constant(-1i32),
                };
                a.stencil(
                    |p: [[Exp<i32>; 3]; 3]| p.into_iter().flatten().fold(constant(0i32), |s, x| s * 3i32 + x),
                    boundary,
                )
            },
            eq,
        );
    }
}

/// A five-point pattern on vectors (margin 2), long enough to be split
/// into chunks, and shorter than the pattern's reach.
#[test]
fn vector_stencils_with_a_wide_pattern_agree() {
    for n in [100_000usize, 5, 3] {
        let v = Vector::from_elems((0..n).map(|i| (i * 7 % 13) as f32).collect());
        for b in 0..4 {
            agree(
                || {
                    let a = use_array(v.clone());
                    let boundary = match b {
                        0 => Boundary::clamp(),
                        1 => Boundary::mirror(),
                        2 => Boundary::wrap(),
                        _ => Boundary::constant(0.5f32),
                    };
                    a.stencil(
                        |[a, b, c, d, e]: [Exp<f32>; 5]| a - b * 2.0f32 + c * 3.0f32 - d + e * 0.25f32,
                        boundary,
                    )
                },
                bits_f32,
            );
        }
    }
}

#[test]
fn a_program_compiled_twice_has_one_source_and_one_result() {
    // that the second compile runs no compiler is tests/cpu_cache.rs's
    // (a test binary of its own, so that no other test compiles meanwhile)
    let Some(cpu) = cpu() else { return };
    let f = |xs: Acc<Vector<i64>>| xs.map(|x| x * 1234567i64 + 89i64).fold(0i64, |a, b| a + b);
    let p = compile_with(f, cpu.clone()).unwrap();
    let q = compile_with(f, cpu).unwrap();
    assert_eq!(p.c_source(), q.c_source());
    let xs = Vector::from_elems((0..1000i64).collect());
    assert_eq!(p.run(&xs).unwrap().to_vec(), q.run(&xs).unwrap().to_vec());
    assert!(
        p.c_source().unwrap().contains("void k0") || p.c_source().unwrap().contains("k0_rows("),
        "the generated code is available"
    );
    assert_eq!(p.kernel_count(), Some(1), "the map is fused into the fold");
}

#[test]
fn a_reshape_to_another_size_inside_a_kernel_is_the_same_error() {
    // a reshape of a delayed array to another size fails inside a kernel
    agree(
        || {
            let a = use_array(Vector::from_elems((0..12i32).collect::<Vec<_>>()));
            a.map(|x| x + 1i32).reshape(dim2(1, 5)).fold(0i32, |x, y| x + y)
        },
        |a: &Vector<i32>, b: &Vector<i32>| a.to_vec() == b.to_vec(),
    );
}

/// `acc * 31 + x` as an associative operator on affine maps (see
/// `tests/ops_library_reduce.rs`): regrouping keeps the exact result, so
/// the seed's single application and the order of the elements show.
fn affine(p: &Exp<(i32, i32)>, q: &Exp<(i32, i32)>) -> Exp<(i32, i32)> {
    lift((p.fst() * q.fst(), p.snd() * q.fst() + q.snd()))
}

#[test]
fn folds_of_tuples_with_a_non_commutative_operator_agree() {
    for n in [5, 31, 32, 33, 48, 100, 5000, 70_000] {
        let xs: Vec<i32> = (0..n).map(|i: i32| i.wrapping_mul(-1_640_531_535) >> 7).collect();
        agree(
            || {
                use_array(Vector::from_elems(xs.clone()))
                    .map(|x| lift((constant(31i32), x)))
                    .fold(lift((constant(1i32), constant(-26i32))), affine)
            },
            eq,
        );
        agree(
            || use_array(Vector::from_elems(xs.clone())).map(|x| lift((constant(31i32), x))).fold1(affine),
            eq,
        );
    }
}

/// Note [Optimistic checks]: a reduction whose elements read an array by
/// index runs a fast form whose checks only set a flag; when one fails,
/// the range runs again with the full checks, so that the error is the
/// interpreter's (the same first index, the same line), whether the read
/// is of the row (invariant in the reduction's loop) or of the column.
#[test]
fn reads_outside_an_array_inside_long_reductions_are_the_same_error() {
    for (rows, cols, row_shift, col_shift) in
        [(3, 100, 0, 0), (3, 100, 0, 1), (40, 40, 1, 0), (2, 70_000, 0, 1)]
    {
        agree(
            move || {
                let n = rows.max(cols);
                let xs = use_array(small_ints(n, 7));
                generate(index2(rows as i64, cols as i64), move |ix| {
                    let (i, j) = unindex2(ix);
                    xs.index(index1(i + row_shift as i64)) * xs.index(index1(j + col_shift as i64))
                })
                .fold(0.0f32, |a, b| a + b)
            },
            bits_f32,
        );
    }
}

/// A binding whose read fails but whose variable the taken branch does
/// not use is no error (Note [Deferred errors]); the fast form cannot tell
/// and runs the range again with the checks, which agree.
#[test]
fn an_unused_failing_binding_inside_a_long_reduction_is_no_error() {
    agree(
        || {
            let n = 1000i64;
            let xs = use_array(small_ints(n as usize, 5));
            generate(index1(n), move |ix| {
                let i = unindex1(ix);
                let next = xs.index(index1(&i + 1));
                cond(i.lt(n - 1), &next * &next + &next, constant(1.0f32))
            })
            .fold(0.0f32, |a, b| a + b)
        },
        bits_f32,
    );
}

/// A sum over elements that read an array on one side of a `select`
/// only (PageRank's dangling rank, `d == 0 ? r : 0`): fused, the read is
/// a conditional load in the reduction's lane loop, which GCC 12.2
/// vectorised with the first vector's mask for every vector of the lanes
/// (Note [Masked loads in lane loops]). Rows long enough for lanes, in
/// one row and in many, with the zero flags every tenth element so that
/// the two vectors of lanes have different masks.
#[test]
fn sums_of_elements_read_on_one_side_of_a_select_agree() {
    for (rows, n) in [(1, 48), (1, 5000), (3, 100), (2, 70_000)] {
        let flags: Vec<i64> = (0..rows * n).map(|i| if i % 10 == 0 { 0 } else { 1 + i as i64 % 3 }).collect();
        let values: Vec<f32> = (0..rows * n).map(|i| (1 + i % 7) as f32).collect();
        agree(
            || {
                let d = use_array(Array::from_vec(dim2(rows, n), flags.clone()).unwrap());
                let r = use_array(Array::from_vec(dim2(rows, n), values.clone()).unwrap());
                r.zip_with(d, |r, d| d.eq(0i64).select(r, 0.0f32)).fold(0.0f32, |a, b| a + b)
            },
            bits_f32,
        );
    }
}

/// Note [Loops in lockstep]: neighbouring elements whose scalar loops run
/// different numbers of iterations (0 to 36 here, and a wrapping integer
/// state) agree with the interpreter, over positions and over rows, with
/// a partial block of lanes at the end of each range.
#[test]
fn while_loops_of_different_lengths_in_neighbouring_elements_agree() {
    // the counts read from an array (a function that can fail: lockstep in
    // its fast form) or computed (one that cannot: lockstep always)
    for (rows, cols, read) in [(1, 1000, true), (7, 37, true), (3, 16, false), (2, 5, true), (5, 100, false)]
    {
        agree(
            move || {
                let xs = use_array(Vector::from_elems((0..cols as i64).map(|i| (i * 7919) % 37).collect()));
                generate(index2(rows as i64, cols as i64), move |ix| {
                    let (r, c) = unindex2(ix);
                    let n = if read { xs.index(index1(&c)) + r } else { ((&c * 7919i64) & 31i64) + r };
                    let end = while_loop(
                        lift((constant(0i64), c)),
                        move |s: &Exp<(i64, i64)>| s.unlift().0.lt(n),
                        |s: &Exp<(i64, i64)>| {
                            let (k, x) = s.unlift();
                            lift((&k + 1, x * 6364136223846793005i64 + k))
                        },
                    );
                    let (_, x) = end.unlift();
                    x
                })
            },
            eq,
        );
    }
}

/// Note [A loop's tail in lockstep]: loops whose result the element uses
/// twice after them (a `let` of the loop, then its tail: a read at the
/// result too) agree with the interpreter, with a read past the end in
/// the tail of one element.
#[test]
fn while_loops_with_a_tail_agree() {
    for (cols, past) in [(1000i64, None), (37, None), (100, Some(61i64))] {
        agree_up_to_the_index(
            move || {
                let xs = use_array(Vector::from_elems((0..cols).map(|i| (i * 7919) % 37).collect()));
                generate(index1(cols), move |ix| {
                    let c = unindex1(ix);
                    let n = ((&c * 7919i64) & 31i64) + 1i64;
                    let end = while_loop(
                        lift((constant(0i64), c.clone())),
                        move |s: &Exp<(i64, i64)>| s.unlift().0.lt(n),
                        |s: &Exp<(i64, i64)>| {
                            let (k, x) = s.unlift();
                            lift((&k + 1, x * 6364136223846793005i64 + k))
                        },
                    );
                    let (k, x) = end.unlift();
                    let at = match past {
                        Some(p) => cond(c.eq(p), constant(cols), &k - 1i64),
                        None => &k - 1i64,
                    };
                    (&x ^ (&x >> 7i64)) + &k * xs.index(index1(at))
                })
            },
            eq,
        );
    }
}

/// A loop that divides by zero in one element: with the lanes run in
/// lockstep only in the fast form, the error is the interpreter's.
#[test]
fn a_failing_while_loop_in_one_element_is_the_same_error() {
    agree(
        || {
            let ds =
                use_array(Vector::from_elems((0..100i32).map(|i| if i == 57 { 0 } else { 3 }).collect()));
            generate(index1(100i64), move |ix| {
                let d = ds.index(ix);
                let end = while_loop(
                    lift((constant(0i32), constant(1000i32))),
                    |s: &Exp<(i32, i32)>| s.unlift().0.lt(5),
                    move |s: &Exp<(i32, i32)>| {
                        let (k, x) = s.unlift();
                        lift((k + 1, x / d))
                    },
                );
                let (_, x) = end.unlift();
                x
            })
        },
        eq,
    );
}

/// A loop whose body runs a loop of its own is not run in lockstep: a
/// finished lane would run the inner loop on a state the program never
/// gives it. Here `k` counts down from `n` to 0 and the inner loop counts
/// `j` up from 0 to `k - 1`, which it reaches from a finished lane's
/// `k = 0` only after 2^64 steps (in lockstep this test does not end).
#[test]
fn nested_while_loops_agree() {
    agree(
        || {
            generate(index1(100i64), |ix| {
                let n = unindex1(ix) % 7i64;
                let end = while_loop(
                    lift((n, constant(0i64))),
                    |s: &Exp<(i64, i64)>| s.unlift().0.gt(0i64),
                    |s: &Exp<(i64, i64)>| {
                        let (k, acc) = s.unlift();
                        let to = k - 1i64;
                        let inner = while_loop(
                            lift((constant(0i64), constant(1i64))),
                            |s: &Exp<(i64, i64)>| s.unlift().0.ne(&to),
                            |s: &Exp<(i64, i64)>| {
                                let (j, x) = s.unlift();
                                lift((&j + 1i64, x * 3i64 + j))
                            },
                        );
                        let (_, x) = inner.unlift();
                        lift((to, acc + x))
                    },
                );
                let (_, acc) = end.unlift();
                acc
            })
        },
        eq,
    );
}

/// The forms of a one-hot sum the tests try (Note [Sums of one-hot rows]
/// in `accelerate-opt/src/one_hot.rs`).
#[derive(Clone, Copy, Debug)]
enum OneHot {
    /// `key == cast<i32>(row)`, the value and zero in that order.
    Eq,
    /// `cast<i32>(row) == key`.
    Flipped,
    /// `key != cast<i32>(row)`, zero first.
    Negated,
    /// `key == cast<u8>(row)`: more rows than `u8` has values reach the
    /// fold as written.
    Narrow,
    /// `key == row` for `i64` keys: no `acond`.
    Wide,
}

/// The sums of the one-hot rows of `rows x keys.len()` of `(x, 1)` where
/// the key of column `j` is `keys[j]` (cast to the form's type), in the
/// `form` given; the value of column `j` is `xs[j + offset]`.
fn one_hot_sums(
    form: OneHot,
    keys: Acc<Vector<i64>>,
    xs: Acc<Vector<f32>>,
    rows: Exp<i64>,
    offset: Exp<i64>,
) -> Acc<Vector<(f32, i32)>> {
    let n = keys.length();
    let k32 = keys.map(|k| k.cast::<i32>());
    let k8 = keys.map(|k| k.cast::<u8>());
    generate(index2(rows, n), move |ix| {
        let (c, j) = unindex2(ix);
        let at = index1(&j);
        let test = match form {
            OneHot::Eq => k32.index(&at).eq(c.cast::<i32>()),
            OneHot::Flipped => c.cast::<i32>().eq(k32.index(&at)),
            OneHot::Negated => k32.index(&at).ne(c.cast::<i32>()),
            OneHot::Narrow => k8.index(&at).eq(c.cast::<u8>()),
            OneHot::Wide => keys.index(&at).eq(&c),
        };
        let value = lift((xs.index(index1(&j + &offset)), constant(1i32)));
        let zero = constant((0.0f32, 0i32));
        match form {
            OneHot::Negated => cond(test, zero, value),
            _ => cond(test, value, zero),
        }
    })
    .fold((0.0f32, 0i32), |a, b| {
        let (ax, an) = a.unlift();
        let (bx, bn) = b.unlift();
        lift((ax + bx, an + bn))
    })
}

#[test]
fn sums_of_one_hot_rows_run_as_permutes_and_agree_with_the_fold() {
    let Some(cpu) = cpu() else { return };
    // (the interpreter evaluates all rows x n elements)
    let n = 2_053usize;
    // keys in range, negative, past the rows, and (for u8) wrapping
    let keys: Vec<i64> = (0..n as i64).map(|j| (j * 7919) % 23 - 3).collect();
    let xs: Vec<f32> = (0..n as i64).map(|j| ((j * 31) % 17 - 8) as f32).collect();
    // key 99 for the first column only, whose value is `short[-1]`
    let short: Vec<f32> = xs[..n - 1].to_vec();
    let far: Vec<i64> = (0..n as i64).map(|j| if j == 0 { 99 } else { j % 5 }).collect();
    let (keys_a, xs_a) = (Vector::from_elems(keys.clone()), Vector::from_elems(xs.clone()));
    let (short_a, far_a) = (Vector::from_elems(short), Vector::from_elems(far));
    let forms = [OneHot::Eq, OneHot::Flipped, OneHot::Negated, OneHot::Narrow, OneHot::Wide];
    for form in forms {
        let program =
            move |k: Acc<Vector<i64>>, x: Acc<Vector<f32>>, r: Acc<Scalar<i64>>, o: Acc<Scalar<i64>>| {
                one_hot_sums(form, k, x, r.the(), o.the())
            };
        let want_p = compile_with(program, interp()).unwrap();
        // without fusion too for one form: the source then a manifest array
        let fusions: &[bool] = if matches!(form, OneHot::Eq) { &[true, false] } else { &[true] };
        for &fusion in fusions {
            let got_p = compile_with(program, cpu.clone().with_fusion(fusion)).unwrap();
            // (more rows than a u8 has values: the fold as written)
            let many: &[i64] = if matches!(form, OneHot::Narrow) { &[0, 7, 300] } else { &[0, 1, 7, 19] };
            for &rows in many {
                let args = (&keys_a, &xs_a, &Scalar::scalar(rows), &Scalar::scalar(0i64));
                let got = got_p.run(args).unwrap().to_vec();
                assert_eq!(got, want_p.run(args).unwrap().to_vec(), "{form:?}, {rows} rows, fusion {fusion}");
                // and against plain Rust, exactly: sums of integers below 2^24
                let mut want = vec![(0.0f32, 0i32); rows as usize];
                for c in 0..rows {
                    for (&k, &x) in keys.iter().zip(&xs) {
                        let hit = match form {
                            OneHot::Narrow => k as u8 == c as u8,
                            _ => k == c,
                        };
                        if hit {
                            want[c as usize].0 += x;
                            want[c as usize].1 += 1;
                        }
                    }
                }
                assert_eq!(got, want, "{form:?}, {rows} rows, fusion {fusion}");
            }
            // a value past the end of `short` where the key matches no row
            // is never read, as the fold never reads it; where it matches
            // one, the read fails as the fold's does
            for rows in [5i64, 100] {
                let args = (&far_a, &short_a, &Scalar::scalar(rows), &Scalar::scalar(-1i64));
                let (got, want) = (got_p.run(args), want_p.run(args));
                match (&got, &want) {
                    (Ok(g), Ok(w)) => assert_eq!(g.to_vec(), w.to_vec()),
                    (Err(g), Err(w)) => assert_eq!(g.to_string(), w.to_string()),
                    _ => panic!("{form:?}, {rows} rows: cpu {got:?}, interpreter {want:?}"),
                }
                assert_eq!(got.is_ok(), rows == 5, "{form:?}, {rows} rows: {got:?}");
            }
        }
    }

    // the plans: a permute where the keys are `i64`; a permute and the
    // fold as written, behind an `acond`, for narrower keys; the fold on
    // the interpreter, the reference (and on CUDA, which does not rewrite)
    if cpu.backend != Backend::Cpu {
        return;
    }
    let kinds = |form: OneHot, config: Config| {
        let program =
            move |k: Acc<Vector<i64>>, x: Acc<Vector<f32>>, r: Acc<Scalar<i64>>, o: Acc<Scalar<i64>>| {
                one_hot_sums(form, k, x, r.the(), o.the())
            };
        let p = compile_with(program, config).unwrap();
        let mut kinds: Vec<&str> = p.plan().kernels.iter().map(|k| k.skeleton.name()).collect();
        kinds.sort();
        kinds
    };
    assert!(!kinds(OneHot::Wide, cpu.clone()).contains(&"fold"), "{:?}", kinds(OneHot::Wide, cpu.clone()));
    assert!(kinds(OneHot::Wide, cpu.clone()).contains(&"permute"));
    let narrow = kinds(OneHot::Eq, cpu.clone());
    assert!(narrow.contains(&"permute") && narrow.contains(&"fold"), "{narrow:?}");
    assert_eq!(kinds(OneHot::Wide, interp()), ["fold"]);
}

/// MD5's search in small (Note [Checks before the loops], Note [Both
/// sides in fast functions]): each row of `m` read at the fixed columns
/// 0 to 3, and compared with `t`'s four elements by `&&`, the first
/// matching row's index kept by a `min` fold. A matrix of fewer than four
/// columns fails where a row is read (not for no rows); a target of two
/// elements fails only where the comparisons before reach its third.
#[test]
fn fixed_columns_and_both_sides_of_small_branches_agree() {
    let first_match = |m: Matrix<i32>, t: Vector<i32>| {
        let (m, t) = (use_array(m), use_array(t));
        let (rows, _) = unindex2(m.shape());
        generate(index1(rows), move |ix| {
            let r = unindex1(ix);
            let hit = (0..4)
                .map(|j| m.index(index2(&r, j)).eq(t.index(index1(j))))
                .reduce(|a, b| a.and(b))
                .expect("four columns");
            cond(hit, r, constant(i64::MAX))
        })
        .fold(i64::MAX, |a, b| a.min(b))
    };
    // rows 3 + 7k are [k % 5, 1, 2, 3]; the others [9, ..]
    let matrix = |rows: usize, cols: usize| {
        let elems = (0..rows * cols)
            .map(|p| {
                let (i, j) = (p / cols, p % cols);
                match (i % 7 == 3, j) {
                    (true, 0) => (i / 7 % 5) as i32,
                    (true, j) => j as i32,
                    (false, _) => 9,
                }
            })
            .collect();
        Matrix::from_vec(dim2(rows, cols), elems).unwrap()
    };
    let target = |xs: &[i32]| Vector::from_elems(xs.to_vec());
    for rows in [0, 1, 4, 5000] {
        for cols in [4, 6, 2, 0] {
            for t in [&[2, 1, 2, 3][..], &[2, 1, 2, 4], &[2, 1], &[9, 8]] {
                agree_up_to_the_index(|| first_match(matrix(rows, cols), target(t)), eq);
            }
        }
    }
}

/// Small branches of `cond`, `&&` and `||` whose other side would fail
/// (a read outside an array, a division by zero) agree with the
/// interpreter where the program does not take it, and are the same
/// error where it does (Note [Both sides in fast functions]).
#[test]
fn small_branches_that_would_fail_untaken_agree() {
    for n in [1i64, 7, 5000] {
        let xs = Vector::from_elems((0..n).map(|i| (i * 37 % 11) as i32).collect());
        let ds = Vector::from_elems((0..n).map(|i| (i % 3) as i32).collect());
        let (x1, d1) = (xs.clone(), ds.clone());
        agree(
            move || {
                let (xs, ds) = (use_array(x1.clone()), use_array(d1.clone()));
                generate(index1(n), move |ix| {
                    let i = unindex1(ix);
                    let back = cond(i.ge(1), xs.index(index1(&i - 1)), xs.index(index1(&i)));
                    let rising = i.eq(0).or(xs.index(index1(&i - 1)).lt(xs.index(index1(&i))));
                    let d = ds.index(index1(&i));
                    let quot = cond(d.ne(0), xs.index(index1(&i)) / &d, constant(-1));
                    let within = i.lt(n - 1).and(xs.index(index1(&i + 1)).gt(3));
                    back + quot + rising.select(100, 0) + within.select(1000, 0)
                })
                .fold(0i32, |a, b| a + b)
            },
            eq,
        );
        // the branches taken: the same errors
        let (x2, d2) = (xs.clone(), ds.clone());
        agree(
            move || {
                let (xs, ds) = (use_array(x2.clone()), use_array(d2.clone()));
                generate(index1(n), move |ix| {
                    let i = unindex1(ix);
                    let d = ds.index(index1(&i));
                    let quot = cond(i.ge(n / 2), xs.index(index1(&i)) / &d, constant(-1));
                    let past = i.ge(n - 1).and(xs.index(index1(&i + 1)).gt(3));
                    quot + past.select(1000, 0)
                })
                .fold(0i32, |a, b| a + b)
            },
            eq,
        );
    }
}

/// A Floyd-Warshall step: reads at row and column `k`, the element of a
/// rank-0 array, fixed for the call and so checked once before the loops
/// (Note [Checks before the loops]): the same values inside, the same
/// error outside (`k` past the rows, or negative).
#[test]
fn reads_at_an_index_from_a_unit_agree() {
    for (rows, cols) in [(5, 5), (5, 3), (3, 700)] {
        let m = Matrix::from_vec(dim2(rows, cols), (0..rows * cols).map(|p| (p * 7 % 13) as i32).collect())
            .unwrap();
        for k in [0i64, 2, 4, 5, -1] {
            let m = m.clone();
            agree_up_to_the_index(
                move || {
                    let (d, k) = (use_array(m.clone()), use_array(Scalar::scalar(k)));
                    generate(d.shape(), move |ix| {
                        let (i, j) = unindex2(ix.clone());
                        let k = the(&k);
                        d.index(ix).min(d.index(index2(i, &k)) + d.index(index2(&k, j)))
                    })
                },
                eq,
            );
        }
    }
}

/// A fold nested in a `generate`, as the lifting writes it: a scalar loop
/// per element over its row of `xs`, reading at the element's own `k`
/// (the same in every step) and the row's segment (Note [Invariant code
/// out of scalar loops] in `c/exp.rs`, which moves those reads and their
/// checks before the loop in fast functions). The rows are long, short
/// and empty; `k` past `ws` is read where its row is empty (the program
/// reads nothing, so nothing fails: the checked function must decide)
/// and where it is not (the interpreter's error).
#[test]
fn reads_the_same_in_every_step_of_a_loop_agree() {
    let xs: Vec<f32> = (0..300).map(|i| ((i * 37) % 23) as f32 * 0.25 - 2.0).collect();
    let ws: Vec<f32> = vec![0.5, -1.0, 2.0, 0.25, 3.0];
    let program = |rows: Vec<(i64, i64, i64)>| {
        let (xs, ws) = (use_array(Vector::from_elems(xs.clone())), use_array(Vector::from_elems(ws.clone())));
        common::weighted_row_sums(xs, ws, use_array(Vector::from_elems(rows)))
    };
    let rows: Vec<(i64, i64, i64)> =
        (0..40).map(|r| (r * 5 % 200, [0, 1, 7, 40, 3][r as usize % 5], r % 5)).collect();
    agree(|| program(rows.clone()), bits_f32);
    for len in [0, 6] {
        let mut bad = rows.clone();
        bad[17] = (20, len, 5);
        agree(|| program(bad.clone()), bits_f32);
    }
}

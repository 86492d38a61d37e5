//! Updates in place (Note [Updates in place] in `plan/in_place.rs`, Note
//! [Lines read while written] in `opt/lines.rs`, Note [Donated arrays] in
//! `backend/host.rs`): an `awhile` whose step replaces its state element
//! by element writes over the state on the CPU backend. Every test checks
//! the results against plain Rust and the interpreter, and counts the
//! launches that wrote in place (`Program::in_place_runs`).

#[macro_use]
mod common;

use accelerate::prelude::*;
use accelerate::{compile_with, Backend, Config};
use accelerate_programs::floyd::{floyd_ref, floyd_warshall, graph};

fn config() -> Config {
    Config::from_env().unwrap()
}

fn interpreter() -> Config {
    config().with_backend(Backend::Interpreter)
}

/// Whether this configuration runs fused programs on the CPU backend, the
/// one that writes in place (CI also runs the tests with fusion off).
fn writes_in_place(c: &Config) -> bool {
    c.backend == Backend::Cpu && c.fusion && c.simplify
}

/// Where this file's line containing `text` is, as errors name it.
fn line_of(text: &str) -> String {
    let n = include_str!("in_place.rs").lines().position(|l| l.contains(text)).expect("the line");
    format!("in_place.rs:{}:", n + 1)
}

#[test]
fn floyd_warshall_relaxes_in_place_and_agrees() {
    let p = compile_with(|d: Acc<Matrix<i32>>| floyd_warshall(&d), config()).unwrap();
    let reference = compile_with(|d: Acc<Matrix<i32>>| floyd_warshall(&d), interpreter()).unwrap();
    for n in [0, 1, 2, 7, 64, 129] {
        let d = graph(n, 17 + n as u64);
        let mut want = d.clone();
        floyd_ref(&mut want, n);
        let m = Matrix::from_vec(dim2(n, n), d.clone()).unwrap();
        let before = p.in_place_runs().unwrap_or(0);
        assert_eq!(p.run(&m).unwrap().to_vec(), want, "n = {n}");
        assert_eq!(reference.run(&m).unwrap().to_vec(), want, "n = {n}");
        // the user's matrix is read, never written
        assert_eq!(m.to_vec(), d, "n = {n}");
        if writes_in_place(&config()) {
            // every step but the first (which reads the user's matrix)
            let steps = p.in_place_runs().unwrap() - before;
            assert_eq!(steps, n.saturating_sub(1), "n = {n}");
        }
    }
}

#[test]
fn the_step_reads_copies_of_row_and_column_k() {
    let c = config();
    if !writes_in_place(&c) {
        return;
    }
    let p = compile_with(|d: Acc<Matrix<i32>>| floyd_warshall(&d), c).unwrap();
    let text = accelerate::plan::pretty::program_without_locations(p.plan());
    // two vectors a step, then the step, which writes over the matrix
    assert!(text.contains("-> Array DIM1 i32"), "{text}");
    let src = p.c_source().unwrap();
    assert!(src.contains("_inplace(const acc_args *A"), "{src}");
    // the step's loop vectorises in place as out of place: its reads of
    // the copies are checked once, before the loops (Note [Ranges before
    // the loops])
    match accelerate::backend::cpu::vectorised_loops(src).unwrap() {
        Some(report) => {
            for f in ["k2_fast", "k2_inplace_fast"] {
                let n = report.iter().find(|(g, _)| g == f).map(|(_, n)| *n);
                assert!(n.is_some_and(|n| n > 0), "no vectorised loop in {f}: {report:?}");
            }
        }
        None => eprintln!("skipped: the C compiler is not GCC"),
    }
}

/// `steps` steps of `x <- 3x + 1 (mod 2^32)` on every element, a matrix in
/// the loop's state with the step count.
fn affine_steps(x: &Acc<Matrix<u32>>, steps: i64) -> Acc<Matrix<u32>> {
    let r = awhile(
        move |s: Acc<(Matrix<u32>, Scalar<i64>)>| unit(s.unlift().1.the().lt(steps)),
        |s| {
            let (x, k) = s.unlift();
            lift_acc((x.map(|v| v * 3 + 1), unit(k.the() + 1)))
        },
        lift_acc((x.clone(), unit(0i64))),
    );
    r.unlift().0
}

fn affine_ref(x: &[u32], steps: i64) -> Vec<u32> {
    x.iter().map(|&v| (0..steps).fold(v, |v, _| v.wrapping_mul(3).wrapping_add(1))).collect()
}

#[test]
fn a_map_in_a_loop_writes_over_its_state() {
    let f = |x: Acc<Matrix<u32>>| affine_steps(&x, 5);
    let p = compile_with(f, config()).unwrap();
    let reference = compile_with(f, interpreter()).unwrap();
    for (r, c) in [(0, 3), (1, 1), (3, 5), (300, 301)] {
        let xs: Vec<u32> = (0..(r * c) as u32).map(|i| i.wrapping_mul(2654435761)).collect();
        let m = Matrix::from_vec(dim2(r, c), xs.clone()).unwrap();
        let before = p.in_place_runs().unwrap_or(0);
        assert_eq!(p.run(&m).unwrap().to_vec(), affine_ref(&xs, 5), "{r} x {c}");
        assert_eq!(reference.run(&m).unwrap().to_vec(), affine_ref(&xs, 5), "{r} x {c}");
        assert_eq!(m.to_vec(), xs);
        if writes_in_place(&config()) {
            assert_eq!(p.in_place_runs().unwrap() - before, 4, "{r} x {c}");
        }
    }
}

#[test]
fn a_state_that_is_also_returned_is_not_written_over() {
    // the step returns the old state beside the new one: the old one must
    // survive the step
    let f = |x: Acc<Vector<i64>>| {
        let r = awhile(
            |s: Acc<(Vector<i64>, Vector<i64>, Scalar<i64>)>| unit(s.unlift().2.the().lt(4)),
            |s| {
                let (x, _, k) = s.unlift();
                lift_acc((x.map(|v| v * 2 + 1), x, unit(k.the() + 1)))
            },
            lift_acc((x.clone(), x, unit(0i64))),
        );
        let (x, prev, _) = r.unlift();
        x.zip_with(prev, |a, b| a * 1000 + b)
    };
    let p = compile_with(f, config()).unwrap();
    let xs = Vector::from_elems((0..1000i64).collect());
    let want: Vec<i64> = (0..1000i64)
        .map(|v| {
            let prev = (0..3).fold(v, |v, _| v * 2 + 1);
            (prev * 2 + 1) * 1000 + prev
        })
        .collect();
    assert_eq!(p.run(&xs).unwrap().to_vec(), want);
    assert_eq!(compile_with(f, interpreter()).unwrap().run(&xs).unwrap().to_vec(), want);
}

#[test]
fn a_read_elsewhere_keeps_the_step_out_of_place() {
    // each element adds its mirror image of the old state: in place, the
    // rows below the diagonal would read rows the step has replaced (the
    // read needs no check in the loop, so only the analysis of reads
    // keeps this step out of place)
    let f = |x: Acc<Matrix<i32>>| {
        let r = awhile(
            |s: Acc<(Matrix<i32>, Scalar<i64>)>| unit(s.unlift().1.the().lt(3)),
            |s| {
                let (x, k) = s.unlift();
                let x2 = x.clone();
                let next = generate(x.shape(), move |ix| {
                    let (i, j) = unindex2(ix.clone());
                    x2.index(ix) + x2.index(index2(j, i))
                });
                lift_acc((next, unit(k.the() + 1)))
            },
            lift_acc((x.clone(), unit(0i64))),
        );
        r.unlift().0
    };
    let p = compile_with(f, config()).unwrap();
    let reference = compile_with(f, interpreter()).unwrap();
    let m = Matrix::from_vec(dim2(300, 300), (0..90_000).map(|i| i % 97 - 48).collect()).unwrap();
    let (got, want) = (p.run(&m).unwrap().to_vec(), reference.run(&m).unwrap().to_vec());
    let wrong = got.iter().zip(&want).filter(|(a, b)| a != b).count();
    assert_eq!(wrong, 0, "{wrong} of 90000 elements differ");
    assert!(matches!(p.in_place_runs(), None | Some(0)));
}

#[test]
fn a_line_read_only_under_a_false_condition_raises_nothing() {
    // row k is read only where k is in range; the copy of row k clamps k
    // and raises nothing
    let f = |d: Acc<Matrix<i32>>| {
        let r = awhile(
            |s: Acc<(Matrix<i32>, Scalar<i64>)>| unit(s.unlift().1.the().lt(6)),
            |s| {
                let (d, k) = s.unlift();
                let k = k.the();
                let (n, _) = unindex2(d.shape());
                let d2 = d.clone();
                let (k2, n2) = (k.clone(), n.clone());
                let next = generate(d.shape(), move |ix| {
                    let (_, j) = unindex2(ix.clone());
                    let row_k = d2.index(index2(&k2, j));
                    cond(k2.lt(&n2), d2.index(ix.clone()).max(row_k), d2.index(ix) + 1)
                });
                lift_acc((next, unit(k + 1)))
            },
            lift_acc((d.clone(), unit(0i64))),
        );
        r.unlift().0
    };
    let p = compile_with(f, config()).unwrap();
    let reference = compile_with(f, interpreter()).unwrap();
    // 3 rows: steps 3, 4 and 5 read no row
    let m = Matrix::from_vec(dim2(3, 4), (0..12).map(|i| (i * 5) % 7).collect()).unwrap();
    assert_eq!(p.run(&m).unwrap().to_vec(), reference.run(&m).unwrap().to_vec());
}

#[test]
fn a_loop_whose_state_is_one_array_writes_over_it() {
    // the body is one launch reading the state itself, not a projection
    let f = |x: Acc<Matrix<i64>>| {
        awhile(
            |x: Acc<Matrix<i64>>| unit(x.index(index2(0, 0)).lt(1000)),
            |x| x.map(|v| v * 2 + 1),
            x.map(|v| v + 1),
        )
    };
    let p = compile_with(f, config()).unwrap();
    let reference = compile_with(f, interpreter()).unwrap();
    let xs: Vec<i64> = (0..64 * 48).map(|i| i % 13).collect();
    let m = Matrix::from_vec(dim2(64, 48), xs.clone()).unwrap();
    // x[0][0] goes 1, 3, 7, ..., 1023: 9 steps
    let want: Vec<i64> = xs.iter().map(|&v| (0..9).fold(v + 1, |v, _| v * 2 + 1)).collect();
    let before = p.in_place_runs().unwrap_or(0);
    assert_eq!(p.run(&m).unwrap().to_vec(), want);
    assert_eq!(reference.run(&m).unwrap().to_vec(), want);
    assert_eq!(m.to_vec(), xs);
    if writes_in_place(&config()) {
        // the first step's state is held by the loop's start too
        assert!(p.in_place_runs().unwrap() - before >= 8);
    }
}

// ---------------------------------------------------------------------------
// Hostile cases, each in a child process

const ROLE: &str = "ACCELERATE_IN_PLACE_CHILD";

hostile!(a_step_out_of_bounds_is_the_same_error_in_place, {
    // one step too many: step n reads column n, past the matrix
    let f = |d: Acc<Matrix<i32>>| {
        let r = awhile(
            |s: Acc<(Matrix<i32>, Scalar<i64>)>| {
                let (d, k) = s.unlift();
                let (n, _) = unindex2(d.shape());
                unit(k.the().le(n))
            },
            |s| {
                let (d, k) = s.unlift();
                let k = k.the();
                let d2 = d.clone();
                let k2 = k.clone();
                let next = generate(d.shape(), move |ix| {
                    let (i, j) = unindex2(ix.clone());
                    let through_k = d2.index(index2(i, &k2)) + d2.index(index2(&k2, j)); // the read
                    d2.index(ix).min(through_k)
                });
                lift_acc((next, unit(k + 1)))
            },
            lift_acc((d.clone(), unit(0i64))),
        );
        r.unlift().0
    };
    let m = Matrix::from_vec(dim2(20, 20), graph(20, 5)).unwrap();
    let cpu = compile_with(f, config()).unwrap().run(&m).unwrap_err();
    let interp = compile_with(f, interpreter()).unwrap().run(&m).unwrap_err();
    // several elements read past the matrix: which of them is reported
    // may differ between backends (docs/semantics.md, "Errors and
    // evaluation order"; on a GPU another thread may claim the error
    // first), so each must name one of them, at the same line and shape
    for e in [&cpu, &interp] {
        let Error::IndexOutOfBounds { index, shape, .. } = e else { panic!("{e}") };
        assert_eq!(shape, &vec![20, 20], "{e}");
        assert!(index.len() == 2 && index.contains(&20), "{e}");
        assert!(e.to_string().contains(&line_of("// the read")), "{e}");
    }
});

//! Programs of tens of thousands of operations compile and give the right
//! result: every phase of the pipeline and the CPU backend's code
//! generation are near-linear in the program's size, and none recurses
//! deeply enough to overflow a small stack (docs/architecture.md,
//! "Compile time grows near-linearly"; `accelerate-bench --bin scaling`
//! measures the same families phase by phase).
//!
//! Each family is built, compiled and run in a child process (this test
//! binary again, in a role) on a thread with a 1 MiB stack, with a time
//! limit far above what it takes (a few seconds): a return to quadratic
//! work at these sizes takes minutes and is reported as a hang, a deep
//! recursion without `stacker` as a crash. Results are checked against
//! the same computation written in Rust. The pipeline runs at `PIPELINE`
//! operations on the interpreter; the CPU backend, whose C compiler is
//! most of its time, at `CPU` operations, which is past the size where
//! scalar code is split into C functions (Note [Outlined chunks]).
//! There are no timing assertions: machines are shared and noisy.

mod common;

use accelerate::prelude::*;
use accelerate::{compile_with, Backend};
use common::run_with_limit;
use std::process::Command;
use std::time::Duration;

/// Set in a child: the family it builds.
const ROLE: &str = "ACCELERATE_LARGE_PROGRAMS_ROLE";
/// The longest a child may take.
const LIMIT: Duration = Duration::from_secs(120);
/// Operations of the programs the interpreter runs.
const PIPELINE: usize = 40_000;
/// Operations of the programs the CPU backend compiles.
const CPU: usize = 3_000;
/// The stack of the child's thread: a recursion one frame per operation
/// overflows it well below `PIPELINE` operations.
const STACK: usize = 1 << 20;

/// Elements of the inputs (the programs are long, not their data).
const LEN: usize = 16;

fn input(n: usize) -> Vec<i64> {
    (0..LEN as i64).map(|i| if i % 5 == 3 { -i } else { i * (n as i64 + 1) / LEN as i64 }).collect()
}

/// The constant added at step `k` of a chain (small and varied).
fn step(k: usize) -> i64 {
    (k % 16) as i64
}

/// Compiles `f` for `backend`, runs it on `xs` and checks it gives `want`.
fn check<R: Arrays + PartialEq + std::fmt::Debug>(
    backend: Backend,
    xs: Vec<i64>,
    want: R,
    f: impl FnOnce(Acc<Vector<i64>>) -> Acc<R>,
) {
    let config = Config::default().with_backend(backend);
    let p = compile_with(f, config).unwrap_or_else(|e| panic!("compiling on {backend:?}: {e}"));
    let got = p.run(&Vector::from_elems(xs)).unwrap_or_else(|e| panic!("running on {backend:?}: {e}"));
    assert_eq!(got, want, "on {backend:?}");
}

/// `n` chained maps.
fn maps(backend: Backend, n: usize) {
    let xs = input(n);
    let chain = |x: i64| (0..n).fold(x, |x, k| x.wrapping_mul(3).wrapping_add(step(k)));
    let want = Vector::from_elems(xs.iter().map(|&x| chain(x)).collect());
    check(backend, xs, want, move |xs| (0..n).fold(xs, |a, k| a.map(move |x| x * 3i64 + step(k))));
}

/// `n` chained reverses.
fn reverses(backend: Backend, n: usize) {
    let xs = input(n);
    let mut want = xs.clone();
    if n % 2 == 1 {
        want.reverse();
    }
    check(backend, xs, Vector::from_elems(want), move |xs| (0..n).fold(xs, |a, _| a.reverse()));
}

/// A lookup table of `n` conditionals, each nested in the one before.
fn conds(backend: Backend, n: usize) {
    let xs = input(n);
    let table = |k: i64| k * 7 + 1;
    let want = xs.iter().map(|&x| if (0..n as i64).contains(&x) { table(x) } else { -1 }).collect();
    check(backend, xs, Vector::from_elems(want), move |xs| {
        xs.map(move |x| (0..n as i64).rev().fold(constant(-1i64), |e, k| cond(x.eq(k), table(k), e)))
    });
}

/// A conditional on a chain of `n` comparisons joined by `&&`, each of
/// which bounds `x` (what each says is recorded, Note [Value ranges]).
fn conjunctions(backend: Backend, n: usize) {
    let xs = input(n);
    let want = xs.iter().map(|&x| if x >= 0 { x } else { -1 }).collect();
    check(backend, xs, Vector::from_elems(want), move |xs| {
        xs.map(move |x| {
            let all = (0..n as i64).fold(constant(true), |b, k| b.and(x.gt(-1 - k)));
            cond(all, x.clone(), constant(-1i64))
        })
    });
}

/// The sum of `n` input arrays, by a chain of `zip_with`s.
fn zip_inputs(backend: Backend, n: usize) {
    let elem = |k: usize, i: usize| ((i * 31 + k * 7) % 1000) as i64;
    let want = (0..LEN).map(|i| (0..n).map(|k| elem(k, i)).sum()).collect();
    check(backend, vec![0; LEN], Vector::from_elems(want), move |xs| {
        (0..n).fold(xs, |a, k| {
            a.zip_with(use_array(Vector::from_elems((0..LEN).map(|i| elem(k, i)).collect())), |s, y| s + y)
        })
    });
}

/// One map whose function is a chain of `n` steps, each reading the last
/// twice (a chain of lets).
fn scalar_chain(backend: Backend, n: usize) {
    let xs = input(n);
    let chain = |x: i64| (0..n).fold(x, |e, k| (e ^ (e >> 7)).wrapping_add(step(k)));
    let want = xs.iter().map(|&x| chain(x)).collect();
    check(backend, xs, Vector::from_elems(want), move |xs| {
        xs.map(move |x| (0..n).fold(x.clone(), |e, k| (&e ^ (&e >> 7i64)) + step(k)))
    });
}

/// `n` chained `zip_with`s with a second array.
fn zips(backend: Backend, n: usize) {
    let xs = input(n);
    let y = |x: i64| x % 5 - 2;
    let want = xs.iter().map(|&x| (0..n).fold(x, |a, _| a.wrapping_mul(3).wrapping_add(y(x)))).collect();
    check(backend, xs, Vector::from_elems(want), move |xs| {
        let ys = xs.map(|x| x % 5i64 - 2i64);
        (0..n).fold(xs, |a, _| a.zip_with(&ys, |a, y| a * 3i64 + y))
    });
}

/// A fold of `n` chained maps.
fn fold_of_maps(backend: Backend, n: usize) {
    let xs = input(n);
    let chain = |x: i64| (0..n).fold(x, |x, k| x.wrapping_mul(3).wrapping_add(step(k)));
    let want = Scalar::scalar(xs.iter().fold(0i64, |s, &x| s.wrapping_add(chain(x))));
    check(backend, xs, want, move |xs| {
        (0..n).fold(xs, |a, k| a.map(move |x| x * 3i64 + step(k))).fold(0i64, |a, b| a + b)
    });
}

/// `n` chained maps, each computing an array from its element (nested
/// data parallelism: `n` contexts for the lifting transformation).
fn nested_maps(backend: Backend, n: usize) {
    // (each context is a handful of operations and a reduction kernel of
    // its own: a quarter as many contexts, still tens of thousands of
    // operations; the CPU backend's C compiler would take most of a run
    // of `CPU` kernels)
    let n = if backend == Backend::Cpu { n / 10 } else { n / 4 };
    let xs = input(n);
    let ys: Vec<i64> = xs.iter().map(|x| x % 5 - 2).collect();
    let top = ys.iter().copied().max().unwrap_or(i64::MIN);
    let want = xs.iter().map(|&x| (0..n).fold(x, |x, k| x.wrapping_add(step(k)))).collect();
    check(backend, xs, Vector::from_elems(want), move |xs| {
        let ys = xs.map(|x| x % 5i64 - 2i64);
        (0..n).fold(xs, |a, k| {
            a.map(|x| ys.map(|y| y + x).fold(i64::MIN, |p, q| p.max(q)).the() - top + step(k))
        })
    });
}

/// One map whose function reads an array computed from its element, then
/// runs a chain of `n` steps (the lifting transformation's scalar code).
fn nested_chain(backend: Backend, n: usize) {
    let xs = input(n);
    let ys: Vec<i64> = xs.iter().map(|x| x % 3).collect();
    let chain = |x: i64| (0..n).fold(x, |e, k| (e ^ (e >> 7)).wrapping_add(step(k)));
    let want = xs.iter().map(|&x| chain(ys.iter().map(|y| y * x).sum())).collect();
    check(backend, xs, Vector::from_elems(want), move |xs| {
        let ys = xs.map(|x| x % 3i64);
        xs.map(move |x| {
            let s = ys.map(|y| y * x).fold(0i64, |p, q| p + q).the();
            (0..n).fold(s, |e, k| (&e ^ (&e >> 7i64)) + step(k))
        })
    });
}

/// The families by name.
fn family(name: &str) -> fn(Backend, usize) {
    match name {
        "maps" => maps,
        "reverses" => reverses,
        "conds" => conds,
        "conjunctions" => conjunctions,
        "zip_inputs" => zip_inputs,
        "scalar_chain" => scalar_chain,
        "zips" => zips,
        "fold_of_maps" => fold_of_maps,
        "nested_maps" => nested_maps,
        "nested_chain" => nested_chain,
        other => panic!("no family {other}"),
    }
}

/// In the parent: runs the family in a child, which fails the test if it
/// fails, crashes or hangs. In the child: builds, compiles, runs and
/// checks the family, on the interpreter and on the CPU backend.
fn family_in_a_child(test: &str, name: &str) {
    if let Ok(role) = std::env::var(ROLE) {
        if role != name {
            return;
        }
        let build = family(name);
        let work = move || {
            build(Backend::Interpreter, PIPELINE);
            match accelerate::backend::cpu::unavailable() {
                None => build(Backend::Cpu, CPU),
                Some(why) => eprintln!("the CPU backend is skipped: {why}"),
            }
        };
        let child = std::thread::Builder::new().stack_size(STACK).spawn(work).expect("a thread");
        if child.join().is_err() {
            std::process::exit(1);
        }
        return;
    }
    let mut cmd = Command::new(std::env::current_exe().unwrap());
    cmd.args(["--exact", test, "--nocapture"]).env(ROLE, name).env("ACCELERATE_CACHE", "off");
    let out = run_with_limit(&mut cmd, name, LIMIT);
    assert!(
        out.status.success(),
        "the child ({name}) failed ({}):\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn a_chain_of_maps_compiles_in_linear_time() {
    family_in_a_child("a_chain_of_maps_compiles_in_linear_time", "maps");
}

#[test]
fn a_chain_of_reverses_compiles_in_linear_time() {
    family_in_a_child("a_chain_of_reverses_compiles_in_linear_time", "reverses");
}

#[test]
fn nested_conditionals_compile_in_linear_time() {
    family_in_a_child("nested_conditionals_compile_in_linear_time", "conds");
}

#[test]
fn a_chain_of_conjunctions_compiles_in_linear_time() {
    family_in_a_child("a_chain_of_conjunctions_compiles_in_linear_time", "conjunctions");
}

#[test]
fn a_zip_with_of_many_inputs_compiles_in_linear_time() {
    family_in_a_child("a_zip_with_of_many_inputs_compiles_in_linear_time", "zip_inputs");
}

#[test]
fn a_long_scalar_chain_in_one_map_compiles_in_linear_time() {
    family_in_a_child("a_long_scalar_chain_in_one_map_compiles_in_linear_time", "scalar_chain");
}

#[test]
fn a_chain_of_zip_withs_compiles_in_linear_time() {
    family_in_a_child("a_chain_of_zip_withs_compiles_in_linear_time", "zips");
}

#[test]
fn a_fold_of_a_chain_of_maps_compiles_in_linear_time() {
    family_in_a_child("a_fold_of_a_chain_of_maps_compiles_in_linear_time", "fold_of_maps");
}

#[test]
fn a_chain_of_nested_contexts_compiles_in_linear_time() {
    family_in_a_child("a_chain_of_nested_contexts_compiles_in_linear_time", "nested_maps");
}

#[test]
fn a_long_scalar_chain_around_a_nested_array_compiles_in_linear_time() {
    family_in_a_child("a_long_scalar_chain_around_a_nested_array_compiles_in_linear_time", "nested_chain");
}

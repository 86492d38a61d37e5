//! How compile time grows with the size of a program: families of
//! programs built at a given number of operations (a chain of `map`s, of
//! `reverse`s, nested `cond`s, ...), each compiled, run on a small input
//! and checked against a reference computed in Rust, with the time of
//! every phase of the pipeline and of the backend.
//!
//! The `scaling` binary (`src/bin/scaling.rs`) runs each (family, size,
//! backend) in a child process of its own (this module's `child`), with a
//! time limit, so that a hang is reported as a hang and a crash (a stack
//! overflow, a C compiler that dies) as a crash, and the run goes on.

use accelerate::prelude::*;
use accelerate::{compile_with, Backend, Program};
use std::cell::Cell;
use std::time::{Duration, Instant};

/// A family of programs of growing size.
pub struct Family {
    pub name: &'static str,
    /// What one operation of the family is.
    pub describe: &'static str,
    /// Builds the program of `n` operations, compiles it with `config`,
    /// runs it and checks its result.
    pub measure: fn(usize, Config) -> Result<Measured, String>,
}

/// The families, in the order the table lists them.
pub const FAMILIES: &[Family] = &[
    Family { name: "maps", describe: "xs.map(|x| x * 3 + c), chained", measure: maps },
    Family { name: "reverses", describe: "xs.reverse(), chained", measure: reverses },
    Family { name: "conds", describe: "cond(x == k, .., <the rest>), nested in one map", measure: conds },
    Family { name: "zipn", describe: "zip_with(+) of n distinct input arrays", measure: zipn },
    Family { name: "scalar", describe: "e = (e ^ (e >> 7)) + c (e shared), in one map", measure: scalar },
    Family { name: "zips", describe: "acc.zip_with(ys, |a, y| a * 3 + y), chained", measure: zips },
    Family { name: "fold", describe: "xs.map(..) chained, then fold(+)", measure: fold_of_maps },
];

/// Finds a family by name.
pub fn find(name: &str) -> Option<&'static Family> {
    FAMILIES.iter().find(|f| f.name == name)
}

/// What compiling and running one program cost.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measured {
    /// Each step in order, in seconds: `build` (the Rust closure building
    /// the graph), the pipeline's phases (`sharing`, `simplify`, `fusion`,
    /// `plan`), the backend's (`codegen`, `cc`; `kernels` on the
    /// interpreter), `other` (the rest of `compile_with`: verifying each
    /// phase's output, copies kept for `explain`, freeing the graph) and
    /// `run`.
    pub steps: Vec<(String, f64)>,
    /// `compile_with` from start to end.
    pub compile: f64,
    /// The generated source's size in bytes (0 on the interpreter).
    pub source_bytes: usize,
}

/// The input vector of the families that take one: `len` values spread
/// over `0 ..= n` (so that `conds` takes every kind of branch), with
/// some negative ones.
fn input(n: usize, len: usize) -> Vec<i64> {
    (0..len as i64).map(|i| if i % 17 == 5 { -i } else { i * (n as i64 + 1) / len as i64 }).collect()
}

/// The constant added at step `k` of a chain: small, so that it is
/// written into the C source rather than passed at launch (Note [Hoisted
/// literals]), and varied, so that no two steps are the same term.
fn step_constant(k: usize) -> i64 {
    (k % 16) as i64
}

/// Compiles `f` (timing the Rust closure that builds the graph apart),
/// runs it on `args`, and checks the result against `want`.
fn measure_one<A: Arrays, R: Arrays + PartialEq + std::fmt::Debug>(
    config: Config,
    f: impl FnOnce(Acc<A>) -> Acc<R>,
    arg: &A,
    want: &R,
) -> Result<Measured, String> {
    let build = Cell::new(Duration::ZERO);
    let t = Instant::now();
    let p: Program<(A,), R> = compile_with(
        |xs: Acc<A>| {
            let t = Instant::now();
            let r = f(xs);
            build.set(t.elapsed());
            r
        },
        config,
    )
    .map_err(|e| format!("compiling: {e}"))?;
    let compile = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let got = p.run(arg).map_err(|e| format!("running: {e}"))?;
    let run = t.elapsed().as_secs_f64();
    if got != *want {
        return Err(format!("wrong result: {:?} where {:?} was expected", short(&got), short(want)));
    }
    Ok(account(&p, build.get().as_secs_f64(), compile, run))
}

/// The first characters of a value's debug form.
fn short(x: &impl std::fmt::Debug) -> String {
    let s = format!("{x:?}");
    s.chars().take(200).collect()
}

/// The steps of a compiled program, with `other` the part of `compile`
/// that no step accounts for.
fn account<A: accelerate::exec::ProgramArgs, R: Arrays>(
    p: &Program<A, R>,
    build: f64,
    compile: f64,
    run: f64,
) -> Measured {
    let mut steps = vec![("build".to_string(), build)];
    steps.extend(p.phases().iter().map(|ph| (ph.name.to_string(), ph.time.as_secs_f64())));
    steps.push(("plan".into(), p.plan_time().as_secs_f64()));
    steps.extend(p.backend_phases().iter().map(|(n, d)| (n.to_string(), d.as_secs_f64())));
    let accounted: f64 = steps.iter().map(|(_, s)| s).sum();
    steps.push(("other".into(), (compile - accounted).max(0.0)));
    steps.push(("run".into(), run));
    Measured { steps, compile, source_bytes: p.c_source().map_or(0, str::len) }
}

fn maps(n: usize, config: Config) -> Result<Measured, String> {
    let xs = input(n, 64);
    let want: Vec<i64> = xs.iter().map(|&x| map_chain(x, n)).collect();
    let f = move |xs: Acc<Vector<i64>>| {
        let mut acc = xs;
        for k in 0..n {
            acc = acc.map(move |x| x * 3i64 + step_constant(k));
        }
        acc
    };
    measure_one(config, f, &Vector::from_elems(xs), &Vector::from_elems(want))
}

/// The reference of the `maps` chain on one element.
fn map_chain(x: i64, n: usize) -> i64 {
    (0..n).fold(x, |x, k| x.wrapping_mul(3).wrapping_add(step_constant(k)))
}

fn reverses(n: usize, config: Config) -> Result<Measured, String> {
    let xs = input(n, 64);
    let mut want = xs.clone();
    if n % 2 == 1 {
        want.reverse();
    }
    let f = move |xs: Acc<Vector<i64>>| {
        let mut acc = xs;
        for _ in 0..n {
            acc = acc.reverse();
        }
        acc
    };
    measure_one(config, f, &Vector::from_elems(xs), &Vector::from_elems(want))
}

/// The value the `conds` table gives key `k`.
fn table(k: usize) -> i64 {
    (k as i64) * 7 + 1
}

fn conds(n: usize, config: Config) -> Result<Measured, String> {
    let xs = input(n, 64);
    let want: Vec<i64> =
        xs.iter().map(|&x| if (0..n as i64).contains(&x) { table(x as usize) } else { -1 }).collect();
    let f = move |xs: Acc<Vector<i64>>| {
        xs.map(move |x| {
            let mut e = constant(-1i64);
            for k in (0..n).rev() {
                e = cond(x.eq(k as i64), table(k), e);
            }
            e
        })
    };
    measure_one(config, f, &Vector::from_elems(xs), &Vector::from_elems(want))
}

/// The element `i` of input `k` of `zipn`.
fn zipn_elem(k: usize, i: usize) -> i64 {
    ((i * 31 + k * 7) % 1000) as i64
}

fn zipn(n: usize, config: Config) -> Result<Measured, String> {
    const LEN: usize = 16;
    let want: Vec<i64> = (0..LEN).map(|i| (0..n).map(|k| zipn_elem(k, i)).sum()).collect();
    let f = move |xs: Acc<Vector<i64>>| {
        let mut acc = xs;
        for k in 0..n {
            let a = Vector::from_elems((0..LEN).map(|i| zipn_elem(k, i)).collect());
            acc = acc.zip_with(use_array(a), |s, y| s + y);
        }
        acc
    };
    measure_one(config, f, &Vector::from_elems(vec![0; LEN]), &Vector::from_elems(want))
}

/// The reference of the `scalar` chain on one element.
fn scalar_chain(x: i64, n: usize) -> i64 {
    (0..n).fold(x, |e, k| (e ^ (e >> 7)).wrapping_add(step_constant(k)))
}

fn scalar(n: usize, config: Config) -> Result<Measured, String> {
    let xs = input(n, 64);
    let want: Vec<i64> = xs.iter().map(|&x| scalar_chain(x, n)).collect();
    let f = move |xs: Acc<Vector<i64>>| {
        xs.map(move |x| {
            let mut e = x.clone();
            for k in 0..n {
                e = (&e ^ (&e >> 7i64)) + step_constant(k);
            }
            e
        })
    };
    measure_one(config, f, &Vector::from_elems(xs), &Vector::from_elems(want))
}

/// The second input of `zips`, a function of the first.
fn zips_y(x: i64) -> i64 {
    x % 5 - 2
}

fn zips(n: usize, config: Config) -> Result<Measured, String> {
    let xs = input(n, 64);
    let want: Vec<i64> =
        xs.iter().map(|&x| (0..n).fold(x, |a, _| a.wrapping_mul(3).wrapping_add(zips_y(x)))).collect();
    let f = move |xs: Acc<Vector<i64>>| {
        let ys = xs.map(|x| x % 5i64 - 2i64);
        let mut acc = xs;
        for _ in 0..n {
            acc = acc.zip_with(&ys, |a, y| a * 3i64 + y);
        }
        acc
    };
    measure_one(config, f, &Vector::from_elems(xs), &Vector::from_elems(want))
}

fn fold_of_maps(n: usize, config: Config) -> Result<Measured, String> {
    let xs = input(n, 64);
    let want: i64 = xs.iter().fold(0i64, |s, &x| s.wrapping_add(map_chain(x, n)));
    let f = move |xs: Acc<Vector<i64>>| {
        let mut acc = xs;
        for k in 0..n {
            acc = acc.map(move |x| x * 3i64 + step_constant(k));
        }
        acc.fold(0i64, |a, b| a + b)
    };
    measure_one(config, f, &Vector::from_elems(xs), &Scalar::scalar(want))
}

// ---------------------------------------------------------------------------
// The child's line

/// The child's one line of output: `scaling compile=S bytes=B name=S ...`.
pub fn format_line(m: &Measured) -> String {
    let steps: Vec<String> = m.steps.iter().map(|(n, s)| format!("{n}={s:.6}")).collect();
    format!("scaling compile={:.6} bytes={} {}", m.compile, m.source_bytes, steps.join(" "))
}

/// Reads the child's line.
pub fn parse_line(line: &str) -> Option<Measured> {
    let rest = line.strip_prefix("scaling ")?;
    let mut m = Measured::default();
    for field in rest.split_whitespace() {
        let (k, v) = field.split_once('=')?;
        match k {
            "compile" => m.compile = v.parse().ok()?,
            "bytes" => m.source_bytes = v.parse().ok()?,
            _ => m.steps.push((k.to_string(), v.parse().ok()?)),
        }
    }
    Some(m)
}

/// The backend of a name (`cpu` or `interp`).
pub fn backend(name: &str) -> Option<Backend> {
    match name {
        "cpu" => Some(Backend::Cpu),
        "interp" => Some(Backend::Interpreter),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_childs_line_round_trips() {
        let m = Measured {
            steps: vec![("build".into(), 0.25), ("cc".into(), 1.5)],
            compile: 2.0,
            source_bytes: 1234,
        };
        assert_eq!(parse_line(&format_line(&m)), Some(m));
        assert_eq!(parse_line("something else"), None);
    }

    #[test]
    fn every_family_is_right_at_a_small_size_on_the_interpreter() {
        for f in FAMILIES {
            for n in [0, 1, 2, 7] {
                let config = Config::default().with_backend(Backend::Interpreter);
                if let Err(e) = (f.measure)(n, config) {
                    panic!("{} at {n}: {e}", f.name);
                }
            }
        }
    }
}

//! N-body gravitational simulation (ICFP'13 §5.4): the naive O(n²)
//! algorithm. Every body attracts every other one; the acceleration of each
//! body is the sum of the pairwise interactions.
//!
//! ```sh
//! cargo run --release --example nbody -- --check            # compare with plain Rust
//! cargo run --release --example nbody -- --size 512 --steps 10
//! ```
//!
//! As in the paper, the program first builds the n x n matrix of pairwise
//! interactions, by `replicate`-ing the vector of bodies along each of the
//! two dimensions and combining the two matrices with `zip_with`, and then
//! reduces each row with `fold` along the innermost dimension. Without
//! fusion that matrix takes O(n²) memory (the reference interpreter makes
//! it); a fusing backend consumes each interaction as it is made.
//!
//! A body is a user struct (`#[derive(Elt)]`): an array of bodies is stored
//! as one buffer per field (struct of arrays), and `b.pos()`, `p.x()` and
//! `V3::lift(..)` read and build them in scalar code. One time step is
//! converted once with `accelerate::compile` and run `--steps` times.

use accelerate::prelude::*;
use std::process::exit;
use std::time::Instant;

/// A vector of three coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Elt)]
struct V3 {
    x: f32,
    y: f32,
    z: f32,
}

/// A body: where it is, how fast it goes, and how heavy it is.
#[derive(Clone, Copy, Debug, PartialEq, Elt)]
struct Body {
    pos: V3,
    vel: V3,
    mass: f32,
}

/// The simulation's constants (in units where the gravitational constant
/// is 1).
#[derive(Clone, Copy)]
struct Params {
    /// The time step.
    dt: f32,
    /// The softening length, squared: it keeps the force between close
    /// bodies finite, and a body's pull on itself 0 (`0 * 1/eps³`) rather
    /// than NaN (`0 * 1/0`).
    eps2: f32,
}

// ---------------------------------------------------------------------------
// The Accelerate program

/// The acceleration that a body of mass `m2` at `p2` gives a body at `p1`:
/// `m2 * r / (|r|² + eps²)^(3/2)` with `r = p2 - p1` (softened gravity).
fn interaction(p1: Exp<V3>, p2: Exp<V3>, m2: Exp<f32>, eps2: f32) -> Exp<V3> {
    let rx = p2.x() - p1.x();
    let ry = p2.y() - p1.y();
    let rz = p2.z() - p1.z();
    let d2 = rx * rx + ry * ry + rz * rz + eps2;
    let inv = 1.0f32 / d2.sqrt();
    let s = m2 * (inv * inv * inv);
    V3::lift(rx * s, ry * s, rz * s)
}

fn add3(a: Exp<V3>, b: Exp<V3>) -> Exp<V3> {
    V3::lift(a.x() + b.x(), a.y() + b.y(), a.z() + b.z())
}

/// The acceleration of every body: `accels[i] = sum over j of
/// interaction(body i, body j)`, summed left to right over `j`.
///
/// The number of bodies is read from the array at run time, so one
/// compiled program serves every `n`.
fn accelerations(bodies: Acc<Vector<Body>>, p: Params) -> Acc<Vector<V3>> {
    let n = bodies.size();
    // rows[i][j] = bodies[i]: a new innermost dimension of extent n
    let rows = bodies.replicate(index0().all().fixed(n));
    // cols[i][j] = bodies[j]: a new outermost dimension of extent n
    let cols = bodies.replicate(index0().fixed(n).all());
    let zero = V3 { x: 0.0, y: 0.0, z: 0.0 };
    rows.zip_with(cols, move |bi, bj| interaction(bi.pos(), bj.pos(), bj.mass(), p.eps2)).fold(zero, add3)
}

/// One time step (semi-implicit Euler): the velocities first, then the
/// positions with the new velocities.
fn step(bodies: Acc<Vector<Body>>, p: Params) -> Acc<Vector<Body>> {
    let accels = accelerations(bodies, p);
    bodies.zip_with(accels, move |b, a| {
        let (pos, vel) = (b.pos(), b.vel());
        let v = V3::lift(vel.x() + a.x() * p.dt, vel.y() + a.y() * p.dt, vel.z() + a.z() * p.dt);
        let x = V3::lift(pos.x() + v.x() * p.dt, pos.y() + v.y() * p.dt, pos.z() + v.z() * p.dt);
        Body::lift(x, v, b.mass())
    })
}

// ---------------------------------------------------------------------------
// The plain-Rust reference: the same f32 operations in the same order

fn interaction_ref(p1: V3, p2: V3, m2: f32, eps2: f32) -> V3 {
    let rx = p2.x - p1.x;
    let ry = p2.y - p1.y;
    let rz = p2.z - p1.z;
    let d2 = rx * rx + ry * ry + rz * rz + eps2;
    let inv = 1.0f32 / d2.sqrt();
    let s = m2 * (inv * inv * inv);
    V3 { x: rx * s, y: ry * s, z: rz * s }
}

fn step_ref(bodies: &[Body], p: Params) -> Vec<Body> {
    bodies
        .iter()
        .map(|bi| {
            let mut a = V3 { x: 0.0, y: 0.0, z: 0.0 };
            for bj in bodies {
                let f = interaction_ref(bi.pos, bj.pos, bj.mass, p.eps2);
                a = V3 { x: a.x + f.x, y: a.y + f.y, z: a.z + f.z };
            }
            let (pos, vel) = (bi.pos, bi.vel);
            let v = V3 { x: vel.x + a.x * p.dt, y: vel.y + a.y * p.dt, z: vel.z + a.z * p.dt };
            let x = V3 { x: pos.x + v.x * p.dt, y: pos.y + v.y * p.dt, z: pos.z + v.z * p.dt };
            Body { pos: x, vel: v, mass: bi.mass }
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Input, arguments, checking

/// Deterministic pseudo-random numbers in [0, 1) (xorshift64*), exactly
/// representable as f32.
struct Rng(u64);

impl Rng {
    fn next_f32(&mut self) -> f32 {
        let s = &mut self.0;
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        let r = s.wrapping_mul(0x2545_f491_4f6c_dd1d);
        (r >> 40) as f32 / (1u32 << 24) as f32
    }
}

/// Bodies in a unit ball, turning slowly about the z axis, with masses in
/// [0.5, 1.5) / n (a total mass of about 1).
fn initial_bodies(n: usize, seed: u64) -> Vec<Body> {
    let mut rng = Rng(seed | 1);
    let mut bodies = Vec::with_capacity(n);
    while bodies.len() < n {
        let (x, y, z) = (rng.next_f32() * 2.0 - 1.0, rng.next_f32() * 2.0 - 1.0, rng.next_f32() * 2.0 - 1.0);
        if x * x + y * y + z * z > 1.0 {
            continue;
        }
        let mass = (0.5 + rng.next_f32()) / n as f32;
        bodies.push(Body { pos: V3 { x, y, z }, vel: V3 { x: -y * 0.5, y: x * 0.5, z: 0.0 }, mass });
    }
    bodies
}

struct Args {
    size: usize,
    steps: usize,
    check: bool,
}

fn usage() -> ! {
    eprintln!("usage: nbody [--check] [--size N] [--steps K]");
    exit(2)
}

fn parse_args() -> Args {
    let mut args = Args { size: 256, steps: 4, check: false };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => args.check = true,
            "--size" | "-n" => {
                args.size = it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage());
            }
            "--steps" => args.steps = it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()),
            "--help" | "-h" => usage(),
            _ => {
                eprintln!("nbody: unknown argument {a:?}");
                usage()
            }
        }
    }
    args
}

/// The bodies that differ in any bit, with the first few printed.
fn compare(got: &[Body], want: &[Body]) -> usize {
    let mut bad = 0;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits();
        let eq3 = |a: V3, b: V3| same(a.x, b.x) && same(a.y, b.y) && same(a.z, b.z);
        if !(eq3(g.pos, w.pos) && eq3(g.vel, w.vel) && same(g.mass, w.mass)) {
            if bad < 5 {
                eprintln!("check: MISMATCH at body {i}:\n  got        {g:?}\n  plain Rust {w:?}");
            }
            bad += 1;
        }
    }
    bad + got.len().abs_diff(want.len())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { size: n, steps, check } = parse_args();
    let params = Params { dt: 0.01, eps2: 0.05 * 0.05 };
    let init = initial_bodies(n, 0x9e37_79b9_7f4a_7c15);

    let t = Instant::now();
    let prog = accelerate::compile(move |bodies: Acc<Vector<Body>>| step(bodies, params))?;
    let t_compile = t.elapsed();

    let mut bodies = Vector::from_elems(init.clone());
    let t = Instant::now();
    for _ in 0..steps {
        bodies = prog.run(&bodies)?;
    }
    let t_run = t.elapsed();
    let result = bodies.to_vec();

    let interactions = (n * n * steps) as f64;
    println!("nbody: {n} bodies, {steps} steps");
    println!("  accelerate::compile   {:>10.2} ms", t_compile.as_secs_f64() * 1e3);
    println!(
        "  Program::run x {steps:<4}  {:>10.2} ms  ({:.2} ms per step, {:.3} µs per interaction)",
        t_run.as_secs_f64() * 1e3,
        t_run.as_secs_f64() * 1e3 / steps.max(1) as f64,
        t_run.as_secs_f64() * 1e6 / interactions.max(1.0)
    );
    let com = result.iter().fold([0.0f64; 3], |c, b| {
        let m = b.mass as f64;
        [c[0] + m * b.pos.x as f64, c[1] + m * b.pos.y as f64, c[2] + m * b.pos.z as f64]
    });
    println!("  centre of mass        ({:.6}, {:.6}, {:.6})", com[0], com[1], com[2]);

    if check {
        // The interpreter folds each row left to right and evaluates each
        // scalar expression as written (no reassociation, no fused
        // multiply-add; sqrt is correctly rounded), so the same f32
        // operations in the same order give the same bits.
        let t = Instant::now();
        let mut want = init;
        for _ in 0..steps {
            want = step_ref(&want, params);
        }
        let t_ref = t.elapsed();
        let bad = compare(&result, &want);
        if bad > 0 {
            eprintln!("check: {bad} of {n} bodies differ from the plain-Rust reference");
            exit(1);
        }
        println!(
            "check: all {n} bodies after {steps} steps are bit-identical to the plain-Rust O(n²) loop ({:.2} ms)",
            t_ref.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

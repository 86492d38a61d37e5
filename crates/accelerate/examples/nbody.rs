//! N-body gravitational simulation (ICFP'13 §5.4): the naive O(n²)
//! algorithm. Every body attracts every other one; the acceleration of each
//! body is the sum of the pairwise interactions.
//!
//! ```sh
//! cargo run --release --example nbody -- --check            # compare with plain Rust
//! cargo run --release --example nbody -- --size 512 --steps 10
//! ```
//!
//! The program is `accelerate_programs::nbody::step`: as in the paper, it
//! builds the n x n matrix of pairwise interactions by `replicate`-ing the
//! vector of bodies along each of the two dimensions and combining the two
//! matrices with `zip_with`, and then reduces each row with `fold` along
//! the innermost dimension; a body is a user struct (`#[derive(Elt)]`),
//! stored as one buffer per field. One time step is converted once with
//! `accelerate::compile` and run `--steps` times; `--check` redoes every
//! step with the plain-Rust reference from the same bodies.

use accelerate::prelude::*;
use accelerate_programs::nbody::{
    acceleration_ref, initial_bodies, interaction_magnitudes, position_ref, step, velocity_ref, Body, Params,
    PARAMS, V3,
};
use accelerate_programs::rng::SEED_A;
use accelerate_programs::rounding::gamma;
use std::process::exit;
use std::time::Instant;

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

/// What the checks of the steps found.
#[derive(Default)]
struct Checked {
    /// Bodies checked, over all steps.
    bodies: usize,
    /// Of those, the bodies bit-identical to the reference's.
    identical: usize,
    /// Of those, the bodies outside what reassociation can produce.
    bad: usize,
    /// The largest velocity difference, as a fraction of what was allowed
    /// on its side.
    worst: f64,
}

/// Checks one step of the program, from `before` to `got`, against the
/// reference step from the same `before`.
///
/// Each step is checked from the program's own bodies, rather than the
/// whole run against a reference run from the initial bodies, because the
/// simulation is chaotic: a difference in the last bit of one step grows
/// through the following ones by however much close encounters amplify
/// it, which no small tolerance bounds. From the same bodies, every
/// interaction term is the same f32 value in both (the same operations,
/// no fused multiply-add, a correctly rounded `sqrt`, `docs/semantics.md`),
/// and only the order of the sum over the `n` bodies may differ (`fold`'s
/// operator is associative; the CPU backend sums with interleaved
/// accumulators). Both sums are within `gamma_{n-1} * S` of the exact sum
/// (the first addition, to the zero seed, is exact), where `S` is the sum
/// of the absolute values of the terms, so the program's acceleration lies
/// within `2 * gamma_{n-1} * S` (about `(n - 1) * eps * S`) of the
/// reference's, per coordinate. `S`, not the acceleration, sets the scale:
/// the pulls from every side cancel.
///
/// The rest of the step is the same f32 operations on that acceleration,
/// each monotone in it (`dt > 0`; rounding to nearest is monotone), so the
/// velocity lies between the velocities that the reference's arithmetic
/// gives for the two ends of the interval, and the position is, to the
/// bit, the reference's arithmetic applied to the velocity that came out;
/// the mass is copied. Nothing wider is accepted. (The ends are rounded
/// to f32 to the nearest, which widens the interval by at most one f32 of
/// the acceleration, so that every f32 inside it stays inside.)
///
/// A real error stands out: the tolerance is `(n - 1) * eps`, about
/// `3e-5` at 256 bodies, of the sum of the terms' sizes, while one term
/// is on average `1/n` (`4e-3`) of it, so a dropped body or a flipped
/// sign moves the acceleration by about a hundred times the tolerance;
/// only a term thousands of times smaller than the average (a body far
/// away, or the body itself, whose term is 0) could hide in it. A wrong
/// velocity or position update fails at once.
fn check_step(step: usize, before: &[Body], got: &[Body], p: Params, checked: &mut Checked) {
    let n = before.len();
    if got.len() != n {
        eprintln!("check: step {step} gave {} bodies, not {n}", got.len());
        checked.bad += n.max(1);
        return;
    }
    let bound = 2.0 * gamma(n.saturating_sub(1));
    for (i, (b, g)) in before.iter().zip(got).enumerate() {
        let a = acceleration_ref(before, b.pos, p.eps2);
        let abs = interaction_magnitudes(before, b.pos, p.eps2);
        let want_v = velocity_ref(b.vel, a, p.dt);
        let widen = |d: f64| {
            let f = |a: f32, s: f64| (a as f64 + d * bound * s) as f32;
            V3 { x: f(a.x, abs[0]), y: f(a.y, abs[1]), z: f(a.z, abs[2]) }
        };
        let (v_lo, v_hi) = (velocity_ref(b.vel, widen(-1.0), p.dt), velocity_ref(b.vel, widen(1.0), p.dt));
        let mut ok = true;
        for (got, want, lo, hi) in [
            (g.vel.x, want_v.x, v_lo.x, v_hi.x),
            (g.vel.y, want_v.y, v_lo.y, v_hi.y),
            (g.vel.z, want_v.z, v_lo.z, v_hi.z),
        ] {
            ok &= lo <= got && got <= hi;
            let (diff, room) = if got >= want { (got - want, hi - want) } else { (want - got, want - lo) };
            if diff > 0.0 {
                checked.worst = checked.worst.max(diff as f64 / room as f64);
            }
        }
        let same = |a: f32, b: f32| a.to_bits() == b.to_bits();
        let eq3 = |a: V3, b: V3| same(a.x, b.x) && same(a.y, b.y) && same(a.z, b.z);
        ok &= eq3(g.pos, position_ref(b.pos, g.vel, p.dt)) && same(g.mass, b.mass);
        checked.bodies += 1;
        if eq3(g.vel, want_v) && eq3(g.pos, position_ref(b.pos, want_v, p.dt)) && same(g.mass, b.mass) {
            checked.identical += 1;
        }
        if !ok {
            if checked.bad < 5 {
                eprintln!(
                    "check: MISMATCH at step {step}, body {i}:\n  got        {g:?}\n  plain Rust {:?}\n  \
                     velocities between {v_lo:?}\n  and        {v_hi:?} are what reassociation can give",
                    Body { pos: position_ref(b.pos, want_v, p.dt), vel: want_v, mass: b.mass }
                );
            }
            checked.bad += 1;
        }
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { size: n, steps, check } = parse_args();
    let params = PARAMS;
    let init = initial_bodies(n, SEED_A);

    let t = Instant::now();
    let prog = accelerate::compile(move |bodies: Acc<Vector<Body>>| step(&bodies, params))?;
    let t_compile = t.elapsed();

    let mut bodies = Vector::from_elems(init.clone());
    // every state, kept for the check (a clone shares the buffers)
    let mut states = vec![bodies.clone()];
    let t = Instant::now();
    for _ in 0..steps {
        bodies = prog.run(&bodies)?;
        if check {
            states.push(bodies.clone());
        }
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
        // scalar expression as written, so with it every step is
        // bit-identical to the reference, and so is the whole run; a
        // backend that reassociates is held to `check_step`'s bound.
        let t = Instant::now();
        let mut checked = Checked::default();
        for (k, pair) in states.windows(2).enumerate() {
            check_step(k + 1, &pair[0].to_vec(), &pair[1].to_vec(), params, &mut checked);
        }
        let t_ref = t.elapsed();
        if checked.bad > 0 {
            eprintln!(
                "check: {} of {} bodies (over {steps} steps) differ from the plain-Rust step by more than reassociation can",
                checked.bad, checked.bodies
            );
            exit(1);
        }
        println!(
            "check: every step matches the plain-Rust O(n²) step from the same bodies ({:.2} ms); \
             {} of {} bodies bit-identical; largest velocity difference {:.3} of its bound",
            t_ref.as_secs_f64() * 1e3,
            checked.identical,
            checked.bodies,
            checked.worst
        );
    }
    Ok(())
}

//! N-body gravitational simulation (ICFP'13 §5.4): the naive O(n²)
//! algorithm. Every body attracts every other one; the acceleration of each
//! body is the sum of the pairwise interactions.
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
//! `V3::lift(..)` read and build them in scalar code.
//!
//! Used by `examples/nbody.rs` and the `nbody` benchmarks.

use crate::rng::Rng;
use accelerate::prelude::*;

/// A vector of three coordinates.
#[derive(Clone, Copy, Debug, PartialEq, Elt)]
pub struct V3 {
    pub x: f32,
    pub y: f32,
    pub z: f32,
}

/// A body: where it is, how fast it goes, and how heavy it is.
#[derive(Clone, Copy, Debug, PartialEq, Elt)]
pub struct Body {
    pub pos: V3,
    pub vel: V3,
    pub mass: f32,
}

/// The simulation's constants (in units where the gravitational constant
/// is 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Params {
    /// The time step.
    pub dt: f32,
    /// The softening length, squared: it keeps the force between close
    /// bodies finite, and a body's pull on itself 0 (`0 * 1/eps³`) rather
    /// than NaN (`0 * 1/0`).
    pub eps2: f32,
}

/// The constants of the example and the benchmarks.
pub const PARAMS: Params = Params { dt: 0.01, eps2: 0.05 * 0.05 };

// ---------------------------------------------------------------------------
// The Accelerate program

/// The acceleration that a body of mass `m2` at `p2` gives a body at `p1`:
/// `m2 * r / (|r|² + eps²)^(3/2)` with `r = p2 - p1` (softened gravity).
fn interaction(p1: &Exp<V3>, p2: &Exp<V3>, m2: &Exp<f32>, eps2: f32) -> Exp<V3> {
    let rx = p2.x() - p1.x();
    let ry = p2.y() - p1.y();
    let rz = p2.z() - p1.z();
    let d2 = &rx * &rx + &ry * &ry + &rz * &rz + eps2;
    let inv = 1.0f32 / d2.sqrt();
    let s = m2 * (&inv * &inv * &inv);
    V3::lift(rx * &s, ry * &s, rz * s)
}

fn add3(a: &Exp<V3>, b: &Exp<V3>) -> Exp<V3> {
    V3::lift(a.x() + b.x(), a.y() + b.y(), a.z() + b.z())
}

/// The acceleration of every body: `accels[i] = sum over j of
/// interaction(body i, body j)`, summed over `j` (left to right in the
/// interpreter; in another order by a backend that reassociates).
///
/// The number of bodies is read from the array at run time, so one
/// compiled program serves every `n`.
pub fn accelerations(bodies: &Acc<Vector<Body>>, p: Params) -> Acc<Vector<V3>> {
    let n = bodies.size();
    // rows[i][j] = bodies[i]: a new innermost dimension of extent n
    let rows = bodies.replicate(index0().all().fixed(&n));
    // cols[i][j] = bodies[j]: a new outermost dimension of extent n
    let cols = bodies.replicate(index0().fixed(n).all());
    let zero = V3 { x: 0.0, y: 0.0, z: 0.0 };
    rows.zip_with(cols, move |bi, bj| interaction(&bi.pos(), &bj.pos(), &bj.mass(), p.eps2)).fold(zero, add3)
}

/// One time step (semi-implicit Euler): the velocities first, then the
/// positions with the new velocities.
pub fn step(bodies: &Acc<Vector<Body>>, p: Params) -> Acc<Vector<Body>> {
    let accels = accelerations(bodies, p);
    bodies.zip_with(accels, move |b, a| {
        let (pos, vel) = (b.pos(), b.vel());
        let v = V3::lift(vel.x() + a.x() * p.dt, vel.y() + a.y() * p.dt, vel.z() + a.z() * p.dt);
        let x = V3::lift(pos.x() + v.x() * p.dt, pos.y() + v.y() * p.dt, pos.z() + v.z() * p.dt);
        Body::lift(x, v, b.mass())
    })
}

// ---------------------------------------------------------------------------
// The plain-Rust reference: the same f32 operations in the same order, in
// parts that a check can redo one at a time (those that the benchmarks'
// vectorised loops are made of are `#[inline(always)]`, as they were there)

/// The acceleration that a body of mass `m2` at `p2` gives a body at `p1`
/// (`interaction`, the program's), in plain Rust.
#[inline(always)]
pub fn interaction_ref(p1: V3, p2: V3, m2: f32, eps2: f32) -> V3 {
    let rx = p2.x - p1.x;
    let ry = p2.y - p1.y;
    let rz = p2.z - p1.z;
    let d2 = rx * rx + ry * ry + rz * rz + eps2;
    let inv = 1.0f32 / d2.sqrt();
    let s = m2 * (inv * inv * inv);
    V3 { x: rx * s, y: ry * s, z: rz * s }
}

/// The acceleration of a body at `p`: its interactions with `bodies`
/// summed left to right, as the interpreter folds.
pub fn acceleration_ref(bodies: &[Body], p: V3, eps2: f32) -> V3 {
    let mut a = V3 { x: 0.0, y: 0.0, z: 0.0 };
    for bj in bodies {
        let f = interaction_ref(p, bj.pos, bj.mass, eps2);
        a = V3 { x: a.x + f.x, y: a.y + f.y, z: a.z + f.z };
    }
    a
}

/// For each coordinate, the sum of the absolute values of the terms of
/// [`acceleration_ref`] (in f64), which bounds how much another order of
/// the sum may differ.
pub fn interaction_magnitudes(bodies: &[Body], p: V3, eps2: f32) -> [f64; 3] {
    let mut s = [0.0f64; 3];
    for bj in bodies {
        let f = interaction_ref(p, bj.pos, bj.mass, eps2);
        s = [s[0] + (f.x as f64).abs(), s[1] + (f.y as f64).abs(), s[2] + (f.z as f64).abs()];
    }
    s
}

/// The new velocity of a body of velocity `vel` under the acceleration `a`.
#[inline(always)]
pub fn velocity_ref(vel: V3, a: V3, dt: f32) -> V3 {
    V3 { x: vel.x + a.x * dt, y: vel.y + a.y * dt, z: vel.z + a.z * dt }
}

/// The new position of a body at `pos`, moving with the new velocity `v`.
#[inline(always)]
pub fn position_ref(pos: V3, v: V3, dt: f32) -> V3 {
    V3 { x: pos.x + v.x * dt, y: pos.y + v.y * dt, z: pos.z + v.z * dt }
}

/// [`step`] in plain Rust, from `bodies` into `out`.
pub fn step_ref(bodies: &[Body], p: Params, out: &mut [Body]) {
    for (o, bi) in out.iter_mut().zip(bodies) {
        let a = acceleration_ref(bodies, bi.pos, p.eps2);
        let vel = velocity_ref(bi.vel, a, p.dt);
        *o = Body { pos: position_ref(bi.pos, vel, p.dt), vel, mass: bi.mass };
    }
}

// ---------------------------------------------------------------------------
// Inputs

/// `n` bodies in a unit ball, turning slowly about the z axis, with masses
/// in [0.5, 1.5) / n (a total mass of about 1).
pub fn initial_bodies(n: usize, seed: u64) -> Vec<Body> {
    let mut rng = Rng::new(seed);
    let mut bodies = Vec::with_capacity(n);
    while bodies.len() < n {
        let (x, y, z) = (rng.uniform_f32(-1.0, 1.0), rng.uniform_f32(-1.0, 1.0), rng.uniform_f32(-1.0, 1.0));
        if x * x + y * y + z * z > 1.0 {
            continue;
        }
        let mass = (0.5 + rng.unit_f32()) / n as f32;
        bodies.push(Body { pos: V3 { x, y, z }, vel: V3 { x: -y * 0.5, y: x * 0.5, z: 0.0 }, mass });
    }
    bodies
}

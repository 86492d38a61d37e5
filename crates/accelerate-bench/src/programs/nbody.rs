//! N-body gravitation (ICFP'13 §5.4), one time step of the naive O(n²)
//! algorithm, as in `examples/nbody.rs`: the n x n interactions are built
//! by `replicate`-ing the bodies along both dimensions and `zip_with`,
//! each row summed by `fold` (fusion consumes each interaction as it is
//! made), then the bodies move. Compute-bound: n² interactions, each a
//! `sqrt`, a division and about 18 other operations; flops are counted
//! as 20 per interaction, the usual convention (GPU Gems 3, ch. 31).
//!
//! The program, its reference and the bodies are
//! `accelerate_programs::nbody`, with the example's constants (`PARAMS`).

use super::{
    accelerate_configs, add_accelerate_variants, add_text_variant, probe_compile, text_f32s, text_value,
    CompileProbe,
};
use crate::check::{elementwise, reassociated_sum_tolerance};
use crate::harness::{fresh, in_place, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::nbody::{
    interaction_magnitudes, interaction_ref, position_ref, step, step_ref, velocity_ref, Body, PARAMS, V3,
};
use accelerate_programs::rng::SEED_A;
use rayon::prelude::*;
use std::sync::Arc;

/// The time step, and the softening length squared.
pub const DT: f32 = PARAMS.dt;
pub const EPS2: f32 = PARAMS.eps2;

pub fn bodies(size: Size) -> usize {
    size.pick(67, 512, 4096)
}

/// The Accelerate program as a function of its array.
pub fn program(bodies: Acc<Vector<Body>>) -> Acc<Vector<Body>> {
    step(&bodies, PARAMS)
}

/// Semi-implicit Euler: the velocity first, then the position with it.
#[inline(always)]
fn advance(pos: V3, vel: V3, a: V3) -> (V3, V3) {
    let v = velocity_ref(vel, a, DT);
    (position_ref(pos, v, DT), v)
}

/// The reference: each body's interactions summed left to right.
pub fn step_seq(bodies: &[Body], out: &mut [Body]) {
    step_ref(bodies, PARAMS, out)
}

/// Bodies as one array per field, the layout the hand-written parallel
/// version streams through (and the one the Accelerate array has).
#[derive(Clone, Debug, Default)]
pub struct BodiesSoa {
    pub px: Vec<f32>,
    pub py: Vec<f32>,
    pub pz: Vec<f32>,
    pub vx: Vec<f32>,
    pub vy: Vec<f32>,
    pub vz: Vec<f32>,
    pub m: Vec<f32>,
}

impl BodiesSoa {
    pub fn from_bodies(bs: &[Body]) -> BodiesSoa {
        let field = |f: fn(&Body) -> f32| bs.iter().map(f).collect();
        BodiesSoa {
            px: field(|b| b.pos.x),
            py: field(|b| b.pos.y),
            pz: field(|b| b.pos.z),
            vx: field(|b| b.vel.x),
            vy: field(|b| b.vel.y),
            vz: field(|b| b.vel.z),
            m: field(|b| b.mass),
        }
    }

    pub fn to_bodies(&self) -> Vec<Body> {
        (0..self.m.len())
            .map(|i| Body {
                pos: V3 { x: self.px[i], y: self.py[i], z: self.pz[i] },
                vel: V3 { x: self.vx[i], y: self.vy[i], z: self.vz[i] },
                mass: self.m[i],
            })
            .collect()
    }
}

/// Bodies per rayon task: 16 bodies are 16 n interactions, tens of
/// microseconds of work at n = 4096, and n / 16 tasks to balance.
const BODIES_PER_TASK: usize = 16;

/// Parallel: blocks of bodies on rayon's pool; each body's acceleration
/// summed by `acceleration` in 16 vector lanes.
pub fn step_rayon(b: &BodiesSoa, out: &mut BodiesSoa) {
    let c = BODIES_PER_TASK;
    let positions = (
        out.px.par_chunks_mut(c),
        out.py.par_chunks_mut(c),
        out.pz.par_chunks_mut(c),
        out.vx.par_chunks_mut(c),
        out.vy.par_chunks_mut(c),
        out.vz.par_chunks_mut(c),
    );
    positions.into_par_iter().enumerate().for_each(|(t, (px, py, pz, vx, vy, vz))| {
        for k in 0..px.len() {
            let i = t * c + k;
            let pos = V3 { x: b.px[i], y: b.py[i], z: b.pz[i] };
            let a = acceleration(pos, &b.px, &b.py, &b.pz, &b.m);
            let (x, v) = advance(pos, V3 { x: b.vx[i], y: b.vy[i], z: b.vz[i] }, a);
            (px[k], py[k], pz[k], vx[k], vy[k], vz[k]) = (x.x, x.y, x.z, v.x, v.y, v.z);
        }
    });
    out.m.copy_from_slice(&b.m);
}

native_fn! {
    /// The acceleration of a body at `p`: the interactions with all bodies
    /// summed in 16 independent lanes per component (the sum is
    /// reassociated, as a parallel fold may), so that the loop vectorises.
    fn acceleration(p: V3, xs: &[f32], ys: &[f32], zs: &[f32], ms: &[f32]) -> V3 {
        const LANES: usize = 16;
        let n = xs.len();
        let (xb, xt) = xs.as_chunks::<LANES>();
        let (yb, yt) = ys[..n].as_chunks::<LANES>();
        let (zb, zt) = zs[..n].as_chunks::<LANES>();
        let (mb, mt) = ms[..n].as_chunks::<LANES>();
        let (mut ax, mut ay, mut az) = ([0.0f32; LANES], [0.0f32; LANES], [0.0f32; LANES]);
        for (((x, y), z), m) in xb.iter().zip(yb).zip(zb).zip(mb) {
            for k in 0..LANES {
                let f = interaction_ref(p, V3 { x: x[k], y: y[k], z: z[k] }, m[k], EPS2);
                ax[k] += f.x;
                ay[k] += f.y;
                az[k] += f.z;
            }
        }
        let mut a = V3 { x: ax.iter().sum(), y: ay.iter().sum(), z: az.iter().sum() };
        for j in 0..xt.len() {
            let f = interaction_ref(p, V3 { x: xt[j], y: yt[j], z: zt[j] }, mt[j], EPS2);
            a = V3 { x: a.x + f.x, y: a.y + f.y, z: a.z + f.z };
        }
        a
    }
}

/// The example's bodies: `n` in a unit ball turning slowly about the z
/// axis, with masses in [0.5, 1.5) / n.
pub fn initial_bodies(n: usize) -> Vec<Body> {
    accelerate_programs::nbody::initial_bodies(n, SEED_A)
}

/// How far each body's result may be from the reference's.
///
/// Every variant computes each interaction with the same operations (no
/// fused multiply-add anywhere, `sqrt` and division correctly rounded),
/// so the interactions agree to the bit and only the order of the sum of
/// n of them differs: the accelerations differ by at most
/// (n + 1) * eps * S per component, S the sum of the interactions'
/// magnitudes (`check::reassociated_sum_tolerance`). The velocity
/// `vel + a * dt` then differs by dt times that, plus one rounding of the
/// velocity (2 eps |v| allows it either side); the position `pos + v * dt`
/// by dt times the velocity's bound plus one rounding of the position.
/// The mass is copied.
#[derive(Clone, Copy, Debug)]
struct Bound {
    vel: V3,
    pos: V3,
}

fn bounds(bodies: &[Body], want: &[Body]) -> Vec<Bound> {
    let n = bodies.len();
    let eps = f32::EPSILON as f64;
    bodies
        .par_iter()
        .zip(want)
        .map(|(bi, w)| {
            let s = interaction_magnitudes(bodies, bi.pos, EPS2);
            let (dt, xyz) = (DT as f64, |v: V3| [v.x as f64, v.y as f64, v.z as f64]);
            let (w_vel, w_pos) = (xyz(w.vel), xyz(w.pos));
            let vel: [f64; 3] = std::array::from_fn(|k| {
                dt * reassociated_sum_tolerance(n, s[k], eps) + 2.0 * eps * w_vel[k].abs()
            });
            let pos: [f64; 3] = std::array::from_fn(|k| dt * vel[k] + 2.0 * eps * w_pos[k].abs());
            let v3 = |a: [f64; 3]| V3 { x: a[0] as f32, y: a[1] as f32, z: a[2] as f32 };
            Bound { vel: v3(vel), pos: v3(pos) }
        })
        .collect()
}

fn check(got: &[Body], want: &[Body], bounds: &[Bound]) -> Result<(), String> {
    let near = |g: V3, w: V3, b: V3| {
        (g.x - w.x).abs() <= b.x && (g.y - w.y).abs() <= b.y && (g.z - w.z).abs() <= b.z
    };
    elementwise(got, want, |i, g, w| {
        g == w || (near(g.pos, w.pos, bounds[i].pos) && near(g.vel, w.vel, bounds[i].vel) && g.mass == w.mass)
    })
}

/// The check of a step from `init` whose reference result is `want`.
pub fn checker(init: &[Body], want: &[Body]) -> impl Fn(&[Body]) -> Result<(), String> + Clone + 'static {
    let bounds = Arc::new(bounds(init, want));
    let want = Arc::new(want.to_vec());
    move |got: &[Body]| check(got, &want, &bounds)
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let n = bodies(size);
    let init = Arc::new(initial_bodies(n));
    let mut want = vec![init[0]; n];
    step_seq(&init, &mut want);
    let checker = checker(&init, &want);

    let mut b = Bench::new("nbody", format!("n = {n} bodies, one step"));
    b.flops = Some(20.0 * (n * n) as f64);
    let input = Vector::from_elems(init.to_vec());
    // the text form takes the bodies' seven fields as arrays
    let field =
        |f: fn(&Body) -> f32| text_value(&Vector::from_elems(init.iter().map(f).collect::<Vec<f32>>()));
    let text_args = vec![
        field(|b| b.pos.x),
        field(|b| b.pos.y),
        field(|b| b.pos.z),
        field(|b| b.vel.x),
        field(|b| b.vel.y),
        field(|b| b.vel.z),
        field(|b| b.mass),
    ];
    let (c, masses) = (checker.clone(), init.clone());
    add_text_variant(&mut b, "nbody.fut", accelerate_programs::text::NBODY, text_args, move |r| {
        let cols = r.iter().map(text_f32s).collect::<Result<Vec<_>, _>>()?;
        let bodies: Vec<Body> = (0..masses.len())
            .map(|i| Body {
                pos: V3 { x: cols[0][i], y: cols[1][i], z: cols[2][i] },
                vel: V3 { x: cols[3][i], y: cols[4][i], z: cols[5][i] },
                mass: masses[i].mass,
            })
            .collect();
        c(&bodies)
    })?;
    let c = checker.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
        {
            let input = input.clone();
            move |p| p.run(&input)
        },
        move |r: &Vector<Body>| c(&r.to_vec()),
    )?;
    // fast-math mode (docs/semantics.md), to compare with Numba's
    // `fastmath=True`: approximate inverse square roots and reassociation,
    // checked against the same bounds, which leave room for them (each
    // interaction's 2^-22 relative error is far below the summation bound)
    let fast = accelerate_configs()[0].1.clone().with_fast_math(true);
    let prog =
        accelerate::compile_with(program, fast).map_err(|e| format!("nbody, fast-math: compiling: {e}"))?;
    let c = checker.clone();
    b.variant(
        "accelerate-fast-math",
        move |slot| fresh(slot, || prog.run(&input)),
        move |r: &Vector<Body>| c(&r.to_vec()),
    );
    let (bs, c) = (init.clone(), checker.clone());
    b.variant(
        "rust-seq",
        move |s| Ok(in_place(s, || vec![bs[0]; n], |out| step_seq(&bs, out))),
        move |out| c(out),
    );
    let soa = BodiesSoa::from_bodies(&init);
    let c = checker.clone();
    b.variant(
        "rust-rayon",
        move |s| Ok(in_place(s, || soa.clone(), |out| step_rayon(&soa, out))),
        move |out| c(&out.to_bodies()),
    );
    add_peers(&mut b, &init, checker)?;
    Ok(b)
}

/// The Python peers (`crate::peers`): the bodies as rows of seven `f32`s
/// (position, velocity, mass), the result likewise.
fn add_peers(
    b: &mut Bench,
    init: &[Body],
    checker: impl Fn(&[Body]) -> Result<(), String> + Clone + 'static,
) -> Result<(), String> {
    let flat: Vec<f32> =
        init.iter().flat_map(|b| [b.pos.x, b.pos.y, b.pos.z, b.vel.x, b.vel.y, b.vel.z, b.mass]).collect();
    let bodies = |raw: Vec<u8>| -> Vec<Body> {
        peers::all::<f32>(raw)
            .chunks_exact(7)
            .map(|c| Body {
                pos: V3 { x: c[0], y: c[1], z: c[2] },
                vel: V3 { x: c[3], y: c[4], z: c[5] },
                mass: c[6],
            })
            .collect()
    };
    peers::add(
        b,
        &["numpy", "numba", "numba-fastmath", "jax"],
        &[("bodies.bin", peers::bytes(&flat))],
        &[init.len().to_string(), DT.to_string(), EPS2.to_string()],
        bodies,
        move |out: &Vec<Body>| checker(out),
    )
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

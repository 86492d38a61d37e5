//! Fluid flow (ICFP'13 §5.6): Jos Stam's "Stable Fluids" (SIGGRAPH'99;
//! "Real-Time Fluid Dynamics for Games", GDC'03) on a grid: a density
//! field carried by a velocity field, both diffusing, the velocity kept
//! free of divergence (mass conserving) by a pressure projection.
//!
//! ```sh
//! cargo run --release --example fluid -- --check                 # compare with plain Rust
//! cargo run --release --example fluid -- --size 128x128 --steps 10 --out fluid.png
//! ```
//!
//! One time step, as in Stam's solver:
//!
//! - velocity: add the source, diffuse (viscosity), project, advect the
//!   velocity by itself, project again;
//! - density: add the source, diffuse, advect by the new velocity.
//!
//! Diffusion and the pressure solve are Jacobi relaxations, as in the
//! paper: each sweep is a `stencil2` reading the right-hand side at the
//! centre (a 1x1 pattern) and the previous iterate's four neighbours (a
//! 3x3 pattern), the sweeps unrolled in Rust (`--iters`, 20 by default).
//! Advection is semi-Lagrangian: each cell traces its centre back along
//! the velocity and reads the previous field there by bilinear
//! interpolation (`generate` with `index` into the field: a gather).
//!
//! Boundaries: the velocity is 0 outside the grid (no-slip walls:
//! `Boundary::constant(0.0)`), density and pressure repeat the edge cell
//! (`Boundary::clamp()`, no flux through the walls); the back-traced
//! positions are clamped into the grid. Units: one cell is 1 long, and
//! velocities are in cells per unit time.
//!
//! The time step is converted once with `accelerate::compile` and run
//! `--steps` times.

mod common;

use accelerate::prelude::*;
use std::process::exit;
use std::time::Instant;

/// The simulation's constants.
#[derive(Clone, Copy)]
struct Params {
    width: usize,
    height: usize,
    dt: f32,
    /// Diffusion rate of the density.
    diff: f32,
    /// Viscosity of the velocity.
    visc: f32,
    /// Jacobi sweeps per diffusion and per pressure solve.
    iters: usize,
}

type Field = Acc<Matrix<f32>>;

/// What a field is outside the grid: 0, or the nearest edge cell.
#[derive(Clone, Copy, PartialEq)]
enum Edge {
    Zero,
    Clamp,
}

fn boundary(edge: Edge) -> Boundary<DIM2, f32> {
    match edge {
        Edge::Zero => Boundary::constant(0.0f32),
        Edge::Clamp => Boundary::clamp(),
    }
}
type P1 = [[Exp<f32>; 1]; 1];
type P3 = [[Exp<f32>; 3]; 3];

// ---------------------------------------------------------------------------
// The Accelerate program

/// `x + dt * s`, element-wise.
fn add_source(x: Field, s: Field, dt: f32) -> Field {
    x.zip_with(s, move |x, s| x + dt * s)
}

/// The sum of the four neighbours in a 3x3 pattern: up, left, right, down.
fn neighbours(p: &P3) -> Exp<f32> {
    &p[0][1] + &p[1][0] + &p[1][2] + &p[2][1]
}

/// Solves `(1 + 4a) x - a (sum of x's neighbours) = x0` for `x` by `iters`
/// Jacobi sweeps from `x0`; `x` outside the grid is given by `boundary`.
fn diffuse(x0: Field, rate: f32, p: Params, edge: Edge) -> Field {
    let a = p.dt * rate * (p.width * p.height) as f32;
    let denom = 1.0 + 4.0 * a;
    (0..p.iters).fold(x0.clone(), |x, _| {
        x0.stencil2(Boundary::clamp(), x, boundary(edge), move |c: P1, n: P3| {
            (&c[0][0] + a * neighbours(&n)) / denom
        })
    })
}

/// Makes the velocity divergence-free: solves the Poisson equation
/// `laplacian(p) = div(u, v)` by Jacobi sweeps and subtracts the pressure
/// gradient.
fn project(u: Field, v: Field, iters: usize) -> (Field, Field) {
    let div = u.stencil2(Boundary::constant(0.0), &v, Boundary::constant(0.0), |u: P3, v: P3| {
        -0.5f32 * ((&u[1][2] - &u[1][0]) + (&v[2][1] - &v[0][1]))
    });
    let zero = fill(div.shape(), 0.0f32);
    let pressure = (0..iters).fold(zero, |q, _| {
        div.stencil2(Boundary::clamp(), q, Boundary::clamp(), |d: P1, q: P3| {
            (&d[0][0] + neighbours(&q)) * 0.25
        })
    });
    let u = u.stencil2(Boundary::clamp(), &pressure, Boundary::clamp(), |u: P1, q: P3| {
        &u[0][0] - 0.5f32 * (&q[1][2] - &q[1][0])
    });
    let v = v.stencil2(Boundary::clamp(), pressure, Boundary::clamp(), |v: P1, q: P3| {
        &v[0][0] - 0.5f32 * (&q[2][1] - &q[0][1])
    });
    (u, v)
}

/// Semi-Lagrangian advection of `d0` by the velocity `(u, v)`: the value
/// at a cell is `d0` read, by bilinear interpolation, where the fluid
/// there was `dt` earlier.
fn advect(d0: &Field, u: &Field, v: &Field, p: Params) -> Field {
    let (w, h, dt) = (p.width as i64, p.height as i64, p.dt);
    let (xmax, ymax) = ((w - 1) as f32, (h - 1) as f32);
    generate(d0.shape(), move |ix| {
        let (i, j) = unindex2(ix);
        let x = (j.cast::<f32>() - dt * u.index(ix)).max(0.0f32).min(xmax);
        let y = (i.cast::<f32>() - dt * v.index(ix)).max(0.0f32).min(ymax);
        let j0 = x.floor().cast::<i64>().min(w - 2);
        let i0 = y.floor().cast::<i64>().min(h - 2);
        let (j1, i1) = (&j0 + 1, &i0 + 1);
        let s1 = x - j0.cast::<f32>();
        let t1 = y - i0.cast::<f32>();
        let (s0, t0) = (1.0f32 - &s1, 1.0f32 - &t1);
        let at = |i: &Exp<i64>, j: &Exp<i64>| d0.index(index2(i, j));
        s0 * (&t0 * at(&i0, &j0) + &t1 * at(&i1, &j0)) + s1 * (t0 * at(&i0, &j1) + t1 * at(&i1, &j1))
    })
}

/// The sources added every step: density, and the velocity's two
/// components.
#[derive(Clone)]
struct Sources {
    density: Matrix<f32>,
    u: Matrix<f32>,
    v: Matrix<f32>,
}

/// One time step of the density `d` and the velocity `(u, v)`.
fn step(d: Field, u: Field, v: Field, src: &Sources, p: Params) -> (Field, Field, Field) {
    // velocity
    let u = add_source(u, use_array(src.u.clone()), p.dt);
    let v = add_source(v, use_array(src.v.clone()), p.dt);
    let u = diffuse(u, p.visc, p, Edge::Zero);
    let v = diffuse(v, p.visc, p, Edge::Zero);
    let (u, v) = project(u, v, p.iters);
    let (u, v) = (advect(&u, &u, &v, p), advect(&v, &u, &v, p));
    let (u, v) = project(u, v, p.iters);
    // density
    let d = add_source(d, use_array(src.density.clone()), p.dt);
    let d = diffuse(d, p.diff, p, Edge::Clamp);
    let d = advect(&d, &u, &v, p);
    (d, u, v)
}

// ---------------------------------------------------------------------------
// The plain-Rust reference: the same f32 operations in the same order

#[derive(Clone, Debug)]
struct Grid {
    w: usize,
    h: usize,
    data: Vec<f32>,
}

impl Grid {
    fn new(w: usize, h: usize, f: impl FnMut(usize) -> f32) -> Grid {
        Grid { w, h, data: (0..w * h).map(f).collect() }
    }

    fn get(&self, i: usize, j: usize) -> f32 {
        self.data[i * self.w + j]
    }

    /// The element at `(i + di, j + dj)`, outside the grid as `edge` says.
    fn at(&self, i: usize, j: usize, di: i64, dj: i64, edge: Edge) -> f32 {
        let (r, c) = (i as i64 + di, j as i64 + dj);
        let inside = (0..self.h as i64).contains(&r) && (0..self.w as i64).contains(&c);
        match (inside, edge) {
            (true, _) | (false, Edge::Clamp) => {
                self.get(r.clamp(0, self.h as i64 - 1) as usize, c.clamp(0, self.w as i64 - 1) as usize)
            }
            (false, Edge::Zero) => 0.0,
        }
    }

    fn neighbours(&self, i: usize, j: usize, edge: Edge) -> f32 {
        self.at(i, j, -1, 0, edge)
            + self.at(i, j, 0, -1, edge)
            + self.at(i, j, 0, 1, edge)
            + self.at(i, j, 1, 0, edge)
    }

    fn map(&self, mut f: impl FnMut(usize, usize) -> f32) -> Grid {
        Grid::new(self.w, self.h, |k| f(k / self.w, k % self.w))
    }
}

fn diffuse_ref(x0: &Grid, rate: f32, p: Params, edge: Edge) -> Grid {
    let a = p.dt * rate * (p.width * p.height) as f32;
    let denom = 1.0 + 4.0 * a;
    let mut x = x0.clone();
    for _ in 0..p.iters {
        x = x0.map(|i, j| (x0.get(i, j) + a * x.neighbours(i, j, edge)) / denom);
    }
    x
}

fn project_ref(u: &Grid, v: &Grid, iters: usize) -> (Grid, Grid) {
    let z = Edge::Zero;
    let div = u.map(|i, j| {
        -0.5f32
            * ((u.at(i, j, 0, 1, z) - u.at(i, j, 0, -1, z)) + (v.at(i, j, 1, 0, z) - v.at(i, j, -1, 0, z)))
    });
    let mut q = div.map(|_, _| 0.0);
    for _ in 0..iters {
        q = div.map(|i, j| (div.get(i, j) + q.neighbours(i, j, Edge::Clamp)) * 0.25);
    }
    let c = Edge::Clamp;
    let u2 = u.map(|i, j| u.get(i, j) - 0.5f32 * (q.at(i, j, 0, 1, c) - q.at(i, j, 0, -1, c)));
    let v2 = v.map(|i, j| v.get(i, j) - 0.5f32 * (q.at(i, j, 1, 0, c) - q.at(i, j, -1, 0, c)));
    (u2, v2)
}

fn advect_ref(d0: &Grid, u: &Grid, v: &Grid, p: Params) -> Grid {
    let (w, h, dt) = (p.width as i64, p.height as i64, p.dt);
    let (xmax, ymax) = ((w - 1) as f32, (h - 1) as f32);
    d0.map(|i, j| {
        let x = ((j as i64) as f32 - dt * u.get(i, j)).max(0.0).min(xmax);
        let y = ((i as i64) as f32 - dt * v.get(i, j)).max(0.0).min(ymax);
        let j0 = (x.floor() as i64).min(w - 2);
        let i0 = (y.floor() as i64).min(h - 2);
        let (j1, i1) = (j0 + 1, i0 + 1);
        let s1 = x - j0 as f32;
        let t1 = y - i0 as f32;
        let (s0, t0) = (1.0f32 - s1, 1.0f32 - t1);
        let at = |i: i64, j: i64| d0.get(i as usize, j as usize);
        s0 * (t0 * at(i0, j0) + t1 * at(i1, j0)) + s1 * (t0 * at(i0, j1) + t1 * at(i1, j1))
    })
}

fn step_ref(d: &Grid, u: &Grid, v: &Grid, src: &[Grid; 3], p: Params) -> (Grid, Grid, Grid) {
    let add = |x: &Grid, s: &Grid| x.map(|i, j| x.get(i, j) + p.dt * s.get(i, j));
    let u = diffuse_ref(&add(u, &src[1]), p.visc, p, Edge::Zero);
    let v = diffuse_ref(&add(v, &src[2]), p.visc, p, Edge::Zero);
    let (u, v) = project_ref(&u, &v, p.iters);
    let (u, v) = (advect_ref(&u, &u, &v, p), advect_ref(&v, &u, &v, p));
    let (u, v) = project_ref(&u, &v, p.iters);
    let d = diffuse_ref(&add(d, &src[0]), p.diff, p, Edge::Clamp);
    let d = advect_ref(&d, &u, &v, p);
    (d, u, v)
}

// ---------------------------------------------------------------------------
// Input, arguments, output, checking

/// A plume: density and an upward push (with a little sideways swirl)
/// from a disc near the bottom of the grid.
fn sources(w: usize, h: usize) -> [Grid; 3] {
    let (cx, cy, r) = (w as f32 * 0.5, h as f32 * 0.8, (w.min(h) as f32 * 0.08).max(1.5));
    let inside = |k: usize| {
        let (i, j) = ((k / w) as f32 + 0.5, (k % w) as f32 + 0.5);
        (j - cx) * (j - cx) + (i - cy) * (i - cy) <= r * r
    };
    let density = Grid::new(w, h, |k| if inside(k) { 20.0 } else { 0.0 });
    let u = Grid::new(w, h, |k| if inside(k) { 3.0 * ((k / w) as f32 - cy) / r } else { 0.0 });
    let v = Grid::new(w, h, |k| if inside(k) { -40.0 } else { 0.0 });
    [density, u, v]
}

fn to_matrix(g: &Grid) -> Result<Matrix<f32>, accelerate::Error> {
    Matrix::from_vec(dim2(g.h, g.w), g.data.clone())
}

fn write_png(path: &str, g: &Grid) -> Result<(), Box<dyn std::error::Error>> {
    let max = g.data.iter().fold(0.0f32, |m, &x| m.max(x)).max(f32::MIN_POSITIVE);
    let pixels: Vec<u8> =
        g.data.iter().map(|&x| ((x / max).sqrt() * 255.0).round().clamp(0.0, 255.0) as u8).collect();
    common::write_png(path, g.w, g.h, png::ColorType::Grayscale, &pixels)
}

struct Args {
    width: usize,
    height: usize,
    steps: usize,
    iters: usize,
    out: Option<String>,
    check: bool,
}

fn usage() -> ! {
    eprintln!("usage: fluid [--check] [--size WIDTHxHEIGHT] [--steps K] [--iters J] [--out PATH]");
    exit(2)
}

fn parse_args() -> Args {
    let mut args = Args { width: 64, height: 64, steps: 5, iters: 20, out: None, check: false };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => args.check = true,
            "--size" => {
                let s = it.next().unwrap_or_else(|| usage());
                let (w, h) = s.split_once('x').unwrap_or_else(|| usage());
                args.width = w.parse().unwrap_or_else(|_| usage());
                args.height = h.parse().unwrap_or_else(|_| usage());
                if args.width < 3 || args.height < 3 {
                    eprintln!("fluid: the grid must be at least 3x3 (the stencils' size)");
                    usage()
                }
            }
            "--steps" => args.steps = it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()),
            "--iters" => args.iters = it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()),
            "--out" | "-o" => args.out = Some(it.next().unwrap_or_else(|| usage())),
            "--help" | "-h" => usage(),
            _ => {
                eprintln!("fluid: unknown argument {a:?}");
                usage()
            }
        }
    }
    args
}

/// The cells whose bits differ, with the first few printed.
fn compare(what: &str, got: &[f32], want: &Grid) -> usize {
    let mut bad = got.len().abs_diff(want.data.len());
    for (k, (g, w)) in got.iter().zip(&want.data).enumerate() {
        if g.to_bits() != w.to_bits() {
            if bad < 8 {
                let (i, j) = (k / want.w, k % want.w);
                eprintln!("check {what}: MISMATCH at (row {i}, col {j}): got {g:e}, plain Rust gives {w:e}");
            }
            bad += 1;
        }
    }
    bad
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { width, height, steps, iters, out, check } = parse_args();
    let p = Params { width, height, dt: 0.1, diff: 0.00001, visc: 0.00001, iters };
    let src_ref = sources(width, height);
    let src =
        Sources { density: to_matrix(&src_ref[0])?, u: to_matrix(&src_ref[1])?, v: to_matrix(&src_ref[2])? };

    let t = Instant::now();
    let src2 = src.clone();
    let prog = accelerate::compile(move |d: Field, u: Field, v: Field| {
        let (d, u, v) = step(d, u, v, &src2, p);
        lift_acc((d, u, v))
    })?;
    let t_compile = t.elapsed();

    let zero = Grid::new(width, height, |_| 0.0);
    let (mut d, mut u, mut v) = (to_matrix(&zero)?, to_matrix(&zero)?, to_matrix(&zero)?);
    let t = Instant::now();
    for _ in 0..steps {
        (d, u, v) = prog.run((&d, &u, &v))?;
    }
    let t_run = t.elapsed();
    let (d, u, v) = (d.to_vec(), u.to_vec(), v.to_vec());

    // diffusion: 3 fields; projection: divergence, sweeps, 2 gradients, twice
    let sweeps = 3 * iters + 2 * (iters + 3);
    println!("fluid: {width}x{height} grid, {steps} steps, {iters} Jacobi sweeps per solve ({sweeps} stencil passes a step)");
    println!("  accelerate::compile  {:>9.2} ms", t_compile.as_secs_f64() * 1e3);
    println!(
        "  Program::run x {steps:<4} {:>9.2} ms  ({:.2} ms per step)",
        t_run.as_secs_f64() * 1e3,
        t_run.as_secs_f64() * 1e3 / steps.max(1) as f64
    );
    let total: f64 = d.iter().map(|&x| x as f64).sum();
    let speed = u.iter().zip(&v).fold(0.0f32, |m, (&a, &b)| m.max((a * a + b * b).sqrt()));
    println!("  total density {total:.4}, largest speed {speed:.4} cells per unit time");

    if let Some(path) = &out {
        write_png(path, &Grid { w: width, h: height, data: d.clone() })?;
        println!("wrote {path}");
    }

    if check {
        // Every operation is an IEEE f32 +, -, *, /, min, max, floor or a
        // cast, evaluated as written: the same operations in the same
        // order give the same bits.
        let t = Instant::now();
        let (mut dr, mut ur, mut vr) = (zero.clone(), zero.clone(), zero);
        for _ in 0..steps {
            (dr, ur, vr) = step_ref(&dr, &ur, &vr, &src_ref, p);
        }
        let t_ref = t.elapsed();
        let bad = compare("density", &d, &dr) + compare("u", &u, &ur) + compare("v", &v, &vr);
        if bad > 0 {
            eprintln!("check: {bad} cells differ from the plain-Rust reference");
            exit(1);
        }
        println!(
            "check: density and velocity after {steps} steps are bit-identical to the plain-Rust solver ({:.2} ms)",
            t_ref.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

//! Canny edge detection (ICFP'13 §5.7): the data-parallel phases as
//! Accelerate programs, the final sequential phase in plain Rust, as in the
//! paper.
//!
//! ```sh
//! cargo run --release --example canny -- --check                  # compare each phase with plain Rust
//! cargo run --release --example canny -- --size 512x512 --out edges.png
//! ```
//!
//! The phases:
//!
//! 1. greyscale: the luminance of each packed `0xRRGGBB` pixel (`map`);
//! 2. Gaussian blur, separable: a 1x5 `stencil` along the rows, then a
//!    5x1 one along the columns (weights 1 4 6 4 1 / 16; `clamp` boundary);
//! 3. Sobel gradients: a 3x3 `stencil` giving `(gx, gy)`;
//! 4. magnitude and orientation: `sqrt(gx² + gy²)` and the direction of
//!    the gradient rounded to one of four (0: horizontal, 1: diagonal
//!    down-right, 2: vertical, 3: diagonal down-left), by `map`;
//! 5. non-maximum suppression: a `stencil2` reading the magnitude's 3x3
//!    neighbourhood and the orientation at the centre keeps a magnitude
//!    only if it is at least both neighbours along the gradient;
//! 6. double threshold: `map` classifies each pixel as strong (2), weak
//!    (1) or no edge (0);
//! 7. hysteresis (sequential, plain Rust): the edges are the strong pixels
//!    and the weak pixels 8-connected to them through weak pixels.
//!
//! Each phase is converted once with `accelerate::compile` and run on the
//! previous phase's result, so that it can be timed and checked against
//! plain Rust on its own; phases 1-6 are also converted as one program
//! (what a fusing backend would run), whose result must equal the
//! phase-by-phase one. The input is a synthetic image made in code: a
//! shaded background, a bar that fades into it (its edges go from strong
//! through weak to none, so hysteresis has work to do), a disc, a
//! rectangle and a triangle, with a little noise.

mod common;

use accelerate::prelude::*;
use accelerate_programs::rng::{Rng, SEED_A};
use std::f32::consts::FRAC_1_PI;
use std::process::exit;
use std::time::Instant;

/// Gradient magnitudes at least this are edges; at least `LOW`, weak edges.
const HIGH: f32 = 0.3;
const LOW: f32 = 0.1;

type Image<E> = Acc<Matrix<E>>;
type P3 = [[Exp<f32>; 3]; 3];

// ---------------------------------------------------------------------------
// The Accelerate programs, one per phase

/// Phase 1: the luminance in [0, 1] of `0xRRGGBB` pixels.
fn greyscale(img: Image<u32>) -> Image<f32> {
    img.map(|px| {
        let r = ((px >> 16u32) & 0xffu32).cast::<f32>();
        let g = ((px >> 8u32) & 0xffu32).cast::<f32>();
        let b = (px & 0xffu32).cast::<f32>();
        (r * 0.3f32 + g * 0.59f32 + b * 0.11f32) / 255.0f32
    })
}

/// Phase 2: the separable 5-point Gaussian, along the rows then along the
/// columns.
fn blur(grey: Image<f32>) -> Image<f32> {
    let along_rows = grey.stencil(
        |p: [[Exp<f32>; 5]; 1]| {
            let p = &p[0];
            (&p[0] + 4.0f32 * &p[1] + 6.0f32 * &p[2] + 4.0f32 * &p[3] + &p[4]) / 16.0f32
        },
        Boundary::clamp(),
    );
    along_rows.stencil(
        |p: [[Exp<f32>; 1]; 5]| {
            (&p[0][0] + 4.0f32 * &p[1][0] + 6.0f32 * &p[2][0] + 4.0f32 * &p[3][0] + &p[4][0]) / 16.0f32
        },
        Boundary::clamp(),
    )
}

/// Phase 3: the Sobel gradient `(gx, gy)`: `gx` grows to the right
/// (columns), `gy` downwards (rows).
fn sobel(img: Image<f32>) -> Image<(f32, f32)> {
    img.stencil(
        |p: P3| {
            let gx = (&p[0][2] + 2.0f32 * &p[1][2] + &p[2][2]) - (&p[0][0] + 2.0f32 * &p[1][0] + &p[2][0]);
            let gy = (&p[2][0] + 2.0f32 * &p[2][1] + &p[2][2]) - (&p[0][0] + 2.0f32 * &p[0][1] + &p[0][2]);
            lift((gx, gy))
        },
        Boundary::clamp(),
    )
}

/// Phase 4: the magnitude, and the orientation: the angle `atan2(gy, gx)`
/// in units of 45° rounded to the nearest integer, modulo 4 (a gradient
/// and its opposite are the same line).
fn magnitude_orientation(grad: Image<(f32, f32)>) -> Acc<(Matrix<f32>, Matrix<i32>)> {
    let mag = grad.map(|g| {
        let (gx, gy) = g.unlift();
        (&gx * &gx + &gy * &gy).sqrt()
    });
    let orient = grad.map(|g| {
        let (gx, gy) = g.unlift();
        (gy.atan2(gx) * (4.0f32 * FRAC_1_PI)).round().cast::<i32>().mod_floor(4i32)
    });
    lift_acc((mag, orient))
}

/// Phase 5: non-maximum suppression. Outside the image the magnitude is 0.
fn suppress(mag: Image<f32>, orient: Image<i32>) -> Image<f32> {
    mag.stencil2(Boundary::constant(0.0f32), orient, Boundary::clamp(), |m: P3, o: [[Exp<i32>; 1]; 1]| {
        let o = &o[0][0];
        // the two neighbours along the gradient
        let a = cond(o.eq(0i32), &m[1][0], cond(o.eq(1i32), &m[0][0], cond(o.eq(2i32), &m[0][1], &m[2][0])));
        let b = cond(o.eq(0i32), &m[1][2], cond(o.eq(1i32), &m[2][2], cond(o.eq(2i32), &m[2][1], &m[0][2])));
        let c = &m[1][1];
        (c.ge(a) & c.ge(b)).select(c, 0.0f32)
    })
}

/// Phase 6: 2 for a strong edge, 1 for a weak one, 0 for none.
fn classify(nms: Image<f32>) -> Image<u8> {
    nms.map(|m| cond(m.ge(HIGH), constant(2u8), cond(m.ge(LOW), constant(1u8), constant(0u8))))
}

/// Phases 1-6 as one program.
fn pipeline(img: Image<u32>) -> Image<u8> {
    let (mag, orient) = magnitude_orientation(sobel(blur(greyscale(img)))).unlift();
    classify(suppress(mag, orient))
}

/// Phase 7, sequential: the strong pixels and the weak ones 8-connected to
/// them through weak pixels.
fn hysteresis(classes: &[u8], w: usize, h: usize) -> Vec<bool> {
    let mut edge = vec![false; w * h];
    let mut stack: Vec<usize> = (0..w * h).filter(|&k| classes[k] == 2).collect();
    stack.iter().for_each(|&k| edge[k] = true);
    while let Some(k) = stack.pop() {
        let (i, j) = ((k / w) as i64, (k % w) as i64);
        for (di, dj) in [(-1, -1), (-1, 0), (-1, 1), (0, -1), (0, 1), (1, -1), (1, 0), (1, 1)] {
            let (r, c) = (i + di, j + dj);
            if r < 0 || c < 0 || r >= h as i64 || c >= w as i64 {
                continue;
            }
            let n = r as usize * w + c as usize;
            if classes[n] == 1 && !edge[n] {
                edge[n] = true;
                stack.push(n);
            }
        }
    }
    edge
}

// ---------------------------------------------------------------------------
// The plain-Rust reference: the same f32 operations in the same order

#[derive(Clone)]
struct Grid<T> {
    w: usize,
    h: usize,
    data: Vec<T>,
}

impl<T: Copy> Grid<T> {
    /// The element at `(i + di, j + dj)`, clamped into the grid.
    fn clamp(&self, i: usize, j: usize, di: i64, dj: i64) -> T {
        let r = (i as i64 + di).clamp(0, self.h as i64 - 1) as usize;
        let c = (j as i64 + dj).clamp(0, self.w as i64 - 1) as usize;
        self.data[r * self.w + c]
    }

    fn map<U>(&self, mut f: impl FnMut(usize, usize, T) -> U) -> Grid<U> {
        let data = self.data.iter().enumerate().map(|(k, &x)| f(k / self.w, k % self.w, x)).collect();
        Grid { w: self.w, h: self.h, data }
    }
}

struct Phases {
    grey: Grid<f32>,
    blurred: Grid<f32>,
    grad: Grid<(f32, f32)>,
    mag: Grid<f32>,
    orient: Grid<i32>,
    nms: Grid<f32>,
    classes: Grid<u8>,
}

fn phases_ref(img: &Grid<u32>) -> Phases {
    let grey = img.map(|_, _, px| {
        let r = ((px >> 16) & 0xff) as f32;
        let g = ((px >> 8) & 0xff) as f32;
        let b = (px & 0xff) as f32;
        (r * 0.3f32 + g * 0.59f32 + b * 0.11f32) / 255.0f32
    });
    let along_rows = grey.map(|i, j, _| {
        let p = |d| grey.clamp(i, j, 0, d);
        (p(-2) + 4.0f32 * p(-1) + 6.0f32 * p(0) + 4.0f32 * p(1) + p(2)) / 16.0f32
    });
    let blurred = along_rows.map(|i, j, _| {
        let p = |d| along_rows.clamp(i, j, d, 0);
        (p(-2) + 4.0f32 * p(-1) + 6.0f32 * p(0) + 4.0f32 * p(1) + p(2)) / 16.0f32
    });
    let grad = blurred.map(|i, j, _| {
        let p = |r: usize, c: usize| blurred.clamp(i, j, r as i64 - 1, c as i64 - 1);
        let gx = (p(0, 2) + 2.0f32 * p(1, 2) + p(2, 2)) - (p(0, 0) + 2.0f32 * p(1, 0) + p(2, 0));
        let gy = (p(2, 0) + 2.0f32 * p(2, 1) + p(2, 2)) - (p(0, 0) + 2.0f32 * p(0, 1) + p(0, 2));
        (gx, gy)
    });
    let mag = grad.map(|_, _, (gx, gy)| (gx * gx + gy * gy).sqrt());
    let orient =
        grad.map(|_, _, (gx, gy)| ((gy.atan2(gx) * (4.0f32 * FRAC_1_PI)).round() as i32).rem_euclid(4));
    let nms = mag.map(|i, j, c| {
        // outside the image the magnitude is 0
        let m = |r: usize, col: usize| {
            let (y, x) = (i as i64 + r as i64 - 1, j as i64 + col as i64 - 1);
            if y < 0 || x < 0 || y >= mag.h as i64 || x >= mag.w as i64 {
                0.0
            } else {
                mag.data[y as usize * mag.w + x as usize]
            }
        };
        let (a, b) = match orient.data[i * mag.w + j] {
            0 => (m(1, 0), m(1, 2)),
            1 => (m(0, 0), m(2, 2)),
            2 => (m(0, 1), m(2, 1)),
            _ => (m(2, 0), m(0, 2)),
        };
        if c >= a && c >= b {
            c
        } else {
            0.0
        }
    });
    let classes = nms.map(|_, _, m| {
        if m >= HIGH {
            2
        } else if m >= LOW {
            1
        } else {
            0
        }
    });
    Phases { grey, blurred, grad, mag, orient, nms, classes }
}

// ---------------------------------------------------------------------------
// Input, arguments, output, checking

/// A test picture: a shaded background, a bar fading into it, a disc, a
/// rectangle and a triangle, with a little pseudo-random noise, as
/// `0xRRGGBB` pixels.
fn synthetic_image(w: usize, h: usize) -> Grid<u32> {
    let mut rng = Rng::new(SEED_A);
    let mut noise = move || (rng.next_u64() >> 60) as f32 - 7.5; // in [-7.5, 7.5]
    let (wf, hf) = (w as f32, h as f32);
    let data = (0..w * h)
        .map(|k| {
            let (y, x) = ((k / w) as f32 / hf, (k % w) as f32 / wf);
            let mut rgb = [40.0 + 60.0 * x, 50.0 + 40.0 * y, 90.0 + 50.0 * (1.0 - x)];
            if (0.1..0.9).contains(&x) && (0.05..0.12).contains(&y) {
                // a bar that fades out to the right: its edges go from
                // strong through weak to none
                let fade = 60.0 * (1.0 - (x - 0.1) / 0.8);
                rgb = rgb.map(|c| c + fade);
            }
            if (x - 0.3) * (x - 0.3) + (y - 0.35) * (y - 0.35) < 0.04 {
                rgb = [230.0, 140.0, 30.0];
            }
            if (0.55..0.9).contains(&x) && (0.2..0.5).contains(&y) {
                rgb = [40.0, 200.0, 80.0];
            }
            if y > 0.6 && y < 0.92 && (x - 0.5).abs() < (y - 0.6) * 0.9 {
                rgb = [200.0, 200.0, 220.0];
            }
            let n = noise();
            let [r, g, b] = rgb.map(|c| (c + n).round().clamp(0.0, 255.0) as u32);
            (r << 16) | (g << 8) | b
        })
        .collect();
    Grid { w, h, data }
}

fn write_png(path: &str, w: usize, h: usize, edges: &[bool]) -> Result<(), Box<dyn std::error::Error>> {
    let pixels: Vec<u8> = edges.iter().map(|&e| if e { 255 } else { 0 }).collect();
    common::write_png(path, w, h, png::ColorType::Grayscale, &pixels)
}

struct Args {
    width: usize,
    height: usize,
    out: Option<String>,
    check: bool,
}

fn usage() -> ! {
    eprintln!("usage: canny [--check] [--size WIDTHxHEIGHT] [--out PATH]");
    exit(2)
}

fn parse_args() -> Args {
    let mut args = Args { width: 384, height: 384, out: None, check: false };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => args.check = true,
            "--size" => {
                let s = it.next().unwrap_or_else(|| usage());
                let (w, h) = s.split_once('x').unwrap_or_else(|| usage());
                args.width = w.parse().unwrap_or_else(|_| usage());
                args.height = h.parse().unwrap_or_else(|_| usage());
                if args.width < 5 || args.height < 5 {
                    eprintln!("canny: the image must be at least 5x5 (the blur's size)");
                    usage()
                }
            }
            "--out" | "-o" => args.out = Some(it.next().unwrap_or_else(|| usage())),
            "--help" | "-h" => usage(),
            _ => {
                eprintln!("canny: unknown argument {a:?}");
                usage()
            }
        }
    }
    args
}

/// Compares one phase bit for bit; prints the first differences.
fn compare<T: Copy + std::fmt::Debug>(
    what: &str,
    got: &[T],
    want: &Grid<T>,
    same: impl Fn(T, T) -> bool,
) -> usize {
    let mut bad = got.len().abs_diff(want.data.len());
    for (k, (&g, &w)) in got.iter().zip(&want.data).enumerate() {
        if !same(g, w) {
            if bad < 5 {
                let (i, j) = (k / want.w, k % want.w);
                eprintln!("check {what}: MISMATCH at (row {i}, col {j}): got {g:?}, plain Rust gives {w:?}");
            }
            bad += 1;
        }
    }
    if bad == 0 {
        println!("check {what}: bit-identical to plain Rust");
    }
    bad
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { width: w, height: h, out, check } = parse_args();
    let input = synthetic_image(w, h);
    let img = Matrix::from_vec(dim2(h, w), input.data.clone())?;

    let t = Instant::now();
    let p_grey = accelerate::compile(greyscale)?;
    let p_blur = accelerate::compile(blur)?;
    let p_sobel = accelerate::compile(sobel)?;
    let p_magor = accelerate::compile(magnitude_orientation)?;
    let p_nms = accelerate::compile(suppress)?;
    let p_class = accelerate::compile(classify)?;
    let p_all = accelerate::compile(pipeline)?;
    let t_compile = t.elapsed();

    println!("canny: {w}x{h} image");
    println!("  accelerate::compile (7 programs)   {:>9.2} ms", ms(t_compile));
    let timed = |name: &str, t: Instant| {
        let d = t.elapsed();
        println!("  {name:<34} {:>9.2} ms", ms(d));
        d
    };
    let t = Instant::now();
    let grey = p_grey.run(&img)?;
    let mut total = timed("1. greyscale (map)", t);
    let t = Instant::now();
    let blurred = p_blur.run(&grey)?;
    total += timed("2. blur (stencil 1x5, 5x1)", t);
    let t = Instant::now();
    let grad = p_sobel.run(&blurred)?;
    total += timed("3. Sobel (stencil 3x3)", t);
    let t = Instant::now();
    let (mag, orient) = p_magor.run(&grad)?;
    total += timed("4. magnitude, orientation (map)", t);
    let t = Instant::now();
    let nms = p_nms.run((&mag, &orient))?;
    total += timed("5. non-maximum suppr. (stencil2)", t);
    let t = Instant::now();
    let classes = p_class.run(&nms)?.to_vec();
    total += timed("6. double threshold (map)", t);
    println!("  {:<34} {:>9.2} ms", "phases 1-6", ms(total));
    let t = Instant::now();
    let edges = hysteresis(&classes, w, h);
    timed("7. hysteresis (plain Rust)", t);
    let t = Instant::now();
    let classes_all = p_all.run(&img)?.to_vec();
    timed("phases 1-6 as one program", t);

    let strong = classes.iter().filter(|&&c| c == 2).count();
    let weak = classes.iter().filter(|&&c| c == 1).count();
    let n_edges = edges.iter().filter(|&&e| e).count();
    println!("  {strong} strong and {weak} weak pixels; {n_edges} edge pixels after hysteresis");

    if let Some(path) = &out {
        write_png(path, w, h, &edges)?;
        println!("wrote {path}");
    }

    if check {
        // Every phase is made of IEEE f32 operations evaluated as written
        // (sqrt correctly rounded; atan2 and round are Rust's std in both),
        // so the same operations in the same order give the same bits.
        let t = Instant::now();
        let want = phases_ref(&input);
        let want_edges = hysteresis(&want.classes.data, w, h);
        println!("  {:<34} {:>9.2} ms", "plain Rust, phases 1-7", ms(t.elapsed()));
        let f = |a: f32, b: f32| a.to_bits() == b.to_bits();
        let mut bad = compare("1. greyscale", &grey.to_vec(), &want.grey, f);
        bad += compare("2. blur", &blurred.to_vec(), &want.blurred, f);
        bad += compare("3. Sobel", &grad.to_vec(), &want.grad, |a, b| f(a.0, b.0) && f(a.1, b.1));
        bad += compare("4. magnitude", &mag.to_vec(), &want.mag, f);
        bad += compare("4. orientation", &orient.to_vec(), &want.orient, |a, b| a == b);
        bad += compare("5. non-maximum suppression", &nms.to_vec(), &want.nms, f);
        bad += compare("6. classes", &classes, &want.classes, |a, b| a == b);
        bad += compare("6. classes, one program", &classes_all, &want.classes, |a, b| a == b);
        let edge_grid = Grid { w, h, data: want_edges };
        bad += compare("7. edges after hysteresis", &edges, &edge_grid, |a, b| a == b);
        if bad > 0 {
            eprintln!("check: {bad} pixels differ from the plain-Rust reference");
            exit(1);
        }
    }
    Ok(())
}

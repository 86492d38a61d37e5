//! The Mandelbrot set (ICFP'13 §5.5): for each pixel, a point c of the
//! complex plane, iterate z <- z² + c from z = 0 until |z| > 2 or the
//! iteration limit is reached; the number of iterations colours the pixel.
//!
//! ```sh
//! cargo run --release --example mandelbrot                       # writes mandelbrot.png
//! cargo run --release --example mandelbrot -- --check            # compare with plain Rust
//! cargo run --release --example mandelbrot -- --size 1024x768 --limit 1000 --out big.png
//! ```
//!
//! The program is `accelerate_programs::mandelbrot`: each pixel runs a
//! scalar `while_loop` on the tuple state (zr, zi, i), so a pixel stops as
//! soon as it escapes; here the iteration limit is a constant of the
//! program. `--check` compares with the same iteration in plain Rust.

mod common;

use accelerate_programs::mandelbrot::{mandelbrot, mandelbrot_ref, View};
use std::process::exit;
use std::time::Instant;

/// A colour for an iteration count: black inside the set, otherwise a
/// gradient from dark blue through white to orange, on a logarithmic scale
/// so that the many pixels that escape early are spread out.
fn colour(i: i32, limit: i32) -> [u8; 3] {
    if i >= limit {
        return [0, 0, 0];
    }
    const STOPS: [[f32; 3]; 5] = [
        [0.0, 7.0, 100.0],
        [32.0, 107.0, 203.0],
        [237.0, 255.0, 255.0],
        [255.0, 170.0, 0.0],
        [0.0, 2.0, 0.0],
    ];
    let t = ((i as f32).ln_1p() / (limit as f32).ln_1p()) * (STOPS.len() - 1) as f32;
    let k = (t as usize).min(STOPS.len() - 2);
    let f = t - k as f32;
    let (a, b) = (STOPS[k], STOPS[k + 1]);
    [0, 1, 2].map(|c| (a[c] + (b[c] - a[c]) * f).round().clamp(0.0, 255.0) as u8)
}

fn write_png(
    path: &str,
    width: usize,
    height: usize,
    counts: &[i32],
    limit: i32,
) -> Result<(), Box<dyn std::error::Error>> {
    let pixels: Vec<u8> = counts.iter().flat_map(|&i| colour(i, limit)).collect();
    common::write_png(path, width, height, png::ColorType::Rgb, &pixels)
}

struct Args {
    width: usize,
    height: usize,
    limit: i32,
    out: String,
    check: bool,
}

fn usage() -> ! {
    eprintln!("usage: mandelbrot [--check] [--size WIDTHxHEIGHT] [--limit N] [--out PATH]");
    exit(2)
}

fn parse_args() -> Args {
    let mut args = Args { width: 256, height: 192, limit: 255, out: "mandelbrot.png".into(), check: false };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => args.check = true,
            "--size" => {
                let s = it.next().unwrap_or_else(|| usage());
                let (w, h) = s.split_once('x').unwrap_or_else(|| usage());
                args.width = w.parse().unwrap_or_else(|_| usage());
                args.height = h.parse().unwrap_or_else(|_| usage());
                if args.width == 0 || args.height == 0 {
                    eprintln!("mandelbrot: the image needs at least one pixel");
                    usage()
                }
            }
            "--limit" => args.limit = it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()),
            "--out" | "-o" => args.out = it.next().unwrap_or_else(|| usage()),
            "--help" | "-h" => usage(),
            _ => {
                eprintln!("mandelbrot: unknown argument {a:?}");
                usage()
            }
        }
    }
    args
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { width, height, limit, out, check } = parse_args();
    let view = View::whole_set(width, height);

    let t = Instant::now();
    let image = accelerate::run(&mandelbrot(width, height, limit, view))?;
    let elapsed = t.elapsed();
    let counts = image.to_vec();

    let inside = counts.iter().filter(|&&i| i >= limit).count();
    let iterations: u64 = counts.iter().map(|&i| i as u64).sum();
    println!(
        "mandelbrot: {width}x{height}, limit {limit}: {:.2} ms, {iterations} iterations, {inside} pixels in the set",
        elapsed.as_secs_f64() * 1e3
    );

    write_png(&out, width, height, &counts, limit)?;
    println!("wrote {out}");

    if check {
        let t = Instant::now();
        let mut want = vec![0; width * height];
        mandelbrot_ref(width, limit, view, &mut want);
        let t_ref = t.elapsed();
        if image.dims() != [height, width] {
            eprintln!("check: MISMATCH: result has shape {:?}, expected [{height}, {width}]", image.dims());
            exit(1);
        }
        let mut bad = 0usize;
        for (k, (&got, &want)) in counts.iter().zip(&want).enumerate() {
            if got != want {
                if bad < 10 {
                    eprintln!(
                        "check: MISMATCH at pixel (row {}, col {}): {got} iterations, plain Rust gives {want}",
                        k / width,
                        k % width
                    );
                }
                bad += 1;
            }
        }
        if bad > 0 {
            eprintln!("check: {bad} of {} pixels differ from the plain-Rust reference", want.len());
            exit(1);
        }
        println!(
            "check: all {} iteration counts equal the plain-Rust reference ({:.2} ms)",
            want.len(),
            t_ref.as_secs_f64() * 1e3
        );
    }
    Ok(())
}

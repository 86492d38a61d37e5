//! The seeds' example programs written in the text language (a core of
//! Futhark, `accelerate::text`): the same computations as `dotp`,
//! `blackscholes`, `mandelbrot` and `nbody` of this crate, as a Futhark
//! programmer writes them. Each file's `-- ==` blocks are test cases (the
//! text corpus runs them); the tests compare them with the Rust forms,
//! and the benchmarks run them beside those.

/// `main xs ys`: the dot product of two `[]f32`.
pub const DOTP: &str = include_str!("../fut/dotp.fut");
/// `main price strike years`: the call and put prices of `[]f32` options.
pub const BLACKSCHOLES: &str = include_str!("../fut/blackscholes.fut");
/// `main width height limit x0 y0 step`: escape times, `[height][width]i32`.
pub const MANDELBROT: &str = include_str!("../fut/mandelbrot.fut");
/// `main px py pz vx vy vz mass`: one step of the bodies, their new
/// positions and velocities.
pub const NBODY: &str = include_str!("../fut/nbody.fut");

/// The programs by name, for the corpus.
pub const ALL: [(&str, &str); 4] = [
    ("dotp.fut", DOTP),
    ("blackscholes.fut", BLACKSCHOLES),
    ("mandelbrot.fut", MANDELBROT),
    ("nbody.fut", NBODY),
];

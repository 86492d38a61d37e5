//! An exported library (`accelerate_export::export!`): the programs a C
//! or Python code base calls, built by Cargo as `libaccdemo.so` with the
//! header `accdemo.h` and the manifest `accdemo.json` that
//! `cargo run -p accelerate-export-demo --bin accdemo-header -- DIR` writes.
//! Its tests (`tests/c_api.rs`, `tests/python.rs`) build a C program
//! against them, and drive them from Python with ctypes and NumPy, and
//! compare every result with the same programs run from Rust.

use accelerate::prelude::*;
use accelerate_programs::blackscholes::black_scholes;
use accelerate_programs::dotp::dotp as dotp_program;

/// The Black-Scholes prices of options given as three vectors (the
/// program of `accelerate_programs::blackscholes`, over their zip).
pub fn black_scholes_split(
    price: &Acc<Vector<f32>>,
    strike: &Acc<Vector<f32>>,
    years: &Acc<Vector<f32>>,
) -> (Acc<Vector<f32>>, Acc<Vector<f32>>) {
    let r = black_scholes(&zip3(price, strike, years));
    (r.map(|cp| cp.fst()), r.map(|cp| cp.snd()))
}

/// Halves every element while the vector's sum exceeds `limit` (an
/// `awhile` whose trip count depends on the data).
pub fn halve_until(xs: &Acc<Vector<f32>>, limit: &Acc<Scalar<f32>>) -> Acc<Vector<f32>> {
    let limit = limit.clone();
    awhile(
        move |v: Acc<Vector<f32>>| v.sum().map(move |s| s.gt(limit.the())),
        |v| v.map(|x| x * 0.5),
        xs.clone(),
    )
}

accelerate_export::export! {
    prefix = accdemo;

    /// The dot product of two vectors (over the shorter's length).
    fn dotp(xs: Vector<f32>, ys: Vector<f32>) -> Scalar<f32> {
        dotp_program(&xs, &ys)
    }

    /// Black-Scholes call and put prices of options (price, strike, years to expiry).
    fn blackscholes(price: Vector<f32>, strike: Vector<f32>, years: Vector<f32>) -> (Vector<f32>, Vector<f32>) {
        let (c, p) = black_scholes_split(&price, &strike, &years);
        lift_acc((c, p))
    }

    /// Halves every element while the sum exceeds the limit.
    fn halve_until(xs: Vector<f32>, limit: Scalar<f32>) -> Vector<f32> {
        halve_until(&xs, &limit)
    }

    /// Element i of xs divided by element i of ds (integers: a zero divisor is an error).
    fn divide(xs: Vector<i64>, ds: Vector<i64>) -> Vector<i64> {
        xs.zip_with(&ds, |x, d| x / d)
    }
}

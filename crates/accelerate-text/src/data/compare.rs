//! `futhark test`'s comparison of an expected value with an actual one.
//!
//! Note [Futhark's float tolerance]
//! The rule is that of `futhark-data`'s `Futhark.Data.Compare`, which
//! `futhark test` calls with its default tolerance 0.002 (0.2%):
//! - the tolerance of an array is computed once, from the expected
//!   elements: the largest of 0.002 and 0.002 * v over every finite
//!   expected element v. It is `v`, not `|v|`, as in Futhark: negative
//!   elements never widen it;
//! - an actual element matches an expected one if both are NaN, if both
//!   are infinite with the same sign, or if `|actual - expected|` is at
//!   most the tolerance (so a NaN or an infinity never matches a finite
//!   number);
//! - the arithmetic is in the element type (`f32` for `f32`, `f64` for
//!   `f64`); `futhark-data` does not compare `f16`, which is done here in
//!   `f32`.
//!
//! Integers and `bool`s must be equal, and the types and shapes the same.

use super::{shape_text, write_scalar, Value};
use accelerate_base::array::Buffer;
use half::f16;

/// Futhark's tolerance for floats: 0.2% of the largest expected element,
/// and at least 0.002 (Note [Futhark's float tolerance]).
pub const TOLERANCE: f64 = 0.002;

/// `Ok` if `actual` matches `expected` as `futhark test` decides; the
/// error names the first mismatch: the type, the shape, or the first
/// differing index with both elements (and the tolerance, for floats).
pub fn values_match(expected: &Value, actual: &Value) -> Result<(), String> {
    if expected.scalar_ty() != actual.scalar_ty() {
        return Err(format!("expected a value of type {}, got {}", expected.type_name(), actual.type_name()));
    }
    if expected.shape() != actual.shape() {
        return Err(format!(
            "expected an array of shape {}, got {}",
            shape_text(expected.shape()),
            shape_text(actual.shape())
        ));
    }
    let mismatch = match (expected.buffer(), actual.buffer()) {
        (Buffer::F64(e), Buffer::F64(a)) => float_mismatch_f64(e, a),
        (Buffer::F32(e), Buffer::F32(a)) => float_mismatch_f32(e, a),
        (Buffer::F16(e), Buffer::F16(a)) => {
            let widen = |xs: &[u16]| xs.iter().map(|&b| f16::from_bits(b).to_f32()).collect::<Vec<f32>>();
            float_mismatch_f32(&widen(e), &widen(a))
        }
        (e, a) => (0..e.len()).find(|&i| e.get(i) != a.get(i)).map(|i| (i, None)),
    };
    let Some((i, tolerance)) = mismatch else { return Ok(()) };
    let (e, a) = (expected.buffer().get(i), actual.buffer().get(i));
    let place = match expected.rank() {
        0 => String::new(),
        _ => format!("at index {}: ", index_text(expected.shape(), i)),
    };
    let within = match tolerance {
        Some(t) => format!(
            " (more than the tolerance {t} apart: 0.2% of the largest expected element, at least 0.002)"
        ),
        None => String::new(),
    };
    Err(format!("{place}expected {}, got {}{within}", write_scalar(e), write_scalar(a)))
}

macro_rules! float_mismatch {
    ($name:ident, $t:ty) => {
        /// The first index where the elements differ, and the tolerance
        /// (Note [Futhark's float tolerance]).
        fn $name(expected: &[$t], actual: &[$t]) -> Option<(usize, Option<String>)> {
            let min = TOLERANCE as $t;
            let tolerance = expected.iter().filter(|v| v.is_finite()).fold(min, |t, &v| t.max(min * v));
            let matches = |e: $t, a: $t| {
                (e.is_nan() && a.is_nan())
                    || (e.is_infinite() && a.is_infinite() && e.signum() == a.signum())
                    || (a - e).abs() <= tolerance
            };
            let i = (0..expected.len()).find(|&i| !matches(expected[i], actual[i]))?;
            Some((i, Some(format!("{tolerance:?}"))))
        }
    };
}

float_mismatch!(float_mismatch_f32, f32);
float_mismatch!(float_mismatch_f64, f64);

/// A row-major position as an index of the shape: `[1, 2]`.
fn index_text(shape: &[usize], mut i: usize) -> String {
    let mut index = vec![0; shape.len()];
    for (k, &d) in shape.iter().enumerate().rev() {
        index[k] = i % d.max(1);
        i /= d.max(1);
    }
    let parts: Vec<String> = index.iter().map(|k| k.to_string()).collect();
    format!("[{}]", parts.join(", "))
}

//! Rounding-error bounds the programs' checks share: how far a sum of
//! `f32` terms computed in another order can be from the exact one.

/// The unit roundoff of `f32`.
pub const U: f64 = f32::EPSILON as f64 / 2.0;

/// Higham's `gamma_k = k u / (1 - k u)`: a sum of `k + 1` terms computed
/// in any order is within `gamma_k * sum |terms|` of the exact sum
/// ("Accuracy and Stability of Numerical Algorithms", §3.1, (3.5)).
pub fn gamma(k: usize) -> f64 {
    k as f64 * U / (1.0 - k as f64 * U)
}

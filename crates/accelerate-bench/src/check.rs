//! Comparing a variant's result with the sequential reference, with the
//! tolerance each kind of result allows (the reasons are at each
//! function; the benchmarks say which they use and why).

/// The largest difference between two sums of the same `n` terms added in
/// different orders (a parallel reduction reassociates): each is within
/// gamma_n * sum |t_i| of the exact sum, gamma_n = n*u / (1 - n*u) with
/// u = eps/2 the unit roundoff (Higham, "Accuracy and Stability of
/// Numerical Algorithms", §3.1), so they differ by at most about
/// n * eps * sum |t_i|; `n + 1` gives a little slack. Relative to
/// sum |t_i| and not to the result, which cancellation can make tiny.
pub fn reassociated_sum_tolerance(n: usize, abs_sum: f64, eps: f64) -> f64 {
    (n as f64 + 1.0) * eps * abs_sum
}

/// Compares two sequences element by element with `close(index, got,
/// want)`; the error names the first few mismatches and counts them.
pub fn elementwise<T: Copy + std::fmt::Debug>(
    got: &[T],
    want: &[T],
    close: impl Fn(usize, T, T) -> bool,
) -> Result<(), String> {
    if got.len() != want.len() {
        return Err(format!("{} results, the reference has {}", got.len(), want.len()));
    }
    let mut bad = Vec::new();
    let mut count = 0usize;
    for (i, (&g, &w)) in got.iter().zip(want).enumerate() {
        if !close(i, g, w) {
            count += 1;
            if bad.len() < 5 {
                bad.push(format!("at {i}: got {g:?}, the reference gives {w:?}"));
            }
        }
    }
    if count == 0 {
        Ok(())
    } else {
        Err(format!("{count} of {} results differ from the reference: {}", want.len(), bad.join("; ")))
    }
}

/// A single number within `tol` of the reference.
pub fn within(got: f64, want: f64, tol: f64) -> Result<(), String> {
    let diff = (got - want).abs();
    if got == want || diff <= tol {
        Ok(())
    } else {
        Err(format!("got {got}, the reference gives {want}: |difference| {diff:e} > tolerance {tol:e}"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elementwise_reports_the_first_mismatch() {
        let err = elementwise(&[1, 2, 3], &[1, 5, 3], |_, a, b| a == b).unwrap_err();
        assert!(err.contains("1 of 3") && err.contains("at 1"), "{err}");
    }

    #[test]
    fn within_accepts_the_tolerance_and_rejects_beyond() {
        assert!(within(1.0, 1.5, 0.5).is_ok());
        assert!(within(1.0, 1.6, 0.5).is_err());
    }
}

//! The hand-written C baselines (`c/`, built by `build.rs`), behind safe
//! wrappers that check the lengths the C code trusts.

mod sys {
    extern "C" {
        pub fn bench_dotp_omp(x: *const f32, y: *const f32, n: i64) -> f32;
        pub fn bench_saxpy_omp(a: f32, x: *const f32, y: *const f32, out: *mut f32, n: i64);
        pub fn bench_triad_omp(a: *mut f64, b: *const f64, c: *const f64, s: f64, n: i64);
        pub fn bench_blackscholes_omp(
            price: *const f32,
            strike: *const f32,
            years: *const f32,
            call: *mut f32,
            put: *mut f32,
            n: i64,
        );
    }
}

pub fn dotp(x: &[f32], y: &[f32]) -> f32 {
    assert_eq!(x.len(), y.len());
    // SAFETY: both slices hold `x.len()` elements, which the C code reads.
    unsafe { sys::bench_dotp_omp(x.as_ptr(), y.as_ptr(), x.len() as i64) }
}

pub fn saxpy(a: f32, x: &[f32], y: &[f32], out: &mut [f32]) {
    assert!(x.len() == y.len() && y.len() == out.len());
    // SAFETY: all three slices hold `out.len()` elements; `out` does not
    // alias the inputs (it is a `&mut`), as the C `restrict` requires.
    unsafe { sys::bench_saxpy_omp(a, x.as_ptr(), y.as_ptr(), out.as_mut_ptr(), out.len() as i64) }
}

pub fn triad(a: &mut [f64], b: &[f64], c: &[f64], s: f64) {
    assert!(a.len() == b.len() && b.len() == c.len());
    // SAFETY: as in `saxpy`.
    unsafe { sys::bench_triad_omp(a.as_mut_ptr(), b.as_ptr(), c.as_ptr(), s, a.len() as i64) }
}

pub fn blackscholes(price: &[f32], strike: &[f32], years: &[f32], call: &mut [f32], put: &mut [f32]) {
    let n = price.len();
    assert!(strike.len() == n && years.len() == n && call.len() == n && put.len() == n);
    // SAFETY: all five slices hold `n` elements; the outputs are distinct
    // `&mut`s, so nothing aliases.
    unsafe {
        sys::bench_blackscholes_omp(
            price.as_ptr(),
            strike.as_ptr(),
            years.as_ptr(),
            call.as_mut_ptr(),
            put.as_mut_ptr(),
            n as i64,
        )
    }
}

//! Fast-math mode (`Config::with_fast_math`, `ACCELERATE_FLAGS=fast-math`;
//! docs/semantics.md, "Fast-math mode"; Note [Fast math] in
//! `backend/cpu/compile.rs`): the CPU backend relaxes the float rules, the
//! interpreter keeps them, and a result stays within the error the
//! relaxed rules allow of the strict one.

use accelerate::prelude::*;
use accelerate::{run_with, Backend};

fn cpu_available() -> bool {
    match accelerate::backend::cpu::unavailable() {
        None => true,
        Some(why) => {
            eprintln!("the CPU backend is skipped: {why}");
            false
        }
    }
}

fn strict(backend: Backend) -> Config {
    Config::default().with_backend(backend)
}

fn fast(backend: Backend) -> Config {
    Config::default().with_backend(backend).with_fast_math(true)
}

/// `1 / sqrt(x)` over `[1, 10^6)`, spread over many binades.
fn inverse_roots() -> (Vector<f32>, Acc<Vector<f32>>) {
    let xs: Vec<f32> = (0..20_000).map(|i| 1.0 + (i as f32 * 7.31).powf(1.4)).collect();
    let v = Vector::from_elems(xs);
    let acc = use_array(v.clone()).map(|x| 1.0f32 / x.sqrt());
    (v, acc)
}

#[test]
fn approximate_reciprocal_square_roots_stay_within_their_error() {
    if !cpu_available() {
        return;
    }
    let (xs, acc) = inverse_roots();
    let want = run_with(&acc, &strict(Backend::Cpu)).unwrap().to_vec();
    let got = run_with(&acc, &fast(Backend::Cpu)).unwrap().to_vec();
    // rsqrtps is within e = 1.5 * 2^-12 relative; one Newton-Raphson step
    // leaves 1.5 * e^2 (3.375 * 2^-24) and adds the rounding of its four
    // operations (2 * 2^-24 at most), against the correctly rounded strict
    // result, whose own error is 2^-24 at most: under 6.5 * 2^-24, about
    // 3.9e-7. (The approximation differs between vendors: an Intel Xeon
    // gives 2.39e-7 where an AMD EPYC gave under 2^-22.)
    // (GCC approximates only where it may also assume finite values,
    // which the mode does, and with 16-lane vectors only with AVX512ER,
    // Note [Fast math] in the CPU backend's `compile.rs`; the bound holds
    // for whatever the mode allows.)
    let bound = 6.5 * 2.0f32.powi(-24);
    for ((x, g), w) in xs.to_vec().iter().zip(&got).zip(&want) {
        let rel = ((g - w) / w).abs();
        assert!(rel <= bound, "1/sqrt({x}): fast {g}, strict {w}, relative error {rel:e} over {bound:e}");
    }
    // the mode assumes finite values, and a program with square roots has
    // 8-lane vectors unless the processor has AVX512ER (whose 28-bit
    // approximation may round as the strict root does), so the roots are
    // approximated, and some differ from the correctly rounded ones
    #[cfg(target_arch = "x86_64")]
    if !std::arch::is_x86_feature_detected!("avx512er") {
        let differ = got.iter().zip(&want).filter(|(g, w)| g.to_bits() != w.to_bits()).count();
        assert!(differ > 0, "every fast-math root equals the strict one: the approximation was not used");
    }
}

/// The mode is in effect: where the processor has fused multiply-adds,
/// `x * y + z` is contracted into one (one rounding), which differs from
/// the strict product-then-sum somewhere among 20 000 arguments, and is
/// never further from the exact value than half an ulp of the result
/// plus the strict form's own error.
#[test]
fn multiply_adds_are_fused_in_fast_math_mode() {
    if !cpu_available() {
        return;
    }
    #[cfg(target_arch = "x86_64")]
    if !std::arch::is_x86_feature_detected!("fma") {
        eprintln!("skipped: no fused multiply-add on this processor");
        return;
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        eprintln!("skipped: contraction is checked on x86-64 only");
        return;
    }
    let xs: Vec<f32> = (0..20_000).map(|i| 1.0 + (i as f32 * 0.377).sin()).collect();
    let ys: Vec<f32> = (0..20_000).map(|i| 0.5 + (i as f32 * 1.31).cos()).collect();
    let acc = || {
        let ys = use_array(Vector::from_elems(ys.clone()));
        use_array(Vector::from_elems(xs.clone())).zip_with(&ys, |x, y| x * y - 0.75f32)
    };
    let want = run_with(&acc(), &strict(Backend::Cpu)).unwrap().to_vec();
    let got = run_with(&acc(), &fast(Backend::Cpu)).unwrap().to_vec();
    let mut differ = 0;
    for (((x, y), g), w) in xs.iter().zip(&ys).zip(&got).zip(&want) {
        let exact = *x as f64 * *y as f64 - 0.75;
        // the fused result is the exact value rounded once
        assert_eq!(*g, exact as f32, "{x} * {y} - 0.75: fast {g}, exact {exact}");
        differ += usize::from(g.to_bits() != w.to_bits());
    }
    assert!(differ > 0, "every fast-math result equals the strict one: the flags were not applied");
}

#[test]
fn reassociated_sums_stay_within_the_summation_bound() {
    if !cpu_available() {
        return;
    }
    let n = 100_000usize;
    let xs: Vec<f32> = (0..n).map(|i| ((i * 7919) % 1000) as f32 / 997.0 + 0.001).collect();
    let acc = use_array(Vector::from_elems(xs.clone())).map(|x| x * 1.5f32 + 0.25f32).sum();
    let got = run_with(&acc, &fast(Backend::Cpu)).unwrap().value() as f64;
    let exact: f64 = xs.iter().map(|&x| (x * 1.5 + 0.25) as f64).sum();
    // any order of summing n non-negative terms errs by at most
    // (n - 1) * eps * (their sum), eps = 2^-24 (Higham, Accuracy and
    // Stability of Numerical Algorithms, 2nd ed., §4.2); a fused
    // multiply-add in each term only removes a rounding
    let bound = (n - 1) as f64 * 2f64.powi(-24) * exact;
    assert!((got - exact).abs() <= bound, "fast sum {got}, exact {exact}, bound {bound}");
}

#[test]
fn a_nan_cast_to_an_integer_is_still_zero_and_defined() {
    // the contract promises no NaN, but a NaN the program makes anyway must
    // not reach an undefined float-to-integer conversion in the C
    if !cpu_available() {
        return;
    }
    let xs = Vector::from_elems(vec![f32::NAN, -f32::NAN, 3.7, -2.5e10, 2.5e10]);
    let acc = use_array(xs).map(|x| x.cast::<i32>());
    let got = run_with(&acc, &fast(Backend::Cpu)).unwrap().to_vec();
    assert_eq!(got, vec![0, 0, 3, i32::MIN, i32::MAX]);
}

/// What the generator proves by following float arithmetic (Note [Value
/// ranges] in `backend/c/exp/ranges.rs`) is not relied on in fast-math
/// mode, where the C compiler may regroup that arithmetic: `(x + 1e8) -
/// 1e8` is 0 for every `x` clamped to [-3, 3] under the strict rules
/// (each sum rounds to 1e8), so a table of one element may be read there
/// without a check; regrouped, it is `x`, and a read at -3 must still be
/// checked.
#[test]
fn ranges_proved_through_float_arithmetic_are_not_trusted_in_fast_math_mode() {
    if !cpu_available() {
        return;
    }
    let xs = Vector::from_elems(vec![-3.0f32, -2.5, -1.0, -0.0, 0.0, 1.0, 2.9, 3.0]);
    let f = |t: Acc<Vector<f32>>, xs: Acc<Vector<f32>>| {
        xs.map(move |x| t.index(index1(((x.max(-3.0f32).min(3.0f32) + 1e8f32) - 1e8f32).cast::<i64>())))
    };
    let table = Vector::from_elems(vec![42.0f32]);
    let strict_p = accelerate::compile_with(f, strict(Backend::Cpu)).unwrap();
    let source = strict_p.c_source().unwrap().to_string();
    assert!(source.contains("acc_bad |= !((ACC_FLOAT_RANGES && 0LL < a"), "the range is used:\n{source}");
    assert_eq!(strict_p.run((&table, &xs)).unwrap().to_vec(), vec![42.0; 8]);
    // regrouped or not, never a read outside the table
    match accelerate::compile_with(f, fast(Backend::Cpu)).unwrap().run((&table, &xs)) {
        Ok(v) => assert_eq!(v.to_vec(), vec![42.0; 8]),
        Err(e) => assert!(e.to_string().contains("out of bounds for an array of shape [1]"), "{e}"),
    }
}

#[test]
fn the_interpreter_keeps_the_strict_rules_in_fast_math_mode() {
    let (_, acc) = inverse_roots();
    let want = run_with(&acc, &strict(Backend::Interpreter)).unwrap().to_vec();
    let got = run_with(&acc, &fast(Backend::Interpreter)).unwrap().to_vec();
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&got), bits(&want));
}

#[test]
fn fast_math_is_a_flag_of_the_environment() {
    // parsed in a child, so that this process's environment is untouched
    if let Ok(expect) = std::env::var("ACCELERATE_FAST_MATH_CHILD") {
        let c = Config::from_env().unwrap();
        assert_eq!(c.cpu.fast_math.to_string(), expect);
        return;
    }
    for (flags, expect) in [("fast-math", "true"), ("no-cse", "false"), ("no-fusion,fast-math", "true")] {
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "fast_math_is_a_flag_of_the_environment", "--nocapture"])
            .env("ACCELERATE_FLAGS", flags)
            .env("ACCELERATE_FAST_MATH_CHILD", expect)
            .output()
            .unwrap();
        assert!(out.status.success(), "ACCELERATE_FLAGS={flags}: {}", String::from_utf8_lossy(&out.stderr));
    }
    assert!(!Config::default().cpu.fast_math, "off by default");
}

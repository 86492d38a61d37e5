//! Hand-written Rust kernels compiled for this machine's vector unit.
//!
//! Cargo builds for the baseline x86-64 (SSE2) unless told
//! `-C target-cpu=native`, while the C baselines and the Accelerate
//! backend's kernels are compiled with `-march=native`. Comparing them
//! with SSE2 Rust would be a strawman, so the hot loops of the
//! hand-written Rust versions are compiled three times, as a performance
//! engineer shipping one binary would (function multiversioning): for
//! AVX-512 (x86-64-v4), for AVX2 with FMA (x86-64-v3) and for the
//! baseline, and each call takes the best this processor runs (a feature
//! test made once). The Rust code itself still never fuses `a * b + c`
//! into one rounding: only the vector width changes.

use std::sync::OnceLock;

/// The instruction-set levels the kernels are compiled for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Level {
    V4,
    V3,
    Baseline,
}

/// The best level this processor runs (tested once).
pub fn level() -> Level {
    static LEVEL: OnceLock<Level> = OnceLock::new();
    *LEVEL.get_or_init(detect)
}

#[cfg(target_arch = "x86_64")]
fn detect() -> Level {
    use std::arch::is_x86_feature_detected as has;
    let v3 = has!("avx2") && has!("fma") && has!("bmi1") && has!("bmi2") && has!("lzcnt") && has!("f16c");
    let v4 = v3 && has!("avx512f") && has!("avx512vl") && has!("avx512bw") && has!("avx512dq");
    if v4 {
        Level::V4
    } else if v3 {
        Level::V3
    } else {
        Level::Baseline
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn detect() -> Level {
    Level::Baseline
}

/// Defines a function whose body is compiled for each [`Level`]; a call
/// runs the version for [`level()`]. The body must not be generic.
macro_rules! native_fn {
    ($(#[$meta:meta])* $vis:vis fn $name:ident($($arg:ident : $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block) => {
        $(#[$meta])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body

            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512vl,avx512bw,avx512dq,avx2,fma,bmi1,bmi2,lzcnt,f16c")]
                fn v4($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                #[target_feature(enable = "avx2,fma,bmi1,bmi2,lzcnt,f16c")]
                fn v3($($arg: $ty),*) $(-> $ret)? {
                    body($($arg),*)
                }
                match $crate::native::level() {
                    // SAFETY: `level()` found these features on this processor.
                    $crate::native::Level::V4 => return unsafe { v4($($arg),*) },
                    // SAFETY: as above.
                    $crate::native::Level::V3 => return unsafe { v3($($arg),*) },
                    $crate::native::Level::Baseline => {}
                }
            }
            body($($arg),*)
        }
    };
}

pub(crate) use native_fn;

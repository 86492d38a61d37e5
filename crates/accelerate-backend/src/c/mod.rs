//! What the CPU backend (C) and the CUDA backend (CUDA C) share: all but
//! how a kernel covers its iteration space (a C function over a range
//! `start .. end`, or a grid of threads), which each backend's
//! `KernelGen` and skeleton files write.
//!
//! - `exp`: scalar code generation. Every scalar IR construct becomes C
//!   statements with the semantics of `docs/semantics.md` and no
//!   undefined behaviour (the helpers of `prelude_common.h`, which the C
//!   prelude `prelude.h` and the CUDA prelude share, say how each rule is
//!   kept).
//! - `codegen`: a plan's kernels, each written by the backend's writer
//!   for its skeleton (a `codegen::Target`).
//! - `build`: a host compiler building a shared object through the
//!   kernel cache (the CPU backend's C, the CUDA emulator's C++).
//! - `kernel`: what kernels share whatever the target (their description
//!   for the host, the readers of their arguments, statement helpers).
//! - `stencil`: a stencil's pattern points and boundaries.
//!
//! Values are carried as their primitive leaves: a tuple-typed expression
//! is a list of C variables, one per leaf, so that no C struct types are
//! needed and every leaf can live in a register. Array reads are checked
//! and raise an error in the current error context (Note [Error contexts
//! in generated code]) instead of reading outside a buffer.

pub(crate) mod access;
pub(crate) mod build;
pub(crate) mod codegen;
pub(crate) mod cost;
mod exp;
pub(crate) mod host;
pub(crate) mod kernel;
pub(crate) mod stencil;

pub(crate) use exp::{
    linear_of, product, project, within_extent, ArraySlot, Body, Bound, CVal, ExpGen, Hoisted,
};

use accelerate_base::array::{ScalarTy, ScalarVal};
use std::sync::OnceLock;

/// The C prelude every generated file starts with.
pub(crate) fn prelude() -> &'static str {
    static TEXT: OnceLock<String> = OnceLock::new();
    TEXT.get_or_init(|| with_common_prelude(include_str!("prelude.h")))
}

/// A target's prelude with its line `#include "prelude_common.h"`
/// replaced by that file's text: the helpers both targets share, written
/// once, with the error codes of the one table the host reads them by
/// (`host::ERROR_CODES`). The text is pasted, not included, because neither the host C
/// compiler nor NVRTC is given a path to the file.
pub(crate) fn with_common_prelude(target: &str) -> String {
    const LINE: &str = "#include \"prelude_common.h\"\n";
    const CODES: &str = "/* (the codes: written here from backend::c::host::ERROR_CODES) */\n";
    debug_assert!(target.contains(LINE), "a prelude without the shared helpers");
    let common = include_str!("prelude_common.h").replacen(CODES, &host::error_codes_enum(), 1);
    target.replacen(LINE, &common, 1)
}

/// The C type that holds one leaf of this type.
pub(crate) fn c_type(t: ScalarTy) -> &'static str {
    match t {
        ScalarTy::Bool => "acc_bool",
        ScalarTy::I8 => "int8_t",
        ScalarTy::I16 => "int16_t",
        ScalarTy::I32 => "int32_t",
        ScalarTy::I64 => "int64_t",
        ScalarTy::U8 => "uint8_t",
        ScalarTy::U16 => "uint16_t",
        ScalarTy::U32 => "uint32_t",
        ScalarTy::U64 => "uint64_t",
        ScalarTy::F16 => "acc_f16",
        ScalarTy::F32 => "float",
        ScalarTy::F64 => "double",
    }
}

/// A C expression of this constant, exact to the bit (floats are written
/// as their bit patterns, so NaN payloads and signed zeros survive).
pub(crate) fn literal(v: ScalarVal) -> String {
    match v {
        ScalarVal::Bool(b) => format!("((acc_bool){})", u8::from(b)),
        ScalarVal::I8(x) => format!("((int8_t){x})"),
        ScalarVal::I16(x) => format!("((int16_t){x})"),
        ScalarVal::I32(x) if x == i32::MIN => "INT32_MIN".into(),
        ScalarVal::I32(x) => format!("((int32_t){x})"),
        ScalarVal::I64(x) if x == i64::MIN => "INT64_MIN".into(),
        ScalarVal::I64(x) => format!("((int64_t){x}LL)"),
        ScalarVal::U8(x) => format!("((uint8_t){x}u)"),
        ScalarVal::U16(x) => format!("((uint16_t){x}u)"),
        ScalarVal::U32(x) => format!("((uint32_t){x}u)"),
        ScalarVal::U64(x) => format!("((uint64_t){x}ull)"),
        ScalarVal::F16(b) => format!("((acc_f16)0x{b:04x}u)"),
        ScalarVal::F32(x) => format!("acc_f32_bits(0x{:08x}u) /* {x:?} */", x.to_bits()),
        ScalarVal::F64(x) => format!("acc_f64_bits(0x{:016x}ull) /* {x:?} */", x.to_bits()),
    }
}

/// Whether a C atom is an `i64` literal as `literal` writes it (or a bare
/// integer).
pub(crate) fn is_i64_literal(atom: &str) -> bool {
    atom.parse::<i64>().is_ok()
        || atom
            .strip_prefix("((int64_t)")
            .and_then(|r| r.strip_suffix("LL)"))
            .is_some_and(|n| n.parse::<i64>().is_ok())
}

/// Whether a literal is written into the C source (else it is a hoisted
/// literal, Note [Hoisted literals]): booleans; the integers -1, 0, 1
/// and the powers of two up to 256, whose value the C compiler exploits
/// (strides that keep a loop contiguous, shifts and masks for divisions
/// and remainders); and the floats of `structural_float`. Every other
/// integer and float is hoisted.
pub(crate) fn embedded(v: ScalarVal) -> bool {
    let structural = |x: i128| (-1..=1).contains(&x) || (x > 0 && x <= 256 && x & (x - 1) == 0);
    match v {
        ScalarVal::Bool(_) => true,
        ScalarVal::I8(x) => structural(x.into()),
        ScalarVal::U8(x) => structural(x.into()),
        ScalarVal::I16(x) => structural(x.into()),
        ScalarVal::I32(x) => structural(x.into()),
        ScalarVal::I64(x) => structural(x.into()),
        ScalarVal::U16(x) => structural(x.into()),
        ScalarVal::U32(x) => structural(x.into()),
        ScalarVal::U64(x) => structural(x.into()),
        ScalarVal::F16(_) => false,
        ScalarVal::F32(x) => structural_float(x.into()),
        ScalarVal::F64(x) => structural_float(x),
    }
}

/// Whether a float is written into the C source (Note [Floats in the
/// source]): a zero, or a power of two from 2^-8 to 2^8, either sign.
fn structural_float(x: f64) -> bool {
    let bits = x.to_bits();
    let mantissa = bits & ((1u64 << 52) - 1);
    let exponent = ((bits >> 52) & 0x7ff) as i64 - 1023;
    x == 0.0 || (x.is_normal() && mantissa == 0 && (-8..=8).contains(&exponent))
}

// Note [Floats in the source]
// Some float values change the code the float rules let the C compiler
// emit, so they are written into the source rather than hoisted (Note
// [Hoisted literals]): under the strict rules `x * 1.0` is `x`,
// `x - 0.0` is `x`, `x / 2.0` is `x * 0.5` (a multiplication in place
// of a division, which costs several times more) and `x * 2.0` is
// `x + x`, all exact; in fast-math mode (Note [Fast math] in
// `cpu/compile.rs`) `x + 0.0` is `x` too, and `1.0 / sqrt(x)` may become
// an approximate reciprocal square root where the target has one for the
// vector width (GCC 12 has it for 4 and 8 floats, and for 16 only with
// AVX512ER, so not on AVX-512 machines without it). These are the values
// whose rewrites are exact: zeros, and the powers of two whose
// multiplications and divisions are exact, either sign. Other floats (a
// time step, a threshold, a coefficient) stay hoisted, so a program
// rebuilt with another of them still finds its kernels. A map of 32
// steps `y = (y + 1.0) / 2.0` over 2^16 floats took 46.6 to 51.2 µs (best
// of 200, two runs), against 115.6 to 117.6 µs with the divisor
// 2.0000002, which stays hoisted (2-core EPYC guest, 2026-11-30). On the
// benchmark set (`--size large`, three alternated runs of ten programs)
// no time moved beyond the noise: none of them is bound by such a
// division.

/// A literal as the 64-bit word it is passed in: integers sign- or
/// zero-extended, floats as their bit patterns.
pub(crate) fn literal_word(v: ScalarVal) -> i64 {
    match v {
        ScalarVal::Bool(b) => b.into(),
        ScalarVal::I8(x) => x.into(),
        ScalarVal::I16(x) => x.into(),
        ScalarVal::I32(x) => x.into(),
        ScalarVal::I64(x) => x,
        ScalarVal::U8(x) => x.into(),
        ScalarVal::U16(x) => x.into(),
        ScalarVal::U32(x) => x.into(),
        ScalarVal::U64(x) => x as i64,
        ScalarVal::F16(b) => b.into(),
        ScalarVal::F32(x) => x.to_bits().into(),
        ScalarVal::F64(x) => x.to_bits() as i64,
    }
}

/// A C expression of type `t` from the word `w` of `literal_word`. Every
/// conversion is defined: the word of a signed type is in its range, and
/// conversions to unsigned types are taken modulo.
pub(crate) fn literal_from_word(t: ScalarTy, w: &str) -> String {
    match t {
        ScalarTy::F32 => format!("acc_f32_bits((uint32_t){w})"),
        ScalarTy::F64 => format!("acc_f64_bits((uint64_t){w})"),
        other => format!("(({}){w})", c_type(other)),
    }
}

/// The zero of a type, as a C expression: what a failed read yields.
pub(crate) fn zero(t: ScalarTy) -> String {
    literal(ScalarVal::zero(t))
}

/// The suffix of the prelude's helpers for a type (`acc_add_int32_t`,
/// `acc_powi_float`).
pub(crate) fn helper_suffix(t: ScalarTy) -> &'static str {
    match t {
        ScalarTy::F32 => "float",
        ScalarTy::F64 => "double",
        other => c_type(other),
    }
}

/// A C identifier-safe comment text (no `*/` can end it early).
pub(crate) fn comment(s: &str) -> String {
    s.replace("*/", "* /")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_ones_and_small_powers_of_two_are_written_into_the_source() {
        for x in [0.0, -0.0, 1.0, -1.0, 2.0, 0.5, 256.0, -256.0, 1.0 / 256.0] {
            assert!(embedded(ScalarVal::F64(x)), "{x}");
            assert!(embedded(ScalarVal::F32(x as f32)), "{x}");
        }
        for x in [3.0, 0.1, 512.0, 1.0 / 512.0, 0.75, f64::INFINITY, f64::NAN] {
            assert!(!embedded(ScalarVal::F64(x)), "{x}");
            assert!(!embedded(ScalarVal::F32(x as f32)), "{x}");
        }
        // subnormal powers of two
        assert!(!embedded(ScalarVal::F64(f64::MIN_POSITIVE / 2.0)));
        assert!(!embedded(ScalarVal::F32(f32::MIN_POSITIVE / 2.0)));
    }
}

//! Scalar code generation for the C family, shared by the CPU backend (C)
//! and the CUDA backend (CUDA C): every scalar IR construct becomes C
//! statements with the semantics of `docs/semantics.md` and no undefined
//! behaviour (the helpers of `prelude.h` say how each rule is kept).
//!
//! Values are carried as their primitive leaves: a tuple-typed expression
//! is a list of C variables, one per leaf, so that no C struct types are
//! needed and every leaf can live in a register. Array reads are checked
//! and raise an error in the current error context (Note [Error contexts
//! in generated code]) instead of reading outside a buffer.

mod exp;

pub(crate) use exp::{linear_of, ArraySlot, CVal, ExpGen};

use crate::array::{ScalarTy, ScalarVal};

/// The C prelude every generated file starts with.
pub(crate) const PRELUDE: &str = include_str!("prelude.h");

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

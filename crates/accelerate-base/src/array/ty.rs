//! Run-time descriptions of element and array types (Accelerate's
//! `ScalarType`, `TypeR` and `ArraysR`).
//!
//! The IR is untyped at the Rust level (Rust has no GADTs), so every term
//! carries enough of these descriptions for the verifier to re-check it.
//! Shapes are flat tuples of `i64` extents, outermost first: rank 0 is the
//! empty tuple.

use std::fmt;

/// The primitive element types an array buffer can hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ScalarTy {
    Bool,
    I8,
    I16,
    I32,
    I64,
    U8,
    U16,
    U32,
    U64,
    /// IEEE binary16, stored as its bits; arithmetic needs the `f16`
    /// feature (the element type is `half::f16`).
    F16,
    F32,
    F64,
}

impl ScalarTy {
    pub const ALL: [ScalarTy; 12] = [
        ScalarTy::Bool,
        ScalarTy::I8,
        ScalarTy::I16,
        ScalarTy::I32,
        ScalarTy::I64,
        ScalarTy::U8,
        ScalarTy::U16,
        ScalarTy::U32,
        ScalarTy::U64,
        ScalarTy::F16,
        ScalarTy::F32,
        ScalarTy::F64,
    ];

    pub fn is_float(self) -> bool {
        matches!(self, ScalarTy::F16 | ScalarTy::F32 | ScalarTy::F64)
    }

    pub fn is_integral(self) -> bool {
        self.is_signed_int() || self.is_unsigned_int()
    }

    pub fn is_signed_int(self) -> bool {
        matches!(self, ScalarTy::I8 | ScalarTy::I16 | ScalarTy::I32 | ScalarTy::I64)
    }

    pub fn is_unsigned_int(self) -> bool {
        matches!(self, ScalarTy::U8 | ScalarTy::U16 | ScalarTy::U32 | ScalarTy::U64)
    }

    pub fn is_numeric(self) -> bool {
        self != ScalarTy::Bool
    }

    /// Size of one element in bytes.
    pub fn size_bytes(self) -> usize {
        match self {
            ScalarTy::Bool | ScalarTy::I8 | ScalarTy::U8 => 1,
            ScalarTy::I16 | ScalarTy::U16 | ScalarTy::F16 => 2,
            ScalarTy::I32 | ScalarTy::U32 | ScalarTy::F32 => 4,
            ScalarTy::I64 | ScalarTy::U64 | ScalarTy::F64 => 8,
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            ScalarTy::Bool => "bool",
            ScalarTy::I8 => "i8",
            ScalarTy::I16 => "i16",
            ScalarTy::I32 => "i32",
            ScalarTy::I64 => "i64",
            ScalarTy::U8 => "u8",
            ScalarTy::U16 => "u16",
            ScalarTy::U32 => "u32",
            ScalarTy::U64 => "u64",
            ScalarTy::F16 => "f16",
            ScalarTy::F32 => "f32",
            ScalarTy::F64 => "f64",
        }
    }
}

impl fmt::Display for ScalarTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The type of a scalar expression: a primitive or a (possibly nested,
/// possibly empty) tuple of them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum EltTy {
    Scalar(ScalarTy),
    Tuple(Vec<EltTy>),
}

impl EltTy {
    pub const UNIT: EltTy = EltTy::Tuple(Vec::new());

    /// The type of a shape (or index) of the given rank.
    pub fn shape(rank: usize) -> EltTy {
        EltTy::Tuple(vec![EltTy::Scalar(ScalarTy::I64); rank])
    }

    /// The rank, if this is the type of a shape (a flat tuple of `i64`).
    pub fn shape_rank(&self) -> Option<usize> {
        match self {
            EltTy::Tuple(ts) if ts.iter().all(|t| *t == EltTy::Scalar(ScalarTy::I64)) => Some(ts.len()),
            _ => None,
        }
    }

    pub fn scalar(&self) -> Option<ScalarTy> {
        match self {
            EltTy::Scalar(s) => Some(*s),
            EltTy::Tuple(_) => None,
        }
    }

    /// The primitive leaves in left-to-right order: one buffer each in a
    /// struct-of-arrays array.
    pub fn leaves(&self) -> Vec<ScalarTy> {
        let mut out = Vec::new();
        self.push_leaves(&mut out);
        out
    }

    fn push_leaves(&self, out: &mut Vec<ScalarTy>) {
        match self {
            EltTy::Scalar(s) => out.push(*s),
            EltTy::Tuple(ts) => ts.iter().for_each(|t| t.push_leaves(out)),
        }
    }

    pub fn size_bytes(&self) -> usize {
        self.leaves().iter().map(|s| s.size_bytes()).sum()
    }
}

impl fmt::Display for EltTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EltTy::Scalar(s) => write!(f, "{s}"),
            EltTy::Tuple(ts) => {
                f.write_str("(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                if ts.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// The type of one array: its rank and element type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArrayTy {
    pub rank: usize,
    pub elt: EltTy,
}

impl ArrayTy {
    /// The type of `unzip` of an array of this type: the arrays of its
    /// elements' components, of its rank. `None` unless the elements are
    /// tuples.
    pub fn unzipped(&self) -> Option<ArraysTy> {
        match &self.elt {
            EltTy::Tuple(parts) => Some(ArraysTy::Tuple(
                parts
                    .iter()
                    .map(|elt| ArraysTy::Array(ArrayTy { rank: self.rank, elt: elt.clone() }))
                    .collect(),
            )),
            EltTy::Scalar(_) => None,
        }
    }
}

impl fmt::Display for ArrayTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Array DIM{} {}", self.rank, self.elt)
    }
}

/// The type of an array computation: an array or a tuple of them.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArraysTy {
    Array(ArrayTy),
    Tuple(Vec<ArraysTy>),
}

impl ArraysTy {
    pub fn array(&self) -> Option<&ArrayTy> {
        match self {
            ArraysTy::Array(a) => Some(a),
            ArraysTy::Tuple(_) => None,
        }
    }
}

impl fmt::Display for ArraysTy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ArraysTy::Array(a) => write!(f, "{a}"),
            ArraysTy::Tuple(ts) => {
                f.write_str("(")?;
                for (i, t) in ts.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{t}")?;
                }
                f.write_str(")")
            }
        }
    }
}

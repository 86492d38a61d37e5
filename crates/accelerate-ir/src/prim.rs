//! Primitive scalar functions and their typing rules.
//!
//! Operators are not annotated with their operand type: it is determined by
//! the arguments, which the verifier types first. The semantics of each
//! operator is written down in `docs/semantics.md`.

use accelerate_base::array::{EltTy, ScalarTy};
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum PrimFun {
    // numeric, binary (wrapping for integers)
    Add,
    Sub,
    Mul,
    Min,
    Max,
    // numeric, unary
    Neg,
    Abs,
    Signum,
    // integral: `/` and `%`, truncating toward zero; error on a zero divisor
    Quot,
    Rem,
    /// integral division rounding toward negative infinity (Haskell's
    /// `div`); error on a zero divisor
    IDiv,
    /// the remainder of `IDiv`, with the sign of the divisor (Haskell's
    /// `mod`)
    Mod,
    // floating: `/`
    FDiv,
    // comparisons of two scalars of one type, giving `bool`
    Lt,
    Le,
    Gt,
    Ge,
    Eq,
    Ne,
    // booleans; `LAnd` and `LOr` evaluate their second argument only when
    // needed
    LAnd,
    LOr,
    LNot,
    // integral bit operations; shift amounts are masked to the bit width
    BAnd,
    BOr,
    BXor,
    BNot,
    Shl,
    Shr,
    /// the number of one bits, as `u32` (Rust's `count_ones`)
    PopCount,
    /// as `u32` (Rust's `leading_zeros`)
    LeadingZeros,
    /// as `u32` (Rust's `trailing_zeros`)
    TrailingZeros,
    // floating, unary
    Sqrt,
    Exp,
    Log,
    Sin,
    Cos,
    Tan,
    Asin,
    Acos,
    Atan,
    Sinh,
    Cosh,
    Tanh,
    Floor,
    Ceil,
    Round,
    Trunc,
    IsNan,
    IsInfinite,
    // floating, binary
    Atan2,
    Powf,
    LogBase,
    /// A float raised to an `i32` power.
    Powi,
    /// Rust's `as` between scalar types (float to integer saturates).
    Cast(ScalarTy),
    /// Reinterpret the bits as another type of the same size
    /// (`f32::to_bits`, `u32 as i32`, ...).
    BitCast(ScalarTy),
    // shapes and indices of one rank
    /// `to_index(shape, index)`: the row-major position of `index`.
    ToIndex,
    /// `from_index(shape, i)`: the index at row-major position `i`.
    FromIndex,
    /// The component-wise minimum of two shapes.
    Intersect,
    /// The number of elements of a shape.
    ShapeSize,
    /// `bounds_check(shape, index)` is `index` if `shape` is valid (as
    /// `shape_check`) and `index` lies inside it, and otherwise the error
    /// of `shape_check` or an index-out-of-bounds error: the checks an
    /// array read makes (of an array that was allocated, so valid), kept
    /// by fusion when it replaces the read by a computation of a producer
    /// it never allocates.
    BoundsCheck,
    /// `reshape_check(from, to)` is `to` if the two shapes (of any ranks)
    /// have the same size, and otherwise a reshape error: `reshape`'s
    /// check, kept by fusion when it delays a reshape.
    ReshapeCheck,
    /// `shape_check(shape)` is `shape` if it is a valid shape (no negative
    /// extent, the product of its non-zero extents within `i64`), and
    /// otherwise `NegativeExtent` or `ShapeTooLarge`: the check allocating
    /// an array makes, kept by fusion for a producer it never stores
    /// (Note [Fused producers are arrays too] in `accelerate-opt`'s
    /// `fusion/cunctation.rs`).
    ShapeCheck,
}

impl PrimFun {
    pub fn name(self) -> String {
        match self {
            PrimFun::Cast(t) => format!("cast<{t}>"),
            PrimFun::BitCast(t) => format!("bitcast<{t}>"),
            other => {
                let s = format!("{other:?}");
                let mut out = String::new();
                for (i, c) in s.chars().enumerate() {
                    if c.is_uppercase() && i > 0 {
                        out.push('_');
                    }
                    out.push(c.to_ascii_lowercase());
                }
                out
            }
        }
    }

    /// A comparison of two scalars, giving `bool`.
    pub fn is_comparison(self) -> bool {
        use PrimFun::*;
        matches!(self, Lt | Le | Gt | Ge | Eq | Ne)
    }

    /// A boolean operation: `&&`, `||` or `!`.
    pub fn is_logical(self) -> bool {
        matches!(self, PrimFun::LAnd | PrimFun::LOr | PrimFun::LNot)
    }

    /// An operation on shapes and indices: conversions between an index
    /// and a position, an intersection, a size, and the checks.
    pub fn is_shape_op(self) -> bool {
        use PrimFun::*;
        matches!(self, ToIndex | FromIndex | BoundsCheck | ReshapeCheck | ShapeCheck | Intersect | ShapeSize)
    }

    /// A transcendental function: exponentials, logarithms, powers and
    /// the trigonometric and hyperbolic functions, each worth many
    /// arithmetic operations.
    pub fn is_transcendental(self) -> bool {
        use PrimFun::*;
        matches!(
            self,
            Exp | Log
                | Sin
                | Cos
                | Tan
                | Asin
                | Acos
                | Atan
                | Sinh
                | Cosh
                | Tanh
                | Atan2
                | Powf
                | LogBase
                | Powi
        )
    }

    pub fn arity(self) -> usize {
        use PrimFun::*;
        match self {
            Neg | Abs | Signum | LNot | BNot | Sqrt | Exp | Log | Sin | Cos | Tan | Asin | Acos | Atan
            | Sinh | Cosh | Tanh | Floor | Ceil | Round | Trunc | IsNan | IsInfinite | Cast(_)
            | BitCast(_) | PopCount | LeadingZeros | TrailingZeros | ShapeSize | ShapeCheck => 1,
            _ => 2,
        }
    }

    /// The infix symbol the pretty printer uses, if any.
    pub fn infix(self) -> Option<&'static str> {
        use PrimFun::*;
        Some(match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Quot => "/",
            Rem => "%",
            FDiv => "/",
            Lt => "<",
            Le => "<=",
            Gt => ">",
            Ge => ">=",
            Eq => "==",
            Ne => "!=",
            LAnd => "&&",
            LOr => "||",
            BAnd => "&",
            BOr => "|",
            BXor => "^",
            Shl => "<<",
            Shr => ">>",
            _ => return None,
        })
    }

    /// The result type for arguments of the given types, or why they are
    /// not acceptable.
    pub fn result_ty(self, args: &[EltTy]) -> Result<EltTy, String> {
        use PrimFun::*;
        if args.len() != self.arity() {
            return Err(format!("{} takes {} arguments, given {}", self.name(), self.arity(), args.len()));
        }
        let scalar = |i: usize| -> Result<ScalarTy, String> {
            args[i].scalar().ok_or_else(|| format!("{} expects a scalar, found {}", self.name(), args[i]))
        };
        let same = || -> Result<ScalarTy, String> {
            let a = scalar(0)?;
            let b = scalar(1)?;
            if a != b {
                return Err(format!("{} of mismatched types {a} and {b}", self.name()));
            }
            Ok(a)
        };
        let need = |ok: bool, t: ScalarTy, what: &str| -> Result<(), String> {
            if ok {
                Ok(())
            } else {
                Err(format!("{} expects {what}, found {t}", self.name()))
            }
        };
        let shape_rank = |i: usize| -> Result<usize, String> {
            args[i].shape_rank().ok_or_else(|| format!("{} expects a shape, found {}", self.name(), args[i]))
        };
        let s = EltTy::Scalar;
        match self {
            Add | Sub | Mul | Min | Max => {
                let t = same()?;
                need(t.is_numeric(), t, "a numeric type")?;
                Ok(s(t))
            }
            Neg | Abs | Signum => {
                let t = scalar(0)?;
                need(t.is_numeric(), t, "a numeric type")?;
                Ok(s(t))
            }
            Quot | Rem | IDiv | Mod => {
                let t = same()?;
                need(t.is_integral(), t, "an integral type")?;
                Ok(s(t))
            }
            FDiv | Atan2 | Powf | LogBase => {
                let t = same()?;
                need(t.is_float(), t, "a floating type")?;
                Ok(s(t))
            }
            Lt | Le | Gt | Ge | Eq | Ne => {
                same()?;
                Ok(s(ScalarTy::Bool))
            }
            LAnd | LOr => {
                let t = same()?;
                need(t == ScalarTy::Bool, t, "bool")?;
                Ok(s(t))
            }
            LNot => {
                let t = scalar(0)?;
                need(t == ScalarTy::Bool, t, "bool")?;
                Ok(s(t))
            }
            BAnd | BOr | BXor | Shl | Shr => {
                let t = same()?;
                need(t.is_integral(), t, "an integral type")?;
                Ok(s(t))
            }
            BNot => {
                let t = scalar(0)?;
                need(t.is_integral(), t, "an integral type")?;
                Ok(s(t))
            }
            PopCount | LeadingZeros | TrailingZeros => {
                let t = scalar(0)?;
                need(t.is_integral(), t, "an integral type")?;
                Ok(s(ScalarTy::U32))
            }
            BitCast(to) => {
                let t = scalar(0)?;
                need(
                    t.size_bytes() == to.size_bytes() && t != ScalarTy::Bool && to != ScalarTy::Bool,
                    t,
                    &format!("a type of the size of {to}"),
                )?;
                Ok(s(to))
            }
            Sqrt | Exp | Log | Sin | Cos | Tan | Asin | Acos | Atan | Sinh | Cosh | Tanh | Floor | Ceil
            | Round | Trunc => {
                let t = scalar(0)?;
                need(t.is_float(), t, "a floating type")?;
                Ok(s(t))
            }
            IsNan | IsInfinite => {
                let t = scalar(0)?;
                need(t.is_float(), t, "a floating type")?;
                Ok(s(ScalarTy::Bool))
            }
            Powi => {
                let t = scalar(0)?;
                need(t.is_float(), t, "a floating type")?;
                let e = scalar(1)?;
                need(e == ScalarTy::I32, e, "an i32 exponent")?;
                Ok(s(t))
            }
            Cast(to) => {
                let t = scalar(0)?;
                need(to.is_numeric() || t == ScalarTy::Bool, t, "a cast to a numeric type")?;
                Ok(s(to))
            }
            ToIndex => {
                let r = shape_rank(0)?;
                if shape_rank(1)? != r {
                    return Err(format!(
                        "to_index of a shape and an index of different ranks: {} and {}",
                        args[0], args[1]
                    ));
                }
                Ok(s(ScalarTy::I64))
            }
            FromIndex => {
                let r = shape_rank(0)?;
                let t = scalar(1)?;
                need(t == ScalarTy::I64, t, "an i64 position")?;
                Ok(EltTy::shape(r))
            }
            Intersect | BoundsCheck => {
                let r = shape_rank(0)?;
                if shape_rank(1)? != r {
                    return Err(format!(
                        "{} of shapes of different ranks: {} and {}",
                        self.name(),
                        args[0],
                        args[1]
                    ));
                }
                Ok(EltTy::shape(r))
            }
            ShapeSize => {
                shape_rank(0)?;
                Ok(s(ScalarTy::I64))
            }
            ReshapeCheck => {
                shape_rank(0)?;
                shape_rank(1)?;
                Ok(args[1].clone())
            }
            ShapeCheck => {
                shape_rank(0)?;
                Ok(args[0].clone())
            }
        }
    }
}

impl fmt::Display for PrimFun {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}

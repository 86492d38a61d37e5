//! The semantics of every primitive scalar function, on untyped values:
//! the interpreter's, and the simplifier's constant folding.
//! `docs/semantics.md` states these rules; every backend must match them.

use crate::PrimFun;
use accelerate_base::array::{ScalarTy, ScalarVal, Val};
use accelerate_base::error::{Error, Result, SrcLoc};

use ScalarVal as S;

fn scalar(v: &Val) -> Result<ScalarVal> {
    v.scalar().ok_or_else(|| Error::Internal(format!("expected a scalar, found {v}")))
}

fn ill_typed(op: PrimFun, args: &[Val]) -> Error {
    let shown: Vec<String> = args.iter().map(|a| a.to_string()).collect();
    Error::Internal(format!("{op} applied to ill-typed arguments ({})", shown.join(", ")))
}

/// Applies a primitive to evaluated arguments. (`LAnd` and `LOr` are
/// evaluated lazily by the caller and never reach here with both sides.)
pub fn apply(op: PrimFun, args: &[Val], loc: SrcLoc) -> Result<Val> {
    use PrimFun::*;
    // Note [binary16 arithmetic]: f16 operands are widened to f32 (exact),
    // the operation done in f32 and a f16 result rounded back once. For
    // + - * / and sqrt this is the correctly rounded f16 result (f32 has
    // more than 2 * 11 + 2 bits); for the other functions it is what CUDA's
    // half-precision math does.
    let is_f16 = |v: &Val| matches!(v, Val::Scalar(S::F16(_)));
    if !matches!(op, Cast(_) | BitCast(_)) && args.iter().any(is_f16) {
        let wide: Vec<Val> =
            args.iter().map(|v| v.scalar().map_or(v.clone(), |s| Val::Scalar(widen(s)))).collect();
        return Ok(match apply(op, &wide, loc)? {
            Val::Scalar(S::F32(x)) => Val::Scalar(S::F16(half::f16::from_f32(x).to_bits())),
            other => other,
        });
    }
    match op {
        ToIndex | FromIndex | Intersect | ShapeSize | BoundsCheck | ReshapeCheck | ShapeCheck => {
            return shape_op(op, args, loc)
        }
        _ => {}
    }
    let a = scalar(&args[0])?;
    let r = if args.len() == 1 {
        unary(op, a).ok_or_else(|| ill_typed(op, args))?
    } else {
        let b = scalar(&args[1])?;
        binary(op, a, b, loc)?.ok_or_else(|| ill_typed(op, args))?
    };
    Ok(Val::Scalar(r))
}

macro_rules! each_int {
    ($a:expr, $x:ident => $body:expr) => {
        match $a {
            S::I8($x) => Some(S::I8($body)),
            S::I16($x) => Some(S::I16($body)),
            S::I32($x) => Some(S::I32($body)),
            S::I64($x) => Some(S::I64($body)),
            S::U8($x) => Some(S::U8($body)),
            S::U16($x) => Some(S::U16($body)),
            S::U32($x) => Some(S::U32($body)),
            S::U64($x) => Some(S::U64($body)),
            _ => None,
        }
    };
}

macro_rules! each_int_u32 {
    ($a:expr, $x:ident => $body:expr) => {
        match $a {
            S::I8($x) => Some(S::U32($body)),
            S::I16($x) => Some(S::U32($body)),
            S::I32($x) => Some(S::U32($body)),
            S::I64($x) => Some(S::U32($body)),
            S::U8($x) => Some(S::U32($body)),
            S::U16($x) => Some(S::U32($body)),
            S::U32($x) => Some(S::U32($body)),
            S::U64($x) => Some(S::U32($body)),
            _ => None,
        }
    };
}

macro_rules! each_float {
    ($a:expr, $x:ident => $body:expr) => {
        match $a {
            S::F32($x) => Some(S::F32($body)),
            S::F64($x) => Some(S::F64($body)),
            _ => None,
        }
    };
}

macro_rules! each_float_pred {
    ($a:expr, $x:ident => $body:expr) => {
        match $a {
            S::F32($x) => Some(S::Bool($body)),
            S::F64($x) => Some(S::Bool($body)),
            _ => None,
        }
    };
}

macro_rules! each_int2 {
    ($a:expr, $b:expr, $x:ident, $y:ident => $body:expr) => {
        match ($a, $b) {
            (S::I8($x), S::I8($y)) => Some(S::I8($body)),
            (S::I16($x), S::I16($y)) => Some(S::I16($body)),
            (S::I32($x), S::I32($y)) => Some(S::I32($body)),
            (S::I64($x), S::I64($y)) => Some(S::I64($body)),
            (S::U8($x), S::U8($y)) => Some(S::U8($body)),
            (S::U16($x), S::U16($y)) => Some(S::U16($body)),
            (S::U32($x), S::U32($y)) => Some(S::U32($body)),
            (S::U64($x), S::U64($y)) => Some(S::U64($body)),
            _ => None,
        }
    };
}

macro_rules! each_float2 {
    ($a:expr, $b:expr, $x:ident, $y:ident => $body:expr) => {
        match ($a, $b) {
            (S::F32($x), S::F32($y)) => Some(S::F32($body)),
            (S::F64($x), S::F64($y)) => Some(S::F64($body)),
            _ => None,
        }
    };
}

macro_rules! compare {
    ($a:expr, $b:expr, $op:tt) => {
        match ($a, $b) {
            (S::Bool(x), S::Bool(y)) => Some(S::Bool(x $op y)),
            (S::I8(x), S::I8(y)) => Some(S::Bool(x $op y)),
            (S::I16(x), S::I16(y)) => Some(S::Bool(x $op y)),
            (S::I32(x), S::I32(y)) => Some(S::Bool(x $op y)),
            (S::I64(x), S::I64(y)) => Some(S::Bool(x $op y)),
            (S::U8(x), S::U8(y)) => Some(S::Bool(x $op y)),
            (S::U16(x), S::U16(y)) => Some(S::Bool(x $op y)),
            (S::U32(x), S::U32(y)) => Some(S::Bool(x $op y)),
            (S::U64(x), S::U64(y)) => Some(S::Bool(x $op y)),
            (S::F32(x), S::F32(y)) => Some(S::Bool(x $op y)),
            (S::F64(x), S::F64(y)) => Some(S::Bool(x $op y)),
            _ => None,
        }
    };
}

/// Integer operations whose definitions differ between signed and
/// unsigned types, written once.
trait IntOps: Copy {
    fn abs_w(self) -> Self;
    fn signum_w(self) -> Self;
    /// Division rounding toward negative infinity, wrapping (`MIN div -1`
    /// is `MIN`); the divisor is not zero.
    fn floor_div_w(self, d: Self) -> Self;
    /// The remainder of `floor_div_w`: zero or of the divisor's sign.
    fn floor_mod_w(self, d: Self) -> Self;
}

macro_rules! int_ops_signed {
    ($($t:ty),*) => {$(
        impl IntOps for $t {
            fn abs_w(self) -> Self { self.wrapping_abs() }
            fn signum_w(self) -> Self { self.signum() }
            fn floor_div_w(self, d: Self) -> Self {
                let q = self.wrapping_div(d);
                let r = self.wrapping_rem(d);
                if r != 0 && ((r < 0) != (d < 0)) { q.wrapping_sub(1) } else { q }
            }
            fn floor_mod_w(self, d: Self) -> Self {
                let r = self.wrapping_rem(d);
                if r != 0 && ((r < 0) != (d < 0)) { r.wrapping_add(d) } else { r }
            }
        }
    )*};
}
macro_rules! int_ops_unsigned {
    ($($t:ty),*) => {$(
        impl IntOps for $t {
            fn abs_w(self) -> Self { self }
            fn signum_w(self) -> Self { (self != 0) as $t }
            fn floor_div_w(self, d: Self) -> Self { self / d }
            fn floor_mod_w(self, d: Self) -> Self { self % d }
        }
    )*};
}
int_ops_signed!(i8, i16, i32, i64);
int_ops_unsigned!(u8, u16, u32, u64);

fn unary(op: PrimFun, a: ScalarVal) -> Option<ScalarVal> {
    use PrimFun::*;
    match op {
        Neg => each_int!(a, x => x.wrapping_neg()).or_else(|| each_float!(a, x => -x)),
        Abs => each_int!(a, x => x.abs_w()).or_else(|| each_float!(a, x => x.abs())),
        Signum => each_int!(a, x => x.signum_w()).or_else(|| each_float!(a, x => x.signum())),
        LNot => match a {
            S::Bool(x) => Some(S::Bool(!x)),
            _ => None,
        },
        BNot => each_int!(a, x => !x),
        Sqrt => each_float!(a, x => x.sqrt()),
        Exp => each_float!(a, x => x.exp()),
        Log => each_float!(a, x => x.ln()),
        Sin => each_float!(a, x => x.sin()),
        Cos => each_float!(a, x => x.cos()),
        Tan => each_float!(a, x => x.tan()),
        Asin => each_float!(a, x => x.asin()),
        Acos => each_float!(a, x => x.acos()),
        Atan => each_float!(a, x => x.atan()),
        Sinh => each_float!(a, x => x.sinh()),
        Cosh => each_float!(a, x => x.cosh()),
        Tanh => each_float!(a, x => x.tanh()),
        Floor => each_float!(a, x => x.floor()),
        Ceil => each_float!(a, x => x.ceil()),
        Round => each_float!(a, x => x.round()),
        Trunc => each_float!(a, x => x.trunc()),
        IsNan => each_float_pred!(a, x => x.is_nan()),
        IsInfinite => each_float_pred!(a, x => x.is_infinite()),
        Cast(to) => Some(cast(a, to)),
        BitCast(to) => bitcast(a, to),
        PopCount => each_int_u32!(a, x => x.count_ones()),
        LeadingZeros => each_int_u32!(a, x => x.leading_zeros()),
        TrailingZeros => each_int_u32!(a, x => x.trailing_zeros()),
        _ => None,
    }
}

fn binary(op: PrimFun, a: ScalarVal, b: ScalarVal, loc: SrcLoc) -> Result<Option<ScalarVal>> {
    use PrimFun::*;
    let zero_divisor = || {
        matches!(
            b,
            S::I8(0) | S::I16(0) | S::I32(0) | S::I64(0) | S::U8(0) | S::U16(0) | S::U32(0) | S::U64(0)
        )
    };
    Ok(match op {
        Add => each_int2!(a, b, x, y => x.wrapping_add(y)).or_else(|| each_float2!(a, b, x, y => x + y)),
        Sub => each_int2!(a, b, x, y => x.wrapping_sub(y)).or_else(|| each_float2!(a, b, x, y => x - y)),
        Mul => each_int2!(a, b, x, y => x.wrapping_mul(y)).or_else(|| each_float2!(a, b, x, y => x * y)),
        Min => each_int2!(a, b, x, y => x.min(y)).or_else(|| each_float2!(a, b, x, y => x.min(y))),
        Max => each_int2!(a, b, x, y => x.max(y)).or_else(|| each_float2!(a, b, x, y => x.max(y))),
        Quot | Rem | IDiv | Mod if zero_divisor() => return Err(Error::DivisionByZero { loc }),
        IDiv => each_int2!(a, b, x, y => x.floor_div_w(y)),
        Mod => each_int2!(a, b, x, y => x.floor_mod_w(y)),
        Quot => each_int2!(a, b, x, y => x.wrapping_div(y)),
        Rem => each_int2!(a, b, x, y => x.wrapping_rem(y)),
        FDiv => each_float2!(a, b, x, y => x / y),
        Atan2 => each_float2!(a, b, x, y => x.atan2(y)),
        Powf => each_float2!(a, b, x, y => x.powf(y)),
        LogBase => each_float2!(a, b, x, y => x.log(y)),
        Powi => match (a, b) {
            (S::F32(x), S::I32(n)) => Some(S::F32(x.powi(n))),
            (S::F64(x), S::I32(n)) => Some(S::F64(x.powi(n))),
            _ => None,
        },
        Lt => compare!(a, b, <),
        Le => compare!(a, b, <=),
        Gt => compare!(a, b, >),
        Ge => compare!(a, b, >=),
        Eq => compare!(a, b, ==),
        Ne => compare!(a, b, !=),
        LAnd => match (a, b) {
            (S::Bool(x), S::Bool(y)) => Some(S::Bool(x && y)),
            _ => None,
        },
        LOr => match (a, b) {
            (S::Bool(x), S::Bool(y)) => Some(S::Bool(x || y)),
            _ => None,
        },
        BAnd => each_int2!(a, b, x, y => x & y),
        BOr => each_int2!(a, b, x, y => x | y),
        BXor => each_int2!(a, b, x, y => x ^ y),
        // the shift amount, whatever its sign, is taken modulo the bit width
        Shl => each_int2!(a, b, x, y => x.wrapping_shl(y as u32)),
        Shr => each_int2!(a, b, x, y => x.wrapping_shr(y as u32)),
        _ => None,
    })
}

macro_rules! cast_from {
    ($a:expr, $t:ty) => {
        match $a {
            S::Bool(x) => (x as u8) as $t,
            S::I8(x) => x as $t,
            S::I16(x) => x as $t,
            S::I32(x) => x as $t,
            S::I64(x) => x as $t,
            S::U8(x) => x as $t,
            S::U16(x) => x as $t,
            S::U32(x) => x as $t,
            S::U64(x) => x as $t,
            S::F32(x) => x as $t,
            S::F64(x) => x as $t,
            S::F16(x) => half::f16::from_bits(x).to_f32() as $t,
        }
    };
}

/// f16 widened to f32 (exactly); other scalars unchanged.
fn widen(s: ScalarVal) -> ScalarVal {
    match s {
        S::F16(b) => S::F32(half::f16::from_bits(b).to_f32()),
        other => other,
    }
}

/// Rust's `as`: integers wrap (truncate or extend), floats round to
/// nearest, float to integer saturates with NaN to 0, `bool` is 0 or 1.
/// To f16: the value rounded once to the nearest binary16 (by way of f64,
/// which holds every source value that can round to a finite f16 exactly).
pub fn cast(a: ScalarVal, to: ScalarTy) -> ScalarVal {
    let a = widen(a);
    match to {
        ScalarTy::F16 => S::F16(half::f16::from_f64(cast_from!(a, f64)).to_bits()),
        ScalarTy::Bool => S::Bool(match a {
            S::Bool(x) => x,
            other => cast_from!(other, f64) != 0.0,
        }),
        ScalarTy::I8 => S::I8(cast_from!(a, i8)),
        ScalarTy::I16 => S::I16(cast_from!(a, i16)),
        ScalarTy::I32 => S::I32(cast_from!(a, i32)),
        ScalarTy::I64 => S::I64(cast_from!(a, i64)),
        ScalarTy::U8 => S::U8(cast_from!(a, u8)),
        ScalarTy::U16 => S::U16(cast_from!(a, u16)),
        ScalarTy::U32 => S::U32(cast_from!(a, u32)),
        ScalarTy::U64 => S::U64(cast_from!(a, u64)),
        ScalarTy::F32 => S::F32(cast_from!(a, f32)),
        ScalarTy::F64 => S::F64(cast_from!(a, f64)),
    }
}

/// Reinterprets the bits of a scalar as another type of the same size.
fn bitcast(a: ScalarVal, to: ScalarTy) -> Option<ScalarVal> {
    let bits: u64 = match a {
        S::I8(x) => x as u8 as u64,
        S::U8(x) => x as u64,
        S::I16(x) => x as u16 as u64,
        S::U16(x) => x as u64,
        S::I32(x) => x as u32 as u64,
        S::U32(x) => x as u64,
        S::F32(x) => x.to_bits() as u64,
        S::F16(x) => x as u64,
        S::I64(x) => x as u64,
        S::U64(x) => x,
        S::F64(x) => x.to_bits(),
        S::Bool(_) => return None,
    };
    if a.ty().size_bytes() != to.size_bytes() {
        return None;
    }
    Some(match to {
        ScalarTy::I8 => S::I8(bits as u8 as i8),
        ScalarTy::U8 => S::U8(bits as u8),
        ScalarTy::I16 => S::I16(bits as u16 as i16),
        ScalarTy::U16 => S::U16(bits as u16),
        ScalarTy::I32 => S::I32(bits as u32 as i32),
        ScalarTy::U32 => S::U32(bits as u32),
        ScalarTy::F32 => S::F32(f32::from_bits(bits as u32)),
        ScalarTy::F16 => S::F16(bits as u16),
        ScalarTy::I64 => S::I64(bits as i64),
        ScalarTy::U64 => S::U64(bits),
        ScalarTy::F64 => S::F64(f64::from_bits(bits)),
        ScalarTy::Bool => return None,
    })
}

fn index_of(v: &Val) -> Result<Vec<i64>> {
    v.to_index().ok_or_else(|| Error::Internal(format!("expected a shape, found {v}")))
}

fn shape_op(op: PrimFun, args: &[Val], loc: SrcLoc) -> Result<Val> {
    let sh = index_of(&args[0])?;
    match op {
        PrimFun::ToIndex => {
            let ix = index_of(&args[1])?;
            let i = sh.iter().zip(&ix).fold(0i64, |acc, (&d, &x)| acc.wrapping_mul(d).wrapping_add(x));
            Ok(Val::Scalar(S::I64(i)))
        }
        PrimFun::FromIndex => {
            let mut i = scalar(&args[1])?.as_i64().ok_or_else(|| ill_typed(op, args))?;
            let mut ix = vec![0i64; sh.len()];
            for k in (0..sh.len()).rev() {
                if k == 0 {
                    ix[0] = i;
                } else {
                    if sh[k] == 0 {
                        return Err(Error::DivisionByZero { loc });
                    }
                    ix[k] = i.wrapping_rem(sh[k]);
                    i = i.wrapping_div(sh[k]);
                }
            }
            Ok(Val::from_index(&ix))
        }
        PrimFun::Intersect => {
            let other = index_of(&args[1])?;
            let r: Vec<i64> = sh.iter().zip(&other).map(|(&a, &b)| a.min(b)).collect();
            Ok(Val::from_index(&r))
        }
        PrimFun::ShapeSize => Ok(Val::Scalar(S::I64(sh.iter().fold(1i64, |a, &d| a.wrapping_mul(d))))),
        PrimFun::ReshapeCheck => {
            let to = index_of(&args[1])?;
            match accelerate_base::array::shape::reshape_error(&sh, &to, loc) {
                Some(e) => Err(e),
                None => Ok(args[1].clone()),
            }
        }
        PrimFun::ShapeCheck => match accelerate_base::array::shape::reshape_error(&sh, &sh, loc) {
            Some(e) => Err(e),
            None => Ok(args[0].clone()),
        },
        PrimFun::BoundsCheck => {
            if let Some(e) = accelerate_base::array::shape::reshape_error(&sh, &sh, loc) {
                return Err(e);
            }
            let ix = index_of(&args[1])?;
            if ix.iter().zip(&sh).all(|(&x, &d)| 0 <= x && x < d) {
                Ok(args[1].clone())
            } else {
                Err(Error::index_out_of_bounds(loc, ix, sh.iter().map(|&d| d.max(0) as usize).collect()))
            }
        }
        _ => Err(ill_typed(op, args)),
    }
}

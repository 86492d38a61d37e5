//! The classes of element types that the scalar language's operators
//! apply to. They are the front end's, not the arrays': an array holds any
//! `Elt`, and which operations an `Exp<T>` offers is the language's
//! choice. (Being this crate's traits also lets coherence see that `bool`,
//! whose `&`, `|` and `!` are logical, is not an integer.)

use accelerate_base::array::PrimElt;

/// Numeric element types: `+ - *`, `abs`, `min`/`max`, ...
pub trait NumElt: PrimElt + PartialOrd {}
/// Integral element types: `/` and `%` truncate, bit operations, shifts.
pub trait IntElt: NumElt {}
/// Floating-point element types: `/`, `sqrt`, `exp` and the rest of the math.
pub trait FloatElt: NumElt {}

macro_rules! marker {
    ($tr:ident: $($t:ty),*) => { $(impl $tr for $t {})* };
}
marker!(NumElt: i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
marker!(IntElt: i8, i16, i32, i64, u8, u16, u32, u64);
marker!(FloatElt: f32, f64);

/// IEEE binary16 (feature `f16`).
#[cfg(feature = "f16")]
mod binary16 {
    use super::{FloatElt, NumElt};
    use half::f16;

    impl NumElt for f16 {}
    impl FloatElt for f16 {}
}

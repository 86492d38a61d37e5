//! Rust operator overloading for `Exp`: `+ - * / % -x`, bit operators and
//! shifts, with a literal allowed on either side (`x * 2.0`, `1.0 - x`),
//! on expressions and on references to them (`&x * &x`; Note
//! [Reference-counted handles] in `lang::graph`).

use super::classes::{IntElt, NumElt};
use super::exp::{prim, Exp, IntoExp};
use accelerate_base::array::PrimElt;
use accelerate_ir::PrimFun;
use std::ops::*;

fn div_op<T: PrimElt>() -> PrimFun {
    if T::TY.is_float() {
        PrimFun::FDiv
    } else {
        PrimFun::Quot
    }
}

macro_rules! binop {
    ($bound:ident, $tr:ident, $method:ident, $op:expr) => {
        impl<T: $bound, R: IntoExp<T>> $tr<R> for Exp<T> {
            type Output = Exp<T>;
            #[track_caller]
            fn $method(self, rhs: R) -> Exp<T> {
                prim($op, vec![self.id, rhs.into_exp().id])
            }
        }
        impl<T: $bound, R: IntoExp<T>> $tr<R> for &Exp<T> {
            type Output = Exp<T>;
            #[track_caller]
            fn $method(self, rhs: R) -> Exp<T> {
                prim($op, vec![self.r(), rhs.into_exp().id])
            }
        }
    };
}

binop!(NumElt, Add, add, PrimFun::Add);
binop!(NumElt, Sub, sub, PrimFun::Sub);
binop!(NumElt, Mul, mul, PrimFun::Mul);
binop!(NumElt, Div, div, div_op::<T>());
binop!(IntElt, Rem, rem, PrimFun::Rem);
binop!(IntElt, BitAnd, bitand, PrimFun::BAnd);
binop!(IntElt, BitOr, bitor, PrimFun::BOr);
binop!(IntElt, BitXor, bitxor, PrimFun::BXor);
binop!(IntElt, Shl, shl, PrimFun::Shl);
binop!(IntElt, Shr, shr, PrimFun::Shr);

impl<T: NumElt> Neg for Exp<T> {
    type Output = Exp<T>;
    #[track_caller]
    fn neg(self) -> Exp<T> {
        prim(PrimFun::Neg, vec![self.id])
    }
}

impl<T: NumElt> Neg for &Exp<T> {
    type Output = Exp<T>;
    #[track_caller]
    fn neg(self) -> Exp<T> {
        prim(PrimFun::Neg, vec![self.r()])
    }
}

impl<T: IntElt> Not for Exp<T> {
    type Output = Exp<T>;
    #[track_caller]
    fn not(self) -> Exp<T> {
        prim(PrimFun::BNot, vec![self.id])
    }
}

impl<T: IntElt> Not for &Exp<T> {
    type Output = Exp<T>;
    #[track_caller]
    fn not(self) -> Exp<T> {
        prim(PrimFun::BNot, vec![self.r()])
    }
}

impl Not for Exp<bool> {
    type Output = Exp<bool>;
    #[track_caller]
    fn not(self) -> Exp<bool> {
        prim(PrimFun::LNot, vec![self.id])
    }
}

impl Not for &Exp<bool> {
    type Output = Exp<bool>;
    #[track_caller]
    fn not(self) -> Exp<bool> {
        prim(PrimFun::LNot, vec![self.r()])
    }
}

impl<R: IntoExp<bool>> BitAnd<R> for Exp<bool> {
    type Output = Exp<bool>;
    /// Logical and (short-circuiting, like `Exp::and`).
    #[track_caller]
    fn bitand(self, rhs: R) -> Exp<bool> {
        self.and(rhs)
    }
}

impl<R: IntoExp<bool>> BitAnd<R> for &Exp<bool> {
    type Output = Exp<bool>;
    /// Logical and (short-circuiting, like `Exp::and`).
    #[track_caller]
    fn bitand(self, rhs: R) -> Exp<bool> {
        self.and(rhs)
    }
}

impl<R: IntoExp<bool>> BitOr<R> for Exp<bool> {
    type Output = Exp<bool>;
    /// Logical or (short-circuiting, like `Exp::or`).
    #[track_caller]
    fn bitor(self, rhs: R) -> Exp<bool> {
        self.or(rhs)
    }
}

impl<R: IntoExp<bool>> BitOr<R> for &Exp<bool> {
    type Output = Exp<bool>;
    /// Logical or (short-circuiting, like `Exp::or`).
    #[track_caller]
    fn bitor(self, rhs: R) -> Exp<bool> {
        self.or(rhs)
    }
}

// A literal on the left: `2.0 * x`. Coherence requires one impl per type.
macro_rules! lit_left {
    ($tr:ident, $method:ident, $op:expr, $($t:ty),*) => {$(
        impl $tr<Exp<$t>> for $t {
            type Output = Exp<$t>;
            #[track_caller]
            fn $method(self, rhs: Exp<$t>) -> Exp<$t> {
                prim($op, vec![self.into_exp().id, rhs.id])
            }
        }
        impl $tr<&Exp<$t>> for $t {
            type Output = Exp<$t>;
            #[track_caller]
            fn $method(self, rhs: &Exp<$t>) -> Exp<$t> {
                prim($op, vec![self.into_exp().id, rhs.r()])
            }
        }
    )*};
}

macro_rules! lit_left_num {
    ($($t:ty),*) => {
        lit_left!(Add, add, PrimFun::Add, $($t),*);
        lit_left!(Sub, sub, PrimFun::Sub, $($t),*);
        lit_left!(Mul, mul, PrimFun::Mul, $($t),*);
        $(lit_left!(Div, div, div_op::<$t>(), $t);)*
    };
}

macro_rules! lit_left_int {
    ($($t:ty),*) => {
        lit_left!(Rem, rem, PrimFun::Rem, $($t),*);
        lit_left!(BitAnd, bitand, PrimFun::BAnd, $($t),*);
        lit_left!(BitOr, bitor, PrimFun::BOr, $($t),*);
        lit_left!(BitXor, bitxor, PrimFun::BXor, $($t),*);
        lit_left!(Shl, shl, PrimFun::Shl, $($t),*);
        lit_left!(Shr, shr, PrimFun::Shr, $($t),*);
    };
}

lit_left_num!(i8, i16, i32, i64, u8, u16, u32, u64, f32, f64);
lit_left_int!(i8, i16, i32, i64, u8, u16, u32, u64);

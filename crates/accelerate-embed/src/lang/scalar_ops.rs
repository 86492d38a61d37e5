//! Scalar operations beyond the operators: floor division, bit counting,
//! bit casts, `gcd`/`lcm`, bounded iteration (`iterate`, `sfoldl`) and
//! matching on options and sums. Those that are not IR primitives are
//! built from `while_loop` and `cond` in Rust, at construction time.

use super::acc::{Acc, AsAcc};
use super::classes::IntElt;
use super::exp::{cond, constant, lift, prim, while_loop, Exp, IntoExp};
use accelerate_base::array::{Array, Elt, PrimElt, Shape, Snoc};
use accelerate_ir::PrimFun;

impl<T: IntElt> Exp<T> {
    /// Division rounding toward negative infinity (Haskell's `div`); a zero
    /// divisor is an error at run time, `MIN.div_floor(-1)` wraps to `MIN`.
    #[track_caller]
    pub fn div_floor(&self, other: impl IntoExp<T>) -> Exp<T> {
        prim(PrimFun::IDiv, vec![self.r(), other.into_exp().id])
    }

    /// The remainder of `div_floor`: zero or with the sign of the divisor
    /// (Haskell's `mod`).
    #[track_caller]
    pub fn mod_floor(&self, other: impl IntoExp<T>) -> Exp<T> {
        prim(PrimFun::Mod, vec![self.r(), other.into_exp().id])
    }

    /// The number of one bits (Rust's `count_ones`).
    #[track_caller]
    pub fn count_ones(&self) -> Exp<u32> {
        prim(PrimFun::PopCount, vec![self.r()])
    }

    /// The number of leading zero bits (Rust's `leading_zeros`).
    #[track_caller]
    pub fn leading_zeros(&self) -> Exp<u32> {
        prim(PrimFun::LeadingZeros, vec![self.r()])
    }

    /// The number of trailing zero bits (Rust's `trailing_zeros`).
    #[track_caller]
    pub fn trailing_zeros(&self) -> Exp<u32> {
        prim(PrimFun::TrailingZeros, vec![self.r()])
    }

    /// The greatest common divisor of the absolute values (Euclid's
    /// algorithm); `gcd(0, 0) = 0`. Absolute values wrap, so a result
    /// involving `MIN` of a signed type is `MIN` as Rust's `wrapping_abs`
    /// gives it.
    #[track_caller]
    pub fn gcd(&self, other: impl IntoExp<T>) -> Exp<T> {
        let zero = constant(T::from_scalar(accelerate_base::array::ScalarVal::zero(T::TY)));
        let start = lift((self.abs_int(), other.into_exp().abs_int()));
        let (a, _) = while_loop(
            start,
            move |ab| ab.snd().ne(zero),
            move |ab| {
                let (a, b) = ab.unlift();
                lift((&b, a.rem_int(&b)))
            },
        )
        .unlift();
        a
    }

    /// The least common multiple of the absolute values; 0 if either is 0.
    /// Wraps on overflow, as integer arithmetic does.
    #[track_caller]
    pub fn lcm(&self, other: impl IntoExp<T>) -> Exp<T> {
        let other = other.into_exp();
        let zero = constant(T::from_scalar(accelerate_base::array::ScalarVal::zero(T::TY)));
        let g = self.gcd(&other);
        cond(g.eq(&zero), zero, (self.abs_int().quot(g) * other.abs_int()).abs_int())
    }

    fn abs_int(&self) -> Exp<T> {
        prim(PrimFun::Abs, vec![self.r()])
    }

    fn rem_int(&self, other: &Exp<T>) -> Exp<T> {
        prim(PrimFun::Rem, vec![self.r(), other.r()])
    }
}

/// Primitive types whose values can be reinterpreted as `U`: those of the
/// same size.
pub trait BitCastTo<U: PrimElt>: PrimElt {}

macro_rules! bitcast_group {
    ($($t:ty),*) => { bitcast_group!(@each [$($t),*] $($t),*); };
    (@each $all:tt $($t:ty),*) => { $(bitcast_group!(@one $t $all);)* };
    (@one $t:ty [$($u:ty),*]) => { $(impl BitCastTo<$u> for $t {})* };
}

bitcast_group!(i8, u8);
bitcast_group!(i16, u16);
bitcast_group!(i32, u32, f32);
bitcast_group!(i64, u64, f64);
#[cfg(feature = "f16")]
mod binary16_bitcasts {
    use super::BitCastTo;
    use half::f16;
    impl BitCastTo<f16> for f16 {}
    impl BitCastTo<u16> for f16 {}
    impl BitCastTo<i16> for f16 {}
    impl BitCastTo<f16> for u16 {}
    impl BitCastTo<f16> for i16 {}
}

impl<T: PrimElt> Exp<T> {
    /// The same bits as another primitive type of the same size
    /// (`f32::to_bits`, `i32 as u32`, ...).
    #[track_caller]
    pub fn bitcast<U: PrimElt>(&self) -> Exp<U>
    where
        T: BitCastTo<U>,
    {
        prim(PrimFun::BitCast(U::TY), vec![self.r()])
    }
}

/// Applies `f` to `x` `n` times (Accelerate's `iterate`); `n <= 0` gives `x`.
#[track_caller]
pub fn iterate<T: Elt>(
    n: impl IntoExp<i64>,
    f: impl FnOnce(&Exp<T>) -> Exp<T>,
    x: impl IntoExp<T>,
) -> Exp<T> {
    let n = n.into_exp();
    let start = lift((constant(0i64), x.into_exp()));
    let (_, r) = while_loop(
        start,
        move |s| s.fst().lt(n),
        move |s| {
            let (i, v) = s.unlift();
            lift((i + 1i64, f(&v)))
        },
    )
    .unlift();
    r
}

/// A sequential left fold, in scalar code, over the innermost row at index
/// `ix` of an array (Accelerate's `sfoldl`): `f(... f(f(z, a[ix,0]), a[ix,1]) ...)`.
#[track_caller]
pub fn sfoldl<Sh: Shape, A: Elt, B: Elt>(
    f: impl FnOnce(&Exp<A>, &Exp<B>) -> Exp<A>,
    z: impl IntoExp<A>,
    ix: impl IntoExp<Sh>,
    array: impl AsAcc<Array<Snoc<Sh>, B>>,
) -> Exp<A> {
    let array: Acc<Array<Snoc<Sh>, B>> = array.as_acc();
    let ix = ix.into_exp();
    let n = array.shape().head();
    let start = lift((constant(0i64), z.into_exp()));
    let (_, r) = while_loop(
        start,
        move |s| s.fst().lt(n),
        move |s| {
            let (i, acc) = s.unlift();
            lift((&i + 1i64, f(&acc, &array.index(ix.snoc(i)))))
        },
    )
    .unlift();
    r
}

impl<T: Elt> Exp<Option<T>> {
    /// `match self { Some(x) => some(x), None => none }`: only the arm taken
    /// is evaluated.
    #[track_caller]
    pub fn match_option<R: Elt>(
        &self,
        some: impl FnOnce(&Exp<T>) -> Exp<R>,
        none: impl IntoExp<R>,
    ) -> Exp<R> {
        cond(self.is_just(), some(&self.from_just()), none)
    }
}

/// A value of one of two types (Note [Representing options] in
/// `array::elt`: stored as `(is_right, left payload, right payload)`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Either<L, R> {
    Left(L),
    Right(R),
}

impl<L: Elt, R: Elt> Elt for Either<L, R> {
    fn elt_ty() -> accelerate_base::array::EltTy {
        use accelerate_base::array::{EltTy, ScalarTy};
        EltTy::Tuple(vec![EltTy::Scalar(ScalarTy::Bool), L::elt_ty(), R::elt_ty()])
    }
    fn to_val(&self) -> accelerate_base::array::Val {
        use accelerate_base::array::{ScalarVal, Val};
        match self {
            Either::Left(l) => {
                Val::Tuple(vec![Val::Scalar(ScalarVal::Bool(false)), l.to_val(), Val::zero(&R::elt_ty())])
            }
            Either::Right(r) => {
                Val::Tuple(vec![Val::Scalar(ScalarVal::Bool(true)), Val::zero(&L::elt_ty()), r.to_val()])
            }
        }
    }
    fn from_val(v: &accelerate_base::array::Val) -> Self {
        use accelerate_base::array::{ScalarVal, Val};
        let vs = v.tuple().expect("expected an either value");
        match vs[0] {
            Val::Scalar(ScalarVal::Bool(true)) => Either::Right(R::from_val(&vs[2])),
            _ => Either::Left(L::from_val(&vs[1])),
        }
    }
}

/// `Left(x)` as an expression.
#[track_caller]
pub fn left<L: Elt, R: Elt>(x: impl IntoExp<L>) -> Exp<Either<L, R>> {
    let zero = constant(R::from_val(&accelerate_base::array::Val::zero(&R::elt_ty())));
    Exp::__from_fields(&[constant(false).into(), x.into_exp().into(), zero.into()])
}

/// `Right(x)` as an expression.
#[track_caller]
pub fn right<L: Elt, R: Elt>(x: impl IntoExp<R>) -> Exp<Either<L, R>> {
    let zero = constant(L::from_val(&accelerate_base::array::Val::zero(&L::elt_ty())));
    Exp::__from_fields(&[constant(true).into(), zero.into(), x.into_exp().into()])
}

impl<L: Elt, R: Elt> Exp<Either<L, R>> {
    /// `match self { Left(l) => on_left(l), Right(r) => on_right(r) }`: only
    /// the arm taken is evaluated.
    #[track_caller]
    pub fn match_either<T: Elt>(
        &self,
        on_left: impl FnOnce(&Exp<L>) -> Exp<T>,
        on_right: impl FnOnce(&Exp<R>) -> Exp<T>,
    ) -> Exp<T> {
        let is_right: Exp<bool> = self.__field(0);
        cond(is_right, on_right(&self.__field(2)), on_left(&self.__field(1)))
    }
}

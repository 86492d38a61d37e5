//! Element types (Accelerate's `Elt` class): what an array may hold and a
//! scalar expression may compute.
//!
//! An element type has a run-time description ([`EltTy`]) and converts to
//! and from the untyped [`Val`]. Tuples nest up to arity 8; an array of
//! tuples is stored as one buffer per primitive leaf.

use super::column::Column;
use super::ty::{EltTy, ScalarTy};
use super::value::{Buffer, ScalarVal, Val};
use std::fmt::Debug;

/// A type that can be an array element or the value of a scalar expression.
pub trait Elt: Clone + Debug + PartialEq + 'static {
    fn elt_ty() -> EltTy;
    fn to_val(&self) -> Val;
    /// Converts back from a value of type `Self::elt_ty()`. The library only
    /// calls it on values the verifier has typed, so a mismatch is a bug in
    /// the library, reported by a panic.
    fn from_val(v: &Val) -> Self;

    /// Moves a vector of elements into struct-of-arrays buffers.
    fn into_buffers(items: Vec<Self>) -> Vec<Buffer> {
        let ty = Self::elt_ty();
        let mut b =
            super::value::ArrayData::builder(&ty, items.len()).expect("memory for a copy of the elements");
        for x in &items {
            b.push(&x.to_val());
        }
        let n = items.len();
        b.finish(vec![n]).expect("builder holds n elements").into_buffers()
    }

    /// Copies the buffers back out into a vector of elements.
    fn from_buffers(buffers: &[Buffer], len: usize, ty: &EltTy) -> Vec<Self> {
        let data = super::value::ArrayData::from_buffers(vec![len], ty.clone(), buffers.to_vec())
            .expect("buffers match their type");
        (0..len).map(|i| Self::from_val(&data.get(i))).collect()
    }
}

/// A primitive element type: one buffer, one [`ScalarVal`].
pub trait PrimElt: Elt + Copy {
    const TY: ScalarTy;
    fn to_scalar(self) -> ScalarVal;
    fn from_scalar(s: ScalarVal) -> Self;
    /// The elements of a buffer of this type, in place.
    fn slice(b: &Buffer) -> Option<&[Self]>;
    /// The buffer holding a column of this type (the column itself; for
    /// `f16`, a copy of its bits).
    fn buffer(c: Column<Self>) -> Buffer;
    /// The column a buffer of this type holds (the buffer itself), or
    /// `None` for another type or for `f16`, whose buffer holds bits.
    fn column(b: Buffer) -> Option<Column<Self>>;
}

macro_rules! prim_elt {
    ($t:ty, $variant:ident) => {
        impl Elt for $t {
            fn elt_ty() -> EltTy {
                EltTy::Scalar(ScalarTy::$variant)
            }
            fn to_val(&self) -> Val {
                Val::Scalar(ScalarVal::$variant(*self))
            }
            fn from_val(v: &Val) -> Self {
                match v {
                    Val::Scalar(ScalarVal::$variant(x)) => *x,
                    other => panic!("expected {} but found {other:?}", stringify!($t)),
                }
            }
            fn into_buffers(items: Vec<Self>) -> Vec<Buffer> {
                vec![Buffer::$variant(items.into())]
            }
            fn from_buffers(buffers: &[Buffer], _len: usize, _ty: &EltTy) -> Vec<Self> {
                match &buffers[0] {
                    Buffer::$variant(v) => v.to_vec(),
                    other => panic!("expected a {} buffer, found {}", stringify!($t), other.ty()),
                }
            }
        }
        impl PrimElt for $t {
            const TY: ScalarTy = ScalarTy::$variant;
            fn buffer(c: Column<Self>) -> Buffer {
                Buffer::$variant(c)
            }
            fn column(b: Buffer) -> Option<Column<Self>> {
                match b {
                    Buffer::$variant(c) => Some(c),
                    _ => None,
                }
            }
            fn slice(b: &Buffer) -> Option<&[Self]> {
                match b {
                    Buffer::$variant(v) => Some(v),
                    _ => None,
                }
            }
            fn to_scalar(self) -> ScalarVal {
                ScalarVal::$variant(self)
            }
            fn from_scalar(s: ScalarVal) -> Self {
                match s {
                    ScalarVal::$variant(x) => x,
                    other => panic!("expected {} but found {other:?}", stringify!($t)),
                }
            }
        }
    };
}

prim_elt!(bool, Bool);
prim_elt!(i8, I8);
prim_elt!(i16, I16);
prim_elt!(i32, I32);
prim_elt!(i64, I64);
prim_elt!(u8, U8);
prim_elt!(u16, U16);
prim_elt!(u32, U32);
prim_elt!(u64, U64);
prim_elt!(f32, F32);
prim_elt!(f64, F64);

impl Elt for () {
    fn elt_ty() -> EltTy {
        EltTy::UNIT
    }
    fn to_val(&self) -> Val {
        Val::UNIT
    }
    fn from_val(_: &Val) -> Self {}
}

macro_rules! tuple_elt {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: Elt),+> Elt for ($($name,)+) {
            fn elt_ty() -> EltTy {
                EltTy::Tuple(vec![$($name::elt_ty()),+])
            }
            fn to_val(&self) -> Val {
                Val::Tuple(vec![$(self.$idx.to_val()),+])
            }
            fn from_val(v: &Val) -> Self {
                let vs = v.tuple().expect("expected a tuple value");
                ($($name::from_val(&vs[$idx]),)+)
            }
        }
    };
}

tuple_elt!(A 0, B 1);
tuple_elt!(A 0, B 1, C 2);
tuple_elt!(A 0, B 1, C 2, D 3);
tuple_elt!(A 0, B 1, C 2, D 3, E 4);
tuple_elt!(A 0, B 1, C 2, D 3, E 4, F 5);
tuple_elt!(A 0, B 1, C 2, D 3, E 4, F 5, G 6);
tuple_elt!(A 0, B 1, C 2, D 3, E 4, F 5, G 6, H 7);

// Note [Representing options]
// `Option<T>` is the tuple `(bool, T)`: a tag and a payload, the payload of
// `None` being the zero of `T`. It is the sum type `permute`'s index
// function returns (Accelerate's `Maybe sh`), and needs nothing new in the
// IR or in any backend.
impl<T: Elt> Elt for Option<T> {
    fn elt_ty() -> EltTy {
        EltTy::Tuple(vec![EltTy::Scalar(ScalarTy::Bool), T::elt_ty()])
    }
    fn to_val(&self) -> Val {
        match self {
            Some(x) => Val::Tuple(vec![Val::Scalar(ScalarVal::Bool(true)), x.to_val()]),
            None => Val::Tuple(vec![Val::Scalar(ScalarVal::Bool(false)), Val::zero(&T::elt_ty())]),
        }
    }
    fn from_val(v: &Val) -> Self {
        let vs = v.tuple().expect("expected an option value");
        match vs[0] {
            Val::Scalar(ScalarVal::Bool(true)) => Some(T::from_val(&vs[1])),
            _ => None,
        }
    }
}

/// IEEE binary16 elements (feature `f16`): stored as their bits, computed
/// as Note [binary16 arithmetic] in the interpreter says.
#[cfg(feature = "f16")]
mod binary16 {
    use super::*;
    use half::f16;

    impl Elt for f16 {
        fn elt_ty() -> EltTy {
            EltTy::Scalar(ScalarTy::F16)
        }
        fn to_val(&self) -> Val {
            Val::Scalar(ScalarVal::F16(self.to_bits()))
        }
        fn from_val(v: &Val) -> Self {
            match v {
                Val::Scalar(ScalarVal::F16(x)) => f16::from_bits(*x),
                other => panic!("expected f16 but found {other:?}"),
            }
        }
        fn into_buffers(items: Vec<Self>) -> Vec<Buffer> {
            vec![Buffer::F16(items.into_iter().map(f16::to_bits).collect())]
        }
        fn from_buffers(buffers: &[Buffer], _len: usize, _ty: &EltTy) -> Vec<Self> {
            match &buffers[0] {
                Buffer::F16(v) => v.iter().map(|&b| f16::from_bits(b)).collect(),
                other => panic!("expected an f16 buffer, found {}", other.ty()),
            }
        }
    }

    impl PrimElt for f16 {
        const TY: ScalarTy = ScalarTy::F16;
        fn buffer(c: Column<Self>) -> Buffer {
            Buffer::F16(c.iter().map(|x| x.to_bits()).collect())
        }
        fn column(_: Buffer) -> Option<Column<Self>> {
            None
        }
        fn slice(b: &Buffer) -> Option<&[Self]> {
            use half::slice::HalfBitsSliceExt;
            match b {
                Buffer::F16(v) => Some(v.reinterpret_cast()),
                _ => None,
            }
        }
        fn to_scalar(self) -> ScalarVal {
            ScalarVal::F16(self.to_bits())
        }
        fn from_scalar(s: ScalarVal) -> Self {
            match s {
                ScalarVal::F16(x) => f16::from_bits(x),
                other => panic!("expected f16 but found {other:?}"),
            }
        }
    }
}

//! `Array<Sh, E>`: the user's typed view of an immutable, reference-counted
//! struct-of-arrays array, and `Arrays`, the types an `Acc` can compute
//! (arrays and tuples of arrays).

use super::elt::{Elt, PrimElt};
use super::shape::{Shape, Snoc, Z};
use super::ty::{ArrayTy, ArraysTy};
use super::value::{ArrayData, ArraysVal};
use crate::error::{Error, SrcLoc};
use std::fmt;
use std::marker::PhantomData;
use std::sync::Arc;

/// A multidimensional, immutable array, stored row-major as one buffer per
/// primitive leaf of `E`. Cloning is cheap (the data is shared).
pub struct Array<Sh: Shape, E: Elt> {
    data: Arc<ArrayData>,
    _ty: PhantomData<fn() -> (Sh, E)>,
}

/// A rank-0 array holding one element.
pub type Scalar<E> = Array<Z, E>;
/// A one-dimensional array.
pub type Vector<E> = Array<Snoc<Z>, E>;
/// A two-dimensional array (rows, columns).
pub type Matrix<E> = Array<Snoc<Snoc<Z>>, E>;

impl<Sh: Shape, E: Elt> Clone for Array<Sh, E> {
    fn clone(&self) -> Self {
        Array { data: self.data.clone(), _ty: PhantomData }
    }
}

/// Extents as `usize` for an array of `E`s (see `shape::checked_extents`).
fn checked_size<E: Elt>(loc: SrcLoc, dims: &[i64]) -> Result<Vec<usize>, Error> {
    super::shape::checked_extents(dims, E::elt_ty().size_bytes(), loc)
}

impl<Sh: Shape, E: Elt> Array<Sh, E> {
    /// An array of the given shape from its elements in row-major order.
    /// Fails if the number of elements is not the shape's size. The
    /// elements are copied, once, into buffers that start a cache line
    /// (Note [Buffers start a cache line] in `array/column.rs`).
    #[track_caller]
    pub fn from_vec(shape: Sh, items: Vec<E>) -> Result<Self, Error> {
        Self::from_vec_at(shape, items, SrcLoc::caller())
    }

    pub(crate) fn from_vec_at(shape: Sh, items: Vec<E>, loc: SrcLoc) -> Result<Self, Error> {
        let dims = checked_size::<E>(loc, &shape.to_vec())?;
        let expected: usize = dims.iter().product();
        if items.len() != expected {
            return Err(Error::DataLength { loc, shape: dims, expected, found: items.len() });
        }
        let buffers = E::into_buffers(items);
        let data = ArrayData::from_buffers(dims, E::elt_ty(), buffers).expect("sizes checked");
        Ok(Array { data: Arc::new(data), _ty: PhantomData })
    }

    /// An array of the given shape from an iterator of its elements.
    #[track_caller]
    pub fn from_iter_shaped(shape: Sh, items: impl IntoIterator<Item = E>) -> Result<Self, Error> {
        Self::from_vec(shape, items.into_iter().collect())
    }

    /// An array whose element at each index is `f(index)`.
    #[track_caller]
    pub fn from_fn(shape: Sh, mut f: impl FnMut(Sh) -> E) -> Result<Self, Error> {
        let loc = SrcLoc::caller();
        let dims = checked_size::<E>(loc, &shape.to_vec())?;
        let mut items = Vec::new();
        items
            .try_reserve_exact(dims.iter().product())
            .map_err(|_| Error::OutOfMemory { loc, shape: dims.clone() })?;
        let mut ix = vec![0i64; dims.len()];
        for_each_index(&dims, |i| {
            ix.iter_mut().zip(i).for_each(|(a, &b)| *a = b as i64);
            items.push(f(Sh::from_slice(&ix)));
        });
        Self::from_vec(shape, items)
    }

    /// An array of the given shape with every element `x`.
    #[track_caller]
    pub fn filled(shape: Sh, x: E) -> Result<Self, Error> {
        let loc = SrcLoc::caller();
        let dims = checked_size::<E>(loc, &shape.to_vec())?;
        let n = dims.iter().product();
        let mut items = Vec::new();
        items.try_reserve_exact(n).map_err(|_| Error::OutOfMemory { loc, shape: dims })?;
        items.resize(n, x);
        Self::from_vec_at(shape, items, loc)
    }

    /// Wraps untyped data, checking it against the static type.
    pub(crate) fn from_data(data: Arc<ArrayData>) -> Result<Self, Error> {
        let want = ArrayTy { rank: Sh::RANK, elt: E::elt_ty() };
        if data.ty() != want {
            return Err(Error::Internal(format!("a result of type {} was read back as {want}", data.ty())));
        }
        Ok(Array { data, _ty: PhantomData })
    }

    #[doc(hidden)]
    pub fn data(&self) -> &Arc<ArrayData> {
        &self.data
    }

    pub fn shape(&self) -> Sh {
        let dims: Vec<i64> = self.data.shape().iter().map(|&d| d as i64).collect();
        Sh::from_slice(&dims)
    }

    /// Extents, outermost first.
    pub fn dims(&self) -> &[usize] {
        self.data.shape()
    }

    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The elements in row-major order.
    pub fn to_vec(&self) -> Vec<E> {
        E::from_buffers(self.data.buffers(), self.data.len(), self.data.elt_ty())
    }

    /// The element at a multidimensional index, or `None` out of bounds.
    pub fn get(&self, ix: Sh) -> Option<E> {
        let i = linear_index(self.data.shape(), &ix.to_vec())?;
        Some(E::from_val(&self.data.get(i)))
    }

    /// The elements in row-major order, in place (no copy): for a
    /// foreign function's implementation, say, to hand to a C library.
    pub fn as_slice(&self) -> &[E]
    where
        E: PrimElt,
    {
        // an `Array<Sh, E>`'s one buffer holds `E`s (checked where it is
        // made: `from_data`, `from_vec`)
        self.data.buffers().first().and_then(E::slice).expect("an array's buffer of its element type")
    }

    /// The element at a row-major position, or `None` out of bounds.
    pub fn get_linear(&self, i: usize) -> Option<E> {
        (i < self.len()).then(|| E::from_val(&self.data.get(i)))
    }
}

impl<E: Elt> Array<Z, E> {
    /// A rank-0 array holding `x`.
    pub fn scalar(x: E) -> Self {
        Self::from_vec(Z, vec![x]).expect("one element for shape Z")
    }

    /// The single element of a rank-0 array.
    pub fn value(&self) -> E {
        E::from_val(&self.data.get(0))
    }
}

impl<E: Elt> Array<Snoc<Z>, E> {
    /// A vector holding the elements of `v`; cannot fail.
    pub fn from_elems(v: Vec<E>) -> Self {
        let n = v.len() as i64;
        Self::from_vec(Snoc(Z, n), v).expect("the shape is the vector's length")
    }
}

impl<E: Elt> FromIterator<E> for Array<Snoc<Z>, E> {
    fn from_iter<I: IntoIterator<Item = E>>(iter: I) -> Self {
        Self::from_elems(iter.into_iter().collect())
    }
}

impl<Sh: Shape, E: Elt> PartialEq for Array<Sh, E> {
    fn eq(&self, other: &Self) -> bool {
        self.dims() == other.dims() && self.to_vec() == other.to_vec()
    }
}

/// Calls `f` on every index of `dims` in row-major order.
pub fn for_each_index(dims: &[usize], mut f: impl FnMut(&[usize])) {
    if dims.contains(&0) {
        return;
    }
    let mut ix = vec![0usize; dims.len()];
    loop {
        f(&ix);
        let mut d = dims.len();
        loop {
            if d == 0 {
                return;
            }
            d -= 1;
            ix[d] += 1;
            if ix[d] < dims[d] {
                break;
            }
            ix[d] = 0;
        }
    }
}

/// The row-major position of `ix` in an array of extents `dims`, or `None`
/// if it is out of bounds or of the wrong rank.
pub fn linear_index(dims: &[usize], ix: &[i64]) -> Option<usize> {
    if dims.len() != ix.len() {
        return None;
    }
    let mut i = 0usize;
    for (&d, &x) in dims.iter().zip(ix) {
        if x < 0 || x as usize >= d {
            return None;
        }
        i = i * d + x as usize;
    }
    Some(i)
}

const SHOWN: usize = 8;

impl<Sh: Shape, E: Elt> fmt::Debug for Array<Sh, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl<Sh: Shape, E: Elt> fmt::Display for Array<Sh, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Array {:?} [", self.dims())?;
        let n = self.len();
        for i in 0..n.min(SHOWN) {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{}", self.data.get(i))?;
        }
        if n > SHOWN {
            write!(f, ", .. ({} more)", n - SHOWN)?;
        }
        f.write_str("]")
    }
}

/// Types an array computation can produce: one array, or a tuple of them.
pub trait Arrays: Clone + 'static {
    fn arrays_ty() -> ArraysTy;
    fn to_arrays_val(&self) -> ArraysVal;
    fn from_arrays_val(v: ArraysVal) -> Result<Self, Error>;
}

impl<Sh: Shape, E: Elt> Arrays for Array<Sh, E> {
    fn arrays_ty() -> ArraysTy {
        ArraysTy::Array(ArrayTy { rank: Sh::RANK, elt: E::elt_ty() })
    }
    fn to_arrays_val(&self) -> ArraysVal {
        ArraysVal::Array(self.data.clone())
    }
    fn from_arrays_val(v: ArraysVal) -> Result<Self, Error> {
        match v {
            ArraysVal::Array(a) => Array::from_data(a),
            ArraysVal::Tuple(_) => Err(Error::Internal("expected an array, found a tuple".into())),
        }
    }
}

macro_rules! tuple_arrays {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: Arrays),+> Arrays for ($($name,)+) {
            fn arrays_ty() -> ArraysTy {
                ArraysTy::Tuple(vec![$($name::arrays_ty()),+])
            }
            fn to_arrays_val(&self) -> ArraysVal {
                ArraysVal::Tuple(vec![$(self.$idx.to_arrays_val()),+])
            }
            fn from_arrays_val(v: ArraysVal) -> Result<Self, Error> {
                match v {
                    ArraysVal::Tuple(vs) => {
                        let mut it = vs.into_iter();
                        Ok(($($name::from_arrays_val(it.next().ok_or_else(|| {
                            Error::Internal(format!("tuple component {} missing", $idx))
                        })?)?,)+))
                    }
                    ArraysVal::Array(_) => Err(Error::Internal("expected a tuple of arrays".into())),
                }
            }
        }
    };
}

tuple_arrays!(A 0, B 1);
tuple_arrays!(A 0, B 1, C 2);
tuple_arrays!(A 0, B 1, C 2, D 3);

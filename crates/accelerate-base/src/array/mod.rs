//! Arrays: shapes, element types, struct-of-arrays storage and the typed
//! `Array<Sh, E>` users hold.

pub mod column;
pub mod elt;
#[cfg(feature = "ndarray")]
pub mod ndarray_conv;
pub mod pool;
pub mod shape;
pub mod ty;
pub mod typed;
pub mod value;

pub use column::Column;
pub use elt::{Elt, PrimElt};
pub use shape::{
    dim1, dim2, dim3, dim4, dim5, All, Any, IxTuple, Shape, SliceDim, SliceIx, SliceSpec, Snoc, SnocAll,
    DIM0, DIM1, DIM2, DIM3, DIM4, DIM5, DIM6, Z,
};
pub use ty::{ArrayTy, ArraysTy, EltTy, ScalarTy};
pub use typed::{Array, Arrays, Matrix, Scalar, Vector};
pub use value::{ArrayData, ArraysVal, Buffer, ScalarVal, Val};

//! The names a program needs: `use accelerate::prelude::*;`.

pub use crate::array::{
    dim1, dim2, dim3, dim4, dim5, All, Any, Array, Arrays, Elt, FloatElt, IntElt, Matrix, NumElt, PrimElt,
    Scalar, Shape, SliceIx, Snoc, SnocAll, Vector, DIM0, DIM1, DIM2, DIM3, DIM4, DIM5, Z,
};
pub use crate::lang::*;
pub use crate::{compile, run, Config, Error};
pub use accelerate_derive::Elt;

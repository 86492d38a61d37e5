//! Conversion to and from `ndarray` arrays (feature `ndarray`).

use super::elt::Elt;
use super::shape::Shape;
use super::typed::Array;
use crate::error::{Error, SrcLoc};

impl<Sh: Shape, E: Elt> Array<Sh, E> {
    /// A copy as a dynamic-rank `ndarray` array (row-major).
    pub fn to_ndarray(&self) -> ndarray::ArrayD<E> {
        ndarray::ArrayD::from_shape_vec(ndarray::IxDyn(self.dims()), self.to_vec())
            .expect("the shape and the data agree")
    }

    /// A copy of an `ndarray` array of the same rank, in its logical
    /// (row-major) order whatever its memory layout.
    #[track_caller]
    pub fn from_ndarray<S, D>(a: &ndarray::ArrayBase<S, D>) -> Result<Self, Error>
    where
        S: ndarray::Data<Elem = E>,
        D: ndarray::Dimension,
    {
        let loc = SrcLoc::caller();
        if a.ndim() != Sh::RANK {
            return Err(Error::RankMismatch { loc, expected: Sh::RANK, found: a.ndim() });
        }
        let dims: Vec<i64> = a.shape().iter().map(|&d| d as i64).collect();
        Array::from_vec_at(Sh::from_slice(&dims), a.iter().cloned().collect(), loc)
    }
}

//! Shapes as type-level snoc lists (Accelerate's `Z :. Int :. Int`), and the
//! slice specifiers of `replicate` and `slice`.
//!
//! `Snoc<Sh>` adds one innermost dimension to `Sh`, so an operation typed
//! `Array<Snoc<Sh>, E> -> Array<Sh, E>` (like `fold`) works at every rank.
//! At run time a shape is a flat tuple of `i64` extents, outermost first.

use super::elt::Elt;
use super::ty::{EltTy, ScalarTy};
use super::value::Val;

/// The shape of rank 0 (a scalar array), and the end of every shape list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Z;

/// A shape with one more, innermost, dimension of the given extent (or an
/// index with one more component).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Snoc<Sh>(pub Sh, pub i64);

pub type DIM0 = Z;
pub type DIM1 = Snoc<DIM0>;
pub type DIM2 = Snoc<DIM1>;
pub type DIM3 = Snoc<DIM2>;
pub type DIM4 = Snoc<DIM3>;
pub type DIM5 = Snoc<DIM4>;
pub type DIM6 = Snoc<DIM5>;

/// A value made of `i64` components only; its run-time form is a flat tuple.
pub trait IxTuple: Clone + Copy + std::fmt::Debug + PartialEq + 'static {
    const COMPONENTS: usize;
    fn push_components(&self, out: &mut Vec<i64>);
    fn take_components(it: &mut std::slice::Iter<'_, i64>) -> Self;
}

/// An array shape (or multidimensional index) of a statically known rank.
pub trait Shape: IxTuple + Elt + Eq + std::hash::Hash {
    const RANK: usize;

    /// Extents (or index components), outermost first.
    fn to_vec(&self) -> Vec<i64> {
        let mut v = Vec::with_capacity(Self::RANK);
        self.push_components(&mut v);
        v
    }

    fn from_slice(ix: &[i64]) -> Self {
        assert_eq!(ix.len(), Self::RANK, "index of the wrong rank");
        Self::take_components(&mut ix.iter())
    }

    /// The number of elements of an array of this shape (0 if any extent is
    /// not positive).
    fn size(&self) -> usize {
        self.to_vec().iter().map(|&d| d.max(0) as usize).product()
    }
}

impl IxTuple for Z {
    const COMPONENTS: usize = 0;
    fn push_components(&self, _: &mut Vec<i64>) {}
    fn take_components(_: &mut std::slice::Iter<'_, i64>) -> Self {
        Z
    }
}

impl Shape for Z {
    const RANK: usize = 0;
}

impl<Sh: IxTuple> IxTuple for Snoc<Sh> {
    const COMPONENTS: usize = Sh::COMPONENTS + 1;
    fn push_components(&self, out: &mut Vec<i64>) {
        self.0.push_components(out);
        out.push(self.1);
    }
    fn take_components(it: &mut std::slice::Iter<'_, i64>) -> Self {
        let sh = Sh::take_components(it);
        Snoc(sh, *it.next().expect("index has enough components"))
    }
}

impl<Sh: Shape> Shape for Snoc<Sh> {
    const RANK: usize = Sh::RANK + 1;
}

fn ix_elt_ty<T: IxTuple>() -> EltTy {
    EltTy::Tuple(vec![EltTy::Scalar(ScalarTy::I64); T::COMPONENTS])
}

fn ix_to_val<T: IxTuple>(x: &T) -> Val {
    let mut v = Vec::new();
    x.push_components(&mut v);
    Val::from_index(&v)
}

fn ix_from_val<T: IxTuple>(v: &Val) -> T {
    let ix = v.to_index().expect("expected an index value");
    T::take_components(&mut ix.iter())
}

macro_rules! ix_elt {
    ($([$($g:tt)*] $t:ty),*) => {$(
        impl<$($g)*> Elt for $t {
            fn elt_ty() -> EltTy { ix_elt_ty::<Self>() }
            fn to_val(&self) -> Val { ix_to_val(self) }
            fn from_val(v: &Val) -> Self { ix_from_val(v) }
        }
    )*};
}

ix_elt!([] Z, [Sh: IxTuple] Snoc<Sh>, [S: IxTuple] SnocAll<S>, [Sh: Shape] Any<Sh>);

/// Extents as `usize` for an array whose elements take `elt_bytes` bytes:
/// `Error::NegativeExtent` for a negative extent, `Error::ShapeTooLarge` if
/// the product of its non-zero extents exceeds `i64::MAX`, or, for an
/// array that is not empty, its bytes exceed `isize::MAX`
/// (docs/semantics.md, "Arrays": an empty array takes no memory, but its
/// other extents are bounded all the same, whatever their order, so that
/// every partial product of a valid shape's extents fits).
#[doc(hidden)]
pub fn checked_extents(
    dims: &[i64],
    elt_bytes: usize,
    loc: crate::error::SrcLoc,
) -> Result<Vec<usize>, crate::error::Error> {
    use crate::error::Error;
    if dims.iter().any(|&d| d < 0) {
        return Err(Error::NegativeExtent { loc, shape: dims.to_vec() });
    }
    let count = dims.iter().filter(|&&d| d != 0).try_fold(1i64, |a, &d| a.checked_mul(d));
    let fits = count.is_some_and(|n| {
        dims.contains(&0)
            || (n as usize).checked_mul(elt_bytes.max(1)).is_some_and(|b| b <= isize::MAX as usize)
    });
    if !fits {
        return Err(Error::ShapeTooLarge { loc, shape: dims.to_vec() });
    }
    Ok(dims.iter().map(|&d| d as usize).collect())
}

/// Why a reshape from `from` to `to` is wrong, if it is: a negative
/// extent (`Error::NegativeExtent`), non-zero extents whose product passes
/// `i64::MAX` (`Error::ShapeTooLarge`, as `checked_extents`: its size
/// cannot be compared, nor its elements reached by position), or sizes
/// that differ (`Error::ReshapeSize`).
#[doc(hidden)]
pub fn reshape_error(from: &[i64], to: &[i64], loc: crate::error::SrcLoc) -> Option<crate::error::Error> {
    use crate::error::Error;
    let size = |s: &[i64]| -> Result<i64, Error> {
        if s.iter().any(|&d| d < 0) {
            return Err(Error::NegativeExtent { loc, shape: s.to_vec() });
        }
        let nonzero = s.iter().filter(|&&d| d != 0).try_fold(1i64, |a, &d| a.checked_mul(d));
        let nonzero = nonzero.ok_or(Error::ShapeTooLarge { loc, shape: s.to_vec() })?;
        Ok(if s.contains(&0) { 0 } else { nonzero })
    };
    match (size(from), size(to)) {
        (Err(e), _) | (_, Err(e)) => Some(e),
        (Ok(a), Ok(b)) if a != b => Some(Error::ReshapeSize {
            loc,
            from: from.iter().map(|&d| d as usize).collect(),
            from_size: a as usize,
            to: to.to_vec(),
            to_size: b as usize,
        }),
        _ => None,
    }
}

/// Shape constructors from `usize` extents.
pub fn dim1(n: usize) -> DIM1 {
    Snoc(Z, n as i64)
}
pub fn dim2(rows: usize, cols: usize) -> DIM2 {
    Snoc(dim1(rows), cols as i64)
}
pub fn dim3(a: usize, b: usize, c: usize) -> DIM3 {
    Snoc(dim2(a, b), c as i64)
}
pub fn dim4(a: usize, b: usize, c: usize, d: usize) -> DIM4 {
    Snoc(dim3(a, b, c), d as i64)
}
pub fn dim5(a: usize, b: usize, c: usize, d: usize, e: usize) -> DIM5 {
    Snoc(dim4(a, b, c, d), e as i64)
}

// ---------------------------------------------------------------------------
// Slice specifiers

/// A slice specifier component that keeps a whole dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct All;

/// A slice specifier `S` followed by a kept (`All`) innermost dimension.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct SnocAll<S>(pub S, pub All);

/// A slice specifier that keeps every dimension of `Sh` (Accelerate's
/// `Any sh`): it makes `replicate` and `slice` shape-polymorphic in the
/// outer dimensions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Any<Sh>(pub std::marker::PhantomData<Sh>);

impl<S: IxTuple> IxTuple for SnocAll<S> {
    const COMPONENTS: usize = S::COMPONENTS;
    fn push_components(&self, out: &mut Vec<i64>) {
        self.0.push_components(out)
    }
    fn take_components(it: &mut std::slice::Iter<'_, i64>) -> Self {
        SnocAll(S::take_components(it), All)
    }
}

impl<Sh: Shape> IxTuple for Any<Sh> {
    const COMPONENTS: usize = 0;
    fn push_components(&self, _: &mut Vec<i64>) {}
    fn take_components(_: &mut std::slice::Iter<'_, i64>) -> Self {
        Any(std::marker::PhantomData)
    }
}

/// One dimension of a slice specifier, outermost first, after the `Any`
/// prefix.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SliceDim {
    /// The dimension is kept whole (present in both the slice and the full
    /// shape).
    All,
    /// The dimension is fixed by one `i64` of the slice index (present in
    /// the full shape only).
    Fixed,
}

/// The run-time form of a slice specifier's type.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SliceSpec {
    /// Rank of the leading `Any` (dimensions kept whole, outermost).
    pub any_rank: usize,
    /// The explicit components, outermost first.
    pub dims: Vec<SliceDim>,
}

impl SliceSpec {
    pub fn slice_rank(&self) -> usize {
        self.any_rank + self.dims.iter().filter(|d| **d == SliceDim::All).count()
    }
    pub fn full_rank(&self) -> usize {
        self.any_rank + self.dims.len()
    }
    pub fn fixed_count(&self) -> usize {
        self.dims.iter().filter(|d| **d == SliceDim::Fixed).count()
    }
}

/// A slice specifier type (Accelerate's `Slice` class): `Slice` is the
/// shape with the fixed dimensions removed, `Full` the shape with them.
pub trait SliceIx: IxTuple + Elt {
    type Slice: Shape;
    type Full: Shape;
    fn spec() -> SliceSpec;
}

impl SliceIx for Z {
    type Slice = Z;
    type Full = Z;
    fn spec() -> SliceSpec {
        SliceSpec { any_rank: 0, dims: vec![] }
    }
}

impl<Sh: Shape> SliceIx for Any<Sh> {
    type Slice = Sh;
    type Full = Sh;
    fn spec() -> SliceSpec {
        SliceSpec { any_rank: Sh::RANK, dims: vec![] }
    }
}

impl<S: SliceIx> SliceIx for Snoc<S> {
    type Slice = S::Slice;
    type Full = Snoc<S::Full>;
    fn spec() -> SliceSpec {
        let mut s = S::spec();
        s.dims.push(SliceDim::Fixed);
        s
    }
}

impl<S: SliceIx> SliceIx for SnocAll<S> {
    type Slice = Snoc<S::Slice>;
    type Full = Snoc<S::Full>;
    fn spec() -> SliceSpec {
        let mut s = S::spec();
        s.dims.push(SliceDim::All);
        s
    }
}

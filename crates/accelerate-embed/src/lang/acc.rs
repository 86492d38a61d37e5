//! `Acc<A>`: array computations and the collective operations that build
//! them (Accelerate's `Acc` and its smart constructors).

use super::exp::{lam1, lam2, Exp, IntoExp};
use super::graph::{self, Lam, NodeKind, NodeRef};
use accelerate_base::array::{Array, Arrays, Elt, Scalar, Shape, SliceIx, Snoc, Z};
use accelerate_base::error::SrcLoc;
use accelerate_ir::Direction;
use std::marker::PhantomData;

/// An array computation producing `A` (an array or a tuple of arrays): a
/// handle that shares a node of the program graph (Note [Reference-counted
/// handles] in `lang::graph`). The node, and the arrays it holds, are freed
/// when the last handle and the last computation using it are dropped.
pub struct Acc<A> {
    pub(crate) id: NodeRef,
    _ty: graph::HandleTy<A>,
}

impl<A> Clone for Acc<A> {
    fn clone(&self) -> Self {
        Acc { id: self.id.clone(), _ty: PhantomData }
    }
}

impl<A> std::fmt::Debug for Acc<A> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Acc#{}", graph::seq(&self.id))
    }
}

impl<A> Acc<A> {
    /// The node of the program graph this handle names (for the pipeline,
    /// which converts the graph from it).
    #[doc(hidden)]
    pub fn id(&self) -> &NodeRef {
        &self.id
    }

    /// Another reference to this handle's node.
    pub(crate) fn r(&self) -> NodeRef {
        self.id.clone()
    }
}

impl<A: Arrays> Acc<A> {
    pub(crate) fn from_id(id: NodeRef) -> Self {
        Acc { id, _ty: PhantomData }
    }

    pub(crate) fn node(kind: NodeKind<NodeRef>, loc: SrcLoc) -> Self {
        Self::from_id(graph::push(kind, loc))
    }

    /// A fresh variable of an array function.
    #[track_caller]
    #[doc(hidden)]
    pub fn param() -> Self {
        Self::node(NodeKind::AParam(A::arrays_ty()), SrcLoc::caller())
    }
}

/// An `Acc<A>` or a reference to one.
pub trait AsAcc<A> {
    fn as_acc(&self) -> Acc<A>;
}

impl<A> AsAcc<A> for Acc<A> {
    fn as_acc(&self) -> Acc<A> {
        self.clone()
    }
}

impl<A> AsAcc<A> for &Acc<A> {
    fn as_acc(&self) -> Acc<A> {
        (*self).clone()
    }
}

/// An `Acc<A>` or a reference to one: what `lift_acc` takes for each
/// component.
pub trait IntoAcc {
    type Out: Arrays;
    fn into_acc(self) -> Acc<Self::Out>;
}

impl<A: Arrays> IntoAcc for Acc<A> {
    type Out = A;
    fn into_acc(self) -> Acc<A> {
        self
    }
}

impl<A: Arrays> IntoAcc for &Acc<A> {
    type Out = A;
    fn into_acc(self) -> Acc<A> {
        self.clone()
    }
}

/// Embeds a host array in a computation (Accelerate's `use`). The data is
/// shared with `a`, not copied.
#[track_caller]
pub fn use_array<Sh: Shape, E: Elt>(a: Array<Sh, E>) -> Acc<Array<Sh, E>> {
    Acc::node(NodeKind::Use(a.data().clone()), SrcLoc::caller())
}

/// A rank-0 array holding one value.
#[track_caller]
pub fn unit<E: Elt>(e: impl IntoExp<E>) -> Acc<Scalar<E>> {
    let e = e.into_exp();
    Acc::node(NodeKind::Unit(e.id), SrcLoc::caller())
}

/// An array of the given shape whose element at each index is `f(index)`.
#[track_caller]
pub fn generate<Sh: Shape, E: Elt>(
    shape: impl IntoExp<Sh>,
    f: impl FnOnce(&Exp<Sh>) -> Exp<E>,
) -> Acc<Array<Sh, E>> {
    let shape = shape.into_exp();
    let f = lam1(f);
    Acc::node(NodeKind::Generate { shape: shape.id, f }, SrcLoc::caller())
}

/// An array of the given shape with every element `x`.
#[track_caller]
pub fn fill<Sh: Shape, E: Elt>(shape: impl IntoExp<Sh>, x: impl IntoExp<E>) -> Acc<Array<Sh, E>> {
    let x = x.into_exp();
    generate(shape, move |_| x)
}

/// The single element of a rank-0 array, as a scalar expression.
#[track_caller]
pub fn the<E: Elt>(a: impl AsAcc<Scalar<E>>) -> Exp<E> {
    a.as_acc().the()
}

/// `if c { t } else { e }` on array computations; only the branch taken is
/// computed.
#[track_caller]
pub fn acond<A: Arrays>(c: impl IntoExp<bool>, t: impl AsAcc<A>, e: impl AsAcc<A>) -> Acc<A> {
    let c = c.into_exp();
    Acc::node(NodeKind::Acond { cond: c.id, then_: t.as_acc().id, else_: e.as_acc().id }, SrcLoc::caller())
}

/// Starting from `init`, apply `body` while `pred` holds (Accelerate's
/// `awhile`).
#[track_caller]
pub fn awhile<A: Arrays>(
    pred: impl FnOnce(Acc<A>) -> Acc<Scalar<bool>>,
    body: impl FnOnce(Acc<A>) -> Acc<A>,
    init: impl AsAcc<A>,
) -> Acc<A> {
    let p = Acc::<A>::param();
    let pred = Lam { params: vec![p.r()], body: pred(p).id };
    let b = Acc::<A>::param();
    let body = Lam { params: vec![b.r()], body: body(b).id };
    Acc::node(NodeKind::Awhile { pred, body, init: init.as_acc().id }, SrcLoc::caller())
}

impl<E: Elt> Acc<Scalar<E>> {
    /// The single element, as a scalar expression.
    #[track_caller]
    pub fn the(&self) -> Exp<E> {
        self.index(super::exp::index0())
    }
}

impl<Sh: Shape, E: Elt> Acc<Array<Sh, E>> {
    /// Applies `f` to every element.
    #[track_caller]
    pub fn map<B: Elt>(&self, f: impl FnOnce(&Exp<E>) -> Exp<B>) -> Acc<Array<Sh, B>> {
        let f = lam1(f);
        Acc::node(NodeKind::Map { f, array: self.r() }, SrcLoc::caller())
    }

    /// Combines two arrays element-wise over the intersection of their shapes.
    #[track_caller]
    pub fn zip_with<B: Elt, C: Elt>(
        &self,
        other: impl AsAcc<Array<Sh, B>>,
        f: impl FnOnce(&Exp<E>, &Exp<B>) -> Exp<C>,
    ) -> Acc<Array<Sh, C>> {
        let f = lam2(f);
        Acc::node(NodeKind::ZipWith { f, a: self.r(), b: other.as_acc().id }, SrcLoc::caller())
    }

    /// Pairs the elements of two arrays.
    #[track_caller]
    pub fn zip<B: Elt>(&self, other: impl AsAcc<Array<Sh, B>>) -> Acc<Array<Sh, (E, B)>> {
        self.zip_with(other, |a, b| super::exp::lift((a, b)))
    }

    /// An array of shape `shape` whose element at `ix` is this array's
    /// element at `f(ix)`.
    #[track_caller]
    pub fn backpermute<Sh2: Shape>(
        &self,
        shape: impl IntoExp<Sh2>,
        f: impl FnOnce(&Exp<Sh2>) -> Exp<Sh>,
    ) -> Acc<Array<Sh2, E>> {
        self.backpermute_at(shape, f, SrcLoc::caller())
    }

    /// `backpermute` located at `loc` (a library operation's caller, with
    /// the check its reads stand for).
    #[track_caller]
    pub(crate) fn backpermute_at<Sh2: Shape>(
        &self,
        shape: impl IntoExp<Sh2>,
        f: impl FnOnce(&Exp<Sh2>) -> Exp<Sh>,
        loc: SrcLoc,
    ) -> Acc<Array<Sh2, E>> {
        let shape = shape.into_exp();
        let f = lam1(f);
        Acc::node(NodeKind::Backpermute { shape: shape.id, f, array: self.r() }, loc)
    }

    /// The same elements under a shape of the same size.
    #[track_caller]
    pub fn reshape<Sh2: Shape>(&self, shape: impl IntoExp<Sh2>) -> Acc<Array<Sh2, E>> {
        let shape = shape.into_exp();
        Acc::node(NodeKind::Reshape { shape: shape.id, array: self.r() }, SrcLoc::caller())
    }

    /// Replicates this array along the dimensions the slice index fixes.
    #[track_caller]
    pub fn replicate<S: SliceIx<Slice = Sh>>(&self, slix: impl IntoExp<S>) -> Acc<Array<S::Full, E>> {
        let slix = slix.into_exp();
        Acc::node(NodeKind::Replicate { spec: S::spec(), slix: slix.id, array: self.r() }, SrcLoc::caller())
    }

    /// The sub-array at the positions the slice index fixes.
    #[track_caller]
    pub fn slice<S: SliceIx<Full = Sh>>(&self, slix: impl IntoExp<S>) -> Acc<Array<S::Slice, E>> {
        let slix = slix.into_exp();
        Acc::node(NodeKind::Slice { spec: S::spec(), array: self.r(), slix: slix.id }, SrcLoc::caller())
    }

    /// Forward permutation: starting from `defaults`, each element at `ix`
    /// for which `index(ix)` is `just(jx)` is combined into position `jx`
    /// as `combine(new, old)`. `combine` is taken to be associative and
    /// commutative.
    #[track_caller]
    pub fn permute<Sh2: Shape>(
        &self,
        combine: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
        defaults: impl AsAcc<Array<Sh2, E>>,
        index: impl FnOnce(&Exp<Sh>) -> Exp<Option<Sh2>>,
    ) -> Acc<Array<Sh2, E>> {
        let combine = lam2(combine);
        let index = lam1(index);
        let kind = NodeKind::Permute { combine, defaults: defaults.as_acc().id, index, source: self.r() };
        Acc::node(kind, SrcLoc::caller())
    }

    /// The element at a multidimensional index (bounds checked at run time).
    #[track_caller]
    pub fn index(&self, ix: impl IntoExp<Sh>) -> Exp<E> {
        let ix = ix.into_exp();
        Exp::node(NodeKind::Index { array: self.r(), index: ix.id }, SrcLoc::caller())
    }

    /// The element at a row-major position (bounds checked at run time).
    #[track_caller]
    pub fn linear_index(&self, i: impl IntoExp<i64>) -> Exp<E> {
        let i = i.into_exp();
        Exp::node(NodeKind::LinearIndex { array: self.r(), index: i.id }, SrcLoc::caller())
    }

    /// The shape of the array.
    #[track_caller]
    pub fn shape(&self) -> Exp<Sh> {
        Exp::node(NodeKind::ShapeOf { array: self.r() }, SrcLoc::caller())
    }

    /// The number of elements.
    #[track_caller]
    pub fn size(&self) -> Exp<i64> {
        super::exp::shape_size(self.shape())
    }
}

impl<Sh: Shape, E: Elt> Acc<Array<Snoc<Sh>, E>> {
    #[track_caller]
    fn reduce(&self, f: Lam<NodeRef>, seed: Option<NodeRef>) -> Acc<Array<Sh, E>> {
        Acc::node(NodeKind::Fold { f, seed, array: self.r() }, SrcLoc::caller())
    }

    #[track_caller]
    fn scan(&self, dir: Direction, f: Lam<NodeRef>, seed: Option<NodeRef>) -> Acc<Array<Snoc<Sh>, E>> {
        Acc::node(NodeKind::Scan { dir, f, seed, array: self.r() }, SrcLoc::caller())
    }

    /// Reduces the innermost dimension with an associative operator and its
    /// seed; an empty row gives the seed.
    #[track_caller]
    pub fn fold(
        &self,
        seed: impl IntoExp<E>,
        f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Sh, E>> {
        let seed = seed.into_exp();
        self.reduce(lam2(f), Some(seed.id))
    }

    /// Reduces the innermost dimension without a seed; an empty row is an
    /// error at run time.
    #[track_caller]
    pub fn fold1(&self, f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>) -> Acc<Array<Sh, E>> {
        self.reduce(lam2(f), None)
    }

    #[track_caller]
    fn reduce_seg(
        &self,
        f: Lam<NodeRef>,
        seed: Option<NodeRef>,
        offsets: NodeRef,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        Acc::node(NodeKind::FoldSeg { f, seed, array: self.r(), offsets }, SrcLoc::caller())
    }

    /// Reduces each segment of the innermost dimension, the segments given
    /// by their lengths (which must sum to the row length, else
    /// `Error::BadSegments`); an empty segment gives the seed. The result's
    /// innermost extent is the number of segments.
    #[track_caller]
    pub fn fold_seg(
        &self,
        seed: impl IntoExp<E>,
        f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
        lengths: impl AsAcc<Array<Snoc<Z>, i64>>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let seed = seed.into_exp();
        let offsets = lengths.as_acc().scanl(0i64, |a, b| a + b);
        self.reduce_seg(lam2(f), Some(seed.id), offsets.id)
    }

    /// `fold_seg` without a seed: an empty segment is `Error::EmptyReduction`.
    #[track_caller]
    pub fn fold1_seg(
        &self,
        f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
        lengths: impl AsAcc<Array<Snoc<Z>, i64>>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let offsets = lengths.as_acc().scanl(0i64, |a, b| a + b);
        self.reduce_seg(lam2(f), None, offsets.id)
    }

    /// `fold_seg` with the segments given by `nseg + 1` offsets (segment
    /// `i` is `offsets[i] .. offsets[i+1]`, as a CSR row pointer): they
    /// must start at 0, not decrease, and end at the row length.
    #[track_caller]
    pub fn fold_seg_offsets(
        &self,
        seed: impl IntoExp<E>,
        f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
        offsets: impl AsAcc<Array<Snoc<Z>, i64>>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let seed = seed.into_exp();
        self.reduce_seg(lam2(f), Some(seed.id), offsets.as_acc().id)
    }

    /// `fold_seg_offsets` without a seed.
    #[track_caller]
    pub fn fold1_seg_offsets(
        &self,
        f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
        offsets: impl AsAcc<Array<Snoc<Z>, i64>>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        self.reduce_seg(lam2(f), None, offsets.as_acc().id)
    }

    /// Left-to-right inclusive scan starting with the seed: each row grows
    /// by one element (Haskell's `scanl`).
    #[track_caller]
    pub fn scanl(
        &self,
        seed: impl IntoExp<E>,
        f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let seed = seed.into_exp();
        self.scan(Direction::Left, lam2(f), Some(seed.id))
    }

    /// Left-to-right inclusive scan without a seed.
    #[track_caller]
    pub fn scanl1(&self, f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>) -> Acc<Array<Snoc<Sh>, E>> {
        self.scan(Direction::Left, lam2(f), None)
    }

    /// Right-to-left inclusive scan ending with the seed: each row grows by
    /// one element (Haskell's `scanr`).
    #[track_caller]
    pub fn scanr(
        &self,
        seed: impl IntoExp<E>,
        f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let seed = seed.into_exp();
        self.scan(Direction::Right, lam2(f), Some(seed.id))
    }

    /// Right-to-left inclusive scan without a seed.
    #[track_caller]
    pub fn scanr1(&self, f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>) -> Acc<Array<Snoc<Sh>, E>> {
        self.scan(Direction::Right, lam2(f), None)
    }
}

/// Builds a tuple of array computations.
pub trait LiftAcc {
    type Out: Arrays;
    fn lift_acc(self) -> Acc<Self::Out>;
}

/// Builds a tuple of array computations from a tuple of them.
#[track_caller]
pub fn lift_acc<L: LiftAcc>(t: L) -> Acc<L::Out> {
    t.lift_acc()
}

macro_rules! tuple_acc {
    ($($name:ident $idx:tt),+) => {
        impl<$($name: IntoAcc),+> LiftAcc for ($($name,)+) {
            type Out = ($($name::Out,)+);
            #[track_caller]
            fn lift_acc(self) -> Acc<Self::Out> {
                Acc::node(NodeKind::ATuple(vec![$(self.$idx.into_acc().id),+]), SrcLoc::caller())
            }
        }
        impl<$($name: Arrays),+> Acc<($($name,)+)> {
            /// The components of a tuple of array computations.
            #[track_caller]
            pub fn unlift(&self) -> ($(Acc<$name>,)+) {
                let loc = SrcLoc::caller();
                ($(Acc::<$name>::node(NodeKind::APrj($idx, self.r()), loc),)+)
            }
        }
    };
}

tuple_acc!(A 0, B 1);
tuple_acc!(A 0, B 1, C 2);
tuple_acc!(A 0, B 1, C 2, D 3);

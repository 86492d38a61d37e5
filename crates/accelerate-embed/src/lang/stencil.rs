//! Stencils (Accelerate's `stencil` and `stencil2`): each element of the
//! result is a function of a fixed neighbourhood of the same index in the
//! argument, with a boundary saying what is read outside the array.
//!
//! A pattern is a Rust array of expressions, as deep as the array's rank
//! and of odd extents, outermost dimension first: `[Exp<E>; 3]` is a
//! 3-point 1-D pattern, `[[Exp<E>; 5]; 5]` a 5x5 2-D one, `[[[Exp<E>; 3];
//! 3]; 3]` a 3x3x3 3-D one. The centre element is at the middle of each
//! dimension. An even extent does not compile.

use super::acc::{Acc, AsAcc};
use super::exp::{lam1, Exp, IntoExp};
use super::graph::{BoundaryNode, HandleTy, Lam, NodeKind, NodeRef, StencilNodeArg};
use accelerate_base::array::{Array, Elt, Shape, DIM1, DIM2, DIM3};
use accelerate_base::error::SrcLoc;

/// What a stencil reads outside its array.
pub struct Boundary<Sh, E> {
    node: BoundaryNode<NodeRef>,
    _ty: HandleTy<(Sh, E)>,
}

impl<Sh: Shape, E: Elt> Boundary<Sh, E> {
    fn new(node: BoundaryNode<NodeRef>) -> Self {
        Boundary { node, _ty: std::marker::PhantomData }
    }

    /// The nearest element inside the array.
    pub fn clamp() -> Self {
        Self::new(BoundaryNode::Clamp)
    }

    /// The element reflected at the edge, the edge not repeated (`-1`
    /// reads `1`, `n` reads `n - 2`).
    pub fn mirror() -> Self {
        Self::new(BoundaryNode::Mirror)
    }

    /// The element at the coordinates taken modulo the extents (periodic).
    pub fn wrap() -> Self {
        Self::new(BoundaryNode::Wrap)
    }

    /// A constant.
    #[track_caller]
    pub fn constant(x: impl IntoExp<E>) -> Self {
        Self::new(BoundaryNode::Constant(x.into_exp().id))
    }

    /// A function of the index read outside the array.
    #[track_caller]
    pub fn function(f: impl FnOnce(&Exp<Sh>) -> Exp<E>) -> Self {
        Self::new(BoundaryNode::Function(lam1(f)))
    }
}

/// A stencil pattern over arrays of shape `Sh`: a nest of Rust arrays of
/// `Exp<E>` of odd extents.
pub trait StencilPattern<Sh: Shape, E: Elt>: Sized {
    /// The extents, outermost first.
    fn extents() -> Vec<usize>;
    /// The pattern from its points in row-major order.
    fn from_points(points: &mut dyn Iterator<Item = Exp<E>>) -> Self;
}

fn next<E: Elt>(points: &mut dyn Iterator<Item = Exp<E>>) -> Exp<E> {
    points.next().expect("as many points as the pattern has")
}

impl<E: Elt, const N: usize> StencilPattern<DIM1, E> for [Exp<E>; N] {
    fn extents() -> Vec<usize> {
        const { assert!(N % 2 == 1, "stencil patterns have odd extents") };
        vec![N]
    }
    fn from_points(points: &mut dyn Iterator<Item = Exp<E>>) -> Self {
        std::array::from_fn(|_| next(points))
    }
}

impl<E: Elt, const R: usize, const C: usize> StencilPattern<DIM2, E> for [[Exp<E>; C]; R] {
    fn extents() -> Vec<usize> {
        const { assert!(R % 2 == 1 && C % 2 == 1, "stencil patterns have odd extents") };
        vec![R, C]
    }
    fn from_points(points: &mut dyn Iterator<Item = Exp<E>>) -> Self {
        std::array::from_fn(|_| std::array::from_fn(|_| next(points)))
    }
}

impl<E: Elt, const P: usize, const R: usize, const C: usize> StencilPattern<DIM3, E>
    for [[[Exp<E>; C]; R]; P]
{
    fn extents() -> Vec<usize> {
        const { assert!(P % 2 == 1 && R % 2 == 1 && C % 2 == 1, "stencil patterns have odd extents") };
        vec![P, R, C]
    }
    fn from_points(points: &mut dyn Iterator<Item = Exp<E>>) -> Self {
        std::array::from_fn(|_| std::array::from_fn(|_| std::array::from_fn(|_| next(points))))
    }
}

/// Fresh parameters for every point of a pattern.
#[track_caller]
fn pattern_params<Sh: Shape, E: Elt, P: StencilPattern<Sh, E>>() -> (Vec<usize>, Vec<Exp<E>>) {
    let extents = P::extents();
    let params = (0..extents.iter().product()).map(|_| Exp::<E>::param()).collect();
    (extents, params)
}

impl<Sh: Shape, E: Elt> Acc<Array<Sh, E>> {
    /// Applies `f` to the neighbourhood of every element. An array smaller
    /// than the pattern in some dimension (and not empty) is
    /// `Error::StencilTooSmall` at run time.
    #[track_caller]
    pub fn stencil<P: StencilPattern<Sh, E>, B: Elt>(
        &self,
        f: impl FnOnce(P) -> Exp<B>,
        boundary: Boundary<Sh, E>,
    ) -> Acc<Array<Sh, B>> {
        let (extents, params) = pattern_params::<Sh, E, P>();
        let body = f(P::from_points(&mut params.iter().cloned()));
        let f = Lam { params: params.iter().map(|p| p.r()).collect(), body: body.id };
        let args = vec![StencilNodeArg { extents, boundary: boundary.node, array: self.r() }];
        Acc::node(NodeKind::Stencil { f, args }, SrcLoc::caller())
    }

    /// Applies `f` to the neighbourhoods of the same index in this array and
    /// `other`, which must have the same shape (else
    /// `Error::ShapeMismatch` at run time).
    #[track_caller]
    pub fn stencil2<E2: Elt, P: StencilPattern<Sh, E>, Q: StencilPattern<Sh, E2>, B: Elt>(
        &self,
        boundary: Boundary<Sh, E>,
        other: impl AsAcc<Array<Sh, E2>>,
        other_boundary: Boundary<Sh, E2>,
        f: impl FnOnce(P, Q) -> Exp<B>,
    ) -> Acc<Array<Sh, B>> {
        let (e1, p1) = pattern_params::<Sh, E, P>();
        let (e2, p2) = pattern_params::<Sh, E2, Q>();
        let body = f(P::from_points(&mut p1.iter().cloned()), Q::from_points(&mut p2.iter().cloned()));
        let ids = p1.iter().map(|p| p.r()).chain(p2.iter().map(|p| p.r())).collect();
        let f = Lam { params: ids, body: body.id };
        let args = vec![
            StencilNodeArg { extents: e1, boundary: boundary.node, array: self.r() },
            StencilNodeArg { extents: e2, boundary: other_boundary.node, array: other.as_acc().id },
        ];
        Acc::node(NodeKind::Stencil { f, args }, SrcLoc::caller())
    }
}

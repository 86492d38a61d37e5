//! `Exp<T>`: scalar expressions, built by Rust code and Rust closures (the
//! host language is the meta-language: a Rust function over `Exp` values
//! is inlined where it is called, and its sharing recovered later).

use super::classes::{FloatElt, IntElt, NumElt};
use super::graph::{self, Lam, NodeKind, NodeRef};
use accelerate_base::array::{Any, Elt, IxTuple, PrimElt, Shape, SliceIx, Snoc, SnocAll, Val, Z};
use accelerate_base::error::SrcLoc;
use accelerate_ir::PrimFun;
use std::marker::PhantomData;

/// A scalar expression computing a `T`: a handle that shares a node of the
/// program graph (Note [Reference-counted handles] in `lang::graph`).
/// Cloning it is cheap; use `&x` or `x.clone()` to use a value twice.
pub struct Exp<T> {
    pub(crate) id: NodeRef,
    _ty: graph::HandleTy<T>,
}

impl<T> Clone for Exp<T> {
    fn clone(&self) -> Self {
        Exp { id: self.id.clone(), _ty: PhantomData }
    }
}

impl<T> std::fmt::Debug for Exp<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Exp#{}", graph::seq(&self.id))
    }
}

impl<T> Exp<T> {
    /// Another reference to this handle's node.
    pub(crate) fn r(&self) -> NodeRef {
        self.id.clone()
    }
}

impl<T: Elt> Exp<T> {
    pub(crate) fn from_id(id: NodeRef) -> Self {
        Exp { id, _ty: PhantomData }
    }

    pub(crate) fn node(kind: NodeKind<NodeRef>, loc: SrcLoc) -> Self {
        Self::from_id(graph::push(kind, loc))
    }

    /// A fresh variable of a scalar function.
    pub(crate) fn param() -> Self {
        Self::node(NodeKind::Param(T::elt_ty()), SrcLoc::caller())
    }
}

/// Values usable where an `Exp<T>` is expected: an `Exp<T>` itself or a
/// plain Rust value of type `T` (a literal).
pub trait IntoExp<T> {
    fn into_exp(self) -> Exp<T>;
}

impl<T: Elt> IntoExp<T> for Exp<T> {
    fn into_exp(self) -> Exp<T> {
        self
    }
}

impl<T: Elt> IntoExp<T> for &Exp<T> {
    fn into_exp(self) -> Exp<T> {
        self.clone()
    }
}

/// An `Exp<T>` or a reference to one: what `lift` takes for each
/// component.
pub trait LiftArg {
    type T: Elt;
    fn into_lift_arg(self) -> Exp<Self::T>;
}

impl<T: Elt> LiftArg for Exp<T> {
    type T = T;
    fn into_lift_arg(self) -> Exp<T> {
        self
    }
}

impl<T: Elt> LiftArg for &Exp<T> {
    type T = T;
    fn into_lift_arg(self) -> Exp<T> {
        self.clone()
    }
}

impl<T: Elt> IntoExp<T> for T {
    #[track_caller]
    fn into_exp(self) -> Exp<T> {
        constant(self)
    }
}

fn const_node(v: &Val, loc: SrcLoc) -> NodeRef {
    match v {
        Val::Scalar(s) => graph::push(NodeKind::Const(*s), loc),
        Val::Tuple(vs) => {
            let ids = vs.iter().map(|x| const_node(x, loc)).collect();
            graph::push(NodeKind::Tuple(ids), loc)
        }
    }
}

/// A constant expression.
#[track_caller]
pub fn constant<T: Elt>(x: T) -> Exp<T> {
    Exp::from_id(const_node(&x.to_val(), SrcLoc::caller()))
}

#[track_caller]
pub(crate) fn prim<T: Elt>(op: PrimFun, args: Vec<NodeRef>) -> Exp<T> {
    Exp::node(NodeKind::Prim(op, args), SrcLoc::caller())
}

/// Builds the graph of a scalar function of one argument by calling the
/// closure once with a symbolic argument (higher-order abstract syntax).
#[track_caller]
pub(crate) fn lam1<A: Elt, B: Elt>(f: impl FnOnce(&Exp<A>) -> Exp<B>) -> Lam<NodeRef> {
    let a = Exp::<A>::param();
    let body = f(&a);
    Lam { params: vec![a.id], body: body.id }
}

#[track_caller]
pub(crate) fn lam2<A: Elt, B: Elt, C: Elt>(f: impl FnOnce(&Exp<A>, &Exp<B>) -> Exp<C>) -> Lam<NodeRef> {
    let a = Exp::<A>::param();
    let b = Exp::<B>::param();
    let body = f(&a, &b);
    Lam { params: vec![a.id, b.id], body: body.id }
}

// ---------------------------------------------------------------------------
// Comparisons, selection, loops

impl<T: PrimElt> Exp<T> {
    #[track_caller]
    fn compare(&self, op: PrimFun, other: impl IntoExp<T>) -> Exp<bool> {
        prim(op, vec![self.r(), other.into_exp().id])
    }
    #[track_caller]
    pub fn lt(&self, other: impl IntoExp<T>) -> Exp<bool> {
        self.compare(PrimFun::Lt, other)
    }
    #[track_caller]
    pub fn le(&self, other: impl IntoExp<T>) -> Exp<bool> {
        self.compare(PrimFun::Le, other)
    }
    #[track_caller]
    pub fn gt(&self, other: impl IntoExp<T>) -> Exp<bool> {
        self.compare(PrimFun::Gt, other)
    }
    #[track_caller]
    pub fn ge(&self, other: impl IntoExp<T>) -> Exp<bool> {
        self.compare(PrimFun::Ge, other)
    }
    /// `==` of the language (IEEE for floats: NaN is not equal to itself).
    #[track_caller]
    pub fn eq(&self, other: impl IntoExp<T>) -> Exp<bool> {
        self.compare(PrimFun::Eq, other)
    }
    #[track_caller]
    pub fn ne(&self, other: impl IntoExp<T>) -> Exp<bool> {
        self.compare(PrimFun::Ne, other)
    }

    /// Rust's `as` conversion (float to integer saturates, NaN gives 0).
    #[track_caller]
    pub fn cast<U: NumElt>(&self) -> Exp<U> {
        prim(PrimFun::Cast(U::TY), vec![self.r()])
    }
}

impl Exp<bool> {
    /// `if self { t } else { e }`; only the branch taken is evaluated.
    #[track_caller]
    pub fn select<T: Elt>(&self, t: impl IntoExp<T>, e: impl IntoExp<T>) -> Exp<T> {
        cond(self, t, e)
    }

    /// Short-circuiting `&&`.
    #[track_caller]
    pub fn and(&self, other: impl IntoExp<bool>) -> Exp<bool> {
        prim(PrimFun::LAnd, vec![self.r(), other.into_exp().id])
    }

    /// Short-circuiting `||`.
    #[track_caller]
    pub fn or(&self, other: impl IntoExp<bool>) -> Exp<bool> {
        prim(PrimFun::LOr, vec![self.r(), other.into_exp().id])
    }
}

/// `if c { t } else { e }`; only the branch taken is evaluated.
#[track_caller]
pub fn cond<T: Elt>(c: impl IntoExp<bool>, t: impl IntoExp<T>, e: impl IntoExp<T>) -> Exp<T> {
    let (c, t, e) = (c.into_exp(), t.into_exp(), e.into_exp());
    Exp::node(NodeKind::Cond(c.id, t.id, e.id), SrcLoc::caller())
}

/// A scalar loop: starting from `init`, apply `body` while `cond` holds.
#[track_caller]
pub fn while_loop<T: Elt>(
    init: impl IntoExp<T>,
    cond: impl FnOnce(&Exp<T>) -> Exp<bool>,
    body: impl FnOnce(&Exp<T>) -> Exp<T>,
) -> Exp<T> {
    let init = init.into_exp();
    let cond = lam1(cond);
    let body = lam1(body);
    Exp::node(NodeKind::While { cond, body, init: init.id }, SrcLoc::caller())
}

// ---------------------------------------------------------------------------
// Numbers and math

impl<T: NumElt> Exp<T> {
    #[track_caller]
    pub fn min(&self, other: impl IntoExp<T>) -> Exp<T> {
        prim(PrimFun::Min, vec![self.r(), other.into_exp().id])
    }
    #[track_caller]
    pub fn max(&self, other: impl IntoExp<T>) -> Exp<T> {
        prim(PrimFun::Max, vec![self.r(), other.into_exp().id])
    }
    /// Absolute value (wrapping for the most negative integer).
    #[track_caller]
    pub fn abs(&self) -> Exp<T> {
        prim(PrimFun::Abs, vec![self.r()])
    }
    /// -1, 0 or 1 (for floats: Rust's `signum`, which gives ±1 for ±0 and NaN for NaN).
    #[track_caller]
    pub fn signum(&self) -> Exp<T> {
        prim(PrimFun::Signum, vec![self.r()])
    }
}

macro_rules! float_unary {
    ($($name:ident => $op:ident),* $(,)?) => {
        impl<T: FloatElt> Exp<T> {
            $(
                #[track_caller]
                pub fn $name(&self) -> Exp<T> {
                    prim(PrimFun::$op, vec![self.r()])
                }
            )*
        }
    };
}

float_unary!(
    sqrt => Sqrt, exp => Exp, ln => Log, sin => Sin, cos => Cos, tan => Tan,
    asin => Asin, acos => Acos, atan => Atan, sinh => Sinh, cosh => Cosh, tanh => Tanh,
    floor => Floor, ceil => Ceil, round => Round, trunc => Trunc,
);

impl<T: FloatElt> Exp<T> {
    #[track_caller]
    pub fn is_nan(&self) -> Exp<bool> {
        prim(PrimFun::IsNan, vec![self.r()])
    }
    #[track_caller]
    pub fn is_infinite(&self) -> Exp<bool> {
        prim(PrimFun::IsInfinite, vec![self.r()])
    }
    #[track_caller]
    pub fn atan2(&self, other: impl IntoExp<T>) -> Exp<T> {
        prim(PrimFun::Atan2, vec![self.r(), other.into_exp().id])
    }
    #[track_caller]
    pub fn powf(&self, other: impl IntoExp<T>) -> Exp<T> {
        prim(PrimFun::Powf, vec![self.r(), other.into_exp().id])
    }
    #[track_caller]
    pub fn powi(&self, n: impl IntoExp<i32>) -> Exp<T> {
        prim(PrimFun::Powi, vec![self.r(), n.into_exp().id])
    }
    /// Logarithm to the given base.
    #[track_caller]
    pub fn log_base(&self, base: impl IntoExp<T>) -> Exp<T> {
        prim(PrimFun::LogBase, vec![self.r(), base.into_exp().id])
    }
}

impl<T: IntElt> Exp<T> {
    /// Truncating division (Rust's `/`); a zero divisor is an error at run time.
    #[track_caller]
    pub fn quot(&self, other: impl IntoExp<T>) -> Exp<T> {
        prim(PrimFun::Quot, vec![self.r(), other.into_exp().id])
    }
}

// ---------------------------------------------------------------------------
// Tuples

/// Builds a tuple expression from a tuple of expressions (Accelerate's
/// `lift`).
pub trait Lift {
    type Out: Elt;
    fn lift(self) -> Exp<Self::Out>;
}

/// Builds a tuple expression from a tuple of expressions (a literal is
/// written `constant(x)`).
#[track_caller]
pub fn lift<L: Lift>(t: L) -> Exp<L::Out> {
    t.lift()
}

macro_rules! tuple_exp {
    ($($name:ident $var:ident $idx:tt),+) => {
        impl<$($name: LiftArg),+> Lift for ($($name,)+) {
            type Out = ($($name::T,)+);
            #[track_caller]
            fn lift(self) -> Exp<Self::Out> {
                Exp::node(NodeKind::Tuple(vec![$(self.$idx.into_lift_arg().id),+]), SrcLoc::caller())
            }
        }
        impl<$($name: Elt),+> Exp<($($name,)+)> {
            /// The components of a tuple expression (Accelerate's `unlift`).
            #[track_caller]
            pub fn unlift(&self) -> ($(Exp<$name>,)+) {
                let loc = SrcLoc::caller();
                ($(Exp::<$name>::node(NodeKind::Prj($idx, self.r()), loc),)+)
            }
        }
    };
}

tuple_exp!(A a 0, B b 1);
tuple_exp!(A a 0, B b 1, C c 2);
tuple_exp!(A a 0, B b 1, C c 2, D d 3);
tuple_exp!(A a 0, B b 1, C c 2, D d 3, E e 4);
tuple_exp!(A a 0, B b 1, C c 2, D d 3, E e 4, F f 5);
tuple_exp!(A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6);
tuple_exp!(A a 0, B b 1, C c 2, D d 3, E e 4, F f 5, G g 6, H h 7);

impl<A: Elt, B: Elt> Exp<(A, B)> {
    #[track_caller]
    pub fn fst(&self) -> Exp<A> {
        Exp::node(NodeKind::Prj(0, self.r()), SrcLoc::caller())
    }
    #[track_caller]
    pub fn snd(&self) -> Exp<B> {
        Exp::node(NodeKind::Prj(1, self.r()), SrcLoc::caller())
    }
}

/// `Some(x)` as an expression (Note [Representing options]).
#[track_caller]
pub fn just<T: Elt>(x: impl IntoExp<T>) -> Exp<Option<T>> {
    let loc = SrcLoc::caller();
    let tag = graph::push(NodeKind::Const(accelerate_base::array::ScalarVal::Bool(true)), loc);
    Exp::node(NodeKind::Tuple(vec![tag, x.into_exp().id]), loc)
}

/// `None` as an expression.
#[track_caller]
pub fn nothing<T: Elt>() -> Exp<Option<T>> {
    constant(None::<T>)
}

impl<T: Elt> Exp<Option<T>> {
    #[track_caller]
    pub fn is_just(&self) -> Exp<bool> {
        Exp::node(NodeKind::Prj(0, self.r()), SrcLoc::caller())
    }
    /// The payload (the zero of `T` for `None`).
    #[track_caller]
    pub fn from_just(&self) -> Exp<T> {
        Exp::node(NodeKind::Prj(1, self.r()), SrcLoc::caller())
    }
}

// ---------------------------------------------------------------------------
// Shapes and indices

fn ix_components<S: IxTuple>(e: NodeRef, loc: SrcLoc) -> Vec<NodeRef> {
    (0..S::COMPONENTS).map(|i| graph::push(NodeKind::Prj(i, e.clone()), loc)).collect()
}

/// The index (or shape) of rank 0.
#[track_caller]
pub fn index0() -> Exp<Z> {
    Exp::node(NodeKind::Tuple(vec![]), SrcLoc::caller())
}

#[track_caller]
pub fn index1(i: impl IntoExp<i64>) -> Exp<Snoc<Z>> {
    Exp::node(NodeKind::Tuple(vec![i.into_exp().id]), SrcLoc::caller())
}

#[track_caller]
pub fn index2(i: impl IntoExp<i64>, j: impl IntoExp<i64>) -> Exp<Snoc<Snoc<Z>>> {
    let (i, j) = (i.into_exp(), j.into_exp());
    Exp::node(NodeKind::Tuple(vec![i.id, j.id]), SrcLoc::caller())
}

#[track_caller]
pub fn index3(i: impl IntoExp<i64>, j: impl IntoExp<i64>, k: impl IntoExp<i64>) -> Exp<Snoc<Snoc<Snoc<Z>>>> {
    let (i, j, k) = (i.into_exp(), j.into_exp(), k.into_exp());
    Exp::node(NodeKind::Tuple(vec![i.id, j.id, k.id]), SrcLoc::caller())
}

#[track_caller]
pub fn unindex1(ix: impl IntoExp<Snoc<Z>>) -> Exp<i64> {
    let ix = ix.into_exp();
    Exp::node(NodeKind::Prj(0, ix.id), SrcLoc::caller())
}

#[track_caller]
pub fn unindex2(ix: impl IntoExp<Snoc<Snoc<Z>>>) -> (Exp<i64>, Exp<i64>) {
    let ix = ix.into_exp();
    let loc = SrcLoc::caller();
    let [i, j] = <[NodeRef; 2]>::try_from(ix_components::<Snoc<Snoc<Z>>>(ix.id, loc)).expect("rank 2");
    (Exp::from_id(i), Exp::from_id(j))
}

#[track_caller]
pub fn unindex3(ix: impl IntoExp<Snoc<Snoc<Snoc<Z>>>>) -> (Exp<i64>, Exp<i64>, Exp<i64>) {
    let ix = ix.into_exp();
    let loc = SrcLoc::caller();
    let [i, j, k] =
        <[NodeRef; 3]>::try_from(ix_components::<Snoc<Snoc<Snoc<Z>>>>(ix.id, loc)).expect("rank 3");
    (Exp::from_id(i), Exp::from_id(j), Exp::from_id(k))
}

impl<Sh: Shape> Exp<Snoc<Sh>> {
    /// The outer dimensions and the innermost component (Accelerate's
    /// `indexTail` and `indexHead`).
    #[track_caller]
    pub fn split(&self) -> (Exp<Sh>, Exp<i64>) {
        let loc = SrcLoc::caller();
        let mut c = ix_components::<Snoc<Sh>>(self.r(), loc);
        let head = c.pop().expect("rank at least 1");
        (Exp::node(NodeKind::Tuple(c), loc), Exp::from_id(head))
    }

    /// The innermost component.
    #[track_caller]
    pub fn head(&self) -> Exp<i64> {
        Exp::node(NodeKind::Prj(Sh::RANK, self.r()), SrcLoc::caller())
    }
}

impl<Sh: Shape> Exp<Sh> {
    /// This shape with one more innermost dimension.
    #[track_caller]
    pub fn snoc(&self, n: impl IntoExp<i64>) -> Exp<Snoc<Sh>> {
        let loc = SrcLoc::caller();
        let mut c = ix_components::<Sh>(self.r(), loc);
        c.push(n.into_exp().id);
        Exp::node(NodeKind::Tuple(c), loc)
    }
}

/// The slice specifier that keeps every dimension of `Sh` (Accelerate's
/// `Any`), to be extended with `.all()` and `.fixed(n)`.
#[track_caller]
pub fn any_dims<Sh: Shape>() -> Exp<Any<Sh>> {
    Exp::node(NodeKind::Tuple(vec![]), SrcLoc::caller())
}

impl<S: SliceIx> Exp<S> {
    /// This slice specifier followed by a dimension kept whole (`:. All`).
    #[track_caller]
    pub fn all(&self) -> Exp<SnocAll<S>> {
        // `All` has no run-time component: the value is unchanged
        Exp::from_id(self.r())
    }

    /// This slice specifier followed by a dimension fixed at `n` (`:. n`):
    /// for `replicate`, a new dimension of extent `n`; for `slice`, the
    /// position `n` of that dimension. `n` may be computed at run time.
    #[track_caller]
    pub fn fixed(&self, n: impl IntoExp<i64>) -> Exp<Snoc<S>> {
        let loc = SrcLoc::caller();
        let mut c = ix_components::<S>(self.r(), loc);
        c.push(n.into_exp().id);
        Exp::node(NodeKind::Tuple(c), loc)
    }
}

/// The row-major position of `ix` in an array of shape `sh`.
#[track_caller]
pub fn to_index<Sh: Shape>(sh: impl IntoExp<Sh>, ix: impl IntoExp<Sh>) -> Exp<i64> {
    prim(PrimFun::ToIndex, vec![sh.into_exp().id, ix.into_exp().id])
}

/// The index at row-major position `i` of an array of shape `sh`.
#[track_caller]
pub fn from_index<Sh: Shape>(sh: impl IntoExp<Sh>, i: impl IntoExp<i64>) -> Exp<Sh> {
    prim(PrimFun::FromIndex, vec![sh.into_exp().id, i.into_exp().id])
}

/// The component-wise minimum of two shapes.
#[track_caller]
pub fn intersect<Sh: Shape>(a: impl IntoExp<Sh>, b: impl IntoExp<Sh>) -> Exp<Sh> {
    prim(PrimFun::Intersect, vec![a.into_exp().id, b.into_exp().id])
}

/// The number of elements of an array of shape `sh`.
#[track_caller]
pub fn shape_size<Sh: Shape>(sh: impl IntoExp<Sh>) -> Exp<i64> {
    prim(PrimFun::ShapeSize, vec![sh.into_exp().id])
}

// ---------------------------------------------------------------------------
// Support for `#[derive(Elt)]` on user structs (a struct is a tuple of its
// fields to the IR). Not for direct use.

/// An expression of any element type, for building structs from fields.
#[doc(hidden)]
#[derive(Clone, Debug)]
pub struct AnyExp {
    id: NodeRef,
}

impl<T: Elt> From<Exp<T>> for AnyExp {
    fn from(e: Exp<T>) -> Self {
        AnyExp { id: e.id }
    }
}

impl<T: Elt> From<&Exp<T>> for AnyExp {
    fn from(e: &Exp<T>) -> Self {
        AnyExp { id: e.r() }
    }
}

impl<T: Elt> Exp<T> {
    /// Field `index` of a struct (or component of a tuple) expression.
    #[doc(hidden)]
    #[track_caller]
    pub fn __field<F: Elt>(&self, index: usize) -> Exp<F> {
        Exp::node(NodeKind::Prj(index, self.r()), SrcLoc::caller())
    }

    /// A struct expression from its fields' expressions, in order. The
    /// derive guarantees the fields' types; the verifier checks them.
    #[doc(hidden)]
    #[track_caller]
    pub fn __from_fields(fields: &[AnyExp]) -> Exp<T> {
        Exp::node(NodeKind::Tuple(fields.iter().map(|f| f.id.clone()).collect()), SrcLoc::caller())
    }
}

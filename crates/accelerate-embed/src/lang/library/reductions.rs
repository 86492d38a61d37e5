//! Reductions and scans of Accelerate's `Prelude`: whole-array folds,
//! the named reductions along the innermost dimension (`sum`, `maximum`,
//! `all`, ...) and the exclusive and inclusive scans with a seed
//! (`prescanl`, `postscanl`, `scanl_`, ...).
//!
//! Every operation here is built from the primitives (`fold`, `fold1`,
//! `scanl`, `scanr`, `map`, `reshape`, `backpermute`) and adds no IR
//! construct. As for the primitives, the operators are taken to be
//! associative: a parallel backend may group them differently, so float
//! results may differ from the interpreter's sequential order in the last
//! bits (docs/semantics.md). The interpreter's results are exactly those
//! of the sequential definitions given in each function's documentation.
//!
//! The scans with a seed and a result of the input's length are slices of
//! `scanl`/`scanr` (whose rows are one longer), not Accelerate's
//! definitions by `scanl1` and a final `map`: the seed is combined first
//! (leftmost for `scanl`, rightmost for `scanr`), exactly as in the
//! sequential definition, whatever the operator.

use crate::lang::acc::{lift_acc, Acc};
use crate::lang::exp::{constant, Exp, IntoExp};
use crate::lang::NumElt;
use accelerate_base::array::{Array, Elt, Scalar, Shape, Snoc};

/// What [`Acc::scanl_`] and [`Acc::scanr_`] compute: an exclusive scan
/// (rows of the input's length) and, separately, each row's total.
pub type ScanAndTotals<Sh, E> = (Array<Snoc<Sh>, E>, Array<Sh, E>);

/// The number `x` (0 or 1 here) in the numeric type `E`, by the
/// language's cast (exact for 0 and 1 in every numeric type), so that no
/// list of element types is repeated here.
#[track_caller]
fn num_lit<E: NumElt>(x: i64) -> Exp<E> {
    constant(x).cast::<E>()
}

impl<Sh: Shape, E: Elt> Acc<Array<Sh, E>> {
    /// Reduces the whole array, of any rank, to one value (Accelerate's
    /// `foldAll`): `f(.. f(f(z, x0), x1) .., x(k-1))` over the elements in
    /// row-major order; an empty array gives `z`.
    #[track_caller]
    pub fn fold_all(&self, z: impl IntoExp<E>, f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>) -> Acc<Scalar<E>> {
        self.flatten().fold(z, f)
    }

    /// Reduces the whole array, of any rank, to one value without a seed
    /// (Accelerate's `fold1All`). An empty array (any extent 0):
    /// `Error::EmptyReduction`, naming the flattened shape `[0]`.
    #[track_caller]
    pub fn fold1_all(&self, f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>) -> Acc<Scalar<E>> {
        self.flatten().fold1(f)
    }
}

impl<Sh: Shape, E: NumElt> Acc<Array<Snoc<Sh>, E>> {
    /// The sum of every row of the innermost dimension (Accelerate's
    /// `sum`: `fold (+) 0`). Integers wrap. For floats the seed is `+0.0`,
    /// so an empty row sums to `+0.0` and a row of `-0.0`s to `+0.0`
    /// (as Accelerate and XLA's `reduce_sum`).
    #[track_caller]
    pub fn sum(&self) -> Acc<Array<Sh, E>> {
        self.fold(num_lit::<E>(0), |a, b| a + b)
    }

    /// The product of every row of the innermost dimension (Accelerate's
    /// `product`: `fold (*) 1`). Integers wrap; an empty row gives 1.
    #[track_caller]
    pub fn product(&self) -> Acc<Array<Sh, E>> {
        self.fold(num_lit::<E>(1), |a, b| a * b)
    }

    /// The largest element of every row (Accelerate's `maximum`:
    /// `fold1 max`), by the language's `max` (Rust's `f32::max`: a NaN is
    /// ignored unless every element of the row is NaN). An empty row (with
    /// at least one row): `Error::EmptyReduction`.
    #[track_caller]
    pub fn maximum(&self) -> Acc<Array<Sh, E>> {
        self.fold1(|a, b| a.max(b))
    }

    /// The smallest element of every row (Accelerate's `minimum`:
    /// `fold1 min`); NaNs as for [`maximum`](Self::maximum). An empty row
    /// (with at least one row): `Error::EmptyReduction`.
    #[track_caller]
    pub fn minimum(&self) -> Acc<Array<Sh, E>> {
        self.fold1(|a, b| a.min(b))
    }
}

impl<Sh: Shape> Acc<Array<Snoc<Sh>, bool>> {
    /// Whether every element of each row is true (Accelerate's `and`); an
    /// empty row gives `true`.
    #[track_caller]
    pub fn and(&self) -> Acc<Array<Sh, bool>> {
        self.fold(true, |a, b| a.and(b))
    }

    /// Whether some element of each row is true (Accelerate's `or`); an
    /// empty row gives `false`.
    #[track_caller]
    pub fn or(&self) -> Acc<Array<Sh, bool>> {
        self.fold(false, |a, b| a.or(b))
    }
}

impl<Sh: Shape, E: Elt> Acc<Array<Snoc<Sh>, E>> {
    /// Whether `pred` holds for every element of each row (Accelerate's
    /// `all`); an empty row gives `true`.
    #[track_caller]
    pub fn all(&self, pred: impl FnOnce(&Exp<E>) -> Exp<bool>) -> Acc<Array<Sh, bool>> {
        self.map(pred).and()
    }

    /// Whether `pred` holds for some element of each row (Accelerate's
    /// `any`); an empty row gives `false`.
    #[track_caller]
    pub fn any(&self, pred: impl FnOnce(&Exp<E>) -> Exp<bool>) -> Acc<Array<Sh, bool>> {
        self.map(pred).or()
    }

    /// `scanl` without its last element: the exclusive left scan, rows of
    /// the input's length (Accelerate's `prescanl`):
    /// `[z, f(z, x0), f(f(z, x0), x1), .., f(..(f(z, x0)..), x(n-2))]`. An
    /// empty row stays empty.
    #[track_caller]
    pub fn prescanl(
        &self,
        z: impl IntoExp<E>,
        f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        self.scanl(z, f).backpermute(self.shape(), |ix| ix.clone())
    }

    /// `scanl` without its first element: the inclusive left scan with the
    /// seed folded in, rows of the input's length (Accelerate's
    /// `postscanl`): `[f(z, x0), f(f(z, x0), x1), ..]`, element `i` being
    /// the fold of `z, x0 .. xi` from the left. An empty row stays empty.
    #[track_caller]
    pub fn postscanl(
        &self,
        z: impl IntoExp<E>,
        f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        self.scanl(z, f).backpermute(self.shape(), |ix| {
            let (outer, i) = ix.split();
            outer.snoc(i + 1)
        })
    }

    /// `scanr` without its first element: the exclusive right scan, rows of
    /// the input's length (Accelerate's `prescanr`): element `i` is the
    /// fold from the right of `x(i+1) .. x(n-1), z`, so the last is `z`:
    /// `[.., f(x(n-1), z), z]`. An empty row stays empty.
    #[track_caller]
    pub fn prescanr(
        &self,
        z: impl IntoExp<E>,
        f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        self.scanr(z, f).backpermute(self.shape(), |ix| {
            let (outer, i) = ix.split();
            outer.snoc(i + 1)
        })
    }

    /// `scanr` without its last element: the inclusive right scan with the
    /// seed folded in, rows of the input's length (Accelerate's
    /// `postscanr`): element `i` is `f(xi, f(x(i+1), .. f(x(n-1), z)))`.
    /// An empty row stays empty.
    #[track_caller]
    pub fn postscanr(
        &self,
        z: impl IntoExp<E>,
        f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        self.scanr(z, f).backpermute(self.shape(), |ix| ix.clone())
    }

    /// Accelerate's `scanl'`: the exclusive left scan
    /// ([`prescanl`](Self::prescanl)) and, separately, each row's total
    /// (its `fold`, the element `scanl` puts last), from one `scanl`. The
    /// totals have the outer shape; an empty row's total is `z`.
    #[track_caller]
    pub fn scanl_(
        &self,
        z: impl IntoExp<E>,
        f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<ScanAndTotals<Sh, E>> {
        let sh = self.shape();
        let (outer, n) = sh.split();
        let s = self.scanl(z, f);
        let pre = s.backpermute(&sh, |ix| ix.clone());
        let totals = s.backpermute(outer, move |o| o.snoc(n));
        lift_acc((pre, totals))
    }

    /// Accelerate's `scanr'`: the exclusive right scan
    /// ([`prescanr`](Self::prescanr)) and, separately, each row's total
    /// (the element `scanr` puts first, the fold from the right of
    /// `x0 .. x(n-1), z`), from one `scanr`. The totals have the outer
    /// shape; an empty row's total is `z`.
    #[track_caller]
    pub fn scanr_(
        &self,
        z: impl IntoExp<E>,
        f: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<ScanAndTotals<Sh, E>> {
        let sh = self.shape();
        let (outer, _) = sh.split();
        let s = self.scanr(z, f);
        let pre = s.backpermute(sh, |ix| {
            let (outer, i) = ix.split();
            outer.snoc(i + 1)
        });
        let totals = s.backpermute(outer, |o| o.snoc(constant(0i64)));
        lift_acc((pre, totals))
    }
}

//! Index-space operations of Accelerate's `Prelude`: moving, selecting,
//! joining and numbering elements, and zipping arrays together.
//!
//! Every operation here is built from the primitives (`generate`, `map`,
//! `zip_with`, `backpermute`, `reshape`) and adds no IR construct, so every
//! backend runs them and fusion (ICFP'13 §4) sees only producers: a
//! `reverse`, `take` or `transpose` fuses into whatever reads it. Reads of
//! an array's shape (as in `xs.reverse()`) do not block that fusion;
//! `append` and `concat_on` read their arguments with `index` under a
//! guard, as Accelerate's `(++)` does.
//!
//! Conventions (docs/semantics-library-index.md has the full rules):
//!
//! - Operations on "the innermost dimension" (`reverse`, `take`, `drop`,
//!   `slit`, `init`, `tail`, `append`, `length`) work at every rank of at
//!   least one: an array of shape `[.., n]` is a batch of rows of length
//!   `n`, each treated as Accelerate treats a vector.
//! - Counts and starts are checked, never clamped (Accelerate clamps; we
//!   follow the design rule that out-of-range indexing is an error): see
//!   Note [Checked windows].
//! - Operations of two or more arrays take the intersection of their
//!   shapes, as `zip_with` does.

use crate::lang::acc::{generate, Acc, AsAcc};
use crate::lang::exp::{cond, constant, index1, intersect, lift, to_index, AnyExp, Exp, IntoExp};
use crate::lang::NumElt;
use accelerate_base::array::{Array, Elt, Shape, Snoc, Vector};
use accelerate_base::error::{CheckKind, SrcLoc};

// Note [Checked windows]
// `take`, `drop`, `slit`, `init` and `tail` keep a contiguous window
// `start .. start + count` of every row. A window that does not fit in the
// row (a negative count or start, or one running past the end) is an
// error, and must be one whatever the other extents are: `take(5)` of an
// array of shape [0, 3] has no element to read, yet is as wrong as
// `take(5)` of one of shape [2, 3]. So the validity test `ok` depends only
// on the innermost extent and the arguments, and an invalid window becomes
// a backpermute of shape [1, .., 1] whose one element reads position
// `bad` of row 0: a position outside the row (negative, or at least the
// row's length), so the read always fails, at the backpermute, whose
// source location is the user's line and carries the check the read
// stands for (Note [Checks planted by library operations] in
// `accelerate-base`): the error is `Error::InvalidArgument` naming the
// operation and `bad`. `bad` is chosen to explain the failure: the
// negative argument itself, or the last position the window would need. Negative extents are never formed,
// so the error is the same for every way a window can be wrong.
//
// A valid window is the plain backpermute `ix -> ix + start` (innermost
// component); the only extra work per element is the choice of offset,
// which does not depend on the element.

/// An index of rank `Sh` with every component `x`.
#[track_caller]
fn uniform<Sh: Shape>(x: i64) -> Exp<Sh> {
    constant(Sh::from_slice(&vec![x; Sh::RANK]))
}

/// Component `k` (outermost first) of a shape or index.
#[track_caller]
fn component<Sh: Shape>(ix: &Exp<Sh>, k: usize) -> Exp<i64> {
    ix.__field::<i64>(k)
}

/// `ix` with component `k` (outermost first) replaced by `x`.
#[track_caller]
fn with_component<Sh: Shape>(ix: &Exp<Sh>, k: usize, x: Exp<i64>) -> Exp<Sh> {
    let fields: Vec<AnyExp> =
        (0..Sh::RANK).map(|j| if j == k { (&x).into() } else { component(ix, j).into() }).collect();
    Exp::__from_fields(&fields)
}

/// Concatenation along dimension `axis` (outermost first), intersecting
/// the other dimensions. The caller guarantees `axis < Sh::RANK`.
#[track_caller]
fn concat_along<Sh: Shape, E: Elt>(
    xs: Acc<Array<Sh, E>>,
    ys: Acc<Array<Sh, E>>,
    axis: usize,
) -> Acc<Array<Sh, E>> {
    let (sx, sy) = (xs.shape(), ys.shape());
    let n = component(&sx, axis);
    let m = component(&sy, axis);
    let shape = with_component(&intersect(sx, sy), axis, &n + m);
    generate(shape, move |ix| {
        let i = component(ix, axis);
        cond(i.lt(&n), xs.index(ix), ys.index(with_component(ix, axis, i - n)))
    })
}

impl<Sh: Shape, E: Elt> Acc<Array<Sh, E>> {
    /// A backpermute followed by a map, as one operation (Accelerate's
    /// `transform`): the result has shape `shape` and its element at `ix`
    /// is `f(self[p(ix)])`. An index `p(ix)` outside this array:
    /// `Error::IndexOutOfBounds`.
    #[track_caller]
    pub fn transform<Sh2: Shape, B: Elt>(
        &self,
        shape: impl IntoExp<Sh2>,
        p: impl FnOnce(&Exp<Sh2>) -> Exp<Sh>,
        f: impl FnOnce(&Exp<E>) -> Exp<B>,
    ) -> Acc<Array<Sh2, B>> {
        self.backpermute(shape, p).map(f)
    }

    /// The elements in row-major order as a vector of length `size`
    /// (Accelerate's `flatten`). A rank-0 array gives a vector of one.
    #[track_caller]
    pub fn flatten(&self) -> Acc<Vector<E>> {
        self.reshape(index1(self.size()))
    }

    /// Each element paired with its index (Accelerate's `indexed`).
    #[track_caller]
    pub fn indexed(&self) -> Acc<Array<Sh, (Sh, E)>> {
        self.imap(|ix, x| lift((ix, x)))
    }

    /// `map` whose function also receives the element's index
    /// (Accelerate's `imap`).
    #[track_caller]
    pub fn imap<B: Elt>(&self, f: impl FnOnce(&Exp<Sh>, &Exp<E>) -> Exp<B>) -> Acc<Array<Sh, B>> {
        generate(self.shape(), |ix| ix.clone()).zip_with(self, f)
    }

    /// `zip_with` whose function also receives the index (Accelerate's
    /// `izipWith`); the shape is the intersection of the two shapes.
    #[track_caller]
    pub fn izip_with<B: Elt, C: Elt>(
        &self,
        other: impl AsAcc<Array<Sh, B>>,
        f: impl FnOnce(&Exp<Sh>, &Exp<E>, &Exp<B>) -> Exp<C>,
    ) -> Acc<Array<Sh, C>> {
        zip_with3(generate(self.shape(), |ix| ix.clone()), self, other, f)
    }

    /// Concatenation along dimension `AXIS`, counted from the outermost (0)
    /// as in the shape `[n0, n1, ..]` (NumPy's and JAX's `axis`;
    /// Accelerate's `concatOn` names dimensions from the innermost with
    /// lenses instead). The result's extent along `AXIS` is the sum of the
    /// two; along every other dimension it is the minimum of the two (the
    /// intersection, as `zip_with` and Accelerate's `concatOn`). Elements
    /// of `self` come first. `AXIS` must be less than the rank: a larger
    /// one is a compile-time error.
    ///
    /// ```
    /// # use accelerate::prelude::*;
    /// let a = Matrix::from_vec(dim2(1, 2), vec![1, 2])?;
    /// let b = Matrix::from_vec(dim2(2, 2), vec![3, 4, 5, 6])?;
    /// let r = accelerate::run(&use_array(a).concat_on::<0>(use_array(b)))?;
    /// assert_eq!(r.dims(), &[3, 2]);
    /// assert_eq!(r.to_vec(), vec![1, 2, 3, 4, 5, 6]);
    /// # Ok::<(), accelerate::Error>(())
    /// ```
    #[track_caller]
    pub fn concat_on<const AXIS: usize>(&self, other: impl AsAcc<Array<Sh, E>>) -> Acc<Array<Sh, E>> {
        const { assert!(AXIS < Sh::RANK, "concat_on: the axis must be less than the rank") };
        concat_along(self.clone(), other.as_acc(), AXIS)
    }

    /// Whether the array has no elements (Accelerate's `null`).
    #[track_caller]
    pub fn null(&self) -> Exp<bool> {
        self.size().eq(0)
    }
}

impl<Sh: Shape, E: Elt> Acc<Array<Snoc<Sh>, E>> {
    /// The innermost extent: the length of a vector, the length of each
    /// row at higher rank (Accelerate's `length`, which is for vectors).
    #[track_caller]
    pub fn length(&self) -> Exp<i64> {
        self.shape().head()
    }

    /// Every row of the innermost dimension reversed (Accelerate's
    /// `reverse`, which is for vectors). Same shape.
    #[track_caller]
    pub fn reverse(&self) -> Acc<Array<Snoc<Sh>, E>> {
        let sh = self.shape();
        let n = sh.head();
        self.backpermute(sh, move |ix| {
            let (outer, i) = ix.split();
            outer.snoc(n - 1 - i)
        })
    }

    /// The window `start .. start + count` of every row, or, when `ok` is
    /// false, the failing read of Note [Checked windows] at position `bad`.
    #[track_caller]
    fn window(
        &self,
        op: &'static str,
        ok: Exp<bool>,
        start: Exp<i64>,
        count: Exp<i64>,
        bad: Exp<i64>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let (outer, _) = self.shape().split();
        let shape = cond(&ok, outer.snoc(count), uniform::<Snoc<Sh>>(1));
        let offset = cond(ok, start, bad);
        let loc = SrcLoc::caller().checking(op, CheckKind::Window);
        self.backpermute_at(
            shape,
            move |ix| {
                let (outer, i) = ix.split();
                outer.snoc(i + offset)
            },
            loc,
        )
    }

    /// The first `n` elements of every row (Accelerate's `take`, for the
    /// innermost dimension): shape `[.., n]`. `n` must be in `0 ..= len`
    /// (`len` the innermost extent), whatever the other extents are:
    /// otherwise `Error::InvalidArgument` naming `n` if it is negative and
    /// `n - 1` if it is past the end.
    /// Accelerate clamps `n` instead.
    #[track_caller]
    pub fn take(&self, n: impl IntoExp<i64>) -> Acc<Array<Snoc<Sh>, E>> {
        let n = n.into_exp();
        let len = self.length();
        let ok = n.ge(0) & n.le(len);
        let bad = cond(n.lt(0), &n, &n - 1);
        self.window("take", ok, constant(0i64), n, bad)
    }

    /// Every row without its first `n` elements (Accelerate's `drop`, for
    /// the innermost dimension): shape `[.., len - n]`. `n` must be in
    /// `0 ..= len`, whatever the other extents are: otherwise
    /// `Error::InvalidArgument` naming `n` if it is negative and `n - 1` if
    /// it is past the end. Accelerate clamps
    /// `n` instead.
    #[track_caller]
    pub fn drop(&self, n: impl IntoExp<i64>) -> Acc<Array<Snoc<Sh>, E>> {
        let n = n.into_exp();
        let len = self.length();
        let ok = n.ge(0) & n.le(&len);
        let bad = cond(n.lt(0), &n, &n - 1);
        self.window("drop", ok, n.clone(), len - n, bad)
    }

    /// The `n` elements of every row starting at position `i` (Accelerate's
    /// `slit`, `take n . drop i`): shape `[.., n]`. Requires `0 <= i`,
    /// `0 <= n` and `i + n <= len`, whatever the other extents are:
    /// otherwise `Error::InvalidArgument` naming `i` if it is negative, else `n` if that is negative, else the
    /// first position the window would read past the end, `max(i, len)`
    /// (never a number computed with overflow). Accelerate clamps instead.
    #[track_caller]
    pub fn slit(&self, i: impl IntoExp<i64>, n: impl IntoExp<i64>) -> Acc<Array<Snoc<Sh>, E>> {
        let (i, n) = (i.into_exp(), n.into_exp());
        let len = self.length();
        let ok = i.ge(0) & n.ge(0) & i.le(&len) & n.le(&len - &i);
        let bad = cond(i.lt(0), &i, cond(n.lt(0), &n, cond(i.gt(&len), &i, len)));
        self.window("slit", ok, i, n, bad)
    }

    /// Every row without its last element (Accelerate's `init`): shape
    /// `[.., len - 1]`. An empty row (`len == 0`, whatever the other
    /// extents are): `Error::InvalidArgument` naming position 0.
    /// Accelerate gives an empty row instead.
    #[track_caller]
    pub fn init(&self) -> Acc<Array<Snoc<Sh>, E>> {
        let len = self.length();
        self.window("init", len.ge(1), constant(0i64), &len - 1, constant(0i64))
    }

    /// Every row without its first element (Accelerate's `tail`): shape
    /// `[.., len - 1]`. An empty row (`len == 0`, whatever the other
    /// extents are): `Error::InvalidArgument` naming position 0.
    /// Accelerate gives an empty row instead.
    #[track_caller]
    pub fn tail(&self) -> Acc<Array<Snoc<Sh>, E>> {
        let len = self.length();
        self.window("tail", len.ge(1), constant(1i64), &len - 1, constant(0i64))
    }

    /// Concatenation along the innermost dimension (Accelerate's `(++)`):
    /// shape `[.., n + m]` for shapes `[.., n]` and `[.., m]`, the outer
    /// extents being the minimum of the two (the intersection, as
    /// `zip_with`). Each row is `self`'s row followed by `other`'s.
    #[track_caller]
    pub fn append(&self, other: impl AsAcc<Array<Snoc<Sh>, E>>) -> Acc<Array<Snoc<Sh>, E>> {
        concat_along(self.clone(), other.as_acc(), Sh::RANK)
    }
}

impl<Sh: Shape, E: Elt> Acc<Array<Snoc<Snoc<Sh>>, E>> {
    /// The transpose of a matrix (Accelerate's `transpose`): shape
    /// `[c, r]` for `[r, c]`, element `(j, i)` is `self[(i, j)]`. At higher
    /// rank, every matrix of the two innermost dimensions is transposed
    /// (JAX's `jnp.swapaxes(x, -1, -2)`).
    #[track_caller]
    pub fn transpose(&self) -> Acc<Array<Snoc<Snoc<Sh>>, E>> {
        let (rest, c) = self.shape().split();
        let (outer, r) = rest.split();
        self.backpermute(outer.snoc(c).snoc(r), |ix| {
            let (rest, i) = ix.split();
            let (outer, j) = rest.split();
            outer.snoc(i).snoc(j)
        })
    }
}

macro_rules! unzip_impl {
    ($name:ident, $($t:ident $idx:tt),+) => {
        impl<Sh: Shape, $($t: Elt),+> Acc<Array<Sh, ($($t,)+)>> {
            /// The components of an array of tuples, as separate arrays of
            /// the same shape (Accelerate's `unzip`, `unzip3`, `unzip4`).
            #[track_caller]
            pub fn $name(&self) -> ($(Acc<Array<Sh, $t>>,)+) {
                ($(self.map(|p| p.__field::<$t>($idx)),)+)
            }
        }
    };
}

unzip_impl!(unzip, A 0, B 1);
unzip_impl!(unzip3, A 0, B 1, C 2);
unzip_impl!(unzip4, A 0, B 1, C 2, D 3);

/// Combines three arrays element-wise over the intersection of their
/// shapes (Accelerate's `zipWith3`).
#[track_caller]
pub fn zip_with3<Sh: Shape, A: Elt, B: Elt, C: Elt, R: Elt>(
    xs: impl AsAcc<Array<Sh, A>>,
    ys: impl AsAcc<Array<Sh, B>>,
    zs: impl AsAcc<Array<Sh, C>>,
    f: impl FnOnce(&Exp<A>, &Exp<B>, &Exp<C>) -> Exp<R>,
) -> Acc<Array<Sh, R>> {
    xs.as_acc().zip(ys).zip_with(zs, |xy, z| {
        let (x, y) = xy.unlift();
        f(&x, &y, z)
    })
}

/// Combines four arrays element-wise over the intersection of their
/// shapes (Accelerate's `zipWith4`).
#[track_caller]
pub fn zip_with4<Sh: Shape, A: Elt, B: Elt, C: Elt, D: Elt, R: Elt>(
    xs: impl AsAcc<Array<Sh, A>>,
    ys: impl AsAcc<Array<Sh, B>>,
    zs: impl AsAcc<Array<Sh, C>>,
    ws: impl AsAcc<Array<Sh, D>>,
    f: impl FnOnce(&Exp<A>, &Exp<B>, &Exp<C>, &Exp<D>) -> Exp<R>,
) -> Acc<Array<Sh, R>> {
    xs.as_acc().zip(ys).zip_with(zs.as_acc().zip(ws), |xy, zw| {
        let (x, y) = xy.unlift();
        let (z, w) = zw.unlift();
        f(&x, &y, &z, &w)
    })
}

/// Triples of the elements of three arrays, over the intersection of
/// their shapes (Accelerate's `zip3`).
#[track_caller]
pub fn zip3<Sh: Shape, A: Elt, B: Elt, C: Elt>(
    xs: impl AsAcc<Array<Sh, A>>,
    ys: impl AsAcc<Array<Sh, B>>,
    zs: impl AsAcc<Array<Sh, C>>,
) -> Acc<Array<Sh, (A, B, C)>> {
    zip_with3(xs, ys, zs, |x, y, z| lift((x, y, z)))
}

/// Quadruples of the elements of four arrays, over the intersection of
/// their shapes (Accelerate's `zip4`).
#[track_caller]
pub fn zip4<Sh: Shape, A: Elt, B: Elt, C: Elt, D: Elt>(
    xs: impl AsAcc<Array<Sh, A>>,
    ys: impl AsAcc<Array<Sh, B>>,
    zs: impl AsAcc<Array<Sh, C>>,
    ws: impl AsAcc<Array<Sh, D>>,
) -> Acc<Array<Sh, (A, B, C, D)>> {
    zip_with4(xs, ys, zs, ws, |x, y, z, w| lift((x, y, z, w)))
}

/// An array of shape `shape` holding `x, x + 1, x + 2, ..` in row-major
/// order (Accelerate's `enumFromN`): the element at row-major position
/// `i` is `x + (i as E)`, with Rust's `as` and the language's arithmetic
/// (integers wrap; floats round, so large positions lose precision).
#[track_caller]
pub fn enum_from_n<Sh: Shape, E: NumElt>(shape: impl IntoExp<Sh>, x: impl IntoExp<E>) -> Acc<Array<Sh, E>> {
    let (shape, x) = (shape.into_exp(), x.into_exp());
    generate(&shape, |ix| x + to_index(&shape, ix).cast::<E>())
}

/// An array of shape `shape` holding `x, x + step, x + 2 * step, ..` in
/// row-major order (Accelerate's `enumFromStepN`): the element at
/// row-major position `i` is `x + (i as E) * step`, with Rust's `as` and
/// the language's arithmetic (integers wrap; floats round once for the
/// product and once for the sum).
#[track_caller]
pub fn enum_from_step_n<Sh: Shape, E: NumElt>(
    shape: impl IntoExp<Sh>,
    x: impl IntoExp<E>,
    step: impl IntoExp<E>,
) -> Acc<Array<Sh, E>> {
    let (shape, x, step) = (shape.into_exp(), x.into_exp(), step.into_exp());
    generate(&shape, |ix| x + to_index(&shape, ix).cast::<E>() * step)
}

//! Data-dependent movement: `gather` and `scatter` (with their masked
//! forms), stream compaction (`filter`, `compact`) and `expand`
//! (Accelerate's `Data.Array.Accelerate.Prelude` operations of those
//! names), built from `backpermute`, `permute`, the scans and producers.
//!
//! Where Accelerate leaves a case undefined (an index out of range, two
//! elements scattered to one place, a negative count) these operations
//! define it: an out-of-range read or write is `Error::IndexOutOfBounds`,
//! as every `index`/`backpermute`/`permute` is; `scatter` keeps the element
//! with the largest source index (Note [Deterministic scatter]); a
//! negative `expand` count is an error (Note [Negative expand counts]).
//! `docs/semantics-library-gather.md` states the rules in one place.

use super::compact_native;
use super::segmented::{index_at, saturating_add, zero_of};
use crate::lang::acc::{fill, generate, lift_acc, Acc, AsAcc};
use crate::lang::exp::{
    cond, constant, index1, intersect, just, lift, nothing, shape_size, to_index, unindex1, Exp,
};
use crate::lang::foreign::Foreign;
use accelerate_base::array::{Array, Arrays, Elt, Shape, Snoc, Vector};
use accelerate_base::error::{CheckKind, SrcLoc};

/// `result[ix] = source[indices[ix]]`: reads the source at every index of
/// `indices` (Accelerate's `gather`). The result has the shape of
/// `indices`, of any rank.
///
/// An index outside `source` (negative included) is
/// `Error::IndexOutOfBounds` naming that index and the source's shape.
///
/// ```text
/// gather([1, 3, 7, 2, 5, 3], [1, 9, 6, 4, 4, 2, 0, 1, 2]) == [9, 4, 1, 6, 2, 4]
/// ```
#[track_caller]
pub fn gather<Sh: Shape, E: Elt>(
    indices: impl AsAcc<Array<Sh, i64>>,
    source: impl AsAcc<Vector<E>>,
) -> Acc<Array<Sh, E>> {
    let indices = indices.as_acc();
    source.as_acc().backpermute(indices.shape(), move |ix| index1(indices.index(ix)))
}

/// A masked `gather` (Accelerate's `gatherIf`): where `pred(mask[i])`
/// holds, `source[indices[i]]`, elsewhere `defaults[i]`. The result's
/// length is the smallest of the lengths of `indices`, `mask` and
/// `defaults` (the intersection, as `zip_with` takes).
///
/// The source is read only where the predicate holds, so indices at
/// masked-off positions may be anything; an index read outside `source`
/// is `Error::IndexOutOfBounds`.
///
/// ```text
/// gather_if([1, 3, 7, 2, 5, 3], [3, 4, 9, 2, 7, 5], |m| m > 4,
///           [6, 6, 6, 6, 6, 6], [1, 9, 6, 4, 4, 2, 0, 1, 2]) == [6, 6, 1, 6, 2, 4]
/// ```
#[track_caller]
pub fn gather_if<A: Elt, B: Elt>(
    indices: impl AsAcc<Vector<i64>>,
    mask: impl AsAcc<Vector<A>>,
    pred: impl FnOnce(&Exp<A>) -> Exp<bool>,
    defaults: impl AsAcc<Vector<B>>,
    source: impl AsAcc<Vector<B>>,
) -> Acc<Vector<B>> {
    let loc = SrcLoc::caller();
    let (indices, mask, defaults, source) =
        (indices.as_acc(), mask.as_acc(), defaults.as_acc(), source.as_acc());
    let sh = intersect(intersect(indices.shape(), mask.shape()), defaults.shape());
    generate(sh, move |ix| {
        cond(pred(&mask.index(ix)), index_at(&source, index1(indices.index(ix)), loc), defaults.index(ix))
    })
}

// Note [Deterministic scatter]
// Accelerate's `scatter` is `permute const`, whose result is undefined when
// two source elements target one position. Ours keeps the element with the
// largest source index, as a sequential loop `for i { out[to[i]] = x[i] }`
// would (and as NumPy's `out[to] = x` does in practice). The permutation
// moves `(source index, value)` pairs into the defaults paired with -1 and
// combines by keeping the pair with the larger index: `max` on distinct
// keys, associative and commutative, so every backend order gives the same
// answer. The cost is one `i64` per element moved and per default.
//
// The result is the `permute` itself (then `map`), not a later read of it:
// a target out of range is reported even when `defaults` is empty, where
// a read-back would never look (Note [Deferred errors] in
// `backend/interp/scalar.rs`).

/// `defaults` overwritten by `source[i]` at `targets[i]` for `i < n` where
/// `keep(i)` holds, the largest `i` winning at each target.
#[track_caller]
fn scatter_last<E: Elt>(
    targets: Acc<Vector<i64>>,
    n: Exp<i64>,
    keep: impl FnOnce(&Exp<i64>) -> Exp<bool>,
    defaults: Acc<Vector<E>>,
    source: Acc<Vector<E>>,
) -> Acc<Vector<E>> {
    let keyed = generate(index1(n), move |ix| lift((unindex1(ix), source.index(ix))));
    let keyed_defaults = defaults.map(|d| lift((constant(-1i64), d)));
    let combine = |new: &Exp<(i64, E)>, old: &Exp<(i64, E)>| cond(new.fst().gt(old.fst()), new, old);
    keyed
        .permute(combine, keyed_defaults, move |ix| {
            cond(keep(&unindex1(ix)), just(index1(targets.index(ix))), nothing())
        })
        .map(|p| p.snd())
}

/// `result = defaults`, then `result[indices[i]] = source[i]` for every `i`
/// below the smaller of the two lengths (Accelerate's `scatter`). The
/// result has the shape of `defaults`.
///
/// When several elements target one position, the one with the largest
/// source index `i` is kept, as a sequential loop would (Note
/// [Deterministic scatter]; Accelerate leaves this undefined). A target
/// outside `defaults` (negative included) is `Error::IndexOutOfBounds`.
///
/// ```text
/// scatter([1, 3, 7, 2, 5, 8], [0; 10], [1, 9, 6, 4, 4, 2, 5]) == [0, 1, 4, 9, 0, 4, 0, 6, 2, 0]
/// scatter([0, 0], [7], [1, 2]) == [2]
/// ```
#[track_caller]
pub fn scatter<E: Elt>(
    indices: impl AsAcc<Vector<i64>>,
    defaults: impl AsAcc<Vector<E>>,
    source: impl AsAcc<Vector<E>>,
) -> Acc<Vector<E>> {
    let (indices, defaults, source) = (indices.as_acc(), defaults.as_acc(), source.as_acc());
    let n = indices.shape().head().min(source.shape().head());
    scatter_last(indices, n, |_| constant(true), defaults, source)
}

/// A masked `scatter` (Accelerate's `scatterIf`): as [`scatter`], but
/// element `i` is written only where `pred(mask[i])` holds. Elements are
/// taken up to the smallest of the lengths of `indices`, `mask` and
/// `source`. Targets of masked-off elements are not checked; a written
/// target outside `defaults` is `Error::IndexOutOfBounds`. Several writes
/// to one position keep the largest source index.
///
/// ```text
/// scatter_if([1, 3, 7, 2, 5, 8], [3, 4, 9, 2, 7, 5], |m| m > 4,
///            [0; 10], [1, 9, 6, 4, 4, 2, 5]) == [0, 0, 0, 0, 0, 4, 0, 6, 2, 0]
/// ```
#[track_caller]
pub fn scatter_if<A: Elt, B: Elt>(
    indices: impl AsAcc<Vector<i64>>,
    mask: impl AsAcc<Vector<A>>,
    pred: impl FnOnce(&Exp<A>) -> Exp<bool>,
    defaults: impl AsAcc<Vector<B>>,
    source: impl AsAcc<Vector<B>>,
) -> Acc<Vector<B>> {
    let (indices, mask, defaults, source) =
        (indices.as_acc(), mask.as_acc(), defaults.as_acc(), source.as_acc());
    let n = indices.shape().head().min(mask.shape().head()).min(source.shape().head());
    scatter_last(indices, n, move |i| pred(&mask.index(index1(i))), defaults, source)
}

/// Keeps the elements whose `mask` entry is `true`, row by row along the
/// innermost dimension (Accelerate's `compact`). Returns the kept elements
/// of all rows, in row-major order, as one vector, and the number kept in
/// each row (an array of the outer shape: a `Scalar` for a vector input).
/// `mask` and `xs` are taken over the intersection of their shapes.
///
/// ```text
/// compact([true, false, true], [1, 2, 3]) == ([1, 3], [2])
/// compact([[t, f], [t, t]], [[1, 2], [3, 4]]) == ([1, 3, 4], [1, 2])
/// ```
///
/// The interpreter and the CPU backend compact natively; other backends
/// run the compaction written in the language (`compact_in_language`;
/// Note [A native compaction]).
#[track_caller]
pub fn compact<Sh: Shape, E: Elt>(
    mask: impl AsAcc<Array<Snoc<Sh>, bool>>,
    xs: impl AsAcc<Array<Snoc<Sh>, E>>,
) -> Acc<(Vector<E>, Array<Sh, i64>)> {
    type In<Sh, E> = (Array<Snoc<Sh>, bool>, Array<Snoc<Sh>, E>);
    let native = Foreign::<In<Sh, E>, (Vector<E>, Array<Sh, i64>)>::new("compact").host(|(mask, xs)| {
        let (kept, counts) = compact_native::compact(mask.data(), xs.data())?;
        let kept = Vector::from_arrays_val(kept).map_err(|e| e.to_string())?;
        Ok((kept, Array::from_arrays_val(counts).map_err(|e| e.to_string())?))
    });
    native.call(
        |args| {
            let (mask, xs) = args.unlift();
            compact_in_language(mask, xs)
        },
        lift_acc((mask.as_acc(), xs.as_acc())),
    )
}

/// `compact` as the language writes it: an exclusive scan of the flags
/// places the kept elements, a `permute` moves them (the fallback of the
/// native compaction).
#[track_caller]
pub fn compact_in_language<Sh: Shape, E: Elt>(
    mask: impl AsAcc<Array<Snoc<Sh>, bool>>,
    xs: impl AsAcc<Array<Snoc<Sh>, E>>,
) -> Acc<(Vector<E>, Array<Sh, i64>)> {
    let (mask, xs) = (mask.as_acc(), xs.as_acc());
    let sh = intersect(mask.shape(), xs.shape());
    let (outer, n) = sh.split();
    // Position of each kept element within its row (exclusive sums of the
    // 0/1 flags), and the row's count at the end of each scanned row.
    let within = generate(&sh, |ix| cond(mask.index(ix), 1i64, 0i64)).scanl(0i64, |a, b| a + b);
    let counts = generate(&outer, |o| within.index(o.snoc(n)));
    let rows = shape_size(&outer);
    let row_starts = counts.reshape(index1(&rows)).scanl(0i64, |a, b| a + b);
    let total = row_starts.index(index1(rows));
    // Each target receives exactly one element, so the combining function
    // is never applied to two source elements.
    let kept = xs.backpermute(&sh, |ix| ix.clone()).permute(
        |new, _old| new.clone(),
        fill(index1(total), zero_of::<E>()),
        |ix| {
            let (o, _) = ix.split();
            let target = row_starts.index(index1(to_index(outer, o))) + within.index(ix);
            cond(mask.index(ix), just(index1(target)), nothing())
        },
    );
    lift_acc((kept, counts))
}

impl<Sh: Shape, E: Elt> Acc<Array<Snoc<Sh>, E>> {
    /// Keeps the elements that satisfy `pred`, row by row along the
    /// innermost dimension (Accelerate's `filter`): the kept elements of
    /// all rows in row-major order, and the number kept in each row (for a
    /// vector, a `Scalar` holding the length of the first array). See
    /// [`compact`].
    ///
    /// ```text
    /// [1, 2, 3, 4, 5].filter(even) == ([2, 4], [2])
    /// ```
    #[track_caller]
    pub fn filter(&self, pred: impl FnOnce(&Exp<E>) -> Exp<bool>) -> Acc<(Vector<E>, Array<Sh, i64>)> {
        compact(self.map(pred), self)
    }
}

// Note [Negative expand counts]
// Accelerate's `expand` leaves a negative count undefined. Ours reports it
// as `Error::InvalidArgument` naming the count, by reading the array of
// counts at the negative count, a read that stands for that check (Note
// [Checks planted by library operations] in `accelerate-base`), as
// NumPy's `repeat` rejects negative repeats: a negative count is almost
// always a bug, and `count(x).max(0)` states the other intent. Counts are
// summed with saturation (Note [Checking segment descriptors] in
// `segmented.rs`), so a total past `i64::MAX` is too large to allocate
// (`Error::ShapeTooLarge`) instead of wrapping to a small, wrong length.

/// Expands every element `x` of `xs` into `count(x)` elements
/// `gen(x, 0), gen(x, 1), ..., gen(x, count(x) - 1)`, concatenated in order
/// (Accelerate 1.3's `expand`; Elsman, Henriksen and Serup, *Data-parallel
/// flattening by expansion*). A count of 0 contributes nothing.
///
/// A negative count `c` is `Error::InvalidArgument` naming `c` and the
/// shape of `xs` (Note [Negative expand counts]).
///
/// ```text
/// expand(|x| x, |x, j| x * 10 + j, [2, 0, 3]) == [20, 21, 30, 31, 32]
/// ```
#[track_caller]
pub fn expand<A: Elt, B: Elt>(
    count: impl FnOnce(&Exp<A>) -> Exp<i64>,
    gen: impl FnOnce(&Exp<A>, &Exp<i64>) -> Exp<B>,
    xs: impl AsAcc<Vector<A>>,
) -> Acc<Vector<B>> {
    let loc = SrcLoc::caller().checking("expand", CheckKind::NegativeCount);
    let xs = xs.as_acc();
    let raw = xs.map(count);
    let checked = raw.clone();
    let counts = raw.map(move |c| cond(c.ge(0i64), c, index_at(&checked, index1(c), loc)));
    let offsets = counts.scanl(0i64, saturating_add);
    let n = xs.shape().head();
    let m = offsets.index(index1(&n));
    // The source of every output position: each non-empty element writes
    // its index at its offset (distinct offsets, one writer each), and an
    // inclusive `max` scan carries it over the rest of its run.
    let starts = generate(index1(&n), |ix| unindex1(ix)).permute(
        |new, old| new.max(old),
        fill(index1(&m), 0i64),
        |ix| cond(counts.index(ix).gt(0i64), just(index1(offsets.index(ix))), nothing()),
    );
    let owners = starts.scanl(0i64, |a, b| a.max(b));
    generate(index1(m), move |ix| {
        let k = unindex1(ix);
        let i = owners.index(index1(&k + 1i64));
        gen(&xs.index(index1(&i)), &(&k - offsets.index(index1(i))))
    })
}

//! Segmented scans along the innermost dimension (Accelerate's `scanlSeg`
//! family), built from `permute`, the unsegmented scans and producers, as
//! Blelloch's flattening does (thesis 002, §2.1; Blelloch, *Scans as
//! primitive parallel operations*; Sengupta et al., *Scan primitives for GPU
//! computing*).
//!
//! A segmented array is a flat array plus a *segment descriptor*: here, as
//! in Accelerate, a `Vector<i64>` of segment **lengths** (the thesis's
//! "size segment descriptor"). `[3, 2, 0, 1]` splits a row of 6 elements
//! into `[x0 x1 x2] [x3 x4] [] [x5]`. At rank above 1 every row of the
//! innermost dimension is split by the same descriptor.
//!
//! The algorithm, in three steps:
//!
//! 1. Offsets: the exclusive prefix sums of the lengths (`scanl (+) 0`), the
//!    thesis's "offset segment descriptor". Head flags: `permute` writes
//!    `true` at the offset of every non-empty segment.
//! 2. A segmented scan is one ordinary inclusive scan over `(flag, value)`
//!    pairs with the lifted operator
//!    `(fa, a) ⊕ (fb, b) = (fa || fb, if fb { b } else { f(a, b) })`,
//!    which is associative whenever `f` is (right-to-left scans use tail
//!    flags and the mirror image). The seeded forms first inject the seed
//!    at the head (tail) of each segment, so that the interpreter, which
//!    scans left to right, computes exactly the sequential
//!    `f(..f(f(z, x0), x1).., xk)`.
//! 3. Exclusive scans, per-segment totals and the one-longer `scanl_seg`
//!    rows are read back out of the inclusive scan with `generate`, using
//!    the offsets (and, for `scanl_seg`/`scanr_seg`, a segment index per
//!    output position, again from a `permute` and a scan).
//!
//! Every operation checks its descriptor (Note [Checking segment
//! descriptors]).

use crate::lang::acc::{fill, generate, lift_acc, Acc, AsAcc};
use crate::lang::exp::{cond, constant, index1, just, lift, nothing, unindex1, Exp, IntoExp};
use crate::lang::graph::NodeKind;
use accelerate_base::array::{Array, Elt, Shape, Snoc, Val, Vector};
use accelerate_base::error::{CheckKind, SrcLoc};

// Note [Checking segment descriptors]
// The primitives have no assertion, so a descriptor is checked by making
// the result depend on a read that is out of bounds exactly when the
// descriptor is wrong, at a location that carries the check it stands for
// (Note [Checks planted by library operations] in `accelerate-base`'s
// `error.rs`): every backend reports the read, and the error the user
// sees is `Error::BadSegments` naming the operation, located at the
// user's call of it.
//
// * A negative length `l` (at any position): the checked lengths are
//   `lengths.map(|l| if l >= 0 { l } else { lengths[l] })`, so the read's
//   index is `[l]` and its shape that of the lengths, `[s]`: "the segment
//   lengths include a negative length, l".
// * Lengths summing to `total` while the rows have `n` elements: the head
//   flags are built with extent `min(total, n)`, and every extent of the
//   result is `if total == n { extent } else if total > n { heads[total] }
//   else { heads[n] }`, two reads with two checks, so that the error says
//   which number is the sum and which the row length. Because the check
//   sits in the result's *shape*, it fires even when the result has no
//   elements (an outer extent of 0).
//
// The sum saturates at `i64::MAX` instead of wrapping, so lengths whose
// true sum overflows can never pass for a small total (`i64::MAX` is
// never a row length). Saturating addition of non-negative numbers is
// associative, as the scan requires.

/// `a + b` for non-negative `a` and `b`, saturating at `i64::MAX`.
pub(super) fn saturating_add(a: &Exp<i64>, b: &Exp<i64>) -> Exp<i64> {
    cond(a.gt(constant(i64::MAX) - b), i64::MAX, a + b)
}

/// `array[ix]` located at the user's call (`loc`) rather than at the
/// closure inside this library that builds it, so that an out-of-bounds
/// read names the user's line.
pub(super) fn index_at<Sh: Shape, E: Elt>(array: &Acc<Array<Sh, E>>, ix: Exp<Sh>, loc: SrcLoc) -> Exp<E> {
    Exp::node(NodeKind::Index { array: array.r(), index: ix.id }, loc)
}

/// The zero of an element type (zeros and `false`), for defaults that are
/// always overwritten.
pub(super) fn zero_of<E: Elt>() -> Exp<E> {
    constant(E::from_val(&Val::zero(&E::elt_ty())))
}

/// The lengths with every negative one replaced by an out-of-bounds read of
/// `lengths` at that length (Note [Checking segment descriptors]), which
/// `op` reports as a negative segment length.
pub(super) fn checked_lengths(lengths: &Acc<Vector<i64>>, loc: SrcLoc, op: &'static str) -> Acc<Vector<i64>> {
    let loc = loc.checking(op, CheckKind::NegativeSegmentLength);
    lengths.map(|l| cond(l.ge(0i64), l, index_at(lengths, index1(l), loc)))
}

/// The offsets of the segments of a descriptor: entry `k` is the sum of the
/// lengths before segment `k`, that is, where segment `k` starts in the
/// segmented row (an exclusive prefix sum, Blelloch's "offset segment
/// descriptor"). The result has as many entries as `lengths`.
///
/// A negative length is `Error::BadSegments` naming it (Note [Checking
/// segment descriptors] in this module). A sum past `i64::MAX` saturates at
/// `i64::MAX` rather than wrapping.
///
/// ```text
/// segment_offsets([3, 2, 0, 1]) == [0, 3, 5, 5]
/// segment_offsets([])           == []
/// ```
#[track_caller]
pub fn segment_offsets(lengths: impl AsAcc<Vector<i64>>) -> Acc<Vector<i64>> {
    let loc = SrcLoc::caller();
    let lengths = lengths.as_acc();
    let inclusive = checked_lengths(&lengths, loc, "segment_offsets").scanl(0i64, saturating_add);
    inclusive.backpermute(lengths.shape(), |ix| ix.clone())
}

/// An exclusive segmented scan and the per-segment totals.
type WithTotals<Sh, E> = (Array<Snoc<Sh>, E>, Array<Snoc<Sh>, E>);

/// A checked segment descriptor for rows of `n` elements.
struct Descriptor {
    /// The lengths, each checked to be non-negative.
    lengths: Acc<Vector<i64>>,
    /// `s + 1` entries: the offsets of the segments, then the (saturated)
    /// total.
    offsets: Acc<Vector<i64>>,
    /// The number of segments, `s`.
    segments: Exp<i64>,
    /// `true` at the start of every non-empty segment; extent
    /// `min(total, n)` (which is `n` when the descriptor is consistent).
    heads: Acc<Vector<bool>>,
    /// The innermost extent of the data, unchecked.
    n: Exp<i64>,
    total: Exp<i64>,
    loc: SrcLoc,
    /// The operation the descriptor is for, named by its errors.
    op: &'static str,
}

impl Descriptor {
    fn new(lengths: Acc<Vector<i64>>, n: Exp<i64>, loc: SrcLoc, op: &'static str) -> Descriptor {
        let checked = checked_lengths(&lengths, loc, op);
        let offsets = checked.scanl(0i64, saturating_add);
        let segments = lengths.shape().head();
        let total = index_at(&offsets, index1(&segments), loc);
        let extent = total.min(&n);
        let heads = fill(index1(&segments), true).permute(
            |new, old| new | old,
            fill(index1(&extent), false),
            |k| {
                let start = offsets.index(k);
                cond(checked.index(k).gt(0i64) & start.lt(&extent), just(index1(start)), nothing())
            },
        );
        Descriptor { lengths: checked, offsets, segments, heads, n, total, loc, op }
    }

    /// `x` if the lengths sum to the row length, else the out-of-bounds read
    /// of Note [Checking segment descriptors]. Every result extent goes
    /// through it.
    fn checked(&self, x: Exp<i64>) -> Exp<i64> {
        let past = index_at(
            &self.heads,
            index1(&self.total),
            self.loc.checking(self.op, CheckKind::SegmentsPastRow),
        );
        let short =
            index_at(&self.heads, index1(&self.n), self.loc.checking(self.op, CheckKind::SegmentsShortOfRow));
        cond(self.total.eq(&self.n), x, cond(self.total.gt(&self.n), past, short).cast::<i64>())
    }

    fn offset(&self, k: impl IntoExp<i64>) -> Exp<i64> {
        self.offsets.index(index1(k))
    }

    fn length(&self, k: impl IntoExp<i64>) -> Exp<i64> {
        self.lengths.index(index1(k))
    }

    fn is_head(&self, p: &Exp<i64>) -> Exp<bool> {
        self.heads.index(index1(p))
    }

    /// Is position `p` (of `n`) the last of its segment?
    fn is_tail(&self, p: &Exp<i64>) -> Exp<bool> {
        (p + 1i64).eq(&self.n) | self.heads.index(index1(p + 1i64))
    }

    /// For the rows of `scanl_seg`/`scanr_seg`, where segment `k` occupies
    /// `offset(k) + k ..= offset(k + 1) + k` (one more element than its
    /// length): the segment of each of the `n + s` output positions. One
    /// is added at each segment's first output position by `permute`, and
    /// an inclusive `+` scan counts the segments started so far.
    fn grown_segment_ids(&self) -> Acc<Vector<i64>> {
        let m = &self.n + &self.segments;
        let starts = fill(index1(&self.segments), 1i64).permute(
            |new, old| new + old,
            fill(index1(&m), 0i64),
            |k| {
                // offsets saturate at i64::MAX on a bad descriptor, so
                // `start` may wrap negative: the descriptor check reports
                // that, and this permute must not fail first
                let start = self.offsets.index(k) + unindex1(k);
                cond(start.ge(0i64) & start.lt(&m), just(index1(start)), nothing())
            },
        );
        let counts = starts.scanl(0i64, |a, b| a + b);
        counts.backpermute(index1(m), |q| index1(unindex1(q) + 1i64)).map(|c| c - 1i64)
    }
}

/// Inclusive left-to-right segmented scan of `(head flag, value)` rows.
/// Position 0 of a non-empty row is always a head, so the seed of the
/// underlying `scanl` (there to make empty rows legal) never reaches a
/// result.
fn segmented_scanl<Sh: Shape, E: Elt>(
    pairs: Acc<Array<Snoc<Sh>, (bool, E)>>,
    f: &impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
) -> Acc<Array<Snoc<Sh>, E>> {
    let seed = lift((constant(true), zero_of::<E>()));
    let scanned = pairs.scanl(seed, |a, b| {
        let (fa, va) = a.unlift();
        let (fb, vb) = b.unlift();
        lift((fa | &fb, cond(fb, &vb, f(&va, &vb))))
    });
    scanned
        .backpermute(pairs.shape(), |ix| {
            let (outer, i) = ix.split();
            outer.snoc(i + 1i64)
        })
        .map(|p| p.snd())
}

/// Inclusive right-to-left segmented scan of `(tail flag, value)` rows:
/// `out[i] = if tail[i] { x[i] } else { f(x[i], out[i + 1]) }`. The last
/// position of a non-empty row is always a tail.
fn segmented_scanr<Sh: Shape, E: Elt>(
    pairs: Acc<Array<Snoc<Sh>, (bool, E)>>,
    f: &impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
) -> Acc<Array<Snoc<Sh>, E>> {
    let seed = lift((constant(true), zero_of::<E>()));
    let scanned = pairs.scanr(seed, |a, b| {
        let (fa, va) = a.unlift();
        let (fb, vb) = b.unlift();
        lift((&fa | fb, cond(fa, &va, f(&va, &vb))))
    });
    scanned.backpermute(pairs.shape(), |ix| ix.clone()).map(|p| p.snd())
}

/// Pairs every element of `xs` with its flag from `flag(descriptor,
/// position)`, over the checked shape, applying `inject` to the flagged
/// elements.
fn flagged<Sh: Shape, E: Elt>(
    xs: Acc<Array<Snoc<Sh>, E>>,
    d: &Descriptor,
    flag: impl Fn(&Descriptor, &Exp<i64>) -> Exp<bool>,
    inject: impl FnOnce(&Exp<E>) -> Exp<E>,
) -> Acc<Array<Snoc<Sh>, (bool, E)>> {
    let (outer, _) = xs.shape().split();
    generate(outer.snoc(d.checked(d.n.clone())), |ix| {
        let (_, p) = ix.split();
        let is_flagged = flag(d, &p);
        let x = xs.index(ix);
        lift((&is_flagged, cond(&is_flagged, inject(&x), x)))
    })
}

/// The inclusive seeded left scan of every segment, and its descriptor.
fn postscanl_with<Sh: Shape, E: Elt>(
    xs: Acc<Array<Snoc<Sh>, E>>,
    lengths: Acc<Vector<i64>>,
    z: Exp<E>,
    f: &impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
    loc: SrcLoc,
    op: &'static str,
) -> (Descriptor, Acc<Array<Snoc<Sh>, E>>) {
    let d = Descriptor::new(lengths, xs.shape().head(), loc, op);
    let post = segmented_scanl(flagged(xs, &d, Descriptor::is_head, |x| f(&z, x)), f);
    (d, post)
}

/// The inclusive seeded right scan of every segment, and its descriptor.
fn postscanr_with<Sh: Shape, E: Elt>(
    xs: Acc<Array<Snoc<Sh>, E>>,
    lengths: Acc<Vector<i64>>,
    z: Exp<E>,
    f: &impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
    loc: SrcLoc,
    op: &'static str,
) -> (Descriptor, Acc<Array<Snoc<Sh>, E>>) {
    let d = Descriptor::new(lengths, xs.shape().head(), loc, op);
    let post = segmented_scanr(flagged(xs, &d, Descriptor::is_tail, |x| f(x, &z)), f);
    (d, post)
}

/// The exclusive left scan from the inclusive one: `z` at each head, else
/// the inclusive result one position to the left.
fn exclusive_left<Sh: Shape, E: Elt>(
    d: &Descriptor,
    post: &Acc<Array<Snoc<Sh>, E>>,
    z: &Exp<E>,
) -> Acc<Array<Snoc<Sh>, E>> {
    generate(post.shape(), |ix| {
        let (outer, p) = ix.split();
        cond(d.is_head(&p), z, post.index(outer.snoc(p - 1i64)))
    })
}

/// The exclusive right scan from the inclusive one: `z` at each tail, else
/// the inclusive result one position to the right.
fn exclusive_right<Sh: Shape, E: Elt>(
    d: &Descriptor,
    post: &Acc<Array<Snoc<Sh>, E>>,
    z: &Exp<E>,
) -> Acc<Array<Snoc<Sh>, E>> {
    generate(post.shape(), |ix| {
        let (outer, p) = ix.split();
        cond(d.is_tail(&p), z, post.index(outer.snoc(p + 1i64)))
    })
}

/// Per segment: `z` if it is empty, else the inclusive scan at
/// `position(k)` (its last element for left scans, its first for right).
fn totals<Sh: Shape, E: Elt>(
    d: &Descriptor,
    post: &Acc<Array<Snoc<Sh>, E>>,
    z: &Exp<E>,
    position: impl FnOnce(&Descriptor, &Exp<i64>) -> Exp<i64>,
) -> Acc<Array<Snoc<Sh>, E>> {
    let (outer, _) = post.shape().split();
    generate(outer.snoc(d.checked(d.segments.clone())), |ix| {
        let (outer, k) = ix.split();
        cond(d.length(&k).eq(0i64), z, post.index(outer.snoc(position(d, &k))))
    })
}

impl<Sh: Shape, E: Elt> Acc<Array<Snoc<Sh>, E>> {
    /// Inclusive left-to-right scan of every segment along the innermost
    /// dimension, without a seed (Accelerate's `scanl1Seg`): segment
    /// `[x0, x1, x2]` becomes `[x0, f(x0, x1), f(f(x0, x1), x2)]`. The
    /// result has the shape of the input; empty segments contribute
    /// nothing. `f` is taken to be associative.
    ///
    /// `lengths` must be non-negative and sum to the innermost extent;
    /// otherwise the result is `Error::BadSegments` naming the negative
    /// length, or the sum and the row length (Note [Checking segment
    /// descriptors] in `lang/library/segmented.rs`).
    ///
    /// ```text
    /// [1, 2, 3, 4, 5, 6].scanl1_seg([3, 0, 2, 1], +) == [1, 3, 6, 4, 9, 6]
    /// ```
    #[track_caller]
    pub fn scanl1_seg(
        &self,
        lengths: impl AsAcc<Vector<i64>>,
        f: impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let d = Descriptor::new(lengths.as_acc(), self.shape().head(), SrcLoc::caller(), "scanl1_seg");
        segmented_scanl(flagged(self.clone(), &d, Descriptor::is_head, |x| x.clone()), &f)
    }

    /// Inclusive left-to-right scan of every segment starting from a seed
    /// (Accelerate's `postscanlSeg`): segment `[x0, x1]` becomes
    /// `[f(z, x0), f(f(z, x0), x1)]`. Same shape as the input. Errors as
    /// for [`Acc::scanl1_seg`].
    #[track_caller]
    pub fn postscanl_seg(
        &self,
        lengths: impl AsAcc<Vector<i64>>,
        seed: impl IntoExp<E>,
        f: impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let d = Descriptor::new(lengths.as_acc(), self.shape().head(), SrcLoc::caller(), "postscanl_seg");
        let z = seed.into_exp();
        segmented_scanl(flagged(self.clone(), &d, Descriptor::is_head, |x| f(&z, x)), &f)
    }

    /// Exclusive left-to-right scan of every segment (Accelerate's
    /// `prescanlSeg`): segment `[x0, x1, x2]` becomes
    /// `[z, f(z, x0), f(f(z, x0), x1)]`. Same shape as the input. Errors
    /// as for [`Acc::scanl1_seg`].
    #[track_caller]
    pub fn prescanl_seg(
        &self,
        lengths: impl AsAcc<Vector<i64>>,
        seed: impl IntoExp<E>,
        f: impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let z = seed.into_exp();
        let (d, post) =
            postscanl_with(self.clone(), lengths.as_acc(), z.clone(), &f, SrcLoc::caller(), "prescanl_seg");
        exclusive_left(&d, &post, &z)
    }

    /// The exclusive scan of every segment together with each segment's
    /// total (Accelerate's `scanl'Seg`): the first array is
    /// [`Acc::prescanl_seg`]; the second has the input's outer shape and one
    /// innermost entry per segment, `f(..f(z, x0).., xk)`, or `z` for an
    /// empty segment. Errors as for [`Acc::scanl1_seg`] (both arrays).
    ///
    /// ```text
    /// [1, 2, 3, 4].scanl_seg_([3, 0, 1], 0, +) == ([0, 1, 3, 0], [6, 0, 4])
    /// ```
    #[track_caller]
    pub fn scanl_seg_(
        &self,
        lengths: impl AsAcc<Vector<i64>>,
        seed: impl IntoExp<E>,
        f: impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<WithTotals<Sh, E>> {
        let z = seed.into_exp();
        let (d, post) =
            postscanl_with(self.clone(), lengths.as_acc(), z.clone(), &f, SrcLoc::caller(), "scanl_seg_");
        let body = exclusive_left(&d, &post, &z);
        let sums = totals(&d, &post, &z, |d, k| d.offset(k + 1i64) - 1i64);
        lift_acc((body, sums))
    }

    /// Left-to-right scan of every segment with a seed, each segment growing
    /// by one (Accelerate's `scanlSeg`): segment `[x0, x1]` becomes
    /// `[z, f(z, x0), f(f(z, x0), x1)]` and an empty segment `[z]`, so the
    /// innermost extent of the result is `n + s` for `s` segments. Errors
    /// as for [`Acc::scanl1_seg`].
    ///
    /// ```text
    /// [1, 2, 3].scanl_seg([2, 0, 1], 0, +) == [0, 1, 3, 0, 0, 3]
    /// ```
    #[track_caller]
    pub fn scanl_seg(
        &self,
        lengths: impl AsAcc<Vector<i64>>,
        seed: impl IntoExp<E>,
        f: impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let d = Descriptor::new(lengths.as_acc(), self.shape().head(), SrcLoc::caller(), "scanl_seg");
        let z = seed.into_exp();
        let xs = self;
        let ids = d.grown_segment_ids();
        let (outer, _) = xs.shape().split();
        // Segment k's output starts at offset(k) + k with the seed; its
        // element j >= 1 is the input's element offset(k) + j - 1.
        let grown = generate(outer.snoc(d.checked(&d.n + &d.segments)), |ix| {
            let (outer, q) = ix.split();
            let k = ids.index(index1(&q));
            let is_head = q.eq(d.offset(&k) + &k);
            cond(
                is_head,
                lift((constant(true), &z)),
                lift((constant(false), xs.index(outer.snoc(q - k - 1i64)))),
            )
        });
        segmented_scanl(grown, &f)
    }

    /// Inclusive right-to-left scan of every segment, without a seed
    /// (Accelerate's `scanr1Seg`): segment `[x0, x1, x2]` becomes
    /// `[f(x0, f(x1, x2)), f(x1, x2), x2]`. Same shape as the input; empty
    /// segments contribute nothing. Errors as for [`Acc::scanl1_seg`].
    #[track_caller]
    pub fn scanr1_seg(
        &self,
        lengths: impl AsAcc<Vector<i64>>,
        f: impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let d = Descriptor::new(lengths.as_acc(), self.shape().head(), SrcLoc::caller(), "scanr1_seg");
        segmented_scanr(flagged(self.clone(), &d, Descriptor::is_tail, |x| x.clone()), &f)
    }

    /// Inclusive right-to-left scan of every segment ending with a seed:
    /// segment `[x0, x1]` becomes `[f(x0, f(x1, z)), f(x1, z)]`. Same shape
    /// as the input. Errors as for [`Acc::scanl1_seg`].
    ///
    /// The seed is on the right, as in `scanr` and in Accelerate's
    /// (unsegmented) `postscanr`, which applies `\x -> f(x, z)` to `scanr1`.
    /// Accelerate 1.3's `postscanrSeg` applies `\x -> f(z, x)` instead, which
    /// differs for a non-commutative `f`; it is not followed.
    #[track_caller]
    pub fn postscanr_seg(
        &self,
        lengths: impl AsAcc<Vector<i64>>,
        seed: impl IntoExp<E>,
        f: impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let z = seed.into_exp();
        postscanr_with(self.clone(), lengths.as_acc(), z, &f, SrcLoc::caller(), "postscanr_seg").1
    }

    /// Exclusive right-to-left scan of every segment: segment
    /// `[x0, x1, x2]` becomes `[f(x1, f(x2, z)), f(x2, z), z]`. Same shape
    /// as the input. Errors as for [`Acc::scanl1_seg`].
    #[track_caller]
    pub fn prescanr_seg(
        &self,
        lengths: impl AsAcc<Vector<i64>>,
        seed: impl IntoExp<E>,
        f: impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let z = seed.into_exp();
        let (d, post) =
            postscanr_with(self.clone(), lengths.as_acc(), z.clone(), &f, SrcLoc::caller(), "prescanr_seg");
        exclusive_right(&d, &post, &z)
    }

    /// The exclusive right scan of every segment together with each
    /// segment's total (Accelerate's `scanr'Seg`): [`Acc::prescanr_seg`],
    /// and per segment `f(x0, f(x1, .. f(xk, z)))`, or `z` for an empty
    /// one. Errors as for [`Acc::scanl1_seg`] (both arrays).
    #[track_caller]
    pub fn scanr_seg_(
        &self,
        lengths: impl AsAcc<Vector<i64>>,
        seed: impl IntoExp<E>,
        f: impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<WithTotals<Sh, E>> {
        let z = seed.into_exp();
        let (d, post) =
            postscanr_with(self.clone(), lengths.as_acc(), z.clone(), &f, SrcLoc::caller(), "scanr_seg_");
        let body = exclusive_right(&d, &post, &z);
        let sums = totals(&d, &post, &z, |d, k| d.offset(k));
        lift_acc((body, sums))
    }

    /// Right-to-left scan of every segment with a seed, each segment
    /// growing by one (Accelerate's `scanrSeg`): segment `[x0, x1]` becomes
    /// `[f(x0, f(x1, z)), f(x1, z), z]` and an empty segment `[z]`; the
    /// innermost extent of the result is `n + s`. Errors as for
    /// [`Acc::scanl1_seg`].
    #[track_caller]
    pub fn scanr_seg(
        &self,
        lengths: impl AsAcc<Vector<i64>>,
        seed: impl IntoExp<E>,
        f: impl Fn(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Acc<Array<Snoc<Sh>, E>> {
        let d = Descriptor::new(lengths.as_acc(), self.shape().head(), SrcLoc::caller(), "scanr_seg");
        let z = seed.into_exp();
        let xs = self;
        let ids = d.grown_segment_ids();
        let (outer, _) = xs.shape().split();
        // Segment k's output ends at offset(k + 1) + k with the seed; its
        // element j < length(k) is the input's element offset(k) + j.
        let grown = generate(outer.snoc(d.checked(&d.n + &d.segments)), |ix| {
            let (outer, q) = ix.split();
            let k = ids.index(index1(&q));
            let is_tail = q.eq(d.offset(&k + 1i64) + &k);
            cond(is_tail, lift((constant(true), &z)), lift((constant(false), xs.index(outer.snoc(q - k)))))
        });
        segmented_scanr(grown, &f)
    }
}

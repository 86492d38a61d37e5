//! Segmented scans (`scanl_seg` and its family, `lang/library/segmented.rs`)
//! and `segment_offsets`, against plain-Rust sequential references, on
//! vectors and on matrices (every row split by the same descriptor), with
//! empty segments, empty rows, no rows and no segments; and the errors for
//! descriptors that do not fit the data (Note [Checking segment
//! descriptors]).
//!
//! The interpreter scans each row sequentially, and the seeded forms inject
//! the seed into the scan, so results equal the sequential reference
//! exactly: floats are compared bit for bit (any NaN equal to any NaN).
//! A parallel backend may regroup the scans (their operators are taken to
//! be associative, `docs/semantics.md`), so the float data sum exactly in
//! any order (`exact_float`). Three operators: wrapping `+` on `i64`
//! (extremes included), `+` on `f64` (NaN, infinities, -0.0 included), and
//! composition of affine maps
//! `x -> a*x + b` on `(i64, i64)` with wrapping arithmetic, which is
//! associative but not commutative and so pins the order of arguments.

mod common;

use accelerate::prelude::*;
use common::*;
use proptest::collection::vec;
use proptest::prelude::*;

// ---------------------------------------------------------------------------
// Operations and references

#[derive(Clone, Copy, Debug, PartialEq)]
enum Op {
    Scanl,
    Scanl1,
    ScanlTotals,
    Prescanl,
    Postscanl,
    Scanr,
    Scanr1,
    ScanrTotals,
    Prescanr,
    Postscanr,
}

const OPS: [Op; 10] = [
    Op::Scanl,
    Op::Scanl1,
    Op::ScanlTotals,
    Op::Prescanl,
    Op::Postscanl,
    Op::Scanr,
    Op::Scanr1,
    Op::ScanrTotals,
    Op::Prescanr,
    Op::Postscanr,
];

impl Op {
    /// The name of the operation, as its errors give it.
    fn name(self) -> &'static str {
        match self {
            Op::Scanl => "scanl_seg",
            Op::Scanl1 => "scanl1_seg",
            Op::ScanlTotals => "scanl_seg_",
            Op::Prescanl => "prescanl_seg",
            Op::Postscanl => "postscanl_seg",
            Op::Scanr => "scanr_seg",
            Op::Scanr1 => "scanr1_seg",
            Op::ScanrTotals => "scanr_seg_",
            Op::Prescanr => "prescanr_seg",
            Op::Postscanr => "postscanr_seg",
        }
    }
}

/// Is `e` the `BadSegments` error `message` of `op`, at a line of this file?
fn bad_segments(e: &Error, op: Op, message: &str) -> bool {
    matches!(e, Error::BadSegments { loc, message: m }
        if m == &format!("{}: {message}", op.name()) && loc.file().ends_with("ops_library_segmented.rs"))
}

/// The segments of one row.
fn segments<'a, T>(row: &'a [T], lengths: &[i64]) -> Vec<&'a [T]> {
    let mut out = Vec::new();
    let mut start = 0;
    for &l in lengths {
        out.push(&row[start..start + l as usize]);
        start += l as usize;
    }
    assert_eq!(start, row.len(), "reference called with an inconsistent descriptor");
    out
}

/// The sequential result of `op` on one row: its elements, and for the
/// `_seg_` forms the per-segment totals.
fn reference_row<T: Copy>(op: Op, row: &[T], lengths: &[i64], z: T, f: fn(T, T) -> T) -> (Vec<T>, Vec<T>) {
    let mut body = Vec::new();
    let mut totals = Vec::new();
    for seg in segments(row, lengths) {
        match op {
            Op::Scanl | Op::ScanlTotals | Op::Prescanl | Op::Postscanl => {
                let mut acc = z;
                if op == Op::Scanl {
                    body.push(z);
                }
                for &x in seg {
                    if matches!(op, Op::ScanlTotals | Op::Prescanl) {
                        body.push(acc);
                    }
                    acc = f(acc, x);
                    if matches!(op, Op::Scanl | Op::Postscanl) {
                        body.push(acc);
                    }
                }
                totals.push(acc);
            }
            Op::Scanl1 => {
                let mut acc: Option<T> = None;
                for &x in seg {
                    let v = acc.map_or(x, |a| f(a, x));
                    body.push(v);
                    acc = Some(v);
                }
            }
            Op::Scanr | Op::ScanrTotals | Op::Prescanr | Op::Postscanr => {
                let mut out = Vec::new();
                let mut acc = z;
                if op == Op::Scanr {
                    out.push(z);
                }
                for &x in seg.iter().rev() {
                    if matches!(op, Op::ScanrTotals | Op::Prescanr) {
                        out.push(acc);
                    }
                    acc = f(x, acc);
                    if matches!(op, Op::Scanr | Op::Postscanr) {
                        out.push(acc);
                    }
                }
                out.reverse();
                body.extend(out);
                totals.push(acc);
            }
            Op::Scanr1 => {
                let mut out = Vec::new();
                let mut acc: Option<T> = None;
                for &x in seg.iter().rev() {
                    let v = acc.map_or(x, |a| f(x, a));
                    out.push(v);
                    acc = Some(v);
                }
                out.reverse();
                body.extend(out);
            }
        }
    }
    (body, totals)
}

/// The reference over every row: (body extents, body, totals extents,
/// totals).
type Reference<T> = (Vec<usize>, Vec<T>, Vec<usize>, Vec<T>);

fn reference<T: Copy>(
    op: Op,
    outer: &[usize],
    n: usize,
    data: &[T],
    lengths: &[i64],
    z: T,
    f: fn(T, T) -> T,
) -> Reference<T> {
    let rows: usize = outer.iter().product();
    let (mut body, mut totals) = (Vec::new(), Vec::new());
    for r in 0..rows {
        let (b, t) = reference_row(op, &data[r * n..(r + 1) * n], lengths, z, f);
        body.extend(b);
        totals.extend(t);
    }
    let width = if matches!(op, Op::Scanl | Op::Scanr) { n + lengths.len() } else { n };
    let dims = |w: usize| outer.iter().copied().chain(std::iter::once(w)).collect::<Vec<_>>();
    (dims(width), body, dims(lengths.len()), totals)
}

/// The result of the `_seg_` forms: the scan and the totals.
type Pair<Sh, T> = (Array<Snoc<Sh>, T>, Array<Snoc<Sh>, T>);

fn array<Sh: Shape, T: Elt>(dims: &[usize], data: Vec<T>) -> Array<Sh, T> {
    let d: Vec<i64> = dims.iter().map(|&x| x as i64).collect();
    Array::from_vec(Sh::from_slice(&d), data).expect("data matches the shape")
}

/// Runs `op` through the interpreter on an array of shape `dims`
/// (rank `Sh::RANK + 1`); returns what `reference` returns (no totals for
/// the forms without them).
fn run_op<Sh: Shape, T: Elt + Copy>(
    op: Op,
    dims: &[usize],
    data: Vec<T>,
    lengths: Vec<i64>,
    z: T,
    f: fn(&Exp<T>, &Exp<T>) -> Exp<T>,
) -> Result<Reference<T>, Error> {
    let xs = array::<Snoc<Sh>, T>(dims, data);
    let segs = Vector::from_elems(lengths);
    {
        let xs = use_array(xs);
        let segs = use_array(segs);
        let one = |a: Acc<Array<Snoc<Sh>, T>>| -> Result<Reference<T>, Error> {
            let r = accelerate::run(&a)?;
            Ok((r.dims().to_vec(), r.to_vec(), vec![], vec![]))
        };
        let two = |a: Acc<Pair<Sh, T>>| -> Result<Reference<T>, Error> {
            let (b, t) = accelerate::run(&a)?;
            Ok((b.dims().to_vec(), b.to_vec(), t.dims().to_vec(), t.to_vec()))
        };
        match op {
            Op::Scanl => one(xs.scanl_seg(segs, z, f)),
            Op::Scanl1 => one(xs.scanl1_seg(segs, f)),
            Op::ScanlTotals => two(xs.scanl_seg_(segs, z, f)),
            Op::Prescanl => one(xs.prescanl_seg(segs, z, f)),
            Op::Postscanl => one(xs.postscanl_seg(segs, z, f)),
            Op::Scanr => one(xs.scanr_seg(segs, z, f)),
            Op::Scanr1 => one(xs.scanr1_seg(segs, f)),
            Op::ScanrTotals => two(xs.scanr_seg_(segs, z, f)),
            Op::Prescanr => one(xs.prescanr_seg(segs, z, f)),
            Op::Postscanr => one(xs.postscanr_seg(segs, z, f)),
        }
    }
}

/// Checks every operation on one input against the reference.
fn check_all<Sh: Shape, T: Elt + Copy + Same>(
    outer: &[usize],
    data: &[T],
    lengths: &[i64],
    z: T,
    f: fn(&Exp<T>, &Exp<T>) -> Exp<T>,
    f_ref: fn(T, T) -> T,
) -> Result<(), TestCaseError> {
    let n: usize = lengths.iter().sum::<i64>() as usize;
    let dims: Vec<usize> = outer.iter().copied().chain(std::iter::once(n)).collect();
    for op in OPS {
        let got = run_op::<Sh, T>(op, &dims, data.to_vec(), lengths.to_vec(), z, f)
            .map_err(|e| TestCaseError::fail(format!("{op:?} failed: {e}")))?;
        let (bd, body, td, totals) = reference(op, outer, n, data, lengths, z, f_ref);
        prop_assert_eq!(&got.0, &bd, "{:?}: result extents", op);
        check_same_vec(&got.1, &body, &format!("{op:?} on {lengths:?}"))?;
        if matches!(op, Op::ScanlTotals | Op::ScanrTotals) {
            prop_assert_eq!(&got.2, &td, "{:?}: totals extents", op);
            check_same_vec(&got.3, &totals, &format!("{op:?} totals on {lengths:?}"))?;
        }
    }
    Ok(())
}

fn add_i64(a: &Exp<i64>, b: &Exp<i64>) -> Exp<i64> {
    a + b
}

fn add_f64(a: &Exp<f64>, b: &Exp<f64>) -> Exp<f64> {
    a + b
}

/// Composition of affine maps, `p` first: `(a1, b1) ; (a2, b2)` is
/// `x -> a2 * (a1 * x + b1) + b2`.
fn affine(p: &Exp<(i64, i64)>, q: &Exp<(i64, i64)>) -> Exp<(i64, i64)> {
    let (a1, b1) = p.unlift();
    let (a2, b2) = q.unlift();
    lift((a1 * &a2, a2 * b1 + b2))
}

fn affine_ref(p: (i64, i64), q: (i64, i64)) -> (i64, i64) {
    (p.0.wrapping_mul(q.0), q.0.wrapping_mul(p.1).wrapping_add(q.1))
}

// ---------------------------------------------------------------------------
// Strategies

/// Segment lengths: up to 7 segments, empty ones frequent.
fn lengths() -> BoxedStrategy<Vec<i64>> {
    vec(prop_oneof![2 => Just(0i64), 1 => Just(1i64), 3 => 0i64..6], 0..8).boxed()
}

/// An outer shape of rank `rank` (0 or 1) with extents 0 to 3, segment
/// lengths, and data for rows whose length is the lengths' sum.
fn case<T: std::fmt::Debug + Clone + 'static>(
    rank: usize,
    elem: BoxedStrategy<T>,
) -> BoxedStrategy<(Vec<usize>, Vec<i64>, Vec<T>)> {
    (vec(prop_oneof![1 => Just(0usize), 4 => 1usize..4], rank), lengths())
        .prop_flat_map(move |(outer, lens)| {
            let size = outer.iter().product::<usize>() * lens.iter().sum::<i64>() as usize;
            (Just(outer), Just(lens), vec(elem.clone(), size))
        })
        .boxed()
}

fn pair() -> BoxedStrategy<(i64, i64)> {
    (elem::<i64>(), elem::<i64>()).boxed()
}

// ---------------------------------------------------------------------------
// Properties

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn segmented_scans_of_wrapping_sums_match_reference_on_vectors(
        (outer, lens, data) in case(0, elem::<i64>()), z in elem::<i64>()
    ) {
        check_all::<Z, i64>(&outer, &data, &lens, z, add_i64, i64::wrapping_add)?;
    }

    #[test]
    fn segmented_scans_of_wrapping_sums_match_reference_on_matrices(
        (outer, lens, data) in case(1, elem::<i64>()), z in elem::<i64>()
    ) {
        check_all::<DIM1, i64>(&outer, &data, &lens, z, add_i64, i64::wrapping_add)?;
    }

    #[test]
    fn segmented_scans_of_float_sums_match_sequential_reference(
        (outer, lens, data) in case(0, exact_float::<f64>()), z in exact_float::<f64>()
    ) {
        check_all::<Z, f64>(&outer, &data, &lens, z, add_f64, |a, b| a + b)?;
    }

    #[test]
    fn segmented_scans_of_float_sums_match_sequential_reference_on_matrices(
        (outer, lens, data) in case(1, exact_float::<f64>()), z in exact_float::<f64>()
    ) {
        check_all::<DIM1, f64>(&outer, &data, &lens, z, add_f64, |a, b| a + b)?;
    }

    #[test]
    fn segmented_scans_keep_argument_order_of_non_commutative_operator(
        (outer, lens, data) in case(0, pair()), z in pair()
    ) {
        check_all::<Z, (i64, i64)>(&outer, &data, &lens, z, affine, affine_ref)?;
    }

    #[test]
    fn segmented_scans_keep_argument_order_on_matrices(
        (outer, lens, data) in case(1, pair()), z in pair()
    ) {
        check_all::<DIM1, (i64, i64)>(&outer, &data, &lens, z, affine, affine_ref)?;
    }

    #[test]
    fn segment_offsets_are_exclusive_prefix_sums(lens in vec(0i64..1000, 0..20)) {
        let got = run_ok(|| segment_offsets(use_array(Vector::from_elems(lens.clone()))))?;
        let mut want = Vec::new();
        let mut acc = 0;
        for l in &lens {
            want.push(acc);
            acc += l;
        }
        prop_assert_eq!(got.to_vec(), want);
    }

    /// Lengths that sum to more or less than the row length: every
    /// operation fails with the index `[max(total, n)]` in the shape
    /// `[min(total, n)]`, named at this file's line, whatever the number
    /// of rows (none included).
    #[test]
    fn lengths_not_summing_to_row_length_are_errors_naming_the_sum_and_the_row_length(
        lens in lengths(), n in 0usize..12, rows in 0usize..3
    ) {
        let total = lens.iter().sum::<i64>() as usize;
        prop_assume!(total != n);
        let data: Vec<i64> = (0..(rows * n) as i64).collect();
        for op in OPS {
            let r = run_op::<DIM1, i64>(op, &[rows, n], data.clone(), lens.clone(), 0, add_i64);
            let message = format!("the segment lengths sum to {total}, but the rows have {n} elements");
            check_error(r, |e| bad_segments(e, op, &message), &format!("{op:?}"))?;
            let r = run_op::<Z, i64>(op, &[n], (0..n as i64).collect(), lens.clone(), 0, add_i64);
            check_error(r, |e| bad_segments(e, op, &message), &format!("{op:?}"))?;
        }
    }

    /// A negative length fails with that length as the index into the
    /// lengths' shape, even when the sum happens to match the data.
    #[test]
    fn negative_lengths_are_errors_naming_the_length(
        mut lens in lengths(), neg in -5i64..0, at in any::<prop::sample::Index>(), rows in 0usize..3
    ) {
        let k = at.index(lens.len() + 1);
        lens.insert(k, neg);
        let n = lens.iter().sum::<i64>().max(0) as usize;
        let data: Vec<i64> = (0..(rows * n) as i64).collect();
        for op in OPS {
            let r = run_op::<DIM1, i64>(op, &[rows, n], data.clone(), lens.clone(), 0, add_i64);
            let message = format!("the segment lengths (shape [{}]) include a negative length, {neg}", lens.len());
            check_error(r, |e| bad_segments(e, op, &message), &format!("{op:?}"))?;
        }
    }
}

#[test]
fn segmented_scans_match_accelerate_documentation() {
    // The examples of Accelerate's Data.Array.Accelerate.Prelude, with the
    // data's length made equal to the lengths' sum (8, not 10).
    let mat: Vec<i64> = (0..5).flat_map(|r| (0..8).map(move |c| r * 10 + c)).collect();
    let seg = vec![1, 4, 0, 3];
    let (bd, body, _, _) =
        run_op::<DIM1, i64>(Op::Scanl1, &[5, 8], mat.clone(), seg.clone(), 0, add_i64).unwrap();
    assert_eq!(bd, vec![5, 8]);
    assert_eq!(&body[..8], &[0, 1, 3, 6, 10, 5, 11, 18]);
    let (_, body, td, totals) =
        run_op::<DIM1, i64>(Op::ScanlTotals, &[5, 8], mat.clone(), seg.clone(), 0, add_i64).unwrap();
    assert_eq!(&body[..8], &[0, 0, 1, 3, 6, 0, 5, 11]);
    assert_eq!(td, vec![5, 4]);
    assert_eq!(&totals[..8], &[0, 10, 0, 18, 10, 50, 0, 48]);
    let (bd, body, _, _) =
        run_op::<DIM1, i64>(Op::Scanl, &[5, 8], mat.clone(), seg.clone(), 0, add_i64).unwrap();
    assert_eq!(bd, vec![5, 12]);
    assert_eq!(&body[..12], &[0, 0, 0, 1, 3, 6, 10, 0, 0, 5, 11, 18]);
    let (_, body, _, totals) =
        run_op::<DIM1, i64>(Op::ScanrTotals, &[5, 8], mat.clone(), seg.clone(), 0, add_i64).unwrap();
    assert_eq!(&body[..8], &[0, 9, 7, 4, 0, 13, 7, 0]);
    assert_eq!(&totals[..4], &[0, 10, 0, 18]);
    let (_, body, _, _) = run_op::<DIM1, i64>(Op::Scanr1, &[5, 8], mat, seg, 0, add_i64).unwrap();
    assert_eq!(&body[..8], &[0, 10, 9, 7, 4, 18, 13, 7]);
}

#[test]
fn no_segments_and_no_data_give_empty_results_and_seed_free_totals() {
    for op in OPS {
        let (bd, body, td, totals) = run_op::<Z, i64>(op, &[0], vec![], vec![], 7, add_i64).unwrap();
        assert_eq!(bd, vec![0], "{op:?}");
        assert!(body.is_empty() && totals.is_empty(), "{op:?}");
        if matches!(op, Op::ScanlTotals | Op::ScanrTotals) {
            assert_eq!(td, vec![0], "{op:?}");
        }
    }
}

#[test]
fn only_empty_segments_give_seeds() {
    let (bd, body, _, _) = run_op::<Z, i64>(Op::Scanl, &[0], vec![], vec![0, 0, 0], 7, add_i64).unwrap();
    assert_eq!((bd, body), (vec![3], vec![7, 7, 7]));
    let (bd, body, _, _) = run_op::<Z, i64>(Op::Scanr, &[0], vec![], vec![0, 0], 7, add_i64).unwrap();
    assert_eq!((bd, body), (vec![2], vec![7, 7]));
    let (_, _, td, totals) = run_op::<Z, i64>(Op::ScanrTotals, &[0], vec![], vec![0, 0], 7, add_i64).unwrap();
    assert_eq!((td, totals), (vec![2], vec![7, 7]));
}

#[test]
fn lengths_whose_sum_overflows_do_not_wrap_to_the_row_length() {
    // i64::MAX + i64::MAX + 2 wraps to 0, the length of the data.
    let lens = vec![i64::MAX, i64::MAX, 2];
    for op in OPS {
        let r = run_op::<Z, i64>(op, &[0], vec![], lens.clone(), 0, add_i64);
        let message =
            format!("the segment lengths sum to {} or more, but the rows have 0 elements", i64::MAX);
        assert!(matches!(&r, Err(e) if bad_segments(e, op, &message)), "{op:?}: {r:?}");
    }
}

#[test]
fn segment_offsets_reject_negative_lengths() {
    let r = try_run(|| segment_offsets(use_array(Vector::from_elems(vec![2, -3, 1]))));
    assert!(
        matches!(&r, Err(Error::BadSegments { message, .. })
            if message == "segment_offsets: the segment lengths (shape [3]) include a negative length, -3"),
        "{r:?}"
    );
}

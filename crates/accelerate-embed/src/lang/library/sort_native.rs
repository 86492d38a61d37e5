//! The library's sort on host arrays (Note [A native sort]): a parallel,
//! stable least-significant-digit radix sort of eight bits a pass, which
//! the interpreter and the CPU backend run for `sort` and
//! `sort_with_indices` (a `Foreign::host` implementation); every other
//! backend runs the sort written in the language (`sort.rs`).
//!
//! Note [A native sort]
//! The sort written in the language is Blelloch's split, one bit a pass:
//! 32 passes for `i32` keys, each a `map`, a scan, a `generate` and a
//! `permute` over every key, reading and writing some 70 bytes a key.
//! On the two-core EPYC of docs/benchmarks.md it sorted 2^24 `i32`s in
//! 2.3 s, where the standard library's sequential `sort_unstable` took
//! 0.55 s and a hand-written rayon radix sort of 8-bit digits 0.19 s. A
//! digit sort needs, for every key, the number of earlier keys with the
//! same digit: 256 counters, which no primitive of the language computes
//! in one pass. So, as JAX's `sort` and NumPy's are native to each
//! backend, the library's sort is a foreign function with the radix sort
//! below as its host implementation and the split sort as its fallback.
//! Both sort by the same key (`SortKey::radix`, which `radix_of` here
//! computes on the host, to the bit), and both are stable, so both give
//! the same array.
//!
//! A pass: the keys are cut into a few chunks per worker; each chunk
//! counts its keys' digits (in parallel); the counts, digit by digit and
//! within a digit chunk by chunk, give every chunk the place of its first
//! key of each digit; each chunk then moves its keys there in order (in
//! parallel), so the pass is stable. A pass in which every key has the
//! same digit is skipped.
//!
//! The first pass that moves the keys reads them where they are, and the
//! passes write into two columns that `sort` takes from the pool of
//! recycled buffers and gives back (Note [Recycled buffers]): copying
//! the keys into a new column first, and a new second column, had the
//! sort of 2^24 `i32`s at 145 ms against the rayon sort's 105 to 111
//! (pages faulted in, a pass more); without them it took 93 to 105 ms
//! (docs/benchmarks.md, the fourteenth session on issue 21).

use super::sort::SortKey;
use accelerate_base::array::{ArrayData, Arrays, ArraysVal, Buffer, Column, Elt, Vector};
use rayon::prelude::*;
use std::sync::Arc;

/// Elements a chunk holds at least: fewer are not worth a task.
pub(super) const MIN_CHUNK: usize = 1 << 14;

/// The length of the chunks that `n` elements are cut into: a few per
/// worker, at least `MIN_CHUNK` (the native sort's and compaction's).
pub(super) fn chunk_len(n: usize) -> usize {
    n.div_ceil((4 * rayon::current_num_threads()).max(1)).max(MIN_CHUNK)
}

/// Digit bits a pass.
const DIGIT: u32 = 8;

/// The elements a sort starts from: the caller's, read by the first pass
/// that moves them, or a column of its own, whose storage later passes
/// reuse.
pub(super) enum Items<'a, T> {
    Borrowed(&'a [T]),
    Owned(Column<T>),
}

impl<T> Items<'_, T> {
    fn as_slice(&self) -> &[T] {
        match self {
            Items::Borrowed(xs) => xs,
            Items::Owned(c) => c,
        }
    }
}

/// `items` ordered by the low `bits` bits of `radix`, stably, and the
/// columns the sort used and no longer needs (for the caller to recycle).
/// `column(n)` gives an empty column with room for `n` elements: two at
/// most, the first pass that moves the items reading them where they
/// are (Note [A native sort]). `None` if the memory cannot be had.
pub(super) fn radix_sort<T: Copy + Send + Sync>(
    mut items: Items<'_, T>,
    bits: u32,
    radix: impl Fn(&T) -> u64 + Sync,
    mut column: impl FnMut(usize) -> Option<Column<T>>,
) -> Option<(Column<T>, Vec<Column<T>>)> {
    let n = items.as_slice().len();
    let len = chunk_len(n);
    let mut spares: Vec<Column<T>> = Vec::new();
    // a spare column, else a new one
    let mut room = |spares: &mut Vec<Column<T>>| spares.pop().or_else(|| column(n));
    let mut shift = 0;
    while shift < bits && n > 1 {
        // the last pass takes only the bits below `bits`
        let mask = (1u64 << DIGIT.min(bits - shift)) - 1;
        let digit = |x: &T| ((radix(x) >> shift) & mask) as usize;
        let src = items.as_slice();
        let counts: Vec<[usize; 1 << DIGIT]> = src
            .par_chunks(len)
            .map(|c| {
                let mut h = [0usize; 1 << DIGIT];
                for x in c {
                    h[digit(x)] += 1;
                }
                h
            })
            .collect();
        let one_digit = (0..1 << DIGIT).any(|d| counts.iter().map(|h| h[d]).sum::<usize>() == n);
        if !one_digit {
            // each chunk's first place for each digit
            let mut places = vec![[0usize; 1 << DIGIT]; counts.len()];
            let mut next = 0;
            for d in 0..1 << DIGIT {
                for (p, h) in places.iter_mut().zip(&counts) {
                    p[d] = next;
                    next += h[d];
                }
            }
            let mut dst = room(&mut spares)?;
            if dst.capacity() < n {
                return None;
            }
            let out = Out(dst.as_mut_ptr());
            src.par_chunks(len).zip(places.par_iter_mut()).for_each(|(c, p)| {
                let out = &out;
                for x in c {
                    let d = digit(x);
                    // SAFETY: the places partition 0 .. n: chunk c's keys of
                    // digit d go to the run of `counts[c][d]` places that
                    // starts at `places[c][d]`, which no other chunk or
                    // digit shares, and `dst` has room for n (checked).
                    unsafe { out.0.add(p[d]).write(*x) };
                    p[d] += 1;
                }
            });
            // SAFETY: every one of the n places was written above (`T`
            // is `Copy`: nothing to drop in the old contents).
            unsafe { dst.set_len(n) };
            if let Items::Owned(mut old) = std::mem::replace(&mut items, Items::Owned(dst)) {
                old.clear();
                spares.push(old);
            }
        }
        shift += DIGIT;
    }
    let sorted = match items {
        Items::Owned(c) => c,
        // no pass moved anything: the items were in order
        Items::Borrowed(xs) => {
            let mut c = room(&mut spares)?;
            c.extend_from_slice(xs);
            c
        }
    };
    Some((sorted, spares))
}

/// The vector of `n` elements these buffers hold (no copy).
pub(super) fn vector_of<E: Elt>(n: usize, buffers: Vec<Buffer>) -> Result<Vector<E>, String> {
    let data = ArrayData::from_buffers(vec![n], E::elt_ty(), buffers)
        .ok_or("the sorted elements do not fit their type")?;
    Vector::from_arrays_val(ArraysVal::Array(Arc::new(data))).map_err(|e| e.to_string())
}

/// The keys in order, each with the position it came from (equal keys in
/// the order of their positions), as the pairs `sort_with_indices`
/// returns; the positions travel as `u32` where they fit, halving what
/// each pass moves for 32-bit keys.
pub(super) fn with_positions<K: SortKey>(keys: &[K]) -> Result<Vector<(K, i64)>, String> {
    fn split<K: SortKey, P: Copy + Send + Sync + Into<u64>>(
        keys: &[K],
        position: impl Fn(usize) -> P,
    ) -> Option<(Column<K>, Column<i64>)> {
        let pairs = keys.iter().enumerate().map(|(i, &k)| (k, position(i))).collect();
        let (sorted, _) =
            radix_sort(Items::Owned(pairs), K::BITS, |(k, _)| k.radix_of(), Column::try_with_capacity)?;
        Some(sorted.iter().map(|&(k, p)| (k, p.into() as i64)).unzip())
    }
    let (sorted, positions) =
        if u32::try_from(keys.len()).is_ok() { split(keys, |i| i as u32) } else { split(keys, |i| i as u64) }
            .ok_or("no memory for the sorted keys")?;
    vector_of(sorted.len(), vec![K::buffer(sorted), Buffer::I64(positions)])
}

/// The destination of a pass, written by every chunk at its own places.
struct Out<T>(*mut T);
// SAFETY: the chunks write disjoint places (`radix_sort`).
unsafe impl<T: Send> Sync for Out<T> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sorts_stably_by_the_low_bits_across_chunks() {
        // more keys than a chunk, so that several chunks fill each digit
        let n = 5 * MIN_CHUNK + 7;
        let items: Vec<(u64, usize)> =
            (0..n).map(|i| ((i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 40, i)).collect();
        let mut want = items.clone();
        want.sort_by_key(|&(k, _)| k & 0xfff);
        let (sorted, _) =
            radix_sort(Items::Borrowed(&items), 12, |&(k, _)| k, Column::try_with_capacity).unwrap();
        assert_eq!(sorted, want);
    }

    #[test]
    fn a_pass_where_every_key_has_one_digit_is_skipped_and_the_rest_sort() {
        let items: Vec<u64> = (0..1000).map(|i| (7 << 8) | ((999 - i) % 256)).collect();
        let mut want = items.clone();
        want.sort();
        let (sorted, _) =
            radix_sort(Items::Owned(items.into()), 16, |&k| k, Column::try_with_capacity).unwrap();
        assert_eq!(sorted, want);
        let (sorted, _) =
            radix_sort(Items::Borrowed(&[] as &[u64]), 64, |&k| k, Column::try_with_capacity).unwrap();
        assert_eq!(sorted, Vec::<u64>::new());
    }

    #[test]
    fn borrowed_items_are_read_in_place_and_copied_when_no_pass_moves_them() {
        let mut made = 0;
        let mut column = |n| {
            made += 1;
            Column::try_with_capacity(n)
        };
        // every key has one digit in every pass: nothing moves, one copy
        let same = vec![5u64; 3000];
        let (sorted, spares) = radix_sort(Items::Borrowed(&same), 32, |&k| k, &mut column).unwrap();
        assert_eq!((sorted, spares.len()), (same.clone().into(), 0));
        // four passes that move: two columns, one left over
        let keys: Vec<u64> = (0..3000u64).map(|i| i.wrapping_mul(0x9e37_79b9) & 0xffff_ffff).collect();
        let mut want = keys.clone();
        want.sort();
        let (sorted, spares) = radix_sort(Items::Borrowed(&keys), 32, |&k| k, &mut column).unwrap();
        assert_eq!(sorted, want);
        assert_eq!(spares.len(), 1);
        assert!(spares[0].is_empty());
        assert_eq!(made, 3, "one copy, then two columns for four passes");
    }
}

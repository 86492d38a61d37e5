//! Recycled array storage.
//!
//! Note [Recycled buffers]
//! A program run writes its results into new buffers. A large new buffer
//! comes from the operating system as untouched pages, and the first
//! write to each page costs a fault and the kernel zeroing it: for
//! `saxpy` over 2^24 floats that was most of the run (a profile spent 39%
//! of its samples in the kernel's `clear_page_erms`; a hand-written loop
//! allocating its output each time was as slow as ours). So, as the
//! caching allocators of PyTorch and JAX do for device memory, the
//! buffers of a dropped array of at least `MIN_BYTES` are kept here, up
//! to `Config::pool_mb` mebibytes in all (`ACCELERATE_POOL_MB`, default
//! 512; 0 turns the pool off; one pool per process, bounded by the last
//! program prepared), and a kernel's output of the same element type takes one whose
//! capacity fits (at least its size and less than twice it, so that
//! little memory is wasted; of the smallest that fit, the one given last,
//! which the cache is likeliest to hold) instead of asking the allocator. The oldest
//! buffers go first when the pool is full. A recycled buffer's old
//! contents are never read: a kernel writes every element of its output
//! before the buffer's length covers it (`Buffer::set_len`).

use super::value::Buffer;
use super::{Column, PrimElt, ScalarTy};
use std::collections::VecDeque;
use std::sync::{Mutex, OnceLock};

/// Smaller buffers are left to the allocator, which reuses them well.
const MIN_BYTES: usize = 1 << 20;

struct Pool {
    buffers: VecDeque<Buffer>,
    bytes: usize,
    limit: usize,
}

fn pool() -> &'static Mutex<Pool> {
    static POOL: OnceLock<Mutex<Pool>> = OnceLock::new();
    POOL.get_or_init(|| Mutex::new(Pool { buffers: VecDeque::new(), bytes: 0, limit: 512 << 20 }))
}

/// Bounds the pool at `mb` MiB (`Config::pool_mb`), dropping the oldest
/// buffers that no longer fit.
#[doc(hidden)]
pub fn set_limit(mb: usize) {
    let Ok(mut p) = pool().lock() else { return };
    p.limit = mb.saturating_mul(1 << 20);
    while p.bytes > p.limit {
        let Some(old) = p.buffers.pop_front() else { break };
        p.bytes -= old.capacity_bytes();
    }
}

/// Keeps the storage of a buffer that is no longer used, if it is large
/// and fits.
pub(crate) fn give(b: Buffer) {
    let bytes = b.capacity_bytes();
    if bytes < MIN_BYTES {
        return;
    }
    let Ok(mut p) = pool().lock() else { return };
    if bytes > p.limit {
        return;
    }
    while p.bytes + bytes > p.limit {
        let Some(old) = p.buffers.pop_front() else { break };
        p.bytes -= old.capacity_bytes();
    }
    p.bytes += bytes;
    p.buffers.push_back(b);
}

/// An empty buffer of type `ty` with room for `n` elements from the pool,
/// if one fits: the smallest whose capacity is at least `n` and less than
/// `2n`, of those the one given last. Taking the oldest instead made a
/// saxpy of 2^18 `f32`s write into a buffer the cache had long dropped
/// when other programs of the same size had run before it (0.21 to 0.24
/// ms in the whole small set, 0.14 to 0.16 alone; docs/benchmarks.md,
/// the ninth session on issue 21).
pub(crate) fn take(ty: ScalarTy, n: usize) -> Option<Buffer> {
    let bytes = n.checked_mul(ty.size_bytes())?;
    if bytes < MIN_BYTES {
        return None;
    }
    let mut p = pool().lock().ok()?;
    let fits = |b: &Buffer| b.ty() == ty && b.capacity() >= n && b.capacity() / 2 < n;
    // the most recently given of the smallest that fit (the last of them:
    // `give` appends), whose lines the cache is likeliest to hold still
    let (at, _) =
        p.buffers.iter().enumerate().rev().filter(|(_, b)| fits(b)).min_by_key(|(_, b)| b.capacity())?;
    let mut b = p.buffers.remove(at)?;
    p.bytes -= b.capacity_bytes();
    b.clear();
    Some(b)
}

/// An empty column with room for `n` elements of `T`, recycled if one
/// fits (as `take`), else new; `None` if the memory cannot be had. For
/// the library's host code that fills columns itself, as the native sort.
pub fn column<T: PrimElt>(n: usize) -> Option<Column<T>> {
    take(T::TY, n).and_then(T::column).or_else(|| Column::try_with_capacity(n))
}

/// Keeps a column that is no longer used for a later `column` or kernel
/// output (as `give`); an `f16` column, whose buffer would be a copy, is
/// dropped.
pub fn recycle<T: PrimElt>(c: Column<T>) {
    if T::TY != ScalarTy::F16 {
        give(T::buffer(c));
    }
}

/// The bytes the pool holds now.
pub fn pooled_bytes() -> usize {
    pool().lock().map(|p| p.bytes).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn of_the_smallest_that_fit_the_last_given_is_taken() {
        // a type and size no other test of this crate pools
        let n = (3 << 20) + 7;
        let older = Buffer::try_with_capacity(ScalarTy::U16, n).unwrap();
        let newer = Buffer::try_with_capacity(ScalarTy::U16, n).unwrap();
        let larger = Buffer::try_with_capacity(ScalarTy::U16, n + 1000).unwrap();
        let (o, w) = (older.as_ptr(), newer.as_ptr());
        give(older);
        give(newer);
        give(larger);
        let first = take(ScalarTy::U16, n).unwrap();
        assert_eq!(first.as_ptr(), w, "the buffer given last, not the older one");
        let second = take(ScalarTy::U16, n).unwrap();
        assert_eq!(second.as_ptr(), o, "then the older one, before the larger");
        assert!(take(ScalarTy::U16, n).unwrap().capacity() >= n + 1000);
        assert!(take(ScalarTy::U16, n).is_none());
    }

    #[test]
    fn a_recycled_column_is_taken_again() {
        // a type and size no other test of this crate pools
        let n = (5 << 20) + 3;
        let c: Column<i16> = column(n).unwrap();
        assert!(c.capacity() >= n && c.is_empty());
        let at = c.as_ptr();
        recycle(c);
        let again: Column<i16> = column(n).unwrap();
        assert_eq!(again.as_ptr(), at, "the recycled storage");
        assert!(again.is_empty());
    }

    #[cfg(feature = "f16")]
    #[test]
    fn an_f16_column_is_dropped_not_copied_into_the_pool() {
        // a type and size no other test of this crate pools
        let n = (5 << 20) + 5;
        recycle(column::<half::f16>(n).unwrap());
        assert!(take(ScalarTy::F16, n).is_none());
    }
}

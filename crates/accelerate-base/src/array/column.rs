//! The storage of one buffer: a vector of one primitive type whose first
//! element starts a cache line (Note [Buffers start a cache line]).
//!
//! Note [Buffers start a cache line]
//! A `Vec` of `f32` is aligned to 4 bytes, and a large one, which glibc's
//! `malloc` maps on its own pages behind a 16-byte header, starts 16
//! bytes into a cache line. Then every 64-byte vector load of a kernel
//! that walks the buffer from its start straddles two lines, and an
//! AVX-512 core issues two loads for it. Where a kernel is bound by its
//! loads rather than by memory this costs much: on the AMD EPYC guest
//! (AVX-512), `accelerate-bench matmul floyd --size large` with every
//! allocation of 64 KiB or more aligned to 64 bytes (a scratch global
//! allocator in the benchmark) took 16 to 19 ms for the matrix product
//! against 26 to 27 ms, and 55 to 57 ms for Floyd-Warshall against 99 to
//! 129 ms, in alternating runs; a C model of the product's tiles took
//! 15 ms with aligned matrices and 25 ms with matrices 16 bytes off.
//!
//! So every buffer the library allocates starts a cache line (64 bytes, as
//! Arrow's allocator aligns its buffers), and an array made from a user's
//! `Vec` is copied into one such buffer (`From<Vec<T>>`): once, when the
//! array is made, not each time a program reads it.
//!
//! The storage is a plain allocation with room for up to a cache line
//! more, the elements starting at the first aligned position in it, not
//! an allocation of alignment 64 (`aligned-vec`'s `AVec`, tried first):
//! glibc serves those through `memalign`, which asks for the size plus
//! the alignment, so a freed buffer is always a little too small for the
//! next of the same size, and the heap grew at every step of a chain of
//! kernels (`tests/memory_bounded.rs`, 32 scans of 16 MiB arrays: the
//! peak rose by 144 MiB, 9 arrays, where it stays under 8).
//!
//! Note [Huge pages for large buffers]
//! A kernel that streams a large array is bound by memory, and each 4 KiB
//! page it touches costs a walk of the page tables on a TLB miss. NumPy
//! asks Linux to back every allocation of 4 MiB or more with 2 MiB pages
//! (`madvise(MADV_HUGEPAGE)`, which the kernel honours where
//! `/sys/kernel/mm/transparent_hugepage/enabled` says `madvise`, as on
//! most distributions, or `always`), so the Python peers of the benchmark
//! read their arrays from huge pages and ours did not. A C model of the
//! `stream` benchmark's loop (the sum of the squares of 2^27 `i32`s, two
//! threads, best of 40, the 2-core EPYC guest, 2026-12-01) read 64.8 to
//! 66.5 GB/s from small pages and 73.7 to 76.6 GB/s from huge ones. So a
//! column of at least `HUGE_PAGE_MIN_BYTES` asks for huge pages over the
//! whole 2 MiB pages inside it, before anything is written to it (the
//! pages are then made huge as they are first touched). It is advice: a
//! kernel without transparent huge pages, or without a free huge page,
//! leaves the small pages, and nothing else changes.

use std::fmt;
use std::mem::{size_of, MaybeUninit};
use std::ops::{Deref, DerefMut};

/// The alignment of every buffer's first element, in bytes: a cache line,
/// and the width of an AVX-512 vector.
pub const ALIGN: usize = 64;

/// The size of a huge page on x86-64 and of the smallest one on AArch64,
/// and a multiple of every base page size: the unit `madvise` is asked
/// about (Note [Huge pages for large buffers]).
#[cfg(target_os = "linux")]
const HUGE_PAGE: usize = 2 << 20;

/// Allocations from this size up are advised onto huge pages: NumPy's
/// threshold for the same advice.
#[cfg(target_os = "linux")]
const HUGE_PAGE_MIN_BYTES: usize = 4 << 20;

/// A growable vector of `T` whose first element starts a cache line (Note
/// [Buffers start a cache line]): `len` elements from `off` in `buf`, a
/// plain allocation with room for the offset.
pub struct Column<T> {
    /// Storage only: its length is its capacity, and the elements `off ..
    /// off + len` are initialised.
    buf: Vec<MaybeUninit<T>>,
    off: usize,
    len: usize,
}

impl<T> Column<T> {
    pub fn new() -> Column<T> {
        Column { buf: Vec::new(), off: 0, len: 0 }
    }

    /// An empty column with room for `n` elements, or `None` if that much
    /// memory cannot be had (never a panic or an abort).
    pub fn try_with_capacity(n: usize) -> Option<Column<T>> {
        let mut c = Column::new();
        c.grow_to(n)?;
        Some(c)
    }

    /// Elements of padding an allocation needs so that one of its
    /// positions starts a cache line.
    fn pad() -> usize {
        match size_of::<T>() {
            0 => 0,
            s => ALIGN.div_ceil(s),
        }
    }

    /// Moves the elements into storage with room for `n`, the first
    /// starting a cache line where `T`'s size allows; `None` without the
    /// memory (the column is then unchanged).
    fn grow_to(&mut self, n: usize) -> Option<()> {
        if n == 0 && self.buf.is_empty() {
            // nothing to hold: no allocation, as `Vec::new`
            return Some(());
        }
        let mut buf: Vec<MaybeUninit<T>> = Vec::new();
        buf.try_reserve_exact(n.checked_add(Self::pad())?).ok()?;
        // SAFETY: `MaybeUninit` needs no initialisation.
        unsafe { buf.set_len(buf.capacity()) };
        advise_huge_pages(buf.as_ptr() as usize, buf.len() * size_of::<T>());
        let addr = buf.as_ptr() as usize;
        let off = match size_of::<T>() {
            0 => 0,
            s => {
                let gap = addr.next_multiple_of(ALIGN) - addr;
                if gap % s == 0 {
                    gap / s
                } else {
                    0
                }
            }
        };
        // SAFETY: `off + len <= buf.len()` (`off <= pad`, `len <= n`),
        // and the two allocations are distinct; the old storage's
        // elements are moved bitwise and the old storage is then dropped
        // as `MaybeUninit`s, so nothing is dropped twice.
        unsafe {
            std::ptr::copy_nonoverlapping(self.as_ptr(), buf.as_mut_ptr().add(off).cast::<T>(), self.len);
        }
        self.buf = buf;
        self.off = off;
        Some(())
    }

    /// The elements it has room for: the storage less the padding it was
    /// given (so exactly what `try_with_capacity` asked for), whatever
    /// part of the padding the offset took.
    pub fn capacity(&self) -> usize {
        self.buf.len().saturating_sub(Self::pad())
    }

    pub fn push(&mut self, x: T) {
        if self.len == self.capacity() {
            let n = (2 * self.capacity()).max(self.len + 1).max(8);
            self.grow_to(n).expect("memory for a column's elements");
        }
        self.buf[self.off + self.len].write(x);
        self.len += 1;
    }

    /// Room for `extra` more elements.
    fn reserve(&mut self, extra: usize) {
        let need = self.len + extra;
        if need > self.capacity() {
            self.grow_to(need.max(2 * self.capacity())).expect("memory for a column's elements");
        }
    }

    pub fn clear(&mut self) {
        let len = std::mem::replace(&mut self.len, 0);
        // SAFETY: the first `len` elements were initialised, and are no
        // longer counted.
        unsafe { std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.as_mut_ptr(), len)) };
    }

    /// The address of the first element (of the capacity, when empty).
    pub fn as_ptr(&self) -> *const T {
        // SAFETY: `off <= buf.len()`
        unsafe { self.buf.as_ptr().add(self.off).cast() }
    }

    pub fn as_mut_ptr(&mut self) -> *mut T {
        // SAFETY: `off <= buf.len()`
        unsafe { self.buf.as_mut_ptr().add(self.off).cast() }
    }

    /// The storage past the elements, to write before `set_len`.
    pub fn spare_capacity_mut(&mut self) -> &mut [MaybeUninit<T>] {
        let from = self.off + self.len;
        &mut self.buf[from..]
    }

    /// Declares the first `n` elements written.
    ///
    /// # Safety
    /// `n` is at most the capacity and the first `n` elements hold valid
    /// values of `T`.
    pub unsafe fn set_len(&mut self, n: usize) {
        self.len = n;
    }
}

/// Asks the kernel to back the whole 2 MiB pages of a large new
/// allocation with huge pages (Note [Huge pages for large buffers]). It is
/// advice: where the kernel cannot or will not, the allocation keeps its
/// small pages, so the result is not looked at.
fn advise_huge_pages(addr: usize, bytes: usize) {
    #[cfg(target_os = "linux")]
    if bytes >= HUGE_PAGE_MIN_BYTES {
        let start = addr.next_multiple_of(HUGE_PAGE);
        let end = (addr + bytes) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            // SAFETY: `start .. end` lies inside the allocation just made,
            // which this column owns; `MADV_HUGEPAGE` changes how its pages
            // are backed, never their contents.
            unsafe { libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE) };
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = (addr, bytes);
}

impl<T> Drop for Column<T> {
    fn drop(&mut self) {
        self.clear();
    }
}

impl<T: Clone> Column<T> {
    /// Appends a copy of `xs`.
    pub fn extend_from_slice(&mut self, xs: &[T]) {
        self.reserve(xs.len());
        for (slot, x) in self.spare_capacity_mut().iter_mut().zip(xs) {
            slot.write(x.clone());
        }
        // the elements are counted once all are written (a panicking
        // `clone` leaks the written ones, never counts an unwritten one)
        self.len += xs.len();
    }

    /// The elements as a `Vec` (a copy).
    pub fn into_vec(self) -> Vec<T> {
        self.to_vec()
    }
}

impl<T: Clone> Clone for Column<T> {
    fn clone(&self) -> Column<T> {
        Column::from(&self[..])
    }
}

impl<T: PartialEq> PartialEq for Column<T> {
    fn eq(&self, other: &Column<T>) -> bool {
        self[..] == other[..]
    }
}

impl<T> Default for Column<T> {
    fn default() -> Column<T> {
        Column::new()
    }
}

impl<T> Deref for Column<T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        // SAFETY: the `len` elements from `off` are initialised.
        unsafe { std::slice::from_raw_parts(self.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for Column<T> {
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as `deref`, and borrowed mutably.
        unsafe { std::slice::from_raw_parts_mut(self.as_mut_ptr(), self.len) }
    }
}

impl<T: fmt::Debug> fmt::Debug for Column<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<T: PartialEq, const N: usize> PartialEq<[T; N]> for Column<T> {
    fn eq(&self, other: &[T; N]) -> bool {
        self[..] == other[..]
    }
}

impl<T: PartialEq> PartialEq<[T]> for Column<T> {
    fn eq(&self, other: &[T]) -> bool {
        self[..] == *other
    }
}

impl<T: PartialEq> PartialEq<Vec<T>> for Column<T> {
    fn eq(&self, other: &Vec<T>) -> bool {
        self[..] == other[..]
    }
}

impl<T> Extend<T> for Column<T> {
    fn extend<I: IntoIterator<Item = T>>(&mut self, iter: I) {
        let iter = iter.into_iter();
        self.reserve(iter.size_hint().0);
        for x in iter {
            self.push(x);
        }
    }
}

/// A copy of the vector's elements into storage that starts a cache line.
impl<T: Clone> From<Vec<T>> for Column<T> {
    fn from(v: Vec<T>) -> Column<T> {
        Column::from(v.as_slice())
    }
}

impl<T: Clone> From<&[T]> for Column<T> {
    fn from(v: &[T]) -> Column<T> {
        let mut c = Column::new();
        c.extend_from_slice(v);
        c
    }
}

impl<T> FromIterator<T> for Column<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Column<T> {
        let mut c = Column::new();
        c.extend(iter);
        c
    }
}

impl<'a, T> IntoIterator for &'a Column<T> {
    type Item = &'a T;
    type IntoIter = std::slice::Iter<'a, T>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_start_a_cache_line() {
        let made: Column<f32> = (0..100_000).map(|i| i as f32).collect();
        let copied = Column::from(vec![1u8; 70_000]);
        let reserved = Column::<f64>::try_with_capacity(3).unwrap();
        let grown = {
            let mut c = Column::new();
            for i in 0..1000i16 {
                c.push(i);
            }
            c
        };
        assert_eq!(made.as_ptr() as usize % ALIGN, 0);
        assert_eq!(copied.as_ptr() as usize % ALIGN, 0);
        assert_eq!(reserved.as_ptr() as usize % ALIGN, 0);
        assert_eq!(grown.as_ptr() as usize % ALIGN, 0);
        assert_eq!(made[99_999], 99_999.0);
        assert_eq!(copied.into_vec(), vec![1u8; 70_000]);
        assert_eq!(grown.iter().map(|&x| x as i64).sum::<i64>(), 499_500);
        assert!(Column::<u64>::try_with_capacity(usize::MAX / 4).is_none());
    }

    /// The flags of the memory mapping holding `addr`, from
    /// `/proc/self/smaps`.
    #[cfg(target_os = "linux")]
    fn mapping_flags(addr: usize) -> Vec<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("/proc/self/smaps");
        let mut inside = false;
        for line in smaps.lines() {
            let range = line.split_whitespace().next().and_then(|r| r.split_once('-'));
            if let Some((lo, hi)) = range.filter(|_| !line.starts_with("VmFlags")) {
                if let (Ok(lo), Ok(hi)) = (usize::from_str_radix(lo, 16), usize::from_str_radix(hi, 16)) {
                    inside = lo <= addr && addr < hi;
                    continue;
                }
            }
            if let Some(flags) = line.strip_prefix("VmFlags:").filter(|_| inside) {
                return flags.split_whitespace().map(str::to_string).collect();
            }
        }
        panic!("no mapping holds {addr:#x}")
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn large_columns_are_advised_onto_huge_pages() {
        let large = Column::from(vec![7u32; (HUGE_PAGE_MIN_BYTES + 3 * HUGE_PAGE) / 4]);
        let grown: Column<u8> = std::iter::repeat_n(1u8, HUGE_PAGE_MIN_BYTES + HUGE_PAGE).collect();
        for c in [large.as_ptr() as usize, grown.as_ptr() as usize] {
            let inner = c.next_multiple_of(HUGE_PAGE);
            // `hg`: the range was given `MADV_HUGEPAGE`
            assert!(mapping_flags(inner).iter().any(|f| f == "hg"), "{:?}", mapping_flags(inner));
        }
        assert!(large.iter().all(|&x| x == 7) && grown.len() == HUGE_PAGE_MIN_BYTES + HUGE_PAGE);
    }

    #[test]
    fn columns_own_their_elements() {
        let mut words: Column<String> = ["a", "bb", "ccc"].iter().map(|w| w.to_string()).collect();
        for i in 0..100 {
            words.push(format!("w{i}"));
        }
        let copy = words.clone();
        words.clear();
        assert!(words.is_empty() && copy.len() == 103);
        assert_eq!((copy[1].as_str(), copy[102].as_str()), ("bb", "w99"));
        // a size that divides no cache line: correct, if not aligned
        let odd: Column<[u8; 3]> = (0..50u8).map(|i| [i; 3]).collect();
        assert_eq!(odd[49], [49; 3]);
        let mut grown = Column::from(vec![1u32, 2, 3]);
        grown.extend_from_slice(&[4, 5]);
        grown.extend(6..=1000);
        assert_eq!(grown.as_ptr() as usize % ALIGN, 0);
        assert_eq!(grown.into_vec(), (1..=1000).collect::<Vec<u32>>());
    }
}

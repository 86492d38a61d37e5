//! Sorting signed 32-bit keys with the library's sort (ICFP'13 §5.8): what
//! a user writes is one call, `keys.sort()`, and the library does the
//! rest: a stable least-significant-digit radix sort, natively on the CPU
//! backend (8 bits a pass, Note [A native sort]) and elsewhere one bit per
//! pass, each pass Blelloch's `split` (a `map` to the bit, an exclusive
//! `scanl` of it, a `generate` of each key's new position and a `permute`
//! there; `accelerate-embed/src/lang/library/sort.rs`). A signed key is
//! first mapped to an unsigned radix with its sign bit flipped, so the
//! passes order the whole `i32` range.
//!
//! Used by the `radixsort` benchmark (`accelerate-bench`). The example
//! `examples/radixsort.rs` calls the same operation with inputs of its own.

use crate::rng::Rng;
use accelerate::prelude::*;

/// The keys in ascending order: the library's `sort`.
pub fn radixsort(keys: &Acc<Vector<i32>>) -> Acc<Vector<i32>> {
    keys.sort()
}

/// The same order in plain Rust: `sort_unstable` (pattern-defeating
/// quicksort), the fastest of the standard library's sorts for plain
/// integers, where stability cannot be observed (equal `i32`s are the same
/// value).
pub fn radixsort_ref(keys: &[i32]) -> Vec<i32> {
    let mut out = keys.to_vec();
    out.sort_unstable();
    out
}

/// `n` keys drawn uniformly from the whole `i32` range, with `i32::MIN`,
/// `i32::MAX`, 0 and -1 planted every 97th position (the extremes of the
/// sign-bit flip, and the two keys either side of it).
pub fn keys(n: usize, seed: u64) -> Vec<i32> {
    let mut rng = Rng::new(seed);
    let mut keys: Vec<i32> = (0..n).map(|_| (rng.next_u64() >> 32) as u32 as i32).collect();
    for (slot, &k) in keys.iter_mut().step_by(97).zip([i32::MIN, i32::MAX, 0, -1].iter().cycle()) {
        *slot = k;
    }
    keys
}

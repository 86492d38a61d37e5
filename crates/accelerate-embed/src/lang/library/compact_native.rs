//! Stream compaction on host arrays (Note [A native compaction]): what
//! the interpreter and the CPU backend run for `compact` and `filter` (a
//! `Foreign::host` implementation); every other backend runs the
//! compaction written in the language (`gather_scatter.rs`).
//!
//! Note [A native compaction]
//! The compaction written in the language gives every element its place
//! by an exclusive scan of 0/1 flags (an `i64` a element, written and read
//! back) and moves it there by a `permute` whose index function drops the
//! elements not kept. On the two-core EPYC of docs/benchmarks.md it kept
//! half of 2^24 `f32`s in 41 ms, where a hand-written rayon version took
//! 5.8 ms: the scan's `i64`s alone are 256 MiB of traffic, and the
//! permute's test of the flag is a branch that half the elements, kept at
//! random, mispredict. The hand-written form counts each chunk's kept
//! elements, places the chunks by the counts before them, and copies each
//! chunk without a branch: every element is stored at the next free
//! place, which advances only when the element is kept. No primitive of
//! the language writes that way (a `permute` writes an element or drops
//! it), so, as CUB's `DeviceSelect` and NumPy's boolean indexing are
//! native, the library's compaction is a foreign function with that
//! algorithm as its host implementation, and the scan and permute as its
//! fallback. The mask is the argument, computed (and fused with its
//! producers) by the backend: one byte an element.
//!
//! The kept elements of all rows, in row-major order, are the kept
//! elements of the flattened array in order, so the chunks ignore rows;
//! the rows only count their own kept elements.

use super::sort_native::{chunk_len, MIN_CHUNK};
use accelerate_base::array::{ArrayData, ArraysVal, Buffer, Column, EltTy, ScalarTy};
use rayon::prelude::*;
use std::sync::Arc;

/// The kept elements of `xs` (as one vector) and the number kept in each
/// row (an array of the outer shape), over the intersection of the two
/// arrays' shapes, as `compact` defines them.
pub(super) fn compact(mask: &ArrayData, xs: &ArrayData) -> Result<(ArraysVal, ArraysVal), String> {
    let (md, xd) = (mask.shape(), xs.shape());
    let (Some(Buffer::Bool(flags)), true) = (mask.buffers().first(), md.len() == xd.len() && !md.is_empty())
    else {
        return Err(format!("a compaction of {:?} by {:?}", xs.ty(), mask.ty()));
    };
    if md == xd {
        return compact_rows(flags, &xs.buffers().iter().collect::<Vec<_>>(), md, xs.elt_ty());
    }
    // Otherwise the first rows, and the first elements of each, that both
    // arrays have, copied row by row.
    let shape: Vec<usize> = md.iter().zip(xd).map(|(&a, &b)| a.min(b)).collect();
    let n = shape[shape.len() - 1];
    let size = shape.iter().product();
    let room = |ty| Buffer::try_with_capacity(ty, size).ok_or("no memory for the compaction's arguments");
    let mut m = room(ScalarTy::Bool)?;
    let mut leaves = xs.buffers().iter().map(|b| room(b.ty())).collect::<Result<Vec<_>, _>>()?;
    let mut fail = false;
    accelerate_base::array::typed::for_each_index(&shape[..shape.len() - 1], |o| {
        let start = |dims: &[usize]| {
            let row = o.iter().zip(dims).fold(0, |acc, (&i, &d)| acc * d + i);
            row * dims[dims.len() - 1]
        };
        let (a, b) = (start(md), start(xd));
        fail |= m.extend_range(&mask.buffers()[0], a..a + n).is_none();
        for (l, src) in leaves.iter_mut().zip(xs.buffers()) {
            fail |= l.extend_range(src, b..b + n).is_none();
        }
    });
    match (fail, &m) {
        (false, Buffer::Bool(m)) => compact_rows(m, &leaves.iter().collect::<Vec<_>>(), &shape, xs.elt_ty()),
        _ => Err(format!("a compaction of shape {xd:?} by a mask of shape {md:?}")),
    }
}

/// The compaction of the row-major `flags` and `leaves` (the leaves of
/// elements of type `elt`), both of shape `shape`.
fn compact_rows(
    flags: &[bool],
    leaves: &[&Buffer],
    shape: &[usize],
    elt: &EltTy,
) -> Result<(ArraysVal, ArraysVal), String> {
    let (outer, n) = (&shape[..shape.len() - 1], shape[shape.len() - 1]);
    let rows: usize = outer.iter().product();
    let len = chunk_len(flags.len());
    let counts: Vec<usize> = flags.par_chunks(len).map(kept).collect();
    let total: usize = counts.iter().sum();
    let row_counts: Vec<i64> = match (rows, n) {
        (1, _) => vec![total as i64],
        (_, 0) => vec![0; rows],
        _ => flags.par_chunks(n).with_min_len((MIN_CHUNK / n).max(1)).map(|r| kept(r) as i64).collect(),
    };
    let mut out = Vec::with_capacity(leaves.len());
    for leaf in leaves {
        let mut o = Buffer::uninit(leaf.ty(), total).ok_or("no memory for the kept elements")?;
        copy_kept(leaf, flags, len, &counts, &mut o)?;
        out.push(o);
    }
    let data =
        ArrayData::from_buffers(vec![total], elt.clone(), out).ok_or("the kept elements lost their type")?;
    let counts = ArrayData::from_buffers(
        outer.to_vec(),
        EltTy::Scalar(ScalarTy::I64),
        vec![Buffer::I64(row_counts.into())],
    )
    .ok_or("the counts lost their shape")?;
    Ok((ArraysVal::Array(Arc::new(data)), ArraysVal::Array(Arc::new(counts))))
}

/// How many of `flags` are `true`: eight flags a word, added bytewise
/// (each byte is 0 or 1, so a byte lane holds the count of up to 255
/// words), then the lanes summed. The loop over the words is a vector
/// add on any x86-64; a sum of the flags one at a time, which LLVM left
/// scalar for the baseline target, took a fifth of the compaction's time
/// (a profile of `accelerate-bench filter --size large`).
fn kept(flags: &[bool]) -> usize {
    // SAFETY: a `bool` is one byte, 0 or 1, a valid `u8`; the slice
    // covers the same memory for the same lifetime.
    let bytes = unsafe { std::slice::from_raw_parts(flags.as_ptr().cast::<u8>(), flags.len()) };
    const LANES: u64 = 0x00ff_00ff_00ff_00ff;
    bytes
        .chunks(255 * 8)
        .map(|block| {
            let words = block.chunks_exact(8);
            let tail: usize = words.remainder().iter().map(|&b| usize::from(b)).sum();
            let lanes =
                words.map(|w| w.try_into().map_or(0, u64::from_le_bytes)).fold(0u64, u64::wrapping_add);
            // four 16-bit lanes of at most 510, then their sum (at most
            // 2040) in the top 16 bits
            let pairs = (lanes & LANES) + ((lanes >> 8) & LANES);
            (pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48) as usize + tail
        })
        .sum()
}

/// The elements of `leaf` whose flag is set, in order, into `out` (empty,
/// with room for all of them): chunk `c` of `len` elements keeps
/// `counts[c]` of them.
fn copy_kept(
    leaf: &Buffer,
    flags: &[bool],
    len: usize,
    counts: &[usize],
    out: &mut Buffer,
) -> Result<(), String> {
    macro_rules! pairs {
        ($($v:ident),*) => {
            match (leaf, out) {
                $((Buffer::$v(xs), Buffer::$v(o)) => copy_chunks(xs, flags, len, counts, o),)*
                _ => return Err("a kept element's buffer changed its type".into()),
            }
        };
    }
    pairs!(Bool, I8, I16, I32, I64, U8, U16, U32, U64, F16, F32, F64);
    Ok(())
}

fn copy_chunks<T: Copy + Send + Sync>(
    xs: &[T],
    flags: &[bool],
    len: usize,
    counts: &[usize],
    out: &mut Column<T>,
) {
    let total: usize = counts.iter().sum();
    // each chunk's places: the run after the places of the chunks before it
    let mut places = Vec::with_capacity(counts.len());
    let mut rest = &mut out.spare_capacity_mut()[..total];
    for &c in counts {
        let (here, after) = rest.split_at_mut(c);
        places.push(here);
        rest = after;
    }
    xs.par_chunks(len).zip(flags.par_chunks(len)).zip(places).for_each(|((xs, flags), places)| {
        let mut k = 0;
        for (x, &keep) in xs.iter().zip(flags) {
            // the chunk's last kept element fills its places: what follows
            // is all dropped
            let Some(place) = places.get_mut(k) else { break };
            place.write(*x);
            k += usize::from(keep);
        }
    });
    // SAFETY: each chunk wrote every one of its places: place k is written
    // before k advances past it, and k reaches the chunk's count (the
    // number of its flags set), so all `total` places hold a value of `xs`.
    unsafe { out.set_len(total) };
}

#[cfg(test)]
mod tests {
    use super::kept;

    #[test]
    fn kept_counts_every_flag_at_every_length_and_at_the_lanes_limit() {
        let naive = |f: &[bool]| f.iter().filter(|&&b| b).count();
        // all set: every byte lane reaches 255 in a block of 255 words
        let all = vec![true; 255 * 8 * 3 + 13];
        assert_eq!(kept(&all), all.len());
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mixed: Vec<bool> = (0..100_003)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x % 3 == 0
            })
            .collect();
        for n in [0, 1, 7, 8, 9, 2039, 2040, 2041, 4080, 100_003] {
            assert_eq!(kept(&mixed[..n]), naive(&mixed[..n]), "{n} flags");
            assert_eq!(kept(&all[..n.min(all.len())]), n.min(all.len()), "{n} set flags");
        }
    }
}

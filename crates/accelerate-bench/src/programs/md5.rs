//! MD5 hash recovery (the sequences thesis §7.3), as in
//! `examples/md5.rs`: the index of the first word of a dictionary whose
//! MD5 digest is a given one (the word planted three quarters in). Every
//! variant hashes every word (no early exit) and returns the first match.
//! Compute-bound: 64 steps of `u32` arithmetic per 64-byte word.
//!
//! Bytes are the dictionary read once (64 bytes a padded word); no flops.
//!
//! - `accelerate`, `accelerate-no-fusion`, `accelerate-no-ilp`: the flat
//!   program (`md5_search`, the dictionary in memory as one matrix),
//!   compiled once. There is no `accelerate-no-sharing`: without scalar
//!   sharing recovery each of the 64 steps copies the expressions of the
//!   state words it reads two to four times, so the program's expression
//!   tree grows exponentially with the steps (compiling it with sharing
//!   off had not finished after a minute when it was tried).
//! - `accelerate-seq`: the sequence form (`md5_search_seq`), the
//!   dictionary streamed in as batches of [`batch`] words made before the
//!   clock starts (`stream_in` of their clones, the last batch shorter
//!   where `BATCH` does not divide the words). A sequence is compiled by
//!   the run that consumes it, so its time includes converting and
//!   lifting the chunk program and loading its kernels (from the kernel
//!   cache after the first run).
//! - `rust-seq`: the plain loop with the reference MD5
//!   (`md5::search_ref`, which also hashes every word), the result every
//!   variant is checked against.
//! - `rust-rayon`: blocks of words on rayon's pool, each hashed [`LANES`]
//!   words at a time with the state words of all lanes in arrays, so the
//!   steps vectorise (`native`: AVX2 or AVX-512), as password crackers
//!   hash several candidates per instruction.
//! - `numpy`, `numba`, `jax`: the Python peers (`peers/bench_md5.py`),
//!   given the dictionary as one matrix in memory: NumPy's 64 steps as
//!   whole-array `uint32` operations over blocks of words, a Numba
//!   `prange` over groups of 64 words whose steps loop over the lanes
//!   (vectorised, as `rust-rayon`'s), and JAX's steps on whole `uint32`
//!   columns under `jit`.
//!
//! The program, its reference and the dictionary are
//! `accelerate_programs::md5`.

use super::{accelerate_configs, count, probe_compile, CompileProbe};
use crate::harness::{fresh, value, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate::run_seq_with;
use accelerate_programs::md5::{
    batches, dictionary_blocks, md5_ref, md5_search, md5_search_seq, message_index, planted_word, search_ref,
    BLOCK_WORDS, INIT, K, NOT_FOUND, SHIFTS,
};
use accelerate_programs::rng::SEED_A;
use rayon::prelude::*;
use std::sync::Arc;

/// Words in the dictionary (the tiny one has a shorter last batch).
pub fn words(size: Size) -> usize {
    size.pick(1000, 1 << 16, 1 << 22)
}

/// Words per batch of the sequence form (256 KiB of blocks); the tiny
/// size's 1000 words make 15 batches of 64 and one of 40.
pub fn batch(size: Size) -> usize {
    size.pick(64, 4096, 4096)
}

/// The Accelerate program as a function of its arrays.
pub fn program(dict: Acc<Matrix<u32>>, target: Acc<Vector<u32>>) -> Acc<Scalar<i64>> {
    md5_search(&dict, &target)
}

/// Words hashed at once by `rust-rayon`: sixteen `u32` lanes, one AVX-512
/// register or two AVX2 ones per state word.
pub const LANES: usize = 16;

/// Words per rayon task: 4096 words (256 KiB) are about a millisecond of
/// hashing on one core, and leave 1024 tasks at 2^22 words.
const WORDS_PER_TASK: usize = 4096;

/// One step of round `R` on all lanes: `R` a constant, so that the
/// round's function is chosen at compile time and the lane loop is
/// straight-line code the compiler vectorises.
#[inline(always)]
fn step<const R: usize>(
    st: &mut [[u32; LANES]; 4],
    m: &[[u32; LANES]; BLOCK_WORDS],
    k: u32,
    s: u32,
    g: usize,
) {
    let [a, b, c, d] = st;
    let mut next = [0u32; LANES];
    for l in 0..LANES {
        let f = match R {
            0 => (b[l] & c[l]) | (!b[l] & d[l]),
            1 => (b[l] & d[l]) | (c[l] & !d[l]),
            2 => b[l] ^ c[l] ^ d[l],
            _ => c[l] ^ (b[l] | !d[l]),
        };
        let t = a[l].wrapping_add(f).wrapping_add(k).wrapping_add(m[g][l]);
        next[l] = b[l].wrapping_add(t.rotate_left(s));
    }
    *st = [*d, next, *b, *c];
}

native_fn! {
    /// The digests of `LANES` blocks (`LANES * 16` words), lane by lane in
    /// each step: the lanes are independent, so each step's operations
    /// vectorise across them.
    fn md5_lanes(blocks: &[u32]) -> [[u32; LANES]; 4] {
        // the message transposed: word j of every lane together
        let mut m = [[0u32; LANES]; BLOCK_WORDS];
        for (l, block) in blocks.chunks_exact(BLOCK_WORDS).enumerate() {
            for j in 0..BLOCK_WORDS {
                m[j][l] = block[j];
            }
        }
        let mut st = INIT.map(|x| [x; LANES]);
        for i in 0..16 {
            step::<0>(&mut st, &m, K[i], SHIFTS[i], message_index(i));
        }
        for i in 16..32 {
            step::<1>(&mut st, &m, K[i], SHIFTS[i], message_index(i));
        }
        for i in 32..48 {
            step::<2>(&mut st, &m, K[i], SHIFTS[i], message_index(i));
        }
        for i in 48..64 {
            step::<3>(&mut st, &m, K[i], SHIFTS[i], message_index(i));
        }
        for (w, init) in st.iter_mut().zip(INIT) {
            for x in w.iter_mut() {
                *x = x.wrapping_add(init);
            }
        }
        st
    }
}

/// The first index in `blocks` (a task's words, the first of which is word
/// `first`) whose digest is `target`, or `NOT_FOUND`; every word hashed.
fn first_in_task(blocks: &[u32], first: usize, target: [u32; 4]) -> i64 {
    let mut best = NOT_FOUND;
    let (full, tail) = blocks.split_at(blocks.len() / (LANES * BLOCK_WORDS) * LANES * BLOCK_WORDS);
    for (j, group) in full.chunks_exact(LANES * BLOCK_WORDS).enumerate() {
        let h = md5_lanes(group);
        if let Some(l) = (0..LANES).find(|&l| [h[0][l], h[1][l], h[2][l], h[3][l]] == target) {
            best = best.min((first + j * LANES + l) as i64);
        }
    }
    let tail_first = first + full.len() / BLOCK_WORDS;
    let in_tail = search_ref(tail, target);
    if in_tail != NOT_FOUND {
        best = best.min(tail_first as i64 + in_tail);
    }
    best
}

/// Parallel: tasks of `WORDS_PER_TASK` words on rayon's pool, each
/// hashed `LANES` at a time; the smallest match over all tasks.
pub fn search_rayon(blocks: &[u32], target: [u32; 4]) -> i64 {
    blocks
        .par_chunks(WORDS_PER_TASK * BLOCK_WORDS)
        .enumerate()
        .map(|(t, task)| first_in_task(task, t * WORDS_PER_TASK, target))
        .min()
        .unwrap_or(NOT_FOUND)
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let (n, batch) = (words(size), batch(size));
    let plant = n * 3 / 4;
    let blocks = Arc::new(dictionary_blocks(0..n, SEED_A, Some(plant)));
    let digest = md5_ref(&planted_word(plant)).expect("a planted word fits a block");
    let want = search_ref(&blocks, digest);
    if want == NOT_FOUND {
        return Err("md5: the planted word is not found by the reference search".into());
    }
    let check = move |got: &i64| {
        if *got == want {
            Ok(())
        } else {
            Err(format!("found index {got}, the sequential search finds {want}"))
        }
    };

    let mut b = Bench::new("md5", format!("{} words of 1 to 55 bytes, batches of {batch}", count(n)));
    b.bytes = Some((n * BLOCK_WORDS * 4) as f64);

    let dict = Matrix::from_vec(dim2(n, BLOCK_WORDS), blocks.to_vec()).map_err(|e| e.to_string())?;
    let target = Vector::from_elems(digest.to_vec());
    for (name, config) in accelerate_configs() {
        if name == "accelerate-no-sharing" {
            // exponential without sharing recovery (the module's doc)
            continue;
        }
        let prog =
            accelerate::compile_with(program, config).map_err(|e| format!("md5, {name}: compiling: {e}"))?;
        let (dict, target) = (dict.clone(), target.clone());
        b.variant(
            name,
            move |s| fresh(s, || prog.run((&dict, &target))),
            move |r: &Scalar<i64>| check(&r.value()),
        );
    }

    let config = accelerate_configs()[0].1.clone();
    let made = Arc::new(batches(&blocks, batch));
    let t = target.clone();
    b.variant(
        "accelerate-seq",
        move |s| {
            fresh(s, || {
                let seq = stream_in(made.to_vec());
                let found = md5_search_seq(&seq, made.len() as i64, batch as i64, &use_array(t.clone()));
                run_seq_with(&found, &config)
            })
        },
        move |r: &Scalar<i64>| check(&r.value()),
    );

    type Search = fn(&[u32], [u32; 4]) -> i64;
    let searches: [(&str, Search); 2] = [("rust-seq", search_ref), ("rust-rayon", search_rayon)];
    for (name, search) in searches {
        let blocks = blocks.clone();
        b.variant(name, move |s| Ok(value(s, || search(&blocks, digest))), check);
    }
    // the Python peers (`crate::peers`): the dictionary (`n x 16` u32s)
    // and the digest (four u32s), and the index as one `i64`
    peers::add(
        &mut b,
        &["numpy", "numba", "jax"],
        &[("blocks.bin", peers::bytes(&blocks)), ("target.bin", peers::bytes(&digest))],
        &[n.to_string()],
        peers::all::<i64>,
        move |r: &Vec<i64>| check(&peers::single(r)?),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lane_wise_md5_agrees_with_the_reference() {
        let blocks = dictionary_blocks(0..LANES, 9, None);
        let h = md5_lanes(&blocks);
        for (l, block) in blocks.chunks_exact(BLOCK_WORDS).enumerate() {
            let want = accelerate_programs::md5::md5_block_ref(block);
            assert_eq!([h[0][l], h[1][l], h[2][l], h[3][l]], want);
        }
    }

    #[test]
    fn parallel_search_finds_the_first_of_repeated_words() {
        // a dictionary twice over, with a tail shorter than the lanes
        let mut blocks = dictionary_blocks(0..5000, 2, Some(4321));
        blocks.extend(dictionary_blocks(0..5003, 2, Some(4321)));
        let d = md5_ref(&planted_word(4321)).unwrap();
        assert_eq!(search_rayon(&blocks, d), 4321);
        assert_eq!(search_ref(&blocks, d), 4321);
        assert_eq!(search_rayon(&blocks, [0; 4]), NOT_FOUND);
        let last = dictionary_blocks(5002..5003, 2, None);
        assert_eq!(
            search_rayon(&blocks, accelerate_programs::md5::md5_block_ref(&last)),
            search_ref(&blocks, accelerate_programs::md5::md5_block_ref(&last))
        );
    }
}

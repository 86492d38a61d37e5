//! MD5 hash recovery (the sequences thesis §7.3, "MD5 Hash"): given the
//! digest of an unknown word, find the word in a dictionary of known
//! plaintexts by hashing every word and comparing.
//!
//! Each word is at most [`MAX_WORD_LEN`] (55) bytes, so that it fits one
//! 64-byte MD5 block with its padding (RFC 1321 §3.1-3.2: the byte 0x80,
//! zeros, the message's length in bits as a little-endian 64-bit number in
//! the last 8 bytes). A dictionary is therefore a matrix of `n x 16`
//! little-endian `u32` words, a padded block per row ([`pad_block`]), and
//! the hash of a word is one application of the compression function to
//! the initial state ([`md5_exp`] in the embedded language, 64 steps over
//! `u32` with wrapping additions and rotations written as `(x << s) | (x >>
//! (32 - s))`; [`md5_block_ref`] in plain Rust).
//!
//! The search returns the index of the *first* word whose digest equals
//! the target, or [`NOT_FOUND`]: every row maps to its index where it
//! matches and to `NOT_FOUND` elsewhere, and a `min` reduction picks the
//! first. Every form hashes the whole dictionary (no early exit at the
//! first match).
//!
//! Two forms, as in the thesis' comparison:
//!
//! - [`md5_search`], "standard Accelerate": the whole dictionary in memory
//!   as one `Acc<Matrix<u32>>`, one `generate` and one `fold`;
//! - [`md5_search_seq`], "Accelerate + sequences": the dictionary arrives
//!   as a sequence of batches (a `stream_in` of `B x 16` matrices, read
//!   while the chunks compute), each batch mapped to the smallest matching
//!   global index in it, folded with `fold_seq` min. The global index of
//!   row `r` of batch `i` is `i * B + r`: the batch's number comes from
//!   zipping the stream with `produce`'s indices. The last batch may be
//!   shorter than `B` (the sequence is then irregular in its last element,
//!   which the runtime computes with its irregular chunk variant).
//!
//! The dictionary's words come from a deterministic generator
//! ([`dictionary_word`]: lengths 1 to 55, printable ASCII without the
//! space), or from a file (the example's `--dict`).
//!
//! Used by `examples/md5.rs` and the `md5` benchmark.

use crate::rng::Rng;
use accelerate::prelude::*;
use std::ops::Range;

/// The longest word that fits one block with its padding.
pub const MAX_WORD_LEN: usize = 55;

/// `u32` words per padded block (64 bytes).
pub const BLOCK_WORDS: usize = 16;

/// The search's result when no word matches.
pub const NOT_FOUND: i64 = i64::MAX;

/// MD5's initial state (RFC 1321 §3.3: A, B, C, D).
pub const INIT: [u32; 4] = [0x6745_2301, 0xefcd_ab89, 0x98ba_dcfe, 0x1032_5476];

/// The rotation of each step (RFC 1321 §3.4).
pub const SHIFTS: [u32; 64] = [
    7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, 7, 12, 17, 22, //
    5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, 5, 9, 14, 20, //
    4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, 4, 11, 16, 23, //
    6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21, 6, 10, 15, 21,
];

/// The additive constant of each step, `floor(|sin(i + 1)| * 2^32)`
/// (RFC 1321 §3.4, table T).
pub const K: [u32; 64] = [
    0xd76a_a478,
    0xe8c7_b756,
    0x2420_70db,
    0xc1bd_ceee,
    0xf57c_0faf,
    0x4787_c62a,
    0xa830_4613,
    0xfd46_9501,
    0x6980_98d8,
    0x8b44_f7af,
    0xffff_5bb1,
    0x895c_d7be,
    0x6b90_1122,
    0xfd98_7193,
    0xa679_438e,
    0x49b4_0821,
    0xf61e_2562,
    0xc040_b340,
    0x265e_5a51,
    0xe9b6_c7aa,
    0xd62f_105d,
    0x0244_1453,
    0xd8a1_e681,
    0xe7d3_fbc8,
    0x21e1_cde6,
    0xc337_07d6,
    0xf4d5_0d87,
    0x455a_14ed,
    0xa9e3_e905,
    0xfcef_a3f8,
    0x676f_02d9,
    0x8d2a_4c8a,
    0xfffa_3942,
    0x8771_f681,
    0x6d9d_6122,
    0xfde5_380c,
    0xa4be_ea44,
    0x4bde_cfa9,
    0xf6bb_4b60,
    0xbebf_bc70,
    0x289b_7ec6,
    0xeaa1_27fa,
    0xd4ef_3085,
    0x0488_1d05,
    0xd9d4_d039,
    0xe6db_99e5,
    0x1fa2_7cf8,
    0xc4ac_5665,
    0xf429_2244,
    0x432a_ff97,
    0xab94_23a7,
    0xfc93_a039,
    0x655b_59c3,
    0x8f0c_cc92,
    0xffef_f47d,
    0x8584_5dd1,
    0x6fa8_7e4f,
    0xfe2c_e6e0,
    0xa301_4314,
    0x4e08_11a1,
    0xf753_7e82,
    0xbd3a_f235,
    0x2ad7_d2bb,
    0xeb86_d391,
];

/// The message word step `i` reads (RFC 1321 §3.4: `i`, `5i + 1`, `3i +
/// 5`, `7i`, modulo 16, by round).
pub const fn message_index(i: usize) -> usize {
    match i / 16 {
        0 => i,
        1 => (5 * i + 1) % 16,
        2 => (3 * i + 5) % 16,
        _ => (7 * i) % 16,
    }
}

// ---------------------------------------------------------------------------
// Blocks and the plain-Rust reference

/// `word` padded into one block: its bytes little-endian in the `u32`s,
/// then 0x80, zeros, and its length in bits in words 14 and 15. `None`
/// for a word longer than [`MAX_WORD_LEN`].
pub fn pad_block(word: &[u8]) -> Option<[u32; BLOCK_WORDS]> {
    if word.len() > MAX_WORD_LEN {
        return None;
    }
    let mut bytes = [0u8; 64];
    bytes[..word.len()].copy_from_slice(word);
    bytes[word.len()] = 0x80;
    bytes[56..].copy_from_slice(&(word.len() as u64 * 8).to_le_bytes());
    let mut block = [0u32; BLOCK_WORDS];
    for (w, b) in block.iter_mut().zip(bytes.chunks_exact(4)) {
        *w = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
    Some(block)
}

/// The MD5 compression function of one block from the initial state,
/// plus that state: the digest of a one-block message, as the four state
/// words A, B, C, D (RFC 1321 §3.4-3.5).
pub fn md5_block_ref(m: &[u32]) -> [u32; 4] {
    assert_eq!(m.len(), BLOCK_WORDS, "an MD5 block is 16 words");
    let [mut a, mut b, mut c, mut d] = INIT;
    for i in 0..64 {
        let f = match i / 16 {
            0 => (b & c) | (!b & d),
            1 => (b & d) | (c & !d),
            2 => b ^ c ^ d,
            _ => c ^ (b | !d),
        };
        let t = a.wrapping_add(f).wrapping_add(K[i]).wrapping_add(m[message_index(i)]);
        let next = b.wrapping_add(t.rotate_left(SHIFTS[i]));
        (a, d, c, b) = (d, c, b, next);
    }
    let [a0, b0, c0, d0] = INIT;
    [a0.wrapping_add(a), b0.wrapping_add(b), c0.wrapping_add(c), d0.wrapping_add(d)]
}

/// The digest of a word of at most [`MAX_WORD_LEN`] bytes, as four state
/// words (`None` for a longer one).
pub fn md5_ref(word: &[u8]) -> Option<[u32; 4]> {
    pad_block(word).map(|b| md5_block_ref(&b))
}

/// A digest in the usual form: its 16 bytes (the state words
/// little-endian) in lowercase hexadecimal.
pub fn digest_hex(d: [u32; 4]) -> String {
    d.iter().flat_map(|w| w.to_le_bytes()).map(|b| format!("{b:02x}")).collect()
}

/// The index of the first block of `blocks` (rows of 16 words) whose
/// digest is `target`, or [`NOT_FOUND`]: the plain sequential search
/// every form is checked against. It hashes every block, as the other
/// forms do (no early exit at the first match).
pub fn search_ref(blocks: &[u32], target: [u32; 4]) -> i64 {
    blocks.chunks_exact(BLOCK_WORDS).enumerate().fold(NOT_FOUND, |first, (i, b)| {
        if md5_block_ref(b) == target {
            first.min(i as i64)
        } else {
            first
        }
    })
}

// ---------------------------------------------------------------------------
// The dictionary

/// Word `i` of the generated dictionary of seed `seed`: 1 to 55 bytes of
/// printable ASCII other than the space (`!` to `~`), so that a word is
/// also one line of a text file. Words are drawn independently, so short
/// ones repeat (there are 94 words of one byte): the first match matters.
pub fn dictionary_word(seed: u64, i: usize) -> Vec<u8> {
    let mut rng = Rng::new(seed ^ (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    rng.next_u64();
    let len = 1 + rng.below(MAX_WORD_LEN);
    (0..len).map(|_| b'!' + rng.below(94) as u8).collect()
}

/// A word the generator cannot make (it contains spaces), to plant at a
/// known position of a dictionary.
pub fn planted_word(position: usize) -> Vec<u8> {
    format!("planted word {position}").into_bytes()
}

/// The words `words` (a range of positions) of the generated dictionary
/// of seed `seed` as padded blocks, row after row (16 `u32`s a word);
/// with `plant`, the word at that position replaced by [`planted_word`].
/// A range at a time, so that a stream can make its batches as it is
/// read.
pub fn dictionary_blocks(words: Range<usize>, seed: u64, plant: Option<usize>) -> Vec<u32> {
    let mut blocks = Vec::with_capacity(words.len() * BLOCK_WORDS);
    for i in words {
        let word = if plant == Some(i) { planted_word(i) } else { dictionary_word(seed, i) };
        blocks.extend_from_slice(&pad_block(&word).expect("generated words fit a block"));
    }
    blocks
}

/// `blocks` (rows of 16 words) cut into matrices of `batch` rows each, the
/// last possibly shorter: the elements of the stream [`md5_search_seq`]
/// reads.
pub fn batches(blocks: &[u32], batch: usize) -> Vec<Matrix<u32>> {
    assert!(batch > 0, "a batch holds at least one word");
    blocks
        .chunks(batch * BLOCK_WORDS)
        .map(|c| {
            Matrix::from_vec(dim2(c.len() / BLOCK_WORDS, BLOCK_WORDS), c.to_vec())
                .expect("a batch's words fill its rows")
        })
        .collect()
}

// ---------------------------------------------------------------------------
// The programs

/// `x` rotated left by `s` bits, `0 < s < 32`.
fn rotl(x: &Exp<u32>, s: u32) -> Exp<u32> {
    (x << s) | (x >> (32 - s))
}

/// The MD5 compression function of the block `m` (16 words) from the
/// initial state, plus that state, in the embedded language: the four
/// state words of a one-block message's digest ([`md5_block_ref`]).
pub fn md5_exp(m: &[Exp<u32>]) -> [Exp<u32>; 4] {
    assert_eq!(m.len(), BLOCK_WORDS, "an MD5 block is 16 words");
    let [a0, b0, c0, d0] = INIT.map(constant);
    let (mut a, mut b, mut c, mut d) = (a0.clone(), b0.clone(), c0.clone(), d0.clone());
    for i in 0..64 {
        let f = match i / 16 {
            0 => (&b & &c) | (!&b & &d),
            1 => (&b & &d) | (&c & !&d),
            2 => &b ^ &c ^ &d,
            _ => &c ^ (&b | !&d),
        };
        let t = a + f + K[i] + &m[message_index(i)];
        let next = &b + rotl(&t, SHIFTS[i]);
        (a, d, c, b) = (d, c, b, next);
    }
    [a0 + a, b0 + b, c0 + c, d0 + d]
}

/// The smallest `base + r` over the rows `r` of `blocks` (`rows x 16`)
/// whose digest is `target` (a vector of the four state words), or
/// [`NOT_FOUND`]: each row's candidate index in a `generate`, the first
/// by a `min` fold.
pub fn first_match(blocks: &Acc<Matrix<u32>>, target: &Acc<Vector<u32>>, base: Exp<i64>) -> Acc<Scalar<i64>> {
    let (rows, _) = unindex2(blocks.shape());
    let candidates = generate(index1(rows), |ix| {
        let r = unindex1(ix);
        let m: Vec<Exp<u32>> = (0..BLOCK_WORDS).map(|j| blocks.index(index2(&r, j as i64))).collect();
        let digest = md5_exp(&m);
        let hit = digest
            .iter()
            .enumerate()
            .map(|(k, h)| h.eq(target.index(index1(k as i64))))
            .reduce(|x, y| x.and(y))
            .expect("a digest has four words");
        cond(hit, base + r, NOT_FOUND)
    });
    candidates.fold(NOT_FOUND, |x, y| x.min(y))
}

/// The index of the first row of `dict` (`n x 16`, a padded word per row)
/// whose digest is `target` (four state words), or [`NOT_FOUND`]: the
/// whole dictionary in memory (the thesis' "standard Accelerate").
pub fn md5_search(dict: &Acc<Matrix<u32>>, target: &Acc<Vector<u32>>) -> Acc<Scalar<i64>> {
    first_match(dict, target, constant(0i64))
}

/// The index of the first word whose digest is `target`, over a
/// dictionary streamed in as `batches` of `batch` words each (`batch x
/// 16` matrices; the last may be shorter): each batch mapped to its first
/// match's global index (its number, from `produce`, times `batch`, plus
/// the row), folded with `fold_seq` min. `max_batches` bounds the number
/// of batches (the sequence is as long as its shorter source, so a stream
/// of unknown length may pass `i64::MAX`: the stream's end ends it).
pub fn md5_search_seq(
    batches: &Seq<Matrix<u32>>,
    max_batches: i64,
    batch: i64,
    target: &Acc<Vector<u32>>,
) -> Consumed<Scalar<i64>> {
    let numbers = produce(max_batches, |i| unit(i));
    let target = target.clone();
    numbers
        .zip_with_seq(batches, move |i, words| first_match(&words, &target, i.the() * batch))
        .fold_seq(NOT_FOUND, |x, y| x.min(y))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hex(word: &str) -> String {
        digest_hex(md5_ref(word.as_bytes()).unwrap())
    }

    #[test]
    fn reference_md5_gives_the_rfc_1321_test_vectors() {
        assert_eq!(hex(""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hex("a"), "0cc175b9c0f1b6a831c399e269772661");
        assert_eq!(hex("abc"), "900150983cd24fb0d6963f7d28e17f72");
        assert_eq!(hex("message digest"), "f96b697d7cb7938d525a2f31aaf161d0");
        assert_eq!(hex("abcdefghijklmnopqrstuvwxyz"), "c3fcd3d76192e4007dfb496cca67e13b");
    }

    #[test]
    fn reference_md5_of_the_longest_one_block_word() {
        // 55 bytes: the length fills the block's last 8 bytes right after
        // the 0x80 (the value from Python's hashlib)
        let word = "The quick brown fox jumps over the lazy dog, 55 bytes!!";
        assert_eq!(word.len(), MAX_WORD_LEN);
        assert_eq!(hex(word), "1bb869707899f528046d28a0c8c0b131");
    }

    #[test]
    fn words_longer_than_one_block_are_refused() {
        assert!(pad_block(&[b'x'; MAX_WORD_LEN]).is_some());
        assert!(pad_block(&[b'x'; MAX_WORD_LEN + 1]).is_none());
    }

    #[test]
    fn generated_words_are_printable_and_fit_a_block() {
        for i in 0..1000 {
            let w = dictionary_word(7, i);
            assert!((1..=MAX_WORD_LEN).contains(&w.len()));
            assert!(w.iter().all(|&b| (b'!'..=b'~').contains(&b)));
        }
        assert_eq!(dictionary_word(7, 3), dictionary_word(7, 3));
    }

    #[test]
    fn reference_search_finds_the_first_match_or_none() {
        let blocks = dictionary_blocks(0..300, 1, Some(250));
        let planted = md5_ref(&planted_word(250)).unwrap();
        assert_eq!(search_ref(&blocks, planted), 250);
        assert_eq!(search_ref(&blocks, md5_ref(b"not a generated word").unwrap()), NOT_FOUND);
        let mut twice = blocks.clone();
        twice.extend_from_slice(&blocks);
        assert_eq!(search_ref(&twice, planted), 250);
    }

    fn target_array(d: [u32; 4]) -> Vector<u32> {
        Vector::from_elems(d.to_vec())
    }

    #[test]
    fn embedded_md5_agrees_with_the_reference_on_every_word() {
        let blocks = dictionary_blocks(0..200, 3, None);
        let n = blocks.len() / BLOCK_WORDS;
        let dict = Matrix::from_vec(dim2(n, BLOCK_WORDS), blocks.clone()).unwrap();
        let d = use_array(dict);
        let digests = generate(index2(n as i64, 4i64), |ix| {
            let (r, k) = unindex2(ix);
            let m: Vec<Exp<u32>> = (0..BLOCK_WORDS).map(|j| d.index(index2(&r, j as i64))).collect();
            let h = md5_exp(&m);
            cond(k.eq(0i64), &h[0], cond(k.eq(1i64), &h[1], cond(k.eq(2i64), &h[2], &h[3])))
        });
        let digests = accelerate::run(&digests).unwrap();
        let want: Vec<u32> = blocks.chunks_exact(BLOCK_WORDS).flat_map(md5_block_ref).collect();
        assert_eq!(digests.to_vec(), want);
    }

    #[test]
    fn flat_and_sequence_searches_agree_with_the_reference() {
        let n = 1000;
        let blocks = dictionary_blocks(0..n, 5, Some(777));
        let dict = Matrix::from_vec(dim2(n, BLOCK_WORDS), blocks.clone()).unwrap();
        // the planted word; a short word, whose first copy is found; none
        let short = (0..n).map(|i| dictionary_word(5, i)).find(|w| w.len() == 1).unwrap();
        let targets = [planted_word(777), short, b"not in the dictionary".to_vec()];
        for word in targets {
            let d = md5_ref(&word).unwrap();
            let want = search_ref(&blocks, d);
            let flat = md5_search(&use_array(dict.clone()), &use_array(target_array(d)));
            let got = accelerate::run(&flat).unwrap();
            assert_eq!(got.value(), want, "flat, {:?}", String::from_utf8_lossy(&word));
            // a batch of 64 words: 16 batches, the last of 40
            let seq = stream_in(batches(&blocks, 64));
            let found = md5_search_seq(&seq, i64::MAX, 64, &use_array(target_array(d)));
            let got = accelerate::run_seq(&found).unwrap();
            assert_eq!(got.value(), want, "sequence, {:?}", String::from_utf8_lossy(&word));
        }
    }
}

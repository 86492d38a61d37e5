//! Counter-based random numbers: Philox4x32-10 (Salmon, Moraes, Dror and
//! Shaw, "Parallel random numbers: as easy as 1, 2, 3", SC'11) as a
//! function of the scalar language, so that `generate` and `map` can draw
//! random numbers, with the same numbers on every backend for the same key
//! (as JAX's threefry and cuRAND's Philox give).
//!
//! # Why counter-based
//!
//! A conventional generator is a state machine: each number depends on the
//! one before, so a parallel program must either share the state (a
//! bottleneck and an order that depends on the schedule) or give every
//! thread a stream of its own (which depends on the number of threads).
//! A counter-based generator is a pure function `bits = f(key, counter)`:
//! element `i` of a random array is `f(key, i)`, computed by whichever
//! thread computes element `i`, in any order, with no state. The numbers
//! therefore depend only on the key and the element's index, never on the
//! backend, the number of threads or the fusion of the program; this is
//! what makes a purely functional, data-parallel language able to have
//! random numbers at all.
//!
//! # The algorithm (Note [Philox4x32-10])
//!
//! The counter is four 32-bit words `(x0, x1, x2, x3)`, the key two words
//! `(k0, k1)`. One round is
//!
//! ```text
//! (hi0, lo0) = mulhilo(0xD2511F53, x0)      // the 64-bit product's halves
//! (hi1, lo1) = mulhilo(0xCD9E8D57, x2)
//! (x0, x1, x2, x3) = (hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0)
//! ```
//!
//! and between rounds the key is bumped by the Weyl constants
//! `(k0, k1) += (0x9E3779B9, 0xBB67AE85)` (wrapping), so round `r`
//! (counting from 0) uses `(k0 + r * 0x9E3779B9, k1 + r * 0xBB67AE85)`.
//! Ten rounds give Philox4x32-10, the variant of Random123 and cuRAND,
//! which passes TestU01's BigCrush with a safety margin (the authors found
//! seven rounds enough). `mulhilo` is written in the language itself: both
//! factors are cast to `u64`, multiplied (the product of two 32-bit numbers
//! fits in 64 bits, so nothing wraps), and the halves taken by `>> 32` and
//! a cast back to `u32` (which truncates). The rounds are unrolled in Rust,
//! at the meta level, so the IR is straight-line code of about 150
//! operations with no loop, which every backend compiles to plain integer
//! arithmetic. Integer arithmetic wraps and casts follow Rust's `as`
//! (docs/semantics.md), so the bits are the same on every backend.
//!
//! A host [`Key`]'s round keys are computed in Rust and appear in the IR
//! as constants; a key computed by the program (an `Exp<(u32, u32)>`, see
//! [`AsKey`]) has its round keys computed by the program.
//!
//! # Stream layout (Note [Random stream layout])
//!
//! The distributions and array helpers of this module draw element `i`
//! (an unsigned 64-bit counter; for arrays the row-major linear index) from
//! the one Philox block at counter
//!
//! ```text
//! (x0, x1, x2, x3) = (low 32 bits of i, high 32 bits of i, 0, 0)
//! ```
//!
//! and use its output words as follows:
//!
//! | function       | output words used                                  |
//! |----------------|----------------------------------------------------|
//! | `uniform_f32`  | word 0: its top 24 bits                            |
//! | `uniform_f64`  | words 1:0 as a 64-bit number (word 1 high): top 53 |
//! | `normal_f32`   | words 0 and 1, one uniform each (Box-Muller)       |
//! | `normal_f64`   | words 1:0 and 3:2, one uniform each (Box-Muller)   |
//!
//! So the value at an element depends only on the key and its linear
//! index: an array's elements do not change when it is reshaped, and the
//! first `n` elements of a larger array of the same key are those of the
//! array of `n`. Counters with `x3 = 0` are the sample streams; key
//! derivation ([`Key::fold_in`], [`Key::split`]) uses counters whose `x3`
//! is a nonzero tag, so a derived key is never a sample of its parent.
//! Code that calls [`philox4x32`] directly owns the whole counter space of
//! its key; to mix it with this module's streams, give it a key of its own
//! (`fold_in`).
//!
//! # Distributions
//!
//! Uniform floats are `k * 2^-24` (f32) and `k * 2^-53` (f64) for a random
//! integer `k` of 24 (53) bits: every value of the grid is exactly
//! representable, the result lies in `[0, 1)` and is never 1.0.
//!
//! Normal floats use the Box-Muller transform: with `u1` in `(0, 1]` (one
//! minus a uniform) and `u2` in `[0, 1)`,
//! `z = sqrt(-2 ln u1) * cos(2 pi u2)` is standard normal. Only the cosine
//! half is used (one normal per block, so that element `i` stays a
//! function of block `i` alone). Because `u1 >= 2^-24` (2^-53), `|z|` is at
//! most `sqrt(48 ln 2) = 5.77` for f32 (`sqrt(106 ln 2) = 8.57` for f64):
//! the far tails are cut off, a probability of about 8e-9 (1e-17).
//!
//! # Reproducibility across backends
//!
//! The Philox bits and the uniform floats are bit-for-bit the same on every
//! backend: they use only wrapping integer arithmetic, exact conversions
//! and a multiplication by a power of two. The normals use `ln`, `sqrt` and
//! `cos`. `sqrt` is correctly rounded everywhere (IEEE-754), but `ln` and
//! `cos` come from each backend's math library (Rust's std, the platform
//! libm of a C compiler, CUDA's libdevice), which may differ in the last
//! bit or so; normals are therefore reproducible on one backend and equal
//! to within a few ulps across backends, not bit for bit. (A fast-math
//! build of a backend would widen that.)
//!
//! This generator is for simulation, not cryptography.

use super::acc::{generate, Acc};
use super::classes::FloatElt;
use super::exp::{constant, lift, to_index, Exp, IntoExp};
use accelerate_base::array::{Array, Shape};
use accelerate_base::error::{Error, Result, SrcLoc};

/// The first Philox4x32 multiplier (applied to counter word 0).
const PHILOX_M0: u32 = 0xD251_1F53;
/// The second Philox4x32 multiplier (applied to counter word 2).
const PHILOX_M1: u32 = 0xCD9E_8D57;
/// The Weyl constant added to key word 0 between rounds (the golden ratio).
const PHILOX_W0: u32 = 0x9E37_79B9;
/// The Weyl constant added to key word 1 between rounds (`sqrt(3) - 1`).
const PHILOX_W1: u32 = 0xBB67_AE85;
/// The number of rounds of Philox4x32-10.
pub const PHILOX_ROUNDS: usize = 10;

/// Counter word 3 of the blocks that derive keys by [`Key::fold_in`]
/// ("fold" in ASCII; sample streams have word 3 zero).
const TAG_FOLD_IN: u32 = 0x666f_6c64;
/// Counter word 3 of the blocks that derive keys by [`Key::split`]
/// ("splt").
const TAG_SPLIT: u32 = 0x7370_6c74;

/// `2^-24`, the spacing of the f32 uniform grid.
const F32_GRID: f32 = 1.0 / 16_777_216.0;
/// `2^-53`, the spacing of the f64 uniform grid.
const F64_GRID: f64 = 1.0 / 9_007_199_254_740_992.0;

// ---------------------------------------------------------------------------
// Keys

/// A key of the Philox generator: two 32-bit words. Keys are plain host
/// values; new keys are derived from old ones deterministically
/// ([`fold_in`](Key::fold_in), [`split`](Key::split)), in the manner of
/// JAX's keys.
///
/// The methods [`block`](Key::block), [`uniform_f32`](Key::uniform_f32)
/// and the rest compute on the host, in plain Rust, what the scalar
/// functions of this module compute in a program: they are the reference
/// the tests check the language version against.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Key {
    words: [u32; 2],
}

impl Key {
    /// The key of a 64-bit seed: word 0 is its low half, word 1 its high
    /// half (so `Key::new(s)` for `s < 2^32` is the key `[s, 0]`).
    pub const fn new(seed: u64) -> Key {
        Key { words: [seed as u32, (seed >> 32) as u32] }
    }

    /// The key with the given words `[k0, k1]`.
    pub const fn from_words(words: [u32; 2]) -> Key {
        Key { words }
    }

    /// The key's words `[k0, k1]`.
    pub const fn words(self) -> [u32; 2] {
        self.words
    }

    /// A new key derived from this one and `data` (JAX's `fold_in`): the
    /// first two words of the block at counter
    /// `(low(data), high(data), 0, TAG_FOLD_IN)`. Different `data` give
    /// unrelated keys; the same `data` gives the same key. A program can
    /// do the same with [`fold_in`] on an expression.
    pub fn fold_in(self, data: u64) -> Key {
        self.derive(data, TAG_FOLD_IN)
    }

    /// `n` new keys derived from this one (JAX's `split`): key `j` is the
    /// first two words of the block at counter
    /// `(low(j), high(j), 0, TAG_SPLIT)`. The usual pattern is to keep one
    /// of them for later splits and use the others. `Error::OutOfMemory`
    /// (naming the caller's line) when `n` keys do not fit in memory.
    #[track_caller]
    pub fn split(self, n: usize) -> Result<Vec<Key>> {
        let loc = SrcLoc::caller();
        let mut keys = Vec::new();
        keys.try_reserve_exact(n).map_err(|_| Error::OutOfMemory { loc, shape: vec![n] })?;
        keys.extend((0..n as u64).map(|j| self.derive(j, TAG_SPLIT)));
        Ok(keys)
    }

    fn derive(self, data: u64, tag: u32) -> Key {
        let [w0, w1, _, _] =
            philox4x32_rounds_host([data as u32, (data >> 32) as u32, 0, tag], self, PHILOX_ROUNDS);
        Key { words: [w0, w1] }
    }

    /// The Philox4x32-10 block of a counter, computed on the host.
    pub fn block(self, counter: [u32; 4]) -> [u32; 4] {
        philox4x32_host(counter, self)
    }

    /// The block of sample `i` (Note [Random stream layout]), on the host.
    pub fn sample_block(self, i: u64) -> [u32; 4] {
        self.block(sample_counter_host(i))
    }

    /// [`uniform_f32`] computed on the host.
    pub fn uniform_f32(self, i: u64) -> f32 {
        unit_f32_host(self.sample_block(i)[0])
    }

    /// [`uniform_f64`] computed on the host.
    pub fn uniform_f64(self, i: u64) -> f64 {
        let [w0, w1, _, _] = self.sample_block(i);
        unit_f64_host(join_host(w0, w1))
    }

    /// [`normal_f32`] computed on the host, with Rust's `ln`, `sqrt` and
    /// `cos` (those of the reference interpreter).
    pub fn normal_f32(self, i: u64) -> f32 {
        let [w0, w1, _, _] = self.sample_block(i);
        let u1 = 1.0 - unit_f32_host(w0);
        let u2 = unit_f32_host(w1);
        (u1.ln() * -2.0).sqrt() * (u2 * std::f32::consts::TAU).cos()
    }

    /// [`normal_f64`] computed on the host (see [`Key::normal_f32`]).
    pub fn normal_f64(self, i: u64) -> f64 {
        let [w0, w1, w2, w3] = self.sample_block(i);
        let u1 = 1.0 - unit_f64_host(join_host(w0, w1));
        let u2 = unit_f64_host(join_host(w2, w3));
        (u1.ln() * -2.0).sqrt() * (u2 * std::f64::consts::TAU).cos()
    }
}

impl IntoExp<(u32, u32)> for Key {
    /// The key as a constant expression `(k0, k1)`.
    #[track_caller]
    fn into_exp(self) -> Exp<(u32, u32)> {
        constant((self.words[0], self.words[1]))
    }
}

/// A key as the generators take it: a host [`Key`], whose round keys
/// become constants of the program, or an `Exp<(u32, u32)>` computed by
/// the program (read from an input array, say, so that a compiled program
/// can be run with new keys, or derived per row with [`fold_in`]).
pub trait AsKey {
    /// The round keys of `rounds` rounds: `(k0 + r * W0, k1 + r * W1)` for
    /// round `r`, wrapping.
    fn round_keys(&self, rounds: usize) -> Vec<(Exp<u32>, Exp<u32>)>;
}

impl AsKey for Key {
    #[track_caller]
    fn round_keys(&self, rounds: usize) -> Vec<(Exp<u32>, Exp<u32>)> {
        host_round_keys(*self, rounds).into_iter().map(|[k0, k1]| (constant(k0), constant(k1))).collect()
    }
}

impl AsKey for Exp<(u32, u32)> {
    #[track_caller]
    fn round_keys(&self, rounds: usize) -> Vec<(Exp<u32>, Exp<u32>)> {
        let (k0, k1) = self.unlift();
        (0..rounds)
            .map(|r| {
                if r == 0 {
                    (k0.clone(), k1.clone())
                } else {
                    let r = r as u32;
                    (&k0 + PHILOX_W0.wrapping_mul(r), &k1 + PHILOX_W1.wrapping_mul(r))
                }
            })
            .collect()
    }
}

impl<K: AsKey> AsKey for &K {
    #[track_caller]
    fn round_keys(&self, rounds: usize) -> Vec<(Exp<u32>, Exp<u32>)> {
        (*self).round_keys(rounds)
    }
}

// ---------------------------------------------------------------------------
// The plain-Rust reference

fn host_round_keys(key: Key, rounds: usize) -> Vec<[u32; 2]> {
    let [k0, k1] = key.words;
    (0..rounds as u32)
        .map(|r| [k0.wrapping_add(PHILOX_W0.wrapping_mul(r)), k1.wrapping_add(PHILOX_W1.wrapping_mul(r))])
        .collect()
}

fn mulhilo_host(m: u32, x: u32) -> (u32, u32) {
    let p = u64::from(m) * u64::from(x);
    ((p >> 32) as u32, p as u32)
}

/// Philox4x32 with the given number of rounds, in plain Rust: the
/// reference for [`philox4x32_rounds`] (Note [Philox4x32-10]).
pub fn philox4x32_rounds_host(counter: [u32; 4], key: Key, rounds: usize) -> [u32; 4] {
    let mut x = counter;
    for [k0, k1] in host_round_keys(key, rounds) {
        let (hi0, lo0) = mulhilo_host(PHILOX_M0, x[0]);
        let (hi1, lo1) = mulhilo_host(PHILOX_M1, x[2]);
        x = [hi1 ^ x[1] ^ k0, lo1, hi0 ^ x[3] ^ k1, lo0];
    }
    x
}

/// Philox4x32-10 in plain Rust: the reference for [`philox4x32`].
pub fn philox4x32_host(counter: [u32; 4], key: Key) -> [u32; 4] {
    philox4x32_rounds_host(counter, key, PHILOX_ROUNDS)
}

fn sample_counter_host(i: u64) -> [u32; 4] {
    [i as u32, (i >> 32) as u32, 0, 0]
}

fn join_host(lo: u32, hi: u32) -> u64 {
    (u64::from(hi) << 32) | u64::from(lo)
}

fn unit_f32_host(bits: u32) -> f32 {
    (bits >> 8) as f32 * F32_GRID
}

fn unit_f64_host(bits: u64) -> f64 {
    (bits >> 11) as f64 * F64_GRID
}

// ---------------------------------------------------------------------------
// Philox in the scalar language

/// `(high, low)` 32-bit halves of the 64-bit product `m * x`.
#[track_caller]
fn mulhilo(m: u32, x: Exp<u32>) -> (Exp<u32>, Exp<u32>) {
    let p = x.cast::<u64>() * u64::from(m);
    ((&p >> 32u64).cast::<u32>(), p.cast::<u32>())
}

/// The rounds of Philox4x32 on the words of a counter, unrolled at the
/// meta level. Returning the words, not a tuple, lets a caller that uses
/// only some of them leave the others out of the program altogether.
#[track_caller]
fn philox_words(counter: [Exp<u32>; 4], key: impl AsKey, rounds: usize) -> [Exp<u32>; 4] {
    let [mut x0, mut x1, mut x2, mut x3] = counter;
    for (k0, k1) in key.round_keys(rounds) {
        let (hi0, lo0) = mulhilo(PHILOX_M0, x0);
        let (hi1, lo1) = mulhilo(PHILOX_M1, x2);
        [x0, x1, x2, x3] = [hi1 ^ x1 ^ k0, lo1, hi0 ^ x3 ^ k1, lo0];
    }
    [x0, x1, x2, x3]
}

/// The words of the block of sample `i` (Note [Random stream layout]).
#[track_caller]
fn sample_words(key: impl AsKey, i: impl IntoExp<u64>) -> [Exp<u32>; 4] {
    let i = i.into_exp();
    let counter = [i.cast::<u32>(), (i >> 32u64).cast::<u32>(), constant(0u32), constant(0u32)];
    philox_words(counter, key, PHILOX_ROUNDS)
}

/// Philox4x32 with the given number of rounds (unrolled at the meta level:
/// the IR is straight-line code). [`philox4x32`] is the ten-round variant;
/// fewer rounds are for known-answer tests of the round function.
#[track_caller]
pub fn philox4x32_rounds(
    counter: impl IntoExp<(u32, u32, u32, u32)>,
    key: impl AsKey,
    rounds: usize,
) -> Exp<(u32, u32, u32, u32)> {
    let (x0, x1, x2, x3) = counter.into_exp().unlift();
    let [y0, y1, y2, y3] = philox_words([x0, x1, x2, x3], key, rounds);
    lift((y0, y1, y2, y3))
}

/// The Philox4x32-10 block of a counter under a key (Note
/// [Philox4x32-10]): four random 32-bit words, a bijective function of
/// the counter for each key. Bit for bit the same as Random123's
/// `philox4x32` and [`philox4x32_host`].
#[track_caller]
pub fn philox4x32(counter: impl IntoExp<(u32, u32, u32, u32)>, key: impl AsKey) -> Exp<(u32, u32, u32, u32)> {
    philox4x32_rounds(counter, key, PHILOX_ROUNDS)
}

/// The four random words of sample `i` of a key: the block at counter
/// `(low(i), high(i), 0, 0)` (Note [Random stream layout]).
#[track_caller]
pub fn random_bits(key: impl AsKey, i: impl IntoExp<u64>) -> Exp<(u32, u32, u32, u32)> {
    let [w0, w1, w2, w3] = sample_words(key, i);
    lift((w0, w1, w2, w3))
}

/// A key derived in the program from a key and `data`: the same as
/// [`Key::fold_in`] when `key` is a host key, for use where the data is
/// only known at run time (one key per row of a `generate`, say).
#[track_caller]
pub fn fold_in(key: impl AsKey, data: impl IntoExp<u64>) -> Exp<(u32, u32)> {
    let d = data.into_exp();
    let counter = [d.cast::<u32>(), (d >> 32u64).cast::<u32>(), constant(0u32), constant(TAG_FOLD_IN)];
    let [w0, w1, _, _] = philox_words(counter, key, PHILOX_ROUNDS);
    lift((w0, w1))
}

/// `k * 2^-24`, where `k` is the top 24 bits of `bits`: a float in
/// `[0, 1)` on a grid every point of which is exactly representable. The
/// largest value is `1 - 2^-24`.
#[track_caller]
pub fn unit_f32(bits: impl IntoExp<u32>) -> Exp<f32> {
    (bits.into_exp() >> 8u32).cast::<f32>() * F32_GRID
}

/// `k * 2^-53`, where `k` is the top 53 bits of `bits`: a float in
/// `[0, 1)`, exactly representable. The largest value is `1 - 2^-53`.
#[track_caller]
pub fn unit_f64(bits: impl IntoExp<u64>) -> Exp<f64> {
    (bits.into_exp() >> 11u64).cast::<f64>() * F64_GRID
}

/// The 64-bit number whose high half is `hi` and low half `lo`.
#[track_caller]
fn join(lo: Exp<u32>, hi: Exp<u32>) -> Exp<u64> {
    (hi.cast::<u64>() << 32u64) | lo.cast::<u64>()
}

/// Sample `i` of a key, uniform in `[0, 1)`: the top 24 bits of word 0 of
/// its block, times `2^-24` (Note [Random stream layout]).
#[track_caller]
pub fn uniform_f32(key: impl AsKey, i: impl IntoExp<u64>) -> Exp<f32> {
    let [w0, _, _, _] = sample_words(key, i);
    unit_f32(w0)
}

/// Sample `i` of a key, uniform in `[0, 1)`: the top 53 bits of words 1:0
/// of its block, times `2^-53`.
#[track_caller]
pub fn uniform_f64(key: impl AsKey, i: impl IntoExp<u64>) -> Exp<f64> {
    let [w0, w1, _, _] = sample_words(key, i);
    unit_f64(join(w0, w1))
}

/// Sample `i` of a key, standard normal, by Box-Muller on words 0 and 1 of
/// its block: `sqrt(-2 ln u1) * cos(2 pi u2)` with `u1 = 1 - uniform` in
/// `(0, 1]` and `u2` uniform in `[0, 1)`. `|z| <= 5.77`. Uses `ln`, `sqrt`
/// and `cos`, whose last bits may differ between backends' math libraries
/// (see the module docs).
#[track_caller]
pub fn normal_f32(key: impl AsKey, i: impl IntoExp<u64>) -> Exp<f32> {
    let [w0, w1, _, _] = sample_words(key, i);
    let u1 = 1.0f32 - unit_f32(w0);
    let u2 = unit_f32(w1);
    (u1.ln() * -2.0f32).sqrt() * (u2 * std::f32::consts::TAU).cos()
}

/// Sample `i` of a key, standard normal, by Box-Muller on words 1:0 and
/// 3:2 of its block (see [`normal_f32`]). `|z| <= 8.58`.
#[track_caller]
pub fn normal_f64(key: impl AsKey, i: impl IntoExp<u64>) -> Exp<f64> {
    let [w0, w1, w2, w3] = sample_words(key, i);
    let u1 = 1.0f64 - unit_f64(join(w0, w1));
    let u2 = unit_f64(join(w2, w3));
    (u1.ln() * -2.0f64).sqrt() * (u2 * std::f64::consts::TAU).cos()
}

// ---------------------------------------------------------------------------
// Arrays of random numbers

/// The float types with random distributions: `f32` and `f64`.
pub trait RandomFloat: FloatElt {
    /// [`uniform_f32`] or [`uniform_f64`].
    fn uniform(key: impl AsKey, i: Exp<u64>) -> Exp<Self>;
    /// [`normal_f32`] or [`normal_f64`].
    fn normal(key: impl AsKey, i: Exp<u64>) -> Exp<Self>;
}

impl RandomFloat for f32 {
    #[track_caller]
    fn uniform(key: impl AsKey, i: Exp<u64>) -> Exp<f32> {
        uniform_f32(key, i)
    }
    #[track_caller]
    fn normal(key: impl AsKey, i: Exp<u64>) -> Exp<f32> {
        normal_f32(key, i)
    }
}

impl RandomFloat for f64 {
    #[track_caller]
    fn uniform(key: impl AsKey, i: Exp<u64>) -> Exp<f64> {
        uniform_f64(key, i)
    }
    #[track_caller]
    fn normal(key: impl AsKey, i: Exp<u64>) -> Exp<f64> {
        normal_f64(key, i)
    }
}

/// An array of the given shape whose element at row-major position `i` is
/// sample `i` of `dist` under `key`.
#[track_caller]
fn random_array<Sh: Shape, E: RandomFloat, K: AsKey>(
    key: K,
    shape: impl IntoExp<Sh>,
    dist: fn(K, Exp<u64>) -> Exp<E>,
) -> Acc<Array<Sh, E>> {
    let shape = shape.into_exp();
    generate(&shape, |ix| dist(key, to_index(&shape, ix).cast::<u64>()))
}

/// An array of independent uniform samples in `[0, 1)`: the element at
/// row-major position `i` is `E::uniform(key, i)` ([`uniform_f32`],
/// [`uniform_f64`]), so it does not depend on the rank of the shape.
///
/// ```
/// use accelerate::prelude::*;
/// use accelerate::lang::random::{random_uniform, Key};
///
/// let key = Key::new(42);
/// let xs = accelerate::run(&random_uniform::<DIM1, f32>(key, dim1(4)))?;
/// assert!(xs.to_vec().iter().all(|&x| (0.0..1.0).contains(&x)));
/// assert_eq!(xs.to_vec()[3], key.uniform_f32(3));
/// # Ok::<(), accelerate::Error>(())
/// ```
#[track_caller]
pub fn random_uniform<Sh: Shape, E: RandomFloat>(
    key: impl AsKey,
    shape: impl IntoExp<Sh>,
) -> Acc<Array<Sh, E>> {
    random_array(key, shape, E::uniform)
}

/// An array of independent standard normal samples: the element at
/// row-major position `i` is `E::normal(key, i)` ([`normal_f32`],
/// [`normal_f64`]).
#[track_caller]
pub fn random_normal<Sh: Shape, E: RandomFloat>(
    key: impl AsKey,
    shape: impl IntoExp<Sh>,
) -> Acc<Array<Sh, E>> {
    random_array(key, shape, E::normal)
}

//! Deterministic inputs: the same pseudo-random numbers on every run and
//! every machine (xorshift64*), without a `rand` dependency.

/// xorshift64* (Vigna): fast, and good enough to make test data.
#[derive(Clone, Debug)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (made odd, so that it is never the fixed
    /// point 0).
    pub fn new(seed: u64) -> Rng {
        Rng(seed | 1)
    }

    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// In [0, 1), exactly representable as an f32 (24 random bits).
    pub fn unit_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u32 << 24) as f32
    }

    /// In [lo, hi).
    pub fn uniform_f32(&mut self, lo: f32, hi: f32) -> f32 {
        lo + (hi - lo) * self.unit_f32()
    }

    /// In [0, n).
    pub fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() >> 11) % n as u64) as usize
    }
}

/// `n` numbers in [-1, 1).
pub fn signed_f32s(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    (0..n).map(|_| rng.uniform_f32(-1.0, 1.0)).collect()
}

/// Seeds, so that different inputs of one program differ.
pub const SEED_A: u64 = 0x9e37_79b9_7f4a_7c15;
pub const SEED_B: u64 = 0xd1b5_4a32_d192_ed03;

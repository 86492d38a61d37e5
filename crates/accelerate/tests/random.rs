//! Tests of the counter-based random numbers (`lang::random`,
//! docs/semantics-random.md): Philox4x32 against Random123's published
//! known-answer vectors, the program version against the plain-Rust
//! reference bit for bit, determinism (the same key gives the same bits in
//! separate runs and inside one program), independence of keys and
//! counters, and the statistics of the distributions (a chi-square test of
//! uniformity, the moments of the normals).
//!
//! Every statistical test uses a fixed key, so it is deterministic: it
//! either always passes or always fails, and cannot flake. The keys were
//! not chosen to make the tests pass (they are the first ones written).

mod common;

use accelerate::lang::random::*;
use accelerate::prelude::*;
use common::*;
use proptest::collection::vec;
use proptest::prelude::*;

/// One line of Random123's `kat_vectors` file for Philox4x32.
struct KnownAnswer {
    rounds: usize,
    counter: [u32; 4],
    key: [u32; 2],
    output: [u32; 4],
}

const fn kat(rounds: usize, counter: [u32; 4], key: [u32; 2], output: [u32; 4]) -> KnownAnswer {
    KnownAnswer { rounds, counter, key, output }
}

/// Random123's `kat_vectors` lines for Philox4x32 (rounds, counter, key,
/// expected output), checked against two independent copies of the file.
const KAT: [KnownAnswer; 6] = [
    kat(7, [0, 0, 0, 0], [0, 0], [0x5f6fb709, 0x0d893f64, 0x4f121f81, 0x4f730a48]),
    kat(7, [!0; 4], [!0; 2], [0x5207ddc2, 0x45165e59, 0x4d8ee751, 0x8c52f662]),
    kat(
        7,
        [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
        [0xa4093822, 0x299f31d0],
        [0x4dfccaba, 0x190a87f0, 0xc47362ba, 0xb6b5242a],
    ),
    kat(10, [0, 0, 0, 0], [0, 0], [0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8]),
    kat(10, [!0; 4], [!0; 2], [0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd]),
    kat(
        10,
        [0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344],
        [0xa4093822, 0x299f31d0],
        [0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1],
    ),
];

type Block = (u32, u32, u32, u32);

fn tuple(w: [u32; 4]) -> Block {
    (w[0], w[1], w[2], w[3])
}

fn words(t: Block) -> [u32; 4] {
    [t.0, t.1, t.2, t.3]
}

/// Runs a program and returns its elements.
fn elements<Sh: Shape, E: Elt>(build: impl FnOnce() -> Acc<Array<Sh, E>>) -> Vec<E> {
    try_run(build).expect("the program runs").to_vec()
}

fn f32_bits(xs: &[f32]) -> Vec<u32> {
    xs.iter().map(|x| x.to_bits()).collect()
}

fn f64_bits(xs: &[f64]) -> Vec<u64> {
    xs.iter().map(|x| x.to_bits()).collect()
}

// ---------------------------------------------------------------------------
// Known answers and the reference

#[test]
fn reference_philox_matches_random123_known_answers() {
    for KnownAnswer { rounds, counter, key, output: expected } in KAT {
        let got = philox4x32_rounds_host(counter, Key::from_words(key), rounds);
        assert_eq!(got, expected, "philox4x32-{rounds} of {counter:08x?} under {key:08x?}");
        if rounds == PHILOX_ROUNDS {
            assert_eq!(philox4x32_host(counter, Key::from_words(key)), expected);
            assert_eq!(Key::from_words(key).block(counter), expected);
        }
    }
}

#[test]
fn program_philox_with_host_keys_matches_known_answers() {
    for KnownAnswer { rounds, counter, key, output: expected } in KAT {
        let key = Key::from_words(key);
        let got = try_run(|| unit(philox4x32_rounds(constant(tuple(counter)), key, rounds)))
            .expect("the program runs")
            .value();
        assert_eq!(words(got), expected, "philox4x32-{rounds} of {counter:08x?} under {key:?}");
        if rounds == PHILOX_ROUNDS {
            let got = try_run(|| unit(philox4x32(constant(tuple(counter)), key))).expect("runs").value();
            assert_eq!(words(got), expected);
        }
    }
}

#[test]
fn program_philox_with_program_keys_matches_known_answers() {
    for rounds in [7, 10] {
        let cases: Vec<&KnownAnswer> = KAT.iter().filter(|c| c.rounds == rounds).collect();
        let counters = Vector::from_elems(cases.iter().map(|c| tuple(c.counter)).collect());
        let keys = Vector::from_elems(cases.iter().map(|c| (c.key[0], c.key[1])).collect());
        let got = elements(|| {
            use_array(counters).zip_with(use_array(keys), move |c, k| philox4x32_rounds(c, k, rounds))
        });
        let expected: Vec<Block> = cases.iter().map(|c| tuple(c.output)).collect();
        assert_eq!(got, expected, "philox4x32-{rounds} with keys read from an array");
    }
}

proptest! {
    #![proptest_config(config(32))]

    /// The program version equals the reference bit for bit, for host keys
    /// (round keys as constants) and keys read from an array (round keys
    /// computed by the program).
    #[test]
    fn program_philox_equals_reference_bit_for_bit(
        counters in vec(any::<[u32; 4]>(), 0..24),
        keys in vec(any::<[u32; 2]>(), 24),
        host_key in any::<[u32; 2]>(),
    ) {
        let host_key = Key::from_words(host_key);
        let cs = Vector::from_elems(counters.iter().map(|&c| tuple(c)).collect());
        let ks = Vector::from_elems(keys[..counters.len()].iter().map(|k| (k[0], k[1])).collect());

        let got = run_ok(|| use_array(cs.clone()).map(move |c| philox4x32(c, host_key)))?.to_vec();
        let want: Vec<Block> = counters.iter().map(|&c| tuple(host_key.block(c))).collect();
        prop_assert_eq!(got, want);

        let got = run_ok(|| use_array(cs).zip_with(use_array(ks), |c, k| philox4x32(c, k)))?.to_vec();
        let want: Vec<Block> = counters
            .iter()
            .zip(&keys)
            .map(|(&c, &k)| tuple(Key::from_words(k).block(c)))
            .collect();
        prop_assert_eq!(got, want);
    }

    /// Key derivation in a program equals the host's `fold_in`.
    #[test]
    fn program_fold_in_equals_host_fold_in(
        data in vec(any::<u64>(), 0..16),
        key in any::<[u32; 2]>(),
    ) {
        let key = Key::from_words(key);
        let got = map_vec(&data, move |d| fold_in(key, d))?;
        let want: Vec<(u32, u32)> = data.iter().map(|&d| {
            let [k0, k1] = key.fold_in(d).words();
            (k0, k1)
        }).collect();
        prop_assert_eq!(got, want);
    }
}

// ---------------------------------------------------------------------------
// Arrays against the reference; determinism

#[test]
fn arrays_equal_the_reference_at_each_linear_index() {
    let key = Key::new(7);
    let sh = dim2(3, 5);
    let n = 15u64;
    let uf = elements(|| random_uniform::<DIM2, f32>(key, sh));
    let ud = elements(|| random_uniform::<DIM2, f64>(key, sh));
    let nf = elements(|| random_normal::<DIM2, f32>(key, sh));
    let nd = elements(|| random_normal::<DIM2, f64>(key, sh));
    // The uniforms are integer arithmetic and one exact scaling: bit for
    // bit on every backend.
    assert_eq!(f32_bits(&uf), f32_bits(&(0..n).map(|i| key.uniform_f32(i)).collect::<Vec<_>>()));
    assert_eq!(f64_bits(&ud), f64_bits(&(0..n).map(|i| key.uniform_f64(i)).collect::<Vec<_>>()));
    // The interpreter computes ln, sqrt and cos with Rust's std, as the
    // reference does, so there even the normals agree bit for bit. A
    // compiled backend's ln and cos are each within `transcendental_ulps`
    // of std's; sqrt halves ln's relative error, and the rounding of the
    // other operations is the same on both: twice that bound covers a
    // normal (this machine's CPU backend differs by 1 ulp in two of 15).
    let ulps = 2 * transcendental_ulps();
    let nf_want: Vec<f32> = (0..n).map(|i| key.normal_f32(i)).collect();
    let nd_want: Vec<f64> = (0..n).map(|i| key.normal_f64(i)).collect();
    check_ulps_vec(&nf, &nf_want, ulps, "normal f32").unwrap();
    check_ulps_vec(&nd, &nd_want, ulps, "normal f64").unwrap();
}

#[test]
fn scalar_distributions_equal_the_reference_at_large_counters() {
    // Counters above 2^32 use word 1 of the counter (Note [Random stream layout]).
    let key = Key::new(0x0123_4567_89ab_cdef);
    let counters = vec![0u64, 1, u32::MAX as u64, 1 << 32, (1 << 32) + 1, u64::MAX - 1, u64::MAX];
    let got = map_vec(&counters, move |i| {
        lift((uniform_f32(key, i), uniform_f64(key, i), normal_f32(key, i), normal_f64(key, i)))
    })
    .expect("the program runs");
    // normals within the bound of `arrays_equal_the_reference_at_each_linear_index`
    // (bit for bit on the interpreter; 2 ulps apart at counter 0 on an
    // Intel Xeon's CPU backend)
    let ulps = 2 * transcendental_ulps();
    for (&i, &(uf, ud, nf, nd)) in counters.iter().zip(&got) {
        assert_eq!(uf.to_bits(), key.uniform_f32(i).to_bits(), "uniform_f32 at {i}");
        assert_eq!(ud.to_bits(), key.uniform_f64(i).to_bits(), "uniform_f64 at {i}");
        check_ulps_vec(&[nf], &[key.normal_f32(i)], ulps, "normal_f32").unwrap();
        check_ulps_vec(&[nd], &[key.normal_f64(i)], ulps, "normal_f64").unwrap();
    }
    let bits = map_vec(&counters, move |i| random_bits(key, i)).expect("the program runs");
    for (&i, &b) in counters.iter().zip(&bits) {
        assert_eq!(words(b), key.block([i as u32, (i >> 32) as u32, 0, 0]), "random_bits at {i}");
        assert_eq!(words(b), key.sample_block(i));
    }
}

#[test]
fn same_key_gives_bit_identical_arrays_in_separate_runs() {
    let key = Key::new(2024);
    let sh = dim1(257);
    let a = elements(|| random_uniform::<DIM1, f32>(key, sh));
    let b = elements(|| random_uniform::<DIM1, f32>(key, sh));
    assert_eq!(f32_bits(&a), f32_bits(&b));
    let a = elements(|| random_normal::<DIM1, f64>(key, sh));
    let b = elements(|| random_normal::<DIM1, f64>(key, sh));
    assert_eq!(f64_bits(&a), f64_bits(&b));
}

#[test]
fn same_key_gives_bit_identical_arrays_inside_one_program() {
    let key = Key::new(99);
    let (a, b, c) = try_run(|| {
        // three separate computations (no sharing between them): two
        // drawn with the same key, one with the key read from an array
        let a = random_normal::<DIM2, f32>(key, dim2(4, 33));
        let b = random_normal::<DIM2, f32>(key, dim2(4, 33));
        let [k0, k1] = key.words();
        let k = use_array(Scalar::scalar((k0, k1)));
        let c = random_normal::<DIM2, f32>(k.the(), dim2(4, 33));
        lift_acc((a, b, c))
    })
    .expect("the program runs");
    assert_eq!(f32_bits(&a.to_vec()), f32_bits(&b.to_vec()));
    assert_eq!(f32_bits(&a.to_vec()), f32_bits(&c.to_vec()));
}

#[test]
fn compiled_program_with_a_key_argument_reproduces_host_key_arrays() {
    let program =
        accelerate::compile(|k: Acc<Scalar<(u32, u32)>>| random_uniform::<DIM1, f64>(k.the(), dim1(40)))
            .expect("the program compiles");
    for seed in [0u64, 1, u64::MAX] {
        let key = Key::new(seed);
        let [k0, k1] = key.words();
        let arg = Scalar::scalar((k0, k1));
        let first = program.run(&arg).expect("runs").to_vec();
        let second = program.run(&arg).expect("runs").to_vec();
        let host = elements(|| random_uniform::<DIM1, f64>(key, dim1(40)));
        assert_eq!(f64_bits(&first), f64_bits(&second), "seed {seed}");
        assert_eq!(f64_bits(&first), f64_bits(&host), "seed {seed}");
    }
}

#[test]
fn elements_depend_only_on_the_linear_index_not_the_shape() {
    let key = Key::new(5);
    let flat = elements(|| random_uniform::<DIM1, f32>(key, dim1(24)));
    let cube = elements(|| random_uniform::<DIM3, f32>(key, dim3(2, 3, 4)));
    let prefix = elements(|| random_uniform::<DIM1, f32>(key, dim1(10)));
    let scalar = elements(|| random_uniform::<DIM0, f32>(key, Z));
    assert_eq!(f32_bits(&flat), f32_bits(&cube));
    assert_eq!(f32_bits(&flat[..10]), f32_bits(&prefix));
    assert_eq!(f32_bits(&flat[..1]), f32_bits(&scalar));
    assert!(elements(|| random_normal::<DIM2, f32>(key, dim2(0, 3))).is_empty());
}

#[test]
fn random_numbers_in_generate_and_map_use_the_scalar_functions() {
    // Per-row keys by fold_in inside generate; uniform_f32 inside map.
    let key = Key::new(11);
    let m = elements(|| {
        generate(dim2(3, 4), move |ix| {
            let (r, c) = unindex2(ix);
            uniform_f32(fold_in(key, r.cast::<u64>()), c.cast::<u64>())
        })
    });
    for r in 0..3u64 {
        for c in 0..4u64 {
            assert_eq!(m[(r * 4 + c) as usize].to_bits(), key.fold_in(r).uniform_f32(c).to_bits());
        }
    }
    let counters: Vec<u64> = (100..110).collect();
    let got = map_vec(&counters, move |i| uniform_f32(key, i)).expect("runs");
    let want: Vec<f32> = counters.iter().map(|&i| key.uniform_f32(i)).collect();
    assert_eq!(f32_bits(&got), f32_bits(&want));
}

// ---------------------------------------------------------------------------
// Different keys and counters

#[test]
fn different_keys_give_different_arrays() {
    let n = 1000;
    let a = elements(|| random_uniform::<DIM1, f32>(Key::new(1), dim1(n)));
    let b = elements(|| random_uniform::<DIM1, f32>(Key::new(2), dim1(n)));
    let c = elements(|| random_uniform::<DIM1, f32>(Key::new(1 << 32), dim1(n)));
    // Two independent 24-bit uniforms are equal with probability 2^-24: in
    // 1000 pairs, an equal pair is a one-in-16000 event (and with these
    // fixed keys there is none).
    for (x, y) in [(&a, &b), (&a, &c), (&b, &c)] {
        assert_eq!(x.iter().zip(y.iter()).filter(|(p, q)| p == q).count(), 0);
    }
}

#[test]
fn different_counters_give_different_blocks() {
    // Philox is a bijection of the counter for each key: distinct counters
    // give distinct blocks, and neighbouring ones look unrelated.
    let key = Key::new(3);
    let blocks: Vec<[u32; 4]> = (0..4096u64).map(|i| key.sample_block(i)).collect();
    let mut sorted = blocks.clone();
    sorted.sort();
    sorted.dedup();
    assert_eq!(sorted.len(), blocks.len());
    // about half of the 128 bits change between neighbours
    for w in blocks.windows(2) {
        let flipped: u32 = (0..4).map(|k| (w[0][k] ^ w[1][k]).count_ones()).sum();
        assert!((24..=104).contains(&flipped), "{flipped} bits differ between neighbouring blocks");
    }
}

#[test]
fn derived_keys_differ_from_each_other_and_their_parent() {
    let key = Key::new(17);
    let mut keys = key.split(64).unwrap();
    keys.extend((0..64).map(|d| key.fold_in(d)));
    keys.push(key);
    keys.push(key.fold_in(0).fold_in(0));
    let mut words: Vec<[u32; 2]> = keys.iter().map(|k| k.words()).collect();
    words.sort();
    words.dedup();
    assert_eq!(words.len(), keys.len(), "derived keys collide");
    // derivation is deterministic
    assert_eq!(key.split(3).unwrap(), key.split(5).unwrap()[..3].to_vec());
    // more keys than memory holds: an error naming this line, not a panic
    match key.split(usize::MAX) {
        Err(Error::OutOfMemory { loc, shape }) => {
            assert_eq!((loc.line(), shape), (line!() - 2, vec![usize::MAX]));
        }
        other => panic!("expected OutOfMemory, got {:?}", other.map(|k| k.len())),
    }
    assert_eq!(key.fold_in(12345), key.fold_in(12345));
    // a derived key is not a sample block of its parent (its counter's
    // word 3 is a tag, never 0)
    let samples: Vec<[u32; 2]> = (0..64u64)
        .map(|i| {
            let b = key.sample_block(i);
            [b[0], b[1]]
        })
        .collect();
    assert!(keys[..128].iter().all(|k| !samples.contains(&k.words())));
}

#[test]
fn seeds_map_to_keys_low_word_first() {
    assert_eq!(Key::new(0).words(), [0, 0]);
    assert_eq!(Key::new(0x0000_0002_0000_0001).words(), [1, 2]);
    assert_eq!(Key::new(u64::MAX), Key::from_words([!0, !0]));
}

// ---------------------------------------------------------------------------
// Ranges and statistics

#[test]
fn unit_conversions_are_exact_and_below_one() {
    let bits32 = vec![0u32, 1, 0xff, 0x100, 0x8000_0000, u32::MAX - 0xff, u32::MAX];
    let got = map_vec(&bits32, |b| unit_f32(b)).expect("runs");
    for (&b, &x) in bits32.iter().zip(&got) {
        assert_eq!(x, (b >> 8) as f32 / 16_777_216.0, "unit_f32({b:#x})");
    }
    assert_eq!(got[0], 0.0);
    assert_eq!(*got.last().unwrap(), 1.0 - f32::EPSILON / 2.0);
    assert!(*got.last().unwrap() < 1.0);

    let bits64 = vec![0u64, 1, 0x7ff, 0x800, 1 << 63, u64::MAX];
    let got = map_vec(&bits64, |b| unit_f64(b)).expect("runs");
    for (&b, &x) in bits64.iter().zip(&got) {
        assert_eq!(x, (b >> 11) as f64 / 9_007_199_254_740_992.0, "unit_f64({b:#x})");
    }
    assert_eq!(*got.last().unwrap(), 1.0 - f64::EPSILON / 2.0);
}

#[test]
fn uniform_samples_lie_in_the_unit_interval_on_their_grid() {
    let key = Key::new(8);
    let xs = elements(|| random_uniform::<DIM1, f32>(key, dim1(4096)));
    assert!(xs.iter().all(|&x| (0.0..1.0).contains(&x) && x != 1.0));
    assert!(xs.iter().all(|&x| (x * 16_777_216.0).fract() == 0.0), "not on the 2^-24 grid");
    let ys = elements(|| random_uniform::<DIM1, f64>(key, dim1(4096)));
    assert!(ys.iter().all(|&y| (0.0..1.0).contains(&y)));
    assert!(ys.iter().all(|&y| (y * 9_007_199_254_740_992.0).fract() == 0.0), "not on the 2^-53 grid");
}

/// Pearson's chi-square statistic of `xs` (in `[0, 1)`) over `bins`
/// equal bins.
fn chi_square(xs: &[f64], bins: usize) -> f64 {
    let mut counts = vec![0u64; bins];
    for &x in xs {
        // x < 1, so x * bins < bins: the index is in range
        counts[(x * bins as f64) as usize] += 1;
    }
    let expected = xs.len() as f64 / bins as f64;
    counts.iter().map(|&o| (o as f64 - expected).powi(2) / expected).sum()
}

/// The lag-1 serial correlation coefficient of `xs`.
fn serial_correlation(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>();
    let cov = xs.windows(2).map(|w| (w[0] - mean) * (w[1] - mean)).sum::<f64>();
    cov / var
}

/// The upper 1% point of the chi-square distribution with 99 degrees of
/// freedom (the test of 100 bins): P(X > 134.642) = 0.01. (Tables give
/// 134.642; integrating the regularised incomplete gamma function gives
/// P = 0.009999.)
const CHI2_99_1PCT: f64 = 134.642;

#[test]
fn uniform_f32_passes_chi_square_at_one_percent() {
    // Goodness of fit of 100_000 samples to the uniform distribution over
    // 100 equal bins. With 1000 expected per bin (far above the usual
    // minimum of 5), Pearson's statistic sum((O - E)^2 / E) is very nearly
    // chi-square with 99 degrees of freedom if the samples are uniform; a
    // uniform generator exceeds the 1% critical value for one key in a
    // hundred. (The 2^24 grid points do not split evenly into 100 bins, but
    // bin probabilities differ by at most 1 / 167772: negligible.) The key
    // is fixed, so the test is deterministic. The same samples must not be
    // correlated with their neighbours: the lag-1 correlation has standard
    // error 1/sqrt(n), and we allow five.
    let n = 100_000;
    let xs: Vec<f64> = elements(|| random_uniform::<DIM1, f32>(Key::new(42), dim1(n)))
        .iter()
        .map(|&x| f64::from(x))
        .collect();
    let stat = chi_square(&xs, 100);
    eprintln!(
        "uniform_f32: chi-square over 100 bins of {n} samples = {stat:.3} (1% critical value {CHI2_99_1PCT})"
    );
    assert!(stat < CHI2_99_1PCT, "chi-square {stat} exceeds the 1% critical value {CHI2_99_1PCT}");
    let r = serial_correlation(&xs);
    assert!(r.abs() < 5.0 / (n as f64).sqrt(), "lag-1 correlation {r}");
}

#[test]
fn uniform_f64_passes_chi_square_at_one_percent() {
    // As above, with 20_000 samples: 200 expected per bin.
    let n = 20_000;
    let xs = elements(|| random_uniform::<DIM1, f64>(Key::new(43), dim1(n)));
    let stat = chi_square(&xs, 100);
    eprintln!(
        "uniform_f64: chi-square over 100 bins of {n} samples = {stat:.3} (1% critical value {CHI2_99_1PCT})"
    );
    assert!(stat < CHI2_99_1PCT, "chi-square {stat} exceeds the 1% critical value {CHI2_99_1PCT}");
}

/// Checks the sample mean and variance of `n` standard normal samples.
///
/// The sample mean of n standard normals has standard error 1/sqrt(n);
/// the sample variance has standard error sqrt(2/(n-1)) (its variance is
/// 2 sigma^4 / (n-1) for normal data). Each must lie within five standard
/// errors of its true value (0 and 1), which a correct generator misses
/// with probability below 1e-6. The samples must also be finite and
/// within the largest magnitude Box-Muller can give.
fn check_normal_moments(xs: &[f64], max_abs: f64, what: &str) {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let (se_mean, se_var) = (1.0 / n.sqrt(), (2.0 / (n - 1.0)).sqrt());
    eprintln!(
        "{what}: mean {mean:.5} (bound {:.5}), variance {var:.5} (bound 1 +- {:.5})",
        5.0 * se_mean,
        5.0 * se_var
    );
    assert!(mean.abs() < 5.0 * se_mean, "{what}: mean {mean}");
    assert!((var - 1.0).abs() < 5.0 * se_var, "{what}: variance {var}");
    assert!(xs.iter().all(|x| x.is_finite() && x.abs() <= max_abs), "{what}: a sample out of range");
}

#[test]
fn normal_samples_have_mean_zero_and_variance_one() {
    let n = 20_000;
    let xs: Vec<f64> = elements(|| random_normal::<DIM1, f32>(Key::new(44), dim1(n)))
        .iter()
        .map(|&x| f64::from(x))
        .collect();
    // |z| <= sqrt(-2 ln 2^-24) = 5.768 for f32
    check_normal_moments(&xs, 5.77, "normal_f32");
    let ys = elements(|| random_normal::<DIM1, f64>(Key::new(45), dim1(n)));
    // |z| <= sqrt(-2 ln 2^-53) = 8.572 for f64
    check_normal_moments(&ys, 8.58, "normal_f64");
}

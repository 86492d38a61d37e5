//! The audio processor (the sequences thesis §3.2.2, `zc_stream`, and
//! §7.2): sliding windows of irregular size over a long signal.
//!
//! The thesis' structure, kept here:
//!
//! ```text
//! zc_core   = post_processing . zc_stream . pre_processing
//! zc_stream = streamOut $ mapSeq (processWindow audioData) windowIndexes
//!   where windowIndexes = produce (sizeOf audioData) id
//! ```
//!
//! * *Pre-processing* (plain Rust, [`pre_process`]) chooses the windows:
//!   where the signal is dense in information (many zero crossings: noise,
//!   high tones) a window is short, down to [`MIN_WINDOW`] samples; where
//!   it is sparse (a low tone, near silence) it is long, up to
//!   [`MAX_WINDOW`]. Consecutive windows overlap by half (the hop is half
//!   the window). The result is the audio data ([`AudioData`]: the signal,
//!   each window's start and length), not a stream of copied windows: the
//!   windows overlap, so, as the thesis says, passing indices is cheaper.
//! * *The stream* ([`zc_stream`]): `produce` gives the window indices,
//!   `map_seq` applies [`process_window`] to each. An element reads its
//!   window as a slice of the signal at a computed offset (`generate` and
//!   `index`, as the thesis' `mvm_ndp` slices), so the sequence is
//!   irregular inside: each element's arrays have the extent of its own
//!   window. An element is a tuple: the window's magnitude spectrum
//!   ([`BINS`] bins) and its zero-crossing count.
//! * *Post-processing* (plain Rust, [`PostProcessor`]) consumes the
//!   elements in order as they arrive: the spectral flux of each window
//!   (how much the spectrum rose since the previous window), and onsets
//!   picked as the flux's peaks.
//!
//! `processWindow`, [`process_window`]: a Hann-windowed discrete Fourier
//! transform at [`BINS`] fixed frequencies, computed directly as sums over
//! the window (`BINS x L` products for a window of length `L`: data
//! parallel, compute-intensive), and the zero crossings. Bin `k` is the
//! frequency `(2k + 1) / (4 BINS)` cycles per sample (the bin centres from
//! 0 to Nyquist), the same for every window whatever its length, so that
//! consecutive spectra can be compared; its phase at sample `n` is
//! `(2k + 1) n` steps of a table of [`PERIOD`] cosines (one period), so
//! the twiddle factors are exact table reads: `cos(2π m / PERIOD)` for the
//! real part and `cos(2π (m + BINS) / PERIOD) = -sin(2π m / PERIOD)` for
//! the imaginary part. A magnitude is divided by the window length, so
//! that windows of different lengths are comparable.
//!
//! Two forms of the stream: the sequence ([`zc_stream`], the element
//! function lifted over a chunk of windows), and the flat per-window
//! program ([`window_program`], "regular Accelerate" of §7.2, compiled
//! once and run once per window, one window at a time).
//!
//! The plain-Rust reference ([`window_ref`]) does the same floating-point
//! operations in the same order (each sum from 0, left to right);
//! [`check_features`] compares within a tolerance derived at
//! [`magnitude_tolerances`].
//!
//! Used by `examples/audio.rs` and the `audio` benchmark.

use crate::rng::Rng;
use accelerate::prelude::*;
use std::f32::consts::TAU;

/// Frequency bins of a window's spectrum.
pub const BINS: usize = 64;
/// The twiddle table's length: one period of the cosine, in steps of a
/// quarter of the bins' spacing (so that `+ BINS` is a quarter period).
pub const PERIOD: usize = 4 * BINS;
/// The shortest and the longest window.
pub const MIN_WINDOW: usize = 256;
pub const MAX_WINDOW: usize = 2048;
/// The samples pre-processing measures at a window's start.
const PROBE: usize = 256;
/// Below this root mean square the signal is taken as silence: the
/// longest window.
const QUIET_RMS: f64 = 0.02;
/// The sample rate the generator's frequencies are in (Hz).
pub const SAMPLE_RATE: f64 = 16_000.0;

/// The audio data (the thesis' `AudioData`, a tuple of arrays): the
/// signal, and each window's start and length.
pub type AudioData = (Vector<f32>, Vector<i64>, Vector<i64>);

/// One element of the stream: a window's magnitude spectrum ([`BINS`]
/// values) and its zero-crossing count.
pub type WindowOut = (Vector<f32>, Scalar<i32>);

/// The pre-processed audio on the host.
#[derive(Clone, Debug)]
pub struct Audio {
    pub signal: Vec<f32>,
    pub starts: Vec<i64>,
    pub lengths: Vec<i64>,
}

impl Audio {
    /// Pre-processes a signal ([`pre_process`]).
    pub fn new(signal: Vec<f32>) -> Audio {
        let (starts, lengths) = pre_process(&signal);
        Audio { signal, starts, lengths }
    }

    pub fn windows(&self) -> usize {
        self.starts.len()
    }

    /// Window `w`'s samples.
    pub fn window(&self, w: usize) -> &[f32] {
        let start = self.starts[w] as usize;
        &self.signal[start..start + self.lengths[w] as usize]
    }

    /// The arrays the programs take.
    pub fn data(&self) -> AudioData {
        (
            Vector::from_elems(self.signal.clone()),
            Vector::from_elems(self.starts.clone()),
            Vector::from_elems(self.lengths.clone()),
        )
    }
}

// ---------------------------------------------------------------------------
// Input and pre-processing

/// A deterministic test signal of `n` samples in [-1, 1]: sections of 2000
/// to 16000 samples (1/8 s to 1 s at [`SAMPLE_RATE`]), each a low tone
/// (80-480 Hz with two overtones), a high tone (1.5-4 kHz), a decaying
/// noise burst or near silence, every frequency gliding by up to 30% over
/// its section, over a faint background noise. So the information density
/// varies, and with it the windows' lengths.
pub fn signal(n: usize, seed: u64) -> Vec<f32> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::with_capacity(n);
    let mut phases = [0.0f64; 3];
    while out.len() < n {
        let len = (2_000 + rng.below(14_000)).min(n - out.len());
        let kind = rng.below(4);
        let base = match kind {
            0 => 80.0 + 400.0 * rng.unit_f32() as f64,
            _ => 1500.0 + 2500.0 * rng.unit_f32() as f64,
        };
        let glide = rng.uniform_f32(-0.3, 0.3) as f64;
        let amp = rng.uniform_f32(0.2, 0.6) as f64;
        for t in 0..len {
            let s = t as f64 / len as f64;
            let f0 = base * (1.0 + glide * s);
            let mut v = match kind {
                0 | 1 => {
                    let mut v = 0.0;
                    for (p, phase) in phases.iter_mut().enumerate() {
                        let h = (p + 1) as f64;
                        *phase =
                            (*phase + std::f64::consts::TAU * f0 * h / SAMPLE_RATE) % std::f64::consts::TAU;
                        v += amp / h * phase.sin();
                    }
                    v
                }
                2 => amp * (-4.0 * s).exp() * rng.uniform_f32(-1.0, 1.0) as f64,
                _ => 0.01 * rng.uniform_f32(-1.0, 1.0) as f64,
            };
            v += 0.005 * rng.uniform_f32(-1.0, 1.0) as f64;
            out.push(v.clamp(-1.0, 1.0) as f32);
        }
    }
    out
}

/// Whether two consecutive samples lie on different sides of zero (a zero
/// counts as positive). The program's `zc` uses the same rule.
#[inline]
fn crosses(a: f32, b: f32) -> bool {
    (a < 0.0) != (b < 0.0)
}

/// The windows (starts, lengths), from a local measure of information
/// density at each window's start: over the next [`PROBE`] samples, the
/// zero-crossing rate `z` (crossings per sample, 0 to 1) and the energy.
/// Near silence gets [`MAX_WINDOW`]; otherwise the length is
/// `MAX_WINDOW / (1 + 14 z)` within [`MIN_WINDOW`, `MAX_WINDOW`] (a 200 Hz
/// tone at 16 kHz, `z` = 0.025, gets about 1500 samples; white noise,
/// `z` = 0.5, 256). The next window starts half a window later; the last
/// is cut at the end of the signal, and a tail shorter than
/// [`MIN_WINDOW`] has no window.
pub fn pre_process(signal: &[f32]) -> (Vec<i64>, Vec<i64>) {
    let (mut starts, mut lengths) = (Vec::new(), Vec::new());
    let mut p = 0;
    while p + MIN_WINDOW <= signal.len() {
        let probe = &signal[p..(p + PROBE).min(signal.len())];
        let crossings = probe.windows(2).filter(|s| crosses(s[0], s[1])).count();
        let z = crossings as f64 / (probe.len() - 1) as f64;
        let rms = (probe.iter().map(|&v| v as f64 * v as f64).sum::<f64>() / probe.len() as f64).sqrt();
        let len = if rms < QUIET_RMS { MAX_WINDOW } else { (MAX_WINDOW as f64 / (1.0 + 14.0 * z)) as usize };
        let len = len.clamp(MIN_WINDOW, MAX_WINDOW).min(signal.len() - p);
        starts.push(p as i64);
        lengths.push(len as i64);
        p += len / 2;
    }
    (starts, lengths)
}

/// The twiddle table: `cos(2π m / PERIOD)` for `m` in `0 .. PERIOD`,
/// computed in f64 and rounded once.
pub fn twiddles() -> Vec<f32> {
    (0..PERIOD).map(|m| (std::f64::consts::TAU * m as f64 / PERIOD as f64).cos() as f32).collect()
}

// ---------------------------------------------------------------------------
// The programs

/// The thesis' `processWindow audioData`: window `w`'s magnitude
/// spectrum and zero-crossing count (the module doc says what they are).
///
/// Every array here has the window's own extent (`L`, or `BINS x L`
/// before the sums), so over a sequence of windows it is irregular.
///
/// It takes the audio data's arrays one by one: a tuple of arrays read
/// inside a sequence's element function is refused by the lifter today
/// (`Error::NestedParallelism`, "prj inside a parallel function"), even
/// when its components are projected outside the function.
pub fn process_window(
    signal: &Acc<Vector<f32>>,
    starts: &Acc<Vector<i64>>,
    lengths: &Acc<Vector<i64>>,
    twiddles: &Acc<Vector<f32>>,
    w: &Acc<Scalar<i64>>,
) -> Acc<WindowOut> {
    let signal = signal.clone();
    let w = w.the();
    let start = starts.index(index1(&w));
    let len = lengths.index(index1(&w));
    // the window: a slice of the signal at the window's offset
    let x = generate(index1(&len), move |i| signal.index(index1(start + unindex1(i))));
    let lf = len.cast::<f32>();
    let denom = &lf - 1.0f32;
    let x1 = x.clone();
    // the Hann window, 0 at both ends
    let windowed = generate(index1(&len), move |i| {
        let n = unindex1(i).cast::<f32>();
        let h = 0.5f32 - 0.5f32 * (TAU * n / denom).cos();
        x1.index(i) * h
    });
    // Each bin is the sum over n of windowed[n] * twiddles[((2k + 1) n +
    // shift) mod PERIOD]: an array of the window's length reduced inside
    // the bins' `generate` (nested data parallelism, flattened by the
    // lifter). One `generate` of BINS x L summed along its rows would say
    // the same, but the lifter refuses the fold of an irregular array of
    // two dimensions inside a sequence today ("a fold of an irregular
    // array of more than one dimension").
    let magnitudes = generate(index1(BINS as i64), |k| {
        let step = 2i64 * unindex1(k) + 1i64;
        let bin = |shift: i64| {
            let (xw, tw, step) = (windowed.clone(), twiddles.clone(), step.clone());
            generate(index1(&len), move |n| {
                let m = (step * unindex1(n) + shift) % PERIOD as i64;
                xw.index(n) * tw.index(index1(m))
            })
            .fold(0.0f32, |s, t| s + t)
            .the()
        };
        let (re, im) = (bin(0), bin(BINS as i64));
        (&re * &re + &im * &im).sqrt() / lf
    });
    let zero_crossings = generate(index1(&len - 1i64), move |i| {
        let n = unindex1(i);
        let a = x.index(index1(&n)).lt(0.0f32);
        let b = x.index(index1(n + 1i64)).lt(0.0f32);
        a.ne(b).select(1i32, 0i32)
    })
    .fold(0i32, |s, t| s + t);
    lift_acc((magnitudes, zero_crossings))
}

/// The thesis' `zc_stream` before `streamOut`: the window indices
/// (`produce` of the number of windows), and [`process_window`] mapped
/// over them. Consume it with `accelerate::stream_out`.
pub fn zc_stream(
    signal: &Acc<Vector<f32>>,
    starts: &Acc<Vector<i64>>,
    lengths: &Acc<Vector<i64>>,
    twiddles: &Acc<Vector<f32>>,
) -> Seq<WindowOut> {
    let window_indexes = produce(starts.size(), |w| unit(w));
    window_indexes.map_seq(|w| process_window(signal, starts, lengths, twiddles, &w))
}

/// [`zc_stream`] of host arrays (`use_array`, which shares them).
pub fn zc_stream_of(data: &AudioData, twiddles: &Vector<f32>) -> Seq<WindowOut> {
    let (signal, starts, lengths) = data;
    zc_stream(
        &use_array(signal.clone()),
        &use_array(starts.clone()),
        &use_array(lengths.clone()),
        &use_array(twiddles.clone()),
    )
}

/// The per-window form ("regular Accelerate", §7.2): [`process_window`]
/// as a program of the audio data, the twiddles and one window index, to
/// compile once and run once per window.
pub fn window_program(
    data: Acc<AudioData>,
    twiddles: Acc<Vector<f32>>,
    w: Acc<Scalar<i64>>,
) -> Acc<WindowOut> {
    let (signal, starts, lengths) = data.unlift();
    process_window(&signal, &starts, &lengths, &twiddles, &w)
}

/// The twiddle factors of every sample position of a window: row `n`
/// holds bin `k`'s real factor at column `k` and its imaginary one at
/// column `BINS + k`, the table reads [`window_ref`] makes at sample `n`
/// (the Python peers' table, `peers/bench_audio.py`).
pub fn twiddle_rows(twiddles: &Acc<Vector<f32>>) -> Acc<Matrix<f32>> {
    let tw = twiddles.clone();
    generate(index2(MAX_WINDOW as i64, 2 * BINS as i64), move |ix| {
        let (n, c) = unindex2(ix);
        let k = &c % BINS as i64;
        let shift = (&c / BINS as i64) * BINS as i64;
        let m = ((2i64 * k + 1i64) * n + shift) % PERIOD as i64;
        tw.index(index1(m))
    })
}

/// Every window's magnitude spectrum (a row of [`BINS`] a window) and
/// zero-crossing count at once, in the form the Python peers compute
/// them: each window's Hann-windowed samples made once (a row of
/// [`MAX_WINDOW`] a window, zero past its length), and each bin's two
/// sums a loop over the window's samples reading a row of
/// [`twiddle_rows`] a sample, where [`process_window`] computes each
/// factor's table position. A window's bins take the same steps and
/// read neighbouring factors, so the CPU backend runs them in lockstep
/// (Note [Reads along the lanes] in `cpu/generate.rs`), as Numba
/// vectorises its loop over the sums. Each sum adds its terms in
/// [`window_ref`]'s order. The zero crossings are differences of a running
/// count of the signal's crossings (NumPy's form).
pub fn spectra_table(
    signal: &Acc<Vector<f32>>,
    starts: &Acc<Vector<i64>>,
    lengths: &Acc<Vector<i64>>,
    twiddles: &Acc<Vector<f32>>,
) -> Acc<(Matrix<f32>, Vector<i32>)> {
    let table = twiddle_rows(twiddles);
    let windows = starts.length();
    let (sig, st, le) = (signal.clone(), starts.clone(), lengths.clone());
    let windowed = generate(index2(&windows, MAX_WINDOW as i64), move |ix| {
        let (w, n) = unindex2(ix);
        let len = le.index(index1(&w));
        let (sig, st) = (sig.clone(), st.clone());
        n.lt(&len).select(
            {
                let x = sig.index(index1(st.index(index1(&w)) + &n));
                let denom = len.cast::<f32>() - 1.0f32;
                x * (0.5f32 - 0.5f32 * (TAU * n.cast::<f32>() / denom).cos())
            },
            0.0f32,
        )
    });
    let le = lengths.clone();
    let magnitudes = generate(index2(&windows, BINS as i64), move |ix| {
        let (w, k) = unindex2(ix);
        let len = le.index(index1(&w));
        let (xw, tab, l2) = (windowed.clone(), table.clone(), len.clone());
        let (_, re, im) = while_loop(
            lift((constant(0i64), constant(0.0f32), constant(0.0f32))),
            move |s: &Exp<(i64, f32, f32)>| s.unlift().0.lt(&l2),
            move |s: &Exp<(i64, f32, f32)>| {
                let (i, re, im) = s.unlift();
                let x = xw.index(index2(&w, &i));
                let (c, s) = (tab.index(index2(&i, &k)), tab.index(index2(&i, &k + BINS as i64)));
                lift((&i + 1i64, re + &x * c, im + &x * s))
            },
        )
        .unlift();
        (&re * &re + &im * &im).sqrt() / len.cast::<f32>()
    });
    // crossings[i]: those among samples 0 ..= i
    let sig = signal.clone();
    let flags = generate(index1(signal.length() - 1i64), move |i| {
        let n = unindex1(i);
        let a = sig.index(index1(&n)).lt(0.0f32);
        let b = sig.index(index1(n + 1i64)).lt(0.0f32);
        a.ne(b).select(1i32, 0i32)
    });
    let crossings = flags.scanl(0i32, |a, b| a + b);
    let (st, le) = (starts.clone(), lengths.clone());
    let zero_crossings = generate(index1(&windows), move |w| {
        let start = st.index(index1(unindex1(w.clone())));
        let last = &start + le.index(index1(unindex1(w))) - 1i64;
        crossings.index(index1(last)) - crossings.index(index1(start))
    });
    lift_acc((magnitudes, zero_crossings))
}

/// The features from [`spectra_table`]'s result: the post-processing of
/// its windows in order.
pub fn features_of_table(magnitudes: &Matrix<f32>, zero_crossings: &Vector<i32>) -> Features {
    let mut post = PostProcessor::new();
    for (m, &zc) in magnitudes.as_slice().chunks(BINS).zip(zero_crossings.as_slice()) {
        post.push(m, zc);
    }
    post.finish()
}

// ---------------------------------------------------------------------------
// The reference and the post-processing

/// [`process_window`] in plain Rust, for window `x`: the same operations
/// in the same order (each sum from 0, left to right; the real and the
/// imaginary part accumulated side by side, each in its own order).
pub fn window_ref(x: &[f32], twiddles: &[f32]) -> (Vec<f32>, i32) {
    let lf = x.len() as f32;
    let denom = lf - 1.0;
    let xw: Vec<f32> =
        x.iter().enumerate().map(|(n, &v)| v * (0.5 - 0.5 * (TAU * n as f32 / denom).cos())).collect();
    let magnitudes = (0..BINS)
        .map(|k| {
            let step = 2 * k + 1;
            let (mut re, mut im) = (0.0f32, 0.0f32);
            for (n, &v) in xw.iter().enumerate() {
                let m = step * n;
                re += v * twiddles[m % PERIOD];
                im += v * twiddles[(m + BINS) % PERIOD];
            }
            (re * re + im * im).sqrt() / lf
        })
        .collect();
    let zero_crossings = x.windows(2).filter(|s| crosses(s[0], s[1])).count() as i32;
    (magnitudes, zero_crossings)
}

/// The outputs of every window and what post-processing made of them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Features {
    /// [`BINS`] magnitudes a window, window after window.
    pub magnitudes: Vec<f32>,
    pub zero_crossings: Vec<i32>,
    /// Each window's spectral flux: the sum over the bins of the rise of
    /// the magnitude since the previous window (the first window's from
    /// zero).
    pub flux: Vec<f32>,
    /// The windows whose flux is a peak ([`PostProcessor`]).
    pub onsets: Vec<usize>,
}

impl Features {
    pub fn windows(&self) -> usize {
        self.zero_crossings.len()
    }

    /// Window `w`'s magnitudes.
    pub fn spectrum(&self, w: usize) -> &[f32] {
        &self.magnitudes[w * BINS..(w + 1) * BINS]
    }
}

/// The windows before a candidate whose mean flux sets its threshold.
const ONSET_HISTORY: usize = 16;
/// A peak is an onset when its flux exceeds this many times that mean.
const ONSET_FACTOR: f32 = 1.5;

/// Post-processing, one window at a time in order (as `stream_out` hands
/// them out): keeps the window's outputs, computes its spectral flux, and
/// decides whether the window before it is an onset (a local maximum of
/// the flux above [`ONSET_FACTOR`] times the mean of the
/// [`ONSET_HISTORY`] fluxes before it), which needs this window's flux.
#[derive(Clone, Debug, Default)]
pub struct PostProcessor {
    out: Features,
}

impl PostProcessor {
    pub fn new() -> PostProcessor {
        PostProcessor::default()
    }

    /// The next window's spectrum and zero-crossing count.
    pub fn push(&mut self, magnitudes: &[f32], zero_crossings: i32) {
        let out = &mut self.out;
        let w = out.windows();
        let flux = if w == 0 {
            magnitudes.iter().fold(0.0f32, |s, &m| s + m.max(0.0))
        } else {
            let prev = out.spectrum(w - 1);
            magnitudes.iter().zip(prev).fold(0.0f32, |s, (&m, &p)| s + (m - p).max(0.0))
        };
        out.magnitudes.extend_from_slice(magnitudes);
        out.zero_crossings.push(zero_crossings);
        out.flux.push(flux);
        if w >= 2 {
            let c = w - 1;
            let f = &out.flux;
            let history = &f[c.saturating_sub(ONSET_HISTORY)..c];
            let mean = history.iter().sum::<f32>() / history.len() as f32;
            if f[c] > f[c - 1] && f[c] >= f[c + 1] && f[c] > ONSET_FACTOR * mean {
                out.onsets.push(c);
            }
        }
    }

    pub fn finish(self) -> Features {
        self.out
    }
}

/// The whole computation in plain Rust, one window after another.
pub fn features_ref(audio: &Audio, twiddles: &[f32]) -> Features {
    let mut post = PostProcessor::new();
    for w in 0..audio.windows() {
        let (m, zc) = window_ref(audio.window(w), twiddles);
        post.push(&m, zc);
    }
    post.finish()
}

// ---------------------------------------------------------------------------
// Checking

/// How far each of window `w`'s magnitudes may be from the reference's
/// `want` (one a bin).
///
/// Note [Audio tolerance]
/// The real part `re = sum_n t_n`, `t_n = (x_n h_n) c_n`, is a sum of `L`
/// products, which a backend may add in another order (a parallel fold)
/// or with fused multiply-adds (CUDA): the two results are each within
/// gamma_L * sum |t_n| of the exact sum, the difference within
/// `(L + 1) eps sum |t_n|` (check.rs' `reassociated_sum_tolerance` in the
/// benchmarks, Higham §3.1). The Hann factor `h_n = 0.5 - 0.5 cos(..)`
/// comes from the backend's `cos`, which may differ from Rust's by a few
/// ulps (CUDA's `cosf`: 2 ulps; each value of `cos` is within 1, so 4
/// ulps is at most 2 eps), and its own subtraction may be fused: `h_n`
/// differs by at most 2 eps, each `t_n` by at most `2 eps |x_n|` more
/// than its rounding; 5 eps allows for it. With `|c_n| <= 1` and
/// `h_n <= 1`, `|t_n| <= |x_n|`, so both parts are within
/// `d = (L + 6) eps sum |x_n|`. The modulus of a complex number moves by
/// at most the modulus of the change (`<= 2 d`), and `sqrt(re^2 + im^2)
/// / L` rounds four times more (two squares, a sum, a square root and a
/// division: within 4 eps of the magnitude, in each of the two results).
pub fn magnitude_tolerances(x: &[f32], want: &[f32]) -> Vec<f64> {
    let eps = f32::EPSILON as f64;
    let l = x.len() as f64;
    let abs_sum: f64 = x.iter().map(|&v| (v as f64).abs()).sum();
    let d = (l + 6.0) * eps * abs_sum;
    want.iter().map(|&m| 2.0 * d / l + 8.0 * eps * (m as f64).abs()).collect()
}

/// Whether `got` equals `want` or lies within `tol` of it (a NaN does
/// not).
fn within(got: f32, want: f32, tol: f64) -> bool {
    got == want || (got as f64 - want as f64).abs() <= tol
}

/// Compares a run's features with the reference's: the zero crossings
/// exactly (integers), each magnitude within [`magnitude_tolerances`], each
/// window's flux within the sum of the tolerances of the magnitudes it
/// reads (the rise `max(0, m - p)` moves no more than `m` and `p` do)
/// plus the rounding of its own `BINS` terms. The onsets are decisions
/// on values known within a tolerance, and are not compared.
pub fn check_features(audio: &Audio, got: &Features, want: &Features) -> Result<(), String> {
    let n = want.windows();
    if got.windows() != n || got.magnitudes.len() != n * BINS || got.flux.len() != n {
        return Err(format!(
            "{} windows ({} magnitudes, {} fluxes), the reference has {n}",
            got.windows(),
            got.magnitudes.len(),
            got.flux.len()
        ));
    }
    let eps = f32::EPSILON as f64;
    let mut bad = Vec::new();
    let mut count = 0usize;
    let mut report = |msg: String| {
        count += 1;
        if bad.len() < 5 {
            bad.push(msg);
        }
    };
    let mut prev_tol = vec![0.0f64; BINS];
    for w in 0..n {
        if got.zero_crossings[w] != want.zero_crossings[w] {
            report(format!(
                "window {w}: {} zero crossings, the reference counts {}",
                got.zero_crossings[w], want.zero_crossings[w]
            ));
        }
        let tol = magnitude_tolerances(audio.window(w), want.spectrum(w));
        for (k, ((&g, &m), &t)) in got.spectrum(w).iter().zip(want.spectrum(w)).zip(&tol).enumerate() {
            if !within(g, m, t) {
                report(format!(
                    "window {w}, bin {k}: magnitude {g}, the reference gives {m} (tolerance {t:e})"
                ));
            }
        }
        let rise_tol: f64 = tol.iter().zip(&prev_tol).map(|(a, b)| a + b).sum();
        let rise_abs: f64 = if w == 0 {
            want.spectrum(0).iter().map(|&m| (m as f64).abs()).sum()
        } else {
            want.spectrum(w)
                .iter()
                .zip(want.spectrum(w - 1))
                .map(|(&m, &p)| (m as f64 - p as f64).abs())
                .sum()
        };
        let flux_tol = rise_tol + (BINS + 2) as f64 * eps * rise_abs;
        let (g, f) = (got.flux[w], want.flux[w]);
        if !within(g, f, flux_tol) {
            report(format!("window {w}: flux {g}, the reference gives {f} (tolerance {flux_tol:e})"));
        }
        prev_tol = tol;
    }
    if count == 0 {
        Ok(())
    } else {
        Err(format!("{count} values differ from the plain-Rust reference: {}", bad.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rng::SEED_A;

    fn interpreter() -> Config {
        Config::default().with_backend(accelerate::Backend::Interpreter)
    }

    fn small_audio() -> Audio {
        Audio::new(signal(6_000, SEED_A))
    }

    fn sequence_features(audio: &Audio, config: &Config) -> Features {
        let s = zc_stream_of(&audio.data(), &Vector::from_elems(twiddles()));
        let mut post = PostProcessor::new();
        for e in accelerate::stream_out_with(&s, config).unwrap() {
            let (m, zc) = e.unwrap();
            post.push(&m.to_vec(), zc.value());
        }
        post.finish()
    }

    #[test]
    fn windows_vary_in_length_cover_the_signal_and_overlap_by_half() {
        let audio = Audio::new(signal(200_000, SEED_A));
        let (min, max) = (audio.lengths.iter().min().unwrap(), audio.lengths.iter().max().unwrap());
        assert!(*min >= MIN_WINDOW as i64 && *max <= MAX_WINDOW as i64);
        assert!(max - min >= 1024, "lengths {min}..{max}: not irregular enough");
        assert_eq!(audio.starts[0], 0);
        for w in 1..audio.windows() {
            assert_eq!(audio.starts[w], audio.starts[w - 1] + audio.lengths[w - 1] / 2);
        }
        let last = audio.windows() - 1;
        assert!(audio.starts[last] + audio.lengths[last] <= audio.signal.len() as i64);
        assert!(audio.signal.len() as i64 - (audio.starts[last] + audio.lengths[last]) < MAX_WINDOW as i64);
    }

    #[test]
    fn reference_spectrum_of_a_pure_tone_peaks_at_its_bin() {
        let k = 10;
        let f = (2 * k + 1) as f32 / PERIOD as f32;
        let x: Vec<f32> = (0..1024).map(|n| (TAU * f * n as f32).cos()).collect();
        let (m, zc) = window_ref(&x, &twiddles());
        let peak = (0..BINS).max_by(|&a, &b| m[a].total_cmp(&m[b])).unwrap();
        assert_eq!(peak, k);
        // a Hann-windowed unit cosine: magnitude about 1/4 of L, over L
        assert!((m[k] - 0.25).abs() < 0.01, "{}", m[k]);
        assert!((zc - 2 * 1024 * (2 * k + 1) as i32 / PERIOD as i32).abs() <= 1, "{zc}");
    }

    #[test]
    fn sequence_on_the_interpreter_matches_the_reference() {
        let audio = small_audio();
        let want = features_ref(&audio, &twiddles());
        let got = sequence_features(&audio, &interpreter());
        check_features(&audio, &got, &want).unwrap();
    }

    #[test]
    fn per_window_program_matches_the_reference() {
        let audio = small_audio();
        let tw = twiddles();
        let want = features_ref(&audio, &tw);
        let prog = accelerate::compile_with(window_program, Config::default()).unwrap();
        let (data, twv) = (audio.data(), Vector::from_elems(tw));
        let mut post = PostProcessor::new();
        for w in 0..audio.windows() {
            let (m, zc) = prog.run((&data, &twv, &Scalar::scalar(w as i64))).unwrap();
            post.push(&m.to_vec(), zc.value());
        }
        check_features(&audio, &post.finish(), &want).unwrap();
    }

    /// The peers' form on each backend (the CPU's bins in lockstep, Note
    /// [Reads along the lanes]), with windows of every length class.
    #[test]
    fn table_form_matches_the_reference() {
        let audio = small_audio();
        let tw = twiddles();
        let want = features_ref(&audio, &tw);
        let (signal, starts, lengths) = audio.data();
        let program = |s: Acc<Vector<f32>>,
                       st: Acc<Vector<i64>>,
                       l: Acc<Vector<i64>>,
                       t: Acc<Vector<f32>>| { spectra_table(&s, &st, &l, &t) };
        for config in [interpreter(), Config::default()] {
            let prog = accelerate::compile_with(program, config).unwrap();
            let (m, zc) = prog.run((&signal, &starts, &lengths, &Vector::from_elems(tw.clone()))).unwrap();
            check_features(&audio, &features_of_table(&m, &zc), &want).unwrap();
        }
    }

    #[test]
    fn check_rejects_a_magnitude_off_by_more_than_its_tolerance() {
        let audio = small_audio();
        let want = features_ref(&audio, &twiddles());
        let mut got = want.clone();
        let w = audio.windows() / 2;
        let tol = magnitude_tolerances(audio.window(w), want.spectrum(w));
        got.magnitudes[w * BINS + 3] += 2.0 * tol[3] as f32 + f32::EPSILON;
        assert!(check_features(&audio, &got, &want).is_err());
        let mut got = want.clone();
        got.zero_crossings[w] += 1;
        assert!(check_features(&audio, &got, &want).is_err());
    }
}

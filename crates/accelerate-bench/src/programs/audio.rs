//! The audio processor (the sequences thesis §3.2.2 and §7.2), as in
//! `examples/audio.rs`: windows of 256 to 2048 samples chosen by the
//! signal's local zero-crossing rate and energy, overlapping by half; each
//! window's Hann-windowed magnitude spectrum (64 bins, each a sum over the
//! window) and zero crossings; then, in Rust, each window's spectral flux
//! and the onsets. Compute-bound: `64 x L` products for the real and as
//! many for the imaginary part of a window of `L` samples.
//!
//! Variants (post-processing, the flux and the onsets, included in every
//! one, since the sequence's reader does it while the sequence runs):
//!
//! - `accelerate`: the form the Python peers compute (`spectra_table`):
//!   one program of all windows, each window's Hann-windowed samples made
//!   once, each bin's two sums a loop over the window's samples reading a
//!   table of twiddle factors a row per sample (made in the run), and the
//!   zero crossings from a running count of the signal's; the CPU backend
//!   runs a window's bins in lockstep, one vector load of the table a
//!   step (Note [Reads along the lanes] in `cpu/generate.rs`);
//! - `accelerate-seq`: the sequence (`zc_stream`: `produce` of the window
//!   indices, `map_seq` of `process_window`) consumed by `stream_out`,
//!   post-processed as the elements arrive. A sequence is built and run,
//!   not compiled once: its front end runs in every sample (the kernels
//!   come from the kernel cache after the checking run);
//! - `accelerate-per-window`: "regular Accelerate" of §7.2, the same
//!   `process_window` as one program compiled once and run once per
//!   window;
//! - `rust-seq`: the plain loop over the windows, the reference;
//! - `rust-rayon`: the windows on rayon's pool (each window's spectrum
//!   the reference's loop, so bit-identical to it), then the
//!   post-processing in order;
//! - `rust-rayon-table`: the peers' form on rayon's pool, `accelerate`'s
//!   rayon counterpart: the table made in the run, each window's samples
//!   added into all the sums, the loop over the sums vectorised
//!   (`native_fn!`);
//! - `numpy`, `numba`, `jax`: the Python peers (`peers/bench_audio.py`),
//!   given the signal, the windows (the pre-processing's starts and
//!   lengths) and the twiddle table: NumPy's spectra as matrix products
//!   (BLAS) of the Hann-windowed windows, zero-padded to a multiple of
//!   256 samples and grouped by it, with a table of the twiddle factors;
//!   a Numba `prange` over the windows; JAX's the same products as
//!   NumPy's under one `jit`; each then post-processed by the same NumPy
//!   code (the fluxes and onsets, vectorised).
//!
//! Every variant is checked with `audio::check_features` (zero crossings
//! exact; magnitudes and flux within the tolerance derived at
//! `audio::magnitude_tolerances`, Note [Audio tolerance]: each sum over
//! a window may be reassociated, and the backend's `cos` may differ by a
//! few ulps).
//!
//! The program, its reference, the signal and the pre-processing are
//! `accelerate_programs::audio`.

use super::{accelerate_configs, probe_compile, CompileProbe};
use crate::harness::{fresh, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::audio::{
    check_features, features_of_table, features_ref, signal, spectra_table, twiddles, window_program,
    window_ref, zc_stream_of, Audio, Features, PostProcessor, BINS, MAX_WINDOW, PERIOD, SAMPLE_RATE,
};
use accelerate_programs::rng::SEED_A;
use rayon::prelude::*;
use std::f32::consts::TAU;
use std::sync::Arc;

/// Seconds of signal at `SAMPLE_RATE`: about 30, 300 and 3600 windows.
pub fn seconds(size: Size) -> f64 {
    size.pick(0.5, 5.0, 60.0)
}

/// Parallel: the windows' spectra on rayon's pool, then the
/// post-processing, which is sequential by nature (each flux reads the
/// previous window), in order.
pub fn features_rayon(audio: &Audio, twiddles: &[f32]) -> Features {
    let outs: Vec<(Vec<f32>, i32)> =
        (0..audio.windows()).into_par_iter().map(|w| window_ref(audio.window(w), twiddles)).collect();
    let mut post = PostProcessor::new();
    for (m, zc) in &outs {
        post.push(m, *zc);
    }
    post.finish()
}

/// The twiddle table of the peers' form (`audio::twiddle_rows` on the
/// host): row `n` holds each bin's real factor at sample `n`, then its
/// imaginary one.
pub fn twiddle_rows_host(twiddles: &[f32]) -> Vec<f32> {
    let mut t = Vec::with_capacity(MAX_WINDOW * 2 * BINS);
    for n in 0..MAX_WINDOW {
        for c in 0..2 * BINS {
            let (k, shift) = (c % BINS, c / BINS * BINS);
            t.push(twiddles[((2 * k + 1) * n + shift) % PERIOD]);
        }
    }
    t
}

native_fn! {
    /// One window's spectrum and zero crossings in the peers' form: each
    /// Hann-windowed sample added into all `2 BINS` sums, reading a row of
    /// `table` a sample (the loop over the sums vectorises; each sum adds
    /// its terms in the reference's order).
    fn window_table(x: &[f32], table: &[f32], magnitudes: &mut [f32]) -> i32 {
        let lf = x.len() as f32;
        let denom = lf - 1.0;
        let mut sums = [0.0f32; 2 * BINS];
        for ((n, &v), row) in x.iter().enumerate().zip(table.chunks_exact(2 * BINS)) {
            let xw = v * (0.5 - 0.5 * (TAU * n as f32 / denom).cos());
            for (s, &t) in sums.iter_mut().zip(row) {
                *s += xw * t;
            }
        }
        let (re, im) = sums.split_at(BINS);
        for ((m, &r), &i) in magnitudes.iter_mut().zip(re).zip(im) {
            *m = (r * r + i * i).sqrt() / lf;
        }
        x.windows(2).filter(|s| (s[0] < 0.0) != (s[1] < 0.0)).count() as i32
    }
}

/// The peers' form on rayon's pool: the table made (as every variant of
/// this form makes it in its run), each window's spectrum
/// (`window_table`) as a task, then the post-processing in order.
pub fn features_rayon_table(audio: &Audio, twiddles: &[f32]) -> Features {
    let table = twiddle_rows_host(twiddles);
    let outs: Vec<(Vec<f32>, i32)> = (0..audio.windows())
        .into_par_iter()
        .map(|w| {
            let mut m = vec![0.0f32; BINS];
            let zc = window_table(audio.window(w), &table, &mut m);
            (m, zc)
        })
        .collect();
    let mut post = PostProcessor::new();
    for (m, zc) in &outs {
        post.push(m, *zc);
    }
    post.finish()
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let n = (seconds(size) * SAMPLE_RATE) as usize;
    let audio = Arc::new(Audio::new(signal(n, SEED_A)));
    let tw_host = Arc::new(twiddles());
    let want = Arc::new(features_ref(&audio, &tw_host));
    let check = {
        let audio = audio.clone();
        move |got: &Features| check_features(&audio, got, &want)
    };

    let windows = audio.windows();
    let total: i64 = audio.lengths.iter().sum();
    let (lo, hi) = (audio.lengths.iter().min().copied(), audio.lengths.iter().max().copied());
    let mut b = Bench::new(
        "audio",
        format!(
            "{n} samples, {windows} windows of {}..{} samples (mean {}), {BINS} bins",
            lo.unwrap_or(0),
            hi.unwrap_or(0),
            total / windows.max(1) as i64
        ),
    );
    // a multiply and an add for each of the real and imaginary parts'
    // terms, BINS x L of each a window
    b.flops = Some(4.0 * BINS as f64 * total as f64);

    let config = accelerate_configs()[0].1.clone();
    let data = audio.data();
    let tw = Vector::from_elems(tw_host.to_vec());

    let (d, t, c, cfg) = (data.clone(), tw.clone(), check.clone(), config.clone());
    b.variant(
        "accelerate-seq",
        move |slot| {
            fresh(slot, || -> accelerate::Result<Features> {
                let mut post = PostProcessor::new();
                for e in accelerate::stream_out_with(&zc_stream_of(&d, &t), &cfg)? {
                    let (magnitudes, zero_crossings) = e?;
                    post.push(&magnitudes.to_vec(), zero_crossings.value());
                }
                Ok(post.finish())
            })
        },
        move |f| c(f),
    );

    let prog = accelerate::compile_with(window_program, config)
        .map_err(|e| format!("audio, accelerate-per-window: compiling: {e}"))?;
    let c = check.clone();
    b.variant(
        "accelerate-per-window",
        move |slot| {
            fresh(slot, || -> accelerate::Result<Features> {
                let mut post = PostProcessor::new();
                for w in 0..windows {
                    let (magnitudes, zero_crossings) = prog.run((&data, &tw, &Scalar::scalar(w as i64)))?;
                    post.push(&magnitudes.to_vec(), zero_crossings.value());
                }
                Ok(post.finish())
            })
        },
        move |f| c(f),
    );

    let table = accelerate::compile_with(
        |s: Acc<Vector<f32>>, st: Acc<Vector<i64>>, l: Acc<Vector<i64>>, t: Acc<Vector<f32>>| {
            spectra_table(&s, &st, &l, &t)
        },
        accelerate_configs()[0].1.clone(),
    )
    .map_err(|e| format!("audio, accelerate: compiling: {e}"))?;
    let (d, t, c) = (audio.data(), Vector::from_elems(tw_host.to_vec()), check.clone());
    b.variant(
        "accelerate",
        move |slot| {
            fresh(slot, || -> accelerate::Result<Features> {
                let (m, zc) = table.run((&d.0, &d.1, &d.2, &t))?;
                Ok(features_of_table(&m, &zc))
            })
        },
        move |f| c(f),
    );
    type Kernel = fn(&Audio, &[f32]) -> Features;
    let kernels: [(&str, Kernel); 3] = [
        ("rust-seq", features_ref),
        ("rust-rayon", features_rayon),
        ("rust-rayon-table", features_rayon_table),
    ];
    for (name, kernel) in kernels {
        let (a, t, c) = (audio.clone(), tw_host.clone(), check.clone());
        b.variant(name, move |slot| fresh(slot, || Ok::<_, String>(kernel(&a, &t))), move |f| c(f));
    }
    // the Python peers (`crate::peers`): the signal, the windows and the
    // twiddle table, and `decode`'s result
    peers::add(
        &mut b,
        &["numpy", "numba", "jax"],
        &[
            ("signal.bin", peers::bytes(&audio.signal)),
            ("starts.bin", peers::bytes(&audio.starts)),
            ("lengths.bin", peers::bytes(&audio.lengths)),
            ("twiddles.bin", peers::bytes(&tw_host)),
        ],
        &[n.to_string(), windows.to_string(), BINS.to_string()],
        decode,
        move |f: &Features| check(f),
    )?;
    Ok(b)
}

/// A peer's result: the number of windows (one `i64`), then the
/// magnitudes (`BINS` f32s a window), the zero crossings (i32s), the
/// fluxes (f32s), and the onsets (the rest, i64s).
fn decode(raw: Vec<u8>) -> Features {
    let (head, rest) = peers::take::<i64>(&raw, Some(1));
    let windows = head.first().map_or(0, |&w| w.max(0) as usize);
    let (magnitudes, rest) = peers::take::<f32>(rest, Some(windows.saturating_mul(BINS)));
    let (zero_crossings, rest) = peers::take::<i32>(rest, Some(windows));
    let (flux, rest) = peers::take::<f32>(rest, Some(windows));
    let onsets = peers::take::<i64>(rest, None).0.into_iter().map(|o| o as usize).collect();
    Features { magnitudes, zero_crossings, flux, onsets }
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(window_program, config))
}

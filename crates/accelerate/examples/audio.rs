//! The audio processor (the sequences thesis §3.2.2 and §7.2): sliding
//! windows of irregular size over a long signal, streamed through
//! Accelerate and post-processed in Rust as the windows arrive.
//!
//! ```sh
//! cargo run --release --example audio -- --check                 # compare with plain Rust
//! cargo run --release --example audio -- --seconds 120 --chunk 64
//! ```
//!
//! `zc_core = post_processing . zc_stream . pre_processing`, as in the
//! thesis: pre-processing (plain Rust) chooses windows of 256 to 2048
//! samples by the signal's local zero-crossing rate and energy; the stream
//! (`accelerate_programs::audio::zc_stream`: `produce` of the window
//! indices, `map_seq` of `process_window`, a Hann-windowed spectrum of 64
//! bins and the zero crossings of each window) is consumed by
//! `stream_out`, whose reader computes each window's spectral flux and
//! picks onsets while the sequence computes the next chunk (pipeline
//! parallelism). The flat form ("regular Accelerate", one compiled
//! program run once per window) is timed beside it.
//!
//! With `--check`, every window's magnitudes, zero crossings and flux are
//! compared with plain Rust's (`window_ref`, the same operations in the
//! same order) within the tolerance derived at
//! `audio::magnitude_tolerances` (Note [Audio tolerance]); the zero
//! crossings must be equal. A mismatch exits with status 1.

use accelerate::prelude::*;
use accelerate::{stream_out_with, SeqOptions};
use accelerate_programs::audio::{
    check_features, features_ref, signal, twiddles, window_program, zc_stream_of, Audio, Features,
    PostProcessor, SAMPLE_RATE,
};
use accelerate_programs::rng::SEED_A;
use std::process::exit;
use std::time::{Duration, Instant};

struct Args {
    seconds: f64,
    chunk: Option<usize>,
    check: bool,
}

fn usage() -> ! {
    eprintln!("usage: audio [--check] [--seconds S] [--chunk K]");
    exit(2)
}

fn parse_args() -> Args {
    let mut args = Args { seconds: 30.0, chunk: None, check: false };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => args.check = true,
            "--seconds" => args.seconds = it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage()),
            "--chunk" => args.chunk = Some(it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage())),
            "--help" | "-h" => usage(),
            _ => {
                eprintln!("audio: unknown argument {a:?}");
                usage()
            }
        }
    }
    if args.seconds.is_nan() || args.seconds <= 0.0 || args.chunk == Some(0) {
        eprintln!("audio: the signal needs a positive length and a chunk at least one window");
        usage()
    }
    args
}

fn rate(windows: usize, d: Duration) -> String {
    format!("{:>8.2} ms, {:>9.0} windows/s", d.as_secs_f64() * 1e3, windows as f64 / d.as_secs_f64())
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { seconds, chunk, check } = parse_args();
    let n = (seconds * SAMPLE_RATE) as usize;

    // pre-processing
    let t = Instant::now();
    let audio = Audio::new(signal(n, SEED_A));
    let t_pre = t.elapsed();
    let windows = audio.windows();
    let (lo, hi) = (audio.lengths.iter().min().copied(), audio.lengths.iter().max().copied());
    let mean = audio.lengths.iter().sum::<i64>() as f64 / windows.max(1) as f64;
    println!(
        "audio: {n} samples ({seconds} s at {SAMPLE_RATE} Hz), {windows} windows of {}..{} samples \
         (mean {mean:.0}), pre-processing {:.2} ms",
        lo.unwrap_or(0),
        hi.unwrap_or(0),
        t_pre.as_secs_f64() * 1e3
    );
    let data = audio.data();
    let tw = Vector::from_elems(twiddles());
    let mut config = Config::from_env()?;
    if chunk.is_some() {
        config = config.clone().with_seq(SeqOptions { chunk, ..config.seq });
    }

    // the sequence: stream_out, post-processed as the windows arrive (a
    // first run compiles the kernels; the second is timed)
    let run_sequence = || -> accelerate::Result<Features> {
        let mut post = PostProcessor::new();
        for e in stream_out_with(&zc_stream_of(&data, &tw), &config)? {
            let (magnitudes, zero_crossings) = e?;
            post.push(&magnitudes.to_vec(), zero_crossings.value());
        }
        Ok(post.finish())
    };
    let t = Instant::now();
    run_sequence()?;
    let t_first = t.elapsed();
    let t = Instant::now();
    let by_sequence = run_sequence()?;
    let t_seq = t.elapsed();

    // the flat form: one program, run once per window
    let t = Instant::now();
    let prog = accelerate::compile_with(window_program, config.clone())?;
    let t_compile = t.elapsed();
    let t = Instant::now();
    let mut post = PostProcessor::new();
    for w in 0..windows {
        let (magnitudes, zero_crossings) = prog.run((&data, &tw, &Scalar::scalar(w as i64)))?;
        post.push(&magnitudes.to_vec(), zero_crossings.value());
    }
    let by_window = post.finish();
    let t_window = t.elapsed();

    println!(
        "  sequence (stream_out)    {}  (first run, compiling: {:.2} ms)",
        rate(windows, t_seq),
        t_first.as_secs_f64() * 1e3
    );
    println!(
        "  per window (flat)        {}  (compile: {:.2} ms)",
        rate(windows, t_window),
        t_compile.as_secs_f64() * 1e3
    );
    println!(
        "  onsets found: {} (sequence), {} (per window)",
        by_sequence.onsets.len(),
        by_window.onsets.len()
    );

    if check {
        let t = Instant::now();
        let want = features_ref(&audio, &twiddles());
        let t_ref = t.elapsed();
        println!("  plain Rust               {}", rate(windows, t_ref));
        let mut failed = false;
        for (what, got) in [("sequence", &by_sequence), ("per window", &by_window)] {
            match check_features(&audio, got, &want) {
                Ok(()) => {
                    let identical = got
                        .magnitudes
                        .iter()
                        .zip(&want.magnitudes)
                        .filter(|(g, w)| g.to_bits() == w.to_bits())
                        .count();
                    println!(
                        "check {what}: every window's magnitudes, zero crossings and flux agree with plain Rust \
                         ({identical} of {} magnitudes bit-identical; onsets {} here, {} in plain Rust)",
                        want.magnitudes.len(),
                        got.onsets.len(),
                        want.onsets.len()
                    );
                }
                Err(e) => {
                    eprintln!("check {what}: MISMATCH: {e}");
                    failed = true;
                }
            }
        }
        if failed {
            exit(1);
        }
    }
    Ok(())
}

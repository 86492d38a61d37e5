//! Every variant of every benchmark, at a tiny size, agrees with the
//! sequential reference within the benchmark's tolerance: the check the
//! runner makes before timing, run here for all of them so that the
//! harness itself is tested. No timings are asserted.

use accelerate_bench::harness::{check_all, Size};
use accelerate_bench::programs;

/// Builds the benchmark (compiling its programs), checks that a program
/// with an Accelerate version has ours, its ablations and both Rust
/// versions, and checks every variant's result.
///
/// Each program is compiled by one test only, so that no two test threads
/// compile the same program at once (before aaf8eb4 the kernel cache gave
/// such compilations one temporary file, and a cold cache failed now and
/// then).
fn check(name: &str) {
    let b = programs::find(name).expect("a benchmark of that name");
    let want: &[&str] = if b.compile.is_some() {
        &[
            "accelerate",
            "accelerate-no-fusion",
            "accelerate-no-ilp",
            "accelerate-no-sharing",
            "rust-seq",
            "rust-rayon",
        ]
    } else {
        &[]
    };
    check_variants(name, want);
}

/// `check` of a benchmark whose variants are `want` (and maybe others).
fn check_variants(name: &str, want: &[&str]) {
    let b = programs::find(name).expect("a benchmark of that name");
    let mut bench = (b.bench)(Size::Tiny).unwrap_or_else(|e| panic!("building {name}: {e}"));
    let names: Vec<&str> = bench.variants.iter().map(|v| v.name).collect();
    for want in want {
        assert!(names.contains(want), "{name} lacks {want}: {names:?}");
    }
    check_all(&mut bench).unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn triad_variants_match_reference() {
    check("triad");
}

#[test]
fn dotp_variants_match_reference() {
    check("dotp");
}

#[test]
fn moments_variants_match_reference() {
    check("moments");
}

#[test]
fn saxpy_variants_match_reference() {
    check("saxpy");
}

#[test]
fn blackscholes_variants_match_reference() {
    check("blackscholes");
}

#[test]
fn mandelbrot_variants_match_reference() {
    check("mandelbrot");
}

#[test]
fn nbody_variants_match_reference() {
    check("nbody");
}

#[test]
fn smvm_variants_match_reference() {
    check("smvm");
}

#[test]
fn pagerank_variants_match_reference() {
    check("pagerank");
}

#[test]
fn matvec_variants_match_reference() {
    check("matvec");
}

#[test]
fn rowsolve_variants_match_reference() {
    check("rowsolve");
}

#[test]
fn kmeans_variants_match_reference() {
    check("kmeans");
}

#[test]
fn softmax_variants_match_reference() {
    check("softmax");
}

#[test]
fn matmul_variants_match_reference() {
    check("matmul");
}

#[test]
fn distances_variants_match_reference() {
    check("distances");
}

#[test]
fn histogram_variants_match_reference() {
    check("histogram");
}

#[test]
fn filter_variants_match_reference() {
    check("filter");
}

#[test]
fn scan_variants_match_reference() {
    check("scan");
}

#[test]
fn radixsort_variants_match_reference() {
    check("radixsort");
}

#[test]
fn segsum_variants_match_reference() {
    check("segsum");
}

#[test]
fn stencil_variants_match_reference() {
    check("stencil");
}

#[test]
fn floyd_variants_match_reference() {
    check("floyd");
}

#[test]
fn stream_variants_match_reference() {
    check("stream");
}

#[test]
fn audio_variants_match_reference() {
    // the thesis' baseline is one flat program run per window; there is
    // no one program over all the windows to ablate
    check_variants("audio", &["accelerate-seq", "accelerate-per-window", "rust-seq", "rust-rayon"]);
}

#[test]
fn md5_variants_match_reference() {
    // no `accelerate-no-sharing`: without sharing recovery the 64 steps'
    // terms are written out in full, each step's twice over, exponential
    // in the steps
    check_variants(
        "md5",
        &[
            "accelerate",
            "accelerate-no-fusion",
            "accelerate-no-ilp",
            "accelerate-seq",
            "rust-seq",
            "rust-rayon",
        ],
    );
}

#[test]
fn every_benchmark_is_tested_here() {
    let tested = [
        "triad",
        "dotp",
        "saxpy",
        "blackscholes",
        "mandelbrot",
        "nbody",
        "smvm",
        "pagerank",
        "matvec",
        "rowsolve",
        "kmeans",
        "softmax",
        "matmul",
        "distances",
        "histogram",
        "filter",
        "scan",
        "radixsort",
        "segsum",
        "stencil",
        "floyd",
        "stream",
        "audio",
        "md5",
        "moments",
    ];
    for b in programs::ALL {
        assert!(tested.contains(&b.name), "add a test for {}", b.name);
    }
}

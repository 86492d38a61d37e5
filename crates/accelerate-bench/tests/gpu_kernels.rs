//! The hand-written CUDA baselines of the GPU benchmarks (`src/gpu/kernels.cu`)
//! compile with NVRTC for sm_80 and sm_90, so that a broken baseline shows
//! in CI, where there is no GPU to run them. Skipped, saying so, without
//! NVRTC, unless `ACCELERATE_REQUIRE_NVRTC` is set (as CI sets it).

#![cfg(feature = "cuda")]

#[test]
fn hand_written_kernels_compile_for_sm_80_and_sm_90() {
    if let Some(why) = accelerate::backend::cuda::nvrtc_unavailable() {
        assert!(
            std::env::var_os("ACCELERATE_REQUIRE_NVRTC").is_none(),
            "NVRTC required but unavailable: {why}"
        );
        eprintln!("skipped: {why}");
        return;
    }
    for arch in ["sm_80", "sm_90"] {
        let ptx = accelerate::backend::cuda::compile_ptx(accelerate_bench::gpu::KERNELS, arch)
            .unwrap_or_else(|e| panic!("{arch}: {e}"));
        for k in [
            "saxpy4",
            "dotp_part",
            "dotp_final",
            "blackscholes",
            "nbody_step",
            "scan_reduce",
            "scan_tiles",
            "scan_down",
        ] {
            assert!(ptx.contains(&format!(".entry {k}(")), "{arch}: no kernel {k} in the PTX");
        }
    }
}

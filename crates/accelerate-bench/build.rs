//! Compiles the hand-written C baselines (`c/`) with OpenMP.
//!
//! The flags are the ones a performance engineer would pick to find this
//! machine's practical limit, not the Accelerate backend's flags:
//!
//! - `-O3 -march=native`: vectorised for this machine's vector unit (the
//!   binary is meant to run where it was built, like the backend's
//!   run-time compiled kernels, which use `-march=native` too);
//! - `-fopenmp`: the parallel loops and `#pragma omp simd`;
//! - `-fno-math-errno` for the streaming loops (they call no math
//!   functions, so it only states that errno is never wanted);
//! - `-ffast-math` for Black-Scholes only, so that glibc's libmvec gives
//!   vectorised `expf`/`logf` (`c/blackscholes.c` explains why; its results
//!   are checked against the Rust reference before every timing).
//!
//! The objects link against `libgomp`, `libmvec` and `libm`. Nothing is
//! downloaded: the system C compiler (`$CC`, else `cc`) does the work.

fn main() {
    println!("cargo:rerun-if-changed=c/streaming.c");
    println!("cargo:rerun-if-changed=c/blackscholes.c");

    let base = || {
        let mut b = cc::Build::new();
        b.opt_level(3).flag("-march=native").flag("-fopenmp").flag("-std=gnu11").warnings(true);
        b
    };
    base().file("c/streaming.c").flag("-fno-math-errno").compile("bench_streaming");
    base().file("c/blackscholes.c").flag("-ffast-math").compile("bench_blackscholes");

    // after the static libraries, which use them
    println!("cargo:rustc-link-lib=dylib=gomp");
    println!("cargo:rustc-link-lib=dylib=mvec");
    println!("cargo:rustc-link-lib=dylib=m");
}

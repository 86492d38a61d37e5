//! Kernel objects are unloaded once no program holds them and they are
//! not among the recently used (Note [The in-memory cache] in
//! `accelerate-backend/src/cache.rs`): a process that compiles many
//! programs keeps a bounded number of memory maps. The only test of its
//! binary, so that nothing else maps or unmaps objects meanwhile.
//!
//! Skipped, saying so, when the machine has no C compiler.

use accelerate::prelude::*;
use accelerate::{compile_with, Backend};

/// The memory maps of this process.
fn maps() -> usize {
    std::fs::read_to_string("/proc/self/maps").map(|m| m.lines().count()).unwrap_or(0)
}

/// Program `k`: `k + 1` chained maps (one fused kernel, its source
/// different for each `k`), compiled, run, checked and dropped.
fn program(k: usize) {
    let f = move |xs: Acc<Vector<i64>>| (0..=k).fold(xs, |a, _| a.map(|x| x * 3i64 + 1i64));
    let p = compile_with(f, Config::default().with_backend(Backend::Cpu)).unwrap();
    let got = p.run(&Vector::from_elems(vec![0i64, 1])).unwrap().to_vec();
    let want: Vec<i64> =
        [0i64, 1].iter().map(|&x| (0..=k).fold(x, |a, _| a.wrapping_mul(3).wrapping_add(1))).collect();
    assert_eq!(got, want, "program {k}");
}

#[test]
fn compiling_many_programs_keeps_the_memory_maps_bounded() {
    if let Some(why) = accelerate::backend::cpu::unavailable() {
        eprintln!("skipped: the CPU backend is unavailable here: {why}");
        return;
    }
    // past the recent ones the cache keeps (16): the steady state
    for k in 0..24 {
        program(k);
    }
    let before = maps();
    for k in 24..84 {
        program(k);
    }
    let after = maps();
    // unbounded, 60 more objects would add about 5 maps each (300); the
    // allowance is for the allocator's and the thread pool's own maps
    eprintln!("{before} maps after 24 programs, {after} after 60 more");
    assert!(after <= before + 20, "{before} maps after 24 programs, {after} after 60 more");
}

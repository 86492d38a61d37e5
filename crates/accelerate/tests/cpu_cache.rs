//! The CPU backend's kernel cache (Note [The kernel cache] in
//! `backend/cpu/compile.rs`), within one process and across processes.
//!
//! Each cross-process scenario runs this test binary again as a child
//! (`child`), with a cache directory of its own and `CC` set to a wrapper
//! script that logs every invocation of the real compiler, so that the
//! test sees whether a process compiled or loaded from the disk. This file
//! holds a single test, so that the process-wide compilation counter
//! (`accelerate::backend::cpu::compilations`) sees no other test's work.
//!
//! The second test, of the kernels kept in memory once written (Note
//! [Kernels written once] in `backend/c/codegen.rs`), runs its body in a
//! child of its own for the same reason.
//!
//! Skipped, saying so, when the machine has no C compiler.

mod common;

use accelerate::prelude::*;
use accelerate::{compile_with, run_with, Backend};
use common::compilations;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Set in a child process: the role it plays.
const ROLE: &str = "ACCELERATE_CACHE_TEST_ROLE";

fn cpu() -> Config {
    Config::default().with_backend(Backend::Cpu)
}

/// The program every child compiles and runs: a map whose constants are
/// hoisted and embedded, and a fold.
fn program(xs: Acc<Vector<i64>>) -> Acc<Scalar<i64>> {
    xs.map(|x| x * 1_234_567i64 + 89i64).fold(0i64, |a, b| a + b)
}

fn expected(n: i64) -> i64 {
    (0..n).map(|x| x.wrapping_mul(1_234_567).wrapping_add(89)).fold(0i64, i64::wrapping_add)
}

/// A child: compiles and runs `program`, checks its result, and reports
/// how many times it ran the compiler.
fn child() {
    let p = compile_with(program, cpu()).expect("the program compiles");
    let xs = Vector::from_elems((0..100_000i64).collect());
    assert_eq!(p.run(&xs).expect("the program runs").value(), expected(100_000));
    println!("compilations={}", accelerate::backend::cpu::compilations());
}

#[test]
fn the_kernel_cache_serves_processes_and_rebuilds_corrupt_entries() {
    match std::env::var(ROLE).as_deref() {
        Ok("child") => return child(),
        Ok("in-process") => return in_process(),
        _ => {}
    }
    if let Some(why) = accelerate::backend::cpu::unavailable() {
        eprintln!("skipped: the CPU backend is unavailable here: {why}");
        return;
    }
    across_processes();
}

/// Within one process (a child with an empty cache of its own, so that no
/// earlier run has the kernels on disk): a second compile of the same
/// program, and programs differing only in their hoisted literals, reuse
/// the loaded kernels.
fn in_process() {
    let f = |xs: Acc<Vector<i64>>| xs.map(|x| x * 7_654_321i64 - 3i64).fold(0i64, |a, b| a + b);
    let p = compile_with(f, cpu()).unwrap();
    let before = accelerate::backend::cpu::compilations();
    let q = compile_with(f, cpu()).unwrap();
    assert_eq!(
        accelerate::backend::cpu::compilations(),
        before,
        "the second compile found the kernels cached"
    );
    let xs = Vector::from_elems((0..1000i64).collect());
    assert_eq!(p.run(&xs).unwrap().to_vec(), q.run(&xs).unwrap().to_vec());

    // Note [Hoisted literals]: one compilation serves every constant
    let data: Vec<f32> = (0..5000).map(|i| i as f32 * 0.25 - 300.0).collect();
    let before = accelerate::backend::cpu::compilations();
    for c in [0.319_381_53f32, -1.821_256e-7, 3.75, 1.0e30] {
        let xs = Vector::from_elems(data.clone());
        let got = run_with(&use_array(xs).map(move |x| x * c + 0.5), &cpu()).unwrap();
        let want: Vec<u32> = data.iter().map(|x| (x * c + 0.5).to_bits()).collect();
        assert_eq!(got.to_vec().iter().map(|x| x.to_bits()).collect::<Vec<_>>(), want, "constant {c}");
    }
    assert_eq!(accelerate::backend::cpu::compilations() - before, 1, "one compilation for four constants");
}

/// Across processes sharing one cache directory.
fn across_processes() {
    let dir = std::env::temp_dir().join(format!("accelerate-cache-test-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let cc = wrapper(&dir);

    let real = PathBuf::from(real_cc());
    check_child(&spawn(&real, &dir.join("in-process"), "in-process").wait_with_output().unwrap());

    // a first process compiles, a second one loads from the disk
    let cache = dir.join("cache");
    assert_eq!(compilations(&run_child(&cc, &cache)), 1, "the first process compiles");
    let log = dir.join("cc.log");
    let compiles =
        || std::fs::read_to_string(&log).unwrap_or_default().lines().filter(|l| l.contains("-o")).count();
    assert_eq!(compiles(), 1);
    assert_eq!(compilations(&run_child(&cc, &cache)), 0, "the second process loads from the cache");
    assert_eq!(compiles(), 1, "the second process did not run the compiler");

    // a truncated object and a corrupted one are each rebuilt, not loaded
    for damage in [truncate as fn(&Path), flip_a_byte] {
        for entry in std::fs::read_dir(&cache).unwrap() {
            let path = entry.unwrap().path();
            if path.extension().is_some_and(|e| e == "so") {
                damage(&path);
            }
        }
        assert_eq!(compilations(&run_child(&cc, &cache)), 1, "a damaged entry is rebuilt");
        assert_eq!(compilations(&run_child(&cc, &cache)), 0, "the rebuilt entry is used");
    }

    // two processes filling one empty cache at once both succeed
    let shared = dir.join("shared");
    let children: Vec<_> = (0..2).map(|_| spawn_child(&cc, &shared)).collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        check_child(&out);
    }
    assert_eq!(compilations(&run_child(&cc, &shared)), 0, "their entry is complete");
    let _ = std::fs::remove_dir_all(&dir);
}

/// The C compiler the backend would run (`$CC`, else `cc`).
fn real_cc() -> String {
    std::env::var("CC").ok().filter(|c| !c.is_empty()).unwrap_or_else(|| "cc".into())
}

/// A compiler wrapper that logs its arguments to `cc.log` next to it.
fn wrapper(dir: &Path) -> PathBuf {
    let real = real_cc();
    let path = dir.join("cc-logged");
    let log = dir.join("cc.log");
    std::fs::write(&path, format!("#!/bin/sh\necho \"$*\" >> '{}'\nexec {real} \"$@\"\n", log.display()))
        .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

fn spawn_child(cc: &Path, cache: &Path) -> std::process::Child {
    spawn(cc, cache, "child")
}

/// This test binary again, in `role`, with its own compiler and cache.
fn spawn(cc: &Path, cache: &Path, role: &str) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "the_kernel_cache_serves_processes_and_rebuilds_corrupt_entries", "--nocapture"])
        .env(ROLE, role)
        .env("CC", cc)
        .env("ACCELERATE_CACHE_DIR", cache)
        .env_remove("ACCELERATE_CACHE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

fn run_child(cc: &Path, cache: &Path) -> Output {
    let out = spawn_child(cc, cache).wait_with_output().unwrap();
    check_child(&out);
    out
}

fn check_child(out: &Output) {
    assert!(
        out.status.success(),
        "child failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn truncate(path: &Path) {
    let len = std::fs::metadata(path).unwrap().len();
    std::fs::OpenOptions::new().write(true).open(path).unwrap().set_len(len / 2).unwrap();
}

fn flip_a_byte(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x5a;
    std::fs::write(path, bytes).unwrap();
}

// ---------------------------------------------------------------------------
// Kernels written once (Note [Kernels written once])

/// `xs * k + 1`, summed: `k` is part of the kernel.
fn scaled_sum(xs: &Vector<i64>, k: i64) -> Acc<Scalar<i64>> {
    use_array(xs.clone()).map(move |x| x * k + 1i64).fold(0i64, |a, b| a + b)
}

/// A map to a NaN of payload `bits`.
fn nans(bits: u32) -> Acc<Vector<f32>> {
    use_array(Vector::from_elems(vec![0.0f32; 4])).map(move |_| constant(f32::from_bits(bits)))
}

/// In a child: a program built again writes no kernel and computes what
/// it did; one that differs in a constant is written anew and computes
/// with its own constant; a kernel holding a NaN, whose payload its key
/// would not show, is written every time, and keeps its payload.
fn kernels_written_once() {
    use accelerate::backend::cpu::kernels_written;
    let xs = Vector::from_elems((0..1000i64).collect());
    let want = |k: i64| (0..1000i64).map(|x| x * k + 1).sum::<i64>();
    let start = kernels_written();
    let first = run_with(&scaled_sum(&xs, 3), &cpu()).expect("runs");
    let one = kernels_written() - start;
    assert!(one >= 1, "the first build writes its kernels");
    let again = run_with(&scaled_sum(&xs, 3), &cpu()).expect("runs");
    assert_eq!(kernels_written() - start, one, "the same program built again writes nothing");
    assert_eq!((first.value(), again.value()), (want(3), want(3)));
    let other = run_with(&scaled_sum(&xs, 5), &cpu()).expect("runs");
    assert_eq!(kernels_written() - start, 2 * one, "another constant is another kernel");
    assert_eq!(other.value(), want(5));
    for bits in [0x7fc0_0001u32, 0x7fc0_0002, 0x7fc0_0001] {
        let before = kernels_written();
        let got = run_with(&nans(bits), &cpu()).expect("runs");
        assert!(kernels_written() > before, "a kernel with a NaN is written anew");
        assert!(got.to_vec().iter().all(|x| x.to_bits() == bits), "payload {bits:#x}: {:?}", got.to_vec());
    }
}

#[test]
fn a_program_built_again_takes_its_kernels_from_memory() {
    const ONCE: &str = "ACCELERATE_WRITTEN_ONCE_TEST";
    if std::env::var_os(ONCE).is_some() {
        return kernels_written_once();
    }
    if let Some(why) = accelerate::backend::cpu::unavailable() {
        eprintln!("skipped: the CPU backend is unavailable here: {why}");
        return;
    }
    common::in_child(ONCE, "a_program_built_again_takes_its_kernels_from_memory");
}

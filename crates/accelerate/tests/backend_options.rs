//! Each backend's options travel in `Config` (`Config::cpu`, `Config::cuda`):
//! two programs with different options run side by side in one process,
//! each with its own.

use accelerate::backend::CacheDir;
use accelerate::prelude::*;
use accelerate::{compile_with, Backend, Config, CpuOptions};
use std::path::Path;

/// The kernel cache entries (checksum files) in a folder.
fn entries(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok()).filter(|e| e.path().extension().is_some_and(|x| x == "sum")).count()
        })
        .unwrap_or(0)
}

/// A folder of this test's own under the target directory.
fn folder(name: &str) -> std::path::PathBuf {
    let d =
        Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!("backend-options-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

#[test]
fn two_programs_with_their_own_threads_and_caches_run_in_one_process() {
    if let Some(why) = accelerate::backend::cpu::unavailable() {
        eprintln!("skipped: the CPU backend is unavailable here: {why}");
        return;
    }
    let (one, two) = (folder("one"), folder("two"));
    let options = |threads: usize, dir: &Path| CpuOptions {
        threads,
        cache: CacheDir::At(dir.to_path_buf()),
        ..Config::default().cpu
    };
    let config = |o: CpuOptions| Config::default().with_backend(Backend::Cpu).with_cpu(o);
    // two different programs, so that neither finds the other's kernels in
    // memory
    let sum =
        compile_with(|xs: Acc<Vector<f32>>| xs.map(|x| x * 3.0).sum(), config(options(1, &one))).unwrap();
    let max = compile_with(
        |xs: Acc<Vector<f32>>| xs.map(|x| x - 1.0).fold(f32::MIN, |a, b| a.max(b)),
        config(options(2, &two)),
    )
    .unwrap();
    // integers whose sum stays below 2^24: exact in any grouping
    let xs = Vector::from_elems((0..10_000).map(|i| (i % 97) as f32).collect());
    std::thread::scope(|s| {
        let a = s.spawn(|| sum.run(&xs).unwrap().value());
        let b = s.spawn(|| max.run(&xs).unwrap().value());
        assert_eq!(a.join().unwrap(), xs.to_vec().iter().map(|x| x * 3.0).sum::<f32>());
        assert_eq!(b.join().unwrap(), 95.0);
    });
    // each program's kernels went to its own cache
    assert_eq!((entries(&one), entries(&two)), (1, 1));
    let _ = (std::fs::remove_dir_all(&one), std::fs::remove_dir_all(&two));
}

#[test]
fn a_program_runs_on_the_workers_its_options_ask_for() {
    if accelerate::backend::cpu::unavailable().is_some() {
        return;
    }
    for threads in [1, 3] {
        let o = CpuOptions { threads, ..Config::default().cpu };
        let p = accelerate::plan::schedule(
            compile_with(
                |xs: Acc<Vector<i64>>| xs.map(|x| x + 1),
                Config::default().with_backend(Backend::Interpreter),
            )
            .unwrap()
            .ir(),
        )
        .unwrap();
        let cpu = accelerate::backend::cpu::CpuProgram::new(&p, &o).unwrap();
        assert_eq!(cpu.workers(), threads);
    }
}

/// The C compiler setting is split as make splits `CC`: a program and the
/// arguments that go before every other. One that names no program, or a
/// program that is not there, is `Error::BackendUnavailable` saying which.
#[test]
fn a_compiler_setting_with_arguments_is_a_program_and_its_arguments() {
    if let Some(why) = accelerate::backend::cpu::unavailable() {
        eprintln!("skipped: the CPU backend is unavailable here: {why}");
        return;
    }
    let real = Config::default().cpu.cc;
    let with = |cc: String| {
        let o = CpuOptions { cc, ..Config::default().cpu };
        let xs = Vector::from_elems(vec![1i64, 2, 3]);
        accelerate::run_with(
            &use_array(xs).map(|x| x * 7i64 - 1i64),
            &Config::default().with_backend(Backend::Cpu).with_cpu(o),
        )
    };
    assert_eq!(with(format!("{real} -O1")).unwrap().to_vec(), vec![6, 13, 20], "CC=\"{real} -O1\"");
    match with("  ".into()) {
        Err(Error::BackendUnavailable { reason, .. }) => {
            assert!(reason.contains("names no program"), "{reason}")
        }
        other => panic!("expected BackendUnavailable, got {other:?}"),
    }
    match with("no-such-compiler-here -O1".into()) {
        Err(Error::BackendUnavailable { reason, .. }) => assert!(
            reason.contains("`no-such-compiler-here` (of CC=\"no-such-compiler-here -O1\")")
                && reason.contains("install one or set CC"),
            "{reason}"
        ),
        other => panic!("expected BackendUnavailable, got {other:?}"),
    }
}

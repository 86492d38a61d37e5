//! What the C and Python tests share: where Cargo put the library, its
//! header written to a private folder, the C program built against them,
//! and the inputs both programs make from the same formulas.

#![allow(dead_code)]

use accelerate::prelude::*;
use accelerate::Config;
use accelerate_programs::dotp::dotp;
use std::path::PathBuf;
use std::process::Command;

/// The elements of each input vector.
pub const N: usize = 1000;

pub struct Inputs {
    pub xs: Vec<f32>,
    pub ys: Vec<f32>,
    pub price: Vec<f32>,
    pub strike: Vec<f32>,
    pub years: Vec<f32>,
}

/// The inputs of `tests/c/accdemo_test.c` (and of the Python test), by
/// the same formulas; every value is exact in f32.
pub fn inputs() -> Inputs {
    let f = |g: &dyn Fn(usize) -> f32| (0..N).map(g).collect::<Vec<f32>>();
    Inputs {
        xs: f(&|i| (i % 17) as f32 * 0.25 - 2.0),
        ys: f(&|i| ((i * 7) % 13) as f32 * 0.5 - 3.0),
        price: f(&|i| 5.0 + (i % 26) as f32),
        strike: f(&|i| 1.0 + (i % 100) as f32),
        years: f(&|i| 0.25 + (i % 10) as f32 * 0.5),
    }
}

pub fn f32_bits(v: &[f32]) -> Vec<u32> {
    v.iter().map(|x| x.to_bits()).collect()
}

/// The folder of `libaccdemo.so`: Cargo builds the library's `cdylib`
/// next to this test's executable when it builds the test.
pub fn library_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("the test's executable");
    let dir = exe.parent().expect("its folder").to_path_buf();
    assert!(dir.join("libaccdemo.so").exists(), "no libaccdemo.so in {}", dir.display());
    dir
}

/// A private folder (made by `tempfile`, readable by this user only)
/// holding `accdemo.h` and `accdemo.json`.
pub fn header_dir() -> tempfile::TempDir {
    let dir = tempfile::Builder::new().prefix("accdemo-test").tempdir().expect("a temporary folder");
    let m = accdemo::manifest();
    std::fs::write(dir.path().join("accdemo.h"), m.header()).unwrap();
    std::fs::write(dir.path().join("accdemo.json"), m.json()).unwrap();
    dir
}

/// A command running the C program with this test's library (Cargo's
/// `LD_LIBRARY_PATH` may name an older build's folder first).
pub fn c_command(exe: &std::path::Path) -> Command {
    let mut c = Command::new(exe);
    c.env("LD_LIBRARY_PATH", library_dir());
    c
}

/// `tests/c/accdemo_test.c` built by the C compiler (`CC`, else `cc`)
/// with every warning an error, against the header and the library; or
/// `None`, saying why, where there is no C compiler.
pub fn build_c_program() -> Option<(PathBuf, tempfile::TempDir)> {
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".into());
    if Command::new(&cc).arg("--version").output().is_err() {
        eprintln!("skipped: no C compiler ({cc})");
        return None;
    }
    let dir = header_dir();
    let lib = library_dir();
    let exe = dir.path().join("accdemo_test");
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/c/accdemo_test.c");
    let out = Command::new(&cc)
        .args(["-std=c11", "-O1", "-Wall", "-Wextra", "-Werror", "-D_POSIX_C_SOURCE=199309L", "-o"])
        .arg(&exe)
        .arg(&src)
        .arg("-I")
        .arg(dir.path())
        .arg("-L")
        .arg(&lib)
        .arg(format!("-Wl,-rpath,{}", lib.display()))
        .arg("-laccdemo")
        .output()
        .expect("running the C compiler");
    assert!(out.status.success(), "building the C program:\n{}", String::from_utf8_lossy(&out.stderr));
    Some((exe, dir))
}

/// Checks the results a program printed (lines `name n bits...`, in the
/// format of `tests/c/accdemo_test.c`) against the same programs run from
/// Rust with the environment's configuration: bit for bit, since both
/// run the same plan on the same backend with the same workers.
pub fn check_results(stdout: &str) {
    let line = |name: &str| -> Vec<u32> {
        let l =
            stdout.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or_else(|| panic!("{stdout}"));
        let mut words = l.split_whitespace().skip(1);
        let n: usize = words.next().unwrap().parse().unwrap();
        let v: Vec<u32> = words.map(|w| u32::from_str_radix(w, 16).unwrap()).collect();
        assert_eq!(v.len(), n, "{l}");
        v
    };

    // the same programs from Rust
    let config = Config::from_env().unwrap();
    let i = inputs();
    let vec = |v: &[f32]| Array::from_vec(dim1(v.len()), v.to_vec()).unwrap();
    let d = accelerate::compile_with(|x: Acc<Vector<f32>>, y: Acc<Vector<f32>>| dotp(&x, &y), config.clone())
        .unwrap()
        .run((&vec(&i.xs), &vec(&i.ys)))
        .unwrap();
    assert_eq!(line("dotp"), f32_bits(&d.to_vec()));
    let dxx =
        accelerate::compile_with(|x: Acc<Vector<f32>>, y: Acc<Vector<f32>>| dotp(&x, &y), config.clone())
            .unwrap()
            .run((&vec(&i.xs), &vec(&i.xs)))
            .unwrap();
    assert_eq!(line("dotp-xx"), f32_bits(&dxx.to_vec()));
    let bs = accelerate::compile_with(
        |p: Acc<Vector<f32>>, k: Acc<Vector<f32>>, t: Acc<Vector<f32>>| {
            lift_acc(accdemo::black_scholes_split(&p, &k, &t))
        },
        config.clone(),
    )
    .unwrap()
    .run((&vec(&i.price), &vec(&i.strike), &vec(&i.years)))
    .unwrap();
    assert_eq!(line("call"), f32_bits(&bs.0.to_vec()));
    assert_eq!(line("put"), f32_bits(&bs.1.to_vec()));
    let h = accelerate::compile_with(
        |x: Acc<Vector<f32>>, l: Acc<Scalar<f32>>| accdemo::halve_until(&x, &l),
        config.clone(),
    )
    .unwrap()
    .run((&vec(&i.price[..10]), &Array::from_vec(Z, vec![10.0f32]).unwrap()))
    .unwrap();
    assert_eq!(line("halve_until"), f32_bits(&h.to_vec()));
    // and the loop ran: the sum is at most the limit, and was not before
    assert!(h.to_vec().iter().sum::<f32>() <= 10.0 && i.price[..10].iter().sum::<f32>() > 10.0);
}

/// What a program printed for bad call `what` (its line `bad WHAT ...`,
/// without that prefix).
pub fn bad_call(stdout: &str, what: &str) -> String {
    let prefix = format!("bad {what} ");
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {what}: {stdout}"))
        .into()
}

/// Checks that bad call `what` gave status `code` and a message
/// containing `message`.
pub fn expect_bad(stdout: &str, what: &str, code: &str, message: &str) {
    let b = bad_call(stdout, what);
    assert!(b.starts_with(&format!("{code} ")), "{what}: {b}");
    assert!(b.contains(message), "{what}: {b}");
}

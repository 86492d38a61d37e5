//! The exported library from Python: `tests/python/accdemo_test.py`
//! loads `libaccdemo.so` with ctypes through the manifest-driven binding
//! `tests/python/accelerate_ffi.py`, runs dotp, Black-Scholes and the
//! `awhile` program on NumPy arrays, and makes bad calls; the results
//! must equal the Rust ones bit for bit, and each bad call must raise an
//! error with the library's status code and message.
//!
//! Python with NumPy comes from `ACCELERATE_PYTHON` (`.ci/python-numpy.sh`
//! makes one and prints the setting); without it the test says it is
//! skipped, unless `ACCELERATE_REQUIRE_PYTHON=1` (CI) makes that a failure.

mod common;

use common::{check_results, expect_bad, library_dir};
use std::path::PathBuf;
use std::process::Command;

/// A Python that imports NumPy, or `None` (saying why) where the test
/// may be skipped.
fn python() -> Option<String> {
    let required = std::env::var("ACCELERATE_REQUIRE_PYTHON").is_ok_and(|v| v == "1");
    let why = match std::env::var("ACCELERATE_PYTHON") {
        Ok(py) => match Command::new(&py).args(["-c", "import numpy"]).output() {
            Ok(o) if o.status.success() => return Some(py),
            Ok(o) => format!("{py} cannot import numpy: {}", String::from_utf8_lossy(&o.stderr)),
            Err(e) => format!("{py} does not run: {e}"),
        },
        Err(_) => "ACCELERATE_PYTHON is not set (eval \"$(bash .ci/python-numpy.sh)\" sets it)".into(),
    };
    assert!(!required, "ACCELERATE_REQUIRE_PYTHON=1, but {why}");
    eprintln!("skipped: {why}");
    None
}

#[test]
fn python_with_numpy_gets_the_results_of_rust_and_errors_for_bad_calls() {
    let Some(py) = python() else { return };
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/python/accdemo_test.py");
    let out = Command::new(&py)
        .arg(&script)
        .arg(library_dir().join("libaccdemo.so"))
        .output()
        .expect("running Python");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(out.status.success(), "the Python test failed:\n{}", String::from_utf8_lossy(&out.stderr));
    check_results(&stdout);
    let expect = |what: &str, code: &str, message: &str| expect_bad(&stdout, what, code, message);
    // refused by NumPy's safe casting before the library is called
    expect("wrong-dtype", "2", "argument ys of dotp: Cannot cast array data from dtype('float64')");
    expect("wrong-rank", "2", "argument ys of dotp: rank 0, where 1 is expected");
    expect("division-by-zero", "1", "integer division by zero");
    expect("made-up-handle", "2", "is not a live array of this context");
    expect("read-at-wrong-rank", "2", "the array is of f32, rank 2, but f32, rank 1 was asked for");
    expect("use-after-free", "2", "is not a live array of this context");
    expect("bad-option", "2", "threads=\"many\"");
    assert!(stdout.ends_with("done\n"), "{stdout}");
}

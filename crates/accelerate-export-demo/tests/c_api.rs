//! The exported library from C: `tests/c/accdemo_test.c`, built by the
//! system's C compiler against the generated header and `libaccdemo.so`,
//! runs dotp, Black-Scholes and a program with `awhile`; its results must
//! equal, bit for bit, the same programs run from Rust with the same
//! configuration (the environment's), and its bad calls (null, made-up,
//! freed handles, arrays of the wrong type or rank, a program error, bad
//! shapes and options) must each return an error code with a message.

mod common;

use common::{bad_call, build_c_program, c_command, check_results, expect_bad};

#[test]
fn a_c_program_gets_the_results_of_rust_and_errors_for_bad_calls() {
    let Some((exe, _dir)) = build_c_program() else { return };
    let out = c_command(&exe).output().expect("running the C program");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the C program failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_results(&stdout);

    // the bad calls: their status codes and messages
    let bad = |what: &str| bad_call(&stdout, what);
    let expect = |what: &str, code: &str, message: &str| expect_bad(&stdout, what, code, message);
    expect("null-context", "2", "the context is null");
    expect("null-array", "2", "argument ys (number 2) of dotp: the array is null");
    expect("null-results", "2", "the array of results is null");
    expect("made-up-array", "2", "is not a live array of this context");
    expect("wrong-type", "2", "argument ys (number 2) of dotp: an array of i64 rank 1");
    expect("wrong-rank", "2", "argument ys (number 2) of dotp: an array of f32 rank 0");
    expect("division-by-zero", "1", "integer division by zero");
    assert!(bad("division-by-zero").contains("lib.rs:"), "the program's line: {}", bad("division-by-zero"));
    expect("values-of-another-type", "2", "the array is of i64, rank 1, but f32, rank 1 was asked for");
    expect("free-twice-first", "0", "(null)");
    expect("free-twice-second", "2", "is not a live array of this context");
    expect("use-after-free", "2", "argument ys (number 2) of dotp: ");
    expect("negative-extent", "null", "a negative extent in the shape [-3]");
    expect("bad-type-code", "null", "99 is not an element type code");
    expect("null-data", "null", "the data of an array of shape [3] is null");
    expect("bool-not-0-or-1", "null", "must be 0 or 1");
    expect("bad-option", "null", "unknown backend \"nonsense\"");
    assert_eq!(bad("context-free-twice"), "0 2");
    assert_eq!(bad("dotp-after-context-free"), "2");
    assert!(stdout.ends_with("done\n"), "{stdout}");
}

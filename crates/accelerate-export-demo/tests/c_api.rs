//! The exported library from C: `tests/c/accdemo_test.c`, built by the
//! system's C compiler against the generated header and `libaccdemo.so`,
//! runs dotp, Black-Scholes and a program with `awhile`; its results must
//! equal, bit for bit, the same programs run from Rust with the same
//! configuration (the environment's), and its bad calls (null, made-up,
//! freed handles, arrays of the wrong type or rank, a program error, bad
//! shapes and options) must each return an error code with a message.

mod common;

use accelerate::prelude::*;
use accelerate::Config;
use accelerate_programs::dotp::dotp;
use common::{build_c_program, c_command, f32_bits, inputs, N};

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

    // the bad calls: their status codes and messages
    let bad = |what: &str| -> String {
        let prefix = format!("bad {what} ");
        stdout
            .lines()
            .find_map(|l| l.strip_prefix(&prefix))
            .unwrap_or_else(|| panic!("no {what}: {stdout}"))
            .into()
    };
    let expect = |what: &str, code: &str, message: &str| {
        let b = bad(what);
        assert!(b.starts_with(&format!("{code} ")), "{what}: {b}");
        assert!(b.contains(message), "{what}: {b}");
    };
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
    let _ = N;
}

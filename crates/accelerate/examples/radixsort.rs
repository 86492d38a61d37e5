//! Radix sort (ICFP'13 §5.8): sorts signed 32-bit integers with the
//! library's stable least-significant-digit radix sort: on the CPU
//! backend and the interpreter a native sort of eight bits a pass, on
//! other backends the sort written in the language, which follows
//! Blelloch's `split` (one bit per pass; each pass an exclusive scan of
//! the bit and a `permute` to the new positions). Note [A native sort].
//!
//! ```sh
//! cargo run --release --example radixsort -- --check             # compare with Rust's sort
//! cargo run --release --example radixsort -- --size 100000
//! ```
//!
//! Three programs, each converted once with `accelerate::compile`:
//!
//! - `keys.sort()`: random keys over the whole `i32` range (with
//!   `i32::MIN`, `i32::MAX`, 0 and -1 among them);
//! - `sort_by_key(keys, values)`: values reordered by their keys, keys
//!   drawn from a small range so that many are equal, which shows that the
//!   sort is stable (equal keys keep their order);
//! - `keys.sort_with_indices()`: the sorted keys and where each came from.
//!
//! Each is checked against Rust's stable `sort`/`sort_by_key`.

use accelerate::prelude::*;
use accelerate_programs::rng::{Rng, SEED_A};
use std::process::exit;
use std::time::Instant;

struct Args {
    size: usize,
    check: bool,
}

fn usage() -> ! {
    eprintln!("usage: radixsort [--check] [--size N]");
    exit(2)
}

fn parse_args() -> Args {
    let mut args = Args { size: 10_000, check: false };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => args.check = true,
            "--size" | "-n" => {
                args.size = it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage());
            }
            "--help" | "-h" => usage(),
            _ => {
                eprintln!("radixsort: unknown argument {a:?}");
                usage()
            }
        }
    }
    args
}

/// The number of positions that differ, with the first few printed.
fn compare<T: PartialEq + std::fmt::Debug>(what: &str, got: &[T], want: &[T]) -> usize {
    let mut bad = got.len().abs_diff(want.len());
    if bad > 0 {
        eprintln!("check {what}: MISMATCH: {} elements, Rust's sort gives {}", got.len(), want.len());
    }
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        if g != w {
            if bad < 10 {
                eprintln!("check {what}: MISMATCH at position {i}: got {g:?}, Rust's sort gives {w:?}");
            }
            bad += 1;
        }
    }
    if bad == 0 {
        println!("check {what}: all {} elements equal Rust's stable sort", want.len());
    }
    bad
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { size: n, check } = parse_args();
    let mut rng = Rng::new(SEED_A);
    let mut keys_host: Vec<i32> = (0..n).map(|_| (rng.next_u64() >> 32) as u32 as i32).collect();
    for (slot, k) in keys_host.iter_mut().step_by(97).zip([i32::MIN, i32::MAX, 0, -1].iter().cycle()) {
        *slot = *k;
    }
    // few distinct keys, so that stability shows
    let small_keys: Vec<i32> = (0..n).map(|_| (rng.next_u64() % 101) as i32 - 50).collect();
    let values: Vec<u32> = (0..n as u32).collect();

    let keys = Vector::from_elems(keys_host.clone());
    let small = Vector::from_elems(small_keys.clone());
    let vals = Vector::from_elems(values.clone());

    let t = Instant::now();
    let sort = accelerate::compile(|ks: Acc<Vector<i32>>| ks.sort())?;
    let by_key = accelerate::compile(|ks: Acc<Vector<i32>>, vs: Acc<Vector<u32>>| sort_by_key(ks, vs))?;
    let with_ix = accelerate::compile(|ks: Acc<Vector<i32>>| ks.sort_with_indices())?;
    let t_compile = t.elapsed();

    let t = Instant::now();
    let sorted = sort.run(&keys)?.to_vec();
    let t_sort = t.elapsed();
    let t = Instant::now();
    let reordered = by_key.run((&small, &vals))?.to_vec();
    let t_by_key = t.elapsed();
    let t = Instant::now();
    let with_indices = with_ix.run(&small)?.to_vec();
    let t_with_ix = t.elapsed();

    println!("radixsort: {n} i32 keys");
    println!("  accelerate::compile (all three)  {:>9.2} ms", ms(t_compile));
    println!("  sort                             {:>9.2} ms", ms(t_sort));
    println!("  sort_by_key (u32 values)         {:>9.2} ms", ms(t_by_key));
    println!("  sort_with_indices                {:>9.2} ms", ms(t_with_ix));

    if check {
        let t = Instant::now();
        let mut want_sorted = keys_host.clone();
        want_sorted.sort();
        let mut pairs: Vec<(i32, u32)> = small_keys.iter().copied().zip(values.iter().copied()).collect();
        pairs.sort_by_key(|p| p.0); // stable
        let want_reordered: Vec<u32> = pairs.iter().map(|p| p.1).collect();
        let mut want_with_ix: Vec<(i32, i64)> =
            small_keys.iter().enumerate().map(|(i, &k)| (k, i as i64)).collect();
        want_with_ix.sort_by_key(|p| p.0); // stable
        println!("  Rust's stable sorts (all three)  {:>9.2} ms", ms(t.elapsed()));
        let bad = compare("sort", &sorted, &want_sorted)
            + compare("sort_by_key", &reordered, &want_reordered)
            + compare("sort_with_indices", &with_indices, &want_with_ix);
        if bad > 0 {
            eprintln!("check: {bad} elements differ from Rust's stable sort");
            exit(1);
        }
    }
    Ok(())
}

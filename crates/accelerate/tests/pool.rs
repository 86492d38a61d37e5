//! Note [Recycled buffers]: the storage of a dropped large array holds the
//! next result of the same element type and a fitting size, within the
//! pool's limit, and a recycled buffer's old contents never show.
//!
//! One test in its own process: the pool is global, and its limit is read
//! from the environment once.

use accelerate::array::pool::pooled_bytes;
use accelerate::prelude::*;
use accelerate::{run_with, Backend, Config};

const MIB: usize = 1 << 20;

fn counting<T: Elt>(n: usize, f: impl Fn(Exp<i64>) -> Exp<T> + 'static) -> Acc<Vector<T>> {
    generate(index1(n as i64), move |ix| f(unindex1(ix)))
}

#[test]
fn dropped_results_hold_the_next_results_of_their_type_within_the_limit() {
    if let Some(why) = accelerate::backend::cpu::unavailable() {
        eprintln!("skipped: the CPU backend is unavailable here: {why}");
        return;
    }
    // SAFETY: no other thread runs yet in this process's only test
    unsafe { std::env::set_var("ACCELERATE_POOL_MB", "10") };
    let cpu = Config::default().with_backend(Backend::Cpu);
    let n = MIB; // 4 MiB of f32, 8 MiB of f64
    let base = pooled_bytes();

    let a = run_with(&counting(n, |i| i.cast::<f32>()), &cpu).unwrap();
    assert_eq!(pooled_bytes(), base);
    drop(a);
    assert_eq!(pooled_bytes(), base + 4 * MIB, "a dropped 4 MiB result is kept");

    let b = run_with(&counting(n, |i| i.cast::<f64>() * 0.5), &cpu).unwrap();
    assert_eq!(pooled_bytes(), base + 4 * MIB, "an f64 result does not take f32 storage");
    let small = run_with(&counting(n / 4, |i| i.cast::<f32>()), &cpu).unwrap();
    assert_eq!(pooled_bytes(), base + 4 * MIB, "a quarter-size result leaves the buffer for a better fit");

    let c = run_with(&counting(n, |i| (i * 3i64).cast::<f32>()), &cpu).unwrap();
    assert_eq!(pooled_bytes(), base, "a result of the same type and size takes the kept storage");
    let want: Vec<f32> = (0..n).map(|i| (i * 3) as f32).collect();
    assert!(c.to_vec() == want, "every element of the recycled buffer is the new result's");

    // 8 + 4 MiB exceed the 10 MiB limit: the older buffer goes
    drop(b);
    assert_eq!(pooled_bytes(), base + 8 * MIB);
    drop(c);
    assert_eq!(pooled_bytes(), base + 4 * MIB, "the oldest buffer leaves a full pool");
    drop(small);
    assert_eq!(pooled_bytes(), base + 5 * MIB, "a 1 MiB buffer is kept too");
}

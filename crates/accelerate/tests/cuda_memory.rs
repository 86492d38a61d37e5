//! The device memory manager on a real program: it evicts (a program
//! whose arrays total more than the device memory the manager may use,
//! `ACCELERATE_CUDA_MEMORY_MB` = 1 here, still completes with the
//! interpreter's results, because each kernel's own arrays fit: the
//! sequences thesis, §6.2), and a compiled program run again on the same
//! arrays does not copy them to the device again (Note [Resident inputs]).
//! One test in its own binary, so that the cap is set before the device is
//! first used and the manager's counts are this test's alone.
//!
//! Runs on the GPU, or on the emulator with
//! `ACCELERATE_CUDA_DEVICE=emulator`; skipped, saying why, where neither can.

#![cfg(feature = "cuda")]

use accelerate::prelude::*;
use accelerate::{run_with, Backend, Config};

#[test]
fn the_manager_evicts_and_keeps_inputs_resident() {
    // before anything touches the device (the only test in this binary)
    std::env::set_var("ACCELERATE_CUDA_MEMORY_MB", "1");
    if let Some(why) = accelerate::backend::cuda::unavailable() {
        eprintln!("skipped: the CUDA backend is unavailable here ({why})");
        return;
    }
    // six inputs and five intermediates of 200 KiB (2.2 MiB in all); no
    // kernel needs more than three of them at once
    let n = 50_000usize;
    let inputs: Vec<Vector<f32>> =
        (0..6).map(|k| Vector::from_elems((0..n).map(|i| ((i * (k + 3)) % 29) as f32).collect())).collect();
    let program = || {
        let xs: Vec<Acc<Vector<f32>>> = inputs.iter().cloned().map(use_array).collect();
        // manifest intermediates (fusion is off), two used again at the end
        let ys: Vec<Acc<Vector<f32>>> =
            xs.iter().zip(xs.iter().skip(1)).map(|(a, b)| a.zip_with(b, |x, y| x * 2.0f32 + y)).collect();
        let sums: Vec<Acc<Scalar<f32>>> = ys.iter().map(|y| y.fold(0.0f32, |a, b| a + b)).collect();
        let total = sums.iter().skip(1).fold(sums[0].clone(), |acc, s| acc.zip_with(s, |a, b| a + b));
        lift_acc((total, ys[0].zip_with(&ys[4], |a, b| a - b)))
    };
    let cuda = Config::default().with_backend(Backend::Cuda).with_fusion(false);
    let interp = Config::default().with_backend(Backend::Interpreter);
    let (want, got) = {
        let p = program();
        (run_with(&p, &interp).unwrap(), run_with(&p, &cuda).unwrap())
    };
    assert_eq!(want.0.value().to_bits(), got.0.value().to_bits(), "the sums");
    assert_eq!(want.1.to_vec(), got.1.to_vec(), "an array computed early, used late");
    let accelerate::backend::cuda::MemoryStatistics { evictions, used, .. } =
        accelerate::backend::cuda::memory_statistics().unwrap();
    assert!(evictions > 0, "the arrays did not exceed the cap: no eviction");
    assert!(used <= 1 << 20, "the manager uses {used} bytes, past its cap");

    // a compiled program run twice on the same array copies it once (each
    // launch also copies its arguments and its error record: the same
    // count in every run of the program)
    let p = accelerate::compile_with(|xs: Acc<Vector<f32>>| xs.map(|x| x * 3.0f32), cuda.clone()).unwrap();
    let xs = Vector::from_elems((0..1000).map(|i| i as f32).collect());
    let uploads = || accelerate::backend::cuda::memory_statistics().unwrap().uploads;
    let before = uploads();
    let first = p.run(&xs).unwrap();
    let once = uploads();
    let second = p.run(&xs).unwrap();
    let twice = uploads();
    assert_eq!(first.to_vec(), second.to_vec());
    assert_eq!(once - before, twice - once + 1, "the second run finds its input on the device");
    let other = Vector::from_elems(vec![1.0f32; 1000]);
    assert_eq!(p.run(&other).unwrap().to_vec(), vec![3.0f32; 1000]);
    assert_eq!(uploads() - twice, once - before, "another array is copied");

    // a sequence's chunks after the first are copied to the device while
    // the chunk before computes (Note [Chunks copied ahead]): five chunks
    // of four stream elements, each chunk one array
    let items: Vec<Vector<i64>> =
        (0..20).map(|i| Vector::from_elems((0..1000).map(|j| i * 1000 + j).collect())).collect();
    let s = stream_in(items.clone()).map_seq(|x| x.map(|v| v * v).fold(0i64, |a, b| a + b));
    let seq = cuda.clone().with_seq(accelerate::SeqOptions { chunk: Some(4), ..Default::default() });
    let ahead = || accelerate::backend::cuda::memory_statistics().unwrap().uploaded_ahead;
    let before = ahead();
    let got: Vector<i64> = accelerate::run_seq_with(&s.elements(), &seq).unwrap();
    assert_eq!(ahead() - before, 4, "chunks 2 to 5 copied ahead");
    let want: Vec<i64> = items.iter().map(|x| x.to_vec().iter().map(|v| v * v).sum()).collect();
    assert_eq!(got.to_vec(), want);
}

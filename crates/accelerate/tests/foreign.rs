//! Foreign functions (`Foreign`, `foreign_acc`; sequences thesis §6.1):
//! each backend runs the implementation it has and the fallback where it
//! has none, with equal results; a call is a fusion barrier; an error a
//! foreign function returns, and a panic inside one, become
//! `Error::Foreign` naming the line of the call.
//!
//! Every test runs on the interpreter and the CPU backend (which run host
//! implementations) and, when `ACCELERATE_BACKEND=cuda`, on the CUDA
//! backend (which runs a device implementation, `CudaImpl`, and the
//! fallback of a function with only a host implementation).

use accelerate::prelude::*;
use accelerate::{compile_with, explain_with, run_with, Backend, Config};
use std::process::Command;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

/// Where this file's line containing `text` is, as errors name it.
fn line_of(text: &str) -> String {
    let n = include_str!("foreign.rs").lines().position(|l| l.contains(text)).expect("the line");
    format!("foreign.rs:{}:", n + 1)
}

/// The backends to test, each with whether it runs host implementations.
fn backends() -> Vec<(Config, bool)> {
    let env = Config::from_env().unwrap();
    let mut out = vec![(env.clone().with_backend(Backend::Interpreter), true)];
    match accelerate::backend::cpu::unavailable() {
        None => out.push((env.clone().with_backend(Backend::Cpu), true)),
        Some(why) => eprintln!("the CPU backend is skipped: {why}"),
    }
    #[cfg(feature = "cuda")]
    if env.backend == Backend::Cuda {
        match accelerate::backend::cuda::unavailable() {
            None => out.push((env.clone(), false)),
            Some(why) => eprintln!("the CUDA backend is skipped: {why}"),
        }
    }
    out
}

fn affine_one(x: i64) -> i64 {
    x.wrapping_mul(3).wrapping_add(1)
}

/// `x * 3 + 1` per element: a host implementation that counts its calls,
/// and a fallback in the language.
fn affine(calls: &Arc<AtomicUsize>) -> Foreign<Vector<i64>, Vector<i64>> {
    let calls = calls.clone();
    Foreign::new("affine").host(move |xs: Vector<i64>| {
        calls.fetch_add(1, Ordering::SeqCst);
        let v: Vec<i64> = xs.as_slice().iter().map(|&x| affine_one(x)).collect();
        Array::from_vec(xs.shape(), v).map_err(|e| e.to_string())
    })
}

/// `affine` with a device implementation too, counting its calls in
/// `device_calls`: it reads its argument back from the device and uploads
/// its result (which works on the GPU and the emulator alike).
#[cfg(feature = "cuda")]
fn affine_on_device(
    calls: &Arc<AtomicUsize>,
    device_calls: &Arc<AtomicUsize>,
) -> Foreign<Vector<i64>, Vector<i64>> {
    use accelerate::array::ScalarTy;
    use accelerate::backend::cuda::{CudaImpl, DeviceCall};
    let device_calls = device_calls.clone();
    affine(calls).with_impl(CudaImpl(Box::new(move |call: &mut dyn DeviceCall| {
        device_calls.fetch_add(1, Ordering::SeqCst);
        let shape = call.args()[0].shape.clone();
        let bytes = call.download(0)?;
        let out: Vec<u8> = bytes
            .chunks_exact(8)
            .flat_map(|c| affine_one(i64::from_le_bytes(c.try_into().unwrap())).to_le_bytes())
            .collect();
        call.upload_result(ScalarTy::I64, &shape, &out)
    })))
}

fn affine_fallback(xs: Acc<Vector<i64>>) -> Acc<Vector<i64>> {
    xs.map(|x| x * 3 + 1)
}

#[test]
fn the_implementation_runs_where_one_exists_and_the_fallback_elsewhere() {
    for n in [0usize, 1, 1000] {
        let input: Vec<i64> = (0..n as i64).map(|i| i * 7 - 300).collect();
        let want: Vec<i64> = input.iter().map(|x| (x * 2 * 3 + 1) - 5).collect();
        for (config, runs_host) in backends() {
            let calls = Arc::new(AtomicUsize::new(0));
            let f = affine(&calls);
            let xs = use_array(Array::from_vec(dim1(n), input.clone()).unwrap());
            // a producer before the call and one after it: neither fuses
            // through the call
            let r = f.call(affine_fallback, xs.map(|x| x * 2)).map(|y| y - 5);
            let got = run_with(&r, &config).unwrap();
            assert_eq!(got.to_vec(), want, "{:?}, n {n}", config.backend);
            assert_eq!(calls.load(Ordering::SeqCst), usize::from(runs_host), "{:?}", config.backend);
        }
    }
}

/// On the CUDA backend, a device implementation runs (and the host one
/// does not); elsewhere the host one.
#[cfg(feature = "cuda")]
#[test]
fn the_cuda_backend_runs_a_device_implementation() {
    for (config, runs_host) in backends() {
        let (calls, device_calls) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let f = affine_on_device(&calls, &device_calls);
        for n in [0usize, 5] {
            let xs = use_array(Array::from_vec(dim1(n), (0..n as i64).collect()).unwrap());
            let r = f.call(affine_fallback, xs.map(|x| x - 1)).map(|y| y * 2);
            let got = run_with(&r, &config).unwrap();
            let want: Vec<i64> = (0..n as i64).map(|x| affine_one(x - 1) * 2).collect();
            assert_eq!(got.to_vec(), want, "{:?}", config.backend);
        }
        let (h, d) = (calls.load(Ordering::SeqCst), device_calls.load(Ordering::SeqCst));
        assert_eq!((h, d), if runs_host { (2, 0) } else { (0, 2) }, "{:?}", config.backend);
    }
}

/// A device implementation that writes its result where `result`
/// allocated it, as a CUDA library does: on the emulator, whose device
/// addresses are host memory, by a plain write. And one whose results do
/// not make the declared type: an error naming the call.
#[cfg(feature = "cuda")]
#[test]
fn device_implementations_allocate_their_results_and_are_checked() {
    use accelerate::array::ScalarTy;
    use accelerate::backend::cuda::{CudaDevice, CudaImpl, DeviceCall};
    let config = Config::from_env().unwrap();
    if config.backend != Backend::Cuda || config.cuda.device != CudaDevice::Emulator {
        eprintln!("skipped: needs ACCELERATE_BACKEND=cuda ACCELERATE_CUDA_DEVICE=emulator");
        return;
    }
    if let Some(why) = accelerate::backend::cuda::unavailable() {
        eprintln!("skipped: {why}");
        return;
    }
    let iota: Foreign<Vector<i64>, Vector<i32>> =
        Foreign::new("iota").with_impl(CudaImpl(Box::new(|call: &mut dyn DeviceCall| {
            let n = call.args()[0].shape[0];
            let at = call.result(ScalarTy::I32, &[n])? as *mut i32;
            for i in 0..n {
                // SAFETY: the emulator's device addresses are host memory,
                // and `result` allocated `n` i32s there
                unsafe { at.add(i).write(i as i32 * 10) };
            }
            Ok(())
        })));
    let xs = use_array(Array::from_vec(dim1(4), vec![7i64; 4]).unwrap());
    let r = iota.call(|x| x.map(|_| constant(0i32)), xs).map(|y| y + 1);
    assert_eq!(run_with(&r, &config).unwrap().to_vec(), vec![1, 11, 21, 31]);

    let wrong: Foreign<Vector<i64>, Vector<i32>> =
        Foreign::new("wrong").with_impl(CudaImpl(Box::new(|call: &mut dyn DeviceCall| {
            call.upload_result(ScalarTy::F32, &[1], &[0, 0, 0, 0])
        })));
    let xs = use_array(Array::from_vec(dim1(1), vec![1i64]).unwrap());
    let r = wrong.call(|x| x.map(|_| constant(0i32)), xs); // the wrong call
    let e = run_with(&r, &config).unwrap_err().to_string();
    assert!(e.contains(&line_of("the wrong call")) && e.contains("foreign function wrong"), "{e}");
    assert!(e.contains("do not make the declared"), "{e}");
}

#[test]
fn a_function_without_implementations_runs_its_fallback_everywhere() {
    for (config, _) in backends() {
        let f: Foreign<Vector<i64>, Vector<i64>> = Foreign::new("nothing_native");
        let xs = use_array(Array::from_vec(dim1(5), vec![1i64, 2, 3, 4, 5]).unwrap());
        let got = run_with(&foreign_acc(&f, affine_fallback, xs), &config).unwrap();
        assert_eq!(got.to_vec(), vec![4, 7, 10, 13, 16], "{:?}", config.backend);
    }
}

/// A pair in and a pair out: element-wise sums and the total, with a
/// fallback that also reads an array from outside the call.
#[test]
fn tuples_of_arrays_in_and_out_and_a_fallback_reading_outer_arrays() {
    type In = (Vector<i32>, Vector<i32>);
    type Out = (Vector<i32>, Scalar<i32>);
    let f: Foreign<In, Out> = Foreign::new("add_and_total").host(|(a, b): In| {
        let s: Vec<i32> = a.to_vec().iter().zip(b.to_vec()).map(|(x, y)| x.wrapping_add(y)).collect();
        let t = s.iter().fold(0i32, |acc, x| acc.wrapping_add(*x));
        let n = s.len();
        Ok((Array::from_vec(dim1(n), s).unwrap(), Array::from_vec(Z, vec![t]).unwrap()))
    });
    for (config, _) in backends() {
        let a = use_array(Array::from_vec(dim1(6), vec![1i32, 2, 3, 4, 5, 6]).unwrap());
        let b = use_array(Array::from_vec(dim1(4), vec![10i32, 20, 30, 40]).unwrap());
        let zero = unit(0i32);
        let r = f.call(
            |p: Acc<In>| {
                let (x, y) = p.unlift();
                // `zero` comes from outside the call
                let s = x.zip_with(&y, |x, y| x + y + zero.the());
                lift_acc((s.clone(), s.sum()))
            },
            lift_acc((a.map(|x| x * 1), b)),
        );
        let (s, t) = run_with(&r, &config).unwrap();
        assert_eq!(s.to_vec(), vec![11, 22, 33, 44], "{:?}", config.backend);
        assert_eq!(t.to_vec(), vec![110], "{:?}", config.backend);
    }
}

#[test]
fn a_compiled_program_calls_the_implementation_once_a_run() {
    for (config, runs_host) in backends() {
        let calls = Arc::new(AtomicUsize::new(0));
        let f = affine(&calls);
        let p = compile_with(move |xs: Acc<Vector<i64>>| f.call(affine_fallback, xs).sum(), config.clone())
            .unwrap();
        for k in 1..=3i64 {
            let xs = Array::from_vec(dim1(4), vec![k; 4]).unwrap();
            assert_eq!(p.run(&xs).unwrap().to_vec(), vec![4 * (3 * k + 1)]);
        }
        assert_eq!(calls.load(Ordering::SeqCst), if runs_host { 3 } else { 0 }, "{:?}", config.backend);
    }
}

#[test]
fn the_plan_shows_the_call_as_a_host_command() {
    let calls = Arc::new(AtomicUsize::new(0));
    let f = affine(&calls);
    let xs = use_array(Array::from_vec(dim1(3), vec![1i64, 2, 3]).unwrap());
    let r = f.call(affine_fallback, xs.map(|x| x + 1)).map(|y| y * 2);
    let text = explain_with(&r, &Config::from_env().unwrap().with_fusion(true)).unwrap();
    assert!(text.contains("foreign affine"), "{text}");
    assert_eq!(calls.load(Ordering::SeqCst), 0, "explaining runs nothing");
}

#[test]
fn an_error_the_function_returns_names_the_line_of_the_call() {
    let f: Foreign<Vector<f32>, Vector<f32>> =
        Foreign::new("picky").host(|_| Err("the matrix is singular".to_string()));
    for (config, runs_host) in backends() {
        let xs = use_array(Array::from_vec(dim1(2), vec![1.0f32, 2.0]).unwrap());
        let r = f.call(|x| x.map(|v| v * 2.0), xs); // the picky call
        match run_with(&r, &config) {
            Err(e @ Error::Foreign { .. }) if runs_host => {
                let m = e.to_string();
                assert!(m.contains(&line_of("the picky call")), "{m}");
                assert!(m.contains("picky") && m.contains("the matrix is singular"), "{m}");
            }
            Ok(v) if !runs_host => assert_eq!(v.to_vec(), vec![2.0, 4.0]),
            other => panic!("{:?}: {other:?}", config.backend),
        }
    }
}

/// Set in a child: run the panicking function and print what `run` gave.
const ROLE: &str = "ACCELERATE_FOREIGN_TEST_ROLE";

#[test]
fn a_panic_inside_the_function_is_an_error_naming_the_line_of_the_call() {
    if std::env::var_os(ROLE).is_some() {
        let f: Foreign<Vector<i32>, Vector<i32>> = Foreign::new("fragile").host(|xs: Vector<i32>| {
            let v = xs.to_vec();
            // out of bounds: a panic in the user's code
            #[allow(clippy::useless_vec)]
            let i = v[v.len() + 1];
            Ok(Array::from_vec(dim1(1), vec![i]).unwrap())
        });
        for (config, runs_host) in backends() {
            let xs = use_array(Array::from_vec(dim1(2), vec![1i32, 2]).unwrap());
            let r = f.call(|x| x.map(|v| v + 1), xs); // the fragile call
            match run_with(&r, &config) {
                Err(e) => println!("{:?} error: {e}", config.backend),
                Ok(v) => println!("{:?} ok {:?} host {runs_host}", config.backend, v.to_vec()),
            }
        }
        return;
    }
    let out = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "a_panic_inside_the_function_is_an_error_naming_the_line_of_the_call",
            "--nocapture",
        ])
        .env(ROLE, "1")
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the child failed:\n{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    let lines: Vec<&str> = stdout.lines().filter(|l| l.contains(" error: ") || l.contains(" ok ")).collect();
    assert_eq!(lines.len(), backends().len(), "{stdout}");
    for l in lines {
        if l.contains(" ok ") {
            // a backend that runs the fallback
            assert!(l.ends_with("[2, 3] host false"), "{l}");
        } else {
            assert!(l.contains(&line_of("the fragile call")), "{l}");
            assert!(l.contains("foreign function fragile: panicked: index out of bounds"), "{l}");
        }
    }
}

/// An array that a loop's body reads but does not change is computed
/// once a run, not once an iteration (Note [Hoisting invariant arrays]):
/// a call whose argument is outside the loop, read once by the body
/// (taken out of it) or twice (a shared binding, hoisted), runs once.
#[test]
fn a_loop_invariant_call_runs_once_a_run_not_once_an_iteration() {
    for shared in [false, true] {
        for (config, runs_host) in backends() {
            let calls = Arc::new(AtomicUsize::new(0));
            let f = affine(&calls);
            let p = compile_with(
                move |xs: Acc<Vector<i64>>| {
                    let fixed = f.call(affine_fallback, xs.map(|x| x * 2));
                    let init = lift_acc((xs, unit(0i32)));
                    let out = awhile(
                        |s: Acc<(Vector<i64>, Scalar<i32>)>| unit(the(s.unlift().1).lt(4i32)),
                        move |s| {
                            let (v, i) = s.unlift();
                            let step = v.zip_with(&fixed, |a, b| a + b);
                            let step = if shared { step.zip_with(&fixed, |a, b| a - b + b) } else { step };
                            lift_acc((step, unit(the(i) + 1i32)))
                        },
                        init,
                    );
                    out.unlift().0
                },
                config.clone(),
            )
            .unwrap();
            let xs = Array::from_vec(dim1(3), vec![1i64, 2, 3]).unwrap();
            let want: Vec<i64> = [1i64, 2, 3].iter().map(|&x| x + 4 * affine_one(2 * x)).collect();
            assert_eq!(p.run(&xs).unwrap().to_vec(), want, "{:?}, shared {shared}", config.backend);
            let once = if runs_host { 1 } else { 0 };
            assert_eq!(calls.load(Ordering::SeqCst), once, "{:?}, shared {shared}", config.backend);
        }
    }
}

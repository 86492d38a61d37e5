//! The CUDA backend's code generation: for every skeleton (generate and
//! its producers, fold by rows and in pieces, fold_seg, the scans both
//! ways with and without a seed, permute with native, compare-and-swap
//! and locked updates, stencil with every kind of boundary) at every
//! element type (`i8`..`i64`, `u8`..`u64`, `f16`, `f32`, `f64`, `bool`
//! and a tuple), the generated CUDA C is compiled by NVRTC for sm_80 and
//! sm_90. No GPU is needed; NVRTC is (`.ci/nvrtc.sh` installs it from
//! PyPI). Skipped, saying so, when NVRTC is not found.

#![cfg(feature = "cuda")]

use accelerate::backend::cuda::{compile_ptx, cuda_source, nvrtc_unavailable};
use accelerate::prelude::*;
use accelerate::{Backend, Config, Error};

const ARCHS: [&str; 2] = ["sm_80", "sm_90"];

/// Whether NVRTC is here; where it is not, the tests are skipped, saying
/// why, unless `ACCELERATE_REQUIRE_NVRTC` is set (as CI sets it, having
/// installed NVRTC: a skip there would hide a broken installation).
fn nvrtc() -> bool {
    match nvrtc_unavailable() {
        None => true,
        Some(why) if std::env::var_os("ACCELERATE_REQUIRE_NVRTC").is_some() => {
            panic!("ACCELERATE_REQUIRE_NVRTC is set but NVRTC is unavailable: {why}")
        }
        Some(why) => {
            eprintln!("skipped: {why}");
            false
        }
    }
}

/// The program's CUDA C compiles for every architecture.
fn compiles<A: Arrays>(what: &str, acc: Acc<A>) {
    let src = cuda_source(&acc).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(src.contains("__global__"), "{what}: no kernel generated");
    for arch in ARCHS {
        if let Err(e) = compile_ptx(&src, arch) {
            let numbered: String =
                src.lines().enumerate().map(|(i, l)| format!("{:5} {l}\n", i + 1)).collect();
            panic!("{what} for {arch}: {e}\n{numbered}");
        }
    }
}

/// `compiles`, for a stencil over matrices, which must take the tiled
/// form (`cuda/stencil.rs`).
fn compiles_tiled<A: Arrays>(what: &str, acc: Acc<A>) {
    let src = cuda_source(&acc).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert!(src.contains("tiles_x") && src.contains("__shared__"), "{what}: not tiled");
    compiles(what, acc);
}

/// Every skeleton over elements of a numeric type, from sample values.
fn numeric<T: NumElt>(ty: &str, vals: Vec<T>) {
    if !nvrtc() {
        return;
    }
    let n = vals.len();
    let z = vals[0];
    {
        let xs = use_array(Vector::from_elems(vals.clone()));
        let m = use_array(Array::from_vec(dim2(2, n / 2), vals[..n / 2 * 2].to_vec()).unwrap());
        let lens = use_array(Vector::from_elems(vec![1i64, 0, n as i64 - 1]));
        let half = xs.backpermute(index1(xs.length() / 2i64), |ix| ix.clone());
        let to_half = |ix: &Exp<DIM1>| just(index1(unindex1(ix) / 2i64));
        let what = |w: &str| format!("{ty} {w}");
        compiles(&what("map"), xs.map(|x| x + x));
        compiles(&what("zip_with"), xs.zip_with(xs.map(|x| x * x), |a, b| a.max(b)));
        compiles(&what("transpose"), m.transpose());
        compiles(&what("fold (commutative)"), m.fold(z, |a, b| a + b));
        compiles(&what("fold1 (in order)"), xs.fold1(|_a, b| b.clone()));
        compiles(&what("fold_seg"), xs.fold_seg(z, |a, b| a + b, &lens));
        compiles(&what("fold_seg (in order)"), xs.fold_seg(z, |a, _b| a.clone(), lens));
        compiles(&what("scanl"), m.scanl(z, |a, b| a + b));
        compiles(&what("scanr1"), xs.scanr1(|a, b| a.min(b)));
        compiles(&what("permute +"), xs.permute(|a, b| a + b, &half, to_half));
        compiles(&what("permute max"), xs.permute(|a, b| a.max(b), &half, to_half));
        compiles(&what("permute *"), xs.permute(|a, b| a * b, half, to_half));
        compiles(
            &what("stencil clamp"),
            xs.stencil(|p: [Exp<T>; 3]| &p[0] + &p[1] + &p[2], Boundary::clamp()),
        );
        compiles(
            &what("stencil constant"),
            xs.stencil(|p: [Exp<T>; 3]| &p[0] + &p[2], Boundary::constant(z)),
        );
        compiles_tiled(
            &what("tiled stencil mirror"),
            m.stencil(|p: [[Exp<T>; 3]; 3]| &p[0][1] + &p[1][0] + &p[2][2], Boundary::mirror()),
        );
        compiles_tiled(
            &what("tiled stencil constant"),
            m.map(|x| x + x).stencil(|p: [[Exp<T>; 5]; 3]| &p[0][4] + &p[2][0], Boundary::constant(z)),
        );
    }
}

/// The first half of a vector (for permute's defaults).
fn first_half<T: Elt>(xs: Acc<Vector<T>>) -> Acc<Vector<T>> {
    xs.backpermute(index1(xs.length() / 2i64), |ix| ix.clone())
}

#[test]
fn every_skeleton_compiles_for_signed_integers() {
    numeric::<i8>("i8", vec![1, -2, 3, -4, 5, -6, 7]);
    numeric::<i16>("i16", vec![1, -2, 3, -4, 5, -6, 7]);
    numeric::<i32>("i32", vec![1, -2, 3, -4, 5, -6, 7]);
    numeric::<i64>("i64", vec![1, -2, 3, -4, 5, -6, 7]);
}

#[test]
fn every_skeleton_compiles_for_unsigned_integers() {
    numeric::<u8>("u8", vec![1, 2, 3, 4, 5, 6, 7]);
    numeric::<u16>("u16", vec![1, 2, 3, 4, 5, 6, 7]);
    numeric::<u32>("u32", vec![1, 2, 3, 4, 5, 6, 7]);
    numeric::<u64>("u64", vec![1, 2, 3, 4, 5, 6, 7]);
}

#[test]
fn every_skeleton_compiles_for_floats() {
    numeric::<f32>("f32", vec![1.5, -2.0, 3.25, f32::NAN, 5.0, -0.0, 7.0]);
    numeric::<f64>("f64", vec![1.5, -2.0, 3.25, f64::NAN, 5.0, -0.0, 7.0]);
}

#[cfg(feature = "f16")]
#[test]
fn every_skeleton_compiles_for_f16() {
    use accelerate::f16;
    numeric::<f16>("f16", [1.5f32, -2.0, 3.25, 4.0, 5.0, -0.0, 7.0].into_iter().map(f16::from_f32).collect());
}

#[test]
fn every_skeleton_compiles_for_bool() {
    if !nvrtc() {
        return;
    }
    let vals = vec![true, false, true, true, false, false, true];
    let xs = || use_array(Vector::from_elems(vals.clone()));
    let m = || use_array(Array::from_vec(dim2(2, 3), vals[..6].to_vec()).unwrap());
    let lens = || use_array(Vector::from_elems(vec![1i64, 0, 6]));
    {
        compiles("bool map", xs().map(|x| !x));
        compiles("bool zip_with", xs().zip_with(xs(), |a, b| a.and(b)));
        compiles("bool transpose", m().transpose());
        compiles("bool fold", m().fold(false, |a, b| a.or(b)));
        compiles("bool fold1", xs().fold1(|a, b| a.and(!b).or(b)));
        compiles("bool fold_seg", xs().fold_seg(true, |a, b| a.and(b), lens()));
        compiles("bool scanl", m().scanl(false, |a, b| a.or(b)));
        compiles("bool scanr1", xs().scanr1(|a, b| a.and(b)));
        compiles(
            "bool permute",
            xs().permute(|a, b| a.or(b), first_half(xs()), |ix| just(index1(unindex1(ix) / 2i64))),
        );
        compiles("bool stencil", xs().stencil(|p: [Exp<bool>; 3]| p[0].and(&p[2]), Boundary::wrap()));
    }
}

#[test]
fn every_skeleton_compiles_for_tuples() {
    if !nvrtc() {
        return;
    }
    type P = (i32, f64);
    let vals: Vec<P> = (0..7).map(|i| (i - 3, i as f64 * 0.5)).collect();
    let xs = || use_array(Vector::from_elems(vals.clone()));
    let m = || use_array(Array::from_vec(dim2(2, 3), vals[..6].to_vec()).unwrap());
    let lens = || use_array(Vector::from_elems(vec![2i64, 0, 5]));
    let add = |a: &Exp<P>, b: &Exp<P>| lift((a.fst() + b.fst(), a.snd() + b.snd()));
    // an affine composition: associative, not commutative
    let affine =
        |a: &Exp<P>, b: &Exp<P>| lift((a.fst() * b.fst(), a.snd() * (b.fst().cast::<f64>()) + b.snd()));
    let z = (1i32, 0.0f64);
    {
        compiles("tuple map", xs().map(|p| lift((p.snd().cast::<i32>(), p.fst().cast::<f64>()))));
        compiles("tuple transpose", m().transpose());
        compiles("tuple fold", m().fold(z, add));
        compiles("tuple fold1 (in order)", xs().fold1(affine));
        compiles("tuple fold_seg", xs().fold_seg(z, affine, lens()));
        compiles("tuple scanl", m().scanl(z, affine));
        compiles("tuple scanr1", xs().scanr1(add));
        compiles(
            "tuple permute",
            xs().permute(add, first_half(xs()), |ix| just(index1(unindex1(ix) / 2i64))),
        );
        compiles("tuple stencil", xs().stencil(|p: [Exp<P>; 3]| add(&p[0], &p[2]), Boundary::mirror()));
    }
}

#[test]
fn errors_and_division_checks_compile() {
    if !nvrtc() {
        return;
    }
    let xs = || use_array(Vector::from_elems((0..9).collect::<Vec<i32>>()));
    {
        // a division that may fail, a read that may fall outside, a while loop
        compiles("checked map", xs().map(|x| 100i32 / x));
        compiles(
            "checked gather",
            xs().map({
                let ys = xs();
                move |x| ys.index(index1(x.cast::<i64>() * 2i64))
            }),
        );
        compiles("checked fold", xs().fold(0i32, |a, b| a / (b + 1i32)));
        compiles("reshape", xs().reshape(dim2(3, 3)).fold(0i32, |a, b| a + b));
    }
}

/// Where the backend cannot run (no GPU, and not the emulator), choosing
/// it is an error that says why; where it can, it runs.
#[test]
fn selecting_the_cuda_backend_runs_or_says_why_it_cannot() {
    let config = Config::default().with_backend(Backend::Cuda);
    let r = accelerate::run_with(&unit(1i32), &config);
    match (accelerate::backend::cuda::unavailable(), r) {
        (None, Ok(a)) => assert_eq!(a.value(), 1),
        (Some(why), Err(Error::BackendUnavailable { backend, reason })) => {
            assert_eq!(backend, "cuda");
            assert_eq!(reason, why);
        }
        (why, other) => panic!("unavailable: {why:?}, yet the run gave {other:?}"),
    }
}

/// Note [The kernel cache] for PTX: a program's PTX is compiled once,
/// kept in memory and on disk under its digest, and a damaged entry on
/// disk is not used. (The only test in this binary that compiles through
/// the cache, so that the count of compilations is its own.)
#[test]
fn ptx_is_cached_in_memory_and_on_disk() {
    use accelerate::backend::cuda::{cached_ptx, ptx_compilations, ptx_on_disk};
    if !nvrtc() {
        return;
    }
    // a source no earlier run has cached
    let stamp = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    let src = cuda_source(&use_array(Vector::from_elems(vec![1.0f32, 2.0])).map(|x| x * x)).unwrap()
        + &format!("\n/* {stamp} */\n");
    let before = ptx_compilations();
    let first = cached_ptx(&src, "sm_90").unwrap();
    assert!(first.contains(".entry"), "PTX with a kernel entry");
    assert_eq!(ptx_compilations(), before + 1, "compiled once");
    let on_disk = ptx_on_disk(&src, "sm_90").expect("published on disk");
    assert_eq!(std::fs::read_to_string(&on_disk).unwrap(), *first);
    let again = cached_ptx(&src, "sm_90").unwrap();
    assert_eq!(again, first);
    assert_eq!(ptx_compilations(), before + 1, "the second request compiles nothing");
    // another architecture is another entry
    let other = cached_ptx(&src, "sm_80").unwrap();
    assert_ne!(other, first);
    assert_eq!(ptx_compilations(), before + 2);
    // a truncated entry is not used
    std::fs::write(&on_disk, &first[..first.len() / 2]).unwrap();
    assert_eq!(ptx_on_disk(&src, "sm_90"), None, "a damaged entry is not used");
}

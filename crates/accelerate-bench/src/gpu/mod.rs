//! The GPU benchmarks (feature `cuda`; `src/bin/gpu.rs` is the command,
//! `scripts/gpu-bench.sh` runs it on a device): ours on the CUDA backend
//! against hand-written CUDA C (`kernels.cu`: float4 loads, warp-shuffle
//! reductions, an n-body step tiled through shared memory, a
//! reduce-then-scan), with a device-to-device copy as the bandwidth bound
//! of the memory-bound programs.
//!
//! What is timed is the device's own time, by CUDA events: for the
//! hand-written kernels, their launches between two events; for ours, the
//! device time the backend measures around each of its kernels and device
//! copies during one `Program::run` (`backend::cuda::device_busy`). Both
//! leave out the copies between host and device, which a GPU program keeps
//! out of its loop (ours keeps a compiled program's inputs on the device
//! from run to run: Note [Resident inputs]; its result is copied back
//! untimed). Ours also waits for each kernel before the next (it reads
//! the kernel's error record), which the device time does not count: the
//! wall time of a run is reported beside it.
//!
//! Every variant's result is checked against the sequential Rust
//! reference (the CPU benchmarks' programs and references, `programs/`)
//! before it is timed, as the CPU harness does.

use crate::check::{elementwise, reassociated_sum_tolerance, within};
use crate::harness::{Bench, Size};
use crate::programs::{blackscholes as bs, dotp, nbody, saxpy};
use accelerate::prelude::*;
use accelerate::{Backend, Config};
use accelerate_programs::blackscholes::{RISKFREE, VOLATILITY};
use accelerate_programs::dotp::dotp_ref;
use accelerate_programs::nbody::{Body, V3};
use accelerate_programs::rng::{signed_f32s, SEED_A, SEED_B};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaModule, CudaSlice, CudaStream, LaunchConfig, PushKernelArg,
};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Threads per block of the hand-written kernels (`BLOCK` in kernels.cu).
const BLOCK: u32 = 256;

/// The device, and the hand-written kernels loaded on it.
pub struct Gpu {
    stream: Arc<CudaStream>,
    module: Arc<CudaModule>,
    multiprocessors: u32,
    /// The device, its architecture and the driver's version, in words.
    pub about: String,
}

fn driver(what: &str, e: impl std::fmt::Debug) -> String {
    format!("CUDA driver: {what}: {e:?}")
}

impl Gpu {
    /// Device 0, with `kernels.cu` compiled by NVRTC for its architecture.
    pub fn open() -> Result<Arc<Gpu>, String> {
        use cudarc::driver::sys::CUdevice_attribute as A;
        if let Some(why) = accelerate::backend::cuda::unavailable() {
            return Err(format!("the CUDA backend cannot run here: {why}"));
        }
        let ctx = CudaContext::new(0).map_err(|e| driver("opening device 0", e))?;
        let (major, minor) = ctx.compute_capability().map_err(|e| driver("compute capability", e))?;
        let sms = ctx.attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT).map_err(|e| driver("SMs", e))?;
        let arch: &'static str = Box::leak(format!("sm_{major}{minor}").into_boxed_str());
        let ptx = accelerate::backend::cuda::compile_ptx(KERNELS, arch)
            .map_err(|e| format!("compiling the hand-written kernels: {e}"))?;
        let module =
            ctx.load_module(cudarc::nvrtc::Ptx::from_src(ptx)).map_err(|e| driver("loading the PTX", e))?;
        let mut version = 0;
        // SAFETY: writes one integer; the driver is loaded (CudaContext::new).
        unsafe { cudarc::driver::sys::cuDriverGetVersion(&mut version) };
        let name = ctx.name().unwrap_or_else(|_| "an unnamed device".into());
        let about = format!(
            "{name} ({arch}, {sms} multiprocessors), driver API {}.{}",
            version / 1000,
            version % 1000 / 10
        );
        let stream = ctx.default_stream();
        Ok(Arc::new(Gpu { stream, module, multiprocessors: sms.max(1) as u32, about }))
    }

    fn function(&self, name: &str) -> Result<CudaFunction, String> {
        self.module.load_function(name).map_err(|e| driver(&format!("finding {name}"), e))
    }

    /// A grid-stride grid for `threads` threads: at most 8 blocks per
    /// multiprocessor (a full one at 256 threads a block).
    fn grid(&self, threads: usize) -> u32 {
        (threads.div_ceil(BLOCK as usize) as u32).clamp(1, 8 * self.multiprocessors)
    }

    fn config(grid: u32) -> LaunchConfig {
        LaunchConfig { grid_dim: (grid, 1, 1), block_dim: (BLOCK, 1, 1), shared_mem_bytes: 0 }
    }

    /// The device time of the work `f` puts on the stream, between two
    /// events.
    fn timed(&self, f: impl FnOnce(&Gpu) -> Result<(), String>) -> Result<Duration, String> {
        let timing = Some(cudarc::driver::sys::CUevent_flags::CU_EVENT_DEFAULT);
        let start = self.stream.record_event(timing).map_err(|e| driver("event", e))?;
        f(self)?;
        let end = self.stream.record_event(timing).map_err(|e| driver("event", e))?;
        end.synchronize().map_err(|e| driver("waiting for the kernels", e))?;
        let ms = start.elapsed_ms(&end).map_err(|e| driver("timing", e))?;
        Ok(Duration::from_secs_f64(f64::from(ms) / 1e3))
    }

    fn upload<T: cudarc::driver::DeviceRepr>(&self, v: &[T]) -> Result<CudaSlice<T>, String> {
        self.stream.clone_htod(v).map_err(|e| driver("copying to the device", e))
    }

    fn download<T: cudarc::driver::DeviceRepr + Default + Clone>(
        &self,
        d: &CudaSlice<T>,
    ) -> Result<Vec<T>, String> {
        self.stream.clone_dtoh(d).map_err(|e| driver("copying to the host", e))
    }

    fn zeros<T: cudarc::driver::DeviceRepr + cudarc::driver::ValidAsZeroBits>(
        &self,
        n: usize,
    ) -> Result<CudaSlice<T>, String> {
        self.stream.alloc_zeros(n).map_err(|e| driver("allocating", e))
    }
}

/// The output a variant left in its slot last time, or a new one.
fn reuse<T>(slot: &mut Option<T>, make: impl FnOnce() -> Result<T, String>) -> Result<T, String> {
    slot.take().map_or_else(make, Ok)
}

/// The CUDA backend's configuration.
fn cuda() -> Config {
    Config::default().with_backend(Backend::Cuda)
}

/// Adds ours: `run` runs the compiled program once; the device time of
/// the run is the variant's time, and its wall time a variant of its own.
fn add_ours<O: 'static>(
    b: &mut Bench,
    run: impl Fn() -> accelerate::Result<O> + Clone + 'static,
    check: impl Fn(&O) -> Result<(), String> + Clone + 'static,
) {
    let (r, c) = (run.clone(), check.clone());
    b.variant(
        "accelerate-cuda",
        move |slot| {
            let before = accelerate::backend::cuda::device_busy().map_err(|e| e.to_string())?;
            let out = r().map_err(|e| e.to_string())?;
            let after = accelerate::backend::cuda::device_busy().map_err(|e| e.to_string())?;
            *slot = Some(out);
            Ok(after.saturating_sub(before))
        },
        move |o| c(o),
    );
    b.variant(
        "accelerate-cuda-wall",
        move |slot| {
            drop(slot.take());
            let t = Instant::now();
            let out = run().map_err(|e| e.to_string())?;
            let elapsed = t.elapsed();
            *slot = Some(out);
            Ok(elapsed)
        },
        check,
    );
}

/// The device-to-device copy of `bytes` bytes: the bandwidth bound (a copy
/// reads and writes each byte: `Bench::bytes` is twice `bytes`).
pub fn copy(gpu: &Arc<Gpu>, size: Size) -> Result<Bench, String> {
    let n = elements(size);
    let mut b = Bench::new("copy", format!("n = {n} f32, device to device"));
    b.bytes = Some(2.0 * 4.0 * n as f64);
    b.memory_bound = true;
    let src = gpu.upload(&signed_f32s(n, SEED_A))?;
    let want: Vec<f32> = signed_f32s(n, SEED_A);
    let g = gpu.clone();
    b.variant(
        "cuda-memcpy",
        move |slot: &mut Option<CudaSlice<f32>>| {
            let mut dst = reuse(slot, || g.zeros::<f32>(n))?;
            let t = g.timed(|g| g.stream.memcpy_dtod(&src, &mut dst).map_err(|e| driver("memcpy", e)))?;
            *slot = Some(dst);
            Ok(t)
        },
        {
            let g = gpu.clone();
            move |d| if g.download(d)? == want { Ok(()) } else { Err("the copy differs".into()) }
        },
    );
    Ok(b)
}

/// Vector lengths of the streaming benchmarks: 2^28 at the large size,
/// as the targets state them.
fn elements(size: Size) -> usize {
    size.pick(1 << 10, 1 << 22, 1 << 28)
}

pub fn dotp(gpu: &Arc<Gpu>, size: Size) -> Result<Bench, String> {
    let n = elements(size);
    let (xs, ys) = (signed_f32s(n, SEED_A), signed_f32s(n, SEED_B));
    let want = dotp_ref(&xs, &ys);
    let abs_sum: f64 = xs.iter().zip(&ys).map(|(&x, &y)| (x as f64 * y as f64).abs()).sum();
    let tol = reassociated_sum_tolerance(n, abs_sum, f32::EPSILON as f64);
    let mut b = Bench::new("dotp", format!("n = {n} f32"));
    b.bytes = Some(8.0 * n as f64);
    b.memory_bound = true;

    let p = Arc::new(accelerate::compile_with(dotp::program, cuda()).map_err(|e| e.to_string())?);
    let (xa, ya) = (Vector::from_elems(xs.clone()), Vector::from_elems(ys.clone()));
    add_ours(
        &mut b,
        move || p.run((&xa, &ya)),
        move |r: &Scalar<f32>| within(r.value() as f64, want as f64, tol),
    );

    let (dx, dy) = (gpu.upload(&xs)?, gpu.upload(&ys)?);
    let grid = gpu.grid(n / 4);
    let partial = gpu.zeros::<f32>(grid as usize)?;
    let (part, fin) = (gpu.function("dotp_part")?, gpu.function("dotp_final")?);
    let g = gpu.clone();
    b.variant(
        "cuda-hand",
        move |slot: &mut Option<CudaSlice<f32>>| {
            let mut out = reuse(slot, || g.zeros::<f32>(1))?;
            let mut partial = partial.clone();
            let n4 = (n / 4) as i64;
            let count = grid as i32;
            let t = g.timed(|g| {
                let mut l = g.stream.launch_builder(&part);
                l.arg(&dx).arg(&dy).arg(&n4).arg(&mut partial);
                // SAFETY: the signature of dotp_part; n is a multiple of 4
                unsafe { l.launch(Gpu::config(grid)) }.map_err(|e| driver("dotp_part", e))?;
                let mut l = g.stream.launch_builder(&fin);
                l.arg(&partial).arg(&count).arg(&mut out);
                // SAFETY: the signature of dotp_final
                unsafe { l.launch(Gpu::config(1)) }.map_err(|e| driver("dotp_final", e))?;
                Ok(())
            })?;
            *slot = Some(out);
            Ok(t)
        },
        {
            let g = gpu.clone();
            move |o| within(g.download(o)?[0] as f64, want as f64, tol)
        },
    );
    Ok(b)
}

pub fn saxpy(gpu: &Arc<Gpu>, size: Size) -> Result<Bench, String> {
    let n = elements(size);
    let (xs, ys) = (signed_f32s(n, SEED_A), signed_f32s(n, SEED_B));
    let mut want = vec![0.0f32; n];
    saxpy::saxpy_seq(saxpy::A, &xs, &ys, &mut want);
    let mut b = Bench::new("saxpy", format!("n = {n} f32"));
    b.bytes = Some(12.0 * n as f64);
    b.memory_bound = true;
    // both compute `a * x` then `+ y`, rounded twice (no fused
    // multiply-add: --fmad=false), as the reference does: exact equality
    let exact =
        |got: &[f32], want: &[f32]| elementwise(got, want, |_, g: f32, w: f32| g.to_bits() == w.to_bits());
    let p = Arc::new(accelerate::compile_with(saxpy::program, cuda()).map_err(|e| e.to_string())?);
    let (xa, ya) = (Vector::from_elems(xs.clone()), Vector::from_elems(ys.clone()));
    let w = want.clone();
    add_ours(&mut b, move || p.run((&xa, &ya)), move |r: &Vector<f32>| exact(&r.to_vec(), &w));

    let dx = gpu.upload(&xs)?;
    let dy0 = gpu.upload(&ys)?;
    let f = gpu.function("saxpy4")?;
    let g = gpu.clone();
    let grid = gpu.grid(n / 4);
    b.variant(
        "cuda-hand",
        move |slot: &mut Option<CudaSlice<f32>>| {
            // y is updated in place: each run starts from a fresh copy of
            // y, made before the clock starts
            let mut y = reuse(slot, || g.zeros::<f32>(n))?;
            g.stream.memcpy_dtod(&dy0, &mut y).map_err(|e| driver("memcpy", e))?;
            let n4 = (n / 4) as i64;
            let t = g.timed(|g| {
                let mut l = g.stream.launch_builder(&f);
                l.arg(&saxpy::A).arg(&dx).arg(&mut y).arg(&n4);
                // SAFETY: the signature of saxpy4; n is a multiple of 4
                unsafe { l.launch(Gpu::config(grid)) }.map(|_| ()).map_err(|e| driver("saxpy4", e))
            })?;
            *slot = Some(y);
            Ok(t)
        },
        {
            let g = gpu.clone();
            move |y| exact(&g.download(y)?, &want)
        },
    );
    Ok(b)
}

pub fn scan(gpu: &Arc<Gpu>, size: Size) -> Result<Bench, String> {
    let n = elements(size);
    let xs: Vec<i32> = (0..n).map(|i| (i as i32).wrapping_mul(7919) % 1000 - 500).collect();
    let want: Vec<i32> = xs
        .iter()
        .scan(0i32, |s, &x| {
            *s = s.wrapping_add(x);
            Some(*s)
        })
        .collect();
    let mut b = Bench::new("scan", format!("n = {n} i32, inclusive +"));
    b.bytes = Some(8.0 * n as f64);
    b.memory_bound = true;
    // integer addition wraps alike in any grouping: exact equality
    let same = |got: &[i32], want: &[i32]| elementwise(got, want, |_, g: i32, w: i32| g == w);
    let p = Arc::new(
        accelerate::compile_with(|v: Acc<Vector<i32>>| v.scanl1(|a, b| a + b), cuda())
            .map_err(|e| e.to_string())?,
    );
    let xa = Vector::from_elems(xs.clone());
    let w = want.clone();
    add_ours(&mut b, move || p.run(&xa), move |r: &Vector<i32>| same(&r.to_vec(), &w));

    const TILE: usize = 256 * 8;
    let tiles = n.div_ceil(TILE);
    let dx = gpu.upload(&xs)?;
    let sums = gpu.zeros::<i32>(tiles)?;
    let (reduce, across, down) =
        (gpu.function("scan_reduce")?, gpu.function("scan_tiles")?, gpu.function("scan_down")?);
    let g = gpu.clone();
    b.variant(
        "cuda-hand",
        move |slot: &mut Option<CudaSlice<i32>>| {
            let mut y = reuse(slot, || g.zeros::<i32>(n))?;
            let mut sums = sums.clone();
            let (nn, count) = (n as i64, tiles as i32);
            let t = g.timed(|g| {
                let mut l = g.stream.launch_builder(&reduce);
                l.arg(&dx).arg(&nn).arg(&mut sums);
                // SAFETY: the signatures of the three scan kernels
                unsafe { l.launch(Gpu::config(tiles as u32)) }.map_err(|e| driver("scan_reduce", e))?;
                let mut l = g.stream.launch_builder(&across);
                l.arg(&mut sums).arg(&count);
                unsafe { l.launch(Gpu::config(1)) }.map_err(|e| driver("scan_tiles", e))?;
                let mut l = g.stream.launch_builder(&down);
                l.arg(&dx).arg(&nn).arg(&sums).arg(&mut y);
                unsafe { l.launch(Gpu::config(tiles as u32)) }.map_err(|e| driver("scan_down", e))?;
                Ok(())
            })?;
            *slot = Some(y);
            Ok(t)
        },
        {
            let g = gpu.clone();
            move |y| same(&g.download(y)?, &want)
        },
    );
    Ok(b)
}

pub fn blackscholes(gpu: &Arc<Gpu>, size: Size) -> Result<Bench, String> {
    let n = size.pick(1 << 10, 1 << 20, 1 << 26);
    let o = bs::random_options(n);
    let mut want = bs::Prices { call: vec![0.0; n], put: vec![0.0; n] };
    bs::blackscholes_seq(&o, &mut want);
    let mut b = Bench::new("blackscholes", format!("n = {n} options (f32)"));
    b.bytes = Some(20.0 * n as f64);
    b.memory_bound = true;
    let o = Arc::new(o);
    let want = Arc::new(want);
    let check = {
        let (o, w) = (o.clone(), want.clone());
        move |got: &bs::Prices| bs::check(got, &w, &o)
    };
    let p = Arc::new(accelerate::compile_with(bs::program, cuda()).map_err(|e| e.to_string())?);
    let input: Vector<(f32, f32, f32)> = (0..n).map(|i| (o.price[i], o.strike[i], o.years[i])).collect();
    let c = check.clone();
    add_ours(
        &mut b,
        move || p.run(&input),
        move |r: &Vector<(f32, f32)>| {
            let (call, put) = r.to_vec().into_iter().unzip();
            c(&bs::Prices { call, put })
        },
    );

    let (ds, dk, dt) = (gpu.upload(&o.price)?, gpu.upload(&o.strike)?, gpu.upload(&o.years)?);
    let f = gpu.function("blackscholes")?;
    let g = gpu.clone();
    let grid = gpu.grid(n);
    type Out = (CudaSlice<f32>, CudaSlice<f32>);
    b.variant(
        "cuda-hand",
        move |slot: &mut Option<Out>| {
            let (mut call, mut put) = reuse(slot, || Ok((g.zeros::<f32>(n)?, g.zeros::<f32>(n)?)))?;
            let nn = n as i64;
            let t = g.timed(|g| {
                let mut l = g.stream.launch_builder(&f);
                l.arg(&ds)
                    .arg(&dk)
                    .arg(&dt)
                    .arg(&mut call)
                    .arg(&mut put)
                    .arg(&RISKFREE)
                    .arg(&VOLATILITY)
                    .arg(&nn);
                // SAFETY: the signature of blackscholes
                unsafe { l.launch(Gpu::config(grid)) }.map(|_| ()).map_err(|e| driver("blackscholes", e))
            })?;
            *slot = Some((call, put));
            Ok(t)
        },
        {
            let g = gpu.clone();
            move |(call, put): &Out| check(&bs::Prices { call: g.download(call)?, put: g.download(put)? })
        },
    );
    Ok(b)
}

pub fn nbody(gpu: &Arc<Gpu>, size: Size) -> Result<Bench, String> {
    let n = size.pick(67, 2048, 32768);
    let init = nbody::initial_bodies(n);
    let mut want = init.clone();
    nbody::step_seq(&init, &mut want);
    let mut b = Bench::new("nbody", format!("n = {n} bodies, one step"));
    b.flops = Some(20.0 * (n * n) as f64);
    let check = nbody::checker(&init, &want);
    let p = Arc::new(accelerate::compile_with(nbody::program, cuda()).map_err(|e| e.to_string())?);
    let input = Vector::from_elems(init.clone());
    let c = check.clone();
    add_ours(&mut b, move || p.run(&input), move |r: &Vector<Body>| c(&r.to_vec()));

    let bodies: Vec<[f32; 4]> = init.iter().map(|b| [b.pos.x, b.pos.y, b.pos.z, b.mass]).collect();
    let vels: Vec<[f32; 4]> = init.iter().map(|b| [b.vel.x, b.vel.y, b.vel.z, 0.0]).collect();
    let flat = |v: &[[f32; 4]]| v.iter().flatten().copied().collect::<Vec<f32>>();
    let (db, dv) = (gpu.upload(&flat(&bodies))?, gpu.upload(&flat(&vels))?);
    let f = gpu.function("nbody_step")?;
    let g = gpu.clone();
    let grid = gpu.grid(n);
    type Out = (CudaSlice<f32>, CudaSlice<f32>);
    b.variant(
        "cuda-hand",
        move |slot: &mut Option<Out>| {
            let (mut bo, mut vo) = reuse(slot, || Ok((g.zeros::<f32>(4 * n)?, g.zeros::<f32>(4 * n)?)))?;
            let nn = n as i32;
            let t = g.timed(|g| {
                let mut l = g.stream.launch_builder(&f);
                l.arg(&db).arg(&dv).arg(&mut bo).arg(&mut vo).arg(&nn).arg(&nbody::EPS2).arg(&nbody::DT);
                // SAFETY: the signature of nbody_step (float4 arrays as
                // 4 n floats)
                unsafe { l.launch(Gpu::config(grid)) }.map(|_| ()).map_err(|e| driver("nbody_step", e))
            })?;
            *slot = Some((bo, vo));
            Ok(t)
        },
        {
            let g = gpu.clone();
            move |(bo, vo): &Out| {
                let (bo, vo) = (g.download(bo)?, g.download(vo)?);
                let got: Vec<Body> = (0..n)
                    .map(|i| Body {
                        pos: V3 { x: bo[4 * i], y: bo[4 * i + 1], z: bo[4 * i + 2] },
                        vel: V3 { x: vo[4 * i], y: vo[4 * i + 1], z: vo[4 * i + 2] },
                        mass: bo[4 * i + 3],
                    })
                    .collect();
                check(&got)
            }
        },
    );
    Ok(b)
}

/// The hand-written kernels' CUDA C (for the NVRTC test).
pub const KERNELS: &str = include_str!("kernels.cu");

/// A GPU benchmark's inputs, reference and variants on a device.
pub type GpuBench = fn(&Arc<Gpu>, Size) -> Result<Bench, String>;

/// Every GPU benchmark, in the order they run (the copy first: the others'
/// bandwidth is reported as a fraction of its).
pub const ALL: &[(&str, GpuBench)] = &[
    ("copy", copy),
    ("dotp", dotp),
    ("saxpy", saxpy),
    ("scan", scan),
    ("blackscholes", blackscholes),
    ("nbody", nbody),
];

//! Dense matrix times vector, f32, written two ways: flat, as a user of a
//! flat array language must (`replicate` the vector over the rows,
//! `zip_with`, `fold`), and nested, as one would write it first (a
//! `generate` over the rows of the dot product of each row with the
//! vector: nested data parallelism, flattened by the lifting
//! transformation). The two must cost the same: the lifted program is the
//! flat one (`tests/nested.rs` checks that they compile to the same
//! kernels). Memory-bound at the large size (4096 x 4096, 64 MiB). The
//! Python peers (`crate::peers`, `peers/bench_matvec.py`): `numpy`
//! (`m @ v`, BLAS's `sgemv`), `numba` (one row per `prange` iteration,
//! in eight running sums),
//! `jax` (`jax.jit(jnp.matmul)`) and `scipy` (BLAS's `sgemv`).

use super::add_accelerate_variants;
use crate::check::{reassociated_sum_tolerance, within};
use crate::harness::{value, Bench, Size};
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::rng::{signed_f32s, SEED_A, SEED_B};
use rayon::prelude::*;
use std::sync::Arc;

pub fn extent(size: Size) -> usize {
    size.pick(37, 512, 4096)
}

/// The flat form.
pub fn flat(m: Acc<Matrix<f32>>, v: Acc<Vector<f32>>) -> Acc<Vector<f32>> {
    let (rows, _) = unindex2(m.shape());
    let vs = v.replicate(any_dims::<Z>().fixed(rows).all());
    m.zip_with(&vs, |x, y| x * y).fold(0.0, |s, t| s + t)
}

/// The nested form: each element is the dot product of a row.
pub fn nested(m: Acc<Matrix<f32>>, v: Acc<Vector<f32>>) -> Acc<Vector<f32>> {
    let (rows, _) = unindex2(m.shape());
    generate(index1(rows), |i| {
        let row = m.slice(any_dims::<Z>().fixed(unindex1(i)).all());
        row.zip_with(&v, |x, y| x * y).fold(0.0, |s, t| s + t).the()
    })
}

fn matvec_seq(m: &[f32], v: &[f32]) -> Vec<f32> {
    m.chunks(v.len().max(1)).map(|r| r.iter().zip(v).map(|(x, y)| x * y).sum()).collect()
}

fn matvec_rayon(m: &[f32], v: &[f32]) -> Vec<f32> {
    m.par_chunks(v.len().max(1)).map(|r| r.iter().zip(v).map(|(x, y)| x * y).sum()).collect()
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let n = extent(size);
    let m = Arc::new(signed_f32s(n * n, SEED_A));
    let v = Arc::new(signed_f32s(n, SEED_B));
    let want = matvec_seq(&m, &v);
    // every variant sums each row in its own order: each row's result is
    // within gamma_n * sum |m_ij v_j| of the exact one
    let tols: Vec<f64> = m
        .chunks(n.max(1))
        .map(|r| {
            let abs: f64 = r.iter().zip(v.iter()).map(|(&x, &y)| (x as f64 * y as f64).abs()).sum();
            reassociated_sum_tolerance(n, abs, f32::EPSILON as f64)
        })
        .collect();
    let tols = Arc::new(tols);
    let check = {
        let (want, tols) = (want.clone(), tols.clone());
        move |got: &[f32]| -> Result<(), String> {
            if got.len() != want.len() {
                return Err(format!("{} rows, expected {}", got.len(), want.len()));
            }
            for ((&g, &w), &t) in got.iter().zip(&want).zip(tols.iter()) {
                within(g as f64, w as f64, t)?;
            }
            Ok(())
        }
    };
    let mut b = Bench::new("matvec", format!("{n} x {n} f32"));
    b.bytes = Some(4.0 * (n * n + 2 * n) as f64);
    b.flops = Some(2.0 * (n * n) as f64);
    b.memory_bound = size == Size::Large;

    let ma = Array::from_vec(Snoc(Snoc(Z, n as i64), n as i64), m.to_vec()).map_err(|e| e.to_string())?;
    let va = Vector::from_elems(v.to_vec());
    let (mi, vi) = (ma.clone(), va.clone());
    let c = check.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(flat, config),
        move |p| p.run((&mi, &vi)),
        move |r: &Vector<f32>| c(&r.to_vec()),
    )?;
    let c = check.clone();
    super::add_nested_variant(
        &mut b,
        |config| accelerate::compile_with(nested, config),
        move |p| p.run((&ma, &va)),
        move |r: &Vector<f32>| c(&r.to_vec()),
    )?;
    let (mm, vv) = (m.clone(), v.clone());
    let c = check.clone();
    b.variant("rust-seq", move |s| Ok(value(s, || matvec_seq(&mm, &vv))), move |r: &Vec<f32>| c(r));
    let (mm, vv) = (m.clone(), v.clone());
    let c = check.clone();
    b.variant("rust-rayon", move |s| Ok(value(s, || matvec_rayon(&mm, &vv))), move |r: &Vec<f32>| c(r));
    peers::add(
        &mut b,
        &["numpy", "numba", "jax", "scipy"],
        &[("m.bin", peers::bytes(&m)), ("v.bin", peers::bytes(&v))],
        &[n.to_string()],
        peers::all::<f32>,
        move |r: &Vec<f32>| check(r),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<super::CompileProbe, String> {
    super::probe_compile(|config| accelerate::compile_with(nested, config))
}

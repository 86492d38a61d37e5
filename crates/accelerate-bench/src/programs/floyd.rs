//! Floyd-Warshall all-pairs shortest paths on a dense 1024 x 1024 matrix
//! of `i32` distances (`accelerate_programs::floyd`): n steps, each
//! relaxing every entry through vertex `k`, n³ = 2^30 additions and
//! minimums in all. Ours is an `awhile` over `k` whose body is a
//! `generate` reading the previous matrix by indexing (Accelerate's own
//! example's formulation); the hand-written versions relax the matrix in
//! place, row by row against a copy of row `k` (a vectorised loop), the
//! parallel one in blocks of rows on rayon's pool at each step. The
//! matrix (4 MiB) stays in the last-level cache, so each step is bound by
//! the cache's bandwidth and the cost of starting a step, not by memory.

use super::{add_accelerate_variants, probe_compile, CompileProbe};
use crate::check::elementwise;
use crate::harness::{value, Bench, Size};
use crate::native::native_fn;
use crate::peers;
use accelerate::prelude::*;
use accelerate_programs::floyd::{floyd_ref, floyd_warshall, graph, relax_row};
use accelerate_programs::rng::SEED_A;
use rayon::prelude::*;
use std::sync::Arc;

/// The vertices: at the large size n³ ≈ 10^9 relaxations, a quarter of a
/// second sequentially (the row loop vectorises), several seconds for the
/// slower variants; a larger n would make a run of the suite minutes
/// longer on a small machine without showing anything new.
pub fn vertices(size: Size) -> usize {
    size.pick(19, 256, 1024)
}

/// The Accelerate program as a function of its array.
pub fn program(d: Acc<Matrix<i32>>) -> Acc<Matrix<i32>> {
    floyd_warshall(&d)
}

/// Relaxations per rayon task, at least: 32 Ki take several
/// microseconds, many times a task's cost. A step is small (n² relaxations:
/// 64 Ki at n = 256, where this gives one task per core; 1 Mi at n = 1024,
/// 32 tasks), and a finer split would pay more in scheduling than the
/// step costs.
const RELAXATIONS_PER_TASK: usize = 1 << 15;

native_fn! {
    /// The reference's row relaxation, compiled for this CPU's vector unit.
    fn relax_row_native(row: &mut [i32], dik: i32, row_k: &[i32]) {
        relax_row(row, dik, row_k)
    }
}

/// Parallel: in place, each step's rows in blocks on rayon's pool, all
/// reading a copy of row `k` made before the step.
pub fn floyd_rayon(d: &mut [i32], n: usize) {
    let rows_per_task = (RELAXATIONS_PER_TASK / n.max(1)).max(1);
    let mut row_k = vec![0i32; n];
    for k in 0..n {
        row_k.copy_from_slice(&d[k * n..(k + 1) * n]);
        let row_k = &row_k;
        d.par_chunks_mut(n * rows_per_task).for_each(|block| {
            for row in block.chunks_exact_mut(n) {
                let dik = row[k];
                relax_row_native(row, dik, row_k);
            }
        });
    }
}

pub fn bench(size: Size) -> Result<Bench, String> {
    let n = vertices(size);
    let g = Arc::new(graph(n, SEED_A));
    let mut want = g.to_vec();
    floyd_ref(&mut want, n);
    // integers, no overflow (`INF + INF < i32::MAX`): exact
    let check = {
        let want = Arc::new(want);
        move |got: &[i32]| elementwise(got, &want, |_, g, w| g == w)
    };

    let mut b = Bench::new("floyd", format!("{n} x {n} i32, {n} steps"));
    let ga = Array::from_vec(Snoc(Snoc(Z, n as i64), n as i64), g.to_vec()).map_err(|e| e.to_string())?;
    let c = check.clone();
    add_accelerate_variants(
        &mut b,
        |config| accelerate::compile_with(program, config),
        move |p| p.run(&ga),
        move |r: &Matrix<i32>| c(&r.to_vec()),
    )?;
    let (gm, c) = (g.clone(), check.clone());
    b.variant(
        "rust-seq",
        move |s| {
            Ok(value(s, || {
                let mut d = gm.to_vec();
                floyd_ref(&mut d, n);
                d
            }))
        },
        move |r: &Vec<i32>| c(r),
    );
    let (gm, c) = (g.clone(), check.clone());
    b.variant(
        "rust-rayon",
        move |s| {
            Ok(value(s, || {
                let mut d = gm.to_vec();
                floyd_rayon(&mut d, n);
                d
            }))
        },
        move |r: &Vec<i32>| c(r),
    );
    peers::add(
        &mut b,
        &["numpy", "numba", "jax", "scipy"],
        &[("graph.bin", peers::bytes(&g))],
        &[n.to_string()],
        peers::all::<i32>,
        move |r: &Vec<i32>| check(r),
    )?;
    Ok(b)
}

pub fn compile_probe(_size: Size) -> Result<CompileProbe, String> {
    probe_compile(|config| accelerate::compile_with(program, config))
}

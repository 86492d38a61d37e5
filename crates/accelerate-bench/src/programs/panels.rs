//! The blocked product that the hand-written parallel versions of
//! `matmul` and `distances` share, as one writes it without BLAS: the
//! second operand packed into panels of `NR` of its columns, and each
//! `MR x NR` tile of the result kept in vector registers while blocks of
//! `KC` terms are added into it, a lane per element of the result. Each
//! element's terms are added in order from 0, so the sums are the
//! sequential reference's to the bit; only the term differs (`Term`).
//! Also the variants of ours that both programs register alike
//! (`add_ours`).

use super::accelerate_configs;
use crate::harness::{fresh, in_place, Bench};
use accelerate::prelude::*;
use rayon::prelude::*;
use std::sync::Arc;

/// The most memory a no-fusion ablation may take: it builds both
/// replicated operands and their terms, three `m x n x k` arrays (12 GiB
/// at the large sizes, where it is left out).
const UNFUSED_LIMIT: usize = 2 << 30;

/// A plain Rust product of `x` and `y` of extents `(m, k, n)` into an
/// `m x n` output.
pub(super) type Plain = fn(&[f32], &[f32], (usize, usize, usize), &mut [f32]);

/// A program of two `f32` matrices.
pub(super) type Program = fn(Acc<Matrix<f32>>, Acc<Matrix<f32>>) -> Acc<Matrix<f32>>;

/// Adds ours and its ablations (`accelerate_configs`) and fast-math mode
/// (docs/semantics.md: the sums reassociated and each term fused into
/// its addition, within the same bounds, which `check` must allow) for
/// `program` of `bench` (`name`) on `x` and `y` of extents `(m, k, n)`;
/// the no-fusion ablation is left out, saying so, where its arrays of
/// `terms` would not fit in memory.
#[allow(clippy::too_many_arguments)]
pub(super) fn add_ours(
    bench: &mut Bench,
    name: &str,
    terms: &str,
    program: Program,
    (x, y): (&Matrix<f32>, &Matrix<f32>),
    (m, k, n): (usize, usize, usize),
    check: impl Fn(&[f32]) -> Result<(), String> + Clone + 'static,
) -> Result<(), String> {
    let unfused = 3 * m * n * k * std::mem::size_of::<f32>();
    let fast = ("accelerate-fast-math", accelerate_configs()[0].1.clone().with_fast_math(true));
    for (variant, config) in accelerate_configs().into_iter().chain([fast]) {
        if variant == "accelerate-no-fusion" && unfused > UNFUSED_LIMIT {
            eprintln!(
                "{name}: {variant} skipped: its two replicated operands and their {terms}, \
                 m x n x k f32 each, take {} MiB",
                unfused >> 20
            );
            continue;
        }
        let prog = accelerate::compile_with(program, config)
            .map_err(|e| format!("{name}, {variant}: compiling: {e}"))?;
        let (x, y, c) = (x.clone(), y.clone(), check.clone());
        bench.variant(
            variant,
            move |slot| fresh(slot, || prog.run((&x, &y))),
            move |r: &Matrix<f32>| c(&r.to_vec()),
        );
    }
    Ok(())
}

/// Rows of a tile of the result kept in registers, and its columns (the
/// width of a panel): 4 x 16 f32 are 8 AVX2 registers (4 AVX-512 ones),
/// with room left for a row of the panel, a broadcast and a term.
pub(super) const MR: usize = 4;
pub(super) const NR: usize = 16;
/// Terms added into a tile between its loads and stores: a panel's 256 x
/// 16 block is 16 KiB, in L1 for the tiles of a row block.
pub(super) const KC: usize = 256;
/// Rows of the result per rayon task: 32 tasks at 1024 rows.
pub(super) const MC: usize = 32;

/// The term that element `(i, j)` sums over `l`, of `a[i][l]` and the
/// second operand's `(l, j)`.
pub(super) trait Term {
    fn term(a: f32, b: f32) -> f32;
}

/// The second operand (`k x n`) as panels of `NR` columns, each `k` rows
/// of `NR` consecutive elements (the last panel padded with zeros), so
/// that a tile reads its panel from consecutive addresses; `fill(l, j0,
/// row)` writes the operand's elements `(l, j0 ..)` into `row`.
pub(super) fn pack(k: usize, n: usize, fill: impl Fn(usize, usize, &mut [f32]) + Sync) -> Vec<f32> {
    let mut packed = vec![0.0f32; n.div_ceil(NR) * k * NR];
    packed.par_chunks_mut((k * NR).max(1)).enumerate().for_each(|(p, panel)| {
        let (j0, cols) = (p * NR, NR.min(n - p * NR));
        for (l, row) in panel.chunks_exact_mut(NR).enumerate() {
            fill(l, j0, &mut row[..cols]);
        }
    });
    packed
}

/// One `R x NR` tile of the result: `c[r][q] += sum over l of
/// T::term(a[r][l], panel[l][q])` for the `kc` rows of the panel block
/// `bp`, or `=` when `first` (the tile's first block, so that the sum
/// starts from 0 as the reference's does). `a` holds the tile's rows
/// `lda` apart, `c` its rows `ldc` apart, of which `cols` columns are
/// written.
#[inline(always)]
#[allow(clippy::too_many_arguments)]
fn tile<const R: usize, T: Term>(
    a: &[f32],
    lda: usize,
    bp: &[f32],
    c: &mut [f32],
    ldc: usize,
    cols: usize,
    first: bool,
) {
    let (panel, _) = bp.as_chunks::<NR>();
    let kc = panel.len();
    let rows: [&[f32]; R] = std::array::from_fn(|r| &a[r * lda..r * lda + kc]);
    let mut acc = [[0.0f32; NR]; R];
    if !first {
        for r in 0..R {
            acc[r][..cols].copy_from_slice(&c[r * ldc..r * ldc + cols]);
        }
    }
    for (l, b) in panel.iter().enumerate() {
        for r in 0..R {
            let x = rows[r][l];
            for q in 0..NR {
                acc[r][q] += T::term(x, b[q]);
            }
        }
    }
    for r in 0..R {
        c[r * ldc..r * ldc + cols].copy_from_slice(&acc[r][..cols]);
    }
}

/// The rows of the result in `c` (`rows x n`) from the same rows of the
/// first operand in `a` (`rows x k`) and the packed second: for each block
/// of `KC` of the shared dimension, each panel, each tile of `MR` rows
/// (`tile`; single rows at the end), so that a panel's block is read from
/// L1 by all the tiles of the rows. Inlined into each program's
/// `native_fn!`, which compiles it for the processor's vectors.
#[inline(always)]
pub(super) fn row_block<T: Term>(a: &[f32], packed: &[f32], k: usize, n: usize, c: &mut [f32]) {
    let rows = c.len() / n;
    for l0 in (0..k).step_by(KC) {
        let kc = KC.min(k - l0);
        for p in 0..n.div_ceil(NR) {
            let bp = &packed[(p * k + l0) * NR..(p * k + l0 + kc) * NR];
            let (j0, cols) = (p * NR, NR.min(n - p * NR));
            let mut i = 0;
            while i + MR <= rows {
                tile::<MR, T>(&a[i * k + l0..], k, bp, &mut c[i * n + j0..], n, cols, l0 == 0);
                i += MR;
            }
            while i < rows {
                tile::<1, T>(&a[i * k + l0..], k, bp, &mut c[i * n + j0..], n, cols, l0 == 0);
                i += 1;
            }
        }
    }
}

/// The `m x n` result into `out` from the `m x k` first operand `a` and
/// the packed second, blocks of `MC` rows on rayon's pool, each by
/// `rows` (a program's `native_fn!` around `row_block`); zeros when
/// `k` or `n` is 0.
pub(super) fn product(
    a: &[f32],
    packed: impl FnOnce() -> Vec<f32>,
    (m, k, n): (usize, usize, usize),
    out: &mut [f32],
    rows: fn(&[f32], &[f32], usize, usize, &mut [f32]),
) {
    if k == 0 || n == 0 {
        out[..m * n].fill(0.0);
        return;
    }
    let packed = packed();
    out[..m * n]
        .par_chunks_mut(MC * n)
        .zip(a.par_chunks(MC * k))
        .for_each(|(c, a)| rows(a, &packed, k, n, c));
}

/// The plain Rust variants of a product of `x` and `y` of extents `(m, k,
/// n)`: each of `plain` (a variant's name and its function into an `m x
/// n` output allocated once), checked by `check`.
pub(super) fn add_plain(
    bench: &mut Bench,
    (x, y): (&Arc<Vec<f32>>, &Arc<Vec<f32>>),
    (m, k, n): (usize, usize, usize),
    plain: [(&'static str, Plain); 2],
    check: impl Fn(&[f32]) -> Result<(), String> + Clone + 'static,
) {
    for (variant, f) in plain {
        let (x, y, c) = (x.clone(), y.clone(), check.clone());
        bench.variant(
            variant,
            move |s| Ok(in_place(s, || vec![0.0f32; m * n], |out| f(&x, &y, (m, k, n), out))),
            move |out: &Vec<f32>| c(out),
        );
    }
}

//! Sparse-matrix vector multiplication (ICFP'13 §5.9): a matrix in
//! compressed sparse row (CSR) format times a dense vector.
//!
//! ```sh
//! cargo run --release --example smvm -- --check                     # compare with plain Rust
//! cargo run --release --example smvm -- --size 100000 --nnz-per-row 30
//! ```
//!
//! A CSR matrix is three vectors: the non-zero values row after row, the
//! column of each, and the row pointer (`nrows + 1` offsets: row `r` is
//! `row_ptr[r] .. row_ptr[r + 1]`). The program reads the vector at the
//! column of every non-zero (a gather, `backpermute` through the column
//! indices), multiplies with `zip_with`, and sums each row with a
//! segmented reduction: `fold_seg_offsets` takes the row pointer itself,
//! `fold_seg` the row lengths. With fusion (as in the paper) the whole
//! program is one segmented reduction; the interpreter makes the
//! intermediate arrays.
//!
//! The random matrix has empty rows (their result is the seed, 0), so the
//! segmented reductions meet empty segments.

use accelerate::prelude::*;
use std::process::exit;
use std::time::Instant;

/// The products of the non-zeros with the vector entries of their columns.
fn products(col_idx: Acc<Vector<i64>>, vals: Acc<Vector<f32>>, x: Acc<Vector<f32>>) -> Acc<Vector<f32>> {
    // gather: xs[k] = x[col_idx[k]] (what the library's `gather(col_idx, x)` does)
    let xs = x.backpermute(col_idx.shape(), move |ix| index1(col_idx.index(ix)));
    vals.zip_with(xs, |a, b| a * b)
}

/// `y = A x` with `A` given by its CSR row pointer.
fn smvm_offsets(
    row_ptr: Acc<Vector<i64>>,
    col_idx: Acc<Vector<i64>>,
    vals: Acc<Vector<f32>>,
    x: Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    products(col_idx, vals, x).fold_seg_offsets(0.0, |a, b| a + b, row_ptr)
}

/// `y = A x` with the rows given by their lengths.
fn smvm_lengths(
    row_len: Acc<Vector<i64>>,
    col_idx: Acc<Vector<i64>>,
    vals: Acc<Vector<f32>>,
    x: Acc<Vector<f32>>,
) -> Acc<Vector<f32>> {
    products(col_idx, vals, x).fold_seg(0.0, |a, b| a + b, row_len)
}

/// A CSR matrix on the host.
struct Csr {
    ncols: usize,
    row_ptr: Vec<i64>,
    col_idx: Vec<i64>,
    vals: Vec<f32>,
}

impl Csr {
    fn nrows(&self) -> usize {
        self.row_ptr.len() - 1
    }

    /// The same product in plain Rust: each row summed left to right in
    /// f32 from 0, the order in which the interpreter folds a segment.
    fn mul_ref(&self, x: &[f32]) -> Vec<f32> {
        (0..self.nrows())
            .map(|r| {
                let (lo, hi) = (self.row_ptr[r] as usize, self.row_ptr[r + 1] as usize);
                (lo..hi).fold(0.0f32, |acc, k| acc + self.vals[k] * x[self.col_idx[k] as usize])
            })
            .collect()
    }
}

/// Deterministic pseudo-random numbers (xorshift64*).
struct Rng(u64);

impl Rng {
    fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        *s ^= *s >> 12;
        *s ^= *s << 25;
        *s ^= *s >> 27;
        s.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// In [0, n).
    fn below(&mut self, n: usize) -> usize {
        ((self.next_u64() >> 11) % n as u64) as usize
    }

    /// An exactly representable f32 in [-1, 1).
    fn next_f32(&mut self) -> f32 {
        (self.next_u64() >> 40) as f32 / (1u32 << 24) as f32 * 2.0 - 1.0
    }
}

/// A random `nrows x ncols` matrix: about one row in eight is empty, the
/// others have between 1 and `2 * per_row - 1` non-zeros (at most
/// `ncols`) in distinct, ascending columns.
fn random_csr(nrows: usize, ncols: usize, per_row: usize, seed: u64) -> Csr {
    let mut rng = Rng(seed | 1);
    let mut csr = Csr { ncols, row_ptr: vec![0], col_idx: Vec::new(), vals: Vec::new() };
    let mut cols = Vec::new();
    for _ in 0..nrows {
        let len = if rng.below(8) == 0 { 0 } else { (1 + rng.below(2 * per_row.max(1) - 1)).min(ncols) };
        cols.clear();
        while cols.len() < len {
            let c = rng.below(ncols) as i64;
            if !cols.contains(&c) {
                cols.push(c);
            }
        }
        cols.sort_unstable();
        for &c in &cols {
            csr.col_idx.push(c);
            csr.vals.push(rng.next_f32());
        }
        csr.row_ptr.push(csr.col_idx.len() as i64);
    }
    csr
}

struct Args {
    rows: usize,
    cols: Option<usize>,
    per_row: usize,
    check: bool,
}

fn usage() -> ! {
    eprintln!("usage: smvm [--check] [--size ROWS] [--cols COLS] [--nnz-per-row K]");
    exit(2)
}

fn parse_args() -> Args {
    let mut args = Args { rows: 50_000, cols: None, per_row: 10, check: false };
    let mut it = std::env::args().skip(1);
    let number = |it: &mut std::iter::Skip<std::env::Args>| -> usize {
        it.next().and_then(|s| s.parse().ok()).unwrap_or_else(|| usage())
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--check" => args.check = true,
            "--size" | "-n" | "--rows" => args.rows = number(&mut it),
            "--cols" => args.cols = Some(number(&mut it)),
            "--nnz-per-row" => args.per_row = number(&mut it),
            "--help" | "-h" => usage(),
            _ => {
                eprintln!("smvm: unknown argument {a:?}");
                usage()
            }
        }
    }
    if args.cols == Some(0) || args.per_row == 0 {
        eprintln!("smvm: the matrix needs at least one column and one non-zero per row on average");
        usage()
    }
    args
}

/// The positions whose bits differ, with the first few printed.
fn compare(what: &str, got: &[f32], want: &[f32]) -> usize {
    let mut bad = got.len().abs_diff(want.len());
    if bad > 0 {
        eprintln!("check {what}: MISMATCH: {} rows, the plain-Rust reference has {}", got.len(), want.len());
    }
    for (r, (g, w)) in got.iter().zip(want).enumerate() {
        if g.to_bits() != w.to_bits() {
            if bad < 10 {
                eprintln!("check {what}: MISMATCH at row {r}: got {g}, plain Rust gives {w}");
            }
            bad += 1;
        }
    }
    bad
}

fn ms(d: std::time::Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let Args { rows, cols, per_row, check } = parse_args();
    let csr = random_csr(rows, cols.unwrap_or(rows.max(1)), per_row, 0x9e37_79b9_7f4a_7c15);
    let nnz = csr.vals.len();
    let empty = csr.row_ptr.windows(2).filter(|w| w[0] == w[1]).count();
    let mut rng = Rng(0xd1b5_4a32_d192_ed03);
    let xs_host: Vec<Vec<f32>> = (0..2).map(|_| (0..csr.ncols).map(|_| rng.next_f32()).collect()).collect();

    let row_ptr = Vector::from_elems(csr.row_ptr.clone());
    let row_len = Vector::from_elems(csr.row_ptr.windows(2).map(|w| w[1] - w[0]).collect());
    let col_idx = Vector::from_elems(csr.col_idx.clone());
    let vals = Vector::from_elems(csr.vals.clone());

    println!("smvm: {rows} x {} matrix, {nnz} non-zeros, {empty} empty rows", csr.ncols);

    // Each program is converted once and run on two vectors.
    let t = Instant::now();
    let by_offsets = accelerate::compile(smvm_offsets)?;
    let by_lengths = accelerate::compile(smvm_lengths)?;
    let t_compile = t.elapsed();
    println!("  accelerate::compile (both)   {:>9.2} ms", ms(t_compile));

    let mut results = Vec::new();
    for (k, x_host) in xs_host.iter().enumerate() {
        let x = Vector::from_elems(x_host.clone());
        let t = Instant::now();
        let y1 = by_offsets.run((&row_ptr, &col_idx, &vals, &x))?;
        let t1 = t.elapsed();
        let t = Instant::now();
        let y2 = by_lengths.run((&row_len, &col_idx, &vals, &x))?;
        let t2 = t.elapsed();
        println!(
            "  vector {k}: fold_seg_offsets {:>9.2} ms ({:.3} µs per non-zero), fold_seg {:>9.2} ms",
            ms(t1),
            t1.as_secs_f64() * 1e6 / nnz.max(1) as f64,
            ms(t2)
        );
        results.push((y1.to_vec(), y2.to_vec()));
    }

    if check {
        let mut bad = 0;
        for (k, (x_host, (y1, y2))) in xs_host.iter().zip(&results).enumerate() {
            let t = Instant::now();
            let want = csr.mul_ref(x_host);
            let t_ref = t.elapsed();
            bad += compare(&format!("vector {k}, fold_seg_offsets"), y1, &want);
            bad += compare(&format!("vector {k}, fold_seg"), y2, &want);
            if bad == 0 {
                println!(
                    "check: vector {k}: both results are bit-identical to the plain-Rust CSR loop ({:.2} ms)",
                    ms(t_ref)
                );
            }
        }
        if bad > 0 {
            eprintln!("check: {bad} rows differ from the plain-Rust reference");
            exit(1);
        }
    }
    Ok(())
}

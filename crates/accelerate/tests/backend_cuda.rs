//! The CUDA backend against the reference interpreter, on both sides of
//! each skeleton's strategy switches: folds by a block per row and in two
//! passes, scans by a block per row and by decoupled look-back, segmented
//! folds by a warp per segment, and permutes by native atomics, by
//! compare-and-swap loops and under per-element locks. Results must be
//! identical to the bit (the data make every reduction exact in any
//! order; non-commutative operators are associative), errors included.
//!
//! Runs on the GPU, or on the emulator with
//! `ACCELERATE_CUDA_DEVICE=emulator` (as CI runs it); skipped, saying why,
//! where neither can run. (`tests/backend_cpu.rs` runs the CPU backend's
//! comparisons on this backend too, under `ACCELERATE_BACKEND=cuda`.)

#![cfg(feature = "cuda")]

use accelerate::prelude::*;
use accelerate::{run_with, Backend, Config};

fn cuda() -> Option<Config> {
    match accelerate::backend::cuda::unavailable() {
        None => Some(Config::default().with_backend(Backend::Cuda)),
        Some(why) => {
            eprintln!("skipped: the CUDA backend is unavailable here ({why}); ACCELERATE_CUDA_DEVICE=emulator runs it on the host");
            None
        }
    }
}

/// An error's message with the values of the first index it names left
/// out (`index [_] is out of bounds ...`): where several elements fail,
/// which one is reported may differ between backends
/// (docs/semantics.md, "Errors"), while the operation, its source line
/// and the shape at fault may not. On a GPU the first thread to claim the
/// error record wins, which is not the first element in row-major order.
fn error_site(message: &str) -> String {
    match (message.find('['), message.find(']')) {
        (Some(open), Some(close)) if open < close => {
            format!("{}[_]{}", &message[..open], &message[close + 1..])
        }
        _ => message.to_string(),
    }
}

/// Runs `build` on the interpreter and on the CUDA backend and checks
/// that they agree: the same values, or errors of the same operation,
/// kind and shapes (`error_site`).
fn agree<A: Arrays + std::fmt::Debug + PartialEq>(what: &str, build: impl Fn() -> Acc<A>) {
    let Some(cuda) = cuda() else { return };
    let interp = Config::default().with_backend(Backend::Interpreter);
    let (want, got) = {
        let p = build();
        (run_with(&p, &interp), run_with(&p, &cuda))
    };
    match (&want, &got) {
        (Ok(w), Ok(g)) => assert_eq!(w, g, "{what}"),
        (Err(w), Err(g)) => assert_eq!(error_site(&w.to_string()), error_site(&g.to_string()), "{what}"),
        _ => panic!("{what}: interpreter {want:?}, cuda {got:?}"),
    }
}

/// Composition of affine maps, first `p` then `q`: associative, not
/// commutative, so a wrong order or a lost element shows.
fn affine(p: &Exp<(i64, i64)>, q: &Exp<(i64, i64)>) -> Exp<(i64, i64)> {
    lift((p.fst() * q.fst(), p.snd() * q.fst() + q.snd()))
}

fn maps(rows: usize, n: usize) -> Array<DIM2, (i64, i64)> {
    let data = (0..rows * n).map(|i| (3 + (i % 5) as i64, (i as i64 * 7919) % 1000 - 500)).collect();
    Array::from_vec(dim2(rows, n), data).unwrap()
}

fn ints(n: usize) -> Vector<i64> {
    Vector::from_elems((0..n as i64).map(|i| (i * 7919) % 2001 - 1000).collect())
}

#[test]
fn folds_by_rows_and_in_two_passes_agree() {
    // few long rows take two passes; many rows a block each; rows of at
    // most 128 elements a warp each
    for (rows, n) in
        [(1, 0), (1, 1), (1, 300), (1, 10_000), (3, 20_000), (2, 2049), (40, 33), (7, 0), (50, 128), (9, 129)]
    {
        agree(&format!("sum of {rows}x{n}"), || {
            use_array(Array::from_vec(dim2(rows, n), ints(rows * n).to_vec()).unwrap())
                .fold(5i64, |a, b| a + b)
        });
        agree(&format!("affine fold of {rows}x{n}"), || use_array(maps(rows, n)).fold((1, 0), affine));
        if n > 0 {
            agree(&format!("affine fold1 of {rows}x{n}"), || use_array(maps(rows, n)).fold1(affine));
        }
    }
}

#[test]
fn scans_by_rows_and_by_decoupled_look_back_agree() {
    // a row longer than one tile (256) scans by look-back when the rows
    // are fewer than the blocks the device runs
    for (rows, n) in [(1, 255), (1, 256), (1, 257), (1, 5000), (2, 3000), (30, 300), (3, 0)] {
        let m = || use_array(maps(rows, n));
        agree(&format!("scanl of {rows}x{n}"), || m().scanl((1, 7), affine));
        agree(&format!("scanr of {rows}x{n}"), || m().scanr((1, 7), affine));
        if n > 0 {
            agree(&format!("scanl1 of {rows}x{n}"), || m().scanl1(affine));
            agree(&format!("scanr1 of {rows}x{n}"), || m().scanr1(affine));
        }
        agree(&format!("integer scanl of {rows}x{n}"), || {
            use_array(Array::from_vec(dim2(rows, n), ints(rows * n).to_vec()).unwrap())
                .scanl(3i64, |a, b| a + b)
        });
    }
}

#[test]
fn segmented_folds_of_every_length_agree() {
    let lengths: Vec<i64> = (0..200).map(|i| [0, 1, 31, 32, 33, 100, 3][i % 7]).collect();
    let n: i64 = lengths.iter().sum();
    for rows in [1, 3] {
        agree(&format!("fold_seg over {rows} rows"), || {
            use_array(maps(rows, n as usize)).fold_seg(
                (1, 0),
                affine,
                use_array(Vector::from_elems(lengths.clone())),
            )
        });
    }
}

#[test]
fn permutes_by_atomics_compare_and_swap_and_locks_agree() {
    let n = 20_000usize;
    let bins = 37i64;
    let to_bin = move |ix: &Exp<DIM1>| just(index1(unindex1(ix) % bins));
    let defaults_i32 = || use_array(Vector::from_elems(vec![1i32; bins as usize]));
    // native atomicAdd
    agree("i32 histogram", || {
        let xs = use_array(Vector::from_elems((0..n as i32).map(|i| i % 13).collect::<Vec<_>>()));
        xs.permute(|a, b| a + b, defaults_i32(), to_bin)
    });
    // compare-and-swap on a 32-bit word (f32 +, exact on small integers)
    agree("f32 histogram", || {
        let xs = use_array(Vector::from_elems((0..n).map(|i| (i % 13) as f32).collect::<Vec<_>>()));
        xs.permute(|a, b| a + b, use_array(Vector::from_elems(vec![0.5f32; bins as usize])), to_bin)
    });
    // compare-and-swap within the word that holds a byte
    agree("u8 maximum", || {
        let xs = use_array(Vector::from_elems((0..n).map(|i| (i * 31 % 251) as u8).collect::<Vec<_>>()));
        xs.permute(|a, b| a.max(b), use_array(Vector::from_elems(vec![7u8; bins as usize])), to_bin)
    });
    // a tuple element: a lock per destination
    agree("pair sums", || {
        let xs = use_array(Vector::from_elems((0..n as i64).map(|i| (i % 5, 1i64)).collect::<Vec<_>>()));
        let d = use_array(Vector::from_elems(vec![(0i64, 0i64); bins as usize]));
        xs.permute(
            |a: &Exp<(i64, i64)>, b: &Exp<(i64, i64)>| lift((a.fst() + b.fst(), a.snd() + b.snd())),
            d,
            to_bin,
        )
    });
}

#[test]
fn an_error_inside_a_kernel_is_the_interpreters() {
    // one element of many reads outside its source
    agree("out of bounds", || {
        let xs = use_array(ints(10_000));
        let ys = use_array(ints(100));
        xs.map(move |x| ys.index(index1((x + 1000i64) / 20i64)))
    });
    agree("division by zero in a fold", || {
        let xs = use_array(ints(5_000));
        xs.fold(1i64, |a, b| a + 100i64 / (b - 500i64))
    });
}

#[test]
fn loops_and_conditionals_read_their_conditions_from_the_device() {
    agree("awhile", || {
        let xs = use_array(ints(1000));
        awhile(|v| v.fold(0i64, |a, b| a.max(b)).map(|m| m.gt(10i64)), |v| v.map(|x| x / 2i64), xs)
    });
    agree("acond", || {
        let xs = use_array(ints(1000));
        let total = xs.fold(0i64, |a, b| a + b);
        acond(total.the().gt(0i64), xs.map(|x| x + 1i64), xs.map(|x| x - 1i64))
    });
}

#[test]
fn stencils_in_two_dimensions_agree() {
    let m = Array::from_vec(dim2(37, 53), (0..37 * 53).map(|i: i32| i % 17).collect()).unwrap();
    agree("3x3 clamp", || {
        use_array(m.clone()).stencil(
            |p: [[Exp<i32>; 3]; 3]| &p[0][1] + &p[1][0] * 2i32 + &p[1][1] - &p[2][2],
            Boundary::clamp(),
        )
    });
    agree("3x3 mirror", || {
        use_array(m.clone())
            .stencil(|p: [[Exp<i32>; 3]; 3]| &p[0][0] - &p[2][1] + &p[1][2], Boundary::mirror())
    });
    // a fused producer staged in the tiles, a constant boundary, and a
    // second argument with a wider pattern
    agree("stencil2 of a producer and a matrix", || {
        let a = use_array(m.clone()).map(|x| x * 3i32 - 1i32);
        let b = use_array(m.clone());
        a.stencil2(
            Boundary::constant(7i32),
            b,
            Boundary::wrap(),
            |p: [[Exp<i32>; 3]; 3], q: [[Exp<i32>; 5]; 3]| {
                &p[0][2] * 2i32 + &p[2][0] - &q[0][4] + &q[2][0] * &q[1][2]
            },
        )
    });
    // tuple elements, and a matrix smaller than one tile
    let pairs = Array::from_vec(dim2(5, 6), (0..30).map(|i: i32| (i % 7, i % 3)).collect()).unwrap();
    agree("pairs", || {
        use_array(pairs.clone()).stencil(
            |p: [[Exp<(i32, i32)>; 3]; 3]| {
                lift((p[0][0].fst() + p[2][2].snd(), p[1][1].fst() * p[0][2].snd()))
            },
            Boundary::clamp(),
        )
    });
    // an index error inside the producer, read by tiles on the border
    agree("an error in a tile", || {
        let ys = use_array(Vector::from_elems((0..100i32).collect::<Vec<_>>()));
        let a = use_array(m.clone()).map(move |x| ys.index(index1(x.cast::<i64>() * 7i64)));
        a.stencil(|p: [[Exp<i32>; 3]; 3]| &p[1][1] + &p[0][0], Boundary::clamp())
    });
}

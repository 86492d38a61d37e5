//! `permute` (forward permutation) against plain-Rust references: a
//! histogram by `+`, elements dropped by `nothing()`, the defaults kept
//! where nothing lands, sources of rank 2 into targets of rank 1 and 0, and
//! the argument order `combine(new, old)` (src/ir/term.rs).
//!
//! `permute`'s combiner is taken to be associative and commutative, so
//! where several elements land on one target only such combiners are used
//! (wrapping integer `+`); a non-commutative combiner is used only where
//! each target receives at most one element, so that its argument order is
//! checked without depending on the order in which elements arrive.

use accelerate::prelude::*;
use accelerate::run_with;
use proptest::prelude::*;

fn cfg() -> Config {
    Config::from_env().expect("a valid ACCELERATE_* environment")
}

fn int_elems() -> impl Strategy<Value = i32> + Clone {
    prop_oneof![
        1 => Just(i32::MIN),
        1 => Just(i32::MAX),
        1 => Just(0),
        1 => Just(-1),
        6 => any::<i32>(),
    ]
}

fn float_elems() -> impl Strategy<Value = f32> + Clone {
    prop_oneof![
        1 => Just(f32::NAN),
        1 => Just(f32::INFINITY),
        1 => Just(f32::NEG_INFINITY),
        1 => Just(-0.0f32),
        1 => Just(0.0f32),
        3 => any::<f32>(),
        8 => -100.0f32..100.0,
    ]
}

/// Bit-pattern equality that treats every NaN as the same value (IEEE-754
/// does not specify the payload of a NaN result).
fn float_key(x: f32) -> Option<u32> {
    (!x.is_nan()).then_some(x.to_bits())
}

/// A length in `0..=hi`, with 0 and 1 generated often.
fn len(hi: usize) -> impl Strategy<Value = usize> {
    prop_oneof![1 => Just(0usize), 1 => Just(1usize), 4 => 0..=hi]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Counting with `+`: each value in `0..bins` adds one to its bin;
    /// values outside are sent to `nothing()` and dropped.
    #[test]
    fn permute_with_add_counts_a_histogram_and_drops_nothing_targets(
        (bins, vals) in (1usize..=12).prop_flat_map(|b| {
            (Just(b), proptest::collection::vec(-3i64..(b as i64 + 3), 0..=200))
        })
    ) {
        let got = {
            let xs = use_array(Vector::from_elems(vals.clone()));
            let zeros = fill(index1(bins as i64), 0i64);
            let ones = xs.map(|_| constant(1i64));
            let hist = ones.permute(|new, old| new + old, zeros, |ix| {
                let v = xs.index(ix);
                cond(v.ge(0i64).and(v.lt(bins as i64)), just(index1(v)), nothing())
            });
            run_with(&hist, &cfg()).unwrap()
        };
        let mut want = vec![0i64; bins];
        for &v in &vals {
            if (0..bins as i64).contains(&v) {
                want[v as usize] += 1;
            }
        }
        prop_assert_eq!(got.dims(), &[bins]);
        prop_assert_eq!(got.to_vec(), want);
    }

    /// Every target starts from its default; targets that receive nothing
    /// keep it, the others add the (wrapping) sum of what lands there.
    #[test]
    fn permute_keeps_defaults_where_nothing_lands_and_adds_into_the_rest(
        (defaults, src, targets) in len(24).prop_flat_map(|m| {
            let n = len(60);
            (proptest::collection::vec(int_elems(), m), n).prop_flat_map(move |(d, n)| {
                // -1 stands for nothing()
                let t = proptest::collection::vec(-1i64..(m as i64), n);
                (Just(d), proptest::collection::vec(int_elems(), n), t)
            })
        })
    ) {
        let got = {
            let def = use_array(Vector::from_elems(defaults.clone()));
            let xs = use_array(Vector::from_elems(src.clone()));
            let ts = use_array(Vector::from_elems(targets.clone()));
            let r = xs.permute(|new, old| new + old, def, |ix| {
                let t = ts.index(ix);
                t.lt(0i64).select(nothing(), just(index1(t)))
            });
            run_with(&r, &cfg()).unwrap()
        };
        let mut want = defaults.clone();
        for (&x, &t) in src.iter().zip(&targets) {
            if t >= 0 {
                want[t as usize] = want[t as usize].wrapping_add(x);
            }
        }
        prop_assert_eq!(got.to_vec(), want);
    }

    /// A matrix scattered into a vector: column sums, the diagonal left out.
    #[test]
    fn permute_of_a_matrix_into_a_vector_sums_the_off_diagonal_columns(
        (rows, cols, data) in (len(8), len(8)).prop_flat_map(|(r, c)| {
            (Just(r), Just(c), proptest::collection::vec(int_elems(), r * c))
        })
    ) {
        let got = {
            let m = use_array(Array::from_vec(dim2(rows, cols), data.clone()).unwrap());
            let def = fill(index1(cols as i64), 0i32);
            let r = m.permute(|new, old| new + old, def, |ix| {
                let (i, j) = unindex2(ix);
                cond(i.eq(&j), nothing(), just(index1(j)))
            });
            run_with(&r, &cfg()).unwrap()
        };
        let mut want = vec![0i32; cols];
        for i in 0..rows {
            for (j, w) in want.iter_mut().enumerate() {
                if i != j {
                    *w = w.wrapping_add(data[i * cols + j]);
                }
            }
        }
        prop_assert_eq!(got.dims(), &[cols]);
        prop_assert_eq!(got.to_vec(), want);
    }

    /// With each target receiving at most one element, a non-commutative
    /// combiner shows the argument order: `combine(new, old)`.
    #[test]
    fn permute_to_distinct_targets_calls_combine_with_new_then_old(
        (src, defaults, targets) in (len(40), 0usize..=10).prop_flat_map(|(n, extra)| {
            let m = n + extra;
            (
                proptest::collection::vec(int_elems(), n),
                proptest::collection::vec(int_elems(), m),
                Just((0..m as i64).collect::<Vec<_>>()).prop_shuffle(),
            )
        })
    ) {
        let n = src.len();
        let targets = targets[..n].to_vec();
        let got = {
            let xs = use_array(Vector::from_elems(src.clone()));
            let def = use_array(Vector::from_elems(defaults.clone()));
            let ts = use_array(Vector::from_elems(targets.clone()));
            let r = xs.permute(|new, old| new * 31 + old, def, |ix| just(index1(ts.index(ix))));
            run_with(&r, &cfg()).unwrap()
        };
        let mut want = defaults.clone();
        for (&x, &t) in src.iter().zip(&targets) {
            let old = want[t as usize];
            want[t as usize] = x.wrapping_mul(31).wrapping_add(old);
        }
        prop_assert_eq!(got.to_vec(), want);
    }

    /// The same on floats (NaN, infinities, -0.0), with `new - old`.
    #[test]
    fn permute_of_floats_to_distinct_targets_computes_new_minus_old(
        (src, defaults, targets) in (len(40), 0usize..=10).prop_flat_map(|(n, extra)| {
            let m = n + extra;
            (
                proptest::collection::vec(float_elems(), n),
                proptest::collection::vec(float_elems(), m),
                Just((0..m as i64).collect::<Vec<_>>()).prop_shuffle(),
            )
        })
    ) {
        let n = src.len();
        let targets = targets[..n].to_vec();
        let got = {
            let xs = use_array(Vector::from_elems(src.clone()));
            let def = use_array(Vector::from_elems(defaults.clone()));
            let ts = use_array(Vector::from_elems(targets.clone()));
            let r = xs.permute(|new, old| new - old, def, |ix| just(index1(ts.index(ix))));
            run_with(&r, &cfg()).unwrap()
        };
        let mut want = defaults.clone();
        for (&x, &t) in src.iter().zip(&targets) {
            want[t as usize] = x - want[t as usize];
        }
        let got: Vec<_> = got.to_vec().into_iter().map(float_key).collect();
        let want: Vec<_> = want.into_iter().map(float_key).collect();
        prop_assert_eq!(got, want);
    }

    /// Every element of a matrix into one rank-0 target: the wrapping total.
    #[test]
    fn permute_into_a_scalar_target_adds_every_element(
        (rows, cols, data) in (len(8), len(8)).prop_flat_map(|(r, c)| {
            (Just(r), Just(c), proptest::collection::vec(int_elems(), r * c))
        }),
        seed in int_elems(),
    ) {
        let got = {
            let m = use_array(Array::from_vec(dim2(rows, cols), data.clone()).unwrap());
            let r = m.permute(|new, old| new + old, unit(seed), |_| just(index0()));
            run_with(&r, &cfg()).unwrap()
        };
        let want = data.iter().fold(seed, |a, &x| a.wrapping_add(x));
        prop_assert_eq!(got.dims(), &[] as &[usize]);
        prop_assert_eq!(got.value(), want);
    }
}

#[test]
fn permute_of_an_empty_source_returns_the_defaults() {
    let xs = use_array(Vector::<i32>::from_elems(vec![]));
    let def = use_array(Vector::from_elems(vec![4, 5, 6]));
    let r = xs.permute(|new, old| new + old, def, |ix| just(ix));
    assert_eq!(run_with(&r, &cfg()).unwrap().to_vec(), vec![4, 5, 6]);
}

#[test]
fn permute_where_every_index_is_nothing_returns_the_defaults() {
    let xs = use_array(Vector::from_elems(vec![1i32, 2, 3]));
    let def = use_array(Vector::from_elems(vec![7, 8]));
    let r = xs.permute(|new, old| new + old, def, |_| nothing());
    assert_eq!(run_with(&r, &cfg()).unwrap().to_vec(), vec![7, 8]);
}

#[test]
fn permute_into_empty_defaults_with_everything_dropped_is_empty() {
    let xs = use_array(Vector::from_elems(vec![1i32, 2, 3]));
    let def = use_array(Vector::<i32>::from_elems(vec![]));
    let r = xs.permute(|new, old| new + old, def, |_| nothing());
    let out = run_with(&r, &cfg()).unwrap();
    assert_eq!(out.dims(), &[0]);
}

#[test]
fn permute_replaces_old_values_when_combine_returns_new() {
    // reverse a vector into a target of the same length
    let xs = use_array(Vector::from_elems(vec![1i64, 2, 3, 4]));
    let def = fill(index1(4i64), -1i64);
    let r = xs.permute(|new, _old| new.clone(), def, |ix| just(index1(3i64 - unindex1(ix))));
    assert_eq!(run_with(&r, &cfg()).unwrap().to_vec(), vec![4, 3, 2, 1]);
}

#[test]
fn permute_of_pairs_combines_each_component() {
    // (count, sum) per bucket: bucket = value mod 3
    let vals = vec![5i32, 3, 9, 4, 7, 0, 8];
    let xs = use_array(Vector::from_elems(vals.clone()));
    let pairs = xs.map(|x| lift((constant(1i32), x)));
    let def = fill(index1(3i64), lift((constant(0i32), constant(100i32))));
    let r = pairs.permute(
        |new, old| {
            let (c1, s1) = new.unlift();
            let (c2, s2) = old.unlift();
            lift((c1 + c2, s1 + s2))
        },
        def,
        |ix| just(index1((xs.index(ix) % 3).cast::<i64>())),
    );
    let got = run_with(&r, &cfg()).unwrap().to_vec();
    let mut want = vec![(0i32, 100i32); 3];
    for v in vals {
        let b = (v % 3) as usize;
        want[b] = (want[b].0 + 1, want[b].1 + v);
    }
    assert_eq!(got, want);
}

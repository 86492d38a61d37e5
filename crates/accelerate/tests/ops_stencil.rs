//! Stencils against a plain-Rust reference: every pattern size the issue
//! names, every boundary, and the errors for arrays smaller than the
//! pattern and mismatched `stencil2` shapes.

use accelerate::prelude::*;
use accelerate::{run_with, Config};
use proptest::prelude::*;

fn cfg() -> ProptestConfig {
    ProptestConfig { cases: 24, failure_persistence: None, ..ProptestConfig::default() }
}

#[derive(Clone, Copy, Debug)]
enum Kind {
    Clamp,
    Mirror,
    Wrap,
    Constant(i32),
    /// the boundary function `7 * (sum of the index components) + 1`
    Function,
}

fn kind() -> impl Strategy<Value = Kind> {
    prop_oneof![
        Just(Kind::Clamp),
        Just(Kind::Mirror),
        Just(Kind::Wrap),
        any::<i32>().prop_map(Kind::Constant),
        Just(Kind::Function)
    ]
}

fn boundary<Sh: Shape>(k: Kind) -> Boundary<Sh, i32> {
    match k {
        Kind::Clamp => Boundary::clamp(),
        Kind::Mirror => Boundary::mirror(),
        Kind::Wrap => Boundary::wrap(),
        Kind::Constant(c) => Boundary::constant(c),
        Kind::Function => Boundary::function(|ix: &Exp<Sh>| sum_components(ix.clone()) * 7i32 + 1i32),
    }
}

/// The sum of an index's components, as an expression.
fn sum_components<Sh: Shape>(ix: Exp<Sh>) -> Exp<i32> {
    (0..Sh::RANK).fold(constant(0i32), |acc, k| acc + ix.__field::<i64>(k).cast::<i32>())
}

/// The reference read of element `ix` (any rank) of a row-major array.
fn read(data: &[i32], dims: &[usize], ix: &[i64], k: Kind) -> i32 {
    let inside = ix.iter().zip(dims).all(|(&x, &n)| x >= 0 && (x as usize) < n);
    let fixed: Vec<i64> = if inside {
        ix.to_vec()
    } else {
        match k {
            Kind::Constant(c) => return c,
            Kind::Function => {
                return ix
                    .iter()
                    .map(|&x| x as i32)
                    .fold(0i32, |a, x| a.wrapping_add(x))
                    .wrapping_mul(7)
                    .wrapping_add(1)
            }
            Kind::Clamp => ix.iter().zip(dims).map(|(&x, &n)| x.clamp(0, n as i64 - 1)).collect(),
            Kind::Wrap => ix.iter().zip(dims).map(|(&x, &n)| x.rem_euclid(n as i64)).collect(),
            Kind::Mirror => ix
                .iter()
                .zip(dims)
                .map(|(&x, &n)| {
                    let n = n as i64;
                    if x < 0 {
                        -x
                    } else if x >= n {
                        2 * (n - 1) - x
                    } else {
                        x
                    }
                })
                .collect(),
        }
    };
    let lin = fixed.iter().zip(dims).fold(0usize, |a, (&x, &n)| a * n + x as usize);
    data[lin]
}

/// The reference stencil: the points of an `extents` pattern in row-major
/// order, combined as `acc * 3 + point` (order-sensitive, wrapping).
fn reference(data: &[i32], dims: &[usize], extents: &[usize], k: Kind) -> Vec<i32> {
    let mut offsets = vec![vec![]];
    for &e in extents {
        let r = (e / 2) as i64;
        offsets = offsets
            .into_iter()
            .flat_map(|o: Vec<i64>| (-r..=r).map(move |d| [o.clone(), vec![d]].concat()))
            .collect();
    }
    let n: usize = dims.iter().product();
    (0..n)
        .map(|lin| {
            let mut ix = vec![0i64; dims.len()];
            let mut rest = lin;
            for d in (0..dims.len()).rev() {
                ix[d] = (rest % dims[d]) as i64;
                rest /= dims[d];
            }
            offsets.iter().fold(0i32, |acc, o| {
                let p: Vec<i64> = ix.iter().zip(o).map(|(a, b)| a + b).collect();
                acc.wrapping_mul(3).wrapping_add(read(data, dims, &p, k))
            })
        })
        .collect()
}

fn combine(points: impl IntoIterator<Item = Exp<i32>>) -> Exp<i32> {
    points.into_iter().fold(constant(0i32), |acc, p| acc * 3i32 + p)
}

fn data(n: usize, salt: u64) -> Vec<i32> {
    (0..n as u64).map(|i| ((i + 3).wrapping_mul(salt | 1) >> 20) as i32).collect()
}

fn run1<const N: usize>(xs: &[i32], k: Kind) -> Result<Vec<i32>, Error> {
    {
        let a = use_array(Vector::from_elems(xs.to_vec()));
        let r = a.stencil(|p: [Exp<i32>; N]| combine(p), boundary(k));
        run_with(&r, &Config::from_env().unwrap()).map(|r| r.to_vec())
    }
}

fn run2<const R: usize, const C: usize>(
    xs: &[i32],
    dims: (usize, usize),
    k: Kind,
) -> Result<Vec<i32>, Error> {
    {
        let a = use_array(Array::from_vec(dim2(dims.0, dims.1), xs.to_vec()).unwrap());
        let r = a.stencil(|p: [[Exp<i32>; C]; R]| combine(p.into_iter().flatten()), boundary(k));
        run_with(&r, &Config::from_env().unwrap()).map(|r| r.to_vec())
    }
}

fn run3<const P: usize>(xs: &[i32], d: usize, k: Kind) -> Result<Vec<i32>, Error> {
    {
        let a = use_array(Array::from_vec(dim3(d, d + 1, d), xs.to_vec()).unwrap());
        let r =
            a.stencil(|p: [[[Exp<i32>; P]; P]; P]| combine(p.into_iter().flatten().flatten()), boundary(k));
        run_with(&r, &Config::from_env().unwrap()).map(|r| r.to_vec())
    }
}

proptest! {
    #![proptest_config(cfg())]

    #[test]
    fn one_dimensional_stencils_of_3_5_7_9_points(n in 9usize..30, k in kind(), salt in any::<u64>()) {
        let xs = data(n, salt);
        prop_assert_eq!(run1::<3>(&xs, k).unwrap(), reference(&xs, &[n], &[3], k));
        prop_assert_eq!(run1::<5>(&xs, k).unwrap(), reference(&xs, &[n], &[5], k));
        prop_assert_eq!(run1::<7>(&xs, k).unwrap(), reference(&xs, &[n], &[7], k));
        prop_assert_eq!(run1::<9>(&xs, k).unwrap(), reference(&xs, &[n], &[9], k));
    }

    #[test]
    fn two_dimensional_stencils_3x3_to_9x9(r in 9usize..13, c in 9usize..13, k in kind(), salt in any::<u64>()) {
        let xs = data(r * c, salt);
        prop_assert_eq!(run2::<3, 3>(&xs, (r, c), k).unwrap(), reference(&xs, &[r, c], &[3, 3], k));
        prop_assert_eq!(run2::<5, 5>(&xs, (r, c), k).unwrap(), reference(&xs, &[r, c], &[5, 5], k));
        prop_assert_eq!(run2::<7, 7>(&xs, (r, c), k).unwrap(), reference(&xs, &[r, c], &[7, 7], k));
        prop_assert_eq!(run2::<9, 9>(&xs, (r, c), k).unwrap(), reference(&xs, &[r, c], &[9, 9], k));
        prop_assert_eq!(run2::<3, 7>(&xs, (r, c), k).unwrap(), reference(&xs, &[r, c], &[3, 7], k));
    }

    #[test]
    fn three_dimensional_stencils_3x3x3_and_5x5x5(d in 5usize..7, k in kind(), salt in any::<u64>()) {
        let dims = [d, d + 1, d];
        let xs = data(dims.iter().product(), salt);
        prop_assert_eq!(run3::<3>(&xs, d, k).unwrap(), reference(&xs, &dims, &[3, 3, 3], k));
        prop_assert_eq!(run3::<5>(&xs, d, k).unwrap(), reference(&xs, &dims, &[5, 5, 5], k));
    }

    #[test]
    fn stencil2_sees_both_neighbourhoods(n in 5usize..20, k1 in kind(), k2 in kind(), salt in any::<u64>()) {
        let xs = data(n, salt);
        let ys = data(n, salt.rotate_left(17));
        let got = {
            let a = use_array(Vector::from_elems(xs.clone()));
            let b = use_array(Vector::from_elems(ys.clone()));
            let r = a.stencil2(boundary(k1), b, boundary(k2), |p: [Exp<i32>; 3], q: [Exp<i32>; 5]| {
                combine(p) - combine(q) * 5i32
            });
            run_with(&r, &Config::from_env().unwrap()).unwrap().to_vec()
        };
        let want: Vec<i32> = reference(&xs, &[n], &[3], k1)
            .iter()
            .zip(reference(&ys, &[n], &[5], k2))
            .map(|(a, b)| a.wrapping_sub(b.wrapping_mul(5)))
            .collect();
        prop_assert_eq!(got, want);
    }

    #[test]
    fn a_stencil_of_floats_with_specials_matches_the_reference(
        xs in proptest::collection::vec(prop_oneof![Just(f32::NAN), Just(f32::INFINITY), Just(-0.0f32), -1e3f32..1e3], 3..20)
    ) {
        let got = {
            let a = use_array(Vector::from_elems(xs.clone()));
            let r = a.stencil(|[l, c, r]: [Exp<f32>; 3]| (l - c * 2.0f32) + r, Boundary::clamp());
            run_with(&r, &Config::from_env().unwrap()).unwrap().to_vec()
        };
        let n = xs.len();
        let at = |i: i64| xs[i.clamp(0, n as i64 - 1) as usize];
        let want: Vec<f32> = (0..n as i64).map(|i| (at(i - 1) - at(i) * 2.0) + at(i + 1)).collect();
        let bits = |v: &[f32]| v.iter().map(|x| if x.is_nan() { u32::MAX } else { x.to_bits() }).collect::<Vec<_>>();
        prop_assert_eq!(bits(&got), bits(&want));
    }
}

#[test]
fn a_stencil_over_an_empty_array_is_empty() {
    assert_eq!(run1::<5>(&[], Kind::Mirror).unwrap(), Vec::<i32>::new());
}

#[test]
fn an_array_smaller_than_the_pattern_is_an_error() {
    let err = run1::<5>(&[1, 2, 3], Kind::Clamp).unwrap_err();
    assert!(
        matches!(&err, Error::StencilTooSmall { pattern, shape, .. } if pattern == &[5] && shape == &[3]),
        "{err}"
    );
    assert!(err.to_string().contains("tests/ops_stencil.rs"), "{err}");
    let err = run2::<3, 3>(&[1, 2, 3, 4, 5, 6], (3, 2), Kind::Wrap).unwrap_err();
    assert!(matches!(err, Error::StencilTooSmall { .. }), "{err}");
}

#[test]
fn stencil2_of_arrays_of_different_shapes_is_an_error() {
    let err = {
        let a = use_array(Vector::from_elems(vec![1i32; 4]));
        let b = use_array(Vector::from_elems(vec![1.0f32; 5]));
        let r = a.stencil2(Boundary::clamp(), b, Boundary::clamp(), |p: [Exp<i32>; 3], q: [Exp<f32>; 3]| {
            combine(p).cast::<f32>() + &q[1]
        });
        run_with(&r, &Config::from_env().unwrap()).unwrap_err()
    };
    assert!(
        matches!(&err, Error::ShapeMismatch { first, second, .. } if first == &[4] && second == &[5]),
        "{err}"
    );
}

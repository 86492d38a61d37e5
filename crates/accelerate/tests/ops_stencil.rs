//! Stencils against a plain-Rust reference: every pattern size the issue
//! names, every boundary, and the errors for arrays smaller than the
//! pattern and mismatched `stencil2` shapes; and generates of reads at
//! clamped neighbours, which the CPU backend runs as stencils (Note
//! [Clamped reads as stencils] in `accelerate-opt/src/clamped.rs`).

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

// ---------------------------------------------------------------------------
// Generates of reads at clamped neighbours (Note [Clamped reads as
// stencils]): the CPU backend runs them as stencils, the interpreter as
// written; both must give the plain-Rust reference.

/// How a read's coordinate is written: clamped as `min(max(x, 0), n - 1)`
/// or as `max(min(x, n - 1), 0)`; wrapped around as `x.mod_floor(n)` or
/// as `(x + n) % n`; or the element's own coordinate as it is (`Raw`,
/// which with an offset other than 0 reads outside).
#[derive(Clone, Copy, Debug)]
enum Coord {
    MinMax,
    MaxMin,
    Mod,
    RemWide,
    Raw,
}

fn coord() -> impl Strategy<Value = Coord> + Clone {
    prop_oneof![Just(Coord::MinMax), Just(Coord::MaxMin), Just(Coord::Raw)]
}

fn wrapping() -> impl Strategy<Value = Coord> + Clone {
    prop_oneof![Just(Coord::Mod), Just(Coord::RemWide), Just(Coord::Raw)]
}

/// Coordinate `x + d` of an array of extent `n`, written as `form` says
/// (`Raw` is written `x + d` where `d` is not 0).
fn written(x: &Exp<i64>, d: i64, n: &Exp<i64>, form: Coord) -> Exp<i64> {
    let shifted = if d == 0 { x.clone() } else { x + d };
    match form {
        Coord::MinMax => shifted.max(constant(0i64)).min(n - 1),
        Coord::MaxMin => shifted.min(n - 1).max(constant(0i64)),
        Coord::Mod => shifted.mod_floor(n),
        Coord::RemWide => (shifted + n) % n,
        Coord::Raw => shifted,
    }
}

/// A point of a two-dimensional neighbourhood: offsets and how each
/// coordinate is written.
type Point2 = (i64, i64, Coord, Coord);

/// `generate (shape a) (\(i, j) -> fold (\acc p -> acc * 3 + a!p) 0 points)`.
fn neighbours2(a: Acc<Matrix<i32>>, points: Vec<Point2>) -> Acc<Matrix<i32>> {
    let a2 = a.clone();
    generate(a.shape(), move |ix| {
        let (i, j) = unindex2(ix);
        let (r, c) = unindex2(a2.shape());
        let reads = points
            .iter()
            .map(|&(di, dj, fi, fj)| a2.index(index2(written(&i, di, &r, fi), written(&j, dj, &c, fj))));
        combine(reads)
    })
}

/// The reference of `neighbours2`, every coordinate clamped; `None` where
/// a `Raw` coordinate with an offset reads outside.
fn neighbours2_reference(xs: &[i32], (r, c): (usize, usize), points: &[Point2]) -> Option<Vec<i32>> {
    let at = |x: i64, d: i64, n: usize, form: Coord| -> Option<usize> {
        let y = x + d;
        match form {
            Coord::Raw => (0..n as i64).contains(&y).then_some(y as usize),
            // (`(y + n) % n` wraps only where `y + n >= 0`; below, its
            // remainder is negative or 0)
            Coord::RemWide => {
                let v = (y + n as i64) % n as i64;
                (v >= 0).then_some(v as usize)
            }
            Coord::Mod => Some(y.rem_euclid(n as i64) as usize),
            Coord::MinMax | Coord::MaxMin => Some(y.clamp(0, n as i64 - 1) as usize),
        }
    };
    let mut out = Vec::with_capacity(r * c);
    for i in 0..r as i64 {
        for j in 0..c as i64 {
            let mut acc = 0i32;
            for &(di, dj, fi, fj) in points {
                let v = xs[at(i, di, r, fi)? * c + at(j, dj, c, fj)?];
                acc = acc.wrapping_mul(3).wrapping_add(v);
            }
            out.push(acc);
        }
    }
    Some(out)
}

fn point2() -> impl Strategy<Value = Point2> {
    points_of(coord(), Coord::MinMax)
}

/// Points whose coordinates are written as `forms` chooses; an offset
/// written `Raw` (which would read outside) is written `instead`.
fn points_of(forms: impl Strategy<Value = Coord> + Clone, instead: Coord) -> impl Strategy<Value = Point2> {
    (-3i64..=3, -3i64..=3, forms.clone(), forms).prop_map(move |(di, dj, fi, fj)| {
        let keep = |d: i64, f: Coord| if d != 0 && matches!(f, Coord::Raw) { instead } else { f };
        (di, dj, keep(di, fi), keep(dj, fj))
    })
}

fn run_neighbours2(xs: &[i32], dims: (usize, usize), points: &[Point2]) -> Result<Vec<i32>, Error> {
    let a = use_array(Array::from_vec(dim2(dims.0, dims.1), xs.to_vec()).unwrap());
    run_with(&neighbours2(a, points.to_vec()), &Config::from_env().unwrap()).map(|r| r.to_vec())
}

proptest! {
    #![proptest_config(cfg())]

    // arrays of every size from empty to larger than a 7x7 pattern, so
    // that both sides of the rewrite's `acond` run
    #[test]
    fn generates_of_clamped_reads_match_the_reference(
        r in 0usize..10,
        c in 0usize..10,
        points in proptest::collection::vec(point2(), 1..7),
        salt in any::<u64>(),
    ) {
        let xs = data(r * c, salt);
        let want = neighbours2_reference(&xs, (r, c), &points).expect("clamped reads stay inside");
        prop_assert_eq!(run_neighbours2(&xs, (r, c), &points).unwrap(), want);
    }

    // wrapped around (a torus, as the Game of Life is often written):
    // `(x + n) % n` meets a negative `x + n` in arrays of fewer than 3
    // rows or columns, where a negative remainder reads outside: the
    // reference gives `None` and the program an error
    #[test]
    fn generates_of_wrapped_reads_match_the_reference(
        r in 0usize..10,
        c in 0usize..10,
        points in proptest::collection::vec(points_of(wrapping(), Coord::Mod), 1..7),
        salt in any::<u64>(),
    ) {
        let xs = data(r * c, salt);
        match neighbours2_reference(&xs, (r, c), &points) {
            Some(want) => prop_assert_eq!(run_neighbours2(&xs, (r, c), &points).unwrap(), want),
            None => prop_assert!(run_neighbours2(&xs, (r, c), &points).is_err()),
        }
    }

    #[test]
    fn one_and_three_dimensional_clamped_reads_match_the_reference(
        n in 0usize..9,
        offsets in proptest::collection::vec((-3i64..=3, -1i64..=1, -2i64..=2), 1..5),
        salt in any::<u64>(),
    ) {
        // rank 1
        let xs = data(n, salt);
        let got = {
            let a = use_array(Vector::from_elems(xs.clone()));
            let (a2, offs) = (a.clone(), offsets.clone());
            let r = generate(a.shape(), move |ix| {
                let i = unindex1(ix);
                let len = unindex1(a2.shape());
                combine(offs.iter().map(|&(d, _, _)| a2.index(index1(written(&i, d, &len, Coord::MinMax)))))
            });
            run_with(&r, &Config::from_env().unwrap()).unwrap().to_vec()
        };
        let want: Vec<i32> = (0..n as i64)
            .map(|i| offsets.iter().fold(0i32, |acc, &(d, _, _)| {
                acc.wrapping_mul(3).wrapping_add(xs[(i + d).clamp(0, n as i64 - 1) as usize])
            }))
            .collect();
        prop_assert_eq!(got, want);
        // rank 3, extents n, n + 1, 2
        let dims = [n, n + 1, 2];
        let ys = data(dims.iter().product(), salt.rotate_left(9));
        let got = {
            let a = use_array(Array::from_vec(dim3(dims[0], dims[1], dims[2]), ys.clone()).unwrap());
            let (a2, offs) = (a.clone(), offsets.clone());
            let r = generate(a.shape(), move |ix| {
                let (i, j, k) = unindex3(ix);
                let (p, q, s) = unindex3(a2.shape());
                combine(offs.iter().map(|&(d0, d1, d2)| {
                    a2.index(index3(
                        written(&i, d0, &p, Coord::MaxMin),
                        written(&j, d1, &q, Coord::MinMax),
                        written(&k, d2, &s, Coord::MinMax),
                    ))
                }))
            });
            run_with(&r, &Config::from_env().unwrap()).unwrap().to_vec()
        };
        let at = |x: i64, n: usize| x.clamp(0, n as i64 - 1) as usize;
        let mut want = Vec::new();
        for i in 0..dims[0] as i64 {
            for j in 0..dims[1] as i64 {
                for k in 0..dims[2] as i64 {
                    want.push(offsets.iter().fold(0i32, |acc, &(d0, d1, d2)| {
                        let lin = (at(i + d0, dims[0]) * dims[1] + at(j + d1, dims[1])) * dims[2] + at(k + d2, dims[2]);
                        acc.wrapping_mul(3).wrapping_add(ys[lin])
                    }));
                }
            }
        }
        prop_assert_eq!(got, want);
    }
}

/// The kernels' skeletons of `neighbours2` of these points on the CPU
/// backend (`None` on the others, which do not rewrite).
fn neighbours2_kernels(points: &[Point2]) -> Option<Vec<&'static str>> {
    let config = Config::from_env().unwrap();
    if config.backend != accelerate::Backend::Cpu {
        return None;
    }
    let points = points.to_vec();
    let p =
        accelerate::compile_with(move |a: Acc<Matrix<i32>>| neighbours2(a, points.clone()), config).unwrap();
    let mut kinds: Vec<&'static str> = p.plan().kernels.iter().map(|k| k.skeleton.name()).collect();
    kinds.sort();
    Some(kinds)
}

#[test]
fn clamped_reads_become_a_stencil_and_other_reads_do_not() {
    use Coord::*;
    let blur: Vec<Point2> =
        (-1..=1).flat_map(|di| (-1..=1).map(move |dj| (di, dj, MinMax, MaxMin))).collect();
    // 3x3: a stencil, and the generate as written for arrays of fewer
    // than three rows or columns
    if let Some(kinds) = neighbours2_kernels(&blur) {
        assert_eq!(kinds, ["generate", "stencil"]);
    }
    // only the element itself: no neighbour, left to fusion
    if let Some(kinds) = neighbours2_kernels(&[(0, 0, Raw, MinMax)]) {
        assert_eq!(kinds, ["generate"]);
    }
    // one neighbour, in one dimension: a 1x3 stencil, behind an `acond`
    // on the columns only
    if let Some(kinds) = neighbours2_kernels(&[(0, 0, Raw, Raw), (0, -1, MinMax, MinMax)]) {
        assert_eq!(kinds, ["generate", "stencil"]);
    }
    // a neighbour read without its clamp reads outside at the edges: left
    // as written, and its error is the generate's
    let outside = [(0, 0, MinMax, MinMax), (0, 1, MinMax, Raw)];
    if let Some(kinds) = neighbours2_kernels(&outside) {
        assert_eq!(kinds, ["generate"]);
    }
    let xs = data(12, 5);
    assert_eq!(neighbours2_reference(&xs, (3, 4), &outside), None);
    let err = run_neighbours2(&xs, (3, 4), &outside).unwrap_err();
    assert!(matches!(err, Error::IndexOutOfBounds { .. }), "{err}");
    // a pattern past `MAX_RADIUS`: left as written
    if let Some(kinds) = neighbours2_kernels(&[(4, 0, MinMax, MinMax)]) {
        assert_eq!(kinds, ["generate"]);
    }
    let xs = data(10 * 3, 8);
    let far = [(4, 0, MinMax, MinMax), (-4, 1, MaxMin, MinMax)];
    assert_eq!(
        run_neighbours2(&xs, (10, 3), &far).unwrap(),
        neighbours2_reference(&xs, (10, 3), &far).unwrap()
    );
    // wrapped around: a stencil too, behind the same `acond`
    let torus: Vec<Point2> = (-1..=1).flat_map(|di| (-1..=1).map(move |dj| (di, dj, Mod, RemWide))).collect();
    if let Some(kinds) = neighbours2_kernels(&torus) {
        assert_eq!(kinds, ["generate", "stencil"]);
    }
    // rows clamped and columns wrapped: no one boundary reads both
    let cylinder = [(-1, 1, MinMax, Mod), (1, -1, MaxMin, RemWide)];
    if let Some(kinds) = neighbours2_kernels(&cylinder) {
        assert_eq!(kinds, ["generate"]);
    }
    let xs = data(5 * 4, 2);
    let want = neighbours2_reference(&xs, (5, 4), &cylinder).unwrap();
    assert_eq!(run_neighbours2(&xs, (5, 4), &cylinder).unwrap(), want);
}

#[test]
fn a_body_that_uses_its_index_otherwise_stays_a_generate() {
    // the neighbours' sum plus the row index: the index is live
    let program = |a: Acc<Matrix<i32>>| {
        let a2 = a.clone();
        generate(a.shape(), move |ix| {
            let (i, j) = unindex2(ix);
            let (r, c) = unindex2(a2.shape());
            let up = a2.index(index2(written(&i, -1, &r, Coord::MinMax), written(&j, 0, &c, Coord::MinMax)));
            up + i.cast::<i32>()
        })
    };
    let (r, c) = (4, 3);
    let xs = data(r * c, 3);
    let config = Config::from_env().unwrap();
    let got = {
        let a = use_array(Array::from_vec(dim2(r, c), xs.clone()).unwrap());
        run_with(&program(a), &config).unwrap().to_vec()
    };
    let want: Vec<i32> = (0..r)
        .flat_map(|i| (0..c).map(move |j| (i, j)))
        .map(|(i, j)| xs[i.saturating_sub(1) * c + j].wrapping_add(i as i32))
        .collect();
    assert_eq!(got, want);
    if config.backend == accelerate::Backend::Cpu {
        let p = accelerate::compile_with(program, config).unwrap();
        let kinds: Vec<&str> = p.plan().kernels.iter().map(|k| k.skeleton.name()).collect();
        assert_eq!(kinds, ["generate"]);
    }
}

/// A Jacobi step of Poisson's equation as it is written without padding:
/// `(u` at the four clamped neighbours `- h2 * b!ix) / 4`, `u` and `b` of
/// shapes `(r, c)` and `(rb, cb)`, and optionally a third array's
/// element added (`extra`, of `u`'s shape).
fn poisson(u: Acc<Matrix<i32>>, b: Acc<Matrix<i32>>, extra: Option<Acc<Matrix<i32>>>) -> Acc<Matrix<i32>> {
    let u2 = u.clone();
    generate(u.shape(), move |ix| {
        let (i, j) = unindex2(ix.clone());
        let (r, c) = unindex2(u2.shape());
        let at = |di: i64, dj: i64| {
            u2.index(index2(written(&i, di, &r, Coord::MinMax), written(&j, dj, &c, Coord::MaxMin)))
        };
        let sum = combine([at(-1, 0), at(0, -1), at(0, 1), at(1, 0)]) - b.index(ix.clone()) * 5i32;
        match &extra {
            Some(e) => sum + e.index(ix),
            None => sum,
        }
    })
}

fn poisson_reference(
    u: &[i32],
    (r, c): (usize, usize),
    b: &[i32],
    bc: usize,
    extra: Option<&[i32]>,
) -> Vec<i32> {
    let at = |i: i64, j: i64| u[i.clamp(0, r as i64 - 1) as usize * c + j.clamp(0, c as i64 - 1) as usize];
    let mut out = Vec::new();
    for i in 0..r as i64 {
        for j in 0..c as i64 {
            let s = [at(i - 1, j), at(i, j - 1), at(i, j + 1), at(i + 1, j)]
                .iter()
                .fold(0i32, |acc, &x| acc.wrapping_mul(3).wrapping_add(x));
            let s = s.wrapping_sub(b[i as usize * bc + j as usize].wrapping_mul(5));
            out.push(match extra {
                Some(e) => s.wrapping_add(e[i as usize * c + j as usize]),
                None => s,
            });
        }
    }
    out
}

#[test]
fn two_arrays_read_at_points_become_a_stencil2_where_their_shapes_agree() {
    let config = Config::from_env().unwrap();
    let run = |(r, c): (usize, usize), (rb, cb): (usize, usize), extra: bool| {
        let (us, bs, es) = (data(r * c, 1), data(rb * cb, 2), data(r * c, 3));
        let u = use_array(Array::from_vec(dim2(r, c), us.clone()).unwrap());
        let b = use_array(Array::from_vec(dim2(rb, cb), bs.clone()).unwrap());
        let e = extra.then(|| use_array(Array::from_vec(dim2(r, c), es.clone()).unwrap()));
        let got = run_with(&poisson(u, b, e), &config).map(|a| a.to_vec());
        (got, us, bs, es)
    };
    for (dims, bdims) in [((5, 6), (5, 6)), ((2, 7), (2, 7)), ((0, 3), (0, 3)), ((4, 4), (6, 5))] {
        for extra in [false, true] {
            let (got, us, bs, es) = run(dims, bdims, extra);
            let want = poisson_reference(&us, dims, &bs, bdims.1, extra.then_some(es.as_slice()));
            assert_eq!(got.unwrap(), want, "{dims:?} {bdims:?} {extra}");
        }
    }
    // `b` smaller than `u`: the generate's error
    let (got, ..) = run((4, 4), (4, 3), false);
    assert!(matches!(got, Err(Error::IndexOutOfBounds { .. })), "{got:?}");
    if config.backend != accelerate::Backend::Cpu {
        return;
    }
    let kinds = |extra: bool| {
        let program = move |u: Acc<Matrix<i32>>, b: Acc<Matrix<i32>>, e: Acc<Matrix<i32>>| {
            poisson(u, b, extra.then_some(e))
        };
        let p = accelerate::compile_with(program, config.clone()).unwrap();
        let args = |k: &accelerate::plan::Kernel| match &k.skeleton {
            accelerate::plan::Skeleton::Stencil(s) => s.args.len(),
            _ => 0,
        };
        let mut kinds: Vec<(&str, usize)> =
            p.plan().kernels.iter().map(|k| (k.skeleton.name(), args(k))).collect();
        kinds.sort();
        kinds
    };
    // `u` and `b`: a stencil2 behind the shapes' `acond`; with a third
    // array read at the element, the generate alone
    let two = kinds(false);
    assert!(two.iter().any(|(k, reads)| *k == "stencil" && *reads == 2), "{two:?}");
    assert!(two.iter().any(|(k, _)| *k == "generate"), "{two:?}");
    let three = kinds(true);
    assert!(three.iter().all(|(k, _)| *k == "generate"), "{three:?}");
}

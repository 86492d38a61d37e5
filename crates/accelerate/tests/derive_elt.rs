//! `#[derive(Elt)]` on user structs: a struct is the tuple of its fields to
//! the IR, so an array of structs is stored as one buffer per primitive
//! leaf of every field; the accessor trait (`<Struct>Exp`) and the
//! constructor (`<Struct>::lift`) build scalar code, checked against
//! plain-Rust references. Nested structs, tuple structs, newtypes, empty
//! structs, generic structs, wide structs (more fields than tuples allow)
//! and the `#[elt(crate = "..")]` option.

mod common;

use accelerate::array::{ArrayData, Buffer, EltTy, ScalarTy};
use accelerate::prelude::*;
use common::*;
use proptest::collection::vec;
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

#[derive(Clone, Copy, Debug, PartialEq, Elt)]
struct Particle {
    pos: (f32, f32),
    mass: f32,
    id: u32,
}

/// A tuple struct, used as a field of `Body`.
#[derive(Clone, Copy, Debug, PartialEq, Elt)]
struct Vec2(f32, f32);

/// Derived structs nested in a derived struct.
#[derive(Clone, Copy, Debug, PartialEq, Elt)]
struct Body {
    centre: Vec2,
    particle: Particle,
    alive: bool,
}

/// Fields named like methods that `Exp` has for numbers (`min`, `max`):
/// those do not apply to `Exp<Stats>`, so the accessors are found.
#[derive(Clone, Copy, Debug, PartialEq, Elt)]
struct Stats {
    count: u64,
    total: i64,
    min: i32,
    max: i32,
}

#[derive(Clone, Copy, Debug, PartialEq, Elt)]
struct Meters(f64);

#[derive(Clone, Copy, Debug, PartialEq, Elt)]
struct Tag;

#[derive(Clone, Copy, Debug, PartialEq, Elt)]
struct Pair<T> {
    a: T,
    b: T,
}

/// More fields than the largest tuple (8).
#[derive(Clone, Copy, Debug, PartialEq, Elt)]
struct Wide {
    f0: u8,
    f1: i8,
    f2: u16,
    f3: i16,
    f4: u32,
    f5: i32,
    f6: u64,
    f7: i64,
    f8: f32,
    f9: f64,
}

/// The library under another name, as for a renamed dependency.
pub use accelerate as acc;

#[derive(Clone, Copy, Debug, PartialEq, Elt)]
#[elt(crate = "crate::acc")]
struct Renamed {
    x: i32,
}

mod geometry {
    use accelerate::Elt;

    /// The accessor trait takes the struct's visibility and is imported
    /// with it.
    #[derive(Clone, Copy, Debug, PartialEq, Elt)]
    pub struct Segment {
        pub from: (f32, f32),
        pub to: (f32, f32),
    }
}

use geometry::{Segment, SegmentExp};

// ---------------------------------------------------------------------------
// Strategies and comparisons

fn particle() -> BoxedStrategy<Particle> {
    (elem::<f32>(), elem::<f32>(), elem::<f32>(), elem::<u32>())
        .prop_map(|(x, y, mass, id)| Particle { pos: (x, y), mass, id })
        .boxed()
}

fn body() -> BoxedStrategy<Body> {
    (elem::<f32>(), elem::<f32>(), particle(), elem::<bool>())
        .prop_map(|(x, y, particle, alive)| Body { centre: Vec2(x, y), particle, alive })
        .boxed()
}

fn wide() -> BoxedStrategy<Wide> {
    (
        (elem::<u8>(), elem::<i8>(), elem::<u16>(), elem::<i16>(), elem::<u32>()),
        (elem::<i32>(), elem::<u64>(), elem::<i64>(), elem::<f32>(), elem::<f64>()),
    )
        .prop_map(|((f0, f1, f2, f3, f4), (f5, f6, f7, f8, f9))| Wide {
            f0,
            f1,
            f2,
            f3,
            f4,
            f5,
            f6,
            f7,
            f8,
            f9,
        })
        .boxed()
}

impl Same for Particle {
    fn same(&self, o: &Self) -> bool {
        self.pos.same(&o.pos) && self.mass.same(&o.mass) && self.id == o.id
    }
    fn exact(&self, o: &Self) -> bool {
        self.pos.exact(&o.pos) && self.mass.exact(&o.mass) && self.id == o.id
    }
}

impl Same for Vec2 {
    fn same(&self, o: &Self) -> bool {
        self.0.same(&o.0) && self.1.same(&o.1)
    }
    fn exact(&self, o: &Self) -> bool {
        self.0.exact(&o.0) && self.1.exact(&o.1)
    }
}

impl Same for Body {
    fn same(&self, o: &Self) -> bool {
        self.centre.same(&o.centre) && self.particle.same(&o.particle) && self.alive == o.alive
    }
    fn exact(&self, o: &Self) -> bool {
        self.centre.exact(&o.centre) && self.particle.exact(&o.particle) && self.alive == o.alive
    }
}

impl Same for Wide {
    fn same(&self, o: &Self) -> bool {
        self.exact(o)
    }
    fn exact(&self, o: &Self) -> bool {
        (self.f0, self.f1, self.f2, self.f3, self.f4, self.f5, self.f6, self.f7)
            == (o.f0, o.f1, o.f2, o.f3, o.f4, o.f5, o.f6, o.f7)
            && self.f8.exact(&o.f8)
            && self.f9.exact(&o.f9)
    }
}

/// Checks that `items` go through `Array::from_vec`/`to_vec`/`get_linear`
/// bit for bit, and that the derived struct-of-arrays conversion makes one
/// buffer per leaf of the element type, holding what the generic
/// element-by-element layout holds.
fn check_round_trip<E: Elt + Same>(items: &[E]) -> Result<(), TestCaseError> {
    let n = items.len();
    let ty = E::elt_ty();
    let leaves = ty.leaves();

    let buffers = E::into_buffers(items.to_vec());
    prop_assert_eq!(buffers.len(), leaves.len(), "one buffer per leaf");
    let mut reference = ArrayData::builder(&ty, n).expect("memory for the reference");
    items.iter().for_each(|x| reference.push(&x.to_val()));
    let reference = reference.finish(vec![n]).expect("n elements");
    for (k, (b, r)) in buffers.iter().zip(reference.buffers()).enumerate() {
        prop_assert_eq!(b.ty(), leaves[k], "buffer {} holds leaf {}", k, leaves[k]);
        prop_assert_eq!(b.len(), n, "buffer {} has one value per element", k);
        for i in 0..n {
            prop_assert!(b.get(i).same_bits(r.get(i)), "buffer {} at {}: {} vs {}", k, i, b.get(i), r.get(i));
        }
    }
    check_exact(&E::from_buffers(&buffers, n, &ty), &items.to_vec(), "from_buffers of into_buffers")?;

    let array = Vector::from_vec(dim1(n), items.to_vec()).map_err(|e| TestCaseError::fail(e.to_string()))?;
    check_exact(&array.to_vec(), &items.to_vec(), "to_vec of from_vec")?;
    for (i, x) in items.iter().enumerate() {
        check_exact(&array.get_linear(i).expect("in bounds"), x, "get_linear")?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// Storage

#[test]
fn struct_type_is_the_tuple_of_its_fields() {
    assert_eq!(Particle::elt_ty(), <((f32, f32), f32, u32)>::elt_ty());
    assert_eq!(Vec2::elt_ty(), <(f32, f32)>::elt_ty());
    assert_eq!(
        Body::elt_ty(),
        EltTy::Tuple(vec![Vec2::elt_ty(), Particle::elt_ty(), EltTy::Scalar(ScalarTy::Bool)])
    );
    assert_eq!(Meters::elt_ty(), EltTy::Tuple(vec![EltTy::Scalar(ScalarTy::F64)]));
    assert_eq!(Tag::elt_ty(), EltTy::UNIT);
    assert_eq!(Pair::<i8>::elt_ty(), <(i8, i8)>::elt_ty());
    assert_eq!(Renamed::elt_ty(), EltTy::Tuple(vec![EltTy::Scalar(ScalarTy::I32)]));
}

#[test]
fn nested_struct_leaves_are_flattened_in_field_order() {
    use ScalarTy::*;
    assert_eq!(Particle::elt_ty().leaves(), vec![F32, F32, F32, U32]);
    assert_eq!(Body::elt_ty().leaves(), vec![F32, F32, F32, F32, F32, U32, Bool]);
    assert_eq!(Wide::elt_ty().leaves(), vec![U8, I8, U16, I16, U32, I32, U64, I64, F32, F64]);
}

#[test]
fn particle_columns_hold_the_fields() {
    let ps =
        vec![Particle { pos: (1.0, 2.0), mass: 3.0, id: 4 }, Particle { pos: (5.0, 6.0), mass: 7.0, id: 8 }];
    let buffers = Particle::into_buffers(ps);
    assert!(matches!(&buffers[0], Buffer::F32(v) if v == &[1.0, 5.0]));
    assert!(matches!(&buffers[1], Buffer::F32(v) if v == &[2.0, 6.0]));
    assert!(matches!(&buffers[2], Buffer::F32(v) if v == &[3.0, 7.0]));
    assert!(matches!(&buffers[3], Buffer::U32(v) if v == &[4, 8]));
}

#[test]
fn empty_struct_arrays_keep_their_length() {
    let tags = Vector::from_vec(dim1(5), vec![Tag; 5]).unwrap();
    assert_eq!(tags.to_vec(), vec![Tag; 5]);
    let r = accelerate::run(&generate(dim1(3), |_| Tag::lift())).unwrap();
    assert_eq!(r.to_vec(), vec![Tag; 3]);
}

proptest! {
    #![proptest_config(config(64))]

    #[test]
    fn particles_round_trip_through_arrays(ps in vec(particle(), 0..40)) {
        check_round_trip(&ps)?;
    }

    #[test]
    fn nested_structs_round_trip_through_arrays(bs in vec(body(), 0..40)) {
        check_round_trip(&bs)?;
    }

    #[test]
    fn wide_structs_round_trip_through_arrays(ws in vec(wide(), 0..20)) {
        check_round_trip(&ws)?;
    }

    #[test]
    fn tuple_and_newtype_structs_round_trip_through_arrays(
        xs in vec((elem::<f32>(), elem::<f32>(), elem::<f64>()), 0..40)
    ) {
        check_round_trip(&xs.iter().map(|&(a, b, _)| Vec2(a, b)).collect::<Vec<_>>())?;
        let ms: Vec<Meters> = xs.iter().map(|&(_, _, m)| Meters(m)).collect();
        let got = Vector::from_elems(ms.clone()).to_vec();
        prop_assert!(got.iter().zip(&ms).all(|(g, m)| g.0.exact(&m.0)) && got.len() == ms.len());
    }

    // -----------------------------------------------------------------------
    // Scalar code

    #[test]
    fn map_reads_fields_and_lifts_a_new_struct(ps in vec(particle(), 0..40)) {
        let got = map_vec(&ps, |p| {
            let (x, y) = p.pos().unlift();
            Particle::lift(lift((x + &y * 0.5, y - 1.0)), p.mass() * p.mass(), p.id() + 1)
        })?;
        let want: Vec<Particle> = ps
            .iter()
            .map(|p| Particle {
                pos: (p.pos.0 + p.pos.1 * 0.5, p.pos.1 - 1.0),
                mass: p.mass * p.mass,
                id: p.id.wrapping_add(1),
            })
            .collect();
        check_same_vec(&got, &want, "map over particles")?;
    }

    #[test]
    fn map_projects_a_field_to_a_plain_array(ps in vec(particle(), 0..40)) {
        let got = map_vec(&ps, |p| p.id())?;
        prop_assert_eq!(got, ps.iter().map(|p| p.id).collect::<Vec<_>>());
    }

    #[test]
    fn generate_builds_structs_from_the_index(n in 0usize..50, mass in elem::<f32>()) {
        let r = run_ok(|| {
            generate(dim1(n), |ix| {
                let i = unindex1(ix);
                let x = i.cast::<f32>();
                Particle::lift(lift((&x, &x * 2.0)), mass, i.cast::<u32>())
            })
        })?;
        let want: Vec<Particle> = (0..n)
            .map(|i| Particle { pos: (i as f32, i as f32 * 2.0), mass, id: i as u32 })
            .collect();
        check_same_vec(&r.to_vec(), &want, "generate")?;
    }

    #[test]
    fn nested_accessors_and_constructors_compose(bs in vec(body(), 0..40)) {
        let got = map_vec(&bs, |b| {
            let c = b.centre();
            let p = b.particle();
            Body::lift(Vec2::lift(c._1(), c._0()), &p, b.alive().and(p.mass().gt(0.0)))
        })?;
        let want: Vec<Body> = bs
            .iter()
            .map(|b| Body {
                centre: Vec2(b.centre.1, b.centre.0),
                particle: b.particle,
                alive: b.alive && b.particle.mass > 0.0,
            })
            .collect();
        check_same_vec(&got, &want, "map over bodies")?;
    }

    #[test]
    fn cond_and_constant_choose_between_structs(ps in vec(particle(), 0..40)) {
        let fallback = Particle { pos: (0.0, 0.0), mass: -1.0, id: u32::MAX };
        let got = map_vec(&ps, |p| cond(p.mass().ge(1.0), p, constant(fallback)))?;
        let want: Vec<Particle> = ps.iter().map(|p| if p.mass >= 1.0 { *p } else { fallback }).collect();
        check_same_vec(&got, &want, "cond over particles")?;
    }

    #[test]
    fn fold_combines_struct_accumulators(xs in vec(elem::<i32>(), 0..60)) {
        let input = Vector::from_elems(xs.clone());
        let seed = Stats { count: 0, total: 0, min: i32::MAX, max: i32::MIN };
        let r = run_ok(|| {
            use_array(input)
                .map(|x| Stats::lift(1u64, x.cast::<i64>(), x, x))
                .fold_all(seed, |a, b| {
                    Stats::lift(
                        a.count() + b.count(),
                        a.total() + b.total(),
                        a.min().min(b.min()),
                        a.max().max(b.max()),
                    )
                })
        })?;
        let want = xs.iter().fold(seed, |s, &x| Stats {
            count: s.count + 1,
            total: s.total.wrapping_add(x as i64),
            min: s.min.min(x),
            max: s.max.max(x),
        });
        prop_assert_eq!(r.value(), want);
    }

    #[test]
    fn zip_with_combines_two_struct_arrays(
        abs in vec(((elem::<f64>(), elem::<f64>()), (elem::<f64>(), elem::<f64>())), 0..40)
    ) {
        let xs: Vec<Pair<f64>> = abs.iter().map(|&((a, b), _)| Pair { a, b }).collect();
        let ys: Vec<Pair<f64>> = abs.iter().map(|&(_, (a, b))| Pair { a, b }).collect();
        let (vx, vy) = (Vector::from_elems(xs.clone()), Vector::from_elems(ys.clone()));
        let r = run_ok(|| use_array(vx).zip_with(use_array(vy), |p, q| Pair::lift(p.a() - q.b(), p.b() * q.a())))?;
        let want: Vec<(f64, f64)> = xs.iter().zip(&ys).map(|(p, q)| (p.a - q.b, p.b * q.a)).collect();
        let got: Vec<(f64, f64)> = r.to_vec().iter().map(|p| (p.a, p.b)).collect();
        check_same_vec(&got, &want, "zip_with over pairs")?;
    }

    #[test]
    fn generic_structs_of_tuples_swap_fields(abs in vec((elem::<i8>(), elem::<bool>(), elem::<i8>(), elem::<bool>()), 0..40)) {
        let ps: Vec<Pair<(i8, bool)>> = abs.iter().map(|&(a, b, c, d)| Pair { a: (a, b), b: (c, d) }).collect();
        let got = map_vec(&ps, |p| Pair::lift(p.b(), p.a()))?;
        prop_assert_eq!(got, ps.iter().map(|p| Pair { a: p.b, b: p.a }).collect::<Vec<_>>());
    }

    #[test]
    fn wide_struct_fields_are_each_reachable(ws in vec(wide(), 0..20)) {
        let got = map_vec(&ws, |w| {
            Wide::lift(
                w.f0() + 1, w.f1(), w.f2(), w.f3(), w.f4(), w.f5(), w.f6(), w.f7() ^ 1, w.f8(),
                w.f9() + w.f0().cast::<f64>(),
            )
        })?;
        let want: Vec<Wide> =
            ws.iter().map(|w| Wide { f0: w.f0.wrapping_add(1), f7: w.f7 ^ 1, f9: w.f9 + w.f0 as f64, ..*w }).collect();
        check_same_vec(&got, &want, "map over wide structs")?;
    }

    #[test]
    fn newtype_and_renamed_crate_structs_work_in_map(ms in vec(elem::<f64>(), 0..40)) {
        let got = map_vec(&ms.iter().map(|&m| Meters(m)).collect::<Vec<_>>(), |m| Meters::lift(m._0() * 2.0))?;
        let want: Vec<f64> = ms.iter().map(|m| m * 2.0).collect();
        check_same_vec(&got.iter().map(|m| m.0).collect::<Vec<_>>(), &want, "map over meters")?;

        let xs: Vec<Renamed> = ms.iter().map(|&m| Renamed { x: m as i32 }).collect();
        let got = map_vec(&xs, |r| Renamed::lift(r.x() - 1))?;
        prop_assert_eq!(got, xs.iter().map(|r| Renamed { x: r.x.wrapping_sub(1) }).collect::<Vec<_>>());
    }

    #[test]
    fn accessor_trait_is_imported_from_another_module(
        ss in vec((elem::<f32>(), elem::<f32>(), elem::<f32>(), elem::<f32>()), 0..40)
    ) {
        let segs: Vec<Segment> = ss.iter().map(|&(a, b, c, d)| Segment { from: (a, b), to: (c, d) }).collect();
        let got = map_vec(&segs, |s| Segment::lift(s.to(), s.from()))?;
        let want: Vec<((f32, f32), (f32, f32))> = segs.iter().map(|s| (s.to, s.from)).collect();
        check_exact(&got.iter().map(|s| (s.from, s.to)).collect::<Vec<_>>(), &want, "swapped segments")?;
    }
}

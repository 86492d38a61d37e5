//! The seeds' example programs written in the text language
//! (`accelerate_programs::text`) against their Rust forms
//! (`accelerate-programs`): after fusion (and, for n-body, the lifting of
//! its nested `map`/`reduce`) the two run the same number of kernels, and
//! they compute the same results on the same inputs.

use accelerate::array::ScalarVal;
use accelerate::ir::visit::count_kernels;
use accelerate::prelude::*;
use accelerate::text::{compile_text, TextProgram, Value};
use accelerate::Config;
use accelerate_programs::{blackscholes, dotp, mandelbrot, nbody};

/// The configuration of the environment (its backend), with fusion on:
/// the kernels compared are those of the fused programs.
fn config() -> Config {
    Config::from_env().expect("configuration").with_fusion(true)
}

fn text(name: &str) -> TextProgram {
    let source =
        accelerate_programs::text::ALL.iter().find(|(n, _)| *n == format!("{name}.fut")).expect("a seed").1;
    compile_text(&format!("{name}.fut"), source, "main", &config()).unwrap_or_else(|e| panic!("{e}"))
}

fn vector(xs: &[f32]) -> Value {
    Value::new((**Vector::from_elems(xs.to_vec()).data()).clone()).expect("a vector of f32")
}

fn floats(v: &Value) -> Vec<f32> {
    (0..v.len())
        .map(|i| match v.get(i) {
            Some(ScalarVal::F32(x)) => x,
            other => panic!("an f32, not {other:?}"),
        })
        .collect()
}

/// Equal within `ulps` units in the last place (the two forms may
/// associate a reduction differently and inline constants differently).
fn close(a: f32, b: f32, ulps: f32) -> bool {
    a == b || (a - b).abs() <= ulps * f32::EPSILON * a.abs().max(b.abs()).max(f32::MIN_POSITIVE)
}

#[test]
fn dotp_runs_the_kernels_of_its_rust_form() {
    let t = text("dotp");
    let r =
        accelerate::compile_with(|xs: Acc<Vector<f32>>, ys: Acc<Vector<f32>>| dotp::dotp(&xs, &ys), config())
            .unwrap();
    assert_eq!(count_kernels(&t.program().ir().body), count_kernels(&r.ir().body));
    let xs: Vec<f32> = (0..1000).map(|i| (i % 17) as f32 * 0.25).collect();
    let ys: Vec<f32> = (0..1000).map(|i| (i % 5) as f32 - 2.0).collect();
    let got = t.run(&[vector(&xs), vector(&ys)]).unwrap();
    let want = r.run((&Vector::from_elems(xs.clone()), &Vector::from_elems(ys.clone()))).unwrap();
    // exact: both fold the same products in the same (fused) order
    assert_eq!(floats(&got[0]), want.to_vec());
}

#[test]
fn blackscholes_runs_the_kernels_of_its_rust_form() {
    let t = text("blackscholes");
    let r =
        accelerate::compile_with(|o: Acc<Vector<(f32, f32, f32)>>| blackscholes::black_scholes(&o), config())
            .unwrap();
    assert_eq!(count_kernels(&t.program().ir().body), count_kernels(&r.ir().body));
    let n = 257;
    let price: Vec<f32> = (0..n).map(|i| 5.0 + (i % 23) as f32).collect();
    let strike: Vec<f32> = (0..n).map(|i| 1.0 + (i % 29) as f32).collect();
    let years: Vec<f32> = (0..n).map(|i| 0.25 + (i % 10) as f32 * 0.5).collect();
    let got = t.run(&[vector(&price), vector(&strike), vector(&years)]).unwrap();
    let options: Vec<(f32, f32, f32)> = (0..n).map(|i| (price[i], strike[i], years[i])).collect();
    let want = r.run(&Vector::from_elems(options)).unwrap().to_vec();
    let (call, put) = (floats(&got[0]), floats(&got[1]));
    for i in 0..n {
        // the text form's constants are the Rust form's, written in
        // decimal; allow a few ulps for the C compiler's contractions
        assert!(
            close(call[i], want[i].0, 8.0) && close(put[i], want[i].1, 8.0),
            "{i}: {:?} {:?}",
            (call[i], put[i]),
            want[i]
        );
    }
}

#[test]
fn mandelbrot_runs_the_kernels_of_its_rust_form() {
    let t = text("mandelbrot");
    let view = mandelbrot::View::whole_set(64, 48);
    let r = accelerate::compile_with(
        |limit: Acc<Scalar<i32>>| mandelbrot::mandelbrot(64, 48, limit.the(), view),
        config(),
    )
    .unwrap();
    // the text form's grid is a flat `map` reshaped to rows: the same one
    // kernel
    assert_eq!(count_kernels(&t.program().ir().body), count_kernels(&r.ir().body));
    let args = [
        Value::scalar(ScalarVal::I64(64)),
        Value::scalar(ScalarVal::I64(48)),
        Value::scalar(ScalarVal::I32(100)),
        Value::scalar(ScalarVal::F32(view.x0)),
        Value::scalar(ScalarVal::F32(view.y0)),
        Value::scalar(ScalarVal::F32(view.step)),
    ];
    let got = t.run(&args).unwrap();
    let want = r.run(&Scalar::scalar(100)).unwrap().to_vec();
    let got: Vec<i32> = (0..got[0].len())
        .map(|i| match got[0].get(i) {
            Some(ScalarVal::I32(x)) => x,
            other => panic!("an i32, not {other:?}"),
        })
        .collect();
    assert_eq!(got, want);
}

#[test]
fn nbody_runs_the_kernels_of_its_rust_form() {
    let t = text("nbody");
    let r = accelerate::compile_with(|b: Acc<Vector<nbody::Body>>| nbody::step(&b, nbody::PARAMS), config())
        .unwrap();
    // the text form's entry point takes the bodies as seven arrays of
    // primitives (Futhark's entry points take no arrays of records) and
    // builds the records from them, a gather fusion inlines into each use
    // (Note [The cost rule]); the step itself, lifted from its nested
    // `map`/`reduce`, is the Rust form's fold and zip_with
    assert_eq!(
        count_kernels(&t.program().ir().body),
        count_kernels(&r.ir().body),
        "{}",
        accelerate::ir::pretty::program(t.program().ir())
    );
    let bodies = nbody::initial_bodies(100, 7);
    let col = |f: &dyn Fn(&nbody::Body) -> f32| vector(&bodies.iter().map(f).collect::<Vec<_>>());
    let args = [
        col(&|b| b.pos.x),
        col(&|b| b.pos.y),
        col(&|b| b.pos.z),
        col(&|b| b.vel.x),
        col(&|b| b.vel.y),
        col(&|b| b.vel.z),
        col(&|b| b.mass),
    ];
    // Note [Unzipped once]: the six coordinates returned unzip the step's
    // records once, and their positions and velocities once each
    let lowered = accelerate::ir::pretty::program(&t.front_end().lowered.program);
    assert_eq!(lowered.matches("unzip").count(), 3, "{lowered}");
    let got = t.run(&args).unwrap();
    let want = r.run(&Vector::from_elems(bodies.clone())).unwrap().to_vec();
    let px = floats(&got[0]);
    let vz = floats(&got[5]);
    for i in 0..bodies.len() {
        // the same interactions summed in the same order
        assert!(
            close(px[i], want[i].pos.x, 4.0) && close(vz[i], want[i].vel.z, 4.0),
            "{i}: {} {} {:?}",
            px[i],
            vz[i],
            want[i]
        );
    }
}

#[test]
fn a_typed_entry_point_runs_on_rust_arrays_and_refuses_other_types() {
    let t = text("dotp").typed::<(Vector<f32>, Vector<f32>), Scalar<f32>>().unwrap();
    let xs = Vector::from_elems(vec![1.0f32, 2.0, 3.0]);
    let ys = Vector::from_elems(vec![4.0f32, 5.0, 6.0]);
    assert_eq!(t.run((&xs, &ys)).unwrap().to_vec(), vec![32.0]);
    let e = text("dotp").typed::<(Vector<f64>, Vector<f32>), Scalar<f32>>().err().expect("f64 is not f32");
    assert!(e.rendered.contains("the entry point takes (Array DIM1 f32, Array DIM1 f32)"), "{}", e.rendered);
    let e = text("blackscholes")
        .typed::<(Vector<f32>, Vector<f32>, Vector<f32>), Vector<f32>>()
        .err()
        .expect("two results");
    assert!(e.rendered.contains("returns"), "{}", e.rendered);
    // two results are a tuple
    let bs = text("blackscholes")
        .typed::<(Vector<f32>, Vector<f32>, Vector<f32>), (Vector<f32>, Vector<f32>)>()
        .unwrap();
    let (call, put) = bs.run((&xs, &ys, &xs)).unwrap();
    assert_eq!((call.len(), put.len()), (3, 3));
}

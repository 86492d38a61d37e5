//! The plan (`accelerate::plan`): snapshots of the plans of the papers'
//! programs, the plan verifier's rejections, and the interpreter running a
//! plan as it runs the IR.

use accelerate::plan::{self, Cmd, Skeleton, Source};
use accelerate::prelude::*;
use accelerate::{compile_with, Backend, Config, Error};
use accelerate_programs::nbody::{self, Body};

fn fused() -> Config {
    Config::default().with_backend(Backend::Interpreter)
}

fn plan_text(p: &plan::Program) -> String {
    plan::pretty::program_without_locations(p)
}

fn kinds(p: &plan::Program) -> Vec<&'static str> {
    p.kernels.iter().map(|k| k.skeleton.name()).collect()
}

#[test]
fn dot_product_is_one_fold_reading_both_vectors_through_a_delayed_zip() {
    let p = compile_with(
        |xs: Acc<Vector<f32>>, ys: Acc<Vector<f32>>| accelerate_programs::dotp(&xs, &ys),
        fused(),
    )
    .unwrap();
    let plan = p.plan();
    assert_eq!(kinds(plan), ["fold"]);
    let Skeleton::Fold(f) = &plan.kernels[0].skeleton else { unreachable!() };
    assert!(matches!(f.src.source, Source::Delayed(_)), "{}", plan_text(plan));
    assert_eq!(plan.kernels[0].inputs.len(), 2);
    insta::assert_snapshot!(plan_text(plan));
}

#[test]
fn black_scholes_is_one_generate_kernel() {
    let p = compile_with(|o: Acc<Vector<(f32, f32, f32)>>| accelerate_programs::black_scholes(&o), fused())
        .unwrap();
    assert_eq!(kinds(p.plan()), ["generate"]);
    insta::assert_snapshot!(plan_text(p.plan()));
}

#[test]
fn nbody_accelerations_are_one_fold_over_the_delayed_interactions() {
    let params = nbody::PARAMS;
    let p = compile_with(move |b: Acc<Vector<Body>>| nbody::accelerations(&b, params), fused()).unwrap();
    assert_eq!(kinds(p.plan()), ["fold"]);
    insta::assert_snapshot!(plan_text(p.plan()));
}

#[test]
fn figure_3_is_p1_manifest_and_two_folds() {
    let n = 5usize;
    // ICFP'13 fusion alone: clustering then computes p1 in c1's loop
    // (tests/clusters.rs)
    let config = fused().with_clusters(false);
    let p = compile_with(move |xs: Acc<Matrix<f32>>| accelerate_programs::figure_3(&xs, n as i64), config)
        .unwrap();
    assert_eq!(kinds(p.plan()), ["generate", "fold", "fold"]);
    insta::assert_snapshot!(plan_text(p.plan()));
}

#[test]
fn acond_and_awhile_are_host_commands_around_their_kernels() {
    let p = compile_with(
        |xs: Acc<Vector<f32>>| {
            let c = acond(xs.size().gt(3), xs.map(|x| x + 1.0).reverse(), xs.map(|x| x - 1.0));
            awhile(
                |v: Acc<Vector<f32>>| v.fold(0.0, |a, b| a + b).map(|t| t.lt(1000.0f32)),
                |v| v.map(|x| x * 2.0 + 1.0).reverse(),
                c,
            )
        },
        fused(),
    )
    .unwrap();
    let plan = p.plan();
    assert!(matches!(plan.body, Cmd::Awhile { .. } | Cmd::Let(..)), "{}", plan_text(plan));
    assert_eq!(kinds(plan), ["generate", "generate", "fold", "generate", "generate"]);
    insta::assert_snapshot!(plan_text(plan));
    let xs = Vector::from_elems((0..5).map(|i| i as f32).collect());
    let want = accelerate::backend::interp::run_program(p.ir(), vec![xs.to_arrays_val()]).unwrap();
    let got = accelerate::backend::interp::run_plan(plan, vec![xs.to_arrays_val()]).unwrap();
    assert_eq!(format!("{got:?}"), format!("{want:?}"));
}

#[test]
fn explain_ends_with_the_plan() {
    let xs = use_array(Vector::from_elems(vec![1.0f32, 2.0]));
    let text = accelerate::explain_with(&accelerate_programs::dotp(&xs, &xs), &fused()).unwrap();
    let plan = text.split("== plan ==\n").nth(1).expect("a plan section");
    assert!(plan.contains("launch k0") && plan.contains("k0 = fold"), "{text}");
}

fn a_plan() -> plan::Program {
    let p = compile_with(
        |xs: Acc<Vector<f32>>| {
            let ys = xs.map(|x| x * 2.0).scanl(0.0, |a, b| a + b);
            lift_acc((ys.fold(0.0, |a, b| a + b), ys))
        },
        fused(),
    )
    .unwrap();
    p.plan().clone()
}

fn rejected(p: &plan::Program, what: &str) {
    match plan::verify::verify_program(p) {
        Err(Error::Verifier { phase, message }) => {
            assert_eq!(phase, "plan");
            assert!(message.contains(what), "{message}");
        }
        other => panic!("expected the verifier to reject the plan ({what}), got {other:?}"),
    }
}

#[test]
fn the_verifier_accepts_a_scheduled_plan() {
    plan::verify::verify_program(&a_plan()).unwrap();
}

#[test]
fn the_verifier_rejects_kernels_launched_out_of_order() {
    let mut p = a_plan();
    p.kernels.swap(0, 1);
    rejected(&p, "is named");
}

#[test]
fn the_verifier_rejects_a_kernel_that_reads_more_than_its_inputs() {
    let mut p = a_plan();
    let k = p.kernels.iter_mut().find(|k| !k.inputs.is_empty()).unwrap();
    k.inputs.clear();
    rejected(&p, "its inputs are []");
}

#[test]
fn the_verifier_rejects_a_wrong_result_type() {
    let mut p = a_plan();
    p.kernels[0].out.rank += 1;
    rejected(&p, "recorded as");
}

#[test]
fn the_verifier_rejects_an_unlaunched_kernel() {
    let mut p = a_plan();
    let extra = p.kernels[0].clone();
    p.kernels.push(plan::Kernel { name: format!("k{}", p.kernels.len()), ..extra });
    rejected(&p, "are launched");
}

#[test]
fn the_verifier_rejects_an_unbound_variable() {
    let mut p = a_plan();
    p.body = Cmd::Var(7);
    rejected(&p, "unbound");
}

#[test]
fn the_interpreter_runs_plans_as_it_runs_the_ir() {
    let params = nbody::PARAMS;
    let p = compile_with(move |b: Acc<Vector<Body>>| nbody::step(&b, params), fused()).unwrap();
    let bodies = Vector::from_elems(nbody::initial_bodies(17, 3));
    let args = || vec![bodies.to_arrays_val()];
    let want = accelerate::backend::interp::run_program(p.ir(), args()).unwrap();
    let got = accelerate::backend::interp::run_plan(p.plan(), args()).unwrap();
    assert_eq!(format!("{got:?}"), format!("{want:?}"));
}

#[test]
fn regular_nested_programs_plan_as_their_hand_flattened_forms() {
    // (no segment descriptor: no scan, no segmented fold, no permute)
    let row = |m: &Acc<Matrix<f32>>, i: Exp<i64>| m.slice(any_dims::<Z>().fixed(i).all());
    let matvec = compile_with(
        |m: Acc<Matrix<f32>>, v: Acc<Vector<f32>>| {
            let (n, _) = unindex2(m.shape());
            generate(index1(n), |i| accelerate_programs::dotp(&row(&m, unindex1(i)), &v).the())
        },
        fused(),
    )
    .unwrap();
    assert_eq!(kinds(matvec.plan()), ["fold"]);
    insta::assert_snapshot!("matrix_vector_product_nested", plan_text(matvec.plan()));
    let matmul = compile_with(
        |a: Acc<Matrix<f32>>, b: Acc<Matrix<f32>>| {
            let ((n, _), (_, m)) = (unindex2(a.shape()), unindex2(b.shape()));
            generate(index2(n, m), |ix| {
                let (i, j) = unindex2(ix);
                let column = b.slice(any_dims::<Z>().all().fixed(j));
                accelerate_programs::dotp(&row(&a, i), &column).the()
            })
        },
        fused(),
    )
    .unwrap();
    assert_eq!(kinds(matmul.plan()), ["fold"]);
    insta::assert_snapshot!("matrix_product_nested", plan_text(matmul.plan()));
}

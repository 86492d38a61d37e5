//! The compiler pipeline, as one visible list of phases (Note [The
//! pipeline]): graph -> sharing recovery -> lifting (only for nested data
//! parallelism) -> simplify -> fusion -> cluster -> schedule -> plan. Each phase's output is verified, timed, and can be dumped.
//!
//! Note [The pipeline]
//! sharing recovery (trafo::convert, ICFP'13 §3), the lifting
//! transformation of nested data parallelism (trafo::lift, the sequences
//! thesis ch.4; a phase of its own only for programs that have any),
//! simplification
//! (trafo::simplify, with common-subexpression elimination, trafo::cse),
//! array fusion (trafo::fusion, ICFP'13 §4, followed by the simplifier
//! again), clustering of siblings into multi-output kernels
//! (trafo::cluster, the optimal fusion thesis; after fusion, unless
//! `no-ilp`): functions from IR to IR; then scheduling (plan::schedule), from
//! the fused IR to the plan that every backend consumes (code generation
//! is the backend's). Every phase is listed in `compile_graph`, in order.

use super::config::Config;
use super::error::Result;
use crate::array::ArraysTy;
use crate::ir::{self, verify::verify_program};
use crate::lang::graph::NodeRef;
use crate::plan;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The IR after each phase, with how long the phase took.
#[derive(Clone, Debug)]
pub struct Phase {
    pub name: &'static str,
    pub ir: ir::Program,
    pub time: Duration,
}

/// A program through the whole pipeline: the IR after each phase, and
/// the plan the backends run.
#[derive(Clone, Debug)]
pub struct Compiled {
    pub phases: Vec<Phase>,
    pub plan: Arc<plan::Program>,
    /// How long scheduling took.
    pub plan_time: Duration,
}

impl Compiled {
    /// The IR the plan was scheduled from (the last phase's).
    pub fn ir(&self) -> &ir::Program {
        &self.phases.last().expect("sharing recovery always runs").ir
    }
}

/// Runs the pipeline on a program graph: every phase's IR, and the plan.
pub(crate) fn compile_graph(
    params: &[(NodeRef, ArraysTy)],
    root: &NodeRef,
    config: &Config,
) -> Result<Compiled> {
    let phases = Vec::new();
    let t = Instant::now();
    let prog = crate::trafo::convert::convert_program(params, root, config.sharing)?;
    from_front_end(phases, "sharing", prog, t, config)
}

/// The pipeline from a front end's output (`name`, made since `t`): the
/// program verified, lifted if it nests arrays in scalar code, optimised
/// and planned.
fn from_front_end(
    mut phases: Vec<Phase>,
    name: &'static str,
    prog: ir::Program,
    t: Instant,
    config: &Config,
) -> Result<Compiled> {
    let nested = ir::visit::first_nested(&prog.body).is_some();
    finish_phase(&mut phases, name, prog.clone(), t, config, nested)?;
    let prog = if nested {
        // nested data parallelism, flattened (Note [Nested array terms])
        let t = Instant::now();
        let prog = crate::trafo::lift::lift_program(prog)?;
        finish(&mut phases, "lift", prog.clone(), t, config)?;
        prog
    } else {
        prog
    };
    optimise(phases, prog, config)
}

/// Runs the pipeline on a program another front end lowered to the IR
/// (the text front end, `crate::text`): its IR is verified as the phase
/// `name`, then lifted if it is nested, then optimised and planned.
pub(crate) fn compile_ir(name: &'static str, prog: ir::Program, config: &Config) -> Result<Compiled> {
    from_front_end(Vec::new(), name, prog, Instant::now(), config)
}

/// The phases after sharing recovery and lifting, from a flat program
/// (`prog`, the last of `phases` or a program built by the runtime, as a
/// sequence's chunk program is, `exec::seq`), then the plan.
pub(crate) fn optimise(mut phases: Vec<Phase>, mut prog: ir::Program, config: &Config) -> Result<Compiled> {
    // collected sequences run on this configuration's backend (the IR
    // shows no difference: their calls gain an implementation)
    super::seq::bind_collected(&mut prog.body, config)?;
    if let Some(last) = phases.last_mut() {
        last.ir = prog.clone();
    }
    let simplify_opts = crate::trafo::simplify::SimplifyOptions { cse: config.cse };
    if phases.is_empty() {
        finish(&mut phases, "lift", prog.clone(), Instant::now(), config)?;
    }
    if config.simplify {
        let t = Instant::now();
        // loop-invariant arrays out of loops (Note [Hoisting invariant
        // arrays]), then the scalar code simplified
        let prog = crate::trafo::hoist::hoist_program(prog);
        // sums of one-hot rows as permutes, where the permute is
        // privatised (Note [Sums of one-hot rows]); reads at clamped
        // neighbours as stencils (Note [Clamped reads as stencils])
        let prog = match config.backend {
            super::config::Backend::Cpu => {
                crate::trafo::clamped::rewrite_program(crate::trafo::one_hot::rewrite_program(prog)).0
            }
            _ => prog,
        };
        let prog = crate::trafo::simplify::simplify_program(prog, simplify_opts);
        finish(&mut phases, "simplify", prog, t, config)?;
    }
    if config.fusion {
        let t = Instant::now();
        let prog = phases.last().map(|p| p.ir.clone()).expect("sharing recovery ran");
        let mut prog = crate::trafo::fusion::fuse_program(prog)?;
        // fusion's own output is verified before the simplifier rewrites
        // it, so that a fusion bug is reported as fusion's
        verify_program(&prog, "fusion (before simplify)")?;
        if config.simplify {
            // fusion composes functions with lets that the simplifier inlines
            prog = crate::trafo::simplify::simplify_program(prog, simplify_opts);
        }
        finish(&mut phases, "fusion", prog, t, config)?;
        if let Some(opts) = &config.cluster {
            let t = Instant::now();
            let prog = phases.last().map(|p| p.ir.clone()).expect("fusion ran");
            let (mut prog, report) = crate::trafo::cluster::cluster_program(prog, opts)?;
            if config.dumps("ilp") {
                eprint!("== ilp ==\n{report}");
            }
            if config.simplify && report.clusters > 0 {
                // members read the same elements: one read, by CSE
                prog = crate::trafo::simplify::simplify_program(prog, simplify_opts);
            }
            finish(&mut phases, "cluster", prog, t, config)?;
        }
    }
    if config.fusion && config.backend == super::config::Backend::Cpu {
        // values gathered from large arrays computed before the scatter
        // that sends them (Note [Gathers before scatters])
        let t = Instant::now();
        let prog = phases.last().map(|p| p.ir.clone()).expect("fusion ran");
        let (prog, rewritten) = crate::trafo::gathers::rewrite_program(prog);
        if rewritten > 0 {
            finish(&mut phases, "gathers", prog, t, config)?;
        }
    }
    if config.fusion && config.simplify && config.backend == super::config::Backend::Cpu {
        // lines read while written copied out, so that the kernel may
        // write over its array (Note [Lines read while written])
        let t = Instant::now();
        let prog = phases.last().map(|p| p.ir.clone()).expect("fusion ran");
        let (prog, rewritten) = crate::trafo::lines::rewrite_program(prog);
        if rewritten > 0 {
            finish(&mut phases, "lines", prog, t, config)?;
        }
    }
    let t = Instant::now();
    let mut plan = plan::schedule(&phases.last().expect("sharing recovery ran").ir)?;
    if !config.rows {
        plan.row_groups.clear();
    }
    let plan_time = t.elapsed();
    plan::verify::verify_program(&plan)?;
    if config.dumps("plan") {
        eprintln!("== plan ({:.3} ms) ==\n{}", plan_time.as_secs_f64() * 1e3, plan::pretty::program(&plan));
    }
    Ok(Compiled { phases, plan: Arc::new(plan), plan_time })
}

fn finish(
    phases: &mut Vec<Phase>,
    name: &'static str,
    ir: ir::Program,
    start: Instant,
    config: &Config,
) -> Result<()> {
    finish_phase(phases, name, ir, start, config, false)
}

/// `finish`, for a phase whose output may still hold array terms nested in
/// scalar code (sharing recovery's, before lifting).
fn finish_phase(
    phases: &mut Vec<Phase>,
    name: &'static str,
    ir: ir::Program,
    start: Instant,
    config: &Config,
    nested: bool,
) -> Result<()> {
    let time = start.elapsed();
    // The verifier is one linear traversal: cheap enough to run always.
    if nested {
        ir::verify::verify_nested_program(&ir, name)?;
    } else {
        verify_program(&ir, name)?;
    }
    if config.dumps(name) {
        eprintln!("== {name} ({:.3} ms) ==\n{}", time.as_secs_f64() * 1e3, ir::pretty::program(&ir));
    }
    phases.push(Phase { name, ir, time });
    Ok(())
}

//! Running a plan with the interpreter: the host program is walked by the
//! host walker every backend shares (`backend::host`), and each kernel is
//! evaluated by the interpreter's own code for the operation it computes.
//! The interpreter backend runs programs this way, so that every test run
//! on it checks the schedule apart from any code generator (a scheduling
//! bug shows here, with the interpreter's semantics for everything else).

use super::scalar::ASlot;
use super::{Interp, Written};
use crate::host::{self, Env, Machine, Value};
use accelerate_base::array::{ArrayData, ArrayTy, ArraysTy, ArraysVal};
use accelerate_base::error::{Error, Result};
use accelerate_ir::OpenAcc;
use accelerate_plan::{self as plan, Skeleton};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Runs a plan on its arguments.
pub fn run_plan(p: &plan::Program, args: Vec<ArraysVal>) -> Result<ArraysVal> {
    run_kernels(p, &p.kernels.iter().map(Kernel::of).collect::<Vec<_>>(), args)
}

fn run_kernels(p: &plan::Program, kernels: &[Kernel], args: Vec<ArraysVal>) -> Result<ArraysVal> {
    if args.len() != p.params.len() {
        return Err(Error::Internal(format!("program of {} arguments given {}", p.params.len(), args.len())));
    }
    let args = args.into_iter().map(Value::from_host).collect();
    host::run(&Interpreted, &p.body, kernels, args).map(Value::into_host)
}

/// A kernel as the interpreter evaluates it: the operation it computes,
/// over an environment of just the variables it names (`vars`, indices in
/// the launch's environment, innermost first), and the types the plan
/// records for them.
struct Kernel {
    node: OpenAcc,
    vars: Vec<(usize, Option<ArrayTy>)>,
    uses: Vec<usize>,
}

impl Kernel {
    fn of(k: &plan::Kernel) -> Kernel {
        let (node, vars) = k.to_ir_compact();
        let ty = |v: usize| match &k.skeleton {
            // the host copies the defaults; the interpreter reads them
            Skeleton::Permute(s) if s.defaults == v => Some(k.out.clone()),
            _ => k.input_ty(v).cloned(),
        };
        let uses = k.arrays_used();
        Kernel { node, vars: vars.into_iter().map(|v| (v, ty(v))).collect(), uses }
    }
}

/// The interpreter as a `host::Machine`: host arrays, kernels evaluated
/// by the interpreter.
struct Interpreted;

impl Machine for Interpreted {
    type Array = Arc<ArrayData>;
    type Kernel = Kernel;

    fn uses<'k>(&self, k: &'k Kernel) -> &'k [usize] {
        &k.uses
    }

    fn upload(&self, a: Arc<ArrayData>) -> Result<Arc<ArrayData>> {
        Ok(a)
    }

    fn unzip(&self, a: Arc<ArrayData>) -> Result<Vec<Arc<ArrayData>>> {
        crate::host::unzip_host(a)
    }

    fn reshaped(&self, a: &Arc<ArrayData>, dims: Vec<usize>) -> Arc<ArrayData> {
        Arc::new(a.reshaped(dims))
    }

    fn kernel(&self, k: &Kernel, env: &Env<Arc<ArrayData>>) -> Result<Value<Arc<ArrayData>>> {
        // the interpreter's environment, outermost first: each variable the
        // kernel names, typed by its value, or (a failed binding, Note
        // [Deferred errors]) by what the plan records for it
        let aenv = k
            .vars
            .iter()
            .rev()
            .map(|(v, recorded)| {
                let val = match env.slot(*v) {
                    Some(s) => s.clone().map(Value::into_host),
                    None => Err(Error::Internal(format!("array variable {v} unbound"))),
                };
                let ty = match (&val, recorded) {
                    (Ok(x), _) => x.ty(),
                    (Err(_), Some(t)) => ArraysTy::Array(t.clone()),
                    (Err(_), None) => ArraysTy::Tuple(Vec::new()),
                };
                ASlot { ty, val }
            })
            .collect();
        let mut it = Interp { aenv, count: false, written: Written::default() };
        it.acc(&k.node).map(Value::from_host)
    }
}

/// The interpreter as a backend: it prepares nothing, and runs the plan.
pub struct Interpreter;

/// A plan and its kernels in the interpreter's form, made once.
struct Prepared {
    plan: Arc<plan::Program>,
    kernels: Vec<Kernel>,
    /// How long converting the kernels took.
    phases: [(&'static str, Duration); 1],
}

impl crate::Prepare for Interpreter {
    type Options = ();
    fn prepare(plan: &Arc<plan::Program>, _: &(), _: bool) -> Result<Box<dyn crate::Prepared>> {
        let t = Instant::now();
        let kernels = plan.kernels.iter().map(Kernel::of).collect();
        Ok(Box::new(Prepared { plan: plan.clone(), kernels, phases: [("kernels", t.elapsed())] }))
    }
}

impl crate::Prepared for Prepared {
    fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal> {
        run_kernels(&self.plan, &self.kernels, args)
    }
    fn phases(&self) -> &[(&'static str, Duration)] {
        &self.phases
    }
}

//! Running a plan with the interpreter: the host program is walked by the
//! host walker every backend shares (`backend::host`), and each kernel is
//! evaluated by the interpreter's own code for the operation it computes.
//! The interpreter backend runs programs this way, so that every test run
//! on it checks the schedule apart from any code generator (a scheduling
//! bug shows here, with the interpreter's semantics for everything else).

use super::scalar::ASlot;
use super::{Interp, Written};
use crate::array::{ArrayData, ArraysTy, ArraysVal};
use crate::backend::host::{self, Env, Machine, Value};
use crate::exec::error::{Error, Result};
use crate::ir::OpenAcc;
use crate::plan::{self, Skeleton};
use std::sync::Arc;

/// Runs a plan on its arguments.
pub fn run_plan(p: &plan::Program, args: Vec<ArraysVal>) -> Result<ArraysVal> {
    if args.len() != p.params.len() {
        return Err(Error::Internal(format!("program of {} arguments given {}", p.params.len(), args.len())));
    }
    let kernels: Vec<Kernel> = p.kernels.iter().map(Kernel::of).collect();
    let args = args.into_iter().map(Value::from_host).collect();
    host::run(&Interpreted, &p.body, &kernels, args).map(Value::into_host)
}

/// A kernel as the interpreter evaluates it: the operation it computes,
/// over the variables of the environment it runs in, and the types of
/// the variables it reads.
struct Kernel {
    node: OpenAcc,
    inputs: Vec<(usize, crate::array::ArrayTy)>,
}

impl Kernel {
    fn of(k: &plan::Kernel) -> Kernel {
        let mut inputs = k.inputs.clone();
        if let Skeleton::Permute(s) = &k.skeleton {
            // the host copies the defaults; the interpreter reads them
            inputs.push((s.defaults, k.out.clone()));
        }
        Kernel { node: k.to_ir(), inputs }
    }
}

/// The interpreter as a `host::Machine`: host arrays, kernels evaluated
/// by the interpreter.
struct Interpreted;

impl Machine for Interpreted {
    type Array = Arc<ArrayData>;
    type Kernel = Kernel;

    fn upload(&self, a: Arc<ArrayData>) -> Result<Arc<ArrayData>> {
        Ok(a)
    }

    fn reshaped(&self, a: &Arc<ArrayData>, dims: Vec<usize>) -> Arc<ArrayData> {
        Arc::new(a.reshaped(dims))
    }

    fn kernel(&self, k: &Kernel, env: &Env<Arc<ArrayData>>) -> Result<Arc<ArrayData>> {
        // the interpreter's environment: every variable in scope, typed by
        // its value, or (a failed binding) by what the kernel expects of it
        let n = env.slots().len();
        let aenv = env
            .slots()
            .iter()
            .enumerate()
            .map(|(j, s)| {
                let val = s.clone().map(Value::into_host);
                let ty = match &val {
                    Ok(v) => v.ty(),
                    Err(_) => match k.inputs.iter().find(|(v, _)| n - 1 - v == j) {
                        Some((_, t)) => ArraysTy::Array(t.clone()),
                        None => ArraysTy::Tuple(Vec::new()),
                    },
                };
                ASlot { ty, val }
            })
            .collect();
        let mut it = Interp { aenv, count: false, written: Written::default() };
        match it.acc(&k.node)? {
            ArraysVal::Array(a) => Ok(a),
            ArraysVal::Tuple(_) => Err(Error::Internal("a kernel computed a tuple".into())),
        }
    }
}

/// The interpreter as a backend: it prepares nothing, and runs the plan.
pub(crate) struct Interpreter;

struct Prepared(Arc<plan::Program>);

impl crate::backend::Prepare for Interpreter {
    type Options = ();
    fn prepare(plan: &Arc<plan::Program>, _: &(), _: bool) -> Result<Box<dyn crate::backend::Prepared>> {
        Ok(Box::new(Prepared(plan.clone())))
    }
}

impl crate::backend::Prepared for Prepared {
    fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal> {
        run_plan(&self.0, args)
    }
}

//! Programs whose types are known only at run time: a program another
//! front end lowered to the IR (the text front end, `crate::text`), run on
//! arrays whose types are checked against its parameters on each call.

use super::config::Config;
use super::error::{Error, Result, SrcLoc};
use super::pipeline::{self, Compiled, Phase};
use crate::array::{ArraysTy, ArraysVal};
use crate::backend;
use crate::ir;

/// A compiled program of the IR, run on dynamically typed arrays.
/// `Send + Sync`, as `Program` is.
pub struct DynProgram {
    compiled: Compiled,
    exe: Box<dyn backend::Prepared>,
}

/// Compiles a program of the IR: verified (as phase `phase`), optimised,
/// planned and prepared by the configuration's backend.
pub fn compile_ir(phase: &'static str, prog: ir::Program, config: &Config) -> Result<DynProgram> {
    let compiled = pipeline::compile_ir(phase, prog, config)?;
    let exe = backend::prepare(&compiled.plan, config)?;
    Ok(DynProgram { compiled, exe })
}

impl DynProgram {
    /// The types of the program's parameters.
    pub fn params(&self) -> &[ArraysTy] {
        &self.compiled.phases[0].ir.params
    }

    /// Runs the program; each argument must have its parameter's type.
    #[track_caller]
    pub fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal> {
        let params = self.params();
        let loc = SrcLoc::caller();
        let bad = |message: String| Error::InvalidArgument { loc, op: "run", message };
        if args.len() != params.len() {
            return Err(bad(format!(
                "the program takes {} arguments, and was given {}",
                params.len(),
                args.len()
            )));
        }
        for (i, (a, p)) in args.iter().zip(params).enumerate() {
            let t = a.ty();
            if &t != p {
                return Err(bad(format!("argument {i} has type {t}, and the program takes {p}")));
            }
        }
        self.exe.run(args)
    }

    /// The IR the plan was scheduled from.
    pub fn ir(&self) -> &ir::Program {
        self.compiled.ir()
    }

    /// Each phase's output and how long it took.
    pub fn phases(&self) -> &[Phase] {
        &self.compiled.phases
    }

    /// The plan the backend runs.
    pub fn plan(&self) -> &crate::plan::Program {
        &self.compiled.plan
    }

    /// The number of compiled kernels, on the CPU or CUDA backend.
    pub fn kernel_count(&self) -> Option<usize> {
        self.exe.kernel_count()
    }

    /// The generated C or CUDA C of its kernels.
    pub fn c_source(&self) -> Option<&str> {
        self.exe.source()
    }
}

//! Running programs: `run` for a computation built once, `compile` for a
//! function of arrays converted once and run many times (Accelerate's
//! `runN`), `explain` for the IR after each phase.

pub mod config;
pub mod dynamic;
pub use accelerate_base::error;
pub(crate) mod pipeline;
pub mod seq;
pub mod stats;

pub use stats::Stats;

use crate::array::{Arrays, ArraysTy, ArraysVal};
use crate::backend;
use crate::ir;
use crate::lang::acc::Acc;
use crate::lang::graph::NodeRef;
use config::Config;
use error::Result;
use std::marker::PhantomData;

pub use pipeline::{Compiled, Phase};

/// Runs an array computation with the configuration of the environment
/// (`Config::from_env`).
#[track_caller]
pub fn run<A: Arrays>(acc: &Acc<A>) -> Result<A> {
    run_with(acc, &Config::from_env()?)
}

/// Runs an array computation with an explicit configuration.
#[track_caller]
pub fn run_with<A: Arrays>(acc: &Acc<A>, config: &Config) -> Result<A> {
    let c = pipeline::compile_graph(&[], acc.id(), config)?;
    A::from_arrays_val(backend::prepare(&c.plan, config)?.run(Vec::new())?)
}

/// The IR of a computation after each phase of the pipeline, as text.
#[track_caller]
pub fn explain<A: Arrays>(acc: &Acc<A>) -> Result<String> {
    explain_with(acc, &Config::from_env()?)
}

#[track_caller]
pub fn explain_with<A: Arrays>(acc: &Acc<A>, config: &Config) -> Result<String> {
    Ok(show_phases(&pipeline::compile_graph(&[], acc.id(), config)?))
}

/// A Graphviz (DOT) drawing of a computation as it will run (after the
/// last phase of the pipeline).
#[track_caller]
pub fn explain_dot<A: Arrays>(acc: &Acc<A>) -> Result<String> {
    explain_dot_with(acc, &Config::from_env()?)
}

#[track_caller]
pub fn explain_dot_with<A: Arrays>(acc: &Acc<A>, config: &Config) -> Result<String> {
    let c = pipeline::compile_graph(&[], acc.id(), config)?;
    Ok(ir::dot::program(c.ir()))
}

/// Every phase's IR, then the plan, as text.
fn show_phases(c: &Compiled) -> String {
    let mut out: String =
        c.phases.iter().map(|p| format!("== {} ==\n{}", p.name, ir::pretty::program(&p.ir))).collect();
    out.push_str(&format!("== plan ==\n{}", crate::plan::pretty::program(&c.plan)));
    out
}

/// A function of arrays that `compile` accepts: a closure of one to four
/// `Acc` arguments returning an `Acc`.
pub trait AccFn<Args> {
    type Out: Arrays;
    #[doc(hidden)]
    fn reify(self) -> Reified;
}

/// The graph of a function of arrays: its parameter nodes and its result.
#[doc(hidden)]
pub struct Reified {
    params: Vec<(NodeRef, ArraysTy)>,
    root: NodeRef,
}

/// The arguments of a compiled program, as passed to `Program::run`: a
/// reference for one argument, a tuple of references for several.
pub trait ProgramArgs {
    type Refs<'a>;
    #[doc(hidden)]
    fn values(refs: Self::Refs<'_>) -> Vec<ArraysVal>;
    /// The arguments' types, in order.
    #[doc(hidden)]
    fn types() -> Vec<ArraysTy>;
}

macro_rules! acc_fn {
    ($($a:ident $x:ident),+) => {
        impl<$($a: Arrays,)+ R: Arrays, F: FnOnce($(Acc<$a>),+) -> Acc<R>> AccFn<($($a,)+)> for F {
            type Out = R;
            #[track_caller]
            fn reify(self) -> Reified {
                $(let $x = Acc::<$a>::param();)+
                let params = vec![$(($x.id().clone(), $a::arrays_ty())),+];
                let body = self($($x),+);
                Reified { params, root: body.id().clone() }
            }
        }
    };
}

acc_fn!(A a);
acc_fn!(A a, B b);
acc_fn!(A a, B b, C c);
acc_fn!(A a, B b, C c, D d);

impl<A: Arrays> ProgramArgs for (A,) {
    type Refs<'a> = &'a A;
    fn values(a: &A) -> Vec<ArraysVal> {
        vec![a.to_arrays_val()]
    }
    fn types() -> Vec<ArraysTy> {
        vec![A::arrays_ty()]
    }
}

macro_rules! program_args {
    ($($a:ident $idx:tt),+) => {
        impl<$($a: Arrays),+> ProgramArgs for ($($a,)+) {
            type Refs<'r> = ($(&'r $a,)+);
            fn values(refs: Self::Refs<'_>) -> Vec<ArraysVal> {
                vec![$(refs.$idx.to_arrays_val()),+]
            }
            fn types() -> Vec<ArraysTy> {
                vec![$($a::arrays_ty()),+]
            }
        }
    };
}

program_args!(A 0, B 1);
program_args!(A 0, B 1, C 2);
program_args!(A 0, B 1, C 2, D 3);

/// A compiled program: converted and optimised once, run many times on new
/// inputs. `Send + Sync`: it may be shared between threads and run from
/// several at once.
pub struct Program<Args, R> {
    compiled: Compiled,
    exe: Box<dyn backend::Prepared>,
    _ty: PhantomData<fn(Args) -> R>,
}

impl<Args: ProgramArgs, R: Arrays> Program<Args, R> {
    /// Runs the program on the given arguments.
    pub fn run(&self, args: Args::Refs<'_>) -> Result<R> {
        R::from_arrays_val(self.exe.run(Args::values(args))?)
    }

    /// The IR the program's plan was scheduled from (after the last
    /// phase of the pipeline).
    pub fn ir(&self) -> &ir::Program {
        self.compiled.ir()
    }

    /// The plan the backend runs.
    pub fn plan(&self) -> &crate::plan::Program {
        &self.compiled.plan
    }

    /// The IR after each phase of the pipeline, then the plan, as text.
    pub fn explain(&self) -> String {
        show_phases(&self.compiled)
    }

    /// A Graphviz (DOT) drawing of the program as it will run.
    pub fn explain_dot(&self) -> String {
        ir::dot::program(self.ir())
    }

    /// The generated C of the program's kernels, when it runs on the CPU
    /// backend, or their CUDA C, on the CUDA backend.
    pub fn c_source(&self) -> Option<&str> {
        self.exe.source()
    }

    /// The number of compiled kernels, when the program runs on the CPU
    /// or CUDA backend (all of them are one file, compiled once).
    pub fn kernel_count(&self) -> Option<usize> {
        self.exe.kernel_count()
    }

    /// How long the pipeline took, every phase up to the plan (sharing
    /// recovery, simplification, fusion, scheduling; not the backend's
    /// code generation and compilation).
    pub fn pipeline_time(&self) -> std::time::Duration {
        self.compiled.phases.iter().map(|p| p.time).sum::<std::time::Duration>() + self.compiled.plan_time
    }

    /// Each phase's output and how long it took.
    pub fn phases(&self) -> &[Phase] {
        &self.compiled.phases
    }

    /// How long scheduling (the plan) took.
    pub fn plan_time(&self) -> std::time::Duration {
        self.compiled.plan_time
    }

    /// How long each of the backend's steps took to prepare the plan
    /// (on the CPU backend: `codegen`, writing the C, and `cc`, compiling
    /// it, or finding it in the kernel cache, and loading it).
    pub fn backend_phases(&self) -> &[(&'static str, std::time::Duration)] {
        self.exe.phases()
    }

    /// How many times this program's runs have run a row group (kernels
    /// over the rows of one shape, `plan::rows`) row by row, on the CPU
    /// backend; `None` on a backend that runs every kernel by itself.
    pub fn rows_run(&self) -> Option<usize> {
        self.exe.rows_run()
    }

    /// How many launches of this program's runs have written their result
    /// over an array nothing read again (an `awhile` state replaced
    /// element by element: Note [Updates in place] in `plan/in_place.rs`),
    /// on the CPU backend; `None` on a backend that always writes new
    /// arrays.
    pub fn in_place_runs(&self) -> Option<usize> {
        self.exe.in_place_runs()
    }

    /// The number of kernels, and the intermediate arrays (and their bytes)
    /// a run on these arguments writes, measured by running the reference
    /// interpreter on them.
    pub fn stats(&self, args: Args::Refs<'_>) -> Result<Stats> {
        stats::measure(self.ir(), Args::values(args))
    }
}

/// [`Program::stats`] of a computation of no arguments.
#[track_caller]
pub fn stats<A: Arrays>(acc: &Acc<A>) -> Result<Stats> {
    stats_with(acc, &Config::from_env()?)
}

#[track_caller]
pub fn stats_with<A: Arrays>(acc: &Acc<A>, config: &Config) -> Result<Stats> {
    let c = pipeline::compile_graph(&[], acc.id(), config)?;
    stats::measure(c.ir(), Vec::new())
}

/// Converts a function of arrays into a program, once. The program graph
/// the function builds is freed afterwards.
#[track_caller]
pub fn compile<Args: ProgramArgs, F: AccFn<Args>>(f: F) -> Result<Program<Args, F::Out>> {
    let config = Config::from_env()?;
    compile_with(f, config)
}

/// `compile` with an explicit configuration.
#[track_caller]
pub fn compile_with<Args: ProgramArgs, F: AccFn<Args>>(
    f: F,
    config: Config,
) -> Result<Program<Args, F::Out>> {
    // The compiled program does not depend on the graph: the nodes the
    // function makes are freed as soon as it is converted.
    let Reified { params, root } = f.reify();
    let compiled = pipeline::compile_graph(&params, &root, &config)?;
    drop((params, root));
    let exe = backend::prepare(&compiled.plan, &config)?;
    Ok(Program { compiled, exe, _ty: PhantomData })
}

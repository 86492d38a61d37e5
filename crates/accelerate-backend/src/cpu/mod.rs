//! The multicore CPU backend: each kernel of a fused program becomes a C
//! function, all of a program's kernels one C file, compiled at run time
//! by the system C compiler into a shared object that is loaded into the
//! process (`compile`, with its kernel cache), and run in parallel chunks
//! on a work-stealing pool (`exec`).
//!
//! Files: `kernel` (this backend's kernel functions and loops), one file
//! per skeleton (`generate`, `fold`, `fold_seg`, `scan`, `permute`,
//! `stencil`), `compile`, `exec`. What the CUDA backend shares comes from
//! `backend::c`: the code generation of a plan's kernels (`c::codegen`,
//! given this backend's skeleton writers, `CpuTarget`), what
//! kernels share whatever the target (`c::kernel`) and the scalar code
//! inside them.
//!
//! Options (`CpuOptions`, in `Config::cpu`; their defaults come from the
//! environment, `exec::config`): the workers, the C compiler and extra
//! flags, the kernel cache's folder. Programs with different options run
//! side by side in one process: each has the worker pool of its size and
//! the objects its compiler and flags built.

mod compile;
mod exec;
mod fold;
mod fold_seg;
mod generate;
mod kernel;
mod packed;
mod permute;
mod rows;
mod scan;
mod stencil;

pub use crate::c::build::compilations;
pub use crate::c::codegen::kernels_written;
pub use compile::vectorised_loops_with;

use crate::c::codegen::{skeleton_files_target, write_kernels};
use crate::c::kernel::{Kernel, Skeleton};
use crate::cache::CacheDir;
use crate::{Prepare, Prepared};
use accelerate_base::array::ArraysVal;
use accelerate_base::error::Result;
use accelerate_plan::{self as plan, Cmd};
use std::sync::Arc;
use std::time::{Duration, Instant};

skeleton_files_target!(CpuTarget);

/// The CPU backend's options (`Config::cpu`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CpuOptions {
    /// Worker threads; 0: one per core (`ACCELERATE_THREADS`).
    pub threads: usize,
    /// The C compiler (`CC`, default `cc`).
    pub cc: String,
    /// Extra flags for it, after the backend's own (`ACCELERATE_CFLAGS`).
    pub cflags: Vec<String>,
    /// Fast-math mode (`Config::with_fast_math`, `ACCELERATE_FLAGS=fast-math`):
    /// kernels are compiled with the float rules relaxed, as
    /// docs/semantics.md says (Note [Fast math] in `compile.rs`).
    pub fast_math: bool,
    /// Where compiled kernels are kept.
    pub cache: CacheDir,
    /// The estimated work (in the units of `c::cost`) below which a
    /// launch runs on one worker (`Config::with_parallel_work`,
    /// `ACCELERATE_PARALLEL_WORK`; default `PARALLEL_WORK`; Note
    /// [Sequential below a cost] in `c/cost.rs`). 0 splits every launch
    /// with work enough for two chunks (Note [Chunks] in `exec.rs`).
    pub parallel_work: usize,
}

/// The default of `CpuOptions::parallel_work`.
pub use crate::c::cost::PARALLEL_WORK;

/// The CPU backend.
pub struct Cpu;

impl Prepare for Cpu {
    type Options = CpuOptions;
    fn prepare(
        p: &Arc<plan::Program>,
        options: &CpuOptions,
        print_source: bool,
    ) -> Result<Box<dyn Prepared>> {
        let program = CpuProgram::new(p, options)?;
        if print_source {
            eprintln!("== c ==\n{}", program.c_source());
        }
        Ok(Box::new(program))
    }
}

/// A program compiled for the CPU: its host commands, its kernels, the
/// loaded object holding their code, and the workers that run them.
pub struct CpuProgram {
    body: Cmd,
    kernels: Vec<Kernel>,
    groups: exec::Groups,
    module: Arc<compile::Module>,
    source: String,
    pool: Arc<rayon::ThreadPool>,
    parallel_work: usize,
    /// How long generating the C and compiling (or loading) it took.
    phases: [(&'static str, Duration); 2],
}

impl CpuProgram {
    /// Writes a plan's kernels and loads them (from the kernel cache or
    /// compiled now).
    pub fn new(p: &plan::Program, options: &CpuOptions) -> Result<CpuProgram> {
        let t = Instant::now();
        let mut l = write_kernels::<CpuTarget>(p);
        let mut groups = exec::Groups::default();
        for (i, g) in p.row_groups.iter().enumerate() {
            if let Some(f) = rows::write_group(p, g, i, &mut l.source) {
                groups.at.insert(f.kernels[0], groups.fns.len());
                groups.fns.push(f);
            }
        }
        let codegen = t.elapsed();
        let t = Instant::now();
        let mut symbols: Vec<String> = l.kernels.iter().flat_map(symbols).collect();
        symbols.extend(groups.fns.iter().map(|f| f.name.clone()));
        let module = compile::load(&l.source, &symbols, options)?;
        let phases = [("codegen", codegen), ("cc", t.elapsed())];
        let pool = exec::pool(options.threads);
        let (body, kernels, source) = (p.body.clone(), l.kernels, l.source);
        let parallel_work = options.parallel_work;
        Ok(CpuProgram { body, kernels, groups, module, source, pool, parallel_work, phases })
    }

    /// Runs the program on its arguments.
    pub fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal> {
        let machine = (&*self.pool, self.parallel_work);
        exec::run(&self.body, &self.kernels, &self.groups, &self.module, machine, args)
    }

    /// The generated C of the program's kernels (without the prelude).
    pub fn c_source(&self) -> &str {
        &self.source
    }

    /// The number of kernels.
    pub fn kernel_count(&self) -> usize {
        self.kernels.len()
    }

    /// The number of worker threads that run it.
    pub fn workers(&self) -> usize {
        self.pool.current_num_threads()
    }
}

impl Prepared for CpuProgram {
    fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal> {
        CpuProgram::run(self, args)
    }
    fn source(&self) -> Option<&str> {
        Some(self.c_source())
    }
    fn kernel_count(&self) -> Option<usize> {
        Some(CpuProgram::kernel_count(self))
    }
    fn phases(&self) -> &[(&'static str, Duration)] {
        &self.phases
    }
    fn rows_run(&self) -> Option<usize> {
        Some(self.groups.runs.load(std::sync::atomic::Ordering::Relaxed))
    }
    fn in_place_runs(&self) -> Option<usize> {
        Some(self.groups.in_place_runs.load(std::sync::atomic::Ordering::Relaxed))
    }
}

/// The C functions of a kernel: its name and its skeleton's suffixes
/// (each skeleton's file lists them beside its code).
fn symbols(k: &Kernel) -> Vec<String> {
    use Skeleton::*;
    let suffixes: &[&str] = match k.skeleton {
        Generate { .. } => generate::FUNCTIONS,
        Fold { .. } => fold::FUNCTIONS,
        Scan { .. } => scan::FUNCTIONS,
        FoldSeg { .. } => fold_seg::FUNCTIONS,
        Permute { atomic, overwrite, .. } => permute::functions(atomic, overwrite),
        Stencil { .. } => stencil::FUNCTIONS,
    };
    let mut names: Vec<String> = suffixes.iter().map(|s| format!("{}{s}", k.name)).collect();
    if k.in_place.is_some() {
        names.push(format!("{}{}", k.name, generate::IN_PLACE));
    }
    names
}

/// Why this backend cannot run here with these options, if it cannot.
pub fn unavailable_with(options: &CpuOptions) -> Option<String> {
    compile::unavailable(&options.cc)
}

/// Whether the host's vector registers are AVX-512's (32 of 64 bytes),
/// which the generated code is compiled for (`-march=native`): the
/// tiles of `fold.rs` and the comparisons of `permute.rs` are sized for
/// them.
fn wide_vector_registers() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::arch::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

//! `Program::stats`: what a program leaves in memory, the figure fusion
//! exists to reduce (ICFP'13 §4, §5). Kernels are counted in the IR as it
//! will run; launches and intermediate arrays are counted by running the
//! reference interpreter on given inputs, since array sizes (and loop trip
//! counts) depend on them.

use super::error::Result;
use crate::array::{ArrayData, ArraysVal};
use crate::ir;
use std::sync::Arc;

/// Figures of one program on one set of inputs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Stats {
    /// Operations in the program that run a parallel loop over their
    /// result (kernels of a compiled backend); a producer fused into its
    /// consumer is part of the consumer's kernel.
    pub kernels: usize,
    /// Kernels run on these inputs (a kernel in an `awhile` body runs once
    /// per iteration).
    pub launches: usize,
    /// Arrays that kernels wrote and that are not part of the result.
    pub intermediate_arrays: usize,
    /// The bytes those arrays hold, summed over the run.
    pub intermediate_bytes: usize,
}

/// Runs `prog` on `args` with the interpreter, counting.
pub(crate) fn measure(prog: &ir::Program, args: Vec<ArraysVal>) -> Result<Stats> {
    let (result, written) = crate::backend::interp::run_counted(prog, args, true)?;
    let mut results = Vec::new();
    leaves(&result, &mut results);
    let intermediates: Vec<&Arc<ArrayData>> =
        written.arrays.iter().filter(|a| !results.iter().any(|r| Arc::ptr_eq(a, r))).collect();
    Ok(Stats {
        kernels: ir::visit::count_kernels(&prog.body),
        launches: written.launches,
        intermediate_arrays: intermediates.len(),
        intermediate_bytes: intermediates.iter().map(|a| a.len() * a.elt_ty().size_bytes()).sum(),
    })
}

fn leaves(v: &ArraysVal, out: &mut Vec<Arc<ArrayData>>) {
    match v {
        ArraysVal::Array(a) => out.push(a.clone()),
        ArraysVal::Tuple(vs) => vs.iter().for_each(|v| leaves(v, out)),
    }
}

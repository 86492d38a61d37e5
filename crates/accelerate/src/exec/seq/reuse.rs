//! Chunk programs compiled once per process (Note [Chunk programs across
//! runs]).
//!
//! Note [Chunk programs across runs]
//! `stream_out` and `run_seq` build a sequence's programs again in every
//! call: the user's closures have built a new graph, so nothing of an
//! earlier call's is known to be the same. The chunk program is the
//! costly one: the streamed audio program spent about 10 ms of its 26 in
//! compiling it (lifting, simplifying, fusing and clustering it,
//! generating its C and finding its kernels in the kernel cache), once
//! per call, where a sequence over the same windows computed in 16. So
//! the compiled chunk programs are kept, keyed by what decides them: the
//! program itself, as the derived `Debug` prints it, with the
//! configuration's. The arrays the program `use`s (the audio data, the
//! twiddle table) are taken out of it first and made parameters
//! (`uses_as_params`), so that a call over other data of the same types
//! finds the same program, and the key holds no array data; the program
//! gets them at each run (`WithUses`). Compiling the same program with
//! the same configuration gives the same result, so a program found
//! computes what compiling it again would, and no object is loaded that
//! was not built for it.
//!
//! Not kept: a program with a foreign call (its function prints as its
//! name only, and an implementation is bound to it when it is
//! optimised), one with an array term nested in scalar code (its `use`s
//! are not taken out), one whose constants include a NaN (`Debug`
//! prints every NaN alike), one of more than `MAX_NODES` nodes (its key
//! would take long to print), and any when the configuration asks for
//! dumps (a dump is of a compilation). At most `ENTRIES` programs are
//! kept, the least recently used dropped first; a kept program holds
//! what its backend keeps between runs (the CUDA backend's device copies
//! of its last run's inputs, Note [Resident inputs]) until it is
//! dropped.

use super::{backend, pipeline, Config, Prepared, Result};
use crate::array::{ArrayData, ArraysTy, ArraysVal};
use crate::ir::{self, AccKind, OpenAcc};
use crate::trafo::avars::{parts_mut, Part};
use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

/// Programs kept (Note [Chunk programs across runs]).
const ENTRIES: usize = 16;

/// Larger programs are not kept (Note [Chunk programs across runs]).
const MAX_NODES: usize = 20_000;

/// Chunk programs compiled so far in this process, kept or not.
static COMPILED: AtomicUsize = AtomicUsize::new(0);

/// How many chunk programs this process has compiled: those found kept
/// are not counted (Note [Chunk programs across runs]; for tests).
pub fn chunk_programs_compiled() -> usize {
    COMPILED.load(Ordering::Relaxed)
}

/// The kept programs, most recently used last.
static KEPT: Mutex<Vec<(String, Arc<dyn Prepared>)>> = Mutex::new(Vec::new());

/// The chunk program `prog` compiled for `config`, or found compiled
/// (Note [Chunk programs across runs]).
pub(super) fn compile(prog: ir::Program, config: &Config) -> Result<Arc<dyn Prepared>> {
    let (prog, uses, keep) = uses_as_params(prog);
    let key = keep.then(|| key(&prog, config)).flatten();
    if let Some(k) = &key {
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(i) = kept.iter().position(|(x, _)| x == k) {
            let entry = kept.remove(i);
            let exe = entry.1.clone();
            kept.push(entry);
            return Ok(with_uses(exe, uses));
        }
    }
    COMPILED.fetch_add(1, Ordering::Relaxed);
    let c = pipeline::optimise(Vec::new(), prog, config)?;
    let exe: Arc<dyn Prepared> = Arc::from(backend::prepare(&c.plan, config)?);
    if let Some(k) = key {
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        if !kept.iter().any(|(x, _)| *x == k) {
            if kept.len() >= ENTRIES {
                kept.remove(0);
            }
            kept.push((k, exe.clone()));
        }
    }
    Ok(with_uses(exe, uses))
}

fn with_uses(exe: Arc<dyn Prepared>, uses: Vec<ArraysVal>) -> Arc<dyn Prepared> {
    if uses.is_empty() {
        exe
    } else {
        Arc::new(WithUses { exe, uses })
    }
}

/// The key of a program whose `use`s are parameters, if it may be kept.
fn key(prog: &ir::Program, config: &Config) -> Option<String> {
    if !config.dump.is_empty() {
        return None;
    }
    // a derived `Debug` recurses once per level of the term: on a stack of
    // its own, large enough for MAX_NODES levels
    let text = stacker::grow(64 << 20, || format!("{config:?}\n{prog:?}"));
    (!text.contains("NaN")).then_some(text)
}

/// `prog` with each array it `use`s made a parameter, outermost, the
/// first `use` met the innermost of them; the arrays in the order a run
/// takes them; and whether the program may be kept (Note [Chunk programs
/// across runs]).
fn uses_as_params(mut prog: ir::Program) -> (ir::Program, Vec<ArraysVal>, bool) {
    let mut taken = Taken { params: prog.params.len(), index: HashMap::new(), arrays: Vec::new(), nodes: 0 };
    let nested = ir::visit::first_nested(&prog.body).is_some();
    let foreign = !nested && taken.replace(&mut prog.body, 0);
    let keep = !nested && !foreign && taken.nodes <= MAX_NODES;
    // (`replace` names the j-th array met `params + j` at the top: the
    // j-th of the new parameters counted from the innermost)
    let mut params: Vec<ArraysTy> = taken.arrays.iter().rev().map(|a| ArraysTy::Array(a.ty())).collect();
    params.append(&mut prog.params);
    prog.params = params;
    let uses = taken.arrays.into_iter().rev().map(ArraysVal::Array).collect();
    (prog, uses, keep)
}

/// The arrays taken out of a program.
struct Taken {
    /// The program's own parameters.
    params: usize,
    /// Each array's place in `arrays`, by its address (an array `use`d
    /// twice is one parameter).
    index: HashMap<*const ArrayData, usize>,
    arrays: Vec<Arc<ArrayData>>,
    /// Nodes seen, array and scalar.
    nodes: usize,
}

impl Taken {
    /// Replaces each `use` in `a`, which is under `depth` array binders
    /// of the program's body, by its parameter; says whether `a` has a
    /// foreign call.
    fn replace(&mut self, a: &mut OpenAcc, depth: usize) -> bool {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            self.nodes += 1;
            if let AccKind::Use(d) = &a.kind {
                let next = self.arrays.len();
                let j = *self.index.entry(Arc::as_ptr(d)).or_insert(next);
                if j == next {
                    self.arrays.push(d.clone());
                }
                a.kind = AccKind::Var(depth + self.params + j);
                return false;
            }
            let mut foreign = matches!(a.kind, AccKind::Foreign { .. });
            for p in parts_mut(a) {
                match p {
                    Part::Acc(x, binders) => foreign |= self.replace(x, depth + binders),
                    Part::Exp(e) => self.nodes += exp_nodes(e),
                    Part::Fun(f) => self.nodes += exp_nodes(&f.body),
                }
            }
            foreign
        })
    }
}

/// The nodes of a scalar term, counted without recursion.
fn exp_nodes(e: &ir::OpenExp) -> usize {
    let (mut n, mut stack) = (0, vec![e]);
    while let Some(x) = stack.pop() {
        n += 1;
        ir::visit::each_child(x, |c| stack.push(c));
    }
    n
}

/// A kept chunk program run on the arrays its call `use`s, which are its
/// outermost parameters.
struct WithUses {
    exe: Arc<dyn Prepared>,
    uses: Vec<ArraysVal>,
}

impl WithUses {
    fn args(&self, args: &[ArraysVal]) -> Vec<ArraysVal> {
        self.uses.iter().chain(args).cloned().collect()
    }
}

impl Prepared for WithUses {
    fn run(&self, args: Vec<ArraysVal>) -> Result<ArraysVal> {
        self.exe.run(self.args(&args))
    }

    fn prefetch(&self, args: &[ArraysVal]) -> Option<Box<dyn FnOnce() + Send>> {
        self.exe.prefetch(&self.args(args))
    }

    fn copies_ahead(&self) -> bool {
        self.exe.copies_ahead()
    }

    fn source(&self) -> Option<&str> {
        self.exe.source()
    }

    fn kernel_count(&self) -> Option<usize> {
        self.exe.kernel_count()
    }

    fn phases(&self) -> &[(&'static str, std::time::Duration)] {
        self.exe.phases()
    }

    fn rows_run(&self) -> Option<usize> {
        self.exe.rows_run()
    }

    fn in_place_runs(&self) -> Option<usize> {
        self.exe.in_place_runs()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::array::Vector;
    use crate::SrcLoc;

    /// `n` levels of one-component tuples around a `use`d vector: a term
    /// as deep as it is long (not a program any phase makes, but its key
    /// is printed as any other's).
    fn nested(n: usize, data: &Arc<ArrayData>) -> ir::Program {
        let loc = SrcLoc::caller();
        let mut a = OpenAcc::new(AccKind::Use(data.clone()), loc);
        for _ in 0..n {
            a = OpenAcc::new(AccKind::Tuple(vec![a]), loc);
        }
        ir::Program { params: Vec::new(), body: a }
    }

    /// The largest program kept, as deep as it is long, has its `use`
    /// made its parameter and its key printed on a thread of a small
    /// stack; a larger one is not kept, so not printed.
    #[test]
    fn a_deep_program_is_keyed_without_overflowing_the_stack() {
        let data = Vector::from_elems(vec![1.0f32, 2.0]).data().clone();
        let config = Config::default();
        std::thread::Builder::new()
            .stack_size(256 << 10)
            .spawn(move || {
                let (prog, uses, keep) = uses_as_params(nested(MAX_NODES - 1, &data));
                assert!(keep);
                assert_eq!((uses.len(), prog.params.len()), (1, 1));
                let key = key(&prog, &config).expect("a key");
                assert!(!key.contains("Use("), "the array left in the key");
                let (_, _, keep) = uses_as_params(nested(MAX_NODES, &data));
                assert!(!keep);
            })
            .unwrap()
            .join()
            .unwrap();
    }
}

//! Facts about the scalar terms a generator writes, found once per term
//! (their sizes, and which lets' variables are used on every path), and
//! the splitting of very large scalar code into C functions of a bounded
//! size (Note [Outlined chunks]).

use super::{c_type, Bound, CVal, ExpGen};
use accelerate_ir::{ExpKind, OpenExp, PrimFun};
use std::collections::{BTreeSet, HashMap};

// Note [Outlined chunks]
// C compilers take time superlinear in the size of a function: GCC at -O3
// compiles a loop of 1 000 chained integer operations in 1.6 s, of 4 000
// in 9.4 s and of 16 000 in 45 s, and 16 000 operations that each branch
// (an arithmetic shift, a conditional) did not finish in 300 s (jump
// threading and CFG cleanup are quadratic in the branches of a function).
// The same 16 000 operations cut into functions of 100 to 1 000 operations
// compile in 2 to 5 s. So a scalar term larger than `LARGE` nodes is
// written as a call chain of C functions of about `CHUNK` nodes each:
//
// - A subterm is *outlined*, written as a function of its own and called
//   where it was, when its size crosses a multiple of `CHUNK` below its
//   parent: a chain of n nested operations, or of n lets, is cut every
//   `CHUNK` nodes, and a function holds at most `CHUNK` nodes per child
//   of its root (a handful: operators have at most three arguments,
//   tuples a few components).
// - A chunk `static __attribute__((noinline)) void name(const acc_args
//   *A, ...)` gets: the kernel's arguments `A`, from which it declares the
//   input arrays and hoisted literals it reads under the kernel's own
//   names; a pointer to each error context of its caller (or to the flag
//   of a fast function, Note [Optimistic checks]); each variable of its
//   caller's scope it reads, by value, with a pointer to the context of a
//   deferred binding (its parameters are found as its body reads them);
//   and a pointer per leaf of its result. So its code is the code the
//   term would have had in place, and it means the same.
// - `noinline` keeps the compiler from pasting the chunks back together.
//   The loop that calls them is then not vectorised, which for a kernel
//   of thousands of operations per element costs little next to the
//   compile time saved; smaller kernels are written as before.
//
// Only the CPU backend outlines (`ExpGen::outline` names the chunks).

/// Terms up to this many nodes are written in one function.
const LARGE: usize = 2048;
/// The nodes a chunk holds, about.
const CHUNK: usize = 256;

/// What is known of a node of a term being generated.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Fact {
    /// Nodes in the subterm.
    size: usize,
    /// For a let: whether its variable is used on every path of its body.
    strict: bool,
    /// Whether a node of the subterm may raise an error itself.
    raises: bool,
}

/// A chunk being written.
#[derive(Default)]
struct Chunk {
    /// The length of the scope where it starts: variables below are read
    /// through parameters.
    base: usize,
    captured: HashMap<usize, Bound>,
    params: Vec<String>,
    /// The arguments of the call, in its caller's names.
    args: Vec<String>,
    arrays: BTreeSet<usize>,
    consts: BTreeSet<usize>,
}

/// The generator's state for facts and outlining.
#[derive(Default)]
pub(super) struct State {
    /// The facts of every node of the terms generated so far, by address
    /// (the terms are the plan's, which outlives the generator).
    facts: HashMap<*const OpenExp, Fact>,
    /// The terms being generated, nested; 0 when the skeleton's code is.
    nesting: usize,
    /// The sizes of the terms being generated, outermost first.
    parents: Vec<usize>,
    /// Whether the term generated from the skeleton's code is larger than
    /// `LARGE`.
    large: bool,
    chunks: Vec<Chunk>,
    /// The chunks written, each before its callers.
    pub functions: String,
    /// The hoisted literals read outside chunks.
    pub consts: BTreeSet<usize>,
    /// The deepest nesting of chunks so far.
    pub deepest: usize,
}

impl ExpGen<'_> {
    /// Before generating `e`: its facts (found for the whole term when the
    /// skeleton's code asks for it), and its call if it is outlined.
    #[inline(never)]
    pub(super) fn enter(&mut self, e: &OpenExp, env: &mut Vec<Bound>) -> Option<CVal> {
        let key: *const OpenExp = e;
        if self.outlining.nesting == 0 {
            if !self.outlining.facts.contains_key(&key) {
                self.analyse(e, 0);
            }
            self.outlining.large = self.outlining.facts[&key].size > LARGE;
        }
        let fact = self.outlining.facts.get(&key).copied().unwrap_or_default();
        if self.outline.is_some() && self.outlining.large && self.outlining.nesting > 0 {
            let parent = self.outlining.parents.last().copied().unwrap_or(0);
            if fact.size >= CHUNK && fact.size / CHUNK < parent / CHUNK {
                return Some(self.outline_chunk(e, fact, env));
            }
        }
        self.outlining.nesting += 1;
        self.outlining.parents.push(fact.size);
        None
    }

    /// After generating a term that `enter` did not outline.
    pub(super) fn leave(&mut self) {
        self.outlining.nesting -= 1;
        self.outlining.parents.pop();
    }

    /// Whether the variable of the let `e` is used on every path of its
    /// body (so that a failure of its binding can be raised where it is
    /// bound, Note [Error contexts in generated code]).
    pub(super) fn strict_let(&self, e: &OpenExp) -> bool {
        self.outlining.facts.get(&(e as *const OpenExp)).is_some_and(|f| f.strict)
    }

    /// Whether a node of `e` may raise an error itself, if `e` is known.
    pub(super) fn raises_within(&self, e: &OpenExp) -> Option<bool> {
        self.outlining.facts.get(&(e as *const OpenExp)).map(|f| f.raises)
    }

    /// Variable `i` of the scope, as the function being written sees it.
    pub(super) fn variable(&mut self, env: &[Bound], i: usize) -> Bound {
        let pos = env.len() - 1 - i;
        match self.outlining.chunks.len() {
            0 => env[pos].clone(),
            n => self.captured(n - 1, pos, env),
        }
    }

    /// Variable `pos` of the scope as chunk `j` sees it: its own, or a
    /// parameter holding its caller's.
    fn captured(&mut self, j: usize, pos: usize, env: &[Bound]) -> Bound {
        if pos >= self.outlining.chunks[j].base {
            return env[pos].clone();
        }
        if let Some(b) = self.outlining.chunks[j].captured.get(&pos) {
            return b.clone();
        }
        // (as deep as chunks nest: a chain of 10^5 operations is 10^3 chunks)
        let outer = if j == 0 {
            env[pos].clone()
        } else {
            stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.captured(j - 1, pos, env))
        };
        let mut leaves = Vec::new();
        for (t, atom) in outer.val.ty.leaves().into_iter().zip(&outer.val.leaves) {
            let p = self.fresh("p");
            self.outlining.chunks[j].params.push(format!("{} {p}", c_type(t)));
            self.outlining.chunks[j].args.push(atom.clone());
            leaves.push(p);
        }
        let deferred = outer.deferred.as_ref().map(|d| {
            let q = self.fresh("q");
            self.outlining.chunks[j].params.push(format!("const acc_err *{q}"));
            self.outlining.chunks[j].args.push(format!("&{d}"));
            format!("(*{q})")
        });
        // what was known to lie inside arrays still is, under its new names
        self.trusted_index.alias(&outer.val.leaves, leaves.clone());
        for (old, new) in outer.val.leaves.iter().zip(&leaves) {
            self.trusted_linear.alias(old, new.clone());
        }
        let b = Bound { val: CVal { ty: outer.val.ty.clone(), leaves }, deferred };
        self.outlining.chunks[j].captured.insert(pos, b.clone());
        b
    }

    /// Notes a hoisted literal's local read by the function being written.
    pub(super) fn note_literal(&mut self, atom: &str) {
        if let Some(n) = self.hoisted.index_of(atom) {
            match self.outlining.chunks.last_mut() {
                Some(c) => c.consts.insert(n),
                None => self.outlining.consts.insert(n),
            };
        }
    }

    /// Notes an input array read by the chunk being written.
    pub(super) fn note_array(&mut self, array: usize) {
        if let Some(c) = self.outlining.chunks.last_mut() {
            c.arrays.insert(array);
        }
    }

    /// Writes `e` as a chunk and returns its call's result.
    #[inline(never)]
    fn outline_chunk(&mut self, e: &OpenExp, fact: Fact, env: &mut Vec<Bound>) -> CVal {
        let prefix = self.outline.clone().unwrap_or_default();
        let name = format!("{prefix}_{}", self.fresh("x"));
        let mut chunk = Chunk { base: env.len(), ..Chunk::default() };
        let saved_contexts = self.contexts.clone();
        let saved_flag = self.optimistic.clone();
        match &saved_flag {
            Some(flag) => {
                let f = self.fresh("f");
                chunk.params.push(format!("int *{f}"));
                chunk.args.push(format!("&{flag}"));
                self.optimistic = Some(format!("(*{f})"));
            }
            None => {
                let mut names = Vec::new();
                for ctx in &saved_contexts {
                    let c = self.fresh("c");
                    chunk.params.push(format!("acc_err *{c}"));
                    chunk.args.push(format!("&{ctx}"));
                    names.push(format!("(*{c})"));
                }
                self.contexts = names;
            }
        }
        self.outlining.chunks.push(chunk);
        self.outlining.deepest = self.outlining.deepest.max(self.outlining.chunks.len());
        let saved_indent = std::mem::replace(&mut self.indent, 1);
        // (a `break` cannot leave a function)
        let saved_loops = std::mem::replace(&mut self.in_loops, 0);
        let saved_scalar_loops = std::mem::replace(&mut self.in_scalar_loops, 0);
        self.outlining.nesting += 1;
        self.outlining.parents.push(fact.size);
        let (body, val) = self.aside(|g| stacker::maybe_grow(64 * 1024, 1024 * 1024, || g.exp_inner(e, env)));
        self.outlining.nesting -= 1;
        self.outlining.parents.pop();
        self.indent = saved_indent;
        self.in_loops = saved_loops;
        self.in_scalar_loops = saved_scalar_loops;
        self.contexts = saved_contexts;
        self.optimistic = saved_flag;
        let chunk = self.outlining.chunks.pop().expect("pushed above");

        let mut params = vec!["const acc_args *A".to_string()];
        params.extend(chunk.params);
        let mut text = String::new();
        let results: Vec<(String, &str)> = val
            .ty
            .leaves()
            .into_iter()
            .zip(&val.leaves)
            .map(|(t, v)| {
                let r = self.fresh("r");
                params.push(format!("{} *{r}", c_type(t)));
                (r, v.as_str())
            })
            .collect();
        text.push_str(&format!("\nstatic __attribute__((noinline)) void {name}({}) {{\n", params.join(", ")));
        text.push_str(
            "    void *const *B = A->bufs; const int64_t *X = A->extents;\n    (void)B; (void)X;\n",
        );
        for a in &chunk.arrays {
            if let Some(slot) = self.arrays.get(a) {
                text.push_str(&slot.declaration());
            }
        }
        for n in &chunk.consts {
            text.push_str(&self.hoisted.declaration(*n));
        }
        text.push_str(&body);
        for (r, v) in &results {
            text.push_str(&format!("    *{r} = {v};\n"));
        }
        text.push_str("}\n");
        self.outlining.functions.push_str(&text);

        // the call, in the caller
        let outs: Vec<String> = val.leaves.iter().map(|_| self.fresh("v")).collect();
        for (o, t) in outs.iter().zip(val.ty.leaves()) {
            self.line(&format!("{} {o};", c_type(t)));
        }
        let mut args = vec!["A".to_string()];
        args.extend(chunk.args);
        args.extend(outs.iter().map(|o| format!("&{o}")));
        self.line(&format!("{name}({});", args.join(", ")));
        // (a chunk raises into its caller's contexts through pointers:
        // Note [A stop flag beside the error context])
        let ctx = self.contexts[0].clone();
        self.stop_if_failed(&ctx);
        CVal { ty: val.ty, leaves: outs }
    }

    /// Finds the facts of every node of `e`, a term under `depth` binders
    /// of the term the skeleton's code asked for; returns the variables
    /// `e` uses on every path of its evaluation, by level (`depth - 1 -
    /// index`: levels do not change under binders, so sets merge without
    /// renumbering).
    fn analyse(&mut self, e: &OpenExp, depth: isize) -> BTreeSet<isize> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            let mut strict_let = false;
            let used = match &e.kind {
                ExpKind::Var(k) => BTreeSet::from([depth - 1 - *k as isize]),
                ExpKind::Const(_) | ExpKind::Shape { .. } => BTreeSet::new(),
                ExpKind::ALet(..) => {
                    unreachable!("array terms nested in scalar code are lifted before code generation")
                }
                ExpKind::Let(b, body) => {
                    let bound = self.analyse(b, depth);
                    let mut inner = self.analyse(body, depth + 1);
                    // the binding runs on every path only if its variable
                    // is used on every path: else it has a context of its
                    // own, where the errors of the variables it reads are
                    // deferred too
                    strict_let = inner.remove(&depth);
                    if strict_let {
                        union(inner, bound)
                    } else {
                        inner
                    }
                }
                ExpKind::Prim(PrimFun::LAnd | PrimFun::LOr, es) => {
                    let first = self.analyse(&es[0], depth);
                    for x in &es[1..] {
                        self.analyse(x, depth);
                    }
                    first
                }
                ExpKind::Cond(c, t, f) => {
                    let c = self.analyse(c, depth);
                    let (t, f) = (self.analyse(t, depth), self.analyse(f, depth));
                    let (small, large) = if t.len() <= f.len() { (t, f) } else { (f, t) };
                    union(c, small.into_iter().filter(|v| large.contains(v)).collect())
                }
                // the condition runs at least once, on the initial value
                ExpKind::While { cond, body, init } => {
                    let init = self.analyse(init, depth);
                    let mut c = self.analyse(&cond.body, depth + 1);
                    c.remove(&depth);
                    self.analyse(&body.body, depth + 1);
                    union(init, c)
                }
                ExpKind::Tuple(_)
                | ExpKind::Prim(..)
                | ExpKind::Prj(..)
                | ExpKind::Index { .. }
                | ExpKind::LinearIndex { .. } => {
                    let mut used = BTreeSet::new();
                    accelerate_ir::visit::each_child(e, |c| {
                        let u = self.analyse(c, depth);
                        used = union(std::mem::take(&mut used), u);
                    });
                    used
                }
            };
            let (mut size, mut raises) = (1, self.raises_here(e));
            accelerate_ir::visit::each_child(e, |c| {
                let f = self.outlining.facts[&(c as *const OpenExp)];
                size += f.size;
                raises |= f.raises;
            });
            self.outlining.facts.insert(e, Fact { size, strict: strict_let, raises });
            used
        })
    }
}

/// The union of two sets, the smaller merged into the larger.
fn union(a: BTreeSet<isize>, b: BTreeSet<isize>) -> BTreeSet<isize> {
    let (mut large, small) = if a.len() >= b.len() { (a, b) } else { (b, a) };
    large.extend(small);
    large
}

//! Scalar expressions to C statements.
//!
//! Note [Error contexts in generated code]
//! A failing primitive (a division by zero, a read out of bounds, a failed
//! `bounds_check`) records its error in the *current error context*, a
//! local `acc_err`, and goes on with a harmless value (a read that would be
//! out of bounds reads nothing and yields zero). The kernel's own context
//! is published to the host when the element loop ends. A `let` whose body
//! does not use its variable on every path gets a context of its own: the
//! bound term's error is kept there and handed on (`acc_propagate`) only
//! where the variable is used, which is Note [Deferred errors] of the
//! interpreter. A scalar `while` loop stops as soon as its context or any
//! enclosing one has failed, so that a loop running on a value computed
//! after an error still ends.
//!
//! Note [Optimistic checks]
//! A check that may call `acc_raise` inside a loop keeps the C compiler
//! from vectorising the loop (a call in a branch), and n-body's inner
//! loop reads `bodies[j]` with such a check. So a kernel function whose
//! checks can fail is generated twice (`KernelGen::with_fast_path`): a
//! fast function in which every check only clears a flag
//! (`acc_bad |= !ok`, no call, no branch, and an out-of-bounds read is a
//! conditional load yielding zero, as before) and which returns the flag,
//! and the checked function, which runs the fast one on its range first
//! and, only if a check failed there, runs the range again with the checks
//! of Note [Error contexts in generated code]. The fast function keeps no
//! error contexts: a failure in a binding whose variable is never used
//! clears the flag too, so the flag over-approximates, and the checked
//! run decides exactly. Only functions that may run their range twice
//! use it: those whose results depend on their inputs alone (not a
//! permute, which combines into its output, nor a scan's in-place carry;
//! but a permute's private pieces, each of which starts its copy afresh:
//! Note [Small results by comparison] in `cpu/permute.rs`).
//!
//! Note [Optimistic checks in loops]
//! Inside a scalar `while` loop (never vectorised) a conditional load is a
//! branch around the read on every iteration, and the flag a chain through
//! the iterations: a row's loop of a nested fold ran 1.9 times as long
//! as the same loop without its checks (sparse matrix times vector, 2^20
//! rows). So there a failed check of a fast function sets the flag and
//! leaves the loop (`break`): the loop's exit tests the flag, every
//! enclosing loop's too, and the read that follows is unconditional, since
//! it runs only where the check held. What the element computes after
//! leaving is discarded with the whole range, which the checked function
//! runs again. A chunk (Note [Outlined chunks]) starts outside any loop.
//! A skeleton's own scalar loops do the same (`open_scalar_loop`: a row
//! of a fold folded in order with a float accumulator, which
//! `ACC_SCALAR_FLOAT` keeps from the vectoriser, so that a branch costs
//! no vector loop): SMVM's rows of a few non-zeros kept
//! the flag on the stack, a read-modify-write a step, and a C model of
//! the row loop (2^20 rows, 9.4 million non-zeros, one core) took 44 ms
//! so against 37 ms leaving the loop.

use super::{c_type, embedded, helper_suffix, literal, literal_from_word, literal_word, zero};
use accelerate_base::array::ScalarVal;
use accelerate_base::array::{EltTy, ScalarTy};
use accelerate_base::error::SrcLoc;
use accelerate_ir::{ExpKind, Fun, OpenExp, PrimFun};
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

mod counted;
mod outline;
mod ranges;

/// A value in C: its type and one C atom (a variable or a literal) per leaf.
#[derive(Clone, Debug)]
pub(crate) struct CVal {
    pub ty: EltTy,
    pub leaves: Vec<String>,
}

impl CVal {
    pub fn scalar(t: ScalarTy, atom: String) -> CVal {
        CVal { ty: EltTy::Scalar(t), leaves: vec![atom] }
    }

    /// A shape or index from its extents.
    pub fn index(atoms: Vec<String>) -> CVal {
        CVal { ty: EltTy::shape(atoms.len()), leaves: atoms }
    }
}

/// A scalar variable in scope: its value and, if its binding's error is
/// deferred, the error context holding it.
#[derive(Clone, Debug)]
pub(crate) struct Bound {
    pub val: CVal,
    pub deferred: Option<String>,
}

/// An array the kernel reads: its C buffer pointers (one per leaf), its
/// extents, its element type, and where its buffers and extents are in
/// the kernel's arguments (`A->bufs`, `A->extents`).
#[derive(Clone, Debug)]
pub(crate) struct ArraySlot {
    pub leaves: Vec<String>,
    pub extents: Vec<String>,
    pub elt: EltTy,
    pub first_buf: usize,
    pub first_extent: usize,
}

impl ArraySlot {
    /// The locals holding the element of a rank-0 array, one per leaf
    /// (Note [Rank-0 reads]).
    pub fn value_leaves(&self) -> Vec<String> {
        self.leaves.iter().map(|l| format!("{l}_v")).collect()
    }

    /// The declarations of `value_leaves`, for a rank-0 array (else
    /// nothing): its element, read once at the start of a function.
    pub fn value_declarations(&self) -> String {
        if !self.extents.is_empty() {
            return String::new();
        }
        let mut out = String::new();
        for ((leaf, v), t) in self.leaves.iter().zip(self.value_leaves()).zip(self.elt.leaves()) {
            out.push_str(&format!("    const {} {v} = {leaf}[0];\n", c_type(t)));
        }
        out
    }

    /// The C declarations of its buffers and extents from the kernel's
    /// arguments (`B`, `X`), as a C function's prologue writes them.
    pub fn declaration(&self) -> String {
        let mut out = String::new();
        for (l, (name, t)) in self.leaves.iter().zip(self.elt.leaves()).enumerate() {
            let ct = c_type(t);
            out.push_str(&format!(
                "    const {ct} *restrict {name} = (const {ct} *)B[{}];\n",
                self.first_buf + l
            ));
        }
        for (d, name) in self.extents.iter().enumerate() {
            out.push_str(&format!("    const int64_t {name} = X[{}];\n", self.first_extent + d));
        }
        out.push_str(&self.value_declarations());
        out
    }
}

// Note [Rank-0 reads]
// A rank-0 array holds one value for the whole kernel: a loop counter of
// an `awhile` (Floyd-Warshall's `k`), a total, a threshold. Read where
// the element's code reads it, its load sat inside the element loop, and
// GCC did not hoist it: Floyd-Warshall's step read `d[i][k]` and `d[k][j]`
// by gathers, since `k` was a load of every iteration (1.8 to 2.8 ms a
// step of 1024², against 0.28 ms with the load moved above the loop by
// hand). So every function reads each rank-0 input's element once in its
// prologue (`value_declarations`, beside the buffers), and a read of it
// is that local. The read is always valid: a rank-0 array has exactly
// one element.

/// Note [Hoisted literals]
/// A literal that is not `embedded` (a seed, a coefficient, a random test
/// value) is not written into the C source: the kernel reads it from
/// `A->consts` into a local `K<n>` at the start of each of its functions.
/// The source, and so the cache key (Note [The kernel cache]), then depends
/// on the program's structure and not on its constants, so that a program
/// rebuilt with other constants (a time step, a seed, a threshold) reuses
/// its compiled kernels, as a compiled `Program` does for other arrays.
/// The integers whose values the C compiler exploits (-1, 0, 1 and small
/// powers of two: strides, shifts, masks) stay in the source (`embedded`),
/// and so does every shift amount: a shift by a value the compiler does
/// not know costs it more than a load (GCC took 3.4 s, not 1.0, over 40
/// functions of 32 `x ^ (x >> 7)` each, the 7 read from `A->consts`).
/// So does every integer divisor (of `quot`, `rem`, `div`, `mod`): by a
/// literal the C compiler divides with a multiplication and shifts, by a
/// value it does not know with a division instruction. Sums of 2^24
/// amounts by weekday, `(t / 86400) % 7` each (2-core EPYC guest,
/// 2026-12-01, medians of 41): 27.6 to 28.0 ms with the divisors read
/// from `A->consts`, against a sequential Rust loop's 22.4.
/// A hoisted literal is loaded once per function, outside every loop, so
/// it costs the loop one register.
#[derive(Clone, Debug, Default)]
pub(crate) struct Hoisted {
    /// The type and word (`literal_word`) of each, in order of `K<n>`.
    lits: Vec<(ScalarTy, i64)>,
    /// The position of each in `lits`.
    index: HashMap<(ScalarTy, i64), usize>,
}

impl Hoisted {
    /// The C atom of a literal: the literal itself or its local.
    pub fn atom(&mut self, v: ScalarVal) -> String {
        if embedded(v) {
            return literal(v);
        }
        let key = (v.ty(), literal_word(v));
        let next = self.lits.len();
        let n = *self.index.entry(key).or_insert(next);
        if n == next {
            self.lits.push(key);
        }
        format!("K{n}")
    }

    /// The declarations of the locals `K<n>` for these `n`, read from
    /// `A->consts`.
    pub fn declarations(&self, which: &[usize]) -> String {
        which.iter().map(|&n| self.declaration(n)).collect()
    }

    /// The declaration of the local `K<n>`.
    pub fn declaration(&self, n: usize) -> String {
        let (t, _) = self.lits[n];
        let value = literal_from_word(t, &format!("A->consts[{n}]"));
        format!("    const {} K{n} = {value};\n", c_type(t))
    }

    /// The `n` of an atom `K<n>` naming one of these literals.
    pub fn index_of(&self, atom: &str) -> Option<usize> {
        atom.strip_prefix('K').and_then(|n| n.parse().ok()).filter(|&n| n < self.lits.len())
    }

    /// The words passed to the kernel as `A->consts`.
    pub fn words(&self) -> Vec<i64> {
        self.lits.iter().map(|(_, w)| *w).collect()
    }
}

/// C atoms (a position, or an index) known to lie inside arrays. The sets
/// are shared between the names of one value (an outlined function's
/// parameter and its argument): the index of a `zip_with` of 10^5 inputs
/// lies inside 10^5 arrays, and each of 10^3 chunks receives it.
#[derive(Debug)]
pub(crate) struct Trusted<K>(HashMap<K, Rc<HashSet<usize>>>);

impl<K> Default for Trusted<K> {
    fn default() -> Self {
        Trusted(HashMap::new())
    }
}

impl<K: std::hash::Hash + Eq + Clone> Trusted<K> {
    /// Records that `at` lies inside `array`.
    pub fn add(&mut self, at: K, array: usize) {
        Rc::make_mut(self.0.entry(at).or_default()).insert(array);
    }

    pub fn contains(&self, at: &K, array: usize) -> bool {
        self.0.get(at).is_some_and(|a| a.contains(&array))
    }

    /// Records that `new` lies inside whatever `old` does.
    pub fn alias(&mut self, old: &K, new: K) {
        let Some(arrays) = self.0.get(old).cloned() else { return };
        match self.0.get_mut(&new) {
            None => {
                self.0.insert(new, arrays);
            }
            Some(mine) => Rc::make_mut(mine).extend(arrays.iter().copied()),
        }
    }
}

/// Lines are indented up to this many levels (deeper code, 10^4 nested
/// conditionals, is not indented further: the text stays linear in size).
const MAX_INDENT: usize = 12;

/// What a generator wrote (`ExpGen::into_parts`).
pub(crate) struct Body {
    /// The statements.
    pub code: String,
    /// The fresh-name counter, for the kernel's next function.
    pub fresh: usize,
    /// Whether the code can raise an error.
    pub raised: bool,
    /// The functions the code calls (Note [Outlined chunks]), to be
    /// written before the function the code is the body of.
    pub functions: String,
    /// The hoisted literals the code reads (those its functions read
    /// they declare themselves).
    pub consts: Vec<usize>,
    /// How deeply the functions it calls call each other.
    pub chunk_depth: usize,
    /// Whether a lane loop recorded failed checks in `LANE_FLAGS` (Note
    /// [Lane flags]), which the function then folds into its flag.
    /// The lane flags the body uses (its widest lane loop), 0 if none.
    pub lane_flags: usize,
    /// The checks a fast function tests once before its loops (Note
    /// [Checks before the loops]), each a C condition.
    pub before_loops: Vec<String>,
    /// How many checks a fast function makes where its code is, not
    /// before its loops (Note [Functions that write in place] in `cpu/generate.rs`).
    pub checks_in_place: usize,
}

// Note [Lane flags]
// A fast function's loop over a reduction's lanes records a failed check
// in the lane's own flag, `acc_bad_lanes[q]`, not in the function's flag
// through `#pragma omp simd reduction(|:acc_bad)`. The reduction clause
// made GCC 12 keep the lanes' accumulators in memory, a store and a load
// of each per step on the loop's critical path: the all-pairs n-body's
// fold (16 lanes, three accumulators, sqrt and division per interaction)
// ran 1.35x the time of the benchmark's rayon version, and a C model of
// its loop 3.9 ms against 2.4 with the clause removed, the same whether
// the loop's checks could fail or not. With a flag per lane the loop has
// no dependence between its iterations, and the model ran 2.4 ms with a
// check that could fail in every iteration. A function whose body used
// them declares as many flags as its widest lane loop has lanes
// (`Body::declare_lane_flags`) and ORs them into its own flag before it
// returns (`Body::fold_lane_flags`).

/// The lane flags of a fast function (Note [Lane flags]): one per lane
/// of its widest lane loop, declared where its body uses them.
pub(crate) const LANE_FLAGS: &str = "acc_bad_lanes";

impl Body {
    /// Declares the lane flags the body uses, all clear, before its code.
    pub fn declare_lane_flags(&mut self) {
        if self.lane_flags > 0 {
            self.code = format!("    int {LANE_FLAGS}[{}] = {{0}};\n{}", self.lane_flags, self.code);
        }
    }

    /// The lane flags the body uses folded into the fast function's own
    /// flag (nothing if it uses none).
    pub fn fold_lane_flags(&self) -> String {
        match self.lane_flags {
            0 => String::new(),
            n => format!("    for (int q = 0; q < {n}; q++) acc_bad |= {LANE_FLAGS}[q];\n"),
        }
    }
}

/// The C condition that each component lies inside its extent ("1" for
/// none).
fn conjunction(components: &[(&String, &String)]) -> String {
    if components.is_empty() {
        return "1".into();
    }
    let each: Vec<String> = components.iter().map(|(x, d)| within_extent(x, d)).collect();
    format!("({})", each.join(" & "))
}

/// The most nodes of the branches of a conditional that a fast function
/// computes both of (Note [Both sides in fast functions]).
const BOTH_SIDES_NODES: usize = 48;

/// Generates the statements of scalar code, appended to `out`.
pub(crate) struct ExpGen<'a> {
    /// The arrays of the kernel's array environment, by de Bruijn index.
    pub arrays: &'a HashMap<usize, ArraySlot>,
    /// Source locations of the operations that can fail; an error names
    /// its site by position here.
    pub sites: &'a mut Vec<SrcLoc>,
    /// The kernel's hoisted literals (Note [Hoisted literals]).
    pub hoisted: &'a mut Hoisted,
    /// The code written so far, in pieces (Note [Code with holes]),
    /// before the piece being written, `out`.
    code: Vec<String>,
    out: String,
    indent: usize,
    fresh: usize,
    contexts: Vec<String>,
    /// Set once any error can be raised by the code generated so far.
    pub raised: bool,
    /// How many places in the code generated so far report an error.
    errors: usize,
    /// Positions (C atoms) known to lie inside these arrays, so that a
    /// linear read at them needs no check.
    pub trusted_linear: Trusted<String>,
    /// Indices (C atoms per dimension) known to lie inside these arrays.
    pub trusted_index: Trusted<Vec<String>>,
    /// In a fast function (Note [Optimistic checks]), the flag that a
    /// failed check sets instead of raising an error.
    pub optimistic: Option<String>,
    /// Array reads need no check: a uniform loop's lanes, whose reads
    /// were checked at the first and the last lane (Note [Reads checked
    /// at the ends of the lanes] in `cpu/generate.rs`).
    pub reads_checked_outside: bool,
    /// Whether a lane loop recorded failed checks in `LANE_FLAGS`.
    lane_flags: usize,
    /// C atoms that do not change inside the innermost loop being
    /// generated (a row's number and outer index).
    pub loop_invariant: Vec<String>,
    /// Splitting very large scalar code into functions (Note [Outlined
    /// chunks]): the prefix of their names, where the target allows it.
    pub outline: Option<String>,
    /// What `outline` knows of the terms being generated.
    outlining: outline::State,
    /// How many of the variables in scope have a deferred error.
    deferred_in_scope: usize,
    /// How many scalar loops of the C function being written enclose the
    /// code being generated (Note [Optimistic checks in loops]).
    in_loops: usize,
    /// How many of a skeleton's scalar loops (`open_scalar_loop`) enclose
    /// it, inside no element's own loop (Note [Optimistic checks in
    /// loops]).
    in_scalar_loops: usize,
    /// The shapes of the arrays in `arrays` (made when first asked).
    array_shapes: Option<HashSet<Vec<String>>>,
    /// For a C atom `x`, atoms `n` with `0 <= x < n` (Note [Components in
    /// range] in `c::kernel`): a check of `x` against `n` tests nothing.
    pub in_range: HashMap<String, HashSet<String>>,
    /// In the fast form of a function that tests them before its loops
    /// (Note [Checks before the loops]), the checks found so far whose
    /// every operand is fixed for the whole call; `None` elsewhere.
    pub before_loops: Option<Vec<String>>,
    /// The checks of a fast function made where its code is (`Body`).
    checks_in_place: usize,
    /// The extents of the kernel's input arrays and the elements of its
    /// rank-0 ones (made when first asked): with literals and hoisted
    /// literals, the atoms fixed for a call.
    fixed_extents: Option<HashSet<String>>,
    /// In a fast function that computes both sides of a branch (Note
    /// [Both sides in fast functions]), the C condition under which the
    /// code being generated is the program's; `None`: everywhere.
    guard: Option<String>,
    /// How many branches of the program's conditionals (written as C
    /// branches) enclose the code being generated.
    branches: usize,
    /// What is known of C atoms' values here (Note [Value ranges]).
    ranges: HashMap<String, ranges::Known>,
    /// For a boolean C atom, what its truth says of other atoms.
    implied: HashMap<(String, bool), Vec<(String, ranges::Known)>>,
    /// The function's error context, where it has a local flag `{ctx}_stop`
    /// set wherever an error reaches it (Note [A stop flag beside the
    /// error context]).
    pub stop: Option<String>,
    /// A reduction in order may stop once its accumulator holds its
    /// operator's absorbing value: the function raises nothing and keeps
    /// nothing it reads (Note [Absorbed reductions stop] in
    /// `cpu/fold.rs`).
    pub stop_absorbed: bool,
}

impl<'a> ExpGen<'a> {
    /// A generator whose errors go to the context `err` (a local `acc_err`
    /// the caller declares), writing statements at `indent` levels.
    pub fn new(
        arrays: &'a HashMap<usize, ArraySlot>,
        sites: &'a mut Vec<SrcLoc>,
        hoisted: &'a mut Hoisted,
        err: &str,
        indent: usize,
        prefix_counter: usize,
    ) -> ExpGen<'a> {
        ExpGen {
            arrays,
            sites,
            hoisted,
            code: Vec::new(),
            out: String::new(),
            indent,
            fresh: prefix_counter,
            contexts: vec![err.into()],
            raised: false,
            errors: 0,
            trusted_linear: Trusted::default(),
            trusted_index: Trusted::default(),
            optimistic: None,
            reads_checked_outside: false,
            lane_flags: 0,
            loop_invariant: Vec::new(),
            outline: None,
            outlining: outline::State::default(),
            deferred_in_scope: 0,
            in_loops: 0,
            in_scalar_loops: 0,
            array_shapes: None,
            in_range: HashMap::new(),
            before_loops: None,
            checks_in_place: 0,
            fixed_extents: None,
            guard: None,
            branches: 0,
            ranges: HashMap::new(),
            implied: HashMap::new(),
            stop: None,
            stop_absorbed: false,
        }
    }

    /// The code generated, the fresh-name counter (to continue the
    /// numbering in the kernel's next function), whether the code can
    /// raise an error, and the functions it calls (Note [Outlined chunks]).
    pub fn into_parts(mut self) -> Body {
        let code = self.take_code();
        let functions = std::mem::take(&mut self.outlining.functions);
        let consts = std::mem::take(&mut self.outlining.consts).into_iter().collect();
        let chunk_depth = self.outlining.deepest;
        Body {
            code,
            fresh: self.fresh,
            raised: self.raised,
            functions,
            consts,
            chunk_depth,
            lane_flags: self.lane_flags,
            before_loops: self.before_loops.take().unwrap_or_default(),
            checks_in_place: self.checks_in_place,
        }
    }

    pub fn line(&mut self, s: &str) {
        self.push_indent();
        self.out.push_str(s);
        self.out.push('\n');
    }

    /// Appends code written elsewhere (`aside`), as it is.
    pub fn push_code(&mut self, code: &str) {
        self.out.push_str(code);
    }

    /// Generates code with `f` if that code reports no error; otherwise
    /// generates nothing and returns `None`.
    pub fn without_errors<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> Option<T> {
        let (at, sites, errors, raised) = (self.mark(), self.sites.len(), self.errors, self.raised);
        let functions = self.outlining.functions.len();
        let r = f(self);
        if self.errors == errors {
            return Some(r);
        }
        self.truncate(at);
        self.outlining.functions.truncate(functions);
        self.sites.truncate(sites);
        (self.errors, self.raised) = (errors, raised);
        None
    }

    /// The current indentation, up to `MAX_INDENT` levels.
    fn push_indent(&mut self) {
        for _ in 0..self.indent.min(MAX_INDENT) {
            self.out.push_str("    ");
        }
    }

    /// A line of code at the current indentation.
    pub(crate) fn indented(&self, s: &str) -> String {
        format!("{}{s}\n", "    ".repeat(self.indent.min(MAX_INDENT)))
    }

    // Note [Code with holes]
    // Code is written once, in order, into one buffer, except where a
    // declaration must come before code that decides it: a conditional's
    // result variables (their types are those of its branches' values) and
    // a let's own error context (needed only if its bound term's code can
    // fail). There the buffer is cut and a *hole* left, filled once the
    // code after it is written, and the pieces are joined at the end.
    // Writing such code into a buffer of its own and copying it into its
    // parent's copied each level of 10^4 nested conditionals into every
    // level above it: quadratic.

    /// Where the code is now (`truncate` goes back to it).
    fn mark(&self) -> (usize, usize) {
        (self.code.len(), self.out.len())
    }

    /// Drops the code written since `mark`.
    fn truncate(&mut self, (pieces, len): (usize, usize)) {
        if self.code.len() > pieces {
            self.out = self.code.swap_remove(pieces);
            self.code.truncate(pieces);
        }
        self.out.truncate(len);
    }

    /// Leaves a hole here, filled by `fill`.
    pub(crate) fn hole(&mut self) -> usize {
        self.code.push(std::mem::take(&mut self.out));
        self.code.push(String::new());
        self.code.len() - 1
    }

    pub(crate) fn fill(&mut self, hole: usize, text: String) {
        self.code[hole] = text;
    }

    /// The code written so far, taken out.
    fn take_code(&mut self) -> String {
        let mut code = std::mem::take(&mut self.code);
        code.push(std::mem::take(&mut self.out));
        code.concat()
    }

    /// Code generated by `f` on its own, taken out (at the current
    /// indentation): for code whose declarations must precede it.
    pub fn aside<T>(&mut self, f: impl FnOnce(&mut Self) -> T) -> (String, T) {
        let saved = (std::mem::take(&mut self.code), std::mem::take(&mut self.out));
        let r = f(self);
        let code = self.take_code();
        (self.code, self.out) = saved;
        (code, r)
    }

    pub fn open(&mut self, s: &str) {
        self.line(s);
        self.indent += 1;
    }

    pub fn close(&mut self, s: &str) {
        self.indent -= 1;
        self.line(s);
    }

    pub fn fresh(&mut self, base: &str) -> String {
        self.fresh += 1;
        format!("{base}{}", self.fresh)
    }

    /// A new variable holding `expr`.
    pub fn bind(&mut self, t: ScalarTy, expr: &str) -> String {
        let v = self.fresh("v");
        self.line(&format!("{} {v} = {expr};", c_type(t)));
        v
    }

    /// In a fast function (Note [Optimistic checks]), marks the loop that
    /// follows as free of dependences between iterations but the flag's,
    /// so that the C compiler need not prove that the inputs it reads do
    /// not overlap the accumulators it keeps: the loop over a
    /// reduction's lanes, or over independent elements. Outside fast
    /// functions the loop may raise errors (a dependence) and gets none.
    pub fn independent_iterations(&mut self) {
        if let Some(flag) = &self.optimistic {
            let line = format!("#pragma omp simd reduction(|:{flag})");
            self.line(&line);
        }
    }

    /// Opens a skeleton's scalar loop (`header`, ending in `{`), whose
    /// element code leaves it on a failed check in a fast function (Note
    /// [Optimistic checks in loops]): the loop must be one no code after
    /// it needs to have finished, since the flag discards the range.
    pub fn open_scalar_loop(&mut self, header: &str) {
        self.open(header);
        self.in_scalar_loops += 1;
    }

    /// Closes a loop `open_scalar_loop` opened.
    pub fn close_scalar_loop(&mut self) {
        self.in_scalar_loops -= 1;
        self.close("}");
    }

    /// Opens the loop over lanes `0 <= q < width` (at most `most`) of a
    /// reduction: in a fast function free of dependences, each lane
    /// recording a failed check in its own flag (Note [Lane flags]); else
    /// marked `ACC_LANE_LOOP` (Note [Masked loads in lane loops]). Gives
    /// what `close_lane_loop` restores.
    pub fn open_lane_loop(&mut self, width: &str, most: usize) -> Option<String> {
        let saved = self.optimistic.clone();
        if saved.is_some() {
            self.line("#pragma omp simd");
            self.optimistic = Some(format!("{LANE_FLAGS}[q]"));
            self.lane_flags = self.lane_flags.max(most);
        } else {
            self.line("ACC_LANE_LOOP");
        }
        self.open(&format!("for (int q = 0; q < {width}; q++) {{"));
        saved
    }

    /// Closes the loop `open_lane_loop` opened.
    pub fn close_lane_loop(&mut self, saved: Option<String>) {
        self.close("}");
        self.optimistic = saved;
    }

    /// The C condition "this context or an enclosing one has failed".
    pub fn failed(&self) -> String {
        if let Some(flag) = &self.optimistic {
            return flag.clone();
        }
        self.contexts.iter().map(|c| format!("{c}.code")).collect::<Vec<_>>().join(" | ")
    }

    /// Records an error in the current context (a skeleton's own check).
    pub fn raise_at(&mut self, code: &str, loc: SrcLoc, vals: &[String]) {
        self.raise(code, loc, vals)
    }

    pub fn indent_in(&mut self) {
        self.indent += 1;
    }

    pub fn indent_out(&mut self) {
        self.indent -= 1;
    }

    /// Whether evaluating `e` in `env` can neither raise an error nor run
    /// a loop, and `e` has at most `budget` nodes: such a term may be
    /// evaluated where the program would not evaluate it.
    fn cannot_fail(&self, e: &OpenExp, env: &[Bound], budget: usize) -> bool {
        fn go(g: &ExpGen<'_>, e: &OpenExp, env: &[Bound], budget: &mut usize) -> bool {
            if *budget == 0 {
                return false;
            }
            *budget -= 1;
            let ok = match &e.kind {
                // (no binders below, so indices are the environment's)
                ExpKind::While { .. } | ExpKind::Let(..) => false,
                ExpKind::Var(i) => env[env.len() - 1 - i].deferred.is_none(),
                _ => !g.raises_here(e),
            };
            let mut children = ok;
            accelerate_ir::visit::each_child(e, |c| children = children && go(g, c, env, budget));
            children
        }
        go(self, e, env, &mut { budget })
    }

    /// Whether the node `e` itself (not its subterms) may raise an error:
    /// a checked primitive, or a read (reads of rank-0 arrays cannot fail).
    pub(super) fn raises_here(&self, e: &OpenExp) -> bool {
        use PrimFun::*;
        match &e.kind {
            ExpKind::Index { array, .. } => !self.arrays.get(array).is_some_and(|s| s.extents.is_empty()),
            ExpKind::LinearIndex { .. } => true,
            ExpKind::Prim(
                Quot | Rem | IDiv | Mod | FromIndex | BoundsCheck | ReshapeCheck | ShapeCheck,
                _,
            ) => true,
            _ => false,
        }
    }

    /// Whether evaluating `e` in `env` may raise an error (anywhere inside
    /// it, or by using a variable whose binding's error is deferred).
    pub fn may_raise(&self, e: &OpenExp, env: &[Bound]) -> bool {
        // with no deferred binding in scope, only the term's own nodes can
        // (known for every node at once: asking each let of a chain nested
        // in its bound terms was quadratic)
        if self.deferred_in_scope == 0 {
            if let Some(raises) = self.raises_within(e) {
                return raises;
            }
        }
        self.may_raise_under(e, env, 0)
    }

    /// `may_raise` for a term under `depth` binders of its own.
    fn may_raise_under(&self, e: &OpenExp, env: &[Bound], depth: usize) -> bool {
        let deferred = |i: usize| i >= depth && env[env.len() - 1 - (i - depth)].deferred.is_some();
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &e.kind {
            ExpKind::Var(i) => deferred(*i),
            ExpKind::Let(b, body) => {
                self.may_raise_under(b, env, depth) || self.may_raise_under(body, env, depth + 1)
            }
            ExpKind::While { cond, body, init } => {
                self.may_raise_under(init, env, depth)
                    || self.may_raise_under(&cond.body, env, depth + cond.params.len())
                    || self.may_raise_under(&body.body, env, depth + body.params.len())
            }
            _ => {
                let mut found = self.raises_here(e);
                accelerate_ir::visit::each_child(e, |c| found = found || self.may_raise_under(c, env, depth));
                found
            }
        })
    }

    /// Whether every atom of an index is a literal or `loop_invariant`.
    fn invariant(&self, ix: &[String]) -> bool {
        ix.iter().all(|a| a.parse::<i64>().is_ok() || self.loop_invariant.contains(a))
    }

    /// Checks the C condition `ok` (an atom or a parenthesised
    /// expression); when it fails, records an error in the current context,
    /// or only sets the flag of a fast function (Note [Optimistic checks]).
    /// Returns whether the code that follows runs only where `ok` holds
    /// (Note [Optimistic checks in loops]).
    fn check(&mut self, ok: &str, code: &str, loc: SrcLoc, vals: &[String]) -> bool {
        if let Some(flag) = &self.optimistic {
            self.checks_in_place += 1;
            let leaves = self.in_loops > 0 || (self.in_scalar_loops > 0 && self.guard.is_none());
            let line = if leaves {
                format!("if (!{ok}) {{ {flag} = 1; break; }}")
            } else if let Some(g) = &self.guard {
                // Note [Both sides in fast functions]
                format!("{flag} |= {g} & !{ok};")
            } else {
                format!("{flag} |= !{ok};")
            };
            self.line(&line);
            return leaves;
        }
        self.open(&format!("if (!{ok}) {{"));
        self.raise(code, loc, vals);
        self.close("}");
        false
    }

    /// Records an error in the current context.
    fn raise(&mut self, code: &str, loc: SrcLoc, vals: &[String]) {
        let site = self.sites.len();
        self.sites.push(loc);
        self.raised = true;
        self.errors += 1;
        let ctx = self.contexts.last().expect("a context").clone();
        if vals.is_empty() {
            self.line(&format!("acc_raise(&{ctx}, {code}, {site}, 0, 0);"));
        } else {
            self.line(&format!(
                "{{ const int64_t ev[] = {{{}}}; acc_raise(&{ctx}, {code}, {site}, {}, ev); }}",
                vals.join(", "),
                vals.len()
            ));
        }
        if let Some(flag) = self.stop_flag(&ctx) {
            self.line(&format!("{flag} = 1;"));
        }
    }

    // Note [A stop flag beside the error context]
    // A loop over elements stops after the element that raised an error
    // (`if (e0.code) break;`). The context's address reaches `acc_raise`,
    // so GCC must assume that every store through an output pointer may
    // change `e0.code`, and reloads it from the stack after each element's
    // stores: a permute that adds one to a bin at a time (a histogram of
    // bytes, k-means' sums) tests memory after every store. In a C model of
    // that loop on the two-core EPYC of docs/benchmarks.md, 2^24 bytes into
    // 256 counts took 9.4 ms so, 5.1 to 5.5 ms testing a local flag
    // instead, and 5.9 ms as a plain loop. So the CPU backend declares
    // `int e0_stop` beside `e0`, every error that reaches `e0` also sets
    // it (a raise, a deferred error handed on, a call of an outlined chunk
    // that raised), and the element loops test it. Its address is never
    // taken, so it lives in a register.

    /// The flag to set where an error reaches the context `ctx`, if `ctx`
    /// is the function's own and the backend keeps one.
    fn stop_flag(&self, ctx: &str) -> Option<String> {
        self.stop.as_deref().filter(|c| *c == ctx).map(|c| format!("{c}_stop"))
    }

    /// Sets the stop flag of context `ctx`, where it has one, if an error
    /// has reached `ctx` by a way the generator does not see: handed on from
    /// a deferred binding, or raised by an outlined chunk through a pointer.
    pub(super) fn stop_if_failed(&mut self, ctx: &str) {
        if let Some(flag) = self.stop_flag(ctx) {
            self.line(&format!("{flag} |= {ctx}.code != ACC_ERR_NONE;"));
        }
    }

    /// Leaves the loop over elements if an element has raised an error
    /// into the function's context: by its stop flag where it has one.
    pub fn break_on_error(&mut self) {
        let ctx = self.contexts[0].clone();
        let failed = self.stop_flag(&ctx).unwrap_or_else(|| format!("{ctx}.code"));
        self.line(&format!("if ({failed}) break;"));
    }

    /// `f` applied to arguments, in a scope of its own.
    pub fn apply(&mut self, f: &Fun, args: Vec<CVal>) -> CVal {
        let mut env: Vec<Bound> = args.into_iter().map(|val| Bound { val, deferred: None }).collect();
        self.exp(&f.body, &mut env)
    }

    /// `f` applied to arguments in an environment that already has
    /// bindings (a loop function's outer variables).
    fn apply_in(&mut self, f: &Fun, arg: CVal, env: &mut Vec<Bound>) -> CVal {
        env.push(Bound { val: arg, deferred: None });
        let r = self.exp(&f.body, env);
        env.pop();
        r
    }

    pub fn exp(&mut self, e: &OpenExp, env: &mut Vec<Bound>) -> CVal {
        // Note [Outlined chunks]; Note [Stack per level]
        if let Some(call) = self.enter(e, env) {
            return call;
        }
        let r = stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.exp_inner(e, env));
        self.leave();
        r
    }

    // Note [Stack per level]
    // Generating a term recurses once per level of it, and a term is as
    // deep as a long program (2 x 10^5 levels for 10^5 fused maps). With
    // every case written inside one function, each level took that
    // function's frame for all of its cases' temporaries, 2.5 KB: half a
    // gigabyte of stack for such a term, mapped and faulted in by stacker.
    // So `exp_inner` only dispatches, and each case is a function of its
    // own, not inlined, whose frame is the only one a level adds.

    fn exp_inner(&mut self, e: &OpenExp, env: &mut Vec<Bound>) -> CVal {
        match &e.kind {
            ExpKind::Let(b, body) => self.let_exp(e, b, body, env),
            ExpKind::Var(i) => self.var_exp(*i, env),
            ExpKind::Const(c) => {
                let atom = self.hoisted.atom(*c);
                self.note_literal(&atom);
                self.set_known(&atom, ranges::literal(*c));
                CVal::scalar(c.ty(), atom)
            }
            ExpKind::Tuple(es) => self.tuple_exp(es, env),
            ExpKind::Prj(i, t) => project(self.exp(t, env), *i),
            ExpKind::Prim(op @ (PrimFun::LAnd | PrimFun::LOr), args) => self.logic_exp(*op, args, env),
            ExpKind::Prim(op, args) => self.prim_exp(*op, args, e.loc, env),
            ExpKind::Cond(c, t, f) => self.cond_exp(c, t, f, env),
            ExpKind::While { cond, body, init } => self.while_exp(cond, body, init, env),
            ExpKind::Index { array, index } => self.index_exp(*array, index, e.loc, env),
            ExpKind::LinearIndex { array, index } => self.linear_index_exp(*array, index, e.loc, env),
            ExpKind::Shape { array } => CVal::index(self.slot(*array).extents),
            ExpKind::ALet(..) => {
                unreachable!("array terms nested in scalar code are lifted before code generation")
            }
        }
    }

    #[inline(never)]
    fn let_exp(&mut self, e: &OpenExp, b: &OpenExp, body: &OpenExp, env: &mut Vec<Bound>) -> CVal {
        // (a binding that cannot fail needs no context of its own)
        if self.optimistic.is_some() || !self.may_raise(b, env) || self.strict_let(e) {
            let val = self.exp(b, env);
            env.push(Bound { val, deferred: None });
        } else {
            // the context is declared only if the bound term's code can
            // report an error into it (a read found inside its array's
            // bounds cannot): in a hole (Note [Code with holes])
            let ctx = self.fresh("d");
            let errors = self.errors;
            let declaration = self.indented(&format!("acc_err {ctx}; {ctx}.code = ACC_ERR_NONE;"));
            let hole = self.hole();
            self.contexts.push(ctx.clone());
            let val = self.exp(b, env);
            self.contexts.pop();
            if self.errors == errors {
                env.push(Bound { val, deferred: None });
            } else {
                self.fill(hole, declaration);
                env.push(Bound { val, deferred: Some(ctx) });
                self.deferred_in_scope += 1;
            }
        }
        let r = self.exp(body, env);
        if env.pop().is_some_and(|b| b.deferred.is_some()) {
            self.deferred_in_scope -= 1;
        }
        r
    }

    #[inline(never)]
    fn var_exp(&mut self, i: usize, env: &[Bound]) -> CVal {
        let b = self.variable(env, i);
        if let Some(d) = &b.deferred {
            self.raised = true;
            self.errors += 1;
            let ctx = self.contexts.last().expect("a context").clone();
            self.line(&format!("acc_propagate(&{ctx}, &{d});"));
            self.stop_if_failed(&ctx);
        }
        b.val
    }

    #[inline(never)]
    fn tuple_exp(&mut self, es: &[OpenExp], env: &mut Vec<Bound>) -> CVal {
        let vals: Vec<CVal> = es.iter().map(|x| self.exp(x, env)).collect();
        CVal {
            ty: EltTy::Tuple(vals.iter().map(|v| v.ty.clone()).collect()),
            leaves: vals.into_iter().flat_map(|v| v.leaves).collect(),
        }
    }

    #[inline(never)]
    fn logic_exp(&mut self, op: PrimFun, args: &[OpenExp], env: &mut Vec<Bound>) -> CVal {
        let sym = if op == PrimFun::LAnd { "&" } else { "|" };
        if self.cannot_fail(&args[1], env, 16) {
            // a small second argument that cannot fail is evaluated
            // always: no branch, so a loop around it can be vectorised
            let a = self.exp(&args[0], env);
            let b = self.exp(&args[1], env);
            let r = self.bind(ScalarTy::Bool, &format!("{} {sym} {}", a.leaves[0], b.leaves[0]));
            self.implied_by_both(op, &r, &a.leaves[0], &b.leaves[0]);
            return CVal::scalar(ScalarTy::Bool, r);
        }
        let a = self.exp(&args[0], env);
        let r = self.bind(ScalarTy::Bool, &a.leaves[0]);
        let test = if op == PrimFun::LAnd { r.clone() } else { format!("!{r}") };
        if self.both_sides(&[&args[1]]) {
            let saved = self.guard_with(&test);
            let b = self.exp(&args[1], env);
            self.guard = saved;
            let v = self.bind(ScalarTy::Bool, &format!("{r} {sym} {}", b.leaves[0]));
            self.implied_by_both(op, &v, &a.leaves[0], &b.leaves[0]);
            return CVal::scalar(ScalarTy::Bool, v);
        }
        self.open(&format!("if ({test}) {{"));
        self.branches += 1;
        // (the second operand of `&&` is computed where the first holds,
        // of `||` where it fails)
        let facts = self.implied_by(&a.leaves[0], op == PrimFun::LAnd);
        let undo = self.assume(&facts);
        let b = self.exp(&args[1], env);
        self.forget(undo);
        self.branches -= 1;
        self.line(&format!("{r} = {};", b.leaves[0]));
        self.close("}");
        self.implied_by_both(op, &r, &a.leaves[0], &b.leaves[0]);
        CVal::scalar(ScalarTy::Bool, r)
    }

    /// Records what `r`, the `&&` or `||` of `a` and `b`, says: holding,
    /// what both do for `&&`; failing, what both failing do for `||`.
    fn implied_by_both(&mut self, op: PrimFun, r: &str, a: &str, b: &str) {
        let truth = op == PrimFun::LAnd;
        let mut facts = self.implied_by(a, truth);
        facts.extend(self.implied_by(b, truth));
        self.set_implied(r, truth, facts);
    }

    // Note [Both sides in fast functions]
    // A conditional is a C branch, and a branch around a read (a load the
    // check makes conditional) keeps GCC from vectorising the loop around
    // it: MD5's search compares a digest's words with the target's by
    // `&&`, each comparison reading the target. In a fast function (Note
    // [Optimistic checks]) outside scalar loops, a conditional whose
    // branches are small and loop-free computes both branches and selects
    // (`c ? t : f`; `a && b` as `a & b`). What the program would not
    // compute must still not fail: the code of a branch runs under a
    // *guard*, the C condition under which the program takes it, and a
    // check there sets the flag only where the guard holds (`acc_bad |= g
    // & !ok`); its read is conditional on the check, so it reads nothing
    // where the check fails, taken or not. Every other operation is
    // defined on every operand (a division by zero divides by one), so a
    // branch not taken computes a value nobody uses, and nothing else.
    // Scalar loops keep their branches: there a failed check leaves the
    // loop and the code after it reads without a condition (Note
    // [Optimistic checks in loops]), which a guard would make unsound.

    /// Whether a fast function computes the branches `es` of a
    /// conditional both (Note [Both sides in fast functions]): outside
    /// scalar loops, each loop-free, and all of them small.
    fn both_sides(&self, es: &[&OpenExp]) -> bool {
        fn small(e: &OpenExp, budget: &mut usize) -> bool {
            let Some(left) = budget.checked_sub(1) else { return false };
            *budget = left;
            let mut ok = !matches!(e.kind, ExpKind::While { .. });
            accelerate_ir::visit::each_child(e, |c| ok = ok && small(c, budget));
            ok
        }
        let mut budget = BOTH_SIDES_NODES;
        self.optimistic.is_some()
            && self.before_loops.is_some()
            && self.in_loops == 0
            && es.iter().all(|e| small(e, &mut budget))
    }

    /// What is known of each leaf of `v` here.
    fn known_leaves(&self, v: &CVal) -> Vec<Option<ranges::Known>> {
        v.leaves.iter().map(|l| self.known(l)).collect()
    }

    /// Records that each result `rs` of a conditional lies in the union
    /// of the ranges of its branches' values, `then` and `other`.
    fn either_known(
        &mut self,
        rs: &[String],
        then: Vec<Option<ranges::Known>>,
        other: Vec<Option<ranges::Known>>,
    ) {
        for (r, (a, b)) in rs.iter().zip(then.into_iter().zip(other)) {
            self.set_known(r, a.zip(b).and_then(|(a, b)| ranges::union(a, b)));
        }
    }

    /// Makes the guard `cond` and the current guard (Note [Both sides in
    /// fast functions]); gives the current guard back.
    fn guard_with(&mut self, cond: &str) -> Option<String> {
        let g = match &self.guard {
            Some(outer) => format!("{outer} & {cond}"),
            None => cond.to_string(),
        };
        let g = self.bind(ScalarTy::Bool, &g);
        self.guard.replace(g)
    }

    #[inline(never)]
    fn prim_exp(&mut self, op: PrimFun, args: &[OpenExp], loc: SrcLoc, env: &mut Vec<Bound>) -> CVal {
        let vals: Vec<CVal> = args
            .iter()
            .enumerate()
            .map(|(k, x)| match (op, k, &x.kind) {
                // a shift amount and an integer divisor stay in the
                // source (Note [Hoisted literals])
                (
                    PrimFun::Shl | PrimFun::Shr | PrimFun::Quot | PrimFun::Rem | PrimFun::IDiv | PrimFun::Mod,
                    1,
                    ExpKind::Const(c),
                ) => CVal::scalar(c.ty(), literal(*c)),
                _ => self.exp(x, env),
            })
            .collect();
        self.prim(op, vals, loc)
    }

    #[inline(never)]
    fn cond_exp(&mut self, c: &OpenExp, t: &OpenExp, f: &OpenExp, env: &mut Vec<Bound>) -> CVal {
        let c = self.exp(c, env);
        if self.both_sides(&[t, f]) {
            // Note [Both sides in fast functions]
            let c = &c.leaves[0];
            let saved = self.guard_with(c);
            let tv = self.exp(t, env);
            self.guard = saved;
            let saved = self.guard_with(&format!("!{c}"));
            let fv = self.exp(f, env);
            self.guard = saved;
            let leaves = tv.ty.leaves();
            let rs: Vec<String> = leaves
                .iter()
                .zip(tv.leaves.iter().zip(&fv.leaves))
                .map(|(ty, (a, b))| self.bind(*ty, &format!("{c} ? {a} : {b}")))
                .collect();
            let (then, other) = (self.known_leaves(&tv), self.known_leaves(&fv));
            self.either_known(&rs, then, other);
            return CVal { ty: tv.ty, leaves: rs };
        }
        // the results are declared once the branches' values are known
        // (Note [Code with holes])
        let hole = self.hole();
        self.open(&format!("if ({}) {{", c.leaves[0]));
        self.branches += 1;
        // Note [Value ranges]
        let facts = self.implied_by(&c.leaves[0], true);
        let undo = self.assume(&facts);
        let tv = self.exp(t, env);
        let leaves = tv.ty.leaves();
        let rs: Vec<String> = leaves.iter().map(|_| self.fresh("v")).collect();
        for (r, v) in rs.iter().zip(&tv.leaves) {
            self.line(&format!("{r} = {v};"));
        }
        let then_known = self.known_leaves(&tv);
        self.forget(undo);
        self.close("} else {");
        self.indent += 1;
        let facts = self.implied_by(&c.leaves[0], false);
        let undo = self.assume(&facts);
        let ev = self.exp(f, env);
        let else_known = self.known_leaves(&ev);
        self.forget(undo);
        self.branches -= 1;
        for (r, v) in rs.iter().zip(&ev.leaves) {
            self.line(&format!("{r} = {v};"));
        }
        self.close("}");
        self.either_known(&rs, then_known, else_known);
        let declarations: String =
            rs.iter().zip(&leaves).map(|(r, t)| self.indented(&format!("{} {r};", c_type(*t)))).collect();
        self.fill(hole, declarations);
        CVal { ty: tv.ty, leaves: rs }
    }

    #[inline(never)]
    fn while_exp(&mut self, cond: &Fun, body: &Fun, init: &OpenExp, env: &mut Vec<Bound>) -> CVal {
        let x = self.exp(init, env);
        let shared = vec![false; x.leaves.len()];
        let mut states = self.while_lanes(cond, body, vec![x], std::slice::from_mut(env), &shared);
        states.pop().expect("one lane has one state")
    }

    // Note [Jammed float chains stay scalar]
    // A counted loop that carries a float sum (a fold inside an element's
    // function, in order as the semantics ask) can be vectorised by GCC
    // only as an in-order ("fold-left") reduction: the reads, products and
    // index arithmetic of 8 or 16 steps in vector registers, then every
    // lane extracted and added to the sum one at a time. With one element
    // a loop, the adds are one chain of dependent additions and the
    // extractions run in its shadow. With 4 elements jammed (Note [Jammed
    // loops] in `cpu/generate.rs`) the scalar loop's 8 chains already fill
    // the core's adders, and the extractions (4 shuffles a lane) become the
    // bound: GCC 12 on the AMD EPYC guest vectorised the audio program's
    // jammed bins' loop with 64-bit gathers and shuffles, and the program
    // took 172 to 189 ms against 84 to 93 ms for the scalar loop
    // (`accelerate-bench audio --size large`, two runs each, alternating).
    // So a jammed loop whose state has a float leaf starts with an empty
    // `asm volatile`, which no vectoriser looks through (GCC 12 has no
    // `#pragma GCC novector`, and the function's other loops must stay
    // vectorised) and which costs no instruction. Single loops keep their
    // vectorised form: SMVM's sequence of rows (`accelerate-seq`) was 2 ms
    // faster with it.

    /// The loop `while cond body` of several elements at once (Note
    /// [Jammed loops] in `cpu/generate.rs`): lane `q` starts from
    /// `inits[q]` in the environment `envs[q]`; a leaf of the state that
    /// `shared` marks is the same in every lane in every step (the
    /// condition reads only those), so it is one variable, stepped by the
    /// first lane, and the condition is tested at the first lane. The
    /// lanes' final states, in order. One lane is the plain loop.
    pub fn while_lanes(
        &mut self,
        cond: &Fun,
        body: &Fun,
        inits: Vec<CVal>,
        envs: &mut [Vec<Bound>],
        shared: &[bool],
    ) -> Vec<CVal> {
        let ty = inits[0].ty.clone();
        let leaves = ty.leaves();
        // the state's variables, each with its initial value; lane q's
        // leaves name them
        let (mut vars, mut first) = (Vec::new(), Vec::new());
        let mut lane_vars: Vec<Vec<String>> = vec![Vec::with_capacity(leaves.len()); inits.len()];
        for (l, t) in leaves.iter().enumerate() {
            for (q, x) in inits.iter().enumerate() {
                if q > 0 && shared[l] {
                    let v = lane_vars[0][l].clone();
                    lane_vars[q].push(v);
                    continue;
                }
                let v = self.fresh("w");
                self.line(&format!("{} {v} = {};", c_type(*t), x.leaves[l]));
                vars.push(v.clone());
                first.push(x.leaves[l].clone());
                lane_vars[q].push(v);
            }
        }
        let states: Vec<CVal> = lane_vars.into_iter().map(|leaves| CVal { ty: ty.clone(), leaves }).collect();
        let (code, stop) = self.aside(|g| {
            g.indent += 1;
            g.in_loops += 1;
            let c = g.apply_in(cond, states[0].clone(), &mut envs[0]);
            let failed = g.failed();
            let stop = format!("if (!{} || ({failed})) break;", c.leaves[0]);
            g.line(&stop);
            // every leaf of every lane's next state is computed before
            // any is assigned
            let mut assign = Vec::new();
            for (q, (state, env)) in states.iter().zip(envs.iter_mut()).enumerate() {
                let next = g.apply_in(body, state.clone(), env);
                for (l, (n, t)) in next.leaves.iter().zip(&leaves).enumerate() {
                    if q == 0 || !shared[l] {
                        assign.push((state.leaves[l].clone(), g.bind(*t, n)));
                    }
                }
            }
            g.in_loops -= 1;
            for (v, t) in &assign {
                g.line(&format!("{v} = {t};"));
            }
            g.indent -= 1;
            stop
        });
        // Note [Invariant code out of scalar loops]
        let code = match &self.optimistic {
            Some(flag) => {
                let (before, inside) = hoist_invariant(&code, &vars, flag, &stop);
                for l in &before {
                    self.line(l);
                }
                inside
            }
            None => code,
        };
        // Note [Versioned counted loops]
        let versioned = match self.optimistic.clone() {
            Some(flag) => counted::version(&code, &vars, &first, &flag, &stop, &mut |b| self.fresh(b)),
            None => None,
        };
        // Note [Jammed float chains stay scalar]
        let scalar = inits.len() > 1 && leaves.iter().any(|t| t.is_float());
        let write_loop = |g: &mut Self, step: &str| {
            g.line("for (;;) {");
            if scalar {
                g.line(
                    "__asm__ volatile(\"\"); /* not vectorised: Note [Jammed float chains stay scalar] */",
                );
            }
            g.push_code(step);
            g.line("}");
        };
        match versioned {
            Some(v) => {
                for l in &v.before {
                    self.line(l);
                }
                self.line(&format!("if ({}) {{", v.ok));
                write_loop(self, &v.code);
                self.line("} else {");
                write_loop(self, &code);
                self.line("}");
            }
            None => write_loop(self, &code),
        }
        states
    }

    #[inline(never)]
    fn index_exp(&mut self, array: usize, index: &OpenExp, loc: SrcLoc, env: &mut Vec<Bound>) -> CVal {
        let ix = self.exp(index, env);
        let trusted = self.reads_checked_outside || self.trusted_index.contains(&ix.leaves, array);
        self.read_index(array, &ix.leaves, loc, !trusted)
    }

    #[inline(never)]
    fn linear_index_exp(&mut self, array: usize, index: &OpenExp, loc: SrcLoc, env: &mut Vec<Bound>) -> CVal {
        let i = self.exp(index, env);
        let trusted = self.reads_checked_outside || self.trusted_linear.contains(&i.leaves[0], array);
        self.read_linear(array, &i.leaves[0], loc, !trusted)
    }

    /// Whether `array` is a rank-0 array of the kernel's (its element
    /// read once, before the kernel's loops: Note [Rank-0 reads]).
    pub fn is_rank0(&self, array: usize) -> bool {
        self.arrays.get(&array).is_some_and(|s| s.extents.is_empty())
    }

    pub fn slot(&mut self, array: usize) -> ArraySlot {
        self.note_array(array);
        self.arrays.get(&array).cloned().expect("every array a kernel reads has a slot")
    }

    /// The element of an array at a multidimensional index; `checked`
    /// unless the caller knows the index lies inside.
    #[inline(never)]
    pub fn read_index(&mut self, array: usize, ix: &[String], loc: SrcLoc, checked: bool) -> CVal {
        let slot = self.slot(array);
        let pos = linear_of(ix, &slot.extents);
        // a rank-0 array has its one element, read in the prologue (Note
        // [Rank-0 reads])
        if ix.is_empty() {
            return CVal { ty: slot.elt.clone(), leaves: slot.value_leaves() };
        }
        if !checked {
            let p = self.bind(ScalarTy::I64, &pos);
            return self.load(&slot, &p, None, false);
        }
        if self.ranges_before_loops(ix, &slot.extents) {
            let p = self.bind(ScalarTy::I64, &wrapping_linear_of(ix, &slot.extents));
            return self.load(&slot, &p, None, false);
        }
        let ok = self.in_bounds(ix, &slot.extents);
        let ok = self.bind(ScalarTy::Bool, &ok);
        let mut vals = vec![ix.len().to_string()];
        vals.extend(ix.iter().cloned());
        vals.extend(slot.extents.iter().cloned());
        let left = self.check(&ok, "ACC_ERR_INDEX_OUT_OF_BOUNDS", loc, &vals);
        // an index outside may overflow the position's arithmetic, which
        // wraps here; the position is only read where `ok`
        let p = self.bind(ScalarTy::I64, &wrapping_linear_of(ix, &slot.extents));
        let invariant = self.invariant(ix);
        self.load(&slot, &p, (!left).then_some(ok.as_str()), invariant)
    }

    /// The element of an array at a row-major position.
    #[inline(never)]
    pub fn read_linear(&mut self, array: usize, i: &str, loc: SrcLoc, checked: bool) -> CVal {
        let slot = self.slot(array);
        if !checked {
            return self.load(&slot, i, None, false);
        }
        let size = product(&slot.extents);
        let within = within_extent(i, &size);
        let i_owned = i.to_string();
        let operands: Vec<&String> = std::iter::once(&i_owned).chain(&slot.extents).collect();
        if self.check_before_loops(&within, &operands) {
            return self.load(&slot, i, None, false);
        }
        let ok = self.bind(ScalarTy::Bool, &within);
        let mut vals = vec![i.to_string(), size, slot.extents.len().to_string()];
        vals.extend(slot.extents.iter().cloned());
        let left = self.check(&ok, "ACC_ERR_LINEAR_INDEX_OUT_OF_BOUNDS", loc, &vals);
        let invariant = self.invariant(&[i.to_string()]);
        self.load(&slot, i, (!left).then_some(ok.as_str()), invariant)
    }

    /// Loads every leaf at position `p`; when `ok` is given, a failed
    /// check reads nothing and yields zeros, except in a fast function
    /// (Note [Optimistic checks]) reading at an index `invariant` in the
    /// loop: that read is unconditional, at position 0 when the check
    /// failed (every input buffer has an element there, `exec`), so that
    /// the C compiler can hoist it out of the loop, which it does not do
    /// for a conditional load (nor vectorise a loop containing one).
    fn load(&mut self, slot: &ArraySlot, p: &str, ok: Option<&str>, invariant: bool) -> CVal {
        let tys = slot.elt.leaves();
        let clamped = self.optimistic.is_some() && invariant;
        let leaves = slot
            .leaves
            .iter()
            .zip(&tys)
            .map(|(buf, t)| {
                let read = match ok {
                    Some(ok) if clamped => format!("{buf}[{ok} ? {p} : 0]"),
                    Some(ok) => format!("{ok} ? {buf}[{p}] : {}", zero(*t)),
                    None => format!("{buf}[{p}]"),
                };
                self.bind(*t, &read)
            })
            .collect();
        CVal { ty: slot.elt.clone(), leaves }
    }

    #[inline(never)]
    fn prim(&mut self, op: PrimFun, args: Vec<CVal>, loc: SrcLoc) -> CVal {
        use PrimFun::*;
        let tys: Vec<EltTy> = args.iter().map(|a| a.ty.clone()).collect();
        let result = op.result_ty(&tys).expect("the verifier typed every primitive");
        match op {
            ToIndex | FromIndex | Intersect | ShapeSize | BoundsCheck | ReshapeCheck | ShapeCheck => {
                return self.shape_prim(op, args, loc)
            }
            _ => {}
        }
        let t = args[0].ty.scalar().expect("a scalar operand");
        // Note [binary16 arithmetic]: widen, compute in f32, round once
        if t == ScalarTy::F16 && !matches!(op, Cast(_) | BitCast(_)) {
            let wide: Vec<CVal> = args
                .into_iter()
                .map(|a| match a.ty.scalar() {
                    Some(ScalarTy::F16) => {
                        let w = self.bind(ScalarTy::F32, &format!("acc_f16_to_float({})", a.leaves[0]));
                        CVal::scalar(ScalarTy::F32, w)
                    }
                    _ => a,
                })
                .collect();
            let r = self.prim(op, wide, loc);
            return match r.ty.scalar() {
                Some(ScalarTy::F32) => {
                    let h = self.bind(ScalarTy::F16, &format!("acc_float_to_f16({})", r.leaves[0]));
                    CVal::scalar(ScalarTy::F16, h)
                }
                _ => r,
            };
        }
        let rt = result.scalar().expect("a scalar result");
        let a = args[0].leaves[0].clone();
        let b = args.get(1).map(|x| x.leaves[0].clone()).unwrap_or_default();
        let sfx = helper_suffix(t);
        let ct = c_type(t);
        let float = t.is_float();
        let f32 = t == ScalarTy::F32;
        let libm = |name: &str| if f32 { format!("{name}f") } else { name.to_string() };
        let expr = match op {
            // integers: Note [Integer arithmetic that cannot wrap]
            Add | Sub | Mul if float || self.cannot_wrap(op, t, rt, &args) => {
                let sym = match op {
                    Add => "+",
                    Sub => "-",
                    _ => "*",
                };
                format!("{a} {sym} {b}")
            }
            Add => format!("acc_add_{sfx}({a}, {b})"),
            Sub => format!("acc_sub_{sfx}({a}, {b})"),
            Mul => format!("acc_mul_{sfx}({a}, {b})"),
            Min if float => format!("acc_fmin_{ct}({a}, {b})"),
            Max if float => format!("acc_fmax_{ct}({a}, {b})"),
            Min => format!("acc_min_{sfx}({a}, {b})"),
            Max => format!("acc_max_{sfx}({a}, {b})"),
            Neg if float => format!("acc_fneg_{ct}({a})"),
            Neg => format!("acc_neg_{sfx}({a})"),
            Abs if float => format!("acc_fabs_{ct}({a})"),
            Abs => format!("acc_abs_{sfx}({a})"),
            Signum => format!("acc_signum_{sfx}({a})"),
            Quot | Rem | IDiv | Mod => {
                self.check(&format!("({b} != 0)"), "ACC_ERR_DIVISION_BY_ZERO", loc, &[]);
                let name = match op {
                    Quot => "quot",
                    Rem => "rem",
                    IDiv => "idiv",
                    _ => "mod",
                };
                format!("acc_{name}_{sfx}({a}, {b} == 0 ? ({ct})1 : {b})")
            }
            FDiv => format!("{a} / {b}"),
            Lt | Le | Gt | Ge | Eq | Ne => {
                let sym = op.infix().expect("a comparison symbol");
                format!("(acc_bool)({a} {sym} {b})")
            }
            LNot => format!("(acc_bool)!{a}"),
            BAnd | BOr | BXor => {
                let sym = op.infix().expect("a bit operator symbol");
                format!("({ct})({a} {sym} {b})")
            }
            BNot => format!("({ct})~{a}"),
            Shl => format!("acc_shl_{sfx}({a}, {b})"),
            Shr => format!("acc_shr_{sfx}({a}, {b})"),
            PopCount => format!("acc_popcount_{sfx}({a})"),
            LeadingZeros => format!("acc_clz_{sfx}({a})"),
            TrailingZeros => format!("acc_ctz_{sfx}({a})"),
            Sqrt | Exp | Log | Sin | Cos | Tan | Asin | Acos | Atan | Sinh | Cosh | Tanh | Floor | Ceil
            | Round | Trunc => {
                let name = match op {
                    Log => "log".to_string(),
                    other => other.name(),
                };
                format!("{}({a})", libm(&name))
            }
            IsNan => format!("(acc_bool)(isnan({a}) != 0)"),
            IsInfinite => format!("(acc_bool)(isinf({a}) != 0)"),
            Atan2 => format!("{}({a}, {b})", libm("atan2")),
            Powf => format!("{}({a}, {b})", libm("pow")),
            LogBase => format!("{l}({a}) / {l}({b})", l = libm("log")),
            Powi => format!("acc_powi_{sfx}({a}, {b})"),
            // Note [Value ranges], Note [Narrow conversions]
            Cast(to @ (ScalarTy::I64 | ScalarTy::U64 | ScalarTy::U32))
                if float && self.known(&a).is_some_and(|k| ranges::casts_within(k, ScalarTy::I32)) =>
            {
                format!("acc_{sfx}_to_{}_in32({a})", c_type(to))
            }
            Cast(to) if float && self.known(&a).is_some_and(|k| ranges::casts_within(k, to)) => {
                format!("acc_{sfx}_to_{}_in({a})", c_type(to))
            }
            Cast(to) => cast(t, to, &a),
            BitCast(to) => {
                let src = self.bind(t, &a);
                let v = self.fresh("v");
                self.line(&format!("{} {v}; memcpy(&{v}, &{src}, sizeof {v});", c_type(to)));
                return CVal::scalar(to, v);
            }
            LAnd | LOr | ToIndex | FromIndex | Intersect | ShapeSize | BoundsCheck | ReshapeCheck
            | ShapeCheck => {
                unreachable!("handled above")
            }
        };
        let r = self.bind(rt, &expr);
        self.note_prim(op, t, rt, &args, &r);
        CVal::scalar(rt, r)
    }

    fn shape_prim(&mut self, op: PrimFun, args: Vec<CVal>, loc: SrcLoc) -> CVal {
        let sh = &args[0].leaves;
        match op {
            PrimFun::ToIndex => {
                let ix = &args[1].leaves;
                let mut acc = "(uint64_t)0".to_string();
                for (d, x) in sh.iter().zip(ix) {
                    acc = format!("({acc} * (uint64_t){d} + (uint64_t){x})");
                }
                CVal::scalar(ScalarTy::I64, self.bind(ScalarTy::I64, &format!("(int64_t){acc}")))
            }
            PrimFun::FromIndex => {
                let r = sh.len();
                let mut i = self.bind(ScalarTy::I64, &args[1].leaves[0]);
                let mut ix = vec![String::new(); r];
                for k in (0..r).rev() {
                    if k == 0 {
                        ix[0] = i.clone();
                    } else {
                        let d = &sh[k];
                        self.check(&format!("({d} != 0)"), "ACC_ERR_DIVISION_BY_ZERO", loc, &[]);
                        let safe = self.bind(ScalarTy::I64, &format!("{d} == 0 ? 1 : {d}"));
                        ix[k] = self.bind(ScalarTy::I64, &format!("acc_rem_int64_t({i}, {safe})"));
                        i = self.bind(ScalarTy::I64, &format!("acc_quot_int64_t({i}, {safe})"));
                    }
                }
                CVal::index(ix)
            }
            PrimFun::Intersect => {
                let other = &args[1].leaves;
                let atoms = sh
                    .iter()
                    .zip(other)
                    .map(|(a, b)| self.bind(ScalarTy::I64, &format!("acc_min_int64_t({a}, {b})")))
                    .collect();
                CVal::index(atoms)
            }
            PrimFun::ShapeSize => {
                let mut acc = "(uint64_t)1".to_string();
                for d in sh {
                    acc = format!("({acc} * (uint64_t){d})");
                }
                CVal::scalar(ScalarTy::I64, self.bind(ScalarTy::I64, &format!("(int64_t){acc}")))
            }
            PrimFun::BoundsCheck => {
                if !self.is_array_shape(sh) {
                    self.check_shape(sh, loc);
                }
                let ix = args[1].leaves.clone();
                if self.ranges_before_loops(&ix, sh) {
                    return CVal::index(ix);
                }
                let ok = self.in_bounds(&ix, sh);
                let ok = self.bind(ScalarTy::Bool, &ok);
                let mut vals = vec![ix.len().to_string()];
                vals.extend(ix.iter().cloned());
                vals.extend(sh.iter().map(|d| format!("({d} < 0 ? 0 : {d})")));
                self.check(&ok, "ACC_ERR_INDEX_OUT_OF_BOUNDS", loc, &vals);
                CVal::index(ix)
            }
            PrimFun::ReshapeCheck => {
                let to = &args[1].leaves;
                let (sa, oka) = self.checked_size(sh);
                let (sb, okb) = self.checked_size(to);
                let mut vals = vec![sh.len().to_string()];
                vals.extend(sh.iter().cloned());
                vals.push(to.len().to_string());
                vals.extend(to.iter().cloned());
                // either shape invalid, or sizes that differ (the host
                // says which: `reshape_error`)
                self.check(&format!("{oka} && {okb} && {sa} == {sb}"), "ACC_ERR_RESHAPE", loc, &vals);
                args[1].clone()
            }
            PrimFun::ShapeCheck => {
                if !self.is_array_shape(sh) {
                    self.check_shape(sh, loc);
                }
                args[0].clone()
            }
            _ => unreachable!("not a shape primitive"),
        }
    }

    /// Whether an index lies inside extents, as one branch-free C
    /// condition (`&` of comparisons of atoms, which the C compiler
    /// vectorises), testing only the components not known to be
    /// `in_range`.
    pub(crate) fn in_bounds(&self, ix: &[String], extents: &[String]) -> String {
        conjunction(&self.unproven(ix, extents))
    }

    /// The components of an index, with their extents, not known to lie
    /// inside them (`in_range`).
    fn unproven<'x>(&self, ix: &'x [String], extents: &'x [String]) -> Vec<(&'x String, &'x String)> {
        ix.iter()
            .zip(extents)
            .filter(|&(x, d)| !self.in_range.get(x).is_some_and(|n| n.contains(d)))
            .collect()
    }

    /// Records the check that index `ix` lies inside `extents` to be
    /// tested before the loops (`check_before_loops`), if it can be: each
    /// component not known to lie inside its extent is fixed, or is known
    /// to lie inside a fixed extent `e` of another array, so that the
    /// check of it against a fixed extent `d` is `e <= d` (Note [Ranges
    /// before the loops]); whether it did.
    fn ranges_before_loops(&mut self, ix: &[String], extents: &[String]) -> bool {
        let unproven: Vec<(String, String)> =
            self.unproven(ix, extents).into_iter().map(|(x, d)| (x.clone(), d.clone())).collect();
        let mut tests = Vec::new();
        let mut operands = Vec::new();
        for (x, d) in unproven {
            let within = self.in_range.get(&x).map(|es| {
                let mut es: Vec<String> = es.iter().cloned().collect();
                es.sort_unstable();
                es
            });
            let bound = if self.fixed(&x) {
                None
            } else {
                within.unwrap_or_default().into_iter().find(|e| self.fixed(e))
            };
            // a component known to lie in [0, hi] (Note [Value ranges])
            let range =
                self.known(&x).and_then(|k| Some((k.int_bounds().filter(|&(lo, _)| lo >= 0)?.1, k.floats)));
            match (bound, range) {
                (Some(e), _) => {
                    tests.push(format!("{e} <= {d}"));
                    operands.extend([e, d]);
                }
                (None, Some((hi, floats))) if !self.fixed(&x) => {
                    let floats = if floats { "ACC_FLOAT_RANGES && " } else { "" };
                    tests.push(format!("({floats}{hi}LL < {d})"));
                    operands.push(d);
                }
                (None, _) => {
                    tests.push(within_extent(&x, &d));
                    operands.extend([x, d]);
                }
            }
        }
        let ok = if tests.is_empty() { "1".to_string() } else { format!("({})", tests.join(" & ")) };
        let operands: Vec<&String> = operands.iter().collect();
        self.check_before_loops(&ok, &operands)
    }

    // Note [Ranges before the loops]
    // A generate over the shape of one array that reads another at one of
    // its own components (Floyd-Warshall's step reading the copies of
    // row and column `k`, Note [Lines read while written]: `col[i]`,
    // `row[j]`) checks `i` against the other array's extent in every
    // element, though `i` runs below its own shape's extent, which is
    // fixed for the call: the check holds for every element exactly when
    // that extent is at most the other. A fast function tests that once,
    // before its loops, as it tests checks at fixed indices (Note [Checks
    // before the loops]); the checked function, which runs where it fails,
    // tests each element.

    // Note [Checks before the loops]
    // A read at an index fixed for the whole call (a literal, a hoisted
    // literal, an input's extent: MD5's word `j` of a row, whose row the
    // loop's own index keeps inside, Note [Components in range]) has a
    // check that is the same for every element, and yet, tested in the
    // loop, makes the read a conditional load, which GCC 12 does not
    // vectorise when the loads are strided (a row's words are 16 apart).
    // A fast function (Note [Optimistic checks]) tests such checks once,
    // before its loops, and returns failed if one fails; its loops then
    // read without a condition, and only run where the checks hold. Only
    // reads that every element makes are tested so (not in a branch, a
    // guarded branch or a scalar loop), so that no element that the
    // program computes is sent to the checked function for a read the
    // program never makes; the checked function decides exactly, as for
    // every check of a fast function.

    /// Whether a C atom has one value for the whole call of a kernel
    /// function: a literal, a hoisted literal, an input's extent, or the
    /// element of a rank-0 input (Note [Rank-0 reads]).
    fn fixed(&mut self, atom: &str) -> bool {
        if super::is_i64_literal(atom) || self.hoisted.index_of(atom).is_some() {
            return true;
        }
        let arrays = self.arrays;
        self.fixed_extents
            .get_or_insert_with(|| {
                let rank0 = arrays.values().filter(|s| s.extents.is_empty()).flat_map(|s| s.value_leaves());
                arrays.values().flat_map(|s| s.extents.iter().cloned()).chain(rank0).collect()
            })
            .contains(atom)
    }

    /// Records the check `ok` of a read to be tested before the loops, if
    /// its `operands` are fixed and every element makes the read (Note
    /// [Checks before the loops]); whether it did.
    fn check_before_loops(&mut self, ok: &str, operands: &[&String]) -> bool {
        let everywhere =
            self.optimistic.is_some() && self.in_loops == 0 && self.branches == 0 && self.guard.is_none();
        if !everywhere || self.before_loops.is_none() || !operands.iter().all(|a| self.fixed(a)) {
            return false;
        }
        if ok != "1" {
            self.before_loops.get_or_insert_with(Vec::new).push(ok.to_string());
        }
        true
    }

    /// Whether `sh` (C atoms) is the shape of an array the kernel reads:
    /// valid, as every array's is.
    fn is_array_shape(&mut self, sh: &[String]) -> bool {
        let arrays = self.arrays;
        self.array_shapes
            .get_or_insert_with(|| arrays.values().map(|s| s.extents.clone()).collect())
            .contains(sh)
    }

    /// Raises the error of an invalid shape `sh` (a negative extent, or a
    /// size past `i64::MAX`), as the reshape of `sh` to itself, which the
    /// host turns into that error (`reshape_error`).
    fn check_shape(&mut self, sh: &[String], loc: SrcLoc) {
        let (_, ok) = self.checked_size(sh);
        let mut vals = vec![sh.len().to_string()];
        vals.extend(sh.iter().cloned());
        vals.push(sh.len().to_string());
        vals.extend(sh.iter().cloned());
        self.check(&ok, "ACC_ERR_RESHAPE", loc, &vals);
    }

    /// The size of a shape and whether it is valid: no negative extent,
    /// and the product of its non-zero extents without overflow (the rule
    /// of `reshape_error`).
    fn checked_size(&mut self, sh: &[String]) -> (String, String) {
        // without branches (a zero or negative extent multiplies by 1),
        // so that the compiler can take the check of a shape that does not
        // change out of a loop, and vectorise the loop
        let size = self.bind(ScalarTy::I64, "1");
        let ok = self.bind(ScalarTy::Bool, "1");
        let empty = self.bind(ScalarTy::Bool, "0");
        for d in sh {
            self.line(&format!(
                "{ok} &= ({d} >= 0) & !__builtin_mul_overflow({size}, {d} > 0 ? {d} : 1, &{size}); \
                 {empty} |= ({d} == 0);"
            ));
        }
        let size = self.bind(ScalarTy::I64, &format!("{empty} ? 0 : {size}"));
        (size, ok)
    }
}

/// Component `i` of a tuple value.
pub(crate) fn project(t: CVal, i: usize) -> CVal {
    let EltTy::Tuple(ts) = &t.ty else { panic!("projection of a scalar (the verifier rejects it)") };
    let start: usize = ts[..i].iter().map(|c| c.leaves().len()).sum();
    let n = ts[i].leaves().len();
    CVal { ty: ts[i].clone(), leaves: t.leaves[start..start + n].to_vec() }
}

/// The C condition that the index component `x` lies in `0 .. n`, for an
/// extent `n` (never negative): one unsigned comparison, a negative `x`
/// wrapping past every extent. (Two signed comparisons cost a sparse
/// product's short rows a fifth of their time: GCC cannot merge them
/// without knowing `n` non-negative.)
pub(crate) fn within_extent(x: &str, n: &str) -> String {
    format!("((uint64_t)({x}) < (uint64_t)({n}))")
}

/// The row-major position of an index inside extents (both C atoms).
pub(crate) fn linear_of(ix: &[String], extents: &[String]) -> String {
    let mut pos = "0".to_string();
    for (k, (x, d)) in ix.iter().zip(extents).enumerate() {
        pos = if k == 0 { x.clone() } else { format!("({pos}) * {d} + {x}") };
    }
    pos
}

/// `linear_of` in wrapping arithmetic (no undefined behaviour for an
/// index outside the extents; equal to it for one inside).
fn wrapping_linear_of(ix: &[String], extents: &[String]) -> String {
    match ix {
        [] => return "0".into(),
        [i] => return i.clone(),
        _ => {}
    }
    let mut pos = String::new();
    for (k, (x, d)) in ix.iter().zip(extents).enumerate() {
        pos = if k == 0 {
            format!("(uint64_t){x}")
        } else {
            format!("({pos}) * (uint64_t){d} + (uint64_t){x}")
        };
    }
    format!("(int64_t)({pos})")
}

/// The product of extents, as a C expression.
pub(crate) fn product(extents: &[String]) -> String {
    if extents.is_empty() {
        return "1".into();
    }
    extents.join(" * ")
}

// Note [Narrow conversions]
// A float known to lie within `int32_t`'s range (Note [Value ranges]) and
// cast to `i64`, `u64` or `u32` is converted to `int32_t` first, then
// widened: the same value, since both truncate toward zero and the value
// fits both types. Without AVX-512 (AVX2), x86-64 has vector conversions
// from floats to 32-bit signed integers only, so a loop converting to
// `int64_t` stays scalar, and with it everything else the loop does: the
// histogram's bins (`(x * 256) as i64` of an `x` in [0, 1)) were computed
// one at a time with two branches each, and the benchmark
// (`accelerate-bench histogram --size large`, AVX2 Zen 3) took 26 to 29
// ms at best, 2.4x rayon's time; through `int32_t`, 13.9 to 14.0 ms at
// best against rayon's 11.0 (2026-12-01). Under fast-math the range is
// not trusted, and the saturating conversion to the wide type is used
// instead (`_in32` in the prelude).

/// Rust's `as` from `from` to `to` of the C atom `a`.
fn cast(from: ScalarTy, to: ScalarTy, a: &str) -> String {
    if from == to {
        return a.to_string();
    }
    if from == ScalarTy::F16 {
        return cast(ScalarTy::F32, to, &format!("acc_f16_to_float({a})"));
    }
    match to {
        ScalarTy::Bool => format!("(acc_bool)({a} != 0)"),
        ScalarTy::F16 => format!("acc_double_to_f16((double){a})"),
        ScalarTy::F32 | ScalarTy::F64 => format!("({}){a}", c_type(to)),
        _ if from.is_float() => format!("acc_{}_to_{}({a})", helper_suffix(from), c_type(to)),
        _ => format!("({}){a}", c_type(to)),
    }
}

// Note [Invariant code out of scalar loops]
// A scalar `while` loop (a lifted fold inside an element: the audio
// program's sum over a window for each bin) computes in every step what
// does not depend on its state: the window's offset and length, their
// checks, the reads at the window's row. GCC does not move them out: a
// check in a loop leaves it (`break`), and a load after a check may not
// be moved above it. In a fast function (Note [Optimistic checks]) a
// failed check only sets the flag, so the generated lines of a loop's
// condition and step are scanned in order, and a line at the step's top
// level goes before the loop when every variable it reads was computed
// before the loop or by a line moved already, and it divides nothing (a
// C division may trap where the program would not have divided):
//
// - a check `if (!ok) { flag = 1; break; }` becomes `flag |= !ok;`;
// - a declaration `T v = e;` that loads (`[`) loads only where the flag
//   is clear (`flag ? 0 : (e)`): an index computed before the loop was
//   checked by a check that moves too (the checks in the loop test what
//   its state decides), or needs none;
// - any other line moves when it assigns only variables declared by
//   lines moved (the overflow-checked product of a shape's extents is a
//   declaration and an update on the next line).
//
// Everything else stays, in order, and every variable a line that stays
// names counts as computed in the loop. If a variable declared before
// the loop would still be assigned in it, nothing moves. The loop's own
// condition stays, and the lines of the step move past it: a loop that
// runs no step may then fail a check it never made, which only sends
// the chunk to the checked function, as any failed check does.

/// Splits the code of a loop's condition and step (Note [Invariant code
/// out of scalar loops]) into the lines that go before the loop
/// (unindented) and the code that stays; `state` are the loop's state
/// variables, `flag` the fast function's, `stop` the line of the
/// condition's test.
fn hoist_invariant(code: &str, state: &[String], flag: &str, stop: &str) -> (Vec<String>, String) {
    let mut inside: HashSet<String> = state.iter().cloned().collect();
    let mut declared: HashSet<String> = HashSet::new();
    let (mut before, mut kept, mut kept_targets) = (Vec::new(), String::new(), HashSet::new());
    let mut depth = 0usize;
    let check = format!("{{ {flag} = 1; break; }}");
    for line in code.lines() {
        let t = line.trim();
        let free = |e: &str| identifiers(e).all(|i| !inside.contains(i));
        let pure = |e: &str| !e.contains('/') && !e.contains('%');
        let moved = if depth > 0 || t == stop {
            None
        } else if let Some(ok) = t.strip_prefix("if (!").and_then(|r| r.strip_suffix(&format!(") {check}"))) {
            free(ok).then(|| format!("{flag} |= !{ok};"))
        } else if t.contains("break") || t.contains('{') || t.contains('}') {
            None
        } else if let Some((ty, v, e)) = declaration(t) {
            let loads = e.contains('[');
            (free(e) && pure(e)).then(|| {
                declared.insert(v.to_string());
                match loads {
                    true => format!("{ty} {v} = {flag} ? 0 : ({e});"),
                    false => t.to_string(),
                }
            })
        } else {
            let ok =
                !t.contains('[') && pure(t) && free(t) && assigned(t).iter().all(|v| declared.contains(*v));
            ok.then(|| t.to_string())
        };
        match moved {
            Some(l) => before.push(l),
            None => {
                let targets = assigned(t);
                inside.extend(defined(t).into_iter().chain(targets.iter().copied()).map(str::to_string));
                kept_targets.extend(targets.into_iter().map(str::to_string));
                depth += t.matches('{').count();
                depth = depth.saturating_sub(t.matches('}').count());
                kept.push_str(line);
                kept.push('\n');
            }
        }
    }
    if declared.iter().any(|v| kept_targets.contains(v)) {
        return (Vec::new(), code.to_string());
    }
    (before, kept)
}

/// The identifiers in a C fragment.
fn identifiers(s: &str) -> impl Iterator<Item = &str> {
    s.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .filter(|t| t.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_'))
}

/// The variables a line of C assigns (`v = `, `v &= `, ...) or passes by
/// address (`&v`), statement by statement.
fn assigned(t: &str) -> Vec<&str> {
    let mut out = Vec::new();
    for st in t.split(';') {
        let st = st.trim();
        let Some((lhs, _)) = st.split_once('=') else { continue };
        let lhs = lhs.trim_end_matches(['&', '|', '+', '-', '*', '^', '<', '>', '!']).trim();
        if is_word(lhs) {
            out.push(lhs);
        }
    }
    let b = t.as_bytes();
    for (i, _) in t.match_indices('&') {
        let after = &t[i + 1..];
        let prev_amp = i > 0 && b[i - 1] == b'&';
        if !prev_amp && after.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_') {
            out.extend(identifiers(after).next());
        }
    }
    out
}

/// The variable a line of C declares: `T v = e;`, `T v;` or `T v[n];`.
fn defined(t: &str) -> Option<&str> {
    if let Some((_, v, _)) = declaration(t) {
        return Some(v);
    }
    let (ty, rest) = t.split_once(' ')?;
    let v = rest.strip_suffix(';')?;
    let v = v.split_once('[').map_or(v, |(v, _)| v);
    (is_word(ty) && is_word(v) && ty != "return").then_some(v)
}

/// A line `T v = e;` as its type, variable and expression (`T` one word).
fn declaration(t: &str) -> Option<(&str, &str, &str)> {
    let (ty, rest) = t.split_once(' ')?;
    let (v, e) = rest.split_once(" = ")?;
    let e = e.strip_suffix(';')?;
    (is_word(ty) && is_word(v) && ty != "return").then_some((ty, v, e))
}

/// Whether a C token is one word (a type's or a variable's name).
fn is_word(w: &str) -> bool {
    !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

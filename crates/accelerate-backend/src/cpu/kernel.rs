//! What every kernel of the CPU backend shares: its C signature and
//! prologue (the arrays it reads, by slot), its loops over rows, and the
//! reader of a reduction's rows.
//!
//! Every kernel function has the signature
//! `void name(const acc_args *A, int64_t start, int64_t end)` and computes
//! the part `start .. end` of its iteration space, so that the executor can
//! split the space between workers (Note [Chunks]). `A->bufs` holds the
//! buffers of the arrays the kernel reads (every leaf of slot 0, then of
//! slot 1, ...), then its outputs; `A->extents` the extents of those
//! arrays, then of the iteration space; `A->params` the skeleton's own
//! integers; `A->consts` the kernel's hoisted literals (Note [Hoisted
//! literals]).
//!
//! What the kernels of both backends share whatever the target (`Source`,
//! `Kernel`, `Skeleton`, the readers and the statement helpers) is in
//! `backend::c::kernel`.

use crate::c::kernel::{read_at, read_ix, unravel, uses_from_index, Kept, KernelCore, KernelParts, Source};
use crate::c::{Body, CVal, ExpGen};
use accelerate_base::array::{EltTy, ScalarTy};
use accelerate_base::error::SrcLoc;
use accelerate_plan as plan;
use std::fmt::Write;
use std::ops::{Deref, DerefMut};

/// The declaration of a function's error context, after which a checked
/// function calls its fast form (Note [Optimistic checks]).
const ERROR_CONTEXT: &str = "    acc_err e0; e0.code = ACC_ERR_NONE; int e0_stop = 0;\n";

/// The code generation state of one kernel: the shared core (`KernelCore`,
/// which it dereferences to) and the state of its fast forms.
pub(crate) struct KernelGen {
    core: KernelCore,
    /// Generating the fast form of a function (Note [Optimistic checks]).
    fast: bool,
    /// The name of the last function opened.
    function: String,
    /// Whether the last function closed can raise an error.
    raised: bool,
    /// Where the last function opened starts in its output.
    start: usize,
    /// Whether the last function closed calls outlined chunks.
    outlined: bool,
    /// Writing a function that raises no error (so its elements may be
    /// computed in any order), or the fast form of one that does: both
    /// may compute short rows a block at a time (Note [Short rows] in
    /// `fold.rs`). Read through `any_order`.
    any_order: bool,
    /// Whether the function being written asked `any_order`.
    asked_order: bool,
    /// Writing the fast form of a function in `with_fast_path`, which
    /// tests fixed checks before its loops (Note [Checks before the
    /// loops] in `c::exp`).
    checks_before: bool,
    /// What the names of the functions being written end in (before their
    /// own suffixes): `_inplace` for the functions that write over an
    /// input (Note [Functions that write in place] in `generate.rs`).
    pub variant: &'static str,
    /// What the signatures of fast forms start with (GCC attributes:
    /// Note [Small results by comparison] in `permute.rs`).
    pub fast_attributes: &'static str,
    /// The checks the fast forms written so far make where their code is,
    /// not before their loops.
    pub fast_checks_in_place: usize,
    /// The function being written waits on the latency of its lanes'
    /// operations and is compiled for the narrower of the target's vectors
    /// (Note [Latency-bound lanes]); set by the writer before
    /// `close_function`, which clears it.
    pub latency_bound: bool,
    /// Where the signature of the function being written starts in its
    /// output.
    signature: usize,
}

impl Deref for KernelGen {
    type Target = KernelCore;
    fn deref(&self) -> &KernelCore {
        &self.core
    }
}

impl DerefMut for KernelGen {
    fn deref_mut(&mut self) -> &mut KernelCore {
        &mut self.core
    }
}

// Note [Latency-bound lanes]
// Where the processor has AVX-512F the kernels are compiled for 512-bit
// vectors (Note [Vector width] in `compile.rs`), but two kinds of loop
// were sized for two 256-bit vectors, whose two chains of operations
// overlap: a float reduction's 16 lanes along a row (`LANES`, Note
// [Multi-accumulator reductions]) and a uniform loop's lanes, which step
// together until every lane's condition fails (Note [Uniform loops]). In
// one 512-bit vector they are one chain, and wait on its latency: on the
// Intel guest of 2026-12-01 (`accelerate-bench moments mandelbrot --size
// large`) the four sums of `moments` took 5.2 to 6.2 ms at 512 bits
// against 3.9 to 4.4 at 256, and Mandelbrot's uniform loop 11.6 to 12.5
// against 8.7 to 9.6. So the writers of those functions mark them
// (`KernelGen::latency_bound`: `piece_totals` in `fold.rs` for a float
// reduction in pieces, `generate_function` where it writes a uniform
// loop), and `close_function` puts `ACC_LATENCY_BOUND` (`prelude.h`) on
// their signatures, which keeps them at 256 bits. Wider lanes would serve
// as well, but would change every reduction's order of combination on
// such processors; the rows of `_rows`, whose lanes are mostly short rows
// side by side, gained from the wide vectors (k-means 80 -> 44 ms) and
// are not marked.

impl KernelGen {
    /// The code generation state of a kernel of the plan.
    pub fn new(k: &plan::Kernel) -> KernelGen {
        KernelGen {
            core: KernelCore::new(k),
            fast: false,
            function: String::new(),
            raised: false,
            start: 0,
            outlined: false,
            any_order: false,
            asked_order: false,
            checks_before: false,
            variant: "",
            fast_checks_in_place: 0,
            fast_attributes: "",
            latency_bound: false,
            signature: 0,
        }
    }

    /// The code generation state of a kernel written as a block of the
    /// function `function` of a row group (`rows.rs`): in fast form (its
    /// checks set `acc_bad`), free to compute its elements in any order.
    pub fn group_member(k: &plan::Kernel, function: String) -> KernelGen {
        let mut g = KernelGen::new(k);
        (g.fast, g.any_order, g.function) = (true, true, function);
        g
    }

    /// The kernel's inputs, sites and hoisted literals (`KernelCore::finish`).
    pub fn finish(self) -> KernelParts {
        self.core.finish()
    }

    /// A scalar-code generator writing at `indent`, with errors to `e0`
    /// (or to the flag `acc_bad` of a fast function), which splits very
    /// large scalar code into functions (Note [Outlined chunks]).
    pub fn exp_gen(&mut self, indent: usize) -> ExpGen<'_> {
        let fast = self.fast;
        let name = self.function.clone();
        let mut g = self.core.exp_gen(indent);
        if fast {
            g.optimistic = Some("acc_bad".into());
        } else {
            // Note [A stop flag beside the error context]
            g.stop = Some("e0".into());
        }
        g.outline = Some(if fast { format!("{name}_fast") } else { name });
        if self.checks_before {
            // (its checked form was not outlined, so neither is it)
            g.before_loops = Some(Vec::new());
            g.outline = None;
        }
        g
    }

    /// Writes the C function that `function` writes (from `open_function`
    /// to `close_function`) and, when its checks can fail, a fast form of
    /// it that the function runs first (Note [Optimistic checks]). Only
    /// for functions that may compute their range twice.
    pub fn with_fast_path(&mut self, out: &mut String, function: impl Fn(&mut KernelGen, &mut String)) {
        let mut checked = String::new();
        self.asked_order = false;
        function(self, &mut checked);
        // a function large enough to be outlined (Note [Outlined chunks])
        // is not vectorised either way: its fast form would double its
        // compile time for nothing
        if self.raised && !self.outlined {
            (self.fast, self.any_order, self.checks_before) = (true, true, true);
            function(self, out);
            (self.fast, self.any_order, self.checks_before) = (false, false, false);
            let call = format!("{ERROR_CONTEXT}    if (!{}_fast(A, start, end)) return;\n", self.function);
            checked = checked.replacen(ERROR_CONTEXT, &call, 1);
        } else if !self.raised && !self.outlined && self.asked_order {
            // nothing to check: written again, free to reorder
            self.any_order = true;
            checked.clear();
            function(self, &mut checked);
            self.any_order = false;
        }
        out.push_str(&checked);
    }

    /// Whether the function being written is the fast form of one (Note
    /// [Optimistic checks]).
    pub fn fast(&self) -> bool {
        self.fast
    }

    /// Whether the function being written may compute its elements in any
    /// order (`any_order`); asking makes `with_fast_path` write a function
    /// that raises nothing a second time, free to.
    pub fn any_order(&mut self) -> bool {
        self.asked_order = true;
        self.any_order
    }

    /// Opens the C function `suffix` of this kernel: the signature, the
    /// input arrays as restrict pointers and extents, and the error
    /// context `e0`.
    pub fn open_function(&mut self, out: &mut String, suffix: &str, what: &str, loc: SrcLoc) {
        self.function = format!("{}{}{suffix}", self.name, self.variant);
        self.start = out.len();
        let _ = writeln!(out, "\n/* {} at {loc} */", crate::c::comment(what));
        self.signature = out.len();
        let f = &self.function;
        if self.fast {
            let _ = writeln!(
                out,
                "{}static int {f}_fast(const acc_args *A, int64_t start, int64_t end) {{",
                self.fast_attributes
            );
        } else {
            let _ = writeln!(out, "void {f}(const acc_args *A, int64_t start, int64_t end) {{");
        }
        self.core.open_inputs(out, "restrict");
        if self.fast {
            out.push_str("    int acc_bad = 0;\n");
        } else {
            out.push_str(ERROR_CONTEXT);
        }
    }

    /// Declares output buffers `name_l` of the element type, from
    /// `A->bufs[first ..]`; returns their names and the next buffer index.
    pub fn out_buffers(out: &mut String, name: &str, elt: &EltTy, first: usize) -> (Vec<String>, usize) {
        KernelCore::buffers(out, name, elt, first, "restrict")
    }

    /// `out_buffers` of the kernel's result, at its first own buffer:
    /// not `restrict` while an input's buffers are the result's.
    pub fn result_buffers(&self, out: &mut String, name: &str, elt: &EltTy) -> Vec<String> {
        let restrict = if self.aliased.is_some() { "" } else { "restrict" };
        KernelCore::buffers(out, name, elt, self.first_own_buf(), restrict).0
    }

    /// Closes a function with its body (`ExpGen::into_parts`): the error
    /// reaches the host.
    pub fn close_function(&mut self, out: &mut String, mut body: Body) {
        if std::mem::take(&mut self.latency_bound) {
            out.insert_str(self.signature, "ACC_LATENCY_BOUND ");
        }
        if !body.before_loops.is_empty() {
            // Note [Checks before the loops]
            body.before_loops.sort_unstable();
            body.before_loops.dedup();
            let tests: String =
                body.before_loops.iter().map(|ok| format!("    acc_bad |= !{ok};\n")).collect();
            body.code = format!("{tests}    if (acc_bad) return acc_bad;\n{}", body.code);
        }
        if self.fast {
            body.declare_lane_flags();
        }
        self.raised = body.raised;
        self.outlined = !body.functions.is_empty();
        if self.fast {
            self.fast_checks_in_place += body.checks_in_place;
        }
        self.core.close_body(out, self.start, &body);
        if self.fast {
            out.push_str(&body.fold_lane_flags());
        }
        out.push_str(if self.fast {
            "    return acc_bad;\n}\n"
        } else {
            "    acc_publish(A->err, &e0);\n}\n"
        });
    }
}

/// Opens the loop over the rows that `start .. end` touches: returns the
/// outer coordinates of row `r`; the row's part of the range is
/// `base + lo .. base + hi`.
pub(crate) fn open_rows(g: &mut ExpGen<'_>, sh: &[String]) -> Vec<String> {
    let n = &sh[sh.len() - 1];
    g.open(&format!("for (int64_t r = start / {n}; r * {n} < end; r++) {{"));
    let ix = row_at(g, sh);
    g.line("const int64_t lo = start > base ? start - base : 0;");
    g.line(&format!("const int64_t hi = end < base + {n} ? end - base : {n};"));
    ix
}

/// Inside a loop over rows `r`: row `r`'s outer coordinates, invariant
/// in the loops inside, and its first position `base`.
fn row_at(g: &mut ExpGen<'_>, sh: &[String]) -> Vec<String> {
    let rank = sh.len();
    let ix = unravel(g, "r", &sh[..rank - 1]);
    g.loop_invariant.push("r".into());
    g.loop_invariant.extend(ix.iter().cloned());
    g.line(&format!("const int64_t base = r * {};", sh[rank - 1]));
    ix
}

/// Rows of a tile (Note [Tiled rows] in `generate.rs`).
pub(crate) const TILE_ROWS: usize = 16;

/// Columns of a tile (Note [Tiled rows] in `generate.rs`).
pub(crate) const TILE_COLUMNS: usize = 64;

/// `open_rows`, a tile at a time (Note [Tiled rows] in `generate.rs`):
/// bands of `TILE_ROWS` rows, each by blocks of `TILE_COLUMNS` columns;
/// `lo .. hi` is the part of row `r` in the block and in `start .. end`.
/// Three loops to close.
pub(crate) fn open_tiled_rows(g: &mut ExpGen<'_>, sh: &[String]) -> Vec<String> {
    let n = &sh[sh.len() - 1];
    g.open(&format!("for (int64_t r0 = start / {n}; r0 * {n} < end; r0 += {TILE_ROWS}) {{"));
    g.open(&format!("for (int64_t c0 = 0; c0 < {n}; c0 += {TILE_COLUMNS}) {{"));
    g.open(&format!("for (int64_t r = r0; r < r0 + {TILE_ROWS} && r * {n} < end; r++) {{"));
    let ix = row_at(g, sh);
    g.line("const int64_t lo = start > base + c0 ? start - base : c0;");
    g.line(&format!("const int64_t row_end = end < base + {n} ? end - base : {n};"));
    g.line(&format!("const int64_t hi = row_end < c0 + {TILE_COLUMNS} ? row_end : c0 + {TILE_COLUMNS};"));
    ix
}

/// Where a reduction or scan reads one row of its source: the position of
/// the row's first element and, for a delayed source whose linear function
/// would divide, the row's outer index, so that its elements are read by
/// index with no division (as `generate` walks rows).
pub(crate) struct Row {
    pub base: String,
    outer: Option<Vec<String>>,
    keep: Option<Kept>,
}

impl Row {
    /// Row `r` of `src`, whose extents are `sh`, starting at `base`.
    pub fn new(g: &mut ExpGen<'_>, src: &Source, sh: &[String], r: &str, base: &str) -> Row {
        let by_index = sh.len() >= 2 && matches!(src, Source::Delayed(d) if uses_from_index(&d.linear));
        let outer = by_index.then(|| unravel(g, r, &sh[..sh.len() - 1]));
        g.loop_invariant.push(r.to_string());
        g.loop_invariant.extend(outer.iter().flatten().cloned());
        Row { base: base.to_string(), outer, keep: None }
    }

    /// A row read by position only.
    pub fn at(base: &str) -> Row {
        Row { base: base.to_string(), outer: None, keep: None }
    }

    /// The row of a fold that keeps what it reads: each element read is
    /// the source's second component, its first written to `keep`.
    pub fn keeping(self, keep: Option<&Kept>) -> Row {
        Row { keep: keep.cloned(), ..self }
    }

    /// The element at offset `k` (a C atom) of the row.
    pub fn read(&self, g: &mut ExpGen<'_>, src: &Source, k: &str, loc: SrcLoc) -> CVal {
        let (v, p) = match &self.outer {
            Some(outer) => {
                let mut ix = outer.clone();
                ix.push(k.to_string());
                (read_ix(g, src, &ix, loc), None)
            }
            None => {
                let p = g.bind(ScalarTy::I64, &format!("{} + {k}", self.base));
                (read_at(g, src, &p, loc), Some(p))
            }
        };
        match &self.keep {
            Some(keep) => {
                let p = p.unwrap_or_else(|| format!("{} + {k}", self.base));
                keep.split(g, &p, v)
            }
            None => v,
        }
    }
}

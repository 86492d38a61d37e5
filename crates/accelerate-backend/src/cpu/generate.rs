//! The generate skeleton: every producer (`generate`, `map`, `zip_with`,
//! `backpermute`, `replicate`, `slice`, and a delayed array that must be
//! made manifest) computes each element of its result independently.
//!
//! Algorithm: the executor splits the row-major positions `0 .. size`
//! into chunks (Note [Chunks]); a chunk `start .. end` is one loop.
//! When the producer's element at a position is a cheap function of the
//! position (a `map` reads its argument at the same position; a vector's
//! position is its index) the loop runs over positions:
//!
//! ```text
//! for i in start..end: out[i] = linear(i)
//! ```
//!
//! which the C compiler vectorises when `linear` has no checks left (reads
//! of an array inside the bounds of the loop are not checked: see
//! `c::kernel::trust`). Otherwise (a multidimensional `generate` or
//! `backpermute`) it runs over rows, turning the first position of each
//! row into an index once, so that the inner loop walks the innermost
//! dimension with no division:
//!
//! ```text
//! for each row r touching start..end:
//!     (i0, .., i_{n-2}) = from_index(outer shape, r)
//!     for j in the row's part of start..end: out[r*n + j] = index(i0, .., j)
//! ```

use super::exec::{alloc, dims_i64, finish, Launch};
use super::fold::LANES;
use super::kernel::KernelGen;
use crate::c::access::tiles_pay;
use crate::c::host::shape_of;
use crate::c::kernel::KernelCore;
use crate::c::kernel::ShapeOf;
use crate::c::kernel::{read_at, read_ix, store, trust, uses_from_index, Source};
use crate::c::{c_type, project, Bound, CVal, ExpGen};
use crate::host::Env;
use accelerate_base::array::ArrayData;
use accelerate_base::array::{EltTy, ScalarTy};
use accelerate_base::error::Result;
use accelerate_ir::{ExpKind, Fun, OpenExp, PrimFun};
use accelerate_plan as plan;
use std::sync::Arc;

/// The C functions of a generate kernel (its name and these suffixes).
pub(crate) const FUNCTIONS: &[&str] = &[""];

/// Launch: the result's positions in chunks of at least `GRAIN`.
pub(super) fn launch(launch: &Launch<'_>, env: &Env<Arc<ArrayData>>, shape: &ShapeOf) -> Result<ArrayData> {
    let k = launch.k;
    let dims = shape_of(env, shape)?;
    let size: usize = dims.iter().product();
    let mut out = alloc(&k.elt, &dims, k.loc)?;
    launch.run("", &mut out, &mut [], &dims_i64(&dims), &[], &launch.uniform(size, launch.grain()))?;
    finish(out, &k.elt, dims, size)
}

/// Launch of the function `_inplace`: the result, of extents `dims`,
/// written over `over`, an input of that shape that nothing else holds
/// (Note [Functions that write in place]).
pub(super) fn launch_in_place(launch: &Launch<'_>, over: ArrayData, dims: Vec<usize>) -> Result<ArrayData> {
    let k = launch.k;
    let size: usize = dims.iter().product();
    let mut out = over.into_buffers();
    let bounds = launch.uniform(size, launch.grain());
    launch.run(IN_PLACE, &mut out, &mut [], &dims_i64(&dims), &[], &bounds)?;
    finish(out, &k.elt, dims, size)
}

/// Writes the C function of a generate kernel whose elements are those of
/// the delayed array `src` (of rank `rank`), and, where the kernel may
/// write its result over an input, the function `_inplace` that does
/// (Note [Functions that write in place]).
pub(crate) fn generate(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::Generate) {
    generate_function(k, out, spec, s);
    let Some(v) = plan::in_place::in_place_input(spec) else { return };
    let Some(j) = spec.inputs.iter().position(|(x, _)| *x == v) else { return };
    let mut variant = String::new();
    (k.aliased, k.variant, k.fast_checks_in_place) = (Some(j), IN_PLACE, 0);
    generate_function(k, &mut variant, spec, s);
    (k.aliased, k.variant) = (None, "");
    if k.fast_checks_in_place == 0 {
        out.push_str(&variant);
        k.in_place = Some(v);
    }
}

/// The suffix of the function of a generate kernel that writes its result
/// over an input.
pub(crate) const IN_PLACE: &str = "_inplace";

// Note [Tiled rows]
// A producer that reads an array transposed (`transpose`, `a[j][i]` in a
// `generate`, `zip_with(a, transpose(b))`) walks that array down its
// columns as it writes its own rows: every element of a row reads
// another cache line, and the line is gone before the next row, which
// reads the neighbouring element of it, comes by. So where the access
// analysis (`c::access::tiles_pay`) finds a read that moves by one
// element from row to row and far along a row, the rows are written a
// tile at a time: bands of `TILE_ROWS` rows, each band by blocks of
// `TILE_COLUMNS` columns, every row of the band through the block before
// the next block (`open_tiled_rows` in `kernel.rs`). A tile's transposed
// reads then touch `TILE_COLUMNS` lines, each once per row of the band,
// from the first-level cache. The order of the elements changes, so only
// a function free to compute them in any order is tiled (`any_order`:
// the fast form, whose errors are a flag that sends the range to the
// checked form, which keeps row-major order; or a function with no
// check at all), and not a function whose elements run loops in
// lockstep (Note [Loops in lockstep]). On the two-core EPYC guest a
// transpose of a 4096 x 4096 f32 matrix took 70 to 71 ms by rows and
// 28.6 to 32.5 ms in tiles of 8, 16 or 32 rows by 64, 128 or 256
// columns (five shapes, best of 15 each; 16 by 64 the fastest), against
// 24.5 ms for a rayon loop over 32 x 32 tiles writing into a reused
// output (2026-11-30).

// Note [Functions that write in place]
// A generate kernel that reads one input only at each element's own
// position (`plan::in_place`, Note [Updates in place] there) gets a
// second function, `_inplace`, in which that input's pointers are the
// result's: each element reads its old value, then stores its new one.
// Neither pointer is `restrict` there (both are loads of the same
// argument, so GCC sees one base and still vectorises the loop, every
// dependence being within one element). The host launches it when the
// input is dead after the launch, nothing else holds its buffers and its
// shape is the result's (Note [Donated arrays] in `backend/host.rs`);
// otherwise the kernel's function writes a new array as before.
//
// An error must not leave a half-written range to be computed again: a
// fast form (Note [Optimistic checks]) whose check fails inside its loops
// hands its range to the checked function, which would then read the
// values the fast form wrote. So the in-place function is kept only when
// its fast form makes every check before its loops (Note [Checks before
// the loops]), where a failure writes nothing, or when it has no fast
// form: the checked function stops at its first error, and the result,
// over an array nothing reads again, is that error.

/// Writes the C function (and its fast form) of a generate kernel, named
/// for `k.variant`.
fn generate_function(k: &mut KernelGen, out: &mut String, spec: &plan::Kernel, s: &plan::Generate) {
    let (src, rank, elt, what, loc) = (&s.src.source, spec.out.rank, &spec.out.elt, spec.op, spec.loc);
    k.with_fast_path(out, |k, out| {
        k.open_function(out, "", what, loc);
        let obufs = k.result_buffers(out, "o", elt);
        let sh = KernelCore::extents(out, "sh", rank, k.first_own_extent());
        let by_rows = rank >= 2 && matches!(src, Source::Delayed(d) if uses_from_index(&d.linear));
        // (Note [Tiled rows]; asked only where it would tile, since asking
        // writes the function again)
        let tiles = by_rows && matches!(src, Source::Delayed(d) if tiles_pay(d) && !has_loop(&d.index.body));
        let tiled = tiles && k.any_order();
        let mut g = k.exp_gen(1);
        let element = match src {
            Source::Delayed(d) => Some((&d.shape, if by_rows { &d.index } else { &d.linear })),
            Source::Manifest(_) => None,
        };
        // lanes along the last component: by rows, the others are the
        // same in every lane (Note [Uniform loops])
        let arg = match by_rows {
            true => Varies::Tuple(
                (0..rank).map(|c| if c + 1 == rank { Varies::Step } else { Varies::Leaf(false) }).collect(),
            ),
            false => Varies::Step,
        };
        let plan =
            element.and_then(|(shape, f)| Lockstep::of(f, &arg, &|a| g.is_rank0(a)).map(|l| (shape, l)));
        // a uniform loop was written (Note [Latency-bound lanes])
        let mut uniform = false;
        if by_rows {
            let outer = match tiled {
                true => super::kernel::open_tiled_rows(&mut g, &sh),
                false => super::kernel::open_rows(&mut g, &sh),
            };
            let first = match &plan {
                Some((shape, l)) => {
                    let at = |g: &mut ExpGen<'_>, j: &str| {
                        let mut ix = outer.clone();
                        ix.push(j.to_string());
                        trust(g, shape, "", Some(&ix));
                        CVal::index(ix)
                    };
                    let pos = |j: &str| format!("base + {j}");
                    if l.write_if_quiet(&mut g, ("lo", "hi"), &at, &obufs, &pos) {
                        uniform = true;
                        "j0"
                    } else {
                        "lo"
                    }
                }
                None => "lo",
            };
            // element j of the row
            let element = |g: &mut ExpGen<'_>, j: &str| {
                let mut ix = outer.clone();
                ix.push(j.to_string());
                let v = read_ix(g, src, &ix, loc);
                store(g, &obufs, &format!("base + {j}"), &v);
            };
            match g.optimistic.is_some() {
                true => vector_rows(&mut g, first, &element),
                false => {
                    g.independent_iterations();
                    g.open(&format!("for (int64_t j = {first}; j < hi; j++) {{"));
                    element(&mut g, "j");
                    if g.raised {
                        g.break_on_error();
                    }
                    g.close("}");
                }
            }
            for _ in 0..if tiled { 3 } else { 1 } {
                if g.raised {
                    g.break_on_error();
                }
                g.close("}");
            }
        } else {
            let first = match &plan {
                Some((shape, l)) => {
                    let at = |g: &mut ExpGen<'_>, i: &str| {
                        trust(g, shape, i, None);
                        CVal::scalar(ScalarTy::I64, i.to_string())
                    };
                    if l.write_if_quiet(&mut g, ("start", "end"), &at, &obufs, &|i| i.to_string()) {
                        uniform = true;
                        "j0"
                    } else {
                        "start"
                    }
                }
                None => "start",
            };
            g.independent_iterations();
            g.open(&format!("for (int64_t i = {first}; i < end; i++) {{"));
            let v = read_at(&mut g, src, "i", loc);
            store(&mut g, &obufs, "i", &v);
            if g.raised {
                g.break_on_error();
            }
            g.close("}");
        }
        let parts = g.into_parts();
        k.latency_bound = uniform;
        k.close_function(out, parts);
    });
}

// Note [Short rows in fast functions]
// GCC vectorises the loop over a row's elements in blocks of 16 `f32`
// (AVX-512) and leaves the rest to a scalar loop; under `#pragma omp
// simd`, which a fast function's loop carries (Note [Optimistic
// checks]), GCC 12 does not vectorise that rest with narrower vectors as
// it does without the pragma. A matrix of short rows (8 columns, or 4)
// then ran every element one at a time: the last step of standardising
// the columns of a 2^20 x 8 matrix (`(x - mean) / std`, the standard
// deviation's square root and division fused into every element) took
// 18.1 ms on one worker in a C model of the loop, against 2.7 ms with
// the rest in vectors of 8. So a fast function's loop over a row runs
// whole blocks of 16 under the pragma, then one block of 8 and one of 4
// where they fit, each a loop of constant length that GCC vectorises
// whole, and the last elements one at a time; where the element's code
// is long (`SHORT_ROW_CODE`), only the blocks of 16, so that the
// function does not grow fourfold.

/// The longest element code (in bytes of C) that `vector_rows` writes
/// four times (Note [Short rows in fast functions]).
const SHORT_ROW_CODE: usize = 4096;

/// The loop of a fast function over the elements `first .. hi` of a row
/// (Note [Short rows in fast functions]).
fn vector_rows(g: &mut ExpGen<'_>, first: &str, element: &dyn Fn(&mut ExpGen<'_>, &str)) {
    g.line(&format!("int64_t j = {first};"));
    g.line("const int64_t whole = j + (hi - j) / 16 * 16;");
    let (code, ()) = g.aside(|g| {
        g.independent_iterations();
        g.open("for (int64_t jv = j; jv < whole; jv++) {");
        element(g, "jv");
        g.close("}");
    });
    let short = code.len() <= SHORT_ROW_CODE;
    g.push_code(&code);
    g.line("j = whole;");
    if short {
        for w in [8, 4] {
            g.open(&format!("if (hi - j >= {w}) {{"));
            g.independent_iterations();
            g.open(&format!("for (int64_t jv = j; jv < j + {w}; jv++) {{"));
            element(g, "jv");
            g.close("}");
            g.line(&format!("j += {w};"));
            g.close("}");
        }
    }
    g.open("for (; j < hi; j++) {");
    element(g, "j");
    g.close("}");
}

// Note [Loops in lockstep]
// An element computed by a scalar `while` loop (Mandelbrot's escape
// count) runs a data-dependent number of iterations, so the C compiler
// cannot vectorise the loop over elements around it. As ISPC and GPUs
// do, `LANES` neighbouring elements then run their loops in lockstep:
//
// ```text
// for each block of LANES positions p0 ..:
//     s[q] = init(p0 + q)                                  for every lane q
//     repeat:
//         for every lane q: c = cond(s[q]); s[q] = c ? body(s[q]) : s[q]
//     until c was false in every lane
//     out[p0 + q] = result(s[q])                           for every lane q
// ```
//
// Each loop over lanes has no branch and vectorises (a lane that has
// finished computes `body` again and discards it; its state no longer
// changes, so its `cond` stays false: no flag per lane is kept, and the
// lanes' loop works on one vector type: a byte flag beside 32-bit floats
// kept GCC 12 from vectorising it). The rest of the
// range runs one element at a time. `body` is evaluated on states the
// program would not have reached, so this is used only where that cannot
// show: where nothing in the element can raise an error, or in a fast
// function (Note [Optimistic checks]), whose errors are only a flag that
// sends the range to the checked function. A loop whose body reads arrays
// runs one element at a time: such loops are bound by their loads (the
// lifting transformation's per-row folds, `trafo::lift`), whose lanes of
// different lengths would idle (4.2x slower than one element at a time on
// the nested SMVM benchmark, docs/benchmarks.md); unless it is uniform,
// every lane taking the same steps and reading the same elements (Note
// [Uniform loops]).
//
// Note [A loop's tail in lockstep]
// An element may use its loop's result more than once after the loop (a
// shade computed from an escape count, a bin's magnitude from its sum):
// sharing recovery then binds the loop by a `let`, `let s = (while ..).i
// in tail`. Such an element runs in lockstep too when the tail has no
// loop: the lanes' final states are kept as before, and the loop over
// the lanes that stores the results evaluates the tail for each lane,
// with its `let`s' values and the state projected as the `let` says.
//
// Note [Lets before a loop in lockstep]
// The element's `let`s before its loop (Mandelbrot's point, `cr` and
// `ci`) are evaluated once per lane, with the initial states, and kept in
// arrays beside them; each step reads them there. Evaluated again in
// every step, they cost what they compute each time: the text form of
// Mandelbrot finds its pixel by an `i64` division and remainder of its
// flat index, which no vector unit does, and took 122 ms in lockstep
// against the Rust form's 22.

/// An element function that ends in a `while` loop: `while cond body
/// init` under projections and `let`s (every lane evaluates the `let`s'
/// bound terms in each of its loops: they are evaluated eagerly, which
/// Note [Loops in lockstep] allows).
struct Lockstep<'f> {
    /// The bound terms of the `let`s, outermost first.
    binds: Vec<&'f OpenExp>,
    cond: &'f Fun,
    body: &'f Fun,
    init: &'f OpenExp,
    /// What the element computes from the loop's result, when the loop is
    /// bound by a `let` (Note [A loop's tail in lockstep]): the
    /// projections of the result bound (innermost first), and the `let`'s
    /// body, in which that is the newest variable.
    tail: Option<(Vec<usize>, &'f OpenExp)>,
    /// The projections applied to the loop's result (or its tail's),
    /// innermost first.
    path: Vec<usize>,
    /// For a loop that reads arrays, which leaves of its state are the
    /// same in every lane (Note [Uniform loops]); `None` for others.
    uniform: Option<Varies>,
    /// Whether such a loop reads different elements in different lanes:
    /// its lanes are jammed, not run in lockstep (Note [Jammed loops]).
    gathers: bool,
}

impl<'f> Lockstep<'f> {
    /// `arg` says which parts of the argument differ between lanes,
    /// `rank0` tells the kernel's rank-0 arrays (`reads_array`).
    fn of(f: &'f Fun, arg: &Varies, rank0: &dyn Fn(usize) -> bool) -> Option<Lockstep<'f>> {
        let mut e = &f.body;
        let (mut binds, mut path) = (Vec::new(), Vec::new());
        loop {
            match &e.kind {
                ExpKind::Prj(i, t) => {
                    path.push(*i);
                    e = t;
                }
                // a loop bound by a `let` whose body has no loop: the
                // loop in lockstep, then its tail (Note [A loop's tail in
                // lockstep])
                ExpKind::Let(b, body) => match accelerate_ir::visit::projects_loop(b) {
                    Some((bound, w)) if !has_loop(body) => {
                        let mut l = Self::of_loop(w, binds, path, arg, rank0)?;
                        l.tail = Some((bound, body));
                        return Some(l);
                    }
                    _ => {
                        binds.push(&**b);
                        e = body;
                    }
                },
                ExpKind::While { .. } => return Self::of_loop(e, binds, path, arg, rank0),
                _ => return None,
            }
        }
    }

    /// The lockstep plan of the loop `e` under the `let`s `binds` and the
    /// projections `path` (outermost first).
    fn of_loop(
        e: &'f OpenExp,
        binds: Vec<&'f OpenExp>,
        mut path: Vec<usize>,
        arg: &Varies,
        rank0: &dyn Fn(usize) -> bool,
    ) -> Option<Lockstep<'f>> {
        let ExpKind::While { cond, body, init } = &e.kind else { return None };
        // a finished lane still runs `body`: a loop inside it might not
        // end on a state the program never gives it
        if has_loop(&cond.body) || has_loop(&body.body) {
            return None;
        }
        // a loop that reads arrays (a lifted fold over a row of its own
        // length, `trafo::lift`) is bound by its loads, and lanes of
        // different lengths idle in lockstep: one element at a time is
        // faster; unless every lane runs the same steps and reads the
        // same elements (Note [Uniform loops]), or runs the same steps
        // and reads others (Note [Jammed loops])
        let (uniform, gathers) = if reads_array(&cond.body, rank0) || reads_array(&body.body, rank0) {
            let (state, gathers) = uniform_loop(arg, &binds, cond, body, init)?;
            (Some(state), gathers)
        } else {
            (None, false)
        };
        path.reverse();
        Some(Lockstep { binds, cond, body, init, tail: None, path, uniform, gathers })
    }

    /// What lane `x` stores: the loop's final `state`, through the tail
    /// (in the loop's environment `env`) and the projections.
    fn result(&self, g: &mut ExpGen<'_>, mut env: Vec<Bound>, state: CVal) -> CVal {
        let mut r = match &self.tail {
            Some((bound, tail)) => {
                let val = bound.iter().fold(state, |v, &i| project(v, i));
                env.push(Bound { val, deferred: None });
                g.exp(tail, &mut env)
            }
            None => state,
        };
        for &i in &self.path {
            r = project(r, i);
        }
        r
    }

    /// The environment of the loop at the element whose argument is `x`.
    fn env(&self, g: &mut ExpGen<'_>, x: CVal) -> Vec<Bound> {
        let mut env = vec![Bound { val: x, deferred: None }];
        for b in &self.binds {
            let val = g.exp(b, &mut env);
            env.push(Bound { val, deferred: None });
        }
        env
    }

    /// `f` applied to the loop's environment and `state`.
    fn apply(&self, g: &mut ExpGen<'_>, f: &Fun, env: &[Bound], state: &CVal) -> CVal {
        let mut args: Vec<CVal> = env.iter().map(|b| b.val.clone()).collect();
        args.push(state.clone());
        g.apply(f, args)
    }

    /// Whether some array read of the loop, or of the `let`s it is under,
    /// is evaluated on some paths only: in a conditional's branch, or in
    /// the second operand of `&&` or `||` (Note [Reads checked at the
    /// ends of the lanes]).
    fn reads_on_some_paths(&self) -> bool {
        let reads = |e: &OpenExp| {
            accelerate_ir::visit::any_node(e, |x| {
                matches!(x.kind, ExpKind::Index { .. } | ExpKind::LinearIndex { .. })
            })
        };
        let branches = |e: &OpenExp| {
            accelerate_ir::visit::any_node(e, |x| match &x.kind {
                ExpKind::Cond(_, t, f) => reads(t) || reads(f),
                ExpKind::Prim(PrimFun::LAnd | PrimFun::LOr, args) => args.iter().skip(1).any(reads),
                _ => false,
            })
        };
        self.binds.iter().any(|b| branches(b)) || branches(&self.cond.body) || branches(&self.body.body)
    }

    /// Writes the blocks (`write`) where the order of errors cannot show
    /// (Note [Loops in lockstep]): in a fast function, or where the code
    /// reports no error. Says whether it wrote them.
    fn write_if_quiet(
        &self,
        g: &mut ExpGen<'_>,
        range: (&str, &str),
        at: &dyn Fn(&mut ExpGen<'_>, &str) -> CVal,
        obufs: &[String],
        pos: &dyn Fn(&str) -> String,
    ) -> bool {
        if g.optimistic.is_some() {
            self.write(g, range, at, obufs, pos);
            return true;
        }
        g.without_errors(|g| self.write(g, range, at, obufs, pos)).is_some()
    }

    /// The loop that sets every lane's initial state (after `pragma`),
    /// generated aside to learn the state's type first: its code, the
    /// first lane's state (for its type) and the lanes' arrays, and,
    /// where `keep_lets`, the values of the `let`s the loop is under, each
    /// lane's kept in arrays too (Note [Lets before a loop in lockstep]).
    fn initial_states(
        &self,
        g: &mut ExpGen<'_>,
        at: &dyn Fn(&mut ExpGen<'_>, &str) -> CVal,
        pragma: &dyn Fn(&mut ExpGen<'_>),
        keep_lets: bool,
        width: usize,
    ) -> (String, CVal, Vec<String>, Vec<CVal>) {
        let (code, (s0, lanes, lets)) = g.aside(|g| {
            pragma(g);
            g.open(&format!("for (int q = 0; q < {width}; q++) {{"));
            let p = g.bind(ScalarTy::I64, "j0 + q");
            let x = at(g, &p);
            let mut env = self.env(g, x);
            let s0 = g.exp(self.init, &mut env);
            let lanes: Vec<String> = s0.leaves.iter().map(|_| g.fresh("lane")).collect();
            for (l, v) in lanes.iter().zip(&s0.leaves) {
                g.line(&format!("{l}[q] = {v};"));
            }
            // each let's value, a lane array per leaf
            let kept = if keep_lets { &env[1..] } else { &[] };
            let lets: Vec<CVal> = kept
                .iter()
                .map(|b| {
                    let leaves = b
                        .val
                        .leaves
                        .iter()
                        .map(|v| {
                            let l = g.fresh("let");
                            g.line(&format!("{l}[q] = {v};"));
                            l
                        })
                        .collect();
                    CVal { ty: b.val.ty.clone(), leaves }
                })
                .collect();
            g.close("}");
            (s0, lanes, lets)
        });
        (code, s0, lanes, lets)
    }

    /// The environment of the loop for lane `q` from the arrays
    /// `initial_states` kept the `let`s' values in.
    fn kept_env(g: &mut ExpGen<'_>, x: CVal, lets: &[CVal]) -> Vec<Bound> {
        let mut env = vec![Bound { val: x, deferred: None }];
        for v in lets {
            let leaves =
                v.leaves.iter().zip(v.ty.leaves()).map(|(l, t)| g.bind(t, &format!("{l}[q]"))).collect();
            env.push(Bound { val: CVal { ty: v.ty.clone(), leaves }, deferred: None });
        }
        env
    }

    /// Writes the blocks of `LANES` positions from `range.0` while they
    /// fit before `range.1`, leaving `j0` at the first position not done.
    /// `at` gives the element function's argument at a position, `pos` an
    /// output position.
    fn write(
        &self,
        g: &mut ExpGen<'_>,
        (lo, hi): (&str, &str),
        at: &dyn Fn(&mut ExpGen<'_>, &str) -> CVal,
        obufs: &[String],
        pos: &dyn Fn(&str) -> String,
    ) {
        match &self.uniform {
            Some(uniform) if self.gathers => return self.write_jammed(g, (lo, hi), at, obufs, pos, uniform),
            Some(uniform) => return self.write_uniform(g, (lo, hi), at, obufs, pos, uniform),
            None => {}
        }
        // loops over lanes have no dependence between lanes but these
        // reductions of flags
        let flag = g.optimistic.clone();
        let pragma = |g: &mut ExpGen<'_>, also: Option<&str>| {
            let flags: Vec<&str> = also.into_iter().chain(flag.as_deref()).collect();
            let clauses: String = flags.iter().map(|f| format!(" reduction(|:{f})")).collect();
            g.line(&format!("#pragma omp simd{clauses}"));
        };
        g.line(&format!("int64_t j0 = {lo};"));
        g.open(&format!("for (; j0 + {LANES} <= {hi}; j0 += {LANES}) {{"));
        let (first, s0, lanes, lets) = self.initial_states(g, at, &|g| pragma(g, None), true, LANES);
        for (l, t) in lanes.iter().zip(s0.ty.leaves()) {
            g.line(&format!("{} {l}[{LANES}];", c_type(t)));
        }
        declare_lets(g, &lets);
        g.push_code(&first);
        // the loops, one step of every lane at a time
        g.open("for (;;) {");
        g.line("int any = 0;");
        pragma(g, Some("any"));
        g.open(&format!("for (int q = 0; q < {LANES}; q++) {{"));
        let p = g.bind(ScalarTy::I64, "j0 + q");
        let x = at(g, &p);
        let env = Self::kept_env(g, x, &lets);
        let leaves = lanes.iter().zip(s0.ty.leaves()).map(|(l, t)| g.bind(t, &format!("{l}[q]"))).collect();
        let cur = CVal { ty: s0.ty.clone(), leaves };
        let c = self.apply(g, self.cond, &env, &cur);
        let live = c.leaves[0].clone();
        let next = self.apply(g, self.body, &env, &cur);
        for ((l, n), c) in lanes.iter().zip(&next.leaves).zip(&cur.leaves) {
            g.line(&format!("{l}[q] = {live} ? {n} : {c};"));
        }
        g.line(&format!("any |= {live};"));
        g.close("}");
        match &flag {
            Some(f) => g.line(&format!("if (!any || {f}) break;")),
            None => g.line("if (!any) break;"),
        }
        g.close("}");
        // the results
        pragma(g, None);
        g.open(&format!("for (int q = 0; q < {LANES}; q++) {{"));
        let p = g.bind(ScalarTy::I64, "j0 + q");
        let state = CVal { ty: s0.ty.clone(), leaves: lanes.iter().map(|l| format!("{l}[q]")).collect() };
        let env = match self.tail {
            Some(_) => {
                let x = at(g, &p);
                Self::kept_env(g, x, &lets)
            }
            None => Vec::new(),
        };
        let r = self.result(g, env, state);
        store(g, obufs, &pos(&p), &r);
        g.close("}");
        g.close("}");
    }
}

// Note [Jammed loops]
// A loop whose condition is the same in every lane but whose steps read
// different elements there (the audio program's sum over a window for
// each of 64 bins: every bin counts to the window's length, and bin k
// reads the twiddle factor at `(2k + 1) n % 256`) does not run in
// lockstep: its lanes' reads are gathers, and a step over the lanes
// computes every lane's positions and checks apart, where one element at
// a time keeps them in registers and versions its counted loop (Note
// [Versioned counted loops] in `c/exp/counted.rs`), 3x slower on the
// audio program. Alone, though, such a loop is bound by the latency of
// its chains of floating-point additions, which IEEE order forbids to
// split: one add every 4 cycles on this machine where 2 could issue
// each cycle. So `JAM_LANES` neighbouring elements run in one scalar
// loop, unrolled and jammed as compilers do: each lane has its own
// variables for the state's leaves that vary, the leaves the same in
// every lane (the counter) are one variable, the condition is tested
// once a step, and the loop is the one a single element has, versioned
// and with its invariant code hoisted, but with `JAM_LANES` independent
// chains. Each lane takes exactly the steps it takes alone and does its
// own arithmetic in its own order, so the results are bit-identical;
// only the order in which lanes' steps interleave differs, which shows
// only in which error is found first, so, as lockstep, it is used only
// in a fast function or where nothing can raise. The lanes' states live
// in registers: a state with more varying leaves than `JAM_LEAVES` runs
// one element at a time (two lanes when twice as many fit).

/// Elements whose loops are jammed (Note [Jammed loops]).
const JAM_LANES: usize = 4;

/// The varying state leaves of all lanes of a jammed loop at most (Note
/// [Jammed loops]).
const JAM_LEAVES: usize = 8;

impl Lockstep<'_> {
    /// `write` for a loop whose condition is uniform and whose reads
    /// vary (Note [Jammed loops]): blocks of lanes, each one scalar loop.
    fn write_jammed(
        &self,
        g: &mut ExpGen<'_>,
        (lo, hi): (&str, &str),
        at: &dyn Fn(&mut ExpGen<'_>, &str) -> CVal,
        obufs: &[String],
        pos: &dyn Fn(&str) -> String,
        uniform: &Varies,
    ) {
        g.line(&format!("int64_t j0 = {lo};"));
        let (code, written) = g.aside(|g| {
            g.indent_in();
            // lane q's position, its loop's environment and initial state
            let lane = |g: &mut ExpGen<'_>, q: usize| {
                let p = g.bind(ScalarTy::I64, &format!("j0 + {q}"));
                let x = at(g, &p);
                let mut env = self.env(g, x);
                let init = g.exp(self.init, &mut env);
                (p, env, init)
            };
            let (p, env, init) = lane(g, 0);
            let (mut at_lane, mut envs, mut inits) = (vec![p], vec![env], vec![init]);
            let mut shared = Vec::new();
            let leaves = inits[0].ty.leaves().len();
            if uniform.uniform_leaves(&inits[0].ty, &mut shared).is_none() || shared.len() != leaves {
                // the analysis and the state disagree on the leaves (not
                // expected): every element one at a time
                return None;
            }
            let varying = shared.iter().filter(|s| !**s).count().max(1);
            let lanes = (JAM_LEAVES / varying).min(JAM_LANES);
            if lanes < 2 {
                return None;
            }
            for q in 1..lanes {
                let (p, env, init) = lane(g, q);
                at_lane.push(p);
                envs.push(env);
                inits.push(init);
            }
            let states = g.while_lanes(self.cond, self.body, inits, &mut envs, &shared);
            for ((state, env), p) in states.into_iter().zip(envs).zip(&at_lane) {
                let env = if self.tail.is_some() { env } else { Vec::new() };
                let r = self.result(g, env, state);
                store(g, obufs, &pos(p), &r);
            }
            g.indent_out();
            Some(lanes)
        });
        if let Some(lanes) = written {
            g.line(&format!("/* {lanes} elements' loops jammed (Note [Jammed loops]) */"));
            g.line(&format!("for (; j0 + {lanes} <= {hi}; j0 += {lanes}) {{"));
            g.push_code(&code);
            g.line("}");
        }
    }

    /// `write` for a uniform loop (Note [Uniform loops]): its uniform
    /// state leaves are scalars, its condition is evaluated once per step
    /// (at the block's first lane), and each step is one loop over the
    /// lanes for the other leaves, so that its reads are of one element
    /// for every lane.
    fn write_uniform(
        &self,
        g: &mut ExpGen<'_>,
        (lo, hi): (&str, &str),
        at: &dyn Fn(&mut ExpGen<'_>, &str) -> CVal,
        obufs: &[String],
        pos: &dyn Fn(&str) -> String,
        uniform: &Varies,
    ) {
        g.line(&format!("int64_t j0 = {lo};"));
        // Note [Wider uniform blocks]
        for width in [2 * UNIFORM_LANES, UNIFORM_LANES] {
            if !self.uniform_blocks(g, width, hi, at, obufs, pos, uniform) {
                return;
            }
        }
    }

    /// The blocks of `width` lanes of `write_uniform` from `j0` while
    /// they fit below `hi`; false where the analysis and the state
    /// disagree on the leaves (not expected; every element is then
    /// computed one at a time).
    #[allow(clippy::too_many_arguments)]
    fn uniform_blocks(
        &self,
        g: &mut ExpGen<'_>,
        width: usize,
        hi: &str,
        at: &dyn Fn(&mut ExpGen<'_>, &str) -> CVal,
        obufs: &[String],
        pos: &dyn Fn(&str) -> String,
        uniform: &Varies,
    ) -> bool {
        let flag = g.optimistic.clone();
        let pragma = |g: &mut ExpGen<'_>| match &flag {
            Some(f) => g.line(&format!("#pragma omp simd reduction(|:{f})")),
            None => g.line("#pragma omp simd"),
        };
        let stop = |g: &mut ExpGen<'_>| {
            if let Some(f) = &flag {
                g.line(&format!("if ({f}) break;"));
            }
        };
        // (its steps evaluate the lets where they need them)
        let (first, s0, lanes, _) = self.initial_states(g, at, &pragma, false, width);
        let tys = s0.ty.leaves();
        let mut leaves = Vec::new();
        let fits = uniform.uniform_leaves(&s0.ty, &mut leaves).is_some() && leaves.len() == tys.len();
        let uniform = leaves;
        if !fits {
            return false;
        }
        g.open(&format!("for (; j0 + {width} <= {hi}; j0 += {width}) {{"));
        for (l, t) in lanes.iter().zip(&tys) {
            g.line(&format!("{} {l}[{width}];", c_type(*t)));
        }
        g.push_code(&first);
        // the uniform leaves as scalars, from the first lane
        let scalars: Vec<Option<String>> = lanes
            .iter()
            .zip(&tys)
            .zip(uniform)
            .map(|((l, t), u)| u.then(|| g.bind(*t, &format!("{l}[0]"))))
            .collect();
        // the state of lane q: scalars for uniform leaves
        let state = |g: &mut ExpGen<'_>, q: &str| {
            let leaves = lanes
                .iter()
                .zip(&tys)
                .zip(&scalars)
                .map(|((l, t), s)| match s {
                    Some(s) => s.clone(),
                    None => g.bind(*t, &format!("{l}[{q}]")),
                })
                .collect();
            CVal { ty: s0.ty.clone(), leaves }
        };
        g.open("for (;;) {");
        // the condition, the same in every lane: at the first
        g.open("{");
        let x = at(g, "j0");
        let env = self.env(g, x);
        let cur = state(g, "0");
        let c = self.apply(g, self.cond, &env, &cur);
        g.line(&format!("if (!{}) break;", c.leaves[0]));
        g.close("}");
        stop(g);
        // Note [Reads checked at the ends of the lanes]
        let outside = flag.is_some() && !self.reads_on_some_paths();
        let first_step = outside.then(|| {
            // the step at the first lane, whose uniform leaves are kept
            // for after the lanes' step, and at the last lane: their
            // reads' checks are every lane's
            let x = at(g, "j0");
            let env = self.env(g, x);
            let cur = state(g, "0");
            let next = self.apply(g, self.body, &env, &cur);
            g.open("{");
            let last = (width - 1).to_string();
            let p = g.bind(ScalarTy::I64, &format!("j0 + {last}"));
            let x = at(g, &p);
            let env = self.env(g, x);
            let cur = state(g, &last);
            self.apply(g, self.body, &env, &cur);
            g.close("}");
            stop(g);
            next
        });
        // the step of the other leaves, every lane; in a fast function a
        // failed check there goes to the lane's own flag (Note [Lane
        // flags]: the reduction clause kept the lanes in memory, k-means'
        // nearest centroids 1.8x slower in a C model of its kernel),
        // and the loop need not stop on it: when it stops depends on
        // uniform leaves only, which the lanes' values never reach
        let saved = if flag.is_some() {
            g.open_lane_loop(&width.to_string(), width)
        } else {
            pragma(g);
            g.open(&format!("for (int q = 0; q < {width}; q++) {{"));
            None
        };
        let p = g.bind(ScalarTy::I64, "j0 + q");
        g.known_position(&p);
        g.reads_checked_outside = outside;
        let x = at(g, &p);
        let env = self.env(g, x);
        let cur = state(g, "q");
        let next = self.apply(g, self.body, &env, &cur);
        g.reads_checked_outside = false;
        for ((l, n), s) in lanes.iter().zip(&next.leaves).zip(&scalars) {
            if s.is_none() {
                g.line(&format!("{l}[q] = {n};"));
            }
        }
        g.close_lane_loop(saved);
        // the step of the uniform leaves, at the first lane (they read no
        // other leaf, so the first lane's new state serves)
        let (open, next) = match first_step {
            Some(next) => (false, next),
            None => {
                g.open("{");
                let x = at(g, "j0");
                let env = self.env(g, x);
                let cur = state(g, "0");
                (true, self.apply(g, self.body, &env, &cur))
            }
        };
        for (n, s) in next.leaves.iter().zip(&scalars) {
            if let Some(s) = s {
                g.line(&format!("{s} = {n};"));
            }
        }
        if open {
            g.close("}");
            stop(g);
        }
        g.close("}");
        // the results
        pragma(g);
        g.open(&format!("for (int q = 0; q < {width}; q++) {{"));
        let p = g.bind(ScalarTy::I64, "j0 + q");
        let leaves =
            lanes.iter().zip(&scalars).map(|(l, s)| s.clone().unwrap_or_else(|| format!("{l}[q]"))).collect();
        let state = CVal { ty: s0.ty.clone(), leaves };
        let env = match self.tail {
            Some(_) => {
                let x = at(g, &p);
                self.env(g, x)
            }
            None => Vec::new(),
        };
        let r = self.result(g, env, state);
        store(g, obufs, &pos(&p), &r);
        g.close("}");
        g.close("}");
        true
    }
}

/// Elements a uniform loop runs in lockstep (Note [Wider uniform
/// blocks]).
const UNIFORM_LANES: usize = 2 * LANES;

// Note [Reads checked at the ends of the lanes]
// In a uniform loop every read's index is the same in every lane or the
// lane's own position plus the same amount (Note [Reads along the
// lanes]): along the lanes each index component is constant or rises by
// one, so it lies inside its extent in every lane when it does in the
// first and the last. In a fast function the step is evaluated at those
// two lanes first, their checks setting the function's flag (and the
// loop stopping on it), and the lanes' step reads without checks; the
// first lane's step gives the uniform leaves' new values, which it gave
// after the lanes' step before. Each lane had checked its own reads,
// two comparisons a component and a flag a lane every step: the audio
// program's spectra in the peers' form (`audio::spectra_table`), its
// kernel compiled alone and driven from C on one thread, took 25 ms with
// them and 13.6 without. Where a read is evaluated on some paths only
// (a conditional's branch), the ends' evaluation may not reach it, and
// the lanes keep their checks. The `let`s the loop is under, which each
// lane evaluates again in each step, may read anywhere (the analysis
// asks only the loop's own reads to be along the lanes): they do not
// change from step to step, and every lane evaluated them with their
// checks when its initial state was made, the loop not starting where
// one failed.

// Note [Wider uniform blocks]
// A uniform loop's step is a few vector operations for the lanes and a
// few scalar ones for the uniform leaves (the counter, the condition),
// and each lane's state is a chain from step to step: k-means' nearest
// centroid compares a distance with the best so far and keeps one, a
// chain of a compare and a blend per centroid. With 16 lanes of `f32`,
// one vector each, a step is one such chain and its scalar part, about
// 2.5 cycles on the EPYC guest of docs/benchmarks.md; with 32 lanes the
// two vectors' chains overlap and the scalar part is shared. The
// generated nearest-centroid kernel, compiled alone and driven from C
// (2^20 points, 16 centroids, best of 50, one thread): 880 µs with 16
// lanes, 700 with 32, 670 with 64. The audio program's spectra in the
// peers' form (`audio::spectra_table`, two sums a lane and a vector load
// of each a step, Note [Reads along the lanes]), without checks in the
// lanes: 13.6 ms with 32 lanes, 9.5 with 64. So blocks of 64 lanes run
// while they fit, then blocks of 32 (a row shorter than a block runs
// one element at a time, and rows of 32 to 63 elements would have lost
// their lanes to that with 64 alone): `accelerate-bench audio --size
// large`, 8.06 ms with 32 lanes, 7.24 with 64 and 32 (JAX 8.3 and 8.4
// in the same runs).

// Note [Uniform loops]
// A loop whose steps and reads do not depend on the element runs the
// same number of iterations in every lane and reads the same array
// elements there: k-means' nearest centroid folds every point over the
// same centroids (`sfoldl` over a vector, an index counting from 0 to
// its length), so in lockstep each step is one load of a centroid for
// all lanes and vector arithmetic, where one element at a time was a
// scalar loop of compares and branches. Uniformity is found as GPU
// compilers find divergence: a value depends on the element if it is
// computed from the element's argument or from a loop state leaf that
// does; a state leaf does if its initial value does or its step reads
// one that does (to a fixed point, at most one round per leaf). The loop
// is uniform when its condition and the indices of all its reads depend
// only on leaves that do not; one whose condition does but whose reads
// differ between lanes is jammed instead (Note [Jammed loops]).
// Where a generate of rank 2 or more runs by rows, the lanes are the
// positions of one row, so the other components of the index are the
// same in every lane and only the last one varies.

// Note [Reads along the lanes]
// A uniform loop may read elements that differ from lane to lane and
// still run in lockstep, where the lanes read neighbouring elements: an
// index whose last component is the lane's own position plus the same
// amount in every lane (`Varies::Step`), its other components the same
// in every lane, as `table[i][k]` in the loop of element `(w, k)` over
// `i`. Each step's reads are then one vector load for all lanes, as a
// uniform read is one broadcast, and the loop is a chain of vector
// operations per block, not a gather a lane (the jammed loops' case,
// Note [Jammed loops]). The audio program in the form its Python peers
// use (`audio::spectra_table`: each window's sums over its samples, the
// bins in the lanes, a row of twiddle factors a sample) is such a loop.

/// Which parts of a value depend on the element (Note [Uniform loops]).
#[derive(Clone, Debug, PartialEq)]
enum Varies {
    Leaf(bool),
    /// A scalar that is the lane's position along the last component plus
    /// the same amount in every lane (Note [Reads along the lanes]).
    Step,
    Tuple(Vec<Varies>),
}

impl Varies {
    fn any(&self) -> bool {
        match self {
            Varies::Leaf(v) => *v,
            Varies::Step => true,
            Varies::Tuple(xs) => xs.iter().any(Varies::any),
        }
    }

    /// Whether an array read at this index reads neighbouring elements
    /// in neighbouring lanes (Note [Reads along the lanes]).
    fn along_the_lanes(&self) -> bool {
        match self {
            Varies::Step => true,
            Varies::Tuple(xs) => {
                matches!(xs.split_last(), Some((Varies::Step, rest)) if !rest.iter().any(Varies::any))
            }
            Varies::Leaf(_) => false,
        }
    }

    fn or(&self, other: &Varies) -> Varies {
        match (self, other) {
            (Varies::Step, Varies::Step) => Varies::Step,
            (Varies::Tuple(xs), Varies::Tuple(ys)) if xs.len() == ys.len() => {
                Varies::Tuple(xs.iter().zip(ys).map(|(x, y)| x.or(y)).collect())
            }
            // a whole tuple (a constant, say) against its components
            (Varies::Leaf(v), Varies::Tuple(xs)) | (Varies::Tuple(xs), Varies::Leaf(v)) => {
                Varies::Tuple(xs.iter().map(|x| x.or(&Varies::Leaf(*v))).collect())
            }
            _ => Varies::Leaf(self.any() || other.any()),
        }
    }

    /// Whether each leaf of a value of type `ty` is the same in every
    /// lane, or `None` where the structure does not match the type.
    fn uniform_leaves(&self, ty: &EltTy, out: &mut Vec<bool>) -> Option<()> {
        match (self, ty) {
            (Varies::Leaf(v), _) => out.extend(ty.leaves().iter().map(|_| !*v)),
            (Varies::Step, _) => out.extend(ty.leaves().iter().map(|_| false)),
            (Varies::Tuple(xs), EltTy::Tuple(ts)) if xs.len() == ts.len() => {
                for (x, t) in xs.iter().zip(ts) {
                    x.uniform_leaves(t, out)?;
                }
            }
            _ => return None,
        }
        Some(())
    }
}

/// Which leaves of the state of the loop `while cond body init`, in an
/// element function whose argument is followed by the `let`s bound to
/// `binds`, are the same in every lane, if the loop's condition is (Note
/// [Uniform loops]), and whether its steps read different elements in
/// different lanes (Note [Jammed loops]).
fn uniform_loop(
    arg: &Varies,
    binds: &[&OpenExp],
    cond: &Fun,
    body: &Fun,
    init: &OpenExp,
) -> Option<(Varies, bool)> {
    let mut env = vec![arg.clone()];
    for b in binds {
        let v = varies(b, &mut env, &mut false);
        env.push(v);
    }
    let mut state = varies(init, &mut env, &mut false);
    let steps = |f: &Fun, env: &[Varies], state: &Varies, read_varies: &mut bool| {
        let mut scope = env.to_vec();
        scope.push(state.clone());
        varies(&f.body, &mut scope, read_varies)
    };
    // to a fixed point: each round makes at least one more leaf vary
    loop {
        let next = state.or(&steps(body, &env, &state, &mut false));
        if next == state {
            break;
        }
        state = next;
    }
    let mut read_varies = false;
    let c = steps(cond, &env, &state, &mut read_varies);
    steps(body, &env, &state, &mut read_varies);
    (!c.any()).then_some((state, read_varies))
}

/// Which parts of `e` depend on the element, where `env` says so of its
/// variables; sets `read_varies` when an array read's index does.
fn varies(e: &OpenExp, env: &mut Vec<Varies>, read_varies: &mut bool) -> Varies {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &e.kind {
        ExpKind::Var(i) => env.len().checked_sub(i + 1).map_or(Varies::Leaf(true), |p| env[p].clone()),
        ExpKind::Const(_) | ExpKind::Shape { .. } => Varies::Leaf(false),
        ExpKind::Let(b, body) => {
            let v = varies(b, env, read_varies);
            env.push(v);
            let r = varies(body, env, read_varies);
            env.pop();
            r
        }
        ExpKind::Tuple(xs) => Varies::Tuple(xs.iter().map(|x| varies(x, env, read_varies)).collect()),
        ExpKind::Prj(i, t) => match varies(t, env, read_varies) {
            Varies::Tuple(mut xs) if *i < xs.len() => xs.swap_remove(*i),
            other => Varies::Leaf(other.any()),
        },
        ExpKind::Cond(c, t, x) => {
            let c = varies(c, env, read_varies).any();
            let (t, x) = (varies(t, env, read_varies), varies(x, env, read_varies));
            if c {
                Varies::Leaf(true)
            } else {
                t.or(&x)
            }
        }
        ExpKind::Index { index, .. } | ExpKind::LinearIndex { index, .. } => {
            let v = varies(index, env, read_varies);
            *read_varies |= v.any() && !v.along_the_lanes();
            Varies::Leaf(v.any())
        }
        // the lane's position plus or minus the same amount in every lane
        ExpKind::Prim(PrimFun::Add | PrimFun::Sub, args) if args.len() == 2 => {
            let (a, b) = (varies(&args[0], env, read_varies), varies(&args[1], env, read_varies));
            match (&a, &b) {
                (Varies::Step, Varies::Leaf(false)) => Varies::Step,
                (Varies::Leaf(false), Varies::Step) if matches!(&e.kind, ExpKind::Prim(PrimFun::Add, _)) => {
                    Varies::Step
                }
                _ => Varies::Leaf(a.any() || b.any()),
            }
        }
        ExpKind::Prim(_, args) => {
            let mut v = false;
            for a in args {
                v |= varies(a, env, read_varies).any();
            }
            Varies::Leaf(v)
        }
        // not followed: a nested loop is refused before, a nested array
        // is lifted away before code generation
        ExpKind::While { .. } | ExpKind::ALet(..) => {
            *read_varies = true;
            Varies::Leaf(true)
        }
    })
}

/// Declares the lanes' arrays of the `let`s' values (Note [Lets before a
/// loop in lockstep]).
fn declare_lets(g: &mut ExpGen<'_>, lets: &[CVal]) {
    for v in lets {
        for (l, t) in v.leaves.iter().zip(v.ty.leaves()) {
            g.line(&format!("{} {l}[{LANES}];", c_type(t)));
        }
    }
}

/// Whether `e` reads an array whose element may vary in a loop: a read of
/// a rank-0 array (`rank0`: a `Scalar` argument's value, as Mandelbrot's
/// iteration limit, `limit.the()`) is one value for the whole kernel,
/// read once before its loops (Note [Rank-0 reads]), and does not count.
/// (Counted, it kept the benchmark's Mandelbrot, whose limit is such an
/// argument, from running in lockstep: 63 ms, where lockstep had made it
/// 8.8.)
fn reads_array(e: &OpenExp, rank0: &dyn Fn(usize) -> bool) -> bool {
    accelerate_ir::visit::any_node(e, |x| match &x.kind {
        ExpKind::Index { array, .. } => !rank0(*array),
        ExpKind::LinearIndex { .. } | ExpKind::Shape { .. } => true,
        _ => false,
    })
}

fn has_loop(e: &OpenExp) -> bool {
    accelerate_ir::visit::any_node(e, |x| matches!(x.kind, ExpKind::While { .. }))
}

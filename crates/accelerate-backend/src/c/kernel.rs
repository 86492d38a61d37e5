//! What the kernels of both C-family backends share, whatever the target:
//! the description the host launches a kernel by (`Kernel`, `Skeleton`,
//! `ShapeOf`), the readers of a consumer's argument (`plan::Source`: `read_at`,
//! `read_ix`, with `trust`), the statements every skeleton writes
//! (`store`, `declare`, `assign`, `unravel`), what the skeletons ask of
//! an operator (`commutative`, `uses_from_index`), and the pieces of the
//! permute and scan skeletons that are the same logic on both targets.
//!
//! Each backend keeps its own `KernelGen` (the function signatures and
//! prologues differ: a C function over `start .. end` for the CPU, a
//! `__global__` function over a grid for CUDA) and its own loop helpers;
//! both write a kernel's body with `backend::c`'s `ExpGen`, which is all
//! the functions here need.

use super::{c_type, linear_of, ArraySlot, Body, CVal, ExpGen, Hoisted};
use accelerate_base::array::{ArrayTy, EltTy, ScalarTy, ScalarVal};
use accelerate_base::error::SrcLoc;
use accelerate_ir::{visit, DelayedArray, Direction, ExpKind, Fun, OpenExp, PrimFun};
use accelerate_plan as plan;
pub(crate) use accelerate_plan::Source;
use std::collections::HashMap;
use std::fmt::Write;

/// How the host finds the shape of a kernel's argument at run time.
#[derive(Clone, Debug)]
pub(crate) enum ShapeOf {
    /// The shape of the array variable.
    Var(usize),
    /// A closed expression, evaluated on the host.
    Exp(OpenExp),
}

/// The skeleton of a kernel and what its launch needs on the host. Each
/// backend's skeleton modules say which functions a kernel of the
/// skeleton has and how each is launched.
#[derive(Clone, Debug)]
pub(crate) enum Skeleton {
    /// An array computed element by element (every producer).
    Generate {
        shape: ShapeOf,
    },
    /// Reduction of the innermost dimension; `keep`: the type of the
    /// first components of the source's pairs, written to a second
    /// result of the source's shape (`plan::Fold::keep`).
    Fold {
        seed: bool,
        source: ShapeOf,
        op: &'static str,
        keep: Option<EltTy>,
    },
    /// Segmented reduction; `offsets` is the variable of the offsets.
    FoldSeg {
        seed: bool,
        source: ShapeOf,
        offsets: usize,
        op: &'static str,
    },
    Scan {
        seed: bool,
        source: ShapeOf,
        op: &'static str,
    },
    /// `defaults` is the variable of the default array; `atomic` says
    /// whether the kernel combines each update with one atomic operation
    /// (`atomic`); else the CPU backend privatises the result or runs the
    /// kernel on one worker (`cpu/permute.rs`) and the CUDA backend takes
    /// a lock per destination (a temporary of `i32` zeros, one per element
    /// of the result). `overwrite` says that the combining function
    /// ignores the old value (`overwrites`); `unmarked` that the CPU
    /// backend's private copies need no marks (`private_start`).
    Permute {
        defaults: usize,
        source: ShapeOf,
        atomic: bool,
        overwrite: bool,
        unmarked: bool,
    },
    Stencil {
        sources: Vec<ShapeOf>,
        extents: Vec<Vec<usize>>,
    },
}

/// One kernel: its name, skeleton, the arrays it reads (as de Bruijn
/// indices in the environment where it runs), its result, and the source
/// locations its errors name.
#[derive(Clone, Debug)]
pub(crate) struct Kernel {
    pub name: String,
    pub skeleton: Skeleton,
    pub inputs: Vec<usize>,
    /// Every array variable its launch reads (`plan::Kernel::arrays_used`).
    pub uses: Vec<usize>,
    pub elt: EltTy,
    pub sites: Vec<SrcLoc>,
    pub loc: SrcLoc,
    /// The words of its hoisted literals (Note [Hoisted literals]).
    pub consts: Vec<i64>,
    /// How deeply its functions' outlined chunks call each other (Note
    /// [Outlined chunks]), so that it is run on a stack that holds them.
    pub chunk_depth: usize,
    /// The estimated work of one element (`cost::element_cost`).
    pub cost: usize,
    /// The input variable whose array its function `_inplace` writes its
    /// result over (Note [Functions that write in place] in `cpu/generate.rs`).
    pub in_place: Option<usize>,
    /// The rows a chunk of a reduction's rows should hold (a block of its
    /// loop's, Note [Wide column blocks] in `cpu/fold.rs`); 1 for any.
    pub rows_grain: usize,
    /// The runs of rows in a reduction's tiles (Note [Tiles in registers]
    /// in `cpu/fold.rs`), whose chunks then end at whole tiles; 0 for none.
    pub tile_runs: usize,
    /// The rows of a block of a reduction's `_part` (Note [Column blocks
    /// in pieces] in `cpu/fold.rs`); 0 where its pieces are single rows'.
    pub column_part: usize,
}

/// What a backend's kernel generator hands back once a kernel's functions
/// are written: the fields of its `Kernel` that code generation fills.
pub(crate) struct KernelParts {
    pub inputs: Vec<usize>,
    pub sites: Vec<SrcLoc>,
    pub consts: Vec<i64>,
    pub chunk_depth: usize,
    pub in_place: Option<usize>,
    pub rows_grain: usize,
    pub tile_runs: usize,
    pub column_part: usize,
}

/// Where `open_function` leaves room for the hoisted literals, which
/// `close_body` declares once the body has named them all.
const CONSTS_MARK: &str = "    /* hoisted literals */\n";

/// What the code generation state of a kernel is on either target: its
/// name, the arrays it reads (by slot), the source locations its errors
/// name, its hoisted literals and the fresh-name counter its functions
/// continue. Each backend's `KernelGen` holds one and adds how its
/// functions begin and end.
pub(crate) struct KernelCore {
    pub name: String,
    pub slots: HashMap<usize, ArraySlot>,
    pub inputs: Vec<usize>,
    pub sites: Vec<SrcLoc>,
    pub hoisted: Hoisted,
    pub fresh: usize,
    /// The deepest nesting of outlined chunks of its functions so far.
    pub chunk_depth: usize,
    n_leaves: usize,
    n_extents: usize,
    input_tys: Vec<ArrayTy>,
    /// While a function that writes over an input is written (Note
    /// [Functions that write in place] in `cpu/generate.rs`): that input's position,
    /// whose buffers are the outputs', and no pointer to either
    /// `restrict`.
    pub aliased: Option<usize>,
    /// The input variable the kernel's function `_inplace` writes over.
    pub in_place: Option<usize>,
    /// `Kernel::rows_grain`.
    pub rows_grain: usize,
    /// `Kernel::tile_runs`.
    pub tile_runs: usize,
    /// `Kernel::column_part`.
    pub column_part: usize,
}

impl KernelCore {
    /// The code generation state of a kernel of the plan.
    pub fn new(k: &plan::Kernel) -> KernelCore {
        let mut slots = HashMap::new();
        let mut input_tys = Vec::new();
        let mut inputs = Vec::new();
        let (mut first_buf, mut first_extent) = (0, 0);
        for (j, (v, ty)) in k.inputs.iter().enumerate() {
            let (v, ty) = (*v, ty.clone());
            inputs.push(v);
            let leaves: Vec<String> = (0..ty.elt.leaves().len()).map(|l| format!("a{j}_{l}")).collect();
            let extents = (0..ty.rank).map(|d| format!("a{j}_s{d}")).collect();
            let n_leaves = leaves.len();
            slots.insert(v, ArraySlot { leaves, extents, elt: ty.elt.clone(), first_buf, first_extent });
            (first_buf, first_extent) = (first_buf + n_leaves, first_extent + ty.rank);
            input_tys.push(ty);
        }
        let n_leaves = input_tys.iter().map(|t| t.elt.leaves().len()).sum();
        let n_extents = input_tys.iter().map(|t| t.rank).sum();
        KernelCore {
            name: k.name.clone(),
            slots,
            inputs,
            sites: Vec::new(),
            hoisted: Hoisted::default(),
            fresh: 0,
            chunk_depth: 0,
            n_leaves,
            n_extents,
            input_tys,
            aliased: None,
            in_place: None,
            rows_grain: 1,
            tile_runs: 0,
            column_part: 0,
        }
    }

    /// The kernel's inputs, the source locations its errors name and the
    /// words of its hoisted literals, once its functions are written.
    pub fn finish(self) -> KernelParts {
        KernelParts {
            inputs: self.inputs,
            sites: self.sites,
            consts: self.hoisted.words(),
            chunk_depth: self.chunk_depth,
            in_place: self.in_place,
            rows_grain: self.rows_grain,
            tile_runs: self.tile_runs,
            column_part: self.column_part,
        }
    }

    /// The index in the arguments' buffers of the first after the inputs.
    pub fn first_own_buf(&self) -> usize {
        self.n_leaves
    }

    /// The index in the arguments' extents of the first after the inputs'.
    pub fn first_own_extent(&self) -> usize {
        self.n_extents
    }

    /// A scalar-code generator writing at `indent`, with errors to `e0`.
    pub fn exp_gen(&mut self, indent: usize) -> ExpGen<'_> {
        ExpGen::new(&self.slots, &mut self.sites, &mut self.hoisted, "e0", indent, self.fresh)
    }

    /// The part of a function's prologue after its signature: the
    /// arguments' arrays (`B`, `X`, `P` from `A`), the input arrays as
    /// pointers qualified `restrict` (the target's keyword) and their
    /// extents, and room for the hoisted literals.
    pub fn open_inputs(&self, out: &mut String, restrict: &str) {
        out.push_str(
            "    void *const *B = A->bufs; const int64_t *X = A->extents; const int64_t *P = A->params;\n",
        );
        out.push_str("    (void)B; (void)X; (void)P;\n");
        let (mut b, mut x) = (0, 0);
        for (j, t) in self.input_tys.iter().enumerate() {
            for (l, s) in t.elt.leaves().into_iter().enumerate() {
                let ct = c_type(s);
                if self.aliased == Some(j) {
                    // the output's buffer, read at the element's own position
                    let _ =
                        writeln!(out, "    const {ct} *a{j}_{l} = (const {ct} *)B[{}];", self.n_leaves + l);
                } else {
                    let _ = writeln!(out, "    const {ct} *{restrict} a{j}_{l} = (const {ct} *)B[{b}];");
                }
                b += 1;
            }
            for d in 0..t.rank {
                let _ = writeln!(out, "    const int64_t a{j}_s{d} = X[{x}];");
                x += 1;
            }
            if t.rank == 0 {
                // Note [Rank-0 reads]
                for (l, s) in t.elt.leaves().into_iter().enumerate() {
                    let _ = writeln!(out, "    const {} a{j}_{l}_v = a{j}_{l}[0];", c_type(s));
                }
            }
        }
        out.push_str(CONSTS_MARK);
    }

    /// Appends a function's body (`ExpGen::into_parts`), after declaring
    /// the hoisted literals it reads, and writes the functions it calls
    /// (Note [Outlined chunks]) before the function, which starts at
    /// `start` in `out`; the caller closes the function.
    pub fn close_body(&mut self, out: &mut String, start: usize, body: &Body) {
        self.fresh = body.fresh;
        self.chunk_depth = self.chunk_depth.max(body.chunk_depth);
        if let Some(at) = out.rfind(CONSTS_MARK) {
            out.replace_range(at..at + CONSTS_MARK.len(), &self.hoisted.declarations(&body.consts));
        }
        out.push_str(&body.code);
        if !body.functions.is_empty() {
            out.insert_str(start, &body.functions);
        }
    }

    /// Declares buffers `name_l` of the element type from `B[first ..]`,
    /// qualified `restrict` (the target's keyword, or none); returns their
    /// names and the next buffer index.
    pub fn buffers(
        out: &mut String,
        name: &str,
        elt: &EltTy,
        first: usize,
        restrict: &str,
    ) -> (Vec<String>, usize) {
        let mut names = Vec::new();
        for (l, s) in elt.leaves().into_iter().enumerate() {
            let ct = c_type(s);
            let n = format!("{name}_{l}");
            let _ = writeln!(out, "    {ct} *{restrict} {n} = ({ct} *)B[{}];", first + l);
            names.push(n);
        }
        let next = first + names.len();
        (names, next)
    }

    /// Declares `count` extents `name0 ..` from `X[first ..]`.
    pub fn extents(out: &mut String, name: &str, count: usize, first: usize) -> Vec<String> {
        (0..count)
            .map(|d| {
                let n = format!("{name}{d}");
                let _ = writeln!(out, "    const int64_t {n} = X[{}];", first + d);
                n
            })
            .collect()
    }
}

/// Stores a value's leaves into buffers at a position.
pub(crate) fn store(g: &mut ExpGen<'_>, bufs: &[String], pos: &str, v: &CVal) {
    for (b, x) in bufs.iter().zip(&v.leaves) {
        g.line(&format!("{b}[{pos}] = {x};"));
    }
}

/// The second result of a fold that keeps its source's elements
/// (`plan::Fold::keep`): its buffers, which the first components of the
/// source's pairs are written to where they are read, and the type of
/// the second components, which the fold reduces.
#[derive(Clone)]
pub(crate) struct Kept {
    pub bufs: Vec<String>,
    pub x: EltTy,
}

impl Kept {
    /// An element `(k, x)` of the source read at position `pos`: `k`
    /// written there, `x` returned.
    pub fn split(&self, g: &mut ExpGen<'_>, pos: &str, v: CVal) -> CVal {
        let nk = v.leaves.len() - self.x.leaves().len();
        let mut leaves = v.leaves;
        let x = leaves.split_off(nk);
        store(g, &self.bufs, pos, &CVal { ty: EltTy::Tuple(Vec::new()), leaves });
        CVal { ty: self.x.clone(), leaves: x }
    }
}

/// Declares variables holding a copy of a value (an accumulator).
pub(crate) fn declare(g: &mut ExpGen<'_>, base: &str, v: &CVal) -> CVal {
    let leaves =
        v.ty.leaves()
            .into_iter()
            .zip(&v.leaves)
            .map(|(t, x)| {
                let n = g.fresh(base);
                g.line(&format!("{} {n} = {x};", c_type(t)));
                n
            })
            .collect();
    CVal { ty: v.ty.clone(), leaves }
}

/// Assigns a value to variables declared by `declare`.
pub(crate) fn assign(g: &mut ExpGen<'_>, to: &CVal, v: &CVal) {
    for (a, x) in to.leaves.iter().zip(&v.leaves) {
        g.line(&format!("{a} = {x};"));
    }
}

/// The element of a source at row-major position `pos` (a C atom known to
/// lie inside the source's shape).
pub(crate) fn read_at(g: &mut ExpGen<'_>, src: &Source, pos: &str, loc: SrcLoc) -> CVal {
    match src {
        Source::Manifest(v) => g.read_linear(*v, pos, loc, false),
        Source::Delayed(d) => {
            trust(g, &d.shape, pos, None);
            if d.rank() == 1 {
                // a vector's position is its index's one component
                in_range(g, &d.shape, &[pos.to_string()]);
            }
            g.apply(&d.linear, vec![CVal::scalar(ScalarTy::I64, pos.to_string())])
        }
    }
}

/// The element of a source at a multidimensional index inside its shape.
pub(crate) fn read_ix(g: &mut ExpGen<'_>, src: &Source, ix: &[String], loc: SrcLoc) -> CVal {
    match src {
        Source::Manifest(v) => g.read_index(*v, ix, loc, false),
        Source::Delayed(d) => apply_at(g, d, &d.index, Vec::new(), ix),
    }
}

/// `f`, a function of `args` and then of an index inside `d`'s shape,
/// applied at `ix`: the reads of the arrays that shape bounds need no
/// check there (`trust`).
pub(crate) fn apply_at(
    g: &mut ExpGen<'_>,
    d: &DelayedArray,
    f: &Fun,
    mut args: Vec<CVal>,
    ix: &[String],
) -> CVal {
    trust(g, &d.shape, "", Some(ix));
    args.push(CVal::index(ix.to_vec()));
    g.apply(f, args)
}

/// Records that a position (or an index) inside a delayed array's shape
/// lies inside every array whose shape bounds that shape, so reads of
/// them there need no check: a `map` of an array reads it at its own
/// positions, a `zip_with` reads both arrays inside their intersection.
pub(crate) fn trust(g: &mut ExpGen<'_>, shape: &OpenExp, pos: &str, ix: Option<&[String]>) {
    if let Some(ix) = ix {
        in_range(g, shape, ix);
    }
    // a reshape keeps the size (the host checked it before the launch): a
    // position inside the new shape is a position inside the array
    // reshaped (`fold_all` of a matrix reads it so)
    if let (None, ExpKind::Prim(PrimFun::ReshapeCheck, args)) = (ix, &shape.kind) {
        let from = match &args[0].kind {
            ExpKind::Shape { array } => Some(*array),
            _ => whole_shape_of(&args[0])
                .filter(|&(a, n)| g.arrays.get(&a).is_some_and(|s| s.extents.len() == n))
                .map(|(a, _)| a),
        };
        if let Some(a) = from {
            g.trusted_linear.add(pos.to_string(), a);
        }
    }
    let mut bounding = Vec::new();
    bounded_by(shape, &mut bounding);
    let exact = match &shape.kind {
        ExpKind::Shape { array } => Some(*array),
        _ => whole_shape_of(shape)
            .filter(|&(a, n)| g.arrays.get(&a).is_some_and(|s| s.extents.len() == n))
            .map(|(a, _)| a),
    };
    for (a, n) in bounding {
        let rank = g.arrays.get(&a).map(|s| s.extents.len());
        // (a tuple of the first `n` extents of an array bounds an index
        // only of an array of that rank)
        if n.is_some_and(|n| rank != Some(n)) {
            continue;
        }
        match ix {
            Some(ix) => {
                g.trusted_index.add(ix.to_vec(), a);
                if ix.len() == 1 {
                    g.trusted_linear.add(ix[0].clone(), a);
                }
            }
            None => {
                // a position inside an intersection is a position inside
                // each array only for vectors (or the exact shape)
                if exact == Some(a) || rank == Some(1) {
                    g.trusted_linear.add(pos.to_string(), a);
                }
                if rank == Some(1) {
                    g.trusted_index.add(vec![pos.to_string()], a);
                }
            }
        }
    }
}

/// Records each component of an index inside `shape` as inside its
/// extent, under that extent's other names (Note [Components in range]).
fn in_range(g: &mut ExpGen<'_>, shape: &OpenExp, ix: &[String]) {
    for (c, x) in ix.iter().enumerate().filter(|(_, x)| is_variable(x)) {
        for (a, d) in extents_bounding(shape, c) {
            if let Some(e) = g.arrays.get(&a).and_then(|s| s.extents.get(d)).cloned() {
                g.in_range.entry(x.clone()).or_default().insert(e);
            }
        }
    }
}

/// The arrays whose shape is at least `shape` in every dimension (with
/// the rank a tuple of an array's extents covers, for those written as
/// one: the lifting transformation writes shapes that way).
/// A loop, not a recursion: a fused `zip_with` of 10^4 inputs nests as
/// many intersections.
fn bounded_by(shape: &OpenExp, out: &mut Vec<(usize, Option<usize>)>) {
    let mut todo = vec![shape];
    while let Some(e) = todo.pop() {
        match &e.kind {
            ExpKind::Shape { array } => out.push((*array, None)),
            // in order: the first argument is visited first
            ExpKind::Prim(PrimFun::Intersect, args) => todo.extend(args.iter().rev()),
            // a shape checked is the same shape
            ExpKind::Prim(PrimFun::ShapeCheck, args) => todo.extend(args.iter()),
            _ => {
                if let Some((a, n)) = whole_shape_of(e) {
                    out.push((a, Some(n)));
                }
            }
        }
    }
}

// Note [Components in range]
// An index read inside a delayed array's shape has each component inside
// that shape's extent; where the shape's expression says that extent is
// at most an extent of an array the kernel reads (its lets and
// projections of tuples followed, and both sides of an `intersect`: the
// host has already computed the shape, so only its value matters here), a
// check against that array's extent needs no test of the component
// (`ExpGen::in_range`). The lifting's reads of a row gathered from a
// matrix, `bounds_check(shape(m), (row, k))` with `k` the fold's own
// column, then test `row` alone, once per row, and the loop over the
// columns loads without a mask; so does n-body's read of body `j` in the
// fold over the zip of two replicates (2.7 times as fast).

/// Whether a C atom names a variable: the generated code reads a
/// component only where it lies inside the array, and a variable holds one
/// value wherever it is in scope, while a literal (`0`, the first column)
/// may also be read by a check elsewhere in the function where the extent
/// is 0.
fn is_variable(atom: &str) -> bool {
    atom.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && atom.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The extents `(a, d)` (extent `d` of array `a`) that bound dimension
/// `c` of `shape`, as far as the expression says: an array's shape, its
/// lets and projections of tuples followed, and both sides of an
/// intersection (a zip's shape is at most each of its arguments').
fn extents_bounding(shape: &OpenExp, c: usize) -> Vec<(usize, usize)> {
    fn go<'e>(
        e: &'e OpenExp,
        env: &mut Vec<&'e OpenExp>,
        path: &mut Vec<usize>,
        fuel: &mut usize,
        out: &mut Vec<(usize, usize)>,
    ) {
        let Some(left) = fuel.checked_sub(1) else { return };
        *fuel = left;
        match &e.kind {
            ExpKind::Let(b, body) => {
                env.push(b);
                go(body, env, path, fuel, out);
                env.pop();
            }
            ExpKind::Var(i) => {
                if let Some(k) = env.len().checked_sub(i + 1) {
                    let b = env[k];
                    let mut outer = env[..k].to_vec();
                    go(b, &mut outer, path, fuel, out);
                }
            }
            ExpKind::Prj(i, t) => {
                path.push(*i);
                go(t, env, path, fuel, out);
                path.pop();
            }
            ExpKind::Tuple(xs) => {
                if let Some(i) = path.pop() {
                    if let Some(x) = xs.get(i) {
                        go(x, env, path, fuel, out);
                    }
                    path.push(i);
                }
            }
            ExpKind::Prim(PrimFun::ShapeCheck, args) => {
                if let Some(x) = args.first() {
                    go(x, env, path, fuel, out);
                }
            }
            ExpKind::Prim(PrimFun::Intersect, args) => {
                for x in args {
                    go(x, env, path, fuel, out);
                }
            }
            ExpKind::Shape { array } => {
                // the array variable as the kernel's functions see it
                // (lets of the shape bind scalars only)
                if let [d] = path[..] {
                    out.push((*array, d));
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    go(shape, &mut Vec::new(), &mut vec![c], &mut 64, &mut out);
    out
}

/// `(shape(a).0, .., shape(a).(n-1))`: array `a` and `n`.
fn whole_shape_of(e: &OpenExp) -> Option<(usize, usize)> {
    let ExpKind::Tuple(xs) = &e.kind else { return None };
    let mut array = None;
    for (k, x) in xs.iter().enumerate() {
        let ExpKind::Prj(i, t) = &x.kind else { return None };
        let ExpKind::Shape { array: a } = t.kind else { return None };
        if *i != k || array.is_some_and(|b| b != a) {
            return None;
        }
        array = Some(a);
    }
    array.map(|a| (a, xs.len()))
}

/// The index in `outer` (extents, outermost first) of the row-major
/// position `r`, as C atoms (bound to new variables where computed).
pub(crate) fn unravel(g: &mut ExpGen<'_>, r: &str, outer: &[String]) -> Vec<String> {
    let mut rest = r.to_string();
    let mut ix = vec![String::new(); outer.len()];
    for d in (0..outer.len()).rev() {
        if d == 0 {
            ix[0] = rest.clone();
        } else {
            ix[d] = g.bind(ScalarTy::I64, &format!("{rest} % {}", outer[d]));
            rest = g.bind(ScalarTy::I64, &format!("{rest} / {}", outer[d]));
        }
    }
    ix
}

/// Does a function turn a position into an index (so that reading by
/// index, from an index computed once per row, is cheaper than by
/// position)?
pub(crate) fn uses_from_index(f: &Fun) -> bool {
    fn go(e: &OpenExp, found: &mut bool) {
        if matches!(e.kind, ExpKind::Prim(PrimFun::FromIndex, _)) {
            *found = true;
        }
        if !*found {
            stacker::maybe_grow(64 * 1024, 1024 * 1024, || visit::each_child(e, |c| go(c, found)));
        }
    }
    let mut found = false;
    go(&f.body, &mut found);
    found
}

/// Is `f(a, b)` equal to `f(b, a)` by construction? Each leaf of its
/// result must be one commutative primitive applied to the same leaf of
/// both arguments (the CPU backend's Note [Multi-accumulator reductions];
/// the CUDA backend's `block::range_reduce`). For floats `+` and `*`
/// commute exactly; `min`/`max` commute up to the sign of a zero result,
/// which the grouping of a reduction already leaves open
/// (`docs/semantics.md`).
pub(crate) fn commutative(f: &Fun) -> bool {
    fn symmetric(e: &OpenExp) -> bool {
        use PrimFun::*;
        match &e.kind {
            ExpKind::Tuple(es) => es.iter().all(symmetric),
            ExpKind::Prim(Add | Mul | Min | Max | BAnd | BOr | BXor | LAnd | LOr, args)
                if args.len() == 2 =>
            {
                match (leaf_path(&args[0]), leaf_path(&args[1])) {
                    (Some((u, p)), Some((v, q))) => u != v && p == q,
                    _ => false,
                }
            }
            _ => false,
        }
    }
    f.params.len() == 2 && symmetric(&f.body)
}

/// The C condition under which the `Bool` accumulator `acc` of a
/// reduction by `f` holds `f`'s absorbing value, which `f` keeps whatever
/// it is combined with: `acc` for `||` and `|`, `!acc` for `&&` and `&`
/// (Note [Absorbed reductions stop] in `cpu/fold.rs`). `None` for any
/// other operator or accumulator.
pub(crate) fn absorbed(f: &Fun, acc: &CVal) -> Option<String> {
    let ([ScalarTy::Bool], [leaf]) = (&acc.ty.leaves()[..], &acc.leaves[..]) else { return None };
    if f.params.len() != 2 {
        return None;
    }
    let ExpKind::Prim(op, args) = &f.body.kind else { return None };
    let [a, b] = &args[..] else { return None };
    let (Some((u, p)), Some((v, q))) = (leaf_path(a), leaf_path(b)) else { return None };
    if u == v || p != q {
        return None;
    }
    match op {
        PrimFun::LOr | PrimFun::BOr => Some(leaf.clone()),
        PrimFun::LAnd | PrimFun::BAnd => Some(format!("!{leaf}")),
        _ => None,
    }
}

/// What a private copy of a permute's result may start from, leaf by
/// leaf, so that no position needs a mark saying whether it has been
/// written (Note [Privatised permutes] in `cpu/permute.rs`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum Start {
    /// The operator's identity `e`: `op(x, e) = op(e, x) = x` exactly,
    /// for every `x`.
    Identity(ScalarVal),
    /// The default's value at the same position: the operator is
    /// idempotent (`op(x, x) = x`), so combining a copy that already holds
    /// the default with the default once more changes nothing.
    Default,
}

/// Each leaf's start (`Start`) for a permute combining with `f` into
/// elements of type `elt`, or `None` when some leaf has neither: each leaf
/// of `f`'s result must be one primitive applied to that same leaf of
/// both arguments. Identities, exact on every value of the type under
/// `docs/semantics.md`: `+` (`-0.0` for floats: `x + -0.0` is `x`, zeros'
/// signs included, where `+0.0` would turn `-0.0` into `+0.0`), `*`,
/// integer `min`/`max`, the bit and boolean operators. Float `min`/`max`
/// have none (they return the other operand for a NaN, so `min(NaN,
/// +inf)` is `+inf`, not `NaN`), but are idempotent, a NaN included
/// (`min(NaN, NaN)` is the second NaN, bit for bit).
pub(crate) fn private_start(f: &Fun, elt: &EltTy) -> Option<Vec<Start>> {
    fn go(e: &OpenExp, elt: &EltTy, path: &mut Vec<usize>, out: &mut Vec<Start>) -> Option<()> {
        use PrimFun::*;
        use ScalarTy::*;
        match (&e.kind, elt) {
            (ExpKind::Tuple(es), EltTy::Tuple(ts)) if es.len() == ts.len() => {
                for (i, (e, t)) in es.iter().zip(ts).enumerate() {
                    path.push(i);
                    go(e, t, path, out)?;
                    path.pop();
                }
                Some(())
            }
            (ExpKind::Prim(op, args), EltTy::Scalar(t)) if args.len() == 2 => {
                match (leaf_path(&args[0]), leaf_path(&args[1])) {
                    (Some((u, p)), Some((v, q))) if u != v && p == q && p == *path => {}
                    _ => return None,
                }
                let v = match (op, t) {
                    (Add, F16) => Start::Identity(ScalarVal::F16(0x8000)),
                    (Add, F32) => Start::Identity(ScalarVal::F32(-0.0)),
                    (Add, F64) => Start::Identity(ScalarVal::F64(-0.0)),
                    (Mul, F16) => Start::Identity(ScalarVal::F16(0x3c00)),
                    (Mul, F32) => Start::Identity(ScalarVal::F32(1.0)),
                    (Mul, F64) => Start::Identity(ScalarVal::F64(1.0)),
                    (Min | Max, F16 | F32 | F64) => Start::Default,
                    (LAnd, Bool) => Start::Identity(ScalarVal::Bool(true)),
                    (LOr, Bool) => Start::Identity(ScalarVal::Bool(false)),
                    (_, F16 | F32 | F64 | Bool) => return None,
                    _ => Start::Identity(int_identity(*op, *t)?),
                };
                out.push(v);
                Some(())
            }
            _ => None,
        }
    }
    if f.params.len() != 2 {
        return None;
    }
    let mut out = Vec::new();
    go(&f.body, elt, &mut Vec::new(), &mut out)?;
    Some(out)
}

/// The identity of an integer operator (`private_start`).
fn int_identity(op: PrimFun, t: ScalarTy) -> Option<ScalarVal> {
    use PrimFun::*;
    macro_rules! ints {
        ($($ty:ident $rust:ident),*) => {
            match t {
                $(ScalarTy::$ty => Some(ScalarVal::$ty(match op {
                    Add | BOr | BXor => 0,
                    Mul => 1,
                    BAnd => !0,
                    Min => $rust::MAX,
                    Max => $rust::MIN,
                    _ => return None,
                })),)*
                _ => None,
            }
        };
    }
    ints!(I8 i8, I16 i16, I32 i32, I64 i64, U8 u8, U16 u16, U32 u32, U64 u64)
}

/// The argument (0 or 1) of a binary function and the projection path of
/// a leaf access to it.
pub(crate) fn leaf_path(e: &OpenExp) -> Option<(usize, Vec<usize>)> {
    match &e.kind {
        ExpKind::Var(v) if *v < 2 => Some((*v, Vec::new())),
        ExpKind::Prj(i, t) => leaf_path(t).map(|(v, mut p)| {
            p.push(*i);
            (v, p)
        }),
        _ => None,
    }
}

/// `op(earlier, later)` of a scan, in scan order: a right scan is a left
/// scan of the reversed row with the operator flipped (`f(later,
/// earlier)`, associative when `f` is).
pub(crate) fn in_scan_order(
    g: &mut ExpGen<'_>,
    f: &Fun,
    dir: Direction,
    earlier: &CVal,
    later: CVal,
) -> CVal {
    match dir {
        Direction::Left => g.apply(f, vec![earlier.clone(), later]),
        Direction::Right => g.apply(f, vec![later, earlier.clone()]),
    }
}

/// Can a permute of this element type combine each update with one
/// Whether a permute's combining function ignores the old value (`|new,
/// _| new`, as `compact` and `filter` write each kept element to a
/// target of its own): its updates are stores, in any order (Note
/// [Overwriting permutes] in `cpu/permute.rs`).
pub(crate) fn overwrites(p: &plan::Permute) -> bool {
    // the old value is the second parameter: variable 0 in the body
    !visit::reads_var(&p.combine.body, 0)
}

/// atomic operation (a single primitive leaf)? (`Skeleton::Permute`.)
pub(crate) fn atomic(elt: &EltTy) -> bool {
    elt.leaves().len() == 1
}

/// Where a permute's source element at index `ix` goes, inside the
/// per-element loop: applies `index`, opens `if (keep) {`, raises an
/// index error for a destination outside the result's extents `rsh`, and
/// opens the `else` branch, in which it reads the source element. Returns
/// the destination's row-major position (a C atom) and the element; the
/// caller combines it into the result and closes both blocks.
pub(crate) fn open_destination(
    g: &mut ExpGen<'_>,
    index: &Fun,
    src: &Source,
    ix: &[String],
    rsh: &[String],
    loc: SrcLoc,
) -> (String, CVal) {
    let (keep, to) = destination(g, index, src, ix);
    g.open(&format!("if ({keep}) {{"));
    g.open(&format!("if (!{}) {{", g.in_bounds(&to, rsh)));
    let mut vals = vec![to.len().to_string()];
    vals.extend(to.iter().cloned());
    vals.extend(rsh.iter().cloned());
    g.raise_at("ACC_ERR_INDEX_OUT_OF_BOUNDS", loc, &vals);
    g.close("} else {");
    g.indent_in();
    let j = g.bind(ScalarTy::I64, &linear_of(&to, rsh));
    let new = read_ix(g, src, ix, loc);
    (j, new)
}

/// A permute's index function at the source index `ix`: whether the
/// source is kept, and the index it goes to (C atoms).
pub(crate) fn destination(
    g: &mut ExpGen<'_>,
    index: &Fun,
    src: &Source,
    ix: &[String],
) -> (String, Vec<String>) {
    // the index ranges over the source's shape: the index function's
    // reads of the arrays that shape bounds need no check
    if let Source::Delayed(d) = src {
        trust(g, &d.shape, "", Some(ix));
    }
    let r = g.apply(index, vec![CVal::index(ix.to_vec())]);
    (r.leaves[0].clone(), r.leaves[1..].to_vec())
}

//! Code generation for a plan, for both C-family backends: each of the
//! plan's kernels is written by the backend's writer for its skeleton
//! (a `Target`: one file per skeleton in each backend), in the plan's
//! order, into one source text (C or CUDA C, without the prelude); what
//! the writers found out (the source locations the kernel's errors name,
//! its hoisted literals) comes back with each kernel's launch description.

use super::kernel::{atomic, overwrites, private_start, Kernel, KernelParts, ShapeOf, Skeleton};
use accelerate_plan::{self as plan, Source};
use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

/// A backend's code generation: its kernel generator `Gen` (made from a
/// kernel's specification), one writer per skeleton, and `finish`, which
/// hands back what code generation found out about the kernel.
pub(crate) trait Target {
    type Gen;
    fn kernel_gen(k: &plan::Kernel) -> Self::Gen;
    fn generate(g: &mut Self::Gen, out: &mut String, k: &plan::Kernel, s: &plan::Generate);
    fn fold(g: &mut Self::Gen, out: &mut String, k: &plan::Kernel, s: &plan::Fold);
    fn scan(g: &mut Self::Gen, out: &mut String, k: &plan::Kernel, s: &plan::Scan);
    fn fold_seg(g: &mut Self::Gen, out: &mut String, k: &plan::Kernel, s: &plan::FoldSeg);
    fn permute(g: &mut Self::Gen, out: &mut String, k: &plan::Kernel, s: &plan::Permute);
    fn stencil(g: &mut Self::Gen, out: &mut String, k: &plan::Kernel, s: &plan::Stencil);
    fn finish(g: Self::Gen) -> KernelParts;
}

/// The `Target` of a backend module whose skeleton files `generate`,
/// `fold`, `scan`, `fold_seg`, `permute` and `stencil` each have the
/// writer of that name, over the module's `kernel::KernelGen`.
macro_rules! skeleton_files_target {
    ($target:ident) => {
        /// This backend's kernel code, for the shared code generation
        /// (`backend::c::codegen`).
        pub(crate) struct $target;

        impl $crate::c::codegen::Target for $target {
            type Gen = kernel::KernelGen;
            fn kernel_gen(k: &plan::Kernel) -> kernel::KernelGen {
                kernel::KernelGen::new(k)
            }
            fn generate(g: &mut kernel::KernelGen, out: &mut String, k: &plan::Kernel, s: &plan::Generate) {
                generate::generate(g, out, k, s)
            }
            fn fold(g: &mut kernel::KernelGen, out: &mut String, k: &plan::Kernel, s: &plan::Fold) {
                fold::fold(g, out, k, s)
            }
            fn scan(g: &mut kernel::KernelGen, out: &mut String, k: &plan::Kernel, s: &plan::Scan) {
                scan::scan(g, out, k, s)
            }
            fn fold_seg(g: &mut kernel::KernelGen, out: &mut String, k: &plan::Kernel, s: &plan::FoldSeg) {
                fold_seg::fold_seg(g, out, k, s)
            }
            fn permute(g: &mut kernel::KernelGen, out: &mut String, k: &plan::Kernel, s: &plan::Permute) {
                permute::permute(g, out, k, s)
            }
            fn stencil(g: &mut kernel::KernelGen, out: &mut String, k: &plan::Kernel, s: &plan::Stencil) {
                stencil::stencil(g, out, k, s)
            }
            fn finish(g: kernel::KernelGen) -> $crate::c::kernel::KernelParts {
                g.finish()
            }
        }
    };
}
pub(crate) use skeleton_files_target;

/// A plan's kernels, written for a target: their launch descriptions and
/// their source.
pub(crate) struct Written {
    pub kernels: Vec<Kernel>,
    pub source: String,
}

/// Writes every kernel of a (verified) plan for target `T`, or takes it
/// from the kernels written before (Note [Kernels written once]).
pub(crate) fn write_kernels<T: Target>(p: &plan::Program) -> Written {
    let mut source = String::new();
    let kernels = p.kernels.iter().map(|k| written::<T>(k, &mut source)).collect();
    Written { kernels, source }
}

// Note [Kernels written once]
// A program built again is compiled again: a loop that calls `run` on a
// freshly built `Acc` each time (as Accelerate's `run` is used, and JAX's
// tracing would), and every property test, which builds the same
// operations over new data. The C compiler runs once for a source (the
// kernel cache), but writing the source ran every time, and for the
// scans, whose kernels are long, it was most of the time:
// `tests/ops_library_segmented.rs` (ten segmented scans a case) took 190 s
// on the two-core EPYC guest, 33 s with each kernel written once. A
// kernel's source and launch description depend only on its plan
// (`write_kernel` reads nothing else but the processor's features, fixed
// for the process), so they are kept in memory, by target, under the
// kernel's `Debug` text, which prints every field of the plan, its
// types and scalar code, and its source locations with their planted
// checks (its SHA-256, as the kernel cache keys its objects). A float's
// `Debug` form is exact but for a NaN's payload, so a
// kernel whose text holds `NaN` is written anew every time, and so is
// one whose text is longer than `KEY_BYTES` (formatting it deeper could
// overflow the stack: `key`). The memo
// keeps at most `MEMO_BYTES` of keys and sources, the oldest dropped
// first, as the buffer pool does (`array::pool`).

/// The most bytes of keys and sources that the memo of written kernels
/// keeps (Note [Kernels written once]).
const MEMO_BYTES: usize = 64 << 20;

/// Kernels written before: under each key (the SHA-256 of the kernel's
/// `Debug` text), the source and the launch
/// description; the keys in the order they came, and their bytes.
#[derive(Default)]
struct Memo {
    written: HashMap<String, (String, Kernel)>,
    order: VecDeque<String>,
    bytes: usize,
}

static KERNELS_WRITTEN: AtomicUsize = AtomicUsize::new(0);

/// How many kernels this process has written (not taken from the memo of
/// Note [Kernels written once]), for the tests.
pub fn kernels_written() -> usize {
    KERNELS_WRITTEN.load(Ordering::Relaxed)
}

/// The most bytes of a key: a kernel whose `Debug` text is longer is
/// written every time (Note [Kernels written once]).
const KEY_BYTES: usize = 256 << 10;

/// Kernel `k`'s key for target `T`: its `Debug` text, or `None` where
/// that is longer than `KEY_BYTES`. Derived `Debug` recurses once per
/// level of the kernel's scalar code, with no check of the stack, and a
/// program may nest its terms a hundred thousand deep (`tests/
/// large_programs.rs`); every level writes some bytes before it goes
/// deeper (`OpenExp { kind: Let(` and the like), so stopping at
/// `KEY_BYTES` bounds the depth reached to some ten thousand levels,
/// which run on a stack of `KEY_STACK` bytes.
fn key<T: Target>(k: &plan::Kernel) -> Option<String> {
    use std::fmt::Write;
    /// A `String` that refuses to grow past `KEY_BYTES`.
    struct Bounded(String);
    impl Write for Bounded {
        fn write_str(&mut self, s: &str) -> std::fmt::Result {
            if self.0.len() + s.len() > KEY_BYTES {
                return Err(std::fmt::Error);
            }
            self.0.push_str(s);
            Ok(())
        }
    }
    const KEY_STACK: usize = 128 << 20;
    stacker::maybe_grow(KEY_STACK / 2, KEY_STACK, || {
        let mut out = Bounded(String::new());
        write!(out, "{}\n{k:?}", std::any::type_name::<T>()).ok().map(|_| out.0)
    })
}

/// Kernel `k`'s source appended to `source`, and its launch description:
/// from the memo, or written now and kept (Note [Kernels written once]).
fn written<T: Target>(k: &plan::Kernel, source: &mut String) -> Kernel {
    static MEMO: OnceLock<Mutex<Memo>> = OnceLock::new();
    let memo = MEMO.get_or_init(Default::default);
    // (the memo holds the text's SHA-256, as the kernel cache does)
    let text = key::<T>(k).filter(|key| !key.contains("NaN"));
    let exact = text.is_some();
    let key = text.map(|t| crate::cache::key(&[&t])).unwrap_or_default();
    if exact {
        if let Some((text, kernel)) = memo.lock().unwrap_or_else(|e| e.into_inner()).written.get(&key) {
            source.push_str(text);
            return kernel.clone();
        }
    }
    let mut text = String::new();
    let kernel = write_kernel::<T>(k, &mut text);
    KERNELS_WRITTEN.fetch_add(1, Ordering::Relaxed);
    source.push_str(&text);
    let bytes = key.len() + text.len();
    if exact && bytes <= MEMO_BYTES {
        let mut m = memo.lock().unwrap_or_else(|e| e.into_inner());
        while m.bytes + bytes > MEMO_BYTES {
            let Some(old) = m.order.pop_front() else { break };
            if let Some((t, _)) = m.written.remove(&old) {
                m.bytes -= old.len() + t.len();
            }
        }
        if m.written.insert(key.clone(), (text, kernel.clone())).is_none() {
            m.order.push_back(key);
            m.bytes += bytes;
        }
    }
    kernel
}

fn write_kernel<T: Target>(k: &plan::Kernel, source: &mut String) -> Kernel {
    let mut g = T::kernel_gen(k);
    let shape = |a: &plan::Arg| ShapeOf::of(&a.source);
    let skeleton = match &k.skeleton {
        plan::Skeleton::Generate(s) => {
            T::generate(&mut g, source, k, s);
            Skeleton::Generate { shape: shape(&s.src) }
        }
        plan::Skeleton::Fold(s) => {
            T::fold(&mut g, source, k, s);
            let keep = k.kept().map(|t| t.elt);
            Skeleton::Fold { seed: s.seed.is_some(), source: shape(&s.src), op: k.op, keep }
        }
        plan::Skeleton::Scan(s) => {
            T::scan(&mut g, source, k, s);
            Skeleton::Scan { seed: s.seed.is_some(), source: shape(&s.src), op: k.op }
        }
        plan::Skeleton::FoldSeg(s) => {
            T::fold_seg(&mut g, source, k, s);
            Skeleton::FoldSeg { seed: s.seed.is_some(), source: shape(&s.src), offsets: s.offsets, op: k.op }
        }
        plan::Skeleton::Permute(s) => {
            T::permute(&mut g, source, k, s);
            Skeleton::Permute {
                defaults: s.defaults,
                source: shape(&s.src),
                atomic: atomic(&k.out.elt),
                overwrite: overwrites(s),
                unmarked: private_start(&s.combine, &k.out.elt).is_some(),
            }
        }
        plan::Skeleton::Stencil(s) => {
            T::stencil(&mut g, source, k, s);
            Skeleton::Stencil {
                sources: s.args.iter().map(|a| shape(&a.src)).collect(),
                extents: s.args.iter().map(|a| a.extents.clone()).collect(),
            }
        }
    };
    let KernelParts { inputs, sites, consts, chunk_depth, in_place, rows_grain, tile_runs, column_part } =
        T::finish(g);
    let (name, elt, loc) = (k.name.clone(), k.out.elt.clone(), k.loc);
    let cost = super::cost::element_cost(k);
    let uses = k.arrays_used();
    Kernel {
        name,
        skeleton,
        inputs,
        uses,
        elt,
        sites,
        loc,
        consts,
        chunk_depth,
        cost,
        in_place,
        rows_grain,
        tile_runs,
        column_part,
    }
}

impl ShapeOf {
    pub fn of(s: &Source) -> ShapeOf {
        match s {
            Source::Manifest(v) => ShapeOf::Var(*v),
            Source::Delayed(d) => ShapeOf::Exp(d.shape.clone()),
        }
    }
}

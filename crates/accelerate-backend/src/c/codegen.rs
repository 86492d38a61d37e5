//! Code generation for a plan, for both C-family backends: each of the
//! plan's kernels is written by the backend's writer for its skeleton
//! (a `Target`: one file per skeleton in each backend), in the plan's
//! order, into one source text (C or CUDA C, without the prelude); what
//! the writers found out (the source locations the kernel's errors name,
//! its hoisted literals) comes back with each kernel's launch description.

use super::kernel::{atomic, overwrites, private_start, Kernel, KernelParts, ShapeOf, Skeleton};
use accelerate_plan::{self as plan, Source};

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

/// Writes every kernel of a (verified) plan for target `T`.
pub(crate) fn write_kernels<T: Target>(p: &plan::Program) -> Written {
    let mut source = String::new();
    let kernels = p.kernels.iter().map(|k| write_kernel::<T>(k, &mut source)).collect();
    Written { kernels, source }
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

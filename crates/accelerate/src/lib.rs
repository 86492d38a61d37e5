//! # accelerate
//!
//! An embedded, purely functional, data-parallel array language for Rust,
//! after Accelerate (McDonell, Chakravarty, Keller, Lippmeier: "Optimising
//! Purely Functional GPU Programs", ICFP 2013).
//!
//! Programs have two levels: scalar expressions [`Exp<T>`](lang::Exp) and
//! array computations [`Acc<A>`](lang::Acc). They are built by ordinary
//! Rust code — Rust is the meta-language — and compiled at run time:
//!
//! ```
//! use accelerate::prelude::*;
//!
//! fn dotp(xs: &Acc<Vector<f32>>, ys: &Acc<Vector<f32>>) -> Acc<Scalar<f32>> {
//!     xs.zip_with(ys, |x, y| x * y).fold(0.0, |a, b| a + b)
//! }
//!
//! let xs = Vector::from_elems(vec![1.0f32, 2.0, 3.0]);
//! let ys = Vector::from_elems(vec![4.0f32, 5.0, 6.0]);
//! let r = accelerate::run(&dotp(&use_array(xs.clone()), &use_array(ys.clone())))?;
//! assert_eq!(r.value(), 32.0);
//!
//! // convert once, run many times (Accelerate's runN)
//! let f = accelerate::compile(|xs: Acc<Vector<f32>>, ys: Acc<Vector<f32>>| dotp(&xs, &ys))?;
//! assert_eq!(f.run((&xs, &ys))?.value(), 32.0);
//! # Ok::<(), accelerate::Error>(())
//! ```
//!
//! `Exp` and `Acc` values are reference-counted handles to a program's
//! graph: scalar functions receive their arguments by reference, operators
//! work on values and references alike (`|x| x * x`, `&d * &d`), and a
//! value used twice elsewhere is borrowed or cloned. A graph, and the
//! arrays it holds, are freed when its last handle is dropped, so programs
//! built and run in a loop need no clean-up.
//!
//! The pipeline (see `docs/architecture.md`): the program graph's sharing is
//! recovered into a typed first-order IR ([`ir`]) with let-bound sharing
//! ([`trafo`], ICFP'13 §3), which a backend runs ([`backend`]; the reference
//! interpreter defines the semantics, `docs/semantics.md`).

// The layers below the facade, each a crate of its own
// (`docs/architecture.md`, Layers), under the paths users know.
pub use accelerate_base::foreign;
pub use accelerate_embed::lang;
pub use accelerate_ir as ir;
pub use accelerate_plan as plan;

pub mod backend;
pub mod exec;

/// Arrays: shapes, element types, struct-of-arrays storage and the typed
/// `Array<Sh, E>` users hold (`accelerate_base::array`), with the classes
/// of element types the language's operators apply to (`lang`'s).
pub mod array {
    pub use accelerate_base::array::*;
    pub use accelerate_embed::lang::{FloatElt, IntElt, NumElt};
}
pub mod prelude;
pub mod text;
pub mod trafo;

pub use accelerate_derive::Elt;
pub use exec::config::{Backend, Config, CpuOptions};
#[cfg(feature = "cuda")]
pub use exec::config::{CudaDevice, CudaOptions};
pub use exec::error::{Error, Result, SrcLoc};
#[doc(hidden)]
pub use exec::seq::chunk_programs_compiled;
pub use exec::seq::{
    run_seq, run_seq_with, stream_out, stream_out_with, ProgressFn, SeqOptions, SeqProgress, StreamOut,
};
pub use exec::{
    compile, compile_with, explain, explain_dot, explain_dot_with, explain_with, run, run_with, stats,
    stats_with, Program, Stats,
};
/// IEEE binary16, usable as an element type with the `f16` feature.
#[cfg(feature = "f16")]
pub use half::f16;

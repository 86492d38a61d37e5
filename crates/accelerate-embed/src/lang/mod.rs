//! The embedded language: scalar expressions `Exp<T>` and array
//! computations `Acc<A>` (Accelerate's two levels, ICFP'13 §2), built by
//! ordinary Rust code into a graph (`graph`) whose sharing
//! `trafo::sharing` recovers.

pub mod acc;
mod classes;
pub mod exp;
#[doc(hidden)]
pub mod graph;
pub mod library;
mod ops;
pub mod random;
pub mod scalar_ops;
pub mod stencil;

pub use acc::{acond, awhile, fill, generate, lift_acc, the, unit, use_array, Acc, AsAcc, LiftAcc};
pub use classes::{FloatElt, IntElt, NumElt};
pub use exp::{
    any_dims, cond, constant, from_index, index0, index1, index2, index3, intersect, just, lift, nothing,
    shape_size, to_index, unindex1, unindex2, unindex3, while_loop, Exp, IntoExp, Lift,
};
pub use library::gather_scatter::*;
pub use library::index_space::*;
pub use library::reductions::*;
pub use library::segmented::*;
pub use library::sort::{sort_by_key, SortKey};
pub use scalar_ops::{iterate, left, right, sfoldl, BitCastTo, Either};
pub use stencil::{Boundary, StencilPattern};

/// Runs `f` and then frees the program nodes it made (Note [The expression
/// arena]): build and run a program inside a scope when programs are built
/// repeatedly, so that memory (including the arrays given to `use_array`)
/// is given back. `Exp` and `Acc` values made inside must not be used after
/// the scope ends; if they are, running them is `Error::StaleHandle`. Arrays
/// and compiled `Program`s do not depend on the arena and outlive it.
pub fn scope<R>(f: impl FnOnce() -> R) -> R {
    struct Release(usize);
    impl Drop for Release {
        fn drop(&mut self) {
            graph::release(self.0);
        }
    }
    let _release = Release(graph::mark());
    f()
}

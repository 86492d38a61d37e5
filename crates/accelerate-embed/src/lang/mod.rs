//! The embedded language: scalar expressions `Exp<T>` and array
//! computations `Acc<A>` (Accelerate's two levels, ICFP'13 §2), built by
//! ordinary Rust code into a graph (`graph`) whose sharing
//! `trafo::sharing` recovers.

pub mod acc;
mod classes;
pub mod exp;
pub mod foreign;
#[doc(hidden)]
pub mod graph;
pub mod library;
mod ops;
pub mod random;
pub mod scalar_ops;
pub mod seq;
pub mod stencil;

pub use acc::{acond, awhile, fill, generate, lift_acc, the, unit, use_array, Acc, AsAcc, IntoAcc, LiftAcc};
pub use classes::{FloatElt, IntElt, NumElt};
pub use exp::{
    any_dims, cond, constant, from_index, index0, index1, index2, index3, intersect, just, lift, nothing,
    shape_size, to_index, unindex1, unindex2, unindex3, while_loop, Exp, IntoExp, Lift, LiftArg,
};
pub use foreign::{foreign_acc, Foreign};
pub use library::gather_scatter::*;
pub use library::index_space::*;
pub use library::reductions::*;
pub use library::segmented::*;
pub use library::sort::{sort_by_key, SortKey};
pub use scalar_ops::{iterate, left, right, sfoldl, BitCastTo, Either};
pub use seq::{from_segs, produce, stream_in, stream_in_exact, to_seq, Consumed, Outer, Seq};
pub use stencil::{Boundary, StencilPattern};

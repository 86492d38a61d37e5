//! The embedded language: scalar expressions `Exp<T>` and array
//! computations `Acc<A>` (Accelerate's two levels, ICFP'13 §2), built by
//! ordinary Rust code into a graph (`graph`) whose sharing
//! `trafo::sharing` recovers.

pub mod acc;
pub mod exp;
pub(crate) mod graph;
mod ops;

pub use acc::{acond, awhile, fill, generate, lift_acc, the, unit, use_array, Acc, AsAcc, LiftAcc};
pub use exp::{
    cond, constant, from_index, index0, index1, index2, index3, intersect, just, lift, nothing, shape_size,
    to_index, unindex1, unindex2, unindex3, while_loop, Exp, IntoExp, Lift,
};

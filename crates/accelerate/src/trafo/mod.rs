//! Program transformations, in pipeline order: sharing recovery and
//! conversion to the IR (ICFP'13 §3), simplification (with
//! common-subexpression elimination), and array fusion (ICFP'13 §4).

pub(crate) mod avars;
pub(crate) mod convert;
pub(crate) mod cse;
pub(crate) mod debruijn;
pub mod fusion;
pub(crate) mod sharing;
pub mod simplify;

pub use convert::SharingOptions;

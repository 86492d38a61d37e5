//! Program transformations: sharing recovery and conversion to the IR
//! (ICFP'13 §3). Simplification and fusion (ICFP'13 §4) come next.

pub(crate) mod convert;
pub(crate) mod debruijn;
pub(crate) mod sharing;
pub mod simplify;

pub use convert::SharingOptions;

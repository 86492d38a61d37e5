//! Program transformations, in pipeline order: sharing recovery and
//! conversion to the IR (ICFP'13 §3; the front end's, `accelerate_embed`),
//! simplification with common-subexpression elimination, and array fusion
//! (ICFP'13 §4; the optimiser's, `accelerate_opt`).

pub use accelerate_embed::{convert, sharing, SharingOptions};
pub use accelerate_opt::{avars, cse, debruijn, fusion, lift, simplify};

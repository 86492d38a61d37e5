//! Program transformations, in pipeline order: sharing recovery and
//! conversion to the IR (ICFP'13 §3; the front end's, `accelerate_embed`),
//! simplification with common-subexpression elimination, array fusion
//! (ICFP'13 §4) and clustering into multi-output kernels (the optimal
//! fusion thesis; the optimiser's, `accelerate_opt`).

pub use accelerate_embed::{convert, sharing, SharingOptions};
pub use accelerate_opt::{
    avars, clamped, cluster, cse, debruijn, fusion, gathers, hoist, lift, lines, one_hot, simplify,
};

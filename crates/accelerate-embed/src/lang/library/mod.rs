//! Operations built from the primitives (Accelerate's `Prelude`): they add
//! no IR construct, so every backend runs them, and fusion (ICFP'13 §4)
//! removes the intermediate arrays they would otherwise make.

pub mod gather_scatter;
pub mod index_space;
pub mod reductions;
pub mod segmented;
pub mod sort;

mod compact_native;
mod sort_native;

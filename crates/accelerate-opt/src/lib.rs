//! The optimiser of accelerate: the IR-to-IR phases, in pipeline order
//! after the front end's conversion: simplification (with
//! common-subexpression elimination and the let rewrites, `simplify`,
//! `cse`, `shrink`) and array fusion
//! (ICFP'13 §4, `fusion`), with the de Bruijn and array-variable
//! utilities they share (`debruijn`, `avars`). Every phase takes and
//! returns an `accelerate_ir::Program`; the IR verifier checks each.

pub mod avars;
pub mod clamped;
pub mod cluster;
pub mod cse;
pub mod debruijn;
pub mod fusion;
pub mod gathers;
pub mod hoist;
pub mod lift;
pub mod lines;
pub mod one_hot;
mod own_index;
mod shrink;
mod sibling_loops;
pub mod simplify;
mod strict;

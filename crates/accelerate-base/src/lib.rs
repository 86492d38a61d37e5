//! The base layer of accelerate: what every other layer shares and that
//! knows nothing of programs. Element types and shapes, the typed arrays
//! users hold and their struct-of-arrays storage (`array`), the memory
//! pool's limit, and the errors every phase returns with the source
//! locations they name (`error`).
//!
//! Users reach all of it through the `accelerate` crate
//! (`accelerate::array`, `accelerate::Error`); the layers and their arrows
//! are drawn in `docs/architecture.md`.

pub mod array;
pub mod error;
pub mod foreign;

pub use error::{Error, Result, SrcLoc};

//! Backends. Each runs IR programs; the interpreter is the reference the
//! others are tested against.

pub(crate) mod c;
pub(crate) mod cache;
pub mod cpu;
#[cfg(feature = "cuda")]
pub mod cuda;
pub mod interp;

//! Backends. Each runs IR programs; the interpreter is the reference the
//! others are tested against.

pub mod interp;

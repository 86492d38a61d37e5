//! The embedded front end of accelerate: the two-level language users
//! write programs in from Rust (`lang`: scalar expressions `Exp<T>`, array
//! computations `Acc<A>`, built as a graph by ordinary Rust code), and the
//! conversion of that graph into the IR, which recovers its sharing as
//! let-bindings (`sharing`, `convert`; ICFP'13 §3).
//!
//! Users reach it through the `accelerate` crate (`accelerate::lang`,
//! `accelerate::prelude`). A text front end would sit beside this crate,
//! producing the same IR.

pub mod convert;
pub mod lang;
pub mod sharing;

pub use convert::SharingOptions;

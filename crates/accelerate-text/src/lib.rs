//! A text front end for accelerate: a core of the Futhark language, its
//! higher-order functions compiled away by defunctionalisation (Hovgaard,
//! Henriksen and Elsman, TFP'18), lowered to the IR that the embedded front
//! end also produces, so that the same optimiser, plan and backends run it.
//!
//! The stages, each a module (Note [One tree, filled in by stages] in
//! `ast`): `lexer` and `parser` (text to `ast`), `check` (types, the
//! TFP'18 restrictions), `mono` (monomorphisation), `defunc`
//! (defunctionalisation by static values), `lower` (to `accelerate_ir`).
//! `data` reads and writes values in Futhark's textual and binary data
//! formats; `testspec` reads the `-- ==` test blocks of a source file.

// The tree's enums hold their nodes by value (`Decl::Value`, a slice's
// bounds in `DimIndex`), as the stages that share it agreed; boxing them
// to even out variant sizes is not worth changing that contract.
#[allow(clippy::large_enum_variant)]
pub mod ast;
pub mod check;
pub mod diag;
pub mod lexer;
pub mod parser;
pub mod pretty;

//! The intermediate representation every pass and backend works on.
//!
//! Typed first-order terms with de Bruijn variables at two levels (see
//! Note [Two environments] in `term`), a stable text form (`pretty`) used by
//! snapshot tests and `explain()`, a verifier (`verify`) run after every
//! pass, and the semantics of every primitive (`eval`), which the
//! simplifier folds constants with and every evaluator of scalar code
//! (the interpreter, the host) applies. The IR knows nothing of the front
//! end or of any backend.

pub mod dot;
pub mod eval;
pub mod pretty;
pub mod prim;
pub mod term;
pub mod verify;
pub mod visit;

pub use prim::PrimFun;
pub use term::{
    AFun, AccKind, Boundary, DelayedArray, Direction, ExpKind, ForeignAcc, Fun, OpenAcc, OpenExp, Program,
    StencilArg,
};

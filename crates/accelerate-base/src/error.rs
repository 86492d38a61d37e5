//! The one error type of the library. Every variant that can come from the
//! user's program names the user's source location (captured by
//! `#[track_caller]` constructors) and the shapes or values at fault.

use std::collections::HashSet;
use std::fmt;
use std::panic::Location;
use std::sync::{Mutex, OnceLock};

/// A source location in the user's program: a line of Rust source (the
/// call site of an embedded operation, `SrcLoc::caller`) or of any other
/// text a front end reads (`SrcLoc::in_text`). Printed `file:line:column`.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct SrcLoc {
    file: &'static str,
    line: u32,
    column: u32,
}

impl SrcLoc {
    /// The caller's location in its Rust source.
    #[track_caller]
    pub fn caller() -> SrcLoc {
        let l = Location::caller();
        SrcLoc { file: l.file(), line: l.line(), column: l.column() }
    }

    /// A line and column (from 1) of the text file `file`, for front ends
    /// that read programs from text. File names are interned: each
    /// distinct name is stored once for the life of the process.
    pub fn in_text(file: &str, line: u32, column: u32) -> SrcLoc {
        static NAMES: OnceLock<Mutex<HashSet<&'static str>>> = OnceLock::new();
        let mut names = NAMES.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        let file = match names.get(file) {
            Some(f) => *f,
            None => {
                let f: &'static str = Box::leak(file.to_string().into_boxed_str());
                names.insert(f);
                f
            }
        };
        SrcLoc { file, line, column }
    }

    pub fn file(&self) -> &'static str {
        self.file
    }
    pub fn line(&self) -> u32 {
        self.line
    }
    pub fn column(&self) -> u32 {
        self.column
    }
}

impl fmt::Display for SrcLoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file(), self.line(), self.column())
    }
}

impl fmt::Debug for SrcLoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Everything that can go wrong, from building a program to running it.
#[non_exhaustive]
#[derive(Clone, Debug, thiserror::Error)]
pub enum Error {
    /// Array data whose length is not the size of the shape it was given.
    #[error("{loc}: an array of shape {shape:?} needs {expected} elements, but {found} were given")]
    DataLength { loc: SrcLoc, shape: Vec<usize>, expected: usize, found: usize },

    /// Data of one rank given where another was expected.
    #[error("{loc}: expected an array of rank {expected}, found rank {found}")]
    RankMismatch { loc: SrcLoc, expected: usize, found: usize },

    /// A shape with a negative extent.
    #[error("{loc}: negative extent in shape {shape:?}")]
    NegativeExtent { loc: SrcLoc, shape: Vec<i64> },

    /// A shape whose size does not fit in memory addresses.
    #[error("{loc}: the size of shape {shape:?} overflows")]
    ShapeTooLarge { loc: SrcLoc, shape: Vec<i64> },

    /// An array larger than the memory that can be had.
    #[error("{loc}: not enough memory for an array of shape {shape:?}")]
    OutOfMemory { loc: SrcLoc, shape: Vec<usize> },

    /// A row-major position outside an array.
    #[error(
        "{loc}: linear index {index} is out of bounds for an array of shape {shape:?} ({size} elements)"
    )]
    LinearIndexOutOfBounds { loc: SrcLoc, index: i64, size: usize, shape: Vec<usize> },

    /// `reshape` to a shape of another size.
    #[error("{loc}: cannot reshape an array of shape {from:?} ({from_size} elements) to shape {to:?} ({to_size} elements)")]
    ReshapeSize { loc: SrcLoc, from: Vec<usize>, from_size: usize, to: Vec<i64>, to_size: usize },

    /// An index outside an array's bounds.
    #[error("{loc}: index {index:?} is out of bounds for an array of shape {shape:?}")]
    IndexOutOfBounds { loc: SrcLoc, index: Vec<i64>, shape: Vec<usize> },

    /// Integer division or remainder by zero.
    #[error("{loc}: integer division by zero")]
    DivisionByZero { loc: SrcLoc },

    /// A reduction or scan without a seed over an empty row.
    #[error("{loc}: {op} of an empty row (array of shape {shape:?}) has no value; use the form with a seed")]
    EmptyReduction { loc: SrcLoc, op: &'static str, shape: Vec<usize> },

    /// A stencil pattern larger than the array it runs over.
    #[error("{loc}: a stencil pattern of extents {pattern:?} does not fit in an array of shape {shape:?}")]
    StencilTooSmall { loc: SrcLoc, pattern: Vec<usize>, shape: Vec<usize> },

    /// Arrays that must have one shape, and do not.
    #[error("{loc}: {op} needs arrays of one shape, given {first:?} and {second:?}")]
    ShapeMismatch { loc: SrcLoc, op: &'static str, first: Vec<usize>, second: Vec<usize> },

    /// Segment descriptors that do not describe the array they segment.
    #[error("{loc}: {message}")]
    BadSegments { loc: SrcLoc, message: String },

    /// An array computation that depends on a scalar lambda's variable:
    /// nested data parallelism, which the flat language cannot express.
    #[error("{loc}: this array operation depends on a variable of an enclosing scalar function (nested data parallelism); compute it outside the function, or use the segmented operations")]
    NestedParallelism { loc: SrcLoc },

    /// A scalar expression used outside the function whose argument it
    /// mentions (for example smuggled out through a `Cell`).
    #[error("{loc}: this expression uses the argument of a function outside that function")]
    EscapedVariable { loc: SrcLoc },

    /// An `Exp` or `Acc` made inside an `accelerate::scope` that has ended.
    #[error("{loc}: this program uses an expression or array computation made inside an `accelerate::scope` that has ended; build it again, or outside the scope")]
    StaleHandle { loc: SrcLoc },

    /// The requested backend cannot run here.
    #[error("backend {backend} is unavailable: {reason}")]
    BackendUnavailable { backend: String, reason: String },

    /// An invalid configuration value (for example an environment variable).
    #[error("invalid configuration: {0}")]
    Config(String),

    /// The IR after a pass failed verification: a bug in the library.
    #[error("internal error: the IR after {phase} is ill-formed: {message}")]
    Verifier { phase: String, message: String },

    /// Any other broken internal invariant: a bug in the library.
    #[error("internal error: {0}")]
    Internal(String),
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::SrcLoc;

    #[test]
    fn a_location_in_a_text_file_names_its_line() {
        let a = SrcLoc::in_text("prog.fut", 12, 5);
        assert_eq!(a.to_string(), "prog.fut:12:5");
        let b = SrcLoc::in_text(&String::from("prog.fut"), 12, 5);
        assert_eq!(a, b);
        assert!(std::ptr::eq(a.file(), b.file()), "file names are interned");
        let here = SrcLoc::caller();
        assert!(here.file().ends_with("error.rs") && here.line() > 0);
    }
}

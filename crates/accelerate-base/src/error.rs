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
    /// Set on the reads a library operation plants as checks (Note
    /// [Checks planted by library operations]).
    check: Option<&'static Check>,
}

impl SrcLoc {
    /// The caller's location in its Rust source.
    #[track_caller]
    pub fn caller() -> SrcLoc {
        let l = Location::caller();
        SrcLoc { file: l.file(), line: l.line(), column: l.column(), check: None }
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
        SrcLoc { file, line, column, check: None }
    }

    /// This location, marking a read that `op` plants to check one of its
    /// arguments: when the read is out of bounds, the error explains what
    /// was wrong with the argument instead (Note [Checks planted by
    /// library operations]). Checks are interned like file names.
    pub fn checking(self, op: &'static str, kind: CheckKind) -> SrcLoc {
        static CHECKS: OnceLock<Mutex<HashSet<&'static Check>>> = OnceLock::new();
        let mut checks = CHECKS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
        let check = Check { op, kind };
        let check = match checks.get(&check) {
            Some(c) => *c,
            None => {
                let c: &'static Check = Box::leak(Box::new(check));
                checks.insert(c);
                c
            }
        };
        SrcLoc { check: Some(check), ..self }
    }

    /// The check a read at this location stands for, if any.
    pub fn check(&self) -> Option<Check> {
        self.check.copied()
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

/// The location, and the check planted there if any: every field, so
/// that equal `Debug` texts are equal locations (the CPU backend keys the
/// kernels it has written by their `Debug` text).
impl fmt::Debug for SrcLoc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)?;
        match self.check {
            Some(c) => write!(f, " (check {c:?})"),
            None => Ok(()),
        }
    }
}

// Note [Checks planted by library operations]
// The primitives have no assertion, so a library operation built from
// them checks an argument by making its result depend on a read that is
// out of bounds exactly when the argument is wrong (Note [Checking segment
// descriptors] in `lang/library/segmented.rs`, Note [Checked windows] in
// `lang/library/index_space.rs`). Every backend reports such a read like
// any other, with its location, index and shape; the location carries the
// `Check` it stands for, and `Error::index_out_of_bounds`, through which
// every backend reports an out-of-bounds index, turns it into the error
// the user needs: the operation, the argument and what is wrong with it
// (`BadSegments`, `InvalidArgument`), not an index the user never wrote.
// The index and shape of the read are chosen so that they carry the
// values the message names (each `CheckKind` says which).

/// What a planted read checks, and which operation planted it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Check {
    /// The user-facing name of the operation (`"scanl1_seg"`).
    pub op: &'static str,
    pub kind: CheckKind,
}

/// The argument a planted read checks, and how its index and shape carry
/// the values at fault.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckKind {
    /// Segment lengths are non-negative: the index is `[l]`, a negative
    /// length, the shape that of the lengths.
    NegativeSegmentLength,
    /// Segment lengths sum to the row length: the index is `[total]`
    /// (saturated at `i64::MAX`), the shape `[n]` with `total > n`.
    SegmentsPastRow,
    /// As `SegmentsPastRow` with `total < n`: the index is `[n]`, the
    /// shape `[total]`.
    SegmentsShortOfRow,
    /// A count is non-negative: the index is `[c]`, the count, the shape
    /// that of the array the counts were computed from.
    NegativeCount,
    /// A window of every row fits in the row: the innermost index is the
    /// first position it would read outside the row (the negative
    /// argument, or the first one past the end), the innermost extent the
    /// row's length.
    Window,
    /// Two arrays a function needs of one size (the text front end's
    /// `map2`, `zip`, `scatter`: Futhark's size rule) have the same outer
    /// extent: the index is `[b, 1]`, the shape `[a + 1, 1]`, for sizes
    /// `a` and `b` (in bounds, `[0, 0]`, when they agree).
    SizeMismatch,
}

impl Check {
    /// The error for a failed read of this check.
    fn error(&self, loc: SrcLoc, index: &[i64], shape: &[usize]) -> Error {
        let (i, n) = (index.last().copied().unwrap_or(0), shape.last().copied().unwrap_or(0));
        let op = self.op;
        let segments = |message: String| Error::BadSegments { loc, message: format!("{op}: {message}") };
        match self.kind {
            CheckKind::NegativeSegmentLength => {
                segments(format!("the segment lengths (shape {shape:?}) include a negative length, {i}"))
            }
            CheckKind::SegmentsPastRow if i == i64::MAX => segments(format!(
                "the segment lengths sum to {} or more, but the rows have {n} elements",
                i64::MAX
            )),
            CheckKind::SegmentsPastRow => {
                segments(format!("the segment lengths sum to {i}, but the rows have {n} elements"))
            }
            CheckKind::SegmentsShortOfRow => {
                segments(format!("the segment lengths sum to {n}, but the rows have {i} elements"))
            }
            CheckKind::NegativeCount => Error::InvalidArgument {
                loc,
                op,
                message: format!("count {i} is negative (counts of an array of shape {shape:?})"),
            },
            CheckKind::Window => Error::InvalidArgument {
                loc,
                op,
                message: if i < 0 {
                    format!("the argument {i} is negative (rows of {n} elements)")
                } else {
                    format!("the window needs position {i}, past the end of rows of {n} elements")
                },
            },
            CheckKind::SizeMismatch => {
                let a = shape.first().map_or(0, |&s| s.saturating_sub(1));
                let b = index.first().copied().unwrap_or(0);
                Error::ShapeMismatch { loc, op, first: vec![a], second: vec![b.max(0) as usize] }
            }
        }
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

    /// An argument of a library operation outside what the operation
    /// accepts (a negative count, a window past the end of a row).
    #[error("{loc}: {op}: {message}")]
    InvalidArgument { loc: SrcLoc, op: &'static str, message: String },

    /// A foreign function (`foreign_acc`) returned an error, panicked,
    /// or returned arrays of a type other than the one it declared.
    #[error("{loc}: foreign function {name}: {message}")]
    Foreign { loc: SrcLoc, name: String, message: String },

    /// An element of a sequence failed: `index` is its position in the
    /// sequence, `loc` where the sequence was consumed, `error` what went
    /// wrong in computing it (with the line of the operation that failed).
    #[error("{loc}: element {index} of the sequence: {error}")]
    SeqElement { loc: SrcLoc, index: u64, error: Box<Error> },

    /// A sequence could not run: its stream was already consumed, it ended
    /// before the length it was declared to have, or a budget or chunk
    /// size it was given cannot work.
    #[error("{loc}: sequence: {message}")]
    Sequence { loc: SrcLoc, message: String },

    /// Nested data parallelism (an array computed inside a scalar
    /// function, from its arguments) of a form the lifting transformation
    /// does not flatten yet; `what` names the construct.
    #[error("{loc}: nested data parallelism: {what} is not supported yet; compute it outside the function, or use the segmented operations")]
    NestedParallelism { loc: SrcLoc, what: String },

    /// A scalar expression used outside the function whose argument it
    /// mentions (for example smuggled out through a `Cell`).
    #[error("{loc}: this expression uses the argument of a function outside that function")]
    EscapedVariable { loc: SrcLoc },

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

impl Error {
    /// The error for a read of `index` outside an array of shape `shape`
    /// at `loc`: `IndexOutOfBounds`, or, for a read a library operation
    /// planted as a check, the error it stands for (Note [Checks planted
    /// by library operations]). Every backend reports out-of-bounds
    /// indices through this.
    pub fn index_out_of_bounds(loc: SrcLoc, index: Vec<i64>, shape: Vec<usize>) -> Error {
        match loc.check {
            Some(check) => check.error(loc, &index, &shape),
            None => Error::IndexOutOfBounds { loc, index, shape },
        }
    }
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::{CheckKind, Error, SrcLoc};

    #[test]
    fn a_failed_planted_read_is_the_error_its_check_stands_for() {
        let here = SrcLoc::caller();
        let plain = Error::index_out_of_bounds(here, vec![5], vec![3]);
        assert!(matches!(plain, Error::IndexOutOfBounds { loc, .. } if loc == here));
        let checked = here.checking("scanl1_seg", CheckKind::SegmentsShortOfRow);
        assert_ne!(checked, here, "the check is part of the location");
        assert_eq!(checked.to_string(), here.to_string(), "but not of its text");
        assert_eq!(
            checked,
            here.checking("scanl1_seg", CheckKind::SegmentsShortOfRow),
            "checks are interned"
        );
        let e = Error::index_out_of_bounds(checked, vec![6], vec![4]);
        assert_eq!(
            e.to_string(),
            format!("{here}: scanl1_seg: the segment lengths sum to 4, but the rows have 6 elements")
        );
        let past = here.checking("scanl1_seg", CheckKind::SegmentsPastRow);
        let e = Error::index_out_of_bounds(past, vec![i64::MAX], vec![6]);
        assert!(
            e.to_string().ends_with("sum to 9223372036854775807 or more, but the rows have 6 elements"),
            "{e}"
        );
        let window = here.checking("take", CheckKind::Window);
        let e = Error::index_out_of_bounds(window, vec![0, -1], vec![2, 3]);
        assert_eq!(e.to_string(), format!("{here}: take: the argument -1 is negative (rows of 3 elements)"));
    }

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

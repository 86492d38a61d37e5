//! Values in Futhark's data formats, as `futhark test`, `futhark run` and
//! compiled Futhark programs read and print them: the textual format
//! (`[1, 2, 3]`, `3.5f32`, `empty([0][3]i32)`; `text`) and the binary one
//! (`b`, format version 2, rank, element type, shape, little-endian
//! elements; `binary`), which may be mixed in one input, value by value,
//! with whitespace and `--` comments between them; and `futhark test`'s
//! comparison of an expected value with an actual one (`compare`).
//!
//! The formats are those of Futhark's documentation (`binary-data-format`,
//! `futhark-test(1)`'s VALUES) and of its reader, the `futhark-data`
//! package. Where that reader is silent or lax, this one is stricter, and
//! says so in its error:
//! - a literal that does not fit its type is an error (`300u8`, `128i8`,
//!   `1e39f32`), where Futhark wraps integers and rounds floats to
//!   infinity; a negative literal of an unsigned type is read in two's
//!   complement as Futhark does (`-1u8` is 255), down to the least value
//!   of the signed type of its width (`-128u8`);
//! - a `bool` in binary data is the byte 0 or 1 (Futhark leaves any other
//!   byte undefined);
//! - string literals (`"abc"` for a `[]u8`) are not read.
//!
//! A `Value` is an array of one primitive type and any rank up to
//! `MAX_RANK` (rank 0 is a scalar), held as the base crate's `ArrayData`
//! so that the runtime can hand it to a program as it is.
//!
//! Reading never panics and never reserves more memory than the input
//! could fill: a binary header's claimed size is checked against the bytes
//! that remain before anything is allocated, and a textual array grows
//! one element, hence at least one byte of input, at a time.

mod binary;
mod compare;
#[cfg(test)]
mod tests;
mod text;

use crate::ast::PrimType;
use accelerate_base::array::{ArrayData, Buffer, EltTy, ScalarTy, ScalarVal};
use std::fmt;
use std::sync::Arc;

pub use binary::write_binary;
pub use compare::{values_match, TOLERANCE};
pub use text::{write_scalar, write_text};

/// The highest rank a value may have: the binary format gives the rank
/// one byte.
pub const MAX_RANK: usize = 255;

/// An array of one primitive type and any rank (0 for a scalar).
///
/// The derived `PartialEq` is IEEE equality, under which a NaN differs
/// from itself; `same_bits` compares bit patterns and `values_match`
/// compares as `futhark test` does.
#[derive(Clone, Debug, PartialEq)]
pub struct Value {
    ty: ScalarTy,
    /// Shared, so that a value passes to and from a program without a copy.
    data: Arc<ArrayData>,
}

impl Value {
    /// The value of an array whose elements are primitive (not tuples),
    /// of rank at most `MAX_RANK`; `None` otherwise.
    pub fn new(data: ArrayData) -> Option<Value> {
        Value::shared(Arc::new(data))
    }

    /// `new` of an array that is shared.
    pub fn shared(data: Arc<ArrayData>) -> Option<Value> {
        let ty = data.elt_ty().scalar()?;
        (data.rank() <= MAX_RANK).then_some(Value { ty, data })
    }

    /// The array, shared.
    pub fn arc(&self) -> &Arc<ArrayData> {
        &self.data
    }

    /// A scalar: an array of rank 0.
    pub fn scalar(v: ScalarVal) -> Value {
        let mut buffer = buffer_of(v.ty());
        buffer.push(v);
        let data = ArrayData::from_buffers(Vec::new(), EltTy::Scalar(v.ty()), vec![buffer]);
        Value { ty: v.ty(), data: Arc::new(data.expect("a buffer of one element fills a shape of rank 0")) }
    }

    /// The array of this shape whose elements, in row-major order, are
    /// the buffer's; `None` if their number is not the shape's size or
    /// the rank is above `MAX_RANK`.
    pub fn from_buffer(shape: Vec<usize>, buffer: Buffer) -> Option<Value> {
        let elt = EltTy::Scalar(buffer.ty());
        Value::new(ArrayData::from_buffers(shape, elt, vec![buffer])?)
    }

    pub fn array(&self) -> &ArrayData {
        &self.data
    }

    pub fn into_array(self) -> ArrayData {
        Arc::try_unwrap(self.data).unwrap_or_else(|a| (*a).clone())
    }

    /// The elements in row-major order.
    pub fn buffer(&self) -> &Buffer {
        // an array of a scalar element type has exactly one buffer
        &self.data.buffers()[0]
    }

    pub fn prim_type(&self) -> PrimType {
        prim_type(self.ty)
    }

    pub fn scalar_ty(&self) -> ScalarTy {
        self.ty
    }

    pub fn shape(&self) -> &[usize] {
        self.data.shape()
    }

    pub fn rank(&self) -> usize {
        self.data.rank()
    }

    /// The number of elements.
    pub fn len(&self) -> usize {
        self.buffer().len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at a row-major position.
    pub fn get(&self, i: usize) -> Option<ScalarVal> {
        (i < self.len()).then(|| self.buffer().get(i))
    }

    /// The type as Futhark writes it, with the extents: `[2][3]f32`, or
    /// `i32` for a scalar.
    pub fn type_name(&self) -> String {
        format!("{}{}", shape_text(self.shape()), self.ty)
    }

    /// The same type, shape and element bits (a NaN equals itself).
    pub fn same_bits(&self, other: &Value) -> bool {
        self.ty == other.ty
            && self.shape() == other.shape()
            && (0..self.len()).all(|i| self.buffer().get(i).same_bits(other.buffer().get(i)))
    }
}

impl fmt::Display for Value {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&write_text(self))
    }
}

/// The extents as Futhark writes them in a type: `[2][3]`.
pub(crate) fn shape_text(shape: &[usize]) -> String {
    shape.iter().map(|d| format!("[{d}]")).collect()
}

/// The base crate's name for a primitive type of the language.
pub fn scalar_ty(p: PrimType) -> ScalarTy {
    match p {
        PrimType::Bool => ScalarTy::Bool,
        PrimType::I8 => ScalarTy::I8,
        PrimType::I16 => ScalarTy::I16,
        PrimType::I32 => ScalarTy::I32,
        PrimType::I64 => ScalarTy::I64,
        PrimType::U8 => ScalarTy::U8,
        PrimType::U16 => ScalarTy::U16,
        PrimType::U32 => ScalarTy::U32,
        PrimType::U64 => ScalarTy::U64,
        PrimType::F16 => ScalarTy::F16,
        PrimType::F32 => ScalarTy::F32,
        PrimType::F64 => ScalarTy::F64,
    }
}

/// The language's name for a primitive type of the base crate.
pub fn prim_type(s: ScalarTy) -> PrimType {
    match s {
        ScalarTy::Bool => PrimType::Bool,
        ScalarTy::I8 => PrimType::I8,
        ScalarTy::I16 => PrimType::I16,
        ScalarTy::I32 => PrimType::I32,
        ScalarTy::I64 => PrimType::I64,
        ScalarTy::U8 => PrimType::U8,
        ScalarTy::U16 => PrimType::U16,
        ScalarTy::U32 => PrimType::U32,
        ScalarTy::U64 => PrimType::U64,
        ScalarTy::F16 => PrimType::F16,
        ScalarTy::F32 => PrimType::F32,
        ScalarTy::F64 => PrimType::F64,
    }
}

/// An empty buffer of a type; an empty vector reserves nothing, so this
/// cannot fail.
fn buffer_of(ty: ScalarTy) -> Buffer {
    match ty {
        ScalarTy::Bool => Buffer::Bool(Default::default()),
        ScalarTy::I8 => Buffer::I8(Default::default()),
        ScalarTy::I16 => Buffer::I16(Default::default()),
        ScalarTy::I32 => Buffer::I32(Default::default()),
        ScalarTy::I64 => Buffer::I64(Default::default()),
        ScalarTy::U8 => Buffer::U8(Default::default()),
        ScalarTy::U16 => Buffer::U16(Default::default()),
        ScalarTy::U32 => Buffer::U32(Default::default()),
        ScalarTy::U64 => Buffer::U64(Default::default()),
        ScalarTy::F16 => Buffer::F16(Default::default()),
        ScalarTy::F32 => Buffer::F32(Default::default()),
        ScalarTy::F64 => Buffer::F64(Default::default()),
    }
}

/// Malformed data: what is wrong, and the byte offset in the input where
/// it was found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DataError {
    pub message: String,
    pub offset: usize,
}

impl DataError {
    pub(crate) fn new(offset: usize, message: impl Into<String>) -> DataError {
        DataError { message: message.into(), offset }
    }
}

impl fmt::Display for DataError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for DataError {}

/// Reads every value of the input, each textual or binary, with
/// whitespace and `--` comments (to the end of the line) between them.
pub fn read_values(input: &[u8]) -> Result<Vec<Value>, DataError> {
    let mut c = Cursor { input, pos: 0 };
    let mut values = Vec::new();
    loop {
        c.skip_space();
        match c.peek() {
            None => return Ok(values),
            // no textual value starts with `b`
            Some(b'b') => values.push(binary::read(&mut c)?),
            Some(_) => values.push(text::read(&mut c)?),
        }
    }
}

/// A position in the input, shared by the two formats' readers.
struct Cursor<'a> {
    input: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn peek(&self) -> Option<u8> {
        self.input.get(self.pos).copied()
    }

    fn rest(&self) -> &'a [u8] {
        self.input.get(self.pos..).unwrap_or_default()
    }

    /// Skips whitespace and `--` comments.
    fn skip_space(&mut self) {
        loop {
            match self.peek() {
                Some(b) if b.is_ascii_whitespace() => self.pos += 1,
                Some(b'-') if self.rest().starts_with(b"--") => {
                    let line = self.rest().iter().position(|&b| b == b'\n');
                    self.pos = line.map_or(self.input.len(), |n| self.pos + n + 1);
                }
                _ => return,
            }
        }
    }

    fn error(&self, message: impl Into<String>) -> DataError {
        DataError::new(self.pos, message)
    }
}

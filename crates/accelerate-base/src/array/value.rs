//! Untyped run-time values: scalars, element values (tuples of scalars) and
//! struct-of-arrays array data. Every backend exchanges arrays in this form.

use super::column::Column;
use super::ty::{ArrayTy, ArraysTy, EltTy, ScalarTy};
use std::fmt;
use std::sync::Arc;

/// One primitive value.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ScalarVal {
    Bool(bool),
    I8(i8),
    I16(i16),
    I32(i32),
    I64(i64),
    U8(u8),
    U16(u16),
    U32(u32),
    U64(u64),
    /// The bits of an IEEE binary16 value.
    F16(u16),
    F32(f32),
    F64(f64),
}

impl ScalarVal {
    pub fn ty(self) -> ScalarTy {
        match self {
            ScalarVal::Bool(_) => ScalarTy::Bool,
            ScalarVal::I8(_) => ScalarTy::I8,
            ScalarVal::I16(_) => ScalarTy::I16,
            ScalarVal::I32(_) => ScalarTy::I32,
            ScalarVal::I64(_) => ScalarTy::I64,
            ScalarVal::U8(_) => ScalarTy::U8,
            ScalarVal::U16(_) => ScalarTy::U16,
            ScalarVal::U32(_) => ScalarTy::U32,
            ScalarVal::U64(_) => ScalarTy::U64,
            ScalarVal::F16(_) => ScalarTy::F16,
            ScalarVal::F32(_) => ScalarTy::F32,
            ScalarVal::F64(_) => ScalarTy::F64,
        }
    }

    /// The zero (or `false`) of a type: the payload of an absent option.
    pub fn zero(ty: ScalarTy) -> ScalarVal {
        match ty {
            ScalarTy::Bool => ScalarVal::Bool(false),
            ScalarTy::I8 => ScalarVal::I8(0),
            ScalarTy::I16 => ScalarVal::I16(0),
            ScalarTy::I32 => ScalarVal::I32(0),
            ScalarTy::I64 => ScalarVal::I64(0),
            ScalarTy::U8 => ScalarVal::U8(0),
            ScalarTy::U16 => ScalarVal::U16(0),
            ScalarTy::U32 => ScalarVal::U32(0),
            ScalarTy::U64 => ScalarVal::U64(0),
            ScalarTy::F16 => ScalarVal::F16(0),
            ScalarTy::F32 => ScalarVal::F32(0.0),
            ScalarTy::F64 => ScalarVal::F64(0.0),
        }
    }

    pub fn as_i64(self) -> Option<i64> {
        match self {
            ScalarVal::I64(v) => Some(v),
            _ => None,
        }
    }

    pub fn as_bool(self) -> Option<bool> {
        match self {
            ScalarVal::Bool(v) => Some(v),
            _ => None,
        }
    }

    /// Equality of bit patterns, so that NaN equals itself: used by tests
    /// and snapshot comparisons, never by the language's `==`.
    pub fn same_bits(self, other: ScalarVal) -> bool {
        match (self, other) {
            (ScalarVal::F32(a), ScalarVal::F32(b)) => a.to_bits() == b.to_bits(),
            (ScalarVal::F16(a), ScalarVal::F16(b)) => a == b,
            (ScalarVal::F64(a), ScalarVal::F64(b)) => a.to_bits() == b.to_bits(),
            (a, b) => a == b,
        }
    }
}

impl fmt::Display for ScalarVal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarVal::Bool(v) => write!(f, "{v}"),
            ScalarVal::I8(v) => write!(f, "{v}"),
            ScalarVal::I16(v) => write!(f, "{v}"),
            ScalarVal::I32(v) => write!(f, "{v}"),
            ScalarVal::I64(v) => write!(f, "{v}"),
            ScalarVal::U8(v) => write!(f, "{v}"),
            ScalarVal::U16(v) => write!(f, "{v}"),
            ScalarVal::U32(v) => write!(f, "{v}"),
            ScalarVal::U64(v) => write!(f, "{v}"),
            ScalarVal::F16(v) => write!(f, "{:?}", half::f16::from_bits(*v)),
            ScalarVal::F32(v) => write!(f, "{v:?}"),
            ScalarVal::F64(v) => write!(f, "{v:?}"),
        }
    }
}

/// A value of an element type: a scalar or a tuple.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    Scalar(ScalarVal),
    Tuple(Vec<Val>),
}

impl Val {
    pub const UNIT: Val = Val::Tuple(Vec::new());

    pub fn scalar(&self) -> Option<ScalarVal> {
        match self {
            Val::Scalar(s) => Some(*s),
            Val::Tuple(_) => None,
        }
    }

    pub fn tuple(&self) -> Option<&[Val]> {
        match self {
            Val::Tuple(vs) => Some(vs),
            Val::Scalar(_) => None,
        }
    }

    /// A shape or index value from its extents, outermost first.
    pub fn from_index(ix: &[i64]) -> Val {
        Val::Tuple(ix.iter().map(|&i| Val::Scalar(ScalarVal::I64(i))).collect())
    }

    /// The extents of a shape or index value, if it is one.
    pub fn to_index(&self) -> Option<Vec<i64>> {
        self.tuple()?.iter().map(|v| v.scalar()?.as_i64()).collect()
    }

    /// The default value of a type (zeros and `false`).
    pub fn zero(ty: &EltTy) -> Val {
        match ty {
            EltTy::Scalar(s) => Val::Scalar(ScalarVal::zero(*s)),
            EltTy::Tuple(ts) => Val::Tuple(ts.iter().map(Val::zero).collect()),
        }
    }

    /// Does this value have the given type?
    pub fn has_type(&self, ty: &EltTy) -> bool {
        match (self, ty) {
            (Val::Scalar(s), EltTy::Scalar(t)) => s.ty() == *t,
            (Val::Tuple(vs), EltTy::Tuple(ts)) => {
                vs.len() == ts.len() && vs.iter().zip(ts).all(|(v, t)| v.has_type(t))
            }
            _ => false,
        }
    }

    pub fn same_bits(&self, other: &Val) -> bool {
        match (self, other) {
            (Val::Scalar(a), Val::Scalar(b)) => a.same_bits(*b),
            (Val::Tuple(a), Val::Tuple(b)) => {
                a.len() == b.len() && a.iter().zip(b).all(|(x, y)| x.same_bits(y))
            }
            _ => false,
        }
    }

    fn push_leaves(&self, out: &mut Vec<ScalarVal>) {
        match self {
            Val::Scalar(s) => out.push(*s),
            Val::Tuple(vs) => vs.iter().for_each(|v| v.push_leaves(out)),
        }
    }

    /// Rebuilds a value of type `ty` from its leaves.
    fn from_leaves(ty: &EltTy, leaves: &mut impl Iterator<Item = ScalarVal>) -> Val {
        match ty {
            EltTy::Scalar(_) => Val::Scalar(leaves.next().expect("too few leaves for type")),
            EltTy::Tuple(ts) => Val::Tuple(ts.iter().map(|t| Val::from_leaves(t, leaves)).collect()),
        }
    }
}

impl fmt::Display for Val {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Val::Scalar(s) => write!(f, "{s}"),
            Val::Tuple(vs) => {
                f.write_str("(")?;
                for (i, v) in vs.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{v}")?;
                }
                if vs.len() == 1 {
                    f.write_str(",")?;
                }
                f.write_str(")")
            }
        }
    }
}

/// One column of a struct-of-arrays array: a vector of one primitive type,
/// starting a cache line (Note [Buffers start a cache line]).
#[derive(Clone, Debug, PartialEq)]
pub enum Buffer {
    Bool(Column<bool>),
    I8(Column<i8>),
    I16(Column<i16>),
    I32(Column<i32>),
    I64(Column<i64>),
    U8(Column<u8>),
    U16(Column<u16>),
    U32(Column<u32>),
    U64(Column<u64>),
    F16(Column<u16>),
    F32(Column<f32>),
    F64(Column<f64>),
}

macro_rules! each_buffer {
    ($self:expr, $v:ident => $body:expr) => {
        match $self {
            Buffer::Bool($v) => $body,
            Buffer::I8($v) => $body,
            Buffer::I16($v) => $body,
            Buffer::I32($v) => $body,
            Buffer::I64($v) => $body,
            Buffer::U8($v) => $body,
            Buffer::U16($v) => $body,
            Buffer::U32($v) => $body,
            Buffer::U64($v) => $body,
            Buffer::F16($v) => $body,
            Buffer::F32($v) => $body,
            Buffer::F64($v) => $body,
        }
    };
}

impl Buffer {
    /// An empty buffer with room for `n` elements, or `None` if that much
    /// memory cannot be had (never a panic or an abort).
    pub fn try_with_capacity(ty: ScalarTy, n: usize) -> Option<Buffer> {
        fn reserve<T>(n: usize) -> Option<Column<T>> {
            Column::try_with_capacity(n)
        }
        Some(match ty {
            ScalarTy::Bool => Buffer::Bool(reserve(n)?),
            ScalarTy::I8 => Buffer::I8(reserve(n)?),
            ScalarTy::I16 => Buffer::I16(reserve(n)?),
            ScalarTy::I32 => Buffer::I32(reserve(n)?),
            ScalarTy::I64 => Buffer::I64(reserve(n)?),
            ScalarTy::U8 => Buffer::U8(reserve(n)?),
            ScalarTy::U16 => Buffer::U16(reserve(n)?),
            ScalarTy::U32 => Buffer::U32(reserve(n)?),
            ScalarTy::U64 => Buffer::U64(reserve(n)?),
            ScalarTy::F16 => Buffer::F16(reserve(n)?),
            ScalarTy::F32 => Buffer::F32(reserve(n)?),
            ScalarTy::F64 => Buffer::F64(reserve(n)?),
        })
    }

    /// An empty buffer with room for `n` elements that a kernel will
    /// write (then `set_len`), recycled if one fits (Note [Recycled
    /// buffers]), or `None` if the memory cannot be had.
    #[doc(hidden)]
    pub fn uninit(ty: ScalarTy, n: usize) -> Option<Buffer> {
        super::pool::take(ty, n).or_else(|| Buffer::try_with_capacity(ty, n))
    }

    /// The number of elements it has room for.
    pub(crate) fn capacity(&self) -> usize {
        each_buffer!(self, v => v.capacity())
    }

    /// The bytes of its storage.
    pub(crate) fn capacity_bytes(&self) -> usize {
        self.capacity() * self.ty().size_bytes()
    }

    /// Removes every element, keeping the storage.
    pub(crate) fn clear(&mut self) {
        each_buffer!(self, v => v.clear())
    }

    /// The address of the first element (of the capacity, for a buffer a
    /// kernel fills).
    #[doc(hidden)]
    pub fn as_ptr(&self) -> *const u8 {
        each_buffer!(self, v => v.as_ptr().cast::<u8>())
    }

    #[doc(hidden)]
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        each_buffer!(self, v => v.as_mut_ptr().cast::<u8>())
    }

    /// Its elements' bytes (`bool`s as 0 or 1), in the machine's order.
    #[doc(hidden)]
    pub fn bytes(&self) -> &[u8] {
        // SAFETY: every element type is plain data without padding, and
        // the slice covers exactly the vector's initialised elements.
        each_buffer!(self, v => unsafe {
            std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), std::mem::size_of_val(&v[..]))
        })
    }

    /// A buffer of `n` elements of type `ty` from their bytes (as
    /// `bytes` gives them), or `None` if the bytes are too few, a `bool`
    /// is neither 0 nor 1, or the memory cannot be had.
    #[doc(hidden)]
    pub fn from_bytes(ty: ScalarTy, n: usize, bytes: &[u8]) -> Option<Buffer> {
        let len = n.checked_mul(ty.size_bytes())?;
        let bytes = bytes.get(..len)?;
        if ty == ScalarTy::Bool && bytes.iter().any(|&b| b > 1) {
            return None;
        }
        let mut b = Buffer::uninit(ty, n)?;
        // SAFETY: the buffer has room for `n` elements, `len` bytes, which
        // are then all written with valid values (any bit pattern is one
        // for the numeric types; `bool`s were checked above).
        unsafe {
            std::ptr::copy_nonoverlapping(bytes.as_ptr(), b.as_mut_ptr(), len);
            b.set_len(n);
        }
        Some(b)
    }

    /// Appends the elements `range` of `other`, of the same type; `None`
    /// if the types differ or the range is out of bounds.
    pub fn extend_range(&mut self, other: &Buffer, range: std::ops::Range<usize>) -> Option<()> {
        macro_rules! pairs {
            ($($v:ident),*) => {
                match (self, other) {
                    $((Buffer::$v(a), Buffer::$v(b)) => a.extend_from_slice(b.get(range)?),)*
                    _ => return None,
                }
            };
        }
        pairs!(Bool, I8, I16, I32, I64, U8, U16, U32, U64, F16, F32, F64);
        Some(())
    }

    /// Declares the first `n` elements written.
    ///
    /// # Safety
    /// `n` is at most the capacity and a kernel has written every one of
    /// the first `n` elements with a valid value of the type (`bool`s as
    /// 0 or 1).
    #[doc(hidden)]
    pub unsafe fn set_len(&mut self, n: usize) {
        each_buffer!(self, v => v.set_len(n))
    }

    pub fn ty(&self) -> ScalarTy {
        match self {
            Buffer::Bool(_) => ScalarTy::Bool,
            Buffer::I8(_) => ScalarTy::I8,
            Buffer::I16(_) => ScalarTy::I16,
            Buffer::I32(_) => ScalarTy::I32,
            Buffer::I64(_) => ScalarTy::I64,
            Buffer::U8(_) => ScalarTy::U8,
            Buffer::U16(_) => ScalarTy::U16,
            Buffer::U32(_) => ScalarTy::U32,
            Buffer::U64(_) => ScalarTy::U64,
            Buffer::F16(_) => ScalarTy::F16,
            Buffer::F32(_) => ScalarTy::F32,
            Buffer::F64(_) => ScalarTy::F64,
        }
    }

    pub fn len(&self) -> usize {
        each_buffer!(self, v => v.len())
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, i: usize) -> ScalarVal {
        match self {
            Buffer::Bool(v) => ScalarVal::Bool(v[i]),
            Buffer::I8(v) => ScalarVal::I8(v[i]),
            Buffer::I16(v) => ScalarVal::I16(v[i]),
            Buffer::I32(v) => ScalarVal::I32(v[i]),
            Buffer::I64(v) => ScalarVal::I64(v[i]),
            Buffer::U8(v) => ScalarVal::U8(v[i]),
            Buffer::U16(v) => ScalarVal::U16(v[i]),
            Buffer::U32(v) => ScalarVal::U32(v[i]),
            Buffer::U64(v) => ScalarVal::U64(v[i]),
            Buffer::F16(v) => ScalarVal::F16(v[i]),
            Buffer::F32(v) => ScalarVal::F32(v[i]),
            Buffer::F64(v) => ScalarVal::F64(v[i]),
        }
    }

    /// Appends a scalar; the caller guarantees its type (the verifier does).
    pub fn push(&mut self, s: ScalarVal) {
        match (self, s) {
            (Buffer::Bool(v), ScalarVal::Bool(x)) => v.push(x),
            (Buffer::I8(v), ScalarVal::I8(x)) => v.push(x),
            (Buffer::I16(v), ScalarVal::I16(x)) => v.push(x),
            (Buffer::I32(v), ScalarVal::I32(x)) => v.push(x),
            (Buffer::I64(v), ScalarVal::I64(x)) => v.push(x),
            (Buffer::U8(v), ScalarVal::U8(x)) => v.push(x),
            (Buffer::U16(v), ScalarVal::U16(x)) => v.push(x),
            (Buffer::U32(v), ScalarVal::U32(x)) => v.push(x),
            (Buffer::U64(v), ScalarVal::U64(x)) => v.push(x),
            (Buffer::F16(v), ScalarVal::F16(x)) => v.push(x),
            (Buffer::F32(v), ScalarVal::F32(x)) => v.push(x),
            (Buffer::F64(v), ScalarVal::F64(x)) => v.push(x),
            (b, s) => unreachable!("pushing {s:?} into a buffer of {}", b.ty()),
        }
    }

    pub fn set(&mut self, i: usize, s: ScalarVal) {
        match (self, s) {
            (Buffer::Bool(v), ScalarVal::Bool(x)) => v[i] = x,
            (Buffer::I8(v), ScalarVal::I8(x)) => v[i] = x,
            (Buffer::I16(v), ScalarVal::I16(x)) => v[i] = x,
            (Buffer::I32(v), ScalarVal::I32(x)) => v[i] = x,
            (Buffer::I64(v), ScalarVal::I64(x)) => v[i] = x,
            (Buffer::U8(v), ScalarVal::U8(x)) => v[i] = x,
            (Buffer::U16(v), ScalarVal::U16(x)) => v[i] = x,
            (Buffer::U32(v), ScalarVal::U32(x)) => v[i] = x,
            (Buffer::U64(v), ScalarVal::U64(x)) => v[i] = x,
            (Buffer::F16(v), ScalarVal::F16(x)) => v[i] = x,
            (Buffer::F32(v), ScalarVal::F32(x)) => v[i] = x,
            (Buffer::F64(v), ScalarVal::F64(x)) => v[i] = x,
            (b, s) => unreachable!("storing {s:?} into a buffer of {}", b.ty()),
        }
    }
}

/// A whole array: its extents (outermost first), element type, and one
/// buffer per primitive leaf of the element type.
#[derive(Clone, Debug, PartialEq)]
pub struct ArrayData {
    shape: Vec<usize>,
    elt: EltTy,
    buffers: Vec<Buffer>,
}

/// A dropped array's large buffers are recycled (Note [Recycled buffers]).
impl Drop for ArrayData {
    fn drop(&mut self) {
        for b in self.buffers.drain(..) {
            super::pool::give(b);
        }
    }
}

impl ArrayData {
    /// Builds an array from its buffers. Returns `None` when the buffers do
    /// not match the element type or the shape's size.
    pub fn from_buffers(shape: Vec<usize>, elt: EltTy, buffers: Vec<Buffer>) -> Option<ArrayData> {
        let size = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        let leaves = elt.leaves();
        if leaves.len() != buffers.len()
            || leaves.iter().zip(&buffers).any(|(t, b)| b.ty() != *t || b.len() != size)
        {
            return None;
        }
        Some(ArrayData { shape, elt, buffers })
    }

    /// An array of `capacity` elements, pushed one at a time with
    /// [`ArrayBuilder::push`]; `None` if the memory cannot be reserved.
    pub fn builder(elt: &EltTy, capacity: usize) -> Option<ArrayBuilder> {
        let buffers = elt
            .leaves()
            .into_iter()
            .map(|t| Buffer::try_with_capacity(t, capacity))
            .collect::<Option<_>>()?;
        Some(ArrayBuilder { elt: elt.clone(), buffers, leaves: Vec::new() })
    }

    pub fn shape(&self) -> &[usize] {
        &self.shape
    }

    pub fn rank(&self) -> usize {
        self.shape.len()
    }

    pub fn elt_ty(&self) -> &EltTy {
        &self.elt
    }

    pub fn ty(&self) -> ArrayTy {
        ArrayTy { rank: self.shape.len(), elt: self.elt.clone() }
    }

    pub fn buffers(&self) -> &[Buffer] {
        &self.buffers
    }

    pub fn into_buffers(mut self) -> Vec<Buffer> {
        std::mem::take(&mut self.buffers)
    }

    /// The arrays of the components of its (tuple) elements, of its shape:
    /// its buffers, split by the components' leaves (struct-of-arrays
    /// storage makes this a move, Note [Multi-output kernels] in
    /// `opt/cluster`). `None` unless the elements are tuples.
    pub fn unzip(self: Arc<Self>) -> Option<Vec<ArrayData>> {
        let EltTy::Tuple(parts) = self.elt.clone() else { return None };
        // a fresh kernel result has no other owner: its buffers move
        let (shape, buffers) = match Arc::try_unwrap(self) {
            Ok(d) => (d.shape.clone(), d.into_buffers()),
            Err(shared) => (shared.shape.clone(), shared.buffers.clone()),
        };
        let mut out = Vec::with_capacity(parts.len());
        let mut rest = buffers.into_iter();
        for p in parts {
            let bufs: Vec<Buffer> = rest.by_ref().take(p.leaves().len()).collect();
            out.push(ArrayData::from_buffers(shape.clone(), p, bufs)?);
        }
        Some(out)
    }

    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The element at a linear (row-major) position; panics when out of
    /// range, so callers check bounds first.
    pub fn get(&self, i: usize) -> Val {
        let mut leaves = self.buffers.iter().map(|b| b.get(i));
        Val::from_leaves(&self.elt, &mut leaves)
    }

    /// The elements at the row-major positions `range` of each piece, one
    /// piece after another, as an array of `shape` (whose size must be
    /// their total); `None` if a piece's element type is not `elt`, a
    /// range is out of bounds, the sizes disagree or the memory cannot be
    /// had.
    pub fn concat(
        elt: &EltTy,
        pieces: &[(&ArrayData, std::ops::Range<usize>)],
        shape: Vec<usize>,
    ) -> Option<ArrayData> {
        let total: usize = pieces.iter().map(|(_, r)| r.len()).sum();
        let size = shape.iter().try_fold(1usize, |a, &d| a.checked_mul(d))?;
        if size != total || pieces.iter().any(|(p, _)| p.elt != *elt) {
            return None;
        }
        let mut buffers: Vec<Buffer> =
            elt.leaves().into_iter().map(|t| Buffer::uninit(t, total)).collect::<Option<_>>()?;
        for (p, r) in pieces {
            for (b, src) in buffers.iter_mut().zip(&p.buffers) {
                b.extend_range(src, r.clone())?;
            }
        }
        ArrayData::from_buffers(shape, elt.clone(), buffers)
    }

    /// The same data under another shape of the same size.
    pub fn reshaped(&self, shape: Vec<usize>) -> ArrayData {
        debug_assert_eq!(shape.iter().product::<usize>(), self.len());
        ArrayData { shape, elt: self.elt.clone(), buffers: self.buffers.clone() }
    }
}

/// Accumulates elements of one type into struct-of-arrays buffers.
pub struct ArrayBuilder {
    elt: EltTy,
    buffers: Vec<Buffer>,
    leaves: Vec<ScalarVal>,
}

impl ArrayBuilder {
    pub fn push(&mut self, v: &Val) {
        self.leaves.clear();
        v.push_leaves(&mut self.leaves);
        debug_assert_eq!(self.leaves.len(), self.buffers.len());
        for (b, s) in self.buffers.iter_mut().zip(&self.leaves) {
            b.push(*s);
        }
    }

    /// Finishes the array; `None` if the number of elements pushed is not
    /// the shape's size.
    pub fn finish(self, shape: Vec<usize>) -> Option<ArrayData> {
        ArrayData::from_buffers(shape, self.elt, self.buffers)
    }
}

/// The value of an array computation: an array or a tuple of them.
#[derive(Clone, Debug)]
pub enum ArraysVal {
    Array(Arc<ArrayData>),
    Tuple(Vec<ArraysVal>),
}

impl ArraysVal {
    pub fn array(&self) -> Option<&Arc<ArrayData>> {
        match self {
            ArraysVal::Array(a) => Some(a),
            ArraysVal::Tuple(_) => None,
        }
    }

    pub fn ty(&self) -> ArraysTy {
        match self {
            ArraysVal::Array(a) => ArraysTy::Array(a.ty()),
            ArraysVal::Tuple(ts) => ArraysTy::Tuple(ts.iter().map(|t| t.ty()).collect()),
        }
    }
}

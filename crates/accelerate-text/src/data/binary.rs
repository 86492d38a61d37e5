//! The binary data format (Futhark's `binary-data-format`): the byte `b`,
//! the format version (2), the rank as one byte, the element type as four
//! ASCII bytes (` i32`, `  u8`, `bool`, ...: the name right-aligned), each
//! extent as a little-endian `u64`, then the elements in row-major order,
//! little-endian, a `bool` as the byte 0 or 1.
//!
//! The header's claimed size is checked against the bytes that remain
//! before the elements are allocated, so a header that claims 2^60
//! elements followed by ten bytes is an error, not an allocation.

use super::{Cursor, DataError, Value};
use accelerate_base::array::{Buffer, ScalarTy};

const VERSION: u8 = 2;

/// The four bytes that name an element type.
fn type_tag(ty: ScalarTy) -> [u8; 4] {
    let mut tag = [b' '; 4];
    let name = ty.name().as_bytes();
    tag[4 - name.len()..].copy_from_slice(name);
    tag
}

/// Reads one binary value at the cursor, which is at its `b`.
pub(super) fn read(c: &mut Cursor) -> Result<Value, DataError> {
    let start = c.pos;
    c.pos += 1;
    let version = take(c, 1, "the format version")?[0];
    if version != VERSION {
        return Err(DataError::new(
            c.pos - 1,
            format!("binary data of format version {version}; only version {VERSION} is known"),
        ));
    }
    let rank = usize::from(take(c, 1, "the rank")?[0]);
    let tag_at = c.pos;
    let tag = take(c, 4, "the element type")?;
    let Some(ty) = ScalarTy::ALL.into_iter().find(|&t| type_tag(t) == tag) else {
        return Err(DataError::new(
            tag_at,
            format!("unknown element type {:?} in binary data", String::from_utf8_lossy(tag)),
        ));
    };
    let shape = take(c, rank * 8, "the shape")?
        .chunks_exact(8)
        .map(|d| u64::from_le_bytes(d.try_into().unwrap_or_default()))
        .map(|d| {
            usize::try_from(d).map_err(|_| DataError::new(start, format!("the extent {d} is too large")))
        })
        .collect::<Result<Vec<usize>, _>>()?;
    let size =
        if shape.contains(&0) { Some(0) } else { shape.iter().try_fold(1usize, |n, &d| n.checked_mul(d)) };
    let bytes = size.and_then(|n| n.checked_mul(ty.size_bytes()));
    let remaining = c.input.len() - c.pos;
    let (Some(n), Some(bytes)) = (size, bytes) else {
        return Err(DataError::new(start, "the size of this binary array overflows"));
    };
    if bytes > remaining {
        return Err(DataError::new(
            start,
            format!(
                "the binary header claims {n} elements of {ty} ({bytes} bytes), but only {remaining} bytes follow"
            ),
        ));
    }
    let elements_at = c.pos;
    let elements = decode(ty, take(c, bytes, "the elements")?, elements_at)?;
    Value::from_buffer(shape, elements)
        .ok_or_else(|| DataError::new(start, "the rank of this array is too high"))
}

/// The next `n` bytes, or an error naming what they were to hold.
fn take<'a>(c: &mut Cursor<'a>, n: usize, what: &str) -> Result<&'a [u8], DataError> {
    match c.input.get(c.pos..c.pos.saturating_add(n)) {
        Some(bytes) => {
            c.pos += n;
            Ok(bytes)
        }
        None => Err(c.error(format!("the input ends inside a binary value, in {what}"))),
    }
}

/// The elements of type `ty` of these bytes (a whole number of them).
fn decode(ty: ScalarTy, bytes: &[u8], at: usize) -> Result<Buffer, DataError> {
    macro_rules! le {
        ($t:ty) => {
            bytes
                .chunks_exact(std::mem::size_of::<$t>())
                .map(|b| <$t>::from_le_bytes(b.try_into().unwrap_or_default()))
                .collect()
        };
    }
    Ok(match ty {
        ScalarTy::Bool => {
            if let Some(i) = bytes.iter().position(|&b| b > 1) {
                return Err(DataError::new(
                    at + i,
                    format!("the byte {} is not a bool (0 or 1) in binary data", bytes[i]),
                ));
            }
            Buffer::Bool(bytes.iter().map(|&b| b == 1).collect())
        }
        ScalarTy::I8 => Buffer::I8(le!(i8)),
        ScalarTy::I16 => Buffer::I16(le!(i16)),
        ScalarTy::I32 => Buffer::I32(le!(i32)),
        ScalarTy::I64 => Buffer::I64(le!(i64)),
        ScalarTy::U8 => Buffer::U8(bytes.into()),
        ScalarTy::U16 => Buffer::U16(le!(u16)),
        ScalarTy::U32 => Buffer::U32(le!(u32)),
        ScalarTy::U64 => Buffer::U64(le!(u64)),
        ScalarTy::F16 => Buffer::F16(le!(u16)),
        ScalarTy::F32 => Buffer::F32(le!(f32)),
        ScalarTy::F64 => Buffer::F64(le!(f64)),
    })
}

/// The value in the binary format.
pub fn write_binary(v: &Value) -> Vec<u8> {
    let ty = v.scalar_ty();
    let mut out = Vec::with_capacity(7 + 8 * v.rank() + v.len() * ty.size_bytes());
    out.extend_from_slice(&[b'b', VERSION, v.rank() as u8]);
    out.extend_from_slice(&type_tag(ty));
    for &d in v.shape() {
        out.extend_from_slice(&(d as u64).to_le_bytes());
    }
    macro_rules! le {
        ($xs:expr) => {
            $xs.iter().for_each(|x| out.extend_from_slice(&x.to_le_bytes()))
        };
    }
    match v.buffer() {
        Buffer::Bool(xs) => out.extend(xs.iter().map(|&b| u8::from(b))),
        Buffer::I8(xs) => le!(xs),
        Buffer::I16(xs) => le!(xs),
        Buffer::I32(xs) => le!(xs),
        Buffer::I64(xs) => le!(xs),
        Buffer::U8(xs) => out.extend_from_slice(xs),
        Buffer::U16(xs) => le!(xs),
        Buffer::U32(xs) => le!(xs),
        Buffer::U64(xs) => le!(xs),
        Buffer::F16(xs) => le!(xs),
        Buffer::F32(xs) => le!(xs),
        Buffer::F64(xs) => le!(xs),
    }
    out
}

//! The textual data format: reading one value, and printing one.
//!
//! A value is a primitive literal, an array literal `[v, v, ...]` (a
//! trailing comma allowed) of values of one type and shape, or
//! `empty(<dims><type>)` with at least one extent 0. Literals:
//! - `true`, `false`;
//! - integers, decimal (`12`, `1_000`), hexadecimal (`0xff`) or binary
//!   (`0b101`), signed by `-` or `+`, with an optional suffix `i8` ...
//!   `u64` (none: `i32`), or `f16`, `f32`, `f64` on a decimal one (`2f32`);
//! - decimals with a fraction, an exponent or both (`1.5`, `2e3`,
//!   `3.1_4e-2`), with an optional suffix `f16`, `f32`, `f64` (none: `f64`);
//! - `f32.nan`, `f32.inf`, `-f32.inf`, and the same for `f16` and `f64`.
//!
//! Note [The type of an array literal]
//! `futhark-test(1)` (VALUES) gives an array the type of its first
//! primitive element, so that only that element needs a suffix:
//! `[1i64, 2, 3]` is `[3]i64` and `[1.5f32, 2, 3]` is `[3]f32`. A later
//! element with a suffix must agree with it (`[1, 2i64]` is an error: the
//! first element made the array `i32`); an unsuffixed decimal fits only a
//! float type.
//!
//! Printing follows `futhark-data`: each element with its type's suffix
//! (`[1i32, 2i32]`, `3.5f32`, `true`), an array with a zero extent as
//! `empty([0][3]i32)`, floats in the fewest digits that read back to the
//! same bits and the non-finite ones as `f32.nan`, `f32.inf`, `-f32.inf`.
//! (A NaN's sign and payload are not kept by the text; the binary format
//! keeps them.) Rows are separated by `, ` on one line.

use super::{buffer_of, shape_text, Cursor, DataError, Value, MAX_RANK};
use accelerate_base::array::{Buffer, ScalarTy, ScalarVal};
use half::f16;
use std::fmt::Write;
use std::ops::Range;

/// Reads one textual value at the cursor (which is not at a space).
pub(super) fn read(c: &mut Cursor) -> Result<Value, DataError> {
    let mut scratch = String::new();
    if c.peek() == Some(b'[') {
        return read_array(c, &mut scratch);
    }
    if c.rest().starts_with(b"empty") {
        let start = c.pos;
        let (ty, shape) = read_empty(c)?;
        return Value::from_buffer(shape, buffer_of(ty))
            .ok_or_else(|| DataError::new(start, "the extents of this empty array overflow"));
    }
    let lit = read_literal(c)?;
    let v = lit.scalar(lit.default_ty(), c.input, &mut scratch)?;
    Ok(Value::scalar(v))
}

/// The state of an array literal being read: the brackets open, the
/// extent found at each depth, the elements so far.
struct ArrayReader {
    /// The offset of each open `[` and the number of its elements so far.
    open: Vec<(usize, usize)>,
    /// The rank, known at the first primitive element or `empty`.
    rank: Option<usize>,
    /// The extent at each depth, known when its first row closes.
    shape: Vec<Option<usize>>,
    /// The element type, known at the first primitive element or `empty`
    /// (Note [The type of an array literal]).
    ty: Option<ScalarTy>,
    elements: Option<Buffer>,
}

fn read_array(c: &mut Cursor, scratch: &mut String) -> Result<Value, DataError> {
    let start = c.pos;
    let mut a =
        ArrayReader { open: vec![(start, 0)], rank: None, shape: Vec::new(), ty: None, elements: None };
    c.pos += 1;
    let mut after_element = false;
    while let Some(&(row_start, n)) = a.open.last() {
        c.skip_space();
        let depth = a.open.len();
        match c.peek() {
            None => return Err(DataError::new(row_start, "the input ends inside this array")),
            Some(b']') => {
                c.pos += 1;
                a.open.pop();
                if n == 0 {
                    return Err(DataError::new(
                        row_start,
                        "an empty array `[]` has no element type; write `empty([0]t)`",
                    ));
                }
                a.close_row(depth - 1, n, row_start)?;
                if let Some(parent) = a.open.last_mut() {
                    parent.1 += 1;
                    after_element = true;
                }
            }
            Some(b',') if after_element => {
                c.pos += 1;
                after_element = false;
            }
            Some(b) if after_element => {
                return Err(
                    c.error(format!("expected `,` or `]` after an array element, found {}", show_byte(b)))
                )
            }
            Some(b',') => return Err(c.error("expected an array element, found `,`")),
            Some(b'[') => {
                if a.rank.is_some_and(|r| depth >= r) {
                    return Err(c.error(format!(
                        "ragged array: an array here, where earlier elements at depth {depth} are {}",
                        a.ty.map_or("scalars".to_string(), |t| format!("scalars of type {t}"))
                    )));
                }
                if depth >= MAX_RANK {
                    return Err(c.error(format!("an array of rank above {MAX_RANK}")));
                }
                a.open.push((c.pos, 0));
                c.pos += 1;
            }
            Some(_) if c.rest().starts_with(b"empty") => {
                let at = c.pos;
                let (ty, dims) = read_empty(c)?;
                a.element_type(ty, at)?;
                a.element_shape(depth, &dims, at)?;
                a.count_element();
                after_element = true;
            }
            Some(_) => {
                let lit = read_literal(c)?;
                a.element_shape(depth, &[], lit.word.start)?;
                let ty = *a.ty.get_or_insert(lit.default_ty());
                let v = lit.scalar(ty, c.input, scratch)?;
                a.elements.get_or_insert_with(|| buffer_of(ty)).push(v);
                a.count_element();
                after_element = true;
            }
        }
    }
    let shape = a.shape.iter().map(|d| d.unwrap_or(0)).collect();
    // an element was read (an empty row is an error), so the type is known
    let ty = a.ty.unwrap_or(ScalarTy::I32);
    let elements = a.elements.unwrap_or_else(|| buffer_of(ty));
    Value::from_buffer(shape, elements)
        .ok_or_else(|| DataError::new(start, "the extents of this array overflow"))
}

impl ArrayReader {
    fn count_element(&mut self) {
        if let Some(row) = self.open.last_mut() {
            row.1 += 1;
        }
    }

    /// A row of `n` elements closed at `depth` (0 outermost).
    fn close_row(&mut self, depth: usize, n: usize, at: usize) -> Result<(), DataError> {
        match self.shape.get_mut(depth) {
            Some(extent @ None) => *extent = Some(n),
            Some(Some(m)) if *m != n => {
                return Err(DataError::new(
                    at,
                    format!(
                        "ragged array: this row has {n} elements, an earlier row at depth {depth} has {m}"
                    ),
                ))
            }
            _ => {}
        }
        Ok(())
    }

    /// An element found inside `depth` brackets, itself of the extents
    /// `dims` (none for a primitive, those of `empty(...)` otherwise).
    fn element_shape(&mut self, depth: usize, dims: &[usize], at: usize) -> Result<(), DataError> {
        let rank = depth + dims.len();
        if rank > MAX_RANK {
            return Err(DataError::new(at, format!("an array of rank above {MAX_RANK}")));
        }
        match self.rank {
            None => {
                self.rank = Some(rank);
                self.shape = vec![None; rank];
            }
            Some(r) if r != rank => {
                return Err(DataError::new(
                    at,
                    format!(
                    "ragged array: an element of rank {rank} here, where earlier elements make it rank {r}"
                ),
                ))
            }
            Some(_) => {}
        }
        for (i, &d) in dims.iter().enumerate() {
            self.close_row(depth + i, d, at)?;
        }
        Ok(())
    }

    fn element_type(&mut self, ty: ScalarTy, at: usize) -> Result<(), DataError> {
        match self.ty {
            None => self.ty = Some(ty),
            Some(t) if t != ty => {
                return Err(DataError::new(at, format!("an array of {ty} inside an array of {t}")));
            }
            Some(_) => {}
        }
        Ok(())
    }
}

/// Reads `empty(<dims><type>)`: its element type and extents, at least
/// one of them 0.
fn read_empty(c: &mut Cursor) -> Result<(ScalarTy, Vec<usize>), DataError> {
    let start = c.pos;
    c.pos += "empty".len();
    c.skip_space();
    if c.peek() != Some(b'(') {
        return Err(c.error("expected `(` after `empty`"));
    }
    c.pos += 1;
    let mut dims = Vec::new();
    loop {
        c.skip_space();
        if c.peek() != Some(b'[') {
            break;
        }
        if dims.len() == MAX_RANK {
            return Err(c.error(format!("an array of rank above {MAX_RANK}")));
        }
        c.pos += 1;
        c.skip_space();
        let digits_at = c.pos;
        let digits = c.rest().iter().take_while(|b| b.is_ascii_digit()).count();
        if digits == 0 {
            return Err(c.error("expected an extent (a natural number) in `empty(...)`"));
        }
        let extent = std::str::from_utf8(&c.rest()[..digits]).ok().and_then(|s| s.parse::<usize>().ok());
        let Some(extent) = extent else {
            return Err(DataError::new(digits_at, "this extent is too large"));
        };
        c.pos += digits;
        c.skip_space();
        if c.peek() != Some(b']') {
            return Err(c.error("expected `]` after an extent"));
        }
        c.pos += 1;
        dims.push(extent);
    }
    let ty_at = c.pos;
    let ty_end = word_end(c.input, c.pos);
    let ty = c.input.get(c.pos..ty_end).and_then(type_named);
    let Some(ty) = ty else {
        return Err(DataError::new(ty_at, "expected a primitive type in `empty(...)`"));
    };
    c.pos = ty_end;
    c.skip_space();
    if c.peek() != Some(b')') {
        return Err(c.error("expected `)` to close `empty(`"));
    }
    c.pos += 1;
    if !dims.contains(&0) {
        return Err(DataError::new(start, "`empty(...)` needs an extent 0"));
    }
    Ok((ty, dims))
}

/// The type of this name (`i32`, `bool`, ...).
fn type_named(name: &[u8]) -> Option<ScalarTy> {
    ScalarTy::ALL.into_iter().find(|t| t.name().as_bytes() == name)
}

/// The end of the word that starts at `start`: a literal ends at a space,
/// a bracket, a parenthesis, a comma or a comment.
fn word_end(input: &[u8], start: usize) -> usize {
    let mut i = start;
    while let Some(&b) = input.get(i) {
        let comment = b == b'-' && input.get(i + 1) == Some(&b'-');
        if b.is_ascii_whitespace() || b",[]()".contains(&b) || comment {
            break;
        }
        i += 1;
    }
    i
}

fn show_byte(b: u8) -> String {
    if b.is_ascii_graphic() {
        format!("`{}`", b as char)
    } else {
        format!("byte 0x{b:02x}")
    }
}

/// A primitive literal as written, before it is given its type.
struct Literal {
    number: Number,
    suffix: Option<ScalarTy>,
    /// The whole literal.
    word: Range<usize>,
    /// Its sign and digits, without the suffix.
    digits: Range<usize>,
}

#[derive(Clone, Copy)]
enum Number {
    Bool(bool),
    /// `magnitude` is `None` when it does not fit 128 bits.
    Int {
        negative: bool,
        magnitude: Option<u128>,
        radix: u32,
    },
    Decimal,
    Inf {
        negative: bool,
    },
    Nan,
}

fn read_literal(c: &mut Cursor) -> Result<Literal, DataError> {
    let start = c.pos;
    let end = word_end(c.input, start);
    if end == start {
        let found = c.peek().map_or("the end of the input".to_string(), show_byte);
        return Err(c.error(format!("expected a value, found {found}")));
    }
    c.pos = end;
    parse_literal(c.input, start..end)
}

fn parse_literal(input: &[u8], word: Range<usize>) -> Result<Literal, DataError> {
    let text = &input[word.clone()];
    let not_a_value =
        || DataError::new(word.start, format!("`{}` is not a value", String::from_utf8_lossy(text)));
    let lit = |number, suffix, digits| Ok(Literal { number, suffix, word: word.clone(), digits });
    match text {
        b"true" => return lit(Number::Bool(true), Some(ScalarTy::Bool), word.clone()),
        b"false" => return lit(Number::Bool(false), Some(ScalarTy::Bool), word.clone()),
        _ => {}
    }
    let (signed, negative) = match text.first() {
        Some(b'-') => (1, true),
        Some(b'+') => (1, false),
        _ => (0, false),
    };
    let body = &text[signed..];
    for ty in [ScalarTy::F16, ScalarTy::F32, ScalarTy::F64] {
        let name = ty.name().as_bytes();
        if body.len() == name.len() + 4 && body.starts_with(name) {
            match &body[name.len()..] {
                b".inf" if text[0] != b'+' => return lit(Number::Inf { negative }, Some(ty), word.clone()),
                b".nan" if signed == 0 => return lit(Number::Nan, Some(ty), word.clone()),
                _ => return Err(not_a_value()),
            }
        }
    }
    let (radix, prefix) = match body {
        [b'0', b'x', ..] => (16, 2),
        [b'0', b'b', ..] => (2, 2),
        _ => (10, 0),
    };
    let mut i = prefix;
    let (n, magnitude) = digits(&body[i..], radix).ok_or_else(not_a_value)?;
    i += n;
    let mut decimal = false;
    if radix == 10 {
        if body.get(i) == Some(&b'.') {
            let (n, _) = digits(&body[i + 1..], 10).ok_or_else(not_a_value)?;
            i += 1 + n;
            decimal = true;
        }
        if matches!(body.get(i), Some(b'e' | b'E')) {
            let sign = usize::from(matches!(body.get(i + 1), Some(b'+' | b'-')));
            let (n, _) = digits(&body[i + 1 + sign..], 10).ok_or_else(not_a_value)?;
            i += 1 + sign + n;
            decimal = true;
        }
    }
    let digits_end = word.start + signed + i;
    let suffix = match &body[i..] {
        [] => None,
        name => Some(type_named(name).filter(|t| *t != ScalarTy::Bool).ok_or_else(not_a_value)?),
    };
    let number = match suffix {
        Some(t) if t.is_float() && radix != 10 => {
            return Err(DataError::new(
                word.start,
                "a hexadecimal or binary literal cannot have a float type",
            ));
        }
        Some(t) if decimal && !t.is_float() => {
            return Err(DataError::new(word.start, format!("a decimal literal cannot have the type {t}")));
        }
        _ if decimal => Number::Decimal,
        _ => Number::Int { negative, magnitude, radix },
    };
    lit(number, suffix, word.start..digits_end)
}

/// The length and value of the digits of a radix at the start, `_`
/// allowed after the first; `None` if it is not a digit. The value is
/// `None` when it does not fit 128 bits.
fn digits(s: &[u8], radix: u32) -> Option<(usize, Option<u128>)> {
    let first = char::from(*s.first()?).to_digit(radix)?;
    let mut value = Some(u128::from(first));
    let mut n = 1;
    for &b in &s[1..] {
        if b == b'_' {
            n += 1;
            continue;
        }
        let Some(d) = char::from(b).to_digit(radix) else { break };
        value = value.and_then(|v| v.checked_mul(u128::from(radix))?.checked_add(u128::from(d)));
        n += 1;
    }
    Some((n, value))
}

impl Literal {
    /// Its type when nothing else decides it: the suffix, or `i32` for an
    /// integer and `f64` for a decimal.
    fn default_ty(&self) -> ScalarTy {
        match (self.suffix, self.number) {
            (Some(t), _) => t,
            (None, Number::Decimal) => ScalarTy::F64,
            (None, _) => ScalarTy::I32,
        }
    }

    /// Its value as an element of type `ty` (Note [The type of an array
    /// literal]).
    fn scalar(&self, ty: ScalarTy, input: &[u8], scratch: &mut String) -> Result<ScalarVal, DataError> {
        let written = String::from_utf8_lossy(&input[self.word.clone()]);
        let error = |message: String| Err(DataError::new(self.word.start, message));
        if let Some(s) = self.suffix.filter(|s| *s != ty) {
            return error(format!("`{written}` is of type {s}, but the array's elements are {ty}"));
        }
        let out_of_range = || error(format!("`{written}` is out of the range of {ty}"));
        match self.number {
            Number::Bool(b) if ty == ScalarTy::Bool => Ok(ScalarVal::Bool(b)),
            Number::Int { negative, magnitude, .. } if ty.is_integral() => {
                let v = magnitude.and_then(|m| i128::try_from(m).ok()).map(|m| if negative { -m } else { m });
                match v.and_then(|v| int_scalar(v, ty)) {
                    Some(s) => Ok(s),
                    None => out_of_range(),
                }
            }
            Number::Int { radix: 10, .. } | Number::Decimal if ty.is_float() => {
                scratch.clear();
                scratch.extend(
                    input[self.digits.clone()].iter().filter(|&&b| b != b'_').map(|&b| char::from(b)),
                );
                match float_scalar(scratch, ty) {
                    Some(s) => Ok(s),
                    None => out_of_range(),
                }
            }
            Number::Int { negative, magnitude: Some(m), .. } if ty.is_float() => {
                let x = if negative { -(m as f64) } else { m as f64 };
                match float_scalar(&format!("{x:e}"), ty) {
                    Some(s) => Ok(s),
                    None => out_of_range(),
                }
            }
            Number::Int { magnitude: None, .. } if ty.is_float() => out_of_range(),
            Number::Inf { negative } if ty.is_float() => {
                Ok(float_value(ty, if negative { f64::NEG_INFINITY } else { f64::INFINITY }))
            }
            Number::Nan if ty.is_float() => Ok(float_value(ty, f64::NAN)),
            Number::Decimal => error(format!("the decimal `{written}` in an array of {ty}")),
            _ => error(format!("`{written}` in an array of {ty}")),
        }
    }
}

/// An integer as a scalar of an integer type, if it fits; a negative one
/// fits an unsigned type in two's complement down to the least value of
/// the signed type of its width (`-1u8` is 255).
fn int_scalar(v: i128, ty: ScalarTy) -> Option<ScalarVal> {
    Some(match ty {
        ScalarTy::I8 => ScalarVal::I8(v.try_into().ok()?),
        ScalarTy::I16 => ScalarVal::I16(v.try_into().ok()?),
        ScalarTy::I32 => ScalarVal::I32(v.try_into().ok()?),
        ScalarTy::I64 => ScalarVal::I64(v.try_into().ok()?),
        ScalarTy::U8 => ScalarVal::U8(v.try_into().or_else(|_| i8::try_from(v).map(|x| x as u8)).ok()?),
        ScalarTy::U16 => ScalarVal::U16(v.try_into().or_else(|_| i16::try_from(v).map(|x| x as u16)).ok()?),
        ScalarTy::U32 => ScalarVal::U32(v.try_into().or_else(|_| i32::try_from(v).map(|x| x as u32)).ok()?),
        ScalarTy::U64 => ScalarVal::U64(v.try_into().or_else(|_| i64::try_from(v).map(|x| x as u64)).ok()?),
        _ => return None,
    })
}

/// A decimal (digits, `.`, exponent, sign; no `_`) as a scalar of a float
/// type, rounded to nearest; `None` if it is too large for the type.
/// `f16` is rounded through `f64`, as Futhark rounds every float.
fn float_scalar(decimal: &str, ty: ScalarTy) -> Option<ScalarVal> {
    let v = match ty {
        ScalarTy::F32 => ScalarVal::F32(decimal.parse().ok()?),
        ScalarTy::F64 => ScalarVal::F64(decimal.parse().ok()?),
        ScalarTy::F16 => ScalarVal::F16(f16::from_f64(decimal.parse().ok()?).to_bits()),
        _ => return None,
    };
    let finite = match v {
        ScalarVal::F16(b) => f16::from_bits(b).is_finite(),
        ScalarVal::F32(x) => x.is_finite(),
        ScalarVal::F64(x) => x.is_finite(),
        _ => false,
    };
    finite.then_some(v)
}

fn float_value(ty: ScalarTy, x: f64) -> ScalarVal {
    match ty {
        ScalarTy::F16 => ScalarVal::F16(f16::from_f64(x).to_bits()),
        ScalarTy::F32 => ScalarVal::F32(x as f32),
        _ => ScalarVal::F64(x),
    }
}

/// The value as Futhark prints it: `[[1i32, 2i32], [3i32, 4i32]]`,
/// `3.5f32`, `empty([0][3]i32)`.
pub fn write_text(v: &Value) -> String {
    let mut out = String::new();
    if v.rank() > 0 && v.is_empty() {
        let _ = write!(out, "empty({}{})", shape_text(v.shape()), v.scalar_ty());
    } else {
        write_rows(&mut out, v.buffer(), v.shape(), 0);
    }
    out
}

/// Writes the array of `shape` whose first element is at `offset`.
fn write_rows(out: &mut String, buffer: &Buffer, shape: &[usize], offset: usize) {
    let Some((&n, inner)) = shape.split_first() else {
        out.push_str(&write_scalar(buffer.get(offset)));
        return;
    };
    let stride: usize = inner.iter().product();
    out.push('[');
    for i in 0..n {
        if i > 0 {
            out.push_str(", ");
        }
        write_rows(out, buffer, inner, offset + i * stride);
    }
    out.push(']');
}

/// One primitive value as Futhark prints it, with its type's suffix:
/// `1i32`, `3.5f32`, `-f64.inf`, `true`.
pub fn write_scalar(s: ScalarVal) -> String {
    match s {
        ScalarVal::Bool(b) => b.to_string(),
        ScalarVal::F16(bits) => float_text(f16::from_bits(bits).to_f64(), "f16", shortest_f16(bits)),
        ScalarVal::F32(x) => float_text(x.into(), "f32", format!("{x:?}")),
        ScalarVal::F64(x) => float_text(x, "f64", format!("{x:?}")),
        _ => format!("{s}{}", s.ty()),
    }
}

fn float_text(x: f64, suffix: &str, digits: String) -> String {
    if x.is_nan() {
        format!("{suffix}.nan")
    } else if x.is_infinite() {
        format!("{}{suffix}.inf", if x < 0.0 { "-" } else { "" })
    } else {
        format!("{digits}{suffix}")
    }
}

/// The fewest significant digits that read back (through `f64`, as
/// `float_scalar` reads an `f16`) to these bits.
fn shortest_f16(bits: u16) -> String {
    let x = f16::from_bits(bits).to_f64();
    for precision in 0..17 {
        let candidate: f64 = format!("{x:.precision$e}").parse().unwrap_or(x);
        if f16::from_f64(candidate).to_bits() == bits {
            return format!("{candidate:?}");
        }
    }
    format!("{x:?}")
}

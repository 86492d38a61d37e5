use super::*;
use half::f16;

fn read(s: &str) -> Vec<Value> {
    read_values(s.as_bytes()).unwrap_or_else(|e| panic!("reading {s:?}: {e}"))
}

fn read1(s: &str) -> Value {
    let vs = read(s);
    assert_eq!(vs.len(), 1, "{s:?}");
    vs.into_iter().next().unwrap()
}

fn read_err(s: &[u8]) -> DataError {
    match read_values(s) {
        Ok(vs) => panic!(
            "{:?} read as {:?}",
            String::from_utf8_lossy(s),
            vs.iter().map(write_text).collect::<Vec<_>>()
        ),
        Err(e) => e,
    }
}

/// A small deterministic generator (xorshift64*), for the fuzz-style
/// tests and the random arrays.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// Both the same type and shape, and the same elements, a NaN equal to
/// any NaN (the text keeps no NaN's sign or payload).
fn same_value(a: &Value, b: &Value) -> bool {
    let nan = |s: ScalarVal| match s {
        ScalarVal::F16(x) => f16::from_bits(x).is_nan(),
        ScalarVal::F32(x) => x.is_nan(),
        ScalarVal::F64(x) => x.is_nan(),
        _ => false,
    };
    a.scalar_ty() == b.scalar_ty()
        && a.shape() == b.shape()
        && (0..a.len()).all(|i| {
            let (x, y) = (a.get(i).unwrap(), b.get(i).unwrap());
            x.same_bits(y) || (nan(x) && nan(y))
        })
}

fn random_scalar(ty: ScalarTy, rng: &mut Rng) -> ScalarVal {
    let r = rng.next();
    match ty {
        ScalarTy::Bool => ScalarVal::Bool(r & 1 == 1),
        ScalarTy::I8 => ScalarVal::I8(r as i8),
        ScalarTy::I16 => ScalarVal::I16(r as i16),
        ScalarTy::I32 => ScalarVal::I32(r as i32),
        ScalarTy::I64 => ScalarVal::I64(r as i64),
        ScalarTy::U8 => ScalarVal::U8(r as u8),
        ScalarTy::U16 => ScalarVal::U16(r as u16),
        ScalarTy::U32 => ScalarVal::U32(r as u32),
        ScalarTy::U64 => ScalarVal::U64(r),
        // any bit pattern: normals, subnormals, zeros, infinities, NaNs
        ScalarTy::F16 => ScalarVal::F16(r as u16),
        ScalarTy::F32 => ScalarVal::F32(f32::from_bits(r as u32)),
        ScalarTy::F64 => ScalarVal::F64(f64::from_bits(r)),
    }
}

fn random_value(ty: ScalarTy, shape: &[usize], rng: &mut Rng) -> Value {
    let mut b = buffer_of(ty);
    for _ in 0..shape.iter().product::<usize>() {
        b.push(random_scalar(ty, rng));
    }
    Value::from_buffer(shape.to_vec(), b).unwrap()
}

fn empty(ty: ScalarTy, shape: &[usize]) -> Value {
    Value::from_buffer(shape.to_vec(), buffer_of(ty)).unwrap()
}

#[test]
fn every_type_and_rank_0_to_3_round_trips_through_text_and_binary() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    for ty in ScalarTy::ALL {
        for shape in [&[][..], &[1], &[4], &[2, 3], &[3, 1, 2], &[2, 2, 2]] {
            let v = random_value(ty, shape, &mut rng);
            let text = write_text(&v);
            let back = read1(&text);
            assert!(same_value(&v, &back), "{text} read back as {}", write_text(&back));
            let bin = write_binary(&v);
            let back = read_values(&bin).unwrap();
            assert!(back.len() == 1 && v.same_bits(&back[0]), "{} through binary", v.type_name());
        }
    }
}

#[test]
fn extreme_integers_round_trip_through_text() {
    for s in [
        "-128i8",
        "127i8",
        "-32768i16",
        "32767i16",
        "-2147483648i32",
        "2147483647i32",
        "-9223372036854775808i64",
        "9223372036854775807i64",
        "255u8",
        "65535u16",
        "4294967295u32",
        "18446744073709551615u64",
        "0u64",
    ] {
        assert_eq!(write_text(&read1(s)), s);
    }
}

#[test]
fn empty_arrays_round_trip_through_text_and_binary() {
    for (ty, shape) in [
        (ScalarTy::F32, &[0][..]),
        (ScalarTy::I32, &[0, 3]),
        (ScalarTy::Bool, &[3, 0]),
        (ScalarTy::U64, &[2, 0, 4]),
        (ScalarTy::F16, &[0, 0]),
    ] {
        let v = empty(ty, shape);
        let text = write_text(&v);
        assert!(text.starts_with("empty(["), "{text}");
        assert!(read1(&text).same_bits(&v), "{text}");
        assert!(read_values(&write_binary(&v)).unwrap()[0].same_bits(&v));
    }
    assert_eq!(write_text(&read1("empty([0][3]i32)")), "empty([0][3]i32)");
    assert_eq!(read1("empty ( [0] [3] i32 )").type_name(), "[0][3]i32");
    assert_eq!(read1("empty([0]f32)").type_name(), "[0]f32");
}

#[test]
fn futhark_prints_values_with_their_suffixes() {
    assert_eq!(write_text(&read1("[1, 2]")), "[1i32, 2i32]");
    assert_eq!(write_text(&read1("3.5f32")), "3.5f32");
    assert_eq!(write_text(&read1("true")), "true");
    assert_eq!(write_text(&read1("[[1u8, 2], [3, 4]]")), "[[1u8, 2u8], [3u8, 4u8]]");
    assert_eq!(write_text(&read1("-7i16")), "-7i16");
    assert_eq!(write_text(&read1("1.0")), "1.0f64");
    assert_eq!(write_text(&read1("2f16")), "2.0f16");
    assert_eq!(format!("{}", read1("[false]")), "[false]");
}

#[test]
fn unsuffixed_integers_are_i32_and_decimals_f64() {
    assert_eq!(read1("1").type_name(), "i32");
    assert_eq!(read1("-1").type_name(), "i32");
    assert_eq!(read1("1.5").type_name(), "f64");
    assert_eq!(read1("2e3").type_name(), "f64");
    assert_eq!(read1("2e3").get(0), Some(ScalarVal::F64(2000.0)));
    assert_eq!(read1("[[1, 2], [3, 4]]").type_name(), "[2][2]i32");
    assert_eq!(read1("[1.5, 2.5, 3.0]").type_name(), "[3]f64");
}

#[test]
fn the_first_element_gives_an_array_its_type() {
    let v = read1("[1i64, 2, -3]");
    assert_eq!(v.type_name(), "[3]i64");
    assert_eq!(v.get(2), Some(ScalarVal::I64(-3)));
    let v = read1("[1.5f32, 2, 3.25]");
    assert_eq!(v.type_name(), "[3]f32");
    assert_eq!(v.get(1), Some(ScalarVal::F32(2.0)));
    assert_eq!(read1("[[1u16, 2], [3, 4u16]]").type_name(), "[2][2]u16");
    assert_eq!(read1("[f32.inf, 1.5, -f32.inf]").type_name(), "[3]f32");
}

#[test]
fn a_later_element_must_agree_with_the_first() {
    let e = read_err(b"[1, 2i64]");
    assert_eq!(e.offset, 4, "{e}");
    assert!(e.message.contains("i64") && e.message.contains("i32"), "{e}");
    assert!(read_err(b"[1, 2.5]").message.contains("decimal"));
    assert!(
        read_err(b"[1.5, true]").message.contains("bool") || read_err(b"[1.5, true]").message.contains("f64")
    );
    assert_eq!(read_err(b"[true, 1]").offset, 7);
    assert!(read_err(b"[1f32, 2f64]").message.contains("f64"));
}

#[test]
fn integer_literals_take_every_form_futhark_allows() {
    let cases: [(&str, ScalarVal); 10] = [
        ("0x1f", ScalarVal::I32(31)),
        ("0xffu8", ScalarVal::U8(255)),
        ("0b101", ScalarVal::I32(5)),
        ("-0b1i8", ScalarVal::I8(-1)),
        ("1_000_000", ScalarVal::I32(1_000_000)),
        ("-2_3i32", ScalarVal::I32(-23)),
        ("+5i64", ScalarVal::I64(5)),
        ("0x12_34", ScalarVal::I32(0x1234)),
        ("2f32", ScalarVal::F32(2.0)),
        ("3.2_5", ScalarVal::F64(3.25)),
    ];
    for (s, v) in cases {
        assert_eq!(read1(s).get(0), Some(v), "{s}");
    }
    assert_eq!(read1("3.1_e-2f64").get(0), Some(ScalarVal::F64(3.1e-2)));
    assert_eq!(read1("1E2").get(0), Some(ScalarVal::F64(100.0)));
}

#[test]
fn a_negative_unsigned_literal_is_read_in_twos_complement() {
    assert_eq!(read1("-1u8").get(0), Some(ScalarVal::U8(255)));
    assert_eq!(read1("-3u8").get(0), Some(ScalarVal::U8(253)));
    assert_eq!(read1("-128u8").get(0), Some(ScalarVal::U8(128)));
    assert_eq!(read1("-1u64").get(0), Some(ScalarVal::U64(u64::MAX)));
    assert!(read_err(b"-129u8").message.contains("out of the range of u8"));
}

#[test]
fn a_literal_that_overflows_its_type_is_an_error() {
    for s in [
        "300u8",
        "128i8",
        "-129i8",
        "65536u16",
        "2147483648",
        "[1, 2147483648]",
        "9223372036854775808i64",
        "18446744073709551616u64",
        "999999999999999999999999999999999999999999999",
        "1e39f32",
        "1e309",
        "-1e309",
        "70000f16",
        "[1f32, 1e39]",
    ] {
        let e = read_err(s.as_bytes());
        assert!(e.message.contains("out of the range"), "{s}: {e}");
    }
    // a value that rounds to the largest finite float is not an overflow
    assert_eq!(read1("3.4028235e38f32").get(0), Some(ScalarVal::F32(f32::MAX)));
    assert_eq!(read1("1e-50f32").get(0), Some(ScalarVal::F32(0.0)));
}

#[test]
fn nan_and_infinities_are_written_by_name_and_read_back() {
    for (s, ty) in [("f16", ScalarTy::F16), ("f32", ScalarTy::F32), ("f64", ScalarTy::F64)] {
        for special in [format!("{s}.nan"), format!("{s}.inf"), format!("-{s}.inf")] {
            let v = read1(&special);
            assert_eq!(v.scalar_ty(), ty);
            assert_eq!(write_text(&v), special);
        }
    }
    assert_eq!(write_text(&Value::scalar(ScalarVal::F32(-f32::NAN))), "f32.nan");
    assert_eq!(write_text(&Value::scalar(ScalarVal::F64(f64::NEG_INFINITY))), "-f64.inf");
    for bad in ["-f32.nan", "+f32.inf", "f32.infinity", "f32.NaN", "f8.inf"] {
        read_err(bad.as_bytes());
    }
}

#[test]
fn floats_are_written_in_digits_that_read_back_to_the_same_bits() {
    let f32s = [0.1f32, 1.0 / 3.0, f32::MIN_POSITIVE, 1e-45, f32::MAX, f32::MIN, -0.0, 16777217.0, 1e16];
    for x in f32s {
        let v = Value::scalar(ScalarVal::F32(x));
        assert!(read1(&write_text(&v)).same_bits(&v), "{}", write_text(&v));
    }
    let f64s = [0.1, 1.0 / 3.0, f64::MIN_POSITIVE, 5e-324, f64::MAX, -0.0, 1e300, 123456789.12345679];
    for x in f64s {
        let v = Value::scalar(ScalarVal::F64(x));
        assert!(read1(&write_text(&v)).same_bits(&v), "{}", write_text(&v));
    }
    assert_eq!(write_text(&Value::scalar(ScalarVal::F32(0.1))), "0.1f32");
    assert_eq!(write_text(&Value::scalar(ScalarVal::F64(-0.0))), "-0.0f64");
}

#[test]
fn every_f16_reads_back_from_its_text() {
    for bits in 0..=u16::MAX {
        let v = Value::scalar(ScalarVal::F16(bits));
        let text = write_text(&v);
        assert!(same_value(&read1(&text), &v), "{bits:#06x} written as {text}");
    }
    assert_eq!(write_text(&Value::scalar(ScalarVal::F16(f16::from_f32(0.1).to_bits()))), "0.1f16");
}

#[test]
fn ragged_arrays_are_errors_at_the_offending_row() {
    let e = read_err(b"[[1, 2], [3]]");
    assert_eq!(e.offset, 9, "{e}");
    assert!(e.message.contains("ragged"), "{e}");
    let e = read_err(b"[[1, 2], [3, 4, 5]]");
    assert_eq!(e.offset, 9, "{e}");
    let e = read_err(b"[[1], 2]");
    assert_eq!(e.offset, 6, "{e}");
    assert!(e.message.contains("ragged"), "{e}");
    let e = read_err(b"[1, [2]]");
    assert_eq!(e.offset, 4, "{e}");
    assert!(e.message.contains("ragged"), "{e}");
    let e = read_err(b"[[[1], [2]], [[3], [4], [5]]]");
    assert_eq!(e.offset, 13, "{e}");
    assert!(read_err(b"[[1, 2], empty([0]i32)]").message.contains("ragged"));
    assert_eq!(read1("[empty([0]i32), empty([0]i32)]").type_name(), "[2][0]i32");
    assert!(read_err(b"[empty([0]i32), empty([0]i64)]").message.contains("i64"));
}

#[test]
fn malformed_text_is_an_error_with_its_offset() {
    let cases: [(&[u8], usize); 24] = [
        (b"[]", 0),
        (b"[[]]", 1),
        (b"[1 2]", 3),
        (b"[1,,2]", 3),
        (b"[,]", 1),
        (b"[1, 2", 0),
        (b"  [", 2),
        (b"]", 0),
        (b"1.", 0),
        (b".5", 0),
        (b"1e", 0),
        (b"1e+", 0),
        (b"tru", 0),
        (b"0x", 0),
        (b"0b2", 0),
        (b"1.5i32", 0),
        (b"0b1f32", 0),
        (b"1i7", 0),
        (b"1bool", 0),
        (b"empty(i32)", 0),
        (b"empty([2]i32)", 0),
        (b"empty([0]q32)", 9),
        (b"empty([0]i32", 12),
        (b"empty([x]i32)", 7),
    ];
    for (s, offset) in cases {
        let e = read_err(s);
        assert_eq!(e.offset, offset, "{:?}: {e}", String::from_utf8_lossy(s));
    }
    assert!(read_err(b"[]").message.contains("empty([0]t)"));
    assert!(read_err(b"empty([99999999999999999999999]i32)").message.contains("too large"));
    assert!(read_err(b"1 \xff").message.contains("not a value"));
    assert_eq!(read_err(b"1 \xff").offset, 2);
    assert!(read_err(b"1 2 )").offset == 4);
}

#[test]
fn ranks_above_255_are_errors_not_stack_overflows() {
    let deep = "[".repeat(100_000);
    assert!(read_err(deep.as_bytes()).message.contains("rank above 255"));
    let ok = format!("{}1{}", "[".repeat(255), "]".repeat(255));
    assert_eq!(read1(&ok).rank(), 255);
    let too_deep = format!("{}1{}", "[".repeat(256), "]".repeat(256));
    read_err(too_deep.as_bytes());
    let dims = "[0]".repeat(256);
    assert!(read_err(format!("empty({dims}i32)").as_bytes()).message.contains("rank above 255"));
}

#[test]
fn whitespace_comments_and_trailing_commas_separate_values() {
    let vs = read("-- leading comment\n 1 -- after one\n[2, 3,] --\n\t[[4,-- inside\n 5],]--end");
    let texts: Vec<String> = vs.iter().map(write_text).collect();
    assert_eq!(texts, ["1i32", "[2i32, 3i32]", "[[4i32, 5i32]]"]);
    assert_eq!(read("").len(), 0);
    assert_eq!(read("  -- nothing\n").len(), 0);
    assert_eq!(read("1--comment").len(), 1);
}

#[test]
fn text_and_binary_values_mix_in_one_input() {
    let a = read1("[1.5f32, 2.5]");
    let b = read1("[[1u16, 2], [3, 4]]");
    let mut input = b"0.5f64\n".to_vec();
    input.extend(write_binary(&a));
    input.extend(b" -- a comment\n true ");
    input.extend(write_binary(&b));
    input.extend(write_binary(&b));
    input.extend(b"[7i8]");
    let vs = read_values(&input).unwrap();
    let texts: Vec<String> = vs.iter().map(write_text).collect();
    assert_eq!(
        texts,
        [
            "0.5f64",
            "[1.5f32, 2.5f32]",
            "true",
            "[[1u16, 2u16], [3u16, 4u16]]",
            "[[1u16, 2u16], [3u16, 4u16]]",
            "[7i8]"
        ]
    );
}

#[test]
fn the_binary_format_is_futharks() {
    let v = read1("[1, 2]");
    let mut expected = vec![b'b', 2, 1, b' ', b'i', b'3', b'2'];
    expected.extend(2u64.to_le_bytes());
    expected.extend(1i32.to_le_bytes());
    expected.extend(2i32.to_le_bytes());
    assert_eq!(write_binary(&v), expected);
    assert_eq!(&write_binary(&read1("true"))[..], b"b\x02\x00bool\x01");
    assert_eq!(&write_binary(&read1("1u8"))[3..7], b"  u8");
    assert_eq!(&write_binary(&read1("1f16"))[3..7], b" f16");
    // the example of futhark-data's tests
    let vs = read_values(b"b\x02\x01 i32\x01\x00\x00\x00\x00\x00\x00\x00\x9a\xee\xb3u").unwrap();
    assert_eq!(write_text(&vs[0]), "[1974726298i32]");
}

fn header(version: u8, rank: u8, tag: &[u8; 4], shape: &[u64]) -> Vec<u8> {
    let mut h = vec![b'b', version, rank];
    h.extend(tag);
    for d in shape {
        h.extend(d.to_le_bytes());
    }
    h
}

#[test]
fn malformed_binary_is_an_error() {
    let e = read_err(&header(1, 0, b" i32", &[]));
    assert!(e.message.contains("version 1"), "{e}");
    assert_eq!(e.offset, 1);
    let e = read_err(&header(2, 0, b" i33", &[]));
    assert!(e.message.contains("unknown element type"), "{e}");
    assert_eq!(e.offset, 3);
    read_err(&header(2, 0, b"i32 ", &[]));
    let mut bools = header(2, 1, b"bool", &[3]);
    bools.extend([1, 0, 2]);
    let e = read_err(&bools);
    assert_eq!(e.offset, bools.len() - 1, "{e}");
    assert!(e.message.contains("not a bool"), "{e}");
    let mut short = header(2, 1, b" i64", &[2]);
    short.extend([0; 15]);
    assert!(read_err(&short).message.contains("claims 2 elements"));
}

#[test]
fn a_huge_claimed_shape_is_an_error_before_any_allocation() {
    let mut h = header(2, 1, b" f32", &[1 << 60]);
    h.extend([0; 10]);
    let e = read_err(&h);
    assert_eq!(e.offset, 0);
    assert!(e.message.contains("claims 1152921504606846976 elements"), "{e}");
    let h = header(2, 3, b" i64", &[1 << 40, 1 << 40, 1 << 40]);
    assert!(read_err(&h).message.contains("overflows"));
    let h = header(2, 2, b" i64", &[u64::MAX, 2]);
    read_err(&h);
    // an extent 0 makes the array empty whatever the others claim
    let v = read_values(&header(2, 3, b" i64", &[1 << 40, 0, 1 << 40])).unwrap();
    assert_eq!(v[0].len(), 0);
}

#[test]
fn every_truncation_of_a_binary_value_is_an_error() {
    let bin = write_binary(&read1("[[1.5f64, 2], [3, 4]]"));
    for n in 1..bin.len() {
        let e = read_err(&bin[..n]);
        assert!(e.message.contains("ends inside") || e.message.contains("claims"), "{n}: {e}");
    }
}

#[test]
fn values_hold_their_array_and_type() {
    let v = read1("[[1.5f32, 2], [3, 4], [5, 6]]");
    assert_eq!(v.type_name(), "[3][2]f32");
    assert_eq!(v.prim_type(), PrimType::F32);
    assert_eq!(v.shape(), &[3, 2]);
    assert_eq!(v.rank(), 2);
    assert_eq!(v.len(), 6);
    assert_eq!(v.get(5), Some(ScalarVal::F32(6.0)));
    assert_eq!(v.get(6), None);
    let data = v.clone().into_array();
    assert!(Value::new(data).unwrap().same_bits(&v));
    assert_eq!(v.array().elt_ty(), &EltTy::Scalar(ScalarTy::F32));
    let pairs = ArrayData::from_buffers(
        vec![1],
        EltTy::Tuple(vec![EltTy::Scalar(ScalarTy::I32), EltTy::Scalar(ScalarTy::I32)]),
        vec![Buffer::I32(vec![1].into()), Buffer::I32(vec![2].into())],
    )
    .unwrap();
    assert!(Value::new(pairs).is_none());
    assert!(Value::from_buffer(vec![2], Buffer::I32(vec![1].into())).is_none());
    assert!(Value::from_buffer(vec![1; 256], Buffer::I32(vec![1].into())).is_none());
    for p in PrimType::ALL {
        assert_eq!(prim_type(scalar_ty(p)), p);
        assert_eq!(scalar_ty(p).name(), p.name());
    }
}

#[test]
fn data_errors_display_their_offset() {
    let e = read_err(b"[1, 2");
    assert_eq!(e.to_string(), "at byte 0: the input ends inside this array");
    let boxed: Box<dyn std::error::Error> = Box::new(e);
    assert!(boxed.to_string().contains("byte 0"));
}

#[test]
fn integers_and_bools_match_only_when_equal() {
    assert_eq!(values_match(&read1("[1, 2, 3]"), &read1("[1, 2, 3]")), Ok(()));
    let e = values_match(&read1("[[1, 2], [3, 4]]"), &read1("[[1, 2], [3, 5]]")).unwrap_err();
    assert_eq!(e, "at index [1, 1]: expected 4i32, got 5i32");
    let e = values_match(&read1("true"), &read1("false")).unwrap_err();
    assert_eq!(e, "expected true, got false");
    let e = values_match(&read1("[1, 2]"), &read1("[1i64, 2]")).unwrap_err();
    assert_eq!(e, "expected a value of type [2]i32, got [2]i64");
    let e = values_match(&read1("[1, 2]"), &read1("[[1], [2]]")).unwrap_err();
    assert_eq!(e, "expected an array of shape [2], got [2][1]");
    assert!(values_match(&read1("empty([0]i32)"), &read1("empty([0]i32)")).is_ok());
    assert!(values_match(&read1("empty([0]i32)"), &read1("empty([0][0]i32)")).is_err());
}

#[test]
fn floats_match_within_futharks_tolerance() {
    let ok = |e: &str, a: &str| values_match(&read1(e), &read1(a));
    assert!(ok("1.0", "1.0019").is_ok());
    assert!(ok("1.0", "1.0021").is_err());
    assert!(ok("0.0", "-0.002").is_ok());
    // 0.2% of the largest expected element, for every element
    assert!(ok("[1000.0, 0.0]", "[1001.9, 1.9]").is_ok());
    assert!(ok("[1000.0, 0.0]", "[1002.1, 0.0]").is_err());
    // negative elements do not widen it, as in Futhark
    assert!(ok("[-1000.0]", "[-1000.1]").is_err());
    assert!(ok("[f64.nan, f64.inf, -f64.inf]", "[f64.nan, f64.inf, -f64.inf]").is_ok());
    assert!(ok("[f64.inf]", "[-f64.inf]").is_err());
    assert!(ok("[f64.nan]", "[1.0]").is_err());
    assert!(ok("[1.0]", "[f64.nan]").is_err());
    assert!(ok("[1e308]", "[f64.inf]").is_err());
    // infinities and NaN do not count towards the tolerance
    assert!(ok("[f32.inf, 1f32]", "[f32.inf, 1.1f32]").is_err());
    assert!(ok("[1f16, 2]", "[1.001f16, 2]").is_ok());
    assert!(ok("[1f16, 2]", "[1.1f16, 2]").is_err());
    let e = ok("[[1f32, 2], [3, 4]]", "[[1f32, 2], [3.5, 4]]").unwrap_err();
    assert!(e.starts_with("at index [1, 0]: expected 3.0f32, got 3.5f32"), "{e}");
    assert!(e.contains("tolerance 0.008"), "{e}");
}

/// Mutations of valid inputs and random bytes: reading must return, an
/// error or values, and never panic.
#[test]
fn random_and_damaged_inputs_never_panic() {
    let mut rng = Rng(0x0123_4567_89ab_cdef);
    let mut seeds: Vec<Vec<u8>> = vec![
        b"[[1, 2], [3, 4]] 1.5f32 -f64.inf empty([0][2]u8) 0xffu8 -- c\n true".to_vec(),
        b"[1e3, 2.5_0e-1, 3] [[[1i8]]] f16.nan".to_vec(),
    ];
    for ty in ScalarTy::ALL {
        let v = random_value(ty, &[2, 3], &mut rng);
        seeds.push(write_binary(&v));
        seeds.push(write_text(&v).into_bytes());
    }
    let alphabet = b"[],() b-_.0123456789abefilnrtux\n\x02\x00\xff";
    for round in 0..20_000 {
        let mut input = seeds[rng.below(seeds.len())].clone();
        match round % 4 {
            0 => input.truncate(rng.below(input.len() + 1)),
            1 => {
                for _ in 0..1 + rng.below(4) {
                    if !input.is_empty() {
                        let i = rng.below(input.len());
                        input[i] = rng.next() as u8;
                    }
                }
            }
            2 => {
                let i = rng.below(input.len() + 1);
                let extra: Vec<u8> = (0..rng.below(8)).map(|_| alphabet[rng.below(alphabet.len())]).collect();
                input.splice(i..i, extra);
            }
            _ => input = (0..rng.below(64)).map(|_| alphabet[rng.below(alphabet.len())]).collect(),
        }
        let _ = read_values(&input);
    }
}

use super::*;
use crate::data::write_text;

fn texts(vs: &[Value]) -> Vec<String> {
    vs.iter().map(write_text).collect()
}

fn values_of(input: &Input) -> Vec<String> {
    match input {
        Input::Values(vs) => texts(vs),
        other => panic!("not values: {other:?}"),
    }
}

fn expected_values(expected: &Expected) -> Vec<String> {
    match expected {
        Expected::Values(vs) => texts(vs),
        other => panic!("not values: {other:?}"),
    }
}

fn parse(source: &str) -> Vec<TestBlock> {
    parse_tests(source).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn futharks_indexing_example_reads_as_two_cases() {
    let source = "\
-- Test simple indexing of an array.
-- ==
-- tags { firsttag secondtag }
-- input { [4,3,2,1] 1i64 }
-- output { 3 }
-- input { [4,3,2,1] 5i64 }
-- error: Error*

def main (a: []i32) (i: i64): i32 =
  a[i]
";
    let blocks = parse(source);
    assert_eq!(blocks.len(), 1);
    let b = &blocks[0];
    assert_eq!(b.line, 2);
    assert_eq!(b.tags, ["firsttag", "secondtag"]);
    assert_eq!(b.entries, ["main"]);
    assert_eq!(b.cases.len(), 2);
    assert_eq!(b.cases[0].line, 4);
    assert_eq!(values_of(&b.cases[0].input), ["[4i32, 3i32, 2i32, 1i32]", "1i64"]);
    assert_eq!(expected_values(&b.cases[0].expected), ["3i32"]);
    assert_eq!(b.cases[1].line, 6);
    assert_eq!(b.cases[1].expected, Expected::Error("Error*".to_string()));
}

#[test]
fn each_block_has_its_entry_points() {
    let source = "\
def add (x: i32) (y: i32): i32 = x + y

-- Test the add1 function.
-- ==
-- entry: add1 add1_again
-- input { 1 } output { 2 }

entry add1 (x: i32): i32 = add x 1
entry add1_again (x: i32): i32 = add x 1

-- ==
-- entry: sub1
-- input { 1 } output { 0 }
-- input { -1 } output { -2 }

entry sub1 (x: i32): i32 = add x (-1)
";
    let blocks = parse(source);
    assert_eq!(blocks.len(), 2);
    assert_eq!(blocks[0].entries, ["add1", "add1_again"]);
    assert_eq!(blocks[0].cases.len(), 1);
    assert_eq!(blocks[0].cases[0].line, 6);
    assert_eq!(blocks[1].line, 11);
    assert_eq!(blocks[1].entries, ["sub1"]);
    assert_eq!(blocks[1].cases.len(), 2);
    assert_eq!(expected_values(&blocks[1].cases[1].expected), ["-2i32"]);
}

#[test]
fn values_span_several_comment_lines() {
    let source = "\
-- ==
-- input {
--   [[1.0f32, 2.0],
--    [3.0, 4.0]]
--   empty([0]i64)
-- }
-- output {
--   10f32
-- }
";
    let b = &parse(source)[0];
    assert_eq!(b.cases[0].line, 2);
    assert_eq!(values_of(&b.cases[0].input), ["[[1.0f32, 2.0f32], [3.0f32, 4.0f32]]", "empty([0]i64)"]);
    assert_eq!(expected_values(&b.cases[0].expected), ["10.0f32"]);
}

#[test]
fn case_tags_become_flags_and_names_are_kept() {
    let source = "\
-- ==
-- compiled nobench input { 1 } output { 1 }
-- notest no_opencl input { 2 }
-- \"small one\" compiled input { 3 } output { 3 }
";
    let b = &parse(source)[0];
    let c = &b.cases;
    assert!(c[0].compiled && c[0].nobench && !c[0].notest && c[0].tags.is_empty());
    assert!(!c[1].compiled && c[1].notest);
    assert_eq!(c[1].tags, ["no_opencl"]);
    assert_eq!(c[1].expected, Expected::Success);
    assert_eq!(c[2].name.as_deref(), Some("small one"));
    assert!(c[2].compiled);
    assert_eq!(c.iter().map(|c| c.line).collect::<Vec<_>>(), [2, 3, 4]);
}

#[test]
fn inputs_and_outputs_may_come_from_files() {
    let source = "\
-- ==
-- input @ data/big.in
-- output @ data/big.out
-- nobench input @data/other.in.gz auto output
";
    let b = &parse(source)[0];
    assert_eq!(b.cases[0].input, Input::File("data/big.in".to_string()));
    assert_eq!(b.cases[0].expected, Expected::File("data/big.out".to_string()));
    assert_eq!(b.cases[1].input, Input::File("data/other.in.gz".to_string()));
    assert_eq!(b.cases[1].expected, Expected::Auto);
}

#[test]
fn random_inputs_are_lists_of_types() {
    let source = "\
-- ==
-- random input { [100]i32 [10][2]f32 bool 10i64 } auto output
-- random input { [1000]f64 }
";
    let b = &parse(source)[0];
    let Input::Random(gens) = &b.cases[0].input else { panic!("{:?}", b.cases[0].input) };
    assert_eq!(gens.len(), 4);
    assert_eq!(gens[0], RandomValue::Random { shape: vec![100], elem: PrimType::I32 });
    assert_eq!(gens[1], RandomValue::Random { shape: vec![10, 2], elem: PrimType::F32 });
    assert_eq!(gens[2], RandomValue::Random { shape: vec![], elem: PrimType::Bool });
    let RandomValue::Fixed(v) = &gens[3] else { panic!("{:?}", gens[3]) };
    assert_eq!(write_text(v), "10i64");
    assert_eq!(b.cases[0].expected, Expected::Auto);
    assert!(b.cases[0].tags.is_empty());
    assert!(matches!(&b.cases[1].input, Input::Random(g) if g.len() == 1));
}

#[test]
fn script_inputs_are_kept_as_text() {
    let source = "\
-- ==
-- script input { mk_input 10i64 {x = 1} }
-- output { 55 }
-- script input @ gen.script
";
    let b = &parse(source)[0];
    assert_eq!(b.cases[0].input, Input::Script("mk_input 10i64 {x = 1}".to_string()));
    assert_eq!(b.cases[1].input, Input::ScriptFile("gen.script".to_string()));
}

#[test]
fn an_empty_error_matches_any_error() {
    let b = &parse("-- ==\n-- input { 0 } error:\n")[0];
    assert_eq!(b.cases[0].expected, Expected::Error(String::new()));
}

#[test]
fn a_block_may_expect_a_compile_time_error() {
    let source = "-- Type error.\n-- ==\n-- error: Type mismatch.*i32\n\ndef main = 1 + true\n";
    let b = &parse(source)[0];
    assert_eq!(b.compile_error.as_deref(), Some("Type mismatch.*i32"));
    assert!(b.cases.is_empty());
    let b = &parse("-- ==\n-- tags { no_wasm }\n-- error:\n")[0];
    assert_eq!(b.tags, ["no_wasm"]);
    assert_eq!(b.compile_error.as_deref(), Some(""));
}

#[test]
fn property_structure_and_warning_directives_are_kept() {
    let b = &parse("-- ==\n-- property: reverse_involution sorted\n")[0];
    assert_eq!(b.properties, ["reverse_involution", "sorted"]);
    let source = "\
-- ==
-- input { [1,2] } output { 3 }
-- structure gpu { SegRed 1 }
-- structure { Screma 1 }
-- warning: unused
";
    let b = &parse(source)[0];
    assert_eq!(b.cases.len(), 1);
    assert_eq!(b.structure_lines, [3, 4]);
    assert_eq!(b.warnings, ["unused"]);
}

#[test]
fn comments_without_a_double_equals_line_are_not_blocks() {
    assert!(parse("-- just a comment\n-- input { 1 }\ndef main = 1\n").is_empty());
    assert!(parse("def main = 1 -- ==\n").is_empty());
    assert!(parse("").is_empty());
    // a block with no cases yet is still a block
    let b = &parse("-- ==\ndef main = 1\n")[0];
    assert!(b.cases.is_empty() && b.entries == ["main"]);
    // CRLF line ends
    let b = &parse("-- ==\r\n-- input { 1 }\r\n-- output { 1 }\r\n")[0];
    assert_eq!(expected_values(&b.cases[0].expected), ["1i32"]);
}

fn error_of(source: &str) -> SpecError {
    match parse_tests(source) {
        Ok(blocks) => panic!("parsed: {blocks:?}"),
        Err(e) => e,
    }
}

#[test]
fn an_unclosed_brace_is_an_error_at_its_line() {
    let e = error_of("def x = 1\n-- ==\n-- input { 1 }\n-- input { [1,\n--   2]\n-- output { 3 }\n");
    // the `{` of line 4 closes at line 6 (`3 }`), so its values are
    // malformed; the unclosed one is the last
    assert_eq!(e.line, 6, "{e}");
    let e = error_of("-- ==\n-- input { 1 } output { 1 }\n-- input { 2\n");
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("not closed"), "{e}");
    let e = error_of("-- ==\n-- tags { a b\n");
    assert_eq!(e.line, 2, "{e}");
}

#[test]
fn an_unknown_directive_is_an_error_at_its_line() {
    let e = error_of("-- ==\n-- input { 1 }\n-- outptu { 2 }\n");
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("unknown directive `outptu`"), "{e}");
    let e = error_of("-- ==\n-- input { 1 } output { 2 }\n-- entrypoint: f\n");
    assert_eq!(e.line, 3, "{e}");
    assert!(e.message.contains("unknown directive `entrypoint:`"), "{e}");
    let e = error_of("-- ==\n-- input { 1 }\n-- entry: f\n");
    assert!(e.message.contains("`entry:` must come before"), "{e}");
    let e = error_of("-- ==\n-- output { 1 }\n");
    assert!(e.message.contains("without an `input`"), "{e}");
    assert_eq!(e.line, 2);
    let e = error_of("-- ==\n-- { 1 }\n");
    assert!(e.message.contains("found `{`"), "{e}");
}

#[test]
fn malformed_blocks_are_errors_at_their_lines() {
    // a bad value names the line inside the braces
    let e = error_of("-- ==\n-- input {\n--   [1, 2]\n--   [1, [2]]\n-- }\n");
    assert_eq!(e.line, 4, "{e}");
    assert!(e.message.contains("ragged"), "{e}");
    let e = error_of("-- ==\n-- input { 300u8 }\n");
    assert!(e.message.contains("out of the range"), "{e}");
    let cases: [(&str, usize, &str); 9] = [
        ("-- ==\n-- entry:\n", 2, "names no entry point"),
        ("-- ==\n-- input\n", 2, "expected `{` after `input`"),
        ("-- ==\n-- input @\n", 2, "file name"),
        ("-- ==\n-- input { 1 } auto\n", 2, "expected `output` after `auto`"),
        ("-- ==\n-- random input @ f\n", 2, "cannot come from a file"),
        ("-- ==\n-- random input { [x]i32 }\n", 2, "neither a type"),
        ("-- ==\n--\n-- \"unclosed input { 1 }\n", 3, "not closed"),
        ("-- ==\n-- error: x\n-- input { 1 }\n", 3, "nothing may follow"),
        ("-- ==\n-- tags { a.b }\n", 2, "is not a tag"),
    ];
    for (source, line, message) in cases {
        let e = error_of(source);
        assert_eq!(e.line, line, "{source:?}: {e}");
        assert!(e.message.contains(message), "{source:?}: {e}");
    }
    assert_eq!(error_of("-- ==\n-- entry:\n").to_string(), "line 2: `entry:` names no entry point");
}

/// Random edits of a valid file: parsing must return, a list of blocks
/// or an error, and never panic.
#[test]
fn damaged_test_blocks_never_panic() {
    let valid: Vec<char> = "\
-- ==
-- tags { a b }
-- entry: f g
-- \"name\" compiled input { [1, 2] 3i64 } output { [1.5f32] }
-- random input { [10]f32 2i64 } auto output
-- script input { f {x = 1} } error: bad
-- input @ x.in output @ x.out
-- structure gpu { SegMap 1 }
"
    .chars()
    .collect();
    let alphabet: Vec<char> = "{}[]@\":-= \n\tabefinotpu0123é".chars().collect();
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move |n: usize| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % n as u64) as usize
    };
    for _ in 0..5_000 {
        let mut source = valid.clone();
        for _ in 0..1 + next(4) {
            let i = next(source.len() + 1);
            match next(3) {
                0 if i < source.len() => {
                    source.remove(i);
                }
                1 if i < source.len() => source[i] = alphabet[next(alphabet.len())],
                _ => source.insert(i, alphabet[next(alphabet.len())]),
            }
        }
        let cut = next(source.len() + 1);
        let text: String = source[..cut].iter().collect();
        let _ = parse_tests(&text);
    }
}

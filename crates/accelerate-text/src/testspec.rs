//! The test blocks of a `.fut` file, in `futhark test`'s format
//! (`futhark-test(1)`).
//!
//! A block is a run of comment lines that starts at a line `-- ==` (the
//! `--` at the start of the line) and ends at the first line that does
//! not start with `--`; the text of its lines, without their `--`, is:
//!
//! ```text
//! [tags { tag... }]
//! error: text                                     -- compile-time failure
//! | property: name...                             -- property tests
//! | [entry: name...] case... [structure [pipeline] { ... } | warning: text]...
//! case := ["name"] [tag...] input ({ values } | @ file)
//!                           [output ({ values } | @ file) | auto output | error: text]
//! ```
//!
//! Values are in the textual or binary data format (`crate::data`), and
//! may span lines. Among a case's tags, `random` makes its input a list of
//! types (`random input { [100]f32 }`), `script` makes it a FutharkScript
//! expression, kept as text; `compiled`, `nobench` and `notest` become
//! flags; the others are kept. A case without `output` or `error:` only
//! has to run without failing.
//!
//! `error:` is followed by a regular expression in Futhark (the rest of
//! its line; an empty one matches any error). This crate has no regular
//! expression engine: the text is kept as written, and the runner matches
//! it as a substring of the error message.
//!
//! Differences from `futhark test`: every block may have `tags` and its
//! own `entry:` (Futhark reads both from the first block only, and later
//! blocks as more cases); `structure` tests, which count the Futhark
//! compiler's internal constructs, are kept by line only.

use crate::ast::PrimType;
use crate::data::{read_values, Value};
use std::fmt;

/// A malformed test block, at a line of the source (from 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpecError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for SpecError {}

/// One `-- ==` block.
#[derive(Clone, Debug, PartialEq)]
pub struct TestBlock {
    /// The line of its `-- ==`.
    pub line: usize,
    pub tags: Vec<String>,
    /// The entry points its cases run (`main` unless `entry:` names
    /// others); each runs every case.
    pub entries: Vec<String>,
    pub cases: Vec<RunCase>,
    /// `error: text` in place of cases: the program must fail to compile,
    /// with an error that matches the text (any error if it is empty).
    pub compile_error: Option<String>,
    /// `property: names`: property-based tests of these entry points.
    pub properties: Vec<String>,
    /// `warning: text`: the compiler must warn with a matching message.
    pub warnings: Vec<String>,
    /// The lines of its `structure` tests.
    pub structure_lines: Vec<usize>,
}

/// One run of the entry points on an input.
#[derive(Clone, Debug, PartialEq)]
pub struct RunCase {
    /// The line where the case starts.
    pub line: usize,
    /// The quoted name before it, if any.
    pub name: Option<String>,
    /// Never run by the interpreter.
    pub compiled: bool,
    /// Not worth benchmarking.
    pub nobench: bool,
    /// Not run by `futhark test`.
    pub notest: bool,
    /// Its other tags (`no_opencl`, `disable`, ...).
    pub tags: Vec<String>,
    pub input: Input,
    pub expected: Expected,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Input {
    /// `input { values }`.
    Values(Vec<Value>),
    /// `input @ file`: values read from the file, relative to the `.fut`
    /// file.
    File(String),
    /// `random input { types }`.
    Random(Vec<RandomValue>),
    /// `script input { expression }`, as written.
    Script(String),
    /// `script input @ file`.
    ScriptFile(String),
}

/// One value of a `random input`.
#[derive(Clone, Debug, PartialEq)]
pub enum RandomValue {
    /// Random elements of this type and shape (`[100]f32`; no shape for a
    /// scalar).
    Random { shape: Vec<usize>, elem: PrimType },
    /// This value (`random input { 10i64 [10]f32 }`).
    Fixed(Value),
}

#[derive(Clone, Debug, PartialEq)]
pub enum Expected {
    /// The run must succeed; its output is not checked.
    Success,
    /// `output { values }`.
    Values(Vec<Value>),
    /// `output @ file`, relative to the `.fut` file.
    File(String),
    /// `auto output`: the values a reference compiler computes.
    Auto,
    /// `error: text`: the run must fail with an error that matches the
    /// text (any error if it is empty).
    Error(String),
}

/// The test blocks of a source file, in order.
pub fn parse_tests(source: &str) -> Result<Vec<TestBlock>, SpecError> {
    let lines: Vec<&str> = source.split('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).collect();
    let mut blocks = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        if !is_block_start(lines[i]) {
            i += 1;
            continue;
        }
        let mut text = BlockText { header: i + 1, text: String::new(), line_starts: Vec::new() };
        let mut j = i + 1;
        while let Some(line) = lines.get(j).and_then(|l| l.strip_prefix("--")) {
            if is_block_start(lines[j]) {
                break;
            }
            text.push(line, j + 1);
            j += 1;
        }
        blocks.push(BlockParser { block: &text, pos: 0 }.block()?);
        i = j;
    }
    Ok(blocks)
}

fn is_block_start(line: &str) -> bool {
    line.strip_prefix("--").is_some_and(|rest| rest.trim() == "==")
}

fn is_tag_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || c == '-'
}

/// A block's lines without their `--`, and where each line came from.
struct BlockText {
    /// The line of the `-- ==`.
    header: usize,
    text: String,
    /// The offset in `text` of each line, and its line in the source.
    line_starts: Vec<(usize, usize)>,
}

impl BlockText {
    fn push(&mut self, line: &str, number: usize) {
        self.line_starts.push((self.text.len(), number));
        self.text.push_str(line);
        self.text.push('\n');
    }

    /// The source line of an offset in the text.
    fn line_at(&self, offset: usize) -> usize {
        let k = self.line_starts.partition_point(|&(start, _)| start <= offset);
        k.checked_sub(1).and_then(|k| self.line_starts.get(k)).map_or(self.header, |&(_, line)| line)
    }
}

struct BlockParser<'a> {
    block: &'a BlockText,
    pos: usize,
}

impl<'a> BlockParser<'a> {
    fn block(mut self) -> Result<TestBlock, SpecError> {
        let mut block = TestBlock {
            line: self.block.header,
            tags: Vec::new(),
            entries: vec!["main".to_string()],
            cases: Vec::new(),
            compile_error: None,
            properties: Vec::new(),
            warnings: Vec::new(),
            structure_lines: Vec::new(),
        };
        self.skip_space();
        if self.keyword("tags") {
            let (at, inner) = self.braces("tags", false)?;
            for tag in inner.split_whitespace() {
                if !tag.chars().all(is_tag_char) {
                    let message = format!("`{tag}` is not a tag (letters, digits, `_` and `-`)");
                    return Err(self.error(at, message));
                }
                block.tags.push(tag.to_string());
            }
            self.skip_space();
        }
        if self.directive("error") {
            block.compile_error = Some(self.rest_of_line().to_string());
            if !self.at_end() {
                return Err(self.error(self.pos, "nothing may follow a compile-time `error:` in its block"));
            }
            return Ok(block);
        }
        while self.directive("property") {
            let at = self.pos;
            let names = self.rest_of_line();
            if names.is_empty() {
                return Err(self.error(at, "`property:` names no entry point"));
            }
            block.properties.extend(names.split_whitespace().map(String::from));
            self.skip_space();
        }
        if !block.properties.is_empty() {
            if !self.at_end() {
                return Err(self.error(self.pos, "a block of `property:` tests holds nothing else"));
            }
            return Ok(block);
        }
        if self.directive("entry") {
            let at = self.pos;
            block.entries = self.rest_of_line().split_whitespace().map(String::from).collect();
            if block.entries.is_empty() {
                return Err(self.error(at, "`entry:` names no entry point"));
            }
        }
        while !self.at_end() {
            let at = self.pos;
            if self.directive("warning") {
                block.warnings.push(self.rest_of_line().to_string());
            } else if self.keyword("structure") {
                block.structure_lines.push(self.block.line_at(at));
                self.skip_space();
                let pipeline = self.peek_word();
                self.pos += pipeline.len();
                self.braces("structure", false)?;
            } else {
                block.cases.push(self.case()?);
            }
        }
        Ok(block)
    }

    fn case(&mut self) -> Result<RunCase, SpecError> {
        let start = self.pos;
        let name = if self.rest().starts_with('"') { Some(self.string()?) } else { None };
        let mut words: Vec<(usize, &str)> = Vec::new();
        loop {
            self.skip_space();
            let at = self.pos;
            let word = self.peek_word();
            if word == "input" {
                self.pos += word.len();
                break;
            }
            let directive = self.rest()[word.len()..].starts_with(':');
            if word.is_empty() || directive || word == "output" || word == "auto" {
                return Err(self.not_a_case(at, word, &words));
            }
            self.pos += word.len();
            words.push((at, word));
        }
        let mut case = RunCase {
            line: self.block.line_at(start),
            name,
            compiled: false,
            nobench: false,
            notest: false,
            tags: Vec::new(),
            input: Input::Values(Vec::new()),
            expected: Expected::Success,
        };
        let (mut random, mut script) = (false, false);
        for (_, word) in words {
            match word {
                "random" => random = true,
                "script" => script = true,
                "compiled" => case.compiled = true,
                "nobench" => case.nobench = true,
                "notest" => case.notest = true,
                tag => case.tags.push(tag.to_string()),
            }
        }
        self.skip_space();
        let from_file = self.rest().starts_with('@');
        case.input = match (random, script, from_file) {
            (true, _, true) => return Err(self.error(self.pos, "a `random input` cannot come from a file")),
            (true, _, false) => {
                let (at, inner) = self.braces("random input", false)?;
                Input::Random(self.random_values(at, inner)?)
            }
            (false, true, true) => Input::ScriptFile(self.file_name()?),
            (false, true, false) => Input::Script(self.braces("script input", true)?.1.trim().to_string()),
            (false, false, true) => Input::File(self.file_name()?),
            (false, false, false) => {
                let (at, inner) = self.braces("input", false)?;
                Input::Values(self.values(at, inner)?)
            }
        };
        self.skip_space();
        case.expected = if self.keyword("auto") {
            self.skip_space();
            if !self.keyword("output") {
                return Err(self.error(self.pos, "expected `output` after `auto`"));
            }
            Expected::Auto
        } else if self.keyword("output") {
            self.skip_space();
            if self.rest().starts_with('@') {
                Expected::File(self.file_name()?)
            } else {
                let (at, inner) = self.braces("output", false)?;
                Expected::Values(self.values(at, inner)?)
            }
        } else if self.directive("error") {
            Expected::Error(self.rest_of_line().to_string())
        } else {
            Expected::Success
        };
        Ok(case)
    }

    /// The error for a word (or none) where a case's `input` was expected,
    /// after the tags `words`.
    fn not_a_case(&self, at: usize, word: &str, words: &[(usize, &str)]) -> SpecError {
        if let Some(&(first_at, first)) = words.first() {
            return self.error(first_at, format!("unknown directive `{first}` (no `input` follows it)"));
        }
        let message = match word {
            "output" | "auto" => format!("`{word}` without an `input` before it"),
            "entry" => "`entry:` must come before the block's cases".to_string(),
            "" => match self.rest().chars().next() {
                Some(c) => format!("expected a test case (`input ...`), found `{c}`"),
                None => "expected `input` after the case's name".to_string(),
            },
            _ => format!(
                "unknown directive `{word}{}`",
                if self.rest()[word.len()..].starts_with(':') { ":" } else { "" }
            ),
        };
        self.error(at, message)
    }

    /// The values between braces that start at `at` in the block.
    fn values(&self, at: usize, inner: &str) -> Result<Vec<Value>, SpecError> {
        read_values(inner.as_bytes())
            .map_err(|e| self.error(at + e.offset, format!("in a value: {}", e.message)))
    }

    /// The types and values of a `random input`.
    fn random_values(&self, at: usize, inner: &str) -> Result<Vec<RandomValue>, SpecError> {
        let mut out = Vec::new();
        let mut offset = 0;
        while let Some(token) = inner[offset..].split_whitespace().next() {
            let token_at = offset + inner[offset..].find(token).unwrap_or(0);
            offset = token_at + token.len();
            let is_type = token.starts_with('[') || PrimType::from_name(token).is_some();
            let value = if is_type { random_type(token) } else { fixed_value(token) };
            out.push(value.ok_or_else(|| {
                let message = format!("`{token}` is neither a type (`[100]f32`) nor a primitive value");
                self.error(at + token_at, message)
            })?);
        }
        Ok(out)
    }

    fn rest(&self) -> &'a str {
        self.block.text.get(self.pos..).unwrap_or_default()
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn at_end(&mut self) -> bool {
        self.skip_space();
        self.rest().is_empty()
    }

    fn error(&self, at: usize, message: impl Into<String>) -> SpecError {
        SpecError { line: self.block.line_at(at), message: message.into() }
    }

    /// The word of tag characters at the position (maybe empty).
    fn peek_word(&self) -> &'a str {
        let rest = self.rest();
        &rest[..rest.find(|c| !is_tag_char(c)).unwrap_or(rest.len())]
    }

    /// Consumes the word if it is the one at the position.
    fn keyword(&mut self, word: &str) -> bool {
        let found = self.peek_word() == word;
        if found {
            self.pos += word.len();
        }
        found
    }

    /// Consumes `name:` if it is at the position.
    fn directive(&mut self, name: &str) -> bool {
        let found = self.peek_word() == name && self.rest()[name.len()..].starts_with(':');
        if found {
            self.pos += name.len() + 1;
        }
        found
    }

    /// The rest of the line, trimmed.
    fn rest_of_line(&mut self) -> &'a str {
        let rest = self.rest();
        let n = rest.find('\n').unwrap_or(rest.len());
        self.pos += n;
        rest[..n].trim()
    }

    /// The text between `{` (after spaces) and its `}`, and its offset;
    /// braces nest if `nested`.
    fn braces(&mut self, after: &str, nested: bool) -> Result<(usize, &'a str), SpecError> {
        self.skip_space();
        let open = self.pos;
        if !self.rest().starts_with('{') {
            return Err(self.error(open, format!("expected `{{` after `{after}`")));
        }
        let inner = &self.rest()[1..];
        let mut depth = 0usize;
        for (i, c) in inner.char_indices() {
            match c {
                '{' if nested => depth += 1,
                '}' if depth == 0 => {
                    self.pos = open + 1 + i + 1;
                    return Ok((open + 1, &inner[..i]));
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        Err(self.error(open, format!("the `{{` after `{after}` is not closed")))
    }

    /// The file name after `@`.
    fn file_name(&mut self) -> Result<String, SpecError> {
        self.pos += 1;
        self.skip_space();
        let rest = self.rest();
        let name = &rest[..rest.find(char::is_whitespace).unwrap_or(rest.len())];
        if name.is_empty() {
            return Err(self.error(self.pos, "expected a file name after `@`"));
        }
        self.pos += name.len();
        Ok(name.to_string())
    }

    /// A double-quoted string with `\"`, `\\`, `\n` and `\t` escapes.
    fn string(&mut self) -> Result<String, SpecError> {
        let open = self.pos;
        let mut out = String::new();
        let mut chars = self.rest().char_indices().skip(1);
        while let Some((i, c)) = chars.next() {
            match c {
                '"' => {
                    self.pos = open + i + 1;
                    return Ok(out);
                }
                '\n' => break,
                '\\' => match chars.next() {
                    Some((_, 'n')) => out.push('\n'),
                    Some((_, 't')) => out.push('\t'),
                    Some((_, c)) => out.push(c),
                    None => break,
                },
                c => out.push(c),
            }
        }
        Err(self.error(open, "this string is not closed on its line"))
    }
}

/// `[d]...t`: random elements of a type.
fn random_type(token: &str) -> Option<RandomValue> {
    let mut shape = Vec::new();
    let mut rest = token;
    while let Some(after) = rest.strip_prefix('[') {
        let (extent, after) = after.split_once(']')?;
        shape.push(extent.parse().ok()?);
        rest = after;
    }
    Some(RandomValue::Random { shape, elem: PrimType::from_name(rest)? })
}

/// A primitive value of a `random input`, kept as it is.
fn fixed_value(token: &str) -> Option<RandomValue> {
    let mut values = read_values(token.as_bytes()).ok()?;
    match (values.pop(), values.is_empty()) {
        (Some(v), true) if v.rank() == 0 => Some(RandomValue::Fixed(v)),
        _ => None,
    }
}

#[cfg(test)]
mod tests;

//! Diagnostics: every error the front end reports points at the source,
//! rendered as file, line and column with the offending text underlined
//! (codespan-reporting).

use crate::ast::Span;
use codespan_reporting::diagnostic::{Diagnostic as Report, Label};
use codespan_reporting::files::SimpleFile;
use codespan_reporting::term::{self, Config};
use std::fmt;

/// Which stage found the error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DiagKind {
    /// A token the lexer does not know, or a phrase the grammar does not
    /// allow.
    Parse,
    /// An ill-typed program.
    Type,
    /// A program the TFP'18 restrictions rule out: a function returned by
    /// `if`, `loop` or `match`, an array of functions, a function type
    /// instantiating a type parameter that is not lifted (`'^a`).
    Restriction,
    /// A program the lowering to the IR cannot express yet.
    Unsupported,
    /// An error while running the program (an index out of bounds, a
    /// size mismatch), located at the operation that raised it.
    Runtime,
}

impl DiagKind {
    pub fn name(self) -> &'static str {
        match self {
            DiagKind::Parse => "parse error",
            DiagKind::Type => "type error",
            DiagKind::Restriction => "restriction",
            DiagKind::Unsupported => "unsupported",
            DiagKind::Runtime => "run-time error",
        }
    }
}

/// An error at a place in the source.
#[derive(Clone, Debug, PartialEq)]
pub struct Diagnostic {
    pub kind: DiagKind,
    pub message: String,
    pub span: Span,
    /// Further places that explain the error, each with a short message.
    pub labels: Vec<(Span, String)>,
    /// Further lines of explanation.
    pub notes: Vec<String>,
}

impl Diagnostic {
    pub fn new(kind: DiagKind, span: Span, message: impl Into<String>) -> Diagnostic {
        Diagnostic { kind, message: message.into(), span, labels: Vec::new(), notes: Vec::new() }
    }

    pub fn with_label(mut self, span: Span, message: impl Into<String>) -> Diagnostic {
        self.labels.push((span, message.into()));
        self
    }

    pub fn with_note(mut self, note: impl Into<String>) -> Diagnostic {
        self.notes.push(note.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind.name(), self.message)
    }
}

/// A source text with its name, which turns byte offsets into lines and
/// columns and renders diagnostics against it.
#[derive(Clone, Debug)]
pub struct SourceFile {
    pub name: String,
    pub text: String,
    line_starts: Vec<usize>,
}

impl SourceFile {
    pub fn new(name: impl Into<String>, text: impl Into<String>) -> SourceFile {
        let text = text.into();
        let line_starts = std::iter::once(0)
            .chain(text.char_indices().filter(|&(_, c)| c == '\n').map(|(i, _)| i + 1))
            .collect();
        SourceFile { name: name.into(), text, line_starts }
    }

    /// The line and column (both from 1, the column in characters) of a
    /// byte offset.
    pub fn line_col(&self, offset: usize) -> (u32, u32) {
        let offset = offset.min(self.text.len());
        let line = self.line_starts.partition_point(|&s| s <= offset) - 1;
        let start = self.line_starts[line];
        let column = self.text.get(start..offset).map_or(offset - start, |s| s.chars().count());
        (line as u32 + 1, column as u32 + 1)
    }

    /// The byte offset of a line and column (both from 1), if it is in the
    /// text: the inverse of `line_col`, for run-time errors that carry a
    /// line and column only.
    pub fn offset_of(&self, line: u32, column: u32) -> Option<usize> {
        let start = *self.line_starts.get(line.checked_sub(1)? as usize)?;
        let rest = &self.text[start..];
        let end = rest.find('\n').unwrap_or(rest.len());
        let col = column.checked_sub(1)? as usize;
        match rest[..end].char_indices().nth(col) {
            Some((i, _)) => Some(start + i),
            None if col == rest[..end].chars().count() => Some(start + end),
            None => None,
        }
    }

    /// The diagnostic as text: `error[kind]: message`, then
    /// `file:line:column`, the source line and a caret under the span.
    pub fn render(&self, d: &Diagnostic) -> String {
        let file = SimpleFile::new(self.name.as_str(), self.text.as_str());
        let clamp = |s: Span| {
            let start = floor_char_boundary(&self.text, s.start.min(self.text.len()));
            let end = floor_char_boundary(&self.text, s.end.clamp(start, self.text.len()));
            start..end
        };
        let mut labels = vec![Label::primary((), clamp(d.span))];
        labels.extend(d.labels.iter().map(|(s, m)| Label::secondary((), clamp(*s)).with_message(m.clone())));
        let report = Report::error()
            .with_code(d.kind.name())
            .with_message(d.message.clone())
            .with_labels(labels)
            .with_notes(d.notes.clone());
        let mut out = String::new();
        let config = Config::default();
        match term::emit_to_string(&mut out, &config, &file, &report) {
            Ok(()) => out,
            Err(_) => {
                // the spans are clamped into the text, so this is not
                // reached; the plain form still names the place
                let (l, c) = self.line_col(d.span.start);
                format!("{}:{l}:{c}: {d}\n", self.name)
            }
        }
    }
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_and_columns_round_trip() {
        let f = SourceFile::new("a.fut", "def x = 1\n  def y = é + 2\n");
        assert_eq!(f.line_col(0), (1, 1));
        assert_eq!(f.line_col(12), (2, 3));
        let e = f.text.find('+').unwrap();
        assert_eq!(f.line_col(e), (2, 13));
        assert_eq!(f.offset_of(2, 13), Some(e));
        assert_eq!(f.offset_of(9, 1), None);
    }

    #[test]
    fn rendering_names_the_place_with_a_caret() {
        let f = SourceFile::new("a.fut", "def main (x: i32) =\n  x + true\n");
        let s = f.text.find("true").unwrap();
        let d = Diagnostic::new(DiagKind::Type, Span::new(s, s + 4), "expected i32, found bool");
        let r = f.render(&d);
        assert!(r.contains("a.fut:2:7"), "{r}");
        assert!(r.contains("^^^^"), "{r}");
        assert!(r.contains("expected i32, found bool"), "{r}");
    }
}

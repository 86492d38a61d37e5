//! The lexer: source text to a vector of tokens, each with its byte span,
//! ending in one `Tok::Eof` (whose span is empty, at the end of the text).
//!
//! The token set is Futhark's, cut down to the core the parser accepts:
//! identifiers (a letter, or `_` and a letter or digit, then letters,
//! digits, `_` and `'`), the keywords, integer literals (decimal, `0x`,
//! `0b`, with `_` separators and an optional type suffix), decimal and
//! exponent float literals, a fixed set of operators and punctuation, and
//! `--` comments to the end of the line, which are skipped. Futhark lexes
//! any run of operator characters as one (user-definable) operator; here
//! only the built-in operators exist, so `*-` is two tokens, `*` and `-`.
//!
//! Whitespace is not a token, but the parser needs to know where it was:
//! `a[i]` indexes `a` while `a [i]` applies `a` to an array literal. Tokens
//! carry spans, and `Token::touches` says whether a token starts where the
//! previous one ended.
//!
//! Two fix-ups run after logos (Note [Numbers next to dots and letters]).

use crate::ast::{PrimType, Span};
use crate::diag::{DiagKind, Diagnostic};
use logos::Logos;
use std::fmt;

/// Why logos gave up on a piece of text.
#[derive(Clone, Debug, Default, PartialEq)]
pub enum LexError {
    /// A character that starts no token.
    #[default]
    Unknown,
    /// A literal whose value does not fit (the message says which).
    BadLiteral(String),
}

/// A token of the text language. Keywords and punctuation are unit
/// variants; names and literals carry their value.
#[derive(Logos, Clone, Debug, PartialEq)]
#[logos(error = LexError)]
#[logos(skip r"[ \t\r\n\f\v]+")]
#[logos(skip(r"--[^\n]*", allow_greedy = true))]
pub enum Tok {
    #[regex(r"[a-zA-Z][a-zA-Z0-9_']*|_[a-zA-Z0-9][a-zA-Z0-9_']*", |lex| lex.slice().to_string())]
    Ident(String),
    /// An integer and its suffix's type, if one was written.
    #[regex(r"[0-9][0-9_]*((i|u)(8|16|32|64))?", int_literal)]
    #[regex(r"0[xX][0-9a-fA-F][0-9a-fA-F_]*((i|u)(8|16|32|64))?", int_literal)]
    #[regex(r"0[bB][01][01_]*((i|u)(8|16|32|64))?", int_literal)]
    Int((i128, Option<PrimType>)),
    /// A float and its suffix's type, if one was written; an integer with
    /// a float suffix (`1f32`) is a float, as in Futhark.
    #[regex(r"[0-9][0-9_]*\.[0-9][0-9_]*([eE][+-]?[0-9]+)?(f16|f32|f64)?", float_literal)]
    #[regex(r"[0-9][0-9_]*[eE][+-]?[0-9]+(f16|f32|f64)?", float_literal)]
    #[regex(r"[0-9][0-9_]*(f16|f32|f64)", float_literal)]
    Float((f64, Option<PrimType>)),

    #[token("def")]
    Def,
    #[token("entry")]
    Entry,
    #[token("let")]
    Let,
    #[token("in")]
    In,
    #[token("if")]
    If,
    #[token("then")]
    Then,
    #[token("else")]
    Else,
    #[token("loop")]
    Loop,
    #[token("for")]
    For,
    #[token("while")]
    While,
    #[token("do")]
    Do,
    #[token("with")]
    With,
    #[token("match")]
    Match,
    #[token("case")]
    Case,
    #[token("type")]
    Type,
    #[token("true")]
    True,
    #[token("false")]
    False,

    #[token("+")]
    Plus,
    #[token("-")]
    Minus,
    #[token("*")]
    Star,
    #[token("/")]
    Slash,
    #[token("%")]
    Percent,
    #[token("//")]
    SlashSlash,
    #[token("%%")]
    PercentPercent,
    #[token("**")]
    StarStar,
    #[token("&")]
    Amp,
    #[token("|")]
    Bar,
    #[token("^")]
    Caret,
    #[token("<<")]
    Shl,
    #[token(">>")]
    Shr,
    #[token("==")]
    EqEq,
    #[token("!=")]
    NotEq,
    #[token("<")]
    Lt,
    #[token("<=")]
    Le,
    #[token(">")]
    Gt,
    #[token(">=")]
    Ge,
    #[token("&&")]
    AndAnd,
    #[token("||")]
    OrOr,
    #[token("!")]
    Bang,
    #[token("|>")]
    PipeRight,
    #[token("<|")]
    PipeLeft,
    #[token(">->")]
    ComposeRight,
    #[token("<-<")]
    ComposeLeft,

    #[token("=")]
    Eq,
    #[token(":")]
    Colon,
    #[token("->")]
    Arrow,
    #[token("\\")]
    Backslash,
    #[token(",")]
    Comma,
    #[token(".")]
    Dot,
    #[token("..")]
    DotDot,
    #[token("_")]
    Underscore,
    #[token("(")]
    LParen,
    #[token(")")]
    RParen,
    #[token("[")]
    LBracket,
    #[token("]")]
    RBracket,
    #[token("{")]
    LBrace,
    #[token("}")]
    RBrace,
    #[token("'")]
    Apostrophe,
    #[token("'^")]
    ApostropheHat,
    #[token("`")]
    Backtick,

    /// The end of the text: the last token of every lexed source.
    Eof,
}

impl Tok {
    /// How an error message names the token: keywords and symbols quoted,
    /// names and literals by their kind and text.
    pub fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("identifier `{s}`"),
            Tok::Int(..) | Tok::Float(..) => format!("literal `{self}`"),
            Tok::Eof => "end of input".to_string(),
            t => format!("`{t}`"),
        }
    }
}

impl fmt::Display for Tok {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Tok::Ident(s) => return f.write_str(s),
            Tok::Int((v, suffix)) => return write!(f, "{v}{}", suffix.map_or("", PrimType::name)),
            Tok::Float((v, suffix)) => return write!(f, "{v:?}{}", suffix.map_or("", PrimType::name)),
            Tok::Def => "def",
            Tok::Entry => "entry",
            Tok::Let => "let",
            Tok::In => "in",
            Tok::If => "if",
            Tok::Then => "then",
            Tok::Else => "else",
            Tok::Loop => "loop",
            Tok::For => "for",
            Tok::While => "while",
            Tok::Do => "do",
            Tok::With => "with",
            Tok::Match => "match",
            Tok::Case => "case",
            Tok::Type => "type",
            Tok::True => "true",
            Tok::False => "false",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Star => "*",
            Tok::Slash => "/",
            Tok::Percent => "%",
            Tok::SlashSlash => "//",
            Tok::PercentPercent => "%%",
            Tok::StarStar => "**",
            Tok::Amp => "&",
            Tok::Bar => "|",
            Tok::Caret => "^",
            Tok::Shl => "<<",
            Tok::Shr => ">>",
            Tok::EqEq => "==",
            Tok::NotEq => "!=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::AndAnd => "&&",
            Tok::OrOr => "||",
            Tok::Bang => "!",
            Tok::PipeRight => "|>",
            Tok::PipeLeft => "<|",
            Tok::ComposeRight => ">->",
            Tok::ComposeLeft => "<-<",
            Tok::Eq => "=",
            Tok::Colon => ":",
            Tok::Arrow => "->",
            Tok::Backslash => "\\",
            Tok::Comma => ",",
            Tok::Dot => ".",
            Tok::DotDot => "..",
            Tok::Underscore => "_",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::LBracket => "[",
            Tok::RBracket => "]",
            Tok::LBrace => "{",
            Tok::RBrace => "}",
            Tok::Apostrophe => "'",
            Tok::ApostropheHat => "'^",
            Tok::Backtick => "`",
            Tok::Eof => "end of input",
        };
        f.write_str(s)
    }
}

/// A token and the bytes of the source it was read from.
#[derive(Clone, Debug, PartialEq)]
pub struct Token {
    pub tok: Tok,
    pub span: Span,
}

impl Token {
    /// Whether this token starts exactly where `prev` ended, with no
    /// whitespace or comment between them.
    pub fn touches(&self, prev: &Token) -> bool {
        prev.span.end == self.span.start
    }
}

/// Splits a literal's text into its digits (with `_` removed) and its
/// suffix's type, if any. `suffix_at` finds where the suffix starts.
fn split_suffix(text: &str, suffix_at: impl Fn(char) -> bool) -> (String, Option<PrimType>) {
    match text.find(suffix_at) {
        Some(i) => (text[..i].replace('_', ""), PrimType::from_name(&text[i..])),
        None => (text.replace('_', ""), None),
    }
}

fn int_literal(lex: &mut logos::Lexer<Tok>) -> Result<(i128, Option<PrimType>), LexError> {
    let text = lex.slice();
    let (radix, body) = match text.get(..2) {
        Some("0x" | "0X") => (16, &text[2..]),
        Some("0b" | "0B") => (2, &text[2..]),
        _ => (10, text),
    };
    // hex digits include `f`, but no float suffix follows an integer
    // written in hex or binary, so the suffix starts at `i` or `u`
    let (digits, suffix) = split_suffix(body, |c| c == 'i' || c == 'u');
    let value = i128::from_str_radix(&digits, radix)
        .map_err(|_| LexError::BadLiteral(format!("the integer literal `{text}` is too large")))?;
    Ok((value, suffix))
}

fn float_literal(lex: &mut logos::Lexer<Tok>) -> Result<(f64, Option<PrimType>), LexError> {
    let text = lex.slice();
    let (digits, suffix) = split_suffix(text, |c| c == 'f');
    match digits.parse::<f64>() {
        Ok(v) if v.is_finite() => Ok((v, suffix)),
        _ => Err(LexError::BadLiteral(format!("the float literal `{text}` is out of range"))),
    }
}

/// Reads the whole text into tokens, ending with `Tok::Eof`, or reports
/// the first character that starts no token.
pub fn lex(text: &str) -> Result<Vec<Token>, Diagnostic> {
    let mut tokens: Vec<Token> = Vec::new();
    let mut lexer = Tok::lexer(text);
    while let Some(next) = lexer.next() {
        let span = Span::new(lexer.span().start, lexer.span().end);
        let tok = match next {
            Ok(tok) => tok,
            Err(LexError::BadLiteral(message)) => {
                return Err(Diagnostic::new(DiagKind::Parse, span, message))
            }
            Err(LexError::Unknown) => {
                let c = text.get(span.start..).and_then(|s| s.chars().next()).unwrap_or('?');
                let span = Span::new(span.start, span.start + c.len_utf8());
                return Err(Diagnostic::new(DiagKind::Parse, span, format!("unexpected character `{c}`")));
            }
        };
        let token = Token { tok, span };
        if let Some(prev) = tokens.last() {
            if is_number(&prev.tok) && matches!(token.tok, Tok::Ident(_)) && token.touches(prev) {
                return Err(Diagnostic::new(
                    DiagKind::Parse,
                    prev.span.to(token.span),
                    format!("`{}` is not a number: unknown suffix", &text[prev.span.start..token.span.end]),
                ));
            }
            if matches!(prev.tok, Tok::Dot) && token.touches(prev) {
                if let Some(parts) = split_field_pair(text, &token) {
                    tokens.extend(parts);
                    continue;
                }
            }
        }
        tokens.push(token);
    }
    tokens.push(Token { tok: Tok::Eof, span: Span::new(text.len(), text.len()) });
    Ok(tokens)
}

fn is_number(t: &Tok) -> bool {
    matches!(t, Tok::Int(..) | Tok::Float(..))
}

// Note [Numbers next to dots and letters]
// Two places where the longest match reads the text differently from
// Futhark:
//
// * `t.0.1` projects field 0 then field 1 of a nested tuple, but after the
//   first `.` the longest match is the float `0.1`. A float of the plain
//   form `digits.digits` that follows a `.` with no space is split back
//   into `0`, `.`, `1`.
// * `1x`, `1.5i32` and `0x` are not numbers with an unknown suffix to
//   Futhark but errors; the longest match would read a number followed by
//   a name, which the parser would take for an application. A number
//   directly followed by a name is reported here instead.

/// The tokens `0`, `.`, `1` for a float token `0.1` that directly follows
/// a `.` (Note [Numbers next to dots and letters]).
fn split_field_pair(text: &str, token: &Token) -> Option<[Token; 3]> {
    if !matches!(token.tok, Tok::Float((_, None))) {
        return None;
    }
    let s = &text[token.span.start..token.span.end];
    let dot = s.find('.')?;
    let (a, b) = (&s[..dot], &s[dot + 1..]);
    let is_field = |p: &str| !p.is_empty() && p.bytes().all(|c| c.is_ascii_digit());
    if !is_field(a) || !is_field(b) {
        return None;
    }
    let at = token.span.start;
    let field = |p: &str, start: usize| {
        p.parse::<i128>()
            .ok()
            .map(|v| Token { tok: Tok::Int((v, None)), span: Span::new(start, start + p.len()) })
    };
    Some([
        field(a, at)?,
        Token { tok: Tok::Dot, span: Span::new(at + dot, at + dot + 1) },
        field(b, at + dot + 1)?,
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        lex(s).unwrap().into_iter().map(|t| t.tok).collect()
    }

    fn id(s: &str) -> Tok {
        Tok::Ident(s.to_string())
    }

    #[test]
    fn names_keywords_and_qualified_names_are_separate_tokens() {
        assert_eq!(
            toks("def x' _y f32.sqrt let"),
            vec![Tok::Def, id("x'"), id("_y"), id("f32"), Tok::Dot, id("sqrt"), Tok::Let, Tok::Eof]
        );
    }

    #[test]
    fn integer_literals_in_every_base_with_suffixes() {
        assert_eq!(
            toks("42 1_000 0xff 0b1010 7i8 0xffu8 3u64"),
            vec![
                Tok::Int((42, None)),
                Tok::Int((1000, None)),
                Tok::Int((255, None)),
                Tok::Int((10, None)),
                Tok::Int((7, Some(PrimType::I8))),
                Tok::Int((255, Some(PrimType::U8))),
                Tok::Int((3, Some(PrimType::U64))),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn float_literals_decimal_exponent_and_suffixed() {
        assert_eq!(
            toks("1.5 1e3 1.5e-3 2.0f32 1f64 1_0.2_5"),
            vec![
                Tok::Float((1.5, None)),
                Tok::Float((1000.0, None)),
                Tok::Float((0.0015, None)),
                Tok::Float((2.0, Some(PrimType::F32))),
                Tok::Float((1.0, Some(PrimType::F64))),
                Tok::Float((10.25, None)),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn operators_take_the_longest_match() {
        assert_eq!(
            toks("|> <| >-> <-< ** // %% << >> <= >= == != && || -> .. x>-1"),
            vec![
                Tok::PipeRight,
                Tok::PipeLeft,
                Tok::ComposeRight,
                Tok::ComposeLeft,
                Tok::StarStar,
                Tok::SlashSlash,
                Tok::PercentPercent,
                Tok::Shl,
                Tok::Shr,
                Tok::Le,
                Tok::Ge,
                Tok::EqEq,
                Tok::NotEq,
                Tok::AndAnd,
                Tok::OrOr,
                Tok::Arrow,
                Tok::DotDot,
                id("x"),
                Tok::Gt,
                Tok::Minus,
                Tok::Int((1, None)),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn comments_run_to_the_end_of_the_line() {
        assert_eq!(toks("a -- b c\n d"), vec![id("a"), id("d"), Tok::Eof]);
    }

    #[test]
    fn type_parameters_and_ranges_lex_apart_from_numbers() {
        assert_eq!(toks("'a '^b"), vec![Tok::Apostrophe, id("a"), Tok::ApostropheHat, id("b"), Tok::Eof]);
        assert_eq!(toks("1..2"), vec![Tok::Int((1, None)), Tok::DotDot, Tok::Int((2, None)), Tok::Eof]);
    }

    #[test]
    fn nested_tuple_projection_is_not_a_float() {
        assert_eq!(
            toks("t.0.1 x.1"),
            vec![
                id("t"),
                Tok::Dot,
                Tok::Int((0, None)),
                Tok::Dot,
                Tok::Int((1, None)),
                id("x"),
                Tok::Dot,
                Tok::Int((1, None)),
                Tok::Eof
            ]
        );
    }

    #[test]
    fn spans_are_byte_ranges_and_eof_sits_at_the_end() {
        let ts = lex("ab  + 1").unwrap();
        assert_eq!(ts[0].span, Span::new(0, 2));
        assert_eq!(ts[1].span, Span::new(4, 5));
        assert_eq!(ts[3].span, Span::new(7, 7));
    }

    #[test]
    fn an_unknown_character_is_reported_where_it_is() {
        let e = lex("a + $b").unwrap_err();
        assert_eq!(e.kind, DiagKind::Parse);
        assert_eq!(e.span, Span::new(4, 5));
        let e = lex("a é").unwrap_err();
        assert_eq!(e.span, Span::new(2, 4));
    }

    #[test]
    fn a_number_with_an_unknown_suffix_is_an_error() {
        assert!(lex("1x").is_err());
        assert!(lex("1.5i32").is_err());
        assert!(lex("0x").is_err());
        assert!(lex("99999999999999999999999999999999999999999").is_err());
    }
}

//! The parser: tokens to the syntax tree (`ast`), by recursive descent,
//! with precedence climbing for the binary operators
//! (Note [Operator precedence]).
//!
//! The grammar is Futhark's, cut down to the core that `ast` can hold:
//! declarations (`def`, `entry`, `let` as the old spelling of `def`,
//! `type`), patterns and types in `pat_type`, expressions in `expr`. Every
//! node gets the span of the text it was read from; every type in the tree
//! is `Type::Unknown` (Note [One tree, filled in by stages] in `ast`).
//!
//! The parser desugars a few forms that `ast` has no node for
//! (Note [What the parser desugars]), so that later stages see one way of
//! writing each thing.
//!
//! Errors are `Diagnostic`s of kind `Parse` at the offending token, saying
//! what was expected and what was found. The parser stops at the first
//! error. It never panics, and it bounds its own recursion: input nested
//! more than `MAX_DEPTH` levels deep is an error "nesting too deep" rather
//! than a stack overflow (Note [Bounded recursion]).

mod expr;
mod pat_type;

pub(crate) use expr::{binop_precedence, COMPOSE_PRECEDENCE, WITH_PRECEDENCE};

use crate::ast::{Decl, Expr, Ident, Program, Span, Type, TypeDecl, TypeParam, ValueDecl};
use crate::diag::{DiagKind, Diagnostic, SourceFile};
use crate::lexer::{lex, Tok, Token};

// Note [What the parser desugars]
// * `x |> f` and `f <| x` are the application `f x`.
// * ``x `f` y`` is `f x y`; ``(x `f`)`` is `f x` and ``(`f`)`` is `f`.
// * `f >-> g` and `g <-< f` are the lambda `\x -> g (f x)`, whose parameter
//   is named `COMPOSE_PARAM`: a name no identifier can spell, so that it
//   captures no variable of `f` or `g`. The printer (`pretty`) recognises
//   exactly this shape and prints it back as `f >-> g`. One name serves
//   every composition: an inner composition binds it again, and no user
//   expression has it free.
// * `let a[i] = v in e` is `let a = a with [i] = v in e`.
// * A record field `{x}` is `{x = x}`; a record pattern field `{x}` is
//   `{x = x}` and `{x: t}` is `{x = (x: t)}`.
// * `(e)` is `e` itself (its span widened to the parentheses).
// Sections of `|>`, `<|`, `>->` and `<-<`, and right sections of a
// backticked function, have no node and are reported as unsupported.

/// The parameter name of the lambda that `>->` and `<-<` desugar to
/// (Note [What the parser desugars]).
pub const COMPOSE_PARAM: &str = "#x";

// Note [Bounded recursion]
// Every recursive path of the parser goes through `Parser::enter`, which
// counts the depth of the current phrase and fails past `MAX_DEPTH`:
// each operand (`unary`: a parenthesised expression, a prefix operator, a
// lambda's or a branch's body are each one level), each right-hand side of
// a binary operator (`operand`), each type (`type_exp`, `type_term`) and
// each pattern (`pat`). Chains that are long rather than deep do not
// recurse: `let` sequences, `match` cases, application and
// left-associative operators are loops.
//
// The limit is set by the stack. A level of expression nesting costs
// between 0.5 and 4 KiB of stack in an optimised or test build (measured:
// `{a = {a = ...` is the dearest) and up to 11 KiB unoptimised, so 256
// levels stay within a 2 MiB test thread in the first case and within an
// 8 MiB main thread in the second, while no written program comes near
// it. To keep frames small, the parsing functions pass expressions and
// errors boxed: an `Expr` is over 300 bytes, and a frame holding one by
// value on every level multiplied the cost of a level by four.

/// How deep a phrase may nest (Note [Bounded recursion]).
pub const MAX_DEPTH: usize = 256;

// Errors are boxed, as expressions are (Note [Bounded recursion]): every
// call's result is on the stack, and an error is rare.
type PResult<T> = Result<T, Box<Diagnostic>>;

/// Parses a whole source file.
pub fn parse_program(file: &SourceFile) -> Result<Program, Diagnostic> {
    let tokens = lex(&file.text)?;
    let mut p = Parser::new(&tokens);
    let mut decls = Vec::new();
    while *p.peek() != Tok::Eof {
        decls.push(p.decl().map_err(|d| *d)?);
    }
    Ok(Program { decls })
}

/// Parses a source text holding one expression (for tests and tools).
pub fn parse_expr(file: &SourceFile) -> Result<Expr, Diagnostic> {
    let tokens = lex(&file.text)?;
    let mut p = Parser::new(&tokens);
    let e = p.exp().map_err(|d| *d)?;
    p.expect(&Tok::Eof, "").map_err(|d| *d)?;
    Ok(*e)
}

/// The state of one parse: the tokens (ending in `Tok::Eof`), the next
/// one, and how deep the current phrase is nested.
struct Parser<'t> {
    tokens: &'t [Token],
    pos: usize,
    depth: usize,
}

impl<'t> Parser<'t> {
    fn new(tokens: &'t [Token]) -> Parser<'t> {
        debug_assert!(matches!(tokens.last(), Some(Token { tok: Tok::Eof, .. })));
        Parser { tokens, pos: 0, depth: 0 }
    }

    fn token_at(&self, ahead: usize) -> &'t Token {
        let last = self.tokens.len() - 1;
        &self.tokens[(self.pos + ahead).min(last)]
    }

    fn peek(&self) -> &'t Tok {
        &self.token_at(0).tok
    }

    fn peek_at(&self, ahead: usize) -> &'t Tok {
        &self.token_at(ahead).tok
    }

    /// The span of the next token.
    fn span(&self) -> Span {
        self.token_at(0).span
    }

    /// Consumes the next token (never past the end).
    fn bump(&mut self) -> &'t Token {
        let t = self.token_at(0);
        if self.pos + 1 < self.tokens.len() {
            self.pos += 1;
        }
        t
    }

    fn eat(&mut self, tok: &Tok) -> bool {
        if self.peek() == tok {
            self.bump();
            true
        } else {
            false
        }
    }

    /// Whether the next token follows the previous one with no space
    /// between them (`a[i]` against `a [i]`).
    fn touches_previous(&self) -> bool {
        self.pos > 0 && self.token_at(0).touches(&self.tokens[self.pos - 1])
    }

    /// An error at the next token: "expected WHAT, found TOKEN".
    fn expected(&self, what: &str) -> Box<Diagnostic> {
        let found = self.peek().describe();
        Box::new(Diagnostic::new(DiagKind::Parse, self.span(), format!("expected {what}, found {found}")))
    }

    /// Consumes `tok`, or fails saying it was expected (and, when `after`
    /// is not empty, after what).
    fn expect(&mut self, tok: &Tok, after: &str) -> PResult<Span> {
        if self.peek() == tok {
            return Ok(self.bump().span);
        }
        let what = if *tok == Tok::Eof { "end of input".to_string() } else { format!("`{tok}`") };
        Err(if after.is_empty() {
            self.expected(&what)
        } else {
            self.expected(&format!("{what} after {after}"))
        })
    }

    fn ident(&mut self, what: &str) -> PResult<Ident> {
        match self.peek() {
            Tok::Ident(name) => {
                let span = self.bump().span;
                Ok(Ident { name: name.clone(), span })
            }
            _ => Err(self.expected(what)),
        }
    }

    /// Goes one level deeper, or fails past `MAX_DEPTH` (Note [Bounded
    /// recursion]). Every successful return undoes it with `leave`; an
    /// error ends the parse, so error paths need not.
    fn enter(&mut self) -> PResult<()> {
        if self.depth >= MAX_DEPTH {
            return Err(Box::new(Diagnostic::new(
                DiagKind::Parse,
                self.span(),
                format!("nesting too deep (more than {MAX_DEPTH} levels)"),
            )));
        }
        self.depth += 1;
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// Items separated by commas up to the closing token `close`, which is
    /// consumed; the opening token is already consumed. A comma before
    /// `close` is allowed when `trailing` is. Returns the items and the
    /// span of `close`.
    fn comma_list<T>(
        &mut self,
        close: &Tok,
        trailing: bool,
        mut item: impl FnMut(&mut Self) -> PResult<T>,
    ) -> PResult<(Vec<T>, Span)> {
        let mut items = Vec::new();
        if self.peek() == close {
            return Ok((items, self.bump().span));
        }
        loop {
            items.push(item(self)?);
            if self.eat(&Tok::Comma) {
                if trailing && self.peek() == close {
                    return Ok((items, self.bump().span));
                }
                continue;
            }
            if self.peek() == close {
                return Ok((items, self.bump().span));
            }
            return Err(self.expected(&format!("`,` or `{close}`")));
        }
    }

    /// The components of a tuple after its first component and comma, up
    /// to and with the closing `)`: at least one more, and a trailing
    /// comma allowed. Returns them and the span of `)`.
    fn tuple_tail<T>(&mut self, mut item: impl FnMut(&mut Self) -> PResult<T>) -> PResult<(Vec<T>, Span)> {
        let mut items = vec![item(self)?];
        while self.eat(&Tok::Comma) {
            if *self.peek() == Tok::RParen {
                break;
            }
            items.push(item(self)?);
        }
        if *self.peek() != Tok::RParen {
            return Err(self.expected("`,` or `)`"));
        }
        Ok((items, self.bump().span))
    }

    fn decl(&mut self) -> PResult<Decl> {
        match self.peek() {
            Tok::Def | Tok::Entry | Tok::Let => self.value_decl().map(Decl::Value),
            Tok::Type => self.type_decl().map(Decl::Type),
            _ => Err(self.expected("a declaration (`def`, `entry` or `type`)")),
        }
    }

    /// `def name 'a [n] p q: t = body`, also with `entry` or `let`.
    fn value_decl(&mut self) -> PResult<ValueDecl> {
        let start = self.span();
        let entry = *self.peek() == Tok::Entry;
        self.bump();
        let name = self.ident("the name of the definition")?;
        let type_params = self.type_params()?;
        let mut params = Vec::new();
        while self.starts_param() {
            params.push(self.param_pat()?);
        }
        let ret = if self.eat(&Tok::Colon) { Some(self.type_exp()?) } else { None };
        if *self.peek() != Tok::Eq {
            let what = if ret.is_some() { "`=`" } else { "a parameter, `:` or `=`" };
            return Err(self.expected(what));
        }
        self.bump();
        let body = self.exp()?;
        let span = start.to(body.span);
        Ok(ValueDecl { name, entry, type_params, params, ret, body: *body, span, ty: Type::Unknown })
    }

    /// `type name 'a [n] = t`.
    fn type_decl(&mut self) -> PResult<TypeDecl> {
        let start = self.bump().span;
        let name = self.ident("the name of the type")?;
        let params = self.type_params()?;
        self.expect(&Tok::Eq, "the type's name and parameters")?;
        let def = self.type_exp()?;
        let span = start.to(def.span());
        Ok(TypeDecl { name, params, def, span })
    }

    /// Zero or more of `'a`, `'^a` and `[n]`.
    fn type_params(&mut self) -> PResult<Vec<TypeParam>> {
        let mut params = Vec::new();
        loop {
            match self.peek() {
                Tok::Apostrophe | Tok::ApostropheHat => {
                    let lifted = *self.peek() == Tok::ApostropheHat;
                    self.bump();
                    let name = self.ident("the name of a type parameter")?;
                    params.push(TypeParam::Type { name, lifted });
                }
                Tok::LBracket => {
                    self.bump();
                    let name = self.ident("the name of a size parameter")?;
                    self.expect(&Tok::RBracket, "the size parameter")?;
                    params.push(TypeParam::Size(name));
                }
                _ => return Ok(params),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PROGRAMS: [&str; 6] = [
        include_str!("../tests/programs/dotp.fut"),
        include_str!("../tests/programs/blackscholes.fut"),
        include_str!("../tests/programs/mandelbrot.fut"),
        include_str!("../tests/programs/nbody.fut"),
        include_str!("../tests/programs/higher_order.fut"),
        include_str!("../tests/programs/misc.fut"),
    ];

    #[test]
    fn every_level_entered_is_left_after_each_declaration() {
        // a level not left would pile up over a long program and end in a
        // false "nesting too deep"
        for src in PROGRAMS {
            let tokens = lex(src).unwrap();
            let mut p = Parser::new(&tokens);
            while *p.peek() != Tok::Eof {
                p.decl().unwrap();
                assert_eq!(p.depth, 0);
            }
        }
    }

    #[test]
    fn a_long_program_is_not_too_deep() {
        let one = PROGRAMS.concat();
        let src = one.repeat(40);
        let file = SourceFile::new("long.fut", src);
        assert_eq!(
            parse_program(&file).unwrap().decls.len(),
            40 * parse_program(&SourceFile::new("one", one)).unwrap().decls.len()
        );
    }

    #[test]
    fn the_composition_parameter_cannot_be_written() {
        assert!(lex(COMPOSE_PARAM).is_err());
    }

    #[test]
    fn the_parser_never_reads_past_the_end() {
        let tokens = lex("x").unwrap();
        let mut p = Parser::new(&tokens);
        p.bump();
        p.bump();
        p.bump();
        assert_eq!(*p.peek(), Tok::Eof);
        assert_eq!(*p.peek_at(5), Tok::Eof);
    }
}

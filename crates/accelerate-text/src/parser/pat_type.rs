//! Patterns and types as written.
//!
//! Patterns come in two flavours, as in Futhark: a parameter (of a
//! definition, a local function or a lambda) is a name, `_`, or a
//! parenthesised, tuple or record pattern; a pattern of `let`, `loop` and
//! `case` may also be a literal and may carry a type (`x: i32`) without
//! parentheses.
//!
//! Types: `t -> u` is right-associative and binds loosest; `(x: t) -> u`
//! names the parameter; an abbreviation's arguments follow its name
//! (`vec f32 [n]`), each a size in brackets or a type atom, so an array
//! argument needs parentheses (`vec ([n]f32)`); `[d]t` takes the rest of
//! an application as its element (`[n]vec f32` is `[n](vec f32)`).

use super::{PResult, Parser};
use crate::ast::{Ident, Literal, Pat, PatKind, PrimType, SizeExp, Span, TypeArgExp, TypeExp};
use crate::diag::{DiagKind, Diagnostic};
use crate::lexer::Tok;

impl Parser<'_> {
    /// Whether the next token can start a parameter pattern.
    pub(super) fn starts_param(&self) -> bool {
        matches!(self.peek(), Tok::Ident(_) | Tok::Underscore | Tok::LParen | Tok::LBrace)
    }

    /// A pattern of `let`, `loop` or `case`: `p` or `p: t`.
    pub(super) fn pat(&mut self) -> PResult<Pat> {
        self.enter()?;
        let mut p = self.inner_pat()?;
        if self.eat(&Tok::Colon) {
            let t = self.type_exp()?;
            let span = p.span.to(t.span());
            p = Pat::new(PatKind::Ascribe(Box::new(p), t), span);
        }
        self.leave();
        Ok(p)
    }

    /// A parameter: a pattern that is a name, `_`, or in brackets.
    pub(super) fn param_pat(&mut self) -> PResult<Pat> {
        if !self.starts_param() {
            return Err(self.expected("a parameter"));
        }
        self.inner_pat()
    }

    fn inner_pat(&mut self) -> PResult<Pat> {
        let start = self.span();
        match self.peek() {
            Tok::Ident(_) => {
                let id = self.ident("a pattern")?;
                let span = id.span;
                Ok(Pat::new(PatKind::Id(id), span))
            }
            Tok::Underscore => Ok(Pat::new(PatKind::Wildcard, self.bump().span)),
            Tok::LParen => {
                self.bump();
                if *self.peek() == Tok::RParen {
                    let end = self.bump().span;
                    return Ok(Pat::new(PatKind::Tuple(Vec::new()), start.to(end)));
                }
                let mut first = self.pat()?;
                if *self.peek() == Tok::RParen {
                    first.span = start.to(self.bump().span);
                    return Ok(first);
                }
                self.expect(&Tok::Comma, "the pattern")?;
                let (rest, end) = self.tuple_tail(|p| p.pat())?;
                let mut ps = vec![first];
                ps.extend(rest);
                Ok(Pat::new(PatKind::Tuple(ps), start.to(end)))
            }
            Tok::LBrace => {
                self.bump();
                let (fields, end) = self.comma_list(&Tok::RBrace, true, |p| p.record_pat_field())?;
                Ok(Pat::new(PatKind::Record(fields), start.to(end)))
            }
            Tok::Minus if matches!(self.peek_at(1), Tok::Int(_) | Tok::Float(_)) => {
                self.bump();
                let (lit, end) = self.literal()?;
                let lit = match lit {
                    Literal::Int(v, t) => Literal::Int(-v, t),
                    Literal::Float(v, t) => Literal::Float(-v, t),
                    Literal::Bool(b) => Literal::Bool(b),
                };
                Ok(Pat::new(PatKind::Lit(lit), start.to(end)))
            }
            Tok::Int(_) | Tok::Float(_) | Tok::True | Tok::False => {
                let (lit, span) = self.literal()?;
                Ok(Pat::new(PatKind::Lit(lit), span))
            }
            _ => Err(self.expected("a pattern")),
        }
    }

    /// `x`, `x = p` or `x: t` in a record pattern.
    fn record_pat_field(&mut self) -> PResult<(Ident, Pat)> {
        let field = self.field_id()?;
        if self.eat(&Tok::Eq) {
            let p = self.pat()?;
            return Ok((field, p));
        }
        if !field.name.starts_with(|c: char| c.is_ascii_digit()) {
            let var = Pat::new(PatKind::Id(field.clone()), field.span);
            if self.eat(&Tok::Colon) {
                let t = self.type_exp()?;
                let span = field.span.to(t.span());
                return Ok((field, Pat::new(PatKind::Ascribe(Box::new(var), t), span)));
            }
            return Ok((field, var));
        }
        Err(self.expected("`=` after a numbered field"))
    }

    /// A literal token as a `Literal`, with its span.
    pub(super) fn literal(&mut self) -> PResult<(Literal, Span)> {
        let lit = match self.peek() {
            Tok::Int((v, t)) => Literal::Int(*v, *t),
            Tok::Float((v, t)) => Literal::Float(*v, *t),
            Tok::True => Literal::Bool(true),
            Tok::False => Literal::Bool(false),
            _ => return Err(self.expected("a literal")),
        };
        Ok((lit, self.bump().span))
    }

    /// A field name: a name, or a number for the fields of tuples.
    pub(super) fn field_id(&mut self) -> PResult<Ident> {
        match self.peek() {
            Tok::Int((v, None)) => {
                let span = self.bump().span;
                Ok(Ident { name: v.to_string(), span })
            }
            _ => self.ident("a field name"),
        }
    }

    /// A type: `t`, `t -> u` or `(x: t) -> u`.
    pub(super) fn type_exp(&mut self) -> PResult<TypeExp> {
        self.enter()?;
        let t = self.type_exp_unbounded()?;
        self.leave();
        Ok(t)
    }

    fn type_exp_unbounded(&mut self) -> PResult<TypeExp> {
        let start = self.span();
        if *self.peek() == Tok::LParen
            && matches!(self.peek_at(1), Tok::Ident(_))
            && *self.peek_at(2) == Tok::Colon
        {
            self.bump();
            let name = self.ident("a parameter name")?;
            self.bump();
            let param = self.type_exp()?;
            self.expect(&Tok::RParen, "the parameter's type")?;
            self.expect(&Tok::Arrow, "a named parameter `(x: t)`")?;
            let result = self.type_exp()?;
            let span = start.to(result.span());
            return Ok(TypeExp::Arrow(Some(name), Box::new(param), Box::new(result), span));
        }
        let t = self.type_term()?;
        if self.eat(&Tok::Arrow) {
            let result = self.type_exp()?;
            let span = t.span().to(result.span());
            return Ok(TypeExp::Arrow(None, Box::new(t), Box::new(result), span));
        }
        Ok(t)
    }

    /// A type without a top-level arrow: an atom, an abbreviation applied
    /// to its arguments, or an array of such.
    pub(super) fn type_term(&mut self) -> PResult<TypeExp> {
        self.enter()?;
        let t = self.type_term_unbounded()?;
        self.leave();
        Ok(t)
    }

    fn type_term_unbounded(&mut self) -> PResult<TypeExp> {
        let Tok::Ident(_) = self.peek() else {
            return self.type_atom();
        };
        let name = self.ident("a type")?;
        let mut args = Vec::new();
        loop {
            match self.peek() {
                Tok::LBracket => args.push(TypeArgExp::Size(self.size_exp()?)),
                Tok::Ident(_) => {
                    let id = self.ident("a type")?;
                    args.push(TypeArgExp::Type(TypeExp::Name(id, Vec::new())));
                }
                Tok::LParen | Tok::LBrace => args.push(TypeArgExp::Type(self.type_atom()?)),
                _ => return Ok(TypeExp::Name(name, args)),
            }
        }
    }

    fn type_atom(&mut self) -> PResult<TypeExp> {
        let start = self.span();
        match self.peek() {
            Tok::Ident(_) => {
                let id = self.ident("a type")?;
                Ok(TypeExp::Name(id, Vec::new()))
            }
            Tok::LParen => {
                self.bump();
                if *self.peek() == Tok::RParen {
                    let end = self.bump().span;
                    return Ok(TypeExp::Tuple(Vec::new(), start.to(end)));
                }
                let first = self.type_exp()?;
                if self.eat(&Tok::RParen) {
                    return Ok(first);
                }
                self.expect(&Tok::Comma, "the type")?;
                let (rest, end) = self.tuple_tail(|p| p.type_exp())?;
                let mut ts = vec![first];
                ts.extend(rest);
                Ok(TypeExp::Tuple(ts, start.to(end)))
            }
            Tok::LBrace => {
                self.bump();
                let (fields, end) = self.comma_list(&Tok::RBrace, true, |p| {
                    let field = p.field_id()?;
                    p.expect(&Tok::Colon, "the field name")?;
                    Ok((field, p.type_exp()?))
                })?;
                Ok(TypeExp::Record(fields, start.to(end)))
            }
            Tok::LBracket => {
                let size = self.size_exp()?;
                let elem = self.type_term()?;
                let span = start.to(elem.span());
                Ok(TypeExp::Array(size, Box::new(elem), span))
            }
            _ => Err(self.expected("a type")),
        }
    }

    /// `[]`, `[3]` or `[n]`.
    fn size_exp(&mut self) -> PResult<SizeExp> {
        let start = self.expect(&Tok::LBracket, "")?;
        match self.peek() {
            Tok::RBracket => Ok(SizeExp::Any(start.to(self.bump().span))),
            Tok::Int((v, None | Some(PrimType::I64))) => {
                let at = self.bump().span;
                let n = i64::try_from(*v)
                    .map_err(|_| Diagnostic::new(DiagKind::Parse, at, "the size is too large"))?;
                let end = self.expect(&Tok::RBracket, "the size")?;
                Ok(SizeExp::Const(n, start.to(end)))
            }
            Tok::Ident(_) => {
                let id = self.ident("a size")?;
                self.expect(&Tok::RBracket, "the size")?;
                Ok(SizeExp::Var(id))
            }
            _ => Err(self.expected("a size (a name or a number) or `]`")),
        }
    }
}

//! Expressions, in layers (Note [Operator precedence]): `exp` (with a
//! type ascription `e : t`), `binary` (infix operators by precedence
//! climbing), `unary` (`-e`, `!e`, and the block expressions `if`, `let`,
//! `loop`, `match` and `\`, which extend as far right as they can), `apply`
//! (juxtaposition) and `atom` (literals, names, brackets, then `.x`
//! projections and `[i]` indexing).

use super::{PResult, Parser, COMPOSE_PARAM};
use crate::ast::{
    BinOp, DimIndex, Expr, ExprKind, Ident, LoopForm, Pat, PatKind, PrimType, Span, TypeExp, TypeParam,
};
use crate::diag::{DiagKind, Diagnostic};
use crate::lexer::Tok;

// Note [Operator precedence]
// Futhark's table (its parser's precedence declarations), loosest first;
// every operator is left-associative except `<|`:
//
//    1  e : t          (only in `exp`, not inside an index)
//    2  `f`            (a backticked function)
//    3  e with [i] = v
//    4  |>
//    5  <|             (right)
//    6  ||
//    7  &&
//    8  == != < <= > >=, and >-> <-< (Futhark ranks an operator by its
//       leading characters)
//    9  & ^ |
//   10  << >>
//   11  + -
//   12  * / % // %%
//   13  **
//   14  prefix - and !: `-x ** 2` is `(-x) ** 2`, `-f x` is `-(f x)`
//   15  application by juxtaposition
//   16  a[i], e.x
//
// A block expression (`if`, `let`, `loop`, `match`, a lambda) may be an
// operand but extends as far right as it can, so `x + if c then 1 else 2
// + 3` adds `if c then 1 else (2 + 3)` to `x`.

/// An infix operator as written, before desugaring.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Infix {
    Bin(BinOp),
    PipeRight,
    PipeLeft,
    ComposeRight,
    ComposeLeft,
    Backtick,
    With,
}

impl Infix {
    fn of(tok: &Tok) -> Option<Infix> {
        use BinOp::*;
        Some(match tok {
            Tok::Backtick => Infix::Backtick,
            Tok::With => Infix::With,
            Tok::PipeRight => Infix::PipeRight,
            Tok::PipeLeft => Infix::PipeLeft,
            Tok::ComposeRight => Infix::ComposeRight,
            Tok::ComposeLeft => Infix::ComposeLeft,
            Tok::OrOr => Infix::Bin(Or),
            Tok::AndAnd => Infix::Bin(And),
            Tok::EqEq => Infix::Bin(Eq),
            Tok::NotEq => Infix::Bin(Neq),
            Tok::Lt => Infix::Bin(Lt),
            Tok::Le => Infix::Bin(Le),
            Tok::Gt => Infix::Bin(Gt),
            Tok::Ge => Infix::Bin(Ge),
            Tok::Amp => Infix::Bin(BAnd),
            Tok::Caret => Infix::Bin(BXor),
            Tok::Bar => Infix::Bin(BOr),
            Tok::Shl => Infix::Bin(Shl),
            Tok::Shr => Infix::Bin(Shr),
            Tok::Plus => Infix::Bin(Add),
            Tok::Minus => Infix::Bin(Sub),
            Tok::Star => Infix::Bin(Mul),
            Tok::Slash => Infix::Bin(Div),
            Tok::Percent => Infix::Bin(Mod),
            Tok::SlashSlash => Infix::Bin(Quot),
            Tok::PercentPercent => Infix::Bin(Rem),
            Tok::StarStar => Infix::Bin(Pow),
            _ => return None,
        })
    }

    /// The level in Note [Operator precedence].
    fn precedence(self) -> u8 {
        match self {
            Infix::Backtick => 2,
            Infix::With => WITH_PRECEDENCE,
            Infix::PipeRight => 4,
            Infix::PipeLeft => 5,
            Infix::ComposeRight | Infix::ComposeLeft => COMPOSE_PRECEDENCE,
            Infix::Bin(op) => binop_precedence(op),
        }
    }

    fn symbol(self) -> &'static str {
        match self {
            Infix::Bin(op) => op.symbol(),
            Infix::PipeRight => "|>",
            Infix::PipeLeft => "<|",
            Infix::ComposeRight => ">->",
            Infix::ComposeLeft => "<-<",
            Infix::Backtick => "`",
            Infix::With => "with",
        }
    }
}

/// The level of `with` in Note [Operator precedence].
pub(crate) const WITH_PRECEDENCE: u8 = 3;

/// The level of `>->` and `<-<` in Note [Operator precedence].
pub(crate) const COMPOSE_PRECEDENCE: u8 = 8;

/// The level of a binary operator in Note [Operator precedence] (shared
/// with the printer, which must agree with the parser).
pub(crate) fn binop_precedence(op: BinOp) -> u8 {
    use BinOp::*;
    match op {
        Or => 6,
        And => 7,
        Eq | Neq | Lt | Le | Gt | Ge => 8,
        BAnd | BXor | BOr => 9,
        Shl | Shr => 10,
        Add | Sub => 11,
        Mul | Div | Mod | Quot | Rem => 12,
        Pow => 13,
    }
}

// The parsing functions pass expressions boxed, as the tree holds them
// (Note [Bounded recursion]).
fn mk(kind: ExprKind, span: Span) -> Box<Expr> {
    Box::new(Expr::new(kind, span))
}

fn apply(f: Box<Expr>, x: Box<Expr>) -> Box<Expr> {
    let span = f.span.to(x.span);
    mk(ExprKind::Apply(f, x), span)
}

/// `\x -> g (f x)` (Note [What the parser desugars]).
fn compose(f: Box<Expr>, g: Box<Expr>, span: Span) -> Box<Expr> {
    let x = Ident { name: COMPOSE_PARAM.to_string(), span };
    let var = mk(ExprKind::Var { name: x.clone(), qual: None, inst: Vec::new() }, span);
    let body = apply(g, apply(f, var));
    mk(ExprKind::Lambda(vec![Pat::new(PatKind::Id(x), span)], None, body), span)
}

/// Whether a name is one of the prelude's numeric namespaces, so that
/// `f32.sqrt` is a qualified name rather than a projection.
fn is_namespace(name: &str) -> bool {
    PrimType::from_name(name).is_some()
}

/// One binding of a `let` chain, before the chain's body is known.
enum Binding {
    Pat(Span, Pat, Box<Expr>),
    Fun {
        start: Span,
        name: Ident,
        type_params: Vec<TypeParam>,
        params: Vec<Pat>,
        ret: Option<TypeExp>,
        def: Box<Expr>,
    },
}

impl Parser<'_> {
    /// An expression, with type ascriptions.
    pub(super) fn exp(&mut self) -> PResult<Box<Expr>> {
        let mut e = self.binary(0)?;
        while self.eat(&Tok::Colon) {
            let t = self.type_exp()?;
            let span = e.span.to(t.span());
            e = mk(ExprKind::Ascribe(e, t), span);
        }
        Ok(e)
    }

    /// An expression without a top-level ascription (Futhark's `Exp2`).
    fn exp2(&mut self) -> PResult<Box<Expr>> {
        self.binary(0)
    }

    /// How many tokens the infix operator at the next token spans: three
    /// or more for a backticked name (`` `f` ``, `` `f32.max` ``).
    fn infix_len(&self) -> usize {
        if *self.peek() != Tok::Backtick {
            return 1;
        }
        let mut n = 1;
        while matches!(self.peek_at(n), Tok::Ident(_)) {
            n += 1;
            if *self.peek_at(n) != Tok::Dot {
                break;
            }
            n += 1;
        }
        n + 1
    }

    /// Whether the next token is an infix operator directly followed by
    /// `)`: the operator of a left section `(e op)`.
    fn at_left_section(&self) -> bool {
        match Infix::of(self.peek()) {
            Some(Infix::With) | None => false,
            Some(_) => *self.peek_at(self.infix_len()) == Tok::RParen,
        }
    }

    /// Operands and operators at level `min` or tighter.
    fn binary(&mut self, min: u8) -> PResult<Box<Expr>> {
        let mut lhs = self.unary()?;
        while let Some(op) = Infix::of(self.peek()) {
            let prec = op.precedence();
            if prec < min || self.at_left_section() {
                break;
            }
            let next = if op == Infix::PipeLeft { prec } else { prec + 1 };
            lhs = match op {
                Infix::With => {
                    self.bump();
                    if self.eat(&Tok::LBracket) {
                        let (idx, _) = self.dim_indices()?;
                        self.expect(&Tok::Eq, "the indices of `with`")?;
                        let v = self.operand(next)?;
                        let span = lhs.span.to(v.span);
                        mk(ExprKind::Update(lhs, idx, v), span)
                    } else {
                        // `r with x.y = v`
                        let mut path = vec![self.field_id()?];
                        while self.eat(&Tok::Dot) {
                            path.push(self.field_id()?);
                        }
                        self.expect(&Tok::Eq, "the field of `with`")?;
                        let v = self.operand(next)?;
                        let span = lhs.span.to(v.span);
                        mk(ExprKind::RecordUpdate(lhs, path, v), span)
                    }
                }
                Infix::Backtick => {
                    let f = self.backticked()?;
                    let rhs = self.operand(next)?;
                    apply(apply(f, lhs), rhs)
                }
                _ => {
                    self.bump();
                    let rhs = self.operand(next)?;
                    let span = lhs.span.to(rhs.span);
                    match op {
                        Infix::Bin(b) => mk(ExprKind::BinOp(b, lhs, rhs), span),
                        Infix::PipeRight => apply(rhs, lhs),
                        Infix::PipeLeft => apply(lhs, rhs),
                        Infix::ComposeRight => compose(lhs, rhs, span),
                        _ => compose(rhs, lhs, span),
                    }
                }
            };
        }
        Ok(lhs)
    }

    /// The right operand of an operator at level `next - 1`: a level
    /// deeper (Note [Bounded recursion]).
    fn operand(&mut self, next: u8) -> PResult<Box<Expr>> {
        self.enter()?;
        let e = self.binary(next)?;
        self.leave();
        Ok(e)
    }

    /// A backticked function (`` `f` ``, `` `f32.max` ``), as a variable.
    fn backticked(&mut self) -> PResult<Box<Expr>> {
        self.expect(&Tok::Backtick, "")?;
        let mut f = self.var()?;
        while self.eat(&Tok::Dot) {
            f = self.project(f)?;
        }
        self.expect(&Tok::Backtick, "the backticked function")?;
        Ok(f)
    }

    fn var(&mut self) -> PResult<Box<Expr>> {
        let name = self.ident("a name")?;
        let span = name.span;
        Ok(mk(ExprKind::Var { name, qual: None, inst: Vec::new() }, span))
    }

    /// Prefix operators, block expressions, and applications.
    fn unary(&mut self) -> PResult<Box<Expr>> {
        self.enter()?;
        let start = self.span();
        let e = match self.peek() {
            Tok::Minus | Tok::Bang => {
                let neg = *self.peek() == Tok::Minus;
                self.bump();
                let e = self.unary()?;
                let span = start.to(e.span);
                mk(if neg { ExprKind::Neg(e) } else { ExprKind::Not(e) }, span)
            }
            Tok::If => self.if_exp()?,
            Tok::Let => self.let_chain()?,
            Tok::Loop => self.loop_exp()?,
            Tok::Match => self.match_exp()?,
            Tok::Backslash => self.lambda()?,
            _ => self.application()?,
        };
        self.leave();
        Ok(e)
    }

    fn starts_atom(&self) -> bool {
        matches!(
            self.peek(),
            Tok::Ident(_)
                | Tok::Int(_)
                | Tok::Float(_)
                | Tok::True
                | Tok::False
                | Tok::LParen
                | Tok::LBracket
                | Tok::LBrace
        )
    }

    /// `f x y`: `(f x) y`.
    fn application(&mut self) -> PResult<Box<Expr>> {
        let mut f = self.atom()?;
        while self.starts_atom() {
            let x = self.atom()?;
            f = apply(f, x);
        }
        Ok(f)
    }

    /// A primary expression followed by projections and indexing.
    fn atom(&mut self) -> PResult<Box<Expr>> {
        let mut e = self.primary()?;
        loop {
            match self.peek() {
                Tok::Dot => {
                    self.bump();
                    e = self.project(e)?;
                }
                Tok::LBracket if self.touches_previous() => {
                    self.bump();
                    let (idx, end) = self.dim_indices()?;
                    let span = e.span.to(end);
                    e = mk(ExprKind::Index(e, idx), span);
                }
                _ => return Ok(e),
            }
        }
    }

    /// After `e.`: a field (`e.x`, `e.0`), or the rest of a qualified
    /// name (`f32.sqrt`).
    fn project(&mut self, e: Box<Expr>) -> PResult<Box<Expr>> {
        let field = self.field_id()?;
        let span = e.span.to(field.span);
        if let ExprKind::Var { name, qual: None, .. } = &e.kind {
            if is_namespace(&name.name)
                && name.span == e.span
                && !field.name.starts_with(|c: char| c.is_ascii_digit())
            {
                return Ok(mk(
                    ExprKind::Var { name: field, qual: Some(name.clone()), inst: Vec::new() },
                    span,
                ));
            }
        }
        Ok(mk(ExprKind::Project(e, field), span))
    }

    fn primary(&mut self) -> PResult<Box<Expr>> {
        let start = self.span();
        match self.peek() {
            Tok::Int(_) | Tok::Float(_) | Tok::True | Tok::False => {
                let (lit, span) = self.literal()?;
                Ok(mk(ExprKind::Lit(lit), span))
            }
            Tok::Ident(_) => self.var(),
            Tok::LParen => {
                self.bump();
                self.parenthesised(start)
            }
            Tok::LBracket => {
                self.bump();
                let (es, end) = self.comma_list(&Tok::RBracket, true, |p| p.exp().map(|e| *e))?;
                Ok(mk(ExprKind::ArrayLit(es), start.to(end)))
            }
            Tok::LBrace => {
                self.bump();
                let (fields, end) = self.comma_list(&Tok::RBrace, false, |p| p.record_field())?;
                Ok(mk(ExprKind::Record(fields), start.to(end)))
            }
            _ => Err(self.expected("an expression")),
        }
    }

    /// `x = e` or `x` (the variable `x`) in a record.
    fn record_field(&mut self) -> PResult<(Ident, Expr)> {
        let field = self.field_id()?;
        if self.eat(&Tok::Eq) {
            return Ok((field, *self.exp()?));
        }
        if field.name.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(self.expected("`=` after a numbered field"));
        }
        let var = mk(ExprKind::Var { name: field.clone(), qual: None, inst: Vec::new() }, field.span);
        Ok((field, *var))
    }

    fn unsupported_section(&self, op: Infix, span: Span) -> Box<Diagnostic> {
        let what = match op {
            Infix::Backtick => "a right section of a backticked function".to_string(),
            _ => format!("a section of `{}`", op.symbol()),
        };
        Box::new(Diagnostic::new(
            DiagKind::Parse,
            span,
            format!("{what} is not supported; write a lambda instead"),
        ))
    }

    /// After `(`: `()`, `(e)`, a tuple, or an operator section.
    fn parenthesised(&mut self, start: Span) -> PResult<Box<Expr>> {
        if *self.peek() == Tok::RParen {
            let end = self.bump().span;
            return Ok(mk(ExprKind::Tuple(Vec::new()), start.to(end)));
        }
        if *self.peek() == Tok::Dot {
            let mut fields = Vec::new();
            while self.eat(&Tok::Dot) {
                fields.push(self.field_id()?);
            }
            let end = self.expect(&Tok::RParen, "the fields of a projection section")?;
            return Ok(mk(ExprKind::ProjSection(fields), start.to(end)));
        }
        if let Some(op) = Infix::of(self.peek()) {
            // `(-x)` is a negation, not a section; `(-)` is a section
            let is_negation = op == Infix::Bin(BinOp::Sub) && *self.peek_at(1) != Tok::RParen;
            if op != Infix::With && !is_negation {
                return self.right_section(op, start);
            }
        }
        let mut e = self.exp()?;
        if self.at_left_section() {
            let op = Infix::of(self.peek()).unwrap_or(Infix::With);
            let op_span = self.span();
            let f = if op == Infix::Backtick { Some(self.backticked()?) } else { None };
            if f.is_none() {
                self.bump();
            }
            let end = self.expect(&Tok::RParen, "the operator of a section")?;
            let span = start.to(end);
            return match (op, f) {
                (Infix::Bin(b), _) => Ok(mk(ExprKind::LeftSection(b, e), span)),
                (Infix::Backtick, Some(f)) => {
                    let mut e = apply(f, e);
                    e.span = span;
                    Ok(e)
                }
                _ => Err(self.unsupported_section(op, op_span)),
            };
        }
        if *self.peek() == Tok::RParen {
            e.span = start.to(self.bump().span);
            return Ok(e);
        }
        if !self.eat(&Tok::Comma) {
            return Err(self.expected("`)`, `,` or an operator"));
        }
        let (rest, end) = self.tuple_tail(|p| p.exp().map(|e| *e))?;
        let mut es = vec![*e];
        es.extend(rest);
        Ok(mk(ExprKind::Tuple(es), start.to(end)))
    }

    /// After `(`, at an operator: `(op)` or `(op e)`.
    fn right_section(&mut self, op: Infix, start: Span) -> PResult<Box<Expr>> {
        let op_span = self.span();
        let f = if op == Infix::Backtick { Some(self.backticked()?) } else { None };
        if f.is_none() {
            self.bump();
        }
        if *self.peek() == Tok::RParen {
            let span = start.to(self.bump().span);
            return match (op, f) {
                (Infix::Bin(b), _) => Ok(mk(ExprKind::OpSection(b), span)),
                (Infix::Backtick, Some(mut f)) => {
                    f.span = span;
                    Ok(f)
                }
                _ => Err(self.unsupported_section(op, op_span)),
            };
        }
        let Infix::Bin(b) = op else {
            return Err(self.unsupported_section(op, op_span));
        };
        let e = self.exp2()?;
        let end = self.expect(&Tok::RParen, "the operand of a section")?;
        Ok(mk(ExprKind::RightSection(b, e), start.to(end)))
    }

    /// After `[`: indices and slices separated by commas, and `]`.
    pub(super) fn dim_indices(&mut self) -> PResult<(Vec<DimIndex>, Span)> {
        self.comma_list(&Tok::RBracket, false, |p| p.dim_index())
    }

    /// `i`, `i:j`, `i:j:s`, each part but `i` of a fixed index optional.
    fn dim_index(&mut self) -> PResult<DimIndex> {
        let start = if *self.peek() == Tok::Colon { None } else { Some(self.exp2()?) };
        if !self.eat(&Tok::Colon) {
            return match start {
                Some(e) => Ok(DimIndex::Fix(*e)),
                None => Err(self.expected("an index")),
            };
        }
        let end = match self.peek() {
            Tok::Colon | Tok::Comma | Tok::RBracket => None,
            _ => Some(self.exp2()?),
        };
        let stride = if self.eat(&Tok::Colon) { Some(self.exp2()?) } else { None };
        Ok(DimIndex::Slice { start: start.map(|e| *e), end: end.map(|e| *e), stride: stride.map(|e| *e) })
    }

    fn if_exp(&mut self) -> PResult<Box<Expr>> {
        let start = self.bump().span;
        let c = self.exp()?;
        self.expect(&Tok::Then, "the condition of `if`")?;
        let t = self.exp()?;
        self.expect(&Tok::Else, "the `then` branch")?;
        let f = self.exp()?;
        let span = start.to(f.span);
        Ok(mk(ExprKind::If(c, t, f), span))
    }

    /// `let b1 let b2 ... in body`, where each `let` but the last may
    /// omit `in`. Read as a loop and folded from the right, so that a long
    /// sequence of bindings does not recurse (Note [Bounded recursion]).
    fn let_chain(&mut self) -> PResult<Box<Expr>> {
        let mut bindings = Vec::new();
        let body = loop {
            bindings.push(self.let_binding()?);
            match self.peek() {
                Tok::Let => {}
                Tok::In => {
                    self.bump();
                    if *self.peek() != Tok::Let {
                        break self.exp()?;
                    }
                }
                _ => return Err(self.expected("`in` or another `let` after the binding")),
            }
        };
        let mut e = body;
        for b in bindings.into_iter().rev() {
            e = match b {
                Binding::Pat(start, pat, def) => {
                    let span = start.to(e.span);
                    mk(ExprKind::Let(pat, def, e), span)
                }
                Binding::Fun { start, name, type_params, params, ret, def } => {
                    let span = start.to(e.span);
                    let kind = ExprKind::LetFun { name, type_params, params, ret, def, body: e };
                    mk(kind, span)
                }
            };
        }
        Ok(e)
    }

    /// One `let` binding: `let p = e`, `let f params = e` or
    /// `let a[i] = v`.
    fn let_binding(&mut self) -> PResult<Binding> {
        let start = self.expect(&Tok::Let, "")?;
        let after_name = self.peek_at(1);
        let is_name = matches!(self.peek(), Tok::Ident(_));
        if is_name && *after_name == Tok::LBracket && self.token_at(1).touches(self.token_at(0)) {
            let name = self.ident("a name")?;
            self.bump();
            let (idx, _) = self.dim_indices()?;
            self.expect(&Tok::Eq, "the indices of an in-place update")?;
            let v = self.exp()?;
            let span = name.span.to(v.span);
            let var = mk(ExprKind::Var { name: name.clone(), qual: None, inst: Vec::new() }, name.span);
            let update = mk(ExprKind::Update(var, idx, v), span);
            return Ok(Binding::Pat(start, Pat::new(PatKind::Id(name.clone()), name.span), update));
        }
        let is_fun = is_name
            && matches!(
                after_name,
                Tok::Ident(_)
                    | Tok::Underscore
                    | Tok::LParen
                    | Tok::LBrace
                    | Tok::LBracket
                    | Tok::Apostrophe
                    | Tok::ApostropheHat
            );
        if is_fun {
            let name = self.ident("a name")?;
            let type_params = self.type_params()?;
            let mut params = Vec::new();
            while self.starts_param() {
                params.push(self.param_pat()?);
            }
            if params.is_empty() {
                return Err(self.expected("a parameter of the local function"));
            }
            let ret = if self.eat(&Tok::Colon) { Some(self.type_exp()?) } else { None };
            if *self.peek() != Tok::Eq {
                return Err(self.expected(if ret.is_some() { "`=`" } else { "a parameter, `:` or `=`" }));
            }
            self.bump();
            let def = self.exp()?;
            return Ok(Binding::Fun { start, name, type_params, params, ret, def });
        }
        let pat = self.pat()?;
        self.expect(&Tok::Eq, "the pattern of `let`")?;
        let def = self.exp()?;
        Ok(Binding::Pat(start, pat, def))
    }

    /// `loop p = init for i < n do body`, `for p in xs`, `while c`; the
    /// initial value may be left out.
    fn loop_exp(&mut self) -> PResult<Box<Expr>> {
        let start = self.bump().span;
        let pat = self.pat()?;
        let init = if self.eat(&Tok::Eq) { Some(self.exp()?) } else { None };
        let form = match self.peek() {
            Tok::For if matches!(self.peek_at(1), Tok::Ident(_)) && *self.peek_at(2) == Tok::Lt => {
                self.bump();
                let i = self.ident("the loop counter")?;
                self.bump();
                LoopForm::For(i, self.exp()?)
            }
            Tok::For => {
                self.bump();
                let p = self.pat()?;
                self.expect(&Tok::In, "the pattern of `for`")?;
                LoopForm::ForIn(p, self.exp()?)
            }
            Tok::While => {
                self.bump();
                LoopForm::While(self.exp()?)
            }
            _ => {
                return Err(self.expected(if init.is_some() {
                    "`for` or `while`"
                } else {
                    "`=`, `for` or `while`"
                }))
            }
        };
        self.expect(&Tok::Do, "the loop's form")?;
        let body = self.exp()?;
        let span = start.to(body.span);
        Ok(mk(ExprKind::Loop { pat, init, form, body }, span))
    }

    /// `match e case p -> e ...`: a nested `match` takes the cases that
    /// follow it, as in Futhark.
    fn match_exp(&mut self) -> PResult<Box<Expr>> {
        let start = self.bump().span;
        let scrutinee = self.exp()?;
        if *self.peek() != Tok::Case {
            return Err(self.expected("`case`"));
        }
        let mut cases = Vec::new();
        let mut end = scrutinee.span;
        while self.eat(&Tok::Case) {
            let p = self.pat()?;
            self.expect(&Tok::Arrow, "the pattern of `case`")?;
            let e = self.exp()?;
            end = e.span;
            cases.push((p, *e));
        }
        Ok(mk(ExprKind::Match(scrutinee, cases), start.to(end)))
    }

    /// `\p q : t -> body`; the result type has no top-level arrow.
    fn lambda(&mut self) -> PResult<Box<Expr>> {
        let start = self.bump().span;
        let mut params = vec![self.param_pat()?];
        while self.starts_param() {
            params.push(self.param_pat()?);
        }
        let ret = if self.eat(&Tok::Colon) { Some(self.type_term()?) } else { None };
        if *self.peek() != Tok::Arrow {
            return Err(self.expected(if ret.is_some() { "`->`" } else { "a parameter, `:` or `->`" }));
        }
        self.bump();
        let body = self.exp()?;
        let span = start.to(body.span);
        Ok(mk(ExprKind::Lambda(params, ret, body), span))
    }
}

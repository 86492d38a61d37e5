//! The printer: the syntax tree back to Futhark text, for snapshot tests,
//! dumps between stages and error messages.
//!
//! What it guarantees: for a tree the parser built, the printed text parses
//! back to the same tree, up to spans and the parser's desugarings (Note
//! [What the parser desugars] in `parser`), so printing is idempotent:
//! print, parse and print again gives the same text. To that end it
//! parenthesises by the parser's precedence table (Note [Printing with the
//! parser's precedences]), and prints the lambda that `>->` desugars to
//! back as `>->`.
//!
//! Layout: a `let` chain puts each binding on its own line and `in` on the
//! last; `match` puts each case on its own line; `loop` indents its body;
//! `if` stays on one line when its parts hold no block expression. Lines
//! that continue a block align with the block's first column, so nested
//! blocks read as nested. Declarations are separated by a blank line.
//! Patterns and types are printed by `pat_type`.
//!
//! Nodes no parse produces (a one-element tuple, a right section of `-`,
//! the composition parameter outside a composition) are printed as plainly
//! as possible; the text then does not parse, rather than parse to a
//! different tree.

use crate::ast::*;
use crate::parser::{binop_precedence, COMPOSE_PARAM, COMPOSE_PRECEDENCE, WITH_PRECEDENCE};

mod pat_type;

pub use pat_type::ty;

// Note [Printing with the parser's precedences]
// Each expression has a level, and each place an expression is printed
// asks for a least level; an expression below it is parenthesised. The
// levels are the parser's (Note [Operator precedence] in `parser::expr`)
// plus:
//
//   TOP (0)    an ascription `e : t`, printed bare only where the parser
//              reads a whole `exp`: a declaration's body, a `let`'s value
//              and body, branches, tuple, array and record components;
//   BLOCK (1)  `if`, `let`, `loop`, `match` and `\`, which extend as far
//              right as they can, so they are bare only where what
//              follows ends them (a keyword or a closing bracket), which
//              includes a fixed index `a[...]` and a right section's
//              operand, and parenthesised as any operand and as a slice
//              bound (`a[(if c then 1 else 2):]`). A `match`'s scrutinee
//              and its case bodies but the last ask for OPERAND: a block
//              there would take the cases that follow;
//   OPERAND    the loosest binary operator, for slice bounds;
//   UNARY, APPLY, ATOM above the binary operators.
//
// Binary operators are left-associative, so a left operand asks for the
// operator's own level and a right operand for the next one up.

const TOP: u8 = 0;
const BLOCK: u8 = 1;
const OPERAND: u8 = 2;
const UNARY: u8 = 14;
const APPLY: u8 = 15;
const ATOM: u8 = 16;

/// A whole program, a blank line between declarations.
pub fn program(p: &Program) -> String {
    let mut pr = Printer::default();
    for (i, d) in p.decls.iter().enumerate() {
        if i > 0 {
            pr.out.push_str("\n\n");
        }
        match d {
            Decl::Value(v) => pr.value_decl(v),
            Decl::Type(t) => pr.type_decl(t),
        }
    }
    pr.out.push('\n');
    pr.out
}

/// One expression.
pub fn expr(e: &Expr) -> String {
    let mut pr = Printer::default();
    pr.expr(e, TOP);
    pr.out
}

/// A type as written.
pub fn type_exp(t: &TypeExp) -> String {
    let mut pr = Printer::default();
    pr.type_exp(t);
    pr.out
}

/// A pattern, as in a `let`.
pub fn pat(p: &Pat) -> String {
    let mut pr = Printer::default();
    pr.pat(p, true);
    pr.out
}

/// `f` and `g` of the lambda `\#x -> g (f #x)` that `f >-> g` desugars
/// to (Note [What the parser desugars] in `parser`).
fn as_composition(e: &Expr) -> Option<(&Expr, &Expr)> {
    let ExprKind::Lambda(params, None, body) = &e.kind else { return None };
    let [Pat { kind: PatKind::Id(x), .. }] = params.as_slice() else { return None };
    let ExprKind::Apply(g, inner) = &body.kind else { return None };
    let ExprKind::Apply(f, arg) = &inner.kind else { return None };
    let ExprKind::Var { name, qual: None, .. } = &arg.kind else { return None };
    (x.name == COMPOSE_PARAM && name.name == COMPOSE_PARAM).then_some((f, g))
}

fn is_block(e: &Expr) -> bool {
    match &e.kind {
        ExprKind::If(..) | ExprKind::Let(..) | ExprKind::LetFun { .. } | ExprKind::Loop { .. } => true,
        ExprKind::Match(..) => true,
        ExprKind::Lambda(..) => as_composition(e).is_none(),
        _ => false,
    }
}

fn is_negative(l: &Literal) -> bool {
    match l {
        Literal::Int(v, _) => *v < 0,
        Literal::Float(v, _) => v.is_sign_negative(),
        Literal::Bool(_) => false,
    }
}

/// The level of an expression (Note [Printing with the parser's
/// precedences]).
fn level(e: &Expr) -> u8 {
    match &e.kind {
        ExprKind::Ascribe(..) => TOP,
        _ if is_block(e) => BLOCK,
        ExprKind::Lambda(..) => COMPOSE_PRECEDENCE,
        ExprKind::Update(..) | ExprKind::RecordUpdate(..) => WITH_PRECEDENCE,
        ExprKind::BinOp(op, ..) => binop_precedence(*op),
        ExprKind::Neg(_) | ExprKind::Not(_) => UNARY,
        ExprKind::Lit(l) if is_negative(l) => UNARY,
        ExprKind::Apply(..) => APPLY,
        _ => ATOM,
    }
}

/// Whether no block expression occurs in `e`: such an `if` fits on one
/// line.
fn is_flat(e: &Expr) -> bool {
    let flat_index = |idx: &[DimIndex]| {
        idx.iter().all(|d| match d {
            DimIndex::Fix(e) => is_flat(e),
            DimIndex::Slice { start, end, stride } => {
                [start, end, stride].iter().all(|x| x.as_ref().is_none_or(is_flat))
            }
        })
    };
    match &e.kind {
        _ if is_block(e) => false,
        ExprKind::Lit(_) | ExprKind::Var { .. } | ExprKind::OpSection(_) | ExprKind::ProjSection(_) => true,
        ExprKind::Tuple(es) | ExprKind::ArrayLit(es) => es.iter().all(is_flat),
        ExprKind::Record(fs) => fs.iter().all(|(_, e)| is_flat(e)),
        ExprKind::Project(e, _) | ExprKind::Neg(e) | ExprKind::Not(e) => is_flat(e),
        ExprKind::LeftSection(_, e) | ExprKind::RightSection(_, e) | ExprKind::Ascribe(e, _) => is_flat(e),
        ExprKind::Index(e, idx) => is_flat(e) && flat_index(idx),
        ExprKind::Update(a, idx, v) => is_flat(a) && flat_index(idx) && is_flat(v),
        ExprKind::RecordUpdate(a, _, v) => is_flat(a) && is_flat(v),
        ExprKind::Apply(a, b) | ExprKind::BinOp(_, a, b) => is_flat(a) && is_flat(b),
        ExprKind::Lambda(..) => as_composition(e).is_some_and(|(f, g)| is_flat(f) && is_flat(g)),
        _ => false,
    }
}

fn literal(l: &Literal) -> String {
    match l {
        Literal::Int(v, t) => format!("{v}{}", t.map_or("", PrimType::name)),
        Literal::Float(v, t) if v.is_finite() => format!("{v:?}{}", t.map_or("", PrimType::name)),
        Literal::Float(v, t) => {
            let ns = t.map_or("f64", PrimType::name);
            match (v.is_nan(), *v < 0.0) {
                (true, _) => format!("{ns}.nan"),
                (false, true) => format!("-{ns}.inf"),
                (false, false) => format!("{ns}.inf"),
            }
        }
        Literal::Bool(b) => b.to_string(),
    }
}

#[derive(Default)]
struct Printer {
    out: String,
}

impl Printer {
    fn s(&mut self, s: &str) {
        self.out.push_str(s);
    }

    /// The column the next character goes to.
    fn column(&self) -> usize {
        self.out.len() - self.out.rfind('\n').map_or(0, |i| i + 1)
    }

    fn newline(&mut self, indent: usize) {
        self.out.push('\n');
        self.out.extend(std::iter::repeat_n(' ', indent));
    }

    fn sep<T>(&mut self, items: &[T], sep: &str, mut f: impl FnMut(&mut Self, &T)) {
        for (i, x) in items.iter().enumerate() {
            if i > 0 {
                self.s(sep);
            }
            f(self, x);
        }
    }

    fn value_decl(&mut self, v: &ValueDecl) {
        self.s(if v.entry { "entry " } else { "def " });
        self.s(&v.name.name);
        self.type_params(&v.type_params);
        for p in &v.params {
            self.s(" ");
            self.param(p);
        }
        if let Some(t) = &v.ret {
            self.s(": ");
            self.type_exp(t);
        }
        self.s(" =");
        if is_flat(&v.body) {
            self.s(" ");
        } else {
            self.newline(2);
        }
        self.expr(&v.body, TOP);
    }

    fn type_decl(&mut self, t: &TypeDecl) {
        self.s("type ");
        self.s(&t.name.name);
        self.type_params(&t.params);
        self.s(" = ");
        self.type_exp(&t.def);
    }

    fn type_params(&mut self, ps: &[TypeParam]) {
        for p in ps {
            match p {
                TypeParam::Type { name, lifted } => {
                    self.s(if *lifted { " '^" } else { " '" });
                    self.s(&name.name);
                }
                TypeParam::Size(n) => {
                    self.s(" [");
                    self.s(&n.name);
                    self.s("]");
                }
            }
        }
    }

    fn expr(&mut self, e: &Expr, ctx: u8) {
        if level(e) < ctx {
            self.s("(");
            self.expr_bare(e);
            self.s(")");
        } else {
            self.expr_bare(e);
        }
    }

    fn expr_bare(&mut self, e: &Expr) {
        match &e.kind {
            ExprKind::Lit(l) => self.s(&literal(l)),
            ExprKind::Var { name, qual, .. } => {
                if let Some(q) = qual {
                    self.s(&q.name);
                    self.s(".");
                }
                self.s(&name.name);
            }
            ExprKind::Tuple(es) => {
                self.s("(");
                self.sep(es, ", ", |p, e| p.expr(e, TOP));
                // Futhark has no one-element tuple; `(e,)` at least does
                // not read back as `e`
                self.s(if es.len() == 1 { ",)" } else { ")" });
            }
            ExprKind::Record(fs) => {
                self.s("{");
                self.sep(fs, ", ", |p, (f, e)| match &e.kind {
                    ExprKind::Var { name, qual: None, .. } if name.name == f.name => p.s(&f.name),
                    _ => {
                        p.s(&f.name);
                        p.s(" = ");
                        p.expr(e, TOP);
                    }
                });
                self.s("}");
            }
            ExprKind::ArrayLit(es) => {
                self.s("[");
                self.sep(es, ", ", |p, e| p.expr(e, TOP));
                self.s("]");
            }
            ExprKind::Project(r, f) => {
                // `f32.x` would read as a qualified name, `3.0` as a float
                let misread = match &r.kind {
                    ExprKind::Var { name, qual: None, .. } => PrimType::from_name(&name.name).is_some(),
                    ExprKind::Lit(Literal::Int(_, None)) => true,
                    _ => false,
                };
                if misread {
                    self.s("(");
                    self.expr(r, TOP);
                    self.s(")");
                } else {
                    self.expr(r, ATOM);
                }
                self.s(".");
                self.s(&f.name);
            }
            ExprKind::Index(a, idx) => {
                self.expr(a, ATOM);
                self.dim_indices(idx);
            }
            ExprKind::Apply(f, x) => {
                self.expr(f, APPLY);
                self.s(" ");
                self.expr(x, ATOM);
            }
            ExprKind::BinOp(op, l, r) => {
                let prec = binop_precedence(*op);
                self.expr(l, prec);
                self.s(" ");
                self.s(op.symbol());
                self.s(" ");
                self.expr(r, prec + 1);
            }
            ExprKind::Neg(x) => {
                self.s("-");
                self.expr(x, APPLY);
            }
            ExprKind::Not(x) => {
                self.s("!");
                self.expr(x, APPLY);
            }
            ExprKind::OpSection(op) => {
                self.s("(");
                self.s(op.symbol());
                self.s(")");
            }
            ExprKind::LeftSection(op, x) => {
                self.s("(");
                self.expr(x, binop_precedence(*op));
                self.s(" ");
                self.s(op.symbol());
                self.s(")");
            }
            ExprKind::RightSection(BinOp::Sub, x) => {
                // `(- x)` would read as a negation: spell the section out,
                // with a parameter no program can name
                self.s(&format!("(\\{COMPOSE_PARAM} -> {COMPOSE_PARAM} - "));
                self.expr(x, binop_precedence(BinOp::Sub) + 1);
                self.s(")");
            }
            ExprKind::RightSection(op, x) => {
                self.s("(");
                self.s(op.symbol());
                self.s(" ");
                self.expr(x, BLOCK);
                self.s(")");
            }
            ExprKind::ProjSection(fs) => {
                self.s("(");
                for f in fs {
                    self.s(".");
                    self.s(&f.name);
                }
                self.s(")");
            }
            ExprKind::Lambda(params, ret, body) => match as_composition(e) {
                Some((f, g)) => {
                    self.expr(f, COMPOSE_PRECEDENCE);
                    self.s(" >-> ");
                    self.expr(g, COMPOSE_PRECEDENCE + 1);
                }
                None => {
                    self.s("\\");
                    self.sep(params, " ", |p, x| p.param(x));
                    if let Some(t) = ret {
                        self.s(": ");
                        self.type_operand(t);
                    }
                    self.s(" -> ");
                    self.expr(body, TOP);
                }
            },
            ExprKind::Let(..) | ExprKind::LetFun { .. } => self.let_chain(e),
            ExprKind::Update(a, idx, v) => {
                self.expr(a, WITH_PRECEDENCE);
                self.s(" with ");
                self.dim_indices(idx);
                self.s(" = ");
                self.expr(v, WITH_PRECEDENCE + 1);
            }
            ExprKind::RecordUpdate(a, path, v) => {
                self.expr(a, WITH_PRECEDENCE);
                self.s(" with ");
                let names: Vec<&str> = path.iter().map(|f| f.name.as_str()).collect();
                self.s(&names.join("."));
                self.s(" = ");
                self.expr(v, WITH_PRECEDENCE + 1);
            }
            ExprKind::If(c, t, f) => {
                let col = self.column();
                let inline = is_flat(c) && is_flat(t) && is_flat(f);
                self.s("if ");
                self.expr(c, TOP);
                if inline {
                    self.s(" then ");
                } else {
                    self.newline(col);
                    self.s("then ");
                }
                self.expr(t, TOP);
                if inline {
                    self.s(" else ");
                } else {
                    self.newline(col);
                    self.s("else ");
                }
                self.expr(f, TOP);
            }
            ExprKind::Loop { pat, init, form, body } => {
                let col = self.column();
                self.s("loop ");
                self.pat(pat, true);
                if let Some(init) = init {
                    self.s(" = ");
                    self.expr(init, TOP);
                }
                match form {
                    LoopForm::For(i, n) => {
                        self.s(" for ");
                        self.s(&i.name);
                        self.s(" < ");
                        self.expr(n, TOP);
                    }
                    LoopForm::ForIn(p, xs) => {
                        self.s(" for ");
                        self.pat(p, true);
                        self.s(" in ");
                        self.expr(xs, TOP);
                    }
                    LoopForm::While(c) => {
                        self.s(" while ");
                        self.expr(c, TOP);
                    }
                }
                self.s(" do");
                self.newline(col + 2);
                self.expr(body, TOP);
            }
            ExprKind::Match(scrutinee, cases) => {
                let col = self.column();
                self.s("match ");
                // a block here would take the cases
                self.expr(scrutinee, OPERAND);
                for (i, (p, body)) in cases.iter().enumerate() {
                    self.newline(col);
                    self.s("case ");
                    self.pat(p, false);
                    self.s(" -> ");
                    self.expr(body, if i + 1 == cases.len() { TOP } else { OPERAND });
                }
            }
            ExprKind::Ascribe(x, t) => {
                self.expr(x, OPERAND);
                self.s(" : ");
                self.type_exp(t);
            }
        }
    }

    /// `let` bindings each on its own line at the column of the first,
    /// then `in body`; a loop, so that long chains do not recurse.
    fn let_chain(&mut self, mut e: &Expr) {
        let col = self.column();
        let mut first = true;
        loop {
            match &e.kind {
                ExprKind::Let(p, def, body) => {
                    self.let_start(&mut first, col);
                    self.pat(p, true);
                    self.s(" = ");
                    self.expr(def, TOP);
                    e = body;
                }
                ExprKind::LetFun { name, type_params, params, ret, def, body } => {
                    self.let_start(&mut first, col);
                    self.s(&name.name);
                    self.type_params(type_params);
                    for p in params {
                        self.s(" ");
                        self.param(p);
                    }
                    if let Some(t) = ret {
                        self.s(": ");
                        self.type_exp(t);
                    }
                    self.s(" = ");
                    self.expr(def, TOP);
                    e = body;
                }
                _ => {
                    self.newline(col);
                    self.s("in ");
                    self.expr(e, TOP);
                    return;
                }
            }
        }
    }

    fn let_start(&mut self, first: &mut bool, col: usize) {
        if !*first {
            self.newline(col);
        }
        *first = false;
        self.s("let ");
    }

    fn dim_indices(&mut self, idx: &[DimIndex]) {
        self.s("[");
        self.sep(idx, ", ", |p, d| match d {
            DimIndex::Fix(e) => p.expr(e, BLOCK),
            DimIndex::Slice { start, end, stride } => {
                if let Some(e) = start {
                    p.expr(e, OPERAND);
                }
                p.s(":");
                if let Some(e) = end {
                    p.expr(e, OPERAND);
                }
                if let Some(e) = stride {
                    p.s(":");
                    p.expr(e, OPERAND);
                }
            }
        });
        self.s("]");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(kind: ExprKind) -> Expr {
        Expr::new(kind, Span::default())
    }

    fn var(name: &str) -> Expr {
        e(ExprKind::Var {
            name: Ident { name: name.into(), span: Span::default() },
            qual: None,
            inst: vec![],
        })
    }

    fn lit(l: Literal) -> Expr {
        e(ExprKind::Lit(l))
    }

    #[test]
    fn negative_literals_are_parenthesised_as_arguments() {
        let app = e(ExprKind::Apply(Box::new(var("f")), Box::new(lit(Literal::Int(-1, None)))));
        assert_eq!(expr(&app), "f (-1)");
        let neg = e(ExprKind::Neg(Box::new(lit(Literal::Float(-2.5, Some(PrimType::F32))))));
        assert_eq!(expr(&neg), "-(-2.5f32)");
    }

    #[test]
    fn non_finite_floats_print_as_the_prelude_constants() {
        assert_eq!(expr(&lit(Literal::Float(f64::INFINITY, Some(PrimType::F32)))), "f32.inf");
        assert_eq!(expr(&lit(Literal::Float(f64::NEG_INFINITY, None))), "-f64.inf");
        assert_eq!(expr(&lit(Literal::Float(f64::NAN, None))), "f64.nan");
    }

    #[test]
    fn trees_without_source_syntax_do_not_print_as_other_trees() {
        assert_eq!(expr(&e(ExprKind::Tuple(vec![var("x")]))), "(x,)");
        let sec = e(ExprKind::RightSection(BinOp::Sub, Box::new(var("y"))));
        assert_eq!(expr(&sec), format!("(\\{COMPOSE_PARAM} -> {COMPOSE_PARAM} - y)"));
        let proj =
            e(ExprKind::Project(Box::new(var("f32")), Ident { name: "x".into(), span: Span::default() }));
        assert_eq!(expr(&proj), "(f32).x");
    }

    #[test]
    fn record_fields_named_as_their_variable_are_shortened() {
        let id = |n: &str| Ident { name: n.into(), span: Span::default() };
        let r = e(ExprKind::Record(vec![(id("x"), var("x")), (id("y"), var("z"))]));
        assert_eq!(expr(&r), "{x, y = z}");
    }
}

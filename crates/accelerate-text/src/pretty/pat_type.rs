//! Printing patterns and types: the patterns of parameters and bindings,
//! types as written (`TypeExp`), and the checker's types (`Type`).

use super::{literal, Printer};
use crate::ast::*;

/// A checker's type, Futhark-style: `[n][]f32`, `(i32, bool)`,
/// `{x: f32}`, `a -> b`; a type parameter by its name, a unification
/// variable `k` as `?k`, and an unknown type as `?`.
pub fn ty(t: &Type) -> String {
    let mut s = String::new();
    write_ty(&mut s, t);
    s
}

fn write_ty(s: &mut String, t: &Type) {
    match t {
        Type::Unknown => s.push('?'),
        Type::Prim(p) => s.push_str(p.name()),
        Type::Array { elem, shape } => {
            for d in shape {
                match d {
                    Size::Any => s.push_str("[]"),
                    Size::Const(n) => s.push_str(&format!("[{n}]")),
                    Size::Var(v) => s.push_str(&format!("[{v}]")),
                }
            }
            write_ty_operand(s, elem);
        }
        Type::Tuple(ts) => {
            s.push('(');
            for (i, t) in ts.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                write_ty(s, t);
            }
            s.push(')');
        }
        Type::Record(fs) => {
            s.push('{');
            for (i, (n, t)) in fs.iter().enumerate() {
                if i > 0 {
                    s.push_str(", ");
                }
                s.push_str(n);
                s.push_str(": ");
                write_ty(s, t);
            }
            s.push('}');
        }
        Type::Arrow(a, b) => {
            write_ty_operand(s, a);
            s.push_str(" -> ");
            write_ty(s, b);
        }
        Type::Param(a) => s.push_str(a),
        Type::Infer(k) => s.push_str(&format!("?{k}")),
    }
}

/// A type where an arrow needs parentheses: an arrow's parameter, an
/// array's element.
fn write_ty_operand(s: &mut String, t: &Type) {
    if t.is_arrow() {
        s.push('(');
        write_ty(s, t);
        s.push(')');
    } else {
        write_ty(s, t);
    }
}

impl Printer {
    /// A pattern; at the top of a `let`, `loop` or `for` an ascription
    /// needs no parentheses.
    pub(super) fn pat(&mut self, p: &Pat, top: bool) {
        match &p.kind {
            PatKind::Id(x) => self.s(&x.name),
            PatKind::Wildcard => self.s("_"),
            PatKind::Tuple(ps) => {
                self.s("(");
                self.sep(ps, ", ", |pr, p| pr.pat(p, true));
                self.s(")");
            }
            PatKind::Record(fs) => {
                self.s("{");
                self.sep(fs, ", ", |pr, (f, p)| match &p.kind {
                    PatKind::Id(x) if x.name == f.name => pr.s(&f.name),
                    PatKind::Ascribe(inner, t) if matches!(&inner.kind, PatKind::Id(x) if x.name == f.name) =>
                    {
                        pr.s(&f.name);
                        pr.s(": ");
                        pr.type_exp(t);
                    }
                    _ => {
                        pr.s(&f.name);
                        pr.s(" = ");
                        pr.pat(p, true);
                    }
                });
                self.s("}");
            }
            PatKind::Ascribe(inner, t) => {
                if !top {
                    self.s("(");
                }
                self.pat(inner, false);
                self.s(": ");
                self.type_exp(t);
                if !top {
                    self.s(")");
                }
            }
            PatKind::Lit(l) => self.s(&literal(l)),
        }
    }

    /// A parameter: a pattern that is a name or in brackets.
    pub(super) fn param(&mut self, p: &Pat) {
        match &p.kind {
            PatKind::Lit(_) => {
                self.s("(");
                self.pat(p, true);
                self.s(")");
            }
            _ => self.pat(p, false),
        }
    }

    pub(super) fn type_exp(&mut self, t: &TypeExp) {
        match t {
            TypeExp::Name(id, args) => {
                self.s(&id.name);
                for a in args {
                    self.s(" ");
                    match a {
                        TypeArgExp::Size(d) => self.size(d),
                        TypeArgExp::Type(t @ TypeExp::Name(_, no_args)) if no_args.is_empty() => {
                            self.type_exp(t)
                        }
                        TypeArgExp::Type(t @ (TypeExp::Tuple(..) | TypeExp::Record(..))) => self.type_exp(t),
                        TypeArgExp::Type(t) => {
                            self.s("(");
                            self.type_exp(t);
                            self.s(")");
                        }
                    }
                }
            }
            TypeExp::Array(d, elem, _) => {
                self.size(d);
                self.type_operand(elem);
            }
            TypeExp::Tuple(ts, _) => {
                self.s("(");
                self.sep(ts, ", ", |p, t| p.type_exp(t));
                self.s(")");
            }
            TypeExp::Record(fs, _) => {
                self.s("{");
                self.sep(fs, ", ", |p, (f, t)| {
                    p.s(&f.name);
                    p.s(": ");
                    p.type_exp(t);
                });
                self.s("}");
            }
            TypeExp::Arrow(name, a, b, _) => {
                match name {
                    Some(x) => {
                        self.s("(");
                        self.s(&x.name);
                        self.s(": ");
                        self.type_exp(a);
                        self.s(")");
                    }
                    None => self.type_operand(a),
                }
                self.s(" -> ");
                self.type_exp(b);
            }
        }
    }

    /// A type where an arrow needs parentheses.
    pub(super) fn type_operand(&mut self, t: &TypeExp) {
        if let TypeExp::Arrow(..) = t {
            self.s("(");
            self.type_exp(t);
            self.s(")");
        } else {
            self.type_exp(t);
        }
    }

    fn size(&mut self, d: &SizeExp) {
        match d {
            SizeExp::Any(_) => self.s("[]"),
            SizeExp::Const(n, _) => self.s(&format!("[{n}]")),
            SizeExp::Var(x) => {
                self.s("[");
                self.s(&x.name);
                self.s("]");
            }
        }
    }
}

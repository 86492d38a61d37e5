//! Types printed as Futhark writes them (`[n][]f32`, `(i32, bool)`,
//! `{x: f32}`, `a -> b`), for the checker's messages. A unification
//! variable not yet known prints as `_`, and a size the checker has not
//! learnt prints as `[]`.

use crate::ast::{Size, Type};
use std::fmt::Write;

/// The type as Futhark source text.
pub fn show(ty: &Type) -> String {
    let mut out = String::new();
    write_ty(&mut out, ty, false);
    out
}

/// `arrow_left`: the type is the parameter of an arrow, where an arrow
/// needs parentheses.
fn write_ty(out: &mut String, ty: &Type, arrow_left: bool) {
    match ty {
        Type::Unknown | Type::Infer(_) => out.push('_'),
        Type::Prim(p) => out.push_str(p.name()),
        Type::Param(name) => out.push_str(name),
        Type::Array { elem, shape } => {
            for d in shape {
                write_size(out, d);
            }
            // an arrow element is ruled out by the checker, but a message
            // may still have to show one
            write_ty(out, elem, true);
        }
        Type::Tuple(ts) => {
            out.push('(');
            for (i, t) in ts.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_ty(out, t, false);
            }
            out.push(')');
        }
        Type::Record(fs) => {
            out.push('{');
            for (i, (n, t)) in fs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(n);
                out.push_str(": ");
                write_ty(out, t, false);
            }
            out.push('}');
        }
        Type::Arrow(a, b) => {
            if arrow_left {
                out.push('(');
            }
            write_ty(out, a, true);
            out.push_str(" -> ");
            write_ty(out, b, false);
            if arrow_left {
                out.push(')');
            }
        }
    }
}

fn write_size(out: &mut String, d: &Size) {
    match d {
        Size::Any => out.push_str("[]"),
        Size::Const(n) => {
            let _ = write!(out, "[{n}]");
        }
        // a size variable of the checker (`?3`) is not yet known
        Size::Var(v) if v.starts_with('?') => out.push_str("[]"),
        Size::Var(v) => {
            let _ = write!(out, "[{v}]");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ast::PrimType;

    #[test]
    fn types_print_as_futhark_writes_them() {
        let f32 = Type::Prim(PrimType::F32);
        let arr = Type::Array { elem: Box::new(f32.clone()), shape: vec![Size::Var("n".into()), Size::Any] };
        assert_eq!(show(&arr), "[n][]f32");
        let pair = Type::Tuple(vec![Type::Prim(PrimType::I32), Type::Prim(PrimType::Bool)]);
        assert_eq!(show(&pair), "(i32, bool)");
        assert_eq!(show(&Type::Record(vec![("x".into(), f32.clone())])), "{x: f32}");
        let a = Type::Param("a".into());
        let ab = Type::Arrow(Box::new(a.clone()), Box::new(Type::Param("b".into())));
        assert_eq!(show(&ab), "a -> b");
        assert_eq!(show(&Type::Arrow(Box::new(ab.clone()), Box::new(a))), "(a -> b) -> a");
        let fs = Type::Array { elem: Box::new(ab), shape: vec![Size::Const(2)] };
        assert_eq!(show(&fs), "[2](a -> b)");
        assert_eq!(show(&Type::Tuple(vec![])), "()");
    }
}

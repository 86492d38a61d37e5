//! Types printed as Futhark writes them (`[n][]f32`, `(i32, bool)`,
//! `{x: f32}`, `a -> b`), for the checker's messages: the printer's
//! (`pretty::ty`), after showing what inference has not learnt yet as a
//! reader would write it, a unification variable as `_` and a size
//! variable (`?3`) as `[]`.

use super::infer::size_var;
use crate::ast::{Size, Type};

/// The type as Futhark source text.
pub fn show(ty: &Type) -> String {
    crate::pretty::ty(&unknowns_as_holes(ty))
}

fn unknowns_as_holes(t: &Type) -> Type {
    match t {
        Type::Infer(_) => Type::Param("_".into()),
        Type::Array { elem, shape } => Type::Array {
            elem: Box::new(unknowns_as_holes(elem)),
            shape: shape.iter().map(|s| if size_var(s).is_some() { Size::Any } else { s.clone() }).collect(),
        },
        Type::Tuple(ts) => Type::Tuple(ts.iter().map(unknowns_as_holes).collect()),
        Type::Record(fs) => Type::Record(fs.iter().map(|(n, t)| (n.clone(), unknowns_as_holes(t))).collect()),
        Type::Arrow(a, b) => Type::Arrow(Box::new(unknowns_as_holes(a)), Box::new(unknowns_as_holes(b))),
        Type::Unknown | Type::Prim(_) | Type::Param(_) => t.clone(),
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
        let hole = Type::Array { elem: Box::new(Type::Infer(3)), shape: vec![Size::Var("?0".into())] };
        assert_eq!(show(&Type::Arrow(Box::new(hole), Box::new(Type::Infer(4)))), "[]_ -> _");
    }
}

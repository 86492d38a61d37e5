//! The prelude the checker knows by name: the array combinators and
//! utilities of Futhark's prelude (`map`, `reduce`, `zip`, `iota`, ...),
//! each with its polymorphic signature, and the numeric namespaces
//! (`f32.sqrt`, `i64.max`, `f32.i64`, ...). None of them is a definition
//! in the tree; later stages recognise them by name where no definition or
//! local variable of that name hides them.
//!
//! A signature is written as Futhark writes it and read by a small parser
//! here, so that the table below reads like the prelude's documentation.
//! Its type parameters are not lifted (`'a`: never instantiated with a
//! type containing a function, TFP'18 restriction 4) unless written `'^a`,
//! as Futhark's prelude declares them: the functional combinators (`id`,
//! `const`, `flip`, `curry`, `uncurry`) are lifted; `fst` and `snd`, not in
//! Futhark's prelude, are lifted too, since taking a pair apart returns
//! no function that was not already there. A size written in a signature
//! (`[n]`) is instantiated fresh at each use; `[]` is a size the checker
//! does not track.

use crate::ast::{PrimType, Size, Type};

/// `(name, type parameters, type)`.
const PRELUDE: &[(&str, &str, &str)] = &[
    ("map", "'a 'b", "(a -> b) -> [n]a -> [n]b"),
    ("map1", "'a 'b", "(a -> b) -> [n]a -> [n]b"),
    ("map2", "'a 'b 'c", "(a -> b -> c) -> [n]a -> [n]b -> [n]c"),
    ("map3", "'a 'b 'c 'd", "(a -> b -> c -> d) -> [n]a -> [n]b -> [n]c -> [n]d"),
    ("map4", "'a 'b 'c 'd 'e", "(a -> b -> c -> d -> e) -> [n]a -> [n]b -> [n]c -> [n]d -> [n]e"),
    (
        "map5",
        "'a 'b 'c 'd 'e 'f",
        "(a -> b -> c -> d -> e -> f) -> [n]a -> [n]b -> [n]c -> [n]d -> [n]e -> [n]f",
    ),
    ("reduce", "'a", "(a -> a -> a) -> a -> []a -> a"),
    ("reduce_comm", "'a", "(a -> a -> a) -> a -> []a -> a"),
    ("scan", "'a", "(a -> a -> a) -> a -> [n]a -> [n]a"),
    ("filter", "'a", "(a -> bool) -> []a -> []a"),
    ("partition", "'a", "(a -> bool) -> []a -> ([]a, []a)"),
    ("scatter", "'t", "[k]t -> [n]i64 -> [n]t -> [k]t"),
    ("hist", "'a", "(a -> a -> a) -> a -> i64 -> [n]i64 -> [n]a -> []a"),
    ("reduce_by_index", "'a", "[k]a -> (a -> a -> a) -> a -> [n]i64 -> [n]a -> [k]a"),
    ("iota", "", "i64 -> []i64"),
    ("replicate", "'a", "i64 -> a -> []a"),
    ("zip", "'a 'b", "[n]a -> [n]b -> [n](a, b)"),
    ("zip2", "'a 'b", "[n]a -> [n]b -> [n](a, b)"),
    ("zip3", "'a 'b 'c", "[n]a -> [n]b -> [n]c -> [n](a, b, c)"),
    ("zip4", "'a 'b 'c 'd", "[n]a -> [n]b -> [n]c -> [n]d -> [n](a, b, c, d)"),
    ("zip5", "'a 'b 'c 'd 'e", "[n]a -> [n]b -> [n]c -> [n]d -> [n]e -> [n](a, b, c, d, e)"),
    ("unzip", "'a 'b", "[n](a, b) -> ([n]a, [n]b)"),
    ("unzip2", "'a 'b", "[n](a, b) -> ([n]a, [n]b)"),
    ("unzip3", "'a 'b 'c", "[n](a, b, c) -> ([n]a, [n]b, [n]c)"),
    ("unzip4", "'a 'b 'c 'd", "[n](a, b, c, d) -> ([n]a, [n]b, [n]c, [n]d)"),
    ("unzip5", "'a 'b 'c 'd 'e", "[n](a, b, c, d, e) -> ([n]a, [n]b, [n]c, [n]d, [n]e)"),
    ("length", "'a", "[n]a -> i64"),
    ("reverse", "'a", "[n]a -> [n]a"),
    ("rotate", "'a", "i64 -> [n]a -> [n]a"),
    ("transpose", "'a", "[n][m]a -> [m][n]a"),
    ("flatten", "'a", "[n][m]a -> []a"),
    ("unflatten", "'a", "i64 -> i64 -> []a -> [][]a"),
    ("concat", "'a", "[n]a -> [m]a -> []a"),
    ("take", "'a", "i64 -> []a -> []a"),
    ("drop", "'a", "i64 -> []a -> []a"),
    ("split", "'a", "i64 -> []a -> ([]a, []a)"),
    ("head", "'a", "[n]a -> a"),
    ("tail", "'a", "[n]a -> []a"),
    ("last", "'a", "[n]a -> a"),
    ("init", "'a", "[n]a -> []a"),
    ("foldl", "'a 'b", "(a -> b -> a) -> a -> []b -> a"),
    ("foldr", "'a 'b", "(b -> a -> a) -> a -> []b -> a"),
    ("id", "'^a", "a -> a"),
    ("const", "'^a '^b", "a -> b -> a"),
    ("flip", "'^a '^b '^c", "(a -> b -> c) -> b -> a -> c"),
    ("curry", "'^a '^b '^c", "((a, b) -> c) -> a -> b -> c"),
    ("uncurry", "'^a '^b '^c", "(a -> b -> c) -> (a, b) -> c"),
    ("fst", "'^a '^b", "(a, b) -> a"),
    ("snd", "'^a '^b", "(a, b) -> b"),
    ("tabulate", "'a", "i64 -> (i64 -> a) -> []a"),
    ("tabulate_2d", "'a", "i64 -> i64 -> (i64 -> i64 -> a) -> [][]a"),
    ("tabulate_3d", "'a", "i64 -> i64 -> i64 -> (i64 -> i64 -> i64 -> a) -> [][][]a"),
    ("and", "", "[n]bool -> bool"),
    ("or", "", "[n]bool -> bool"),
    ("all", "'a", "(a -> bool) -> []a -> bool"),
    ("any", "'a", "(a -> bool) -> []a -> bool"),
];

/// A polymorphic signature: its type parameters (name, lifted) in order,
/// and its type, where they appear as `Type::Param`.
#[derive(Clone, Debug, PartialEq)]
pub struct Signature {
    pub type_params: Vec<(String, bool)>,
    pub ty: Type,
}

/// The names of the prelude's functions, in the order of the table.
pub fn prelude_names() -> impl Iterator<Item = &'static str> {
    PRELUDE.iter().map(|(n, _, _)| *n)
}

/// The signature of a prelude function.
pub fn prelude(name: &str) -> Option<Signature> {
    let (_, params, sig) = PRELUDE.iter().find(|(n, _, _)| *n == name)?;
    let type_params = params
        .split_whitespace()
        .map(|p| match p.strip_prefix("'^") {
            Some(p) => (p.to_string(), true),
            None => (p.trim_start_matches('\'').to_string(), false),
        })
        .collect();
    Some(Signature { type_params, ty: parse_sig(sig)? })
}

/// The type of `qual.name` in a numeric namespace (`f32.sqrt`), or of a
/// conversion (`f32.i64: i64 -> f32`, `bool.i32: i32 -> bool`).
pub fn namespace(qual: &str, name: &str) -> Option<Type> {
    let t = PrimType::from_name(qual)?;
    let ty = Type::Prim(t);
    let arrow = |a: Type, b: Type| Type::Arrow(Box::new(a), Box::new(b));
    // `t -> res` and `t -> t -> res`
    let unary = |res: Type| arrow(ty.clone(), res);
    let binary = |res: Type| arrow(ty.clone(), arrow(ty.clone(), res));
    if let Some(from) = PrimType::from_name(name) {
        return Some(arrow(Type::Prim(from), ty));
    }
    if t == PrimType::Bool {
        return None;
    }
    let array = Type::Array { elem: Box::new(ty.clone()), shape: vec![Size::Any] };
    let common = match name {
        "abs" | "sgn" => Some(unary(ty.clone())),
        "min" | "max" => Some(binary(ty.clone())),
        "highest" | "lowest" => Some(ty.clone()),
        "sum" | "product" | "maximum" | "minimum" => Some(arrow(array, ty.clone())),
        _ => None,
    };
    if common.is_some() {
        return common;
    }
    if t.is_float() {
        match name {
            "sqrt" | "exp" | "log" | "log2" | "log10" | "sin" | "cos" | "tan" | "asin" | "acos" | "atan"
            | "sinh" | "cosh" | "tanh" | "floor" | "ceil" | "round" | "trunc" => Some(unary(ty.clone())),
            "atan2" | "pow" => Some(binary(ty.clone())),
            "isnan" | "isinf" => Some(unary(Type::Prim(PrimType::Bool))),
            "pi" | "e" | "inf" | "nan" => Some(ty.clone()),
            _ => None,
        }
    } else {
        match name {
            "popc" | "clz" | "ctz" => Some(unary(Type::Prim(PrimType::I32))),
            _ => None,
        }
    }
}

/// Reads a signature's type: primitive names are primitive types, any
/// other name a type parameter; `[n]`, `[3]`, `[]` sizes.
fn parse_sig(text: &str) -> Option<Type> {
    let toks = tokens(text);
    let mut pos = 0;
    let ty = sig_type(&toks, &mut pos)?;
    (pos == toks.len()).then_some(ty)
}

fn tokens(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {}
            '-' if chars.peek() == Some(&'>') => {
                chars.next();
                out.push("->".into());
            }
            c if c.is_alphanumeric() || c == '_' => {
                let mut word = c.to_string();
                while let Some(&d) = chars.peek().filter(|d| d.is_alphanumeric() || **d == '_') {
                    word.push(d);
                    chars.next();
                }
                out.push(word);
            }
            c => out.push(c.to_string()),
        }
    }
    out
}

fn sig_type(toks: &[String], pos: &mut usize) -> Option<Type> {
    let a = sig_atom(toks, pos)?;
    if toks.get(*pos).map(String::as_str) == Some("->") {
        *pos += 1;
        let b = sig_type(toks, pos)?;
        return Some(Type::Arrow(Box::new(a), Box::new(b)));
    }
    Some(a)
}

fn sig_atom(toks: &[String], pos: &mut usize) -> Option<Type> {
    let tok = toks.get(*pos)?.as_str();
    *pos += 1;
    match tok {
        "[" => {
            let size = match toks.get(*pos)?.as_str() {
                "]" => Size::Any,
                s => {
                    *pos += 1;
                    s.parse().map(Size::Const).unwrap_or_else(|_| Size::Var(s.to_string()))
                }
            };
            (toks.get(*pos)?.as_str() == "]").then_some(())?;
            *pos += 1;
            let elem = sig_atom(toks, pos)?;
            Some(super::infer::mk_array(elem, vec![size]))
        }
        "(" => {
            let mut ts = Vec::new();
            while toks.get(*pos)?.as_str() != ")" {
                ts.push(sig_type(toks, pos)?);
                if toks.get(*pos)?.as_str() == "," {
                    *pos += 1;
                }
            }
            *pos += 1;
            Some(if ts.len() == 1 { ts.pop()? } else { Type::Tuple(ts) })
        }
        name => {
            Some(PrimType::from_name(name).map(Type::Prim).unwrap_or_else(|| Type::Param(name.to_string())))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::print::show;

    #[test]
    fn every_signature_reads_back_as_written() {
        for (name, _, sig) in PRELUDE {
            let s = prelude(name).unwrap_or_else(|| panic!("{name}: {sig}"));
            assert_eq!(show(&s.ty), *sig, "{name}");
            let mut used = Vec::new();
            collect_params(&s.ty, &mut used);
            for p in &used {
                assert!(s.type_params.iter().any(|(q, _)| q == p), "{name}: {p} is not a parameter");
            }
            for (p, _) in &s.type_params {
                assert!(used.contains(p), "{name}: {p} is not used");
            }
        }
    }

    fn collect_params(t: &Type, out: &mut Vec<String>) {
        match t {
            Type::Param(p) => out.push(p.clone()),
            Type::Array { elem, .. } => collect_params(elem, out),
            Type::Tuple(ts) => ts.iter().for_each(|t| collect_params(t, out)),
            Type::Record(fs) => fs.iter().for_each(|(_, t)| collect_params(t, out)),
            Type::Arrow(a, b) => {
                collect_params(a, out);
                collect_params(b, out)
            }
            _ => {}
        }
    }

    #[test]
    fn the_functional_combinators_are_lifted_and_the_soacs_are_not() {
        assert!(prelude("flip").unwrap().type_params.iter().all(|(_, l)| *l));
        assert!(prelude("map").unwrap().type_params.iter().all(|(_, l)| !*l));
    }

    #[test]
    fn numeric_namespaces_give_conversions_and_functions() {
        assert_eq!(show(&namespace("f32", "i64").unwrap()), "i64 -> f32");
        assert_eq!(show(&namespace("bool", "i32").unwrap()), "i32 -> bool");
        assert_eq!(show(&namespace("f64", "atan2").unwrap()), "f64 -> f64 -> f64");
        assert_eq!(show(&namespace("i32", "sum").unwrap()), "[]i32 -> i32");
        assert_eq!(show(&namespace("u8", "popc").unwrap()), "u8 -> i32");
        assert_eq!(namespace("i32", "sqrt"), None);
        assert_eq!(namespace("f32", "popc"), None);
        assert_eq!(namespace("bool", "abs"), None);
        assert_eq!(namespace("point", "x"), None);
    }
}

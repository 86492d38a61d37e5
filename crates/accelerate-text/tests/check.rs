//! The type checker, from source text: the types it fills in for each
//! construct, inference through the prelude, polymorphism and its
//! instantiations, higher-order programs, each TFP'18 restriction and
//! each kind of type error with its message and place, and the
//! invariants of the filled-in tree (every type resolved, arrays normal,
//! records sorted) on every program that checks.

use accelerate_text::ast::*;
use accelerate_text::check::check_program;
use accelerate_text::check::print::show;
use accelerate_text::diag::{DiagKind, Diagnostic, SourceFile};
use accelerate_text::parser::parse_program;

const PROGRAMS: [(&str, &str); 6] = [
    ("dotp.fut", include_str!("programs/dotp.fut")),
    ("blackscholes.fut", include_str!("programs/blackscholes.fut")),
    ("mandelbrot.fut", include_str!("programs/mandelbrot.fut")),
    ("nbody.fut", include_str!("programs/nbody.fut")),
    ("higher_order.fut", include_str!("programs/higher_order.fut")),
    ("misc.fut", include_str!("programs/misc.fut")),
];

fn parse(src: &str) -> Program {
    let f = SourceFile::new("t.fut", src);
    parse_program(&f).unwrap_or_else(|d| panic!("{}", f.render(&d)))
}

/// The program, checked; its tree's invariants hold.
fn checked(src: &str) -> Program {
    let mut p = parse(src);
    if let Err(d) = check_program(&mut p) {
        panic!("{}", SourceFile::new("t.fut", src).render(&d));
    }
    assert_filled(&p);
    p
}

fn check_err(src: &str) -> Diagnostic {
    let mut p = parse(src);
    match check_program(&mut p) {
        Ok(()) => panic!("checked, but should not have:\n{src}"),
        Err(d) => d,
    }
}

/// The error's kind, message and the text it points at.
fn error(src: &str) -> (DiagKind, String, String) {
    let d = check_err(src);
    let at = src.get(d.span.start..d.span.end).unwrap_or("<bad span>").to_string();
    (d.kind, d.message, at)
}

fn value_decl<'p>(p: &'p Program, name: &str) -> &'p ValueDecl {
    p.decls
        .iter()
        .find_map(|d| match d {
            Decl::Value(v) if v.name.name == name => Some(v),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no definition `{name}`"))
}

/// The type of the definition `name`.
fn def_ty(src: &str, name: &str) -> String {
    show(&value_decl(&checked(src), name).ty)
}

fn index_exprs(ds: &[DimIndex]) -> Vec<&Expr> {
    ds.iter()
        .flat_map(|d| match d {
            DimIndex::Fix(e) => vec![e],
            DimIndex::Slice { start, end, stride } => [start, end, stride].into_iter().flatten().collect(),
        })
        .collect()
}

fn children(e: &Expr) -> Vec<&Expr> {
    let idx = index_exprs;
    match &e.kind {
        ExprKind::Lit(_) | ExprKind::Var { .. } | ExprKind::OpSection(_) | ExprKind::ProjSection(_) => vec![],
        ExprKind::Tuple(es) | ExprKind::ArrayLit(es) => es.iter().collect(),
        ExprKind::Record(fs) => fs.iter().map(|(_, e)| e).collect(),
        ExprKind::Project(x, _)
        | ExprKind::Neg(x)
        | ExprKind::Not(x)
        | ExprKind::LeftSection(_, x)
        | ExprKind::RightSection(_, x)
        | ExprKind::Ascribe(x, _)
        | ExprKind::Lambda(_, _, x) => vec![x],
        ExprKind::Index(a, ds) => std::iter::once(&**a).chain(idx(ds)).collect(),
        ExprKind::Update(a, ds, v) => std::iter::once(&**a).chain(idx(ds)).chain([&**v]).collect(),
        ExprKind::RecordUpdate(a, _, v) => vec![&**a, &**v],
        ExprKind::Apply(a, b) | ExprKind::BinOp(_, a, b) | ExprKind::Let(_, a, b) => vec![a, b],
        ExprKind::LetFun { def, body, .. } => vec![def, body],
        ExprKind::If(c, t, f) => vec![c, t, f],
        ExprKind::Loop { init, form, body, .. } => {
            let mut out: Vec<&Expr> = init.iter().map(|e| &**e).collect();
            out.push(match form {
                LoopForm::For(_, n) => n,
                LoopForm::ForIn(_, xs) => xs,
                LoopForm::While(c) => c,
            });
            out.push(body);
            out
        }
        ExprKind::Match(s, cases) => std::iter::once(&**s).chain(cases.iter().map(|(_, e)| e)).collect(),
    }
}

fn patterns(e: &Expr) -> Vec<&Pat> {
    match &e.kind {
        ExprKind::Lambda(ps, _, _) => ps.iter().collect(),
        ExprKind::Let(p, _, _) => vec![p],
        ExprKind::LetFun { params, .. } => params.iter().collect(),
        ExprKind::Loop { pat, form: LoopForm::ForIn(p, _), .. } => vec![pat, p],
        ExprKind::Loop { pat, .. } => vec![pat],
        ExprKind::Match(_, cases) => cases.iter().map(|(p, _)| p).collect(),
        _ => vec![],
    }
}

fn all_exprs(p: &Program) -> Vec<&Expr> {
    fn go<'a>(e: &'a Expr, out: &mut Vec<&'a Expr>) {
        out.push(e);
        children(e).into_iter().for_each(|c| go(c, out));
    }
    let mut out = Vec::new();
    for d in &p.decls {
        if let Decl::Value(v) = d {
            go(&v.body, &mut out);
        }
    }
    out
}

fn all_pats(p: &Program) -> Vec<&Pat> {
    fn go<'a>(q: &'a Pat, out: &mut Vec<&'a Pat>) {
        out.push(q);
        match &q.kind {
            PatKind::Tuple(ps) => ps.iter().for_each(|q| go(q, out)),
            PatKind::Record(fs) => fs.iter().for_each(|(_, q)| go(q, out)),
            PatKind::Ascribe(q, _) => go(q, out),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for d in &p.decls {
        if let Decl::Value(v) = d {
            v.params.iter().for_each(|q| go(q, &mut out));
        }
    }
    for e in all_exprs(p) {
        patterns(e).into_iter().for_each(|q| go(q, &mut out));
    }
    out
}

/// The type of the first expression (in the order of the tree) whose
/// source text is `text`.
fn expr_ty(src: &str, text: &str) -> String {
    let p = checked(src);
    let e = all_exprs(&p)
        .into_iter()
        .find(|e| &src[e.span.start..e.span.end] == text)
        .unwrap_or_else(|| panic!("no expression `{text}`"));
    show(&e.ty)
}

fn pat_ty(src: &str, text: &str) -> String {
    let p = checked(src);
    let q = all_pats(&p)
        .into_iter()
        .find(|q| &src[q.span.start..q.span.end] == text)
        .unwrap_or_else(|| panic!("no pattern `{text}`"));
    show(&q.ty)
}

/// The instantiations of the uses of `name`, in order.
fn insts(src: &str, name: &str) -> Vec<String> {
    let p = checked(src);
    all_exprs(&p)
        .into_iter()
        .filter_map(|e| match &e.kind {
            ExprKind::Var { name: n, qual: None, inst } if n.name == name => {
                Some(inst.iter().map(show).collect::<Vec<_>>().join(", "))
            }
            _ => None,
        })
        .collect()
}

/// Every type resolved, arrays normal, records sorted.
fn assert_filled(p: &Program) {
    fn ok(t: &Type) -> bool {
        match t {
            Type::Unknown | Type::Infer(_) => false,
            Type::Prim(_) | Type::Param(_) => true,
            Type::Array { elem, shape } => {
                !shape.is_empty() && !matches!(**elem, Type::Array { .. }) && ok(elem)
            }
            Type::Tuple(ts) => ts.len() != 1 && ts.iter().all(ok),
            Type::Record(fs) => fs.windows(2).all(|w| w[0].0 < w[1].0) && fs.iter().all(|(_, t)| ok(t)),
            Type::Arrow(a, b) => ok(a) && ok(b),
        }
    }
    for d in &p.decls {
        if let Decl::Value(v) = d {
            assert!(ok(&v.ty), "{}: {:?}", v.name.name, v.ty);
        }
    }
    for e in all_exprs(p) {
        assert!(ok(&e.ty), "{:?}", e);
        if let ExprKind::Var { inst, .. } = &e.kind {
            assert!(inst.iter().all(ok), "{:?}", e);
        }
    }
    for q in all_pats(p) {
        assert!(ok(&q.ty), "{:?}", q);
    }
}

// ---- literals and operators ----

#[test]
fn unsuffixed_literals_default_to_i32_and_f64() {
    assert_eq!(def_ty("def x = 1", "x"), "i32");
    assert_eq!(def_ty("def y = 1.5", "y"), "f64");
    assert_eq!(def_ty("def z = 1 + 2.5", "z"), "f64");
    assert_eq!(def_ty("def b = true", "b"), "bool");
}

#[test]
fn unsuffixed_literals_take_the_type_around_them() {
    assert_eq!(def_ty("def f (a: f32) = a + 1", "f"), "f32 -> f32");
    assert_eq!(def_ty("def g = 1u8 + 2", "g"), "u8");
    assert_eq!(def_ty("def h (x: i64) = x * 2 - 1", "h"), "i64 -> i64");
    assert_eq!(expr_ty("def k (x: f32) = let y = 3 in x * y", "3"), "f32");
}

#[test]
fn a_float_literal_is_never_an_integer() {
    let (kind, msg, at) = error("def f (x: i32) = x + 1.5");
    assert_eq!(kind, DiagKind::Type);
    assert_eq!(msg, "expected `i32`, found a floating-point type");
    assert_eq!(at, "1.5");
}

#[test]
fn integer_literals_must_fit_their_type() {
    let (_, msg, at) = error("def f (x: u8) = x + 300");
    assert_eq!(msg, "the literal 300 does not fit in `u8`");
    assert_eq!(at, "300");
}

#[test]
fn arithmetic_is_one_numeric_type_and_comparison_gives_bool() {
    assert_eq!(def_ty("def f (a: i64) (b: i64) = a < b", "f"), "i64 -> i64 -> bool");
    assert_eq!(def_ty("def g (a: f32) (b: f32) = a ** b / 2", "g"), "f32 -> f32 -> f32");
    assert_eq!(def_ty("def h (x: u32) = (x << 2) & 7 ^ x", "h"), "u32 -> u32");
    assert_eq!(def_ty("def e (xs: []i32) (ys: []i32) = xs == ys", "e"), "[]i32 -> []i32 -> bool");
    assert_eq!(def_ty("def l (a: bool) (b: bool) = a && !b || a", "l"), "bool -> bool -> bool");
    assert_eq!(def_ty("def n (x: i16) = !x", "n"), "i16 -> i16");
    assert_eq!(def_ty("def m (x: f64) = -x", "m"), "f64 -> f64");
    assert_eq!(def_ty("def c (a: bool) (b: bool) = a < b", "c"), "bool -> bool -> bool");
}

#[test]
fn operands_of_different_types_are_an_error_at_the_second() {
    let (kind, msg, at) = error("def f (x: i32) =\n  x + true");
    assert_eq!(kind, DiagKind::Type);
    assert_eq!(msg, "expected `i32`, found `bool`");
    assert_eq!(at, "true");
}

#[test]
fn operators_reject_the_types_they_do_not_support() {
    assert_eq!(error("def f (x: f32) = x & x").1, "expected an integral type, found `f32`");
    assert_eq!(error("def f (b: bool) = b + b").1, "expected a numeric type, found `bool`");
    assert_eq!(error("def f (x: i32) = x && x").1, "expected `bool`, found `i32`");
    assert_eq!(error("def f (x: f32) = !x").1, "expected `bool` or an integral type, found `f32`");
    let (_, msg, at) = error("def f (g: i32 -> i32) = g == g");
    assert_eq!(msg, "expected a type that supports `==` (no functions in it), found `i32 -> i32`");
    assert_eq!(at, "g");
    assert_eq!(error("def f (x: (i32, i32)) = x < x").1, "expected a primitive type, found `(i32, i32)`");
}

#[test]
fn sections_are_functions_of_the_missing_operands() {
    assert_eq!(expr_ty("def f (x: f32) = (+)", "(+)"), "i32 -> i32 -> i32");
    assert_eq!(expr_ty("def f (x: f32) = (x *)", "(x *)"), "f32 -> f32");
    assert_eq!(expr_ty("def f (x: i64) = (< x)", "(< x)"), "i64 -> bool");
    assert_eq!(def_ty("def f (xs: []f32) = map (* 2) xs", "f"), "[]f32 -> []f32");
    assert_eq!(def_ty("def g (xs: []i32) = reduce (+) 0 xs", "g"), "[]i32 -> i32");
}

// ---- binding forms ----

#[test]
fn let_binds_tuples_records_ascriptions_and_wildcards() {
    let src = "def f (p: (i32, f32)) =\n  let (a, b) = p\n  let {x, y = z} = {x = a, y = b}\n  \
               let (w: i64) = 3\n  let _ = true\n  in (x, z, w)";
    assert_eq!(def_ty(src, "f"), "(i32, f32) -> (i32, f32, i64)");
    assert_eq!(pat_ty(src, "{x, y = z}"), "{x: i32, y: f32}");
    assert_eq!(pat_ty(src, "(w: i64)"), "i64");
    assert_eq!(pat_ty(src, "_"), "bool");
}

#[test]
fn a_pattern_ascription_that_disagrees_is_an_error_at_the_value() {
    let (_, msg, at) = error("def f = let (x: i32) = true in x");
    assert_eq!(msg, "expected `i32`, found `bool`");
    assert_eq!(at, "true");
}

#[test]
fn local_functions_are_monomorphic() {
    assert_eq!(def_ty("def f (a: i32) = let sq x = x * x in sq a + 1", "f"), "i32 -> i32");
    let (kind, msg, at) = error("def f = let g x = x in (g 1, g true)");
    assert_eq!(kind, DiagKind::Type);
    assert_eq!(msg, "expected a numeric type, found `bool`");
    assert_eq!(at, "true");
}

#[test]
fn local_functions_may_not_have_type_parameters() {
    let (kind, msg, at) = error("def f = let g 'a (x: a) = x in g 1");
    assert_eq!(kind, DiagKind::Unsupported);
    assert!(msg.contains("local functions are not polymorphic"), "{msg}");
    assert_eq!(at, "a");
}

#[test]
fn local_functions_with_size_parameters_are_instantiated_at_each_use() {
    let src = "def f (xs: [3]i32) (ys: [4]i32) =\n  let len [n] (zs: [n]i32): i64 = n\n  in len xs + len ys";
    assert_eq!(def_ty(src, "f"), "[3]i32 -> [4]i32 -> i64");
    assert_eq!(expr_ty(src, "len"), "[3]i32 -> i64");
}

#[test]
fn lambdas_are_curried_and_applied_one_argument_at_a_time() {
    let src = "def f = let add = \\(x: i32) (y: i32) -> x + y in add 1";
    assert_eq!(def_ty(src, "f"), "i32 -> i32");
    assert_eq!(expr_ty(src, "add 1"), "i32 -> i32");
}

#[test]
fn applying_a_value_that_is_not_a_function_is_an_error_at_it() {
    let (_, msg, at) = error("def f (x: i32) = x 1");
    assert_eq!(msg, "this has type `i32`, which is not a function, but it is applied to an argument");
    assert_eq!(at, "x");
    let (_, msg, at) = error("def g (f: i32 -> i32) = f true");
    assert_eq!(msg, "expected `i32`, found `bool`");
    assert_eq!(at, "true");
}

// ---- control flow ----

#[test]
fn if_needs_a_bool_and_branches_of_one_type() {
    assert_eq!(def_ty("def f (c: bool) = if c then 1 else 2i8", "f"), "bool -> i8");
    let (_, msg, at) = error("def f (x: i32) = if x then 1 else 2");
    assert_eq!((msg.as_str(), at.as_str()), ("expected `bool`, found `i32`", "x"));
    let (_, msg, at) = error("def f (c: bool) = if c then 1 else false");
    assert_eq!((msg.as_str(), at.as_str()), ("expected a numeric type, found `bool`", "false"));
}

#[test]
fn branches_keep_only_the_sizes_they_agree_on() {
    let src = "def f [n] [m] (c: bool) (xs: [n]f32) (ys: [m]f32) = if c then xs else ys";
    assert_eq!(def_ty(src, "f"), "bool -> [n]f32 -> [m]f32 -> []f32");
    let src = "def g [n] (c: bool) (xs: [n]f32) (ys: [n]f32) = if c then xs else ys";
    assert_eq!(def_ty(src, "g"), "bool -> [n]f32 -> [n]f32 -> [n]f32");
}

#[test]
fn for_loops_bind_the_index_with_the_bound_type() {
    let src = "def f (n: i64) = loop acc = 0 for i < n do acc + i";
    assert_eq!(def_ty(src, "f"), "i64 -> i64");
    assert_eq!(pat_ty(src, "acc"), "i64");
}

#[test]
fn for_in_loops_bind_the_elements() {
    let src = "def f (xs: [][2]f32) = loop (a, b) = (0, 0) for row in xs do (a + row[0], b + row[1])";
    assert_eq!(def_ty(src, "f"), "[][2]f32 -> (f32, f32)");
    assert_eq!(pat_ty(src, "row"), "[2]f32");
}

#[test]
fn while_loops_see_their_parameters_in_the_condition() {
    let src = "def f (x: f64) = loop y = x while y < 100 do y * 2";
    assert_eq!(def_ty(src, "f"), "f64 -> f64");
    let (_, msg, at) = error("def f (x: f64) = loop y = x while y do y * 2");
    assert_eq!((msg.as_str(), at.as_str()), ("expected `bool`, found `f64`", "y"));
}

#[test]
fn a_loop_body_must_have_the_parameters_type() {
    let (_, msg, at) = error("def f (x: i32) = loop y = x for i < 10 do (y, y)");
    assert_eq!(msg, "expected `i32`, found `(i32, i32)`");
    assert_eq!(at, "(y, y)");
}

#[test]
fn loop_parameters_forget_the_sizes_of_their_initial_values() {
    let src = "def f [n] (xs: [n]i32) = loop ys = xs for i < 3 do concat ys ys";
    assert_eq!(def_ty(src, "f"), "[n]i32 -> []i32");
}

#[test]
fn a_loop_without_an_initial_value_takes_its_variables() {
    let src = "def f (x: i32) (y: f32) = loop (x, y) for i < 3 do (x + 1, y * 2)";
    assert_eq!(def_ty(src, "f"), "i32 -> f32 -> (i32, f32)");
}

#[test]
fn match_cases_have_the_scrutinee_type_and_one_result_type() {
    let src =
        "def f (p: (i32, bool)) = match p\n  case (0, b) -> b\n  case (_, true) -> false\n  case _ -> true";
    assert_eq!(def_ty(src, "f"), "(i32, bool) -> bool");
    let src = "def g (r: {x: i8, y: i8}) = match r\n  case {x = 1, y} -> y\n  case {x, y = _} -> x";
    assert_eq!(def_ty(src, "g"), "{x: i8, y: i8} -> i8");
    let (_, msg, at) = error("def h (x: i32) = match x\n  case 0 -> 1\n  case _ -> true");
    assert_eq!((msg.as_str(), at.as_str()), ("expected a numeric type, found `bool`", "true"));
    let (_, msg, at) = error("def h (x: i32) = match x\n  case true -> 1\n  case _ -> 2");
    assert_eq!((msg.as_str(), at.as_str()), ("expected `i32`, found `bool`", "true"));
}

// ---- arrays ----

#[test]
fn array_literals_nest_into_higher_rank() {
    assert_eq!(def_ty("def a = [[1, 2], [3, 4]]", "a"), "[2][2]i32");
    assert_eq!(def_ty("def b = [1f32, 2, 3]", "b"), "[3]f32");
    let (_, msg, at) = error("def c = [1, true]");
    assert_eq!((msg.as_str(), at.as_str()), ("expected a numeric type, found `bool`", "true"));
}

#[test]
fn indexing_removes_a_dimension_per_index_and_slices_keep_theirs() {
    let src = "def f [n] [m] (a: [n][m]f32) (i: i64) = (a[i], a[i, 0], a[1:3], a[:, i], a[i, ::2])";
    assert_eq!(def_ty(src, "f"), "[n][m]f32 -> i64 -> ([m]f32, f32, [][m]f32, []f32, []f32)");
    let (_, msg, at) = error("def g (x: f32) = x[0]");
    assert!(msg.starts_with("expected an array of rank at least 1, found `f32`"), "{msg}");
    assert_eq!(at, "x");
    let (_, msg, at) = error("def h (xs: []f32) = xs[1.0]");
    assert_eq!(
        (msg.as_str(), at.as_str()),
        ("expected an integral type, found a floating-point type", "1.0")
    );
    assert!(error("def k (xs: []f32) = xs[0, 1]").1.starts_with("expected an array of rank at least 2"));
}

#[test]
fn indexing_a_value_of_unknown_rank_learns_it() {
    let src = "def f (m: [][]f32) = map (\\row -> row[0] + row[1]) m";
    assert_eq!(def_ty(src, "f"), "[][]f32 -> []f32");
    assert_eq!(pat_ty(src, "row"), "[]f32");
}

#[test]
fn an_update_writes_a_value_of_the_indexed_parts_type() {
    let src = "def f (a: [][]i32) (r: []i32) = (a with [0] = r, a with [1, 2] = 7)";
    assert_eq!(def_ty(src, "f"), "[][]i32 -> []i32 -> ([][]i32, [][]i32)");
    let (_, msg, at) = error("def g (a: [][]i32) = a with [0] = 1i32");
    assert_eq!((msg.as_str(), at.as_str()), ("expected `[]i32`, found `i32`", "1i32"));
}

// ---- records and tuples ----

#[test]
fn records_are_sorted_by_field_and_projected() {
    let src = "def f (x: f32) = let r = {y = true, x} in (r, r.x, r.y)";
    assert_eq!(def_ty(src, "f"), "f32 -> ({x: f32, y: bool}, f32, bool)");
}

#[test]
fn tuple_fields_are_numbered_from_zero() {
    assert_eq!(def_ty("def f (p: (i32, f32, bool)) = (p.0, p.2)", "f"), "(i32, f32, bool) -> (i32, bool)");
    let (_, msg, at) = error("def g (p: (i32, f32)) = p.2");
    assert_eq!((msg.as_str(), at.as_str()), ("unknown field `2` in `(i32, f32)`", "2"));
}

#[test]
fn an_unknown_field_is_an_error_at_the_field() {
    let (kind, msg, at) = error("def f (r: {x: f32}) = r.y");
    assert_eq!(kind, DiagKind::Type);
    assert_eq!((msg.as_str(), at.as_str()), ("unknown field `y` in `{x: f32}`", "y"));
}

#[test]
fn projections_from_a_type_learnt_later_are_checked_when_it_is() {
    let src = "def f (ps: []{x: f32, y: f32}) = (map (.x) ps, map (\\p -> p.y + 1) ps)";
    assert_eq!(def_ty(src, "f"), "[]{x: f32, y: f32} -> ([]f32, []f32)");
    let (_, msg, at) = error("def g (ps: []{x: f32}) = map (\\p -> p.z) ps");
    assert_eq!((msg.as_str(), at.as_str()), ("unknown field `z` in `{x: f32}`", "z"));
}

#[test]
fn a_projection_from_a_type_never_learnt_is_an_error() {
    let (kind, msg, at) = error("def f = let g = \\r -> r.x in 1");
    assert_eq!(kind, DiagKind::Type);
    assert!(msg.contains("field `x`") && msg.contains("not known"), "{msg}");
    assert_eq!(at, "x");
}

#[test]
fn ascription_gives_the_written_type() {
    assert_eq!(expr_ty("def f = (1 : i8)", "(1 : i8)"), "i8");
    assert_eq!(expr_ty("def g = [1, 2] : [2]u16", "[1, 2] : [2]u16"), "[2]u16");
    let (_, msg, at) = error("def h = (1.0 : i32)");
    assert_eq!((msg.as_str(), at.as_str()), ("expected `i32`, found a floating-point type", "1.0"));
}

// ---- definitions ----

#[test]
fn a_definition_sees_only_earlier_ones() {
    let (kind, msg, at) = error("def f = g 1\ndef g (x: i32) = x");
    assert_eq!((kind, msg.as_str(), at.as_str()), (DiagKind::Type, "unknown variable `g`", "g"));
    assert_eq!(def_ty("def g (x: i32) = x\ndef f = g 1", "f"), "i32");
}

#[test]
fn recursion_is_an_error() {
    let (_, msg, at) = error("def f (x: i32): i32 = if x == 0 then 0 else f (x - 1)");
    assert!(msg.contains("may not be recursive"), "{msg}");
    assert_eq!(at, "f");
}

#[test]
fn unknown_names_and_types_are_errors_at_them() {
    assert_eq!(error("def f = x + 1").1, "unknown variable `x`");
    let (_, msg, at) = error("def f (x: point) = x");
    assert_eq!((msg.as_str(), at.as_str()), ("unknown type `point`", "point"));
    let (_, msg, at) = error("def f [n] (xs: [m]f32) = xs");
    assert_eq!((msg.as_str(), at.as_str()), ("unknown size `m`", "m"));
    assert_eq!(error("def f = 1\ndef f = 2").1, "`f` is already defined");
}

#[test]
fn size_parameters_are_i64_variables_in_the_body() {
    assert_eq!(def_ty("def len [n] (xs: [n]f32) = n", "len"), "[n]f32 -> i64");
    let src = "def f [n] (xs: [n]f32): [n]f32 = map (+ 1) xs";
    assert_eq!(def_ty(src, "f"), "[n]f32 -> [n]f32");
    assert_eq!(expr_ty(src, "map (+ 1) xs"), "[n]f32");
}

#[test]
fn a_size_may_name_an_earlier_parameter() {
    let src = "def f (n: i64) (xs: [n]i32) = xs";
    assert_eq!(def_ty(src, "f"), "i64 -> [n]i32 -> [n]i32");
    let (_, msg, at) = error("def g (n: f32) (xs: [n]i32) = xs");
    assert!(msg.starts_with("the size `n` must be an `i64`"), "{msg}");
    assert_eq!(at, "n");
}

#[test]
fn sizes_are_instantiated_at_each_use() {
    let src =
        "def first [n] (xs: [n]i32): [n]i32 = xs\ndef main (a: [3]i32) (b: [4]i32) = (first a, first b)";
    assert_eq!(def_ty(src, "main"), "[3]i32 -> [4]i32 -> ([3]i32, [4]i32)");
}

#[test]
fn a_local_size_does_not_escape_its_scope() {
    let src = "def f (x: f32) = let k = 3i64 in (replicate k x : [k]f32)";
    assert_eq!(def_ty(src, "f"), "f32 -> []f32");
    assert_eq!(expr_ty(src, "(replicate k x : [k]f32)"), "[k]f32");
}

#[test]
fn entry_points_may_not_be_polymorphic() {
    let (kind, msg, at) = error("entry main 'a (x: a) = x");
    assert_eq!(kind, DiagKind::Type);
    assert!(msg.contains("may not be polymorphic"), "{msg}");
    assert_eq!(at, "a");
    let (_, msg, at) = error("entry main x = x");
    assert_eq!((msg.as_str(), at.as_str()), ("the type `_` is ambiguous here; add a type annotation", "x"));
    assert_eq!(def_ty("entry main [n] (xs: [n]i32) = xs", "main"), "[n]i32 -> [n]i32");
}

#[test]
fn type_abbreviations_are_expanded_with_their_arguments() {
    let src = "type pair 't = (t, t)\ntype matrix [n] [m] = [n][m]f32\ntype row = [3]f32\n\
               def f (p: pair i32) (a: matrix [2] [5]) (rs: [4]row) = (p, a, rs)";
    assert_eq!(
        def_ty(src, "f"),
        "(i32, i32) -> [2][5]f32 -> [4][3]f32 -> ((i32, i32), [2][5]f32, [4][3]f32)"
    );
    assert_eq!(
        error("type pair 't = (t, t)\ndef f (p: pair) = p").1,
        "the type `pair` takes 1 argument(s), but is given 0"
    );
}

#[test]
fn numeric_namespaces_give_functions_and_conversions() {
    let src =
        "def f (x: i64) (y: f32) = (f32.i64 x + f32.sqrt y, i64.max x 2, f32.pi, bool.i64 x, f64.isnan 1)";
    assert_eq!(def_ty(src, "f"), "i64 -> f32 -> (f32, i64, f32, bool, bool)");
    assert_eq!(error("def f = f32.popc 1").1, "unknown variable `f32.popc`");
    assert_eq!(error("def f = i32.sum [1, 2] + f32.sum [1]").1, "expected `i32`, found `f32`");
}

// ---- polymorphism and the prelude ----

#[test]
fn map_infers_its_lambdas_parameter_from_the_array() {
    let src = "def main (xs: []f32) = map (\\x -> x + 1) xs";
    assert_eq!(def_ty(src, "main"), "[]f32 -> []f32");
    assert_eq!(expr_ty(src, "(\\x -> x + 1)"), "f32 -> f32");
    assert_eq!(expr_ty(src, "1"), "f32");
}

#[test]
fn polymorphic_definitions_are_instantiated_at_each_use() {
    let src = "def ident 'a (x: a): a = x\ndef main = (ident 1i32, ident true, ident [1f32])";
    assert_eq!(def_ty(src, "ident"), "a -> a");
    assert_eq!(def_ty(src, "main"), "(i32, bool, [1]f32)");
    assert_eq!(insts(src, "ident"), ["i32", "bool", "[1]f32"]);
}

#[test]
fn instantiations_follow_the_declared_order_of_type_parameters() {
    let src = "def pair 'a 'b (x: a) (y: b) = (x, y)\ndef main = pair true 2u8";
    assert_eq!(insts(src, "pair"), ["bool, u8"]);
}

#[test]
fn instantiations_may_mention_the_enclosing_definitions_parameters() {
    let src = "def ident 'a (x: a): a = x\ndef twice_ident 'b (y: b) = ident (ident y)";
    assert_eq!(def_ty(src, "twice_ident"), "b -> b");
    assert_eq!(insts(src, "ident"), ["b", "b"]);
}

#[test]
fn map_over_the_rows_of_a_matrix() {
    let src = "def main [n] [m] (a: [n][m]f32) = map (\\row -> reduce (+) 0 row) a";
    assert_eq!(def_ty(src, "main"), "[n][m]f32 -> [n]f32");
    assert_eq!(pat_ty(src, "row"), "[m]f32");
    let src = "def rows [n] [m] (a: [n][m]f32) = map (\\r -> map (* 2) r) a";
    assert_eq!(def_ty(src, "rows"), "[n][m]f32 -> [n][m]f32");
}

#[test]
fn prelude_signatures_relate_sizes() {
    let src =
        "def f [n] [m] (a: [n][m]f32) (xs: [n]i32) = (transpose a, zip xs xs, unzip (zip xs xs), length xs)";
    assert_eq!(def_ty(src, "f"), "[n][m]f32 -> [n]i32 -> ([m][n]f32, [n](i32, i32), ([n]i32, [n]i32), i64)");
    let src =
        "def g (xs: []f32) = (iota 5, replicate 3 xs, flatten [xs, xs], filter (> 0) xs, scan (+) 0 xs)";
    assert_eq!(def_ty(src, "g"), "[]f32 -> ([]i64, [][]f32, []f32, []f32, []f32)");
}

#[test]
fn prelude_functions_take_their_arguments_in_futharks_order() {
    let src = "def f (dest: [10]f32) (is: []i64) (vs: []f32) =\n  \
               (scatter dest is vs, reduce_by_index dest (+) 0 is vs, hist (+) 0 10 is vs, \
               foldl (\\acc x -> acc + i64.f32 x) 0 vs, partition (< 1) vs)";
    assert_eq!(
        def_ty(src, "f"),
        "[10]f32 -> []i64 -> []f32 -> ([10]f32, [10]f32, []f32, i64, ([]f32, []f32))"
    );
}

#[test]
fn top_level_definitions_are_generalised() {
    let src = "def twice f x = f (f x)\ndef main = (twice (+ 1) 0i8, twice (\\b -> !b) true)";
    assert_eq!(def_ty(src, "twice"), "(t0 -> t0) -> t0 -> t0");
    assert_eq!(def_ty(src, "main"), "(i8, bool)");
    assert_eq!(insts(src, "twice"), ["i8", "bool"]);
    let p = checked(src);
    let tps: Vec<_> = value_decl(&p, "twice")
        .type_params
        .iter()
        .map(|t| match t {
            TypeParam::Type { name, lifted } => (name.name.clone(), *lifted),
            TypeParam::Size(n) => (n.name.clone(), false),
        })
        .collect();
    assert_eq!(tps, [("t0".to_string(), true)]);
}

#[test]
fn a_literal_in_a_definition_is_defaulted_not_generalised() {
    assert_eq!(def_ty("def inc x = x + 1", "inc"), "i32 -> i32");
}

#[test]
fn ambiguous_types_are_errors() {
    let (_, msg, at) = error("def f = length []");
    assert_eq!(
        (msg.as_str(), at.as_str()),
        ("the type `[0]_ -> i64` is ambiguous here; add a type annotation", "length")
    );
}

#[test]
fn an_infinite_type_is_an_error_not_a_loop() {
    let (_, msg, at) = error("def f x = x x");
    assert_eq!(msg, "expected `_`, found `_ -> _`");
    assert_eq!(at, "x");
}

// ---- higher-order programs ----

#[test]
fn twice_and_compose_with_closures() {
    let src = "def twice 'a (f: a -> a) (x: a): a = f (f x)\n\
               def compose '^a '^b '^c (f: b -> c) (g: a -> b): a -> c = \\x -> f (g x)\n\
               def main (k: i32) =\n  let add = \\(y: i32) -> \\(z: i32) -> y + z + k\n  \
               let h = compose (twice (add 1)) (add 2)\n  in h 3";
    assert_eq!(def_ty(src, "compose"), "(b -> c) -> (a -> b) -> a -> c");
    assert_eq!(def_ty(src, "main"), "i32 -> i32");
    assert_eq!(expr_ty(src, "(add 1)"), "i32 -> i32");
    assert_eq!(insts(src, "compose"), ["i32, i32, i32"]);
}

#[test]
fn partial_application_of_a_definition() {
    let src = "def add (x: i32) (y: i32) = x + y\ndef inc = add 1\ndef main (xs: []i32) = map inc xs";
    assert_eq!(def_ty(src, "inc"), "i32 -> i32");
    assert_eq!(def_ty(src, "main"), "[]i32 -> []i32");
}

#[test]
fn functions_in_records_and_tuples() {
    let src = "def ops = {add = \\(x: i32) y -> x + y, neg = \\(x: i32) -> -x}\n\
               def main (a: i32) = let (f, g) = (ops.add a, ops.neg) in f (g a)";
    assert_eq!(def_ty(src, "ops"), "{add: i32 -> i32 -> i32, neg: i32 -> i32}");
    assert_eq!(def_ty(src, "main"), "i32 -> i32");
}

#[test]
fn functions_passed_to_map_and_reduce() {
    let src = "def apply_all (f: f32 -> f32) (op: f32 -> f32 -> f32) (xs: []f32) = reduce op 0 (map f xs)\n\
               def main (xs: []f32) = apply_all (\\x -> x * x) (+) xs";
    assert_eq!(def_ty(src, "apply_all"), "(f32 -> f32) -> (f32 -> f32 -> f32) -> []f32 -> f32");
    assert_eq!(def_ty(src, "main"), "[]f32 -> f32");
}

#[test]
fn closures_in_closures() {
    let src = "def main (a: i32) (xs: []i32) =\n  let mk = \\(b: i32) -> \\(c: i32) -> \\(d: i32) -> a + b + c + d\n  \
               in map (mk 1 2) xs";
    assert_eq!(def_ty(src, "main"), "i32 -> []i32 -> []i32");
    assert_eq!(expr_ty(src, "mk 1"), "i32 -> i32 -> i32");
}

#[test]
fn the_functional_combinators_accept_functions() {
    let src =
        "def main (x: i32) = (id (\\y -> y + 1)) (flip (\\a b -> a - b) 1 x) + const x (\\(z: i32) -> z) + \
               uncurry (+) (x, x) + curry (\\(p: (i32, i32)) -> p.0) 1 2";
    assert_eq!(def_ty(src, "main"), "i32 -> i32");
}

// ---- the TFP'18 restrictions ----

fn restriction(src: &str) -> (String, String) {
    let (kind, msg, at) = error(src);
    assert_eq!(kind, DiagKind::Restriction, "{msg}");
    (msg, at)
}

#[test]
fn if_may_not_return_a_function() {
    let (msg, at) = restriction("def f (c: bool) = if c then (\\(x: i32) -> x) else (\\x -> x + 1)");
    assert!(msg.starts_with("the branches of `if` may not return a function"), "{msg}");
    assert_eq!(at, "if c then (\\(x: i32) -> x) else (\\x -> x + 1)");
}

#[test]
fn if_may_not_return_a_function_inside_a_tuple() {
    let (msg, _) = restriction("def f (c: bool) (g: i32 -> i32) = if c then (1, g) else (2, g)");
    assert!(msg.contains("`(i32, i32 -> i32)`"), "{msg}");
}

#[test]
fn match_may_not_return_a_function() {
    let (msg, at) = restriction("def f (x: i32) (g: i32 -> i32) = match x\n  case 0 -> g\n  case _ -> g");
    assert!(msg.starts_with("the cases of `match` may not return a function"), "{msg}");
    assert!(at.starts_with("match x"), "{at}");
}

#[test]
fn loop_parameters_may_not_be_functions() {
    let (msg, at) = restriction("def f (g: i32 -> i32) = loop h = g for i < 3 do (\\x -> h (x + 1))");
    assert!(msg.starts_with("a loop's parameters may not contain a function"), "{msg}");
    assert!(at.starts_with("loop h = g"), "{at}");
}

#[test]
fn arrays_of_functions_are_not_allowed() {
    let (msg, at) = restriction("def f (a: i32) = let fs = [\\(x: i32) -> x + a, \\x -> x] in 1");
    assert!(msg.starts_with("arrays may not contain functions"), "{msg}");
    assert_eq!(at, "[\\(x: i32) -> x + a, \\x -> x]");
}

#[test]
fn map_may_not_build_an_array_of_functions() {
    let (msg, at) = restriction("def f (xs: []i32) = let gs = map (\\x -> \\y -> x + y) xs in 0");
    assert!(msg.starts_with("arrays may not contain functions"), "{msg}");
    assert!(msg.contains("`i32 -> i32`"), "{msg}");
    assert_eq!(at, "map (\\x -> \\y -> x + y) xs");
}

#[test]
fn a_written_array_of_functions_is_not_allowed() {
    let (msg, at) = restriction("def f (fs: [3](i32 -> i32)) = 1");
    assert!(msg.starts_with("arrays may not contain functions"), "{msg}");
    // the parser's span of a parenthesised element type stops before
    // its closing parenthesis
    assert!(at.starts_with("[3](i32 -> i32"), "{at}");
}

#[test]
fn a_type_parameter_not_lifted_may_not_be_a_function() {
    let src = "def ident 'a (x: a): a = x\ndef main = (ident (\\(x: i32) -> x)) 1";
    let (msg, at) = restriction(src);
    assert!(msg.starts_with("the type parameter `a` of `ident` is not lifted"), "{msg}");
    assert!(msg.contains("`i32 -> i32`"), "{msg}");
    assert_eq!(at, "ident");
    let ok = "def ident '^a (x: a): a = x\ndef main = (ident (\\(x: i32) -> x)) 1";
    assert_eq!(def_ty(ok, "main"), "i32");
}

#[test]
fn a_lifted_type_parameter_counts_as_a_function_in_branches() {
    let (msg, _) = restriction("def pick '^a (c: bool) (x: a) (y: a): a = if c then x else y");
    assert!(msg.starts_with("the branches of `if` may not return a function"), "{msg}");
    assert_eq!(
        def_ty("def pick 'a (c: bool) (x: a) (y: a): a = if c then x else y", "pick"),
        "bool -> a -> a -> a"
    );
}

#[test]
fn an_inferred_parameter_returned_by_if_is_not_lifted() {
    let src = "def pick c x y = if c then x else y\ndef main = pick true 1 2";
    assert_eq!(def_ty(src, "main"), "i32");
    let p = checked(src);
    assert!(matches!(&value_decl(&p, "pick").type_params[..], [TypeParam::Type { lifted: false, .. }]));
    let bad = "def pick c x y = if c then x else y\ndef main = pick true (\\(x: i32) -> x) (\\x -> x) 1";
    let (msg, at) = restriction(bad);
    assert!(msg.starts_with("the type parameter `t0` of `pick` is not lifted"), "{msg}");
    assert_eq!(at, "pick");
}

#[test]
fn the_prelude_soacs_do_not_take_function_elements() {
    let (msg, at) = restriction("def f (g: i32 -> i32) = length (replicate 3 g)");
    assert!(msg.starts_with("arrays may not contain functions"), "{msg}");
    assert_eq!(at, "(replicate 3 g)");
}

#[test]
fn entry_points_may_not_take_or_return_functions() {
    let (msg, at) = restriction("entry main (f: i32 -> i32) (x: i32) = f x");
    assert!(msg.starts_with("an entry point may not take a function"), "{msg}");
    assert_eq!(at, "(f: i32 -> i32)");
    let (msg, at) = restriction("entry main (x: i32): i32 -> i32 = \\y -> x + y");
    assert!(msg.starts_with("an entry point may not return a function"), "{msg}");
    assert_eq!(at, "i32 -> i32");
}

// ---- whole programs ----

#[test]
fn the_parser_test_programs_check() {
    for (name, src) in PROGRAMS {
        let mut p = parse(src);
        if let Err(d) = check_program(&mut p) {
            panic!("{name}:\n{}", SourceFile::new(name, src).render(&d));
        }
        assert_filled(&p);
    }
}

#[test]
fn the_parser_test_programs_get_their_types() {
    let nbody = PROGRAMS[3].1;
    assert_eq!(def_ty(nbody, "main"), "i32 -> f32 -> []f32 -> []f32 -> []f32 -> []f32 -> ([]f32, []f32)");
    assert_eq!(
        def_ty(nbody, "advance"),
        "f32 -> f32 -> [n]{mass: f32, pos: {x: f32, y: f32, z: f32}, vel: {x: f32, y: f32, z: f32}} \
         -> [n]{mass: f32, pos: {x: f32, y: f32, z: f32}, vel: {x: f32, y: f32, z: f32}}"
    );
    assert_eq!(def_ty(PROGRAMS[0].1, "dotprod"), "[n]f32 -> [n]f32 -> f32");
    assert_eq!(
        def_ty(PROGRAMS[2].1, "mandelbrot"),
        "i64 -> i64 -> i32 -> f32 -> f32 -> f32 -> f32 -> [screenY][screenX]i32"
    );
}

#[test]
fn deep_expressions_are_checked_without_overflowing() {
    let run = |src: String| {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let mut p = parse(&src);
                check_program(&mut p).map(|_| ()).map_err(|d| d.kind)
            })
            .unwrap()
            .join()
            .unwrap()
    };
    let sum = |n: usize| format!("def f (x: i32) = x{}", " + x".repeat(n));
    let lets = |n: usize| {
        let binds: String = (0..n).map(|i| format!("let y{i} = (x, y{}.1)\n", i.max(1) - 1)).collect();
        format!("def f (x: i32) = let y0 = (x, x)\n{binds} in x")
    };
    // the checker grows its stack as it goes (Note [Deep trees] in `ast`):
    // long chains are checked, on a thread of 2 MiB
    assert_eq!(run(sum(1000)), Ok(()));
    assert_eq!(run(sum(50_000)), Ok(()));
    assert_eq!(run(lets(50_000)), Ok(()));
}

#[test]
fn mangled_programs_never_panic() {
    for (_, src) in PROGRAMS {
        let cut_points: Vec<usize> = (0..src.len()).step_by(7).filter(|&i| src.is_char_boundary(i)).collect();
        for &i in &cut_points {
            for len in [1, 5, 13] {
                let end = (i + len).min(src.len());
                if !src.is_char_boundary(end) {
                    continue;
                }
                let mangled = format!("{}{}", &src[..i], &src[end..]);
                if let Ok(mut p) = parse_program(&SourceFile::new("m.fut", mangled.as_str())) {
                    if check_program(&mut p).is_ok() {
                        assert_filled(&p);
                    }
                }
            }
        }
    }
}

#[test]
fn tuple_projections_from_a_type_learnt_later() {
    let src = "def f (xs: []i32) (ys: []f32) = map (\\p -> p.1) (zip xs ys)";
    assert_eq!(def_ty(src, "f"), "[]i32 -> []f32 -> []f32");
    assert_eq!(pat_ty(src, "p"), "(i32, f32)");
}

#[test]
fn a_record_pattern_must_name_the_records_fields() {
    let (_, msg, at) = error("def f (r: {x: f32}) = let {z} = r in z");
    assert_eq!((msg.as_str(), at.as_str()), ("expected `{z: _}`, found `{x: f32}`", "r"));
}

#[test]
fn if_may_not_return_a_record_holding_a_function() {
    let (msg, _) = restriction("def f (c: bool) = if c then {g = \\(x: i32) -> x} else {g = \\x -> x + 1}");
    assert!(msg.contains("`{g: i32 -> i32}`"), "{msg}");
}

//! The text front end's parser and printer, from the outside: the shape of
//! the tree for each construct and for the operator precedences, the
//! print-parse round trip on realistic programs, errors with their exact
//! place, and a fuzz run that must end in `Ok` or `Err`, never a panic.

use accelerate_text::ast::*;
use accelerate_text::diag::{DiagKind, Diagnostic, SourceFile};
use accelerate_text::parser::{parse_expr, parse_program, COMPOSE_PARAM, MAX_DEPTH};
use accelerate_text::pretty;

mod common;
use common::sx;

const PROGRAMS: [(&str, &str); 6] = [
    ("dotp.fut", include_str!("programs/dotp.fut")),
    ("blackscholes.fut", include_str!("programs/blackscholes.fut")),
    ("mandelbrot.fut", include_str!("programs/mandelbrot.fut")),
    ("nbody.fut", include_str!("programs/nbody.fut")),
    ("higher_order.fut", include_str!("programs/higher_order.fut")),
    ("misc.fut", include_str!("programs/misc.fut")),
];

fn expr(src: &str) -> Expr {
    let f = SourceFile::new("e.fut", src);
    parse_expr(&f).unwrap_or_else(|d| panic!("{}", f.render(&d)))
}

fn program(src: &str) -> Program {
    let f = SourceFile::new("p.fut", src);
    parse_program(&f).unwrap_or_else(|d| panic!("{}", f.render(&d)))
}

fn expr_err(src: &str) -> Diagnostic {
    match parse_expr(&SourceFile::new("e.fut", src)) {
        Ok(e) => panic!("`{src}` parsed, as {}", pretty::expr(&e)),
        Err(d) => d,
    }
}

fn program_err(src: &str) -> String {
    let f = SourceFile::new("p.fut", src);
    match parse_program(&f) {
        Ok(p) => panic!("parsed, as {}", pretty::program(&p)),
        Err(d) => {
            assert_eq!(d.kind, DiagKind::Parse);
            f.render(&d)
        }
    }
}

fn shape(src: &str) -> String {
    sx(&expr(src))
}

#[test]
fn arithmetic_follows_futharks_precedences() {
    assert_eq!(shape("1 + 2 * 3"), "(+ 1 (* 2 3))");
    assert_eq!(shape("1 - 2 - 3"), "(- (- 1 2) 3)");
    assert_eq!(shape("a * b / c % d // e %% f"), "(%% (// (% (/ (* a b) c) d) e) f)");
    // `**` is left-associative in Futhark and binds tighter than `*`
    assert_eq!(shape("a ** b ** c * d"), "(* (** (** a b) c) d)");
    assert_eq!(shape("a + b << c"), "(<< (+ a b) c)");
    assert_eq!(shape("a << b & c"), "(& (<< a b) c)");
    assert_eq!(shape("a & b | c ^ d"), "(^ (| (& a b) c) d)");
    assert_eq!(shape("a | b == c"), "(== (| a b) c)");
    assert_eq!(shape("a < b && c >= d || e != f"), "(|| (&& (< a b) (>= c d)) (!= e f))");
}

#[test]
fn application_binds_tighter_than_every_operator_and_prefix_minus() {
    assert_eq!(shape("f x + g y z"), "(+ (f x) ((g y) z))");
    assert_eq!(shape("-f x"), "(neg (f x))");
    assert_eq!(shape("-x ** 2"), "(** (neg x) 2)");
    assert_eq!(shape("!a && b"), "(&& (not a) b)");
    assert_eq!(shape("f -1"), "(- f 1)");
    assert_eq!(shape("f (-1)"), "(f (neg 1))");
    assert_eq!(shape("- - x"), "(neg (neg x))");
}

#[test]
fn pipes_are_loosest_and_desugar_to_application() {
    assert_eq!(shape("xs |> map f |> sum"), "(sum ((map f) xs))");
    assert_eq!(shape("f <| g <| x"), "(f (g x))");
    assert_eq!(shape("x + 1 |> f"), "(f (+ x 1))");
    assert_eq!(shape("a || b |> f"), "(f (|| a b))");
}

#[test]
fn composition_desugars_to_a_lambda_with_an_unclashable_parameter() {
    let x = COMPOSE_PARAM;
    assert_eq!(shape("f >-> g"), format!("(\\ {x} (g (f {x})))"));
    assert_eq!(shape("g <-< f"), format!("(\\ {x} (g (f {x})))"));
    // at the level of the comparisons, left-associative
    assert_eq!(shape("f >-> g >-> h"), format!("(\\ {x} (h ((\\ {x} (g (f {x}))) {x})))"));
    assert_eq!(shape("f >-> g + 1"), format!("(\\ {x} ((+ g 1) (f {x})))"));
    assert!(!x.chars().all(|c| c.is_alphanumeric() || c == '_' || c == '\''));
}

#[test]
fn backticked_functions_are_infix_applications() {
    assert_eq!(shape("x `f` y"), "((f x) y)");
    assert_eq!(shape("x `f32.max` y + 1"), "((f32.max x) (+ y 1))");
    assert_eq!(shape("a `f` b `g` c"), "((g ((f a) b)) c)");
    assert_eq!(shape("(x `f`)"), "(f x)");
    assert_eq!(shape("(`f`)"), "f");
}

#[test]
fn indexing_binds_to_the_atom_it_touches() {
    assert_eq!(shape("f a[i]"), "(f (index a i))");
    assert_eq!(shape("f a [i]"), "((f a) (array i))");
    assert_eq!(shape("a[i, j]"), "(index a i j)");
    assert_eq!(shape("a[i:j]"), "(index a (: i j _))");
    assert_eq!(shape("a[:, 0]"), "(index a (: _ _ _) 0)");
    assert_eq!(shape("a[i:j:s]"), "(index a (: i j s))");
    assert_eq!(shape("a[::2]"), "(index a (: _ _ 2))");
    assert_eq!(shape("a[1:][0]"), "(index (index a (: 1 _ _)) 0)");
    assert_eq!(shape("(f x)[0]"), "(index (f x) 0)");
    assert_eq!(shape("[1, 2][0]"), "(index (array 1 2) 0)");
    assert_eq!(shape("a[i + 1]"), "(index a (+ i 1))");
}

#[test]
fn projections_and_qualified_names() {
    assert_eq!(shape("f32.sqrt x"), "(f32.sqrt x)");
    assert_eq!(shape("r.x.y"), "(. (. r x) y)");
    assert_eq!(shape("t.0.1"), "(. (. t 0) 1)");
    assert_eq!(shape("f r.x"), "(f (. r x))");
    assert_eq!(shape("a[0].x"), "(. (index a 0) x)");
    let e = expr("i64.max");
    let ExprKind::Var { name, qual: Some(q), .. } = &e.kind else { panic!("{e:?}") };
    assert_eq!((q.name.as_str(), name.name.as_str()), ("i64", "max"));
}

#[test]
fn tuples_records_and_arrays() {
    assert_eq!(shape("()"), "(tuple )");
    assert_eq!(shape("(1, x, 2.5)"), "(tuple 1 x 2.5)");
    assert_eq!(shape("(1, 2,)"), "(tuple 1 2)");
    assert_eq!(shape("{x = 1, y}"), "(record x=1 y=y)");
    assert_eq!(shape("{}"), "(record )");
    assert_eq!(shape("[]"), "(array )");
    assert_eq!(shape("[[1, 2], [3, 4]]"), "(array (array 1 2) (array 3 4))");
    assert_eq!(shape("(x)"), "x");
}

#[test]
fn literals_with_suffixes() {
    assert_eq!(
        shape("(1i8, 0xffu8, 2.5f32, 1f64, 1e3, true, false)"),
        "(tuple 1i8 255u8 2.5f32 1.0f64 1000.0 true false)"
    );
}

#[test]
fn operator_sections() {
    assert_eq!(shape("(+)"), "(section +)");
    assert_eq!(shape("(-)"), "(section -)");
    assert_eq!(shape("(x +)"), "(lsection x +)");
    assert_eq!(shape("(x -)"), "(lsection x -)");
    assert_eq!(shape("(+ x)"), "(rsection + x)");
    assert_eq!(shape("(* x + 1)"), "(rsection * (+ x 1))");
    assert_eq!(shape("(- x)"), "(neg x)");
    assert_eq!(shape("(.x.y)"), "(psection x y)");
    assert_eq!(shape("(.0)"), "(psection 0)");
    assert_eq!(shape("(a + b *)"), "(lsection (+ a b) *)");
}

#[test]
fn lambdas_take_parameter_patterns_and_a_result_type() {
    assert_eq!(shape("\\x -> x + 1"), "(\\ x (+ x 1))");
    assert_eq!(shape("\\x (y: i32) : i32 -> x"), "(\\ x y: i32 : i32 x)");
    assert_eq!(shape("\\(a, b) {x, y = z} _ -> a"), "(\\ (a, b) {x, y = z} _ a)");
    assert_eq!(shape("map (\\x -> x) xs"), "((map (\\ x x)) xs)");
}

#[test]
fn let_forms_and_chains_without_in() {
    assert_eq!(shape("let x = 1 in x"), "(let x 1 x)");
    assert_eq!(shape("let a = 1 let b = 2 in a + b"), "(let a 1 (let b 2 (+ a b)))");
    assert_eq!(shape("let (a, b) = p in a"), "(let (a, b) p a)");
    assert_eq!(shape("let x: i32 = 1 in x"), "(let x: i32 1 x)");
    assert_eq!(shape("let f x y = x + y in f 1 2"), "(letfun f x y (+ x y) ((f 1) 2))");
    assert_eq!(shape("let a[i] = v in a"), "(let a (update a i v) a)");
    assert_eq!(shape("let x = 1 in let y = 2 in y"), "(let x 1 (let y 2 y))");
    let e = expr("let f 'a [n] (xs: [n]a) : [n]a = xs in f");
    let ExprKind::LetFun { type_params, ret, .. } = &e.kind else { panic!() };
    assert_eq!(type_params.len(), 2);
    assert!(ret.is_some());
}

#[test]
fn with_updates_bind_looser_than_arithmetic() {
    assert_eq!(shape("a with [i] = x + 1"), "(update a i (+ x 1))");
    assert_eq!(shape("a with [i] = 1 with [j] = 2"), "(update (update a i 1) j 2)");
    // the value extends over `|>`, as in Futhark, but not over a
    // backticked function
    assert_eq!(shape("a with [i, j:k] = v |> f"), "(update a i (: j k _) (f v))");
    assert_eq!(shape("a with [i] = v `f` b"), "((f (update a i v)) b)");
    assert_eq!(shape("r with x.y = v + 1"), "(with r x.y (+ v 1))");
    assert_eq!(shape("r with x = 1 with [i] = 2"), "(update (with r x 1) i 2)");
}

#[test]
fn if_loop_and_match() {
    assert_eq!(shape("if c then a else b + 1"), "(if c a (+ b 1))");
    assert_eq!(shape("x + if c then 1 else 2"), "(+ x (if c 1 2))");
    assert_eq!(shape("loop acc = 0 for i < n do acc + i"), "(loop acc 0 (for i n) (+ acc i))");
    assert_eq!(shape("loop acc for x in xs do acc + x"), "(loop acc _ (in x xs) (+ acc x))");
    assert_eq!(shape("loop (x: i32) = 1 while x < 9 do x * 2"), "(loop x: i32 1 (while (< x 9)) (* x 2))");
    assert_eq!(
        shape("match x case 0 -> a case -1 -> b case (1, _) -> c case {x = 2, y} -> d case true -> e case _ -> f"),
        "(match x [0 a] [-1 b] [(1, _) c] [{x = 2, y} d] [true e] [_ f])"
    );
}

#[test]
fn type_ascription_is_loosest() {
    assert_eq!(shape("x + 1 : i32"), "(: (+ x 1) i32)");
    assert_eq!(shape("(f x : [n]f32, y)"), "(tuple (: (f x) [n]f32) y)");
}

#[test]
fn declarations_with_type_parameters_and_types() {
    let p = program(
        "type vec 't [n] = [n]t\n\
         def f 'a '^b [n] (x: a) (g: a -> b) ({y}: {y: i32}) _ : [n]b = g x\n\
         entry main (x: (i32, bool)) (y: vec f32 [3]) : (k: i64) -> [k]f32 = h\n\
         let old = 1\n",
    );
    assert_eq!(p.decls.len(), 4);
    let Decl::Type(t) = &p.decls[0] else { panic!() };
    assert_eq!(t.params.len(), 2);
    let Decl::Value(f) = &p.decls[1] else { panic!() };
    assert!(!f.entry);
    assert_eq!(f.params.len(), 4);
    assert!(matches!(f.type_params[1], TypeParam::Type { lifted: true, .. }));
    assert!(matches!(f.type_params[2], TypeParam::Size(_)));
    assert_eq!(pretty::type_exp(f.ret.as_ref().unwrap()), "[n]b");
    let Decl::Value(m) = &p.decls[2] else { panic!() };
    assert!(m.entry);
    assert_eq!(pretty::type_exp(m.ret.as_ref().unwrap()), "(k: i64) -> [k]f32");
    let Decl::Value(old) = &p.decls[3] else { panic!() };
    assert_eq!(old.name.name, "old");
}

#[test]
fn types_print_futhark_style() {
    let ty = |s: &str| {
        let p = program(&format!("type t = {s}"));
        let Decl::Type(t) = &p.decls[0] else { panic!() };
        pretty::type_exp(&t.def)
    };
    assert_eq!(ty("[n][]f32"), "[n][]f32");
    assert_eq!(ty("(i32, bool)"), "(i32, bool)");
    assert_eq!(ty("()"), "()");
    assert_eq!(ty("{x: f32}"), "{x: f32}");
    assert_eq!(ty("a -> b -> c"), "a -> b -> c");
    assert_eq!(ty("(a -> b) -> c"), "(a -> b) -> c");
    assert_eq!(ty("[3](i32 -> i32)"), "[3](i32 -> i32)");
    assert_eq!(ty("vec ([n]f32) [m]"), "vec ([n]f32) [m]");
    assert_eq!(ty("[n]vec f32"), "[n]vec f32");
    assert_eq!(ty("(x: i64) -> [x]f32"), "(x: i64) -> [x]f32");
    assert_eq!(ty("((i32))"), "i32");
}

#[test]
fn checker_types_print_futhark_style() {
    let f32 = Type::Prim(PrimType::F32);
    let arr = Type::Array {
        elem: Box::new(f32.clone()),
        shape: vec![Size::Var("n".into()), Size::Any, Size::Const(3)],
    };
    assert_eq!(pretty::ty(&arr), "[n][][3]f32");
    let fun = Type::Arrow(Box::new(Type::Param("a".into())), Box::new(Type::Infer(7)));
    assert_eq!(pretty::ty(&Type::Arrow(Box::new(fun.clone()), Box::new(f32.clone()))), "(a -> ?7) -> f32");
    assert_eq!(
        pretty::ty(&Type::Tuple(vec![Type::Prim(PrimType::I32), Type::Prim(PrimType::Bool)])),
        "(i32, bool)"
    );
    assert_eq!(pretty::ty(&Type::Record(vec![("x".into(), f32)])), "{x: f32}");
    assert_eq!(pretty::ty(&Type::Tuple(vec![])), "()");
}

#[test]
fn spans_cover_the_text_of_each_node() {
    let src = "f (x + 1) y.z";
    let e = expr(src);
    assert_eq!(e.span, Span::new(0, src.len()));
    let ExprKind::Apply(f, yz) = &e.kind else { panic!() };
    assert_eq!(&src[yz.span.start..yz.span.end], "y.z");
    let ExprKind::Apply(_, arg) = &f.kind else { panic!() };
    assert_eq!(&src[arg.span.start..arg.span.end], "(x + 1)");
    let p = program("def f x =\n  let y = x\n  in y\n");
    let Decl::Value(d) = &p.decls[0] else { panic!() };
    assert_eq!(d.span, Span::new(0, 28));
    assert_eq!(d.body.span, Span::new(12, 28));
}

/// Parse, print, parse, print: the two printed texts must agree, and the
/// printed text must parse.
fn round_trip(name: &str, src: &str) -> String {
    let first = pretty::program(&program(src));
    let f = SourceFile::new(name, first.clone());
    let again = parse_program(&f)
        .unwrap_or_else(|d| panic!("{name} printed as\n{first}\nwhich fails:\n{}", f.render(&d)));
    let second = pretty::program(&again);
    assert_eq!(first, second, "{name}: printing is not stable");
    first
}

#[test]
fn realistic_programs_round_trip_through_the_printer() {
    for (name, src) in PROGRAMS {
        round_trip(name, src);
    }
}

#[test]
fn printed_programs_keep_their_grouping() {
    let cases = [
        "def f = (a + b) * c - -d ** 2",
        "def f = f (g x) (-1) a[i] (h y).0",
        "def f = (if c then a else b) + 1",
        "def f = a with [i] = (b with [j] = c)",
        "def f = (x : i32) + a[(y : i64)]",
        "def f = a[(if c then 1 else 2):3]",
        "def f = match x case 1 -> (match y case 2 -> 3 case _ -> 4) case _ -> 5",
        "def f = (f >-> g) x + (h <-< k <-< l) y",
        "def f = (- 1) + (+ 1) 2 + (1 -) 3",
        "def f = !(-x) + -(f32.sqrt 2)",
        "def f = \\(x: i32) (y, z) {a, b = c, d: i32} : (i32 -> i32) -> x",
        "def f = let g (x: i32) : i32 = x let y = g 1 in let z = y in z",
        "def f = loop (a, b) = (0, 1) for i < n do loop c = a for x in xs do c + x",
        "def f = (f32).sqrt",
    ];
    for src in cases {
        let printed = round_trip("case.fut", src);
        let reparsed = program(&printed);
        let (Decl::Value(a), Decl::Value(b)) = (&program(src).decls[0], &reparsed.decls[0]) else { panic!() };
        assert_eq!(sx(&a.body), sx(&b.body), "{src}\nprinted as\n{printed}");
    }
}

#[test]
fn the_printer_lays_out_blocks_on_lines() {
    let printed = round_trip(
        "layout.fut",
        "def f (x: i32): i32 = let y = x + 1 let z = if y > 2 then y else 0 in match z case 0 -> 1 case _ -> loop a = z for i < 3 do a * 2",
    );
    assert_eq!(
        printed,
        "def f (x: i32): i32 =\n  let y = x + 1\n  let z = if y > 2 then y else 0\n  in match z\n     case 0 -> 1\n     case _ -> loop a = z for i < 3 do\n                 a * 2\n"
    );
    assert_eq!(round_trip("two.fut", "def a = 1\ndef b = 2"), "def a = 1\n\ndef b = 2\n");
}

#[test]
fn errors_name_the_place_what_was_expected_and_what_was_found() {
    let r = program_err("def f x =\n  if x then 1\n");
    assert!(r.contains("p.fut:3:1"), "{r}");
    assert!(r.contains("expected `else` after the `then` branch, found end of input"), "{r}");

    let r = program_err("def f (x: i32) =\n  let y = x +\n  in y\n");
    assert!(r.contains("p.fut:3:3"), "{r}");
    assert!(r.contains("expected an expression, found `in`"), "{r}");

    let r = program_err("def f = 1\nin 2\n");
    assert!(r.contains("p.fut:2:1"), "{r}");
    assert!(r.contains("expected a declaration (`def`, `entry` or `type`), found `in`"), "{r}");

    let r = program_err("def f = (1, 2\n");
    assert!(r.contains("p.fut:2:1"), "{r}");
    assert!(r.contains("expected `,` or `)`, found end of input"), "{r}");

    let r = program_err("def f =\n  let x = 1\ndef g = x\n");
    assert!(r.contains("p.fut:3:1"), "{r}");
    assert!(r.contains("expected `in` or another `let` after the binding, found `def`"), "{r}");

    let r = program_err("def f (x: [n]) = x\n");
    assert!(r.contains("p.fut:1:14"), "{r}");
    assert!(r.contains("expected a type, found `)`"), "{r}");

    let r = program_err("def f = x $ y\n");
    assert!(r.contains("p.fut:1:11"), "{r}");
    assert!(r.contains("unexpected character `$`"), "{r}");
    assert!(r.contains('^'), "{r}");

    let r = program_err("def f = (|> g)\n");
    assert!(r.contains("p.fut:1:10"), "{r}");
    assert!(r.contains("a section of `|>` is not supported"), "{r}");

    let r = program_err("def f = a..b\n");
    assert!(r.contains("p.fut:1:10"), "{r}");
}

#[test]
fn expression_errors_point_at_the_found_token() {
    let d = expr_err("f (x");
    assert_eq!(d.span, Span::new(4, 4));
    let d = expr_err("a +* b");
    assert_eq!(d.span, Span::new(3, 4));
    assert_eq!(d.message, "expected an expression, found `*`");
    let d = expr_err("x y)");
    assert_eq!(d.message, "expected end of input, found `)`");
    let d = expr_err("\\ -> 1");
    assert_eq!(d.message, "expected a parameter, found `->`");
    let d = expr_err("(a,)");
    assert_eq!(d.message, "expected an expression, found `)`");
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    for open in ["(", "[", "- ", "!", "\\x -> ", "if c then 1 else ", "f <| ", "{a = "] {
        let src = open.repeat(MAX_DEPTH * 4) + "x";
        let d = expr_err(&src);
        assert_eq!(d.kind, DiagKind::Parse);
        assert!(d.message.starts_with("nesting too deep"), "{open}: {}", d.message);
    }
    let ty = format!("def f (x: {}i32) = x", "[]".repeat(MAX_DEPTH * 4));
    assert!(program_err(&ty).contains("nesting too deep"));
    let pat = format!("def f {}x{} = x", "(".repeat(MAX_DEPTH * 4), ")".repeat(MAX_DEPTH * 4));
    assert!(program_err(&pat).contains("nesting too deep"));
    // nesting just inside the limit parses and prints on a test thread's
    // stack, through the parser's dearest path (records) as well
    let n = MAX_DEPTH - 4;
    let parens = "(".repeat(n) + "x" + &")".repeat(n);
    assert_eq!(pretty::expr(&expr(&parens)), "x");
    let records = "{a = ".repeat(n) + "x" + &"}".repeat(n);
    assert_eq!(pretty::expr(&expr(&records)), records);
    let lambdas = "\\x -> ".repeat(n) + "x";
    assert_eq!(pretty::expr(&expr(&lambdas)), lambdas);
}

#[test]
fn long_chains_are_loops_not_recursion() {
    let lets: String = (0..5000).map(|i| format!("let x{i} = {i}\n")).collect();
    expr(&format!("{lets}in x0"));
    let sum = vec!["x"; 5000].join(" + ");
    expr(&sum);
}

/// Parses as a program and as an expression: either may fail, neither may
/// panic.
fn parse_anything(src: &str) {
    let f = SourceFile::new("fuzz.fut", src);
    if let Err(d) = parse_program(&f) {
        assert_eq!(d.kind, DiagKind::Parse);
        assert!(d.span.start <= d.span.end && d.span.end <= src.len(), "{d:?} in {src:?}");
        f.render(&d);
    }
    let _ = parse_expr(&f);
}

#[test]
fn fuzz_truncated_programs_token_soups_and_random_bytes_never_panic() {
    for (_, src) in PROGRAMS {
        for (i, _) in src.char_indices() {
            parse_anything(&src[..i]);
        }
    }
    let vocabulary = [
        "def", "entry", "let", "in", "if", "then", "else", "loop", "for", "while", "do", "with", "match",
        "case", "type", "true", "false", "x", "f", "f32", "i64", "0", "1.5", "2i32", "+", "-", "*", "**",
        "|>", "<|", ">->", "<-<", "`", "==", "<", "&&", "!", "=", ":", "->", "\\", ",", ".", "..", "_", "(",
        ")", "[", "]", "{", "}", "'", "'^", "\n", "", " ", "--", "a[", "(+)", "(.x)",
    ];
    let mut rng = common::XorShift(0x9e37_79b9_7f4a_7c15);
    for _ in 0..3000 {
        let n = rng.below(40);
        let src: String = (0..n)
            .map(|_| {
                let sep = if rng.below(3) == 0 { "" } else { " " };
                format!("{}{sep}", vocabulary[rng.below(vocabulary.len())])
            })
            .collect();
        parse_anything(&src);
    }
    for _ in 0..2000 {
        let n = rng.below(60);
        let bytes: Vec<u8> =
            (0..n).map(|_| b" \n()[]{}+-*/<>=!|&^.,:_'`\\x1a$\xc3\xa9"[rng.below(28)]).collect();
        parse_anything(&String::from_utf8_lossy(&bytes));
        let bytes: Vec<u8> = (0..n).map(|_| rng.next() as u8).collect();
        parse_anything(&String::from_utf8_lossy(&bytes));
    }
}

//! The printer against the parser: random trees, of every kind of node
//! the parser builds, print to text that parses back to the same tree
//! (compared as s-expressions, so that a lost parenthesis shows even when
//! the text would print the same).

use accelerate_text::ast::*;
use accelerate_text::diag::SourceFile;
use accelerate_text::parser::{parse_expr, COMPOSE_PARAM};
use accelerate_text::pretty;

mod common;
use common::{sx_exact, XorShift};

fn id(n: &str) -> Ident {
    Ident { name: n.to_string(), span: Span::default() }
}

fn mk(k: ExprKind) -> Expr {
    Expr::new(k, Span::default())
}

fn var(n: &str) -> Expr {
    mk(ExprKind::Var { name: id(n), qual: None, inst: vec![] })
}

fn b(e: Expr) -> Box<Expr> {
    Box::new(e)
}

const OPS: [BinOp; 21] = [
    BinOp::Add,
    BinOp::Sub,
    BinOp::Mul,
    BinOp::Div,
    BinOp::Mod,
    BinOp::Quot,
    BinOp::Rem,
    BinOp::Pow,
    BinOp::BAnd,
    BinOp::BOr,
    BinOp::BXor,
    BinOp::Shl,
    BinOp::Shr,
    BinOp::Eq,
    BinOp::Neq,
    BinOp::Lt,
    BinOp::Le,
    BinOp::Gt,
    BinOp::Ge,
    BinOp::And,
    BinOp::Or,
];

fn size(g: &mut XorShift) -> SizeExp {
    match g.below(3) {
        0 => SizeExp::Any(Span::default()),
        1 => SizeExp::Const(3, Span::default()),
        _ => SizeExp::Var(id("n")),
    }
}

/// A random type as written, `d` levels deep at most.
fn typ(g: &mut XorShift, d: u32) -> TypeExp {
    let sp = Span::default();
    if d == 0 {
        return TypeExp::Name(id(["i32", "t"][g.below(2)]), vec![]);
    }
    match g.below(7) {
        0 => TypeExp::Name(id("i32"), vec![]),
        1 => {
            let arg =
                if g.below(2) == 0 { TypeArgExp::Size(size(g)) } else { TypeArgExp::Type(typ(g, d - 1)) };
            TypeExp::Name(id("vec"), vec![arg, TypeArgExp::Type(typ(g, d - 1))])
        }
        2 => TypeExp::Array(size(g), Box::new(typ(g, d - 1)), sp),
        3 => TypeExp::Tuple(vec![typ(g, d - 1), typ(g, d - 1)], sp),
        4 => TypeExp::Record(vec![(id("x"), typ(g, d - 1))], sp),
        5 => TypeExp::Arrow(None, Box::new(typ(g, d - 1)), Box::new(typ(g, d - 1)), sp),
        _ => TypeExp::Arrow(Some(id("k")), Box::new(typ(g, d - 1)), Box::new(typ(g, d - 1)), sp),
    }
}

/// A random pattern, `d` levels deep at most.
fn pat(g: &mut XorShift, d: u32) -> Pat {
    let k = match if d == 0 { g.below(2) } else { g.below(6) } {
        0 => PatKind::Id(id(["p", "q", "r"][g.below(3)])),
        1 => PatKind::Wildcard,
        2 => PatKind::Tuple(vec![pat(g, d - 1), pat(g, d - 1)]),
        3 => PatKind::Record(vec![(id("x"), pat(g, d - 1))]),
        4 => PatKind::Ascribe(Box::new(pat(g, d - 1)), typ(g, 2)),
        _ => PatKind::Lit(Literal::Int(g.below(3) as i128 - 1, None)),
    };
    Pat::new(k, Span::default())
}

/// A random parameter: a pattern but a literal.
fn param(g: &mut XorShift, d: u32) -> Pat {
    loop {
        let p = pat(g, d);
        if !matches!(p.kind, PatKind::Lit(_)) {
            return p;
        }
    }
}

fn idx(g: &mut XorShift, d: u32) -> Vec<DimIndex> {
    (0..1 + g.below(2))
        .map(|_| {
            if g.below(2) == 0 {
                DimIndex::Fix(ex(g, d - 1))
            } else {
                let mut o = || if g.below(2) == 0 { None } else { Some(()) };
                let (s, e, st) = (o(), o(), o());
                DimIndex::Slice {
                    start: s.map(|_| ex(g, d - 1)),
                    end: e.map(|_| ex(g, d - 1)),
                    stride: st.map(|_| ex(g, d - 1)),
                }
            }
        })
        .collect()
}

/// A random expression, `d` levels deep at most, of the shapes the parser
/// builds: no one-element tuple, no right section of `-`, no negative
/// literal, the composition parameter only in a composition.
fn ex(g: &mut XorShift, d: u32) -> Expr {
    if d == 0 {
        return match g.below(4) {
            0 => mk(ExprKind::Lit(Literal::Int(g.below(10) as i128, None))),
            1 => mk(ExprKind::Lit(Literal::Float(1.5, Some(PrimType::F32)))),
            2 => mk(ExprKind::Var { name: id("sqrt"), qual: Some(id("f32")), inst: vec![] }),
            _ => var(["a", "b", "c"][g.below(3)]),
        };
    }
    let d1 = d - 1;
    let k = match g.below(29) {
        0 => ExprKind::Tuple(vec![ex(g, d1), ex(g, d1)]),
        1 => ExprKind::Record(vec![(id("x"), ex(g, d1)), (id("y"), var("y"))]),
        2 => ExprKind::ArrayLit(vec![ex(g, d1)]),
        3 => ExprKind::Project(b(ex(g, d1)), id(["x", "0"][g.below(2)])),
        4 => ExprKind::Index(b(ex(g, d1)), idx(g, d)),
        5..=7 => ExprKind::Apply(b(ex(g, d1)), b(ex(g, d1))),
        8..=11 => ExprKind::BinOp(OPS[g.below(21)], b(ex(g, d1)), b(ex(g, d1))),
        12 => ExprKind::Neg(b(ex(g, d1))),
        13 => ExprKind::Not(b(ex(g, d1))),
        14 => ExprKind::OpSection(OPS[g.below(21)]),
        15 => ExprKind::LeftSection(OPS[g.below(21)], b(ex(g, d1))),
        16 => {
            let op = OPS[g.below(21)];
            if op == BinOp::Sub {
                ExprKind::OpSection(op)
            } else {
                ExprKind::RightSection(op, b(ex(g, d1)))
            }
        }
        17 => ExprKind::ProjSection(vec![id("a"), id("b")]),
        18 => ExprKind::Lambda(
            vec![param(g, 1)],
            if g.below(2) == 0 { None } else { Some(typ(g, 2)) },
            b(ex(g, d1)),
        ),
        19 => ExprKind::Let(pat(g, 1), b(ex(g, d1)), b(ex(g, d1))),
        20 => ExprKind::LetFun {
            name: id("h"),
            type_params: vec![],
            params: vec![param(g, 1)],
            ret: if g.below(2) == 0 { None } else { Some(typ(g, 2)) },
            def: b(ex(g, d1)),
            body: b(ex(g, d1)),
        },
        21 => ExprKind::Update(b(ex(g, d1)), idx(g, d), b(ex(g, d1))),
        22 => ExprKind::If(b(ex(g, d1)), b(ex(g, d1)), b(ex(g, d1))),
        23 => {
            let form = match g.below(3) {
                0 => LoopForm::For(id("i"), b(ex(g, d1))),
                1 => LoopForm::ForIn(pat(g, 1), b(ex(g, d1))),
                _ => LoopForm::While(b(ex(g, d1))),
            };
            ExprKind::Loop {
                pat: pat(g, 1),
                init: if g.below(2) == 0 { None } else { Some(b(ex(g, d1))) },
                form,
                body: b(ex(g, d1)),
            }
        }
        24 => ExprKind::Match(b(ex(g, d1)), (0..1 + g.below(3)).map(|_| (pat(g, 1), ex(g, d1))).collect()),
        25 => ExprKind::Ascribe(b(ex(g, d1)), typ(g, 3)),
        27 => {
            ExprKind::RecordUpdate(b(ex(g, d1)), [id("x"), id("y")][..1 + g.below(2)].to_vec(), b(ex(g, d1)))
        }
        26 => {
            let x = COMPOSE_PARAM;
            let f = ex(g, d1);
            let h = ex(g, d1);
            ExprKind::Lambda(
                vec![Pat::new(PatKind::Id(id(x)), Span::default())],
                None,
                b(mk(ExprKind::Apply(b(h), b(mk(ExprKind::Apply(b(f), b(var(x)))))))),
            )
        }
        _ => ExprKind::Lit(Literal::Bool(true)),
    };
    mk(k)
}

fn assert_reads_back(e: &Expr) {
    let printed = pretty::expr(e);
    let f = SourceFile::new("printed.fut", printed.clone());
    match parse_expr(&f) {
        Ok(back) => assert_eq!(sx_exact(&back), sx_exact(e), "printed as\n{printed}"),
        Err(d) => panic!("{}\nprinted as\n{printed}\nfrom {}", f.render(&d), sx_exact(e)),
    }
}

#[test]
fn random_trees_print_to_text_that_parses_back_to_them() {
    let mut g = XorShift(0xdead_beef_1234_5678);
    for i in 0..4000 {
        assert_reads_back(&ex(&mut g, 1 + (i % 5) as u32));
    }
}

#[test]
fn trees_the_fuzz_found_misprinted() {
    // a match as a match's scrutinee would take the outer cases
    let inner = mk(ExprKind::Match(b(var("a")), vec![(pat_id("p"), var("b"))]));
    assert_reads_back(&mk(ExprKind::Match(b(inner), vec![(pat_id("q"), var("c"))])));
    // `3.0` is a float, not field 0 of 3
    assert_reads_back(&mk(ExprKind::Project(b(mk(ExprKind::Lit(Literal::Int(3, None)))), id("0"))));
}

fn pat_id(n: &str) -> Pat {
    Pat::new(PatKind::Id(id(n)), Span::default())
}

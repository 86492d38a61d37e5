//! What the integration tests share: the tree as an s-expression.

// each test file uses its own part of this module
#![allow(dead_code)]

use accelerate_text::ast::*;
use accelerate_text::pretty;

pub fn list<T>(xs: &[T], f: impl Fn(&T) -> String) -> String {
    xs.iter().map(f).collect::<Vec<_>>().join(" ")
}

/// The tree as an s-expression: every node with its children, so that a
/// test states the grouping exactly; patterns and types as printed.
pub fn sx(e: &Expr) -> String {
    sx_with(e, &Show { pat: pretty::pat, ty: pretty::type_exp })
}

/// As `sx`, with patterns and types as s-expressions too.
pub fn sx_exact(e: &Expr) -> String {
    sx_with(e, &Show { pat: px, ty: tx })
}

/// How `sx_with` shows patterns and types.
pub struct Show {
    pub pat: fn(&Pat) -> String,
    pub ty: fn(&TypeExp) -> String,
}

pub fn px(p: &Pat) -> String {
    match &p.kind {
        PatKind::Id(x) => x.name.clone(),
        PatKind::Wildcard => "_".into(),
        PatKind::Tuple(ps) => format!("(tuple {})", list(ps, px)),
        PatKind::Record(fs) => format!("(record {})", list(fs, |(f, p)| format!("{}={}", f.name, px(p)))),
        PatKind::Ascribe(p, t) => format!("(: {} {})", px(p), tx(t)),
        PatKind::Lit(l) => format!("{l:?}"),
    }
}

pub fn tx(t: &TypeExp) -> String {
    let size = |d: &SizeExp| match d {
        SizeExp::Any(_) => "[]".to_string(),
        SizeExp::Const(n, _) => format!("[{n}]"),
        SizeExp::Var(x) => format!("[{}]", x.name),
    };
    match t {
        TypeExp::Name(x, args) => {
            let arg = |a: &TypeArgExp| match a {
                TypeArgExp::Type(t) => tx(t),
                TypeArgExp::Size(d) => size(d),
            };
            format!("({} {})", x.name, list(args, arg))
        }
        TypeExp::Array(d, t, _) => format!("(array {} {})", size(d), tx(t)),
        TypeExp::Tuple(ts, _) => format!("(tuple {})", list(ts, tx)),
        TypeExp::Record(fs, _) => format!("(record {})", list(fs, |(f, t)| format!("{}={}", f.name, tx(t)))),
        TypeExp::Arrow(x, a, b, _) => {
            format!("(-> {} {} {})", x.as_ref().map_or("_", |x| x.name.as_str()), tx(a), tx(b))
        }
    }
}

pub fn sx_with(e: &Expr, show: &Show) -> String {
    let sx = |e: &Expr| sx_with(e, show);
    let (show_pat, ty) = (show.pat, show.ty);
    let idx = |d: &DimIndex| match d {
        DimIndex::Fix(e) => sx(e),
        DimIndex::Slice { start, end, stride } => {
            let o = |x: &Option<Expr>| x.as_ref().map_or("_".to_string(), sx);
            format!("(: {} {} {})", o(start), o(end), o(stride))
        }
    };
    match &e.kind {
        ExprKind::Lit(l) => match l {
            Literal::Int(v, t) => format!("{v}{}", t.map_or("", PrimType::name)),
            Literal::Float(v, t) => format!("{v:?}{}", t.map_or("", PrimType::name)),
            Literal::Bool(b) => b.to_string(),
        },
        ExprKind::Var { name, qual: Some(q), .. } => format!("{}.{}", q.name, name.name),
        ExprKind::Var { name, .. } => name.name.clone(),
        ExprKind::Tuple(es) => format!("(tuple {})", list(es, |e| sx(e))),
        ExprKind::Record(fs) => format!("(record {})", list(fs, |(f, e)| format!("{}={}", f.name, sx(e)))),
        ExprKind::ArrayLit(es) => format!("(array {})", list(es, |e| sx(e))),
        ExprKind::Project(e, f) => format!("(. {} {})", sx(e), f.name),
        ExprKind::Index(e, is) => format!("(index {} {})", sx(e), list(is, |d| idx(d))),
        ExprKind::Apply(f, x) => format!("({} {})", sx(f), sx(x)),
        ExprKind::BinOp(op, a, b) => format!("({} {} {})", op.symbol(), sx(a), sx(b)),
        ExprKind::Neg(e) => format!("(neg {})", sx(e)),
        ExprKind::Not(e) => format!("(not {})", sx(e)),
        ExprKind::OpSection(op) => format!("(section {})", op.symbol()),
        ExprKind::LeftSection(op, e) => format!("(lsection {} {})", sx(e), op.symbol()),
        ExprKind::RightSection(op, e) => format!("(rsection {} {})", op.symbol(), sx(e)),
        ExprKind::ProjSection(fs) => format!("(psection {})", list(fs, |f| f.name.clone())),
        ExprKind::Lambda(ps, ret, body) => {
            let ret = ret.as_ref().map_or(String::new(), |t| format!(" : {}", ty(t)));
            format!("(\\ {}{ret} {})", list(ps, show_pat), sx(body))
        }
        ExprKind::Let(p, d, b) => format!("(let {} {} {})", show_pat(p), sx(d), sx(b)),
        ExprKind::LetFun { name, params, def, body, .. } => {
            format!("(letfun {} {} {} {})", name.name, list(params, show_pat), sx(def), sx(body))
        }
        ExprKind::Update(a, is, v) => format!("(update {} {} {})", sx(a), list(is, |d| idx(d)), sx(v)),
        ExprKind::RecordUpdate(r, path, v) => {
            let path: Vec<&str> = path.iter().map(|f| f.name.as_str()).collect();
            format!("(with {} {} {})", sx(r), path.join("."), sx(v))
        }
        ExprKind::If(c, t, f) => format!("(if {} {} {})", sx(c), sx(t), sx(f)),
        ExprKind::Loop { pat, init, form, body } => {
            let init = init.as_ref().map_or("_".to_string(), |e| sx(e));
            let form = match form {
                LoopForm::For(i, n) => format!("for {} {}", i.name, sx(n)),
                LoopForm::ForIn(p, xs) => format!("in {} {}", show_pat(p), sx(xs)),
                LoopForm::While(c) => format!("while {}", sx(c)),
            };
            format!("(loop {} {init} ({form}) {})", show_pat(pat), sx(body))
        }
        ExprKind::Match(e, cs) => {
            format!("(match {} {})", sx(e), list(cs, |(p, e)| format!("[{} {}]", show_pat(p), sx(e))))
        }
        ExprKind::Ascribe(e, t) => format!("(: {} {})", sx(e), ty(t)),
    }
}

/// A small deterministic generator (xorshift64*), so that the random runs
/// are the same on every machine.
pub struct XorShift(pub u64);

impl XorShift {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

//! The stable text form of the IR, read by people (`explain()`) and
//! compared by snapshot tests.
//!
//! Variables are printed by binding depth, not by de Bruijn index, so a
//! variable has one name throughout its scope: array variables `a0, a1, ..`
//! and scalar variables `x0, x1, ..`. Lets are printed one per line; scalar
//! operators infix and fully parenthesised below the top level.

use super::term::*;
use accelerate_base::array::{ScalarVal, SliceDim, SliceSpec};
use std::fmt::Write;

/// Prints a whole program.
pub fn program(p: &Program) -> String {
    let mut pr = Printer::default();
    let mut out = String::new();
    if !p.params.is_empty() {
        let names: Vec<String> = p
            .params
            .iter()
            .map(|t| {
                let n = pr.bind_acc();
                format!("{n}: {t}")
            })
            .collect();
        let _ = writeln!(out, "\\{} ->", names.join(" "));
    }
    pr.acc(&p.body, 0, &mut out);
    out.push('\n');
    out
}

/// Scalar code printed with names for the array variables in scope
/// (innermost last), in this module's text form: for the printers of
/// other levels (the plan's, `plan::pretty`).
pub struct ScalarPrinter {
    pr: Printer,
}

impl ScalarPrinter {
    pub fn new(arrays: Vec<String>) -> ScalarPrinter {
        ScalarPrinter { pr: Printer { anames: arrays, ..Printer::default() } }
    }

    /// An expression, in parentheses unless atomic, whose continuation
    /// lines are indented by `indent`.
    pub fn exp(&mut self, e: &OpenExp, indent: usize) -> String {
        let saved = self.pr.eindent;
        self.pr.eindent = indent + 4;
        let mut out = String::new();
        self.pr.exp_arg(e, &mut out);
        self.pr.eindent = saved;
        out
    }

    /// A function, whose continuation lines are indented by `indent`.
    pub fn fun(&mut self, f: &Fun, indent: usize) -> String {
        let mut out = String::new();
        self.pr.fun_at(f, indent, &mut out);
        out
    }

    /// A stencil boundary.
    pub fn boundary(&mut self, b: &Boundary, indent: usize) -> String {
        match b {
            Boundary::Clamp => "clamp".into(),
            Boundary::Mirror => "mirror".into(),
            Boundary::Wrap => "wrap".into(),
            Boundary::Constant(c) => format!("constant {}", self.exp(c, indent)),
            Boundary::Function(g) => format!("function {}", self.fun(g, indent)),
        }
    }
}

#[derive(Default)]
struct Printer {
    /// The names of the array variables in scope, innermost last.
    anames: Vec<String>,
    /// The names of the scalar variables in scope, innermost last.
    enames: Vec<String>,
    next_a: usize,
    next_x: usize,
    /// Indentation of the lines of the scalar code being printed.
    eindent: usize,
}

impl Printer {
    // Every binder gets a fresh name, in printing order, so that no name is
    // reused inside the term it binds (scalar names restart at `x0` in each
    // function of an array operation).
    fn fresh_acc(&mut self) -> String {
        self.next_a += 1;
        format!("a{}", self.next_a - 1)
    }
    fn bind_acc(&mut self) -> String {
        let n = self.fresh_acc();
        self.anames.push(n.clone());
        n
    }
    fn acc_var(&self, i: usize) -> String {
        match self.anames.len().checked_sub(i + 1) {
            Some(l) => self.anames[l].clone(),
            None => format!("a?{i}"),
        }
    }
    fn fresh_exp(&mut self) -> String {
        self.next_x += 1;
        format!("x{}", self.next_x - 1)
    }
    fn bind_exp(&mut self) -> String {
        let n = self.fresh_exp();
        self.enames.push(n.clone());
        n
    }
    fn exp_var(&self, i: usize) -> String {
        match self.enames.len().checked_sub(i + 1) {
            Some(l) => self.enames[l].clone(),
            None => format!("x?{i}"),
        }
    }

    fn acc(&mut self, a: &OpenAcc, indent: usize, out: &mut String) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.acc_inner(a, indent, out))
    }

    /// An argument position: variables bare, anything else in parentheses.
    fn acc_arg(&mut self, a: &OpenAcc, indent: usize, out: &mut String) {
        match &a.kind {
            AccKind::Var(i) => out.push_str(&self.acc_var(*i)),
            _ => {
                out.push('(');
                self.acc(a, deeper(indent), out);
                out.push(')');
            }
        }
    }

    fn acc_inner(&mut self, a: &OpenAcc, indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        match &a.kind {
            AccKind::Let(bound, body) => {
                let saved = self.anames.len();
                let n = self.fresh_acc();
                let _ = write!(out, "let {n} = ");
                self.acc(bound, deeper(indent), out);
                let _ = write!(out, "\n{pad}in ");
                self.anames.push(n);
                self.acc(body, indent, out);
                self.anames.truncate(saved);
            }
            AccKind::Var(i) => out.push_str(&self.acc_var(*i)),
            AccKind::Tuple(ts) => {
                out.push('(');
                for (k, t) in ts.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    self.acc(t, deeper(indent), out);
                }
                out.push(')');
            }
            AccKind::Prj(i, t) => {
                let _ = write!(out, "prj{i} ");
                self.acc_arg(t, indent, out);
            }
            AccKind::Unzip(t) => {
                out.push_str("unzip ");
                self.acc_arg(t, indent, out);
            }
            AccKind::Use(d) => {
                let _ = write!(out, "use (Array {:?} {})", d.shape(), d.elt_ty());
            }
            AccKind::Unit(e) => {
                out.push_str("unit ");
                self.exp_arg(e, out);
            }
            AccKind::Reshape { shape, array } => {
                out.push_str("reshape ");
                self.exp_arg(shape, out);
                out.push(' ');
                self.acc_arg(array, indent, out);
            }
            AccKind::Generate { shape, f } => {
                out.push_str("generate ");
                self.exp_arg(shape, out);
                out.push(' ');
                self.fun_at(f, indent, out);
            }
            AccKind::Map { f, array } => {
                out.push_str("map ");
                self.fun_at(f, indent, out);
                out.push(' ');
                self.acc_arg(array, indent, out);
            }
            AccKind::ZipWith { f, a: x, b: y } => {
                out.push_str("zip_with ");
                self.fun_at(f, indent, out);
                out.push(' ');
                self.acc_arg(x, indent, out);
                out.push(' ');
                self.acc_arg(y, indent, out);
            }
            AccKind::Backpermute { shape, f, array } => {
                out.push_str("backpermute ");
                self.exp_arg(shape, out);
                out.push(' ');
                self.fun_at(f, indent, out);
                out.push(' ');
                self.acc_arg(array, indent, out);
            }
            AccKind::Replicate { spec, slix, array } => {
                let _ = write!(out, "replicate {} ", spec_text(spec));
                self.exp_arg(slix, out);
                out.push(' ');
                self.acc_arg(array, indent, out);
            }
            AccKind::Slice { spec, array, slix } => {
                let _ = write!(out, "slice {} ", spec_text(spec));
                self.acc_arg(array, indent, out);
                out.push(' ');
                self.exp_arg(slix, out);
            }
            AccKind::Fold { f, seed, array }
            | AccKind::FoldKeep { f, seed, array }
            | AccKind::Scan { f, seed, array, .. } => {
                let keep = if matches!(a.kind, AccKind::FoldKeep { .. }) { "_keep" } else { "" };
                let _ = write!(out, "{}{keep} ", a.op_name());
                self.fun_at(f, indent, out);
                if let Some(z) = seed {
                    out.push(' ');
                    self.exp_arg(z, out);
                }
                out.push(' ');
                self.acc_arg(array, indent, out);
            }
            AccKind::FoldSeg { f, seed, array, offsets } => {
                let _ = write!(out, "{} ", a.op_name());
                self.fun_at(f, indent, out);
                if let Some(z) = seed {
                    out.push(' ');
                    self.exp_arg(z, out);
                }
                out.push(' ');
                self.acc_arg(array, indent, out);
                out.push(' ');
                self.acc_arg(offsets, indent, out);
            }
            AccKind::Stencil { f, args } => {
                let _ = write!(out, "{} ", a.op_name());
                self.fun_at(f, indent, out);
                for arg in args {
                    let _ = write!(out, " {:?} ", arg.extents);
                    match &arg.boundary {
                        Boundary::Clamp => out.push_str("clamp"),
                        Boundary::Mirror => out.push_str("mirror"),
                        Boundary::Wrap => out.push_str("wrap"),
                        Boundary::Constant(c) => {
                            out.push_str("constant ");
                            self.exp_arg(c, out);
                        }
                        Boundary::Function(g) => {
                            out.push_str("function ");
                            self.fun_at(g, indent, out);
                        }
                    }
                    out.push(' ');
                    self.acc_arg(&arg.array, indent, out);
                }
            }
            AccKind::Permute { combine, defaults, index, source } => {
                out.push_str("permute ");
                self.fun_at(combine, indent, out);
                out.push(' ');
                self.acc_arg(defaults, indent, out);
                out.push(' ');
                self.fun_at(index, indent, out);
                out.push(' ');
                self.acc_arg(source, indent, out);
            }
            AccKind::Acond { cond, then_, else_ } => {
                out.push_str("acond ");
                self.exp_arg(cond, out);
                let _ = write!(out, "\n{pad}  then ");
                self.acc(then_, deeper(indent), out);
                let _ = write!(out, "\n{pad}  else ");
                self.acc(else_, deeper(indent), out);
            }
            AccKind::Awhile { pred, body, init } => {
                out.push_str("awhile ");
                self.afun(pred, indent, out);
                out.push(' ');
                self.afun(body, indent, out);
                out.push(' ');
                self.acc_arg(init, indent, out);
            }
            AccKind::Foreign { func, fallback, arg } => {
                let _ = write!(out, "foreign {} ", func.name);
                if let Some(fallback) = fallback {
                    self.afun(fallback, indent, out);
                    out.push(' ');
                }
                self.acc_arg(arg, indent, out);
            }
            AccKind::Delayed(DelayedArray { shape, index, linear }) => {
                out.push_str("delayed ");
                self.exp_arg(shape, out);
                out.push(' ');
                self.fun_at(index, indent, out);
                out.push(' ');
                self.fun_at(linear, indent, out);
            }
        }
    }

    fn afun(&mut self, f: &AFun, indent: usize, out: &mut String) {
        let saved = self.anames.len();
        let n = self.bind_acc();
        let _ = write!(out, "(\\{n} -> ");
        self.acc(&f.body, deeper(indent), out);
        out.push(')');
        self.anames.truncate(saved);
    }

    fn fun_at(&mut self, f: &Fun, indent: usize, out: &mut String) {
        let saved_indent = self.eindent;
        self.eindent = indent + 4;
        self.fun(f, out);
        self.eindent = saved_indent;
    }

    fn fun(&mut self, f: &Fun, out: &mut String) {
        if self.enames.is_empty() {
            self.next_x = 0;
        }
        let saved = self.enames.len();
        let names: Vec<String> = f.params.iter().map(|_| self.bind_exp()).collect();
        let _ = write!(out, "(\\{} -> ", names.join(" "));
        self.exp(&f.body, false, out);
        out.push(')');
        self.enames.truncate(saved);
    }

    fn exp_arg(&mut self, e: &OpenExp, out: &mut String) {
        self.exp(e, true, out)
    }

    fn exp(&mut self, e: &OpenExp, nested: bool, out: &mut String) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.exp_inner(e, nested, out))
    }

    fn exp_inner(&mut self, e: &OpenExp, nested: bool, out: &mut String) {
        let (open, close) = if nested { ("(", ")") } else { ("", "") };
        match &e.kind {
            ExpKind::Let(b, body) => {
                let saved = self.enames.len();
                let n = self.fresh_exp();
                let _ = write!(out, "{open}let {n} = ");
                let outer = self.eindent;
                self.eindent = deeper(outer);
                self.exp(b, false, out);
                self.eindent = outer;
                let _ = write!(out, " in\n{}", " ".repeat(outer));
                self.enames.push(n);
                self.exp(body, false, out);
                out.push_str(close);
                self.enames.truncate(saved);
            }
            ExpKind::Var(i) => out.push_str(&self.exp_var(*i)),
            ExpKind::Const(c) => out.push_str(&const_text(*c)),
            ExpKind::Tuple(es) => {
                out.push('(');
                for (k, x) in es.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    self.exp(x, false, out);
                }
                if es.len() == 1 {
                    out.push(',');
                }
                out.push(')');
            }
            ExpKind::Prj(i, t) => {
                self.exp(t, true, out);
                let _ = write!(out, ".{i}");
            }
            ExpKind::Prim(op, args) => match (op.infix(), args.as_slice()) {
                (Some(sym), [x, y]) => {
                    out.push_str(open);
                    self.exp(x, true, out);
                    let _ = write!(out, " {sym} ");
                    self.exp(y, true, out);
                    out.push_str(close);
                }
                _ => {
                    let _ = write!(out, "{op}(");
                    for (k, x) in args.iter().enumerate() {
                        if k > 0 {
                            out.push_str(", ");
                        }
                        self.exp(x, false, out);
                    }
                    out.push(')');
                }
            },
            ExpKind::Cond(c, t, f) => {
                out.push_str(open);
                out.push_str("if ");
                self.exp(c, false, out);
                out.push_str(" then ");
                self.exp(t, false, out);
                out.push_str(" else ");
                self.exp(f, false, out);
                out.push_str(close);
            }
            ExpKind::While { cond, body, init } => {
                out.push_str("while ");
                self.fun(cond, out);
                out.push(' ');
                self.fun(body, out);
                out.push(' ');
                self.exp(init, true, out);
            }
            ExpKind::Index { array, index } => {
                let _ = write!(out, "{}!", self.acc_var(*array));
                self.exp(index, true, out);
            }
            ExpKind::LinearIndex { array, index } => {
                let _ = write!(out, "{}!!", self.acc_var(*array));
                self.exp(index, true, out);
            }
            ExpKind::Shape { array } => {
                let _ = write!(out, "shape({})", self.acc_var(*array));
            }
            ExpKind::ALet(bound, body) => {
                let saved = self.anames.len();
                let n = self.fresh_acc();
                let _ = write!(out, "{open}let {n} = ");
                let outer = self.eindent;
                self.acc(bound, deeper(outer), out);
                let _ = write!(out, " in\n{}", " ".repeat(outer));
                self.anames.push(n);
                self.exp(body, false, out);
                out.push_str(close);
                self.anames.truncate(saved);
            }
        }
    }
}

/// Indentation grows with nesting up to a limit, so that printing deeply
/// nested terms stays linear in their size.
fn deeper(indent: usize) -> usize {
    (indent + 2).min(40)
}

fn const_text(c: ScalarVal) -> String {
    match c {
        ScalarVal::Bool(_) | ScalarVal::I64(_) | ScalarVal::F64(_) => c.to_string(),
        other => format!("{other}:{}", other.ty()),
    }
}

fn spec_text(s: &SliceSpec) -> String {
    let mut t = String::from("[");
    if s.any_rank > 0 {
        let _ = write!(t, "Any{}", s.any_rank);
    } else {
        t.push('Z');
    }
    for d in &s.dims {
        t.push_str(match d {
            SliceDim::All => " All",
            SliceDim::Fixed => " Int",
        });
    }
    t.push(']');
    t
}

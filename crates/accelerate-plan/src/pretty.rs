//! The stable text form of a plan, read by people (`explain()`,
//! `ACCELERATE_DUMP=plan`) and compared by snapshot tests.
//!
//! The host program first, in the IR's form (`ir::pretty`: array
//! variables named `a0, a1, ..` by binding depth), each kernel launch
//! written `launch kN`; then each kernel: its skeleton, result type, the
//! user's operation and where it was written, the variables it reads
//! (named as at its launch), and its arguments and functions.

use super::{Arg, Cmd, Kernel, Program, Skeleton, Source};
use accelerate_ir::pretty::ScalarPrinter;
use std::fmt::Write;

/// Prints a plan, with the user's source locations.
pub fn program(p: &Program) -> String {
    print(p, true)
}

/// Prints a plan without source locations (for snapshots that should not
/// change when a line moves).
pub fn program_without_locations(p: &Program) -> String {
    print(p, false)
}

fn print(p: &Program, locations: bool) -> String {
    let mut pr =
        Printer { names: Vec::new(), next: 0, launch_names: vec![Vec::new(); p.kernels.len()], locations };
    let mut out = String::new();
    if !p.params.is_empty() {
        let names: Vec<String> = p.params.iter().map(|t| format!("{}: {t}", pr.bind())).collect();
        let _ = writeln!(out, "\\{} ->", names.join(" "));
    }
    pr.cmd(&p.body, 0, &mut out);
    out.push('\n');
    for g in &p.row_groups {
        let names: Vec<String> = g.kernels.iter().map(|k| format!("k{k}")).collect();
        let over = match g.over {
            Some(o) => format!(
                " (k{} over k{}'s {})",
                g.kernels[o.member],
                g.kernels[o.from],
                if o.kept { "kept" } else { "result" }
            ),
            None => String::new(),
        };
        let _ = writeln!(out, "rows {}{over}", names.join(" "));
    }
    for (n, k) in p.kernels.iter().enumerate() {
        out.push('\n');
        pr.kernel(k, n, &mut out);
    }
    out
}

struct Printer {
    /// The names of the array variables in scope, innermost last.
    names: Vec<String>,
    next: usize,
    /// The names in scope where each kernel is launched.
    launch_names: Vec<Vec<String>>,
    locations: bool,
}

impl Printer {
    fn bind(&mut self) -> String {
        let n = format!("a{}", self.next);
        self.next += 1;
        self.names.push(n.clone());
        n
    }

    fn var(&self, i: usize) -> String {
        match self.names.len().checked_sub(i + 1) {
            Some(k) => self.names[k].clone(),
            None => format!("a?{i}"),
        }
    }

    fn scalars(&self) -> ScalarPrinter {
        ScalarPrinter::new(self.names.clone())
    }

    fn cmd(&mut self, c: &Cmd, indent: usize, out: &mut String) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.cmd_inner(c, indent, out))
    }

    fn cmd_inner(&mut self, c: &Cmd, indent: usize, out: &mut String) {
        let pad = " ".repeat(indent);
        let deeper = (indent + 2).min(40);
        match c {
            Cmd::Let(b, body) => {
                let n = format!("a{}", self.next);
                self.next += 1;
                let _ = write!(out, "let {n} = ");
                self.cmd(b, deeper, out);
                let _ = write!(out, "\n{pad}in ");
                self.names.push(n);
                self.cmd(body, indent, out);
                self.names.pop();
            }
            Cmd::Var(i) => out.push_str(&self.var(*i)),
            Cmd::Tuple(cs) => {
                out.push('(');
                for (k, c) in cs.iter().enumerate() {
                    if k > 0 {
                        out.push_str(", ");
                    }
                    self.cmd(c, deeper, out);
                }
                out.push(')');
            }
            Cmd::Prj(i, c) => {
                let _ = write!(out, "prj{i} (");
                self.cmd(c, deeper, out);
                out.push(')');
            }
            Cmd::Unzip(c) => {
                out.push_str("unzip (");
                self.cmd(c, deeper, out);
                out.push(')');
            }
            Cmd::Use(d) => {
                let _ = write!(out, "use (Array {:?} {})", d.shape(), d.elt_ty());
            }
            Cmd::Unit(e, _) => {
                let _ = write!(out, "unit {}", self.scalars().exp(e, indent));
            }
            Cmd::Reshape { shape, array, .. } => {
                let _ = write!(out, "reshape {} (", self.scalars().exp(shape, indent));
                self.cmd(array, deeper, out);
                out.push(')');
            }
            Cmd::Acond { cond, then_, else_ } => {
                let _ = write!(out, "acond {}\n{pad}  then ", self.scalars().exp(cond, indent));
                self.cmd(then_, deeper, out);
                let _ = write!(out, "\n{pad}  else ");
                self.cmd(else_, deeper, out);
            }
            Cmd::Awhile { pred, body, init } => {
                out.push_str("awhile ");
                for f in [pred, body] {
                    let n = self.bind();
                    let _ = write!(out, "(\\{n} -> ");
                    self.cmd(f, deeper, out);
                    out.push_str(") ");
                    self.names.pop();
                }
                out.push('(');
                self.cmd(init, deeper, out);
                out.push(')');
            }
            Cmd::Foreign { func, fallback, arg, .. } => {
                let _ = write!(out, "foreign {} ", func.name);
                if let Some(fallback) = fallback {
                    let n = self.bind();
                    let _ = write!(out, "(fallback \\{n} -> ");
                    self.cmd(fallback, deeper, out);
                    out.push_str(") ");
                    self.names.pop();
                }
                out.push('(');
                self.cmd(arg, deeper, out);
                out.push(')');
            }
            Cmd::Kernel(k) => {
                if let Some(names) = self.launch_names.get_mut(*k) {
                    *names = self.names.clone();
                }
                let _ = write!(out, "launch k{k}");
            }
        }
    }

    fn kernel(&self, k: &Kernel, n: usize, out: &mut String) {
        let mut s = ScalarPrinter::new(self.launch_names.get(n).cloned().unwrap_or_default());
        let names = self.launch_names.get(n).cloned().unwrap_or_default();
        let name = |v: usize| -> String {
            match names.len().checked_sub(v + 1) {
                Some(j) => names[j].clone(),
                None => format!("a?{v}"),
            }
        };
        let _ = write!(out, "{} = {} -> {} ({}", k.name, k.skeleton.name(), k.result_ty(), k.op);
        if self.locations {
            let _ = write!(out, " at {}", k.loc);
        }
        out.push_str(")\n");
        // in the order they were bound (de Bruijn order is innermost first)
        let inputs: Vec<String> = k.inputs.iter().rev().map(|(v, _)| name(*v)).collect();
        let _ = writeln!(out, "  reads [{}]", inputs.join(", "));
        let arg = |s: &mut ScalarPrinter, a: &Arg| -> String {
            match &a.source {
                Source::Manifest(v) => format!("{} : {}", name(*v), a.ty),
                Source::Delayed(d) => format!(
                    "delayed {} {}\n      {} : {}",
                    s.exp(&d.shape, 4),
                    s.fun(&d.index, 4),
                    s.fun(&d.linear, 4),
                    a.ty
                ),
            }
        };
        let seed = |s: &mut ScalarPrinter, z: &Option<accelerate_ir::OpenExp>| match z {
            Some(z) => format!("  seed {}\n", s.exp(z, 2)),
            None => String::new(),
        };
        match &k.skeleton {
            Skeleton::Generate(g) => {
                let _ = writeln!(out, "  src {}", arg(&mut s, &g.src));
            }
            Skeleton::Fold(f) => {
                let _ = write!(
                    out,
                    "  f {}\n{}  src {}\n",
                    s.fun(&f.f, 2),
                    seed(&mut s, &f.seed),
                    arg(&mut s, &f.src)
                );
            }
            Skeleton::Scan(f) => {
                let _ = write!(
                    out,
                    "  {:?}\n  f {}\n{}  src {}\n",
                    f.dir,
                    s.fun(&f.f, 2),
                    seed(&mut s, &f.seed),
                    arg(&mut s, &f.src)
                );
            }
            Skeleton::FoldSeg(f) => {
                let _ = write!(
                    out,
                    "  f {}\n{}  src {}\n  offsets {}\n",
                    s.fun(&f.f, 2),
                    seed(&mut s, &f.seed),
                    arg(&mut s, &f.src),
                    name(f.offsets)
                );
            }
            Skeleton::Permute(p) => {
                let _ = write!(
                    out,
                    "  combine {}\n  defaults {}\n  index {}\n  src {}\n",
                    s.fun(&p.combine, 2),
                    name(p.defaults),
                    s.fun(&p.index, 2),
                    arg(&mut s, &p.src)
                );
            }
            Skeleton::Stencil(st) => {
                let _ = writeln!(out, "  f {}", s.fun(&st.f, 2));
                for a in &st.args {
                    let _ = writeln!(
                        out,
                        "  pattern {:?} {}\n  src {}",
                        a.extents,
                        s.boundary(&a.boundary, 2),
                        arg(&mut s, &a.src)
                    );
                }
            }
        }
    }
}

//! A Graphviz (DOT) drawing of a program's array level: one node per array
//! operation (labelled with the operation and the user's source line), an
//! edge from each array to the operations that read it, let-bound arrays
//! drawn once however often they are used. `dot -Tsvg` renders it.

use super::term::*;
use std::fmt::Write;

/// The DOT text of a program.
pub fn program(p: &Program) -> String {
    let mut d = Dot { out: String::new(), next: 0, env: Vec::new() };
    d.out.push_str("digraph program {\n  node [shape=box, fontname=\"monospace\"];\n");
    for (i, t) in p.params.iter().enumerate() {
        let n = d.node(&format!("input {i}\\n{t}"), "ellipse");
        d.env.push(n);
    }
    let root = d.acc(&p.body);
    let _ = writeln!(d.out, "  result [shape=plaintext];\n  {root} -> result;");
    d.out.push_str("}\n");
    d.out
}

struct Dot {
    out: String,
    next: usize,
    /// The node of each array variable in scope, innermost last.
    env: Vec<String>,
}

impl Dot {
    fn node(&mut self, label: &str, shape: &str) -> String {
        let id = format!("n{}", self.next);
        self.next += 1;
        let label = label.replace('"', "\\\"");
        let _ = writeln!(self.out, "  {id} [label=\"{label}\", shape={shape}];");
        id
    }

    fn edge(&mut self, from: &str, to: &str, label: Option<&str>) {
        match label {
            Some(l) => {
                let _ = writeln!(self.out, "  {from} -> {to} [label=\"{l}\"];");
            }
            None => {
                let _ = writeln!(self.out, "  {from} -> {to};");
            }
        }
    }

    /// Draws `a`; returns the node that produces its value.
    fn acc(&mut self, a: &OpenAcc) -> String {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.acc_inner(a))
    }

    fn acc_inner(&mut self, a: &OpenAcc) -> String {
        let label = |a: &OpenAcc| format!("{}\\n{}:{}", a.op_name(), short(a.loc.file()), a.loc.line());
        match &a.kind {
            AccKind::Let(b, body) => {
                let n = self.acc(b);
                self.env.push(n);
                let r = self.acc(body);
                self.env.pop();
                r
            }
            AccKind::Var(i) => match self.env.len().checked_sub(i + 1) {
                Some(k) => self.env[k].clone(),
                None => self.node(&format!("unbound a{i}"), "octagon"),
            },
            AccKind::Use(d) => self.node(&format!("use\\n{:?} {}", d.shape(), d.elt_ty()), "ellipse"),
            AccKind::Delayed(DelayedArray { shape, index, linear }) => {
                // a producer embedded in its consumer: drawn dashed, fed by
                // the arrays its index functions read
                let mut read = Vec::new();
                for e in [shape, &index.body, &linear.body] {
                    super::visit::arrays_read(e, &mut read);
                }
                let n = self.node(&label(a), "box");
                let _ = writeln!(self.out, "  {n} [style=dashed];");
                for v in read {
                    if let Some(k) = self.env.len().checked_sub(v + 1) {
                        let from = self.env[k].clone();
                        self.edge(&from, &n, None);
                    }
                }
                n
            }
            AccKind::Awhile { pred, body, init } => {
                let i = self.acc(init);
                let n = self.node(&label(a), "box3d");
                self.edge(&i, &n, Some("init"));
                for (f, what) in [(pred, "while"), (body, "body")] {
                    let p = self.node(&format!("{what} argument"), "ellipse");
                    self.env.push(p);
                    let r = self.acc(&f.body);
                    self.env.pop();
                    self.edge(&r, &n, Some(what));
                }
                n
            }
            AccKind::Foreign { fallback, arg, .. } => {
                let i = self.acc(arg);
                let n = self.node(&label(a), "box3d");
                self.edge(&i, &n, Some("argument"));
                if let Some(fallback) = fallback {
                    let p = self.node("fallback argument", "ellipse");
                    self.env.push(p);
                    let r = self.acc(&fallback.body);
                    self.env.pop();
                    self.edge(&r, &n, Some("fallback"));
                }
                n
            }
            _ => {
                let args: Vec<(&OpenAcc, Option<&str>)> = match &a.kind {
                    AccKind::Tuple(ts) => ts.iter().map(|t| (t, None)).collect(),
                    AccKind::Prj(_, t)
                    | AccKind::Unzip(t)
                    | AccKind::Reshape { array: t, .. }
                    | AccKind::Map { array: t, .. }
                    | AccKind::Backpermute { array: t, .. }
                    | AccKind::Replicate { array: t, .. }
                    | AccKind::Slice { array: t, .. }
                    | AccKind::Fold { array: t, .. }
                    | AccKind::FoldKeep { array: t, .. }
                    | AccKind::Scan { array: t, .. } => vec![(t, None)],
                    AccKind::ZipWith { a: x, b: y, .. } => vec![(x, None), (y, None)],
                    AccKind::FoldSeg { array, offsets, .. } => {
                        vec![(array, None), (offsets, Some("segments"))]
                    }
                    AccKind::Permute { defaults, source, .. } => {
                        vec![(defaults, Some("defaults")), (source, Some("source"))]
                    }
                    AccKind::Stencil { args, .. } => args.iter().map(|s| (&*s.array, None)).collect(),
                    AccKind::Acond { then_, else_, .. } => vec![(then_, Some("then")), (else_, Some("else"))],
                    _ => vec![],
                };
                let froms: Vec<(String, Option<&str>)> =
                    args.into_iter().map(|(x, l)| (self.acc(x), l)).collect();
                let n = self.node(&label(a), "box");
                for (f, l) in froms {
                    self.edge(&f, &n, l);
                }
                n
            }
        }
    }
}

/// The last two components of a path, enough to find the line.
fn short(file: &str) -> String {
    let parts: Vec<&str> = file.rsplit(['/', '\\']).take(2).collect();
    parts.into_iter().rev().collect::<Vec<_>>().join("/")
}

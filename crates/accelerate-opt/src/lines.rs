//! Lines of an array read while it is written, copied out first (Note
//! [Lines read while written]).
//!
//! Note [Lines read while written]
//! A `generate` over the shape of an array `v` that reads `v` at its own
//! position may write its result over `v` when `v` is dead (Note [Updates
//! in place] in `plan/in_place.rs`), unless it also reads `v` elsewhere.
//! Floyd-Warshall's step (`d[i][j] min (d[i][k] + d[k][j])`, as
//! Accelerate's examples write it) reads row `k` and column `k` besides its
//! own position: in place, a worker would read a row `k` another worker is
//! rewriting. The hand-written loop copies row `k` out first, and so does
//! this pass: a read of `v` whose index has one component from the
//! element's index and every other component invariant (the same for
//! every element) reads a line of `v`, and becomes a read of a vector
//! computed before the `generate`:
//!
//! ```text
//! generate shape(v) (\ix -> ... v!(ix.0, k) ...)
//!   ==>
//! let l = generate (min(shape(v).0, size(shape(v)))) (\t -> v!(t.0, clamp(k, shape(v).1)))
//! in generate shape(v) (\ix -> ... l!(bounds_check(shape(v), (ix.0, k)).0) ...)
//! ```
//!
//! One vector per distinct line (a line is its position in the index and
//! its invariant components); the element's read keeps its check against
//! `v`'s shape, so that an index out of bounds is the same error at the
//! same place. The copy never raises one of its own: its invariant
//! components are clamped into `v`'s extents, and it is empty when `v` is,
//! so a line read only under a condition that never holds costs a copy
//! and nothing else. For the same reason the invariant components must be
//! terms that cannot fail (constants, shapes, rank-0 reads, additions,
//! subtractions, multiplications, minima and maxima of them); any other
//! read of `v` (two components from the index, a read inside a loop, a
//! linear read) leaves the `generate` as it was.
//!
//! Only results of rank 2 or more are rewritten, so that a line is at most
//! a square root of the array for a square one (a rank-1 array's only line
//! is itself). The pass runs on the CPU backend's programs after fusion,
//! where the `generate`s are the kernels; it is linear in the program, the
//! invariant terms being at most `MAX_NODES` nodes each.

use crate::avars::{exp_arrays_mut, parts_mut, Part};
use accelerate_base::array::{EltTy, ScalarVal};
use accelerate_base::error::SrcLoc;
use accelerate_ir::*;
use std::collections::HashMap;

/// The largest invariant component copied into a line's function.
const MAX_NODES: usize = 64;

/// Rewrites every `generate` of `p` that reads lines of the array whose
/// shape it has (Note [Lines read while written]); also how many it
/// rewrote.
pub fn rewrite_program(mut p: Program) -> (Program, usize) {
    let mut n = 0;
    rewrite(&mut p.body, &mut n);
    (p, n)
}

fn rewrite(a: &mut OpenAcc, n: &mut usize) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        for part in parts_mut(a) {
            if let Part::Acc(x, _) = part {
                rewrite(x, n);
            }
        }
        if let Some(r) = lines_of(a) {
            *a = r;
            *n += 1;
        }
    })
}

/// What a scalar term is, for the reads of `v`.
#[derive(Clone, Debug)]
enum Form {
    /// The element's own index.
    Own,
    /// Component `c` of it.
    Comp(usize),
    /// The same for every element, and unable to fail: the term itself.
    Invariant(OpenExp),
    /// A tuple of these.
    Tuple(Vec<Form>),
    Other,
}

/// A line of `v`: the position of the component taken from the index,
/// and the invariant components (the others, in order).
struct Line {
    at: usize,
    fixed: Vec<OpenExp>,
}

/// `a` with the lines it reads copied out first, if it is a `generate`
/// over `shape(v)` of rank 2 or more that reads `v` at its own position,
/// at least one line of `v`, and nowhere else.
fn lines_of(a: &OpenAcc) -> Option<OpenAcc> {
    let AccKind::Generate { shape, f } = &a.kind else { return None };
    let ExpKind::Shape { array: v } = shape.kind else { return None };
    let rank = f.params.first()?.shape_rank()?;
    if rank < 2 {
        return None;
    }
    let mut body = f.body.clone();
    let mut w =
        Walk { v, rank, env: vec![Form::Own], lines: Vec::new(), keys: HashMap::new(), own: false, ok: true };
    w.walk(&mut body);
    if !w.ok || !w.own || w.lines.is_empty() {
        return None;
    }
    let n = w.lines.len();
    // the lines are bound outside the generate, line 0 outermost
    exp_arrays_mut(&mut body, &mut |x| {
        *x = match x.checked_sub(PLACEHOLDER) {
            Some(l) => n - 1 - l,
            None => *x + n,
        }
    });
    let loc = a.loc;
    let mut shape = shape.clone();
    crate::avars::exp_arrays_shift(&mut shape, n);
    let mut r = OpenAcc::new(AccKind::Generate { shape, f: Fun { params: f.params.clone(), body } }, loc);
    for (l, line) in w.lines.iter().enumerate().rev() {
        r = OpenAcc::new(AccKind::Let(Box::new(copy_of(line, v, l, rank, loc)), Box::new(r)), loc);
    }
    Some(r)
}

/// Array variables of the lines while the body is rewritten: line `l` is
/// `PLACEHOLDER + l` until the lines are counted.
const PLACEHOLDER: usize = usize::MAX / 2;

/// The `generate` that copies `line` out of array `v` (its variable at
/// the `generate` that reads it), bound under `under` other lines.
fn copy_of(line: &Line, v: usize, under: usize, rank: usize, loc: SrcLoc) -> OpenAcc {
    let v = v + under;
    let e = |kind| OpenExp::new(kind, loc);
    let int = |x: i64| e(ExpKind::Const(ScalarVal::I64(x)));
    let prim = |p, args| e(ExpKind::Prim(p, args));
    let extent = |q: usize| e(ExpKind::Prj(q, Box::new(e(ExpKind::Shape { array: v }))));
    let size = prim(PrimFun::ShapeSize, vec![e(ExpKind::Shape { array: v })]);
    // (empty when v is, so that no position of it is read)
    let len = prim(PrimFun::Min, vec![extent(line.at), size]);
    let mut fixed = line.fixed.iter().cloned();
    let index: Vec<OpenExp> = (0..rank)
        .map(|q| {
            if q == line.at {
                return e(ExpKind::Prj(0, Box::new(e(ExpKind::Var(0)))));
            }
            let mut x = fixed.next().expect("one fixed component for each other position");
            crate::avars::exp_arrays_shift(&mut x, under);
            let last = prim(PrimFun::Sub, vec![extent(q), int(1)]);
            prim(PrimFun::Max, vec![prim(PrimFun::Min, vec![x, last]), int(0)])
        })
        .collect();
    let body = e(ExpKind::Index { array: v, index: Box::new(e(ExpKind::Tuple(index))) });
    let shape = e(ExpKind::Tuple(vec![len]));
    OpenAcc::new(AccKind::Generate { shape, f: Fun { params: vec![EltTy::shape(1)], body } }, loc)
}

struct Walk {
    v: usize,
    rank: usize,
    /// The forms of the scalar variables in scope (innermost last).
    env: Vec<Form>,
    lines: Vec<Line>,
    /// Each line's number, by its position and the text of its invariant
    /// components.
    keys: HashMap<String, usize>,
    /// `v` is read at the element's own position.
    own: bool,
    /// No read of `v` elsewhere found.
    ok: bool,
}

impl Walk {
    /// Rewrites the reads of lines of `v` inside `e`; the form of `e` as
    /// it was.
    fn walk(&mut self, e: &mut OpenExp) -> Form {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.walk_inner(e))
    }

    fn walk_inner(&mut self, e: &mut OpenExp) -> Form {
        let loc = e.loc;
        let form = match &mut e.kind {
            ExpKind::Var(i) => {
                return self.env.len().checked_sub(1 + *i).map_or(Form::Other, |j| self.env[j].clone())
            }
            ExpKind::Const(c) => Form::Invariant(OpenExp::new(ExpKind::Const(*c), loc)),
            ExpKind::Shape { array } => Form::Invariant(OpenExp::new(ExpKind::Shape { array: *array }, loc)),
            ExpKind::Let(b, body) => {
                let held = self.walk(b);
                self.env.push(held);
                let r = self.walk(body);
                self.env.pop();
                return r;
            }
            ExpKind::Tuple(es) => {
                let fs: Vec<Form> = es.iter_mut().map(|x| self.walk(x)).collect();
                if fs.len() == self.rank
                    && fs.iter().enumerate().all(|(c, f)| matches!(f, Form::Comp(k) if *k == c))
                {
                    return Form::Own;
                }
                let xs: Option<Vec<OpenExp>> = fs
                    .iter()
                    .map(|f| if let Form::Invariant(x) = f { Some(x.clone()) } else { None })
                    .collect();
                match xs {
                    Some(xs) => Form::Invariant(OpenExp::new(ExpKind::Tuple(xs), loc)),
                    None => return Form::Tuple(fs),
                }
            }
            ExpKind::Prj(c, t) => match self.walk(t) {
                Form::Own => return Form::Comp(*c),
                Form::Tuple(mut fs) if *c < fs.len() => return fs.swap_remove(*c),
                Form::Invariant(x) => Form::Invariant(OpenExp::new(ExpKind::Prj(*c, Box::new(x)), loc)),
                _ => return Form::Other,
            },
            ExpKind::Prim(p, args) => {
                let p = *p;
                let fs: Vec<Form> = args.iter_mut().map(|x| self.walk(x)).collect();
                let total =
                    matches!(p, PrimFun::Add | PrimFun::Sub | PrimFun::Mul | PrimFun::Min | PrimFun::Max);
                let xs: Option<Vec<OpenExp>> =
                    fs.into_iter().map(|f| if let Form::Invariant(x) = f { Some(x) } else { None }).collect();
                match xs {
                    Some(xs) if total => Form::Invariant(OpenExp::new(ExpKind::Prim(p, xs), loc)),
                    _ => return Form::Other,
                }
            }
            ExpKind::Index { array, index } => {
                let array = *array;
                let at = self.walk(index);
                if array == self.v {
                    self.read(e, at);
                    return Form::Other;
                }
                // a rank-0 read cannot fail
                match at {
                    Form::Invariant(x) if matches!(&x.kind, ExpKind::Tuple(xs) if xs.is_empty()) => {
                        Form::Invariant(OpenExp::new(ExpKind::Index { array, index: Box::new(x) }, loc))
                    }
                    _ => return Form::Other,
                }
            }
            ExpKind::LinearIndex { array, index } => {
                if *array == self.v {
                    self.ok = false;
                }
                self.walk(index);
                return Form::Other;
            }
            ExpKind::Cond(c, t, x) => {
                self.walk(c);
                self.walk(t);
                self.walk(x);
                return Form::Other;
            }
            ExpKind::While { .. } | ExpKind::ALet(..) => {
                self.ok &= !visit::reads_elements(e, self.v);
                return Form::Other;
            }
        };
        match form {
            Form::Invariant(x) if size(&x) > MAX_NODES => Form::Other,
            f => f,
        }
    }

    /// Classifies the read `e` of `v` at an index of form `at`, and makes
    /// it a read of its line if it reads one.
    fn read(&mut self, e: &mut OpenExp, at: Form) {
        let fs = match at {
            Form::Own => {
                self.own = true;
                return;
            }
            Form::Tuple(fs) if fs.len() == self.rank => fs,
            _ => {
                self.ok = false;
                return;
            }
        };
        let varying: Vec<usize> = (0..fs.len()).filter(|&q| !matches!(fs[q], Form::Invariant(_))).collect();
        let [at] = varying[..] else {
            self.ok = false;
            return;
        };
        if !matches!(fs[at], Form::Comp(_)) {
            self.ok = false;
            return;
        }
        let fixed: Vec<OpenExp> =
            fs.into_iter().filter_map(|f| if let Form::Invariant(x) = f { Some(x) } else { None }).collect();
        let key = format!("{at} {fixed:?}");
        let next = self.lines.len();
        let l = *self.keys.entry(key).or_insert(next);
        if l == next {
            self.lines.push(Line { at, fixed });
        }
        // v!(ix) ==> line!(bounds_check(shape(v), ix).at)
        let loc = e.loc;
        let ExpKind::Index { index, .. } = &mut e.kind else { unreachable!("a read of v") };
        let index = std::mem::replace(&mut **index, OpenExp::new(ExpKind::Tuple(vec![]), loc));
        let x = |kind| OpenExp::new(kind, loc);
        let checked =
            x(ExpKind::Prim(PrimFun::BoundsCheck, vec![x(ExpKind::Shape { array: self.v }), index]));
        let pos = x(ExpKind::Tuple(vec![x(ExpKind::Prj(at, Box::new(checked)))]));
        e.kind = ExpKind::Index { array: PLACEHOLDER + l, index: Box::new(pos) };
    }
}

/// The number of nodes of `e`, counted up to `MAX_NODES + 1`.
fn size(e: &OpenExp) -> usize {
    let mut n = 0;
    visit::any_node(e, |_| {
        n += 1;
        n > MAX_NODES
    });
    n
}

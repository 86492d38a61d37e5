//! Array-variable manipulation on array terms: the parts of a term (its
//! scalar expressions, functions and array subterms, with how many array
//! binders each subterm is under), shifting array variables, counting
//! their uses, and listing the arrays a scalar term reads. Fusion moves
//! terms under and out of array binders and needs all of these; the
//! scalar-variable counterparts are in `debruijn`.
//!
//! Array variables occur in array terms (`AccKind::Var`) and in scalar
//! terms (`ExpKind::Index`, `LinearIndex`, `Shape`), which see the array
//! environment of the array operation they belong to (Note [Two
//! environments]).

use accelerate_ir::visit::each_child;
use accelerate_ir::*;
use std::collections::HashMap;

/// A direct part of an array term.
pub enum Part<'a> {
    Exp(&'a mut OpenExp),
    Fun(&'a mut Fun),
    /// An array subterm under this many more array binders than its parent.
    Acc(&'a mut OpenAcc, usize),
}

/// The direct parts of `a`, in evaluation order.
pub fn parts_mut(a: &mut OpenAcc) -> Vec<Part<'_>> {
    use Part::*;
    match &mut a.kind {
        AccKind::Let(b, body) => vec![Acc(b, 0), Acc(body, 1)],
        AccKind::Var(_) | AccKind::Use(_) => vec![],
        AccKind::Tuple(ts) => ts.iter_mut().map(|t| Acc(t, 0)).collect(),
        AccKind::Prj(_, t) | AccKind::Unzip(t) => vec![Acc(t, 0)],
        AccKind::Unit(e) => vec![Exp(e)],
        AccKind::Reshape { shape, array } => vec![Exp(shape), Acc(array, 0)],
        AccKind::Generate { shape, f } => vec![Exp(shape), Fun(f)],
        AccKind::Map { f, array } => vec![Fun(f), Acc(array, 0)],
        AccKind::ZipWith { f, a, b } => vec![Fun(f), Acc(a, 0), Acc(b, 0)],
        AccKind::Backpermute { shape, f, array } => vec![Exp(shape), Fun(f), Acc(array, 0)],
        AccKind::Replicate { slix, array, .. } | AccKind::Slice { slix, array, .. } => {
            vec![Exp(slix), Acc(array, 0)]
        }
        AccKind::Fold { f, seed, array }
        | AccKind::FoldKeep { f, seed, array }
        | AccKind::Scan { f, seed, array, .. } => {
            let mut v = vec![Fun(f)];
            v.extend(seed.iter_mut().map(Exp));
            v.push(Acc(array, 0));
            v
        }
        AccKind::FoldSeg { f, seed, array, offsets } => {
            let mut v = vec![Fun(f)];
            v.extend(seed.iter_mut().map(Exp));
            v.extend([Acc(array, 0), Acc(offsets, 0)]);
            v
        }
        AccKind::Stencil { f, args } => {
            let mut v = vec![Fun(f)];
            for arg in args {
                match &mut arg.boundary {
                    Boundary::Constant(c) => v.push(Exp(c)),
                    Boundary::Function(g) => v.push(Fun(g)),
                    Boundary::Clamp | Boundary::Mirror | Boundary::Wrap => {}
                }
                v.push(Acc(&mut arg.array, 0));
            }
            v
        }
        AccKind::Permute { combine, defaults, index, source } => {
            vec![Fun(combine), Acc(defaults, 0), Fun(index), Acc(source, 0)]
        }
        AccKind::Acond { cond, then_, else_ } => vec![Exp(cond), Acc(then_, 0), Acc(else_, 0)],
        AccKind::Awhile { pred, body, init } => {
            vec![Acc(&mut pred.body, 1), Acc(&mut body.body, 1), Acc(init, 0)]
        }
        AccKind::Foreign { fallback, arg, .. } => {
            let mut v = vec![Acc(arg, 0)];
            v.extend(fallback.iter_mut().map(|f| Acc(&mut f.body, 1)));
            v
        }
        AccKind::Delayed(DelayedArray { shape, index, linear }) => vec![Exp(shape), Fun(index), Fun(linear)],
    }
}

/// Calls `f` on every array variable a scalar term reads (the `array`
/// field of `Index`, `LinearIndex` and `Shape`).
pub fn exp_arrays_mut(e: &mut OpenExp, f: &mut impl FnMut(&mut usize)) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        match &mut e.kind {
            ExpKind::Index { array, .. } | ExpKind::LinearIndex { array, .. } | ExpKind::Shape { array } => {
                f(array)
            }
            _ => {}
        }
        super::debruijn::for_each_child(e, |c| exp_arrays_mut(c, f));
    })
}

/// Adds `by` to every array variable a scalar term reads (all of which are
/// free: scalar terms bind no arrays).
pub fn exp_arrays_shift(e: &mut OpenExp, by: usize) {
    exp_arrays_mut(e, &mut |a| *a += by);
}

/// Adds `by` to every array variable of `a` with index `>= cutoff`.
pub fn shift_acc(a: &mut OpenAcc, cutoff: usize, by: isize) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        if let AccKind::Var(k) = &mut a.kind {
            bump(k, cutoff, by);
        }
        for p in parts_mut(a) {
            match p {
                Part::Exp(e) => shift_exp(e, cutoff, by),
                Part::Fun(f) => shift_exp(&mut f.body, cutoff, by),
                Part::Acc(x, binders) => shift_acc(x, cutoff + binders, by),
            }
        }
    })
}

/// Adds `by` to every array variable a scalar term reads with index
/// `>= cutoff`.
pub(crate) fn shift_exp(e: &mut OpenExp, cutoff: usize, by: isize) {
    exp_arrays_mut(e, &mut |k| bump(k, cutoff, by))
}

fn bump(k: &mut usize, cutoff: usize, by: isize) {
    if *k >= cutoff {
        *k = (*k as isize + by) as usize;
    }
}

/// How an array variable is used in a term (Note [Counting uses]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Uses {
    /// Uses as an array (`AccKind::Var`), counting only the branch of an
    /// `acond` that uses it more.
    pub arrays: usize,
    /// Reads of single elements by scalar code (`Index`, `LinearIndex`).
    pub reads: usize,
    /// Of `reads`, those by the function of a `generate` or `backpermute`
    /// at the function's own index, outside any loop: each element of the
    /// producer read at most once.
    pub own_reads: usize,
    /// Reads of its shape only (`Shape`).
    pub shapes: usize,
    /// Is one of the uses inside an `awhile` function (run once per
    /// iteration)?
    pub in_loop: bool,
}

// Note [Counting uses]
// Fusion inlines a producer into its use when that does not repeat work
// (ICFP'13 §4.4): it asks how often the producer's variable is used. Uses
// that read only the shape do not count: a delayed array's shape is an
// expression that can be computed without its elements. Of the two
// branches of an `acond` only one runs, so they count as their maximum.
// A use inside an `awhile` function runs once per iteration, and a read by
// scalar code once per element of the operation that reads it, so either
// counts as repeated work unless the producer is cheap (fusion's cost
// rule). Except a read by a `generate`'s (or `backpermute`'s) function at
// exactly the function's index, outside any scalar loop: an element of
// the operation reads that element of the producer only, once, which is
// a use as an array is (a lifted `map` whose function reads the context
// is such a generate: Note [Lifted forms]). A `permute`'s index function
// runs once per element of its source, so a read there at its own index
// is one too: the targets of `filter`, `compact` and a radix sort's
// split, a `generate` read only there, are computed where the permute
// reads them instead of written and read back.

/// A read's index in a function whose parameter, an index of `rank`
/// components, is `binders` variables up: the parameter itself, or all
/// its components in order.
fn own_index(index: &OpenExp, binders: usize, rank: usize) -> bool {
    let param = |x: &OpenExp| matches!(x.kind, ExpKind::Var(k) if k == binders);
    match &index.kind {
        ExpKind::Var(_) => param(index),
        ExpKind::Tuple(xs) => {
            xs.len() == rank
                && xs
                    .iter()
                    .enumerate()
                    .all(|(c, x)| matches!(&x.kind, ExpKind::Prj(i, t) if *i == c && param(t)))
        }
        _ => false,
    }
}

/// For a scalar term inside the function of a `generate` or
/// `backpermute`: how many variables up its parameter is, and its rank
/// (`None` elsewhere, and inside a loop).
type Own = Option<(usize, usize)>;

fn under_let(own: Own) -> Own {
    own.map(|(b, r)| (b + 1, r))
}

/// The `Own` of an operation's function of one index: the function of a
/// `generate` or a `backpermute`, and a `permute`'s index function, which
/// runs once per element of its source (its combining function, of two
/// elements, has none: `own_in`).
fn own_of(a: &OpenAcc) -> Own {
    match &a.kind {
        AccKind::Generate { f, .. } | AccKind::Backpermute { f, .. } | AccKind::Permute { index: f, .. } => {
            f.params.first().and_then(|t| t.shape_rank()).map(|r| (0, r))
        }
        _ => None,
    }
}

/// The `Own` of function `f` of an operation whose `Own` is `own`.
fn own_in(own: Own, f: &Fun) -> Own {
    own.filter(|_| f.params.len() == 1)
}

/// The uses of array variable `var` in `a`.
pub(crate) fn uses(a: &mut OpenAcc, var: usize) -> Uses {
    let mut u = Uses::default();
    count(a, var, false, &mut u);
    u
}

fn count(a: &mut OpenAcc, var: usize, in_loop: bool, u: &mut Uses) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        if let AccKind::Var(k) = a.kind {
            if k == var {
                u.arrays += 1;
                u.in_loop |= in_loop;
            }
            return;
        }
        if let AccKind::Acond { cond, then_, else_ } = &mut a.kind {
            count_exp(cond, var, in_loop, None, u);
            let (mut t, mut e) = (Uses::default(), Uses::default());
            count(then_, var, in_loop, &mut t);
            count(else_, var, in_loop, &mut e);
            u.arrays += t.arrays.max(e.arrays);
            u.reads += t.reads.max(e.reads);
            u.own_reads += t.own_reads.min(e.own_reads);
            u.shapes += t.shapes.max(e.shapes);
            u.in_loop |= t.in_loop | e.in_loop;
            return;
        }
        let looping = matches!(a.kind, AccKind::Awhile { .. });
        let own = own_of(a);
        for p in parts_mut(a) {
            match p {
                Part::Exp(e) => count_exp(e, var, in_loop, None, u),
                Part::Fun(f) => {
                    let own = own_in(own, f);
                    count_exp(&mut f.body, var, in_loop, own, u)
                }
                Part::Acc(x, binders) => count(x, var + binders, in_loop || (looping && binders > 0), u),
            }
        }
    })
}

fn count_exp(e: &mut OpenExp, var: usize, in_loop: bool, own: Own, u: &mut Uses) {
    fn go(e: &OpenExp, var: usize, in_loop: bool, own: Own, u: &mut Uses) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            match &e.kind {
                ExpKind::Index { array, index } | ExpKind::LinearIndex { array, index } if *array == var => {
                    u.reads += 1;
                    u.in_loop |= in_loop;
                    if let (ExpKind::Index { .. }, Some((b, r))) = (&e.kind, own) {
                        u.own_reads += usize::from(own_index(index, b, r));
                    }
                }
                ExpKind::Shape { array } if *array == var => u.shapes += 1,
                _ => {}
            }
            each_scoped_child(e, own, |c, own| go(c, var, in_loop, own, u));
        })
    }
    go(e, var, in_loop, own, u)
}

/// Each child of `e` with its `Own`: one more binder under a `let`, none
/// inside a loop.
fn each_scoped_child<'a>(e: &'a OpenExp, own: Own, mut f: impl FnMut(&'a OpenExp, Own)) {
    match &e.kind {
        ExpKind::Let(b, body) => {
            f(b, own);
            f(body, under_let(own));
        }
        ExpKind::While { .. } => each_child(e, |c| f(c, None)),
        _ => each_child(e, |c| f(c, own)),
    }
}

/// The uses of every let-bound array variable of a program body under
/// `params` parameters, in one pass, keyed by the address of the let's
/// bound term (Note [Array levels in fusion] in `trafo::fusion`): the
/// counts `uses` gives each, without a traversal of each let's body.
pub(crate) fn count_lets(body: &mut OpenAcc, params: usize) -> HashMap<*const OpenAcc, Uses> {
    let mut c =
        LetCounter { counts: HashMap::new(), branches: Vec::new(), scope: vec![None; params], loops: 0 };
    c.acc(body);
    c.counts
}

struct LetCounter {
    counts: HashMap<*const OpenAcc, Uses>,
    /// The uses counted in the `acond` branches being visited, innermost
    /// last: merged into the enclosing counts, each as the larger of the
    /// two branches', when both are done.
    branches: Vec<HashMap<*const OpenAcc, Uses>>,
    /// For each variable in scope (innermost last): its let's key and the
    /// `awhile` functions around the let, or `None` for a parameter.
    scope: Vec<Option<(*const OpenAcc, usize)>>,
    /// The `awhile` functions around the term being counted.
    loops: usize,
}

impl LetCounter {
    fn record(&mut self, var: usize, add: impl FnOnce(&mut Uses, bool)) {
        let Some(Some((key, loops))) = self.scope.len().checked_sub(var + 1).map(|i| self.scope[i]) else {
            return;
        };
        let in_loop = self.loops > loops;
        let counts = self.branches.last_mut().unwrap_or(&mut self.counts);
        add(counts.entry(key).or_default(), in_loop);
    }

    fn acc(&mut self, a: &mut OpenAcc) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &mut a.kind {
            AccKind::Var(k) => self.record(*k, |u, in_loop| {
                u.arrays += 1;
                u.in_loop |= in_loop;
            }),
            AccKind::Let(b, body) => {
                self.acc(b);
                let key: *const OpenAcc = &**b;
                self.counts.entry(key).or_default();
                self.scope.push(Some((key, self.loops)));
                self.acc(body);
                self.scope.pop();
            }
            AccKind::Acond { cond, then_, else_ } => {
                self.exp(cond, None);
                self.branches.push(HashMap::new());
                self.acc(then_);
                let t = self.branches.pop().unwrap_or_default();
                self.branches.push(HashMap::new());
                self.acc(else_);
                let e = self.branches.pop().unwrap_or_default();
                let counts = self.branches.last_mut().unwrap_or(&mut self.counts);
                for key in t.keys().chain(e.keys().filter(|k| !t.contains_key(*k))) {
                    let (x, y) =
                        (t.get(key).copied().unwrap_or_default(), e.get(key).copied().unwrap_or_default());
                    let u = counts.entry(*key).or_default();
                    u.arrays += x.arrays.max(y.arrays);
                    u.reads += x.reads.max(y.reads);
                    u.own_reads += x.own_reads.min(y.own_reads);
                    u.shapes += x.shapes.max(y.shapes);
                    u.in_loop |= x.in_loop | y.in_loop;
                }
            }
            AccKind::Awhile { pred, body, init } => {
                self.acc(init);
                self.loops += 1;
                for f in [pred, body] {
                    self.scope.push(None);
                    self.acc(&mut f.body);
                    self.scope.pop();
                }
                self.loops -= 1;
            }
            AccKind::Foreign { fallback, arg, .. } => {
                self.acc(arg);
                if let Some(fallback) = fallback {
                    self.scope.push(None);
                    self.acc(&mut fallback.body);
                    self.scope.pop();
                }
            }
            _ => {
                let own = own_of(a);
                for p in parts_mut(a) {
                    match p {
                        Part::Exp(e) => self.exp(e, None),
                        Part::Fun(f) => self.exp(&f.body, own_in(own, f)),
                        Part::Acc(x, _) => self.acc(x),
                    }
                }
            }
        })
    }

    fn exp(&mut self, e: &OpenExp, own: Own) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            match &e.kind {
                ExpKind::Index { array, index } | ExpKind::LinearIndex { array, index } => {
                    let at_own = matches!(e.kind, ExpKind::Index { .. })
                        && own.is_some_and(|(b, r)| own_index(index, b, r));
                    self.record(*array, |u, in_loop| {
                        u.reads += 1;
                        u.own_reads += usize::from(at_own);
                        u.in_loop |= in_loop;
                    })
                }
                ExpKind::Shape { array } => self.record(*array, |u, _| u.shapes += 1),
                _ => {}
            }
            each_scoped_child(e, own, |c, own| self.exp(c, own));
        })
    }
}

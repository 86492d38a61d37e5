//! Common-subexpression elimination on scalar code (issue "The optimiser",
//! part 1), a step of every simplifier round (`trafo::simplify`).
//!
//! Sharing recovery (ICFP'13 §3) binds once what the Rust program shares;
//! this pass finds what it repeats: a Rust helper called twice builds two
//! copies of one term, and fusion's function composition repeats shape
//! expressions (`intersect(shape a, shape b)` in a consumer's extent and in
//! each index function's checks). Accelerate's simplifier does the same
//! (ICFP'13 §4 mentions that it eliminates common subexpressions;
//! `Data/Array/Accelerate/Trafo/Simplify.hs` does it through lets). Two
//! rewrites, within one scalar expression or function body:
//!
//! - *Through lets*: in `let x = e in body`, every subterm of `body` equal to
//!   `e` becomes `x`.
//! - *Binding duplicates*: a term that occurs twice or more is bound by a
//!   new let at the lowest node that contains every occurrence, if one
//!   occurrence is evaluated there whatever happens (Note [Where a
//!   duplicate is bound]); then the first rewrite replaces the occurrences,
//!   the others too (under a branch or in a loop they reuse the value).
//!
//! Equality is structural (Note [Value numbers]): de Bruijn variables make
//! alpha-equivalent terms equal, float constants compare by their bits
//! (`0.0` and `-0.0` differ, a NaN equals itself), and source locations are
//! ignored except on an operation that can raise an error (a division, an
//! array read, a bounds check): an error names the user's line, so two
//! divisions written on two lines stay two terms.
//!
//! Keeps: the meaning, errors included. A replaced occurrence reads a
//! variable whose bound term is the same computation on the same values;
//! if that term fails, the error is deferred to the variable's uses (Note
//! [Deferred errors] in `backend/interp/scalar.rs`), which raise it where
//! the first occurrence would have, with the same location. Terms that
//! contain a `while` (the only terms that can loop) are never bound or
//! replaced, only their parts, and a new let is placed only where its term
//! was computed anyway (Note [Where a duplicate is bound]), so no path
//! does more work than before. Keeps the verifier's invariants: a bound
//! term's variables are all bound above the new let.
//!
//! Cost: three traversals (number, place, rewrite), each linear but for
//! the hash maps of occurrences merged smaller into larger (O(n log n));
//! no term is shifted, the rewrite renumbers variables as it goes. The
//! simplifier runs it only at its fixed points (Note [When CSE runs] in
//! `trafo/simplify.rs`). On a chain of 10 000 lets with a repeat in each
//! link (160 000 nodes) it adds about 65 ms to the simplifier's 270 ms.

use super::simplify::raises;
use accelerate_base::array::ScalarVal;
use accelerate_base::error::SrcLoc;
use accelerate_ir::{ExpKind, OpenExp, PrimFun};
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A hash map with a fast, non-cryptographic hash (the keys are the
/// compiler's own numbers, not an attacker's): hashing is most of the
/// pass's time.
type FastMap<K, V> = HashMap<K, V, BuildHasherDefault<FastHasher>>;

/// The multiply-rotate hash of rustc's `FxHasher`.
#[derive(Default, Clone, Copy)]
struct FastHasher(u64);

impl FastHasher {
    fn add(&mut self, x: u64) {
        self.0 = (self.0.rotate_left(5) ^ x).wrapping_mul(0x51_7c_c1_b7_27_22_0a_95);
    }
}

impl Hasher for FastHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
    }
    fn write_u8(&mut self, x: u8) {
        self.add(x as u64)
    }
    fn write_u32(&mut self, x: u32) {
        self.add(x as u64)
    }
    fn write_u64(&mut self, x: u64) {
        self.add(x)
    }
    fn write_usize(&mut self, x: usize) {
        self.add(x as u64)
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

// Note [Value numbers]
// Every node gets a number such that two nodes with the same number are
// the same computation on the same values (hash-consing: the number of a
// node is that of its operation and its children's numbers, in a hash
// map, so numbering is linear). What a variable stands for decides its
// number: a function's or loop's parameter is numbered by its binder (a
// serial number given as the traversal enters it), so that the same term
// under more binders keeps its number while `a * a` under two loops that
// each bind `a` gets two; a let-bound variable has the number of its bound
// term, and a let that of its body (a let does not change a value, and an
// error of its bound term is raised only through the variable, Note
// [Deferred errors]). So `let x = shape(a) in (x.1, x.0)`, which fusion
// writes once per index function, has one number wherever it is. A term
// containing a `while` (which can loop) gets a fresh number, equal to no
// other, and is never a candidate.

// Note [Where a duplicate is bound]
// A duplicated term is bound at the lowest node N containing all its
// occurrences (found bottom-up: occurrence counts in hash maps merged
// smaller into larger, as in sharing recovery's float phase), and only if
// (1) the variables it reads are all bound above N, and (2) one occurrence
// is evaluated whenever N is: reached from N through arguments that are
// always evaluated (a primitive's arguments but the second of a
// short-circuit `&&`/`||`, tuple components, a condition, a let's bound
// term and body, a while's initial value), not through a `cond` branch,
// the second argument of `&&`/`||` or a while function. Then the new let
// adds no work on any path where N completes: the term was computed there
// anyway. An occurrence under a branch is bound only if another is
// computed unconditionally, and then it reuses that value. A term that
// fails is safe to bind anywhere (its error is deferred), one that loops
// would not be (the loop would run where the error that stopped the
// program was not yet raised): terms with a `while` are never bound.

/// Runs both rewrites once on the body of a function of `params`
/// parameters (0 for a closed expression); whether anything changed.
pub(crate) fn cse_body(e: &mut OpenExp, params: usize) -> bool {
    let mut numbering = Numbering::default();
    for level in 0..params {
        numbering.enter_param(level);
    }
    numbering.number(e);
    let Numbering { nodes, ids, .. } = numbering;
    let any_repeat = ids.iter().any(|i| i.count >= 2);
    let any_let = nodes.iter().any(|n| n.let_bound_candidate);
    if !any_repeat && !any_let {
        return false;
    }
    let mut placement = Placement { nodes: &nodes, ids: &ids, pos: 0, stamp: 1, binds: Vec::new() };
    if any_repeat {
        placement.place(e);
    }
    let mut binds: FastMap<usize, Vec<(u32, OpenExp, usize)>> = FastMap::default();
    let mut found = placement.binds;
    // a term's parts are numbered before it: bind parts first (outermost)
    found.sort_unstable();
    for (at, id) in found {
        let (rep, depth) = ids[id as usize].rep.expect("a candidate has a representative");
        binds.entry(at).or_default().push((id, rep.clone(), depth));
    }
    let mut rw = Rewrite {
        nodes: &nodes,
        pos: 0,
        old_to_new: (0..params).collect(),
        new_depth: params,
        avail: FastMap::default(),
        shadowed: Vec::new(),
        binds,
        changed: false,
    };
    rw.rewrite(e);
    rw.changed
}

/// What the numbering knows of one node, by pre-order position.
#[derive(Clone, Copy)]
struct Node {
    id: u32,
    /// The position just past this node's subterm.
    end: usize,
    /// How many binders are in scope at the node.
    depth: usize,
    /// Worth binding or replacing: not a variable, constant, shape read or
    /// projection of one (nothing to save), nor a let (its body is the
    /// candidate), and no `while` inside (Note [Value numbers]).
    candidate: bool,
    /// A let whose bound term is a candidate.
    let_bound_candidate: bool,
}

/// What the numbering knows of one value number.
#[derive(Clone, Copy, Default)]
struct IdInfo<'a> {
    /// Occurrences as a candidate.
    count: u32,
    /// The innermost parameter (its level: 0 is the outermost binder) the
    /// value depends on.
    dep: Option<usize>,
    /// The first occurrence and the binders in scope there.
    rep: Option<(&'a OpenExp, usize)>,
}

#[derive(Clone, Copy, PartialEq, Eq, Hash)]
enum Op {
    Tuple,
    Prj(usize),
    Prim(PrimFun),
    Cond,
    Index(usize),
    LinearIndex(usize),
}

#[derive(PartialEq, Eq, Hash)]
enum Key {
    /// A parameter, by the serial number of its binder.
    Param(u32),
    Const(u8, u64),
    Shape(usize),
    /// The location only where the operation itself can raise an error.
    Node(Op, Children, Option<SrcLoc>),
}

/// Children's numbers, without an allocation for the usual few.
#[derive(PartialEq, Eq, Hash)]
enum Children {
    Few(u8, [u32; 3]),
    Many(Box<[u32]>),
}

impl Children {
    fn of(parts: &[Summary]) -> Children {
        if parts.len() <= 3 {
            let mut ids = [0; 3];
            for (i, s) in parts.iter().enumerate() {
                ids[i] = s.id;
            }
            Children::Few(parts.len() as u8, ids)
        } else {
            Children::Many(parts.iter().map(|s| s.id).collect())
        }
    }
}

/// A float constant by its bits, so that `0.0 != -0.0` and a NaN equals
/// itself.
fn const_key(c: ScalarVal) -> Key {
    let (tag, bits) = const_bits(c);
    Key::Const(tag, bits)
}

/// A constant as its type's tag and its bits.
pub(crate) fn const_bits(c: ScalarVal) -> (u8, u64) {
    match c {
        ScalarVal::Bool(x) => (0, x as u64),
        ScalarVal::I8(x) => (1, x as u8 as u64),
        ScalarVal::I16(x) => (2, x as u16 as u64),
        ScalarVal::I32(x) => (3, x as u32 as u64),
        ScalarVal::I64(x) => (4, x as u64),
        ScalarVal::U8(x) => (5, x as u64),
        ScalarVal::U16(x) => (6, x as u64),
        ScalarVal::U32(x) => (7, x as u64),
        ScalarVal::U64(x) => (8, x),
        ScalarVal::F16(x) => (9, x as u64),
        ScalarVal::F32(x) => (10, x.to_bits() as u64),
        ScalarVal::F64(x) => (11, x.to_bits()),
    }
}

/// A node's number and what its parent needs to know.
#[derive(Clone, Copy)]
struct Summary {
    id: u32,
    /// No `while` inside.
    loop_free: bool,
    dep: Option<usize>,
    trivial: bool,
}

/// A variable in scope: the number of its value and what that depends on.
#[derive(Clone, Copy)]
struct Bound {
    id: u32,
    dep: Option<usize>,
}

#[derive(Default)]
struct Numbering<'a> {
    keys: FastMap<Key, u32>,
    ids: Vec<IdInfo<'a>>,
    nodes: Vec<Node>,
    /// The variables in scope, outermost first.
    scope: Vec<Bound>,
    serials: u32,
}

impl<'a> Numbering<'a> {
    fn enter_param(&mut self, level: usize) {
        let id = self.intern(Key::Param(self.serials));
        self.serials += 1;
        self.scope.push(Bound { id, dep: Some(level) });
    }

    fn intern(&mut self, key: Key) -> u32 {
        let next = self.ids.len() as u32;
        let id = *self.keys.entry(key).or_insert(next);
        if id == next {
            self.ids.push(IdInfo::default());
        }
        id
    }

    fn fresh(&mut self) -> u32 {
        self.ids.push(IdInfo::default());
        self.ids.len() as u32 - 1
    }

    fn leaf(&mut self, key: Key) -> Summary {
        Summary { id: self.intern(key), loop_free: true, dep: None, trivial: true }
    }

    fn looping(&mut self) -> Summary {
        Summary { id: self.fresh(), loop_free: false, dep: None, trivial: false }
    }

    /// The number of an operation on children already numbered.
    fn op(&mut self, op: Op, parts: &[Summary], loc: Option<SrcLoc>, trivial: bool) -> Summary {
        let loop_free = parts.iter().all(|s| s.loop_free);
        let dep = parts.iter().map(|s| s.dep).max().flatten();
        let id = if loop_free { self.intern(Key::Node(op, Children::of(parts), loc)) } else { self.fresh() };
        Summary { id, loop_free, dep, trivial }
    }

    fn number(&mut self, e: &'a OpenExp) -> Summary {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            let pos = self.nodes.len();
            let depth = self.scope.len();
            self.nodes.push(Node { id: 0, end: 0, depth, candidate: false, let_bound_candidate: false });
            let mut let_bound_candidate = false;
            let mut is_let = false;
            let s = match &e.kind {
                ExpKind::Var(k) if *k < depth => {
                    let b = self.scope[depth - 1 - k];
                    Summary { id: b.id, loop_free: true, dep: b.dep, trivial: true }
                }
                // unbound: the verifier reports it; equal to nothing here
                ExpKind::Var(_) => self.looping(),
                ExpKind::Const(c) => self.leaf(const_key(*c)),
                ExpKind::Shape { array } => self.leaf(Key::Shape(*array)),
                ExpKind::ALet(..) => {
                    unreachable!("array terms nested in scalar code are lifted before this pass")
                }
                ExpKind::Let(b, body) => {
                    is_let = true;
                    let sb = self.number(b);
                    let_bound_candidate = self.nodes[pos + 1].candidate;
                    self.scope.push(Bound { id: sb.id, dep: sb.dep });
                    let sbody = self.number(body);
                    self.scope.pop();
                    let loop_free = sb.loop_free && sbody.loop_free;
                    let id = if loop_free { sbody.id } else { self.fresh() };
                    let trivial = sb.trivial && sbody.trivial;
                    Summary { id, loop_free, dep: sb.dep.max(sbody.dep), trivial }
                }
                ExpKind::While { cond, body, init } => {
                    self.number(init);
                    for f in [cond, body] {
                        self.enter_param(depth);
                        self.number(&f.body);
                        self.scope.pop();
                    }
                    self.looping()
                }
                ExpKind::Tuple(es) => {
                    let parts: Vec<Summary> = es.iter().map(|x| self.number(x)).collect();
                    self.op(Op::Tuple, &parts, None, false)
                }
                ExpKind::Prim(op, es) => {
                    let parts: Vec<Summary> = es.iter().map(|x| self.number(x)).collect();
                    self.op(Op::Prim(*op), &parts, raises(*op).then_some(e.loc), false)
                }
                // a projection of a variable costs nothing to repeat
                ExpKind::Prj(i, t) => {
                    let s = self.number(t);
                    self.op(Op::Prj(*i), &[s], None, s.trivial)
                }
                ExpKind::Cond(c, t, x) => {
                    let parts = [self.number(c), self.number(t), self.number(x)];
                    self.op(Op::Cond, &parts, None, false)
                }
                ExpKind::Index { array, index } => {
                    let s = self.number(index);
                    self.op(Op::Index(*array), &[s], Some(e.loc), false)
                }
                ExpKind::LinearIndex { array, index } => {
                    let s = self.number(index);
                    self.op(Op::LinearIndex(*array), &[s], Some(e.loc), false)
                }
            };
            let candidate = s.loop_free && !s.trivial && !is_let;
            if candidate {
                let info = &mut self.ids[s.id as usize];
                info.count += 1;
                info.dep = s.dep;
                if info.rep.is_none() {
                    info.rep = Some((e, depth));
                }
            }
            let end = self.nodes.len();
            self.nodes[pos] = Node { id: s.id, end, depth, candidate, let_bound_candidate };
            s
        })
    }
}

/// The occurrences of repeated candidates in a subterm, with whether one
/// of them is evaluated whenever the subterm is (Note [Where a duplicate
/// is bound]). `sure` is valid when at least `valid_from`: making a whole
/// map conditional is one increment of a stamp, not a walk over it.
struct Occurrences {
    map: FastMap<u32, Occurrence>,
    valid_from: u32,
}

#[derive(Clone, Copy)]
struct Occurrence {
    count: u32,
    sure: u32,
}

struct Placement<'n, 'a> {
    nodes: &'n [Node],
    ids: &'n [IdInfo<'a>],
    pos: usize,
    stamp: u32,
    /// (position of the node to bind at, value number)
    binds: Vec<(usize, u32)>,
}

impl Placement<'_, '_> {
    fn place(&mut self, e: &OpenExp) -> Occurrences {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            let at = self.pos;
            self.pos += 1;
            let mut acc = Occurrences { map: FastMap::default(), valid_from: 1 };
            match &e.kind {
                ExpKind::Var(_) | ExpKind::Const(_) | ExpKind::Shape { .. } => {}
                ExpKind::Let(b, body) => {
                    self.child(&mut acc, b, true, at);
                    self.child(&mut acc, body, true, at);
                }
                ExpKind::While { cond, body, init } => {
                    self.child(&mut acc, init, true, at);
                    self.child(&mut acc, &cond.body, false, at);
                    self.child(&mut acc, &body.body, false, at);
                }
                ExpKind::Prim(PrimFun::LAnd | PrimFun::LOr, es) => {
                    for (i, x) in es.iter().enumerate() {
                        self.child(&mut acc, x, i == 0, at);
                    }
                }
                ExpKind::Tuple(es) | ExpKind::Prim(_, es) => {
                    es.iter().for_each(|x| self.child(&mut acc, x, true, at))
                }
                ExpKind::Prj(_, t) => self.child(&mut acc, t, true, at),
                ExpKind::Cond(c, t, x) => {
                    self.child(&mut acc, c, true, at);
                    self.child(&mut acc, t, false, at);
                    self.child(&mut acc, x, false, at);
                }
                ExpKind::Index { index, .. } | ExpKind::LinearIndex { index, .. } => {
                    self.child(&mut acc, index, true, at)
                }
                ExpKind::ALet(..) => {
                    unreachable!("array terms nested in scalar code are lifted before this pass")
                }
            }
            let node = self.nodes[at];
            if node.candidate && self.ids[node.id as usize].count >= 2 {
                self.add(&mut acc, node.id, Occurrence { count: 1, sure: self.stamp }, 1, at);
            }
            acc
        })
    }

    /// Merges a child's occurrences into its parent's (at position `at`),
    /// the smaller map into the larger.
    fn child(&mut self, acc: &mut Occurrences, x: &OpenExp, strict: bool, at: usize) {
        let mut occ = self.place(x);
        if !strict {
            self.stamp += 1;
            occ.valid_from = self.stamp;
        }
        if occ.map.len() > acc.map.len() {
            std::mem::swap(acc, &mut occ);
        }
        for (id, o) in occ.map {
            self.add(acc, id, o, occ.valid_from, at);
        }
    }

    /// Adds occurrences of `id` (sure if `o.sure >= valid_from`); decides
    /// where to bind it when they are all found.
    fn add(&mut self, acc: &mut Occurrences, id: u32, o: Occurrence, valid_from: u32, at: usize) {
        let entry = acc.map.entry(id).or_insert(Occurrence { count: 0, sure: 0 });
        entry.count += o.count;
        if o.sure >= valid_from {
            entry.sure = self.stamp;
        }
        let info = self.ids[id as usize];
        if entry.count == info.count {
            let sure = entry.sure >= acc.valid_from;
            acc.map.remove(&id);
            let depth = self.nodes[at].depth;
            let (rep, rep_depth) = info.rep.expect("a candidate has a representative");
            if sure && info.dep.is_none_or(|l| l < depth) && reads_only_below(rep, rep_depth, depth) {
                self.binds.push((at, id));
            }
        }
    }
}

/// Whether every variable `t` (found under `depth` binders) reads is
/// bound at a level below `limit`: in scope at a node of that depth above
/// it.
fn reads_only_below(t: &OpenExp, depth: usize, limit: usize) -> bool {
    fn go(t: &OpenExp, inner: usize, depth: usize, limit: usize) -> bool {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &t.kind {
            ExpKind::Var(k) => *k < inner || depth + inner - 1 - k < limit,
            ExpKind::Let(b, body) => go(b, inner, depth, limit) && go(body, inner + 1, depth, limit),
            ExpKind::While { cond, body, init } => {
                go(init, inner, depth, limit)
                    && go(&cond.body, inner + 1, depth, limit)
                    && go(&body.body, inner + 1, depth, limit)
            }
            ExpKind::Const(_) | ExpKind::Shape { .. } => true,
            ExpKind::Tuple(es) | ExpKind::Prim(_, es) => es.iter().all(|x| go(x, inner, depth, limit)),
            ExpKind::Prj(_, x) | ExpKind::Index { index: x, .. } | ExpKind::LinearIndex { index: x, .. } => {
                go(x, inner, depth, limit)
            }
            ExpKind::Cond(c, x, y) => {
                go(c, inner, depth, limit) && go(x, inner, depth, limit) && go(y, inner, depth, limit)
            }
            ExpKind::ALet(..) => false,
        })
    }
    go(t, 0, depth, limit)
}

struct Rewrite<'n> {
    nodes: &'n [Node],
    pos: usize,
    /// The new level of each binder of the input in scope, outermost first.
    old_to_new: Vec<usize>,
    /// Binders in scope in the output.
    new_depth: usize,
    /// The output level of the innermost variable bound to each value
    /// number.
    avail: FastMap<u32, usize>,
    /// What `avail` held before each binder in scope shadowed it.
    shadowed: Vec<Option<usize>>,
    /// The terms to bind at each position: a value number and a copy of
    /// an occurrence, with the binders in scope there.
    binds: FastMap<usize, Vec<(u32, OpenExp, usize)>>,
    changed: bool,
}

impl Rewrite<'_> {
    /// Renumbers the variables of a copy of an occurrence (found under
    /// `depth` binders of the input) for the output at the current depth.
    fn relocate(&self, t: &mut OpenExp, depth: usize) {
        fn go(rw: &Rewrite, t: &mut OpenExp, inner: usize, depth: usize) {
            stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &mut t.kind {
                ExpKind::Var(k) if *k >= inner => {
                    let level = depth + inner - 1 - *k;
                    *k = rw.new_depth + inner - 1 - rw.old_to_new[level];
                }
                ExpKind::Let(b, body) => {
                    go(rw, b, inner, depth);
                    go(rw, body, inner + 1, depth);
                }
                ExpKind::While { cond, body, init } => {
                    go(rw, init, inner, depth);
                    go(rw, &mut cond.body, inner + 1, depth);
                    go(rw, &mut body.body, inner + 1, depth);
                }
                _ => super::debruijn::for_each_child(t, |c| go(rw, c, inner, depth)),
            })
        }
        go(self, t, 0, depth)
    }

    fn enter(&mut self, id: Option<u32>) {
        if let Some(id) = id {
            let before = self.avail.insert(id, self.new_depth);
            self.shadowed.push(before);
        }
        self.new_depth += 1;
    }

    fn exit(&mut self, id: Option<u32>) {
        self.new_depth -= 1;
        if let Some(id) = id {
            match self.shadowed.pop().flatten() {
                Some(level) => self.avail.insert(id, level),
                None => self.avail.remove(&id),
            };
        }
    }

    fn rewrite(&mut self, e: &mut OpenExp) {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
            let at = self.pos;
            let node = self.nodes[at];
            if node.candidate {
                if let Some(&level) = self.avail.get(&node.id) {
                    e.kind = ExpKind::Var(self.new_depth - 1 - level);
                    self.pos = node.end;
                    self.changed = true;
                    return;
                }
            }
            self.pos += 1;
            let mut bound = Vec::new();
            let here = if self.binds.is_empty() { None } else { self.binds.remove(&at) };
            for (id, mut t, depth) in here.unwrap_or_default() {
                self.relocate(&mut t, depth);
                self.enter(Some(id));
                bound.push((id, t));
            }
            self.children(e, at);
            for (id, t) in bound.into_iter().rev() {
                self.exit(Some(id));
                let loc = t.loc;
                let body = std::mem::replace(e, OpenExp::new(ExpKind::Var(0), loc));
                *e = OpenExp::new(ExpKind::Let(Box::new(t), Box::new(body)), loc);
                self.changed = true;
            }
        })
    }

    fn children(&mut self, e: &mut OpenExp, at: usize) {
        match &mut e.kind {
            ExpKind::Var(k) => {
                let old_depth = self.old_to_new.len();
                if *k < old_depth {
                    *k = self.new_depth - 1 - self.old_to_new[old_depth - 1 - *k];
                }
            }
            ExpKind::Const(_) | ExpKind::Shape { .. } => {}
            ExpKind::Let(b, body) => {
                let bound = self.nodes[at + 1];
                self.rewrite(b);
                let id = bound.candidate.then_some(bound.id);
                self.old_to_new.push(self.new_depth);
                self.enter(id);
                self.rewrite(body);
                self.exit(id);
                self.old_to_new.pop();
            }
            ExpKind::While { cond, body, init } => {
                self.rewrite(init);
                for f in [cond, body] {
                    self.old_to_new.push(self.new_depth);
                    self.enter(None);
                    self.rewrite(&mut f.body);
                    self.exit(None);
                    self.old_to_new.pop();
                }
            }
            ExpKind::Tuple(es) | ExpKind::Prim(_, es) => es.iter_mut().for_each(|x| self.rewrite(x)),
            ExpKind::Prj(_, t) => self.rewrite(t),
            ExpKind::Cond(c, t, x) => {
                self.rewrite(c);
                self.rewrite(t);
                self.rewrite(x);
            }
            ExpKind::Index { index, .. } | ExpKind::LinearIndex { index, .. } => self.rewrite(index),
            ExpKind::ALet(..) => {
                unreachable!("array terms nested in scalar code are lifted before this pass")
            }
        }
    }
}

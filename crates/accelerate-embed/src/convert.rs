//! Conversion of the program graph to the IR: sharing recovery at both
//! levels (`trafo::sharing`) and binder introduction with de Bruijn indices
//! (ICFP'13 §3.4).
//!
//! The array level is converted first. Its "children" of an array node are
//! its array arguments and every array its scalar code reads (`index`,
//! `shape`, `the`): in the IR, scalar code reads arrays only through array
//! variables, so those arrays are *forced* to be let-bound, above the node
//! that reads them. Each scalar expression is then converted on its own,
//! with its own sharing recovery, in the array environment of its node.
//!
//! An array node whose scalar code depends on the argument of a scalar
//! function it does not itself contain was built inside that function:
//! nested data parallelism (Note [Nested array terms] in `ir::term`). It
//! is converted where it is read, inside that function, as an
//! `ExpKind::ALet` whose array term sees the function's scalar variables
//! (Note [Converting nested arrays]); the lifting transformation flattens
//! it afterwards. The arrays such a term uses that do not depend on the
//! function are bound outside it, at the array level, as the arrays read
//! by scalar code are.
//!
//! Note [Converting nested arrays]
//! Which parameters each node depends on (`FreeParams`) decides where it
//! goes: a node goes to the outermost scope in which all of them are
//! bound. The array level of the program has no scalar variables, so it
//! holds every node that depends on none (hoisted out of any function that
//! mentions it, as Accelerate's front end hoists them: vectorisation
//! avoidance for free). A read, in scalar code, of an array that depends on
//! a parameter in scope there makes that array a node of the scalar
//! level, forced to be bound (by an `ALet`) at its lowest common dominator
//! among the reads, so that two reads of one nested array compute it
//! once; its array term is converted by a converter of its own (a nested
//! array level, whose scope is the scalar variables in scope at the
//! binding), and every array it uses that depends on no parameter of that
//! scope is let-bound above the array node whose function holds it.

use super::sharing::{recover, Level, SharingPlan};
use crate::lang::graph::{self, BoundaryNode, Lam, Node, NodeId, NodeKind, NodeRef};
use accelerate_base::array::ArraysTy;
use accelerate_base::error::{Error, Result, SrcLoc};
use accelerate_ir::*;
use std::collections::{HashMap, HashSet};
use std::rc::Rc;

/// A node of the snapshot being converted.
fn snapshot_node(n: NodeId) -> Result<Node> {
    graph::node(n).ok_or_else(|| outside_snapshot(n))
}

fn outside_snapshot(n: NodeId) -> Error {
    Error::Internal(format!("node {n} is not in the snapshot being converted"))
}

/// Which sharing to recover (all of it, unless an ablation turns it off).
#[derive(Clone, Copy, Debug)]
pub struct SharingOptions {
    pub arrays: bool,
    pub scalars: bool,
}

/// Converts the graph of a program with array parameters `params` and
/// result `root` to the IR.
pub fn convert_program(
    params: &[(NodeRef, ArraysTy)],
    root: &NodeRef,
    opts: SharingOptions,
) -> Result<Program> {
    let roots: Vec<&NodeRef> = params.iter().map(|(p, _)| p).chain([root]).collect();
    let (_snapshot, mut ids) = graph::snapshot(&roots);
    let root = ids.pop().ok_or_else(|| Error::Internal("a snapshot without its root".into()))?;
    let fp = FreeParams::compute(root)?;
    let top = Scope::default();
    let mut env = Scope::default();
    for id in ids {
        env.local.push(id);
    }
    let level = AccLevel::build(root, opts.arrays, &top, &env, &fp)?;
    let plan = recover(&level, root);
    let mut cx = AccConverter { level, plan, env, senv: &top, opts, current: root, fp: &fp };
    let body = cx.acc(root)?;
    Ok(Program { params: params.iter().map(|(_, t)| t.clone()).collect(), body })
}

// ---------------------------------------------------------------------------
// Binder introduction, shared by both levels

/// The environment of a level: the node each de Bruijn position stands
/// for, and the positions of each node, so that a variable's index is
/// found in constant time however long the chain of lets it is under (a
/// search from the innermost binder costs the distance, and a chain of n
/// steps each reading the function's parameter made conversion O(n^2)).
#[derive(Default)]
struct Env {
    nodes: Vec<NodeId>,
    at: HashMap<NodeId, Vec<usize>>,
}

impl Env {
    fn push(&mut self, n: NodeId) {
        self.at.entry(n).or_default().push(self.nodes.len());
        self.nodes.push(n);
    }

    fn pop(&mut self) {
        let Some(n) = self.nodes.pop() else { return };
        if let Some(ps) = self.at.get_mut(&n) {
            ps.pop();
            if ps.is_empty() {
                self.at.remove(&n);
            }
        }
    }

    /// The de Bruijn index of the innermost binding of `n`.
    fn index(&self, n: NodeId) -> Option<usize> {
        self.at.get(&n).and_then(|ps| ps.last()).map(|p| self.nodes.len() - 1 - p)
    }
}

/// An environment and the environments it continues: the scalar
/// variables of a function nested in another's scalar code, or the arrays
/// bound in scalar code by `ALet` on top of those of the array level
/// (Note [Converting nested arrays]). De Bruijn indices count through the
/// whole chain.
#[derive(Default)]
struct Scope<'a> {
    base: Option<&'a Scope<'a>>,
    local: Env,
}

impl<'a> Scope<'a> {
    fn child(base: &'a Scope<'a>) -> Scope<'a> {
        Scope { base: Some(base), local: Env::default() }
    }

    fn index(&self, n: NodeId) -> Option<usize> {
        match self.local.index(n) {
            Some(i) => Some(i),
            None => self.base.and_then(|b| b.index(n)).map(|i| i + self.local.nodes.len()),
        }
    }

    fn contains(&self, n: NodeId) -> bool {
        self.index(n).is_some()
    }
}

/// The parameters each node depends on: those its scalar code and the
/// nodes it uses mention, less those its own functions (and loops, and
/// array loops) bind. Computed once for the snapshot, bottom-up and
/// iteratively.
struct FreeParams {
    sets: HashMap<NodeId, Rc<[NodeId]>>,
    /// Those that are parameters of array functions (`awhile`'s).
    aparams: HashSet<NodeId>,
}

impl FreeParams {
    fn compute(root: NodeId) -> Result<FreeParams> {
        let mut sets: HashMap<NodeId, Rc<[NodeId]>> = HashMap::new();
        let mut aparams = HashSet::new();
        let mut stack = vec![(root, false)];
        while let Some((n, ready)) = stack.pop() {
            if sets.contains_key(&n) {
                continue;
            }
            let node = snapshot_node(n)?;
            let (plain, scoped) = free_parts(&node.kind);
            if !ready {
                stack.push((n, true));
                let pending = plain.iter().chain(scoped.iter().map(|(_, b)| b));
                stack.extend(pending.filter(|c| !sets.contains_key(c)).map(|&c| (c, false)));
                continue;
            }
            let set: Rc<[NodeId]> = if matches!(node.kind, NodeKind::Param(_) | NodeKind::AParam(_)) {
                if let NodeKind::AParam(_) = node.kind {
                    aparams.insert(n);
                }
                Rc::from([n])
            } else {
                let mut all: Vec<NodeId> = Vec::new();
                let mut single: Option<&Rc<[NodeId]>> = None;
                let mut nonempty = 0;
                let add = |xs: &Rc<[NodeId]>, bound: &[NodeId], all: &mut Vec<NodeId>| {
                    let before = all.len();
                    all.extend(xs.iter().filter(|p| !bound.contains(p)));
                    all.len() > before
                };
                for c in &plain {
                    if add(&sets[c], &[], &mut all) {
                        nonempty += 1;
                        single = Some(&sets[c]);
                    }
                }
                for (params, b) in &scoped {
                    if add(&sets[b], params, &mut all) {
                        nonempty += 2;
                    }
                }
                match (nonempty, single) {
                    (0, _) => Rc::from([]),
                    (1, Some(s)) => s.clone(),
                    _ => {
                        all.sort_unstable();
                        all.dedup();
                        Rc::from(all)
                    }
                }
            };
            sets.insert(n, set);
        }
        Ok(FreeParams { sets, aparams })
    }

    fn of(&self, n: NodeId) -> &[NodeId] {
        self.sets.get(&n).map_or(&[], |s| s)
    }

    /// Does `n` depend only on scalar parameters bound in `scope`? (The
    /// parameter of an array function is bound at the array level that
    /// holds the function.)
    fn within(&self, n: NodeId, scope: &Scope) -> bool {
        self.of(n).iter().all(|p| self.aparams.contains(p) || scope.contains(*p))
    }

    /// Does `n` depend on a scalar parameter?
    fn on_scalars(&self, n: NodeId) -> bool {
        self.of(n).iter().any(|p| !self.aparams.contains(p))
    }

    /// Are the array parameters `m` depends on bound outside `r` (free in
    /// `r` too)? A node that uses the parameter of an array function
    /// inside `r` cannot leave `r`.
    fn aparams_outside(&self, m: NodeId, r: NodeId) -> bool {
        let outer = self.of(r);
        self.of(m).iter().all(|p| !self.aparams.contains(p) || outer.contains(p))
    }
}

/// A node's uses in the scope of the node itself, and those under binders
/// (a function's or loop's parameters, and its body).
fn free_parts(kind: &NodeKind) -> (Vec<NodeId>, Vec<(Vec<NodeId>, NodeId)>) {
    let (mut plain, mut scoped) = (Vec::new(), Vec::new());
    if let NodeKind::Awhile { pred, body, init } = kind {
        plain.push(*init);
        scoped.push((pred.params.clone(), pred.body));
        scoped.push((body.params.clone(), body.body));
    } else if let NodeKind::Foreign { fallback, arg, .. } = kind {
        plain.push(*arg);
        scoped.push((fallback.params.clone(), fallback.body));
    } else if kind.is_acc() {
        let (mut exps, mut lams) = (Vec::new(), Vec::new());
        kind.acc_parts(&mut plain, &mut exps, &mut lams);
        plain.extend(exps);
        scoped.extend(lams.into_iter().map(|l| (l.params, l.body)));
    } else if let NodeKind::While { cond, body, init } = kind {
        plain.push(*init);
        scoped.push((cond.params.clone(), cond.body));
        scoped.push((body.params.clone(), body.body));
    } else {
        kind.exp_children(&mut plain);
        plain.extend(kind.array_read());
    }
    (plain, scoped)
}

/// A converter of one level: its environment, how it converts a node, and
/// how it builds a let.
trait Binders {
    type Term;
    fn env(&mut self) -> &mut Env;
    /// A node's term with the lets floated to it.
    fn term(&mut self, n: NodeId) -> Result<Self::Term>;
    /// A node's own constructor, its children by reference.
    fn node_term(&mut self, n: NodeId) -> Result<Self::Term>;
    fn make_let(bound: Self::Term, body: Self::Term) -> Self::Term;
}

/// ICFP'13 §3.4: the shared terms floated to `n` become lets around `n`'s
/// term, each in scope of those before it (their order puts every term
/// after the terms it uses).
fn bind_floated<C: Binders>(cx: &mut C, binds: &[NodeId], n: NodeId) -> Result<C::Term> {
    let mut bounds = Vec::with_capacity(binds.len());
    let mut result = Ok(());
    for &b in binds {
        match cx.term(b) {
            Ok(t) => {
                bounds.push(t);
                cx.env().push(b);
            }
            Err(e) => {
                result = Err(e);
                break;
            }
        }
    }
    let body = result.and_then(|_| cx.node_term(n));
    let env = cx.env();
    for _ in 0..bounds.len() {
        env.pop();
    }
    let body = body?;
    Ok(bounds.into_iter().rev().fold(body, |body, b| C::make_let(b, body)))
}

impl Binders for AccConverter<'_> {
    type Term = OpenAcc;
    fn env(&mut self) -> &mut Env {
        &mut self.env.local
    }
    fn term(&mut self, n: NodeId) -> Result<OpenAcc> {
        self.acc(n)
    }
    fn node_term(&mut self, n: NodeId) -> Result<OpenAcc> {
        self.acc_node(n)
    }
    fn make_let(bound: OpenAcc, body: OpenAcc) -> OpenAcc {
        let loc = bound.loc;
        OpenAcc::new(AccKind::Let(Box::new(bound), Box::new(body)), loc)
    }
}

// ---------------------------------------------------------------------------
// The array level

struct AccLevel {
    nodes: HashMap<NodeId, Node>,
    children: HashMap<NodeId, Vec<NodeId>>,
    forced: HashSet<NodeId>,
    sharing: bool,
}

impl Level for AccLevel {
    fn children(&self, n: NodeId) -> &[NodeId] {
        &self.children[&n]
    }
    fn bindable(&self, n: NodeId) -> bool {
        !matches!(self.nodes[&n].kind, NodeKind::AParam(_)) && (self.sharing || self.forced.contains(&n))
    }
    fn forced(&self, n: NodeId) -> bool {
        self.forced.contains(&n)
    }
}

impl AccLevel {
    /// The array level rooted at `root`: the nodes that depend on no
    /// scalar parameter outside `scope` and are not bound in `bound`
    /// (Note [Converting nested arrays]).
    fn build(root: NodeId, sharing: bool, scope: &Scope, bound: &Scope, fp: &FreeParams) -> Result<AccLevel> {
        let mut lv =
            AccLevel { nodes: HashMap::new(), children: HashMap::new(), forced: HashSet::new(), sharing };
        let mut hoisted = HashSet::new();
        let mut todo = vec![root];
        while let Some(n) = todo.pop() {
            if lv.nodes.contains_key(&n) {
                continue;
            }
            let node = snapshot_node(n)?;
            if !node.kind.is_acc() {
                return Err(Error::Internal(format!("scalar node {n} in array position")));
            }
            let (mut arrays, mut exps, mut lams) = (Vec::new(), Vec::new(), Vec::new());
            node.kind.acc_parts(&mut arrays, &mut exps, &mut lams);
            let reads = scalar_reads(&exps, &lams, node.loc, scope)?;
            let mut cs: Vec<NodeId> = arrays.into_iter().filter(|c| !bound.contains(*c)).collect();
            for r in reads {
                if bound.contains(r) {
                    continue;
                }
                if fp.within(r, scope) {
                    lv.forced.insert(r);
                    cs.push(r);
                } else {
                    // nested in `n`'s functions: what it uses from this
                    // scope is bound above `n`
                    for h in nested_uses(r, scope, bound, fp, &mut hoisted)? {
                        lv.forced.insert(h);
                        cs.push(h);
                    }
                }
            }
            todo.extend(cs.iter().copied());
            lv.children.insert(n, cs);
            lv.nodes.insert(n, node);
        }
        Ok(lv)
    }
}

/// The arrays a nested array `r` uses, directly or through the nodes it
/// uses, that depend only on parameters of `scope` and are not bound yet
/// (each once per level: `seen` is the level's).
fn nested_uses(
    r: NodeId,
    scope: &Scope,
    bound: &Scope,
    fp: &FreeParams,
    seen: &mut HashSet<NodeId>,
) -> Result<Vec<NodeId>> {
    let mut out = Vec::new();
    let mut stack = vec![r];
    while let Some(m) = stack.pop() {
        if !seen.insert(m) || bound.contains(m) {
            continue;
        }
        let node = snapshot_node(m)?;
        if node.kind.is_acc() && fp.within(m, scope) && fp.aparams_outside(m, r) {
            out.push(m);
            continue;
        }
        let (plain, scoped) = free_parts(&node.kind);
        stack.extend(plain);
        stack.extend(scoped.into_iter().map(|(_, b)| b));
    }
    Ok(out)
}

/// The arrays read by an array node's scalar code, in order of first
/// appearance, checking that the code mentions no variable bound neither
/// by the node's functions nor in `scope` (an expression smuggled out of
/// its function: `Error::EscapedVariable`).
fn scalar_reads(exps: &[NodeId], lams: &[Lam], loc: SrcLoc, scope: &Scope) -> Result<Vec<NodeId>> {
    let mut bound: HashSet<NodeId> = HashSet::new();
    let mut seen: HashSet<NodeId> = HashSet::new();
    let mut reads = Vec::new();
    let mut params_used = Vec::new();
    let mut stack: Vec<NodeId> = Vec::new();
    for l in lams {
        bound.extend(l.params.iter().copied());
        stack.push(l.body);
    }
    stack.extend(exps.iter().rev());
    let mut cs = Vec::new();
    while let Some(n) = stack.pop() {
        if !seen.insert(n) {
            continue;
        }
        let found = graph::with_node(n, |node| {
            match &node.kind {
                NodeKind::Param(_) => params_used.push(n),
                NodeKind::While { cond, body, .. } => {
                    bound.extend(cond.params.iter().chain(&body.params).copied());
                }
                _ => {}
            }
            if let Some(a) = node.kind.array_read() {
                reads.push(a);
            }
            cs.clear();
            node.kind.exp_children(&mut cs);
            stack.extend(cs.iter().rev());
        });
        found.ok_or_else(|| outside_snapshot(n))?;
    }
    if params_used.iter().any(|p| !bound.contains(p) && !scope.contains(*p)) {
        return Err(Error::EscapedVariable { loc });
    }
    Ok(reads)
}

struct AccConverter<'a> {
    level: AccLevel,
    plan: SharingPlan,
    /// The array environment.
    env: Scope<'a>,
    /// The scalar variables in scope (none but for a nested array level).
    senv: &'a Scope<'a>,
    opts: SharingOptions,
    /// The array node being converted (for the location of its errors).
    current: NodeId,
    fp: &'a FreeParams,
}

impl AccConverter<'_> {
    /// The node's term, with the lets floated to it.
    fn acc(&mut self, n: NodeId) -> Result<OpenAcc> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.acc_inner(n))
    }

    fn acc_inner(&mut self, n: NodeId) -> Result<OpenAcc> {
        let binds = self.plan.binds_at.get(&n).cloned().unwrap_or_default();
        bind_floated(self, &binds, n)
    }

    /// A reference to a child: its variable if it is bound, else its term.
    fn acc_ref(&mut self, c: NodeId) -> Result<Box<OpenAcc>> {
        if let Some(i) = self.env.index(c) {
            // (bound outside this level, or a parameter: not among its nodes)
            let loc = graph::with_node(c, |n| n.loc).ok_or_else(|| outside_snapshot(c))?;
            return Ok(Box::new(OpenAcc::new(AccKind::Var(i), loc)));
        }
        if let NodeKind::AParam(_) = self.level.nodes[&c].kind {
            return Err(Error::EscapedVariable { loc: self.level.nodes[&c].loc });
        }
        if self.plan.shared.contains(&c) {
            return Err(Error::Internal(format!("shared array term {c} used outside its binding")));
        }
        Ok(Box::new(self.acc(c)?))
    }

    fn afun(&mut self, l: &Lam) -> Result<AFun> {
        let p = l.params[0];
        // (a function that ignores its argument never reaches it, so the
        // parameter may not be among the level's nodes)
        let param = match graph::node(p).map(|n| n.kind) {
            Some(NodeKind::AParam(t)) => t,
            _ => return Err(Error::Internal("array function without an array parameter".into())),
        };
        self.env.local.push(p);
        let body = self.acc_ref(l.body);
        self.env.local.pop();
        Ok(AFun { param, body: body? })
    }

    fn exp(&self, root: NodeId) -> Result<OpenExp> {
        ExpConverter::new(root, &self.env, self.senv, self.opts, self.fp)?.run(&[], root)
    }

    fn fun(&self, l: &Lam) -> Result<Fun> {
        let params = l
            .params
            .iter()
            .map(|&p| match graph::node(p).map(|n| n.kind) {
                Some(NodeKind::Param(t)) => Ok(t),
                _ => Err(Error::Internal("scalar function without a scalar parameter".into())),
            })
            .collect::<Result<Vec<_>>>()?;
        let body =
            ExpConverter::new(l.body, &self.env, self.senv, self.opts, self.fp)?.run(&l.params, l.body)?;
        Ok(Fun { params, body })
    }

    fn acc_node(&mut self, n: NodeId) -> Result<OpenAcc> {
        let node = self.level.nodes[&n].clone();
        self.current = n;
        let kind = match &node.kind {
            NodeKind::AParam(_) => return Ok(*self.acc_ref(n)?),
            NodeKind::Use(d) => AccKind::Use(d.clone()),
            NodeKind::Unit(e) => AccKind::Unit(self.exp(*e)?),
            NodeKind::Reshape { shape, array } => {
                AccKind::Reshape { shape: self.exp(*shape)?, array: self.acc_ref(*array)? }
            }
            NodeKind::Generate { shape, f } => {
                AccKind::Generate { shape: self.exp(*shape)?, f: self.fun(f)? }
            }
            NodeKind::Map { f, array } => AccKind::Map { f: self.fun(f)?, array: self.acc_ref(*array)? },
            NodeKind::ZipWith { f, a, b } => {
                AccKind::ZipWith { f: self.fun(f)?, a: self.acc_ref(*a)?, b: self.acc_ref(*b)? }
            }
            NodeKind::Backpermute { shape, f, array } => AccKind::Backpermute {
                shape: self.exp(*shape)?,
                f: self.fun(f)?,
                array: self.acc_ref(*array)?,
            },
            NodeKind::Replicate { spec, slix, array } => AccKind::Replicate {
                spec: spec.clone(),
                slix: self.exp(*slix)?,
                array: self.acc_ref(*array)?,
            },
            NodeKind::Slice { spec, array, slix } => {
                AccKind::Slice { spec: spec.clone(), array: self.acc_ref(*array)?, slix: self.exp(*slix)? }
            }
            NodeKind::Fold { f, seed, array } => AccKind::Fold {
                f: self.fun(f)?,
                seed: seed.map(|s| self.exp(s)).transpose()?,
                array: self.acc_ref(*array)?,
            },
            NodeKind::Stencil { f, args } => {
                let f = self.fun(f)?;
                let mut out = Vec::with_capacity(args.len());
                for a in args {
                    let boundary = match &a.boundary {
                        BoundaryNode::Clamp => Boundary::Clamp,
                        BoundaryNode::Mirror => Boundary::Mirror,
                        BoundaryNode::Wrap => Boundary::Wrap,
                        BoundaryNode::Constant(c) => Boundary::Constant(self.exp(*c)?),
                        BoundaryNode::Function(g) => Boundary::Function(self.fun(g)?),
                    };
                    out.push(StencilArg {
                        extents: a.extents.clone(),
                        boundary,
                        array: self.acc_ref(a.array)?,
                    });
                }
                AccKind::Stencil { f, args: out }
            }
            NodeKind::FoldSeg { f, seed, array, offsets } => AccKind::FoldSeg {
                f: self.fun(f)?,
                seed: seed.map(|s| self.exp(s)).transpose()?,
                array: self.acc_ref(*array)?,
                offsets: self.acc_ref(*offsets)?,
            },
            NodeKind::Scan { dir, f, seed, array } => AccKind::Scan {
                dir: *dir,
                f: self.fun(f)?,
                seed: seed.map(|s| self.exp(s)).transpose()?,
                array: self.acc_ref(*array)?,
            },
            NodeKind::Permute { combine, defaults, index, source } => AccKind::Permute {
                combine: self.fun(combine)?,
                defaults: self.acc_ref(*defaults)?,
                index: self.fun(index)?,
                source: self.acc_ref(*source)?,
            },
            NodeKind::Acond { cond, then_, else_ } => AccKind::Acond {
                cond: self.exp(*cond)?,
                then_: self.acc_ref(*then_)?,
                else_: self.acc_ref(*else_)?,
            },
            NodeKind::Awhile { pred, body, init } => {
                AccKind::Awhile { pred: self.afun(pred)?, body: self.afun(body)?, init: self.acc_ref(*init)? }
            }
            NodeKind::Foreign { func, fallback, arg } => AccKind::Foreign {
                func: func.clone(),
                fallback: Some(self.afun(fallback)?),
                arg: self.acc_ref(*arg)?,
            },
            NodeKind::Collect { seq, arg } => {
                AccKind::Foreign { func: seq.foreign(self.opts)?, fallback: None, arg: self.acc_ref(*arg)? }
            }
            NodeKind::ATuple(xs) => {
                AccKind::Tuple(xs.iter().map(|x| self.acc_ref(*x).map(|b| *b)).collect::<Result<_>>()?)
            }
            NodeKind::APrj(i, t) => AccKind::Prj(*i, self.acc_ref(*t)?),
            _ => return Err(Error::Internal(format!("scalar node {n} in array position"))),
        };
        Ok(OpenAcc::new(kind, node.loc))
    }
}

// ---------------------------------------------------------------------------
// The scalar level

struct ExpLevel {
    children: HashMap<NodeId, Vec<NodeId>>,
    consts: HashSet<NodeId>,
    /// The arrays computed in this scalar code (Note [Converting nested
    /// arrays]): bound wherever they are used, sharing or not.
    nested: HashSet<NodeId>,
    sharing: bool,
}

impl Level for ExpLevel {
    fn children(&self, n: NodeId) -> &[NodeId] {
        &self.children[&n]
    }
    fn bindable(&self, n: NodeId) -> bool {
        self.nested.contains(&n) || (self.sharing && !self.consts.contains(&n))
    }
    fn forced(&self, n: NodeId) -> bool {
        self.nested.contains(&n)
    }
}

struct ExpConverter<'a> {
    plan: SharingPlan,
    nodes: HashMap<NodeId, Node>,
    nested: HashSet<NodeId>,
    /// The arrays in scope: the array level's, then those bound by `ALet`.
    aenv: Scope<'a>,
    /// The scalar variables in scope: the enclosing scalar code's, if this
    /// is a function of a nested array term, then this code's own.
    env: Scope<'a>,
    opts: SharingOptions,
    fp: &'a FreeParams,
}

/// A term bound at a scalar node: a scalar `Let` or a nested array's `ALet`.
enum Bound {
    Exp(OpenExp),
    Acc(Box<OpenAcc>),
}

impl<'a> ExpConverter<'a> {
    fn new(
        root: NodeId,
        aenv: &'a Scope<'a>,
        senv: &'a Scope<'a>,
        opts: SharingOptions,
        fp: &'a FreeParams,
    ) -> Result<Self> {
        let mut level = ExpLevel {
            children: HashMap::new(),
            consts: HashSet::new(),
            nested: HashSet::new(),
            sharing: opts.scalars,
        };
        let mut nodes = HashMap::new();
        let mut todo = vec![root];
        while let Some(n) = todo.pop() {
            if nodes.contains_key(&n) {
                continue;
            }
            let node = snapshot_node(n)?;
            let mut cs = Vec::new();
            if node.kind.is_acc() {
                // a nested array: its array arguments that are nested too
                // are nodes of this level, so that one used twice is bound
                // once (its functions are converted with it)
                let mut arrays = Vec::new();
                node.kind.acc_parts(&mut arrays, &mut Vec::new(), &mut Vec::new());
                cs.extend(arrays.into_iter().filter(|a| !aenv.contains(*a) && fp.on_scalars(*a)));
                level.nested.insert(n);
            } else {
                node.kind.exp_children(&mut cs);
                if let Some(a) = node.kind.array_read() {
                    if !aenv.contains(a) {
                        cs.push(a);
                    }
                }
            }
            if matches!(node.kind, NodeKind::Const(_) | NodeKind::Param(_)) {
                level.consts.insert(n);
            }
            todo.extend(cs.iter());
            level.children.insert(n, cs);
            nodes.insert(n, node);
        }
        let plan = recover(&level, root);
        let nested = std::mem::take(&mut level.nested);
        Ok(ExpConverter { plan, nodes, nested, aenv: Scope::child(aenv), env: Scope::child(senv), opts, fp })
    }

    fn run(mut self, params: &[NodeId], root: NodeId) -> Result<OpenExp> {
        for p in params {
            self.env.local.push(*p);
        }
        self.exp(root)
    }

    fn exp(&mut self, n: NodeId) -> Result<OpenExp> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.exp_inner(n))
    }

    /// The node's term with the terms floated to it bound around it
    /// (ICFP'13 §3.4), scalars by `Let` and nested arrays by `ALet`.
    fn exp_inner(&mut self, n: NodeId) -> Result<OpenExp> {
        let binds = self.plan.binds_at.get(&n).cloned().unwrap_or_default();
        let mut bounds = Vec::with_capacity(binds.len());
        let mut result = Ok(());
        for &b in &binds {
            let t = if self.nested.contains(&b) {
                self.nested_acc(b).map(|a| Bound::Acc(Box::new(a)))
            } else {
                self.exp(b).map(Bound::Exp)
            };
            match t {
                Ok(t) => {
                    match t {
                        Bound::Acc(_) => self.aenv.local.push(b),
                        Bound::Exp(_) => self.env.local.push(b),
                    }
                    bounds.push(t);
                }
                Err(e) => {
                    result = Err(e);
                    break;
                }
            }
        }
        let body = result.and_then(|_| self.exp_node(n));
        for t in &bounds {
            match t {
                Bound::Acc(_) => self.aenv.local.pop(),
                Bound::Exp(_) => self.env.local.pop(),
            }
        }
        let body = body?;
        Ok(bounds.into_iter().rev().fold(body, |body, t| match t {
            Bound::Exp(b) => {
                let loc = b.loc;
                OpenExp::new(ExpKind::Let(Box::new(b), Box::new(body)), loc)
            }
            Bound::Acc(a) => {
                let loc = a.loc;
                OpenExp::new(ExpKind::ALet(a, Box::new(body)), loc)
            }
        }))
    }

    /// A nested array's term, converted as an array level of its own in
    /// the scope of this scalar code (Note [Converting nested arrays]).
    fn nested_acc(&self, a: NodeId) -> Result<OpenAcc> {
        let level = AccLevel::build(a, self.opts.arrays, &self.env, &self.aenv, self.fp)?;
        let plan = recover(&level, a);
        let mut cx = AccConverter {
            level,
            plan,
            env: Scope::child(&self.aenv),
            senv: &self.env,
            opts: self.opts,
            current: a,
            fp: self.fp,
        };
        cx.acc(a)
    }

    fn exp_ref(&mut self, c: NodeId) -> Result<Box<OpenExp>> {
        if let Some(i) = self.env.index(c) {
            return Ok(Box::new(OpenExp::new(ExpKind::Var(i), self.nodes[&c].loc)));
        }
        if self.plan.shared.contains(&c) {
            return Err(Error::Internal(format!("shared scalar term {c} used outside its binding")));
        }
        Ok(Box::new(self.exp(c)?))
    }

    fn loop_fun(&mut self, l: &Lam) -> Result<Box<Fun>> {
        let p = l.params[0];
        // (a function that ignores its argument never reaches it)
        let ty = match graph::node(p).map(|n| n.kind) {
            Some(NodeKind::Param(t)) => t,
            _ => return Err(Error::Internal("loop function without a parameter".into())),
        };
        self.env.local.push(p);
        let body = self.exp_ref(l.body);
        self.env.local.pop();
        Ok(Box::new(Fun { params: vec![ty], body: *body? }))
    }

    fn array_var(&self, a: NodeId, loc: SrcLoc) -> Result<usize> {
        self.aenv.index(a).ok_or_else(|| match graph::node(a).map(|n| n.kind) {
            Some(NodeKind::AParam(_)) => Error::EscapedVariable { loc },
            Some(_) => Error::Internal(format!("array {a} read by scalar code at {loc} is not bound")),
            None => outside_snapshot(a),
        })
    }

    fn exp_node(&mut self, n: NodeId) -> Result<OpenExp> {
        let node = self.nodes[&n].clone();
        let loc = node.loc;
        let kind = match &node.kind {
            NodeKind::Const(c) => ExpKind::Const(*c),
            NodeKind::Param(_) => match self.env.index(n) {
                Some(i) => ExpKind::Var(i),
                None => return Err(Error::EscapedVariable { loc }),
            },
            NodeKind::Tuple(xs) => {
                ExpKind::Tuple(xs.iter().map(|x| self.exp_ref(*x).map(|b| *b)).collect::<Result<_>>()?)
            }
            NodeKind::Prj(i, t) => ExpKind::Prj(*i, self.exp_ref(*t)?),
            NodeKind::Prim(op, xs) => {
                ExpKind::Prim(*op, xs.iter().map(|x| self.exp_ref(*x).map(|b| *b)).collect::<Result<_>>()?)
            }
            NodeKind::Cond(c, t, e) => ExpKind::Cond(self.exp_ref(*c)?, self.exp_ref(*t)?, self.exp_ref(*e)?),
            NodeKind::While { cond, body, init } => {
                let init = self.exp_ref(*init)?;
                ExpKind::While { cond: self.loop_fun(cond)?, body: self.loop_fun(body)?, init }
            }
            NodeKind::Index { array, index } => {
                ExpKind::Index { array: self.array_var(*array, loc)?, index: self.exp_ref(*index)? }
            }
            NodeKind::LinearIndex { array, index } => {
                ExpKind::LinearIndex { array: self.array_var(*array, loc)?, index: self.exp_ref(*index)? }
            }
            NodeKind::ShapeOf { array } => ExpKind::Shape { array: self.array_var(*array, loc)? },
            _ => return Err(Error::Internal(format!("array node {n} in scalar position"))),
        };
        Ok(OpenExp::new(kind, loc))
    }
}

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
//! An array node whose scalar code mentions the argument of a scalar
//! function it does not itself contain was built inside that function:
//! nested data parallelism, rejected with the node's source location.

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
    let level = AccLevel::build(root, opts.arrays)?;
    let plan = recover(&level, root);
    let mut cx = AccConverter { level, plan, env: Env::default(), opts, current: root };
    for id in ids {
        cx.env.push(id);
    }
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

impl Binders for AccConverter {
    type Term = OpenAcc;
    fn env(&mut self) -> &mut Env {
        &mut self.env
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

impl Binders for ExpConverter<'_> {
    type Term = OpenExp;
    fn env(&mut self) -> &mut Env {
        &mut self.env
    }
    fn term(&mut self, n: NodeId) -> Result<OpenExp> {
        self.exp(n)
    }
    fn node_term(&mut self, n: NodeId) -> Result<OpenExp> {
        self.exp_node(n)
    }
    fn make_let(bound: OpenExp, body: OpenExp) -> OpenExp {
        let loc = bound.loc;
        OpenExp::new(ExpKind::Let(Box::new(bound), Box::new(body)), loc)
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
    fn build(root: NodeId, sharing: bool) -> Result<AccLevel> {
        let mut lv =
            AccLevel { nodes: HashMap::new(), children: HashMap::new(), forced: HashSet::new(), sharing };
        // each node with the parameters of the scalar functions it was
        // reached inside (the arrays read by a node's scalar code are
        // inside its functions), which tell nested parallelism from an
        // escaped variable
        let mut todo = vec![(root, Rc::new(Enclosing::Outside))];
        while let Some((n, enclosing)) = todo.pop() {
            if lv.nodes.contains_key(&n) {
                continue;
            }
            let node = snapshot_node(n)?;
            if !node.kind.is_acc() {
                return Err(Error::Internal(format!("scalar node {n} in array position")));
            }
            let (mut arrays, mut exps, mut lams) = (Vec::new(), Vec::new(), Vec::new());
            node.kind.acc_parts(&mut arrays, &mut exps, &mut lams);
            let reads = scalar_reads(&exps, &lams, node.loc, &enclosing)?;
            lv.forced.extend(reads.iter().copied());
            let inside = if lams.is_empty() {
                enclosing.clone()
            } else {
                let params = lams.iter().flat_map(|l| l.params.iter().copied()).collect();
                Rc::new(Enclosing::Inside(params, enclosing.clone()))
            };
            todo.extend(arrays.iter().map(|&c| (c, enclosing.clone())));
            todo.extend(reads.iter().map(|&c| (c, inside.clone())));
            let mut cs = arrays;
            cs.extend(reads);
            lv.children.insert(n, cs);
            lv.nodes.insert(n, node);
        }
        Ok(lv)
    }
}

/// The parameters of the scalar functions an array node was reached
/// inside: a list shared by every node reached inside the same functions
/// (a set per node, each a copy of its parent's and more, was quadratic in
/// a chain of operations each reading the last inside its function).
enum Enclosing {
    Outside,
    Inside(Vec<NodeId>, Rc<Enclosing>),
}

impl Enclosing {
    fn contains(&self, p: NodeId) -> bool {
        let mut e = self;
        while let Enclosing::Inside(params, outer) = e {
            if params.contains(&p) {
                return true;
            }
            e = outer;
        }
        false
    }
}

/// The arrays read by an array node's scalar code, in order of first
/// appearance, checking that the code mentions no variable of an enclosing
/// scalar function (Note [Nested parallelism] in the module doc: the node
/// was reached inside a function binding it, `enclosing`) nor of a
/// function it is not inside at all (an expression smuggled out of its
/// function, `Error::EscapedVariable`).
fn scalar_reads(exps: &[NodeId], lams: &[Lam], loc: SrcLoc, enclosing: &Enclosing) -> Result<Vec<NodeId>> {
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
    let mut free = params_used.iter().filter(|p| !bound.contains(p));
    if let Some(first) = free.next() {
        let nested = enclosing.contains(*first) || free.any(|p| enclosing.contains(*p));
        return Err(if nested { Error::NestedParallelism { loc } } else { Error::EscapedVariable { loc } });
    }
    Ok(reads)
}

struct AccConverter {
    level: AccLevel,
    plan: SharingPlan,
    /// The array environment.
    env: Env,
    opts: SharingOptions,
    /// The array node being converted (for the location of its errors).
    current: NodeId,
}

impl AccConverter {
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
            return Ok(Box::new(OpenAcc::new(AccKind::Var(i), self.level.nodes[&c].loc)));
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
        self.env.push(p);
        let body = self.acc_ref(l.body);
        self.env.pop();
        Ok(AFun { param, body: body? })
    }

    fn exp(&self, root: NodeId) -> Result<OpenExp> {
        ExpConverter::new(root, &self.env, self.opts.scalars)?.run(&[], root)
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
        let body = ExpConverter::new(l.body, &self.env, self.opts.scalars)?.run(&l.params, l.body)?;
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
    sharing: bool,
}

impl Level for ExpLevel {
    fn children(&self, n: NodeId) -> &[NodeId] {
        &self.children[&n]
    }
    fn bindable(&self, n: NodeId) -> bool {
        self.sharing && !self.consts.contains(&n)
    }
}

struct ExpConverter<'a> {
    plan: SharingPlan,
    nodes: HashMap<NodeId, Node>,
    aenv: &'a Env,
    env: Env,
}

impl<'a> ExpConverter<'a> {
    fn new(root: NodeId, aenv: &'a Env, sharing: bool) -> Result<Self> {
        let mut level = ExpLevel { children: HashMap::new(), consts: HashSet::new(), sharing };
        let mut nodes = HashMap::new();
        let mut todo = vec![root];
        while let Some(n) = todo.pop() {
            if nodes.contains_key(&n) {
                continue;
            }
            let node = snapshot_node(n)?;
            let mut cs = Vec::new();
            node.kind.exp_children(&mut cs);
            if matches!(node.kind, NodeKind::Const(_) | NodeKind::Param(_)) {
                level.consts.insert(n);
            }
            todo.extend(cs.iter());
            level.children.insert(n, cs);
            nodes.insert(n, node);
        }
        let plan = recover(&level, root);
        Ok(ExpConverter { plan, nodes, aenv, env: Env::default() })
    }

    fn run(mut self, params: &[NodeId], root: NodeId) -> Result<OpenExp> {
        for p in params {
            self.env.push(*p);
        }
        self.exp(root)
    }

    fn exp(&mut self, n: NodeId) -> Result<OpenExp> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.exp_inner(n))
    }

    fn exp_inner(&mut self, n: NodeId) -> Result<OpenExp> {
        let binds = self.plan.binds_at.get(&n).cloned().unwrap_or_default();
        bind_floated(self, &binds, n)
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
        self.env.push(p);
        let body = self.exp_ref(l.body);
        self.env.pop();
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

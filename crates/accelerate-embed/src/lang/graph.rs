//! The reified program graph: every `Exp` and `Acc` value is a handle that
//! owns a node of a reference-counted graph, so node identity is observable
//! (the node's address is our "stable name", ICFP'13 §3) and sharing in the
//! user's program is sharing in this graph.
//!
//! Note [Reference-counted handles]
//! `Exp<T>` and `Acc<A>` own their nodes through `Rc`: a node, and the
//! arrays `use_array` gave it, are freed when no handle and no other node
//! refers to it, as a NumPy or JAX user expects. So running
//! `run(&f(use_array(x)))` in a loop holds one iteration's graph at a time,
//! with no `scope` (before, handles were `Copy` indices into a per-thread
//! arena that only `scope` emptied, and such a loop grew by the input's
//! size each time; `tests/memory_bounded.rs` measures it).
//!
//! The price is that a handle is `Clone`, not `Copy`: a value used twice
//! is borrowed (`&x + &x`) or cloned. Scalar functions receive their
//! arguments by reference, and the operators and every `IntoExp` argument
//! take references, so the common `|x| x * x` reads as it would for
//! numbers. Handles are `Rc`s, neither `Send` nor `Sync`, so a graph never
//! crosses threads. Freeing is a loop, not a recursion (`GNode`'s `Drop`),
//! so dropping a chain of 10^5 operations cannot overflow the stack.
//!
//! Conversion reads a *snapshot*: the nodes reachable from the program's
//! roots, numbered by age (`snapshot`), so that sharing recovery and the
//! converter work on small `Copy` numbers and their output does not depend
//! on addresses. The snapshot lives while the program is converted.

use accelerate_base::array::{ArrayData, ArraysTy, EltTy, ScalarVal, SliceSpec};
use accelerate_base::error::SrcLoc;
use accelerate_base::foreign::ForeignAcc;
use accelerate_ir::{Direction, PrimFun};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

/// A node's stable name within a snapshot (Note [Reference-counted
/// handles]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    idx: u32,
}

impl std::fmt::Display for NodeId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "#{}", self.idx)
    }
}

/// The type marker of a handle: covariant in `T`, neither `Send` nor `Sync`
/// (Note [The expression arena]).
pub(crate) type HandleTy<T> = std::marker::PhantomData<(fn() -> T, *const ())>;

/// A function in the graph: its parameter nodes and body.
#[derive(Clone, Debug)]
pub(crate) struct Lam<C = NodeId> {
    pub params: Vec<C>,
    pub body: C,
}

/// A stencil boundary in the graph (see `ir::Boundary`).
#[derive(Clone, Debug)]
pub(crate) enum BoundaryNode<C = NodeId> {
    Clamp,
    Mirror,
    Wrap,
    Constant(C),
    Function(Lam<C>),
}

/// One array a stencil reads, with its pattern's extents and boundary.
#[derive(Clone, Debug)]
pub(crate) struct StencilNodeArg<C = NodeId> {
    pub extents: Vec<usize>,
    pub boundary: BoundaryNode<C>,
    pub array: C,
}

#[derive(Clone, Debug)]
pub(crate) enum NodeKind<C = NodeId> {
    // scalar expressions
    Const(ScalarVal),
    /// The variable of a scalar function (bound by the `Lam` that lists it).
    Param(EltTy),
    Tuple(Vec<C>),
    Prj(usize, C),
    Prim(PrimFun, Vec<C>),
    Cond(C, C, C),
    While {
        cond: Lam<C>,
        body: Lam<C>,
        init: C,
    },
    Index {
        array: C,
        index: C,
    },
    LinearIndex {
        array: C,
        index: C,
    },
    ShapeOf {
        array: C,
    },
    // array computations
    /// The variable of an array function (a compiled program's argument or
    /// `awhile`'s loop variable).
    AParam(ArraysTy),
    Use(Arc<ArrayData>),
    Unit(C),
    Reshape {
        shape: C,
        array: C,
    },
    Generate {
        shape: C,
        f: Lam<C>,
    },
    Map {
        f: Lam<C>,
        array: C,
    },
    ZipWith {
        f: Lam<C>,
        a: C,
        b: C,
    },
    Backpermute {
        shape: C,
        f: Lam<C>,
        array: C,
    },
    Replicate {
        spec: SliceSpec,
        slix: C,
        array: C,
    },
    Slice {
        spec: SliceSpec,
        array: C,
        slix: C,
    },
    Fold {
        f: Lam<C>,
        seed: Option<C>,
        array: C,
    },
    FoldSeg {
        f: Lam<C>,
        seed: Option<C>,
        array: C,
        offsets: C,
    },
    Stencil {
        f: Lam<C>,
        args: Vec<StencilNodeArg<C>>,
    },
    Scan {
        dir: Direction,
        f: Lam<C>,
        seed: Option<C>,
        array: C,
    },
    Permute {
        combine: Lam<C>,
        defaults: C,
        index: Lam<C>,
        source: C,
    },
    Acond {
        cond: C,
        then_: C,
        else_: C,
    },
    Awhile {
        pred: Lam<C>,
        body: Lam<C>,
        init: C,
    },
    Foreign {
        func: Arc<ForeignAcc>,
        fallback: Lam<C>,
        arg: C,
    },
    /// A consumed sequence's result (`Consumed::collect`): `arg` the
    /// tuple of the arrays its sources read from this program
    /// (`SeqParts::outer_nodes`). Converted to a foreign call that every
    /// backend runs (`lang::seq::SeqProgram`).
    Collect {
        seq: Rc<super::seq::CollectSeq>,
        arg: C,
    },
    ATuple(Vec<C>),
    APrj(usize, C),
}

/// A node of the user's program graph. `Exp` and `Acc` handles own their
/// node through a reference count (Note [Reference-counted handles]).
#[doc(hidden)]
#[derive(Debug)]
pub struct GNode {
    pub(crate) kind: NodeKind<NodeRef>,
    pub(crate) loc: SrcLoc,
    /// The order in which nodes were made in this thread, which numbers a
    /// snapshot's nodes (so that its numbering, and everything that sorts
    /// by it, does not depend on where the allocator put the nodes).
    seq: u64,
}

/// The age of a node (for printing handles).
pub(crate) fn seq(r: &NodeRef) -> u64 {
    r.seq
}

/// An owning reference to a node of the user's program graph.
#[doc(hidden)]
pub type NodeRef = Rc<GNode>;

thread_local! {
    static NEXT_SEQ: Cell<u64> = const { Cell::new(0) };
}

/// Makes a node of the user's program graph.
pub(crate) fn push(kind: NodeKind<NodeRef>, loc: SrcLoc) -> NodeRef {
    let seq = NEXT_SEQ.with(|s| {
        let n = s.get();
        s.set(n + 1);
        n
    });
    Rc::new(GNode { kind, loc, seq })
}

impl Drop for GNode {
    /// Frees the nodes only this one holds with a loop, not by recursion:
    /// a chain of 10^5 maps is a chain of 10^5 nodes.
    fn drop(&mut self) {
        let mut orphans = Vec::new();
        let take = |kind: &mut NodeKind<NodeRef>, orphans: &mut Vec<NodeRef>| {
            let kind = std::mem::replace(kind, NodeKind::Tuple(Vec::new()));
            kind.for_each_child(|c| orphans.push(c.clone()));
        };
        take(&mut self.kind, &mut orphans);
        while let Some(r) = orphans.pop() {
            if let Some(mut n) = Rc::into_inner(r) {
                take(&mut n.kind, &mut orphans);
            }
        }
    }
}

/// A node of a snapshot of the graph, as conversion reads it: the nodes
/// reachable from a program's roots, numbered in the order they were made.
#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub kind: NodeKind,
    pub loc: SrcLoc,
}

thread_local! {
    static SNAPSHOT: RefCell<Vec<Node>> = const { RefCell::new(Vec::new()) };
}

/// The snapshot of this thread's graph that conversion reads, in place
/// while it lives (Note [Reference-counted handles]).
pub(crate) struct Snapshot {
    outer: Vec<Node>,
}

impl Drop for Snapshot {
    fn drop(&mut self) {
        let outer = std::mem::take(&mut self.outer);
        SNAPSHOT.with(|s| *s.borrow_mut() = outer);
    }
}

/// Numbers the nodes reachable from `roots` and makes them the snapshot
/// that [`node`] reads; returns the roots' numbers. Linear in the graph's
/// size (plus sorting by age) and iterative, at any depth.
pub(crate) fn snapshot(roots: &[&NodeRef]) -> (Snapshot, Vec<NodeId>) {
    let mut seen: HashMap<*const GNode, u32> = HashMap::new();
    let mut reached: Vec<&GNode> = Vec::new();
    let mut stack: Vec<&GNode> = Vec::new();
    for r in roots {
        let g: &GNode = r;
        if seen.insert(g as *const GNode, 0).is_none() {
            stack.push(g);
        }
    }
    while let Some(g) = stack.pop() {
        reached.push(g);
        g.kind.for_each_child(|c| {
            let c: &GNode = c;
            if seen.insert(c as *const GNode, 0).is_none() {
                stack.push(c);
            }
        });
    }
    reached.sort_unstable_by_key(|g| g.seq);
    for (i, g) in reached.iter().enumerate() {
        let idx = u32::try_from(i).expect("more than 2^32 nodes in one program");
        seen.insert(*g as *const GNode, idx);
    }
    let id = |c: &NodeRef| NodeId { idx: seen[&(Rc::as_ptr(c))] };
    let nodes: Vec<Node> =
        reached.iter().map(|g| Node { kind: g.kind.map(&mut |c| id(c)), loc: g.loc }).collect();
    let ids = roots.iter().map(|r| id(r)).collect();
    let outer = SNAPSHOT.with(|s| std::mem::replace(&mut *s.borrow_mut(), nodes));
    (Snapshot { outer }, ids)
}

/// A copy of a node of the current snapshot (nodes are small; array data
/// is reference counted).
pub(crate) fn node(id: NodeId) -> Option<Node> {
    with_node(id, Node::clone)
}

/// Runs `f` with a node of the current snapshot, without copying it.
pub(crate) fn with_node<R>(id: NodeId, f: impl FnOnce(&Node) -> R) -> Option<R> {
    SNAPSHOT.with(|s| s.borrow().get(id.idx as usize).map(f))
}

impl NodeKind {
    /// Is this an array-level node?
    pub fn is_acc(&self) -> bool {
        use NodeKind::*;
        !matches!(
            self,
            Const(_)
                | Param(_)
                | Tuple(_)
                | Prj(..)
                | Prim(..)
                | Cond(..)
                | While { .. }
                | Index { .. }
                | LinearIndex { .. }
                | ShapeOf { .. }
        )
    }

    /// The scalar children of a scalar node, in evaluation order (arrays
    /// read by `Index` and friends are not scalar children).
    pub fn exp_children(&self, out: &mut Vec<NodeId>) {
        use NodeKind::*;
        match self {
            Const(_) | Param(_) | ShapeOf { .. } => {}
            Tuple(xs) | Prim(_, xs) => out.extend(xs),
            Prj(_, t) => out.push(*t),
            Cond(c, t, e) => out.extend([*c, *t, *e]),
            While { cond, body, init } => out.extend([cond.body, body.body, *init]),
            Index { index, .. } | LinearIndex { index, .. } => out.push(*index),
            _ => {}
        }
    }

    /// The array read by a scalar node, if any.
    pub fn array_read(&self) -> Option<NodeId> {
        match self {
            NodeKind::Index { array, .. }
            | NodeKind::LinearIndex { array, .. }
            | NodeKind::ShapeOf { array } => Some(*array),
            _ => None,
        }
    }

    /// The array arguments and the roots of the scalar expressions of an
    /// array node, and the functions among them.
    pub fn acc_parts(&self, arrays: &mut Vec<NodeId>, exps: &mut Vec<NodeId>, lams: &mut Vec<Lam>) {
        use NodeKind::*;
        match self {
            AParam(_) | Use(_) => {}
            Unit(e) => exps.push(*e),
            Reshape { shape, array } => {
                exps.push(*shape);
                arrays.push(*array);
            }
            Generate { shape, f } => {
                exps.push(*shape);
                lams.push(f.clone());
            }
            Map { f, array } => {
                lams.push(f.clone());
                arrays.push(*array);
            }
            ZipWith { f, a, b } => {
                lams.push(f.clone());
                arrays.extend([*a, *b]);
            }
            Backpermute { shape, f, array } => {
                exps.push(*shape);
                lams.push(f.clone());
                arrays.push(*array);
            }
            Replicate { slix, array, .. } | Slice { slix, array, .. } => {
                exps.push(*slix);
                arrays.push(*array);
            }
            Fold { f, seed, array } | Scan { f, seed, array, .. } => {
                lams.push(f.clone());
                exps.extend(seed);
                arrays.push(*array);
            }
            Stencil { f, args } => {
                lams.push(f.clone());
                for a in args {
                    arrays.push(a.array);
                    match &a.boundary {
                        BoundaryNode::Constant(c) => exps.push(*c),
                        BoundaryNode::Function(g) => lams.push(g.clone()),
                        BoundaryNode::Clamp | BoundaryNode::Mirror | BoundaryNode::Wrap => {}
                    }
                }
            }
            FoldSeg { f, seed, array, offsets } => {
                lams.push(f.clone());
                exps.extend(seed);
                arrays.extend([*array, *offsets]);
            }
            Permute { combine, defaults, index, source } => {
                lams.push(combine.clone());
                lams.push(index.clone());
                arrays.extend([*defaults, *source]);
            }
            Acond { cond, then_, else_ } => {
                exps.push(*cond);
                arrays.extend([*then_, *else_]);
            }
            Awhile { pred, body, init } => {
                arrays.extend([pred.body, body.body, *init]);
            }
            Foreign { fallback, arg, .. } => arrays.extend([fallback.body, *arg]),
            Collect { arg, .. } => arrays.push(*arg),
            ATuple(xs) => arrays.extend(xs),
            APrj(_, t) => arrays.push(*t),
            _ => {}
        }
    }
}

impl<C> Lam<C> {
    fn map<D>(&self, f: &mut impl FnMut(&C) -> D) -> Lam<D> {
        Lam { params: self.params.iter().map(&mut *f).collect(), body: f(&self.body) }
    }

    fn for_each<'s>(&'s self, f: &mut impl FnMut(&'s C)) {
        self.params.iter().for_each(&mut *f);
        f(&self.body);
    }
}

impl<C> NodeKind<C> {
    /// Calls `f` on every node this one refers to (scalar and array
    /// children, functions' parameters and bodies), with multiplicity.
    pub fn for_each_child<'s>(&'s self, mut f: impl FnMut(&'s C)) {
        use NodeKind::*;
        let f = &mut f;
        match self {
            Const(_) | Param(_) | AParam(_) | Use(_) => {}
            Tuple(xs) | Prim(_, xs) | ATuple(xs) => xs.iter().for_each(f),
            Prj(_, x) | APrj(_, x) | Unit(x) | ShapeOf { array: x } => f(x),
            Cond(a, b, c) | Acond { cond: a, then_: b, else_: c } => {
                f(a);
                f(b);
                f(c);
            }
            While { cond, body, init } => {
                cond.for_each(f);
                body.for_each(f);
                f(init);
            }
            Awhile { pred, body, init } => {
                pred.for_each(f);
                body.for_each(f);
                f(init);
            }
            Foreign { fallback, arg, .. } => {
                fallback.for_each(f);
                f(arg);
            }
            Collect { arg, .. } => f(arg),
            Index { array, index } | LinearIndex { array, index } => {
                f(array);
                f(index);
            }
            Reshape { shape, array } => {
                f(shape);
                f(array);
            }
            Generate { shape, f: g } => {
                f(shape);
                g.for_each(f);
            }
            Map { f: g, array } => {
                g.for_each(f);
                f(array);
            }
            ZipWith { f: g, a, b } => {
                g.for_each(f);
                f(a);
                f(b);
            }
            Backpermute { shape, f: g, array } => {
                f(shape);
                g.for_each(f);
                f(array);
            }
            Replicate { slix, array, .. } | Slice { slix, array, .. } => {
                f(slix);
                f(array);
            }
            Fold { f: g, seed, array } | Scan { f: g, seed, array, .. } => {
                g.for_each(f);
                seed.iter().for_each(&mut *f);
                f(array);
            }
            FoldSeg { f: g, seed, array, offsets } => {
                g.for_each(f);
                seed.iter().for_each(&mut *f);
                f(array);
                f(offsets);
            }
            Stencil { f: g, args } => {
                g.for_each(f);
                for a in args {
                    match &a.boundary {
                        BoundaryNode::Constant(c) => f(c),
                        BoundaryNode::Function(h) => h.for_each(f),
                        BoundaryNode::Clamp | BoundaryNode::Mirror | BoundaryNode::Wrap => {}
                    }
                    f(&a.array);
                }
            }
            Permute { combine, defaults, index, source } => {
                combine.for_each(f);
                f(defaults);
                index.for_each(f);
                f(source);
            }
        }
    }

    /// The same node with every reference to another node replaced by `f`'s.
    pub fn map<D>(&self, f: &mut impl FnMut(&C) -> D) -> NodeKind<D> {
        use NodeKind::*;
        let lam = |l: &Lam<C>, f: &mut _| l.map(f);
        match self {
            Const(v) => Const(*v),
            Param(t) => Param(t.clone()),
            AParam(t) => AParam(t.clone()),
            Use(d) => Use(d.clone()),
            Tuple(xs) => Tuple(xs.iter().map(&mut *f).collect()),
            Prim(op, xs) => Prim(*op, xs.iter().map(&mut *f).collect()),
            ATuple(xs) => ATuple(xs.iter().map(&mut *f).collect()),
            Prj(i, x) => Prj(*i, f(x)),
            APrj(i, x) => APrj(*i, f(x)),
            Unit(x) => Unit(f(x)),
            ShapeOf { array } => ShapeOf { array: f(array) },
            Cond(a, b, c) => Cond(f(a), f(b), f(c)),
            Acond { cond, then_, else_ } => Acond { cond: f(cond), then_: f(then_), else_: f(else_) },
            While { cond, body, init } => While { cond: lam(cond, f), body: lam(body, f), init: f(init) },
            Awhile { pred, body, init } => Awhile { pred: lam(pred, f), body: lam(body, f), init: f(init) },
            Foreign { func, fallback, arg } => {
                Foreign { func: func.clone(), fallback: lam(fallback, f), arg: f(arg) }
            }
            Collect { seq, arg } => Collect { seq: seq.clone(), arg: f(arg) },
            Index { array, index } => Index { array: f(array), index: f(index) },
            LinearIndex { array, index } => LinearIndex { array: f(array), index: f(index) },
            Reshape { shape, array } => Reshape { shape: f(shape), array: f(array) },
            Generate { shape, f: g } => Generate { shape: f(shape), f: lam(g, f) },
            Map { f: g, array } => Map { f: lam(g, f), array: f(array) },
            ZipWith { f: g, a, b } => ZipWith { f: lam(g, f), a: f(a), b: f(b) },
            Backpermute { shape, f: g, array } => {
                Backpermute { shape: f(shape), f: lam(g, f), array: f(array) }
            }
            Replicate { spec, slix, array } => {
                Replicate { spec: spec.clone(), slix: f(slix), array: f(array) }
            }
            Slice { spec, array, slix } => Slice { spec: spec.clone(), array: f(array), slix: f(slix) },
            Fold { f: g, seed, array } => {
                Fold { f: lam(g, f), seed: seed.as_ref().map(&mut *f), array: f(array) }
            }
            Scan { dir, f: g, seed, array } => {
                Scan { dir: *dir, f: lam(g, f), seed: seed.as_ref().map(&mut *f), array: f(array) }
            }
            FoldSeg { f: g, seed, array, offsets } => FoldSeg {
                f: lam(g, f),
                seed: seed.as_ref().map(&mut *f),
                array: f(array),
                offsets: f(offsets),
            },
            Stencil { f: g, args } => Stencil {
                f: lam(g, f),
                args: args
                    .iter()
                    .map(|a| StencilNodeArg {
                        extents: a.extents.clone(),
                        boundary: match &a.boundary {
                            BoundaryNode::Clamp => BoundaryNode::Clamp,
                            BoundaryNode::Mirror => BoundaryNode::Mirror,
                            BoundaryNode::Wrap => BoundaryNode::Wrap,
                            BoundaryNode::Constant(c) => BoundaryNode::Constant(f(c)),
                            BoundaryNode::Function(h) => BoundaryNode::Function(lam(h, f)),
                        },
                        array: f(&a.array),
                    })
                    .collect(),
            },
            Permute { combine, defaults, index, source } => Permute {
                combine: lam(combine, f),
                defaults: f(defaults),
                index: lam(index, f),
                source: f(source),
            },
        }
    }
}

//! The reified program graph: every `Exp` and `Acc` value is a handle to a
//! node in a per-thread arena, so node identity is observable (the node id
//! is our "stable name", ICFP'13 §3) and sharing in the user's program is
//! sharing in this graph.
//!
//! Note [The expression arena]
//! `Exp<T>` and `Acc<A>` are `Copy` handles so that `x * x` reads as it
//! would for numbers. The nodes live in a thread-local arena; the handles
//! are neither `Send` nor `Sync`, so a handle can never be looked up in
//! another thread's arena. Nodes are never freed while their thread runs:
//! building a program costs memory proportional to its size once, and a
//! program that is run many times should be built once with `compile`.
//! Array data held by `use_array` nodes is shared with the user's arrays
//! (reference counted), not copied.
//!
//! To give the memory back, build and run inside [`crate::lang::scope`]: the
//! nodes made inside are freed when it returns. Every handle carries the
//! generation of the arena it was made in, so a handle used after its
//! scope ended is detected (`Error::StaleHandle`), never misread.

use accelerate_base::array::{ArrayData, ArraysTy, EltTy, ScalarVal, SliceSpec};
use accelerate_base::error::SrcLoc;
use accelerate_ir::{Direction, PrimFun};
use std::cell::RefCell;
use std::sync::Arc;

/// A node's stable name: its position in the arena and the generation it
/// was made in (Note [The expression arena]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NodeId {
    idx: u32,
    gen: u32,
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
pub(crate) struct Lam {
    pub params: Vec<NodeId>,
    pub body: NodeId,
}

/// A stencil boundary in the graph (see `ir::Boundary`).
#[derive(Clone, Debug)]
pub(crate) enum BoundaryNode {
    Clamp,
    Mirror,
    Wrap,
    Constant(NodeId),
    Function(Lam),
}

/// One array a stencil reads, with its pattern's extents and boundary.
#[derive(Clone, Debug)]
pub(crate) struct StencilNodeArg {
    pub extents: Vec<usize>,
    pub boundary: BoundaryNode,
    pub array: NodeId,
}

#[derive(Clone, Debug)]
pub(crate) enum NodeKind {
    // scalar expressions
    Const(ScalarVal),
    /// The variable of a scalar function (bound by the `Lam` that lists it).
    Param(EltTy),
    Tuple(Vec<NodeId>),
    Prj(usize, NodeId),
    Prim(PrimFun, Vec<NodeId>),
    Cond(NodeId, NodeId, NodeId),
    While {
        cond: Lam,
        body: Lam,
        init: NodeId,
    },
    Index {
        array: NodeId,
        index: NodeId,
    },
    LinearIndex {
        array: NodeId,
        index: NodeId,
    },
    ShapeOf {
        array: NodeId,
    },
    // array computations
    /// The variable of an array function (a compiled program's argument or
    /// `awhile`'s loop variable).
    AParam(ArraysTy),
    Use(Arc<ArrayData>),
    Unit(NodeId),
    Reshape {
        shape: NodeId,
        array: NodeId,
    },
    Generate {
        shape: NodeId,
        f: Lam,
    },
    Map {
        f: Lam,
        array: NodeId,
    },
    ZipWith {
        f: Lam,
        a: NodeId,
        b: NodeId,
    },
    Backpermute {
        shape: NodeId,
        f: Lam,
        array: NodeId,
    },
    Replicate {
        spec: SliceSpec,
        slix: NodeId,
        array: NodeId,
    },
    Slice {
        spec: SliceSpec,
        array: NodeId,
        slix: NodeId,
    },
    Fold {
        f: Lam,
        seed: Option<NodeId>,
        array: NodeId,
    },
    FoldSeg {
        f: Lam,
        seed: Option<NodeId>,
        array: NodeId,
        offsets: NodeId,
    },
    Stencil {
        f: Lam,
        args: Vec<StencilNodeArg>,
    },
    Scan {
        dir: Direction,
        f: Lam,
        seed: Option<NodeId>,
        array: NodeId,
    },
    Permute {
        combine: Lam,
        defaults: NodeId,
        index: Lam,
        source: NodeId,
    },
    Acond {
        cond: NodeId,
        then_: NodeId,
        else_: NodeId,
    },
    Awhile {
        pred: Lam,
        body: Lam,
        init: NodeId,
    },
    ATuple(Vec<NodeId>),
    APrj(usize, NodeId),
}

#[derive(Clone, Debug)]
pub(crate) struct Node {
    pub kind: NodeKind,
    pub loc: SrcLoc,
    gen: u32,
}

struct Arena {
    nodes: Vec<Node>,
    /// The generation of the nodes made now; bumped when a scope ends.
    gen: u32,
}

thread_local! {
    static ARENA: RefCell<Arena> = const { RefCell::new(Arena { nodes: Vec::new(), gen: 0 }) };
}

/// Adds a node to this thread's arena.
pub(crate) fn push(kind: NodeKind, loc: SrcLoc) -> NodeId {
    ARENA.with(|a| {
        let mut a = a.borrow_mut();
        let idx = u32::try_from(a.nodes.len()).expect("more than 2^32 live expression nodes in one thread");
        let gen = a.gen;
        a.nodes.push(Node { kind, loc, gen });
        NodeId { idx, gen }
    })
}

/// A copy of a node (nodes are small; array data is reference counted), or
/// `None` if the handle outlived its scope.
pub(crate) fn node(id: NodeId) -> Option<Node> {
    with_node(id, Node::clone)
}

/// Runs `f` with the node, without copying it; `None` for a stale handle.
pub(crate) fn with_node<R>(id: NodeId, f: impl FnOnce(&Node) -> R) -> Option<R> {
    ARENA.with(|a| {
        let a = a.borrow();
        a.nodes.get(id.idx as usize).filter(|n| n.gen == id.gen).map(f)
    })
}

/// The arena's current size: nodes made from now on can be freed by
/// [`release`] with this mark.
pub(crate) fn mark() -> usize {
    ARENA.with(|a| a.borrow().nodes.len())
}

/// Frees the nodes made since `mark` and starts a new generation, so that
/// their handles are recognised as stale.
pub(crate) fn release(mark: usize) {
    ARENA.with(|a| {
        let mut a = a.borrow_mut();
        if mark <= a.nodes.len() {
            a.nodes.truncate(mark);
            a.nodes.shrink_to(mark.max(1024));
        }
        a.gen = a.gen.wrapping_add(1);
    })
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
            ATuple(xs) => arrays.extend(xs),
            APrj(_, t) => arrays.push(*t),
            _ => {}
        }
    }
}

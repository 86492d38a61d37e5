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

use crate::array::{ArrayData, ArraysTy, EltTy, ScalarVal, SliceSpec};
use crate::exec::error::SrcLoc;
use crate::ir::{Direction, PrimFun};
use std::cell::RefCell;
use std::sync::Arc;

pub(crate) type NodeId = u32;

/// The type marker of a handle: covariant in `T`, neither `Send` nor `Sync`
/// (Note [The expression arena]).
pub(crate) type HandleTy<T> = std::marker::PhantomData<(fn() -> T, *const ())>;

/// A function in the graph: its parameter nodes and body.
#[derive(Clone, Debug)]
pub(crate) struct Lam {
    pub params: Vec<NodeId>,
    pub body: NodeId,
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
}

thread_local! {
    static ARENA: RefCell<Vec<Node>> = const { RefCell::new(Vec::new()) };
}

/// Adds a node to this thread's arena.
pub(crate) fn push(kind: NodeKind, loc: SrcLoc) -> NodeId {
    ARENA.with(|a| {
        let mut a = a.borrow_mut();
        let id = NodeId::try_from(a.len()).expect("more than 2^32 expression nodes in one thread");
        a.push(Node { kind, loc });
        id
    })
}

/// A copy of a node (nodes are small; array data is reference counted).
pub(crate) fn node(id: NodeId) -> Node {
    ARENA.with(|a| a.borrow()[id as usize].clone())
}

/// Runs `f` with the node, without copying it.
pub(crate) fn with_node<R>(id: NodeId, f: impl FnOnce(&Node) -> R) -> R {
    ARENA.with(|a| f(&a.borrow()[id as usize]))
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

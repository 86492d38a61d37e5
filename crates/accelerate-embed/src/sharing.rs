//! Sharing recovery, ICFP'13 §3: prune, float, bind.
//!
//! The user's program is a graph (see `lang::graph`): a value used twice in
//! Rust is one node with two parents. Converting it naively to a tree would
//! duplicate the shared work (exponentially, for a chain of doublings).
//! This module decides, for one level of the language at a time (array
//! computations, or one scalar expression), which nodes are shared and just
//! above which node each must be let-bound; `trafo::convert` then builds the
//! IR with those lets and de Bruijn indices (§3.4, binder introduction).
//!
//! 1. Prune (§3.2): a depth-first traversal counts the occurrences of every
//!    node (the occurrence map Ω), descending into a node only on its first
//!    visit. A node with more than one occurrence is shared.
//! 2. Float (§3.3): bottom-up over the pruned tree, each subtree reports the
//!    shared nodes it mentions, with how many of their occurrences it
//!    contains (the paper's Γ). A shared node is *saturated* at the lowest
//!    node whose subtree contains all of its Ω occurrences: that node
//!    dominates every use, and the shared node is let-bound just above it.
//! 3. The order of the lets bound at one node puts every term after the
//!    terms it uses (depth-first finishing order).
//!
//! Note [Floating shared terms]
//! A shared term's own subtree is reached at its first occurrence, but it is
//! *bound* higher up, at its saturation point. The occurrences inside it
//! must therefore count from where it is bound, not from where it was first
//! met: otherwise a term it uses could be bound below it and be out of
//! scope. So the Γ of a shared term's interior travels with its entry and
//! is released into the Γ of the node where the term saturates; anything
//! that saturates in turn is bound at the same node, outside it. This is
//! the paper's "nested sharing leads to subterms floating up inside other
//! floated subterms", with the scoping made explicit.
//!
//! Lambda scoping needs no bookkeeping here: the arguments of a Rust
//! closure exist only inside that closure's one call, so every term that
//! mentions them has all its occurrences inside the function body and
//! saturates there. A term smuggled out of its closure is caught when the
//! IR is built (`Error::EscapedVariable`).
//!
//! Γ is a hash map merged smaller-into-larger, and saturation is detected
//! when a count is incremented, so the whole float is O(n log n) in the
//! number of nodes (the paper's version is linear with a different Γ).

use crate::lang::graph::NodeId;
use std::collections::{HashMap, HashSet};

/// One level of the program graph, as sharing recovery sees it.
pub(crate) trait Level {
    /// The children of a node at this level, with multiplicity, in order.
    fn children(&self, n: NodeId) -> &[NodeId];
    /// May this node be let-bound? (Variables and constants are not.)
    fn bindable(&self, n: NodeId) -> bool;
    /// Must this node be let-bound even if used only once?
    fn forced(&self, _n: NodeId) -> bool {
        false
    }
}

/// Where each shared node is bound.
#[derive(Debug, Default)]
pub(crate) struct SharingPlan {
    /// Nodes that are let-bound; every occurrence becomes a variable.
    pub shared: HashSet<NodeId>,
    /// The lets to put just above a node, outermost first.
    pub binds_at: HashMap<NodeId, Vec<NodeId>>,
}

struct Entry {
    count: u32,
    /// The Γ of the shared term's own subtree, carried by its first
    /// occurrence (Note [Floating shared terms]).
    interior: Option<Gamma>,
}

type Gamma = HashMap<NodeId, Entry>;

struct Float<'a, L: Level> {
    level: &'a L,
    omega: HashMap<NodeId, u32>,
    finish: HashMap<NodeId, u32>,
    visited: HashSet<NodeId>,
    plan: SharingPlan,
}

/// Recovers the sharing of the tree rooted at `root`.
pub(crate) fn recover<L: Level>(level: &L, root: NodeId) -> SharingPlan {
    let (omega, finish) = prune(level, root);
    let mut f = Float { level, omega, finish, visited: HashSet::new(), plan: SharingPlan::default() };
    let rest = f.float(root);
    debug_assert!(rest.is_empty(), "shared terms left unbound at the root");
    f.plan
}

/// Phase 1: occurrence counts (Ω) and depth-first finishing order, with an
/// explicit stack so that deep graphs cannot overflow the Rust stack.
fn prune<L: Level>(level: &L, root: NodeId) -> (HashMap<NodeId, u32>, HashMap<NodeId, u32>) {
    let mut omega: HashMap<NodeId, u32> = HashMap::new();
    let mut finish: HashMap<NodeId, u32> = HashMap::new();
    omega.insert(root, 1);
    let mut stack: Vec<(NodeId, usize)> = vec![(root, 0)];
    while let Some(&mut (n, ref mut next)) = stack.last_mut() {
        let cs = level.children(n);
        if *next < cs.len() {
            let c = cs[*next];
            *next += 1;
            let count = omega.entry(c).or_insert(0);
            *count += 1;
            if *count == 1 {
                stack.push((c, 0));
            }
        } else {
            let k = finish.len() as u32;
            finish.insert(n, k);
            stack.pop();
        }
    }
    (omega, finish)
}

impl<L: Level> Float<'_, L> {
    fn is_shared(&self, n: NodeId) -> bool {
        self.level.bindable(n) && (self.omega[&n] > 1 || self.level.forced(n))
    }

    /// Phase 2 for the subtree first reached at `n`.
    fn float(&mut self, n: NodeId) -> Gamma {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.float_inner(n))
    }

    fn float_inner(&mut self, n: NodeId) -> Gamma {
        self.visited.insert(n);
        let mut gamma = Gamma::new();
        let mut saturated = Vec::new();
        let children = self.level.children(n).to_vec();
        for c in children {
            let g = if self.visited.contains(&c) {
                if !self.is_shared(c) {
                    continue;
                }
                Gamma::from([(c, Entry { count: 1, interior: None })])
            } else {
                let g = self.float(c);
                if self.is_shared(c) && self.omega[&c] == 1 {
                    // a forced binding used once: bound right here
                    saturated.push(c);
                }
                g
            };
            self.merge(&mut gamma, g, &mut saturated);
        }
        let mut binds = Vec::new();
        while let Some(s) = saturated.pop() {
            // A saturated entry that a later merge moved (smaller-into-larger
            // swaps move whole maps) is reported again: bind it once.
            let Some(e) = gamma.remove(&s) else { continue };
            binds.push(s);
            self.plan.shared.insert(s);
            if let Some(inner) = e.interior {
                self.merge(&mut gamma, inner, &mut saturated);
            }
        }
        if !binds.is_empty() {
            binds.sort_by_key(|b| self.finish[b]);
            self.plan.binds_at.insert(n, binds);
        }
        if self.is_shared(n) {
            Gamma::from([(n, Entry { count: 1, interior: Some(gamma) })])
        } else {
            gamma
        }
    }

    fn merge(&self, into: &mut Gamma, mut from: Gamma, saturated: &mut Vec<NodeId>) {
        if from.len() > into.len() {
            std::mem::swap(into, &mut from);
        }
        for (k, e) in from {
            let slot = into.entry(k).or_insert(Entry { count: 0, interior: None });
            slot.count += e.count;
            if slot.interior.is_none() {
                slot.interior = e.interior;
            }
            if slot.count == self.omega[&k] && slot.count > 1 {
                saturated.push(k);
            }
        }
    }
}

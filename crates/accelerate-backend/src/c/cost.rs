//! How much work a kernel does per element, roughly, so that the CPU
//! backend runs a launch too small to pay for waking the workers on one
//! (Note [Sequential below a cost]).
//!
//! Note [Sequential below a cost]
//! Splitting a launch among the workers costs a wake-up of each sleeping
//! worker and the cache lines its results cross back in: on the two-core
//! EPYC guest of docs/benchmarks.md, tens of microseconds. A saxpy of
//! 2^18 `f32`s took 26 µs in a plain sequential loop and 66 µs on two
//! rayon workers (`accelerate-bench saxpy --size small`), ours 67 µs. So
//! a launch is cut into chunks of at least `PARALLEL_WORK / cost`
//! elements (and `GRAIN`), where `cost` estimates the work of one element
//! from the kernel's scalar code: a few units per primitive operation,
//! more for divisions and transcendental functions, an array read
//! counting as two, and a loop (`while`), whose trip count is unknown, as
//! much as `PARALLEL_WORK` itself, so that a kernel with a loop is split
//! as finely as before. A launch smaller than two such chunks runs on
//! the calling thread alone (`exec::Call::run`). The
//! estimate is rough; it only has to tell a saxpy of 2^18 elements,
//! which one core streams faster than two can start, from a
//! Black-Scholes of as many, which is worth ten times the wake-up.

use accelerate_ir::{ExpKind, Fun, OpenExp, PrimFun};
use accelerate_plan as plan;

/// Work (in the units of `exp_cost`) below which splitting does not pay:
/// a saxpy element costs about 10 units, so one of 2^18 elements (2.6 M
/// units) runs on one worker, and one of 2^20 (10 M) on two.
pub const PARALLEL_WORK: usize = 3 << 20;

/// A loop, whose trip count is unknown: as much as a whole launch that
/// pays for splitting.
const LOOP: usize = PARALLEL_WORK;

/// The estimated work of one element of a kernel: its loop and each leaf
/// of its result stored, its arguments' delayed index functions and its
/// own scalar code.
pub(crate) fn element_cost(spec: &plan::Kernel) -> usize {
    let mut cost = 2 + spec.out.elt.leaves().len();
    for a in spec.skeleton.args() {
        if let plan::Source::Delayed(d) = &a.source {
            cost = cost.saturating_add(exp_cost(&d.index.body));
        } else {
            cost = cost.saturating_add(2 * a.ty.elt.leaves().len());
        }
    }
    for e in spec.skeleton.scalar_code() {
        cost = cost.saturating_add(exp_cost(e));
    }
    // Note [Scatters one at a time]
    if matches!(&spec.skeleton, plan::Skeleton::Permute(p) if !super::kernel::overwrites(p)) {
        cost = cost.saturating_mul(SCATTER);
    }
    cost.max(1)
}

// Note [Scatters one at a time]
// The units of `exp_cost` were set on streaming loops, which the C
// compiler vectorises and the memory bounds (a saxpy). A permute that
// combines each element into its target reads and writes that target at
// a position computed from the data, one element at a time (the updates
// of one vector could collide), and usually gathers the values it adds
// from positions computed the same way. Each of its elements takes
// several times the time its units estimate: PageRank's step (its links'
// shares `ranks[from] / degree[from]` added into `incoming[to]`, 20000
// vertices, `examples/pagerank`'s formulation) was estimated at 30 units a
// link, so that its 200000 links ran on one worker: 4.8 ms for 10
// iterations, where split between the two workers of the Xeon of
// docs/benchmarks.md they took 3.7 ms; one worker was faster only below
// about 60000 links (the ninth session on issue 21). So a combining
// permute's element counts `SCATTER` times its units.
const SCATTER: usize = 4;

/// The estimated work of evaluating `e` once.
fn exp_cost(e: &OpenExp) -> usize {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        let own = match &e.kind {
            ExpKind::Var(_) | ExpKind::Const(_) | ExpKind::Shape { .. } => 0,
            ExpKind::Let(..) | ExpKind::Tuple(_) | ExpKind::Prj(..) => 0,
            ExpKind::Cond(c, t, f) => {
                return exp_cost(c).saturating_add(exp_cost(t).max(exp_cost(f))).saturating_add(1)
            }
            ExpKind::Index { .. } | ExpKind::LinearIndex { .. } => 2,
            ExpKind::Prim(op, _) => prim_cost(*op),
            ExpKind::While { .. } | ExpKind::ALet(..) => return LOOP,
        };
        let mut sum: usize = own;
        accelerate_ir::visit::each_child(e, |c| sum = sum.saturating_add(exp_cost(c)));
        sum
    })
}

fn prim_cost(op: PrimFun) -> usize {
    use PrimFun::*;
    match op {
        Quot | Rem | IDiv | Mod | FDiv | Sqrt => 8,
        op if op.is_transcendental() => 20,
        op if op.is_shape_op() => 2,
        _ => 1,
    }
}

/// Whether `f` computes anything beyond reading, comparing, testing and
/// converting: an arithmetic operation, a mathematical function or a
/// loop. (A permute's destinations are worth a loop of their own only
/// where they are computed: Note [Destinations by blocks] in
/// `cpu/permute.rs`.)
pub(crate) fn computes(f: &Fun) -> bool {
    accelerate_ir::visit::any_node(&f.body, |e| match &e.kind {
        ExpKind::Prim(op, _) => {
            !(op.is_comparison()
                || op.is_logical()
                || op.is_shape_op()
                || matches!(op, PrimFun::Cast(_) | PrimFun::BitCast(_)))
        }
        ExpKind::While { .. } | ExpKind::ALet(..) => true,
        _ => false,
    })
}

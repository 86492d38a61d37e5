//! Kernels that may write their result over one of their inputs (Note
//! [Updates in place]).
//!
//! Note [Updates in place]
//! A loop that replaces its state each step (Floyd-Warshall's
//! `awhile` of `generate`s over the matrix) writes every step's result to
//! a second matrix: at 1024 x 1024 `i32`s, 4 MiB read and 4 MiB written
//! a step, twice the 2 MiB L2 of a core of the two-core Xeon guest, where
//! a hand-written loop relaxes one matrix in place, half of it per core.
//! On that machine ours took 2.2 to 2.7 times rayon's time, and a profile
//! put 87% of the kernel's samples on the store of the new matrix. On the
//! AMD EPYC guest (1 MiB of L2 a core, 32 MiB of L3) the step in place
//! took 0.66x the time of the step writing a new matrix at n = 640 and
//! 896, 0.75x at 1536, and about the same at 1024 (docs/benchmarks.md,
//! "Updates in place").
//!
//! So a `generate` whose every element reads one input array `v`, of the
//! result's type, only at the element's own position may write its result
//! over `v` when nothing else will read `v` again: each element reads its
//! old value before it stores its new one, and no element reads another's.
//! This file finds such a kernel and its `v` (`in_place_input`); whether
//! `v` is dead is the host's to know when it launches the kernel (Note
//! [Donated arrays] in `backend/host.rs`), and whether the shapes agree
//! and nothing else holds `v`'s buffers, the backend's (a launch that
//! cannot update in place allocates as before). Futhark gets the same from
//! its uniqueness types (`a with [i] = x` consumes `a`); Accelerate writes
//! a new array each step.
//!
//! Reads of `v` at other positions forbid it: Floyd-Warshall's step reads
//! row `k` and column `k` of the matrix it replaces, and writing the
//! matrix in place would let rows read a row `k` that another worker has
//! half rewritten. The fusion pipeline first copies such reads of a line
//! out of `v` (Note [Lines read while written] in `opt/lines.rs`), so that
//! the step reads two vectors and the matrix only at its own positions.
//!
//! Own positions are recognised syntactically, after resolving the
//! function's lets: in the index function, the parameter itself or the
//! tuple of all its components in order; in the linear function,
//! `from_index(shape(v), position)` (the same element, since the launch
//! checks that `v` has the result's shape) or a linear read at the
//! position. A read inside a `while` loop, or anything unrecognised, is
//! taken to read elsewhere.

use crate::{Kernel, Skeleton, Source};
use accelerate_ir::visit::reads_elements;
use accelerate_ir::{ExpKind, Fun, OpenExp, PrimFun};

/// The input variable (of `Kernel::inputs`) kernel `k` may write its
/// result over (Note [Updates in place]), if any: `k` is a `generate` of a
/// delayed array whose two functions read that input only at their own
/// positions, and the input has the result's type.
pub fn in_place_input(k: &Kernel) -> Option<usize> {
    let Skeleton::Generate(g) = &k.skeleton else { return None };
    let Source::Delayed(d) = &g.src.source else { return None };
    let rank = k.out.rank;
    // a rank-0 result is one element: nothing to gain
    if rank == 0 {
        return None;
    }
    k.inputs.iter().filter(|(_, ty)| *ty == k.out).map(|(v, _)| *v).find(|&v| {
        !reads_elements(&d.shape, v)
            && own_reads(&d.index, v, Held::Own, rank)
            && own_reads(&d.linear, v, Held::Pos, rank)
    })
}

/// What a scalar variable of the element function holds, as far as the
/// reads of `v` are concerned.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Held {
    /// The element's own index.
    Own,
    /// Component `c` of it.
    Comp(usize),
    /// The element's row-major position.
    Pos,
    /// Anything else.
    Other,
}

/// Whether function `f` (of one parameter, which holds `param`) reads `v`
/// only at its own position.
fn own_reads(f: &Fun, v: usize, param: Held, rank: usize) -> bool {
    let mut w = Walk { v, rank, env: vec![param], ok: true };
    w.exp(&f.body);
    w.ok
}

struct Walk {
    v: usize,
    rank: usize,
    /// What each scalar variable in scope holds (innermost last).
    env: Vec<Held>,
    /// No read of `v` elsewhere found yet.
    ok: bool,
}

impl Walk {
    /// What `e` evaluates to, checking the reads of `v` inside it.
    fn exp(&mut self, e: &OpenExp) -> Held {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.exp_inner(e))
    }

    fn exp_inner(&mut self, e: &OpenExp) -> Held {
        match &e.kind {
            ExpKind::Var(i) => self.env.len().checked_sub(1 + i).map_or(Held::Other, |j| self.env[j]),
            ExpKind::Let(b, body) => {
                let held = self.exp(b);
                self.env.push(held);
                let r = self.exp(body);
                self.env.pop();
                r
            }
            ExpKind::Tuple(es) => {
                let held: Vec<Held> = es.iter().map(|x| self.exp(x)).collect();
                let own =
                    held.len() == self.rank && held.iter().enumerate().all(|(c, h)| *h == Held::Comp(c));
                if own {
                    Held::Own
                } else {
                    Held::Other
                }
            }
            ExpKind::Prj(c, t) => match self.exp(t) {
                Held::Own => Held::Comp(*c),
                _ => Held::Other,
            },
            ExpKind::Prim(PrimFun::FromIndex, args) if args.len() == 2 => {
                let own_shape = matches!(args[0].kind, ExpKind::Shape { array } if array == self.v);
                let _ = self.exp(&args[0]);
                match self.exp(&args[1]) {
                    Held::Pos if own_shape => Held::Own,
                    _ => Held::Other,
                }
            }
            ExpKind::Index { array, index } => {
                let at = self.exp(index);
                if *array == self.v && at != Held::Own {
                    self.ok = false;
                }
                Held::Other
            }
            ExpKind::LinearIndex { array, index } => {
                let at = self.exp(index);
                if *array == self.v && at != Held::Pos {
                    self.ok = false;
                }
                Held::Other
            }
            ExpKind::While { .. } | ExpKind::ALet(..) => {
                if reads_elements(e, self.v) {
                    self.ok = false;
                }
                Held::Other
            }
            ExpKind::Const(_) | ExpKind::Shape { .. } => Held::Other,
            ExpKind::Prim(_, es) => {
                es.iter().for_each(|x| {
                    self.exp(x);
                });
                Held::Other
            }
            ExpKind::Cond(c, t, x) => {
                self.exp(c);
                self.exp(t);
                self.exp(x);
                Held::Other
            }
        }
    }
}

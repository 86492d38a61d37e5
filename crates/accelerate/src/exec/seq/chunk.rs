//! The chunk program of a sequence: the element function lifted over a
//! chunk of consecutive elements (`trafo::lift::lift_chunk`, the thesis'
//! `f↑`), with each source's element read from its arrays, and the
//! consumer's step fused after it (Note [Sequence programs] in `mod.rs`).
//!
//! Its parameters, outermost first: the arrays the sources read from the
//! enclosing program (the prelude's results, `Source::outer`), the chunk's
//! first index and its length (`Scalar<i64>`s), each source's chunk input
//! (a stream's elements: one array of one more dimension when they share a
//! shape, else their extents, offsets and values; a running scan's
//! values), and the consumer's state.

use super::{ConsumerRt, SourceRt};
use crate::array::{ArrayTy, ArraysTy, EltTy, ScalarTy, ScalarVal, SliceDim, SliceSpec};
use crate::exec::error::{Result, SrcLoc};
use crate::ir::{AccKind, ExpKind, Fun, OpenAcc, OpenExp, PrimFun, Program};

/// Where each part of the chunk program's parameters is, by level.
#[derive(Clone, Debug)]
pub(super) struct Layout {
    pub params: Vec<ArraysTy>,
    /// Per source, the level of its first outer array.
    pub outer_at: Vec<usize>,
    pub start: usize,
    pub count: usize,
    /// Per source, the level of its first chunk input.
    pub input_at: Vec<usize>,
    pub state: Option<usize>,
    /// Per source, whether its chunks are regular (streams only).
    pub regular: Vec<bool>,
}

fn i64s(rank: usize) -> ArraysTy {
    ArraysTy::Array(ArrayTy { rank, elt: EltTy::Scalar(ScalarTy::I64) })
}

/// The chunk program's parameters, for the sources (with, for each stream,
/// whether this variant's chunks of it are regular) and the consumer.
pub(super) fn layout(
    sources: &[SourceRt],
    regular: &[bool],
    outer: &[ArraysTy],
    consumer: &ConsumerRt,
) -> Layout {
    let mut params: Vec<ArraysTy> = outer.to_vec();
    let mut outer_at = Vec::new();
    let mut at = 0;
    for s in sources {
        outer_at.push(at);
        at += s.outer_count();
    }
    let start = params.len();
    params.push(i64s(0));
    let count = params.len();
    params.push(i64s(0));
    let mut input_at = Vec::new();
    for (s, &reg) in sources.iter().zip(regular) {
        input_at.push(params.len());
        match s {
            SourceRt::Stream { ty, .. } if reg => {
                params.push(ArraysTy::Array(ArrayTy { rank: ty.rank + 1, elt: ty.elt.clone() }))
            }
            SourceRt::Stream { ty, .. } => {
                params.extend([i64s(2), i64s(1), ArraysTy::Array(ArrayTy { rank: 1, elt: ty.elt.clone() })])
            }
            SourceRt::Scan { ty, .. } => {
                params.push(ArraysTy::Array(ArrayTy { rank: 1, elt: ty.elt.clone() }))
            }
            _ => {}
        }
    }
    let state = match consumer {
        ConsumerRt::Batch { state_ty, .. } => {
            params.push(state_ty.clone());
            Some(params.len() - 1)
        }
        _ => None,
    };
    Layout { params, outer_at, start, count, input_at, state, regular: regular.to_vec() }
}

/// Terms written at a known depth of array variables.
struct W {
    loc: SrcLoc,
}

impl W {
    fn e(&self, kind: ExpKind) -> OpenExp {
        OpenExp::new(kind, self.loc)
    }
    fn a(&self, kind: AccKind) -> OpenAcc {
        OpenAcc::new(kind, self.loc)
    }
    /// Array variable at `level` seen from `depth` variables.
    fn var(&self, level: usize, depth: usize) -> usize {
        depth - 1 - level
    }
    fn avar(&self, level: usize, depth: usize) -> OpenAcc {
        self.a(AccKind::Var(self.var(level, depth)))
    }
    /// The element of a rank-0 array.
    fn the(&self, level: usize, depth: usize) -> OpenExp {
        self.e(ExpKind::Index {
            array: self.var(level, depth),
            index: Box::new(self.e(ExpKind::Tuple(vec![]))),
        })
    }
    fn lin(&self, level: usize, depth: usize, i: OpenExp) -> OpenExp {
        self.e(ExpKind::LinearIndex { array: self.var(level, depth), index: Box::new(i) })
    }
    fn prim(&self, op: PrimFun, args: Vec<OpenExp>) -> OpenExp {
        self.e(ExpKind::Prim(op, args))
    }
    fn int(&self, x: i64) -> OpenExp {
        self.e(ExpKind::Const(ScalarVal::I64(x)))
    }
    fn slice_outer(&self, array: OpenAcc, rank: usize, i: OpenExp) -> OpenAcc {
        let dims =
            std::iter::once(SliceDim::Fixed).chain(std::iter::repeat_n(SliceDim::All, rank - 1)).collect();
        self.a(AccKind::Slice {
            spec: SliceSpec { any_rank: 0, dims },
            array: Box::new(array),
            slix: self.e(ExpKind::Tuple(vec![i])),
        })
    }
}

/// The chunk program: `elem` (whose parameters are the sources' elements,
/// in order) lifted over the chunk, reading each source's element, then
/// the consumer's step, if it has one, on the chunk's result.
pub(super) fn program(
    sources: &[SourceRt],
    lay: &Layout,
    elem: &Program,
    consumer: &ConsumerRt,
    loc: SrcLoc,
) -> Result<Program> {
    let w = W { loc };
    let p = lay.params.len();
    // inside the chunk's context: the parameters, then j (level p)
    let j = p;
    let mut depth = p + 1;
    // let g = unit (start + j): the element's index in the sequence
    let g = w.a(AccKind::Unit(w.prim(PrimFun::Add, vec![w.the(lay.start, depth), w.the(j, depth)])));
    let g_level = depth;
    let mut lets = vec![g];
    depth += 1;
    for (s, src) in sources.iter().enumerate() {
        let (o, i) = (lay.outer_at[s], lay.input_at[s]);
        let gi = w.the(g_level, depth);
        let term = match src {
            SourceRt::Indices => w.avar(g_level, depth),
            SourceRt::Rows { ty } => w.slice_outer(w.avar(o, depth), ty.rank + 1, gi),
            SourceRt::Segments => {
                // generate (lengths[g]) (\x -> values[offsets[g] + x])
                let (lengths, offsets, values) = (o, o + 1, o + 2);
                let shape = w.e(ExpKind::Tuple(vec![w.lin(lengths, depth, gi.clone())]));
                let x = w.e(ExpKind::Prj(0, Box::new(w.e(ExpKind::Var(0)))));
                let at = w.prim(PrimFun::Add, vec![w.lin(offsets, depth, gi), x]);
                let f = Fun { params: vec![EltTy::shape(1)], body: w.lin(values, depth, at) };
                w.a(AccKind::Generate { shape, f })
            }
            SourceRt::Stream { ty, .. } if lay.regular[s] => {
                w.slice_outer(w.avar(i, depth), ty.rank + 1, w.the(j, depth))
            }
            SourceRt::Stream { ty, .. } => {
                // generate (extents[j, ..]) (\ix -> values[offsets[j] + toIndex sh ix])
                let (extents, offsets, values) = (i, i + 1, i + 2);
                let shape = |w: &W| {
                    let comps = (0..ty.rank)
                        .map(|c| {
                            let ix = w.e(ExpKind::Tuple(vec![w.the(j, depth), w.int(c as i64)]));
                            w.e(ExpKind::Index { array: w.var(extents, depth), index: Box::new(ix) })
                        })
                        .collect();
                    w.e(ExpKind::Tuple(comps))
                };
                let local = w.prim(PrimFun::ToIndex, vec![shape(&w), w.e(ExpKind::Var(0))]);
                let at = w.prim(PrimFun::Add, vec![w.lin(offsets, depth, w.the(j, depth)), local]);
                let f = Fun { params: vec![EltTy::shape(ty.rank)], body: w.lin(values, depth, at) };
                w.a(AccKind::Generate { shape: shape(&w), f })
            }
            SourceRt::Scan { .. } => w.a(AccKind::Unit(w.lin(i, depth, w.the(j, depth)))),
        };
        lets.push(term);
        depth += 1;
    }
    let body = lets
        .into_iter()
        .rev()
        .fold(elem.body.clone(), |body, b| OpenAcc::new(AccKind::Let(Box::new(b), Box::new(body)), loc));
    let count = w.the(lay.count, p);
    let lifted = crate::trafo::lift::lift_chunk(&lay.params, count, &body)?;
    let body = match (consumer, lay.state) {
        (ConsumerRt::Batch { step, .. }, Some(state)) => {
            // let r = lifted; s = state; e = r.0.0; v = r.0.1 in step
            let prj = |i: usize, t: OpenAcc| w.a(AccKind::Prj(i, Box::new(t)));
            let s = w.avar(state, p + 1);
            let e = prj(0, prj(0, w.a(AccKind::Var(1))));
            let v = prj(1, prj(0, w.a(AccKind::Var(2))));
            let mut body = step.body.clone();
            for b in [v, e, s, lifted] {
                body = OpenAcc::new(AccKind::Let(Box::new(b), Box::new(body)), loc);
            }
            body
        }
        _ => lifted,
    };
    Ok(Program { params: lay.params.clone(), body })
}

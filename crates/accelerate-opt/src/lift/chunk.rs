//! The lifted form of a sequence's element computation over a chunk: the
//! sequences thesis' `f↑` (§5.1.1: `f↑ = mapSeq f` over a chunk of
//! consecutive elements), so that a chunk of `k` elements is computed by
//! one flat program, one launch per kernel, never one per element.
//!
//! The element computation is an array term whose innermost array
//! variable is the element's index in the chunk (a `Scalar<i64>`); the
//! context is one dimension of `k` indices. The term is lifted as any
//! array term inside a parallel context (`Lifter::array`, Note [Lifted
//! forms]); then each component of its result (a tuple of arrays is
//! lifted component by component, through its `let`s) is written in the
//! one form every chunk result takes, the segmented form (Note [Chunk
//! results]).
//!
//! Note [Chunk results]
//! Each array of an element's result becomes a pair: its extents, a
//! matrix of `k` rows of `rank` `i64`s (row `j` the shape of element
//! `j`), and its values, a vector of every element's values in row-major
//! order, element after element. A regular result (every element the
//! same shape: lifted over the chunk's dimension, or not depending on it
//! at all) is its lifted array reshaped, with no copy; an irregular one
//! (an extent that depends on the element) is materialised from its
//! element function (`Lifter::materialise_irregular`). The sequence
//! runtime splits the values at the offsets it computes from the shapes.

use super::*;

/// The flat program computing the element term `body` for each of the
/// `count` indices of a chunk. `body`'s array environment is `outer`
/// followed by the index (a `Scalar<i64>`, variable 0); `count` is an
/// `i64` expression of `outer`'s arrays. The result is a tuple with one
/// `(extents, values)` pair per array of the element's result, in order
/// (Note [Chunk results]), a term in the environment `outer`.
pub fn lift_chunk(outer: &[ArraysTy], count: OpenExp, body: &OpenAcc) -> Result<OpenAcc> {
    let loc = body.loc;
    let mut l = Lifter::new(outer);
    let frame = l.new_dims(tuple(vec![count], loc), 1, loc);
    let index = prj(0, e(ExpKind::Var(0), loc), loc);
    let g = l.generate_frame(&frame, index, loc)?;
    let idx = l.emit(g);
    l.abinds.push(ABind::Lifted { arr: idx, dims: frame.clone(), inner: 0 });
    let mut comps = Vec::new();
    l.components(body, &mut comps)?;
    let mut pairs = Vec::new();
    for b in &comps {
        pairs.push(l.segmented(b, &frame, loc)?);
    }
    let result = acc(
        AccKind::Tuple(
            pairs
                .into_iter()
                .map(|(s, v)| acc(AccKind::Tuple(vec![l.avar_term(s, loc), l.avar_term(v, loc)]), loc))
                .collect(),
        ),
        loc,
    );
    Ok(l.lets.into_iter().rev().fold(result, |body, b| {
        let l = b.loc;
        acc(AccKind::Let(Box::new(b), Box::new(body)), l)
    }))
}

impl Lifter<'_> {
    /// The lifted arrays of an element's result, one per array of its
    /// type: through `let`s and tuples (a sequence of tuples of arrays).
    fn components(&mut self, a: &OpenAcc, out: &mut Vec<ABind>) -> Result<()> {
        match &a.kind {
            AccKind::Let(b, body) if !matches!(b.kind, AccKind::Tuple(_)) => {
                let v = self.let_bound(b)?;
                self.abinds.push(v);
                let r = self.components(body, out);
                self.abinds.pop();
                r
            }
            AccKind::Tuple(cs) => cs.iter().try_for_each(|c| self.components(c, out)),
            AccKind::Prj(i, t) => match &t.kind {
                AccKind::Tuple(cs) => self.components(&cs[*i], out),
                _ => Err(unsupported(a.loc, "a sequence element that projects a tuple of arrays")),
            },
            _ => {
                out.push(self.array(a)?);
                Ok(())
            }
        }
    }

    /// The extents and values of a lifted array over the chunk's
    /// dimension `frame` (Note [Chunk results]): their levels.
    fn segmented(&mut self, b: &ABind, frame: &[usize], loc: SrcLoc) -> Result<(usize, usize)> {
        let rank = b.inner();
        let k = self.extent(frame[0])?;
        // the extents: row j is element j's shape, read by `shape_of_j`
        // (a function of j, the output's scalar variable 0 of 2: (j, c))
        let extents = |this: &mut Lifter, shape_of_j: OpenExp| -> Result<usize> {
            let c = prj(1, e(ExpKind::Var(1), loc), loc);
            let mut pick = prj(rank.saturating_sub(1), e(ExpKind::Var(0), loc), loc);
            for i in (0..rank.saturating_sub(1)).rev() {
                let is_i =
                    prim(PrimFun::Eq, vec![c.clone(), e(ExpKind::Const(ScalarVal::I64(i as i64)), loc)], loc);
                pick = e(
                    ExpKind::Cond(
                        Box::new(is_i),
                        Box::new(prj(i, e(ExpKind::Var(0), loc), loc)),
                        Box::new(pick),
                    ),
                    loc,
                );
            }
            if rank == 0 {
                pick = e(ExpKind::Const(ScalarVal::I64(0)), loc);
            }
            let body = e(ExpKind::Let(Box::new(shape_of_j), Box::new(pick)), loc);
            let shape =
                tuple(vec![this.extent(frame[0])?, e(ExpKind::Const(ScalarVal::I64(rank as i64)), loc)], loc);
            Ok(this.emit(generate(shape, 2, body, loc)))
        };
        match b {
            ABind::Irregular { shapes, dims, .. } => {
                if dims.as_slice() != frame {
                    return Err(Error::Internal(format!("lifting: an irregular chunk result over {dims:?}")));
                }
                let j = prj(0, e(ExpKind::Var(0), loc), loc);
                let read = e(
                    ExpKind::Index { array: self.avar(*shapes), index: Box::new(tuple(vec![j], loc)) },
                    loc,
                );
                let ext = extents(self, read)?;
                let (_, values) = self.materialise_irregular(b, loc)?;
                Ok((ext, values))
            }
            ABind::Lifted { arr, dims, inner } => {
                if dims.as_slice() != frame {
                    return Err(Error::Internal(format!("lifting: a chunk result over {dims:?}")));
                }
                let (arr, inner) = (*arr, *inner);
                let shape = e(ExpKind::Shape { array: self.avar(arr) }, loc);
                let own = tuple((0..inner).map(|c| prj(1 + c, shape.clone(), loc)).collect(), loc);
                let ext = extents(self, own)?;
                let flat = self.flat(arr, loc);
                Ok((ext, flat))
            }
            ABind::Avoided { arr, rank } => {
                // the same array for every element of the chunk
                let arr = *arr;
                let shape = e(ExpKind::Shape { array: self.avar(arr) }, loc);
                let ext = extents(self, shape)?;
                let spec = SliceSpec {
                    any_rank: 0,
                    dims: std::iter::once(SliceDim::Fixed)
                        .chain(std::iter::repeat_n(SliceDim::All, *rank))
                        .collect(),
                };
                let rep = self.emit(acc(
                    AccKind::Replicate {
                        spec,
                        slix: tuple(vec![k], loc),
                        array: Box::new(self.avar_term(arr, loc)),
                    },
                    loc,
                ));
                let flat = self.flat(rep, loc);
                Ok((ext, flat))
            }
        }
    }

    /// A manifest array as a vector of its elements (a reshape: no copy).
    fn flat(&mut self, arr: usize, loc: SrcLoc) -> usize {
        let size = prim(PrimFun::ShapeSize, vec![e(ExpKind::Shape { array: self.avar(arr) }, loc)], loc);
        self.emit(acc(
            AccKind::Reshape { shape: tuple(vec![size], loc), array: Box::new(self.avar_term(arr, loc)) },
            loc,
        ))
    }
}

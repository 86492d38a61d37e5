//! The operands of a tiled reduction that every row of a tile reads
//! alike, copied once a block into a buffer of consecutive elements
//! (Note [Packed operands]).

use accelerate_base::array::ty::{EltTy, ScalarTy};
use accelerate_ir::prim::PrimFun;
use accelerate_ir::term::{DelayedArray, ExpKind, Fun, OpenExp};

// Note [Packed operands]
// A tile of a product (Note [Tiles in registers] in `fold.rs`) reads, at
// each step `k` of the shared dimension, a run of `b`'s row `k`: 64
// `f32` of a row of a 1024 x 1024 matrix, so that the block of `b` a
// tile group walks is a column of runs 4 KiB apart. Those runs fall in
// the same few sets of the first-level cache (and each on its own page),
// so the block of 256 steps that should stay in L1 for every tile of the
// chunk (Note [Blocks of the shared dimension]) is read from L2 at every
// step. BLAS packs `b` for this reason (Goto and van de Geijn,
// "Anatomy of high-performance matrix multiplication", 2008), and so
// does the benchmark's rayon version. Here the source of a tiled fold is any
// delayed array, so what is packed is found in its element function:
// the reads of an array (`Index`) whose position depends on the index's
// column and not on its row, made wherever the element is computed (not
// under a condition's branch, a short-circuit operator's second operand
// or a loop, where the tiles might not make them). Before the tiles of
// each block, a loop makes those reads for the block's steps and the
// run's columns into a buffer on the stack, `(k - kb) * run + q`, and
// the tiles' element function takes them from there as parameters. The
// buffer holds exactly the reads the tiles would make (every tile reads
// every step of the block at every column of the run), so it raises no
// error the tiles would not, and each element is the same expression of
// the same values: the result is the same to the bit. A C model of the
// benchmark's 1024^3 tiles (half the rows on one core of the Intel
// guest, best of 15): with fused multiply-adds (fast math), 9.1 to 9.4
// ms, packed 8.0 to 8.4; without (the IEEE default, where the adds and
// multiplies share the two vector ports) 11.8 to 12.5 and 11.6 to 12.2.
// In the library (`accelerate-bench matmul --size large`, two workers,
// medians of two runs each) the fast-math product went from 10.8 ms to
// 9.9 with 64 KiB blocks and to 8.8 and 8.9 with 32 KiB ones (Note
// [Blocks of the shared dimension]), JAX's 8.4 to 9.6 in the same runs;
// the IEEE product from 13.3 to 13.6 to 12.8 and 13.2.

/// Bytes of packed reads a block may hold: a block's reads of one `f32`
/// operand with AVX-512's runs of 64 and blocks of 256 steps.
pub(super) const PACKED_BYTES: usize = 64 * 1024;

/// The reads a tiled fold's source makes alike for every row of a tile,
/// and its element function with them as parameters (Note [Packed
/// operands]).
#[derive(Debug)]
pub(super) struct Packed {
    /// The reads alone, a function of the source's index giving their
    /// tuple (a leaf each).
    pub reads: Fun,
    /// The element type of each read.
    pub tys: Vec<ScalarTy>,
    /// The source's element: the reads' values, then the index.
    pub element: Fun,
}

/// The reads of `d`'s element function (of rank `rank`, at least 3) that
/// can be packed, as many as `bytes_per_step` bytes a step and column
/// allow (`elt_of` gives the element type of an array variable); `None`
/// if there are none.
pub(super) fn packed(
    d: &DelayedArray,
    elt_of: impl Fn(usize) -> Option<EltTy>,
    bytes_per_step: usize,
) -> Option<Packed> {
    let rank = d.rank();
    if rank < 3 || d.index.params.len() != 1 {
        return None;
    }
    let (row, col) = (rank - 3, rank - 2);
    let mut found = Vec::new();
    candidates(&d.index.body, 0, row, col, &mut found);
    let mut chosen: Vec<(&OpenExp, usize, ScalarTy)> = Vec::new();
    let mut bytes = 0;
    for (e, depth) in found {
        let ExpKind::Index { array, .. } = &e.kind else { continue };
        let Some(EltTy::Scalar(t)) = elt_of(*array) else { continue };
        if bytes + t.size_bytes() > bytes_per_step {
            continue;
        }
        bytes += t.size_bytes();
        chosen.push((e, depth, t));
    }
    if chosen.is_empty() {
        return None;
    }
    let alone = chosen.iter().map(|&(e, depth, _)| rebase(e, 0, depth)).collect::<Option<Vec<_>>>()?;
    let loc = d.index.body.loc;
    let reads = Fun { params: d.index.params.clone(), body: OpenExp { kind: ExpKind::Tuple(alone), loc } };
    let targets: Vec<*const OpenExp> = chosen.iter().map(|&(e, _, _)| e as *const OpenExp).collect();
    let body = replace(&d.index.body, 0, &targets);
    let tys: Vec<ScalarTy> = chosen.iter().map(|&(_, _, t)| t).collect();
    let params = tys.iter().map(|&t| EltTy::Scalar(t)).chain(d.index.params.iter().cloned()).collect();
    Some(Packed { reads, tys, element: Fun { params, body } })
}

/// The reads in `e` (under `depth` binders of the element function)
/// made wherever `e` is, whose position reads the index's column `col`
/// and not its row `row`, with their depths.
fn candidates<'a>(e: &'a OpenExp, depth: usize, row: usize, col: usize, out: &mut Vec<(&'a OpenExp, usize)>) {
    match &e.kind {
        ExpKind::Index { index, .. } => {
            let mut column = false;
            if of_index(index, 0, depth, row, col, &mut column) && column {
                out.push((e, depth));
            }
        }
        ExpKind::Let(b, body) => {
            candidates(b, depth, row, col, out);
            candidates(body, depth + 1, row, col, out);
        }
        ExpKind::Tuple(es) => es.iter().for_each(|x| candidates(x, depth, row, col, out)),
        ExpKind::Prim(p, es) => {
            // the second operand of `&&` and `||` is made only sometimes
            let n = if matches!(p, PrimFun::LAnd | PrimFun::LOr) { 1 } else { es.len() };
            es.iter().take(n).for_each(|x| candidates(x, depth, row, col, out));
        }
        ExpKind::Prj(_, t) => candidates(t, depth, row, col, out),
        ExpKind::Cond(c, _, _) => candidates(c, depth, row, col, out),
        _ => {}
    }
}

/// Whether `e`, an index expression under `local` binders of its own and
/// `outer` of the element function, reads the function's index only
/// through its components other than `row`, and is arithmetic on those
/// alone (no read, no condition, no loop); `column` is set where it
/// reads component `col`.
fn of_index(e: &OpenExp, local: usize, outer: usize, row: usize, col: usize, column: &mut bool) -> bool {
    let is_param = |v: usize, local: usize| v >= local && v - local == outer;
    match &e.kind {
        ExpKind::Const(_) | ExpKind::Shape { .. } => true,
        // a variable bound inside the expression; any other is the
        // index as a whole, or a variable of the element function
        ExpKind::Var(v) => *v < local,
        ExpKind::Prj(c, t) => match &t.kind {
            ExpKind::Var(v) if is_param(*v, local) => {
                *column |= *c == col;
                *c != row
            }
            _ => of_index(t, local, outer, row, col, column),
        },
        ExpKind::Tuple(es) => es.iter().all(|x| of_index(x, local, outer, row, col, column)),
        ExpKind::Prim(p, es) => {
            !matches!(p, PrimFun::LAnd | PrimFun::LOr)
                && es.iter().all(|x| of_index(x, local, outer, row, col, column))
        }
        ExpKind::Let(b, body) => {
            of_index(b, local, outer, row, col, column) && of_index(body, local + 1, outer, row, col, column)
        }
        _ => false,
    }
}

/// `e`, a read whose free variables are all the element function's
/// index (`of_index`), moved from under `by` binders to the top of a
/// function of that index alone: each free variable `by` less.
fn rebase(e: &OpenExp, local: usize, by: usize) -> Option<OpenExp> {
    let kind = match &e.kind {
        ExpKind::Var(v) if *v >= local => ExpKind::Var(v.checked_sub(by)?),
        ExpKind::Var(_) | ExpKind::Const(_) | ExpKind::Shape { .. } => e.kind.clone(),
        ExpKind::Prj(c, t) => ExpKind::Prj(*c, Box::new(rebase(t, local, by)?)),
        ExpKind::Tuple(es) => ExpKind::Tuple(es.iter().map(|x| rebase(x, local, by)).collect::<Option<_>>()?),
        ExpKind::Prim(p, es) => {
            ExpKind::Prim(*p, es.iter().map(|x| rebase(x, local, by)).collect::<Option<_>>()?)
        }
        ExpKind::Let(b, body) => {
            ExpKind::Let(Box::new(rebase(b, local, by)?), Box::new(rebase(body, local + 1, by)?))
        }
        ExpKind::Index { array, index } => {
            ExpKind::Index { array: *array, index: Box::new(rebase(index, local, by)?) }
        }
        _ => return None,
    };
    Some(OpenExp { kind, loc: e.loc })
}

/// The element function's body `e` (under `depth` of its binders) with
/// each read of `targets` replaced by its parameter: the `m` parameters
/// come before the index, so read `i` is variable `depth + m - i`.
fn replace(e: &OpenExp, depth: usize, targets: &[*const OpenExp]) -> OpenExp {
    if let Some(i) = targets.iter().position(|&t| std::ptr::eq(t, e)) {
        return OpenExp { kind: ExpKind::Var(depth + targets.len() - i), loc: e.loc };
    }
    let go = |x: &OpenExp, d: usize| Box::new(replace(x, d, targets));
    let kind = match &e.kind {
        ExpKind::Let(b, body) => ExpKind::Let(go(b, depth), go(body, depth + 1)),
        ExpKind::Tuple(es) => ExpKind::Tuple(es.iter().map(|x| replace(x, depth, targets)).collect()),
        ExpKind::Prim(p, es) => ExpKind::Prim(*p, es.iter().map(|x| replace(x, depth, targets)).collect()),
        ExpKind::Prj(c, t) => ExpKind::Prj(*c, go(t, depth)),
        ExpKind::Cond(c, t, x) => ExpKind::Cond(go(c, depth), t.clone(), x.clone()),
        // (the reads replaced are nowhere else: `candidates`)
        _ => e.kind.clone(),
    };
    OpenExp { kind, loc: e.loc }
}

#[cfg(test)]
mod tests {
    use super::*;
    use accelerate_base::error::SrcLoc;

    fn x(kind: ExpKind) -> OpenExp {
        OpenExp { kind, loc: SrcLoc::caller() }
    }
    fn var(v: usize) -> OpenExp {
        x(ExpKind::Var(v))
    }
    fn prj(c: usize, t: OpenExp) -> OpenExp {
        x(ExpKind::Prj(c, Box::new(t)))
    }
    fn read(array: usize, ix: Vec<OpenExp>) -> OpenExp {
        x(ExpKind::Index { array, index: Box::new(x(ExpKind::Tuple(ix))) })
    }

    /// `\(i, j, k) -> a[i, k] * b[k, j]`, as the benchmark's product is
    /// fused: `a` is array 0, `b` array 1.
    fn product() -> DelayedArray {
        let body = x(ExpKind::Prim(
            PrimFun::Mul,
            vec![
                read(0, vec![prj(0, var(0)), prj(2, var(0))]),
                read(1, vec![prj(2, var(0)), prj(1, var(0))]),
            ],
        ));
        let index = Fun { params: vec![EltTy::shape(3)], body };
        DelayedArray { shape: x(ExpKind::Shape { array: 0 }), linear: index.clone(), index }
    }

    #[test]
    fn the_read_of_the_column_alone_is_packed() {
        let p = packed(&product(), |_| Some(EltTy::Scalar(ScalarTy::F32)), 4).expect("packed");
        assert_eq!(p.tys, vec![ScalarTy::F32]);
        // the read of b, alone
        let ExpKind::Tuple(alone) = &p.reads.body.kind else { panic!("{:?}", p.reads.body) };
        let ExpKind::Index { array: 1, .. } = &alone[0].kind else { panic!("{:?}", alone[0]) };
        // the element reads a, and takes b's element as parameter 1
        let ExpKind::Prim(_, args) = &p.element.body.kind else { panic!() };
        assert!(matches!(args[0].kind, ExpKind::Index { array: 0, .. }));
        assert!(matches!(args[1].kind, ExpKind::Var(1)));
        assert_eq!(p.element.params.len(), 2);
    }

    #[test]
    fn nothing_is_packed_beyond_the_budget_or_for_tuples() {
        assert!(packed(&product(), |_| Some(EltTy::Scalar(ScalarTy::F64)), 4).is_none());
        let pair = EltTy::Tuple(vec![EltTy::Scalar(ScalarTy::F32); 2]);
        assert!(packed(&product(), |_| Some(pair.clone()), 64).is_none());
    }

    #[test]
    fn reads_of_the_row_under_a_binder_or_in_a_branch_are_not_packed() {
        // \ix -> let y = ix in b[y.2, y.1]: the index as a whole
        let mut d = product();
        d.index.body =
            x(ExpKind::Let(Box::new(var(0)), Box::new(read(1, vec![prj(2, var(0)), prj(1, var(0))]))));
        assert!(packed(&d, |_| Some(EltTy::Scalar(ScalarTy::F32)), 4).is_none());
        // \ix -> if c then b[ix.2, ix.1] else 0
        let cond = x(ExpKind::Const(accelerate_base::array::value::ScalarVal::Bool(true)));
        let zero = x(ExpKind::Const(accelerate_base::array::value::ScalarVal::F32(0.0)));
        d.index.body = x(ExpKind::Cond(
            Box::new(cond),
            Box::new(read(1, vec![prj(2, var(0)), prj(1, var(0))])),
            Box::new(zero),
        ));
        assert!(packed(&d, |_| Some(EltTy::Scalar(ScalarTy::F32)), 4).is_none());
    }

    #[test]
    fn a_read_under_a_let_takes_the_parameter_past_the_binders() {
        // \ix -> let s = 2.0 in s * b[ix.2, ix.1]
        let mut d = product();
        let two = x(ExpKind::Const(accelerate_base::array::value::ScalarVal::F32(2.0)));
        let mul = x(ExpKind::Prim(PrimFun::Mul, vec![var(0), read(1, vec![prj(2, var(1)), prj(1, var(1))])]));
        d.index.body = x(ExpKind::Let(Box::new(two), Box::new(mul)));
        let p = packed(&d, |_| Some(EltTy::Scalar(ScalarTy::F32)), 4).expect("packed");
        // alone, the read's index is variable 0 again
        let ExpKind::Tuple(alone) = &p.reads.body.kind else { panic!() };
        let ExpKind::Index { index, .. } = &alone[0].kind else { panic!() };
        let ExpKind::Tuple(ix) = &index.kind else { panic!() };
        assert!(matches!(&ix[0].kind, ExpKind::Prj(2, v) if matches!(v.kind, ExpKind::Var(0))));
        // in the element, under one binder: s is 0, the index 1, the read 2
        let ExpKind::Let(_, body) = &p.element.body.kind else { panic!() };
        let ExpKind::Prim(_, args) = &body.kind else { panic!() };
        assert!(matches!(args[1].kind, ExpKind::Var(2)));
    }
}

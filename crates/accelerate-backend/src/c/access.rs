//! Access patterns: how the array reads of a delayed array's element move
//! in memory as one component of its index steps by one. A reduction asks
//! it to choose its loop order (Note [Column blocks] in `cpu/fold.rs`).
//!
//! The analysis follows each value's dependence on three components of
//! the index, `i`, `j` and `k` (the last three), through the element
//! function: a value does not depend on a component, or is that component
//! plus a term that does not depend on it (`j + 3`, `k + n * i`), or
//! depends on it in any other way (`2 * k`, `k / 2`, a value read at an
//! index that depends on it). A read of an array then moves by one
//! element as the component steps (contiguous), not at all (invariant),
//! or any other way (far: a stride of a row or more, or a gather).
//! Anything the analysis does not follow (a loop, a nested array) counts
//! as depending in any other way, so that it answers "far" when unsure.

use accelerate_ir::{DelayedArray, ExpKind, Fun, OpenExp, PrimFun};

/// How a value depends on one component of the index.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dep {
    None,
    /// The component plus a term that does not depend on it.
    Unit,
    Other,
}

impl Dep {
    fn plus(self, other: Dep) -> Dep {
        match (self, other) {
            (Dep::None, d) | (d, Dep::None) => d,
            _ => Dep::Other,
        }
    }

    fn any(self) -> Dep {
        if self == Dep::None {
            Dep::None
        } else {
            Dep::Other
        }
    }
}

/// The components followed: `i`, `j` and `k`.
const N: usize = 3;
const ALL: [usize; N] = [0, 1, 2];

/// A value's dependence on `i`, `j` and `k`, leaf by leaf.
#[derive(Clone, PartialEq, Eq, Debug)]
enum Abs {
    Scalar([Dep; N]),
    Tuple(Vec<Abs>),
}

const INVARIANT: Abs = Abs::Scalar([Dep::None; N]);
const UNKNOWN: Abs = Abs::Scalar([Dep::Other; N]);

impl Abs {
    /// Whether the value depends on each component at all: `Other` where
    /// any leaf does.
    fn any(&self) -> [Dep; N] {
        match self {
            Abs::Scalar(d) => d.map(Dep::any),
            Abs::Tuple(xs) => xs.iter().fold([Dep::None; N], |a, x| {
                let d = x.any();
                ALL.map(|v| a[v].plus(d[v]).any())
            }),
        }
    }

    /// A value that is `self` or `other` (the branches of a conditional).
    fn join(&self, other: &Abs) -> Abs {
        match (self, other) {
            (Abs::Tuple(xs), Abs::Tuple(ys)) if xs.len() == ys.len() => {
                Abs::Tuple(xs.iter().zip(ys).map(|(x, y)| x.join(y)).collect())
            }
            (Abs::Scalar(x), Abs::Scalar(y)) => {
                Abs::Scalar(ALL.map(|v| if x[v] == y[v] { x[v] } else { Dep::Other }))
            }
            _ => UNKNOWN,
        }
    }

    /// A value that depends in any way on each component `self` depends on.
    fn opaque(&self) -> Abs {
        Abs::Scalar(self.any())
    }
}

/// Where one array read moves as a component steps.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Step {
    Invariant,
    Contiguous,
    Far,
}

/// For each array read of a delayed array's element, where it moves as
/// each of the last three components of the index steps (the third from
/// last is invariant at rank 2). `None` for an array of rank below 2.
fn steps(d: &DelayedArray) -> Option<Vec<[Step; N]>> {
    let rank = d.rank();
    if rank < 2 {
        return None;
    }
    let mut reads = Vec::new();
    let mut env = vec![index_of(rank)];
    go(&d.index.body, &mut env, &mut reads);
    Some(reads)
}

/// The value of an index of rank `rank`: each of its last three
/// components is `i`, `j` or `k`.
fn index_of(rank: usize) -> Abs {
    let ix = (0..rank)
        .map(|c| {
            let mut d = [Dep::None; N];
            if rank - c <= N {
                d[N - (rank - c)] = Dep::Unit;
            }
            Abs::Scalar(d)
        })
        .collect();
    Abs::Tuple(ix)
}

/// The value of `e` where `env` holds the values of its variables
/// (innermost last); pushes where each array read in it moves.
fn go(e: &OpenExp, env: &mut Vec<Abs>, reads: &mut Vec<[Step; N]>) -> Abs {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &e.kind {
        ExpKind::Var(i) => env.len().checked_sub(i + 1).map_or(UNKNOWN, |p| env[p].clone()),
        ExpKind::Const(_) | ExpKind::Shape { .. } => INVARIANT,
        ExpKind::Let(bound, body) => {
            let v = go(bound, env, reads);
            env.push(v);
            let r = go(body, env, reads);
            env.pop();
            r
        }
        ExpKind::Tuple(es) => Abs::Tuple(es.iter().map(|x| go(x, env, reads)).collect()),
        ExpKind::Prj(i, t) => match go(t, env, reads) {
            Abs::Tuple(mut xs) if *i < xs.len() => xs.swap_remove(*i),
            other => other.opaque(),
        },
        ExpKind::Cond(c, t, x) => {
            go(c, env, reads);
            let a = go(t, env, reads);
            a.join(&go(x, env, reads))
        }
        ExpKind::Prim(p, args) => {
            let xs: Vec<Abs> = args.iter().map(|a| go(a, env, reads)).collect();
            prim(*p, &xs)
        }
        ExpKind::Index { index, .. } => {
            let ix = go(index, env, reads);
            reads.push(index_steps(&ix));
            ix.opaque()
        }
        ExpKind::LinearIndex { index, .. } => {
            let p = go(index, env, reads);
            reads.push(position_steps(&p));
            p.opaque()
        }
        ExpKind::While { cond, body, init } => {
            go(init, env, reads);
            for f in [cond, body] {
                under_unknown(f, env, reads);
            }
            UNKNOWN
        }
        ExpKind::ALet(..) => {
            reads.push([Step::Far; N]);
            UNKNOWN
        }
    })
}

/// The reads of a function whose arguments are not followed.
fn under_unknown(f: &Fun, env: &mut Vec<Abs>, reads: &mut Vec<[Step; N]>) {
    let depth = env.len();
    env.extend(f.params.iter().map(|_| UNKNOWN));
    go(&f.body, env, reads);
    env.truncate(depth);
}

/// The value of a primitive applied to values.
fn prim(p: PrimFun, xs: &[Abs]) -> Abs {
    let scalars = |xs: &[Abs]| -> Option<Vec<[Dep; N]>> {
        xs.iter().map(|x| if let Abs::Scalar(d) = x { Some(*d) } else { None }).collect()
    };
    let joined =
        || Abs::Scalar(xs.iter().fold([Dep::None; N], |a, x| ALL.map(|v| a[v].plus(x.any()[v]).any())));
    match (p, scalars(xs).as_deref()) {
        (PrimFun::Add, Some([x, y])) => Abs::Scalar(ALL.map(|v| x[v].plus(y[v]))),
        (PrimFun::Sub, Some([x, y])) => {
            Abs::Scalar(ALL.map(|v| if y[v] == Dep::None { x[v] } else { Dep::Other }))
        }
        // an integer index stays an index (a wrap needs 2^31 elements)
        (PrimFun::Cast(t), Some([x])) if t.is_integral() => Abs::Scalar(*x),
        (PrimFun::ToIndex, _) => match xs {
            [_, ix] => Abs::Scalar(position_of(ix)),
            _ => joined(),
        },
        _ => joined(),
    }
}

/// How the row-major position of an index depends on each component: as
/// its last component, where only that one depends.
fn position_of(ix: &Abs) -> [Dep; N] {
    match ix {
        Abs::Tuple(cs) if !cs.is_empty() => ALL.map(|v| {
            let (last, rest) = cs.split_last().expect("not empty");
            let rest = rest.iter().fold(Dep::None, |a, c| a.plus(c.any()[v]).any());
            match (rest, last) {
                (Dep::None, Abs::Scalar(d)) => d[v],
                (Dep::None, other) => other.any()[v],
                _ => Dep::Other,
            }
        }),
        other => other.any(),
    }
}

/// Where a read at a multidimensional index moves.
fn index_steps(ix: &Abs) -> [Step; N] {
    position_steps(&Abs::Scalar(position_of(ix)))
}

/// Where a read at a row-major position moves.
fn position_steps(p: &Abs) -> [Step; N] {
    let d = match p {
        Abs::Scalar(d) => *d,
        other => other.any(),
    };
    d.map(|d| match d {
        Dep::None => Step::Invariant,
        Dep::Unit => Step::Contiguous,
        Dep::Other => Step::Far,
    })
}

/// Whether a reduction over the rows of `d` (its last component) reads
/// memory better a block of neighbouring rows at a time, a row per lane
/// (Note [Column blocks] in `cpu/fold.rs`): some read is far along a
/// row, and every read is contiguous or invariant across rows (along the
/// last but one component). And whether such blocks pay further as tiles
/// of several runs of rows: some read that is far along a row is the same
/// for every run (invariant along the third component from last), so
/// that a tile reads it once for all its runs.
pub(crate) fn column_blocks_pay(d: &DelayedArray) -> (bool, bool) {
    let Some(reads) = steps(d) else { return (false, false) };
    let far = |s: &Step| *s == Step::Far;
    let blocks = reads.iter().any(|[_, _, k]| far(k)) && reads.iter().all(|[_, j, _]| !far(j));
    let tiles = blocks && d.rank() >= 3 && reads.iter().any(|[i, _, k]| far(k) && *i == Step::Invariant);
    (blocks, tiles)
}

/// Whether a reduction of a delayed array of rank `rank` (3 or more)
/// pays as tiles once `packed` of its reads are packed (Note [Packed
/// operands] in `cpu/packed.rs`): `element` is its element function with
/// those reads' values as its first parameters, each the same for every
/// run of a tile and otherwise taken to depend on the row and the step in
/// any way. The reads left must be contiguous or invariant across rows,
/// as for column blocks; the packed ones need not be, since the packing
/// loop lays each block of them out by row (a product with `b`
/// transposed, `a b^T`, reads `b`'s rows far apart across the rows of the
/// result).
pub(crate) fn tiles_pay_packed(element: &Fun, packed: usize, rank: usize) -> bool {
    if rank < N || packed == 0 {
        return false;
    }
    let value = Abs::Scalar([Dep::None, Dep::Other, Dep::Other]);
    let mut env = vec![value; packed];
    env.push(index_of(rank));
    let mut reads = Vec::new();
    go(&element.body, &mut env, &mut reads);
    reads.iter().all(|[_, j, _]| *j != Step::Far)
}

/// Whether a producer of rank 2 or more writes its rows better a tile at
/// a time (Note [Tiled rows] in `cpu/generate.rs`): some read moves by
/// one element from row to row and far along a row, as a transpose reads.
pub(crate) fn tiles_pay(d: &DelayedArray) -> bool {
    steps(d).is_some_and(|reads| reads.iter().any(|[_, j, k]| *k == Step::Far && *j == Step::Contiguous))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(j: Dep, k: Dep) -> Abs {
        Abs::Scalar([Dep::None, j, k])
    }

    fn steps2(ix: &Abs) -> [Step; 2] {
        let [_, j, k] = index_steps(ix);
        [j, k]
    }

    #[test]
    fn positions_follow_the_last_component() {
        // (i, j, k) read as b[k][j]: contiguous across rows, far along one
        let ix = Abs::Tuple(vec![s(Dep::Unit, Dep::None), s(Dep::None, Dep::Unit)]);
        assert_eq!(steps2(&ix), [Step::Far, Step::Contiguous]);
        let t = Abs::Tuple(vec![s(Dep::None, Dep::Unit), s(Dep::Unit, Dep::None)]);
        assert_eq!(steps2(&t), [Step::Contiguous, Step::Far]);
        let inv = Abs::Tuple(vec![INVARIANT, s(Dep::None, Dep::Unit)]);
        assert_eq!(steps2(&inv), [Step::Invariant, Step::Contiguous]);
    }

    #[test]
    fn arithmetic_keeps_unit_steps_only_where_added() {
        let j = s(Dep::Unit, Dep::None);
        let k = s(Dep::None, Dep::Unit);
        assert_eq!(prim(PrimFun::Add, &[j.clone(), k.clone()]), s(Dep::Unit, Dep::Unit));
        assert_eq!(prim(PrimFun::Add, &[j.clone(), j.clone()]), s(Dep::Other, Dep::None));
        assert_eq!(prim(PrimFun::Sub, &[INVARIANT, k.clone()]), s(Dep::None, Dep::Other));
        assert_eq!(prim(PrimFun::Mul, &[k.clone(), INVARIANT]), s(Dep::None, Dep::Other));
        assert_eq!(prim(PrimFun::Sub, &[k, INVARIANT]), s(Dep::None, Dep::Unit));
    }
}

//! Values gathered from large arrays for a scatter, computed before it
//! (Note [Gathers before scatters]).
//!
//! Note [Gathers before scatters]
//! A push-style PageRank (`accelerate-programs/src/pagerank.rs`, `step`)
//! sends every link's share of its source's rank to its target:
//!
//! ```text
//! permute (+) zeros (\i -> Just (to i)) (generate links (\i -> rank (from i) / degree (from i)))
//! ```
//!
//! Fused (ICFP'13 §4.3), each source element is computed where the
//! permute combines it: per link, two reads at a position read from
//! another array (a *gather*: `rank[from[i]]`) and an update at another
//! such position. Where the gathered arrays are large, every one of these
//! misses the cache, and on the CPU the fused loop overlaps the misses
//! worse than two loops do: one that only gathers (vectorised, its reads
//! independent of each other) into a vector of values, then one that only
//! scatters it. A C model of the CPU backend's privatised permute (2^24
//! links, one thread, `docs/benchmarks.md`) took 210 ms fused and 146 ms
//! in two loops for 2^20 vertices, 298 and 222 for 2^21, 77 and 72 for
//! 2^19; but 57 and 64 ms for 2^18 and 39 and 53 for 2^14, where the
//! gathered arrays stay in the caches and writing the values out and
//! reading them back is the larger cost.
//!
//! In the library, on two workers (scratch programs of PageRank's step,
//! ten iterations, five runs a process; `docs/benchmarks.md`): 2^18
//! vertices (3 MiB gathered, the ranks and the `i64` degrees) took 283 to
//! 336 ms fused against 337 to 426 unfused; 2^19 (6 MiB) 444 to 520
//! fused against 351 to 516 as two loops; 2^20 1032 to 1355 against 520
//! to 716. A transposed sparse product in coordinate form (`y[col[k]] +=
//! val[k] * x[row[k]]`, 2^24 non-zeros, one gathered `f32` vector) took
//! 20 to 23 ms fused against 23 for 2 MiB of `x`, 26 either way for 4
//! MiB, and 123 to 129 against 111 to 113 for 16 MiB. The bytes gathered
//! from, not the elements, decide.
//!
//! So, on the CPU backend, after fusion and clustering, a permute whose
//! source is delayed and reads some array at a position read from another
//! array (or computed in a loop: taken as read) becomes
//!
//! ```text
//! acond (bytes(g1) + .. > LARGE) then (let v = generate sh f in permute c d p v)
//!                                else (permute c d p (delayed sh f))
//! ```
//!
//! where `g1, ..` are the arrays so read (rank-0 reads are one value for
//! every element and do not count), `bytes` an array's elements times its
//! element's size, and `LARGE` 4 MiB, between the crossovers above.
//! Only a permute whose index function sends every element somewhere
//! (`Just`, as a literal `true` flag) is rewritten: the manifest
//! `generate` computes every source element, which the fused permute does
//! only for elements sent somewhere (`docs/semantics.md`, "Fusion and
//! errors"), so with an index function that may drop elements a failure
//! in a dropped one would be raised. With every element sent, the two
//! forms compute the same values and combine them in the same order; only
//! which of several failures is reported may differ, as between fusion on
//! and off.
//!
//! The pass is linear in the program: one traversal, each permute's
//! source function walked once, and each binder's term typed once.

use crate::avars::{exp_arrays_shift, parts_mut, shift_acc, Part};
use crate::fusion::prim;
use accelerate_base::array::{ArraysTy, ScalarVal};
use accelerate_ir::verify::acc_ty;
use accelerate_ir::*;

/// Gathered arrays of more bytes than this, together, make the values
/// computed before the scatter (Note [Gathers before scatters]).
pub const LARGE: i64 = 4 << 20;

/// The elements of one gathered array counted at most (so that the sum
/// of their bytes cannot overflow): far above `LARGE` at any size.
const COUNTED: i64 = 1 << 32;

/// Rewrites every permute of `p` whose source gathers (Note [Gathers
/// before scatters]); also how many it rewrote.
pub fn rewrite_program(mut p: Program) -> (Program, usize) {
    // the binders are typed only for a program that has such a permute
    if !has_candidate(&p.body) {
        return (p, 0);
    }
    let mut n = 0;
    let mut aenv = p.params.clone();
    rewrite(&mut p.body, &mut aenv, &mut n);
    (p, n)
}

/// Whether some permute of `a` is rewritten, given the sizes: one that
/// `gathered_from` answers.
fn has_candidate(a: &OpenAcc) -> bool {
    let mut stack = vec![a];
    while let Some(x) = stack.pop() {
        if gathered_from(x).is_some() {
            return true;
        }
        stack.extend(accelerate_ir::visit::acc_children(x));
    }
    false
}

/// Rewrites the permutes of `a`, whose free array variables have the
/// types `aenv` (innermost last). A term whose type cannot be found (the
/// verifier reports it) is left as it is.
fn rewrite(a: &mut OpenAcc, aenv: &mut Vec<ArraysTy>, n: &mut usize) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        // the binders' types: a let's bound term's, a loop's state's, a
        // foreign function's argument's
        let bound = match &a.kind {
            AccKind::Let(b, _) => Some(&**b),
            AccKind::Awhile { init, .. } => Some(&**init),
            AccKind::Foreign { arg, .. } => Some(&**arg),
            _ => None,
        };
        let bound = match bound.map(|b| acc_ty(b, aenv)) {
            Some(Ok(t)) => Some(t),
            Some(Err(_)) => return,
            None => None,
        };
        for part in parts_mut(a) {
            if let Part::Acc(x, binders) = part {
                match (binders, &bound) {
                    (0, _) => rewrite(x, aenv, n),
                    (1, Some(t)) => {
                        aenv.push(t.clone());
                        rewrite(x, aenv, n);
                        aenv.pop();
                    }
                    _ => {}
                }
            }
        }
        if let Some(new) = split(a, aenv) {
            *a = new;
            *n += 1;
        }
    })
}

/// The two forms of permute `a`, chosen by the sizes of the arrays its
/// source gathers from, where it has such a source.
fn split(a: &OpenAcc, aenv: &[ArraysTy]) -> Option<OpenAcc> {
    let gathered = gathered_from(a)?;
    let AccKind::Permute { combine, defaults, index, source } = &a.kind else { return None };
    let AccKind::Delayed(d) = &source.kind else { return None };
    let loc = a.loc;
    let e = |kind| OpenExp::new(kind, loc);
    let int = |x: i64| e(ExpKind::Const(ScalarVal::I64(x)));
    let bytes = gathered
        .iter()
        .map(|&v| {
            let elt = aenv.len().checked_sub(v + 1).and_then(|i| aenv[i].array()).map(|t| t.elt.size_bytes());
            let size = prim(PrimFun::ShapeSize, vec![e(ExpKind::Shape { array: v })], loc);
            let counted = prim(PrimFun::Min, vec![size, int(COUNTED)], loc);
            Some(prim(PrimFun::Mul, vec![counted, int(elt? as i64)], loc))
        })
        .collect::<Option<Vec<OpenExp>>>()?
        .into_iter()
        .reduce(|x, y| prim(PrimFun::Add, vec![x, y], loc))?;
    let large = prim(PrimFun::Gt, vec![bytes, int(LARGE)], loc);
    // the values, bound: the permute's other parts move under the binding
    let values = OpenAcc::new(AccKind::Generate { shape: d.shape.clone(), f: d.index.clone() }, loc);
    let mut defaults = (**defaults).clone();
    shift_acc(&mut defaults, 0, 1);
    let (mut combine, mut index) = (combine.clone(), index.clone());
    exp_arrays_shift(&mut combine.body, 1);
    exp_arrays_shift(&mut index.body, 1);
    let scatter = AccKind::Permute {
        combine,
        defaults: Box::new(defaults),
        index,
        source: Box::new(OpenAcc::new(AccKind::Var(0), loc)),
    };
    let apart = AccKind::Let(Box::new(values), Box::new(OpenAcc::new(scatter, loc)));
    let choice =
        AccKind::Acond { cond: large, then_: Box::new(OpenAcc::new(apart, loc)), else_: Box::new(a.clone()) };
    Some(OpenAcc::new(choice, loc))
}

/// The arrays that permute `a` gathers from, where it is one that the
/// pass rewrites (Note [Gathers before scatters]): its source delayed and
/// gathering, its index function sending every element, and its defaults
/// a term with no array term inside. Both branches hold a copy of the
/// defaults; fusion's manifest arguments are variables and a fill is a
/// `generate`, and a permute nested in defaults is not copied at every
/// level, exponentially.
fn gathered_from(a: &OpenAcc) -> Option<Vec<usize>> {
    let AccKind::Permute { defaults, index, source, .. } = &a.kind else { return None };
    let AccKind::Delayed(d) = &source.kind else { return None };
    let leaf = matches!(defaults.kind, AccKind::Var(_) | AccKind::Use(_) | AccKind::Generate { .. });
    if !leaf || !sends_every_element(&index.body) {
        return None;
    }
    let mut gathered = Vec::new();
    let mut env = vec![false; d.index.params.len()];
    read_derived(&d.index.body, &mut env, &mut gathered);
    gathered.sort_unstable();
    gathered.dedup();
    (!gathered.is_empty()).then_some(gathered)
}

/// Whether an index function's body (under its lets) is a pair whose flag
/// is the literal `true`: `Just` for every element.
fn sends_every_element(body: &OpenExp) -> bool {
    let mut e = body;
    while let ExpKind::Let(_, rest) = &e.kind {
        e = rest;
    }
    matches!(&e.kind, ExpKind::Tuple(es) if es.len() == 2
        && matches!(es[0].kind, ExpKind::Const(ScalarVal::Bool(true))))
}

/// Whether the value of `e` may depend on an element read from an array
/// (other than a rank-0 one, whose one element every position reads);
/// each array that `e` reads at a position that does is pushed onto
/// `gathered`. `env` says the same of the scalar variables in scope
/// (innermost last).
fn read_derived(e: &OpenExp, env: &mut Vec<bool>, gathered: &mut Vec<usize>) -> bool {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || match &e.kind {
        ExpKind::Var(v) => env.len().checked_sub(v + 1).is_some_and(|i| env[i]),
        ExpKind::Let(b, body) => {
            let held = read_derived(b, env, gathered);
            env.push(held);
            let r = read_derived(body, env, gathered);
            env.pop();
            r
        }
        ExpKind::Index { array, index } | ExpKind::LinearIndex { array, index } => {
            if read_derived(index, env, gathered) {
                gathered.push(*array);
            }
            !matches!(&index.kind, ExpKind::Tuple(es) if es.is_empty())
        }
        ExpKind::While { cond, body, init } => {
            read_derived(init, env, gathered);
            // the state changes from one iteration to the next: a position
            // computed from it is taken as read
            env.push(true);
            read_derived(&cond.body, env, gathered);
            read_derived(&body.body, env, gathered);
            env.pop();
            true
        }
        _ => {
            let mut any = false;
            visit::each_child(e, |c| any |= read_derived(c, env, gathered));
            any
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use accelerate_base::array::{EltTy, ScalarTy};
    use accelerate_base::error::SrcLoc;

    fn e(kind: ExpKind) -> OpenExp {
        OpenExp::new(kind, SrcLoc::caller())
    }

    fn int(x: i64) -> OpenExp {
        e(ExpKind::Const(ScalarVal::I64(x)))
    }

    fn read(array: usize, at: OpenExp) -> OpenExp {
        e(ExpKind::Index { array, index: Box::new(e(ExpKind::Tuple(vec![at]))) })
    }

    fn var(v: usize) -> OpenExp {
        e(ExpKind::Var(v))
    }

    /// `\ix -> a_{table}!(a_{keys}!ix.0)` in an environment of three
    /// arrays, the source of a permute into a_2's shape.
    fn permute(source: OpenExp, flag: bool) -> OpenAcc {
        let at = e(ExpKind::Prj(0, Box::new(var(0))));
        let shape = e(ExpKind::Tuple(vec![e(ExpKind::Prj(0, Box::new(e(ExpKind::Shape { array: 1 }))))]));
        let f = Fun { params: vec![EltTy::shape(1)], body: source };
        let linear = Fun { params: vec![EltTy::Scalar(ScalarTy::I64)], body: f.body.clone() };
        let acc = |kind| OpenAcc::new(kind, SrcLoc::caller());
        acc(AccKind::Permute {
            combine: Fun {
                params: vec![EltTy::Scalar(ScalarTy::F32); 2],
                body: prim(PrimFun::Add, vec![var(0), var(1)], SrcLoc::caller()),
            },
            defaults: Box::new(acc(AccKind::Var(2))),
            index: Fun {
                params: vec![EltTy::shape(1)],
                body: e(ExpKind::Tuple(vec![
                    e(ExpKind::Const(ScalarVal::Bool(flag))),
                    e(ExpKind::Tuple(vec![read(1, at)])),
                ])),
            },
            source: Box::new(acc(AccKind::Delayed(DelayedArray { shape, index: f, linear }))),
        })
    }

    /// The types of a_2 (`f32`s), a_1 (`i64` keys) and a_0 (`f32`s).
    fn env() -> Vec<ArraysTy> {
        let array =
            |elt| ArraysTy::Array(accelerate_base::array::ArrayTy { rank: 1, elt: EltTy::Scalar(elt) });
        vec![array(ScalarTy::F32), array(ScalarTy::I64), array(ScalarTy::F32)]
    }

    fn own() -> OpenExp {
        e(ExpKind::Prj(0, Box::new(var(0))))
    }

    #[test]
    fn a_gathering_source_is_split_by_the_gathered_arrays_size() {
        // a_0 ! (a_1 ! ix.0), through a let
        let body = e(ExpKind::Let(Box::new(read(1, own())), Box::new(read(0, var(0)))));
        let out = split(&permute(body, true), &env()).expect("split");
        let AccKind::Acond { cond, then_, else_ } = &out.kind else { panic!("{out:?}") };
        // only a_0 is gathered from: a_1 is read at the element's own index
        let mut arrays = Vec::new();
        visit::arrays_read(cond, &mut arrays);
        assert_eq!(arrays, vec![0]);
        assert!(matches!(else_.kind, AccKind::Permute { .. }));
        let AccKind::Let(values, scatter) = &then_.kind else { panic!("{then_:?}") };
        assert!(matches!(values.kind, AccKind::Generate { .. }));
        let AccKind::Permute { defaults, index, source, .. } = &scatter.kind else { panic!("{scatter:?}") };
        assert!(matches!(source.kind, AccKind::Var(0)));
        // under the binding: a_2 is a_3, a_1 is a_2
        assert!(matches!(defaults.kind, AccKind::Var(3)));
        let mut read_by_index = Vec::new();
        visit::arrays_read(&index.body, &mut read_by_index);
        assert_eq!(read_by_index, vec![2]);
    }

    #[test]
    fn reads_at_own_index_or_of_rank_0_arrays_are_not_gathers() {
        // a_0 ! ix.0 * a_1 ! (a_2 ! ())
        let rank0 = e(ExpKind::Index { array: 2, index: Box::new(e(ExpKind::Tuple(vec![]))) });
        let cast = prim(PrimFun::Cast(ScalarTy::I64), vec![rank0], SrcLoc::caller());
        let body = prim(PrimFun::Mul, vec![read(0, own()), read(1, cast)], SrcLoc::caller());
        assert!(split(&permute(body, true), &env()).is_none());
    }

    #[test]
    fn a_permute_that_may_drop_elements_is_left_fused() {
        let body = read(0, read(1, own()));
        assert!(split(&permute(body.clone(), true), &env()).is_some());
        assert!(split(&permute(body, false), &env()).is_none());
    }

    #[test]
    fn defaults_that_hold_array_terms_are_not_copied() {
        let body = read(0, read(1, own()));
        let inner = permute(body.clone(), true);
        let mut outer = permute(body, true);
        let AccKind::Permute { defaults, .. } = &mut outer.kind else { unreachable!() };
        **defaults = inner;
        assert!(split(&outer, &env()).is_none());
    }

    #[test]
    fn positions_computed_in_a_loop_are_taken_as_read() {
        // while (\s -> s < 10) (\s -> s + 1) 0, then a_0 at it
        let lt = prim(PrimFun::Lt, vec![var(0), int(10)], SrcLoc::caller());
        let inc = prim(PrimFun::Add, vec![var(0), int(1)], SrcLoc::caller());
        let i64t = EltTy::Scalar(ScalarTy::I64);
        let lp = e(ExpKind::While {
            cond: Box::new(Fun { params: vec![i64t.clone()], body: lt }),
            body: Box::new(Fun { params: vec![i64t], body: inc }),
            init: Box::new(int(0)),
        });
        assert!(split(&permute(read(0, lp), true), &env()).is_some());
    }
}

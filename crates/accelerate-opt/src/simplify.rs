//! The simplifier (issue "The optimiser", part 1): local rewrites of scalar
//! code, run to a fixed point (with a bound) on every expression and
//! function of a program.
//!
//! Rewrites, each of which keeps the meaning `docs/semantics.md` gives,
//! deferred errors included (Note [Deferred errors]):
//!
//! - *Let-floating*: `let x = (let y = a in b) in c` becomes
//!   `let y = a in let x = b in c`, so that sharing recovery's nested lets
//!   read as a chain.
//! - *Shrinking*: a let whose variable is unused is dropped (its failure,
//!   if any, was deferred to uses that do not exist); a let used once, not
//!   inside a loop function, or bound to a variable or constant, is
//!   inlined. These and let-floating are `trafo::shrink`'s two linear
//!   passes (Note [Shrinking without substitution]), the rest one
//!   bottom-up pass per round.
//! - *Constant folding*: a primitive applied to constants is evaluated by
//!   the interpreter's own primitive (`backend::interp`), so the result is
//!   bit-for-bit what the program would compute at run time: wrapping,
//!   rounding and NaNs included. A primitive that fails (a division by
//!   zero) is left for run time to report.
//! - *Algebraic identities* that hold for every value, NaN and signed zero
//!   included: on integers `x + 0`, `0 + x`, `x - 0`, `x * 1`, `1 * x`; on
//!   integers also `x * 0` and `0 * x` when `x` cannot fail; on
//!   floats only `x - 0.0` and `x + (-0.0)` (while `x + 0.0` is not `x`
//!   for `x = -0.0`, and `x * 1.0` could change a NaN's payload, so they
//!   stay).
//! - *Known conditions*: `if true then t else e` is `t`.
//! - *Identity functions*: `map (\x -> x) xs` is `xs`.
//! - *Projections of tuples*: `(a, b).0` is `a` when `b` cannot fail or
//!   loop (dropping a failing component would drop its error; a variable
//!   counts as possibly failing, its binding's error being deferred to it).
//! - *Sibling loops* (`sibling_loops`, Note [Sibling loops]): counted
//!   `while` loops over the same range that every evaluation of a term
//!   evaluates become one loop carrying every state.
//! - *Common subexpressions* (`trafo::cse`, unless switched off): a term
//!   equal to a let-bound one becomes its variable, and a repeated term
//!   one copy of which is computed on every path is bound once. It runs at
//!   the other rewrites' fixed points (Note [When CSE runs]), so the two
//!   reach their fixed point together.

use super::cse::cse_body;
use super::shrink::shrink_body;
use accelerate_base::array::{ScalarVal, Val};
use accelerate_ir::*;

/// How many rounds of rewriting at most: each round is linear, and the
/// rewrites only shrink or float terms, so a handful reach the fixed point
/// in practice; the bound keeps a pathological term from looping.
const MAX_ROUNDS: usize = 16;

/// Which optional rewrites run (`exec::Config`).
#[derive(Clone, Copy, Debug)]
pub struct SimplifyOptions {
    /// Common-subexpression elimination (`trafo::cse`).
    pub cse: bool,
}

impl Default for SimplifyOptions {
    fn default() -> Self {
        SimplifyOptions { cse: true }
    }
}

/// Simplifies every scalar expression and function of a program.
pub fn simplify_program(mut p: Program, opts: SimplifyOptions) -> Program {
    simplify_acc(&mut p.body, opts);
    p
}

fn simplify_acc(a: &mut OpenAcc, opts: SimplifyOptions) {
    simplify_acc_parts(a, opts);
    // `map (\x -> x) xs` is `xs`: an identity function is recognised
    if let AccKind::Map { f, array } = &mut a.kind {
        if f.params.len() == 1 && matches!(f.body.kind, ExpKind::Var(0)) {
            let loc = a.loc;
            *a = std::mem::replace(&mut **array, OpenAcc::new(AccKind::Var(0), loc));
        }
    }
}

fn simplify_acc_parts(a: &mut OpenAcc, opts: SimplifyOptions) {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        let fun = |f: &mut Fun| simplify_body(&mut f.body, f.params.len(), opts);
        let simplify_acc = |a: &mut OpenAcc| simplify_acc(a, opts);
        let simplify_exp = |e: &mut OpenExp| simplify_exp(e, opts);
        match &mut a.kind {
            AccKind::Let(b, body) => {
                simplify_acc(b);
                simplify_acc(body);
            }
            AccKind::Var(_) | AccKind::Use(_) => {}
            AccKind::Tuple(ts) => ts.iter_mut().for_each(simplify_acc),
            AccKind::Prj(_, t) | AccKind::Unzip(t) => simplify_acc(t),
            AccKind::Unit(e) => simplify_exp(e),
            AccKind::Reshape { shape, array } => {
                simplify_exp(shape);
                simplify_acc(array);
            }
            AccKind::Generate { shape, f } => {
                simplify_exp(shape);
                fun(f);
                own_index_checks(shape, f, opts);
            }
            AccKind::Map { f, array } => {
                fun(f);
                simplify_acc(array);
            }
            AccKind::ZipWith { f, a: x, b: y } => {
                fun(f);
                simplify_acc(x);
                simplify_acc(y);
            }
            AccKind::Backpermute { shape, f, array } => {
                simplify_exp(shape);
                fun(f);
                simplify_acc(array);
            }
            AccKind::Replicate { slix, array, .. } | AccKind::Slice { slix, array, .. } => {
                simplify_exp(slix);
                simplify_acc(array);
            }
            AccKind::Fold { f, seed, array }
            | AccKind::FoldKeep { f, seed, array }
            | AccKind::Scan { f, seed, array, .. } => {
                fun(f);
                seed.iter_mut().for_each(simplify_exp);
                simplify_acc(array);
            }
            AccKind::FoldSeg { f, seed, array, offsets } => {
                fun(f);
                seed.iter_mut().for_each(simplify_exp);
                simplify_acc(array);
                simplify_acc(offsets);
            }
            AccKind::Stencil { f, args } => {
                fun(f);
                for arg in args {
                    match &mut arg.boundary {
                        Boundary::Constant(c) => simplify_exp(c),
                        Boundary::Function(g) => fun(g),
                        Boundary::Clamp | Boundary::Mirror | Boundary::Wrap => {}
                    }
                    simplify_acc(&mut arg.array);
                }
            }
            AccKind::Permute { combine, defaults, index, source } => {
                fun(combine);
                fun(index);
                simplify_acc(defaults);
                simplify_acc(source);
            }
            AccKind::Acond { cond, then_, else_ } => {
                simplify_exp(cond);
                simplify_acc(then_);
                simplify_acc(else_);
            }
            AccKind::Awhile { pred, body, init } => {
                simplify_acc(&mut pred.body);
                simplify_acc(&mut body.body);
                simplify_acc(init);
            }
            AccKind::Foreign { fallback, arg, .. } => {
                if let Some(fallback) = fallback {
                    simplify_acc(&mut fallback.body);
                }
                simplify_acc(arg);
            }
            AccKind::Delayed(DelayedArray { shape, index, linear }) => {
                simplify_exp(shape);
                fun(index);
                own_index_checks(shape, index, opts);
                fun(linear);
            }
        }
    })
}

/// Drops the bounds checks of a function's own index
/// (Note [Own-index checks]), and simplifies the function again where it
/// did: the lets the checks read may now be unused.
fn own_index_checks(shape: &OpenExp, f: &mut Fun, opts: SimplifyOptions) {
    let rank = f.params.first().and_then(|t| t.shape_rank()).unwrap_or(0);
    if super::own_index::drop_own_index_checks(shape, f, rank) {
        simplify_body(&mut f.body, f.params.len(), opts);
    }
}

/// Simplifies one closed expression to a fixed point (or `MAX_ROUNDS`
/// rounds).
pub fn simplify_exp(e: &mut OpenExp, opts: SimplifyOptions) {
    simplify_body(e, 0, opts)
}

// Note [When CSE runs]
// Common-subexpression elimination (`trafo::cse`) costs a few hash-map
// operations per node, several times a round of the other rewrites, so it
// does not run in every round: once after the first round (so that a
// program whose rewrites never settle within `MAX_ROUNDS` is still
// shared), then whenever the other rewrites have reached their fixed
// point. If it changed the term, the rounds go on (its new lets may be
// inlined or floated), and it runs again at the next fixed point; the
// simplifier stops when neither changes anything.

/// Simplifies the body of a function of `params` parameters.
fn simplify_body(e: &mut OpenExp, params: usize, opts: SimplifyOptions) {
    // which variables may carry a deferred error: parameters never do
    let mut env = vec![false; params];
    for r in 0..MAX_ROUNDS {
        let mut changed = shrink_body(e, params);
        changed |= super::sibling_loops::merge_loops(e);
        changed |= round(e, &mut env);
        // Note [When CSE runs]
        if opts.cse && (r == 0 || !changed) {
            changed |= cse_body(e, params);
        }
        if !changed {
            break;
        }
    }
}

/// One bottom-up round of the rewrites other than the lets' (which
/// `shrink_body` does); whether anything changed. `env` says,
/// for each variable in scope (innermost last), whether it may carry a
/// deferred error (a let whose bound term can fail).
fn round(e: &mut OpenExp, env: &mut Vec<bool>) -> bool {
    stacker::maybe_grow(64 * 1024, 1024 * 1024, || {
        let mut changed = false;
        match &mut e.kind {
            ExpKind::Let(b, body) => {
                changed |= round(b, env);
                let fails = can_fail(b, env);
                env.push(fails);
                changed |= round(body, env);
                env.pop();
            }
            ExpKind::While { cond, body, init } => {
                changed |= round(init, env);
                env.push(false);
                changed |= round(&mut cond.body, env);
                changed |= round(&mut body.body, env);
                env.pop();
            }
            ExpKind::Var(_) | ExpKind::Const(_) | ExpKind::Shape { .. } => {}
            ExpKind::Tuple(es) | ExpKind::Prim(_, es) => es.iter_mut().for_each(|x| changed |= round(x, env)),
            ExpKind::Prj(_, t) => changed |= round(t, env),
            ExpKind::Cond(c, t, x) => {
                changed |= round(c, env);
                changed |= round(t, env);
                changed |= round(x, env);
            }
            ExpKind::Index { index, .. } | ExpKind::LinearIndex { index, .. } => changed |= round(index, env),
            ExpKind::ALet(..) => {
                unreachable!("array terms nested in scalar code are lifted before this pass")
            }
        }
        changed | rewrite(e, env)
    })
}

/// The rewrites at the root of `e`; whether one applied.
fn rewrite(e: &mut OpenExp, env: &mut Vec<bool>) -> bool {
    let loc = e.loc;
    let placeholder = || OpenExp::new(ExpKind::Var(0), loc);
    match &mut e.kind {
        ExpKind::Prim(op, args) => {
            if let Some(vals) = args.iter().map(const_of).collect::<Option<Vec<Val>>>() {
                if let Ok(Val::Scalar(s)) = accelerate_ir::eval::apply(*op, &vals, loc) {
                    e.kind = ExpKind::Const(s);
                    return true;
                }
                return false;
            }
            // x * 0 == 0 on integers (wrapping), if x cannot fail
            if *op == PrimFun::Mul {
                for (z, other) in [(1, 0), (0, 1)] {
                    if is_int_const(&args[z], 0) && !can_fail(&args[other], env) {
                        let zero = std::mem::replace(&mut args[z], placeholder());
                        *e = zero;
                        return true;
                    }
                }
            }
            if let Some(keep) = identity(*op, args) {
                let kept = std::mem::replace(&mut args[keep], placeholder());
                *e = kept;
                return true;
            }
            float_loop(e)
        }
        ExpKind::Cond(c, t, x) => match c.kind {
            ExpKind::Const(ScalarVal::Bool(v)) => {
                let taken = if v { t } else { x };
                *e = std::mem::replace(&mut **taken, placeholder());
                true
            }
            _ => false,
        },
        ExpKind::Prj(i, t) => {
            let i = *i;
            match &mut t.kind {
                ExpKind::Tuple(es)
                    if i < es.len() && es.iter().enumerate().all(|(k, x)| k == i || !can_fail(x, env)) =>
                {
                    *e = es.swap_remove(i);
                    true
                }
                _ => false,
            }
        }
        _ => false,
    }
}

// Note [Loops floated out of operands]
// Sharing recovery binds a value used twice where its uses meet: a
// magnitude `sqrt(re * re + im * im) / n` of a loop's two sums becomes
// `sqrt(let s = while .. in s.1 * s.1 + s.2 * s.2) / n`. The CPU
// backend runs an element in lockstep with its neighbours when its loop
// is bound at the top, the rest a tail (Note [A loop's tail in lockstep]
// in `cpu/generate.rs`), so a let bound to a loop floats out of the
// operand of a primitive: `op(.., let x = l in b, ..)` becomes
// `let x = l in op(.., b, ..)`, the other operands weakened past `x`. A
// primitive evaluates all its operands, so the loop runs exactly when it
// did; a let's failure is deferred to its uses either way. Not out of
// `&&` and `||`, whose second operand may not run, nor out of a
// conditional's branches.

/// Floats a let bound to a loop out of an operand of the primitive `e`
/// (Note [Loops floated out of operands]); whether it did.
fn float_loop(e: &mut OpenExp) -> bool {
    let ExpKind::Prim(op, args) = &mut e.kind else { return false };
    if matches!(op, PrimFun::LAnd | PrimFun::LOr) {
        return false;
    }
    let binds_loop = |a: &OpenExp| matches!(&a.kind, ExpKind::Let(b, _) if visit::projects_loop(b).is_some());
    let Some(j) = args.iter().position(binds_loop) else {
        return false;
    };
    let loc = e.loc;
    let ExpKind::Prim(op, mut args) = std::mem::replace(&mut e.kind, ExpKind::Var(0)) else {
        unreachable!("matched above")
    };
    let ExpKind::Let(bound, body) = std::mem::replace(&mut args[j].kind, ExpKind::Var(0)) else {
        unreachable!("found above")
    };
    for (k, a) in args.iter_mut().enumerate() {
        if k != j {
            super::debruijn::shift(a, 0, 1);
        }
    }
    args[j] = *body;
    let inner = OpenExp::new(ExpKind::Prim(op, args), loc);
    e.kind = ExpKind::Let(bound, Box::new(inner));
    true
}

/// The value of a constant scalar term.
fn const_of(e: &OpenExp) -> Option<Val> {
    match e.kind {
        ExpKind::Const(c) => Some(Val::Scalar(c)),
        _ => None,
    }
}

fn is_int_const(e: &OpenExp, want: i128) -> bool {
    let v: Option<i128> = match e.kind {
        ExpKind::Const(ScalarVal::I8(x)) => Some(x as i128),
        ExpKind::Const(ScalarVal::I16(x)) => Some(x as i128),
        ExpKind::Const(ScalarVal::I32(x)) => Some(x as i128),
        ExpKind::Const(ScalarVal::I64(x)) => Some(x as i128),
        ExpKind::Const(ScalarVal::U8(x)) => Some(x as i128),
        ExpKind::Const(ScalarVal::U16(x)) => Some(x as i128),
        ExpKind::Const(ScalarVal::U32(x)) => Some(x as i128),
        ExpKind::Const(ScalarVal::U64(x)) => Some(x as i128),
        _ => None,
    };
    v == Some(want)
}

/// `Some(bits)` if `e` is a float constant (bits widened to 64).
fn float_bits(e: &OpenExp) -> Option<u64> {
    match e.kind {
        ExpKind::Const(ScalarVal::F32(x)) => Some(f64::from(x).to_bits()),
        ExpKind::Const(ScalarVal::F64(x)) => Some(x.to_bits()),
        _ => None,
    }
}

/// Which argument an identity reduces `op(args)` to, if any.
fn identity(op: PrimFun, args: &[OpenExp]) -> Option<usize> {
    let [a, b] = args else { return None };
    let pos_zero = 0.0f64.to_bits();
    let neg_zero = (-0.0f64).to_bits();
    match op {
        PrimFun::Add if is_int_const(b, 0) || float_bits(b) == Some(neg_zero) => Some(0),
        PrimFun::Add if is_int_const(a, 0) || float_bits(a) == Some(neg_zero) => Some(1),
        PrimFun::Sub if is_int_const(b, 0) || float_bits(b) == Some(pos_zero) => Some(0),
        PrimFun::Mul if is_int_const(b, 1) => Some(0),
        PrimFun::Mul if is_int_const(a, 1) => Some(1),
        _ => None,
    }
}

/// Can the primitive itself raise an error (at its own source location)?
pub(crate) fn raises(op: PrimFun) -> bool {
    matches!(
        op,
        PrimFun::Quot
            | PrimFun::Rem
            | PrimFun::IDiv
            | PrimFun::Mod
            | PrimFun::FromIndex
            | PrimFun::BoundsCheck
            | PrimFun::ReshapeCheck
            | PrimFun::ShapeCheck
    )
}

/// How many nodes `can_fail` looks at before answering "maybe": it is
/// asked at every let, so a deep bound term must not make it quadratic
/// (or recurse deeply).
const CAN_FAIL_BUDGET: usize = 256;

/// Can evaluating `e` fail or not terminate? (Conservative: a term larger
/// than `CAN_FAIL_BUDGET` nodes may.) A let-bound variable can if its
/// bound term can: the error is deferred to its uses (Note [Deferred
/// errors]); a function's parameter cannot. Reading an array's shape can
/// (the array's binding may have failed).
fn can_fail(e: &OpenExp, env: &mut Vec<bool>) -> bool {
    let mut budget = CAN_FAIL_BUDGET;
    may_fail(e, env, &mut budget)
}

fn may_fail(e: &OpenExp, env: &mut Vec<bool>, budget: &mut usize) -> bool {
    if *budget == 0 {
        return true;
    }
    *budget -= 1;
    match &e.kind {
        ExpKind::Const(_) => false,
        ExpKind::Var(k) => env.len().checked_sub(k + 1).is_none_or(|i| env[i]),
        ExpKind::Shape { .. } | ExpKind::ALet(..) => true,
        ExpKind::While { .. } | ExpKind::Index { .. } | ExpKind::LinearIndex { .. } => true,
        ExpKind::Prim(op, _) if raises(*op) => true,
        ExpKind::Tuple(es) | ExpKind::Prim(_, es) => es.iter().any(|x| may_fail(x, env, budget)),
        ExpKind::Prj(_, t) => may_fail(t, env, budget),
        ExpKind::Cond(c, t, x) => {
            may_fail(c, env, budget) || may_fail(t, env, budget) || may_fail(x, env, budget)
        }
        ExpKind::Let(b, body) => {
            let b_fails = may_fail(b, env, budget);
            env.push(b_fails);
            let r = b_fails || may_fail(body, env, budget);
            env.pop();
            r
        }
    }
}

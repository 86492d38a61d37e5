//! Evaluation of scalar expressions.

use accelerate_base::array::typed::linear_index;
use accelerate_base::array::{ArrayData, ArraysTy, ArraysVal, ScalarVal, Val};
use accelerate_base::error::{Error, Result, SrcLoc};
use accelerate_ir::eval as prim;
use accelerate_ir::{ExpKind, Fun, OpenExp, PrimFun};
use std::sync::Arc;

/// A bound variable: its value, or the error its evaluation raised.
///
/// Note [Deferred errors]
/// Sharing recovery binds a term used in several places once, above all of
/// them, which can be above the conditional that guards every use (in
/// `let d = x / y in (if y != 0 then d else 0, ...)`, the division is
/// guarded where the user wrote it). So a let-bound term that fails does not
/// fail the program: its error is kept in the variable and raised where the
/// variable is used. The result is that of the program as written, with
/// every use inlined. (A guarded, let-bound term that does not terminate
/// still does not terminate.)
pub(crate) type Slot = Result<Val, Error>;

/// A bound array variable: its type and value, or the error its
/// evaluation raised (Note [Deferred errors]).
pub(crate) struct ASlot {
    pub ty: ArraysTy,
    pub val: Result<ArraysVal, Error>,
}

/// The array variables scalar code reads (innermost last, by de Bruijn
/// index): host arrays (the interpreter's environment), or arrays that
/// live elsewhere and reach the host only when scalar code reads their
/// elements (`backend::c::host`).
pub(crate) trait ArrayEnv {
    /// The shape of array variable `i`.
    fn shape(&self, i: usize) -> Result<&[usize]>;
    /// The elements of array variable `i`, on the host.
    fn array(&self, i: usize) -> Result<&Arc<ArrayData>>;
}

impl ArrayEnv for Vec<ASlot> {
    fn shape(&self, i: usize) -> Result<&[usize]> {
        self.array(i).map(|a| a.shape())
    }

    fn array(&self, i: usize) -> Result<&Arc<ArrayData>> {
        match lookup(self, i).map(|s| &s.val) {
            Some(Ok(ArraysVal::Array(a))) => Ok(a),
            Some(Err(e)) => Err(e.clone()),
            _ => Err(Error::Internal(format!("array variable {i} is not an array in scope"))),
        }
    }
}

/// Evaluates scalar code in an array environment.
pub(crate) struct ScalarEval<'a> {
    pub aenv: &'a dyn ArrayEnv,
}

pub(crate) fn lookup<T>(env: &[T], i: usize) -> Option<&T> {
    env.len().checked_sub(i + 1).map(|k| &env[k])
}

impl ScalarEval<'_> {
    fn array(&self, i: usize) -> Result<&Arc<ArrayData>> {
        self.aenv.array(i)
    }

    /// Applies a closed function to arguments, reusing `env` as scratch.
    pub fn apply(&self, f: &Fun, args: &[Val], env: &mut Vec<Slot>) -> Result<Val> {
        let base = env.len();
        env.extend(args.iter().cloned().map(Ok));
        let r = self.eval(&f.body, env);
        env.truncate(base);
        r
    }

    pub fn eval(&self, e: &OpenExp, env: &mut Vec<Slot>) -> Result<Val> {
        stacker::maybe_grow(64 * 1024, 1024 * 1024, || self.eval_inner(e, env))
    }

    fn eval_inner(&self, e: &OpenExp, env: &mut Vec<Slot>) -> Result<Val> {
        match &e.kind {
            ExpKind::Let(b, body) => {
                // Note [Deferred errors]
                let v = self.eval(b, env);
                env.push(v);
                let r = self.eval(body, env);
                env.pop();
                r
            }
            ExpKind::Var(i) => match lookup(env, *i) {
                Some(slot) => slot.clone(),
                None => Err(Error::Internal(format!("scalar variable {i} unbound"))),
            },
            ExpKind::Const(c) => Ok(Val::Scalar(*c)),
            ExpKind::Tuple(es) => {
                Ok(Val::Tuple(es.iter().map(|x| self.eval(x, env)).collect::<Result<_>>()?))
            }
            ExpKind::Prj(i, t) => match self.eval(t, env)? {
                Val::Tuple(mut vs) if *i < vs.len() => Ok(vs.swap_remove(*i)),
                other => Err(Error::Internal(format!("projection {i} of {other}"))),
            },
            ExpKind::Prim(op @ (PrimFun::LAnd | PrimFun::LOr), args) => {
                let a = self.eval(&args[0], env)?.scalar().and_then(ScalarVal::as_bool);
                let a = a.ok_or_else(|| Error::Internal("logical operator on a non-bool".into()))?;
                // short-circuit: the second argument is evaluated only if needed
                match (op, a) {
                    (PrimFun::LAnd, false) => Ok(Val::Scalar(ScalarVal::Bool(false))),
                    (PrimFun::LOr, true) => Ok(Val::Scalar(ScalarVal::Bool(true))),
                    _ => self.eval(&args[1], env),
                }
            }
            ExpKind::Prim(op, args) => {
                let vs = args.iter().map(|x| self.eval(x, env)).collect::<Result<Vec<_>>>()?;
                prim::apply(*op, &vs, e.loc)
            }
            ExpKind::Cond(c, t, f) => {
                if self.bool(c, env)? {
                    self.eval(t, env)
                } else {
                    self.eval(f, env)
                }
            }
            ExpKind::While { cond, body, init } => {
                let mut x = self.eval(init, env)?;
                loop {
                    env.push(Ok(x));
                    let go = self.bool(&cond.body, env);
                    let go = match go {
                        Ok(g) => g,
                        Err(err) => {
                            env.pop();
                            return Err(err);
                        }
                    };
                    if !go {
                        return env.pop().expect("pushed above");
                    }
                    let next = self.eval(&body.body, env);
                    env.pop();
                    x = next?;
                }
            }
            ExpKind::Index { array, index } => {
                let a = self.array(*array)?;
                let ix = self
                    .eval(index, env)?
                    .to_index()
                    .ok_or_else(|| Error::Internal("bad index value".into()))?;
                let i = linear_index(a.shape(), &ix)
                    .ok_or_else(|| Error::index_out_of_bounds(e.loc, ix.clone(), a.shape().to_vec()))?;
                Ok(a.get(i))
            }
            ExpKind::LinearIndex { array, index } => {
                let a = self.array(*array)?;
                let i = self.eval(index, env)?.scalar().and_then(ScalarVal::as_i64);
                let i = i.ok_or_else(|| Error::Internal("bad linear index value".into()))?;
                if i < 0 || i as usize >= a.len() {
                    let shape = a.shape().to_vec();
                    return Err(Error::LinearIndexOutOfBounds { loc: e.loc, index: i, size: a.len(), shape });
                }
                Ok(a.get(i as usize))
            }
            ExpKind::Shape { array } => {
                let dims: Vec<i64> = self.aenv.shape(*array)?.iter().map(|&d| d as i64).collect();
                Ok(Val::from_index(&dims))
            }
            ExpKind::ALet(..) => Err(Error::Internal(format!(
                "an array term nested in scalar code at {} was not lifted",
                e.loc
            ))),
        }
    }

    fn bool(&self, e: &OpenExp, env: &mut Vec<Slot>) -> Result<bool> {
        self.eval(e, env)?
            .scalar()
            .and_then(ScalarVal::as_bool)
            .ok_or_else(|| Error::Internal("expected a bool".into()))
    }

    /// Evaluates a closed expression that must be a shape, checking that
    /// no extent is negative.
    pub fn shape(&self, e: &OpenExp) -> Result<Vec<usize>> {
        let dims = self.index(e)?;
        checked_dims(&dims, e.loc)
    }

    /// Evaluates a closed expression that must be an index.
    pub fn index(&self, e: &OpenExp) -> Result<Vec<i64>> {
        self.eval(e, &mut Vec::new())?
            .to_index()
            .ok_or_else(|| Error::Internal("expected a shape value".into()))
    }
}

/// Extents as `usize`, or the error for a negative or overflowing shape
/// (the element type's size is checked when the array is reserved).
pub(crate) fn checked_dims(dims: &[i64], loc: SrcLoc) -> Result<Vec<usize>> {
    accelerate_base::array::shape::checked_extents(dims, 1, loc)
}

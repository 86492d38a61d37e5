//! Foreign array functions inside array programs (sequences thesis
//! §6.1.1-6.1.2; Accelerate's `foreignAcc`): a function written outside
//! the language, with implementations for some backends and a fallback
//! written in the language that every other backend runs.
//!
//! A call is a fusion barrier on both sides: its arguments are computed
//! to manifest arrays, which the implementation reads, and its results
//! are ordinary arrays. The implementations travel as a
//! `base::foreign::ForeignAcc` (Note on dispatch there): the interpreter
//! and the CPU backend run a host implementation (`Foreign::host`), the
//! CUDA backend one of its own type (`Foreign::with_impl`), and each runs
//! the fallback where it finds none.

use super::acc::{Acc, AsAcc};
use super::graph::{Lam, NodeKind};
use accelerate_base::array::Arrays;
use accelerate_base::error::SrcLoc;
use accelerate_base::foreign::{ForeignAcc, HostImpl};
use std::any::Any;
use std::marker::PhantomData;
use std::sync::Arc;

/// A foreign function from arrays `A` to arrays `B` (an array or a tuple
/// of arrays each), with its implementations. Cheap to clone; one value
/// may be called any number of times, in any number of programs.
pub struct Foreign<A, B> {
    func: Arc<ForeignAcc>,
    _ty: PhantomData<fn(A) -> B>,
}

impl<A, B> Clone for Foreign<A, B> {
    fn clone(&self) -> Self {
        Foreign { func: self.func.clone(), _ty: PhantomData }
    }
}

impl<A: Arrays, B: Arrays> Foreign<A, B> {
    /// A foreign function named `name` (in messages and the plan's text)
    /// with no implementation yet: every backend runs the fallback.
    pub fn new(name: impl Into<String>) -> Foreign<A, B> {
        Foreign { func: Arc::new(ForeignAcc::new(name, B::arrays_ty())), _ty: PhantomData }
    }

    fn with(self, f: impl FnOnce(ForeignAcc) -> ForeignAcc) -> Foreign<A, B> {
        // where another handle holds it, a copy with the same implementations
        let func = Arc::try_unwrap(self.func).unwrap_or_else(|shared| (*shared).clone());
        Foreign { func: Arc::new(f(func)), _ty: PhantomData }
    }

    /// An implementation over host arrays, which the interpreter and the
    /// CPU backend run. An `Err` it returns, and a panic inside it, become
    /// an `Error::Foreign` naming the line of the call; so does a result
    /// whose shape the function's type cannot hold.
    pub fn host(self, imp: impl Fn(A) -> Result<B, String> + Send + Sync + 'static) -> Foreign<A, B> {
        let imp = HostImpl(Box::new(move |v| {
            let a = A::from_arrays_val(v).map_err(|e| format!("its argument: {e}"))?;
            imp(a).map(|b| b.to_arrays_val())
        }));
        self.with(|f| f.with_impl(imp))
    }

    /// An implementation in a backend's own form (the CUDA backend's,
    /// over device arrays); a backend that does not know the type `T`
    /// ignores it.
    pub fn with_impl<T: Any + Send + Sync>(self, imp: T) -> Foreign<A, B> {
        self.with(|f| f.with_impl(imp))
    }

    /// The function's name.
    pub fn name(&self) -> &str {
        &self.func.name
    }

    /// Calls the function on `arg`: a backend with an implementation runs
    /// it, every other backend runs `fallback` (which must compute the
    /// same arrays: the library cannot check that it does).
    #[track_caller]
    pub fn call(&self, fallback: impl FnOnce(Acc<A>) -> Acc<B>, arg: impl AsAcc<A>) -> Acc<B> {
        let loc = SrcLoc::caller();
        let p = Acc::<A>::param();
        let fallback = Lam { params: vec![p.r()], body: fallback(p).id };
        Acc::node(NodeKind::Foreign { func: self.func.clone(), fallback, arg: arg.as_acc().id }, loc)
    }
}

/// `f.call(fallback, arg)`, as Accelerate's `foreignAcc f fallback arg`.
#[track_caller]
pub fn foreign_acc<A: Arrays, B: Arrays>(
    f: &Foreign<A, B>,
    fallback: impl FnOnce(Acc<A>) -> Acc<B>,
    arg: impl AsAcc<A>,
) -> Acc<B> {
    f.call(fallback, arg)
}

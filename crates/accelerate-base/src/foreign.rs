//! Foreign functions: array functions implemented outside the language,
//! called from inside an array program (sequences thesis §6.1.1-6.1.2).
//!
//! A `ForeignAcc` names the function, states its result type, and holds
//! any number of implementations, each in the form one backend runs. It
//! travels through the IR and the plan untouched; the host walker asks
//! its backend for an implementation it can run, and runs the program's
//! fallback (written in the language) where there is none. As in the
//! thesis, where the backend finds "its" implementation by a dynamic
//! cast (`Typeable`), a backend finds its own by the implementation's
//! Rust type (`ForeignAcc::implementation`): host arrays for the
//! interpreter and the CPU backend (`HostImpl`), device arrays for the
//! CUDA backend (its own type, which only that backend can name). So no
//! layer below the backends knows what a device array is.
//!
//! What a host implementation may do: anything a Rust function may, with
//! its argument arrays (they are shared, read-only) and fresh result
//! arrays. What it may not do, the caller checks: results of a type other
//! than the declared one, an error it returns, and a panic (caught here,
//! never unwound through generated code or the worker pool) each become
//! `Error::Foreign` naming the user's line (`call_host`).

use crate::array::{ArraysTy, ArraysVal};
use crate::error::{Error, Result, SrcLoc};
use std::any::Any;
use std::fmt;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;

/// The implementation of a foreign function over host arrays: the
/// interpreter and the CPU backend run it.
pub type HostFn = dyn Fn(ArraysVal) -> std::result::Result<ArraysVal, String> + Send + Sync;

/// A host implementation (`HostFn`), as a type a backend can look for.
pub struct HostImpl(pub Box<HostFn>);

/// The implementation of a call the library makes itself, run by every
/// backend on host arrays (the CUDA backend copies the arguments to the
/// host and the results back), whose errors are the library's own: a
/// sequence collected into a larger program (`Consumed::collect`) is one,
/// running the sequence's chunk programs on the enclosing program's
/// backend. Such a call needs no fallback.
pub type RuntimeFn = dyn Fn(ArraysVal) -> Result<ArraysVal> + Send + Sync;

/// A runtime implementation (`RuntimeFn`), as a type a backend can look
/// for.
pub struct RuntimeImpl(pub Box<RuntimeFn>);

/// A foreign array function: its name (for messages and the plan's
/// text), the type of its result, and its implementations (shared by
/// its clones).
#[derive(Clone)]
pub struct ForeignAcc {
    pub name: String,
    pub result: ArraysTy,
    impls: Vec<Arc<dyn Any + Send + Sync>>,
}

impl ForeignAcc {
    pub fn new(name: impl Into<String>, result: ArraysTy) -> ForeignAcc {
        ForeignAcc { name: name.into(), result, impls: Vec::new() }
    }

    /// Adds an implementation in the form of type `T`; a backend that
    /// runs `T`s runs it (the first one added, where there are several).
    pub fn with_impl<T: Any + Send + Sync>(mut self, imp: T) -> ForeignAcc {
        self.impls.push(Arc::new(imp));
        self
    }

    /// The first implementation of type `T`, if any.
    pub fn implementation<T: Any>(&self) -> Option<&T> {
        self.impls.iter().find_map(|i| i.downcast_ref::<T>())
    }

    /// Whether any implementation is of type `T`.
    pub fn has<T: Any>(&self) -> bool {
        self.implementation::<T>().is_some()
    }

    /// The error of a call at `loc` that went wrong in the way `message`
    /// says.
    pub fn error(&self, loc: SrcLoc, message: impl Into<String>) -> Error {
        Error::Foreign { loc, name: self.name.clone(), message: message.into() }
    }

    /// Checks that a result has the declared type.
    pub fn check_result(&self, loc: SrcLoc, r: &ArraysVal) -> Result<()> {
        let ty = r.ty();
        if ty != self.result {
            return Err(
                self.error(loc, format!("returned {ty}, but it was declared to return {}", self.result))
            );
        }
        Ok(())
    }
}

impl fmt::Debug for ForeignAcc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "foreign {} -> {} ({} implementations)", self.name, self.result, self.impls.len())
    }
}

/// Runs `f`'s host implementation on `arg` for a call at `loc`, if it
/// has one (else its runtime implementation, `call_runtime`): its
/// result, checked, or the `Error::Foreign` of an error it returned, a
/// panic, or a result of the wrong type.
pub fn call_host(f: &ForeignAcc, loc: SrcLoc, arg: ArraysVal) -> Option<Result<ArraysVal>> {
    let Some(HostImpl(imp)) = f.implementation::<HostImpl>() else { return call_runtime(f, loc, arg) };
    Some(match catch_unwind(AssertUnwindSafe(|| imp(arg))) {
        Ok(Ok(r)) => f.check_result(loc, &r).map(|()| r),
        Ok(Err(message)) => Err(f.error(loc, message)),
        Err(panic) => Err(f.error(loc, format!("panicked: {}", panic_message(&*panic)))),
    })
}

/// Runs `f`'s runtime implementation (`RuntimeImpl`) on `arg`, if it has
/// one: its result, checked, or its own error unchanged; a panic (a bug
/// of the library, caught so that it does not unwind through a backend)
/// is an internal error.
pub fn call_runtime(f: &ForeignAcc, loc: SrcLoc, arg: ArraysVal) -> Option<Result<ArraysVal>> {
    let RuntimeImpl(imp) = f.implementation::<RuntimeImpl>()?;
    Some(match catch_unwind(AssertUnwindSafe(|| imp(arg))) {
        Ok(Ok(r)) => f.check_result(loc, &r).map(|()| r),
        Ok(Err(e)) => Err(e),
        Err(panic) => {
            Err(Error::Internal(format!("{} at {loc} panicked: {}", f.name, panic_message(&*panic))))
        }
    })
}

/// The error of a call of `f` at `loc` on a backend that has no
/// implementation of it, where it has no fallback either.
pub fn no_implementation(f: &ForeignAcc, loc: SrcLoc) -> Error {
    f.error(loc, "this backend has no implementation of it, and it has no fallback")
}

/// The message of a panic's payload, where it is a string.
pub fn panic_message(panic: &(dyn Any + Send)) -> String {
    if let Some(s) = panic.downcast_ref::<&str>() {
        (*s).to_string()
    } else if let Some(s) = panic.downcast_ref::<String>() {
        s.clone()
    } else {
        "a panic with no message".to_string()
    }
}

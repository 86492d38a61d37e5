//! What the exported C functions do: contexts, array handles, entry
//! points, and the errors of each (the `export!` macro's functions call
//! these, with the library's prefix in their symbols).
//!
//! Note [Handles are numbers]
//! A context or an array reaches C as an opaque pointer, but it is never
//! a pointer to memory: it is a number, the slot of a registry and the
//! generation of that slot (`Registry`), which this side looks up. So a
//! null handle, a handle of another context, a handle already freed (its
//! slot's generation has moved on) and a made-up value are each found
//! and answered with `ACC_ERROR_ARGUMENT` and a message, never followed:
//! the use-after-free that a C API of real pointers turns into undefined
//! behaviour is here a detected error (for 2^32 frees of one slot).
//!
//! Note [Nothing unwinds into C]
//! Every function catches panics (`guard`): a panic is a bug of the
//! library, reported as `ACC_ERROR_INTERNAL` with its message, and the
//! context stays usable. A program's own errors (`Error`: an index out
//! of bounds, a division by zero) are `ACC_ERROR_PROGRAM`, with the
//! message the Rust API gives, which names the line of the program.

use accelerate::array::{ArrayData, Arrays, ArraysTy, ArraysVal, Buffer, EltTy, ScalarTy};
use accelerate::{Backend, Config};
use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Mutex, MutexGuard};

/// The call succeeded.
pub const ACC_OK: c_int = 0;
/// The program raised an error (`Error`): out of bounds, division by
/// zero, a backend that cannot run, ...
pub const ACC_ERROR_PROGRAM: c_int = 1;
/// A bad call: a null, unknown or freed handle, an array of another type
/// or rank than the entry point takes, a bad shape or option.
pub const ACC_ERROR_ARGUMENT: c_int = 2;
/// A bug of the library (a panic), caught.
pub const ACC_ERROR_INTERNAL: c_int = 3;

/// The element types C can pass, in the order of their codes
/// (`type_code`): `ScalarTy::ALL`'s.
pub const TYPES: [ScalarTy; 12] = ScalarTy::ALL;

/// An element type's code in the C API.
pub fn type_code(t: ScalarTy) -> c_int {
    TYPES.iter().position(|&u| u == t).map_or(-1, |i| i as c_int)
}

/// The C type of an element type's values (`f16` as its bits).
pub fn c_type(t: ScalarTy) -> &'static str {
    match t {
        ScalarTy::Bool => "bool",
        ScalarTy::I8 => "int8_t",
        ScalarTy::I16 => "int16_t",
        ScalarTy::I32 => "int32_t",
        ScalarTy::I64 => "int64_t",
        ScalarTy::U8 => "uint8_t",
        ScalarTy::U16 | ScalarTy::F16 => "uint16_t",
        ScalarTy::U32 => "uint32_t",
        ScalarTy::U64 => "uint64_t",
        ScalarTy::F32 => "float",
        ScalarTy::F64 => "double",
    }
}

/// What went wrong in a call: its status code and message.
pub struct Failure {
    pub code: c_int,
    pub message: String,
}

impl Failure {
    pub fn argument(message: impl Into<String>) -> Failure {
        Failure { code: ACC_ERROR_ARGUMENT, message: message.into() }
    }
}

impl From<accelerate::Error> for Failure {
    fn from(e: accelerate::Error) -> Failure {
        Failure { code: ACC_ERROR_PROGRAM, message: e.to_string() }
    }
}

/// Values named by numbered handles (Note [Handles are numbers]).
struct Registry<T> {
    slots: Vec<(u32, Option<T>)>,
    free: Vec<usize>,
}

impl<T> Registry<T> {
    const fn new() -> Registry<T> {
        Registry { slots: Vec::new(), free: Vec::new() }
    }

    fn insert(&mut self, v: T) -> usize {
        let i = match self.free.pop() {
            Some(i) => i,
            None => {
                self.slots.push((0, None));
                self.slots.len() - 1
            }
        };
        self.slots[i].1 = Some(v);
        // generation in the high half, slot + 1 in the low: never 0
        ((self.slots[i].0 as usize) << 32) | (i + 1)
    }

    fn slot(&self, h: usize) -> Option<usize> {
        let (i, generation) = ((h & 0xffff_ffff).checked_sub(1)?, (h >> 32) as u32);
        (self.slots.get(i)?.0 == generation).then_some(i)
    }

    fn get(&self, h: usize) -> Option<&T> {
        self.slots[self.slot(h)?].1.as_ref()
    }

    fn remove(&mut self, h: usize) -> Option<T> {
        let i = self.slot(h)?;
        let v = self.slots[i].1.take()?;
        // a freed handle no longer names the slot; after 2^32 reuses the
        // slot is retired rather than let an old handle name it again
        self.slots[i].0 = self.slots[i].0.wrapping_add(1);
        if self.slots[i].0 != 0 {
            self.free.push(i);
        }
        Some(v)
    }
}

// The registry is a handle's only use of `usize`: handles fit a pointer
// (64-bit targets only, for the generation).
const _: () = assert!(usize::BITS == 64, "exported libraries need a 64-bit target");

/// An array held for C: its data and its shape as C reads it.
struct Stored {
    data: Arc<ArrayData>,
    shape: Box<[i64]>,
}

/// A context: the configuration its programs are compiled with, the
/// programs compiled so far (each on its first call), its arrays, and
/// the message of its last failed call.
pub struct Context {
    config: Config,
    programs: HashMap<&'static str, Arc<dyn Any + Send + Sync>>,
    arrays: Registry<Stored>,
    error: Option<CString>,
}

static CONTEXTS: Mutex<Registry<Arc<Mutex<Context>>>> = Mutex::new(Registry::new());

thread_local! {
    /// The message of the last failed call of this thread that had no
    /// context to keep it (creating one, or naming one that is not).
    static LAST_ERROR: RefCell<Option<CString>> = const { RefCell::new(None) };
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

fn c_string(message: String) -> CString {
    CString::new(message.replace('\0', " ")).unwrap_or_default()
}

fn set_last_error(message: String) {
    LAST_ERROR.with(|e| *e.borrow_mut() = Some(c_string(message)));
}

/// Runs `f`, catching a panic (Note [Nothing unwinds into C]).
fn guard<R>(f: impl FnOnce() -> Result<R, Failure>) -> Result<R, Failure> {
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(r) => r,
        Err(panic) => Err(Failure {
            code: ACC_ERROR_INTERNAL,
            message: format!(
                "internal error (a bug of the library): {}",
                accelerate::foreign::panic_message(&*panic)
            ),
        }),
    }
}

/// The context a handle names.
fn context(ctx: *mut c_void) -> Result<Arc<Mutex<Context>>, Failure> {
    if ctx.is_null() {
        return Err(Failure::argument("the context is null"));
    }
    lock(&CONTEXTS)
        .get(ctx as usize)
        .cloned()
        .ok_or_else(|| Failure::argument(format!("{ctx:p} is not a live context (freed, or never made)")))
}

/// Runs `f` on the context `ctx` names, keeping a failure's message
/// there (or in the thread's last error when there is no such context).
fn with_context<R>(
    ctx: *mut c_void,
    f: impl FnOnce(&mut Context) -> Result<R, Failure>,
) -> Result<R, Failure> {
    let c = match guard(|| context(ctx)) {
        Ok(c) => c,
        Err(fail) => {
            set_last_error(fail.message.clone());
            return Err(fail);
        }
    };
    let mut c = lock(&c);
    c.error = None;
    let r = guard(|| f(&mut c));
    if let Err(fail) = &r {
        c.error = Some(c_string(fail.message.clone()));
    }
    r
}

fn status(r: Result<(), Failure>) -> c_int {
    match r {
        Ok(()) => ACC_OK,
        Err(f) => f.code,
    }
}

/// Parses a context's options: `key=value` pairs separated by commas,
/// over the defaults of the environment (`Config::from_env`).
fn config_of(options: &str) -> Result<Config, Failure> {
    let mut config = Config::from_env().map_err(|e| Failure::argument(e.to_string()))?;
    for opt in options.split(',').map(str::trim).filter(|o| !o.is_empty()) {
        let (key, value) = opt.split_once('=').unwrap_or((opt, ""));
        match key.trim() {
            "backend" => {
                config.backend = match value.trim() {
                    "interp" => Backend::Interpreter,
                    "cpu" => Backend::Cpu,
                    #[cfg(feature = "cuda")]
                    "cuda" => Backend::Cuda,
                    other => {
                        return Err(Failure::argument(format!("unknown backend {other:?} in the options")))
                    }
                };
            }
            "threads" => {
                config.cpu.threads = value.trim().parse().map_err(|_| {
                    Failure::argument(format!(
                        "threads={value:?}: the number of worker threads is a whole number"
                    ))
                })?;
            }
            other => {
                return Err(Failure::argument(format!(
                    "unknown option {other:?} (the options are backend=interp|cpu|cuda and threads=N)"
                )))
            }
        }
    }
    Ok(config)
}

/// `<prefix>_context_new`: a context with the given options (null for
/// the defaults), or null (the reason from `<prefix>_context_error(NULL)`).
///
/// # Safety
/// `options` is null or a NUL-terminated string.
pub unsafe fn context_new(options: *const c_char) -> *mut c_void {
    let r = guard(|| {
        let opts = if options.is_null() {
            String::new()
        } else {
            // SAFETY: the caller passes a NUL-terminated string
            unsafe { CStr::from_ptr(options) }.to_string_lossy().into_owned()
        };
        let config = config_of(&opts)?;
        let c = Context { config, programs: HashMap::new(), arrays: Registry::new(), error: None };
        Ok(lock(&CONTEXTS).insert(Arc::new(Mutex::new(c))))
    });
    match r {
        Ok(h) => h as *mut c_void,
        Err(fail) => {
            set_last_error(fail.message);
            std::ptr::null_mut()
        }
    }
}

/// `<prefix>_context_free`: frees a context and every array it holds.
pub fn context_free(ctx: *mut c_void) -> c_int {
    let r = guard(|| {
        if ctx.is_null() {
            return Err(Failure::argument("the context is null"));
        }
        match lock(&CONTEXTS).remove(ctx as usize) {
            Some(_) => Ok(()),
            None => Err(Failure::argument(format!("{ctx:p} is not a live context (freed, or never made)"))),
        }
    });
    if let Err(f) = &r {
        set_last_error(f.message.clone());
    }
    status(r)
}

/// `<prefix>_context_error`: the message of the context's last failed
/// call (null if it succeeded), valid until the next call on the
/// context; with a null or dead context, this thread's last failure of
/// that kind.
pub fn context_error(ctx: *mut c_void) -> *const c_char {
    let own = guard(|| context(ctx)).ok().map(|c| lock(&c).error.as_ref().map(|e| e.as_ptr()));
    match own {
        Some(p) => p.unwrap_or(std::ptr::null()),
        None => LAST_ERROR.with(|e| e.borrow().as_ref().map_or(std::ptr::null(), |e| e.as_ptr())),
    }
}

/// The element type of a code.
fn scalar_ty(ty: c_int) -> Result<ScalarTy, Failure> {
    usize::try_from(ty).ok().and_then(|i| TYPES.get(i).copied()).ok_or_else(|| {
        Failure::argument(format!("{ty} is not an element type code (0 to {})", TYPES.len() - 1))
    })
}

/// `<prefix>_array_new`: a new array of element type `ty` (a code),
/// rank `rank`, extents `shape[0..rank]` (outermost first), with its
/// elements copied from `data` in row-major order; null on failure.
///
/// # Safety
/// `shape` points to `rank` extents (or is null with rank 0), and `data`
/// to the product of the extents elements of the type (or is null when
/// that product is 0).
pub unsafe fn array_new(
    ctx: *mut c_void,
    ty: c_int,
    rank: c_int,
    shape: *const i64,
    data: *const c_void,
) -> *mut c_void {
    let r = with_context(ctx, |c| {
        let t = scalar_ty(ty)?;
        let rank =
            usize::try_from(rank).map_err(|_| Failure::argument(format!("a negative rank, {rank}")))?;
        if rank > 0 && shape.is_null() {
            return Err(Failure::argument(format!("the shape of an array of rank {rank} is null")));
        }
        // SAFETY: the caller passes `rank` extents
        let extents: &[i64] =
            if rank == 0 { &[] } else { unsafe { std::slice::from_raw_parts(shape, rank) } };
        let mut dims = Vec::with_capacity(rank);
        let mut size = 1usize;
        for &e in extents {
            let d = usize::try_from(e)
                .map_err(|_| Failure::argument(format!("a negative extent in the shape {extents:?}")))?;
            size = size
                .checked_mul(d)
                .filter(|s| s.checked_mul(t.size_bytes()).is_some_and(|b| b <= isize::MAX as usize))
                .ok_or_else(|| Failure::argument(format!("the shape {extents:?} is too large")))?;
            dims.push(d);
        }
        let bytes = size * t.size_bytes();
        if bytes > 0 && data.is_null() {
            return Err(Failure::argument(format!("the data of an array of shape {extents:?} is null")));
        }
        // SAFETY: the caller passes `size` elements of the type
        let src: &[u8] =
            if bytes == 0 { &[] } else { unsafe { std::slice::from_raw_parts(data.cast(), bytes) } };
        let buf = Buffer::from_bytes(t, size, src).ok_or_else(|| {
            if t == ScalarTy::Bool {
                Failure::argument("a bool array's elements must be 0 or 1")
            } else {
                Failure {
                    code: ACC_ERROR_PROGRAM,
                    message: format!("not enough memory for an array of shape {extents:?}"),
                }
            }
        })?;
        let d = ArrayData::from_buffers(dims, EltTy::Scalar(t), vec![buf])
            .ok_or_else(|| Failure::argument("the data does not fit the shape"))?;
        Ok(c.arrays.insert(Stored { data: Arc::new(d), shape: extents.into() }))
    });
    r.map_or(std::ptr::null_mut(), |h| h as *mut c_void)
}

fn stored(c: &Context, arr: *const c_void) -> Result<&Stored, Failure> {
    if arr.is_null() {
        return Err(Failure::argument("the array is null"));
    }
    c.arrays.get(arr as usize).ok_or_else(|| {
        Failure::argument(format!("{arr:p} is not a live array of this context (freed, or never made)"))
    })
}

/// The element type of a stored array: always a scalar (only those are
/// made from C or returned to it).
fn elt_of(s: &Stored) -> Result<ScalarTy, Failure> {
    match s.data.elt_ty() {
        EltTy::Scalar(t) => Ok(*t),
        other => Err(Failure::argument(format!("an array of {other} cannot be read from C"))),
    }
}

/// `<prefix>_array_values`: copies an array's elements, row-major, to
/// `out`, after checking that it has the element type `ty` and rank
/// `rank` the caller expects (so that `out` is as large as the caller
/// thinks).
///
/// # Safety
/// `out` has room for the array's elements (the product of its shape).
pub unsafe fn array_values(
    ctx: *mut c_void,
    arr: *const c_void,
    ty: c_int,
    rank: c_int,
    out: *mut c_void,
) -> c_int {
    status(with_context(ctx, |c| {
        let s = stored(c, arr)?;
        let (t, want) = (elt_of(s)?, scalar_ty(ty)?);
        if t != want || s.shape.len() as c_int != rank {
            return Err(Failure::argument(format!(
                "the array is of {t}, rank {}, but {want}, rank {rank} was asked for",
                s.shape.len()
            )));
        }
        let bytes = s.data.buffers().first().map_or(&[][..], |b| b.bytes());
        if !bytes.is_empty() {
            if out.is_null() {
                return Err(Failure::argument("the output buffer is null"));
            }
            // SAFETY: the caller gives room for the array's elements
            unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), bytes.len()) };
        }
        Ok(())
    }))
}

/// `<prefix>_array_shape`: the array's extents (valid while it lives),
/// or null.
pub fn array_shape(ctx: *mut c_void, arr: *const c_void) -> *const i64 {
    with_context(ctx, |c| Ok(stored(c, arr)?.shape.as_ptr())).unwrap_or(std::ptr::null())
}

/// `<prefix>_array_rank`: the array's rank, or -1.
pub fn array_rank(ctx: *mut c_void, arr: *const c_void) -> c_int {
    with_context(ctx, |c| Ok(stored(c, arr)?.shape.len() as c_int)).unwrap_or(-1)
}

/// `<prefix>_array_type`: the code of the array's element type, or -1.
pub fn array_type(ctx: *mut c_void, arr: *const c_void) -> c_int {
    with_context(ctx, |c| Ok(type_code(elt_of(stored(c, arr)?)?))).unwrap_or(-1)
}

/// `<prefix>_array_free`: frees an array.
pub fn array_free(ctx: *mut c_void, arr: *mut c_void) -> c_int {
    status(with_context(ctx, |c| {
        stored(c, arr)?;
        c.arrays.remove(arr as usize);
        Ok(())
    }))
}

/// An entry point's call in progress: its context and name.
pub struct Call<'c> {
    ctx: &'c mut Context,
    entry: &'static str,
}

impl Call<'_> {
    /// The entry point's program, compiled on its first call in this
    /// context by `make` (with the context's configuration).
    pub fn program<P: Any + Send + Sync>(
        &mut self,
        make: impl FnOnce(Config) -> accelerate::Result<P>,
    ) -> Result<Arc<P>, Failure> {
        if let Some(p) = self.ctx.programs.get(self.entry).and_then(|p| p.clone().downcast::<P>().ok()) {
            return Ok(p);
        }
        let p = Arc::new(make(self.ctx.config.clone())?);
        self.ctx.programs.insert(self.entry, p.clone());
        Ok(p)
    }

    /// The argument `name` (position `pos`), an array of type `A`.
    pub fn input<A: Arrays>(&self, arr: *const c_void, pos: usize, name: &str) -> Result<A, Failure> {
        let at = || format!("argument {name} (number {}) of {}", pos + 1, self.entry);
        let s = stored(self.ctx, arr).map_err(|f| Failure::argument(format!("{}: {}", at(), f.message)))?;
        let want = A::arrays_ty();
        let got = ArraysVal::Array(s.data.clone());
        if got.ty() != want {
            return Err(Failure::argument(format!(
                "{}: an array of {} where one of {} is expected",
                at(),
                describe(&got.ty()),
                describe(&want)
            )));
        }
        A::from_arrays_val(got).map_err(Failure::from)
    }

    /// Writes the result's arrays (its leaves, in order) to `outs[0..]`.
    ///
    /// # Safety
    /// `outs` has room for as many handles as the result has arrays.
    pub unsafe fn outputs<R: Arrays>(&mut self, outs: *mut *mut c_void, r: &R) -> Result<(), Failure> {
        if outs.is_null() {
            return Err(Failure::argument("the array of results is null"));
        }
        let mut leaves = Vec::new();
        flatten(r.to_arrays_val(), &mut leaves);
        for (i, data) in leaves.into_iter().enumerate() {
            let shape = data.shape().iter().map(|&d| d as i64).collect();
            let h = self.ctx.arrays.insert(Stored { data, shape });
            // SAFETY: the caller gives room for every result
            unsafe { outs.add(i).write(h as *mut c_void) };
        }
        Ok(())
    }
}

/// An array type as the C API names it: `f32 rank 1`.
fn describe(t: &ArraysTy) -> String {
    match t {
        ArraysTy::Array(a) => format!("{} rank {}", a.elt, a.rank),
        other => other.to_string(),
    }
}

fn flatten(v: ArraysVal, out: &mut Vec<Arc<ArrayData>>) {
    match v {
        ArraysVal::Array(a) => out.push(a),
        ArraysVal::Tuple(ts) => ts.into_iter().for_each(|t| flatten(t, out)),
    }
}

/// An entry point: runs `f` on the context's call, catching panics and
/// keeping a failure's message in the context.
pub fn entry(
    ctx: *mut c_void,
    name: &'static str,
    f: impl FnOnce(&mut Call<'_>) -> Result<(), Failure>,
) -> c_int {
    status(with_context(ctx, |c| f(&mut Call { ctx: c, entry: name })))
}

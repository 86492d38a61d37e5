//! Foreign functions on the device (sequences thesis §6.1.1-6.1.2): the
//! CUDA backend's form of an implementation, `CudaImpl`, a function over
//! the device addresses of its arguments that allocates its results on
//! the device, as the thesis' `withDevicePtr` and `allocateArray` do, so
//! that a library such as cuBLAS reads and writes device memory with no
//! copy through the host. A foreign function without one runs its
//! fallback on this backend (`host::Machine::foreign`).
//!
//! The call holds the memory manager's lock from making the arguments'
//! buffers resident to taking the results in: nothing it can see is
//! evicted meanwhile, and every earlier launch has finished (launches are
//! synchronous, `exec`). An implementation must have finished its own
//! device work when it returns.

use super::device::Device;
use super::exec::{lock, DeviceArray, OnDevice, Stored};
use super::memory::{BufId, MemoryManager};
use crate::host::{HostArray, Value};
use accelerate_base::array::{ArraysTy, ScalarTy};
use accelerate_base::error::{Result, SrcLoc};
use accelerate_base::foreign::{call_runtime, panic_message, ForeignAcc, RuntimeImpl};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

/// What a device implementation is given and may do: its arguments'
/// buffers (one per leaf of each argument array's element type, in the
/// order of the argument's arrays), and the results it allocates, in
/// the order of the result type's arrays and their leaves.
pub trait DeviceCall {
    /// The arguments' buffers.
    fn args(&self) -> &[DeviceBuffer];
    /// A buffer of `n` elements of type `elt` for the next result leaf,
    /// part of a result array of shape `shape`: its device address.
    fn result(&mut self, elt: ScalarTy, shape: &[usize]) -> std::result::Result<u64, String>;
    /// Argument buffer `i`'s bytes, copied to the host (for
    /// implementations that work there, and for tests).
    fn download(&mut self, i: usize) -> std::result::Result<Vec<u8>, String>;
    /// The next result leaf from bytes on the host.
    fn upload_result(
        &mut self,
        elt: ScalarTy,
        shape: &[usize],
        bytes: &[u8],
    ) -> std::result::Result<(), String>;
}

/// One buffer of an argument: the shape of its array, its element type,
/// and its device address (valid during the call).
#[derive(Clone, Debug)]
pub struct DeviceBuffer {
    pub shape: Vec<usize>,
    pub elt: ScalarTy,
    pub address: u64,
}

/// The function a device implementation is.
pub type DeviceFn = dyn Fn(&mut dyn DeviceCall) -> std::result::Result<(), String> + Send + Sync;

/// A foreign function's implementation for the CUDA backend
/// (`Foreign::with_impl(CudaImpl(Box::new(...)))`).
pub struct CudaImpl(pub Box<DeviceFn>);

/// A result leaf the implementation made: its buffer and array's shape.
struct Made {
    id: BufId,
    elt: ScalarTy,
    shape: Vec<usize>,
}

struct Call<'m, D: Device> {
    mem: &'m mut MemoryManager<D>,
    args: Vec<DeviceBuffer>,
    ids: Vec<BufId>,
    made: Vec<Made>,
}

impl<D: Device> Call<'_, D> {
    fn size(elt: ScalarTy, shape: &[usize]) -> std::result::Result<usize, String> {
        shape
            .iter()
            .try_fold(elt.size_bytes(), |b, &d| b.checked_mul(d))
            .ok_or_else(|| format!("a result of shape {shape:?} is too large"))
    }
}

impl<D: Device> DeviceCall for Call<'_, D> {
    fn args(&self) -> &[DeviceBuffer] {
        &self.args
    }

    fn result(&mut self, elt: ScalarTy, shape: &[usize]) -> std::result::Result<u64, String> {
        let bytes = Self::size(elt, shape)?;
        let id = self.mem.insert_device(bytes).map_err(|e| format!("allocating a result: {e:?}"))?;
        self.made.push(Made { id, elt, shape: shape.to_vec() });
        self.mem.address(id).ok_or_else(|| "a result buffer is not on the device".to_string())
    }

    fn download(&mut self, i: usize) -> std::result::Result<Vec<u8>, String> {
        let id = *self.ids.get(i).ok_or_else(|| format!("no argument buffer {i}"))?;
        self.mem.read(id).map(<[u8]>::to_vec).map_err(|e| format!("reading argument buffer {i}: {e:?}"))
    }

    fn upload_result(
        &mut self,
        elt: ScalarTy,
        shape: &[usize],
        bytes: &[u8],
    ) -> std::result::Result<(), String> {
        let want = Self::size(elt, shape)?;
        if bytes.len() != want {
            return Err(format!(
                "{} bytes for a result of {want} bytes ({elt}, shape {shape:?})",
                bytes.len()
            ));
        }
        let id = self.mem.insert_host(bytes.to_vec());
        self.made.push(Made { id, elt, shape: shape.to_vec() });
        Ok(())
    }
}

/// `Machine::foreign` of the CUDA backend: `f`'s `CudaImpl`, if it has
/// one, run on `arg`'s device buffers; its results checked against `f`'s
/// declared type.
pub(super) fn call<D: Device>(
    on: &OnDevice<'_, D>,
    f: &ForeignAcc,
    loc: SrcLoc,
    arg: &Value<DeviceArray<D>>,
) -> Option<Result<Value<DeviceArray<D>>>> {
    let Some(CudaImpl(imp)) = f.implementation::<CudaImpl>() else { return runtime(on, f, loc, arg) };
    let mut arrays = Vec::new();
    leaves(arg, &mut arrays);
    let mut m = lock(on.mem);
    let mut args = Vec::new();
    let mut ids = Vec::new();
    for a in &arrays {
        for (&id, t) in a.stored.bufs.iter().zip(a.elt.leaves()) {
            args.push((a.shape().to_vec(), t));
            ids.push(id);
        }
    }
    let addrs = match m.prepare(&ids) {
        Ok(a) => a,
        Err(e) => return Some(Err(f.error(loc, format!("making its arguments resident: {e:?}")))),
    };
    let args = args
        .into_iter()
        .zip(addrs)
        .map(|((shape, elt), address)| DeviceBuffer { shape, elt, address })
        .collect();
    let mut c = Call { mem: &mut m, args, ids, made: Vec::new() };
    let r = catch_unwind(AssertUnwindSafe(|| imp(&mut c)));
    let made = std::mem::take(&mut c.made);
    m.unpin();
    for x in &made {
        m.written(x.id);
    }
    drop(m);
    let r = match r {
        Ok(Ok(())) => {
            let mut next = 0;
            check(&f.result, &made, &mut next)
                .and_then(|()| {
                    (next == made.len())
                        .then_some(())
                        .ok_or_else(|| format!("{} result buffers too many", made.len() - next))
                })
                .map_err(|m| {
                    let bufs: Vec<_> = made.iter().map(|x| (x.elt, x.shape.clone())).collect();
                    f.error(
                        loc,
                        format!("its results do not make the declared {}: {m} (buffers {bufs:?})", f.result),
                    )
                })
        }
        Ok(Err(message)) => Err(f.error(loc, message)),
        Err(panic) => Err(f.error(loc, format!("panicked: {}", panic_message(&*panic)))),
    };
    Some(match r {
        Ok(()) => Ok(assemble(on, &f.result, &made, &mut 0)),
        Err(e) => {
            let mut m = lock(on.mem);
            for x in &made {
                m.remove(x.id);
            }
            Err(e)
        }
    })
}

/// A runtime implementation (`base::foreign::RuntimeImpl`, a collected
/// sequence) on this backend: the arguments brought to the host, the
/// results handed back as a run's arguments are (`super::upload`).
fn runtime<D: Device>(
    on: &OnDevice<'_, D>,
    f: &ForeignAcc,
    loc: SrcLoc,
    arg: &Value<DeviceArray<D>>,
) -> Option<Result<Value<DeviceArray<D>>>> {
    if !f.has::<RuntimeImpl>() {
        return None;
    }
    let host = match super::download(arg.clone()) {
        Ok(h) => h,
        Err(e) => return Some(Err(e)),
    };
    call_runtime(f, loc, host).map(|r| r.and_then(|v| super::upload(on, v)))
}

fn leaves<'a, D: Device>(v: &'a Value<DeviceArray<D>>, out: &mut Vec<&'a DeviceArray<D>>) {
    match v {
        Value::Array(a) => out.push(a),
        Value::Tuple(vs) => vs.iter().for_each(|v| leaves(v, out)),
    }
}

/// Whether the made leaves from `*next` on make a value of type `ty`:
/// each array's leaves of its element type's leaves, of one shape of its
/// rank.
fn check(ty: &ArraysTy, made: &[Made], next: &mut usize) -> std::result::Result<(), String> {
    match ty {
        ArraysTy::Tuple(ts) => ts.iter().try_for_each(|t| check(t, made, next)),
        ArraysTy::Array(a) => {
            let want = a.elt.leaves();
            let got = made.get(*next..*next + want.len()).ok_or("too few result buffers")?;
            let shape = &got[0].shape;
            if got.iter().zip(&want).any(|(x, t)| x.elt != *t || &x.shape != shape) || shape.len() != a.rank {
                return Err(format!("an array of {} rank {} expected from buffer {next}", a.elt, a.rank));
            }
            *next += want.len();
            Ok(())
        }
    }
}

/// The value of type `ty` from the made leaves from `*next` on (checked
/// by `check`).
fn assemble<D: Device>(
    on: &OnDevice<'_, D>,
    ty: &ArraysTy,
    made: &[Made],
    next: &mut usize,
) -> Value<DeviceArray<D>> {
    match ty {
        ArraysTy::Tuple(ts) => Value::Tuple(ts.iter().map(|t| assemble(on, t, made, next)).collect()),
        ArraysTy::Array(a) => {
            let n = a.elt.leaves().len();
            let got = &made[*next..*next + n];
            *next += n;
            let stored = Arc::new(Stored { mem: on.mem.clone(), bufs: got.iter().map(|x| x.id).collect() });
            let shape = got.first().map(|x| x.shape.clone()).unwrap_or_default();
            Value::Array(DeviceArray { shape, elt: a.elt.clone(), stored, host: Arc::new(OnceLock::new()) })
        }
    }
}

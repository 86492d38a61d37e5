//! The executor on a device: a `host::Machine` whose arrays live in the
//! device memory manager, and each skeleton's launches (how many blocks,
//! which parameters and temporaries: the skeleton files' "Launch" lines).
//!
//! An array is a handle on its buffers in the manager (one per leaf),
//! freed when its last handle drops; its host copy is made the first time
//! host code reads it (a shape never needs one: the handle has it). An
//! input's buffers share the user's array as their host copy.
//!
//! A launch holds the manager's lock from making its buffers resident to
//! reading its error record, so that no other thread evicts them; the
//! kernel's error record (zeroed) and its arguments (`acc_args`: the
//! buffers' device addresses, the extents, the parameters and the hoisted
//! literals) travel as one small buffer. After each launch the host reads
//! the error record back, which waits for the kernel; a kernel that raised
//! an error is the program's error.
//!
//! Launches are therefore in order, one at a time: independent let-bound
//! computations do not overlap on streams. Making launches asynchronous
//! needs each array to carry the error records of the kernels it depends
//! on, checked when the host reads it, so that a failed binding still
//! fails only its uses (Note [Deferred errors]); that is not done yet.

use super::device::{Copier, Device, KernelArgs, BLOCK};
use super::memory::{BufId, HostBytes, MemoryError, MemoryManager};
use super::{fold, fold_seg, generate, permute, scan, stencil};
use crate::c::host::AccErr;
use crate::c::kernel::{Kernel, Skeleton};
use crate::host::{Env, HostArray, Machine, Value};
use accelerate_base::array::{ArrayData, Buffer, EltTy};
use accelerate_base::error::{Error, Result, SrcLoc};
use accelerate_base::foreign::ForeignAcc;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// A device and its memory, shared by every program that runs on it.
pub(crate) type Shared<D> = Arc<Mutex<MemoryManager<D>>>;

pub(super) fn lock<D: Device>(mem: &Shared<D>) -> MutexGuard<'_, MemoryManager<D>> {
    mem.lock().unwrap_or_else(|e| e.into_inner())
}

fn memory_error(e: MemoryError, loc: SrcLoc, shape: &[usize]) -> Error {
    match e {
        MemoryError::OutOfMemory { .. } => Error::OutOfMemory { loc, shape: shape.to_vec() },
        MemoryError::Device(m) => Error::Internal(format!("CUDA device: {m}")),
        MemoryError::UnknownBuffer(id) => {
            Error::Internal(format!("device buffer {id:?} is not in the manager"))
        }
    }
}

/// An array's buffers in the manager, freed with the last handle.
pub(crate) struct Stored<D: Device> {
    pub(super) mem: Shared<D>,
    pub(super) bufs: Vec<BufId>,
}

impl<D: Device> Drop for Stored<D> {
    fn drop(&mut self) {
        let mut m = lock(&self.mem);
        for &b in &self.bufs {
            m.remove(b);
        }
    }
}

/// An array on the device.
pub(crate) struct DeviceArray<D: Device> {
    pub(super) shape: Vec<usize>,
    pub(super) elt: EltTy,
    pub(super) stored: Arc<Stored<D>>,
    pub(super) host: Arc<OnceLock<Arc<ArrayData>>>,
}

impl<D: Device> Clone for DeviceArray<D> {
    fn clone(&self) -> Self {
        DeviceArray {
            shape: self.shape.clone(),
            elt: self.elt.clone(),
            stored: self.stored.clone(),
            host: self.host.clone(),
        }
    }
}

impl<D: Device> HostArray for DeviceArray<D> {
    fn shape(&self) -> &[usize] {
        &self.shape
    }

    fn host(&self) -> Result<&Arc<ArrayData>> {
        if let Some(h) = self.host.get() {
            return Ok(h);
        }
        let n: usize = self.shape.iter().product();
        let mut m = lock(&self.stored.mem);
        let mut buffers = Vec::with_capacity(self.stored.bufs.len());
        for (&id, ty) in self.stored.bufs.iter().zip(self.elt.leaves()) {
            let bytes =
                m.read(id).map_err(|e| Error::Internal(format!("reading a device array back: {e:?}")))?;
            let b = Buffer::from_bytes(ty, n, bytes).ok_or_else(|| {
                Error::Internal(format!("a device array of {n} {ty:?} came back malformed or without memory"))
            })?;
            buffers.push(b);
        }
        drop(m);
        let a = ArrayData::from_buffers(self.shape.clone(), self.elt.clone(), buffers)
            .ok_or_else(|| Error::Internal("a device array came back of the wrong size".into()))?;
        let _ = self.host.set(Arc::new(a));
        Ok(self.host.get().expect("set above"))
    }
}

/// One buffer of a host array, as the manager's host copy of it.
struct Leaf(Arc<ArrayData>, usize);

/// Where each buffer of an array copied ahead goes, and its bytes.
pub(super) type Copies = Vec<(u64, HostBytes)>;

/// A host array given device memory to be filled beside the launches of
/// other threads (`MemoryManager::reserve`): its device array, and each
/// buffer's address and bytes, for the copies (`fill_ahead`); `None`
/// where the device has no room for it (the run that needs it copies it
/// then).
pub(super) fn reserve_ahead<D: Device>(
    mem: &Shared<D>,
    a: &Arc<ArrayData>,
) -> Option<(DeviceArray<D>, Copies)> {
    let mut m = lock(mem);
    let mut bufs = Vec::with_capacity(a.buffers().len());
    let mut copies = Vec::with_capacity(a.buffers().len());
    for i in 0..a.buffers().len() {
        let leaf: HostBytes = Arc::new(Leaf(a.clone(), i));
        match m.reserve(leaf.clone()) {
            Ok((id, addr)) => {
                bufs.push(id);
                copies.push((addr, leaf));
            }
            Err(_) => {
                for id in bufs {
                    m.remove(id);
                }
                return None;
            }
        }
    }
    drop(m);
    Some((of_host(mem, a.clone(), bufs), copies))
}

/// The device array of the host array `a` whose buffers in the manager
/// are `bufs` (one per leaf), with `a` as its host copy.
fn of_host<D: Device>(mem: &Shared<D>, a: Arc<ArrayData>, bufs: Vec<BufId>) -> DeviceArray<D> {
    let stored = Arc::new(Stored { mem: mem.clone(), bufs });
    let (shape, elt) = (a.shape().to_vec(), a.elt_ty().clone());
    let host = Arc::new(OnceLock::new());
    let _ = host.set(a);
    DeviceArray { shape, elt, stored, host }
}

/// Fills a device array `reserve_ahead` made, by `copier`, without the
/// manager's lock until the copies are done; false if a copy failed
/// (the array is then dropped, and its buffers with it).
pub(super) fn fill_ahead<D: Device>(copier: &dyn Copier, d: &DeviceArray<D>, copies: &Copies) -> bool {
    // SAFETY: the manager holds each buffer, of its leaf's length, for
    // this array alone until `filled` below (no other array has its
    // name), and each leaf lives through its copy
    let ok = copies.iter().all(|(addr, leaf)| unsafe { copier.upload(*addr, (**leaf).as_ref()) }.is_ok());
    let mut m = lock(&d.stored.mem);
    for &id in &d.stored.bufs {
        m.filled(id);
    }
    ok
}

impl AsRef<[u8]> for Leaf {
    fn as_ref(&self) -> &[u8] {
        self.0.buffers()[self.1].bytes()
    }
}

/// Host arrays and their device copies, by the identity of the host
/// array (Note [Resident inputs]).
pub(crate) type Resident<D> = Vec<(Arc<ArrayData>, DeviceArray<D>)>;

// Note [Resident inputs]
// A compiled program run again on the same arrays (the same `Arc`, as
// `Program::run` passes a typed array's) should not copy them to the
// device again: a copy over PCIe costs far more than most kernels that
// read it. So a program remembers the device copies of the host arrays
// its last run uploaded (its arguments and its `use`d arrays), and a run
// given one of them again takes the device copy. Only the last run's are
// kept: the memory they pin on the host and, until evicted, on the device
// is that of one run's inputs, freed with the program or replaced by the
// next run's. (Accelerate's memory table does this for every array, with
// weak pointers and finalisers; this is the part that the common pattern
// of a compiled program run in a loop needs.)

/// A program's kernels loaded on a device.
pub(crate) struct OnDevice<'a, D: Device> {
    pub mem: &'a Shared<D>,
    pub module: &'a D::Module,
    /// The device copies of the last run's host arrays, and this run's.
    pub last: &'a Resident<D>,
    pub now: Mutex<Resident<D>>,
}

impl<D: Device> Machine for OnDevice<'_, D> {
    type Array = DeviceArray<D>;
    type Kernel = Kernel;

    fn uses<'k>(&self, k: &'k Kernel) -> &'k [usize] {
        &k.uses
    }

    fn upload(&self, a: Arc<ArrayData>) -> Result<DeviceArray<D>> {
        let mut now = self.now.lock().unwrap_or_else(|e| e.into_inner());
        let known = |r: &Resident<D>| r.iter().find(|(h, _)| Arc::ptr_eq(h, &a)).map(|(_, d)| d.clone());
        if let Some(d) = known(&now).or_else(|| known(self.last)) {
            now.push((a, d.clone()));
            return Ok(d);
        }
        let d = self.copy_in(a.clone());
        now.push((a, d.clone()));
        Ok(d)
    }

    fn reshaped(&self, a: &DeviceArray<D>, dims: Vec<usize>) -> DeviceArray<D> {
        let host = Arc::new(OnceLock::new());
        if let Some(h) = a.host.get() {
            let _ = host.set(Arc::new(h.reshaped(dims.clone())));
        }
        DeviceArray { shape: dims, elt: a.elt.clone(), stored: a.stored.clone(), host }
    }

    fn unzip(&self, a: DeviceArray<D>) -> Result<Vec<DeviceArray<D>>> {
        let EltTy::Tuple(parts) = a.elt.clone() else {
            return Err(Error::Internal("unzip of an array of no tuples".into()));
        };
        let host = a.host.get().cloned();
        match Arc::try_unwrap(a.stored) {
            // a kernel's fresh result: its buffers are shared out
            Ok(mut stored) => {
                let mut bufs = std::mem::take(&mut stored.bufs).into_iter();
                let host_parts = match host {
                    Some(h) => crate::host::unzip_host(h)?.into_iter().map(Some).collect(),
                    None => vec![None; parts.len()],
                };
                Ok(parts
                    .into_iter()
                    .zip(host_parts)
                    .map(|(elt, h)| {
                        let own = bufs.by_ref().take(elt.leaves().len()).collect();
                        let host = Arc::new(OnceLock::new());
                        if let Some(h) = h {
                            let _ = host.set(h);
                        }
                        let stored = Arc::new(Stored { mem: stored.mem.clone(), bufs: own });
                        DeviceArray { shape: a.shape.clone(), elt, stored, host }
                    })
                    .collect())
            }
            // held elsewhere too: through the host
            Err(stored) => {
                let whole = DeviceArray { shape: a.shape, elt: a.elt, stored, host: a.host };
                let h = whole.host()?.clone();
                crate::host::unzip_host(h)?.into_iter().map(|p| self.upload(p)).collect()
            }
        }
    }

    fn foreign(
        &self,
        f: &ForeignAcc,
        loc: SrcLoc,
        arg: &Value<DeviceArray<D>>,
    ) -> Option<Result<Value<DeviceArray<D>>>> {
        super::foreign::call(self, f, loc, arg)
    }

    fn kernel(&self, k: &Kernel, env: &Env<DeviceArray<D>>) -> Result<Value<DeviceArray<D>>> {
        let inputs = k.inputs.iter().map(|&v| env.array(v).cloned()).collect::<Result<Vec<_>>>()?;
        let grid = lock(self.mem).device().blocks() as usize;
        let launch = Launch { k, on: self, inputs, grid };
        let one = match &k.skeleton {
            Skeleton::Generate { shape } => generate::launch(&launch, env, shape),
            Skeleton::Fold { seed, source, op, keep } => {
                match fold::launch(&launch, env, *seed, source, op, keep.as_ref())? {
                    (out, Some(kept)) => {
                        return Ok(Value::Tuple(vec![Value::Array(kept), Value::Array(out)]))
                    }
                    (out, None) => Ok(out),
                }
            }
            Skeleton::Scan { seed, source, op } => scan::launch(&launch, env, *seed, source, op),
            Skeleton::FoldSeg { seed, source, offsets, op } => {
                fold_seg::launch(&launch, env, *seed, source, *offsets, op)
            }
            Skeleton::Permute { defaults, source, atomic, .. } => {
                permute::launch(&launch, env, *defaults, source, *atomic)
            }
            Skeleton::Stencil { sources, extents } => stencil::launch(&launch, env, sources, extents),
        };
        one.map(Value::Array)
    }
}

impl<D: Device> OnDevice<'_, D> {
    /// A host array as a device array, copied to the device when a kernel
    /// first reads it.
    fn copy_in(&self, a: Arc<ArrayData>) -> DeviceArray<D> {
        let mut m = lock(self.mem);
        let bufs = (0..a.buffers().len()).map(|i| m.insert_shared(Arc::new(Leaf(a.clone(), i)))).collect();
        drop(m);
        of_host(self.mem, a, bufs)
    }

    /// A device array of this type and shape for a kernel to write:
    /// `ShapeTooLarge` if it cannot be addressed, `OutOfMemory` if even
    /// evicting every other array leaves no room.
    pub(super) fn alloc(&self, elt: &EltTy, dims: &[usize], loc: SrcLoc) -> Result<DeviceArray<D>> {
        let extents: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        accelerate_base::array::shape::checked_extents(&extents, elt.size_bytes(), loc)?;
        let n: usize = dims.iter().product();
        let mut m = lock(self.mem);
        let mut bufs = Vec::new();
        for t in elt.leaves() {
            match m.insert_device(n * t.size_bytes()) {
                Ok(id) => bufs.push(id),
                Err(e) => {
                    for b in bufs {
                        m.remove(b);
                    }
                    return Err(memory_error(e, loc, dims));
                }
            }
        }
        drop(m);
        let stored = Arc::new(Stored { mem: self.mem.clone(), bufs });
        Ok(DeviceArray { shape: dims.to_vec(), elt: elt.clone(), stored, host: Arc::new(OnceLock::new()) })
    }

    /// `alloc`, zeroed.
    pub(super) fn zeroed(&self, elt: &EltTy, dims: &[usize], loc: SrcLoc) -> Result<DeviceArray<D>> {
        let a = self.alloc(elt, dims, loc)?;
        let n: usize = dims.iter().product();
        let mut m = lock(self.mem);
        let addrs = m.prepare(&a.stored.bufs).map_err(|e| memory_error(e, loc, dims))?;
        for (addr, t) in addrs.iter().zip(elt.leaves()) {
            m.device_mut().zero(*addr, n * t.size_bytes())?;
        }
        m.unpin();
        Ok(a)
    }

    /// Copies the elements of `from` into `to` (of the same type and size)
    /// on the device.
    pub(super) fn copy(&self, from: &DeviceArray<D>, to: &DeviceArray<D>, loc: SrcLoc) -> Result<()> {
        let n: usize = from.shape.iter().product();
        let mut m = lock(self.mem);
        let ids: Vec<BufId> = from.stored.bufs.iter().chain(&to.stored.bufs).copied().collect();
        let addrs = m.prepare(&ids).map_err(|e| memory_error(e, loc, &from.shape))?;
        let leaves = from.elt.leaves();
        for (i, t) in leaves.iter().enumerate() {
            m.device_mut().copy(addrs[i], addrs[leaves.len() + i], n * t.size_bytes())?;
            m.written(to.stored.bufs[i]);
        }
        m.unpin();
        Ok(())
    }
}

/// What every launch of one kernel shares: the kernel, the device, its
/// inputs and the device's grid (the most blocks worth launching). Each
/// skeleton's file launches its functions through it (`launch`).
pub(super) struct Launch<'a, 'b, D: Device> {
    pub k: &'a Kernel,
    pub on: &'a OnDevice<'b, D>,
    inputs: Vec<DeviceArray<D>>,
    pub grid: usize,
}

impl<D: Device> Launch<'_, '_, D> {
    /// Blocks for `threads` threads, at most the grid.
    pub fn blocks(&self, threads: usize) -> u32 {
        threads.div_ceil(BLOCK as usize).clamp(1, self.grid) as u32
    }

    /// Runs kernel function `suffix` on `blocks` blocks, with the output,
    /// the temporaries, the kernel's own extents and parameters; an error
    /// the kernel raised becomes the program's.
    pub fn run(
        &self,
        suffix: &str,
        blocks: u32,
        out: &DeviceArray<D>,
        tmp: &[&DeviceArray<D>],
        own_extents: &[usize],
        params: &[i64],
    ) -> Result<()> {
        let k = self.k;
        let mut ids: Vec<BufId> = Vec::new();
        let mut extents: Vec<i64> = Vec::new();
        for a in &self.inputs {
            ids.extend(&a.stored.bufs);
            extents.extend(a.shape.iter().map(|&d| d as i64));
        }
        let written_from = ids.len();
        ids.extend(&out.stored.bufs);
        for t in tmp {
            ids.extend(&t.stored.bufs);
        }
        extents.extend(own_extents.iter().map(|&d| d as i64));
        let nbufs = ids.len();

        let mut m = lock(self.on.mem);
        let addrs = match m.prepare(&ids) {
            Ok(a) => a,
            Err(e) => {
                m.unpin();
                return Err(memory_error(e, k.loc, own_extents));
            }
        };
        // one block travels: the error record (zeroed), then the argument
        // words (addresses, extents, parameters, literals)
        let record = std::mem::size_of::<AccErr>();
        let words: Vec<i64> = addrs
            .iter()
            .map(|&a| a as i64)
            .chain(extents.iter().copied())
            .chain(params.iter().copied())
            .chain(k.consts.iter().copied())
            .collect();
        let mut bytes = vec![0u8; record];
        bytes.extend(words.iter().flat_map(|w| w.to_ne_bytes()));
        let block = m.insert_host(bytes);
        ids.push(block);
        let result = (|| {
            let addrs = m.prepare(&ids).map_err(|e| memory_error(e, k.loc, own_extents))?;
            let err = addrs[nbufs];
            let at = |words: usize| err + (record + 8 * words) as u64;
            let args = KernelArgs {
                bufs: at(0),
                extents: at(nbufs),
                params: at(nbufs + extents.len()),
                consts: at(nbufs + extents.len() + params.len()),
                err,
            };
            let name = format!("{}{suffix}", k.name);
            m.device_mut().launch(self.on.module, &name, blocks, args)?;
            for &id in &ids[written_from..] {
                m.written(id);
            }
            let bytes = m.read(block).map_err(|e| memory_error(e, k.loc, own_extents))?;
            // SAFETY: `AccErr` is `#[repr(C)]` plain data, any bits valid,
            // and the block starts with one (`record` bytes).
            let record: AccErr = unsafe { std::ptr::read_unaligned(bytes.as_ptr().cast::<AccErr>()) };
            if record.code != 0 {
                return Err(record.error(k));
            }
            Ok(())
        })();
        m.remove(block);
        m.unpin();
        result
    }
}

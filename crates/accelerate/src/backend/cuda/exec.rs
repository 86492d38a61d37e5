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

use super::device::{Device, KernelArgs, BLOCK};
use super::memory::{BufId, MemoryError, MemoryManager};
use crate::array::{ArrayData, Buffer, EltTy, ScalarTy};
use crate::backend::c::host::{rows_of, segments, shape_of, stencil_shape, AccErr};
use crate::backend::c::kernel::{Kernel, Skeleton};
use crate::backend::host::{Env, HostArray, Machine};
use crate::backend::interp::split_inner;
use crate::exec::error::{Error, Result, SrcLoc};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

/// Rows of at most this many elements are folded by a warp each (four
/// elements a lane), longer ones by a block (`fold.rs`).
const SHORT_ROW: usize = 128;

/// Segments of at least this many elements on average are folded by a
/// block each, shorter ones by a warp (`fold_seg.rs`).
const LONG_SEGMENT: usize = 1024;

/// A device and its memory, shared by every program that runs on it.
pub(crate) type Shared<D> = Arc<Mutex<MemoryManager<D>>>;

fn lock<D: Device>(mem: &Shared<D>) -> MutexGuard<'_, MemoryManager<D>> {
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
    mem: Shared<D>,
    bufs: Vec<BufId>,
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
    shape: Vec<usize>,
    elt: EltTy,
    stored: Arc<Stored<D>>,
    host: Arc<OnceLock<Arc<ArrayData>>>,
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

    fn kernel(&self, k: &Kernel, env: &Env<DeviceArray<D>>) -> Result<DeviceArray<D>> {
        let inputs = k.inputs.iter().map(|&v| env.array(v).cloned()).collect::<Result<Vec<_>>>()?;
        let g = lock(self.mem).device().blocks() as usize;
        let blocks = |threads: usize| threads.div_ceil(BLOCK as usize).clamp(1, g) as u32;
        let launch = Launch { k, on: self, inputs };
        match &k.skeleton {
            Skeleton::Generate { shape } => {
                let dims = shape_of(env, shape)?;
                let size: usize = dims.iter().product();
                let out = self.alloc(&k.elt, &dims, k.loc)?;
                if size > 0 {
                    launch.run("", blocks(size), &out, &[], &dims, &[])?;
                }
                Ok(out)
            }
            Skeleton::Fold { seed, source, op } => {
                let shape = shape_of(env, source)?;
                let (outer, n, rows) = rows_of(k, &shape, *seed, op)?;
                let out = self.alloc(&k.elt, &outer, k.loc)?;
                if rows == 0 {
                    return Ok(out);
                }
                // a block per row, unless the rows are too few to fill the
                // device and long enough to cut (fold.rs)
                let piece = (8 * BLOCK as usize).max(n.div_ceil(g.div_ceil(rows)));
                if n <= SHORT_ROW {
                    launch.run("_warps", blocks(32 * rows), &out, &[], &shape, &[])?;
                } else if rows >= g || n <= piece {
                    launch.run("_rows", rows.min(g) as u32, &out, &[], &shape, &[])?;
                } else {
                    let m = n.div_ceil(piece);
                    let t = self.alloc(&k.elt, &[rows * m], k.loc)?;
                    let p = [m as i64, piece as i64];
                    launch.run("_part", (rows * m).min(g) as u32, &out, &[&t], &shape, &p)?;
                    launch.run("_combine", rows.min(g) as u32, &out, &[&t], &shape, &p[..1])?;
                }
                Ok(out)
            }
            Skeleton::Scan { seed, source, op, .. } => {
                let shape = shape_of(env, source)?;
                let (outer, n, rows) = rows_of(k, &shape, *seed, op)?;
                let mut dims = outer;
                dims.push(n + usize::from(*seed));
                let out = self.alloc(&k.elt, &dims, k.loc)?;
                if rows == 0 {
                    return Ok(out);
                }
                let tiles = n.div_ceil(BLOCK as usize);
                if rows >= g || tiles < 2 {
                    launch.run("_rows", rows.min(g) as u32, &out, &[], &shape, &[])?;
                } else {
                    // decoupled look-back (scan.rs): aggregates, inclusive
                    // prefixes, flags and the tile counter, the last two zeroed
                    let status = rows * tiles;
                    let aggs = self.alloc(&k.elt, &[status], k.loc)?;
                    let incs = self.alloc(&k.elt, &[status], k.loc)?;
                    let flags = self.zeroed(&EltTy::Scalar(ScalarTy::I32), &[status], k.loc)?;
                    let counter = self.zeroed(&EltTy::Scalar(ScalarTy::I32), &[1], k.loc)?;
                    let p = [tiles as i64];
                    launch.run(
                        "_look",
                        status.min(g) as u32,
                        &out,
                        &[&aggs, &incs, &flags, &counter],
                        &shape,
                        &p,
                    )?;
                }
                Ok(out)
            }
            Skeleton::FoldSeg { seed, source, offsets, op } => {
                let shape = shape_of(env, source)?;
                let offs = segments(env, k, *offsets, &shape, *seed, op)?;
                let (mut dims, _) = split_inner(&shape);
                let rows: usize = dims.iter().product();
                let nseg = offs.len() - 1;
                dims.push(nseg);
                let out = self.alloc(&k.elt, &dims, k.loc)?;
                let pairs = rows * nseg;
                if pairs > 0 {
                    // a warp per segment, or a block per long one
                    let total = *offs.last().expect("checked offsets") as usize;
                    if total / nseg >= LONG_SEGMENT {
                        launch.run("_block", pairs.min(g) as u32, &out, &[], &shape, &[])?;
                    } else {
                        launch.run("_warp", blocks(32 * pairs), &out, &[], &shape, &[])?;
                    }
                }
                Ok(out)
            }
            Skeleton::Permute { defaults, source, atomic } => {
                let def = env.array(*defaults)?.clone();
                let shape = shape_of(env, source)?;
                let size: usize = shape.iter().product();
                let out = self.alloc(&k.elt, &def.shape, k.loc)?;
                self.copy(&def, &out, k.loc)?;
                let mut ext = shape.clone();
                ext.extend_from_slice(&def.shape);
                if size > 0 {
                    if *atomic {
                        launch.run("", blocks(size), &out, &[], &ext, &[])?;
                    } else {
                        let results: usize = def.shape.iter().product();
                        let locks = self.zeroed(&EltTy::Scalar(ScalarTy::I32), &[results], k.loc)?;
                        launch.run("", blocks(size), &out, &[&locks], &ext, &[])?;
                    }
                }
                Ok(out)
            }
            Skeleton::Stencil { sources, extents: patterns } => {
                let dims = stencil_shape(env, k, sources, patterns)?;
                let size: usize = dims.iter().product();
                let out = self.alloc(&k.elt, &dims, k.loc)?;
                if size > 0 {
                    launch.run("", blocks(size), &out, &[], &dims, &[])?;
                }
                Ok(out)
            }
        }
    }
}

impl<D: Device> OnDevice<'_, D> {
    /// A host array as a device array, copied to the device when a kernel
    /// first reads it.
    fn copy_in(&self, a: Arc<ArrayData>) -> DeviceArray<D> {
        let mut m = lock(self.mem);
        let bufs = (0..a.buffers().len()).map(|i| m.insert_shared(Arc::new(Leaf(a.clone(), i)))).collect();
        drop(m);
        let stored = Arc::new(Stored { mem: self.mem.clone(), bufs });
        let host = Arc::new(OnceLock::new());
        let _ = host.set(a.clone());
        DeviceArray { shape: a.shape().to_vec(), elt: a.elt_ty().clone(), stored, host }
    }

    /// A device array of this type and shape for a kernel to write:
    /// `ShapeTooLarge` if it cannot be addressed, `OutOfMemory` if even
    /// evicting every other array leaves no room.
    fn alloc(&self, elt: &EltTy, dims: &[usize], loc: SrcLoc) -> Result<DeviceArray<D>> {
        let extents: Vec<i64> = dims.iter().map(|&d| d as i64).collect();
        crate::array::shape::checked_extents(&extents, elt.size_bytes(), loc)?;
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
    fn zeroed(&self, elt: &EltTy, dims: &[usize], loc: SrcLoc) -> Result<DeviceArray<D>> {
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
    fn copy(&self, from: &DeviceArray<D>, to: &DeviceArray<D>, loc: SrcLoc) -> Result<()> {
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

/// What every launch of one kernel shares.
struct Launch<'a, 'b, D: Device> {
    k: &'a Kernel,
    on: &'a OnDevice<'b, D>,
    inputs: Vec<DeviceArray<D>>,
}

impl<D: Device> Launch<'_, '_, D> {
    /// Runs kernel function `suffix` on `blocks` blocks, with the output,
    /// the temporaries, the kernel's own extents and parameters; an error
    /// the kernel raised becomes the program's.
    fn run(
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

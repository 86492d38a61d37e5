//! The device memory manager: which arrays live in device memory, copies
//! between host and device made only when needed, and eviction of the
//! least recently used arrays to host memory when the device is full (the
//! sequences thesis, `002_...`, §6.2.3, after Accelerate's CUDA backend).
//!
//! Every array (one buffer per primitive leaf; the manager sees buffers
//! of bytes) has a valid copy in at least one place:
//!
//! - an input the host hands in (`insert_host`) starts on the host only;
//!   it is copied to the device when a kernel first needs it (`prepare`);
//! - a kernel's output (`insert_device`) starts on the device only; it is
//!   copied to the host when the host reads it (`read`), and stays valid
//!   on both afterwards, since arrays are immutable once written.
//!
//! `prepare(ids)` is called before each kernel with every buffer it
//! reads or writes: each gets a device copy, and each is *pinned* (never
//! evicted) until the next `prepare`. An allocation that fails for want
//! of memory is retried after evicting the least recently used unpinned
//! array (the thesis's steps 3 and 4): its data is copied back to the
//! host first if the host has no valid copy, then its device memory is
//! freed. Only when nothing is left to evict does the allocation fail.
//! Each use (`prepare`, `read`) stamps the array with a clock, as the
//! thesis's `withDevicePtr` does.
//!
//! Device buffers are rounded up to a multiple of 8 bytes, at least 8,
//! so that an empty array still has a valid pointer and a permute's
//! compare-and-swap on the 32-bit word holding a narrow element stays
//! inside its buffer (`permute`).
//!
//! A buffer can also be copied to the device ahead of the kernel that
//! reads it, by another thread, while this one launches kernels
//! (`reserve`, then the copy outside the manager's lock, then `filled`):
//! a sequence's next chunk, uploaded while the chunk before it computes.
//! Between the two calls the buffer is *held*: never evicted, and known
//! only to the thread filling it.
//!
//! The logic is written against the small `DeviceMemory` trait, so that
//! its unit tests run on the host against a fake device of a fixed
//! capacity; `device::Gpu` implements it with the driver API, and
//! `emulate::Emulator` with host memory.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

/// Why an allocation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AllocError {
    /// The device has no room: evicting may help.
    OutOfMemory,
    /// Anything else (a driver error): evicting does not help.
    Device(String),
}

/// The operations the memory manager needs from a device.
pub trait DeviceMemory {
    /// One device allocation (freed when dropped, or by `free`).
    type Buf;
    fn alloc(&mut self, bytes: usize) -> Result<Self::Buf, AllocError>;
    fn free(&mut self, buf: Self::Buf);
    /// Copies `host` to the start of `buf`.
    fn upload(&mut self, buf: &mut Self::Buf, host: &[u8]) -> Result<(), String>;
    /// Copies the start of `buf` into `host`, waiting for the copy.
    fn download(&mut self, buf: &Self::Buf, host: &mut [u8]) -> Result<(), String>;
    /// The device address a kernel is given.
    fn address(&self, buf: &Self::Buf) -> u64;
    /// Waits until the allocations made so far can be used by another
    /// stream (`reserve`'s copy runs on one of its own).
    fn fence(&mut self) -> Result<(), String> {
        Ok(())
    }
}

/// A host copy: bytes the manager owns, or shares with the array they
/// came from (an input is not copied on the host).
pub type HostBytes = Arc<dyn AsRef<[u8]> + Send + Sync>;

/// The name of a buffer in the manager.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BufId(u64);

/// Why the manager could not do what was asked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MemoryError {
    /// The buffers a kernel needs do not fit on the device together, even
    /// with everything else evicted.
    OutOfMemory {
        bytes: usize,
    },
    Device(String),
    UnknownBuffer(BufId),
}

struct Entry<B> {
    bytes: usize,
    /// The host copy, when valid.
    host: Option<HostBytes>,
    /// The device copy (always valid when present).
    device: Option<B>,
    last_use: u64,
}

/// Device arrays in a pool, with lazy copies and LRU eviction.
pub struct MemoryManager<D: DeviceMemory> {
    dev: D,
    /// The most device memory the manager may use (bytes), if it is
    /// given a cap below the device's size; and how much it uses.
    cap: Option<usize>,
    used: usize,
    entries: HashMap<BufId, Entry<D::Buf>>,
    pinned: Vec<BufId>,
    /// Buffers being filled outside the lock (`reserve`).
    held: HashSet<BufId>,
    clock: u64,
    next: u64,
    /// Evictions so far (for tests and statistics).
    pub evictions: usize,
    /// Copies to the device so far (for tests and statistics).
    pub uploads: usize,
    /// Of those, the ones made outside the lock (`reserve`).
    pub uploaded_ahead: usize,
}

/// The size of the device allocation of a buffer of `bytes` bytes.
fn device_size(bytes: usize) -> usize {
    bytes.max(8).div_ceil(8) * 8
}

impl<D: DeviceMemory> MemoryManager<D> {
    pub fn new(dev: D) -> Self {
        MemoryManager {
            dev,
            cap: None,
            used: 0,
            entries: HashMap::new(),
            pinned: Vec::new(),
            held: HashSet::new(),
            clock: 0,
            next: 0,
            evictions: 0,
            uploads: 0,
            uploaded_ahead: 0,
        }
    }

    /// A manager that uses at most `cap` bytes of device memory: an
    /// allocation past it fails as if the device were full (so that
    /// eviction can be tested, and a process can leave room to others).
    pub fn with_cap(dev: D, cap: usize) -> Self {
        MemoryManager { cap: Some(cap), ..MemoryManager::new(dev) }
    }

    /// The device.
    pub fn device(&self) -> &D {
        &self.dev
    }

    /// Says that a kernel has written the buffer on the device: its host
    /// copy, if any, is stale.
    pub fn written(&mut self, id: BufId) {
        if let Some(e) = self.entries.get_mut(&id) {
            if e.device.is_some() {
                e.host = None;
            }
        }
    }

    /// The device memory the manager's buffers take now (bytes).
    pub fn used(&self) -> usize {
        self.used
    }

    /// The device (for a kernel launch, or a test's fake kernel).
    pub fn device_mut(&mut self) -> &mut D {
        &mut self.dev
    }

    fn fresh(&mut self) -> BufId {
        self.next += 1;
        BufId(self.next)
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    /// A buffer whose data is on the host (copied to the device when a
    /// kernel first needs it).
    pub fn insert_host(&mut self, data: Vec<u8>) -> BufId {
        self.insert_shared(Arc::new(data))
    }

    /// `insert_host` of bytes shared with their owner.
    pub fn insert_shared(&mut self, data: HostBytes) -> BufId {
        let id = self.fresh();
        let last_use = self.tick();
        let bytes = (*data).as_ref().len();
        self.entries.insert(id, Entry { bytes, host: Some(data), device: None, last_use });
        id
    }

    /// A buffer of `bytes` bytes allocated on the device for a kernel to
    /// write (its contents are the kernel's to define), evicting others
    /// if needed; pinned with the current kernel's buffers.
    pub fn insert_device(&mut self, bytes: usize) -> Result<BufId, MemoryError> {
        let buf = self.alloc_evicting(bytes)?;
        let id = self.fresh();
        let last_use = self.tick();
        self.entries.insert(id, Entry { bytes, host: None, device: Some(buf), last_use });
        self.pinned.push(id);
        Ok(id)
    }

    /// A buffer whose data is `data`, given device memory (evicting others
    /// if needed) that the caller fills with it outside the manager's
    /// lock, at the returned address, and then says so (`filled`); until
    /// then the buffer is held: never evicted. Its entry says it is valid
    /// on the device already, so no one else may read it before `filled`
    /// (no one else knows its name).
    pub fn reserve(&mut self, data: HostBytes) -> Result<(BufId, u64), MemoryError> {
        let bytes = (*data).as_ref().len();
        let buf = self.alloc_evicting(bytes)?;
        if let Err(m) = self.dev.fence() {
            self.release(buf, bytes);
            return Err(MemoryError::Device(m));
        }
        let addr = self.dev.address(&buf);
        let id = self.fresh();
        let last_use = self.tick();
        self.entries.insert(id, Entry { bytes, host: Some(data), device: Some(buf), last_use });
        self.held.insert(id);
        self.uploads += 1;
        self.uploaded_ahead += 1;
        Ok((id, addr))
    }

    /// Says that a reserved buffer is filled: it may be evicted from now.
    pub fn filled(&mut self, id: BufId) {
        self.held.remove(&id);
    }

    /// Makes every buffer of `ids` resident on the device for the next
    /// kernel, pins them (and only them) against eviction, and returns
    /// their device addresses.
    pub fn prepare(&mut self, ids: &[BufId]) -> Result<Vec<u64>, MemoryError> {
        if let Some(id) = ids.iter().find(|id| !self.entries.contains_key(id)) {
            return Err(MemoryError::UnknownBuffer(*id));
        }
        self.pinned = ids.to_vec();
        let mut addrs = Vec::with_capacity(ids.len());
        for &id in ids {
            let now = self.tick();
            let e = self.entries.get_mut(&id).expect("checked above");
            e.last_use = now;
            if e.device.is_none() {
                let bytes = e.bytes;
                let mut buf = self.alloc_evicting(bytes)?;
                let e = self.entries.get_mut(&id).expect("checked above");
                let host = e.host.as_ref().expect("a buffer off the device has a host copy");
                if let Err(m) = self.dev.upload(&mut buf, (**host).as_ref()) {
                    self.release(buf, bytes);
                    return Err(MemoryError::Device(m));
                }
                self.uploads += 1;
                e.device = Some(buf);
            }
            let e = &self.entries[&id];
            addrs.push(self.dev.address(e.device.as_ref().expect("made resident above")));
        }
        Ok(addrs)
    }

    /// The device address of a buffer that is on the device.
    pub fn address(&self, id: BufId) -> Option<u64> {
        self.entries.get(&id)?.device.as_ref().map(|b| self.dev.address(b))
    }

    /// Unpins the last kernel's buffers (after it has finished).
    pub fn unpin(&mut self) {
        self.pinned.clear();
    }

    /// The host copy of a buffer, copied back from the device if the host
    /// has none yet.
    pub fn read(&mut self, id: BufId) -> Result<&[u8], MemoryError> {
        let now = self.tick();
        let e = self.entries.get_mut(&id).ok_or(MemoryError::UnknownBuffer(id))?;
        e.last_use = now;
        if e.host.is_none() {
            let dev = e.device.as_ref().expect("a buffer without a host copy is on the device");
            let mut host = vec![0u8; e.bytes];
            self.dev.download(dev, &mut host).map_err(MemoryError::Device)?;
            e.host = Some(Arc::new(host));
        }
        Ok((**e.host.as_ref().expect("set above")).as_ref())
    }

    /// Forgets a buffer, freeing its device memory.
    pub fn remove(&mut self, id: BufId) {
        if let Some(e) = self.entries.remove(&id) {
            if let Some(d) = e.device {
                self.release(d, e.bytes);
            }
        }
        self.pinned.retain(|p| *p != id);
        self.held.remove(&id);
    }

    /// Whether a buffer has a device copy now.
    pub fn on_device(&self, id: BufId) -> bool {
        self.entries.get(&id).is_some_and(|e| e.device.is_some())
    }

    /// Whether a buffer has a valid host copy now.
    pub fn on_host(&self, id: BufId) -> bool {
        self.entries.get(&id).is_some_and(|e| e.host.is_some())
    }

    /// A device allocation of `bytes`, evicting least recently used
    /// unpinned buffers while the device is full.
    fn alloc_evicting(&mut self, bytes: usize) -> Result<D::Buf, MemoryError> {
        let size = device_size(bytes);
        loop {
            let over_cap = self.cap.is_some_and(|cap| self.used + size > cap);
            let got = if over_cap { Err(AllocError::OutOfMemory) } else { self.dev.alloc(size) };
            match got {
                Ok(b) => {
                    self.used += size;
                    return Ok(b);
                }
                Err(AllocError::Device(m)) => return Err(MemoryError::Device(m)),
                Err(AllocError::OutOfMemory) => {
                    if !self.evict_one()? {
                        return Err(MemoryError::OutOfMemory { bytes });
                    }
                }
            }
        }
    }

    /// Frees the device allocation of a buffer of `bytes` bytes.
    fn release(&mut self, buf: D::Buf, bytes: usize) {
        self.dev.free(buf);
        self.used -= device_size(bytes);
    }

    /// Evicts the least recently used unpinned buffer on the device,
    /// copying it back to the host first when the host has no copy;
    /// false when there is none to evict.
    fn evict_one(&mut self) -> Result<bool, MemoryError> {
        let victim = self
            .entries
            .iter()
            .filter(|(id, e)| e.device.is_some() && !self.pinned.contains(id) && !self.held.contains(id))
            .min_by_key(|(_, e)| e.last_use)
            .map(|(id, _)| *id);
        let Some(id) = victim else { return Ok(false) };
        let e = self.entries.get_mut(&id).expect("found above");
        let dev = e.device.take().expect("on the device");
        if e.host.is_none() {
            let mut host = vec![0u8; e.bytes];
            if let Err(m) = self.dev.download(&dev, &mut host) {
                e.device = Some(dev);
                return Err(MemoryError::Device(m));
            }
            e.host = Some(Arc::new(host));
        }
        let bytes = e.bytes;
        self.release(dev, bytes);
        self.evictions += 1;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A device of `cap` bytes whose memory is host vectors.
    #[derive(Default)]
    struct FakeDevice {
        cap: usize,
        used: usize,
        mem: HashMap<u64, Vec<u8>>,
        next: u64,
        uploads: usize,
        downloads: usize,
    }

    impl FakeDevice {
        fn new(cap: usize) -> Self {
            FakeDevice { cap, ..Default::default() }
        }

        /// A kernel writing the buffer at `addr`.
        fn write(&mut self, addr: u64, data: &[u8]) {
            self.mem.get_mut(&addr).expect("a live buffer")[..data.len()].copy_from_slice(data);
        }

        fn read(&self, addr: u64, n: usize) -> Vec<u8> {
            self.mem[&addr][..n].to_vec()
        }
    }

    impl DeviceMemory for FakeDevice {
        type Buf = u64;
        fn alloc(&mut self, bytes: usize) -> Result<u64, AllocError> {
            if self.used + bytes > self.cap {
                return Err(AllocError::OutOfMemory);
            }
            self.used += bytes;
            self.next += 1;
            self.mem.insert(self.next, vec![0xAA; bytes]);
            Ok(self.next)
        }
        fn free(&mut self, buf: u64) {
            let m = self.mem.remove(&buf).expect("freed once");
            self.used -= m.len();
        }
        fn upload(&mut self, buf: &mut u64, host: &[u8]) -> Result<(), String> {
            self.uploads += 1;
            self.write(*buf, host);
            Ok(())
        }
        fn download(&mut self, buf: &u64, host: &mut [u8]) -> Result<(), String> {
            self.downloads += 1;
            host.copy_from_slice(&self.mem[buf][..host.len()]);
            Ok(())
        }
        fn address(&self, buf: &u64) -> u64 {
            *buf
        }
    }

    fn bytes(k: u8, n: usize) -> Vec<u8> {
        (0..n).map(|i| k.wrapping_mul(31).wrapping_add(i as u8)).collect()
    }

    #[test]
    fn inputs_are_copied_to_the_device_only_when_a_kernel_needs_them() {
        let mut m = MemoryManager::new(FakeDevice::new(1024));
        let a = m.insert_host(bytes(1, 64));
        assert!(!m.on_device(a));
        assert_eq!(m.device_mut().uploads, 0);
        m.prepare(&[a]).unwrap();
        assert!(m.on_device(a));
        m.prepare(&[a]).unwrap();
        assert_eq!(m.device_mut().uploads, 1, "a resident buffer is not copied again");
    }

    #[test]
    fn a_reserved_buffer_is_held_until_filled_and_then_used_in_place() {
        // room for two buffers of 64 bytes
        let mut m = MemoryManager::new(FakeDevice::new(2 * 64));
        let data = bytes(9, 64);
        let (r, addr) = m.reserve(Arc::new(data.clone())).unwrap();
        // the other thread's copy
        m.device_mut().write(addr, &data);
        // while it is held, the manager evicts around it, and when only
        // it is left to evict, an allocation fails rather than take it
        let a = m.insert_host(bytes(1, 64));
        m.prepare(&[a]).unwrap();
        let b = m.insert_host(bytes(2, 64));
        m.prepare(&[b]).unwrap();
        assert!(m.on_device(r) && !m.on_device(a), "a, not the held buffer, was evicted");
        let c = m.insert_device(64);
        assert!(matches!(c, Err(MemoryError::OutOfMemory { .. })), "{c:?}");
        assert!(m.on_device(r), "the held buffer stays");
        m.filled(r);
        // filled: read in place (no upload), and evictable like any other
        let uploads = m.device_mut().uploads;
        assert_eq!(m.prepare(&[r]).unwrap()[0], addr);
        assert_eq!(m.device_mut().uploads, uploads, "a filled buffer is not copied again");
        assert_eq!(m.device_mut().read(addr, 64), data);
        m.unpin();
        let d = m.insert_host(bytes(3, 64));
        m.prepare(&[d]).unwrap();
        assert!(m.on_host(r), "its host copy stays valid");
    }

    #[test]
    fn outputs_are_copied_back_only_when_the_host_reads_them() {
        let mut m = MemoryManager::new(FakeDevice::new(1024));
        let o = m.insert_device(16).unwrap();
        let addr = m.prepare(&[o]).unwrap()[0];
        m.device_mut().write(addr, &bytes(7, 16));
        assert!(!m.on_host(o));
        assert_eq!(m.device_mut().downloads, 0);
        assert_eq!(m.read(o).unwrap(), &bytes(7, 16)[..]);
        assert_eq!(m.read(o).unwrap(), &bytes(7, 16)[..]);
        assert_eq!(m.device_mut().downloads, 1, "a host copy, once made, is kept");
    }

    #[test]
    fn eviction_order_is_least_recently_used() {
        // room for three buffers of 64 bytes
        let mut m = MemoryManager::new(FakeDevice::new(3 * 64));
        let (a, b, c) =
            (m.insert_host(bytes(1, 64)), m.insert_host(bytes(2, 64)), m.insert_host(bytes(3, 64)));
        for id in [a, b, c] {
            m.prepare(&[id]).unwrap();
        }
        m.prepare(&[a]).unwrap(); // a is now the most recently used; b the least
        let d = m.insert_host(bytes(4, 64));
        m.prepare(&[d]).unwrap();
        assert!(!m.on_device(b), "b, the least recently used, is evicted");
        assert!(m.on_device(a) && m.on_device(c) && m.on_device(d));
        let e = m.insert_host(bytes(5, 64));
        m.prepare(&[e]).unwrap();
        assert!(!m.on_device(c), "then c");
        assert!(m.on_device(a) && m.on_device(d) && m.on_device(e));
        assert_eq!(m.evictions, 2);
    }

    #[test]
    fn arrays_needed_by_the_running_kernel_are_never_evicted() {
        let mut m = MemoryManager::new(FakeDevice::new(3 * 64));
        let (a, b, c) =
            (m.insert_host(bytes(1, 64)), m.insert_host(bytes(2, 64)), m.insert_host(bytes(3, 64)));
        m.prepare(&[a]).unwrap();
        m.prepare(&[b]).unwrap();
        m.prepare(&[c]).unwrap();
        // a is the least recently used, but this kernel reads it: b goes
        let d = m.insert_host(bytes(4, 64));
        m.prepare(&[a, c, d]).unwrap();
        assert!(m.on_device(a) && m.on_device(c) && m.on_device(d));
        assert!(!m.on_device(b));
        // an output allocated for the same kernel cannot evict its inputs
        assert_eq!(m.insert_device(64), Err(MemoryError::OutOfMemory { bytes: 64 }));
        assert!(m.on_device(a) && m.on_device(c) && m.on_device(d));
        // four buffers that cannot fit together fail, and evict none of them
        assert_eq!(m.prepare(&[a, b, c, d]), Err(MemoryError::OutOfMemory { bytes: 64 }));
        assert!(m.on_device(a) && m.on_device(c) && m.on_device(d));
    }

    #[test]
    fn a_working_set_larger_than_the_device_completes_and_data_round_trips() {
        // ten arrays of 64 bytes and their results on a device of four
        let mut m = MemoryManager::new(FakeDevice::new(4 * 64));
        let inputs: Vec<BufId> = (0..10).map(|k| m.insert_host(bytes(k, 64))).collect();
        let mut outputs = Vec::new();
        for round in 0..3 {
            for k in 0..10 {
                // a kernel reading inputs k and k+1 and writing their sum
                let (x, y) = (inputs[k], inputs[(k + 1) % 10]);
                let o = m.insert_device(64).unwrap();
                let addrs = m.prepare(&[x, y, o]).unwrap();
                let dev = m.device_mut();
                let (vx, vy) = (dev.read(addrs[0], 64), dev.read(addrs[1], 64));
                let sum: Vec<u8> = vx.iter().zip(&vy).map(|(p, q)| p.wrapping_add(*q)).collect();
                dev.write(addrs[2], &sum);
                m.unpin();
                if round == 2 {
                    outputs.push(o);
                } else {
                    m.remove(o);
                }
            }
        }
        assert!(m.evictions > 0, "the working set did not fit");
        for k in 0..10u8 {
            let want: Vec<u8> =
                bytes(k, 64).iter().zip(bytes((k + 1) % 10, 64)).map(|(p, q)| p.wrapping_add(q)).collect();
            assert_eq!(m.read(outputs[k as usize]).unwrap(), &want[..], "output {k}");
            assert_eq!(m.read(inputs[k as usize]).unwrap(), &bytes(k, 64)[..], "input {k}");
        }
    }

    #[test]
    fn an_evicted_kernel_output_is_copied_back_before_it_is_freed() {
        let mut m = MemoryManager::new(FakeDevice::new(2 * 64));
        let o = m.insert_device(64).unwrap();
        let addr = m.prepare(&[o]).unwrap()[0];
        m.device_mut().write(addr, &bytes(9, 64));
        m.unpin();
        let a = m.insert_host(bytes(1, 64));
        let b = m.insert_host(bytes(2, 64));
        m.prepare(&[a, b]).unwrap();
        assert!(!m.on_device(o) && m.on_host(o));
        assert_eq!(m.device_mut().downloads, 1);
        // used again: uploaded from its host copy, intact
        m.prepare(&[o]).unwrap();
        assert_eq!(m.read(o).unwrap(), &bytes(9, 64)[..]);
    }

    #[test]
    fn device_sizes_are_rounded_to_whole_words() {
        assert_eq!(device_size(0), 8);
        assert_eq!(device_size(1), 8);
        assert_eq!(device_size(9), 16);
        assert_eq!(device_size(64), 64);
    }
}

//! The executor: walks a lowered program's host commands, evaluates the
//! little scalar code that runs on the host (shapes, `unit`, `acond`
//! conditions, with the interpreter's evaluator), and launches kernels on
//! the worker pool.
//!
//! Note [Chunks]
//! A kernel's iteration space `0 .. n` is cut into chunks of at least a
//! skeleton's grain (enough work to amortise a task: about 16 Ki elements
//! of a saxpy, `CHUNK_WORK`, so fewer of a kernel whose elements are more
//! work, down to `MIN_GRAIN`) and at most `4 * workers` chunks, which
//! rayon's work stealing balances. A space smaller than one grain runs on
//! the calling thread. An element with a loop counts as a whole launch's
//! work (`c::cost`): the audio program's sequence computed its chunks'
//! 2048 bins, each a loop over a window of 577 samples on average, on one
//! worker while the floor was 16 Ki elements whatever their work.

use super::compile::{KernelFn, Module};
use super::rows::{self, GroupFn};
use super::{fold, fold_seg, generate, permute, scan, stencil};
use crate::c::host::AccErr;
use crate::c::kernel::{Kernel, Skeleton};
use crate::host::{self, Env, Machine, RowsRun, Value};
use accelerate_base::array::{ArrayData, ArraysVal, Buffer, EltTy};
use accelerate_base::error::{Error, Result, SrcLoc};
use accelerate_plan::Cmd;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// What a kernel reads in place of an empty input buffer: one element of
/// any type, zero (kernels only read their inputs).
static EMPTY_INPUT: [u64; 2] = [0; 2];

/// `acc_args` of the C prelude.
#[repr(C)]
pub(crate) struct AccArgs {
    bufs: *const *mut c_void,
    extents: *const i64,
    params: *const i64,
    consts: *const i64,
    err: *mut AccErr,
}

impl AccArgs {
    /// The arguments of one call: the slices must outlive it.
    pub(super) fn new(
        bufs: &[*mut c_void],
        extents: &[i64],
        params: &[i64],
        consts: &[i64],
        err: *mut AccErr,
    ) -> Self {
        AccArgs {
            bufs: bufs.as_ptr(),
            extents: extents.as_ptr(),
            params: params.as_ptr(),
            consts: consts.as_ptr(),
            err,
        }
    }
}

/// Elements per chunk below which splitting does not pay for elements of
/// little work (`Launch::grain`).
pub(super) const GRAIN: usize = 16 * 1024;

/// The least work of a chunk (in the units of `c::cost`): `GRAIN`
/// elements of a saxpy, about 10 units each (Note [Chunks]).
const CHUNK_WORK: usize = 10 * GRAIN;

/// The fewest elements of a chunk, however much work each is: a few
/// blocks of lanes (Note [Loops in lockstep]).
const MIN_GRAIN: usize = 256;

/// The worker pool of `threads` workers (0: one per core), made once per
/// process for each size asked for.
pub(crate) fn pool(threads: usize) -> Arc<rayon::ThreadPool> {
    static POOLS: OnceLock<Mutex<HashMap<usize, Arc<rayon::ThreadPool>>>> = OnceLock::new();
    let mut pools = POOLS.get_or_init(Default::default).lock().unwrap_or_else(|e| e.into_inner());
    pools
        .entry(threads)
        .or_insert_with(|| {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .thread_name(|i| format!("accelerate-cpu-{i}"))
                .build()
                .or_else(|_| rayon::ThreadPoolBuilder::new().num_threads(1).build())
                .expect("a thread pool of one worker can always be built");
            Arc::new(pool)
        })
        .clone()
}

/// Runs a plan's host program with its kernels on the worker pool.
pub(crate) fn run(
    body: &Cmd,
    kernels: &[Kernel],
    groups: &Groups,
    module: &Module,
    (pool, parallel_work): (&rayon::ThreadPool, usize),
    args: Vec<ArraysVal>,
) -> Result<ArraysVal> {
    let args = args.into_iter().map(Value::from_host).collect();
    let cpu = Cpu { module, pool, groups, parallel_work };
    // on the calling thread, which takes its launches' chunks with the
    // workers (Note [Chunks taken in turn])
    host::run(&cpu, body, kernels, args).map(Value::into_host)
}

// Note [Chunks taken in turn]
// A launch's chunks are taken one at a time from a shared counter by the
// thread that launches it and by the pool's other workers, each as it
// comes (`Call::run`). On the two-core EPYC guest of docs/benchmarks.md a
// worker that has slept rejoins a millisecond or more late, and most
// launches start with the workers asleep (a program run after anything
// else ran a while). Before, a launch was handed to the pool (`install`,
// rayon's halving of the chunks) and the calling thread slept until it
// ended: the first worker woke late, the second later still, and
// halving gave a worker that stole late nothing once the first had
// started on the second half, so a launch of a few milliseconds ran on
// one worker after a wake-up. A host program with a loop or three launch
// sites ran on a worker for the same reason, to hand its launches to
// awake workers; softmax's row group so ran on one woken worker. Now the
// calling thread starts on the chunks at once, the workers take what is
// left when they come, and the caller waits only for the chunks taken,
// never for a worker to wake: a helper that comes after the last chunk
// was taken finds none and touches nothing of the launch. The host
// program runs on the calling thread. `accelerate-bench NAMES --variants
// accelerate,rust-seq` (another variant between our samples, as in the
// whole set), medians (2026-11-30, docs/benchmarks.md): the matrix-vector
// product 4096 x 4096 1.96 and 1.86 ms before, 1.33 and 1.34 taken in
// turn; softmax 4096 x 1000 2.40 and 2.34 before, 2.29 and 2.30 taken in
// turn with the host on a worker, 1.19 and 1.29 with the host on the
// calling thread; at `--size small` the host on the calling thread took
// what it took on a worker (Floyd-Warshall's 256 launches 1.33 and 1.41
// ms against 1.43 and 1.37; handed to the pool launch by launch from the
// calling thread, they had taken 2.6). The caller spins `WAIT_SPINNING`
// for the chunks taken by others before it sleeps: sleeping at once,
// k-means (26 iterations of short launches) took 30.4 and 33.2 ms; so,
// 29.0 and 29.4 (rayon's version 19.2).

/// A program's row groups (`rows.rs`), and which starts at which kernel.
#[derive(Default)]
pub(crate) struct Groups {
    pub fns: Vec<GroupFn>,
    pub at: HashMap<usize, usize>,
    /// How many times a group has run row by row.
    pub runs: AtomicUsize,
    /// How many launches have written their result over an input (Note
    /// [Functions that write in place] in `generate.rs`).
    pub in_place_runs: AtomicUsize,
}

/// The CPU as a `host::Machine`: arrays are host arrays, kernels run on
/// the worker pool.
struct Cpu<'a> {
    module: &'a Module,
    pool: &'a rayon::ThreadPool,
    groups: &'a Groups,
    /// `CpuOptions::parallel_work`.
    parallel_work: usize,
}

/// One call of a kernel function, shared by the workers: its arguments
/// (one `acc_args`, or a row group's, one per member, which the function
/// takes as an array) point at buffers that outlive the call; each chunk
/// writes its own part of the outputs.
pub(super) struct Call<'a> {
    pub f: KernelFn,
    pub args: &'a [AccArgs],
    /// The stack the kernel's code needs.
    pub stack: usize,
}

// SAFETY: the buffers behind the pointers are kept alive by the launching
// frame for the whole (blocking) launch; inputs are only read, and every
// chunk writes disjoint output positions (permute writes shared positions
// only with atomic compare-and-swap, or runs as one chunk; a row group's
// chunk writes its rows of every member's outputs).
unsafe impl Sync for Call<'_> {}
unsafe impl Send for Call<'_> {}

impl Call<'_> {
    fn chunk(&self, start: usize, end: usize) {
        // (Note [Stack for outlined chunks])
        stacker::maybe_grow(self.stack, self.stack, || {
            // SAFETY: the kernel was generated for exactly these arguments
            // (its writer and its launch agree on the layout: `Launch::run`,
            // or `rows.rs` for a group's members) and reads and writes
            // only inside the buffers' extents for `start .. end`.
            unsafe { (self.f)(self.args.as_ptr(), start as i64, end as i64) }
        })
    }

    /// Runs the chunks between consecutive `bounds` (at least two): one
    /// on this thread, several taken in turn by this thread and the
    /// pool's other workers as they come (Note [Chunks taken in turn]).
    pub fn run(&self, pool: &rayon::ThreadPool, bounds: &[usize]) {
        let chunks = bounds.len().saturating_sub(1);
        let workers = pool.current_num_threads();
        if chunks <= 1 || workers <= 1 {
            bounds.windows(2).for_each(|w| self.chunk(w[0], w[1]));
            return;
        }
        let turns = Arc::new(Turns {
            next: AtomicUsize::new(0),
            done: AtomicUsize::new(0),
            panic: Mutex::new(None),
            chunks,
            waiter: std::thread::current(),
        });
        let work = Work { call: (self as *const Call<'_>).cast::<Call<'static>>(), bounds: bounds.as_ptr() };
        for _ in 1..workers.min(chunks) {
            let turns = turns.clone();
            pool.spawn(move || turns.take(work));
        }
        turns.take(work);
        // the chunks the others took end before `self` and `bounds` may
        // go (a helper that comes later finds none left and reads neither):
        // waited for spinning a while (they are about as long as the
        // caller's last), then asleep (a sleeping thread wakes late here)
        let spin = std::time::Instant::now() + WAIT_SPINNING;
        while turns.done.load(Ordering::Acquire) < chunks {
            if std::time::Instant::now() < spin {
                std::hint::spin_loop();
            } else {
                std::thread::park();
            }
        }
        let panic = turns.panic.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(payload) = panic {
            std::panic::resume_unwind(payload);
        }
    }
}

/// How long a launching thread spins for the chunks the workers took
/// before it sleeps (Note [Chunks taken in turn]).
const WAIT_SPINNING: std::time::Duration = std::time::Duration::from_micros(200);

/// A launch's chunks, taken in turn (Note [Chunks taken in turn]).
struct Turns {
    /// The next chunk to take.
    next: AtomicUsize,
    /// Chunks ended.
    done: AtomicUsize,
    /// What a chunk that panicked panicked with (it still counts as
    /// ended), raised again on the launching thread.
    panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    chunks: usize,
    /// The launching thread, woken when the last chunk ends.
    waiter: std::thread::Thread,
}

/// What a chunk runs: pointers into the launching frame, which waits
/// until every chunk taken has ended (`Call::run`).
#[derive(Clone, Copy)]
struct Work {
    call: *const Call<'static>,
    bounds: *const usize,
}

// SAFETY: `Call` is `Sync`; the pointers are dereferenced only for a
// chunk taken before the last one ended, while `Call::run` waits.
unsafe impl Send for Work {}

impl Turns {
    /// Runs chunks until none is left.
    fn take(&self, work: Work) {
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            if i >= self.chunks {
                return;
            }
            let run = std::panic::AssertUnwindSafe(|| {
                // SAFETY: chunk `i` was taken, and `Call::run` does not
                // return before it has ended (`done`), so the call and
                // the bounds (`chunks + 1` of them) are alive
                let (call, lo, hi) = unsafe { (&*work.call, *work.bounds.add(i), *work.bounds.add(i + 1)) };
                call.chunk(lo, hi);
            });
            if let Err(payload) = std::panic::catch_unwind(run) {
                self.panic.lock().unwrap_or_else(|e| e.into_inner()).get_or_insert(payload);
            }
            if self.done.fetch_add(1, Ordering::AcqRel) + 1 == self.chunks {
                self.waiter.unpark();
            }
        }
    }
}

/// The buffers a kernel reads of an input array: an empty array's buffers
/// may dangle, so a kernel gets a block of zeros instead, and every input
/// has an element at position 0 (Note [Optimistic checks]).
pub(super) fn input_buffers(a: &ArrayData) -> impl Iterator<Item = *mut c_void> + '_ {
    let empty = a.is_empty();
    a.buffers().iter().map(move |b| {
        if empty {
            EMPTY_INPUT.as_ptr() as *mut c_void
        } else {
            b.as_ptr() as *mut c_void
        }
    })
}

impl Machine for Cpu<'_> {
    type Array = Arc<ArrayData>;
    type Kernel = Kernel;

    fn uses<'k>(&self, k: &'k Kernel) -> &'k [usize] {
        &k.uses
    }

    fn upload(&self, a: Arc<ArrayData>) -> Result<Arc<ArrayData>> {
        Ok(a)
    }

    fn unzip(&self, a: Arc<ArrayData>) -> Result<Vec<Arc<ArrayData>>> {
        crate::host::unzip_host(a)
    }

    fn reshaped(&self, a: &Arc<ArrayData>, dims: Vec<usize>) -> Arc<ArrayData> {
        Arc::new(a.reshaped(dims))
    }

    fn kernel(&self, k: &Kernel, env: &Env<Arc<ArrayData>>) -> Result<Value<Arc<ArrayData>>> {
        self.launch(k, env)
    }

    fn in_place(&self, k: &Kernel) -> Option<usize> {
        k.in_place
    }

    fn kernel_donated(
        &self,
        k: &Kernel,
        env: &mut Env<Arc<ArrayData>>,
        v: usize,
    ) -> Result<Value<Arc<ArrayData>>> {
        match self.launch_in_place(k, env, v)? {
            Some(a) => Ok(Value::Array(Arc::new(a))),
            None => self.launch(k, env),
        }
    }

    fn row_group(&self, k: usize) -> Option<usize> {
        self.groups.at.get(&k).copied()
    }

    fn rows(
        &self,
        g: usize,
        items: &[&Cmd],
        kernels: &[Kernel],
        env: &Env<Arc<ArrayData>>,
    ) -> Result<RowsRun<Arc<ArrayData>>> {
        let r = rows::launch(self.module, self.pool, &self.groups.fns[g], items, kernels, env)?;
        if r.is_some() {
            self.groups.runs.fetch_add(1, Ordering::Relaxed);
        }
        Ok(r)
    }
}

impl Cpu<'_> {
    /// A launch of `k` reading its inputs from `env`, but for the input
    /// variable `over`, whose buffers are the result's (the kernel's
    /// function `_inplace` reads them there): only its extents are given.
    fn launch_of<'k>(
        &'k self,
        k: &'k Kernel,
        env: &Env<Arc<ArrayData>>,
        over: Option<usize>,
    ) -> Result<Launch<'k>> {
        let mut bufs: Vec<*mut c_void> = Vec::new();
        let mut extents: Vec<i64> = Vec::new();
        for &v in &k.inputs {
            let a = env.array(v)?;
            if over == Some(v) {
                bufs.extend(a.buffers().iter().map(|_| EMPTY_INPUT.as_ptr() as *mut c_void));
            } else {
                bufs.extend(input_buffers(a));
            }
            extents.extend(a.shape().iter().map(|&d| d as i64));
        }
        let workers = self.pool.current_num_threads();
        let parallel_work = self.parallel_work;
        Ok(Launch { k, module: self.module, pool: self.pool, workers, parallel_work, bufs, extents })
    }

    /// Runs generate kernel `k` over the array of its input variable `v`,
    /// which nothing reads after this launch (Note [Functions that write
    /// in place] in `generate.rs`), if that array has the result's shape and nothing
    /// else holds it; `None` (`env` as it was) where it cannot.
    fn launch_in_place(
        &self,
        k: &Kernel,
        env: &mut Env<Arc<ArrayData>>,
        v: usize,
    ) -> Result<Option<ArrayData>> {
        let Skeleton::Generate { shape } = &k.skeleton else { return Ok(None) };
        let dims = crate::c::host::shape_of(env, shape)?;
        if env.array(v)?.shape() != dims.as_slice() {
            return Ok(None);
        }
        let launch = self.launch_of(k, env, Some(v))?;
        let Some(a) = env.take_array(v) else { return Ok(None) };
        let data = match Arc::try_unwrap(a) {
            Ok(data) => data,
            Err(shared) => {
                env.put_array(v, shared);
                return Ok(None);
            }
        };
        self.groups.in_place_runs.fetch_add(1, Ordering::Relaxed);
        generate::launch_in_place(&launch, data, dims).map(Some)
    }

    fn launch(&self, k: &Kernel, env: &Env<Arc<ArrayData>>) -> Result<Value<Arc<ArrayData>>> {
        let launch = &self.launch_of(k, env, None)?;
        let one = match &k.skeleton {
            Skeleton::Generate { shape } => generate::launch(launch, env, shape),
            Skeleton::Fold { seed, source, op, keep } => {
                match fold::launch(launch, env, *seed, source, op, keep.as_ref())? {
                    (out, Some(kept)) => {
                        let (kept, out) = (Value::Array(Arc::new(kept)), Value::Array(Arc::new(out)));
                        return Ok(Value::Tuple(vec![kept, out]));
                    }
                    (out, None) => Ok(out),
                }
            }
            Skeleton::Scan { seed, source, op, .. } => scan::launch(launch, env, *seed, source, op),
            Skeleton::FoldSeg { seed, source, offsets, op } => {
                fold_seg::launch(launch, env, *seed, source, *offsets, op)
            }
            Skeleton::Permute { defaults, source, atomic, overwrite, unmarked } => {
                permute::launch(launch, env, *defaults, source, (*atomic, *overwrite, *unmarked))
            }
            Skeleton::Stencil { sources, extents } => stencil::launch(launch, env, sources, extents),
        };
        one.map(|a| Value::Array(Arc::new(a)))
    }
}

/// What every launch of one kernel shares: the kernel, its object, the
/// workers, its input buffers and extents. Each skeleton's file launches
/// its functions through it (`launch`).
pub(super) struct Launch<'a> {
    pub k: &'a Kernel,
    module: &'a Module,
    pool: &'a rayon::ThreadPool,
    /// The number of workers.
    pub workers: usize,
    /// `CpuOptions::parallel_work`.
    parallel_work: usize,
    bufs: Vec<*mut c_void>,
    extents: Vec<i64>,
}

impl Launch<'_> {
    /// Elements of this kernel per chunk below which splitting does not
    /// pay (Note [Sequential below a cost] in `c/cost.rs`): those of
    /// `parallel_work`, and at least those of `CHUNK_WORK` and
    /// `MIN_GRAIN` (Note [Chunks]).
    pub fn grain(&self) -> usize {
        let cost = self.k.cost.max(1);
        (self.parallel_work / cost).max(CHUNK_WORK / cost).max(MIN_GRAIN)
    }

    /// Chunk boundaries for `0 .. n` on this launch's workers (Note
    /// [Chunks]).
    pub fn uniform(&self, n: usize, grain: usize) -> Vec<usize> {
        uniform(n, grain, self.workers)
    }

    /// Runs function `suffix` over the chunks between consecutive
    /// `bounds`, with the outputs, temporaries, the kernel's own extents
    /// and parameters; a raised error becomes `Error`.
    pub fn run(
        &self,
        suffix: &str,
        out: &mut [Buffer],
        tmp: &mut [Buffer],
        own_extents: &[i64],
        params: &[i64],
        bounds: &[usize],
    ) -> Result<()> {
        if bounds.len() < 2 || bounds[0] == *bounds.last().expect("non-empty") {
            return Ok(());
        }
        let f = self.module.function(&self.k.name, suffix)?;
        // (each built in one allocation: a clone and then an extension
        // had been two, a noticeable part of a small launch's host time)
        let mut bufs = Vec::with_capacity(self.bufs.len() + out.len() + tmp.len());
        bufs.extend_from_slice(&self.bufs);
        bufs.extend(out.iter_mut().map(|b| b.as_mut_ptr() as *mut c_void));
        bufs.extend(tmp.iter_mut().map(|b| b.as_mut_ptr() as *mut c_void));
        let extents = [&self.extents[..], own_extents].concat();
        let mut err = AccErr::NONE;
        let stack = KERNEL_STACK + self.k.chunk_depth * STACK_PER_CHUNK;
        let args = [AccArgs::new(&bufs, &extents, params, &self.k.consts, &mut err)];
        Call { f, args: &args, stack }.run(self.pool, bounds);
        if err.code != 0 {
            return Err(err.error(self.k));
        }
        Ok(())
    }
}

// Note [Stack for outlined chunks]
// A kernel runs on the thread that launches it (a launch of one chunk) or
// on a worker, and that thread may be deep in the host program's walk,
// which grows its stack in segments (stacker): a program of 10^5 arrays
// `use`d and combined launches its kernel under 10^5 nested lets, with
// what is left of a segment. A kernel's outlined chunks (Note [Outlined
// chunks]) call each other as deeply as its scalar code nests, a thousand
// deep for 10^5 operations, with frames of up to 1.5 KB (GCC's
// -fstack-usage on such kernels). So every call of a kernel function is
// made with at least `KERNEL_STACK` and `STACK_PER_CHUNK` per level of
// chunks free, on a segment of that size if the thread has less.

/// The stack a kernel function may use besides its chunks.
pub(super) const KERNEL_STACK: usize = 256 * 1024;
/// The stack one level of outlined chunks may use, with a margin.
const STACK_PER_CHUNK: usize = 4 * 1024;

/// Chunk boundaries for `0 .. n` on `workers` workers (Note [Chunks]).
pub(super) fn uniform(n: usize, grain: usize, workers: usize) -> Vec<usize> {
    if n == 0 {
        return vec![0, 0];
    }
    let chunks = (n / grain.max(1)).clamp(1, 4 * workers);
    (0..=chunks).map(|c| c * n / chunks).collect()
}

/// Segment boundaries for one row, cut where the offsets cross multiples
/// of `elements / chunks`, so that every chunk has about as many elements.
pub(super) fn balanced(offs: &[i64], chunks: usize) -> Vec<usize> {
    let nseg = offs.len() - 1;
    let total = *offs.last().expect("checked offsets") as usize;
    let mut b: Vec<usize> = (0..=chunks)
        .map(|c| {
            let target = (c * total / chunks) as i64;
            offs[..nseg].partition_point(|&o| o < target)
        })
        .collect();
    b[0] = 0;
    *b.last_mut().expect("non-empty") = nseg;
    b.dedup();
    if b.len() == 1 {
        b.push(nseg);
    }
    b
}

pub(super) fn dims_i64(d: &[usize]) -> Vec<i64> {
    d.iter().map(|&x| x as i64).collect()
}

/// Buffers for an array of this type and shape, to be written by a
/// kernel: `ShapeTooLarge` if it cannot be addressed, `OutOfMemory` if
/// the memory cannot be had.
pub(super) fn alloc(elt: &EltTy, dims: &[usize], loc: SrcLoc) -> Result<Vec<Buffer>> {
    accelerate_base::array::shape::checked_extents(&dims_i64(dims), elt.size_bytes(), loc)?;
    let n: usize = dims.iter().product();
    elt.leaves()
        .into_iter()
        .map(|t| Buffer::uninit(t, n).ok_or_else(|| Error::OutOfMemory { loc, shape: dims.to_vec() }))
        .collect()
}

/// The array a kernel has filled.
pub(super) fn finish(mut out: Vec<Buffer>, elt: &EltTy, dims: Vec<usize>, n: usize) -> Result<ArrayData> {
    for b in &mut out {
        // SAFETY: the launch succeeded, and every skeleton writes every
        // position of its output (generated code stores each element's
        // value, booleans as 0 or 1).
        unsafe { b.set_len(n) };
    }
    ArrayData::from_buffers(dims, elt.clone(), out)
        .ok_or_else(|| Error::Internal("kernel output of the wrong size".into()))
}

//! Running irregular array sequences (the sequences thesis ch.3 and
//! §5.1-5.4): `run_seq` for a consumed sequence, `stream_out` for its
//! elements as a Rust iterator, produced while the sequence runs.
//!
//! Note [Sequence programs]
//! A sequence (`lang::seq`) is an element function over its sources. It
//! runs as three kinds of programs, each through the ordinary pipeline and
//! the configured backend:
//!
//! * the *prelude*, once: the arrays the sources read from the enclosing
//!   program (`Source::outer`: `produce`'s length, the array `to_seq`
//!   slices, `from_segs`' lengths, offsets and values, `scan_seq`'s
//!   initial value) and a `fold`'s initial state;
//! * the *chunk program*, once per step: the element function lifted over
//!   a chunk of `k` consecutive elements (`chunk.rs`, the thesis' `f↑`),
//!   so a chunk is one launch per kernel, never one per element. Each
//!   source's element is read from the prelude's arrays at the element's
//!   index, or from the chunk's input: a stream's elements (one array of
//!   one more dimension when they share a shape, the *regular* variant;
//!   else extents, offsets and values, the *irregular* one; a variant is
//!   compiled the first time a chunk needs it), a running scan's values.
//!   A fold's step is composed after the lifted function in the same
//!   program, so fusion works through the sequence operations, as §5.3
//!   asks; its result is the new state, carried to the next chunk. Other
//!   consumers take the chunk's result in the segmented form (Note [Chunk
//!   results] in `trafo::lift`);
//! * for `scan_seq`, the input sequence's own programs, and a step from
//!   the carry and a chunk's values to the chunk's running folds.
//!
//! The chunk size is the scheduler's (`schedule.rs`), within the memory
//! budget (`SeqOptions`). Streams are read ahead on threads of their own,
//! through queues bounded by bytes (`queue.rs`); `stream_out` runs the
//! sequence on a thread of its own and hands each element to the consumer
//! through such a queue.
//!
//! Note [Chunks copied ahead]
//! On a backend whose programs copy their arguments to a device
//! (`Prepared::copies_ahead`: the CUDA backend), the runtime gathers the
//! next chunk before computing the current one, and while the current
//! one computes, a second thread hands the next one's inputs to its
//! chunk program (`Prepared::prefetch`), which copies them to the device
//! on a stream of their own beside the current chunk's kernels
//! (`MemoryManager::reserve` in the backend), where the next run finds
//! them (Note [Resident inputs] there). The scheduler's choice after a
//! chunk therefore takes effect a chunk later. A chunk's time is from its
//! first kernel to the end of both its computation and the next chunk's
//! copy. Elsewhere the chunks are gathered one at a time, each after the
//! one before has computed.
//!
//! Errors: an element that fails is found by computing the failed chunk's
//! elements one at a time, and reported as `Error::SeqElement` with its
//! index; the elements before it are consumed first (a fold's state has
//! taken them, `stream_out` has handed them out), so no data of the
//! consumed part is lost.

mod chunk;
mod queue;
mod reuse;
mod schedule;

pub use reuse::chunk_programs_compiled;

use super::config::Config;
use super::error::{Error, Result, SrcLoc};
use super::pipeline;
use crate::array::{ArrayData, ArrayTy, Arrays, ArraysTy, ArraysVal, Scalar, Z};
use crate::backend::{self, Prepared};
use crate::ir;
use crate::lang::seq::{
    tuple_node, ArrayStream, Consumed, Consumer, ConsumerProgram, Seq, SeqParts, SeqProgram,
    SourceProgramKind,
};
use accelerate_base::foreign::RuntimeImpl;
use queue::Queue;
use schedule::Scheduler;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// How sequences run.
#[derive(Clone, Debug)]
pub struct SeqOptions {
    /// The bytes a sequence's live arrays may take (its chunks' inputs and
    /// results, the streams read ahead, the results not yet consumed):
    /// the scheduler's bound on the chunk size. Default 256 MiB,
    /// `ACCELERATE_SEQ_BUDGET_MB`.
    pub budget_bytes: usize,
    /// A fixed chunk size instead of the adaptive scheduler's (capped by
    /// the budget). `ACCELERATE_SEQ_CHUNK`.
    pub chunk: Option<usize>,
    /// Called after each chunk with the sequence's progress.
    pub progress: Option<ProgressFn>,
    /// Whether a backend that copies its arguments to a device gets the
    /// next chunk's while the current one computes (Note [Chunks copied
    /// ahead]). On by default; off for an ablation,
    /// `ACCELERATE_FLAGS=no-copy-ahead`.
    pub copy_ahead: bool,
}

impl Default for SeqOptions {
    fn default() -> Self {
        SeqOptions { budget_bytes: 256 << 20, chunk: None, progress: None, copy_ahead: true }
    }
}

/// A sequence's progress, after a chunk.
#[derive(Clone, Copy, Debug)]
pub struct SeqProgress {
    /// Elements computed so far.
    pub elements: u64,
    /// The sequence's length, when its sources say it before the end (not
    /// for a stream).
    pub total: Option<u64>,
    /// Chunks computed so far, and the size of the last.
    pub chunks: usize,
    pub chunk_size: usize,
    pub elapsed: Duration,
}

/// A progress callback (`SeqOptions::progress`).
#[derive(Clone)]
pub struct ProgressFn(pub Arc<dyn Fn(SeqProgress) + Send + Sync>);

impl std::fmt::Debug for ProgressFn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ProgressFn")
    }
}

/// Runs a consumed sequence with the environment's configuration.
#[track_caller]
pub fn run_seq<R: Arrays>(c: &Consumed<R>) -> Result<R> {
    run_seq_with(c, &Config::from_env()?)
}

/// Runs a consumed sequence with an explicit configuration.
pub fn run_seq_with<R: Arrays>(c: &Consumed<R>, config: &Config) -> Result<R> {
    let mut exec = compile_graph(c.parts(), Some(c.consumer()), c.loc(), config)?;
    R::from_arrays_val(exec.run_whole()?)
}

/// Compiles a sequence from its graph (on the thread that built it), and
/// runs its prelude: the arrays its sources read, computed once by a
/// program of their own.
fn compile_graph(
    parts: &SeqParts,
    consumer: Option<&Consumer>,
    loc: SrcLoc,
    config: &Config,
) -> Result<SeqExec> {
    let prog = SeqProgram::convert(parts, consumer, loc, config.sharing)?;
    let mut exec = SeqExec::compile(&prog, loc, config)?;
    let outer = parts.outer_nodes(consumer);
    let vals = if outer.is_empty() {
        Vec::new()
    } else {
        let root = tuple_node(outer.into_iter().map(|(n, _)| n).collect(), loc);
        let c = pipeline::compile_graph(&[], &root, config)?;
        match backend::prepare(&c.plan, config)?.run(Vec::new())? {
            ArraysVal::Tuple(vs) => vs,
            v => vec![v],
        }
    };
    exec.start(vals)?;
    Ok(exec)
}

/// Gives every collected sequence in `a` (a foreign call whose function
/// holds a `SeqProgram`, `Consumed::collect`) its runtime implementation
/// for `config`: the sequence compiled for the program's backend, run
/// on the arrays the enclosing program computed for it.
pub(crate) fn bind_collected(a: &mut ir::OpenAcc, config: &Config) -> Result<()> {
    let mut stack = vec![a];
    while let Some(a) = stack.pop() {
        if let ir::AccKind::Foreign { func, .. } = &mut a.kind {
            if let (Some(prog), false) = (func.implementation::<Arc<SeqProgram>>(), func.has::<RuntimeImpl>())
            {
                let runner = Collected::compile(prog.clone(), a.loc, config)?;
                *func =
                    Arc::new((**func).clone().with_impl(RuntimeImpl(Box::new(move |arg| runner.run(arg)))));
            }
        }
        for part in crate::trafo::avars::parts_mut(a) {
            if let crate::trafo::avars::Part::Acc(c, _) = part {
                stack.push(c);
            }
        }
    }
    Ok(())
}

/// A collected sequence, compiled for one configuration: each call runs
/// it on the enclosing program's arrays (the same compiled chunk
/// programs serve every run, as in an `awhile` loop).
struct Collected {
    exec: Mutex<SeqExec>,
}

impl Collected {
    fn compile(prog: Arc<SeqProgram>, loc: SrcLoc, config: &Config) -> Result<Collected> {
        Ok(Collected { exec: Mutex::new(SeqExec::compile(&prog, loc, config)?) })
    }

    fn run(&self, arg: ArraysVal) -> Result<ArraysVal> {
        let outer = match arg {
            ArraysVal::Tuple(vs) => vs,
            v => vec![v],
        };
        let mut exec = self.exec.lock().unwrap_or_else(|e| e.into_inner());
        exec.reset();
        exec.start(outer)?;
        exec.run_whole()
    }
}

/// The elements of a sequence as a Rust iterator, computed while it is
/// read (the thesis' `streamOut`): the sequence runs on a thread of its
/// own, a chunk ahead of the reader at most (the results not yet read are
/// bounded by the memory budget). An element that fails ends the
/// iteration with its error, after every element before it.
#[track_caller]
pub fn stream_out<A: Arrays>(s: &Seq<A>) -> Result<StreamOut<A>> {
    stream_out_with(s, &Config::from_env()?)
}

#[track_caller]
pub fn stream_out_with<A: Arrays>(s: &Seq<A>, config: &Config) -> Result<StreamOut<A>> {
    let loc = SrcLoc::caller();
    let mut exec = compile_graph(s.parts(), None, loc, config)?;
    let out = Arc::new(Queue::new(config.seq.budget_bytes / schedule::LIVE_FACTOR));
    let q = out.clone();
    let handle = std::thread::Builder::new()
        .name("accelerate-seq".into())
        .spawn(move || {
            let r = exec.run(&mut |chunk| {
                for e in exec_split(&chunk)? {
                    let bytes = e.1;
                    if !q.push(Ok(e.0), bytes) {
                        return Ok(false);
                    }
                }
                Ok(true)
            });
            if let Err(e) = r {
                q.push(Err(e), 0);
            }
            q.close();
        })
        .map_err(|e| Error::Sequence { loc, message: format!("cannot start its thread: {e}") })?;
    Ok(StreamOut { queue: out, handle: Some(handle), done: false, _ty: std::marker::PhantomData })
}

/// The elements of a running sequence (`stream_out`).
pub struct StreamOut<A> {
    queue: Arc<Queue<Result<ArraysVal>>>,
    handle: Option<std::thread::JoinHandle<()>>,
    done: bool,
    _ty: std::marker::PhantomData<fn() -> A>,
}

impl<A: Arrays> Iterator for StreamOut<A> {
    type Item = Result<A>;

    fn next(&mut self) -> Option<Result<A>> {
        if self.done {
            return None;
        }
        match self.queue.pop() {
            Some(Ok(v)) => Some(A::from_arrays_val(v)),
            Some(Err(e)) => {
                self.done = true;
                Some(Err(e))
            }
            None => {
                self.done = true;
                None
            }
        }
    }
}

impl<A> Drop for StreamOut<A> {
    fn drop(&mut self) {
        // the reader is gone: the sequence stops at its next element
        self.queue.cancel();
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

// ---------------------------------------------------------------------------
// The runtime

/// A source as the runtime holds it.
enum SourceRt {
    Indices,
    /// `ty` the row's type.
    Rows {
        ty: ArrayTy,
    },
    Segments,
    Stream {
        ty: ArrayTy,
        /// The iterator, until a run takes it.
        items: Arc<Mutex<Option<ArrayStream>>>,
        queue: Option<Arc<Queue<Result<Arc<ArrayData>>>>>,
        thread: Option<std::thread::JoinHandle<()>>,
        loc: SrcLoc,
        len: Option<u64>,
    },
    Scan {
        ty: ArrayTy,
        inner: Box<SeqExec>,
        step: Box<dyn Prepared>,
        carry: Option<ArraysVal>,
    },
}

impl SourceRt {
    /// How many of the prelude's arrays it reads (`Source::outer`).
    fn outer_count(&self) -> usize {
        match self {
            SourceRt::Indices | SourceRt::Rows { .. } | SourceRt::Scan { .. } => 1,
            SourceRt::Segments => 3,
            SourceRt::Stream { .. } => 0,
        }
    }
}

/// How a sequence is consumed, as the runtime does it.
enum ConsumerRt {
    /// The chunk's elements in the segmented form: kept (`elements`,
    /// `tabulate`) or handed on (`stream_out`, a scan's input).
    Segmented(Collect),
    /// A state stepped by `step` (its parameters: the state, the chunk's
    /// extents and values), fused into the chunk program.
    Batch { state_ty: ArraysTy, step: Box<ir::Program> },
}

#[derive(Clone, Copy, Debug, PartialEq)]
enum Collect {
    Each,
    Elements,
    Tabulate,
}

/// A chunk's result: per array of the element, its extents (a matrix of a
/// row per element) and values; or a fold's new state.
enum ChunkOut {
    Segmented { n: usize, comps: Vec<(Arc<ArrayData>, Arc<ArrayData>)> },
    State,
}

/// What the consumers of `run_seq` keep of the chunks.
#[derive(Default)]
struct Accumulated {
    chunks: Vec<ChunkOut>,
}

impl Accumulated {
    fn push(&mut self, out: ChunkOut) {
        match out {
            ChunkOut::State => self.chunks = vec![out],
            seg => self.chunks.push(seg),
        }
    }
}

/// A sequence compiled for a configuration, and the state of its run.
struct SeqExec {
    loc: SrcLoc,
    config: Config,
    sources: Vec<SourceRt>,
    elem: ir::Program,
    comps: Vec<ArrayTy>,
    /// The types of the arrays the sources read (each source's own, not
    /// a running scan's input's: those are its runtime's).
    outer_tys: Vec<ArraysTy>,
    consumer: ConsumerRt,
    variants: HashMap<Vec<bool>, Arc<dyn Prepared>>,
    /// The chunk size the last run that settled settled on: where the
    /// next run's scheduler starts (a collected sequence is run again).
    settled: Option<usize>,
    // the run's state
    outer: Vec<ArraysVal>,
    state: Option<ArraysVal>,
    known_len: Option<u64>,
    started: bool,
}

fn components(t: &ArraysTy, out: &mut Vec<ArrayTy>) {
    match t {
        ArraysTy::Array(a) => out.push(a.clone()),
        ArraysTy::Tuple(ts) => ts.iter().for_each(|t| components(t, out)),
    }
}

fn scalar_i64(x: i64) -> ArraysVal {
    ArraysVal::Array(Scalar::<i64>::scalar(x).data().clone())
}

/// A function of the sequence (a step), checked as sharing recovery's
/// output is.
fn verified(p: &ir::Program) -> Result<ir::Program> {
    ir::verify::verify_nested_program(p, "sharing")?;
    Ok(p.clone())
}

fn compile_fn(p: &ir::Program, config: &Config) -> Result<Box<dyn Prepared>> {
    let p = verified(p)?;
    let p = if ir::visit::first_nested(&p.body).is_some() { crate::trafo::lift::lift_program(p)? } else { p };
    let c = pipeline::optimise(Vec::new(), p, config)?;
    backend::prepare(&c.plan, config)
}

impl SeqExec {
    /// Compiles a sequence for `config` (its chunk programs are compiled
    /// when a chunk first needs them).
    fn compile(prog: &SeqProgram, loc: SrcLoc, config: &Config) -> Result<SeqExec> {
        if config.seq.budget_bytes == 0 {
            return Err(Error::Sequence {
                loc,
                message: "a memory budget of 0 bytes cannot hold one element".into(),
            });
        }
        if config.seq.chunk == Some(0) {
            return Err(Error::Sequence {
                loc,
                message: "a fixed chunk size of 0 elements computes nothing".into(),
            });
        }
        let mut sources = Vec::with_capacity(prog.sources.len());
        let mut outer_tys = Vec::new();
        for s in &prog.sources {
            outer_tys.extend(s.outer.iter().cloned());
            sources.push(match &s.kind {
                SourceProgramKind::Indices => SourceRt::Indices,
                SourceProgramKind::Rows => SourceRt::Rows { ty: s.ty.clone() },
                SourceProgramKind::Segments => SourceRt::Segments,
                SourceProgramKind::Stream { items, len } => SourceRt::Stream {
                    ty: s.ty.clone(),
                    items: items.clone(),
                    queue: None,
                    thread: None,
                    loc: s.loc,
                    len: *len,
                },
                SourceProgramKind::Scan { input, step } => SourceRt::Scan {
                    ty: s.ty.clone(),
                    inner: Box::new(SeqExec::compile(input, s.loc, config)?),
                    step: compile_fn(step, config)?,
                    carry: None,
                },
            });
        }
        let consumer = match &prog.consumer {
            ConsumerProgram::Each => ConsumerRt::Segmented(Collect::Each),
            ConsumerProgram::Elements => ConsumerRt::Segmented(Collect::Elements),
            ConsumerProgram::Tabulate => ConsumerRt::Segmented(Collect::Tabulate),
            ConsumerProgram::Batch { state_ty, step } => {
                ConsumerRt::Batch { state_ty: state_ty.clone(), step: Box::new(verified(step)?) }
            }
        };
        let mut comps = Vec::new();
        components(&prog.ty, &mut comps);
        Ok(SeqExec {
            loc,
            config: config.clone(),
            sources,
            elem: verified(&prog.elem)?,
            comps,
            outer_tys,
            consumer,
            variants: HashMap::new(),
            settled: None,
            outer: Vec::new(),
            state: None,
            known_len: None,
            started: false,
        })
    }

    /// How many arrays `start` takes (`SeqParts::outer_nodes`' order).
    fn arg_count(&self) -> usize {
        let inner: usize = self
            .sources
            .iter()
            .map(|s| match s {
                SourceRt::Scan { inner, .. } => inner.arg_count(),
                _ => 0,
            })
            .sum();
        let state = usize::from(matches!(self.consumer, ConsumerRt::Batch { .. }));
        self.outer_tys.len() + inner + state
    }

    /// Forgets a finished run, keeping what is compiled.
    fn reset(&mut self) {
        self.stop_streams();
        self.outer.clear();
        self.state = None;
        self.known_len = None;
        self.started = false;
        for s in &mut self.sources {
            if let SourceRt::Scan { inner, carry, .. } = s {
                inner.reset();
                *carry = None;
            }
        }
    }

    /// Starts a run on the arrays the sources read (`args`, in the order
    /// of `SeqParts::outer_nodes`): learns the lengths the sources know,
    /// and starts the streams' readers.
    fn start(&mut self, args: Vec<ArraysVal>) -> Result<()> {
        if self.started {
            return Err(Error::Internal("a sequence started twice".into()));
        }
        if args.len() != self.arg_count() {
            return Err(Error::Internal(format!(
                "a sequence of {} arguments given {}",
                self.arg_count(),
                args.len()
            )));
        }
        self.started = true;
        let mut args = args.into_iter();
        let budget = self.config.seq.budget_bytes;
        let mut known: Option<u64> = None;
        let mut meet = |n: u64| known = Some(known.map_or(n, |k| k.min(n)));
        for s in &mut self.sources {
            let own: Vec<ArraysVal> = args.by_ref().take(s.outer_count()).collect();
            let first = own.first().and_then(|v| v.array()).cloned();
            match s {
                SourceRt::Indices => {
                    let n = first
                        .map(|a| a.get(0))
                        .and_then(|v| v.scalar())
                        .and_then(|v| v.as_i64())
                        .unwrap_or(0);
                    if n < 0 {
                        return Err(Error::Sequence {
                            loc: self.loc,
                            message: format!("produce of a negative length {n}"),
                        });
                    }
                    meet(n as u64);
                }
                SourceRt::Rows { .. } | SourceRt::Segments => {
                    meet(first.map_or(0, |a| a.shape().first().copied().unwrap_or(0)) as u64);
                }
                SourceRt::Stream { items, queue, thread, loc, len, .. } => {
                    if let Some(n) = len {
                        meet(*n);
                    }
                    let loc = *loc;
                    let taken = items.lock().unwrap_or_else(|e| e.into_inner()).take();
                    let mut it = taken.ok_or_else(|| Error::Sequence {
                        loc,
                        message: "this stream was consumed by an earlier run of a sequence".into(),
                    })?;
                    let q = Arc::new(Queue::new(budget / schedule::LIVE_FACTOR));
                    let qp = q.clone();
                    let h = std::thread::Builder::new()
                        .name("accelerate-stream-in".into())
                        .spawn(move || {
                            loop {
                                let next =
                                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| it.next()));
                                let item = match next {
                                    Ok(Some(a)) => {
                                        let bytes = array_bytes(&a);
                                        (Ok(a), bytes)
                                    }
                                    Ok(None) => break,
                                    Err(p) => {
                                        let message = format!(
                                            "the stream's iterator panicked: {}",
                                            accelerate_base::foreign::panic_message(&*p)
                                        );
                                        qp.push(Err(Error::Sequence { loc, message }), 0);
                                        break;
                                    }
                                };
                                if !qp.push(item.0, item.1) {
                                    break;
                                }
                            }
                            qp.close();
                        })
                        .map_err(|e| Error::Sequence {
                            loc,
                            message: format!("cannot start its reader: {e}"),
                        })?;
                    *queue = Some(q);
                    *thread = Some(h);
                }
                SourceRt::Scan { inner, carry, .. } => {
                    *carry = own.first().cloned();
                    let theirs: Vec<ArraysVal> = args.by_ref().take(inner.arg_count()).collect();
                    inner.start(theirs)?;
                    if let Some(n) = inner.known_len {
                        meet(n);
                    }
                }
            }
            self.outer.extend(own);
        }
        if matches!(self.consumer, ConsumerRt::Batch { .. }) {
            self.state = args.next();
        }
        self.known_len = known;
        Ok(())
    }

    /// Runs the whole sequence and gives the consumer's result.
    fn run_whole(&mut self) -> Result<ArraysVal> {
        let mut acc = Accumulated::default();
        self.run(&mut |out| {
            acc.push(out);
            Ok(true)
        })?;
        self.finish(acc)
    }

    /// The chunk program for streams of this regularity, compiled the
    /// first time it is needed.
    fn variant(&mut self, regular: &[bool]) -> Result<Arc<dyn Prepared>> {
        if !self.variants.contains_key(regular) {
            let lay = chunk::layout(&self.sources, regular, &self.outer_tys, &self.consumer);
            let prog = chunk::program(&self.sources, &lay, &self.elem, &self.consumer, self.loc)?;
            // (Note [Chunk programs across runs])
            let exe = reuse::compile(prog, &self.config)?;
            self.variants.insert(regular.to_vec(), exe);
        }
        Ok(self.variants[regular].clone())
    }

    /// Runs the whole sequence, handing each chunk's result to `sink`
    /// (which returns false to stop).
    fn run(&mut self, sink: &mut dyn FnMut(ChunkOut) -> Result<bool>) -> Result<()> {
        if !self.started {
            return Err(Error::Internal("a sequence run before it started".into()));
        }
        let trace = self.config.dumps("schedule");
        let mut sched = Scheduler::new(self.config.seq.chunk, self.config.seq.budget_bytes);
        if let Some(k) = self.settled {
            sched = sched.starting_at(k);
        }
        let t0 = Instant::now();
        let mut chunks = 0usize;
        let mut ready = self.ready(0, sched.next());
        loop {
            let Some(cur) = ready? else { break };
            let start = cur.start;
            let n = cur.n;
            // (the chunk program of this regularity compiled first: its
            // compilation is not the chunk's time)
            let exe = self.variant(&cur.regular)?;
            // a backend that copies to the device beside its launches
            // gets the next chunk while this one computes (Note [Chunks
            // copied ahead])
            let ahead = self.config.seq.copy_ahead && exe.copies_ahead() && cur.pending.is_none();
            let (next, next_exe) = if ahead {
                let next = self.ready(start + n as u64, sched.next());
                let exe = match &next {
                    Ok(Some(r)) => Some(self.variant(&r.regular)?),
                    _ => None,
                };
                (Some(next), exe)
            } else {
                (None, None)
            };
            let t = Instant::now();
            // the inputs, and the chunk program's arguments made of them
            let bytes_in: usize = cur.inputs.iter().map(Gathered::bytes).sum::<usize>()
                + cur.args.iter().map(val_bytes).sum::<usize>();
            let copy = match (&next_exe, &next) {
                (Some(exe), Some(Ok(Some(r)))) => exe.prefetch(&r.args),
                _ => None,
            };
            let out = match copy {
                Some(copy) => std::thread::scope(|s| {
                    s.spawn(copy);
                    self.compute(&cur, sink)
                })?,
                None => self.compute(&cur, sink)?,
            };
            let time = t.elapsed();
            let bytes = bytes_in + out.as_ref().map_or(0, chunk_bytes);
            let decision = sched.record(cur.asked, n, time, bytes);
            if trace {
                eprintln!(
                    "schedule: chunk {chunks} [{start}, {}) {n} elements in {:.3} ms, {:.3} us/element, {} bytes/element: {} -> {}",
                    start + n as u64,
                    time.as_secs_f64() * 1e3,
                    time.as_secs_f64() * 1e6 / n as f64,
                    bytes / n.max(1),
                    decision.why,
                    decision.next
                );
            }
            chunks += 1;
            if let Some(p) = &self.config.seq.progress {
                (p.0)(SeqProgress {
                    elements: start + n as u64,
                    total: self.known_len,
                    chunks,
                    chunk_size: n,
                    elapsed: t0.elapsed(),
                });
            }
            let Some(out) = out else { break };
            if !sink(out)? {
                break;
            }
            if let Some(e) = cur.pending {
                return Err(e);
            }
            // (this chunk's inputs freed before the next is gathered)
            drop(cur);
            ready = match next {
                Some(next) => next,
                None => self.ready(start + n as u64, sched.next()),
            };
        }
        self.settled = sched.settled().or(self.settled);
        self.stop_streams();
        Ok(())
    }

    /// The next chunk, of at most `k` elements from `start`, gathered and
    /// made into its chunk program's arguments; `None` at the end.
    fn ready(&mut self, start: u64, k: usize) -> Result<Option<Ready>> {
        let Some((n, inputs, pending)) = self.gather(start, k)? else { return Ok(None) };
        let regular = self.regularity(&inputs, 0..n);
        let args = self.chunk_inputs(0..n, &inputs, &regular)?;
        Ok(Some(Ready { start, asked: k, n, inputs, regular, args, pending }))
    }

    /// The next chunk's inputs, of at most `k` elements from `start`:
    /// their number, each source's, and a stream's error after them (a
    /// stream that failed or ended before its declared length: the
    /// elements before are computed first, then this is the error);
    /// `None` at the end.
    fn gather(&mut self, start: u64, k: usize) -> Result<Option<Gathering>> {
        let mut n = k;
        if let Some(len) = self.known_len {
            n = n.min(len.saturating_sub(start) as usize);
        }
        let mut inputs = Vec::with_capacity(self.sources.len());
        let mut pending = None;
        for s in &mut self.sources {
            if n == 0 {
                break;
            }
            match s {
                SourceRt::Stream { queue: Some(q), len, loc, .. } => {
                    let mut items = Vec::new();
                    while items.len() < n {
                        match q.pop() {
                            Some(Ok(a)) => items.push(a),
                            Some(Err(e)) => {
                                let index = start + items.len() as u64;
                                pending = Some(Error::SeqElement { loc: *loc, index, error: Box::new(e) });
                                break;
                            }
                            None => {
                                if let Some(len) = len {
                                    let index = start + items.len() as u64;
                                    let message = format!(
                                        "the stream ended after {index} of the {len} elements it was declared to have"
                                    );
                                    let error = Box::new(Error::Sequence { loc: *loc, message });
                                    pending = Some(Error::SeqElement { loc: *loc, index, error });
                                }
                                break;
                            }
                        }
                    }
                    n = n.min(items.len());
                    inputs.push(Gathered::Stream(items));
                }
                SourceRt::Scan { inner, step, carry, .. } => {
                    let Some((m, vals, failed)) = inner.next_values(start, n)? else {
                        n = 0;
                        break;
                    };
                    n = n.min(m);
                    if failed.is_some() {
                        pending = failed;
                    }
                    let carry_in =
                        carry.clone().ok_or_else(|| Error::Internal("a scan without its carry".into()))?;
                    let out = step.run(vec![carry_in, ArraysVal::Array(vals)])?;
                    let ArraysVal::Tuple(mut parts) = out else {
                        return Err(Error::Internal("a scan step's result is not a pair".into()));
                    };
                    let next = parts.pop();
                    let scanned = parts.pop().and_then(|v| v.array().cloned());
                    *carry = next;
                    inputs.push(Gathered::Scan(
                        scanned.ok_or_else(|| Error::Internal("a scan's values".into()))?,
                    ));
                }
                _ => inputs.push(Gathered::None),
            }
        }
        match pending {
            Some(e) if n == 0 => Err(e),
            _ if n == 0 => Ok(None),
            pending => Ok(Some((n, inputs, pending))),
        }
    }

    /// The values of the next chunk of a sequence of scalars (a scan's
    /// input), of at most `k` elements from `start`, and a stream's error
    /// after them.
    fn next_values(&mut self, start: u64, k: usize) -> Result<Option<ScanInput>> {
        let Some(mut c) = self.ready(start, k)? else { return Ok(None) };
        let failed = c.pending.take();
        let mut got = None;
        if let Some(ChunkOut::Segmented { comps, .. }) = self.compute(&c, &mut |_| Ok(true))? {
            got = comps.into_iter().next().map(|(_, v)| v);
        }
        Ok(got.map(|v| (c.n, v, failed)))
    }

    /// Computes a chunk. If it fails, computes its elements one at a time
    /// to name the one that fails, handing those before it to `sink`.
    fn compute(
        &mut self,
        c: &Ready,
        sink: &mut dyn FnMut(ChunkOut) -> Result<bool>,
    ) -> Result<Option<ChunkOut>> {
        let (start, n) = (c.start, c.n);
        match self.run_chunk(start, n, &c.regular, c.args.clone()) {
            Ok(out) => Ok(Some(out)),
            Err(e) if n == 1 => Err(Error::SeqElement { loc: self.loc, index: start, error: Box::new(e) }),
            Err(chunk_error) => {
                for j in 0..n {
                    match self.compute_range(start, j..j + 1, &c.inputs) {
                        Ok(out) => {
                            if !sink(out)? {
                                return Ok(None);
                            }
                        }
                        Err(e) => {
                            return Err(Error::SeqElement {
                                loc: self.loc,
                                index: start + j as u64,
                                error: Box::new(e),
                            })
                        }
                    }
                }
                // every element alone succeeded: the chunk as a whole failed
                Err(Error::SeqElement { loc: self.loc, index: start, error: Box::new(chunk_error) })
            }
        }
    }

    /// For each source, whether the elements `range` of its gathered
    /// inputs are a regular chunk (a stream's elements of one shape).
    fn regularity(&self, inputs: &[Gathered], range: std::ops::Range<usize>) -> Vec<bool> {
        inputs
            .iter()
            .map(|g| match g {
                Gathered::Stream(items) => {
                    items[range.clone()].windows(2).all(|w| w[0].shape() == w[1].shape())
                }
                _ => false,
            })
            .collect()
    }

    /// Runs the chunk program on the elements `range` of the gathered
    /// inputs (whose first is element `start`).
    fn compute_range(
        &mut self,
        start: u64,
        range: std::ops::Range<usize>,
        inputs: &[Gathered],
    ) -> Result<ChunkOut> {
        let regular = self.regularity(inputs, range.clone());
        let first = start + range.start as u64;
        let n = range.len();
        let args = self.chunk_inputs(range, inputs, &regular)?;
        self.run_chunk(first, n, &regular, args)
    }

    /// The chunk program's arguments that come from the chunk's inputs
    /// (the elements `range` of them): each stream's elements, a running
    /// scan's values.
    fn chunk_inputs(
        &self,
        range: std::ops::Range<usize>,
        inputs: &[Gathered],
        regular: &[bool],
    ) -> Result<Vec<ArraysVal>> {
        let n = range.len();
        let mut chunk_args = Vec::new();
        for ((s, g), &reg) in self.sources.iter().zip(inputs).zip(regular) {
            match (s, g) {
                (SourceRt::Stream { ty, .. }, Gathered::Stream(items)) => {
                    chunk_args.extend(stream_chunk(&items[range.clone()], ty, reg, self.loc)?);
                }
                (SourceRt::Scan { .. }, Gathered::Scan(vals)) => {
                    let piece = ArrayData::concat(vals.elt_ty(), &[(vals, range.clone())], vec![n])
                        .ok_or_else(|| Error::Internal("a scan's chunk".into()))?;
                    chunk_args.push(ArraysVal::Array(Arc::new(piece)));
                }
                _ => {}
            }
        }
        Ok(chunk_args)
    }

    /// Runs the chunk program of this regularity on `n` elements from
    /// element `first`, whose inputs are `chunk_args`.
    fn run_chunk(
        &mut self,
        first: u64,
        n: usize,
        regular: &[bool],
        chunk_args: Vec<ArraysVal>,
    ) -> Result<ChunkOut> {
        let mut args: Vec<ArraysVal> = self.outer.clone();
        args.push(scalar_i64(first as i64));
        args.push(scalar_i64(n as i64));
        args.extend(chunk_args);
        if let Some(s) = &self.state {
            args.push(s.clone());
        }
        let exe = self.variant(regular)?;
        let out = exe.run(args)?;
        match &self.consumer {
            ConsumerRt::Batch { .. } => {
                self.state = Some(out.clone());
                Ok(ChunkOut::State)
            }
            ConsumerRt::Segmented(_) => {
                let ArraysVal::Tuple(pairs) = out else {
                    return Err(Error::Internal("a chunk's result is not a tuple".into()));
                };
                let comps = pairs
                    .into_iter()
                    .map(|p| match p {
                        ArraysVal::Tuple(mut ev) if ev.len() == 2 => {
                            let v = ev.pop().and_then(|v| v.array().cloned());
                            let e = ev.pop().and_then(|v| v.array().cloned());
                            e.zip(v).ok_or_else(|| Error::Internal("a chunk's extents and values".into()))
                        }
                        _ => Err(Error::Internal("a chunk's component is not a pair".into())),
                    })
                    .collect::<Result<Vec<_>>>()?;
                Ok(ChunkOut::Segmented { n, comps })
            }
        }
    }

    fn stop_streams(&mut self) {
        for s in &mut self.sources {
            match s {
                SourceRt::Stream { queue, thread, .. } => {
                    if let Some(q) = queue.take() {
                        q.cancel();
                    }
                    if let Some(h) = thread.take() {
                        let _ = h.join();
                    }
                }
                SourceRt::Scan { inner, .. } => inner.stop_streams(),
                _ => {}
            }
        }
    }

    /// The consumer's result from what the chunks gave.
    fn finish(&self, acc: Accumulated) -> Result<ArraysVal> {
        match &self.consumer {
            ConsumerRt::Batch { .. } => {
                self.state.clone().ok_or_else(|| Error::Internal("a fold without its state".into()))
            }
            ConsumerRt::Segmented(Collect::Elements) => {
                let elt = self.comps[0].elt.clone();
                let pieces: Vec<(&ArrayData, std::ops::Range<usize>)> = acc
                    .chunks
                    .iter()
                    .filter_map(|c| match c {
                        ChunkOut::Segmented { comps, .. } => Some((&*comps[0].1, 0..comps[0].1.len())),
                        _ => None,
                    })
                    .collect();
                let total = pieces.iter().map(|p| p.1.len()).sum();
                let data = ArrayData::concat(&elt, &pieces, vec![total])
                    .ok_or_else(|| Error::OutOfMemory { loc: self.loc, shape: vec![total] })?;
                Ok(ArraysVal::Array(Arc::new(data)))
            }
            ConsumerRt::Segmented(Collect::Tabulate) => tabulate(&self.comps[0], &acc.chunks, self.loc),
            ConsumerRt::Segmented(Collect::Each) => Err(Error::Internal("stream_out has no result".into())),
        }
    }
}

impl Drop for SeqExec {
    fn drop(&mut self) {
        self.stop_streams();
    }
}

/// A chunk gathered before it computes: its first element, the size
/// the scheduler asked for and its size, each source's inputs and
/// whether each stream's are regular, its chunk program's arguments from
/// them, and a stream's error after its elements.
struct Ready {
    start: u64,
    asked: usize,
    n: usize,
    inputs: Vec<Gathered>,
    regular: Vec<bool>,
    args: Vec<ArraysVal>,
    pending: Option<Error>,
}

/// A chunk's number of elements, each source's inputs, and a stream's
/// error after them (`SeqExec::gather`).
type Gathering = (usize, Vec<Gathered>, Option<Error>);

/// A running scan's input chunk: its number of elements, its values,
/// and a stream's error after them (`SeqExec::next_values`).
type ScanInput = (usize, Arc<ArrayData>, Option<Error>);

/// A source's part of a chunk's inputs, gathered before it runs.
enum Gathered {
    None,
    Stream(Vec<Arc<ArrayData>>),
    Scan(Arc<ArrayData>),
}

impl Gathered {
    fn bytes(&self) -> usize {
        match self {
            Gathered::None => 0,
            Gathered::Stream(items) => items.iter().map(|a| array_bytes(a)).sum(),
            Gathered::Scan(v) => array_bytes(v),
        }
    }
}

/// The bytes of an array's elements.
fn array_bytes(a: &ArrayData) -> usize {
    a.buffers().iter().map(|b| b.bytes().len()).sum()
}

fn val_bytes(v: &ArraysVal) -> usize {
    match v {
        ArraysVal::Array(a) => array_bytes(a),
        ArraysVal::Tuple(vs) => vs.iter().map(val_bytes).sum(),
    }
}

fn chunk_bytes(out: &ChunkOut) -> usize {
    match out {
        ChunkOut::Segmented { comps, .. } => comps.iter().map(|(e, v)| array_bytes(e) + array_bytes(v)).sum(),
        ChunkOut::State => 0,
    }
}

/// A stream's elements as a chunk program's input: one array of one more
/// dimension when they share a shape, else their extents, offsets and
/// values.
fn stream_chunk(
    items: &[Arc<ArrayData>],
    ty: &ArrayTy,
    regular: bool,
    loc: SrcLoc,
) -> Result<Vec<ArraysVal>> {
    let oom = |shape: Vec<usize>| Error::OutOfMemory { loc, shape };
    let pieces: Vec<(&ArrayData, std::ops::Range<usize>)> =
        items.iter().map(|a| (&**a, 0..a.len())).collect();
    let total: usize = items.iter().map(|a| a.len()).sum();
    if regular {
        let mut shape = vec![items.len()];
        shape.extend(items.first().map_or_else(|| vec![0; ty.rank], |a| a.shape().to_vec()));
        let data = ArrayData::concat(&ty.elt, &pieces, shape.clone()).ok_or_else(|| oom(shape))?;
        return Ok(vec![ArraysVal::Array(Arc::new(data))]);
    }
    let mut extents = Vec::with_capacity(items.len() * ty.rank);
    let mut offsets = Vec::with_capacity(items.len() + 1);
    let mut at = 0i64;
    for a in items {
        extents.extend(a.shape().iter().map(|&d| d as i64));
        offsets.push(at);
        at += a.len() as i64;
    }
    offsets.push(at);
    let ext = crate::array::Array::from_vec(
        crate::array::Snoc(crate::array::Snoc(Z, items.len() as i64), ty.rank as i64),
        extents,
    )?;
    let offs = crate::array::Vector::from_elems(offsets);
    let vals = ArrayData::concat(&ty.elt, &pieces, vec![total]).ok_or_else(|| oom(vec![total]))?;
    Ok(vec![
        ArraysVal::Array(ext.data().clone()),
        ArraysVal::Array(offs.data().clone()),
        ArraysVal::Array(Arc::new(vals)),
    ])
}

/// Each element's arrays (a tuple of them for a sequence of tuples), and
/// their bytes, from a chunk's segmented result.
fn exec_split(out: &ChunkOut) -> Result<Vec<(ArraysVal, usize)>> {
    let ChunkOut::Segmented { n, comps } = out else {
        return Err(Error::Internal("a fold's state split as elements".into()));
    };
    let mut per_comp: Vec<Vec<Arc<ArrayData>>> = Vec::new();
    for (ext, vals) in comps {
        let rank = ext.shape().get(1).copied().unwrap_or(0);
        let mut at = 0usize;
        let mut elems = Vec::with_capacity(*n);
        for j in 0..*n {
            let shape: Vec<usize> = (0..rank)
                .map(|c| ext.get(j * rank + c).scalar().and_then(|v| v.as_i64()).unwrap_or(0).max(0) as usize)
                .collect();
            let size: usize = shape.iter().product();
            let piece = ArrayData::concat(vals.elt_ty(), &[(&**vals, at..at + size)], shape)
                .ok_or_else(|| Error::Internal("an element's values".into()))?;
            at += size;
            elems.push(Arc::new(piece));
        }
        per_comp.push(elems);
    }
    let mut out = Vec::with_capacity(*n);
    for j in 0..*n {
        let arrays: Vec<Arc<ArrayData>> = per_comp.iter().map(|c| c[j].clone()).collect();
        let bytes = arrays.iter().map(|a| array_bytes(a)).sum();
        let v = if arrays.len() == 1 {
            ArraysVal::Array(arrays[0].clone())
        } else {
            ArraysVal::Tuple(arrays.into_iter().map(ArraysVal::Array).collect())
        };
        out.push((v, bytes));
    }
    Ok(out)
}

/// The elements stacked along a new outer dimension, each cut to the
/// intersection of their extents (the thesis' `tabulate`).
fn tabulate(ty: &ArrayTy, chunks: &[ChunkOut], loc: SrcLoc) -> Result<ArraysVal> {
    let rank = ty.rank;
    let mut shapes: Vec<Vec<usize>> = Vec::new();
    let mut where_: Vec<(&ArrayData, usize)> = Vec::new();
    for c in chunks {
        let ChunkOut::Segmented { n, comps } = c else { continue };
        let (ext, vals) = &comps[0];
        let mut at = 0;
        for j in 0..*n {
            let shape: Vec<usize> = (0..rank)
                .map(|k| ext.get(j * rank + k).scalar().and_then(|v| v.as_i64()).unwrap_or(0).max(0) as usize)
                .collect();
            where_.push((&**vals, at));
            at += shape.iter().product::<usize>();
            shapes.push(shape);
        }
    }
    let meet: Vec<usize> = (0..rank).map(|k| shapes.iter().map(|s| s[k]).min().unwrap_or(0)).collect();
    let inner = meet.last().copied().unwrap_or(1);
    let rows: usize = meet[..rank.saturating_sub(1)].iter().product();
    let mut pieces = Vec::with_capacity(shapes.len() * rows);
    for (shape, &(vals, base)) in shapes.iter().zip(&where_) {
        // each row of the cut element: its position in the element
        for r in 0..rows {
            let mut rem = r;
            let mut lin = 0usize;
            let mut stride = 1usize;
            let mut idx = vec![0usize; rank.saturating_sub(1)];
            for k in (0..rank.saturating_sub(1)).rev() {
                idx[k] = rem % meet[k];
                rem /= meet[k];
            }
            for k in (0..rank).rev() {
                let i = if k + 1 == rank { 0 } else { idx[k] };
                lin += i * stride;
                stride *= shape[k];
            }
            pieces.push((vals, base + lin..base + lin + inner));
        }
    }
    let mut out_shape = vec![shapes.len()];
    out_shape.extend(&meet);
    let data = ArrayData::concat(&ty.elt, &pieces, out_shape.clone())
        .ok_or(Error::OutOfMemory { loc, shape: out_shape })?;
    Ok(ArraysVal::Array(Arc::new(data)))
}

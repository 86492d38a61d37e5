//! Irregular array sequences: `Seq<A>`, a third level of stream-parallel
//! array computations over the arrays of a sequence (the sequences thesis
//! ch.3: `produce`, `mapSeq`, `zipWithSeq`, `elements`, `tabulate`,
//! `consume`, `streamIn`, `streamOut`).
//!
//! A sequence is built as the thesis' normal form (§5.1.1): a mapping of
//! one array function over the elements of its *sources*. Each source
//! (`produce`'s indices, the rows of an array, the segments of a vector,
//! a Rust iterator, a running scan of another sequence) gives its element
//! as an array parameter of that function; `map_seq` and `zip_with_seq`
//! call the user's function on the symbolic element, so a chain of them is
//! one function, which the runtime lifts over a chunk of elements and
//! fuses as one program (`exec::seq` in the facade runs it). A sequence is
//! as long as its shortest source.
//!
//! A sequence is consumed into a `Consumed<R>` (Accelerate's `Seq arr`):
//! its elements' values (`elements`), its elements stacked along a new
//! outer dimension (`tabulate`), a fold (`fold_seq`, `fold_batch`), or
//! the elements themselves one by one (`stream_out`, in the facade). The
//! graph of a sequence lives on the thread that built it, as every
//! program graph does; a stream's iterator is `Send`, because the runtime
//! pulls it on a thread of its own.

use super::acc::{generate, unit, Acc, AsAcc};
use super::exp::{Exp, IntoExp};
use super::graph::{self, NodeKind, NodeRef};
use crate::convert::{convert_program, SharingOptions};
use accelerate_base::array::{
    Array, ArrayData, ArrayTy, Arrays, ArraysTy, Elt, Scalar, Shape, Snoc, Vector, Z,
};
use accelerate_base::error::{Result, SrcLoc};
use accelerate_base::foreign::ForeignAcc;
use accelerate_ir as ir;
use std::marker::PhantomData;
use std::rc::Rc;
use std::sync::{Arc, Mutex};

/// An iterator of host arrays, pulled by the sequence runtime.
pub type ArrayStream = Box<dyn Iterator<Item = Arc<ArrayData>> + Send>;

/// Where a sequence's elements come from.
#[doc(hidden)]
pub enum SourceKind {
    /// The indices `0 .. n` (`produce`); `n` an `Exp<i64>` node.
    Indices { n: NodeRef },
    /// The slices of an array along its outermost dimension (`to_seq`).
    Rows { array: NodeRef, ty: ArrayTy },
    /// The segments of a vector (`from_segs`): `lengths` a vector of
    /// `i64`, `values` the flat vector.
    Segments { lengths: NodeRef, values: NodeRef, ty: ArrayTy },
    /// A Rust iterator's arrays (`stream_in`), taken by the first run;
    /// `len`, the length it was declared to have, if it was.
    Stream { items: Arc<Mutex<Option<ArrayStream>>>, ty: ArrayTy, len: Option<u64> },
    /// The running folds of a sequence of scalars (`scan_seq`): element
    /// `i` is `init ⊕ x_0 ⊕ ... ⊕ x_i`. `init` is a `Scalar`, `step` the
    /// function from the carry and a chunk's values to the chunk's running
    /// folds and the next carry.
    Scan { input: Box<SeqParts>, init: NodeRef, step: ArrayFn },
}

/// A source of a sequence, and the parameter node standing for its
/// element in the element function.
#[doc(hidden)]
pub struct Source {
    pub kind: SourceKind,
    pub param: NodeRef,
    /// The element's type (`Scalar<i64>` for indices).
    pub ty: ArrayTy,
    pub loc: SrcLoc,
}

/// A function of arrays in the graph: its parameter nodes, with their
/// types, and its result.
#[doc(hidden)]
pub struct ArrayFn {
    pub params: Vec<(NodeRef, ArraysTy)>,
    pub body: NodeRef,
}

/// The untyped parts of a sequence: its sources (each once, in the order
/// they were first used) and the graph of its element.
#[doc(hidden)]
#[derive(Clone)]
pub struct SeqParts {
    pub sources: Vec<Rc<Source>>,
    pub elem: NodeRef,
    pub ty: ArraysTy,
    pub loc: SrcLoc,
}

impl Source {
    /// The arrays this source reads from the enclosing program, computed
    /// once before the sequence runs (Note [Sequence programs] in the
    /// facade's `exec::seq`): `produce`'s length as a `Scalar`; the array
    /// of `to_seq`; the lengths, their offsets (a scan, one longer) and
    /// the values of `from_segs`; the initial value of `scan_seq`.
    pub fn outer(&self) -> Vec<(NodeRef, ArraysTy)> {
        let nodes = match &self.kind {
            SourceKind::Indices { n } => vec![graph::push(NodeKind::Unit(n.clone()), self.loc)],
            SourceKind::Rows { array, .. } => vec![array.clone()],
            SourceKind::Segments { lengths, values, .. } => {
                let offsets = Acc::<Vector<i64>>::from_id(lengths.clone()).scanl(0i64, |a, b| a + b);
                vec![lengths.clone(), offsets.r(), values.clone()]
            }
            SourceKind::Stream { .. } => Vec::new(),
            SourceKind::Scan { init, .. } => vec![init.clone()],
        };
        nodes.into_iter().zip(self.outer_tys()).collect()
    }

    /// The types of `outer`'s arrays (without building them).
    pub fn outer_tys(&self) -> Vec<ArraysTy> {
        let i64v = || Vector::<i64>::arrays_ty();
        match &self.kind {
            SourceKind::Indices { .. } => vec![Scalar::<i64>::arrays_ty()],
            SourceKind::Rows { ty, .. } => vec![ArraysTy::Array(ty.clone())],
            SourceKind::Segments { ty, .. } => vec![i64v(), i64v(), ArraysTy::Array(ty.clone())],
            SourceKind::Stream { .. } => Vec::new(),
            SourceKind::Scan { .. } => vec![ArraysTy::Array(self.ty.clone())],
        }
    }
}

impl SeqParts {
    /// The arrays a run of the sequence reads from the enclosing program,
    /// in the order a run takes them: each
    /// source's (`Source::outer`), a running scan's followed by its input
    /// sequence's; then a fold's initial state.
    pub fn outer_nodes(&self, consumer: Option<&Consumer>) -> Vec<(NodeRef, ArraysTy)> {
        let mut out = Vec::new();
        for s in &self.sources {
            out.extend(s.outer());
            if let SourceKind::Scan { input, .. } = &s.kind {
                out.extend(input.outer_nodes(None));
            }
        }
        if let Some(Consumer::Batch { init, step }) = consumer {
            out.push((init.clone(), step.params[0].1.clone()));
        }
        out
    }
}

/// A tuple of array computations of any arity, for the runtime.
#[doc(hidden)]
pub fn tuple_node(items: Vec<NodeRef>, loc: SrcLoc) -> NodeRef {
    graph::push(NodeKind::ATuple(items), loc)
}

/// A sequence of arrays, or of tuples of arrays, each of type `A`
/// (Accelerate's `Seq [A]`).
pub struct Seq<A> {
    parts: SeqParts,
    _ty: PhantomData<fn() -> A>,
}

impl<A> Clone for Seq<A> {
    fn clone(&self) -> Self {
        Seq { parts: self.parts.clone(), _ty: PhantomData }
    }
}

fn source<E: Arrays>(kind: SourceKind, ty: ArrayTy, loc: SrcLoc) -> (Rc<Source>, Acc<E>) {
    let param = Acc::<E>::param();
    (Rc::new(Source { kind, param: param.r(), ty, loc }), param)
}

fn array_ty<Sh: Shape, E: Elt>() -> ArrayTy {
    ArrayTy { rank: Sh::RANK, elt: E::elt_ty() }
}

/// The sequence of `f(i)` for `i` in `0 .. n` (the thesis' `produce`).
#[track_caller]
pub fn produce<A: Arrays>(n: impl IntoExp<i64>, f: impl FnOnce(&Exp<i64>) -> Acc<A>) -> Seq<A> {
    let loc = SrcLoc::caller();
    let n = n.into_exp();
    let (src, idx) = source::<Scalar<i64>>(SourceKind::Indices { n: n.id }, array_ty::<Z, i64>(), loc);
    let elem = f(&idx.the());
    Seq::from_parts(SeqParts { sources: vec![src], elem: elem.r(), ty: A::arrays_ty(), loc })
}

/// Shapes with an outermost dimension, and the shape of their slices
/// along it.
pub trait Outer: Shape {
    type Row: Shape;
}

impl<Sh: Shape> Outer for Snoc<Sh>
where
    Snoc<Sh>: RowOf,
{
    type Row = <Snoc<Sh> as RowOf>::Row;
}

#[doc(hidden)]
pub trait RowOf {
    type Row: Shape;
}

impl RowOf for Snoc<Z> {
    type Row = Z;
}

impl<Sh: Shape> RowOf for Snoc<Snoc<Sh>>
where
    Snoc<Sh>: RowOf,
{
    type Row = Snoc<<Snoc<Sh> as RowOf>::Row>;
}

/// The sequence of an array's slices along its outermost dimension
/// (Accelerate's `toSeqOuter`): the rows of a matrix, the elements of a
/// vector as scalars.
#[track_caller]
pub fn to_seq<Sh: Outer, E: Elt>(a: impl AsAcc<Array<Sh, E>>) -> Seq<Array<Sh::Row, E>> {
    let loc = SrcLoc::caller();
    let array = a.as_acc().r();
    let kind = SourceKind::Rows { array, ty: array_ty::<Sh, E>() };
    let (src, row) = source::<Array<Sh::Row, E>>(kind, array_ty::<Sh::Row, E>(), loc);
    Seq::from_parts(SeqParts { sources: vec![src], elem: row.r(), ty: row_ty::<Sh::Row, E>(), loc })
}

fn row_ty<Sh: Shape, E: Elt>() -> ArraysTy {
    ArraysTy::Array(array_ty::<Sh, E>())
}

/// The sequence of the segments of `values` whose lengths are `lengths`,
/// in order (a segment descriptor and its flat vector).
#[track_caller]
pub fn from_segs<E: Elt>(lengths: impl AsAcc<Vector<i64>>, values: impl AsAcc<Vector<E>>) -> Seq<Vector<E>> {
    let loc = SrcLoc::caller();
    let kind = SourceKind::Segments {
        lengths: lengths.as_acc().r(),
        values: values.as_acc().r(),
        ty: array_ty::<Snoc<Z>, E>(),
    };
    let (src, seg) = source::<Vector<E>>(kind, array_ty::<Snoc<Z>, E>(), loc);
    Seq::from_parts(SeqParts { sources: vec![src], elem: seg.r(), ty: row_ty::<Snoc<Z>, E>(), loc })
}

/// The sequence of a Rust iterator's arrays, pulled as the sequence runs
/// (the thesis' `streamIn`): while a chunk computes, the next is read on a
/// thread of its own. The elements may differ in extent (an irregular
/// sequence). A sequence with a stream runs once; running it again is an
/// error.
#[track_caller]
pub fn stream_in<Sh: Shape, E: Elt, I>(items: I) -> Seq<Array<Sh, E>>
where
    I: IntoIterator<Item = Array<Sh, E>>,
    I::IntoIter: Send + 'static,
{
    stream(items, None, SrcLoc::caller())
}

/// `stream_in` of an iterator declared to have `len` arrays: the sequence
/// is as long, and an iterator that ends before is an error naming the
/// element it lacks (where `stream_in`'s sequence would just end).
#[track_caller]
pub fn stream_in_exact<Sh: Shape, E: Elt, I>(len: u64, items: I) -> Seq<Array<Sh, E>>
where
    I: IntoIterator<Item = Array<Sh, E>>,
    I::IntoIter: Send + 'static,
{
    stream(items, Some(len), SrcLoc::caller())
}

fn stream<Sh: Shape, E: Elt, I>(items: I, len: Option<u64>, loc: SrcLoc) -> Seq<Array<Sh, E>>
where
    I: IntoIterator<Item = Array<Sh, E>>,
    I::IntoIter: Send + 'static,
{
    let items: ArrayStream = Box::new(items.into_iter().map(|a| a.data().clone()));
    let kind = SourceKind::Stream { items: Arc::new(Mutex::new(Some(items))), ty: array_ty::<Sh, E>(), len };
    let (src, x) = source::<Array<Sh, E>>(kind, array_ty::<Sh, E>(), loc);
    Seq::from_parts(SeqParts { sources: vec![src], elem: x.r(), ty: row_ty::<Sh, E>(), loc })
}

impl<A: Arrays> Seq<A> {
    fn from_parts(parts: SeqParts) -> Self {
        Seq { parts, _ty: PhantomData }
    }

    /// The untyped parts, for the runtime.
    #[doc(hidden)]
    pub fn parts(&self) -> &SeqParts {
        &self.parts
    }

    /// The element, as a computation of this sequence's sources.
    fn elem(&self) -> Acc<A> {
        Acc::from_id(self.parts.elem.clone())
    }

    /// `f` applied to every element (the thesis' `mapSeq`).
    #[track_caller]
    pub fn map_seq<B: Arrays>(&self, f: impl FnOnce(Acc<A>) -> Acc<B>) -> Seq<B> {
        let elem = f(self.elem());
        Seq::from_parts(SeqParts {
            elem: elem.r(),
            ty: B::arrays_ty(),
            loc: SrcLoc::caller(),
            ..self.parts.clone()
        })
    }

    /// `f` applied to the elements of two sequences pairwise, as long as
    /// the shorter (the thesis' `zipWithSeq`).
    #[track_caller]
    pub fn zip_with_seq<B: Arrays, C: Arrays>(
        &self,
        other: &Seq<B>,
        f: impl FnOnce(Acc<A>, Acc<B>) -> Acc<C>,
    ) -> Seq<C> {
        let elem = f(self.elem(), other.elem());
        let mut sources = self.parts.sources.clone();
        for s in &other.parts.sources {
            if !sources.iter().any(|t| Rc::ptr_eq(s, t)) {
                sources.push(s.clone());
            }
        }
        Seq::from_parts(SeqParts { sources, elem: elem.r(), ty: C::arrays_ty(), loc: SrcLoc::caller() })
    }

    /// The pairs of the elements of two sequences, as long as the shorter.
    #[track_caller]
    pub fn zip_seq<B: Arrays>(&self, other: &Seq<B>) -> Seq<(A, B)> {
        self.zip_with_seq(other, |a, b| super::acc::lift_acc((a, b)))
    }
}

impl<Sh: Shape, E: Elt> Seq<Array<Sh, E>> {
    /// Every element's values, in row-major order, element after element,
    /// as one vector (the thesis' `elements`).
    #[track_caller]
    pub fn elements(&self) -> Consumed<Vector<E>> {
        Consumed::new(self.parts.clone(), Consumer::Elements, SrcLoc::caller())
    }

    /// The elements stacked along a new outermost dimension, each cut to
    /// the intersection of all their extents (the thesis' `tabulate`; an
    /// empty sequence gives an array of outer extent 0 and inner extents
    /// 0).
    #[track_caller]
    pub fn tabulate(&self) -> Consumed<Array<Snoc<Sh>, E>>
    where
        Snoc<Sh>: Shape,
    {
        Consumed::new(self.parts.clone(), Consumer::Tabulate, SrcLoc::caller())
    }

    /// A running state over the sequence, computed a chunk at a time
    /// (Accelerate's `foldSeqFlatten`, also called `foldBatch`): `f(state,
    /// extents, values)` gives the state after a chunk, for the chunk's
    /// elements in the segmented form (`extents` a row of `Sh::RANK`
    /// extents per element, `values` their values element after element).
    #[track_caller]
    pub fn fold_batch<S: Arrays>(
        &self,
        init: impl AsAcc<S>,
        f: impl FnOnce(Acc<S>, Acc<Array<Snoc<Snoc<Z>>, i64>>, Acc<Vector<E>>) -> Acc<S>,
    ) -> Consumed<S> {
        let loc = SrcLoc::caller();
        let (state, ext, vals) = (Acc::<S>::param(), Acc::param(), Acc::param());
        let body = f(state.clone(), ext.clone(), vals.clone());
        let step = ArrayFn {
            params: vec![
                (state.r(), S::arrays_ty()),
                (ext.r(), Array::<Snoc<Snoc<Z>>, i64>::arrays_ty()),
                (vals.r(), Vector::<E>::arrays_ty()),
            ],
            body: body.r(),
        };
        Consumed::new(self.parts.clone(), Consumer::Batch { init: init.as_acc().r(), step }, loc)
    }
}

impl<E: Elt> Seq<Scalar<E>> {
    /// `init ⊕ x_0 ⊕ x_1 ⊕ ...` for the operator `op`, taken to be
    /// associative (Accelerate's `foldSeq`); `init` is combined once.
    #[track_caller]
    pub fn fold_seq(
        &self,
        init: impl IntoExp<E>,
        op: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Consumed<Scalar<E>> {
        self.fold_batch(unit(init), move |state, _ext, vals| vals.fold(state.the(), op))
    }

    /// The running folds: element `i` is `init ⊕ x_0 ⊕ ... ⊕ x_i` for the
    /// operator `op`, taken to be associative (a sequence as long as this
    /// one). A chunk is one scan, carrying the last fold to the next.
    #[track_caller]
    pub fn scan_seq(
        &self,
        init: impl IntoExp<E>,
        op: impl FnOnce(&Exp<E>, &Exp<E>) -> Exp<E>,
    ) -> Seq<Scalar<E>> {
        let loc = SrcLoc::caller();
        let init = unit(init);
        let (carry, vals) = (Acc::<Scalar<E>>::param(), Acc::<Vector<E>>::param());
        // scanl from the carry: [c, c⊕x0, c⊕x0⊕x1, ...]; the chunk's
        // running folds are all but the first, the next carry the last
        let s = vals.scanl(carry.the(), op);
        let n = vals.size();
        let s2 = s.clone();
        let scanned = generate(super::exp::index1(n.clone()), move |i| {
            s2.index(super::exp::index1(super::exp::unindex1(i) + 1i64))
        });
        let last = unit(s.index(super::exp::index1(n)));
        let body = super::acc::lift_acc((scanned, last));
        let step = ArrayFn {
            params: vec![(carry.r(), Scalar::<E>::arrays_ty()), (vals.r(), Vector::<E>::arrays_ty())],
            body: body.r(),
        };
        let ty = array_ty::<Z, E>();
        let kind = SourceKind::Scan { input: Box::new(self.parts.clone()), init: init.r(), step };
        let (src, x) = source::<Scalar<E>>(kind, ty, loc);
        Seq::from_parts(SeqParts { sources: vec![src], elem: x.r(), ty: Scalar::<E>::arrays_ty(), loc })
    }
}

/// How a sequence is consumed.
#[doc(hidden)]
pub enum Consumer {
    /// Every element's values, as one vector.
    Elements,
    /// The elements stacked along a new outer dimension.
    Tabulate,
    /// A state stepped once a chunk.
    Batch { init: NodeRef, step: ArrayFn },
}

/// A sequence consumed into a value of type `R` (Accelerate's `Seq arr`):
/// run by the facade's `run_seq`, or as an iterator by `stream_out`.
pub struct Consumed<R> {
    parts: SeqParts,
    consumer: Rc<Consumer>,
    loc: SrcLoc,
    _ty: PhantomData<fn() -> R>,
}

impl<R> Clone for Consumed<R> {
    fn clone(&self) -> Self {
        Consumed {
            parts: self.parts.clone(),
            consumer: self.consumer.clone(),
            loc: self.loc,
            _ty: PhantomData,
        }
    }
}

impl<R> Consumed<R> {
    fn new(parts: SeqParts, consumer: Consumer, loc: SrcLoc) -> Self {
        Consumed { parts, consumer: Rc::new(consumer), loc, _ty: PhantomData }
    }

    #[doc(hidden)]
    pub fn parts(&self) -> &SeqParts {
        &self.parts
    }

    #[doc(hidden)]
    pub fn consumer(&self) -> &Consumer {
        &self.consumer
    }

    /// Where the user consumed the sequence.
    #[doc(hidden)]
    pub fn loc(&self) -> SrcLoc {
        self.loc
    }
}

impl<R: Arrays> Consumed<R> {
    /// The consumed sequence's result as an array computation, part of a
    /// larger program (Accelerate's `collect`): the arrays its sources
    /// read are computed by that program, and the sequence runs, chunk
    /// after chunk, where the program needs its result, on the program's
    /// backend and configuration. Like a foreign call, it is a fusion
    /// barrier, and it cannot be used inside a parallel function (`map`'s
    /// and the like): that is an `Error::NestedParallelism`. A program
    /// with a stream (`stream_in`) runs once: the stream is taken by the
    /// first run.
    #[track_caller]
    pub fn collect(&self) -> Acc<R> {
        let loc = SrcLoc::caller();
        let args = self.parts.outer_nodes(Some(&self.consumer));
        let arg = tuple_node(args.into_iter().map(|(n, _)| n).collect(), loc);
        let seq =
            CollectSeq { parts: self.parts.clone(), consumer: self.consumer.clone(), ty: R::arrays_ty() };
        Acc::node(NodeKind::Collect { seq: Rc::new(seq), arg }, loc)
    }
}

/// A consumed sequence inside a larger program (`Consumed::collect`),
/// kept in the graph until the program is converted.
#[doc(hidden)]
pub struct CollectSeq {
    parts: SeqParts,
    consumer: Rc<Consumer>,
    ty: ArraysTy,
}

impl std::fmt::Debug for CollectSeq {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "collect of a sequence of {} sources -> {}", self.parts.sources.len(), self.ty)
    }
}

impl CollectSeq {
    /// The foreign call a collected sequence is in the IR: named
    /// `collect`, of the consumer's result type, with the sequence's
    /// `SeqProgram` (converted with the enclosing program's sharing
    /// options) as the form a runtime implementation is made from
    /// (Note [Sequence programs] in the facade's `exec::seq`).
    pub fn foreign(&self, opts: SharingOptions) -> Result<Arc<ForeignAcc>> {
        let prog = SeqProgram::convert(&self.parts, Some(&self.consumer), self.parts.loc, opts)?;
        Ok(Arc::new(ForeignAcc::new("collect", self.ty.clone()).with_impl(Arc::new(prog))))
    }
}

/// A sequence in the IR, for the runtime: its sources, its element
/// function (a program whose parameters are the sources' elements, in
/// order), and how it is consumed.
pub struct SeqProgram {
    pub sources: Vec<SourceProgram>,
    pub elem: ir::Program,
    /// The element's type.
    pub ty: ArraysTy,
    pub consumer: ConsumerProgram,
    pub loc: SrcLoc,
}

/// A source in the IR.
pub struct SourceProgram {
    pub kind: SourceProgramKind,
    /// The element's type.
    pub ty: ArrayTy,
    /// The types of the arrays it reads from the enclosing program
    /// (`Source::outer`).
    pub outer: Vec<ArraysTy>,
    pub loc: SrcLoc,
}

pub enum SourceProgramKind {
    Indices,
    Rows,
    Segments,
    /// The iterator, shared with the graph's source: a run takes it.
    Stream {
        items: Arc<Mutex<Option<ArrayStream>>>,
        len: Option<u64>,
    },
    /// `step` from the carry and a chunk's values to the chunk's running
    /// folds and the next carry.
    Scan {
        input: Box<SeqProgram>,
        step: Box<ir::Program>,
    },
}

/// How a sequence is consumed, in the IR.
pub enum ConsumerProgram {
    /// Element by element (`stream_out`, a running scan's input).
    Each,
    Elements,
    Tabulate,
    /// A state stepped once a chunk by `step` (its parameters: the
    /// state, the chunk's extents and values).
    Batch {
        state_ty: ArraysTy,
        step: Box<ir::Program>,
    },
}

impl SeqProgram {
    /// Converts a sequence's graph to the IR (sharing recovered as `opts`
    /// says), consumed by `consumer` (element by element where `None`).
    pub fn convert(
        parts: &SeqParts,
        consumer: Option<&Consumer>,
        loc: SrcLoc,
        opts: SharingOptions,
    ) -> Result<SeqProgram> {
        let func = |f: &ArrayFn| convert_program(&f.params, &f.body, opts);
        let mut sources = Vec::with_capacity(parts.sources.len());
        let mut params = Vec::with_capacity(parts.sources.len());
        for s in &parts.sources {
            params.push((s.param.clone(), ArraysTy::Array(s.ty.clone())));
            let kind = match &s.kind {
                SourceKind::Indices { .. } => SourceProgramKind::Indices,
                SourceKind::Rows { .. } => SourceProgramKind::Rows,
                SourceKind::Segments { .. } => SourceProgramKind::Segments,
                SourceKind::Stream { items, len, .. } => {
                    SourceProgramKind::Stream { items: items.clone(), len: *len }
                }
                SourceKind::Scan { input, step, .. } => SourceProgramKind::Scan {
                    input: Box::new(SeqProgram::convert(input, None, s.loc, opts)?),
                    step: Box::new(func(step)?),
                },
            };
            let outer = s.outer_tys();
            sources.push(SourceProgram { kind, ty: s.ty.clone(), outer, loc: s.loc });
        }
        let consumer = match consumer {
            None => ConsumerProgram::Each,
            Some(Consumer::Elements) => ConsumerProgram::Elements,
            Some(Consumer::Tabulate) => ConsumerProgram::Tabulate,
            Some(Consumer::Batch { step, .. }) => {
                ConsumerProgram::Batch { state_ty: step.params[0].1.clone(), step: Box::new(func(step)?) }
            }
        };
        let elem = convert_program(&params, &parts.elem, opts)?;
        Ok(SeqProgram { sources, elem, ty: parts.ty.clone(), consumer, loc })
    }
}

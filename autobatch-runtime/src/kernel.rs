//! The kernel interface: what a primitive op runs, lane-wise or batched, on active lanes only.
//!
//! * A **lane-wise** kernel reads its inputs straight from storage at the active lanes and
//!   writes its outputs through [`LaneOutputs`] (row `k` belongs to `lanes[k]`): dense columns,
//!   or, for `f64` vector outputs, rows of the interpreter's vector storage written in place.
//!   The `#[autobatch]` macro generates these from the user's own Rust expressions.
//!
//! A kernel writes every row of every output leaf (or fails): output columns are reused between
//! ops, so a row it leaves alone holds whatever an earlier op wrote there.
//! * A **batched** kernel receives its inputs as dense columns (row `k` is active lane `k`;
//!   gathered, or the storage itself when every lane is active) and writes dense outputs: one
//!   call sees every active lane, e.g. one GEMM.
//!
//! Inactive lanes are never passed to a kernel. A kernel reports failure with [`KernelError`];
//! a panic inside a kernel is caught by the interpreter and reported with the lane.

use crate::arena::RawRows;
use crate::column::{Column, Element};
use autobatch_ir::DType;
use smallvec::SmallVec;
use std::any::TypeId;
use std::cell::Cell;
use std::fmt;
use std::sync::Arc;

/// Why a kernel failed; `position` is the index into the active lanes of the lane at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelError {
    /// Index into the active lanes (`None` if the failure is not about one lane).
    pub position: Option<usize>,
    /// What went wrong.
    pub message: String,
}

impl KernelError {
    /// A failure of the lane at `position` among the active lanes.
    pub fn at(position: usize, message: impl Into<String>) -> Self {
        KernelError {
            position: Some(position),
            message: message.into(),
        }
    }

    /// A failure not tied to one lane (e.g. an input of the wrong dtype).
    pub fn whole(message: impl Into<String>) -> Self {
        KernelError {
            position: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for KernelError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// One input leaf of a lane-wise kernel, as storage holds it.
#[derive(Clone, Copy)]
pub(crate) enum Input<'a> {
    /// Rows indexed by lane.
    Dense(&'a Column),
    /// Arena rows and the handle each lane holds.
    Shared(RawRows, &'a [u32]),
}

/// The inputs of one lane-wise kernel call: storage leaves indexed by lane, and the active lanes.
pub struct LaneInputs<'a> {
    inputs: SmallVec<[Input<'a>; 16]>,
    lanes: &'a [usize],
    progress: &'a Cell<usize>,
}

impl<'a> LaneInputs<'a> {
    /// Inputs over `columns` (one per input leaf, rows indexed by lane) for `lanes`;
    /// `progress` records the position being computed so a panic can be attributed to its lane.
    pub fn new(columns: &[&'a Column], lanes: &'a [usize], progress: &'a Cell<usize>) -> Self {
        LaneInputs {
            inputs: columns.iter().map(|&c| Input::Dense(c)).collect(),
            lanes,
            progress,
        }
    }

    /// Inputs over leaves as storage holds them: dense columns or shared arena rows.
    pub(crate) fn from_storage(
        inputs: SmallVec<[Input<'a>; 16]>,
        lanes: &'a [usize],
        progress: &'a Cell<usize>,
    ) -> Self {
        LaneInputs {
            inputs,
            lanes,
            progress,
        }
    }

    /// The active lanes (rows of the input leaves), in order.
    pub fn lanes(&self) -> &'a [usize] {
        self.lanes
    }

    /// Number of input leaves.
    pub fn len(&self) -> usize {
        self.inputs.len()
    }

    /// True if the kernel has no inputs.
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    fn input(&self, i: usize) -> Result<Input<'a>, KernelError> {
        self.inputs
            .get(i)
            .copied()
            .ok_or_else(|| KernelError::whole(format!("kernel input {i} is missing")))
    }

    /// Input leaf `i` as a raw column indexed by lane. Vector leaves shared through the
    /// interpreter's arena have no such column: read them with [`rows`](Self::rows).
    pub fn column(&self, i: usize) -> Result<&'a Column, KernelError> {
        match self.input(i)? {
            Input::Dense(c) => Ok(c),
            Input::Shared(..) => Err(KernelError::whole(format!(
                "kernel input {i} is a shared vector leaf; read it with `rows`"
            ))),
        }
    }

    /// Input leaf `i` as a per-lane row accessor (scalars: width 1; vectors: the row).
    pub fn rows<T: Element>(&self, i: usize) -> Result<Rows<'a, T>, KernelError> {
        let wrong = |found: DType| {
            KernelError::whole(format!(
                "kernel input {i} is {found}, expected {}",
                T::DTYPE
            ))
        };
        match self.input(i)? {
            Input::Dense(c) => {
                let data = c.as_slice::<T>().ok_or_else(|| wrong(c.dtype()))?;
                Ok(Rows {
                    source: Source::Dense(data),
                    width: c.width(),
                })
            }
            Input::Shared(raw, handles) => {
                // Shared rows hold `f64`s: only `T = f64` may read them.
                if TypeId::of::<T>() != TypeId::of::<f64>() {
                    return Err(wrong(DType::F64));
                }
                Ok(Rows {
                    source: Source::Shared(raw, handles),
                    width: raw.width(),
                })
            }
        }
    }

    /// Records that the kernel is computing active position `k` (for panic attribution).
    #[inline]
    pub fn at(&self, k: usize) {
        self.progress.set(k);
    }
}

/// Row access to one input leaf, by lane.
#[derive(Clone, Copy)]
pub struct Rows<'a, T> {
    source: Source<'a, T>,
    width: usize,
}

#[derive(Clone, Copy)]
enum Source<'a, T> {
    /// Rows in place, indexed by lane.
    Dense(&'a [T]),
    /// Arena rows, through each lane's handle (`T` is `f64`, checked when made).
    Shared(RawRows, &'a [u32]),
}

impl<'a, T: Copy + 'static> Rows<'a, T> {
    /// The scalar of `lane` (the first element of its row).
    #[inline]
    pub fn scalar(&self, lane: usize) -> T {
        self.row(lane)[0]
    }

    /// The elements of `lane`'s row.
    #[inline]
    pub fn row(&self, lane: usize) -> &'a [T] {
        match self.source {
            Source::Dense(data) => &data[lane * self.width..(lane + 1) * self.width],
            Source::Shared(raw, handles) => {
                // SAFETY: input rows are never written during the kernel call these rows were
                // made for (only fresh output rows are, see `RawRows`).
                let row: &'a [f64] = unsafe { raw.row(handles[lane]) };
                // SAFETY: `Source::Shared` is only made for `T = f64` (`LaneInputs::rows` checks
                // the `TypeId`), so this is the same slice with the same element type.
                unsafe { std::slice::from_raw_parts(row.as_ptr().cast::<T>(), row.len()) }
            }
        }
    }

    /// Elements per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Starts fetching `lane`'s row into the cache (see [`prefetch`](crate::prefetch)).
    #[inline(always)]
    pub fn prefetch(&self, lane: usize) {
        crate::prefetch::prefetch(self.row(lane));
    }
}

/// Typed mutable access to dense output leaf `i` of a batched kernel.
pub fn output_slice<T: Element>(outputs: &mut [Column], i: usize) -> Result<&mut [T], KernelError> {
    let c = outputs
        .get_mut(i)
        .ok_or_else(|| KernelError::whole(format!("kernel output {i} is missing")))?;
    let dtype = c.dtype();
    c.as_slice_mut::<T>().ok_or_else(|| {
        KernelError::whole(format!(
            "kernel output {i} is {dtype}, expected {}",
            T::DTYPE
        ))
    })
}

/// Fresh arena rows for one `f64` vector output leaf: row `k` for the `k`-th active lane.
pub(crate) struct FreshRows<'a> {
    raw: RawRows,
    handles: &'a [u32],
}

impl<'a> FreshRows<'a> {
    pub(crate) fn new(raw: RawRows, handles: &'a [u32]) -> Self {
        FreshRows { raw, handles }
    }

    /// The same rows for a shorter time (this value is unusable meanwhile).
    fn reborrow(&mut self) -> FreshRows<'_> {
        FreshRows {
            raw: self.raw,
            handles: self.handles,
        }
    }

    /// Elements per row.
    pub(crate) fn width(&self) -> usize {
        self.raw.width()
    }

    /// Row `k`, to write.
    #[inline]
    pub(crate) fn row_mut(&mut self, k: usize) -> &mut [f64] {
        // SAFETY: the handles are fresh rows of this call, distinct from each other and from
        // every input row (see `RawRows`); `&mut self` keeps one row of this leaf borrowed at a
        // time, and other leaves' fresh rows are other rows.
        unsafe { self.raw.row_mut(self.handles[k]) }
    }
}

/// One output leaf of a lane-wise kernel.
pub(crate) enum OutLeaf<'a> {
    /// A dense column, row `k` for the `k`-th active lane.
    Dense(&'a mut Column),
    /// Vector rows written in place.
    Fresh(FreshRows<'a>),
}

/// The outputs of one lane-wise kernel call, one leaf per output leaf; row `k` of each belongs
/// to the `k`-th active lane. A kernel writes every row of every leaf (or fails).
///
/// ```
/// use autobatch_runtime::{Column, Kernel, KernelError, LaneInputs, LaneOutputs};
///
/// // y = 2 x, for an `f64` scalar
/// let double = Kernel::lane_wise(|ins: &LaneInputs<'_>, outs: &mut LaneOutputs<'_>| {
///     let x = ins.rows::<f64>(0)?;
///     let [y] = outs.leaves::<1>()?;
///     let y = y.slice::<f64>()?;
///     for (k, &lane) in ins.lanes().iter().enumerate() {
///         y[k] = 2.0 * x.scalar(lane);
///     }
///     Ok::<(), KernelError>(())
/// });
/// # let _ = double;
/// ```
pub struct LaneOutputs<'a> {
    leaves: SmallVec<[OutLeaf<'a>; 8]>,
}

impl<'a> LaneOutputs<'a> {
    /// Outputs into dense columns (one per output leaf, a row per active lane).
    pub fn new(columns: &'a mut [Column]) -> Self {
        LaneOutputs {
            leaves: columns.iter_mut().map(OutLeaf::Dense).collect(),
        }
    }

    pub(crate) fn from_leaves(leaves: SmallVec<[OutLeaf<'a>; 8]>) -> Self {
        LaneOutputs { leaves }
    }

    /// Number of output leaves.
    pub fn len(&self) -> usize {
        self.leaves.len()
    }

    /// True if the kernel has no outputs.
    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// All `N` output leaves at once, each to be written as it needs; an error if there are
    /// not exactly `N`.
    pub fn leaves<const N: usize>(&mut self) -> Result<[OutputLeaf<'_>; N], KernelError> {
        if self.leaves.len() != N {
            return Err(KernelError::whole(format!(
                "expected {N} output leaves, found {}",
                self.leaves.len()
            )));
        }
        let mut each = self.leaves.iter_mut();
        Ok(std::array::from_fn(|_| {
            OutputLeaf(match each.next() {
                Some(OutLeaf::Dense(c)) => OutLeaf::Dense(c),
                Some(OutLeaf::Fresh(f)) => OutLeaf::Fresh(f.reborrow()),
                None => unreachable!("the length was checked"),
            })
        }))
    }

    /// Output leaf `i` as a dense column; vector rows written in place have none (write
    /// them through [`leaves`](Self::leaves) and [`OutputLeaf::vectors`]).
    pub fn column(&mut self, i: usize) -> Result<&mut Column, KernelError> {
        match self.leaves.get_mut(i) {
            Some(OutLeaf::Dense(c)) => Ok(c),
            Some(OutLeaf::Fresh(_)) => Err(KernelError::whole(format!(
                "kernel output {i} is written in place; write it with `vectors`"
            ))),
            None => Err(KernelError::whole(format!("kernel output {i} is missing"))),
        }
    }

    /// The elements of dense output leaf `i`, typed, in row-major order.
    pub fn slice<T: Element>(&mut self, i: usize) -> Result<&mut [T], KernelError> {
        let c = self.column(i)?;
        let dtype = c.dtype();
        c.as_slice_mut::<T>().ok_or_else(|| {
            KernelError::whole(format!(
                "kernel output {i} is {dtype}, expected {}",
                T::DTYPE
            ))
        })
    }
}

/// One output leaf of a lane-wise kernel call (from [`LaneOutputs::leaves`]): a dense column
/// of elements, or `f64` vector rows that a [`VectorOut`](crate::link::VectorOut) writes.
pub struct OutputLeaf<'a>(pub(crate) OutLeaf<'a>);

impl<'a> OutputLeaf<'a> {
    /// The leaf's elements, typed, in row-major order (a dense leaf).
    pub fn slice<T: Element>(self) -> Result<&'a mut [T], KernelError> {
        match self.0 {
            OutLeaf::Dense(c) => {
                let dtype = c.dtype();
                c.as_slice_mut::<T>().ok_or_else(|| {
                    KernelError::whole(format!("kernel output is {dtype}, expected {}", T::DTYPE))
                })
            }
            OutLeaf::Fresh(_) => Err(KernelError::whole(
                "kernel output is written in place; write it with `vectors`",
            )),
        }
    }

    /// The leaf as `f64` vector rows, one per active lane.
    pub fn vectors(self) -> Result<crate::link::VectorOut<'a>, KernelError> {
        crate::link::VectorOut::from_leaf(self.0)
    }
}

/// A lane-wise kernel body: reads inputs at the active lanes, writes one row per active lane
/// of every output leaf.
pub type LaneWiseFn =
    dyn Fn(&LaneInputs<'_>, &mut LaneOutputs<'_>) -> Result<(), KernelError> + Send + Sync;

/// A batched kernel body: dense gathered inputs in, dense outputs written.
pub type BatchedFn = dyn Fn(&[&Column], &mut [Column]) -> Result<(), KernelError> + Send + Sync;

/// A primitive's implementation, resolved by [`KernelId`](autobatch_ir::KernelId).
#[derive(Clone)]
pub enum Kernel {
    /// Runs per active lane, reading storage directly.
    LaneWise(Arc<LaneWiseFn>),
    /// Runs once over all active lanes' gathered inputs.
    Batched(Arc<BatchedFn>),
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kernel::LaneWise(_) => f.write_str("Kernel::LaneWise"),
            Kernel::Batched(_) => f.write_str("Kernel::Batched"),
        }
    }
}

impl Kernel {
    /// A lane-wise kernel from its body.
    pub fn lane_wise(
        f: impl Fn(&LaneInputs<'_>, &mut LaneOutputs<'_>) -> Result<(), KernelError>
            + Send
            + Sync
            + 'static,
    ) -> Kernel {
        Kernel::LaneWise(Arc::new(f))
    }

    /// A batched kernel from its body.
    pub fn batched(
        f: impl Fn(&[&Column], &mut [Column]) -> Result<(), KernelError> + Send + Sync + 'static,
    ) -> Kernel {
        Kernel::Batched(Arc::new(f))
    }

    /// A lane-wise kernel with no inputs and one scalar output.
    pub fn constant<O: Element>(value: O) -> Kernel {
        Kernel::lane_wise(move |ins, outs| {
            outs.slice::<O>(0)?[..ins.lanes().len()].fill(value);
            Ok(())
        })
    }

    /// A lane-wise kernel mapping one scalar input to one scalar output.
    pub fn map1<A: Element, O: Element>(f: impl Fn(A) -> O + Send + Sync + 'static) -> Kernel {
        Kernel::lane_wise(move |ins, outs| {
            let a = ins.rows::<A>(0)?;
            let out = outs.slice::<O>(0)?;
            for (k, &lane) in ins.lanes().iter().enumerate() {
                ins.at(k);
                out[k] = f(a.scalar(lane));
            }
            Ok(())
        })
    }

    /// A lane-wise kernel mapping two scalar inputs to one scalar output.
    pub fn map2<A: Element, B: Element, O: Element>(
        f: impl Fn(A, B) -> O + Send + Sync + 'static,
    ) -> Kernel {
        Kernel::lane_wise(move |ins, outs| {
            let (a, b) = (ins.rows::<A>(0)?, ins.rows::<B>(1)?);
            let out = outs.slice::<O>(0)?;
            for (k, &lane) in ins.lanes().iter().enumerate() {
                ins.at(k);
                out[k] = f(a.scalar(lane), b.scalar(lane));
            }
            Ok(())
        })
    }

    /// A lane-wise kernel mapping one scalar input to one scalar output that may fail.
    pub fn try_map1<A: Element, O: Element>(
        f: impl Fn(A) -> Result<O, String> + Send + Sync + 'static,
    ) -> Kernel {
        Kernel::lane_wise(move |ins, outs| {
            let a = ins.rows::<A>(0)?;
            let out = outs.slice::<O>(0)?;
            for (k, &lane) in ins.lanes().iter().enumerate() {
                ins.at(k);
                out[k] = f(a.scalar(lane)).map_err(|m| KernelError::at(k, m))?;
            }
            Ok(())
        })
    }
}

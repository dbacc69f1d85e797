//! The kernel interface: what a primitive op runs, lane-wise or batched, on active lanes only.
//!
//! * A **lane-wise** kernel reads its inputs straight from storage at the active lanes and
//!   writes dense outputs (row `k` belongs to `lanes[k]`). The `#[autobatch]` macro generates
//!   these from the user's own Rust expressions.
//!
//! A kernel writes every row of every output leaf (or fails): output columns are reused between
//! ops, so a row it leaves alone holds whatever an earlier op wrote there.
//! * A **batched** kernel receives its inputs as dense columns (row `k` is active lane `k`;
//!   gathered, or the storage itself when every lane is active) and writes dense outputs: one
//!   call sees every active lane, e.g. one GEMM.
//!
//! Inactive lanes are never passed to a kernel. A kernel reports failure with [`KernelError`];
//! a panic inside a kernel is caught by the interpreter and reported with the lane.

use crate::column::{Column, Element};
use smallvec::SmallVec;
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
    Shared(&'a Column, &'a [u32]),
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
        let (c, index) = match self.input(i)? {
            Input::Dense(c) => (c, None),
            Input::Shared(c, h) => (c, Some(h)),
        };
        let data = c.as_slice::<T>().ok_or_else(|| {
            KernelError::whole(format!(
                "kernel input {i} is {}, expected {}",
                c.dtype(),
                T::DTYPE
            ))
        })?;
        Ok(Rows {
            data,
            width: c.width(),
            index,
        })
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
    data: &'a [T],
    width: usize,
    /// For shared leaves: the row each lane's handle names.
    index: Option<&'a [u32]>,
}

impl<'a, T: Copy> Rows<'a, T> {
    #[inline]
    fn start(&self, lane: usize) -> usize {
        match self.index {
            Some(h) => h[lane] as usize * self.width,
            None => lane * self.width,
        }
    }

    /// The scalar of `lane` (the first element of its row).
    #[inline]
    pub fn scalar(&self, lane: usize) -> T {
        self.data[self.start(lane)]
    }

    /// The elements of `lane`'s row.
    #[inline]
    pub fn row(&self, lane: usize) -> &'a [T] {
        let s = self.start(lane);
        &self.data[s..s + self.width]
    }

    /// Elements per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Starts fetching `lane`'s row into the cache (see [`prefetch`](crate::prefetch)).
    #[inline(always)]
    pub fn prefetch(&self, lane: usize) {
        let s = self.start(lane);
        if let Some(row) = self.data.get(s..s + self.width) {
            crate::prefetch::prefetch(row);
        }
    }
}

/// Typed mutable access to dense output leaf `i`.
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

/// A lane-wise kernel body: reads inputs at the active lanes, writes dense outputs.
pub type LaneWiseFn =
    dyn Fn(&LaneInputs<'_>, &mut [Column]) -> Result<(), KernelError> + Send + Sync;

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
        f: impl Fn(&LaneInputs<'_>, &mut [Column]) -> Result<(), KernelError> + Send + Sync + 'static,
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
            output_slice::<O>(outs, 0)?[..ins.lanes().len()].fill(value);
            Ok(())
        })
    }

    /// A lane-wise kernel mapping one scalar input to one scalar output.
    pub fn map1<A: Element, O: Element>(f: impl Fn(A) -> O + Send + Sync + 'static) -> Kernel {
        Kernel::lane_wise(move |ins, outs| {
            let a = ins.rows::<A>(0)?;
            let out = output_slice::<O>(outs, 0)?;
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
            let out = output_slice::<O>(outs, 0)?;
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
            let out = output_slice::<O>(outs, 0)?;
            for (k, &lane) in ins.lanes().iter().enumerate() {
                ins.at(k);
                out[k] = f(a.scalar(lane)).map_err(|m| KernelError::at(k, m))?;
            }
            Ok(())
        })
    }
}

//! [`DirectCall`]: a lane-wise kernel call whose input and output leaves are all scalars held
//! in place in the interpreter's storage, handed to the kernel's direct body as the storage
//! columns themselves: no per-leaf input views, output leaves or stand-in columns are built,
//! and the body takes typed rows of each leaf with one check of its type.

use super::context::Context;
use super::error::KernelError;
use super::inputs::Position;
use super::lanes::{each_lane_at, Reads, Writes};
use super::outputs::SplitLanes;
use super::{scalar_elements, DenseScalars, LaneScalarsOut, LaneSplit};
use crate::column::{Column, Element};
use std::any::Any;
use std::cell::Cell;
use std::ptr::NonNull;

/// One direct call of a lane-wise kernel ([`Kernel::lane_wise_direct`]): the active lanes,
/// each input leaf's and each output leaf's rows in storage (indexed by lane), the run's
/// context and, for a kernel computing a branch condition as its last output leaf, the lists
/// it may send the lanes to instead of writing the condition.
///
/// The body reads a lane's inputs before it writes that lane's outputs: an output that is
/// also an input (`n = n / 2`) is written in storage itself.
///
/// [`Kernel::lane_wise_direct`]: super::Kernel::lane_wise_direct
pub struct DirectCall<'a> {
    lanes: &'a [usize],
    progress: &'a Cell<usize>,
    context: Context<'a>,
    /// Each input leaf's rows (read by value only: an output may share them).
    ins: &'a [NonNull<Column>],
    /// Each output leaf's rows.
    outs: &'a [NonNull<Column>],
    split: Option<SplitLanes<'a>>,
}

impl<'a> DirectCall<'a> {
    /// A call over `ins` and `outs` (storage's rows, valid and not moved for `'a`; the kernel
    /// writes `outs` while reading `ins` by value only) for `lanes`; `progress` records the
    /// position being computed, `split` the last output's lane lists if the interpreter lets
    /// the kernel split the lanes by it.
    pub(crate) fn new(
        (lanes, progress, context): (&'a [usize], &'a Cell<usize>, Context<'a>),
        ins: &'a [NonNull<Column>],
        outs: &'a [NonNull<Column>],
        split: Option<SplitLanes<'a>>,
    ) -> Self {
        DirectCall {
            lanes,
            progress,
            context,
            ins,
            outs,
            split,
        }
    }

    /// The active lanes, in order.
    pub fn lanes(&self) -> &'a [usize] {
        self.lanes
    }

    /// The run's context as a `T`; a typed error if the run was given none or another type.
    pub fn context<T: Any>(&self) -> Result<&'a T, KernelError> {
        self.context.get::<T>()
    }

    /// Input leaf `i`'s scalars, by lane; an error if there is no such leaf or it does not
    /// hold `T`.
    pub fn input<T: Element>(&self, i: usize) -> Result<DenseScalars<'a, T>, KernelError> {
        let (data, len) = scalars::<T>(self.ins, i, "input")?;
        Ok(DenseScalars::from_raw(data, len))
    }

    /// Output leaf `i`'s writer, by lane; an error if there is no such leaf or it does not
    /// hold `T`.
    pub fn output<T: Element>(&self, i: usize) -> Result<LaneScalarsOut<'a, T>, KernelError> {
        let (data, len) = scalars::<T>(self.outs, i, "output")?;
        Ok(LaneScalarsOut::from_raw(data, len))
    }

    /// The lists of the branch its last output leaf (a `bool`) is the condition of, if the
    /// interpreter lets the kernel send the lanes there instead of writing the condition
    /// (taken once). A kernel that takes them writes its other outputs only.
    pub fn split(&mut self) -> Option<LaneSplit<'a>> {
        self.split.take().map(LaneSplit::new)
    }

    /// Runs `body` on the values of every active lane, in order, writing what it returns (as
    /// [`each_lane`](super::each_lane) does for a call through [`LaneInputs`](super::LaneInputs)).
    #[inline(always)]
    pub fn each_lane<R: Reads, W: Writes>(
        &self,
        reads: R,
        writes: W,
        body: impl FnMut(R::Values) -> W::Values,
    ) {
        each_lane_at(
            self.lanes,
            Position::new(self.progress),
            reads,
            writes,
            body,
        );
    }
}

/// Leaf `i` of `leaves` as `T` scalars in place: its first element and count, or the error
/// naming it the kernel's `what` leaf `i`.
fn scalars<T: Element>(
    leaves: &[NonNull<Column>],
    i: usize,
    what: &str,
) -> Result<(NonNull<T>, usize), KernelError> {
    let Some(column) = leaves.get(i) else {
        let count = leaves.len();
        return Err(KernelError::whole(format!(
            "kernel {what} {i} does not exist: the call has {count}"
        )));
    };
    // SAFETY: the interpreter hands over columns valid and unmoved for the call; only the
    // column's own fields are read here, no element (which an output may be writing).
    let column = unsafe { column.as_ref() };
    scalar_elements::<T>(column).ok_or_else(|| {
        KernelError::whole(format!(
            "kernel {what} {i} is {}, expected {} scalars",
            column.dtype(),
            T::DTYPE
        ))
    })
}

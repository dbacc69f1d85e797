//! The kernel interface: what a primitive op runs, lane-wise or batched, on active lanes only.
//!
//! * A **lane-wise** kernel reads its inputs straight from storage at the active lanes and
//!   writes its outputs through [`LaneOutputs`] (row `k` belongs to `lanes[k]`): dense columns,
//!   or, for `f64` vector outputs, rows of the interpreter's vector storage written in place.
//!   Scalar outputs written through [`ScalarsOut`] (position `k` and its lane) go straight into
//!   the interpreter's storage where it can, with no copy after the kernel. A `bool` output
//!   that only a branch reads may instead send each lane to its side of the branch
//!   ([`ScalarsOut::split`], [`LaneSplit::each`]), where the interpreter offers it.
//!   The `#[autobatch]` macro generates these from the user's own Rust expressions.
//! * A **lane-wise in-place** kernel is a lane-wise kernel that, at each active position, reads
//!   every input it needs for that lane before it writes any output of that lane: its scalar
//!   outputs that are also its inputs (`n = n / 2`, `steps += 1`) are written in storage too,
//!   where the interpreter can. The `#[autobatch]` macro's per-lane kernels are of this kind.
//! * A **direct** kernel is a lane-wise in-place kernel whose leaves are all scalars, with a
//!   second body the interpreter calls where it holds every one of them in place by lane: it
//!   takes each leaf's rows straight from [`DirectCall`], with nothing built per leaf. The
//!   macro's kernels over scalars and the builder's maps are of this kind.
//! * A **batched** kernel receives its inputs as dense columns (row `k` is active lane `k`;
//!   gathered, or the storage itself when every lane is active) and writes dense outputs: one
//!   call sees every active lane, e.g. one GEMM.
//!
//! A kernel writes every row of every output leaf (or fails): output columns are reused between
//! ops, so a row it leaves alone holds whatever an earlier op wrote there.
//!
//! Both kinds receive the run's [`Context`] (a model, settings: one value for every lane):
//! a lane-wise kernel through [`LaneInputs::context`], a batched one as its first argument.
//!
//! Inactive lanes are never passed to a kernel. A kernel reports failure with [`KernelError`];
//! a panic inside a kernel is caught by the interpreter and reported with the lane.

mod context;
mod direct;
mod error;
mod inputs;
mod lanes;
mod outputs;

pub use context::{Context, ContextType};
pub use direct::DirectCall;
pub use error::KernelError;
pub use inputs::{DenseScalars, InputRows, LaneInputs};
pub use lanes::{each_lane, split_lanes, Reads, Writes};
pub use outputs::{
    output_slice, LaneOutputs, LaneScalarsOut, LaneSplit, OutputLeaf, ScalarsOut, VectorOut,
};
pub(crate) use outputs::{typed_mut, FreshRows, LaneRows, OutLeaf, SplitLanes, StandIn};

use crate::column::{Column, Element};
use std::fmt;
use std::ptr::NonNull;
use std::sync::Arc;

/// The first element of a scalar column holding `T` and its number of elements, as a pointer
/// taken from the column without making a reference to its elements (what in-place reads and
/// writes go through); none for another dtype or a column that is not one contiguous run.
pub(crate) fn scalar_elements<T: Element>(column: &Column) -> Option<(NonNull<T>, usize)> {
    let array = column.as_array::<T>()?;
    // One element per row, rows one element apart: one contiguous run (what
    // `is_standard_layout` decides for a single column, without its general loop).
    let ((rows, width), step) = (array.dim(), array.strides()[0]);
    if width != 1 || (rows > 1 && step != 1) {
        return None;
    }
    NonNull::new(array.as_ptr().cast_mut()).map(|p| (p, array.len()))
}

/// `value` as a branch condition: itself if it is a `bool` (the only type
/// [`ScalarsOut::split`] splits lanes by), else `false`.
#[inline(always)]
fn holds<O: Element>(value: O) -> bool {
    (&value as &dyn std::any::Any)
        .downcast_ref::<bool>()
        .copied()
        .unwrap_or(false)
}

/// The lane loop of the builder's one-output kernels: output 0 of every active lane is
/// `value(lane)`, or `dense(values)` of the lane's values of `dense` (inputs held in place)
/// through the unchecked loops of [`lanes`] where storage takes the output by lane or the
/// interpreter lets a `bool` condition split the lanes.
fn map_lanes<R: Reads, O: Element>(
    ins: &LaneInputs<'_>,
    outs: &mut LaneOutputs<'_>,
    dense: Option<R>,
    value: impl Fn(usize) -> O,
    fast: impl Fn(R::Values) -> O,
) -> Result<(), KernelError> {
    let mut out = outs.scalars::<O>(0)?;
    if let Some(split) = out.split() {
        match dense {
            Some(reads) => split_lanes(split, reads, (), |v| ((), holds(fast(v)))),
            None => split.each(|lane| holds(value(lane))),
        }
        return Ok(());
    }
    if let (Some(reads), Some(by_lane)) = (dense, out.by_lane()) {
        each_lane(ins, reads, (by_lane, ()), |v| (fast(v), ()));
        return Ok(());
    }
    for (k, &lane) in ins.lanes().iter().enumerate() {
        ins.at(k);
        out.set(k, lane, value(lane));
    }
    Ok(())
}

/// The direct body of the builder's one-output kernels ([`map_lanes`] where storage holds
/// every leaf in place): output 0 of every active lane is `fast` of its values of `reads`, or
/// the lanes are split by it (a `bool` branch condition the interpreter lets them split by).
fn map_direct<R: Reads, O: Element>(
    call: &mut DirectCall<'_>,
    reads: R,
    fast: impl Fn(R::Values) -> O,
) -> Result<(), KernelError> {
    if let Some(split) = call
        .split()
        .filter(|_| O::DTYPE == autobatch_ir::DType::Bool)
    {
        split_lanes(split, reads, (), |v| ((), holds(fast(v))));
        return Ok(());
    }
    let out = call.output::<O>(0)?;
    call.each_lane(reads, (out, ()), |v| (fast(v), ()));
    Ok(())
}

/// A lane-wise kernel body: reads inputs at the active lanes, writes one row per active lane
/// of every output leaf.
pub type LaneWiseFn =
    dyn Fn(&LaneInputs<'_>, &mut LaneOutputs<'_>) -> Result<(), KernelError> + Send + Sync;

/// A direct kernel body: every active lane's scalars read and written in storage through
/// [`DirectCall`].
pub type DirectFn = dyn Fn(&mut DirectCall<'_>) -> Result<(), KernelError> + Send + Sync;

/// A batched kernel body: the run's context and dense gathered inputs in, dense outputs written.
pub type BatchedFn =
    dyn Fn(Context<'_>, &[&Column], &mut [Column]) -> Result<(), KernelError> + Send + Sync;

/// A primitive's implementation, resolved by [`KernelId`](autobatch_ir::KernelId).
#[derive(Clone)]
pub enum Kernel {
    /// Runs per active lane, reading storage directly.
    LaneWise(Arc<LaneWiseFn>),
    /// Runs per active lane like [`LaneWise`](Kernel::LaneWise), reading each lane's inputs
    /// before writing that lane's outputs (see [`Kernel::lane_wise_in_place`]).
    LaneWiseInPlace(Arc<LaneWiseFn>),
    /// A lane-wise in-place kernel over scalars with a direct body besides (see
    /// [`Kernel::lane_wise_direct`]).
    LaneWiseDirect(Arc<LaneWiseFn>, Arc<DirectFn>),
    /// Runs once over all active lanes' gathered inputs.
    Batched(Arc<BatchedFn>),
}

impl fmt::Debug for Kernel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Kernel::LaneWise(_) => f.write_str("Kernel::LaneWise"),
            Kernel::LaneWiseInPlace(_) => f.write_str("Kernel::LaneWiseInPlace"),
            Kernel::LaneWiseDirect(..) => f.write_str("Kernel::LaneWiseDirect"),
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

    /// A lane-wise kernel from a body that, at each active position `k`, reads every input of
    /// lane `lanes[k]` it needs before it writes any output at `k`. Then a scalar output that is
    /// also an input is written by [`ScalarsOut::set`] straight into the interpreter's storage,
    /// the input's own rows, with no copy after the kernel. Inputs written so are read by
    /// [`InputRows::scalar`] only (their [`column`](LaneInputs::column) is an error, their
    /// [`row`](InputRows::row) panics); a body reading a lane's input after writing its output
    /// there sees the new value.
    pub fn lane_wise_in_place(
        f: impl Fn(&LaneInputs<'_>, &mut LaneOutputs<'_>) -> Result<(), KernelError>
            + Send
            + Sync
            + 'static,
    ) -> Kernel {
        Kernel::LaneWiseInPlace(Arc::new(f))
    }

    /// An in-place lane-wise kernel ([`lane_wise_in_place`](Self::lane_wise_in_place)) whose
    /// input and output leaves are all scalars, with a second body, `direct`, computing the
    /// same values: the interpreter calls `direct` where storage holds every leaf in place by
    /// lane (then the outputs are written there, with no copy and nothing built per leaf),
    /// `general` elsewhere (and the reference interpreter always). `direct` writes every
    /// output leaf of every active lane, except a branch condition whose lanes it split.
    ///
    /// ```
    /// use autobatch_runtime::{DirectCall, Kernel, KernelError, LaneInputs, LaneOutputs};
    ///
    /// // y = x + 1, for an `i64` scalar
    /// let general = |ins: &LaneInputs<'_>, outs: &mut LaneOutputs<'_>| {
    ///     let x = ins.rows::<i64>(0)?;
    ///     let mut y = outs.scalars::<i64>(0)?;
    ///     for (k, &lane) in ins.lanes().iter().enumerate() {
    ///         y.set(k, lane, x.scalar(lane) + 1);
    ///     }
    ///     Ok::<(), KernelError>(())
    /// };
    /// let direct = |call: &mut DirectCall<'_>| {
    ///     let (x, y) = (call.input::<i64>(0)?, call.output::<i64>(0)?);
    ///     call.each_lane((x, ()), (y, ()), |(x, ())| (x + 1, ()));
    ///     Ok::<(), KernelError>(())
    /// };
    /// let increment = Kernel::lane_wise_direct(general, direct);
    /// # let _ = increment;
    /// ```
    pub fn lane_wise_direct(
        general: impl Fn(&LaneInputs<'_>, &mut LaneOutputs<'_>) -> Result<(), KernelError>
            + Send
            + Sync
            + 'static,
        direct: impl Fn(&mut DirectCall<'_>) -> Result<(), KernelError> + Send + Sync + 'static,
    ) -> Kernel {
        Kernel::LaneWiseDirect(Arc::new(general), Arc::new(direct))
    }

    /// A batched kernel from its body (one that reads no context).
    pub fn batched(
        f: impl Fn(&[&Column], &mut [Column]) -> Result<(), KernelError> + Send + Sync + 'static,
    ) -> Kernel {
        Kernel::batched_with_context(move |_, ins, outs| f(ins, outs))
    }

    /// A batched kernel from its body, which receives the run's [`Context`] first.
    pub fn batched_with_context(
        f: impl Fn(Context<'_>, &[&Column], &mut [Column]) -> Result<(), KernelError>
            + Send
            + Sync
            + 'static,
    ) -> Kernel {
        Kernel::Batched(Arc::new(f))
    }

    /// A lane-wise kernel with no inputs and one scalar output. This and the `map` kernels
    /// below read a lane's inputs before writing its output: they are in place, and direct
    /// ([`lane_wise_direct`](Self::lane_wise_direct)).
    pub fn constant<O: Element>(value: O) -> Kernel {
        Kernel::lane_wise_direct(
            move |ins, outs| map_lanes(ins, outs, Some(()), |_| value, |()| value),
            move |call| map_direct(call, (), |()| value),
        )
    }

    /// A lane-wise kernel mapping one scalar input to one scalar output (a `bool` branch
    /// condition splits the lanes as it is computed, where the interpreter lets it).
    pub fn map1<A: Element, O: Element>(f: impl Fn(A) -> O + Send + Sync + 'static) -> Kernel {
        let f = Arc::new(f);
        let direct = Arc::clone(&f);
        Kernel::lane_wise_direct(
            move |ins, outs| {
                let a = ins.rows::<A>(0)?;
                let dense = a.dense_scalars().map(|a| (a, ()));
                map_lanes(ins, outs, dense, |lane| f(a.scalar(lane)), |(a, ())| f(a))
            },
            move |call| {
                let reads = (call.input::<A>(0)?, ());
                map_direct(call, reads, |(a, ())| direct(a))
            },
        )
    }

    /// A lane-wise kernel mapping two scalar inputs to one scalar output (a `bool` branch
    /// condition splits the lanes as it is computed, where the interpreter lets it).
    pub fn map2<A: Element, B: Element, O: Element>(
        f: impl Fn(A, B) -> O + Send + Sync + 'static,
    ) -> Kernel {
        let f = Arc::new(f);
        let direct = Arc::clone(&f);
        Kernel::lane_wise_direct(
            move |ins, outs| {
                let (a, b) = (ins.rows::<A>(0)?, ins.rows::<B>(1)?);
                let dense = a.dense_scalars().zip(b.dense_scalars());
                let dense = dense.map(|(a, b)| (a, (b, ())));
                let general = |lane| f(a.scalar(lane), b.scalar(lane));
                map_lanes(ins, outs, dense, general, |(a, (b, ()))| f(a, b))
            },
            move |call| {
                let reads = (call.input::<A>(0)?, (call.input::<B>(1)?, ()));
                map_direct(call, reads, |(a, (b, ()))| direct(a, b))
            },
        )
    }

    /// A lane-wise kernel mapping one scalar input to one scalar output that may fail.
    pub fn try_map1<A: Element, O: Element>(
        f: impl Fn(A) -> Result<O, String> + Send + Sync + 'static,
    ) -> Kernel {
        Kernel::lane_wise_in_place(move |ins, outs| {
            let a = ins.rows::<A>(0)?;
            let mut out = outs.scalars::<O>(0)?;
            for (k, &lane) in ins.lanes().iter().enumerate() {
                ins.at(k);
                out.set(
                    k,
                    lane,
                    f(a.scalar(lane)).map_err(|m| KernelError::at(k, m))?,
                );
            }
            Ok(())
        })
    }
}

//! The lane loops of kernels whose leaves are all scalars held in place (generated kernels and
//! the builder's maps): the active lanes are checked against the fewest rows of any leaf four
//! at a time, and every read and write then indexes its rows without a check of its own.
//!
//! Leaves come as nested pairs ending in `()`, `(first, (second, ()))`, so one impl covers
//! every number of them; the values of a lane come the same way.

use super::inputs::Position;
use super::{DenseScalars, LaneInputs, LaneScalarsOut, LaneSplit};
use crate::column::Element;
use crate::storage::each_lane_below;

/// Input leaves read by lane: `()`, or a [`DenseScalars`] and more.
pub trait Reads: Copy {
    /// One lane's values: `()`, or a value and more.
    type Values;
    /// The fewest rows of any of the leaves.
    fn rows(&self) -> usize;
    /// The values of `lane`.
    ///
    /// # Safety
    /// `lane` is below [`rows`](Self::rows).
    unsafe fn read(&self, lane: usize) -> Self::Values;
}

impl Reads for () {
    type Values = ();

    #[inline(always)]
    fn rows(&self) -> usize {
        usize::MAX
    }

    #[inline(always)]
    unsafe fn read(&self, _: usize) {}
}

impl<T: Copy, R: Reads> Reads for (DenseScalars<'_, T>, R) {
    type Values = (T, R::Values);

    #[inline(always)]
    fn rows(&self) -> usize {
        self.0.len().min(self.1.rows())
    }

    #[inline(always)]
    unsafe fn read(&self, lane: usize) -> Self::Values {
        // SAFETY: the caller passes a lane below `rows`, the fewest rows of both.
        unsafe { (self.0.read_unchecked(lane), self.1.read(lane)) }
    }
}

/// Output leaves written by lane: `()`, or a [`LaneScalarsOut`] and more.
pub trait Writes {
    /// One lane's values: `()`, or a value and more.
    type Values;
    /// The fewest rows of any of the leaves.
    fn rows(&self) -> usize;
    /// Writes the values of `lane`.
    ///
    /// # Safety
    /// `lane` is below [`rows`](Self::rows).
    unsafe fn write(&mut self, lane: usize, values: Self::Values);
}

impl Writes for () {
    type Values = ();

    #[inline(always)]
    fn rows(&self) -> usize {
        usize::MAX
    }

    #[inline(always)]
    unsafe fn write(&mut self, _: usize, (): ()) {}
}

impl<T: Element, W: Writes> Writes for (LaneScalarsOut<'_, T>, W) {
    type Values = (T, W::Values);

    #[inline(always)]
    fn rows(&self) -> usize {
        self.0.len().min(self.1.rows())
    }

    #[inline(always)]
    unsafe fn write(&mut self, lane: usize, (value, rest): Self::Values) {
        // SAFETY: the caller passes a lane below `rows`, the fewest rows of both.
        unsafe {
            self.0.write_unchecked(lane, value);
            self.1.write(lane, rest);
        }
    }
}

/// Runs `body` on the values of every active lane of `ins`, in order (the position being
/// computed is recorded if a panic unwinds, so the panic is attributed to its lane), writing
/// what it returns. A lane past the rows of a leaf panics.
#[inline(always)]
pub fn each_lane<R: Reads, W: Writes>(
    ins: &LaneInputs<'_>,
    reads: R,
    writes: W,
    body: impl FnMut(R::Values) -> W::Values,
) {
    each_lane_at(ins.lanes(), ins.position(), reads, writes, body);
}

/// The loop of [`each_lane`] over `lanes`, recording the position it computes in `at`.
#[inline(always)]
pub(crate) fn each_lane_at<R: Reads, W: Writes>(
    lanes: &[usize],
    mut at: Position<'_>,
    reads: R,
    mut writes: W,
    mut body: impl FnMut(R::Values) -> W::Values,
) {
    let rows = reads.rows().min(writes.rows());
    // Inlined at each of the loop's unrolled calls, with the body (the generated kernels
    // mark theirs so too): a call per lane would cost more than most bodies.
    each_lane_below(
        lanes,
        rows,
        #[inline(always)]
        |k, lane| {
            at.k = k;
            // SAFETY: `each_lane_below` passes lanes below `rows`, the fewest rows of any leaf.
            let values = unsafe { reads.read(lane) };
            let out = body(values);
            // SAFETY: as for the reads.
            unsafe { writes.write(lane, out) }
        },
    );
}

/// [`each_lane`] for a kernel whose last output is a branch condition it splits the lanes by
/// (`split`): `body` returns the other outputs' values and the condition.
#[inline(always)]
pub fn split_lanes<R: Reads, W: Writes>(
    split: LaneSplit<'_>,
    reads: R,
    mut writes: W,
    mut body: impl FnMut(R::Values) -> (W::Values, bool),
) {
    let rows = reads.rows().min(writes.rows());
    split.each_below(
        rows,
        #[inline(always)]
        |lane| {
            // SAFETY: `each_below` passes lanes below `rows`, the fewest rows of any leaf.
            let values = unsafe { reads.read(lane) };
            let (out, condition) = body(values);
            // SAFETY: as for the reads.
            unsafe { writes.write(lane, out) };
            condition
        },
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::column::Column;
    use crate::kernel::{LaneOutputs, LaneRows, OutLeaf, SplitLanes, StandIn};
    use std::cell::Cell;
    use std::ptr::NonNull;

    /// Every lane's values are read from its own rows and its results written there, in
    /// order, for leaves of several types; a lane past any leaf's rows panics.
    #[test]
    fn each_lane_reads_and_writes_every_leaf_by_lane() {
        let xs = Column::from_scalars(&[1i64, 2, 3, 4, 5, 6]);
        let ys = Column::from_scalars(&[0.5f64, 1.5, 2.5, 3.5, 4.5, 5.5]);
        let lanes = [0usize, 2, 3, 5];
        let progress = Cell::new(0);
        let ins = LaneInputs::new(&[&xs, &ys], &lanes, &progress);
        let (x, y) = (ins.rows::<i64>(0).unwrap(), ins.rows::<f64>(1).unwrap());
        let reads = (x.dense_scalars().unwrap(), (y.dense_scalars().unwrap(), ()));
        let mut sums = Column::zeros(autobatch_ir::DType::F64, 6, 1);
        let mut odd = Column::zeros(autobatch_ir::DType::Bool, 6, 1);
        let (mut stand_in, mut stand_in2) = (
            Column::zeros(autobatch_ir::DType::F64, 4, 1),
            Column::zeros(autobatch_ir::DType::Bool, 4, 1),
        );
        let (wrote, wrote2, asked) = (Cell::new(false), Cell::new(false), Cell::new(false));
        let leaves = [
            OutLeaf::Lanes(LaneRows::new(
                NonNull::from(&mut sums),
                StandIn::new(&mut stand_in, lanes.len(), &asked),
                &wrote,
            )),
            OutLeaf::Lanes(LaneRows::new(
                NonNull::from(&mut odd),
                StandIn::new(&mut stand_in2, lanes.len(), &asked),
                &wrote2,
            )),
        ];
        let mut outs = LaneOutputs::from_leaves(leaves.into_iter().collect());
        let [a, b] = outs.leaves::<2>().unwrap();
        let (mut a, mut b) = (a.scalars::<f64>().unwrap(), b.scalars::<bool>().unwrap());
        let writes = (a.by_lane().unwrap(), (b.by_lane().unwrap(), ()));
        each_lane(&ins, reads, writes, |(x, (y, ()))| {
            (x as f64 + y, (x % 2 == 1, ()))
        });
        drop(outs);
        assert_eq!(progress.get(), lanes.len() - 1);
        assert_eq!(
            sums.as_slice::<f64>().unwrap(),
            &[1.5, 0.0, 5.5, 7.5, 0.0, 11.5]
        );
        assert_eq!(
            odd.as_slice::<bool>().unwrap(),
            &[true, false, true, false, false, false]
        );

        let past = [1usize, 6];
        let ins = LaneInputs::new(&[&xs], &past, &progress);
        let x = ins.rows::<i64>(0).unwrap().dense_scalars().unwrap();
        let run = std::panic::AssertUnwindSafe(|| each_lane(&ins, (x, ()), (), |_| ()));
        let caught = std::panic::catch_unwind(run);
        assert!(caught.is_err());
    }

    /// A split with other outputs: each lane's other outputs are written and the lane goes
    /// to the side its condition names.
    #[test]
    fn split_lanes_writes_the_other_outputs_and_splits_by_the_condition() {
        let xs = Column::from_scalars(&[10i64, 11, 12, 13, 14]);
        let lanes = [0usize, 1, 3, 4];
        let progress = Cell::new(0);
        let ins = LaneInputs::new(&[&xs], &lanes, &progress);
        let x = ins.rows::<i64>(0).unwrap().dense_scalars().unwrap();
        let mut halves = Column::zeros(autobatch_ir::DType::I64, 5, 1);
        let mut stand_in = Column::zeros(autobatch_ir::DType::I64, 4, 1);
        let mut conditions = Column::zeros(autobatch_ir::DType::Bool, 4, 1);
        let (wrote, asked) = (Cell::new(false), Cell::new(false));
        let (mut yes, mut no, used) = (Vec::new(), Vec::new(), Cell::new(false));
        let split = SplitLanes {
            lanes: &lanes,
            progress: &progress,
            yes: &mut yes,
            no: &mut no,
            used: &used,
        };
        let leaves = [
            OutLeaf::Lanes(LaneRows::new(
                NonNull::from(&mut halves),
                StandIn::new(&mut stand_in, lanes.len(), &asked),
                &wrote,
            )),
            OutLeaf::Split(StandIn::new(&mut conditions, lanes.len(), &asked), split),
        ];
        let mut outs = LaneOutputs::from_leaves(leaves.into_iter().collect());
        let [a, b] = outs.leaves::<2>().unwrap();
        let (mut a, mut b) = (a.scalars::<i64>().unwrap(), b.scalars::<bool>().unwrap());
        let s = b.split().unwrap();
        split_lanes(s, (x, ()), (a.by_lane().unwrap(), ()), |(x, ())| {
            ((x / 2, ()), x % 2 == 0)
        });
        drop(outs);
        assert!(used.get());
        assert_eq!((yes, no), (vec![0, 4], vec![1, 3]));
        assert_eq!(halves.as_slice::<i64>().unwrap(), &[5, 5, 0, 6, 7]);
    }
}

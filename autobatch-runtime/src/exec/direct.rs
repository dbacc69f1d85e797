//! Running a lane-wise kernel's direct body ([`Kernel::lane_wise_direct`]): where the op's
//! layout offers every output leaf by lane and storage holds every input leaf as scalars in
//! place, the kernel is handed storage's columns themselves. Nothing is built per leaf (no
//! input views, output leaves or stand-in columns), and nothing is checked or scattered after
//! it: its outputs are in place.
//!
//! [`Kernel::lane_wise_direct`]: crate::Kernel::lane_wise_direct

use super::layout::{Layout, Push};
use super::{AsideInputs, Exec, Sides};
use crate::column::Column;
use crate::error::Result;
use crate::kernel::{DirectCall, DirectFn, SplitLanes};
use crate::panics::catch_quietly;
use crate::stats::{KernelClock, Stats};
use autobatch_ir::{Block, PrimOp};
use std::cell::Cell;
use std::ptr::NonNull;

/// Storage columns of a direct call's input and output leaves. Kept by [`Exec`] between calls
/// (in a `RefCell`, borrowed for the length of a call), so a call allocates nothing however
/// many leaves its kernel has; emptied before each use (what a call leaves in them is not read
/// again).
#[derive(Default)]
pub(super) struct Columns {
    ins: Vec<NonNull<Column>>,
    outs: Vec<NonNull<Column>>,
}

impl Exec<'_> {
    /// Runs `op` on `lanes` through `direct`, the direct body of kernel `id`, whose `layout`
    /// offers every output leaf by lane (inputs `aside` read from the rows given, as
    /// [`Exec::run_reading`] reads them). With `split` (a branch condition's output leaf and
    /// its two lists), the lists are offered if that leaf is the kernel's last (the one a
    /// direct body splits by). `None`, with nothing done, where an input leaf is not scalars
    /// in place or an output leaf has no rows by lane (the general body runs then); else
    /// whether the kernel split the lanes.
    pub(super) fn run_direct(
        &mut self,
        op: &PrimOp,
        (id, direct, layout): (usize, &DirectFn, &Layout),
        (lanes, aside): (&[usize], AsideInputs<'_>),
        (block, stats): (Block, &mut Stats),
        split: &mut Option<(usize, Sides<'_>)>,
    ) -> Result<Option<bool>> {
        let mut columns = self.direct.borrow_mut();
        let Columns { ins, outs } = &mut *columns;
        // Both lists are taken before any push: a push saves rows into a leaf's saved frames
        // and never moves its current rows, which the lists point to.
        let Some(n_ins) = self.direct_inputs(op, (lanes, aside), block, ins)? else {
            return Ok(None);
        };
        outs.clear();
        for place in &layout.places {
            match self.storage.lane_rows(place.var, place.leaf) {
                Some(rows) => outs.push(rows),
                None => return Ok(None),
            }
        }
        if layout.pushes_first {
            for out in layout.outputs.iter().filter(|o| o.push == Push::Before) {
                self.storage.push(out.var, lanes, block)?;
            }
        }
        let last = layout.places.len().checked_sub(1);
        let offered = split.as_ref().is_some_and(|&(leaf, _)| Some(leaf) == last);
        let (progress, used) = (Cell::new(0usize), Cell::new(false));
        let lists = split.take_if(|_| offered).map(|(_, (yes, no))| SplitLanes {
            lanes,
            progress: &progress,
            yes,
            no,
            used: &used,
        });
        let clock = KernelClock::start(self.time_kernels);
        let result = {
            // The lists cut to lengths known here: built from the vectors as they are, each
            // slice was loaded as one 16-byte (pointer, length) word just after the pushes had
            // stored the length alone, a load the store cannot forward (about 12 cycles a call,
            // a third of this function's time in the builder's fib under `perf annotate`).
            let (ins, outs) = (&ins[..n_ins], &outs[..layout.places.len()]);
            let mut call = DirectCall::new((lanes, &progress, self.context), ins, outs, lists);
            catch_quietly(|| direct(&mut call))
        };
        stats.record_kernel(id, lanes.len(), clock.elapsed(), false);
        if let Some(e) = self.failure(result, &progress, op, lanes, block) {
            return Err(e);
        }
        // The branch condition the kernel split the lanes by is not written.
        let unwritten = last.filter(|_| used.get());
        for out in &layout.outputs {
            if !out.leaves.contains(&unwritten.unwrap_or(usize::MAX)) {
                self.storage.mark_written(out.var, lanes);
            }
        }
        Ok(Some(unwritten.is_some()))
    }

    /// Lists in `ins` (emptied first) the columns of `op`'s input leaves at `lanes`, in
    /// storage or among the rows `aside`, and returns how many; `None` if one is not scalars
    /// in place.
    fn direct_inputs(
        &self,
        op: &PrimOp,
        (lanes, aside): (&[usize], AsideInputs<'_>),
        block: Block,
        ins: &mut Vec<NonNull<Column>>,
    ) -> Result<Option<usize>> {
        ins.clear();
        for &v in &op.ins {
            let leaves = match aside.iter().find(|&&(a, _)| a == v) {
                Some(&(_, leaves)) => leaves,
                None => self.storage.read(v, lanes, block)?,
            };
            for leaf in leaves {
                match leaf.dense().filter(|rows| rows.width() == 1) {
                    Some(rows) => ins.push(NonNull::from(rows)),
                    None => return Ok(None),
                }
            }
        }
        Ok(Some(ins.len()))
    }
}

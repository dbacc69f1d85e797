//! What both interpreters decide the same way about a block: which vector variables it lets
//! go of when it ends, how a branch splits its lanes (and how lanes arriving from two places
//! wait in order), and (with lane isolation) which lanes ran past the step budget.

use crate::config::Config;
use crate::error::{Result, RuntimeError};
use crate::storage::leaf::Leaf;
use crate::storage::Stacks;
use autobatch_ir::passes::Liveness;
use autobatch_ir::{Allocation, Block, Program, Var};

/// Per block of `program`: the variables with shared vector rows that the block reads or
/// writes and that are dead when it ends (by `live`), which an interpreter releases there
/// instead of keeping their rows until the next write: the arena then holds live values only,
/// and a row is handed out again while it is still in cache. Stacked (FULL) variables are left
/// to their pops when `stacks` honours them.
pub(crate) fn dead_vectors(program: &Program, live: &Liveness, stacks: Stacks) -> Vec<Vec<Var>> {
    let shares_rows = |v: Var| {
        let d = program.var(v);
        let kept = match d.alloc {
            Allocation::Null => false,
            Allocation::Full => stacks == Stacks::Ignore,
            Allocation::Temporary | Allocation::Register => true,
        };
        kept && d.ty.leaves().into_iter().any(Leaf::is_shared_type)
    };
    program
        .blocks
        .iter()
        .enumerate()
        .map(|(b, data)| {
            let out = &live.block(Block::new(b)).live_out;
            let mut touched: Vec<Var> = data
                .ops
                .iter()
                .flat_map(|op| op.reads().iter().chain(op.writes()).copied())
                .filter(|&v| shares_rows(v) && !out.contains(&v))
                .collect();
            touched.sort_unstable();
            touched.dedup();
            touched
        })
        .collect()
}

/// Splits `lanes` by their branch `conditions` (indexed by lane), in order: `lanes` keeps the
/// lanes going to `then`, `else_` receives those going to `else` (what it held is dropped).
/// Branch-free: each lane is written to both sides and only the side its condition picks
/// advances, so unpredictable conditions cost no mispredictions; the `then` side is written
/// over `lanes` itself (at or before the lane read), so no lane list is copied afterwards.
pub(crate) fn partition_lanes(lanes: &mut Vec<usize>, conditions: &[bool], else_: &mut Vec<usize>) {
    else_.clear();
    else_.reserve(lanes.len());
    let spare = &mut else_.spare_capacity_mut()[..lanes.len()];
    let (mut t, mut e) = (0, 0);
    for i in 0..lanes.len() {
        let lane = lanes[i];
        let c = usize::from(conditions[lane]);
        lanes[t] = lane;
        spare[e].write(lane);
        t += c;
        e += 1 - c;
    }
    lanes.truncate(t);
    // SAFETY: the loop wrote the first `e` elements of `else_`'s spare capacity.
    unsafe { else_.set_len(e) };
}

/// Merges sorted `incoming` lanes into sorted `waiting` (no lane in both), through `scratch`:
/// lanes sent to a block from two places wait there in lane order without a sort. Branch-free
/// while both lists have lanes left (each step writes the smaller head and advances its
/// side), so interleaved arrivals (the two arms of an unpredictable branch meeting again)
/// cost no mispredictions.
pub(crate) fn merge_lanes(waiting: &mut Vec<usize>, incoming: &[usize], scratch: &mut Vec<usize>) {
    match (waiting.last(), incoming.first()) {
        (_, None) => {}
        (None, _) => waiting.extend_from_slice(incoming),
        (Some(&last), Some(&first)) if last < first => waiting.extend_from_slice(incoming),
        _ => {
            let (a, b) = (waiting.as_slice(), incoming);
            let total = a.len() + b.len();
            scratch.clear();
            scratch.reserve(total);
            let room = &mut scratch.spare_capacity_mut()[..total];
            let (mut i, mut j, mut k) = (0, 0, 0);
            while i < a.len() && j < b.len() {
                let (x, y) = (a[i], b[j]);
                let from_a = usize::from(x < y);
                room[k].write(if x < y { x } else { y });
                i += from_a;
                j += 1 - from_a;
                k += 1;
            }
            for &lane in a[i..].iter().chain(&b[j..]) {
                room[k].write(lane);
                k += 1;
            }
            // SAFETY: the loops wrote the first `k` (= `total`) slots of the spare capacity.
            unsafe { scratch.set_len(k) };
            std::mem::swap(waiting, scratch);
        }
    }
}

/// Block executions per lane, with [`Config::lane_isolation`]: each lane's own count is held
/// against the step budget (as the reference counts it), so the lanes that fail are exactly
/// those that ran too long, whatever the others did.
pub(crate) struct LaneSteps {
    counts: Vec<u64>,
    budget: u64,
}

impl LaneSteps {
    /// Counters for `batch` lanes if `config` isolates lanes and has a step budget.
    pub(crate) fn new(config: &Config, batch: usize) -> Option<LaneSteps> {
        let budget = config.step_budget.filter(|_| config.lane_isolation)?;
        Some(LaneSteps {
            counts: vec![0; batch],
            budget,
        })
    }

    /// Counts one block execution for each of `lanes`; fails with the lanes past the budget.
    pub(crate) fn run(&mut self, lanes: &[usize]) -> Result<()> {
        let mut over = Vec::new();
        for &l in lanes {
            self.counts[l] += 1;
            if self.counts[l] > self.budget {
                over.push(l);
            }
        }
        if over.is_empty() {
            return Ok(());
        }
        Err(RuntimeError::StepBudget {
            budget: self.budget,
            running: over.len(),
            lanes: over,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{merge_lanes, partition_lanes};

    #[test]
    fn partitions_keep_lane_order_and_merges_restore_it() {
        let conditions = [true, false, false, true, true, false];
        let (mut t, mut f) = (vec![0, 1, 3, 4, 5], vec![9]);
        partition_lanes(&mut t, &conditions, &mut f);
        assert_eq!((&t[..], &f[..]), (&[0, 3, 4][..], &[1, 5][..]));
        let mut t = Vec::new();
        partition_lanes(&mut t, &conditions, &mut f);
        assert!(t.is_empty() && f.is_empty());

        let mut scratch = Vec::new();
        let mut waiting = vec![1, 5];
        merge_lanes(&mut waiting, &[0, 3, 4, 8], &mut scratch);
        assert_eq!(waiting, vec![0, 1, 3, 4, 5, 8]);
        merge_lanes(&mut waiting, &[9, 10], &mut scratch);
        merge_lanes(&mut waiting, &[], &mut scratch);
        assert_eq!(waiting, vec![0, 1, 3, 4, 5, 8, 9, 10]);
        let mut empty = Vec::new();
        merge_lanes(&mut empty, &[2], &mut scratch);
        assert_eq!(empty, vec![2]);
    }
}

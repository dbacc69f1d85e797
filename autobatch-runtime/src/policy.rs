//! What both interpreters decide the same way about a block: which vector variables it lets
//! go of when it ends, how a branch splits its lanes, and (with lane isolation) which lanes ran
//! past the step budget.

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

/// Splits `lanes` by their branch `conditions` into `then_` and `else_` (cleared first).
pub(crate) fn partition_lanes(
    lanes: &[usize],
    conditions: &[bool],
    then_: &mut Vec<usize>,
    else_: &mut Vec<usize>,
) {
    then_.clear();
    else_.clear();
    for (&lane, &c) in lanes.iter().zip(conditions) {
        if c {
            then_.push(lane);
        } else {
            else_.push(lane);
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

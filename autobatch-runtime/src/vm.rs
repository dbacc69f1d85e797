//! The full VM: per-lane program counters over the lowered program, with lanes re-converging
//! across recursion depths.
//!
//! Each step runs the lowest-numbered block that has any lane waiting, on exactly those lanes.
//! Lanes wait in per-block sets instead of a program-counter array that is scanned every
//! step, so a step costs in proportion to the lanes it runs, not to the batch size; a set is a
//! bitset, so the lanes come out in lane order without sorting and nothing allocates per step.
//! Return addresses live on per-lane stacks (the program counter's stack), with "halt" beneath.

use crate::config::Config;
use crate::depth::{counted_entries, limit_error};
use crate::error::{Result, RuntimeError};
use crate::exec::Exec;
use crate::policy::{dead_vectors, partition_lanes, LaneSteps};
use crate::stats::Stats;
use crate::storage::Stacks;
use autobatch_ir::passes::liveness;
use autobatch_ir::{Allocation, Block, LoweredProgram, Op, Program, Terminator, Var};

/// The full VM keeps FULL variables' saved frames in storage: pushes and pops act on them.
pub(crate) const STACKS: Stacks = Stacks::Honour;

/// What the full VM knows about a lowered program before it runs.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Per block and op: the stacked variables a `pop` op pops (pops of the others are no-ops,
    /// dropped here once instead of skipped at every run).
    pops: Vec<Vec<Vec<Var>>>,
    /// Per block: the vector variables (registers and temporaries, not stacked) that it reads
    /// or writes and that are dead when it ends. Their rows are released there instead of when
    /// the variable is next overwritten: the arena then holds live values only, and a row is
    /// handed out again while it is still in cache.
    dead_vectors: Vec<Vec<Var>>,
    /// Per block: the function a lane entering it calls, if that call counts against the
    /// depth limit (see [`counted_entries`]).
    entries: Vec<Option<String>>,
}

impl Plan {
    /// The plan of lowered `program`, lowered from `high` (`None` if written lowered).
    pub(crate) fn new(program: &LoweredProgram, high: Option<&Program>) -> Plan {
        let pops = program
            .blocks
            .iter()
            .map(|data| {
                data.ops
                    .iter()
                    .map(|op| match op {
                        Op::Pop(vars) => vars
                            .iter()
                            .copied()
                            .filter(|&v| program.var(v).alloc == Allocation::Full)
                            .collect(),
                        _ => Vec::new(),
                    })
                    .collect()
            })
            .collect();
        Plan {
            pops,
            dead_vectors: dead_vectors(program, &liveness(program), STACKS),
            entries: counted_entries(program, high),
        }
    }
}

/// One return address: the block to return to and the caller's call depth, restored on return
/// (a tail call enters its callee without a return address of its own).
type Return = (Block, u32);

/// Runs the lowered `exec.program` from its entry until every lane halts.
pub(crate) fn run(
    exec: &mut Exec<'_>,
    plan: &Plan,
    config: &Config,
    stats: &mut Stats,
) -> Result<()> {
    let program = exec.program;
    let batch = exec.storage.batch();
    let n_blocks = program.blocks.len();
    let mut waiting: Vec<LaneSet> = (0..n_blocks).map(|_| LaneSet::new(batch)).collect();
    let all: Vec<usize> = (0..batch).collect();
    waiting[program.main_function().entry().index()].extend(&all);
    let mut lanes = Vec::with_capacity(batch);
    let mut returns: Vec<Vec<Return>> = vec![Vec::new(); batch];
    let mut frames = 0usize;
    let mut depth: Vec<u32> = vec![0; batch];
    let max_depth = config.max_stack_depth;
    let budget = config.step_budget.unwrap_or(u64::MAX);
    let mut cond_true = Vec::new();
    let mut cond_false = Vec::new();
    let mut values = Vec::new();
    let mut values_lanes = Vec::new();
    let mut lane_steps = LaneSteps::new(config, batch);
    while let Some(index) = waiting.iter().position(|w| !w.is_empty()) {
        if lane_steps.is_none() && stats.steps >= budget {
            let mut lanes = Vec::new();
            for set in &mut waiting {
                set.take_into(&mut values_lanes);
                lanes.extend_from_slice(&values_lanes);
            }
            lanes.sort_unstable();
            let running = lanes.len();
            return Err(RuntimeError::StepBudget {
                budget,
                running,
                lanes,
            });
        }
        let block = Block::new(index);
        waiting[index].take_into(&mut lanes);
        if let Some(steps) = &mut lane_steps {
            steps.run(&lanes)?;
        }
        stats.record(index, lanes.len());
        let data = program.block(block);
        if let Some(function) = &plan.entries[index] {
            if let Some(&lane) = lanes.iter().find(|&&l| depth[l] as usize >= max_depth) {
                return Err(limit_error(function, lane, max_depth));
            }
            lanes
                .iter()
                .for_each(|&l| depth[l] = depth[l].saturating_add(1));
        }
        for (i, op) in data.ops.iter().enumerate() {
            match op {
                Op::Prim(prim) => exec.run_prim(prim, &lanes, block, stats)?,
                Op::Pop(_) => {
                    for &v in &plan.pops[index][i] {
                        exec.storage.pop(v, &lanes, block)?;
                    }
                }
                Op::Call(_) => unreachable!("a verified lowered program has no calls"),
            }
        }
        for &v in &plan.dead_vectors[index] {
            exec.storage.release_rows(v, &lanes);
        }
        match &data.term {
            Terminator::Goto(t) => waiting[t.index()].extend(&lanes),
            Terminator::Branch { cond, then_, else_ } => {
                exec.storage.read_bools(*cond, &lanes, block, &mut values)?;
                partition_lanes(&lanes, &values, &mut cond_true, &mut cond_false);
                waiting[then_.index()].extend(&cond_true);
                waiting[else_.index()].extend(&cond_false);
            }
            Terminator::Return => {}
            Terminator::PushGoto { ret, target } => {
                frames += lanes.len();
                let bytes = frames * std::mem::size_of::<Return>();
                // Blamed on the deepest lane (the lowest of them) if it passes the budget.
                let deepest = lanes
                    .iter()
                    .copied()
                    .max_by_key(|&l| (returns[l].len(), std::cmp::Reverse(l)));
                let blamed = deepest.as_slice();
                exec.storage.note_call_stack(bytes, block, blamed, || {
                    let callee = plan.entries[target.index()].as_deref();
                    let callee = callee.unwrap_or(&program.block(*target).name);
                    format!("the return addresses of calls to `{callee}`")
                })?;
                for &lane in &lanes {
                    returns[lane].push((*ret, depth[lane]));
                }
                waiting[target.index()].extend(&lanes);
            }
            Terminator::IndirectGoto => {
                for &lane in &lanes {
                    // An empty return stack is the "halt" address beneath main.
                    if let Some((ret, d)) = returns[lane].pop() {
                        frames -= 1;
                        depth[lane] = d;
                        waiting[ret.index()].insert(lane);
                    }
                }
                let bytes = frames * std::mem::size_of::<Return>();
                exec.storage
                    .note_call_stack(bytes, block, &lanes, String::new)?;
            }
        }
    }
    Ok(())
}

/// The lanes waiting at one block: a bitset over the batch, with the range of words that may
/// hold lanes, so taking them costs in proportion to that range and yields them in lane order.
struct LaneSet {
    words: Vec<u64>,
    count: usize,
    /// Words below `lo` and from `hi` on are zero.
    lo: usize,
    hi: usize,
}

impl LaneSet {
    fn new(batch: usize) -> LaneSet {
        LaneSet {
            words: vec![0; batch.div_ceil(64)],
            count: 0,
            lo: usize::MAX,
            hi: 0,
        }
    }

    fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Adds `lane` (not already waiting here: a lane waits at one block at a time).
    fn insert(&mut self, lane: usize) {
        let w = lane / 64;
        self.words[w] |= 1 << (lane % 64);
        self.count += 1;
        self.lo = self.lo.min(w);
        self.hi = self.hi.max(w + 1);
    }

    /// Adds `lanes` (in lane order, none already waiting here).
    fn extend(&mut self, lanes: &[usize]) {
        let (Some(&first), Some(&last)) = (lanes.first(), lanes.last()) else {
            return;
        };
        for &lane in lanes {
            self.words[lane / 64] |= 1 << (lane % 64);
        }
        self.count += lanes.len();
        self.lo = self.lo.min(first.min(last) / 64);
        self.hi = self.hi.max(first.max(last) / 64 + 1);
    }

    /// Moves every waiting lane, in lane order, into `out` (cleared first).
    fn take_into(&mut self, out: &mut Vec<usize>) {
        out.clear();
        for w in self.lo..self.hi {
            let mut bits = std::mem::take(&mut self.words[w]);
            while bits != 0 {
                out.push(w * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
        self.count = 0;
        self.lo = usize::MAX;
        self.hi = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::LaneSet;

    #[test]
    fn lane_sets_give_lanes_back_in_order_and_empty() {
        let mut s = LaneSet::new(200);
        s.extend(&[130, 3, 64, 199]);
        s.insert(0);
        assert_eq!(s.count, 5);
        let mut out = vec![42];
        s.take_into(&mut out);
        assert_eq!(out, vec![0, 3, 64, 130, 199]);
        assert!(s.is_empty());
        s.take_into(&mut out);
        assert!(out.is_empty());
        s.insert(70);
        s.take_into(&mut out);
        assert_eq!(out, vec![70]);
    }
}

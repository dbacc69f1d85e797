//! The full VM: per-lane program counters over the lowered program, with lanes re-converging
//! across recursion depths.
//!
//! Each step runs the lowest-numbered block that has any lane waiting, on exactly those lanes.
//! Lanes wait in per-block lists instead of a program-counter array that is scanned every
//! step, so a step costs in proportion to the lanes it runs, not to the batch size. Return
//! addresses live on per-lane stacks (the program counter's stack), with "halt" beneath.

use crate::config::{Config, Stats};
use crate::env::{partition_lanes, Env};
use crate::error::{Result, RuntimeError};
use autobatch_ir::{Block, Op, Terminator, PC_NAME};

/// Frames the reference's program-counter stack holds before the first call (an unset value and
/// the halt address); counted so `max_stack_depth` means what it means in the reference.
const PC_BASE_FRAMES: usize = 2;

/// Runs the lowered `env.program` from its entry until every lane halts.
pub(crate) fn run(env: &mut Env<'_>, config: &Config, stats: &mut Stats) -> Result<()> {
    let program = env.program;
    let n_blocks = program.blocks.len();
    let mut waiting: Vec<Vec<usize>> = vec![Vec::new(); n_blocks];
    waiting[program.main_function().entry().index()] = (0..env.batch).collect();
    let mut returns: Vec<Vec<u32>> = vec![Vec::new(); env.batch];
    let budget = config.step_budget.unwrap_or(u64::MAX);
    let mut cond_true = Vec::new();
    let mut cond_false = Vec::new();
    let mut values = Vec::new();
    while let Some(index) = waiting.iter().position(|w| !w.is_empty()) {
        if stats.steps >= budget {
            let running = waiting.iter().map(Vec::len).sum();
            return Err(RuntimeError::StepBudget { budget, running });
        }
        let block = Block::new(index);
        let mut lanes = std::mem::take(&mut waiting[index]);
        lanes.sort_unstable();
        stats.record(index, lanes.len());
        let data = program.block(block);
        for op in &data.ops {
            match op {
                Op::Prim(prim) => env.run_prim(prim, &lanes, block, stats)?,
                Op::Pop(vars) => {
                    for &v in vars {
                        env.pop(v, &lanes, block)?;
                    }
                }
                Op::Call(_) => {
                    return Err(RuntimeError::ModeUnsupported(format!(
                        "block `{}` still has a call; the full VM runs lowered programs",
                        data.name
                    )))
                }
            }
        }
        match &data.term {
            Terminator::Goto(t) => enqueue(&mut waiting[t.index()], lanes),
            Terminator::Branch { cond, then_, else_ } => {
                env.read_bools(*cond, &lanes, block, &mut values)?;
                partition_lanes(&lanes, &values, &mut cond_true, &mut cond_false);
                waiting[then_.index()].extend_from_slice(&cond_true);
                waiting[else_.index()].extend_from_slice(&cond_false);
            }
            Terminator::Return => {}
            Terminator::PushGoto { ret, target } => {
                for &lane in &lanes {
                    if returns[lane].len() + PC_BASE_FRAMES + 1 >= config.max_stack_depth {
                        return Err(RuntimeError::StackOverflow {
                            var: PC_NAME.to_string(),
                            lane,
                            block: data.name.clone(),
                            max_depth: config.max_stack_depth,
                        });
                    }
                    returns[lane].push(ret.0);
                }
                enqueue(&mut waiting[target.index()], lanes);
            }
            Terminator::IndirectGoto => {
                for &lane in &lanes {
                    // An empty return stack is the "halt" address beneath main.
                    if let Some(ret) = returns[lane].pop() {
                        waiting[ret as usize].push(lane);
                    }
                }
            }
        }
    }
    Ok(())
}

fn enqueue(queue: &mut Vec<usize>, lanes: Vec<usize>) {
    if queue.is_empty() {
        *queue = lanes;
    } else {
        queue.extend_from_slice(&lanes);
    }
}

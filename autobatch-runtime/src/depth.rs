//! Call depth as every interpreter counts it against `Config::max_stack_depth`: which calls
//! count, where each program marks them, the error past the limit, and host recursion that
//! cannot overflow the thread's stack.

use crate::error::RuntimeError;
use autobatch_ir::passes::recursive_entries;
use autobatch_ir::{Program, Terminator};

/// Host stack kept free before a recursive interpreter call: more than any one level of
/// stackless or reference recursion uses between two checks.
const RED_ZONE: usize = 256 * 1024;

/// Host stack added each time the red zone is reached: a few thousand levels per segment.
const SEGMENT: usize = 4 * 1024 * 1024;

/// Runs `f`, first moving to a fresh stack segment if less than [`RED_ZONE`] bytes of the
/// current one are left, so host recursion of any depth the limit allows runs on any thread
/// (however small its stack) instead of aborting the process on overflow.
pub(crate) fn on_enough_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, SEGMENT, f)
}

/// Per function of a high-level program: whether it is recursive (on a cycle of the call
/// graph, self-calls included). Only frames of these count against the depth limit: inlining
/// copies only non-recursive functions, so every program prepared from one source has the same
/// counted calls.
pub(crate) use autobatch_ir::passes::recursive_functions;

/// Per block of lowered `program`: the function whose call a lane entering that block makes,
/// if the call counts. With `high`, the high-level program `program` was lowered from, those
/// are the blocks where its recursive functions' bodies start ([`recursive_entries`]): every
/// call enters there, tail calls (plain jumps) included, because the pipeline's simplification
/// keeps those blocks (it neither merges them into the calling block nor threads jumps past an
/// empty one). A hand-lowered program (`None`) has no functions, so every `push_goto` target
/// counts, named by its block.
pub(crate) fn counted_entries(program: &Program, high: Option<&Program>) -> Vec<Option<String>> {
    let mut counted: Vec<Option<String>> = vec![None; program.blocks.len()];
    match high {
        Some(high) => {
            for (block, f) in recursive_entries(high, program) {
                counted[block.index()] = Some(high.function(f).name.clone());
            }
        }
        None => {
            for data in &program.blocks {
                if let Terminator::PushGoto { target, .. } = data.term {
                    counted[target.index()] = Some(program.block(target).name.clone());
                }
            }
        }
    }
    counted
}

/// The error for `lane` calling `function` with `max_depth` counted frames in progress.
pub(crate) fn limit_error(function: &str, lane: usize, max_depth: usize) -> RuntimeError {
    RuntimeError::RecursionLimit {
        function: function.to_string(),
        lane,
        max_depth,
    }
}

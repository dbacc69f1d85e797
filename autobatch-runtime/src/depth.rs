//! Call depth as every interpreter counts it against `Config::max_stack_depth`: which calls
//! count, where each program marks them, the error past the limit, and host recursion that
//! cannot overflow the thread's stack.

use crate::error::RuntimeError;
use autobatch_ir::{FuncId, Op, Program, Terminator};
use std::collections::HashMap;

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

/// Per function of high-level `program`: whether it is recursive (on a cycle of the call
/// graph, self-calls included). Only frames of these count against the depth limit: inlining
/// copies only non-recursive functions, so every program prepared from one source has the same
/// counted calls.
pub(crate) fn recursive_functions(program: &Program) -> Vec<bool> {
    let n = program.functions.len();
    let callees: Vec<Vec<usize>> = program
        .functions
        .iter()
        .map(|f| {
            let mut out: Vec<usize> = f
                .blocks
                .iter()
                .flat_map(|&b| &program.block(b).ops)
                .filter_map(|op| match op {
                    Op::Call(c) => Some(c.func.index()),
                    _ => None,
                })
                .collect();
            out.sort_unstable();
            out.dedup();
            out
        })
        .collect();
    (0..n)
        .map(|f| {
            // f is recursive when f is reachable from its own callees.
            let mut seen = vec![false; n];
            let mut work = callees[f].clone();
            while let Some(g) = work.pop() {
                if g == f {
                    return true;
                }
                if !std::mem::replace(&mut seen[g], true) {
                    work.extend_from_slice(&callees[g]);
                }
            }
            false
        })
        .collect()
}

/// Per block of lowered `program`: the function whose call a lane entering that block makes,
/// if the call counts. With `high`, the high-level program `program` was lowered from, those
/// are the entry blocks of its recursive functions (lowering and simplification keep their
/// names); a hand-lowered program (`None`) has no functions, so every `push_goto` target
/// counts, named by its block.
pub(crate) fn counted_entries(program: &Program, high: Option<&Program>) -> Vec<Option<String>> {
    let mut counted: Vec<Option<String>> = vec![None; program.blocks.len()];
    match high {
        Some(high) => {
            let by_name: HashMap<&str, String> = recursive_functions(high)
                .iter()
                .enumerate()
                .filter(|&(_, &r)| r)
                .map(|(f, _)| {
                    let func = high.function(FuncId::new(f));
                    (high.block(func.entry()).name.as_str(), func.name.clone())
                })
                .collect();
            for (slot, data) in counted.iter_mut().zip(&program.blocks) {
                *slot = by_name.get(data.name.as_str()).cloned();
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

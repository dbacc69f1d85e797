//! Call depth as every interpreter counts it against `Config::max_stack_depth`: which calls
//! count, where each program marks them, how the full VM knows a lane's depth ([`DepthRule`]),
//! the error past the limit, and host recursion that cannot overflow the thread's stack.

use crate::error::RuntimeError;
use autobatch_ir::passes::recursive_entries;
use autobatch_ir::{Block, Program, Terminator};

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

/// How the full VM knows each lane's call depth, which `Config::max_stack_depth` bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DepthRule {
    /// Every call that counts pushes a return address, and lanes enter the blocks where counted
    /// calls start by those calls alone, but for the lanes of the outermost frame, which may
    /// jump into one instead (a main function that tail-calls a recursive one) if they push
    /// nothing themselves. A lane's depth is then the return addresses it holds plus `base`
    /// (1 if the outermost frame enters a counted call that way, else 0): no block counts
    /// calls as lanes enter it, the limit is checked as return addresses are pushed, and a
    /// return address is the block to return to alone.
    Held {
        /// The depth of a lane holding no return address inside a counted call.
        base: usize,
    },
    /// Each lane's depth is counted as it enters a block where a counted call starts (a tail
    /// call's jump enters one too), and each return address keeps the caller's depth, restored
    /// on return.
    Counted,
}

impl DepthRule {
    /// The rule for lowered `program` whose counted call starts are `entries` (see
    /// [`counted_entries`]), a lane sent to a block going on to its block in `forward`
    /// (halted past the last one; a block that sends lanes on is not run).
    pub(crate) fn new(program: &Program, entries: &[Option<String>], forward: &[Block]) -> Self {
        let n = program.blocks.len();
        // Where a lane sent to `b` runs, if it runs a block.
        let to = |b: Block| Some(forward[b.index()].index()).filter(|&t| t < n);
        let counts = |b: usize| entries[b].is_some();
        // Per block, the blocks its lanes go on to in the same frame (a call's return block
        // included); and the start of the call it makes, if any.
        let next = |b: usize| -> Vec<usize> {
            match program.block(Block::new(b)).term {
                Terminator::Goto(t) => to(t).into_iter().collect(),
                Terminator::Branch { then_, else_, .. } => {
                    to(then_).into_iter().chain(to(else_)).collect()
                }
                Terminator::PushGoto { ret, .. } => to(ret).into_iter().collect(),
                Terminator::Return | Terminator::IndirectGoto => Vec::new(),
            }
        };
        let call = |b: usize| match program.block(Block::new(b)).term {
            Terminator::PushGoto { target, .. } => Some(to(target)),
            _ => None,
        };
        // The blocks lanes reach from `seeds` in one frame, through blocks `through` lets in.
        let reach = |seeds: Vec<usize>, through: &dyn Fn(usize) -> bool| {
            let mut seen = vec![false; n];
            let mut stack = seeds;
            while let Some(b) = stack.pop() {
                if !seen[b] && through(b) {
                    seen[b] = true;
                    stack.extend(next(b));
                }
            }
            seen
        };
        let start = to(program.main_function().entry());
        // The outermost frame's blocks before any counted call, and the blocks of counted
        // calls (from their starts on).
        let outer = reach(start.into_iter().collect(), &|b| !counts(b));
        let inner = reach((0..n).filter(|&b| counts(b)).collect(), &|_| true);
        let mut jumps = start.is_some_and(counts);
        let mut pushes = false;
        for b in (0..n).filter(|&b| outer[b] || inner[b]) {
            if outer[b] && inner[b] {
                return DepthRule::Counted;
            }
            // Every call counts, and lanes return from it to a block that does not.
            if let Some(target) = call(b) {
                let returns_counted = next(b).into_iter().any(counts);
                if !target.is_some_and(counts) || returns_counted {
                    return DepthRule::Counted;
                }
                pushes |= outer[b];
            } else if next(b).into_iter().any(counts) {
                // A jump into a counted call: the outermost frame's only.
                if inner[b] {
                    return DepthRule::Counted;
                }
                jumps = true;
            }
        }
        match jumps && pushes {
            true => DepthRule::Counted,
            false => DepthRule::Held {
                base: usize::from(jumps),
            },
        }
    }
}

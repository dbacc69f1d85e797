//! CFG simplification: merges straight-line chains of blocks and threads jumps through blocks
//! that only jump, so each lane runs fewer blocks.
//!
//! Every block an interpreter runs has a fixed cost (scheduling, bookkeeping) and a per-lane
//! cost (moving the lane to the next block's waiting list), whatever its ops. Two rewrites cut
//! blocks without changing what any lane computes:
//!
//! * **merging**: when block `A` ends in `goto(B)` and `A` is `B`'s only predecessor, `B`'s ops
//!   are appended to `A` and `A` takes `B`'s terminator. Every lane that runs `A` runs `B` next
//!   and no lane reaches `B` any other way, so each lane runs the same ops in the same order
//!   (pops included). A function's entry block and every block named by a `push_goto` (as
//!   the return address or the callee's entry) are never merged away: lanes reach them by
//!   call, or through an `indirect_jump` that returns to the address the push saved.
//! * **jump threading**: when `A` ends in `goto(R)` and `R` has no ops and ends in `return`,
//!   `indirect_jump` or `goto(X)`, `A` takes (a copy of) `R`'s terminator. `R` stays as long as
//!   something else reaches it. Chains of empty `goto` blocks are followed; a chain that loops
//!   back on itself (or to `A`) is left alone. Likewise a `branch` arm to a block with no ops
//!   that ends in `goto(X)` is pointed at `X` (an arm cannot return, so only `goto` chains).
//!
//! * **kept blocks**: [`simplify_blocks_keeping`] is also given blocks that must stay blocks of
//!   their own, entered by the same jumps: they are neither merged into a predecessor nor
//!   threaded through (a jump to one stays a jump to it), though one may still absorb its own
//!   single-predecessor successor. The pipeline keeps the lowered entry blocks of recursive
//!   functions, where the full VM counts call depth: a tail call into one lowers to a plain
//!   `goto`, and without this its entry could be merged into the calling block or jumped past
//!   when empty, so the lanes would enter the function uncounted
//!   (docs/reference-semantics.md, "The full VM").
//!
//! Both repeat to a fixpoint; then blocks no longer reachable are dropped (reachable: from each
//! function's entry, along `goto`, both arms of `branch`, and a `push_goto`'s target and return
//! address), the survivors are renumbered in their old relative order (so each function's
//! entry stays first in its list, and the full VM's lowest-block-first schedule keeps its
//! order) and keep their names; a merged block keeps its first block's name.
//!
//! Allocations are kept as they are. That stays sound: the ops each lane runs, and so the set
//! of variables live at every point between them, are unchanged, and a variable that was live
//! out of a block that is now merged into its predecessor only lives inside one block (a
//! `Temporary` that stayed inside one block still does). Works on both forms; on a lowered
//! program run it before [`fuse_pop_push`](crate::passes::fuse_pop_push), which then also
//! fuses a pop at the end of a merged block with a write at the start of its successor.

use crate::program::{BlockData, Program, Terminator};
use crate::verified::{Form, Verified};
use crate::verify::trusted;
use crate::Block;

/// Every block a terminator may hand a lane to, a `push_goto`'s return address included (in the
/// order the terminator names them).
fn edges(term: &Terminator) -> Vec<Block> {
    match term {
        Terminator::PushGoto { ret, target } => vec![*target, *ret],
        t => t.successors(),
    }
}

/// The terminator block `from` takes when it jumps to `first` through blocks that only jump:
/// the first `return` / `indirect_jump` of the chain, or a `goto` to its first block with ops
/// or that is `kept` (or with another terminator). `None` if `first` has ops or is kept, or if
/// the chain comes back to a block it passed (or to `from`): a lane there loops without
/// running anything, so it keeps looping the way it did.
fn threaded(blocks: &[BlockData], kept: &[bool], from: Block, first: Block) -> Option<Terminator> {
    let mut seen = vec![from];
    let mut current = first;
    let mut result = None;
    loop {
        let data = &blocks[current.index()];
        if !data.ops.is_empty() || kept[current.index()] {
            return result;
        }
        match &data.term {
            Terminator::Return | Terminator::IndirectGoto => return Some(data.term.clone()),
            Terminator::Goto(next) => {
                seen.push(current);
                if seen.contains(next) {
                    return None;
                }
                result = Some(Terminator::Goto(*next));
                current = *next;
            }
            Terminator::Branch { .. } | Terminator::PushGoto { .. } => return result,
        }
    }
}

/// Merges single-predecessor successors into their predecessors and threads jumps through
/// blocks that only jump, to a fixpoint; drops unreachable blocks. Returns a new program.
///
/// See the module docs for the rules. Works on high-level and lowered programs; variables,
/// allocations, functions and the program's form are unchanged.
pub fn simplify_blocks<F: Form>(program: &Verified<F>) -> Verified<F> {
    simplify_blocks_keeping(program, &[])
}

/// [`simplify_blocks`], keeping each block of `keep` a block of its own that lanes enter by
/// the same jumps as before: none is merged into a predecessor or threaded through (see the
/// module docs). The kept blocks keep their names, so their new numbers are found by name.
pub fn simplify_blocks_keeping<F: Form>(program: &Verified<F>, keep: &[Block]) -> Verified<F> {
    let n = program.blocks.len();
    let owners = program.block_owners();
    let mut blocks: Vec<BlockData> = program.blocks.iter().cloned().collect();
    let mut kept = vec![false; n];
    for b in keep {
        kept[b.index()] = true;
    }
    let mut pinned = kept.clone();
    for f in &program.functions {
        pinned[f.entry().index()] = true;
    }
    loop {
        let live = reachable(program, &blocks);
        // Predecessor edges from reachable blocks; a dead block's edges count until the next
        // round recounts (an over-count only ever prevents a merge).
        let mut preds = vec![0usize; n];
        for (i, data) in blocks.iter().enumerate() {
            if !live[i] {
                continue;
            }
            for t in edges(&data.term) {
                preds[t.index()] += 1;
                if let Terminator::PushGoto { .. } = data.term {
                    pinned[t.index()] = true;
                }
            }
        }
        let mut gone = vec![false; n];
        let mut changed = false;
        for a in 0..n {
            if !live[a] || gone[a] {
                continue;
            }
            let from = Block::new(a);
            if let Terminator::Branch { cond, then_, else_ } = blocks[a].term {
                // An arm to a chain of blocks that only jump goes where the chain ends.
                let mut arm = |t: Block| match threaded(&blocks, &kept, from, t) {
                    Some(Terminator::Goto(end)) => {
                        preds[t.index()] -= 1;
                        preds[end.index()] += 1;
                        changed = true;
                        end
                    }
                    _ => t,
                };
                let (then_, else_) = (arm(then_), arm(else_));
                blocks[a].term = Terminator::Branch { cond, then_, else_ };
            }
            while let Terminator::Goto(target) = blocks[a].term {
                if let Some(term) = threaded(&blocks, &kept, from, target) {
                    if term != blocks[a].term {
                        preds[target.index()] -= 1;
                        for t in edges(&term) {
                            preds[t.index()] += 1;
                        }
                        blocks[a].term = term;
                        changed = true;
                        continue;
                    }
                }
                let b = target.index();
                if b == a || pinned[b] || preds[b] != 1 || gone[b] || owners[target] != owners[from]
                {
                    break;
                }
                // `a` is `b`'s only predecessor: `b`'s successors keep one predecessor each
                // (now `a` instead of `b`).
                let merged = std::mem::take(&mut blocks[b].ops);
                blocks[a].ops.extend(merged);
                blocks[a].term = blocks[b].term.clone();
                preds[b] = 0;
                gone[b] = true;
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    trusted(compact(program, blocks))
}

/// Which blocks lanes can reach: from each function's entry along every edge.
fn reachable(program: &Program, blocks: &[BlockData]) -> Vec<bool> {
    let mut live = vec![false; blocks.len()];
    let mut work: Vec<Block> = program.functions.iter().map(|f| f.entry()).collect();
    while let Some(b) = work.pop() {
        if std::mem::replace(&mut live[b.index()], true) {
            continue;
        }
        work.extend(edges(&blocks[b.index()].term));
    }
    live
}

/// Drops unreachable blocks and renumbers the rest in their old order.
fn compact(program: &Program, blocks: Vec<BlockData>) -> Program {
    let live = reachable(program, &blocks);
    let mut new_index: Vec<Option<Block>> = vec![None; blocks.len()];
    let mut next = 0;
    for (i, slot) in new_index.iter_mut().enumerate() {
        if live[i] {
            *slot = Some(Block::new(next));
            next += 1;
        }
    }
    // Reachable blocks only jump to reachable blocks, so every lookup finds one.
    let remap = |b: Block| new_index[b.index()].unwrap_or(b);
    let mut out = program.clone();
    out.blocks = blocks
        .into_iter()
        .zip(&live)
        .filter(|(_, &l)| l)
        .map(|(mut data, _)| {
            data.term = data.term.map_blocks(remap);
            data
        })
        .collect();
    for f in out.functions.iter_mut() {
        f.blocks = f
            .blocks
            .iter()
            .filter_map(|b| new_index[b.index()])
            .collect();
    }
    out
}

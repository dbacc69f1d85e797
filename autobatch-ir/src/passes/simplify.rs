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
/// (or another terminator). `None` if `first` has ops, or if the chain comes back to a block
/// it passed (or to `from`): a lane there loops without running anything, so it keeps looping
/// the way it did.
fn threaded(blocks: &[BlockData], from: Block, first: Block) -> Option<Terminator> {
    let mut seen = vec![from];
    let mut current = first;
    let mut result = None;
    loop {
        let data = &blocks[current.index()];
        if !data.ops.is_empty() {
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
    let n = program.blocks.len();
    let owners = program.block_owners();
    let mut blocks: Vec<BlockData> = program.blocks.iter().cloned().collect();
    let mut pinned = vec![false; n];
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
                let mut arm = |t: Block| match threaded(&blocks, from, t) {
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
                if let Some(term) = threaded(&blocks, from, target) {
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
                if b == a || pinned[b] || preds[b] != 1 || gone[b] || owners[target] != owners[from] {
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
    Verified::trusted(compact(program, blocks))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::{self, numbering};
    use crate::passes::{allocate, fuse_pop_push, lower};
    use crate::{Form, FuncId, KernelId, Op, ProgramBuilder, Type, Var};

    /// `name: op sources...; terminator` per block of the entry function, in order.
    fn shape(p: &Program) -> Vec<String> {
        let name = |b: Block| p.block(b).name.clone();
        p.main_function()
            .blocks
            .iter()
            .map(|&b| {
                let data = p.block(b);
                let ops: Vec<String> = data
                    .ops
                    .iter()
                    .map(|op| match op {
                        Op::Prim(prim) => prim.source.clone(),
                        Op::Pop(vars) => format!("pop{}", vars.len()),
                        Op::Call(_) => "call".to_string(),
                    })
                    .collect();
                let term = match &data.term {
                    Terminator::Goto(t) => format!("goto {}", name(*t)),
                    Terminator::Branch { then_, else_, .. } => {
                        format!("branch {} {}", name(*then_), name(*else_))
                    }
                    Terminator::Return => "return".to_string(),
                    Terminator::PushGoto { ret, target } => {
                        format!("push_goto {} {}", name(*ret), name(*target))
                    }
                    Terminator::IndirectGoto => "indirect_jump".to_string(),
                };
                format!("{}: {} | {term}", name(b), ops.join(" "))
            })
            .collect()
    }

    /// A builder with a variable `x`, a bool `c` and one function `f(x) -> x`.
    fn start() -> (ProgramBuilder, FuncId, Var, Var) {
        let mut b = ProgramBuilder::new();
        let x = b.var("x", Type::I64);
        let c = b.var("c", Type::BOOL);
        let f = b.function("f");
        b.signature(f, &[x], &[x]);
        (b, f, x, c)
    }

    fn simplified(p: &Program) -> Program {
        let before = p.clone();
        let out = simplify_blocks(p);
        assert_eq!(*p, before, "simplify_blocks must not modify its input");
        verify(&out).unwrap_or_else(|e| panic!("simplified program does not verify:\n{e}\n{out}"));
        assert_eq!(simplify_blocks(&out), out, "a second pass changes nothing");
        assert_eq!(out.vars, p.vars, "variables and allocations are kept");
        out
    }

    #[test]
    fn a_chain_of_gotos_becomes_one_block() {
        let (mut b, f, x, _) = start();
        let names = ["a", "b", "c", "d"];
        let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
        for (i, &blk) in bl.iter().enumerate() {
            b.prim(blk, &[x], &[x], KernelId::new(0), &format!("x + {i}"));
            if i + 1 < bl.len() {
                b.goto(blk, bl[i + 1]);
            } else {
                b.ret(blk);
            }
        }
        let p = b.finish(f).unwrap();
        let out = simplified(&p);
        assert_eq!(shape(&out), ["a: x + 0 x + 1 x + 2 x + 3 | return"]);
    }

    /// Chains listed out of order (a jumps forward to a block that jumps back) merge too.
    #[test]
    fn chains_merge_whatever_the_block_order() {
        let (mut b, f, x, _) = start();
        let a = b.block(f, "a");
        let c = b.block(f, "c");
        let bb = b.block(f, "b");
        b.prim(a, &[x], &[x], KernelId::new(0), "1");
        b.goto(a, bb);
        b.prim(bb, &[x], &[x], KernelId::new(0), "2");
        b.goto(bb, c);
        b.prim(c, &[x], &[x], KernelId::new(0), "3");
        b.ret(c);
        let out = simplified(&b.finish(f).unwrap());
        assert_eq!(shape(&out), ["a: 1 2 3 | return"]);
    }

    #[test]
    fn a_diamond_does_not_merge_but_its_join_chain_does() {
        let (mut b, f, x, c) = start();
        let names = ["entry", "then", "else", "join", "tail"];
        let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
        let (entry, then_, else_, join, tail) = (bl[0], bl[1], bl[2], bl[3], bl[4]);
        b.prim(entry, &[c], &[x], KernelId::new(0), "x > 0");
        b.branch(entry, c, then_, else_);
        b.prim(then_, &[x], &[x], KernelId::new(1), "x - 1");
        b.goto(then_, join);
        b.pop(else_, &[c]);
        b.goto(else_, join);
        b.prim(join, &[x], &[x], KernelId::new(2), "x * 2");
        b.goto(join, tail);
        b.prim(tail, &[x], &[x], KernelId::new(3), "x + 7");
        b.ret(tail);
        let out = simplified(&b.finish(f).unwrap());
        assert_eq!(
            shape(&out),
            [
                "entry: x > 0 | branch then else",
                "then: x - 1 | goto join",
                "else: pop1 | goto join",
                "join: x * 2 x + 7 | return",
            ]
        );
    }

    #[test]
    fn loops_keep_their_header_and_merge_around_it() {
        let (mut b, f, x, c) = start();
        let names = ["entry", "head", "body", "body2", "exit", "after"];
        let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
        let (entry, head, body, body2, exit, after) = (bl[0], bl[1], bl[2], bl[3], bl[4], bl[5]);
        b.prim(entry, &[x], &[x], KernelId::new(0), "x + 1");
        b.goto(entry, head);
        b.prim(head, &[c], &[x], KernelId::new(1), "x > 0");
        b.branch(head, c, body, exit);
        b.prim(body, &[x], &[x], KernelId::new(2), "x - 1");
        b.goto(body, body2);
        b.prim(body2, &[x], &[x], KernelId::new(3), "x - 2");
        b.goto(body2, head);
        b.prim(exit, &[x], &[x], KernelId::new(4), "x * 3");
        b.goto(exit, after);
        b.ret(after);
        let out = simplified(&b.finish(f).unwrap());
        assert_eq!(
            shape(&out),
            [
                "entry: x + 1 | goto head",
                "head: x > 0 | branch body exit",
                "body: x - 1 x - 2 | goto head",
                "exit: x * 3 | return",
            ]
        );
    }

    #[test]
    fn jumps_thread_through_blocks_that_only_jump_or_return() {
        let (mut b, f, x, c) = start();
        let names = ["entry", "then", "else", "hop", "out", "spin"];
        let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
        let (entry, then_, else_, hop, out, spin) = (bl[0], bl[1], bl[2], bl[3], bl[4], bl[5]);
        b.prim(entry, &[c], &[x], KernelId::new(0), "x > 0");
        b.branch(entry, c, then_, else_);
        b.prim(then_, &[x], &[x], KernelId::new(1), "x - 1");
        b.goto(then_, hop);
        b.prim(else_, &[x], &[x], KernelId::new(2), "x + 1");
        b.goto(else_, hop);
        b.goto(hop, out);
        b.ret(out);
        // An empty self-loop is never threaded (a lane that gets there spins, as before).
        b.goto(spin, spin);
        let p = b.finish(f).unwrap();
        let out = simplified(&p);
        assert_eq!(
            shape(&out),
            [
                "entry: x > 0 | branch then else",
                "then: x - 1 | return",
                "else: x + 1 | return",
            ]
        );

        let (mut b, f, x, c) = start();
        let names = ["entry", "then", "else", "spin"];
        let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
        b.prim(bl[0], &[c], &[x], KernelId::new(0), "x > 0");
        b.branch(bl[0], c, bl[1], bl[2]);
        b.goto(bl[1], bl[3]);
        b.ret(bl[2]);
        b.goto(bl[3], bl[3]);
        let out = simplified(&b.finish(f).unwrap());
        assert_eq!(
            shape(&out),
            [
                "entry: x > 0 | branch then else",
                "then:  | goto spin",
                "else:  | return",
                "spin:  | goto spin",
            ]
        );
    }

    /// `if c { x -= 1 }` as generated: the empty `else` arm only jumps to the join, so the
    /// branch goes to the join directly (which then has two predecessors and stays).
    #[test]
    fn branch_arms_skip_blocks_that_only_jump() {
        let (mut b, f, x, c) = start();
        let names = ["entry", "then", "else", "join"];
        let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
        let (entry, then_, else_, join) = (bl[0], bl[1], bl[2], bl[3]);
        b.prim(entry, &[c], &[x], KernelId::new(0), "x > 0");
        b.branch(entry, c, then_, else_);
        b.prim(then_, &[x], &[x], KernelId::new(1), "x - 1");
        b.goto(then_, join);
        b.goto(else_, join);
        b.prim(join, &[x], &[x], KernelId::new(2), "x * 2");
        b.ret(join);
        let out = simplified(&b.finish(f).unwrap());
        assert_eq!(
            shape(&out),
            [
                "entry: x > 0 | branch then join",
                "then: x - 1 | goto join",
                "join: x * 2 | return",
            ]
        );
    }

    /// A cycle of blocks that only jump is never threaded around (a lane there loops forever,
    /// before and after); merging still shortens it, to one block that jumps to itself.
    #[test]
    fn a_cycle_of_empty_gotos_keeps_looping() {
        let (mut b, f, x, _) = start();
        let names = ["entry", "r", "s", "t"];
        let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
        b.prim(bl[0], &[x], &[x], KernelId::new(0), "x + 1");
        b.goto(bl[0], bl[1]);
        b.goto(bl[1], bl[2]);
        b.goto(bl[2], bl[3]);
        b.goto(bl[3], bl[2]);
        let out = simplified(&b.finish(f).unwrap());
        assert_eq!(shape(&out), ["entry: x + 1 | goto s", "s:  | goto s"]);
    }

    /// Lowered calls: the callee's entry and the return address are reached through
    /// `push_goto` / `indirect_jump`, so they are never merged into a predecessor, even one
    /// that jumps to them; a block holding only `indirect_jump` is threaded into its `goto`s.
    #[test]
    fn lowered_call_targets_and_return_addresses_survive() {
        let (mut b, f, x, c) = start();
        let names = ["entry", "callee", "callee_more", "leave", "ret", "ret_more"];
        let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
        let (entry, callee, more, leave, ret, ret_more) =
            (bl[0], bl[1], bl[2], bl[3], bl[4], bl[5]);
        b.prim(entry, &[x], &[x], KernelId::new(0), "x + 1");
        b.push_goto(entry, ret, callee);
        b.prim(callee, &[c], &[x], KernelId::new(1), "x > 0");
        b.branch(callee, c, more, leave);
        b.prim(more, &[x], &[x], KernelId::new(2), "x - 1");
        b.goto(more, leave);
        b.indirect_goto(leave);
        b.prim(ret, &[x], &[x], KernelId::new(3), "x * 2");
        b.goto(ret, ret_more);
        b.prim(ret_more, &[x], &[x], KernelId::new(4), "x * 3");
        b.ret(ret_more);
        let p = b.finish_lowered(f).unwrap();
        let out = simplified(&p);
        assert_eq!(
            shape(&out),
            [
                "entry: x + 1 | push_goto ret callee",
                "callee: x > 0 | branch callee_more leave",
                "callee_more: x - 1 | indirect_jump",
                "leave:  | indirect_jump",
                "ret: x * 2 x * 3 | return",
            ]
        );

        // A `goto` to a call target or a return address (a tail call, a loop back) keeps it.
        let (mut b, f, x, c) = start();
        let names = ["entry", "body", "ret", "exit"];
        let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
        let (entry, body, ret, exit) = (bl[0], bl[1], bl[2], bl[3]);
        b.prim(entry, &[c], &[x], KernelId::new(0), "x > 0");
        b.branch(entry, c, body, exit);
        b.prim(body, &[x], &[x], KernelId::new(1), "x - 1");
        b.push_goto(body, ret, entry);
        b.prim(ret, &[x], &[x], KernelId::new(2), "x * 2");
        b.indirect_goto(ret);
        b.prim(exit, &[x], &[x], KernelId::new(3), "x * 3");
        b.goto(exit, ret);
        let p = b.finish_lowered(f).unwrap();
        let out = simplified(&p);
        assert_eq!(
            shape(&out),
            [
                "entry: x > 0 | branch body exit",
                "body: x - 1 | push_goto ret entry",
                "ret: x * 2 | indirect_jump",
                "exit: x * 3 | goto ret",
            ]
        );
    }

    /// A lowered loop back to the entry block (it has one predecessor) never merges it away.
    #[test]
    fn the_entry_block_is_never_merged_away() {
        let (mut b, f, x, c) = start();
        let names = ["entry", "again", "done"];
        let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
        b.prim(bl[0], &[c], &[x], KernelId::new(0), "x > 0");
        b.branch(bl[0], c, bl[1], bl[2]);
        b.prim(bl[1], &[x], &[x], KernelId::new(1), "x - 1");
        b.goto(bl[1], bl[0]);
        b.ret(bl[2]);
        let p = b.finish_lowered(f).unwrap();
        assert_eq!(simplified(&p), p);
    }

    /// Blocks of every function are renumbered; entries stay first, and a call's callee keeps
    /// its (now renumbered) blocks.
    #[test]
    fn every_function_is_simplified_and_renumbered() {
        let mut b = ProgramBuilder::new();
        let x = b.var("x", Type::I64);
        let y = b.var("y", Type::I64);
        let g = b.function("g");
        b.signature(g, &[x], &[y]);
        let g0 = b.block(g, "g_entry");
        let g1 = b.block(g, "g_tail");
        let g2 = b.block(g, "g_return");
        b.prim(g0, &[y], &[x], KernelId::new(0), "x + 1");
        b.goto(g0, g1);
        b.prim(g1, &[y], &[y], KernelId::new(1), "y + 1");
        b.goto(g1, g2);
        b.ret(g2);
        let main = b.function("main");
        b.signature(main, &[x], &[y]);
        let m0 = b.block(main, "main_entry");
        let m1 = b.block(main, "main_return");
        b.call(m0, g, &[x], &[y]);
        b.goto(m0, m1);
        b.ret(m1);
        let p = b.finish(main).unwrap();
        let out = simplified(&p);
        assert_eq!(out.blocks.len(), 2);
        assert_eq!(out.function(g).blocks, [Block::new(0)]);
        assert_eq!(out.function(main).blocks, [Block::new(1)]);
        assert_eq!(out.block(Block::new(0)).name, "g_entry");
        assert_eq!(shape(&out), ["main_entry: call | return"]);
        assert_eq!(out.block(Block::new(0)).ops.len(), 2);
    }

    #[test]
    fn conformance_programs_and_their_lowered_forms_verify() {
        let highs = conformance::control_flow_programs();
        for high in &highs {
            let high = allocate(high);
            let simple = simplified(&high);
            for low in [lower(&high).unwrap(), lower(&simple).unwrap()] {
                let out = simplified(&low);
                assert!(out.blocks.len() <= low.blocks.len());
                fuse_pop_push(&out).unwrap();
            }
        }
        for low in [
            conformance::fibonacci_program(&mut numbering()),
            conformance::pea_nuts_program(&mut numbering()),
        ] {
            simplified(&low);
        }
    }

    #[test]
    fn an_invalid_program_is_returned_unchanged() {
        let mut p = conformance::gcd(&mut numbering());
        p.blocks[0].term = Terminator::Goto(Block::new(999));
        assert_eq!(simplify_blocks(&p), p);
    }

    // -----------------------------------------------------------------------------------------
    // Random control-flow graphs: a lane runs the same ops in the same order either way.
    // -----------------------------------------------------------------------------------------

    use crate::passes::testing::Rng;

    /// A random one-function program over `x` (ops are `x = prim(x)` with distinct sources and
    /// pops of `c`); lowered programs also get `push_goto` and `indirect_jump`.
    fn random_program(rng: &mut Rng, form: Form) -> Program {
        let (mut b, f, x, c) = start();
        let n = 2 + rng.below(9);
        let bl: Vec<Block> = (0..n).map(|i| b.block(f, &format!("b{i}"))).collect();
        let mut op = 0;
        // The condition is written first, so it is defined on every path.
        b.prim(bl[0], &[c], &[x], KernelId::new(0), "cond");
        for &blk in &bl {
            for _ in 0..rng.below(3) {
                op += 1;
                if rng.below(4) == 0 {
                    b.pop(blk, &[c]);
                }
                b.prim(blk, &[x], &[x], KernelId::new(1), &format!("op{op}"));
            }
            // High-level jumps may not target the entry block.
            let target = |rng: &mut Rng| match form {
                Form::High => bl[1 + rng.below(n - 1)],
                Form::Lowered => bl[rng.below(n)],
            };
            // Gotos are the most common terminator, as in generated code.
            let kinds = if form == Form::High { 3 } else { 5 };
            match rng.below(kinds + 3) {
                1 => {
                    let (t, e) = (target(rng), target(rng));
                    b.branch(blk, c, t, e);
                }
                2 => b.ret(blk),
                3 if form == Form::Lowered => {
                    let (r, t) = (target(rng), target(rng));
                    b.push_goto(blk, r, t);
                }
                4 if form == Form::Lowered => b.indirect_goto(blk),
                _ => {
                    let t = target(rng);
                    b.goto(blk, t);
                }
            }
        }
        match form {
            Form::High => b.finish(f).unwrap(),
            Form::Lowered => b.finish_lowered(f).unwrap(),
        }
    }

    #[derive(Debug, PartialEq)]
    enum End {
        Halted,
        Limit,
    }

    /// Runs one lane: records every op (sources, and `pop` for pops); branches follow a hash of
    /// the ops run so far, so both programs decide alike exactly when they ran the same ops.
    fn trace(p: &Program) -> (Vec<String>, End) {
        let mut ops = Vec::new();
        let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut returns: Vec<Block> = Vec::new();
        let mut at = p.main_function().entry();
        for _ in 0..2_000 {
            let data = p.block(at);
            for op in &data.ops {
                let text = match op {
                    Op::Prim(prim) => prim.source.clone(),
                    _ => "pop".to_string(),
                };
                for byte in text.bytes() {
                    state = (state ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
                }
                ops.push(text);
                if ops.len() >= 300 {
                    return (ops, End::Limit);
                }
            }
            at = match &data.term {
                Terminator::Goto(t) => *t,
                Terminator::Branch { then_, else_, .. } => {
                    if (state >> 33) & 1 == 1 {
                        *then_
                    } else {
                        *else_
                    }
                }
                Terminator::Return => return (ops, End::Halted),
                Terminator::PushGoto { ret, target } => {
                    if returns.len() >= 100 {
                        return (ops, End::Limit);
                    }
                    returns.push(*ret);
                    *target
                }
                Terminator::IndirectGoto => match returns.pop() {
                    Some(r) => r,
                    None => return (ops, End::Halted),
                },
            };
        }
        (ops, End::Limit)
    }

    #[test]
    fn random_programs_run_the_same_ops_in_fewer_or_equal_blocks() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let mut merged = 0;
        for case in 0..3_000 {
            let form = if case % 2 == 0 {
                Form::High
            } else {
                Form::Lowered
            };
            let p = random_program(&mut rng, form);
            let out = simplified(&p);
            assert!(out.blocks.len() <= p.blocks.len());
            merged += p.blocks.len() - out.blocks.len();
            let (before, end_before) = trace(&p);
            let (after, end_after) = trace(&out);
            if end_before == End::Halted || end_after == End::Halted {
                assert_eq!(
                    (&before, &end_before),
                    (&after, &end_after),
                    "case {case}\n{p}\n{out}"
                );
            } else {
                let k = before.len().min(after.len());
                assert_eq!(before[..k], after[..k], "case {case}\n{p}\n{out}");
            }
        }
        assert!(merged > 1_000, "the generator exercises the pass: {merged}");
    }
}

//! Block priority ordering for the full VM (notes section 5.1).

use crate::program::{Form, Op, Program, Terminator};
use crate::Block;

/// The block's weight: 0 if it holds no primitive op (only pops, or nothing), else 1.
fn weight(program: &Program, b: Block) -> u8 {
    let has_prim = program
        .block(b)
        .ops
        .iter()
        .any(|op| matches!(op, Op::Prim(_) | Op::Call(_)));
    u8::from(has_prim)
}

/// Reorders a lowered program's blocks; returns a new program.
///
/// The VM runs the lowest-numbered block holding any lane, so cheap blocks should come early.
/// The entry block stays first; the other blocks (in the entry function's order) are
/// stable-sorted by weight: blocks without primitive ops (only pops, or empty) first, then the
/// rest. Every block reference is renumbered so that `Block(i)` is the `i`-th block of the
/// new order; names are kept. A high-level program is returned unchanged (its functions' block
/// orders are not the VM's schedule).
pub fn prioritize_blocks(program: &Program) -> Program {
    if program.form != Form::Lowered {
        return program.clone();
    }
    // Current order: the entry function's blocks, then any block it does not list.
    let mut order: Vec<Block> = program
        .functions
        .get(program.main.index())
        .map(|f| f.blocks.clone())
        .unwrap_or_default();
    let mut listed = vec![false; program.blocks.len()];
    order.retain(|b| {
        let ok = b.index() < listed.len() && !listed[b.index()];
        if ok {
            listed[b.index()] = true;
        }
        ok
    });
    order.extend(
        (0..program.blocks.len())
            .filter(|&i| !listed[i])
            .map(Block::new),
    );
    if order.len() > 1 {
        order[1..].sort_by_key(|&b| weight(program, b));
    }
    let mut new_index = vec![Block(0); program.blocks.len()];
    for (i, b) in order.iter().enumerate() {
        new_index[b.index()] = Block::new(i);
    }
    let remap = |b: Block| new_index.get(b.index()).copied().unwrap_or(b);
    let mut out = program.clone();
    out.blocks = order
        .iter()
        .map(|&b| {
            let mut data = program.block(b).clone();
            data.term = match data.term {
                Terminator::Goto(t) => Terminator::Goto(remap(t)),
                Terminator::Branch { cond, then_, else_ } => Terminator::Branch {
                    cond,
                    then_: remap(then_),
                    else_: remap(else_),
                },
                Terminator::PushGoto { ret, target } => Terminator::PushGoto {
                    ret: remap(ret),
                    target: remap(target),
                },
                t @ (Terminator::Return | Terminator::IndirectGoto) => t,
            };
            data
        })
        .collect();
    for (fi, f) in out.functions.iter_mut().enumerate() {
        if fi == program.main.index() {
            f.blocks = (0..order.len()).map(Block::new).collect();
        } else {
            f.blocks = f.blocks.iter().map(|&b| remap(b)).collect();
        }
    }
    out
}

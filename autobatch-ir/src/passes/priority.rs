//! Block priority ordering for the full VM (notes section 5.1).

use crate::program::{Form, Op, PrimOp, Program};
use crate::Block;

/// The block's weight: 0 if it holds no primitive op (only pops, or nothing), 2 if it holds
/// a deferred op, else 1.
fn weight(program: &Program, b: Block, defer: &dyn Fn(&PrimOp) -> bool) -> u8 {
    let ops = &program.block(b).ops;
    if ops
        .iter()
        .any(|op| matches!(op, Op::Prim(prim) if defer(prim)))
    {
        return 2;
    }
    u8::from(ops.iter().any(|op| matches!(op, Op::Prim(_) | Op::Call(_))))
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
    prioritize_blocks_deferring(program, |_| false)
}

/// Like [`prioritize_blocks`], also moving the blocks that hold an op for which `defer` is true
/// after all others (stably). For an expensive batched kernel (a GEMM gradient) this makes the
/// VM run every cheaper block first, so lanes gather at the kernel and each call computes as
/// many lanes as possible: scheduling only, the result of every lane is unchanged.
pub fn prioritize_blocks_deferring(program: &Program, defer: impl Fn(&PrimOp) -> bool) -> Program {
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
        order[1..].sort_by_key(|&b| weight(program, b, &defer));
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
            data.term = data.term.map_blocks(remap);
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

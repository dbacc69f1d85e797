//! Block priority ordering for the full VM (docs/reference-semantics.md, "Block priority").

use crate::program::{Op, PrimOp, Program};
use crate::verified::LoweredProgram;
use crate::verify::trusted;
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
/// new order; names are kept.
pub fn prioritize_blocks(program: &LoweredProgram) -> LoweredProgram {
    prioritize_blocks_deferring(program, |_| false)
}

/// Like [`prioritize_blocks`], also moving the blocks that hold an op for which `defer` is true
/// after all others (stably). For an expensive batched kernel (a GEMM gradient) this makes the
/// VM run every cheaper block first, so lanes gather at the kernel and each call computes as
/// many lanes as possible: scheduling only, the result of every lane is unchanged.
pub fn prioritize_blocks_deferring(
    program: &LoweredProgram,
    defer: impl Fn(&PrimOp) -> bool,
) -> LoweredProgram {
    // Current order: the entry function's blocks (in a verified lowered program, its only
    // function, listing every block once).
    let mut order: Vec<Block> = program.main_function().blocks.clone();
    if order.len() > 1 {
        order[1..].sort_by_key(|&b| weight(program, b, &defer));
    }
    let mut new_index = vec![Block::new(0); program.blocks.len()];
    for (i, b) in order.iter().enumerate() {
        new_index[b.index()] = Block::new(i);
    }
    let remap = |b: Block| new_index[b.index()];
    let mut out: Program = (**program).clone();
    out.blocks = order
        .iter()
        .map(|&b| {
            let mut data = program.block(b).clone();
            data.term = data.term.map_blocks(remap);
            data
        })
        .collect();
    for f in out.functions.iter_mut() {
        f.blocks = f.blocks.iter().map(|&b| remap(b)).collect();
    }
    out.functions[program.main].blocks = (0..order.len()).map(Block::new).collect();
    trusted(out)
}

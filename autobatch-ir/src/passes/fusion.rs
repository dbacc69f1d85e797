//! Pop-push fusion (docs/reference-semantics.md, "Pop-push fusion"): a pop followed by a write
//! of the same variable becomes an in-place update.

use crate::program::{Op, PrimOp};
use crate::verified::LoweredProgram;
use crate::verify::trusted;
use crate::Var;

/// Fuses pops with following writes into in-place updates; returns a new program.
///
/// Per block, pops are deferred: a pending pop of `v` followed by a write of `v` becomes an
/// in-place write (`v!`) and the pop disappears; a read of a pending `v` (or an in-place write
/// of it the input already had) first emits `pop(v)`; a second pop of a pending `v` emits one
/// pop at once and keeps the other pending. Pops still pending at the end of the block are
/// emitted, in the order they were deferred, before the terminator. Blocks are independent.
pub fn fuse_pop_push(program: &LoweredProgram) -> LoweredProgram {
    let mut out = (**program).clone();
    for block in &mut out.blocks {
        let mut waiting: Vec<Var> = Vec::new();
        let mut ops = Vec::with_capacity(block.ops.len());
        for op in &block.ops {
            match op {
                Op::Prim(prim) => {
                    for v in &prim.ins {
                        if let Some(k) = waiting.iter().position(|w| w == v) {
                            waiting.remove(k);
                            ops.push(Op::Pop(vec![*v]));
                        }
                    }
                    let mut in_place = Vec::with_capacity(prim.outs.len());
                    for v in &prim.outs {
                        let given = prim.is_in_place(*v);
                        let pending = waiting.iter().position(|w| w == v);
                        match (pending, given) {
                            (Some(k), false) => {
                                // pop + push == update of the top frame.
                                waiting.remove(k);
                                in_place.push(*v);
                            }
                            (Some(k), true) => {
                                // Already an update: it must see the frame under the pop.
                                waiting.remove(k);
                                ops.push(Op::Pop(vec![*v]));
                                in_place.push(*v);
                            }
                            (None, true) => in_place.push(*v),
                            (None, false) => {}
                        }
                    }
                    ops.push(Op::Prim(PrimOp {
                        in_place,
                        ..prim.clone()
                    }));
                }
                Op::Pop(vars) => {
                    for v in vars {
                        if waiting.contains(v) {
                            ops.push(Op::Pop(vec![*v]));
                        } else {
                            waiting.push(*v);
                        }
                    }
                }
                // A verified lowered program has no calls.
                Op::Call(_) => ops.push(op.clone()),
            }
        }
        if !waiting.is_empty() {
            ops.push(Op::Pop(waiting));
        }
        block.ops = ops;
    }
    trusted(out)
}

//! Pop-push fusion (notes section 4): a pop followed by a write of the same variable becomes an
//! in-place update.

use crate::program::{Form, Op, PrimOp, Program};
use crate::Var;
use thiserror::Error;

/// Why pop-push fusion refused a program.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum FusionError {
    /// The program still has functions and calls; fusion runs on lowered programs.
    #[error("pop-push fusion needs a lowered program")]
    NotLowered,
    /// A call op in a block (pop-push fusion is not defined before lowering).
    #[error("block `{block}`: pop-push fusion is not implemented for call ops")]
    Call {
        /// The block holding the call.
        block: String,
    },
}

/// Fuses pops with following writes into in-place updates; returns a new program.
///
/// Per block, pops are deferred: a pending pop of `v` followed by a write of `v` becomes an
/// in-place write (`v!`) and the pop disappears; a read of a pending `v` (or an in-place write
/// of it the input already had) first emits `pop(v)`; a second pop of a pending `v` emits one
/// pop at once and keeps the other pending. Pops still pending at the end of the block are
/// emitted, in the order they were deferred, before the terminator. Blocks are independent.
pub fn fuse_pop_push(program: &Program) -> Result<Program, FusionError> {
    if program.form != Form::Lowered {
        return Err(FusionError::NotLowered);
    }
    let mut out = program.clone();
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
                    for (j, v) in prim.outs.iter().enumerate() {
                        let given = prim.in_place.get(j).copied().unwrap_or(false);
                        let pending = waiting.iter().position(|w| w == v);
                        match (pending, given) {
                            (Some(k), false) => {
                                // pop + push == update of the top frame.
                                waiting.remove(k);
                                in_place.push(true);
                            }
                            (Some(k), true) => {
                                // Already an update: it must see the frame under the pop.
                                waiting.remove(k);
                                ops.push(Op::Pop(vec![*v]));
                                in_place.push(true);
                            }
                            (None, given) => in_place.push(given),
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
                Op::Call(_) => {
                    return Err(FusionError::Call {
                        block: block.name.clone(),
                    })
                }
            }
        }
        if !waiting.is_empty() {
            ops.push(Op::Pop(waiting));
        }
        block.ops = ops;
    }
    Ok(out)
}

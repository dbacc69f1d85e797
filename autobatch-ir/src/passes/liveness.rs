//! Liveness over control-flow graphs with loops, by fixpoint iteration.
//!
//! A write kills a variable; a read (including a `pop`, as in the reference) makes it live.
//! A block that leaves its function (`return`) has the function's return variables live out.
//! In a lowered program (one function) a `push_goto` has live out what its target and its
//! return address have live in, and an `indirect_jump` what any return address has live in
//! (and the program's outputs, for a lane that halts). Unlike the reference, back edges are
//! fine: the analysis iterates to a fixpoint instead of rejecting them.

use crate::program::{Op, Program, Terminator};
use crate::{Block, EntityVec, Var};
use std::collections::BTreeSet;

/// A set of variables, ordered for deterministic output.
pub type VarSet = BTreeSet<Var>;

/// Liveness facts for one block.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockLiveness {
    /// Live on entry to the block.
    pub live_in: VarSet,
    /// `after_op[i]`: live just after op `i` (the last one includes a branch condition).
    pub after_op: Vec<VarSet>,
    /// Live on exit from the block (the union of the successors' `live_in`).
    pub live_out: VarSet,
}

/// Liveness facts for every block of a program, indexed by [`Block`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Liveness {
    /// Per-block facts, indexed by block.
    pub blocks: EntityVec<Block, BlockLiveness>,
}

impl Liveness {
    /// The facts of block `b`.
    pub fn block(&self, b: Block) -> &BlockLiveness {
        &self.blocks[b]
    }

    /// Variables live after op `i` of block `b`.
    pub fn after_op(&self, b: Block, i: usize) -> &VarSet {
        &self.blocks[b].after_op[i]
    }

    /// Variables live just before the terminator of `b` (a branch condition included).
    pub fn before_terminator(&self, program: &Program, b: Block) -> VarSet {
        let facts = self.block(b);
        let mut live = facts.live_out.clone();
        if let Terminator::Branch { cond, .. } = program.block(b).term {
            live.insert(cond);
        }
        live
    }
}

/// Computes liveness for every block of every function of `program`.
pub fn liveness(program: &Program) -> Liveness {
    let mut facts: EntityVec<Block, BlockLiveness> = program
        .blocks
        .iter()
        .map(|_| BlockLiveness::default())
        .collect();
    // Where an `indirect_jump` may continue: every return address.
    let mut returns_to: Vec<Block> = program
        .blocks
        .iter()
        .filter_map(|b| match b.term {
            Terminator::PushGoto { ret, .. } => Some(ret),
            _ => None,
        })
        .collect();
    returns_to.sort_unstable();
    returns_to.dedup();
    for func in &program.functions {
        let exit: VarSet = func.returns.iter().copied().collect();
        loop {
            let mut changed = false;
            for &b in func.blocks.iter().rev() {
                let block = program.block(b);
                let live_in_of =
                    |t: Block, facts: &EntityVec<Block, BlockLiveness>| facts[t].live_in.clone();
                let live_out: VarSet = match &block.term {
                    Terminator::Goto(t) => live_in_of(*t, &facts),
                    Terminator::Branch { then_, else_, .. } => {
                        let mut s = live_in_of(*then_, &facts);
                        s.extend(live_in_of(*else_, &facts));
                        s
                    }
                    Terminator::PushGoto { ret, target } => {
                        let mut s = live_in_of(*target, &facts);
                        s.extend(live_in_of(*ret, &facts));
                        s
                    }
                    Terminator::Return => exit.clone(),
                    Terminator::IndirectGoto => {
                        let mut s = exit.clone();
                        for &r in &returns_to {
                            s.extend(live_in_of(r, &facts));
                        }
                        s
                    }
                };
                let mut live = live_out.clone();
                if let Terminator::Branch { cond, .. } = block.term {
                    live.insert(cond);
                }
                let mut after_op = vec![VarSet::new(); block.ops.len()];
                for (i, op) in block.ops.iter().enumerate().rev() {
                    after_op[i] = live.clone();
                    transfer(op, &mut live);
                }
                let entry = &mut facts[b];
                if entry.live_in != live || entry.live_out != live_out {
                    changed = true;
                }
                *entry = BlockLiveness {
                    live_in: live,
                    after_op,
                    live_out,
                };
            }
            if !changed {
                break;
            }
        }
    }
    Liveness { blocks: facts }
}

/// Backward transfer of one op: kill its writes, then add its reads.
pub fn transfer(op: &Op, live: &mut VarSet) {
    for v in op.writes() {
        live.remove(v);
    }
    live.extend(op.reads().iter().copied());
}

/// Liveness as the full VM sees a lowered program: a pop of a variable that is not FULL has no
/// saved frame to restore, so it neither reads nor writes the value (lowering's liveness,
/// [`liveness`], counts every pop as a use). A loop's condition popped on its edges is then
/// read by its branch alone.
pub fn stacked_liveness(program: &Program) -> Liveness {
    let mut popless = program.clone();
    for data in popless.blocks.iter_mut() {
        for op in &mut data.ops {
            if let Op::Pop(vars) = op {
                vars.retain(|&v| program.var(v).alloc == crate::Allocation::Full);
            }
        }
    }
    liveness(&popless)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KernelId, ProgramBuilder, Type};

    fn set(vars: &[Var]) -> VarSet {
        vars.iter().copied().collect()
    }

    /// `countdown(n) { while n > 0 { n -= 1; acc += 2 } return acc }` with the loop header
    /// *before* the body in block order, so a single reverse pass would miss the back edge.
    #[test]
    fn loops_reach_a_fixpoint() {
        let mut b = ProgramBuilder::new();
        let n = b.var("n", Type::I64);
        let acc = b.var("acc", Type::I64);
        let c = b.var("c", Type::BOOL);
        let f = b.function("countdown");
        b.signature(f, &[n, acc], &[acc]);
        let entry = b.block(f, "entry");
        let head = b.block(f, "head");
        let body = b.block(f, "body");
        let exit = b.block(f, "exit");
        b.goto(entry, head);
        b.prim(head, &[c], &[n], KernelId::new(0), "n > 0");
        b.branch(head, c, body, exit);
        b.prim(body, &[n], &[n], KernelId::new(1), "n - 1");
        b.prim(body, &[acc], &[acc], KernelId::new(2), "acc + 2");
        b.goto(body, head);
        b.ret(exit);
        let p = b.finish(f).unwrap();
        let l = liveness(&p);
        // `n` is live into the exit-bound header only because the body loops back to it.
        assert_eq!(l.block(head).live_in, set(&[n, acc]));
        assert_eq!(l.block(body).live_out, set(&[n, acc]));
        assert_eq!(l.block(body).live_in, set(&[n, acc]));
        assert_eq!(l.block(exit).live_in, set(&[acc]));
        assert_eq!(l.after_op(head, 0), &set(&[n, acc, c]));
        assert_eq!(l.block(entry).live_in, set(&[n, acc]));
    }

    /// A lowered program: `main` pushes a return address and jumps into `g`'s blocks, whose
    /// `indirect_jump` comes back there. `g`'s result is read at the return address, so it is
    /// live out of the block that computes it and jumps back.
    #[test]
    fn indirect_jumps_reach_every_return_address() {
        let mut b = ProgramBuilder::new();
        let x = b.var("x", Type::I64);
        let y = b.var("y", Type::I64);
        let a = b.var("g.a", Type::I64);
        let r = b.var("g.r", Type::I64);
        let main = b.function("main");
        b.signature(main, &[x], &[y]);
        let call = b.block(main, "call");
        let back = b.block(main, "back");
        let g = b.block(main, "g");
        b.assign(call, &[a], &[x]);
        b.push_goto(call, back, g);
        b.assign(back, &[y], &[r]);
        b.ret(back);
        b.prim(g, &[r], &[a], KernelId::new(0), "a + 1");
        b.indirect_goto(g);
        let p = b.finish_lowered(main).unwrap();
        let l = liveness(&p);
        assert_eq!(l.block(g).live_out, set(&[y, r]));
        assert_eq!(l.block(g).live_in, set(&[y, a]));
        assert_eq!(l.block(call).live_out, set(&[y, a, r]));
    }

    #[test]
    fn pops_count_as_uses_and_writes_kill() {
        let mut b = ProgramBuilder::new();
        let x = b.var("x", Type::I64);
        let y = b.var("y", Type::I64);
        let f = b.function("f");
        b.signature(f, &[x], &[y]);
        let e = b.block(f, "e");
        b.prim(e, &[y], &[x], KernelId::new(0), "x");
        b.pop(e, &[x]);
        b.ret(e);
        let p = b.finish(f).unwrap();
        let l = liveness(&p);
        assert_eq!(l.after_op(e, 0), &set(&[x, y]));
        assert_eq!(l.block(e).live_in, set(&[x]));
    }
}

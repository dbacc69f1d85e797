//! Lowering of calls to the flat CFG the full VM runs (docs/reference-semantics.md, "Lowering
//! calls", with our fixes).
//!
//! Every variable is treated as a stack. The lowered program keeps one invariant: at every
//! point of a function body, the set of variables holding a frame that belongs to the current
//! activation (the *defined* set) equals the live set computed by
//! [`liveness`](crate::passes::liveness()). So each function body pops its parameters once,
//! pushes its return variables once, and leaves every other stack as it found it.
//!
//! Differences from the reference (on purpose):
//!
//! * a write to an already-defined variable (`x = x + 1`, loop-carried variables) is emitted
//!   in place instead of being rejected;
//! * the argument copy of a call is one simultaneous assign whose formals that the caller no
//!   longer needs are written in place, so swapped arguments (`gcd(b, a % b)`) need no
//!   temporaries;
//! * variables delivered along a branch edge but dead in the target are popped at the start
//!   of the target (single predecessor) or in a pad block on that edge (several predecessors),
//!   so loops keep the defined set consistent.

use crate::passes::allocation::is_tail_call;
use crate::passes::liveness::{liveness, Liveness, VarSet};
use crate::program::{BlockData, FunctionData, KernelRef, Op, PrimOp, Program, Terminator};
use crate::verified::{HighProgram, LoweredProgram};
use crate::verify::{trusted, Location, VerifyError, VerifyErrors};
use crate::{Block, FuncId, Var};
use std::collections::{HashMap, HashSet};

/// A jump target during lowering: an original block (its first piece) or a piece of the
/// current block's group.
#[derive(Clone, Copy, Debug)]
enum Tgt {
    Orig(Block),
    Piece(usize),
}

/// A terminator over [`Tgt`] targets.
#[derive(Clone, Debug)]
enum PTerm {
    Goto(Tgt),
    Branch { cond: Var, then_: Tgt, else_: Tgt },
    Return,
    PushGoto { ret: Tgt, target: Tgt },
    IndirectGoto,
}

/// One block of the output, before block numbers are assigned.
#[derive(Debug)]
struct Piece {
    name: String,
    ops: Vec<Op>,
    term: PTerm,
}

/// Hands out block names not used anywhere in the program so far.
struct Names {
    used: HashSet<String>,
}

impl Names {
    fn fresh(&mut self, base: &str) -> String {
        let mut name = base.to_string();
        let mut k = 1;
        while self.used.contains(&name) {
            name = format!("{base}_{k}");
            k += 1;
        }
        self.used.insert(name.clone());
        name
    }
}

fn pop_op(vars: &VarSet) -> Op {
    Op::Pop(vars.iter().copied().collect())
}

/// The assignment `outs = ins`, writing in place each output whose `in_place` flag is set.
fn assign_op(outs: Vec<Var>, ins: Vec<Var>, in_place: Vec<bool>) -> Op {
    let in_place = outs
        .iter()
        .zip(in_place)
        .filter_map(|(&v, ip)| ip.then_some(v))
        .collect();
    Op::Prim(PrimOp {
        outs,
        ins,
        kernel: KernelRef::Assign,
        source: "assign".to_string(),
        in_place,
    })
}

/// Per-function lowering context.
struct Ctx<'a> {
    p: &'a Program,
    live: &'a Liveness,
    func: &'a FunctionData,
    is_main: bool,
    /// Pops to emit at the start of a block (branch edges into single-predecessor blocks).
    entry_pops: HashMap<Block, VarSet>,
    /// Predecessor edge counts within the function.
    preds: HashMap<Block, usize>,
}

impl Ctx<'_> {
    fn var_name(&self, v: Var) -> String {
        self.p.var(v).name.clone()
    }

    /// The error `message` located at block `b`.
    fn error(&self, b: Block, message: String) -> VerifyErrors {
        VerifyErrors(vec![VerifyError {
            location: Location::Block(b),
            context: Some(format!(
                "block `{}` in function `{}`",
                self.p.block(b).name,
                self.func.name
            )),
            message,
        }])
    }

    fn undefined_live(
        &self,
        b: Block,
        want: &VarSet,
        defined: &VarSet,
    ) -> Result<(), VerifyErrors> {
        if let Some(&v) = want.difference(defined).next() {
            let message = format!(
                "`{}` is live at a block boundary but not defined",
                self.var_name(v)
            );
            return Err(self.error(b, message));
        }
        Ok(())
    }

    /// Lowers block `b` into its group of pieces: the block itself, one continuation per
    /// non-tail call, then the pad blocks of its branch edges.
    fn lower_block(&self, b: Block, names: &mut Names) -> Result<Vec<Piece>, VerifyErrors> {
        let p = self.p;
        let data = p.block(b);
        let facts = self.live.block(b);
        let mut pieces: Vec<Piece> = Vec::new();
        let mut name = data.name.clone();
        let mut ops: Vec<Op> = Vec::new();
        let mut cont_count = 0usize;

        // The defined set on entry to the block.
        let mut defined: VarSet;
        if b == self.func.entry() {
            defined = self.func.params.iter().copied().collect();
            let dead: VarSet = defined.difference(&facts.live_in).copied().collect();
            if !dead.is_empty() {
                ops.push(pop_op(&dead));
                defined = defined.intersection(&facts.live_in).copied().collect();
            }
            self.undefined_live(b, &facts.live_in, &defined)?;
        } else {
            if let Some(extra) = self.entry_pops.get(&b) {
                ops.push(pop_op(extra));
            }
            defined = facts.live_in.clone();
        }

        let mut tail_goto: Option<Block> = None;
        for (i, op) in data.ops.iter().enumerate() {
            let live_after = self.live.after_op(b, i);
            if let Some(&v) = op.reads().iter().find(|v| !defined.contains(v)) {
                let var = self.var_name(v);
                return Err(self.error(
                    b,
                    match op {
                        Op::Pop(_) => format!("pop of `{var}`, which is not defined there"),
                        _ => format!("`{var}` is read but not defined there"),
                    },
                ));
            }
            match op {
                Op::Prim(prim) => {
                    let mut in_place = Vec::with_capacity(prim.outs.len());
                    for &v in &prim.outs {
                        let given = prim.is_in_place(v);
                        let is_defined = defined.contains(&v);
                        if given && !is_defined {
                            let message = format!(
                                "in-place write of `{}`, which is not defined there",
                                self.var_name(v)
                            );
                            return Err(self.error(b, message));
                        }
                        if given || is_defined {
                            in_place.push(v);
                        }
                    }
                    ops.push(Op::Prim(PrimOp {
                        in_place,
                        ..prim.clone()
                    }));
                    defined.extend(prim.outs.iter().copied());
                    let dead: VarSet = defined.difference(live_after).copied().collect();
                    if !dead.is_empty() {
                        ops.push(pop_op(&dead));
                        defined = defined.intersection(live_after).copied().collect();
                    }
                }
                Op::Pop(vars) => {
                    for v in vars {
                        let var = self.var_name(*v);
                        if !defined.remove(v) {
                            let message = format!("pop of `{var}`, which is not defined there");
                            return Err(self.error(b, message));
                        }
                        if live_after.contains(v) {
                            let message = format!("`{var}` is popped but live after the pop");
                            return Err(self.error(b, message));
                        }
                    }
                    ops.push(op.clone());
                    let dead: VarSet = defined.difference(live_after).copied().collect();
                    if !dead.is_empty() {
                        ops.push(pop_op(&dead));
                        defined = defined.intersection(live_after).copied().collect();
                    }
                }
                Op::Call(call) => {
                    if call.func == p.main {
                        let message = format!(
                            "call to the entry function `{}` (its return halts, it cannot be called)",
                            p.function(call.func).name
                        );
                        return Err(self.error(b, message));
                    }
                    let callee = p.function(call.func);
                    let outs: VarSet = call.outs.iter().copied().collect();
                    // Frames the caller gives up here: dead after the call, or overwritten by it.
                    let mut to_pop: VarSet = defined
                        .iter()
                        .copied()
                        .filter(|v| !live_after.contains(v) || outs.contains(v))
                        .collect();
                    let in_place: Vec<bool> =
                        callee.params.iter().map(|f| to_pop.contains(f)).collect();
                    for (f, &ip) in callee.params.iter().zip(&in_place) {
                        if ip {
                            to_pop.remove(f);
                        }
                    }
                    let (mut a_outs, mut a_ins, mut a_ip) = (Vec::new(), Vec::new(), Vec::new());
                    for ((&arg, &formal), &ip) in call.ins.iter().zip(&callee.params).zip(&in_place)
                    {
                        if arg == formal && ip {
                            continue;
                        }
                        a_outs.push(formal);
                        a_ins.push(arg);
                        a_ip.push(ip);
                    }
                    ops.push(assign_op(a_outs, a_ins, a_ip));
                    if !to_pop.is_empty() {
                        ops.push(pop_op(&to_pop));
                    }
                    if is_tail_call(self.p, b, i, live_after) {
                        tail_goto = Some(callee.entry());
                        break;
                    }
                    // Split: the rest of the block continues after the callee returns.
                    cont_count += 1;
                    let cont_name = names.fresh(&format!("{}_ret{cont_count}", data.name));
                    pieces.push(Piece {
                        name: std::mem::replace(&mut name, cont_name),
                        ops: std::mem::take(&mut ops),
                        term: PTerm::PushGoto {
                            ret: Tgt::Piece(pieces.len() + 1),
                            target: Tgt::Orig(callee.entry()),
                        },
                    });
                    let returns: VarSet = callee.returns.iter().copied().collect();
                    let (mut r_outs, mut r_ins, mut r_ip) = (Vec::new(), Vec::new(), Vec::new());
                    for (&out, &ret) in call.outs.iter().zip(&callee.returns) {
                        if out == ret {
                            continue;
                        }
                        r_outs.push(out);
                        r_ins.push(ret);
                        r_ip.push(returns.contains(&out));
                    }
                    if !r_outs.is_empty() {
                        ops.push(assign_op(r_outs, r_ins, r_ip));
                    }
                    let spare: VarSet = returns.difference(&outs).copied().collect();
                    if !spare.is_empty() {
                        ops.push(pop_op(&spare));
                    }
                    let unused: VarSet = outs.difference(live_after).copied().collect();
                    if !unused.is_empty() {
                        ops.push(pop_op(&unused));
                    }
                    defined = live_after.clone();
                }
            }
        }

        let term = if let Some(entry) = tail_goto {
            PTerm::Goto(Tgt::Orig(entry))
        } else {
            match &data.term {
                Terminator::Goto(t) => {
                    self.undefined_live(b, &self.live.block(*t).live_in, &defined)?;
                    PTerm::Goto(Tgt::Orig(*t))
                }
                Terminator::Return => {
                    let returns: VarSet = self.func.returns.iter().copied().collect();
                    self.undefined_live(b, &returns, &defined)?;
                    if self.is_main {
                        PTerm::Return
                    } else {
                        PTerm::IndirectGoto
                    }
                }
                Terminator::Branch { cond, then_, else_ } => {
                    let mut want = facts.live_out.clone();
                    want.insert(*cond);
                    self.undefined_live(b, &want, &defined)?;
                    let mut arm = |t: Block, pads: &mut Vec<Piece>| -> Tgt {
                        let extra: VarSet = defined
                            .difference(&self.live.block(t).live_in)
                            .copied()
                            .collect();
                        if extra.is_empty() || self.preds.get(&t).copied().unwrap_or(0) <= 1 {
                            // Single predecessor: the target pops `extra` itself.
                            return Tgt::Orig(t);
                        }
                        let pad_name =
                            names.fresh(&format!("{}_to_{}", data.name, p.block(t).name));
                        pads.push(Piece {
                            name: pad_name,
                            ops: vec![pop_op(&extra)],
                            term: PTerm::Goto(Tgt::Orig(t)),
                        });
                        Tgt::Piece(usize::MAX) // patched below
                    };
                    let mut pads = Vec::new();
                    let mut then_t = arm(*then_, &mut pads);
                    let then_pads = pads.len();
                    let mut else_t = arm(*else_, &mut pads);
                    // Pads follow the branching piece, in arm order.
                    let base = pieces.len() + 1;
                    if let Tgt::Piece(_) = then_t {
                        then_t = Tgt::Piece(base);
                    }
                    if let Tgt::Piece(_) = else_t {
                        else_t = Tgt::Piece(base + then_pads);
                    }
                    pieces.push(Piece {
                        name,
                        ops,
                        term: PTerm::Branch {
                            cond: *cond,
                            then_: then_t,
                            else_: else_t,
                        },
                    });
                    pieces.extend(pads);
                    return Ok(pieces);
                }
                Terminator::PushGoto { .. } | Terminator::IndirectGoto => {
                    unreachable!("the verifier rejects lowered terminators in high-level programs")
                }
            }
        };
        pieces.push(Piece { name, ops, term });
        Ok(pieces)
    }
}

/// Lowers every call; returns a new, single-function program.
///
/// The result has one function, the entry function (same name, parameters and returns), whose
/// blocks are numbered in flat order: the entry function's blocks, then every other function's
/// blocks in table order, with each continuation (and pad) block right after the block it came
/// from. Variables, their types and allocations are unchanged; the input is not modified.
///
/// Fails, with the block at fault, on what the verifier does not check because only the
/// lowering's stack discipline needs it: a call to the entry function (whose `return` halts
/// the lane), and explicit pops or in-place writes that do not match the frames the function
/// holds at that point.
pub fn lower(program: &HighProgram) -> Result<LoweredProgram, VerifyErrors> {
    let p: &Program = program;
    let live = liveness(p);
    let mut names = Names {
        used: p.blocks.iter().map(|b| b.name.clone()).collect(),
    };
    let order: Vec<FuncId> = std::iter::once(p.main)
        .chain(
            (0..p.functions.len())
                .map(FuncId::new)
                .filter(|&f| f != p.main),
        )
        .collect();

    // Lower every block into its group of pieces, in flat order.
    let mut groups: Vec<(Block, Vec<Piece>)> = Vec::new();
    for &f in &order {
        let func = p.function(f);
        let mut preds: HashMap<Block, usize> = HashMap::new();
        for &b in &func.blocks {
            // The verifier rejects jumps to entry blocks in high-level programs, so every
            // entry block is entered by calls alone.
            for t in p.block(b).term.successors() {
                *preds.entry(t).or_default() += 1;
            }
        }
        let mut entry_pops: HashMap<Block, VarSet> = HashMap::new();
        for &b in &func.blocks {
            if let Terminator::Branch { then_, else_, .. } = p.block(b).term {
                let delivered = live.before_terminator(p, b);
                for t in [then_, else_] {
                    let extra: VarSet = delivered
                        .difference(&live.block(t).live_in)
                        .copied()
                        .collect();
                    if !extra.is_empty() && preds.get(&t).copied().unwrap_or(0) == 1 {
                        entry_pops.insert(t, extra);
                    }
                }
            }
        }
        let ctx = Ctx {
            p,
            live: &live,
            func,
            is_main: f == p.main,
            entry_pops,
            preds,
        };
        for &b in &func.blocks {
            groups.push((b, ctx.lower_block(b, &mut names)?));
        }
    }

    // Number the pieces and resolve targets.
    let mut first: HashMap<Block, usize> = HashMap::new();
    let mut next = 0usize;
    for (b, pieces) in &groups {
        first.insert(*b, next);
        next += pieces.len();
    }
    let mut blocks = Vec::with_capacity(next);
    for (b, pieces) in groups {
        let base = first[&b];
        let resolve = |t: Tgt| -> Block {
            match t {
                Tgt::Orig(o) => Block::new(first[&o]),
                Tgt::Piece(k) => Block::new(base + k),
            }
        };
        for piece in pieces {
            let term = match piece.term {
                PTerm::Goto(t) => Terminator::Goto(resolve(t)),
                PTerm::Branch { cond, then_, else_ } => Terminator::Branch {
                    cond,
                    then_: resolve(then_),
                    else_: resolve(else_),
                },
                PTerm::Return => Terminator::Return,
                PTerm::PushGoto { ret, target } => Terminator::PushGoto {
                    ret: resolve(ret),
                    target: resolve(target),
                },
                PTerm::IndirectGoto => Terminator::IndirectGoto,
            };
            blocks.push(BlockData {
                name: piece.name,
                ops: piece.ops,
                term,
            });
        }
    }
    let main = p.main_function();
    let function = FunctionData {
        name: main.name.clone(),
        params: main.params.clone(),
        returns: main.returns.clone(),
        blocks: (0..blocks.len()).map(Block::new).collect(),
    };
    Ok(trusted(Program {
        vars: p.vars.clone(),
        blocks: blocks.into(),
        functions: vec![function].into(),
        main: FuncId::new(0),
        pc: p.pc,
    }))
}

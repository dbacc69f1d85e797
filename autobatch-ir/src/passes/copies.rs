//! Copy propagation: reads of a copy read its source instead, copies nothing reads are dropped,
//! a result that is only copied is written where the copy put it, a copy's source and target
//! that never hold different live values become one variable, and back-to-back copies run as
//! one op.
//!
//! The interpreters pay per lane for every assignment (`prim(..) by assign`): a row copy per
//! scalar leaf, a reference-count update per vector leaf, and per op a pass over the lanes. The
//! macro and the inliner leave many that do nothing useful (an argument's `x.clone()`, an
//! inlined call's argument and result copies). On a high-level program, five rewrites remove
//! them without changing any value a lane reads:
//!
//! * **propagation**: a *copy* is one output `t` and one input `x` of an assignment that take
//!   the same leaves (same type, same position in the leaf lists), where `t != x`, `t` is not a
//!   parameter or return variable of any function (so no program input or output either), `t`
//!   is written by that op alone in the whole program (no other op, no call result), `t` is
//!   never popped, and `x` is not written by the same op. A forward must-analysis over each
//!   function's CFG (to a fixpoint, loops included) finds where each copy is *available*: on
//!   every path from the function's entry, the copy ran and since then neither `t` nor `x` was
//!   written. A write is an op's output, a `pop` of the variable, and for a `call` its results,
//!   the callee's parameters and every variable the callee writes, directly or through its own
//!   calls ([`transitive_writes`]). Blocks not reachable from their function's entry have no
//!   copy available. When a copy is available at *every* read of `t` (op inputs, call
//!   arguments, branch conditions), each of those reads becomes a read of `x`; otherwise the
//!   copy is left alone (rewriting some reads would only make `x` live longer and keep the
//!   copy). Copies chain (`t = x; u = t`): one round rewrites a copy only if its source is not
//!   another rewritten copy's target and its target not another's source, and rounds repeat.
//! * **dead copies**: by [`liveness`], an output of an assignment that is not live after it
//!   (read on no path before it is written again, loops included; a pop counts as a read) is
//!   dropped with the input it copies; so is `v = v` unless `v` is popped somewhere (the copy
//!   pushes a frame a pop would drop). An assignment whose outputs are all dead is dropped.
//! * **result forwarding**: for a copy `y = r` where `r` is written once in the program, by an
//!   earlier op of the same block (a primitive op with no in-place output, or a call), read once
//!   in the program (by this copy) and is neither a parameter, a return variable nor popped,
//!   that op writes `y` directly and the copy goes, provided no op in between reads or writes
//!   `y` (in the sense above), the copy reads no `y` itself and the op does not already write
//!   `y`.
//! * **coalescing**: a copy's target `t` and source `x` of one type, both named by one
//!   function only, become one variable (the source renamed to the target, or the target to the
//!   source where the source is a parameter or return variable; never both fixed, neither
//!   popped) when by [`liveness`] they do not interfere: no op writes one of them while the
//!   other is live after it, except a copy of the other into it, no op writes both, and a
//!   parameter is written on entry. Neither may be live across a call that may write it (the
//!   interpreters keep such a value around the call apart from its variable's storage). This
//!   reaches the copies the rewrites above leave: into return variables, into variables
//!   written on several paths, out of parameters. Merges within one round touch disjoint
//!   variables; the renamed variable stays in the table, unused, and the copy of the merged
//!   variable into itself is then a dead copy.
//! * **merging**: consecutive assignments of a block become one when no output of one is an
//!   input or an output of another (`a = b; b = a` stays two ops). Outputs, inputs and in-place
//!   flags are concatenated in order.
//!
//! Only assignments with no in-place output take part in the first four rewrites (on
//! high-level programs none has one; lowering and pop-push fusion set them). The first four
//! repeat until none applies (each removes a copy or merges two variables, so this ends), then
//! merging runs once.
//!
//! Blocks, functions, variables and allocations are kept as they are: variables no longer used
//! stay in the table, and the result must be **re-allocated**
//! ([`allocate`](crate::passes::allocate)) before it runs, since live ranges change.

use super::coalesce::coalesce;
use crate::entity::EntityVec;
use crate::passes::allocation::transitive_writes;
use crate::passes::liveness::liveness;
use crate::program::{KernelRef, Op, PrimOp, Program, Terminator, VarData};
use crate::verified::HighProgram;
use crate::verify::trusted;
use crate::{Block, Var};
use std::collections::{BTreeMap, BTreeSet};

/// Propagates copies, drops dead ones, forwards copied results, coalesces copies' sources and
/// targets and merges adjacent assignments; returns a new program (the input is untouched).
///
/// See the module docs for the rules. The result computes what the input computes;
/// re-allocate it before running it.
pub fn propagate_copies(program: &HighProgram) -> HighProgram {
    let info = Info::new(program);
    let mut p: Program = (**program).clone();
    loop {
        let propagated = propagate(&mut p, &info);
        let dropped = drop_dead(&mut p, &info);
        let forwarded = forward_results(&mut p, &info);
        let coalesced = coalesce(&mut p, &info);
        if !(propagated || dropped || forwarded || coalesced) {
            break;
        }
    }
    merge_assignments(&mut p);
    trusted(p)
}

/// Facts the rewrites never change.
pub(super) struct Info {
    /// A parameter or return variable of some function.
    pub(super) fixed: Vec<bool>,
    /// Named by some `pop`.
    pub(super) popped: Vec<bool>,
    /// Per function: what a call to it may write besides its results (its parameters and
    /// everything it writes, transitively; sorted). Rewrites only ever remove or move writes
    /// within a function (coalescing moves a variable's writes to another variable the same
    /// function already writes), so the sets computed on the input stay upper bounds.
    pub(super) call_writes: Vec<Vec<Var>>,
}

impl Info {
    fn new(p: &Program) -> Info {
        let mut fixed = vec![false; p.vars.len()];
        for f in &p.functions {
            for &v in f.params.iter().chain(&f.returns) {
                fixed[v.index()] = true;
            }
        }
        let mut popped = vec![false; p.vars.len()];
        for data in &p.blocks {
            for op in &data.ops {
                if let Op::Pop(vars) = op {
                    for v in vars {
                        popped[v.index()] = true;
                    }
                }
            }
        }
        let call_writes = transitive_writes(p, &BTreeMap::new())
            .into_iter()
            .zip(&p.functions)
            .map(|(mut writes, f)| {
                writes.extend(f.params.iter().copied());
                writes.into_iter().collect()
            })
            .collect();
        Info {
            fixed,
            popped,
            call_writes,
        }
    }

    /// Calls `each` for every variable `op` may write (see the module docs).
    fn for_each_write(&self, op: &Op, mut each: impl FnMut(Var)) {
        match op {
            Op::Prim(prim) => prim.outs.iter().copied().for_each(each),
            Op::Call(call) => {
                call.outs.iter().copied().for_each(&mut each);
                if let Some(writes) = self.call_writes.get(call.func.index()) {
                    writes.iter().copied().for_each(each);
                }
            }
            Op::Pop(vars) => vars.iter().copied().for_each(each),
        }
    }
}

/// An assignment that takes part in propagation, dead-copy removal and forwarding: the
/// built-in `assign` kernel, no output in place.
pub(super) fn plain_assign(op: &Op) -> Option<&PrimOp> {
    match op {
        Op::Prim(prim) if prim.kernel == KernelRef::Assign && prim.in_place.is_empty() => {
            Some(prim)
        }
        _ => None,
    }
}

/// The `(output, input)` positions of an assignment where one variable is copied whole into
/// another: the same type at the same offset of the two leaf lists.
pub(super) fn pairs(vars: &EntityVec<Var, VarData>, prim: &PrimOp) -> Vec<(usize, usize)> {
    let offsets = |list: &[Var]| -> Vec<usize> {
        let mut at = 0;
        list.iter()
            .map(|v| {
                let start = at;
                at += vars[*v].ty.leaves().len();
                start
            })
            .collect()
    };
    let (outs, ins) = (offsets(&prim.outs), offsets(&prim.ins));
    let mut taken = vec![false; prim.ins.len()];
    let mut found = Vec::new();
    for (j, &out) in prim.outs.iter().enumerate() {
        let same =
            |i: usize| !taken[i] && ins[i] == outs[j] && vars[prim.ins[i]].ty == vars[out].ty;
        if let Some(i) = (0..prim.ins.len()).find(|&i| same(i)) {
            taken[i] = true;
            found.push((j, i));
        }
    }
    found
}

/// How many times each variable is written (op outputs, call results) and read (op inputs,
/// call arguments, branch conditions; pops are not counted).
fn counts(p: &Program) -> (Vec<usize>, Vec<usize>) {
    let mut writes = vec![0; p.vars.len()];
    let mut reads = vec![0; p.vars.len()];
    for data in &p.blocks {
        for op in &data.ops {
            if let Op::Prim(_) | Op::Call(_) = op {
                for v in op.writes() {
                    writes[v.index()] += 1;
                }
                for v in op.reads() {
                    reads[v.index()] += 1;
                }
            }
        }
        if let Terminator::Branch { cond, .. } = data.term {
            reads[cond.index()] += 1;
        }
    }
    (writes, reads)
}

/// A copy `target = source` (see the module docs).
struct Candidate {
    target: Var,
    source: Var,
}

/// Every copy of the program (see the module docs) and the available-copies analysis.
struct Copies<'a> {
    info: &'a Info,
    list: Vec<Candidate>,
    /// Per variable: the copy it is the target of.
    of_target: Vec<Option<usize>>,
    /// Per variable: the copies it is the target or the source of.
    touching: Vec<Vec<usize>>,
    /// Per block, per op: the copies the op makes.
    made: Vec<Vec<Vec<usize>>>,
}

impl<'a> Copies<'a> {
    fn new(p: &Program, info: &'a Info) -> Copies<'a> {
        let (writes, _) = counts(p);
        let mut copies = Copies {
            info,
            list: Vec::new(),
            of_target: vec![None; p.vars.len()],
            touching: vec![Vec::new(); p.vars.len()],
            made: p
                .blocks
                .iter()
                .map(|b| vec![Vec::new(); b.ops.len()])
                .collect(),
        };
        for (b, data) in p.blocks.iter().enumerate() {
            for (i, op) in data.ops.iter().enumerate() {
                let Some(prim) = plain_assign(op) else {
                    continue;
                };
                for (j, k) in pairs(&p.vars, prim) {
                    let (t, x) = (prim.outs[j], prim.ins[k]);
                    if t == x
                        || info.fixed[t.index()]
                        || info.popped[t.index()]
                        || writes[t.index()] != 1
                        || prim.outs.contains(&x)
                    {
                        continue;
                    }
                    let c = copies.list.len();
                    copies.list.push(Candidate {
                        target: t,
                        source: x,
                    });
                    copies.of_target[t.index()] = Some(c);
                    copies.touching[t.index()].push(c);
                    copies.touching[x.index()].push(c);
                    copies.made[b][i].push(c);
                }
            }
        }
        copies
    }

    /// The available copies after op `i` of block `b`, given those before it.
    fn transfer(&self, b: usize, i: usize, op: &Op, available: &mut [bool]) {
        self.info.for_each_write(op, |v| {
            for &c in &self.touching[v.index()] {
                available[c] = false;
            }
        });
        for &c in &self.made[b][i] {
            available[c] = true;
        }
    }

    /// The copies available on entry to each block (none for blocks no entry reaches).
    fn available_on_entry(&self, p: &Program) -> Vec<Vec<bool>> {
        let n = self.list.len();
        let mut on_entry = vec![vec![false; n]; p.blocks.len()];
        for func in &p.functions {
            let entry = func.entry();
            let mut reached = vec![false; p.blocks.len()];
            let mut preds: Vec<Vec<Block>> = vec![Vec::new(); p.blocks.len()];
            let mut work = vec![entry];
            reached[entry.index()] = true;
            while let Some(b) = work.pop() {
                for t in p.block(b).term.successors() {
                    preds[t.index()].push(b);
                    if !std::mem::replace(&mut reached[t.index()], true) {
                        work.push(t);
                    }
                }
            }
            // Greatest fixpoint: start from "everything available" everywhere but the entry.
            let mut on_exit: Vec<Vec<bool>> = vec![vec![true; n]; p.blocks.len()];
            loop {
                let mut changed = false;
                for &b in func.blocks.iter().filter(|b| reached[b.index()]) {
                    let mut facts = vec![b != entry; n];
                    for pred in &preds[b.index()] {
                        for (f, &e) in facts.iter_mut().zip(&on_exit[pred.index()]) {
                            *f &= e;
                        }
                    }
                    on_entry[b.index()].clone_from(&facts);
                    for (i, op) in p.block(b).ops.iter().enumerate() {
                        self.transfer(b.index(), i, op, &mut facts);
                    }
                    if facts != on_exit[b.index()] {
                        on_exit[b.index()] = facts;
                        changed = true;
                    }
                }
                if !changed {
                    break;
                }
            }
        }
        on_entry
    }
}

/// One round of propagation; `true` if some read was rewritten.
fn propagate(p: &mut Program, info: &Info) -> bool {
    let copies = Copies::new(p, info);
    if copies.list.is_empty() {
        return false;
    }
    let on_entry = copies.available_on_entry(p);
    // A copy qualifies if it is available at every read of its target.
    let mut everywhere = vec![true; copies.list.len()];
    for (b, data) in p.blocks.iter().enumerate() {
        let mut facts = on_entry[b].clone();
        let mut check = |v: Var, facts: &[bool]| {
            if let Some(c) = copies.of_target[v.index()] {
                everywhere[c] &= facts[c];
            }
        };
        for (i, op) in data.ops.iter().enumerate() {
            if let Op::Prim(_) | Op::Call(_) = op {
                for &v in op.reads() {
                    check(v, &facts);
                }
            }
            copies.transfer(b, i, op, &mut facts);
        }
        if let Terminator::Branch { cond, .. } = data.term {
            check(cond, &facts);
        }
    }
    // No chains within a round: a rewritten read must find its new variable still written.
    let mut is_target = vec![false; p.vars.len()];
    let mut is_source = vec![false; p.vars.len()];
    let mut replace: Vec<Option<Var>> = vec![None; p.vars.len()];
    for (c, copy) in copies.list.iter().enumerate() {
        let (t, x) = (copy.target.index(), copy.source.index());
        if everywhere[c] && !is_target[x] && !is_source[t] {
            is_target[t] = true;
            is_source[x] = true;
            replace[t] = Some(copy.source);
        }
    }
    let mut changed = false;
    let mut rewrite = |v: &mut Var| {
        if let Some(x) = replace[v.index()] {
            *v = x;
            changed = true;
        }
    };
    for data in p.blocks.iter_mut() {
        for op in &mut data.ops {
            match op {
                Op::Prim(prim) => prim.ins.iter_mut().for_each(&mut rewrite),
                Op::Call(call) => call.ins.iter_mut().for_each(&mut rewrite),
                Op::Pop(_) => {}
            }
        }
        if let Terminator::Branch { cond, .. } = &mut data.term {
            rewrite(cond);
        }
    }
    changed
}

/// Removes the outputs of plain assignments that are dead, or copies of themselves, to a
/// fixpoint; `true` if any was removed.
fn drop_dead(p: &mut Program, info: &Info) -> bool {
    let mut any = false;
    loop {
        // Dropping dead writes only ever shortens live ranges, so the liveness computed before
        // a sweep stays an over-approximation during it.
        let live = liveness(p);
        let mut changed = false;
        for b in 0..p.blocks.len() {
            let ops = std::mem::take(&mut p.blocks[Block::new(b)].ops);
            let mut kept = Vec::with_capacity(ops.len());
            for (i, op) in ops.into_iter().enumerate() {
                let Some(prim) = plain_assign(&op) else {
                    kept.push(op);
                    continue;
                };
                let after = live.after_op(Block::new(b), i);
                if !prim.outs.iter().any(|v| after.contains(v)) {
                    changed = true;
                    continue;
                }
                let mut drop_out = vec![false; prim.outs.len()];
                let mut drop_in = vec![false; prim.ins.len()];
                for (j, k) in pairs(&p.vars, prim) {
                    let (t, x) = (prim.outs[j], prim.ins[k]);
                    if !after.contains(&t) || (t == x && !info.popped[t.index()]) {
                        drop_out[j] = true;
                        drop_in[k] = true;
                    }
                }
                if !drop_out.contains(&true) {
                    kept.push(op);
                    continue;
                }
                changed = true;
                let keep = |list: &[Var], drop: &[bool]| -> Vec<Var> {
                    list.iter()
                        .zip(drop)
                        .filter(|(_, &d)| !d)
                        .map(|(&v, _)| v)
                        .collect()
                };
                let outs = keep(&prim.outs, &drop_out);
                let ins = keep(&prim.ins, &drop_in);
                if outs.is_empty() && ins.is_empty() {
                    continue;
                }
                kept.push(Op::Prim(PrimOp {
                    outs,
                    ins,
                    ..prim.clone()
                }));
            }
            p.blocks[Block::new(b)].ops = kept;
        }
        if !changed {
            return any;
        }
        any = true;
    }
}

/// A forwarding found in one block: op `def` writes `r` at output `slot`; output `out` of the
/// assignment at `copy` copies it (input `input`) into `y`.
struct Forward {
    y: Var,
    def: usize,
    slot: usize,
    copy: usize,
    out: usize,
    input: usize,
}

/// Finds the first result forwarding in `ops` (see the module docs).
fn find_forward(
    p: &Program,
    ops: &[Op],
    info: &Info,
    writes: &[usize],
    reads: &[usize],
) -> Option<Forward> {
    for (c, op) in ops.iter().enumerate() {
        let Some(copy) = plain_assign(op) else {
            continue;
        };
        'pair: for (out, input) in pairs(&p.vars, copy) {
            let (y, r) = (copy.outs[out], copy.ins[input]);
            if y == r
                || writes[r.index()] != 1
                || reads[r.index()] != 1
                || info.fixed[r.index()]
                || info.popped[r.index()]
                || copy.ins.contains(&y)
            {
                continue;
            }
            for d in (0..c).rev() {
                let candidate = &ops[d];
                let slot = match candidate {
                    Op::Prim(prim) if prim.in_place.is_empty() => {
                        prim.outs.iter().position(|&v| v == r)
                    }
                    Op::Call(call) => call.outs.iter().position(|&v| v == r),
                    _ => None,
                };
                if let Some(slot) = slot {
                    if candidate.writes().contains(&y) {
                        continue 'pair;
                    }
                    return Some(Forward {
                        y,
                        def: d,
                        slot,
                        copy: c,
                        out,
                        input,
                    });
                }
                let mut touches = candidate.reads().contains(&y);
                info.for_each_write(candidate, |v| touches |= v == y);
                if touches {
                    continue 'pair;
                }
            }
        }
    }
    None
}

/// Makes ops whose result is only copied write the copy's target; `true` if any did.
fn forward_results(p: &mut Program, info: &Info) -> bool {
    let (writes, reads) = counts(p);
    let mut changed = false;
    for b in 0..p.blocks.len() {
        // After a forwarding, `r` is neither written nor read anywhere, so the counts of every
        // variable a later search looks at are still exact.
        let b = Block::new(b);
        while let Some(f) = find_forward(p, &p.blocks[b].ops, info, &writes, &reads) {
            let ops = &mut p.blocks[b].ops;
            match &mut ops[f.def] {
                Op::Prim(prim) => prim.outs[f.slot] = f.y,
                Op::Call(call) => call.outs[f.slot] = f.y,
                Op::Pop(_) => {}
            }
            if let Op::Prim(copy) = &mut ops[f.copy] {
                copy.outs.remove(f.out);
                copy.ins.remove(f.input);
                if copy.outs.is_empty() && copy.ins.is_empty() {
                    ops.remove(f.copy);
                }
            }
            changed = true;
        }
    }
    changed
}

/// Merges runs of consecutive assignments that do not interfere into one op.
fn merge_assignments(p: &mut Program) {
    for data in p.blocks.iter_mut() {
        let ops = std::mem::take(&mut data.ops);
        let mut merged: Vec<Op> = Vec::with_capacity(ops.len());
        for op in ops {
            if let (Some(Op::Prim(last)), Op::Prim(next)) = (merged.last_mut(), &op) {
                if last.kernel == KernelRef::Assign
                    && next.kernel == KernelRef::Assign
                    && independent(last, next)
                {
                    last.outs.extend(next.outs.iter().copied());
                    last.ins.extend(next.ins.iter().copied());
                    last.in_place.extend(next.in_place.iter().copied());
                    continue;
                }
            }
            merged.push(op);
        }
        data.ops = merged;
    }
}

/// No output of either op is an input or an output of the other.
fn independent(a: &PrimOp, b: &PrimOp) -> bool {
    let a_outs: BTreeSet<Var> = a.outs.iter().copied().collect();
    let b_outs: BTreeSet<Var> = b.outs.iter().copied().collect();
    !b.ins.iter().chain(&b.outs).any(|v| a_outs.contains(v))
        && !a.ins.iter().any(|v| b_outs.contains(v))
}

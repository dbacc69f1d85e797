//! Copy propagation: reads of a copy read its source instead, copies nothing reads are dropped,
//! a result that is only copied is written where the copy put it, and back-to-back copies run as
//! one op.
//!
//! The interpreters pay per lane for every assignment (`prim(..) by assign`): a row copy per
//! scalar leaf, a reference-count update per vector leaf, and per op a pass over the lanes. The
//! macro and the inliner leave many that do nothing useful (an argument's `x.clone()`, an
//! inlined call's argument and result copies). On a high-level program, four rewrites remove
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
//! * **merging**: consecutive assignments of a block become one when no output of one is an
//!   input or an output of another (`a = b; b = a` stays two ops). Outputs, inputs and in-place
//!   flags are concatenated in order.
//!
//! Only assignments with no in-place output take part in the first three rewrites (on
//! high-level programs none has one; lowering and pop-push fusion set them). The first three
//! repeat until none applies (each removes a copy, so this ends), then merging runs once.
//!
//! Blocks, functions, variables and allocations are kept as they are: variables no longer used
//! stay in the table, and the result must be **re-allocated**
//! ([`allocate`](crate::passes::allocate)) before it runs, since live ranges change.

use crate::passes::allocation::transitive_writes;
use crate::passes::liveness::liveness;
use crate::program::{KernelRef, Op, PrimOp, Program, Terminator, VarData};
use crate::entity::EntityVec;
use crate::verified::{HighProgram, Verified};
use crate::{Block, Var};
use std::collections::{BTreeMap, BTreeSet};

/// Propagates copies, drops dead ones, forwards copied results and merges adjacent
/// assignments; returns a new program (the input is untouched).
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
        if !(propagated || dropped || forwarded) {
            break;
        }
    }
    merge_assignments(&mut p);
    Verified::trusted(p)
}

/// Facts the rewrites never change.
struct Info {
    /// A parameter or return variable of some function.
    fixed: Vec<bool>,
    /// Named by some `pop`.
    popped: Vec<bool>,
    /// Per function: what a call to it may write besides its results (its parameters and
    /// everything it writes, transitively). Rewrites only ever remove or move writes within a
    /// function, so the sets computed on the input stay upper bounds.
    call_writes: Vec<Vec<Var>>,
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
fn plain_assign(op: &Op) -> Option<&PrimOp> {
    match op {
        Op::Prim(prim) if prim.kernel == KernelRef::Assign && prim.in_place.is_empty() => {
            Some(prim)
        }
        _ => None,
    }
}

/// The `(output, input)` positions of an assignment where one variable is copied whole into
/// another: the same type at the same offset of the two leaf lists.
fn pairs(vars: &EntityVec<Var, VarData>, prim: &PrimOp) -> Vec<(usize, usize)> {
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
        let same = |i: usize| {
            !taken[i] && ins[i] == outs[j] && vars[prim.ins[i]].ty == vars[out].ty
        };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conformance::{self, numbering};
    use crate::passes::{allocate, lower};
    use crate::{FuncId, KernelId, ProgramBuilder, Type};

    // -----------------------------------------------------------------------------------------
    // A one-lane interpreter with every variable global: a call writes the callee's parameters
    // and whatever the callee writes stays written for the caller (the storage a call may
    // clobber, which the call rule guards against). Each variable is a stack (a write pushes,
    // an in-place write replaces the top, a pop drops it). A kernel hashes its source text and
    // inputs; a `bool` output is the hash's low bit.
    // -----------------------------------------------------------------------------------------

    #[derive(Debug, PartialEq)]
    enum Outcome {
        Returned(Vec<i64>),
        Limit,
    }

    struct Machine<'a> {
        p: &'a Program,
        stacks: Vec<Vec<i64>>,
        blocks_run: usize,
    }

    impl Machine<'_> {
        fn read(&self, v: Var) -> i64 {
            *self.stacks[v.index()]
                .last()
                .unwrap_or_else(|| panic!("`{}` read unset\n{}", self.p.var(v).name, self.p))
        }

        fn write(&mut self, v: Var, value: i64, in_place: bool) {
            let stack = &mut self.stacks[v.index()];
            match stack.last_mut() {
                Some(top) if in_place => *top = value,
                _ => stack.push(value),
            }
        }

        /// Runs function `f` to its return; `false` if the block budget ran out.
        fn call(&mut self, f: FuncId, depth: usize) -> bool {
            if depth > 20 {
                return false;
            }
            let mut at = self.p.function(f).entry();
            loop {
                self.blocks_run += 1;
                if self.blocks_run > 400 {
                    return false;
                }
                let data = self.p.block(at);
                for op in &data.ops {
                    match op {
                        Op::Prim(prim) => {
                            let ins: Vec<i64> = prim.ins.iter().map(|&v| self.read(v)).collect();
                            let outs: Vec<i64> = match prim.kernel {
                                KernelRef::Assign => ins,
                                KernelRef::User(_) => (0..prim.outs.len())
                                    .map(|j| hash(&prim.source, j, &ins))
                                    .collect(),
                            };
                            for (j, (&v, value)) in prim.outs.iter().zip(outs).enumerate() {
                                let value = if self.p.var(v).ty == Type::BOOL {
                                    value & 1
                                } else {
                                    value
                                };
                                self.write(v, value, prim.in_place[j]);
                            }
                        }
                        Op::Call(call) => {
                            let args: Vec<i64> = call.ins.iter().map(|&v| self.read(v)).collect();
                            let callee = self.p.function(call.func);
                            for (&formal, value) in callee.params.iter().zip(args) {
                                self.write(formal, value, false);
                            }
                            if !self.call(call.func, depth + 1) {
                                return false;
                            }
                            let callee = self.p.function(call.func);
                            let results: Vec<i64> =
                                callee.returns.iter().map(|&v| self.read(v)).collect();
                            for (&v, value) in call.outs.iter().zip(results) {
                                self.write(v, value, false);
                            }
                        }
                        Op::Pop(vars) => {
                            for v in vars {
                                self.stacks[v.index()].pop();
                            }
                        }
                    }
                }
                at = match &data.term {
                    Terminator::Goto(t) => *t,
                    Terminator::Branch { cond, then_, else_ } => {
                        if self.read(*cond) != 0 {
                            *then_
                        } else {
                            *else_
                        }
                    }
                    _ => return true,
                };
            }
        }
    }

    fn hash(source: &str, j: usize, ins: &[i64]) -> i64 {
        let mut h: u64 = 0xcbf2_9ce4_8422_2325 ^ j as u64;
        for byte in source.bytes() {
            h = (h ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
        }
        for &x in ins {
            h = (h ^ x as u64).wrapping_mul(0x100_0000_01b3);
            h ^= h >> 29;
        }
        (h >> 4) as i64
    }

    fn run(p: &Program, inputs: &[i64]) -> Outcome {
        let mut m = Machine {
            p,
            stacks: vec![Vec::new(); p.vars.len()],
            blocks_run: 0,
        };
        for (&v, &x) in p.inputs().iter().zip(inputs) {
            m.write(v, x, false);
        }
        if !m.call(p.main, 0) {
            return Outcome::Limit;
        }
        Outcome::Returned(p.outputs().iter().map(|&v| m.read(v)).collect())
    }

    /// Runs the pass with every check that holds for any input: the input is untouched, the
    /// output verifies and lowers, a second pass changes nothing, blocks and variables are
    /// kept, and every lane computes what it computed before.
    fn copied(p: &Program) -> Program {
        let before = p.clone();
        let out = propagate_copies(p);
        assert_eq!(*p, before, "propagate_copies must not modify its input");
        verify(&out).unwrap_or_else(|e| panic!("output does not verify:\n{e}\n{out}"));
        lower(&allocate(&out)).unwrap_or_else(|e| panic!("output does not lower: {e}\n{out}"));
        assert_eq!(propagate_copies(&out), out, "a second pass changes nothing");
        assert_eq!(out.vars, p.vars);
        assert_eq!(out.functions, p.functions);
        for inputs in [[3, -7], [0, 1], [12_345, 99]] {
            assert_eq!(
                run(p, &inputs),
                run(&out, &inputs),
                "{inputs:?}\n{p}\n{out}"
            );
        }
        out
    }

    /// One line per op of block `name`: `outs = (ins)` for an assignment, `outs = src(ins)`
    /// for a kernel, `outs = call g(ins)`, `pop(vars)`; then the terminator's condition.
    fn ops(p: &Program, name: &str) -> Vec<String> {
        let names = |vs: &[Var]| {
            vs.iter()
                .map(|&v| p.var(v).name.clone())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let data = p.block(p.block_named(name).expect("block"));
        let mut lines: Vec<String> = data
            .ops
            .iter()
            .map(|op| match op {
                Op::Prim(prim) if prim.kernel == KernelRef::Assign => {
                    format!("{} = ({})", names(&prim.outs), names(&prim.ins))
                }
                Op::Prim(prim) => {
                    format!(
                        "{} = {}({})",
                        names(&prim.outs),
                        prim.source,
                        names(&prim.ins)
                    )
                }
                Op::Call(call) => format!(
                    "{} = call {}({})",
                    names(&call.outs),
                    p.function(call.func).name,
                    names(&call.ins)
                ),
                Op::Pop(vars) => format!("pop({})", names(vars)),
            })
            .collect();
        if let Terminator::Branch { cond, .. } = data.term {
            lines.push(format!("branch {}", p.var(cond).name));
        }
        lines
    }

    /// A builder with `i64` variables of the given names and a function `f(x, y) -> (r)`
    /// (so `x`, `y` and `r` are fixed: parameters and return variable).
    fn start(names: &[&str]) -> (ProgramBuilder, FuncId, Vec<Var>) {
        let mut b = ProgramBuilder::new();
        let vars: Vec<Var> = names.iter().map(|n| b.var(n, Type::I64)).collect();
        let f = b.function("f");
        let var = |n: &str| vars[names.iter().position(|m| *m == n).expect("declared")];
        b.signature(f, &[var("x"), var("y")], &[var("r")]);
        (b, f, vars)
    }

    const K: KernelId = KernelId::new(0);

    #[test]
    fn a_copy_is_propagated_within_a_block() {
        let (mut b, f, v) = start(&["x", "y", "r", "t", "u"]);
        let [x, y, r, t, u] = [v[0], v[1], v[2], v[3], v[4]];
        let e = b.block(f, "e");
        b.assign(e, &[t], &[x]);
        b.assign(e, &[u], &[t]);
        b.prim(e, &[r], &[t, u, y], K, "k1");
        b.ret(e);
        let out = copied(&b.finish(f).unwrap());
        assert_eq!(ops(&out, "e"), ["r = k1(x, x, y)"]);
    }

    /// Reads in later blocks, branch conditions and call arguments are reads too; a copy
    /// available on both arms of a diamond is available at the join.
    #[test]
    fn a_copy_reaches_later_blocks_conditions_and_call_arguments() {
        let mut b = ProgramBuilder::new();
        let [x, y, r, t, a, s] = ["x", "y", "r", "t", "a", "s"].map(|n| b.var(n, Type::I64));
        let [c, d] = ["c", "d"].map(|n| b.var(n, Type::BOOL));
        let g = b.function("g");
        b.signature(g, &[a], &[s]);
        let ge = b.block(g, "g.e");
        b.prim(ge, &[s], &[a], K, "k9");
        b.ret(ge);
        let f = b.function("f");
        b.signature(f, &[x, y], &[r]);
        let [e, then_, else_, join] = ["e", "then", "else", "join"].map(|n| b.block(f, n));
        b.prim(e, &[c], &[x], K, "k1");
        b.assign(e, &[t], &[x]);
        b.assign(e, &[d], &[c]);
        b.branch(e, d, then_, else_);
        b.prim(then_, &[r], &[t], K, "k2");
        b.goto(then_, join);
        b.prim(else_, &[r], &[y], K, "k3");
        b.goto(else_, join);
        b.call(join, g, &[t], &[r]);
        b.ret(join);
        let out = copied(&b.finish(f).unwrap());
        assert_eq!(ops(&out, "e"), ["c = k1(x)", "branch c"]);
        assert_eq!(ops(&out, "then"), ["r = k2(x)"]);
        assert_eq!(ops(&out, "join"), ["r = call g(x)"]);
    }

    /// `t = x; u = t; x = k(x); r = k(u)`: `u = t` may read `x`, but `u`'s read may not
    /// (`x` changed since): rewriting both in one round would read the new `x`.
    #[test]
    fn chained_copies_are_propagated_one_link_at_a_time() {
        let (mut b, f, v) = start(&["x", "y", "r", "t", "u"]);
        let [x, y, r, t, u] = [v[0], v[1], v[2], v[3], v[4]];
        let e = b.block(f, "e");
        b.assign(e, &[t], &[x]);
        b.assign(e, &[u], &[t]);
        b.prim(e, &[x], &[x, y], K, "k1");
        b.prim(e, &[r], &[u, x], K, "k2");
        b.ret(e);
        let out = copied(&b.finish(f).unwrap());
        assert_eq!(ops(&out, "e"), ["u = (x)", "x = k1(x, y)", "r = k2(u, x)"]);
    }

    #[test]
    fn a_copy_is_not_propagated_across_a_redefinition_of_its_source() {
        let (mut b, f, v) = start(&["x", "y", "r", "t", "a"]);
        let [x, y, r, t, a] = [v[0], v[1], v[2], v[3], v[4]];
        let e = b.block(f, "e");
        b.assign(e, &[t], &[x]);
        b.prim(e, &[a], &[t], K, "k1");
        b.prim(e, &[x], &[x, y], K, "k2");
        b.prim(e, &[r], &[t, a, x], K, "k3");
        b.ret(e);
        let p = b.finish(f).unwrap();
        // The first read could read `x`, the second cannot: rewriting only one would keep the
        // copy and make `x` live longer, so neither is rewritten.
        assert_eq!(copied(&p), p);

        // The same across blocks: the source is redefined on one arm.
        let (mut b, f, v) = start(&["x", "y", "r", "t"]);
        let [x, y, r, t] = [v[0], v[1], v[2], v[3]];
        let c = b.var("c", Type::BOOL);
        let [e, then_, join] = ["e", "then", "join"].map(|n| b.block(f, n));
        b.assign(e, &[t], &[x]);
        b.prim(e, &[c], &[y], K, "k1");
        b.branch(e, c, then_, join);
        b.prim(then_, &[x], &[y], K, "k2");
        b.goto(then_, join);
        b.prim(join, &[r], &[t, x], K, "k3");
        b.ret(join);
        let p = b.finish(f).unwrap();
        assert_eq!(copied(&p), p);
    }

    /// `t = s; call g(..); read t`: if `g`, or a function `g` calls, writes `s`, the read must
    /// keep reading `t`; a callee that leaves `s` alone does not stop the propagation.
    #[test]
    fn a_copy_is_not_propagated_across_a_call_that_writes_its_source() {
        let build = |h_writes_s: bool| {
            let mut b = ProgramBuilder::new();
            let [x, y, r, s, t, q, a, a2, z] =
                ["x", "y", "r", "s", "t", "q", "a", "a2", "z"].map(|n| b.var(n, Type::I64));
            let h = b.function("h");
            b.signature(h, &[a2], &[z]);
            let he = b.block(h, "h.e");
            b.prim(he, &[z], &[a2], K, "k9");
            if h_writes_s {
                b.prim(he, &[s], &[a2], K, "k8");
            }
            b.ret(he);
            let g = b.function("g");
            b.signature(g, &[a], &[q]);
            let ge = b.block(g, "g.e");
            b.call(ge, h, &[a], &[q]);
            b.ret(ge);
            let f = b.function("f");
            b.signature(f, &[x, y], &[r]);
            let e = b.block(f, "e");
            b.prim(e, &[s], &[x], K, "k1");
            b.assign(e, &[t], &[s]);
            b.call(e, g, &[y], &[q]);
            b.prim(e, &[r], &[t, q], K, "k2");
            b.ret(e);
            b.finish(f).unwrap()
        };
        let p = build(true);
        let out = copied(&p);
        assert_eq!(out, p, "h writes s: the copy stays");
        // The interpreter shares storage: propagating here would read h's `s`.
        let mut wrong = p.clone();
        let e = wrong.block_named("e").unwrap();
        wrong.blocks[e.index()].ops[3] = crate::prim_op(
            &[wrong.var_named("r").unwrap()],
            &[wrong.var_named("s").unwrap(), wrong.var_named("q").unwrap()],
            KernelRef::User(K),
            "k2",
        );
        assert_ne!(run(&p, &[1, 2]), run(&wrong, &[1, 2]));

        let out = copied(&build(false));
        assert_eq!(
            ops(&out, "e"),
            ["s = k1(x)", "q = call g(y)", "r = k2(s, q)"]
        );
    }

    /// `do { t = x; x = k(x) } while c; r = k(t)`: after the loop `t` holds the last
    /// iteration's old `x`, not `x`.
    #[test]
    fn a_copy_is_not_propagated_out_of_a_loop_that_redefines_it() {
        let (mut b, f, v) = start(&["x", "y", "r", "t"]);
        let [x, y, r, t] = [v[0], v[1], v[2], v[3]];
        let c = b.var("c", Type::BOOL);
        let [e, body, exit] = ["e", "body", "exit"].map(|n| b.block(f, n));
        b.goto(e, body);
        b.assign(body, &[t], &[x]);
        b.prim(body, &[x], &[x, y], K, "k1");
        b.prim(body, &[c], &[x], K, "k2");
        b.branch(body, c, body, exit);
        b.prim(exit, &[r], &[t], K, "k3");
        b.ret(exit);
        let p = b.finish(f).unwrap();
        assert_eq!(copied(&p), p);

        // Nor into a loop that redefines the source: `t = x; while c { x = k(t, x) }`.
        let (mut b, f, v) = start(&["x", "y", "r", "t"]);
        let [x, y, r, t] = [v[0], v[1], v[2], v[3]];
        let c = b.var("c", Type::BOOL);
        let [e, head, body, exit] = ["e", "head", "body", "exit"].map(|n| b.block(f, n));
        b.assign(e, &[t], &[x]);
        b.goto(e, head);
        b.prim(head, &[c], &[x, y], K, "k1");
        b.branch(head, c, body, exit);
        b.prim(body, &[x], &[t, x], K, "k2");
        b.goto(body, head);
        b.prim(exit, &[r], &[x], K, "k3");
        b.ret(exit);
        let p = b.finish(f).unwrap();
        assert_eq!(copied(&p), p);
    }

    #[test]
    fn dead_copies_are_removed() {
        let (mut b, f, v) = start(&["x", "y", "r", "t", "u", "w"]);
        let [x, y, r, t, u, w] = [v[0], v[1], v[2], v[3], v[4], v[5]];
        let e = b.block(f, "e");
        // `t` is never read; `u` only by the dead `w`; `y = y` copies nothing; `r` is
        // written twice, the first time for nothing.
        b.assign(e, &[t], &[x]);
        b.assign(e, &[u], &[x]);
        b.assign(e, &[w], &[u]);
        b.assign(e, &[y], &[y]);
        b.assign(e, &[r], &[x]);
        b.prim(e, &[r], &[y], K, "k1");
        b.ret(e);
        let out = copied(&b.finish(f).unwrap());
        assert_eq!(ops(&out, "e"), ["r = k1(y)"]);
    }

    /// `t = x` before a loop that changes `x`, read after it: kept. `prev = x` at the end of
    /// a loop body, read only by the next iteration's header: live around the back edge, kept.
    #[test]
    fn copies_read_after_or_around_a_loop_are_kept() {
        let (mut b, f, v) = start(&["x", "y", "r", "t", "prev", "n"]);
        let [x, y, r, t, prev, n] = [v[0], v[1], v[2], v[3], v[4], v[5]];
        let c = b.var("c", Type::BOOL);
        let [e, head, body, exit] = ["e", "head", "body", "exit"].map(|n| b.block(f, n));
        b.assign(e, &[t], &[x]);
        b.assign(e, &[prev], &[y]);
        b.goto(e, head);
        b.prim(head, &[c], &[prev, x], K, "k1");
        b.branch(head, c, body, exit);
        b.prim(body, &[x], &[x], K, "k2");
        b.prim(body, &[n], &[x, prev], K, "k3");
        b.assign(body, &[prev], &[n]);
        b.prim(body, &[y], &[n], K, "k4");
        b.goto(body, head);
        b.prim(exit, &[r], &[t, prev], K, "k5");
        b.ret(exit);
        let p = b.finish(f).unwrap();
        let out = copied(&p);
        // `prev = n` is not propagated (prev has two definitions) and not forwarded (`n` has
        // a second read), and it is live: it stays. `t = x` stays. The two copies of the
        // entry block merge.
        assert_eq!(ops(&out, "e"), ["t, prev = (x, y)"]);
        assert_eq!(
            ops(&out, "body"),
            ["x = k2(x)", "n = k3(x, prev)", "prev = (n)", "y = k4(n)"]
        );
    }

    #[test]
    fn adjacent_assignments_merge_unless_they_interfere() {
        let (mut b, f, v) = start(&["x", "y", "r", "a", "c", "d", "e1"]);
        let [x, y, r, a, c, d, e1] = [v[0], v[1], v[2], v[3], v[4], v[5], v[6]];
        let bl = b.block(f, "e");
        b.prim(bl, &[a, c, d, e1], &[x, y], K, "k1");
        // `a = c; c = a` leaves both equal to the old `c`: as one op it would swap them.
        b.assign(bl, &[a], &[c]);
        b.assign(bl, &[c], &[a]);
        // Independent copies merge; one reading the other's output does not.
        b.assign(bl, &[d], &[x]);
        b.assign(bl, &[e1], &[y]);
        b.assign(bl, &[x], &[d]);
        b.assign(bl, &[y], &[x]);
        b.prim(bl, &[r], &[a, c, d, e1, x, y], K, "k2");
        b.ret(bl);
        let out = copied(&b.finish(f).unwrap());
        assert_eq!(
            ops(&out, "e"),
            [
                "a, c, d, e1 = k1(x, y)",
                "a = (c)",
                "c, d, e1 = (a, x, y)",
                "x = (d)",
                "y = (x)",
                "r = k2(a, c, d, e1, x, y)"
            ]
        );
        // Merged in-place flags follow their outputs.
        let merged = &out.block(out.block_named("e").unwrap()).ops[2];
        assert!(matches!(merged, Op::Prim(p) if p.in_place == [false; 3]));
    }

    #[test]
    fn a_copied_result_is_written_where_the_copy_puts_it() {
        // `r` is a return variable (never a propagated copy's target), `s` is read once.
        let (mut b, f, v) = start(&["x", "y", "r", "s", "s2"]);
        let [x, y, r, s, s2] = [v[0], v[1], v[2], v[3], v[4]];
        let e = b.block(f, "e");
        b.prim(e, &[s, s2], &[x, y], K, "k1");
        b.prim(e, &[y], &[s2], K, "k2");
        b.assign(e, &[r], &[s]);
        b.ret(e);
        let out = copied(&b.finish(f).unwrap());
        assert_eq!(ops(&out, "e"), ["r, s2 = k1(x, y)", "y = k2(s2)"]);

        // Not when the target is read or written in between, or the result is read twice.
        let (mut b, f, v) = start(&["x", "y", "r", "s"]);
        let [x, y, r, s] = [v[0], v[1], v[2], v[3]];
        let e = b.block(f, "e");
        b.prim(e, &[r], &[y], K, "k0");
        b.prim(e, &[s], &[x], K, "k1");
        b.prim(e, &[y], &[r], K, "k2");
        b.assign(e, &[r], &[s]);
        b.ret(e);
        let p = b.finish(f).unwrap();
        assert_eq!(copied(&p), p);
        let (mut b, f, v) = start(&["x", "y", "r", "s"]);
        let [x, y, r, s] = [v[0], v[1], v[2], v[3]];
        let e = b.block(f, "e");
        b.prim(e, &[s], &[x], K, "k1");
        b.assign(e, &[r], &[s]);
        b.prim(e, &[y], &[s], K, "k2");
        b.prim(e, &[r], &[r, y], K, "k3");
        b.ret(e);
        let p = b.finish(f).unwrap();
        assert_eq!(copied(&p), p);

        // Not when the copy itself reads the target: `y, x = (s, y)` copies the old `y`.
        let (mut b, f, v) = start(&["x", "y", "r", "s"]);
        let [x, y, r, s] = [v[0], v[1], v[2], v[3]];
        let e = b.block(f, "e");
        b.prim(e, &[s], &[x], K, "k1");
        b.assign(e, &[y, x], &[s, y]);
        b.prim(e, &[r], &[x, y], K, "k2");
        b.ret(e);
        let p = b.finish(f).unwrap();
        assert_eq!(copied(&p), p);

        // A call's result too, and the target may be an argument of the call.
        let mut b = ProgramBuilder::new();
        let [x, y, r, s, a, q] = ["x", "y", "r", "s", "a", "q"].map(|n| b.var(n, Type::I64));
        let g = b.function("g");
        b.signature(g, &[a], &[q]);
        let ge = b.block(g, "g.e");
        b.prim(ge, &[q], &[a], K, "k9");
        b.ret(ge);
        let f = b.function("f");
        b.signature(f, &[x, y], &[r]);
        let e = b.block(f, "e");
        b.call(e, g, &[y], &[s]);
        b.assign(e, &[y], &[s]);
        b.prim(e, &[r], &[x, y], K, "k1");
        b.ret(e);
        let out = copied(&b.finish(f).unwrap());
        assert_eq!(ops(&out, "e"), ["y = call g(y)", "r = k1(x, y)"]);
    }

    /// A copy's target that is popped somewhere is left alone; a pop of the source ends the
    /// copy's reach (it changes the source's value).
    #[test]
    fn pops_are_respected() {
        let (mut b, f, v) = start(&["x", "y", "r", "t"]);
        let [x, r, t] = [v[0], v[2], v[3]];
        let e = b.block(f, "e");
        b.assign(e, &[t], &[x]);
        b.prim(e, &[r], &[t], K, "k1");
        b.pop(e, &[t]);
        b.ret(e);
        let p = b.finish(f).unwrap();
        assert_eq!(copied(&p), p);

        let (mut b, f, v) = start(&["x", "y", "r", "t", "u"]);
        let [x, y, r, t, u] = [v[0], v[1], v[2], v[3], v[4]];
        let e = b.block(f, "e");
        // Two frames of `u`; `t` copies the top one, which the pop then drops: reading `u`
        // instead of `t` would read the frame below.
        b.prim(e, &[u], &[x], K, "k0");
        b.prim(e, &[u], &[y], K, "k1");
        b.assign(e, &[t], &[u]);
        b.pop(e, &[u]);
        b.prim(e, &[r], &[t], K, "k2");
        b.ret(e);
        let p = b.finish(f).unwrap();
        assert_eq!(copied(&p), p);
    }

    /// `u = u` pushes a second frame of `u` in the reference semantics: a pop then drops
    /// that one, not the frame below. (Lowering rejects reading a popped variable, so only the
    /// stack semantics itself tells; the interpreter runs it.)
    #[test]
    fn a_self_copy_of_a_popped_variable_stays() {
        let (mut b, f, v) = start(&["x", "y", "r", "u"]);
        let [x, y, r, u] = [v[0], v[1], v[2], v[3]];
        let e = b.block(f, "e");
        b.prim(e, &[u], &[x], K, "k0");
        b.prim(e, &[u], &[y], K, "k1");
        b.assign(e, &[u], &[u]);
        b.pop(e, &[u]);
        b.prim(e, &[r], &[u], K, "k2");
        b.ret(e);
        let p = b.finish(f).unwrap();
        let out = propagate_copies(&p);
        assert_eq!(out, p);
        assert_eq!(run(&out, &[1, 2]), run(&p, &[1, 2]));
    }

    /// Parallel copies: `a, b = (b', a')` swaps are pairs of copies like any other, but a
    /// copy whose source the same op overwrites is not one.
    #[test]
    fn swaps_in_one_assignment_are_not_copies_of_their_own_outputs() {
        let (mut b, f, v) = start(&["x", "y", "r", "a", "c"]);
        let [x, y, r, a, c] = [v[0], v[1], v[2], v[3], v[4]];
        let e = b.block(f, "e");
        b.prim(e, &[a, c], &[x, y], K, "k1");
        b.assign(e, &[a, c], &[c, a]);
        b.prim(e, &[r], &[a, c], K, "k2");
        b.ret(e);
        let p = b.finish(f).unwrap();
        assert_eq!(copied(&p), p);
    }

    #[test]
    fn tuples_and_partial_copies_keep_their_leaves_aligned() {
        let mut b = ProgramBuilder::new();
        let [x, y, r, s, u] = ["x", "y", "r", "s", "u"].map(|n| b.var(n, Type::I64));
        let pair = Type::Tuple(vec![Type::I64, Type::I64]);
        let [tup, tup2] = ["tup", "tup2"].map(|n| b.var(n, pair.clone()));
        let f = b.function("f");
        b.signature(f, &[x, y], &[r]);
        let e = b.block(f, "e");
        // `tup = (x, y)` assembles a tuple: no pair. `tup2, s, u = (tup, y, x)` pairs all
        // three; `s` is dead, `u` and `tup2` are copies.
        b.assign(e, &[tup], &[x, y]);
        b.assign(e, &[tup2, s, u], &[tup, y, x]);
        b.prim(e, &[r], &[tup2, u], K, "k1");
        b.ret(e);
        let p = b.finish(f).unwrap();
        let out = propagate_copies(&p);
        verify(&out).unwrap();
        assert_eq!(ops(&out, "e"), ["tup = (x, y)", "r = k1(tup, x)"]);
    }

    #[test]
    fn lowered_and_invalid_programs_are_returned_unchanged() {
        let low = conformance::fibonacci_program(&mut numbering());
        assert_eq!(propagate_copies(&low), low);
        let mut broken = conformance::gcd(&mut numbering());
        broken.blocks[0].term = Terminator::Goto(Block::new(999));
        assert_eq!(propagate_copies(&broken), broken);
    }

    #[test]
    fn conformance_programs_stay_equivalent() {
        for p in conformance::control_flow_programs() {
            copied(&allocate(&p));
        }
    }

    // -----------------------------------------------------------------------------------------
    // Random programs: every lane computes what it computed before.
    // -----------------------------------------------------------------------------------------

    use crate::passes::testing::Rng;

    /// A random `main(x, y) -> r` over long-lived variables `v0..v3` (written first thing),
    /// temporaries `t0..t5` (written by copies, kernels and calls here and there), a condition
    /// `c` and a helper `g(p) -> q` that also writes `v3` (or `t0`), called from `main`.
    /// `None` if it does not verify (a temporary read on a path that does not write it).
    fn random_program(rng: &mut Rng) -> Option<Program> {
        let mut b = ProgramBuilder::new();
        let [x, y, r, gp, gq] = ["x", "y", "r", "g.p", "g.q"].map(|n| b.var(n, Type::I64));
        let v: Vec<Var> = (0..4).map(|i| b.var(&format!("v{i}"), Type::I64)).collect();
        let t: Vec<Var> = (0..6).map(|i| b.var(&format!("t{i}"), Type::I64)).collect();
        let c = b.var("c", Type::BOOL);
        let g = b.function("g");
        b.signature(g, &[gp], &[gq]);
        let ge = b.block(g, "g.e");
        b.prim(ge, &[gq], &[gp], K, "g1");
        let clobbered = if rng.below(2) == 0 { v[3] } else { t[0] };
        b.prim(ge, &[clobbered], &[gp, gq], K, "g2");
        b.ret(ge);
        let f = b.function("main");
        b.signature(f, &[x, y], &[r]);
        let n = 2 + rng.below(7);
        let bl: Vec<Block> = (0..n).map(|i| b.block(f, &format!("b{i}"))).collect();
        b.prim(bl[0], &[v[0], v[1], v[2], v[3], c], &[x, y], K, "init");
        let all: Vec<Var> = v.iter().chain(&t).copied().collect();
        let mut k = 0;
        for &blk in &bl {
            for _ in 0..rng.below(5) {
                let any = |rng: &mut Rng| all[rng.below(all.len())];
                let temp = |rng: &mut Rng| t[rng.below(t.len())];
                let long = |rng: &mut Rng| v[rng.below(v.len())];
                k += 1;
                match rng.below(9) {
                    0 | 1 => {
                        let (to, from) = (temp(rng), any(rng));
                        b.assign(blk, &[to], &[from]);
                    }
                    2 => {
                        let (to, from) = (long(rng), any(rng));
                        b.assign(blk, &[to], &[from]);
                    }
                    3 => {
                        let (a, d) = (any(rng), any(rng));
                        if a != d {
                            let (s1, s2) = (any(rng), any(rng));
                            b.assign(blk, &[a, d], &[s1, s2]);
                        }
                    }
                    4 => {
                        let (to, i1, i2) = (long(rng), any(rng), any(rng));
                        b.prim(blk, &[to], &[i1, i2], K, &format!("k{k}"));
                    }
                    5 => {
                        let (to, from) = (temp(rng), any(rng));
                        b.prim(blk, &[to], &[from], K, &format!("k{k}"));
                    }
                    6 => {
                        let from = any(rng);
                        b.prim(blk, &[c], &[from], K, &format!("k{k}"));
                    }
                    _ => {
                        let (to, from) = (any(rng), any(rng));
                        b.call(blk, g, &[from], &[to]);
                    }
                }
            }
            let target = |rng: &mut Rng| bl[1 + rng.below(n - 1)];
            match rng.below(5) {
                0 | 1 => {
                    let (th, el) = (target(rng), target(rng));
                    b.branch(blk, c, th, el);
                }
                2 => {
                    let from = all[rng.below(all.len())];
                    b.assign(blk, &[r], &[from]);
                    b.ret(blk);
                }
                _ => {
                    let to = target(rng);
                    b.goto(blk, to);
                }
            }
        }
        b.finish(f).ok()
    }

    fn assign_pairs(p: &Program) -> usize {
        p.blocks
            .iter()
            .flat_map(|b| &b.ops)
            .filter_map(|op| match op {
                Op::Prim(prim) if prim.kernel == KernelRef::Assign => Some(prim.outs.len()),
                _ => None,
            })
            .sum()
    }

    #[test]
    fn random_programs_compute_the_same_with_fewer_copies() {
        let mut rng = Rng(0x2545_f491_4f6c_dd1d);
        let (mut programs, mut removed, mut halted) = (0, 0, 0);
        while programs < 3_000 {
            let Some(p) = random_program(&mut rng) else {
                continue;
            };
            programs += 1;
            let out = copied(&p);
            assert!(assign_pairs(&out) <= assign_pairs(&p), "{p}\n{out}");
            removed += assign_pairs(&p) - assign_pairs(&out);
            halted += usize::from(matches!(run(&p, &[5, 6]), Outcome::Returned(_)));
        }
        assert!(
            removed > 3_000,
            "the generator exercises the pass: {removed}"
        );
        assert!(halted > 1_000, "most programs return: {halted}");
    }
}

//! Coalescing, one of [`propagate_copies`](super::propagate_copies)'s rewrites: a copy's source
//! and target that never hold two different live values become one variable, so the copy then
//! copies a variable into itself and the dead-copy rewrite drops it. The rules are in the
//! [`copies`](super::copies) module docs.
//!
//! Propagation and forwarding remove a copy only where its target is written once and is no
//! parameter or return variable. Many copies left are of the other kind: a function's results
//! copied into its return variables on each path out (`ret.0 = first.q`), an inlined call's
//! results copied into a variable written on two paths, a parameter copied into a loop
//! variable. Each costs the interpreters a pass over the lanes and a row copy (or a reference
//! count) per lane, and a call's result copied into a variable that becomes the return
//! variable costs nothing to pass. Merging the two variables is what a register allocator
//! does with a copy between non-interfering live ranges.
//!
//! Why a variable live across a call that may write it is left alone: the interpreters save it
//! around the call and give it back afterwards, so after the call its value is the caller's,
//! not whatever the callee left in its storage; were it merged with another variable, that
//! storage would be shared by two values across the call.

use super::copies::{pairs, plain_assign, Info};
use super::liveness::{liveness, Liveness};
use crate::program::{Op, Program, Terminator};
use crate::{Block, FuncId, Var};

/// Where a variable is named.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    Nowhere,
    One(FuncId),
    Several,
}

/// One round of coalescing on `p` (see the module docs); `true` if some variables were merged.
pub(super) fn coalesce(p: &mut Program, info: &Info) -> bool {
    let live = liveness(p);
    let owner = owners(p);
    let across = live_across_writing_calls(p, info, &live);
    let mut touched = vec![false; p.vars.len()];
    let mut rename: Vec<Option<Var>> = vec![None; p.vars.len()];
    let mut any = false;
    for (f, func) in p.functions.iter().enumerate() {
        let f = FuncId::new(f);
        for &b in &func.blocks {
            for op in &p.block(b).ops {
                let Some(prim) = plain_assign(op) else {
                    continue;
                };
                for (j, k) in pairs(&p.vars, prim) {
                    let (t, x) = (prim.outs[j], prim.ins[k]);
                    let free = |v: Var| {
                        owner[v.index()] == Owner::One(f)
                            && !touched[v.index()]
                            && !across[v.index()]
                            && !info.popped[v.index()]
                    };
                    if t == x || !free(t) || !free(x) {
                        continue;
                    }
                    let (gone, kept) = match (info.fixed[x.index()], info.fixed[t.index()]) {
                        (false, _) => (x, t),
                        (true, false) => (t, x),
                        (true, true) => continue,
                    };
                    if interfere(p, f, &live, t, x) {
                        continue;
                    }
                    rename[gone.index()] = Some(kept);
                    touched[t.index()] = true;
                    touched[x.index()] = true;
                    any = true;
                }
            }
        }
    }
    if any {
        rename_all(p, &rename);
    }
    any
}

/// Per variable, the one function that names it, if one does.
fn owners(p: &Program) -> Vec<Owner> {
    let mut owner = vec![Owner::Nowhere; p.vars.len()];
    let mut name = |v: Var, f: FuncId| {
        let o = &mut owner[v.index()];
        *o = match *o {
            Owner::Nowhere => Owner::One(f),
            Owner::One(g) if g == f => Owner::One(f),
            _ => Owner::Several,
        };
    };
    for (f, func) in p.functions.iter().enumerate() {
        let f = FuncId::new(f);
        for &v in func.params.iter().chain(&func.returns) {
            name(v, f);
        }
        for &b in &func.blocks {
            let data = p.block(b);
            for op in &data.ops {
                for &v in op.reads().iter().chain(op.writes()) {
                    name(v, f);
                }
            }
            if let Terminator::Branch { cond, .. } = data.term {
                name(cond, f);
            }
        }
    }
    owner
}

/// Per variable, whether it is live after some call (and not one of its results) that may
/// write it.
fn live_across_writing_calls(p: &Program, info: &Info, live: &Liveness) -> Vec<bool> {
    let mut across = vec![false; p.vars.len()];
    for (b, data) in p.blocks.iter().enumerate() {
        for (i, op) in data.ops.iter().enumerate() {
            let Op::Call(call) = op else {
                continue;
            };
            let Some(writes) = info.call_writes.get(call.func.index()) else {
                continue;
            };
            for v in live.after_op(Block::new(b), i) {
                if !call.outs.contains(v) && writes.binary_search(v).is_ok() {
                    across[v.index()] = true;
                }
            }
        }
    }
    across
}

/// Whether `t` and `x` interfere in function `f` (see the module docs).
fn interfere(p: &Program, f: FuncId, live: &Liveness, t: Var, x: Var) -> bool {
    let func = p.function(f);
    let entry = live.block(func.entry());
    let params = |v: Var| func.params.contains(&v);
    if (params(t) && entry.live_in.contains(&x)) || (params(x) && entry.live_in.contains(&t)) {
        return true;
    }
    for &b in &func.blocks {
        for (i, op) in p.block(b).ops.iter().enumerate() {
            let writes = op.writes();
            let (writes_t, writes_x) = (writes.contains(&t), writes.contains(&x));
            if writes_t && writes_x {
                return true;
            }
            if !(writes_t || writes_x) {
                continue;
            }
            let (written, other) = if writes_t { (t, x) } else { (x, t) };
            if live.after_op(b, i).contains(&other) && !copies_into(op, p, written, other) {
                return true;
            }
        }
    }
    false
}

/// Whether `op` is an assignment copying `from` whole into `to`.
fn copies_into(op: &Op, p: &Program, to: Var, from: Var) -> bool {
    plain_assign(op).is_some_and(|prim| {
        pairs(&p.vars, prim)
            .into_iter()
            .any(|(j, k)| prim.outs[j] == to && prim.ins[k] == from)
    })
}

/// Replaces every mention of a variable `v` with `rename[v]`, where that is set.
fn rename_all(p: &mut Program, rename: &[Option<Var>]) {
    let to = |v: &mut Var| {
        if let Some(kept) = rename[v.index()] {
            *v = kept;
        }
    };
    for data in p.blocks.iter_mut() {
        for op in &mut data.ops {
            match op {
                Op::Prim(prim) => {
                    prim.outs.iter_mut().chain(&mut prim.ins).for_each(to);
                    prim.in_place.iter_mut().for_each(to);
                }
                Op::Call(call) => call.outs.iter_mut().chain(&mut call.ins).for_each(to),
                Op::Pop(vars) => vars.iter_mut().for_each(to),
            }
        }
        if let Terminator::Branch { cond, .. } = &mut data.term {
            to(cond);
        }
    }
}

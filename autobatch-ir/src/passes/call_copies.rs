//! Copy removal on lowered programs: the copies lowering leaves around calls (an argument
//! computed into a temporary, then copied into the pushed formal; a result copied out of the
//! callee's return variable only to be read by the next op) go where the two values are
//! provably the same.
//!
//! It runs after pop-push fusion ([`fuse_pop_push`](crate::passes::fuse_pop_push)), so the
//! assignments it removes carry their final in-place flags, and the pops left between two ops
//! are pops of variables the second op does not read (fusion emits a pop right before the op
//! that needs it).

use crate::program::{Allocation, KernelRef, Op, PrimOp, Program, Terminator};
use crate::verified::LoweredProgram;
use crate::verify::trusted;
use crate::Var;
use std::collections::{HashMap, HashSet};

/// Removes copies around calls from a lowered program; returns a new program.
///
/// Two rewrites, repeated until neither applies, each on an op and the next op of its block
/// that is not a pop (only pops between them):
///
/// 1. **Forwarded result.** `t = k(..)` then `x = t` by assign, `t` written only by `k`
///    (pushed, not in place) and read only by the assignment: `k` writes `x` directly, with
///    the assignment's meaning for it (in place, or pushed), and that part of the assignment
///    goes. Not when the assignment reads `x` too (its other outputs read the old `x`: in
///    `f(n - 1, n)` the second argument reads the formal the first one writes), when `k`
///    already writes `x`, or when a pop between the two touches `x` or `t`.
/// 2. **Forwarded source.** `t = x` by assign, then an op reading `t`, `t` written only by
///    the assignment (pushed, not in place) and read only by that op: the op reads `x`, and
///    that part of the assignment goes. Not when the assignment also writes `x` (the op would
///    read the new value), or when a pop between the two touches `x` or `t`.
///
/// Both pair an assignment's inputs and outputs variable by variable, so they apply only to
/// assignments with as many inputs as outputs, between variables of the same type. The
/// program's inputs and outputs and branch conditions are never removed. A variable removed
/// is dropped from every pop (its one push went with it) and allocated NULL; an assignment
/// this pass leaves with no outputs goes, and so does an in-place self-copy `x! = x` it makes
/// (an update of the top frame with its own value).
pub fn remove_call_copies(program: &LoweredProgram) -> LoweredProgram {
    let mut out: Program = (**program).clone();
    let mut removed: HashSet<Var> = HashSet::new();
    while let Some(gone) = rewrite_once(&mut out) {
        removed.extend(gone);
    }
    for block in out.blocks.iter_mut() {
        for op in &mut block.ops {
            if let Op::Pop(vars) = op {
                vars.retain(|v| !removed.contains(v));
            }
        }
        block
            .ops
            .retain(|op| !matches!(op, Op::Pop(vars) if vars.is_empty()));
    }
    for &v in &removed {
        out.vars[v].alloc = Allocation::Null;
    }
    trusted(out)
}

/// How often each variable is written and read by ops and terminators; `fixed` are the
/// variables no rewrite removes (the program's inputs and outputs).
struct Uses {
    writes: HashMap<Var, usize>,
    reads: HashMap<Var, usize>,
    fixed: HashSet<Var>,
}

impl Uses {
    fn of(p: &Program) -> Uses {
        let mut writes = HashMap::new();
        let mut reads = HashMap::new();
        for block in p.blocks.iter() {
            for op in &block.ops {
                if let Op::Prim(prim) = op {
                    for &v in &prim.outs {
                        *writes.entry(v).or_insert(0) += 1;
                    }
                    for &v in &prim.ins {
                        *reads.entry(v).or_insert(0) += 1;
                    }
                }
            }
            if let Terminator::Branch { cond, .. } = block.term {
                *reads.entry(cond).or_insert(0) += 1;
            }
        }
        let mut fixed: HashSet<Var> = p.inputs().iter().chain(p.outputs()).copied().collect();
        fixed.insert(p.pc);
        Uses {
            writes,
            reads,
            fixed,
        }
    }

    /// `t` is written once and read exactly `reads` times, and may be removed.
    fn removable(&self, t: Var, reads: usize) -> bool {
        !self.fixed.contains(&t)
            && self.writes.get(&t) == Some(&1)
            && self.reads.get(&t).copied().unwrap_or(0) == reads
    }
}

/// Applies one rewrite somewhere in `p`; returns the variables it removed, `None` if none
/// applies.
fn rewrite_once(p: &mut Program) -> Option<Vec<Var>> {
    let uses = Uses::of(p);
    let same_type = |a: Var, b: Var| p.vars[a].ty == p.vars[b].ty;
    let mut found = None;
    'blocks: for (bi, block) in p.blocks.entries() {
        for i in 0..block.ops.len() {
            let Some(j) = next_non_pop(&block.ops, i) else {
                continue;
            };
            let popped = popped_between(&block.ops, i, j);
            let (Op::Prim(first), Op::Prim(second)) = (&block.ops[i], &block.ops[j]) else {
                continue;
            };
            // Sources first: of two assignments, rule 2 keeps one op where rule 1 keeps two.
            let sources = forwarded_sources(first, second, &uses, &popped, &same_type);
            if !sources.is_empty() {
                found = Some((bi, i, j, Rewrite::Sources(sources)));
                break 'blocks;
            }
            let results = forwarded_results(first, second, &uses, &popped, &same_type);
            if !results.is_empty() {
                found = Some((bi, i, j, Rewrite::Results(results)));
                break 'blocks;
            }
        }
    }
    let (bi, i, j, rewrite) = found?;
    let ops = &mut p.blocks[bi].ops;
    let (head, tail) = ops.split_at_mut(j);
    let (Op::Prim(first), Op::Prim(second)) = (&mut head[i], &mut tail[0]) else {
        unreachable!("the rewrite was found on two primitive ops");
    };
    let removed = match rewrite {
        Rewrite::Results(moves) => {
            // `first` writes `x` where it wrote `t`; the assignment `second` loses `x = t`.
            for &(t, x) in &moves {
                let at = first.outs.iter().position(|&o| o == t).expect("an output");
                first.outs[at] = x;
                if second.is_in_place(x) {
                    first.in_place.push(x);
                }
            }
            drop_pairs(second, |o, _| moves.iter().any(|&(_, x)| x == o));
            moves.iter().map(|&(t, _)| t).collect::<Vec<_>>()
        }
        Rewrite::Sources(moves) => {
            // `second` reads `x` where it read `t`; the assignment `first` loses `t = x`.
            for v in &mut second.ins {
                if let Some(&(_, x)) = moves.iter().find(|&&(t, _)| t == *v) {
                    *v = x;
                }
            }
            drop_pairs(first, |o, _| moves.iter().any(|&(t, _)| t == o));
            if second.kernel == KernelRef::Assign && second.ins.len() == second.outs.len() {
                let in_place = second.in_place.clone();
                drop_pairs(second, |o, i| o == i && in_place.contains(&o));
            }
            moves.iter().map(|&(t, _)| t).collect::<Vec<_>>()
        }
    };
    // Assignments emptied here go (`j` first: removing it keeps `i`'s index).
    for k in [j, i] {
        if matches!(&ops[k], Op::Prim(a) if a.kernel == KernelRef::Assign && a.outs.is_empty()) {
            ops.remove(k);
        }
    }
    Some(removed)
}

/// A rewrite found: the `(t, x)` pairs it forwards.
enum Rewrite {
    /// Rule 1: the kernel writes `x` instead of `t`.
    Results(Vec<(Var, Var)>),
    /// Rule 2: the next op reads `x` instead of `t`.
    Sources(Vec<(Var, Var)>),
}

/// The index of the first op after `i` that is not a pop.
fn next_non_pop(ops: &[Op], i: usize) -> Option<usize> {
    (i + 1..ops.len()).find(|&j| !matches!(ops[j], Op::Pop(_)))
}

/// The variables popped by the ops strictly between `i` and `j`.
fn popped_between(ops: &[Op], i: usize, j: usize) -> HashSet<Var> {
    ops[i + 1..j]
        .iter()
        .flat_map(|op| op.reads())
        .copied()
        .collect()
}

/// Rule 1 on kernel `k` and the next op `a`: the `(t, x)` pairs of `x = t` in assignment `a`
/// that `k` can write directly.
fn forwarded_results(
    k: &PrimOp,
    a: &PrimOp,
    uses: &Uses,
    popped: &HashSet<Var>,
    same_type: &impl Fn(Var, Var) -> bool,
) -> Vec<(Var, Var)> {
    if a.kernel != KernelRef::Assign || a.ins.len() != a.outs.len() {
        return Vec::new();
    }
    a.ins
        .iter()
        .zip(&a.outs)
        .map(|(&t, &x)| (t, x))
        .filter(|&(t, x)| {
            t != x
                && k.outs.contains(&t)
                && !k.is_in_place(t)
                && uses.removable(t, 1)
                && same_type(t, x)
                // `k` would write `x` twice.
                && !k.outs.contains(&x)
                // The assignment reads the old `x` (for another output).
                && !a.ins.contains(&x)
                && !popped.contains(&t)
                && !popped.contains(&x)
        })
        .collect()
}

/// Rule 2 on assignment `c` and the next op `b`: the `(t, x)` pairs of `t = x` in `c` whose
/// `t` `b` can read as `x`.
fn forwarded_sources(
    c: &PrimOp,
    b: &PrimOp,
    uses: &Uses,
    popped: &HashSet<Var>,
    same_type: &impl Fn(Var, Var) -> bool,
) -> Vec<(Var, Var)> {
    if c.kernel != KernelRef::Assign || c.ins.len() != c.outs.len() {
        return Vec::new();
    }
    c.outs
        .iter()
        .zip(&c.ins)
        .map(|(&t, &x)| (t, x))
        .filter(|&(t, x)| {
            let reads_in_b = b.ins.iter().filter(|&&v| v == t).count();
            t != x
                && reads_in_b > 0
                && !c.is_in_place(t)
                && uses.removable(t, reads_in_b)
                && same_type(t, x)
                // `b` would read the `x` this assignment writes.
                && !c.outs.contains(&x)
                && !popped.contains(&t)
                && !popped.contains(&x)
        })
        .collect()
}

/// Removes the pairs `(output, input)` of assignment `a` for which `drop` is true.
fn drop_pairs(a: &mut PrimOp, drop: impl Fn(Var, Var) -> bool) {
    let keep: Vec<bool> = a
        .outs
        .iter()
        .zip(&a.ins)
        .map(|(&o, &i)| !drop(o, i))
        .collect();
    let mut k = keep.iter();
    a.outs.retain(|_| *k.next().expect("one flag per output"));
    let mut k = keep.iter();
    a.ins.retain(|_| *k.next().expect("one flag per input"));
    let outs = a.outs.clone();
    a.in_place.retain(|v| outs.contains(v));
}

//! Allocation analysis: the reference's promotion rules (docs/reference-semantics.md,
//! "Allocation"), plus tail calls.
//!
//! Every variable starts at [`Allocation::Null`] and is only ever promoted
//! (`Null < Temporary < Register < Full`):
//!
//! 1. the program counter is at least `Temporary`;
//! 2. in every function (the entry function `main` included; its returns are the outputs):
//!    * if it has a block, the program counter is at least `Register`;
//!    * variables a `prim` or `call` reads are at least `Temporary` (pops are not reads here);
//!    * for a `call`, each variable live after it that is not one of its results is `Full` if
//!      it is one of the callee's parameters (the call writes them) or
//!      the callee transitively writes it, else at least `Register`;
//!    * a `call` makes the program counter `Full`, unless it is a *tail call* (see
//!      [`is_tail_call`]): an improvement over the reference, which promoted at every call;
//! 3. a branch condition is at least `Register`;
//! 4. every variable live out of a block is at least `Register`;
//! 5. every function's parameters (`main`'s are the program inputs) are at least `Register`.
//!
//! A function's *direct* writes are its `prim` results, its `call` results and, for each call,
//! the callee's parameters (the caller writes them before jumping); pops are ignored. Its
//! *transitive* writes close that over the call graph ([`transitive_writes`]).
//!
//! The analysis runs on high-level programs ([`HighProgram`]): a lowered program has no calls
//! left, so it could not tell which variables live across a `push_goto` the callee overwrites
//! (a hand-lowered program states its own allocations; a lowered program keeps the ones
//! computed before lowering).

use crate::passes::liveness::{liveness, VarSet};
use crate::program::{Allocation, CallOp, Op, Program, Terminator};
use crate::verified::HighProgram;
use crate::{Block, FuncId, Var};
use std::collections::BTreeMap;

/// Knobs for [`allocations_with`]; the [`Default`] is what [`allocations`] uses.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AllocationOptions {
    /// Extra variables each function is assumed to write, on top of what its body shows.
    ///
    /// For calls into functions whose bodies the analysis cannot see (or does not trust): give
    /// such a function every variable the callee might touch (at worst, all of them) and every
    /// variable live across a call to it, directly or through its callers, becomes `Full`. The
    /// set joins the function's direct writes before the transitive closure, so it also counts
    /// for every function that calls it. Functions not in the map add nothing.
    pub extra_writes: BTreeMap<FuncId, VarSet>,
    /// Reference behaviour: every call makes the program counter `Full`, tail calls included
    /// (docs/reference-semantics.md, "Allocation"). Off by default; the conformance tables use it.
    pub pc_full_at_every_call: bool,
}

/// Computes every variable's allocation; returns a new program (the input is untouched).
///
/// Equivalent to `program.with_allocations(&allocations(program))`.
pub fn allocate(program: &HighProgram) -> HighProgram {
    program.with_allocations(&allocations(program))
}

/// Every variable's allocation under the default options, indexed by [`Var`].
pub fn allocations(program: &HighProgram) -> Vec<Allocation> {
    allocations_with(program, &AllocationOptions::default())
}

/// Every variable's allocation under `options`, indexed by [`Var`].
pub fn allocations_with(program: &HighProgram, options: &AllocationOptions) -> Vec<Allocation> {
    let mut alloc = vec![Allocation::Null; program.vars.len()];
    let mut at_least = |v: Var, a: Allocation| {
        let slot = &mut alloc[v.index()];
        *slot = (*slot).max(a);
    };
    let live = liveness(program);
    let writes = transitive_writes(program, &options.extra_writes);

    // Rule 1.
    at_least(program.pc, Allocation::Temporary);
    for func in &program.functions {
        // Rule 2.
        if !func.blocks.is_empty() {
            at_least(program.pc, Allocation::Register);
        }
        for &b in &func.blocks {
            let data = program.block(b);
            for (i, op) in data.ops.iter().enumerate() {
                let live_after = live.after_op(b, i);
                match op {
                    Op::Prim(p) => {
                        for &v in &p.ins {
                            at_least(v, Allocation::Temporary);
                        }
                    }
                    Op::Call(call) => {
                        for &v in &call.ins {
                            at_least(v, Allocation::Temporary);
                        }
                        // The call itself writes the callee's parameters (the arguments are
                        // copied into them), whether or not the callee writes them again.
                        let callee_writes = &writes[call.func.index()];
                        let params = &program.function(call.func).params;
                        for &v in live_after {
                            if call.outs.contains(&v) {
                                continue;
                            }
                            if callee_writes.contains(&v) || params.contains(&v) {
                                at_least(v, Allocation::Full);
                            } else {
                                at_least(v, Allocation::Register);
                            }
                        }
                        let tail = !options.pc_full_at_every_call
                            && is_tail_call(program, b, i, live_after);
                        if !tail {
                            at_least(program.pc, Allocation::Full);
                        }
                    }
                    Op::Pop(_) => {}
                }
            }
            // Rule 3.
            if let Terminator::Branch { cond, .. } = data.term {
                at_least(cond, Allocation::Register);
            }
            // Rule 4.
            for &v in &live.block(b).live_out {
                at_least(v, Allocation::Register);
            }
        }
        // Rule 5.
        for &v in &func.params {
            at_least(v, Allocation::Register);
        }
    }
    alloc
}

/// Whether op `i` of block `b` is a tail call, given the variables live just after it.
///
/// A tail call is the block's last op, the block returns, the call's results are the callee's
/// return variables (same variables, same order) and exactly those are live after it: the
/// caller has nothing to resume, so lowering turns it into a plain jump and it needs no return
/// address on the program counter's stack. `false` for any op that is not a call.
pub fn is_tail_call(program: &Program, b: Block, i: usize, live_after: &VarSet) -> bool {
    let data = program.block(b);
    let Some(Op::Call(CallOp { func, outs, .. })) = data.ops.get(i) else {
        return false;
    };
    i + 1 == data.ops.len()
        && data.term == Terminator::Return
        && *outs == program.function(*func).returns
        && live_after.len() == outs.len()
        && outs.iter().all(|v| live_after.contains(v))
}

/// The variables each function writes, directly or through the functions it calls, indexed by
/// [`FuncId`].
///
/// Direct writes: `prim` results, `call` results, each callee's parameters, and `extra[f]`
/// (see [`AllocationOptions::extra_writes`]). Pops write nothing here. The closure follows
/// calls with a worklist and a visited set, so recursion (mutual included) terminates.
pub fn transitive_writes(program: &Program, extra: &BTreeMap<FuncId, VarSet>) -> Vec<VarSet> {
    let n = program.functions.len();
    let mut direct = vec![VarSet::new(); n];
    let mut calls: Vec<Vec<FuncId>> = vec![Vec::new(); n];
    for (f, func) in program.functions.iter().enumerate() {
        let id = FuncId::new(f);
        if let Some(more) = extra.get(&id) {
            direct[f].extend(more.iter().copied());
        }
        for &b in &func.blocks {
            for op in &program.block(b).ops {
                match op {
                    Op::Prim(p) => direct[f].extend(p.outs.iter().copied()),
                    Op::Call(c) => {
                        direct[f].extend(c.outs.iter().copied());
                        if let Some(callee) = program.functions.get(c.func) {
                            direct[f].extend(callee.params.iter().copied());
                            calls[f].push(c.func);
                        }
                    }
                    Op::Pop(_) => {}
                }
            }
        }
    }
    (0..n)
        .map(|f| {
            let mut visited = vec![false; n];
            let mut work = vec![f];
            visited[f] = true;
            let mut all = VarSet::new();
            while let Some(g) = work.pop() {
                all.extend(direct[g].iter().copied());
                for &h in &calls[g] {
                    if !std::mem::replace(&mut visited[h.index()], true) {
                        work.push(h.index());
                    }
                }
            }
            all
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{KernelId, ProgramBuilder, Type};

    fn alloc_of(p: &Program, name: &str) -> Allocation {
        p.var(p.var_named(name).unwrap()).alloc
    }

    /// `main(x) { y = g(x); z = y + x }` where `g(a) { b = a + 1 }` shares no variables with
    /// `main`: `x` lives across the call but `g` cannot clobber it, so it stays `Register`.
    #[test]
    fn non_recursive_callee_sharing_nothing_causes_no_full() {
        let mut b = ProgramBuilder::new();
        let x = b.var("x", Type::I64);
        let y = b.var("y", Type::I64);
        let z = b.var("z", Type::I64);
        let a = b.var("a", Type::I64);
        let r = b.var("r", Type::I64);
        let g = b.function("g");
        b.signature(g, &[a], &[r]);
        let ge = b.block(g, "g_entry");
        b.prim(ge, &[r], &[a], KernelId::new(0), "a + 1");
        b.ret(ge);
        let main = b.function("main");
        b.signature(main, &[x], &[z]);
        let me = b.block(main, "main_entry");
        b.call(me, g, &[x], &[y]);
        b.prim(me, &[z], &[y, x], KernelId::new(1), "x + y");
        b.ret(me);
        let p = b.finish(main).unwrap();
        let out = allocate(&p);
        // Not a tail call: the return address needs the pc's stack.
        assert_eq!(out.var(p.pc).alloc, Allocation::Full);
        for name in ["x", "y", "z", "a", "r"] {
            assert!(alloc_of(&out, name) < Allocation::Full, "{name}");
        }
        assert_eq!(alloc_of(&out, "x"), Allocation::Register);
        assert_eq!(alloc_of(&out, "y"), Allocation::Temporary);

        // Declaring that `g` may write `x` (e.g. a callee the analysis cannot see) makes it Full.
        let opts = AllocationOptions {
            extra_writes: BTreeMap::from([(g, VarSet::from([x]))]),
            ..AllocationOptions::default()
        };
        assert_eq!(allocations_with(&p, &opts)[x.index()], Allocation::Full);
    }

    /// `f` calls `g`, `g` calls `h`, `h` calls `f`: each one's write set holds all three
    /// bodies' writes and parameters; `k`, called by `f` only, writes only its own.
    #[test]
    fn mutual_recursion_write_sets_close_over_the_cycle() {
        let mut b = ProgramBuilder::new();
        let names = ["pf", "pg", "ph", "pk", "rf", "rg", "rh", "rk", "t", "z"];
        let v: Vec<Var> = names.iter().map(|n| b.var(n, Type::I64)).collect();
        let (pf, pg, ph, pk, rf, rg, rh, rk, t, z) =
            (v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9]);
        let f = b.function("f");
        let g = b.function("g");
        let h = b.function("h");
        let k = b.function("k");
        b.signature(f, &[pf], &[rf]);
        b.signature(g, &[pg], &[rg]);
        b.signature(h, &[ph], &[rh]);
        b.signature(k, &[pk], &[rk]);
        let fe = b.block(f, "f_entry");
        b.call(fe, k, &[pf], &[t]);
        b.call(fe, g, &[t], &[rf]);
        b.ret(fe);
        let ge = b.block(g, "g_entry");
        b.call(ge, h, &[pg], &[rg]);
        b.ret(ge);
        let he = b.block(h, "h_entry");
        let c = b.var("c", Type::BOOL);
        let base = b.block(h, "h_base");
        let rec = b.block(h, "h_recur");
        b.prim(he, &[c], &[ph], KernelId::new(0), "n < 1");
        b.branch(he, c, base, rec);
        b.prim(base, &[rh], &[], KernelId::new(1), "0");
        b.ret(base);
        b.call(rec, f, &[ph], &[rh]);
        b.ret(rec);
        let ke = b.block(k, "k_entry");
        b.prim(ke, &[rk], &[pk], KernelId::new(2), "n - 1");
        b.ret(ke);
        let p = b.finish(f).unwrap();
        let w = transitive_writes(&p, &BTreeMap::new());
        let cycle = VarSet::from([pf, pg, ph, pk, rf, rg, rh, rk, t, c]);
        for func in [f, g, h] {
            assert_eq!(w[func.index()], cycle, "{}", p.function(func).name);
        }
        assert_eq!(w[k.index()], VarSet::from([rk]));

        // Extra writes of `k` reach every function that calls it, even around the cycle.
        let extra = BTreeMap::from([(k, VarSet::from([z]))]);
        let w = transitive_writes(&p, &extra);
        for func in [f, g, h, k] {
            assert!(w[func.index()].contains(&z), "{}", p.function(func).name);
        }
    }
}

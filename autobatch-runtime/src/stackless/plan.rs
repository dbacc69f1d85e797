//! What stackless decides once per program: block positions, the values saved around each
//! call, and which copies around a call it can leave out.
//!
//! Copies around a call are avoidable when they provably change nothing a lane computes:
//!
//! - **Arguments computed into formals.** A kernel that runs just before a call and writes only
//!   that call's argument temporaries can write the callee's formals instead, once the values
//!   the call saves are held (a self-call's formals are the caller's own variables): then the
//!   arguments are not copied. `n - 1` into `n`, in place, is the common case.
//! - **Results read in place.** A call result read only by the kernel right after the call is
//!   read where the callee left it, in its return variable, instead of being copied out first;
//!   likewise a result the next call saves (held from the return variable) and a result the
//!   call right after takes as an argument (passed from the return variable).
//!
//! - **Conditions split as computed.** A block's last kernel writing the `bool` its branch
//!   reads as its last output, which nothing else reads (not live after the block), splits the
//!   lanes into the branch's two lists as it computes each condition: the condition is neither
//!   written nor read back.
//!
//! All keep every kernel run on the same lanes with the same values: only where a value is
//! written or read changes, so `Stats` and every result are as without them.

use crate::policy::{dead_vectors, split_condition};
use autobatch_ir::passes::Liveness;
use autobatch_ir::{Allocation, Block, CallOp, HighProgram, Op, PrimOp, Program, Var};

/// What stackless does at one op of a block.
#[derive(Clone, Debug)]
pub(crate) enum Step {
    /// The op as written.
    Op,
    /// A kernel that the call right after it runs, writing its outputs into the callee's
    /// formals ([`CallPlan::fused`]): nothing to do at its own place.
    Deferred,
    /// A kernel that reads a call's result in the callee's return variable: the op with that
    /// input replaced.
    Reading(PrimOp),
    /// A call.
    Call(Box<CallPlan>),
}

/// How one call passes its values.
#[derive(Clone, Debug)]
pub(crate) struct CallPlan {
    /// Variables to save around the call (live across it and FULL).
    pub(crate) saves: Vec<Var>,
    /// Where each save's value is held from: the variable itself, or for a result of an
    /// earlier call that was not copied out, the callee's return variable still holding it.
    pub(crate) sources: Vec<Var>,
    /// The variable each formal is passed from: the arguments, but for a result of the call
    /// just before passed on as an argument, the return variable still holding it.
    pub(crate) args: Vec<Var>,
    /// The argument kernel run inside the call, if any.
    pub(crate) fused: Option<Fused>,
    /// The results copied out, as (output, callee return variable) pairs (all but those read
    /// in place).
    pub(crate) outs: Vec<Var>,
    pub(crate) returns: Vec<Var>,
}

/// An argument kernel fused into the call after it.
#[derive(Clone, Debug)]
pub(crate) struct Fused {
    /// The kernel as it runs unfused (if taking the saves fails, the call runs as written, so
    /// every error comes in the order it would without the fusion).
    pub(crate) prim: PrimOp,
    /// The same kernel writing the callee's formals instead of the argument temporaries.
    pub(crate) into_formals: PrimOp,
    /// The arguments still copied, as (formal, argument) pairs.
    pub(crate) params: Vec<Var>,
    pub(crate) args: Vec<Var>,
}

/// Per-program facts stackless needs.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Position of each block in its function's block list.
    pub(crate) position: Vec<usize>,
    /// `steps[block][op]`: what to do at that op.
    pub(crate) steps: Vec<Vec<Step>>,
    /// Per block: vector variables dead at its end, whose rows are released there.
    pub(crate) dead_vectors: Vec<Vec<Var>>,
    /// Per function: whether its calls count against the depth limit (it is recursive).
    pub(crate) counted: Vec<bool>,
    /// Per block: the branch condition its last op computes and splits the block's lanes by
    /// as it does ([`Exec::run_branch`](crate::exec::Exec::run_branch)), if it may.
    pub(crate) split: Vec<Option<Var>>,
}

/// Fusion switches, for tests that compare the plan with and without them.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Fusions {
    pub(crate) arguments: bool,
    pub(crate) results: bool,
    pub(crate) conditions: bool,
}

impl Fusions {
    pub(crate) const ALL: Fusions = Fusions {
        arguments: true,
        results: true,
        conditions: true,
    };
}

impl Plan {
    /// Precomputes block positions, save sets and copy fusions for `program` (allocated).
    pub(crate) fn new(program: &HighProgram, liveness: &Liveness) -> Plan {
        Plan::with_fusions(program, liveness, Fusions::ALL)
    }

    /// [`new`](Self::new) with only the fusions `fusions` allows.
    pub(crate) fn with_fusions(
        program: &HighProgram,
        liveness: &Liveness,
        fusions: Fusions,
    ) -> Plan {
        let mut position = vec![0; program.blocks.len()];
        for f in &program.functions {
            for (i, b) in f.blocks.iter().enumerate() {
                position[b.index()] = i;
            }
        }
        let steps: Vec<Vec<Step>> = (0..program.blocks.len())
            .map(|b| block_steps(program, liveness, Block::new(b), fusions))
            .collect();
        let split = (0..program.blocks.len())
            .map(|b| {
                let b_steps = &steps[b];
                splits(program, liveness, Block::new(b), b_steps).filter(|_| fusions.conditions)
            })
            .collect();
        Plan {
            position,
            steps,
            dead_vectors: dead_vectors(program, liveness, super::STACKS),
            counted: crate::depth::recursive_functions(program),
            split,
        }
    }
}

/// The condition of block `b`'s branch (with `steps`) if the block ends with a kernel, run as
/// written, that may split the lanes by it ([`split_condition`]).
fn splits(program: &Program, liveness: &Liveness, b: Block, steps: &[Step]) -> Option<Var> {
    let (Some(Op::Prim(prim)), Some(Step::Op)) = (program.block(b).ops.last(), steps.last()) else {
        return None;
    };
    split_condition(program, liveness, b, prim)
}

/// The steps of block `b`.
fn block_steps(program: &Program, liveness: &Liveness, b: Block, fusions: Fusions) -> Vec<Step> {
    let ops = &program.block(b).ops;
    // Results read in place first: a kernel reading one may then be fused as an argument.
    let mut reading: Vec<Option<(PrimOp, usize)>> = vec![None; ops.len()];
    for i in 1..ops.len() {
        if let (Op::Call(call), Op::Prim(prim)) = (&ops[i - 1], &ops[i]) {
            if fusions.results {
                reading[i] = read_in_place(program, liveness, b, i, call, prim);
            }
        }
    }
    let mut steps: Vec<Step> = ops
        .iter()
        .enumerate()
        .map(|(i, op)| match op {
            Op::Call(call) => {
                let saves = saves(program, liveness, b, i, call);
                let skip = reading.get(i + 1).and_then(|r| r.as_ref()).map(|&(_, k)| k);
                let (outs, returns) = call
                    .outs
                    .iter()
                    .zip(&program.function(call.func).returns)
                    .enumerate()
                    .filter(|&(k, _)| Some(k) != skip)
                    .map(|(_, (&o, &r))| (o, r))
                    .unzip();
                Step::Call(Box::new(CallPlan {
                    sources: saves.clone(),
                    saves,
                    args: call.ins.clone(),
                    fused: None,
                    outs,
                    returns,
                }))
            }
            _ => match reading[i].take() {
                Some((prim, _)) => Step::Reading(prim),
                None => Step::Op,
            },
        })
        .collect();
    if fusions.results {
        for i in 0..ops.len() {
            held_in_place(program, b, i, &mut steps);
        }
        for i in 1..ops.len() {
            passed_on(program, liveness, b, i, &mut steps);
        }
    }
    if fusions.arguments {
        for i in 1..ops.len() {
            let (Op::Prim(written), Op::Call(call)) = (&ops[i - 1], &ops[i]) else {
                continue;
            };
            let prim = match &steps[i - 1] {
                Step::Reading(p) => p.clone(),
                _ => written.clone(),
            };
            if let Some(fused) = fuse_arguments(program, liveness, b, i, call, prim) {
                steps[i - 1] = Step::Deferred;
                if let Step::Call(plan) = &mut steps[i] {
                    plan.fused = Some(fused);
                }
            }
        }
    }
    steps
}

/// Results of the call at op `i` of `b` that the next call saves, held there from the callee's
/// return variable instead of copied out first: a result whose only use before the next call
/// is that save (no op between reads or writes it, the next call does not take it as an
/// argument), and whose return variable nothing writes before the save (no op between writes
/// it; this call neither saves nor writes it in the caller).
fn held_in_place(program: &Program, b: Block, i: usize, steps: &mut [Step]) {
    let ops = &program.block(b).ops;
    let Op::Call(call) = &ops[i] else { return };
    let Some(j) = (i + 1..ops.len()).find(|&j| !matches!(ops[j], Op::Prim(_))) else {
        return;
    };
    let Op::Call(next) = &ops[j] else { return };
    let between = |v: Var, write_only: bool| {
        ops[i + 1..j].iter().any(|op| match op {
            Op::Prim(p) => p.outs.contains(&v) || (!write_only && p.ins.contains(&v)),
            _ => true,
        }) || steps[i + 1..j].iter().any(|s| match s {
            Step::Reading(p) => p.outs.contains(&v) || (!write_only && p.ins.contains(&v)),
            _ => false,
        })
    };
    let returns = &program.function(call.func).returns;
    let (Step::Call(this), Step::Call(after)) = (&steps[i], &steps[j]) else {
        return;
    };
    let mut held = Vec::new();
    for (&out, &ret) in this.outs.iter().zip(&this.returns) {
        let Some(s) = after.saves.iter().position(|&v| v == out) else {
            continue;
        };
        let provable = out != ret
            && returns.contains(&ret)
            && call.outs.iter().filter(|&&o| o == out).count() == 1
            && !call.outs.contains(&ret)
            && !this.saves.contains(&ret)
            && !next.ins.contains(&out)
            && !between(out, false)
            && !between(ret, true)
            && after.sources[s] == out
            && program.var(ret).alloc != Allocation::Null
            && program.var(out).ty == program.var(ret).ty;
        if provable {
            held.push((out, ret, s));
        }
    }
    for (out, ret, s) in held {
        if let Step::Call(this) = &mut steps[i] {
            let k = this.outs.iter().position(|&o| o == out);
            if let Some(k) = k {
                this.outs.remove(k);
                this.returns.remove(k);
            }
        }
        if let Step::Call(after) = &mut steps[j] {
            after.sources[s] = ret;
        }
    }
}

/// Results of the call at op `i - 1` of `b` that the call right after it (op `i`) takes as an
/// argument and nothing reads afterwards, passed there straight from the callee's return
/// variable instead of copied out first (Ackermann's `A(m - 1, A(m, n - 1))`): the return
/// variable keeps its value until then (the first call neither saves nor writes it in the
/// caller, and nothing runs between).
fn passed_on(program: &Program, liveness: &Liveness, b: Block, i: usize, steps: &mut [Step]) {
    let ops = &program.block(b).ops;
    let (Op::Call(call), Op::Call(next)) = (&ops[i - 1], &ops[i]) else {
        return;
    };
    let (Step::Call(this), Step::Call(after)) = (&steps[i - 1], &steps[i]) else {
        return;
    };
    let live_after = liveness.after_op(b, i);
    let mut passed = Vec::new();
    for (&out, &ret) in this.outs.iter().zip(&this.returns) {
        let mut at = (0..next.ins.len()).filter(|&j| next.ins[j] == out);
        let (Some(j), None) = (at.next(), at.next()) else {
            continue;
        };
        let provable = out != ret
            && after.fused.is_none()
            && after.args[j] == out
            && call.outs.iter().filter(|&&o| o == out).count() == 1
            && !call.outs.contains(&ret)
            && !this.saves.contains(&ret)
            && !next.outs.contains(&out)
            && !live_after.contains(&out)
            && program.var(ret).alloc != Allocation::Null
            && program.var(out).ty == program.var(ret).ty;
        if provable {
            passed.push((out, ret, j));
        }
    }
    for (out, ret, j) in passed {
        if let Step::Call(this) = &mut steps[i - 1] {
            if let Some(k) = this.outs.iter().position(|&o| o == out) {
                this.outs.remove(k);
                this.returns.remove(k);
            }
        }
        if let Step::Call(after) = &mut steps[i] {
            after.args[j] = ret;
        }
    }
}

/// Variables to save around the call at op `i` of `b`: live after it, FULL, and not written
/// by it.
fn saves(program: &Program, liveness: &Liveness, b: Block, i: usize, call: &CallOp) -> Vec<Var> {
    liveness
        .after_op(b, i)
        .iter()
        .copied()
        .filter(|v| !call.outs.contains(v) && program.var(*v).alloc == Allocation::Full)
        .collect()
}

/// `prim` (op `i` of `b`, right after `call`) reading one result of `call` in the callee's
/// return variable, and which result, if that is provably the same value: the result is read
/// by `prim` alone (no later op and no successor reads it, it is no other result), and the
/// return variable keeps the callee's value until `prim` reads it (the call neither saves nor
/// writes it in the caller, and `prim` does not read it already).
fn read_in_place(
    program: &Program,
    liveness: &Liveness,
    b: Block,
    i: usize,
    call: &CallOp,
    prim: &PrimOp,
) -> Option<(PrimOp, usize)> {
    let returns = &program.function(call.func).returns;
    let saves = saves(program, liveness, b, i - 1, call);
    let live_after = liveness.after_op(b, i);
    (0..call.outs.len()).find_map(|k| {
        let (out, ret) = (call.outs[k], *returns.get(k)?);
        let once = call.outs.iter().filter(|&&o| o == out).count() == 1;
        let provable = once
            && out != ret
            && prim.ins.contains(&out)
            && !live_after.contains(&out)
            && !call.outs.contains(&ret)
            && !call.ins.contains(&out)
            && !saves.contains(&ret)
            && !prim.ins.contains(&ret)
            && program.var(ret).alloc != Allocation::Null
            && program.var(out).alloc != Allocation::Null
            && program.var(out).ty == program.var(ret).ty;
        provable.then(|| {
            let mut reading = prim.clone();
            reading
                .ins
                .iter_mut()
                .filter(|v| **v == out)
                .for_each(|v| *v = ret);
            (reading, k)
        })
    })
}

/// `prim` (op `i - 1` of `b`) fused into `call` (op `i`), if that is provably the same: every
/// output of `prim` is an argument of `call` and nothing else (one argument, no result, not
/// live after the call), of its formal's type; and no argument still copied reads a formal
/// `prim` now writes.
fn fuse_arguments(
    program: &Program,
    liveness: &Liveness,
    b: Block,
    i: usize,
    call: &CallOp,
    prim: PrimOp,
) -> Option<Fused> {
    let params = &program.function(call.func).params;
    if prim.outs.is_empty() || params.len() != call.ins.len() {
        return None;
    }
    let live_after = liveness.after_op(b, i);
    let mut formal_of = Vec::with_capacity(prim.outs.len());
    for (k, &out) in prim.outs.iter().enumerate() {
        let mut at = (0..call.ins.len()).filter(|&j| call.ins[j] == out);
        let (Some(j), None) = (at.next(), at.next()) else {
            return None;
        };
        let formal = params[j];
        let fits = !prim.outs[..k].contains(&out)
            && !live_after.contains(&out)
            && !call.outs.contains(&out)
            && program.var(out).alloc != Allocation::Null
            && program.var(formal).ty == program.var(out).ty;
        if !fits {
            return None;
        }
        formal_of.push((out, formal));
    }
    let written: Vec<Var> = formal_of.iter().map(|&(_, f)| f).collect();
    let (rest_params, rest_args): (Vec<Var>, Vec<Var>) = params
        .iter()
        .zip(&call.ins)
        .filter(|&(_, a)| !prim.outs.contains(a))
        .map(|(&p, &a)| (p, a))
        .unzip();
    if rest_args.iter().any(|a| written.contains(a)) {
        return None;
    }
    let formal = |v: Var| {
        formal_of
            .iter()
            .find(|&&(o, _)| o == v)
            .map_or(v, |&(_, f)| f)
    };
    let mut into_formals = prim.clone();
    into_formals.outs = prim.outs.iter().map(|&v| formal(v)).collect();
    into_formals.in_place = prim.in_place.iter().map(|&v| formal(v)).collect();
    Some(Fused {
        prim,
        into_formals,
        params: rest_params,
        args: rest_args,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::unsplit_conditions;
    use crate::Executable;
    use autobatch_ir::{KernelId, ProgramBuilder, Type};
    use autobatch_testkit::conformance;

    /// The steps stackless plans for the block named `name` of `program`, with `fusions`.
    fn steps(program: HighProgram, name: &str, fusions: Fusions) -> Vec<Step> {
        let exe = Executable::new(program, Vec::new()).expect("a valid program");
        let (high, _) = exe.high.as_ref().expect("a high-level program");
        let live = autobatch_ir::passes::liveness(high);
        let plan = Plan::with_fusions(high, &live, fusions);
        let b = (0..high.blocks.len())
            .find(|&b| high.block(Block::new(b)).name == name)
            .expect("the block");
        plan.steps[b].clone()
    }

    /// A short picture of steps: `p` op, `d` deferred, `r` reading in place, `c`/`C` a call
    /// without/with a fused argument kernel, then the results it still copies, `h` if it
    /// holds a save from a return variable.
    fn shape(steps: &[Step]) -> String {
        steps
            .iter()
            .map(|s| match s {
                Step::Op => "p".to_string(),
                Step::Deferred => "d".to_string(),
                Step::Reading(_) => "r".to_string(),
                Step::Call(c) => {
                    let kind = if c.fused.is_some() { "C" } else { "c" };
                    let held = if c.sources != c.saves { "h" } else { "" };
                    format!("{kind}{}{held}", c.outs.len())
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    fn fibonacci() -> HighProgram {
        let mut names: Vec<String> = Vec::new();
        let mut namer = |s: &str| {
            names.push(s.to_string());
            KernelId::new(names.len() - 1)
        };
        conformance::fibonacci_function_calls(&mut namer, autobatch_ir::DType::I64)
    }

    /// Fibonacci's recursive block: both argument kernels run into the formal, the second
    /// result is read in place, the first is held across the second call straight from the
    /// return variable.
    #[test]
    fn fibonacci_fuses_both_arguments_and_the_last_result() {
        let all = steps(fibonacci(), "recur", Fusions::ALL);
        assert_eq!(shape(&all), "d C0 d C0h r");
        let none = Fusions {
            arguments: false,
            results: false,
            conditions: false,
        };
        assert_eq!(shape(&steps(fibonacci(), "recur", none)), "p c1 p c1 p");
    }

    /// `f(a, b, k)` calling `f(b - 1, a, k - 1)`: the kernel would write `a` before `a` is
    /// passed on, so nothing is fused; `f(a - 1, b, k - 1)` passes `b` to itself, and is.
    #[test]
    fn permuted_formals_are_not_fused() {
        for (permute, expected) in [(true, "p c0 r"), (false, "d C0 r")] {
            let mut b = ProgramBuilder::new();
            let t = Type::I64;
            let (x, y, k) = (
                b.var("a", t.clone()),
                b.var("b", t.clone()),
                b.var("k", t.clone()),
            );
            let (t1, t2, r, out) = (
                b.var("t1", t.clone()),
                b.var("t2", t.clone()),
                b.var("r", t.clone()),
                b.var("out", t.clone()),
            );
            let cond = b.var("cond", Type::BOOL);
            let f = b.function("f");
            b.signature(f, &[x, y, k], &[out]);
            let (entry, recur, done) =
                (b.block(f, "entry"), b.block(f, "recur"), b.block(f, "done"));
            b.prim(entry, &[cond], &[k], KernelId::new(0), "k > 0");
            b.branch(entry, cond, recur, done);
            let first = if permute { y } else { x };
            b.prim(
                recur,
                &[t1, t2],
                &[first, k],
                KernelId::new(1),
                "a - 1; k - 1",
            );
            let passed = if permute { x } else { y };
            b.call(recur, f, &[t1, passed, t2], &[r]);
            b.prim(recur, &[out], &[r, x], KernelId::new(2), "r + a");
            b.ret(recur);
            b.prim(done, &[out], &[x, y], KernelId::new(3), "a * b");
            b.ret(done);
            let main = b.function("main");
            let (m1, m2, m3) = (
                b.var("m1", t.clone()),
                b.var("m2", t.clone()),
                b.var("m3", t),
            );
            b.signature(main, &[m1, m2, m3], &[out]);
            let e = b.block(main, "main_entry");
            b.call(e, f, &[m1, m2, m3], &[out]);
            b.ret(e);
            let program = b.finish(main).expect("a valid program");
            assert_eq!(
                shape(&steps(program, "recur", Fusions::ALL)),
                expected,
                "{permute}"
            );
        }
    }

    /// The blocks of `program` whose lanes split as their condition is computed, by name.
    fn split_blocks(program: HighProgram, fusions: Fusions) -> Vec<String> {
        let exe = Executable::new(program, Vec::new()).expect("a valid program");
        let (high, _) = exe.high.as_ref().expect("a high-level program");
        let live = autobatch_ir::passes::liveness(high);
        let plan = Plan::with_fusions(high, &live, fusions);
        (0..high.blocks.len())
            .filter(|&b| plan.split[b].is_some())
            .map(|b| high.block(Block::new(b)).name.clone())
            .collect()
    }

    /// Fibonacci's condition is read by its branch alone: that block splits (not with the
    /// fusion off). A condition read again after the branch, or computed by a kernel that
    /// also reads it, or not last among the kernel's outputs, is not split.
    #[test]
    fn only_a_condition_left_to_its_branch_is_split() {
        assert_eq!(split_blocks(fibonacci(), Fusions::ALL), ["enter_fib"]);
        let off = Fusions {
            conditions: false,
            ..Fusions::ALL
        };
        assert!(split_blocks(fibonacci(), off).is_empty());
        for (case, program) in unsplit_conditions() {
            assert!(split_blocks(program, Fusions::ALL).is_empty(), "{case}");
        }
    }
}

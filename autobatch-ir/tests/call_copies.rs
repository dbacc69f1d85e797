//! Copy removal around calls in lowered programs (`remove_call_copies`): each rewrite and each
//! guard on small hand-lowered programs, checked by a one-lane stack machine (every variable a
//! stack, as the lowered program's pushes and pops treat it).

use autobatch_ir::passes::{prepare, remove_call_copies, Allocations, Passes};
use autobatch_ir::{
    Allocation, Block, DType, KernelId, KernelRef, LoweredProgram, Op, PrimOp, Program,
    ProgramBuilder, Terminator, Type, Var,
};
use autobatch_testkit::conformance::{self, numbering};

const K: KernelId = KernelId::new(0);

/// The printed ops of block `name` (not its terminator), kernel sources kept.
fn ops_of(p: &Program, name: &str) -> Vec<String> {
    let text = p.to_string();
    let mut lines = text.lines().skip_while(|l| *l != format!("  {name}:"));
    lines
        .next()
        .unwrap_or_else(|| panic!("no block `{name}` in\n{text}"));
    lines
        .take_while(|l| l.starts_with("    "))
        .map(|l| l.trim().to_string())
        .filter(|l| {
            let terminators = ["return", "goto(", "branch(", "push_goto(", "indirect_jump"];
            !terminators.iter().any(|t| l.starts_with(t))
        })
        .collect()
}

/// `outs = kernel(ins)`, written in place where `in_place` says so.
fn op(outs: &[Var], ins: &[Var], kernel: KernelRef, source: &str, in_place: &[Var]) -> Op {
    Op::Prim(PrimOp {
        outs: outs.to_vec(),
        ins: ins.to_vec(),
        kernel,
        source: source.to_string(),
        in_place: in_place.to_vec(),
    })
}

/// Kernels by their source text (`a - 1`, `a > 0`, `a + b`, ...); anything else is the sum of
/// its inputs plus the text's length.
fn eval(source: &str, ins: &[i64]) -> Vec<i64> {
    match source {
        "a - 1" | "n - 1" => vec![ins[0] - 1],
        "n - 2" => vec![ins[0] - 2],
        "n > 1" => vec![i64::from(ins[0] > 1)],
        "x + y" => vec![ins[0] + ins[1]],
        "1" => vec![1],
        "a > 0" => vec![i64::from(ins[0] > 0)],
        "a + b" => vec![ins[0] + ins[1]],
        "a * 3" => vec![ins[0] * 3],
        "a - 1; 7" => vec![ins[0] - 1, 7],
        "a * 3; a - 1" => vec![ins[0] * 3, ins[0] - 1],
        _ => vec![ins.iter().sum::<i64>() + source.len() as i64],
    }
}

/// Runs a lowered program on one lane with every variable a stack (a write pushes, an
/// in-place write replaces the top, a pop drops the top); the outputs, or what went wrong.
fn run(p: &Program, inputs: &[i64]) -> Result<Vec<i64>, String> {
    let mut stacks: Vec<Vec<i64>> = vec![Vec::new(); p.vars.len()];
    for (&v, &x) in p.inputs().iter().zip(inputs) {
        stacks[v.index()].push(x);
    }
    let mut returns: Vec<Block> = Vec::new();
    let mut at = p.main_function().entry();
    for _ in 0..10_000 {
        let data = p.block(at);
        for op in &data.ops {
            match op {
                Op::Prim(prim) => {
                    let mut ins = Vec::new();
                    for &v in &prim.ins {
                        let top = stacks[v.index()].last().copied();
                        ins.push(top.ok_or(format!("`{}` read unset", p.var(v).name))?);
                    }
                    let outs = match prim.kernel {
                        KernelRef::Assign => ins,
                        KernelRef::User(_) => eval(&prim.source, &ins),
                    };
                    for (&v, x) in prim.outs.iter().zip(outs) {
                        let s = &mut stacks[v.index()];
                        if prim.is_in_place(v) {
                            *s.last_mut().ok_or("in-place write of an empty stack")? = x;
                        } else {
                            s.push(x);
                        }
                    }
                }
                Op::Pop(vars) => {
                    for &v in vars {
                        stacks[v.index()]
                            .pop()
                            .ok_or(format!("pop of empty `{}`", p.var(v).name))?;
                    }
                }
                Op::Call(_) => return Err("a call in a lowered program".into()),
            }
        }
        at = match &data.term {
            Terminator::Goto(t) => *t,
            Terminator::Branch { cond, then_, else_ } => match stacks[cond.index()].last() {
                Some(0) => *else_,
                Some(_) => *then_,
                None => return Err("branch on unset".into()),
            },
            Terminator::PushGoto { ret, target } => {
                returns.push(*ret);
                *target
            }
            Terminator::IndirectGoto => match returns.pop() {
                Some(b) => b,
                None => break,
            },
            Terminator::Return => break,
        };
    }
    p.outputs()
        .iter()
        .map(|&v| {
            stacks[v.index()]
                .last()
                .copied()
                .ok_or(format!("output `{}` unset", p.var(v).name))
        })
        .collect()
}

/// Runs the pass and checks what holds for every program: the output verifies (the pass's
/// own check in debug builds), a second pass changes nothing, and every input gives the same
/// outputs.
fn removed(p: &LoweredProgram, inputs: &[&[i64]]) -> LoweredProgram {
    let out = remove_call_copies(p);
    assert_eq!(
        remove_call_copies(&out),
        out,
        "a second pass changes nothing"
    );
    for &x in inputs {
        assert_eq!(
            run(&out, x),
            run(p, x),
            "on {x:?}\nbefore:\n{p}\nafter:\n{out}"
        );
        assert!(run(p, x).is_ok(), "{:?}", run(p, x));
    }
    out
}

/// `f(n) = if n > 0 { f(n - 1) + n * 3 } else { 7 }`, lowered by hand the way lowering
/// writes it: the argument computed into `t`, copied into the pushed formal, the result
/// copied out of `ret` into `r` and read by the next op.
fn recursive(argument_in_place: bool) -> LoweredProgram {
    let mut b = ProgramBuilder::new();
    let [n, t, r, ret] = ["n", "t", "r", "ret"].map(|name| b.var(name, Type::I64));
    let c = b.var("c", Type::BOOL);
    for (v, a) in [
        (n, Allocation::Full),
        (t, Allocation::Temporary),
        (r, Allocation::Temporary),
        (ret, Allocation::Register),
        (c, Allocation::Register),
    ] {
        b.set_allocation(v, a);
    }
    let main = b.function("main");
    b.signature(main, &[n], &[ret]);
    let [entry, call, back, base] = ["entry", "call", "back", "base"].map(|s| b.block(main, s));
    b.prim(entry, &[c], &[n], K, "a > 0");
    b.branch(entry, c, call, base);
    b.op(call, op(&[t], &[n], KernelRef::User(K), "a - 1", &[]));
    let ip: &[Var] = if argument_in_place { &[n] } else { &[] };
    b.op(call, op(&[n], &[t], KernelRef::Assign, "assign", ip));
    b.pop(call, &[t]);
    b.push_goto(call, back, entry);
    b.op(back, op(&[r], &[ret], KernelRef::Assign, "assign", &[]));
    b.op(
        back,
        op(&[ret], &[r, n], KernelRef::User(K), "a + b", &[ret]),
    );
    b.pop(back, &[r, n]);
    b.indirect_goto(back);
    b.prim(base, &[ret], &[], K, "7");
    b.pop(base, &[n]);
    b.indirect_goto(base);
    b.finish_lowered(main).unwrap()
}

#[test]
fn a_kernel_writes_the_formal_and_the_next_op_reads_the_result() {
    let p = recursive(false);
    let inputs: [&[i64]; 4] = [&[0], &[1], &[5], &[-2]];
    let out = removed(&p, &inputs);
    assert_eq!(ops_of(&out, "call"), ["n = prim(n) by a - 1"]);
    assert_eq!(
        ops_of(&out, "back"),
        ["ret! = prim(ret, n) by a + b", "pop(n)"]
    );
    let t = out.var_named("t").unwrap();
    assert_eq!(
        out.var(t).alloc,
        Allocation::Null,
        "a removed variable is not stored"
    );
}

#[test]
fn the_kernel_keeps_the_assignments_in_place_write() {
    // `n! = t`: the kernel updates the top frame too (the callee then sees one frame fewer,
    // which the stack machine checks by the outputs it gives).
    let p = recursive(true);
    let out = remove_call_copies(&p);
    assert_eq!(ops_of(&out, "call"), ["n! = prim(n) by a - 1"]);
}

/// `main(n, m)`: `t = k(n)`, then `assign` (given), then `r = n + m`.
fn two_formals(assign: (&[&str], &[&str]), kernel: &str, kernel_outs: &[&str]) -> LoweredProgram {
    let mut b = ProgramBuilder::new();
    let names = ["n", "m", "t", "u", "r"];
    let vars: Vec<Var> = names.iter().map(|n| b.var(n, Type::I64)).collect();
    let var = |name: &str| vars[names.iter().position(|n| *n == name).unwrap()];
    for &v in &vars {
        b.set_allocation(v, Allocation::Full);
    }
    let main = b.function("main");
    b.signature(main, &[var("n"), var("m")], &[var("r")]);
    let entry = b.block(main, "entry");
    let outs: Vec<Var> = kernel_outs.iter().map(|n| var(n)).collect();
    b.prim(entry, &outs, &[var("n")], K, kernel);
    let (aouts, ains) = assign;
    let aouts: Vec<Var> = aouts.iter().map(|n| var(n)).collect();
    let ains: Vec<Var> = ains.iter().map(|n| var(n)).collect();
    b.assign(entry, &aouts, &ains);
    b.prim(entry, &[var("r")], &[var("n"), var("m")], K, "a + b");
    b.ret(entry);
    b.finish_lowered(main).unwrap()
}

#[test]
fn an_assignment_reading_the_formal_it_writes_keeps_its_copy() {
    // `f(n - 1, n)` into formals `(n, m)`: `t = n - 1; n, m = (t, n)`. The second argument
    // reads the `n` the first writes: `n = n - 1` first would pass `m` the new `n`.
    let p = two_formals((&["n", "m"], &["t", "n"]), "a - 1", &["t"]);
    let out = removed(&p, &[&[10, 0], &[3, 4]]);
    assert_eq!(out, p, "nothing to remove:\n{out}");
    assert_eq!(run(&out, &[10, 0]), Ok(vec![9 + 10]));
}

#[test]
fn a_permuted_assignment_forwards_what_it_can() {
    // `t = n - 1; m, n = (n, t)`: `m` takes the old `n` first, so `n` cannot be written by
    // the kernel; nothing changes.
    let p = two_formals((&["m", "n"], &["n", "t"]), "a - 1", &["t"]);
    assert_eq!(removed(&p, &[&[10, 0]]), p);
    // `t = n - 1; m = t`: `m` is no input of the assignment, the kernel writes it.
    let p = two_formals((&["m"], &["t"]), "a - 1", &["t"]);
    let out = removed(&p, &[&[10, 0], &[-1, 5]]);
    assert_eq!(ops_of(&out, "entry")[0], "m = prim(n) by a - 1");
}

#[test]
fn a_kernel_with_two_results_writes_both_formals() {
    // Ackermann's `ackermann(m - 1, 1)`: `t, u = (n - 1; 7); n, m = (t, u)`.
    let p = two_formals((&["n", "m"], &["t", "u"]), "a - 1; 7", &["t", "u"]);
    let out = removed(&p, &[&[10, 0], &[3, 4]]);
    assert_eq!(
        ops_of(&out, "entry"),
        ["n, m = prim(n) by a - 1; 7", "r = prim(n, m) by a + b"]
    );
}

#[test]
fn a_kernel_already_writing_the_target_keeps_the_copy() {
    // `t, m = (n * 3; n - 1); m = t`: the kernel would write `m` twice.
    let p = two_formals((&["m"], &["t"]), "a * 3; a - 1", &["t", "m"]);
    assert_eq!(removed(&p, &[&[10, 0]]), p);
}

/// `main(x, y)`: `t = x` by assign, then `between` pops, then `r = t + y`.
fn copy_then_read(between: &[&str], also_write_x: bool) -> LoweredProgram {
    let mut b = ProgramBuilder::new();
    let names = ["x", "y", "t", "r", "z"];
    let vars: Vec<Var> = names.iter().map(|n| b.var(n, Type::I64)).collect();
    let var = |name: &str| vars[names.iter().position(|n| *n == name).unwrap()];
    for &v in &vars {
        b.set_allocation(v, Allocation::Full);
    }
    let main = b.function("main");
    b.signature(main, &[var("x"), var("y")], &[var("r")]);
    let entry = b.block(main, "entry");
    // A second frame of `x`, so a pop of `x` leaves a different value on top.
    b.prim(entry, &[var("x")], &[var("y")], K, "a * 3");
    if also_write_x {
        b.assign(entry, &[var("t"), var("x")], &[var("x"), var("y")]);
    } else {
        b.assign(entry, &[var("t")], &[var("x")]);
    }
    let popped: Vec<Var> = between.iter().map(|n| var(n)).collect();
    if !popped.is_empty() {
        b.pop(entry, &popped);
    }
    b.prim(entry, &[var("r")], &[var("t"), var("y")], K, "a + b");
    b.pop(entry, &[var("t")]);
    b.ret(entry);
    b.finish_lowered(main).unwrap()
}

#[test]
fn the_next_op_reads_the_source_of_a_copy() {
    let p = copy_then_read(&[], false);
    let out = removed(&p, &[&[1, 2], &[-4, 9]]);
    assert_eq!(
        ops_of(&out, "entry"),
        ["x = prim(y) by a * 3", "r = prim(x, y) by a + b"]
    );
    // Pops of other variables between the two are no obstacle.
    let p = copy_then_read(&["z"], false);
    let out = remove_call_copies(&p);
    assert_eq!(ops_of(&out, "entry")[1], "pop(z)");
    assert_eq!(ops_of(&out, "entry")[2], "r = prim(x, y) by a + b");
}

#[test]
fn a_pop_of_the_source_between_keeps_the_copy() {
    // `t = x; pop(x); r = t + y`: after the pop, `x` is the frame under the copied one.
    let p = copy_then_read(&["x"], false);
    assert_eq!(removed(&p, &[&[1, 2], &[-4, 9]]), p);
}

#[test]
fn a_copy_whose_assignment_also_writes_the_source_stays() {
    // `t, x = (x, y); r = t + y`: the op would read the new `x`.
    let p = copy_then_read(&[], true);
    assert_eq!(removed(&p, &[&[1, 2], &[-4, 9]]), p);
}

#[test]
fn program_inputs_and_outputs_and_values_read_twice_stay() {
    // `r = y` copies into the program's output: never removed.
    let mut b = ProgramBuilder::new();
    let [x, y, r, t] = ["x", "y", "r", "t"].map(|n| b.var(n, Type::I64));
    let main = b.function("main");
    b.signature(main, &[x, y], &[r]);
    let entry = b.block(main, "entry");
    b.prim(entry, &[t], &[x], K, "a - 1");
    b.assign(entry, &[y], &[t]);
    b.prim(entry, &[r], &[t, y], K, "a + b");
    b.ret(entry);
    let p = b.finish_lowered(main).unwrap();
    // `t` is read twice: the kernel keeps writing it.
    assert_eq!(removed(&p, &[&[1, 2]]), p);
}

#[test]
fn only_the_full_vms_program_changes() {
    // Stackless runs `Prepared::high`: the pass never touches it.
    let fib = conformance::fibonacci_function_calls(&mut numbering(), DType::I64);
    let prepared = |call_copies: bool| {
        let passes = Passes {
            call_copies,
            ..Passes::default()
        };
        prepare(fib.clone().into(), &passes, Allocations::Compute, |_| false).unwrap()
    };
    let (on, off) = (prepared(true), prepared(false));
    assert_eq!(on.high, off.high);
    assert_ne!(on.lowered, off.lowered);
    assert_eq!(run(&on.lowered, &[7]), Ok(vec![21]));
    for x in [0, 1, 2, 7] {
        assert!(
            run(&on.lowered, &[x]).is_ok(),
            "{:?}\n{}",
            run(&on.lowered, &[x]),
            on.lowered
        );
        assert_eq!(run(&on.lowered, &[x]), run(&off.lowered, &[x]), "fib({x})");
    }
}

//! Lowering, pop-push fusion and block priority: golden printed forms, structure, errors,
//! purity, and a strict single-lane stack simulator that runs lowered programs.

mod support;

use autobatch_ir::passes::{
    allocate, fuse_pop_push, inline_calls, lower, prioritize_blocks, prioritize_blocks_deferring,
    propagate_copies, remove_call_copies, simplify_blocks, InlineOptions,
};
use autobatch_ir::{
    verify_high, verify_lowered, Block, DType, FuncId, HighProgram, KernelId, KernelRef, Location,
    LoweredProgram, Op, Program, ProgramBuilder, Terminator, Type, Var, VerifyErrors,
};
use autobatch_testkit::conformance::{self, numbering};
use std::collections::HashSet;
use support::assert_golden;

// ---------------------------------------------------------------------------------------------
// Helpers
// ---------------------------------------------------------------------------------------------

/// Verifies a copy of `p` as a lowered program (the passes' outputs are verified by
/// construction; these checks make sure of it).
fn verify(p: &LoweredProgram) -> Result<(), VerifyErrors> {
    verify_lowered((**p).clone()).map(drop)
}

/// Verifies a copy of `p` as a high-level program.
fn verify_high_copy(p: &HighProgram) -> Result<(), VerifyErrors> {
    verify_high((**p).clone()).map(drop)
}

/// Allocation first (as the pipeline does), then lowering.
fn lowered(p: &HighProgram) -> LoweredProgram {
    let allocated = allocate(p);
    let low = lower(&allocated).unwrap_or_else(|e| panic!("lowering failed: {e}"));
    assert_eq!(
        low.allocations(),
        allocated.allocations(),
        "lowering must keep every allocation"
    );
    low
}

fn full_pipeline(p: &HighProgram) -> LoweredProgram {
    prioritize_blocks(&fuse_pop_push(&lowered(p)))
}

/// What the runtime prepares for the full VM, with every non-recursive call inlined: inline,
/// simplify, propagate copies, simplify, allocate, lower, simplify, fuse, remove the copies
/// around calls, prioritize.
fn prepared(p: &HighProgram) -> LoweredProgram {
    let every = InlineOptions {
        max_ops: usize::MAX,
    };
    let high = simplify_blocks(&inline_calls(p, &every));
    let high = allocate(&simplify_blocks(&propagate_copies(&high)));
    verify_high_copy(&high)
        .unwrap_or_else(|e| panic!("simplified program does not verify:\n{e}\n{high}"));
    let low = simplify_blocks(&lower(&high).unwrap_or_else(|e| panic!("lowering failed: {e}")));
    let out = prioritize_blocks(&remove_call_copies(&fuse_pop_push(&low)));
    verify(&out).unwrap_or_else(|e| panic!("prepared program does not verify:\n{e}\n{out}"));
    out
}

/// The printed program without its declaration section: the allocations it shows are the
/// allocation pass's business (and may change while it is written), not lowering's.
fn body_text(p: &Program) -> String {
    let text = p.to_string();
    let start = text.find("\ndef ").expect("a function") + 1;
    text[start..].to_string()
}

/// `name:  op; op; terminator` per block, with kernel sources (` by ...`) dropped.
fn compact(p: &Program) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in body_text(p).lines() {
        if let Some(op) = line.strip_prefix("    ") {
            let op = op.split(" by ").next().unwrap_or(op);
            let last = out.last_mut().expect("op before any block");
            if last.ends_with(':') {
                last.push_str("  ");
            } else {
                last.push_str("; ");
            }
            last.push_str(op);
        } else if let Some(label) = line.strip_prefix("  ") {
            if !label.starts_with("returns") {
                out.push(label.to_string());
            }
        }
    }
    out
}

fn terminators(p: &Program) -> Vec<&Terminator> {
    p.blocks.iter().map(|b| &b.term).collect()
}

fn count_push_gotos(p: &Program) -> usize {
    terminators(p)
        .iter()
        .filter(|t| matches!(t, Terminator::PushGoto { .. }))
        .count()
}

/// Structural invariants of every lowered program.
fn check_structure(high: &HighProgram, low: &LoweredProgram) {
    assert_eq!(low.functions.len(), 1);
    assert_eq!(low.main, FuncId::new(0));
    let main = &low.functions[FuncId::new(0)];
    let hmain = high.main_function();
    assert_eq!(main.name, hmain.name);
    assert_eq!(main.params, hmain.params);
    assert_eq!(main.returns, hmain.returns);
    let expected: Vec<Block> = (0..low.blocks.len()).map(Block::new).collect();
    assert_eq!(main.blocks, expected);
    let names: HashSet<&str> = low.blocks.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(names.len(), low.blocks.len(), "block names must be unique");
    assert_eq!(
        low.vars,
        allocate(high).vars,
        "variables (with their allocations) are unchanged"
    );
    assert!(low
        .blocks
        .iter()
        .all(|b| b.ops.iter().all(|op| !matches!(op, Op::Call(_)))));
    verify(low).unwrap_or_else(|e| panic!("lowered program does not verify:\n{e}\n{low}"));
}

// ---------------------------------------------------------------------------------------------
// A strict single-lane stack simulator
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq)]
enum Val {
    I(i64),
    B(bool),
}

fn int(v: Val) -> Result<i64, String> {
    match v {
        Val::I(i) => Ok(i),
        Val::B(b) => Err(format!("expected an integer, found {b}")),
    }
}

/// Interprets a kernel from its source text; inputs are positional.
fn eval(source: &str, ins: &[Val]) -> Result<Vec<Val>, String> {
    let want = |n: usize| -> Result<(), String> {
        if ins.len() == n {
            Ok(())
        } else {
            Err(format!(
                "kernel `{source}` takes {n} inputs, got {}",
                ins.len()
            ))
        }
    };
    let a = || int(ins[0]);
    let b = || int(ins[1]);
    let v = match source {
        "0" | "1" | "2" => {
            want(0)?;
            Val::I(source.parse().expect("digit"))
        }
        "true" | "false" => {
            want(0)?;
            Val::B(source == "true")
        }
        "n > 1" => {
            want(1)?;
            Val::B(a()? > 1)
        }
        "n > 0" => {
            want(1)?;
            Val::B(a()? > 0)
        }
        "n < 1" => {
            want(1)?;
            Val::B(a()? < 1)
        }
        "n <= 1" => {
            want(1)?;
            Val::B(a()? <= 1)
        }
        "b == 0" => {
            want(1)?;
            Val::B(a()? == 0)
        }
        "n - 1" => {
            want(1)?;
            Val::I(a()? - 1)
        }
        "n - 2" => {
            want(1)?;
            Val::I(a()? - 2)
        }
        "acc + 2" => {
            want(1)?;
            Val::I(a()? + 2)
        }
        "x + y" | "acc + n" => {
            want(2)?;
            Val::I(a()? + b()?)
        }
        "a % b" => {
            want(2)?;
            let d = b()?;
            if d == 0 {
                return Err("a % 0".into());
            }
            Val::I(a()? % d)
        }
        other => return Err(format!("unknown kernel source `{other}`")),
    };
    Ok(vec![v])
}

/// What a finished run left behind.
#[derive(Debug)]
struct Outcome {
    outputs: Vec<Val>,
    /// The deepest any variable's stack got.
    max_depth: usize,
    /// The deepest the return-address stack got (the halt marker counts).
    max_ret_depth: usize,
    /// Blocks run.
    steps: usize,
}

const STEP_LIMIT: usize = 1_000_000;

/// Runs a lowered program on one lane. Every variable is a stack: a write pushes a new frame
/// unless in place (which needs a frame), a pop needs a frame, a read needs a frame. The
/// return-address stack starts with a halt marker; `push_goto` pushes, `indirect_jump` pops.
/// At the end every output must hold exactly one frame and every other variable none.
fn simulate(p: &LoweredProgram, inputs: &[Val]) -> Result<Outcome, String> {
    if p.functions.len() != 1 {
        return Err("not a lowered program".into());
    }
    let main = p.main_function();
    if inputs.len() != main.params.len() {
        return Err("wrong number of inputs".into());
    }
    let mut stacks: Vec<Vec<Val>> = vec![Vec::new(); p.vars.len()];
    let name = |v: Var| p.var(v).name.clone();
    for (&v, &x) in main.params.iter().zip(inputs) {
        stacks[v.index()].push(x);
    }
    let mut max_depth = stacks.iter().map(Vec::len).max().unwrap_or(0);
    let mut ret: Vec<Option<Block>> = vec![None];
    let mut max_ret_depth = 1;
    let mut pc = main.entry();
    let mut steps = 0;
    loop {
        steps += 1;
        if steps > STEP_LIMIT {
            return Err("step limit".into());
        }
        let block = p.block(pc);
        let at = |what: String| format!("block `{}`: {what}", block.name);
        for op in &block.ops {
            match op {
                Op::Prim(prim) => {
                    let mut ins = Vec::new();
                    for &v in &prim.ins {
                        let top = stacks[v.index()]
                            .last()
                            .copied()
                            .ok_or_else(|| at(format!("read of unset `{}`", name(v))))?;
                        ins.push(top);
                    }
                    let outs = match prim.kernel {
                        KernelRef::Assign => ins,
                        KernelRef::User(_) => eval(&prim.source, &ins).map_err(at)?,
                    };
                    if outs.len() != prim.outs.len() {
                        return Err(at(format!("op `{}` arity", prim.source)));
                    }
                    if prim.in_place.iter().any(|v| !prim.outs.contains(v)) {
                        return Err(at("in-place write of a variable it does not output".into()));
                    }
                    for (&v, x) in prim.outs.iter().zip(outs) {
                        let s = &mut stacks[v.index()];
                        if prim.is_in_place(v) {
                            let top = s.last_mut().ok_or_else(|| {
                                at(format!("in-place write of unset `{}`", name(v)))
                            })?;
                            *top = x;
                        } else {
                            s.push(x);
                            max_depth = max_depth.max(s.len());
                        }
                    }
                }
                Op::Pop(vars) => {
                    for &v in vars {
                        stacks[v.index()]
                            .pop()
                            .ok_or_else(|| at(format!("pop of empty `{}`", name(v))))?;
                    }
                }
                Op::Call(_) => return Err(at("call in a lowered program".into())),
            }
        }
        match &block.term {
            Terminator::Goto(t) => pc = *t,
            Terminator::Branch { cond, then_, else_ } => {
                match stacks[cond.index()].last().copied() {
                    Some(Val::B(true)) => pc = *then_,
                    Some(Val::B(false)) => pc = *else_,
                    other => return Err(at(format!("bad condition {other:?}"))),
                }
            }
            Terminator::PushGoto { ret: r, target } => {
                ret.push(Some(*r));
                max_ret_depth = max_ret_depth.max(ret.len());
                pc = *target;
            }
            Terminator::IndirectGoto => match ret.pop() {
                Some(Some(b)) => pc = b,
                Some(None) => {
                    if !ret.is_empty() {
                        return Err(at("halt marker not at the bottom".into()));
                    }
                    break;
                }
                None => return Err(at("indirect jump with an empty return stack".into())),
            },
            Terminator::Return => {
                if ret != [None] {
                    return Err(at(format!("return with return stack {ret:?}")));
                }
                break;
            }
        }
    }
    let mut outputs = Vec::new();
    for &v in &main.returns {
        outputs.push(
            stacks[v.index()]
                .last()
                .copied()
                .ok_or_else(|| format!("output `{}` unset", name(v)))?,
        );
    }
    for (i, s) in stacks.iter().enumerate() {
        let v = Var::new(i);
        let expected = usize::from(main.returns.contains(&v));
        if s.len() != expected {
            return Err(format!(
                "`{}` ends with {} frames, expected {expected}",
                name(v),
                s.len()
            ));
        }
    }
    Ok(Outcome {
        outputs,
        max_depth,
        max_ret_depth,
        steps,
    })
}

/// Lowers `high` and runs the lowered, fused and fused+prioritized forms on every case, and
/// the lowered form with its blocks simplified, and the whole pipeline with every non-recursive
/// call inlined ([`prepared`]).
fn check_runs(high: &HighProgram, cases: &[(Vec<Val>, Vec<Val>)]) -> Vec<Outcome> {
    let low = lowered(high);
    check_structure(high, &low);
    let fused = fuse_pop_push(&low);
    let prio = prioritize_blocks(&fused);
    let uncopied = remove_call_copies(&fused);
    verify(&uncopied).unwrap_or_else(|e| panic!("call copies removed: does not verify:\n{e}"));
    let simple = simplify_blocks(&low);
    verify(&simple).unwrap_or_else(|e| panic!("simplified program does not verify:\n{e}"));
    assert!(simple.blocks.len() <= low.blocks.len());
    let whole = prepared(high);
    let mut outcomes = Vec::new();
    for (inputs, expected) in cases {
        for (what, p) in [
            ("lowered", &low),
            ("fused", &fused),
            ("prioritized", &prio),
            ("fused, call copies removed", &uncopied),
            ("simplified", &simple),
            (
                "inlined, copies propagated, simplified, fused, call copies removed, prioritized",
                &whole,
            ),
        ] {
            let out = simulate(p, inputs)
                .unwrap_or_else(|e| panic!("{what} run on {inputs:?} failed: {e}\n{p}"));
            assert_eq!(&out.outputs, expected, "{what} run on {inputs:?}\n{p}");
            if what == "lowered" {
                outcomes.push(out);
            }
        }
    }
    outcomes
}

fn ints(xs: &[i64]) -> Vec<Val> {
    xs.iter().map(|&x| Val::I(x)).collect()
}

// ---------------------------------------------------------------------------------------------
// Golden printed forms
// ---------------------------------------------------------------------------------------------

#[test]
fn lowered_forms_print_as_blessed() {
    let cases = [
        (
            "lower_fibonacci_function_calls",
            conformance::fibonacci_function_calls(&mut numbering(), DType::I64),
        ),
        (
            "lower_is_even_with_pops",
            conformance::is_even_function_calls(&mut numbering(), DType::I64, true),
        ),
        (
            "lower_is_even_without_pops",
            conformance::is_even_function_calls(&mut numbering(), DType::I64, false),
        ),
        ("lower_iota_sum", conformance::iota_sum(&mut numbering())),
        ("lower_gcd", conformance::gcd(&mut numbering())),
        ("lower_countdown", conformance::countdown(&mut numbering())),
        (
            "lower_fibonacci_sync",
            conformance::fibonacci_sync(&mut numbering()),
        ),
        (
            "lower_single_if",
            conformance::single_if_program(&mut numbering()),
        ),
        (
            "lower_constant",
            conformance::constant_program(&mut numbering()),
        ),
    ];
    for (name, high) in cases {
        let low = lowered(&high);
        check_structure(&high, &low);
        assert_golden(name, &body_text(&low));
    }
}

#[test]
fn fibonacci_lowered_fused_prioritized_prints_as_blessed() {
    let high = conformance::fibonacci_function_calls(&mut numbering(), DType::I64);
    assert_golden(
        "lower_fibonacci_function_calls_fused_prioritized",
        &body_text(&full_pipeline(&high)),
    );
}

/// The reference's lowered fib (docs/reference-semantics.md, "Lowering calls"), block by block.
#[test]
fn fibonacci_lowers_like_the_reference() {
    let high = conformance::fibonacci_function_calls(&mut numbering(), DType::I64);
    let low = lowered(&high);
    assert_eq!(
        compact(&low),
        [
            "main_entry:  n = prim(n1); pop(n1); goto(enter_fib)",
            "enter_fib:  cond = prim(n); branch(cond, recur, finish)",
            "recur:  pop(cond); nm1 = prim(n); n = prim(nm1); pop(nm1); push_goto(recur_ret1, enter_fib)",
            "recur_ret1:  fibm1 = prim(ans); pop(ans); nm2 = prim(n); pop(n); n = prim(nm2); pop(nm2); push_goto(recur_ret2, enter_fib)",
            "recur_ret2:  fibm2 = prim(ans); pop(ans); ans = prim(fibm1, fibm2); pop(fibm1, fibm2); indirect_jump",
            "finish:  pop(n, cond); ans = prim(); indirect_jump",
        ]
    );
    // Fusion turns the pop(n) + push of n into an in-place update, as in the reference.
    let fused = fuse_pop_push(&low);
    assert_eq!(
        compact(&fused)[3],
        "recur_ret1:  fibm1 = prim(ans); nm2 = prim(n); n! = prim(nm2); pop(ans, nm2); push_goto(recur_ret2, enter_fib)"
    );
}

// ---------------------------------------------------------------------------------------------
// Shape of the lowered code
// ---------------------------------------------------------------------------------------------

#[test]
fn tail_calls_become_jumps_and_other_calls_push_gotos() {
    for high in [
        conformance::iota_sum(&mut numbering()),
        conformance::gcd(&mut numbering()),
        conformance::countdown(&mut numbering()),
    ] {
        let low = lowered(&high);
        assert_eq!(count_push_gotos(&low), 0, "{low}");
    }
    let fib = lowered(&conformance::fibonacci_function_calls(
        &mut numbering(),
        DType::I64,
    ));
    assert_eq!(count_push_gotos(&fib), 2);
    let sync = lowered(&conformance::fibonacci_sync(&mut numbering()));
    assert_eq!(count_push_gotos(&sync), 2);
    // With the explicit `pop(nm1)` after the call, is_even's calls are not in tail position.
    let with_pops = lowered(&conformance::is_even_function_calls(
        &mut numbering(),
        DType::I64,
        true,
    ));
    assert_eq!(count_push_gotos(&with_pops), 2);
    let without = lowered(&conformance::is_even_function_calls(
        &mut numbering(),
        DType::I64,
        false,
    ));
    assert_eq!(count_push_gotos(&without), 0);
}

#[test]
fn gcd_swapped_arguments_are_one_simultaneous_assign_with_an_in_place_write() {
    let high = conformance::gcd(&mut numbering());
    let low = lowered(&high);
    let (a, b, r) = (
        high.var_named("a").unwrap(),
        high.var_named("b").unwrap(),
        high.var_named("r").unwrap(),
    );
    let recur = low.block(low.block_named("recur").unwrap());
    let assign = recur
        .ops
        .iter()
        .find_map(|op| match op {
            Op::Prim(p) if p.kernel == KernelRef::Assign => Some(p),
            _ => None,
        })
        .expect("argument assign");
    // `a` was popped after its last read (`r = a % b`) so it is pushed; `b` is still defined
    // and dead after the call, so the callee's copy overwrites it in place.
    assert_eq!(assign.outs, [a, b]);
    assert_eq!(assign.ins, [b, r]);
    assert_eq!(assign.in_place, [b]);
    assert_eq!(
        recur.term,
        Terminator::Goto(low.block_named("enter_gcd").unwrap())
    );
    // Fusion makes `a` in place as well: no stack traffic at all in the loop.
    let fused = fuse_pop_push(&low);
    let line = compact(&fused)
        .into_iter()
        .find(|l| l.starts_with("recur:"))
        .unwrap();
    assert_eq!(
        line,
        "recur:  r = prim(a, b); a!, b! = prim(b, r); pop(cond, r); goto(enter_gcd)"
    );
}

#[test]
fn loop_carried_variables_update_in_place() {
    let low = lowered(&conformance::countdown(&mut numbering()));
    let body = compact(&low)
        .into_iter()
        .find(|l| l.starts_with("loop_body:"))
        .unwrap();
    assert_eq!(
        body,
        "loop_body:  pop(cond); n! = prim(n); acc! = prim(acc); goto(loop_head)"
    );
}

// ---------------------------------------------------------------------------------------------
// Running lowered programs
// ---------------------------------------------------------------------------------------------

#[test]
fn fibonacci_runs() {
    let fibs = [1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89];
    let cases: Vec<_> = fibs
        .iter()
        .enumerate()
        .map(|(n, &f)| (ints(&[n as i64]), ints(&[f])))
        .collect();
    let high = conformance::fibonacci_function_calls(&mut numbering(), DType::I64);
    let outs = check_runs(&high, &cases);
    // Non-tail recursion uses return addresses: depth grows with n.
    assert!(outs[10].max_ret_depth >= 10, "{:?}", outs[10]);
}

#[test]
fn fibonacci_sync_runs() {
    let cases: Vec<_> = [(3, 3), (7, 21), (4, 5), (5, 8), (0, 1), (1, 1)]
        .iter()
        .map(|&(n, f)| (ints(&[n]), ints(&[f])))
        .collect();
    check_runs(&conformance::fibonacci_sync(&mut numbering()), &cases);
}

#[test]
fn is_even_runs_with_and_without_pops() {
    let cases: Vec<_> = (0..8)
        .map(|n| (ints(&[n]), vec![Val::B(n % 2 == 0)]))
        .collect();
    for with_pops in [true, false] {
        let high = conformance::is_even_function_calls(&mut numbering(), DType::I64, with_pops);
        let outs = check_runs(&high, &cases);
        let ret = outs[7].max_ret_depth;
        if with_pops {
            assert!(ret >= 8, "non-tail mutual recursion: {ret}");
        } else {
            assert_eq!(ret, 1, "tail calls need no return addresses");
            assert!(outs[7].max_depth <= 2, "{:?}", outs[7]);
        }
    }
}

#[test]
fn iota_sum_runs_in_constant_stack() {
    let high = conformance::iota_sum(&mut numbering());
    let cases = [
        (ints(&[12, 0]), ints(&[78])),
        (ints(&[100, 0]), ints(&[5050])),
        (ints(&[-13, 0]), ints(&[0])),
    ];
    let outs = check_runs(&high, &cases);
    for o in &outs {
        assert_eq!(o.max_ret_depth, 1, "{o:?}");
        assert!(o.max_depth <= 1, "{o:?}");
    }
    assert!(outs[1].steps > 100);
}

#[test]
fn gcd_runs_in_constant_stack() {
    let high = conformance::gcd(&mut numbering());
    let cases = [
        (ints(&[7, 9]), ints(&[1])),
        (ints(&[12, 9]), ints(&[3])),
        (ints(&[49, 56]), ints(&[7])),
    ];
    for o in check_runs(&high, &cases) {
        assert_eq!(o.max_ret_depth, 1, "{o:?}");
        assert!(o.max_depth <= 1, "{o:?}");
    }
}

#[test]
fn countdown_single_if_and_constant_run() {
    check_runs(
        &conformance::countdown(&mut numbering()),
        &[
            (ints(&[3]), ints(&[6])),
            (ints(&[0]), ints(&[0])),
            (ints(&[-1]), ints(&[0])),
        ],
    );
    check_runs(
        &conformance::single_if_program(&mut numbering()),
        &[
            (ints(&[0]), ints(&[0])),
            (ints(&[5]), ints(&[2])),
            (ints(&[-15]), ints(&[0])),
        ],
    );
    check_runs(
        &conformance::constant_program(&mut numbering()),
        &[(ints(&[5]), ints(&[2]))],
    );
}

/// `pair(p, q) = (q, p)`; `main(a, b) { (a, b) = pair(a, b); c = a % b }`: results written
/// back over the arguments, in swapped order.
fn swap_through_call() -> HighProgram {
    let mut b = ProgramBuilder::new();
    let [a, bb, c, p, q] = ["a", "b", "c", "p", "q"].map(|n| b.var(n, Type::I64));
    let pair = b.function("pair");
    b.signature(pair, &[p, q], &[q, p]);
    let pe = b.block(pair, "enter_pair");
    b.ret(pe);
    let main = b.function("main");
    b.signature(main, &[a, bb], &[c]);
    let e = b.block(main, "entry");
    b.call(e, pair, &[a, bb], &[a, bb]);
    b.prim(e, &[c], &[a, bb], KernelId::new(0), "a % b");
    b.ret(e);
    b.finish(main).unwrap()
}

/// `g(n) = (n - 1, n - 2)`; `main(n) { x = n - 1; (y, w) = g(n); t = x + y; z = t + w }`:
/// the callee's return variables `x`, `y` are the caller's `x` (live across the call) and the
/// caller's first result in another position.
fn results_overlap_returns() -> HighProgram {
    let mut b = ProgramBuilder::new();
    let [n, x, y, w, t, z] = ["n", "x", "y", "w", "t", "z"].map(|s| b.var(s, Type::I64));
    let g = b.function("g");
    b.signature(g, &[n], &[x, y]);
    let ge = b.block(g, "enter_g");
    b.prim(ge, &[x], &[n], KernelId::new(0), "n - 1");
    b.prim(ge, &[y], &[n], KernelId::new(1), "n - 2");
    b.ret(ge);
    let main = b.function("main");
    b.signature(main, &[n], &[z]);
    let e = b.block(main, "entry");
    b.prim(e, &[x], &[n], KernelId::new(0), "n - 1");
    b.call(e, g, &[n], &[y, w]);
    b.prim(e, &[t], &[x, y], KernelId::new(2), "x + y");
    b.prim(e, &[z], &[t, w], KernelId::new(2), "x + y");
    b.ret(e);
    b.finish(main).unwrap()
}

/// `f(n) = { if n > 0 { n = n - 1 } ; n - 2 }` (a join block with two predecessors, so the
/// branch edge needs a pad), called in a loop whose results are summed, with one call whose
/// result is thrown away.
fn pads_loops_and_unused_results() -> HighProgram {
    let mut b = ProgramBuilder::new();
    let [n, r, acc, t, u] = ["n", "r", "acc", "t", "u"].map(|s| b.var(s, Type::I64));
    let [c, c2] = ["c", "c2"].map(|s| b.var(s, Type::BOOL));
    let f = b.function("f");
    b.signature(f, &[n], &[r]);
    let fe = b.block(f, "enter_f");
    let pos = b.block(f, "pos");
    let join = b.block(f, "join");
    b.prim(fe, &[c], &[n], KernelId::new(0), "n > 0");
    b.branch(fe, c, pos, join);
    b.prim(pos, &[n], &[n], KernelId::new(1), "n - 1");
    b.goto(pos, join);
    b.prim(join, &[r], &[n], KernelId::new(2), "n - 2");
    b.ret(join);
    let main = b.function("main");
    b.signature(main, &[n], &[acc]);
    let e = b.block(main, "entry");
    let head = b.block(main, "head");
    let body = b.block(main, "body");
    let exit = b.block(main, "exit");
    b.prim(e, &[acc], &[], KernelId::new(3), "0");
    b.call(e, f, &[n], &[u]);
    b.goto(e, head);
    b.prim(head, &[c2], &[n], KernelId::new(0), "n > 0");
    b.branch(head, c2, body, exit);
    b.call(body, f, &[n], &[t]);
    b.prim(body, &[acc], &[acc, t], KernelId::new(4), "x + y");
    b.prim(body, &[n], &[n], KernelId::new(1), "n - 1");
    b.goto(body, head);
    b.ret(exit);
    b.finish(main).unwrap()
}

/// `g(n) = if n < 1 { 0 } else { n - 1 }` with the reference's explicit pops (of its
/// parameter and condition), called twice: `main(n) { a = g(n); b = g(a); z = a + b }`.
fn helper_with_pops() -> HighProgram {
    let mut b = ProgramBuilder::new();
    let [n, nm1, r, m, x, y, z] =
        ["n", "nm1", "r", "m", "x", "y", "z"].map(|s| b.var(s, Type::I64));
    let c = b.var("c", Type::BOOL);
    let g = b.function("g");
    b.signature(g, &[n], &[r]);
    let enter = b.block(g, "enter_g");
    let base = b.block(g, "base");
    let recur = b.block(g, "recur");
    b.prim(enter, &[c], &[n], KernelId::new(0), "n < 1");
    b.branch(enter, c, base, recur);
    b.pop(base, &[n, c]);
    b.prim(base, &[r], &[], KernelId::new(1), "0");
    b.ret(base);
    b.pop(recur, &[c]);
    b.prim(recur, &[nm1], &[n], KernelId::new(2), "n - 1");
    b.pop(recur, &[n]);
    b.assign(recur, &[r], &[nm1]);
    b.pop(recur, &[nm1]);
    b.ret(recur);
    let main = b.function("main");
    b.signature(main, &[m], &[z]);
    let e = b.block(main, "entry");
    b.call(e, g, &[m], &[x]);
    b.call(e, g, &[x], &[y]);
    b.prim(e, &[z], &[x, y], KernelId::new(3), "x + y");
    b.ret(e);
    b.finish(main).unwrap()
}

#[test]
fn inlined_pops_stay_in_place() {
    let g = |n: i64| if n < 1 { 0 } else { n - 1 };
    let cases: Vec<_> = [-3, 0, 1, 2, 7]
        .iter()
        .map(|&n| (ints(&[n]), ints(&[g(n) + g(g(n))])))
        .collect();
    let high = helper_with_pops();
    check_runs(&high, &cases);
    let whole = prepared(&high);
    assert_eq!(count_push_gotos(&whole), 0, "{whole}");
    // Each copy pops its own parameter and condition where the callee did.
    let inlined = inline_calls(&high, &InlineOptions::default());
    let text = compact(&simplify_blocks(&inlined));
    for expected in [
        "base@main.2:  pop(n@main.2, c@main.2); r@main.2 = prim(); goto(g.exit@main.2)",
        "recur@main.1:  pop(c@main.1); nm1@main.1 = prim(n@main.1); pop(n@main.1); r@main.1 = prim(nm1@main.1); pop(nm1@main.1); goto(g.exit@main.1)",
    ] {
        assert!(text.contains(&expected.to_string()), "{expected}\n{inlined}");
    }
}

#[test]
fn tricky_call_shapes_run() {
    check_runs(
        &swap_through_call(),
        &[(ints(&[7, 12]), ints(&[5])), (ints(&[12, 7]), ints(&[7]))],
    );
    check_runs(
        &results_overlap_returns(),
        &[(ints(&[10]), ints(&[26])), (ints(&[0]), ints(&[-4]))],
    );
    let f = |n: i64| if n > 0 { n - 3 } else { n - 2 };
    let main = |n: i64| (1..=n).rev().map(f).sum::<i64>();
    let cases: Vec<_> = [-2, 0, 1, 4, 9]
        .iter()
        .map(|&n| (ints(&[n]), ints(&[main(n)])))
        .collect();
    let high = pads_loops_and_unused_results();
    check_runs(&high, &cases);
    let low = lowered(&high);
    // The branch edge into `join` (two predecessors) goes through a pad popping `c`.
    let text = compact(&low);
    assert!(
        text.contains(&"enter_f_to_join:  pop(c); goto(join)".to_string()),
        "{low}"
    );
    assert!(text.contains(&"pos:  pop(c); n! = prim(n); goto(join)".to_string()));

    // Inlined (f is not recursive), the program needs no return addresses; simplified, each
    // lane runs fewer blocks for the same result.
    let whole = prepared(&high);
    assert_eq!(count_push_gotos(&whole), 0, "{whole}");
    assert_golden("prepared_pads_loops_and_unused_results", &body_text(&whole));
    for (inputs, _) in &cases {
        let before = simulate(&full_pipeline(&high), inputs).unwrap();
        let after = simulate(&whole, inputs).unwrap();
        assert!(after.steps < before.steps, "{after:?} vs {before:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Fusion and priority
// ---------------------------------------------------------------------------------------------

/// `stack_optimization_test.fib_fused_pretty` (docs/reference-semantics.md, "Pop-push fusion").
#[test]
fn fusion_of_the_hand_lowered_fibonacci_matches_the_reference() {
    let p = conformance::fibonacci_program(&mut numbering());
    let fused = fuse_pop_push(&p);
    assert_golden("lower_fused_fibonacci_program", &body_text(&fused));
    let text = compact(&fused);
    for expected in [
        "recur1:  nm1 = prim(n); n = prim(nm1); pop(cond, nm1); push_goto(recur2, enter_fib)",
        "recur2:  fibm1 = prim(ans); nm2 = prim(n); n! = prim(nm2); pop(ans, nm2); push_goto(recur3, enter_fib)",
        "recur3:  fibm2 = prim(ans); ans! = prim(fibm1, fibm2); pop(fibm1, fibm2); indirect_jump",
        "finish:  ans = prim(); pop(n, cond); indirect_jump",
    ] {
        assert!(text.contains(&expected.to_string()), "{expected}\n{fused}");
    }
    for n in 0..8 {
        let fibs = [1, 1, 2, 3, 5, 8, 13, 21];
        for q in [&p, &fused, &prioritize_blocks(&fused)] {
            let out = simulate(q, &ints(&[n])).unwrap();
            assert_eq!(out.outputs, ints(&[fibs[n as usize]]));
        }
    }
}

#[test]
fn fusion_handles_double_pops_and_existing_in_place_writes() {
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let main = b.function("main");
    b.signature(main, &[x], &[x]);
    let e = b.block(main, "entry");
    // x: [in] -> push 1 -> push 2 -> pop, pop -> push 0 -> update -> ...
    b.prim(e, &[x], &[], KernelId::new(0), "1");
    b.prim(e, &[x], &[], KernelId::new(1), "2");
    b.pop(e, &[x]);
    b.pop(e, &[x]);
    b.prim(e, &[x], &[], KernelId::new(2), "0");
    b.pop(e, &[x]);
    b.op(
        e,
        Op::Prim(autobatch_ir::PrimOp {
            outs: vec![x],
            ins: vec![],
            kernel: KernelRef::User(KernelId::new(3)),
            source: "2".into(),
            in_place: vec![x],
        }),
    );
    b.ret(e);
    let p = b.finish_lowered(main).unwrap();
    let fused = fuse_pop_push(&p);
    assert_eq!(
        compact(&fused),
        ["entry:  x = prim(); x = prim(); pop(x); x! = prim(); pop(x); x! = prim(); return"]
    );
    for q in [&p, &fused] {
        let out = simulate(q, &ints(&[7])).unwrap();
        assert_eq!(out.outputs, ints(&[2]));
    }
}

/// Fusion takes lowered programs only: a program with calls is not one (the verifier says
/// where its calls are), so it never reaches fusion.
#[test]
fn fusion_rejects_programs_with_calls() {
    let high = conformance::fibonacci_function_calls(&mut numbering(), DType::I64);
    let errors = verify_lowered(high.into_program()).unwrap_err().0;
    let calls: Vec<String> = errors
        .iter()
        .filter(|e| e.message.starts_with("a lowered program has no calls"))
        .map(|e| e.to_string())
        .collect();
    assert!(
        calls.iter().any(|e| e.starts_with("block `recur` ")),
        "{calls:#?}"
    );
    assert!(
        calls.iter().any(|e| e.starts_with("block `main_entry` ")),
        "{calls:#?}"
    );
}

fn weight(p: &Program, b: Block) -> u8 {
    u8::from(
        p.block(b)
            .ops
            .iter()
            .any(|op| matches!(op, Op::Prim(_) | Op::Call(_))),
    )
}

/// A deferred op's block (here `enter_fib`, which holds `n > 1`) moves after every other
/// block; the rest keep their order and every reference follows its block.
#[test]
fn priority_defers_blocks_with_expensive_ops_to_the_end() {
    let p = conformance::fibonacci_program(&mut numbering());
    let prio = prioritize_blocks_deferring(&p, |op| op.source == "n > 1");
    let names: Vec<&str> = prio.blocks.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "entry",
            "exit",
            "recur1",
            "recur2",
            "recur3",
            "finish",
            "enter_fib"
        ]
    );
    assert_eq!(
        prio.blocks[Block::new(0)].term,
        Terminator::PushGoto {
            ret: Block::new(1),
            target: Block::new(6)
        }
    );
    assert_eq!(
        prioritize_blocks_deferring(&p, |_| false),
        prioritize_blocks(&p)
    );
}

#[test]
fn priority_keeps_the_entry_first_then_cheap_blocks_stably() {
    let p = conformance::fibonacci_program(&mut numbering());
    let prio = prioritize_blocks(&p);
    let names: Vec<&str> = prio.blocks.iter().map(|b| b.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "entry",
            "exit",
            "enter_fib",
            "recur1",
            "recur2",
            "recur3",
            "finish"
        ]
    );
    assert_eq!(
        prio.functions[FuncId::new(0)].blocks,
        (0..7).map(Block::new).collect::<Vec<_>>()
    );
    // Every reference follows its block.
    assert_eq!(
        prio.blocks[Block::new(0)].term,
        Terminator::PushGoto {
            ret: Block::new(1),
            target: Block::new(2)
        }
    );
    verify(&prio).unwrap();

    // On the full pipeline: weights are sorted after block 0 and the order among equal
    // weights is the lowered order.
    let high = conformance::fibonacci_function_calls(&mut numbering(), DType::I64);
    let fused = fuse_pop_push(&lowered(&high));
    let prio = prioritize_blocks(&fused);
    assert_eq!(
        prio.blocks[Block::new(0)].name,
        fused.blocks[Block::new(0)].name
    );
    let weights: Vec<u8> = (1..prio.blocks.len())
        .map(|i| weight(&prio, Block::new(i)))
        .collect();
    assert!(weights.windows(2).all(|w| w[0] <= w[1]), "{weights:?}");
    for w in [0, 1] {
        let before: Vec<&str> = (1..fused.blocks.len())
            .filter(|&i| weight(&fused, Block::new(i)) == w)
            .map(|i| fused.blocks[Block::new(i)].name.as_str())
            .collect();
        let after: Vec<&str> = (1..prio.blocks.len())
            .filter(|&i| weight(&prio, Block::new(i)) == w)
            .map(|i| prio.blocks[Block::new(i)].name.as_str())
            .collect();
        assert_eq!(before, after);
    }
    // A second pass changes nothing.
    assert_eq!(prioritize_blocks(&prio), prio);
}

// ---------------------------------------------------------------------------------------------
// Purity and errors
// ---------------------------------------------------------------------------------------------

#[test]
fn passes_do_not_modify_their_input() {
    let high = conformance::fibonacci_function_calls(&mut numbering(), DType::I64);
    let before = high.clone();
    let low = lower(&high).unwrap();
    assert_eq!(high, before);
    let low_before = low.clone();
    let fused = fuse_pop_push(&low);
    assert_eq!(low, low_before);
    let fused_before = fused.clone();
    let _ = prioritize_blocks(&fused);
    assert_eq!(fused, fused_before);
}

/// The one error `lower` reports for `p`, as (location, text).
fn lowering_error(p: &HighProgram) -> (Location, String) {
    let errors = lower(p).unwrap_err().0;
    assert_eq!(errors.len(), 1, "{errors:#?}");
    (errors[0].location, errors[0].to_string())
}

#[test]
fn lowering_reports_errors() {
    // A lowered program is not a high-level one: it cannot be lowered again.
    let low = lowered(&conformance::fibonacci_function_calls(
        &mut numbering(),
        DType::I64,
    ));
    let errors = verify_high(low.into_program()).unwrap_err().0;
    assert!(errors
        .iter()
        .any(|e| e.message == "`push_goto` is only allowed in a lowered program"));

    // A pop of a variable read afterwards.
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let y = b.var("y", Type::I64);
    let main = b.function("main");
    b.signature(main, &[x], &[y]);
    let e = b.block(main, "entry");
    b.pop(e, &[x]);
    b.prim(e, &[y], &[x], KernelId::new(0), "n - 1");
    b.ret(e);
    let p = b.finish(main).unwrap();
    assert_eq!(
        lowering_error(&p),
        (
            Location::Block(e),
            "block `entry` in function `main`: `x` is popped but live after the pop".into()
        )
    );

    // Popping one frame too many.
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let y = b.var("y", Type::I64);
    let main = b.function("main");
    b.signature(main, &[x], &[y]);
    let e = b.block(main, "entry");
    b.prim(e, &[y], &[x], KernelId::new(0), "n - 1");
    b.pop(e, &[x, x]);
    b.ret(e);
    let p = b.finish(main).unwrap();
    assert_eq!(
        lowering_error(&p),
        (
            Location::Block(e),
            "block `entry` in function `main`: pop of `x`, which is not defined there".into()
        )
    );

    // Calling the entry function (whose return halts).
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let main = b.function("main");
    b.signature(main, &[x], &[x]);
    let e = b.block(main, "entry");
    let c = b.var("c", Type::BOOL);
    let again = b.block(main, "again");
    let done = b.block(main, "done");
    b.prim(e, &[c], &[x], KernelId::new(0), "n > 0");
    b.branch(e, c, again, done);
    b.prim(again, &[x], &[x], KernelId::new(1), "n - 1");
    b.call(again, main, &[x], &[x]);
    b.ret(again);
    b.ret(done);
    let p = b.finish(main).unwrap();
    assert_eq!(
        lowering_error(&p),
        (
            Location::Block(again),
            "block `again` in function `main`: call to the entry function `main` (its return \
             halts, it cannot be called)"
                .into()
        )
    );

    // An invalid program is an error, not a panic: it never becomes a `HighProgram`.
    let mut broken = conformance::gcd(&mut numbering()).into_program();
    broken.blocks[Block::new(0)].term = Terminator::Goto(Block::new(999));
    assert!(verify_high(broken).is_err());
}

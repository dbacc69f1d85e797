//! CFG simplification: merging, jump threading, what is never merged, and on random
//! programs of both forms that a lane runs the same ops in fewer or equal blocks.

mod support;

use autobatch_ir::passes::{
    allocate, fuse_pop_push, lower, simplify_blocks, simplify_blocks_keeping,
};
use autobatch_ir::{
    verify_high, verify_lowered, Block, Form, FormKind, FuncId, KernelId, Op, Program,
    ProgramBuilder, Terminator, Type, Var, Verified,
};
use autobatch_testkit::conformance::{self, numbering};
use support::Rng;

/// `name: op sources...; terminator` per block of the entry function, in order.
fn shape(p: &Program) -> Vec<String> {
    let name = |b: Block| p.block(b).name.clone();
    p.main_function()
        .blocks
        .iter()
        .map(|&b| {
            let data = p.block(b);
            let ops: Vec<String> = data
                .ops
                .iter()
                .map(|op| match op {
                    Op::Prim(prim) => prim.source.clone(),
                    Op::Pop(vars) => format!("pop{}", vars.len()),
                    Op::Call(_) => "call".to_string(),
                })
                .collect();
            let term = match &data.term {
                Terminator::Goto(t) => format!("goto {}", name(*t)),
                Terminator::Branch { then_, else_, .. } => {
                    format!("branch {} {}", name(*then_), name(*else_))
                }
                Terminator::Return => "return".to_string(),
                Terminator::PushGoto { ret, target } => {
                    format!("push_goto {} {}", name(*ret), name(*target))
                }
                Terminator::IndirectGoto => "indirect_jump".to_string(),
            };
            format!("{}: {} | {term}", name(b), ops.join(" "))
        })
        .collect()
}

/// A builder with a variable `x`, a bool `c` and one function `f(x) -> x`.
fn start() -> (ProgramBuilder, FuncId, Var, Var) {
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let c = b.var("c", Type::BOOL);
    let f = b.function("f");
    b.signature(f, &[x], &[x]);
    (b, f, x, c)
}

fn simplified<F: Form>(p: &Verified<F>) -> Verified<F> {
    let before = p.clone();
    let out = simplify_blocks(p);
    assert_eq!(*p, before, "simplify_blocks must not modify its input");
    let again = out.clone().into_program();
    let verified = match F::KIND {
        FormKind::High => verify_high(again).map(drop),
        FormKind::Lowered => verify_lowered(again).map(drop),
    };
    verified.unwrap_or_else(|e| panic!("simplified program does not verify:\n{e}\n{out}"));
    assert_eq!(simplify_blocks(&out), out, "a second pass changes nothing");
    assert_eq!(out.vars, p.vars, "variables and allocations are kept");
    out
}

#[test]
fn a_chain_of_gotos_becomes_one_block() {
    let (mut b, f, x, _) = start();
    let names = ["a", "b", "c", "d"];
    let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
    for (i, &blk) in bl.iter().enumerate() {
        b.prim(blk, &[x], &[x], KernelId::new(0), &format!("x + {i}"));
        if i + 1 < bl.len() {
            b.goto(blk, bl[i + 1]);
        } else {
            b.ret(blk);
        }
    }
    let p = b.finish(f).unwrap();
    let out = simplified(&p);
    assert_eq!(shape(&out), ["a: x + 0 x + 1 x + 2 x + 3 | return"]);
}

/// Chains listed out of order (a jumps forward to a block that jumps back) merge too.
#[test]
fn chains_merge_whatever_the_block_order() {
    let (mut b, f, x, _) = start();
    let a = b.block(f, "a");
    let c = b.block(f, "c");
    let bb = b.block(f, "b");
    b.prim(a, &[x], &[x], KernelId::new(0), "1");
    b.goto(a, bb);
    b.prim(bb, &[x], &[x], KernelId::new(0), "2");
    b.goto(bb, c);
    b.prim(c, &[x], &[x], KernelId::new(0), "3");
    b.ret(c);
    let out = simplified(&b.finish(f).unwrap());
    assert_eq!(shape(&out), ["a: 1 2 3 | return"]);
}

#[test]
fn a_diamond_does_not_merge_but_its_join_chain_does() {
    let (mut b, f, x, c) = start();
    let names = ["entry", "then", "else", "join", "tail"];
    let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
    let (entry, then_, else_, join, tail) = (bl[0], bl[1], bl[2], bl[3], bl[4]);
    b.prim(entry, &[c], &[x], KernelId::new(0), "x > 0");
    b.branch(entry, c, then_, else_);
    b.prim(then_, &[x], &[x], KernelId::new(1), "x - 1");
    b.goto(then_, join);
    b.pop(else_, &[c]);
    b.goto(else_, join);
    b.prim(join, &[x], &[x], KernelId::new(2), "x * 2");
    b.goto(join, tail);
    b.prim(tail, &[x], &[x], KernelId::new(3), "x + 7");
    b.ret(tail);
    let out = simplified(&b.finish(f).unwrap());
    assert_eq!(
        shape(&out),
        [
            "entry: x > 0 | branch then else",
            "then: x - 1 | goto join",
            "else: pop1 | goto join",
            "join: x * 2 x + 7 | return",
        ]
    );
}

#[test]
fn loops_keep_their_header_and_merge_around_it() {
    let (mut b, f, x, c) = start();
    let names = ["entry", "head", "body", "body2", "exit", "after"];
    let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
    let (entry, head, body, body2, exit, after) = (bl[0], bl[1], bl[2], bl[3], bl[4], bl[5]);
    b.prim(entry, &[x], &[x], KernelId::new(0), "x + 1");
    b.goto(entry, head);
    b.prim(head, &[c], &[x], KernelId::new(1), "x > 0");
    b.branch(head, c, body, exit);
    b.prim(body, &[x], &[x], KernelId::new(2), "x - 1");
    b.goto(body, body2);
    b.prim(body2, &[x], &[x], KernelId::new(3), "x - 2");
    b.goto(body2, head);
    b.prim(exit, &[x], &[x], KernelId::new(4), "x * 3");
    b.goto(exit, after);
    b.ret(after);
    let out = simplified(&b.finish(f).unwrap());
    assert_eq!(
        shape(&out),
        [
            "entry: x + 1 | goto head",
            "head: x > 0 | branch body exit",
            "body: x - 1 x - 2 | goto head",
            "exit: x * 3 | return",
        ]
    );
}

#[test]
fn jumps_thread_through_blocks_that_only_jump_or_return() {
    let (mut b, f, x, c) = start();
    let names = ["entry", "then", "else", "hop", "out", "spin"];
    let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
    let (entry, then_, else_, hop, out, spin) = (bl[0], bl[1], bl[2], bl[3], bl[4], bl[5]);
    b.prim(entry, &[c], &[x], KernelId::new(0), "x > 0");
    b.branch(entry, c, then_, else_);
    b.prim(then_, &[x], &[x], KernelId::new(1), "x - 1");
    b.goto(then_, hop);
    b.prim(else_, &[x], &[x], KernelId::new(2), "x + 1");
    b.goto(else_, hop);
    b.goto(hop, out);
    b.ret(out);
    // An empty self-loop is never threaded (a lane that gets there spins, as before).
    b.goto(spin, spin);
    let p = b.finish(f).unwrap();
    let out = simplified(&p);
    assert_eq!(
        shape(&out),
        [
            "entry: x > 0 | branch then else",
            "then: x - 1 | return",
            "else: x + 1 | return",
        ]
    );

    let (mut b, f, x, c) = start();
    let names = ["entry", "then", "else", "spin"];
    let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
    b.prim(bl[0], &[c], &[x], KernelId::new(0), "x > 0");
    b.branch(bl[0], c, bl[1], bl[2]);
    b.goto(bl[1], bl[3]);
    b.ret(bl[2]);
    b.goto(bl[3], bl[3]);
    let out = simplified(&b.finish(f).unwrap());
    assert_eq!(
        shape(&out),
        [
            "entry: x > 0 | branch then else",
            "then:  | goto spin",
            "else:  | return",
            "spin:  | goto spin",
        ]
    );
}

/// `if c { x -= 1 }` as generated: the empty `else` arm only jumps to the join, so the
/// branch goes to the join directly (which then has two predecessors and stays).
#[test]
fn branch_arms_skip_blocks_that_only_jump() {
    let (mut b, f, x, c) = start();
    let names = ["entry", "then", "else", "join"];
    let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
    let (entry, then_, else_, join) = (bl[0], bl[1], bl[2], bl[3]);
    b.prim(entry, &[c], &[x], KernelId::new(0), "x > 0");
    b.branch(entry, c, then_, else_);
    b.prim(then_, &[x], &[x], KernelId::new(1), "x - 1");
    b.goto(then_, join);
    b.goto(else_, join);
    b.prim(join, &[x], &[x], KernelId::new(2), "x * 2");
    b.ret(join);
    let out = simplified(&b.finish(f).unwrap());
    assert_eq!(
        shape(&out),
        [
            "entry: x > 0 | branch then join",
            "then: x - 1 | goto join",
            "join: x * 2 | return",
        ]
    );
}

/// A cycle of blocks that only jump is never threaded around (a lane there loops forever,
/// before and after); merging still shortens it, to one block that jumps to itself.
#[test]
fn a_cycle_of_empty_gotos_keeps_looping() {
    let (mut b, f, x, _) = start();
    let names = ["entry", "r", "s", "t"];
    let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
    b.prim(bl[0], &[x], &[x], KernelId::new(0), "x + 1");
    b.goto(bl[0], bl[1]);
    b.goto(bl[1], bl[2]);
    b.goto(bl[2], bl[3]);
    b.goto(bl[3], bl[2]);
    let out = simplified(&b.finish(f).unwrap());
    assert_eq!(shape(&out), ["entry: x + 1 | goto s", "s:  | goto s"]);
}

/// Lowered calls: the callee's entry and the return address are reached through
/// `push_goto` / `indirect_jump`, so they are never merged into a predecessor, even one
/// that jumps to them; a block holding only `indirect_jump` is threaded into its `goto`s.
#[test]
fn lowered_call_targets_and_return_addresses_survive() {
    let (mut b, f, x, c) = start();
    let names = ["entry", "callee", "callee_more", "leave", "ret", "ret_more"];
    let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
    let (entry, callee, more, leave, ret, ret_more) = (bl[0], bl[1], bl[2], bl[3], bl[4], bl[5]);
    b.prim(entry, &[x], &[x], KernelId::new(0), "x + 1");
    b.push_goto(entry, ret, callee);
    b.prim(callee, &[c], &[x], KernelId::new(1), "x > 0");
    b.branch(callee, c, more, leave);
    b.prim(more, &[x], &[x], KernelId::new(2), "x - 1");
    b.goto(more, leave);
    b.indirect_goto(leave);
    b.prim(ret, &[x], &[x], KernelId::new(3), "x * 2");
    b.goto(ret, ret_more);
    b.prim(ret_more, &[x], &[x], KernelId::new(4), "x * 3");
    b.ret(ret_more);
    let p = b.finish_lowered(f).unwrap();
    let out = simplified(&p);
    assert_eq!(
        shape(&out),
        [
            "entry: x + 1 | push_goto ret callee",
            "callee: x > 0 | branch callee_more leave",
            "callee_more: x - 1 | indirect_jump",
            "leave:  | indirect_jump",
            "ret: x * 2 x * 3 | return",
        ]
    );

    // A `goto` to a call target or a return address (a tail call, a loop back) keeps it.
    let (mut b, f, x, c) = start();
    let names = ["entry", "body", "ret", "exit"];
    let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
    let (entry, body, ret, exit) = (bl[0], bl[1], bl[2], bl[3]);
    b.prim(entry, &[c], &[x], KernelId::new(0), "x > 0");
    b.branch(entry, c, body, exit);
    b.prim(body, &[x], &[x], KernelId::new(1), "x - 1");
    b.push_goto(body, ret, entry);
    b.prim(ret, &[x], &[x], KernelId::new(2), "x * 2");
    b.indirect_goto(ret);
    b.prim(exit, &[x], &[x], KernelId::new(3), "x * 3");
    b.goto(exit, ret);
    let p = b.finish_lowered(f).unwrap();
    let out = simplified(&p);
    assert_eq!(
        shape(&out),
        [
            "entry: x > 0 | branch body exit",
            "body: x - 1 | push_goto ret entry",
            "ret: x * 2 | indirect_jump",
            "exit: x * 3 | goto ret",
        ]
    );
}

/// Kept blocks (a recursive function's lowered entry, reached by a tail call's `goto`) are
/// neither merged into their one predecessor nor threaded past when empty; they still absorb
/// their own successors, and the same program without them simplifies fully.
#[test]
fn kept_blocks_are_neither_merged_nor_threaded_past() {
    let (mut b, f, x, _) = start();
    let names = ["entry", "g", "g_body", "h", "h_body"];
    let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
    let (entry, g, g_body, h, h_body) = (bl[0], bl[1], bl[2], bl[3], bl[4]);
    b.prim(entry, &[x], &[x], KernelId::new(0), "x + 1");
    b.goto(entry, g);
    b.prim(g, &[x], &[x], KernelId::new(1), "x - 1");
    b.goto(g, g_body);
    b.prim(g_body, &[x], &[x], KernelId::new(2), "x * 2");
    b.goto(g_body, h);
    b.goto(h, h_body);
    b.prim(h_body, &[x], &[x], KernelId::new(3), "x * 3");
    b.ret(h_body);
    let p = b.finish_lowered(f).unwrap();
    let kept = simplify_blocks_keeping(&p, &[g, h]);
    assert_eq!(
        shape(&kept),
        [
            "entry: x + 1 | goto g",
            "g: x - 1 x * 2 | goto h",
            "h: x * 3 | return",
        ]
    );
    assert_eq!(
        simplify_blocks_keeping(&kept, &[Block::new(1), Block::new(2)]),
        kept
    );
    assert_eq!(
        shape(&simplified(&p)),
        ["entry: x + 1 x - 1 x * 2 x * 3 | return"]
    );
}

/// A lowered loop back to the entry block (it has one predecessor) never merges it away.
#[test]
fn the_entry_block_is_never_merged_away() {
    let (mut b, f, x, c) = start();
    let names = ["entry", "again", "done"];
    let bl: Vec<Block> = names.iter().map(|n| b.block(f, n)).collect();
    b.prim(bl[0], &[c], &[x], KernelId::new(0), "x > 0");
    b.branch(bl[0], c, bl[1], bl[2]);
    b.prim(bl[1], &[x], &[x], KernelId::new(1), "x - 1");
    b.goto(bl[1], bl[0]);
    b.ret(bl[2]);
    let p = b.finish_lowered(f).unwrap();
    assert_eq!(simplified(&p), p);
}

/// Blocks of every function are renumbered; entries stay first, and a call's callee keeps
/// its (now renumbered) blocks.
#[test]
fn every_function_is_simplified_and_renumbered() {
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let y = b.var("y", Type::I64);
    let g = b.function("g");
    b.signature(g, &[x], &[y]);
    let g0 = b.block(g, "g_entry");
    let g1 = b.block(g, "g_tail");
    let g2 = b.block(g, "g_return");
    b.prim(g0, &[y], &[x], KernelId::new(0), "x + 1");
    b.goto(g0, g1);
    b.prim(g1, &[y], &[y], KernelId::new(1), "y + 1");
    b.goto(g1, g2);
    b.ret(g2);
    let main = b.function("main");
    b.signature(main, &[x], &[y]);
    let m0 = b.block(main, "main_entry");
    let m1 = b.block(main, "main_return");
    b.call(m0, g, &[x], &[y]);
    b.goto(m0, m1);
    b.ret(m1);
    let p = b.finish(main).unwrap();
    let out = simplified(&p);
    assert_eq!(out.blocks.len(), 2);
    assert_eq!(out.function(g).blocks, [Block::new(0)]);
    assert_eq!(out.function(main).blocks, [Block::new(1)]);
    assert_eq!(out.block(Block::new(0)).name, "g_entry");
    assert_eq!(shape(&out), ["main_entry: call | return"]);
    assert_eq!(out.block(Block::new(0)).ops.len(), 2);
}

#[test]
fn conformance_programs_and_their_lowered_forms_verify() {
    let highs = conformance::control_flow_programs();
    for high in &highs {
        let high = allocate(high);
        let simple = simplified(&high);
        for low in [lower(&high).unwrap(), lower(&simple).unwrap()] {
            let out = simplified(&low);
            assert!(out.blocks.len() <= low.blocks.len());
            fuse_pop_push(&out);
        }
    }
    for low in [
        conformance::fibonacci_program(&mut numbering()),
        conformance::pea_nuts_program(&mut numbering()),
    ] {
        simplified(&low);
    }
}

/// Simplification takes verified programs: an invalid one never gets there.
#[test]
fn an_invalid_program_is_not_a_verified_program() {
    let mut p: Program = conformance::gcd(&mut numbering()).into_program();
    p.blocks[Block::new(0)].term = Terminator::Goto(Block::new(999));
    assert!(verify_high(p.clone()).is_err());
    assert!(verify_lowered(p).is_err());
}

// -----------------------------------------------------------------------------------------
// Random control-flow graphs: a lane runs the same ops in the same order either way.
// -----------------------------------------------------------------------------------------

/// A random one-function program over `x` (ops are `x = prim(x)` with distinct sources and
/// pops of `c`); lowered programs also get `push_goto` and `indirect_jump`.
fn random_program(rng: &mut Rng, form: FormKind) -> (ProgramBuilder, FuncId) {
    let (mut b, f, x, c) = start();
    let n = 2 + rng.below(9);
    let bl: Vec<Block> = (0..n).map(|i| b.block(f, &format!("b{i}"))).collect();
    let mut op = 0;
    // The condition is written first, so it is defined on every path.
    b.prim(bl[0], &[c], &[x], KernelId::new(0), "cond");
    for &blk in &bl {
        for _ in 0..rng.below(3) {
            op += 1;
            if rng.below(4) == 0 {
                b.pop(blk, &[c]);
            }
            b.prim(blk, &[x], &[x], KernelId::new(1), &format!("op{op}"));
        }
        // High-level jumps may not target the entry block.
        let target = |rng: &mut Rng| match form {
            FormKind::High => bl[1 + rng.below(n - 1)],
            FormKind::Lowered => bl[rng.below(n)],
        };
        // Gotos are the most common terminator, as in generated code.
        let kinds = if form == FormKind::High { 3 } else { 5 };
        match rng.below(kinds + 3) {
            1 => {
                let (t, e) = (target(rng), target(rng));
                b.branch(blk, c, t, e);
            }
            2 => b.ret(blk),
            3 if form == FormKind::Lowered => {
                let (r, t) = (target(rng), target(rng));
                b.push_goto(blk, r, t);
            }
            4 if form == FormKind::Lowered => b.indirect_goto(blk),
            _ => {
                let t = target(rng);
                b.goto(blk, t);
            }
        }
    }
    (b, f)
}

#[derive(Debug, PartialEq)]
enum End {
    Halted,
    Limit,
}

/// Runs one lane: records every op (sources, and `pop` for pops); branches follow a hash of
/// the ops run so far, so both programs decide alike exactly when they ran the same ops.
fn trace(p: &Program) -> (Vec<String>, End) {
    let mut ops = Vec::new();
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut returns: Vec<Block> = Vec::new();
    let mut at = p.main_function().entry();
    for _ in 0..2_000 {
        let data = p.block(at);
        for op in &data.ops {
            let text = match op {
                Op::Prim(prim) => prim.source.clone(),
                _ => "pop".to_string(),
            };
            for byte in text.bytes() {
                state = (state ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
            }
            ops.push(text);
            if ops.len() >= 300 {
                return (ops, End::Limit);
            }
        }
        at = match &data.term {
            Terminator::Goto(t) => *t,
            Terminator::Branch { then_, else_, .. } => {
                if (state >> 33) & 1 == 1 {
                    *then_
                } else {
                    *else_
                }
            }
            Terminator::Return => return (ops, End::Halted),
            Terminator::PushGoto { ret, target } => {
                if returns.len() >= 100 {
                    return (ops, End::Limit);
                }
                returns.push(*ret);
                *target
            }
            Terminator::IndirectGoto => match returns.pop() {
                Some(r) => r,
                None => return (ops, End::Halted),
            },
        };
    }
    (ops, End::Limit)
}

#[test]
fn random_programs_run_the_same_ops_in_fewer_or_equal_blocks() {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut merged = 0;
    for case in 0..3_000 {
        if case % 2 == 0 {
            let (b, f) = random_program(&mut rng, FormKind::High);
            merged += same_ops_in_fewer_blocks(case, &b.finish(f).unwrap());
        } else {
            let (b, f) = random_program(&mut rng, FormKind::Lowered);
            merged += same_ops_in_fewer_blocks(case, &b.finish_lowered(f).unwrap());
        }
    }
    assert!(merged > 1_000, "the generator exercises the pass: {merged}");
}

/// Simplifies `p` and checks a lane runs the same ops; returns how many blocks went.
fn same_ops_in_fewer_blocks<F: Form>(case: usize, p: &Verified<F>) -> usize {
    let out = simplified(p);
    assert!(out.blocks.len() <= p.blocks.len());
    let (before, end_before) = trace(p);
    let (after, end_after) = trace(&out);
    if end_before == End::Halted || end_after == End::Halted {
        assert_eq!(
            (&before, &end_before),
            (&after, &end_after),
            "case {case}\n{p}\n{out}"
        );
    } else {
        let k = before.len().min(after.len());
        assert_eq!(before[..k], after[..k], "case {case}\n{p}\n{out}");
    }
    p.blocks.len() - out.blocks.len()
}

//! The verifier: every invariant it checks, each error located at its entity with the message
//! the user reads, every error of a program collected, and no panic whatever the handles.

mod support;

use autobatch_ir::{
    prim_op, verify_high, verify_lowered, Block, BlockData, BuildError, CallOp, DType, EntityVec,
    FuncId, FunctionData, KernelId, KernelRef, Location, Op, PrimOp, Program, ProgramBuilder,
    Terminator, Type, Var, VerifyError, VerifyErrors, PC_NAME,
};
use autobatch_testkit::conformance;
use support::Rng;

const K: KernelId = KernelId::new(0);

/// `countdown(n) { acc = 0; while n > 0 { n -= 1; acc += 2 } acc }` called from `main(m)`.
///
/// Vars: pc v0, n v1, acc v2, cond v3, m v4, r v5. Blocks: entry 0, head 1, body 2, exit 3,
/// main_entry 4. Functions: countdown fn0, main fn1.
fn looping() -> Program {
    let mut b = ProgramBuilder::new();
    let n = b.var("n", Type::I64);
    let acc = b.var("acc", Type::I64);
    let c = b.var("cond", Type::BOOL);
    let m = b.var("m", Type::I64);
    let r = b.var("r", Type::I64);
    let f = b.function("countdown");
    b.signature(f, &[n], &[acc]);
    let entry = b.block(f, "entry");
    let head = b.block(f, "head");
    let body = b.block(f, "body");
    let exit = b.block(f, "exit");
    b.prim(entry, &[acc], &[], K, "0");
    b.goto(entry, head);
    b.prim(head, &[c], &[n], K, "n > 0");
    b.branch(head, c, body, exit);
    b.prim(body, &[n], &[n], K, "n - 1");
    b.prim(body, &[acc], &[acc], K, "acc + 2");
    b.goto(body, head);
    b.ret(exit);
    let main = b.function("main");
    b.signature(main, &[m], &[r]);
    let e = b.block(main, "main_entry");
    b.call(e, f, &[m], &[r]);
    b.ret(e);
    b.finish(main).expect("looping is valid").into_program()
}

/// An error as the tests compare it: where, and the text the user reads.
type Found = (Location, String);

fn found(errors: VerifyErrors) -> Vec<Found> {
    errors
        .0
        .into_iter()
        .map(|e| (e.location, e.to_string()))
        .collect()
}

/// The errors of `p` as a high-level program.
fn errors(p: &Program) -> Vec<Found> {
    found(verify_high(p.clone()).expect_err("program should be invalid"))
}

/// The errors of `p` as a lowered program.
fn lowered_errors(p: &Program) -> Vec<Found> {
    found(verify_lowered(p.clone()).expect_err("program should be invalid"))
}

fn invalid<T: std::fmt::Debug>(r: Result<T, BuildError>) -> Vec<Found> {
    match r {
        Err(BuildError::Invalid(e)) => found(e),
        other => panic!("expected BuildError::Invalid, got {other:?}"),
    }
}

fn at(location: Location, text: &str) -> Found {
    (location, text.to_string())
}

fn var(i: usize) -> Location {
    Location::Var(Var::new(i))
}

fn block(i: usize) -> Location {
    Location::Block(Block::new(i))
}

fn op(b: usize, index: usize) -> Location {
    Location::Op {
        block: Block::new(b),
        index,
    }
}

fn function(i: usize) -> Location {
    Location::Function(FuncId::new(i))
}

fn assert_has(errs: &[Found], e: &Found) {
    assert!(errs.contains(e), "missing {e:?} in {errs:#?}");
}

/// A one-function builder: `f(x) -> y` with variables `x: i64` (v1), `y: i64` (v2),
/// `z: i64` (v3), `c: bool` (v4) and one open block `entry` (block 0).
struct One {
    b: ProgramBuilder,
    f: FuncId,
    e: Block,
    x: Var,
    y: Var,
    z: Var,
    c: Var,
}

fn one() -> One {
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let y = b.var("y", Type::I64);
    let z = b.var("z", Type::I64);
    let c = b.var("c", Type::BOOL);
    let f = b.function("f");
    b.signature(f, &[x], &[y]);
    let e = b.block(f, "entry");
    One {
        b,
        f,
        e,
        x,
        y,
        z,
        c,
    }
}

#[test]
fn valid_program_with_loop_and_calls_passes() {
    assert!(verify_high(looping()).is_ok());
}

#[test]
fn every_conformance_fixture_passes() {
    let mut k = conformance::numbering();
    let highs = [
        conformance::constant_program(&mut k),
        conformance::single_if_program(&mut k),
        conformance::synthetic_pattern_program(&mut k),
        conformance::synthetic_pattern_variable_program(&mut k),
        conformance::fibonacci_function_calls(&mut k, DType::I64),
        conformance::is_even_function_calls(&mut k, DType::I32, true),
        conformance::is_even_function_calls(&mut k, DType::I64, false),
        conformance::iota_sum(&mut k),
        conformance::gcd(&mut k),
        conformance::countdown(&mut k),
        conformance::fibonacci_sync(&mut k),
    ];
    for p in highs {
        assert!(verify_high(p.clone().into_program()).is_ok(), "{p}");
    }
    for p in [
        conformance::fibonacci_program(&mut k),
        conformance::pea_nuts_program(&mut k),
    ] {
        assert!(verify_lowered(p.clone().into_program()).is_ok(), "{p}");
    }
}

/// Each error is one shape: the entity, the entity in words, and what is wrong.
#[test]
fn an_error_is_its_location_its_context_and_its_message() {
    let mut p = looping();
    p.blocks[Block::new(0)]
        .ops
        .push(Op::Pop(vec![Var::new(99)]));
    let errs = verify_high(p).unwrap_err().0;
    assert_eq!(
        errs,
        vec![VerifyError {
            location: op(0, 1),
            context: Some("block `entry` in function `countdown`, op 1".into()),
            message: "input v99 does not exist (the program has 6 variables)".into(),
        }]
    );
    assert_eq!(
        errs[0].to_string(),
        "block `entry` in function `countdown`, op 1: input v99 does not exist \
         (the program has 6 variables)"
    );
}

#[test]
fn no_entry() {
    let mut p = looping();
    p.main = FuncId::new(7);
    assert_eq!(
        errors(&p),
        vec![at(
            function(7),
            "the entry function fn7 does not exist (the program has 2 functions)"
        )]
    );
}

#[test]
fn empty_function() {
    let mut p = looping();
    p.functions[FuncId::new(0)].blocks.clear();
    let errs = errors(&p);
    assert_has(
        &errs,
        &at(function(0), "function `countdown`: has no blocks"),
    );
    assert_has(&errs, &at(block(1), "block `head`: belongs to no function"));
}

#[test]
fn block_out_of_range() {
    let mut p = looping();
    p.functions[FuncId::new(1)].blocks.push(Block::new(40));
    assert_eq!(
        errors(&p),
        vec![at(
            function(1),
            "function `main`: lists block block40, which does not exist (the program has 5 \
             blocks)"
        )]
    );
}

#[test]
fn orphan_block() {
    let mut p = looping();
    p.blocks.push(BlockData {
        name: "lost".into(),
        ops: vec![],
        term: Terminator::Return,
    });
    assert_eq!(
        errors(&p),
        vec![at(block(5), "block `lost`: belongs to no function")]
    );
}

#[test]
fn block_listed_twice() {
    let mut p = looping();
    p.functions[FuncId::new(1)].blocks.push(Block::new(3));
    assert_eq!(
        errors(&p),
        vec![at(
            block(3),
            "block `exit`: is listed by function `countdown` and again by function `main`"
        )]
    );
    let mut p = looping();
    p.functions[FuncId::new(1)].blocks.push(Block::new(4));
    assert_eq!(
        errors(&p),
        vec![at(
            block(4),
            "block `main_entry`: is listed by function `main` and again by function `main`"
        )]
    );
}

#[test]
fn var_out_of_range() {
    let mut p = looping();
    p.blocks[Block::new(0)]
        .ops
        .push(Op::Pop(vec![Var::new(99)]));
    assert_eq!(
        errors(&p),
        vec![at(
            op(0, 1),
            "block `entry` in function `countdown`, op 1: input v99 does not exist (the \
             program has 6 variables)"
        )]
    );
    let mut p = looping();
    p.functions[FuncId::new(0)].params = vec![Var::new(6)];
    assert_eq!(
        errors(&p),
        vec![at(
            function(0),
            "function `countdown`: parameter v6 does not exist (the program has 6 variables)"
        )]
    );
}

#[test]
fn target_out_of_range() {
    let mut p = looping();
    p.blocks[Block::new(3)].term = Terminator::Goto(Block::new(9));
    assert_eq!(
        errors(&p),
        vec![at(
            block(3),
            "block `exit` in function `countdown`: jump target block9 does not exist (the \
             program has 5 blocks)"
        )]
    );
}

#[test]
fn callee_out_of_range() {
    let mut p = looping();
    let Op::Call(call) = &mut p.blocks[Block::new(4)].ops[0] else {
        panic!("main_entry starts with the call");
    };
    call.func = FuncId::new(9);
    assert_eq!(
        errors(&p),
        vec![at(
            op(4, 0),
            "block `main_entry` in function `main`, op 0: callee fn9 does not exist (the \
             program has 2 functions)"
        )]
    );
}

#[test]
fn duplicate_names() {
    let mut p = looping();
    p.vars[Var::new(5)].name = "m".into();
    p.blocks[Block::new(3)].name = "head".into();
    p.functions[FuncId::new(1)].name = "countdown".into();
    assert_eq!(
        errors(&p),
        vec![
            at(var(5), "variables v4 and v5 are both named `m`"),
            at(block(3), "blocks block1 and block3 are both named `head`"),
            at(
                function(1),
                "functions fn0 and fn1 are both named `countdown`"
            ),
        ]
    );
}

#[test]
fn pc_out_of_range() {
    let mut p = looping();
    p.pc = Var::new(99);
    let errs = errors(&p);
    assert_has(
        &errs,
        &at(
            var(99),
            "the program counter v99 does not exist (the program has 6 variables)",
        ),
    );
    assert_has(
        &errs,
        &at(
            var(0),
            "variable v0 is named `__program_counter__` but is not the program counter v99",
        ),
    );
}

#[test]
fn pc_misnamed() {
    let mut p = looping();
    p.vars[Var::new(0)].name = "pc".into();
    assert_eq!(
        errors(&p),
        vec![at(
            var(0),
            "the program counter v0 is named `pc`, expected `__program_counter__`"
        )]
    );
}

#[test]
fn pc_wrong_type() {
    let mut p = looping();
    p.vars[Var::new(0)].ty = Type::I64;
    assert_eq!(
        errors(&p),
        vec![at(
            var(0),
            "the program counter `__program_counter__` has type i64, expected i32"
        )]
    );
}

#[test]
fn reserved_pc_name() {
    let mut p = looping();
    p.vars[Var::new(0)].name = "pc".into();
    p.vars[Var::new(4)].name = PC_NAME.into();
    let errs = errors(&p);
    assert_has(
        &errs,
        &at(
            var(4),
            "variable v4 is named `__program_counter__` but is not the program counter v0",
        ),
    );
    assert_eq!(errs.len(), 2, "{errs:#?}");
}

#[test]
fn pc_in_op() {
    let mut o = one();
    let pc = o.b.pc();
    o.b.prim(o.e, &[o.y], &[o.x], K, "x");
    o.b.prim(o.e, &[pc], &[pc], K, "pc + 1");
    o.b.ret(o.e);
    assert_eq!(
        invalid(o.b.finish(o.f)),
        vec![
            at(
                op(0, 1),
                "block `entry` in function `f`, op 1: reads the program counter \
                 `__program_counter__`"
            ),
            at(
                op(0, 1),
                "block `entry` in function `f`, op 1: writes the program counter \
                 `__program_counter__`"
            ),
        ]
    );
}

#[test]
fn pc_branch() {
    let mut o = one();
    let pc = o.b.pc();
    let t = o.b.block(o.f, "t");
    o.b.prim(o.e, &[o.y], &[o.x], K, "x");
    o.b.branch(o.e, pc, t, t);
    o.b.ret(t);
    let errs = invalid(o.b.finish(o.f));
    assert_has(
        &errs,
        &at(
            block(0),
            "block `entry` in function `f`: branches on the program counter \
             `__program_counter__`",
        ),
    );
    assert_has(
        &errs,
        &at(
            block(0),
            "block `entry` in function `f`: branch condition `__program_counter__` has type \
             i32, expected bool",
        ),
    );
}

#[test]
fn pc_in_signature() {
    let mut o = one();
    let pc = o.b.pc();
    o.b.signature(o.f, &[o.x, pc], &[pc]);
    o.b.ret(o.e);
    assert_eq!(
        invalid(o.b.finish(o.f)),
        vec![
            at(
                function(0),
                "function `f`: the program counter `__program_counter__` is a parameter"
            ),
            at(
                function(0),
                "function `f`: the program counter `__program_counter__` is a return variable"
            ),
        ]
    );
}

#[test]
fn cross_function_jump() {
    let mut o = one();
    let g = o.b.function("g");
    o.b.signature(g, &[o.x], &[o.y]);
    let g1 = o.b.block(g, "g_entry");
    let g2 = o.b.block(g, "g_exit");
    o.b.goto(g1, g2);
    o.b.prim(g2, &[o.y], &[o.x], K, "x");
    o.b.ret(g2);
    o.b.goto(o.e, g2);
    assert_eq!(
        invalid(o.b.finish(o.f)),
        vec![at(
            block(0),
            "block `entry` in function `f`: jumps to block `g_exit` of function `g`; jumps \
             must stay inside one function"
        )]
    );
}

#[test]
fn push_goto_target_and_return_address_stay_in_the_function() {
    let mut o = one();
    let g = o.b.function("g");
    let g1 = o.b.block(g, "g_entry");
    o.b.ret(g1);
    let back = o.b.block(o.f, "back");
    o.b.ret(back);
    o.b.push_goto(o.e, g1, back);
    let errs = invalid(o.b.finish_lowered(o.f));
    assert_has(
        &errs,
        &at(
            block(0),
            "block `entry` in function `f`: jumps to block `g_entry` of function `g`; jumps \
             must stay inside one function",
        ),
    );
    assert_has(
        &errs,
        &at(
            function(1),
            "function `g`: a lowered program has only its entry function `f`",
        ),
    );
}

#[test]
fn lowered_terminator_in_high_form() {
    let mut o = one();
    let callee = o.b.block(o.f, "callee");
    let back = o.b.block(o.f, "back");
    o.b.prim(o.e, &[o.y], &[o.x], K, "x");
    o.b.push_goto(o.e, back, callee);
    o.b.indirect_goto(callee);
    o.b.ret(back);
    assert_eq!(
        invalid(o.b.finish(o.f)),
        vec![
            at(
                block(0),
                "block `entry` in function `f`: `push_goto` is only allowed in a lowered program"
            ),
            at(
                block(1),
                "block `callee` in function `f`: `indirect_jump` is only allowed in a lowered \
                 program"
            ),
        ]
    );
}

#[test]
fn jump_to_entry_only_in_high_form() {
    let build = || {
        let mut o = one();
        let body = o.b.block(o.f, "body");
        let done = o.b.block(o.f, "done");
        o.b.prim(o.e, &[o.c], &[o.x], K, "x > 0");
        o.b.branch(o.e, o.c, body, done);
        o.b.prim(body, &[o.x], &[o.x], K, "x - 1");
        o.b.goto(body, o.e);
        o.b.assign(done, &[o.y], &[o.x]);
        o.b.ret(done);
        o
    };
    let o = build();
    assert_eq!(
        invalid(o.b.finish(o.f)),
        vec![at(
            block(1),
            "block `body` in function `f`: jumps to `entry`, the entry block of function `f`; \
             entry blocks are entered only by calls"
        )]
    );
    let o = build();
    assert!(o.b.finish_lowered(o.f).is_ok());
}

#[test]
fn calls_and_extra_functions_in_lowered_form() {
    assert_eq!(
        lowered_errors(&looping()),
        vec![
            at(
                function(0),
                "function `countdown`: a lowered program has only its entry function `main`"
            ),
            at(
                op(4, 0),
                "block `main_entry` in function `main`, op 0: a lowered program has no calls \
                 (call to `countdown`)"
            ),
        ]
    );
}

#[test]
fn branch_not_bool() {
    let mut p = looping();
    let Terminator::Branch { cond, .. } = &mut p.blocks[Block::new(1)].term else {
        panic!("head ends in a branch");
    };
    *cond = Var::new(1);
    assert_eq!(
        errors(&p),
        vec![at(
            block(1),
            "block `head` in function `countdown`: branch condition `n` has type i64, expected \
             bool"
        )]
    );
}

#[test]
fn call_arity() {
    let mut p = looping();
    p.blocks[Block::new(4)].ops[0] = Op::Call(CallOp {
        func: FuncId::new(0),
        ins: vec![Var::new(4), Var::new(4)],
        outs: vec![],
    });
    assert_eq!(
        errors(&p),
        vec![
            at(
                op(4, 0),
                "block `main_entry` in function `main`, op 0: call to `countdown` has 2 \
                 arguments, expected 1"
            ),
            at(
                op(4, 0),
                "block `main_entry` in function `main`, op 0: call to `countdown` has 0 \
                 results, expected 1"
            ),
            // The call no longer writes `r`, so `main` returns it unwritten.
            at(
                function(1),
                "function `main`: `r` may be read before it is written (it is live on entry but \
                 not a parameter)"
            ),
        ]
    );
}

#[test]
fn call_type_mismatch() {
    let mut p = looping();
    p.vars[Var::new(4)].ty = Type::F64;
    p.vars[Var::new(5)].ty = Type::Tuple(vec![Type::I64]);
    assert_eq!(
        errors(&p),
        vec![
            at(
                op(4, 0),
                "block `main_entry` in function `main`, op 0: argument 0 of the call to \
                 `countdown` is `m` of type f64, but `n` has type i64"
            ),
            at(
                op(4, 0),
                "block `main_entry` in function `main`, op 0: result 0 of the call to \
                 `countdown` is `r` of type (i64,), but `acc` has type i64"
            ),
        ]
    );
}

#[test]
fn assign_leaves() {
    let mut o = one();
    let pair = o.b.var("pair", Type::Tuple(vec![Type::I64, Type::BOOL]));
    o.b.assign(o.e, &[o.c], &[o.x]);
    o.b.assign(o.e, &[pair], &[o.x, o.c]);
    o.b.assign(o.e, &[o.y, o.c], &[pair]);
    o.b.ret(o.e);
    assert_eq!(
        invalid(o.b.finish(o.f)),
        vec![at(
            op(0, 0),
            "block `entry` in function `f`, op 0: assign writes leaves [bool] from leaves [i64]"
        )]
    );
}

/// In-place outputs are named among the op's outputs.
#[test]
fn in_place_output_not_an_output() {
    let mut o = one();
    o.b.op(
        o.e,
        Op::Prim(PrimOp {
            outs: vec![o.y],
            ins: vec![o.x],
            kernel: KernelRef::User(K),
            source: "x".into(),
            in_place: vec![o.x],
        }),
    );
    o.b.ret(o.e);
    assert_eq!(
        invalid(o.b.finish(o.f)),
        vec![at(
            op(0, 0),
            "block `entry` in function `f`, op 0: writes `x` in place, which is not one of its \
             outputs"
        )]
    );
}

#[test]
fn duplicate_output() {
    let mut o = one();
    o.b.prim(o.e, &[o.y, o.y, o.y], &[o.x], K, "(x, x, x)");
    o.b.op(o.e, prim_op(&[o.z], &[o.x], KernelRef::User(K), "x"));
    o.b.ret(o.e);
    assert_eq!(
        invalid(o.b.finish(o.f)),
        vec![at(
            op(0, 0),
            "block `entry` in function `f`, op 0: writes `y` more than once"
        )]
    );
}

#[test]
fn duplicate_param() {
    let mut o = one();
    o.b.signature(o.f, &[o.x, o.x], &[o.x]);
    o.b.ret(o.e);
    assert_eq!(
        invalid(o.b.finish(o.f)),
        vec![at(
            function(0),
            "function `f`: parameter `x` is listed more than once"
        )]
    );
}

#[test]
fn read_before_write() {
    let z_unwritten = at(
        function(0),
        "function `f`: `z` may be read before it is written (it is live on entry but not a \
         parameter)",
    );
    let mut o = one();
    let t = o.b.block(o.f, "then");
    let el = o.b.block(o.f, "else");
    o.b.prim(o.e, &[o.c], &[o.x], K, "x > 0");
    o.b.branch(o.e, o.c, t, el);
    o.b.prim(t, &[o.y], &[o.z], K, "z");
    o.b.ret(t);
    o.b.assign(el, &[o.y], &[o.x]);
    o.b.ret(el);
    assert_eq!(invalid(o.b.finish(o.f)), vec![z_unwritten.clone()]);
    // A pop counts as a read.
    let mut o = one();
    o.b.assign(o.e, &[o.y], &[o.x]);
    o.b.pop(o.e, &[o.z]);
    o.b.ret(o.e);
    assert_eq!(invalid(o.b.finish(o.f)), vec![z_unwritten]);
    // Lowered programs are not checked (the runtime reports such reads).
    let mut o = one();
    o.b.prim(o.e, &[o.y], &[o.z], K, "z");
    o.b.ret(o.e);
    assert!(o.b.finish_lowered(o.f).is_ok());
}

#[test]
fn several_errors_are_all_reported() {
    let mut p = looping();
    p.vars[Var::new(0)].ty = Type::F32;
    p.vars[Var::new(5)].name = "n".into();
    p.blocks[Block::new(2)]
        .ops
        .push(Op::Pop(vec![Var::new(50)]));
    p.blocks[Block::new(3)].term = Terminator::Goto(Block::new(0));
    p.functions[FuncId::new(1)].params = vec![Var::new(4), Var::new(4)];
    let errs = errors(&p);
    for e in [
        at(
            function(1),
            "function `main`: parameter `m` is listed more than once",
        ),
        at(var(5), "variables v1 and v5 are both named `n`"),
        at(
            var(0),
            "the program counter `__program_counter__` has type f32, expected i32",
        ),
        at(
            op(2, 2),
            "block `body` in function `countdown`, op 2: input v50 does not exist (the program \
             has 6 variables)",
        ),
        at(
            block(3),
            "block `exit` in function `countdown`: jumps to `entry`, the entry block of \
             function `countdown`; entry blocks are entered only by calls",
        ),
    ] {
        assert_has(&errs, &e);
    }
    assert_eq!(errs.len(), 5, "{errs:#?}");
    let text = verify_high(p).unwrap_err().to_string();
    assert_eq!(text.lines().count(), 5);
    assert!(text.lines().all(|l| l.starts_with("  ")));
}

fn garbage() -> Program {
    Program {
        vars: EntityVec::new(),
        blocks: vec![
            BlockData {
                name: "a".into(),
                ops: vec![
                    Op::Call(CallOp {
                        func: FuncId::new(50),
                        ins: vec![Var::new(100)],
                        outs: vec![Var::new(101), Var::new(101)],
                    }),
                    Op::Prim(PrimOp {
                        outs: vec![Var::new(3)],
                        ins: vec![Var::new(4)],
                        kernel: KernelRef::Assign,
                        source: String::new(),
                        in_place: vec![Var::new(3), Var::new(8)],
                    }),
                    Op::Pop(vec![Var::new(u32::MAX as usize)]),
                ],
                term: Terminator::Branch {
                    cond: Var::new(77),
                    then_: Block::new(40),
                    else_: Block::new(u32::MAX as usize),
                },
            },
            BlockData {
                name: "a".into(),
                ops: vec![],
                term: Terminator::PushGoto {
                    ret: Block::new(9),
                    target: Block::new(0),
                },
            },
        ]
        .into(),
        functions: vec![
            FunctionData {
                name: "f".into(),
                params: vec![Var::new(8), Var::new(8)],
                returns: vec![Var::new(9)],
                blocks: vec![Block::new(7), Block::new(0), Block::new(0)],
            },
            FunctionData {
                name: "f".into(),
                params: vec![],
                returns: vec![],
                blocks: vec![],
            },
        ]
        .into(),
        main: FuncId::new(3),
        pc: Var::new(5),
    }
}

#[test]
fn garbage_programs_report_errors_without_panicking() {
    let errs = errors(&garbage());
    assert!(errs.len() >= 10, "{errs:#?}");
    assert_has(
        &errs,
        &at(
            function(3),
            "the entry function fn3 does not exist (the program has 2 functions)",
        ),
    );
    assert!(verify_lowered(garbage()).is_err());
    let empty = Program {
        vars: EntityVec::new(),
        blocks: EntityVec::new(),
        functions: EntityVec::new(),
        main: FuncId::new(0),
        pc: Var::new(0),
    };
    assert_eq!(
        errors(&empty),
        vec![
            at(
                function(0),
                "the entry function fn0 does not exist (the program has 0 functions)"
            ),
            at(
                var(0),
                "the program counter v0 does not exist (the program has 0 variables)"
            ),
        ]
    );
}

/// Rewrites random handles of `p` to random (often out-of-range) values.
fn scramble(p: &mut Program, rng: &mut Rng) {
    let (nv, nb, nf) = (p.vars.len() + 2, p.blocks.len() + 2, p.functions.len() + 2);
    let var = |v: &mut Var, rng: &mut Rng| {
        if rng.below(6) == 0 {
            *v = Var::new(rng.below(nv));
        }
    };
    for f in p.functions.iter_mut() {
        f.params
            .iter_mut()
            .chain(&mut f.returns)
            .for_each(|v| var(v, rng));
        for b in &mut f.blocks {
            if rng.below(8) == 0 {
                *b = Block::new(rng.below(nb));
            }
        }
        if rng.below(10) == 0 {
            f.blocks.pop();
        }
    }
    for b in p.blocks.iter_mut() {
        for op in &mut b.ops {
            match op {
                Op::Prim(prim) => {
                    prim.ins
                        .iter_mut()
                        .chain(&mut prim.outs)
                        .chain(&mut prim.in_place)
                        .for_each(|v| var(v, rng));
                    if rng.below(8) == 0 {
                        prim.kernel = KernelRef::Assign;
                    }
                }
                Op::Call(call) => {
                    call.ins
                        .iter_mut()
                        .chain(&mut call.outs)
                        .for_each(|v| var(v, rng));
                    if rng.below(4) == 0 {
                        call.func = FuncId::new(rng.below(nf));
                    }
                }
                Op::Pop(vars) => vars.iter_mut().for_each(|v| var(v, rng)),
            }
        }
        match &mut b.term {
            Terminator::Goto(t) => {
                if rng.below(4) == 0 {
                    *t = Block::new(rng.below(nb));
                }
            }
            Terminator::Branch { cond, then_, else_ } => {
                var(cond, rng);
                if rng.below(4) == 0 {
                    *then_ = Block::new(rng.below(nb));
                }
                if rng.below(4) == 0 {
                    *else_ = Block::new(rng.below(nb));
                }
            }
            Terminator::PushGoto { ret, target } => {
                if rng.below(4) == 0 {
                    *ret = Block::new(rng.below(nb));
                }
                if rng.below(4) == 0 {
                    *target = Block::new(rng.below(nb));
                }
            }
            Terminator::Return | Terminator::IndirectGoto => {}
        }
    }
    if rng.below(8) == 0 {
        p.main = FuncId::new(rng.below(nf));
    }
    if rng.below(8) == 0 {
        p.pc = Var::new(rng.below(nv));
    }
}

#[test]
fn scrambled_handles_never_panic() {
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    let mut k = conformance::numbering();
    let bases = [
        looping(),
        conformance::fibonacci_program(&mut k).into_program(),
        conformance::fibonacci_function_calls(&mut k, DType::I64).into_program(),
        conformance::pea_nuts_program(&mut k).into_program(),
        conformance::synthetic_pattern_variable_program(&mut k).into_program(),
    ];
    let mut rejected = 0;
    for round in 0..3000 {
        let mut p = bases[round % bases.len()].clone();
        scramble(&mut p, &mut rng);
        // Mostly the form the base was built as, sometimes the other.
        let built_lowered = matches!(round % bases.len(), 1 | 3);
        let result = if built_lowered != (rng.below(8) == 0) {
            verify_lowered(p).map(drop)
        } else {
            verify_high(p).map(drop)
        };
        if let Err(e) = result {
            assert!(!e.0.is_empty());
            let _ = e.to_string();
            rejected += 1;
        }
    }
    assert!(rejected > 1000, "only {rejected} scrambles were rejected");
}

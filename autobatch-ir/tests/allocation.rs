//! Allocation analysis against the reference's tables (docs/reference-semantics.md,
//! "Allocation"), our tail-call rule, loops, and golden printed programs after allocation.

mod support;

use autobatch_ir::passes::allocation::{
    allocate, allocations, allocations_with, AllocationOptions,
};
use autobatch_ir::passes::liveness;
use autobatch_ir::passes::{prepare, Allocations, Passes, Source};
use autobatch_ir::{
    Allocation, DType, HighProgram, KernelId, Program, ProgramBuilder, Type, PC_NAME,
};
use autobatch_testkit::conformance::{self, numbering};
use support::assert_golden;
use Allocation::{Full, Null, Register, Temporary};

/// The reference's behaviour: every call makes the pc `Full`.
fn reference() -> AllocationOptions {
    AllocationOptions {
        pc_full_at_every_call: true,
        ..AllocationOptions::default()
    }
}

/// Asserts that the program's variables have exactly these allocations (every variable named).
#[track_caller]
fn assert_table(p: &Program, allocs: &[Allocation], expected: &[(&str, Allocation)]) {
    assert_eq!(
        expected.len(),
        p.vars.len(),
        "the table must name every variable"
    );
    for &(name, want) in expected {
        let v = p
            .var_named(name)
            .unwrap_or_else(|| panic!("no variable `{name}`"));
        assert_eq!(allocs[v.index()], want, "allocation of `{name}`");
    }
}

/// Asserts the table under our rules and under the reference's (they agree unless a table
/// entry for the pc is given separately for the reference).
#[track_caller]
fn assert_both(
    p: &HighProgram,
    ours_pc: Allocation,
    reference_pc: Allocation,
    rest: &[(&str, Allocation)],
) {
    let mut ours = vec![(PC_NAME, ours_pc)];
    ours.extend_from_slice(rest);
    assert_table(p, &allocate(p).allocations(), &ours);
    let mut theirs = vec![(PC_NAME, reference_pc)];
    theirs.extend_from_slice(rest);
    assert_table(p, &allocations_with(p, &reference()), &theirs);
}

#[test]
fn constant_program_table() {
    let p = conformance::constant_program(&mut numbering());
    assert_both(&p, Register, Register, &[("answer", Register)]);
}

#[test]
fn single_if_program_table() {
    let p = conformance::single_if_program(&mut numbering());
    assert_both(
        &p,
        Register,
        Register,
        &[
            ("answer", Register),
            ("cond", Register),
            ("input", Register),
        ],
    );
}

#[test]
fn is_even_with_pops_table() {
    let p = conformance::is_even_function_calls(&mut numbering(), DType::I64, true);
    assert_both(
        &p,
        Full,
        Full,
        &[
            ("ans", Register),
            ("cond", Register),
            ("n", Register),
            ("n1", Register),
            ("nm1", Full),
        ],
    );
}

/// Without pops every call is a tail call: the reference table (pc `Full`) holds under the
/// reference's rule; ours leaves the pc a `Register` and agrees on everything else.
#[test]
fn is_even_without_pops_table() {
    let p = conformance::is_even_function_calls(&mut numbering(), DType::I64, false);
    assert_both(
        &p,
        Register,
        Full,
        &[
            ("ans", Register),
            ("cond", Register),
            ("n", Register),
            ("n1", Register),
            ("nm1", Temporary),
        ],
    );
}

/// `main`'s call is a tail call, the recursive ones are not: the pc stays `Full`.
#[test]
fn fibonacci_function_calls_table() {
    let p = conformance::fibonacci_function_calls(&mut numbering(), DType::I64);
    assert_both(
        &p,
        Full,
        Full,
        &[
            ("ans", Register),
            ("cond", Register),
            ("fibm1", Full),
            ("fibm2", Temporary),
            ("n", Full),
            ("n1", Register),
            ("nm1", Temporary),
            ("nm2", Temporary),
        ],
    );
}

/// The frontend fib of the sync test: `n` and `left` live across a recursive call.
#[test]
fn fibonacci_sync_table() {
    let p = conformance::fibonacci_sync(&mut numbering());
    assert_both(
        &p,
        Full,
        Full,
        &[
            ("ans", Register),
            ("cond", Register),
            ("left", Full),
            ("n", Full),
            ("nm1", Temporary),
            ("nm2", Temporary),
            ("right", Temporary),
        ],
    );
}

#[track_caller]
fn assert_no_full_data(p: &Program, allocs: &[Allocation]) {
    for (i, d) in p.vars.iter().enumerate() {
        if d.name != PC_NAME {
            assert!(allocs[i] < Full, "`{}` is {}", d.name, allocs[i]);
        }
    }
}

/// Only self tail calls: the pc needs no stack (the reference made it `Full`).
#[test]
fn iota_sum_tail_calls_need_no_stack() {
    let p = conformance::iota_sum(&mut numbering());
    let out = allocate(&p);
    assert_eq!(out.var(p.pc).alloc, Register);
    assert_no_full_data(&p, &out.allocations());
    assert_table(
        &p,
        &out.allocations(),
        &[
            (PC_NAME, Register),
            ("n", Register),
            ("acc", Register),
            ("nm1", Temporary),
            ("acc1", Temporary),
            ("ans", Register),
            ("cond", Register),
        ],
    );
    // Without the improvement the pc would be Full (and this test would fail).
    let theirs = allocations_with(&p, &reference());
    assert_eq!(theirs[p.pc.index()], Full);
    assert_no_full_data(&p, &theirs);
}

/// A self tail call whose arguments swap the parameters is still a tail call.
#[test]
fn gcd_tail_calls_need_no_stack() {
    let p = conformance::gcd(&mut numbering());
    let allocs = allocate(&p).allocations();
    assert_table(
        &p,
        &allocs,
        &[
            (PC_NAME, Register),
            ("a", Register),
            ("b", Register),
            ("r", Temporary),
            ("ans", Register),
            ("cond", Register),
        ],
    );
    assert_eq!(allocations_with(&p, &reference())[p.pc.index()], Full);
}

/// A call whose results are the callee's returns in another order, or that leaves something
/// else live, or that is not last in its block, is not a tail call.
#[test]
fn near_tail_calls_make_the_pc_full() {
    for case in 0..3 {
        let mut b = ProgramBuilder::new();
        let x = b.var("x", Type::I64);
        let y = b.var("y", Type::I64);
        let g = b.function("g");
        b.signature(g, &[x, y], &[x, y]);
        let ge = b.block(g, "g_entry");
        b.ret(ge);
        let main = b.function("main");
        b.signature(main, &[x, y], &[x, y]);
        let me = b.block(main, "main_entry");
        match case {
            0 => b.call(me, g, &[x, y], &[y, x]),
            1 => {
                b.call(me, g, &[x, y], &[x, y]);
                b.assign(me, &[y], &[x]);
            }
            _ => {
                // `y` stays live (read after) while only `x` is the result.
                let h = b.function("h");
                b.signature(h, &[x], &[x]);
                let he = b.block(h, "h_entry");
                b.ret(he);
                b.call(me, h, &[x], &[x]);
            }
        }
        b.ret(me);
        let p = b.finish(main).unwrap();
        assert_eq!(allocate(&p).var(p.pc).alloc, Full, "case {case}");
    }
}

/// `countdown`: `n` and `acc` are loop-carried, `cond` is a branch condition.
#[test]
fn countdown_loop_table() {
    let p = conformance::countdown(&mut numbering());
    let allocs = allocate(&p).allocations();
    assert_table(
        &p,
        &allocs,
        &[
            (PC_NAME, Register),
            ("n", Register),
            ("acc", Register),
            ("cond", Register),
        ],
    );
    // Both are live out of the loop body only through its back edge to the header.
    let body = p.block_named("loop_body").unwrap();
    let live = liveness(&p);
    for name in ["n", "acc"] {
        assert!(live
            .block(body)
            .live_out
            .contains(&p.var_named(name).unwrap()));
    }
}

/// `tri(n) { acc = 0; while n > 0 { n = n - 1; r = tri(n); acc = acc + r } acc }`, header
/// before body. After the recursive call, `n` is read only by the header of the next
/// iteration: it is live across the call, which writes it, only through the back edge. So `n`
/// is `Full`; ignoring the back edge would leave it a `Register` and corrupt the loop.
#[test]
fn loop_carried_variable_across_a_call_is_full_through_the_back_edge() {
    let mut b = ProgramBuilder::new();
    let n = b.var("n", Type::I64);
    let acc = b.var("acc", Type::I64);
    let r = b.var("r", Type::I64);
    let cond = b.var("cond", Type::BOOL);
    let tri = b.function("tri");
    b.signature(tri, &[n], &[acc]);
    let entry = b.block(tri, "entry");
    let head = b.block(tri, "loop_head");
    let body = b.block(tri, "loop_body");
    let exit = b.block(tri, "loop_exit");
    b.prim(entry, &[acc], &[], KernelId::new(0), "0");
    b.goto(entry, head);
    b.prim(head, &[cond], &[n], KernelId::new(1), "n > 0");
    b.branch(head, cond, body, exit);
    b.prim(body, &[n], &[n], KernelId::new(2), "n - 1");
    b.call(body, tri, &[n], &[r]);
    b.prim(body, &[acc], &[acc, r], KernelId::new(3), "acc + n");
    b.goto(body, head);
    b.ret(exit);
    let p = b.finish_with_entry(tri).unwrap();
    let allocs = allocate(&p).allocations();
    assert_table(
        &p,
        &allocs,
        &[
            (PC_NAME, Full),
            ("n", Full),
            ("acc", Full),
            ("r", Temporary),
            ("cond", Register),
        ],
    );
}

#[test]
fn variables_never_read_stay_null() {
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let junk = b.var("junk", Type::I64);
    let main = b.function("main");
    b.signature(main, &[x], &[x]);
    let e = b.block(main, "entry");
    b.prim(e, &[junk], &[x], KernelId::new(0), "x + 1");
    b.ret(e);
    let p = b.finish(main).unwrap();
    let out = allocate(&p);
    assert_eq!(out.var(junk).alloc, Null);
    assert_eq!(out.var(x).alloc, Register);
    assert_eq!(out.var(p.pc).alloc, Register);
}

/// Hand-lowered programs keep the allocations they were built with, or were given (the
/// analysis takes high-level programs only, and the pipeline does not allocate a lowered
/// source).
#[test]
fn lowered_programs_keep_their_allocations() {
    for p in [
        conformance::fibonacci_program(&mut numbering()),
        conformance::pea_nuts_program(&mut numbering()),
    ] {
        let mut given = p.clone().into_program();
        given.vars[given.pc].alloc = Allocation::Temporary;
        for program in [p.into_program(), given] {
            let prepared = prepare(
                Source::Lowered(program.clone()),
                &Passes::none(),
                Allocations::Compute,
                |_| false,
            )
            .unwrap();
            assert_eq!(prepared.lowered.allocations(), program.allocations());
            assert_eq!(prepared.source.program(), &program);
        }
    }
}

#[test]
fn allocated_programs_print_stably() {
    let cases = [
        (
            "alloc_constant",
            conformance::constant_program(&mut numbering()),
        ),
        (
            "alloc_single_if",
            conformance::single_if_program(&mut numbering()),
        ),
        (
            "alloc_synthetic_pattern",
            conformance::synthetic_pattern_program(&mut numbering()),
        ),
        (
            "alloc_synthetic_pattern_variable",
            conformance::synthetic_pattern_variable_program(&mut numbering()),
        ),
        (
            "alloc_fibonacci_function_calls",
            conformance::fibonacci_function_calls(&mut numbering(), DType::I64),
        ),
        (
            "alloc_is_even_with_pops",
            conformance::is_even_function_calls(&mut numbering(), DType::I64, true),
        ),
        (
            "alloc_is_even_without_pops",
            conformance::is_even_function_calls(&mut numbering(), DType::I64, false),
        ),
        ("alloc_iota_sum", conformance::iota_sum(&mut numbering())),
        ("alloc_gcd", conformance::gcd(&mut numbering())),
        ("alloc_countdown", conformance::countdown(&mut numbering())),
        (
            "alloc_fibonacci_sync",
            conformance::fibonacci_sync(&mut numbering()),
        ),
    ];
    for (name, program) in cases {
        assert_golden(name, &allocate(&program).to_string());
    }
    // Hand-lowered programs keep the allocations they were built with.
    let lowered = [
        (
            "alloc_fibonacci_program",
            conformance::fibonacci_program(&mut numbering()),
        ),
        (
            "alloc_pea_nuts",
            conformance::pea_nuts_program(&mut numbering()),
        ),
    ];
    for (name, program) in lowered {
        assert_golden(name, &program.to_string());
    }
}

#[test]
fn input_is_untouched() {
    let p = conformance::fibonacci_function_calls(&mut numbering(), DType::I64);
    let before = p.clone();
    let out = allocate(&p);
    assert_eq!(p, before, "allocate must not mutate its input");
    assert_ne!(out.allocations(), p.allocations());
    // Only the allocations differ.
    assert_eq!(out.with_allocations(&p.allocations()), p);
    assert_eq!(out.allocations(), allocations(&p));
}

//! Printed programs of #[autobatch] functions: the allocation computed at compile time is
//! conservative for callees the macro cannot see and exact for self-recursion; the linked
//! program's allocation is exact.

use autobatch_runtime::ir::golden::assert_golden;
use autobatch_runtime::ir::Allocation;
use autobatch_runtime::{autobatch, ir};

fn golden(name: &str, text: &str) {
    assert_golden(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden"),
        name,
        text,
    );
}

#[autobatch]
fn fib(n: i64) -> i64 {
    if n <= 1 {
        1
    } else {
        fib(n - 1) + fib(n - 2)
    }
}

#[autobatch]
fn outer(n: i64) -> i64 {
    let k = n * 2;
    let r: i64 = inner(n);
    k + r
}

#[autobatch]
fn inner(n: i64) -> i64 {
    n + 1
}

fn alloc_of(p: &ir::Program, name: &str) -> Allocation {
    p.var(
        p.var_named(name)
            .unwrap_or_else(|| panic!("no variable {name} in\n{p}")),
    )
    .alloc
}

#[test]
fn self_recursion_is_exact_at_compile_time() {
    golden("macro_fib_compile_time", fib::COMPILE_TIME_PROGRAM);
    let linked = fib::program().unwrap();
    golden("macro_fib_linked", &linked.to_string());
    // The reference's fibonacci table: n and the first call's result are FULL, the rest not.
    assert_eq!(alloc_of(linked, "fib.n"), Allocation::Full);
    assert_eq!(alloc_of(linked, "fib.t.2"), Allocation::Full);
    assert_eq!(alloc_of(linked, "fib.ret"), Allocation::Register);
    assert_eq!(alloc_of(linked, "fib.t.4"), Allocation::Temporary);
    assert!(fib::COMPILE_TIME_PROGRAM.contains("t.2 :: full"));
    assert_eq!(fib(5), 8);
}

#[test]
fn unseen_callees_are_conservative_until_linked() {
    golden("macro_outer_compile_time", outer::COMPILE_TIME_PROGRAM);
    // At compile time `inner` might call back into `outer`, so `k` (live across the call) is FULL.
    assert!(
        outer::COMPILE_TIME_PROGRAM.contains("\nk :: full"),
        "{}",
        outer::COMPILE_TIME_PROGRAM
    );
    // Linked, `inner` is known not to re-enter `outer`: `k` needs no stack.
    let linked = outer::program().unwrap();
    golden("macro_outer_linked", &linked.to_string());
    assert_eq!(alloc_of(linked, "outer.k"), Allocation::Register);
    assert_eq!(outer(3), 10);
}

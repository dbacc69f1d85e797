//! Printed programs of #[autobatch] functions: the allocation computed at compile time is
//! conservative for callees the macro cannot see and exact for self-recursion; the linked
//! program's allocation is exact.

use autobatch_runtime::ir::Allocation;
use autobatch_runtime::{autobatch, ir, Config, Mode, Vector};
use autobatch_testkit::golden::assert_golden;

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

/// Prepared for running, `inner` (small, not recursive) is copied into `outer`, and `outer`
/// into `main`; blocks that only jump or return are gone, and so are the argument and result
/// copies inlining made. The linked program is unchanged.
#[test]
fn prepared_programs_inline_small_callees_and_drop_empty_blocks() {
    let exe = outer::executable().unwrap();
    let high = exe.program().unwrap();
    golden("macro_outer_prepared", &high.to_string());
    golden("macro_outer_prepared_lowered", &exe.lowered().to_string());
    assert_eq!(high.functions.len(), 1, "{high}");
    assert!(high.var_named("inner.n@outer.1@main.1").is_some(), "{high}");
    assert!(!high.to_string().contains("by assign"), "{high}");
    assert_eq!(exe.lowered().blocks.len(), 1, "{}", exe.lowered());
    assert_eq!(outer::program().unwrap(), exe.source());
    assert_eq!(exe.source().functions.len(), 3);
}

/// Swaps a pair and counts with a counter whose type comes from what is added to it.
#[autobatch]
fn swap_count(a: Vector, b: Vector, steps: i64) -> (Vector, Vector, i64) {
    let mut pair = (a, b);
    let mut n = 0;
    let mut i = 0;
    while i < steps {
        let (x, y) = pair;
        pair = (y.clone(), x);
        n += steps;
        i += 1;
    }
    let (x, y) = pair;
    (x, y, n)
}

/// A tuple built from variables (and their clones) is one built-in assignment, not a kernel;
/// a tuple with one computed element computes it alone and assigns the rest.
#[test]
fn tuples_of_variables_are_assignments() {
    let program = swap_count::program().unwrap();
    golden("macro_swap_count_linked", &program.to_string());
    let text = program.to_string();
    assert!(text.contains("swap_count.pair = prim(swap_count.a, swap_count.b) by assign"));
    assert!(text.contains("prim(swap_count.y, swap_count.x) by assign"));
    assert!(text.contains("prim(swap_count.x.1, swap_count.y.1, swap_count.n) by assign"));
    let (x, y, n) = swap_count(Vector::from(vec![1.0]), Vector::from(vec![2.0]), 3);
    assert_eq!((x.get(0), y.get(0), n), (2.0, 1.0, 9));
    let a = autobatch_runtime::ndarray::array![[1.0], [3.0]];
    let b = autobatch_runtime::ndarray::array![[2.0], [4.0]];
    let steps = autobatch_runtime::ndarray::array![3i64, 4];
    for mode in [Mode::FullVm, Mode::Stackless] {
        let (x, y, n) =
            swap_count::batch(a.view(), b.view(), steps.view(), &Config::with_mode(mode)).unwrap();
        assert_eq!(
            (x.column(0).to_vec(), y.column(0).to_vec()),
            (vec![2.0, 3.0], vec![1.0, 4.0])
        );
        assert_eq!(n.to_vec(), vec![9, 16]);
    }
}

/// `let mut n = 0; n += m` with `m: i64` makes `n` an `i64`, as rustc infers it.
#[test]
fn a_literal_counter_takes_the_type_added_to_it() {
    let program = swap_count::program().unwrap();
    let n = program.var(program.var_named("swap_count.n").unwrap());
    assert_eq!(n.ty.to_string(), "i64");
}

/// Straight-line code with intermediate values, ending in a pure `if`.
#[autobatch]
fn scaled_norm(q: Vector, eps: f64) -> f64 {
    let a = &q * eps;
    let b = a.dot(&a);
    let c = b.sqrt() + eps;
    if c > 1.0 {
        c
    } else {
        b
    }
}

/// The same steps before a vector-valued `if`, which stays control flow.
#[autobatch]
fn scaled_pick(q: Vector, eps: f64) -> (Vector, f64) {
    let a = &q * eps;
    let b = a.dot(&a);
    let c = b.sqrt() + eps;
    let v = if c > 1.0 { a } else { q };
    (v, b)
}

/// Consecutive kernels of a block are one kernel, and a pure scalar `if` is part of it: the
/// whole of `scaled_norm` is one kernel and nothing but its result is stored.
#[test]
fn consecutive_kernels_fuse_and_keep_only_escaping_values() {
    let program = scaled_norm::program().unwrap();
    golden("macro_scaled_norm_linked", &program.to_string());
    let text = program.to_string();
    assert!(
        text.contains("scaled_norm.ret = prim(scaled_norm.q, scaled_norm.eps) by"),
        "{text}"
    );
    for name in ["scaled_norm.a", "scaled_norm.b", "scaled_norm.c"] {
        assert_eq!(
            program.var(program.var_named(name).unwrap()).alloc,
            Allocation::Null,
            "{name} in\n{text}"
        );
    }
    let q = autobatch_runtime::ndarray::array![[0.1, 0.2], [3.0, 4.0]];
    let eps = autobatch_runtime::ndarray::array![0.5, 2.0];
    for mode in [Mode::FullVm, Mode::Stackless] {
        let out = scaled_norm::batch(q.view(), eps.view(), &Config::with_mode(mode)).unwrap();
        for i in 0..2 {
            let scalar = scaled_norm(Vector::from(q.row(i).to_vec()), eps[i]);
            assert_eq!(out[i].to_bits(), scalar.to_bits());
        }
    }
}

/// Values read after the fused kernel are its outputs (`a` by the `then` branch, `b` by the
/// result, the condition by the branch); values used only inside it (`c`) are not.
#[test]
fn fused_kernels_output_the_values_later_blocks_read() {
    let program = scaled_pick::program().unwrap();
    let text = program.to_string();
    assert!(
        text.contains(
            "scaled_pick.a, scaled_pick.b, scaled_pick.t = prim(scaled_pick.q, scaled_pick.eps)"
        ),
        "{text}"
    );
    assert_eq!(
        program
            .var(program.var_named("scaled_pick.c").unwrap())
            .alloc,
        Allocation::Null
    );
    let q = autobatch_runtime::ndarray::array![[0.1, 0.2], [3.0, 4.0]];
    let eps = autobatch_runtime::ndarray::array![0.5, 2.0];
    for mode in [Mode::FullVm, Mode::Stackless] {
        let (v, b) = scaled_pick::batch(q.view(), eps.view(), &Config::with_mode(mode)).unwrap();
        for i in 0..2 {
            let (sv, sb) = scaled_pick(Vector::from(q.row(i).to_vec()), eps[i]);
            assert_eq!(v.row(i).to_vec(), sv.as_slice().to_vec());
            assert_eq!(b[i].to_bits(), sb.to_bits());
        }
    }
}

/// A `for` loop: the first value and the next one are each one kernel over the counter
/// (`i.next`, `range.more`), the loop variable a copy of the counter.
#[autobatch]
fn stepped_sum(n: i64) -> i64 {
    let mut s = 0;
    for i in (0..n).step_by(2) {
        if i > 10 {
            break;
        }
        s += i;
    }
    s
}

/// A `match` with a call in one arm branches; its pure scrutinee tests are kernels.
#[autobatch]
fn match_sign(n: i64) -> i64 {
    match n {
        0 => 0,
        1..=9 => stepped_sum(n),
        _ => -1,
    }
}

#[test]
fn for_and_match_programs() {
    golden(
        "macro_for_linked",
        &stepped_sum::program().unwrap().to_string(),
    );
    golden("macro_match_compile_time", match_sign::COMPILE_TIME_PROGRAM);
}

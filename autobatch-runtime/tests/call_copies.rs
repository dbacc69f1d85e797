//! The full VM's program without the copies lowering leaves around calls
//! (`Passes::call_copies`): printed programs pinned as golden files, and the full VM with and
//! without the pass against the scalar functions, the reference interpreter and stackless on
//! random batches (fibonacci, Ackermann's nested call, permuted arguments, an argument that
//! reads the formal another one writes, mutual recursion).

use autobatch_runtime::ir::{KernelRef, Op, Program};
use autobatch_runtime::{autobatch, Column, Config, Executable, Mode, Passes};
use autobatch_testkit::golden::assert_golden;
use proptest::prelude::*;

#[autobatch]
fn fib(n: i64) -> i64 {
    if n > 1 {
        fib(n - 1) + fib(n - 2)
    } else {
        1
    }
}

#[autobatch]
fn ackermann(m: i64, n: i64) -> i64 {
    if m == 0 {
        n + 1
    } else if n == 0 {
        ackermann(m - 1, 1)
    } else {
        ackermann(m - 1, ackermann(m, n - 1))
    }
}

/// The arguments swapped at each call: `f(b, a)` in `f(a, b)`.
#[autobatch]
fn swapped(a: i64, b: i64, k: i64) -> i64 {
    if k <= 0 {
        a * 10 + b
    } else {
        swapped(b, a, k - 1) * 3 + a
    }
}

/// `f(n - 1, n)`: the second argument reads the formal the first one writes.
#[autobatch]
fn shifted(n: i64, m: i64) -> i64 {
    if n <= 0 {
        m
    } else {
        shifted(n - 1, n) * 2 + m
    }
}

/// Mutual recursion, neither call a tail call.
#[autobatch]
fn up(n: i64) -> i64 {
    if n <= 0 {
        1
    } else {
        2 * down(n - 1) + n
    }
}

#[autobatch]
fn down(n: i64) -> i64 {
    if n <= 0 {
        3
    } else {
        up(n - 1) - 1
    }
}

fn golden(name: &str, program: &Program) {
    assert_golden(
        concat!(env!("CARGO_MANIFEST_DIR"), "/tests/golden"),
        name,
        &program.to_string(),
    );
}

/// `exe`'s program prepared without the pass.
fn without_pass(exe: &Executable) -> Executable {
    let passes = Passes {
        call_copies: false,
        ..Passes::default()
    };
    Executable::with_passes(exe.source().clone(), exe.kernels().to_vec(), &passes).unwrap()
}

fn assignments(p: &Program) -> usize {
    // Not the empty `() = prim() by assign` lowering starts `main` with.
    let is_assign =
        |op: &&Op| matches!(op, Op::Prim(p) if p.kernel == KernelRef::Assign && !p.outs.is_empty());
    p.blocks
        .iter()
        .flat_map(|b| b.ops.iter().filter(is_assign))
        .count()
}

fn config(mode: Mode) -> Config {
    Config {
        threads: 1,
        ..Config::with_mode(mode)
    }
}

/// The full VM with and without the pass, stackless and the reference agree on `inputs`; the
/// outputs.
fn agreed(exe: &Executable, inputs: &[Column]) -> Vec<i64> {
    let out = |exe: &Executable, mode: Mode, reference: bool| {
        let run = if reference {
            exe.run_reference(inputs, &config(mode))
        } else {
            exe.run(inputs, &config(mode))
        };
        run.unwrap().outputs[0].as_slice::<i64>().unwrap().to_vec()
    };
    let vm = out(exe, Mode::FullVm, false);
    assert_eq!(
        vm,
        out(&without_pass(exe), Mode::FullVm, false),
        "without the pass"
    );
    assert_eq!(vm, out(exe, Mode::FullVm, true), "reference");
    assert_eq!(vm, out(exe, Mode::Stackless, false), "stackless");
    vm
}

fn i64s(values: &[i64]) -> Column {
    Column::from_scalars(values)
}

#[test]
fn lowered_programs_print_as_blessed() {
    let cases = [
        ("call_copies_fib", fib::executable().unwrap()),
        ("call_copies_ackermann", ackermann::executable().unwrap()),
        ("call_copies_swapped", swapped::executable().unwrap()),
        ("call_copies_shifted", shifted::executable().unwrap()),
        ("call_copies_up_down", up::executable().unwrap()),
    ];
    for (name, exe) in cases {
        golden(name, exe.lowered());
    }
}

#[test]
fn the_pass_removes_the_copies_around_fibonaccis_calls() {
    // Per call: the argument's copy into the formal, the first result's copy into a
    // temporary read only by the sum (the second result is saved across the second call).
    let exe = fib::executable().unwrap();
    let before = assignments(without_pass(exe).lowered());
    let after = assignments(exe.lowered());
    assert_eq!((before, after), (4, 1), "{}", exe.lowered());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(32)))]

    #[test]
    fn fibonacci_batches_agree(ns in prop::collection::vec(-2i64..15, 1..100)) {
        let out = agreed(fib::executable().unwrap(), &[i64s(&ns)]);
        prop_assert_eq!(out, ns.iter().map(|&n| fib(n)).collect::<Vec<_>>());
    }

    #[test]
    fn ackermann_batches_agree(pairs in prop::collection::vec((0i64..4, 0i64..5), 1..80)) {
        let (ms, ns): (Vec<i64>, Vec<i64>) = pairs.iter().copied().unzip();
        let out = agreed(ackermann::executable().unwrap(), &[i64s(&ms), i64s(&ns)]);
        let expected: Vec<i64> = pairs.iter().map(|&(m, n)| ackermann(m, n)).collect();
        prop_assert_eq!(out, expected);
    }

    #[test]
    fn permuted_argument_batches_agree(
        lanes in prop::collection::vec((-50i64..50, -50i64..50, -1i64..12), 1..100),
    ) {
        let a: Vec<i64> = lanes.iter().map(|l| l.0).collect();
        let b: Vec<i64> = lanes.iter().map(|l| l.1).collect();
        let k: Vec<i64> = lanes.iter().map(|l| l.2).collect();
        let out = agreed(swapped::executable().unwrap(), &[i64s(&a), i64s(&b), i64s(&k)]);
        let expected: Vec<i64> = lanes.iter().map(|&(a, b, k)| swapped(a, b, k)).collect();
        prop_assert_eq!(out, expected);
    }

    #[test]
    fn shifted_argument_batches_agree(
        lanes in prop::collection::vec((-2i64..20, -100i64..100), 1..100),
    ) {
        let (ns, ms): (Vec<i64>, Vec<i64>) = lanes.iter().copied().unzip();
        let out = agreed(shifted::executable().unwrap(), &[i64s(&ns), i64s(&ms)]);
        let expected: Vec<i64> = lanes.iter().map(|&(n, m)| shifted(n, m)).collect();
        prop_assert_eq!(out, expected);
    }

    #[test]
    fn mutual_recursion_batches_agree(ns in prop::collection::vec(-2i64..40, 1..100)) {
        let out = agreed(up::executable().unwrap(), &[i64s(&ns)]);
        prop_assert_eq!(out, ns.iter().map(|&n| up(n)).collect::<Vec<_>>());
    }
}

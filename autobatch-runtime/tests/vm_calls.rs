//! The full VM's per-lane call and return bookkeeping (return addresses, call depth, the
//! waiting lanes each return adds to a block, pushes fused with assignments, pops): lanes at
//! very different depths in one batch, nested and mutual recursion, the depth limit reached
//! by one lane only, checked against the scalar functions, the reference interpreter and
//! stackless.

use autobatch_runtime::ir::{Allocation, KernelId, ProgramBuilder, Type};
use autobatch_runtime::ndarray::Array1;
use autobatch_runtime::{autobatch, Column, Config, Executable, Kernel, Mode, RuntimeError};
use proptest::prelude::*;

/// `n + (n - 1) + ... + 0`: `n + 1` frames, a push of `n` per frame.
#[autobatch]
fn sum_to(n: i64) -> i64 {
    if n <= 0 {
        0
    } else {
        n + sum_to(n - 1)
    }
}

/// Two recursive calls, the second's argument from the first's result and a stacked value.
#[autobatch]
fn fib(n: i64) -> i64 {
    if n > 1 {
        fib(n - 1) + fib(n - 2)
    } else {
        1
    }
}

/// A call nested in another call's argument.
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

/// Mutual recursion, neither call a tail call: each return goes to the other function.
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

fn with(mode: Mode, max_stack_depth: usize) -> Config {
    Config {
        max_stack_depth,
        threads: 1,
        ..Config::with_mode(mode)
    }
}

/// Runs `exe` on `inputs` in the full VM, stackless and the reference: all three agree
/// (outputs or error), and the outcome is returned.
fn agreed(exe: &Executable, inputs: &[Column], depth: usize) -> Result<Vec<i64>, RuntimeError> {
    let vm = exe.run(inputs, &with(Mode::FullVm, depth));
    let reference = exe.run_reference(inputs, &with(Mode::FullVm, depth));
    let stackless = exe.run(inputs, &with(Mode::Stackless, depth));
    let out = |r: Result<autobatch_runtime::Run, RuntimeError>| {
        r.map(|r| r.outputs[0].as_slice::<i64>().unwrap().to_vec())
    };
    let (vm, reference, stackless) = (out(vm), out(reference), out(stackless));
    assert_eq!(vm, reference, "full VM vs reference");
    assert_eq!(stackless, reference, "stackless vs reference");
    vm
}

fn i64s(values: &[i64]) -> Column {
    Column::from_scalars(values)
}

#[test]
fn lanes_thousands_of_frames_apart_share_a_batch() {
    // Depths from 1 to 3,001 frames, interleaved so each push and pop mixes lanes at levels
    // far apart and the saved rows and return addresses grow while some lanes are shallow.
    let ns: Vec<i64> = (0..600).map(|i| (i * 7919) % 3001).collect();
    let out = agreed(sum_to::executable().unwrap(), &[i64s(&ns)], 4000).unwrap();
    let expected: Vec<i64> = ns.iter().map(|&n| sum_to(n)).collect();
    assert_eq!(out, expected);
}

#[test]
fn the_depth_limit_fails_in_the_one_lane_that_reaches_it() {
    let exe = sum_to::executable().unwrap();
    // `n + 1` frames: at a limit of 50, n = 49 is the deepest that runs.
    let mut ns: Vec<i64> = (0..200).map(|i| i % 40).collect();
    ns[137] = 49;
    let out = agreed(exe, &[i64s(&ns)], 50).unwrap();
    assert_eq!(out[137], sum_to(49));
    ns[137] = 50;
    ns[190] = 50;
    let err = agreed(exe, &[i64s(&ns)], 50).unwrap_err();
    assert_eq!(
        err,
        RuntimeError::RecursionLimit {
            function: "sum_to".into(),
            lane: 137,
            max_depth: 50,
        }
    );
}

#[test]
fn nested_and_mutual_recursion_agree_with_plain_rust() {
    let (ms, ns): (Vec<i64>, Vec<i64>) = (0..160).map(|i| (i % 4, (i / 4) % 5)).unzip();
    let out = agreed(
        ackermann::executable().unwrap(),
        &[i64s(&ms), i64s(&ns)],
        256,
    )
    .unwrap();
    let expected: Vec<i64> = ms.iter().zip(&ns).map(|(&m, &n)| ackermann(m, n)).collect();
    assert_eq!(out, expected);

    let ns: Vec<i64> = (0..90).map(|i| (i * 13) % 45 - 3).collect();
    let out = agreed(up::executable().unwrap(), &[i64s(&ns)], 256).unwrap();
    let expected: Vec<i64> = ns.iter().map(|&n| up(n)).collect();
    assert_eq!(out, expected);
}

#[test]
fn a_lane_halts_at_its_own_return_while_others_still_recurse() {
    // Lane results must not depend on which lanes share the batch.
    let ns: Vec<i64> = vec![0, 18, 1, 12, 2, 0, 17];
    let alone: Vec<i64> = ns
        .iter()
        .map(|&n| {
            fib::batch(Array1::from_vec(vec![n]).view(), &with(Mode::FullVm, 256)).unwrap()[0]
        })
        .collect();
    let together = fib::batch(
        Array1::from_vec(ns.clone()).view(),
        &with(Mode::FullVm, 256),
    )
    .unwrap();
    assert_eq!(together.to_vec(), alone);
    assert_eq!(alone, ns.iter().map(|&n| fib(n)).collect::<Vec<_>>());
}

/// A hand-lowered program of pushing assignments `a = b` (`a` FULL): lanes with `a > 0` make
/// three more than the others, so at a limit between the two depths only they pass it, and the
/// saved rows grow while the lanes of one push are at different depths.
fn pushing_assignments() -> Executable {
    let mut b = ProgramBuilder::new();
    let a = b.var("a", Type::I64);
    let next = b.var("next", Type::I64);
    let deep = b.var("deep", Type::BOOL);
    b.set_allocation(a, Allocation::Full);
    b.set_allocation(next, Allocation::Register);
    b.set_allocation(deep, Allocation::Register);
    let main = b.function("main");
    b.signature(main, &[a], &[a]);
    let entry = b.block(main, "entry");
    let more = b.block(main, "more");
    let join = b.block(main, "join");
    b.prim(entry, &[deep], &[a], KernelId::new(0), "a > 0");
    b.branch(entry, deep, more, join);
    for _ in 0..3 {
        b.prim(more, &[next], &[a], KernelId::new(1), "a + 1");
        b.assign(more, &[a], &[next]);
    }
    b.goto(more, join);
    for _ in 0..2 {
        b.prim(join, &[next], &[a], KernelId::new(1), "a + 1");
        b.assign(join, &[a], &[next]);
    }
    b.ret(join);
    let program = b.finish_lowered(main).unwrap();
    let kernels = vec![Kernel::map1(|a: i64| a > 0), Kernel::map1(|a: i64| a + 1)];
    Executable::with_allocations(program, kernels).unwrap()
}

#[test]
fn pushing_assignments_reach_the_depth_limit_in_the_deep_lanes_only() {
    let exe = pushing_assignments();
    assert_eq!(exe.lowered().to_string().matches("by assign").count(), 5);
    let inputs = [i64s(&[0, -4, 0, 7, 0, 2, 0, 0, 9])];
    // The input's frame and five pushes (`a > 0`), or two: the deep lanes need a limit of 7.
    let run = |limit| {
        let vm = exe.run(&inputs, &with(Mode::FullVm, limit));
        let reference = exe.run_reference(&inputs, &with(Mode::FullVm, limit));
        let out = |r: Result<autobatch_runtime::Run, RuntimeError>| {
            r.map(|r| r.outputs[0].as_slice::<i64>().unwrap().to_vec())
        };
        let (vm, reference) = (out(vm), out(reference));
        assert_eq!(vm, reference, "limit {limit}");
        vm
    };
    assert_eq!(run(7).unwrap(), vec![2, -2, 2, 12, 2, 7, 2, 2, 14]);
    for limit in [4, 5, 6] {
        match run(limit).unwrap_err() {
            RuntimeError::StackOverflow { var, lane, .. } => {
                assert_eq!((var.as_str(), lane), ("a", 3), "limit {limit}")
            }
            other => panic!("limit {limit}: {other}"),
        }
    }
    // At 3 every lane passes it, the deep ones in the block the VM runs first: the VM names
    // the first lane of the first block that fails, the reference (one lane at a time) lane 0.
    let vm = exe.run(&inputs, &with(Mode::FullVm, 3)).unwrap_err();
    assert!(
        matches!(&vm, RuntimeError::StackOverflow { lane: 3, block, .. } if block == "more"),
        "{vm:?}"
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(40)))]

    #[test]
    fn fibonacci_batches_agree(ns in prop::collection::vec(0i64..16, 1..130)) {
        let out = agreed(fib::executable().unwrap(), &[i64s(&ns)], 256).unwrap();
        prop_assert_eq!(out, ns.iter().map(|&n| fib(n)).collect::<Vec<_>>());
    }

    #[test]
    fn ackermann_batches_agree(pairs in prop::collection::vec((0i64..4, 0i64..5), 1..100)) {
        let (ms, ns): (Vec<i64>, Vec<i64>) = pairs.iter().copied().unzip();
        let out = agreed(ackermann::executable().unwrap(), &[i64s(&ms), i64s(&ns)], 256).unwrap();
        let expected: Vec<i64> = pairs.iter().map(|&(m, n)| ackermann(m, n)).collect();
        prop_assert_eq!(out, expected);
    }

    #[test]
    fn mutual_recursion_batches_agree(ns in prop::collection::vec(-2i64..50, 1..130)) {
        let out = agreed(up::executable().unwrap(), &[i64s(&ns)], 256).unwrap();
        prop_assert_eq!(out, ns.iter().map(|&n| up(n)).collect::<Vec<_>>());
    }

    #[test]
    fn deep_lanes_at_any_limit_agree(
        ns in prop::collection::vec(0i64..300, 1..70),
        limit in 1usize..320,
    ) {
        // Either every lane fits and all agree with plain Rust, or all three fail alike.
        if let Ok(out) = agreed(sum_to::executable().unwrap(), &[i64s(&ns)], limit) {
            prop_assert_eq!(out, ns.iter().map(|&n| sum_to(n)).collect::<Vec<_>>());
        }
    }
}

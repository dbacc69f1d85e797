//! Lane isolation: with `Config::lane_isolation`, each kind of failure (kernel error, kernel
//! panic, depth, step budget, memory) is reported for its lanes and every other lane's results
//! are bit-identical to a run without the failing lanes.

use autobatch_runtime::ndarray::{Array1, ArrayView1};
use autobatch_runtime::{autobatch, primitive, Column, Config, Executable, Mode, RuntimeError};

/// `1000 / x` per lane; the batched form divides every row of the call at once, so a zero in
/// one row panics the whole call and names no row.
#[primitive(batched = inverse_all)]
fn inverse(x: i64) -> i64 {
    inverse_all(ArrayView1::from(&[x]))[0]
}

fn inverse_all(x: ArrayView1<i64>) -> Array1<i64> {
    x.mapv(|x| 1000 / x)
}

/// Recurses `n` times around a batched kernel that panics when `d` is 0.
#[autobatch]
fn batched_risky(n: i64, d: i64) -> i64 {
    if n <= 0 {
        let r: i64 = inverse(d);
        r
    } else {
        batched_risky(n - 1, d) + n
    }
}

/// Recurses `n` times, then divides by `d` (a kernel panic when `d` is 0).
#[autobatch]
fn risky(n: i64, d: i64) -> i64 {
    if n <= 0 {
        1000 / d
    } else {
        risky(n - 1, d) + n * 3
    }
}

/// Loops `n` times.
#[autobatch]
fn spin(n: i64) -> i64 {
    let mut i = 0;
    let mut acc = 0;
    while i < n {
        acc = (acc + i) % 1_000_003;
        i += 1;
    }
    acc
}

fn isolated(mode: Mode) -> Config {
    Config {
        lane_isolation: true,
        ..Config::with_mode(mode)
    }
}

/// Runs `exe` on `inputs` with `config` (isolation on), checks that exactly `bad` lanes
/// failed with errors `kind` accepts, and that every other lane equals a run of only those
/// lanes, bit for bit.
fn check(
    exe: &Executable,
    inputs: &[Column],
    config: &Config,
    bad: &[usize],
    kind: fn(&RuntimeError) -> bool,
) {
    let run = exe.run(inputs, config).unwrap();
    let failed: Vec<usize> = run.failed.iter().map(|f| f.lane).collect();
    assert_eq!(failed, bad, "{:?}: {:?}", config.mode, run.failed);
    for f in &run.failed {
        assert!(kind(&f.error), "{:?}: {}", config.mode, f.error);
        assert!(!run.succeeded(f.lane));
    }
    let batch = inputs[0].rows();
    let good: Vec<usize> = (0..batch).filter(|l| !bad.contains(l)).collect();
    let subset: Vec<Column> = inputs.iter().map(|c| c.gather(&good)).collect();
    let plain = Config {
        lane_isolation: false,
        ..config.clone()
    };
    let alone = exe.run(&subset, &plain).unwrap();
    for (col, own) in run.outputs.iter().zip(&alone.outputs) {
        assert_eq!(&col.gather(&good), own, "{:?}", config.mode);
    }
    // Without isolation the same batch is one error.
    assert!(exe.run(inputs, &plain).is_err());
    assert!(run.clone().complete().is_err());
}

fn i64s(values: &[i64]) -> Column {
    Column::from_scalars(values)
}

#[test]
fn a_kernel_panic_fails_its_lanes_only() {
    let exe = risky::executable().unwrap();
    let inputs = [i64s(&[3, 2, 5, 1, 4]), i64s(&[7, 0, 3, 0, -2])];
    for mode in [Mode::Stackless, Mode::FullVm] {
        check(
            exe,
            &inputs,
            &isolated(mode),
            &[1, 3],
            |e| matches!(e, RuntimeError::Kernel { message, .. } if message.contains("divide by zero")),
        );
    }
}

/// Lanes that reach the division together: the panic is attributed to the lane whose divisor
/// is zero, not to the first lane of the kernel call.
#[test]
fn a_kernel_panic_among_other_lanes_of_one_call_names_its_lane() {
    let exe = risky::executable().unwrap();
    let inputs = [i64s(&[2, 2, 2, 2, 2, 2]), i64s(&[7, 5, 3, 0, -2, 0])];
    for mode in [Mode::Stackless, Mode::FullVm] {
        check(
            exe,
            &inputs,
            &isolated(mode),
            &[3, 5],
            |e| matches!(e, RuntimeError::Kernel { message, .. } if message.contains("divide by zero")),
        );
        let plain = Config::with_mode(mode);
        match exe.run(&inputs, &plain) {
            Err(RuntimeError::Kernel { lane, .. }) => assert_eq!(lane, 3, "{mode:?}"),
            other => panic!("{mode:?}: {other:?}"),
        }
    }
}

#[test]
fn a_batched_kernel_panic_fails_the_lane_at_fault_only() {
    let exe = batched_risky::executable().unwrap();
    let inputs = [i64s(&[3, 2, 5, 1, 4, 0]), i64s(&[7, 5, 3, 0, -2, 9])];
    for mode in [Mode::Stackless, Mode::FullVm] {
        // Without isolation the error names the lane whose row panics, not the call's first.
        let plain = Config::with_mode(mode);
        match exe.run(&inputs, &plain).unwrap_err() {
            RuntimeError::Kernel { lane, .. } => assert_eq!(lane, 3, "{mode:?}"),
            other => panic!("{other}"),
        }
        check(
            exe,
            &inputs,
            &isolated(mode),
            &[3],
            |e| matches!(e, RuntimeError::Kernel { message, .. } if message.contains("divide by zero")),
        );
    }
}

#[test]
fn the_depth_limit_fails_the_deep_lanes_only() {
    let exe = risky::executable().unwrap();
    let inputs = [i64s(&[3, 40, 5, 90, 4]), i64s(&[7, 1, 3, 2, -2])];
    for mode in [Mode::Stackless, Mode::FullVm] {
        let config = Config {
            max_stack_depth: 20,
            ..isolated(mode)
        };
        check(
            exe,
            &inputs,
            &config,
            &[1, 3],
            |e| matches!(e, RuntimeError::RecursionLimit { function, .. } if function == "risky"),
        );
    }
}

#[test]
fn the_step_budget_fails_the_lanes_that_ran_too_long() {
    let exe = spin::executable().unwrap();
    let inputs = [i64s(&[3, 4, 100_000, 5, 250_000])];
    for mode in [Mode::Stackless, Mode::FullVm] {
        // Each lane's own block executions count: the short loops fit, the long ones do not.
        let config = Config {
            step_budget: Some(2_000),
            ..isolated(mode)
        };
        check(exe, &inputs, &config, &[2, 4], |e| {
            matches!(e, RuntimeError::StepBudget { budget: 2_000, .. })
        });
    }
    // Without isolation the budget is the batch's, and the error names the lanes still
    // running: in the full VM a lane leaving the loop halts at once (its exit edge only pops
    // variables without a stack and returns, which the VM passes straight to the halt), so
    // the long loops alone.
    let config = Config {
        step_budget: Some(2_000),
        ..Config::with_mode(Mode::FullVm)
    };
    let err = exe.run(&inputs, &config).unwrap_err();
    assert!(
        matches!(&err, RuntimeError::StepBudget { lanes, .. } if lanes == &[2, 4]),
        "{err}"
    );
    assert!(err.to_string().contains("lanes 2 and 4"), "{err}");
}

#[test]
fn the_memory_budget_fails_the_lane_that_grew() {
    let exe = risky::executable().unwrap();
    let inputs = [i64s(&[3, 20_000, 5, 2]), i64s(&[7, 1, 3, 2])];
    for mode in [Mode::Stackless, Mode::FullVm] {
        let config = Config {
            max_stack_depth: 1_000_000,
            memory_budget: Some(64 * 1024),
            ..isolated(mode)
        };
        check(exe, &inputs, &config, &[1], |e| {
            matches!(e, RuntimeError::MemoryBudget { lane: 1, .. })
        });
    }
}

#[test]
fn several_kinds_at_once_and_all_lanes_failing() {
    let exe = risky::executable().unwrap();
    let inputs = [i64s(&[3, 40, 5, 2, 1]), i64s(&[0, 1, 3, 2, 0])];
    for mode in [Mode::Stackless, Mode::FullVm] {
        let config = Config {
            max_stack_depth: 20,
            ..isolated(mode)
        };
        check(exe, &inputs, &config, &[0, 1, 4], |e| {
            matches!(
                e,
                RuntimeError::RecursionLimit { .. } | RuntimeError::Kernel { .. }
            )
        });
        let zeros = [i64s(&[1, 2]), i64s(&[0, 0])];
        let run = exe.run(&zeros, &config).unwrap();
        assert_eq!(run.failed.len(), 2);
        assert_eq!(run.outputs[0].as_slice::<i64>().unwrap(), &[0, 0]);
    }
}

#[test]
fn batch_isolated_returns_results_and_failed_lanes() {
    let n = Array1::from(vec![3i64, 2, 30, 1]);
    let d = Array1::from(vec![1i64, 0, 5, 4]);
    let config = Config {
        max_stack_depth: 10,
        ..Config::default()
    };
    let run = risky::batch_isolated(n.view(), d.view(), &config).unwrap();
    let failed: Vec<usize> = run.failed.iter().map(|f| f.lane).collect();
    assert_eq!(failed, vec![1, 2]);
    assert_eq!((run.outputs[0], run.outputs[3]), (risky(3, 1), risky(1, 4)));
}

#[test]
fn batch_entry_points_stay_all_or_nothing() {
    let n = Array1::from(vec![3i64, 2]);
    let d = Array1::from(vec![1i64, 0]);
    let err = risky::batch(n.view(), d.view(), &isolated(Mode::FullVm)).unwrap_err();
    assert!(matches!(err, RuntimeError::Kernel { lane: 1, .. }), "{err}");
}

//! The run's limits: call depth counted alike by both modes and the reference (same error at
//! the same call), deep recursion on small thread stacks without aborting, and the memory
//! budget naming what grew.

use autobatch_runtime::ndarray::Array1;
use autobatch_runtime::{autobatch, Column, Config, Executable, Mode, RuntimeError, Vector};

/// `n + (n - 1) + ... + 0`: `n + 1` frames of `sum_to`.
#[autobatch]
fn sum_to(n: i64) -> i64 {
    if n <= 0 {
        0
    } else {
        n + sum_to(n - 1)
    }
}

/// A tail-recursive countdown: the full VM turns its call into a jump, which still counts.
#[autobatch]
fn count_down(n: i64, acc: i64) -> i64 {
    if n <= 0 {
        acc
    } else {
        count_down(n - 1, acc + 1)
    }
}

/// Calls `sum_to` through a small non-recursive helper (inlined before the modes run, not in
/// the reference): the helper's frame does not count.
#[autobatch]
fn helper(n: i64) -> i64 {
    sum_to(n) + 1
}

/// No recursion: calls of it never count.
#[autobatch]
fn not_recursive(n: i64) -> i64 {
    n * 2 + 2
}

/// A vector carried down `n` levels: each level holds a row of its own.
#[autobatch]
fn carry(v: Vector, n: i64) -> f64 {
    if n <= 0 {
        v.sum()
    } else {
        let w = v.clone() * 0.5;
        carry(w, n - 1) + v.sum()
    }
}

fn modes() -> [Mode; 2] {
    [Mode::Stackless, Mode::FullVm]
}

fn at(mode: Mode, max_stack_depth: usize) -> Config {
    Config {
        max_stack_depth,
        ..Config::with_mode(mode)
    }
}

fn i64s(values: &[i64]) -> Column {
    Column::from_scalars(values)
}

/// Runs `exe` in both modes and the reference; all three must agree (same outputs or the same
/// error); returns that outcome.
fn agreed(
    exe: &Executable,
    inputs: &[Column],
    max_stack_depth: usize,
) -> Result<Column, RuntimeError> {
    let reference = exe
        .run_reference(inputs, &at(Mode::FullVm, max_stack_depth))
        .map(|r| r.outputs[0].clone());
    for mode in modes() {
        let run = exe
            .run(inputs, &at(mode, max_stack_depth))
            .map(|r| r.outputs[0].clone());
        assert_eq!(run, reference, "{mode:?} at depth {max_stack_depth}");
    }
    reference
}

#[test]
fn the_default_limit_of_256_allows_256_frames_in_all_three() {
    let exe = sum_to::executable().unwrap();
    assert_eq!(Config::default().max_stack_depth, 256);
    let ok = agreed(exe, &[i64s(&[255, 3])], 256).unwrap();
    assert_eq!(ok.as_slice::<i64>().unwrap(), &[255 * 256 / 2, 6]);
    let err = agreed(exe, &[i64s(&[3, 256])], 256).unwrap_err();
    assert_eq!(
        err,
        RuntimeError::RecursionLimit {
            function: "sum_to".into(),
            lane: 1,
            max_depth: 256,
        }
    );
    let text = err.to_string();
    assert!(!text.contains("__"), "internal names leak: {text}");
    assert!(text.contains("max_stack_depth"), "{text}");
}

#[test]
fn limit_minus_one_succeeds_and_the_limit_fails_alike_at_every_limit() {
    // (program, inputs after `n`): each runs `n + 1` frames of a recursive function
    // (`helper`'s own frame does not count).
    for (exe, rest) in [
        (sum_to::executable().unwrap(), vec![]),
        (count_down::executable().unwrap(), vec![i64s(&[0])]),
        (helper::executable().unwrap(), vec![]),
    ] {
        for limit in [0usize, 1, 2, 7, 40] {
            let calls = |frames: usize| {
                let mut cols = vec![i64s(&[frames as i64 - 1])];
                cols.extend(rest.iter().cloned());
                cols
            };
            if limit > 0 {
                assert!(agreed(exe, &calls(limit), limit).is_ok(), "limit {limit}");
            }
            let err = agreed(exe, &calls(limit + 1), limit).unwrap_err();
            assert!(
                matches!(&err, RuntimeError::RecursionLimit { lane: 0, max_depth, .. } if *max_depth == limit),
                "{err}"
            );
        }
    }
}

#[test]
fn a_huge_limit_is_no_limit_and_zero_runs_no_recursive_function() {
    let exe = sum_to::executable().unwrap();
    let all = agreed(exe, &[i64s(&[0, 10])], usize::MAX).unwrap();
    assert_eq!(all.as_slice::<i64>().unwrap(), &[0, 55]);
    assert!(matches!(
        agreed(exe, &[i64s(&[0])], 0),
        Err(RuntimeError::RecursionLimit { max_depth: 0, .. })
    ));
    // A program without recursive functions needs no depth at all.
    let exe = not_recursive::executable().unwrap();
    let run = agreed(exe, &[i64s(&[4])], 0).unwrap();
    assert_eq!(run.as_slice::<i64>().unwrap(), &[10]);
}

/// Runs `f` on a thread with a 256 KiB stack.
fn on_small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
    std::thread::Builder::new()
        .stack_size(256 * 1024)
        .spawn(f)
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn recursing_to_the_limit_on_a_small_stack_is_a_typed_error_never_an_abort() {
    on_small_stack(|| {
        let exe = sum_to::executable().unwrap();
        let limit = 20_000;
        for mode in modes() {
            let config = at(mode, limit);
            let input = Array1::from(vec![limit as i64 + 5, 3]);
            // `limit + 5` runs `limit + 6` frames; lane 0 fails at its `limit + 1`-th.
            let err = sum_to::batch(input.view(), &config).unwrap_err();
            assert_eq!(
                err,
                RuntimeError::RecursionLimit {
                    function: "sum_to".into(),
                    lane: 0,
                    max_depth: limit,
                },
                "{mode:?}"
            );
            let input = Array1::from(vec![limit as i64 - 1, 3]);
            let ok = sum_to::batch(input.view(), &config).unwrap();
            assert_eq!(ok[0], (limit * (limit - 1) / 2) as i64, "{mode:?}");
        }
        // The reference recurses on the host too.
        let err = exe
            .run_reference(&[i64s(&[limit as i64])], &at(Mode::FullVm, limit))
            .unwrap_err();
        assert!(matches!(err, RuntimeError::RecursionLimit { .. }), "{err}");
    });
}

#[test]
fn depth_100_000_succeeds_in_both_modes_when_the_limit_allows_it() {
    on_small_stack(|| {
        let depth = 100_000i64;
        let input = Array1::from(vec![depth, 7, depth - 1]);
        for mode in modes() {
            let config = at(mode, 100_001);
            let out = sum_to::batch(input.view(), &config).unwrap();
            assert_eq!(
                out.to_vec(),
                vec![depth * (depth + 1) / 2, 28, (depth - 1) * depth / 2],
                "{mode:?}"
            );
        }
    });
}

#[test]
fn the_memory_budget_names_the_variable_that_grew_and_how_to_raise_it() {
    let n = 3_000;
    let input = Array1::from(vec![n; 64]);
    for mode in modes() {
        let config = Config {
            max_stack_depth: 10_000,
            memory_budget: Some(256 * 1024),
            ..Config::with_mode(mode)
        };
        let err = sum_to::batch(input.view(), &config).unwrap_err();
        let RuntimeError::MemoryBudget {
            grew, used, budget, ..
        } = &err
        else {
            panic!("{mode:?}: {err}");
        };
        assert_eq!(*budget, 256 * 1024);
        assert!(*used > *budget, "{err}");
        assert!(grew.contains("sum_to"), "{mode:?}: {err}");
        assert!(err.to_string().contains("Config::memory_budget"), "{err}");
        // The same run fits without the budget, and in the default one.
        let unlimited = Config {
            memory_budget: None,
            ..config.clone()
        };
        let all = sum_to::batch(input.view(), &unlimited).unwrap();
        assert!(all.iter().all(|&s| s == n * (n + 1) / 2));
        let default = Config {
            max_stack_depth: 10_000,
            ..Config::with_mode(mode)
        };
        assert_eq!(sum_to::batch(input.view(), &default).unwrap(), all);
    }
}

#[test]
fn vector_rows_count_against_the_budget() {
    let rows = Array1::<f64>::linspace(0.0, 1.0, 128);
    let v =
        autobatch_runtime::ndarray::Array2::from_shape_fn((16, 128), |(i, j)| rows[j] + i as f64);
    let n = Array1::from(vec![200i64; 16]);
    for mode in modes() {
        let config = Config {
            memory_budget: Some(1 << 20),
            ..Config::with_mode(mode)
        };
        let err = carry::batch(v.view(), n.view(), &config).unwrap_err();
        assert!(
            matches!(&err, RuntimeError::MemoryBudget { grew, .. } if grew.contains('`')),
            "{mode:?}: {err}"
        );
        let fine = carry::batch(v.view(), n.view(), &Config::with_mode(mode)).unwrap();
        assert!(fine.iter().all(|x| x.is_finite()));
    }
}

#[test]
fn a_zero_memory_budget_is_a_typed_error_or_the_result() {
    for mode in modes() {
        let config = Config {
            memory_budget: Some(0),
            ..Config::with_mode(mode)
        };
        match sum_to::batch(Array1::from(vec![3i64]).view(), &config) {
            Ok(out) => assert_eq!(out.to_vec(), vec![6]),
            Err(err) => assert!(matches!(err, RuntimeError::MemoryBudget { .. }), "{err}"),
        }
    }
}

/// Begins with a loop (its entry block may hold no op) and tail-calls itself.
#[autobatch]
fn loop_first(n: i64, acc: i64) -> i64 {
    let mut k = acc;
    while k > 1000 {
        k -= 1000;
    }
    if n <= 0 {
        k
    } else {
        loop_first(n - 1, k + n)
    }
}

#[test]
fn a_tail_call_to_a_function_that_begins_with_a_loop_counts_alike() {
    let exe = loop_first::executable().unwrap();
    for limit in [1usize, 3, 12] {
        let k = limit as i64;
        assert!(agreed(exe, &[i64s(&[k - 1]), i64s(&[2500])], limit).is_ok());
        let err = agreed(exe, &[i64s(&[k]), i64s(&[2500])], limit).unwrap_err();
        assert!(matches!(err, RuntimeError::RecursionLimit { .. }), "{err}");
    }
}

/// Stackless sets a recursive call's saved values aside whole (a row per lane of the batch)
/// when enough lanes call, but never where that would pass the memory budget: ten lanes of 640
/// recursing 2,000 deep need 160 KB of snapshots, where setting aside would hold 10 MB; with a
/// budget of 1 MB the run still succeeds, with every lane's result.
#[test]
fn setting_values_aside_falls_back_to_snapshots_within_the_memory_budget() {
    let deep = 2_000i64;
    let input = Array1::from_iter((0..640).map(|i| if i < 10 { deep } else { 1 }));
    let config = Config {
        threads: 1,
        max_stack_depth: 2_001,
        memory_budget: Some(1 << 20),
        ..Config::with_mode(Mode::Stackless)
    };
    let out = on_small_stack(move || sum_to::batch(input.view(), &config));
    let out = out.unwrap_or_else(|e| panic!("{e}"));
    assert!(out.iter().take(10).all(|&s| s == deep * (deep + 1) / 2));
    assert!(out.iter().skip(10).all(|&s| s == 1));
}

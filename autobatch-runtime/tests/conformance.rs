//! The reference's conformance programs (docs/reference-semantics.md, "Conformance programs")
//! run in both modes, checked against the expected outputs and the single-lane reference
//! interpreter.

mod common;

use autobatch_runtime::ir::DType;
use autobatch_runtime::{Column, Config, Executable, Mode, Passes, Run, RuntimeError};
use autobatch_testkit::conformance as programs;
use common::{as_bools, as_i64s, build_counting, executable, i64s};
use std::time::Duration;

/// Runs `exe` in `mode`, checks the outputs equal the reference interpreter's, returns the run.
fn run_checked(exe: &Executable, inputs: &[Column], mode: Mode) -> Run {
    let config = Config::with_mode(mode);
    let run = exe
        .run(inputs, &config)
        .unwrap_or_else(|e| panic!("{mode:?}: {e}"));
    let oracle = exe
        .run_reference(inputs, &config)
        .expect("reference interpreter");
    assert_eq!(
        run.outputs, oracle.outputs,
        "{mode:?} disagrees with the reference interpreter"
    );
    run
}

macro_rules! suite {
    ($name:ident, $mode:expr) => {
        mod $name {
            use super::*;
            const MODE: Mode = $mode;

            #[test]
            fn constant() {
                let exe = executable(programs::constant_program);
                assert_eq!(
                    as_i64s(&run_checked(&exe, &[i64s(&[5])], MODE).outputs[0]),
                    [2]
                );
                let run = run_checked(&exe, &[i64s(&[5, 10, 15])], MODE);
                assert_eq!(as_i64s(&run.outputs[0]), [2, 2, 2]);
            }

            #[test]
            fn single_if() {
                let exe = executable(programs::single_if_program);
                for (input, expected) in [
                    (vec![1], vec![0]),
                    (vec![3], vec![2]),
                    (vec![0, 5, -15], vec![0, 2, 0]),
                ] {
                    let run = run_checked(&exe, &[i64s(&input)], MODE);
                    assert_eq!(as_i64s(&run.outputs[0]), expected);
                }
            }

            #[test]
            fn synthetic_pattern() {
                let exe = executable(programs::synthetic_pattern_program);
                let run = run_checked(&exe, &[], MODE);
                let got: Vec<i64> = run.outputs.iter().flat_map(as_i64s).collect();
                assert_eq!(got, [1, 3, 4, 5, 6]);
            }

            #[test]
            fn synthetic_pattern_variable() {
                let exe = executable(programs::synthetic_pattern_variable_program);
                let run = run_checked(&exe, &[i64s(&[3, 4, 5])], MODE);
                assert_eq!(as_i64s(&run.outputs[0]), [5, 6, 7]);
                assert_eq!(as_i64s(&run.outputs[1]), [6, 7, 8]);
            }

            #[test]
            fn fibonacci_function_calls() {
                for dtype in [DType::I64, DType::I32] {
                    let exe = executable(|k| programs::fibonacci_function_calls(k, dtype));
                    let input = |v: &[i64]| match dtype {
                        DType::I32 => {
                            Column::from_scalars(&v.iter().map(|&x| x as i32).collect::<Vec<_>>())
                        }
                        _ => i64s(v),
                    };
                    let out = |c: &Column| match dtype {
                        DType::I32 => c
                            .as_slice::<i32>()
                            .unwrap()
                            .iter()
                            .map(|&x| x as i64)
                            .collect(),
                        _ => as_i64s(c),
                    };
                    for (inp, expected) in [
                        (vec![5], vec![8]),
                        (vec![5, 6, 8, 9], vec![8, 13, 34, 55]),
                        (vec![0, 1, 3], vec![1, 1, 3]),
                    ] {
                        let run = run_checked(&exe, &[input(&inp)], MODE);
                        assert_eq!(out(&run.outputs[0]), expected);
                    }
                }
            }

            #[test]
            fn is_even_with_and_without_pops() {
                for with_pops in [true, false] {
                    let exe =
                        executable(|k| programs::is_even_function_calls(k, DType::I64, with_pops));
                    for (inp, expected) in [
                        (vec![0], vec![true]),
                        (vec![1], vec![false]),
                        (vec![2], vec![true]),
                        (vec![5, 6, 8, 9, 0], vec![false, true, true, false, true]),
                    ] {
                        let run = run_checked(&exe, &[i64s(&inp)], MODE);
                        assert_eq!(as_bools(&run.outputs[0]), expected, "with_pops={with_pops}");
                    }
                }
            }

            #[test]
            fn iota_sum() {
                let exe = executable(programs::iota_sum);
                let run = run_checked(&exe, &[i64s(&[12, -13, 100]), i64s(&[0, 0, 0])], MODE);
                assert_eq!(as_i64s(&run.outputs[0]), [78, 0, 5050]);
            }

            #[test]
            fn gcd_with_swapped_arguments() {
                let exe = executable(programs::gcd);
                let run = run_checked(&exe, &[i64s(&[7, 12, 49]), i64s(&[9, 9, 56])], MODE);
                assert_eq!(as_i64s(&run.outputs[0]), [1, 3, 7]);
            }

            #[test]
            fn countdown_loop() {
                let exe = executable(programs::countdown);
                let run = run_checked(&exe, &[i64s(&[3, 0, -1, 7])], MODE);
                assert_eq!(as_i64s(&run.outputs[0]), [6, 0, 0, 14]);
            }

            #[test]
            fn fibonacci_sync_results() {
                let exe = executable(programs::fibonacci_sync);
                let run = run_checked(&exe, &[i64s(&[3, 7, 4, 5])], MODE);
                assert_eq!(as_i64s(&run.outputs[0]), [3, 21, 5, 8]);
            }
        }
    };
}

suite!(full_vm, Mode::FullVm);
suite!(stackless, Mode::Stackless);

#[test]
fn hand_lowered_fibonacci_runs_on_the_full_vm() {
    let exe = executable(programs::fibonacci_program);
    for (inp, expected) in [
        (vec![5], vec![8]),
        (vec![5, 6, 8, 9], vec![8, 13, 34, 55]),
        (vec![0, 1, 3], vec![1, 1, 3]),
    ] {
        let run = run_checked(&exe, &[i64s(&inp)], Mode::FullVm);
        assert_eq!(as_i64s(&run.outputs[0]), expected);
    }
    assert!(exe
        .run(&[i64s(&[5])], &Config::with_mode(Mode::Stackless))
        .is_err());
}

/// The hand-lowered fibonacci's `n` holds its unset frame, the input and one frame per call in
/// progress: fib(5) needs 6 frames, and the full VM and the reference fail alike at 5.
#[test]
fn hand_lowered_fibonacci_needs_stack_depth_6_for_input_5() {
    let exe = executable(programs::fibonacci_program);
    let at = |depth| Config {
        max_stack_depth: depth,
        ..Config::with_mode(Mode::FullVm)
    };
    assert!(exe.run(&[i64s(&[5])], &at(6)).is_ok());
    assert!(exe.run_reference(&[i64s(&[5])], &at(6)).is_ok());
    let vm = exe.run(&[i64s(&[5])], &at(5)).unwrap_err();
    assert_eq!(exe.run_reference(&[i64s(&[5])], &at(5)).unwrap_err(), vm);
    assert!(matches!(vm, RuntimeError::StackOverflow { .. }), "{vm}");
}

#[test]
fn pea_nuts_runs_and_matches_the_reference() {
    let exe = executable(programs::pea_nuts_program);
    let state = Column::F32(ndarray::Array2::from_shape_fn((4, 3), |(i, j)| {
        (i * 3 + j) as f32
    }));
    let run = run_checked(&exe, &[i64s(&[3, 3, 3, 3]), state], Mode::FullVm);
    assert_eq!((run.outputs[0].rows(), run.outputs[0].width()), (4, 3));
}

/// With the full VM, lanes re-converge across recursion depths (docs/reference-semantics.md,
/// "The full VM"), so the addition in the sync-test fibonacci runs exactly as often as fib(7)
/// alone needs (20 times) on [3, 7, 4, 5] (with the reference's blocks, and with ours after
/// inlining and block simplification).
#[test]
fn full_vm_synchronises_additions_across_depths() {
    for passes in [Passes::none(), Passes::default()] {
        let (program, kernels, calls, _) = build_counting(programs::fibonacci_sync, "x + y");
        let exe = Executable::with_passes(program, kernels, &passes).unwrap();
        let run = exe
            .run(&[i64s(&[3, 7, 4, 5])], &Config::with_mode(Mode::FullVm))
            .unwrap();
        assert_eq!(as_i64s(&run.outputs[0]), [3, 21, 5, 8]);
        assert_eq!(
            calls.load(std::sync::atomic::Ordering::SeqCst),
            20,
            "{passes:?}"
        );
    }
}

/// Fibonacci through calls on [5, 6, 8, 9] (docs/reference-semantics.md, "The full VM") runs
/// the addition 54 times (fib(9)'s own count) and the base case 55 times on the full VM; stackless cannot merge lanes at different
/// depths and runs the base case 94 times. The same with the reference's blocks and with ours.
#[test]
fn full_vm_merges_lanes_across_depths() {
    for passes in [Passes::none(), Passes::default()] {
        counts_match_the_reference(&passes);
    }
}

fn counts_match_the_reference(passes: &Passes) {
    let count = |mode, source| {
        let (program, kernels, calls, _) = build_counting(
            |k| programs::fibonacci_function_calls(k, DType::I64),
            source,
        );
        let exe = Executable::with_passes(program, kernels, passes).unwrap();
        exe.run(&[i64s(&[5, 6, 8, 9])], &Config::with_mode(mode))
            .unwrap();
        calls.load(std::sync::atomic::Ordering::SeqCst)
    };
    assert_eq!(count(Mode::FullVm, "x + y"), 54);
    // The kernel statistics count the same runs, and the lanes they computed.
    let (program, kernels, sources) =
        common::build(|k| programs::fibonacci_function_calls(k, DType::I64));
    let add = sources.iter().position(|s| s == "x + y").unwrap();
    let run = Executable::with_passes(program, kernels, passes)
        .unwrap()
        .run(&[i64s(&[5, 6, 8, 9])], &Config::default())
        .unwrap();
    assert_eq!(run.stats.kernels[add].runs, 54);
    let u = run.stats.kernel_utilisation(add).unwrap();
    assert!(u > 0.25 && u <= 1.0, "{u}");
    assert_eq!(count(Mode::FullVm, "1"), 55);
    assert_eq!(count(Mode::Stackless, "x + y"), 54);
    assert_eq!(count(Mode::Stackless, "1"), 94);
}

/// Kernel times are measured only when the configuration asks (`Config::time_kernels`), in
/// both modes, and the results are the same either way.
#[test]
fn kernel_times_are_measured_only_when_asked() {
    let exe = executable(|k| programs::fibonacci_function_calls(k, DType::I64));
    let inputs = [i64s(&[5, 6, 8, 9])];
    for mode in [Mode::FullVm, Mode::Stackless] {
        let run = |time_kernels| {
            let config = Config {
                time_kernels,
                ..Config::with_mode(mode)
            };
            exe.run(&inputs, &config).unwrap()
        };
        let (untimed, timed) = (run(false), run(true));
        assert_eq!(untimed.outputs, timed.outputs);
        let total = |r: &Run| r.stats.kernels.iter().map(|k| k.time).sum::<Duration>();
        assert_eq!(total(&untimed), Duration::ZERO, "{mode:?}");
        assert_eq!(untimed.stats.lane_kernel_time, Duration::ZERO);
        assert!(timed.stats.lane_kernel_time > Duration::ZERO, "{mode:?}");
        assert_eq!(total(&timed), timed.stats.lane_kernel_time);
        assert_eq!(timed.stats.batched_kernel_time, Duration::ZERO);
    }
}

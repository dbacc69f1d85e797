//! Every runtime error has a test that triggers it; kernels never see inactive lanes.

mod common;

use autobatch_runtime::ir::{Allocation, DType, FuncId, KernelId, ProgramBuilder, Type};
use autobatch_runtime::{Column, Config, Executable, Kernel, KernelError, Mode, RuntimeError};
use autobatch_testkit::conformance as programs;
use common::{build, executable, i64s};

fn vm() -> Config {
    Config::with_mode(Mode::FullVm)
}

fn both() -> [Config; 2] {
    [
        Config::with_mode(Mode::FullVm),
        Config::with_mode(Mode::Stackless),
    ]
}

/// `guarded(x) = if x > 1 { kernel(x) } else { 0 }` with a caller-chosen kernel for the then arm.
fn guarded(kernel: Kernel) -> Executable {
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let c = b.var("c", Type::BOOL);
    let y = b.var("y", Type::I64);
    let f = b.function("guarded");
    b.signature(f, &[x], &[y]);
    let e = b.block(f, "entry");
    let t = b.block(f, "then");
    let el = b.block(f, "else");
    b.prim(e, &[c], &[x], KernelId::new(0), "x > 1");
    b.branch(e, c, t, el);
    b.prim(t, &[y], &[x], KernelId::new(1), "kernel(x)");
    b.ret(t);
    b.prim(el, &[y], &[], KernelId::new(2), "0");
    b.ret(el);
    let program = b.finish_with_entry(f).unwrap();
    let kernels = vec![Kernel::map1(|x: i64| x > 1), kernel, Kernel::constant(0i64)];
    Executable::new(program, kernels).unwrap()
}

#[test]
fn kernels_never_see_inactive_lanes() {
    // Panics on any lane that did not take the branch: junk never reaches user code.
    let exe = guarded(Kernel::map1(|x: i64| {
        assert!(x > 1, "inactive lane reached the kernel");
        100 / (x - 1)
    }));
    for config in both() {
        let run = exe.run(&[i64s(&[0, 5, 1, 3, -7])], &config).unwrap();
        assert_eq!(
            run.outputs[0].as_slice::<i64>().unwrap(),
            &[0, 25, 0, 50, 0]
        );
    }
}

#[test]
fn a_failing_kernel_names_its_lane() {
    let exe = guarded(Kernel::try_map1(|x: i64| {
        if x == 7 {
            Err("seven".to_string())
        } else {
            Ok(x)
        }
    }));
    for config in both() {
        let err = exe.run(&[i64s(&[3, 0, 7, 9])], &config).unwrap_err();
        match err {
            RuntimeError::Kernel {
                lane,
                message,
                source_text,
                block,
            } => {
                assert_eq!((lane, message.as_str()), (2, "seven"));
                assert_eq!(source_text, "kernel(x)");
                assert!(block.starts_with("then"), "{block}");
            }
            other => panic!("{other}"),
        }
    }
}

#[test]
fn a_panicking_kernel_is_caught_with_its_lane() {
    let exe = guarded(Kernel::map1(
        |x: i64| if x == 9 { panic!("nine") } else { x },
    ));
    for config in both() {
        match exe.run(&[i64s(&[3, 9, 0, 4])], &config).unwrap_err() {
            RuntimeError::Kernel { lane, message, .. } => {
                assert_eq!(lane, 1);
                assert!(message.contains("nine"), "{message}");
            }
            other => panic!("{other}"),
        }
    }
}

#[test]
fn a_kernel_output_of_the_wrong_type_is_an_error() {
    let bad = Kernel::batched(|_, outs| {
        outs[0] = Column::zeros(DType::F64, outs[0].rows(), 1);
        Ok::<(), KernelError>(())
    });
    let exe = guarded(bad);
    for config in both() {
        assert!(matches!(
            exe.run(&[i64s(&[3])], &config),
            Err(RuntimeError::KernelOutput { leaf: 0, .. })
        ));
    }
}

/// A lane-wise kernel may replace the column standing in for an output it could write by lane;
/// one of the wrong type is an error, not written.
#[test]
fn a_lane_wise_kernel_output_replaced_by_the_wrong_type_is_an_error() {
    let bad = Kernel::lane_wise(|_, outs| {
        let column = outs.column(0)?;
        *column = Column::zeros(DType::F64, column.rows(), 1);
        Ok::<(), KernelError>(())
    });
    let exe = guarded(bad);
    for config in both() {
        assert!(matches!(
            exe.run(&[i64s(&[3, 0, 5])], &config),
            Err(RuntimeError::KernelOutput { leaf: 0, .. })
        ));
    }
}

#[test]
fn wrong_number_of_inputs() {
    let exe = executable(programs::gcd);
    for config in both() {
        let err = exe.run(&[i64s(&[1])], &config).unwrap_err();
        assert!(
            matches!(
                err,
                RuntimeError::InputCount {
                    expected: 2,
                    found: 1,
                    ..
                }
            ),
            "{err}"
        );
    }
}

#[test]
fn batch_sizes_that_disagree() {
    let exe = executable(programs::gcd);
    for config in both() {
        let err = exe
            .run(&[i64s(&[1, 2, 3]), i64s(&[1, 2])], &config)
            .unwrap_err();
        assert!(
            matches!(
                err,
                RuntimeError::BatchMismatch {
                    found: 2,
                    expected: 3,
                    ..
                }
            ),
            "{err}"
        );
        assert!(err.to_string().contains("`b`"), "{err}");
    }
}

#[test]
fn wrong_dtype_or_event_shape() {
    let exe = executable(programs::gcd);
    for config in both() {
        let err = exe
            .run(&[Column::from_scalars(&[1.0f64]), i64s(&[1])], &config)
            .unwrap_err();
        assert!(matches!(err, RuntimeError::InputType { .. }), "{err}");
        let wide = Column::I64(ndarray::Array2::zeros((1, 2)));
        let err = exe.run(&[wide, i64s(&[1])], &config).unwrap_err();
        assert!(matches!(err, RuntimeError::InputType { .. }), "{err}");
    }
}

#[test]
fn vector_length_disagreement() {
    let exe = executable(programs::pea_nuts_program);
    let state = Column::F32(ndarray::Array2::zeros((2, 3)));
    let config = Config {
        vector_len: Some(5),
        ..vm()
    };
    let err = exe.run(&[i64s(&[1, 1]), state], &config).unwrap_err();
    assert!(
        matches!(
            err,
            RuntimeError::VectorLength {
                found: 3,
                expected: 5,
                ..
            }
        ),
        "{err}"
    );
}

#[test]
fn stack_depth_exceeded_names_variable_and_lane() {
    let exe = executable(programs::fibonacci_program);
    let config = Config {
        max_stack_depth: 6,
        ..vm()
    };
    match exe.run(&[i64s(&[1, 2, 9])], &config).unwrap_err() {
        RuntimeError::StackOverflow {
            lane,
            max_depth,
            var,
            ..
        } => {
            assert_eq!((lane, max_depth), (2, 6));
            assert!(!var.is_empty());
        }
        other => panic!("{other}"),
    }
    // A data variable: the reference's constant program, hand-lowered with both writes pushed
    // (`answer` FULL), needs depth 4 ("initial value and two pushes").
    let mut b = ProgramBuilder::new();
    let answer = b.var("answer", Type::I64);
    let main = b.function("main");
    b.signature(main, &[answer], &[answer]);
    let e = b.block(main, "entry");
    b.prim(e, &[answer], &[], KernelId::new(0), "1");
    b.prim(e, &[answer], &[], KernelId::new(1), "2");
    b.ret(e);
    let program = b.finish_lowered(main).unwrap();
    let kernels = vec![Kernel::constant(1i64), Kernel::constant(2i64)];
    let exe = Executable::with_allocations(program, kernels).unwrap();
    let at = |d| Config {
        max_stack_depth: d,
        ..vm()
    };
    assert!(exe.run(&[i64s(&[5])], &at(4)).is_ok());
    match exe.run(&[i64s(&[5])], &at(3)).unwrap_err() {
        RuntimeError::StackOverflow { var, lane, .. } => {
            assert_eq!((var.as_str(), lane), ("answer", 0))
        }
        other => panic!("{other}"),
    }
}

#[test]
fn stackless_recursion_limit() {
    let exe = executable(|k| programs::fibonacci_function_calls(k, DType::I64));
    let config = Config {
        max_stack_depth: 5,
        ..Config::with_mode(Mode::Stackless)
    };
    let err = exe.run(&[i64s(&[2, 12])], &config).unwrap_err();
    assert!(
        matches!(err, RuntimeError::RecursionLimit { max_depth: 5, .. }),
        "{err}"
    );
}

#[test]
fn step_budget_ends_a_long_loop() {
    let exe = executable(programs::countdown);
    for mode in [Mode::FullVm, Mode::Stackless] {
        let config = Config {
            step_budget: Some(50),
            ..Config::with_mode(mode)
        };
        let err = exe.run(&[i64s(&[1, 1_000_000])], &config).unwrap_err();
        assert!(
            matches!(
                err,
                // Stackless counts the finished lane too: it waits at the loop exit.
                RuntimeError::StepBudget {
                    budget: 50,
                    running: 1..=2,
                    ..
                }
            ),
            "{mode:?}: {err}"
        );
    }
}

/// A hand-lowered main: `y = prim(x) by ...; pop(...); return`.
fn lowered_main(pops: usize, read_unset: bool) -> Executable {
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let y = b.var("y", Type::I64);
    let z = b.var("z", Type::I64);
    let main = b.function("main");
    b.signature(main, &[x], &[y]);
    let e = b.block(main, "entry");
    b.prim(
        e,
        &[y],
        &[if read_unset { z } else { x }],
        KernelId::new(0),
        "x - 1",
    );
    for _ in 0..pops {
        b.pop(e, &[x]);
    }
    b.ret(e);
    let program = b.finish_lowered(main).unwrap();
    Executable::with_allocations(program, vec![Kernel::map1(|x: i64| x - 1)]).unwrap()
}

#[test]
fn pop_of_an_empty_stack() {
    assert!(lowered_main(1, false).run(&[i64s(&[1])], &vm()).is_ok());
    let err = lowered_main(2, false)
        .run(&[i64s(&[1, 2])], &vm())
        .unwrap_err();
    assert!(
        matches!(&err, RuntimeError::PopEmpty { var, lane: 0, .. } if var == "x"),
        "{err}"
    );
}

#[test]
fn read_of_an_unset_variable() {
    let err = lowered_main(0, true)
        .run(&[i64s(&[1, 2])], &vm())
        .unwrap_err();
    assert!(
        matches!(&err, RuntimeError::ReadUnset { var, lane: 0, .. } if var == "z"),
        "{err}"
    );
}

#[test]
fn read_of_a_null_variable() {
    let (program, kernels, _) = build(programs::single_if_program);
    let mut allocs = program.allocations();
    allocs[program.var_named("cond").unwrap().index()] = Allocation::Null;
    let exe = Executable::with_allocations(program.with_allocations(&allocs), kernels).unwrap();
    for config in both() {
        let err = exe.run(&[i64s(&[1])], &config).unwrap_err();
        assert!(
            matches!(&err, RuntimeError::ReadNull { var, .. } if var == "cond"),
            "{err}"
        );
    }
}

#[test]
fn missing_kernel() {
    let (program, _, _) = build(programs::single_if_program);
    let exe = Executable::new(program, Vec::new()).unwrap();
    for config in both() {
        let err = exe.run(&[i64s(&[1])], &config).unwrap_err();
        assert!(
            matches!(err, RuntimeError::MissingKernel { table: 0, .. }),
            "{err}"
        );
    }
}

#[test]
fn stackless_needs_a_high_level_program() {
    let exe = executable(programs::fibonacci_program);
    let err = exe
        .run(&[i64s(&[3])], &Config::with_mode(Mode::Stackless))
        .unwrap_err();
    assert!(matches!(err, RuntimeError::ModeUnsupported(_)), "{err}");
}

#[test]
fn an_invalid_program_is_rejected() {
    let (program, kernels, _) = build(programs::single_if_program);
    let mut program = program.into_program();
    program.main = FuncId::new(42);
    assert!(matches!(
        Executable::new(program, kernels),
        Err(RuntimeError::Invalid(_))
    ));
}

#[test]
fn a_program_lowering_rejects() {
    // `pop(x)` followed by a read of `x`: valid IR, but the pop discards a value still needed.
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let y = b.var("y", Type::I64);
    let f = b.function("f");
    b.signature(f, &[x], &[y]);
    let e = b.block(f, "entry");
    b.pop(e, &[x]);
    b.prim(e, &[y], &[x], KernelId::new(0), "x - 1");
    b.ret(e);
    let program = b.finish_with_entry(f).unwrap();
    let err = Executable::new(program, vec![Kernel::map1(|x: i64| x - 1)]).unwrap_err();
    // Lowering for the full VM reports it, located at the block, as an invalid program (`f`
    // is inlined into `main` first).
    let RuntimeError::Invalid(errors) = &err else {
        panic!("expected an invalid program, got {err}");
    };
    assert_eq!(
        errors.0[0].to_string(),
        "block `main_entry` in function `main`: `x@main.1` is popped but live after the pop"
    );
}

#[test]
fn an_empty_batch_runs_and_returns_empty_outputs() {
    let exe = executable(|k| programs::fibonacci_function_calls(k, DType::I64));
    for config in both() {
        let run = exe.run(&[i64s(&[])], &config).unwrap();
        assert_eq!(run.outputs[0].rows(), 0);
    }
}

#[test]
fn a_zero_stack_depth_is_an_error_not_a_panic() {
    let exe = executable(|k| programs::fibonacci_function_calls(k, DType::I64));
    for mode in [Mode::FullVm, Mode::Stackless] {
        let config = Config {
            max_stack_depth: 0,
            ..Config::with_mode(mode)
        };
        assert!(exe.run(&[i64s(&[3])], &config).is_err(), "{mode:?}");
    }
}

/// `scaled(v) = kernel(v)` on `f64` vectors, with a caller-chosen lane-wise kernel: vector
/// outputs of lane-wise kernels are written in place into the interpreter's vector storage.
fn scaled(kernel: Kernel) -> Executable {
    let mut b = ProgramBuilder::new();
    let v = b.var("v", Type::vector(DType::F64));
    let w = b.var("w", Type::vector(DType::F64));
    let f = b.function("scaled");
    b.signature(f, &[v], &[w]);
    let e = b.block(f, "entry");
    b.prim(e, &[w], &[v], KernelId::new(0), "kernel(v)");
    b.ret(e);
    Executable::new(b.finish_with_entry(f).unwrap(), vec![kernel]).unwrap()
}

fn vectors(rows: &[[f64; 3]]) -> Column {
    let flat: Vec<f64> = rows.iter().flatten().copied().collect();
    Column::from_view2(
        autobatch_runtime::ndarray::ArrayView2::from_shape((rows.len(), 3), &flat).unwrap(),
    )
}

#[test]
fn hand_written_kernels_write_vector_rows_in_place() {
    let tripled = scaled(Kernel::lane_wise(|ins, outs| {
        let v = ins.rows::<f64>(0)?;
        let [w] = outs.leaves::<1>()?;
        let mut w = w.vectors()?;
        for (k, &lane) in ins.lanes().iter().enumerate() {
            for (o, x) in w.row_mut(k).iter_mut().zip(v.row(lane)) {
                *o = 3.0 * x;
            }
        }
        Ok(())
    }));
    for config in both() {
        let run = tripled
            .run(&[vectors(&[[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0]])], &config)
            .unwrap();
        assert_eq!(
            run.outputs[0].as_slice::<f64>().unwrap(),
            &[3.0, 6.0, 9.0, -3.0, 1.5, 0.0]
        );
    }
}

#[test]
fn vector_outputs_in_place_report_misuse_and_failures() {
    // Vector rows written in place are not a dense column: asking for one is an error.
    let dense = scaled(Kernel::lane_wise(|_, outs| {
        outs.slice::<f64>(0)?;
        Ok(())
    }));
    // A kernel that fails half-way through its vector rows names the lane.
    let failing = scaled(Kernel::lane_wise(|ins, outs| {
        let [w] = outs.leaves::<1>()?;
        let mut w = w.vectors()?;
        for (k, _) in ins.lanes().iter().enumerate() {
            if k == 1 {
                return Err(KernelError::at(k, "no second row"));
            }
            w.row_mut(k).fill(1.0);
        }
        Ok(())
    }));
    let input = vectors(&[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]);
    for config in both() {
        let e = dense
            .run(std::slice::from_ref(&input), &config)
            .unwrap_err();
        assert!(
            matches!(&e, RuntimeError::Kernel { message, .. } if message.contains("written in place")),
            "{e}"
        );
        let e = failing
            .run(std::slice::from_ref(&input), &config)
            .unwrap_err();
        assert!(
            matches!(&e, RuntimeError::Kernel { lane: 1, message, .. } if message == "no second row"),
            "{e}"
        );
    }
}

//! Hostile input at the API: non-finite numbers, empty and one-lane batches, mismatched
//! lengths, zero and huge limits, a program with many verifier errors. Each gives a typed
//! error or the right result, never a panic.

use autobatch_runtime::ir::{Block, KernelId, ProgramBuilder, Terminator, Type};
use autobatch_runtime::ndarray::{Array1, Array2};
use autobatch_runtime::{
    autobatch, Column, Config, Executable, Kernel, Mode, RuntimeError, Vector,
};

/// Branches on comparisons that NaN answers `false` to, and recurses.
#[autobatch]
fn walk(x: f64, n: i64) -> f64 {
    if n <= 0 {
        x
    } else if x > 1.0 {
        walk(x * 0.5 - 1.0, n - 1)
    } else {
        walk(x + 2.0, n - 1) + x
    }
}

/// Two vector inputs, which must have one length.
#[autobatch]
fn dot(a: Vector, b: Vector) -> f64 {
    a.dot(&b)
}

fn modes() -> [Config; 2] {
    [
        Config::with_mode(Mode::Stackless),
        Config::with_mode(Mode::FullVm),
    ]
}

#[test]
fn non_finite_inputs_give_the_scalar_results_bit_for_bit() {
    let xs = [
        f64::NAN,
        f64::INFINITY,
        f64::NEG_INFINITY,
        -0.0,
        f64::MAX,
        f64::MIN_POSITIVE / 4.0,
        3.5,
    ];
    let ns = [3i64, 5, 2, 4, 6, 1, 0];
    let x = Array1::from(xs.to_vec());
    let n = Array1::from(ns.to_vec());
    for config in modes() {
        let out = walk::batch(x.view(), n.view(), &config).unwrap();
        for (lane, (&xi, &ni)) in xs.iter().zip(&ns).enumerate() {
            assert_eq!(
                out[lane].to_bits(),
                walk(xi, ni).to_bits(),
                "{:?} lane {lane}",
                config.mode
            );
        }
    }
    let exe = walk::executable().unwrap();
    let inputs = [Column::from_scalars(&xs), Column::from_scalars(&ns)];
    let reference = exe.run_reference(&inputs, &Config::default()).unwrap();
    let batched = exe.run(&inputs, &Config::default()).unwrap();
    let bits = |c: &Column| -> Vec<u64> {
        c.as_slice::<f64>()
            .unwrap()
            .iter()
            .map(|v| v.to_bits())
            .collect()
    };
    assert_eq!(bits(&reference.outputs[0]), bits(&batched.outputs[0]));
}

#[test]
fn empty_and_one_lane_batches() {
    for config in modes() {
        let none = walk::batch(
            Array1::<f64>::zeros(0).view(),
            Array1::<i64>::zeros(0).view(),
            &config,
        )
        .unwrap();
        assert_eq!(none.len(), 0);
        let one = walk::batch(
            Array1::from(vec![0.25]).view(),
            Array1::from(vec![4i64]).view(),
            &config,
        )
        .unwrap();
        assert_eq!(one.to_vec(), vec![walk(0.25, 4)]);
        let empty = Array2::<f64>::zeros((0, 3));
        assert_eq!(
            dot::batch(empty.view(), empty.view(), &config)
                .unwrap()
                .len(),
            0
        );
    }
}

#[test]
fn mismatched_lengths_are_typed_errors() {
    for config in modes() {
        let err = walk::batch(
            Array1::from(vec![1.0, 2.0]).view(),
            Array1::from(vec![1i64, 2, 3]).view(),
            &config,
        )
        .unwrap_err();
        assert!(
            matches!(
                err,
                RuntimeError::BatchMismatch {
                    found: 3,
                    expected: 2,
                    ..
                }
            ),
            "{err}"
        );
        let a = Array2::<f64>::ones((2, 3));
        let b = Array2::<f64>::ones((2, 4));
        let err = dot::batch(a.view(), b.view(), &config).unwrap_err();
        assert!(
            matches!(
                err,
                RuntimeError::VectorLength {
                    found: 4,
                    expected: 3,
                    ..
                }
            ),
            "{err}"
        );
        let b = Array2::<f64>::ones((5, 3));
        let err = dot::batch(a.view(), b.view(), &config).unwrap_err();
        assert!(matches!(err, RuntimeError::BatchMismatch { .. }), "{err}");
    }
}

#[test]
fn zero_and_huge_limits() {
    let x = Array1::from(vec![0.5, 8.0]);
    let n = Array1::from(vec![3i64, 2]);
    let expected: Vec<f64> = vec![walk(0.5, 3), walk(8.0, 2)];
    for base in modes() {
        let mode = base.mode;
        let zero_steps = Config {
            step_budget: Some(0),
            ..base.clone()
        };
        let err = walk::batch(x.view(), n.view(), &zero_steps).unwrap_err();
        assert!(
            matches!(err, RuntimeError::StepBudget { budget: 0, .. }),
            "{mode:?}: {err}"
        );
        let huge = Config {
            step_budget: Some(u64::MAX),
            max_stack_depth: usize::MAX,
            memory_budget: Some(usize::MAX),
            vector_len: None,
            ..base.clone()
        };
        assert_eq!(
            walk::batch(x.view(), n.view(), &huge).unwrap().to_vec(),
            expected
        );
        let unlimited = Config {
            step_budget: None,
            memory_budget: None,
            ..base.clone()
        };
        assert_eq!(
            walk::batch(x.view(), n.view(), &unlimited)
                .unwrap()
                .to_vec(),
            expected
        );
        let zero_depth = Config {
            max_stack_depth: 0,
            ..base.clone()
        };
        let err = walk::batch(x.view(), n.view(), &zero_depth).unwrap_err();
        assert!(
            matches!(err, RuntimeError::RecursionLimit { max_depth: 0, .. }),
            "{mode:?}: {err}"
        );
        let zero_memory = Config {
            memory_budget: Some(0),
            ..base.clone()
        };
        match walk::batch(x.view(), n.view(), &zero_memory) {
            Ok(out) => assert_eq!(out.to_vec(), expected),
            Err(err) => assert!(
                matches!(err, RuntimeError::MemoryBudget { budget: 0, .. }),
                "{mode:?}: {err}"
            ),
        }
        let zero_lanes = Config {
            batch_size: Some(0),
            ..base.clone()
        };
        let none = walk::batch(
            Array1::<f64>::zeros(0).view(),
            Array1::<i64>::zeros(0).view(),
            &zero_lanes,
        )
        .unwrap();
        assert_eq!(none.len(), 0);
    }
}

#[test]
fn every_verifier_error_of_a_broken_program_is_reported() {
    // Four blocks, each jumping to a block that does not exist.
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let y = b.var("y", Type::I64);
    let f = b.function("f");
    b.signature(f, &[x], &[y]);
    let names = ["first", "second", "third", "fourth"];
    let blocks: Vec<_> = names.iter().map(|n| b.block(f, n)).collect();
    b.prim(blocks[0], &[y], &[x], KernelId::new(0), "x + 1");
    for w in blocks.windows(2) {
        b.goto(w[0], w[1]);
    }
    b.ret(blocks[3]);
    let mut program = b.finish(f).unwrap().into_program();
    for data in &mut program.blocks {
        data.term = Terminator::Goto(Block::new(99));
    }
    let kernels = vec![Kernel::map1(|x: i64| x + 1)];
    let err = Executable::new(program, kernels).unwrap_err();
    let RuntimeError::Invalid(errors) = &err else {
        panic!("expected an invalid program, got {err}");
    };
    let text = err.to_string();
    for name in names {
        assert!(
            text.contains(&format!("`{name}`")),
            "{name} missing from\n{text}"
        );
    }
    assert!(errors.0.len() >= names.len(), "{text}");
}

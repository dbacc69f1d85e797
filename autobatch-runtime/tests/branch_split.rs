//! Branches whose condition's kernel splits the lanes as it computes each condition
//! (stackless, `ScalarsOut::split`), and the branches next to them that must not: a condition
//! read again after its branch, and condition kernels that do not split (a lane-wise kernel
//! writing its conditions by position or by lane, a batched kernel), which the interpreter
//! splits afterwards as before. Each against plain Rust, the reference interpreter and the
//! full VM, bit for bit; a panicking condition names its lane and, with lane isolation,
//! fails that lane alone.

mod common;

use autobatch_runtime::ir::{DType, KernelId};
use autobatch_runtime::{
    autobatch, Column, Config, Executable, Kernel, KernelError, Mode, RuntimeError,
};
use autobatch_testkit::conformance;
use common::collatz;
use proptest::prelude::*;

/// Every branch condition is read by its branch alone: each splits.
#[autobatch]
fn fib(n: i64) -> i64 {
    if n > 1 {
        fib(n - 1) + fib(n - 2)
    } else {
        1
    }
}

/// `c` is read again after its first branch: that branch must leave it written.
#[autobatch]
fn kept(n: i64) -> i64 {
    let c = n % 3 == 0;
    let r = if c {
        kept(n - 1) * 2
    } else if n > 0 {
        kept(n - 1) + 1
    } else {
        0
    };
    if c {
        r + 5
    } else {
        r - 1
    }
}

fn plain_fib(n: i64) -> i64 {
    if n > 1 {
        plain_fib(n - 1) + plain_fib(n - 2)
    } else {
        1
    }
}

/// Every interpreter, with isolation off.
fn modes() -> [Config; 2] {
    [
        Config::with_mode(Mode::Stackless),
        Config::with_mode(Mode::FullVm),
    ]
}

/// Both modes and the reference interpreter give `expected` for the one-column input `ns`.
fn agree(exe: &Executable, ns: &[i64], expected: &[i64]) -> Result<(), TestCaseError> {
    let inputs = [Column::from_scalars(ns)];
    let reference = exe.run_reference(&inputs, &Config::default()).unwrap();
    prop_assert_eq!(reference.outputs[0].as_slice::<i64>().unwrap(), expected);
    for config in modes() {
        let run = exe.run(&inputs, &config).unwrap();
        prop_assert_eq!(
            run.outputs[0].as_slice::<i64>().unwrap(),
            expected,
            "{:?}",
            config.mode
        );
    }
    Ok(())
}

/// How the fibonacci fixture's condition `n > 1` is computed.
#[derive(Clone, Copy, Debug)]
enum Condition {
    /// `Kernel::map1`: splits the lanes where it may.
    Map,
    /// A lane-wise kernel writing its conditions into its dense column by position.
    ByPosition,
    /// A lane-wise kernel writing through `ScalarsOut::set` without asking to split.
    ByLane,
    /// A batched kernel.
    Batched,
    /// `Kernel::map1`, panicking where `n` is 9.
    PanicAtNine,
}

const CONDITIONS: [Condition; 4] = [
    Condition::Map,
    Condition::ByPosition,
    Condition::ByLane,
    Condition::Batched,
];

/// The conformance fibonacci program with its condition computed as `condition` says.
fn fib_fixture(condition: Condition) -> Executable {
    let mut sources: Vec<String> = Vec::new();
    let program = conformance::fibonacci_function_calls(
        &mut |s: &str| {
            let i = sources.iter().position(|x| x == s).unwrap_or_else(|| {
                sources.push(s.to_string());
                sources.len() - 1
            });
            KernelId::new(i)
        },
        DType::I64,
    );
    let kernels = sources
        .iter()
        .map(|s| match s.as_str() {
            "n > 1" => match condition {
                Condition::Map => Kernel::map1(|n: i64| n > 1),
                Condition::ByPosition => Kernel::lane_wise(|ins, outs| {
                    let n = ins.rows::<i64>(0)?;
                    let out = outs.slice::<bool>(0)?;
                    for (k, &lane) in ins.lanes().iter().enumerate() {
                        out[k] = n.scalar(lane) > 1;
                    }
                    Ok(())
                }),
                Condition::ByLane => Kernel::lane_wise(|ins, outs| {
                    let n = ins.rows::<i64>(0)?;
                    let mut out = outs.scalars::<bool>(0)?;
                    for (k, &lane) in ins.lanes().iter().enumerate() {
                        out.set(k, lane, n.scalar(lane) > 1);
                    }
                    Ok(())
                }),
                Condition::Batched => Kernel::batched(|ins, outs| {
                    let n = ins[0].as_slice::<i64>().ok_or(KernelError::whole("i64"))?;
                    let out = outs[0]
                        .as_slice_mut::<bool>()
                        .ok_or(KernelError::whole("bool"))?;
                    for (o, &n) in out.iter_mut().zip(n) {
                        *o = n > 1;
                    }
                    Ok(())
                }),
                Condition::PanicAtNine => Kernel::map1(|n: i64| {
                    assert!(n != 9, "nine");
                    n > 1
                }),
            },
            "n - 1" => Kernel::map1(|n: i64| n - 1),
            "n - 2" => Kernel::map1(|n: i64| n - 2),
            "x + y" => Kernel::map2(|a: i64, b: i64| a + b),
            "1" => Kernel::constant(1i64),
            other => panic!("no kernel for {other}"),
        })
        .collect();
    Executable::new(program, kernels).expect("valid program")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(24)))]

    #[test]
    fn recursion_splits_at_every_condition(ns in prop::collection::vec(0i64..16, 1..300)) {
        let expected: Vec<i64> = ns.iter().map(|&n| plain_fib(n)).collect();
        agree(fib::executable().unwrap(), &ns, &expected)?;
    }

    #[test]
    fn loop_conditions_split(ns in prop::collection::vec(1i64..5_000, 1..300)) {
        let expected: Vec<i64> = ns.iter().map(|&n| collatz(n)).collect();
        agree(collatz::executable().unwrap(), &ns, &expected)?;
    }

    #[test]
    fn a_condition_read_after_its_branch_stays_written(
        ns in prop::collection::vec(-3i64..14, 1..300)
    ) {
        let expected: Vec<i64> = ns.iter().map(|&n| kept(n)).collect();
        agree(kept::executable().unwrap(), &ns, &expected)?;
    }

    #[test]
    fn conditions_split_afterwards_when_the_kernel_does_not(
        ns in prop::collection::vec(0i64..14, 1..200)
    ) {
        let expected: Vec<i64> = ns.iter().map(|&n| plain_fib(n)).collect();
        for condition in CONDITIONS {
            agree(&fib_fixture(condition), &ns, &expected)?;
        }
    }
}

/// A condition kernel that panics names the one lane whose recursion reaches `n == 9`, in
/// every mode; with lane isolation the other lanes' results are right.
#[test]
fn a_panicking_condition_names_its_lane() {
    let exe = fib_fixture(Condition::PanicAtNine);
    let ns = [3i64, 5, 11, 2, 8, 0];
    let inputs = [Column::from_scalars(&ns)];
    for config in modes() {
        match exe.run(&inputs, &config) {
            Err(RuntimeError::Kernel { lane, message, .. }) => {
                assert_eq!(lane, 2, "{:?}", config.mode);
                assert!(message.contains("nine"), "{message}");
            }
            other => panic!("{:?}: {other:?}", config.mode),
        }
        let isolated = Config {
            lane_isolation: true,
            ..config.clone()
        };
        let run = exe.run(&inputs, &isolated).unwrap();
        let failed: Vec<usize> = run.failed.iter().map(|f| f.lane).collect();
        assert_eq!(failed, [2], "{:?}", config.mode);
        let out = run.outputs[0].as_slice::<i64>().unwrap();
        for (lane, &n) in ns.iter().enumerate().filter(|&(l, _)| l != 2) {
            assert_eq!(out[lane], plain_fib(n), "{:?} lane {lane}", config.mode);
        }
    }
}

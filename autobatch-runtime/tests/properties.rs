//! Property tests: random batches (size 1 up, lanes taking very different paths) run in both
//! modes must agree with the single-lane reference interpreter and with each other.

mod common;

use autobatch_runtime::ir::DType;
use autobatch_runtime::{Column, Config, Executable, Mode};
use autobatch_testkit::conformance as programs;
use common::{executable, i64s};
use proptest::prelude::*;
use std::sync::OnceLock;

fn check(exe: &Executable, inputs: &[Column]) -> Result<(), TestCaseError> {
    let oracle = exe
        .run_reference(inputs, &Config::default())
        .expect("oracle");
    for mode in [Mode::FullVm, Mode::Stackless] {
        let run = exe
            .run(inputs, &Config::with_mode(mode))
            .map_err(|e| TestCaseError::fail(format!("{mode:?}: {e}")))?;
        prop_assert_eq!(&run.outputs, &oracle.outputs, "{:?}", mode);
    }
    Ok(())
}

macro_rules! cached {
    ($name:ident, $make:expr) => {
        fn $name() -> &'static Executable {
            static EXE: OnceLock<Executable> = OnceLock::new();
            EXE.get_or_init(|| executable($make))
        }
    };
}

cached!(fib, |k| programs::fibonacci_function_calls(k, DType::I64));
cached!(fib_sync, programs::fibonacci_sync);
cached!(is_even, |k| programs::is_even_function_calls(
    k,
    DType::I64,
    true
));
cached!(gcd, programs::gcd);
cached!(iota, programs::iota_sum);
cached!(countdown, programs::countdown);

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(48)))]

    #[test]
    fn fibonacci_agrees(ns in prop::collection::vec(0i64..14, 1..40)) {
        check(fib(), &[i64s(&ns)])?;
        check(fib_sync(), &[i64s(&ns)])?;
    }

    #[test]
    fn mutual_recursion_agrees(ns in prop::collection::vec(0i64..60, 1..40)) {
        check(is_even(), &[i64s(&ns)])?;
    }

    #[test]
    fn tail_calls_with_swapped_arguments_agree(pairs in prop::collection::vec((1i64..500, 0i64..500), 1..64)) {
        let (a, b): (Vec<i64>, Vec<i64>) = pairs.into_iter().unzip();
        check(gcd(), &[i64s(&a), i64s(&b)])?;
    }

    #[test]
    fn loops_and_self_tail_calls_agree(ns in prop::collection::vec(-20i64..200, 1..64)) {
        check(countdown(), &[i64s(&ns)])?;
        let zeros = vec![0; ns.len()];
        check(iota(), &[i64s(&ns), i64s(&zeros)])?;
    }

    /// One lane goes deep while the rest stop at once: very different paths in one batch.
    #[test]
    fn one_deep_lane_among_shallow_ones(size in 1usize..50, deep in 0usize..50, n in 10i64..16) {
        let mut ns = vec![0i64; size];
        ns[deep % size] = n;
        check(fib(), &[i64s(&ns)])?;
    }
}

//! Random programs prove the interpreters: proptest draws a small program description
//! (several functions, direct and mutual recursion bounded by a decreasing counter, `while`
//! loops, branches, early returns and tail calls, `i64` / `f64` / `bool` scalars, `f64`
//! vectors, keys, lane-wise and batched kernels) and a batch of 1 to 64 lanes of inputs (NaN
//! and infinities included), builds it with the public builder, and runs it with every
//! combination of `Passes` in both interpreters; every lane must equal the one-lane reference
//! interpreter's result bit for bit. At small stack limits, the runs must stop with a depth
//! error where the reference does. A failing case shrinks to a small program and is saved in
//! `random_programs.proptest-regressions`, which is checked in and replayed first.
//!
//! A bug these properties find is kept as a regression: its shrunk case replays from the
//! regressions file, and the smallest ones are also written out as plain tests below
//! (`a_parameter_the_callee_shares_survives_the_call` found a wrong allocation). An ignored
//! property is a bug found and not yet fixed: remove its `#[ignore]` with the fix.
//!
//! `cargo test` runs a few thousand cases; `PROPTEST_CASES` sets how many, so a long run is
//!
//! ```sh
//! PROPTEST_CASES=1000000 cargo test --release -p autobatch-runtime --test random_programs
//! ```

mod random;

use autobatch_runtime::ir::{KernelId, ProgramBuilder, Type};
use autobatch_runtime::{Column, Config, Executable, Kernel, Mode, Passes};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use random::check::{agree, agree_at_limit, Depth};
use random::spec::{case, Sharing};

/// Cases per property: `PROPTEST_CASES`, or enough for a thorough `cargo test`.
fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

fn config(default: u32) -> ProptestConfig {
    ProptestConfig {
        cases: cases(default),
        failure_persistence: Some(Box::new(FileFailurePersistence::SourceParallel(
            "proptest-regressions",
        ))),
        ..ProptestConfig::default()
    }
}

proptest! {
    #![proptest_config(config(2000))]

    /// Every way of running a random program agrees with the reference interpreter.
    #[test]
    fn random_programs_agree_with_the_reference(
        (spec, batch) in case(vec![Sharing::Nothing, Sharing::Returns])
    ) {
        agree(&spec, &batch)?;
    }

    /// At small stack limits, every way of running a program fails with a depth error where
    /// the reference does, and succeeds with its results where it does, up to the full VM's
    /// one known gap (see `Depth::UncountedEntries` and the next property).
    #[test]
    fn depth_errors_agree_with_the_reference(
        (spec, batch) in case(vec![Sharing::Nothing, Sharing::Returns]),
        limit in 1usize..24,
    ) {
        agree_at_limit(&spec, &batch, limit, Depth::UncountedEntries)?;
    }

    /// The same, exactly.
    #[test]
    #[ignore = "bug: the full VM does not count a recursive call whose entry block simplification threaded away (issue 15)"]
    fn depth_errors_agree_with_the_reference_at_the_limit(
        (spec, batch) in case(vec![Sharing::Nothing, Sharing::Returns]),
        limit in 1usize..24,
    ) {
        agree_at_limit(&spec, &batch, limit, Depth::Exact)?;
    }

    /// The same with parameters shared between functions (see
    /// `a_parameter_the_callee_shares_survives_the_call` for the smallest case that failed
    /// before the allocation counted the callee's parameters as written by the call).
    #[test]
    fn random_programs_sharing_parameters_agree_with_the_reference(
        (spec, batch) in case(vec![Sharing::Everything])
    ) {
        agree(&spec, &batch)?;
    }
}

/// Found by the random programs (shrunk, then written out by hand): `main(n)` calls `f(n - 1)`
/// whose parameter is the same variable `n`, and reads `n` after the call. A call runs its
/// callee in a fresh environment (the reference interpreter), so `main` still sees its own
/// `n`; but the allocation left `n` a register, because the callee's parameters count as
/// writes of the caller and not of the callee, so "live across a call to a function that
/// writes it" never held for them. Both interpreters then returned `n - 1`; now `n` is FULL.
#[test]
fn a_parameter_the_callee_shares_survives_the_call() {
    let mut b = ProgramBuilder::new();
    let [n, m, r, out] = ["n", "m", "r", "out"].map(|name| b.var(name, Type::I64));
    let f = b.function("f");
    b.signature(f, &[n], &[r]);
    let fe = b.block(f, "f.entry");
    b.assign(fe, &[r], &[n]);
    b.ret(fe);
    let main = b.function("main");
    b.signature(main, &[n], &[out]);
    let me = b.block(main, "main.entry");
    b.prim(me, &[m], &[n], KernelId::new(0), "n - 1");
    b.call(me, f, &[m], &[r]);
    b.assign(me, &[out], &[n]);
    b.ret(me);
    let program = b.finish(main).expect("a valid program");
    let kernels = vec![Kernel::map1(|x: i64| x.wrapping_sub(1))];
    let exe = Executable::with_passes(program, kernels, &Passes::none()).expect("prepares");
    let inputs = [Column::from_scalars(&[5i64, 7])];
    let reference = exe.run_reference(&inputs, &Config::default()).unwrap();
    assert_eq!(reference.outputs, [Column::from_scalars(&[5i64, 7])]);
    for mode in [Mode::FullVm, Mode::Stackless] {
        let run = exe.run(&inputs, &Config::with_mode(mode)).unwrap();
        assert_eq!(run.outputs, reference.outputs, "{mode:?}");
    }
}

//! Random programs prove the interpreters: proptest draws a small program description
//! (several functions, direct and mutual recursion bounded by a decreasing counter, `while`
//! loops, branches, early returns and tail calls, `i64` / `f64` / `bool` scalars, `f64`
//! vectors, keys, lane-wise and batched kernels) and a batch of 1 to 64 lanes of inputs (NaN
//! and infinities included), builds it with the public builder, and runs it with every
//! combination of `Passes` in both interpreters; every lane must equal the one-lane reference
//! interpreter's result bit for bit. At small stack limits (and, for programs that recurse
//! deep, at the deepest lane's depth and one frame below it), the runs must stop with a depth
//! error where the reference does. Cut into shards of random size on one to three threads,
//! with lane isolation or without, in any order of the full VM's blocks (`Schedule`), every
//! lane must still be the reference's (with isolation,
//! the reference of that lane alone: its results, or a depth error failing that lane only);
//! half of those programs recurse as deep as each lane's counter lets them, so that a stack
//! limit below the deepest lane fails some lanes and not others.
//! A failing case shrinks to a small program and is saved in
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
use autobatch_runtime::{Column, Config, Executable, Kernel, Mode, Passes, Schedule};
use proptest::prelude::*;
use proptest::test_runner::FileFailurePersistence;
use random::check::{agree, agree_at_limit, agree_in_shards, Limit, LIMIT};
use random::spec::{case, recursive_case, Sharing};

/// `default` cases per property (enough for a thorough `cargo test`; `PROPTEST_CASES` sets
/// another count), each failure kept beside this file.
fn config(default: u32) -> ProptestConfig {
    ProptestConfig {
        cases: autobatch_testkit::cases(default),
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
    /// the reference does, and succeeds with its results where it does. The cases saved in
    /// `random_programs.proptest-regressions` with a `limit` found the full VM not counting a
    /// tail call into a recursive function whose entry block simplification had merged into
    /// the calling block (or jumped past, when empty); it now keeps those blocks.
    #[test]
    fn depth_errors_agree_with_the_reference_at_the_limit(
        (spec, batch) in case(vec![Sharing::Nothing, Sharing::Returns]),
        limit in 1usize..24,
    ) {
        agree_at_limit(&spec, &batch, Limit::Fixed(limit))?;
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

proptest! {
    // Fewer cases: deep recursion makes each cost more, and the second finds the deepest
    // lane's depth by bisection on the reference.
    #![proptest_config(config(120))]

    /// Every way of running a program that recurses as deep as each lane's counter lets it
    /// (up to sixty frames, where the programs above mostly make a few), its functions sharing
    /// no variables, their returns, or their parameters too, agrees with the reference: saved
    /// values and return addresses outlive many growths of their stacks.
    #[test]
    fn deep_recursion_agrees_with_the_reference(
        (spec, batch) in recursive_case(vec![Sharing::Nothing, Sharing::Returns, Sharing::Everything])
    ) {
        agree(&spec, &batch)?;
    }

    /// Depth errors agree with the reference's for these programs too (of the programs at
    /// large, one in twenty reaches its limit), at the edge: one frame below the deepest
    /// lane's depth, where the run stops, or at it, where it just completes; or at a small
    /// limit.
    #[test]
    fn depth_errors_in_deep_recursion_agree_with_the_reference_at_the_limit(
        (spec, batch) in recursive_case(vec![Sharing::Nothing, Sharing::Returns]),
        limit in prop_oneof![
            2 => Just(Limit::BelowDeepest),
            2 => Just(Limit::Deepest),
            1 => (1usize..24).prop_map(Limit::Fixed),
        ],
    ) {
        agree_at_limit(&spec, &batch, limit)?;
    }
}

proptest! {
    // Fewer cases: each runs the program eight ways and the reference once per lane.
    #![proptest_config(config(300))]

    /// Batch invariance: cut into shards of any size and run on one to three threads, the
    /// full VM taking blocks in any [`Schedule`], every lane of every program is still the
    /// reference's, and a run stops at the stack limit
    /// where the reference does; with lane isolation, exactly the lanes that go too deep by
    /// themselves fail and every other lane completes with its results (`shards.rs` and
    /// `isolation.rs` check this on fixed programs; here on programs with calls, loops,
    /// vectors, keys and batched kernels), mostly at the edge: one below the deepest lane's
    /// depth, which that lane alone exceeds, or at it, where every lane just completes. Half
    /// the programs recurse as deep as each lane's counter lets them, so that lanes reach
    /// different depths and the edge fails some and not others.
    #[test]
    fn random_programs_agree_with_the_reference_in_shards_on_threads(
        (spec, batch) in prop_oneof![
            case(vec![Sharing::Nothing, Sharing::Returns]).boxed(),
            recursive_case(vec![Sharing::Nothing, Sharing::Returns]).boxed(),
        ],
        sharding in (1usize..=3, 1usize..=64),
        limit in prop_oneof![
            2 => Just(Limit::BelowDeepest),
            1 => Just(Limit::Deepest),
            1 => (1usize..24).prop_map(Limit::Fixed),
            1 => Just(Limit::Fixed(LIMIT)),
        ],
        schedule in prop_oneof![
            Just(Schedule::Auto),
            Just(Schedule::LowestBlock),
            Just(Schedule::MostLanes),
        ],
    ) {
        agree_in_shards(&spec, &batch, sharding, limit, schedule)?;
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

/// Found by the random programs (shrunk, then written out by hand): `f(n)` tail-calls
/// `g(n - 1)`, which tail-calls `f`. A tail call lowers to a plain jump to the callee's entry
/// block, and `g`'s entry, reached by that one jump only, used to be merged into `f`'s calling
/// block by the lowered program's simplification, so the full VM never counted `g`'s frames
/// and completed runs the reference stops at the depth limit. `f(5)` makes 11 counted calls
/// (`f` six times, `g` five times): every way runs it at limit 11 and stops at limit 10 with
/// the reference's error.
#[test]
fn a_tail_call_into_a_recursive_function_counts_against_the_depth_limit() {
    let mut b = ProgramBuilder::new();
    let [n, k, m, r, x, out] = ["n", "k", "m", "r", "x", "out"].map(|name| b.var(name, Type::I64));
    let c = b.var("c", Type::BOOL);
    let f = b.function("f");
    let g = b.function("g");
    let main = b.function("main");
    b.signature(f, &[n], &[r]);
    b.signature(g, &[k], &[r]);
    b.signature(main, &[x], &[out]);
    let f_entry = b.block(f, "f.entry");
    let f_done = b.block(f, "f.done");
    let f_recur = b.block(f, "f.recur");
    b.prim(f_entry, &[c], &[n], KernelId::new(0), "n <= 0");
    b.branch(f_entry, c, f_done, f_recur);
    b.assign(f_done, &[r], &[n]);
    b.ret(f_done);
    b.prim(f_recur, &[m], &[n], KernelId::new(1), "n - 1");
    b.call(f_recur, g, &[m], &[r]);
    b.ret(f_recur);
    let g_entry = b.block(g, "g.entry");
    b.call(g_entry, f, &[k], &[r]);
    b.ret(g_entry);
    let main_entry = b.block(main, "main.entry");
    b.call(main_entry, f, &[x], &[out]);
    b.ret(main_entry);
    let program = b.finish(main).expect("a valid program");
    let kernels = vec![
        Kernel::map1(|n: i64| n <= 0),
        Kernel::map1(|n: i64| n.wrapping_sub(1)),
    ];
    let inputs = [Column::from_scalars(&[5i64])];
    for passes in [Passes::default(), Passes::none()] {
        let exe =
            Executable::with_passes(program.clone(), kernels.clone(), &passes).expect("prepares");
        for limit in [10, 11] {
            let config = |mode| Config {
                max_stack_depth: limit,
                ..Config::with_mode(mode)
            };
            let reference = exe.run_reference(&inputs, &config(Mode::FullVm));
            assert_eq!(reference.is_ok(), limit == 11, "{reference:?}");
            for mode in [Mode::FullVm, Mode::Stackless] {
                let run = exe.run(&inputs, &config(mode));
                let (got, want) = (run.as_ref().map(|r| &r.outputs), reference.as_ref());
                match (got, want) {
                    (Ok(got), Ok(want)) => assert_eq!(got, &want.outputs),
                    (Err(got), Err(want)) => assert_eq!(got, want),
                    _ => panic!("{mode:?}, {passes:?}, limit {limit}: {run:?}, the reference: {reference:?}"),
                }
            }
        }
    }
}

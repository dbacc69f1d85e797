//! The full VM passes lanes straight through blocks that do nothing in it (pops of variables
//! without a stack, then a goto or a return): a loop costs one step per iteration, not two,
//! and a lane leaving it halts without another step; a block whose
//! pop does something still runs, and a cycle of empty blocks still ends at the step budget.
//! (The loop's results over many lanes, in both modes, are checked in `branch_split.rs`.)

mod common;

use autobatch_runtime::ir::{ProgramBuilder, Type};
use autobatch_runtime::ndarray::Array1;
use autobatch_runtime::{autobatch, Column, Config, Executable, Mode, RuntimeError};
use common::collatz;

/// `n` is kept across the call (a stacked variable) and dies where the loop ends: the loop's
/// exit edge pops it, which must run.
#[autobatch]
fn stacked_exit(n: i64) -> i64 {
    if n <= 0 {
        return 1;
    }
    let m = stacked_exit(n - 1) * 3 + n;
    let mut k = m;
    while k > n {
        k -= n + 1;
    }
    k * 7 + 1
}

fn vm() -> Config {
    Config::with_mode(Mode::FullVm)
}

#[test]
fn a_loop_costs_one_step_per_iteration() {
    let n = 27;
    let iterations = collatz(n);
    assert_eq!(iterations, 111);
    let (out, stats) = collatz::batch_with_stats(Array1::from_vec(vec![n]).view(), &vm()).unwrap();
    assert_eq!(out[0], iterations);
    // The entry and the loop body once per iteration: no edge block runs, neither the back
    // edge (it passes to the body) nor the exit edges (they pass to the halt).
    assert_eq!(stats.steps, iterations as u64 + 1, "{:#?}", stats.blocks);
    let ran: Vec<&str> = stats
        .blocks
        .iter()
        .filter(|b| b.runs > 0)
        .map(|b| b.name.as_str())
        .collect();
    assert!(ran.iter().all(|name| !name.contains("_to_")), "{ran:?}");
}

#[test]
fn an_edge_that_pops_a_stacked_variable_still_runs() {
    let ns: Vec<i64> = (0..40).map(|i| i % 13).collect();
    let expected: Vec<i64> = ns.iter().map(|&n| stacked_exit(n)).collect();
    for mode in [Mode::FullVm, Mode::Stackless] {
        let config = Config::with_mode(mode);
        let (out, stats) =
            stacked_exit::batch_with_stats(Array1::from_vec(ns.clone()).view(), &config).unwrap();
        assert_eq!(out.to_vec(), expected, "{mode:?}");
        if mode == Mode::FullVm {
            // The loop's exit edges pop `n`: they run, and the back edge does not.
            let runs = |name: &str| stats.blocks.iter().find(|b| b.name == name).unwrap().runs;
            let exits = runs("stacked_exit.body_to_stacked_exit.after")
                + runs("stacked_exit.join_to_stacked_exit.after");
            assert!(exits > 0);
            assert_eq!(runs("stacked_exit.body_to_stacked_exit.body"), 0);
        }
    }
}

/// `main`: `entry: goto a; a: goto b; b: goto a` — nothing to do, forever.
fn empty_cycle() -> Executable {
    let mut b = ProgramBuilder::new();
    let x = b.var("x", Type::I64);
    let main = b.function("main");
    b.signature(main, &[x], &[x]);
    let entry = b.block(main, "entry");
    let (first, second) = (b.block(main, "a"), b.block(main, "b"));
    b.goto(entry, first);
    b.goto(first, second);
    b.goto(second, first);
    let program = b.finish_lowered(main).unwrap();
    Executable::with_allocations(program, Vec::new()).unwrap()
}

#[test]
fn a_cycle_of_empty_blocks_ends_at_the_step_budget() {
    let config = Config {
        step_budget: Some(50),
        ..vm()
    };
    let err = empty_cycle()
        .run(&[Column::from_scalars(&[1i64, 2])], &config)
        .unwrap_err();
    assert!(
        matches!(
            err,
            RuntimeError::StepBudget {
                budget: 50,
                running: 2,
                ..
            }
        ),
        "{err}"
    );
}

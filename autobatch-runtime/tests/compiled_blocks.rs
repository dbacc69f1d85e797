//! The full VM's compiled blocks (code `#[autobatch]` generates for a function that calls
//! nothing but itself) against the same blocks interpreted: the same outputs, statistics and
//! errors, and compiled blocks actually run where the program is the one they were made for.

use autobatch_runtime::ndarray::aview1;
use autobatch_runtime::{autobatch, Config, Key, Mode, RuntimeError, Stats};
use autobatch_testkit::cases;
use proptest::prelude::*;

#[autobatch]
fn fib(n: i64) -> i64 {
    if n > 1 {
        fib(n - 1) + fib(n - 2)
    } else {
        1
    }
}

#[autobatch]
fn ackermann(m: i64, n: i64) -> i64 {
    if m == 0 {
        n + 1
    } else if n == 0 {
        ackermann(m - 1, 1)
    } else {
        ackermann(m - 1, ackermann(m, n - 1))
    }
}

/// A loop and no call: every block compiled, no stack.
#[autobatch]
fn collatz(n: u64) -> (u32, bool) {
    let mut n = n;
    let mut steps: u32 = 0;
    while n > 1 {
        n = if n.is_multiple_of(2) {
            n / 2
        } else {
            3 * n + 1
        };
        steps += 1;
    }
    (steps, steps > 10)
}

/// Mixed scalar types through a recursion that keeps several of them across its call.
#[autobatch]
fn mixed(n: i32, x: f64, flag: bool) -> f64 {
    if n <= 0 {
        if flag {
            x
        } else {
            -x
        }
    } else {
        let half = x * 0.5;
        let inner = mixed(n - 1, half + 1.0, !flag);
        inner + half * (n as f64)
    }
}

/// Random draws (keys are not compiled) between compiled blocks, the draws' sum kept across
/// the call: interpreted blocks write the variables compiled blocks read.
#[autobatch]
fn noisy_sum(n: i64, key: Key) -> f64 {
    if n <= 0 {
        0.0
    } else {
        let (u, key) = key.uniform();
        let scaled = u * (n as f64);
        scaled + noisy_sum(n - 1, key)
    }
}

/// Divides by a lane's own value: panics in the lanes where it reaches zero.
#[autobatch]
fn divide_down(n: i64) -> i64 {
    if n > 3 {
        divide_down(n - 1) + 100 / (n - 4)
    } else {
        n
    }
}

#[autobatch]
fn helper(n: i64) -> i64 {
    n * 3
}

/// Calls another function: the linked program is not the one the macro lowered alone.
#[autobatch]
fn calls_helper(n: i64) -> i64 {
    if n > 0 {
        calls_helper(n - 1) + helper(n)
    } else {
        0
    }
}

/// The full VM with compiled blocks on or off.
fn vm(compiled: bool) -> Config {
    Config {
        compiled_blocks: compiled,
        threads: 1,
        ..Config::with_mode(Mode::FullVm)
    }
}

/// `stats` without the count of compiled steps (the one figure that differs).
fn interpreted_view(stats: &Stats) -> Stats {
    Stats {
        compiled_steps: 0,
        ..stats.clone()
    }
}

/// Runs `run` with compiled blocks on and off: the same outputs and statistics, and compiled
/// blocks running where `expect_compiled` (none where not).
fn agree<T: PartialEq + std::fmt::Debug>(
    run: impl Fn(&Config) -> Result<(T, Stats), RuntimeError>,
    expect_compiled: bool,
) -> T {
    let (on, on_stats) = run(&vm(true)).expect("compiled run");
    let (off, off_stats) = run(&vm(false)).expect("interpreted run");
    assert_eq!(on, off, "compiled and interpreted outputs");
    assert_eq!(interpreted_view(&on_stats), off_stats, "statistics");
    assert_eq!(off_stats.compiled_steps, 0);
    match expect_compiled {
        true => assert!(on_stats.compiled_steps > 0, "no block ran compiled"),
        false => assert_eq!(on_stats.compiled_steps, 0, "a block ran compiled"),
    }
    on
}

#[test]
fn recursion_runs_compiled_with_the_interpreted_results() {
    let ns: Vec<i64> = (0..300).map(|i| i % 17).collect();
    let got = agree(|c| fib::batch_with_stats(aview1(&ns), c), true);
    assert_eq!(got.to_vec(), ns.iter().map(|&n| fib(n)).collect::<Vec<_>>());
    let (ms, ns): (Vec<i64>, Vec<i64>) = (0..120).map(|i| (i % 3, i % 5)).unzip();
    let got = agree(
        |c| ackermann::batch_with_stats(aview1(&ms), aview1(&ns), c),
        true,
    );
    let want: Vec<i64> = ms.iter().zip(&ns).map(|(&m, &n)| ackermann(m, n)).collect();
    assert_eq!(got.to_vec(), want);
}

#[test]
fn loops_tuples_and_mixed_types_run_compiled() {
    let ns: Vec<u64> = (1..400).collect();
    let (steps, long) = agree(|c| collatz::batch_with_stats(aview1(&ns), c), true);
    for (k, &n) in ns.iter().enumerate() {
        assert_eq!((steps[k], long[k]), collatz(n));
    }
    let n: Vec<i32> = (0..50).map(|i| i % 7 - 1).collect();
    let x: Vec<f64> = (0..50).map(|i| i as f64 * 0.37 - 4.0).collect();
    let flag: Vec<bool> = (0..50).map(|i| i % 3 == 0).collect();
    let got = agree(
        |c| mixed::batch_with_stats(aview1(&n), aview1(&x), aview1(&flag), c),
        true,
    );
    for k in 0..50 {
        assert_eq!(got[k].to_bits(), mixed(n[k], x[k], flag[k]).to_bits());
    }
}

#[test]
fn compiled_and_interpreted_blocks_share_a_run() {
    let ns: Vec<i64> = (0..200).map(|i| i % 9).collect();
    let keys: Vec<Key> = (0..200).map(|i| Key::new(i as u64 * 7 + 1)).collect();
    let got = agree(
        |c| noisy_sum::batch_with_stats(aview1(&ns), aview1(&keys), c),
        true,
    );
    for k in 0..200 {
        assert_eq!(got[k].to_bits(), noisy_sum(ns[k], keys[k]).to_bits());
    }
}

#[test]
fn a_program_with_other_functions_or_timed_kernels_is_interpreted() {
    let ns: Vec<i64> = (0..40).collect();
    let got = agree(|c| calls_helper::batch_with_stats(aview1(&ns), c), false);
    assert_eq!(got[5], calls_helper(5));
    let timed = Config {
        time_kernels: true,
        ..vm(true)
    };
    let small: Vec<i64> = ns.iter().map(|n| n % 12).collect();
    let (_, stats) = fib::batch_with_stats(aview1(&small), &timed).unwrap();
    assert_eq!(stats.compiled_steps, 0);
}

/// The error of a run with compiled blocks on, and with them off.
fn both<T>(run: impl Fn(&Config) -> Result<T, RuntimeError>, config: Config) -> [String; 2] {
    [true, false].map(|compiled| {
        let c = Config {
            compiled_blocks: compiled,
            ..config.clone()
        };
        match run(&c) {
            Ok(_) => "no error".to_string(),
            Err(e) => e.to_string(),
        }
    })
}

#[test]
fn errors_are_the_interpreted_ones() {
    // One lane recursing past the depth limit.
    let deep: Vec<i64> = vec![3, 4, 40, 2];
    let shallow = Config {
        max_stack_depth: 20,
        ..vm(true)
    };
    let [on, off] = both(|c| fib::batch(aview1(&deep), c), shallow.clone());
    assert_eq!(on, off);
    assert!(on.contains("lane 2"), "{on}");
    // One lane whose kernel panics (a division by zero).
    let ns: Vec<i64> = vec![2, 3, 9, 1];
    let [on, off] = both(|c| divide_down::batch(aview1(&ns), c), vm(true));
    assert_eq!(on, off);
    assert!(on.contains("lane 2"), "{on}");
    // The same on the pool's threads, a shard per lane (the panic unwinds out of a run on a
    // worker thread and is caught there).
    let pooled = Config {
        threads: 2,
        shard_size: Some(1),
        ..vm(true)
    };
    assert_eq!(
        both(|c| divide_down::batch(aview1(&ns), c), pooled),
        [on.clone(), on.clone()]
    );
    // Under lane isolation the failing lanes and the others' results are the same.
    let isolated = |compiled| {
        let c = Config {
            lane_isolation: true,
            ..vm(compiled)
        };
        let run = divide_down::batch_isolated(aview1(&ns), &c).unwrap();
        (run.outputs.to_vec(), run.failed.clone())
    };
    assert_eq!(isolated(true), isolated(false));
    assert_eq!(isolated(true).1.len(), 1);
    // Saved rows past a small memory budget: the same error and, under lane isolation, the
    // same lanes failed (the growth is blamed on the lane the VM blames).
    let ns: Vec<i64> = (0..24).map(|i| (i * 7) % 23).collect();
    for budget in [2_000, 6_000, 20_000] {
        let tight = Config {
            memory_budget: Some(budget),
            ..vm(true)
        };
        let [on, off] = both(|c| fib::batch(aview1(&ns), c), tight.clone());
        assert_eq!(on, off, "budget {budget}");
        assert_eq!(on.contains("memory budget"), budget < 20_000, "{on}");
        let isolated = |compiled| {
            let c = Config {
                lane_isolation: true,
                compiled_blocks: compiled,
                ..tight.clone()
            };
            let run = fib::batch_isolated(aview1(&ns), &c).unwrap();
            (run.outputs.to_vec(), run.failed.clone())
        };
        assert_eq!(isolated(true), isolated(false), "budget {budget}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases(24)))]

    /// Random batches (and shard sizes): compiled, interpreted, stackless and the scalar
    /// function agree lane for lane.
    #[test]
    fn random_batches_agree_in_every_mode(
        ns in prop::collection::vec(0i64..18, 1..200),
        shard in prop::option::of(1usize..64),
    ) {
        let config = |compiled| Config { shard_size: shard, ..vm(compiled) };
        let on = fib::batch(aview1(&ns), &config(true)).unwrap();
        let off = fib::batch(aview1(&ns), &config(false)).unwrap();
        let stackless = fib::batch(aview1(&ns), &Config::default()).unwrap();
        let scalar: Vec<i64> = ns.iter().map(|&n| fib(n)).collect();
        prop_assert_eq!(on.to_vec(), scalar.clone());
        prop_assert_eq!(off.to_vec(), scalar.clone());
        prop_assert_eq!(stackless.to_vec(), scalar);
    }
}

#[test]
fn default_shards_are_smaller_where_blocks_run_compiled() {
    // The default shard size counts more bytes of saved frames per lane where the full VM
    // runs compiled blocks (their lanes and steps cost less, so the stacks' traffic rules):
    // more shards for the same batch, and the same results.
    let ns: Vec<i64> = (0..4_000).map(|i| i % 9).collect();
    let shards = |compiled| {
        let (out, stats) = fib::batch_with_stats(aview1(&ns), &vm(compiled)).unwrap();
        (out, stats.shards)
    };
    let (on, on_shards) = shards(true);
    let (off, off_shards) = shards(false);
    assert_eq!(on, off);
    assert!(off_shards > 1, "{off_shards}");
    assert!(on_shards > off_shards, "{on_shards} against {off_shards}");
}

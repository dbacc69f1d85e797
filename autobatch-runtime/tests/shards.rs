//! Shards and threads: a lane's results are bit-identical whatever `Config::threads` and
//! `Config::shard_size`, in both modes; errors, failed lanes and statistics speak of the batch
//! as given; one thread starts no thread.

use autobatch_runtime::ndarray::{Array1, Array2};
use autobatch_runtime::{autobatch, primitive, Config, Mode, RuntimeError, Vector};
use proptest::prelude::*;

/// Recursion whose depth differs from lane to lane.
#[autobatch]
fn fib(n: i64) -> i64 {
    if n > 1 {
        fib(n - 1) + fib(n - 2)
    } else {
        1
    }
}

/// A loop whose trip count differs from lane to lane.
#[autobatch]
fn collatz(n: i64) -> i64 {
    let mut n = n;
    let mut steps = 0;
    while n > 1 {
        if n % 2 == 0 {
            n /= 2;
        } else {
            n = 3 * n + 1;
        }
        steps += 1;
    }
    steps
}

/// Vectors (arena rows) carried through a loop.
#[autobatch]
fn grow(q: Vector, n: i64) -> Vector {
    let mut q = q;
    let mut i = 0;
    while i < n {
        let half: f64 = 0.5;
        q = &q + &(half * &q);
        i += 1;
    }
    q
}

/// Divides by `d` after `n` recursions (a kernel panic when `d` is 0).
#[autobatch]
fn risky(n: i64, d: i64) -> i64 {
    if n <= 0 {
        100 / d
    } else {
        risky(n - 1, d) + n
    }
}

/// Whether the kernel runs on one of the runtime's worker threads.
#[primitive]
fn on_worker(x: i64) -> bool {
    let named = std::thread::current().name().map(str::to_string);
    named.is_some_and(|n| n.starts_with("autobatch-")) && x >= 0
}

#[autobatch]
fn where_run(x: i64) -> bool {
    on_worker(x)
}

fn config(mode: Mode, threads: usize, shard_size: Option<usize>) -> Config {
    Config {
        threads,
        shard_size,
        ..Config::with_mode(mode)
    }
}

fn bits(v: &Array2<f64>) -> Vec<u64> {
    v.iter().map(|x| x.to_bits()).collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(24)))]

    #[test]
    fn results_do_not_depend_on_threads_or_shard_size(
        ns in proptest::collection::vec(0i64..16, 1..80),
        threads in 1usize..=4,
        shard in 1usize..80,
        stackless in any::<bool>(),
    ) {
        let mode = if stackless { Mode::Stackless } else { Mode::FullVm };
        let shard = shard.min(ns.len());
        let sharded = config(mode, threads, Some(shard));
        let whole = config(mode, 1, None);
        let n = Array1::from(ns.clone());

        let got = fib::batch(n.view(), &sharded).unwrap();
        prop_assert_eq!(&got, &fib::batch(n.view(), &whole).unwrap());
        prop_assert_eq!(got.to_vec(), ns.iter().map(|&n| fib(n)).collect::<Vec<_>>());

        let starts = n.mapv(|n| n * 7 + 1);
        let got = collatz::batch(starts.view(), &sharded).unwrap();
        prop_assert_eq!(got.to_vec(), starts.iter().map(|&n| collatz(n)).collect::<Vec<_>>());

        let q = Array2::from_shape_fn((ns.len(), 3), |(i, j)| (i * 3 + j) as f64 * 0.1 - 1.0);
        let got = grow::batch(q.view(), n.view(), &sharded).unwrap();
        let want = grow::batch(q.view(), n.view(), &whole).unwrap();
        prop_assert_eq!(bits(&got), bits(&want));
        for (lane, &steps) in ns.iter().enumerate() {
            let scalar = grow(Vector::from(q.row(lane).to_vec()), steps);
            prop_assert_eq!(scalar.as_slice().to_vec(), got.row(lane).to_vec());
        }
    }
}

#[test]
fn merged_statistics_count_every_shard() {
    let n = Array1::from_iter((0..100).map(|i| i % 12));
    for mode in [Mode::FullVm, Mode::Stackless] {
        let (_, whole) = fib::batch_with_stats(n.view(), &config(mode, 1, None)).unwrap();
        let (_, sharded) = fib::batch_with_stats(n.view(), &config(mode, 2, Some(30))).unwrap();
        assert_eq!(sharded.batch_size, 100);
        // Each shard runs at least as many steps as it needs alone; together, more than one
        // batch of all lanes needs, and every lane-block execution is counted once.
        assert!(sharded.steps > whole.steps, "{mode:?}");
        let lanes = |s: &autobatch_runtime::Stats| s.blocks.iter().map(|b| b.lanes).sum::<u64>();
        assert_eq!(lanes(&sharded), lanes(&whole), "{mode:?}");
        let u = sharded.utilisation();
        assert!(u > 0.0 && u <= 1.0, "{mode:?}: {u}");
    }
}

#[test]
fn errors_name_the_lane_in_the_batch_given() {
    let mut d = vec![1i64; 100];
    d[37] = 0;
    d[81] = 0;
    let (n, d) = (Array1::from_elem(100, 3i64), Array1::from(d));
    for mode in [Mode::FullVm, Mode::Stackless] {
        for threads in [1, 2] {
            // The lowest shard that fails is reported.
            let err =
                risky::batch(n.view(), d.view(), &config(mode, threads, Some(10))).unwrap_err();
            assert!(
                matches!(err, RuntimeError::Kernel { lane: 37, .. }),
                "{mode:?}, {threads} threads: {err}"
            );
            let isolated = Config {
                lane_isolation: true,
                ..config(mode, threads, Some(10))
            };
            let run = risky::batch_isolated(n.view(), d.view(), &isolated).unwrap();
            let failed: Vec<usize> = run.failed.iter().map(|f| f.lane).collect();
            assert_eq!(failed, [37, 81], "{mode:?}");
            for f in &run.failed {
                assert_eq!(f.error.lanes(), [f.lane], "{mode:?}: {}", f.error);
            }
            assert_eq!(run.outputs[36], 106);
            assert_eq!(run.outputs[37], 0);
        }
    }
}

#[test]
fn the_step_budget_names_the_running_lanes_of_the_batch() {
    let mut n = vec![1i64; 50];
    n[44] = 837_799;
    let n = Array1::from(n);
    for mode in [Mode::FullVm, Mode::Stackless] {
        let config = Config {
            step_budget: Some(100),
            ..config(mode, 2, Some(8))
        };
        let err = collatz::batch(n.view(), &config).unwrap_err();
        // Lane 44 is numbered in the batch, not in its shard (lanes 40 to 47); which of its
        // shard's other lanes still wait to finish depends on the interpreter's block order.
        assert!(
            matches!(&err, RuntimeError::StepBudget { lanes, .. }
                if lanes.contains(&44) && lanes.iter().all(|l| (40..48).contains(l))),
            "{mode:?}: {err}"
        );
    }
}

#[test]
fn one_thread_starts_no_thread_and_more_run_on_workers() {
    let x = Array1::from_iter(0..40i64);
    for mode in [Mode::FullVm, Mode::Stackless] {
        let here = where_run::batch(x.view(), &config(mode, 1, Some(1))).unwrap();
        assert!(here.iter().all(|w| !w), "{mode:?}: {here}");
        let there = where_run::batch(x.view(), &config(mode, 2, Some(1))).unwrap();
        assert!(there.iter().all(|&w| w), "{mode:?}: {there}");
        // A batch of one shard stays on the calling thread whatever the thread count.
        let small = where_run::batch(x.view(), &config(mode, 4, Some(40))).unwrap();
        assert!(small.iter().all(|w| !w), "{mode:?}: {small}");
    }
}

#[test]
fn by_default_heavy_lanes_use_every_thread_and_small_cheap_batches_stay_one_shard() {
    for mode in [Mode::FullVm, Mode::Stackless] {
        // 40 lanes of a few integers on two threads: one shard, so the statistics are those
        // of the batch run whole. (The full VM counts each lane's saved frames, 512 bytes or more
        // per stacked variable: 100 recursing lanes of `fib` are heavy enough for two shards.)
        let n = Array1::from_iter((0..40).map(|i| i % 12));
        let (_, two) = fib::batch_with_stats(n.view(), &config(mode, 2, None)).unwrap();
        let (_, one) = fib::batch_with_stats(n.view(), &config(mode, 1, None)).unwrap();
        assert_eq!(two.shards, 1, "{mode:?}");
        assert_eq!(
            (two.steps, two.blocks.clone()),
            (one.steps, one.blocks),
            "{mode:?}"
        );
        let hundred = Array1::from_iter((0..100).map(|i| i % 12));
        let (_, two) = fib::batch_with_stats(hundred.view(), &config(mode, 2, None)).unwrap();
        let want = if mode == Mode::FullVm { 2 } else { 1 };
        assert_eq!(two.shards, want, "{mode:?}: 100 lanes");
        // 8 lanes of 2,000-element vectors (tens of KB each) on two threads: a shard per
        // thread, with the same bits as one shard.
        let q = Array2::from_shape_fn((8, 2000), |(i, j)| (i * 7 + j % 13) as f64 * 0.01);
        let steps = Array1::from_iter((0..8).map(|i| i % 3));
        let (got, two) =
            grow::batch_with_stats(q.view(), steps.view(), &config(mode, 2, None)).unwrap();
        let (want, one) =
            grow::batch_with_stats(q.view(), steps.view(), &config(mode, 1, None)).unwrap();
        assert_eq!((two.shards, one.shards), (2, 1), "{mode:?}");
        assert_eq!(bits(&got), bits(&want), "{mode:?}");
        // Explicit shards are counted too.
        let (_, cut) = fib::batch_with_stats(n.view(), &config(mode, 2, Some(10))).unwrap();
        assert_eq!(cut.shards, 4, "{mode:?}");
    }
}

#[test]
fn default_shards_deal_out_lanes_and_still_give_one_shards_results() {
    // 2,000 cheap lanes on two threads: two default shards, each dealt runs of lanes from the
    // whole batch (Collatz's work grows with the start: consecutive halves would be uneven).
    let starts = Array1::from_iter(1..=2_000i64);
    let mut d = vec![1i64; 2_000];
    d[1_000] = 0;
    let (n, d) = (Array1::from_elem(2_000, 2i64), Array1::from(d));
    for mode in [Mode::FullVm, Mode::Stackless] {
        let (got, two) = collatz::batch_with_stats(starts.view(), &config(mode, 2, None)).unwrap();
        // One shard of the whole batch (by default the full VM cuts 2,000 Collatz lanes in two
        // on one thread as well: a loop's step walks every lane's values).
        let whole = config(mode, 1, Some(2_000));
        let (want, one) = collatz::batch_with_stats(starts.view(), &whole).unwrap();
        assert_eq!((two.shards, one.shards), (2, 1), "{mode:?}");
        assert_eq!(got, want, "{mode:?}");
        let (alone, default) =
            collatz::batch_with_stats(starts.view(), &config(mode, 1, None)).unwrap();
        let cut = if mode == Mode::FullVm { 2 } else { 1 };
        assert_eq!(default.shards, cut, "{mode:?}: one thread");
        assert_eq!(alone, want, "{mode:?}");
        assert_eq!(
            got.to_vec(),
            starts.iter().map(|&n| collatz(n)).collect::<Vec<_>>()
        );
        // Errors and failed lanes still name the lane of the batch.
        let err = risky::batch(n.view(), d.view(), &config(mode, 2, None)).unwrap_err();
        assert!(
            matches!(err, RuntimeError::Kernel { lane: 1_000, .. }),
            "{mode:?}: {err}"
        );
        let isolated = Config {
            lane_isolation: true,
            ..config(mode, 2, None)
        };
        let run = risky::batch_isolated(n.view(), d.view(), &isolated).unwrap();
        let failed: Vec<usize> = run.failed.iter().map(|f| f.lane).collect();
        assert_eq!(failed, [1_000], "{mode:?}");
        assert_eq!(run.failed[0].error.lanes(), [1_000], "{mode:?}");
        assert_eq!(
            (run.outputs[999], run.outputs[1_001]),
            (103, 103),
            "{mode:?}"
        );
    }
}

//! The batched NUTS sampler's draws, step sizes and metrics do not depend on how many threads
//! run it (`Config::threads`) nor on how the batch is cut into shards (`Config::shard_size`),
//! warmup adaptation included: every chain records its draws into the run's context, from
//! whichever thread runs it.

use autobatch_examples::nuts::sampler::chain;
use autobatch_examples::nuts::{
    chain_key, initial_point, sample, ChainSettings, CorrelatedGaussian, Settings, Shared, Sink,
};
use autobatch_runtime::ndarray::{Array1, Array2};
use autobatch_runtime::{Config, Mode};
use proptest::prelude::*;
use std::sync::Arc;

const CHAINS: usize = 12;
const DIM: usize = 4;

/// Bits of every draw, step size and inverse metric of a 12-chain run (20 warmup transitions
/// with step size and metric adaptation, 6 draws) on `threads` threads with `shard_size`.
fn run(mode: Mode, threads: usize, shard_size: Option<usize>) -> Vec<u64> {
    let init = Array2::from_shape_vec(
        (CHAINS, DIM),
        (0..CHAINS as u64)
            .flat_map(|c| initial_point(7, c, DIM, 2.0))
            .collect(),
    )
    .unwrap();
    let keys = Array1::from_iter((0..CHAINS as u64).map(|c| chain_key(7, c)));
    let rows = Array1::from_iter(0..CHAINS as i64);
    let config = Config {
        threads,
        shard_size,
        ..Config::with_mode(mode)
    };
    let shared = Shared::new(
        Arc::new(CorrelatedGaussian::new(DIM, 0.9)),
        ChainSettings {
            warmup: 20,
            draws: 6,
            step_size: 0.5,
            max_depth: 10,
            adapt_step_size: true,
            adapt_metric: true,
            target_accept: 0.8,
        },
    )
    .recording(Sink::new((CHAINS, 6, DIM), 0));
    let result = chain::batch(&shared, init.view(), rows.view(), keys.view(), &config);
    let (_, step_size, inverse_metric) = result.unwrap();
    let recorded = shared.into_recorded().unwrap();
    assert_eq!(recorded.draws.recorded, (CHAINS * 6) as u64);
    (recorded.draws.q.iter())
        .chain(&step_size)
        .chain(&inverse_metric)
        .map(|x| x.to_bits())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(autobatch_testkit::cases(6)))]

    #[test]
    fn draws_do_not_depend_on_threads_or_the_shard_size(
        threads in 1usize..=3,
        shard in proptest::option::of(1usize..=CHAINS),
        stackless in any::<bool>(),
    ) {
        let mode = if stackless { Mode::Stackless } else { Mode::FullVm };
        prop_assert_eq!(run(mode, threads, shard), run(mode, 1, None));
    }
}

/// Through [`sample`]: every draw and statistic is the same on one thread in one shard and on
/// three threads in shards of two chains, and the gradient utilisation is over each call's
/// shard (every call computes at least one of its shard's two chains, so at least half).
#[test]
fn sample_on_every_thread_gives_the_one_thread_draws() {
    let settings = |threads, shard_size| Settings {
        chains: 6,
        draws: 15,
        warmup: 20,
        save_warmup: true,
        threads,
        shard_size,
        ..Settings::default()
    };
    let target = || CorrelatedGaussian::new(DIM, 0.9);
    let one = sample(target(), &settings(1, None), |_| {}).unwrap();
    let many = sample(target(), &settings(3, Some(2)), |_| {}).unwrap();
    assert_eq!(one.draws, many.draws);
    assert_eq!(one.warmup, many.warmup);
    assert_eq!(one.draws.recorded, 6 * 15);
    assert_eq!(one.gradients.rows, many.gradients.rows);
    assert_eq!(one.mean_shard_chains(), 6.0);
    assert_eq!(many.mean_shard_chains(), 2.0);
    let rows = many.gradients.rows as f64;
    let u = many.gradient_utilisation();
    assert_eq!(u, rows / (many.gradients.calls as f64 * 2.0));
    assert!((0.5..=1.0).contains(&u), "utilisation {u}");
    let u1 = one.gradient_utilisation();
    assert_eq!(
        u1,
        one.gradients.rows as f64 / (one.gradients.calls as f64 * 6.0)
    );
}

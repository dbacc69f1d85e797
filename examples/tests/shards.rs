//! The batched NUTS sampler's draws, step sizes and metrics do not depend on how the batch is
//! cut into shards (`Config::shard_size`), warmup adaptation included. One thread: the draw
//! sink is installed on the calling thread until it moves into the shared context.

use autobatch_examples::nuts::record::with_sink;
use autobatch_examples::nuts::sampler::chain;
use autobatch_examples::nuts::{
    chain_key, initial_point, ChainSettings, CorrelatedGaussian, Shared,
};
use autobatch_runtime::ndarray::{Array1, Array2};
use autobatch_runtime::{Config, Mode};
use proptest::prelude::*;
use std::sync::Arc;

const CHAINS: usize = 12;
const DIM: usize = 4;

/// Bits of every draw, step size and inverse metric of a 12-chain run (20 warmup transitions
/// with step size and metric adaptation, 6 draws) with `shard_size`.
fn run(mode: Mode, shard_size: Option<usize>) -> Vec<u64> {
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
        threads: 1,
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
    );
    let (result, recorded) = with_sink(
        (CHAINS, 6, DIM),
        0,
        0,
        |_| {},
        || chain::batch(&shared, init.view(), rows.view(), keys.view(), &config),
    );
    let (_, step_size, inverse_metric) = result.unwrap();
    (recorded.draws.q.iter())
        .chain(&step_size)
        .chain(&inverse_metric)
        .map(|x| x.to_bits())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(6))]

    #[test]
    fn draws_do_not_depend_on_the_shard_size(shard in 1usize..=CHAINS, stackless in any::<bool>()) {
        let mode = if stackless { Mode::Stackless } else { Mode::FullVm };
        prop_assert_eq!(run(mode, Some(shard)), run(mode, None));
    }
}

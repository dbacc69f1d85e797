//! The sampler's draws are pinned: a fixed-seed run's draws and statistics hash to the value
//! the sampler gave before the target and settings moved into the shared context (computed on
//! `main` then; the logistic regression's re-pinned since, see [`PINNED`]), in both modes and
//! on both shipped targets. Any change to what a chain computes changes the hash. And the settings stay in the context: not one per-chain column.

use autobatch_examples::nuts::{sample, CorrelatedGaussian, LogisticRegression, Run, Settings};
use autobatch_runtime::Mode;

/// FNV-1a over 64-bit words.
fn fnv(words: impl IntoIterator<Item = u64>) -> u64 {
    words.into_iter().fold(0xcbf2_9ce4_8422_2325, |h, w| {
        w.to_le_bytes()
            .iter()
            .fold(h, |h, b| (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3))
    })
}

/// A hash of every bit a run hands back: draws, their statistics, adapted step sizes and metrics.
fn hash(run: &Run) -> u64 {
    let d = &run.draws;
    let floats =
        d.q.iter()
            .chain(&d.accept)
            .chain(&d.step_size)
            .chain(&d.lp)
            .chain(&d.energy)
            .chain(&run.step_size)
            .chain(&run.inverse_metric)
            .map(|x| x.to_bits());
    let ints = d.depth.iter().chain(&d.n_leapfrog).map(|&x| x as u64);
    let flags = d.divergent.iter().map(|&b| u64::from(b));
    fnv(floats.chain(ints).chain(flags).chain([d.recorded]))
}

fn settings(mode: Mode, seed: u64) -> Settings {
    Settings {
        chains: 12,
        draws: 25,
        warmup: 60,
        seed,
        mode,
        ..Settings::default()
    }
}

#[test]
fn draws_are_bit_identical_to_the_pinned_run() {
    let mut got = Vec::new();
    for mode in [Mode::FullVm, Mode::Stackless] {
        let gaussian = sample(CorrelatedGaussian::new(6, 0.9), &settings(mode, 7), |_| {}).unwrap();
        let logistic = sample(
            LogisticRegression::synthetic(40, 3, 5),
            &settings(mode, 11),
            |_| {},
        )
        .unwrap();
        got.push((hash(&gaussian), hash(&logistic)));
    }
    assert_eq!(got[0], got[1], "the two modes agree");
    assert_eq!(got[0], PINNED, "draws changed");
}

/// `(gaussian, logistic)` hashes of the runs above. The Gaussian's was computed with the
/// sampler of `main` (the thread-local target and per-lane settings), before the context. The
/// logistic's was re-pinned when its batched gradient moved to the polynomial softplus and
/// sigmoid of `autobatch_runtime::math` and `X^T y` (a few ulp from the `std` forms, so other
/// bits; its agreement with a plain `std` gradient is `target.rs`'s unit test).
const PINNED: (u64, u64) = (0xfa37_98f9_445f_772e, 0xd2ef_cbd1_987c_6751);

/// The settings are read from the context, not expanded into per-chain columns: the chain
/// loop's only per-chain inputs are its position, index and key.
#[test]
fn the_chain_loop_takes_only_per_chain_inputs() {
    use autobatch_examples::nuts::sampler::chain;
    let program = chain::program().unwrap();
    let inputs: Vec<&str> = program
        .inputs()
        .iter()
        .map(|&v| program.var(v).name.as_str())
        .collect();
    assert_eq!(inputs, ["chain.q", "chain.chain", "chain.key"]);
}

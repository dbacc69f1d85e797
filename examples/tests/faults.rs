//! Fault injection into the NUTS main job: targets that panic or return NaN for some chains,
//! at their initial points or while sampling. The run completes, the chains at fault are
//! reported (a panic, a non-finite start) or show as divergences (NaN while sampling), and
//! every other chain's draws are bit for bit those of a run over the good chains alone.

use autobatch_examples::inference_data::write_run;
use autobatch_examples::nuts::{
    initial_point, sample_chains, CorrelatedGaussian, Progress, Run, SampleError, Settings, Target,
};
use autobatch_runtime::ndarray::{s, Array1, Array2, ArrayView2, Axis};
use autobatch_runtime::Mode;
use std::sync::{Arc, Mutex};

const DIM: usize = 3;

fn settings(mode: Mode) -> Settings {
    Settings {
        chains: 8,
        draws: 25,
        warmup: 30,
        save_warmup: true,
        mode,
        ..Settings::default()
    }
}

fn bits(a: impl IntoIterator<Item = f64>) -> Vec<u64> {
    a.into_iter().map(f64::to_bits).collect()
}

/// What goes wrong where. A point is one chain's own: its initial point, or a draw it makes
/// on the plain target (no other chain evaluates the target at the same bits), so the fault
/// hits that chain alone, at its start or at that transition.
#[derive(Clone, Copy, Debug)]
enum Fault {
    /// Panic at this point exactly.
    PanicAt([f64; DIM]),
    /// NaN log density at this point exactly.
    NanAt([f64; DIM]),
    /// Panic everywhere.
    PanicEverywhere,
}

/// A correlated Gaussian with a fault injected, row by row.
struct Faulty {
    inner: CorrelatedGaussian,
    fault: Fault,
}

impl Faulty {
    fn injected(fault: Fault) -> Arc<dyn Target> {
        Arc::new(Faulty {
            inner: CorrelatedGaussian::new(DIM, 0.5),
            fault,
        })
    }
}

impl Target for Faulty {
    fn dim(&self) -> usize {
        DIM
    }

    fn name(&self) -> String {
        format!("faulty Gaussian ({:?})", self.fault)
    }

    fn logp_grad(&self, q: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
        let (mut logp, grad) = self.inner.logp_grad(q);
        for (row, lp) in q.axis_iter(Axis(0)).zip(logp.iter_mut()) {
            let at = |p: &[f64; DIM]| row.iter().zip(p).all(|(a, b)| a.to_bits() == b.to_bits());
            match self.fault {
                Fault::PanicAt(p) if at(&p) => panic!("injected fault at {p:?}"),
                Fault::NanAt(p) if at(&p) => *lp = f64::NAN,
                Fault::PanicEverywhere => panic!("injected fault everywhere"),
                _ => {}
            }
        }
        (logp, grad)
    }
}

/// Chain `chain`'s initial point under `settings`.
fn start(settings: &Settings, chain: u64) -> [f64; DIM] {
    initial_point(settings.seed, chain, DIM, settings.init_radius)
        .try_into()
        .expect("DIM coordinates")
}

/// The plain target the faults are injected into.
fn plain() -> Arc<dyn Target> {
    Arc::new(CorrelatedGaussian::new(DIM, 0.5))
}

/// Chain [`CHAIN`]'s draw number [`DRAW`] on the plain target: a point that chain first
/// evaluates in that transition (it moved there), so a fault there hits it while sampling.
fn a_draw_of_one_chain(plain_run: &Run) -> [f64; DIM] {
    let q = &plain_run.draws.q;
    let (at, before) = (
        q.slice(s![CHAIN, DRAW, ..]),
        q.slice(s![CHAIN, DRAW - 1, ..]),
    );
    assert_ne!(at, before, "the chain moves at that draw");
    std::array::from_fn(|i| at[i])
}

/// The chain and draw faults hit while sampling.
const CHAIN: usize = 3;
const DRAW: usize = 10;

/// Runs chains `0..settings.chains` on `target`, recording every progress report.
fn run_all(target: Arc<dyn Target>, settings: &Settings) -> (Run, Vec<Progress>) {
    let ids: Vec<u64> = (0..settings.chains as u64).collect();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let run = sample_chains(target, settings, &ids, move |p| {
        sink.lock().unwrap().push(p)
    })
    .unwrap_or_else(|e| panic!("the run completes: {e}"));
    let seen = seen.lock().unwrap().clone();
    (run, seen)
}

/// `run`'s chains are exactly a run over its good chains alone, bit for bit, each draw and
/// warmup transition recorded once; progress never counts a transition twice.
fn others_are_untouched(
    target: Arc<dyn Target>,
    settings: &Settings,
    run: &Run,
    seen: &[Progress],
) {
    let good: Vec<u64> = (0..settings.chains as u64)
        .filter(|c| run.failed.iter().all(|f| f.chain != *c))
        .collect();
    assert_eq!(run.chain_ids, good);
    let alone = sample_chains(target, settings, &good, |_| {}).expect("the good chains run");
    assert!(alone.failed.is_empty(), "{:?}", alone.failed);
    assert_eq!(alone.chain_ids, good);
    assert_eq!(
        bits(run.draws.q.iter().copied()),
        bits(alone.draws.q.iter().copied())
    );
    assert_eq!(run.draws, alone.draws);
    assert_eq!(run.warmup, alone.warmup);
    assert_eq!(
        bits(run.step_size.iter().copied()),
        bits(alone.step_size.iter().copied())
    );
    assert_eq!(
        bits(run.inverse_metric.iter().copied()),
        bits(alone.inverse_metric.iter().copied())
    );
    let n = good.len() as u64;
    assert_eq!(run.draws.recorded, n * settings.draws as u64);
    assert_eq!(run.warmup.recorded, n * settings.warmup as u64);
    let total = seen.last().map_or(0, |p| p.total);
    assert!(seen.windows(2).all(|w| w[0].done < w[1].done));
    assert!(seen.iter().all(|p| p.done <= total), "{:?}", seen.last());
    // The summaries cover the good chains only.
    assert_eq!(run.summaries(), alone.summaries());
}

/// A target that panics at one chain's initial point: that chain is reported before sampling
/// and the others run as if it had not been asked for.
#[test]
fn a_target_panicking_at_one_chains_start_loses_only_that_chain() {
    for mode in [Mode::FullVm, Mode::Stackless] {
        let settings = settings(mode);
        let target = Faulty::injected(Fault::PanicAt(start(&settings, 5)));
        let (run, seen) = run_all(target.clone(), &settings);
        assert_eq!(run.failed.len(), 1, "{:?}", run.failed);
        let failed = &run.failed[0];
        assert_eq!((failed.chain, failed.at_start), (5, true));
        assert!(
            failed.error.contains("initial point of chain 5")
                && failed.error.contains("injected fault"),
            "{}",
            failed.error
        );
        others_are_untouched(target, &settings, &run, &seen);
    }
}

/// The InferenceData of a run without its failed chain names the others by their own
/// indices: its `chain` coordinates are the run's chain ids, and its draws are theirs.
#[test]
fn inference_data_keeps_the_real_chain_ids() {
    let settings = settings(Mode::FullVm);
    let (plain_run, _) = run_all(plain(), &settings);
    let target = Faulty::injected(Fault::PanicAt(a_draw_of_one_chain(&plain_run)));
    let (run, _) = run_all(target, &settings);
    let dir = std::env::temp_dir().join(format!("nuts-faults-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    let store = dir.join("run.zarr");
    write_run(&store, &run, &[]).expect("writes the store");
    let ids: Vec<i64> = vec![0, 1, 2, 4, 5, 6, 7];
    for group in [
        "posterior",
        "sample_stats",
        "warmup_posterior",
        "warmup_sample_stats",
    ] {
        let bytes = std::fs::read(store.join(group).join("chain/0")).expect("a chain coordinate");
        let chains: Vec<i64> = bytes
            .chunks_exact(8)
            .map(|b| i64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect();
        assert_eq!(chains, ids, "{group}");
    }
    let bytes = std::fs::read(store.join("posterior/x/0.0.0")).expect("the draws");
    let draws: Vec<u64> = bytes
        .chunks_exact(8)
        .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        .collect();
    assert_eq!(draws, bits(run.draws.q.iter().copied()));
    assert_eq!(run.draws.q.dim(), (7, settings.draws, DIM));
    std::fs::remove_dir_all(&dir).expect("removes the scratch directory");
}

/// A target that panics at a point one chain reaches while sampling: that chain is reported
/// (not at its start), the run completes, and the others keep every draw.
#[test]
fn a_target_panicking_while_one_chain_samples_loses_only_that_chain() {
    for mode in [Mode::FullVm, Mode::Stackless] {
        let settings = settings(mode);
        let (plain_run, _) = run_all(plain(), &settings);
        let target = Faulty::injected(Fault::PanicAt(a_draw_of_one_chain(&plain_run)));
        let (run, seen) = run_all(target.clone(), &settings);
        assert_eq!(run.failed.len(), 1, "{:?}", run.failed);
        let failed = &run.failed[0];
        assert_eq!((failed.chain, failed.at_start), (CHAIN as u64, false));
        assert!(
            failed.error.starts_with("failed while sampling")
                && failed.error.contains("logp_grad")
                && failed.error.contains("injected fault"),
            "{}",
            failed.error
        );
        others_are_untouched(target, &settings, &run, &seen);
        // The others are also the plain run's chains.
        let others: Vec<usize> = (0..settings.chains).filter(|&c| c != CHAIN).collect();
        assert_eq!(run.draws, plain_run.draws.clone().keep_chains(&others));
    }
}

/// A NaN log density at one chain's initial point: that chain cannot start and is reported;
/// the others run.
#[test]
fn a_nan_density_at_one_chains_start_loses_only_that_chain() {
    let settings = settings(Mode::FullVm);
    let target = Faulty::injected(Fault::NanAt(start(&settings, 2)));
    let (run, seen) = run_all(target.clone(), &settings);
    assert_eq!(run.failed.len(), 1, "{:?}", run.failed);
    let failed = &run.failed[0];
    assert_eq!((failed.chain, failed.at_start), (2, true));
    assert!(
        failed.error.contains("log density is NaN")
            && failed.error.contains("initial point of chain 2"),
        "{}",
        failed.error
    );
    others_are_untouched(target, &settings, &run, &seen);
}

/// A NaN log density at a point one chain reaches while sampling is a divergence of that
/// transition, not a failure: the run completes with every chain, that chain's draws are the
/// plain run's up to the divergence, and every other chain's are the plain run's.
#[test]
fn a_nan_density_while_one_chain_samples_shows_as_its_divergence() {
    let settings = settings(Mode::FullVm);
    let (plain_run, _) = run_all(plain(), &settings);
    let target = Faulty::injected(Fault::NanAt(a_draw_of_one_chain(&plain_run)));
    let (run, _) = run_all(target.clone(), &settings);
    assert!(run.failed.is_empty(), "{:?}", run.failed);
    assert_eq!(
        run.chain_ids,
        (0..settings.chains as u64).collect::<Vec<_>>()
    );
    assert!(
        run.draws.divergent[[CHAIN, DRAW]],
        "the transition diverges"
    );
    assert!(!plain_run.draws.divergent[[CHAIN, DRAW]]);
    let until = |r: &Run| bits(r.draws.q.slice(s![CHAIN, ..DRAW, ..]).iter().copied());
    assert_eq!(until(&run), until(&plain_run));
    let others: Vec<usize> = (0..settings.chains).filter(|&c| c != CHAIN).collect();
    assert_eq!(
        run.draws.clone().keep_chains(&others),
        plain_run.draws.clone().keep_chains(&others)
    );
    assert_eq!(run.warmup, plain_run.warmup);
    let alone = sample_chains(target, &settings, &[CHAIN as u64], |_| {}).unwrap();
    assert_eq!(alone.draws, run.draws.clone().keep_chains(&[CHAIN]));
}

/// When every chain fails at its start, nothing can run: the run fails with the first
/// chain's error (a shape error stays an error of the run, as before).
#[test]
fn a_target_failing_everywhere_fails_the_run() {
    let settings = settings(Mode::FullVm);
    let target = Faulty::injected(Fault::PanicEverywhere);
    let ids: Vec<u64> = (0..settings.chains as u64).collect();
    match sample_chains(target, &settings, &ids, |_| {}) {
        Err(SampleError::TargetFailed { chain, message, .. }) => {
            assert_eq!(chain, 0);
            assert!(message.contains("injected fault"), "{message}");
        }
        other => panic!("{other:?}"),
    }
    struct Short;
    impl Target for Short {
        fn dim(&self) -> usize {
            DIM
        }
        fn name(&self) -> String {
            "one log density too few".into()
        }
        fn logp_grad(&self, q: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
            let rows = q.nrows().saturating_sub(1);
            (Array1::zeros(rows), Array2::zeros(q.dim()))
        }
    }
    match sample_chains(Arc::new(Short), &settings, &ids, |_| {}) {
        Err(e) => assert!(e.to_string().contains("returned"), "{e}"),
        Ok(run) => panic!("{:?}", run.failed),
    }
}

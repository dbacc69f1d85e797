//! A batched No-U-Turn sampler written with `#[autobatch]`: thousands of chains, each building
//! its own recursive tree to its own depth, with one batched gradient per step of the batch.
//!
//! - [`sampler`]: the algorithm as plain scalar Rust functions under `#[autobatch]`;
//! - [`target`]: the [`Target`] trait and the shipped targets;
//! - [`shared`]: what every chain shares, the run's context ([`Shared`]: the target, reached
//!   through the batched `logp_grad` primitive, the [`ChainSettings`], and the draw sink,
//!   reached through the `record` primitive);
//! - [`record`]: the per-run sink that stores every draw (the `record` primitive in
//!   [`shared`] writes to it);
//! - this module: [`Settings`], validation, initial points and [`sample`], which runs every
//!   chain's warmup and draws in one autobatched call.
//!
//! One chain's failure loses nothing else: a chain whose target panics (at its initial point
//! or while sampling) or whose initial point has no finite density is reported in
//! [`Run::failed`], and every other chain's draws are those of a run without it, bit for bit
//! (the autobatched call runs with lane isolation).

pub mod record;
pub mod sampler;
pub mod shared;
pub mod target;

pub use record::{DrawStats, Draws, Progress, Recorded, Sink};
pub use shared::{ChainSettings, GradientCounts, Shared};
pub use target::{CorrelatedGaussian, LogisticRegression, Target};

use crate::diagnostics::{self, Summary};
use autobatch_runtime::ndarray::{Array1, Array2, ArrayView2, Axis};
use autobatch_runtime::{
    autobatch, available_threads, Config, Key, Mode, RuntimeError, Stats, Vector,
};
use shared::logp_grad;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};
use thiserror::Error;

/// How to run the sampler. `Settings::default()` is the main job's configuration: 1,000
/// chains, 200 warmup and 200 draws each, full adaptation, maximum tree depth 10.
///
/// Why 200 and 200 are enough with 1,000 chains (measured on the 100-d Gaussian of the
/// `nuts` binary, README "Commands"): the 200,000 draws give every coordinate a bulk ESS
/// above 150,000 and a tail ESS above 160,000, a split R-hat of at most 1.002, and recover
/// every mean and sd within a few Monte Carlo standard errors. The warmup is the shortest
/// whose schedule still adapts in full (see [`sampler::chain()`]): 75 transitions of
/// step-size adaptation alone, the metric estimated from two windows (25, then 50
/// transitions), then 50 transitions of step-size adaptation with the final metric; the
/// adapted step size (0.137) and trees (mean depth 6.1) are those of a 300-transition warmup
/// (0.134, 6.06). A longer warmup would not pay: a warmup transition costs about as many
/// gradients as a draw (about 95), and the initial step size hardly matters (from 0.1 to
/// 1.0, the same adapted step size and gradient count within 1%).
#[derive(Clone, Debug, PartialEq)]
pub struct Settings {
    /// Chains, run as one batch.
    pub chains: usize,
    /// Draws kept per chain, after warmup.
    pub draws: usize,
    /// Warmup transitions per chain (adaptation happens here; none are kept).
    pub warmup: usize,
    /// Seed: chain `k` uses `Key::new(seed).fold_in(k)` for its initial point and transitions.
    pub seed: u64,
    /// Maximum tree depth (at most `2^max_depth - 1` leapfrog steps per transition).
    pub max_depth: u32,
    /// The step size to start from (and to keep when `adapt_step_size` is off).
    pub step_size: f64,
    /// Tune the step size by dual averaging during warmup.
    pub adapt_step_size: bool,
    /// Estimate a diagonal metric from warmup draws.
    pub adapt_metric: bool,
    /// The mean acceptance probability step-size adaptation aims for.
    pub target_accept: f64,
    /// Initial points are uniform in `[-init_radius, init_radius]` per coordinate (Stan's 2).
    pub init_radius: f64,
    /// The interpreter (default: stackless, the faster on both shipped targets).
    pub mode: Mode,
    /// Keep every warmup transition (in [`Run::warmup`]) as well as the draws.
    pub save_warmup: bool,
    /// Worker threads the chains run on (`Config::threads`; default: every core). The draws
    /// do not depend on it.
    pub threads: usize,
    /// Chains per shard (`Config::shard_size`; default `None`: the runtime chooses). The
    /// draws do not depend on it.
    pub shard_size: Option<usize>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            chains: 1000,
            draws: 200,
            warmup: 200,
            seed: 42,
            max_depth: 10,
            step_size: 0.1,
            adapt_step_size: true,
            adapt_metric: true,
            target_accept: 0.8,
            init_radius: 2.0,
            mode: Mode::Stackless,
            save_warmup: false,
            threads: available_threads(),
            shard_size: None,
        }
    }
}

/// What can go wrong before or while sampling.
#[derive(Debug, Error)]
pub enum SampleError {
    /// A setting is out of its range.
    #[error("invalid setting `{name}` = {value}: {why}")]
    Setting {
        /// The setting's name.
        name: &'static str,
        /// Its value, as given.
        value: String,
        /// What it must be.
        why: &'static str,
    },
    /// The target's `logp_grad` returned arrays of the wrong shape.
    #[error(
        "target `{target}` returned {what} of shape {got:?} for {rows} rows in dimension {dim}"
    )]
    TargetShape {
        /// The target's name.
        target: String,
        /// `"log densities"` or `"gradients"`.
        what: &'static str,
        /// The shape it returned.
        got: Vec<usize>,
        /// Rows asked for.
        rows: usize,
        /// The target's dimension.
        dim: usize,
    },
    /// The log density or its gradient is not finite at a chain's initial point. Only an
    /// error of the run when it holds for every chain; else that chain is one of
    /// [`Run::failed`] with this message.
    #[error("target `{target}`: the log density is {logp} (gradient finite: {grad_finite}) at the initial point of chain {chain}; it must be finite where chains start")]
    NonFiniteStart {
        /// The target's name.
        target: String,
        /// The chain.
        chain: u64,
        /// The log density there.
        logp: f64,
        /// Whether every gradient coordinate was finite.
        grad_finite: bool,
    },
    /// The target failed at a chain's initial point: it panicked, or returned arrays of the
    /// wrong shape for that point alone. Only an error of the run when it holds for every
    /// chain; else that chain is one of [`Run::failed`] with this message.
    #[error("target `{target}` failed at the initial point of chain {chain}: {message}")]
    TargetFailed {
        /// The target's name.
        target: String,
        /// The chain.
        chain: u64,
        /// What went wrong (a panic's message, as the runtime reports it).
        message: String,
    },
    /// The target panicked on the initial points of chains together though it did not on
    /// each alone: its `logp_grad` is not row-wise (see [`Target`]).
    #[error("target `{target}` panicked on the initial points of {rows} chains together, though not on each alone; `logp_grad` must compute each row from that row only ({message})")]
    NotRowWise {
        /// The target's name.
        target: String,
        /// Rows evaluated together.
        rows: usize,
        /// The panic's message.
        message: String,
    },
    /// The autobatched run failed (for every chain, if the failure was a chain's own).
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// A chain left out of a run: it failed, and every other chain ran as if it had not been there.
#[derive(Clone, Debug, PartialEq)]
pub struct FailedChain {
    /// The chain's index (as in [`sample_chains`]'s `ids`).
    pub chain: u64,
    /// Whether it failed at its initial point, before sampling (else while sampling).
    pub at_start: bool,
    /// What went wrong, in words.
    pub error: String,
}

/// The result of [`sample`]: the chains that ran to their end, and those that failed.
#[derive(Clone, Debug)]
pub struct Run {
    /// The index of each chain that ran to its end: row `k` of [`draws`](Self::draws),
    /// [`warmup`](Self::warmup), [`step_size`](Self::step_size) and
    /// [`inverse_metric`](Self::inverse_metric) is chain `chain_ids[k]`.
    pub chain_ids: Vec<u64>,
    /// The chains that failed, by index, with why (empty if none did). They are in no other
    /// field but [`gradients`](Self::gradients), which counts every evaluation made.
    pub failed: Vec<FailedChain>,
    /// Every draw of the chains in [`chain_ids`](Self::chain_ids), with its statistics.
    pub draws: Draws,
    /// The warmup transitions with their statistics if [`Settings::save_warmup`] was set
    /// (else empty).
    pub warmup: Draws,
    /// Each chain's adapted step size.
    pub step_size: Array1<f64>,
    /// Each chain's adapted diagonal inverse metric: `[chains, dim]`.
    pub inverse_metric: Array2<f64>,
    /// The interpreter's statistics for the run (after a chain failed while sampling: for the
    /// run of the others alone).
    pub stats: Stats,
    /// Gradient evaluations: batched kernel calls and rows computed (after a chain failed
    /// while sampling: over every attempt, since the others then ran again without it).
    pub gradients: GradientCounts,
    /// Wall time of the autobatched call.
    pub elapsed: Duration,
}

impl Run {
    /// Chains that ran to their end (the rows of the draws).
    pub fn chains(&self) -> usize {
        self.draws.q.dim().0
    }

    /// Chains the sampler started: those that ran to their end and those that failed while
    /// sampling (the batch of the first autobatched call).
    pub fn batch(&self) -> usize {
        self.chains() + self.failed.iter().filter(|f| !f.at_start).count()
    }

    /// Chains per shard, on average over the interpreter's steps: the batch is cut into
    /// shards of lanes that run as independent batches (`Config::shard_size`), all of one
    /// size but the last, and each step serves one shard (`stats.lane_slots / stats.steps`;
    /// the whole batch when the run is one shard).
    pub fn mean_shard_chains(&self) -> f64 {
        if self.stats.steps == 0 {
            self.batch() as f64
        } else {
            self.stats.lane_slots as f64 / self.stats.steps as f64
        }
    }

    /// Mean fraction of its shard's chains each gradient call computed: a batched gradient
    /// call serves one shard, so this is rows / (calls x [`mean_shard_chains`]), which is
    /// rows / (calls x batch) for a run of one shard.
    ///
    /// [`mean_shard_chains`]: Self::mean_shard_chains
    pub fn gradient_utilisation(&self) -> f64 {
        let slots = self.gradients.calls as f64 * self.mean_shard_chains();
        if slots == 0.0 {
            0.0
        } else {
            self.gradients.rows as f64 / slots
        }
    }

    /// Gradient evaluations per second of wall time.
    pub fn gradients_per_second(&self) -> f64 {
        self.gradients.rows as f64 / self.elapsed.as_secs_f64()
    }

    /// Per-coordinate summaries (mean, sd, MCSEs, bulk and tail ESS, quantiles, R-hat) of the
    /// draws.
    pub fn summaries(&self) -> Vec<Summary> {
        diagnostics::summarize_all(self.draws.q.view())
    }

    /// Divergent transitions after warmup, over all chains.
    pub fn divergences(&self) -> usize {
        self.draws.divergent.iter().filter(|d| **d).count()
    }
}

impl Settings {
    /// Checks every setting's range.
    pub fn validate(&self) -> Result<(), SampleError> {
        let bad = bad_setting;
        if self.chains == 0 {
            return bad("chains", "0".into(), "at least one chain");
        }
        if self.draws == 0 {
            return bad("draws", "0".into(), "at least one draw per chain");
        }
        if self.threads == 0 {
            return bad("threads", "0".into(), "at least one thread");
        }
        if self.shard_size == Some(0) {
            return bad("shard_size", "0".into(), "at least one chain per shard");
        }
        if !(1..=30).contains(&self.max_depth) {
            return bad("max_depth", self.max_depth.to_string(), "between 1 and 30");
        }
        if !(self.step_size.is_finite() && self.step_size > 0.0) {
            return bad(
                "step_size",
                self.step_size.to_string(),
                "a finite number above 0",
            );
        }
        if !(self.target_accept > 0.0 && self.target_accept < 1.0) {
            return bad(
                "target_accept",
                self.target_accept.to_string(),
                "strictly between 0 and 1",
            );
        }
        if !(self.init_radius.is_finite() && self.init_radius >= 0.0) {
            return bad(
                "init_radius",
                self.init_radius.to_string(),
                "a finite number, 0 or above",
            );
        }
        if i64::try_from(self.warmup + self.draws).is_err() {
            return bad(
                "warmup",
                self.warmup.to_string(),
                "warmup + draws must fit an i64",
            );
        }
        Ok(())
    }

    /// Bytes a run of these settings on a `dim`-dimensional target needs at least: the draws
    /// and their statistics (and the warmup transitions if kept), the interpreter's vector
    /// state (about [`STATE_ROWS_PER_CHAIN`] rows per chain at the deepest trees), and the
    /// per-chain inputs and gradient buffers. An estimate to refuse hopeless runs early, not
    /// a bound.
    pub fn memory_estimate(&self, dim: usize) -> u128 {
        let (chains, dim_bytes) = (self.chains as u128, 8 * dim as u128);
        let kept = if self.save_warmup { self.warmup } else { 0 };
        let draws =
            Draws::bytes(self.chains, self.draws, dim) + Draws::bytes(self.chains, kept, dim);
        let state = chains * (STATE_ROWS_PER_CHAIN as u128 * dim_bytes);
        let inputs = chains * (8 * dim_bytes + 256);
        draws + state + inputs
    }
}

/// Vector rows the sampler's state holds per chain, at most, in the estimate of
/// [`Settings::memory_estimate`]: positions, momenta and gradients of both trajectory ends and
/// of the proposal at every level of a tree of depth 10, with the metric and adaptation state.
pub const STATE_ROWS_PER_CHAIN: usize = 120;

impl Settings {
    /// The settings every chain reads from the run's context.
    pub fn chain_settings(&self) -> ChainSettings {
        ChainSettings {
            warmup: self.warmup as i64,
            draws: self.draws as i64,
            step_size: self.step_size,
            max_depth: i64::from(self.max_depth),
            adapt_step_size: self.adapt_step_size,
            adapt_metric: self.adapt_metric,
            target_accept: self.target_accept,
        }
    }
}

fn bad_setting<T>(name: &'static str, value: String, why: &'static str) -> Result<T, SampleError> {
    Err(SampleError::Setting { name, value, why })
}

/// Chain `chain`'s key: its transitions use this, its initial point a key split from it.
pub fn chain_key(seed: u64, chain: u64) -> Key {
    Key::new(seed).fold_in(chain)
}

/// Chain `chain`'s initial point: uniform in `[-radius, radius]` per coordinate, from a key
/// that depends only on the seed and the chain.
pub fn initial_point(seed: u64, chain: u64, dim: usize, radius: f64) -> Vec<f64> {
    let (mut key, _) = chain_key(seed, chain).split();
    (0..dim)
        .map(|_| {
            let (u, k) = key.uniform();
            key = k;
            radius * (2.0 * u - 1.0)
        })
        .collect()
}

/// The log density and gradient of the context's target at `q`: one chain's initial point,
/// evaluated through the runtime so that a panic is caught quietly and blamed on its chain.
#[autobatch]
fn start_point(shared: &Shared, q: Vector) -> (f64, Vector) {
    let (logp, g) = logp_grad(shared, &q);
    (logp, g)
}

/// What a chain's runtime failure says, in the sampler's words: where it happened (the
/// failing primitive, if a kernel failed) and what happened.
fn failure_message(error: &RuntimeError) -> (Option<&str>, String) {
    match error {
        RuntimeError::Kernel {
            source_text,
            message,
            ..
        } => (Some(source_text), message.clone()),
        other => (None, other.to_string()),
    }
}

/// Evaluates the target at the initial points `q` of chains `ids` before sampling: returns the
/// rows of the chains that cannot start (the target panics there, or the log density or
/// gradient is not finite), lowest first, each with its error. Fails if the target returns arrays of the wrong shape, is not
/// row-wise, or no chain can start (with the first chain's error).
///
/// The points are first evaluated through the runtime with lane isolation, which catches a
/// panic without printing it and names the chain at fault; the chains left are then evaluated
/// together directly, to check shapes and finiteness.
fn check_start(
    target: &Arc<dyn Target>,
    settings: &Settings,
    ids: &[u64],
    q: ArrayView2<f64>,
) -> Result<Vec<(usize, SampleError)>, SampleError> {
    let config = Config::with_mode(settings.mode);
    // Its own context, so these evaluations are not counted as the run's gradients.
    let shared = Shared::new(target.clone(), settings.chain_settings());
    let isolated = start_point::batch_isolated(&shared, q, &config);
    let mut failed: Vec<(usize, SampleError)> = isolated?
        .failed
        .iter()
        .map(|f| {
            let error = SampleError::TargetFailed {
                target: target.name(),
                chain: ids[f.lane],
                message: failure_message(&f.error).1,
            };
            (f.lane, error)
        })
        .collect();
    let rows: Vec<usize> = (0..ids.len())
        .filter(|r| failed.iter().all(|(f, _)| f != r))
        .collect();
    if !rows.is_empty() {
        let q = q.select(Axis(0), &rows);
        let (rows_n, dim) = q.dim();
        let (logp, grad) =
            catch_unwind(AssertUnwindSafe(|| target.logp_grad(q.view()))).map_err(|payload| {
                SampleError::NotRowWise {
                    target: target.name(),
                    rows: rows_n,
                    message: panic_text(payload.as_ref()),
                }
            })?;
        let shape_error = |what, got: &[usize]| SampleError::TargetShape {
            target: target.name(),
            what,
            got: got.to_vec(),
            rows: rows_n,
            dim,
        };
        if logp.len() != rows_n {
            return Err(shape_error("log densities", logp.shape()));
        }
        if grad.dim() != (rows_n, dim) {
            return Err(shape_error("gradients", grad.shape()));
        }
        for ((lp, g), &row) in logp.iter().zip(grad.rows()).zip(&rows) {
            let grad_finite = g.iter().all(|x| x.is_finite());
            if !lp.is_finite() || !grad_finite {
                let error = SampleError::NonFiniteStart {
                    target: target.name(),
                    chain: ids[row],
                    logp: *lp,
                    grad_finite,
                };
                failed.push((row, error));
            }
        }
    }
    failed.sort_by_key(|(row, _)| *row);
    if failed.len() == ids.len() {
        let (_, first) = failed.remove(0);
        return Err(first);
    }
    Ok(failed)
}

/// A panic payload's message, as the runtime words a kernel's.
fn panic_text(payload: &(dyn std::any::Any + Send)) -> String {
    match (
        payload.downcast_ref::<&str>(),
        payload.downcast_ref::<String>(),
    ) {
        (Some(s), _) => format!("panicked: {s}"),
        (_, Some(s)) => format!("panicked: {s}"),
        _ => "panicked".to_string(),
    }
}

/// Samples `target` with chains `0..settings.chains` in one autobatched call of
/// [`sampler::chain()`], calling `progress` as transitions finish.
///
/// A chain's draws depend only on the seed, the chain index and the settings: chain `k` gives
/// the same bits alone, in any batch, in either mode, and as the scalar function.
pub fn sample<T: Target + 'static>(
    target: T,
    settings: &Settings,
    progress: impl FnMut(Progress) + Send + 'static,
) -> Result<Run, SampleError> {
    let ids: Vec<u64> = (0..settings.chains as u64).collect();
    sample_chains(Arc::new(target), settings, &ids, progress)
}

/// Like [`sample`] for the chains with the given indices (`settings.chains` is ignored): e.g.
/// one chain of a large run, alone. Row `k` of the result is chain `run.chain_ids[k]`: the
/// chains of `ids` in order, less those in [`Run::failed`].
///
/// A chain fails, and is reported there instead of failing the run, if the target panics at
/// its initial point or while it samples, or if the log density or its gradient is not finite
/// at its initial point (a non-finite density while sampling is a divergence, not a failure).
/// The other chains' draws are those of a run without it, bit for bit. The run fails if
/// every chain does, or if the target returns arrays of the wrong shape.
pub fn sample_chains(
    target: Arc<dyn Target>,
    settings: &Settings,
    ids: &[u64],
    progress: impl FnMut(Progress) + Send + 'static,
) -> Result<Run, SampleError> {
    settings.validate()?;
    let dim = target.dim();
    if dim == 0 {
        return bad_setting(
            "target",
            target.name(),
            "the target must have at least one coordinate",
        );
    }
    let chains = ids.len();
    if chains == 0 {
        return bad_setting("chains", "0".into(), "at least one chain");
    }
    let init = Array2::from_shape_vec(
        (chains, dim),
        ids.iter()
            .flat_map(|&c| initial_point(settings.seed, c, dim, settings.init_radius))
            .collect(),
    )
    .expect("chains x dim values");
    let refused = check_start(&target, settings, ids, init.view())?;
    let starting: Vec<usize> = (0..ids.len())
        .filter(|&row| refused.iter().all(|(r, _)| *r != row))
        .collect();
    let mut failed: Vec<FailedChain> = refused
        .into_iter()
        .map(|(row, error)| FailedChain {
            chain: ids[row],
            at_start: true,
            error: error.to_string(),
        })
        .collect();
    let ids: Vec<u64> = starting.iter().map(|&row| ids[row]).collect();
    let init = init.select(Axis(0), &starting);
    let chains = ids.len();
    let keys = Array1::from_iter(ids.iter().map(|&c| chain_key(settings.seed, c)));
    let rows = Array1::from_iter(0..chains as i64);
    let config = Config {
        threads: settings.threads,
        shard_size: settings.shard_size,
        ..Config::with_mode(settings.mode)
    };
    let total = (chains * (settings.warmup + settings.draws)) as u64;
    let start = Instant::now();
    let keep_warmup = if settings.save_warmup {
        settings.warmup
    } else {
        0
    };
    let sink = Sink::new((chains, settings.draws, dim), keep_warmup).reporting(total, progress);
    let shared = Shared::new(target, settings.chain_settings()).recording(sink);
    let result =
        sampler::chain::batch_isolated(&shared, init.view(), rows.view(), keys.view(), &config);
    let gradients = shared.gradients();
    let elapsed = start.elapsed();
    let recorded = shared.into_recorded().expect("the sink given above");
    let run = result?;
    if run.failed.len() == chains {
        return Err(SampleError::Runtime(run.failed[0].error.clone()));
    }
    failed.extend(run.failed.iter().map(|f| FailedChain {
        chain: ids[f.lane],
        at_start: false,
        error: match failure_message(&f.error) {
            (Some(primitive), message) => {
                format!("failed while sampling, in `{primitive}`: {message}")
            }
            (None, message) => format!("failed while sampling: {message}"),
        },
    }));
    failed.sort_by_key(|f| f.chain);
    let good: Vec<usize> = (0..chains)
        .filter(|&row| run.failed.iter().all(|f| f.lane != row))
        .collect();
    let (_, step_size, inverse_metric) = run.outputs;
    // In place: the draws of a large run are most of its memory.
    let recorded = recorded.keep_chains(&good);
    Ok(Run {
        chain_ids: good.iter().map(|&row| ids[row]).collect(),
        failed,
        draws: recorded.draws,
        warmup: recorded.warmup,
        step_size: step_size.select(Axis(0), &good),
        inverse_metric: inverse_metric.select(Axis(0), &good),
        stats: run.stats,
        gradients,
        elapsed,
    })
}

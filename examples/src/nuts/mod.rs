//! A batched No-U-Turn sampler written with `#[autobatch]`: thousands of chains, each building
//! its own recursive tree to its own depth, with one batched gradient per step of the batch.
//!
//! - [`sampler`]: the algorithm as plain scalar Rust functions under `#[autobatch]`;
//! - [`target`]: the [`Target`] trait and the shipped targets, reached through the batched
//!   `logp_grad` primitive;
//! - [`record`]: the primitive that hands every draw back, and the per-run sink;
//! - this module: [`Settings`], validation, initial points and [`sample`], which runs every
//!   chain's warmup and draws in one autobatched call.

pub mod record;
pub mod sampler;
pub mod target;

pub use record::{Draws, Progress, Recorded};
pub use target::{with_target, CorrelatedGaussian, GradientCounts, LogisticRegression, Target};

use crate::diagnostics::{self, Summary};
use autobatch_runtime::ndarray::{Array1, Array2, ArrayView2};
use autobatch_runtime::{Config, Key, Mode, RuntimeError, Stats};
use std::rc::Rc;
use std::time::{Duration, Instant};
use thiserror::Error;

/// How to run the sampler. `Settings::default()` is the main job's configuration: 1,000
/// chains, 1,000 warmup and 1,000 draws, full adaptation, maximum tree depth 10.
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
    /// Full VM or stackless.
    pub mode: Mode,
    /// Keep every warmup transition (in [`Run::warmup`]) as well as the draws.
    pub save_warmup: bool,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            chains: 1000,
            draws: 1000,
            warmup: 1000,
            seed: 42,
            max_depth: 10,
            step_size: 0.1,
            adapt_step_size: true,
            adapt_metric: true,
            target_accept: 0.8,
            init_radius: 2.0,
            mode: Mode::FullVm,
            save_warmup: false,
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
    /// The log density or its gradient is not finite at a chain's initial point.
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
    /// The autobatched run failed.
    #[error(transparent)]
    Runtime(#[from] RuntimeError),
}

/// The result of [`sample`].
#[derive(Clone, Debug)]
pub struct Run {
    /// Every draw with its statistics.
    pub draws: Draws,
    /// The warmup transitions with their statistics if [`Settings::save_warmup`] was set
    /// (else empty).
    pub warmup: Draws,
    /// Each chain's adapted step size.
    pub step_size: Array1<f64>,
    /// Each chain's adapted diagonal inverse metric: `[chains, dim]`.
    pub inverse_metric: Array2<f64>,
    /// The interpreter's statistics for the run.
    pub stats: Stats,
    /// Gradient evaluations: batched kernel calls and rows computed.
    pub gradients: GradientCounts,
    /// Wall time of the autobatched call.
    pub elapsed: Duration,
}

impl Run {
    /// Chains in the run.
    pub fn chains(&self) -> usize {
        self.draws.q.dim().0
    }

    /// Mean fraction of the batch each gradient call computed (rows / (calls x chains)).
    pub fn gradient_utilisation(&self) -> f64 {
        let slots = self.gradients.calls as f64 * self.chains() as f64;
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

/// Evaluates the target at `q` and checks shapes and finiteness (the checks a run makes
/// before it starts).
fn check_start(target: &dyn Target, ids: &[u64], q: ArrayView2<f64>) -> Result<(), SampleError> {
    let (rows, dim) = q.dim();
    let (logp, grad) = target.logp_grad(q);
    let shape_error = |what, got: &[usize]| SampleError::TargetShape {
        target: target.name(),
        what,
        got: got.to_vec(),
        rows,
        dim,
    };
    if logp.len() != rows {
        return Err(shape_error("log densities", logp.shape()));
    }
    if grad.dim() != (rows, dim) {
        return Err(shape_error("gradients", grad.shape()));
    }
    for ((lp, g), &chain) in logp.iter().zip(grad.rows()).zip(ids) {
        let grad_finite = g.iter().all(|x| x.is_finite());
        if !lp.is_finite() || !grad_finite {
            return Err(SampleError::NonFiniteStart {
                target: target.name(),
                chain,
                logp: *lp,
                grad_finite,
            });
        }
    }
    Ok(())
}

/// Samples `target` with chains `0..settings.chains` in one autobatched call of
/// [`sampler::chain()`], calling `progress` as transitions finish.
///
/// A chain's draws depend only on the seed, the chain index and the settings: chain `k` gives
/// the same bits alone, in any batch, in either mode, and as the scalar function.
pub fn sample<T: Target + 'static>(
    target: T,
    settings: &Settings,
    progress: impl FnMut(Progress) + 'static,
) -> Result<Run, SampleError> {
    let ids: Vec<u64> = (0..settings.chains as u64).collect();
    sample_chains(Rc::new(target), settings, &ids, progress)
}

/// Like [`sample`] for the chains with the given indices (row `k` of the result is chain
/// `ids[k]`; `settings.chains` is ignored): e.g. one chain of a large run, alone.
pub fn sample_chains(
    target: Rc<dyn Target>,
    settings: &Settings,
    ids: &[u64],
    progress: impl FnMut(Progress) + 'static,
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
    check_start(target.as_ref(), ids, init.view())?;
    let keys = Array1::from_iter(ids.iter().map(|&c| chain_key(settings.seed, c)));
    let rows = Array1::from_iter(0..chains as i64);
    let (warmup, draws) = (settings.warmup as i64, settings.draws as i64);
    // One thread: the target and the sink are installed on this thread (until kernels take
    // them as an explicit context).
    let config = Config {
        threads: 1,
        ..Config::with_mode(settings.mode)
    };
    let total = (chains * (settings.warmup + settings.draws)) as u64;
    let start = Instant::now();
    let keep_warmup = if settings.save_warmup {
        settings.warmup
    } else {
        0
    };
    let shape = (chains, settings.draws, dim);
    let ((result, gradients), recorded) =
        record::with_sink(shape, keep_warmup, total, progress, || {
            with_target(target.clone(), || {
                sampler::chain::batch_with_stats(
                    init.view(),
                    rows.view(),
                    keys.view(),
                    Array1::from_elem(chains, warmup).view(),
                    Array1::from_elem(chains, draws).view(),
                    Array1::from_elem(chains, settings.step_size).view(),
                    Array1::from_elem(chains, settings.max_depth as i64).view(),
                    Array1::from_elem(chains, settings.adapt_step_size).view(),
                    Array1::from_elem(chains, settings.adapt_metric).view(),
                    Array1::from_elem(chains, settings.target_accept).view(),
                    &config,
                )
            })
        });
    let elapsed = start.elapsed();
    let ((_, step_size, inverse_metric), stats) = result?;
    Ok(Run {
        draws: recorded.draws,
        warmup: recorded.warmup,
        step_size,
        inverse_metric,
        stats,
        gradients,
        elapsed,
    })
}

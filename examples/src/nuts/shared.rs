//! What every chain of a run shares, handed once to the autobatched call as its context
//! ([`Shared`]): the target, which the batched [`logp_grad()`] primitive evaluates for all
//! active chains at once, the settings every chain reads ([`ChainSettings`]), and the count of
//! gradient evaluations. Nothing here is a per-chain column or a thread-local: the runtime
//! hands the same `&Shared` to every kernel call, on whatever thread runs it.

use super::target::Target;
use autobatch_runtime::ndarray::{Array1, Array2, ArrayView2};
use autobatch_runtime::{primitive, Vector};
use std::sync::{Arc, Mutex, PoisonError};

/// The settings every chain of a run reads: one value for all chains, read from the context
/// where the sampler uses them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChainSettings {
    /// Warmup transitions (adaptation happens there); recorded as draws `-warmup..0`.
    pub warmup: i64,
    /// Draws kept after warmup.
    pub draws: i64,
    /// The step size to start from (and to keep when `adapt_step_size` is off).
    pub step_size: f64,
    /// Maximum tree depth.
    pub max_depth: i64,
    /// Tune the step size by dual averaging during warmup.
    pub adapt_step_size: bool,
    /// Estimate a diagonal metric from warmup draws.
    pub adapt_metric: bool,
    /// The mean acceptance probability step-size adaptation aims for.
    pub target_accept: f64,
}

/// Counts of gradient evaluations made through [`logp_grad()`] with one [`Shared`].
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct GradientCounts {
    /// Calls of the batched kernel (or of the scalar form).
    pub calls: u64,
    /// Rows evaluated: one gradient evaluation each.
    pub rows: u64,
    /// Rows of each call, in order: how many chains each batched gradient served over the run
    /// (4 bytes per call).
    pub rows_per_call: Vec<u32>,
}

/// The context of the sampler's `#[autobatch]` functions: the target, the run's settings, and
/// the gradient evaluations made so far.
pub struct Shared {
    target: Arc<dyn Target>,
    /// The settings every chain reads.
    pub settings: ChainSettings,
    counts: Mutex<GradientCounts>,
}

impl Shared {
    /// The context of a run of `target` with `settings`.
    pub fn new(target: Arc<dyn Target>, settings: ChainSettings) -> Self {
        Shared {
            target,
            settings,
            counts: Mutex::new(GradientCounts::default()),
        }
    }

    /// The target.
    pub fn target(&self) -> &dyn Target {
        self.target.as_ref()
    }

    /// The gradient evaluations made through this context so far.
    pub fn gradients(&self) -> GradientCounts {
        self.counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Counts one gradient call of `rows` rows.
    fn count(&self, rows: usize) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        counts.calls += 1;
        counts.rows += rows as u64;
        counts
            .rows_per_call
            .push(u32::try_from(rows).unwrap_or(u32::MAX));
    }
}

/// The log density and gradient of the context's target at `q`: the scalar form runs the
/// batched form on a one-row matrix, so the two agree bit for bit for row-wise targets.
#[primitive(batched = logp_grad_batch)]
pub fn logp_grad(shared: &Shared, q: &Vector) -> (f64, Vector) {
    let row = ArrayView2::from_shape((1, q.len()), q.as_slice()).expect("a row of q.len()");
    let (logp, grad) = logp_grad_batch(shared, row);
    (logp[0], Vector::from(grad.row(0).to_vec()))
}

/// The batched form of [`logp_grad()`]: every active chain's position is a row of `q`.
pub fn logp_grad_batch(shared: &Shared, q: ArrayView2<f64>) -> (Array1<f64>, Array2<f64>) {
    shared.count(q.nrows());
    shared.target.logp_grad(q)
}

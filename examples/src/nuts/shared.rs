//! What every chain of a run shares, handed once to the autobatched call as its context
//! ([`Shared`]): the target, which the batched [`logp_grad()`] primitive evaluates for all
//! active chains at once, the settings every chain reads ([`ChainSettings`]), the count of
//! gradient evaluations, and the draw [`Sink`] the [`record()`] primitive writes to. Nothing
//! here is a per-chain column or a thread-local: the runtime hands the same `&Shared` to every
//! kernel call, on whatever thread runs it.

use super::record::{DrawStats, Recorded, Sink};
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

/// The context of the sampler's `#[autobatch]` functions: the target, the run's settings, the
/// gradient evaluations made so far, and where draws go (if anywhere).
pub struct Shared {
    target: Arc<dyn Target>,
    /// The settings every chain reads.
    pub settings: ChainSettings,
    counts: Mutex<GradientCounts>,
    sink: Option<Sink>,
}

impl Shared {
    /// The context of a run of `target` with `settings`, recording no draws ([`record()`]
    /// does nothing) until given a sink with [`recording`](Self::recording).
    pub fn new(target: Arc<dyn Target>, settings: ChainSettings) -> Self {
        Shared {
            target,
            settings,
            counts: Mutex::new(GradientCounts::default()),
            sink: None,
        }
    }

    /// This context, recording draws into `sink` (in place of any sink it had).
    pub fn recording(self, sink: Sink) -> Self {
        Shared {
            sink: Some(sink),
            ..self
        }
    }

    /// What the sink recorded, if this context has one.
    pub fn into_recorded(self) -> Option<Recorded> {
        self.sink.map(Sink::into_recorded)
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

/// Records draw number `draw` of chain `chain` with its statistics into the context's sink (a
/// negative `draw` is a warmup transition, `-1` the last: stored only if the sink keeps warmup
/// that far back, and always counted towards progress). Returns whether it was stored; without
/// a sink (e.g. a plain call of the scalar sampler with [`Shared::new`]) this does nothing. A
/// transition recorded again (a re-run of the batch under lane isolation) is not stored or
/// counted twice (see [`Sink::record`]).
///
/// # Panics
/// If `chain` or `draw` is outside the sink's shape (the runtime reports it as a kernel error).
#[primitive]
#[allow(clippy::too_many_arguments)]
pub fn record(
    shared: &Shared,
    chain: i64,
    draw: i64,
    q: &Vector,
    depth: i64,
    n_leapfrog: i64,
    divergent: bool,
    accept: f64,
    step_size: f64,
    lp: f64,
    energy: f64,
) -> bool {
    let stats = DrawStats {
        depth,
        n_leapfrog,
        divergent,
        accept,
        step_size,
        lp,
        energy,
    };
    shared
        .sink
        .as_ref()
        .is_some_and(|sink| sink.record(chain, draw, q, stats))
}

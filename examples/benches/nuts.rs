//! Benchmark (not a test): NUTS like for like against nuts-rs, on the 100-d Gaussian
//! (`Sigma_ij = 0.9^|i-j|`) and on the logistic regression of the `nuts` binary (1,000 rows x
//! 25 features): the same identity metric (nuts-rs's transformation hooks implemented as the
//! identity map), step size, initial points, maximum depth (10) and divergence threshold, no
//! warmup, 200 draws, at 10, 100 and 1,000 chains. Gradient evaluations per second and
//! min-ESS (bulk, over coordinates) per second for the autobatched sampler (full VM and
//! stackless) and for nuts-rs, on one thread and on every core (both interpreters on all
//! threads, nuts-rs's multi-chain sampler); both samplers' trees; the GEMM lower bound for the
//! Gaussian; where the autobatched run's time went; and how each interpreter's speed depends on
//! the shard size. Every one-thread figure (both interpreters, nuts-rs, the GEMM bound) is the
//! faster of two timings, one before the runs on every thread and one after them (both printed):
//! one core of a shared machine runs at one of two speeds, the slower whenever the other core
//! is busy too.
//!
//! Run: `cargo bench -p autobatch-examples --bench nuts` (`NUTS_BENCH_CHAINS=10,100` chooses
//! the chain counts, `NUTS_BENCH_TARGETS=gaussian` or `logistic` one target,
//! `NUTS_BENCH_SWEEP=0` skips the shard-size sweep). Each row also gives the process's CPU
//! seconds: on a machine shared with other work, a one-thread run's CPU time is the steadier
//! figure.
//!
//! # What makes the comparison fair
//!
//! - **The same sampler settings.** nuts-rs runs `FlowNutsSettings` with the identity
//!   transformation and Euclidean kinetic energy (the identity metric), no tuning, and
//!   `StepSizeAdaptMethod::Fixed` (no initial step-size search, no dual averaging): every
//!   nuts-rs draw is checked to report no tuning and the step size given. The identity hooks
//!   are not a slow path: they copy two 100-value slices per gradient.
//! - **The best one-point gradient for nuts-rs.** A one-chain sampler evaluates one point at
//!   a time; it gets the same density computed with matrix-vector products on the point
//!   ([`PointDensity`]). An earlier version called the batched `Target::logp_grad` on a
//!   one-row matrix: a general matrix product that packs the whole matrix operand on every
//!   call and allocates its results. nuts-rs then ran at 0.199 M gradients/s on the Gaussian
//!   (one thread, quiet machine), against 0.518 in an earlier run with a matrix-vector
//!   gradient; with this one it does about 0.53 M gradients per CPU second.
//! - **The same algebra on the logistic regression, and the faster math's share.** Both
//!   gradients take one `exp` and one `ln_1p` per observation (`t = exp(-|eta|)` gives the
//!   softplus and the sigmoid). The autobatched target computes them with the vectorised
//!   polynomials of `autobatch_runtime::math`, which need no batch: nuts-rs's multi-chain
//!   sampler also runs with the same polynomials per point (`nuts-rs, runtime math`), and the
//!   `gain` line splits the autobatched sampler's gain over nuts-rs into the faster math's
//!   share and batching's (GEMMs instead of matrix-vector products, every chain in one call).
//! - **nuts-rs's threads.** Its multi-chain sampler runs chains on worker threads only with
//!   its `parallel` feature (a default feature, which this crate's `default-features = false`
//!   had turned off): without it, every chain ran on one thread whatever the thread count.
//! - **What cannot be the same: tree sizes.** nuts-rs 0.19 stops a trajectory when the
//!   *position* difference between its ends turns against the velocity at either end
//!   (`is_turning` in its `dynamics/transformed_hamiltonian.rs`); the autobatched sampler, as
//!   Stan does, checks the *sum of momenta* over the trajectory (the generalised criterion,
//!   `sampler.rs`), which counts the momenta at both ends in full where the position
//!   difference counts half of each, and so turns back a little later. Both are valid NUTS.
//!   With the same step size, depth limit and starting points the trees are the same on the
//!   logistic regression (14.9 leapfrog steps per draw on both sides, mean depth 3.97) but
//!   longer for the autobatched sampler on the Gaussian (114 against 90 steps per draw, mean
//!   depth 6.5 against 6.0; the `trees` line prints both), where its draws are also less
//!   correlated (bulk ESS per draw about 1.4 times nuts-rs's). So gradients per second compare
//!   the cost of a gradient with each sampler's work around it, and ESS per second what a
//!   user gets for the time.

use autobatch_examples::diagnostics::bulk_ess;
use autobatch_examples::nuts::sampler::chain;
use autobatch_examples::nuts::{
    chain_key, initial_point, ChainSettings, CorrelatedGaussian, LogisticRegression, Shared, Sink,
    Target,
};
use autobatch_runtime::ir::{KernelRef, Op, PrimOp};
use autobatch_runtime::ndarray::linalg::{general_mat_mul, general_mat_vec_mul};
use autobatch_runtime::ndarray::{s, Array1, Array2, Array3, ArrayView1, ArrayViewMut1, Zip};
use autobatch_runtime::{available_threads, linalg, math, Config, Mode, Stats};
use nuts_rs::{
    Chain, CpuLogpFunc, CpuMath, CpuMathError, FlowNutsSettings, HasDims, HashMapConfig,
    HashMapValue, InitPositionError, KineticEnergyKind, LogpError, Model, Sampler,
    SamplerWaitResult, StepSizeAdaptMethod,
};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const DRAWS: usize = 200;
const SEED: u64 = 42;
const MAX_DEPTH: u64 = 10;
const RADIUS: f64 = 2.0;
/// Both samplers call a transition divergent past this energy error.
const MAX_ENERGY_ERROR: f64 = 1000.0;

/// One sampler run: gradient evaluations, seconds, the draws `[chains, draws, dim]`, and its
/// trees: mean depth (doublings) and mean leapfrog steps per draw, where the sampler reports
/// them.
struct Measured {
    grads: u64,
    secs: f64,
    /// CPU seconds of the whole process over the run (all its threads).
    cpu: f64,
    draws: Array3<f64>,
    depth: Option<f64>,
    steps: Option<f64>,
}

/// Wall and process CPU time since a start: on a machine shared with other work, CPU time is
/// the steadier measure of a one-thread run's cost.
struct Clock {
    wall: Instant,
    cpu: f64,
}

impl Clock {
    fn start() -> Self {
        Clock {
            cpu: process_cpu_seconds(),
            wall: Instant::now(),
        }
    }

    /// Wall seconds and CPU seconds since the start.
    fn stop(&self) -> (f64, f64) {
        let wall = self.wall.elapsed().as_secs_f64();
        (wall, process_cpu_seconds() - self.cpu)
    }
}

/// User and system CPU time of this process, from `/proc/self/stat` (Linux, in clock ticks of
/// 1/100 s); NaN elsewhere.
fn process_cpu_seconds() -> f64 {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else {
        return f64::NAN;
    };
    // Fields after the command name (which may hold spaces): state is the first, utime and
    // stime the 12th and 13th.
    let Some((_, rest)) = stat.rsplit_once(')') else {
        return f64::NAN;
    };
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|f| f.parse::<f64>().ok());
    match (ticks(11), ticks(12)) {
        (Some(user), Some(system)) => (user + system) / 100.0,
        _ => f64::NAN,
    }
}

impl Measured {
    fn rate(&self) -> f64 {
        self.grads as f64 / self.secs
    }

    /// The smallest bulk ESS over coordinates.
    fn min_ess(&self) -> f64 {
        (0..self.draws.dim().2)
            .map(|d| bulk_ess(self.draws.slice(s![.., .., d])))
            .fold(f64::INFINITY, f64::min)
    }
}

/// The autobatched sampler on `threads` threads (`shard_size` as `Config::shard_size`), run as
/// `nuts::sample_chains` runs it but with the configuration given; returns the measurement
/// and the run's statistics.
fn autobatched<T: Target + Clone + Send + Sync + 'static>(
    target: &T,
    step: f64,
    chains: usize,
    (mode, threads): (Mode, usize),
    shard_size: Option<usize>,
) -> (Measured, Stats) {
    let dim = target.dim();
    let init = Array2::from_shape_vec(
        (chains, dim),
        (0..chains as u64)
            .flat_map(|c| initial_point(SEED, c, dim, RADIUS))
            .collect(),
    )
    .expect("chains x dim values");
    let keys = Array1::from_iter((0..chains as u64).map(|c| chain_key(SEED, c)));
    let rows = Array1::from_iter(0..chains as i64);
    // Kernel times measured, for where the time went: two clock reads per kernel call, next
    // to a block execution's work for hundreds of 100-dimensional chains.
    let config = Config {
        threads,
        shard_size,
        time_kernels: true,
        ..Config::with_mode(mode)
    };
    let shared = Shared::new(
        Arc::new(target.clone()),
        ChainSettings {
            warmup: 0,
            draws: DRAWS as i64,
            step_size: step,
            max_depth: MAX_DEPTH as i64,
            adapt_step_size: false,
            adapt_metric: false,
            target_accept: 0.8,
        },
    )
    .recording(Sink::new((chains, DRAWS, dim), 0));
    let clock = Clock::start();
    let result = chain::batch_with_stats(&shared, init.view(), rows.view(), keys.view(), &config);
    let counts = shared.gradients();
    let (secs, cpu) = clock.stop();
    let recorded = shared.into_recorded().expect("the sink given above");
    let (_, stats) = result.expect("the sampler runs");
    let mean = |a: &Array2<i64>| a.mapv(|x| x as f64).mean();
    let measured = Measured {
        grads: counts.rows,
        secs,
        cpu,
        depth: mean(&recorded.draws.depth),
        steps: mean(&recorded.draws.n_leapfrog),
        draws: recorded.draws.q,
    };
    (measured, stats)
}

/// A density evaluated at one point at a time, as a one-chain sampler evaluates it: the
/// same log density and gradient as the target's `logp_grad`, computed with
/// matrix-vector products on the point's own slice (no allocation). Calling `logp_grad` on a
/// one-row matrix instead runs a general matrix product that packs the whole `[dim, dim]`
/// (or `[rows, dim]`) operand on every call and allocates its results, a cost no one-chain
/// sampler would pay.
trait PointDensity: Send + Sync {
    /// The number of coordinates.
    fn dim(&self) -> usize;
    /// Scratch values one evaluation needs.
    fn scratch_len(&self) -> usize;
    /// The log density at `q`, its gradient written to `grad`.
    fn eval(&self, q: &[f64], grad: &mut [f64], scratch: &mut [f64]) -> f64;
}

/// The Gaussian at one point: `grad = -P q` (a dense matrix-vector product with the same
/// precision matrix the batched gradient multiplies by), `logp = q . grad / 2`.
struct GaussianPoint {
    precision: Array2<f64>,
}

impl PointDensity for GaussianPoint {
    fn dim(&self) -> usize {
        self.precision.nrows()
    }

    fn scratch_len(&self) -> usize {
        0
    }

    fn eval(&self, q: &[f64], grad: &mut [f64], _scratch: &mut [f64]) -> f64 {
        let q = ArrayView1::from(q);
        let mut g = ArrayViewMut1::from(grad);
        general_mat_vec_mul(-1.0, &self.precision, &q, 0.0, &mut g);
        0.5 * q.dot(&g)
    }
}

/// How [`LogisticPoint`] computes each observation's softplus and sigmoid.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Elementwise {
    /// The standard library's `exp` and `ln_1p`, one element at a time: what a one-point
    /// sampler's user writes.
    Std,
    /// The autobatched target's polynomials (`autobatch_runtime::math`) over the point's
    /// observations, with `X^T y` folded in as the batched target does: what a one-point
    /// sampler could have without batching, so the bench can tell the faster `exp`'s share of
    /// the gain from batching's.
    Polynomial,
}

/// The logistic regression at one point: `eta = X q`, one `t = exp(-|eta|)` per observation
/// giving both its softplus and its sigmoid (the batched target's algebra), the
/// log-likelihood and residuals `y - sigmoid(eta)`, then `grad = -q + X' r` with `X'` stored
/// row-major so both products read contiguous rows.
struct LogisticPoint {
    x: Array2<f64>,
    xt: Array2<f64>,
    y: Array1<f64>,
    /// `X^T y`, for [`Elementwise::Polynomial`].
    xty: Array1<f64>,
    elementwise: Elementwise,
}

impl LogisticPoint {
    fn new(target: &LogisticRegression, elementwise: Elementwise) -> Self {
        let x = target.features().clone();
        let y = target.outcomes().clone();
        LogisticPoint {
            xt: x.t().as_standard_layout().into_owned(),
            xty: x.t().dot(&y),
            x,
            y,
            elementwise,
        }
    }
}

impl PointDensity for LogisticPoint {
    fn dim(&self) -> usize {
        self.x.ncols()
    }

    fn scratch_len(&self) -> usize {
        2 * self.x.nrows()
    }

    fn eval(&self, q: &[f64], grad: &mut [f64], scratch: &mut [f64]) -> f64 {
        let (eta, softplus) = scratch.split_at_mut(self.x.nrows());
        let q = ArrayView1::from(q);
        let mut g = ArrayViewMut1::from(grad);
        let mut eta = ArrayViewMut1::from(eta);
        general_mat_vec_mul(1.0, &self.x, &q, 0.0, &mut eta);
        let mut logp = -0.5 * q.dot(&q);
        match self.elementwise {
            Elementwise::Std => {
                for (e, &y) in eta.iter_mut().zip(&self.y) {
                    let t = (-e.abs()).exp();
                    let softplus = e.max(0.0) + t.ln_1p();
                    let sigmoid = if *e >= 0.0 {
                        1.0 / (1.0 + t)
                    } else {
                        t / (1.0 + t)
                    };
                    logp += y * *e - softplus;
                    *e = y - sigmoid;
                }
                g.assign(&q.mapv(|b| -b));
                general_mat_vec_mul(1.0, &self.xt, &eta, 1.0, &mut g);
            }
            Elementwise::Polynomial => {
                let eta = eta.into_slice().expect("a slice");
                math::softplus_sigmoid_in_place(eta, softplus).expect("equal lengths");
                logp += q.dot(&self.xty) - softplus.iter().sum::<f64>();
                Zip::from(&mut g)
                    .and(&self.xty)
                    .and(&q)
                    .for_each(|g, &xty, &q| *g = xty - q);
                general_mat_vec_mul(-1.0, &self.xt, &ArrayView1::from(&*eta), 1.0, &mut g);
            }
        }
        logp
    }
}

/// A target as nuts-rs sees it: a [`PointDensity`] counting evaluations, with the identity
/// as its transformation (so its metric is the identity, as the autobatched sampler's is
/// without metric adaptation). Each clone (one per chain) has its own scratch space.
#[derive(Clone)]
struct NutsRsTarget {
    density: Arc<dyn PointDensity>,
    count: Arc<AtomicU64>,
    scratch: Vec<f64>,
}

impl NutsRsTarget {
    fn new(density: Arc<dyn PointDensity>) -> Self {
        NutsRsTarget {
            scratch: vec![0.0; density.scratch_len()],
            density,
            count: Arc::new(AtomicU64::new(0)),
        }
    }
}

#[derive(Debug, thiserror::Error)]
enum NoError {}

impl LogpError for NoError {
    fn is_recoverable(&self) -> bool {
        false
    }
}

impl HasDims for NutsRsTarget {
    fn dim_sizes(&self) -> HashMap<String, u64> {
        let dim = self.density.dim() as u64;
        HashMap::from([
            ("unconstrained_parameter".to_string(), dim),
            ("dim".to_string(), dim),
        ])
    }
}

impl NutsRsTarget {
    /// The log density at `position`, its gradient written to `grad`.
    fn eval(&mut self, position: &[f64], grad: &mut [f64]) -> f64 {
        self.count.fetch_add(1, Ordering::Relaxed);
        self.density.eval(position, grad, &mut self.scratch)
    }
}

impl CpuLogpFunc for NutsRsTarget {
    type LogpError = NoError;
    type FlowParameters = ();
    type ExpandedVector = Vec<f64>;

    fn dim(&self) -> usize {
        self.density.dim()
    }

    fn logp(&mut self, position: &[f64], grad: &mut [f64]) -> Result<f64, NoError> {
        Ok(self.eval(position, grad))
    }

    fn expand_vector<R: nuts_rs::rand::Rng + ?Sized>(
        &mut self,
        _rng: &mut R,
        array: &[f64],
    ) -> Result<Vec<f64>, CpuMathError> {
        Ok(array.to_vec())
    }

    fn inv_transform_normalize(
        &mut self,
        _params: &(),
        untransformed_position: &[f64],
        untransformed_gradient: &[f64],
        transformed_position: &mut [f64],
        transformed_gradient: &mut [f64],
    ) -> Result<f64, NoError> {
        transformed_position.copy_from_slice(untransformed_position);
        transformed_gradient.copy_from_slice(untransformed_gradient);
        Ok(0.0)
    }

    fn init_from_untransformed_position(
        &mut self,
        _params: &(),
        untransformed_position: &[f64],
        untransformed_gradient: &mut [f64],
        transformed_position: &mut [f64],
        transformed_gradient: &mut [f64],
        _clip: Option<f64>,
    ) -> Result<(f64, f64), NoError> {
        let logp = self.eval(untransformed_position, untransformed_gradient);
        transformed_position.copy_from_slice(untransformed_position);
        transformed_gradient.copy_from_slice(untransformed_gradient);
        Ok((logp, 0.0))
    }

    fn init_from_transformed_position(
        &mut self,
        _params: &(),
        untransformed_position: &mut [f64],
        untransformed_gradient: &mut [f64],
        transformed_position: &[f64],
        transformed_gradient: &mut [f64],
        _clip: Option<f64>,
    ) -> Result<(f64, f64), NoError> {
        untransformed_position.copy_from_slice(transformed_position);
        let logp = self.eval(untransformed_position, untransformed_gradient);
        transformed_gradient.copy_from_slice(untransformed_gradient);
        Ok((logp, 0.0))
    }

    fn update_transformation<'a, R: nuts_rs::rand::Rng + ?Sized>(
        &'a mut self,
        _rng: &mut R,
        _untransformed_positions: impl ExactSizeIterator<Item = &'a [f64]>,
        _untransformed_gradients: impl ExactSizeIterator<Item = &'a [f64]>,
        _untransformed_logp: impl ExactSizeIterator<Item = &'a f64>,
        _params: &'a mut (),
    ) -> Result<(), NoError> {
        Ok(())
    }

    fn init_transformation<R: nuts_rs::rand::Rng + ?Sized>(
        &mut self,
        _rng: &mut R,
        _untransformed_position: &[f64],
        _untransformed_gradient: &[f64],
        _chain: u64,
    ) -> Result<(), NoError> {
        Ok(())
    }

    fn new_transformation<R: nuts_rs::rand::Rng + ?Sized>(
        &mut self,
        _rng: &mut R,
        _dim: usize,
        _chain: u64,
    ) -> Result<(), NoError> {
        Ok(())
    }

    fn transformation_id(&self, _params: &()) -> Result<i64, NoError> {
        Ok(0)
    }
}

/// nuts-rs's settings matching the autobatched run: plain (Euclidean) leapfrog, fixed step
/// size `step`, no tuning, no gradient clipping, the same depth and divergence threshold.
fn nuts_rs_settings(chains: usize, step: f64) -> FlowNutsSettings {
    let mut settings = FlowNutsSettings {
        num_tune: 0,
        num_draws: DRAWS as u64,
        maxdepth: MAX_DEPTH,
        mindepth: 0,
        max_energy_error: MAX_ENERGY_ERROR,
        trajectory_kind: KineticEnergyKind::Euclidean,
        gradient_clipping: None,
        check_turning: true,
        target_integration_time: None,
        extra_doublings: 0,
        walnuts: None,
        max_leapfrog_steps: None,
        num_chains: chains,
        seed: SEED,
        store_unconstrained: true,
        ..FlowNutsSettings::default()
    };
    // `Fixed`: no initial step-size search and no adaptation, the step size stays `step`.
    let step_size = &mut settings.adapt_options.step_size_settings;
    step_size.initial_step = step;
    step_size.adapt_options.method = StepSizeAdaptMethod::Fixed(step);
    step_size.jitter = None;
    settings
}

/// nuts-rs on one thread, one chain after another from the autobatched run's initial points.
/// Checks on every draw that nothing adapts: no tuning, the step size stays `step`.
fn nuts_rs_one_thread(density: &Arc<dyn PointDensity>, step: f64, chains: usize) -> Measured {
    use nuts_rs::rand::SeedableRng;
    use nuts_rs::Settings as _;
    let settings = nuts_rs_settings(chains, step);
    let logp = NutsRsTarget::new(density.clone());
    let dim = density.dim();
    let mut draws = Array3::zeros((chains, DRAWS, dim));
    let mut steps = 0;
    let mut rng = nuts_rs::rand::rngs::ChaCha8Rng::seed_from_u64(SEED);
    let clock = Clock::start();
    for c in 0..chains {
        let math = CpuMath::new(logp.clone());
        let mut sampler = settings
            .new_chain(c as u64, math, &mut rng)
            .expect("nuts-rs builds a chain");
        sampler
            .set_position(&initial_point(SEED, c as u64, dim, RADIUS))
            .expect("a finite start");
        for d in 0..DRAWS {
            let (q, progress) = sampler.draw().expect("nuts-rs draws");
            assert!(
                !progress.tuning && progress.step_size == step,
                "nuts-rs adapts: tuning {}, step size {}",
                progress.tuning,
                progress.step_size
            );
            steps += progress.num_steps;
            draws
                .slice_mut(s![c, d, ..])
                .assign(&Array1::from(black_box(q).to_vec()));
        }
    }
    let (secs, cpu) = clock.stop();
    Measured {
        grads: logp.count.load(Ordering::Relaxed),
        secs,
        cpu,
        draws,
        depth: None,
        steps: Some(steps as f64 / (chains * DRAWS) as f64),
    }
}

/// nuts-rs's model for its multi-chain sampler: the target and the initial points.
struct NutsRsModel {
    logp: NutsRsTarget,
}

impl Model for NutsRsModel {
    type Math = CpuMath<NutsRsTarget>;

    fn math<R: nuts_rs::rand::Rng + ?Sized>(
        self: Arc<Self>,
        _rng: &mut R,
    ) -> anyhow::Result<Self::Math> {
        Ok(CpuMath::new(self.logp.clone()))
    }

    fn init_position<R: nuts_rs::rand::Rng + ?Sized>(
        &self,
        _rng: &mut R,
        chain_id: u64,
        position: &mut [f64],
    ) -> Result<(), InitPositionError> {
        position.copy_from_slice(&initial_point(SEED, chain_id, position.len(), RADIUS));
        Ok(())
    }
}

/// The mean over every chain's trace of the statistic `name` (`None` if nuts-rs did not
/// store it as integers).
fn trace_mean(traces: &[nuts_rs::HashMapResult], name: &str) -> Option<f64> {
    let (mut sum, mut n) = (0.0, 0usize);
    for trace in traces {
        let values: Vec<f64> = match trace.stats.get(name)? {
            HashMapValue::U64(v) => v.iter().map(|&x| x as f64).collect(),
            HashMapValue::I64(v) => v.iter().map(|&x| x as f64).collect(),
            _ => return None,
        };
        sum += values.iter().sum::<f64>();
        n += values.len();
    }
    (n > 0).then(|| sum / n as f64)
}

/// nuts-rs's multi-chain sampler on `threads` threads (its worker threads take the chains in
/// turn; this needs nuts-rs's `parallel` feature, without which it runs every chain on one
/// thread whatever `threads` says).
fn nuts_rs_threads(
    density: &Arc<dyn PointDensity>,
    step: f64,
    chains: usize,
    threads: usize,
) -> Measured {
    let logp = NutsRsTarget::new(density.clone());
    let count = logp.count.clone();
    let dim = density.dim();
    let clock = Clock::start();
    let sampler = Sampler::new(
        Arc::new(NutsRsModel { logp }),
        nuts_rs_settings(chains, step),
        HashMapConfig::new(),
        threads,
        None,
    )
    .expect("nuts-rs starts its sampler");
    let traces = match sampler.wait_timeout(Duration::from_secs(24 * 3600)) {
        SamplerWaitResult::Trace(traces) => traces,
        _ => panic!("nuts-rs did not finish"),
    };
    let (secs, cpu) = clock.stop();
    let mut draws = Array3::zeros((chains, DRAWS, dim));
    for (c, trace) in traces.iter().enumerate() {
        let Some(HashMapValue::F64(q)) = trace.stats.get("unconstrained_draw") else {
            panic!("nuts-rs stores the draws when asked");
        };
        let q = Array2::from_shape_vec((DRAWS, dim), q.clone()).expect("draws x dim");
        draws.slice_mut(s![c, .., ..]).assign(&q);
    }
    Measured {
        grads: count.load(Ordering::Relaxed),
        secs,
        cpu,
        draws,
        depth: trace_mean(&traces, "depth"),
        steps: trace_mean(&traces, "n_steps"),
    }
}

/// The lower bound on the Gaussian: `grads` gradient evaluations as all-lanes-busy
/// `[chains, 100] x [100, 100]` products, with whichever of two matrix products is faster at
/// that size: a general one (`matrixmultiply`, which packs both operands once per call) and
/// the target's own ([`linalg::rows_times`], which reads them where they lie). Returns the
/// faster with its name, and the other's rate in gradients per second.
fn gemm_bound(target: &CorrelatedGaussian, chains: usize, grads: u64) -> (Measured, &str, f64) {
    let dim = target.dim();
    let precision = target.precision().clone();
    let q = Array2::from_shape_fn((chains, dim), |(i, j)| ((i * dim + j) % 7) as f64 * 0.1);
    let calls = grads.div_ceil(chains as u64);
    let time = |product: &mut dyn FnMut()| {
        let clock = Clock::start();
        for _ in 0..calls {
            product();
        }
        let (secs, cpu) = clock.stop();
        Measured {
            grads: calls * chains as u64,
            secs,
            cpu,
            draws: Array3::zeros((0, 0, 0)),
            depth: None,
            steps: None,
        }
    };
    // The general product writes into one result array for every call, unzeroed (`beta` 0);
    // `rows_times` returns a new one each call, as the target uses it.
    let mut g = Array2::zeros((chains, dim));
    let general = time(&mut || {
        general_mat_mul(-1.0, &q, &precision, 0.0, &mut g);
        black_box(&g);
    });
    let rows = time(&mut || {
        black_box(
            linalg::rows_times(q.view(), precision.view()).expect("q has the precision's width"),
        );
    });
    if rows.rate() > general.rate() {
        let other = general.rate();
        (rows, "rows_times", other)
    } else {
        let other = rows.rate();
        (general, "matrixmultiply", other)
    }
}

/// One table row: sampler, threads, gradients, seconds, rates, and its ratio to nuts-rs on
/// the same threads.
fn row(name: &str, threads: &str, m: &Measured, ess: f64, nuts_rs: Option<&Measured>) {
    let ratio = nuts_rs.map_or(String::new(), |r| {
        format!("{:>6.2}x {:>6.2}x", m.rate() / r.rate(), {
            let theirs = r.min_ess() / r.secs;
            (ess / m.secs) / theirs
        })
    });
    println!(
        "  {name:<26} {threads:>7} {:>10} {:>8.2} {:>8.2} {:>8.3} {:>8.0} {:>9.1} {ratio}",
        m.grads,
        m.secs,
        m.cpu,
        m.rate() / 1e6,
        ess,
        ess / m.secs,
    );
}

/// Where an autobatched run's time went, as fractions of the process's CPU time (the kernel
/// times are summed over the worker threads, so wall time would overcount with several).
fn split(name: &str, m: &Measured, stats: &Stats) {
    let batched = stats.batched_kernel_time.as_secs_f64() / m.cpu;
    let lane_wise = stats.lane_kernel_time.as_secs_f64() / m.cpu;
    println!(
        "  {name}: {:.0}% batched gradient kernel, {:.0}% lane-wise kernels, {:.0}% interpreter \
         (thread time over CPU time); {} shards, {} steps, {:.1} vector rows per chain at most",
        100.0 * batched,
        100.0 * lane_wise,
        100.0 * (1.0 - batched - lane_wise),
        stats.shards,
        stats.steps,
        stats.vector_rows as f64 / m.draws.dim().0 as f64
    );
    // The lane-wise kernels that took the most time, by the source they were made from, with
    // their time per lane computed (what a change to a kernel's loop moves).
    let labels = kernel_sources();
    let mut kernels: Vec<(usize, f64)> = (stats.kernels.iter().enumerate())
        .map(|(k, s)| (k, s.time.as_secs_f64() / m.cpu))
        .filter(|&(k, _)| labels.get(k).is_some_and(|l| l != "logp_grad"))
        .collect();
    kernels.sort_by(|a, b| b.1.total_cmp(&a.1));
    for (k, share) in kernels.into_iter().take(3) {
        let s = &stats.kernels[k];
        let per_lane = s.time.as_secs_f64() * 1e9 / s.lanes.max(1) as f64;
        println!(
            "    {:>4.1}%  {per_lane:>6.1} ns a lane  {}",
            100.0 * share,
            labels[k]
        );
    }
}

/// The first 80 characters of the source each of the sampler's kernels was made from, by
/// kernel id.
fn kernel_sources() -> Vec<String> {
    let program = chain::executable().expect("the sampler builds").source();
    let mut labels = Vec::new();
    for op in program.blocks.iter().flat_map(|b| &b.ops) {
        if let Op::Prim(PrimOp {
            kernel: KernelRef::User(k),
            source,
            ..
        }) = op
        {
            if labels.len() <= k.index() {
                labels.resize(k.index() + 1, String::new());
            }
            let one_line = source.split_whitespace().collect::<Vec<_>>().join(" ");
            labels[k.index()] = one_line.chars().take(80).collect();
        }
    }
    labels
}

/// One sampler's trees: mean depth and mean leapfrog steps per draw, where it reports them.
fn trees(name: &str, m: &Measured) -> String {
    let show = |x: Option<f64>| x.map_or("-".to_string(), |x| format!("{x:.2}"));
    format!(
        "{name}: depth {}, {} steps per draw",
        show(m.depth),
        show(m.steps)
    )
}

/// Bits of chain 0's draws.
fn chain0(m: &Measured) -> Vec<u64> {
    m.draws
        .slice(s![0, .., ..])
        .iter()
        .map(|x| x.to_bits())
        .collect()
}

/// Every measurement of one target at one chain count.
fn compare<T: Target + Clone + Send + Sync + 'static>(
    target: &T,
    density: &Arc<dyn PointDensity>,
    polynomial: Option<&Arc<dyn PointDensity>>,
    step: f64,
    chains: usize,
    gaussian: Option<&CorrelatedGaussian>,
) {
    let all = available_threads();
    // Every one-thread figure (both interpreters, nuts-rs, the GEMM bound) is timed twice, once
    // before the runs on every thread and once after them, and the faster taken: one core of a
    // shared machine runs at one of two speeds, the slower whenever the other core is busy
    // too, so one timing of each would compare runs made at different speeds.
    let vm_first = autobatched(target, step, chains, (Mode::FullVm, 1), None);
    let sl_first = autobatched(target, step, chains, (Mode::Stackless, 1), None);
    let one_first = nuts_rs_one_thread(density, step, chains);
    let first_bound = gaussian.map(|g| gemm_bound(g, chains, vm_first.0.grads));
    let (vm_all, vm_all_stats) = autobatched(target, step, chains, (Mode::FullVm, all), None);
    let (sl_all, sl_all_stats) = autobatched(target, step, chains, (Mode::Stackless, all), None);
    let many = nuts_rs_threads(density, step, chains, all);
    let vm_second = autobatched(target, step, chains, (Mode::FullVm, 1), None);
    let sl_second = autobatched(target, step, chains, (Mode::Stackless, 1), None);
    let one_second = nuts_rs_one_thread(density, step, chains);
    let timings = [
        ("full VM", vm_first.0.rate(), vm_second.0.rate()),
        ("stackless", sl_first.0.rate(), sl_second.0.rate()),
        ("nuts-rs", one_first.rate(), one_second.rate()),
    ];
    for (name, (first, second)) in [
        ("full VM", (&vm_first, &vm_second)),
        ("stackless", (&sl_first, &sl_second)),
    ] {
        assert_eq!(
            chain0(&first.0),
            chain0(&second.0),
            "chain 0: {name}, both timings"
        );
    }
    let (vm, vm_stats) = faster(vm_first, vm_second, |(m, _)| m.rate());
    let (sl, sl_stats) = faster(sl_first, sl_second, |(m, _)| m.rate());
    let one = faster(one_first, one_second, Measured::rate);
    assert_eq!(
        chain0(&vm),
        chain0(&vm_all),
        "chain 0: one thread == every thread"
    );
    assert_eq!(
        chain0(&sl),
        chain0(&sl_all),
        "chain 0: stackless on every thread"
    );
    assert_eq!(chain0(&vm), chain0(&sl), "chain 0: full VM == stackless");
    assert_eq!(vm.grads, sl.grads, "the same gradient evaluations");
    println!("{chains} chains, step {step}:");
    println!(
        "  {:<26} {:>7} {:>10} {:>8} {:>8} {:>8} {:>8} {:>9} {:>7} {:>7}",
        "sampler",
        "threads",
        "grads",
        "s",
        "cpu s",
        "M grad/s",
        "min ESS",
        "ESS/s",
        "grad/s",
        "ESS/s"
    );
    println!("  {:>100}", "(vs nuts-rs, same threads)");
    row("autobatched, full VM", "1", &vm, vm.min_ess(), Some(&one));
    row("autobatched, stackless", "1", &sl, sl.min_ess(), Some(&one));
    row("nuts-rs", "1", &one, one.min_ess(), None);
    row(
        "autobatched, full VM",
        &all.to_string(),
        &vm_all,
        vm_all.min_ess(),
        Some(&many),
    );
    row(
        "autobatched, stackless",
        &all.to_string(),
        &sl_all,
        sl_all.min_ess(),
        Some(&many),
    );
    row(
        "nuts-rs multi-chain",
        &all.to_string(),
        &many,
        many.min_ess(),
        None,
    );
    if let Some(polynomial) = polynomial {
        // The same sampler with the autobatched target's polynomials per point: the share of
        // the gain a one-point sampler gets from the faster elementwise math alone.
        let fast = nuts_rs_threads(polynomial, step, chains, all);
        row(
            "nuts-rs, runtime math",
            &all.to_string(),
            &fast,
            fast.min_ess(),
            Some(&many),
        );
        // The faster interpreter's gain, per wall second, then per CPU second (the steadier
        // figure on a shared machine).
        let (mode, best) = match sl_all.rate() > vm_all.rate() {
            true => ("stackless", &sl_all),
            false => ("full VM", &vm_all),
        };
        let per_cpu = |m: &Measured| m.grads as f64 / m.cpu;
        println!(
            "  gain over nuts-rs on {all} threads ({mode}), {:.2}x grad/s in all: {:.2}x from \
             the polynomial softplus/sigmoid (nuts-rs could use them too), {:.2}x from \
             batching; per CPU second {:.2}x = {:.2}x x {:.2}x",
            best.rate() / many.rate(),
            fast.rate() / many.rate(),
            best.rate() / fast.rate(),
            per_cpu(best) / per_cpu(&many),
            per_cpu(&fast) / per_cpu(&many),
            per_cpu(best) / per_cpu(&fast)
        );
    }
    if let (Some(gaussian), Some(first)) = (gaussian, first_bound) {
        let second = gemm_bound(gaussian, chains, vm.grads);
        let rates = (first.0.rate() / 1e6, second.0.rate() / 1e6);
        let (bound, by, other) = faster(first, second, |(m, _, _)| m.rate());
        println!(
            "  {:<26} {:>7} {:>10} {:>8.2} {:>8.2} {:>8.3}   one thread: full VM at {:.1}% of \
             it, stackless at {:.1}% (the faster product, {by}; the other {:.3}; the faster of \
             two timings, {:.3} and {:.3})",
            "GEMM bound",
            "1",
            bound.grads,
            bound.secs,
            bound.cpu,
            bound.rate() / 1e6,
            100.0 * vm.rate() / bound.rate(),
            100.0 * sl.rate() / bound.rate(),
            other / 1e6,
            rates.0,
            rates.1
        );
    }
    let timings: Vec<String> = timings
        .iter()
        .map(|(name, a, b)| format!("{name} {:.3} and {:.3}", a / 1e6, b / 1e6))
        .collect();
    println!(
        "  one-thread timings, M grad/s (the faster of each in the table): {}",
        timings.join("; ")
    );
    println!(
        "  trees: {}; {}; {}",
        trees("autobatched", &vm),
        trees("nuts-rs one thread", &one),
        trees("nuts-rs multi-chain", &many)
    );
    split("full VM, 1 thread", &vm, &vm_stats);
    split("stackless, 1 thread", &sl, &sl_stats);
    split(&format!("full VM, {all} threads"), &vm_all, &vm_all_stats);
    split(&format!("stackless, {all} threads"), &sl_all, &sl_all_stats);
    println!();
}

/// The faster of two timings of one run, by `rate`.
fn faster<M>(first: M, second: M, rate: impl Fn(&M) -> f64) -> M {
    match rate(&first) >= rate(&second) {
        true => first,
        false => second,
    }
}

/// Both interpreters on one thread at several shard sizes: the effect of cache-sized shards.
fn shard_sweep<T: Target + Clone + Send + Sync + 'static>(target: &T, step: f64, chains: usize) {
    let mut reference: Option<Vec<u64>> = None;
    for (mode, name) in [(Mode::FullVm, "full VM"), (Mode::Stackless, "stackless")] {
        println!("{name}, one thread, {chains} chains, by shard size (lanes per shard; auto = the default):");
        for size in [Some(64), Some(128), Some(256), Some(chains), None] {
            if size.is_some_and(|s| s > chains) {
                continue;
            }
            let (m, stats) = autobatched(target, step, chains, (mode, 1), size);
            let bits = chain0(&m);
            assert_eq!(
                *reference.get_or_insert_with(|| bits.clone()),
                bits,
                "chain 0's draws do not depend on the shard size or the interpreter"
            );
            let label = size.map_or(format!("auto, {} shards", stats.shards), |s| s.to_string());
            println!(
                "  {label:>14}: {:>7.3} M grad/s, {:.2} s ({:.2} s CPU), {:.0}% in the batched gradient, {} steps",
                m.rate() / 1e6,
                m.secs,
                m.cpu,
                100.0 * stats.batched_kernel_time.as_secs_f64() / m.secs,
                stats.steps
            );
        }
    }
    println!();
}

fn main() {
    let counts: Vec<usize> = std::env::var("NUTS_BENCH_CHAINS")
        .ok()
        .map(|v| v.split(',').filter_map(|c| c.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10, 100, 1000]);
    let targets = std::env::var("NUTS_BENCH_TARGETS").unwrap_or_default();
    let wants = |name: &str| targets.is_empty() || targets.contains(name);
    let sweep = std::env::var("NUTS_BENCH_SWEEP").map_or(true, |v| v != "0");
    println!(
        "NUTS, identity metric on both sides, no warmup, {DRAWS} draws, max depth {MAX_DEPTH}, \
         the same initial points; one run per configuration on every thread, the faster of two \
         on one thread; min ESS is the smallest bulk ESS over coordinates\n"
    );
    let gaussian = CorrelatedGaussian::new(100, 0.9);
    let logistic = LogisticRegression::synthetic(1000, 25, 1);
    if wants("gaussian") {
        println!("== {} ==", gaussian.name());
        let density: Arc<dyn PointDensity> = Arc::new(GaussianPoint {
            precision: gaussian.precision().clone(),
        });
        for &chains in &counts {
            compare(&gaussian, &density, None, 0.1, chains, Some(&gaussian));
        }
        if let Some(&largest) = counts.iter().max().filter(|_| sweep) {
            shard_sweep(&gaussian, 0.1, largest);
        }
    }
    if wants("logistic") {
        println!("== {} ==", logistic.name());
        let density: Arc<dyn PointDensity> =
            Arc::new(LogisticPoint::new(&logistic, Elementwise::Std));
        let polynomial: Arc<dyn PointDensity> =
            Arc::new(LogisticPoint::new(&logistic, Elementwise::Polynomial));
        for &chains in &counts {
            compare(&logistic, &density, Some(&polynomial), 0.1, chains, None);
        }
    }
}

//! Benchmark (not a test): NUTS on the 100-d Gaussian (`Sigma_ij = 0.9^|i-j|`), fixed step size
//! 0.1, no warmup, unit metric, 200 draws, max depth 10, one thread, at 10, 100 and 1,000
//! chains: the autobatched sampler (full VM and stackless) vs the same scalar functions looped
//! over chains vs nuts-rs vs the GEMM lower bound, in gradient evaluations per second.
//! Run: `cargo bench -p autobatch-examples --bench nuts` (`NUTS_BENCH_CHAINS=10,100` to choose
//! the chain counts).

use autobatch_examples::nuts::record::with_sink;
use autobatch_examples::nuts::sampler::chain;
use autobatch_examples::nuts::{
    chain_key, initial_point, sample, CorrelatedGaussian, Settings, Shared,
};
use autobatch_runtime::ndarray::{linalg::general_mat_mul, s, Array2};
use autobatch_runtime::{Mode, Vector};
use nuts_rs::{Chain, CpuLogpFunc, CpuMath, CpuMathError, DiagNutsSettings, HasDims, LogpError};
use std::collections::HashMap;
use std::hint::black_box;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

const DIM: usize = 100;
const DRAWS: usize = 200;
const STEP: f64 = 0.1;
const SEED: u64 = 42;

fn settings(chains: usize, mode: Mode) -> Settings {
    Settings {
        chains,
        draws: DRAWS,
        warmup: 0,
        seed: SEED,
        step_size: STEP,
        adapt_step_size: false,
        adapt_metric: false,
        mode,
        ..Settings::default()
    }
}

/// One measurement: gradient evaluations and seconds.
struct Timing {
    grads: u64,
    secs: f64,
}

impl Timing {
    fn rate(&self) -> f64 {
        self.grads as f64 / self.secs
    }
}

/// Where an autobatched run spent its time: batched kernels (the gradient), lane-wise kernels,
/// and the interpreter around them, as fractions of the wall time.
struct Split {
    batched: f64,
    lane_wise: f64,
    vector_rows_per_chain: f64,
}

/// The autobatched sampler; returns the timing, where it went, and chain 0's draws.
fn autobatched(chains: usize, mode: Mode) -> (Timing, Split, Vec<f64>) {
    let run = sample(
        CorrelatedGaussian::new(DIM, 0.9),
        &settings(chains, mode),
        |_| {},
    )
    .expect("the sampler runs");
    let timing = Timing {
        grads: run.gradients.rows,
        secs: run.elapsed.as_secs_f64(),
    };
    let split = Split {
        batched: run.stats.batched_kernel_time.as_secs_f64() / timing.secs,
        lane_wise: run.stats.lane_kernel_time.as_secs_f64() / timing.secs,
        vector_rows_per_chain: run.stats.vector_rows as f64 / chains as f64,
    };
    (
        timing,
        split,
        run.draws.q.slice(s![0, .., ..]).iter().copied().collect(),
    )
}

/// The same `#[autobatch]` functions called as plain Rust, one chain after another; returns
/// the timing and chain 0's draws.
fn scalar_loop(chains: usize) -> (Timing, Vec<f64>) {
    let shared = Shared::new(
        Arc::new(CorrelatedGaussian::new(DIM, 0.9)),
        settings(chains, Mode::FullVm).chain_settings(),
    );
    let start = Instant::now();
    let (_, draws) = with_sink(
        (chains, DRAWS, DIM),
        0,
        0,
        |_| {},
        || {
            for c in 0..chains {
                black_box(chain(
                    &shared,
                    Vector::from(initial_point(SEED, c as u64, DIM, 2.0)),
                    c as i64,
                    chain_key(SEED, c as u64),
                ));
            }
        },
    );
    let counts = shared.gradients();
    let timing = Timing {
        grads: counts.rows,
        secs: start.elapsed().as_secs_f64(),
    };
    (
        timing,
        draws.draws.q.slice(s![0, .., ..]).iter().copied().collect(),
    )
}

/// The target for nuts-rs: the same density, one mat-vec per gradient, counting evaluations.
#[derive(Clone)]
struct NutsRsGaussian {
    precision: Arc<Array2<f64>>,
    count: Arc<AtomicU64>,
}

#[derive(Debug, thiserror::Error)]
enum NoError {}

impl LogpError for NoError {
    fn is_recoverable(&self) -> bool {
        false
    }
}

impl HasDims for NutsRsGaussian {
    fn dim_sizes(&self) -> HashMap<String, u64> {
        HashMap::from([
            ("unconstrained_parameter".to_string(), DIM as u64),
            ("dim".to_string(), DIM as u64),
        ])
    }
}

impl CpuLogpFunc for NutsRsGaussian {
    type LogpError = NoError;
    type FlowParameters = ();
    type ExpandedVector = Vec<f64>;

    fn dim(&self) -> usize {
        DIM
    }

    fn logp(&mut self, position: &[f64], grad: &mut [f64]) -> Result<f64, NoError> {
        self.count.fetch_add(1, Ordering::Relaxed);
        let q = autobatch_runtime::ndarray::ArrayView1::from(position);
        let pq = self.precision.dot(&q);
        for (g, v) in grad.iter_mut().zip(&pq) {
            *g = -v;
        }
        Ok(-0.5 * q.dot(&pq))
    }

    fn expand_vector<R: nuts_rs::rand::Rng + ?Sized>(
        &mut self,
        _rng: &mut R,
        array: &[f64],
    ) -> Result<Vec<f64>, CpuMathError> {
        Ok(array.to_vec())
    }
}

/// nuts-rs, one chain after another, from the same initial points with step size 0.1 and no
/// tuning (its metric starts from its own gradient-based guess and stays there).
fn nuts_rs(chains: usize) -> Timing {
    use nuts_rs::rand::SeedableRng;
    use nuts_rs::Settings as _;
    let mut settings = DiagNutsSettings {
        num_tune: 0,
        num_draws: DRAWS as u64,
        maxdepth: 10,
        ..DiagNutsSettings::default()
    };
    settings.adapt_options.step_size_settings.initial_step = STEP;
    settings.adapt_options.step_size_settings.jitter = None;
    let logp = NutsRsGaussian {
        precision: Arc::new(CorrelatedGaussian::new(DIM, 0.9).precision().clone()),
        count: Arc::new(AtomicU64::new(0)),
    };
    let mut rng = nuts_rs::rand::rngs::ChaCha8Rng::seed_from_u64(SEED);
    let start = Instant::now();
    for c in 0..chains {
        let math = CpuMath::new(logp.clone());
        let mut sampler = settings
            .new_chain(c as u64, math, &mut rng)
            .expect("nuts-rs builds a chain");
        sampler
            .set_position(&initial_point(SEED, c as u64, DIM, 2.0))
            .expect("a finite start");
        for _ in 0..DRAWS {
            black_box(sampler.draw().expect("nuts-rs draws"));
        }
    }
    Timing {
        grads: logp.count.load(Ordering::Relaxed),
        secs: start.elapsed().as_secs_f64(),
    }
}

/// The lower bound: `grads` gradient evaluations as all-lanes-busy `[chains, 100] x [100, 100]`
/// GEMMs.
fn gemm_bound(chains: usize, grads: u64) -> Timing {
    let precision = CorrelatedGaussian::new(DIM, 0.9).precision().clone();
    let q = Array2::from_shape_fn((chains, DIM), |(i, j)| ((i * DIM + j) % 7) as f64 * 0.1);
    let mut g = Array2::zeros((chains, DIM));
    let calls = grads.div_ceil(chains as u64);
    let start = Instant::now();
    for _ in 0..calls {
        general_mat_mul(-1.0, &q, &precision, 0.0, &mut g);
        black_box(&g);
    }
    Timing {
        grads: calls * chains as u64,
        secs: start.elapsed().as_secs_f64(),
    }
}

fn main() {
    let counts: Vec<usize> = std::env::var("NUTS_BENCH_CHAINS")
        .ok()
        .map(|v| v.split(',').filter_map(|c| c.trim().parse().ok()).collect())
        .unwrap_or_else(|| vec![10, 100, 1000]);
    println!(
        "NUTS, {DIM}-d Gaussian 0.9^|i-j|, step {STEP}, no warmup, unit metric, {DRAWS} draws, \
         max depth 10, one thread; one run per configuration"
    );
    println!("(nuts-rs keeps its own gradient-based initial metric, so its trees differ in size;");
    println!(" compare gradient evaluations per second, not wall time)\n");
    for chains in counts {
        let (vm, vm_split, vm_draws) = autobatched(chains, Mode::FullVm);
        let (stackless, sl_split, sl_draws) = autobatched(chains, Mode::Stackless);
        let (scalar, scalar_draws) = scalar_loop(chains);
        assert_eq!(
            vm_draws, scalar_draws,
            "chain 0: full VM == scalar function"
        );
        assert_eq!(vm_draws, sl_draws, "chain 0: full VM == stackless");
        assert_eq!(vm.grads, scalar.grads, "same gradient evaluations");
        let reference = nuts_rs(chains);
        let bound = gemm_bound(chains, vm.grads);
        println!("{chains} chains:");
        for (name, t) in [
            ("autobatched, full VM", &vm),
            ("autobatched, stackless", &stackless),
            ("scalar functions looped", &scalar),
            ("nuts-rs", &reference),
            ("GEMM bound", &bound),
        ] {
            println!(
                "  {name:>24}: {:>10} grads {:>8.2} s {:>7.3} M grad/s",
                t.grads,
                t.secs,
                t.rate() / 1e6
            );
        }
        for (name, split) in [("full VM", &vm_split), ("stackless", &sl_split)] {
            println!(
                "  {name:>24}: {:.0}% batched gradient kernel, {:.0}% lane-wise kernels, \
                 {:.0}% interpreter; {:.1} vector rows per chain at most",
                100.0 * split.batched,
                100.0 * split.lane_wise,
                100.0 * (1.0 - split.batched - split.lane_wise),
                split.vector_rows_per_chain
            );
        }
        println!(
            "  full VM: {:.2}x nuts-rs, {:.2}x the scalar loop, {:.1}% of the GEMM bound",
            vm.rate() / reference.rate(),
            vm.rate() / scalar.rate(),
            100.0 * vm.rate() / bound.rate()
        );
        println!(
            "  stackless: {:.2}x nuts-rs, {:.1}% of the GEMM bound\n",
            stackless.rate() / reference.rate(),
            100.0 * stackless.rate() / bound.rate()
        );
    }
}

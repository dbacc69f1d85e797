//! Run configuration (mode, limits, checks) and execution statistics.

use std::time::Duration;

/// Which interpreter runs the program.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Host recursion with active-lane sets; lanes re-converge within one activation.
    Stackless,
    /// Per-lane program counters and per-variable stacks; lanes re-converge across depths.
    #[default]
    FullVm,
}

/// How to run a program.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Interpreter.
    pub mode: Mode,
    /// Maximum frames on any variable's stack (full VM) or nested calls (stackless).
    pub max_stack_depth: usize,
    /// Maximum block executions before giving up (`None`: unlimited).
    pub step_budget: Option<u64>,
    /// Check reads of never-written variables per lane (costs a little per op). Only programs
    /// built lowered by hand need it: for high-level programs the verifier has proven every read
    /// preceded by a write on every path, and lowering preserves that, so the check is skipped.
    pub safety_checks: bool,
    /// Vector length when no vector input fixes it.
    pub vector_len: Option<usize>,
    /// Batch size when the program has no inputs.
    pub batch_size: Option<usize>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: Mode::FullVm,
            max_stack_depth: 256,
            step_budget: Some(100_000_000),
            safety_checks: true,
            vector_len: None,
            batch_size: None,
        }
    }
}

impl Config {
    /// The default configuration in `mode`.
    pub fn with_mode(mode: Mode) -> Self {
        Config {
            mode,
            ..Config::default()
        }
    }
}

/// What a run did: steps, per-block runs and lanes, time in kernels.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Lanes in the batch.
    pub batch_size: usize,
    /// Block executions in total.
    pub steps: u64,
    /// Per block (indexed like the program that ran): how many times it ran.
    pub block_runs: Vec<u64>,
    /// Per block: the sum over its runs of the number of active lanes.
    pub block_lanes: Vec<u64>,
    /// Per block: name, for reports.
    pub block_names: Vec<String>,
    /// Per user kernel (indexed by kernel id): how many times it ran.
    pub kernel_runs: Vec<u64>,
    /// Per user kernel: the sum over its runs of the number of lanes it computed.
    pub kernel_lanes: Vec<u64>,
    /// Per user kernel: wall time spent inside it.
    pub kernel_time: Vec<Duration>,
    /// Wall time spent inside batched kernels.
    pub batched_kernel_time: Duration,
    /// Wall time spent inside lane-wise kernels.
    pub lane_kernel_time: Duration,
    /// The most `f64` vector rows held at once (variables, saved frames and the zero row):
    /// the memory of vector state is this times the vector length times 8 bytes.
    pub vector_rows: usize,
}

impl Stats {
    /// Mean fraction of the batch active per block execution (1.0 when every run used every lane).
    pub fn utilisation(&self) -> f64 {
        let lanes: u64 = self.block_lanes.iter().sum();
        if self.steps == 0 || self.batch_size == 0 {
            return 0.0;
        }
        lanes as f64 / (self.steps as f64 * self.batch_size as f64)
    }

    /// Mean fraction of the batch a kernel computed per run (`None` if it never ran): for a
    /// batched gradient, how full each matrix product was.
    pub fn kernel_utilisation(&self, kernel: usize) -> Option<f64> {
        let runs = *self.kernel_runs.get(kernel)?;
        (runs > 0 && self.batch_size > 0)
            .then(|| self.kernel_lanes[kernel] as f64 / (runs as f64 * self.batch_size as f64))
    }

    /// How many times the block named `name` ran.
    pub fn runs_of(&self, name: &str) -> Option<u64> {
        self.block_names
            .iter()
            .position(|n| n == name)
            .map(|i| self.block_runs[i])
    }

    pub(crate) fn new(batch_size: usize, names: Vec<String>, kernels: usize) -> Self {
        Stats {
            batch_size,
            block_runs: vec![0; names.len()],
            block_lanes: vec![0; names.len()],
            block_names: names,
            kernel_runs: vec![0; kernels],
            kernel_lanes: vec![0; kernels],
            kernel_time: vec![Duration::ZERO; kernels],
            ..Stats::default()
        }
    }

    /// Counts one run of user kernel `kernel` over `lanes` lanes, taking `time`; `batched`
    /// also adds the time to [`batched_kernel_time`](Self::batched_kernel_time), else to
    /// [`lane_kernel_time`](Self::lane_kernel_time).
    pub(crate) fn record_kernel(
        &mut self,
        kernel: usize,
        lanes: usize,
        time: Duration,
        batched: bool,
    ) {
        if let (Some(r), Some(l), Some(t)) = (
            self.kernel_runs.get_mut(kernel),
            self.kernel_lanes.get_mut(kernel),
            self.kernel_time.get_mut(kernel),
        ) {
            *r += 1;
            *l += lanes as u64;
            *t += time;
        }
        if batched {
            self.batched_kernel_time += time;
        } else {
            self.lane_kernel_time += time;
        }
    }

    pub(crate) fn record(&mut self, block: usize, lanes: usize) {
        self.steps += 1;
        self.block_runs[block] += 1;
        self.block_lanes[block] += lanes as u64;
    }
}

//! `Stats`: what a run did, per block and per kernel, for reports and utilisation figures.

use std::time::{Duration, Instant};

/// What a run did: steps, per-block runs and lanes, time in kernels (if measured:
/// [`Config::time_kernels`](crate::Config::time_kernels)).
///
/// # Across shards
///
/// A run cut into shards ([`Config::shard_size`](crate::Config::shard_size)) is one
/// independent interpreter run per shard, and its statistics are the sum of theirs: they
/// count the work the machine did, which is what costs time. So:
///
/// - [`steps`](Self::steps), block runs and lanes, kernel runs and lanes add up: a block (or a
///   batched kernel) that both shards execute in the same step counts twice, and the counts
///   depend on how the batch was cut (never the results: those are the same bits whatever
///   the shard size). The counts of the batch run as one shard, which are what a
///   comparison with the reference interpreter or a single-batch analysis wants, are those
///   of a run with `shard_size` at least the batch (or `threads: 1` with that shard size);
///   a small batch of cheap lanes runs as one shard by default.
/// - Utilisation ([`utilisation`](Self::utilisation),
///   [`kernel_utilisation`](Self::kernel_utilisation)) is over the lanes each step could
///   have served in its own shard, so a shard of 50 lanes with 25 active is half used.
/// - Kernel times add up thread time, which exceeds wall time when shards run at once.
/// - [`vector_rows`](Self::vector_rows) is the sum of the shards' peaks: a bound on the rows
///   held at once.
/// - [`shards`](Self::shards) says how many runs were merged.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Stats {
    /// Lanes in the batch.
    pub batch_size: usize,
    /// Block executions in total (summed over shards). The full VM does not run, or count, a
    /// block that does nothing in it (pops of variables without a stack, then a goto).
    pub steps: u64,
    /// The sum over block executions of the lanes of the run (or shard) they were part of:
    /// what [`utilisation`](Self::utilisation) divides by (`steps * batch_size` in a run of
    /// one shard).
    pub lane_slots: u64,
    /// Per block, indexed like the program that ran.
    pub blocks: Vec<BlockStats>,
    /// Per user kernel, indexed by kernel id.
    pub kernels: Vec<KernelStats>,
    /// Wall time spent inside batched kernels (measured only with
    /// [`Config::time_kernels`](crate::Config::time_kernels), else zero).
    pub batched_kernel_time: Duration,
    /// Wall time spent inside lane-wise kernels (measured only with
    /// [`Config::time_kernels`](crate::Config::time_kernels), else zero).
    pub lane_kernel_time: Duration,
    /// The independent runs (shards) these statistics add up: 1 for a run of one shard (0
    /// in statistics that count nothing, such as the reference interpreter's).
    pub shards: usize,
    /// The most `f64` vector rows held at once (variables, saved frames and the zero row):
    /// the memory of vector state is this times the vector length times 8 bytes. Over shards,
    /// the sum of each shard's most: a bound on the rows held at once.
    pub vector_rows: usize,
    /// Block executions the full VM ran as compiled blocks (code `#[autobatch]` generated,
    /// see [`Config::compiled_blocks`](crate::Config::compiled_blocks)); counted in
    /// [`steps`](Self::steps) too.
    pub compiled_steps: u64,
}

/// The clock of one kernel call: started only if the run measures kernel times
/// ([`Config::time_kernels`](crate::Config::time_kernels)), else reading zero.
pub(crate) struct KernelClock(Option<Instant>);

impl KernelClock {
    /// Starts the clock, if `timed`.
    pub(crate) fn start(timed: bool) -> KernelClock {
        KernelClock(timed.then(Instant::now))
    }

    /// The time since the start (`None` if not timed).
    pub(crate) fn elapsed(&self) -> Option<Duration> {
        self.0.map(|start| start.elapsed())
    }
}

/// What one block did over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockStats {
    /// The block's name, for reports.
    pub name: String,
    /// How many times it ran.
    pub runs: u64,
    /// The sum over its runs of the number of active lanes.
    pub lanes: u64,
}

/// What one user kernel did over a run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelStats {
    /// How many times it ran.
    pub runs: u64,
    /// The sum over its runs of the number of lanes it computed.
    pub lanes: u64,
    /// Wall time spent inside it (measured only with
    /// [`Config::time_kernels`](crate::Config::time_kernels), else zero).
    pub time: Duration,
    /// The sum over its runs of the lanes of the run (or shard) it was part of: what
    /// [`Stats::kernel_utilisation`] divides by.
    pub lane_slots: u64,
}

impl Stats {
    /// Empty statistics for a run of `batch_size` lanes over blocks named `names` and
    /// `kernels` user kernels.
    pub(crate) fn new(
        batch_size: usize,
        names: impl IntoIterator<Item = String>,
        kernels: usize,
    ) -> Self {
        Stats {
            batch_size,
            blocks: names
                .into_iter()
                .map(|name| BlockStats {
                    name,
                    ..BlockStats::default()
                })
                .collect(),
            kernels: vec![KernelStats::default(); kernels],
            shards: 1,
            ..Stats::default()
        }
    }

    /// Mean fraction of the batch (of its shard, in a sharded run) active per block execution
    /// (1.0 when every run used every lane).
    pub fn utilisation(&self) -> f64 {
        let lanes: u64 = self.blocks.iter().map(|b| b.lanes).sum();
        if self.lane_slots == 0 {
            return 0.0;
        }
        lanes as f64 / self.lane_slots as f64
    }

    /// Mean fraction of the batch (of its shard, in a sharded run) a kernel computed per run
    /// (`None` if it never ran): for a batched gradient, how full each matrix product was.
    pub fn kernel_utilisation(&self, kernel: usize) -> Option<f64> {
        let k = self.kernels.get(kernel)?;
        (k.lane_slots > 0).then(|| k.lanes as f64 / k.lane_slots as f64)
    }

    /// Adds `other`, the statistics of another shard of the same program, to these: the
    /// batch sizes, shards, counts, times and vector rows add up (see "Across shards" on
    /// [`Stats`]).
    pub(crate) fn merge(&mut self, other: &Stats) {
        self.batch_size += other.batch_size;
        self.shards += other.shards;
        self.steps += other.steps;
        self.compiled_steps += other.compiled_steps;
        self.lane_slots += other.lane_slots;
        for (b, o) in self.blocks.iter_mut().zip(&other.blocks) {
            b.runs += o.runs;
            b.lanes += o.lanes;
        }
        for (k, o) in self.kernels.iter_mut().zip(&other.kernels) {
            k.runs += o.runs;
            k.lanes += o.lanes;
            k.time += o.time;
            k.lane_slots += o.lane_slots;
        }
        self.batched_kernel_time += other.batched_kernel_time;
        self.lane_kernel_time += other.lane_kernel_time;
        self.vector_rows += other.vector_rows;
    }

    /// Counts one run of user kernel `kernel` over `lanes` lanes, taking `time` if it was
    /// measured; `batched` also adds the time to
    /// [`batched_kernel_time`](Self::batched_kernel_time), else to
    /// [`lane_kernel_time`](Self::lane_kernel_time).
    #[inline]
    pub(crate) fn record_kernel(
        &mut self,
        kernel: usize,
        lanes: usize,
        time: Option<Duration>,
        batched: bool,
    ) {
        if let Some(k) = self.kernels.get_mut(kernel) {
            k.runs += 1;
            k.lanes += lanes as u64;
            k.lane_slots += self.batch_size as u64;
            if let Some(time) = time {
                k.time += time;
            }
        }
        let Some(time) = time else {
            return;
        };
        if batched {
            self.batched_kernel_time += time;
        } else {
            self.lane_kernel_time += time;
        }
    }

    /// Counts one step: block `block` ran on `lanes` lanes.
    pub(crate) fn record(&mut self, block: usize, lanes: usize) {
        self.steps += 1;
        self.lane_slots += self.batch_size as u64;
        if let Some(b) = self.blocks.get_mut(block) {
            b.runs += 1;
            b.lanes += lanes as u64;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utilisation_counts_active_lanes_per_step_and_per_kernel() {
        let mut s = Stats::new(4, ["a".to_string(), "b".to_string()], 1);
        s.record(0, 4);
        s.record(1, 2);
        s.record_kernel(0, 2, Some(Duration::from_millis(1)), true);
        assert_eq!(s.utilisation(), 0.75);
        assert_eq!(s.kernel_utilisation(0), Some(0.5));
        assert_eq!(s.kernel_utilisation(1), None);
        assert_eq!(s.blocks[1].runs, 1);
        assert_eq!(s.batched_kernel_time, Duration::from_millis(1));
    }

    #[test]
    fn merged_shards_add_up_and_keep_each_shards_utilisation() {
        // Two shards of 4 and 2 lanes: every step of either used half of its shard.
        let names = || ["a".to_string()];
        let mut s = Stats::new(4, names(), 1);
        s.record(0, 2);
        s.record_kernel(0, 2, Some(Duration::from_millis(1)), false);
        let mut t = Stats::new(2, names(), 1);
        t.record(0, 1);
        t.record(0, 1);
        t.record_kernel(0, 1, Some(Duration::from_millis(2)), false);
        t.vector_rows = 3;
        s.merge(&t);
        assert_eq!((s.batch_size, s.steps, s.blocks[0].runs), (6, 3, 3));
        assert_eq!(s.shards, 2);
        assert_eq!(s.blocks[0].lanes, 4);
        assert_eq!(s.utilisation(), 0.5);
        assert_eq!(s.kernel_utilisation(0), Some(0.5));
        assert_eq!(s.kernels[0].time, Duration::from_millis(3));
        assert_eq!(s.lane_kernel_time, Duration::from_millis(3));
        assert_eq!(s.vector_rows, 3);
    }
}

//! `Config`, `Mode` and `Schedule`: how a batch is run (interpreter, its order, limits, checks),
//! with every default.

/// Which interpreter runs the program. Both give every lane exactly the result of the plain
/// scalar function, bit for bit; they differ in which lanes they can run together, and so in
/// speed (the crate's "Choosing a mode" gives measured figures).
///
/// The default is [`Stackless`](Mode::Stackless), the faster on fib and on the NUTS sampler;
/// the full VM, with compiled blocks, was the faster on a loop (Collatz) and on Ackermann (the
/// crate's "Choosing a mode").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Runs the high-level program, a call recursing on the host stack for the lanes that make
    /// it. Lanes re-converge only inside one activation of a function (after its branches and
    /// loops), never across recursion depths. Cheaper per step and per call (no per-lane
    /// program counter or stacks). The default.
    #[default]
    Stackless,
    /// Runs the lowered program with a program counter and return stack per lane and a stack
    /// per stacked variable, so lanes at different recursion depths that reach the same block
    /// run it together: a batched kernel's calls see more lanes, at the cost of more
    /// bookkeeping per block and per call.
    FullVm,
}

/// Which block the full VM runs next, of those lanes wait at. The order never changes a lane's
/// results (each lane runs its own program whatever lanes run beside it); it decides how lanes
/// are grouped into block executions, and so how many there are and how many rows each call
/// of a batched primitive gets. Stackless always runs a function's blocks lowest first, which
/// its recursion needs (each activation is one function's lanes).
///
/// Measured on the NUTS sampler (1,000 chains, one thread), the full VM took about 15% less
/// time with [`MostLanes`](Schedule::MostLanes) than with
/// [`LowestBlock`](Schedule::LowestBlock) (fewer steps, and fewer gradient calls of more rows
/// each); on fib, about 20% more. Hence the default, [`Auto`](Schedule::Auto).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Schedule {
    /// [`MostLanes`](Schedule::MostLanes) for a program that calls a batched primitive (a
    /// `#[primitive(batched = ...)]` or a [`Kernel::batched`](crate::Kernel::batched)),
    /// [`LowestBlock`](Schedule::LowestBlock) for any other. The default.
    #[default]
    Auto,
    /// The lowest-numbered block with lanes waiting (the rule of TensorFlow Probability's
    /// auto-batching VM). Lanes recursing into the same function meet at its blocks in step,
    /// and lanes leaving a block go straight on to the next where nothing waits before it.
    LowestBlock,
    /// The block with the most lanes waiting (the lowest-numbered of those with as many), a
    /// block that calls a batched primitive only when no other block has lanes, so lanes
    /// gather there and each call gets as many rows as can reach it. Fewer block executions
    /// where lanes spread over many blocks (a sampler's bookkeeping), at the cost of a scan
    /// over the blocks at each step.
    MostLanes,
}

/// The default [`Config::memory_budget`]: 4 GiB (the most `usize` holds on 32-bit targets).
pub const DEFAULT_MEMORY_BUDGET: usize = {
    let bytes: u64 = 4 << 30;
    if bytes > usize::MAX as u64 {
        usize::MAX
    } else {
        bytes as usize
    }
};

/// How to run a program. [`Config::default()`] is:
///
/// | field | default |
/// |---|---|
/// | [`mode`](Self::mode) | [`Mode::Stackless`] |
/// | [`max_stack_depth`](Self::max_stack_depth) | 256 |
/// | [`step_budget`](Self::step_budget) | `Some(100_000_000)` (10^8 block executions) |
/// | [`memory_budget`](Self::memory_budget) | `Some(4 GiB)` ([`DEFAULT_MEMORY_BUDGET`] bytes of stacks and vector rows) |
/// | [`lane_isolation`](Self::lane_isolation) | `false` (one failing lane fails the run) |
/// | [`safety_checks`](Self::safety_checks) | `true` |
/// | [`vector_len`](Self::vector_len) | `None` (taken from the vector inputs; 0 without any) |
/// | [`batch_size`](Self::batch_size) | `None` (taken from the inputs; 1 without any) |
/// | [`threads`](Self::threads) | [`available_threads()`] (every core the process may use) |
/// | [`shard_size`](Self::shard_size) | `None` (chosen per run by [`shard_lanes`]) |
/// | [`time_kernels`](Self::time_kernels) | `false` (kernel times in [`Stats`](crate::Stats) are zero) |
/// | [`compiled_blocks`](Self::compiled_blocks) | `true` |
/// | [`schedule`](Self::schedule) | [`Schedule::Auto`] |
///
/// ```
/// use autobatch_runtime::{Config, Mode};
///
/// let config = Config::default();
/// assert_eq!(config.mode, Mode::Stackless);
/// assert_eq!(config.max_stack_depth, 256);
/// assert_eq!(config.step_budget, Some(100_000_000));
/// assert_eq!(config.memory_budget, Some(4 << 30));
/// let deep = Config { max_stack_depth: 10_000, ..Config::with_mode(Mode::Stackless) };
/// # let _ = deep;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Interpreter. Default: [`Mode::Stackless`].
    pub mode: Mode,
    /// The most frames of recursive functions a lane may have in progress at once: its
    /// recursion depth. A function is recursive when it can call itself, directly or through
    /// others; each of its runs that has not returned yet is a frame, tail calls
    /// (`return f(x)`) included. Non-recursive functions are not counted (their nesting is
    /// bounded by the program's text). So `sum_to(n)`, which runs `sum_to` for `n`, `n - 1`,
    /// ..., `0`, needs a depth of `n + 1`; with a depth of 0 no recursive function runs.
    ///
    /// Both modes and [`Executable::run_reference`](crate::Executable::run_reference) count
    /// alike and fail at the same call with
    /// [`RuntimeError::RecursionLimit`](crate::RuntimeError::RecursionLimit) (function, lane,
    /// limit). Any depth within the limit runs on any thread, however small its stack:
    /// stackless grows its host stack on demand. A hand-lowered program (no functions) counts
    /// the `push_goto`s in progress instead, and each of its variables may hold at most this
    /// many frames ([`RuntimeError::StackOverflow`](crate::RuntimeError::StackOverflow)).
    /// Memory, not this limit, is what bounds a very deep run: see
    /// [`memory_budget`](Self::memory_budget). Default: 256.
    pub max_stack_depth: usize,
    /// Maximum block executions (one block run for any number of lanes is one) before the run
    /// gives up with a typed error naming the lanes still running; with
    /// [`lane_isolation`](Self::lane_isolation), the most any one lane may run (blocks the
    /// full VM passes lanes through without running, see [`Stats::steps`](crate::Stats::steps),
    /// do not count). `None` removes the limit. Default: `Some(100_000_000)`.
    pub step_budget: Option<u64>,
    /// The most bytes the run's growing storage may hold at once: the saved frames of stacked
    /// variables and the full VM's return addresses, the values stackless saves around calls,
    /// and the rows of `f64` vectors. Past it the run stops with
    /// [`RuntimeError::MemoryBudget`](crate::RuntimeError::MemoryBudget), naming the variable
    /// (or the function's calls) that grew. `None` removes the limit. Default:
    /// `Some(`[`DEFAULT_MEMORY_BUDGET`]`)`, 4 GiB: a fixed number rather than a share of the
    /// machine's memory, so a run succeeds or fails the same way on every machine; far above
    /// what a batched sampler needs (1,000 chains of 100-dimensional vectors at tree depth 10
    /// hold a few hundred MB), and below the memory of a typical workstation, so a runaway
    /// recursion ends with an error instead of swapping.
    pub memory_budget: Option<usize>,
    /// Whether a failure that belongs to some lanes (a kernel's error or panic, the depth
    /// limit, the memory budget, the step budget, see
    /// [`RuntimeError::lanes`](crate::RuntimeError::lanes)) fails only those lanes: the run
    /// then returns every other lane's results, bit-identical to a run without the failed
    /// lanes, and lists the failures in [`Run::failed`](crate::Run::failed) (their rows hold
    /// zeros). Each failure re-runs the batch without its lanes, so a run with `k` failing
    /// lanes costs up to `k + 1` runs. Failures of the whole run (invalid inputs) are still
    /// errors. The [`step_budget`](Self::step_budget) then counts each lane's own block
    /// executions, as the reference interpreter does, so a lane fails for its own steps only.
    /// Default: `false`.
    pub lane_isolation: bool,
    /// Check reads of never-written variables per lane (costs a little per op). Only programs
    /// built lowered by hand need it: for high-level programs the verifier has proven every read
    /// preceded by a write on every path, and lowering preserves that, so the check is skipped.
    /// Default: `true`.
    pub safety_checks: bool,
    /// Vector length when no vector input fixes it. Default: `None` (0 if no input is a
    /// vector).
    pub vector_len: Option<usize>,
    /// Batch size when the program has no inputs. Default: `None` (1 lane).
    pub batch_size: Option<usize>,
    /// Worker threads a run uses. A batch is cut into shards of lanes
    /// ([`shard_size`](Self::shard_size)), each an independent run of the interpreter, run on a
    /// work-stealing pool of this many threads; the results are put back in lane order. A
    /// lane's results are bit-identical whatever the number of threads and the shard size
    /// (lanes never interact). With 1 (or a batch of one shard) the run stays on the calling
    /// thread and no thread is started. Kernels then run on the pool's threads: a kernel that
    /// reads thread-local state must run with 1. Values below 1 count as 1. Default:
    /// [`available_threads()`], every core the process may use.
    pub threads: usize,
    /// Lanes per shard (see [`threads`](Self::threads)): runs of consecutive lanes, the last
    /// shard taking the rest (the default shards instead take short runs of lanes in turn, so
    /// that each holds lanes from every part of the batch and work that grows with the lane
    /// index is shared evenly). Each shard is its own run: [`step_budget`](Self::step_budget)
    /// and [`memory_budget`](Self::memory_budget) apply to each shard on its own (so a run with
    /// `threads` workers may hold up to `threads` times the memory budget at once), and
    /// [`Stats`](crate::Stats) add up over shards (they count the work of every shard, so
    /// counts such as kernel runs depend on the shard size). `Some(0)` counts as 1. Default:
    /// `None`, chosen per run by [`shard_lanes`]: shards whose variables (in the full VM, with
    /// 512 bytes per lane for each stacked variable's saved frames, 1,024 where it runs
    /// compiled blocks) fit [`SHARD_BYTES`] (half
    /// the per-core L2 cache, so a block's working set stays in cache) with at least
    /// [`MIN_CACHE_SHARD_LANES`] lanes each (so each block execution still serves enough
    /// lanes to pay for its dispatch), one per thread when the batch is large
    /// or its lanes heavy ([`MIN_SHARD_BYTES`]), and one shard for a small batch of cheap
    /// lanes.
    pub shard_size: Option<usize>,
    /// Whether to measure the time spent inside kernels: each kernel's
    /// [`KernelStats::time`](crate::KernelStats::time) and the totals
    /// [`Stats::lane_kernel_time`](crate::Stats::lane_kernel_time) and
    /// [`Stats::batched_kernel_time`](crate::Stats::batched_kernel_time). It reads the clock
    /// twice per kernel call, which is most of a microsecond's work per block execution: a few
    /// percent of a run of cheap kernels (stackless fibonacci ran 3% faster on one thread
    /// without it, 6-8% on two, where every shard pays it again). Results never depend on it.
    /// Default: `false` (the times are zero).
    pub time_kernels: bool,
    /// Whether the full VM runs the compiled blocks `#[autobatch]` generated for a function
    /// it could lower by itself (one loop per block doing all of the block's ops for a lane
    /// at once, instead of one pass over the lanes per op), where the linked program is the
    /// one they were generated from. Results, errors' kinds and statistics other than
    /// [`Stats::compiled_steps`](crate::Stats::compiled_steps) are the same either way (where
    /// several lanes fail in one block, which one the error names may differ); off, every
    /// block is interpreted. Kernel times ([`time_kernels`](Self::time_kernels)) are measured
    /// only interpreted, so that switch turns compiled blocks off. Default: `true`.
    pub compiled_blocks: bool,
    /// Which block the full VM runs next (see [`Schedule`]); stackless ignores it. Results
    /// never depend on it; [`Stats`](crate::Stats)' counts of steps and kernel calls do.
    /// Default: [`Schedule::Auto`].
    pub schedule: Schedule,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: Mode::Stackless,
            max_stack_depth: 256,
            step_budget: Some(100_000_000),
            memory_budget: Some(DEFAULT_MEMORY_BUDGET),
            lane_isolation: false,
            safety_checks: true,
            vector_len: None,
            batch_size: None,
            threads: available_threads(),
            shard_size: None,
            time_kernels: false,
            compiled_blocks: true,
            schedule: Schedule::Auto,
        }
    }
}

/// The default [`Config::threads`]: [`std::thread::available_parallelism`], or 1 where the
/// platform cannot tell.
pub fn available_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The working set a default shard aims at: 1 MiB of variables, half of the 2 MiB per-core
/// L2 cache of the machine the default was measured on (the rest holds saved frames and the
/// kernels' own data). Programs with little state per lane (fib, Collatz: tens of bytes) fit
/// whole batches of 10,000 lanes, which is what stackless wants: each block execution has a
/// fixed cost that a shard pays again, so on one thread its best shard was the whole batch
/// (`cargo bench -p autobatch-runtime --bench fibonacci`, shard-size table: stackless fib
/// 10,000 lanes 644 ms in one shard, 1,242 ms in shards of 1,024, 3,987 ms in shards of 256).
/// The full VM, whose steps cost less, also keeps a shard's current values and lane lists
/// within 128 KiB, which a loop's step walks whole: Collatz in 7 shards of 1,429, 17% faster
/// than in one.
/// The full VM also counts, per lane, 512 bytes for each stacked variable's saved frames and
/// for its return addresses: each lane's frames are read and written at its own depth, so a
/// batch of 10,000 recursing lanes keeps megabytes of stack lines in play. Counting one cache
/// line for them cut fib and Ackermann into 3 shards of 3,334 on one thread, 8-20% faster
/// than one shard of 10,000 (512 KiB L2; simulated L2 misses for fib 80.0M -> 3.5M); 512
/// bytes cuts them into 16 shards of 625 and 11 of 910, near the fastest sizes measured for
/// each, 16% and 25% faster again (`lane_ops W vm 1 7`, interleaved runs, minima). Where the
/// full VM runs compiled blocks (`#[autobatch]` functions that call only themselves) it counts
/// 1,024 bytes instead: their lanes cost so little per op that smaller shards pay (fib by the
/// macro in 30 shards of 334, 7% faster than in shards of 625).
/// On a machine with 512 KiB of L2 per core the NUTS sampler's default shards stay the best
/// measured there too: its chains are heavy enough that [`MIN_CACHE_SHARD_LANES`], not this
/// size, sets them (1,000 chains, one thread: 143 chains a shard against sweeps from 48 to
/// 1,000, `nuts --shard-size N`).
pub const SHARD_BYTES: usize = 1 << 20;

/// The lanes a default shard holds at least, when the batch has enough lanes for every
/// thread to get that many (else see [`MIN_SHARD_BYTES`]), unless its lanes are too heavy for
/// that many to fit in cache (see [`MIN_CACHE_SHARD_LANES`]).
pub const MIN_SHARD_LANES: usize = 256;

/// The lanes a default shard holds at least when the batch is cut to keep each shard's
/// variables within [`SHARD_BYTES`]. Programs with a large state per lane (NUTS in 100
/// dimensions: over 64 KiB of variables per chain, so 1 MiB holds a dozen chains) gain from
/// shards smaller than the batch but lose below this, where each block execution serves too
/// few lanes to pay for its dispatch and a batched kernel's matrix products get short. On the
/// 100-d Gaussian, 1,000 chains, one thread, quiet machine (`cargo bench -p autobatch-examples
/// --bench nuts`, its shard-size sweep), stackless ran at 0.706, 0.787, 0.805 and 0.715 M
/// gradients/s in shards of 64, 128, 256 and 1,000 chains, and at 0.811 by default (7 shards
/// of 143); the full VM at 0.513, 0.576, 0.571, 0.541 and 0.568. The floor of 256 this
/// replaced cut 1,000 chains into 3 shards of 333: 0.750 against 0.798 in shards of 143
/// (`nuts --mode stackless --threads 1 --no-adapt --warmup 0 --draws 100 --shard-size N`).
pub const MIN_CACHE_SHARD_LANES: usize = 128;

/// The lane state (bytes of variables, summed over a shard's lanes) that makes a shard worth
/// a thread of its own: a batch too small to give every thread [`MIN_SHARD_LANES`] lanes is
/// still cut into one shard per thread if each shard's lanes hold at least this much. A step
/// of such lanes is dominated by their own work (vector arithmetic over every lane), not by
/// the step's fixed cost, which every shard pays again: NUTS chains in 100 dimensions (over
/// 64 KiB each) took 18% more CPU time in two shards than in one at 100 chains, 25% more at
/// 10 and 45% more at 2, so two shards on two idle cores finish 1.7, 1.6 and 1.4 times as
/// fast (`nuts --chains N` against `--shard-size N`, 200 warmup + 200 draws, CPU times on a
/// loaded machine). Lanes of a few scalars (tens of bytes) are never cut into shards of
/// fewer than [`MIN_SHARD_LANES`] lanes, so a small batch of cheap lanes stays one shard:
/// splitting it would mostly repeat the steps' fixed cost on each thread. 64 KiB: the state
/// of [`MIN_SHARD_LANES`] lanes of 256 bytes.
pub const MIN_SHARD_BYTES: usize = 64 << 10;

/// The default shard size ([`Config::shard_size`] `None`) for a run of `batch` lanes whose
/// variables take `lane_bytes` bytes per lane on `threads` threads. The batch is cut into
/// shards of equal size (but the last), as many as:
///
/// 1. keep each shard's variables within [`SHARD_BYTES`] (cache-sized work), but not so
///    many that a shard has fewer than [`MIN_CACHE_SHARD_LANES`] lanes (so a step still serves
///    enough lanes to pay for its fixed cost); with more shards than threads, rounded up to
///    a multiple of the threads so that every thread gets the same work;
/// 2. and at least one per thread, if each still has [`MIN_SHARD_LANES`] lanes or its lanes
///    hold [`MIN_SHARD_BYTES`]: heavy lanes use every core even in a small batch, while a
///    small batch of cheap lanes stays one shard on the calling thread.
///
/// More shards than that cost more: each shard repeats the block executions of its slowest
/// lane.
///
/// ```
/// use autobatch_runtime::shard_lanes;
///
/// // Small per-lane state on one thread: one shard for a batch of 10,000.
/// assert_eq!(shard_lanes(10_000, 80, 1), 10_000);
/// // On two threads: one shard each.
/// assert_eq!(shard_lanes(10_000, 80, 2), 5_000);
/// // 28 KB per lane: a few dozen lanes would fit in cache, but a
/// // shard keeps at least 128 lanes: eight shards of 125 on two threads.
/// assert_eq!(shard_lanes(1_000, 28_000, 2), 125);
/// // 100 such lanes on two threads: heavy enough for a shard per thread.
/// assert_eq!(shard_lanes(100, 28_000, 2), 50);
/// // 100 cheap lanes on two threads: one shard.
/// assert_eq!(shard_lanes(100, 80, 2), 100);
/// ```
pub fn shard_lanes(batch: usize, lane_bytes: usize, threads: usize) -> usize {
    let (batch, lane_bytes, threads) = (batch.max(1), lane_bytes.max(1), threads.max(1));
    let fits = (SHARD_BYTES / lane_bytes).max(1);
    let mut shards = batch
        .div_ceil(fits)
        .min(batch / MIN_CACHE_SHARD_LANES)
        .max(1);
    if shards > threads {
        shards = shards.div_ceil(threads) * threads;
    }
    // The fewest lanes that make a shard worth a thread of its own.
    let worth_a_thread = MIN_SHARD_BYTES.div_ceil(lane_bytes).min(MIN_SHARD_LANES);
    let shards = shards.max(threads.min(batch / worth_a_thread)).min(batch);
    batch.div_ceil(shards)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The shard sizes a batch is cut into with shards of `size` lanes.
    fn cut(batch: usize, size: usize) -> Vec<usize> {
        (0..batch)
            .step_by(size)
            .map(|start| size.min(batch - start))
            .collect()
    }

    #[test]
    fn small_batches_of_cheap_lanes_stay_one_shard_on_any_thread_count() {
        for threads in 1..=64 {
            for batch in [1, 2, 4, 100, 300, MIN_SHARD_LANES] {
                assert_eq!(
                    shard_lanes(batch, 80, threads),
                    batch,
                    "{batch} x {threads}"
                );
            }
        }
    }

    #[test]
    fn heavy_lanes_get_a_shard_per_thread_in_a_small_batch() {
        // Lanes of 28 KB.
        assert_eq!(cut(100, shard_lanes(100, 28_000, 2)), [50, 50]);
        assert_eq!(cut(10, shard_lanes(10, 28_000, 2)), [5, 5]);
        // Not below what makes a shard worth a thread: 3 such lanes are 84 KB, 2 are 56 KB.
        assert_eq!(cut(10, shard_lanes(10, 28_000, 4)), [4, 4, 2]);
        assert_eq!(cut(4, shard_lanes(4, 28_000, 2)), [4]);
        assert_eq!(cut(6, shard_lanes(6, 28_000, 2)), [3, 3]);
        assert_eq!(cut(6, shard_lanes(6, 28_000, 4)), [3, 3]);
    }

    #[test]
    fn large_batches_get_cache_sized_shards_evenly_over_the_threads() {
        // Cheap lanes: one shard per thread (the whole batch fits in cache).
        assert_eq!(cut(10_000, shard_lanes(10_000, 80, 2)), [5_000; 2]);
        assert_eq!(cut(100_000, shard_lanes(100_000, 8, 8)), [12_500; 8]);
        // Heavy lanes: shards of at least 128 lanes, as many on each thread.
        assert_eq!(
            cut(1_000, shard_lanes(1_000, 28_000, 1)),
            [143, 143, 143, 143, 143, 143, 142]
        );
        assert_eq!(cut(1_000, shard_lanes(1_000, 28_000, 2)), [125; 8]);
        assert_eq!(
            cut(1_001, shard_lanes(1_001, 4_096, 2)),
            [251, 251, 251, 248]
        );
        // Lanes of 512 bytes: 2,048 fit in cache, so 10,000 of them take 5 shards, 6 on 2
        // or 3 threads.
        assert_eq!(cut(10_000, shard_lanes(10_000, 512, 1)), [2_000; 5]);
        assert_eq!(cut(10_000, shard_lanes(10_000, 512, 2)).len(), 6);
        assert_eq!(cut(10_000, shard_lanes(10_000, 512, 3)).len(), 6);
    }
}

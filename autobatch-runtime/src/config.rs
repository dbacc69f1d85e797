//! `Config` and `Mode`: how a batch is run (interpreter, limits, checks), with every default.

/// Which interpreter runs the program. Both give every lane exactly the result of the plain
/// scalar function, bit for bit; they differ in which lanes they can run together, and so in
/// speed.
///
/// The default is [`FullVm`](Mode::FullVm).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Runs the high-level program, a call recursing on the host stack for the lanes that make
    /// it. Lanes re-converge only inside one activation of a function (after its branches and
    /// loops), never across recursion depths. Cheaper per step (no per-lane program counter or
    /// stacks): choose it when lanes take similar paths through calls, or recursion is shallow
    /// and even.
    Stackless,
    /// Runs the lowered program with a program counter and return stack per lane and a stack
    /// per stacked variable, so lanes at different recursion depths that reach the same block
    /// run it together. The better choice when recursion depths differ a lot between lanes
    /// (a NUTS tree, a recursive search). The default.
    #[default]
    FullVm,
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
/// | [`mode`](Self::mode) | [`Mode::FullVm`] |
/// | [`max_stack_depth`](Self::max_stack_depth) | 256 |
/// | [`step_budget`](Self::step_budget) | `Some(100_000_000)` (10^8 block executions) |
/// | [`memory_budget`](Self::memory_budget) | `Some(4 GiB)` ([`DEFAULT_MEMORY_BUDGET`] bytes of stacks and vector rows) |
/// | [`lane_isolation`](Self::lane_isolation) | `false` (one failing lane fails the run) |
/// | [`safety_checks`](Self::safety_checks) | `true` |
/// | [`vector_len`](Self::vector_len) | `None` (taken from the vector inputs; 0 without any) |
/// | [`batch_size`](Self::batch_size) | `None` (taken from the inputs; 1 without any) |
/// | [`threads`](Self::threads) | [`available_threads()`] (every core the process may use) |
/// | [`shard_size`](Self::shard_size) | `None` (chosen per run by [`shard_lanes`]) |
///
/// ```
/// use autobatch_runtime::{Config, Mode};
///
/// let config = Config::default();
/// assert_eq!(config.mode, Mode::FullVm);
/// assert_eq!(config.max_stack_depth, 256);
/// assert_eq!(config.step_budget, Some(100_000_000));
/// assert_eq!(config.memory_budget, Some(4 << 30));
/// let deep = Config { max_stack_depth: 10_000, ..Config::with_mode(Mode::Stackless) };
/// # let _ = deep;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Interpreter. Default: [`Mode::FullVm`].
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
    /// [`lane_isolation`](Self::lane_isolation), the most any one lane may run. `None`
    /// removes the limit. Default: `Some(100_000_000)`.
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
    /// Lanes per shard (see [`threads`](Self::threads)); the last shard takes the rest. Each
    /// shard is its own run: [`step_budget`](Self::step_budget) and
    /// [`memory_budget`](Self::memory_budget) apply to each shard on its own (so a run with
    /// `threads` workers may hold up to `threads` times the memory budget at once), and
    /// [`Stats`](crate::Stats) add up over shards. `Some(0)` counts as 1. Default: `None`,
    /// chosen per run by [`shard_lanes`]: as many lanes as keep a shard's variables within
    /// [`SHARD_BYTES`] (half the per-core L2 cache, so a block's working set stays in
    /// cache), at least [`MIN_SHARD_LANES`] (so each block execution still serves enough
    /// lanes to pay for its dispatch), and no more than one shard per thread needs.
    pub shard_size: Option<usize>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: Mode::FullVm,
            max_stack_depth: 256,
            step_budget: Some(100_000_000),
            memory_budget: Some(DEFAULT_MEMORY_BUDGET),
            lane_isolation: false,
            safety_checks: true,
            vector_len: None,
            batch_size: None,
            threads: available_threads(),
            shard_size: None,
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
/// whole batches of 10,000 lanes, which is what they want: each block execution has a fixed
/// cost that a shard pays again, so on one thread their best shard was the whole batch
/// (`cargo bench -p autobatch-runtime --bench fibonacci`, shard-size table: stackless fib
/// 10,000 lanes 644 ms in one shard, 1,242 ms in shards of 1,024, 3,987 ms in shards of 256).
pub const SHARD_BYTES: usize = 1 << 20;

/// The fewest lanes a default shard holds (unless the batch is smaller). Programs with a large
/// state per lane (NUTS in 100 dimensions: about 28 KB per chain, so 1 MiB is 37 chains)
/// gain from shards smaller than the batch but lose below this: the full VM on the
/// 100-d Gaussian, 1,000 chains, one thread, ran at 0.134, 0.137, 0.160 and 0.133 M
/// gradients/s in shards of 64, 128, 256 and 1,000 chains (`cargo bench -p
/// autobatch-examples --bench nuts`, one run each on a loaded 2-core machine).
pub const MIN_SHARD_LANES: usize = 256;

/// The default shard size ([`Config::shard_size`] `None`) for a run of `batch` lanes whose
/// variables take `lane_bytes` bytes per lane on `threads` threads: the most lanes within
/// [`SHARD_BYTES`], with several threads no more than one shard per thread (each shard
/// repeats the block executions of its slowest lane, so more shards cost more), and at
/// least [`MIN_SHARD_LANES`].
///
/// ```
/// use autobatch_runtime::{shard_lanes, MIN_SHARD_LANES};
///
/// // Small per-lane state on one thread: one shard for a batch of 10,000.
/// assert_eq!(shard_lanes(10_000, 80, 1), 10_000);
/// // On two threads: one shard each.
/// assert_eq!(shard_lanes(10_000, 80, 2), 5_000);
/// // 28 KB per lane (a 100-d NUTS state): a few dozen lanes would fit, the floor wins.
/// assert_eq!(shard_lanes(1_000, 28_000, 1), MIN_SHARD_LANES);
/// ```
pub fn shard_lanes(batch: usize, lane_bytes: usize, threads: usize) -> usize {
    let fits = SHARD_BYTES / lane_bytes.max(1);
    let per_thread = batch.div_ceil(threads.max(1));
    fits.min(per_thread).max(MIN_SHARD_LANES)
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

//! Shards: a batch cut into sets of lanes, run on a rayon pool of `Config::threads` workers
//! and put back together in lane order. Shards of an explicit `Config::shard_size` are runs of
//! consecutive lanes; the default shards deal out short runs in turn (see [`layout`]).
//!
//! Lanes never interact (each lane's results are those of the scalar function), so every
//! shard is an independent run of the interpreter with its own storage, statistics and
//! budgets, and a lane's results do not depend on the thread count or the shard layout. Errors
//! and failed lanes name lanes of the batch as given (a shard's lane `i` is the `i`-th lane
//! of its set).

use crate::column::width_of;
use crate::config::shard_lanes;
use crate::{Column, Config, LaneFailure, Mode, Result, Run, Stats, SHARD_BYTES};
use autobatch_ir::{Allocation, Program};
use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Runs `exe` on `inputs` cut into shards as `config` asks, each through `run_one` (a run of
/// the whole of its inputs: one interpreter run, or lane isolation's runs); one shard runs
/// on the calling thread. `compiled`: the full VM will run compiled blocks of `program`.
pub(crate) fn run(
    program: &Program,
    inputs: &[Column],
    (config, compiled): (&Config, bool),
    run_one: impl Fn(&[Column], &Config) -> Result<Run> + Sync,
) -> Result<Run> {
    let (batch, vector_len) = crate::check_inputs(program, inputs, config)?;
    let threads = config.threads.max(1);
    let (size, dealt) = match config.shard_size {
        Some(size) => (size.max(1), false),
        None => {
            let lane = lane_bytes(program, vector_len, (config.mode, compiled));
            (shard_lanes(batch, lane, threads), true)
        }
    };
    if batch <= size {
        return run_one(inputs, config);
    }
    let shards = layout(batch, size, dealt);
    // Shards past the lowest one that failed cannot change the result: they are skipped.
    let lowest_failed = AtomicUsize::new(usize::MAX);
    let one = |(i, rows): (usize, &Vec<usize>)| {
        if i > lowest_failed.load(Ordering::Relaxed) {
            return None;
        }
        let subset: Vec<Column> = inputs.iter().map(|c| c.gather(rows)).collect();
        let config = Config {
            batch_size: Some(rows.len()),
            ..config.clone()
        };
        let run = run_one(&subset, &config).map_err(|e| e.renumber(rows));
        if run.is_err() {
            lowest_failed.fetch_min(i, Ordering::Relaxed);
        }
        Some(run)
    };
    let runs: Vec<Option<Result<Run>>> = match pool(threads) {
        Some(pool) => pool.install(|| shards.par_iter().enumerate().map(one).collect()),
        None => shards.iter().enumerate().map(one).collect(),
    };
    let mut done = Vec::with_capacity(runs.len());
    for run in runs.into_iter().flatten() {
        done.push(run?);
    }
    Ok(concatenate(done, &shards, batch))
}

/// Lanes per run dealt in turn to the default shards, at most: short enough that every shard
/// holds lanes from every part of the batch, long enough to keep a shard's lanes in runs
/// (whole 64-lane words of the full VM's lane sets).
const DEALT_RUN: usize = 64;

/// The lanes of each shard of `batch` lanes cut into shards of `size`, each in lane order.
/// Not `dealt`: runs of `size` consecutive lanes (the last takes the rest). `dealt`: as many
/// shards, each dealt short runs of consecutive lanes in turn (shard `k` takes runs `k`,
/// `k + shards`, ..; a run is [`DEALT_RUN`] lanes, fewer for small shards, so that a shard
/// holds at least 16 runs), so shards hold about the same lanes from every part of the batch:
/// a batch whose work grows with the lane index (inputs in increasing order) then gives every
/// thread about the same work, where consecutive halves would give one thread the most.
fn layout(batch: usize, size: usize, dealt: bool) -> Vec<Vec<usize>> {
    let shards = batch.div_ceil(size);
    let run = if dealt {
        (size / 16).clamp(1, DEALT_RUN)
    } else {
        size
    };
    let mut lanes: Vec<Vec<usize>> = vec![Vec::with_capacity(size + run); shards];
    for (i, start) in (0..batch).step_by(run).enumerate() {
        let shard = if dealt { i % shards } else { start / size };
        lanes[shard].extend(start..(start + run).min(batch));
    }
    lanes
}

/// The shards' runs as one run of `batch` lanes: outputs in lane order, statistics merged,
/// failures renumbered into the batch.
fn concatenate(runs: Vec<Run>, shards: &[Vec<usize>], batch: usize) -> Run {
    let mut outputs: Vec<Column> = (runs.first().iter())
        .flat_map(|run| &run.outputs)
        .map(|c| Column::zeros(c.dtype(), batch, c.width()))
        .collect();
    let mut stats: Option<Stats> = None;
    let mut failed = Vec::new();
    for (run, lanes) in runs.into_iter().zip(shards) {
        for (out, col) in outputs.iter_mut().zip(&run.outputs) {
            out.scatter(lanes, col);
        }
        failed.extend(run.failed.into_iter().map(|f| LaneFailure {
            lane: lanes[f.lane],
            error: f.error.renumber(lanes),
        }));
        match &mut stats {
            None => stats = Some(run.stats),
            Some(stats) => stats.merge(&run.stats),
        }
    }
    // In lane order, as one run lists them (dealt shards interleave their lanes).
    failed.sort_unstable_by_key(|f| f.lane);
    Run {
        outputs,
        stats: stats.unwrap_or_default(),
        failed,
    }
}

/// What one lane's saved frames of one stacked leaf keep in play in the full VM: eight cache
/// lines (64 levels of 8-byte frames). A step reads and writes each lane's frames at that
/// lane's own depth, the lanes a block runs are at different depths, and from step to step
/// they move up and down their stacks, so a recursing lane keeps lines of many levels in
/// play, not just the one at its top. Measured on fibonacci and Ackermann in the full VM
/// (10,000 lanes, one thread; 512 KiB L2): with one cache line per stacked leaf, as before,
/// the default cut both into 3 shards of 3,334; the shard sizes that ran fastest were
/// 500-700 lanes for fib (16% faster) and about 1,000 for Ackermann (25% faster), below which
/// the steps' fixed cost, paid again by every shard, took over (`lane_ops W vm 1 7` with
/// `LANE_OPS_SHARD` 250 to 1,000, five interleaved rounds, minima). This count gives them 16
/// shards of 625 and 11 of 910: fib ran 12-20% faster than in shards of 3,334 in one process
/// (`examples/fused_blocks.rs`), on 22% more instructions (each shard pays every step's fixed
/// cost again). Heavy lanes (the NUTS sampler's) are cut by [`MIN_CACHE_SHARD_LANES`] either
/// way.
///
/// [`MIN_CACHE_SHARD_LANES`]: crate::MIN_CACHE_SHARD_LANES
const FRAME_BYTES: usize = 512;

/// [`FRAME_BYTES`] where the full VM runs compiled blocks: sixteen cache lines. A compiled
/// block does a lane's ops in a few instructions each and a step's fixed cost is lower, so the
/// stacks' memory traffic is more of what is left and smaller shards pay: with this count fib
/// by `#[autobatch]` runs in 30 shards of 334 and Ackermann in shards of about 460, against 16
/// of 625 and 11 of 910 with [`FRAME_BYTES`]; alternated six rounds (`lane_ops W vm 1 3`,
/// `LANE_OPS_SHARD`, 10,000 lanes, the Xeon: 2 MiB L2), medians 269 against 291 ms for fib and
/// 22.0 against 23.3 ms for Ackermann (shards of 300-400 measured alike, 500 between). The
/// builder's fib, interpreted, keeps [`FRAME_BYTES`]: in shards of 400 it ran 381 against 359
/// ms.
const COMPILED_FRAME_BYTES: usize = 1024;

/// Bytes each stacked leaf's saved frames count per lane in `mode` (`compiled`: the full VM
/// runs compiled blocks): none in stackless, which keeps no frames per lane.
fn frame_bytes(mode: Mode, compiled: bool) -> usize {
    match (mode, compiled) {
        (Mode::Stackless, _) => 0,
        (Mode::FullVm, false) => FRAME_BYTES,
        (Mode::FullVm, true) => COMPILED_FRAME_BYTES,
    }
}

/// What the full VM keeps a shard's current values and their places in the lane lists
/// ([`LIST_BYTES`]) within, beside [`SHARD_BYTES`] for its whole working set. A loop's block
/// runs every lane of its shard at each step, a few instructions a lane, so a shard whose
/// values a step walks from the second level of cache waits on them; a step touches part of a
/// lane's values (Collatz's loop block about a third), so this much keeps it within the first
/// level (48 KiB on the machine measured). Collatz step counts (10,000 lanes, no stacked
/// variable, 88 bytes a lane with the lists; cachegrind: 607K first-level misses as one shard
/// against 44K in shards of 1,024) ran 1.49 ms as one shard against 1.24 ms in this count's 7
/// shards of 1,429, and 0.90 against 0.73 ms on two threads; Mandelbrot escape counts (120
/// bytes a lane, more work per lane) 1.23 against 1.27 ms on one thread, 0.81 against 0.74 ms
/// on two (`lane_ops collatz|mandelbrot vm T 101`, the build before and this one, seven
/// alternated rounds, medians). Recursive programs' shards are smaller already (their frames
/// count); stackless, whose steps cost more, keeps whole batches (shards of 1,024 or 2,048 ran
/// alike or slower there).
const STEP_BYTES: usize = 128 << 10;

/// A lane's places in the full VM's lane lists, as [`STEP_BYTES`] counts them: the list its
/// block runs from and the one it goes to.
const LIST_BYTES: usize = 16;

/// Bytes of one lane's working set in `program` run in `mode` (`compiled`: the full VM runs
/// compiled blocks): what a default shard size keeps within [`SHARD_BYTES`]. Each variable
/// counts 8 bytes per element of each tensor leaf, and a stacked (FULL) leaf more for its
/// saved frames ([`frame_bytes`]; the program counter, a FULL variable wherever the program
/// calls, stands for the return addresses). In the full VM, at least the lane's share of
/// [`STEP_BYTES`] scaled to [`SHARD_BYTES`].
fn lane_bytes(program: &Program, vector_len: usize, (mode, compiled): (Mode, bool)) -> usize {
    let frames = frame_bytes(mode, compiled);
    let (mut values, mut saved) = (0, 0);
    for v in program.vars.iter() {
        let leaves = v.ty.leaves();
        values += leaves
            .iter()
            .map(|&t| 8 * width_of(t, vector_len))
            .sum::<usize>();
        if v.alloc == Allocation::Full {
            saved += frames * leaves.len();
        }
    }
    match mode {
        Mode::Stackless => values + saved,
        Mode::FullVm => (values + saved).max((values + LIST_BYTES) * (SHARD_BYTES / STEP_BYTES)),
    }
}

/// The process's pool of `threads` workers (built on first use, then kept for later runs),
/// or `None` for one thread, or if the operating system refuses the threads: the shards then
/// run one after another on the calling thread, with the same results.
fn pool(threads: usize) -> Option<Arc<ThreadPool>> {
    /// The pools built so far, by their number of threads.
    type Pools = Mutex<Vec<(usize, Arc<ThreadPool>)>>;
    static POOLS: OnceLock<Pools> = OnceLock::new();
    if threads <= 1 {
        return None;
    }
    let mut pools = POOLS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    if let Some((_, pool)) = pools.iter().find(|(n, _)| *n == threads) {
        return Some(pool.clone());
    }
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("autobatch-{i}"))
        .build()
        .ok()?;
    let pool = Arc::new(pool);
    pools.push((threads, pool.clone()));
    Some(pool)
}

#[cfg(test)]
mod tests {
    use super::{lane_bytes, layout, COMPILED_FRAME_BYTES, FRAME_BYTES, LIST_BYTES, STEP_BYTES};
    use crate::{shard_lanes, Mode, SHARD_BYTES};
    use autobatch_ir::{Allocation, DType, KernelId, Program, ProgramBuilder, Type, Var};

    /// `f(x: i64) -> y: f64[n]`, one block, every variable (the program counter too) a
    /// register.
    fn program() -> (Program, Var, Var) {
        let mut b = ProgramBuilder::new();
        let x = b.var("x", Type::I64);
        let y = b.var("y", Type::vector(DType::F64));
        let f = b.function("f");
        b.signature(f, &[x], &[y]);
        let e = b.block(f, "entry");
        b.prim(e, &[y], &[x], KernelId::new(0), "x");
        b.ret(e);
        let mut program = b.finish(f).unwrap().into_program();
        for v in program.vars.iter_mut() {
            v.alloc = Allocation::Register;
        }
        (program, x, y)
    }

    #[test]
    fn stacked_leaves_count_their_frames_per_lane_in_the_full_vm_only() {
        let (mut program, x, y) = program();
        // x, y (three elements) and the program counter.
        let plain = 8 + 8 * 3 + 8;
        let (vm, compiled) = ((Mode::FullVm, false), (Mode::FullVm, true));
        let stackless = (Mode::Stackless, true);
        assert_eq!(lane_bytes(&program, 3, stackless), plain);
        program.vars[x].alloc = Allocation::Full;
        assert_eq!(lane_bytes(&program, 3, vm), plain + FRAME_BYTES);
        program.vars[y].alloc = Allocation::Full;
        assert_eq!(lane_bytes(&program, 3, vm), plain + 2 * FRAME_BYTES);
        assert_eq!(lane_bytes(&program, 3, stackless), plain);
        // Compiled blocks count more per frame (smaller shards).
        let compiled_bytes = lane_bytes(&program, 3, compiled);
        assert_eq!(compiled_bytes, plain + 2 * COMPILED_FRAME_BYTES);
    }

    #[test]
    fn full_vm_lanes_without_frames_count_their_share_of_a_step() {
        let (program, _, _) = program();
        let plain = 8 + 8 * 3 + 8;
        let step = (plain + LIST_BYTES) * (SHARD_BYTES / STEP_BYTES);
        for compiled in [false, true] {
            assert_eq!(lane_bytes(&program, 3, (Mode::FullVm, compiled)), step);
        }
        assert_eq!(lane_bytes(&program, 3, (Mode::Stackless, false)), plain);
        // 10,000 such lanes on one thread: shards whose values and lists a step walks within
        // `STEP_BYTES` (in stackless, one shard).
        let size = shard_lanes(10_000, step, 1);
        assert_eq!(size, 2_000);
        assert!(size * (plain + LIST_BYTES) <= STEP_BYTES);
        assert_eq!(shard_lanes(10_000, plain, 1), 10_000);
    }

    /// Every lane in exactly one shard, in lane order inside it.
    fn check_cover(shards: &[Vec<usize>], batch: usize) {
        let mut all: Vec<usize> = shards.concat();
        assert!(shards.iter().all(|s| s.windows(2).all(|w| w[0] < w[1])));
        all.sort_unstable();
        assert_eq!(all, (0..batch).collect::<Vec<_>>());
    }

    #[test]
    fn explicit_shards_are_consecutive_lanes() {
        let shards = layout(10, 4, false);
        assert_eq!(shards, [vec![0, 1, 2, 3], vec![4, 5, 6, 7], vec![8, 9]]);
    }

    #[test]
    fn default_shards_are_dealt_runs_of_lanes_from_every_part_of_the_batch() {
        let shards = layout(10_000, 5_000, true);
        check_cover(&shards, 10_000);
        assert_eq!(shards.len(), 2);
        assert_eq!(shards[0][..3], [0, 1, 2]);
        assert_eq!(shards[0][64], 128);
        assert_eq!(shards[1][..2], [64, 65]);
        // Both halves of the batch in each shard, in equal shares.
        let low = |s: &Vec<usize>| s.iter().filter(|&&l| l < 5_000).count();
        assert_eq!((low(&shards[0]), low(&shards[1])), (2_504, 2_496));
        assert_eq!((shards[0].len(), shards[1].len()), (5_008, 4_992));
        // Small shards deal shorter runs: 100 heavy lanes on two threads.
        let shards = layout(100, 50, true);
        check_cover(&shards, 100);
        assert_eq!(shards[0][..4], [0, 1, 2, 6]);
        assert_eq!((shards[0].len(), shards[1].len()), (51, 49));
        for (batch, size) in [(1, 1), (7, 2), (1_000, 250), (12_345, 678)] {
            check_cover(&layout(batch, size, true), batch);
            check_cover(&layout(batch, size, false), batch);
        }
    }
}

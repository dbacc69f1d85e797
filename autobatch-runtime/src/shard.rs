//! Shards: a batch cut into runs of consecutive lanes, run on a rayon pool of
//! `Config::threads` workers and put back together in lane order.
//!
//! Lanes never interact (each lane's results are those of the scalar function), so every
//! shard is an independent run of the interpreter with its own storage, statistics and
//! budgets, and a lane's results do not depend on the thread count or the shard size. Errors
//! and failed lanes name lanes of the batch as given (a shard's lane `i` is lane
//! `start + i`).

use crate::column::width_of;
use crate::config::shard_lanes;
use crate::{Column, Config, LaneFailure, Result, Run, Stats};
use autobatch_ir::Program;
use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};
use std::ops::Range;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// Runs `exe` on `inputs` cut into shards as `config` asks, each through `run_one` (a run of
/// the whole of its inputs: one interpreter run, or lane isolation's runs); one shard runs
/// on the calling thread.
pub(crate) fn run(
    program: &Program,
    inputs: &[Column],
    config: &Config,
    run_one: impl Fn(&[Column], &Config) -> Result<Run> + Sync,
) -> Result<Run> {
    let (batch, vector_len) = crate::check_inputs(program, inputs, config)?;
    let threads = config.threads.max(1);
    let size = match config.shard_size {
        Some(size) => size.max(1),
        None => shard_lanes(batch, lane_bytes(program, vector_len), threads),
    };
    if batch <= size {
        return run_one(inputs, config);
    }
    let shards: Vec<Range<usize>> = (0..batch)
        .step_by(size)
        .map(|start| start..(start + size).min(batch))
        .collect();
    // Shards past the lowest one that failed cannot change the result: they are skipped.
    let lowest_failed = AtomicUsize::new(usize::MAX);
    let one = |(i, lanes): (usize, &Range<usize>)| {
        if i > lowest_failed.load(Ordering::Relaxed) {
            return None;
        }
        let rows: Vec<usize> = lanes.clone().collect();
        let subset: Vec<Column> = inputs.iter().map(|c| c.gather(&rows)).collect();
        let config = Config {
            batch_size: Some(rows.len()),
            ..config.clone()
        };
        let run = run_one(&subset, &config).map_err(|e| e.renumber(&rows));
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

/// The shards' runs as one run of `batch` lanes: outputs in lane order, statistics merged,
/// failures renumbered into the batch.
fn concatenate(runs: Vec<Run>, shards: &[Range<usize>], batch: usize) -> Run {
    let mut outputs: Vec<Column> = (runs.first().iter())
        .flat_map(|run| &run.outputs)
        .map(|c| Column::zeros(c.dtype(), batch, c.width()))
        .collect();
    let mut stats: Option<Stats> = None;
    let mut failed = Vec::new();
    for (run, lanes) in runs.into_iter().zip(shards) {
        for (out, col) in outputs.iter_mut().zip(&run.outputs) {
            out.copy_rows(col, (0..col.rows()).map(|r| (lanes.start + r, r)));
        }
        let map: Vec<usize> = lanes.clone().collect();
        failed.extend(run.failed.into_iter().map(|f| LaneFailure {
            lane: lanes.start + f.lane,
            error: f.error.renumber(&map),
        }));
        match &mut stats {
            None => stats = Some(run.stats),
            Some(stats) => stats.merge(&run.stats),
        }
    }
    Run {
        outputs,
        stats: stats.unwrap_or_default(),
        failed,
    }
}

/// Bytes of variables one lane of `program` holds (8 per element of each tensor leaf, frames
/// saved for calls not counted): what a default shard size keeps within cache.
fn lane_bytes(program: &Program, vector_len: usize) -> usize {
    (program.vars.iter())
        .flat_map(|v| v.ty.leaves())
        .map(|t| 8 * width_of(t, vector_len))
        .sum()
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

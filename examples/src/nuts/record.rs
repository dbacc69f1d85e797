//! Where draws go: the `record` primitive the chain loop calls after every transition, and
//! the per-run sink (installed on this thread by [`with_sink`]) that stores draws and their
//! statistics and reports progress.
//!
//! Recording is a side effect of a lane-wise primitive, so one autobatched call can run all of
//! a chain's transitions (chains at different tree depths keep the batch busy instead of
//! meeting at every draw) and still hand every draw back.
//!
//! With lane isolation a batch is run again without the chains that failed, so the other
//! chains record their transitions a second time, with the same bits. A chain records its
//! transitions in order, so the sink keeps each chain's latest transition and ignores one at
//! or before it: every slot is stored once, and progress and `recorded` count each transition
//! once.

use autobatch_runtime::ndarray::{s, Array, Array2, Array3, ArrayView1, Axis, RemoveAxis, Slice};
use autobatch_runtime::{primitive, Vector};
use std::cell::RefCell;

/// Every draw of a run with its statistics, indexed `[chain, draw]` (and `[.., coordinate]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Draws {
    /// Positions: `[chains, draws, dim]`.
    pub q: Array3<f64>,
    /// Tree depth of the transition that produced each draw.
    pub depth: Array2<i64>,
    /// Leapfrog steps (gradient evaluations) of each transition.
    pub n_leapfrog: Array2<i64>,
    /// Whether the transition's trajectory diverged.
    pub divergent: Array2<bool>,
    /// Mean acceptance probability over the transition's trajectory.
    pub accept: Array2<f64>,
    /// The step size the transition used.
    pub step_size: Array2<f64>,
    /// Log density at the draw.
    pub lp: Array2<f64>,
    /// Energy (Hamiltonian) of the draw with the momentum that reached it.
    pub energy: Array2<f64>,
    /// Whether each slot holds a recorded draw (every slot of a chain that ran to its end).
    pub stored: Array2<bool>,
    /// How many draws were recorded: the slots `stored` marks (a complete run records
    /// `chains * draws`).
    pub recorded: u64,
}

impl Draws {
    /// Room for `chains` chains of `draws` draws in `dim` dimensions.
    pub fn new(chains: usize, draws: usize, dim: usize) -> Self {
        Draws {
            q: Array3::zeros((chains, draws, dim)),
            depth: Array2::zeros((chains, draws)),
            n_leapfrog: Array2::zeros((chains, draws)),
            divergent: Array2::from_elem((chains, draws), false),
            accept: Array2::zeros((chains, draws)),
            step_size: Array2::zeros((chains, draws)),
            lp: Array2::zeros((chains, draws)),
            energy: Array2::zeros((chains, draws)),
            stored: Array2::from_elem((chains, draws), false),
            recorded: 0,
        }
    }

    /// Only the draws of the chains at `rows` (strictly increasing), in that order: e.g. the
    /// chains that did not fail. Each kept chain's rows move down in place, so this needs no
    /// memory beyond what the draws already hold.
    ///
    /// # Panics
    /// If `rows` is not strictly increasing or names a chain past the last.
    pub fn keep_chains(self, rows: &[usize]) -> Draws {
        let stored = keep_rows(self.stored, rows);
        Draws {
            q: keep_rows(self.q, rows),
            depth: keep_rows(self.depth, rows),
            n_leapfrog: keep_rows(self.n_leapfrog, rows),
            divergent: keep_rows(self.divergent, rows),
            accept: keep_rows(self.accept, rows),
            step_size: keep_rows(self.step_size, rows),
            lp: keep_rows(self.lp, rows),
            energy: keep_rows(self.energy, rows),
            recorded: stored.iter().filter(|&&s| s).count() as u64,
            stored,
        }
    }

    /// Draws per chain this holds room for.
    pub fn len(&self) -> usize {
        self.q.dim().1
    }

    /// Whether this holds no draws (e.g. warmup that was not kept).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes of every array of `chains x draws` draws in `dim` dimensions (memory estimates).
    pub fn bytes(chains: usize, draws: usize, dim: usize) -> u128 {
        // q, then accept, step size, lp, energy (f64), depth and n_leapfrog (i64), divergent,
        // stored.
        let (cells, dim) = ((chains as u128) * (draws as u128), dim as u128);
        cells * (8 * dim + 6 * 8 + 2)
    }

    /// Stores one transition's draw and statistics at `[chain, draw]`.
    fn store(&mut self, c: usize, d: usize, q: &Vector, stats: DrawStats) {
        self.q
            .slice_mut(s![c, d, ..])
            .assign(&ArrayView1::from(q.as_slice()));
        self.depth[[c, d]] = stats.depth;
        self.n_leapfrog[[c, d]] = stats.n_leapfrog;
        self.divergent[[c, d]] = stats.divergent;
        self.accept[[c, d]] = stats.accept;
        self.step_size[[c, d]] = stats.step_size;
        self.lp[[c, d]] = stats.lp;
        self.energy[[c, d]] = stats.energy;
        self.stored[[c, d]] = true;
        self.recorded += 1;
    }
}

/// `a` with only its rows (along the first axis) at `rows`, strictly increasing: row
/// `rows[k]` moves to row `k` in place, and the array is cut after the last kept row.
fn keep_rows<A: Clone, D: RemoveAxis>(mut a: Array<A, D>, rows: &[usize]) -> Array<A, D> {
    assert!(
        rows.windows(2).all(|w| w[0] < w[1]) && rows.last().is_none_or(|&r| r < a.len_of(Axis(0))),
        "rows to keep must be strictly increasing and in range: {rows:?}"
    );
    for (k, &row) in rows.iter().enumerate() {
        if k != row {
            // k < row: the row moves down, past rows already kept.
            let (mut below, above) = a.view_mut().split_at(Axis(0), row);
            below
                .index_axis_mut(Axis(0), k)
                .assign(&above.index_axis(Axis(0), 0));
        }
    }
    a.slice_axis_inplace(Axis(0), Slice::from(..rows.len()));
    a
}

/// One transition's statistics, as [`record()`] receives them.
struct DrawStats {
    depth: i64,
    n_leapfrog: i64,
    divergent: bool,
    accept: f64,
    step_size: f64,
    lp: f64,
    energy: f64,
}

/// What a sink recorded: the draws kept, and the warmup transitions if it was asked to keep
/// them.
#[derive(Clone, Debug, PartialEq)]
pub struct Recorded {
    /// The draws after warmup.
    pub draws: Draws,
    /// The warmup transitions, `[chains, warmup, ..]`; empty unless kept.
    pub warmup: Draws,
}

impl Recorded {
    /// Only what the chains at `rows` (strictly increasing) recorded, in that order, moved in
    /// place (see [`Draws::keep_chains`]).
    pub fn keep_chains(self, rows: &[usize]) -> Recorded {
        Recorded {
            draws: self.draws.keep_chains(rows),
            warmup: self.warmup.keep_chains(rows),
        }
    }
}

/// Progress of a run: transitions finished (warmup included) out of the total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    /// Transitions finished over all chains.
    pub done: u64,
    /// Transitions the run will make: `chains * (warmup + draws)`.
    pub total: u64,
}

struct Sink {
    recorded: Recorded,
    /// Per chain: the latest transition it recorded (`draw`, negative in warmup), if any.
    latest: Vec<Option<i64>>,
    progress: Progress,
    report_every: u64,
    report: Box<dyn FnMut(Progress)>,
}

thread_local! {
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// Runs `f` with a sink for `chains x draws` draws in `dim` dimensions installed on this
/// thread (and for the last `keep_warmup` warmup transitions of each chain: 0 keeps none),
/// calling `report` about a hundred times as `total` transitions finish; returns `f`'s result
/// and what was recorded. A transition recorded again (a re-run of the batch) is not stored
/// or counted twice. A sink already installed is restored afterwards.
pub fn with_sink<R>(
    shape: (usize, usize, usize),
    keep_warmup: usize,
    total: u64,
    report: impl FnMut(Progress) + 'static,
    f: impl FnOnce() -> R,
) -> (R, Recorded) {
    /// Puts the previous sink back, also when `f` panics.
    struct Restore(Option<Sink>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SINK.with(|s| *s.borrow_mut() = self.0.take());
        }
    }
    let (chains, draws, dim) = shape;
    let sink = Sink {
        recorded: Recorded {
            draws: Draws::new(chains, draws, dim),
            warmup: Draws::new(chains, keep_warmup, dim),
        },
        latest: vec![None; chains],
        progress: Progress { done: 0, total },
        report_every: (total / 100).max(1),
        report: Box::new(report),
    };
    let restore = Restore(SINK.with(|s| s.borrow_mut().replace(sink)));
    let result = f();
    let ours = SINK.with(|s| s.borrow_mut().take());
    drop(restore);
    let recorded = ours.expect("the sink installed above").recorded;
    (result, recorded)
}

/// Records draw number `draw` of chain `chain` with its statistics (a negative `draw` is a
/// warmup transition, `-1` the last: stored only if the sink keeps warmup that far back, and
/// always counted towards progress). Returns whether a sink stored it; without a sink
/// installed (a plain call of the scalar sampler outside [`super::sample`]) this does nothing.
/// A transition at or before the chain's latest one is a replay (see the module docs): it
/// returns what it returned the first time, and changes nothing.
///
/// # Panics
/// If `chain` or `draw` is outside the sink's shape (the runtime reports it as a kernel error).
#[primitive]
#[allow(clippy::too_many_arguments)]
pub fn record(
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
    SINK.with(|s| {
        let mut guard = s.borrow_mut();
        let Some(sink) = guard.as_mut() else {
            return false;
        };
        let (draws, d) = if draw < 0 {
            let warmup = &mut sink.recorded.warmup;
            let d = warmup.len().checked_sub(draw.unsigned_abs() as usize);
            (warmup, d)
        } else {
            (&mut sink.recorded.draws, Some(draw as usize))
        };
        let c = chain as usize;
        let (chains, n, _) = draws.q.dim();
        assert!(
            chain >= 0 && c < chains && d.is_none_or(|d| d < n),
            "draw ({chain}, {draw}) is outside the run's {chains} chains x {n} draws"
        );
        let latest = &mut sink.latest[c];
        if latest.is_some_and(|latest| draw <= latest) {
            return d.is_some();
        }
        *latest = Some(draw);
        let Some(d) = d else {
            count(sink);
            return false;
        };
        let stats = DrawStats {
            depth,
            n_leapfrog,
            divergent,
            accept,
            step_size,
            lp,
            energy,
        };
        draws.store(c, d, q, stats);
        count(sink);
        true
    })
}

/// Counts one more transition done, reporting progress about a hundred times over the run.
fn count(sink: &mut Sink) {
    sink.progress.done += 1;
    let done = sink.progress.done;
    if done.is_multiple_of(sink.report_every) || done == sink.progress.total {
        (sink.report)(sink.progress);
    }
}

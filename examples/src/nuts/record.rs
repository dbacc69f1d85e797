//! Where draws go: the per-run [`Sink`] that stores every chain's draws and their statistics
//! and reports progress. It is part of the run's context ([`super::Shared`]), and the
//! `record` primitive there writes through it after every transition.
//!
//! Recording is a side effect of a lane-wise primitive, so one autobatched call can run all of
//! a chain's transitions (chains at different tree depths keep the batch busy instead of
//! meeting at every draw) and still hand every draw back.
//!
//! Shards of chains run on several threads at once, so the sink is written through a shared
//! reference: every value is a 64-bit cell written by index, and a chain writes only its own
//! slots, so no lock is taken per draw (only the progress report, about a hundred times a
//! run, takes one).
//!
//! With lane isolation a batch is run again without the chains that failed, so the other
//! chains record their transitions a second time, with the same bits. A chain records its
//! transitions in order, so the sink keeps each chain's latest transition and ignores one at
//! or before it: every slot is stored once, and progress and `recorded` count each transition
//! once.

use autobatch_runtime::ndarray::{Array, Array2, Array3, Axis, RemoveAxis, ShapeBuilder, Slice};
use autobatch_runtime::Vector;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

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

/// One transition's statistics, as the `record` primitive receives them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct DrawStats {
    /// Tree depth.
    pub depth: i64,
    /// Leapfrog steps (gradient evaluations).
    pub n_leapfrog: i64,
    /// Whether the trajectory diverged.
    pub divergent: bool,
    /// Mean acceptance probability over the trajectory.
    pub accept: f64,
    /// The step size used.
    pub step_size: f64,
    /// Log density at the draw.
    pub lp: f64,
    /// Energy of the draw.
    pub energy: f64,
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

/// 64-bit cells any thread may write by index; read back once the writers are done.
struct Cells(Vec<AtomicU64>);

impl Cells {
    fn new(len: usize) -> Self {
        Cells((0..len).map(|_| AtomicU64::new(0)).collect())
    }

    fn set(&self, at: usize, bits: u64) {
        self.0[at].store(bits, Ordering::Relaxed);
    }

    /// The cells as an array of `shape`, each read with `read` (for 8-byte types the
    /// conversion reuses the cells' memory).
    fn into_array<T, Sh: ShapeBuilder>(self, shape: Sh, read: fn(u64) -> T) -> Array<T, Sh::Dim> {
        let values = self.0.into_iter().map(|c| read(c.into_inner())).collect();
        Array::from_shape_vec(shape, values).expect("cells of the shape they were made for")
    }
}

/// Draws of `[chains, draws]` (and `dim` coordinates) as cells (see [`Draws`] for the fields).
struct DrawCells {
    shape: (usize, usize, usize),
    q: Cells,
    depth: Cells,
    n_leapfrog: Cells,
    divergent: Cells,
    accept: Cells,
    step_size: Cells,
    lp: Cells,
    energy: Cells,
    stored: Cells,
}

impl DrawCells {
    fn new(chains: usize, draws: usize, dim: usize) -> Self {
        let cells = chains * draws;
        DrawCells {
            shape: (chains, draws, dim),
            q: Cells::new(cells * dim),
            depth: Cells::new(cells),
            n_leapfrog: Cells::new(cells),
            divergent: Cells::new(cells),
            accept: Cells::new(cells),
            step_size: Cells::new(cells),
            lp: Cells::new(cells),
            energy: Cells::new(cells),
            stored: Cells::new(cells),
        }
    }

    /// Stores one transition's draw and statistics at `[chain, draw]`.
    fn store(&self, c: usize, d: usize, q: &Vector, stats: DrawStats) {
        let (_, draws, dim) = self.shape;
        let at = c * draws + d;
        for (j, x) in q.as_slice().iter().enumerate() {
            self.q.set(at * dim + j, x.to_bits());
        }
        self.depth.set(at, stats.depth as u64);
        self.n_leapfrog.set(at, stats.n_leapfrog as u64);
        self.divergent.set(at, u64::from(stats.divergent));
        self.accept.set(at, stats.accept.to_bits());
        self.step_size.set(at, stats.step_size.to_bits());
        self.lp.set(at, stats.lp.to_bits());
        self.energy.set(at, stats.energy.to_bits());
        self.stored.set(at, 1);
    }

    fn into_draws(self) -> Draws {
        let (chains, draws, dim) = self.shape;
        let cells = (chains, draws);
        let stored = self.stored.into_array(cells, |b| b != 0);
        Draws {
            q: self.q.into_array((chains, draws, dim), f64::from_bits),
            depth: self.depth.into_array(cells, |b| b as i64),
            n_leapfrog: self.n_leapfrog.into_array(cells, |b| b as i64),
            divergent: self.divergent.into_array(cells, |b| b != 0),
            accept: self.accept.into_array(cells, f64::from_bits),
            step_size: self.step_size.into_array(cells, f64::from_bits),
            lp: self.lp.into_array(cells, f64::from_bits),
            energy: self.energy.into_array(cells, f64::from_bits),
            recorded: stored.iter().filter(|&&s| s).count() as u64,
            stored,
        }
    }
}

/// The progress callback with the last count it was given.
struct Reporter {
    last: u64,
    report: Box<dyn FnMut(Progress) + Send>,
}

/// No transition recorded yet by a chain (below every draw index, warmup included).
const NONE_YET: i64 = i64::MIN;

/// The sink of one run: every chain's draws and statistics (and warmup transitions if kept),
/// written through a shared reference from whatever thread runs the chain, and the progress
/// of the run. Hand it to the run's context with [`super::Shared::recording`].
pub struct Sink {
    draws: DrawCells,
    warmup: DrawCells,
    /// Per chain: the latest transition it recorded (`draw`, negative in warmup), or
    /// [`NONE_YET`].
    latest: Vec<AtomicI64>,
    done: AtomicU64,
    total: u64,
    report_every: u64,
    /// The progress callback, if any.
    reporter: Option<Mutex<Reporter>>,
}

impl Sink {
    /// A sink for `chains x draws` draws in `dim` dimensions (`shape`), and for the last
    /// `keep_warmup` warmup transitions of each chain (0 keeps none). It reports no progress
    /// until given a callback with [`reporting`](Self::reporting).
    pub fn new(shape: (usize, usize, usize), keep_warmup: usize) -> Self {
        let (chains, draws, dim) = shape;
        Sink {
            draws: DrawCells::new(chains, draws, dim),
            warmup: DrawCells::new(chains, keep_warmup, dim),
            latest: (0..chains).map(|_| AtomicI64::new(NONE_YET)).collect(),
            done: AtomicU64::new(0),
            total: 0,
            report_every: 1,
            reporter: None,
        }
    }

    /// This sink, calling `report` about a hundred times as `total` transitions finish, with
    /// counts that only grow and end at `total`. `report` is called from the thread that
    /// records the transition (a worker thread of the run), one call at a time.
    pub fn reporting(self, total: u64, report: impl FnMut(Progress) + Send + 'static) -> Self {
        Sink {
            total,
            report_every: (total / 100).max(1),
            reporter: Some(Mutex::new(Reporter {
                last: 0,
                report: Box::new(report),
            })),
            ..self
        }
    }

    /// What was recorded: every slot a chain stored (see [`Draws::stored`]).
    pub fn into_recorded(self) -> Recorded {
        Recorded {
            draws: self.draws.into_draws(),
            warmup: self.warmup.into_draws(),
        }
    }

    /// Records draw number `draw` of chain `chain` (a negative `draw` is a warmup transition,
    /// `-1` the last: stored only if the sink keeps warmup that far back, and always counted
    /// towards progress); returns whether it was stored. A transition at or before the
    /// chain's latest one is a replay (see the module docs): it returns what it returned the
    /// first time, and changes nothing.
    ///
    /// # Panics
    /// If `chain` or `draw` is outside the sink's shape.
    pub fn record(&self, chain: i64, draw: i64, q: &Vector, stats: DrawStats) -> bool {
        let (cells, d) = if draw < 0 {
            let kept = self.warmup.shape.1;
            (&self.warmup, kept.checked_sub(draw.unsigned_abs() as usize))
        } else {
            (&self.draws, Some(draw as usize))
        };
        let c = chain as usize;
        let (chains, n, dim) = cells.shape;
        assert!(
            chain >= 0 && c < chains && d.is_none_or(|d| d < n),
            "draw ({chain}, {draw}) is outside the run's {chains} chains x {n} draws"
        );
        assert_eq!(
            q.len(),
            dim,
            "draw ({chain}, {draw}) has {} coordinates, not {dim}",
            q.len()
        );
        if self.latest[c].fetch_max(draw, Ordering::Relaxed) >= draw {
            return d.is_some();
        }
        if let Some(d) = d {
            cells.store(c, d, q, stats);
        }
        self.count();
        d.is_some()
    }

    /// Counts one more transition done, reporting progress about a hundred times over the run.
    fn count(&self) {
        let done = self.done.fetch_add(1, Ordering::Relaxed) + 1;
        let Some(reporter) = &self.reporter else {
            return;
        };
        if !(done.is_multiple_of(self.report_every) || done == self.total) {
            return;
        }
        let mut reporter = reporter.lock().unwrap_or_else(PoisonError::into_inner);
        // Read again under the lock, so reports from several threads only grow.
        let done = self.done.load(Ordering::Relaxed);
        if done > reporter.last {
            reporter.last = done;
            (reporter.report)(Progress {
                done,
                total: self.total,
            });
        }
    }
}

//! Where draws go: the `record` primitive the chain loop calls after every transition, and
//! the per-run sink (installed on this thread by [`with_sink`]) that stores draws and their
//! statistics and reports progress.
//!
//! Recording is a side effect of a lane-wise primitive, so one autobatched call can run all of
//! a chain's transitions (chains at different tree depths keep the batch busy instead of
//! meeting at every draw) and still hand every draw back.

use autobatch_runtime::ndarray::{Array2, Array3};
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
    /// How many draws were recorded (a complete run records `chains * draws`).
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
            recorded: 0,
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
    draws: Draws,
    progress: Progress,
    report_every: u64,
    report: Box<dyn FnMut(Progress)>,
}

thread_local! {
    static SINK: RefCell<Option<Sink>> = const { RefCell::new(None) };
}

/// Runs `f` with a sink for `chains x draws` draws in `dim` dimensions installed on this
/// thread, calling `report` about a hundred times as `total` transitions finish; returns
/// `f`'s result and the draws recorded. A sink already installed is restored afterwards.
pub fn with_sink<R>(
    shape: (usize, usize, usize),
    total: u64,
    report: impl FnMut(Progress) + 'static,
    f: impl FnOnce() -> R,
) -> (R, Draws) {
    /// Puts the previous sink back, also when `f` panics.
    struct Restore(Option<Sink>);
    impl Drop for Restore {
        fn drop(&mut self) {
            SINK.with(|s| *s.borrow_mut() = self.0.take());
        }
    }
    let (chains, draws, dim) = shape;
    let sink = Sink {
        draws: Draws::new(chains, draws, dim),
        progress: Progress { done: 0, total },
        report_every: (total / 100).max(1),
        report: Box::new(report),
    };
    let restore = Restore(SINK.with(|s| s.borrow_mut().replace(sink)));
    let result = f();
    let ours = SINK.with(|s| s.borrow_mut().take());
    drop(restore);
    let draws = ours.expect("the sink installed above").draws;
    (result, draws)
}

/// Records draw number `draw` of chain `chain` (a negative `draw` is a warmup transition: it
/// only counts towards progress). Returns whether a sink stored it; without a sink installed
/// (a plain call of the scalar sampler outside [`super::sample`]) this does nothing.
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
) -> bool {
    SINK.with(|s| {
        let mut guard = s.borrow_mut();
        let Some(sink) = guard.as_mut() else {
            return false;
        };
        sink.progress.done += 1;
        if sink.progress.done % sink.report_every == 0 || sink.progress.done == sink.progress.total
        {
            (sink.report)(sink.progress);
        }
        if draw < 0 {
            return false;
        }
        let (c, d) = (chain as usize, draw as usize);
        let draws = &mut sink.draws;
        let (chains, n, _) = draws.q.dim();
        assert!(
            chain >= 0 && c < chains && d < n,
            "draw ({chain}, {draw}) is outside the run's {chains} chains x {n} draws"
        );
        draws
            .q
            .slice_mut(autobatch_runtime::ndarray::s![c, d, ..])
            .assign(&autobatch_runtime::ndarray::ArrayView1::from(q.as_slice()));
        draws.depth[[c, d]] = depth;
        draws.n_leapfrog[[c, d]] = n_leapfrog;
        draws.divergent[[c, d]] = divergent;
        draws.accept[[c, d]] = accept;
        draws.step_size[[c, d]] = step_size;
        draws.recorded += 1;
        true
    })
}

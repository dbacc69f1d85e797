// The user-facing crate: the interpreters, the types users name, and `__private` for generated
// code. Its front page (crate docs) is `docs/crate.md`.
#![doc = include_str!("../docs/crate.md")]
#![warn(missing_docs)]

mod codegen;
mod column;
mod compiled;
mod config;
mod depth;
mod error;
mod exec;
mod kernel;
pub mod linalg;
pub mod math;
mod panics;
mod policy;
mod pool;
mod prefetch;
pub mod primitive;
mod random;
mod reference;
mod shard;
mod spare;
mod stackless;
mod stats;
mod storage;
mod vector;
mod vm;

pub use autobatch_ir as ir;

/// What the code `#[autobatch]` and `#[primitive]` generate reaches the runtime through; not
/// part of the public API (serde's `__private` convention): its items may change in any
/// release.
#[doc(hidden)]
pub mod __private {
    pub use crate::codegen::*;
    pub use crate::compiled::{
        Blame, BlameGuard, BlockFn, BlockRun, CompiledBlocks, Faults, Frames, LaneVar, Sides,
    };
    pub use crate::prefetch::PREFETCH_AHEAD;
    pub use crate::primitive::{check_agreement, AgreementError, Tolerance};
    pub use crate::{
        Column, Config, Context, ContextType, DirectCall, Executable, Isolated, Kernel,
        KernelError, Key, LaneInputs, LaneOutputs, RuntimeError, Stats, Vector, VectorOut,
    };
    pub use autobatch_ir as ir;
    /// A callee's description re-applies `autobatch` to its caller through `resume!`.
    pub use autobatch_macros::{autobatch, resume};
    pub use ndarray;
}
pub use autobatch_ir::passes::{InlineOptions, Passes, Source};
pub use autobatch_macros::{autobatch, primitive};
pub use column::{Column, Element};
pub use config::{
    available_threads, shard_lanes, Config, Mode, Schedule, DEFAULT_MEMORY_BUDGET,
    MIN_CACHE_SHARD_LANES, MIN_SHARD_BYTES, MIN_SHARD_LANES, SHARD_BYTES,
};
pub use error::{Result, RuntimeError};
pub use kernel::{
    output_slice, BatchedFn, Context, ContextType, DenseScalars, DirectCall, DirectFn, InputRows,
    Kernel, KernelError, LaneInputs, LaneOutputs, LaneScalarsOut, LaneSplit, LaneWiseFn,
    OutputLeaf, ScalarsOut, VectorOut,
};
pub use ndarray;
pub use random::Key;
pub use stats::{BlockStats, KernelStats, Stats};
pub use vector::Vector;

use autobatch_ir::passes::liveness;
use autobatch_ir::passes::pipeline::{prepare, Allocations, VerifiedSource};
use autobatch_ir::{HighProgram, KernelRef, LoweredProgram, PrimOp, Program, Shape, TensorType};
use compiled::CompiledBlocks;
use exec::Exec;
use spare::Spares;
use storage::Storage;

/// The result of a run: one column per output leaf, and what the run did.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// One column per leaf of each output variable, rows in lane order.
    pub outputs: Vec<Column>,
    /// Execution statistics (of the last run, with [`Config::lane_isolation`]: the one
    /// without the failed lanes).
    pub stats: Stats,
    /// The lanes that failed, lowest first, each with its error; empty unless
    /// [`Config::lane_isolation`] is on. Their output rows hold zeros.
    pub failed: Vec<LaneFailure>,
}

/// One lane that failed in a run with [`Config::lane_isolation`].
#[derive(Clone, Debug, PartialEq)]
pub struct LaneFailure {
    /// The lane, in the batch as given.
    pub lane: usize,
    /// Why it failed (lanes in it numbered as in the batch given).
    pub error: RuntimeError,
}

/// What a generated `batch_isolated` entry point returns: the typed outputs (rows of failed
/// lanes hold zeros), the lanes that failed with their errors, and the run's statistics.
///
/// ```
/// use autobatch_runtime::{autobatch, Config};
/// use autobatch_runtime::ndarray::array;
///
/// #[autobatch]
/// fn ratio(a: i64, b: i64) -> i64 {
///     a / b
/// }
///
/// let run = ratio::batch_isolated(array![6, 1, 8].view(), array![3, 0, 2].view(), &Config::default())
///     .unwrap();
/// assert_eq!(run.failed.len(), 1);
/// assert_eq!(run.failed[0].lane, 1);
/// assert_eq!((run.outputs[0], run.outputs[2]), (2, 4));
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Isolated<T> {
    /// The outputs, one row per lane.
    pub outputs: T,
    /// The lanes that failed, lowest first, each with its error.
    pub failed: Vec<LaneFailure>,
    /// Execution statistics of the run without the failed lanes.
    pub stats: Stats,
}

impl Run {
    /// This run if every lane succeeded, or the first failed lane's error: for callers that
    /// want all lanes or nothing whatever the configuration.
    pub fn complete(mut self) -> Result<Run> {
        if self.failed.is_empty() {
            Ok(self)
        } else {
            Err(self.failed.swap_remove(0).error)
        }
    }

    /// Whether `lane` has a result (it did not fail).
    pub fn succeeded(&self, lane: usize) -> bool {
        !self.failed.iter().any(|f| f.lane == lane)
    }
}

/// A program ready to run: verified, allocated, lowered for the full VM, with its kernels.
///
/// It keeps the dense columns of its finished runs (at most 16 MiB for each of as many runs
/// as the process may use threads) for its next runs, which then write memory the process
/// already has instead of having fresh pages mapped in; a clone starts with none.
#[derive(Clone, Debug)]
pub struct Executable {
    source: VerifiedSource,
    high: Option<(HighProgram, stackless::Plan)>,
    lowered: LoweredProgram,
    /// Facts about `lowered` the full VM uses.
    vm_plan: vm::Plan,
    kernels: Vec<Kernel>,
    /// The context type the program's kernels read, if any (set by the linker).
    context: Option<ContextType>,
    /// Memory finished runs left for later ones.
    spares: Spares,
}

impl Executable {
    /// Verifies `program`, computes its allocation (high-level programs) and prepares it with
    /// the default [`Passes`] (see [`with_passes`](Self::with_passes)).
    ///
    /// `program` is a high-level program ([`Program`] or [`HighProgram`]) or a hand-lowered
    /// one ([`LoweredProgram`], or [`Source::Lowered`]).
    pub fn new(program: impl Into<Source>, kernels: Vec<Kernel>) -> Result<Self> {
        Self::with_passes(program, kernels, &Passes::default())
    }

    /// Verifies `program`, computes its allocation (high-level programs) and prepares it as
    /// [`prepare`] describes: the high-level program it makes
    /// is what stackless runs ([`program`](Self::program)), the lowered one what the full VM
    /// runs ([`lowered`](Self::lowered)). Blocks holding a batched kernel are ordered last.
    pub fn with_passes(
        program: impl Into<Source>,
        kernels: Vec<Kernel>,
        passes: &Passes,
    ) -> Result<Self> {
        Self::prepare(program.into(), kernels, passes, Allocations::Compute)
    }

    /// Like [`new`](Self::new) but trusts the allocations the program carries (for example
    /// computed by `#[autobatch]` at compile time). They must be sound: every variable live
    /// across a call that may overwrite it must be FULL. When inlining or copy propagation
    /// changes the program, the prepared program's allocation is computed (the one given
    /// describes the program before them); a program neither changes keeps the allocation
    /// given. Prepared with the default [`Passes`].
    pub fn with_allocations(program: impl Into<Source>, kernels: Vec<Kernel>) -> Result<Self> {
        Self::prepare(
            program.into(),
            kernels,
            &Passes::default(),
            Allocations::Trust,
        )
    }

    /// Runs the IR pipeline (which verifies `source` once) and plans each interpreter's run.
    fn prepare(
        source: Source,
        kernels: Vec<Kernel>,
        passes: &Passes,
        allocations: Allocations,
    ) -> Result<Self> {
        // Blocks with a batched kernel run last, so lanes gather there (see
        // `prioritize_blocks_deferring`).
        let batched = |op: &PrimOp| {
            matches!(op.kernel, KernelRef::User(id)
                if matches!(kernels.get(id.index()), Some(Kernel::Batched(_))))
        };
        let prepared = prepare(source, passes, allocations, batched)?;
        let vm_plan = vm::Plan::new(&prepared.lowered, prepared.high.as_deref(), batched);
        let high = prepared.high.map(|high| {
            let plan = stackless::Plan::new(&high, &liveness(&high));
            (high, plan)
        });
        Ok(Executable {
            source: prepared.source,
            high,
            lowered: prepared.lowered,
            vm_plan,
            kernels,
            context: None,
            spares: Spares::default(),
        })
    }

    /// Takes `compiled` as the full VM's compiled blocks if they were generated from this
    /// lowered program (its fingerprint is theirs); else every block stays interpreted.
    pub(crate) fn attach_compiled(&mut self, compiled: CompiledBlocks) {
        self.vm_plan.attach(&self.lowered, compiled);
    }

    /// The program as it was given (verified; allocated unless built
    /// [`with_allocations`](Self::with_allocations)), before any pass changed its blocks or
    /// calls: what [`run_reference`](Self::run_reference) runs.
    pub fn source(&self) -> &Program {
        self.source.program()
    }

    /// The high-level program stackless runs: the source with small calls inlined, blocks
    /// simplified and needless copies removed, as [`Passes`] asked (`None` for a hand-lowered
    /// program).
    pub fn program(&self) -> Option<&HighProgram> {
        self.high.as_ref().map(|(p, _)| p)
    }

    /// The lowered, simplified, fused, priority-ordered program the full VM runs.
    pub fn lowered(&self) -> &LoweredProgram {
        &self.lowered
    }

    /// The kernel table.
    pub fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    /// The context type this program's functions and primitives read (a `&T` parameter),
    /// which [`run_with_context`](Self::run_with_context) must be given; `None` if they read
    /// none.
    pub fn context_type(&self) -> Option<ContextType> {
        self.context
    }

    /// This executable with `context` as the context type its kernels read: runs given none
    /// or another type fail with [`RuntimeError::Context`] before any kernel runs.
    pub fn expecting_context(self, context: ContextType) -> Self {
        Executable {
            context: Some(context),
            ..self
        }
    }

    /// Checks the context given to a run against the one the program reads.
    fn check_context(&self, given: Context<'_>) -> Result<()> {
        match (self.context, given.type_of()) {
            (Some(want), Some((id, _))) if want.id == id => Ok(()),
            (Some(want), found) => Err(RuntimeError::Context {
                expected: want.name,
                found: found.map_or_else(|| "none".to_string(), |(_, n)| format!("a `{n}`")),
            }),
            (None, _) => Ok(()),
        }
    }

    /// Runs the program on a batch: `inputs` holds one column per input leaf. With
    /// [`Config::lane_isolation`], lanes that fail are listed in [`Run::failed`] and the others
    /// keep their results.
    ///
    /// The batch is cut into shards of [`Config::shard_size`] lanes run on
    /// [`Config::threads`] threads; the results are those of one run over the whole batch, bit
    /// for bit, and a failure is reported from the lowest shard that failed.
    pub fn run(&self, inputs: &[Column], config: &Config) -> Result<Run> {
        self.run_with_context(Context::none(), inputs, config)
    }

    /// Like [`run`](Self::run), with `context` the value every lane shares (a model, settings):
    /// every kernel call receives it, none copies it into a column. A program that reads a
    /// context ([`context_type`](Self::context_type)) must be given one of that type, else
    /// [`RuntimeError::Context`].
    ///
    /// ```
    /// use autobatch_runtime::{autobatch, Column, Config, Context, RuntimeError};
    ///
    /// struct Settings { limit: i64 }
    ///
    /// #[autobatch]
    /// fn capped(settings: &Settings, x: i64) -> i64 {
    ///     x.min(settings.limit)
    /// }
    ///
    /// fn main() {
    ///     let exe = capped::executable().unwrap();
    ///     let xs = [Column::from_scalars(&[1i64, 7, 12])];
    ///     let settings = Settings { limit: 5 };
    ///     let run = exe
    ///         .run_with_context(Context::new(&settings), &xs, &Config::default())
    ///         .unwrap();
    ///     assert_eq!(run.outputs[0], Column::from_scalars(&[1i64, 5, 5]));
    ///     let wrong = exe.run_with_context(Context::new(&5i64), &xs, &Config::default());
    ///     assert!(matches!(wrong, Err(RuntimeError::Context { .. })));
    ///     assert!(matches!(exe.run(&xs, &Config::default()), Err(RuntimeError::Context { .. })));
    /// }
    /// ```
    pub fn run_with_context(
        &self,
        context: Context<'_>,
        inputs: &[Column],
        config: &Config,
    ) -> Result<Run> {
        self.check_context(context)?;
        let program: &Program = match config.mode {
            Mode::FullVm => &self.lowered,
            Mode::Stackless => self.high_program()?.0,
        };
        let compiled = config.mode == Mode::FullVm && self.vm_plan.runs_compiled(config);
        shard::run(program, inputs, (config, compiled), |inputs, config| {
            self.run_shard(context, inputs, config)
        })
    }

    /// Runs one shard of a batch (all of `inputs`) on the calling thread, isolating failing
    /// lanes if `config` asks.
    fn run_shard(&self, context: Context<'_>, inputs: &[Column], config: &Config) -> Result<Run> {
        if !config.lane_isolation {
            return self.run_batch(context, inputs, config);
        }
        let program = match config.mode {
            Mode::FullVm => &self.lowered,
            Mode::Stackless => self.high_program()?.0,
        };
        let (batch, _) = check_inputs(program, inputs, config)?;
        // `alive[i]`: the batch lane that is lane `i` of the current run.
        let mut alive: Vec<usize> = (0..batch).collect();
        let mut failed: Vec<LaneFailure> = Vec::new();
        loop {
            let subset: Vec<Column> = inputs.iter().map(|c| c.gather(&alive)).collect();
            // Still isolating: the interpreters count each lane's steps on its own.
            let config = Config {
                batch_size: Some(alive.len()),
                ..config.clone()
            };
            let error = match self.run_batch(context, &subset, &config) {
                Ok(run) => return Ok(spread(run, &alive, batch, failed)),
                Err(error) => error,
            };
            let gone: Vec<usize> = (error.lanes().iter())
                .filter_map(|&l| alive.get(l).copied())
                .collect();
            if gone.is_empty() {
                return Err(error.renumber(&alive));
            }
            let error = error.renumber(&alive);
            failed.extend(gone.iter().map(|&lane| LaneFailure {
                lane,
                error: error.clone(),
            }));
            alive.retain(|l| !gone.contains(l));
        }
    }

    /// Runs every lane of the batch; the first failure fails the run.
    fn run_batch(&self, context: Context<'_>, inputs: &[Column], config: &Config) -> Result<Run> {
        let (program, stackless_plan): (&Program, _) = match config.mode {
            Mode::FullVm => (&self.lowered, None),
            Mode::Stackless => {
                let (program, plan) = self.high_program()?;
                (program, Some(plan))
            }
        };
        let (batch, vector_len) = check_inputs(program, inputs, config)?;
        let stacks = match stackless_plan {
            None => vm::STACKS,
            Some(_) => stackless::STACKS,
        };
        // A hand-lowered program's own pushes are bounded by the limit itself; a program the
        // runtime lowered holds at most one frame per variable per activation in progress
        // (the recursive calls the limit counts, each function once more outside them) and a
        // few at a call's boundary, so its variables never reach their bound first.
        let frames = match &self.high {
            None => config.max_stack_depth,
            Some((high, _)) => config
                .max_stack_depth
                .saturating_add(high.functions.len() + FRAME_SLACK),
        };
        let mut spare = self.spares.take();
        let pool = std::mem::take(&mut spare.pool);
        let mut storage = Storage::new(
            program,
            batch,
            vector_len,
            frames,
            (config.safety_checks && self.high.is_none(), stacks),
            (config.memory_budget, spare),
        );
        if let Err(refused) = storage.write_inputs(inputs) {
            // The memory this run took serves the next run all the same.
            let mut spare = storage.into_spare();
            spare.pool = pool;
            self.spares.give(spare);
            return Err(refused);
        }
        let time_kernels = config.time_kernels;
        let mut exec = Exec::new(
            program,
            &self.kernels,
            context,
            (storage, pool),
            time_kernels,
        );
        let names = program.blocks.iter().map(|b| b.name.clone());
        let mut stats = Stats::new(batch, names, self.kernels.len());
        let ran = match stackless_plan {
            None => vm::run(&mut exec, &self.vm_plan, config, &mut stats),
            Some(plan) => stackless::run(&mut exec, plan, config, &mut stats),
        };
        let outputs = ran.and_then(|()| exec.storage.read_outputs());
        stats.vector_rows = exec.storage.vector_rows();
        // Failed or not, the run's memory serves the next run.
        self.spares.give(exec.into_spare());
        Ok(Run {
            outputs: outputs?,
            stats,
            failed: Vec::new(),
        })
    }

    /// Runs every lane on its own through the single-lane reference interpreter (the oracle),
    /// on the [`source`](Self::source) program: no pass that prepared the programs the two
    /// modes run is trusted by it.
    pub fn run_reference(&self, inputs: &[Column], config: &Config) -> Result<Run> {
        self.run_reference_with_context(Context::none(), inputs, config)
    }

    /// [`run_reference`](Self::run_reference) with the run's context, as
    /// [`run_with_context`](Self::run_with_context) takes it.
    pub fn run_reference_with_context(
        &self,
        context: Context<'_>,
        inputs: &[Column],
        config: &Config,
    ) -> Result<Run> {
        self.check_context(context)?;
        let program = self.source();
        let (batch, vector_len) = check_inputs(program, inputs, config)?;
        let lowered = matches!(self.source, VerifiedSource::Lowered(_));
        let (outputs, stats) = reference::run(
            program,
            lowered,
            &self.kernels,
            context,
            inputs,
            batch,
            vector_len,
            config,
        )?;
        Ok(Run {
            outputs,
            stats,
            failed: Vec::new(),
        })
    }

    fn high_program(&self) -> Result<(&Program, &stackless::Plan)> {
        let high = self.high.as_ref().map(|(program, plan)| (&**program, plan));
        high.ok_or_else(|| {
            RuntimeError::ModeUnsupported(
                "stackless needs a high-level program; this one was built lowered".to_string(),
            )
        })
    }
}

/// `run` of the surviving lanes `alive` spread back over a batch of `batch` lanes (failed lanes'
/// rows zero), with the failures sorted by lane.
fn spread(run: Run, alive: &[usize], batch: usize, mut failed: Vec<LaneFailure>) -> Run {
    let outputs = run
        .outputs
        .iter()
        .map(|col| {
            let mut full = Column::zeros(col.dtype(), batch, col.width());
            for (i, &lane) in alive.iter().enumerate() {
                full.copy_row_from(lane, col, i);
            }
            full
        })
        .collect();
    failed.sort_by_key(|f| f.lane);
    Run {
        outputs,
        stats: run.stats,
        failed,
    }
}

/// Frames beyond one per activation a variable of a program the runtime lowered may hold: the
/// entry's, and those a call's arguments and results hold while it starts and ends.
const FRAME_SLACK: usize = 4;

/// Checks the inputs against the program's input leaves; returns (batch size, vector length).
fn check_inputs(program: &Program, inputs: &[Column], config: &Config) -> Result<(usize, usize)> {
    let mut leaves: Vec<(String, TensorType)> = Vec::new();
    for &v in program.inputs() {
        let d = program.var(v);
        let ts = d.ty.leaves();
        let many = ts.len() > 1;
        for (i, t) in ts.into_iter().enumerate() {
            let name = if many {
                format!("{}.{i}", d.name)
            } else {
                d.name.clone()
            };
            leaves.push((name, t));
        }
    }
    if leaves.len() != inputs.len() {
        let names = leaves
            .iter()
            .map(|(n, _)| n.as_str())
            .collect::<Vec<_>>()
            .join(", ");
        return Err(RuntimeError::InputCount {
            expected: leaves.len(),
            found: inputs.len(),
            names,
        });
    }
    let mut batch: Option<(usize, &str)> = None;
    let mut vector_len: Option<(usize, &str)> = config.vector_len.map(|n| (n, "the configuration"));
    for ((name, ty), col) in leaves.iter().zip(inputs) {
        if col.dtype() != ty.dtype || (ty.shape == Shape::Scalar && col.width() != 1) {
            return Err(RuntimeError::InputType {
                input: name.clone(),
                expected: *ty,
                found: format!("{} with {} elements per lane", col.dtype(), col.width()),
            });
        }
        match batch {
            Some((rows, first)) if rows != col.rows() => {
                return Err(RuntimeError::BatchMismatch {
                    input: name.clone(),
                    found: col.rows(),
                    first: first.to_string(),
                    expected: rows,
                })
            }
            None => batch = Some((col.rows(), name)),
            _ => {}
        }
        if ty.shape == Shape::Vector {
            match vector_len {
                Some((len, _)) if len != col.width() => {
                    return Err(RuntimeError::VectorLength {
                        input: name.clone(),
                        found: col.width(),
                        expected: len,
                    })
                }
                None => vector_len = Some((col.width(), name)),
                _ => {}
            }
        }
    }
    let batch = batch.map(|(b, _)| b).or(config.batch_size).unwrap_or(1);
    Ok((batch, vector_len.map_or(0, |(n, _)| n)))
}

/// The README's Rust examples, compiled and run as doctests so they stay true.
#[doc = include_str!("../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;

#[cfg(test)]
mod tests {
    use super::*;
    use autobatch_ir::{DType, ProgramBuilder, Type};

    /// The program `f(v: ty) -> v`, with no kernels.
    fn identity(ty: Type) -> Executable {
        let mut b = ProgramBuilder::new();
        let v = b.var("v", ty);
        let f = b.function("f");
        b.signature(f, &[v], &[v]);
        let entry = b.block(f, "entry");
        b.ret(entry);
        let program = b.finish(f).unwrap().into_program();
        Executable::new(program, Vec::new()).unwrap()
    }

    /// A run whose inputs are refused (over its memory budget) leaves the memory an earlier
    /// run kept for the next run, as a finished run does.
    #[test]
    fn a_run_refused_at_its_inputs_gives_its_memory_back() {
        let exe = identity(Type::vector(DType::F64));
        let input = [Column::zeros(DType::F64, 8, 3)];
        let one_thread = Config {
            threads: 1,
            ..Config::default()
        };
        exe.run(&input, &one_thread).unwrap();
        assert_eq!(exe.spares.kept(), 1);
        let no_memory = Config {
            memory_budget: Some(0),
            ..one_thread
        };
        let refused = exe.run(&input, &no_memory).unwrap_err();
        assert!(
            matches!(refused, RuntimeError::MemoryBudget { .. }),
            "{refused}"
        );
        assert_eq!(exe.spares.kept(), 1);
    }

    /// A run in either mode leaves its lane lists to the next run with the rest of its memory,
    /// and so does a run that fails (out of steps before its first block).
    #[test]
    fn a_run_leaves_its_lane_lists() {
        // `w = v` (an op: a program doing nothing halts every lane without a step, where the
        // full VM would not run out of steps).
        let mut b = ProgramBuilder::new();
        let [v, w] = ["v", "w"].map(|n| b.var(n, Type::scalar(DType::I64)));
        let f = b.function("f");
        b.signature(f, &[v], &[w]);
        let entry = b.block(f, "entry");
        b.assign(entry, &[w], &[v]);
        b.ret(entry);
        let program = b.finish(f).unwrap().into_program();
        let exe = Executable::new(program, Vec::new()).unwrap();
        let input = [Column::from_scalars(&[1i64, 2, 3])];
        for mode in [Mode::Stackless, Mode::FullVm] {
            for budget in [None, Some(0)] {
                let config = Config {
                    threads: 1,
                    step_budget: budget,
                    ..Config::with_mode(mode)
                };
                let ran = exe.run(&input, &config);
                assert_eq!(ran.is_ok(), budget.is_none(), "{mode:?}, budget {budget:?}");
                let mut spare = exe.spares.take();
                let mut lists = spare.take_lane_lists();
                let every_lane = lists.take();
                assert!(
                    every_lane.capacity() >= 3,
                    "{mode:?}, budget {budget:?}: the list of every lane"
                );
                exe.spares.give(spare);
            }
        }
    }
}

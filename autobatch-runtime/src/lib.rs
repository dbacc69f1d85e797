#![doc = include_str!("../docs/crate.md")]
#![warn(missing_docs)]

mod codegen;
mod column;
mod config;
mod error;
mod exec;
mod kernel;
mod policy;
mod pool;
mod prefetch;
pub mod primitive;
mod random;
mod reference;
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
    pub use crate::prefetch::PREFETCH_AHEAD;
    pub use crate::primitive::{check_agreement, AgreementError, Tolerance};
    pub use crate::{
        Column, Config, Executable, Kernel, KernelError, Key, LaneInputs, LaneOutputs,
        RuntimeError, Stats, Vector, VectorOut,
    };
    pub use autobatch_ir as ir;
    pub use ndarray;
}
pub use autobatch_ir::passes::{InlineOptions, Passes, Source};
pub use autobatch_macros::{autobatch, primitive};
pub use column::{Column, Element};
pub use config::{Config, Mode};
pub use error::{Result, RuntimeError};
pub use kernel::{
    output_slice, InputRows, Kernel, KernelError, LaneInputs, LaneOutputs, OutputLeaf, VectorOut,
};
pub use ndarray;
pub use random::Key;
pub use stats::{BlockStats, KernelStats, Stats};
pub use vector::Vector;

use autobatch_ir::passes::liveness;
use autobatch_ir::passes::pipeline::{prepare, Allocations, VerifiedSource};
use autobatch_ir::{HighProgram, KernelRef, LoweredProgram, PrimOp, Program, Shape, TensorType};
use exec::Exec;
use storage::Storage;

/// The result of a run: one column per output leaf, and what the run did.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// One column per leaf of each output variable, rows in lane order.
    pub outputs: Vec<Column>,
    /// Execution statistics.
    pub stats: Stats,
}

/// A program ready to run: verified, allocated, lowered for the full VM, with its kernels.
#[derive(Clone, Debug)]
pub struct Executable {
    source: VerifiedSource,
    high: Option<(HighProgram, stackless::Plan)>,
    lowered: LoweredProgram,
    /// Facts about `lowered` the full VM uses.
    vm_plan: vm::Plan,
    kernels: Vec<Kernel>,
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
        let high = prepared.high.map(|high| {
            let plan = stackless::Plan::new(&high, &liveness(&high));
            (high, plan)
        });
        let vm_plan = vm::Plan::new(&prepared.lowered);
        Ok(Executable {
            source: prepared.source,
            high,
            lowered: prepared.lowered,
            vm_plan,
            kernels,
        })
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

    /// Runs the program on a batch: `inputs` holds one column per input leaf.
    pub fn run(&self, inputs: &[Column], config: &Config) -> Result<Run> {
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
        let mut storage = Storage::new(
            program,
            batch,
            vector_len,
            config.max_stack_depth,
            config.safety_checks && self.high.is_none(),
            stacks,
        );
        storage.write_inputs(inputs)?;
        let mut exec = Exec::new(program, &self.kernels, storage);
        let names = program.blocks.iter().map(|b| b.name.clone());
        let mut stats = Stats::new(batch, names, self.kernels.len());
        match stackless_plan {
            None => vm::run(&mut exec, &self.vm_plan, config, &mut stats)?,
            Some(plan) => stackless::run(&mut exec, plan, config, &mut stats)?,
        }
        stats.vector_rows = exec.storage.vector_rows();
        let outputs = exec.storage.read_outputs()?;
        Ok(Run { outputs, stats })
    }

    /// Runs every lane on its own through the single-lane reference interpreter (the oracle),
    /// on the [`source`](Self::source) program: no pass that prepared the programs the two
    /// modes run is trusted by it.
    pub fn run_reference(&self, inputs: &[Column], config: &Config) -> Result<Run> {
        let program = self.source();
        let (batch, vector_len) = check_inputs(program, inputs, config)?;
        let (outputs, stats) =
            reference::run(program, &self.kernels, inputs, batch, vector_len, config)?;
        Ok(Run { outputs, stats })
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

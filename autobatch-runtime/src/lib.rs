#![doc = include_str!("../docs/crate.md")]
#![warn(missing_docs)]

mod arena;
pub mod column;
pub mod config;
mod env;
pub mod error;
pub mod kernel;
pub mod link;
pub mod prefetch;
pub mod primitive;
pub mod random;
mod reference;
mod stackless;
pub mod vector;
mod vm;

pub use autobatch_ir as ir;

/// What the code `#[autobatch]` and `#[primitive]` generate reaches the runtime through; not
/// part of the public API (serde's `__private` convention): its items may change in any
/// release.
#[doc(hidden)]
pub mod __private {
    pub use crate::link::*;
    pub use crate::prefetch::PREFETCH_AHEAD;
    pub use crate::primitive::{check_agreement, AgreementError, Tolerance};
    pub use crate::{
        Column, Config, Executable, Kernel, KernelError, Key, LaneInputs, LaneOutputs,
        RuntimeError, Stats, Vector,
    };
    pub use autobatch_ir as ir;
    pub use ndarray;
}
pub use autobatch_ir::passes::InlineOptions;
pub use autobatch_macros::{autobatch, primitive};
pub use column::{Column, Element};
pub use config::{Config, Mode, Stats};
pub use error::{Result, RuntimeError};
pub use kernel::{output_slice, Kernel, KernelError, LaneInputs, LaneOutputs, OutputLeaf, Rows};
pub use ndarray;
pub use random::Key;
pub use vector::Vector;

use autobatch_ir::passes::{
    allocate, fuse_pop_push, inline_calls, liveness, lower, prioritize_blocks_deferring,
    propagate_copies, simplify_blocks, InlineError,
};
use autobatch_ir::{verify, Form, KernelRef, PrimOp, Program, Shape, TensorType};
use env::{Env, Stacks};

/// The result of a run: one column per output leaf, and what the run did.
#[derive(Clone, Debug, PartialEq)]
pub struct Run {
    /// One column per leaf of each output variable, rows in lane order.
    pub outputs: Vec<Column>,
    /// Execution statistics.
    pub stats: Stats,
}

/// The optional IR passes an [`Executable`] runs while it prepares a program.
///
/// Each only changes how many blocks and ops the lanes run, never a lane's results; the default
/// runs them all. [`Passes::none`] keeps the program's blocks, calls and ops as given (for
/// comparisons, and for checks of block or kernel run counts against the reference system's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Passes {
    /// Inline calls to small non-recursive functions
    /// ([`inline_calls`]); `None` keeps every call.
    pub inline: Option<InlineOptions>,
    /// Merge straight-line chains of blocks and thread jumps through blocks that only jump
    /// ([`simplify_blocks`]), in the high-level program
    /// and in the lowered one.
    pub simplify: bool,
    /// Propagate copies, drop dead ones, forward copied results and merge adjacent
    /// assignments ([`propagate_copies`]) in the high-level program, after inlining and
    /// simplification (which runs again afterwards).
    pub copies: bool,
}

impl Default for Passes {
    fn default() -> Self {
        Passes {
            inline: Some(InlineOptions::default()),
            simplify: true,
            copies: true,
        }
    }
}

impl Passes {
    /// No optional pass: the programs run keep the blocks and calls they were given.
    pub fn none() -> Self {
        Passes {
            inline: None,
            simplify: false,
            copies: false,
        }
    }
}

/// A program ready to run: verified, allocated, lowered for the full VM, with its kernels.
#[derive(Clone, Debug)]
pub struct Executable {
    source: Program,
    high: Option<(Program, stackless::Plan)>,
    lowered: Program,
    /// Facts about `lowered` the full VM uses.
    vm_plan: vm::Plan,
    kernels: Vec<Kernel>,
}

impl Executable {
    /// Verifies `program`, computes its allocation (high-level programs) and prepares it with
    /// the default [`Passes`] (see [`with_passes`](Self::with_passes)).
    pub fn new(program: Program, kernels: Vec<Kernel>) -> Result<Self> {
        Self::with_passes(program, kernels, &Passes::default())
    }

    /// Verifies `program`, computes its allocation (high-level programs) and prepares it:
    ///
    /// * a high-level program is inlined (if `passes.inline`), simplified (if
    ///   `passes.simplify`), rid of needless copies (if `passes.copies`; then simplified again)
    ///   and allocated again (the exact allocation of what runs): that is the program stackless
    ///   runs ([`program`](Self::program)). It is then lowered,
    ///   simplified again, its pops fused into in-place writes, and its blocks ordered, blocks
    ///   holding a batched kernel last: that is the program the full VM runs
    ///   ([`lowered`](Self::lowered));
    /// * a lowered program is simplified (if `passes.simplify`) and its blocks ordered.
    pub fn with_passes(program: Program, kernels: Vec<Kernel>, passes: &Passes) -> Result<Self> {
        verify(&program)?;
        let program = if program.form == Form::High {
            allocate(&program)
        } else {
            program
        };
        Self::prepare(program, kernels, passes, false)
    }

    /// Like [`new`](Self::new) but trusts the allocations the program carries (for example
    /// computed by `#[autobatch]` at compile time). They must be sound: every variable live
    /// across a call that may overwrite it must be FULL. When inlining or copy propagation
    /// changes the program, the prepared program's allocation is computed (the one given
    /// describes the program before them); a program neither changes keeps the allocation
    /// given. Prepared with the default [`Passes`].
    pub fn with_allocations(program: Program, kernels: Vec<Kernel>) -> Result<Self> {
        verify(&program)?;
        Self::prepare(program, kernels, &Passes::default(), true)
    }

    /// Runs the passes on a verified program; `trusted`: the allocation it carries is to be
    /// kept as long as it describes the program that runs.
    fn prepare(
        program: Program,
        kernels: Vec<Kernel>,
        passes: &Passes,
        trusted: bool,
    ) -> Result<Self> {
        // Blocks with a batched kernel run last, so lanes gather there (see
        // `prioritize_blocks_deferring`).
        let batched = |op: &PrimOp| {
            matches!(op.kernel, KernelRef::User(id)
                if matches!(kernels.get(id.index()), Some(Kernel::Batched(_))))
        };
        let simplify = |p: Program| {
            if passes.simplify {
                simplify_blocks(&p)
            } else {
                p
            }
        };
        let (high, lowered) = match program.form {
            Form::High => {
                let inlined = match &passes.inline {
                    // Cannot fail on a verified high-level program; if it did, its
                    // verifier errors are reported as such.
                    Some(options) => inline_calls(&program, options).map_err(|e| match e {
                        InlineError::Invalid(errors) => RuntimeError::Invalid(errors),
                        InlineError::Lowered => {
                            RuntimeError::ModeUnsupported("inlining a lowered program".into())
                        }
                    })?,
                    None => program.clone(),
                };
                let inlined_changed = inlined != program;
                let high = simplify(inlined);
                // Copies run on simplified blocks, so a kernel and the copy of its result that
                // inlining left in consecutive blocks are in one block; blocks they empty are
                // threaded by the second simplification.
                let (high, copied) = if passes.copies {
                    let copied = propagate_copies(&high);
                    let changed = copied != high;
                    (simplify(copied), changed)
                } else {
                    (high, false)
                };
                // Allocation follows liveness across blocks and calls: it is computed for the
                // program that runs (simplification only shortens live ranges, so an
                // allocation given for the program before it stays sound, but inlined copies
                // need their own, and propagated copies change live ranges).
                let high = if inlined_changed || copied || !trusted {
                    allocate(&high)
                } else {
                    high
                };
                let low = simplify(lower(&high)?);
                let lowered = prioritize_blocks_deferring(&fuse_pop_push(&low)?, batched);
                verify(&high)?;
                let plan = stackless::Plan::new(&high, &liveness(&high));
                (Some((high, plan)), lowered)
            }
            Form::Lowered => (
                None,
                prioritize_blocks_deferring(&simplify(program.clone()), batched),
            ),
        };
        verify(&lowered)?;
        let vm_plan = vm::Plan::new(&lowered);
        Ok(Executable {
            source: program,
            high,
            lowered,
            vm_plan,
            kernels,
        })
    }

    /// The program as it was given (verified; allocated unless built
    /// [`with_allocations`](Self::with_allocations)), before any pass changed its blocks or
    /// calls: what [`run_reference`](Self::run_reference) runs.
    pub fn source(&self) -> &Program {
        &self.source
    }

    /// The high-level program stackless runs: the source with small calls inlined, blocks
    /// simplified and needless copies removed, as [`Passes`] asked (`None` for a hand-lowered
    /// program).
    pub fn program(&self) -> Option<&Program> {
        self.high.as_ref().map(|(p, _)| p)
    }

    /// The lowered, simplified, fused, priority-ordered program the full VM runs.
    pub fn lowered(&self) -> &Program {
        &self.lowered
    }

    /// The kernel table.
    pub fn kernels(&self) -> &[Kernel] {
        &self.kernels
    }

    /// Runs the program on a batch: `inputs` holds one column per input leaf.
    pub fn run(&self, inputs: &[Column], config: &Config) -> Result<Run> {
        let program = match config.mode {
            Mode::FullVm => &self.lowered,
            Mode::Stackless => self.high_program()?,
        };
        let (batch, vector_len) = check_inputs(program, inputs, config)?;
        let (stacks, names) = match config.mode {
            Mode::FullVm => (Stacks::Honour, block_names(program)),
            Mode::Stackless => (Stacks::Ignore, block_names(program)),
        };
        let mut env = Env::new(
            program,
            &self.kernels,
            batch,
            vector_len,
            config.max_stack_depth,
            config.safety_checks && self.high.is_none(),
            stacks,
        );
        let all: Vec<usize> = (0..batch).collect();
        let entry = program.main_function().entry();
        let mut rest = inputs;
        for &v in program.inputs() {
            let n = program.var(v).ty.leaves().len();
            env.write(v, &all, &rest[..n], true, entry)?;
            rest = &rest[n..];
        }
        let mut stats = Stats::new(batch, names, self.kernels.len());
        match config.mode {
            Mode::FullVm => vm::run(&mut env, &self.vm_plan, config, &mut stats)?,
            Mode::Stackless => {
                let (_, plan) = self.high.as_ref().expect("checked by high_program");
                stackless::run(&mut env, plan, config, &mut stats)?
            }
        }
        stats.vector_rows = env.vector_rows();
        let mut outputs = Vec::new();
        for &v in program.outputs() {
            outputs.extend(env.gather(v, &all, entry)?);
        }
        Ok(Run { outputs, stats })
    }

    /// Runs every lane on its own through the single-lane reference interpreter (the oracle),
    /// on the [`source`](Self::source) program: no pass that prepared the programs the two
    /// modes run is trusted by it.
    pub fn run_reference(&self, inputs: &[Column], config: &Config) -> Result<Run> {
        let program = &self.source;
        let (batch, vector_len) = check_inputs(program, inputs, config)?;
        let (outputs, stats) =
            reference::run(program, &self.kernels, inputs, batch, vector_len, config)?;
        Ok(Run { outputs, stats })
    }

    fn high_program(&self) -> Result<&Program> {
        self.program().ok_or_else(|| {
            RuntimeError::ModeUnsupported(
                "stackless needs a high-level program; this one was built lowered".to_string(),
            )
        })
    }
}

fn block_names(program: &Program) -> Vec<String> {
    program.blocks.iter().map(|b| b.name.clone()).collect()
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

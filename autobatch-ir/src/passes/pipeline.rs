//! The preparation pipeline: one function, [`prepare`], turns a source program and the chosen
//! [`Passes`] into what each interpreter runs, verifying the source once on entry.
//!
//! Every pass takes a verified program and returns one ([`Verified`]), so nothing after the
//! entry verifies again; debug builds check each pass's output (see
//! [`verifications`](crate::verify::verifications)).

use crate::passes::allocation::allocate;
use crate::passes::call_copies::remove_call_copies;
use crate::passes::calls::recursive_entries;
use crate::passes::copies::propagate_copies;
use crate::passes::fusion::fuse_pop_push;
use crate::passes::inline::{inline_calls, InlineOptions};
use crate::passes::lowering::lower;
use crate::passes::priority::prioritize_blocks_deferring;
use crate::passes::simplify::{simplify_blocks, simplify_blocks_keeping};
use crate::program::{PrimOp, Program};
use crate::verified::{Form, HighProgram, LoweredProgram, Verified};
use crate::verify::{verify_high, verify_lowered, VerifyErrors};
use crate::Block;

/// The optional passes [`prepare`] runs.
///
/// Each only changes how many blocks and ops the lanes run, never a lane's results; the default
/// runs them all. [`Passes::none`] keeps the program's blocks, calls and ops as given (for
/// comparisons, and for checks of block or kernel run counts against the reference system's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Passes {
    /// Inline calls to small non-recursive functions ([`inline_calls`]); `None` keeps every
    /// call.
    pub inline: Option<InlineOptions>,
    /// Merge straight-line chains of blocks and thread jumps through blocks that only jump
    /// ([`simplify_blocks`]), in the high-level program and in the lowered one.
    pub simplify: bool,
    /// Propagate copies, drop dead ones, forward copied results and merge adjacent
    /// assignments ([`propagate_copies`]) in the high-level program, after inlining and
    /// simplification (which runs again afterwards).
    pub copies: bool,
    /// Remove the copies lowering leaves around calls in the full VM's program
    /// ([`remove_call_copies`]), after pop-push fusion: a kernel writes the formal it computes
    /// an argument for, an op reads the return variable a result was copied out of.
    pub call_copies: bool,
}

impl Default for Passes {
    fn default() -> Self {
        Passes {
            inline: Some(InlineOptions::default()),
            simplify: true,
            copies: true,
            call_copies: true,
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
            call_copies: false,
        }
    }
}

/// A program handed to [`prepare`], with the form it is meant to have; verified there.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A high-level program (functions and calls): the usual source.
    High(Program),
    /// A hand-lowered program (one function, push-goto / indirect-goto): only the full VM
    /// runs it.
    Lowered(Program),
}

impl From<Program> for Source {
    fn from(program: Program) -> Self {
        Source::High(program)
    }
}

impl From<HighProgram> for Source {
    fn from(program: HighProgram) -> Self {
        Source::High(program.into_program())
    }
}

impl From<LoweredProgram> for Source {
    fn from(program: LoweredProgram) -> Self {
        Source::Lowered(program.into_program())
    }
}

/// What [`prepare`] does with the allocations a high-level source carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Allocations {
    /// Compute the exact allocation of the source and of the program stackless runs.
    Compute,
    /// Keep the allocation the source carries (for example computed by `#[autobatch]` at
    /// compile time) as long as it describes the program that runs: when inlining or copy
    /// propagation changes the program, its allocation is computed. The given one must be
    /// sound: every variable live across a call that may overwrite it must be FULL.
    Trust,
}

/// The verified source, in its form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum VerifiedSource {
    /// A high-level source.
    High(HighProgram),
    /// A hand-lowered source.
    Lowered(LoweredProgram),
}

impl VerifiedSource {
    /// The program, whatever its form.
    pub fn program(&self) -> &Program {
        match self {
            VerifiedSource::High(p) => p,
            VerifiedSource::Lowered(p) => p,
        }
    }
}

/// What each interpreter runs, as [`prepare`] made it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Prepared {
    /// The source as given, verified (and allocated under [`Allocations::Compute`]), before any
    /// pass changed its blocks or calls: what the reference interpreter runs.
    pub source: VerifiedSource,
    /// The high-level program stackless runs: the source with small calls inlined, blocks
    /// simplified and needless copies removed, as [`Passes`] asked, and allocated (`None` for
    /// a hand-lowered source).
    pub high: Option<HighProgram>,
    /// The lowered, simplified, fused, priority-ordered program the full VM runs.
    pub lowered: LoweredProgram,
}

/// Verifies `source` once, then runs the passes in order:
///
/// * a high-level source is allocated (under [`Allocations::Compute`]), inlined (if
///   `passes.inline`), simplified (if `passes.simplify`), rid of needless copies (if
///   `passes.copies`; then simplified again) and allocated again when that changed it or
///   allocations are computed: that is [`Prepared::high`]. It is then lowered, simplified
///   again (keeping the blocks where recursive functions' bodies start, see
///   [`recursive_entries`]), its pops fused into in-place writes, and its blocks ordered, blocks holding an op
///   for which `defer` is true last ([`prioritize_blocks_deferring`]): that is
///   [`Prepared::lowered`];
/// * a hand-lowered source is simplified (if `passes.simplify`) and its blocks ordered.
///
/// Fails with the verifier's errors, or with lowering's (a call to the entry function,
/// explicit pops or in-place writes that break the stack discipline).
pub fn prepare(
    source: Source,
    passes: &Passes,
    allocations: Allocations,
    defer: impl Fn(&PrimOp) -> bool,
) -> Result<Prepared, VerifyErrors> {
    match source {
        Source::High(program) => {
            let given = verify_high(program)?;
            let source = match allocations {
                Allocations::Compute => allocate(&given),
                Allocations::Trust => given,
            };
            let inlined = match &passes.inline {
                Some(options) => inline_calls(&source, options),
                None => source.clone(),
            };
            let inlined_changed = inlined != source;
            let high = simplified(inlined, passes.simplify);
            // Copies run on simplified blocks, so a kernel and the copy of its result that
            // inlining left in consecutive blocks are in one block; blocks they empty are
            // threaded by the second simplification.
            let (high, copied) = if passes.copies {
                let copied = propagate_copies(&high);
                let changed = copied != high;
                (simplified(copied, passes.simplify), changed)
            } else {
                (high, false)
            };
            // Allocation follows liveness across blocks and calls: it is computed for the
            // program that runs (simplification only shortens live ranges, so an allocation
            // given for the program before it stays sound, but inlined copies need their own,
            // and propagated copies change live ranges).
            let high = if inlined_changed || copied || allocations == Allocations::Compute {
                allocate(&high)
            } else {
                high
            };
            // Calls to recursive functions count against the depth limit where the lowered
            // program enters their bodies, so simplification keeps those blocks.
            let low = lower(&high)?;
            let low = if passes.simplify {
                let keep: Vec<Block> = recursive_entries(&high, &low)
                    .into_iter()
                    .map(|(b, _)| b)
                    .collect();
                simplify_blocks_keeping(&low, &keep)
            } else {
                low
            };
            let fused = fuse_pop_push(&low);
            let fused = if passes.call_copies {
                remove_call_copies(&fused)
            } else {
                fused
            };
            let lowered = prioritize_blocks_deferring(&fused, defer);
            Ok(Prepared {
                source: VerifiedSource::High(source),
                high: Some(high),
                lowered,
            })
        }
        Source::Lowered(program) => {
            let source = verify_lowered(program)?;
            let lowered =
                prioritize_blocks_deferring(&simplified(source.clone(), passes.simplify), defer);
            Ok(Prepared {
                source: VerifiedSource::Lowered(source),
                high: None,
                lowered,
            })
        }
    }
}

/// `program` simplified when `on`, else as it is.
fn simplified<F: Form>(program: Verified<F>, on: bool) -> Verified<F> {
    if on {
        simplify_blocks(&program)
    } else {
        program
    }
}

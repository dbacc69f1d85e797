//! `RuntimeError`: every way running a program can fail, naming function, block, variable and lane.

use autobatch_ir::{FuncId, TensorType, VerifyErrors};
use thiserror::Error;

/// Why preparing or running a program failed. No input makes the runtime panic: each failure
/// is one of these, and a kernel that panics is caught and reported as [`Kernel`](Self::Kernel)
/// with its lane. (A [`Vector`](crate::Vector) operation on vectors of different lengths
/// panics in plain Rust, as ndarray does; inside a batched run that is such a kernel panic.)
#[derive(Debug, Clone, PartialEq, Error)]
pub enum RuntimeError {
    /// The program breaks an IR invariant (the verifier's, or one lowering for the full VM
    /// needs).
    #[error("invalid program:\n{0}")]
    Invalid(#[from] VerifyErrors),
    /// The program's form does not suit the requested mode.
    #[error("{0}")]
    ModeUnsupported(String),
    /// `#[autobatch]` functions could not be linked into one program, or a linked program's
    /// output does not have the type its generated entry point expects.
    #[error("linking failed: {0}")]
    Link(String),
    /// The program reads a context (a `&T` parameter of its functions or primitives) and the
    /// run was given none, or one of another type.
    #[error("this program reads a context of type `{expected}`, but the run was given {found}")]
    Context {
        /// The context type the program's functions and primitives take.
        expected: &'static str,
        /// What the run was given (`none`, or the other type).
        found: String,
    },
    /// A kernel id has no entry in the kernel table.
    #[error("block `{block}`: kernel {kernel} (`{source_text}`) is not in the kernel table ({table} kernels)")]
    MissingKernel {
        /// Block of the op.
        block: String,
        /// The missing id.
        kernel: usize,
        /// The op's source text.
        source_text: String,
        /// Size of the table given.
        table: usize,
    },
    /// Wrong number of input leaves.
    #[error("expected {expected} input leaves ({names}), got {found}")]
    InputCount {
        /// Expected count.
        expected: usize,
        /// Given count.
        found: usize,
        /// The input variables.
        names: String,
    },
    /// Two inputs disagree about the batch size.
    #[error("input `{input}` has {found} lanes but input `{first}` has {expected}")]
    BatchMismatch {
        /// The input that disagrees.
        input: String,
        /// Its row count.
        found: usize,
        /// The first input's name.
        first: String,
        /// The first input's row count.
        expected: usize,
    },
    /// An input has the wrong dtype or event shape.
    #[error("input `{input}` should be {expected}, got {found}")]
    InputType {
        /// The input's name (with its leaf index for tuples).
        input: String,
        /// Its declared leaf type.
        expected: TensorType,
        /// What was given (dtype and row width).
        found: String,
    },
    /// Vector inputs of different lengths.
    #[error(
        "vector input `{input}` has length {found}, but vectors in this run have length {expected}"
    )]
    VectorLength {
        /// The input.
        input: String,
        /// Its length.
        found: usize,
        /// The length of the first vector input (or the configured one).
        expected: usize,
    },
    /// A push of a hand-lowered program's variable would exceed the configured maximum stack
    /// depth (programs lowered by the runtime stay within [`RecursionLimit`](Self::RecursionLimit)).
    #[error("stack depth {max_depth} exceeded: variable `{var}` in lane {lane} (block `{block}`); raise `Config::max_stack_depth` if the program is meant to go deeper")]
    StackOverflow {
        /// Variable being pushed.
        var: String,
        /// Lane.
        lane: usize,
        /// Block.
        block: String,
        /// The configured limit.
        max_depth: usize,
    },
    /// A lane would hold more frames of recursive functions than `Config::max_stack_depth`
    /// allows (see [`Config::max_stack_depth`](crate::Config::max_stack_depth) for how they
    /// are counted). Both modes and the reference report it at the same call.
    #[error("lane {lane} recurses deeper than {max_depth} frames calling `{function}`; raise `Config::max_stack_depth` if the recursion is meant to go deeper")]
    RecursionLimit {
        /// The function whose call went past the limit.
        function: String,
        /// The lowest lane making that call.
        lane: usize,
        /// The configured limit.
        max_depth: usize,
    },
    /// The run's stacks and vector rows grew past `Config::memory_budget`.
    #[error("memory budget of {budget} bytes exceeded in lane {lane} (block `{block}`): {grew} grew the run's stacks and vector rows to {used} bytes; raise `Config::memory_budget` (or set it to `None`) if the run needs that much")]
    MemoryBudget {
        /// What grew, in the program's words: a variable or the calls of a function.
        grew: String,
        /// The block that made it grow.
        block: String,
        /// The lowest lane that made it grow.
        lane: usize,
        /// The bytes the run would hold.
        used: usize,
        /// The configured budget.
        budget: usize,
    },
    /// A pop of a stack with no saved frame.
    #[error("pop of empty stack: variable `{var}` in lane {lane} (block `{block}`)")]
    PopEmpty {
        /// Variable.
        var: String,
        /// Lane.
        lane: usize,
        /// Block.
        block: String,
    },
    /// The step budget ran out before every lane halted.
    #[error(
        "step budget of {budget} block executions exhausted with {running} lanes still running ({}); raise `Config::step_budget` (or set it to `None`) if they are meant to run longer",
        list_lanes(lanes)
    )]
    StepBudget {
        /// The configured budget.
        budget: u64,
        /// Lanes that had not halted.
        running: usize,
        /// Those lanes, lowest first. Stackless also counts lanes that finished a loop or a
        /// call and wait for the lanes still in it.
        lanes: Vec<usize>,
    },
    /// A read of a NULL-allocated variable.
    #[error("block `{block}` reads variable `{var}`, which is allocated NULL")]
    ReadNull {
        /// Variable.
        var: String,
        /// Block.
        block: String,
    },
    /// A read of a variable no write has reached in this lane.
    #[error("block `{block}` reads variable `{var}` in lane {lane} before any write")]
    ReadUnset {
        /// Variable.
        var: String,
        /// Lane.
        lane: usize,
        /// Block.
        block: String,
    },
    /// A kernel failed or panicked in an active lane.
    #[error("kernel `{source_text}` in block `{block}` failed in lane {lane}: {message}")]
    Kernel {
        /// Block.
        block: String,
        /// The op's source text.
        source_text: String,
        /// The lane at fault (or the first active lane if the failure is not per lane).
        lane: usize,
        /// The kernel's message or the panic payload.
        message: String,
    },
    /// A value of one type reached a variable of another (an assignment, a call's arguments
    /// or results, or an input): a program the verifier accepted cannot do this.
    #[error("block `{block}` puts {found} into variable `{var}`, which holds {expected}")]
    ValueType {
        /// Block.
        block: String,
        /// The variable written.
        var: String,
        /// What the variable holds.
        expected: String,
        /// What was written.
        found: String,
    },
    /// A branch on a variable that is not a scalar `bool`.
    #[error("block `{block}` branches on `{var}`, which is {found}, not a bool")]
    ConditionType {
        /// Block.
        block: String,
        /// The condition variable.
        var: String,
        /// Its type.
        found: String,
    },
    /// A kernel's output has the wrong dtype, width or row count.
    #[error("kernel `{source_text}` in block `{block}` returned {found} for output leaf {leaf}, expected {expected}")]
    KernelOutput {
        /// Block.
        block: String,
        /// The op's source text.
        source_text: String,
        /// Output leaf index.
        leaf: usize,
        /// What it should be.
        expected: String,
        /// What it was.
        found: String,
    },
}

/// "lanes 0, 4 and 7", the first ten of `lanes` for longer lists.
fn list_lanes(lanes: &[usize]) -> String {
    let shown: Vec<String> = lanes.iter().take(10).map(usize::to_string).collect();
    let more = lanes.len().saturating_sub(shown.len());
    match (shown.as_slice(), more) {
        ([], _) => "no lane".to_string(),
        ([one], _) => format!("lane {one}"),
        (_, 0) => {
            let (last, rest) = shown.split_last().unwrap_or((&shown[0], &[]));
            format!("lanes {} and {last}", rest.join(", "))
        }
        _ => format!("lanes {} and {more} more", shown.join(", ")),
    }
}

impl RuntimeError {
    /// The lanes a failure belongs to (the lane a per-lane error names, the lanes still
    /// running for [`StepBudget`](Self::StepBudget)); empty for failures of the whole run
    /// (invalid program or inputs).
    pub fn lanes(&self) -> Vec<usize> {
        match self {
            RuntimeError::StackOverflow { lane, .. }
            | RuntimeError::RecursionLimit { lane, .. }
            | RuntimeError::MemoryBudget { lane, .. }
            | RuntimeError::PopEmpty { lane, .. }
            | RuntimeError::ReadUnset { lane, .. }
            | RuntimeError::Kernel { lane, .. } => vec![*lane],
            RuntimeError::StepBudget { lanes, .. } => lanes.clone(),
            _ => Vec::new(),
        }
    }

    /// The same error with its lanes renumbered through `map` (lane `i` of a run on a subset
    /// of a batch is lane `map[i]` of the batch).
    pub(crate) fn renumber(mut self, map: &[usize]) -> Self {
        let at = |l: &mut usize| *l = map.get(*l).copied().unwrap_or(*l);
        match &mut self {
            RuntimeError::StackOverflow { lane, .. }
            | RuntimeError::RecursionLimit { lane, .. }
            | RuntimeError::MemoryBudget { lane, .. }
            | RuntimeError::PopEmpty { lane, .. }
            | RuntimeError::ReadUnset { lane, .. }
            | RuntimeError::Kernel { lane, .. } => at(lane),
            RuntimeError::StepBudget { lanes, .. } => lanes.iter_mut().for_each(at),
            _ => {}
        }
        self
    }
}

/// Shorthand for results of the runtime.
pub type Result<T, E = RuntimeError> = std::result::Result<T, E>;

/// Names a function for messages.
pub(crate) fn function_name(program: &autobatch_ir::Program, f: FuncId) -> String {
    program
        .functions
        .get(f)
        .map_or_else(|| f.to_string(), |d| d.name.clone())
}

#[cfg(test)]
mod tests {
    use super::list_lanes;

    /// Lane lists read as a sentence; past ten lanes, the rest are counted.
    #[test]
    fn lane_lists_read_as_a_sentence() {
        assert_eq!(list_lanes(&[]), "no lane");
        assert_eq!(list_lanes(&[3]), "lane 3");
        assert_eq!(list_lanes(&[2, 4]), "lanes 2 and 4");
        assert_eq!(list_lanes(&[0, 1, 2, 3, 4]), "lanes 0, 1, 2, 3 and 4");
        let many: Vec<usize> = (0..13).collect();
        assert_eq!(
            list_lanes(&many),
            "lanes 0, 1, 2, 3, 4, 5, 6, 7, 8, 9 and 3 more"
        );
    }
}

//! `Config` and `Mode`: how a batch is run (interpreter, limits, checks), with every default.

/// Which interpreter runs the program. Both give every lane exactly the result of the plain
/// scalar function, bit for bit; they differ in which lanes they can run together, and so in
/// speed.
///
/// The default is [`FullVm`](Mode::FullVm).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Mode {
    /// Runs the high-level program, a call recursing on the host stack for the lanes that make
    /// it. Lanes re-converge only inside one activation of a function (after its branches and
    /// loops), never across recursion depths. Cheaper per step (no per-lane program counter or
    /// stacks): choose it when lanes take similar paths through calls, or recursion is shallow
    /// and even.
    Stackless,
    /// Runs the lowered program with a program counter and return stack per lane and a stack
    /// per stacked variable, so lanes at different recursion depths that reach the same block
    /// run it together. The better choice when recursion depths differ a lot between lanes
    /// (a NUTS tree, a recursive search). The default.
    #[default]
    FullVm,
}

/// How to run a program. [`Config::default()`] is:
///
/// | field | default |
/// |---|---|
/// | [`mode`](Self::mode) | [`Mode::FullVm`] |
/// | [`max_stack_depth`](Self::max_stack_depth) | 256 |
/// | [`step_budget`](Self::step_budget) | `Some(100_000_000)` (10^8 block executions) |
/// | [`safety_checks`](Self::safety_checks) | `true` |
/// | [`vector_len`](Self::vector_len) | `None` (taken from the vector inputs; 0 without any) |
/// | [`batch_size`](Self::batch_size) | `None` (taken from the inputs; 1 without any) |
///
/// ```
/// use autobatch_runtime::{Config, Mode};
///
/// let config = Config::default();
/// assert_eq!(config.mode, Mode::FullVm);
/// assert_eq!(config.max_stack_depth, 256);
/// assert_eq!(config.step_budget, Some(100_000_000));
/// let deep = Config { max_stack_depth: 10_000, ..Config::with_mode(Mode::Stackless) };
/// # let _ = deep;
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Config {
    /// Interpreter. Default: [`Mode::FullVm`].
    pub mode: Mode,
    /// Maximum frames on any variable's stack, the return-address stack included (full VM),
    /// or nested calls (stackless); a run that needs more fails with a typed error. Default:
    /// 256.
    pub max_stack_depth: usize,
    /// Maximum block executions before the run gives up with a typed error; `None` removes
    /// the limit. Default: `Some(100_000_000)`.
    pub step_budget: Option<u64>,
    /// Check reads of never-written variables per lane (costs a little per op). Only programs
    /// built lowered by hand need it: for high-level programs the verifier has proven every read
    /// preceded by a write on every path, and lowering preserves that, so the check is skipped.
    /// Default: `true`.
    pub safety_checks: bool,
    /// Vector length when no vector input fixes it. Default: `None` (0 if no input is a
    /// vector).
    pub vector_len: Option<usize>,
    /// Batch size when the program has no inputs. Default: `None` (1 lane).
    pub batch_size: Option<usize>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: Mode::FullVm,
            max_stack_depth: 256,
            step_budget: Some(100_000_000),
            safety_checks: true,
            vector_len: None,
            batch_size: None,
        }
    }
}

impl Config {
    /// The default configuration in `mode`.
    pub fn with_mode(mode: Mode) -> Self {
        Config {
            mode,
            ..Config::default()
        }
    }
}

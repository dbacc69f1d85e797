//! What the translation records: the function's variables, blocks, kernels, callees and the IR
//! construction steps over them, by local index.
//!
//! The record is replayed twice: into `autobatch_ir` at compile time (for the allocation
//! analysis and the printed program) and into the generated code that rebuilds the same IR
//! when the program is linked. One record, two replays, so the two cannot diverge.

use crate::parse::ast::{Expr, Ty};
use proc_macro2::{Ident, Span};

/// A variable of the function.
pub struct LocalVar {
    /// Name within the function (unique).
    pub name: String,
    /// Its type.
    pub ty: Ty,
}

/// A lane-wise kernel: the body evaluated per lane with its inputs bound by name.
pub struct KernelSpec {
    /// `(binding, variable)` for each input, in order.
    pub inputs: Vec<(Ident, usize)>,
    /// The expression computing the output value (its tokens are the Rust code; its span
    /// where errors point).
    pub body: Expr,
    /// The type of the body's value (the outputs' leaves, in order).
    pub out_ty: Ty,
}

/// A function called by this one.
pub struct CalleeSpec {
    /// The path as written at the call.
    pub path: syn::Path,
    /// True for a call to the function itself.
    pub is_self: bool,
    /// Argument types at the call.
    pub params: Vec<Ty>,
    /// Which arguments were passed by shared reference (`&x`).
    pub by_ref: Vec<bool>,
    /// Where among the arguments the context was passed on (`g(x, ctx)`: 1), if it was.
    pub context: Option<usize>,
    /// The result type at the call.
    pub ret: Ty,
    /// The first call's span.
    pub span: Span,
}

/// One IR construction step (indices are local: variables, blocks, kernels, callees).
pub enum Step {
    /// `outs = kernel(ins)`.
    Prim {
        block: usize,
        outs: Vec<usize>,
        ins: Vec<usize>,
        kernel: usize,
        source: String,
    },
    /// `outs = ins` (the built-in copy).
    Assign {
        block: usize,
        outs: Vec<usize>,
        ins: Vec<usize>,
    },
    /// `outs = call(callee, ins)`.
    Call {
        block: usize,
        callee: usize,
        ins: Vec<usize>,
        outs: Vec<usize>,
    },
    /// `goto(target)`.
    Goto(usize, usize),
    /// `branch(cond, then, else)`.
    Branch(usize, usize, usize, usize),
    /// `return`.
    Ret(usize),
}

/// The recorded function.
pub struct Record {
    /// Variables.
    pub vars: Vec<LocalVar>,
    /// Block names, in order (block 0 is the entry).
    pub blocks: Vec<String>,
    /// Construction steps in order.
    pub steps: Vec<Step>,
    /// Kernels.
    pub kernels: Vec<KernelSpec>,
    /// Callees.
    pub callees: Vec<CalleeSpec>,
    /// Parameter variables.
    pub params: Vec<usize>,
    /// Return variables: one per top-level element of a tuple result, none for `()`, else one.
    pub returns: Vec<usize>,
}

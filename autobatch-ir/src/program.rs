//! The Program data model: variables, ops, terminators, blocks and functions in side tables.

use crate::entity::{Block, EntityVec, FuncId, KernelId, Var};
use crate::types::Type;
use std::fmt;

/// How a variable is stored at run time (reference semantics, ordered by cost).
///
/// * `Null`: no storage; writes are dropped and a read is an error.
/// * `Temporary`: lives inside one block.
/// * `Register`: one value per lane.
/// * `Full`: one value per lane plus a per-lane stack (pushes, pops).
///
/// Passes only ever promote: `Null < Temporary < Register < Full`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Allocation {
    /// Never read: no storage.
    Null,
    /// Read only inside the block that wrote it.
    Temporary,
    /// One value per lane, no stack.
    Register,
    /// One value per lane and a per-lane stack.
    Full,
}

impl Allocation {
    /// The printed name (`null`, `temporary`, `register`, `full`).
    pub fn name(self) -> &'static str {
        match self {
            Allocation::Null => "null",
            Allocation::Temporary => "temporary",
            Allocation::Register => "register",
            Allocation::Full => "full",
        }
    }
}

impl fmt::Display for Allocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One entry of the variable table.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct VarData {
    /// Globally unique name.
    pub name: String,
    /// Static type (a leaf or a tuple of leaves).
    pub ty: Type,
    /// Storage strategy.
    pub alloc: Allocation,
}

/// What a primitive op runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KernelRef {
    /// A user kernel, resolved by the runtime's kernel table.
    User(KernelId),
    /// The built-in copy: output leaves are the input leaves, in order (`prim(..) by assign`).
    Assign,
}

/// A primitive op: `outs = kernel(ins)`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PrimOp {
    /// Variables written, in order; their leaves receive the kernel's output leaves in order.
    pub outs: Vec<Var>,
    /// Variables read, in order; their leaves are the kernel's input leaves in order.
    pub ins: Vec<Var>,
    /// The kernel that computes the outputs.
    pub kernel: KernelRef,
    /// The source text the op came from (printed after `by`).
    pub source: String,
    /// The outputs written in place (an update of the top frame) instead of pushed; each is
    /// one of `outs`. Set by lowering and pop-push fusion; printed as a `!` suffix.
    pub in_place: Vec<Var>,
}

impl PrimOp {
    /// True when output `v` is written in place (updates its top frame) rather than pushed.
    pub fn is_in_place(&self, v: Var) -> bool {
        self.in_place.contains(&v)
    }
}

/// A call to a statically known function (only before lowering).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CallOp {
    /// The callee.
    pub func: FuncId,
    /// Arguments, one per callee parameter.
    pub ins: Vec<Var>,
    /// Results, one per callee return variable.
    pub outs: Vec<Var>,
}

/// A non-terminator instruction.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    /// A primitive computation.
    Prim(PrimOp),
    /// A function call (removed by lowering).
    Call(CallOp),
    /// Pop each variable's stack once.
    Pop(Vec<Var>),
}

impl Op {
    /// Variables this op reads (a pop counts as a use, as in the reference liveness).
    pub fn reads(&self) -> &[Var] {
        match self {
            Op::Prim(p) => &p.ins,
            Op::Call(c) => &c.ins,
            Op::Pop(vars) => vars,
        }
    }

    /// Variables this op writes.
    pub fn writes(&self) -> &[Var] {
        match self {
            Op::Prim(p) => &p.outs,
            Op::Call(c) => &c.outs,
            Op::Pop(_) => &[],
        }
    }
}

/// How control leaves a block.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Terminator {
    /// Jump to a block of the same function.
    Goto(Block),
    /// Jump to `then_` where the scalar `bool` `cond` is true, else to `else_`.
    Branch {
        /// The condition variable.
        cond: Var,
        /// Target for lanes whose condition is true.
        then_: Block,
        /// Target for lanes whose condition is false.
        else_: Block,
    },
    /// Leave the function (from `main`, or in a lowered program: halt the lane).
    Return,
    /// Push `ret` on the program counter's stack and jump to `target` (lowered programs only).
    PushGoto {
        /// The return address.
        ret: Block,
        /// The callee's entry.
        target: Block,
    },
    /// Pop the program counter's stack and jump to the address popped (lowered programs only).
    IndirectGoto,
}

impl Terminator {
    /// The blocks this terminator may transfer control to directly (not return addresses).
    pub fn successors(&self) -> Vec<Block> {
        match self {
            Terminator::Goto(b) => vec![*b],
            Terminator::Branch { then_, else_, .. } => vec![*then_, *else_],
            Terminator::PushGoto { target, .. } => vec![*target],
            Terminator::Return | Terminator::IndirectGoto => vec![],
        }
    }

    /// This terminator with every block it names (targets and return addresses) passed
    /// through `f`: how a pass that renumbers or replaces blocks rewrites jumps.
    pub fn map_blocks(self, mut f: impl FnMut(Block) -> Block) -> Terminator {
        match self {
            Terminator::Goto(t) => Terminator::Goto(f(t)),
            Terminator::Branch { cond, then_, else_ } => Terminator::Branch {
                cond,
                then_: f(then_),
                else_: f(else_),
            },
            Terminator::PushGoto { ret, target } => Terminator::PushGoto {
                ret: f(ret),
                target: f(target),
            },
            t @ (Terminator::Return | Terminator::IndirectGoto) => t,
        }
    }
}

/// A basic block: straight-line ops and one terminator.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BlockData {
    /// Unique label, as printed.
    pub name: String,
    /// Instructions in order.
    pub ops: Vec<Op>,
    /// How control leaves the block.
    pub term: Terminator,
}

/// A function: parameters, return variables and its blocks (the first is the entry).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FunctionData {
    /// Unique name.
    pub name: String,
    /// Formal parameters; callers write them before entering.
    pub params: Vec<Var>,
    /// Return variables; every path leaves the results in them.
    pub returns: Vec<Var>,
    /// The function's blocks in order; `blocks[0]` is the entry.
    pub blocks: Vec<Block>,
}

impl FunctionData {
    /// The entry block.
    pub fn entry(&self) -> Block {
        self.blocks[0]
    }
}

/// The name of the reserved program-counter variable.
pub const PC_NAME: &str = "__program_counter__";

/// A whole program: side tables indexed by entity, the entry function and the program counter.
///
/// The program's inputs are the entry function's parameters and its outputs are the entry
/// function's return variables. Build one with [`ProgramBuilder`](crate::ProgramBuilder).
/// This is the editable data: interpreters and passes take the verified forms
/// ([`HighProgram`](crate::HighProgram), [`LoweredProgram`](crate::LoweredProgram)), which only
/// the verifier makes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Program {
    /// Variable table, indexed by [`Var`].
    pub vars: EntityVec<Var, VarData>,
    /// Block table, indexed by [`Block`].
    pub blocks: EntityVec<Block, BlockData>,
    /// Function table, indexed by [`FuncId`].
    pub functions: EntityVec<FuncId, FunctionData>,
    /// The entry function (its parameters are the inputs, its returns the outputs).
    pub main: FuncId,
    /// The program counter variable (`__program_counter__`, `i32`).
    pub pc: Var,
}

impl Program {
    /// The variable's table entry.
    #[inline]
    pub fn var(&self, v: Var) -> &VarData {
        &self.vars[v]
    }

    /// The block's table entry.
    #[inline]
    pub fn block(&self, b: Block) -> &BlockData {
        &self.blocks[b]
    }

    /// The function's table entry.
    #[inline]
    pub fn function(&self, f: FuncId) -> &FunctionData {
        &self.functions[f]
    }

    /// The entry function.
    #[inline]
    pub fn main_function(&self) -> &FunctionData {
        self.function(self.main)
    }

    /// The program's input variables (the entry function's parameters).
    pub fn inputs(&self) -> &[Var] {
        &self.main_function().params
    }

    /// The program's output variables (the entry function's return variables).
    pub fn outputs(&self) -> &[Var] {
        &self.main_function().returns
    }

    /// Looks a variable up by name.
    pub fn var_named(&self, name: &str) -> Option<Var> {
        self.vars.position(|d| d.name == name)
    }

    /// Looks a block up by name.
    pub fn block_named(&self, name: &str) -> Option<Block> {
        self.blocks.position(|d| d.name == name)
    }

    /// Looks a function up by name.
    pub fn function_named(&self, name: &str) -> Option<FuncId> {
        self.functions.position(|d| d.name == name)
    }

    /// The function that owns each block (`None` for a block no function lists).
    pub fn block_owners(&self) -> EntityVec<Block, Option<FuncId>> {
        let mut owners: EntityVec<Block, Option<FuncId>> =
            self.blocks.iter().map(|_| None).collect();
        for (f, data) in self.functions.entries() {
            for &b in &data.blocks {
                if let Some(slot) = owners.get_mut(b) {
                    *slot = Some(f);
                }
            }
        }
        owners
    }

    /// A copy of this program with every variable's allocation replaced by `allocs[var]`.
    pub fn with_allocations(&self, allocs: &[Allocation]) -> Program {
        let mut p = self.clone();
        for (d, a) in p.vars.iter_mut().zip(allocs) {
            d.alloc = *a;
        }
        p
    }

    /// Every variable's allocation, indexed by [`Var`].
    pub fn allocations(&self) -> Vec<Allocation> {
        self.vars.iter().map(|d| d.alloc).collect()
    }
}

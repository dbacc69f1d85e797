//! `ProgramBuilder`: the API the macro emits calls to and tests use to build programs by hand.

use crate::entity::{Block, FuncId, KernelId, Var};
use crate::program::{
    Allocation, BlockData, CallOp, FunctionData, KernelRef, Op, PrimOp, Program, Terminator,
    VarData, PC_NAME,
};
use crate::types::{DType, Type};
use crate::verified::{HighProgram, LoweredProgram};
use crate::verify::{verify_high, verify_lowered, VerifyErrors};
use std::collections::HashMap;
use thiserror::Error;

/// Why a builder call or [`ProgramBuilder::finish`] failed.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum BuildError {
    /// Two variables with one name (names are global).
    #[error("variable `{0}` is already declared")]
    DuplicateVar(String),
    /// Two functions with one name.
    #[error("function `{0}` is already declared")]
    DuplicateFunction(String),
    /// Two blocks with one label.
    #[error("block label `{0}` is already used")]
    DuplicateBlock(String),
    /// A variable handle this builder never returned.
    #[error("unknown variable {0}")]
    UnknownVar(Var),
    /// A block handle this builder never returned.
    #[error("unknown block {0}")]
    UnknownBlock(Block),
    /// A function handle this builder never returned.
    #[error("unknown function {0}")]
    UnknownFunction(FuncId),
    /// An instruction or terminator added to a block that already has its terminator.
    #[error("block `{0}` already has a terminator")]
    AlreadyTerminated(String),
    /// `finish` found a block without a terminator.
    #[error("block `{0}` has no terminator")]
    Unterminated(String),
    /// `finish` found a function without blocks.
    #[error("function `{0}` has no blocks")]
    EmptyFunction(String),
    /// The finished program breaks an IR invariant.
    #[error("invalid program:\n{0}")]
    Invalid(VerifyErrors),
}

struct PartialBlock {
    name: String,
    ops: Vec<Op>,
    term: Option<Terminator>,
}

/// Builds a [`Program`] entity by entity.
///
/// Every method has a `try_` form returning [`BuildError`]; the plain form panics with that
/// error's message and is meant for tests and generated code whose inputs are known good.
///
/// ```
/// use autobatch_ir::{KernelId, ProgramBuilder, Type};
///
/// let mut b = ProgramBuilder::new();
/// let x = b.var("x", Type::I64);
/// let y = b.var("y", Type::I64);
/// let f = b.function("inc");
/// b.signature(f, &[x], &[y]);
/// let entry = b.block(f, "entry");
/// b.prim(entry, &[y], &[x], KernelId::new(0), "x + 1");
/// b.ret(entry);
/// let program = b.finish(f).unwrap();
/// assert!(program.to_string().contains("y = prim(x) by x + 1"));
/// ```
pub struct ProgramBuilder {
    vars: Vec<VarData>,
    var_names: HashMap<String, Var>,
    blocks: Vec<PartialBlock>,
    block_names: HashMap<String, Block>,
    functions: Vec<FunctionData>,
    function_names: HashMap<String, FuncId>,
    pc: Var,
}

impl Default for ProgramBuilder {
    fn default() -> Self {
        Self::new()
    }
}

fn ok<T>(r: Result<T, BuildError>) -> T {
    r.unwrap_or_else(|e| panic!("{e}"))
}

impl ProgramBuilder {
    /// An empty builder; the program counter variable is declared already.
    pub fn new() -> Self {
        let mut b = ProgramBuilder {
            vars: Vec::new(),
            var_names: HashMap::new(),
            blocks: Vec::new(),
            block_names: HashMap::new(),
            functions: Vec::new(),
            function_names: HashMap::new(),
            pc: Var::new(0),
        };
        b.pc = ok(b.try_var(PC_NAME, Type::scalar(DType::I32)));
        b
    }

    /// The program counter variable.
    pub fn pc(&self) -> Var {
        self.pc
    }

    /// Declares a variable (allocation `Full` until an analysis says otherwise).
    pub fn try_var(&mut self, name: &str, ty: Type) -> Result<Var, BuildError> {
        if self.var_names.contains_key(name) {
            return Err(BuildError::DuplicateVar(name.to_string()));
        }
        let v = Var::new(self.vars.len());
        self.vars.push(VarData {
            name: name.to_string(),
            ty,
            alloc: Allocation::Full,
        });
        self.var_names.insert(name.to_string(), v);
        Ok(v)
    }

    /// Panicking form of [`try_var`](Self::try_var).
    pub fn var(&mut self, name: &str, ty: Type) -> Var {
        ok(self.try_var(name, ty))
    }

    /// Sets a variable's allocation (the macro emits the analysis result it computed).
    pub fn try_set_allocation(&mut self, v: Var, alloc: Allocation) -> Result<(), BuildError> {
        let d = self
            .vars
            .get_mut(v.index())
            .ok_or(BuildError::UnknownVar(v))?;
        d.alloc = alloc;
        Ok(())
    }

    /// Panicking form of [`try_set_allocation`](Self::try_set_allocation).
    pub fn set_allocation(&mut self, v: Var, alloc: Allocation) {
        ok(self.try_set_allocation(v, alloc))
    }

    /// Declares a function with no parameters, returns or blocks yet (declare first, so mutual
    /// recursion can refer to functions not yet defined).
    pub fn try_function(&mut self, name: &str) -> Result<FuncId, BuildError> {
        if self.function_names.contains_key(name) {
            return Err(BuildError::DuplicateFunction(name.to_string()));
        }
        let f = FuncId::new(self.functions.len());
        self.functions.push(FunctionData {
            name: name.to_string(),
            params: Vec::new(),
            returns: Vec::new(),
            blocks: Vec::new(),
        });
        self.function_names.insert(name.to_string(), f);
        Ok(f)
    }

    /// Panicking form of [`try_function`](Self::try_function).
    pub fn function(&mut self, name: &str) -> FuncId {
        ok(self.try_function(name))
    }

    /// Sets a function's formal parameters and return variables.
    pub fn try_signature(
        &mut self,
        f: FuncId,
        params: &[Var],
        returns: &[Var],
    ) -> Result<(), BuildError> {
        self.check_vars(params)?;
        self.check_vars(returns)?;
        let data = self
            .functions
            .get_mut(f.index())
            .ok_or(BuildError::UnknownFunction(f))?;
        data.params = params.to_vec();
        data.returns = returns.to_vec();
        Ok(())
    }

    /// Panicking form of [`try_signature`](Self::try_signature).
    pub fn signature(&mut self, f: FuncId, params: &[Var], returns: &[Var]) {
        ok(self.try_signature(f, params, returns))
    }

    /// Appends a new block to function `f`; the first block of a function is its entry.
    pub fn try_block(&mut self, f: FuncId, name: &str) -> Result<Block, BuildError> {
        if f.index() >= self.functions.len() {
            return Err(BuildError::UnknownFunction(f));
        }
        if self.block_names.contains_key(name) {
            return Err(BuildError::DuplicateBlock(name.to_string()));
        }
        let b = Block::new(self.blocks.len());
        self.blocks.push(PartialBlock {
            name: name.to_string(),
            ops: Vec::new(),
            term: None,
        });
        self.block_names.insert(name.to_string(), b);
        self.functions[f.index()].blocks.push(b);
        Ok(b)
    }

    /// Panicking form of [`try_block`](Self::try_block).
    pub fn block(&mut self, f: FuncId, name: &str) -> Block {
        ok(self.try_block(f, name))
    }

    fn check_vars(&self, vars: &[Var]) -> Result<(), BuildError> {
        match vars.iter().find(|v| v.index() >= self.vars.len()) {
            Some(v) => Err(BuildError::UnknownVar(*v)),
            None => Ok(()),
        }
    }

    fn open_block(&mut self, b: Block) -> Result<&mut PartialBlock, BuildError> {
        let block = self
            .blocks
            .get_mut(b.index())
            .ok_or(BuildError::UnknownBlock(b))?;
        if block.term.is_some() {
            return Err(BuildError::AlreadyTerminated(block.name.clone()));
        }
        Ok(block)
    }

    fn push_op(&mut self, b: Block, op: Op) -> Result<(), BuildError> {
        self.check_vars(op.reads())?;
        self.check_vars(op.writes())?;
        self.open_block(b)?.ops.push(op);
        Ok(())
    }

    /// Appends `outs = kernel(ins)` running user kernel `kernel`; `source` is printed after `by`.
    pub fn try_prim(
        &mut self,
        b: Block,
        outs: &[Var],
        ins: &[Var],
        kernel: KernelId,
        source: &str,
    ) -> Result<(), BuildError> {
        self.push_op(b, prim_op(outs, ins, KernelRef::User(kernel), source))
    }

    /// Panicking form of [`try_prim`](Self::try_prim).
    pub fn prim(&mut self, b: Block, outs: &[Var], ins: &[Var], kernel: KernelId, source: &str) {
        ok(self.try_prim(b, outs, ins, kernel, source))
    }

    /// Appends a copy `outs = ins` (the built-in `assign` kernel).
    pub fn try_assign(&mut self, b: Block, outs: &[Var], ins: &[Var]) -> Result<(), BuildError> {
        self.push_op(b, prim_op(outs, ins, KernelRef::Assign, "assign"))
    }

    /// Panicking form of [`try_assign`](Self::try_assign).
    pub fn assign(&mut self, b: Block, outs: &[Var], ins: &[Var]) {
        ok(self.try_assign(b, outs, ins))
    }

    /// Appends an arbitrary op (for example a [`PrimOp`] with in-place outputs).
    pub fn try_op(&mut self, b: Block, op: Op) -> Result<(), BuildError> {
        if let Op::Call(c) = &op {
            if c.func.index() >= self.functions.len() {
                return Err(BuildError::UnknownFunction(c.func));
            }
        }
        self.push_op(b, op)
    }

    /// Panicking form of [`try_op`](Self::try_op).
    pub fn op(&mut self, b: Block, op: Op) {
        ok(self.try_op(b, op))
    }

    /// Appends `outs = call(func, ins)`.
    pub fn try_call(
        &mut self,
        b: Block,
        func: FuncId,
        ins: &[Var],
        outs: &[Var],
    ) -> Result<(), BuildError> {
        self.try_op(
            b,
            Op::Call(CallOp {
                func,
                ins: ins.to_vec(),
                outs: outs.to_vec(),
            }),
        )
    }

    /// Panicking form of [`try_call`](Self::try_call).
    pub fn call(&mut self, b: Block, func: FuncId, ins: &[Var], outs: &[Var]) {
        ok(self.try_call(b, func, ins, outs))
    }

    /// Appends `pop(vars)`.
    pub fn try_pop(&mut self, b: Block, vars: &[Var]) -> Result<(), BuildError> {
        self.push_op(b, Op::Pop(vars.to_vec()))
    }

    /// Panicking form of [`try_pop`](Self::try_pop).
    pub fn pop(&mut self, b: Block, vars: &[Var]) {
        ok(self.try_pop(b, vars))
    }

    /// Ends block `b` with `term`.
    pub fn try_terminate(&mut self, b: Block, term: Terminator) -> Result<(), BuildError> {
        let targets = match &term {
            Terminator::PushGoto { ret, target } => vec![*ret, *target],
            t => t.successors(),
        };
        if let Some(t) = targets.iter().find(|t| t.index() >= self.blocks.len()) {
            return Err(BuildError::UnknownBlock(*t));
        }
        if let Terminator::Branch { cond, .. } = &term {
            self.check_vars(&[*cond])?;
        }
        self.open_block(b)?.term = Some(term);
        Ok(())
    }

    /// Ends `b` with `goto(target)`.
    pub fn goto(&mut self, b: Block, target: Block) {
        ok(self.try_terminate(b, Terminator::Goto(target)))
    }

    /// Ends `b` with `branch(cond, then_, else_)`.
    pub fn branch(&mut self, b: Block, cond: Var, then_: Block, else_: Block) {
        ok(self.try_terminate(b, Terminator::Branch { cond, then_, else_ }))
    }

    /// Ends `b` with `return`.
    pub fn ret(&mut self, b: Block) {
        ok(self.try_terminate(b, Terminator::Return))
    }

    /// Ends `b` with `push_goto(ret, target)` (hand-lowered programs).
    pub fn push_goto(&mut self, b: Block, ret: Block, target: Block) {
        ok(self.try_terminate(b, Terminator::PushGoto { ret, target }))
    }

    /// Ends `b` with `indirect_jump` (hand-lowered programs).
    pub fn indirect_goto(&mut self, b: Block) {
        ok(self.try_terminate(b, Terminator::IndirectGoto))
    }

    /// Finishes a high-level program whose entry is `main` and verifies it.
    pub fn finish(self, main: FuncId) -> Result<HighProgram, BuildError> {
        verify_high(self.finish_data(main)?).map_err(BuildError::Invalid)
    }

    /// Finishes a hand-lowered program (one function, `main`, may use push-goto / indirect-goto)
    /// and verifies it.
    pub fn finish_lowered(self, main: FuncId) -> Result<LoweredProgram, BuildError> {
        verify_lowered(self.finish_data(main)?).map_err(BuildError::Invalid)
    }

    /// Wraps `entry` in a `main` function that calls it with the same variables (the reference's
    /// `Module.program`), then finishes and verifies the program.
    pub fn finish_with_entry(mut self, entry: FuncId) -> Result<HighProgram, BuildError> {
        let data = self
            .functions
            .get(entry.index())
            .ok_or(BuildError::UnknownFunction(entry))?;
        let (params, returns) = (data.params.clone(), data.returns.clone());
        let main = self.try_function("main")?;
        self.try_signature(main, &params, &returns)?;
        let b = self.try_block(main, "main_entry")?;
        self.try_call(b, entry, &params, &returns)?;
        self.try_terminate(b, Terminator::Return)?;
        self.finish(main)
    }

    fn finish_data(self, main: FuncId) -> Result<Program, BuildError> {
        if main.index() >= self.functions.len() {
            return Err(BuildError::UnknownFunction(main));
        }
        if let Some(f) = self.functions.iter().find(|f| f.blocks.is_empty()) {
            return Err(BuildError::EmptyFunction(f.name.clone()));
        }
        let mut blocks = Vec::with_capacity(self.blocks.len());
        for b in self.blocks {
            let term = b
                .term
                .ok_or_else(|| BuildError::Unterminated(b.name.clone()))?;
            blocks.push(BlockData {
                name: b.name,
                ops: b.ops,
                term,
            });
        }
        Ok(Program {
            vars: self.vars.into(),
            blocks: blocks.into(),
            functions: self.functions.into(),
            main,
            pc: self.pc,
        })
    }
}

/// A primitive op with every output pushed (not in place).
pub fn prim_op(outs: &[Var], ins: &[Var], kernel: KernelRef, source: &str) -> Op {
    Op::Prim(PrimOp {
        outs: outs.to_vec(),
        ins: ins.to_vec(),
        kernel,
        source: source.to_string(),
        in_place: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn try_forms_report_typed_errors() {
        let mut b = ProgramBuilder::new();
        let x = b.var("x", Type::I64);
        assert_eq!(
            b.try_var("x", Type::I64),
            Err(BuildError::DuplicateVar("x".into()))
        );
        let f = b.function("f");
        assert_eq!(
            b.try_function("f"),
            Err(BuildError::DuplicateFunction("f".into()))
        );
        assert_eq!(
            b.try_block(FuncId::new(9), "e"),
            Err(BuildError::UnknownFunction(FuncId::new(9)))
        );
        let e = b.block(f, "e");
        assert_eq!(
            b.try_block(f, "e"),
            Err(BuildError::DuplicateBlock("e".into()))
        );
        assert_eq!(
            b.try_pop(e, &[Var::new(99)]),
            Err(BuildError::UnknownVar(Var::new(99)))
        );
        assert_eq!(
            b.try_terminate(e, Terminator::Goto(Block::new(5))),
            Err(BuildError::UnknownBlock(Block::new(5)))
        );
        b.signature(f, &[x], &[x]);
        b.ret(e);
        assert_eq!(
            b.try_pop(e, &[x]),
            Err(BuildError::AlreadyTerminated("e".into()))
        );
        let g = b.function("g");
        assert_eq!(
            b.try_call(e, FuncId::new(7), &[], &[]),
            Err(BuildError::UnknownFunction(FuncId::new(7)))
        );
        let _ = g;
        assert_eq!(b.finish(f), Err(BuildError::EmptyFunction("g".into())));
    }

    #[test]
    fn finish_rejects_unterminated_blocks() {
        let mut b = ProgramBuilder::new();
        let f = b.function("f");
        b.block(f, "open");
        assert_eq!(b.finish(f), Err(BuildError::Unterminated("open".into())));
    }

    #[test]
    fn finish_with_entry_wraps_the_entry_in_main() {
        let mut b = ProgramBuilder::new();
        let n = b.var("n", Type::I64);
        let f = b.function("id");
        b.signature(f, &[n], &[n]);
        let e = b.block(f, "enter_id");
        b.ret(e);
        let p = b.finish_with_entry(f).unwrap();
        assert_eq!(p.main_function().name, "main");
        assert_eq!(p.inputs(), &[n]);
        assert_eq!(p.outputs(), &[n]);
        assert!(matches!(
            p.block(p.main_function().entry()).ops[0],
            Op::Call(_)
        ));
    }
}

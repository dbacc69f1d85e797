//! The verifier: checks every IR invariant and reports all violations, each naming its entity.
//!
//! [`verify`] never panics, whatever the program: it checks every index against its table
//! first and skips the checks that would need an index that is out of range. Op indices in
//! messages count from 0 within their block.

use crate::entity::{Block, FuncId, Var};
use crate::passes::liveness::liveness;
use crate::program::{Form, KernelRef, Op, Program, Terminator, PC_NAME};
use crate::types::{DType, TensorType, Type};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;
use thiserror::Error;

/// The name used in messages for the function of a block that no function lists.
const NO_FUNCTION: &str = "<none>";

/// One broken invariant, naming the entity at fault.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum VerifyError {
    /// `program.main` is not an index into the function table.
    #[error("the entry function {main} does not exist (the program has {functions} functions)")]
    NoEntry {
        /// The entry function handle.
        main: FuncId,
        /// How many functions the program has.
        functions: usize,
    },
    /// A function lists no blocks (so it has no entry block).
    #[error("function `{func}` has no blocks")]
    EmptyFunction {
        /// The function's name.
        func: String,
    },
    /// A function lists a block that is not in the block table.
    #[error("function `{func}` lists block {block}, which does not exist (the program has {blocks} blocks)")]
    BlockOutOfRange {
        /// The function's name.
        func: String,
        /// The out-of-range block handle.
        block: Block,
        /// How many blocks the program has.
        blocks: usize,
    },
    /// A block that no function lists.
    #[error("block `{block}` belongs to no function")]
    OrphanBlock {
        /// The block's name.
        block: String,
    },
    /// A block listed more than once (by two functions, or twice by one).
    #[error("block `{block}` is listed by function `{first}` and again by function `{second}`")]
    BlockListedTwice {
        /// The block's name.
        block: String,
        /// The function that lists it first.
        first: String,
        /// The function that lists it again.
        second: String,
    },
    /// A variable handle that is not in the variable table.
    #[error("{site}: variable {var} does not exist (the program has {vars} variables)")]
    VarOutOfRange {
        /// Where the handle appears (function, block, op and role).
        site: String,
        /// The out-of-range variable handle.
        var: Var,
        /// How many variables the program has.
        vars: usize,
    },
    /// A terminator names a block that is not in the block table.
    #[error("block `{block}` in function `{func}`: jump target {target} does not exist (the program has {blocks} blocks)")]
    TargetOutOfRange {
        /// The function owning the jumping block.
        func: String,
        /// The jumping block.
        block: String,
        /// The out-of-range target.
        target: Block,
        /// How many blocks the program has.
        blocks: usize,
    },
    /// A call names a function that is not in the function table.
    #[error("block `{block}` in function `{func}`, op {op}: callee {callee} does not exist (the program has {functions} functions)")]
    CalleeOutOfRange {
        /// The calling function.
        func: String,
        /// The calling block.
        block: String,
        /// The call's index in its block.
        op: usize,
        /// The out-of-range callee handle.
        callee: FuncId,
        /// How many functions the program has.
        functions: usize,
    },
    /// Two variables share a name (names are global).
    #[error("variables {first} and {second} are both named `{name}`")]
    DuplicateVarName {
        /// The shared name.
        name: String,
        /// The first variable with it.
        first: Var,
        /// A later variable with it.
        second: Var,
    },
    /// Two blocks share a label.
    #[error("blocks {first} and {second} are both named `{name}`")]
    DuplicateBlockName {
        /// The shared label.
        name: String,
        /// The first block with it.
        first: Block,
        /// A later block with it.
        second: Block,
    },
    /// Two functions share a name.
    #[error("functions {first} and {second} are both named `{name}`")]
    DuplicateFunctionName {
        /// The shared name.
        name: String,
        /// The first function with it.
        first: FuncId,
        /// A later function with it.
        second: FuncId,
    },
    /// `program.pc` is not an index into the variable table.
    #[error("the program counter {pc} does not exist (the program has {vars} variables)")]
    PcOutOfRange {
        /// The program counter handle.
        pc: Var,
        /// How many variables the program has.
        vars: usize,
    },
    /// The program counter is not named [`PC_NAME`].
    #[error("the program counter {pc} is named `{name}`, expected `{PC_NAME}`")]
    PcMisnamed {
        /// The program counter handle.
        pc: Var,
        /// Its actual name.
        name: String,
    },
    /// The program counter is not a scalar `i32`.
    #[error("the program counter `{name}` has type {ty}, expected i32")]
    PcWrongType {
        /// The program counter's name.
        name: String,
        /// Its actual type.
        ty: Type,
    },
    /// A variable other than the program counter uses the reserved name [`PC_NAME`].
    #[error("variable {var} is named `{PC_NAME}` but is not the program counter {pc}")]
    ReservedPcName {
        /// The impostor.
        var: Var,
        /// The real program counter.
        pc: Var,
    },
    /// An op reads or writes the program counter (only push-goto / indirect-goto touch it).
    #[error(
        "block `{block}` in function `{func}`, op {op}: {access} the program counter `{PC_NAME}`"
    )]
    PcInOp {
        /// The function owning the block.
        func: String,
        /// The block.
        block: String,
        /// The op's index in its block.
        op: usize,
        /// `"reads"` or `"writes"` (a pop or a call argument reads; a call result writes).
        access: &'static str,
    },
    /// A branch tests the program counter.
    #[error("block `{block}` in function `{func}`: branches on the program counter `{PC_NAME}`")]
    PcBranch {
        /// The function owning the block.
        func: String,
        /// The block.
        block: String,
    },
    /// The program counter is a parameter or return variable of a function.
    #[error("function `{func}`: the program counter `{PC_NAME}` is a {role}")]
    PcInSignature {
        /// The function.
        func: String,
        /// `"parameter"` or `"return variable"`.
        role: &'static str,
    },
    /// A jump (goto, branch or push-goto, target or return address) leaves the function.
    #[error("block `{block}` in function `{func}` jumps to block `{target}` of function `{target_func}`; jumps must stay inside one function")]
    CrossFunctionJump {
        /// The function owning the jumping block.
        func: String,
        /// The jumping block.
        block: String,
        /// The target block.
        target: String,
        /// The function owning the target.
        target_func: String,
    },
    /// A push-goto or indirect-goto in a high-level program (they only appear after lowering).
    #[error(
        "block `{block}` in function `{func}`: `{terminator}` is only allowed in a lowered program"
    )]
    LoweredTerminatorInHighForm {
        /// The function owning the block.
        func: String,
        /// The block.
        block: String,
        /// `"push_goto"` or `"indirect_jump"`.
        terminator: &'static str,
    },
    /// A goto or branch in a high-level program targets a function's entry block (entry blocks
    /// are entered only by calls; lowering relies on it).
    #[error("block `{block}` in function `{func}` jumps to `{target}`, the entry block of function `{target_func}`; entry blocks are entered only by calls")]
    JumpToEntry {
        /// The function owning the jumping block.
        func: String,
        /// The jumping block.
        block: String,
        /// The entry block jumped to.
        target: String,
        /// The function whose entry it is.
        target_func: String,
    },
    /// A call op in a lowered program.
    #[error("block `{block}` in function `{func}`, op {op}: a lowered program has no calls (call to `{callee}`)")]
    CallInLoweredForm {
        /// The function owning the block.
        func: String,
        /// The block.
        block: String,
        /// The call's index in its block.
        op: usize,
        /// The callee's name (or its handle if out of range).
        callee: String,
    },
    /// A lowered program has a function besides its entry.
    #[error("function `{func}`: a lowered program has only its entry function `{main}`")]
    ExtraFunction {
        /// The extra function.
        func: String,
        /// The entry function's name (or its handle if out of range).
        main: String,
    },
    /// A branch condition that is not a scalar `bool`.
    #[error("block `{block}` in function `{func}`: branch condition `{var}` has type {ty}, expected bool")]
    BranchNotBool {
        /// The function owning the block.
        func: String,
        /// The block.
        block: String,
        /// The condition variable's name.
        var: String,
        /// Its type.
        ty: Type,
    },
    /// A call passes the wrong number of arguments or receives the wrong number of results.
    #[error("block `{block}` in function `{func}`, op {op}: call to `{callee}` has {found} {what}, expected {expected}")]
    CallArity {
        /// The calling function.
        func: String,
        /// The calling block.
        block: String,
        /// The call's index in its block.
        op: usize,
        /// The callee's name.
        callee: String,
        /// `"arguments"` or `"results"`.
        what: &'static str,
        /// The callee's parameter or return count.
        expected: usize,
        /// The call's argument or result count.
        found: usize,
    },
    /// A call argument or result whose type differs from the callee's parameter or return.
    #[error("block `{block}` in function `{func}`, op {op}: {what} {position} of the call to `{callee}` is `{var}` of type {ty}, but `{formal}` has type {expected}")]
    CallTypeMismatch {
        /// The calling function.
        func: String,
        /// The calling block.
        block: String,
        /// The call's index in its block.
        op: usize,
        /// The callee's name.
        callee: String,
        /// `"argument"` or `"result"`.
        what: &'static str,
        /// The position (from 0) in the argument or result list.
        position: usize,
        /// The caller's variable.
        var: String,
        /// Its type.
        ty: Type,
        /// The callee's parameter or return variable.
        formal: String,
        /// Its type.
        expected: Type,
    },
    /// A built-in `assign` whose input leaves differ from its output leaves.
    #[error("block `{block}` in function `{func}`, op {op}: assign writes leaves [{outs}] from leaves [{ins}]")]
    AssignLeaves {
        /// The function owning the block.
        func: String,
        /// The block.
        block: String,
        /// The op's index in its block.
        op: usize,
        /// The concatenated leaves of the inputs, printed.
        ins: String,
        /// The concatenated leaves of the outputs, printed.
        outs: String,
    },
    /// A primitive op whose `in_place` flags do not match its outputs one to one.
    #[error("block `{block}` in function `{func}`, op {op}: {in_place} in-place flags for {outs} outputs")]
    InPlaceLength {
        /// The function owning the block.
        func: String,
        /// The block.
        block: String,
        /// The op's index in its block.
        op: usize,
        /// `in_place.len()`.
        in_place: usize,
        /// `outs.len()`.
        outs: usize,
    },
    /// One op writes one variable twice.
    #[error("block `{block}` in function `{func}`, op {op}: writes `{var}` more than once")]
    DuplicateOutput {
        /// The function owning the block.
        func: String,
        /// The block.
        block: String,
        /// The op's index in its block.
        op: usize,
        /// The variable written twice.
        var: String,
    },
    /// A function lists one parameter twice.
    #[error("function `{func}`: parameter `{var}` is listed more than once")]
    DuplicateParam {
        /// The function.
        func: String,
        /// The repeated parameter.
        var: String,
    },
    /// In a high-level program, a variable is live into a function's entry block without being
    /// one of its parameters: some path reads (or pops) it before writing it.
    #[error("function `{func}`: `{var}` may be read before it is written (it is live on entry but not a parameter)")]
    ReadBeforeWrite {
        /// The function.
        func: String,
        /// The variable.
        var: String,
    },
}

/// Every invariant a program breaks (never empty).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyErrors(pub Vec<VerifyError>);

impl fmt::Display for VerifyErrors {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, e) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str("\n")?;
            }
            write!(f, "  {e}")?;
        }
        Ok(())
    }
}

impl std::error::Error for VerifyErrors {}

/// Checks `program` against every IR invariant, collecting all errors.
///
/// Never panics: indices are range-checked first and checks needing an out-of-range index are
/// skipped (the range error is reported instead). The read-before-write check (liveness) runs
/// only on high-level programs whose indices are all in range.
pub fn verify(program: &Program) -> Result<(), VerifyErrors> {
    let mut v = Verifier::new(program);
    v.check_functions();
    v.check_names();
    v.check_pc();
    v.check_blocks();
    v.check_liveness();
    if v.errors.is_empty() {
        Ok(())
    } else {
        Err(VerifyErrors(v.errors))
    }
}

struct Verifier<'a> {
    p: &'a Program,
    errors: Vec<VerifyError>,
    /// The first function listing each block.
    owners: Vec<Option<FuncId>>,
    /// Set once any index is out of range (liveness would panic).
    out_of_range: bool,
}

fn leaves_text(leaves: &[TensorType]) -> String {
    leaves
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

impl<'a> Verifier<'a> {
    fn new(p: &'a Program) -> Self {
        Verifier {
            p,
            errors: Vec::new(),
            owners: vec![None; p.blocks.len()],
            out_of_range: false,
        }
    }

    fn push(&mut self, e: VerifyError) {
        self.errors.push(e);
    }

    fn var_ok(&self, v: Var) -> bool {
        v.index() < self.p.vars.len()
    }

    fn var_name(&self, v: Var) -> String {
        match self.p.vars.get(v.index()) {
            Some(d) => d.name.clone(),
            None => v.to_string(),
        }
    }

    fn var_type(&self, v: Var) -> Option<&'a Type> {
        self.p.vars.get(v.index()).map(|d| &d.ty)
    }

    fn block_name(&self, b: Block) -> String {
        match self.p.blocks.get(b.index()) {
            Some(d) => d.name.clone(),
            None => b.to_string(),
        }
    }

    fn func_name(&self, f: FuncId) -> String {
        match self.p.functions.get(f.index()) {
            Some(d) => d.name.clone(),
            None => f.to_string(),
        }
    }

    fn owner_name(&self, b: Block) -> String {
        match self.owners.get(b.index()).copied().flatten() {
            Some(f) => self.func_name(f),
            None => NO_FUNCTION.to_string(),
        }
    }

    /// Reports every out-of-range handle in `vars`; true when all are in range.
    fn check_var_range(&mut self, vars: &[Var], site: impl Fn() -> String) -> bool {
        let mut ok = true;
        for &v in vars {
            if !self.var_ok(v) {
                ok = false;
                self.out_of_range = true;
                self.push(VerifyError::VarOutOfRange {
                    site: site(),
                    var: v,
                    vars: self.p.vars.len(),
                });
            }
        }
        ok
    }

    /// Entry, blocks lists (range, ownership), signatures, lowered-form function count.
    fn check_functions(&mut self) {
        let p = self.p;
        if p.main.index() >= p.functions.len() {
            self.push(VerifyError::NoEntry {
                main: p.main,
                functions: p.functions.len(),
            });
        }
        for (fi, func) in p.functions.iter().enumerate() {
            let f = FuncId::new(fi);
            if func.blocks.is_empty() {
                self.push(VerifyError::EmptyFunction {
                    func: func.name.clone(),
                });
            }
            for &b in &func.blocks {
                match self.owners.get(b.index()).copied() {
                    None => {
                        self.out_of_range = true;
                        self.push(VerifyError::BlockOutOfRange {
                            func: func.name.clone(),
                            block: b,
                            blocks: p.blocks.len(),
                        });
                    }
                    Some(Some(first)) => self.push(VerifyError::BlockListedTwice {
                        block: self.block_name(b),
                        first: self.func_name(first),
                        second: func.name.clone(),
                    }),
                    Some(None) => self.owners[b.index()] = Some(f),
                }
            }
            let name = func.name.clone();
            self.check_var_range(&func.params, || format!("function `{name}` parameters"));
            self.check_var_range(&func.returns, || format!("function `{name}` returns"));
            let mut seen = HashSet::new();
            for &v in &func.params {
                if !seen.insert(v) {
                    self.push(VerifyError::DuplicateParam {
                        func: func.name.clone(),
                        var: self.var_name(v),
                    });
                }
            }
            if func.params.contains(&p.pc) {
                self.push(VerifyError::PcInSignature {
                    func: func.name.clone(),
                    role: "parameter",
                });
            }
            if func.returns.contains(&p.pc) {
                self.push(VerifyError::PcInSignature {
                    func: func.name.clone(),
                    role: "return variable",
                });
            }
            if p.form == Form::Lowered && f != p.main {
                self.push(VerifyError::ExtraFunction {
                    func: func.name.clone(),
                    main: self.func_name(p.main),
                });
            }
        }
        for (bi, owner) in self.owners.clone().into_iter().enumerate() {
            if owner.is_none() {
                self.push(VerifyError::OrphanBlock {
                    block: p.blocks[bi].name.clone(),
                });
            }
        }
    }

    /// Unique variable, block and function names.
    fn check_names(&mut self) {
        let p = self.p;
        let mut vars: HashMap<&str, usize> = HashMap::new();
        for (i, d) in p.vars.iter().enumerate() {
            if let Some(&first) = vars.get(d.name.as_str()) {
                self.push(VerifyError::DuplicateVarName {
                    name: d.name.clone(),
                    first: Var::new(first),
                    second: Var::new(i),
                });
            } else {
                vars.insert(&d.name, i);
            }
        }
        let mut blocks: HashMap<&str, usize> = HashMap::new();
        for (i, d) in p.blocks.iter().enumerate() {
            if let Some(&first) = blocks.get(d.name.as_str()) {
                self.push(VerifyError::DuplicateBlockName {
                    name: d.name.clone(),
                    first: Block::new(first),
                    second: Block::new(i),
                });
            } else {
                blocks.insert(&d.name, i);
            }
        }
        let mut funcs: HashMap<&str, usize> = HashMap::new();
        for (i, d) in p.functions.iter().enumerate() {
            if let Some(&first) = funcs.get(d.name.as_str()) {
                self.push(VerifyError::DuplicateFunctionName {
                    name: d.name.clone(),
                    first: FuncId::new(first),
                    second: FuncId::new(i),
                });
            } else {
                funcs.insert(&d.name, i);
            }
        }
    }

    /// The program counter exists, is named [`PC_NAME`], is a scalar `i32`, and is unique.
    fn check_pc(&mut self) {
        let p = self.p;
        match p.vars.get(p.pc.index()) {
            None => {
                self.out_of_range = true;
                self.push(VerifyError::PcOutOfRange {
                    pc: p.pc,
                    vars: p.vars.len(),
                });
            }
            Some(d) => {
                if d.name != PC_NAME {
                    self.push(VerifyError::PcMisnamed {
                        pc: p.pc,
                        name: d.name.clone(),
                    });
                }
                if d.ty != Type::scalar(DType::I32) {
                    self.push(VerifyError::PcWrongType {
                        name: d.name.clone(),
                        ty: d.ty.clone(),
                    });
                }
            }
        }
        for (i, d) in p.vars.iter().enumerate() {
            if d.name == PC_NAME && Var::new(i) != p.pc {
                self.push(VerifyError::ReservedPcName {
                    var: Var::new(i),
                    pc: p.pc,
                });
            }
        }
    }

    /// Ops and terminators of every block in the table (orphans included).
    fn check_blocks(&mut self) {
        let p = self.p;
        let entries: HashMap<Block, FuncId> = p
            .functions
            .iter()
            .enumerate()
            .filter_map(|(i, f)| f.blocks.first().map(|&b| (b, FuncId::new(i))))
            .collect();
        for (bi, data) in p.blocks.iter().enumerate() {
            let b = Block::new(bi);
            let func = self.owner_name(b);
            let block = data.name.clone();
            for (oi, op) in data.ops.iter().enumerate() {
                self.check_op(&func, &block, oi, op);
            }
            self.check_terminator(b, &func, &block, &data.term, &entries);
        }
    }

    fn check_op(&mut self, func: &str, block: &str, oi: usize, op: &Op) {
        let p = self.p;
        let site = |role: &str| format!("block `{block}` in function `{func}`, op {oi} {role}");
        let reads_ok = self.check_var_range(op.reads(), || site("input"));
        let writes_ok = self.check_var_range(op.writes(), || site("output"));
        let at = || (func.to_string(), block.to_string());
        if op.reads().contains(&p.pc) {
            let (func, block) = at();
            self.push(VerifyError::PcInOp {
                func,
                block,
                op: oi,
                access: "reads",
            });
        }
        if op.writes().contains(&p.pc) {
            let (func, block) = at();
            self.push(VerifyError::PcInOp {
                func,
                block,
                op: oi,
                access: "writes",
            });
        }
        let mut seen = HashSet::new();
        let mut reported = HashSet::new();
        for &v in op.writes() {
            if !seen.insert(v) && reported.insert(v) {
                let (func, block) = at();
                self.push(VerifyError::DuplicateOutput {
                    func,
                    block,
                    op: oi,
                    var: self.var_name(v),
                });
            }
        }
        match op {
            Op::Prim(prim) => {
                if prim.in_place.len() != prim.outs.len() {
                    let (func, block) = at();
                    self.push(VerifyError::InPlaceLength {
                        func,
                        block,
                        op: oi,
                        in_place: prim.in_place.len(),
                        outs: prim.outs.len(),
                    });
                }
                if prim.kernel == KernelRef::Assign && reads_ok && writes_ok {
                    let leaves = |vars: &[Var]| {
                        let mut out = Vec::new();
                        for &v in vars {
                            p.vars[v.index()].ty.push_leaves(&mut out);
                        }
                        out
                    };
                    let (ins, outs) = (leaves(&prim.ins), leaves(&prim.outs));
                    if ins != outs {
                        let (func, block) = at();
                        self.push(VerifyError::AssignLeaves {
                            func,
                            block,
                            op: oi,
                            ins: leaves_text(&ins),
                            outs: leaves_text(&outs),
                        });
                    }
                }
            }
            Op::Call(call) => {
                if p.form == Form::Lowered {
                    let (func, block) = at();
                    self.push(VerifyError::CallInLoweredForm {
                        func,
                        block,
                        op: oi,
                        callee: self.func_name(call.func),
                    });
                }
                let Some(callee) = p.functions.get(call.func.index()) else {
                    self.out_of_range = true;
                    let (func, block) = at();
                    self.push(VerifyError::CalleeOutOfRange {
                        func,
                        block,
                        op: oi,
                        callee: call.func,
                        functions: p.functions.len(),
                    });
                    return;
                };
                let sides = [
                    ("arguments", "argument", &call.ins, &callee.params),
                    ("results", "result", &call.outs, &callee.returns),
                ];
                for (plural, singular, actual, formal) in sides {
                    if actual.len() != formal.len() {
                        let (func, block) = at();
                        self.push(VerifyError::CallArity {
                            func,
                            block,
                            op: oi,
                            callee: callee.name.clone(),
                            what: plural,
                            expected: formal.len(),
                            found: actual.len(),
                        });
                        continue;
                    }
                    for (pos, (&a, &f)) in actual.iter().zip(formal.iter()).enumerate() {
                        let (Some(ty), Some(expected)) = (self.var_type(a), self.var_type(f))
                        else {
                            continue;
                        };
                        if ty != expected {
                            let (func, block) = at();
                            self.push(VerifyError::CallTypeMismatch {
                                func,
                                block,
                                op: oi,
                                callee: callee.name.clone(),
                                what: singular,
                                position: pos,
                                var: self.var_name(a),
                                ty: ty.clone(),
                                formal: self.var_name(f),
                                expected: expected.clone(),
                            });
                        }
                    }
                }
            }
            Op::Pop(_) => {}
        }
    }

    fn check_terminator(
        &mut self,
        b: Block,
        func: &str,
        block: &str,
        term: &Terminator,
        entries: &HashMap<Block, FuncId>,
    ) {
        let p = self.p;
        let at = || (func.to_string(), block.to_string());
        if let Terminator::Branch { cond, .. } = term {
            let site = || format!("block `{block}` in function `{func}`, branch condition");
            if self.check_var_range(&[*cond], site) {
                let ty = &p.vars[cond.index()].ty;
                if !ty.is_scalar_bool() {
                    let (func, block) = at();
                    self.push(VerifyError::BranchNotBool {
                        func,
                        block,
                        var: self.var_name(*cond),
                        ty: ty.clone(),
                    });
                }
            }
            if *cond == p.pc {
                let (func, block) = at();
                self.push(VerifyError::PcBranch { func, block });
            }
        }
        if p.form == Form::High {
            let lowered = match term {
                Terminator::PushGoto { .. } => Some("push_goto"),
                Terminator::IndirectGoto => Some("indirect_jump"),
                _ => None,
            };
            if let Some(terminator) = lowered {
                let (func, block) = at();
                self.push(VerifyError::LoweredTerminatorInHighForm {
                    func,
                    block,
                    terminator,
                });
            }
        }
        let targets: Vec<Block> = match term {
            Terminator::PushGoto { ret, target } => vec![*target, *ret],
            t => t.successors(),
        };
        let source_owner = self.owners.get(b.index()).copied().flatten();
        let mut reported_entry = BTreeSet::new();
        for t in targets {
            if t.index() >= p.blocks.len() {
                self.out_of_range = true;
                let (func, block) = at();
                self.push(VerifyError::TargetOutOfRange {
                    func,
                    block,
                    target: t,
                    blocks: p.blocks.len(),
                });
                continue;
            }
            let target_owner = self.owners[t.index()];
            if let (Some(s), Some(o)) = (source_owner, target_owner) {
                if s != o {
                    let (func, block) = at();
                    self.push(VerifyError::CrossFunctionJump {
                        func,
                        block,
                        target: self.block_name(t),
                        target_func: self.func_name(o),
                    });
                }
            }
            let plain = matches!(term, Terminator::Goto(_) | Terminator::Branch { .. });
            if p.form == Form::High && plain && reported_entry.insert(t) {
                if let Some(&f) = entries.get(&t) {
                    let (func, block) = at();
                    self.push(VerifyError::JumpToEntry {
                        func,
                        block,
                        target: self.block_name(t),
                        target_func: self.func_name(f),
                    });
                }
            }
        }
    }

    /// High form: whatever is live into a function's entry block must be a parameter.
    fn check_liveness(&mut self) {
        let p = self.p;
        if p.form != Form::High || self.out_of_range {
            return;
        }
        let facts = liveness(p);
        for func in &p.functions {
            let Some(&entry) = func.blocks.first() else {
                continue;
            };
            let Some(entry_facts) = facts.blocks.get(entry.index()) else {
                continue;
            };
            for &v in &entry_facts.live_in {
                // A read of the program counter is already reported by its own check.
                if v != p.pc && !func.params.contains(&v) {
                    self.push(VerifyError::ReadBeforeWrite {
                        func: func.name.clone(),
                        var: self.var_name(v),
                    });
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{prim_op, BuildError, ProgramBuilder};
    use crate::conformance;
    use crate::entity::KernelId;
    use crate::program::{BlockData, CallOp, PrimOp};

    const K: KernelId = KernelId(0);

    /// `countdown(n) { acc = 0; while n > 0 { n -= 1; acc += 2 } acc }` called from `main(m)`.
    ///
    /// Vars: pc v0, n v1, acc v2, cond v3, m v4, r v5. Blocks: entry 0, head 1, body 2, exit 3,
    /// main_entry 4. Functions: countdown fn0, main fn1.
    fn looping() -> Program {
        let mut b = ProgramBuilder::new();
        let n = b.var("n", Type::I64);
        let acc = b.var("acc", Type::I64);
        let c = b.var("cond", Type::BOOL);
        let m = b.var("m", Type::I64);
        let r = b.var("r", Type::I64);
        let f = b.function("countdown");
        b.signature(f, &[n], &[acc]);
        let entry = b.block(f, "entry");
        let head = b.block(f, "head");
        let body = b.block(f, "body");
        let exit = b.block(f, "exit");
        b.prim(entry, &[acc], &[], K, "0");
        b.goto(entry, head);
        b.prim(head, &[c], &[n], K, "n > 0");
        b.branch(head, c, body, exit);
        b.prim(body, &[n], &[n], K, "n - 1");
        b.prim(body, &[acc], &[acc], K, "acc + 2");
        b.goto(body, head);
        b.ret(exit);
        let main = b.function("main");
        b.signature(main, &[m], &[r]);
        let e = b.block(main, "main_entry");
        b.call(e, f, &[m], &[r]);
        b.ret(e);
        b.finish(main).expect("looping is valid")
    }

    fn errors(p: &Program) -> Vec<VerifyError> {
        verify(p).expect_err("program should be invalid").0
    }

    fn invalid(r: Result<Program, BuildError>) -> Vec<VerifyError> {
        match r {
            Err(BuildError::Invalid(e)) => e.0,
            other => panic!("expected BuildError::Invalid, got {other:?}"),
        }
    }

    fn assert_has(errs: &[VerifyError], e: &VerifyError) {
        assert!(errs.contains(e), "missing {e:?} in {errs:#?}");
    }

    /// A one-function builder: `f(x) -> y` with variables `x: i64`, `y: i64`, `z: i64`,
    /// `c: bool` and one open block `entry`.
    struct One {
        b: ProgramBuilder,
        f: FuncId,
        e: Block,
        x: Var,
        y: Var,
        z: Var,
        c: Var,
    }

    fn one() -> One {
        let mut b = ProgramBuilder::new();
        let x = b.var("x", Type::I64);
        let y = b.var("y", Type::I64);
        let z = b.var("z", Type::I64);
        let c = b.var("c", Type::BOOL);
        let f = b.function("f");
        b.signature(f, &[x], &[y]);
        let e = b.block(f, "entry");
        One {
            b,
            f,
            e,
            x,
            y,
            z,
            c,
        }
    }

    #[test]
    fn valid_program_with_loop_and_calls_passes() {
        assert_eq!(verify(&looping()), Ok(()));
    }

    #[test]
    fn every_conformance_fixture_passes() {
        let mut k = conformance::numbering();
        let programs = [
            conformance::constant_program(&mut k),
            conformance::single_if_program(&mut k),
            conformance::synthetic_pattern_program(&mut k),
            conformance::synthetic_pattern_variable_program(&mut k),
            conformance::fibonacci_program(&mut k),
            conformance::fibonacci_function_calls(&mut k, DType::I64),
            conformance::is_even_function_calls(&mut k, DType::I32, true),
            conformance::is_even_function_calls(&mut k, DType::I64, false),
            conformance::pea_nuts_program(&mut k),
            conformance::iota_sum(&mut k),
            conformance::gcd(&mut k),
            conformance::countdown(&mut k),
            conformance::fibonacci_sync(&mut k),
        ];
        for p in &programs {
            assert_eq!(verify(p), Ok(()), "{p}");
        }
    }

    #[test]
    fn no_entry() {
        let mut p = looping();
        p.main = FuncId(7);
        assert_eq!(
            errors(&p),
            vec![VerifyError::NoEntry {
                main: FuncId(7),
                functions: 2
            }]
        );
    }

    #[test]
    fn empty_function() {
        let mut p = looping();
        p.functions[0].blocks.clear();
        let errs = errors(&p);
        assert_has(
            &errs,
            &VerifyError::EmptyFunction {
                func: "countdown".into(),
            },
        );
        assert_has(
            &errs,
            &VerifyError::OrphanBlock {
                block: "head".into(),
            },
        );
    }

    #[test]
    fn block_out_of_range() {
        let mut p = looping();
        p.functions[1].blocks.push(Block(40));
        assert_eq!(
            errors(&p),
            vec![VerifyError::BlockOutOfRange {
                func: "main".into(),
                block: Block(40),
                blocks: 5
            }]
        );
    }

    #[test]
    fn orphan_block() {
        let mut p = looping();
        p.blocks.push(BlockData {
            name: "lost".into(),
            ops: vec![],
            term: Terminator::Return,
        });
        assert_eq!(
            errors(&p),
            vec![VerifyError::OrphanBlock {
                block: "lost".into()
            }]
        );
    }

    #[test]
    fn block_listed_twice() {
        let mut p = looping();
        p.functions[1].blocks.push(Block(3));
        assert_eq!(
            errors(&p),
            vec![VerifyError::BlockListedTwice {
                block: "exit".into(),
                first: "countdown".into(),
                second: "main".into()
            }]
        );
        let mut p = looping();
        p.functions[1].blocks.push(Block(4));
        assert_eq!(
            errors(&p),
            vec![VerifyError::BlockListedTwice {
                block: "main_entry".into(),
                first: "main".into(),
                second: "main".into()
            }]
        );
    }

    #[test]
    fn var_out_of_range() {
        let mut p = looping();
        p.blocks[0].ops.push(Op::Pop(vec![Var(99)]));
        let errs = errors(&p);
        let expected = VerifyError::VarOutOfRange {
            site: "block `entry` in function `countdown`, op 1 input".into(),
            var: Var(99),
            vars: 6,
        };
        assert_eq!(errs, vec![expected.clone()]);
        assert_eq!(
            expected.to_string(),
            "block `entry` in function `countdown`, op 1 input: variable v99 does not exist \
             (the program has 6 variables)"
        );
        let mut p = looping();
        p.functions[0].params = vec![Var(6)];
        assert_eq!(
            errors(&p),
            vec![VerifyError::VarOutOfRange {
                site: "function `countdown` parameters".into(),
                var: Var(6),
                vars: 6,
            }]
        );
    }

    #[test]
    fn target_out_of_range() {
        let mut p = looping();
        p.blocks[3].term = Terminator::Goto(Block(9));
        assert_eq!(
            errors(&p),
            vec![VerifyError::TargetOutOfRange {
                func: "countdown".into(),
                block: "exit".into(),
                target: Block(9),
                blocks: 5
            }]
        );
    }

    #[test]
    fn callee_out_of_range() {
        let mut p = looping();
        let Op::Call(call) = &mut p.blocks[4].ops[0] else {
            panic!("main_entry starts with the call");
        };
        call.func = FuncId(9);
        assert_eq!(
            errors(&p),
            vec![VerifyError::CalleeOutOfRange {
                func: "main".into(),
                block: "main_entry".into(),
                op: 0,
                callee: FuncId(9),
                functions: 2
            }]
        );
    }

    #[test]
    fn duplicate_names() {
        let mut p = looping();
        p.vars[5].name = "m".into();
        p.blocks[3].name = "head".into();
        p.functions[1].name = "countdown".into();
        assert_eq!(
            errors(&p),
            vec![
                VerifyError::DuplicateVarName {
                    name: "m".into(),
                    first: Var(4),
                    second: Var(5)
                },
                VerifyError::DuplicateBlockName {
                    name: "head".into(),
                    first: Block(1),
                    second: Block(3)
                },
                VerifyError::DuplicateFunctionName {
                    name: "countdown".into(),
                    first: FuncId(0),
                    second: FuncId(1)
                },
            ]
        );
    }

    #[test]
    fn pc_out_of_range() {
        let mut p = looping();
        p.pc = Var(99);
        let errs = errors(&p);
        assert_has(
            &errs,
            &VerifyError::PcOutOfRange {
                pc: Var(99),
                vars: 6,
            },
        );
        assert_has(
            &errs,
            &VerifyError::ReservedPcName {
                var: Var(0),
                pc: Var(99),
            },
        );
    }

    #[test]
    fn pc_misnamed() {
        let mut p = looping();
        p.vars[0].name = "pc".into();
        assert_eq!(
            errors(&p),
            vec![VerifyError::PcMisnamed {
                pc: Var(0),
                name: "pc".into()
            }]
        );
    }

    #[test]
    fn pc_wrong_type() {
        let mut p = looping();
        p.vars[0].ty = Type::I64;
        let errs = errors(&p);
        assert_eq!(
            errs,
            vec![VerifyError::PcWrongType {
                name: PC_NAME.into(),
                ty: Type::I64
            }]
        );
        assert_eq!(
            errs[0].to_string(),
            "the program counter `__program_counter__` has type i64, expected i32"
        );
    }

    #[test]
    fn reserved_pc_name() {
        let mut p = looping();
        p.vars[0].name = "pc".into();
        p.vars[4].name = PC_NAME.into();
        let errs = errors(&p);
        assert_has(
            &errs,
            &VerifyError::ReservedPcName {
                var: Var(4),
                pc: Var(0),
            },
        );
        assert_eq!(errs.len(), 2, "{errs:#?}");
    }

    #[test]
    fn pc_in_op() {
        let mut o = one();
        let pc = o.b.pc();
        o.b.prim(o.e, &[o.y], &[o.x], K, "x");
        o.b.prim(o.e, &[pc], &[pc], K, "pc + 1");
        o.b.ret(o.e);
        assert_eq!(
            invalid(o.b.finish(o.f)),
            vec![
                VerifyError::PcInOp {
                    func: "f".into(),
                    block: "entry".into(),
                    op: 1,
                    access: "reads"
                },
                VerifyError::PcInOp {
                    func: "f".into(),
                    block: "entry".into(),
                    op: 1,
                    access: "writes"
                },
            ]
        );
    }

    #[test]
    fn pc_branch() {
        let mut o = one();
        let pc = o.b.pc();
        let t = o.b.block(o.f, "t");
        o.b.prim(o.e, &[o.y], &[o.x], K, "x");
        o.b.branch(o.e, pc, t, t);
        o.b.ret(t);
        let errs = invalid(o.b.finish(o.f));
        assert_has(
            &errs,
            &VerifyError::PcBranch {
                func: "f".into(),
                block: "entry".into(),
            },
        );
        assert_has(
            &errs,
            &VerifyError::BranchNotBool {
                func: "f".into(),
                block: "entry".into(),
                var: PC_NAME.into(),
                ty: Type::I32,
            },
        );
    }

    #[test]
    fn pc_in_signature() {
        let mut o = one();
        let pc = o.b.pc();
        o.b.signature(o.f, &[o.x, pc], &[pc]);
        o.b.ret(o.e);
        assert_eq!(
            invalid(o.b.finish(o.f)),
            vec![
                VerifyError::PcInSignature {
                    func: "f".into(),
                    role: "parameter"
                },
                VerifyError::PcInSignature {
                    func: "f".into(),
                    role: "return variable"
                },
            ]
        );
    }

    #[test]
    fn cross_function_jump() {
        let mut o = one();
        let g = o.b.function("g");
        o.b.signature(g, &[o.x], &[o.y]);
        let g1 = o.b.block(g, "g_entry");
        let g2 = o.b.block(g, "g_exit");
        o.b.goto(g1, g2);
        o.b.prim(g2, &[o.y], &[o.x], K, "x");
        o.b.ret(g2);
        o.b.goto(o.e, g2);
        let errs = invalid(o.b.finish(o.f));
        assert_eq!(
            errs,
            vec![VerifyError::CrossFunctionJump {
                func: "f".into(),
                block: "entry".into(),
                target: "g_exit".into(),
                target_func: "g".into()
            }]
        );
    }

    #[test]
    fn push_goto_target_and_return_address_stay_in_the_function() {
        let mut o = one();
        let g = o.b.function("g");
        let g1 = o.b.block(g, "g_entry");
        o.b.ret(g1);
        let back = o.b.block(o.f, "back");
        o.b.ret(back);
        o.b.push_goto(o.e, g1, back);
        let errs = invalid(o.b.finish_lowered(o.f));
        assert_has(
            &errs,
            &VerifyError::CrossFunctionJump {
                func: "f".into(),
                block: "entry".into(),
                target: "g_entry".into(),
                target_func: "g".into(),
            },
        );
        assert_has(
            &errs,
            &VerifyError::ExtraFunction {
                func: "g".into(),
                main: "f".into(),
            },
        );
    }

    #[test]
    fn lowered_terminator_in_high_form() {
        let mut o = one();
        let callee = o.b.block(o.f, "callee");
        let back = o.b.block(o.f, "back");
        o.b.prim(o.e, &[o.y], &[o.x], K, "x");
        o.b.push_goto(o.e, back, callee);
        o.b.indirect_goto(callee);
        o.b.ret(back);
        assert_eq!(
            invalid(o.b.finish(o.f)),
            vec![
                VerifyError::LoweredTerminatorInHighForm {
                    func: "f".into(),
                    block: "entry".into(),
                    terminator: "push_goto"
                },
                VerifyError::LoweredTerminatorInHighForm {
                    func: "f".into(),
                    block: "callee".into(),
                    terminator: "indirect_jump"
                },
            ]
        );
    }

    #[test]
    fn jump_to_entry_only_in_high_form() {
        let build = || {
            let mut o = one();
            let body = o.b.block(o.f, "body");
            let done = o.b.block(o.f, "done");
            o.b.prim(o.e, &[o.c], &[o.x], K, "x > 0");
            o.b.branch(o.e, o.c, body, done);
            o.b.prim(body, &[o.x], &[o.x], K, "x - 1");
            o.b.goto(body, o.e);
            o.b.assign(done, &[o.y], &[o.x]);
            o.b.ret(done);
            o
        };
        let o = build();
        let errs = invalid(o.b.finish(o.f));
        assert_eq!(
            errs,
            vec![VerifyError::JumpToEntry {
                func: "f".into(),
                block: "body".into(),
                target: "entry".into(),
                target_func: "f".into()
            }]
        );
        assert_eq!(
            errs[0].to_string(),
            "block `body` in function `f` jumps to `entry`, the entry block of function `f`; \
             entry blocks are entered only by calls"
        );
        let o = build();
        assert!(o.b.finish_lowered(o.f).is_ok());
    }

    #[test]
    fn calls_and_extra_functions_in_lowered_form() {
        let mut p = looping();
        p.form = Form::Lowered;
        assert_eq!(
            errors(&p),
            vec![
                VerifyError::ExtraFunction {
                    func: "countdown".into(),
                    main: "main".into()
                },
                VerifyError::CallInLoweredForm {
                    func: "main".into(),
                    block: "main_entry".into(),
                    op: 0,
                    callee: "countdown".into()
                },
            ]
        );
    }

    #[test]
    fn branch_not_bool() {
        let mut p = looping();
        let Terminator::Branch { cond, .. } = &mut p.blocks[1].term else {
            panic!("head ends in a branch");
        };
        *cond = Var(1);
        let errs = errors(&p);
        assert_eq!(
            errs,
            vec![VerifyError::BranchNotBool {
                func: "countdown".into(),
                block: "head".into(),
                var: "n".into(),
                ty: Type::I64
            }]
        );
        assert_eq!(
            errs[0].to_string(),
            "block `head` in function `countdown`: branch condition `n` has type i64, expected bool"
        );
    }

    #[test]
    fn call_arity() {
        let mut p = looping();
        p.blocks[4].ops[0] = Op::Call(CallOp {
            func: FuncId(0),
            ins: vec![Var(4), Var(4)],
            outs: vec![],
        });
        let at = |what, expected, found| VerifyError::CallArity {
            func: "main".into(),
            block: "main_entry".into(),
            op: 0,
            callee: "countdown".into(),
            what,
            expected,
            found,
        };
        assert_eq!(
            errors(&p),
            vec![
                at("arguments", 1, 2),
                at("results", 1, 0),
                // The call no longer writes `r`, so `main` returns it unwritten.
                VerifyError::ReadBeforeWrite {
                    func: "main".into(),
                    var: "r".into()
                },
            ]
        );
    }

    #[test]
    fn call_type_mismatch() {
        let mut p = looping();
        p.vars[4].ty = Type::F64;
        p.vars[5].ty = Type::Tuple(vec![Type::I64]);
        let at = |what, var: &str, ty, formal: &str| VerifyError::CallTypeMismatch {
            func: "main".into(),
            block: "main_entry".into(),
            op: 0,
            callee: "countdown".into(),
            what,
            position: 0,
            var: var.into(),
            ty,
            formal: formal.into(),
            expected: Type::I64,
        };
        assert_eq!(
            errors(&p),
            vec![
                at("argument", "m", Type::F64, "n"),
                at("result", "r", Type::Tuple(vec![Type::I64]), "acc"),
            ]
        );
    }

    #[test]
    fn assign_leaves() {
        let mut o = one();
        let pair = o.b.var("pair", Type::Tuple(vec![Type::I64, Type::BOOL]));
        o.b.assign(o.e, &[o.c], &[o.x]);
        o.b.assign(o.e, &[pair], &[o.x, o.c]);
        o.b.assign(o.e, &[o.y, o.c], &[pair]);
        o.b.ret(o.e);
        assert_eq!(
            invalid(o.b.finish(o.f)),
            vec![VerifyError::AssignLeaves {
                func: "f".into(),
                block: "entry".into(),
                op: 0,
                ins: "i64".into(),
                outs: "bool".into()
            }]
        );
    }

    #[test]
    fn in_place_length() {
        let mut o = one();
        o.b.op(
            o.e,
            Op::Prim(PrimOp {
                outs: vec![o.y],
                ins: vec![o.x],
                kernel: KernelRef::User(K),
                source: "x".into(),
                in_place: vec![],
            }),
        );
        o.b.ret(o.e);
        assert_eq!(
            invalid(o.b.finish(o.f)),
            vec![VerifyError::InPlaceLength {
                func: "f".into(),
                block: "entry".into(),
                op: 0,
                in_place: 0,
                outs: 1
            }]
        );
    }

    #[test]
    fn duplicate_output() {
        let mut o = one();
        o.b.prim(o.e, &[o.y, o.y, o.y], &[o.x], K, "(x, x, x)");
        o.b.op(o.e, prim_op(&[o.z], &[o.x], KernelRef::User(K), "x"));
        o.b.ret(o.e);
        assert_eq!(
            invalid(o.b.finish(o.f)),
            vec![VerifyError::DuplicateOutput {
                func: "f".into(),
                block: "entry".into(),
                op: 0,
                var: "y".into()
            }]
        );
    }

    #[test]
    fn duplicate_param() {
        let mut o = one();
        o.b.signature(o.f, &[o.x, o.x], &[o.x]);
        o.b.ret(o.e);
        assert_eq!(
            invalid(o.b.finish(o.f)),
            vec![VerifyError::DuplicateParam {
                func: "f".into(),
                var: "x".into()
            }]
        );
    }

    #[test]
    fn read_before_write() {
        let mut o = one();
        let t = o.b.block(o.f, "then");
        let el = o.b.block(o.f, "else");
        o.b.prim(o.e, &[o.c], &[o.x], K, "x > 0");
        o.b.branch(o.e, o.c, t, el);
        o.b.prim(t, &[o.y], &[o.z], K, "z");
        o.b.ret(t);
        o.b.assign(el, &[o.y], &[o.x]);
        o.b.ret(el);
        let errs = invalid(o.b.finish(o.f));
        assert_eq!(
            errs,
            vec![VerifyError::ReadBeforeWrite {
                func: "f".into(),
                var: "z".into()
            }]
        );
        // A pop counts as a read.
        let mut o = one();
        o.b.assign(o.e, &[o.y], &[o.x]);
        o.b.pop(o.e, &[o.z]);
        o.b.ret(o.e);
        assert_eq!(
            invalid(o.b.finish(o.f)),
            vec![VerifyError::ReadBeforeWrite {
                func: "f".into(),
                var: "z".into()
            }]
        );
        // Lowered programs are not checked (the runtime reports such reads).
        let mut o = one();
        o.b.prim(o.e, &[o.y], &[o.z], K, "z");
        o.b.ret(o.e);
        assert!(o.b.finish_lowered(o.f).is_ok());
    }

    #[test]
    fn several_errors_are_all_reported() {
        let mut p = looping();
        p.vars[0].ty = Type::F32;
        p.vars[5].name = "n".into();
        p.blocks[2].ops.push(Op::Pop(vec![Var(50)]));
        p.blocks[3].term = Terminator::Goto(Block(0));
        p.functions[1].params = vec![Var(4), Var(4)];
        let errs = errors(&p);
        for e in [
            VerifyError::DuplicateParam {
                func: "main".into(),
                var: "m".into(),
            },
            VerifyError::DuplicateVarName {
                name: "n".into(),
                first: Var(1),
                second: Var(5),
            },
            VerifyError::PcWrongType {
                name: PC_NAME.into(),
                ty: Type::F32,
            },
            VerifyError::VarOutOfRange {
                site: "block `body` in function `countdown`, op 2 input".into(),
                var: Var(50),
                vars: 6,
            },
            VerifyError::JumpToEntry {
                func: "countdown".into(),
                block: "exit".into(),
                target: "entry".into(),
                target_func: "countdown".into(),
            },
        ] {
            assert_has(&errs, &e);
        }
        assert_eq!(errs.len(), 5, "{errs:#?}");
        let text = VerifyErrors(errs).to_string();
        assert_eq!(text.lines().count(), 5);
        assert!(text.lines().all(|l| l.starts_with("  ")));
    }

    #[test]
    fn garbage_programs_report_errors_without_panicking() {
        let garbage = Program {
            vars: vec![],
            blocks: vec![
                BlockData {
                    name: "a".into(),
                    ops: vec![
                        Op::Call(CallOp {
                            func: FuncId(50),
                            ins: vec![Var(100)],
                            outs: vec![Var(101), Var(101)],
                        }),
                        Op::Prim(PrimOp {
                            outs: vec![Var(3)],
                            ins: vec![Var(4)],
                            kernel: KernelRef::Assign,
                            source: String::new(),
                            in_place: vec![true, true],
                        }),
                        Op::Pop(vec![Var(u32::MAX)]),
                    ],
                    term: Terminator::Branch {
                        cond: Var(77),
                        then_: Block(40),
                        else_: Block(u32::MAX),
                    },
                },
                BlockData {
                    name: "a".into(),
                    ops: vec![],
                    term: Terminator::PushGoto {
                        ret: Block(9),
                        target: Block(0),
                    },
                },
            ],
            functions: vec![
                crate::program::FunctionData {
                    name: "f".into(),
                    params: vec![Var(8), Var(8)],
                    returns: vec![Var(9)],
                    blocks: vec![Block(7), Block(0), Block(0)],
                },
                crate::program::FunctionData {
                    name: "f".into(),
                    params: vec![],
                    returns: vec![],
                    blocks: vec![],
                },
            ],
            main: FuncId(3),
            pc: Var(5),
            form: Form::High,
        };
        let errs = errors(&garbage);
        assert!(errs.len() >= 10, "{errs:#?}");
        assert_has(
            &errs,
            &VerifyError::NoEntry {
                main: FuncId(3),
                functions: 2,
            },
        );
        let mut lowered = garbage.clone();
        lowered.form = Form::Lowered;
        assert!(verify(&lowered).is_err());
        let empty = Program {
            vars: vec![],
            blocks: vec![],
            functions: vec![],
            main: FuncId(0),
            pc: Var(0),
            form: Form::High,
        };
        assert_eq!(
            errors(&empty),
            vec![
                VerifyError::NoEntry {
                    main: FuncId(0),
                    functions: 0
                },
                VerifyError::PcOutOfRange {
                    pc: Var(0),
                    vars: 0
                },
            ]
        );
    }

    /// Rewrites random handles of `p` to random (often out-of-range) values.
    fn scramble(p: &mut Program, next: &mut impl FnMut() -> u32) {
        let (nv, nb, nf) = (
            p.vars.len() as u32 + 2,
            p.blocks.len() as u32 + 2,
            p.functions.len() as u32 + 2,
        );
        let var = |v: &mut Var, next: &mut dyn FnMut() -> u32| {
            if next().is_multiple_of(6) {
                *v = Var(next() % nv);
            }
        };
        for f in &mut p.functions {
            f.params
                .iter_mut()
                .chain(&mut f.returns)
                .for_each(|v| var(v, next));
            for b in &mut f.blocks {
                if next().is_multiple_of(8) {
                    *b = Block(next() % nb);
                }
            }
            if next().is_multiple_of(10) {
                f.blocks.pop();
            }
        }
        for b in &mut p.blocks {
            for op in &mut b.ops {
                match op {
                    Op::Prim(prim) => {
                        prim.ins
                            .iter_mut()
                            .chain(&mut prim.outs)
                            .for_each(|v| var(v, next));
                        if next().is_multiple_of(8) {
                            prim.kernel = KernelRef::Assign;
                        }
                    }
                    Op::Call(call) => {
                        call.ins
                            .iter_mut()
                            .chain(&mut call.outs)
                            .for_each(|v| var(v, next));
                        if next().is_multiple_of(4) {
                            call.func = FuncId(next() % nf);
                        }
                    }
                    Op::Pop(vars) => vars.iter_mut().for_each(|v| var(v, next)),
                }
            }
            match &mut b.term {
                Terminator::Goto(t) => {
                    if next().is_multiple_of(4) {
                        *t = Block(next() % nb);
                    }
                }
                Terminator::Branch { cond, then_, else_ } => {
                    var(cond, next);
                    if next().is_multiple_of(4) {
                        *then_ = Block(next() % nb);
                    }
                    if next().is_multiple_of(4) {
                        *else_ = Block(next() % nb);
                    }
                }
                Terminator::PushGoto { ret, target } => {
                    if next().is_multiple_of(4) {
                        *ret = Block(next() % nb);
                    }
                    if next().is_multiple_of(4) {
                        *target = Block(next() % nb);
                    }
                }
                Terminator::Return | Terminator::IndirectGoto => {}
            }
        }
        if next().is_multiple_of(8) {
            p.main = FuncId(next() % nf);
        }
        if next().is_multiple_of(8) {
            p.pc = Var(next() % nv);
        }
        if next().is_multiple_of(8) {
            p.form = if p.form == Form::High {
                Form::Lowered
            } else {
                Form::High
            };
        }
    }

    #[test]
    fn scrambled_handles_never_panic() {
        let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as u32
        };
        let mut k = conformance::numbering();
        let bases = [
            looping(),
            conformance::fibonacci_program(&mut k),
            conformance::fibonacci_function_calls(&mut k, DType::I64),
            conformance::pea_nuts_program(&mut k),
            conformance::synthetic_pattern_variable_program(&mut k),
        ];
        let mut rejected = 0;
        for round in 0..3000 {
            let mut p = bases[round % bases.len()].clone();
            scramble(&mut p, &mut next);
            if let Err(e) = verify(&p) {
                assert!(!e.0.is_empty());
                let _ = e.to_string();
                rejected += 1;
            }
        }
        assert!(rejected > 1000, "only {rejected} scrambles were rejected");
    }
}

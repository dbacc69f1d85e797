//! The verifier: checks every IR invariant and reports all violations, each located at the
//! entity at fault.
//!
//! [`verify_high`] and [`verify_lowered`] are the only ways to make a [`HighProgram`] or a
//! [`LoweredProgram`] from program data. They never panic, whatever the program: every index
//! is checked against its table first, and checks that would need an index that is out of
//! range are skipped. Op indices in messages count from 0 within their block.

use crate::entity::{Block, FuncId, Var};
use crate::passes::liveness::liveness;
use crate::program::{KernelRef, Op, Program, Terminator, PC_NAME};
use crate::types::{DType, TensorType, Type};
use crate::verified::{Form, FormKind, HighProgram, LoweredProgram, Verified};
use std::cell::Cell;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::fmt;

/// The name used in messages for the function of a block that no function lists.
const NO_FUNCTION: &str = "<none>";

/// The entity an error is about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Location {
    /// The program as a whole (its table sizes, its entry).
    Program,
    /// A variable (possibly an out-of-range handle).
    Var(Var),
    /// A block: its terminator, its place in the function lists.
    Block(Block),
    /// The op at `index` (from 0) of `block`.
    Op {
        /// The op's block.
        block: Block,
        /// The op's index in its block.
        index: usize,
    },
    /// A function: its signature and block list (possibly an out-of-range handle).
    Function(FuncId),
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Location::Program => f.write_str("program"),
            Location::Var(v) => write!(f, "{v}"),
            Location::Block(b) => write!(f, "{b}"),
            Location::Op { block, index } => write!(f, "{block} op {index}"),
            Location::Function(func) => write!(f, "{func}"),
        }
    }
}

/// One broken invariant: the entity at fault, where it sits in words, and what is wrong.
///
/// Displayed as `context: message` (just `message` without a context).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyError {
    /// The entity the error is about.
    pub location: Location,
    /// The entity in the user's words, e.g. ``block `head` in function `countdown`, op 2``.
    pub context: Option<String>,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for VerifyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.context {
            Some(c) => write!(f, "{c}: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for VerifyError {}

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

thread_local! {
    static VERIFICATIONS: Cell<usize> = const { Cell::new(0) };
}

/// How many programs [`verify_high`] and [`verify_lowered`] have checked on this thread.
///
/// Lets a test show that preparing a program verifies it once
/// ([`prepare`](crate::passes::pipeline::prepare)). The checks debug builds run on the
/// passes' outputs are not counted: they are assertions, compiled out of release builds.
pub fn verifications() -> usize {
    VERIFICATIONS.with(Cell::get)
}

/// Checks `program` against every invariant of a high-level program, collecting all errors.
///
/// The read-before-write check (liveness) runs only when every index is in range.
pub fn verify_high(program: Program) -> Result<HighProgram, VerifyErrors> {
    counted(program)
}

/// Checks `program` against every invariant of a lowered program, collecting all errors.
pub fn verify_lowered(program: Program) -> Result<LoweredProgram, VerifyErrors> {
    counted(program)
}

/// Wraps a program that a pass made from a verified program (a pass's output satisfies its
/// form's invariants by construction). Debug builds check it (not counted as a verification:
/// see [`verifications`]).
pub(crate) fn trusted<F: Form>(program: Program) -> Verified<F> {
    #[cfg(debug_assertions)]
    if let Err(e) = check(&program, F::KIND) {
        panic!("a pass produced a program that does not verify:\n{e}\n{program}");
    }
    Verified::checked(program)
}

fn counted<F: Form>(program: Program) -> Result<Verified<F>, VerifyErrors> {
    VERIFICATIONS.with(|n| n.set(n.get() + 1));
    check(&program, F::KIND)?;
    Ok(Verified::checked(program))
}

/// Checks `program` against every invariant of `form` (not counted by [`verifications`]).
pub(crate) fn check(program: &Program, form: FormKind) -> Result<(), VerifyErrors> {
    let mut v = Verifier::new(program, form);
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
    form: FormKind,
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
    fn new(p: &'a Program, form: FormKind) -> Self {
        Verifier {
            p,
            form,
            errors: Vec::new(),
            owners: vec![None; p.blocks.len()],
            out_of_range: false,
        }
    }

    fn report(&mut self, location: Location, context: Option<String>, message: String) {
        self.errors.push(VerifyError {
            location,
            context,
            message,
        });
    }

    fn var_name(&self, v: Var) -> String {
        match self.p.vars.get(v) {
            Some(d) => d.name.clone(),
            None => v.to_string(),
        }
    }

    fn var_type(&self, v: Var) -> Option<&'a Type> {
        self.p.vars.get(v).map(|d| &d.ty)
    }

    fn block_name(&self, b: Block) -> String {
        match self.p.blocks.get(b) {
            Some(d) => d.name.clone(),
            None => b.to_string(),
        }
    }

    fn func_name(&self, f: FuncId) -> String {
        match self.p.functions.get(f) {
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

    /// ``block `b` in function `f` ``: a block in the user's words.
    fn block_context(&self, b: Block) -> String {
        format!(
            "block `{}` in function `{}`",
            self.block_name(b),
            self.owner_name(b)
        )
    }

    fn function_context(&self, f: FuncId) -> Option<String> {
        Some(format!("function `{}`", self.func_name(f)))
    }

    /// Reports a block-level error.
    fn at_block(&mut self, b: Block, message: String) {
        let context = Some(self.block_context(b));
        self.report(Location::Block(b), context, message);
    }

    /// Reports an op-level error.
    fn at_op(&mut self, block: Block, index: usize, message: String) {
        let context = Some(format!("{}, op {index}", self.block_context(block)));
        self.report(Location::Op { block, index }, context, message);
    }

    /// Reports every out-of-range handle in `vars` (the `role` they play) at `location`; true
    /// when all are in range.
    fn check_var_range(&mut self, vars: &[Var], location: Location, role: &str) -> bool {
        let mut ok = true;
        for &v in vars {
            if !self.p.vars.contains(v) {
                ok = false;
                self.out_of_range = true;
                let context = match location {
                    Location::Block(b) => Some(self.block_context(b)),
                    Location::Op { block, index } => {
                        Some(format!("{}, op {index}", self.block_context(block)))
                    }
                    Location::Function(f) => self.function_context(f),
                    Location::Program | Location::Var(_) => None,
                };
                let vars = self.p.vars.len();
                self.report(
                    location,
                    context,
                    format!("{role} {v} does not exist (the program has {vars} variables)"),
                );
            }
        }
        ok
    }

    /// Entry, blocks lists (range, ownership), signatures, lowered-form function count.
    fn check_functions(&mut self) {
        let p = self.p;
        if !p.functions.contains(p.main) {
            self.report(
                Location::Function(p.main),
                None,
                format!(
                    "the entry function {} does not exist (the program has {} functions)",
                    p.main,
                    p.functions.len()
                ),
            );
        }
        for (f, func) in p.functions.entries() {
            let here = Location::Function(f);
            let ctx = self.function_context(f);
            if func.blocks.is_empty() {
                self.report(here, ctx.clone(), "has no blocks".into());
            }
            for &b in &func.blocks {
                match self.owners.get(b.index()).copied() {
                    None => {
                        self.out_of_range = true;
                        let message = format!(
                            "lists block {b}, which does not exist (the program has {} blocks)",
                            p.blocks.len()
                        );
                        self.report(here, ctx.clone(), message);
                    }
                    Some(Some(first)) => {
                        let message = format!(
                            "is listed by function `{}` and again by function `{}`",
                            self.func_name(first),
                            func.name
                        );
                        let ctx = Some(format!("block `{}`", self.block_name(b)));
                        self.report(Location::Block(b), ctx, message);
                    }
                    Some(None) => self.owners[b.index()] = Some(f),
                }
            }
            self.check_var_range(&func.params, here, "parameter");
            self.check_var_range(&func.returns, here, "return variable");
            let mut seen = HashSet::new();
            for &v in &func.params {
                if !seen.insert(v) {
                    let message =
                        format!("parameter `{}` is listed more than once", self.var_name(v));
                    self.report(here, ctx.clone(), message);
                }
            }
            for (list, role) in [
                (&func.params, "parameter"),
                (&func.returns, "return variable"),
            ] {
                if list.contains(&p.pc) {
                    let message = format!("the program counter `{PC_NAME}` is a {role}");
                    self.report(here, ctx.clone(), message);
                }
            }
            if self.form == FormKind::Lowered && f != p.main {
                let message = format!(
                    "a lowered program has only its entry function `{}`",
                    self.func_name(p.main)
                );
                self.report(here, ctx, message);
            }
        }
        for (b, data) in p.blocks.entries() {
            if self.owners[b.index()].is_none() {
                let ctx = Some(format!("block `{}`", data.name));
                self.report(Location::Block(b), ctx, "belongs to no function".into());
            }
        }
    }

    /// Unique variable, block and function names.
    fn check_names(&mut self) {
        let p = self.p;
        let mut vars: HashMap<&str, Var> = HashMap::new();
        for (v, d) in p.vars.entries() {
            if let Some(&first) = vars.get(d.name.as_str()) {
                let message = format!("variables {first} and {v} are both named `{}`", d.name);
                self.report(Location::Var(v), None, message);
            } else {
                vars.insert(&d.name, v);
            }
        }
        let mut blocks: HashMap<&str, Block> = HashMap::new();
        for (b, d) in p.blocks.entries() {
            if let Some(&first) = blocks.get(d.name.as_str()) {
                let message = format!("blocks {first} and {b} are both named `{}`", d.name);
                self.report(Location::Block(b), None, message);
            } else {
                blocks.insert(&d.name, b);
            }
        }
        let mut funcs: HashMap<&str, FuncId> = HashMap::new();
        for (f, d) in p.functions.entries() {
            if let Some(&first) = funcs.get(d.name.as_str()) {
                let message = format!("functions {first} and {f} are both named `{}`", d.name);
                self.report(Location::Function(f), None, message);
            } else {
                funcs.insert(&d.name, f);
            }
        }
    }

    /// The program counter exists, is named [`PC_NAME`], is a scalar `i32`, and is unique.
    fn check_pc(&mut self) {
        let p = self.p;
        let here = Location::Var(p.pc);
        match p.vars.get(p.pc) {
            None => {
                self.out_of_range = true;
                let message = format!(
                    "the program counter {} does not exist (the program has {} variables)",
                    p.pc,
                    p.vars.len()
                );
                self.report(here, None, message);
            }
            Some(d) => {
                if d.name != PC_NAME {
                    let message = format!(
                        "the program counter {} is named `{}`, expected `{PC_NAME}`",
                        p.pc, d.name
                    );
                    self.report(here, None, message);
                }
                if d.ty != Type::scalar(DType::I32) {
                    let message = format!(
                        "the program counter `{}` has type {}, expected i32",
                        d.name, d.ty
                    );
                    self.report(here, None, message);
                }
            }
        }
        for (v, d) in p.vars.entries() {
            if d.name == PC_NAME && v != p.pc {
                let message = format!(
                    "variable {v} is named `{PC_NAME}` but is not the program counter {}",
                    p.pc
                );
                self.report(Location::Var(v), None, message);
            }
        }
    }

    /// Ops and terminators of every block in the table (orphans included).
    fn check_blocks(&mut self) {
        let p = self.p;
        let entries: HashMap<Block, FuncId> = p
            .functions
            .entries()
            .filter_map(|(f, data)| data.blocks.first().map(|&b| (b, f)))
            .collect();
        for (b, data) in p.blocks.entries() {
            for (oi, op) in data.ops.iter().enumerate() {
                self.check_op(b, oi, op);
            }
            self.check_terminator(b, &data.term, &entries);
        }
    }

    fn check_op(&mut self, b: Block, oi: usize, op: &Op) {
        let p = self.p;
        let here = Location::Op {
            block: b,
            index: oi,
        };
        let reads_ok = self.check_var_range(op.reads(), here, "input");
        let writes_ok = self.check_var_range(op.writes(), here, "output");
        for (vars, access) in [(op.reads(), "reads"), (op.writes(), "writes")] {
            if vars.contains(&p.pc) {
                self.at_op(b, oi, format!("{access} the program counter `{PC_NAME}`"));
            }
        }
        let mut seen = HashSet::new();
        let mut reported = HashSet::new();
        for &v in op.writes() {
            if !seen.insert(v) && reported.insert(v) {
                self.at_op(
                    b,
                    oi,
                    format!("writes `{}` more than once", self.var_name(v)),
                );
            }
        }
        match op {
            Op::Prim(prim) => {
                for &v in &prim.in_place {
                    if !prim.outs.contains(&v) {
                        let message = format!(
                            "writes `{}` in place, which is not one of its outputs",
                            self.var_name(v)
                        );
                        self.at_op(b, oi, message);
                    }
                }
                if prim.kernel == KernelRef::Assign && reads_ok && writes_ok {
                    let leaves = |vars: &[Var]| {
                        let mut out = Vec::new();
                        for &v in vars {
                            p.vars[v].ty.push_leaves(&mut out);
                        }
                        out
                    };
                    let (ins, outs) = (leaves(&prim.ins), leaves(&prim.outs));
                    if ins != outs {
                        let message = format!(
                            "assign writes leaves [{}] from leaves [{}]",
                            leaves_text(&outs),
                            leaves_text(&ins)
                        );
                        self.at_op(b, oi, message);
                    }
                }
            }
            Op::Call(call) => {
                if self.form == FormKind::Lowered {
                    let message = format!(
                        "a lowered program has no calls (call to `{}`)",
                        self.func_name(call.func)
                    );
                    self.at_op(b, oi, message);
                }
                let Some(callee) = p.functions.get(call.func) else {
                    self.out_of_range = true;
                    let message = format!(
                        "callee {} does not exist (the program has {} functions)",
                        call.func,
                        p.functions.len()
                    );
                    self.at_op(b, oi, message);
                    return;
                };
                let sides = [
                    ("arguments", "argument", &call.ins, &callee.params),
                    ("results", "result", &call.outs, &callee.returns),
                ];
                for (plural, singular, actual, formal) in sides {
                    if actual.len() != formal.len() {
                        let message = format!(
                            "call to `{}` has {} {plural}, expected {}",
                            callee.name,
                            actual.len(),
                            formal.len()
                        );
                        self.at_op(b, oi, message);
                        continue;
                    }
                    for (pos, (&a, &f)) in actual.iter().zip(formal.iter()).enumerate() {
                        let (Some(ty), Some(expected)) = (self.var_type(a), self.var_type(f))
                        else {
                            continue;
                        };
                        if ty != expected {
                            let message = format!(
                                "{singular} {pos} of the call to `{}` is `{}` of type {ty}, but `{}` has type {expected}",
                                callee.name,
                                self.var_name(a),
                                self.var_name(f)
                            );
                            self.at_op(b, oi, message);
                        }
                    }
                }
            }
            Op::Pop(_) => {}
        }
    }

    fn check_terminator(&mut self, b: Block, term: &Terminator, entries: &HashMap<Block, FuncId>) {
        let p = self.p;
        let high = self.form == FormKind::High;
        if let Terminator::Branch { cond, .. } = term {
            if self.check_var_range(&[*cond], Location::Block(b), "branch condition") {
                let ty = &p.vars[*cond].ty;
                if !ty.is_scalar_bool() {
                    let message = format!(
                        "branch condition `{}` has type {ty}, expected bool",
                        self.var_name(*cond)
                    );
                    self.at_block(b, message);
                }
            }
            if *cond == p.pc {
                self.at_block(b, format!("branches on the program counter `{PC_NAME}`"));
            }
        }
        if high {
            let lowered = match term {
                Terminator::PushGoto { .. } => Some("push_goto"),
                Terminator::IndirectGoto => Some("indirect_jump"),
                _ => None,
            };
            if let Some(terminator) = lowered {
                self.at_block(
                    b,
                    format!("`{terminator}` is only allowed in a lowered program"),
                );
            }
        }
        let targets: Vec<Block> = match term {
            Terminator::PushGoto { ret, target } => vec![*target, *ret],
            t => t.successors(),
        };
        let source_owner = self.owners.get(b.index()).copied().flatten();
        let mut reported_entry = BTreeSet::new();
        for t in targets {
            if !p.blocks.contains(t) {
                self.out_of_range = true;
                let message = format!(
                    "jump target {t} does not exist (the program has {} blocks)",
                    p.blocks.len()
                );
                self.at_block(b, message);
                continue;
            }
            let target_owner = self.owners[t.index()];
            if let (Some(s), Some(o)) = (source_owner, target_owner) {
                if s != o {
                    let message = format!(
                        "jumps to block `{}` of function `{}`; jumps must stay inside one function",
                        self.block_name(t),
                        self.func_name(o)
                    );
                    self.at_block(b, message);
                }
            }
            let plain = matches!(term, Terminator::Goto(_) | Terminator::Branch { .. });
            if high && plain && reported_entry.insert(t) {
                if let Some(&f) = entries.get(&t) {
                    let message = format!(
                        "jumps to `{}`, the entry block of function `{}`; entry blocks are entered only by calls",
                        self.block_name(t),
                        self.func_name(f)
                    );
                    self.at_block(b, message);
                }
            }
        }
    }

    /// High form: whatever is live into a function's entry block must be a parameter.
    fn check_liveness(&mut self) {
        let p = self.p;
        if self.form != FormKind::High || self.out_of_range {
            return;
        }
        let facts = liveness(p);
        for (f, func) in p.functions.entries() {
            let Some(&entry) = func.blocks.first() else {
                continue;
            };
            let Some(entry_facts) = facts.blocks.get(entry) else {
                continue;
            };
            for &v in &entry_facts.live_in {
                // A read of the program counter is already reported by its own check.
                if v != p.pc && !func.params.contains(&v) {
                    let message = format!(
                        "`{}` may be read before it is written (it is live on entry but not a parameter)",
                        self.var_name(v)
                    );
                    let ctx = self.function_context(f);
                    self.report(Location::Function(f), ctx, message);
                }
            }
        }
    }
}

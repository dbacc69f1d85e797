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
use crate::verified::{FormKind, HighProgram, LoweredProgram, Verified};
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

fn counted<F: crate::verified::Form>(program: Program) -> Result<Verified<F>, VerifyErrors> {
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
                    let message = format!("parameter `{}` is listed more than once", self.var_name(v));
                    self.report(here, ctx.clone(), message);
                }
            }
            for (list, role) in [(&func.params, "parameter"), (&func.returns, "return variable")] {
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
                self.at_op(b, oi, format!("writes `{}` more than once", self.var_name(v)));
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
            let Some(entry_facts) = facts.blocks.get(entry.index()) else {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builder::{prim_op, BuildError, ProgramBuilder};
    use crate::conformance;
    use crate::entity::KernelId;
    use crate::program::{BlockData, CallOp, PrimOp};

    const K: KernelId = KernelId::new(0);

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
        p.main = FuncId::new(7);
        assert_eq!(
            errors(&p),
            vec![VerifyError::NoEntry {
                main: FuncId::new(7),
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
        p.functions[1].blocks.push(Block::new(40));
        assert_eq!(
            errors(&p),
            vec![VerifyError::BlockOutOfRange {
                func: "main".into(),
                block: Block::new(40),
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
        p.functions[1].blocks.push(Block::new(3));
        assert_eq!(
            errors(&p),
            vec![VerifyError::BlockListedTwice {
                block: "exit".into(),
                first: "countdown".into(),
                second: "main".into()
            }]
        );
        let mut p = looping();
        p.functions[1].blocks.push(Block::new(4));
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
        p.blocks[0].ops.push(Op::Pop(vec![Var::new(99)]));
        let errs = errors(&p);
        let expected = VerifyError::VarOutOfRange {
            site: "block `entry` in function `countdown`, op 1 input".into(),
            var: Var::new(99),
            vars: 6,
        };
        assert_eq!(errs, vec![expected.clone()]);
        assert_eq!(
            expected.to_string(),
            "block `entry` in function `countdown`, op 1 input: variable v99 does not exist \
             (the program has 6 variables)"
        );
        let mut p = looping();
        p.functions[0].params = vec![Var::new(6)];
        assert_eq!(
            errors(&p),
            vec![VerifyError::VarOutOfRange {
                site: "function `countdown` parameters".into(),
                var: Var::new(6),
                vars: 6,
            }]
        );
    }

    #[test]
    fn target_out_of_range() {
        let mut p = looping();
        p.blocks[3].term = Terminator::Goto(Block::new(9));
        assert_eq!(
            errors(&p),
            vec![VerifyError::TargetOutOfRange {
                func: "countdown".into(),
                block: "exit".into(),
                target: Block::new(9),
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
        call.func = FuncId::new(9);
        assert_eq!(
            errors(&p),
            vec![VerifyError::CalleeOutOfRange {
                func: "main".into(),
                block: "main_entry".into(),
                op: 0,
                callee: FuncId::new(9),
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
                    first: Var::new(4),
                    second: Var::new(5)
                },
                VerifyError::DuplicateBlockName {
                    name: "head".into(),
                    first: Block::new(1),
                    second: Block::new(3)
                },
                VerifyError::DuplicateFunctionName {
                    name: "countdown".into(),
                    first: FuncId::new(0),
                    second: FuncId::new(1)
                },
            ]
        );
    }

    #[test]
    fn pc_out_of_range() {
        let mut p = looping();
        p.pc = Var::new(99);
        let errs = errors(&p);
        assert_has(
            &errs,
            &VerifyError::PcOutOfRange {
                pc: Var::new(99),
                vars: 6,
            },
        );
        assert_has(
            &errs,
            &VerifyError::ReservedPcName {
                var: Var::new(0),
                pc: Var::new(99),
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
                pc: Var::new(0),
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
                var: Var::new(4),
                pc: Var::new(0),
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
        *cond = Var::new(1);
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
            func: FuncId::new(0),
            ins: vec![Var::new(4), Var::new(4)],
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
        p.blocks[2].ops.push(Op::Pop(vec![Var::new(50)]));
        p.blocks[3].term = Terminator::Goto(Block::new(0));
        p.functions[1].params = vec![Var::new(4), Var::new(4)];
        let errs = errors(&p);
        for e in [
            VerifyError::DuplicateParam {
                func: "main".into(),
                var: "m".into(),
            },
            VerifyError::DuplicateVarName {
                name: "n".into(),
                first: Var::new(1),
                second: Var::new(5),
            },
            VerifyError::PcWrongType {
                name: PC_NAME.into(),
                ty: Type::F32,
            },
            VerifyError::VarOutOfRange {
                site: "block `body` in function `countdown`, op 2 input".into(),
                var: Var::new(50),
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
                            func: FuncId::new(50),
                            ins: vec![Var::new(100)],
                            outs: vec![Var::new(101), Var::new(101)],
                        }),
                        Op::Prim(PrimOp {
                            outs: vec![Var::new(3)],
                            ins: vec![Var::new(4)],
                            kernel: KernelRef::Assign,
                            source: String::new(),
                            in_place: vec![true, true],
                        }),
                        Op::Pop(vec![Var::new(u32::MAX as usize)]),
                    ],
                    term: Terminator::Branch {
                        cond: Var::new(77),
                        then_: Block::new(40),
                        else_: Block::new(u32::MAX as usize),
                    },
                },
                BlockData {
                    name: "a".into(),
                    ops: vec![],
                    term: Terminator::PushGoto {
                        ret: Block::new(9),
                        target: Block::new(0),
                    },
                },
            ],
            functions: vec![
                crate::program::FunctionData {
                    name: "f".into(),
                    params: vec![Var::new(8), Var::new(8)],
                    returns: vec![Var::new(9)],
                    blocks: vec![Block::new(7), Block::new(0), Block::new(0)],
                },
                crate::program::FunctionData {
                    name: "f".into(),
                    params: vec![],
                    returns: vec![],
                    blocks: vec![],
                },
            ],
            main: FuncId::new(3),
            pc: Var::new(5),
            form: Form::High,
        };
        let errs = errors(&garbage);
        assert!(errs.len() >= 10, "{errs:#?}");
        assert_has(
            &errs,
            &VerifyError::NoEntry {
                main: FuncId::new(3),
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
            main: FuncId::new(0),
            pc: Var::new(0),
            form: Form::High,
        };
        assert_eq!(
            errors(&empty),
            vec![
                VerifyError::NoEntry {
                    main: FuncId::new(0),
                    functions: 0
                },
                VerifyError::PcOutOfRange {
                    pc: Var::new(0),
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

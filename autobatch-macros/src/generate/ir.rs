//! Replays a recorded function into `autobatch_ir` at compile time, runs the allocation
//! analysis and prints the program.
//!
//! Functions this macro cannot see are stand-ins that may write any of this function's
//! variables (they may call back into it), so the allocation is conservative for them and
//! exact for self-recursion. The linked program recomputes the exact allocation once.

use super::translate::{Record, Step};
use crate::parse::ast::Ty;
use autobatch_ir::passes::pipeline::{prepare, Allocations};
use autobatch_ir::passes::{allocations_with, AllocationOptions, Passes, Source};
use autobatch_ir::{
    Allocation, Block, DType, FuncId, HighProgram, KernelId, LoweredProgram, ProgramBuilder, Type,
    Var,
};
use std::collections::BTreeMap;

/// The IR type of a language type.
pub fn ir_type(t: &Ty) -> Type {
    match t {
        Ty::Scalar(d) => Type::scalar(*d),
        Ty::Vector => Type::vector(DType::F64),
        Ty::Tuple(items) => Type::Tuple(items.iter().map(ir_type).collect()),
        Ty::Struct { fields, .. } => Type::Tuple(fields.iter().map(|(_, t)| ir_type(t)).collect()),
    }
}

/// The compile-time view of one function.
pub struct CompileTime {
    /// Allocation of each local variable.
    pub allocations: Vec<Allocation>,
    /// True if every callee is visible (so the allocation is exact).
    pub exact: bool,
    /// The printed program (the function and stand-ins for the callees it cannot see).
    pub printed: String,
    /// Where the function calls nothing but itself: the lowered program the full VM runs when
    /// it is the entry, and the record's kernel of each kernel id in it.
    pub lowered: Option<(LoweredProgram, Vec<usize>)>,
}

/// The function `name` of record `l` declared in `b` with its variables (allocated as given,
/// if given) and blocks, as the linker declares them.
fn declare(
    b: &mut ProgramBuilder,
    l: &Record,
    name: &str,
    allocations: Option<&[Allocation]>,
) -> Result<(FuncId, Vec<Var>, Vec<Block>), String> {
    let f = b.try_function(name).map_err(|e| e.to_string())?;
    let mut vars = Vec::with_capacity(l.vars.len());
    for (i, v) in l.vars.iter().enumerate() {
        let var = b
            .try_var(&v.name, ir_type(&v.ty))
            .map_err(|e| e.to_string())?;
        if let Some(a) = allocations.and_then(|a| a.get(i)) {
            b.try_set_allocation(var, *a).map_err(|e| e.to_string())?;
        }
        vars.push(var);
    }
    let blocks: Vec<Block> = l
        .blocks
        .iter()
        .map(|n| b.try_block(f, n).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    Ok((f, vars, blocks))
}

/// Replays `l`'s steps into `b` over its declared `vars` and `blocks`, calls going to
/// `callees`, each kernel step's kernel numbered by `kernel` (given the record's kernel).
fn replay(
    b: &mut ProgramBuilder,
    l: &Record,
    (vars, blocks, callees): (&[Var], &[Block], &[FuncId]),
    mut kernel: impl FnMut(usize) -> KernelId,
) -> Result<(), String> {
    let v = |xs: &[usize]| xs.iter().map(|&i| vars[i]).collect::<Vec<_>>();
    for step in &l.steps {
        let r = match step {
            Step::Prim {
                block,
                outs,
                ins,
                kernel: k,
                source,
            } => b.try_prim(blocks[*block], &v(outs), &v(ins), kernel(*k), source),
            Step::Assign { block, outs, ins } => b.try_assign(blocks[*block], &v(outs), &v(ins)),
            Step::Call {
                block,
                callee,
                ins,
                outs,
            } => b.try_call(blocks[*block], callees[*callee], &v(ins), &v(outs)),
            Step::Goto(from, to) => {
                b.try_terminate(blocks[*from], autobatch_ir::Terminator::Goto(blocks[*to]))
            }
            Step::Branch(from, c, t, e) => b.try_terminate(
                blocks[*from],
                autobatch_ir::Terminator::Branch {
                    cond: vars[*c],
                    then_: blocks[*t],
                    else_: blocks[*e],
                },
            ),
            Step::Ret(from) => b.try_terminate(blocks[*from], autobatch_ir::Terminator::Return),
        };
        r.map_err(|e| e.to_string())?;
    }
    Ok(())
}

/// The program the linker makes of function `name` (record `l`, allocated `allocations`) when
/// it is the entry and calls nothing but itself, prepared as the runtime prepares it: its
/// lowered program (what the full VM runs), and for each kernel id in it the record's kernel
/// (the linker numbers kernels as their steps come). `None` if that fails (the link fails the
/// same way).
fn linked_lowered(
    l: &Record,
    name: &str,
    allocations: &[Allocation],
) -> Option<(LoweredProgram, Vec<usize>)> {
    let mut b = ProgramBuilder::new();
    let (f, vars, blocks) = declare(&mut b, l, name, Some(allocations)).ok()?;
    let v = |xs: &[usize]| xs.iter().map(|&i| vars[i]).collect::<Vec<_>>();
    b.try_signature(f, &v(&l.params), &v(&l.returns)).ok()?;
    let mut kernels = Vec::new();
    let callees = vec![f; l.callees.len()];
    replay(&mut b, l, (&vars, &blocks, &callees), |k| {
        kernels.push(k);
        KernelId::new(kernels.len() - 1)
    })
    .ok()?;
    let program = b.finish_with_entry(f).ok()?;
    let source = Source::High(program.into_program());
    let prepared = prepare(source, &Passes::default(), Allocations::Trust, |_| false).ok()?;
    Some((prepared.lowered, kernels))
}

/// Builds the function's IR and analyses it.
pub fn compile_time(l: &Record, name: &str) -> Result<CompileTime, String> {
    let mut b = ProgramBuilder::new();
    let (f, vars, blocks) = declare(&mut b, l, name, None)?;
    let mut callees: Vec<FuncId> = Vec::new();
    let mut extra = BTreeMap::new();
    let everything: autobatch_ir::passes::VarSet = vars.iter().copied().collect();
    for (i, c) in l.callees.iter().enumerate() {
        if c.is_self {
            callees.push(f);
            continue;
        }
        let stub_name = format!("{} (not visible here)", super::infer::path_text(&c.path));
        let g = b.try_function(&stub_name).map_err(|e| e.to_string())?;
        let params: Vec<Var> = c
            .params
            .iter()
            .enumerate()
            .map(|(j, t)| {
                b.try_var(&format!("{stub_name}.p{j}"), ir_type(t))
                    .map_err(|e| e.to_string())
            })
            .collect::<Result<_, _>>()?;
        // As the callee defines itself: one return variable per element of a tuple.
        let rets: Vec<Var> = match &c.ret {
            Ty::Tuple(items) => items
                .iter()
                .enumerate()
                .map(|(j, t)| {
                    b.try_var(&format!("{stub_name}.r{i}.{j}"), ir_type(t))
                        .map_err(|e| e.to_string())
                })
                .collect::<Result<_, _>>()?,
            t => vec![b
                .try_var(&format!("{stub_name}.r{i}"), ir_type(t))
                .map_err(|e| e.to_string())?],
        };
        b.try_signature(g, &params, &rets)
            .map_err(|e| e.to_string())?;
        let body = b
            .try_block(g, &format!("{stub_name}.body"))
            .map_err(|e| e.to_string())?;
        b.try_prim(body, &rets, &params, KernelId::new(0), "unknown")
            .map_err(|e| e.to_string())?;
        b.try_terminate(body, autobatch_ir::Terminator::Return)
            .map_err(|e| e.to_string())?;
        extra.insert(g, everything.clone());
        callees.push(g);
    }
    replay(&mut b, l, (&vars, &blocks, &callees), KernelId::new)?;
    let v = |xs: &[usize]| xs.iter().map(|&i| vars[i]).collect::<Vec<_>>();
    b.try_signature(f, &v(&l.params), &v(&l.returns))
        .map_err(|e| e.to_string())?;
    let program: HighProgram = b.finish(f).map_err(|e| e.to_string())?;
    let exact = extra.is_empty();
    let options = AllocationOptions {
        extra_writes: extra,
        ..AllocationOptions::default()
    };
    let all = allocations_with(&program, &options);
    let program = program.with_allocations(&all);
    let allocations: Vec<Allocation> = vars.iter().map(|v| all[v.index()]).collect();
    let lowered = exact
        .then(|| linked_lowered(l, name, &allocations))
        .flatten();
    Ok(CompileTime {
        allocations,
        exact,
        printed: program.to_string(),
        lowered,
    })
}

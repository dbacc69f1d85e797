//! Replays a recorded function into `autobatch_ir` at compile time, runs the allocation
//! analysis and prints the program.
//!
//! Functions this macro cannot see are stand-ins that may write any of this function's
//! variables (they may call back into it), so the allocation is conservative for them and
//! exact for self-recursion. The linked program recomputes the exact allocation once.

use super::translate::{Record, Step};
use crate::parse::ast::Ty;
use autobatch_ir::passes::{allocations_with, AllocationOptions};
use autobatch_ir::{
    Allocation, Block, DType, FuncId, HighProgram, KernelId, ProgramBuilder, Type, Var,
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
}

/// Builds the function's IR and analyses it.
pub fn compile_time(l: &Record, name: &str) -> Result<CompileTime, String> {
    let mut b = ProgramBuilder::new();
    let f = b.try_function(name).map_err(|e| e.to_string())?;
    let vars: Vec<Var> = l
        .vars
        .iter()
        .map(|v| {
            b.try_var(&v.name, ir_type(&v.ty))
                .map_err(|e| e.to_string())
        })
        .collect::<Result<_, _>>()?;
    let blocks: Vec<Block> = l
        .blocks
        .iter()
        .map(|n| b.try_block(f, n).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
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
    let v = |xs: &[usize]| xs.iter().map(|&i| vars[i]).collect::<Vec<_>>();
    for step in &l.steps {
        let r = match step {
            Step::Prim {
                block,
                outs,
                ins,
                kernel,
                source,
            } => b.try_prim(
                blocks[*block],
                &v(outs),
                &v(ins),
                KernelId::new(*kernel),
                source,
            ),
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
    Ok(CompileTime {
        allocations: vars.iter().map(|v| all[v.index()]).collect(),
        exact,
        printed: program.to_string(),
    })
}

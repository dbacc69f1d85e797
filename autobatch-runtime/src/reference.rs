//! The single-lane reference interpreter: the test oracle for both modes.
//!
//! It follows the reference's definitional `interpret` literally and ignores allocations:
//! every variable is a stack of values (starting with one unset value), a write pushes a copy
//! then sets the top (or sets the top for in-place outputs), `pop` drops the top, a call runs
//! the callee in a fresh environment, and `push_goto` / `indirect_jump` use a return stack.
//! One lane at a time, nothing shared: simple enough to trust.

use crate::column::{width_of, Column};
use crate::config::Config;
use crate::depth::{counted_entries, limit_error, on_enough_stack, recursive_functions};
use crate::error::{function_name, Result, RuntimeError};
use crate::kernel::{Context, Kernel, KernelError, LaneInputs, LaneOutputs};
use crate::panics::catch_quietly;
use crate::stats::Stats;
use autobatch_ir::{Block, FuncId, KernelRef, Op, PrimOp, Program, Terminator, Var};
use std::cell::Cell;

type Value = Vec<Column>;

struct Frame {
    stacks: Vec<Vec<Option<Value>>>,
}

struct Interp<'a> {
    program: &'a Program,
    kernels: &'a [Kernel],
    context: Context<'a>,
    config: &'a Config,
    vector_len: usize,
    lane: usize,
    steps: u64,
    /// Per function: whether its calls count against the depth limit.
    counted: Vec<bool>,
    /// Per block of a hand-lowered program: the function a lane entering it calls, if counted.
    entries: Vec<Option<String>>,
    /// A hand-lowered program's bound on each variable's frames (the full VM's).
    frame_bound: Option<usize>,
}

/// Runs `program` (hand-lowered if `lowered`) on one lane: `inputs` holds one single-row
/// column per input leaf.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_lane(
    program: &Program,
    kernels: &[Kernel],
    context: Context<'_>,
    inputs: &[Column],
    vector_len: usize,
    lane: usize,
    lowered: bool,
    config: &Config,
) -> Result<Vec<Column>> {
    let mut interp = Interp {
        program,
        kernels,
        context,
        config,
        vector_len,
        lane,
        steps: 0,
        counted: recursive_functions(program),
        entries: if lowered {
            counted_entries(program, None)
        } else {
            vec![None; program.blocks.len()]
        },
        frame_bound: lowered.then_some(config.max_stack_depth),
    };
    let main = program.main_function();
    let mut args = Vec::new();
    let mut rest = inputs;
    for &v in &main.params {
        let (mine, tail) = rest.split_at(program.var(v).ty.leaves().len().min(rest.len()));
        args.push(mine.to_vec());
        rest = tail;
    }
    let results = interp.call(program.main, args, 0)?;
    Ok(results.into_iter().flatten().collect())
}

impl Interp<'_> {
    fn block_name(&self, b: Block) -> String {
        self.program.block(b).name.clone()
    }

    fn read(&self, frame: &Frame, v: Var, block: Block) -> Result<Value> {
        frame.stacks[v.index()]
            .last()
            .cloned()
            .flatten()
            .ok_or_else(|| RuntimeError::ReadUnset {
                var: self.program.var(v).name.clone(),
                lane: self.lane,
                block: self.block_name(block),
            })
    }

    /// Writes `value` into `v` (in `block`), pushing first if `push`; a hand-lowered
    /// program's variable may hold at most `max_stack_depth` frames, its unset one included.
    fn write(
        &self,
        frame: &mut Frame,
        v: Var,
        value: Value,
        push: bool,
        block: Block,
    ) -> Result<()> {
        let stack = &mut frame.stacks[v.index()];
        if push || stack.is_empty() {
            if self.frame_bound.is_some_and(|max| stack.len() >= max) {
                return Err(RuntimeError::StackOverflow {
                    var: self.program.var(v).name.clone(),
                    lane: self.lane,
                    block: self.block_name(block),
                    max_depth: self.config.max_stack_depth,
                });
            }
            stack.push(Some(value));
        } else if let Some(top) = stack.last_mut() {
            *top = Some(value);
        }
        Ok(())
    }

    fn call(&mut self, func: FuncId, args: Vec<Value>, depth: usize) -> Result<Vec<Value>> {
        let program = self.program;
        let f = program.function(func);
        let mut frame = Frame {
            stacks: vec![vec![None]; program.vars.len()],
        };
        for (&p, value) in f.params.iter().zip(args) {
            self.write(&mut frame, p, value, true, f.entry())?;
        }
        // A hand-lowered program's return addresses, each with the depth to return to.
        let mut returns: Vec<(Block, usize)> = Vec::new();
        let mut inner = depth;
        let max_depth = self.config.max_stack_depth;
        let mut block = f.entry();
        loop {
            if let Some(function) = &self.entries[block.index()] {
                if inner >= max_depth {
                    return Err(limit_error(function, self.lane, max_depth));
                }
                inner += 1;
            }
            self.steps += 1;
            if self.steps > self.config.step_budget.unwrap_or(u64::MAX) {
                return Err(RuntimeError::StepBudget {
                    budget: self.config.step_budget.unwrap_or(u64::MAX),
                    running: 1,
                    lanes: vec![self.lane],
                });
            }
            let data = program.block(block);
            for op in &data.ops {
                match op {
                    Op::Prim(prim) => {
                        let outs = self.prim(&frame, prim, block)?;
                        let mut rest = outs.as_slice();
                        for &v in &prim.outs {
                            let n = program.var(v).ty.leaves().len();
                            if rest.len() < n {
                                return Err(RuntimeError::ValueType {
                                    block: data.name.clone(),
                                    var: program.var(v).name.clone(),
                                    expected: program.var(v).ty.to_string(),
                                    found: format!("only {} leaves", rest.len()),
                                });
                            }
                            let (value, tail) = rest.split_at(n);
                            let in_place = prim.is_in_place(v);
                            self.write(&mut frame, v, value.to_vec(), !in_place, block)?;
                            rest = tail;
                        }
                    }
                    Op::Call(c) => {
                        let counted = self.counted[c.func.index()];
                        if counted && depth >= max_depth {
                            let function = function_name(program, c.func);
                            return Err(limit_error(&function, self.lane, max_depth));
                        }
                        let args = c
                            .ins
                            .iter()
                            .map(|&v| self.read(&frame, v, block))
                            .collect::<Result<Vec<_>>>()?;
                        let depth = depth + usize::from(counted);
                        let results = on_enough_stack(|| self.call(c.func, args, depth))?;
                        for (&v, value) in c.outs.iter().zip(results) {
                            self.write(&mut frame, v, value, true, block)?;
                        }
                    }
                    Op::Pop(vars) => {
                        for &v in vars {
                            let stack = &mut frame.stacks[v.index()];
                            if stack.len() <= 1 {
                                return Err(RuntimeError::PopEmpty {
                                    var: program.var(v).name.clone(),
                                    lane: self.lane,
                                    block: data.name.clone(),
                                });
                            }
                            stack.pop();
                        }
                    }
                }
            }
            block = match &data.term {
                Terminator::Goto(t) => *t,
                Terminator::Branch { cond, then_, else_ } => {
                    let c = self.read(&frame, *cond, block)?;
                    if c[0].as_slice::<bool>().is_some_and(|s| s[0]) {
                        *then_
                    } else {
                        *else_
                    }
                }
                Terminator::Return => break,
                Terminator::PushGoto { ret, target } => {
                    returns.push((*ret, inner));
                    *target
                }
                Terminator::IndirectGoto => match returns.pop() {
                    Some((r, d)) => {
                        inner = d;
                        r
                    }
                    None => break,
                },
            };
        }
        f.returns
            .iter()
            .map(|&v| self.read(&frame, v, block))
            .collect()
    }

    fn prim(&self, frame: &Frame, prim: &PrimOp, block: Block) -> Result<Value> {
        let mut inputs: Vec<Column> = Vec::new();
        for &v in &prim.ins {
            inputs.extend(self.read(frame, v, block)?);
        }
        let mut outputs: Vec<Column> = prim
            .outs
            .iter()
            .flat_map(|&v| self.program.var(v).ty.leaves())
            .map(|t| Column::zeros(t.dtype, 1, width_of(t, self.vector_len)))
            .collect();
        let kernel_error = |message: String| RuntimeError::Kernel {
            block: self.block_name(block),
            source_text: prim.source.clone(),
            lane: self.lane,
            message,
        };
        match prim.kernel {
            KernelRef::Assign => return Ok(inputs),
            KernelRef::User(id) => {
                let kernel =
                    self.kernels
                        .get(id.index())
                        .ok_or_else(|| RuntimeError::MissingKernel {
                            block: self.block_name(block),
                            kernel: id.index(),
                            source_text: prim.source.clone(),
                            table: self.kernels.len(),
                        })?;
                let refs: Vec<&Column> = inputs.iter().collect();
                let progress = Cell::new(0);
                let result = catch_quietly(|| match kernel {
                    Kernel::LaneWise(f)
                    | Kernel::LaneWiseInPlace(f)
                    | Kernel::LaneWiseDirect(f, _) => f(
                        &LaneInputs::new(&refs, &[0], &progress).with_context(self.context),
                        &mut LaneOutputs::new(&mut outputs),
                    ),
                    Kernel::Batched(f) => f(self.context, &refs, &mut outputs),
                });
                match result {
                    Ok(Ok(())) => {}
                    Ok(Err(KernelError { message, .. })) => return Err(kernel_error(message)),
                    Err(_) => return Err(kernel_error("panicked".to_string())),
                }
            }
        }
        Ok(outputs)
    }
}

/// Runs every lane separately through the reference interpreter (on a hand-lowered program if
/// `lowered`) and stacks the results.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run(
    program: &Program,
    lowered: bool,
    kernels: &[Kernel],
    context: Context<'_>,
    inputs: &[Column],
    batch: usize,
    vector_len: usize,
    config: &Config,
) -> Result<(Vec<Column>, Stats)> {
    let mut per_lane: Vec<Vec<Column>> = Vec::with_capacity(batch);
    for lane in 0..batch {
        let lane_inputs: Vec<Column> = inputs.iter().map(|c| c.gather(&[lane])).collect();
        per_lane.push(run_lane(
            program,
            kernels,
            context,
            &lane_inputs,
            vector_len,
            lane,
            lowered,
            config,
        )?);
    }
    let leaves: Vec<_> = program
        .outputs()
        .iter()
        .flat_map(|&v| program.var(v).ty.leaves())
        .collect();
    let outputs = leaves
        .iter()
        .enumerate()
        .map(|(i, t)| {
            let mut col = Column::zeros(t.dtype, batch, width_of(*t, vector_len));
            for (lane, outs) in per_lane.iter().enumerate() {
                col.copy_row_from(lane, &outs[i], 0);
            }
            col
        })
        .collect();
    Ok((
        outputs,
        Stats {
            batch_size: batch,
            ..Stats::default()
        },
    ))
}

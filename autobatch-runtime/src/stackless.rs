//! Stackless execution: the un-lowered program, with every call recursing on the host stack
//! for the lanes active at the call.
//!
//! Within one activation, a priority queue of (block, lanes) runs the lowest block first and
//! merges lanes waiting at the same block, so lanes re-converge after branches and loops. All
//! variables behave as registers. Around a call, the values the callee may overwrite and the
//! caller still needs (live across the call and FULL) are kept: set aside whole (every lane's
//! rows swapped for spare ones, no row copied) when a large enough share of the batch calls,
//! else copied out for the calling lanes and restored afterwards, so a call costs in
//! proportion to its lanes, not to the batch. The host stack grows on demand, so recursion as
//! deep as the configured limit runs on any thread.

mod plan;

use crate::config::Config;
use crate::depth::{limit_error, on_enough_stack};
use crate::error::{function_name, Result, RuntimeError};
use crate::exec::Exec;
use crate::policy::{partition_into, LaneSteps, Waiting};
use crate::spare::Lists;
use crate::stats::Stats;
use crate::storage::leaf::Leaf;
use crate::storage::{Aside, Snapshot, Stacks};
use autobatch_ir::{Block, CallOp, FuncId, Op, PrimOp, Terminator, Var};
pub(crate) use plan::Plan;
use plan::{CallPlan, Step};
use smallvec::SmallVec;
use std::cell::RefCell;

/// Stackless keeps no saved frames in storage: every variable behaves as a register, and the
/// values a call may overwrite are saved around it instead.
pub(crate) const STACKS: Stacks = Stacks::Ignore;

/// Runs `exec.program`'s entry function on every lane.
pub(crate) fn run(
    exec: &mut Exec<'_>,
    plan: &Plan,
    config: &Config,
    stats: &mut Stats,
) -> Result<()> {
    let mut buffers = Buffers {
        spare: exec.storage.take_lane_lists(),
        ..Buffers::default()
    };
    let mut lanes = buffers.list();
    lanes.extend(0..exec.storage.batch());
    let main = exec.program.main;
    let lane_steps = RefCell::new(LaneSteps::new(config, lanes.len()));
    let activation = Activation {
        plan,
        config,
        lane_steps,
        buffers: RefCell::new(buffers),
    };
    let run = activation.run_function(exec, stats, main, &lanes, 0);
    let mut buffers = activation.buffers.into_inner();
    buffers.keep(lanes);
    exec.storage.keep_lane_lists(buffers.into_lane_lists());
    run.map_err(|e| match e {
        RuntimeError::StepBudget {
            budget, mut lanes, ..
        } => {
            lanes.sort_unstable();
            lanes.dedup();
            let running = lanes.len();
            RuntimeError::StepBudget {
                budget,
                running,
                lanes,
            }
        }
        other => other,
    })
}

/// Writes the values of `from` into `to` (a call's arguments into the callee's formals, or its
/// results into the call's outputs) at `lanes`. Copied directly when no target is a source
/// other than its own (writing one cannot change another's source), else through held copies
/// of every source first (a self-call's formals may be its own arguments, permuted).
fn pass(
    exec: &mut Exec<'_>,
    to: &[Var],
    from: &[Var],
    lanes: &[usize],
    block: Block,
) -> Result<()> {
    let direct = to
        .iter()
        .enumerate()
        .all(|(i, t)| from.iter().enumerate().all(|(j, f)| t != f || i == j));
    if direct {
        for (&t, &f) in to.iter().zip(from) {
            exec.storage.copy_value(t, f, lanes, block)?;
        }
        return Ok(());
    }
    let held = from
        .iter()
        .map(|&v| exec.storage.snapshot(v, lanes, block))
        .collect::<Result<Vec<_>>>()?;
    for (&t, value) in to.iter().zip(held) {
        exec.storage.restore(t, lanes, value, block)?;
    }
    Ok(())
}

/// A step-budget error passing out of an activation: its lanes waiting at other blocks are
/// still running too (sorted and counted once the error leaves the entry function).
fn with_waiting(e: RuntimeError, waiting: &[Waiting]) -> RuntimeError {
    match e {
        RuntimeError::StepBudget {
            budget,
            running,
            mut lanes,
        } => {
            waiting
                .iter()
                .for_each(|w| lanes.extend_from_slice(w.lanes()));
            RuntimeError::StepBudget {
                budget,
                running,
                lanes,
            }
        }
        other => other,
    }
}

/// The lanes a block runs: the entry block's are the caller's, every other block's a list of
/// its own.
enum Lanes {
    Entry,
    Own(Vec<usize>),
}

struct Activation<'a> {
    plan: &'a Plan,
    config: &'a Config,
    /// Per-lane step counts, with lane isolation (then the global budget is not checked).
    lane_steps: RefCell<Option<LaneSteps>>,
    /// Working lists shared by every activation (each uses them between its ops and its next
    /// step, never across a call), so their allocations are made once per run, not per call.
    buffers: RefCell<Buffers>,
}

/// The positions of an activation's blocks that lanes wait at, lowest first: a bitset.
#[derive(Default)]
struct Pending(Vec<u64>);

impl Pending {
    /// Empty, for positions below `blocks`.
    fn reset(&mut self, blocks: usize) {
        self.0.clear();
        self.0.resize(blocks.div_ceil(64), 0);
    }

    fn insert(&mut self, p: usize) {
        self.0[p / 64] |= 1 << (p % 64);
    }

    /// Removes and returns the lowest position, if any.
    fn pop_first(&mut self) -> Option<usize> {
        let (i, word) = self.0.iter_mut().enumerate().find(|(_, w)| **w != 0)?;
        let bit = word.trailing_zeros() as usize;
        *word &= *word - 1;
        Some(i * 64 + bit)
    }
}

/// An activation's waiting lists (one per block) and pending positions, kept between
/// activations for their allocations.
#[derive(Default)]
struct Frame {
    waiting: Vec<Waiting>,
    pending: Pending,
}

/// Lane lists no block waits with, and a merge's output, kept for their allocations: a
/// step's list moves on to the block it goes to (split in place by a branch), so lanes are
/// copied only when two lists meet. Activations' frames likewise (one per depth in use).
#[derive(Default)]
struct Buffers {
    spare: Lists<usize>,
    scratch: Vec<usize>,
    frames: Vec<Frame>,
    /// Lists of the values held around a call, given back (one per call in progress).
    held: Lists<Kept>,
}

impl Buffers {
    /// A frame for an activation of a function with `blocks` blocks, no lanes waiting.
    fn frame(&mut self, blocks: usize) -> Frame {
        let mut frame = self.frames.pop().unwrap_or_default();
        frame.waiting.clear();
        frame.waiting.resize_with(blocks, Waiting::default);
        frame.pending.reset(blocks);
        frame
    }

    /// Keeps `frame`'s allocations for a later activation.
    fn keep_frame(&mut self, frame: Frame) {
        self.frames.push(frame);
    }

    /// `lanes` now wait at `waiting[p]` with those already there, and `pending` holds `p`; a
    /// list left over is kept for reuse.
    fn send(
        &mut self,
        lanes: Vec<usize>,
        p: usize,
        waiting: &mut [Waiting],
        pending: &mut Pending,
    ) {
        if lanes.is_empty() {
            return self.keep(lanes);
        }
        pending.insert(p);
        let left = waiting[p].add(lanes, &mut self.scratch);
        self.keep(left);
    }

    /// Keeps `list`'s allocation for a later list.
    fn keep(&mut self, list: Vec<usize>) {
        self.spare.give(list);
    }

    /// An empty list (one kept earlier, if any).
    fn list(&mut self) -> Vec<usize> {
        self.spare.take()
    }

    /// Every lane list these buffers hold, emptied (the waiting lists' and the merge's too):
    /// what the run leaves to the next.
    fn into_lane_lists(self) -> Lists<usize> {
        let Buffers {
            mut spare,
            scratch,
            frames,
            held: _,
        } = self;
        spare.give(scratch);
        for frame in frames {
            for waiting in frame.waiting {
                spare.give(waiting.into_list());
            }
        }
        spare
    }
}

impl Activation<'_> {
    /// Runs `func` from its entry block for `entry` (sorted lanes): the entry block runs on
    /// the caller's list itself (a branch there splits it into new lists, so a call copies no
    /// lane list), every later block on the lanes waiting there.
    fn run_function(
        &self,
        exec: &mut Exec<'_>,
        stats: &mut Stats,
        func: FuncId,
        entry: &[usize],
        depth: usize,
    ) -> Result<()> {
        if entry.is_empty() {
            return Ok(());
        }
        let program = exec.program;
        let blocks = &program.function(func).blocks;
        let frame = self.buffers.borrow_mut().frame(blocks.len());
        let Frame {
            mut waiting,
            mut pending,
        } = frame;
        let mut entering = Some(entry);
        let budget = self.config.step_budget.unwrap_or(u64::MAX);
        loop {
            let pos = match entering {
                Some(_) => 0,
                None => match pending.pop_first() {
                    Some(pos) => pos,
                    None => break,
                },
            };
            let per_lane = self.lane_steps.borrow().is_some();
            if !per_lane && stats.steps >= budget {
                let lanes = entering.map_or_else(Vec::new, <[usize]>::to_vec);
                let running = 0;
                let out_of_steps = RuntimeError::StepBudget {
                    budget,
                    running,
                    lanes,
                };
                return Err(with_waiting(out_of_steps, &waiting));
            }
            let block = blocks[pos];
            let mut list = match entering {
                Some(_) => Lanes::Entry,
                None => Lanes::Own(waiting[pos].take(&mut self.buffers.borrow_mut().scratch)),
            };
            let lanes: &[usize] = match (&list, entering.take()) {
                (Lanes::Own(own), _) => own,
                (Lanes::Entry, entry) => entry.unwrap_or_default(),
            };
            if let Some(steps) = self.lane_steps.borrow_mut().as_mut() {
                steps.run(lanes)?;
            }
            stats.record(block.index(), lanes.len());
            let data = program.block(block);
            let steps = &self.plan.steps[block.index()];
            // The branch's lanes, if its condition's kernel split them as it ran.
            let mut split = None;
            let splits = self.plan.split[block.index()];
            for (i, (op, step)) in data.ops.iter().zip(steps).enumerate() {
                match (op, step, splits) {
                    (Op::Prim(prim), _, Some(cond)) if i + 1 == data.ops.len() => {
                        let mut buffers = self.buffers.borrow_mut();
                        let (mut yes, mut no) = (buffers.list(), buffers.list());
                        let lists = (&mut yes, &mut no);
                        if exec.run_branch((prim, cond), lanes, block, stats, lists)? {
                            split = Some((yes, no));
                        } else {
                            buffers.keep(yes);
                            buffers.keep(no);
                        }
                    }
                    (_, Step::Deferred, _) | (Op::Pop(_), _, _) => {}
                    (Op::Prim(_), Step::Reading(prim), _) => {
                        exec.run_prim(prim, lanes, block, stats)?
                    }
                    (Op::Prim(prim), _, _) => exec.run_prim(prim, lanes, block, stats)?,
                    (Op::Call(call), Step::Call(plan), _) => self
                        .call(exec, stats, (call, plan), lanes, block, depth)
                        .map_err(|e| match per_lane {
                            true => e,
                            false => with_waiting(e, &waiting),
                        })?,
                    (Op::Call(_), _, _) => unreachable!("every call has a call plan"),
                }
            }
            for &v in &self.plan.dead_vectors[block.index()] {
                exec.storage.release_rows(v, lanes);
            }
            let mut buffers = self.buffers.borrow_mut();
            let position = |target: &Block| self.plan.position[target.index()];
            // The entry block's lanes are the caller's: a goto copies them into a new list.
            let own = |list: &mut Lanes, buffers: &mut Buffers| match std::mem::replace(
                list,
                Lanes::Entry,
            ) {
                Lanes::Own(own) => own,
                Lanes::Entry => {
                    let mut own = buffers.list();
                    own.extend_from_slice(entry);
                    own
                }
            };
            match &data.term {
                Terminator::Goto(t) => {
                    let lanes = own(&mut list, &mut buffers);
                    buffers.send(lanes, position(t), &mut waiting, &mut pending)
                }
                Terminator::Branch { cond, then_, else_ } => {
                    let (yes, no) = match split {
                        Some(lists) => lists,
                        None => {
                            let conditions = exec.storage.conditions(*cond, lanes, block)?;
                            let (mut yes, mut no) = (buffers.list(), buffers.list());
                            partition_into(lanes, conditions, &mut yes, &mut no);
                            (yes, no)
                        }
                    };
                    if let Lanes::Own(own) = list {
                        buffers.keep(own);
                    }
                    buffers.send(yes, position(then_), &mut waiting, &mut pending);
                    buffers.send(no, position(else_), &mut waiting, &mut pending);
                }
                Terminator::Return => {
                    if let Lanes::Own(own) = list {
                        buffers.keep(own)
                    }
                }
                Terminator::PushGoto { .. } | Terminator::IndirectGoto => {
                    unreachable!("a verified high-level program has no lowered terminators")
                }
            }
        }
        self.buffers
            .borrow_mut()
            .keep_frame(Frame { waiting, pending });
        Ok(())
    }

    /// Runs `call` (planned as `plan`) for `lanes`: the caller's live values held, the
    /// arguments passed (a fused argument kernel run into the formals), the callee run on the
    /// host stack, the results passed out and the held values restored.
    fn call(
        &self,
        exec: &mut Exec<'_>,
        stats: &mut Stats,
        (call, plan): (&CallOp, &CallPlan),
        lanes: &[usize],
        block: Block,
        depth: usize,
    ) -> Result<()> {
        let program = exec.program;
        let callee = program.function(call.func);
        // With an argument kernel fused, the caller's live values are held first (the kernel
        // then writes formals that may be the caller's own variables). If holding them fails,
        // the kernel and the call run as written, so the error is the one they give.
        let mut held = None;
        let (params, args): (&[Var], &[Var]) = match &plan.fused {
            Some(fused) => match hold(
                exec,
                plan,
                lanes,
                block,
                Some(&fused.into_formals),
                self.held(),
            ) {
                Ok(mut saved) => {
                    // The kernel reads the saves set aside where they were set aside (a list on
                    // the stack: this runs at every call).
                    let aside: SmallVec<[(Var, &[Leaf]); 4]> = (plan.saves.iter().zip(&saved))
                        .filter_map(|(&v, kept)| match kept {
                            Kept::Aside(a) => Some((v, a.leaves())),
                            Kept::Snapshot(_) => None,
                        })
                        .filter(|(v, _)| fused.into_formals.ins.contains(v))
                        .collect();
                    let ran = exec.run_reading(&fused.into_formals, lanes, block, stats, &aside);
                    drop(aside);
                    if let Err(e) = ran {
                        give_back(exec, &plan.saves, lanes, &mut saved, block)?;
                        return Err(e);
                    }
                    held = Some(saved);
                    (&fused.params, &fused.args)
                }
                Err(_) => {
                    exec.run_prim(&fused.prim, lanes, block, stats)?;
                    (&callee.params, &call.ins)
                }
            },
            None => (&callee.params, &plan.args),
        };
        let counted = self.plan.counted[call.func.index()];
        if counted && depth >= self.config.max_stack_depth {
            let function = function_name(program, call.func);
            let lane = lanes.first().copied().unwrap_or(0);
            return Err(limit_error(&function, lane, self.config.max_stack_depth));
        }
        // The caller's live values are held before any formal is written (a self-call's
        // formals are the caller's own variables); vector rows are shared, not copied.
        let mut saved = match held {
            Some(saved) => saved,
            None => hold(exec, plan, lanes, block, None, self.held())?,
        };
        pass(exec, params, args, lanes, block)?;
        let depth = depth + usize::from(counted);
        on_enough_stack(|| self.run_function(exec, stats, call.func, lanes, depth))?;
        pass(exec, &plan.outs, &plan.returns, lanes, block)?;
        give_back(exec, &plan.saves, lanes, &mut saved, block)?;
        self.buffers.borrow_mut().held.give(saved);
        Ok(())
    }

    /// An empty list for the values held around a call.
    fn held(&self) -> Vec<Kept> {
        self.buffers.borrow_mut().held.take()
    }
}

/// The value of one save kept around a call.
enum Kept {
    /// Its rows in the calling lanes, copied out.
    Snapshot(Snapshot),
    /// Every lane's rows, set aside whole.
    Aside(Aside),
}

/// Calling lanes, as a share of the batch, at and above which a save's rows are set aside
/// whole rather than copied out ([`Storage::set_aside`](crate::storage::Storage::set_aside)):
/// setting aside copies nothing but holds a row per lane of the batch, so with fewer calling
/// lanes (a few lanes recursing deep) the copy is the smaller (setting aside holds at most
/// this many times the memory of the snapshots it replaces, and never passes the memory
/// budget: a snapshot is taken instead).
const ASIDE_SHARE: usize = 64;

/// `plan`'s saves at `lanes`, kept from their sources (each itself, or the return variable
/// that still holds its value): a save of dense rows is set aside whole (its value first
/// copied into it from the return variable holding it, if any) when at least one lane in
/// [`ASIDE_SHARE`] calls, it is not passed as an argument (the arguments are read from
/// storage), and the argument kernel `fused`, if it reads it, is lane-wise (so it can read
/// the rows set aside); else it is snapshot. Returns them in
/// `saved` (a list kept from an earlier call, emptied first). If one fails, those taken are
/// given back first.
fn hold(
    exec: &mut Exec<'_>,
    plan: &CallPlan,
    lanes: &[usize],
    block: Block,
    fused: Option<&PrimOp>,
    mut saved: Vec<Kept>,
) -> Result<Vec<Kept>> {
    saved.clear();
    let wide = lanes.len() * ASIDE_SHARE >= exec.storage.batch();
    let fused_reads = |v: Var| fused.is_some_and(|op| op.ins.contains(&v));
    let lane_wise = fused.is_none_or(|op| exec.is_lane_wise(op));
    // Passed as the call runs fused, or as written (if holding fails the first time).
    let passed =
        |v: Var| plan.args.contains(&v) || plan.fused.as_ref().is_some_and(|f| f.args.contains(&v));
    for (&v, &source) in plan.saves.iter().zip(&plan.sources) {
        let aside =
            wide && exec.storage.can_set_aside(v) && !passed(v) && (lane_wise || !fused_reads(v));
        // A value still in the return variable of the call before moves into its own
        // variable first, at the calling lanes (a copy, where a snapshot would gather it and
        // its restore scatter it): then its own rows are set aside whole.
        let moved = if aside && v != source {
            exec.storage.copy_value(v, source, lanes, block)
        } else {
            Ok(())
        };
        let aside = (aside && moved.is_ok())
            .then(|| exec.storage.set_aside(v))
            .flatten();
        let kept = match (moved, aside) {
            (Err(e), _) => Err(e),
            (Ok(()), Some(aside)) => Ok(Kept::Aside(aside)),
            (Ok(()), None) => exec
                .storage
                .snapshot(source, lanes, block)
                .map(Kept::Snapshot),
        };
        match kept {
            Ok(k) => saved.push(k),
            Err(e) => {
                give_back(exec, &plan.saves[..saved.len()], lanes, &mut saved, block)?;
                return Err(e);
            }
        }
    }
    Ok(saved)
}

/// Gives back the values `saved` of `saves` at `lanes`: snapshots restored, rows set aside
/// taken back; `saved` is left empty, for the next call's values.
fn give_back(
    exec: &mut Exec<'_>,
    saves: &[Var],
    lanes: &[usize],
    saved: &mut Vec<Kept>,
    block: Block,
) -> Result<()> {
    for (&v, kept) in saves.iter().zip(saved.drain(..)) {
        match kept {
            Kept::Snapshot(value) => exec.storage.restore(v, lanes, value, block)?,
            Kept::Aside(aside) => exec.storage.take_back(v, aside),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Pending;

    /// Positions come out lowest first, each once, across words; a reset empties it.
    #[test]
    fn pending_positions_pop_lowest_first() {
        let mut p = Pending::default();
        p.reset(130);
        for pos in [129, 3, 64, 3, 0, 70] {
            p.insert(pos);
        }
        let order: Vec<usize> = std::iter::from_fn(|| p.pop_first()).collect();
        assert_eq!(order, [0, 3, 64, 70, 129]);
        p.insert(5);
        p.reset(10);
        assert_eq!(p.pop_first(), None);
    }
}

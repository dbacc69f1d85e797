//! The full VM: per-lane program counters over the lowered program, with lanes re-converging
//! across recursion depths.
//!
//! Each step runs one block that has lanes waiting, on exactly those lanes: the lowest-numbered
//! such block, or, for a program that calls a batched primitive, the one with the most lanes
//! (see [`Schedule`]).
//! Lanes wait in per-block sets instead of a program-counter array that is scanned every
//! step, so a step costs in proportion to the lanes it runs, not to the batch size; a set is a
//! bitset, so the lanes come out in lane order without sorting and nothing allocates per step.
//! Return addresses live on per-lane stacks (the program counter's stack), with "halt" beneath;
//! where only calls enter recursive functions, a lane's call depth is read off them instead of
//! counted (see [`DepthRule`]).
//! A block that does nothing here (its pops are of variables without a stack, and it ends in a
//! goto: the edges lowering adds to a loop) is not run: lanes sent to it go straight on, so it
//! counts no step and no run in [`Stats`].
//!
//! Lanes that reach a block where none wait, all at once, wait there as the list they came in
//! (in lane order) instead of in its set: a goto's or call's lanes, the sides of a branch
//! whose last kernel splits the lanes by the condition as it computes it (where nothing else
//! reads the condition), a return's lanes listed by the block each returns to. A block runs
//! from its list without listing lanes from a set; lanes that reach it while it has lanes
//! waiting join its set, and its list joins the set when it runs with both. Where the block
//! they reach would run next anyway (lowest first, and no lane waits at it or below it), the
//! lanes go on running there without waiting: the same steps on the same lanes in the same
//! order, without the round trip through the queue.

use crate::compiled::{caught, Blame, BlockFn, BlockRun, CompiledBlocks, PartsCache};
use crate::config::{Config, Schedule};
use crate::depth::{counted_entries, limit_error, DepthRule};
use crate::error::{Result, RuntimeError};
use crate::exec::{Exec, Sides};
use crate::policy::{dead_vectors, split_condition, LaneSteps};
use crate::stats::Stats;
use crate::storage::Stacks;
use autobatch_ir::passes::{liveness, stacked_liveness, Liveness};
use autobatch_ir::{
    fingerprint, Allocation, Block, KernelRef, LoweredProgram, Op, PrimOp, Program, Terminator, Var,
};
use std::panic::{catch_unwind, resume_unwind, AssertUnwindSafe};

/// The full VM keeps FULL variables' saved frames in storage: pushes and pops act on them.
pub(crate) const STACKS: Stacks = Stacks::Honour;

/// What the full VM knows about a lowered program before it runs.
#[derive(Clone, Debug)]
pub(crate) struct Plan {
    /// Per block and op: the stacked variables a `pop` op pops (pops of the others are no-ops,
    /// dropped here once instead of skipped at every run).
    pops: Vec<Vec<Vec<Var>>>,
    /// Per block and op: `(v, from)` if the op is `v = from` on a stacked `v` that pushes
    /// first, which storage runs in one pass over the lanes where it can
    /// ([`Storage::push_copy`](crate::storage::Storage::push_copy)).
    push_copies: Vec<Vec<Option<(Var, Var)>>>,
    /// Per block: the vector variables (registers and temporaries, not stacked) that it reads
    /// or writes and that are dead when it ends. Their rows are released there instead of when
    /// the variable is next overwritten: the arena then holds live values only, and a row is
    /// handed out again while it is still in cache.
    dead_vectors: Vec<Vec<Var>>,
    /// Per block: the function a lane entering it calls, if that call counts against the
    /// depth limit (see [`counted_entries`]).
    entries: Vec<Option<String>>,
    /// Per block: where a lane sent to it goes. A block that does nothing here (every pop
    /// of a variable without a stack, no row to release, no call counted) and ends in a
    /// goto is passed through to the goto's target: the edge blocks lowering adds for pops
    /// at a branch would otherwise cost a loop a second step per iteration. One that ends in
    /// a return (the lane halts) is passed to the halt, one past the last block (see
    /// [`WaitingSets`]): a loop whose exit edges return would otherwise spend a step each
    /// time lanes leave it. A cycle of such blocks is kept (its lanes run it step by step,
    /// so the step budget still ends it).
    forward: Vec<Block>,
    /// Per block: the branch condition its last kernel (the op at the index given) computes
    /// and splits the block's lanes by as it does (see [`splits`]).
    split: Vec<Option<(usize, Var)>>,
    /// Per block: its compiled form, if the program has compiled blocks (see
    /// [`attach`](Self::attach)); empty if not.
    compiled: Vec<Option<BlockFn>>,
    /// How a lane's call depth is known.
    depth: DepthRule,
    /// Per block: whether it calls a batched primitive (such a block runs only when no other
    /// has lanes, where the schedule is [`Schedule::MostLanes`]).
    batched: Vec<bool>,
}

impl Plan {
    /// The plan of lowered `program`, lowered from `high` (`None` if written lowered), whose
    /// ops calling a batched primitive are those `batched` says.
    pub(crate) fn new(
        program: &LoweredProgram,
        high: Option<&Program>,
        batched: impl Fn(&PrimOp) -> bool,
    ) -> Plan {
        let pops: Vec<Vec<Vec<Var>>> = program
            .blocks
            .iter()
            .map(|data| {
                data.ops
                    .iter()
                    .map(|op| match op {
                        Op::Pop(vars) => vars
                            .iter()
                            .copied()
                            .filter(|&v| program.var(v).alloc == Allocation::Full)
                            .collect(),
                        _ => Vec::new(),
                    })
                    .collect()
            })
            .collect();
        let push_copies = program
            .blocks
            .iter()
            .map(|data| {
                data.ops
                    .iter()
                    .map(|op| match op {
                        Op::Prim(p)
                            if p.kernel == KernelRef::Assign
                                && p.outs.len() == 1
                                && p.ins.len() == 1
                                && p.outs[0] != p.ins[0]
                                && program.var(p.outs[0]).alloc == Allocation::Full
                                && !p.is_in_place(p.outs[0]) =>
                        {
                            Some((p.outs[0], p.ins[0]))
                        }
                        _ => None,
                    })
                    .collect()
            })
            .collect();
        let live = liveness(program);
        let dead_vectors = dead_vectors(program, &live, STACKS);
        // Liveness as the VM sees it (pops of variables without a stack read nothing): a
        // loop's condition, popped on its edges, is left to its branch alone.
        let popless = stacked_liveness(program);
        let split = (0..program.blocks.len())
            .map(|b| splits(program, &popless, Block::new(b)))
            .collect();
        let entries = counted_entries(program, high);
        let halt = Block::new(program.blocks.len());
        let passes_to = |b: usize| {
            let data = program.block(Block::new(b));
            let idle = data.ops.iter().enumerate().all(|(i, op)| match op {
                Op::Pop(_) => pops[b][i].is_empty(),
                Op::Prim(p) => {
                    p.kernel == KernelRef::Assign && p.outs.is_empty() && p.ins.is_empty()
                }
                Op::Call(_) => false,
            });
            let passes = idle && dead_vectors[b].is_empty() && entries[b].is_none();
            match data.term {
                Terminator::Goto(t) if passes => Some(t),
                Terminator::Return if passes => Some(halt),
                _ => None,
            }
        };
        let forward: Vec<Block> = (0..program.blocks.len())
            .map(|b| {
                // Followed at most once per block: a longer chain has a cycle.
                let mut at = Block::new(b);
                for _ in 0..program.blocks.len() {
                    match passes_to(at.index()) {
                        Some(next) if next == halt => return next,
                        Some(next) => at = next,
                        None => return at,
                    }
                }
                Block::new(b)
            })
            .collect();
        let depth = DepthRule::new(program, &entries, &forward);
        let batched = program
            .blocks
            .iter()
            .map(|data| {
                data.ops
                    .iter()
                    .any(|op| matches!(op, Op::Prim(p) if batched(p)))
            })
            .collect();
        Plan {
            pops,
            push_copies,
            dead_vectors,
            entries,
            forward,
            split,
            compiled: Vec::new(),
            depth,
            batched,
        }
    }

    /// The order a run with `config` takes blocks in (see [`Schedule`]).
    fn order(&self, config: &Config) -> Order<'_> {
        let most_lanes = match config.schedule {
            Schedule::LowestBlock => false,
            Schedule::MostLanes => true,
            Schedule::Auto => self.batched.contains(&true),
        };
        match most_lanes {
            true => Order::MostLanes {
                batched: &self.batched,
            },
            false => Order::Lowest,
        }
    }

    /// Whether a run with `config` runs compiled blocks: the plan has some, and `config`
    /// neither turns them off nor times kernels one by one. (They exist only for high-level
    /// programs, whose storage checks no reads, the other condition of their use.)
    pub(crate) fn runs_compiled(&self, config: &Config) -> bool {
        config.compiled_blocks && !config.time_kernels && self.compiled.iter().any(Option::is_some)
    }

    /// Takes `compiled` as the compiled form of `program`'s blocks if they were compiled from
    /// it (its fingerprint is theirs); `false`, taking nothing, if not.
    pub(crate) fn attach(&mut self, program: &LoweredProgram, compiled: CompiledBlocks) -> bool {
        let matches = compiled.blocks.len() == program.blocks.len()
            && fingerprint(program) == compiled.fingerprint;
        if matches {
            self.compiled = compiled.blocks.to_vec();
        }
        matches
    }
}

/// The index of block `b`'s last kernel and the condition of its branch, if only pops (none of
/// the condition) follow that kernel and it may split the lanes by the condition
/// ([`split_condition`], with `live` the liveness the VM sees).
fn splits(program: &Program, live: &Liveness, b: Block) -> Option<(usize, Var)> {
    let ops = &program.block(b).ops;
    let last = ops.iter().rposition(|op| !matches!(op, Op::Pop(_)))?;
    let Op::Prim(prim) = &ops[last] else {
        return None;
    };
    let cond = split_condition(program, live, b, prim)?;
    let popped = ops[last + 1..]
        .iter()
        .any(|op| matches!(op, Op::Pop(vars) if vars.contains(&cond)));
    (!popped).then_some((last, cond))
}

/// Runs the lowered `exec.program` from its entry until every lane halts.
///
/// The step loop is compiled twice: where the CPU counts and finds bits in one instruction
/// each (`popcnt`, `tzcnt`/`blsr`: every x86-64 CPU of the last decade), the copy compiled
/// with them runs; elsewhere the portable one. Only the instructions differ: the per-lane
/// bookkeeping (lane sets, return addresses) is counting and finding bits.
pub(crate) fn run(
    exec: &mut Exec<'_>,
    plan: &Plan,
    config: &Config,
    stats: &mut Stats,
) -> Result<()> {
    // The lane lists an earlier run left (every lane; the lanes of the block being run), so
    // this run's are pages the process has already; given back failed or not.
    let mut lists = exec.storage.take_lane_lists();
    let mut all = lists.take();
    all.extend(0..exec.storage.batch());
    let batch = exec.storage.batch();
    let blocks = exec.program.blocks.len();
    let mut queue = Queue {
        waiting: WaitingSets::new(blocks, batch, plan.order(config), || lists.take()),
        lanes: lists.take(),
        taken: LaneSet::new(batch),
        taken_valid: false,
        yes: lists.take(),
        no: lists.take(),
        returning: (0..=blocks).map(|_| lists.take()).collect(),
        returned: Vec::new(),
        targets: Vec::new(),
    };
    // One catch around the whole run for the panics of compiled blocks' lanes (see
    // `BlockRun::each`); any other panic goes on unwinding as it came.
    let blame = Blame::default();
    let ran = catch_unwind(AssertUnwindSafe(|| {
        run_bits(exec, plan, config, (stats, &blame), (&all, &mut queue))
    }));
    let ran = match ran {
        Ok(ran) => ran,
        Err(payload) => match caught(exec.program, &blame, payload) {
            Ok(e) => Err(e),
            Err(payload) => resume_unwind(payload),
        },
    };
    lists.give(all);
    let Queue {
        waiting,
        lanes,
        yes,
        no,
        returning,
        ..
    } = queue;
    let kept = [lanes, yes, no].into_iter().chain(returning);
    for list in kept.chain(waiting.lists) {
        lists.give(list);
    }
    exec.storage.keep_lane_lists(lists);
    ran
}

/// The lanes waiting at each block, and those of the block being run.
struct Queue<'p> {
    /// Per block, the lanes waiting there.
    waiting: WaitingSets<'p>,
    /// The lanes of the block being run, in lane order.
    lanes: Vec<usize>,
    /// The same lanes as a set, if `taken_valid` (a block run from a list gets its set only
    /// where its terminator passes lanes on word by word).
    taken: LaneSet,
    taken_valid: bool,
    /// A branch's sides (then, else), where its kernel split the lanes as it ran.
    yes: Vec<usize>,
    no: Vec<usize>,
    /// Per block (and the halt), the lanes a return pass sends there, in lane order; and the
    /// blocks whose list it started, in the order it did.
    returning: Vec<Vec<usize>>,
    returned: Vec<usize>,
    /// Room for the block each lane of a return pass returns to.
    targets: Vec<u32>,
}

impl Queue<'_> {
    /// The block to run next, if any lanes wait (halted lanes are not waiting to run): the
    /// lowest-numbered one with lanes, or the one the order of the most lanes chooses (see
    /// [`WaitingSets::first`]).
    #[inline(always)]
    fn next_block(&mut self) -> Option<usize> {
        self.waiting.first()
    }

    /// Makes the lanes waiting at block `index` (the one [`next_block`](Self::next_block)
    /// chose) the lanes being run: its list as it is if no lane waits in its set, else every
    /// lane listed from the set (the list joining it first).
    #[inline(always)]
    fn take(&mut self, index: usize) {
        let (set, list) = (
            &mut self.waiting.sets[index],
            &mut self.waiting.lists[index],
        );
        if !list.is_empty() {
            if set.is_empty() {
                std::mem::swap(&mut self.lanes, list);
                list.clear();
                self.taken_valid = false;
                return;
            }
            set.extend(list);
            list.clear();
        }
        set.take(&mut self.taken, &mut self.lanes);
        self.taken_valid = true;
    }

    /// The lanes being run, as a set (made from their list if the block ran from one).
    #[inline(always)]
    fn taken(&mut self) -> &LaneSet {
        if !self.taken_valid {
            self.taken.clear();
            self.taken.extend(&self.lanes);
            self.taken_valid = true;
        }
        &self.taken
    }

    /// Sends the lanes being run to block `to`: as their list if no lane waits there, else
    /// word by word into its set.
    #[inline(always)]
    fn send(&mut self, to: usize) {
        if self.waiting.has_lanes(to) {
            self.taken();
            self.waiting[to].add(&self.taken);
        } else {
            self.waiting.give(to, &mut self.lanes);
        }
    }

    /// Whether the lanes being run can go on to block `to` without waiting there: blocks run
    /// lowest first and no lane waits at it or below it (so it would run next, on exactly
    /// these lanes), and it is not the halt.
    #[inline(always)]
    fn carries(&self, to: usize) -> bool {
        self.waiting.runs_next(to)
    }

    /// Sends the lanes being run to block `to` (see [`send`](Self::send)), or keeps them
    /// running there where it [`carries`](Self::carries) them: then the block to run next.
    #[inline(always)]
    fn send_or_carry(&mut self, to: usize) -> Option<usize> {
        if self.carries(to) {
            return Some(to);
        }
        self.send(to);
        None
    }

    /// Keeps the lanes being run (listed, in lane order) running at block `to` where it
    /// [`carries`](Self::carries) them: then the block to run next; else gives their list to
    /// `to` (see [`WaitingSets::give`]).
    #[inline(always)]
    fn carry_or_give(&mut self, to: usize) -> Option<usize> {
        if self.carries(to) {
            return Some(to);
        }
        self.waiting.give(to, &mut self.lanes);
        None
    }

    /// Sends a branch's sides as its kernel split them, `yes` to block `then_` and `no` to
    /// block `else_` (two blocks); the lower block's side (or the other, if it has no lanes)
    /// goes on running there where it [`carries`](Self::carries) it: then the block to run
    /// next.
    #[inline(always)]
    fn send_split(&mut self, then_: usize, else_: usize) -> Option<usize> {
        let (yes, no) = (&mut self.yes, &mut self.no);
        let ((low, lows), (high, highs)) = match then_ < else_ {
            true => ((then_, yes), (else_, no)),
            false => ((else_, no), (then_, yes)),
        };
        let (b, list) = match lows.is_empty() {
            true => (high, highs),
            false => {
                self.waiting.give(high, highs);
                (low, lows)
            }
        };
        // The side becomes the lanes being run (those of the block that split them are done).
        std::mem::swap(&mut self.lanes, list);
        list.clear();
        self.taken_valid = false;
        self.carry_or_give(b)
    }

    /// Sends the lanes the last return pass listed by the block each returns to.
    #[inline(always)]
    fn send_returned(&mut self) {
        for b in self.returned.drain(..) {
            self.waiting.give(b, &mut self.returning[b]);
        }
    }

    /// Every waiting lane, in lane order (not the halted ones).
    fn all_waiting(&self) -> Vec<usize> {
        let mut lanes = Vec::new();
        let mut listed = Vec::new();
        let halt = self.waiting.halt();
        for (set, list) in self.waiting.sets.iter().zip(&self.waiting.lists).take(halt) {
            set.list_into(&mut listed);
            lanes.extend_from_slice(&listed);
            lanes.extend_from_slice(list);
        }
        lanes.sort_unstable();
        lanes
    }
}

/// [`run_steps`] in the copy the CPU can run (see [`run`]).
fn run_bits(
    exec: &mut Exec<'_>,
    plan: &Plan,
    config: &Config,
    stats: (&mut Stats, &Blame),
    lists: (&[usize], &mut Queue<'_>),
) -> Result<()> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("bmi1")
        {
            // SAFETY: the CPU has both features `run_with_bit_instructions` is compiled for.
            return unsafe { run_with_bit_instructions(exec, plan, config, stats, lists) };
        }
    }
    run_steps(exec, plan, config, stats, lists)
}

/// [`run_steps`] compiled for `popcnt` and `bmi1`.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "popcnt,bmi1")]
fn run_with_bit_instructions(
    exec: &mut Exec<'_>,
    plan: &Plan,
    config: &Config,
    stats: (&mut Stats, &Blame),
    lists: (&[usize], &mut Queue<'_>),
) -> Result<()> {
    run_steps(exec, plan, config, stats, lists)
}

/// The step loop of [`run`], inlined into each of its copies: `all` lists every lane, `queue`
/// holds the lanes waiting (none yet) and being run; compiled blocks record where their lanes
/// are in `blame`.
#[inline(always)]
fn run_steps(
    exec: &mut Exec<'_>,
    plan: &Plan,
    config: &Config,
    (stats, blame): (&mut Stats, &Blame),
    (all, queue): (&[usize], &mut Queue<'_>),
) -> Result<()> {
    let program = exec.program;
    let batch = exec.storage.batch();
    let forward = |b: &Block| plan.forward[b.index()].index();
    queue.waiting[forward(&program.main_function().entry())].extend(all);
    let max_depth = config.max_stack_depth;
    // A limit below the main function's own depth is left to the counting rule, which fails
    // the first lane as it enters.
    let rule = match plan.depth {
        DepthRule::Held { base } if base <= max_depth => plan.depth,
        _ => DepthRule::Counted,
    };
    let counted = rule == DepthRule::Counted;
    let mut returns = ReturnStacks::new(batch, counted);
    // Each lane's call depth, where it is counted.
    let mut depth: Vec<u32> = vec![0; if counted { batch } else { 0 }];
    let budget = config.step_budget.unwrap_or(u64::MAX);
    let mut lane_steps = LaneSteps::new(config, batch);
    // Kernel times are measured only where kernels run one by one; compiled blocks do not check
    // reads for a prior write (high-level programs, the only ones they are made for, need no
    // such check).
    let use_compiled = plan.runs_compiled(config) && !exec.storage.checks_reads();
    let mut parts = PartsCache::new(program.vars.len());
    // The block the lanes just run go on to without waiting, where lowest first would run
    // them there next as they are (see `Queue::carries`).
    let mut carried = None;
    loop {
        let (index, carry) = match carried.take() {
            Some(index) => (index, true),
            None => match queue.next_block() {
                Some(index) => (index, false),
                None => break,
            },
        };
        if lane_steps.is_none() && stats.steps >= budget {
            if carry {
                queue.waiting.give(index, &mut queue.lanes);
            }
            let lanes = queue.all_waiting();
            let running = lanes.len();
            return Err(RuntimeError::StepBudget {
                budget,
                running,
                lanes,
            });
        }
        let block = Block::new(index);
        match carry {
            true => queue.taken_valid = false,
            false => queue.take(index),
        }
        let lanes = &queue.lanes;
        if let Some(steps) = &mut lane_steps {
            steps.run(lanes)?;
        }
        stats.record(index, lanes.len());
        let data = program.block(block);
        if let Some(function) = counted.then(|| plan.entries[index].as_ref()).flatten() {
            if let Some(lane) = enter(&mut depth, lanes, max_depth) {
                return Err(limit_error(function, lane, max_depth));
            }
        }
        // Whether the lanes were split into `yes` and `no` by the branch's condition as it was
        // computed (by the branch's kernel, or a compiled block).
        let split;
        let compiled = plan.compiled.get(index).copied().flatten();
        if let Some(run_block) = compiled.filter(|_| use_compiled) {
            let sides = (&mut queue.yes, &mut queue.no);
            let at = (program, block);
            let storage = (&mut exec.storage, &mut parts);
            run_block(&mut BlockRun::new(
                at,
                lanes,
                storage,
                (stats, blame),
                sides,
            ))?;
            stats.compiled_steps += 1;
            split = matches!(data.term, Terminator::Branch { .. });
        } else {
            let sides = (&mut queue.yes, &mut queue.no);
            split = run_ops(exec, plan, (index, block), lanes, stats, sides)?;
        }
        for &v in &plan.dead_vectors[index] {
            exec.storage.release_rows(v, lanes);
        }
        match &data.term {
            Terminator::Goto(t) => carried = queue.send_or_carry(forward(t)),
            Terminator::Branch { cond, then_, else_ } => {
                let (t, e) = (forward(then_), forward(else_));
                if t == e {
                    carried = queue.send_or_carry(t);
                } else if split {
                    carried = queue.send_split(t, e);
                } else {
                    let conditions = exec.storage.conditions(*cond, lanes, block)?;
                    queue.taken();
                    let (then_set, else_set) = queue.waiting.pair_mut(t, e);
                    queue.taken.split_into(conditions, then_set, else_set);
                }
            }
            Terminator::Return => {}
            Terminator::PushGoto { ret, target } => {
                let bytes = (returns.frames + lanes.len()) * returns.slot_bytes();
                // Blamed on the deepest lane (the lowest of them) if it passes the budget.
                let deepest = || {
                    let by_depth = |&l: &usize| (returns.held[l], std::cmp::Reverse(l));
                    lanes.iter().copied().max_by_key(by_depth)
                };
                exec.storage.note_call_stack(bytes, block, deepest, || {
                    let callee = plan.entries[target.index()].as_deref();
                    let callee = callee.unwrap_or(&program.block(*target).name);
                    format!("the return addresses of calls to `{callee}`")
                })?;
                returns.push(lanes, plan.forward[ret.index()], &depth);
                // Where depths are held, the call is counted here: a lane that passes the
                // limit (the first of them) fails as the entry would have failed it.
                if let DepthRule::Held { base } = rule {
                    if returns.top + base > max_depth {
                        let over = |&l: &usize| returns.held[l] as usize + base > max_depth;
                        if let Some(lane) = lanes.iter().copied().find(over) {
                            let function = plan.entries[forward(target)].as_deref();
                            let function = function.unwrap_or(&program.block(*target).name);
                            return Err(limit_error(function, lane, max_depth));
                        }
                    }
                }
                carried = queue.send_or_carry(forward(target));
            }
            Terminator::IndirectGoto => {
                // Each lane's last return address popped, its caller's depth restored (where
                // depths are counted) and the lane listed for the block it returns to; then
                // each block's list sent there, or the lanes as they are where all return to
                // one block. An empty return stack is the "halt" address beneath main.
                let sends = (
                    &mut queue.returning[..],
                    &mut queue.returned,
                    &mut queue.targets,
                );
                // Blamed on the first lane if the stacks pass the budget.
                let first = queue.lanes.first().copied();
                match returns.pop(&queue.lanes, sends, &mut depth) {
                    Some(to) => carried = queue.carry_or_give(to),
                    None => queue.send_returned(),
                }
                let bytes = returns.frames * returns.slot_bytes();
                exec.storage
                    .note_call_stack(bytes, block, || first, String::new)?;
            }
        }
    }
    Ok(())
}

/// Runs block `index` (`block`)'s ops on `lanes` one by one, each on all of them; whether the
/// branch's kernel split the lanes into `sides` as it ran.
#[inline(always)]
fn run_ops(
    exec: &mut Exec<'_>,
    plan: &Plan,
    (index, block): (usize, Block),
    lanes: &[usize],
    stats: &mut Stats,
    sides: Sides<'_>,
) -> Result<bool> {
    let mut split = false;
    let (yes, no) = sides;
    let program = exec.program;
    for (i, op) in program.block(block).ops.iter().enumerate() {
        match op {
            Op::Prim(prim) => {
                let fused = match plan.push_copies[index][i] {
                    Some((v, from)) => exec.storage.push_copy(v, from, lanes, block)?,
                    None => false,
                };
                match plan.split[index] {
                    _ if fused => {}
                    Some((at, cond)) if at == i => {
                        let sides = (&mut *yes, &mut *no);
                        split = exec.run_branch((prim, cond), lanes, block, stats, sides)?;
                    }
                    _ => exec.run_prim(prim, lanes, block, stats)?,
                }
            }
            Op::Pop(_) => {
                for &v in &plan.pops[index][i] {
                    exec.storage.pop(v, lanes, block)?;
                }
            }
            Op::Call(_) => unreachable!("a verified lowered program has no calls"),
        }
    }
    Ok(split)
}

/// Counts a call for each of `lanes` entering a recursive function's body (their `depth`
/// goes up by one), in one pass; the first lane already at `max_depth`, if any, is the
/// error's (the depths no longer matter then: the run stops).
#[inline(always)]
fn enter(depth: &mut [u32], lanes: &[usize], max_depth: usize) -> Option<usize> {
    // The deepest depth is kept as the loop goes (no branch per lane); only a run past the
    // limit looks for the first lane at it.
    let mut deepest = 0;
    for &lane in lanes {
        let d = &mut depth[lane];
        deepest = deepest.max(*d);
        *d = d.saturating_add(1);
    }
    if (deepest as usize) < max_depth {
        return None;
    }
    let limit = u32::try_from(max_depth).unwrap_or(u32::MAX);
    lanes.iter().copied().find(|&l| depth[l] > limit)
}

/// The panic of a lane past the batch (a lane list the VM did not make).
#[cold]
#[inline(never)]
fn lane_out_of_range(lane: usize, batch: usize) -> ! {
    panic!("lane {lane} out of a batch of {batch}")
}

/// Every lane's return addresses, stack-major like saved frames (`slot = level * batch +
/// lane`): a push or pop is one store or load, and growing by a level appends to the end.
struct ReturnStacks {
    slots: Slots,
    /// Return addresses each lane holds.
    held: Vec<u32>,
    batch: usize,
    /// Return addresses held over all lanes.
    frames: usize,
    /// The most return addresses any lane has held: while the slots have room for one more
    /// level than that, a push needs no look at the lanes' depths first.
    top: usize,
}

/// The return addresses' slots: the block to return to, and the caller's call depth where
/// depths are counted ([`DepthRule::Counted`]).
enum Slots {
    Held(Vec<Block>),
    Counted(Vec<(Block, u32)>),
}

impl ReturnStacks {
    /// No return addresses for `batch` lanes, keeping callers' depths if `counted`.
    fn new(batch: usize, counted: bool) -> ReturnStacks {
        ReturnStacks {
            slots: match counted {
                true => Slots::Counted(Vec::new()),
                false => Slots::Held(Vec::new()),
            },
            held: vec![0; batch],
            batch,
            frames: 0,
            top: 0,
        }
    }

    /// The bytes one return address takes.
    fn slot_bytes(&self) -> usize {
        match self.slots {
            Slots::Held(_) => size_of::<Block>(),
            Slots::Counted(_) => size_of::<(Block, u32)>(),
        }
    }

    /// Pushes `ret` for every one of `lanes` (with each lane's call depth from `depth` where
    /// depths are counted): one pass over them.
    #[inline(always)]
    fn push(&mut self, lanes: &[usize], ret: Block, depth: &[u32]) {
        let stacks = (&mut self.held[..], self.batch, self.top);
        let top = match &mut self.slots {
            Slots::Held(slots) => push_each(stacks, slots, lanes, (ret, |_| ret)),
            Slots::Counted(slots) => {
                let slot = |lane: usize| (ret, depth[lane]);
                push_each(stacks, slots, lanes, ((ret, 0), slot))
            }
        };
        self.top = top;
        self.frames += lanes.len();
    }

    /// Pops the last return address of every one of `lanes` (restoring its caller's depth in
    /// `depth` where depths are counted) and lists the lane for the block it returns to, or
    /// gives the one block all of them return to (see [`returns_each`]).
    #[inline(always)]
    fn pop(&mut self, lanes: &[usize], sends: Returning<'_>, depth: &mut [u32]) -> Option<usize> {
        let stacks = (&mut self.held[..], self.batch);
        let (popped, one) = match &self.slots {
            Slots::Held(slots) => returns_each(stacks, slots, lanes, sends, |_, &ret| ret),
            Slots::Counted(slots) => {
                let restore = |lane: usize, &(ret, calls): &(Block, u32)| {
                    depth[lane] = calls;
                    ret
                };
                returns_each(stacks, slots, lanes, sends, restore)
            }
        };
        self.frames -= popped;
        one
    }
}

/// Pushes a slot for every one of `lanes` onto return stacks `(held, batch, top)` (see
/// [`ReturnStacks`]) whose slots are `slots`: `slot(lane)`, growing the slots with `fill`
/// where they have no room. Returns the most return addresses any lane has held.
#[inline(always)]
fn push_each<S: Copy>(
    (held, batch, top): (&mut [u32], usize, usize),
    slots: &mut Vec<S>,
    lanes: &[usize],
    (fill, slot): (S, impl Fn(usize) -> S),
) -> usize {
    if (top + 1) * batch > slots.len() {
        // Room for the deepest of these lanes' new frames (rarely: the room doubles).
        let need = lanes.iter().map(|&l| held[l] as usize + 1).max();
        let need = need.unwrap_or(0) * batch;
        if need > slots.len() {
            let grown = need.max(2 * slots.len());
            slots.resize(grown, fill);
        }
    }
    // Slices held in locals: the loop keeps their bounds in registers.
    let (n, slots) = (held.len(), &mut slots[..]);
    let mut top = top;
    for &lane in lanes {
        if lane >= n {
            lane_out_of_range(lane, n);
        }
        let d = &mut held[lane];
        let at = *d as usize * batch + lane;
        debug_assert!(at < slots.len());
        // SAFETY: the slots have room for every one of these lanes' next level: for `top + 1`
        // levels (no lane has held more than `top`), or grown above to the deepest of them.
        unsafe { *slots.get_unchecked_mut(at) = slot(lane) };
        *d += 1;
        top = top.max(*d as usize);
    }
    top
}

/// Where a return pass lists lanes: per block (and the halt), the lanes returning there; the
/// blocks whose list the pass started, in the order it did; and room for the block each lane
/// of the pass returns to.
type Returning<'q> = (&'q mut [Vec<usize>], &'q mut Vec<usize>, &'q mut Vec<u32>);

/// Pops the last return address of every one of `lanes` from return stacks `(held, batch)`
/// (see [`ReturnStacks`]) whose slots are `slots`: `restore` takes each lane and its slot and
/// gives the block it returns to, and the lane is listed for that block in `lists` (in lane
/// order, as `lanes` are), the block noted in `listed` with its first lane; an empty return
/// stack is the "halt" address beneath main. Returns the addresses popped, and the block
/// every lane returns to where they all return to one (then no lane is listed: the caller
/// sends `lanes` there as they are).
///
/// Two passes: the first pops and notes each lane's block in `targets`, with nothing carried
/// from lane to lane but registers; where every lane returns to one block (nearly every pass:
/// lanes run together were mostly called together), that is all. Only a pass whose lanes
/// part lists them one by one, where a list's length goes through memory from each lane to
/// the next.
#[inline(always)]
fn returns_each<S>(
    (held, batch): (&mut [u32], usize),
    slots: &[S],
    lanes: &[usize],
    (lists, listed, targets): Returning<'_>,
    mut restore: impl FnMut(usize, &S) -> Block,
) -> (usize, Option<usize>) {
    let n = held.len();
    targets.clear();
    targets.reserve(lanes.len());
    // The bits set in any lane's block and in every lane's: equal only if all blocks are.
    let (mut any, mut every) = (0, u32::MAX);
    // Lanes with no return address (rare: main returning), counted instead of the popped ones
    // so the loop carries no count of its own.
    let mut halted = 0;
    for (&lane, target) in lanes.iter().zip(targets.spare_capacity_mut()) {
        if lane >= n {
            lane_out_of_range(lane, n);
        }
        let to = match held[lane].checked_sub(1) {
            None => {
                halted += 1;
                HALTED
            }
            Some(d) => {
                held[lane] = d;
                let at = d as usize * batch + lane;
                debug_assert!(at < slots.len());
                // SAFETY: the lane's slot at level `d` was written by a push (it held more
                // than `d` return addresses), in room the slots still have: they only grow
                // during a run.
                restore(lane, unsafe { slots.get_unchecked(at) }).index() as u32
            }
        };
        target.write(to);
        any |= to;
        every &= to;
    }
    // SAFETY: the loop wrote the first `lanes.len()` elements (the room reserved above).
    unsafe { targets.set_len(lanes.len()) };
    let popped = lanes.len() - halted;
    if any == every {
        let one = (!lanes.is_empty() && every != HALTED).then_some(every as usize);
        return (popped, one);
    }
    for (&lane, &to) in lanes.iter().zip(targets.iter()) {
        if to == HALTED {
            continue;
        }
        let to = to as usize;
        let list = &mut lists[to];
        if list.is_empty() {
            start_list((list, lanes.len()), listed, to);
        }
        let len = list.len();
        // Lists start empty (every list a pass starts is sent on before the next pass), so
        // this one has held at most `lanes.len()` lanes since it was reserved for that many.
        assert!(len < list.capacity());
        // SAFETY: `len` is below the capacity (checked above): the write is in the list's
        // room, and the first `len + 1` elements are then initialised.
        unsafe {
            list.as_mut_ptr().add(len).write(lane);
            list.set_len(len + 1);
        }
    }
    (popped, None)
}

/// A return pass's note for a lane with no return address (no block has this index).
const HALTED: u32 = u32::MAX;

/// Starts the return pass's list for block `to`: noted in `listed`, with room for every lane
/// of the pass (`room`), so no lane checks for room. Out of line: a pass starts a list once per
/// block its lanes return to, and the call kept inline held registers the lane loop needs.
#[cold]
#[inline(never)]
fn start_list((list, room): (&mut Vec<usize>, usize), listed: &mut Vec<usize>, to: usize) {
    listed.push(to);
    list.reserve(room);
}

/// The lanes waiting at each block, in its set or its list (or both), with a bound below which
/// none wait: the next block to run (the lowest with lanes) is looked for from there, not from
/// block 0, so a step costs in proportion to the blocks between the last one run and the
/// next, not to the program's blocks (a sampler's lowered program has hundreds; scanning them
/// all was the largest item of its step loop). Every mutable access to a block's set, and
/// every list given to a block, lowers the bound to that block. In the order
/// [`Order::MostLanes`] the blocks from the bound on are scanned at each step all the same (the
/// fewer steps pay for it: see [`Schedule::MostLanes`]).
///
/// One set (and list) more than the program has blocks holds the lanes that have halted
/// (sent to a block the plan passes to the halt, see [`Plan`]'s `forward`), past the last
/// block's: lanes join it as they join any block, and it never runs (the run is over when
/// only it holds lanes).
struct WaitingSets<'p> {
    sets: Vec<LaneSet>,
    /// Per block, lanes that came all at once while none waited there, in lane order; none
    /// of them in the block's set.
    lists: Vec<Vec<usize>>,
    /// No block below this one has lanes.
    low: usize,
    /// Which block with lanes runs next.
    order: Order<'p>,
}

/// How [`WaitingSets::first`] chooses the block to run (see [`Schedule`]).
#[derive(Clone, Copy, Debug)]
enum Order<'p> {
    /// The lowest block with lanes.
    Lowest,
    /// The block with the most lanes (the lowest of those with as many), one marked in
    /// `batched` (it calls a batched primitive) only where no other has lanes.
    MostLanes { batched: &'p [bool] },
}

impl<'p> WaitingSets<'p> {
    /// No lanes waiting at any of `blocks` blocks (or halted) over a batch of `batch`, blocks
    /// to run taken in `order`; the lists' room from `list`.
    fn new(
        blocks: usize,
        batch: usize,
        order: Order<'p>,
        list: impl FnMut() -> Vec<usize>,
    ) -> WaitingSets<'p> {
        WaitingSets {
            sets: (0..=blocks).map(|_| LaneSet::new(batch)).collect(),
            lists: std::iter::repeat_with(list).take(blocks + 1).collect(),
            low: blocks + 1,
            order,
        }
    }

    /// Whether lanes wait at block `b` (in its set or its list).
    #[inline(always)]
    fn has_lanes(&self, b: usize) -> bool {
        !self.sets[b].is_empty() || !self.lists[b].is_empty()
    }

    /// The block to run next, if any lanes wait (never the halt): the lowest with lanes, or
    /// the one [`Order::MostLanes`] chooses.
    #[inline(always)]
    fn first(&mut self) -> Option<usize> {
        let halt = self.halt();
        debug_assert!((0..self.low.min(halt)).all(|b| !self.has_lanes(b)));
        let first = (self.low..halt).find(|&b| self.has_lanes(b))?;
        self.low = first;
        match self.order {
            Order::Lowest => Some(first),
            Order::MostLanes { batched } => Some(self.most_lanes(first, batched)),
        }
    }

    /// Of the blocks from `first` (the lowest with lanes) on, the one with the most lanes, the
    /// lowest of those with as many, preferring any block not marked in `batched`.
    fn most_lanes(&self, first: usize, batched: &[bool]) -> usize {
        let halt = self.halt();
        let blocks = self.sets[first..halt]
            .iter()
            .zip(&self.lists[first..halt])
            .zip(&batched[first..halt]);
        let mut best = (first, (false, 0));
        for (b, ((set, list), &batched)) in (first..).zip(blocks) {
            let n = set.count + list.len();
            let rank = (!batched, n);
            if n > 0 && rank > best.1 {
                best = (b, rank);
            }
        }
        best.0
    }

    /// Sends the lanes of `list` (in lane order, none waiting anywhere) to block `b`: `list`
    /// itself if no lane waits there (`list` gets back an empty one), else into its set
    /// (`list` emptied).
    #[inline(always)]
    fn give(&mut self, b: usize, list: &mut Vec<usize>) {
        if list.is_empty() {
            return;
        }
        if self.has_lanes(b) {
            self[b].extend(list);
            list.clear();
        } else {
            std::mem::swap(list, &mut self.lists[b]);
            self.low = self.low.min(b);
        }
    }

    /// Whether block `b` would run next if lanes came to it now, in the order
    /// [`Order::Lowest`]: no lane waits at it or below it, and it is not the halt. (In the
    /// order [`Order::MostLanes`] lanes always wait, so that the next block is chosen among
    /// every block's lanes.)
    #[inline(always)]
    fn runs_next(&self, b: usize) -> bool {
        matches!(self.order, Order::Lowest) && b < self.low && b < self.halt()
    }

    /// The halt's index, one past the last block.
    #[inline(always)]
    fn halt(&self) -> usize {
        self.sets.len() - 1
    }

    /// The sets of blocks `a` and `b` (two blocks), both mutable.
    #[inline(always)]
    fn pair_mut(&mut self, a: usize, b: usize) -> (&mut LaneSet, &mut LaneSet) {
        self.low = self.low.min(a.min(b));
        let (low, high) = self.sets.split_at_mut(a.max(b));
        let (at_min, at_max) = (&mut low[a.min(b)], &mut high[0]);
        match a < b {
            true => (at_min, at_max),
            false => (at_max, at_min),
        }
    }
}

impl std::ops::Index<usize> for WaitingSets<'_> {
    type Output = LaneSet;

    #[inline(always)]
    fn index(&self, b: usize) -> &LaneSet {
        &self.sets[b]
    }
}

impl std::ops::IndexMut<usize> for WaitingSets<'_> {
    #[inline(always)]
    fn index_mut(&mut self, b: usize) -> &mut LaneSet {
        self.low = self.low.min(b);
        &mut self.sets[b]
    }
}

/// The lanes waiting at one block: a bitset over the batch, with the range of words that may
/// hold lanes, so taking them costs in proportion to that range and yields them in lane order.
struct LaneSet {
    words: Vec<u64>,
    count: usize,
    /// Words below `lo` and from `hi` on are zero.
    lo: usize,
    hi: usize,
}

impl LaneSet {
    fn new(batch: usize) -> LaneSet {
        LaneSet {
            words: vec![0; batch.div_ceil(64)],
            count: 0,
            lo: usize::MAX,
            hi: 0,
        }
    }

    #[inline(always)]
    fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Adds `lanes` (in lane order, none already waiting here).
    #[inline(always)]
    fn extend(&mut self, lanes: &[usize]) {
        let (Some(&first), Some(&last)) = (lanes.first(), lanes.last()) else {
            return;
        };
        for &lane in lanes {
            self.words[lane / 64] |= 1 << (lane % 64);
        }
        self.count += lanes.len();
        self.lo = self.lo.min(first.min(last) / 64);
        self.hi = self.hi.max(first.max(last) / 64 + 1);
    }

    /// Adds the lanes of `other` (none already waiting here), a word at a time.
    #[inline(always)]
    fn add(&mut self, other: &LaneSet) {
        if other.is_empty() {
            return;
        }
        for w in other.lo..other.hi {
            self.words[w] |= other.words[w];
        }
        self.count += other.count;
        self.lo = self.lo.min(other.lo);
        self.hi = self.hi.max(other.hi);
    }

    /// Adds each lane of this set (none already waiting in either) to `then_` or `else_` by
    /// its branch condition (`conditions` holds one per lane of the batch), a word at a time:
    /// a mask of the word's conditions (all 64 packed if the word is busy, else each of its
    /// lanes') splits its lanes without a branch per lane.
    #[inline(always)]
    fn split_into(&self, conditions: &[bool], then_: &mut LaneSet, else_: &mut LaneSet) {
        // Lanes each side gains, and the range of words they are in (kept exact, so a set
        // holding one lane of a large batch is scanned in one word, not the taken set's range).
        let mut gained = [(0, usize::MAX, 0); 2];
        for w in self.lo..self.hi {
            let lanes = self.words[w];
            if lanes == 0 {
                continue;
            }
            let start = w * 64;
            let mask = if lanes.count_ones() > 6 {
                pack(&conditions[start..conditions.len().min(start + 64)])
            } else {
                // Few lanes in this word: their own conditions only.
                let mut mask = 0;
                let mut bits = lanes;
                while bits != 0 {
                    let i = bits.trailing_zeros() as usize;
                    mask |= u64::from(conditions[start + i]) << i;
                    bits &= bits - 1;
                }
                mask
            };
            let sides = [lanes & mask, lanes & !mask];
            then_.words[w] |= sides[0];
            else_.words[w] |= sides[1];
            for (bits, (count, lo, hi)) in sides.into_iter().zip(&mut gained) {
                if bits != 0 {
                    *count += bits.count_ones() as usize;
                    *lo = (*lo).min(w);
                    *hi = w + 1;
                }
            }
        }
        for (set, (count, lo, hi)) in [then_, else_].into_iter().zip(gained) {
            if count > 0 {
                set.count += count;
                set.lo = set.lo.min(lo);
                set.hi = set.hi.max(hi);
            }
        }
    }

    /// Empties the set.
    #[inline(always)]
    fn clear(&mut self) {
        self.words[self.lo.min(self.hi)..self.hi].fill(0);
        self.count = 0;
        self.lo = usize::MAX;
        self.hi = 0;
    }

    /// Moves every waiting lane into `taken` (emptied first) and lists them, in lane order,
    /// in `out`; this set keeps `taken`'s emptied words.
    #[inline(always)]
    fn take(&mut self, taken: &mut LaneSet, out: &mut Vec<usize>) {
        taken.clear();
        std::mem::swap(self, taken);
        taken.list_into(out);
    }

    /// Lists every lane of the set, in lane order, in `out` (cleared first).
    #[inline(always)]
    fn list_into(&self, out: &mut Vec<usize>) {
        // Written into reserved room by pointer: no capacity check, no bounds check and no
        // length update per lane, and no zero-filling first. The room is 64 lanes per word of
        // the set, so however many bits are set it cannot be passed.
        out.clear();
        out.reserve(64 * self.words.len());
        let room = out.as_mut_ptr();
        let mut k = 0;
        for w in self.lo..self.hi {
            let mut bits = self.words[w];
            let base = w * 64;
            while bits != 0 {
                // SAFETY: `k` counts the set bits of the words before this one in `lo..hi`
                // and of this one so far: below `64 * words.len()`, the reserved room.
                unsafe { room.add(k).write(base + bits.trailing_zeros() as usize) };
                k += 1;
                bits &= bits - 1;
            }
        }
        // SAFETY: the first `k` slots (within the reserved room) were each written above.
        unsafe { out.set_len(k) };
    }
}

/// Up to 64 conditions packed into a mask, bit `i` for `conditions[i]`: eight at a time, as
/// eight 0/1 bytes whose product with a constant gathers their low bits into its top byte.
#[inline(always)]
fn pack(conditions: &[bool]) -> u64 {
    // SAFETY: a `bool` is one byte holding 0 or 1, a valid `u8`; the view has the same
    // length and lifetime as `conditions`. Eight of them are then read as one word.
    let bytes: &[u8] =
        unsafe { std::slice::from_raw_parts(conditions.as_ptr().cast(), conditions.len()) };
    let mut mask = 0;
    let mut eights = bytes.chunks_exact(8);
    for (j, c) in eights.by_ref().enumerate() {
        let word = u64::from_le_bytes(c.try_into().unwrap_or([0; 8]));
        let gathered = word.wrapping_mul(0x0102_0408_1020_4080) >> 56;
        mask |= gathered << (8 * j);
    }
    let base = bytes.len() - eights.remainder().len();
    for (i, &c) in eights.remainder().iter().enumerate() {
        mask |= u64::from(c) << (base + i);
    }
    mask
}

#[cfg(test)]
mod tests {
    use super::{pack, DepthRule, LaneSet, Order, Queue, ReturnStacks, WaitingSets};
    use crate::policy::unsplit_conditions;
    use crate::{Config, Executable, Kernel, Schedule};
    use autobatch_ir::{Block, DType, HighProgram, KernelId, ProgramBuilder, Type};
    use autobatch_testkit::conformance;

    /// The blocks of `program`'s lowered form whose last kernel splits the lanes, by name.
    fn split_blocks(program: HighProgram) -> Vec<String> {
        let exe = Executable::new(program, Vec::new()).expect("a valid program");
        (0..exe.lowered.blocks.len())
            .filter(|&b| exe.vm_plan.split[b].is_some())
            .map(|b| exe.lowered.block(Block::new(b)).name.clone())
            .collect()
    }

    /// A condition left to its branch splits, in a recursive function and in a loop whose
    /// edges pop it (a pop of a variable without a stack does nothing in the VM, so it is no
    /// read); one read after the branch, by its own kernel or not last among the kernel's
    /// outputs does not.
    #[test]
    fn only_a_condition_left_to_its_branch_is_split() {
        let mut kernels = 0;
        let mut namer = |_: &str| {
            kernels += 1;
            KernelId::new(kernels - 1)
        };
        let fib = conformance::fibonacci_function_calls(&mut namer, autobatch_ir::DType::I64);
        assert_eq!(split_blocks(fib), ["enter_fib"]);
        let mut b = ProgramBuilder::new();
        let (x, y) = (b.var("x", Type::I64), b.var("y", Type::I64));
        let c = b.var("c", Type::BOOL);
        let f = b.function("f");
        b.signature(f, &[x], &[y]);
        let (e, body, done) = (b.block(f, "e"), b.block(f, "body"), b.block(f, "done"));
        b.prim(e, &[c], &[x], KernelId::new(0), "x > 0");
        b.branch(e, c, body, done);
        b.prim(body, &[x, c], &[x], KernelId::new(1), "(x - 1, x > 1)");
        b.branch(body, c, body, done);
        b.prim(done, &[y], &[x], KernelId::new(2), "x");
        b.ret(done);
        let program = b.finish(f).expect("a valid program");
        let exe = Executable::new(program.clone(), Vec::new()).expect("a valid program");
        let popped = exe.lowered.blocks.iter().any(|data| {
            data.ops
                .iter()
                .any(|op| matches!(op, autobatch_ir::Op::Pop(vars) if vars.contains(&c)))
        });
        assert!(
            popped,
            "the loop's edges pop the condition:\n{}",
            *exe.lowered
        );
        assert_eq!(split_blocks(program), ["e", "body"]);
        for (case, program) in unsplit_conditions() {
            assert!(split_blocks(program).is_empty(), "{case}");
        }
    }

    /// `Auto` takes blocks by the most lanes exactly where the program calls a batched
    /// primitive (here fib's first kernel made one), and the other schedules are what they
    /// say whatever the program.
    #[test]
    fn auto_takes_the_most_lanes_only_where_a_batched_primitive_is_called() {
        let fib =
            || conformance::fibonacci_function_calls(&mut conformance::numbering(), DType::I64);
        let lane_wise = Executable::new(fib(), Vec::new()).expect("a valid program");
        let batched = vec![Kernel::batched(|_, _| Ok(()))];
        let batched = Executable::new(fib(), batched).expect("a valid program");
        let most = |exe: &Executable, schedule| {
            let config = Config {
                schedule,
                ..Config::default()
            };
            matches!(exe.vm_plan.order(&config), Order::MostLanes { .. })
        };
        assert!(!most(&lane_wise, Schedule::Auto));
        assert!(most(&batched, Schedule::Auto));
        for exe in [&lane_wise, &batched] {
            assert!(most(exe, Schedule::MostLanes) && !most(exe, Schedule::LowestBlock));
        }
    }

    /// Depths are held where only calls enter the blocks where counted calls start (fib in
    /// functions, whose main jumps into it, or hand-lowered, whose main calls it; a loop
    /// without calls), counted where a recursive tail call's jump enters one too.
    #[test]
    fn depths_are_held_unless_a_jump_enters_a_counted_block() {
        let rule = |program: HighProgram| {
            let exe = Executable::new(program, Vec::new()).expect("a valid program");
            exe.vm_plan.depth
        };
        let kernels = conformance::numbering;
        let fib = conformance::fibonacci_function_calls(&mut kernels(), DType::I64);
        assert_eq!(rule(fib), DepthRule::Held { base: 1 });
        let countdown = conformance::countdown(&mut kernels());
        assert_eq!(rule(countdown), DepthRule::Held { base: 0 });
        assert_eq!(rule(conformance::gcd(&mut kernels())), DepthRule::Counted);
        assert_eq!(
            rule(conformance::iota_sum(&mut kernels())),
            DepthRule::Counted
        );
        let lowered = conformance::fibonacci_program(&mut kernels());
        let exe = Executable::new(lowered, Vec::new()).expect("a valid program");
        assert_eq!(exe.vm_plan.depth, DepthRule::Held { base: 0 });
    }

    fn queue(blocks: usize, batch: usize) -> Queue<'static> {
        Queue {
            waiting: WaitingSets::new(blocks, batch, Order::Lowest, Vec::new),
            lanes: Vec::new(),
            taken: LaneSet::new(batch),
            taken_valid: false,
            yes: Vec::new(),
            no: Vec::new(),
            returning: vec![Vec::new(); blocks + 1],
            returned: Vec::new(),
            targets: Vec::new(),
        }
    }

    /// Every mutable way to a block's set, and every list given to a block, lowers the bound
    /// the next block is looked for from: lanes added below the last block found are found
    /// next, whichever way they came.
    #[test]
    fn lanes_added_below_the_last_block_found_are_found() {
        let mut w = WaitingSets::new(6, 100, Order::Lowest, Vec::new);
        let (mut taken, mut lanes) = (LaneSet::new(100), Vec::new());
        assert_eq!(w.first(), None);
        w[4].extend(&[1]);
        assert_eq!(w.first(), Some(4));
        w[4].take(&mut taken, &mut lanes);
        w[2].extend(&[5]);
        assert_eq!(w.first(), Some(2));
        w[2].take(&mut taken, &mut lanes);
        let (three, zero) = w.pair_mut(3, 0);
        three.extend(&[7]);
        zero.extend(&[8]);
        assert_eq!(w.first(), Some(0));
        w[0].take(&mut taken, &mut lanes);
        assert_eq!(w.first(), Some(3));
        w[3].take(&mut taken, &mut lanes);
        w.give(1, &mut vec![9]);
        assert_eq!(w.first(), Some(1));
        w.lists[1].clear();
        assert_eq!(w.first(), None);
    }

    /// In the order of the most lanes, the block with the most lanes waiting (in its set and
    /// its list) runs next, the lowest of those with as many, and a block calling a batched
    /// primitive only when no other has lanes; lanes never go on without waiting.
    #[test]
    fn the_most_lanes_order_runs_the_fullest_block_and_batched_ones_last() {
        let batched = [false, false, true, false, false];
        let mut w = WaitingSets::new(5, 100, Order::MostLanes { batched: &batched }, Vec::new);
        let (mut taken, mut lanes) = (LaneSet::new(100), Vec::new());
        w[0].extend(&[1]);
        w[1].extend(&[2, 3]);
        w.give(3, &mut vec![4, 5]);
        w[2].extend(&[6, 7, 8, 9]);
        // Blocks 1 and 3 hold two lanes each (a set, a list): the lower runs; the batched
        // block 2, with more, waits.
        assert_eq!(w.first(), Some(1));
        w[1].take(&mut taken, &mut lanes);
        w[3].extend(&[10]);
        assert_eq!(w.first(), Some(3));
        assert!(!w.runs_next(4), "lanes always wait in this order");
        let listed = std::mem::take(&mut w.lists[3]);
        w[3].extend(&listed);
        w[3].take(&mut taken, &mut lanes);
        assert_eq!(w.first(), Some(0));
        w[0].take(&mut taken, &mut lanes);
        assert_eq!(
            w.first(),
            Some(2),
            "the batched block runs once no other has lanes"
        );
        w[2].take(&mut taken, &mut lanes);
        assert_eq!(w.first(), None);
        // In the lowest-first order the lowest block runs, and lanes go on where none wait
        // at or below their block.
        let mut w = WaitingSets::new(5, 100, Order::Lowest, Vec::new);
        w[2].extend(&[6, 7, 8, 9]);
        w[3].extend(&[1]);
        assert_eq!(w.first(), Some(2));
        assert!(w.runs_next(1) && !w.runs_next(2));
    }

    /// Lanes sent to a block where none wait stay listed and run from the list (its set made
    /// only when asked for), whether that block runs next or after a lower one; lanes sent
    /// where some wait join its set, and a list joins its block's set when that block runs
    /// with both. A split's sides are listed each at its block where none wait there.
    #[test]
    fn lanes_sent_on_run_from_their_list_or_join_their_set() {
        let mut q = queue(3, 200);
        q.waiting[1].extend(&[3, 70, 199]);
        assert_eq!(q.next_block(), Some(1));
        q.take(1);
        assert_eq!((q.lanes.clone(), q.taken_valid), (vec![3, 70, 199], true));
        q.send(2);
        assert_eq!(q.waiting.lists[2], [3, 70, 199]);
        assert!(q.waiting.sets.iter().all(LaneSet::is_empty));
        assert_eq!(q.all_waiting(), [3, 70, 199]);
        assert_eq!(q.next_block(), Some(2));
        q.take(2);
        assert_eq!((q.lanes.clone(), q.taken_valid), (vec![3, 70, 199], false));
        assert!(q.waiting.lists[2].is_empty());
        let mut listed = Vec::new();
        q.taken().list_into(&mut listed);
        assert_eq!(listed, [3, 70, 199]);

        // Sent to block 2 while a lane waits at block 1: block 1 runs first, and the lanes
        // sent stay listed at block 2.
        q.waiting[1].extend(&[5]);
        q.send(2);
        assert_eq!(q.all_waiting(), [3, 5, 70, 199]);
        assert_eq!(q.next_block(), Some(1));
        q.take(1);
        assert_eq!(q.lanes, [5]);
        assert_eq!(q.next_block(), Some(2));
        assert!(q.waiting[2].is_empty());
        q.take(2);
        assert_eq!((q.lanes.clone(), q.taken_valid), (vec![3, 70, 199], false));

        // A block with lanes waiting gets the sent ones in its set.
        q.waiting[0].extend(&[1]);
        q.send(0);
        assert_eq!(q.waiting[0].count, 4);
        assert!(q.waiting.lists[0].is_empty());

        // A block with lanes in its list and its set runs them all, in lane order.
        let mut q = queue(3, 200);
        q.waiting.give(1, &mut vec![2, 9, 150]);
        q.waiting.give(1, &mut vec![4, 100]);
        assert_eq!(
            (q.waiting.lists[1].clone(), q.waiting[1].count),
            (vec![2, 9, 150], 2)
        );
        q.take(1);
        assert_eq!(
            (q.lanes.clone(), q.taken_valid),
            (vec![2, 4, 9, 100, 150], true)
        );
        assert!(!q.waiting.has_lanes(1));

        // A split: each side listed where no lane waits, into the set where some do (a
        // lane waits at block 0, so neither side runs next).
        let mut q = queue(3, 200);
        q.waiting[0].extend(&[0]);
        (q.yes, q.no) = (vec![4, 8], vec![6]);
        assert_eq!(q.send_split(2, 1), None);
        assert_eq!(
            (q.waiting.lists[2].clone(), q.waiting.lists[1].clone()),
            (vec![4, 8], vec![6])
        );
        assert!(q.yes.is_empty() && q.no.is_empty());
        (q.yes, q.no) = (vec![5], Vec::new());
        assert_eq!(q.send_split(2, 1), None);
        assert_eq!(q.waiting[2].count, 1);
        assert_eq!(q.all_waiting(), [0, 4, 5, 6, 8]);
    }

    /// Lanes go on running at the block they are sent to, without waiting there, where
    /// lowest first would run them there next as they are: no lane waits at it or below it,
    /// and it is not the halt. A split carries its lower side that has lanes, the other
    /// waiting.
    #[test]
    fn lanes_that_would_run_next_go_on_without_waiting() {
        let mut q = queue(4, 200);
        q.lanes = vec![3, 9];
        assert_eq!(q.send_or_carry(2), Some(2));
        assert_eq!((q.lanes.clone(), q.all_waiting()), (vec![3, 9], vec![]));
        // Lanes wait at block 1: block 2 does not run next, so the lanes wait there.
        q.waiting[1].extend(&[4]);
        assert_eq!(q.send_or_carry(2), None);
        assert_eq!(q.waiting.lists[2], [3, 9]);
        // Block 1 itself has lanes: the sent ones join them.
        q.lanes = vec![7];
        assert_eq!(q.send_or_carry(1), None);
        assert_eq!(q.waiting[1].count, 2);
        // The halt is never run.
        let mut q = queue(4, 200);
        q.lanes = vec![5];
        assert_eq!(q.send_or_carry(4), None);
        assert_eq!(
            (q.waiting.lists[4].clone(), q.next_block()),
            (vec![5], None)
        );
        // A split: the lower block's side goes on, the higher waits; with no lane on the
        // lower side, the higher one goes on.
        let mut q = queue(4, 200);
        (q.yes, q.no) = (vec![4, 8], vec![6]);
        assert_eq!(q.send_split(3, 1), Some(1));
        assert_eq!(
            (q.lanes.clone(), q.waiting.lists[3].clone()),
            (vec![6], vec![4, 8])
        );
        assert!(q.yes.is_empty() && q.no.is_empty());
        let mut q = queue(4, 200);
        (q.yes, q.no) = (vec![4, 8], Vec::new());
        assert_eq!(q.send_split(3, 1), Some(3));
        assert_eq!((q.lanes.clone(), q.all_waiting()), (vec![4, 8], vec![]));
    }

    /// A return pass lists each lane for the block its last return address names, in lane
    /// order, and a lane without one (its stack empty: it returns from main) for none; the
    /// lists go to their blocks as any list does.
    #[test]
    fn returning_lanes_are_listed_by_the_block_they_return_to() {
        let mut q = queue(5, 100);
        let mut returns = ReturnStacks::new(100, false);
        returns.push(&[1, 3, 5, 70], Block::new(2), &[]);
        returns.push(&[3, 70], Block::new(4), &[]);
        assert_eq!((returns.frames, returns.top), (6, 2));
        q.waiting[4].extend(&[8]);
        let one = returns.pop(
            &[1, 3, 5, 9, 70],
            (&mut q.returning, &mut q.returned, &mut q.targets),
            &mut [],
        );
        assert_eq!((returns.frames, one), (2, None));
        assert_eq!(q.returned, [2, 4]);
        assert_eq!(
            (q.returning[2].clone(), q.returning[4].clone()),
            (vec![1, 5], vec![3, 70])
        );
        q.send_returned();
        assert!(q.returned.is_empty() && q.returning.iter().all(Vec::is_empty));
        assert_eq!(q.waiting.lists[2], [1, 5]);
        assert_eq!((q.waiting.lists[4].len(), q.waiting[4].count), (0, 3));
        assert_eq!(q.all_waiting(), [1, 3, 5, 8, 70]);
        // Counted depths: each lane's caller's depth comes back with its return address.
        let mut returns = ReturnStacks::new(100, true);
        let mut depth = vec![0; 100];
        depth[7] = 4;
        returns.push(&[7], Block::new(1), &depth);
        depth[7] = 5;
        let one = returns.pop(
            &[7],
            (&mut q.returning, &mut q.returned, &mut q.targets),
            &mut depth,
        );
        assert_eq!((depth[7], one), (4, Some(1)));
    }

    /// A pass whose lanes all return to one block names it and lists no lane (they go there
    /// as they came, joining its set if lanes wait there); a pass whose lanes all return from
    /// main names none and lists none.
    #[test]
    fn lanes_returning_to_one_block_go_there_as_they_came() {
        let mut q = queue(5, 100);
        let mut returns = ReturnStacks::new(100, false);
        returns.push(&[2, 4, 6], Block::new(3), &[]);
        returns.push(&[4], Block::new(1), &[]);
        let sends = (&mut q.returning[..], &mut q.returned, &mut q.targets);
        assert_eq!(returns.pop(&[2, 6], sends, &mut []), Some(3));
        assert!(q.returned.is_empty() && q.returning.iter().all(Vec::is_empty));
        let sends = (&mut q.returning[..], &mut q.returned, &mut q.targets);
        assert_eq!(returns.pop(&[2, 6, 9], sends, &mut []), None);
        assert!(q.returned.is_empty() && q.returning.iter().all(Vec::is_empty));
        assert_eq!(returns.frames, 2);
    }

    /// Halted lanes wait at the block past the last one, which never runs: the run is over
    /// once no lane waits elsewhere, and the lanes there are not running (a step-budget error
    /// leaves them out).
    #[test]
    fn halted_lanes_wait_last_and_are_not_running() {
        let mut q = queue(3, 200);
        q.waiting[1].extend(&[3, 70]);
        q.waiting[0].extend(&[5]);
        assert_eq!(q.next_block(), Some(0));
        q.take(0);
        q.send(3);
        assert_eq!(q.waiting.lists[3], [5]);
        assert_eq!(q.all_waiting(), [3, 70]);
        assert_eq!(q.next_block(), Some(1));
        q.take(1);
        q.send(3);
        assert_eq!(q.all_waiting(), Vec::<usize>::new());
        assert_eq!(q.next_block(), None);
        assert_eq!((q.waiting.lists[3].len(), q.waiting[3].count), (1, 2));
    }

    #[test]
    fn packed_conditions_match_bit_by_bit() {
        for byte in 0..=255u32 {
            let eight: Vec<bool> = (0..8).map(|i| byte >> i & 1 == 1).collect();
            assert_eq!(pack(&eight), u64::from(byte));
        }
        let many: Vec<bool> = (0..61).map(|i| i % 3 == 0 || i == 60).collect();
        let expected = (0..61).filter(|&i| many[i]).fold(0u64, |m, i| m | 1 << i);
        assert_eq!(pack(&many), expected);
        assert_eq!(pack(&[true; 64]), u64::MAX);
    }

    #[test]
    fn lane_sets_give_lanes_back_in_order_and_empty() {
        let mut s = LaneSet::new(200);
        let mut taken = LaneSet::new(200);
        s.extend(&[3, 64, 130, 199]);
        s.extend(&[0]);
        assert_eq!(s.count, 5);
        let mut out = vec![42];
        s.take(&mut taken, &mut out);
        assert_eq!(out, vec![0, 3, 64, 130, 199]);
        assert!(s.is_empty());
        s.list_into(&mut out);
        assert!(out.is_empty());
        s.extend(&[70]);
        s.take(&mut taken, &mut out);
        assert_eq!(out, vec![70]);
        assert_eq!(taken.count, 1);

        let mut other = LaneSet::new(200);
        other.extend(&[1, 5, 130, 199]);
        other.take(&mut taken, &mut out);
        let (mut t, mut e) = (LaneSet::new(200), LaneSet::new(200));
        e.extend(&[2]);
        let mut conditions = vec![false; 200];
        conditions[130] = true;
        conditions[5] = true;
        conditions[6] = true;
        taken.split_into(&conditions, &mut t, &mut e);
        assert_eq!((t.count, e.count), (2, 3));
        assert_eq!((t.lo, t.hi, e.lo, e.hi), (0, 3, 0, 4), "ranges are exact");
        let (mut one, mut rest) = (LaneSet::new(200), LaneSet::new(200));
        let mut first_only = vec![false; 200];
        first_only[1] = true;
        taken.split_into(&first_only, &mut one, &mut rest);
        assert_eq!((one.lo, one.hi, one.count), (0, 1, 1));
        t.list_into(&mut out);
        assert_eq!(out, vec![5, 130]);
        e.list_into(&mut out);
        assert_eq!(out, vec![1, 2, 199]);
        e.add(&t);
        e.list_into(&mut out);
        assert_eq!((out, e.count), (vec![1, 2, 5, 130, 199], 5));
    }
}

//! The full VM: per-lane program counters over the lowered program, with lanes re-converging
//! across recursion depths.
//!
//! Each step runs the lowest-numbered block that has any lane waiting, on exactly those lanes.
//! Lanes wait in per-block sets instead of a program-counter array that is scanned every
//! step, so a step costs in proportion to the lanes it runs, not to the batch size; a set is a
//! bitset, so the lanes come out in lane order without sorting and nothing allocates per step.
//! Return addresses live on per-lane stacks (the program counter's stack), with "halt" beneath.
//! A block that does nothing here (its pops are of variables without a stack, and it ends in a
//! goto: the edges lowering adds to a loop) is not run: lanes sent to it go straight on, so it
//! counts no step and no run in [`Stats`].

use crate::config::Config;
use crate::depth::{counted_entries, limit_error};
use crate::error::{Result, RuntimeError};
use crate::exec::Exec;
use crate::policy::{dead_vectors, LaneSteps};
use crate::stats::Stats;
use crate::storage::Stacks;
use autobatch_ir::passes::liveness;
use autobatch_ir::{Allocation, Block, KernelRef, LoweredProgram, Op, Program, Terminator, Var};

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
    /// at a branch would otherwise cost a loop a second step per iteration. A cycle of such
    /// blocks is kept (its lanes run it step by step, so the step budget still ends it).
    forward: Vec<Block>,
}

impl Plan {
    /// The plan of lowered `program`, lowered from `high` (`None` if written lowered).
    pub(crate) fn new(program: &LoweredProgram, high: Option<&Program>) -> Plan {
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
        let dead_vectors = dead_vectors(program, &liveness(program), STACKS);
        let entries = counted_entries(program, high);
        let passes_to = |b: usize| {
            let data = program.block(Block::new(b));
            let idle = data.ops.iter().enumerate().all(|(i, op)| match op {
                Op::Pop(_) => pops[b][i].is_empty(),
                Op::Prim(p) => {
                    p.kernel == KernelRef::Assign && p.outs.is_empty() && p.ins.is_empty()
                }
                Op::Call(_) => false,
            });
            match data.term {
                Terminator::Goto(t)
                    if idle && dead_vectors[b].is_empty() && entries[b].is_none() =>
                {
                    Some(t)
                }
                _ => None,
            }
        };
        let forward = (0..program.blocks.len())
            .map(|b| {
                // Followed at most once per block: a longer chain has a cycle.
                let mut at = Block::new(b);
                for _ in 0..program.blocks.len() {
                    match passes_to(at.index()) {
                        Some(next) => at = next,
                        None => return at,
                    }
                }
                Block::new(b)
            })
            .collect();
        Plan {
            pops,
            push_copies,
            dead_vectors,
            entries,
            forward,
        }
    }
}

/// One return address: the block to return to and the caller's call depth, restored on return
/// (a tail call enters its callee without a return address of its own).
type Return = (Block, u32);

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
    let mut lanes = lists.take();
    let ran = run_bits(exec, plan, config, stats, (&all, &mut lanes));
    lists.give(all);
    lists.give(lanes);
    exec.storage.keep_lane_lists(lists);
    ran
}

/// [`run_steps`] in the copy the CPU can run (see [`run`]).
fn run_bits(
    exec: &mut Exec<'_>,
    plan: &Plan,
    config: &Config,
    stats: &mut Stats,
    lists: (&[usize], &mut Vec<usize>),
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
    stats: &mut Stats,
    lists: (&[usize], &mut Vec<usize>),
) -> Result<()> {
    run_steps(exec, plan, config, stats, lists)
}

/// The step loop of [`run`], inlined into each of its copies: `all` lists every lane, `lanes`
/// holds the lanes of the block being run.
#[inline(always)]
fn run_steps(
    exec: &mut Exec<'_>,
    plan: &Plan,
    config: &Config,
    stats: &mut Stats,
    (all, lanes): (&[usize], &mut Vec<usize>),
) -> Result<()> {
    let program = exec.program;
    let batch = exec.storage.batch();
    let n_blocks = program.blocks.len();
    let mut waiting: Vec<LaneSet> = (0..n_blocks).map(|_| LaneSet::new(batch)).collect();
    let forward = |b: &Block| plan.forward[b.index()].index();
    waiting[forward(&program.main_function().entry())].extend(all);
    // The lanes of the block being run, as a set: gotos and branches pass them on word by word.
    let mut taken = LaneSet::new(batch);
    let mut returns = ReturnStacks::new(batch);
    let mut depth: Vec<u32> = vec![0; batch];
    let max_depth = config.max_stack_depth;
    let budget = config.step_budget.unwrap_or(u64::MAX);
    let mut values_lanes = Vec::new();
    // Per block, whether an indirect jump sent it lanes (kept for its allocation).
    let mut gained: Vec<bool> = Vec::with_capacity(n_blocks);
    let mut lane_steps = LaneSteps::new(config, batch);
    while let Some(index) = waiting.iter().position(|w| !w.is_empty()) {
        if lane_steps.is_none() && stats.steps >= budget {
            let mut lanes = Vec::new();
            for set in &waiting {
                set.list_into(&mut values_lanes);
                lanes.extend_from_slice(&values_lanes);
            }
            lanes.sort_unstable();
            let running = lanes.len();
            return Err(RuntimeError::StepBudget {
                budget,
                running,
                lanes,
            });
        }
        let block = Block::new(index);
        waiting[index].take(&mut taken, lanes);
        if let Some(steps) = &mut lane_steps {
            steps.run(lanes)?;
        }
        stats.record(index, lanes.len());
        let data = program.block(block);
        if let Some(function) = &plan.entries[index] {
            if let Some(lane) = enter(&mut depth, lanes, max_depth) {
                return Err(limit_error(function, lane, max_depth));
            }
        }
        for (i, op) in data.ops.iter().enumerate() {
            match op {
                Op::Prim(prim) => {
                    let fused = match plan.push_copies[index][i] {
                        Some((v, from)) => exec.storage.push_copy(v, from, lanes, block)?,
                        None => false,
                    };
                    if !fused {
                        exec.run_prim(prim, lanes, block, stats)?;
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
        for &v in &plan.dead_vectors[index] {
            exec.storage.release_rows(v, lanes);
        }
        match &data.term {
            Terminator::Goto(t) => waiting[forward(t)].add(&taken),
            Terminator::Branch { cond, then_, else_ } => {
                let conditions = exec.storage.conditions(*cond, lanes, block)?;
                let (t, e) = (forward(then_), forward(else_));
                if t == e {
                    waiting[t].add(&taken);
                } else {
                    let (low, high) = waiting.split_at_mut(t.max(e));
                    let (at_min, at_max) = (&mut low[t.min(e)], &mut high[0]);
                    let (then_set, else_set) = if t < e {
                        (at_min, at_max)
                    } else {
                        (at_max, at_min)
                    };
                    taken.split_into(conditions, then_set, else_set);
                }
            }
            Terminator::Return => {}
            Terminator::PushGoto { ret, target } => {
                let bytes = (returns.frames + lanes.len()) * std::mem::size_of::<Return>();
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
                waiting[forward(target)].add(&taken);
            }
            Terminator::IndirectGoto => {
                // One pass: each lane's last return address popped, its caller's depth
                // restored and the lane added to the block it returns to. An empty return
                // stack is the "halt" address beneath main.
                gained.clear();
                gained.resize(n_blocks, false);
                let n = returns.held.len().min(depth.len());
                let (held, depth) = (&mut returns.held[..n], &mut depth[..n]);
                let slots = &returns.slots[..];
                let mut popped = 0;
                // The lanes of one word that return to one block, gathered in a register
                // while the lanes (in rising order) keep to both, and written to that block's
                // set when they change: a write per lane would wait on the last lane's. (Each
                // set counts its new lanes once afterwards, for the same reason.)
                let (mut word_of, mut bits) = ((usize::MAX, 0), 0u64);
                let mut write = |(set, word): (usize, usize), bits| {
                    if let Some(set) = waiting.get_mut(set) {
                        set.words[word] |= bits;
                    }
                };
                for &lane in lanes.iter() {
                    if lane >= n {
                        lane_out_of_range(lane, n);
                    }
                    let Some(d) = held[lane].checked_sub(1) else {
                        continue;
                    };
                    held[lane] = d;
                    popped += 1;
                    let (ret, calls) = slots[d as usize * batch + lane];
                    depth[lane] = calls;
                    let here = (ret.index(), lane / 64);
                    if here != word_of {
                        write(word_of, bits);
                        (word_of, bits) = (here, 0);
                        gained[here.0] = true;
                    }
                    bits |= 1 << (lane % 64);
                }
                write(word_of, bits);
                returns.frames -= popped;
                // The sets that gained lanes count them (this block's lanes, which waited
                // nowhere else) and cover this block's lanes' words.
                for (set, _) in waiting.iter_mut().zip(&gained).filter(|(_, &g)| g) {
                    set.gain_from(&taken);
                }
                let bytes = returns.frames * std::mem::size_of::<Return>();
                let first = || lanes.first().copied();
                exec.storage
                    .note_call_stack(bytes, block, first, String::new)?;
            }
        }
    }
    Ok(())
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
    slots: Vec<Return>,
    /// Return addresses each lane holds.
    held: Vec<u32>,
    batch: usize,
    /// Return addresses held over all lanes.
    frames: usize,
    /// The most return addresses any lane has held: while the slots have room for one more
    /// level than that, a push needs no look at the lanes' depths first.
    top: usize,
}

impl ReturnStacks {
    fn new(batch: usize) -> ReturnStacks {
        ReturnStacks {
            slots: Vec::new(),
            held: vec![0; batch],
            batch,
            frames: 0,
            top: 0,
        }
    }

    /// Pushes `ret`, with each lane's call depth, for every one of `lanes`: one pass over them.
    #[inline(always)]
    fn push(&mut self, lanes: &[usize], ret: Block, calls: &[u32]) {
        let batch = self.batch;
        if (self.top + 1) * batch > self.slots.len() {
            // Room for the deepest of these lanes' new frames (rarely: the room doubles).
            let need = lanes.iter().map(|&l| self.held[l] as usize + 1).max();
            let need = need.unwrap_or(0) * batch;
            if need > self.slots.len() {
                let grown = need.max(2 * self.slots.len());
                self.slots.resize(grown, (ret, 0));
            }
        }
        // Slices held in locals: the loop keeps their bounds in registers; the per-lane ones
        // cut to one length, so one check per lane covers both.
        let n = self.held.len().min(calls.len());
        let (held, calls, slots) = (&mut self.held[..n], &calls[..n], &mut self.slots[..]);
        let mut top = self.top;
        for &lane in lanes {
            if lane >= n {
                lane_out_of_range(lane, n);
            }
            let d = &mut held[lane];
            slots[*d as usize * batch + lane] = (ret, calls[lane]);
            *d += 1;
            top = top.max(*d as usize);
        }
        self.top = top;
        self.frames += lanes.len();
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

    /// Counts the lanes of `other` that were set in this set's words (none of them waited
    /// here before) and widens the range of words to include `other`'s.
    #[inline(always)]
    fn gain_from(&mut self, other: &LaneSet) {
        let (lo, hi) = (other.lo.min(other.hi), other.hi);
        let words = self.words[lo..hi].iter().zip(&other.words[lo..hi]);
        self.count += words
            .map(|(a, b)| (a & b).count_ones() as usize)
            .sum::<usize>();
        self.lo = self.lo.min(other.lo);
        self.hi = self.hi.max(other.hi);
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

    /// Moves every waiting lane into `taken` (emptied first) and lists them, in lane order,
    /// in `out`; this set keeps `taken`'s emptied words.
    #[inline(always)]
    fn take(&mut self, taken: &mut LaneSet, out: &mut Vec<usize>) {
        taken.words[taken.lo.min(taken.hi)..taken.hi].fill(0);
        taken.count = 0;
        taken.lo = usize::MAX;
        taken.hi = 0;
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
    use super::{pack, LaneSet};

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

        // Lanes of another set written into the words, then counted and covered by the
        // range they came from (its other lanes not counted).
        let mut from = LaneSet::new(200);
        from.extend(&[65, 70, 190]);
        let mut to = LaneSet::new(200);
        to.extend(&[3, 66]);
        to.words[190 / 64] |= 1 << (190 % 64);
        to.gain_from(&from);
        assert_eq!((to.lo, to.hi, to.count), (0, 3, 3));
        let mut listed = Vec::new();
        to.list_into(&mut listed);
        assert_eq!(listed, vec![3, 66, 190]);
    }
}

//! What both interpreters decide the same way about a block: which vector variables it lets
//! go of when it ends, whether its last kernel may split its lanes by the branch condition as
//! it computes it, how a branch splits its lanes (and how lanes arriving from two places wait
//! in order), and (with lane isolation) which lanes ran past the step budget.

use crate::config::Config;
use crate::error::{Result, RuntimeError};
use crate::storage::leaf::Leaf;
use crate::storage::{split_below, Stacks};
use autobatch_ir::passes::Liveness;
use autobatch_ir::{Allocation, Block, PrimOp, Program, Terminator, Var};

/// The condition of block `b`'s branch, if `prim`, the block's last kernel, may split the
/// block's lanes by it as it computes it: it writes the condition once, as its last output
/// (where `#[autobatch]` kernels put it), does not read it, and leaves it to the branch alone
/// (not live after the block by `live`), so it need never be written.
pub(crate) fn split_condition(
    program: &Program,
    live: &Liveness,
    b: Block,
    prim: &PrimOp,
) -> Option<Var> {
    let Terminator::Branch { cond, .. } = program.block(b).term else {
        return None;
    };
    let provable = prim.outs.last() == Some(&cond)
        && prim.outs.iter().filter(|&&v| v == cond).count() == 1
        && !prim.ins.contains(&cond)
        && !live.block(b).live_out.contains(&cond);
    provable.then_some(cond)
}

/// Per block of `program`: the variables with shared vector rows that the block reads or
/// writes and that are dead when it ends (by `live`), which an interpreter releases there
/// instead of keeping their rows until the next write: the arena then holds live values only,
/// and a row is handed out again while it is still in cache. Stacked (FULL) variables are left
/// to their pops when `stacks` honours them.
pub(crate) fn dead_vectors(program: &Program, live: &Liveness, stacks: Stacks) -> Vec<Vec<Var>> {
    let shares_rows = |v: Var| {
        let d = program.var(v);
        let kept = match d.alloc {
            Allocation::Null => false,
            Allocation::Full => stacks == Stacks::Ignore,
            Allocation::Temporary | Allocation::Register => true,
        };
        kept && d.ty.leaves().into_iter().any(Leaf::is_shared_type)
    };
    program
        .blocks
        .iter()
        .enumerate()
        .map(|(b, data)| {
            let out = &live.block(Block::new(b)).live_out;
            let mut touched: Vec<Var> = data
                .ops
                .iter()
                .flat_map(|op| op.reads().iter().chain(op.writes()).copied())
                .filter(|&v| shares_rows(v) && !out.contains(&v))
                .collect();
            touched.sort_unstable();
            touched.dedup();
            touched
        })
        .collect()
}

/// Splits `lanes` (in order) into those whose condition holds, written to `then_`, and the
/// others, written to `else_`, both in order (as [`split_below`] splits them). Not inlined:
/// its loop then compiles the same whatever the interpreter's loop around it holds.
#[inline(never)]
pub(crate) fn partition_into(
    lanes: &[usize],
    conditions: &[bool],
    then_: &mut Vec<usize>,
    else_: &mut Vec<usize>,
) {
    // SAFETY: `split_below` passes lanes below `conditions.len()`.
    split_below(lanes, conditions.len(), (then_, else_), |_, lane| unsafe {
        *conditions.get_unchecked(lane)
    });
}

/// Writes sorted `a` and sorted `b` (no lane in both) into `out` in lane order, replacing what
/// it held. Branch-free while both have lanes left (each step writes the smaller head and
/// advances its side), so interleaved lists (the two arms of an unpredictable branch meeting
/// again) cost no mispredictions.
fn merge_sorted(a: &[usize], b: &[usize], out: &mut Vec<usize>) {
    let total = a.len() + b.len();
    out.clear();
    out.reserve(total);
    let room = &mut out.spare_capacity_mut()[..total];
    let (mut i, mut j, mut k) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        let from_a = usize::from(x < y);
        room[k].write(if x < y { x } else { y });
        i += from_a;
        j += 1 - from_a;
        k += 1;
    }
    for &lane in a[i..].iter().chain(&b[j..]) {
        room[k].write(lane);
        k += 1;
    }
    // SAFETY: the loops wrote the first `k` (= `total`) slots of the spare capacity.
    unsafe { out.set_len(k) };
}

/// The lanes waiting at one block of the stackless interpreter, taken in lane order.
///
/// The list is a sorted prefix and a tail of arrivals not yet merged. An arrival in order
/// after a sorted list extends it; one at least a quarter the size of a sorted list is merged
/// in at once ([`merge_sorted`]); a smaller one out of order joins the tail, which is put in
/// order with the prefix once, when the block runs (through a bit set of the lanes where the
/// tail is long). So lanes arriving a few at a time (leaving a loop a few per iteration and
/// gathering at its exit while the others go round) cost one ordering when the block runs,
/// not a pass over every lane waiting on each arrival.
#[derive(Default)]
pub(crate) struct Waiting {
    lanes: Vec<usize>,
    sorted: usize,
}

impl Waiting {
    /// A list holding `lanes`, which are in lane order.
    #[cfg(test)]
    pub(crate) fn new(lanes: Vec<usize>) -> Waiting {
        let sorted = lanes.len();
        Waiting { lanes, sorted }
    }

    /// The waiting lanes, in no particular order.
    pub(crate) fn lanes(&self) -> &[usize] {
        &self.lanes
    }

    /// Adds `incoming` (sorted, none of them waiting already), through `scratch`. An empty
    /// list takes `incoming` itself and returns the list it held, else `incoming` is returned
    /// once copied in: either way the returned list's allocation is the caller's to reuse.
    pub(crate) fn add(&mut self, incoming: Vec<usize>, scratch: &mut Vec<usize>) -> Vec<usize> {
        if self.lanes.is_empty() {
            self.sorted = incoming.len();
            return std::mem::replace(&mut self.lanes, incoming);
        }
        let all_sorted = self.sorted == self.lanes.len();
        if all_sorted && self.lanes.last() < incoming.first() {
            self.lanes.extend_from_slice(&incoming);
            self.sorted = self.lanes.len();
        } else if all_sorted && incoming.len() * 4 >= self.lanes.len() {
            merge_sorted(&self.lanes, &incoming, scratch);
            std::mem::swap(&mut self.lanes, scratch);
            self.sorted = self.lanes.len();
        } else {
            self.lanes.extend_from_slice(&incoming);
        }
        incoming
    }

    /// The list's allocation, whatever it holds.
    pub(crate) fn into_list(self) -> Vec<usize> {
        self.lanes
    }

    /// Takes the waiting lanes, in lane order, leaving none (`scratch` holds a merge or a bit
    /// set). An unsorted tail of many lanes (a loop's exit, where lanes arrive a few at each
    /// iteration) is put in order through a bit set of the lanes, in two passes over them and
    /// one over the set's words, where sorting it would compare each lane some `log2(tail)`
    /// times; a short tail is sorted and merged with the prefix.
    pub(crate) fn take(&mut self, scratch: &mut Vec<usize>) -> Vec<usize> {
        if self.sorted < self.lanes.len() {
            let (prefix, tail) = self.lanes.split_at_mut(self.sorted);
            let top = tail.iter().chain(prefix.last()).copied().max().unwrap_or(0);
            let words = top / WORD_BITS + 1;
            if tail.len() >= SET_FROM && words <= tail.len() * 4 {
                order_by_set(&mut self.lanes, words, scratch);
            } else {
                tail.sort_unstable();
                merge_sorted(prefix, tail, scratch);
                std::mem::swap(&mut self.lanes, scratch);
            }
        }
        self.sorted = 0;
        std::mem::take(&mut self.lanes)
    }
}

/// Bits in one word of [`order_by_set`]'s set.
const WORD_BITS: usize = usize::BITS as usize;

/// The shortest unsorted tail [`Waiting::take`] orders through a bit set: sorting fewer lanes
/// takes a few comparisons each.
const SET_FROM: usize = 32;

/// Puts `lanes` (distinct, each below `words * WORD_BITS`) in lane order through a bit set of
/// `words` words held in `set`.
fn order_by_set(lanes: &mut Vec<usize>, words: usize, set: &mut Vec<usize>) {
    set.clear();
    set.resize(words, 0);
    for &lane in lanes.iter() {
        set[lane / WORD_BITS] |= 1 << (lane % WORD_BITS);
    }
    let n = lanes.len();
    lanes.clear();
    for (w, &word) in set.iter().enumerate() {
        let mut bits = word;
        while bits != 0 {
            lanes.push(w * WORD_BITS + bits.trailing_zeros() as usize);
            bits &= bits - 1;
        }
    }
    debug_assert_eq!(lanes.len(), n, "the waiting lanes are distinct");
}

/// Block executions per lane, with [`Config::lane_isolation`]: each lane's own count is held
/// against the step budget (as the reference counts it), so the lanes that fail are exactly
/// those that ran too long, whatever the others did.
pub(crate) struct LaneSteps {
    counts: Vec<u64>,
    budget: u64,
}

impl LaneSteps {
    /// Counters for `batch` lanes if `config` isolates lanes and has a step budget.
    pub(crate) fn new(config: &Config, batch: usize) -> Option<LaneSteps> {
        let budget = config.step_budget.filter(|_| config.lane_isolation)?;
        Some(LaneSteps {
            counts: vec![0; batch],
            budget,
        })
    }

    /// Counts one block execution for each of `lanes`; fails with the lanes past the budget.
    pub(crate) fn run(&mut self, lanes: &[usize]) -> Result<()> {
        let mut over = Vec::new();
        for &l in lanes {
            self.counts[l] += 1;
            if self.counts[l] > self.budget {
                over.push(l);
            }
        }
        if over.is_empty() {
            return Ok(());
        }
        Err(RuntimeError::StepBudget {
            budget: self.budget,
            running: over.len(),
            lanes: over,
        })
    }
}

/// Programs whose one branch's condition no kernel may split by, each with what stops it: read
/// again after the branch, read by the kernel computing it, not last among its outputs.
#[cfg(test)]
pub(crate) fn unsplit_conditions() -> Vec<(&'static str, autobatch_ir::HighProgram)> {
    use autobatch_ir::{KernelId, ProgramBuilder, Type};
    let cases = ["read after", "read by its kernel", "not last"];
    cases
        .into_iter()
        .map(|case| {
            let mut b = ProgramBuilder::new();
            let (x, y) = (b.var("x", Type::I64), b.var("y", Type::I64));
            let c = b.var("c", Type::BOOL);
            let f = b.function("f");
            b.signature(f, &[x], &[y]);
            let (e, yes, no) = (b.block(f, "e"), b.block(f, "yes"), b.block(f, "no"));
            match case {
                "read by its kernel" => {
                    b.prim(e, &[c], &[x], KernelId::new(0), "x > 0");
                    b.prim(e, &[c], &[x, c], KernelId::new(1), "x > 1 && c");
                }
                "not last" => b.prim(e, &[c, y], &[x], KernelId::new(0), "(x > 0, x)"),
                _ => b.prim(e, &[c], &[x], KernelId::new(0), "x > 0"),
            }
            b.branch(e, c, yes, no);
            let reads = match case {
                "read after" => vec![x, c],
                _ => vec![x],
            };
            b.prim(yes, &[y], &reads, KernelId::new(2), "x");
            b.ret(yes);
            b.prim(no, &[y], &[x], KernelId::new(3), "-x");
            b.ret(no);
            (case, b.finish(f).expect("a valid program"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{merge_sorted, order_by_set, partition_into, Waiting, SET_FROM};

    #[test]
    fn partitions_keep_lane_order_and_merges_restore_it() {
        let conditions = [true, false, false, true, true, false];
        let (mut t, mut f) = (vec![7], vec![9]);
        partition_into(&[0, 1, 3, 4, 5], &conditions, &mut t, &mut f);
        assert_eq!((&t[..], &f[..]), (&[0, 3, 4][..], &[1, 5][..]));
        partition_into(&[], &conditions, &mut t, &mut f);
        assert!(t.is_empty() && f.is_empty());

        let mut out = vec![7];
        merge_sorted(&[1, 5], &[0, 3, 4, 8], &mut out);
        assert_eq!(out, vec![0, 1, 3, 4, 5, 8]);
        merge_sorted(&[], &[2], &mut out);
        assert_eq!(out, vec![2]);
        merge_sorted(&[9, 10], &[], &mut out);
        assert_eq!(out, vec![9, 10]);
    }

    #[test]
    fn waiting_lanes_are_taken_in_lane_order_however_they_arrive() {
        let mut scratch = Vec::new();
        let mut w = Waiting::new(vec![2, 7]);
        // In order: appended. Comparable in size: merged. Small and out of order: appended,
        // sorted when taken.
        let kept = w.add(vec![9], &mut scratch);
        assert_eq!(kept, vec![9]);
        w.add(vec![0, 8], &mut scratch);
        assert_eq!(w.lanes(), &[0, 2, 7, 8, 9]);
        w.add((20..40).collect(), &mut scratch);
        w.add(vec![5], &mut scratch);
        w.add(vec![1, 50], &mut scratch);
        w.add(vec![3, 4, 6, 10], &mut scratch);
        let mut expected: Vec<usize> = (0..11).chain(20..40).chain([50]).collect();
        expected.sort_unstable();
        assert_eq!(w.take(&mut scratch), expected);
        assert!(w.lanes().is_empty());
        // An empty list takes the arrival itself.
        let given = vec![4, 5];
        let ptr = given.as_ptr();
        let old = w.add(given, &mut scratch);
        assert!(old.is_empty());
        let taken = w.take(&mut scratch);
        assert_eq!(taken.as_ptr(), ptr);
    }

    #[test]
    fn long_unsorted_tails_are_taken_in_lane_order_dense_or_sparse() {
        // Lanes leaving a loop a few at a time, in no order across iterations: a dense tail
        // (ordered through a bit set) and a sparse one (lanes far apart: sorted).
        for spread in [1, 1000] {
            let mut scratch = Vec::new();
            let mut w = Waiting::new(vec![3 * spread]);
            let mut expected = vec![3 * spread];
            let lanes: Vec<usize> = (0..397).map(|i| (i * 151 % 397 + 4) * spread).collect();
            for pair in lanes.chunks(2) {
                let mut pair = pair.to_vec();
                pair.sort_unstable();
                expected.extend(&pair);
                w.add(pair, &mut scratch);
            }
            assert!(w.lanes().len() > SET_FROM);
            expected.sort_unstable();
            assert_eq!(w.take(&mut scratch), expected, "spread {spread}");
        }
        // The bit set across word boundaries, the last lane in the last word.
        let mut lanes = vec![127, 0, 64, 63, 1, 65, 200];
        let mut set = vec![7; 9];
        order_by_set(&mut lanes, 200 / 64 + 1, &mut set);
        assert_eq!(lanes, vec![0, 1, 63, 64, 65, 127, 200]);
    }
}

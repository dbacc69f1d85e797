//! Variable storage by allocation for one batch: reads, writes, pushes, pops, snapshots.
//!
//! NULL variables have no storage (writes are dropped, reads are errors); TEMPORARY and
//! REGISTER variables hold one [`Leaf`] per tensor leaf with a row per lane; stacked (FULL)
//! variables' leaves also hold their saved frames, growing by doubling, with a per-lane depth.
//! Every operation touches only the rows of the lanes it is given, so its cost scales with the
//! active lanes. What kind of rows a leaf keeps is the leaf's business ([`leaf`]); this module
//! deals in variables, lanes and errors.

pub(crate) mod arena;
pub(crate) mod leaf;
mod rows;

pub(crate) use rows::{each_lane_below, split_below};

use crate::column::{width_of, Column, Element};
use crate::error::{Result, RuntimeError};
use crate::spare::{Lists, Spare};
use arena::{Arena, ArenaView};
use autobatch_ir::{Allocation, Block, Program, TensorType, Var};
use leaf::{Held, Leaf};
use std::ptr::NonNull;

/// How storage treats FULL variables' stacks: the one storage choice that differs between the
/// interpreters (each names its own).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Stacks {
    /// Full VM semantics: pushes and pops act on FULL variables.
    Honour,
    /// Stackless semantics: every variable behaves as a register; pushes and pops are no-ops.
    Ignore,
}

/// One variable's storage.
struct VarStore {
    alloc: Allocation,
    /// Leaf types, in storage order.
    types: Vec<TensorType>,
    /// Each leaf's current rows (and saved frames, if stacked); none if NULL.
    leaves: Vec<Leaf>,
    /// Frames per lane the saved rows can hold.
    levels: usize,
    /// Stacked only: saved frames per lane.
    depth: Vec<u32>,
    /// With safety checks: whether each lane has been written.
    set: Vec<bool>,
    /// Rows for every lane kept from earlier [`Storage::set_aside`]s, ready for the next.
    spare: Vec<Vec<Leaf>>,
}

/// Raw parts of a variable held as one scalar leaf in place ([`Storage::scalar_parts`]).
pub(crate) struct ScalarParts<T> {
    /// Its rows, one per lane.
    pub(crate) rows: *mut T,
    /// Saved rows, stack-major; null unless stacked.
    pub(crate) saved: *mut T,
    /// Saved frames per lane; null unless stacked.
    pub(crate) depth: *mut u32,
    /// A lane with this many frames cannot push without growth or an error: the frames the
    /// saved rows hold, at most one below the depth limit (0 unless stacked).
    pub(crate) cap: u32,
}

/// The value of one variable in some lanes, taken out of storage to be put back later (by
/// the stackless interpreter, around calls). Shared vector rows are held, not copied.
pub(crate) struct Snapshot(Vec<Held>);

impl Snapshot {
    /// Bytes it holds outside the arena.
    fn bytes(&self) -> usize {
        self.0.iter().map(Held::bytes).sum()
    }
}

/// The rows made for [`Storage::set_aside`] hold at most this share of the memory budget (one
/// part in this many), so that a run whose snapshots fit the budget still fits when some of
/// its values were set aside first.
const SPARE_SHARE: usize = 4;

/// Every lane's rows of one variable, set aside for the length of a call
/// ([`Storage::set_aside`]).
pub(crate) struct Aside(Vec<Leaf>);

impl Aside {
    /// The rows set aside, leaf by leaf.
    pub(crate) fn leaves(&self) -> &[Leaf] {
        &self.0
    }
}

/// "`dtype` with `width` elements per lane" for a column, in error messages.
fn describe_column(c: &Column) -> String {
    format!("{} with {} elements per lane", c.dtype(), c.width())
}

/// The storage of every variable of a program for one batch.
pub(crate) struct Storage<'p> {
    program: &'p Program,
    vars: Vec<VarStore>,
    /// The rows of every shared (`f64` vector) leaf.
    arena: Arena,
    batch: usize,
    vector_len: usize,
    /// Pushes that would give a lane more saved frames than this fail.
    max_depth: usize,
    safety: bool,
    stacks: Stacks,
    /// `Config::memory_budget`.
    memory_budget: Option<usize>,
    /// Bytes of saved-frame room of every stacked leaf.
    stack_bytes: usize,
    /// Bytes of the snapshots taken and not yet restored.
    held_bytes: usize,
    /// Lists of restored snapshots, kept for the next snapshots (one is taken around every
    /// stackless call).
    held_lists: Lists<Held>,
    /// Bytes of the rows made for [`set_aside`](Self::set_aside) (in use or spare).
    spare_bytes: usize,
    /// Bytes of the interpreter's own call stack (the full VM's return addresses).
    call_stack_bytes: usize,
    /// Counts the times some variable's rows or saved rows moved (saved rows grown, rows set
    /// aside, taken back or swapped for a kernel's whole output): parts taken by
    /// [`scalar_parts`](Self::scalar_parts) under another count are stale.
    moves: u64,
    /// Memory kept from an earlier run, drawn on for new columns and given the run's own at
    /// its end ([`into_spare`](Self::into_spare)).
    spare: Spare,
}

impl<'p> Storage<'p> {
    /// Storage for every variable of `program` over `batch` lanes, vectors of `vector_len`
    /// elements; pushes past `max_depth` frames fail; `safety` checks every read for a prior
    /// write in its lanes; growth past `memory_budget` bytes of stacks, snapshots and vector
    /// rows fails; columns are drawn from `spare` (memory an earlier run left) where it fits.
    pub(crate) fn new(
        program: &'p Program,
        batch: usize,
        vector_len: usize,
        max_depth: usize,
        (safety, stacks): (bool, Stacks),
        (memory_budget, mut spare): (Option<usize>, Spare),
    ) -> Self {
        let vars = program
            .vars
            .iter()
            .map(|d| {
                let types = d.ty.leaves();
                let stacked = d.alloc == Allocation::Full && stacks == Stacks::Honour;
                VarStore {
                    alloc: d.alloc,
                    leaves: if d.alloc == Allocation::Null {
                        Vec::new()
                    } else {
                        types
                            .iter()
                            .map(|t| Leaf::zeros(*t, batch, vector_len, &mut spare))
                            .collect()
                    },
                    levels: 0,
                    depth: if stacked { vec![0; batch] } else { Vec::new() },
                    set: if safety {
                        vec![false; batch]
                    } else {
                        Vec::new()
                    },
                    types,
                    spare: Vec::new(),
                }
            })
            .collect();
        Storage {
            program,
            vars,
            arena: Arena::new(vector_len),
            batch,
            vector_len,
            max_depth,
            safety,
            stacks,
            memory_budget,
            stack_bytes: 0,
            held_bytes: 0,
            held_lists: Lists::default(),
            spare_bytes: 0,
            call_stack_bytes: 0,
            moves: 0,
            spare,
        }
    }

    /// The interpreter's emptied lane lists, from the memory an earlier run left.
    pub(crate) fn take_lane_lists(&mut self) -> Lists<usize> {
        self.spare.take_lane_lists()
    }

    /// Keeps the interpreter's emptied lane lists with the memory kept for the next run.
    pub(crate) fn keep_lane_lists(&mut self, lists: Lists<usize>) {
        self.spare.keep_lane_lists(lists);
    }

    /// Ends the run: every variable's dense columns go to the memory kept for the next run.
    pub(crate) fn into_spare(self) -> Spare {
        let mut spare = self.spare;
        for store in self.vars {
            let kept = store.spare.into_iter().flatten();
            store
                .leaves
                .into_iter()
                .chain(kept)
                .for_each(|leaf| leaf.keep_in(&mut spare));
        }
        spare
    }

    /// Bytes of stacks, snapshots, rows set aside, call stack and vector rows held now.
    fn used(&self) -> usize {
        self.arena.bytes()
            + self.stack_bytes
            + self.held_bytes
            + self.spare_bytes
            + self.call_stack_bytes
    }

    /// Fails if holding `extra` more bytes would pass the memory budget; `grew` says what grew,
    /// in `block`, for `lanes`.
    fn check_memory(
        &self,
        extra: usize,
        block: Block,
        lanes: &[usize],
        grew: impl FnOnce() -> String,
    ) -> Result<()> {
        let Some(budget) = self.memory_budget else {
            return Ok(());
        };
        let used = self.used().saturating_add(extra);
        if used <= budget {
            return Ok(());
        }
        Err(RuntimeError::MemoryBudget {
            grew: grew(),
            block: self.block_name(block),
            lane: lanes.iter().copied().min().unwrap_or(0),
            used,
            budget,
        })
    }

    /// Records that the interpreter's call stack now takes `bytes`; fails, naming what
    /// `grew` and the lane `blamed` gives (asked only then), if that passes the memory budget.
    #[inline(always)]
    pub(crate) fn note_call_stack(
        &mut self,
        bytes: usize,
        block: Block,
        blamed: impl FnOnce() -> Option<usize>,
        grew: impl FnOnce() -> String,
    ) -> Result<()> {
        let before = std::mem::replace(&mut self.call_stack_bytes, bytes);
        if bytes > before
            && self
                .memory_budget
                .is_some_and(|budget| self.used() > budget)
        {
            let blamed = blamed();
            return self.check_memory(0, block, blamed.as_slice(), grew);
        }
        Ok(())
    }

    /// "variable `v`", for memory errors.
    fn variable(&self, v: Var) -> String {
        format!("variable `{}`", self.name(v))
    }

    /// Lanes in the batch.
    pub(crate) fn batch(&self) -> usize {
        self.batch
    }

    /// Elements of every vector in this batch.
    pub(crate) fn vector_len(&self) -> usize {
        self.vector_len
    }

    fn name(&self, v: Var) -> String {
        self.program.var(v).name.clone()
    }

    fn block_name(&self, b: Block) -> String {
        self.program.block(b).name.clone()
    }

    /// Whether `v`'s pushes save its value (it is FULL and storage keeps stacks).
    pub(crate) fn is_stacked(&self, v: Var) -> bool {
        self.vars[v.index()].alloc == Allocation::Full && self.stacks == Stacks::Honour
    }

    /// The leaf types of `v`, in storage order.
    pub(crate) fn types(&self, v: Var) -> &[TensorType] {
        &self.vars[v.index()].types
    }

    /// Whether `v` is NULL (has no storage).
    pub(crate) fn is_null(&self, v: Var) -> bool {
        self.vars[v.index()].alloc == Allocation::Null
    }

    /// The leaves of `v` (none if NULL), without checking that they were written.
    pub(crate) fn leaves(&self, v: Var) -> &[Leaf] {
        &self.vars[v.index()].leaves
    }

    /// The rows of leaf `leaf` of `v` for a kernel to write by lane, if they are scalars in
    /// place: a pointer, so that other variables can be read from storage while they are
    /// written (see `LaneRows`); none for NULL variables and other leaves.
    pub(crate) fn lane_rows(&mut self, v: Var, leaf: usize) -> Option<NonNull<Column>> {
        let rows = self.vars[v.index()].leaves.get_mut(leaf)?;
        rows.scalar_rows_mut().map(NonNull::from)
    }

    /// The arena holding shared rows.
    pub(crate) fn arena(&self) -> &Arena {
        &self.arena
    }

    /// The arena's rows for one kernel call, after its fresh rows are allocated (see
    /// [`ArenaView`]).
    pub(crate) fn arena_view(&mut self) -> ArenaView {
        self.arena.view()
    }

    /// Appends `count` fresh arena rows (unwritten, held once) to `out`, for `v` (an output
    /// of an op in `block` at `lanes`); fails if the arena grows past the memory budget.
    pub(crate) fn alloc_fresh(
        &mut self,
        count: usize,
        out: &mut Vec<u32>,
        v: Var,
        block: Block,
        lanes: &[usize],
    ) -> Result<()> {
        self.arena.alloc_fresh_many(count, out);
        self.check_memory(0, block, lanes, || self.variable(v))
    }

    /// Lets go of arena rows that nothing installed.
    pub(crate) fn release_fresh(&mut self, handles: &[u32]) {
        handles.iter().for_each(|&h| self.arena.release(h));
    }

    /// "`v` was written in `lanes`", for the safety checks.
    pub(crate) fn mark_written(&mut self, v: Var, lanes: &[usize]) {
        if self.safety {
            let store = &mut self.vars[v.index()];
            if store.alloc != Allocation::Null {
                lanes.iter().for_each(|&l| store.set[l] = true);
            }
        }
    }

    /// The leaves of `v`, checking that it is readable in `lanes`.
    pub(crate) fn read(&self, v: Var, lanes: &[usize], block: Block) -> Result<&[Leaf]> {
        let store = &self.vars[v.index()];
        if store.alloc == Allocation::Null {
            return Err(RuntimeError::ReadNull {
                var: self.name(v),
                block: self.block_name(block),
            });
        }
        if self.safety {
            if let Some(&lane) = lanes.iter().find(|&&l| !store.set[l]) {
                return Err(RuntimeError::ReadUnset {
                    var: self.name(v),
                    lane,
                    block: self.block_name(block),
                });
            }
        }
        Ok(&store.leaves)
    }

    /// Saves the current value of `v` in `lanes` (a duplicating push); no-op unless stacked.
    pub(crate) fn push(&mut self, v: Var, lanes: &[usize], block: Block) -> Result<()> {
        if !self.is_stacked(v) {
            return Ok(());
        }
        // One scalar leaf in place: depths and saved rows in one pass, as far as the saved
        // rows hold the new frames; the lanes after go the general way.
        let done = self.push_in_place(v, None, lanes).unwrap_or(0);
        let lanes = &lanes[done..];
        if lanes.is_empty() {
            return Ok(());
        }
        // An overflow fails the run: the lanes counted before it die with it (under lane
        // isolation the batch re-runs from the start).
        let (need, deepest) = self.new_frames(v, lanes, block, true)?;
        self.grow_frames(v, need, deepest, block)?;
        let (arena, batch) = (&mut self.arena, self.batch);
        let VarStore { leaves, depth, .. } = &mut self.vars[v.index()];
        for leaf in leaves.iter_mut() {
            leaf.push(arena, lanes, depth, batch);
        }
        Ok(())
    }

    /// Room in stacked `v`'s saved rows for `need` frames per lane: where it holds fewer, grown
    /// to at least twice as many (at most the depth limit), the growth checked against the
    /// memory budget first (a failure is blamed on lane `deepest`).
    fn grow_frames(&mut self, v: Var, need: usize, deepest: usize, block: Block) -> Result<()> {
        let (max, batch) = (self.max_depth, self.batch);
        let store = &self.vars[v.index()];
        if need <= store.levels {
            return Ok(());
        }
        let grown = need.max(2 * store.levels).min(max);
        let row_bytes: usize = store.leaves.iter().map(Leaf::saved_row_bytes).sum();
        let extra = (grown - store.levels)
            .saturating_mul(batch)
            .saturating_mul(row_bytes);
        self.check_memory(extra, block, &[deepest], || self.variable(v))?;
        self.stack_bytes += extra;
        self.moves += 1;
        let (store, spare) = (&mut self.vars[v.index()], &mut self.spare);
        store.levels = grown;
        store
            .leaves
            .iter_mut()
            .for_each(|l| l.grow_saved(grown * batch, spare));
        Ok(())
    }

    /// Room in stacked `v`'s saved rows for one more frame for each of `lanes`, as
    /// [`push`](Self::push) of those lanes would make it: the first lane (in order) the push
    /// would take past the depth limit fails, else the rows grow for the deepest (its growth
    /// checked against the memory budget and blamed on the first of the deepest). Nothing is
    /// pushed; nothing for a variable without a stack.
    pub(crate) fn room_for_push(&mut self, v: Var, lanes: &[usize], block: Block) -> Result<()> {
        if !self.is_stacked(v) {
            return Ok(());
        }
        let (need, deepest) = self.new_frames(v, lanes, block, false)?;
        self.grow_frames(v, need, deepest, block)
    }

    /// One pass over stacked `v`'s depths for a new frame for each of `lanes` (each depth
    /// counted up if `count`): the deepest new depth and its lane (the lowest of them, the
    /// one a growth is blamed on), or the error of the first lane the frame would take to the
    /// depth limit (the lanes before it counted up all the same).
    fn new_frames(
        &mut self,
        v: Var,
        lanes: &[usize],
        block: Block,
        count: bool,
    ) -> Result<(usize, usize)> {
        let limit = self.max_depth.min(u32::MAX as usize);
        let depth = &mut self.vars[v.index()].depth;
        let (mut need, mut deepest) = (0, 0);
        for &lane in lanes {
            let d = depth[lane] as usize + 1;
            if d >= limit {
                return Err(RuntimeError::StackOverflow {
                    var: self.name(v),
                    lane,
                    block: self.block_name(block),
                    max_depth: self.max_depth,
                });
            }
            if count {
                depth[lane] = d as u32;
            }
            if d > need {
                (need, deepest) = (d, lane);
            }
        }
        Ok((need, deepest))
    }

    /// The parts of `v` a compiled block reads and writes lane by lane, if it is one scalar
    /// leaf of `T` in place: its rows and, if stacked, its saved rows (`levels * batch`,
    /// stack-major), per-lane depths and the depth limit. Valid until storage next moves
    /// them ([`moves`](Self::moves) counts each time: saved rows grown by a push or by
    /// [`room_for_push`](Self::room_for_push), rows set aside or taken back, outputs swapped
    /// in), or the run's end.
    pub(crate) fn scalar_parts<T: Element>(&mut self, v: Var) -> Option<ScalarParts<T>> {
        let stacked =
            self.vars.get(v.index())?.alloc == Allocation::Full && self.stacks == Stacks::Honour;
        let limit = self.max_depth.min(u32::MAX as usize);
        let store = &mut self.vars[v.index()];
        let cap = store.levels.min(limit.saturating_sub(1)) as u32;
        let depth = match stacked {
            true => store.depth.as_mut_ptr(),
            false => std::ptr::null_mut(),
        };
        let [Leaf::Dense { rows, saved }] = &mut store.leaves[..] else {
            return None;
        };
        if rows.width() != 1 {
            return None;
        }
        let saved = match stacked {
            true => saved.as_slice_mut::<T>()?.as_mut_ptr(),
            false => std::ptr::null_mut(),
        };
        Some(ScalarParts {
            rows: rows.as_slice_mut::<T>()?.as_mut_ptr(),
            saved,
            depth,
            cap,
        })
    }

    /// How many times rows or saved rows have moved (see [`scalar_parts`](Self::scalar_parts)).
    pub(crate) fn moves(&self) -> u64 {
        self.moves
    }

    /// Whether reads are checked for a prior write in their lanes.
    pub(crate) fn checks_reads(&self) -> bool {
        self.safety
    }

    /// `v = from` for stacked `v` (an assignment that pushes first; `v` is not `from`) in one
    /// pass over `lanes` (depth, saved row and copy per lane) where both are one scalar leaf
    /// of one type held in place; `Ok(false)`, doing nothing, where they are not (the caller
    /// pushes and copies). The errors are those of [`read`](Self::read) of `from`, then
    /// [`push`](Self::push) of `v` (a lane whose frame needs more saved rows, or passes the
    /// depth limit, goes through `push` with the lanes after it).
    pub(crate) fn push_copy(
        &mut self,
        v: Var,
        from: Var,
        lanes: &[usize],
        block: Block,
    ) -> Result<bool> {
        let (d, s) = (v.index(), from.index());
        let scalar = |store: &VarStore| match &store.leaves[..] {
            [leaf] => leaf.dense().filter(|c| c.width() == 1).map(Column::dtype),
            _ => None,
        };
        let same = scalar(&self.vars[d]).is_some_and(|t| Some(t) == scalar(&self.vars[s]));
        if d == s || !self.is_stacked(v) || !same {
            return Ok(false);
        }
        self.read(from, lanes, block)?;
        let Some(done) = self.push_in_place(v, Some(from), lanes) else {
            return Ok(false);
        };
        let rest = &lanes[done..];
        if !rest.is_empty() {
            self.push(v, rest, block)?;
            self.copy_leaf((v, 0), (from, 0), rest, block)?;
        }
        self.mark_written(v, lanes);
        Ok(true)
    }

    /// The pass [`push`](Self::push) and [`push_copy`](Self::push_copy) make where stacked
    /// `v` is one scalar leaf in place (and `from`, if given, another of the same type): each
    /// lane's depth counted, its row saved and, from `from`, overwritten, as far as the saved
    /// rows hold the new frames within the depth limit; the lanes done, or `None` (nothing
    /// done) where the leaves are not so.
    fn push_in_place(&mut self, v: Var, from: Option<Var>, lanes: &[usize]) -> Option<usize> {
        let limit = self.max_depth.min(u32::MAX as usize);
        let batch = self.batch;
        let (dst, src) = match from {
            Some(from) if from == v => return None,
            Some(from) => {
                let (d, s) = (v.index(), from.index());
                let (dst, src) = if s < d {
                    let (a, b) = self.vars.split_at_mut(d);
                    (&mut b[0], &a[s])
                } else {
                    let (a, b) = self.vars.split_at_mut(s);
                    (&mut a[d], &b[0])
                };
                (dst, Some(src.leaves.first()?.dense()?))
            }
            None => (&mut self.vars[v.index()], None),
        };
        // A lane's new frame must be held by the saved rows and within the limit.
        let cap = dst
            .levels
            .min(limit.saturating_sub(1))
            .min(u32::MAX as usize) as u32;
        match &mut dst.leaves[..] {
            [Leaf::Dense { rows, saved }] => {
                rows::push_copy(rows, saved, src, (lanes, &mut dst.depth[..], batch), cap)
            }
            _ => None,
        }
    }

    /// Drops the vector rows `v` holds in `lanes` (its value there is dead): shared leaves let
    /// go of their rows and hold the zero row; other leaves are untouched.
    pub(crate) fn release_rows(&mut self, v: Var, lanes: &[usize]) {
        let arena = &mut self.arena;
        for leaf in &mut self.vars[v.index()].leaves {
            leaf.release_rows(arena, lanes);
        }
    }

    /// Restores the last saved value of `v` in `lanes`; no-op unless stacked.
    pub(crate) fn pop(&mut self, v: Var, lanes: &[usize], block: Block) -> Result<()> {
        if !self.is_stacked(v) {
            return Ok(());
        }
        let batch = self.batch;
        let arena = &mut self.arena;
        let VarStore { leaves, depth, .. } = &mut self.vars[v.index()];
        // One scalar leaf in place: its depths and rows in one pass.
        if let [Leaf::Dense { rows, saved }] = &mut leaves[..] {
            if let Some(popped) = rows::pop_counted(rows, saved, (lanes, depth, batch)) {
                return popped.map_err(|lane| RuntimeError::PopEmpty {
                    var: self.program.var(v).name.clone(),
                    lane,
                    block: self.program.block(block).name.clone(),
                });
            }
        }
        // One pass: an empty stack fails the run (the lanes before it, already popped, die
        // with it; under lane isolation the batch re-runs from the start).
        for &lane in lanes {
            let Some(d) = depth[lane].checked_sub(1) else {
                return Err(RuntimeError::PopEmpty {
                    var: self.program.var(v).name.clone(),
                    lane,
                    block: self.program.block(block).name.clone(),
                });
            };
            depth[lane] = d;
        }
        for leaf in leaves.iter_mut() {
            leaf.pop(arena, lanes, depth, batch);
        }
        Ok(())
    }

    /// The error for a value of `found` written into leaf `leaf` of `v` in `block`.
    fn value_type(&self, v: Var, leaf: usize, found: String, block: Block) -> RuntimeError {
        let expected = self.vars[v.index()]
            .types
            .get(leaf)
            .map_or_else(|| "nothing".to_string(), |&t| self.describe(t));
        RuntimeError::ValueType {
            block: self.block_name(block),
            var: self.name(v),
            expected,
            found,
        }
    }

    /// "`dtype` with `width` elements per lane" for a leaf type, in error messages.
    fn describe(&self, t: TensorType) -> String {
        format!(
            "{} with {} elements per lane",
            t.dtype,
            width_of(t, self.vector_len)
        )
    }

    /// Writes dense `values` (one column per leaf, row `k` for `lanes[k]`) into `v`, pushing
    /// first if `push`; writes to NULL variables are dropped.
    pub(crate) fn write(
        &mut self,
        v: Var,
        lanes: &[usize],
        values: &[Column],
        push: bool,
        block: Block,
    ) -> Result<()> {
        if self.is_null(v) {
            return Ok(());
        }
        if push {
            self.push(v, lanes, block)?;
        }
        let store = &mut self.vars[v.index()];
        for (i, (leaf, value)) in store.leaves.iter_mut().zip(values).enumerate() {
            if !leaf.scatter(&mut self.arena, lanes, value) {
                let found = describe_column(value);
                return Err(self.value_type(v, i, found, block));
            }
        }
        self.mark_written(v, lanes);
        self.check_memory(0, block, lanes, || self.variable(v))
    }

    /// Like [`write`](Self::write) for values the caller no longer needs: with every lane
    /// active, dense leaves take the value columns by swapping instead of copying.
    pub(crate) fn write_owned(
        &mut self,
        v: Var,
        lanes: &[usize],
        values: &mut [Column],
        push: bool,
        block: Block,
    ) -> Result<()> {
        let store = &self.vars[v.index()];
        let whole = lanes.len() == self.batch
            && store.alloc != Allocation::Null
            && store.leaves.iter().zip(values.iter()).all(|(leaf, value)| {
                leaf.dense().is_some_and(|rows| {
                    rows.dtype() == value.dtype()
                        && rows.width() == value.width()
                        && rows.rows() == value.rows()
                })
            });
        if !whole {
            return self.write(v, lanes, values, push, block);
        }
        if push {
            self.push(v, lanes, block)?;
        }
        let store = &mut self.vars[v.index()];
        for (leaf, value) in store.leaves.iter_mut().zip(values.iter_mut()) {
            // Checked above: every leaf is dense and fits its value.
            leaf.swap_whole(value);
        }
        // The rows moved.
        self.moves += 1;
        store.set.iter_mut().for_each(|s| *s = true);
        Ok(())
    }

    /// Makes leaf `leaf` of `v` hold fresh arena rows `handles` (row `k` for `lanes[k]`),
    /// written by a kernel; a NULL variable lets go of them.
    pub(crate) fn install(&mut self, v: Var, leaf: usize, lanes: &[usize], handles: &[u32]) {
        let arena = &mut self.arena;
        let installed = self.vars[v.index()]
            .leaves
            .get_mut(leaf)
            .is_some_and(|target| target.install(arena, lanes, handles));
        if !installed {
            handles.iter().for_each(|&h| arena.release(h));
        }
    }

    /// Writes dense `value` (row `k` for `lanes[k]`) into leaf `leaf` of `v`, without
    /// pushing; dropped if `v` is NULL.
    pub(crate) fn scatter(
        &mut self,
        v: Var,
        leaf: usize,
        lanes: &[usize],
        value: &Column,
        block: Block,
    ) -> Result<()> {
        let fits = match self.vars[v.index()].leaves.get_mut(leaf) {
            Some(target) => target.scatter(&mut self.arena, lanes, value),
            None => true,
        };
        if fits {
            Ok(())
        } else {
            let found = describe_column(value);
            Err(self.value_type(v, leaf, found, block))
        }
    }

    /// Copies the current rows of leaf `from.1` of variable `from.0` into leaf `to.1` of `to.0`
    /// at `lanes` (shared rows are shared, not copied), without pushing.
    pub(crate) fn copy_leaf(
        &mut self,
        to: (Var, usize),
        from: (Var, usize),
        lanes: &[usize],
        block: Block,
    ) -> Result<()> {
        let (d, s) = (to.0.index(), from.0.index());
        let arena = &mut self.arena;
        let fits = if d == s {
            // One variable: copy through a gathered column (distinct leaves of one variable).
            let value = self.vars[s].leaves[from.1].gather(arena, lanes);
            self.vars[d].leaves[to.1].scatter(arena, lanes, &value)
        } else {
            let (src, dst) = if s < d {
                let (a, b) = self.vars.split_at_mut(d);
                (&a[s].leaves[from.1], &mut b[0].leaves[to.1])
            } else {
                let (a, b) = self.vars.split_at_mut(s);
                (&b[0].leaves[from.1], &mut a[d].leaves[to.1])
            };
            dst.copy_rows(arena, src, lanes)
        };
        if fits {
            Ok(())
        } else {
            let found = self.describe(self.vars[s].types[from.1]);
            Err(self.value_type(to.0, to.1, found, block))
        }
    }

    /// Copies the value of `from` into `to` at `lanes` (shared rows are shared, not copied),
    /// without pushing: what a snapshot of `from` restored into `to` does, without the copy in
    /// between. Dropped if `to` is NULL; nothing to do if `to` is `from`.
    pub(crate) fn copy_value(
        &mut self,
        to: Var,
        from: Var,
        lanes: &[usize],
        block: Block,
    ) -> Result<()> {
        self.read(from, lanes, block)?;
        if to == from || self.is_null(to) {
            return Ok(());
        }
        let (n, m) = (self.types(from).len(), self.types(to).len());
        if n != m {
            let found = "a value of another type".to_string();
            return Err(self.value_type(to, n.min(m), found, block));
        }
        for leaf in 0..n {
            self.copy_leaf((to, leaf), (from, leaf), lanes, block)?;
        }
        self.mark_written(to, lanes);
        Ok(())
    }

    /// The most vector rows held at once so far.
    pub(crate) fn vector_rows(&self) -> usize {
        self.arena.peak()
    }

    /// Copies the rows of `lanes` of `v`'s leaves into new dense columns.
    pub(crate) fn gather(&self, v: Var, lanes: &[usize], block: Block) -> Result<Vec<Column>> {
        Ok(self
            .read(v, lanes, block)?
            .iter()
            .map(|leaf| leaf.gather(&self.arena, lanes))
            .collect())
    }

    /// The value of `v` in `lanes`, held so that writes to `v` do not change it; give it back
    /// with [`restore`](Self::restore).
    pub(crate) fn snapshot(&mut self, v: Var, lanes: &[usize], block: Block) -> Result<Snapshot> {
        self.read(v, lanes, block)?;
        let (arena, spare) = (&mut self.arena, &mut self.spare);
        let mut held = self.held_lists.take();
        let leaves = self.vars[v.index()].leaves.iter();
        held.extend(leaves.map(|leaf| leaf.take(arena, lanes, spare)));
        let snapshot = Snapshot(held);
        let bytes = snapshot.bytes();
        self.check_memory(bytes, block, lanes, || self.variable(v))?;
        self.held_bytes += bytes;
        Ok(snapshot)
    }

    /// Whether [`set_aside`](Self::set_aside) takes `v`: it has storage, and its leaves keep
    /// their rows in place (shared vector rows have holders to count, so they are snapshot).
    pub(crate) fn can_set_aside(&self, v: Var) -> bool {
        let store = &self.vars[v.index()];
        store.alloc != Allocation::Null && !store.leaves.iter().any(Leaf::is_shared)
    }

    /// Sets aside the rows of `v` (see [`can_set_aside`](Self::can_set_aside)) for a call
    /// that writes `v` while the caller still needs its value: every lane's rows are moved
    /// out whole and `v` gets spare rows (kept from an earlier call, or new) for the callee to
    /// write, until [`take_back`](Self::take_back). No row is copied, so it costs the same
    /// however many lanes call; only the calling lanes run until then, so no other lane's row
    /// is missed. `None` (nothing done) if new rows would pass the memory budget or take more
    /// than a [`SPARE_SHARE`]th of it (the rest is left to the snapshots the caller then
    /// takes, of the calling lanes' rows only).
    pub(crate) fn set_aside(&mut self, v: Var) -> Option<Aside> {
        let spare = match self.vars[v.index()].spare.pop() {
            Some(spare) => spare,
            None => {
                let (batch, vector_len) = (self.batch, self.vector_len);
                let types = self.vars[v.index()].types.clone();
                let bytes = (types.iter())
                    .map(|&t| batch * width_of(t, vector_len) * Column::element_bytes(t.dtype))
                    .sum();
                let fits = self.memory_budget.is_none_or(|budget| {
                    self.used().saturating_add(bytes) <= budget
                        && (self.spare_bytes + bytes) * SPARE_SHARE <= budget
                });
                if !fits {
                    return None;
                }
                self.spare_bytes += bytes;
                types
                    .iter()
                    .map(|&t| Leaf::zeros(t, batch, vector_len, &mut self.spare))
                    .collect()
            }
        };
        let store = &mut self.vars[v.index()];
        self.moves += 1;
        Some(Aside(std::mem::replace(&mut store.leaves, spare)))
    }

    /// Puts back the rows of `v` that [`set_aside`](Self::set_aside) set aside; the rows
    /// written meanwhile are kept as spare rows for the next.
    pub(crate) fn take_back(&mut self, v: Var, aside: Aside) {
        let store = &mut self.vars[v.index()];
        self.moves += 1;
        let used = std::mem::replace(&mut store.leaves, aside.0);
        store.spare.push(used);
    }

    /// Writes a snapshot (of `v` or of a variable of the same type) into `v` at `lanes` (the
    /// lanes it was taken at, in order), without pushing; held rows pass to `v`, or are
    /// released if `v` is NULL.
    pub(crate) fn restore(
        &mut self,
        v: Var,
        lanes: &[usize],
        snapshot: Snapshot,
        block: Block,
    ) -> Result<()> {
        self.held_bytes = self.held_bytes.saturating_sub(snapshot.bytes());
        let arena = &mut self.arena;
        let store = &mut self.vars[v.index()];
        let null = store.alloc == Allocation::Null;
        let mut list = snapshot.0;
        for (i, held) in list.drain(..).enumerate() {
            let fits = match store.leaves.get_mut(i) {
                Some(leaf) => leaf.put(arena, lanes, held, &mut self.spare),
                None => {
                    held.release(arena, &mut self.spare);
                    null
                }
            };
            if !fits {
                let found = "a value of another type".to_string();
                return Err(self.value_type(v, i, found, block));
            }
        }
        self.held_lists.give(list);
        self.mark_written(v, lanes);
        Ok(())
    }

    /// Writes the program's inputs, one column per input leaf with a row per lane, into its
    /// input variables (the counts and types were checked against the program).
    pub(crate) fn write_inputs(&mut self, inputs: &[Column]) -> Result<()> {
        let program = self.program;
        let all: Vec<usize> = (0..self.batch).collect();
        let entry = program.main_function().entry();
        let mut rest = inputs;
        for &v in program.inputs() {
            let (mine, tail) = rest.split_at(self.types(v).len().min(rest.len()));
            self.write(v, &all, mine, true, entry)?;
            rest = tail;
        }
        Ok(())
    }

    /// The program's outputs, one dense column per output leaf with a row per lane.
    pub(crate) fn read_outputs(&self) -> Result<Vec<Column>> {
        let program = self.program;
        let all: Vec<usize> = (0..self.batch).collect();
        let entry = program.main_function().entry();
        let mut outputs = Vec::new();
        for &v in program.outputs() {
            outputs.extend(self.gather(v, &all, entry)?);
        }
        Ok(outputs)
    }

    /// A scalar `bool` branch condition `v`, checked readable in `lanes`: one element per
    /// lane of the batch (index it by lane).
    pub(crate) fn conditions(&self, v: Var, lanes: &[usize], block: Block) -> Result<&[bool]> {
        self.read(v, lanes, block)?
            .first()
            .and_then(Leaf::dense)
            .filter(|rows| rows.width() == 1)
            .and_then(Column::as_slice::<bool>)
            .ok_or_else(|| RuntimeError::ConditionType {
                block: self.block_name(block),
                var: self.name(v),
                found: self.program.var(v).ty.to_string(),
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use autobatch_ir::{KernelId, ProgramBuilder, Type};

    /// `f(x: i64) -> y: i64`, one block; storage over two lanes.
    fn program() -> (Program, Var) {
        let mut b = ProgramBuilder::new();
        let x = b.var("x", Type::I64);
        let y = b.var("y", Type::I64);
        let f = b.function("f");
        b.signature(f, &[x], &[y]);
        let e = b.block(f, "entry");
        b.prim(e, &[y], &[x], KernelId::new(0), "x");
        b.ret(e);
        (b.finish(f).unwrap().into_program(), x)
    }

    #[test]
    fn a_value_of_another_type_is_a_typed_error_naming_the_variable() {
        let (program, x) = program();
        let entry = program.main_function().entry();
        let mut storage = Storage::new(
            &program,
            2,
            0,
            256,
            (true, Stacks::Honour),
            (None, Spare::default()),
        );
        let floats = Column::from_scalars(&[1.0f64, 2.0]);
        match storage.write(x, &[0, 1], &[floats], false, entry) {
            Err(RuntimeError::ValueType {
                var,
                block,
                expected,
                found,
            }) => {
                assert_eq!((var.as_str(), block.as_str()), ("x", "entry"));
                assert!(expected.starts_with("i64"), "{expected}");
                assert!(found.starts_with("f64"), "{found}");
            }
            other => panic!("{:?}", other.err()),
        }
        assert!(matches!(
            storage.read(x, &[0], entry),
            Err(RuntimeError::ReadUnset { lane: 0, .. })
        ));
    }

    #[test]
    fn a_branch_on_a_non_bool_is_a_condition_type_error() {
        let (program, x) = program();
        let entry = program.main_function().entry();
        let mut storage = Storage::new(
            &program,
            2,
            0,
            256,
            (false, Stacks::Honour),
            (None, Spare::default()),
        );
        storage
            .write(
                x,
                &[0, 1],
                &[Column::from_scalars(&[4i64, 5])],
                false,
                entry,
            )
            .unwrap();
        let err = storage.conditions(x, &[0, 1], entry).unwrap_err();
        assert_eq!(
            err,
            RuntimeError::ConditionType {
                block: "entry".into(),
                var: "x".into(),
                found: "i64".into(),
            }
        );
        assert_eq!(
            err.to_string(),
            "block `entry` branches on `x`, which is i64, not a bool"
        );
    }

    /// A run's columns serve the next run's storage (the same memory, zeroed), and the
    /// values written in the first do not show in the second.
    #[test]
    fn a_finished_runs_columns_serve_the_next_run_zeroed() {
        let (program, x) = program();
        let entry = program.main_function().entry();
        let limits = (false, Stacks::Ignore);
        let mut first = Storage::new(&program, 3, 0, 256, limits, (None, Spare::default()));
        let values = Column::from_scalars(&[4i64, 5, 6]);
        first.write(x, &[0, 1, 2], &[values], false, entry).unwrap();
        let elements = |s: &Storage<'_>| {
            s.leaves(x)[0]
                .dense()
                .unwrap()
                .as_slice::<i64>()
                .map(<[i64]>::as_ptr)
        };
        let before = [elements(&first).unwrap()];
        let spare = first.into_spare();
        let second = Storage::new(&program, 3, 0, 256, limits, (None, spare));
        let after = (program.vars.iter().enumerate())
            .filter_map(|(i, _)| second.leaves(Var::new(i)).first()?.dense())
            .filter_map(|c| c.as_slice::<i64>());
        let mut reused = 0;
        for rows in after {
            assert_eq!(rows, &[0, 0, 0]);
            reused += usize::from(before.contains(&rows.as_ptr()));
        }
        assert_eq!(reused, 1, "one of the new columns is the old one's memory");
    }

    /// A variable set aside gets spare rows; taking it back restores every lane's rows, and the
    /// rows written meanwhile serve the next set-aside without new memory. A budget too small
    /// for the spare rows sets nothing aside.
    #[test]
    fn values_set_aside_come_back_for_every_lane() {
        let (program, x) = program();
        let entry = program.main_function().entry();
        let mut storage = Storage::new(
            &program,
            3,
            0,
            256,
            (false, Stacks::Ignore),
            (None, Spare::default()),
        );
        let written = Column::from_scalars(&[1i64, 2, 3]);
        storage
            .write(x, &[0, 1, 2], &[written], false, entry)
            .unwrap();
        let value = |s: &Storage| s.gather(x, &[0, 1, 2], entry).unwrap()[0].clone();
        assert!(storage.can_set_aside(x));
        let before = storage.used();
        let aside = storage.set_aside(x).unwrap();
        let bytes = storage.used();
        assert_eq!(bytes - before, 3 * 8);
        let callee = Column::from_scalars(&[9i64]);
        storage.write(x, &[1], &[callee], false, entry).unwrap();
        assert_eq!(value(&storage).as_slice::<i64>().unwrap()[1], 9);
        storage.take_back(x, aside);
        assert_eq!(value(&storage), Column::from_scalars(&[1i64, 2, 3]));
        let again = storage.set_aside(x).unwrap();
        assert_eq!(storage.used(), bytes);
        storage.take_back(x, again);

        let mut tight = Storage::new(
            &program,
            3,
            0,
            256,
            (false, Stacks::Ignore),
            (Some(16), Spare::default()),
        );
        assert!(tight.set_aside(x).is_none());
    }
}

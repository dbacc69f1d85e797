//! Variable storage by allocation, and the execution of straight-line ops on a set of lanes.
//!
//! NULL variables have no storage (writes are dropped, reads are errors); TEMPORARY and
//! REGISTER variables hold one leaf per tensor leaf with a row per lane; FULL variables'
//! leaves also hold their saved frames, stack-major (`row = depth * batch + lane`, as in the
//! reference), growing by doubling, with a per-lane depth. Scalar leaves (and non-`f64`
//! vectors) keep their rows in place, in a `[rows, width]` column; `f64` vector leaves keep
//! one [`Arena`] handle per row, so assignments, pushes and pops copy handles and only kernels
//! write vector rows. Every operation touches only the rows of the lanes it is given, so its
//! cost scales with the active lanes.

use crate::arena::{Arena, ZERO};
use crate::column::{width_of, Column};
use crate::config::Stats;
use crate::error::{Result, RuntimeError};
use crate::kernel::{
    BatchedFn, FreshRows, Input, Kernel, KernelError, LaneInputs, LaneOutputs, LaneWiseFn, OutLeaf,
};
use autobatch_ir::passes::Liveness;
use autobatch_ir::{Allocation, Block, DType, KernelRef, PrimOp, Program, Shape, TensorType, Var};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

struct VarStore {
    alloc: Allocation,
    /// Leaf types, in storage order.
    types: Vec<TensorType>,
    /// Each leaf's current rows (and saved frames, if FULL).
    leaves: Vec<Leaf>,
    /// Frames per lane the saved rows can hold.
    levels: usize,
    /// FULL only: saved frames per lane.
    depth: Vec<u32>,
    /// With safety checks: whether each lane has been written.
    set: Vec<bool>,
}

/// The rows of one leaf: its current value per lane and, for FULL variables, the saved frames
/// (`levels * batch` rows, stack-major).
enum Leaf {
    /// Rows in place, `[rows, width]`.
    Dense { rows: Column, saved: Column },
    /// One handle into the environment's arena per row (`f64` vectors). A saved handle at or
    /// above its lane's depth is stale: it is not counted as a holder of its row.
    Shared { rows: Vec<u32>, saved: Vec<u32> },
}

impl Leaf {
    /// `rows` zero rows and no saved frames for a leaf of type `ty`.
    fn zeros(ty: TensorType, rows: usize, vector_len: usize) -> Leaf {
        if ty.shape == Shape::Vector && ty.dtype == DType::F64 {
            Leaf::Shared {
                rows: vec![ZERO; rows],
                saved: Vec::new(),
            }
        } else {
            let width = width_of(ty, vector_len);
            Leaf::Dense {
                rows: Column::zeros(ty.dtype, rows, width),
                saved: Column::zeros(ty.dtype, 0, width),
            }
        }
    }

    /// Room for `rows` saved rows, keeping those saved so far.
    fn grow_saved(&mut self, rows: usize) {
        match self {
            Leaf::Dense { saved, .. } => *saved = saved.grown(rows),
            Leaf::Shared { saved, .. } => saved.resize(rows, ZERO),
        }
    }

    /// The current rows of `lanes`, in order, as a new dense column.
    fn gather(&self, arena: &Arena, lanes: &[usize]) -> Column {
        match self {
            Leaf::Dense { rows, .. } => rows.gather(lanes),
            Leaf::Shared { rows, .. } => arena.gather(rows, lanes),
        }
    }

    /// The dtype and row width of the leaf's values.
    fn kind(&self, arena: &Arena) -> (DType, usize) {
        match self {
            Leaf::Dense { rows, .. } => (rows.dtype(), rows.width()),
            Leaf::Shared { .. } => (DType::F64, arena.width()),
        }
    }

    /// Like [`gather`](Self::gather), into the allocation of `out` where it fits.
    fn gather_into(&self, arena: &Arena, lanes: &[usize], out: Column) -> Column {
        match self {
            Leaf::Dense { rows, .. } => {
                let mut out = if out.dtype() == rows.dtype() && out.width() == rows.width() {
                    out.resized(lanes.len())
                } else {
                    Column::zeros(rows.dtype(), lanes.len(), rows.width())
                };
                out.copy_rows(rows, lanes.iter().copied().enumerate());
                out
            }
            Leaf::Shared { rows, .. } => arena.gather_into(rows, lanes, out),
        }
    }

    /// Copies `src`'s current row `from` into row `to` for each pair (shared leaves share the
    /// row). Returns `false`, copying nothing, if the leaves differ in kind, dtype or width.
    fn copy_rows(
        &mut self,
        arena: &mut Arena,
        src: &Leaf,
        pairs: impl IntoIterator<Item = (usize, usize)>,
    ) -> bool {
        match (self, src) {
            (Leaf::Dense { rows: d, .. }, Leaf::Dense { rows: s, .. }) => d.copy_rows(s, pairs),
            (Leaf::Shared { rows: d, .. }, Leaf::Shared { rows: s, .. }) => {
                for (to, from) in pairs {
                    arena.assign(&mut d[to], s[from]);
                }
                true
            }
            _ => false,
        }
    }

    /// Writes row `k` of dense `src` into row `lanes[k]`. Returns `false`, writing nothing, if
    /// `src` does not fit the leaf.
    fn scatter(&mut self, arena: &mut Arena, lanes: &[usize], src: &Column) -> bool {
        match self {
            Leaf::Dense { rows, .. } => rows.copy_rows(src, lanes.iter().copied().zip(0..)),
            Leaf::Shared { rows, .. } => {
                let width = arena.width();
                let Some(data) = src.as_slice::<f64>().filter(|_| src.width() == width) else {
                    return false;
                };
                // Zero-length vectors have no rows to store (`max(1)` only keeps chunking legal).
                for (&lane, row) in lanes.iter().zip(data.chunks_exact(width.max(1))) {
                    arena.store(&mut rows[lane], row);
                }
                true
            }
        }
    }

    /// Saves the current rows of `lanes` at their `depth` (a duplicating push).
    fn push(&mut self, arena: &mut Arena, lanes: &[usize], depth: &[u32], batch: usize) {
        let at = |l: usize| depth[l] as usize * batch + l;
        match self {
            Leaf::Dense { rows, saved } => {
                saved.copy_rows(rows, lanes.iter().map(|&l| (at(l), l)));
            }
            Leaf::Shared { rows, saved } => {
                // The slot above the depth holds nothing: take the handle without a release.
                for &l in lanes {
                    arena.retain(rows[l]);
                    saved[at(l)] = rows[l];
                }
            }
        }
    }

    /// Restores the rows of `lanes` saved at their (already decremented) `depth`.
    fn pop(&mut self, arena: &mut Arena, lanes: &[usize], depth: &[u32], batch: usize) {
        let at = |l: usize| depth[l] as usize * batch + l;
        match self {
            Leaf::Dense { rows, saved } => {
                rows.copy_rows(saved, lanes.iter().map(|&l| (l, at(l))));
            }
            Leaf::Shared { rows, saved } => {
                // The saved frame's hold passes to the current value.
                for &l in lanes {
                    arena.release(rows[l]);
                    rows[l] = saved[at(l)];
                }
            }
        }
    }
}

/// The value of one variable in some lanes, taken out of storage to be put back later (by
/// the stackless interpreter, around calls). Shared vector rows are held, not copied.
pub(crate) struct Snapshot(Vec<Taken>);

/// One leaf of a [`Snapshot`]: dense rows (row `k` for the `k`-th lane), or held handles.
enum Taken {
    Dense(Column),
    Shared(Vec<u32>),
}

/// `dtype [rows, width]` of a leaf of type `t`, for error messages.
fn describe(t: TensorType, rows: usize, vector_len: usize) -> String {
    format!("{} [{rows}, {}]", t.dtype, width_of(t, vector_len))
}

/// How writes treat FULL variables' stacks.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Stacks {
    /// Full VM semantics: pushes and pops act on FULL variables.
    Honour,
    /// Stackless semantics: every variable behaves as a register; pushes and pops are no-ops.
    Ignore,
}

/// The storage of every variable for one batch.
pub(crate) struct Env<'p> {
    pub(crate) program: &'p Program,
    kernels: &'p [Kernel],
    vars: Vec<VarStore>,
    /// The rows of every shared (`f64` vector) leaf.
    arena: Arena,
    /// Kernel output columns kept for reuse, so ops do not allocate in the hot loop.
    spare: Vec<Column>,
    /// The list `output_columns` hands out, kept between ops for its allocation.
    out_list: Vec<Column>,
    /// Leaf pairs of the assignment being run, kept between ops for their allocation.
    pairs: Vec<(usize, usize)>,
    /// Fresh arena rows of the lane-wise kernel being run, kept for their allocation.
    fresh: Vec<u32>,
    pub(crate) batch: usize,
    pub(crate) vector_len: usize,
    max_depth: usize,
    safety: bool,
    stacks: Stacks,
}

/// Per block of `program`: the variables with shared vector rows that the block reads or
/// writes and that are dead when it ends (by `live`), which an interpreter releases there
/// ([`Env::release_rows`]) instead of keeping their rows until the next write. Stacked (FULL)
/// variables are left to their pops when `stacks` honours them.
pub(crate) fn dead_vectors(program: &Program, live: &Liveness, stacks: Stacks) -> Vec<Vec<Var>> {
    let shares_rows = |v: Var| {
        let d = program.var(v);
        let kept = match d.alloc {
            Allocation::Null => false,
            Allocation::Full => stacks == Stacks::Ignore,
            Allocation::Temporary | Allocation::Register => true,
        };
        kept && d
            .ty
            .leaves()
            .iter()
            .any(|t| t.shape == Shape::Vector && t.dtype == DType::F64)
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

/// Splits `lanes` by their branch `conditions` into `then_` and `else_` (cleared first).
pub(crate) fn partition_lanes(
    lanes: &[usize],
    conditions: &[bool],
    then_: &mut Vec<usize>,
    else_: &mut Vec<usize>,
) {
    then_.clear();
    else_.clear();
    for (&lane, &c) in lanes.iter().zip(conditions) {
        if c {
            then_.push(lane);
        } else {
            else_.push(lane);
        }
    }
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_string()
    }
}

impl<'p> Env<'p> {
    /// Storage for every variable of `program` over `batch` lanes.
    pub(crate) fn new(
        program: &'p Program,
        kernels: &'p [Kernel],
        batch: usize,
        vector_len: usize,
        max_depth: usize,
        safety: bool,
        stacks: Stacks,
    ) -> Self {
        let vars = program
            .vars
            .iter()
            .map(|d| {
                let types = d.ty.leaves();
                let full = d.alloc == Allocation::Full && stacks == Stacks::Honour;
                VarStore {
                    alloc: d.alloc,
                    leaves: if d.alloc == Allocation::Null {
                        Vec::new()
                    } else {
                        types
                            .iter()
                            .map(|t| Leaf::zeros(*t, batch, vector_len))
                            .collect()
                    },
                    levels: 0,
                    depth: if full { vec![0; batch] } else { Vec::new() },
                    set: if safety {
                        vec![false; batch]
                    } else {
                        Vec::new()
                    },
                    types,
                }
            })
            .collect();
        Env {
            program,
            kernels,
            vars,
            arena: Arena::new(vector_len),
            spare: Vec::new(),
            out_list: Vec::new(),
            pairs: Vec::new(),
            fresh: Vec::new(),
            batch,
            vector_len,
            max_depth,
            safety,
            stacks,
        }
    }

    fn name(&self, v: Var) -> String {
        self.program.var(v).name.clone()
    }

    fn block_name(&self, b: Block) -> String {
        self.program.block(b).name.clone()
    }

    fn is_stacked(&self, v: Var) -> bool {
        self.vars[v.index()].alloc == Allocation::Full && self.stacks == Stacks::Honour
    }

    /// The leaves of `v`, checking that it is readable in `lanes`.
    fn read(&self, v: Var, lanes: &[usize], block: Block) -> Result<&[Leaf]> {
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
        let (max, batch) = (self.max_depth, self.batch);
        let arena = &mut self.arena;
        let VarStore {
            leaves,
            levels,
            depth,
            ..
        } = &mut self.vars[v.index()];
        let mut need = 0;
        for &lane in lanes {
            let d = depth[lane] as usize + 1;
            if d >= max {
                return Err(RuntimeError::StackOverflow {
                    var: self.program.var(v).name.clone(),
                    lane,
                    block: self.program.block(block).name.clone(),
                    max_depth: max,
                });
            }
            need = need.max(d);
        }
        if need > *levels {
            *levels = need.max(2 * *levels).min(max);
            leaves
                .iter_mut()
                .for_each(|l| l.grow_saved(*levels * batch));
        }
        for leaf in leaves.iter_mut() {
            leaf.push(arena, lanes, depth, batch);
        }
        lanes.iter().for_each(|&l| depth[l] += 1);
        Ok(())
    }

    /// Drops the vector rows `v` holds in `lanes` (its value there is dead): shared leaves let
    /// go of their rows and hold the zero row; other leaves are untouched.
    pub(crate) fn release_rows(&mut self, v: Var, lanes: &[usize]) {
        let arena = &mut self.arena;
        for leaf in &mut self.vars[v.index()].leaves {
            if let Leaf::Shared { rows, .. } = leaf {
                for &l in lanes {
                    arena.release(std::mem::replace(&mut rows[l], ZERO));
                }
            }
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
        if let Some(&lane) = lanes.iter().find(|&&l| depth[l] == 0) {
            return Err(RuntimeError::PopEmpty {
                var: self.program.var(v).name.clone(),
                lane,
                block: self.program.block(block).name.clone(),
            });
        }
        lanes.iter().for_each(|&l| depth[l] -= 1);
        for leaf in leaves.iter_mut() {
            leaf.pop(arena, lanes, depth, batch);
        }
        Ok(())
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
        if self.vars[v.index()].alloc == Allocation::Null {
            return Ok(());
        }
        if push {
            self.push(v, lanes, block)?;
        }
        let store = &mut self.vars[v.index()];
        for (i, (leaf, value)) in store.leaves.iter_mut().zip(values).enumerate() {
            if !leaf.scatter(&mut self.arena, lanes, value) {
                let expected = describe(store.types[i], lanes.len(), self.vector_len);
                return Err(RuntimeError::KernelOutput {
                    block: self.block_name(block),
                    source_text: format!("write to `{}`", self.name(v)),
                    leaf: i,
                    expected,
                    found: format!("{} [{}, {}]", value.dtype(), value.rows(), value.width()),
                });
            }
        }
        if self.safety {
            for &lane in lanes {
                store.set[lane] = true;
            }
        }
        Ok(())
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
            && store
                .leaves
                .iter()
                .zip(values.iter())
                .all(|(a, b)| match a {
                    Leaf::Dense { rows, .. } => {
                        rows.dtype() == b.dtype()
                            && rows.width() == b.width()
                            && rows.rows() == b.rows()
                    }
                    Leaf::Shared { .. } => false,
                });
        if !whole {
            return self.write(v, lanes, values, push, block);
        }
        if push {
            self.push(v, lanes, block)?;
        }
        let store = &mut self.vars[v.index()];
        for (leaf, value) in store.leaves.iter_mut().zip(values.iter_mut()) {
            if let Leaf::Dense { rows, .. } = leaf {
                std::mem::swap(rows, value);
            }
        }
        store.set.iter_mut().for_each(|s| *s = true);
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
        let arena = &mut self.arena;
        let taken = self.vars[v.index()]
            .leaves
            .iter()
            .map(|leaf| match leaf {
                Leaf::Dense { .. } => Taken::Dense(leaf.gather(arena, lanes)),
                Leaf::Shared { rows, .. } => Taken::Shared(
                    lanes
                        .iter()
                        .map(|&l| {
                            arena.retain(rows[l]);
                            rows[l]
                        })
                        .collect(),
                ),
            })
            .collect();
        Ok(Snapshot(taken))
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
        let arena = &mut self.arena;
        let store = &mut self.vars[v.index()];
        let null = store.alloc == Allocation::Null;
        for (i, taken) in snapshot.0.into_iter().enumerate() {
            let fits = match (store.leaves.get_mut(i), taken) {
                (Some(leaf @ Leaf::Dense { .. }), Taken::Dense(c)) => {
                    leaf.scatter(arena, lanes, &c)
                }
                (Some(Leaf::Shared { rows, .. }), Taken::Shared(held)) => {
                    for (&l, h) in lanes.iter().zip(held) {
                        arena.release(rows[l]);
                        rows[l] = h;
                    }
                    true
                }
                (_, Taken::Shared(held)) => {
                    held.into_iter().for_each(|h| arena.release(h));
                    null
                }
                (_, Taken::Dense(_)) => null,
            };
            if !fits {
                let expected = store.types.get(i).map_or("no leaf".into(), |&t| {
                    describe(t, lanes.len(), self.vector_len)
                });
                return Err(RuntimeError::KernelOutput {
                    block: self.block_name(block),
                    source_text: format!("call value into `{}`", self.name(v)),
                    leaf: i,
                    expected,
                    found: "a value of another type".into(),
                });
            }
        }
        if self.safety && !null {
            lanes.iter().for_each(|&l| store.set[l] = true);
        }
        Ok(())
    }

    /// Reads a scalar `bool` variable for `lanes` into `out` (cleared first).
    pub(crate) fn read_bools(
        &self,
        v: Var,
        lanes: &[usize],
        block: Block,
        out: &mut Vec<bool>,
    ) -> Result<()> {
        let data = match self.read(v, lanes, block)?.first() {
            Some(Leaf::Dense { rows, .. }) => rows.as_slice::<bool>(),
            _ => None,
        }
        .ok_or_else(|| {
            RuntimeError::ModeUnsupported(format!(
                "branch condition `{}` is not bool",
                self.name(v)
            ))
        })?;
        out.clear();
        out.extend(lanes.iter().map(|&l| data[l]));
        Ok(())
    }

    /// Dense columns for leaves of `types`, `rows` rows each, reusing spare ones (and the list
    /// itself: give it back with [`recycle`](Self::recycle)). A reused column keeps old values
    /// until the kernel writes its rows (every kernel writes every output row).
    fn columns_for(&mut self, types: impl Iterator<Item = TensorType>, rows: usize) -> Vec<Column> {
        let mut columns = std::mem::take(&mut self.out_list);
        for t in types {
            let (dtype, width) = (t.dtype, width_of(t, self.vector_len));
            let column = match self
                .spare
                .iter()
                .position(|c| c.dtype() == dtype && c.width() == width)
            {
                Some(i) => self.spare.swap_remove(i).resized(rows),
                None => Column::zeros(dtype, rows, width),
            };
            columns.push(column);
        }
        columns
    }

    /// Keeps `columns` (and the list holding them) for reuse by later ops, up to a bound.
    fn recycle(&mut self, mut columns: Vec<Column>) {
        const KEEP: usize = 64;
        let room = KEEP.saturating_sub(self.spare.len());
        self.spare.extend(columns.drain(..).take(room));
        columns.clear();
        self.out_list = columns;
    }

    /// Runs an assignment (`outs = ins`, leaf by leaf, no output among the inputs) on `lanes`
    /// by copying rows straight from the inputs' storage into the outputs' (shared vector
    /// rows are not copied at all: the outputs take the inputs' handles).
    fn assign(&mut self, op: &PrimOp, lanes: &[usize], block: Block) -> Result<()> {
        for &v in &op.ins {
            self.read(v, lanes, block)?;
        }
        // The input leaves in order, as (variable, leaf) pairs.
        let vars = &self.vars;
        let mut sources = op
            .ins
            .iter()
            .flat_map(|&v| (0..vars[v.index()].leaves.len()).map(move |leaf| (v.index(), leaf)));
        let mut taken = Vec::new();
        std::mem::swap(&mut taken, &mut self.pairs);
        taken.clear();
        for &v in &op.outs {
            let n = self.vars[v.index()].types.len();
            let before = taken.len();
            taken.extend(sources.by_ref().take(n));
            if taken.len() - before != n {
                self.pairs = taken;
                return Err(RuntimeError::KernelOutput {
                    block: self.block_name(block),
                    source_text: op.source.clone(),
                    leaf: self.pairs.len() - before,
                    expected: format!("{n} leaves for `{}`", self.name(v)),
                    found: "too few input leaves".into(),
                });
            }
        }
        let result = self.assign_pairs(op, lanes, block, &taken);
        self.pairs = taken;
        result
    }

    /// Whether every input of assignment `op` that is also one of its outputs is that output's
    /// own source (the same offset in the two leaf lists): then copying output by output never
    /// overwrites a leaf a later output still reads.
    fn only_self_copies(&self, op: &PrimOp) -> bool {
        let leaves = |v: Var| self.vars[v.index()].types.len();
        let mut in_at = 0;
        for &input in &op.ins {
            let mut out_at = 0;
            for &out in &op.outs {
                if out == input && out_at != in_at {
                    return false;
                }
                out_at += leaves(out);
            }
            in_at += leaves(input);
        }
        true
    }

    /// The writes of [`assign`](Self::assign): output leaf `k` (over all outputs, in order)
    /// takes the rows of input leaf `sources[k]`; a leaf that is its own source keeps its rows
    /// (a push, if the output has one, saved them).
    fn assign_pairs(
        &mut self,
        op: &PrimOp,
        lanes: &[usize],
        block: Block,
        sources: &[(usize, usize)],
    ) -> Result<()> {
        let mut next = 0;
        for &v in &op.outs {
            let d = v.index();
            let n = self.vars[d].types.len();
            let mine = &sources[next..next + n];
            next += n;
            if self.vars[d].alloc == Allocation::Null {
                continue;
            }
            if !op.is_in_place(v) {
                self.push(v, lanes, block)?;
            }
            for (leaf, &(s, s_leaf)) in mine.iter().enumerate() {
                if (s, s_leaf) == (d, leaf) {
                    continue;
                }
                let arena = &mut self.arena;
                let (src, dst) = if s < d {
                    let (a, b) = self.vars.split_at_mut(d);
                    (&a[s].leaves[s_leaf], &mut b[0].leaves[leaf])
                } else {
                    let (a, b) = self.vars.split_at_mut(s);
                    (&b[0].leaves[s_leaf], &mut a[d].leaves[leaf])
                };
                if !dst.copy_rows(arena, src, lanes.iter().map(|&l| (l, l))) {
                    return Err(RuntimeError::KernelOutput {
                        block: self.block_name(block),
                        source_text: op.source.clone(),
                        leaf,
                        expected: describe(self.vars[d].types[leaf], lanes.len(), self.vector_len),
                        found: describe(self.vars[s].types[s_leaf], lanes.len(), self.vector_len),
                    });
                }
            }
            if self.safety {
                let store = &mut self.vars[d];
                lanes.iter().for_each(|&l| store.set[l] = true);
            }
        }
        Ok(())
    }

    /// Runs one primitive op on `lanes`: kernel on the active lanes, then the writes.
    pub(crate) fn run_prim(
        &mut self,
        op: &PrimOp,
        lanes: &[usize],
        block: Block,
        stats: &mut Stats,
    ) -> Result<()> {
        // An assignment whose outputs are inputs only as their own sources (`v = v`, how
        // lowering passes a parameter through to a recursive call) copies rows directly; one
        // that permutes its own variables (`a, b = b, a`) goes through dense columns below.
        if op.kernel == KernelRef::Assign && self.only_self_copies(op) {
            return self.assign(op, lanes, block);
        }
        let kernels = self.kernels;
        let kernel = match op.kernel {
            KernelRef::Assign => None,
            KernelRef::User(id) => Some((
                id.index(),
                kernels
                    .get(id.index())
                    .ok_or_else(|| RuntimeError::MissingKernel {
                        block: self.block_name(block),
                        kernel: id.index(),
                        source_text: op.source.clone(),
                        table: kernels.len(),
                    })?,
            )),
        };
        match kernel {
            Some((id, Kernel::LaneWise(f))) => {
                self.run_lane_wise(op, id, f.as_ref(), lanes, block, stats)
            }
            Some((id, Kernel::Batched(f))) => {
                self.run_dense(op, Some((id, f.as_ref())), lanes, block, stats)
            }
            None => self.run_dense(op, None, lanes, block, stats),
        }
    }

    /// Runs a lane-wise kernel: inputs read in storage, scalar outputs into dense columns,
    /// `f64` vector outputs written in place into fresh arena rows that the output variables
    /// then take over (no staging copy).
    fn run_lane_wise(
        &mut self,
        op: &PrimOp,
        id: usize,
        f: &LaneWiseFn,
        lanes: &[usize],
        block: Block,
        stats: &mut Stats,
    ) -> Result<()> {
        let n = lanes.len();
        // Which output leaves are written in place: shared leaves of variables that keep them.
        let mut in_place: SmallVec<[bool; 16]> = SmallVec::new();
        let mut dense_types: SmallVec<[TensorType; 16]> = SmallVec::new();
        for &v in &op.outs {
            let store = &self.vars[v.index()];
            for (i, t) in store.types.iter().enumerate() {
                let fresh = matches!(store.leaves.get(i), Some(Leaf::Shared { .. }));
                in_place.push(fresh);
                if !fresh {
                    dense_types.push(*t);
                }
            }
        }
        let mut columns = self.columns_for(dense_types.iter().copied(), n);
        let mut fresh = std::mem::take(&mut self.fresh);
        fresh.clear();
        for _ in 0..in_place.iter().filter(|&&p| p).count() * n {
            fresh.push(self.arena.alloc_fresh());
        }
        let raw = self.arena.raw();
        let progress = Cell::new(0usize);
        let result = {
            let mut inputs: SmallVec<[Input<'_>; 16]> = SmallVec::new();
            for &v in &op.ins {
                inputs.extend(self.read(v, lanes, block)?.iter().map(|leaf| match leaf {
                    Leaf::Dense { rows, .. } => Input::Dense(rows),
                    Leaf::Shared { rows, .. } => Input::Shared(raw, rows),
                }));
            }
            let ins = LaneInputs::from_storage(inputs, lanes, &progress);
            let mut dense = columns.iter_mut();
            let mut rows = fresh.chunks_exact(n.max(1));
            let leaves = in_place
                .iter()
                .map(|&fresh| {
                    let next = if fresh {
                        rows.next()
                            .map(|handles| OutLeaf::Fresh(FreshRows::new(raw, handles)))
                    } else {
                        dense.next().map(OutLeaf::Dense)
                    };
                    // With no lanes there are no fresh rows: an empty leaf stands in.
                    next.unwrap_or(OutLeaf::Fresh(FreshRows::new(raw, &[])))
                })
                .collect();
            let mut outs = LaneOutputs::from_leaves(leaves);
            let start = Instant::now();
            let r = catch_unwind(AssertUnwindSafe(|| f(&ins, &mut outs)));
            stats.record_kernel(id, n, start.elapsed(), false);
            r
        };
        if let Some(e) = self.failure(result, &progress, op, lanes, block) {
            fresh.iter().for_each(|&h| self.arena.release(h));
            self.fresh = fresh;
            return Err(e);
        }
        if let Err(e) = self.check_columns(op, &columns, dense_types.iter(), n, block) {
            fresh.iter().for_each(|&h| self.arena.release(h));
            self.fresh = fresh;
            return Err(e);
        }
        // The writes: fresh rows pass to their variables, dense columns are scattered.
        let mut dense = columns.iter();
        let mut rows = fresh.chunks_exact(n.max(1));
        let mut flags = in_place.iter();
        for &v in &op.outs {
            let leaves = self.vars[v.index()].types.len();
            let null = self.vars[v.index()].alloc == Allocation::Null;
            if !null && !op.is_in_place(v) {
                self.push(v, lanes, block)?;
            }
            for leaf in 0..leaves {
                let arena = &mut self.arena;
                let store = &mut self.vars[v.index()];
                match (flags.next(), &mut store.leaves.get_mut(leaf)) {
                    (Some(true), Some(Leaf::Shared { rows: slots, .. })) => {
                        let handles = rows.next().unwrap_or(&[]);
                        for (&lane, &h) in lanes.iter().zip(handles) {
                            arena.release(std::mem::replace(&mut slots[lane], h));
                        }
                    }
                    (_, Some(target)) => {
                        if let Some(c) = dense.next() {
                            target.scatter(arena, lanes, c);
                        }
                    }
                    // A NULL variable: its values are dropped.
                    (_, None) => {
                        dense.next();
                    }
                }
            }
            if self.safety && !null {
                let store = &mut self.vars[v.index()];
                lanes.iter().for_each(|&l| store.set[l] = true);
            }
        }
        self.fresh = fresh;
        self.recycle(columns);
        Ok(())
    }

    /// Runs an assignment that permutes its own variables (through dense copies) or a batched
    /// kernel (`batched`: its index and body) on gathered dense inputs; outputs are dense.
    fn run_dense(
        &mut self,
        op: &PrimOp,
        batched: Option<(usize, &BatchedFn)>,
        lanes: &[usize],
        block: Block,
        stats: &mut Stats,
    ) -> Result<()> {
        let types: SmallVec<[TensorType; 16]> = op
            .outs
            .iter()
            .flat_map(|v| self.vars[v.index()].types.iter().copied())
            .collect();
        let mut outputs = self.columns_for(types.iter().copied(), lanes.len());
        // Spare columns hold batched kernels' gathered inputs (a run that fails ends here).
        let mut spare = std::mem::take(&mut self.spare);
        let progress = Cell::new(0usize);
        let result = {
            let mut inputs: SmallVec<[&Leaf; 16]> = SmallVec::new();
            for &v in &op.ins {
                inputs.extend(self.read(v, lanes, block)?.iter());
            }
            match batched {
                None => {
                    for (out, input) in outputs.iter_mut().zip(&inputs) {
                        *out = input.gather(&self.arena, lanes);
                    }
                    Ok(Ok(()))
                }
                Some((id, f)) => {
                    let start = Instant::now();
                    // With every lane active, dense storage rows are the kernel's rows.
                    let all = lanes.len() == self.batch;
                    let dense: SmallVec<[Cow<'_, Column>; 8]> = inputs
                        .iter()
                        .map(|leaf| match leaf {
                            Leaf::Dense { rows, .. } if all => Cow::Borrowed(rows),
                            _ => {
                                let (dtype, width) = leaf.kind(&self.arena);
                                let out = match spare
                                    .iter()
                                    .position(|c| c.dtype() == dtype && c.width() == width)
                                {
                                    Some(i) => spare.swap_remove(i),
                                    None => Column::zeros(dtype, 0, width),
                                };
                                Cow::Owned(leaf.gather_into(&self.arena, lanes, out))
                            }
                        })
                        .collect();
                    let refs: SmallVec<[&Column; 8]> = dense.iter().map(|c| c.as_ref()).collect();
                    let r = catch_unwind(AssertUnwindSafe(|| f(&refs, &mut outputs)));
                    stats.record_kernel(id, lanes.len(), start.elapsed(), true);
                    drop(refs);
                    spare.extend(dense.into_iter().filter_map(|c| match c {
                        Cow::Owned(c) => Some(c),
                        Cow::Borrowed(_) => None,
                    }));
                    r
                }
            }
        };
        self.spare = spare;
        if let Some(e) = self.failure(result, &progress, op, lanes, block) {
            return Err(e);
        }
        self.check_columns(op, &outputs, types.iter(), lanes.len(), block)?;
        let mut rest = outputs.as_mut_slice();
        for &v in &op.outs {
            let n = self.vars[v.index()].types.len();
            let (mine, tail) = std::mem::take(&mut rest).split_at_mut(n);
            rest = tail;
            let in_place = op.is_in_place(v);
            self.write_owned(v, lanes, mine, !in_place, block)?;
        }
        self.recycle(outputs);
        Ok(())
    }

    /// The error a kernel's `result` means, if any, naming the lane at fault.
    fn failure(
        &self,
        result: std::thread::Result<std::result::Result<(), KernelError>>,
        progress: &Cell<usize>,
        op: &PrimOp,
        lanes: &[usize],
        block: Block,
    ) -> Option<RuntimeError> {
        let e = match result {
            Ok(Ok(())) => return None,
            Ok(Err(e)) => e,
            Err(payload) => KernelError::at(progress.get(), panic_message(payload)),
        };
        let lane = e
            .position
            .and_then(|k| lanes.get(k))
            .or(lanes.first())
            .copied()
            .unwrap_or(0);
        Some(RuntimeError::Kernel {
            block: self.block_name(block),
            source_text: op.source.clone(),
            lane,
            message: e.message,
        })
    }

    /// Checks that a kernel left each dense output column with its leaf's dtype and width and
    /// a row per lane (a kernel can replace a column it was given).
    fn check_columns<'t>(
        &self,
        op: &PrimOp,
        columns: &[Column],
        types: impl Iterator<Item = &'t TensorType>,
        rows: usize,
        block: Block,
    ) -> Result<()> {
        for (leaf, (c, ty)) in columns.iter().zip(types).enumerate() {
            let (dtype, width) = (ty.dtype, width_of(*ty, self.vector_len));
            if c.dtype() != dtype || c.width() != width || c.rows() != rows {
                return Err(RuntimeError::KernelOutput {
                    block: self.block_name(block),
                    source_text: op.source.clone(),
                    leaf,
                    expected: format!("{dtype} [{rows}, {width}]"),
                    found: format!("{} [{}, {}]", c.dtype(), c.rows(), c.width()),
                });
            }
        }
        Ok(())
    }
}

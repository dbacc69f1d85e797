//! Executing one primitive op (a user kernel or an assignment) on a set of lanes: its inputs
//! read from storage at those lanes, the kernel run once for all of them, its outputs checked
//! and written back. Kernel output columns, gathered batched inputs and the op's working lists
//! are reused, so an op allocates nothing once warmed up.

mod direct;
mod layout;

use crate::column::{width_of, Column};
use crate::error::{Result, RuntimeError};
use crate::kernel::{
    BatchedFn, Context, DirectFn, FreshRows, Kernel, KernelError, LaneInputs, LaneOutputs,
    LaneRows, LaneWiseFn, OutLeaf, SplitLanes, StandIn,
};
use crate::panics::catch_quietly;
use crate::pool::ColumnPool;
use crate::spare::Spare;
use crate::stats::{KernelClock, Stats};
use crate::storage::leaf::{Leaf, LeafView};
use crate::storage::Storage;
use autobatch_ir::{Block, DType, KernelRef, PrimOp, Program, TensorType, Var};
use smallvec::SmallVec;
use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::ptr::NonNull;

use layout::{Layout, Layouts, Push, Write};

/// The lane lists of a branch's two sides (its first target's, then its second's).
pub(crate) type Sides<'a> = (&'a mut Vec<usize>, &'a mut Vec<usize>);

/// One output leaf of a lane-wise kernel call.
struct LeafCall {
    /// Storage's rows, if the kernel may write them by lane.
    target: Option<NonNull<Column>>,
    /// Whether the kernel wrote them so.
    wrote: Cell<bool>,
    /// Whether it asked for the leaf's stand-in column.
    asked: Cell<bool>,
}

impl LeafCall {
    /// Whether the call's dense column of output leaf `i` is scattered into storage after the
    /// kernel: the kernel wrote the leaf neither by lane nor (`split`, the leaf it split the
    /// lanes by, if any) by splitting the lanes.
    fn scattered(&self, i: usize, split: Option<usize>) -> bool {
        !self.wrote.get() && split != Some(i)
    }
}

/// A lane-wise kernel as [`Exec::run_lane_wise`] runs it: its index, its body, whether it is
/// in place, and its direct body, if any.
type LaneWise<'k> = (usize, &'k LaneWiseFn, bool, Option<&'k DirectFn>);

/// `kernel` (number `id`) as [`Exec::run_lane_wise`] runs it, or a batched kernel's body.
fn lane_wise_parts(id: usize, kernel: &Kernel) -> std::result::Result<LaneWise<'_>, &BatchedFn> {
    Ok(match kernel {
        Kernel::LaneWise(f) => (id, f.as_ref(), false, None),
        Kernel::LaneWiseInPlace(f) => (id, f.as_ref(), true, None),
        Kernel::LaneWiseDirect(f, direct) => (id, f.as_ref(), true, Some(direct.as_ref())),
        Kernel::Batched(f) => return Err(f.as_ref()),
    })
}

/// Inputs a kernel reads from rows set aside rather than from storage, by variable (see
/// [`Exec::run_reading`]).
pub(crate) type AsideInputs<'a> = &'a [(Var, &'a [Leaf])];

/// Runs the ops of one program on one batch's storage.
pub(crate) struct Exec<'p> {
    /// The program whose ops run.
    pub(crate) program: &'p Program,
    kernels: &'p [Kernel],
    /// The run's context, handed to every kernel call.
    context: Context<'p>,
    /// Every variable's rows.
    pub(crate) storage: Storage<'p>,
    pool: ColumnPool,
    /// The (variable, leaf) sources of the assignment being run, kept for their allocation.
    sources: Vec<(Var, usize)>,
    /// Fresh arena rows of the lane-wise kernel being run, kept for their allocation.
    fresh: Vec<u32>,
    /// The input and output columns of the direct call being run, kept for their allocation.
    direct: RefCell<direct::Columns>,
    /// How each lane-wise op writes its outputs, decided on its first call.
    layouts: Layouts,
    /// Whether kernel calls are timed ([`Config::time_kernels`](crate::Config::time_kernels)).
    time_kernels: bool,
}

pub(crate) fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        format!("panicked: {s}")
    } else if let Some(s) = payload.downcast_ref::<String>() {
        format!("panicked: {s}")
    } else {
        "panicked".to_string()
    }
}

impl<'p> Exec<'p> {
    /// Runs `program`'s ops with `kernels` (given `context`) on `storage`, kernels writing
    /// into `pool`'s columns, timing kernel calls if `time_kernels`.
    pub(crate) fn new(
        program: &'p Program,
        kernels: &'p [Kernel],
        context: Context<'p>,
        (storage, pool): (Storage<'p>, ColumnPool),
        time_kernels: bool,
    ) -> Self {
        Exec {
            program,
            kernels,
            context,
            storage,
            pool,
            sources: Vec::new(),
            fresh: Vec::new(),
            direct: RefCell::default(),
            layouts: Layouts::default(),
            time_kernels,
        }
    }

    /// Ends the run: storage's columns and the kernels' output columns, kept for the next.
    pub(crate) fn into_spare(self) -> Spare {
        let mut spare = self.storage.into_spare();
        spare.pool = self.pool;
        spare
    }

    fn block_name(&self, b: Block) -> String {
        self.program.block(b).name.clone()
    }

    /// Runs one primitive op on `lanes`: kernel on the active lanes, then the writes.
    pub(crate) fn run_prim(
        &mut self,
        op: &PrimOp,
        lanes: &[usize],
        block: Block,
        stats: &mut Stats,
    ) -> Result<()> {
        self.run_reading(op, lanes, block, stats, &[])
    }

    /// Whether `op` runs a lane-wise kernel (one [`run_reading`](Self::run_reading) can give
    /// inputs that are not in storage).
    pub(crate) fn is_lane_wise(&self, op: &PrimOp) -> bool {
        let kernel = match op.kernel {
            KernelRef::User(id) => self.kernels.get(id.index()),
            KernelRef::Assign => None,
        };
        matches!(
            kernel,
            Some(Kernel::LaneWise(_) | Kernel::LaneWiseInPlace(_) | Kernel::LaneWiseDirect(..))
        )
    }

    /// [`run_prim`](Self::run_prim), with the inputs `aside` read from rows set aside rather
    /// than from storage (variables the caller of a call still needs, whose rows the callee
    /// writes: [`Storage::set_aside`](crate::storage::Storage::set_aside)). Only a lane-wise
    /// kernel ([`is_lane_wise`](Self::is_lane_wise)) reads such inputs: any other op is given
    /// none.
    pub(crate) fn run_reading(
        &mut self,
        op: &PrimOp,
        lanes: &[usize],
        block: Block,
        stats: &mut Stats,
        aside: AsideInputs<'_>,
    ) -> Result<()> {
        // An assignment whose outputs are inputs only as their own sources (`v = v`, how
        // lowering passes a parameter through to a recursive call) copies rows directly; one
        // that permutes its own variables (`a, b = b, a`) goes through dense columns below.
        let copies = op.kernel == KernelRef::Assign && self.only_self_copies(op);
        if copies && aside.is_empty() {
            return self.assign(op, lanes, block);
        }
        let Some((id, kernel)) = self.kernel(op, block)? else {
            return self.run_dense(op, None, lanes, block, stats);
        };
        match lane_wise_parts(id, kernel) {
            Ok(kernel) => self
                .run_lane_wise(op, kernel, lanes, block, stats, (None, aside))
                .map(drop),
            Err(batched) => self.run_dense(op, Some((id, batched)), lanes, block, stats),
        }
    }

    /// The kernel `op` runs (none for an assignment), with its index in the kernel table.
    fn kernel(&self, op: &PrimOp, block: Block) -> Result<Option<(usize, &'p Kernel)>> {
        let kernels = self.kernels;
        Ok(match op.kernel {
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
        })
    }

    /// Runs `op`, the last op of a block that branches on its output `cond` (a `bool` read by
    /// the branch alone, written once by `op`, not read by it), on `lanes`. A lane-wise kernel
    /// that can splits the lanes by their condition as it computes it, into `yes` and `no`
    /// (`true` returned): the condition is neither written nor read back. Otherwise `op` runs
    /// as [`run_prim`](Self::run_prim) runs it (`false` returned) and the caller splits the
    /// lanes by `cond`.
    pub(crate) fn run_branch(
        &mut self,
        (op, cond): (&PrimOp, Var),
        lanes: &[usize],
        block: Block,
        stats: &mut Stats,
        lists: Sides<'_>,
    ) -> Result<bool> {
        let condition = [TensorType::scalar(DType::Bool)];
        let storage = &self.storage;
        let at = op.outs.iter().position(|&v| v == cond);
        let leaf = at
            .filter(|_| storage.types(cond) == condition && !op.ins.contains(&cond))
            .map(|at| {
                let before = &op.outs[..at];
                before
                    .iter()
                    .map(|&v| storage.types(v).len())
                    .sum::<usize>()
            });
        let kernel = self.kernel(op, block)?;
        match (kernel.and_then(|(id, k)| lane_wise_parts(id, k).ok()), leaf) {
            (Some(kernel), Some(leaf)) => {
                let split = (Some((leaf, lists)), &[][..]);
                self.run_lane_wise(op, kernel, lanes, block, stats, split)
            }
            _ => self.run_prim(op, lanes, block, stats).map(|()| false),
        }
    }

    /// Runs an assignment (`outs = ins`, leaf by leaf, no output among the inputs) on `lanes`
    /// by copying rows straight from the inputs' storage into the outputs' (shared vector
    /// rows are not copied at all: the outputs take the inputs' handles).
    fn assign(&mut self, op: &PrimOp, lanes: &[usize], block: Block) -> Result<()> {
        for &v in &op.ins {
            self.storage.read(v, lanes, block)?;
        }
        // The input leaves in order, as (variable, leaf) pairs.
        let storage = &self.storage;
        let mut inputs = op
            .ins
            .iter()
            .flat_map(|&v| (0..storage.types(v).len()).map(move |leaf| (v, leaf)));
        let mut sources = std::mem::take(&mut self.sources);
        sources.clear();
        for &v in &op.outs {
            let n = storage.types(v).len();
            let before = sources.len();
            sources.extend(inputs.by_ref().take(n));
            if sources.len() - before != n {
                let found = format!("only {} leaves", sources.len() - before);
                self.sources = sources;
                return Err(RuntimeError::ValueType {
                    block: self.block_name(block),
                    var: self.program.var(v).name.clone(),
                    expected: self.program.var(v).ty.to_string(),
                    found,
                });
            }
        }
        let result = self.assign_sources(op, lanes, block, &sources);
        self.sources = sources;
        result
    }

    /// Whether every input of assignment `op` that is also one of its outputs is that output's
    /// own source (the same offset in the two leaf lists): then copying output by output never
    /// overwrites a leaf a later output still reads.
    fn only_self_copies(&self, op: &PrimOp) -> bool {
        let leaves = |v: Var| self.storage.types(v).len();
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
    fn assign_sources(
        &mut self,
        op: &PrimOp,
        lanes: &[usize],
        block: Block,
        sources: &[(Var, usize)],
    ) -> Result<()> {
        let mut next = 0;
        for &v in &op.outs {
            let n = self.storage.types(v).len();
            let mine = &sources[next..next + n];
            next += n;
            if self.storage.is_null(v) {
                continue;
            }
            if !op.is_in_place(v) {
                self.storage.push(v, lanes, block)?;
            }
            for (leaf, &from) in mine.iter().enumerate() {
                if from != (v, leaf) {
                    self.storage.copy_leaf((v, leaf), from, lanes, block)?;
                }
            }
            self.storage.mark_written(v, lanes);
        }
        Ok(())
    }

    /// Runs a lane-wise kernel (`kernel`: its index, body, and whether it is in place, see
    /// [`Kernel::lane_wise_in_place`]): inputs read in storage (those `aside`, in the rows
    /// given); scalar outputs written by lane
    /// straight into storage if the kernel asks for them so
    /// ([`OutputLeaf::scalars`](crate::OutputLeaf::scalars)) and they are no input (any, for
    /// an in-place kernel: it reads a lane's inputs before writing there), else into dense
    /// columns then scattered; `f64` vector outputs written in place into fresh arena rows that
    /// the output variables then take over (no staging copy). With `split` (a branch
    /// condition's output leaf and two lists), the kernel may send the lanes to the lists by
    /// that leaf's value instead of writing it
    /// ([`OutputLeaf::scalars`](crate::OutputLeaf::scalars) then
    /// [`ScalarsOut::split`](crate::ScalarsOut::split)); `true` if it did.
    fn run_lane_wise(
        &mut self,
        op: &PrimOp,
        (id, f, reads_first, direct): LaneWise<'_>,
        lanes: &[usize],
        block: Block,
        stats: &mut Stats,
        (mut split, aside): (Option<(usize, Sides<'_>)>, AsideInputs<'_>),
    ) -> Result<bool> {
        let layout = self.layouts.get(op, reads_first, &self.storage);
        if let Some(direct) = direct.filter(|_| layout.in_place_only) {
            let (called, lanes) = ((id, direct, &*layout), (lanes, aside));
            if let Some(split) = self.run_direct(op, called, lanes, (block, stats), &mut split)? {
                return Ok(split);
            }
        }
        self.run_general(op, (id, f, &layout), lanes, (block, stats), (split, aside))
    }

    /// [`run_lane_wise`](Self::run_lane_wise) through the kernel's general body `f`, with the
    /// op's `layout` (out of line: the direct path, taken by most calls of scalar kernels,
    /// does not pay for this one's frame).
    #[inline(never)]
    fn run_general(
        &mut self,
        op: &PrimOp,
        (id, f, layout): (usize, &LaneWiseFn, &Layout),
        lanes: &[usize],
        (block, stats): (Block, &mut Stats),
        (split, aside): (Option<(usize, Sides<'_>)>, AsideInputs<'_>),
    ) -> Result<bool> {
        let n = lanes.len();
        if layout.pushes_first {
            for out in layout.outputs.iter().filter(|o| o.push == Push::Before) {
                self.storage.push(out.var, lanes, block)?;
            }
        }
        let vector_len = self.storage.vector_len();
        // A kernel whose leaves are all offered by lane or fresh needs nothing from the pool.
        let pooled = !layout.dense_types.is_empty();
        let mut columns = match pooled {
            true => (self.pool).columns(layout.dense_types.iter().copied(), n, vector_len),
            false => Vec::new(),
        };
        let mut stand_ins = layout.stand_ins.borrow_mut();
        let mut fresh = std::mem::take(&mut self.fresh);
        fresh.clear();
        if let Some((leaves, v)) = layout.fresh {
            self.storage
                .alloc_fresh(leaves * n, &mut fresh, v, block, lanes)?;
        }
        let view = self.storage.arena_view();
        // Per leaf: the rows writable by lane, whether the kernel wrote them so and whether it
        // asked for the stand-in column. Pushed one by one: a handful of leaves, where
        // `collect`'s reserve costs more.
        let mut calls: SmallVec<[LeafCall; 8]> = SmallVec::new();
        for place in &layout.places {
            let target = match place.write {
                Write::ByLane => self.storage.lane_rows(place.var, place.leaf),
                _ => None,
            };
            calls.push(LeafCall {
                target,
                wrote: Cell::new(false),
                asked: Cell::new(false),
            });
        }
        let progress = Cell::new(0usize);
        let used = Cell::new(false);
        let split_leaf = split.as_ref().map(|&(leaf, _)| leaf);
        let mut split_lists = split.map(|(_, lists)| lists);
        let result = {
            let mut ins = LaneInputs::from_storage(lanes, &progress, self.context);
            for &v in &op.ins {
                let leaves = match aside.iter().find(|&&(a, _)| a == v) {
                    Some(&(_, leaves)) => leaves,
                    None => self.storage.read(v, lanes, block)?,
                };
                for (i, leaf) in leaves.iter().enumerate() {
                    ins.push_leaf(
                        match leaf.dense().filter(|_| layout.aliased.contains(&(v, i))) {
                            // Written by lane in this call: read by value only.
                            Some(rows) => LeafView::InPlace(rows),
                            None => leaf.view(view),
                        },
                    );
                }
            }
            let mut dense = columns.iter_mut();
            let mut stand = stand_ins.iter_mut();
            let mut rows = fresh.chunks_exact(n.max(1));
            let mut outs = LaneOutputs::from_leaves(SmallVec::new());
            for (i, (place, call)) in layout.places.iter().zip(&calls).enumerate() {
                let (target, wrote, asked) = (call.target, &call.wrote, &call.asked);
                // A branch condition: the kernel may split the lanes by it.
                let split = split_lists.take_if(|_| split_leaf == Some(i));
                let condition = |c, (yes, no)| {
                    let lists = SplitLanes {
                        lanes,
                        progress: &progress,
                        yes,
                        no,
                        used: &used,
                    };
                    OutLeaf::Split(c, lists)
                };
                let next = match place.write {
                    Write::Fresh => rows
                        .next()
                        .map(|handles| OutLeaf::Fresh(FreshRows::new(view, handles))),
                    Write::ByLane => stand.next().map(|c| {
                        let c = StandIn::new(c, n, asked);
                        match (split, target) {
                            (Some(sides), _) => condition(c, sides),
                            // The rows belong to an output that is no other output leaf and
                            // no input, or an input read by value only (`by_lane`,
                            // `LeafView::InPlace`), and storage is only read meanwhile.
                            (None, Some(rows)) => OutLeaf::Lanes(LaneRows::new(rows, c, wrote)),
                            (None, None) => OutLeaf::Dense(c.into_column()),
                        }
                    }),
                    Write::Dense => dense.next().map(|c| match split {
                        Some(sides) => condition(StandIn::new(c, n, asked), sides),
                        None => OutLeaf::Dense(c),
                    }),
                };
                // With no lanes there are no fresh rows: an empty leaf stands in.
                outs.push_leaf(next.unwrap_or(OutLeaf::Fresh(FreshRows::new(view, &[]))));
            }
            let clock = KernelClock::start(self.time_kernels);
            let r = catch_quietly(|| f(&ins, &mut outs));
            stats.record_kernel(id, n, clock.elapsed(), false);
            r
        };
        // The branch condition the kernel split the lanes by is not written.
        let unwritten = split_leaf.filter(|_| used.get());
        // Every leaf written in place (by lane, or as the lanes split): nothing to check or
        // scatter, only the outputs to mark written.
        if layout.in_place_only
            && matches!(result, Ok(Ok(())))
            && calls
                .iter()
                .enumerate()
                .all(|(i, c)| c.wrote.get() || unwritten == Some(i))
        {
            for out in &layout.outputs {
                if !out.leaves.contains(&unwritten.unwrap_or(usize::MAX)) {
                    self.storage.mark_written(out.var, lanes);
                }
            }
            drop(stand_ins);
            self.fresh = fresh;
            return Ok(unwritten.is_some());
        }
        let checked = match self.failure(result, &progress, op, lanes, block) {
            Some(e) => Err(e),
            None => self.check_lane_wise(
                (op, layout),
                (&columns, &mut stand_ins),
                (&calls, unwritten),
                n,
                block,
            ),
        };
        if let Err(e) = checked {
            self.storage.release_fresh(&fresh);
            self.fresh = fresh;
            return Err(e);
        }
        // The writes: fresh rows pass to their variables, dense columns are scattered (rows
        // written by lane are in place already, and so are the lanes split by a condition).
        let mut dense = columns.iter();
        let mut stand = stand_ins.iter();
        let mut rows = fresh.chunks_exact(n.max(1));
        for out in &layout.outputs {
            let v = out.var;
            if out.push == Push::After {
                self.storage.push(v, lanes, block)?;
            }
            let mut split_by = false;
            for i in out.leaves.clone() {
                let (place, call) = (&layout.places[i], &calls[i]);
                split_by |= unwritten == Some(i);
                let column = match place.write {
                    Write::Fresh => {
                        let handles = rows.next().unwrap_or(&[]);
                        self.storage.install(v, place.leaf, lanes, handles);
                        None
                    }
                    Write::ByLane => stand.next(),
                    Write::Dense => dense.next(),
                };
                if let Some(c) = column.filter(|_| call.scattered(i, unwritten)) {
                    self.storage.scatter(v, place.leaf, lanes, c, block)?;
                }
            }
            if !split_by {
                self.storage.mark_written(v, lanes);
            }
        }
        drop(stand_ins);
        self.fresh = fresh;
        if pooled {
            self.pool.recycle(columns);
        }
        Ok(unwritten.is_some())
    }

    /// Checks the dense columns a lane-wise kernel call left to scatter (see
    /// [`LeafCall::scattered`] and [`check_column`](Self::check_column)), the pool's and the
    /// stand-ins (a stand-in the kernel did not ask for is sized first: a kernel that wrote
    /// nothing there leaves what the column held).
    fn check_lane_wise(
        &self,
        (op, layout): (&PrimOp, &Layout),
        (columns, stand_ins): (&[Column], &mut [Column]),
        (calls, unwritten): (&[LeafCall], Option<usize>),
        rows: usize,
        block: Block,
    ) -> Result<()> {
        let (mut dense, mut stand) = (columns.iter(), stand_ins.iter_mut());
        for (i, (place, call)) in layout.places.iter().zip(calls).enumerate() {
            let scattered = call.scattered(i, unwritten);
            let column = match place.write {
                Write::Fresh => None,
                Write::Dense => dense.next(),
                Write::ByLane => stand.next().map(|c| {
                    if scattered && !call.asked.get() {
                        c.resize_to(rows);
                    }
                    &*c
                }),
            };
            if let Some(c) = column.filter(|_| scattered) {
                self.check_column(op, (i, c, &place.ty), rows, block)?;
            }
        }
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
        let types = self.output_types(op);
        let vector_len = self.storage.vector_len();
        let mut outputs = self
            .pool
            .columns(types.iter().copied(), lanes.len(), vector_len);
        let progress = Cell::new(0usize);
        let result = {
            let storage = &self.storage;
            let mut inputs: SmallVec<[&Leaf; 16]> = SmallVec::new();
            for &v in &op.ins {
                inputs.extend(storage.read(v, lanes, block)?.iter());
            }
            match batched {
                None => {
                    for (out, input) in outputs.iter_mut().zip(&inputs) {
                        *out = input.gather(storage.arena(), lanes);
                    }
                    Ok(Ok(()))
                }
                Some((id, f)) => {
                    let clock = KernelClock::start(self.time_kernels);
                    // With every lane active, dense storage rows are the kernel's rows.
                    let all = lanes.len() == storage.batch();
                    let pool = &mut self.pool;
                    let dense: SmallVec<[Cow<'_, Column>; 8]> = inputs
                        .iter()
                        .map(|leaf| match leaf.dense() {
                            Some(rows) if all => Cow::Borrowed(rows),
                            _ => {
                                let (dtype, width) = leaf.kind(storage.arena());
                                let out = pool.take(dtype, width);
                                Cow::Owned(leaf.gather_into(storage.arena(), lanes, out))
                            }
                        })
                        .collect();
                    let refs: SmallVec<[&Column; 8]> = dense.iter().map(|c| c.as_ref()).collect();
                    let r = catch_quietly(|| f(self.context, &refs, &mut outputs));
                    stats.record_kernel(id, lanes.len(), clock.elapsed(), true);
                    drop(refs);
                    for c in dense {
                        if let Cow::Owned(c) = c {
                            pool.put(c);
                        }
                    }
                    r
                }
            }
        };
        let result = match batched {
            Some((_, f)) => self.locate(op, f, lanes, block, result)?,
            None => result,
        };
        if let Some(e) = self.failure(result, &progress, op, lanes, block) {
            return Err(e);
        }
        self.check_columns(op, &outputs, types.iter(), lanes.len(), block)?;
        let mut rest = outputs.as_mut_slice();
        for &v in &op.outs {
            let n = self.storage.types(v).len();
            let (mine, tail) = std::mem::take(&mut rest).split_at_mut(n);
            rest = tail;
            let in_place = op.is_in_place(v);
            self.storage.write_owned(v, lanes, mine, !in_place, block)?;
        }
        self.pool.recycle(outputs);
        Ok(())
    }

    /// The tensor leaves `op` writes, in storage order.
    fn output_types(&self, op: &PrimOp) -> SmallVec<[TensorType; 16]> {
        op.outs
            .iter()
            .flat_map(|&v| self.storage.types(v).iter().copied())
            .collect()
    }

    /// A batched kernel that failed without naming a lane (it panicked, or returned an error for
    /// the whole call) is run again on each active lane alone, so the error names the first
    /// lane that fails by itself (batched kernels are row-wise: a row depends on its own lane
    /// only). That is what lets lane isolation set aside the lane at fault and no other. If no
    /// lane fails alone, the error stays one for the whole call. Only a failed call pays for this.
    fn locate(
        &mut self,
        op: &PrimOp,
        f: &BatchedFn,
        lanes: &[usize],
        block: Block,
        result: std::thread::Result<std::result::Result<(), KernelError>>,
    ) -> Result<std::thread::Result<std::result::Result<(), KernelError>>> {
        let message = match result {
            Ok(Err(e)) if e.position.is_none() => e.message,
            Err(payload) => panic_message(payload),
            other => return Ok(other),
        };
        for (k, &lane) in lanes.iter().enumerate() {
            if self.fails_alone(op, f, lane, block)? {
                return Ok(Ok(Err(KernelError::at(k, message))));
            }
        }
        Ok(Ok(Err(KernelError::whole(message))))
    }

    /// Whether batched kernel `f` fails (or panics) when `lane` is its only row.
    fn fails_alone(
        &mut self,
        op: &PrimOp,
        f: &BatchedFn,
        lane: usize,
        block: Block,
    ) -> Result<bool> {
        let one = [lane];
        let types = self.output_types(op);
        let vector_len = self.storage.vector_len();
        let mut outputs = self.pool.columns(types.iter().copied(), 1, vector_len);
        let storage = &self.storage;
        let mut inputs: Vec<Column> = Vec::new();
        for &v in &op.ins {
            for leaf in storage.read(v, &one, block)? {
                let (dtype, width) = leaf.kind(storage.arena());
                let out = self.pool.take(dtype, width);
                inputs.push(leaf.gather_into(storage.arena(), &one, out));
            }
        }
        let refs: Vec<&Column> = inputs.iter().collect();
        let failed = !matches!(
            catch_quietly(|| f(self.context, &refs, &mut outputs)),
            Ok(Ok(()))
        );
        drop(refs);
        for c in inputs {
            self.pool.put(c);
        }
        self.pool.recycle(outputs);
        Ok(failed)
    }

    /// The error a kernel's `result` means, if any, naming the lane at fault. Inlined: a call
    /// that succeeded costs one test here, the error is built out of line.
    #[inline]
    fn failure(
        &self,
        result: std::thread::Result<std::result::Result<(), KernelError>>,
        progress: &Cell<usize>,
        op: &PrimOp,
        lanes: &[usize],
        block: Block,
    ) -> Option<RuntimeError> {
        match result {
            Ok(Ok(())) => None,
            Ok(Err(e)) => Some(self.kernel_error(e, op, lanes, block)),
            Err(payload) => {
                let e = KernelError::at(progress.get(), panic_message(payload));
                Some(self.kernel_error(e, op, lanes, block))
            }
        }
    }

    /// The run's error for kernel error `e` of `op` on `lanes`.
    #[cold]
    fn kernel_error(
        &self,
        e: KernelError,
        op: &PrimOp,
        lanes: &[usize],
        block: Block,
    ) -> RuntimeError {
        let lane = e
            .position
            .and_then(|k| lanes.get(k))
            .or(lanes.first())
            .copied()
            .unwrap_or(0);
        RuntimeError::Kernel {
            block: self.block_name(block),
            source_text: op.source.clone(),
            lane,
            message: e.message,
        }
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
            self.check_column(op, (leaf, c, ty), rows, block)?;
        }
        Ok(())
    }

    /// Checks that a kernel left dense output column `c` of output leaf `leaf` with the leaf's
    /// dtype (`ty`) and width and a row per lane.
    fn check_column(
        &self,
        op: &PrimOp,
        (leaf, c, ty): (usize, &Column, &TensorType),
        rows: usize,
        block: Block,
    ) -> Result<()> {
        let (dtype, width) = (ty.dtype, width_of(*ty, self.storage.vector_len()));
        if c.dtype() != dtype || c.width() != width || c.rows() != rows {
            return Err(RuntimeError::KernelOutput {
                block: self.block_name(block),
                source_text: op.source.clone(),
                leaf,
                expected: format!("{dtype} [{rows}, {width}]"),
                found: format!("{} [{}, {}]", c.dtype(), c.rows(), c.width()),
            });
        }
        Ok(())
    }
}

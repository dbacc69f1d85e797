//! Variable storage by allocation, and the execution of straight-line ops on a set of lanes.
//!
//! NULL variables have no storage (writes are dropped, reads are errors); TEMPORARY and
//! REGISTER variables hold one `[batch, width]` column per leaf; FULL variables add their saved
//! frames, stack-major (`row = depth * batch + lane`, as in the reference) in one column per
//! leaf that grows by doubling, and a per-lane depth. Every operation touches only the rows of
//! the lanes it is given, so its cost scales with the active lanes; each dispatches on the
//! dtype once per leaf and then copies rows in a tight loop.

use crate::column::{width_of, Column};
use crate::config::Stats;
use crate::error::{Result, RuntimeError};
use crate::kernel::{Kernel, KernelError, LaneInputs};
use autobatch_ir::{Allocation, Block, KernelRef, PrimOp, Program, TensorType, Var};
use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::time::Instant;

struct VarStore {
    alloc: Allocation,
    /// Leaf types, in storage order.
    types: Vec<TensorType>,
    /// The current value of each leaf, `[batch, width]`.
    leaves: Vec<Column>,
    /// FULL only: saved frames of each leaf, `[levels * batch, width]`, stack-major.
    stack: Vec<Column>,
    /// Frames per lane the `stack` columns can hold.
    levels: usize,
    /// FULL only: saved frames per lane.
    depth: Vec<u32>,
    /// With safety checks: whether each lane has been written.
    set: Vec<bool>,
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
    pub(crate) batch: usize,
    pub(crate) vector_len: usize,
    max_depth: usize,
    safety: bool,
    stacks: Stacks,
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
                let column = |rows| -> Vec<Column> {
                    types
                        .iter()
                        .map(|t| Column::zeros(t.dtype, rows, width_of(*t, vector_len)))
                        .collect()
                };
                VarStore {
                    alloc: d.alloc,
                    leaves: if d.alloc == Allocation::Null {
                        Vec::new()
                    } else {
                        column(batch)
                    },
                    stack: if full { column(0) } else { Vec::new() },
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

    /// The leaf columns of `v`, checking that it is readable in `lanes`.
    pub(crate) fn read(&self, v: Var, lanes: &[usize], block: Block) -> Result<&[Column]> {
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
        let VarStore {
            leaves,
            stack,
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
            for saved in stack.iter_mut() {
                *saved = saved.grown(*levels * batch);
            }
        }
        for (saved, cur) in stack.iter_mut().zip(leaves.iter()) {
            saved.copy_rows(
                cur,
                lanes.iter().map(|&l| (depth[l] as usize * batch + l, l)),
            );
        }
        lanes.iter().for_each(|&l| depth[l] += 1);
        Ok(())
    }

    /// Restores the last saved value of `v` in `lanes`; no-op unless stacked.
    pub(crate) fn pop(&mut self, v: Var, lanes: &[usize], block: Block) -> Result<()> {
        if !self.is_stacked(v) {
            return Ok(());
        }
        let batch = self.batch;
        let VarStore {
            leaves,
            stack,
            depth,
            ..
        } = &mut self.vars[v.index()];
        if let Some(&lane) = lanes.iter().find(|&&l| depth[l] == 0) {
            return Err(RuntimeError::PopEmpty {
                var: self.program.var(v).name.clone(),
                lane,
                block: self.program.block(block).name.clone(),
            });
        }
        lanes.iter().for_each(|&l| depth[l] -= 1);
        for (cur, saved) in leaves.iter_mut().zip(stack.iter()) {
            cur.copy_rows(
                saved,
                lanes.iter().map(|&l| (l, depth[l] as usize * batch + l)),
            );
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
        for (leaf, value) in store.leaves.iter_mut().zip(values) {
            leaf.scatter(lanes, value);
        }
        if self.safety {
            for &lane in lanes {
                store.set[lane] = true;
            }
        }
        Ok(())
    }

    /// Like [`write`](Self::write) for values the caller no longer needs: with every lane
    /// active, the value columns are swapped into storage instead of copied.
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
            && store.leaves.iter().zip(values.iter()).all(|(a, b)| {
                a.dtype() == b.dtype() && a.width() == b.width() && a.rows() == b.rows()
            });
        if !whole {
            return self.write(v, lanes, values, push, block);
        }
        if push {
            self.push(v, lanes, block)?;
        }
        let store = &mut self.vars[v.index()];
        for (leaf, value) in store.leaves.iter_mut().zip(values.iter_mut()) {
            std::mem::swap(leaf, value);
        }
        store.set.iter_mut().for_each(|s| *s = true);
        Ok(())
    }

    /// Copies the rows of `lanes` of `v`'s leaves into new dense columns.
    pub(crate) fn gather(&self, v: Var, lanes: &[usize], block: Block) -> Result<Vec<Column>> {
        Ok(self
            .read(v, lanes, block)?
            .iter()
            .map(|c| c.gather(lanes))
            .collect())
    }

    /// Reads a scalar `bool` variable for `lanes`.
    pub(crate) fn read_bools(&self, v: Var, lanes: &[usize], block: Block) -> Result<Vec<bool>> {
        let col = &self.read(v, lanes, block)?[0];
        let data = col.as_slice::<bool>().ok_or_else(|| {
            RuntimeError::ModeUnsupported(format!(
                "branch condition `{}` is not bool",
                self.name(v)
            ))
        })?;
        Ok(lanes.iter().map(|&l| data[l]).collect())
    }

    /// Dense zeroed columns for the leaves of `outs`, `rows` rows each.
    fn output_columns(&self, outs: &[Var], rows: usize) -> Vec<Column> {
        outs.iter()
            .flat_map(|&v| &self.vars[v.index()].types)
            .map(|t| Column::zeros(t.dtype, rows, width_of(*t, self.vector_len)))
            .collect()
    }

    /// Runs an assignment (`outs = ins`, leaf by leaf, no output among the inputs) on `lanes`
    /// by copying rows straight from the inputs' storage into the outputs' (one copy, no
    /// intermediate columns).
    fn assign(&mut self, op: &PrimOp, lanes: &[usize], block: Block) -> Result<()> {
        let mut sources: Vec<(usize, usize)> = Vec::new();
        for &v in &op.ins {
            let n = self.read(v, lanes, block)?.len();
            sources.extend((0..n).map(|leaf| (v.index(), leaf)));
        }
        let mut next = sources.into_iter();
        for (i, &v) in op.outs.iter().enumerate() {
            let n = self.vars[v.index()].types.len();
            let mine: Vec<(usize, usize)> = next.by_ref().take(n).collect();
            if mine.len() != n {
                return Err(RuntimeError::KernelOutput {
                    block: self.block_name(block),
                    source_text: op.source.clone(),
                    leaf: mine.len(),
                    expected: format!("{n} leaves for `{}`", self.name(v)),
                    found: "too few input leaves".into(),
                });
            }
            if self.vars[v.index()].alloc == Allocation::Null {
                continue;
            }
            if !op.in_place.get(i).copied().unwrap_or(false) {
                self.push(v, lanes, block)?;
            }
            let d = v.index();
            for (leaf, (s, s_leaf)) in mine.into_iter().enumerate() {
                let (src, dst) = if s < d {
                    let (a, b) = self.vars.split_at_mut(d);
                    (&a[s].leaves[s_leaf], &mut b[0].leaves[leaf])
                } else {
                    let (a, b) = self.vars.split_at_mut(s);
                    (&b[0].leaves[s_leaf], &mut a[d].leaves[leaf])
                };
                if !dst.copy_rows(src, lanes.iter().map(|&l| (l, l))) {
                    let expected = format!("{} [{}, {}]", dst.dtype(), lanes.len(), dst.width());
                    let found = format!("{} [{}, {}]", src.dtype(), lanes.len(), src.width());
                    return Err(RuntimeError::KernelOutput {
                        block: self.block_name(block),
                        source_text: op.source.clone(),
                        leaf,
                        expected,
                        found,
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
        // An assignment whose outputs are not among its inputs copies rows directly; one that
        // permutes its own variables (`a, b = b, a`) goes through dense columns below.
        if op.kernel == KernelRef::Assign && !op.outs.iter().any(|o| op.ins.contains(o)) {
            return self.assign(op, lanes, block);
        }
        let mut outputs = self.output_columns(&op.outs, lanes.len());
        let expected: Vec<(autobatch_ir::DType, usize)> =
            outputs.iter().map(|c| (c.dtype(), c.width())).collect();
        {
            let mut inputs: Vec<&Column> = Vec::new();
            for &v in &op.ins {
                inputs.extend(self.read(v, lanes, block)?.iter());
            }
            match op.kernel {
                KernelRef::Assign => {
                    for (out, input) in outputs.iter_mut().zip(&inputs) {
                        *out = input.gather(lanes);
                    }
                }
                KernelRef::User(id) => {
                    let kernel = self.kernels.get(id.index()).ok_or_else(|| {
                        RuntimeError::MissingKernel {
                            block: self.block_name(block),
                            kernel: id.index(),
                            source_text: op.source.clone(),
                            table: self.kernels.len(),
                        }
                    })?;
                    stats.record_kernel(id.index(), lanes.len());
                    let progress = Cell::new(0usize);
                    let start = Instant::now();
                    let result = match kernel {
                        Kernel::LaneWise(f) => {
                            let ins = LaneInputs::new(&inputs, lanes, &progress);
                            let r = catch_unwind(AssertUnwindSafe(|| f(&ins, &mut outputs)));
                            stats.lane_kernel_time += start.elapsed();
                            r
                        }
                        Kernel::Batched(f) => {
                            // With every lane active the storage rows are the dense rows.
                            let gathered: Vec<Column> = if lanes.len() == self.batch {
                                Vec::new()
                            } else {
                                inputs.iter().map(|c| c.gather(lanes)).collect()
                            };
                            let dense: Vec<&Column> = if gathered.is_empty() {
                                inputs.clone()
                            } else {
                                gathered.iter().collect()
                            };
                            let r = catch_unwind(AssertUnwindSafe(|| f(&dense, &mut outputs)));
                            stats.batched_kernel_time += start.elapsed();
                            r
                        }
                    };
                    let failure = match result {
                        Ok(Ok(())) => None,
                        Ok(Err(e)) => Some(e),
                        Err(payload) => {
                            Some(KernelError::at(progress.get(), panic_message(payload)))
                        }
                    };
                    if let Some(e) = failure {
                        let lane = e
                            .position
                            .and_then(|k| lanes.get(k))
                            .or(lanes.first())
                            .copied()
                            .unwrap_or(0);
                        return Err(RuntimeError::Kernel {
                            block: self.block_name(block),
                            source_text: op.source.clone(),
                            lane,
                            message: e.message,
                        });
                    }
                }
            }
        }
        for (leaf, (c, (dtype, width))) in outputs.iter().zip(&expected).enumerate() {
            if c.dtype() != *dtype || c.width() != *width || c.rows() != lanes.len() {
                return Err(RuntimeError::KernelOutput {
                    block: self.block_name(block),
                    source_text: op.source.clone(),
                    leaf,
                    expected: format!("{dtype} [{}, {width}]", lanes.len()),
                    found: format!("{} [{}, {}]", c.dtype(), c.rows(), c.width()),
                });
            }
        }
        let mut rest = outputs.as_mut_slice();
        for (i, &v) in op.outs.iter().enumerate() {
            let n = self.vars[v.index()].types.len();
            let (mine, tail) = std::mem::take(&mut rest).split_at_mut(n);
            rest = tail;
            let in_place = op.in_place.get(i).copied().unwrap_or(false);
            self.write_owned(v, lanes, mine, !in_place, block)?;
        }
        Ok(())
    }
}

//! Compiled blocks: code `#[autobatch]` generates for the full VM's lowered blocks of a
//! function it can lower by itself, run instead of the block's ops. Where the VM runs a block
//! op by op (each kernel, push and pop a pass over the block's lanes), a compiled block runs
//! all of them for one lane, then the next. What it may touch is what [`BlockRun`] hands it:
//! the block's lanes, each variable's rows (and saved frames) as a [`LaneVar`], and the two
//! lists a branch sends lanes to; what the VM checks per op it checks per lane (the depth
//! limit, the memory budget as saved rows grow, empty stacks), with the same errors. Reads are
//! not checked for a prior write: compiled blocks exist only for high-level programs, whose
//! reads the verifier proved written, and run only where storage checks no reads.
//!
//! A compiled program carries the fingerprint of the lowered program it was generated from;
//! an [`Executable`](crate::Executable) uses it only if its own lowered program has that
//! fingerprint (the same blocks, ops, variables and allocations), so a function linked with
//! others, or prepared with other passes, runs interpreted.

use crate::column::Element;
use crate::error::{Result, RuntimeError};
use crate::panics::Quiet;
use crate::stats::Stats;
use crate::storage::Storage;
use autobatch_ir::{Block, Op, Program, Var};
use std::cell::Cell;

/// A compiled block: the block's ops for each of its lanes, lane by lane.
pub type BlockFn = fn(&mut BlockRun<'_, '_>) -> Result<()>;

/// The compiled blocks of one lowered program: its fingerprint
/// ([`autobatch_ir::fingerprint()`]) and, per block in order, its compiled form if it has one.
#[derive(Clone, Copy, Debug)]
pub struct CompiledBlocks {
    /// The fingerprint of the lowered program the blocks were compiled from.
    pub fingerprint: u64,
    /// Per block of that program, its compiled form.
    pub blocks: &'static [Option<BlockFn>],
}

/// The parts of each variable (by index) compiled blocks took in one run, reused while
/// storage has not moved them since.
#[derive(Default)]
pub(crate) struct PartsCache(Vec<Option<CachedParts>>);

impl PartsCache {
    /// Room for `vars` variables, none taken.
    pub(crate) fn new(vars: usize) -> Self {
        PartsCache(vec![None; vars])
    }
}

/// One variable's parts as a [`LaneVar`] holds them, untyped, and when they were taken.
#[derive(Clone, Copy)]
struct CachedParts {
    dtype: autobatch_ir::DType,
    rows: *mut u8,
    saved: *mut u8,
    depth: *mut u32,
    cap: u32,
    /// [`Storage::moves`] when taken.
    moves: u64,
}

/// One run of a compiled block: its lanes and what it may read and write.
pub struct BlockRun<'r, 'p> {
    lanes: &'r [usize],
    storage: &'r mut Storage<'p>,
    /// Each variable's parts as the run's blocks last took them.
    parts: &'r mut PartsCache,
    faults: Faults<'r>,
    stats: &'r mut Stats,
    /// The lanes a branch sends to its first and second targets (emptied first).
    sides: (&'r mut Vec<usize>, &'r mut Vec<usize>),
    /// Where the block's lanes are, for a panic the run catches.
    blame: &'r Blame,
}

/// What a compiled block's errors name: its program and block.
#[derive(Clone, Copy)]
pub struct Faults<'r> {
    program: &'r Program,
    block: Block,
}

impl<'r, 'p> BlockRun<'r, 'p> {
    /// A run of `block` of `program` on `lanes` over `storage`, counting kernels in `stats`,
    /// a branch's lanes sent to `sides`, a panic of its lanes blamed in `blame` (see
    /// [`caught`]).
    pub(crate) fn new(
        (program, block): (&'r Program, Block),
        lanes: &'r [usize],
        (storage, parts): (&'r mut Storage<'p>, &'r mut PartsCache),
        (stats, blame): (&'r mut Stats, &'r Blame),
        sides: (&'r mut Vec<usize>, &'r mut Vec<usize>),
    ) -> Self {
        sides.0.clear();
        sides.1.clear();
        BlockRun {
            lanes,
            storage,
            parts,
            faults: Faults { program, block },
            stats,
            sides,
            blame,
        }
    }

    /// The block's lanes, in order.
    pub fn lanes(&self) -> &'r [usize] {
        self.lanes
    }

    /// Variable `var` (its index in the program), one scalar leaf of `T`; an error if storage
    /// does not hold it so (a compiled block the program does not match).
    #[inline]
    pub fn var<T: Element>(&mut self, var: u32) -> Result<LaneVar<T>> {
        let moves = self.storage.moves();
        if let Some(Some(c)) = self.parts.0.get(var as usize) {
            if c.moves == moves && c.dtype == T::DTYPE {
                return Ok(LaneVar {
                    rows: c.rows.cast(),
                    saved: c.saved.cast(),
                    depth: c.depth,
                    batch: self.storage.batch(),
                    cap: c.cap,
                });
            }
        }
        self.take_var(var)
    }

    /// [`var`](Self::var) from storage, kept for the blocks after.
    #[inline(never)]
    fn take_var<T: Element>(&mut self, var: u32) -> Result<LaneVar<T>> {
        let v = Var::new(var as usize);
        let moves = self.storage.moves();
        match self.storage.scalar_parts::<T>(v) {
            Some(p) => {
                let lane_var = LaneVar::from_parts(p, self.storage.batch());
                if let Some(slot) = self.parts.0.get_mut(var as usize) {
                    *slot = Some(CachedParts {
                        dtype: T::DTYPE,
                        rows: lane_var.rows.cast(),
                        saved: lane_var.saved.cast(),
                        depth: lane_var.depth,
                        cap: lane_var.cap,
                        moves,
                    });
                }
                Ok(lane_var)
            }
            None => Err(self.faults.mismatch(format!(
                "variable `{}` is not one {} scalar",
                self.faults.program.var(v).name,
                T::DTYPE
            ))),
        }
    }

    /// Counts one run of each of `kernels` on the block's lanes.
    #[inline]
    pub fn count_kernels(&mut self, kernels: &[usize]) {
        for &k in kernels {
            self.stats.record_kernel(k, self.lanes.len(), None, false);
        }
    }

    /// Runs `lanes` (the block's body: for each lane, its ops) with room for saved frames and
    /// its branch's lists (which it hands back). A panic in it is not caught here (a catch
    /// would keep the lane loop's state in memory): it prints nothing, unwinds out of the
    /// run, and the VM's one catch around the run makes it the error of the kernel op and lane
    /// the kernel's [`BlameGuard`] recorded in the [`Blame`] as it unwound (this module's
    /// `caught`).
    #[inline]
    pub fn each(
        &mut self,
        lanes: impl FnOnce(&Blame, &mut Frames<'_, 'p>, Sides) -> Result<Sides>,
    ) -> Result<()> {
        let at = self.blame;
        at.op.set(0);
        at.lane.set(0);
        let faults = self.faults;
        let mut frames = Frames {
            storage: &mut *self.storage,
            faults,
        };
        let n = self.lanes.len();
        let (yes, no) = (&mut *self.sides.0, &mut *self.sides.1);
        yes.reserve(n);
        no.reserve(n);
        let sides = Sides {
            yes: yes.as_mut_ptr(),
            no: no.as_mut_ptr(),
            counts: (0, 0),
            room: n,
        };
        at.block.set(Some(faults.block));
        let ran = {
            let _quiet = Quiet::enter();
            lanes(at, &mut frames, sides)
        };
        at.block.set(None);
        let sides = ran?;
        // SAFETY: `send` wrote the first `counts` elements of each list (each at most `room`,
        // the capacity reserved above).
        unsafe {
            yes.set_len(sides.counts.0);
            no.set_len(sides.counts.1);
        }
        Ok(())
    }
}

/// The error of a panic the VM caught around a run (`payload`), if it came from the lanes of a
/// compiled block of `program` (as `blame` says): the kernel op and lane the block last
/// recorded. Any other panic's payload is handed back, to go on unwinding.
pub(crate) fn caught(
    program: &Program,
    blame: &Blame,
    payload: Box<dyn std::any::Any + Send>,
) -> std::result::Result<RuntimeError, Box<dyn std::any::Any + Send>> {
    match blame.block.get() {
        Some(block) => {
            let (op, lane) = (blame.op.get(), blame.lane.get());
            let faults = Faults { program, block };
            Ok(faults.panicked(op, lane, crate::exec::panic_message(payload)))
        }
        None => Err(payload),
    }
}

/// Where a compiled block is: the block whose lanes run, the kernel op (its index in the block)
/// and the lane it runs, so a panic is blamed on them.
#[derive(Default)]
pub struct Blame {
    block: Cell<Option<Block>>,
    op: Cell<usize>,
    lane: Cell<usize>,
}

impl Blame {
    /// A guard for kernel op `op` of the block running for `lane`: if the kernel panics, the
    /// guard's drop, as the panic unwinds through it, blames them. The lane loop forgets the
    /// guard as the kernel returns, so a kernel that returns costs no store; one that cannot
    /// panic costs nothing at all.
    #[inline(always)]
    pub fn guard(&self, op: usize, lane: usize) -> BlameGuard<'_> {
        BlameGuard {
            blame: self,
            op,
            lane,
        }
    }
}

/// Blames its op and lane in its [`Blame`] when dropped: only as a panic unwinds through it,
/// or as an error returns before the lane loop forgets it (then the blame is unused).
pub struct BlameGuard<'b> {
    blame: &'b Blame,
    op: usize,
    lane: usize,
}

impl Drop for BlameGuard<'_> {
    #[inline]
    fn drop(&mut self) {
        self.blame.op.set(self.op);
        self.blame.lane.set(self.lane);
    }
}

/// What a compiled block reaches storage by while its lanes run: the block's errors, and room
/// for more saved frames.
pub struct Frames<'f, 'p> {
    storage: &'f mut Storage<'p>,
    faults: Faults<'f>,
}

impl<'p> Frames<'_, 'p> {
    /// The block's errors.
    #[inline(always)]
    pub fn faults(&self) -> &Faults<'_> {
        &self.faults
    }

    /// Room for the push of `var` that [`LaneVar::push`] refused for lane `lanes[at]`, for
    /// the block's lanes from that one on: as the VM's push of those lanes makes it (the first
    /// of them past the depth limit fails; else the saved rows grow for the deepest, the
    /// growth checked against the memory budget), so the error, if any, is the VM's. The
    /// variable's parts as they are now (the saved rows may have moved). The lane loop passes
    /// its position rather than the rest of its lanes, so it keeps one counter, not two.
    #[cold]
    #[inline(never)]
    pub fn grow<T: Element>(
        &mut self,
        var: u32,
        (lanes, at): (&[usize], usize),
    ) -> Result<LaneVar<T>> {
        let v = Var::new(var as usize);
        let lanes = lanes.get(at..).unwrap_or_default();
        self.storage.room_for_push(v, lanes, self.faults.block)?;
        match self.storage.scalar_parts::<T>(v) {
            Some(p) => Ok(LaneVar::from_parts(p, self.storage.batch())),
            None => Err(self
                .faults
                .mismatch(format!("variable `{var}` changed type"))),
        }
    }
}

/// The lanes a compiled block's branch sends to each of its targets: room for every lane of
/// the block in each list, and how many each holds so far.
pub struct Sides {
    yes: *mut usize,
    no: *mut usize,
    counts: (usize, usize),
    room: usize,
}

impl Sides {
    /// Sends `lane` to the branch's first target if `condition`, else to its second.
    ///
    /// # Safety
    /// Called at most once for each of the block's lanes (as the block's lane loop calls it),
    /// so the lists, with room for all of them, never hold more: no check per lane.
    #[inline(always)]
    pub unsafe fn send(&mut self, lane: usize, condition: bool) {
        let (yes, no) = self.counts;
        debug_assert!(
            yes + no < self.room,
            "a compiled block sent more lanes than it has"
        );
        // SAFETY: each list has room for `room` lanes (the block's), and holds fewer: one
        // send per lane of the block, by the caller's contract.
        unsafe {
            if condition {
                self.yes.add(yes).write(lane);
                self.counts.0 = yes + 1;
            } else {
                self.no.add(no).write(lane);
                self.counts.1 = no + 1;
            }
        }
    }
}

impl Faults<'_> {
    fn block_name(&self) -> String {
        self.program.block(self.block).name.clone()
    }

    fn var_name(&self, var: u32) -> String {
        self.program.var(Var::new(var as usize)).name.clone()
    }

    /// A pop of `var` in `lane`, which has no saved frame.
    #[cold]
    pub fn empty(&self, var: u32, lane: usize) -> RuntimeError {
        RuntimeError::PopEmpty {
            var: self.var_name(var),
            lane,
            block: self.block_name(),
        }
    }

    /// The kernel of op `op` of the block panicked in `lane` with `message`.
    #[cold]
    fn panicked(&self, op: usize, lane: usize, message: String) -> RuntimeError {
        let source_text = match self.program.block(self.block).ops.get(op) {
            Some(Op::Prim(p)) => p.source.clone(),
            _ => String::new(),
        };
        RuntimeError::Kernel {
            block: self.block_name(),
            source_text,
            lane,
            message,
        }
    }

    /// A compiled block whose program is not the one running (the fingerprint matched, the
    /// storage does not).
    #[cold]
    fn mismatch(&self, what: String) -> RuntimeError {
        RuntimeError::Link(format!(
            "compiled block `{}` does not match the program: {what}",
            self.block_name()
        ))
    }
}

/// One variable as a compiled block reads and writes it, lane by lane: raw parts of storage
/// valid for one run of the block, until [`Frames::grow`] moves this variable's saved rows
/// (and hands back its parts as they are then).
///
/// Every method is `unsafe`: `lane` must be one of the block's lanes.
#[derive(Clone, Copy)]
pub struct LaneVar<T> {
    rows: *mut T,
    saved: *mut T,
    depth: *mut u32,
    batch: usize,
    /// A lane at this depth cannot push: the saved rows hold no more frames, or the depth
    /// limit is reached.
    cap: u32,
}

impl<T> LaneVar<T> {
    fn from_parts(p: crate::storage::ScalarParts<T>, batch: usize) -> Self {
        LaneVar {
            rows: p.rows,
            saved: p.saved,
            depth: p.depth,
            batch,
            cap: p.cap,
        }
    }
}

impl<T: Copy> LaneVar<T> {
    /// The lane's value.
    ///
    /// # Safety
    /// `lane` is one of the block's lanes.
    #[inline(always)]
    pub unsafe fn get(&self, lane: usize) -> T {
        *self.rows.add(lane)
    }

    /// Writes the lane's value.
    ///
    /// # Safety
    /// As for [`get`](Self::get).
    #[inline(always)]
    pub unsafe fn put(&self, lane: usize, value: T) {
        *self.rows.add(lane) = value;
    }

    /// Saves the lane's value in a new frame (a duplicating push); `false`, doing nothing, if
    /// the saved rows have no room for it or it passes the depth limit (then
    /// [`Frames::grow`] makes room or names the error, and the push is made again).
    ///
    /// # Safety
    /// As for [`get`](Self::get); the variable is stacked.
    #[inline(always)]
    pub unsafe fn push(&self, lane: usize) -> bool {
        let d = *self.depth.add(lane);
        if d >= self.cap {
            return false;
        }
        *self.saved.add(d as usize * self.batch + lane) = *self.rows.add(lane);
        *self.depth.add(lane) = d + 1;
        true
    }

    /// Restores the lane's last saved value; `false`, doing nothing, if it has none.
    ///
    /// # Safety
    /// As for [`get`](Self::get); the variable is stacked.
    #[inline(always)]
    pub unsafe fn pop(&self, lane: usize) -> bool {
        let d = *self.depth.add(lane);
        if d == 0 {
            return false;
        }
        *self.depth.add(lane) = d - 1;
        *self.rows.add(lane) = *self.saved.add((d - 1) as usize * self.batch + lane);
        true
    }
}

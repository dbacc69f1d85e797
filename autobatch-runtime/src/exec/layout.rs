//! `Layout`: how a lane-wise kernel call of one op writes each of its output leaves (fresh
//! arena rows, by lane straight into storage, or a dense column scattered afterwards), decided
//! once per op and kept for the run: it depends only on the op, its kernel and its variables'
//! types and allocations, none of which change while a batch runs.

use crate::column::Column;
use crate::storage::leaf::Leaf;
use crate::storage::Storage;
use autobatch_ir::{PrimOp, Shape, TensorType, Var};
use smallvec::SmallVec;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::ops::Range;
use std::rc::Rc;

/// How one output leaf of a lane-wise kernel call is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Write {
    /// Into fresh arena rows that its variable then takes over (`f64` vectors).
    Fresh,
    /// Offered by lane straight into storage's rows (a dense scalar leaf of a variable that
    /// appears once among the outputs and is no input, or whose inputs the kernel reads
    /// first); a kernel that does not take the offer writes the dense column instead.
    ByLane,
    /// Into a dense column, scattered into storage afterwards.
    Dense,
}

/// Where one output leaf of a lane-wise op is in storage, and how it is written.
#[derive(Clone, Copy, Debug)]
pub(super) struct Place {
    /// How it is written.
    pub(super) write: Write,
    /// Its variable.
    pub(super) var: Var,
    /// Its index among the variable's leaves.
    pub(super) leaf: usize,
    /// Its type.
    pub(super) ty: TensorType,
}

/// When an output variable of a lane-wise op is pushed (a duplicating push saves its value
/// where the interpreter keeps stacks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Push {
    /// Before the kernel runs: it may write the variable's rows by lane.
    Before,
    /// After the kernel runs: the variable has storage and is not written in place.
    After,
    /// Not at all (no stack: no storage, or none kept; or written in place).
    Never,
}

/// One output variable of a lane-wise op.
#[derive(Clone, Debug)]
pub(super) struct Output {
    /// The variable.
    pub(super) var: Var,
    /// Its leaves' positions in [`Layout::places`].
    pub(super) leaves: Range<usize>,
    /// When it is pushed.
    pub(super) push: Push,
}

/// The output leaves of one lane-wise op, as [`Layout::of`] decides them.
#[derive(Debug)]
pub(super) struct Layout {
    /// The types of the leaves written into a dense column from the pool (`Write::Dense`), in
    /// order.
    pub(super) dense_types: SmallVec<[TensorType; 16]>,
    /// The columns that stand in for the leaves offered by lane (`Write::ByLane`), in order,
    /// kept with the op from call to call and sized only for a call whose kernel writes them
    /// by position ([`StandIn`](crate::kernel::StandIn)): a kernel that writes by
    /// lane takes nothing from the pool.
    pub(super) stand_ins: RefCell<Vec<Column>>,
    /// The (variable, leaf) pairs written by lane that the kernel also reads (by value only).
    pub(super) aliased: SmallVec<[(Var, usize); 4]>,
    /// Per output leaf, over all outputs in order: where it is in storage and how it is
    /// written.
    pub(super) places: SmallVec<[Place; 8]>,
    /// The output variables in order, each with its leaves and when it is pushed.
    pub(super) outputs: SmallVec<[Output; 8]>,
    /// Whether any output is pushed before the kernel runs.
    pub(super) pushes_first: bool,
    /// How many leaves are written into fresh arena rows, and the output named if allocating
    /// them passes the memory budget (the first with arena rows); `None` if there are none.
    pub(super) fresh: Option<(usize, Var)>,
    /// Whether every output leaf is offered by lane: a call whose kernel takes every offer
    /// leaves nothing to scatter or push afterwards.
    pub(super) in_place_only: bool,
}

impl Layout {
    /// The layout of `op` on `storage`, for a kernel that reads a lane's inputs before it
    /// writes its outputs if `reads_first`.
    pub(super) fn of(op: &PrimOp, reads_first: bool, storage: &Storage<'_>) -> Layout {
        let mut layout = Layout {
            dense_types: SmallVec::new(),
            stand_ins: RefCell::default(),
            aliased: SmallVec::new(),
            places: SmallVec::new(),
            outputs: SmallVec::new(),
            pushes_first: false,
            fresh: None,
            in_place_only: false,
        };
        let mut fresh_leaves = 0;
        for &v in &op.outs {
            let read = op.ins.contains(&v);
            let alone = (reads_first || !read) && op.outs.iter().filter(|&&o| o == v).count() == 1;
            let leaves = storage.leaves(v);
            let first = layout.places.len();
            let mut by_lane = false;
            for (i, t) in storage.types(v).iter().enumerate() {
                let leaf = leaves.get(i);
                let write = if leaf.is_some_and(Leaf::is_shared) {
                    fresh_leaves += 1;
                    let first = layout.fresh.map_or(v, |(_, first)| first);
                    layout.fresh = Some((fresh_leaves, first));
                    Write::Fresh
                } else {
                    let scalar = t.shape == Shape::Scalar
                        && leaf.and_then(Leaf::dense).is_some_and(|c| c.width() == 1);
                    if alone && scalar {
                        if read {
                            layout.aliased.push((v, i));
                        }
                        layout
                            .stand_ins
                            .get_mut()
                            .push(Column::zeros(t.dtype, 0, 1));
                        Write::ByLane
                    } else {
                        layout.dense_types.push(*t);
                        Write::Dense
                    }
                };
                by_lane |= write == Write::ByLane;
                layout.places.push(Place {
                    write,
                    var: v,
                    leaf: i,
                    ty: *t,
                });
            }
            // A push saves the value only where storage keeps stacks.
            let push = match (storage.is_stacked(v) && !op.is_in_place(v), by_lane) {
                (false, _) => Push::Never,
                (true, true) => Push::Before,
                (true, false) => Push::After,
            };
            layout.pushes_first |= push == Push::Before;
            layout.outputs.push(Output {
                var: v,
                leaves: first..layout.places.len(),
                push,
            });
        }
        // (An output whose leaves are all offered by lane is pushed, if at all, before.)
        layout.in_place_only = layout.places.iter().all(|p| p.write == Write::ByLane);
        layout
    }
}

/// The layouts decided so far in one run, by the address of their op: every op a run executes
/// is borrowed from the program or an interpreter's plan for the whole run, so an address
/// names one op for as long as the table lives (one [`Exec`](super::Exec), one batch).
///
/// The ops of the blocks being run are looked up again and again: a small table of recent
/// ones, one slot per address hash, answers most lookups with a compare, before the map.
pub(super) struct Layouts {
    recent: [(usize, Option<Rc<Layout>>); RECENT],
    all: HashMap<usize, Rc<Layout>, BuildHasherDefault<AddressHasher>>,
}

/// Slots in [`Layouts`]' table of recent ops (a power of two).
const RECENT: usize = 64;

impl Default for Layouts {
    fn default() -> Self {
        Layouts {
            recent: std::array::from_fn(|_| (0, None)),
            all: HashMap::default(),
        }
    }
}

impl Layouts {
    /// `op`'s layout, decided on its first call.
    pub(super) fn get(
        &mut self,
        op: &PrimOp,
        reads_first: bool,
        storage: &Storage<'_>,
    ) -> Rc<Layout> {
        let key = op as *const PrimOp as usize;
        // The hash's top bits pick the slot.
        let slot = address_hash(key) >> (u64::BITS - RECENT.trailing_zeros());
        let recent = &mut self.recent[slot as usize];
        if let (at, Some(layout)) = recent {
            if *at == key {
                return layout.clone();
            }
        }
        let layout = self
            .all
            .entry(key)
            .or_insert_with(|| Rc::new(Layout::of(op, reads_first, storage)))
            .clone();
        *recent = (key, Some(layout.clone()));
        layout
    }
}

/// Hashes an address (a `usize`) with one multiplication: the keys are distinct addresses,
/// not chosen by anyone, so no keyed hash is needed (the alignment bits, always zero, are
/// shifted out first).
#[derive(Default)]
pub(super) struct AddressHasher(u64);

impl Hasher for AddressHasher {
    fn finish(&self) -> u64 {
        self.0
    }

    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        self.0 = address_hash(n);
    }
}

/// An address hashed with one multiplication, its alignment bits (always zero) shifted out
/// first; the top bits are the best mixed.
fn address_hash(address: usize) -> u64 {
    ((address as u64) >> 3).wrapping_mul(0x9E37_79B9_7F4A_7C15)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::storage::Stacks;
    use autobatch_ir::{KernelId, Op, Program, ProgramBuilder, Type};

    /// `f(n: i64, v: vector f64) -> (n, (v, b))`: `n = n - 1` (an input written in place),
    /// `(v, b) = ..` (a vector and a tuple with a scalar leaf), both reading `n`, and a kernel
    /// with no output.
    fn program() -> Program {
        let mut b = ProgramBuilder::new();
        let n = b.var("n", Type::I64);
        let v = b.var("v", Type::vector(autobatch_ir::DType::F64));
        let t = b.var("t", Type::Tuple(vec![Type::F64, Type::BOOL]));
        let f = b.function("f");
        b.signature(f, &[n, v], &[n, t]);
        let e = b.block(f, "entry");
        b.prim(e, &[n], &[n], KernelId::new(0), "n - 1");
        b.prim(e, &[v, t], &[n, v], KernelId::new(1), "(v, (1.0, n > 0))");
        b.prim(e, &[], &[n], KernelId::new(2), "record(n)");
        b.ret(e);
        b.finish(f).unwrap().into_program()
    }

    /// Storage for `program` over four lanes, vectors of three elements, keeping stacks (as
    /// the full VM's does) if `stacks`.
    fn storage_with(program: &Program, stacks: bool) -> Storage<'_> {
        let stacks = if stacks {
            Stacks::Honour
        } else {
            Stacks::Ignore
        };
        Storage::new(
            program,
            4,
            3,
            16,
            (false, stacks),
            (None, Default::default()),
        )
    }

    /// Storage for `program` that keeps stacks.
    fn storage(program: &Program) -> Storage<'_> {
        storage_with(program, true)
    }

    fn prims(program: &Program) -> Vec<&PrimOp> {
        let entry = program.main_function().entry();
        (program.block(entry).ops.iter())
            .filter_map(|op| match op {
                Op::Prim(p) => Some(p),
                _ => None,
            })
            .collect()
    }

    /// How each output leaf is written, in order.
    fn writes(layout: &Layout) -> Vec<Write> {
        layout.places.iter().map(|p| p.write).collect()
    }

    /// When each output is pushed, in order.
    fn pushes(layout: &Layout) -> Vec<Push> {
        layout.outputs.iter().map(|o| o.push).collect()
    }

    /// An input the kernel also writes is offered by lane only to a kernel that reads a lane's
    /// inputs first (then it is read by value); vector leaves take fresh rows, leaves offered
    /// by lane a stand-in column each, the others a dense column from the pool.
    #[test]
    fn each_output_leaf_is_written_as_its_storage_and_kernel_allow() {
        let program = program();
        let storage = storage(&program);
        let ops = prims(&program);
        let n = ops[0].outs[0];
        let in_place = Layout::of(ops[0], true, &storage);
        assert_eq!(writes(&in_place), [Write::ByLane]);
        assert_eq!(in_place.aliased.as_slice(), [(n, 0)]);
        // Pushed before the kernel writes by lane, so not again after it.
        assert_eq!(pushes(&in_place), [Push::Before]);
        assert!(in_place.pushes_first);
        assert_eq!(in_place.fresh, None);
        let copied = Layout::of(ops[0], false, &storage);
        assert_eq!(writes(&copied), [Write::Dense]);
        assert!(copied.aliased.is_empty() && !copied.pushes_first);
        assert_eq!(copied.dense_types.len(), 1);
        assert_eq!(pushes(&copied), [Push::After]);
        assert!(copied.stand_ins.borrow().is_empty());
        let mixed = Layout::of(ops[1], false, &storage);
        let (v, t) = (ops[1].outs[0], ops[1].outs[1]);
        let expected = [Write::Fresh, Write::ByLane, Write::ByLane];
        assert_eq!(writes(&mixed), expected);
        // Leaves offered by lane have stand-ins of their own, not pool columns.
        assert!(mixed.dense_types.is_empty());
        assert_eq!(mixed.stand_ins.borrow().len(), 2);
        assert_eq!(mixed.fresh, Some((1, v)));
        assert_eq!(pushes(&mixed), [Push::After, Push::Before]);
        // Each output's leaves, in order.
        let ranges: Vec<_> = (mixed.outputs.iter())
            .map(|o| (o.var, o.leaves.clone()))
            .collect();
        assert_eq!(ranges, [(v, 0..1), (t, 1..3)]);
        // Each leaf's variable and its index there, in order.
        let places: Vec<_> = (mixed.places.iter()).map(|p| (p.var, p.leaf)).collect();
        assert_eq!(places, [(v, 0), (t, 0), (t, 1)]);
        assert_eq!(
            mixed.places[2].ty,
            TensorType::scalar(autobatch_ir::DType::Bool)
        );
        assert!(mixed.aliased.is_empty(), "{t:?} is no input");
        // Where storage keeps no stacks (stackless), nothing is pushed, but the leaves are
        // written alike.
        let unstacked = storage_with(&program, false);
        let stackless = Layout::of(ops[1], false, &unstacked);
        assert_eq!(pushes(&stackless), [Push::Never, Push::Never]);
        assert!(!stackless.pushes_first);
        assert_eq!(writes(&stackless), expected);
        // A kernel run for its effect alone writes nothing.
        let effect = Layout::of(ops[2], false, &storage);
        assert!(effect.places.is_empty() && effect.outputs.is_empty());
        assert_eq!(effect.fresh, None);
    }

    /// The table decides each op's layout once and tells ops apart.
    #[test]
    fn layouts_are_kept_per_op() {
        let program = program();
        let storage = storage(&program);
        let ops = prims(&program);
        let mut layouts = Layouts::default();
        let first = layouts.get(ops[0], true, &storage);
        let again = layouts.get(ops[0], true, &storage);
        assert!(Rc::ptr_eq(&first, &again));
        let other = layouts.get(ops[1], false, &storage);
        assert!(!Rc::ptr_eq(&first, &other));
        assert_eq!(other.places.len(), 3);
    }
}

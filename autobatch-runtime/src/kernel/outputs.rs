//! What a kernel writes: [`LaneOutputs`] (a lane-wise kernel's output leaves: dense columns,
//! fresh vector rows written in place, storage's own scalar rows written by lane, or a branch
//! condition's two lane lists), [`VectorOut`], [`ScalarsOut`], [`LaneSplit`], and typed access
//! to dense outputs.

use super::error::KernelError;
use super::inputs::{out_of_rows, Position};
use super::scalar_elements;
use crate::column::{Column, Element};
use crate::storage::arena::ArenaView;
use crate::storage::split_below;
use crate::vector::Vector;
use smallvec::SmallVec;
use std::any::TypeId;
use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// The elements of a dense output column (output leaf `index`, if known), typed, in row-major
/// order; an error if it holds another dtype.
pub(crate) fn typed_mut<T: Element>(
    column: &mut Column,
    index: Option<usize>,
) -> Result<&mut [T], KernelError> {
    let dtype = column.dtype();
    column.as_slice_mut::<T>().ok_or_else(|| {
        let which = index.map_or_else(String::new, |i| format!(" {i}"));
        KernelError::whole(format!(
            "kernel output{which} is {dtype}, expected {}",
            T::DTYPE
        ))
    })
}

/// Typed mutable access to dense output leaf `i` of a batched kernel.
pub fn output_slice<T: Element>(outputs: &mut [Column], i: usize) -> Result<&mut [T], KernelError> {
    let c = outputs
        .get_mut(i)
        .ok_or_else(|| KernelError::whole(format!("kernel output {i} is missing")))?;
    typed_mut(c, Some(i))
}

/// Fresh arena rows for one `f64` vector output leaf: row `k` for the `k`-th active lane.
pub(crate) struct FreshRows<'a> {
    raw: ArenaView,
    handles: &'a [u32],
}

impl<'a> FreshRows<'a> {
    pub(crate) fn new(raw: ArenaView, handles: &'a [u32]) -> Self {
        FreshRows { raw, handles }
    }

    /// The same rows for a shorter time (this value is unusable meanwhile).
    fn reborrow(&mut self) -> FreshRows<'_> {
        FreshRows {
            raw: self.raw,
            handles: self.handles,
        }
    }

    /// Elements per row.
    pub(crate) fn width(&self) -> usize {
        self.raw.width()
    }

    /// Row `k`, to write.
    #[inline]
    pub(crate) fn row_mut(&mut self, k: usize) -> &mut [f64] {
        // SAFETY: the handles are fresh rows of this call, distinct from each other and from
        // every input row (see `ArenaView`); `&mut self` keeps one row of this leaf borrowed at a
        // time, and other leaves' fresh rows are other rows.
        unsafe { self.raw.row_mut(self.handles[k]) }
    }
}

/// The dense column that stands in for a leaf a kernel may write otherwise (by lane into
/// storage, or by splitting the lanes), if it writes rows by position instead. It is sized to
/// the call's rows only when the kernel asks for it (`asked` records that), so a kernel that
/// writes the other way never resizes it.
pub(crate) struct StandIn<'a> {
    column: &'a mut Column,
    rows: usize,
    asked: &'a Cell<bool>,
}

impl<'a> StandIn<'a> {
    /// `column`, to be given `rows` rows when the kernel asks for it.
    pub(crate) fn new(column: &'a mut Column, rows: usize, asked: &'a Cell<bool>) -> Self {
        StandIn {
            column,
            rows,
            asked,
        }
    }

    /// The column, sized for the call.
    fn column(&mut self) -> &mut Column {
        self.reborrow().into_column()
    }

    /// [`column`](Self::column), for the rest of the call.
    pub(crate) fn into_column(self) -> &'a mut Column {
        self.asked.set(true);
        self.column.resize_to(self.rows);
        self.column
    }

    /// The same stand-in for a shorter time (this value is unusable meanwhile).
    fn reborrow(&mut self) -> StandIn<'_> {
        StandIn {
            column: self.column,
            rows: self.rows,
            asked: self.asked,
        }
    }
}

/// A dense scalar leaf of storage that a kernel may write by lane through
/// [`OutputLeaf::scalars`] (no copy afterwards), with the dense column that stands in for it if
/// the kernel writes rows by position instead; `by_lane` records which the kernel did.
pub(crate) struct LaneRows<'a> {
    rows: NonNull<Column>,
    dense: StandIn<'a>,
    by_lane: &'a Cell<bool>,
}

impl<'a> LaneRows<'a> {
    /// `rows`: the leaf's rows in storage. The caller guarantees that nothing else writes them
    /// while this value (or a [`ScalarsOut`] made from it) lives, and that nothing else reads
    /// them but an in-place kernel's own input of the same leaf (`LeafView::InPlace`), by value
    /// through the elements' pointer: they belong to an output variable that is no other
    /// output leaf, and none of the kernel's inputs unless the kernel is in place.
    pub(crate) fn new(rows: NonNull<Column>, dense: StandIn<'a>, by_lane: &'a Cell<bool>) -> Self {
        LaneRows {
            rows,
            dense,
            by_lane,
        }
    }

    /// The same rows for a shorter time (this value is unusable meanwhile).
    fn reborrow(&mut self) -> LaneRows<'_> {
        LaneRows {
            rows: self.rows,
            dense: self.dense.reborrow(),
            by_lane: self.by_lane,
        }
    }
}

/// One output leaf of a lane-wise kernel.
pub(crate) enum OutLeaf<'a> {
    /// A dense column, row `k` for the `k`-th active lane.
    Dense(&'a mut Column),
    /// Vector rows written in place.
    Fresh(FreshRows<'a>),
    /// Storage's scalar rows, row `lane` for each active lane (or the stand-in dense column).
    Lanes(LaneRows<'a>),
    /// A branch condition: the active lanes sent to the two sides of the branch (or the
    /// stand-in dense column of `bool`s, row `k` for the `k`-th active lane).
    Split(StandIn<'a>, SplitLanes<'a>),
}

/// Where a branch condition's kernel sends the active lanes ([`ScalarsOut::split`]): the lanes
/// whose condition holds to `yes`, the others to `no`, both in lane order; `used` records that
/// the kernel did so (else it wrote the stand-in column).
pub(crate) struct SplitLanes<'a> {
    pub(crate) lanes: &'a [usize],
    pub(crate) progress: &'a Cell<usize>,
    pub(crate) yes: &'a mut Vec<usize>,
    pub(crate) no: &'a mut Vec<usize>,
    pub(crate) used: &'a Cell<bool>,
}

impl SplitLanes<'_> {
    /// The same lists for a shorter time (this value is unusable meanwhile).
    fn reborrow(&mut self) -> SplitLanes<'_> {
        SplitLanes {
            lanes: self.lanes,
            progress: self.progress,
            yes: self.yes,
            no: self.no,
            used: self.used,
        }
    }
}

impl<'a> OutLeaf<'a> {
    /// The dense column a kernel writes by position (a storage leaf's stand-in).
    fn into_dense(self) -> Result<&'a mut Column, Self> {
        match self {
            OutLeaf::Dense(c) => Ok(c),
            OutLeaf::Lanes(rows) => Ok(rows.dense.into_column()),
            OutLeaf::Split(c, _) => Ok(c.into_column()),
            other => Err(other),
        }
    }

    /// The same leaf for a shorter time (this value is unusable meanwhile).
    fn reborrow(&mut self) -> OutLeaf<'_> {
        match self {
            OutLeaf::Dense(c) => OutLeaf::Dense(c),
            OutLeaf::Fresh(f) => OutLeaf::Fresh(f.reborrow()),
            OutLeaf::Lanes(rows) => OutLeaf::Lanes(rows.reborrow()),
            OutLeaf::Split(c, lists) => OutLeaf::Split(c.reborrow(), lists.reborrow()),
        }
    }
}

/// A scalar output leaf written by lane ([`OutputLeaf::scalars`]): straight into the
/// interpreter's storage where it can, else into row `k` of a dense column.
pub struct ScalarsOut<'a, T> {
    /// The first element written (of storage's rows, or of the dense column).
    data: NonNull<T>,
    /// Elements from `data` on.
    len: usize,
    by_lane: bool,
    /// A branch condition's lane lists, which [`split`](Self::split) fills instead.
    split: Option<SplitLanes<'a>>,
    /// A branch condition's stand-in column, not yet sized (`len` is zero meanwhile): sized
    /// and written from the first [`set`](Self::set) on, if the kernel writes by position.
    stand_in: Option<StandIn<'a>>,
    rows: PhantomData<&'a mut [T]>,
}

impl<'a, T: Element> ScalarsOut<'a, T> {
    /// Writes into `data`, row `k` for the `k`-th active lane.
    fn by_position(data: &'a mut [T]) -> Self {
        ScalarsOut {
            len: data.len(),
            data: NonNull::from(data).cast(),
            by_lane: false,
            split: None,
            stand_in: None,
            rows: PhantomData,
        }
    }

    /// Writes `value` for the `k`-th active lane, `lane`.
    #[inline(always)]
    pub fn set(&mut self, k: usize, lane: usize, value: T) {
        let row = if self.by_lane { lane } else { k };
        if row >= self.len {
            self.size_stand_in(row);
        }
        // SAFETY: `row` is within the `len` elements from `data`, which this value may write
        // (a dense column borrowed for `'a`, or storage's rows under `LaneRows`' guarantee:
        // read meanwhile only by value, through the same kind of pointer).
        unsafe { self.data.as_ptr().add(row).write(value) }
    }

    /// Before the first write by position into a branch condition's stand-in column: sizes
    /// the column and writes into it from then on. Panics if `row` is still past the rows.
    #[cold]
    #[inline(never)]
    fn size_stand_in(&mut self, row: usize) {
        if let Some(stand_in) = self.stand_in.take() {
            if let Some(data) = stand_in.into_column().as_slice_mut::<T>() {
                self.len = data.len();
                self.data = NonNull::from(data).cast();
            }
        }
        if row >= self.len {
            out_of_rows(row, self.len);
        }
    }
}

impl<T: Element> ScalarsOut<'_, T> {
    /// This leaf's writer by lane if it writes straight into the interpreter's storage (where
    /// the row is the lane's own), `None` if it writes row `k` of a dense column: a kernel's
    /// lane loop over such writers decides nothing per write.
    pub fn by_lane(&mut self) -> Option<LaneScalarsOut<'_, T>> {
        self.by_lane
            .then_some(LaneScalarsOut::from_raw(self.data, self.len))
    }
}

impl<T: Element> ScalarsOut<'_, T> {
    /// This leaf's lane lists if it is a `bool` branch condition the interpreter lets the
    /// kernel split lanes by (the condition is read by the branch alone), `None` otherwise:
    /// then no condition is written and read back, and no lane list is split afterwards.
    pub fn split(&mut self) -> Option<LaneSplit<'_>> {
        if TypeId::of::<T>() != TypeId::of::<bool>() {
            return None;
        }
        self.split.as_mut().map(|lists| LaneSplit(lists.reborrow()))
    }
}

/// A branch condition's kernel sending each active lane to the side of the branch its
/// condition names ([`ScalarsOut::split`]).
pub struct LaneSplit<'a>(SplitLanes<'a>);

impl<'a> LaneSplit<'a> {
    /// The kernel's use of `lists`.
    pub(crate) fn new(lists: SplitLanes<'a>) -> Self {
        LaneSplit(lists)
    }
}

impl LaneSplit<'_> {
    /// Sends every active lane, in order, to the branch's first target if `cond(lane)` holds
    /// and to its second otherwise, recording each position as it is computed (a panic in
    /// `cond` is attributed to its lane). The first sixteen lanes are sent without a branch
    /// (each written to both lists, only its side's count advancing); where they all went one
    /// way the rest are sent with a branch (predicted, one store a lane), else without one (no
    /// mispredictions on conditions that vary from lane to lane at random).
    #[inline(always)]
    pub fn each(self, cond: impl FnMut(usize) -> bool) {
        self.each_below(usize::MAX, cond);
    }

    /// [`each`](Self::each), once every lane is checked to be below `rows` (four at a time;
    /// a lane past them panics), so `cond` may index rows by lane without checks of its own.
    #[inline(always)]
    pub(crate) fn each_below(self, rows: usize, mut cond: impl FnMut(usize) -> bool) {
        let SplitLanes {
            lanes,
            progress,
            yes,
            no,
            used,
        } = self.0;
        let mut at = Position::new(progress);
        split_below(
            lanes,
            rows,
            (yes, no),
            #[inline(always)]
            |k, lane| {
                at.k = k;
                cond(lane)
            },
        );
        used.set(true);
    }
}

/// A scalar output leaf written straight into the interpreter's storage by lane
/// ([`ScalarsOut::by_lane`]).
pub struct LaneScalarsOut<'a, T> {
    data: NonNull<T>,
    len: usize,
    rows: PhantomData<&'a mut [T]>,
}

impl<T: Element> LaneScalarsOut<'_, T> {
    /// A writer of the `len` scalars from `data` (storage's rows, written by lane only).
    pub(crate) fn from_raw(data: NonNull<T>, len: usize) -> Self {
        LaneScalarsOut {
            data,
            len,
            rows: PhantomData,
        }
    }

    /// The number of rows (lanes `0..len`).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Writes `value` for `lane`, unchecked.
    ///
    /// # Safety
    /// `lane` is below [`len`](Self::len).
    #[inline(always)]
    pub(crate) unsafe fn write_unchecked(&mut self, lane: usize, value: T) {
        // SAFETY: as in `set`, the caller having checked the bound.
        unsafe { self.data.as_ptr().add(lane).write(value) }
    }

    /// Writes `value` for `lane`.
    ///
    /// # Panics
    /// If `lane` is past the leaf's rows.
    #[inline(always)]
    pub fn set(&mut self, lane: usize, value: T) {
        if lane >= self.len {
            out_of_rows(lane, self.len);
        }
        // SAFETY: as in `ScalarsOut::set`: `lane` is within the `len` elements from `data`,
        // storage's rows under `LaneRows`' guarantee (read meanwhile only by value, through the
        // same kind of pointer); this writer mutably borrows the `ScalarsOut` it came from.
        unsafe { self.data.as_ptr().add(lane).write(value) }
    }
}

/// The outputs of one lane-wise kernel call, one leaf per output leaf; row `k` of each belongs
/// to the `k`-th active lane. A kernel writes every row of every leaf (or fails).
///
/// ```
/// use autobatch_runtime::{Column, Kernel, KernelError, LaneInputs, LaneOutputs};
///
/// // y = 2 x, for an `f64` scalar
/// let double = Kernel::lane_wise(|ins: &LaneInputs<'_>, outs: &mut LaneOutputs<'_>| {
///     let x = ins.rows::<f64>(0)?;
///     let [y] = outs.leaves::<1>()?;
///     let y = y.slice::<f64>()?;
///     for (k, &lane) in ins.lanes().iter().enumerate() {
///         y[k] = 2.0 * x.scalar(lane);
///     }
///     Ok::<(), KernelError>(())
/// });
/// # let _ = double;
/// ```
pub struct LaneOutputs<'a> {
    leaves: SmallVec<[OutLeaf<'a>; 8]>,
}

impl<'a> LaneOutputs<'a> {
    /// Outputs into dense columns (one per output leaf, a row per active lane).
    pub fn new(columns: &'a mut [Column]) -> Self {
        LaneOutputs {
            leaves: columns.iter_mut().map(OutLeaf::Dense).collect(),
        }
    }

    pub(crate) fn from_leaves(leaves: SmallVec<[OutLeaf<'a>; 8]>) -> Self {
        LaneOutputs { leaves }
    }

    /// Adds one output leaf (built where it stays, rather than a whole list moved in).
    pub(crate) fn push_leaf(&mut self, leaf: OutLeaf<'a>) {
        self.leaves.push(leaf);
    }

    /// Number of output leaves.
    pub fn len(&self) -> usize {
        self.leaves.len()
    }

    /// True if the kernel has no outputs.
    pub fn is_empty(&self) -> bool {
        self.leaves.is_empty()
    }

    /// All `N` output leaves at once, each to be written as it needs; an error if there are
    /// not exactly `N`.
    pub fn leaves<const N: usize>(&mut self) -> Result<[OutputLeaf<'_>; N], KernelError> {
        let found = self.leaves.len();
        let leaves: &mut [OutLeaf<'a>; N] =
            self.leaves.as_mut_slice().try_into().map_err(|_| {
                KernelError::whole(format!("expected {N} output leaves, found {found}"))
            })?;
        Ok(leaves.each_mut().map(|leaf| OutputLeaf(leaf.reborrow())))
    }

    /// Output leaf `i` as a dense column; vector rows written in place have none (write
    /// them through [`leaves`](Self::leaves) and [`OutputLeaf::vectors`]).
    pub fn column(&mut self, i: usize) -> Result<&mut Column, KernelError> {
        match self.leaves.get_mut(i) {
            Some(OutLeaf::Dense(c)) => Ok(c),
            Some(OutLeaf::Lanes(rows)) => Ok(rows.dense.column()),
            Some(OutLeaf::Split(c, _)) => Ok(c.column()),
            Some(OutLeaf::Fresh(_)) => Err(KernelError::whole(format!(
                "kernel output {i} is written in place; write it with `vectors`"
            ))),
            None => Err(KernelError::whole(format!("kernel output {i} is missing"))),
        }
    }

    /// The elements of dense output leaf `i`, typed, in row-major order.
    pub fn slice<T: Element>(&mut self, i: usize) -> Result<&mut [T], KernelError> {
        typed_mut(self.column(i)?, Some(i))
    }

    /// Scalar output leaf `i`, typed, written by lane (see [`OutputLeaf::scalars`]).
    pub fn scalars<T: Element>(&mut self, i: usize) -> Result<ScalarsOut<'_, T>, KernelError> {
        let leaf = self
            .leaves
            .get_mut(i)
            .ok_or_else(|| KernelError::whole(format!("kernel output {i} is missing")))?;
        OutputLeaf(leaf.reborrow()).scalars()
    }
}

/// One output leaf of a lane-wise kernel call (from [`LaneOutputs::leaves`]): a dense column
/// of elements, or `f64` vector rows that a [`VectorOut`] writes.
pub struct OutputLeaf<'a>(OutLeaf<'a>);

impl<'a> OutputLeaf<'a> {
    /// The leaf's elements, typed, in row-major order (a dense leaf).
    pub fn slice<T: Element>(self) -> Result<&'a mut [T], KernelError> {
        match self.0.into_dense() {
            Ok(c) => typed_mut(c, None),
            Err(_) => Err(KernelError::whole(
                "kernel output is written in place; write it with `vectors`",
            )),
        }
    }

    /// The leaf as scalars written by lane: [`ScalarsOut::set`] takes each active position
    /// `k` and its lane. Where the interpreter can, the values go straight into its storage
    /// (no copy after the kernel); otherwise into row `k` of a dense column, as
    /// [`slice`](Self::slice) writes. A leaf is written through one of the two, not both.
    #[inline]
    pub fn scalars<T: Element>(self) -> Result<ScalarsOut<'a, T>, KernelError> {
        match self.0 {
            OutLeaf::Lanes(rows) => {
                // SAFETY: `rows` was made from a live column that `LaneRows::new`'s caller
                // keeps while it lives; only the column's header is borrowed here, its
                // elements are reached through their pointer.
                let column = unsafe { rows.rows.as_ref() };
                let (data, len) = scalar_elements::<T>(column).ok_or_else(|| {
                    KernelError::whole(format!(
                        "kernel output is {}, expected {}",
                        column.dtype(),
                        T::DTYPE
                    ))
                })?;
                rows.by_lane.set(true);
                Ok(ScalarsOut {
                    data,
                    len,
                    by_lane: true,
                    split: None,
                    stand_in: None,
                    rows: PhantomData,
                })
            }
            // Sized at the first write by position: a kernel that splits never sizes it.
            OutLeaf::Split(c, lists) => match c.column.dtype() {
                dtype if dtype != T::DTYPE => Err(KernelError::whole(format!(
                    "kernel output is {dtype}, expected {}",
                    T::DTYPE
                ))),
                _ => Ok(ScalarsOut {
                    data: NonNull::dangling(),
                    len: 0,
                    by_lane: false,
                    split: Some(lists),
                    stand_in: Some(c),
                    rows: PhantomData,
                }),
            },
            other => Ok(ScalarsOut::by_position(OutputLeaf(other).slice::<T>()?)),
        }
    }

    /// The leaf as `f64` vector rows, one per active lane.
    pub fn vectors(self) -> Result<VectorOut<'a>, KernelError> {
        VectorOut::from_leaf(self.0)
    }
}

/// A vector output leaf of a lane-wise kernel: one row of the run's vector length per active
/// lane, in a dense column or written in place into the interpreter's vector storage.
pub struct VectorOut<'a>(VectorTarget<'a>);

/// Where a [`VectorOut`] writes its rows.
enum VectorTarget<'a> {
    Dense { data: &'a mut [f64], width: usize },
    Fresh(FreshRows<'a>),
}

impl<'a> VectorOut<'a> {
    /// Wraps a dense `f64` output column.
    pub fn new(column: &'a mut Column) -> std::result::Result<Self, KernelError> {
        let width = column.width();
        Ok(VectorOut(VectorTarget::Dense {
            data: typed_mut::<f64>(column, None)?,
            width,
        }))
    }

    pub(crate) fn from_leaf(leaf: OutLeaf<'a>) -> std::result::Result<Self, KernelError> {
        match leaf.into_dense() {
            Ok(c) => VectorOut::new(c),
            Err(OutLeaf::Fresh(f)) => Ok(VectorOut(VectorTarget::Fresh(f))),
            Err(_) => Err(KernelError::whole("kernel output is not a vector leaf")),
        }
    }

    fn width(&self) -> usize {
        match &self.0 {
            VectorTarget::Dense { width, .. } => *width,
            VectorTarget::Fresh(f) => f.width(),
        }
    }

    /// Row `k`, to write in place (a compiled vector kernel fills it element by element).
    #[inline]
    pub fn row_mut(&mut self, k: usize) -> &mut [f64] {
        match &mut self.0 {
            VectorTarget::Dense { data, width } => &mut data[k * *width..(k + 1) * *width],
            VectorTarget::Fresh(f) => f.row_mut(k),
        }
    }

    /// Stores `value` as row `k`; a vector of another length is an error naming the lane.
    pub fn store(&mut self, k: usize, value: &Vector) -> std::result::Result<(), KernelError> {
        let width = self.width();
        if value.len() != width {
            return Err(KernelError::at(
                k,
                format!(
                    "a vector of length {} where this run's vectors have length {width}",
                    value.len(),
                ),
            ));
        }
        self.row_mut(k).copy_from_slice(value.as_slice());
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use autobatch_ir::DType;

    /// `scalars` writes row `lane` of storage's rows when the leaf allows it (and says so),
    /// and row `k` of the dense column otherwise; a wrong type is an error either way.
    #[test]
    fn scalars_write_by_lane_into_storage_or_by_position_into_the_column() {
        let lanes = [1usize, 3];
        let mut storage = Column::zeros(DType::I64, 4, 1);
        let mut stand_in = Column::zeros(DType::I64, 0, 1);
        let (wrote, asked) = (Cell::new(false), Cell::new(false));
        let stand = StandIn::new(&mut stand_in, lanes.len(), &asked);
        let rows = LaneRows::new(NonNull::from(&mut storage), stand, &wrote);
        let mut outs = LaneOutputs::from_leaves([OutLeaf::Lanes(rows)].into_iter().collect());
        assert!(outs.scalars::<f64>(0).is_err());
        let mut out = outs.scalars::<i64>(0).unwrap();
        for (k, &lane) in lanes.iter().enumerate() {
            out.set(k, lane, 10 + k as i64);
        }
        drop(outs);
        assert!(wrote.get() && !asked.get());
        assert_eq!(storage.as_slice::<i64>(), Some(&[0, 10, 0, 11][..]));
        assert_eq!(stand_in.as_slice::<i64>(), Some(&[][..]), "not sized");

        let mut dense = [Column::zeros(DType::I64, 2, 1)];
        {
            let mut outs = LaneOutputs::new(&mut dense);
            let [leaf] = outs.leaves::<1>().unwrap();
            let mut out = leaf.scalars::<i64>().unwrap();
            for (k, &lane) in lanes.iter().enumerate() {
                out.set(k, lane, 20 + k as i64);
            }
        }
        assert_eq!(dense[0].as_slice::<i64>(), Some(&[20, 21][..]));
    }

    /// Outputs of one branch condition's leaf over `lanes`: its lane lists, whether the kernel
    /// split by it (`used`) and whether it sized its stand-in column (`asked`).
    fn condition<'a>(
        lanes: &'a [usize],
        progress: &'a Cell<usize>,
        (yes, no): (&'a mut Vec<usize>, &'a mut Vec<usize>),
        (used, asked): (&'a Cell<bool>, &'a Cell<bool>),
        stand_in: &'a mut Column,
    ) -> LaneOutputs<'a> {
        let lists = SplitLanes {
            lanes,
            progress,
            yes,
            no,
            used,
        };
        let stand = StandIn::new(stand_in, lanes.len(), asked);
        LaneOutputs::from_leaves([OutLeaf::Split(stand, lists)].into_iter().collect())
    }

    /// A branch condition's leaf splits the lanes in order (`yes` holds the lanes whose
    /// condition holds) and says so; only a `bool` writer splits, and a leaf that is no
    /// branch condition offers no split; a kernel that does not split writes the stand-in
    /// column by position.
    #[test]
    fn a_condition_leaf_splits_lanes_in_order() {
        let lanes = [0usize, 2, 3, 5, 6];
        let progress = Cell::new(0);
        let (mut yes, mut no) = (vec![9], vec![9, 9]);
        let (used, asked) = (Cell::new(false), Cell::new(false));
        let mut stand_in = Column::zeros(DType::Bool, 1, 1);
        let flags = (&used, &asked);
        let mut outs = condition(&lanes, &progress, (&mut yes, &mut no), flags, &mut stand_in);
        assert!(outs.scalars::<i64>(0).is_err());
        assert!(outs.scalars::<u8>(0).is_err());
        let mut out = outs.scalars::<bool>(0).unwrap();
        let split = out.split().unwrap();
        split.each(|lane| lane % 3 == 0);
        drop(outs);
        assert!(used.get());
        assert_eq!((yes, no), (vec![0, 3, 6], vec![2, 5]));
        assert_eq!(progress.get(), lanes.len() - 1);
        // A kernel that splits never sizes the stand-in column.
        assert!(!asked.get());
        assert_eq!(stand_in.rows(), 1);

        // One that writes by position sizes it at its first write, to a row per lane.
        let (mut yes, mut no) = (Vec::new(), Vec::new());
        used.set(false);
        let flags = (&used, &asked);
        let mut outs = condition(&lanes, &progress, (&mut yes, &mut no), flags, &mut stand_in);
        let mut out = outs.scalars::<bool>(0).unwrap();
        for (k, &lane) in lanes.iter().enumerate() {
            out.set(k, lane, k % 2 == 0);
        }
        drop(outs);
        assert!(asked.get() && !used.get());
        let written = [true, false, true, false, true];
        assert_eq!(stand_in.as_slice::<bool>(), Some(&written[..]));

        let mut dense = [Column::zeros(DType::Bool, 2, 1)];
        let mut outs = LaneOutputs::new(&mut dense);
        let mut out = outs.scalars::<bool>(0).unwrap();
        assert!(out.split().is_none());
        out.set(1, 7, true);
        drop(outs);
        assert_eq!(dense[0].as_slice::<bool>(), Some(&[false, true][..]));
    }
}

//! What a lane-wise kernel reads: [`LaneInputs`], its input leaves in storage at the active
//! lanes, and [`InputRows`], typed row access to one of them.

use super::context::Context;
use super::error::KernelError;
use super::scalar_elements;
use crate::column::{Column, Element};
use crate::prefetch::prefetch;
use crate::storage::arena::ArenaView;
use crate::storage::leaf::LeafView;
use autobatch_ir::DType;
use smallvec::SmallVec;
use std::any::TypeId;
use std::cell::Cell;
use std::marker::PhantomData;
use std::ptr::NonNull;

/// The inputs of one lane-wise kernel call: storage leaves indexed by lane, the active lanes,
/// and the run's [`Context`].
pub struct LaneInputs<'a> {
    inputs: SmallVec<[LeafView<'a>; 16]>,
    lanes: &'a [usize],
    progress: &'a Cell<usize>,
    context: Context<'a>,
}

impl<'a> LaneInputs<'a> {
    /// Inputs over `columns` (one per input leaf, rows indexed by lane) for `lanes`;
    /// `progress` records the position being computed so a panic can be attributed to its lane.
    pub fn new(columns: &[&'a Column], lanes: &'a [usize], progress: &'a Cell<usize>) -> Self {
        LaneInputs {
            inputs: columns.iter().map(|&c| LeafView::Dense(c)).collect(),
            lanes,
            progress,
            context: Context::none(),
        }
    }

    /// The same inputs with `context` as the run's context.
    pub fn with_context(self, context: Context<'a>) -> Self {
        LaneInputs { context, ..self }
    }

    /// The run's context (the value every lane shares), as a `T`; a typed error if the run was
    /// given none or another type.
    pub fn context<T: std::any::Any>(&self) -> Result<&'a T, KernelError> {
        self.context.get::<T>()
    }

    /// No inputs yet, for `lanes`: storage's leaves are added with
    /// [`push_leaf`](Self::push_leaf) (one by one, so the list is built where it stays rather
    /// than moved in whole).
    pub(crate) fn from_storage(
        lanes: &'a [usize],
        progress: &'a Cell<usize>,
        context: Context<'a>,
    ) -> Self {
        LaneInputs {
            inputs: SmallVec::new(),
            lanes,
            progress,
            context,
        }
    }

    /// Adds one input leaf as storage holds it: dense rows or shared arena rows.
    pub(crate) fn push_leaf(&mut self, leaf: LeafView<'a>) {
        self.inputs.push(leaf);
    }

    /// The active lanes (rows of the input leaves), in order.
    pub fn lanes(&self) -> &'a [usize] {
        self.lanes
    }

    /// Number of input leaves.
    pub fn len(&self) -> usize {
        self.inputs.len()
    }

    /// True if the kernel has no inputs.
    pub fn is_empty(&self) -> bool {
        self.inputs.is_empty()
    }

    /// Input leaf `i` (inlined into every accessor: the error is built out of line).
    #[inline]
    fn input(&self, i: usize) -> Result<LeafView<'a>, KernelError> {
        match self.inputs.get(i) {
            Some(&leaf) => Ok(leaf),
            None => Err(missing_input(i)),
        }
    }

    /// Input leaf `i` as a raw column indexed by lane. Vector leaves shared through the
    /// interpreter's arena have no such column: read them with [`rows`](Self::rows).
    pub fn column(&self, i: usize) -> Result<&'a Column, KernelError> {
        match self.input(i)? {
            LeafView::Dense(c) => Ok(c),
            LeafView::Shared(..) => Err(KernelError::whole(format!(
                "kernel input {i} is a shared vector leaf; read it with `rows`"
            ))),
            LeafView::InPlace(_) => Err(KernelError::whole(format!(
                "kernel input {i} is also written in place by this kernel; read it with `rows`"
            ))),
        }
    }

    /// Input leaf `i` as a per-lane row accessor (scalars: width 1; vectors: the row).
    pub fn rows<T: Element>(&self, i: usize) -> Result<InputRows<'a, T>, KernelError> {
        let wrong = |found: DType| {
            KernelError::whole(format!(
                "kernel input {i} is {found}, expected {}",
                T::DTYPE
            ))
        };
        match self.input(i)? {
            LeafView::Dense(c) => {
                let data = c.as_slice::<T>().ok_or_else(|| wrong(c.dtype()))?;
                Ok(InputRows {
                    source: Source::Dense {
                        len: data.len(),
                        data: NonNull::from(data).cast(),
                        by_value: false,
                        rows: PhantomData,
                    },
                    width: c.width(),
                })
            }
            LeafView::InPlace(c) => {
                let (data, len) = scalar_elements::<T>(c).ok_or_else(|| wrong(c.dtype()))?;
                Ok(InputRows {
                    source: Source::Dense {
                        data,
                        len,
                        by_value: true,
                        rows: PhantomData,
                    },
                    width: 1,
                })
            }
            LeafView::Shared(raw, handles) => {
                // Shared rows hold `f64`s: only `T = f64` may read them.
                if TypeId::of::<T>() != TypeId::of::<f64>() {
                    return Err(wrong(DType::F64));
                }
                Ok(InputRows {
                    source: Source::Shared(raw, handles),
                    width: raw.width(),
                })
            }
        }
    }

    /// Records that the kernel is computing active position `k` (for panic attribution).
    #[inline]
    pub fn at(&self, k: usize) {
        self.progress.set(k);
    }

    /// The position a lane loop is computing, recorded for panic attribution when the loop
    /// ends or a panic unwinds out of it (see [`Position`]).
    pub(crate) fn position(&self) -> Position<'a> {
        Position::new(self.progress)
    }
}

/// The active position a lane loop is computing, written to the kernel call's progress cell
/// when this value is dropped: when the loop ends, or when a panic in it unwinds. Between the
/// two it may live in a register, so a loop whose body cannot panic stores no position per
/// lane (a loop calling [`LaneInputs::at`] stores one).
pub(crate) struct Position<'a> {
    cell: &'a Cell<usize>,
    /// The position being computed.
    pub(crate) k: usize,
}

impl<'a> Position<'a> {
    pub(crate) fn new(cell: &'a Cell<usize>) -> Self {
        Position { cell, k: 0 }
    }
}

impl Drop for Position<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        self.cell.set(self.k);
    }
}

/// The panic of a row past the end of a kernel's rows (like a slice index's, its values passed
/// by value so no row's address escapes the kernel's loop).
#[cold]
#[inline(never)]
#[track_caller]
pub(crate) fn out_of_rows(row: usize, rows: usize) -> ! {
    panic!("row {row} out of {rows} rows")
}

/// Row access to one input leaf, by lane.
#[derive(Clone, Copy)]
pub struct InputRows<'a, T> {
    source: Source<'a, T>,
    width: usize,
}

#[derive(Clone, Copy)]
enum Source<'a, T> {
    /// Rows in place, indexed by lane: `len` elements from `data`, borrowed for `'a`, or, if
    /// `by_value`, scalars that this kernel call also writes (`LeafView::InPlace`), read by
    /// value only (no reference to them is made).
    Dense {
        data: NonNull<T>,
        len: usize,
        by_value: bool,
        rows: PhantomData<&'a [T]>,
    },
    /// Arena rows, through each lane's handle (`T` is `f64`, checked when made).
    Shared(ArenaView, &'a [u32]),
}

/// An input leaf of scalars held in place, one element per lane ([`InputRows::dense_scalars`]):
/// read by lane with one bounds check and no decision per read about where the rows are, so a
/// kernel's lane loop over such leaves compiles to plain indexed loads.
#[derive(Clone, Copy)]
pub struct DenseScalars<'a, T> {
    data: NonNull<T>,
    len: usize,
    rows: PhantomData<&'a [T]>,
}

impl<T: Copy> DenseScalars<'_, T> {
    /// The `len` scalars from `data` (storage's rows, read by value only while borrowed).
    pub(crate) fn from_raw(data: NonNull<T>, len: usize) -> Self {
        DenseScalars {
            data,
            len,
            rows: PhantomData,
        }
    }

    /// The number of rows (one scalar per lane, lanes `0..len`).
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// The scalar of `lane`, unchecked.
    ///
    /// # Safety
    /// `lane` is below [`len`](Self::len).
    #[inline(always)]
    pub(crate) unsafe fn read_unchecked(&self, lane: usize) -> T {
        // SAFETY: as in `get`, the caller having checked the bound.
        unsafe { self.data.as_ptr().add(lane).read() }
    }

    /// The scalar of `lane`.
    ///
    /// # Panics
    /// If `lane` is past the leaf's rows.
    #[inline(always)]
    pub fn get(&self, lane: usize) -> T {
        if lane >= self.len {
            out_of_rows(lane, self.len);
        }
        // SAFETY: as in `InputRows::scalar`: `lane` is within the `len` elements from `data`,
        // borrowed for the kernel call, read by value (a write of the same call through
        // `ScalarsOut` or `LaneScalarsOut` aliases no reference).
        unsafe { self.data.as_ptr().add(lane).read() }
    }
}

impl<'a, T: Copy + 'static> InputRows<'a, T> {
    /// The leaf as [`DenseScalars`] if its rows are scalars held in place (as the interpreters
    /// hold every scalar variable), `None` for vector rows or a leaf with other rows.
    pub fn dense_scalars(&self) -> Option<DenseScalars<'a, T>> {
        match self.source {
            Source::Dense { data, len, .. } if self.width == 1 => {
                Some(DenseScalars::from_raw(data, len))
            }
            _ => None,
        }
    }

    /// The scalar of `lane` (the first element of its row).
    #[inline(always)]
    pub fn scalar(&self, lane: usize) -> T {
        match self.source {
            // A scalar leaf's rows are its elements: one index, one bounds check.
            Source::Dense { data, len, .. } if self.width == 1 => {
                if lane >= len {
                    out_of_rows(lane, len);
                }
                // SAFETY: `lane` is within the `len` elements from `data`, which are borrowed
                // for `'a` or (`by_value`) reached only through their pointer during the kernel
                // call, read here by value: a write of this call through `ScalarsOut` aliases
                // no reference.
                unsafe { data.as_ptr().add(lane).read() }
            }
            _ => self.first_of_row(lane),
        }
    }

    /// [`scalar`](Self::scalar) of a leaf with other rows, out of the kernel's loop (taking a
    /// copy, so the rows' address does not escape the loop and their fields stay in registers).
    #[inline(never)]
    fn first_of_row(self, lane: usize) -> T {
        self.row(lane)[0]
    }

    /// The elements of `lane`'s row.
    ///
    /// # Panics
    /// For an input the same kernel call writes in place ([`Kernel::lane_wise_in_place`]):
    /// read it with [`scalar`](Self::scalar).
    ///
    /// [`Kernel::lane_wise_in_place`]: crate::Kernel::lane_wise_in_place
    #[inline(always)]
    pub fn row(&self, lane: usize) -> &'a [T] {
        match self.source {
            Source::Dense { by_value: true, .. } => {
                panic!("an input written in place by its own kernel is read with `scalar`")
            }
            Source::Dense { data, len, .. } => {
                let (start, end) = (lane * self.width, (lane + 1) * self.width);
                if end > len {
                    out_of_rows(lane, len / self.width);
                }
                // SAFETY: the range is within the `len` elements from `data`, borrowed for `'a`
                // (not `by_value`).
                unsafe { std::slice::from_raw_parts(data.as_ptr().add(start), end - start) }
            }
            Source::Shared(raw, handles) => {
                // SAFETY: input rows are never written during the kernel call these rows were
                // made for (only fresh output rows are, see `ArenaView`).
                let row: &'a [f64] = unsafe { raw.row(handles[lane]) };
                // SAFETY: `Source::Shared` is only made for `T = f64` (`LaneInputs::rows` checks
                // the `TypeId`), so this is the same slice with the same element type.
                unsafe { std::slice::from_raw_parts(row.as_ptr().cast::<T>(), row.len()) }
            }
        }
    }

    /// Elements per row.
    pub fn width(&self) -> usize {
        self.width
    }

    /// Starts fetching `lane`'s row into the cache (call it for a lane a few ahead of the one
    /// being computed).
    #[inline(always)]
    pub fn prefetch(&self, lane: usize) {
        if matches!(self.source, Source::Dense { by_value: true, .. }) {
            return;
        }
        prefetch(self.row(lane));
    }
}

/// The error of a kernel asking for input leaf `i`, which it does not have.
#[cold]
fn missing_input(i: usize) -> KernelError {
    KernelError::whole(format!("kernel input {i} is missing"))
}

//! `Leaf`: the rows of one tensor leaf of one variable, in either storage kind (dense rows in
//! place, or shared arena handles); the one place that tells the two kinds apart.
//!
//! A leaf holds the current value of every lane and, for stacked (FULL) variables, the saved
//! frames, stack-major (`row = depth * batch + lane`, as in the reference). Scalar leaves (and
//! non-`f64` vectors) keep their rows in place, in a `[rows, width]` column; `f64` vector
//! leaves keep one [`Arena`] handle per row, so copies, pushes and pops move handles and only
//! kernels write vector rows.

use super::arena::{Arena, ArenaView, ZERO};
use super::rows::{self, Rows, Stacked};
use crate::column::{width_of, Column};
use crate::spare::Spare;
use autobatch_ir::{DType, Shape, TensorType};

/// The rows of one leaf: its current value per lane and, for stacked variables, the saved
/// frames (`levels * batch` rows, stack-major).
pub(crate) enum Leaf {
    /// Rows in place, `[rows, width]`.
    Dense { rows: Column, saved: Column },
    /// One handle into the arena per row (`f64` vectors). A saved handle at or above its
    /// lane's depth is stale: it is not counted as a holder of its row.
    Shared { rows: Vec<u32>, saved: Vec<u32> },
}

/// One leaf as a lane-wise kernel reads it: rows indexed by lane.
#[derive(Clone, Copy)]
pub(crate) enum LeafView<'a> {
    /// Rows in place.
    Dense(&'a Column),
    /// Scalar rows in place that the same kernel call also writes by lane (an output that is
    /// also an input, of an in-place kernel): read by value through the column's element
    /// pointer, never through a reference to its elements, so the writes alias no reference.
    InPlace(&'a Column),
    /// Arena rows and the handle each lane holds.
    Shared(ArenaView, &'a [u32]),
}

/// The value of one leaf in some lanes, taken out of storage to be put back later: dense rows
/// (row `k` for the `k`-th lane), or held handles.
pub(crate) enum Held {
    Dense(Column),
    Shared(Vec<u32>),
}

impl Held {
    /// Bytes held outside the arena (a dense copy, or one handle per lane).
    pub(crate) fn bytes(&self) -> usize {
        match self {
            Held::Dense(c) => c.rows() * c.width() * Column::element_bytes(c.dtype()),
            Held::Shared(handles) => handles.len() * 4,
        }
    }

    /// Lets go of what is held (the value is not put back anywhere); the memory that held it
    /// goes to `spare`.
    pub(crate) fn release(self, arena: &mut Arena, spare: &mut Spare) {
        match self {
            Held::Dense(c) => spare.keep(c),
            Held::Shared(handles) => {
                handles.iter().for_each(|&h| arena.release(h));
                spare.keep_handle_list(handles);
            }
        }
    }
}

impl Leaf {
    /// `rows` zero rows and no saved frames for a leaf of type `ty` (dense rows in a column
    /// `spare` kept, if it has one that fits).
    pub(crate) fn zeros(ty: TensorType, rows: usize, vector_len: usize, spare: &mut Spare) -> Leaf {
        if ty.shape == Shape::Vector && ty.dtype == DType::F64 {
            Leaf::Shared {
                rows: vec![ZERO; rows],
                saved: Vec::new(),
            }
        } else {
            let width = width_of(ty, vector_len);
            Leaf::Dense {
                rows: spare.zeros(ty.dtype, rows, width),
                saved: Column::zeros(ty.dtype, 0, width),
            }
        }
    }

    /// Gives the leaf's dense columns to `spare` for a later run.
    pub(crate) fn keep_in(self, spare: &mut Spare) {
        if let Leaf::Dense { rows, saved } = self {
            spare.keep(rows);
            spare.keep(saved);
        }
    }

    /// Whether leaves of type `ty` share their rows through the arena.
    pub(crate) fn is_shared_type(ty: TensorType) -> bool {
        ty.shape == Shape::Vector && ty.dtype == DType::F64
    }

    /// Whether this leaf shares its rows through the arena (kernels then write its new rows
    /// in place, see [`install`](Self::install)).
    pub(crate) fn is_shared(&self) -> bool {
        matches!(self, Leaf::Shared { .. })
    }

    /// The leaf as a kernel reads it, with shared rows seen through `arena`.
    pub(crate) fn view(&self, arena: ArenaView) -> LeafView<'_> {
        match self {
            Leaf::Dense { rows, .. } => LeafView::Dense(rows),
            Leaf::Shared { rows, .. } => LeafView::Shared(arena, rows),
        }
    }

    /// The rows themselves, if they are in place.
    pub(crate) fn dense(&self) -> Option<&Column> {
        match self {
            Leaf::Dense { rows, .. } => Some(rows),
            Leaf::Shared { .. } => None,
        }
    }

    /// The rows themselves, to write, if they are scalars in place (width 1).
    pub(crate) fn scalar_rows_mut(&mut self) -> Option<&mut Column> {
        match self {
            Leaf::Dense { rows, .. } if rows.width() == 1 => Some(rows),
            _ => None,
        }
    }

    /// Bytes one saved row of this leaf takes (a shared leaf saves a 4-byte handle).
    pub(crate) fn saved_row_bytes(&self) -> usize {
        match self {
            Leaf::Dense { saved, .. } => saved.width() * Column::element_bytes(saved.dtype()),
            Leaf::Shared { .. } => 4,
        }
    }

    /// Room for `rows` saved rows, keeping those saved so far (in a column of `spare`'s, if
    /// it keeps one that fits; the one outgrown goes to it).
    pub(crate) fn grow_saved(&mut self, rows: usize, spare: &mut Spare) {
        match self {
            Leaf::Dense { saved, .. } => {
                let mut grown = spare.zeros(saved.dtype(), rows, saved.width());
                grown.copy_rows(saved, (0..saved.rows()).map(|r| (r, r)));
                spare.keep(std::mem::replace(saved, grown));
            }
            Leaf::Shared { saved, .. } => saved.resize(rows, ZERO),
        }
    }

    /// The current rows of `lanes`, in order, as a new dense column.
    pub(crate) fn gather(&self, arena: &Arena, lanes: &[usize]) -> Column {
        match self {
            Leaf::Dense { rows, .. } => rows::gathered(rows, lanes),
            Leaf::Shared { rows, .. } => arena.gather(rows, lanes),
        }
    }

    /// The dtype and row width of the leaf's values.
    pub(crate) fn kind(&self, arena: &Arena) -> (DType, usize) {
        match self {
            Leaf::Dense { rows, .. } => (rows.dtype(), rows.width()),
            Leaf::Shared { .. } => (DType::F64, arena.width()),
        }
    }

    /// Like [`gather`](Self::gather), into the allocation of `out` where it fits.
    pub(crate) fn gather_into(&self, arena: &Arena, lanes: &[usize], out: Column) -> Column {
        match self {
            Leaf::Dense { rows, .. } => {
                let mut out = if out.dtype() == rows.dtype() && out.width() == rows.width() {
                    out.resized(lanes.len())
                } else {
                    Column::zeros(rows.dtype(), lanes.len(), rows.width())
                };
                rows::copy(&mut out, rows, Rows::Gather(lanes));
                out
            }
            Leaf::Shared { rows, .. } => arena.gather_into(rows, lanes, out),
        }
    }

    /// Copies `src`'s current rows of `lanes` into the same rows (shared leaves share the
    /// rows). Returns `false`, copying nothing, if the leaves differ in kind, dtype or width.
    pub(crate) fn copy_rows(&mut self, arena: &mut Arena, src: &Leaf, lanes: &[usize]) -> bool {
        match (self, src) {
            (Leaf::Dense { rows: d, .. }, Leaf::Dense { rows: s, .. }) => {
                rows::copy(d, s, Rows::Same(lanes))
            }
            (Leaf::Shared { rows: d, .. }, Leaf::Shared { rows: s, .. }) => {
                for &l in lanes {
                    arena.assign(&mut d[l], s[l]);
                }
                true
            }
            _ => false,
        }
    }

    /// Writes row `k` of dense `src` into row `lanes[k]`. Returns `false`, writing nothing, if
    /// `src` does not fit the leaf.
    pub(crate) fn scatter(&mut self, arena: &mut Arena, lanes: &[usize], src: &Column) -> bool {
        match self {
            Leaf::Dense { rows, .. } => rows::copy(rows, src, Rows::Scatter(lanes)),
            Leaf::Shared { rows, .. } => {
                let width = arena.width();
                let Some(data) = src.as_slice::<f64>().filter(|_| src.width() == width) else {
                    return false;
                };
                arena.store_rows(rows, lanes, data);
                true
            }
        }
    }

    /// With every lane given, takes `value` as the rows by swapping (the caller gets the old
    /// rows back in `value`). Returns `false`, changing nothing, unless the leaf is dense with
    /// `value`'s dtype, width and row count.
    pub(crate) fn swap_whole(&mut self, value: &mut Column) -> bool {
        match self {
            Leaf::Dense { rows, .. }
                if rows.dtype() == value.dtype()
                    && rows.width() == value.width()
                    && rows.rows() == value.rows() =>
            {
                std::mem::swap(rows, value);
                true
            }
            _ => false,
        }
    }

    /// Makes lane `lanes[k]` hold fresh arena row `handles[k]` (already counted once), letting
    /// go of what it held. Returns `false`, changing nothing, for a dense leaf.
    pub(crate) fn install(&mut self, arena: &mut Arena, lanes: &[usize], handles: &[u32]) -> bool {
        match self {
            Leaf::Shared { rows, .. } => {
                for (&lane, &h) in lanes.iter().zip(handles) {
                    arena.release(std::mem::replace(&mut rows[lane], h));
                }
                true
            }
            Leaf::Dense { .. } => false,
        }
    }

    /// Saves the current rows of `lanes` in the frame just below their `depth` (a duplicating
    /// push; the depth already counts that frame).
    pub(crate) fn push(&mut self, arena: &mut Arena, lanes: &[usize], depth: &[u32], batch: usize) {
        let stacked = Stacked {
            lanes,
            depth,
            batch,
        };
        match self {
            Leaf::Dense { rows, saved } => {
                rows::copy(saved, rows, Rows::Push(stacked));
            }
            Leaf::Shared { rows, saved } => {
                // The slot being filled holds nothing: take the handle without a release.
                for &l in lanes {
                    arena.retain(rows[l]);
                    saved[stacked.below(l)] = rows[l];
                }
            }
        }
    }

    /// Restores the rows of `lanes` saved at their (already decremented) `depth`.
    pub(crate) fn pop(&mut self, arena: &mut Arena, lanes: &[usize], depth: &[u32], batch: usize) {
        let stacked = Stacked {
            lanes,
            depth,
            batch,
        };
        match self {
            Leaf::Dense { rows, saved } => {
                rows::copy(rows, saved, Rows::Pop(stacked));
            }
            Leaf::Shared { rows, saved } => {
                // The saved frame's hold passes to the current value.
                for &l in lanes {
                    arena.release(rows[l]);
                    rows[l] = saved[stacked.at(l)];
                }
            }
        }
    }

    /// Drops the vector rows held in `lanes` (their value is dead): a shared leaf lets go of
    /// its rows and holds the zero row; a dense leaf is untouched.
    pub(crate) fn release_rows(&mut self, arena: &mut Arena, lanes: &[usize]) {
        if let Leaf::Shared { rows, .. } = self {
            for &l in lanes {
                arena.release(std::mem::replace(&mut rows[l], ZERO));
            }
        }
    }

    /// The current value in `lanes`, held so that later writes do not change it: dense rows
    /// are copied (into a column `spare` kept, if it has one), shared rows gain a holder.
    pub(crate) fn take(&self, arena: &mut Arena, lanes: &[usize], spare: &mut Spare) -> Held {
        match self {
            leaf @ Leaf::Dense { rows, .. } => {
                let out = spare.column(rows.dtype(), rows.width());
                Held::Dense(leaf.gather_into(arena, lanes, out))
            }
            Leaf::Shared { rows, .. } => {
                let mut handles = spare.handle_list();
                handles.extend(lanes.iter().map(|&l| {
                    arena.retain(rows[l]);
                    rows[l]
                }));
                Held::Shared(handles)
            }
        }
    }

    /// Writes a held value back into `lanes` (the lanes it was taken at, in order); held rows
    /// pass to this leaf, a dense copy's column or the list of handles to `spare`. Returns
    /// `false` if the value is of the other kind (it is then let go of, changing nothing here).
    pub(crate) fn put(
        &mut self,
        arena: &mut Arena,
        lanes: &[usize],
        held: Held,
        spare: &mut Spare,
    ) -> bool {
        match (self, held) {
            (leaf @ Leaf::Dense { .. }, Held::Dense(c)) => {
                let fits = leaf.scatter(arena, lanes, &c);
                spare.keep(c);
                fits
            }
            (Leaf::Shared { rows, .. }, Held::Shared(handles)) => {
                for (&l, &h) in lanes.iter().zip(&handles) {
                    arena.take_over(&mut rows[l], h);
                }
                spare.keep_handle_list(handles);
                true
            }
            (_, held) => {
                held.release(arena, spare);
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64_rows(leaf: &Leaf, arena: &Arena, lanes: &[usize]) -> Vec<f64> {
        leaf.gather(arena, lanes)
            .as_slice::<f64>()
            .unwrap()
            .to_vec()
    }

    /// A push, an overwrite and a pop give the pushed value back, for both kinds of leaf; a
    /// shared leaf's rows are then held by nothing else.
    #[test]
    fn push_overwrite_pop_restores_in_both_kinds() {
        for ty in [
            TensorType::scalar(DType::F64),
            TensorType::vector(DType::F64),
        ] {
            let width = width_of(ty, 2);
            let mut arena = Arena::new(2);
            let mut leaf = Leaf::zeros(ty, 2, 2, &mut Spare::default());
            assert_eq!(leaf.is_shared(), Leaf::is_shared_type(ty));
            let first = Column::from_view2(ndarray::Array2::from_elem((2, width), 1.0).view());
            assert!(leaf.scatter(&mut arena, &[0, 1], &first));
            leaf.grow_saved(2, &mut Spare::default());
            let mut depth = vec![0u32, 0];
            depth[1] += 1;
            leaf.push(&mut arena, &[1], &depth, 2);
            let second = Column::from_view2(ndarray::Array2::from_elem((1, width), 2.0).view());
            assert!(leaf.scatter(&mut arena, &[1], &second));
            assert_eq!(f64_rows(&leaf, &arena, &[1]), vec![2.0; width]);
            depth[1] -= 1;
            leaf.pop(&mut arena, &[1], &depth, 2);
            assert_eq!(f64_rows(&leaf, &arena, &[0, 1]), vec![1.0; 2 * width]);
        }
    }

    /// A held value comes back unchanged after the leaf is overwritten; a value of the other
    /// kind is refused and let go of.
    #[test]
    fn take_and_put_round_trip_and_refuse_the_other_kind() {
        let mut arena = Arena::new(2);
        let mut shared = Leaf::zeros(TensorType::vector(DType::F64), 1, 2, &mut Spare::default());
        let v = Column::from_view2(ndarray::array![[3.0, 4.0]].view());
        assert!(shared.scatter(&mut arena, &[0], &v));
        let spare = &mut Spare::default();
        let held = shared.take(&mut arena, &[0], spare);
        shared.release_rows(&mut arena, &[0]);
        assert_eq!(f64_rows(&shared, &arena, &[0]), vec![0.0, 0.0]);
        assert!(shared.put(&mut arena, &[0], held, spare));
        assert_eq!(f64_rows(&shared, &arena, &[0]), vec![3.0, 4.0]);

        let mut dense = Leaf::zeros(TensorType::scalar(DType::F64), 1, 2, &mut Spare::default());
        let live = arena.live();
        let held = shared.take(&mut arena, &[0], spare);
        assert!(!dense.put(&mut arena, &[0], held, spare));
        assert_eq!(arena.live(), live, "the refused rows are let go of");
        assert!(!dense.copy_rows(&mut arena, &shared, &[0]));
    }
}

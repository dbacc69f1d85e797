//! `ColumnPool`: dense columns kept between ops (kernel outputs, gathered batched inputs), so
//! running an op allocates nothing once the pool has warmed up.

use crate::column::{width_of, Column};
use autobatch_ir::{DType, TensorType};

/// Spare columns of any dtype and width, and the list that hands them out.
#[derive(Default)]
pub(crate) struct ColumnPool {
    spare: Vec<Spare>,
    /// The list [`columns`](Self::columns) hands out, kept between ops for its allocation.
    list: Vec<Column>,
    /// The columns [`columns`](Self::columns) handed out, by allocation address, with the
    /// elements of that allocation known to hold values (a kernel may replace a column: one
    /// coming back with another address counts only its own elements).
    lent: Vec<(usize, usize)>,
}

/// A spare column and the elements of its allocation known to hold values (at least its own:
/// a column that shrank keeps the values past its end, so it grows back without zero-filling).
struct Spare {
    column: Column,
    initialised: usize,
}

/// Spare columns [`ColumnPool::recycle`] keeps at most.
const KEEP: usize = 64;

impl ColumnPool {
    /// A spare column of `dtype` and `width` (any row count), or a new empty one.
    pub(crate) fn take(&mut self, dtype: DType, width: usize) -> Column {
        self.take_spare(dtype, width).column
    }

    /// [`take`](Self::take), with what is known of its allocation.
    fn take_spare(&mut self, dtype: DType, width: usize) -> Spare {
        match self
            .spare
            .iter()
            .position(|s| s.column.dtype() == dtype && s.column.width() == width)
        {
            Some(i) => self.spare.swap_remove(i),
            None => Spare {
                column: Column::zeros(dtype, 0, width),
                initialised: 0,
            },
        }
    }

    /// Gives back a column [`take`](Self::take) handed out.
    pub(crate) fn put(&mut self, column: Column) {
        let initialised = column.allocation().1;
        self.spare.push(Spare {
            column,
            initialised,
        });
    }

    /// Dense columns for leaves of `types` (vectors of `vector_len`), `rows` rows each,
    /// reusing spare ones (and the list itself: give it back with
    /// [`recycle`](Self::recycle)). A reused column keeps old values until the kernel writes
    /// its rows (every kernel writes every output row).
    pub(crate) fn columns(
        &mut self,
        types: impl Iterator<Item = TensorType>,
        rows: usize,
        vector_len: usize,
    ) -> Vec<Column> {
        let mut columns = std::mem::take(&mut self.list);
        self.lent.clear();
        for t in types {
            let spare = self.take_spare(t.dtype, width_of(t, vector_len));
            let column = spare.column.regrown(rows, spare.initialised);
            let (address, len) = column.allocation();
            self.lent.push((address, spare.initialised.max(len)));
            columns.push(column);
        }
        columns
    }

    /// Keeps `columns` (and the list holding them) for reuse by later ops, up to a bound.
    pub(crate) fn recycle(&mut self, mut columns: Vec<Column>) {
        let room = KEEP.saturating_sub(self.spare.len());
        let lent = std::mem::take(&mut self.lent);
        self.spare
            .extend(columns.drain(..).take(room).map(|column| {
                let (address, len) = column.allocation();
                let known = lent.iter().find(|&&(a, _)| a == address);
                let initialised = known.map_or(len, |&(_, init)| init.max(len));
                Spare {
                    column,
                    initialised,
                }
            }));
        self.lent = lent;
        columns.clear();
        self.list = columns;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn i64s(pool: &mut ColumnPool, rows: usize) -> Vec<Column> {
        pool.columns(std::iter::once(TensorType::scalar(DType::I64)), rows, 0)
    }

    /// A column that shrank grows back over the values it held (no zero-fill); one a kernel
    /// replaced grows from its own elements only, zero-filled past them.
    #[test]
    fn columns_grow_back_over_known_values_only() {
        let mut pool = ColumnPool::default();
        let mut c = i64s(&mut pool, 8);
        c[0].as_slice_mut::<i64>().unwrap().fill(7);
        pool.recycle(c);
        let c = i64s(&mut pool, 3);
        assert_eq!(c[0].rows(), 3);
        pool.recycle(c);
        let mut c = i64s(&mut pool, 8);
        assert_eq!(c[0].as_slice::<i64>().unwrap(), &[7; 8]);
        c[0] = Column::from_scalars(&[5i64, 5]);
        pool.recycle(c);
        let c = i64s(&mut pool, 8);
        assert_eq!(c[0].as_slice::<i64>().unwrap(), &[5, 5, 0, 0, 0, 0, 0, 0]);
    }
}

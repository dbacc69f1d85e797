//! `ColumnPool`: dense columns kept between ops (kernel outputs, gathered batched inputs), so
//! running an op allocates nothing once the pool has warmed up.

use crate::column::{width_of, Column};
use autobatch_ir::{DType, TensorType};

/// Spare columns of any dtype and width, and the list that hands them out.
#[derive(Default)]
pub(crate) struct ColumnPool {
    spare: Vec<Column>,
    /// The list [`columns`](Self::columns) hands out, kept between ops for its allocation.
    list: Vec<Column>,
}

/// Spare columns [`ColumnPool::recycle`] keeps at most.
const KEEP: usize = 64;

impl ColumnPool {
    /// A spare column of `dtype` and `width` (any row count), or a new empty one: the one
    /// given back last, most likely of the row count the next op asks for (the ops of a block
    /// run on the same lanes), so that resizing it does nothing.
    pub(crate) fn take(&mut self, dtype: DType, width: usize) -> Column {
        match self
            .spare
            .iter()
            .rposition(|c| c.dtype() == dtype && c.width() == width)
        {
            Some(i) => self.spare.swap_remove(i),
            None => Column::zeros(dtype, 0, width),
        }
    }

    /// Gives back a column [`take`](Self::take) handed out.
    pub(crate) fn put(&mut self, column: Column) {
        self.spare.push(column);
    }

    /// Dense columns for leaves of `types` (vectors of `vector_len`), `rows` rows each,
    /// reusing spare ones (and the list itself: give it back with
    /// [`recycle`](Self::recycle)). A reused column keeps old values until the kernel writes
    /// its rows (every kernel writes every output row), and grows back over the values it
    /// held before it shrank ([`Column::resized`]), so it is zero-filled only past them.
    pub(crate) fn columns(
        &mut self,
        types: impl Iterator<Item = TensorType>,
        rows: usize,
        vector_len: usize,
    ) -> Vec<Column> {
        let mut columns = std::mem::take(&mut self.list);
        for t in types {
            let column = self.take(t.dtype, width_of(t, vector_len)).resized(rows);
            columns.push(column);
        }
        columns
    }

    /// Keeps `columns` (and the list holding them) for reuse by later ops, up to a bound.
    pub(crate) fn recycle(&mut self, mut columns: Vec<Column>) {
        // One by one: an op has a few columns, where a draining iterator costs more.
        while let Some(column) = columns.pop() {
            if self.spare.len() < KEEP {
                self.spare.push(column);
            }
        }
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

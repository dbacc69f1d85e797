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
    /// A spare column of `dtype` and `width` (any row count), or a new empty one.
    pub(crate) fn take(&mut self, dtype: DType, width: usize) -> Column {
        match self
            .spare
            .iter()
            .position(|c| c.dtype() == dtype && c.width() == width)
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
    /// its rows (every kernel writes every output row).
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
        let room = KEEP.saturating_sub(self.spare.len());
        self.spare.extend(columns.drain(..).take(room));
        columns.clear();
        self.list = columns;
    }
}

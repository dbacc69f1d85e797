//! `Spare`: the memory one run of an executable leaves to its next run (its variables' dense
//! columns, its kernels' output columns and the interpreters' lane lists), so that repeated
//! runs write pages the process already has instead of having new ones mapped in; within a
//! run, the dense copies of values kept around calls (snapshots) are taken from it and given
//! back to it as well.
//!
//! A run's storage is a few columns of a row per lane; freed at the end of a run, the C heap
//! gives that memory back to the system, and the next run's first write to each page faults it
//! in again (Collatz over 10,000 lanes: 244 page faults and about a quarter of a 2 ms run).
//! Kept here instead, a column is zeroed for its next variable, which costs a pass over
//! memory already in cache. `Lists` does the same for the short lists the interpreters make
//! at every step or call (lane lists, values held around a call).

use crate::column::Column;
use crate::config::available_threads;
use crate::pool::ColumnPool;
use autobatch_ir::DType;
use std::sync::{Mutex, OnceLock};

/// Bytes of columns one [`Spare`] keeps at most: a run larger than this gains little from
/// reuse (its work dwarfs its page faults), and the memory stays with the executable.
const KEEP_BYTES: usize = 16 << 20;

/// Columns one [`Spare`] keeps at most (a lookup scans them).
const KEEP_COLUMNS: usize = 256;

/// Memory kept from one run for the next.
#[derive(Default)]
pub(crate) struct Spare {
    /// Columns of any dtype, width and row count.
    columns: Vec<Column>,
    /// Bytes `columns` hold.
    bytes: usize,
    /// The kernels' output columns.
    pub(crate) pool: ColumnPool,
    /// Emptied lane lists (the interpreters'), at most [`KEEP_BYTES`] of them.
    lane_lists: Lists<usize>,
    /// Emptied lists of vector rows' handles (values held around a call), at most
    /// [`KEEP_BYTES`] of them.
    handle_lists: Lists<u32>,
    /// Bytes `handle_lists` hold.
    handle_bytes: usize,
}

impl Spare {
    /// A column of `rows` zero rows of `width` elements of `dtype`: a kept one of that dtype
    /// and width, zeroed, if there is one.
    pub(crate) fn zeros(&mut self, dtype: DType, rows: usize, width: usize) -> Column {
        match self.kept(dtype, width) {
            Some(column) => {
                let mut column = column.resized(rows);
                column.fill_zero();
                column
            }
            None => Column::zeros(dtype, rows, width),
        }
    }

    /// A column of `dtype` and `width` whose rows are to be overwritten: a kept one, or an
    /// empty one.
    pub(crate) fn column(&mut self, dtype: DType, width: usize) -> Column {
        self.kept(dtype, width)
            .unwrap_or_else(|| Column::zeros(dtype, 0, width))
    }

    /// The column of `dtype` and `width` kept last, if any.
    fn kept(&mut self, dtype: DType, width: usize) -> Option<Column> {
        let i = (self.columns.iter()).rposition(|c| c.dtype() == dtype && c.width() == width)?;
        let column = self.columns.swap_remove(i);
        self.bytes -= bytes(&column);
        Some(column)
    }

    /// The emptied lane lists an earlier run left (see [`keep_lane_lists`](Self::keep_lane_lists)).
    pub(crate) fn take_lane_lists(&mut self) -> Lists<usize> {
        std::mem::take(&mut self.lane_lists)
    }

    /// Keeps a run's emptied lane lists for the next run, up to [`KEEP_BYTES`] of them: a
    /// batch's lists are a few rows of a word per lane each (80 KB for 10,000 lanes), made
    /// afresh they are pages faulted in again at every run (Collatz over 10,000 lanes: 88
    /// page faults per run in stackless, about a tenth of its time).
    pub(crate) fn keep_lane_lists(&mut self, mut lists: Lists<usize>) {
        let mut bytes = 0;
        lists.retain(|list| {
            bytes += list.capacity() * std::mem::size_of::<usize>();
            bytes <= KEEP_BYTES
        });
        self.lane_lists = lists;
    }

    /// An empty list for handles of vector rows (one kept earlier, if any).
    pub(crate) fn handle_list(&mut self) -> Vec<u32> {
        let list = self.handle_lists.take();
        self.handle_bytes -= list.capacity() * std::mem::size_of::<u32>();
        list
    }

    /// Keeps `list`'s allocation for a later [`handle_list`](Self::handle_list), if there is
    /// room: a value held around every call of a recursion otherwise allocates its list of
    /// handles at each call.
    pub(crate) fn keep_handle_list(&mut self, list: Vec<u32>) {
        let size = list.capacity() * std::mem::size_of::<u32>();
        if self.handle_bytes + size <= KEEP_BYTES {
            self.handle_bytes += size;
            self.handle_lists.give(list);
        }
    }

    /// Keeps `column` for a later [`zeros`](Self::zeros) or [`column`](Self::column), if
    /// there is room.
    pub(crate) fn keep(&mut self, column: Column) {
        let size = bytes(&column);
        let room = self.bytes + size <= KEEP_BYTES && self.columns.len() < KEEP_COLUMNS;
        if size > 0 && room {
            self.bytes += size;
            self.columns.push(column);
        }
    }
}

/// Bytes of `column`'s rows.
fn bytes(column: &Column) -> usize {
    column.rows() * column.width() * Column::element_bytes(column.dtype())
}

/// The [`Spare`]s of an executable's finished runs, one taken by each run (runs of shards on
/// several threads each take their own), at most one per thread the process may use.
#[derive(Default)]
pub(crate) struct Spares(Mutex<Vec<Spare>>);

impl Spares {
    /// A kept spare, or an empty one.
    pub(crate) fn take(&self) -> Spare {
        let mut spares = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        spares.pop().unwrap_or_default()
    }

    /// How many spares are kept now.
    #[cfg(test)]
    pub(crate) fn kept(&self) -> usize {
        self.0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .len()
    }

    /// Keeps `spare` for a later run, unless one is kept for every thread the process may
    /// use already (more runs than that at once are shards of one run on more threads than
    /// cores, whose extra memory is let go of).
    pub(crate) fn give(&self, spare: Spare) {
        let mut spares = self
            .0
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if spares.len() < kept_spares() {
            spares.push(spare);
        }
    }
}

/// How many spares an executable keeps: [`available_threads`] when first asked (which reads
/// the process's CPU set and cgroup quota: not something to do at every run).
fn kept_spares() -> usize {
    static KEPT: OnceLock<usize> = OnceLock::new();
    *KEPT.get_or_init(available_threads)
}

/// A copy of an executable keeps no memory of the original's runs.
impl Clone for Spares {
    fn clone(&self) -> Self {
        Spares::default()
    }
}

impl std::fmt::Debug for Spares {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Spares")
    }
}

/// Emptied lists kept for their allocations: the lists an interpreter makes at every step or
/// call (lanes, values held around a call) are taken from here and given back, so the loop
/// allocates nothing once warmed up.
pub(crate) struct Lists<T>(Vec<Vec<T>>);

impl<T> Default for Lists<T> {
    fn default() -> Self {
        Lists(Vec::new())
    }
}

impl<T> Lists<T> {
    /// An empty list (one given back earlier, if any).
    pub(crate) fn take(&mut self) -> Vec<T> {
        self.0.pop().unwrap_or_default()
    }

    /// Keeps `list`'s allocation for a later [`take`](Self::take) (emptied first; a list that
    /// never allocated is not kept).
    pub(crate) fn give(&mut self, mut list: Vec<T>) {
        if list.capacity() > 0 {
            list.clear();
            self.0.push(list);
        }
    }

    /// Keeps only the lists `keep` says yes to, asked in the order they were given.
    fn retain(&mut self, keep: impl FnMut(&Vec<T>) -> bool) {
        self.0.retain(keep);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept column comes back zeroed at the rows asked for; one of another dtype or width
    /// is not handed out; nothing past the bound is kept.
    #[test]
    fn kept_columns_come_back_zeroed() {
        let mut spare = Spare::default();
        let mut c = Column::zeros(DType::I64, 8, 1);
        c.as_slice_mut::<i64>().unwrap().fill(7);
        spare.keep(c);
        assert_eq!(spare.bytes, 64);
        let f = spare.zeros(DType::F64, 4, 1);
        assert_eq!(f.as_slice::<f64>().unwrap(), &[0.0; 4]);
        assert_eq!(spare.columns.len(), 1, "an f64 column is new");
        let c = spare.zeros(DType::I64, 5, 1);
        assert_eq!(c.as_slice::<i64>().unwrap(), &[0; 5]);
        assert!(spare.columns.is_empty() && spare.bytes == 0);
        spare.keep(Column::zeros(DType::F64, KEEP_BYTES / 8 + 1, 1));
        assert!(spare.columns.is_empty(), "past the bound");
    }

    /// An executable keeps at most one spare per thread the process may use.
    #[test]
    fn spares_are_kept_one_per_thread_at_most() {
        let spares = Spares::default();
        let threads = kept_spares();
        for _ in 0..threads + 2 {
            let mut spare = Spare::default();
            spare.keep(Column::zeros(DType::I64, 1, 1));
            spares.give(spare);
        }
        let kept: Vec<Spare> = (0..threads + 2).map(|_| spares.take()).collect();
        let full = kept.iter().filter(|s| !s.columns.is_empty()).count();
        assert_eq!(full, threads);
    }

    /// A list given back comes out again emptied, with its allocation; one that never
    /// allocated is not kept.
    #[test]
    fn lists_given_back_are_taken_again_empty() {
        let mut lists = Lists::default();
        lists.give(Vec::<usize>::new());
        assert_eq!(lists.take().capacity(), 0);
        let mut list = lists.take();
        list.extend([3, 1, 2]);
        let capacity = list.capacity();
        lists.give(list);
        let again = lists.take();
        assert!(again.is_empty() && again.capacity() == capacity);
        assert_eq!(lists.take().capacity(), 0);
    }

    /// A run's lane lists are kept for the next run up to the byte bound, the lists given
    /// first kept first.
    #[test]
    fn lane_lists_are_kept_within_the_bound() {
        let words = KEEP_BYTES / std::mem::size_of::<usize>();
        let mut lists = Lists::default();
        lists.give(Vec::with_capacity(words / 2));
        lists.give(Vec::with_capacity(words / 2));
        lists.give(Vec::with_capacity(1));
        let mut spare = Spare::default();
        spare.keep_lane_lists(lists);
        let mut kept = spare.take_lane_lists();
        let capacities = [kept.take(), kept.take(), kept.take()].map(|l| l.capacity());
        assert_eq!(
            capacities,
            [words / 2, words / 2, 0],
            "the third past the bound"
        );
        assert_eq!(spare.take_lane_lists().take().capacity(), 0, "taken once");
    }
}

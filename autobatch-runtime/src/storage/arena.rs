//! `Arena`: reference-counted rows that vector variables share, so copying a vector between
//! variables or onto a stack copies a 4-byte handle instead of the whole row.
//!
//! Every `f64` vector leaf of a batched run stores one handle per lane; the handle names a row
//! of the arena. Assignments, pushes and pops move handles and adjust counts; only kernels
//! write rows. A new row is always the lowest free one, so the rows in use stay packed at the
//! start of the buffer however many variables and saved frames hold them, and the rows a kernel
//! call allocates for its lanes, one after another, lie in lane order at rising addresses: a
//! later kernel reading them lane by lane walks memory forwards, which the hardware prefetcher
//! follows (rows handed out last-in first-out lay scattered over the whole arena). Handle
//! [`ZERO`] is a row of zeros that is never freed: the value of a leaf before its first write.

use crate::column::Column;
use crate::prefetch::{prefetch, PREFETCH_AHEAD};
use autobatch_ir::DType;
use free::FreeRows;
use ndarray::Array2;

/// The handle of the permanent all-zeros row.
pub(crate) const ZERO: u32 = 0;

/// The arena's rows seen through a raw pointer for the length of one lane-wise kernel call, so
/// the kernel can read its input rows and write its output rows in place although both live in
/// the one buffer.
///
/// Taken by [`Arena::view`] after the call's output rows are allocated. The contract that makes
/// the row slices built from it sound (upheld by the interpreter, which alone builds them):
///
/// * the buffer is neither reallocated nor touched through the `Arena` while any slice built
///   from this view lives (the interpreter holds no other access to the arena during the call);
/// * rows read are the rows named by the inputs' handles; rows written are the *fresh* rows
///   allocated for this call ([`Arena::alloc_fresh_many`]), which no variable holds, so no row is
///   both read and written, and each fresh row is handed to exactly one output position.
///
/// Every handle comes from [`Arena::alloc_fresh_many`], so it names a row of the buffer; the bounds
/// check in [`row`](Self::row) and [`row_mut`](Self::row_mut) stays in release builds all
/// the same, because what it guards is an `unsafe` access. It can only fire inside a kernel
/// call, whose panics the interpreter catches and reports as a
/// [`RuntimeError::Kernel`](crate::RuntimeError::Kernel), so even a broken handle is an error
/// value, not an abort.
#[derive(Clone, Copy)]
pub(crate) struct ArenaView {
    base: *mut f64,
    /// Elements in the buffer.
    len: usize,
    width: usize,
}

impl ArenaView {
    /// Elements per row.
    pub(crate) fn width(&self) -> usize {
        self.width
    }

    /// The elements of row `h`.
    ///
    /// # Safety
    /// Row `h` must not be written while the returned slice lives (see [`ArenaView`]).
    #[inline]
    pub(crate) unsafe fn row<'a>(self, h: u32) -> &'a [f64] {
        let start = h as usize * self.width;
        assert!(start + self.width <= self.len, "arena row {h} out of range");
        // SAFETY: in bounds (checked); the caller guarantees no writer during `'a`.
        unsafe { std::slice::from_raw_parts(self.base.add(start), self.width) }
    }

    /// The elements of row `h`, to write.
    ///
    /// # Safety
    /// Row `h` must be a fresh row of this call, and no other slice of it may live while the
    /// returned one does (see [`ArenaView`]).
    #[inline]
    pub(crate) unsafe fn row_mut<'a>(self, h: u32) -> &'a mut [f64] {
        let start = h as usize * self.width;
        assert!(start + self.width <= self.len, "arena row {h} out of range");
        // SAFETY: in bounds (checked); the caller guarantees exclusive access during `'a`.
        unsafe { std::slice::from_raw_parts_mut(self.base.add(start), self.width) }
    }
}

/// Rows of `width` `f64`s with a reference count each.
pub(crate) struct Arena {
    /// `capacity * width` elements, row-major.
    data: Vec<f64>,
    width: usize,
    counts: Vec<u32>,
    free: FreeRows,
    /// The handles [`store_rows`](Self::store_rows) allocates, kept between its calls (one a
    /// batched kernel's vector output) so that it allocates no list of its own each time.
    stored: Vec<u32>,
}

impl Arena {
    /// An arena for rows of `width` elements holding only the zero row.
    pub(crate) fn new(width: usize) -> Arena {
        Arena {
            data: vec![0.0; width],
            width,
            counts: vec![1],
            free: FreeRows::default(),
            stored: Vec::new(),
        }
    }

    /// Elements per row.
    pub(crate) fn width(&self) -> usize {
        self.width
    }

    /// The elements of row `h`.
    pub(crate) fn row(&self, h: u32) -> &[f64] {
        let h = h as usize;
        &self.data[h * self.width..(h + 1) * self.width]
    }

    /// Rows the buffer has room for.
    fn capacity(&self) -> usize {
        self.data
            .len()
            .checked_div(self.width)
            .unwrap_or(usize::MAX)
    }

    /// A new handle (count 1) holding a copy of `value` (exactly `width` elements).
    #[cfg(test)]
    pub(crate) fn alloc(&mut self, value: &[f64]) -> u32 {
        let h = self.alloc_fresh();
        let start = h as usize * self.width;
        self.data[start..start + self.width].copy_from_slice(value);
        h
    }

    /// Room for `rows` rows, keeping the current ones. The new storage is advised onto huge
    /// pages where the system allows: rows are read in random order, and with 4 KiB pages
    /// nearly every row of a large arena is also a TLB miss (measured on 800-byte rows of a
    /// 40 MB buffer, prefetched: 56 -> 37 ns a row).
    ///
    /// The new buffer is allocated zeroed (`calloc`: a large one is fresh pages the system
    /// zeroes as they are first touched, not a pass over every element), so growing costs the
    /// copy of the rows in use, not a write of the whole buffer.
    fn grow(&mut self, rows: usize) {
        let mut data = vec![0.0; rows * self.width];
        crate::prefetch::advise_huge_pages(&mut data);
        data[..self.data.len()].copy_from_slice(&self.data);
        self.data = data;
    }

    /// A new handle (count 1) whose row holds unspecified values: one row at a time, the
    /// reference [`alloc_fresh_many`](Self::alloc_fresh_many) is tested against.
    #[cfg(test)]
    pub(crate) fn alloc_fresh(&mut self) -> u32 {
        let h = match self.free.take_lowest() {
            Some(h) => h,
            None => {
                let h = self.counts.len();
                if h == self.capacity() {
                    self.grow(2 * h);
                }
                self.counts.push(0);
                self.free.cover(h as u32);
                h as u32
            }
        };
        self.counts[h as usize] = 1;
        h
    }

    /// Appends `count` new handles (count 1 each, rows of unspecified values, for a kernel to
    /// fill: no variable holds them until the caller installs them) to `out`: the lowest free
    /// rows, rising, then new rows past every row made so far. These are the handles `count`
    /// one-row allocations would give, in the same order (the tests check it against such a
    /// reference), with the free rows taken word by word from the bitmap instead of one
    /// search each.
    pub(crate) fn alloc_fresh_many(&mut self, count: usize, out: &mut Vec<u32>) {
        let start = out.len();
        self.free.take_lowest_into(count, out);
        for &h in &out[start..] {
            self.counts[h as usize] = 1;
        }
        let first = self.counts.len();
        let need = first + (count - (out.len() - start));
        if need > first {
            // The capacity `alloc_fresh` would reach: doubled each time it is full.
            let mut capacity = self.capacity();
            if need > capacity {
                while capacity < need {
                    capacity *= 2;
                }
                self.grow(capacity);
            }
            self.counts.resize(need, 1);
            self.free.cover(need as u32 - 1);
            out.extend(first as u32..need as u32);
        }
    }

    /// The rows as a raw view for one kernel call (see [`ArenaView`] for the contract).
    pub(crate) fn view(&mut self) -> ArenaView {
        ArenaView {
            base: self.data.as_mut_ptr(),
            len: self.data.len(),
            width: self.width,
        }
    }

    /// One more holder of `h`.
    #[inline(always)]
    pub(crate) fn retain(&mut self, h: u32) {
        if h != ZERO {
            self.counts[h as usize] += 1;
        }
    }

    /// One holder fewer of `h`; the row is reused once nothing holds it.
    #[inline(always)]
    pub(crate) fn release(&mut self, h: u32) {
        if h == ZERO {
            return;
        }
        let c = &mut self.counts[h as usize];
        *c -= 1;
        if *c == 0 {
            self.free.insert(h);
        }
    }

    /// Makes `slot` hold `h`, letting go of what it held. A slot that holds `h` already is
    /// left alone: retaining and releasing the same row would change no count.
    #[inline]
    pub(crate) fn assign(&mut self, slot: &mut u32, h: u32) {
        if *slot != h {
            self.retain(h);
            self.release(std::mem::replace(slot, h));
        }
    }

    /// Makes `slot` take over `h`, whose hold passes with it (no count changes for `h`),
    /// letting go of what `slot` held. Taking over the handle the slot holds already gives
    /// back the surplus hold.
    #[inline]
    pub(crate) fn take_over(&mut self, slot: &mut u32, h: u32) {
        self.release(std::mem::replace(slot, h));
    }

    /// Makes `slot` hold a new row with `value`, releasing what it held.
    #[cfg(test)]
    pub(crate) fn store(&mut self, slot: &mut u32, value: &[f64]) {
        let h = self.alloc(value);
        self.release(*slot);
        *slot = h;
    }

    /// Makes `slots[lanes[k]]` hold a new row with row `k` of `data` (rows of `width`
    /// elements; lanes past its rows are left alone), releasing what each held: the new rows
    /// are allocated together ([`alloc_fresh_many`](Self::alloc_fresh_many)), then filled,
    /// then installed.
    pub(crate) fn store_rows(&mut self, slots: &mut [u32], lanes: &[usize], data: &[f64]) {
        // Zero-length vectors have no rows to store.
        let Some(rows) = data.len().checked_div(self.width) else {
            return;
        };
        let lanes = &lanes[..lanes.len().min(rows)];
        let mut fresh = std::mem::take(&mut self.stored);
        fresh.clear();
        self.alloc_fresh_many(lanes.len(), &mut fresh);
        for (&h, row) in fresh.iter().zip(data.chunks_exact(self.width)) {
            let start = h as usize * self.width;
            self.data[start..start + self.width].copy_from_slice(row);
        }
        for (&lane, &h) in lanes.iter().zip(&fresh) {
            self.take_over(&mut slots[lane], h);
        }
        self.stored = fresh;
    }

    /// A dense `[lanes.len(), width]` column of the rows `handles[lane]` for each of `lanes`,
    /// in `out`'s allocation (an `f64` column of this width; any other is replaced).
    pub(crate) fn gather_into(&self, handles: &[u32], lanes: &[usize], out: Column) -> Column {
        let mut out = match out {
            Column::F64(a) if a.ncols() == self.width => a,
            _ => Array2::zeros((0, self.width)),
        };
        let (mut data, _) = out.into_raw_vec_and_offset();
        data.clear();
        for (k, &lane) in lanes.iter().enumerate() {
            if let Some(&ahead) = lanes.get(k + PREFETCH_AHEAD) {
                prefetch(self.row(handles[ahead]));
            }
            data.extend_from_slice(self.row(handles[lane]));
        }
        // `lanes.len()` rows of `width` elements: the shape always fits.
        out = Array2::from_shape_vec((lanes.len(), self.width), data)
            .unwrap_or_else(|_| Array2::zeros((lanes.len(), self.width)));
        Column::F64(out)
    }

    /// A new dense column of the rows `handles[lane]` for each of `lanes`.
    pub(crate) fn gather(&self, handles: &[u32], lanes: &[usize]) -> Column {
        self.gather_into(handles, lanes, Column::zeros(DType::F64, 0, self.width))
    }

    /// Bytes the arena holds: its row buffer and a count per row.
    pub(crate) fn bytes(&self) -> usize {
        self.data.len() * std::mem::size_of::<f64>() + self.counts.len() * 4
    }

    /// The most rows held at once so far, the zero row included (freed rows are reused
    /// before new ones are made).
    pub(crate) fn peak(&self) -> usize {
        self.counts.len()
    }

    /// Rows in use, the zero row included (for tests of reuse).
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        self.counts.iter().filter(|&&c| c > 0).count()
    }
}

/// The set of free rows, from which the lowest is taken.
mod free {
    /// Free rows as a bitmap (bit `h % 64` of word `h / 64` set when row `h` is free) with a
    /// summary bitmap over it (bit `w % 64` of summary word `w / 64` set when word `w` has a
    /// free row), so the lowest free row is found in a few word scans whatever the arena size.
    #[derive(Default)]
    pub(super) struct FreeRows {
        words: Vec<u64>,
        summary: Vec<u64>,
        /// No summary word below this one has a bit set.
        first: usize,
    }

    impl FreeRows {
        /// Makes room for rows up to `h`, so that [`insert`](Self::insert) of any of them
        /// needs no growth (called as the arena makes each new row).
        pub(super) fn cover(&mut self, h: u32) {
            let w = h as usize / 64;
            if w >= self.words.len() {
                self.words.resize(w + 1, 0);
                self.summary.resize(w / 64 + 1, 0);
            }
        }

        /// Marks row `h` free (it must not be free already, and [`cover`](Self::cover)ed).
        #[inline(always)]
        pub(super) fn insert(&mut self, h: u32) {
            let (w, bit) = (h as usize / 64, h % 64);
            self.words[w] |= 1 << bit;
            self.summary[w / 64] |= 1 << (w % 64);
            self.first = self.first.min(w / 64);
        }

        /// Removes the lowest `count` free rows (all of them, if fewer are free) and appends
        /// them to `out` in rising order.
        pub(super) fn take_lowest_into(&mut self, mut count: usize, out: &mut Vec<u32>) {
            let mut s = self.first;
            while count > 0 && s < self.summary.len() {
                let mut bits = self.summary[s];
                while count > 0 && bits != 0 {
                    let w = s * 64 + bits.trailing_zeros() as usize;
                    let mut word = self.words[w];
                    while count > 0 && word != 0 {
                        out.push((w * 64) as u32 + word.trailing_zeros());
                        word &= word - 1;
                        count -= 1;
                    }
                    self.words[w] = word;
                    if word == 0 {
                        bits &= bits - 1;
                    }
                }
                self.summary[s] = bits;
                if bits == 0 {
                    s += 1;
                }
            }
            // Every summary word below `s` was emptied (or was empty).
            self.first = s;
        }

        /// Removes and returns the lowest free row, if any.
        #[cfg(test)]
        pub(super) fn take_lowest(&mut self) -> Option<u32> {
            let (s, bits) = self
                .summary
                .iter()
                .enumerate()
                .skip(self.first)
                .find(|(_, &bits)| bits != 0)?;
            self.first = s;
            let w = s * 64 + bits.trailing_zeros() as usize;
            let word = &mut self.words[w];
            let bit = word.trailing_zeros();
            *word &= *word - 1;
            if *word == 0 {
                self.summary[s] &= !(1 << (w % 64));
            }
            Some((w * 64) as u32 + bit)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_are_shared_counted_and_reused() {
        let mut a = Arena::new(2);
        let mut x = ZERO;
        a.store(&mut x, &[1.0, 2.0]);
        let mut y = ZERO;
        a.assign(&mut y, x);
        assert_eq!(x, y);
        assert_eq!(a.live(), 2);
        a.store(&mut x, &[3.0, 4.0]);
        assert_eq!(a.row(y), &[1.0, 2.0]);
        assert_eq!(a.row(x), &[3.0, 4.0]);
        let old = y;
        a.assign(&mut y, ZERO);
        assert_eq!(a.live(), 2);
        // The freed row is the next one handed out.
        assert_eq!(a.alloc(&[5.0, 6.0]), old);
        assert_eq!(a.row(ZERO), &[0.0, 0.0]);
    }

    #[test]
    fn new_rows_are_the_lowest_free_ones_in_rising_order() {
        let mut a = Arena::new(1);
        let mut hs = [ZERO; 200];
        for (i, h) in hs.iter_mut().enumerate() {
            a.store(h, &[i as f64]);
        }
        // Free rows scattered over several bitmap words, highest first.
        let freed: Vec<u32> = [150, 3, 64, 199, 70, 5].map(|i| hs[i]).to_vec();
        for &i in &[150, 3, 64, 199, 70, 5] {
            a.assign(&mut hs[i], ZERO);
        }
        let mut want = freed.clone();
        want.sort_unstable();
        let got: Vec<u32> = (0..freed.len()).map(|_| a.alloc_fresh()).collect();
        assert_eq!(got, want);
        // With none free, the next row is a new one past every row made so far.
        assert_eq!(a.alloc_fresh() as usize, a.peak() - 1);
        assert_eq!(a.peak(), 202);
    }

    /// An arena of `rows` one-element rows holding `i` each, with the rows of `free` (indices
    /// into the handles) released again.
    fn arena_with_holes(rows: usize, free: &[usize]) -> (Arena, Vec<u32>) {
        let mut a = Arena::new(1);
        let mut hs = vec![ZERO; rows];
        for (i, h) in hs.iter_mut().enumerate() {
            a.store(h, &[i as f64]);
        }
        for &i in free {
            a.assign(&mut hs[i], ZERO);
        }
        (a, hs)
    }

    /// Bulk allocation gives the handles, counts, capacity and later allocations that one row
    /// at a time gives: free rows in partial and whole bitmap words, across summary words, then
    /// past the end, in counts short of, equal to and beyond what is free.
    #[test]
    fn bulk_allocation_is_one_row_at_a_time_in_one_pass() {
        let free: Vec<usize> = (0..5000)
            .filter(|i| (i * 7919) % 13 < 4 || (1000..1200).contains(i))
            .collect();
        for count in [
            0,
            1,
            3,
            64,
            200,
            free.len() - 1,
            free.len(),
            free.len() + 1,
            9000,
        ] {
            let (mut one, _) = arena_with_holes(5000, &free);
            let (mut many, _) = arena_with_holes(5000, &free);
            let want: Vec<u32> = (0..count).map(|_| one.alloc_fresh()).collect();
            let mut got = vec![7];
            many.alloc_fresh_many(count, &mut got);
            assert_eq!(&got[1..], &want[..], "count {count}");
            assert_eq!(many.counts, one.counts, "count {count}");
            assert_eq!(many.data.len(), one.data.len(), "count {count}");
            assert_eq!(many.live(), one.live());
            // Later allocations agree too (the bitmap and its summary were left alike).
            let next: Vec<u32> = (0..300).map(|_| one.alloc_fresh()).collect();
            let mut got = Vec::new();
            many.alloc_fresh_many(300, &mut got);
            assert_eq!(got, next, "after {count}");
        }
    }

    /// Storing rows in bulk leaves each lane the value and the row counts that storing them
    /// one by one leaves; lanes past the data's rows keep what they held.
    #[test]
    fn bulk_store_keeps_every_lane_s_value() {
        let (mut a, mut hs) = arena_with_holes(300, &[3, 4, 70, 150]);
        let (mut b, mut hs_b) = arena_with_holes(300, &[3, 4, 70, 150]);
        let lanes = [9, 0, 299, 150, 64, 65, 5];
        let data: Vec<f64> = (0..6).map(|k| 1000.0 + k as f64).collect();
        a.store_rows(&mut hs, &lanes, &data);
        for (&lane, &x) in lanes.iter().zip(&data) {
            b.store(&mut hs_b[lane], &[x]);
        }
        let values = |a: &Arena, hs: &[u32]| hs.iter().map(|&h| a.row(h)[0]).collect::<Vec<_>>();
        assert_eq!(values(&a, &hs), values(&b, &hs_b));
        assert_eq!(values(&a, &hs)[5], 5.0, "lane 5 is past the data's rows");
        assert_eq!(a.live(), b.live());
        // A second, shorter store (the arena's list of new handles is reused): the same again.
        let (lanes, data) = ([7, 9], [2000.0, 2001.0]);
        a.store_rows(&mut hs, &lanes, &data);
        for (&lane, &x) in lanes.iter().zip(&data) {
            b.store(&mut hs_b[lane], &[x]);
        }
        assert_eq!(values(&a, &hs), values(&b, &hs_b));
        assert_eq!(a.live(), b.live());
        // Zero-length rows: nothing to store.
        let mut z = Arena::new(0);
        let mut slots = [ZERO; 2];
        z.store_rows(&mut slots, &[0, 1], &[]);
        assert_eq!((slots, z.live()), ([ZERO; 2], 1));
    }

    #[test]
    fn self_assignment_keeps_the_row() {
        let mut a = Arena::new(1);
        let mut x = ZERO;
        a.store(&mut x, &[7.0]);
        let h = x;
        a.assign(&mut x, h);
        assert_eq!(a.row(x), &[7.0]);
        assert_eq!(a.live(), 2);
    }

    #[test]
    fn gather_reads_rows_by_lane() {
        let mut a = Arena::new(2);
        let mut hs = [ZERO; 3];
        a.store(&mut hs[0], &[1.0, 1.5]);
        a.store(&mut hs[2], &[3.0, 3.5]);
        let g = a.gather(&hs, &[2, 1, 0]);
        assert_eq!(
            g.as_slice::<f64>().unwrap(),
            &[3.0, 3.5, 0.0, 0.0, 1.0, 1.5]
        );
    }
}

//! Row copies between dense columns by lane list (scatter, gather, same lane, push, pop) and
//! lane-list splits by condition: one
//! typed loop per pattern for scalar leaves, the interpreters' commonest work per lane-op, and
//! `Column::copy_rows` for everything else.

use crate::column::{Column, Element};
use crate::random::Key;

/// Which row of the source each written row of the destination takes.
#[derive(Clone, Copy)]
pub(crate) enum Rows<'a> {
    /// Row `lanes[k]` takes source row `k`.
    Scatter(&'a [usize]),
    /// Row `k` takes source row `lanes[k]`.
    Gather(&'a [usize]),
    /// Row `l` takes source row `l`, for each `l` in the list.
    Same(&'a [usize]),
    /// Saved row `(depth[l] - 1) * batch + l` takes current row `l` (a push: the depth
    /// already counts the frame it fills).
    Push(Stacked<'a>),
    /// Current row `l` takes saved row `depth[l] * batch + l` (a pop: the depth no longer
    /// counts the frame it empties).
    Pop(Stacked<'a>),
}

/// The lanes of a push or pop, with each lane's depth and the batch (saved frames are
/// stack-major: `row = depth * batch + lane`).
#[derive(Clone, Copy)]
pub(crate) struct Stacked<'a> {
    pub(crate) lanes: &'a [usize],
    pub(crate) depth: &'a [u32],
    pub(crate) batch: usize,
}

impl Stacked<'_> {
    /// The saved row of `lane` at its depth.
    #[inline]
    pub(crate) fn at(&self, lane: usize) -> usize {
        self.depth[lane] as usize * self.batch + lane
    }

    /// The saved row of `lane` just below its depth (the frame a push has counted).
    #[inline]
    pub(crate) fn below(&self, lane: usize) -> usize {
        (self.depth[lane] as usize - 1) * self.batch + lane
    }
}

/// Copies rows of `src` into `dst` as `rows` says. Returns `false`, copying nothing, if the
/// dtypes or widths differ.
pub(crate) fn copy(dst: &mut Column, src: &Column, rows: Rows<'_>) -> bool {
    if dst.dtype() != src.dtype() || dst.width() != src.width() {
        return false;
    }
    if dst.width() == 1
        && (typed::<i64>(dst, src, rows)
            || typed::<f64>(dst, src, rows)
            || typed::<bool>(dst, src, rows)
            || typed::<i32>(dst, src, rows)
            || typed::<f32>(dst, src, rows)
            || typed::<Key>(dst, src, rows))
    {
        return true;
    }
    match rows {
        Rows::Scatter(lanes) => dst.copy_rows(src, lanes.iter().copied().zip(0..)),
        Rows::Gather(lanes) => dst.copy_rows(src, lanes.iter().copied().enumerate()),
        Rows::Same(lanes) => dst.copy_rows(src, lanes.iter().map(|&l| (l, l))),
        Rows::Push(s) => dst.copy_rows(src, s.lanes.iter().map(|&l| (s.below(l), l))),
        Rows::Pop(s) => dst.copy_rows(src, s.lanes.iter().map(|&l| (l, s.at(l)))),
    }
}

/// Rows `lanes` of `src`, in order, as a new column: scalar leaves are collected straight
/// from the lanes' rows (no zero-filled allocation to overwrite, the stackless interpreter's
/// commonest allocation: a snapshot around every call), others zero-filled then copied.
pub(crate) fn gathered(src: &Column, lanes: &[usize]) -> Column {
    if src.width() == 1 {
        let typed = collected::<i64>(src, lanes)
            .or_else(|| collected::<f64>(src, lanes))
            .or_else(|| collected::<bool>(src, lanes))
            .or_else(|| collected::<i32>(src, lanes))
            .or_else(|| collected::<f32>(src, lanes))
            .or_else(|| collected::<Key>(src, lanes));
        if let Some(column) = typed {
            return column;
        }
    }
    let mut out = Column::zeros(src.dtype(), lanes.len(), src.width());
    copy(&mut out, src, Rows::Gather(lanes));
    out
}

/// [`gathered`] for a width-1 column of `T`; `None` if it holds another type.
fn collected<T: Element>(src: &Column, lanes: &[usize]) -> Option<Column> {
    let s = src.as_slice::<T>()?;
    let mut values: Vec<T> = Vec::with_capacity(lanes.len());
    let out = values.spare_capacity_mut();
    // SAFETY: `each_lane_below` passes lanes below `s.len()` and positions below
    // `lanes.len()`, within the capacity reserved.
    each_lane_below(lanes, s.len(), |k, l| unsafe {
        out.get_unchecked_mut(k).write(*s.get_unchecked(l));
    });
    // SAFETY: every position below `lanes.len()` was written just now.
    unsafe { values.set_len(lanes.len()) };
    let array = ndarray::Array2::from_shape_vec((lanes.len(), 1), values).ok()?;
    Some(T::column(array))
}

/// The panic of a lane past the rows of a copy (a lane list the storage did not make).
#[cold]
#[inline(never)]
fn lane_out_of_range(lane: usize, rows: usize) -> ! {
    panic!("lane {lane} out of {rows} rows")
}

/// Calls `each(k, lanes[k])` for every position `k`, in order, once it has checked that the
/// lanes are below `rows` (a lane at or past it panics), four lanes at a time: so `each`
/// may index rows by lane, and positions below `lanes.len()`, without checks of its own.
#[inline(always)]
pub(crate) fn each_lane_below(lanes: &[usize], rows: usize, mut each: impl FnMut(usize, usize)) {
    let mut chunks = lanes.chunks_exact(4);
    let mut k = 0;
    for c in &mut chunks {
        // No lane exceeds the four ORed together: when that is below `rows`, so are they
        // (else the largest decides).
        if c[0] | c[1] | c[2] | c[3] >= rows {
            let top = c[0].max(c[1]).max(c[2].max(c[3]));
            if top >= rows {
                lane_out_of_range(top, rows);
            }
        }
        each(k, c[0]);
        each(k + 1, c[1]);
        each(k + 2, c[2]);
        each(k + 3, c[3]);
        k += 4;
    }
    for &l in chunks.remainder() {
        if l >= rows {
            lane_out_of_range(l, rows);
        }
        each(k, l);
        k += 1;
    }
}

/// Lanes [`split_below`] splits without a branch before it chooses how to split the rest.
const SPLIT_PROBE: usize = 16;

/// Splits `lanes` (in order) into those for which `holds(k, lanes[k])` is true, written to
/// `yes`, and the others, written to `no`, both in order, replacing what they held; lanes are
/// checked below `rows` as [`each_lane_below`] checks them, so `holds` may index rows by lane
/// without checks of its own.
///
/// The first [`SPLIT_PROBE`] lanes are split without a branch (each lane written to both
/// lists, only the count of its side advancing). Where they all went one way, the rest are
/// split with a branch, one store a lane: lanes that run together mostly go one way (a loop's
/// condition, a recursion's base case), and a predicted branch costs less than the second
/// store. Where they parted, the rest are split without a branch, so conditions that vary
/// from lane to lane at random (a sampler's coin flips) cost no mispredictions.
#[inline(always)]
pub(crate) fn split_below(
    lanes: &[usize],
    rows: usize,
    (yes, no): (&mut Vec<usize>, &mut Vec<usize>),
    mut holds: impl FnMut(usize, usize) -> bool,
) {
    let n = lanes.len();
    yes.clear();
    no.clear();
    yes.reserve(n);
    no.reserve(n);
    let (yes_at, no_at) = (yes.as_mut_ptr(), no.as_mut_ptr());
    // Lanes before position `k` that went to `yes`; the other `k - t` went to `no`.
    let mut t = 0;
    // Both loops inline `holds` (a kernel's whole body, for a branch condition split as
    // computed) at each of `each_lane_below`'s unrolled calls: a call per lane costs more than
    // most bodies.
    // In every loop, `t` and `k - t` count the lanes before position `k` that went each way
    // (`t <= k`), so both are below `n`, within the capacity reserved for each list.
    let probe = n.min(SPLIT_PROBE);
    each_lane_below(&lanes[..probe], rows, |k, lane| {
        let c = holds(k, lane);
        // SAFETY: see above.
        unsafe { write_both((yes_at, no_at), &mut t, k, (lane, c)) };
    });
    let rest = &lanes[probe..];
    if t == 0 || t == probe {
        each_lane_below(rest, rows, |k, lane| {
            let k = probe + k;
            // SAFETY: see above.
            unsafe {
                if holds(k, lane) {
                    yes_at.add(t).write(lane);
                    t += 1;
                } else {
                    no_at.add(k - t).write(lane);
                }
            }
        });
    } else {
        each_lane_below(rest, rows, |k, lane| {
            let (k, c) = (probe + k, holds(probe + k, lane));
            // SAFETY: see above.
            unsafe { write_both((yes_at, no_at), &mut t, k, (lane, c)) };
        });
    }
    // SAFETY: the loops wrote the first `t` and `n - t` elements of the lists' capacities.
    unsafe {
        yes.set_len(t);
        no.set_len(n - t);
    }
}

/// [`split_below`]'s branch-free step: `lane`, at position `k`, written to both lists, and
/// `t` (the lanes before it that went to `yes`) advanced if `c` sends it there.
///
/// # Safety
/// `t` and `k - t` must be below the capacity of the lists `yes_at` and `no_at` point to.
#[inline(always)]
unsafe fn write_both(
    (yes_at, no_at): (*mut usize, *mut usize),
    t: &mut usize,
    k: usize,
    (lane, c): (usize, bool),
) {
    // SAFETY: both positions are within the lists' capacities (the caller's contract).
    unsafe {
        yes_at.add(*t).write(lane);
        no_at.add(k - *t).write(lane);
    }
    *t += usize::from(c);
}

/// The typed loop of [`copy`] for width-1 columns of `T`; `false` if they hold another type.
#[inline]
fn typed<T: Element>(dst: &mut Column, src: &Column, rows: Rows<'_>) -> bool {
    let (Some(d), Some(s)) = (dst.as_slice_mut::<T>(), src.as_slice::<T>()) else {
        return false;
    };
    match rows {
        Rows::Scatter(lanes) => {
            let s = &s[..lanes.len()];
            // SAFETY: `each_lane_below` passes lanes below `d.len()` and positions below
            // `lanes.len()`, the length of `s`.
            each_lane_below(lanes, d.len(), |k, l| unsafe {
                *d.get_unchecked_mut(l) = *s.get_unchecked(k);
            });
        }
        Rows::Gather(lanes) => {
            let d = &mut d[..lanes.len()];
            // SAFETY: as for a scatter, the other way round.
            each_lane_below(lanes, s.len(), |k, l| unsafe {
                *d.get_unchecked_mut(k) = *s.get_unchecked(l);
            });
        }
        Rows::Same(lanes) => {
            // One check per four lanes, against both columns at once.
            let n = s.len().min(d.len());
            // SAFETY: `each_lane_below` passes lanes below `n`, within both columns.
            each_lane_below(lanes, n, |_, l| unsafe {
                *d.get_unchecked_mut(l) = *s.get_unchecked(l);
            });
        }
        Rows::Push(st) => st.lanes.iter().for_each(|&l| d[st.below(l)] = s[l]),
        Rows::Pop(st) => st.lanes.iter().for_each(|&l| d[l] = s[st.at(l)]),
    }
    true
}

/// `$f::<T>(args)` for the element types scalar variables take most, the first that applies
/// (`None` if none does: other types go the general way, a push and a copy).
macro_rules! first_typed {
    ($f:ident($($arg:expr),* $(,)?)) => {
        None.or_else(|| $f::<i64>($($arg),*))
            .or_else(|| $f::<f64>($($arg),*))
            .or_else(|| $f::<i32>($($arg),*))
            .or_else(|| $f::<bool>($($arg),*))
    };
}

/// A push of current rows into saved frames fused with the count of the frame and, given
/// `src`, the copy that overwrites them (`v = from` on a stacked `v`): for each lane in turn,
/// its depth goes up by one, its current row of `rows` is saved at the frame the new depth
/// counts, and `src`'s row of the lane (if given) takes its place, in one pass. It stops before
/// the first lane whose new depth would pass `cap` (the frames the saved rows hold, or the
/// depth limit) and returns how many lanes it did; `None`, doing nothing, unless the columns
/// are width-1 columns of one type.
pub(crate) fn push_copy(
    rows: &mut Column,
    saved: &mut Column,
    src: Option<&Column>,
    stacked: (&[usize], &mut [u32], usize),
    cap: u32,
) -> Option<usize> {
    let fits = |c: &Column| c.width() == 1 && c.dtype() == rows.dtype();
    if rows.width() != 1 || !src.is_none_or(fits) {
        return None;
    }
    first_typed!(push_copy_typed(
        rows,
        saved,
        src,
        (stacked.0, &mut *stacked.1, stacked.2),
        cap
    ))
}

/// [`push_copy`] for columns of `T`; `None` if they hold another type.
#[inline]
fn push_copy_typed<T: Element>(
    rows: &mut Column,
    saved: &mut Column,
    src: Option<&Column>,
    (lanes, depth, batch): (&[usize], &mut [u32], usize),
    cap: u32,
) -> Option<usize> {
    let s = match src {
        Some(src) => Some(src.as_slice::<T>()?),
        None => None,
    };
    let saved = saved.as_slice_mut::<T>()?;
    let d = rows.as_slice_mut::<T>()?;
    // One bounds check per lane against the per-lane slices at once.
    let n = d
        .len()
        .min(depth.len())
        .min(s.map_or(usize::MAX, <[T]>::len));
    let (s, d, depth) = (s.map(|s| &s[..n]), &mut d[..n], &mut depth[..n]);
    for (k, &l) in lanes.iter().enumerate() {
        if l >= n {
            lane_out_of_range(l, n);
        }
        let at = depth[l];
        if at >= cap {
            return Some(k);
        }
        depth[l] = at + 1;
        saved[at as usize * batch + l] = d[l];
        if let Some(s) = s {
            d[l] = s[l];
        }
    }
    Some(lanes.len())
}

/// A pop fused with the count of the frame it empties: for each lane in turn, its depth goes
/// down by one and its current row of `rows` takes its saved row at that depth, in one pass.
/// `Some(Err(lane))` at the first lane with no saved frame (the lanes before it are popped);
/// `None`, doing nothing, unless both are width-1 columns of one type.
pub(crate) fn pop_counted(
    rows: &mut Column,
    saved: &Column,
    (lanes, depth, batch): (&[usize], &mut [u32], usize),
) -> Option<Result<(), usize>> {
    if rows.width() != 1 || rows.dtype() != saved.dtype() || saved.width() != 1 {
        return None;
    }
    first_typed!(pop_counted_typed(rows, saved, (lanes, &mut *depth, batch)))
}

/// [`pop_counted`] for columns of `T`; `None` if they hold another type.
#[inline]
fn pop_counted_typed<T: Element>(
    rows: &mut Column,
    saved: &Column,
    (lanes, depth, batch): (&[usize], &mut [u32], usize),
) -> Option<Result<(), usize>> {
    let s = saved.as_slice::<T>()?;
    let d = rows.as_slice_mut::<T>()?;
    // One bounds check per lane against both per-lane slices at once.
    let n = d.len().min(depth.len());
    let (d, depth) = (&mut d[..n], &mut depth[..n]);
    for &l in lanes {
        if l >= n {
            lane_out_of_range(l, n);
        }
        let Some(at) = depth[l].checked_sub(1) else {
            return Some(Err(l));
        };
        depth[l] = at;
        d[l] = s[at as usize * batch + l];
    }
    Some(Ok(()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use autobatch_ir::DType;

    /// Every lane is visited once, in order, with its position, whether or not the lanes ORed
    /// together pass the row count; a lane past the rows panics, in a chunk or in the rest.
    #[test]
    fn each_lane_below_visits_in_order_and_refuses_lanes_past_the_rows() {
        for lanes in [vec![4, 1, 2, 3, 0, 4], vec![0, 1, 2, 3], vec![3], vec![]] {
            let mut seen = Vec::new();
            each_lane_below(&lanes, 5, |k, l| seen.push((k, l)));
            let expected: Vec<(usize, usize)> = lanes.iter().copied().enumerate().collect();
            assert_eq!(seen, expected);
        }
        for lanes in [
            vec![0, 0, 0, 5],
            vec![1, 2, 3, 4, 5],
            vec![4, 4, 4, 4, 0, 9],
        ] {
            let caught = std::panic::catch_unwind(|| each_lane_below(&lanes, 5, |_, _| {}));
            assert!(caught.is_err(), "{lanes:?}");
        }
    }

    /// Both ways of splitting the lanes after the probe (with a branch where the probed lanes
    /// all went one way, without one where they parted) give the stable partition, each lane
    /// with its own position, whatever the lengths; the lists' old contents are replaced.
    #[test]
    fn split_below_partitions_in_order_whichever_way_it_splits_the_rest() {
        /// A named condition on a lane's position.
        type Pattern = (&'static str, fn(usize) -> bool);
        let patterns: [Pattern; 5] = [
            ("all yes", |_| true),
            ("all no", |_| false),
            ("probe yes, then mixed", |k| k < SPLIT_PROBE || k % 3 == 0),
            ("probe no, then mixed", |k| k >= SPLIT_PROBE && k % 2 == 1),
            ("mixed throughout", |k| (k * 7) % 5 < 2),
        ];
        for (name, holds) in patterns {
            for n in [
                0,
                1,
                SPLIT_PROBE - 1,
                SPLIT_PROBE,
                SPLIT_PROBE + 1,
                3 * SPLIT_PROBE + 5,
            ] {
                let lanes: Vec<usize> = (0..n).map(|k| 2 * k + 1).collect();
                let (mut yes, mut no) = (vec![99; 3], vec![99]);
                let mut seen = Vec::new();
                split_below(&lanes, 2 * n + 1, (&mut yes, &mut no), |k, lane| {
                    seen.push((k, lane));
                    holds(k)
                });
                let positions: Vec<(usize, usize)> = lanes.iter().copied().enumerate().collect();
                assert_eq!(seen, positions, "{name}, {n} lanes");
                let (want_yes, want_no): (Vec<usize>, Vec<usize>) =
                    lanes.iter().partition(|&&lane| holds((lane - 1) / 2));
                assert_eq!((yes, no), (want_yes, want_no), "{name}, {n} lanes");
            }
        }
    }

    /// Every pattern moves the same rows through the typed loop (scalars) and the general one
    /// (vector rows), and refuses columns that do not match.
    #[test]
    fn patterns_agree_for_scalar_and_vector_rows() {
        for width in [1, 2] {
            let values: Vec<f64> = (0..4 * width).map(|i| i as f64).collect();
            let src = Column::from_view2(
                ndarray::Array2::from_shape_vec((4, width), values)
                    .unwrap()
                    .view(),
            );
            let row = |c: &Column, r: usize| c.as_slice::<f64>().unwrap()[r * width];
            let w = width as f64;
            let mut d = Column::zeros(DType::F64, 4, width);
            assert!(copy(&mut d, &src, Rows::Scatter(&[3, 0])));
            assert_eq!((row(&d, 3), row(&d, 0)), (0.0, w));
            let mut g = Column::zeros(DType::F64, 2, width);
            assert!(copy(&mut g, &src, Rows::Gather(&[2, 1])));
            assert_eq!((row(&g, 0), row(&g, 1)), (2.0 * w, w));
            let collected = gathered(&src, &[2, 1]);
            assert_eq!(collected.as_slice::<f64>(), g.as_slice::<f64>());
            assert_eq!((collected.rows(), collected.width()), (2, width));
            let mut s = Column::zeros(DType::F64, 4, width);
            assert!(copy(&mut s, &src, Rows::Same(&[1])));
            assert_eq!((row(&s, 1), row(&s, 2)), (w, 0.0));
            // Lanes 1 and 2 at depths 1 and 0: a push fills (and already counts) the frame
            // a pop then empties (and no longer counts).
            let (pushed, popped) = ([0u32, 2, 1, 0], [0u32, 1, 0, 0]);
            let stacked = |depth| Stacked {
                lanes: &[1, 2],
                depth,
                batch: 4,
            };
            let mut saved = Column::zeros(DType::F64, 8, width);
            assert!(copy(&mut saved, &src, Rows::Push(stacked(&pushed))));
            assert_eq!((row(&saved, 5), row(&saved, 2)), (w, 2.0 * w));
            let mut back = Column::zeros(DType::F64, 4, width);
            assert!(copy(&mut back, &saved, Rows::Pop(stacked(&popped))));
            assert_eq!((row(&back, 1), row(&back, 2)), (w, 2.0 * w));
            let mut other = Column::zeros(DType::I64, 4, width);
            assert!(!copy(&mut other, &src, Rows::Same(&[0])));
        }
    }
}

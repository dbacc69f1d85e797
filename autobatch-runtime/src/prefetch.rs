//! Software prefetch of rows that a loop over lanes is about to read, and huge pages for the
//! storage those rows live in.
//!
//! Vector rows of different lanes lie scattered over the arena (tens of megabytes for
//! thousands of lanes), so a loop that reads one row per lane waits on memory at every row.
//! Asking for the rows of a lane a few positions ahead lets the memory system fetch them while
//! the current lane computes (measured on a 40 MB arena of 800-byte rows: 128 -> 61 ns a row).
//! A long row is asked for one line in four: the hardware's own prefetchers fetch the lines
//! between once a row's walk begins, and a prefetch instruction per line cost the NUTS
//! sampler's vector kernels about a tenth of their time (seven rows a lane in its U-turn
//! check: 91 prefetches, each in a loop step of its own).

/// Lanes ahead of the current one whose rows a lane loop prefetches.
pub const PREFETCH_AHEAD: usize = 2;

/// Bytes in a cache line.
#[cfg(any(target_arch = "x86_64", test))]
const LINE: usize = 64;

/// The longest walk (from the start of a slice's first line to its end) of which
/// [`prefetch`] asks for every line; of a longer one it asks for the first of every
/// [`SPARSE_STEP`] bytes.
#[cfg(any(target_arch = "x86_64", test))]
const DENSE_UP_TO: usize = 4 * LINE;

/// Bytes between the lines [`prefetch`] asks for in a walk longer than [`DENSE_UP_TO`].
#[cfg(any(target_arch = "x86_64", test))]
const SPARSE_STEP: usize = 4 * LINE;

/// Calls `line` with each offset, from the start of a slice's first cache line, that
/// [`prefetch`] asks for in a walk of `end` bytes: `0, step, 2 * step, ..` below `end`, the
/// step a line up to [`DENSE_UP_TO`] bytes, else [`SPARSE_STEP`].
#[cfg(any(target_arch = "x86_64", test))]
#[inline(always)]
fn each_line_asked(end: usize, mut line: impl FnMut(usize)) {
    let step = if end > DENSE_UP_TO { SPARSE_STEP } else { LINE };
    let mut offset = 0;
    while offset < end {
        line(offset);
        offset += step;
    }
}

/// Asks the memory system to bring `data` into the cache: every cache line of a slice within
/// four lines, else the first line of every four (the hardware prefetchers fetch the lines
/// between as the slice is read: see the module docs); a hint that never faults and changes
/// no value.
///
/// The walk starts at the line holding `data`'s first byte, so a slice that does not start on
/// a line boundary (an 800-byte row starts anywhere in its first line) has its last lines
/// asked for too.
#[inline(always)]
pub fn prefetch<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let start = data.as_ptr().cast::<i8>();
        let skew = start as usize % LINE;
        let first = start.wrapping_sub(skew);
        let end = skew + std::mem::size_of_val(data);
        each_line_asked(end, |offset| {
            // SAFETY: a prefetch is only a hint: it does not read memory architecturally and
            // cannot fault, and the address lies in a cache line `data` occupies anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(first.wrapping_add(offset)) };
        });
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = data;
}

/// Asks the operating system to back `region` with huge pages (Linux transparent huge pages in
/// `madvise` mode; elsewhere, or where refused, nothing happens). Call it before the memory is
/// first written (a fresh zeroed allocation, whose pages are not touched yet): pages already
/// touched keep their size.
pub(crate) fn advise_huge_pages<T>(region: &mut [T]) {
    #[cfg(target_os = "linux")]
    {
        const PAGE: usize = 4096;
        const HUGE: usize = 2 << 20;
        let bytes = std::mem::size_of_val(region);
        let start = region.as_mut_ptr() as usize;
        let aligned = start.next_multiple_of(PAGE);
        let len = (start + bytes).saturating_sub(aligned) / PAGE * PAGE;
        if len >= HUGE {
            // SAFETY: `madvise` only advises how to back memory this process owns (the whole
            // range lies inside `region`, page-aligned as the call requires); MADV_HUGEPAGE
            // changes no contents, and a refusal is harmless, so the result is ignored.
            unsafe {
                libc::madvise(aligned as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = region;
}

#[cfg(test)]
mod tests {
    use super::{each_line_asked, prefetch, DENSE_UP_TO, LINE};

    /// The lines a walk of `end` bytes asks for, as offsets from its first line.
    fn asked(end: usize) -> Vec<usize> {
        let mut lines = Vec::new();
        each_line_asked(end, |offset| lines.push(offset));
        lines
    }

    #[test]
    fn short_slices_get_every_line_and_long_ones_a_line_in_four() {
        // Within four lines (an unaligned 200-byte row among them): every line.
        assert_eq!(asked(1), vec![0]);
        assert_eq!(asked(40 + 200), vec![0, 64, 128, 192]);
        assert_eq!(asked(DENSE_UP_TO), vec![0, 64, 128, 192]);
        // Longer (an 800-byte row, aligned or not): the first of every four lines, so no line
        // of the slice lies more than three lines past one asked for.
        assert_eq!(asked(800), vec![0, 256, 512, 768]);
        for end in DENSE_UP_TO + 1..4096 {
            let lines = asked(end);
            let last_line = (end - 1) / LINE * LINE;
            assert_eq!(lines[0], 0);
            assert!(last_line - lines[lines.len() - 1] < 4 * LINE, "{end}");
        }
    }

    #[test]
    fn prefetching_any_slice_is_harmless() {
        let data: Vec<f64> = (0..1000).map(f64::from).collect();
        for len in [0, 1, 7, 8, 25, 100, 1000] {
            for start in [0, 1, 3] {
                prefetch(&data[start..(start + len).min(data.len())]);
            }
        }
        prefetch::<u8>(&[]);
        assert_eq!(data[999], 999.0);
    }
}

//! Software prefetch of rows that a loop over lanes is about to read, and huge pages for the
//! storage those rows live in.
//!
//! Vector rows of different lanes lie scattered over the arena (tens of megabytes for
//! thousands of lanes), so a loop that reads one row per lane waits on memory at every row.
//! Asking for the rows of a lane a few positions ahead lets the memory system fetch them while
//! the current lane computes (measured on a 40 MB arena of 800-byte rows: 128 -> 61 ns a row).

/// Lanes ahead of the current one whose rows a lane loop prefetches.
pub const PREFETCH_AHEAD: usize = 2;

/// Asks the memory system to bring every cache line of `data` into the cache; a hint that
/// never faults and changes no value.
///
/// The walk starts at the line holding `data`'s first byte, so a slice that does not start on
/// a line boundary (an 800-byte row starts anywhere in its first line) has its last line
/// fetched too.
#[inline(always)]
pub fn prefetch<T>(data: &[T]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        const LINE: usize = 64;
        let start = data.as_ptr().cast::<i8>();
        let skew = start as usize % LINE;
        let first = start.wrapping_sub(skew);
        let end = skew + std::mem::size_of_val(data);
        let mut offset = 0;
        while offset < end {
            // SAFETY: a prefetch is only a hint: it does not read memory architecturally and
            // cannot fault, and the address lies in a cache line `data` occupies anyway.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(first.wrapping_add(offset)) };
            offset += LINE;
        }
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

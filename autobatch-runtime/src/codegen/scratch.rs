//! `Scratch`: per-thread pooled working memory for compiled vector kernels.

use std::cell::RefCell;

thread_local! {
    /// Buffers of finished [`Scratch`]es, for the next ones on this thread.
    static SCRATCH: RefCell<Vec<Vec<f64>>> = const { RefCell::new(Vec::new()) };
}

/// Working memory of one kernel call (a compiled vector kernel's scratch rows), taken from a
/// per-thread pool and given back when dropped, so a kernel call does not allocate.
pub struct Scratch(Vec<f64>);

impl Scratch {
    /// At least `len` elements (their values are unspecified: write before reading).
    pub fn new(len: usize) -> Scratch {
        let mut v = SCRATCH
            .with(|pool| pool.borrow_mut().pop())
            .unwrap_or_default();
        if v.len() < len {
            v.resize(len, 0.0);
        }
        Scratch(v)
    }
}

impl std::ops::Deref for Scratch {
    type Target = [f64];
    fn deref(&self) -> &[f64] {
        &self.0
    }
}

impl std::ops::DerefMut for Scratch {
    fn deref_mut(&mut self) -> &mut [f64] {
        &mut self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let v = std::mem::take(&mut self.0);
        SCRATCH.with(|pool| pool.borrow_mut().push(v));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scratch_buffers_are_reused_and_large_enough() {
        let first = {
            let mut s = Scratch::new(8);
            s[7] = 1.0;
            s.as_ptr()
        };
        let again = Scratch::new(4);
        assert!(again.len() >= 4);
        assert_eq!(
            again.as_ptr(),
            first,
            "the pooled buffer is handed out again"
        );
        let nested = Scratch::new(16);
        assert_ne!(
            nested.as_ptr(),
            again.as_ptr(),
            "two live scratches never share memory"
        );
        assert!(nested.len() >= 16);
    }
}

//! Kernel panics caught without printing: the panic hook is process-wide, so it is wrapped once
//! and stays silent only for a panic raised inside a kernel call on the panicking thread.
//!
//! Swapping the hook around each kernel call would race with other threads (one thread's
//! restore could undo another's swap, or silence an unrelated panic elsewhere). Instead one
//! hook, installed the first time a kernel runs, asks a thread-local flag set for the length
//! of the call, and hands every other panic to the hook that was installed before it.

use std::cell::Cell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

thread_local! {
    /// Whether this thread is inside a kernel call whose panic the runtime catches.
    static IN_KERNEL: Cell<bool> = const { Cell::new(false) };
}

static INSTALL: Once = Once::new();

/// Wraps the current panic hook once: panics inside [`catch_quietly`] on their own thread
/// print nothing, all others go to the previous hook.
fn install() {
    INSTALL.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if !IN_KERNEL.with(Cell::get) {
                previous(info);
            }
        }));
    });
}

/// Runs kernel call `f`, catching a panic without printing it (the runtime reports it as a
/// typed error with its lane instead).
pub(crate) fn catch_quietly<R>(f: impl FnOnce() -> R) -> std::thread::Result<R> {
    install();
    let outer = IN_KERNEL.with(|flag| flag.replace(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    IN_KERNEL.with(|flag| flag.set(outer));
    result
}

#[cfg(test)]
mod tests {
    use super::catch_quietly;

    #[test]
    fn a_caught_panic_keeps_its_payload_and_clears_the_flag() {
        let r = catch_quietly(|| -> i32 { panic!("boom") });
        let payload = r.unwrap_err();
        assert_eq!(payload.downcast_ref::<&str>(), Some(&"boom"));
        assert!(!super::IN_KERNEL.with(std::cell::Cell::get));
        assert_eq!(catch_quietly(|| 7).unwrap(), 7);
    }
}

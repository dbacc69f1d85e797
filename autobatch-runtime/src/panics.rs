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
#[inline]
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
    let _quiet = Quiet::enter();
    catch_unwind(AssertUnwindSafe(f))
}

/// While it lives, a panic on this thread prints nothing (the runtime catches it further up and
/// reports it as a typed error); dropped, also as a panic unwinds past it, the thread's flag is
/// as it was. For code that is not worth a [`catch_unwind`] of its own: a compiled block's lane
/// loop, whose state a catch would keep in memory, where one catch around the whole run does.
pub(crate) struct Quiet {
    outer: bool,
}

impl Quiet {
    /// Silences this thread's panics until the guard is dropped.
    #[inline(always)]
    pub(crate) fn enter() -> Quiet {
        install();
        Quiet {
            outer: IN_KERNEL.with(|flag| flag.replace(true)),
        }
    }
}

impl Drop for Quiet {
    #[inline(always)]
    fn drop(&mut self) {
        IN_KERNEL.with(|flag| flag.set(self.outer));
    }
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

    #[test]
    fn a_quiet_guard_restores_the_flag_as_a_panic_unwinds_past_it() {
        let r = std::panic::catch_unwind(|| {
            let _quiet = super::Quiet::enter();
            assert!(super::IN_KERNEL.with(std::cell::Cell::get));
            panic!("quiet")
        });
        assert!(r.is_err());
        assert!(!super::IN_KERNEL.with(std::cell::Cell::get));
    }
}

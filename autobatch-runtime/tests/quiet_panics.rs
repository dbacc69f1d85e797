//! A kernel panic the runtime catches reaches no panic hook (nothing is printed), while every
//! other panic still reaches the hook installed before. Its own test binary: the hook is
//! process-wide.

use autobatch_runtime::ndarray::Array1;
use autobatch_runtime::{autobatch, Config, Mode, RuntimeError};
use std::sync::atomic::{AtomicUsize, Ordering};

static HOOK_CALLS: AtomicUsize = AtomicUsize::new(0);

#[autobatch]
fn divide(a: i64, b: i64) -> i64 {
    a / b
}

#[test]
fn kernel_panics_are_silent_and_others_are_not() {
    std::panic::set_hook(Box::new(|_| {
        HOOK_CALLS.fetch_add(1, Ordering::SeqCst);
    }));
    let a = Array1::from(vec![6i64, 1, 8]);
    let b = Array1::from(vec![3i64, 0, 2]);
    for mode in [Mode::Stackless, Mode::FullVm] {
        let err = divide::batch(a.view(), b.view(), &Config::with_mode(mode)).unwrap_err();
        assert!(matches!(err, RuntimeError::Kernel { lane: 1, .. }), "{err}");
        let exe = divide::executable().unwrap();
        let inputs = [
            autobatch_runtime::Column::from_view1(a.view()),
            autobatch_runtime::Column::from_view1(b.view()),
        ];
        assert!(exe.run_reference(&inputs, &Config::default()).is_err());
    }
    assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), 0);
    // A panic outside any kernel (another thread) still reaches the hook.
    let other = std::thread::spawn(|| panic!("not a kernel")).join();
    assert!(other.is_err());
    assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), 1);
    // And on this thread, after the kernel panics above were caught (the full VM's compiled
    // blocks let theirs unwind out of the run before it is caught): the thread is not left
    // silenced.
    let here = std::panic::catch_unwind(|| panic!("not a kernel either"));
    assert!(here.is_err());
    assert_eq!(HOOK_CALLS.load(Ordering::SeqCst), 2);
}

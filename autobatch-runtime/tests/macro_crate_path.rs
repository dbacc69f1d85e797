//! `#[autobatch(crate = path)]` and `#[primitive(crate = path)]`: generated code reaches the
//! runtime through the given path, not `::autobatch_runtime`.
//!
//! The path given here is a stand-in runtime that re-exports the real one's `__private` items
//! but replaces `input` (which every batch entry point calls once per input leaf) with a
//! version that counts its calls: the count moves only if the generated code went through the
//! stand-in.

use autobatch_runtime::ndarray::array;
use autobatch_runtime::{autobatch, primitive, Config};
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many input columns went through the stand-in runtime.
static INPUTS: AtomicUsize = AtomicUsize::new(0);

/// A runtime path that counts the inputs of batch calls.
mod counting {
    /// The stand-in for the runtime's `__private` module.
    pub mod __private {
        pub use autobatch_runtime::__private::*;

        /// The real `input`, counted.
        pub fn input<T: autobatch_runtime::Element>(
            values: autobatch_runtime::ndarray::ArrayView1<'_, T>,
        ) -> autobatch_runtime::Column {
            super::super::INPUTS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            autobatch_runtime::__private::input(values)
        }
    }
}

#[primitive(crate = crate::counting)]
fn twice(x: i64) -> i64 {
    2 * x
}

#[autobatch(crate = crate::counting)]
fn double_sum(a: i64, b: i64) -> i64 {
    twice(a) + b
}

#[test]
fn generated_code_goes_through_the_given_crate_path() {
    let before = INPUTS.load(Ordering::SeqCst);
    let out = double_sum::batch(
        array![1, 2].view(),
        array![10, 20].view(),
        &Config::default(),
    )
    .unwrap();
    assert_eq!(out, array![double_sum(1, 10), double_sum(2, 20)]);
    assert_eq!(INPUTS.load(Ordering::SeqCst) - before, 2);
}

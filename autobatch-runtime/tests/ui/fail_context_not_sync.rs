//! UI case, compile error: a context type that cannot be shared between the threads kernels
//! run on.
use autobatch_runtime::autobatch;
use std::cell::Cell;

pub struct Counter {
    seen: Cell<i64>,
}

#[autobatch]
fn count(counter: &Counter, x: i64) -> i64 {
    x
}

fn main() {}

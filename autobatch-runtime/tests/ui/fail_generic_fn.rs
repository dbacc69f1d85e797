//! UI case, compile error: generic fn.
use autobatch_runtime::autobatch;

#[autobatch]
fn generic<T>(n: i64) -> i64 {
    n
}

fn main() {}

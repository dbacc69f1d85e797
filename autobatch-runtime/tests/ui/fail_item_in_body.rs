//! UI case, compile error: an item inside the function.
use autobatch_runtime::autobatch;

#[autobatch]
fn outer(n: i64) -> i64 {
    const STEP: i64 = 3;
    n + STEP
}

fn main() {}

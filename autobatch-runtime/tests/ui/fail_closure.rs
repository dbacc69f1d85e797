//! UI case, compile error: closure.
use autobatch_runtime::autobatch;

#[autobatch]
fn twice(n: i64) -> i64 {
    let f = |x: i64| x * 2;
    n
}

fn main() {}

//! UI case, compile error: an `async` block.
use autobatch_runtime::autobatch;

#[autobatch]
fn later(n: i64) -> i64 {
    let _pending = async { n + 1 };
    n
}

fn main() {}

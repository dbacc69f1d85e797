//! UI case, compile error: a shared reference and its dereference.
use autobatch_runtime::autobatch;

#[autobatch]
fn through(n: i64) -> i64 {
    let r = &n;
    *r + 1
}

fn main() {}

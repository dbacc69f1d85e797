//! UI case, compile error: not autobatched callee.
use autobatch_runtime::autobatch;

#[autobatch]
fn caller(n: i64) -> i64 {
    helper(n)
}

fn helper(n: i64) -> i64 {
    n
}

fn main() {}

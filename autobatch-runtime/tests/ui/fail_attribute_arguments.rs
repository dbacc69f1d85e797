//! UI case, compile error: attribute arguments.
use autobatch_runtime::autobatch;

#[autobatch(fast)]
fn f(n: i64) -> i64 {
    n
}

fn main() {}

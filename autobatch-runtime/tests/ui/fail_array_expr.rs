//! UI case, compile error: an array literal.
use autobatch_runtime::autobatch;

#[autobatch]
fn spread(n: i64) -> i64 {
    let _pair = [n, n + 1];
    n
}

fn main() {}

//! UI case, compile error: pattern param.
use autobatch_runtime::autobatch;

#[autobatch]
fn pair((a, b): (i64, i64)) -> i64 {
    a + b
}

fn main() {}

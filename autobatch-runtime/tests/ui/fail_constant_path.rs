//! UI case, compile error: constant path.
use autobatch_runtime::autobatch;

#[autobatch]
fn scaled(n: i64) -> i64 {
    n * SCALE
}

const SCALE: i64 = 3;

fn main() {}

//! UI case, compile error: an `unsafe fn`.
use autobatch_runtime::autobatch;

#[autobatch]
unsafe fn twice(n: i64) -> i64 {
    n * 2
}

fn main() {}

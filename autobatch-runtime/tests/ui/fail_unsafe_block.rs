//! UI case, compile error: unsafe block.
use autobatch_runtime::autobatch;

#[autobatch]
fn unsafe_inside(n: i64) -> i64 {
    unsafe { n }
}

fn main() {}

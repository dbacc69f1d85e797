//! UI case, compile error: a `ref` binding.
use autobatch_runtime::autobatch;

#[autobatch]
fn copy(n: i64) -> i64 {
    let ref x = n;
    x.abs()
}

fn main() {}

//! UI case, compile error: unsupported type.
use autobatch_runtime::autobatch;

#[autobatch]
fn text(n: String) -> i64 {
    1
}

fn main() {}

//! UI case, compile error: struct field.
use autobatch_runtime::autobatch;

#[autobatch]
fn field(n: i64) -> i64 {
    n.value
}

fn main() {}

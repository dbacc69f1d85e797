//! UI case, compile error: unknown method.
use autobatch_runtime::autobatch;

#[autobatch]
fn unknown(n: i64) -> i64 {
    n.leading_zeros_magic()
}

fn main() {}

//! UI case, compile error: string literal.
use autobatch_runtime::autobatch;

#[autobatch]
fn named(n: i64) -> i64 {
    let s = "hello";
    n
}

fn main() {}

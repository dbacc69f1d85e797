//! UI case, compile error: a call of a parenthesised function value.
use autobatch_runtime::autobatch;

#[autobatch]
fn apply(n: i64) -> i64 {
    (twice)(n)
}

#[autobatch]
fn twice(n: i64) -> i64 {
    n * 2
}

fn main() {}

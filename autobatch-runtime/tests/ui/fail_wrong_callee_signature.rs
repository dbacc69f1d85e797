//! UI case, compile error: wrong callee signature.
use autobatch_runtime::autobatch;

#[autobatch]
fn caller(n: i32) -> i64 {
    callee(n)
}

#[autobatch]
fn callee(n: i64) -> i64 {
    n
}

fn main() {}

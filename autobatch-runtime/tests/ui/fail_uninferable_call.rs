//! UI case, compile error: uninferable call.
use autobatch_runtime::autobatch;

#[autobatch]
fn caller(n: i64) -> i64 {
    let y = callee(n);
    y
}

#[autobatch]
fn callee(n: i64) -> i64 {
    n
}

fn main() {}

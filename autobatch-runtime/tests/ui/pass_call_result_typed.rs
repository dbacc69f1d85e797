//! UI case, passes: a call's result is typed from the callee's own signature (no annotation),
//! the callee defined later in the file.
use autobatch_runtime::autobatch;

#[autobatch]
fn caller(n: i64) -> i64 {
    let y = callee(n);
    y + callee(y) * 2
}

#[autobatch]
fn callee(n: i64) -> i64 {
    n
}

fn main() {
    assert_eq!(caller(3), 9);
}

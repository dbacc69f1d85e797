//! UI case, compile error: index expr.
use autobatch_runtime::autobatch;

#[autobatch]
fn indexed(n: i64) -> i64 {
    let a = (n, n);
    a[0]
}

fn main() {}

//! UI case, compile error: a destructuring assignment into a tuple field.
use autobatch_runtime::autobatch;

#[autobatch]
fn split(n: i64) -> (i64, i64) {
    let mut a = 0;
    let mut t = (0, 0);
    (a, t.0) = (n, n + 1);
    (a, t.1)
}

fn main() {}

//! UI case, compile error: an assignment to a tuple field.
use autobatch_runtime::autobatch;

#[autobatch]
fn bump_first(n: i64) -> (i64, i64) {
    let mut t = (n, n);
    t.0 = 5;
    t
}

fn main() {}

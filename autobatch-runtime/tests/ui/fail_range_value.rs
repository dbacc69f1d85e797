//! UI case, compile error: a range used as a value.
use autobatch_runtime::autobatch;

#[autobatch]
fn count(n: i64) -> usize {
    let r = 0..n;
    r.count()
}

fn main() {}

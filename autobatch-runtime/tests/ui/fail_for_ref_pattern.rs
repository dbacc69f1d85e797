//! UI case, compile error: a `for` loop binding by `ref`.
use autobatch_runtime::autobatch;

#[autobatch]
fn total(n: i64) -> i64 {
    let mut s = 0;
    for ref i in 0..n {
        s += *i;
    }
    s
}

fn main() {}

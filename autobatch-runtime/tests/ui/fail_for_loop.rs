//! UI case, compile error: for loop.
use autobatch_runtime::autobatch;

#[autobatch]
fn sum_to(n: i64) -> i64 {
    let mut s = 0;
    for i in 0..n {
        s += i;
    }
    s
}

fn main() {}

//! UI case, compile error: `for` over an iterator that is not an integer range.
use autobatch_runtime::autobatch;

#[autobatch]
fn sum_odd(n: i64) -> i64 {
    let mut s = 0;
    for i in (0..n).skip(1) {
        s += i;
    }
    s
}

fn main() {}

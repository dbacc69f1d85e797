//! UI case, compile error: a `for` over an open range `a..`.
use autobatch_runtime::autobatch;

#[autobatch]
fn first_square_above(n: i64) -> i64 {
    let mut found = 0;
    for i in 0.. {
        if i * i > n {
            found = i;
            break;
        }
    }
    found
}

fn main() {}

//! UI case, compile error: `while let`.
use autobatch_runtime::autobatch;

#[autobatch]
fn halve(n: i64) -> i64 {
    let mut k = n;
    while let 1.. = k {
        k /= 2;
    }
    k
}

fn main() {}

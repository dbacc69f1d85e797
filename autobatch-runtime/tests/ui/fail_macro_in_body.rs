//! UI case, compile error: macro in body.
use autobatch_runtime::autobatch;

#[autobatch]
fn noisy(n: i64) -> i64 {
    println!("{}", n);
    n
}

fn main() {}

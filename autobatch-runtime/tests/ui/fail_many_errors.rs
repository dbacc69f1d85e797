//! UI case, compile error: many errors.
use autobatch_runtime::autobatch;

#[autobatch]
fn many(n: &i64) -> i64 {
    for i in 0..3 {}
    match n {
        _ => 1,
    }
}

fn main() {}

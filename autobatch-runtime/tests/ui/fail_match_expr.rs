//! UI case, compile error: match expr.
use autobatch_runtime::autobatch;

#[autobatch]
fn sign(n: i64) -> i64 {
    match n {
        0 => 0,
        _ => 1,
    }
}

fn main() {}

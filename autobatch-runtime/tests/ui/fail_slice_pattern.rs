//! UI case, compile error: a slice pattern in a `match`.
use autobatch_runtime::autobatch;

#[autobatch]
fn first(a: i64, b: i64) -> i64 {
    match (a, b) {
        (x, [y, ..]) => x + y,
        _ => 0,
    }
}

fn main() {}

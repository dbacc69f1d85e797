//! UI case, compile error: a `|` pattern that binds names.
use autobatch_runtime::autobatch;

#[autobatch]
fn either(a: i64, b: i64) -> i64 {
    match (a, b) {
        (0, x) | (x, 0) => x,
        _ => 0,
    }
}

fn main() {}

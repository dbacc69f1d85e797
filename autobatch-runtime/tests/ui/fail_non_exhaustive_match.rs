//! UI case, compile error: a non-exhaustive `match` is rustc's own error (the original function
//! is emitted unchanged), not the macro's.
use autobatch_runtime::autobatch;

#[autobatch]
fn digit(n: i64) -> i64 {
    match n {
        0..=9 => n,
        10.. => -1,
    }
}

fn main() {}

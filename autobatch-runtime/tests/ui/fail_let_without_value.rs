//! UI case, compile error: a `let` without a value.
use autobatch_runtime::autobatch;

#[autobatch]
fn pick(n: i64) -> i64 {
    let x;
    if n > 0 {
        x = n;
    } else {
        x = -n;
    }
    x
}

fn main() {}

//! UI case, compile error: a struct used in a function without `#[autobatch]` on it.
use autobatch_runtime::autobatch;

pub struct Plain {
    x: i64,
}

#[autobatch]
fn read(p: Plain) -> i64 {
    p.x + 1
}

fn main() {}

//! UI case, compile error: integer literal for float.
use autobatch_runtime::autobatch;

#[autobatch]
fn half(x: f64) -> f64 {
    x * 1
}

fn main() {}

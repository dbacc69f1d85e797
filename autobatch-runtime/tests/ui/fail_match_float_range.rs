//! UI case, compile error: `match` on a float range.
use autobatch_runtime::autobatch;

#[autobatch]
fn bucket(x: f64) -> i64 {
    match x {
        0.0..=1.0 => 0,
        _ => 1,
    }
}

fn main() {}

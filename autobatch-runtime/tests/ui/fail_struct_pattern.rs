//! UI case, compile error: a struct destructured by a pattern.
use autobatch_runtime::autobatch;

#[autobatch]
pub struct Point {
    x: i64,
    y: i64,
}

#[autobatch]
fn sum(p: Point) -> i64 {
    let Point { x, y } = p;
    x + y
}

fn main() {}

//! UI case, compile error: a method called on a struct value.
use autobatch_runtime::autobatch;

#[autobatch]
pub struct Point {
    x: i64,
    y: i64,
}

impl Point {
    fn norm(&self) -> i64 {
        self.x.abs() + self.y.abs()
    }
}

#[autobatch]
fn size(p: Point) -> i64 {
    p.norm()
}

fn main() {}

//! UI case, compile error: `#[autobatch]` on an `impl` block.
use autobatch_runtime::autobatch;

#[autobatch]
pub struct Point {
    x: i64,
    y: i64,
}

#[autobatch]
impl Point {
    fn norm(self) -> i64 {
        self.x.abs() + self.y.abs()
    }
}

fn main() {}

//! UI case, compile error: a struct of another file without #[autobatch], behind a `use`,
//! gets one error saying to add the attribute.
use autobatch_runtime::autobatch;

mod callee_files;

use callee_files::plain::Point;

#[autobatch]
fn read(p: Point) -> i64 {
    p.x + 1
}

fn main() {}

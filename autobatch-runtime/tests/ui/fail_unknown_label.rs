//! UI case, compile error: `break` with a label no enclosing loop has.
use autobatch_runtime::autobatch;

#[autobatch]
fn search(n: i64) -> i64 {
    'outer: for i in 0..n {
        if i > 3 {
            break 'inner;
        }
    }
    n
}

fn main() {}

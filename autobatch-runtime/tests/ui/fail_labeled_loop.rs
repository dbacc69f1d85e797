//! UI case, compile error: labeled loop.
use autobatch_runtime::autobatch;

#[autobatch]
fn labeled(n: i64) -> i64 {
    'outer: loop {
        break 'outer;
    }
    n
}

fn main() {}

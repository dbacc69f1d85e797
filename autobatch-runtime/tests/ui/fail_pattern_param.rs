//! UI case, compile error: a parameter pattern that is neither a name nor a tuple.
use autobatch_runtime::autobatch;

#[autobatch]
fn pair(ref a: i64) -> i64 {
    a + 0
}

fn main() {}

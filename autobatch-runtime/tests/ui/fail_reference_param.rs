//! UI case, compile error: reference param.
use autobatch_runtime::autobatch;

#[autobatch]
fn by_ref(n: &i64) -> i64 {
    1
}

fn main() {}

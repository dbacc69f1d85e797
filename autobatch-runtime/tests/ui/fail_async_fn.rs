//! UI case, compile error: async fn.
use autobatch_runtime::autobatch;

#[autobatch]
async fn later(n: i64) -> i64 {
    n
}

fn main() {}

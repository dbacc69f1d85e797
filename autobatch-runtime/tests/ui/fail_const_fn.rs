//! UI case, compile error: a `const fn`.
use autobatch_runtime::autobatch;

#[autobatch]
const fn twice(n: i64) -> i64 {
    n * 2
}

fn main() {}

//! UI case, compile error: a method with `self`.
use autobatch_runtime::autobatch;

pub struct Counter;

impl Counter {
    #[autobatch]
    fn twice(&self, n: i64) -> i64 {
        n * 2
    }
}

fn main() {}

//! Items #[autobatch] code may call.
use autobatch_runtime::{autobatch, primitive};

#[autobatch]
pub fn double(n: i64) -> i64 {
    2 * n
}

#[primitive]
pub fn halve(x: f64) -> f64 {
    x / 2.0
}

#[autobatch]
#[derive(Clone, Copy)]
pub struct Pair {
    pub a: i64,
    pub b: f64,
}

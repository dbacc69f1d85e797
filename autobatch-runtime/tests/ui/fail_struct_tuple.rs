//! UI case, compile error: a tuple struct.
use autobatch_runtime::autobatch;

#[autobatch]
struct Point(f64, f64);

fn main() {}

//! UI case, compile error: neither a function nor a struct.
use autobatch_runtime::autobatch;

#[autobatch]
const NOT_A_FUNCTION: i64 = 1;

fn main() {}

//! UI case, compile error: not a function.
use autobatch_runtime::autobatch;

#[autobatch]
struct NotAFunction;

fn main() {}

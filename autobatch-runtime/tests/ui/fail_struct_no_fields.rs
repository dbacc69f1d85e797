//! UI case, compile error: an `#[autobatch]` struct without fields.
use autobatch_runtime::autobatch;

#[autobatch]
pub struct Empty {}

fn main() {}

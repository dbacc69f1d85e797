//! UI case, compile error: `checked_*` returns an `Option`, which lanes cannot hold.
use autobatch_runtime::autobatch;

#[autobatch]
fn add_or_max(a: u8, b: u8) -> u8 {
    a.checked_add(b).unwrap_or(u8::MAX)
}

fn main() {}

//! UI case, compiles: `into()` as the argument of another `#[autobatch]` function converts to
//! that function's parameter type, learnt from its signature (here `u32`).
use autobatch_runtime::autobatch;

#[autobatch]
fn widen(n: u16) -> u64 {
    let w: u64 = grow(n.into());
    w
}

#[autobatch]
fn grow(x: u32) -> u64 {
    x as u64 * 2
}

fn main() {}

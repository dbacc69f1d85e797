//! UI case, compile error: `into()` as the argument of a function this macro cannot see, so
//! nothing here says which type it converts to.
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

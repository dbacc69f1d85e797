//! UI case, compile error: `into()` whose result nothing constrains (a method call on it does
//! not say which type it converts to).
use autobatch_runtime::autobatch;

#[autobatch]
fn widen(n: u16) -> u32 {
    let w = n.into();
    w.count_ones()
}

fn main() {}

//! UI case, compile error: `i128` / `u128` (types and literal suffixes), with the type to use.
use autobatch_runtime::autobatch;

#[autobatch]
fn widen(n: u128) -> i128 {
    let k = 3i128;
    n as i128 * k
}

fn main() {}

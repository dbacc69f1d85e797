//! UI case, compile error: a turbofish on a call.
use autobatch_runtime::autobatch;

#[autobatch]
fn widen(n: u8) -> u64 {
    Into::<u64>::into(n)
}

fn main() {}

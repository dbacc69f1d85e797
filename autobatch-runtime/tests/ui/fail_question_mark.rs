//! UI case, compile error: question mark.
use autobatch_runtime::autobatch;

#[autobatch]
fn fallible(n: i64) -> i64 {
    let x = checked(n)?;
    x
}

fn main() {}

//! UI case, compile error: `.step_by(k).rev()` in a `for`.
use autobatch_runtime::autobatch;

#[autobatch]
fn down(n: i32) -> i32 {
    let mut s = 0;
    for i in (0..n).step_by(2).rev() {
        s += i;
    }
    s
}

fn main() {}

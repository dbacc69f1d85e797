//! UI case, compile error: a `&mut` borrow passed to a function, one error at it.
use autobatch_runtime::autobatch;

#[autobatch]
fn bumped(n: i64) -> i64 {
    let mut x = n;
    bump(&mut x);
    x
}

fn bump(x: &mut i64) {
    *x += 1;
}

fn main() {}
